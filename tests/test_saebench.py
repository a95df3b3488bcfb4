"""Property and integration tests of trustlib.interp.sae / trustlib.interp.saebench beyond the notebooks' examples."""
import numpy as np
import pytest
import torch
from trustlib.interp.sae import ARCHITECTURES, make_sae, train_sae, batch_topk_mask, MatryoshkaSAE, BatchTopKSAE, PAnnealSAE
from trustlib.interp import saebench as sb

KNOB = {"relu": 0.05, "gated": 0.05, "panneal": 0.05}

@pytest.mark.parametrize("arch", list(ARCHITECTURES))
def test_every_architecture_rejects_bad_inputs(arch):
    sae = make_sae(arch, 8, 32, KNOB.get(arch, 4), seed=0)
    for bad, msg in ((torch.zeros(3, 7), "d_in = 8"), (torch.zeros(8), "2-d"), (torch.full((2, 8), float("nan")), "NaN"),
                     (torch.zeros(0, 8), "empty")):
        with pytest.raises(ValueError, match=msg): sae.loss(bad)
        with pytest.raises(ValueError, match=msg): sae(bad)

@pytest.mark.parametrize("B,k", [(1, 3), (7, 5), (64, 16)])
def test_batch_topk_keeps_k_times_batch(B, k):
    z = torch.rand(B, 50, generator=torch.Generator().manual_seed(B)) + 0.01
    assert int((batch_topk_mask(z, k) > 0).sum()) == k * B

@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matryoshka_one_group_is_batchtopk(seed):
    X = torch.randn(40, 12, generator=torch.Generator().manual_seed(seed))
    m, b = MatryoshkaSAE(12, 48, k=3, seed=seed, fractions=()), BatchTopKSAE(12, 48, k=3, seed=seed)
    m.since_fired[:10] = m.dead_after; b.since_fired[:10] = b.dead_after       # AuxK active in both
    lm, lb = m.loss(X)[0], b.loss(X)[0]
    assert torch.allclose(lm, lb, atol=1e-6)

def test_panneal_penalty_continuous_through_training():
    X = torch.rand(3000, 8, generator=torch.Generator().manual_seed(0))
    sae = PAnnealSAE(8, 32, l1_coeff=0.01, seed=0)
    train_sae(sae, X, steps=120, batch_size=64, lr=1e-3, seed=0, progress=False)
    assert len(sae.rescales) == 9 and abs(sae.p - 0.2) < 1e-9
    for step, p, before, after in sae.rescales: assert abs(before - after) <= 1e-6 * max(1.0, abs(before))

def test_controller_reaches_target_l0():
    g = torch.Generator().manual_seed(0)
    D = torch.randn(16, 16, generator=g); D /= D.norm(dim=1, keepdim=True)
    idx = torch.rand(4000, 16, generator=g).argsort(1)[:, :3]
    X = torch.zeros(4000, 16).scatter_(1, idx, 0.5 + torch.rand(4000, 3, generator=g)) @ D
    sae = make_sae("gated", 16, 32, 0.05, seed=0)
    train_sae(sae, X, steps=300, batch_size=256, lr=3e-3, target_l0=3, seed=0, progress=False)
    assert 2.0 <= sae.l0(X) <= 4.0

def test_ablating_everything_returns_the_error_term():
    sae = make_sae("topk", 8, 32, 4, seed=0)
    X = np.random.default_rng(0).standard_normal((20, 8)).astype(np.float32)
    f, xh = sb.sae_codes(sae, X)
    W = sae.W_dec.detach().numpy()
    b = sae.b_dec.detach().numpy()
    np.testing.assert_allclose(sb.ablate(X, f, W, range(32)), X - xh + b, atol=1e-5)   # only b_dec and the error remain
