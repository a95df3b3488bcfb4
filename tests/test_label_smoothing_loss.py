"""LabelSmoothedCrossEntropyLoss (trustlib.calibration.label_smoothing) against torch.nn.CrossEntropyLoss(label_smoothing=...):
values and gradients for every reduction, class weights, ignored rows, (N, C), (N, C, d1, ...) and unbatched inputs, and the
input's dtype kept in the loss and the gradient."""
import pytest
import torch
from trustlib.calibration.label_smoothing import LabelSmoothedCrossEntropyLoss, smoothed_cross_entropy

SHAPES = [(64, 11), (5, 11, 3, 4), (3, 11, 6), (11,)]


def _inputs(shape, seed=0, ignore=True):
    g = torch.Generator().manual_seed(seed)
    C = shape[1] if len(shape) > 1 else shape[0]
    x = torch.randn(*shape, generator=g, dtype=torch.float64) * 3
    t = torch.randint(0, C, (shape[0], *shape[2:]) if len(shape) > 1 else (), generator=g)
    if ignore and t.ndim: t.view(-1)[::4] = -100
    w = torch.rand(C, generator=g, dtype=torch.float64) + 0.1
    return x, t, w


def _run(module, x, t, dtype):
    xi = x.detach().to(dtype).clone().requires_grad_()      # a fresh leaf per run: gradients never shared
    loss = module(xi, t)
    upstream = torch.linspace(0.5, 1.5, loss.numel(), dtype=loss.dtype).reshape(loss.shape)   # a non-uniform upstream gradient
    (loss * upstream).sum().backward()
    return loss.detach(), xi.grad


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("beta", [0.0, 0.1, 0.7, 1.0])
def test_matches_torch_float64(shape, reduction, weighted, beta):
    "float64: the loss and the gradient equal PyTorch's to 1e-12 (weighted smoothing as PyTorch defines it)."
    x, t, w = _inputs(shape)
    kw = dict(weight=w if weighted else None, reduction=reduction, label_smoothing=beta)
    (l1, g1), (l2, g2) = _run(LabelSmoothedCrossEntropyLoss(**kw), x, t, torch.float64), _run(torch.nn.CrossEntropyLoss(**kw), x, t, torch.float64)
    assert l1.dtype == g1.dtype == torch.float64 and l1.shape == l2.shape and g1.shape == g2.shape
    torch.testing.assert_close(l1, l2, rtol=0, atol=1e-12)
    torch.testing.assert_close(g1, g2, rtol=0, atol=1e-12)


@pytest.mark.parametrize("ignore_index", [-100, 3])
def test_ignore_index(ignore_index):
    x, t, w = _inputs((64, 11), ignore=False)
    t[::3] = ignore_index
    for red in ("mean", "sum", "none"):
        kw = dict(weight=w, ignore_index=ignore_index, reduction=red, label_smoothing=0.2)
        (l1, g1), (l2, g2) = _run(LabelSmoothedCrossEntropyLoss(**kw), x, t, torch.float64), _run(torch.nn.CrossEntropyLoss(**kw), x, t, torch.float64)
        torch.testing.assert_close(l1, l2, rtol=0, atol=1e-12); torch.testing.assert_close(g1, g2, rtol=0, atol=1e-12)
        assert (g1[t == ignore_index] == 0).all()


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.bfloat16, 2e-2), (torch.float16, 2e-3)], ids=str)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_dtype_preserved(dtype, tol, reduction):
    """Loss and gradient come back in the input's dtype (float64, bfloat16 and float16 are not turned into float32); the values are
    PyTorch's float64 result rounded to that dtype (accumulated in float32), within the dtype's precision."""
    x, t, w = _inputs((5, 11, 3, 4))
    x = x.to(dtype).double()                                       # the same representable inputs for both
    ours = _run(LabelSmoothedCrossEntropyLoss(w.to(dtype), reduction=reduction, label_smoothing=0.1), x, t, dtype)
    ref = _run(torch.nn.CrossEntropyLoss(w, reduction=reduction, label_smoothing=0.1), x, t, torch.float64)
    assert ours[0].dtype == ours[1].dtype == dtype
    scale = 1.0 if reduction != "sum" else float(ref[0].abs().max())
    torch.testing.assert_close(ours[0].double(), ref[0], rtol=tol, atol=tol * scale)
    torch.testing.assert_close(ours[1].double(), ref[1], rtol=tol, atol=tol)


def test_torch_half_comes_back_as_input_dtype_too():
    "The reference point: for bf16 input PyTorch's own loss is also bf16; ours agrees with PyTorch's bf16 result to bf16 precision."
    x, t, w = _inputs((64, 11))
    xb = x.to(torch.bfloat16)
    a = LabelSmoothedCrossEntropyLoss(label_smoothing=0.1)(xb, t); b = torch.nn.CrossEntropyLoss(label_smoothing=0.1)(xb, t)
    assert a.dtype == b.dtype == torch.bfloat16
    assert abs(float(a) - float(b)) <= 2 ** -7 * abs(float(b)) + 1e-3


def test_differences_from_torch_are_the_documented_ones():
    x = torch.randn(4, 5, dtype=torch.float64)
    t = torch.full((4,), -100)
    assert float(LabelSmoothedCrossEntropyLoss(label_smoothing=0.1)(x, t)) == 0.0                   # all rows ignored: 0
    assert torch.isnan(torch.nn.CrossEntropyLoss(label_smoothing=0.1)(x, t))                        # PyTorch: NaN
    with pytest.raises(TypeError, match="class indices"): LabelSmoothedCrossEntropyLoss()(x, torch.softmax(x, 1))   # probability targets


def test_errors_and_module_behaviour():
    m = LabelSmoothedCrossEntropyLoss(torch.ones(5), label_smoothing=0.1)
    assert "weight" in dict(m.named_buffers()) and "label_smoothing=0.1" in repr(m)
    with pytest.raises(ValueError, match="classes on dim 1"): m(torch.randn(4, 5, 2), torch.zeros(4, 5, dtype=torch.long))
    with pytest.raises(ValueError, match="weight has 5 entries"): m(torch.randn(4, 6), torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match=r"0\.\.4"): m(torch.randn(4, 5), torch.tensor([0, 1, 5, 2]))
    with pytest.raises(ValueError, match="reduction"): LabelSmoothedCrossEntropyLoss(reduction="avg")
    with pytest.raises(ValueError, match="beta"): LabelSmoothedCrossEntropyLoss(label_smoothing=-0.1)
    with pytest.raises(ValueError, match="weight must be"): LabelSmoothedCrossEntropyLoss(torch.ones(2, 3))
    with pytest.raises(TypeError, match="floating-point"): m(torch.zeros(4, 5, dtype=torch.long), torch.zeros(4, dtype=torch.long))
    # the same loss as the paper's function (which the paper's numbers come from)
    x, t, _ = _inputs((64, 11))
    torch.testing.assert_close(LabelSmoothedCrossEntropyLoss(label_smoothing=0.3)(x.float(), t), smoothed_cross_entropy(x.float(), t, 0.3))
    # gradcheck of the analytic backward (float64)
    xs = torch.randn(6, 5, 2, dtype=torch.float64, requires_grad=True); ts = torch.randint(0, 5, (6, 2)); ts[0, 0] = -100
    ws = torch.rand(5, dtype=torch.float64) + 0.5
    for red in ("mean", "sum", "none"):
        assert torch.autograd.gradcheck(LabelSmoothedCrossEntropyLoss(ws, reduction=red, label_smoothing=0.3), (xs, ts))
