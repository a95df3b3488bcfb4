"Tests of the label-smoothed losses and the toy experiment (trustlib.calibration.label_smoothing)."
import math, os
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from trustlib.config import ConfigError, ResourceUnavailable
from trustlib.results import check_headline, grade
from trustlib.calibration.label_smoothing import (linear_smooth_ce, smoothed_cross_entropy, ls_gradient, check_beta,
                                                  ls_optimal_gap, ls_optimal_target_prob, soft_cap, option_probs,
                                                  mcq_calibration, bench_memory, bench_times, auto_chunk_size, Config, run, CLAIMS,
                                                  make_world, question_set, split_pairs, answer_probs)
from trustlib.models import tiny_gpt, with_vocab

BETAS = (0.0, 0.1, 0.5)


def _data(N=53, D=12, V=97, seed=0, ignore_every=4, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    E = torch.randn(N, D, generator=g).to(dtype); C = torch.randn(V, D, generator=g).to(dtype)
    y = torch.randint(0, V, (N,), generator=g)
    if ignore_every: y[::ignore_every] = -100
    return E, C, y


def _grads(fn, E, C, y, up=None):
    E = E.clone().requires_grad_(); C = C.clone().requires_grad_()
    out = fn(E, C, y)
    gE, gC = torch.autograd.grad(out, (E, C), up if up is not None else torch.ones_like(out))
    return out.detach(), gE, gC


def _close(a, b, rtol=1e-5):
    # rtol 1e-5 in fp32, with an absolute floor relative to the reference's scale for entries near zero
    torch.testing.assert_close(a, b, rtol=rtol, atol=rtol * float(b.abs().max().clamp(min=1e-12)))


@pytest.mark.parametrize("beta", BETAS)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("fused", [False, True])
def test_matches_pytorch_value_and_both_gradients(beta, reduction, fused):
    E, C, y = _data()
    up = torch.randn(len(y), generator=torch.Generator().manual_seed(1)) if reduction == "none" else None
    ref = _grads(lambda E, C, y: F.cross_entropy(E @ C.T, y, label_smoothing=beta, reduction=reduction), E, C, y, up)
    ours = _grads(lambda E, C, y: linear_smooth_ce(E, C, y, beta, reduction=reduction, chunk_size=8, fused=fused), E, C, y, up)
    for a, b in zip(ours, ref): _close(a, b)


@pytest.mark.parametrize("beta", BETAS)
def test_logit_level_loss_and_analytic_gradient(beta):
    E, C, y = _data()
    Z = (E @ C.T).requires_grad_()
    ref = F.cross_entropy(Z, y, label_smoothing=beta)
    _close(smoothed_cross_entropy(Z, y, beta).detach(), ref.detach())
    smoothed_cross_entropy(Z, y, beta, reduction="sum").backward()
    _close(Z.grad, ls_gradient(Z.detach(), y, beta))


def test_beta_zero_is_plain_cross_entropy():
    E, C, y = _data()
    plain = _grads(lambda E, C, y: F.cross_entropy(E @ C.T, y), E, C, y)
    ours = _grads(lambda E, C, y: linear_smooth_ce(E, C, y, 0.0, chunk_size=5), E, C, y)
    for a, b in zip(ours, plain): _close(a, b)
    _close(smoothed_cross_entropy(E @ C.T, y, 0.0), F.cross_entropy(E @ C.T, y))


@pytest.mark.parametrize("fused", [False, True])
def test_chunk_size_does_not_change_results(fused):
    E, C, y = _data(N=61)
    outs = [_grads(lambda E, C, y: linear_smooth_ce(E, C, y, 0.1, chunk_size=cs, fused=fused), E, C, y)
            for cs in (1, 7, 16, 61, 1000, None)]
    for o in outs[1:]:
        for a, b in zip(o, outs[0]): torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)


def test_c_sum_identity():
    E, C, y = _data(ignore_every=0)
    torch.testing.assert_close((E @ C.T).sum(1), E @ C.sum(0), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("fused", [False, True])
def test_all_ignored_batch_is_defined(reduction, fused):
    E, C, _ = _data(N=6)
    y = torch.full((6,), -100)
    out, gE, gC = _grads(lambda E, C, y: linear_smooth_ce(E, C, y, 0.1, reduction=reduction, fused=fused), E, C, y)
    assert torch.isfinite(out).all() and float(out.abs().sum()) == 0.0
    assert float(gE.abs().sum()) == 0.0 and float(gC.abs().sum()) == 0.0
    assert float(smoothed_cross_entropy(E @ C.T, y, 0.1, reduction=reduction).abs().sum()) == 0.0


@pytest.mark.parametrize("bad", [-0.01, 1.01, float("nan"), float("inf"), True, "0.1", None])
def test_invalid_beta_rejected(bad):
    E, C, y = _data(N=4)
    for f in (lambda: linear_smooth_ce(E, C, y, bad), lambda: smoothed_cross_entropy(E @ C.T, y, bad), lambda: check_beta(bad)):
        with pytest.raises(ValueError, match="beta must be"): f()
    with pytest.raises(ConfigError, match="sweep_beta"): Config.from_params("smoke", sweep_beta=1.5)


def test_beta_bounds_are_allowed():
    E, C, y = _data()
    for beta in (0.0, 1.0):
        ref = F.cross_entropy(E @ C.T, y, label_smoothing=beta)
        _close(linear_smooth_ce(E, C, y, beta), ref)


def test_input_validation():
    E, C, y = _data(N=4, V=9)
    with pytest.raises(ValueError, match="targets must lie"): linear_smooth_ce(E, C, torch.full((4,), 9))
    with pytest.raises(ValueError, match="y must have shape"): linear_smooth_ce(E, C, y[:3])
    with pytest.raises(ValueError, match="same D"): linear_smooth_ce(E, C[:, :5], y)
    with pytest.raises(ValueError, match="reduction"): linear_smooth_ce(E, C, y, reduction="avg")
    with pytest.raises(ValueError, match="chunk_size"): linear_smooth_ce(E, C, y, chunk_size=0)


def test_batched_shapes_and_ignore_index():
    E, C, y = _data(N=24)
    E3, y3 = E.view(4, 6, -1), y.view(4, 6).clone()
    y3[y3 == -100] = 7; y3[0, 0] = -1
    ref = F.cross_entropy(E @ C.T, y3.reshape(-1), label_smoothing=0.1, ignore_index=-1, reduction="none").view(4, 6)
    _close(linear_smooth_ce(E3, C, y3, 0.1, ignore_index=-1, reduction="none"), ref)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_low_precision_inputs(dtype):
    E, C, y = _data(N=64, D=16, V=300, dtype=dtype)
    Eq, Cq = E.clone().requires_grad_(), C.clone().requires_grad_()
    loss = linear_smooth_ce(Eq, Cq, y, 0.1); loss.backward()
    assert loss.dtype == torch.float32 and Eq.grad.dtype == dtype and Cq.grad.dtype == dtype
    E32, C32 = E.float().requires_grad_(), C.float().requires_grad_()
    ref = F.cross_entropy(E32 @ C32.T, y, label_smoothing=0.1); ref.backward()
    torch.testing.assert_close(loss.detach(), ref.detach(), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(Eq.grad.float(), E32.grad, rtol=2e-2, atol=2e-3)
    torch.testing.assert_close(Cq.grad.float(), C32.grad, rtol=2e-2, atol=2e-3)


def test_only_one_input_needs_grad():
    E, C, y = _data()
    Cr = C.clone().requires_grad_()
    linear_smooth_ce(E, Cr, y, 0.1).backward()
    Cref = C.clone().requires_grad_(); F.cross_entropy(E @ Cref.T, y, label_smoothing=0.1).backward()
    _close(Cr.grad, Cref.grad)


def test_gradcheck_float64():
    E, C, y = _data(N=7, D=3, V=11, ignore_every=3, dtype=torch.float64)
    E.requires_grad_(); C.requires_grad_()
    # computed in float64 throughout: gradcheck at its default (tight) tolerances, and a float64 loss
    assert torch.autograd.gradcheck(lambda E, C: linear_smooth_ce(E, C, y, 0.3, chunk_size=2), (E, C))
    assert torch.autograd.gradcheck(lambda E, C: linear_smooth_ce(E, C, y, 0.3, chunk_size=3, fused=True), (E, C))
    assert torch.autograd.gradcheck(lambda E, C: linear_smooth_ce(E, C, y, 0.3, reduction="none"), (E, C))
    assert linear_smooth_ce(E, C, y, 0.3).dtype == torch.float64


@pytest.mark.parametrize("fused", [False, True])
def test_float64_matches_pytorch_to_1e12(fused):
    E, C, y = _data(dtype=torch.float64)
    ref = _grads(lambda E, C, y: F.cross_entropy(E @ C.T, y, label_smoothing=0.1), E, C, y)
    ours = _grads(lambda E, C, y: linear_smooth_ce(E, C, y, 0.1, chunk_size=8, fused=fused), E, C, y)
    for a, b in zip(ours, ref):
        assert a.dtype == torch.float64
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fused", [False, True])
def test_bf16_uses_bf16_logits_and_float32_reductions(fused):
    "The loss equals an exact evaluation on the bf16 matmul's logits (so the matmul ran in bf16) to float32 accuracy."
    E, C, y = _data(N=200, D=32, V=700, dtype=torch.bfloat16)
    out = linear_smooth_ce(E, C, y, 0.1, chunk_size=64, fused=fused)
    on_bf16_logits = F.cross_entropy((E @ C.T).double(), y, label_smoothing=0.1)
    upcast = F.cross_entropy(E.double() @ C.double().T, y, label_smoothing=0.1)
    assert out.dtype == torch.float32
    assert abs(float(out) - float(on_bf16_logits)) < 1e-5 < abs(float(upcast) - float(on_bf16_logits))


@pytest.mark.parametrize("fused", [False, True])
def test_logit_gradient_is_softmax_minus_target(fused):
    "With C = I the E-gradient is the logit gradient: rows sum to 0 and the label entry is p_y − (1 − β + β/V) (a sign slip there shows)."
    g = torch.Generator().manual_seed(3)
    V, beta = 23, 0.2
    Z = torch.randn(9, V, generator=g, dtype=torch.float64); y = torch.randint(0, V, (9,), generator=g)
    Zr = Z.clone().requires_grad_()
    linear_smooth_ce(Zr, torch.eye(V, dtype=torch.float64), y, beta, reduction="sum", chunk_size=4, fused=fused).backward()
    p = torch.softmax(Z, 1)
    torch.testing.assert_close(Zr.grad.sum(1), torch.zeros(9, dtype=torch.float64), rtol=0, atol=1e-13)
    r = torch.arange(9)
    torch.testing.assert_close(Zr.grad[r, y], p[r, y] - (1 - beta + beta / V), rtol=1e-12, atol=1e-13)


def test_optimal_gap_and_target_prob():
    z = torch.zeros(30, requires_grad=True)
    opt = torch.optim.LBFGS([z], max_iter=300, line_search_fn="strong_wolfe")
    def closure():
        opt.zero_grad(); l = smoothed_cross_entropy(z[None], torch.tensor([5]), 0.2); l.backward(); return l
    opt.step(closure)
    assert abs(torch.softmax(z, 0)[5].item() - ls_optimal_target_prob(30, 0.2)) < 1e-4
    assert abs((z[5] - z[0]).item() - ls_optimal_gap(30, 0.2)) < 1e-3
    assert ls_optimal_gap(10, 0.0) == math.inf and abs(ls_optimal_gap(128_000, 0.1) - 13.96) < 0.01


def test_temperature_and_softcap_variants():
    E, C, y = _data()
    Z = E @ C.T
    T = 0.5
    _close(smoothed_cross_entropy(Z, y, 0.1, temperature=T), T * F.cross_entropy(Z / T, y, label_smoothing=0.1))
    c = 3.0
    _close(smoothed_cross_entropy(Z, y, 0.1, softcap=c), F.cross_entropy(c * torch.tanh(Z / c), y, label_smoothing=0.1))
    assert (soft_cap(torch.linspace(-50, 50, 101), 4.0).abs() <= 4.0).all()


def test_mcq_evaluator():
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(4), size=30000); y = np.array([rng.choice(4, p=p) for p in P])
    r = mcq_calibration(y, P)
    assert r["ece"] < 0.015 and r["rms_ce"] < 0.02
    logits = torch.randn(10, 50)
    Q = option_probs(logits, [7, 8, 9, 10])
    np.testing.assert_allclose(Q.sum(1), 1.0, rtol=1e-12)
    assert np.all(Q.argmax(1) == logits[:, 7:11].argmax(1).numpy())


def test_bench_reports_memory_and_interleaved_times():
    r = bench_memory("chunked", n_tokens=64, d_model=8, vocab_size=512)
    assert r["peak_mib"] >= 0 and r["chunk_size"] == auto_chunk_size(512)
    rb = bench_memory("fused", n_tokens=64, d_model=8, vocab_size=512, dtype="bfloat16")
    assert rb["dtype"] == "bfloat16"
    t = bench_times(("naive", "chunked", "fused"), n_tokens=64, d_model=8, vocab_size=512, repeats=6)
    assert all(len(t["cpu"][i]) == 6 and min(t["cpu"][i]) > 0 for i in ("naive", "chunked", "fused"))
    with pytest.raises(ValueError, match="impl must be"): bench_memory("triton")


def test_fused_gradients_in_place_and_scaled():
    "In half precision the fused loss computes its gradients by blocks of the vocabulary (no float32 V×D sum): bit for bit the chunked loss's under loss.backward(); they scale with the upstream gradient."
    import torch
    g = torch.Generator().manual_seed(0)
    E = torch.randn(96, 8, generator=g).bfloat16().requires_grad_(); C = torch.randn(700, 8, generator=g).bfloat16().requires_grad_()
    y = torch.randint(0, 700, (96,), generator=g)
    grads = {}
    for fused in (False, True):
        for scale in (1.0, 2.5):
            E.grad = C.grad = None
            (scale * linear_smooth_ce(E, C, y, 0.1, chunk_size=32, fused=fused)).backward()
            grads[fused, scale] = (E.grad.float().clone(), C.grad.float().clone())
    for i in range(2):
        assert torch.equal(grads[True, 1.0][i], grads[False, 1.0][i])
        torch.testing.assert_close(grads[True, 2.5][i], 2.5 * grads[True, 1.0][i], rtol=0.02, atol=2e-3)
        torch.testing.assert_close(grads[False, 2.5][i], grads[True, 2.5][i], rtol=0.02, atol=2e-3)


def test_tiny_gpt_and_vocab_resize_are_deterministic():
    a, b = tiny_gpt(80, 16, 1, 2, seed=5), tiny_gpt(80, 16, 1, 2, seed=5)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    w = make_world(10, seed=0); qs = question_set(w, split_pairs(w, 0.5, 0)[1])
    m = tiny_gpt(200, 16, 1, 2, seed=1)
    np.testing.assert_allclose(answer_probs(with_vocab(m, 60), w, qs), answer_probs(m, w, qs), rtol=1e-5, atol=1e-6)


def test_full_profile_needs_the_model(tmp_path):
    """The full profile fine-tunes the LLM `model`: a name that is neither a local path nor a hub id is refused by the Config;
    a hub id that cannot be loaded here (offline, not in the cache) stops with ResourceUnavailable before any training."""
    with pytest.raises(ConfigError, match="neither an existing local path"): Config.from_params("full", model=str(tmp_path / "no-such-model"))
    assert Config.from_params("full").model == "Qwen/Qwen2.5-0.5B" and Config.from_params("cpu").model == "toy"
    cfg = Config.from_params("full", model="trustlib-test/no-such-model")
    with pytest.raises(ResourceUnavailable, match="could not be loaded"): run(cfg, progress=False)
    with pytest.raises(ConfigError, match="llm_eval_data"): Config.from_params("full", llm_eval_data=[])
    with pytest.raises(ConfigError, match="llm_loss"): Config.from_params("full", llm_loss="triton")


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("TRUSTLIB_SLOW"), reason="needs ~3 GiB and a minute; set TRUSTLIB_SLOW=1")
def test_memory_budget_large_vocab():
    "The chunked loss at N=8192, D=256, V=32k stays far below the naive loss's 1 GiB of logits (slow: several GB for naive)."
    from trustlib.calibration.label_smoothing import benchmark
    df = benchmark((32768,), 8192, 256, ("naive", "chunked"), subprocess=True, progress=False, repeats=1).set_index("impl")
    assert df.loc["naive", "peak_mib"] > 1024 and df.loc["chunked", "peak_mib"] < 400


def test_run_verdicts_and_config_validation():
    cfg = Config.from_params("smoke", n_entities=16, pretrain_steps=20, sft_epochs=2, vocab_sizes=[128, 256], bench=False)
    a = run(cfg, progress=False)   # determinism: tests/test_papers.py::test_same_seed_same_metrics
    assert a.verdicts == []                                                   # run() measures; the claims table grades
    vs = grade(CLAIMS, a.metrics)
    assert len(vs) == 7 and check_headline(vs).id == "ls_calibrates"
    assert {v.id: v.verdict for v in vs}["kernel"] == "inconclusive"          # no benchmark in this run: not measured
    assert "seconds_total" not in a.metrics and "toy_seconds" in a.timings
    assert all(f.get_size_inches()[0] <= 9 for f in a.figures.values()), {k: f.get_size_inches() for k, f in a.figures.items()}
    with pytest.raises(ConfigError, match="betas"): Config.from_params("smoke", betas=[0.0, 1.5])
    with pytest.raises(ConfigError, match="unknown parameter"): Config.from_params("smoke", beta=0.1)


# --- the full profile's LLM path (section 6), on tiny local models and data in the stand-ins' formats ---------------------------

@pytest.fixture(scope="module")
def tiny_tok():
    from trustlib.rehearse import _bpe_tokenizer
    return _bpe_tokenizer()


def _tiny_lm(tok, layers=2, seed=0):
    from trustlib.rehearse import _tiny_model
    return _tiny_model("qwen2", layers, len(tok), seed=seed).eval()


def test_data_specs_and_local_records(tmp_path, monkeypatch):
    import json
    from trustlib.calibration.label_smoothing import parse_data_spec, load_records
    from trustlib.rehearse import write_alpaca, write_arc_easy
    assert parse_data_spec("cais/mmlu:all@test") == ("cais/mmlu", "all", "test")
    assert parse_data_spec("tatsu-lab/alpaca") == ("tatsu-lab/alpaca", None, "train")
    assert parse_data_spec("Rowan/hellaswag@validation", "test") == ("Rowan/hellaswag", None, "validation")
    with pytest.raises(ConfigError, match="non-empty"): parse_data_spec(" ")
    monkeypatch.setenv("TRUSTLIB_DATA", str(tmp_path))
    write_alpaca(tmp_path, n=5); write_arc_easy(tmp_path, n=4)
    a = load_records("tatsu-lab/alpaca")                                        # a hub id resolves to its local copy first
    assert len(a) == 5 and {"instruction", "input", "output"} <= set(a[0])
    assert len(load_records("allenai/ai2_arc:ARC-Easy@test")) == 4
    arr = tmp_path / "mine.json"; arr.write_text(json.dumps(a[:2]))                # a JSON array file, given by path
    assert load_records(str(arr)) == a[:2]
    (tmp_path / "folder").mkdir(); (tmp_path / "folder" / "validation.csv").write_text("question,answer\nq,1\n")
    assert load_records(str(tmp_path / "folder") + "@validation") == [dict(question="q", answer=1)]
    with pytest.raises(ResourceUnavailable, match="'train'"): load_records(str(tmp_path / "folder"))
    try: import datasets  # noqa: F401
    except ImportError:
        from trustlib.config import MissingDependency
        with pytest.raises(MissingDependency, match="pip install datasets"): load_records("nobody/nothing")   # no local copy, no `datasets`


def test_sft_records_are_tokenized_with_loss_on_the_answer(tiny_tok):
    from trustlib.calibration.label_smoothing import sft_segments, tokenize_sft
    rec = dict(instruction="Name a colour.", input="", output="blue")
    assert sft_segments(rec) == [("<|user|>\nName a colour.\n<|assistant|>\n", False), ("blue", True)]
    assert sft_segments(dict(rec, input="the sky"))[0][0] == "<|user|>\nName a colour.\n\nthe sky\n<|assistant|>\n"
    ids, labels = tokenize_sft(tiny_tok, rec, 512)
    trained = [t for t, l in zip(ids, labels) if l != -100]
    assert len(ids) == len(labels) and trained[-1] == tiny_tok.eos_token_id and tiny_tok.decode(trained[:-1]) == "blue"
    assert tiny_tok.decode([t for t, l in zip(ids, labels) if l == -100]) == "<|user|>\nName a colour.\n<|assistant|>\n"
    chat = dict(messages=[dict(role="user", content="hi"), dict(role="assistant", content="yes"), dict(role="user", content="and?"),
                          dict(role="assistant", content="no")])
    ids, labels = tokenize_sft(tiny_tok, chat, 512)
    assert sum(l == tiny_tok.eos_token_id for l in labels) == 2                  # one end-of-sequence per assistant turn
    assert len(tokenize_sft(tiny_tok, chat, 5)[0]) == 5
    with pytest.raises(ConfigError, match="Alpaca's fields"): sft_segments(dict(prompt="x"))


def test_multiple_choice_records_and_prompt(tiny_tok):
    from trustlib.calibration.label_smoothing import mcq_item, mcq_prompt, letter_tokens
    assert mcq_item(dict(question="2+2?", subject="math", choices=["3", "4", "5", "6"], answer=1)) == ("2+2?", ["3", "4", "5", "6"], 1, "math")
    arc = dict(question="Q?", choices=dict(text=["a", "b", "c"], label=["1", "2", "3"]), answerKey="3")
    assert mcq_item(arc)[1:3] == (["a", "b", "c"], 2)
    orig = dict(question=dict(stem="Q?", choices=[dict(text="a", label="A"), dict(text="b", label="B")]), answerKey="B")
    assert mcq_item(orig)[:3] == ("Q?", ["a", "b"], 1)
    hs = dict(ctx="A man [title] sits.", endings=["x", "y", "z", "w"], label="2", activity_label="Sitting")
    assert mcq_item(hs) == ("A man. sits.", ["x", "y", "z", "w"], 2, "Sitting")
    assert mcq_prompt("2+2?", ["3", "4"], "high_school_math") == \
        "The following are multiple choice questions (with answers) about high school math.\n\n2+2?\nA. 3\nB. 4\nAnswer:"
    pre, ids = letter_tokens(tiny_tok, 5)                                        # the stand-in splits ' A' into 'Ġ' + 'A'
    assert tiny_tok.decode(pre) == " " and [tiny_tok.decode([i]) for i in ids] == list("ABCDE")
    with pytest.raises(ConfigError, match="answer"): mcq_item(dict(question="q", choices=["a"], answer=3))


def test_lm_loss_paths_agree_with_pytorch(tiny_tok):
    from trustlib.calibration.label_smoothing import lm_loss, _collate, tokenize_sft
    m = _tiny_lm(tiny_tok)
    data = [tokenize_sft(tiny_tok, dict(instruction=f"Say {w}.", input="", output=f"{w} {w}"), 64) for w in ("red", "blue", "green")]
    x, mask, y = _collate([d[0] for d in data], tiny_tok.pad_token_id, "cpu", [d[1] for d in data])
    z = m(input_ids=x, attention_mask=mask).logits[:, :-1]
    ref = F.cross_entropy(z.reshape(-1, z.shape[-1]), y[:, 1:].reshape(-1), label_smoothing=0.1, reduction="sum")
    grads = []
    for loss in ("chunked", "logits"):
        m.zero_grad(); l = lm_loss(m, x, mask, y, 0.1, loss=loss); l.backward()
        torch.testing.assert_close(l.detach(), ref.detach(), rtol=1e-5, atol=1e-5)
        grads.append(m.get_output_embeddings().weight.grad.clone())
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-4, atol=1e-6)
    zz = z.reshape(-1, z.shape[-1])[y[:, 1:].reshape(-1) != -100]
    t = lm_loss(m, x, mask, y, 0.0, temperature=0.5, softcap=5.0)
    torch.testing.assert_close(t.detach(), smoothed_cross_entropy(zz, y[:, 1:][y[:, 1:] != -100], 0.0, temperature=0.5, softcap=5.0, reduction="sum").detach())


def test_option_probs_are_the_restricted_next_token_distribution(tiny_tok):
    from trustlib.calibration.label_smoothing import llm_option_probs, mcq_prompt, letter_tokens
    m = _tiny_lm(tiny_tok, seed=1)
    items = [("What is 1 + 2?", ["3", "4", "5"], 0, ""), ("A longer question about 7 + 8, with words?", ["15", "16", "17", "18"], 1, "arith")]
    P = llm_option_probs(m, tiny_tok, items, batch=2)
    assert P.shape == (2, 4) and P[0, 3] == 0 and np.allclose(P.sum(1), 1)
    for (q, o, _, s), p in zip(items, P):
        pre, ids = letter_tokens(tiny_tok, len(o))
        x = torch.tensor([tiny_tok(mcq_prompt(q, o, s))["input_ids"] + pre])
        with torch.no_grad(): z = m(input_ids=x).logits[0, -1, ids]
        np.testing.assert_allclose(p[:len(o)], torch.softmax(z.double(), -1).numpy(), rtol=1e-5, atol=1e-7)


def test_llm_run_on_a_local_tiny_model(tmp_path, monkeypatch, tiny_tok):
    "run() with a local model folder: SFT per variant, scoring of every model on each set, metrics the LLM claims read."
    from trustlib.calibration.label_smoothing import LLM_CLAIMS
    from trustlib.rehearse import write_alpaca, write_mmlu, write_arc_easy
    monkeypatch.setenv("TRUSTLIB_DATA", str(tmp_path / "data"))
    for w in (write_alpaca, write_mmlu, write_arc_easy): w(tmp_path / "data")
    folder = tmp_path / "lm"; tiny_tok.save_pretrained(folder); _tiny_lm(tiny_tok).save_pretrained(folder)
    cfg = Config.from_params("smoke", model=str(folder), betas=[0.0, 0.1], llm_temperature=0.5, llm_softcap=0, llm_sft_examples=6,
                             llm_max_len=64, llm_epochs=1, llm_batch_size=4, llm_micro_batch=2, llm_lr=1e-3, llm_eval_examples=5,
                             llm_eval_data=["cais/mmlu:all@test", "allenai/ai2_arc:ARC-Easy@test"])
    r = run(cfg, progress=False)
    t = r.tables["llm_runs"]
    assert sorted(set(t.model)) == ["SFT T=0.5", "SFT β=0", "SFT β=0.1", "base"] and set(t["eval"]) == {"mmlu", "arc_easy"} and (t.n == 5).all()
    m = r.metrics
    assert len(m["sft_ece_rise_runs"]) == len(m["ls_delta_ece_runs"]) == len(m["t_delta_ece_runs"]) == 2 and m["softcap_delta_ece_runs"] == []
    assert (m["llm_vocab"], m["llm_hidden"]) == (len(tiny_tok), 32) and "base_mmlu_ece" in m
    vs = {v.id: v for v in grade(LLM_CLAIMS, m)}
    assert check_headline(list(vs.values())).id == "ls_calibrates" and vs["large_vocab"].verdict == "illustrated"
    assert vs["temperature_softcap"].verdict != "reproduced" and set(r.figures) == {"llm_reliability", "llm_sft_loss"}
    assert all(f.get_size_inches()[0] <= 9 for f in r.figures.values())
