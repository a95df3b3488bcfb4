"""DSDA (trustlib.unlearning.dsda): properties beyond the notebook's examples (fast), and the conditions its claims need,
checked on the configuration the page publishes (`cpu`)."""
import math
import numpy as np, pytest, torch
from trustlib.config import ConfigError, derive_seed
from trustlib.models import SmallCNN
from trustlib.results import check_claims, grade, synthetic_metrics
from trustlib.unlearning import dsda

def _model(seed=0):
    torch.manual_seed(seed); return SmallCNN(width=4)

def test_sampler_is_deterministic_for_a_generator():
    m, y = _model(), torch.arange(10)
    a = dsda.synthesize(m, y, steps=3, method="aegds", generator=torch.Generator().manual_seed(3), noise_scale=0.1)
    b = dsda.synthesize(m, y, steps=3, method="aegds", generator=torch.Generator().manual_seed(3), noise_scale=0.1)
    assert torch.equal(a, b)

@pytest.mark.parametrize("method", ["heun", "momentum", "aegds"])
def test_eq5_without_noise_and_dt0_does_not_move(method):
    m, y = _model(), torch.arange(4); x0 = torch.randn(4, 1, 8, 8)
    x = dsda.synthesize(m, y, steps=2, method=method, variant="eq5", dt=0.0, noise_scale=0.0, x0=x0)
    assert torch.equal(x, x0)

def test_clamp_keeps_the_input_range():
    m, y = _model(), torch.arange(10)
    x = dsda.synthesize(m, y, steps=3, method="aegds", alpha=10.0, clamp=(-0.5, 2.0), generator=torch.Generator().manual_seed(0))
    assert float(x.min()) >= -0.5 and float(x.max()) <= 2.0

def test_damo_leaves_the_original_model_untouched_and_rejects_bad_sets():
    m = _model(); before = {k: v.clone() for k, v in m.state_dict().items()}
    y = torch.arange(10).repeat(6); x = torch.randn(60, 1, 8, 8)
    dsda.damo(m, x, y, [1, 2], max_steps=3, batch=8)
    assert all(torch.equal(before[k], v) for k, v in m.state_dict().items())
    for bad, msg in [([], "empty"), ([11], "do not exist"), (list(range(10)), "all 10"), ([4, 4], "repeats")]:
        with pytest.raises(ValueError, match=msg): dsda.damo(m, x, y, bad, max_steps=1)

def test_config_rejects_bad_values_and_oversized_configurations():
    with pytest.raises(ConfigError, match="forget_classes"): dsda.Config.from_params("smoke", forget_classes=(1, 1))
    with pytest.raises(ConfigError, match="forget_classes"): dsda.Config.from_params("smoke", forget_classes=(12,))
    with pytest.raises(ConfigError, match="alpha_grid"): dsda.Config.from_params("smoke", alpha_grid=(3.0, 1.0, 10.0))
    with pytest.raises(ConfigError, match="exceeds its limit"): dsda.Config.from_params("smoke", train_epochs=1000)
    with pytest.raises(ConfigError, match="soft limit"): dsda.Config.from_params("cpu", n_seeds=20, gkt_batches=2000, damo_max_steps=5000)
    assert dsda.Config.from_params("cpu", n_seeds=20, gkt_batches=2000, damo_max_steps=5000, allow_large=True).n_seeds == 20

def test_claims_table_reads_what_run_emits_and_has_one_headline():
    claims = check_claims(dsda.CLAIMS)
    assert [c.id for c in claims if c.headline] == ["forgets_without_data"]
    h = claims[0]   # the headline, graded alone on measurements placed clear of its thresholds (tests/test_claims.py sweeps every claim)
    m = synthetic_metrics([h.rule, *h.requires], "clear")
    assert grade([h], m)[0].verdict == "reproduced"
    assert {k for c in claims for k in c.keys()} >= {"single/dsda/forget_acc", "cost/dsda_over_gkt", "bench/aegds_eval_ratio"}

def test_conflict_averse_with_zero_weight_row_and_parallel_gradients():
    G = torch.tensor([[1.0, 0.0], [2.0, 0.0]]); d, w = dsda.conflict_averse(G, torch.tensor([1.0, 1.0]), 0.5)
    assert torch.allclose(d, torch.tensor([3.0 + 1.5, 0.0]), atol=1e-5)      # no conflict: d = g_T stretched along g_T
    assert np.isclose(w.sum(), 1.0)

def test_step_trace_leaves_neggrad_unchanged_and_excludes_its_own_cost():
    m = _model(); X = torch.randn(120, 1, 8, 8); y = torch.arange(10).repeat(12)
    D = dict(X=X, y=y, te=torch.arange(0, 120, 3)); r = y != 4
    kw = dict(epochs=1, lr=1e-3, batch=40, seed=1)
    a = dsda.neggrad_plus(m, X[r], y[r], X[~r], y[~r], **kw)
    with dsda.FlopCount() as meter:
        st = dsda.StepTrace(D, [4], every=1, t0=2.0, meter=meter, gflops0=1.0).start(m)
        b = dsda.neggrad_plus(m, X[r], y[r], X[~r], y[~r], **kw, on_step=st); st.end(b)
    with dsda.FlopCount() as plain: dsda.neggrad_plus(m, X[r], y[r], X[~r], y[~r], **kw)
    assert all(torch.equal(u, v) for u, v in zip(a.state_dict().values(), b.state_dict().values()))
    assert [row["step"] for row in st.rows] == [0, 1, 2, 3]          # 108 retain samples in batches of 40
    assert st.rows[0]["seconds"] >= 2.0 and st.overhead > 0 and meter.flops == plain.flops
    assert math.isclose(st.rows[-1]["gflops"], 1.0 + plain.gflops)
    assert all(0.0 <= row["retain_acc"] <= 1.0 and 0.0 <= row["forget_acc"] <= 1.0 for row in st.rows)

def test_gkt_match_takes_the_first_point_within_tolerance():
    rows = [dict(step=0, retain_acc=0.1, forget_acc=0.0, gflops=0.0), dict(step=5, retain_acc=0.80, forget_acc=0.0, gflops=1.0),
            dict(step=10, retain_acc=0.93, forget_acc=0.3, gflops=2.0), dict(step=15, retain_acc=0.935, forget_acc=0.0, gflops=3.0)]
    assert dsda.gkt_match(rows, 0.94, 0.0, 0.01)["step"] == 15
    assert dsda.gkt_match(rows, 0.99, 0.0, 0.01) is None

@pytest.fixture(scope="module")
def cpu_seed0():
    "The published configuration's first model, its synthetic AEGDS set and its sampler benchmark."
    cfg = dsda.Config.from_params("cpu")
    torch.set_num_threads(1)
    sd = derive_seed(cfg.seed, 0); D = dsda.load_task_data(cfg, sd); X, y, tr, te = D["X"], D["y"], D["tr"], D["te"]
    orig = dsda.train_model(cfg, X[tr], y[tr], derive_seed(sd, "original"))
    ev = dsda.train_model(cfg, X[tr], y[tr], derive_seed(sd, "evaluator"), width=cfg.evaluator_width, epochs=cfg.evaluator_epochs)
    q = dsda.SampleQuality(ev, X[te], y[te])
    bench, _ = dsda.sampler_benchmark(orig, q, cfg, derive_seed(sd, "bench"), D["clamp"], D["shape"])
    syn, _, _ = dsda._synthetic_sets(cfg, orig, D, sd)
    return cfg, orig, q, bench, syn

def test_cpu_configuration_creates_the_conditions_of_the_sampler_claim(cpu_seed0):
    "On the published configuration the best step sizes lie inside the grid and Langevin's quality differs from the noise start."
    cfg, orig, q, bench, syn = cpu_seed0
    assert bench["sgld"]["interior"] and bench["aegds"]["interior"], {k: v["alpha"] for k, v in bench.items()}
    assert bench["sgld"]["start_quality"] - bench["sgld"]["target"] > 0.05

def test_cpu_configuration_samples_are_class_specific(cpu_seed0):
    "The source-free premise on the published configuration: the original model and an independent one recognise the AEGDS samples' classes."
    cfg, orig, q, bench, syn = cpu_seed0
    x, y = syn["aegds"]
    with torch.no_grad(): assert float((orig(x).argmax(1) == y).float().mean()) >= 0.9
    assert q.accuracy(x, y) >= 0.7
