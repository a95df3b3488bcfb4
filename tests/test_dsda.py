"""DSDA (trustlib.unlearning.dsda): properties beyond the notebook's examples (fast)."""
import numpy as np, pytest, torch
from trustlib.config import ConfigError
from trustlib.models import SmallCNN
from trustlib.results import check_headline
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

def test_config_rejects_bad_forget_classes():
    with pytest.raises(ConfigError, match="forget_classes"): dsda.Config.from_params("smoke", forget_classes=(1, 1))
    with pytest.raises(ConfigError, match="forget_classes"): dsda.Config.from_params("smoke", forget_classes=(12,))
    with pytest.raises(ConfigError, match="bench_evals"): dsda.Config.from_params("smoke", bench_evals=11)

def test_exactly_one_headline():
    s = dict(af=[0, 0, 0], gap=[0.01] * 3, sf_gain=[0.0] * 3, mia_gain=[0.0] * 3, eval_ratio=[0.3] * 3, disc_gain=[0.0] * 3,
             mt_gain=[0.0] * 3, mt_steps=[0.0] * 3, multi_af=[], multi_growth=[])
    assert check_headline(dsda.judge_claims(s)).claim.startswith("DSDA forgets")

def test_conflict_averse_with_zero_weight_row_and_parallel_gradients():
    G = torch.tensor([[1.0, 0.0], [2.0, 0.0]]); d, w = dsda.conflict_averse(G, torch.tensor([1.0, 1.0]), 0.5)
    assert torch.allclose(d, torch.tensor([3.0 + 1.5, 0.0]), atol=1e-5)      # no conflict: d = g_T stretched along g_T
    assert np.isclose(w.sum(), 1.0)

def test_step_trace_leaves_neggrad_unchanged_and_excludes_its_own_time():
    m = _model(); X = torch.randn(120, 1, 8, 8); y = torch.arange(10).repeat(12)
    D = dict(X=X, y=y, te=torch.arange(0, 120, 3)); r = y != 4
    kw = dict(epochs=1, lr=1e-3, batch=40, seed=1)
    a = dsda.neggrad_plus(m, X[r], y[r], X[~r], y[~r], **kw)
    st = dsda.StepTrace(D, [4], every=1, t0=2.0).start(m)
    b = dsda.neggrad_plus(m, X[r], y[r], X[~r], y[~r], **kw, on_step=st); st.end(b)
    assert all(torch.equal(u, v) for u, v in zip(a.state_dict().values(), b.state_dict().values()))
    assert [row["step"] for row in st.rows] == [0, 1, 2, 3]          # 108 retain samples in batches of 40
    assert st.rows[0]["seconds"] >= 2.0 and st.overhead > 0
    assert all(0.0 <= row["retain_acc"] <= 1.0 and 0.0 <= row["forget_acc"] <= 1.0 for row in st.rows)
