"""Tests of trustlib.privacy.signsgd (Noisy SignSGD): the noisy sign and its de-biased estimator, clipping and
per-example gradients, worker splits, noise calibration, the training loop, determinism of `run`, config
validation and the full profile's failure when CIFAR-10 is missing."""
import math
import numpy as np
import pytest
import torch
from scipy.special import erf

from trustlib.config import ConfigError, ResourceUnavailable
from trustlib.privacy import accounting as A
from trustlib.privacy.signsgd import (Config, METHODS, noisy_sign, expected_sign, debias_factor, sign_estimator_mse,
                                      calibrate_scales, split_workers, per_example_grads, clip_rows, train_federated,
                                      load_federated_data, load_cifar10_bin, run)


def tiny_cfg(**kw):
    base = dict(rounds=4, eps_targets=(4.0,), noise_multipliers=(2.0,), steps_grid=(10,), ratio_shifts=(0.5,),
                heterogeneity=(0.0, 4.0), n_draws=50, n_seeds=1)
    base.update(kw)
    return Config.from_params("smoke", **base)


# --- the noisy sign and the estimator -----------------------------------------------------------------------------------
def test_expected_sign_closed_forms():
    g = np.linspace(-5, 5, 41)
    np.testing.assert_allclose(expected_sign(g, 2.0, "gauss"), erf(g / (2.0 * math.sqrt(2))), atol=1e-12)
    np.testing.assert_allclose(expected_sign(g, 1.5, "logistic"), np.tanh(g / (2 * 1.5)), atol=1e-12)


@pytest.mark.parametrize("noise,scale", [("gauss", 3.0), ("logistic", 1.7)])
def test_estimator_bias_monte_carlo(noise, scale):
    # dossier test 8: Monte-Carlo E[g_hat] matches the erf/tanh closed form within 3 standard errors
    gen = torch.Generator().manual_seed(0)
    g = torch.tensor([-4.0, -1.0, 0.0, 0.5, 2.0, 6.0], dtype=torch.float64)
    S = noisy_sign(g.expand(200000, 6), scale, noise, gen).numpy()
    est = debias_factor(scale, noise) * S
    se = est.std(0) / math.sqrt(len(est))
    closed = debias_factor(scale, noise) * expected_sign(g.numpy(), scale, noise)
    assert np.all(np.abs(est.mean(0) - closed) < 3 * se + 1e-9)


def test_debias_first_order_unbiased():
    for noise in ("gauss", "logistic"):
        assert debias_factor(2.0, noise) * expected_sign(1e-5, 2.0, noise) == pytest.approx(1e-5, rel=1e-6)


def test_noisy_sign_values_and_validation():
    s = noisy_sign(torch.zeros(1000), 1.0, "gauss", torch.Generator().manual_seed(1))
    assert set(s.unique().tolist()) <= {-1.0, 1.0}
    with pytest.raises(ConfigError): noisy_sign(torch.zeros(3), 1.0, "laplace")


def test_sign_estimator_mse_monte_carlo():
    rng = np.random.default_rng(2)
    g = 0.5 + 2.0 * rng.standard_normal((1, 10))
    for noise, scale in (("gauss", 3.0), ("logistic", 2.0)):
        mse, var, b2 = sign_estimator_mse(g, scale, noise)
        E = expected_sign(g[0], scale, noise)
        S = np.where(rng.random((200000, 10)) < (1 + E) / 2, 1.0, -1.0)
        err = (debias_factor(scale, noise) * S.mean(1) - g.mean()) ** 2
        assert abs(err.mean() - mse) < 4 * err.std() / math.sqrt(len(err))
        assert mse == pytest.approx(var + b2)


def test_calibrate_scales_meet_target():
    sc = calibrate_scales(3.0, 50, 1e-5)
    assert A.sign_epsilon(sc["sigma_sign"], 50, 1e-5) <= 3.0 + 1e-9
    assert A.sign_epsilon(sc["sigma_sign"] * 0.999, 50, 1e-5) > 3.0
    assert A.sign_epsilon(sc["s_logistic"], 50, 1e-5, noise="logistic") <= 3.0 + 1e-9
    assert A.gaussian_epsilon_exact(sc["sigma_dpsgd"], 50, 1e-5) <= 3.0 + 1e-9
    assert sc["s_logistic_pure"] == pytest.approx(50 / 3.0)
    assert sc["sigma_sign"] < sc["sigma_dpsgd"]          # amplification: less noise for the same eps


# --- clipping, per-example gradients ---------------------------------------------------------------------------------------
def test_clipping_and_sensitivity():
    G = torch.randn(50, 20) * torch.logspace(-2, 2, 50)[:, None]
    Gc = clip_rows(G, 1.0)
    assert torch.all(Gc.norm(dim=1) <= 1.0 + 1e-6)
    small = G.norm(dim=1) <= 1.0
    assert torch.allclose(Gc[small], G[small])
    total = Gc.sum(0)
    assert max(float((total - torch.cat([Gc[:i], Gc[i + 1:]]).sum(0)).norm()) for i in range(50)) <= 1.0 + 1e-6


def test_per_example_grads_match_loop():
    from trustlib.models import MLP
    torch.manual_seed(0)
    m = MLP(7, (5,), 4)
    p = {k: v.detach().clone() for k, v in m.named_parameters()}
    X, y = torch.randn(9, 7), torch.randint(0, 4, (9,))
    G = per_example_grads(m, p, X, y)
    assert G.shape == (9, sum(v.numel() for v in p.values()))
    for i in range(9):
        m.zero_grad(); torch.nn.functional.cross_entropy(m(X[i:i + 1]), y[i:i + 1]).backward()
        assert torch.allclose(G[i], torch.cat([q.grad.reshape(-1) for q in m.parameters()]), atol=1e-6)


# --- splits -----------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["shards", "dirichlet", "iid"])
def test_split_is_partition_and_deterministic(how):
    y = np.repeat(np.arange(10), 37)
    P = split_workers(y, 10, how, seed=5)
    assert np.array_equal(np.sort(np.concatenate(P)), np.arange(len(y)))
    assert all(len(p) > 0 for p in P)
    assert all(np.array_equal(a, b) for a, b in zip(P, split_workers(y, 10, how, seed=5)))


def test_split_heterogeneity():
    y = np.repeat(np.arange(10), 40)
    shards = [len(np.unique(y[p])) for p in split_workers(y, 10, "shards", 2, seed=0)]
    iid = [len(np.unique(y[p])) for p in split_workers(y, 10, "iid", seed=0)]
    assert max(shards) <= 2 and min(iid) >= 8
    with pytest.raises(ConfigError): split_workers(y, 10, "writers")


# --- training ---------------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def digits():
    return load_federated_data(tiny_cfg())


def test_train_federated_deterministic_and_bits(digits):
    cfg = tiny_cfg()
    parts = split_workers(digits["ytr"].numpy(), cfg.n_workers, "shards", seed=0)
    a = train_federated(cfg, "noisy_gauss", digits, parts, 5.0, seed=3)
    b = train_federated(cfg, "noisy_gauss", digits, parts, 5.0, seed=3)
    assert a["test_acc"] == b["test_acc"] and a["curve"] == b["curve"]
    c = train_federated(cfg, "noisy_gauss", digits, parts, 5.0, seed=4)
    assert c["curve"] != a["curve"]
    d = a["n_params"]
    assert d == 650 and a["bits_per_round"] == d
    assert train_federated(cfg, "dpsgd", digits, parts, 5.0, seed=3)["bits_per_round"] == 32 * d
    with pytest.raises(ConfigError): train_federated(cfg, "adam", digits, parts)


def test_sgd_learns_and_signsgd_fails_non_iid(digits):
    cfg = tiny_cfg(rounds=30)
    y = digits["ytr"].numpy()
    shards = split_workers(y, cfg.n_workers, "shards", seed=0)
    assert train_federated(cfg, "sgd", digits, shards, seed=0)["test_acc"] > 0.8
    # majority-vote SignSGD collapses on label-sorted shards (every class's weights get pushed down) but works IID
    assert train_federated(cfg, "signsgd", digits, shards, seed=0)["test_acc"] < 0.3
    assert train_federated(cfg, "signsgd", digits, split_workers(y, cfg.n_workers, "iid", seed=0), seed=0)["test_acc"] > 0.7


def test_run_is_deterministic():
    r1, r2 = run(tiny_cfg(), progress=False), run(tiny_cfg(), progress=False)
    assert r1.to_json()["metrics"] == r2.to_json()["metrics"]
    assert [v.verdict for v in r1.verdicts] == [v.verdict for v in r2.verdicts]
    assert len(r1.verdicts) == 6 and {"learning", "estimation", "eps_vs_steps", "reference"} <= set(r1.tables)
    ref = r1.tables["reference"]
    assert (ref.rel_diff.abs() < 0.01).all()


# --- config and the full profile ---------------------------------------------------------------------------------------------
def test_config_validation():
    with pytest.raises(ConfigError, match="methods"): Config.from_params("smoke", methods=["sgd", "adam"])
    with pytest.raises(ConfigError, match="delta"): Config.from_params("smoke", delta=0.0)
    with pytest.raises(ConfigError, match="clip"): Config.from_params("smoke", clip=-1.0)
    with pytest.raises(ConfigError, match="unknown parameter"): Config.from_params("smoke", sigma=1.0)
    with pytest.raises(ConfigError, match="model 'cnn'"): Config.from_params("smoke", model="cnn")
    with pytest.raises(ConfigError, match="eps_targets"): Config.from_params("smoke", eps_targets=[0.0])
    assert Config.from_params("cpu").n_seeds == 3 and set(Config.from_params("smoke").methods) == set(METHODS)


def test_full_profile_raises_without_cifar(tmp_path, monkeypatch):
    monkeypatch.setenv("TRUSTLIB_DATA", str(tmp_path))
    with pytest.raises(ResourceUnavailable, match="CIFAR-10"):
        run(Config.from_params("full"), progress=False)


def test_cifar10_binary_reader(tmp_path):
    rec = np.zeros((3, 3073), dtype=np.uint8); rec[:, 0] = [7, 2, 9]; rec[:, 1:] = 51
    for n in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]: rec.tofile(tmp_path / n)
    c = load_cifar10_bin(tmp_path)
    assert c["Xtr"].shape == (15, 3072) and c["yte"].tolist() == [7, 2, 9]
    assert c["Xtr"].max() == pytest.approx(0.2)


def test_worker_sums_chunked_equals_batched():
    from trustlib.models import MLP
    from trustlib.privacy.signsgd import worker_sums
    torch.manual_seed(1)
    m = MLP(6, (3,), 4)
    p = {k: v.detach() for k, v in m.named_parameters()}
    X, y = torch.randn(50, 6), torch.randint(0, 4, (50,))
    parts = [torch.arange(0, 20), torch.arange(20, 50)]
    for clip in (None, 1.0):
        for a, b in zip(worker_sums(m, p, X, y, parts, clip), worker_sums(m, p, X, y, parts, clip, chunk=7)):
            assert torch.allclose(a, b, atol=1e-6)
    G = clip_rows(per_example_grads(m, p, X, y), 1.0)
    assert torch.allclose(worker_sums(m, p, X, y, parts, 1.0)[0], G[:20].sum(0), atol=1e-6)
