"""Tests of trustlib.privacy.signsgd (Noisy SignSGD) beyond the notebook's own examples: closed forms and Monte-Carlo
checks of the de-biased estimator, noise calibration, determinism of worker splits and of training, the training
loop's behaviour on IID and non-IID splits, `run`'s verdicts and tables (with its headline claim), and the full profile's
failure when CIFAR-10 is missing."""
import math
import numpy as np
import pytest
import torch
from scipy.special import erf

from trustlib.config import ConfigError, ResourceUnavailable
from trustlib.results import check_headline
from trustlib.privacy import accounting as A
from trustlib.privacy.signsgd import (CLAIMS, Config, noisy_sign, expected_sign, debias_factor, calibrate_scales, split_workers,
                                      train_federated, load_federated_data, run)


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


def test_calibrate_scales_meet_target():
    sc = calibrate_scales(3.0, 50, 1e-5, dim=650)
    assert A.sign_epsilon(sc["sigma_sign"], 50, 1e-5) <= 3.0 + 1e-9
    assert A.sign_epsilon(sc["sigma_sign"] * 0.999, 50, 1e-5) > 3.0
    assert A.sign_epsilon(sc["s_logistic"], 50, 1e-5, noise="logistic", dim=650) <= 3.0 + 1e-9
    # the vector calibration needs more logistic noise than the one-coordinate one (which is unsound for vectors)
    assert A.sign_epsilon(sc["s_logistic"] * 0.999, 50, 1e-5, noise="logistic", dim=650) > 3.0
    assert sc["s_logistic"] > calibrate_scales(3.0, 50, 1e-5, dim=1)["s_logistic"]
    assert A.gaussian_epsilon_exact(sc["sigma_dpsgd"], 50, 1e-5) <= 3.0 + 1e-9
    assert sc["s_logistic_pure"] == pytest.approx(math.sqrt(650) * 50 / 3.0)      # pure DP per vector: √d·T·Δ/s
    assert sc["sigma_sign"] < sc["sigma_dpsgd"]          # amplification: less noise for the same eps


def test_calibrate_scales_safe_by_default():
    """Without `dim` the calibration accounts for a vector of any size (the safe worst case): it needs at least as much logistic
    noise as a 650-coordinate vector, and more than one coordinate (the unsafe scalar bound that used to be the default)."""
    safe = calibrate_scales(3.0, 50, 1e-5)
    assert safe["dim"] is None and safe["s_logistic_pure"] == math.inf
    assert safe["s_logistic"] >= calibrate_scales(3.0, 50, 1e-5, dim=650)["s_logistic"] * (1 - 1e-3)
    assert safe["s_logistic"] > calibrate_scales(3.0, 50, 1e-5, dim=1)["s_logistic"] * 1.01
    assert A.sign_epsilon(safe["s_logistic"], 50, 1e-5, noise="logistic") <= 3.0 + 1e-9     # meets ε for any dimension
    with pytest.raises(ValueError, match="dim"): calibrate_scales(3.0, 50, 1e-5, dim=0)


# --- splits -----------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["shards", "dirichlet", "iid"])
def test_split_is_partition_and_deterministic(how):
    y = np.repeat(np.arange(10), 37)
    P = split_workers(y, 10, how, seed=5)
    assert np.array_equal(np.sort(np.concatenate(P)), np.arange(len(y)))
    assert all(len(p) > 0 for p in P)
    assert all(np.array_equal(a, b) for a, b in zip(P, split_workers(y, 10, how, seed=5)))


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


def test_run_verdicts_and_reference():
    r1 = run(tiny_cfg(), progress=False)   # determinism: tests/test_papers.py::test_same_seed_same_metrics
    assert not r1.verdicts                  # run() measures; the claims table is graded by the core
    r1.grade(CLAIMS)
    assert len(r1.verdicts) == 6 and {"learning", "estimation", "eps_vs_steps", "reference"} <= set(r1.tables)
    assert check_headline(r1.verdicts).claim.startswith("Discarding magnitudes amplifies privacy")
    assert all(v.rule for v in r1.verdicts if v.verdict != "not_testable_offline")
    ref = r1.tables["reference"]
    assert (ref.rel_diff.abs() < 0.01).all()
    E = r1.tables["eps_vs_steps"]          # vector accounting: logistic above its one-coordinate value; pure bound per vector
    assert (E.sign_logistic_eqvar > E.sign_logistic_eqvar_scalar).all() and "sign_sym_pld_scalar" in E
    assert np.allclose(E.logistic_pure_bound, math.sqrt(650) * E.steps / (E.noise_multiplier * math.sqrt(3) / math.pi))


def test_cpu_profile_has_enough_seeds():
    assert Config.from_params("cpu").n_seeds >= 10


# --- the full profile ---------------------------------------------------------------------------------------------
def test_full_profile_raises_without_cifar(tmp_path, monkeypatch):
    monkeypatch.setenv("TRUSTLIB_DATA", str(tmp_path))
    with pytest.raises(ResourceUnavailable, match="CIFAR-10"):
        run(Config.from_params("full"), progress=False)



def test_config_bounded_and_lists_checked():
    assert Config.unbounded_fields() == []
    for p in ("smoke", "cpu", "full"): Config.from_params(p)
    for name in ("eps_targets", "noise_multipliers", "steps_grid", "ratio_shifts", "heterogeneity"):
        with pytest.raises(ConfigError, match=f"parameter '{name}': must not be empty"): Config.from_params("smoke", **{name: []})
    with pytest.raises(ConfigError, match="'rounds'.*allow_large"): Config.from_params("smoke", rounds=10**7)


def test_condition_holds_on_the_published_run():
    """The page is a cpu run, and the claim that needs heterogeneous data (noiseless SignSGD gains more than 5 points from an
    IID split) was graded with that condition met on the published configuration."""
    from pathlib import Path
    from published import published_verdicts
    root = Path(__file__).resolve().parents[1]
    rows, note = published_verdicts(root / "nbs" / "papers" / "privacy" / "noisy_signsgd.ipynb")
    assert 'profile = "cpu"' in note, note
    needing = {c.claim for c in CLAIMS if c.requires}
    got = {r["claim"]: r for r in rows}
    assert needing and needing <= set(got), sorted(needing - set(got))
    for claim in needing: assert "condition not met" not in got[claim]["reason"], (claim, got[claim]["reason"])
