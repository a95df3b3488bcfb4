# %% [markdown]
# # privacy accounting — Gaussian accountants and the sign mechanism's Rényi DP
#
# > Thin wrappers over prv-accountant and dp-accounting for the (subsampled) Gaussian mechanism, the RDP to (ε, δ) conversion, and the privacy of sign(x + noise) computed by hand.

# %% [markdown]
# Two papers need privacy accounting: Noisy SignSGD (`papers/privacy/noisy_signsgd`) and PTA
# (`papers/privacy/pta`). This notebook holds what they share.
#
# - **Gaussian mechanism / DP-SGD** (`gaussian_epsilon`): one call, five methods — the exact closed form
#   (full participation), Google's `dp-accounting` (RDP and PLD), Microsoft's `prv-accountant`
#   (Gopi et al. 2021, what PTA and its baseline use), and our own RDP line. They are tested against each
#   other.
# - **RDP → (ε, δ)** (`rdp_to_dp`): the conversion of Balle et al. 2020 (Prop. 12 of Canonne, Kamath &
#   Steinke 2020), checked against `dp_accounting.rdp.compute_epsilon`.
# - **The sign mechanism** (`sign_rdp`, `sign_vector_rdp`, `sign_epsilon`, `sign_hockey_stick`, ...): the
#   privacy of releasing sign(x + noise) with Gaussian or logistic noise, for one coordinate and for a
#   vector whose ℓ₂ sensitivity may spread over its coordinates. No library covers it, so it is written
#   here by hand and tested against closed forms and explicit vector neighbours.
# - **Calibration** (`calibrate_noise`): the smallest noise that meets a target ε, by bisection or on a grid
#   (PTA searches σ ∈ [0.3, 3.0] in steps of 0.01).
#
# Conventions. `noise_multiplier` is the noise scale divided by the sensitivity (σ/Δ for Gaussian noise,
# s/Δ for logistic noise of scale s), as in DP-SGD. `t = Δ/scale` is the same quantity inverted: the shift
# of one coordinate measured in noise units. Neighbouring datasets are add/remove-one unless a function
# says otherwise.

# %%
#| default_exp privacy.accounting

# %%
#| export
from __future__ import annotations
import logging, math
from typing import Callable, Sequence
import numpy as np
from scipy.special import log_ndtr, log_expit, ndtr, ndtri, expit
from trustlib.config import ConfigError, require

# %%
#| hide
import time
from fastcore.test import test_eq, test_close, test_fail

# %% [markdown]
# ## Input checks
#
# Every public function validates its arguments first and raises `ConfigError` (a `ValueError`) naming
# the parameter: a noise scale must be a positive finite number, δ must lie strictly between 0 and 1.

# %%
#| export
NOISES = ("gauss", "logistic")
DEFAULT_ORDERS = (1.25, 1.5, 2., 2.5, 3., 4., 5., 6., 8., 10., 12., 16., 20., 24., 32., 48., 64., 96., 128.)

def _positive(x, name:str) -> float:
    try: v = float(x)
    except (TypeError, ValueError): raise ConfigError(f"parameter {name!r}: expected a positive number, got {x!r}") from None
    if not math.isfinite(v) or v <= 0: raise ConfigError(f"parameter {name!r}: must be a finite number > 0, got {x!r}")
    return v

def check_delta(delta) -> float:
    "δ as a float, or `ConfigError` unless 0 < δ < 1."
    try: d = float(delta)
    except (TypeError, ValueError): raise ConfigError(f"parameter 'delta': expected a number in (0, 1), got {delta!r}") from None
    if not (0 < d < 1): raise ConfigError(f"parameter 'delta': must lie in (0, 1), got {delta!r}")
    return d

def check_noise_multiplier(x, name:str="noise_multiplier") -> float:
    "A noise scale (σ/Δ or s/Δ) as a float, or `ConfigError` unless it is finite and > 0."
    return _positive(x, name)

def _steps(steps) -> int:
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise ConfigError(f"parameter 'steps': expected an int >= 1, got {steps!r}")
    return int(steps)

def _noise(noise:str) -> str:
    if noise not in NOISES: raise ConfigError(f"parameter 'noise': {noise!r} is not allowed; choose one of {list(NOISES)}")
    return noise

def _q(sampling_prob) -> float:
    q = float(sampling_prob)
    if not (0 < q <= 1): raise ConfigError(f"parameter 'sampling_prob': must lie in (0, 1], got {sampling_prob!r}")
    return q

def _orders(orders) -> np.ndarray:
    a = np.atleast_1d(np.asarray(orders, dtype=float))
    if a.ndim != 1 or a.size == 0 or not np.all(a > 1) or not np.all(np.isfinite(a)):
        raise ConfigError(f"parameter 'orders': Rényi orders must be finite numbers > 1, got {orders!r}")
    return a


# %%
for bad in (0, -1.0, float('nan'), float('inf'), 'x', None):
    test_fail(lambda: check_noise_multiplier(bad), contains="noise_multiplier")
for bad in (0, 1, 1.5, -1e-5, 'x'):
    test_fail(lambda: check_delta(bad), contains="'delta'")
test_eq(check_delta(1e-5), 1e-5)
test_fail(lambda: _noise('laplace'), contains="choose one of ['gauss', 'logistic']")
test_fail(lambda: _steps(0), contains="'steps'")
test_fail(lambda: _orders([1.0, 2.0]), contains="> 1")


# %% [markdown]
# ## The Gaussian mechanism
#
# With sensitivity Δ and noise N(0, σ²), the privacy of the Gaussian mechanism depends only on
# μ = Δ/σ. Its exact privacy profile (Balle & Wang 2018) is
#
# $$\delta(\varepsilon) = \Phi\!\Big(-\frac{\varepsilon}{\mu} + \frac{\mu}{2}\Big) - e^{\varepsilon}\,\Phi\!\Big(-\frac{\varepsilon}{\mu} - \frac{\mu}{2}\Big),$$
#
# its Rényi DP of order α is α μ²/2, and its f-DP trade-off function is
# $G_\mu(\alpha) = \Phi(\Phi^{-1}(1-\alpha) - \mu)$. T-fold composition of the Gaussian mechanism is again a
# Gaussian mechanism, with μ√T; so with full participation the exact ε of DP-SGD needs no accountant.

# %%
#| export
def gaussian_delta(eps:float, # ε >= 0
                   mu:float, # μ = Δ/σ (for T steps with full participation: μ√T)
                   ) -> float:
    "Exact δ(ε) of the Gaussian mechanism with sensitivity-to-noise ratio μ (Balle & Wang 2018)."
    mu = _positive(mu, 'mu')
    if eps < 0: raise ConfigError(f"parameter 'eps': must be >= 0, got {eps!r}")
    # e^ε Φ(-ε/μ - μ/2) computed in log space: no overflow at large ε
    return float(ndtr(-eps / mu + mu / 2) - np.exp(eps + log_ndtr(-eps / mu - mu / 2)))

def gaussian_epsilon_exact(noise_multiplier:float, # σ/Δ
                           steps:int, # number of compositions (full participation)
                           delta:float, # target δ
                           ) -> float:
    "Exact ε of `steps` compositions of the Gaussian mechanism without subsampling (inverts `gaussian_delta`)."
    from scipy.optimize import brentq
    mu = math.sqrt(_steps(steps)) / check_noise_multiplier(noise_multiplier); delta = check_delta(delta)
    if gaussian_delta(0.0, mu) <= delta: return 0.0
    hi = 1.0
    while gaussian_delta(hi, mu) > delta: hi *= 2
    return float(brentq(lambda e: gaussian_delta(e, mu) - delta, 0.0, hi, xtol=1e-12, rtol=1e-12))

def gaussian_rdp(orders, # Rényi orders α > 1
                 mu:float, # μ = Δ/σ
                 ) -> np.ndarray:
    "RDP of the Gaussian mechanism: α μ²/2 for every order."
    return _orders(orders) * _positive(mu, 'mu') ** 2 / 2

def gaussian_tradeoff(alpha, # type-I error(s) in [0, 1]
                      mu:float, # μ = Δ/σ
                      ) -> np.ndarray:
    "f-DP trade-off function G_μ(α) = Φ(Φ⁻¹(1 − α) − μ) of the Gaussian mechanism."
    a = np.clip(np.asarray(alpha, dtype=float), 0, 1)
    return ndtr(ndtri(1 - a) - _positive(mu, 'mu'))


# %% [markdown]
# Noisy SignSGD's fact (1) values at μ = 1, and the inverse:

# %%
test_close([gaussian_delta(e, 1.0) for e in (0.5, 1, 2)], [0.238422, 0.126937, 0.020924], eps=1e-6)
test_close(gaussian_delta(gaussian_epsilon_exact(2.0, 100, 1e-5), 5.0), 1e-5, eps=1e-12)
test_close(gaussian_tradeoff([0.0, 1.0], 1.0), [1.0, 0.0], eps=1e-12)
test_close(gaussian_tradeoff(0.5, 1e-9), 0.5, eps=1e-6)
gaussian_epsilon_exact(1.0, 100, 1e-5), gaussian_epsilon_exact(2.0, 100, 1e-5)


# %% [markdown]
# ## From Rényi DP to (ε, δ)
#
# A mechanism that is (α, ρ(α))-RDP for every α in a list of orders is (ε, δ)-DP with
# $\varepsilon = \min_\alpha \big[\rho(\alpha) + \log(1 - 1/\alpha) - (\log\delta + \log\alpha)/(\alpha - 1)\big]$
# (Balle et al. 2020; Canonne, Kamath & Steinke 2020, Prop. 12) — the conversion Opacus, TF-Privacy and
# dp-accounting use. RDP composes additively, so T steps of a ρ(α)-RDP mechanism are T·ρ(α)-RDP.
# `DEFAULT_ORDERS` is a 19-order list (1.25 … 128), the one the privacy pages' reference values use.
# dp-accounting's `RdpAccountant` defaults to a finer grid of 154 orders (1.1, 1.2, …, 10.9, 11, …, 63, 128,
# 256, 512, 1024); a finer grid can only lower ε (the minimum runs over more orders), so ε from `DEFAULT_ORDERS`
# is an upper bound of dp-accounting's default by a small margin; the cell below measures it.

# %%
#| export
def rdp_to_dp(rdp, # RDP ρ(α) at each order (already composed)
              orders=DEFAULT_ORDERS, # the orders α > 1
              delta:float=1e-5, # target δ
              ) -> tuple[float, float]:
    "(ε, best order) from an RDP curve, by the Balle et al. 2020 conversion; ε is never negative."
    a = _orders(orders); r = np.asarray(rdp, dtype=float); delta = check_delta(delta)
    if r.shape != a.shape: raise ConfigError(f"parameter 'rdp': expected {a.size} values (one per order), got shape {r.shape}")
    if np.any(r < 0) or not np.all(np.isfinite(r) | (r == np.inf)): raise ConfigError("parameter 'rdp': values must be >= 0")
    eps = r + np.log1p(-1 / a) - (math.log(delta) + np.log(a)) / (a - 1)
    i = int(np.argmin(eps))
    return max(0.0, float(eps[i])), float(a[i])


# %% [markdown]
# Cross-check against dp-accounting's implementation of the same conversion, and the Gaussian mechanism
# through our RDP line vs dp-accounting's RDP accountant:

# %%
from dp_accounting.rdp import rdp_privacy_accountant as _rdp

# %%
_a = np.array(DEFAULT_ORDERS)
for _r in (100 * gaussian_rdp(_a, 0.5), 7 * gaussian_rdp(_a, 1.3), np.linspace(0.1, 40, len(_a))):
    test_close(rdp_to_dp(_r, _a, 1e-5)[0], _rdp.compute_epsilon(_a, _r, 1e-5)[0], eps=1e-10)

# %% [markdown]
# The two grids on the same curves: dp-accounting's default grid never gives a larger ε, and the gap is small.

# %%
_fine = np.array(_rdp.DEFAULT_RDP_ORDERS, dtype=float)
for _s, _T in ((3.0, 1), (5.0, 10), (20.0, 50)):   # ε of a few units, the regime of the papers
    _e19, _e154 = rdp_to_dp(_T * gaussian_rdp(_a, 1 / _s), _a, 1e-5)[0], rdp_to_dp(_T * gaussian_rdp(_fine, 1 / _s), _fine, 1e-5)[0]   # μ = Δ/σ
    assert _e154 <= _e19 + 1e-12 and _e19 - _e154 < 0.05 * _e19, (_s, _T, _e19, _e154)
    print(f"σ = {_s}, T = {_T}: ε with the 19 orders {_e19:.4f}, with dp-accounting's default 154 orders {_e154:.4f}")
test_fail(lambda: rdp_to_dp([1.0, 2.0], _a, 1e-5), contains="one per order")
rdp_to_dp(100 * gaussian_rdp(_a, 0.5), _a, 1e-5)   # Gaussian without sign, σ/Δ = 2, T = 100: 35.13


# %% [markdown]
# ## Accountants for the (subsampled) Gaussian mechanism
#
# Thin wrappers, each returning a plain float ε for `steps` compositions of the Gaussian mechanism with
# noise multiplier σ/Δ and Poisson sampling rate `sampling_prob` (1 = full participation):
#
# | method | library | notes |
# |---|---|---|
# | `exact` | closed form | full participation only; exact |
# | `rdp` | dp-accounting `RdpAccountant` | upper bound via `rdp_to_dp`'s conversion over `orders` |
# | `pld` | dp-accounting PLD (`from_gaussian_mechanism`) | pessimistic discretisation: a tight upper bound |
# | `prv` | prv-accountant `PRVAccountant` | returns the estimate by default (`which='upper'` for the bound), as PTA's code does |
#
# `prv-accountant` 0.2.0 reports (lower, estimate, upper) with |upper − lower| ≤ 2·`eps_error`.

# %%
#| export
def rdp_gaussian_epsilon(noise_multiplier:float, steps:int, delta:float, sampling_prob:float=1.0,
                         orders=DEFAULT_ORDERS) -> float:
    "ε of the (Poisson-subsampled) Gaussian mechanism by dp-accounting's RDP accountant."
    dp_accounting = require('dp_accounting', 'RDP accounting')
    rdp = require('dp_accounting.rdp.rdp_privacy_accountant', 'RDP accounting')
    sig, T, delta, q = check_noise_multiplier(noise_multiplier), _steps(steps), check_delta(delta), _q(sampling_prob)
    acc = rdp.RdpAccountant(orders=list(_orders(orders)))
    ev = dp_accounting.GaussianDpEvent(sig)
    if q < 1: ev = dp_accounting.PoissonSampledDpEvent(q, ev)
    # dp-accounting logs a warning when its series for a fractional order near 1 does not converge and then
    # drops that order from the minimum (safe); keep the notebook output clean
    lg = logging.getLogger('absl'); level = lg.level; lg.setLevel(logging.ERROR)
    try:
        acc.compose(dp_accounting.SelfComposedDpEvent(ev, T))
        return float(acc.get_epsilon(delta))
    finally: lg.setLevel(level)

def pld_gaussian_epsilon(noise_multiplier:float, steps:int, delta:float, sampling_prob:float=1.0,
                         discretization:float=1e-4) -> float:
    "ε of the (Poisson-subsampled) Gaussian mechanism by dp-accounting's privacy loss distribution (pessimistic)."
    pld = require('dp_accounting.pld.privacy_loss_distribution', 'PLD accounting')
    sig, T, delta, q = check_noise_multiplier(noise_multiplier), _steps(steps), check_delta(delta), _q(sampling_prob)
    p = pld.from_gaussian_mechanism(standard_deviation=sig, sensitivity=1.0, sampling_prob=q,
                                    value_discretization_interval=_positive(discretization, 'discretization'))
    return float(p.self_compose(T).get_epsilon_for_delta(delta))

def prv_gaussian_epsilon(noise_multiplier:float, steps:int, delta:float, sampling_prob:float=1.0,
                         eps_error:float=0.01, delta_error:float=1e-10, which:str="estimate") -> float:
    "ε of the (Poisson-subsampled) Gaussian mechanism by prv-accountant (Gopi et al. 2021)."
    _prv = require('prv_accountant', 'PRV accounting')
    PRVAccountant, PoissonSubsampledGaussianMechanism, GaussianMechanism = _prv.PRVAccountant, _prv.PoissonSubsampledGaussianMechanism, _prv.GaussianMechanism
    sig, T, delta, q = check_noise_multiplier(noise_multiplier), _steps(steps), check_delta(delta), _q(sampling_prob)
    if which not in ("lower", "estimate", "upper"): raise ConfigError(f"parameter 'which': {which!r} is not allowed; choose one of ['lower', 'estimate', 'upper']")
    mech = GaussianMechanism(noise_multiplier=sig) if q == 1 else PoissonSubsampledGaussianMechanism(noise_multiplier=sig, sampling_probability=q)
    acc = PRVAccountant(prvs=[mech], max_self_compositions=[T], eps_error=_positive(eps_error, 'eps_error'),
                        delta_error=_positive(delta_error, 'delta_error'))
    lo, est, up = acc.compute_epsilon(delta=delta, num_self_compositions=[T])
    return float(dict(lower=lo, estimate=est, upper=up)[which])

GAUSSIAN_METHODS = ("exact", "rdp", "pld", "prv")

def gaussian_epsilon(noise_multiplier:float, # σ/Δ
                     steps:int, # number of compositions
                     delta:float, # target δ
                     sampling_prob:float=1.0, # Poisson sampling rate (1: full participation)
                     method:str="pld", # one of GAUSSIAN_METHODS
                     **kwargs, # passed to the method (orders, discretization, eps_error, which, ...)
                     ) -> float:
    "ε of DP-SGD's (subsampled) Gaussian mechanism by the chosen accountant."
    if method not in GAUSSIAN_METHODS: raise ConfigError(f"parameter 'method': {method!r} is not allowed; choose one of {list(GAUSSIAN_METHODS)}")
    if method == "exact":
        if _q(sampling_prob) != 1: raise ConfigError("method 'exact' needs sampling_prob = 1 (no subsampling)")
        return gaussian_epsilon_exact(noise_multiplier, steps, delta)
    fn = dict(rdp=rdp_gaussian_epsilon, pld=pld_gaussian_epsilon, prv=prv_gaussian_epsilon)[method]
    return fn(noise_multiplier, steps, delta, sampling_prob, **kwargs)


# %% [markdown]
# The accountants agree on the Gaussian mechanism (σ = 1, 100 steps, δ = 1e-5): exact 91.8, PLD 91.8,
# PRV 91.8, RDP 96.1 (a looser bound, as RDP always is). With subsampling there is no closed form; PLD
# and PRV agree to their error bounds.

# %%
_t0 = time.time()
_e = {m: gaussian_epsilon(1.0, 100, 1e-5, method=m, **(dict(discretization=1e-3) if m == 'pld' else {})) for m in GAUSSIAN_METHODS}
test_close(_e['pld'], _e['exact'], eps=0.05); test_close(_e['prv'], _e['exact'], eps=0.05)
assert _e['exact'] <= _e['pld'] + 1e-9 and _e['exact'] < _e['rdp']
test_close(_e['rdp'], rdp_to_dp(100 * gaussian_rdp(_a, 1.0), _a, 1e-5)[0], eps=1e-8)   # dp-accounting RDP = our RDP line
_s = dict(pld=pld_gaussian_epsilon(0.8, 200, 1e-5, 0.05, discretization=1e-3), prv=prv_gaussian_epsilon(0.8, 200, 1e-5, 0.05),
          rdp=rdp_gaussian_epsilon(0.8, 200, 1e-5, 0.05))
test_close(_s['pld'], _s['prv'], eps=0.05); assert _s['prv'] < _s['rdp']
test_fail(lambda: gaussian_epsilon(1.0, 10, 1e-5, sampling_prob=0.1, method='exact'), contains="needs sampling_prob = 1")
test_fail(lambda: gaussian_epsilon(0.0, 10, 1e-5), contains="noise_multiplier")
test_fail(lambda: gaussian_epsilon(1.0, 10, 1.0), contains="'delta'")
test_fail(lambda: gaussian_epsilon(1.0, 10, 1e-5, method='moments'), contains="choose one of")
print(f"{time.time() - _t0:.1f} s"); {**{k: round(v, 3) for k, v in _e.items()}, **{f"q=0.05 {k}": round(v, 3) for k, v in _s.items()}}


# %% [markdown]
# ## Noise calibration
#
# `calibrate_noise(eps_of, target)` returns the smallest noise in `[lo, hi]` whose ε is at most the
# target, for any accountant `eps_of(noise) -> ε` that decreases with the noise. With `step`, the answer
# is the smallest point of the grid lo, lo + step, ... (PTA's search over [0.3, 3.0] in steps of 0.01);
# without, bisection to relative precision `rtol` (rounded up, so the target is always met).

# %%
#| export
def calibrate_noise(eps_of:Callable[[float], float], # noise scale -> ε, decreasing in the noise
                    target_eps:float, # the ε to meet
                    lo:float=0.05, hi:float=1000.0, # search interval of the noise scale
                    step:float|None=None, # grid step (None: bisection)
                    rtol:float=1e-4, # relative precision of the bisection
                    ) -> float:
    "The smallest noise scale in [lo, hi] with `eps_of(noise) <= target_eps`."
    target = _positive(target_eps, 'target_eps'); lo, hi = _positive(lo, 'lo'), _positive(hi, 'hi')
    if lo >= hi: raise ConfigError(f"need lo < hi, got lo={lo}, hi={hi}")
    if eps_of(hi) > target: raise ValueError(f"even the largest noise {hi} gives ε = {eps_of(hi):.4g} > {target}; raise 'hi'")
    if eps_of(lo) <= target: return lo
    if step is not None:
        n = int(math.floor((hi - lo) / _positive(step, 'step') + 1e-9))
        grid = lambda i: round(lo + i * step, 12)
        a, b = 0, n                      # eps(grid(a)) > target; eps(grid(b)) <= target (or b is hi itself)
        if eps_of(grid(b)) > target: return hi
        while b - a > 1:
            m = (a + b) // 2
            if eps_of(grid(m)) <= target: b = m
            else: a = m
        return grid(b)
    a, b = math.log(lo), math.log(hi)
    while b - a > rtol:
        m = (a + b) / 2
        if eps_of(math.exp(m)) <= target: b = m
        else: a = m
    return math.exp(b)


# %%
_sig = calibrate_noise(lambda s: gaussian_epsilon_exact(s, 100, 1e-5), 8.0)
assert gaussian_epsilon_exact(_sig, 100, 1e-5) <= 8.0 < gaussian_epsilon_exact(_sig * (1 - 2e-4), 100, 1e-5)
_g = calibrate_noise(lambda s: gaussian_epsilon_exact(s, 10, 1e-5), 2.0, lo=0.3, hi=30.0, step=0.01)
assert gaussian_epsilon_exact(_g, 10, 1e-5) <= 2.0 < gaussian_epsilon_exact(_g - 0.01, 10, 1e-5)
test_eq(round(_g * 100) == _g * 100 or abs(_g * 100 - round(_g * 100)) < 1e-9, True)
test_fail(lambda: calibrate_noise(lambda s: 100.0, 1.0), contains="raise 'hi'")
_sig, _g


# %% [markdown]
# ## The sign mechanism
#
# Noisy SignSGD releases, per coordinate, sign(g + n). With noise CDF F (F = Φ for N(0, σ²), F = the
# logistic sigmoid for Logistic(0, s)), the release is +1 with probability F(g/scale). A neighbouring
# dataset shifts the coordinate by Δg; in noise units the offset is a = g/scale and the shift
# t = Δg/scale. So one coordinate's release is the Bernoulli pair
#
# $$P_a = \mathrm{Ber}(F(a)), \qquad Q_a = \mathrm{Ber}(F(a + t)).$$
#
# The adversary may choose the offset a (the rest of the data), so the privacy of one release is the worst
# case over a: over all reals when the gradient is unbounded, over a ∈ [−B, B − t] when every coordinate
# of the released statistic satisfies |g| ≤ B·scale (e.g. a mean of clipped gradients over a fixed batch).
#
# **Per-step Rényi DP.** $h_\alpha(t) = \sup_a \max\{D_\alpha(Q_a\|P_a), D_\alpha(P_a\|Q_a)\}$ with
# $D_\alpha(Q\|P) = \frac{1}{\alpha-1}\log\big(q^\alpha p^{1-\alpha} + (1-q)^\alpha (1-p)^{1-\alpha}\big)$,
# evaluated in log space (log Φ via `scipy.special.log_ndtr`, log sigmoid via `log_expit`) on a dense grid
# of offsets and refined by golden-section search around the best grid point. For Gaussian noise the
# maximising offset moves to a ≈ −α t as α t grows (the sign event then catches the Gaussian tail), so the
# unbounded grid spans ±(α t + 20); beyond that the divergence is smaller than at the grid's peak by a
# factor of order e^{-200}.

# %%
#| export
def _logF(noise:str):
    return log_ndtr if _noise(noise) == "gauss" else log_expit

def sign_prob(g, # value(s) before noise
              scale:float, # σ (Gaussian) or s (logistic)
              noise:str="gauss", # 'gauss' or 'logistic'
              ) -> np.ndarray:
    "P(sign(g + noise) = +1) = F(g/scale)."
    x = np.asarray(g, dtype=float) / _positive(scale, 'scale')
    return ndtr(x) if _noise(noise) == "gauss" else expit(x)

def bernoulli_renyi(logp, log1mp, logq, log1mq, # log p, log(1-p), log q, log(1-q), arrays (broadcast)
                    alpha, # Rényi order(s) > 1 (broadcast)
                    ) -> np.ndarray:
    "D_α(Ber(q) ‖ Ber(p)) computed from log-probabilities."
    alpha = np.asarray(alpha, dtype=float)
    return np.logaddexp(alpha * logq + (1 - alpha) * logp, alpha * log1mq + (1 - alpha) * log1mp) / (alpha - 1)

def _pair_logs(a, t, lf):
    return lf(a), lf(-a), lf(a + t), lf(-a - t)

def _sym_renyi(a, t, alpha, lf):
    lp, l1p, lq, l1q = _pair_logs(a, t, lf)
    return np.maximum(bernoulli_renyi(lp, l1p, lq, l1q, alpha), bernoulli_renyi(lq, l1q, lp, l1p, alpha))

def _offset_range(t:float, bound:float|None, reach:float) -> tuple[float, float]:
    if bound is None: return -reach - t, reach
    B = _positive(bound, 'bound')
    if t > 2 * B + 1e-12: raise ConfigError(f"shift t = {t:g} exceeds the offset range 2·bound = {2 * B:g}: a bounded coordinate cannot move that far")
    return -B, max(B - t, -B)

def _golden_max(f, a, b, iters:int=80):
    "Vectorised golden-section search for the maximum of f on [a, b] (arrays of intervals)."
    g = (math.sqrt(5) - 1) / 2
    a, b = np.array(a, dtype=float), np.array(b, dtype=float)
    c, d = b - g * (b - a), a + g * (b - a); fc, fd = f(c), f(d)
    for _ in range(iters):
        left = fc >= fd
        b = np.where(left, d, b); a = np.where(left, a, c)
        c2, d2 = b - g * (b - a), a + g * (b - a)
        # reuse one interior point per iteration
        c_new = np.where(left, c2, d); d_new = np.where(left, c, d2)
        fc_new = np.where(left, f(c2), fd); fd_new = np.where(left, fc, f(d2))
        c, d, fc, fd = c_new, d_new, fc_new, fd_new
    return np.maximum(fc, fd)

def sign_rdp(t:float, # shift of one coordinate in noise units, Δ/scale
             orders=DEFAULT_ORDERS, # Rényi orders α > 1
             noise:str="gauss", # 'gauss' or 'logistic'
             bound:float|None=None, # None: offsets unconstrained; B: |g|/scale <= B (offsets in [-B, B - t])
             n_grid:int=2001, # offsets on the search grid (then refined)
             ) -> np.ndarray:
    "Per-release RDP h_α(t) of sign(g + noise): worst case over offsets, max of both directions; one value per order."
    t = _positive(t, 't'); a_ord = _orders(orders); lf = _logF(noise)
    lo, hi = _offset_range(t, bound, reach=max(40.0, float(a_ord.max()) * t + 20.0))
    if hi - lo < 1e-12: return _sym_renyi(np.full(a_ord.shape, lo), t, a_ord, lf)
    x = np.linspace(lo, hi, int(n_grid))
    V = _sym_renyi(x[None, :], t, a_ord[:, None], lf)               # [orders, grid]
    i = V.argmax(1); best = V[np.arange(len(a_ord)), i]
    left, right = x[np.maximum(i - 1, 0)], x[np.minimum(i + 1, len(x) - 1)]
    refined = _golden_max(lambda z: _sym_renyi(z, t, a_ord, lf), left, right)
    return np.maximum(best, refined)


# %% [markdown]
# Noisy SignSGD's fact (2): the ratio to the Gaussian mechanism's RDP, h_α(t)/(α t²/2), tends to 2/π (the
# Fisher information of Ber(Φ(a)) at a = 0 is φ(0)²/(1/4) = 2/π) as t → 0, rises to 1 as α·t grows, and
# stays strictly below 1: no amplification per release for an adversary at large α, amplification under
# composition where small orders matter. The table reproduces the dossier's values to ±1e-3.

# %%
_t0 = time.time()
test_close(sign_rdp(0.01, [2.0])[0] / (2 * 0.01 ** 2 / 2), 2 / np.pi, eps=1e-3)
_tab = {0.25: [.637, .638, .641, .645, .659, .681, .750, .823, .900, .936, .966, .979],
        0.5: [.639, .643, .655, .674, .740, .815, .897, .934, .965, .978, .989, .993],
        1.0: [.646, .662, .719, .797, .890, .930, .964, .978, .989, .993, .997, .998]}
_ords = np.array([1.5, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64.])
for _t, _ref in _tab.items():
    _ratio = sign_rdp(_t, _ords) / gaussian_rdp(_ords, _t)
    test_close(_ratio, _ref, eps=1.5e-3)
    assert np.all(_ratio < 1) and np.all(np.diff(_ratio) > 0)
test_close(sign_rdp(1.0, [256.])[0] / gaussian_rdp([256.], 1.0)[0], 1.0, eps=2e-3)   # → 1 at large α·t
print(f"{time.time() - _t0:.2f} s")

# %% [markdown]
# ### Vectors: how the ℓ₂ sensitivity spreads over coordinates
#
# A d-dimensional release sign(g + noise) with ‖Δg‖₂ ≤ Δ is a product of independent coordinate pairs with
# shifts t_j, Σ t_j² ≤ μ² (μ = Δ/scale); its RDP is Σ_j h_α(t_j). Write h_α(t) = (α t²/2)·r_α(t), with r_α
# the ratio to the Gaussian mechanism. Then Σ_j h_α(t_j) = (α/2) Σ_j t_j² r_α(t_j), and which split is the
# worst depends on how r_α varies with t:
#
# - **Gaussian noise, unconstrained offset:** r_α *increases* in t (checked on a grid below), so
#   Σ_j h_α(t_j) ≤ (α/2) μ² r_α(μ) = h_α(μ): putting the whole sensitivity into one coordinate is the worst
#   case, and the scalar pair with t = μ bounds the vector. This fact is for Gaussian noise only.
# - **Logistic noise (and bounded offsets):** r_α *decreases* in t (α = 2: 0.25, 0.2494, 0.2402, 0.2169 at
#   t = 0.01, 0.25, 1, 2), so spreading the sensitivity is worse. r_α(t) ≤ lim_{t→0} r_α(t) = c, the Fisher
#   information of Ber(F(a)) at a = 0 over the Gaussian's (c = 1/4 for logistic noise, 2/π for Gaussian
#   noise), so for **any** split Σ_j h_α(t_j) ≤ c·α μ²/2: the limit of spreading over infinitely many
#   coordinates, a Gaussian mechanism with σ = scale/√c (σ = 2s for logistic noise of scale s). With at most
#   d coordinates, the even spread over k ≤ d coordinates gives k·h_α(μ/√k), which increases with k when
#   r_α decreases.
#
# `sign_vector_rdp(mu, orders, noise, offsets, dim)` returns the supremum over k ≤ `dim` of k·h_α(μ/√k)
# (k on a geometric grid with k = 1 and k = dim) and, for `dim=None` (no bound on the dimension), also the
# limit c·α μ²/2, which dominates every split. For Gaussian noise with unconstrained offsets it is h_α(μ)
# (k = 1). The scalar functions (`sign_rdp`, `sign_pair_pld_epsilon`, `sign_pure_epsilon`) describe **one
# coordinate** carrying shift t.

# %%
#| export
SIGN_OFFSETS = ("unbounded", "symmetric")

def sign_fisher_ratio(noise:str="gauss") -> float:
    "lim_{t→0} h_α(t)/(α t²/2): 2/π for Gaussian noise, 1/4 for logistic noise (Fisher information of Ber(F(a)) at a = 0 over 1/scale²)."
    return 2 / math.pi if _noise(noise) == "gauss" else 0.25

def _spread_ks(dim:int|None, cap:int=4 ** 10) -> list[int]:
    top = cap if dim is None else int(dim)
    ks, k = {1, top}, 1
    while k < top: k *= 4; ks.add(min(k, top))
    return sorted(ks)

def sign_vector_rdp(mu:float, # ℓ2 norm of the shift in noise units, Δ/scale
                    orders=DEFAULT_ORDERS, # Rényi orders α > 1
                    noise:str="gauss", # 'gauss' or 'logistic'
                    offsets:str="unbounded", # 'unbounded' or 'symmetric' (every coordinate's pair is (F(-t_j/2), F(t_j/2)))
                    dim:int|None=None, # number of coordinates the sensitivity may spread over (None: any number)
                    n_grid:int=2001) -> np.ndarray:
    "Per-release RDP of the sign vector with ℓ2 sensitivity μ: sup over even spreads k·h_α(μ/√k), k ≤ dim (and the k → ∞ limit when dim is None)."
    mu = _positive(mu, 'mu'); a_ord = _orders(orders); noise = _noise(noise)
    if offsets not in SIGN_OFFSETS: raise ConfigError(f"parameter 'offsets': {offsets!r} is not allowed; choose one of {list(SIGN_OFFSETS)}")
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1):
        raise ConfigError(f"parameter 'dim': expected an int >= 1 or None, got {dim!r}")
    if noise == "gauss" and offsets == "unbounded":          # one coordinate is the worst case (r_α increases in t)
        return sign_rdp(mu, a_ord, noise, None, n_grid)
    out = np.zeros(a_ord.shape)
    for k in _spread_ks(dim):
        t = mu / math.sqrt(k)
        out = np.maximum(out, k * sign_rdp(t, a_ord, noise, None if offsets == "unbounded" else t / 2, n_grid))
    if dim is None: out = np.maximum(out, sign_fisher_ratio(noise) * a_ord * mu ** 2 / 2)
    return out

def logistic_pure_epsilon(noise_multiplier:float, # s/Δ, Δ the ℓ2 sensitivity
                          steps:int, # releases
                          dim:int=1, # coordinates of the released vector
                          ) -> float:
    "Pure-DP ε of `steps` releases of the d-vector sign(g + Logistic(0, s)) by basic composition: √d·T·Δ/s (ℓ1 ≤ √d·ℓ2)."
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1: raise ConfigError(f"parameter 'dim': expected an int >= 1, got {dim!r}")
    return math.sqrt(int(dim)) * _steps(steps) / check_noise_multiplier(noise_multiplier)


# %% [markdown]
# The facts behind it: r_α increases in t for Gaussian noise with unconstrained offsets and decreases in t
# (staying below c) for logistic noise and for bounded offsets; random splits never beat the bound; the
# logistic vector bound tends to the Gaussian mechanism with σ = 2s.

# %%
_ts = np.linspace(0.02, 2.0, 25)
_R = np.stack([sign_rdp(t, _ords) / gaussian_rdp(_ords, t) for t in _ts])     # [t, order]
assert np.all(np.diff(_R, axis=0) > -1e-6), "ratio not increasing in t"
test_close([k * sign_rdp(1 / np.sqrt(k), [8.])[0] for k in (1, 2, 4, 16)], [3.72, 3.54, 3.26, 2.72], eps=0.01)
_tsl = np.geomspace(1e-3, 20, 40)
_RL = np.stack([sign_rdp(t, _ords, 'logistic') / gaussian_rdp(_ords, t) for t in _tsl])
_RS = np.stack([sign_rdp(t, _ords, 'gauss', bound=t / 2) / gaussian_rdp(_ords, t) for t in _tsl])
assert np.all(np.diff(_RL, axis=0) < 1e-9) and _RL.max() <= 0.25 + 1e-9, "logistic ratio not decreasing / above 1/4"
assert np.all(np.diff(_RS, axis=0) < 1e-9) and _RS.max() <= 2 / np.pi + 1e-9, "symmetric-pair ratio not decreasing / above 2/π"
test_close([sign_rdp(t, [2.], 'logistic')[0] / gaussian_rdp([2.], t)[0] for t in (0.01, 0.25, 1, 2)], [0.25, 0.2494, 0.2402, 0.2169], eps=2e-4)
_rng = np.random.default_rng(0)
for _ in range(5):                                   # random splits of μ = 1 over 6 coordinates
    _v = np.abs(_rng.normal(size=6)); _v /= np.linalg.norm(_v)
    assert sum(sign_rdp(tj, [8.])[0] for tj in _v) <= sign_vector_rdp(1.0, [8.])[0] + 1e-9
    assert sum(sign_rdp(tj, [8.], 'logistic')[0] for tj in _v) <= sign_vector_rdp(1.0, [8.], 'logistic', dim=6)[0] + 1e-9
test_close(sign_vector_rdp(1.0, _ords), sign_rdp(1.0, _ords), eps=1e-12)            # Gaussian: one coordinate
test_close(sign_vector_rdp(1.0, _ords, 'logistic', dim=1), sign_rdp(1.0, _ords, 'logistic'), eps=1e-12)
assert np.all(sign_vector_rdp(1.0, _ords, 'logistic', dim=16) > sign_rdp(1.0, _ords, 'logistic'))
test_close(sign_vector_rdp(1.0, _ords, 'logistic'), gaussian_rdp(_ords, 0.5), eps=1e-9)   # → Gaussian with σ = 2s
test_close(logistic_pure_epsilon(0.5, 10, 650), math.sqrt(650) * 20, eps=1e-9)
test_fail(lambda: sign_vector_rdp(1.0, dim=0), contains="'dim'")


# %% [markdown]
# ### One release, worst case over offsets: exactly the Gaussian mechanism
#
# Fact (1): for a single release with an unconstrained offset, the hockey-stick divergence
# sup_a δ_{P_a,Q_a}(ε) equals the Gaussian mechanism's δ(ε), attained at a = −(ε/μ + μ/2). In f-DP
# terms: the trade-off curve of the pair at offset a is piecewise linear with its kink at
# (Φ(a), Φ(−a − t)), a point **on** G_t, so the infimum over offsets is G_t itself. The sign buys nothing
# for one release against an adversary who can place the gradient anywhere; the gain appears under
# composition (RDP) or with bounded offsets.

# %%
#| export
def bernoulli_hockey_stick(p, q, eps:float) -> np.ndarray:
    "max(δ(Q‖P), δ(P‖Q)) at ε for the Bernoulli pair P = Ber(p), Q = Ber(q): δ(Q‖P) = Σ_x max(0, Q(x) − e^ε P(x))."
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float); e = math.exp(eps)
    d1 = np.maximum(0, q - e * p) + np.maximum(0, (1 - q) - e * (1 - p))
    d2 = np.maximum(0, p - e * q) + np.maximum(0, (1 - p) - e * (1 - q))
    return np.maximum(d1, d2)

def sign_hockey_stick(eps:float, # ε >= 0
                      t:float, # shift in noise units, Δ/scale
                      noise:str="gauss", bound:float|None=None, n_grid:int=4001) -> float:
    "δ(ε) of one sign release, worst case over offsets (sup_a of the Bernoulli pair's hockey-stick divergence)."
    t = _positive(t, 't'); noise = _noise(noise)
    if eps < 0: raise ConfigError(f"parameter 'eps': must be >= 0, got {eps!r}")
    F = (lambda z: ndtr(z)) if noise == "gauss" else (lambda z: expit(z))
    lo, hi = _offset_range(t, bound, reach=max(20.0, 2 * (eps / t + t)) + 10.0)
    f = lambda a: bernoulli_hockey_stick(F(a), F(a + t), eps)
    if hi - lo < 1e-12: return float(f(np.array(lo)))
    x = np.linspace(lo, hi, int(n_grid)); v = f(x); i = int(v.argmax())
    ref = _golden_max(f, [x[max(i - 1, 0)]], [x[min(i + 1, len(x) - 1)]])[0]
    return float(max(v[i], ref))

def bernoulli_tradeoff(alpha, # type-I error(s) in [0, 1]
                       p:float, q:float, # P = Ber(p) (null), Q = Ber(q) (alternative)
                       ) -> np.ndarray:
    "Trade-off function T(P, Q)(α): smallest type-II error of a level-α test of P against Q (Neyman–Pearson, randomised)."
    a = np.clip(np.asarray(alpha, dtype=float), 0, 1)
    p, q = float(p), float(q)
    if not (0 <= p <= 1 and 0 <= q <= 1): raise ConfigError(f"p and q must be probabilities, got p={p}, q={q}")
    if q < p: p, q = 1 - p, 1 - q        # relabel outcomes so that '+' has the larger likelihood ratio q/p
    if p <= 0: power = q + (1 - q) * a   # '+' is free: reject on it always, then on '-' with probability α
    elif p >= 1: power = a               # p = q = 1: the two distributions are equal
    else: power = np.where(a <= p, q * a / p, q + (1 - q) * (a - p) / (1 - p))
    return np.clip(1 - power, 0, 1)


# %%
_t0 = time.time()
for _e_, _ref in zip((0.5, 1.0, 2.0), (0.238422, 0.126937, 0.020924)):
    test_close(sign_hockey_stick(_e_, 1.0), _ref, eps=1e-6)
    test_close(sign_hockey_stick(_e_, 1.0), gaussian_delta(_e_, 1.0), eps=1e-8)
# bounded offsets (the symmetric pair) are strictly more private than the Gaussian mechanism
assert sign_hockey_stick(0.5, 1.0, bound=0.5) < gaussian_delta(0.5, 1.0) - 0.05
# f-DP: every pair's curve lies above G_t and touches it at α = Φ(a)
_al = np.linspace(0, 1, 201)
for _aa in (-2.0, -0.5, 0.0, 1.3):
    _T = bernoulli_tradeoff(_al, ndtr(_aa), ndtr(_aa + 1.0))
    assert np.all(_T >= gaussian_tradeoff(_al, 1.0) - 1e-12)
    test_close(bernoulli_tradeoff(ndtr(_aa), ndtr(_aa), ndtr(_aa + 1.0)), gaussian_tradeoff(ndtr(_aa), 1.0), eps=1e-12)
test_close(bernoulli_tradeoff([0, 1], 0.3, 0.6), [1, 0], eps=1e-12)
print(f"{time.time() - _t0:.2f} s")


# %% [markdown]
# ### Logistic noise: pure DP
#
# Fact (4): sign(g + Logistic(0, s)) is +1 with probability sigmoid(g/s). Because log-sigmoid is
# 1-Lipschitz, every log-likelihood ratio is at most t = Δ/s in absolute value, and the supremum (as
# a → −∞) equals t: the release is **pure** (Δ/s)-DP per coordinate (for a shift spread over coordinates,
# the ℓ₁ norm of Δg over s). With Gaussian noise and an unconstrained offset the log-ratio is unbounded
# (no pure DP); with bounded offsets it is finite.

# %%
#| export
def sign_pure_epsilon(t:float, # shift in noise units
                      noise:str="gauss", bound:float|None=None, n_grid:int=20001) -> float:
    "Pure-DP ε of one sign release: sup over offsets of the absolute log-likelihood ratio (inf when unbounded)."
    t = _positive(t, 't'); lf = _logF(noise)
    if noise == "gauss" and bound is None: return math.inf
    lo, hi = _offset_range(t, bound, reach=60.0)
    x = np.linspace(lo, hi, int(n_grid)) if hi - lo > 1e-12 else np.array([lo])
    lp, l1p, lq, l1q = _pair_logs(x, t, lf)
    return float(np.max(np.maximum(np.abs(lq - lp), np.abs(l1q - l1p))))


# %%
for _t in (0.1, 0.5, 2.0):
    test_close(sign_pure_epsilon(_t, 'logistic'), _t, eps=1e-9)
test_eq(sign_pure_epsilon(0.5), math.inf)
test_close(sign_pure_epsilon(1.0, bound=0.5), math.log(ndtr(0.5) / ndtr(-0.5)), eps=1e-9)   # randomized response
sign_pure_epsilon(1.0, bound=0.5)


# %% [markdown]
# ### Composed ε of the sign mechanism
#
# `sign_epsilon` gives the (ε, δ) guarantee of `steps` releases of the sign **vector** (full
# participation) whose ℓ₂ sensitivity may spread over up to `dim` coordinates (`dim=None`: any number), by
# `sign_vector_rdp` composed additively and converted by `rdp_to_dp`:
#
# - `offsets='unbounded'` (default): the offset of every coordinate unconstrained. This is what Noisy
#   SignSGD with summed, clipped gradients gets.
# - `offsets='symmetric'`: the bounded case at its extreme, the pair (F(−t_j/2), F(t_j/2)) — a coordinate
#   that lives in [−Δ_j/2, Δ_j/2] and moves across the whole range.
# - `method='pld'` composes **one coordinate's** symmetric pair exactly with dp-accounting's PLD (a single
#   pair, so the PLD is tight); it is a scalar result and needs `dim=1`.
#
# For the unbounded case there is no single dominating pair (the worst offset depends on ε), so PLD is
# not offered there.

# %%
#| export
def pld_pair_epsilon(log_pmf_lower:dict, log_pmf_upper:dict, # log-pmfs of the two neighbouring output distributions
                     steps:int, delta:float, discretization:float=1e-4) -> float:
    "ε of `steps` compositions of one pair of discrete distributions, by dp-accounting's PLD (pessimistic, both directions)."
    pld = require('dp_accounting.pld.privacy_loss_distribution', 'PLD accounting')
    p = pld.from_two_probability_mass_functions(dict(log_pmf_lower), dict(log_pmf_upper),
                                                value_discretization_interval=_positive(discretization, 'discretization'))
    return float(p.self_compose(_steps(steps)).get_epsilon_for_delta(check_delta(delta)))

def sign_pair_pld_epsilon(t:float, steps:int, delta:float, noise:str="gauss",
                          offset:float|None=None, # a; default -t/2 (the symmetric pair)
                          discretization:float=1e-4) -> float:
    "ε of `steps` releases of the sign pair (F(a), F(a + t)), composed exactly with PLD."
    t = _positive(t, 't'); lf = _logF(noise); a = -t / 2 if offset is None else float(offset)
    lp, l1p, lq, l1q = (float(v) for v in _pair_logs(np.array(a), t, lf))
    return pld_pair_epsilon({'+': lp, '-': l1p}, {'+': lq, '-': l1q}, steps, delta, discretization)

def sign_epsilon(noise_multiplier:float, # noise scale over sensitivity: σ/Δ (Gaussian) or s/Δ (logistic)
                 steps:int, # releases (rounds), full participation
                 delta:float, # target δ
                 noise:str="gauss", # 'gauss' or 'logistic'
                 offsets:str="unbounded", # 'unbounded' or 'symmetric'
                 method:str="rdp", # 'rdp' (any offsets) or 'pld' (symmetric, one coordinate: dim=1)
                 orders=DEFAULT_ORDERS, n_grid:int=2001, discretization:float=1e-4,
                 dim:int|None=None, # coordinates the ℓ2 sensitivity may spread over (None: any number)
                 ) -> float:
    "ε(δ) of `steps` releases of the sign vector sign(g + noise) with ℓ2 sensitivity Δ and the given noise multiplier."
    t = 1 / check_noise_multiplier(noise_multiplier); T = _steps(steps); delta = check_delta(delta)
    if offsets not in SIGN_OFFSETS: raise ConfigError(f"parameter 'offsets': {offsets!r} is not allowed; choose one of {list(SIGN_OFFSETS)}")
    if method not in ("rdp", "pld"): raise ConfigError(f"parameter 'method': {method!r} is not allowed; choose one of ['rdp', 'pld']")
    if method == "pld":
        if offsets != "symmetric": raise ConfigError("method 'pld' needs offsets='symmetric' (a single pair); use method='rdp' for unbounded offsets")
        if dim != 1: raise ConfigError("method 'pld' composes one coordinate's pair: pass dim=1 (a scalar release), or use method='rdp' for vectors")
        return sign_pair_pld_epsilon(t, T, delta, noise, discretization=discretization)
    return rdp_to_dp(T * sign_vector_rdp(t, orders, noise, offsets, dim, n_grid), orders, delta)[0]

def logistic_scale_for_variance(sigma:float) -> float:
    "Logistic scale s with the variance of N(0, σ²): s²π²/3 = σ², s = σ√3/π."
    return _positive(sigma, 'sigma') * math.sqrt(3) / math.pi


# %% [markdown]
# Reference values (δ = 1e-5, σ/Δ = 2, T = 100). For **one coordinate** carrying the sensitivity
# (`dim=1`): Gaussian without sign 35.13, sign + Gaussian unconstrained 26.19, symmetric bounded pair
# 24.62, sign + logistic at equal variance 30.02. For a vector (`dim=None`), sign + Gaussian unconstrained
# is unchanged (one coordinate is its worst case), while the symmetric pair and logistic noise rise to
# their spread limits. Fact (5): PLD ε ≤ RDP-converted ε, for the Gaussian mechanism (σ = 1, 100 steps:
# 91.8 ≤ 96.1) and for the symmetric sign pair of one coordinate (t = 1: 59.6 ≤ 62.4).

# %%
_t0 = time.time()
_ref = dict(gauss=35.13, sign=26.19, sym=24.62, logistic=30.02)
_ours = dict(gauss=rdp_to_dp(100 * gaussian_rdp(DEFAULT_ORDERS, 0.5), DEFAULT_ORDERS, 1e-5)[0],
             sign=sign_epsilon(2.0, 100, 1e-5, dim=1),
             sym=sign_epsilon(2.0, 100, 1e-5, offsets='symmetric', dim=1),
             logistic=sign_epsilon(logistic_scale_for_variance(2.0), 100, 1e-5, noise='logistic', dim=1))
for k in _ref: test_close(_ours[k], _ref[k], eps=0.01 * _ref[k])
_vec = dict(sign=sign_epsilon(2.0, 100, 1e-5), sym=sign_epsilon(2.0, 100, 1e-5, offsets='symmetric'),
            logistic=sign_epsilon(logistic_scale_for_variance(2.0), 100, 1e-5, noise='logistic'))
test_close(_vec['sign'], _ours['sign'], eps=1e-9); assert _vec['sym'] > _ours['sym'] and _vec['logistic'] > _ours['logistic']
_pg, _rg = pld_gaussian_epsilon(1.0, 100, 1e-5), rdp_to_dp(100 * gaussian_rdp(DEFAULT_ORDERS, 1.0), DEFAULT_ORDERS, 1e-5)[0]
_ps, _rs = sign_epsilon(1.0, 100, 1e-5, offsets='symmetric', method='pld', dim=1), sign_epsilon(1.0, 100, 1e-5, offsets='symmetric', dim=1)
test_close((_pg, _rg, _ps, _rs), (91.8, 96.1, 59.6, 62.4), eps=0.1)
assert _pg <= _rg and _ps <= _rs
test_fail(lambda: sign_epsilon(2.0, 100, 1e-5, method='pld'), contains="needs offsets='symmetric'")
test_fail(lambda: sign_epsilon(2.0, 100, 1e-5, offsets='symmetric', method='pld'), contains="dim=1")
test_fail(lambda: sign_epsilon(-2.0, 100, 1e-5), contains="noise_multiplier")
test_fail(lambda: sign_epsilon(2.0, 100, 0.0), contains="'delta'")
test_fail(lambda: sign_rdp(1.0, bound=0.2), contains="exceeds the offset range")
print(f"{time.time() - _t0:.1f} s"); {f"{k} (one coordinate)": round(v, 2) for k, v in _ours.items()} | {f"{k} (vector)": round(v, 2) for k, v in _vec.items()} | dict(pld_gauss=round(_pg, 2), rdp_gauss=round(_rg, 2), pld_sym=round(_ps, 2), rdp_sym=round(_rs, 2))


# %% [markdown]
# ### The vector bound against explicit neighbouring pairs
#
# An explicit d-dimensional instance: every coordinate shifts by t = μ/√d from the same offset a, T
# releases. The T·d coordinate releases are i.i.d. Bernoulli pairs, so the number of +1s is a sufficient
# statistic and the exact privacy profile is that of Bin(T·d, F(a)) vs Bin(T·d, F(a + t)), computed here
# directly. The exact ε of every such instance must stay below `sign_epsilon`'s bound for that `dim` (and
# below the `dim=None` bound). With logistic noise, s/Δ = 0.551, T = 10: 15.4 with 16 coordinates and 15.7
# with 650, above the one-coordinate value 14.37; s/Δ = 0.276: 40.1 (650 coordinates) against 31.6.

# %%
def _binomial_pair_epsilon(p, q, n, delta):
    "Exact ε(δ) of Bin(n, p) vs Bin(n, q), both directions (independent of the accountant above)."
    from scipy.stats import binom
    from scipy.optimize import brentq
    k = np.arange(n + 1); lP, lQ = binom.logpmf(k, n, p), binom.logpmf(k, n, q)
    def d(e):
        with np.errstate(over='ignore'):
            return max(np.sum(np.exp(lQ) * np.clip(-np.expm1(e + lP - lQ), 0, None)), np.sum(np.exp(lP) * np.clip(-np.expm1(e + lQ - lP), 0, None)))
    return brentq(lambda e: d(e) - delta, 0, 500, xtol=1e-6)

_t0 = time.time(); _rows = []
for _s, _T, _d in ((0.551, 10, 16), (0.551, 10, 650), (0.276, 10, 16), (0.276, 10, 650)):
    _t = 1 / (_s * math.sqrt(_d))
    _exact = max(_binomial_pair_epsilon(expit(_aa), expit(_aa + _t), _T * _d, 1e-5) for _aa in (-_t / 2, 0.0, -0.5, -1.0))
    _bd, _bn = sign_epsilon(_s, _T, 1e-5, noise='logistic', dim=_d), sign_epsilon(_s, _T, 1e-5, noise='logistic')
    assert _exact <= _bd <= _bn + 1e-9, (_s, _d, _exact, _bd, _bn)
    _rows.append((_s, _d, round(_exact, 2), round(_bd, 2), round(_bn, 2), round(sign_epsilon(_s, _T, 1e-5, noise='logistic', dim=1), 2)))
assert _rows[1][2] > 15.7 and _rows[3][2] > 40.0 and _rows[1][2] > _rows[1][5]   # the one-coordinate value is exceeded
# Gaussian noise: the vector instances stay below the one-coordinate bound
for _d in (1, 16, 650):
    _t = 0.5 / math.sqrt(_d)
    assert max(_binomial_pair_epsilon(ndtr(_aa), ndtr(_aa + _t), 10 * _d, 1e-5) for _aa in (-_t / 2, 0.0, -1.0)) <= sign_epsilon(2.0, 10, 1e-5)
print(f"{time.time() - _t0:.1f} s"); [dict(zip(("s/Δ", "dim", "exact instance", "bound dim", "bound any dim", "one coordinate"), r)) for r in _rows]

# %% [markdown]
# For PTA, the accountant call of its baseline's code (Poisson-subsampled Gaussian, prv-accountant,
# `eps_error = 0.01`, `delta_error = 1e-10`, the estimate): PTA's GINC setting σ = 0.70, q = 0.0125,
# 40 compositions, δ = 1/1600 gives ε ≈ 1.03.

# %%
test_close(prv_gaussian_epsilon(0.70, 40, 1 / 1600, 0.0125), 1.03, eps=0.02)
