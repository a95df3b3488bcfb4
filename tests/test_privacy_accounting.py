"""Tests of trustlib.privacy.accounting: the issue's numeric facts about the sign mechanism, agreement of the
Gaussian accountants (closed form, dp-accounting RDP/PLD, prv-accountant), the RDP conversion, calibration,
and input validation. Shared by the Noisy SignSGD and PTA papers."""
import math
import numpy as np
import pytest
from scipy.special import ndtr, log_ndtr

from trustlib.config import ConfigError
from trustlib.privacy import accounting as A

D5 = 1e-5


# --- fact (1): one release with an unconstrained offset is exactly the Gaussian mechanism ---------------------------
@pytest.mark.parametrize("eps,ref", [(0.5, 0.238422), (1.0, 0.126937), (2.0, 0.020924)])
def test_fact1_hockey_stick_equals_gaussian(eps, ref):
    assert A.gaussian_delta(eps, 1.0) == pytest.approx(ref, abs=1e-6)
    assert A.sign_hockey_stick(eps, 1.0) == pytest.approx(ref, abs=1e-6)
    assert A.sign_hockey_stick(eps, 1.0) == pytest.approx(A.gaussian_delta(eps, 1.0), abs=1e-8)


def test_fact1_worst_offset_location():
    # the sup is attained at a = -(eps/mu + mu/2); the pair there gives the Gaussian delta exactly
    mu, eps = 1.0, 1.0
    a = -(eps / mu + mu / 2)
    assert A.bernoulli_hockey_stick(ndtr(a), ndtr(a + mu), eps) == pytest.approx(A.gaussian_delta(eps, mu), abs=1e-12)


def test_fact1_tradeoff_curves_touch_gaussian():
    al = np.linspace(0, 1, 501)
    G = A.gaussian_tradeoff(al, 0.7)
    for a in np.linspace(-4, 3, 15):
        T = A.bernoulli_tradeoff(al, ndtr(a), ndtr(a + 0.7))
        assert np.all(T >= G - 1e-12)
        assert A.bernoulli_tradeoff(ndtr(a), ndtr(a), ndtr(a + 0.7)) == pytest.approx(float(A.gaussian_tradeoff(ndtr(a), 0.7)), abs=1e-12)


def test_bernoulli_tradeoff_edge_cases():
    assert A.bernoulli_tradeoff(0.3, 0.4, 0.4) == pytest.approx(0.7)          # identical distributions: 1 - alpha
    assert A.bernoulli_tradeoff(0.0, 0.0, 0.5) == pytest.approx(0.5)          # '+' impossible under P: free rejection
    assert A.bernoulli_tradeoff(0.2, 0.7, 0.3) == pytest.approx(A.bernoulli_tradeoff(0.2, 0.3, 0.7))  # relabelling
    with pytest.raises(ConfigError): A.bernoulli_tradeoff(0.1, 1.2, 0.5)


# --- fact (2): ratio to the Gaussian RDP --------------------------------------------------------------------------------
def test_fact2_small_shift_limit_two_over_pi():
    for alpha in (1.5, 2.0, 3.0):
        r = A.sign_rdp(0.01, [alpha])[0] / A.gaussian_rdp([alpha], 0.01)[0]
        assert r == pytest.approx(2 / math.pi, abs=1e-3)


def test_fact2_large_order_limit_one_and_strict_amplification():
    orders = np.array(A.DEFAULT_ORDERS)
    for t in (0.25, 0.5, 1.0, 2.0):
        ratio = A.sign_rdp(t, orders) / A.gaussian_rdp(orders, t)
        assert np.all(ratio < 1) and np.all(np.diff(ratio) > 0)
    assert A.sign_rdp(1.0, [512.0])[0] / A.gaussian_rdp([512.0], 1.0)[0] == pytest.approx(1.0, abs=1e-3)


@pytest.mark.parametrize("t,ref", [
    (0.25, [.637, .638, .641, .645, .659, .681, .750, .823, .900, .936, .966, .979]),
    (0.5, [.639, .643, .655, .674, .740, .815, .897, .934, .965, .978, .989, .993]),
    (1.0, [.646, .662, .719, .797, .890, .930, .964, .978, .989, .993, .997, .998])])
def test_ratio_table_regression(t, ref):
    orders = np.array([1.5, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64.])
    np.testing.assert_allclose(A.sign_rdp(t, orders) / A.gaussian_rdp(orders, t), ref, atol=1.5e-3)


def test_sign_rdp_grid_converged():
    orders = np.array(A.DEFAULT_ORDERS)
    for noise in A.NOISES:
        for t in (0.05, 0.5, 2.0):
            coarse, fine = A.sign_rdp(t, orders, noise), A.sign_rdp(t, orders, noise, n_grid=40001)
            np.testing.assert_allclose(coarse, fine, rtol=1e-7)


def test_sign_rdp_matches_bruteforce_sup():
    # literal evaluation of sup_a max(D(Q||P), D(P||Q)) on a very fine grid
    a = np.linspace(-30, 30, 600001)
    for noise, lf in (("gauss", log_ndtr), ("logistic", lambda z: -np.logaddexp(0, -z))):
        lp, l1p, lq, l1q = lf(a), lf(-a), lf(a + 0.6), lf(-a - 0.6)
        for alpha in (2.0, 8.0):
            d = np.maximum(A.bernoulli_renyi(lp, l1p, lq, l1q, alpha), A.bernoulli_renyi(lq, l1q, lp, l1p, alpha))
            assert A.sign_rdp(0.6, [alpha], noise)[0] == pytest.approx(d.max(), rel=1e-6)


# --- fact (3): concentrating the sensitivity in one coordinate is the worst case -------------------------------------------
def test_fact3_concentration_worst_case():
    ks = (1, 2, 4, 16)
    for alpha in (2.0, 8.0, 32.0):
        vals = [k * A.sign_rdp(1 / math.sqrt(k), [alpha])[0] for k in ks]
        assert all(b <= a + 1e-12 for a, b in zip(vals, vals[1:]))
    np.testing.assert_allclose([k * A.sign_rdp(1 / math.sqrt(k), [8.0])[0] for k in ks], [3.72, 3.54, 3.26, 2.72], atol=0.01)
    rng = np.random.default_rng(0)
    for _ in range(10):
        v = np.abs(rng.normal(size=rng.integers(2, 8))); v /= np.linalg.norm(v)
        for alpha in (2.0, 16.0):
            assert sum(A.sign_rdp(tj, [alpha])[0] for tj in v) <= A.sign_rdp(1.0, [alpha])[0] + 1e-9


# --- fact (4): logistic noise is pure DP with eps = Delta/s --------------------------------------------------------------
@pytest.mark.parametrize("t", [0.05, 0.3, 1.0, 3.0])
def test_fact4_logistic_pure_dp(t):
    assert A.sign_pure_epsilon(t, "logistic") == pytest.approx(t, abs=1e-9)
    # and its RDP never exceeds the RDP bound of a t-pure-DP mechanism (randomized response with eps = t is the worst)
    orders = np.array([2.0, 8.0, 64.0])
    e, p = math.exp(t), 1 / (1 + math.exp(t))
    rr = A.bernoulli_renyi(math.log(p), math.log(1 - p), math.log(1 - p), math.log(p), orders)
    assert np.all(A.sign_rdp(t, orders, "logistic") <= rr + 1e-9)


# --- fact (5) and the reference values ------------------------------------------------------------------------------------
def test_reference_values_sigma2_T100():
    orders = A.DEFAULT_ORDERS
    assert A.rdp_to_dp(100 * A.gaussian_rdp(orders, 0.5), orders, D5)[0] == pytest.approx(35.13, rel=0.01)
    # one coordinate carrying the sensitivity (dim=1)
    assert A.sign_epsilon(2.0, 100, D5, dim=1) == pytest.approx(26.19, rel=0.01)
    assert A.sign_epsilon(2.0, 100, D5, offsets="symmetric", dim=1) == pytest.approx(24.62, rel=0.01)
    assert A.sign_epsilon(A.logistic_scale_for_variance(2.0), 100, D5, noise="logistic", dim=1) == pytest.approx(30.02, rel=0.01)


@pytest.mark.parametrize("nm,T,gauss,sign,sym,logit", [
    (1, 10, 19.05, 15.13, 8.09, 14.36), (1, 100, 96.12, 69.57, 62.44, 78.42), (2, 10, 8.09, 6.46, 4.00, 6.49),
    (2, 1000, 199.8, 140.9, 137.3, 170.2), (4, 10, 3.64, 2.92, 1.99, 3.00), (4, 100, 14.18, 10.81, 10.47, 12.36),
    (4, 1000, 67.99, 50.01, 49.33, 59.48)])
def test_composed_epsilon_table(nm, T, gauss, sign, sym, logit):
    orders = A.DEFAULT_ORDERS
    assert A.rdp_to_dp(T * A.gaussian_rdp(orders, 1 / nm), orders, D5)[0] == pytest.approx(gauss, rel=0.01)
    assert A.sign_epsilon(nm, T, D5, dim=1) == pytest.approx(sign, rel=0.01)
    assert A.sign_epsilon(nm, T, D5, offsets="symmetric", dim=1) == pytest.approx(sym, rel=0.01)
    assert A.sign_epsilon(A.logistic_scale_for_variance(nm), T, D5, noise="logistic", dim=1) == pytest.approx(logit, rel=0.01)
    assert A.sign_epsilon(nm, T, D5) == pytest.approx(sign, rel=0.01)          # Gaussian: a vector is no worse than one coordinate


def test_fact5_pld_below_rdp():
    pg, rg = A.pld_gaussian_epsilon(1.0, 100, D5), A.rdp_gaussian_epsilon(1.0, 100, D5)
    ps, rs = A.sign_epsilon(1.0, 100, D5, offsets="symmetric", method="pld", dim=1), A.sign_epsilon(1.0, 100, D5, offsets="symmetric", dim=1)
    assert pg <= rg and ps <= rs
    assert (pg, rg, ps, rs) == pytest.approx((91.8, 96.1, 59.6, 62.4), abs=0.1)


def test_amplification_at_equal_noise():
    for nm in (0.5, 1.0, 2.0, 8.0):
        for T in (1, 10, 300):
            assert A.sign_epsilon(nm, T, D5) < A.rdp_gaussian_epsilon(nm, T, D5)


def test_sign_epsilon_decreases_with_noise():
    e = [A.sign_epsilon(s, 50, D5, noise=n) for n in A.NOISES for s in (0.5, 1, 2, 4)]
    assert all(b < a for a, b in zip(e[:3], e[1:4])) and all(b < a for a, b in zip(e[4:7], e[5:8]))


# --- Gaussian accountants agree --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("nm,T", [(1.0, 100), (2.0, 10), (5.0, 1000)])
def test_gaussian_accountants_agree_full_participation(nm, T):
    exact = A.gaussian_epsilon(nm, T, D5, method="exact")
    assert A.gaussian_epsilon(nm, T, D5, method="pld", discretization=1e-3) == pytest.approx(exact, rel=0.01, abs=0.02)
    assert A.gaussian_epsilon(nm, T, D5, method="prv") == pytest.approx(exact, rel=0.01, abs=0.02)
    assert A.gaussian_epsilon(nm, T, D5, method="pld", discretization=1e-3) >= exact - 1e-9   # pessimistic PLD
    rdp = A.gaussian_epsilon(nm, T, D5, method="rdp")
    assert rdp > exact
    assert rdp == pytest.approx(A.rdp_to_dp(T * A.gaussian_rdp(A.DEFAULT_ORDERS, 1 / nm), A.DEFAULT_ORDERS, D5)[0], rel=1e-9)


def test_gaussian_accountants_agree_subsampled():
    pld = A.pld_gaussian_epsilon(0.8, 300, D5, 0.02, discretization=1e-3)
    prv = A.prv_gaussian_epsilon(0.8, 300, D5, 0.02)
    assert pld == pytest.approx(prv, abs=0.05)
    assert A.rdp_gaussian_epsilon(0.8, 300, D5, 0.02) >= prv - 0.05


@pytest.mark.parametrize("sigma,q,T,delta,ref", [(0.70, 0.0125, 40, 1 / 1600, 1.03), (0.51, 20 / 30000, 100, 1 / 30000, 0.96),
                                                 (0.63, 80 / 40000, 100, 1 / 40000, 0.89), (1.33, 80 / 835, 15, 1 / 835, 0.99)])
def test_pta_accountant_rows(sigma, q, T, delta, ref):
    # PTA / Tang et al.: prv-accountant, Poisson-subsampled Gaussian, eps_error 0.01, delta_error 1e-10, the estimate
    assert A.prv_gaussian_epsilon(sigma, T, delta, q) == pytest.approx(ref, abs=0.2)


def test_rdp_to_dp_matches_dp_accounting():
    from dp_accounting.rdp import rdp_privacy_accountant as rdp
    orders = np.array(A.DEFAULT_ORDERS)
    rng = np.random.default_rng(1)
    for _ in range(20):
        r = rng.uniform(0, 50, len(orders))
        d = 10 ** rng.uniform(-10, -2)
        assert A.rdp_to_dp(r, orders, d)[0] == pytest.approx(rdp.compute_epsilon(orders, r, d)[0], rel=1e-12)


def test_gaussian_delta_inverse():
    for nm, T in ((1.0, 1), (2.0, 100), (0.3, 3)):
        e = A.gaussian_epsilon_exact(nm, T, 1e-6)
        assert A.gaussian_delta(e, math.sqrt(T) / nm) == pytest.approx(1e-6, rel=1e-6)


# --- calibration ---------------------------------------------------------------------------------------------------------
def test_calibrate_noise_bisection_and_grid():
    f = lambda s: A.gaussian_epsilon_exact(s, 100, D5)
    s = A.calibrate_noise(f, 4.0)
    assert f(s) <= 4.0 and f(s * (1 - 2e-4)) > 4.0
    g = A.calibrate_noise(f, 4.0, lo=0.3, hi=30.0, step=0.01)
    assert f(g) <= 4.0 < f(g - 0.01) and abs(g * 100 - round(g * 100)) < 1e-9
    assert A.calibrate_noise(f, 1e6, lo=0.3, hi=3.0) == 0.3           # already private enough at lo
    with pytest.raises(ValueError, match="raise 'hi'"): A.calibrate_noise(f, 0.01, hi=10.0)


def test_calibrate_pta_grid():
    # PTA's sigma search over [0.3, 3.0] in steps of 0.01 with the prv accountant (GINC row, eps = 1 -> sigma 0.70)
    f = lambda s: A.prv_gaussian_epsilon(s, 40, 1 / 1600, 0.0125)
    s = A.calibrate_noise(f, 1.0, lo=0.3, hi=3.0, step=0.01)
    assert s == pytest.approx(0.70, abs=0.011)


# --- validation ------------------------------------------------------------------------------------------------------------
BAD_SIGMAS = [0, 0.0, -1.0, float("nan"), float("inf"), "a", None]
BAD_DELTAS = [0, 0.0, 1, 1.0, -1e-5, 2.0, float("nan"), "x"]


@pytest.mark.parametrize("bad", BAD_SIGMAS)
def test_invalid_noise_rejected(bad):
    for fn in (lambda: A.sign_epsilon(bad, 10, D5), lambda: A.gaussian_epsilon(bad, 10, D5, method="exact"),
               lambda: A.pld_gaussian_epsilon(bad, 10, D5), lambda: A.prv_gaussian_epsilon(bad, 10, D5),
               lambda: A.rdp_gaussian_epsilon(bad, 10, D5), lambda: A.sign_rdp(bad), lambda: A.logistic_scale_for_variance(bad)):
        with pytest.raises(ConfigError):
            fn()


@pytest.mark.parametrize("bad", BAD_DELTAS)
def test_invalid_delta_rejected(bad):
    for fn in (lambda: A.sign_epsilon(2.0, 10, bad), lambda: A.gaussian_epsilon(2.0, 10, bad, method="exact"),
               lambda: A.pld_gaussian_epsilon(2.0, 10, bad), lambda: A.prv_gaussian_epsilon(2.0, 10, bad),
               lambda: A.rdp_to_dp(A.gaussian_rdp(A.DEFAULT_ORDERS, 1.0), A.DEFAULT_ORDERS, bad)):
        with pytest.raises(ConfigError, match="delta"):
            fn()


def test_other_invalid_arguments():
    with pytest.raises(ConfigError, match="steps"): A.sign_epsilon(2.0, 0, D5)
    with pytest.raises(ConfigError, match="choose one of"): A.sign_epsilon(2.0, 10, D5, noise="laplace")
    with pytest.raises(ConfigError, match="offsets"): A.sign_epsilon(2.0, 10, D5, offsets="half")
    with pytest.raises(ConfigError, match="needs offsets='symmetric'"): A.sign_epsilon(2.0, 10, D5, method="pld")
    with pytest.raises(ConfigError, match="dim=1"): A.sign_epsilon(2.0, 10, D5, offsets="symmetric", method="pld")
    with pytest.raises(ConfigError, match="'dim'"): A.sign_epsilon(2.0, 10, D5, noise="logistic", dim=0)
    with pytest.raises(ConfigError, match="sampling_prob"): A.pld_gaussian_epsilon(2.0, 10, D5, sampling_prob=0.0)
    with pytest.raises(ConfigError, match="needs sampling_prob = 1"): A.gaussian_epsilon(2.0, 10, D5, 0.5, method="exact")
    with pytest.raises(ConfigError, match="exceeds the offset range"): A.sign_rdp(1.0, bound=0.4)
    with pytest.raises(ConfigError, match="orders"): A.sign_rdp(1.0, orders=[0.5, 2.0])
    with pytest.raises(ConfigError, match="which"): A.prv_gaussian_epsilon(2.0, 10, D5, which="median")


# --- vectors: the ℓ2 sensitivity spread over coordinates -----------------------------------------------------------------
def _binomial_pair_epsilon(p, q, n, delta):
    """Exact ε(δ) of n i.i.d. coordinate releases Ber(p) vs Ber(q) (the count of +1s is sufficient), both directions."""
    from scipy.stats import binom
    from scipy.optimize import brentq
    k = np.arange(n + 1); lP, lQ = binom.logpmf(k, n, p), binom.logpmf(k, n, q)
    def d(e):
        with np.errstate(over="ignore"):
            return max(np.sum(np.exp(lQ) * np.clip(-np.expm1(e + lP - lQ), 0, None)), np.sum(np.exp(lP) * np.clip(-np.expm1(e + lQ - lP), 0, None)))
    return brentq(lambda e: d(e) - delta, 0, 500, xtol=1e-6)


@pytest.mark.parametrize("s,T,d,audit", [(0.551, 10, 16, 15.38), (0.551, 10, 650, 15.73), (0.276, 10, 650, 40.12)])
def test_logistic_vector_bound_dominates_explicit_pairs(s, T, d, audit):
    """Explicit d-coordinate neighbours (shift 1/(s√d) per coordinate, common offset a): the exact ε of each stays below
    the claimed bound for that dim and for any dim; the audit's exact values too. The old one-coordinate bound
    (14.37, 31.63) fails this."""
    from scipy.special import expit
    t = 1 / (s * math.sqrt(d))
    exact = max(_binomial_pair_epsilon(expit(a), expit(a + t), T * d, D5) for a in (-t / 2, 0.0, -0.5, -1.0))
    bound_d, bound_any = A.sign_epsilon(s, T, D5, noise="logistic", dim=d), A.sign_epsilon(s, T, D5, noise="logistic")
    assert exact <= bound_d <= bound_any + 1e-9
    assert audit <= bound_d
    assert A.sign_epsilon(s, T, D5, noise="logistic", dim=1) < exact      # one coordinate is not the worst case


def test_gauss_vector_instances_below_one_coordinate_bound():
    for d in (1, 16, 650):
        t = 0.5 / math.sqrt(d)
        assert max(_binomial_pair_epsilon(ndtr(a), ndtr(a + t), 10 * d, D5) for a in (-t / 2, 0.0, -1.0)) <= A.sign_epsilon(2.0, 10, D5)


def test_vector_rdp_limits_and_monotone_ratios():
    orders = np.array(A.DEFAULT_ORDERS)
    # logistic: h_α(t)/(α t²/2) decreases in t (α = 2: 0.25, 0.2494, 0.2402, 0.2169)
    r = [A.sign_rdp(t, [2.0], "logistic")[0] / A.gaussian_rdp([2.0], t)[0] for t in (0.01, 0.25, 1, 2)]
    assert r == pytest.approx([0.25, 0.2494, 0.2402, 0.2169], abs=2e-4)
    # spreading: k·h(μ/√k) increases in k and tends to the Gaussian mechanism with σ = 2s
    v = [A.sign_vector_rdp(1.0, orders, "logistic", dim=k) for k in (1, 4, 64, 4096)]
    assert all(np.all(b >= a - 1e-12) for a, b in zip(v, v[1:]))
    assert A.sign_vector_rdp(1.0, orders, "logistic") == pytest.approx(A.gaussian_rdp(orders, 0.5), rel=1e-9)
    assert A.sign_vector_rdp(1.0, orders, "gauss") == pytest.approx(A.sign_rdp(1.0, orders), rel=1e-12)
    # random splits never exceed the bound
    rng = np.random.default_rng(3)
    for _ in range(5):
        w = np.abs(rng.normal(size=8)); w /= np.linalg.norm(w)
        assert sum(A.sign_rdp(x, [4.0], "logistic")[0] for x in w) <= A.sign_vector_rdp(1.0, [4.0], "logistic", dim=8)[0] + 1e-12


def test_logistic_pure_epsilon_is_per_vector():
    assert A.logistic_pure_epsilon(0.5, 10, 650) == pytest.approx(math.sqrt(650) * 10 / 0.5)
    assert A.logistic_pure_epsilon(0.5, 10) == pytest.approx(20.0)
