# %% [markdown]
# # results — what an experiment returns, and how it is recorded
#
# > What an experiment returns (`Result`, `Verdict`), how its claims are graded (`judge`, `Rule`), and how it is recorded, atomically.

# %% [markdown]
# A paper's `run(cfg)` returns a `Result`: scalar metrics, tables, figures, and the "paper vs. us"
# verdicts as data. Each verdict is graded by an explicit rule (`judge`, `Rule`), with confidence
# intervals over seeds where the claim is about an average (`mean_ci`, `bootstrap_ci`).
# `run_experiment` runs an experiment, times it and records it; `record` writes a result into the run
# directory that `trustlib.runs` prepared.

# %%
#| default_exp results

# %%
#| export
from __future__ import annotations
import json, math, os, sys, tempfile, time
from dataclasses import dataclass, field, asdict
from pathlib import Path
from typing import Any, Callable
import numpy as np

# %%
#| hide
from fastcore.test import test_eq, test_fail, test_close


# %% [markdown]
# ## Atomic writes
#
# Every result file is written to a temporary file in the same directory, flushed to disk, then renamed
# over the target (`os.replace` is atomic on POSIX and Windows). A crash, a kill or a full disk leaves the
# old file or the new one, never a torn one.

# %%
#| export
def _umask() -> int:
    m = os.umask(0); os.umask(m); return m

def atomic_write_bytes(path:str|Path, data:bytes):
    "Write `data` to `path` atomically (temp file in the same folder, fsync, rename)."
    path = Path(path); path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())   # mkstemp creates 0600; results are ordinary files
        with os.fdopen(fd, 'wb') as f:
            f.write(data); f.flush(); os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try: os.unlink(tmp)
        except FileNotFoundError: pass
        raise

def atomic_write_text(path:str|Path, text:str): atomic_write_bytes(path, text.encode('utf-8'))

def to_jsonable(x):
    "Convert numpy/pandas/dataclass values into plain JSON types (NaN and inf become None)."
    if hasattr(x, '__dataclass_fields__'): return to_jsonable(asdict(x))
    if isinstance(x, dict): return {str(k): to_jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, set)): return [to_jsonable(v) for v in x]
    if isinstance(x, np.ndarray): return to_jsonable(x.tolist())
    if isinstance(x, (np.bool_, bool)): return bool(x)
    if isinstance(x, (np.integer,)): return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x); return x if math.isfinite(x) else None
    if isinstance(x, Path): return str(x)
    if hasattr(x, 'to_dict') and hasattr(x, 'columns'): return to_jsonable(x.to_dict(orient='records'))
    return x

def write_json(path:str|Path, obj): atomic_write_text(path, json.dumps(to_jsonable(obj), indent=2, sort_keys=False) + "\n")


# %%
import tempfile as _tf

# %%
_d = Path(_tf.mkdtemp())
write_json(_d/'a.json', dict(x=np.float32(0.5), n=np.int64(3), bad=float('nan'), arr=np.arange(3)))
test_eq(json.loads((_d/'a.json').read_text()), dict(x=0.5, n=3, bad=None, arr=[0, 1, 2]))
test_eq([p.name for p in _d.iterdir()], ['a.json'])   # no temp files left behind
test_eq(oct((_d/'a.json').stat().st_mode & 0o777), oct(0o666 & ~_umask()))   # ordinary permissions

# %% [markdown]
#

# %% [markdown]
# ## Verdicts
#
# Each paper notebook ends with "Paper vs. us": one `Verdict` per claim. The verdict is data (the results
# dashboard is built from these records) and is one of six words:
#
# | verdict | meaning |
# |---|---|
# | `reproduced` | our number clears the claim's `reproduced` threshold |
# | `partially` | it clears only the weaker `partially` threshold |
# | `not_reproduced` | it clears neither, or the effect goes the other way |
# | `inconclusive` | the data cannot tell at this scale (the interval over seeds straddles the weakest threshold, or there is one seed only) |
# | `illustrated` | a phenomenon is shown, not a claim tested (no threshold) |
# | `not_testable_offline` | the claim needs what an offline CPU run does not have (data, models, scale) |
#
# `rule` holds the rule's text, so a reader sees what was tested; `headline` marks the one claim per paper
# that is its main finding (the dashboard shows it first). Verdicts are normally built with `judge` (below),
# not by hand.

# %%
#| export
VERDICTS = ("reproduced", "partially", "not_reproduced", "inconclusive", "illustrated", "not_testable_offline")

@dataclass
class Verdict:
    claim: str   # the paper's claim, in one sentence
    paper: str   # the paper's number(s) for it
    ours: str    # our number(s), at the profile that was run
    verdict: str # one of VERDICTS
    reason: str  # why: scale, substitutions, what the numbers show
    rule: str = ""          # the explicit rule that produced the verdict ('' for ungraded claims)
    headline: bool = False  # True for the paper's one headline claim
    id: str = ""            # the claim's id in its paper's claims table
    claim_hash: str = ""    # the claim's content hash (rule, conditions, status) when it was graded
    conditions: str = ""    # the claim's conditions in words ('' if none)
    condition_met: bool|None = None  # whether the conditions held (None: no conditions, or not graded)
    changes: list = field(default_factory=list)  # the claim's change log: dicts with date, old, new, why
    def __post_init__(self):
        if self.verdict not in VERDICTS: raise ValueError(f"verdict {self.verdict!r} is not allowed; choose one of {list(VERDICTS)}")
        for k in ('claim', 'paper', 'ours', 'reason', 'rule', 'id', 'claim_hash', 'conditions'):
            if not isinstance(getattr(self, k), str): raise TypeError(f"Verdict.{k} must be a string")
        if not isinstance(self.headline, (bool, np.bool_)): raise TypeError("Verdict.headline must be True or False")
        self.headline = bool(self.headline)


# %%
test_fail(lambda: Verdict("c", "1", "2", "yes", "r"), contains="choose one of")
test_fail(lambda: Verdict("c", "1", "2", "reproduced", "r", rule=0.5), contains="Verdict.rule must be a string")
test_fail(lambda: Verdict("c", "1", "2", "reproduced", "r", headline="yes"), contains="headline")
_v = Verdict("ensembles are better calibrated", "ECE 0.091 -> 0.046", "ECE 0.05 -> 0.03", "reproduced", "same direction")
test_eq((_v.rule, _v.headline), ("", False))   # old positional calls keep working
test_eq(Verdict("c", "p", "o", "inconclusive", "r", "rule text", np.bool_(True)).headline, True)
_v


# %% [markdown]
# ## Estimates over seeds
#
# A claim about an average ("the gap is positive") is tested on the interval, not on the mean alone: with
# five seeds a mean of 0.02 and a spread of 0.05 says nothing about the sign. `mean_ci` gives the Student-t
# interval of the mean over seeds; `bootstrap_ci` a seeded percentile bootstrap for any statistic. With a
# single seed there is no interval (`lo` and `hi` are NaN), and a rule graded on it says `inconclusive`.

# %%
#| export
@dataclass(frozen=True)
class Estimate:
    value: float   # the point estimate (e.g. the mean over seeds)
    lo: float      # lower end of the interval (NaN: no interval)
    hi: float      # upper end of the interval (NaN: no interval)
    n: int         # number of observations (seeds)
    level: float = 0.95  # coverage of the interval
    def __post_init__(self):
        for k in ('value', 'lo', 'hi', 'level'): object.__setattr__(self, k, float(getattr(self, k)))
        object.__setattr__(self, 'n', int(self.n))
        if self.lo > self.hi: raise ValueError(f"Estimate: lo {self.lo} > hi {self.hi}")
        if not 0 < self.level < 1: raise ValueError(f"Estimate: level must be in (0, 1), got {self.level}")
    @property
    def has_interval(self) -> bool: return math.isfinite(self.lo) and math.isfinite(self.hi)
    def __str__(self):
        if not self.has_interval: return f"{self.value:.3g} (n = {self.n}, no interval)"
        lv = f"{self.level:.1%}".replace(".0%", "%")   # 95%, but 97.5% or 98.3% for Bonferroni-adjusted levels
        return f"{self.value:.3g} ({lv} CI {self.lo:.3g} to {self.hi:.3g}, n = {self.n})"
    def __format__(self, spec:str) -> str:
        "Compact form for tables and claim texts: `f'{e:+.3f}'` gives '+0.120 [+0.050, +0.190]' (no spec: `str(e)`)."
        if not spec: return str(self)
        if not self.has_interval: return f"{format(self.value, spec)} (n = {self.n}, no interval)"
        return f"{format(self.value, spec)} [{format(self.lo, spec)}, {format(self.hi, spec)}]"

def _sample(x) -> np.ndarray:
    x = np.asarray(x, dtype=float).ravel()
    if x.size == 0: raise ValueError("an estimate needs at least one observation")
    return x

def mean_ci_from_moments(mean:float, sd:float, n:int, level:float=0.95) -> Estimate:
    "The Student-t interval of a mean from its sample mean, sample sd (ddof=1) and size; no interval for n < 2 or a NaN sd."
    from scipy import stats
    mean, sd, n = float(mean), float(sd), int(n)
    if n < 2 or not math.isfinite(sd): return Estimate(mean, math.nan, math.nan, n, level)
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    return Estimate(mean, mean - half, mean + half, n, level)

def mean_ci(x, level:float=0.95) -> Estimate:
    "Mean of `x` (one value per seed) with its Student-t confidence interval; n = 1 gives lo = hi = NaN."
    x = _sample(x)
    return mean_ci_from_moments(x.mean(), x.std(ddof=1) if len(x) > 1 else math.nan, len(x), level)

def bootstrap_ci(x, stat:Callable=np.mean, level:float=0.95, n_boot:int=2000, seed:int=0, method:str="percentile") -> Estimate:
    """`stat(x)` with a seeded bootstrap interval over `n_boot` resamples, computed by `scipy.stats.bootstrap`
    (`method`: 'percentile', 'basic' or 'BCa'); n = 1 gives lo = hi = NaN."""
    from scipy import stats
    x = _sample(x); n = len(x); v = float(stat(x))
    if n == 1: return Estimate(v, math.nan, math.nan, 1, level)
    r = stats.bootstrap((x,), lambda a, axis=-1: np.apply_along_axis(lambda row: float(stat(row)), axis, a), n_resamples=int(n_boot),
                        confidence_level=level, method=method, vectorized=True, random_state=np.random.default_rng(seed))
    lo, hi = float(r.confidence_interval.low), float(r.confidence_interval.high)
    if not (math.isfinite(lo) and math.isfinite(hi)): return Estimate(v, math.nan, math.nan, n, level)   # a degenerate resample distribution
    return Estimate(v, min(lo, v), max(hi, v), n, level)

def median_ci(x, level:float=0.95) -> Estimate:
    """Median of `x` with a distribution-free interval: the order statistics x_(j), x_(n+1-j) for the largest j whose coverage
    1 - 2·P(Binomial(n, 1/2) < j) is at least `level` (no interval when even [min, max] covers less: n < 6 at 95 %).
    For timings: one slow repeat cannot move it, unlike a t-interval."""
    from scipy import stats
    x = np.sort(_sample(x)); n = len(x); v = float(np.median(x))
    j = int(stats.binom.ppf((1 - level) / 2, n, 0.5))           # P(B <= j - 1) <= (1 - level)/2 for this j, at least
    while j >= 1 and 2 * stats.binom.cdf(j - 1, n, 0.5) > 1 - level: j -= 1
    if j < 1: return Estimate(v, math.nan, math.nan, n, level)
    return Estimate(v, float(x[j - 1]), float(x[n - j]), n, level)

def correlation_ci(x, y, method:str="spearman", level:float=0.95) -> Estimate:
    "Pearson's or Spearman's correlation of x and y with a Fisher-z interval (Spearman: the Bonett–Wright standard error √((1 + ρ²/2)/(n − 3))); no interval for n < 4."
    from scipy import stats
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if method not in ("spearman", "pearson"): raise ValueError(f"method must be 'spearman' or 'pearson', got {method!r}")
    n = len(x)
    if n != len(y): raise ValueError(f"x and y must have the same length, got {n} and {len(y)}")
    if n < 3: return Estimate(math.nan, math.nan, math.nan, n, level)
    r = float((stats.spearmanr if method == "spearman" else stats.pearsonr)(x, y)[0])
    if n < 4 or not math.isfinite(r): return Estimate(r, math.nan, math.nan, n, level)
    se = math.sqrt((1 + r * r / 2) / (n - 3)) if method == "spearman" else 1 / math.sqrt(n - 3)
    return fisher_z_ci(r, se, n, level)

def fisher_z_ci(r:float, se:float, n:int, level:float=0.95) -> Estimate:
    "A correlation `r` with the interval tanh(atanh(r) ± z·se), `se` the standard error of atanh(r) (1/√(n − 3) for Pearson; n − k − 3 for a partial correlation on k covariates)."
    from scipy import stats
    z, half = math.atanh(min(max(r, -1 + 1e-12), 1 - 1e-12)), float(stats.norm.ppf(0.5 + level / 2)) * se
    return Estimate(r, math.tanh(z - half), math.tanh(z + half), n, level)


# %%
import scipy.stats

# %%
_x = np.array([0.12, 0.05, 0.20, 0.08, 0.15])
_e = mean_ci(_x)
_lo, _hi = scipy.stats.t.interval(0.95, len(_x) - 1, loc=_x.mean(), scale=scipy.stats.sem(_x))
test_close(_e.value, _x.mean()); test_close(_e.lo, _lo, eps=1e-12); test_close(_e.hi, _hi, eps=1e-12); test_eq(_e.n, 5)
_e90 = mean_ci(_x, level=0.9)
test_close(_e90.lo, scipy.stats.t.interval(0.9, 4, loc=_x.mean(), scale=scipy.stats.sem(_x))[0], eps=1e-12)
assert _e.lo < _e90.lo < _e.value < _e90.hi < _e.hi    # a wider level gives a wider interval
_one = mean_ci([0.3])
test_eq((_one.value, _one.n, _one.has_interval), (0.3, 1, False)); assert math.isnan(_one.lo) and math.isnan(_one.hi)
test_eq(mean_ci([2., 2., 2.]), Estimate(2., 2., 2., 3))     # no spread: a point interval
test_fail(lambda: mean_ci([]), contains="at least one")
test_fail(lambda: Estimate(0., 1., -1., 3), contains="lo 1.0 > hi")
test_eq(mean_ci_from_moments(_x.mean(), _x.std(ddof=1), 5), _e)     # the same interval from summary statistics
assert not mean_ci_from_moments(0.2, math.nan, 9).has_interval and not mean_ci_from_moments(0.2, 0.1, 1).has_interval
test_eq(f"{Estimate(0.12, 0.05, 0.19, 5):+.3f}", "+0.120 [+0.050, +0.190]")
test_eq(f"{_one:.2f}", "0.30 (n = 1, no interval)"); test_eq(f"{_e}", str(_e))
_b = bootstrap_ci(_x)
test_eq(_b, bootstrap_ci(_x))                                 # seeded: the same interval every time
assert _b.lo <= _b.value <= _b.hi
_y = np.random.default_rng(0).normal(1.0, 2.0, size=40)
assert bootstrap_ci(_y) != bootstrap_ci(_y, seed=1)            # the seed matters (5 points have too few distinct resamples to show it)
test_close(bootstrap_ci(_y).lo, mean_ci(_y).lo, eps=0.15); test_close(bootstrap_ci(_y).hi, mean_ci(_y).hi, eps=0.15)
assert _x.min() <= _b.lo and _b.hi <= _x.max()                # percentiles of resampled means stay within the data
test_close(_b.lo, _e.lo, eps=0.04); test_close(_b.hi, _e.hi, eps=0.04)
test_eq(bootstrap_ci(_x, stat=np.median).value, 0.12)
_r = scipy.stats.bootstrap((_x,), np.mean, n_resamples=2000, method="percentile", random_state=np.random.default_rng(0))
test_close(_b.lo, _r.confidence_interval.low, eps=1e-12); test_close(_b.hi, _r.confidence_interval.high, eps=1e-12)   # scipy's own bootstrap, same seed
assert not bootstrap_ci([1.0]).has_interval
# the median with an order-statistic interval: coverage 1 - 2 P(B < j) >= level, B ~ Binomial(n, 1/2)
test_eq(median_ci([3., 1., 2., 5., 4., 100., 6., 7., 8.]), Estimate(5., 2., 8., 9))      # n = 9: [x(2), x(8)], coverage 96.1 %
assert not median_ci([1., 2., 3., 4., 5.]).has_interval                                     # n = 5: [min, max] covers only 93.75 %
test_eq(median_ci([1., 2., 3., 4., 5.], level=0.9), Estimate(3., 1., 5., 5, 0.9))
test_eq(median_ci([2., 1., 4., 3., 6., 5.]), Estimate(3.5, 1., 6., 6))                      # n = 6: [min, max], 96.9 %
for _n in (6, 9, 20, 51):
    _m = median_ci(np.arange(_n, dtype=float)); _j = int(_m.lo) + 1
    assert 1 - 2 * scipy.stats.binom.cdf(_j - 1, _n, 0.5) >= 0.95 > 1 - 2 * scipy.stats.binom.cdf(_j, _n, 0.5)   # the narrowest that covers
_u = np.random.default_rng(1).normal(size=200); _v = _u + np.random.default_rng(2).normal(size=200)
_c = correlation_ci(_u, _v)
test_close(_c.value, scipy.stats.spearmanr(_u, _v)[0], eps=1e-12); assert _c.lo < _c.value < _c.hi and 0.5 < _c.value < 0.8
_cp = correlation_ci(_u, _v, "pearson")                       # Fisher z: tanh(atanh(r) ± 1.96/√(n − 3))
test_close(_cp.lo, math.tanh(math.atanh(_cp.value) - 1.959963984540054 / math.sqrt(197)), eps=1e-12)
assert not correlation_ci([1., 2., 3.], [1., 3., 2.]).has_interval; test_fail(lambda: correlation_ci([1.], [1., 2.]), contains="same length")
print(_e); print(_one); _b


# %% [markdown]
# ## Rules
#
# A `Rule` states, before the numbers are seen, what a claim needs: the `direction` in which the measured
# number supports the claim (`'>'`: larger is better for the claim, `'<'`: smaller), the threshold for
# `reproduced` and, optionally, a weaker one for `partially`. A value *clears* a threshold when it lies
# strictly beyond it in the claim's direction.
#
# - **A plain number** is reproduced if it clears `reproduced`, partially if it clears `partially`, and
#   not reproduced otherwise. NaN is inconclusive.
# - **An `Estimate`** (an interval over seeds) is graded by its whole interval: the verdict is the strongest
#   level whose threshold the entire interval clears. If the interval straddles the weakest threshold, the
#   verdict is `inconclusive` (the data cannot tell at this scale); if it lies entirely on the wrong side,
#   `not_reproduced`. When a result reaches `partially` but its interval straddles the `reproduced`
#   threshold, the note says it is *within noise of the reproduced threshold*, instead of a verdict that
#   would flip between machines or seeds. One seed (no interval) is inconclusive.
#
# Choose `partially` at or beyond the no-effect value (0 for a gap, 1 for a ratio): then an effect in the
# opposite direction of the claim, however significant, is `not_reproduced` and never `partially`.

# %%
#| export
def _f(x) -> str: return f"{x:.3g}"

@dataclass(frozen=True)
class Rule:
    direction: str                 # '>' larger values support the claim, '<' smaller values do
    reproduced: float              # threshold for `reproduced`
    partially: float|None = None   # weaker threshold for `partially` (None: no partial level)
    what: str = ""                 # name of the measured number, for the rule's text
    def __post_init__(self):
        if self.direction not in ('>', '<'): raise ValueError(f"Rule.direction must be '>' or '<', got {self.direction!r}")
        for k in ('reproduced', 'partially'):
            v = getattr(self, k)
            if v is None and k == 'partially': continue
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(v):
                raise ValueError(f"Rule.{k} must be a finite number, got {v!r}")
            object.__setattr__(self, k, float(v))
        if self.partially is not None and not self._beyond(self.reproduced, self.partially):
            raise ValueError(f"Rule.partially ({self.partially:g}) must be weaker than Rule.reproduced ({self.reproduced:g}): "
                             f"with direction {self.direction!r} it must be {'smaller' if self.direction == '>' else 'larger'}")
    def _beyond(self, x, t) -> bool:
        "x clears threshold t (strictly beyond it in the claim's direction)."
        return x > t if self.direction == '>' else x < t
    def levels(self) -> list[tuple[str, float]]:
        "(verdict, threshold), strongest first."
        return [('reproduced', self.reproduced)] + ([('partially', self.partially)] if self.partially is not None else [])
    def text(self, interval:bool=True) -> str:
        "The rule in words, e.g. 'reproduced if ρ > 0.5; partially if ρ > 0; interval must clear the threshold'."
        w = self.what or "the value"
        s = "; ".join(f"{v} if {w} {self.direction} {t:g}" for v, t in self.levels())
        return s + ("; interval must clear the threshold" if interval else "")
    def grade(self, x) -> tuple[str, str]:
        "(verdict, note) for a measured float or an `Estimate`, by the rule's thresholds."
        w = self.what or "the value"
        levels = self.levels(); weakest_v, weakest_t = levels[-1]
        if isinstance(x, Estimate): return self._grade_interval(x, w, levels)
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
            raise TypeError(f"Rule.grade takes a number or an Estimate, got {type(x).__name__}")
        x = float(x)
        if math.isnan(x): return 'inconclusive', f"{w} is NaN: nothing measured to grade"
        for v, t in levels:
            if self._beyond(x, t):
                extra = "" if v == 'reproduced' else f", not the reproduced threshold {self.reproduced:g}"
                return v, f"{w} = {_f(x)} clears the {v} threshold {t:g}{extra}"
        return 'not_reproduced', f"{w} = {_f(x)} does not clear the {weakest_v} threshold {weakest_t:g}"
    def _grade_interval(self, e:Estimate, w:str, levels) -> tuple[str, str]:
        weakest_v, weakest_t = levels[-1]
        if math.isnan(e.value) or not e.has_interval:
            return 'inconclusive', f"{w} = {_f(e.value)} from n = {e.n}: no interval, so it cannot be told from noise"
        iv = f"interval {_f(e.lo)}…{_f(e.hi)}"
        near, far = (e.lo, e.hi) if self.direction == '>' else (e.hi, e.lo)   # the end nearest to failing / to succeeding
        for i, (v, t) in enumerate(levels):
            if self._beyond(near, t):
                note = f"{w} = {_f(e.value)}, {e.level:.0%} {iv} clears the {v} threshold {t:g}"
                if i > 0:
                    note += (f"; within noise of the reproduced threshold ({iv})" if self._beyond(far, self.reproduced)
                             else f"; it does not reach the reproduced threshold {self.reproduced:g}")
                return v, note
        if self._beyond(far, weakest_t):
            return 'inconclusive', f"{w} = {_f(e.value)}: within noise of the {weakest_v} threshold ({iv})"
        return 'not_reproduced', f"{w} = {_f(e.value)}, {e.level:.0%} {iv} lies wholly short of the {weakest_v} threshold {weakest_t:g}"


# %% [markdown]
# Grading plain numbers at, just above and just below each threshold, in both directions:

# %%
rho = Rule('>', 0.5, 0.0, what='ρ')
test_eq(rho.text(), "reproduced if ρ > 0.5; partially if ρ > 0; interval must clear the threshold")
test_eq(rho.text(interval=False), "reproduced if ρ > 0.5; partially if ρ > 0")
test_eq([rho.grade(x)[0] for x in (0.51, 0.5, 0.49, 0.01, 0.0, -0.01, -0.9)],
        ['reproduced', 'partially', 'partially', 'partially', 'not_reproduced', 'not_reproduced', 'not_reproduced'])
test_eq(rho.grade(0.7), ('reproduced', 'ρ = 0.7 clears the reproduced threshold 0.5'))
test_eq(rho.grade(0.2), ('partially', 'ρ = 0.2 clears the partially threshold 0, not the reproduced threshold 0.5'))
test_eq(rho.grade(np.float32(0.6))[0], 'reproduced'); test_eq(rho.grade(1)[0], 'reproduced')
v, note = rho.grade(float('nan')); test_eq(v, 'inconclusive'); assert 'NaN' in note
ece = Rule('<', -0.01, 0.0, what='ECE change')      # smaller supports the claim: calibration error drops
test_eq([ece.grade(x)[0] for x in (-0.02, -0.01, -0.005, 0.0, 0.003)],
        ['reproduced', 'partially', 'partially', 'not_reproduced', 'not_reproduced'])
only = Rule('>', 0.0, what='gap')                   # no partial level
test_eq([only.grade(x)[0] for x in (0.001, 0.0, -0.001)], ['reproduced', 'not_reproduced', 'not_reproduced'])
test_eq(only.text(interval=False), "reproduced if gap > 0")
test_eq(Rule('<', 2).text(interval=False), "reproduced if the value < 2")
test_fail(lambda: Rule('>=', 0.5), contains="'>' or '<'")
test_fail(lambda: Rule('>', 0.5, 0.7), contains="must be weaker")          # a 'partially' stricter than 'reproduced'
test_fail(lambda: Rule('<', 0.1, 0.05), contains="must be larger")
test_fail(lambda: Rule('>', 0.5, 0.5), contains="must be weaker")
test_fail(lambda: Rule('>', float('nan')), contains="finite number")
test_fail(lambda: rho.grade("0.6"), contains="a number or an Estimate")
test_fail(lambda: rho.grade(True), contains="a number or an Estimate")

# %% [markdown]
# Grading intervals: the whole interval must clear a threshold; straddling the weakest one is inconclusive,
# and straddling the `reproduced` one is said in the note:

# %%
E = lambda lo, hi, n=5: Estimate((lo + hi) / 2, lo, hi, n)
test_eq(rho.grade(E(0.55, 0.8))[0], 'reproduced')
test_eq(rho.grade(E(0.1, 0.4))[0], 'partially')
v, note = rho.grade(E(0.3, 0.7))                       # clears 0, straddles 0.5
test_eq(v, 'partially'); assert "within noise of the reproduced threshold (interval 0.3…0.7)" in note, note
v, note = rho.grade(E(0.1, 0.4)); assert "does not reach the reproduced threshold 0.5" in note and "within noise" not in note
v, note = rho.grade(E(-0.1, 0.3))                      # straddles the weakest threshold
test_eq(v, 'inconclusive'); assert "within noise of the partially threshold (interval -0.1…0.3)" in note, note
test_eq(rho.grade(E(-0.1, 0.8))[0], 'inconclusive')    # straddles both
test_eq(rho.grade(E(0.5, 0.9))[0], 'partially')        # at the threshold: not strictly beyond it
test_eq(rho.grade(E(0.0, 0.3))[0], 'inconclusive')     # touches the weakest threshold
test_eq(rho.grade(E(-0.3, 0.0))[0], 'not_reproduced')  # wholly on the wrong side (touching it)
test_eq(rho.grade(E(0.5000001, 0.6))[0], 'reproduced'); test_eq(rho.grade(E(0.4999999, 0.6))[0], 'partially')
test_eq(ece.grade(E(-0.05, -0.02))[0], 'reproduced')   # direction '<'
v, note = ece.grade(E(-0.02, -0.004)); test_eq(v, 'partially'); assert "within noise of the reproduced threshold" in note
test_eq(ece.grade(E(-0.004, 0.002))[0], 'inconclusive')
test_eq(ece.grade(E(0.001, 0.01))[0], 'not_reproduced')
test_eq(only.grade(E(-0.01, 0.02))[0], 'inconclusive'); test_eq(only.grade(E(0.01, 0.02))[0], 'reproduced')
v, note = rho.grade(Estimate(0.9, math.nan, math.nan, 1))   # one seed: no support either way
test_eq(v, 'inconclusive'); assert "n = 1" in note
test_eq(rho.grade(mean_ci([0.9]))[0], 'inconclusive')
test_eq(rho.grade(Estimate(math.nan, math.nan, math.nan, 0))[0], 'inconclusive')

# %% [markdown]
# A rule never rewards the opposite of the claim: a significant effect in the wrong direction is
# `not_reproduced`, for a number and for an interval, in both directions.

# %%
test_eq(rho.grade(-0.6)[0], 'not_reproduced'); test_eq(rho.grade(E(-0.9, -0.4))[0], 'not_reproduced')
test_eq(rho.grade(mean_ci([-0.5, -0.6, -0.55, -0.7]))[0], 'not_reproduced')
test_eq(ece.grade(0.05)[0], 'not_reproduced'); test_eq(ece.grade(E(0.02, 0.08))[0], 'not_reproduced')
for r in (rho, ece, only):
    for x in (-1.0, -0.3, 0.3, 1.0):
        wrong_way = (x < 0) if r.direction == '>' else (x > 0)
        if wrong_way: assert r.grade(x)[0] == 'not_reproduced' and r.grade(E(x - 0.05, x + 0.05))[0] == 'not_reproduced'

# %% [markdown]
# ## `judge`: the one way a paper states a claim
#
# `judge(claim, paper, ours, ...)` returns a `Verdict` in one of three forms (exactly one):
#
# 1. **A rule on one number**: `rule=Rule(...)`, `value=<float or Estimate>`. The rule's text goes into
#    `rule`, its note is appended to `reason`.
# 2. **A compound rule**: `reproduced=<bool>` (and optionally `partially=<bool>`, `inconclusive=<bool>`),
#    with the rule written out in `rule_text=`. The first true condition wins, in the order reproduced,
#    partially, inconclusive; none true is `not_reproduced`.
# 3. **An ungraded claim**: `verdict="not_testable_offline"` or `verdict="illustrated"`, with a `reason`.
#
# `headline=True` marks the paper's main claim; `check_headline` checks there is exactly one.

# %%
#| export
_UNGRADED = ("not_testable_offline", "illustrated")

def _as_bool(name:str, x) -> bool:
    if not isinstance(x, (bool, np.bool_)): raise TypeError(f"judge: {name}= must be True or False (a condition), got {x!r}")
    return bool(x)

def judge(claim:str, paper:str, ours:str, *,
          rule:Rule|None=None, value=None,                     # form 1: a rule on one measured number (float or Estimate)
          reproduced:bool|None=None, partially:bool=False, inconclusive:bool=False,  # form 2: compound conditions...
          verdict:str|None=None,                               # form 3: 'not_testable_offline' or 'illustrated'
          rule_text:str="",                                    # ...with the rule in words (required for form 2)
          reason:str="", headline:bool=False) -> Verdict:
    "A `Verdict` for one claim, graded by an explicit rule (`rule`+`value`, or conditions + `rule_text`), or ungraded (`verdict`)."
    by_rule = rule is not None or value is not None
    by_bool = reproduced is not None or partially is not False or inconclusive is not False
    forms = [n for n, on in (("rule=/value=", by_rule), ("reproduced=/partially=/inconclusive=", by_bool), ("verdict=", verdict is not None)) if on]
    if len(forms) != 1:
        raise ValueError(f"judge({claim[:40]!r}...): give exactly one of rule= with value=, reproduced= (with partially=/inconclusive= "
                         f"and rule_text=), or verdict='not_testable_offline'/'illustrated'; got {forms or 'none'}")
    if by_rule:
        if not isinstance(rule, Rule): raise ValueError(f"judge: value= needs rule=Rule(...), got rule={rule!r}")
        if value is None: raise ValueError("judge: rule= needs the measured value= (a float or an Estimate)")
        if rule_text: raise ValueError("judge: rule_text= is for the reproduced=/partially= form; a Rule writes its own text")
        v, note = rule.grade(value)
        return Verdict(claim, paper, ours, v, "; ".join(s for s in (reason, note) if s),
                       rule.text(interval=isinstance(value, Estimate)), headline)
    if by_bool:
        if reproduced is None: raise ValueError("judge: partially=/inconclusive= need reproduced= too")
        r, p, i = _as_bool('reproduced', reproduced), _as_bool('partially', partially), _as_bool('inconclusive', inconclusive)
        if not (isinstance(rule_text, str) and rule_text.strip()):
            raise ValueError("judge: the reproduced=/partially= form needs rule_text= (the rule in words, e.g. 'reproduced if the gap > 0 in >= 4 of 5 seeds')")
        v = 'reproduced' if r else 'partially' if p else 'inconclusive' if i else 'not_reproduced'
        return Verdict(claim, paper, ours, v, reason, rule_text, headline)
    if verdict not in _UNGRADED:
        raise ValueError(f"judge: verdict= is only for ungraded claims {list(_UNGRADED)}, got {verdict!r}; "
                         "graded verdicts come from rule=/value= or reproduced=")
    if not reason.strip(): raise ValueError(f"judge: verdict={verdict!r} needs a reason= (why it is not graded)")
    return Verdict(claim, paper, ours, verdict, reason, rule_text, headline)

def check_headline(verdicts) -> Verdict|dict:
    "The one headline verdict of `verdicts` (Verdicts, dicts from `result.json`, or a `Result`); ValueError unless exactly one."
    vs = verdicts.verdicts if hasattr(verdicts, 'verdicts') else list(verdicts)
    hl = [v for v in vs if (v.get('headline') if isinstance(v, dict) else getattr(v, 'headline', False))]
    if len(hl) != 1:
        claims = [v['claim'] if isinstance(v, dict) else v.claim for v in hl]
        raise ValueError(f"exactly one verdict must have headline=True; found {len(hl)} of {len(vs)}" + (f": {claims}" if claims else ""))
    return hl[0]


# %%
v = judge("Ensembles raise accuracy", "+2.1 pp", "+1.4 pp", rule=Rule('>', 1.0, 0.0, what='accuracy gain (pp)'), value=1.4,
          reason="CPU scale", headline=True)
test_eq((v.verdict, v.headline), ('reproduced', True))
test_eq(v.rule, "reproduced if accuracy gain (pp) > 1; partially if accuracy gain (pp) > 0")
test_eq(v.reason, "CPU scale; accuracy gain (pp) = 1.4 clears the reproduced threshold 1")
v = judge("c", "p", "o", rule=rho, value=E(0.3, 0.7))
test_eq(v.verdict, 'partially'); assert v.rule.endswith("interval must clear the threshold") and v.reason.startswith("ρ = 0.5")
test_eq(judge("c", "p", "o", rule=rho, value=mean_ci([0.6])).verdict, 'inconclusive')
# compound conditions: precedence reproduced > partially > inconclusive > not_reproduced
J = lambda **k: judge("c", "p", "o", rule_text="reproduced if all gaps > 0; partially if most", **k).verdict
test_eq(J(reproduced=True, partially=True, inconclusive=True), 'reproduced')
test_eq(J(reproduced=False, partially=True, inconclusive=True), 'partially')
test_eq(J(reproduced=False, partially=False, inconclusive=True), 'inconclusive')
test_eq(J(reproduced=False), 'not_reproduced')
test_eq(J(reproduced=np.bool_(True)), 'reproduced')
test_eq(judge("c", "p", "o", reproduced=False, partially=True, rule_text="r").rule, "r")
test_fail(lambda: judge("c", "p", "o", reproduced=True), contains="needs rule_text=")
test_fail(lambda: judge("c", "p", "o", reproduced=True, rule_text="  "), contains="needs rule_text=")
test_fail(lambda: judge("c", "p", "o", partially=True, rule_text="r"), contains="need reproduced=")
test_fail(lambda: judge("c", "p", "o", reproduced=0.7, rule_text="r"), contains="must be True or False")
# ungraded claims
v = judge("Theorem 3 holds for all distributions", "theorem", "not computed", verdict="not_testable_offline", reason="a proof, not a measurement")
test_eq((v.verdict, v.rule), ('not_testable_offline', ''))
test_eq(judge("c", "p", "o", verdict="illustrated", reason="figure 2 shows the effect").verdict, 'illustrated')
test_fail(lambda: judge("c", "p", "o", verdict="illustrated"), contains="needs a reason=")
test_fail(lambda: judge("c", "p", "o", verdict="reproduced", reason="r"), contains="only for ungraded claims")
# exactly one form
test_fail(lambda: judge("c", "p", "o"), contains="got none")
test_fail(lambda: judge("c", "p", "o", verdict="illustrated", rule=rho, value=0.6, reason="r"), contains="exactly one of")
test_fail(lambda: judge("c", "p", "o", verdict="illustrated", reproduced=True, reason="r"), contains="exactly one of")
test_fail(lambda: judge("c", "p", "o", rule=rho, value=0.6, reproduced=True), contains="exactly one of")
test_fail(lambda: judge("c", "p", "o", rule=rho), contains="needs the measured value=")
test_fail(lambda: judge("c", "p", "o", value=0.6), contains="needs rule=Rule")
test_fail(lambda: judge("c", "p", "o", rule=rho, value=0.6, rule_text="x"), contains="writes its own text")


# %% [markdown]
# ### Claims that read several intervals
#
# Some claims read several comparisons at once (a gap at every ε, a method against each alternative). Three
# helpers keep such rules honest. `joint_ci` gives Bonferroni-adjusted intervals, so that the comparisons hold
# jointly at the stated level. `side` says where one interval lies with respect to a threshold: wholly above
# (`+`), wholly below (`-`), or touching or straddling it (`?`, undecided). `settle` gives a verdict only when it
# does not depend on how the undecided comparisons would fall; otherwise the verdict is `inconclusive`.
# `verdict_flags` turns a verdict word into `judge`'s `reproduced=`/`partially=`/`inconclusive=` form.

# %%
#| export
def side(e:Estimate, threshold:float=0.0) -> str:
    "'+' if the whole interval of `e` lies above `threshold`, '-' if wholly below, '0' if it is the single point `threshold` (no variation: neither), '?' if it touches or straddles it (or has none)."
    if math.isnan(e.value) or not e.has_interval: return "?"
    if e.lo == e.hi == threshold: return "0"
    return "+" if e.lo > threshold else "-" if e.hi < threshold else "?"

def settle(sides, verdict_of:Callable) -> str:
    "The verdict `verdict_of(sides)` gives whichever way the undecided '?' fall (to '+' or to '-'), else 'inconclusive'. `verdict_of` must be monotone: turning a '-' into '+' never weakens it."
    best, worst = verdict_of(["+" if s == "?" else s for s in sides]), verdict_of(["-" if s == "?" else s for s in sides])
    return best if best == worst else "inconclusive"

def joint_ci(samples:list, level:float=0.95) -> list[Estimate]:
    "Bonferroni-adjusted Student-t intervals of the means of several samples (e.g. paired differences), jointly at `level`; an empty sample gives a NaN estimate."
    lvl = 1 - (1 - level) / max(len(samples), 1)
    return [mean_ci(d, lvl) if len(d) else Estimate(math.nan, math.nan, math.nan, 0, lvl) for d in samples]

def verdict_flags(v:str) -> dict:
    "`judge`'s reproduced=/partially=/inconclusive= keywords for the verdict word `v` (anything else: not reproduced)."
    return dict(reproduced=v == "reproduced", partially=v == "partially", inconclusive=v == "inconclusive")


# %%
from scipy import stats as _st

# %%
_e = lambda m, lo, hi: Estimate(m, lo, hi, 10)
test_eq([side(_e(1, .5, 1.5)), side(_e(-1, -1.5, -.5)), side(_e(.2, -.1, .5)), side(_e(.5, 0., 1.)), side(Estimate(1, math.nan, math.nan, 1)), side(_e(0, 0, 0))],
        ["+", "-", "?", "?", "?", "0"])          # an interval that touches the threshold is undecided
test_eq(side(_e(.5, .45, .55), .4), "+")
_all = lambda ss: "reproduced" if all(x == "+" for x in ss) else "partially" if "+" in ss else "not_reproduced"
test_eq([settle(ss, _all) for ss in (["+", "+"], ["+", "-"], ["-", "-"], ["+", "?"], ["-", "?"], ["?", "?"])],
        ["reproduced", "partially", "not_reproduced", "inconclusive", "inconclusive", "inconclusive"])
test_eq(settle(["+", "?", "-"], _all), "partially")   # the undecided comparison cannot change this verdict
j = joint_ci([np.array([0., 1., 2., 3.]), np.ones(3), []])
test_eq([x.level for x in j], [1 - 0.05/3] * 3)
test_close(j[0].hi, 1.5 + _st.t.ppf(1 - 0.05/6, 3) * np.std([0, 1, 2, 3], ddof=1) / 2, eps=1e-9)   # Student-t at the adjusted level
assert math.isnan(j[2].value) and j[2].n == 0
test_eq(str(mean_ci([1., 2., 3.], 0.975)), "2 (97.5% CI -1.58 to 5.58, n = 3)")
test_eq(str(mean_ci([1., 2., 3.])).split(" CI")[0], "2 (95%")
test_eq(verdict_flags("partially"), dict(reproduced=False, partially=True, inconclusive=False))
test_eq(judge("c", "p", "o", rule_text="r", **verdict_flags("inconclusive")).verdict, "inconclusive")
test_eq(judge("c", "p", "o", rule_text="r", **verdict_flags("not_reproduced")).verdict, "not_reproduced")
# the headline
vs = [judge("a", "p", "o", rule=rho, value=0.6, headline=True), judge("b", "p", "o", verdict="illustrated", reason="r")]
test_eq(check_headline(vs).claim, "a")
test_eq(check_headline([dict(claim='a', headline=False), dict(claim='b', headline=True)])['claim'], 'b')
test_fail(lambda: check_headline(vs[1:]), contains="found 0 of 1")
test_fail(lambda: check_headline(vs + [judge("c", "p", "o", rule=rho, value=0.1, headline=True)]), contains="found 2 of 3: ['a', 'c']")
vs

# %% [markdown]
# ## Claims as data
#
# A paper declares its claims once, as data, before any number exists: `CLAIMS = [Claim(...), ...]`, exported
# with the paper's module. A claim names the metric keys it reads and its rule, built from a small algebra;
# `grade(CLAIMS, metrics)` is the one grader, the same semantics for all 19 papers, and it writes the rule's
# text from the rule itself. `run(cfg)` returns measurements only.
#
# **What a rule reads.** A metric is read as
# - an `Estimate` (stored as a dict with `value`, `lo`, `hi`, `n`, `level`): its interval is graded;
# - a list of per-seed values: graded by its Student-t interval (`mean_ci`) at the test's `level`;
#   two such lists give a paired difference, `Diff(a, b)`;
# - a plain number: graded as it is, or within `tol` of it when the test declares a tolerance (for numbers
#   that differ between machines in the last digits);
# - `None`, NaN or a missing key: *not measured*, which grades as inconclusive.
#
# **Tests.** `Above(of, reproduced, partially=None, ...)` and `Below(...)` compare strictly (`AtLeast`,
# `AtMost` inclusively) one metric or paired difference with a threshold; `AllOf(...)`, `AnyOf(...)` combine
# tests; `BestAmong(target, others)` says one method beats each other one, on paired per-seed differences
# with Bonferroni-adjusted joint intervals; `Each(pattern, ...)` applies one comparison to every metric whose
# key matches a glob pattern (such as every `k` of a sweep). A `Claim` may also `require` conditions: tests
# that must hold for the experiment to test the claim at all.
#
# **One semantics.** Each test yields the range of verdict levels the data allow — not reproduced (0),
# partially (1), reproduced (2) — and whether the data show a *significant effect against the claim*
# (the whole interval beyond the no-effect value `null` on the wrong side; by default `null` is the weakest
# threshold). A level is *established* when the whole interval clears its threshold.
# - A comparison is reproduced (or partially) when its interval wholly clears the reproduced (or partially)
#   threshold; an interval across the weakest threshold, one seed (no interval) or a missing number is
#   inconclusive; one wholly short of it is not reproduced. Partially with an interval that reaches across the
#   reproduced threshold says so ("within noise of the reproduced threshold").
# - `AllOf` is reproduced when every part is, partially when every part is at least partially
#   (`partial='any'`: when some part is), not reproduced when a part fails; `AnyOf` is reproduced when some
#   part is. A verdict is given only when it does not depend on where the undecided parts would fall;
#   otherwise it is inconclusive.
# - A significant effect against the claim in any part makes the whole claim *not reproduced*: a rule never
#   rewards the opposite of the claim, and `AnyOf` cannot hide a contrary part behind a supporting one.
# - A claim whose condition is not established is *inconclusive — condition not met*, never reproduced;
#   the reason says what the rule alone would have given.
# - An *illustration* (a phenomenon the paper describes, shown on a constructed example) may carry a rule too:
#   `Claim(..., status="illustrated", rule=...)` is *illustrated* where the rule establishes it and otherwise
#   gets the rule's own word (partially, inconclusive, not reproduced), so an illustration can fail; it is
#   never *reproduced*.

# %%
#| export
import fnmatch, hashlib, string
from typing import NamedTuple

_LEVEL = {2: 'reproduced', 1: 'partially', 0: 'not_reproduced'}
_OPS = {'>': 'above', '>=': 'at least', '<': 'below', '<=': 'at most'}

class Outcome(NamedTuple):
    "What a test says about the measurements: the lowest and highest verdict levels the data allow (0 not reproduced, 1 partially, 2 reproduced), whether they show a significant effect against the claim, and a note."
    lo: int
    hi: int
    opposite: bool = False
    note: str = ""
    @property
    def verdict(self) -> str:
        "The verdict word: not reproduced if against the claim or nothing more is possible; the established level; else inconclusive."
        if self.opposite or self.hi <= 0: return 'not_reproduced'
        return _LEVEL[self.lo] if self.lo >= 1 else 'inconclusive'
    @property
    def settled(self) -> tuple[int, int]:
        "The range a combination uses: an established partially or reproduced counts as that level."
        return (self.lo, self.lo) if self.lo >= 1 else (self.lo, self.hi)

def as_estimate(x, level:float=0.95) -> Estimate|float:
    "A stored metric as the grader reads it: an `Estimate` (from an Estimate, a dict with value/lo/hi, or a list of per-seed values: Student-t interval at `level`), or a float (NaN for None)."
    if isinstance(x, Estimate): return x
    if isinstance(x, dict) and 'value' in x:
        nan = lambda v: math.nan if v is None else float(v)
        return Estimate(nan(x['value']), nan(x.get('lo')), nan(x.get('hi')), int(x.get('n') or 0), float(x.get('level') or level))
    if isinstance(x, (list, tuple, np.ndarray)):
        v = np.asarray([math.nan if a is None else a for a in np.ravel(np.asarray(x, dtype=object))], dtype=float)
        if v.size == 0 or np.isnan(v).any(): return Estimate(math.nan, math.nan, math.nan, int(v.size), level)
        return mean_ci(v, level)
    if x is None: return math.nan
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError(f"a graded metric must be a number, a list of per-seed numbers or an Estimate, got {type(x).__name__}: {short_repr(x)}")
    return float(x)

def short_repr(x, n:int=60) -> str:
    s = repr(x); return s if len(s) <= n else s[:n - 1] + "…"

def _fmt(x, spec:str="") -> str:
    "A measured value for texts: an Estimate as 'v [lo, hi] (n = …)', a float with `spec` (default 3 significant digits)."
    if isinstance(x, Estimate):
        if math.isnan(x.value): return "not measured"
        s = spec or ".3g"
        return f"{x:{s}} (n = {x.n})" if x.has_interval else f"{x:{s}}"
    if isinstance(x, float) and math.isnan(x): return "not measured"
    return format(x, spec or ".3g") if isinstance(x, (int, float, np.integer, np.floating)) else str(x)


# %%
_o = Outcome(1, 2, False, "n")
test_eq((_o.verdict, _o.settled), ("partially", (1, 1)))          # an established level counts as that level
test_eq([Outcome(*r).verdict for r in ((2, 2), (0, 2), (0, 1), (0, 0))], ["reproduced", "inconclusive", "inconclusive", "not_reproduced"])
test_eq(Outcome(2, 2, True).verdict, "not_reproduced")             # an effect against the claim is never rewarded
test_eq(as_estimate(dict(value=0.5, lo=0.1, hi=0.9, n=4, level=0.9)), Estimate(0.5, 0.1, 0.9, 4, 0.9))
test_eq(as_estimate(to_jsonable(Estimate(0.5, math.nan, math.nan, 1))).has_interval, False)   # NaN stored as None comes back as NaN
test_eq(as_estimate([0.12, 0.05, 0.20, 0.08, 0.15]), mean_ci([0.12, 0.05, 0.20, 0.08, 0.15]))   # per-seed values: the t-interval
test_eq(as_estimate([1., 2., 3.], 0.9), mean_ci([1., 2., 3.], 0.9))
assert math.isnan(as_estimate([1., None]).value) and math.isnan(as_estimate(None))            # a missing seed: not measured
test_eq(as_estimate(np.int64(3)), 3.0)
test_fail(lambda: as_estimate("0.5"), contains="must be a number"); test_fail(lambda: as_estimate(True), contains="must be a number")
test_eq(_fmt(Estimate(0.12, 0.05, 0.19, 5), "+.2f"), "+0.12 [+0.05, +0.19] (n = 5)"); test_eq(_fmt(math.nan), "not measured")


# %%
#| export
@dataclass(frozen=True)
class Diff:
    "The paired difference `a − b` of two metrics stored as per-seed lists of the same length (seed i of a with seed i of b)."
    a: str   # metric key of the first per-seed list
    b: str   # metric key of the second per-seed list
    def keys(self) -> tuple[str, ...]: return (self.a, self.b)
    def name(self) -> str: return f"{self.a} − {self.b}"
    def spec(self) -> dict: return dict(diff=[self.a, self.b])
    def read(self, metrics:dict, level:float=0.95) -> Estimate|float:
        a, b = metrics.get(self.a), metrics.get(self.b)
        if a is None or b is None: return math.nan
        if not (isinstance(a, (list, tuple, np.ndarray)) and isinstance(b, (list, tuple, np.ndarray))):
            raise TypeError(f"Diff({self.a!r}, {self.b!r}) needs two per-seed lists, got {type(a).__name__} and {type(b).__name__}")
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        if a.shape != b.shape: raise ValueError(f"Diff({self.a!r}, {self.b!r}): {a.size} and {b.size} seeds cannot be paired")
        return as_estimate(list(a - b), level)

def _read(of, metrics:dict, level:float):
    if isinstance(of, Diff): return of.read(metrics, level)
    return as_estimate(metrics[of], level) if of in metrics else math.nan

class Test:
    "A rule, or part of one: `evaluate(metrics) -> Outcome`, its text, the metric keys it reads and a canonical spec (for hashing)."
    def evaluate(self, metrics:dict) -> Outcome: raise NotImplementedError
    def text(self) -> str: raise NotImplementedError
    def keys(self) -> tuple[str, ...]: raise NotImplementedError
    def spec(self) -> dict: raise NotImplementedError
    def leaves(self) -> list: raise NotImplementedError
    def has_partial(self) -> bool: return any(l.partially is not None for l in self.leaves())
    def concrete(self, metrics:dict) -> list: return self.leaves()   # the comparisons made on these metrics (Each: one per matching key)

def _num(name:str, v, allow_none:bool=False):
    if v is None and allow_none: return None
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {v!r}")
    return float(v)

@dataclass(frozen=True)
class Compare(Test):
    "One metric (or a paired difference) against a threshold: `op` is '>' or '>=' (larger supports the claim), '<' or '<='."
    of: str|Diff                  # metric key, or Diff(a, b)
    op: str                       # '>', '>=', '<', '<='
    reproduced: float             # threshold for reproduced
    partially: float|None = None  # weaker threshold for partially (None: no partial level)
    null: float|None = None       # no-effect value: an interval wholly beyond it on the wrong side is an effect against the claim (default: the weakest threshold)
    what: str = ""                # the measured quantity in words, for the rule's text
    tol: float = 0.0              # a recorded tolerance (numbers that differ between machines): a plain number, or an interval widened by it, within `tol` of a threshold is within noise of it
    level: float = 0.95           # interval level for per-seed lists
    def __post_init__(self):
        if self.op not in _OPS: raise ValueError(f"Compare.op must be one of {list(_OPS)}, got {self.op!r}")
        if not (isinstance(self.of, Diff) or (isinstance(self.of, str) and self.of)):
            raise TypeError(f"Compare.of must be a metric key or Diff(a, b), got {self.of!r}")
        object.__setattr__(self, 'reproduced', _num('reproduced', self.reproduced))
        object.__setattr__(self, 'partially', _num('partially', self.partially, True))
        object.__setattr__(self, 'tol', _num('tol', self.tol))
        if self.tol < 0: raise ValueError(f"tol must be >= 0, got {self.tol}")
        if not 0 < self.level < 1: raise ValueError(f"level must be in (0, 1), got {self.level}")
        weakest = self.reproduced if self.partially is None else self.partially
        if self.partially is not None and not self._beyond(self.reproduced, self.partially, strict=True):
            raise ValueError(f"partially ({self.partially:g}) must be weaker than reproduced ({self.reproduced:g}): "
                             f"with {self.op!r} it must be {'smaller' if self.up else 'larger'}")
        null = weakest if self.null is None else _num('null', self.null)
        if self._beyond(null, weakest, strict=True):
            raise ValueError(f"null ({null:g}) must not lie beyond the weakest threshold ({weakest:g}) in the claim's direction")
        object.__setattr__(self, 'null', null)
    @property
    def up(self) -> bool: return self.op in ('>', '>=')
    def _beyond(self, x, t, strict=None) -> bool:
        strict = self.op in ('>', '<') if strict is None else strict
        if self.up: return x > t if strict else x >= t
        return x < t if strict else x <= t
    def keys(self): return self.of.keys() if isinstance(self.of, Diff) else (self.of,)
    def leaves(self): return [self]
    def name(self) -> str: return self.what or (self.of.name() if isinstance(self.of, Diff) else self.of)
    def spec(self) -> dict:
        return dict(test='compare', of=self.of.spec() if isinstance(self.of, Diff) else self.of, op=self.op, reproduced=self.reproduced,
                    partially=self.partially, null=self.null, tol=self.tol, level=self.level)
    def text(self) -> str:
        s = f"{self.name()} {self.op} {self.reproduced:g}"
        if self.partially is not None: s += f" (partially: {self.op} {self.partially:g})"
        if self.tol: s += f" (± {self.tol:g} is within noise)"
        return s
    def _level(self, x) -> int:
        if self._beyond(x, self.reproduced): return 2
        return 1 if self.partially is not None and self._beyond(x, self.partially) else 0
    def evaluate(self, metrics:dict) -> Outcome:
        x = _read(self.of, metrics, self.level); w = self.name()
        if isinstance(x, float):
            if math.isnan(x): return Outcome(0, 2, False, f"{w} not measured")
            lo, hi, shown = x - self.tol, x + self.tol, f"{w} = {_fmt(x)}" + (f" (± {self.tol:g})" if self.tol else "")
        else:
            if math.isnan(x.value): return Outcome(0, 2, False, f"{w} not measured")
            if not x.has_interval: return Outcome(0, 2, False, f"{w} = {_fmt(x.value)} from n = {x.n}: no interval, so it cannot be told from noise")
            lo, hi, shown = x.lo - self.tol, x.hi + self.tol, f"{w} = {_fmt(x)}" + (f" (± {self.tol:g})" if self.tol else "")
        near, far = (lo, hi) if self.up else (hi, lo)
        a, b = self._level(near), self._level(far)
        opposite = (far < self.null) if self.up else (far > self.null)
        o = Outcome(a, b, bool(opposite), "")
        v = o.verdict
        if opposite: note = f"{shown}: wholly {'below' if self.up else 'above'} {self.null:g}, an effect against the claim"
        elif v == 'inconclusive': note = f"{shown}: within noise of the {'partially' if self.partially is not None else 'reproduced'} threshold"
        elif v == 'not_reproduced': note = f"{shown}: short of the {'partially' if self.partially is not None else 'reproduced'} threshold"
        else:
            note = f"{shown}: clears the {v} threshold"
            if b > a: note += " (within noise of the reproduced threshold)"
        return o._replace(note=note)

def Above(of, reproduced, partially=None, **kw) -> Compare:
    "Supports the claim when the metric (or `Diff`) lies strictly above `reproduced` (`partially`: a weaker threshold)."
    return Compare(of, '>', reproduced, partially, **kw)
def Below(of, reproduced, partially=None, **kw) -> Compare:
    "Supports the claim when the metric (or `Diff`) lies strictly below `reproduced` (`partially`: a weaker threshold)."
    return Compare(of, '<', reproduced, partially, **kw)
def AtLeast(of, reproduced, partially=None, **kw) -> Compare:
    "Like `Above`, but a value equal to the threshold clears it (for counts and shares: '≥ 80 % of seeds')."
    return Compare(of, '>=', reproduced, partially, **kw)
def AtMost(of, reproduced, partially=None, **kw) -> Compare:
    "Like `Below`, but a value equal to the threshold clears it."
    return Compare(of, '<=', reproduced, partially, **kw)


# %%
rho2 = Above('rho', 0.5, 0.0, what='ρ')
test_eq(rho2.text(), "ρ > 0.5 (partially: > 0)")
G = lambda t, x: t.evaluate(dict(rho=x, gap=x)).verdict
# plain numbers at, just above and just below each threshold
test_eq([G(rho2, x) for x in (0.51, 0.5, 0.49, 0.01, 0.0, -0.01)],
        ['reproduced', 'partially', 'partially', 'partially', 'not_reproduced', 'not_reproduced'])
test_eq(G(AtLeast('rho', 0.5), 0.5), 'reproduced'); test_eq(G(Above('rho', 0.5), 0.5), 'not_reproduced')
test_eq(G(AtMost('rho', 0.5), 0.5), 'reproduced'); test_eq(G(Below('rho', 0.5), 0.5), 'not_reproduced')
test_eq(G(rho2, math.nan), 'inconclusive'); test_eq(G(rho2, None), 'inconclusive')
test_eq(Above('absent', 0).evaluate({}).note, "absent not measured")
# intervals: the whole interval must clear a threshold
E = lambda lo, hi, n=5: Estimate((lo + hi) / 2, lo, hi, n)
test_eq([G(rho2, E(*iv)) for iv in ((0.55, 0.8), (0.1, 0.4), (0.3, 0.7), (-0.1, 0.3), (0.5, 0.9), (0.0, 0.3), (-0.3, 0.0), (-0.9, -0.4))],
        ['reproduced', 'partially', 'partially', 'inconclusive', 'partially', 'inconclusive', 'not_reproduced', 'not_reproduced'])
assert "within noise of the reproduced threshold" in rho2.evaluate(dict(rho=E(0.3, 0.7))).note
assert rho2.evaluate(dict(rho=E(-0.9, -0.4))).opposite and not rho2.evaluate(dict(rho=E(-0.3, 0.0))).opposite
test_eq(G(rho2, Estimate(0.9, math.nan, math.nan, 1)), 'inconclusive')          # one seed
test_eq(G(rho2, [0.9]), 'inconclusive'); test_eq(G(rho2, [0.6, 0.7, 0.65, 0.7]), 'reproduced')
# the same interval logic as the Rule above, on every case of its tests
for r, t in ((rho, rho2), (Rule('<', -0.01, 0.0), Below('rho', -0.01, 0.0))):
    for e in (E(0.55, 0.8), E(0.1, 0.4), E(0.3, 0.7), E(-0.1, 0.3), E(-0.04, -0.02), E(-0.02, -0.004), E(0.001, 0.01), 0.3, -0.005):
        test_eq(t.evaluate(dict(rho=e)).verdict, r.grade(e)[0])
# a no-effect value below the weakest threshold: short of it is not reproduced, beyond the null is against the claim
sp = Above('speedup', 1.3, null=1.0, what='speed-up')
test_eq([sp.evaluate(dict(speedup=E(*iv))).opposite for iv in ((1.05, 1.2), (0.7, 0.9))], [False, True])
test_eq(G(Above('rho', 0.5, tol=0.02), 0.51), 'inconclusive')                   # within the tolerance of the threshold
test_eq(G(Above('rho', 0.5, tol=0.02), 0.53), 'reproduced')
test_eq(G(Above('rho', 0.5, tol=0.02), E(0.51, 0.6)), 'inconclusive')          # an interval is widened by the tolerance too
test_eq(G(Above('rho', 0.5, tol=0.02), E(0.53, 0.6)), 'reproduced')
# paired differences of per-seed lists
m = dict(a=[0.80, 0.82, 0.81, 0.83, 0.80], b=[0.78, 0.79, 0.80, 0.80, 0.77])
d = Above(Diff('a', 'b'), 0.0, what='Δacc')
test_eq(d.evaluate(m).verdict, 'reproduced'); test_eq(d.keys(), ('a', 'b'))
test_close(as_estimate([x - y for x, y in zip(m['a'], m['b'])]).lo, float(d.evaluate(m).note.split('[')[1].split(',')[0]), eps=1e-3)
test_fail(lambda: Above(Diff('a', 'b'), 0).evaluate(dict(a=[1., 2.], b=[1.])), contains="cannot be paired")
test_fail(lambda: Above(Diff('a', 'b'), 0).evaluate(dict(a=0.5, b=[1.])), contains="needs two per-seed lists")
# declarations that cannot be right are refused
test_fail(lambda: Above('x', 0.5, 0.7), contains="must be weaker"); test_fail(lambda: Below('x', 0.1, 0.05), contains="must be larger")
test_fail(lambda: Above('x', 0.5, null=0.6), contains="must not lie beyond"); test_fail(lambda: Compare('x', '=>', 1), contains="op must be")
test_fail(lambda: Above('x', float('nan')), contains="finite number"); test_fail(lambda: Above('', 0), contains="metric key")
rho2.evaluate(dict(rho=E(0.3, 0.7)))


# %%
#| export
def _combine(parts:list[Outcome], f:Callable, veto:bool=True) -> Outcome:
    "Combine outcomes with a monotone `f` over levels: a verdict only where the undecided parts cannot change it; any part against the claim vetoes."
    if not parts: return Outcome(0, 2, False, "nothing to grade")
    rng = [p.settled for p in parts]
    opposite = veto and any(p.opposite for p in parts)
    return Outcome(f([r[0] for r in rng]), f([r[1] for r in rng]), opposite, "; ".join(p.note for p in parts if p.note))

def _some(levels): return 2 if all(l == 2 for l in levels) else 1 if any(l >= 1 for l in levels) else 0

@dataclass(frozen=True, init=False)
class AllOf(Test):
    "Every part must hold: reproduced if all are; partially if all are at least partially (`partial='any'`: if some part is)."
    parts: tuple
    partial: str = 'all'
    def __init__(self, *parts, partial:str='all'):
        if not parts or not all(isinstance(p, Test) for p in parts): raise TypeError(f"AllOf needs one or more tests, got {parts!r}")
        if partial not in ('all', 'any'): raise ValueError(f"AllOf: partial must be 'all' or 'any', got {partial!r}")
        object.__setattr__(self, 'parts', tuple(parts)); object.__setattr__(self, 'partial', partial)
    def keys(self): return tuple(dict.fromkeys(k for p in self.parts for k in p.keys()))
    def leaves(self): return [l for p in self.parts for l in p.leaves()]
    def concrete(self, metrics): return [l for p in self.parts for l in p.concrete(metrics)]
    def spec(self): return dict(test='all', partial=self.partial, parts=[p.spec() for p in self.parts])
    def text(self):
        s = " and ".join(f"({p.text()})" for p in self.parts)
        return s + ("; partially if some part holds" if self.partial == 'any' and len(self.parts) > 1 else "")
    def evaluate(self, metrics): return _combine([p.evaluate(metrics) for p in self.parts], min if self.partial == 'all' else _some)

@dataclass(frozen=True, init=False)
class AnyOf(Test):
    "Some part must hold, and none may show a significant effect against the claim."
    parts: tuple
    def __init__(self, *parts):
        if not parts or not all(isinstance(p, Test) for p in parts): raise TypeError(f"AnyOf needs one or more tests, got {parts!r}")
        object.__setattr__(self, 'parts', tuple(parts))
    def keys(self): return tuple(dict.fromkeys(k for p in self.parts for k in p.keys()))
    def leaves(self): return [l for p in self.parts for l in p.leaves()]
    def concrete(self, metrics): return [l for p in self.parts for l in p.concrete(metrics)]
    def spec(self): return dict(test='any', parts=[p.spec() for p in self.parts])
    def text(self): return " or ".join(f"({p.text()})" for p in self.parts) + ("; none against the claim" if len(self.parts) > 1 else "")
    def evaluate(self, metrics): return _combine([p.evaluate(metrics) for p in self.parts], max)

@dataclass(frozen=True)
class BestAmong(Test):
    "`target` beats each of `others` on paired per-seed differences, with Bonferroni-adjusted joint intervals at `level`."
    target: str                # metric key (per-seed list) of the method the claim favours
    others: tuple              # metric keys (per-seed lists) of the alternatives
    op: str = '>'              # '>': larger is better; '<': smaller is better
    margin: float = 0.0        # the difference must clear this margin
    level: float = 0.95        # joint level over all comparisons
    what: str = ""             # the compared quantity in words
    def __post_init__(self):
        if isinstance(self.others, str) or not self.others: raise TypeError("BestAmong.others must be a non-empty tuple of metric keys")
        object.__setattr__(self, 'others', tuple(self.others))
        if self.op not in ('>', '<'): raise ValueError(f"BestAmong.op must be '>' or '<', got {self.op!r}")
    def _parts(self):
        lvl = 1 - (1 - self.level) / len(self.others)
        return [Compare(Diff(self.target, o), self.op, self.margin, level=lvl, null=0.0 if self._ok_null() else None,
                        what=f"{self.what + ': ' if self.what else ''}{self.target} − {o}") for o in self.others]
    def _ok_null(self) -> bool: return (self.margin >= 0) if self.op == '>' else (self.margin <= 0)
    def keys(self): return tuple(dict.fromkeys((self.target,) + self.others))
    def leaves(self): return self._parts()
    def spec(self): return dict(test='best', target=self.target, others=list(self.others), op=self.op, margin=self.margin, level=self.level)
    def text(self):
        better = 'larger' if self.op == '>' else 'smaller'
        return (f"{self.what + ' of ' if self.what else ''}{self.target} {better} than each of {', '.join(self.others)}"
                f"{f' by more than {self.margin:g}' if self.margin else ''} (paired over seeds, {self.level:.0%} joint Bonferroni intervals)")
    def evaluate(self, metrics): return _combine([p.evaluate(metrics) for p in self._parts()], min)

@dataclass(frozen=True)
class Each(Test):
    "One comparison for every metric whose key matches `pattern` (a glob, e.g. 'sae_gain/k*'): all must hold (`mode='any'`: some)."
    pattern: str
    op: str
    reproduced: float
    partially: float|None = None
    mode: str = 'all'
    what: str = ""
    null: float|None = None
    tol: float = 0.0           # recorded tolerance of every matching metric (see `Compare.tol`)
    level: float = 0.95   # interval level of each comparison read from per-seed lists (e.g. Bonferroni-adjusted over the matches)
    def __post_init__(self):
        if '*' not in self.pattern: raise ValueError(f"Each.pattern must contain '*', got {self.pattern!r}")
        if self.mode not in ('all', 'any'): raise ValueError(f"Each.mode must be 'all' or 'any', got {self.mode!r}")
        self.template('probe')   # validates the thresholds
    def template(self, key:str) -> Compare:
        return Compare(key, self.op, self.reproduced, self.partially, null=self.null, what=f"{self.what} [{key}]" if self.what else "", tol=self.tol, level=self.level)
    def keys(self): return (self.pattern,)
    def leaves(self): return [self.template(self.pattern)]
    def spec(self):
        d = dict(test='each', pattern=self.pattern, op=self.op, reproduced=self.reproduced, partially=self.partially, mode=self.mode, null=self.null)
        if self.tol: d['tol'] = self.tol
        if self.level != 0.95: d['level'] = self.level   # the default level leaves earlier hashes unchanged
        return d
    def text(self):
        s = f"{'every' if self.mode == 'all' else 'some'} {self.what or 'metric'} matching '{self.pattern}' {self.op} {self.reproduced:g}"
        s += f" (partially: {self.op} {self.partially:g})" if self.partially is not None else ""
        return s + (f" (± {self.tol:g} is within noise)" if self.tol else "")
    def matches(self, metrics:dict) -> list[str]: return sorted(k for k in metrics if fnmatch.fnmatchcase(k, self.pattern))
    def concrete(self, metrics): return [self.template(k) for k in self.matches(metrics)]
    def evaluate(self, metrics):
        keys = self.matches(metrics)
        if not keys: return Outcome(0, 2, False, f"no metric matches '{self.pattern}'")
        return _combine([self.template(k).evaluate(metrics) for k in keys], min if self.mode == 'all' else max)


# %%
acc, fair = Above('dacc', 0.0, what='Δacc'), Below('dunf', 0.01, what='Δunfairness')
both = AllOf(acc, fair)
V = lambda t, **m: t.evaluate(m).verdict
test_eq(V(both, dacc=E(.01, .02), dunf=E(-.01, 0.)), 'reproduced')
test_eq(V(both, dacc=E(.01, .02), dunf=E(-.01, .02)), 'inconclusive')           # one part undecided
test_eq(V(both, dacc=E(.01, .02), dunf=E(.02, .03)), 'not_reproduced')          # one part fails
test_eq(V(AllOf(acc, fair, partial='any'), dacc=E(.01, .02), dunf=E(.011, .02)), 'not_reproduced')   # fails against the claim: no partial credit
test_eq(V(AllOf(acc, Below('dunf', 0.01, null=0.05), partial='any'), dacc=E(.01, .02), dunf=E(.011, .02)), 'partially')  # short, not against
test_eq(V(AllOf(acc, fair, partial='any'), dacc=E(.01, .02), dunf=E(-.01, .02)), 'partially')   # some part holds: partially is established
test_eq(V(AllOf(rho2, acc), rho=E(.1, .4), dacc=E(.01, .02)), 'partially')
grow = AnyOf(*[Above(k, 0.0) for k in ('spd', 'eod', 'aod')])
test_eq(V(grow, spd=E(.01, .02), eod=E(-.01, .01), aod=E(-.01, .01)), 'reproduced')   # one grows, none shrinks
test_eq(V(grow, spd=E(.01, .02), eod=E(-.03, -.01), aod=E(-.01, .01)), 'not_reproduced')   # a significant shrink vetoes
test_eq(V(grow, spd=E(-.01, .02), eod=E(-.01, .01), aod=E(-.01, .01)), 'inconclusive')
test_eq(V(grow, spd=E(-.02, -.01), eod=E(-.03, -.01), aod=E(-.02, -.01)), 'not_reproduced')
# best among, on paired per-seed values with Bonferroni-adjusted joint intervals
rng = np.random.default_rng(0)
base = rng.normal(0.7, 0.02, 8)
best = BestAmong('mine', ('x', 'y'), what='AUC')
mm = dict(mine=list(base + 0.03 + rng.normal(0, .005, 8)), x=list(base), y=list(base + 0.01))
test_eq(best.evaluate(mm).verdict, 'reproduced')
test_eq(best.evaluate({**mm, 'y': list(base + 0.06)}).verdict, 'not_reproduced')    # another method is significantly better
test_eq(best.evaluate({**mm, 'y': list(np.asarray(mm['mine']) + rng.normal(0, .01, 8))}).verdict, 'inconclusive')
_lv = best._parts()[0].level; test_close(_lv, 1 - 0.05 / 2)
test_eq(mean_ci(np.asarray(mm['mine']) - base, _lv), as_estimate(list(np.asarray(mm['mine']) - base), _lv))
# every metric that matches a pattern
ek = Each('gain/k*', '>', 0.01, what='SAE − random AUC')
test_eq(V(ek, **{'gain/k16': E(.02, .03), 'gain/k128': E(.005, .015)}), 'inconclusive')
test_eq(V(ek, **{'gain/k16': E(.02, .03), 'gain/k128': E(.012, .02)}), 'reproduced')
test_eq(V(Each('gain/k*', '>', 0.01, tol=0.005), **{'gain/k16': E(.02, .03), 'gain/k128': E(.012, .02)}), 'inconclusive')   # within the tolerance
test_eq(ek.evaluate({}).verdict, 'inconclusive'); test_eq(ek.matches({'gain/k16': 1, 'gain/x': 2, 'other': 3}), ['gain/k16'])
test_fail(lambda: Each('gain', '>', 0), contains="must contain '*'"); test_fail(lambda: AllOf(), contains="one or more tests")
_e99 = Each('gain/k*', '>', 0.0, level=0.99)                                     # a joint (Bonferroni) level for lists read through a pattern
_gm = {'gain/k1': [0.1, 0.5, 0.2, 0.4, 0.3], 'gain/k2': [0.1, 0.5, 0.2, 0.4, 0.3]}
test_eq(_e99.template('gain/k1').level, 0.99); test_eq(ek.spec(), {**ek.spec()}); assert 'level' not in ek.spec() and _e99.spec()['level'] == 0.99
test_eq(_e99.evaluate(_gm).note.split('; ')[0], Compare('gain/k1', '>', 0.0, level=0.99).evaluate(_gm).note)
print(both.text()); print(grow.text()); print(best.text()); print(ek.text())

# %%
#| export
UNGRADED = ("illustrated", "not_testable_offline")

@dataclass(frozen=True)
class Change:
    "A dated entry in a claim's change log: the rule before, the rule after (the claim's rule text from then on), and why."
    date: str   # ISO date of the change, e.g. '2026-12-01'
    old: str    # the rule (or verdict status) before
    new: str    # the rule after: the claim's `rule_text()` as of this change
    why: str    # the reason, in a sentence a reader can check
    def __post_init__(self):
        import datetime as _dt
        try: _dt.date.fromisoformat(self.date)
        except (TypeError, ValueError): raise ValueError(f"Change.date must be an ISO date 'YYYY-MM-DD', got {self.date!r}") from None
        for k in ('old', 'new', 'why'):
            if not (isinstance(getattr(self, k), str) and getattr(self, k).strip()): raise ValueError(f"Change.{k} must be a non-empty string")

@dataclass(frozen=True)
class Claim:
    "One claim of a paper, declared before the run: what it says, the paper's number, and how it is graded (or why it is not)."
    id: str                   # stable identifier within the paper (lowercase, digits, '_')
    claim: str                # the claim, in one sentence
    paper: str                # the paper's statement or number for it
    rule: Test|None = None    # how it is graded (None for an ungraded claim)
    requires: tuple = ()      # conditions: tests that must hold for the experiment to test the claim
    headline: bool = False    # the abstract's main finding (exactly one per paper)
    status: str = "graded"    # 'graded', or 'illustrated' / 'not_testable_offline' for a claim that is not graded
    reason: str = ""          # context for the verdict; for an ungraded claim, why it is not graded
    ours: str = ""            # template of the "ours" column, e.g. 'Δacc {delta_acc:+.4f}' (default: the rule's measured values)
    log: tuple = ()           # Change entries, oldest first
    def __post_init__(self):
        import re
        if not (isinstance(self.id, str) and re.fullmatch(r"[a-z0-9][a-z0-9_]*", self.id)):
            raise ValueError(f"Claim.id must be lowercase letters, digits and '_', got {self.id!r}")
        for k in ('claim', 'paper', 'reason', 'ours'):
            if not isinstance(getattr(self, k), str): raise TypeError(f"Claim {self.id}: {k} must be a string")
        if not self.claim.strip(): raise ValueError(f"Claim {self.id}: the claim text is empty")
        requires = (self.requires,) if isinstance(self.requires, Test) else tuple(self.requires)
        object.__setattr__(self, 'requires', requires); object.__setattr__(self, 'log', tuple(self.log))
        if self.status == "graded":
            if not isinstance(self.rule, Test): raise TypeError(f"Claim {self.id}: a graded claim needs rule=<a Test>, got {self.rule!r}")
        elif self.status == "illustrated" and self.rule is not None:   # a graded illustration: the rule says whether the example shows it
            if not isinstance(self.rule, Test): raise TypeError(f"Claim {self.id}: rule= takes a Test, got {self.rule!r}")
            if not self.reason.strip(): raise ValueError(f"Claim {self.id}: an illustrated claim needs a reason (what the example can and cannot show)")
        elif self.status in UNGRADED:
            if self.rule is not None or requires: raise ValueError(f"Claim {self.id}: an {self.status} claim has no rule or conditions")
            if not self.reason.strip(): raise ValueError(f"Claim {self.id}: an {self.status} claim needs a reason (why it is not graded)")
        else: raise ValueError(f"Claim {self.id}: status must be 'graded' or one of {list(UNGRADED)}, got {self.status!r}")
        for c in requires:
            if not isinstance(c, Test): raise TypeError(f"Claim {self.id}: requires= takes tests, got {c!r}")
            if c.has_partial(): raise ValueError(f"Claim {self.id}: a condition has no partial level; it holds or it does not")
        if not isinstance(self.headline, (bool, np.bool_)): raise TypeError(f"Claim {self.id}: headline must be True or False")
        if not all(isinstance(e, Change) for e in self.log): raise TypeError(f"Claim {self.id}: log= takes Change entries")
        if [e.date for e in self.log] != sorted(e.date for e in self.log): raise ValueError(f"Claim {self.id}: log entries must be oldest first")
    def keys(self) -> tuple[str, ...]:
        "Every metric key the rule and the conditions read."
        tests = ([self.rule] if self.rule else []) + list(self.requires)
        return tuple(dict.fromkeys(k for t in tests for k in t.keys()))
    def rule_text(self) -> str:
        "The rule in words, written from the rule itself ('' for an ungraded claim)."
        if self.rule is None: return ""
        s = f"{'illustrated' if self.status == 'illustrated' else 'reproduced'} if {self.rule.text()}"
        if self.rule.has_partial() or (isinstance(self.rule, AllOf) and self.rule.partial == 'any'): s += "; partially at the weaker level"
        return s + "; intervals must clear each threshold, one across it is inconclusive; an effect against the claim is not reproduced"
    def condition_text(self) -> str:
        "The conditions in words ('' if none)."
        return " and ".join(c.text() for c in self.requires)
    def spec(self) -> dict:
        "What grading depends on, canonically: rule, conditions, status and headline (not the wording of the texts)."
        return dict(id=self.id, status=self.status, headline=bool(self.headline),
                    rule=self.rule.spec() if self.rule else None, requires=[c.spec() for c in self.requires])
    def hash(self) -> str:
        "A short content hash of `spec()`: it changes exactly when the rule, a condition, the status or the headline flag does."
        return hashlib.sha256(json.dumps(self.spec(), sort_keys=True).encode()).hexdigest()[:12]

def check_claims(claims) -> list[Claim]:
    "Validate a claims table: Claim objects, unique ids, exactly one headline; returns it as a list."
    claims = list(claims)
    if not claims: raise ValueError("a claims table needs at least one claim")
    bad = [c for c in claims if not isinstance(c, Claim)]
    if bad: raise TypeError(f"a claims table holds Claim objects, got {short_repr(bad[0])}")
    ids = [c.id for c in claims]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup: raise ValueError(f"claim ids must be unique; repeated: {dup}")
    heads = [c.id for c in claims if c.headline]
    if len(heads) != 1: raise ValueError(f"exactly one claim must be the headline; found {len(heads)}: {heads}")
    return claims

def claims_hash(claims) -> str:
    "A short content hash of a whole claims table (the claims' hashes, in order)."
    return hashlib.sha256("|".join(f"{c.id}:{c.hash()}" for c in check_claims(claims)).encode()).hexdigest()[:12]

def logged_claim(date:str, id, claim, paper, rule=None, *, old:str|None=None, why:str="", more=(), **kw) -> Claim:
    "A `Claim` whose log starts on `date` with its rule before (`old`) and the rule written from `rule` now (an ungraded claim's status), then the later changes `more`; without `old`, just the claim."
    c = Claim(id, claim, paper, rule, **kw)
    return c if old is None else Claim(id, claim, paper, rule, **kw, log=[Change(date, old, c.rule_text() or c.status, why), *more])


# %%
c1 = Claim("gaps_grow", "Fairness gaps grow under ensembling", "SPD 0.173 → 0.194", grow, headline=True,
           requires=AtLeast('binds', 0.8, what='share of seeds where the constraint binds'))
c2 = Claim("real_data", "The effect appears on face data", "FairFace", status="not_testable_offline", reason="needs FairFace and a GPU")
test_eq(check_claims([c1, c2]), [c1, c2]); test_eq(c1.keys(), ('spd', 'eod', 'aod', 'binds'))
assert c1.rule_text().startswith("reproduced if (spd > 0) or (eod > 0) or (aod > 0); none against the claim")
test_eq(c1.condition_text(), "share of seeds where the constraint binds >= 0.8")
test_eq(len(c1.hash()), 12); test_eq(c1.hash(), Claim("gaps_grow", "other words", "other number", grow, headline=True, requires=c1.requires).hash())
assert c1.hash() != Claim("gaps_grow", "x", "y", AnyOf(*[Above(k, 0.01) for k in ('spd', 'eod', 'aod')]), headline=True, requires=c1.requires).hash()
assert claims_hash([c1, c2]) != claims_hash([c2, c1])
test_fail(lambda: check_claims([c2]), contains="exactly one claim must be the headline; found 0")
test_fail(lambda: check_claims([c1, c1]), contains="repeated: ['gaps_grow']")
test_fail(lambda: Claim("Bad Id", "c", "p", grow), contains="Claim.id")
test_fail(lambda: Claim("x", "c", "p"), contains="needs rule=")
test_fail(lambda: Claim("x", "c", "p", status="illustrated"), contains="needs a reason")
test_fail(lambda: Claim("x", "c", "p", grow, status="not_testable_offline", reason="r"), contains="has no rule")
test_eq(Claim("x", "c", "p", grow, status="illustrated", reason="r").status, "illustrated")   # an illustration may carry a rule (see grade)
test_fail(lambda: Claim("x", "c", "p", grow, requires=rho2), contains="no partial level")
test_fail(lambda: Claim("x", "c", "p", grow, status="reproduced"), contains="status must be")
test_fail(lambda: Change("yesterday", "a", "b", "c"), contains="ISO date")
test_fail(lambda: Claim("x", "c", "p", grow, log=[Change("2026-12-02", "a", "b", "c"), Change("2026-12-01", "a", "b", "c")]), contains="oldest first")
_later = Change("2026-12-04", "a", "b", "c")
_lc = logged_claim("2026-12-02", "gaps_grow", "c", "p", grow, old="reproduced if spd > 0", why="w", more=(_later,), headline=True)
test_eq([e.date for e in _lc.log], ["2026-12-02", "2026-12-04"]); test_eq(_lc.log[0].new, _lc.rule_text()); test_eq(_lc.log[1], _later)
test_eq(_lc.log[0].old, "reproduced if spd > 0"); test_eq(_lc.hash(), Claim("gaps_grow", "c", "p", grow, headline=True).hash())   # the log is not graded
test_eq(logged_claim("2026-12-02", "real_data", "c", "p", status="not_testable_offline", reason="r", old="graded before", why="w").log[0].new, "not_testable_offline")
test_eq(logged_claim("2026-12-02", "x", "c", "p", grow).log, ())


# %%
#| export
class _Fields(dict):
    "Metric lookup for `str.format_map` in 'ours' templates: Estimates and per-seed lists format as intervals, missing keys as 'n/a'."
    def __missing__(self, k): return _Shown(None)

class _Shown:
    def __init__(self, x): self.x = x
    def __format__(self, spec):
        if self.x is None: return "n/a"
        try: x = as_estimate(self.x)
        except TypeError: return format(self.x, spec) if spec and not isinstance(self.x, str) else str(self.x)
        return _fmt(x, spec)

def ours_text(claim:Claim, metrics:dict) -> str:
    "The 'ours' column of a claim: its template filled from `metrics`, or the measured value of each quantity the rule reads."
    if claim.ours: return string.Formatter().vformat(claim.ours, (), _Fields({k: _Shown(v) for k, v in metrics.items()}))
    if claim.rule is None: return ""
    return "; ".join(dict.fromkeys(f"{l.name()} = {_fmt(_read(l.of, metrics, l.level))}" for l in claim.rule.concrete(metrics)))

def grade_claim(claim:Claim, metrics:dict) -> Verdict:
    "The verdict of one claim on `metrics`: ungraded claims keep their status; a failed condition makes it inconclusive."
    base = dict(claim=claim.claim, paper=claim.paper, headline=bool(claim.headline), id=claim.id, claim_hash=claim.hash(),
                conditions=claim.condition_text(), changes=[asdict(e) for e in claim.log])
    ours = ours_text(claim, metrics)
    if claim.status in UNGRADED and claim.rule is None:
        return Verdict(ours=ours, verdict=claim.status, reason=claim.reason, rule="", **base)
    o = claim.rule.evaluate(metrics)
    if claim.status == "illustrated":   # a graded illustration: shown where the rule would say reproduced; otherwise the rule's word
        o = o._replace(note=o.note.replace("clears the reproduced threshold", "clears the threshold"))
    failed = [(c, oc) for c in claim.requires for oc in [c.evaluate(metrics)] if oc.verdict != 'reproduced']
    if failed:
        why = "; ".join(f"{c.text()} — {oc.note}" for c, oc in failed)
        reason = "; ".join(s for s in (f"condition not met: {why}", f"the rule alone would give {o.verdict.replace('_', ' ')} ({o.note})", claim.reason) if s)
        return Verdict(ours=ours, verdict='inconclusive', reason=reason, rule=claim.rule_text(), condition_met=False, **base)
    word = 'illustrated' if claim.status == 'illustrated' and o.verdict == 'reproduced' else o.verdict
    return Verdict(ours=ours, verdict=word, reason="; ".join(s for s in (claim.reason, o.note) if s), rule=claim.rule_text(),
                   condition_met=True if claim.requires else None, **base)

def grade(claims, metrics:dict) -> list[Verdict]:
    "The one grader: the verdict of every claim of a claims table on one run's `metrics`."
    claims = check_claims(claims)
    metrics = dict(metrics)
    return [grade_claim(c, metrics) for c in claims]

def _verdict_frame():
    import pandas as pd
    class VerdictTable(pd.DataFrame):
        "A DataFrame whose notebook display (HTML) shows every character of the claims and reasons; its plain-text form cuts cells at 200."
        @property
        def _constructor(self): return VerdictTable
        def _repr_html_(self):
            with pd.option_context('display.max_colwidth', None): return super()._repr_html_()
        def __repr__(self):   # the text form is stored beside the HTML in notebooks: no line of thousands of characters
            with pd.option_context('display.max_colwidth', 200): return super().__repr__()
    return VerdictTable

def claims_table(claims):
    "The claims table as a reader sees it: id, claim, the paper's number, the rule and conditions (written from the rules), status and change log."
    import pandas as pd
    rows = [dict(id=c.id, headline='★' if c.headline else '', claim=c.claim, paper=c.paper,
                 rule=c.rule_text() or f"not graded: {c.status.replace('_', ' ')} — {c.reason}", conditions=c.condition_text(),
                 changes=" | ".join(f"{e.date}: {e.old} → {e.new} ({e.why})" for e in c.log)) for c in check_claims(claims)]
    return _verdict_frame()(rows)


# %%
m = dict(spd=E(.01, .02), eod=E(-.01, .01), aod=E(-.01, .01), binds=0.9, dacc=[0.01, 0.02, 0.015], unused="text")
v1, v2 = grade([c1, c2], m)
test_eq((v1.verdict, v1.id, v1.headline, v1.condition_met, v1.claim_hash), ('reproduced', 'gaps_grow', True, True, c1.hash()))
test_eq(v1.rule, c1.rule_text()); test_eq(v1.conditions, c1.condition_text())
test_eq((v2.verdict, v2.rule, v2.reason), ('not_testable_offline', '', 'needs FairFace and a GPU'))
# a condition that is not established: inconclusive, with what the rule alone would give
v = grade([c1, c2], {**m, 'binds': 0.6})[0]
test_eq((v.verdict, v.condition_met), ('inconclusive', False))
assert v.reason.startswith("condition not met: share of seeds where the constraint binds >= 0.8 — ") and "the rule alone would give reproduced" in v.reason, v.reason
test_eq(grade([c1, c2], {**m, 'binds': None})[0].verdict, 'inconclusive')
# "ours": the measured values the rule reads, or a template
test_eq(v1.ours.split("; ")[0], "spd = 0.015 [0.01, 0.02] (n = 5)")
c3 = Claim("acc", "Ensembles are more accurate", "+2.2 pp", Above('dacc', 0.0, what='Δacc'), ours="Δacc {dacc:+.3f}; note {unused}; {absent}")
test_eq(grade([c1, c3], m)[1].ours, f"Δacc {mean_ci([0.01, 0.02, 0.015]):+.3f} (n = 3); note text; n/a")
test_eq(grade([c1, c3], m)[1].verdict, 'reproduced')
c4 = Claim("acc", "c", "p", Above('dacc', 0.0), log=[Change("2026-12-01", "reproduced if Δacc > 0 (point)", "reproduced if dacc > 0 (interval)", "a point cannot be told from noise")])
test_eq(grade([c1, c4], m)[1].changes, [dict(date="2026-12-01", old="reproduced if Δacc > 0 (point)", new="reproduced if dacc > 0 (interval)", why="a point cannot be told from noise")])
ct = claims_table([c1, c2, c4]); test_eq(list(ct.id), ['gaps_grow', 'real_data', 'acc']); assert ct.changes[2].startswith("2026-12-01: ")
test_eq(grade([c1, c2], m), grade([c1, c2], m))                                  # deterministic
# a graded illustration: 'illustrated' where the rule establishes the phenomenon, otherwise the rule's own word (it can fail)
c5 = Claim("shows", "The constructed example shows the phenomenon", "conceptual, no numbers", Below('err', 0.25, what='error'), status="illustrated",
           reason="one constructed example")
test_eq([grade([c1, c5], {**m, 'err': e})[1].verdict for e in (E(.1, .2), E(.2, .3), E(.3, .4))], ['illustrated', 'inconclusive', 'not_reproduced'])
assert c5.rule_text().startswith("illustrated if error < 0.25")
test_fail(lambda: Claim("x", "c", "p", grow, status="illustrated"), contains="needs a reason")
ct

# %%
#| export
POSITIONS = ("clear", "partial", "at", "straddle", "short", "opposite", "nan", "single")

def _placement(leaf:Compare, where:str) -> tuple[float, float]|None:
    "An interval [lo, hi] that puts `leaf`'s measured value at `where` relative to its thresholds (None if impossible)."
    sgn = 1.0 if leaf.up else -1.0
    R, N = sgn * leaf.reproduced, sgn * leaf.null
    W = sgn * (leaf.partially if leaf.partially is not None else leaf.reproduced)
    d, t = max(abs(R - W), abs(W - N), 0.05 * max(1.0, abs(R))), leaf.tol    # the grader widens an interval by the tolerance t
    eps = 1e-9 * max(1.0, abs(R), d)   # 'at': the lower end a hair below R, so that rounding in a per-seed list's t-interval cannot lift it above R
    iv = {"clear": (R + d + t, R + 2 * d + t), "at": (R - eps, R + d), "straddle": (W - d / 2, W + d / 2), "opposite": (N - 2 * d - t, N - d - t),
          "partial": (W + t + (R - W - 2 * t) / 4, W + t + 3 * (R - W - 2 * t) / 4) if R - W > 2 * t else None,
          "short": (N + t + (W - N - 2 * t) / 4, N + t + 3 * (W - N - 2 * t) / 4) if W - N > 2 * t else None}.get(where)
    if iv is None: return None
    lo, hi = iv
    return (lo, hi) if sgn > 0 else (-hi, -lo)

def synthetic_metrics(tests, where:str|dict="clear", n:int=10) -> dict|None:
    "Metrics that put every comparison of `tests` at a position of `POSITIONS` (`where`: one for all, or {comparison index: position}, others 'clear'); None if two comparisons that share a key cannot both be placed."
    from scipy import stats
    tests = [tests] if isinstance(tests, Test) else list(tests)
    leaves, metrics, made = [], {}, {}
    for t in tests:
        if isinstance(t, Test):
            for l in t.leaves():
                if isinstance(l.of, str) and '*' in l.of:   # an Each pattern: two concrete keys
                    leaves += [Compare(l.of.replace('*', s), l.op, l.reproduced, l.partially, null=l.null, what=l.what, tol=l.tol) for s in ("syn_a", "syn_b")]
                else: leaves.append(l)
    z = np.arange(n, dtype=float); z = (z - z.mean()) / z.std(ddof=1) if n > 1 else np.zeros(1)
    for i, l in enumerate(leaves):
        pos = where if isinstance(where, str) else where.get(i, "clear")
        if pos not in POSITIONS: raise ValueError(f"position {pos!r} is not one of {POSITIONS}")
        iv = _placement(l, "clear" if pos in ("nan", "single") else pos)
        if iv is None: return None
        lo, hi = iv; mid = (lo + hi) / 2
        if isinstance(l.of, Diff):
            if pos == "nan": d = None
            elif pos == "single": d = np.array([mid])
            else: d = mid + (hi - lo) / 2 * math.sqrt(n) / float(stats.t.ppf(0.5 + l.level / 2, n - 1)) * z
            if pos == "at" and d is not None:   # rounding in a − b must not lift the near end past the threshold
                d = d - (1.0 if l.up else -1.0) * 1e-9 * max(1.0, abs(l.reproduced))
            a, b = l.of.a, l.of.b
            if d is None:
                if a in made and made[a] != "nan": return None
                metrics[a] = None; made[a] = "nan"; metrics.setdefault(b, [0.5] * n); made.setdefault(b, "base")
                continue
            fits = lambda k: metrics[k] is not None and len(metrics[k]) == len(d)   # a key placed before: measured, as many seeds
            if a in made and b in made:
                if not (fits(a) and fits(b)) or not np.allclose(np.asarray(metrics[a]) - np.asarray(metrics[b]), d): return None
            elif b in made:
                if not fits(b): return None
                metrics[a] = list(np.asarray(metrics[b]) + d); made[a] = pos
            elif a in made:
                if not fits(a): return None
                metrics[b] = list(np.asarray(metrics[a]) - d); made[b] = pos
            else: metrics[b] = [0.5] * len(d); metrics[a] = list(0.5 + d); made[a] = made[b] = pos
        else:
            v = (None if pos == "nan" else dict(value=mid, lo=None, hi=None, n=1, level=l.level) if pos == "single"
                 else dict(value=mid, lo=lo, hi=hi, n=n, level=l.level))
            if l.of in made and metrics[l.of] != v: return None
            metrics[l.of] = v; made[l.of] = pos
    return metrics



# %%
# every comparison of a claim placed clearly beyond its reproduced threshold, against the claim, or one seed only
test_eq(grade([c1], synthetic_metrics([c1.rule, *c1.requires]))[0].verdict, 'reproduced')
test_eq(grade([c1], synthetic_metrics([c1.rule, *c1.requires], {1: 'opposite'}))[0].verdict, 'not_reproduced')
test_eq(grade([c1], synthetic_metrics([c1.rule, *c1.requires], {3: 'straddle'}))[0].verdict, 'inconclusive')   # the condition
for pos in ('nan', 'single', 'straddle'): test_eq(grade([c1], synthetic_metrics([c1.rule, *c1.requires], pos))[0].verdict, 'inconclusive')
_sm = synthetic_metrics(best, 'clear'); test_eq(sorted(_sm), ['mine', 'x', 'y']); test_eq(best.evaluate(_sm).verdict, 'reproduced')
test_eq(best.evaluate(synthetic_metrics(best, {1: 'opposite'})).verdict, 'not_reproduced')
test_eq(rho2.evaluate(synthetic_metrics(rho2, 'partial')).verdict, 'partially')
test_eq(synthetic_metrics(AllOf(Above('x', 0), Below('x', -1)), 'clear'), None)       # one key cannot be on both sides
_sh = AllOf(Below(Diff('p', 'base'), 0), Below(Diff('q', 'base'), 0))                # two differences share a key
test_eq(synthetic_metrics(_sh, {0: 'single'}), None); test_eq(synthetic_metrics(_sh, {1: 'single'}), None)
_sa = AllOf(Above(Diff('mine', 'p'), 0), Above(Diff('mine', 'q'), 0))                 # the first key shared: NaN in one cannot be placed
test_eq(synthetic_metrics(_sa, {0: 'nan'}), None); test_eq(_sa.evaluate(synthetic_metrics(_sa, 'clear')).verdict, 'reproduced')
test_eq(_sh.evaluate(synthetic_metrics(_sh, 'clear')).verdict, 'reproduced')
test_eq(sorted(synthetic_metrics(ek)), ['gain/ksyn_a', 'gain/ksyn_b'])
_tl = Above('x', 1.0, 0.5, tol=0.1)                                                   # a tolerance moves the placements away from the thresholds
test_eq([_tl.evaluate(synthetic_metrics(_tl, w)).verdict for w in ('clear', 'partial', 'straddle', 'opposite')],
        ['reproduced', 'partially', 'inconclusive', 'not_reproduced'])
_shared = [Above(Diff('a', 'b'), 0.0), Above(Diff('a', 'c'), 0.0)]   # two differences that share a key
test_eq(synthetic_metrics(_shared, {0: 'nan'}), None); test_eq(sorted(synthetic_metrics(_shared, 'clear')), ['a', 'b', 'c'])
test_eq(synthetic_metrics(_shared, {0: 'single'}), None)


# %% [markdown]
# ## `Result` and `record`
#
# `record(result)` writes, into the run directory named by the `TRUSTLIB_RUN_DIR` environment variable
# (set by `trustlib.runs` for papermill runs) or into an explicit `run_dir`:
# `result.json` (paper, config, metrics, verdicts, timings), `tables/<name>.csv` and `figures/<name>.png`.
# Outside a run it does nothing, so interactive use of a notebook writes no files.
#
# Metrics are deterministic for a given seed. Wall and CPU time of the whole run go into `timings`, not
# `metrics`. Timings and benchmark measurements that a paper reports as metrics (time, peak memory) are
# machine-dependent: a metric whose name contains `seconds`, `throughput`, `speed/`, `wall_time` or
# `bench_` is left out by `deterministic_metrics` (the tests compare two runs with it).

# %%
#| export
@dataclass
class Result:
    paper: str                                            # notebook stem, e.g. 'disparate_benefits'
    config: dict[str, Any]                                # the validated config (`cfg.to_dict()`)
    metrics: dict[str, Any] = field(default_factory=dict) # JSON-able scalars (or small lists)
    verdicts: list[Verdict] = field(default_factory=list)
    tables: dict[str, Any] = field(default_factory=dict)  # name -> pandas DataFrame
    figures: dict[str, Any] = field(default_factory=dict) # name -> matplotlib Figure
    timings: dict[str, float] = field(default_factory=dict) # wall/CPU seconds (machine-dependent; never in `metrics`)
    claims_hash: str = ""                                 # content hash of the claims table that graded `verdicts`
    def to_json(self) -> dict[str, Any]:
        return to_jsonable(dict(paper=self.paper, config=self.config, metrics=self.metrics,
                                verdicts=[asdict(v) for v in self.verdicts], claims_hash=self.claims_hash,
                                tables=sorted(self.tables), figures=sorted(self.figures), timings=self.timings))
    def grade(self, claims) -> "Result":
        "Grade a claims table on this result's metrics with the one grader: sets `verdicts` and `claims_hash`; returns the result."
        self.verdicts, self.claims_hash = grade(claims, self.metrics), claims_hash(claims)
        return self
    def verdict_table(self):
        "The verdicts as a pandas DataFrame (shown in notebooks without truncating the text columns)."
        cols = ['claim', 'paper', 'ours', 'verdict', 'rule'] + (['conditions'] if any(v.conditions for v in self.verdicts) else []) + ['reason']
        return _verdict_frame()([asdict(v) for v in self.verdicts], columns=cols)

TIMING_MARKERS = ("seconds", "throughput", "speed/", "wall_time", "bench_")

def deterministic_metrics(metrics:dict) -> dict:
    "`metrics` without timings (names containing one of `TIMING_MARKERS`): what must repeat exactly for a seed."
    return {k: v for k, v in metrics.items() if not any(m in k for m in TIMING_MARKERS)}

def figure_png(fig) -> bytes:
    "The PNG bytes a run records for a matplotlib figure (110 dpi, tight bounding box); two runs with the same seed must give the same bytes."
    import io
    buf = io.BytesIO(); fig.savefig(buf, format='png', dpi=110, bbox_inches='tight'); return buf.getvalue()

def record(result:Result, run_dir:str|Path|None=None) -> Path|None:
    "Write `result` into `run_dir` (default: `$TRUSTLIB_RUN_DIR`); return the folder, or None outside a run."
    run_dir = run_dir or os.environ.get('TRUSTLIB_RUN_DIR')
    if not run_dir: return None
    run_dir = Path(run_dir)
    if run_dir.name.startswith('.tmp-') and not run_dir.is_dir():   # a runner's temporary folder, deleted: its runner was killed
        raise FileNotFoundError(f"the run's temporary folder {run_dir.name} is gone (the process running it was stopped and the folder cleaned); nothing recorded")
    run_dir.mkdir(parents=True, exist_ok=True)
    for name, df in result.tables.items(): atomic_write_text(run_dir/'tables'/f'{name}.csv', df.to_csv(index=True))
    for name, fig in result.figures.items(): atomic_write_bytes(run_dir/'figures'/f'{name}.png', figure_png(fig))
    payload = result.to_json()
    if os.environ.get('TRUSTLIB_REHEARSE', '').strip().lower() in ('1', 'true', 'yes'): payload['rehearsal'] = True   # stand-ins: never published
    write_json(run_dir/'result.json', payload)
    return run_dir


# %%
import pandas as pd, matplotlib
import matplotlib.pyplot as plt

# %%
matplotlib.use('Agg')
fig, ax = plt.subplots(figsize=(2, 2)); ax.plot([0, 1]); plt.close(fig)
r = Result('demo', dict(seed=0), dict(acc=np.float64(0.9)), [Verdict('c', 'p', 'o', 'partially', 'r', 'partially if acc > 0.8')],
           dict(t=pd.DataFrame(dict(a=[1, 2]))), dict(f=fig), dict(wall_seconds=1.5))
test_eq(record(r), None if not os.environ.get('TRUSTLIB_RUN_DIR') else Path(os.environ['TRUSTLIB_RUN_DIR']))
out = record(r, _d/'run')
_j = json.loads((out/'result.json').read_text())
test_eq(_j['metrics'], dict(acc=0.9)); test_eq(_j['timings'], dict(wall_seconds=1.5))
test_eq(_j['verdicts'][0], dict(claim='c', paper='p', ours='o', verdict='partially', reason='r', rule='partially if acc > 0.8', headline=False,
                                 id='', claim_hash='', conditions='', condition_met=None, changes=[]))
assert (out/'figures'/'f.png').stat().st_size > 100 and (out/'tables'/'t.csv').exists()
test_eq((out/'figures'/'f.png').read_bytes(), figure_png(fig))                  # what a run records, byte for byte
assert figure_png(fig)[:8] == b'\x89PNG\r\n\x1a\n'
_g, _ax = plt.subplots(figsize=(2, 2)); _ax.plot([1, 0]); plt.close(_g)
assert figure_png(_g) != figure_png(fig)                                        # another drawing, other bytes
test_eq(deterministic_metrics(dict(acc=0.9, train_seconds=1.2, throughput_ratio=3.0, bench_peak_mib=5.0)), dict(acc=0.9))
test_eq(Result('demo', {}).timings, {})
vt = r.verdict_table()
assert 'partially' in vt._repr_html_() and list(vt.columns) == ['claim', 'paper', 'ours', 'verdict', 'rule', 'reason']
long = Result('demo', {}, verdicts=[Verdict('c' * 300, 'p', 'o', 'reproduced', 'r', 'x' * 300)]).verdict_table()
assert 'c' * 300 in long._repr_html_() and 'x' * 300 in long._repr_html_()   # nothing is cut off
assert max(len(l) for l in repr(long).split("\n")) < 1000                       # the plain-text form stays readable
vt


# %% [markdown]
# ## Pre-registration and the verdict history
#
# A published page records which claims table graded it: `Result.claims_hash`, and each verdict's
# `claim_hash`. Every publication of a paper (`trustlib run PAPER --publish`) appends an entry to the paper's
# ledger, `nbs/results/ledger/<paper>.json`: the run, its commit and date, the claims hash, and per claim its
# id, hash, verdict and rule text. The ledger is committed, so the history of every verdict can be audited.
#
# Changing a rule, a threshold or a condition after a page was published is allowed only with a dated entry in
# that claim's change log (`Claim(log=[Change(date, old, new, why)])`). `check_preregistration` compares a claims
# table with the last publication in the ledger and lists every claim whose hash changed without such an entry
# (the tests run it for all 19 papers); `verdict_history` lists, between consecutive publications, every
# verdict that changed and why: the change-log entries made in between, or "same rule; the measurements
# changed". Entries marked `legacy` come from pages published before claims tables existed: they have no
# hashes, and their rules were prose.

# %%
#| export
def ledger_path(paper:str, root:str|Path|None=None) -> Path:
    "The committed ledger of `paper`'s publications: `<root>/nbs/results/ledger/<paper>.json` (root: the checkout)."
    if root is None:
        from trustlib.runs import find_root
        root = find_root()
    return Path(root)/'nbs'/'results'/'ledger'/f'{paper}.json'

def load_ledger(paper:str, root:str|Path|None=None) -> list[dict]:
    "The publications of `paper`, oldest first ([] if it was never published)."
    p = ledger_path(paper, root)
    return json.loads(p.read_text(encoding='utf-8'))['publications'] if p.exists() else []

def ledger_entry(run:dict) -> dict:
    "A ledger entry from a complete run's `metrics.json` (or `result.json` plus run facts): run, commit, date, claims hash, per-claim verdicts."
    vs, t = run.get('verdicts') or [], run.get('timings') or {}
    return dict(run_id=run.get('run_id'), date=(run.get('finished') or run.get('started') or '')[:10] or None,
                commit=run.get('git_commit'), profile=run.get('profile'), claims_hash=run.get('claims_hash') or None,
                cpu_seconds=t.get('cpu_seconds'), wall_seconds=t.get('wall_seconds'), load=_load_pair(t), machine=run.get('machine') or None,
                speed=dict(matmul_gflops=[t['gflops_start'], t['gflops_end']], copy_gbps=[t['gbps_start'], t['gbps_end']]) if 'gflops_start' in t else None,
                verdicts=[dict(id=v.get('id') or None, claim_hash=v.get('claim_hash') or None, verdict=v.get('verdict'),
                               claim=v.get('claim'), rule=v.get('rule', ''), ours=v.get('ours', ''), headline=bool(v.get('headline')))
                          for v in vs])

def _load_pair(t:dict) -> list|None:
    "[1-minute load average at the start, at the end] of a run, from its timings (None where the run did not record them)."
    return [t['load_start'], t['load_end']] if 'load_start' in t and 'load_end' in t else None

def append_ledger(paper:str, entry:dict, root:str|Path|None=None) -> Path:
    "Append a publication to `paper`'s ledger (atomically); the same run published twice is recorded once."
    pubs = load_ledger(paper, root)
    if entry.get('run_id') and any(p.get('run_id') == entry['run_id'] and p.get('commit') == entry.get('commit') for p in pubs):
        return ledger_path(paper, root)
    p = ledger_path(paper, root)
    atomic_write_text(p, json.dumps(dict(paper=paper, publications=pubs + [entry]), indent=1, ensure_ascii=False) + "\n")
    return p

def check_preregistration(claims, publications:list[dict]) -> list[str]:
    "Problems with a claims table against its last publication: a claim whose rule, condition, status or headline changed after it was published needs a change-log entry dated on or after that publication whose `new` is the current rule."
    claims = check_claims(claims)
    pubs = [p for p in publications if not p.get('legacy') and p.get('claims_hash')]
    if not pubs: return []
    last = pubs[-1]; date = last.get('date') or ''
    if claims_hash(claims) == last['claims_hash']: return []
    published = {v['id']: v for v in last['verdicts'] if v.get('id')}
    problems = []
    for c in claims:
        v = published.get(c.id)
        if v is None or v.get('claim_hash') == c.hash(): continue
        now = c.rule_text() or c.status
        entries = [e for e in c.log if e.date >= date]
        if not entries: problems.append(f"claim {c.id!r} changed after run {last['run_id']} was published ({date}) without a change-log entry")
        elif entries[-1].new != now: problems.append(f"claim {c.id!r}: its last change-log entry's new rule is not the current rule {now!r}")
    return problems

def verdict_history(publications:list[dict], claims=None) -> list[dict]:
    "Every verdict that changed between consecutive publications: claim id, runs, old → new verdict and rule, and why (change-log entries in between, from `claims`)."
    logs = {c.id: c.log for c in (claims or [])}
    out = []
    for a, b in zip(publications, publications[1:]):
        old = {v['id']: v for v in a['verdicts'] if v.get('id')}
        for v in b['verdicts']:
            o = old.get(v.get('id'))
            if o is None or o['verdict'] == v['verdict']: continue
            why = [f"{e.date}: {e.why}" for e in logs.get(v['id'], ()) if (a.get('date') or '') <= e.date <= (b.get('date') or '9999')]
            if not why: why = ["same rule; the measurements changed" if o.get('rule') == v.get('rule') else "the rule was rewritten"]
            out.append(dict(id=v['id'], claim=v.get('claim'), from_run=a.get('run_id'), to_run=b.get('run_id'), from_date=a.get('date'),
                            to_date=b.get('date'), old=o['verdict'], new=v['verdict'], old_rule=o.get('rule', ''), new_rule=v.get('rule', ''),
                            why="; ".join(why)))
    return out


# %%
_root = Path(_tf.mkdtemp())
_run = {**Result('toy', {}, dict(spd=E(.01, .02), eod=E(-.01, .01), aod=E(-.01, .01), binds=0.9), timings=dict(cpu_seconds=12.5)).grade([c1, c2]).to_json(),
        **dict(run_id='cpu-1', finished='2026-12-01T10:00:00+00:00', git_commit='abc', profile='cpu')}
_e = ledger_entry(_run)
test_eq((_e['claims_hash'], _e['verdicts'][0]['id'], _e['verdicts'][0]['claim_hash'], _e['verdicts'][0]['verdict']),
        (claims_hash([c1, c2]), 'gaps_grow', c1.hash(), 'reproduced'))
test_eq((_e['cpu_seconds'], _e['wall_seconds'], _e['load'], _e['machine']), (12.5, None, None, None))   # an older run recorded no load
_el = ledger_entry({**_run, 'timings': dict(cpu_seconds=12.5, wall_seconds=30.0, load_start=0.4, load_end=2.6), 'machine': dict(cpu='X', cores=2)})
test_eq((_el['wall_seconds'], _el['load'], _el['machine']), (30.0, [0.4, 2.6], dict(cpu='X', cores=2)))
test_eq(_el['speed'], None)                                           # a run without the speed probes
_es = ledger_entry({**_run, 'timings': dict(cpu_seconds=12.5, gflops_start=170.0, gflops_end=150.0, gbps_start=14.0, gbps_end=13.0)})
test_eq(_es['speed'], dict(matmul_gflops=[170.0, 150.0], copy_gbps=[14.0, 13.0]))
append_ledger('toy', _e, _root); append_ledger('toy', _e, _root)          # the same run twice is recorded once
test_eq(len(load_ledger('toy', _root)), 1); test_eq(load_ledger('absent', _root), [])
test_eq(check_preregistration([c1, c2], load_ledger('toy', _root)), [])
# the threshold changes after publication: refused without a dated change-log entry, accepted with one
_rule = AnyOf(*[Above(k, 0.005) for k in ('spd', 'eod', 'aod')])
_c1b = Claim("gaps_grow", c1.claim, c1.paper, _rule, requires=c1.requires, headline=True)
test_eq(check_preregistration([_c1b, c2], load_ledger('toy', _root)),
        ["claim 'gaps_grow' changed after run cpu-1 was published (2026-12-01) without a change-log entry"])
_log = Change("2026-12-02", c1.rule_text(), _c1b.rule_text(), "a gap of less than half a point is not a disparate benefit")
_c1c = Claim("gaps_grow", c1.claim, c1.paper, _rule, requires=c1.requires, headline=True, log=[_log])
test_eq(check_preregistration([_c1c, c2], load_ledger('toy', _root)), [])
_stale = Claim("gaps_grow", c1.claim, c1.paper, AnyOf(*[Above(k, 0.02) for k in ('spd', 'eod', 'aod')]), requires=c1.requires, headline=True, log=[_log])
assert "is not the current rule" in check_preregistration([_stale, c2], load_ledger('toy', _root))[0]   # edited again after the entry
# the next publication, and the history of verdicts between the two
_run2 = {**_run, **Result('toy', {}, dict(spd=E(.004, .008), eod=E(-.01, .01), aod=E(-.01, .01), binds=0.9)).grade([_c1c, c2]).to_json(),
         **dict(run_id='cpu-2', finished='2026-12-03T10:00:00+00:00')}
append_ledger('toy', ledger_entry(_run2), _root)
_h = verdict_history(load_ledger('toy', _root), [_c1c, c2])
test_eq([(h['id'], h['old'], h['new']) for h in _h], [('gaps_grow', 'reproduced', 'inconclusive')])
test_eq(_h[0]['why'], "2026-12-02: a gap of less than half a point is not a disparate benefit")
test_eq(check_preregistration([_c1c, c2], load_ledger('toy', _root)), [])   # published with the new rule
_h


# %% [markdown]
# ## `run_experiment`: run, time, summarise, record
#
# The experiment cell of every paper notebook is `result = run_experiment(run, cfg)`. It calls
# `run(cfg, **kwargs)`, measures the wall time and the CPU time (this process's threads, plus child
# processes that have finished and been waited for, such as a `multiprocessing` pool that was joined),
# stores them in `result.timings` as `wall_seconds` and `cpu_seconds` with the 1-minute load average at the start
# and the end (`load_start`, `load_end`: on a shared machine, other work inflates CPU time too) and the machine's speed
# just before and just after the run (`gflops_start`/`gflops_end`, a matrix multiply's GFLOP/s, and `gbps_start`/`gbps_end`,
# a memory copy's GB/s: `trustlib.bench.reference_probe`, taken outside the timed span). On a shared virtual machine
# the same code's CPU time moves by a tenth or more from one hour to the next, with the load average unchanged, when
# the host is busy; the probe lets a reader see whether a run was timed on a slow machine. It prints one line with
# the profile, the times and the verdict counts, records the result and returns it. A publication keeps the wall time,
# the load, the speed probes and the machine next to the CPU time in the ledger.

# %%
#| export
def _cpu_now() -> float:
    t = os.times()
    return time.process_time() + t.children_user + t.children_system

def _speed_probe() -> tuple[float, float]|None:
    "(matmul GFLOP/s, memory-copy GB/s) of the machine now, from a short `reference_probe` (None if it fails)."
    from trustlib.bench import reference_probe
    try: r = reference_probe(repeats=3, n=512, mib=32)
    except Exception: return None                                # a probe must never cost a run
    return float(r['matmul_gflops']), float(r['copy_gbps'])

def verdict_counts(verdicts) -> str:
    "'6 claims: 4 reproduced, 1 partially, 1 not_testable_offline' (counts in the order of `VERDICTS`)."
    names = [v.verdict for v in verdicts]
    n = len(names); head = f"{n} claim{'' if n == 1 else 's'}"
    parts = [f"{names.count(k)} {k}" for k in VERDICTS if k in names]
    return head + (": " + ", ".join(parts) if parts else "")

def run_experiment(run:Callable, cfg, claims=None, **kwargs) -> Result:
    "`run(cfg, **kwargs)`, timed (wall and CPU seconds, and the 1-minute load average and the machine's speed at its start and end, into `result.timings`), graded on `claims` (the paper's `CLAIMS`), summarised in one printed line, recorded; returns the `Result`."
    if claims is not None: check_claims(claims)
    from trustlib.bench import load_average                      # the 1-minute load average (NaN where the platform has none)
    p0 = _speed_probe()                                          # the machine's speed just before (not timed)
    w0, c0, l0 = time.perf_counter(), _cpu_now(), load_average()[0]
    result = run(cfg, **kwargs)
    wall, cpu = time.perf_counter() - w0, _cpu_now() - c0
    p1 = _speed_probe()
    if not isinstance(result, Result): raise TypeError(f"run_experiment: run() must return a Result, got {type(result).__name__}")
    if claims is not None:
        if result.verdicts: raise ValueError("run_experiment: run() returned verdicts, but a paper never grades itself: "
                                             "run() returns measurements and the claims table is graded here")
        result.grade(claims)
    result.timings.update(wall_seconds=round(wall, 3), cpu_seconds=round(cpu, 3))
    if math.isfinite(l0): result.timings.update(load_start=l0, load_end=load_average()[0])   # other work on the machine inflates CPU time too
    if p0 and p1: result.timings.update(gflops_start=p0[0], gflops_end=p1[0], gbps_start=p0[1], gbps_end=p1[1])
    profile = getattr(cfg, 'profile', None) or (result.config or {}).get('profile', '?')
    print(f"profile {profile} · {wall:.1f} s wall · {cpu:.1f} s CPU · {verdict_counts(result.verdicts)}")
    record(result)
    return result


# %%
import contextlib, io as _io, subprocess, types


# %%
def _toy_run(cfg, scale=1.0):
    t = time.process_time()
    while time.process_time() - t < 0.2: pass                       # 0.2 s of CPU in this process
    subprocess.run([sys.executable, '-c', "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"], check=True)
    x = mean_ci(np.array([0.3, 0.4, 0.5]) * scale)
    return Result('toy', dict(profile=cfg.profile, seed=cfg.seed), dict(gap=x.value, gap_lo=x.lo),
                  [judge("the gap is positive", "0.4", str(x), rule=Rule('>', 0.2, 0.0, what='gap'), value=x, headline=True),
                   judge("b", "p", "o", reproduced=False, partially=True, rule_text="r"),
                   judge("c", "p", "o", verdict="not_testable_offline", reason="needs a GPU")])
_cfg = types.SimpleNamespace(profile='smoke', seed=0)
_old = os.environ.get('TRUSTLIB_RUN_DIR'); os.environ['TRUSTLIB_RUN_DIR'] = str(_d/'exp')
try:
    with contextlib.redirect_stdout(_io.StringIO()) as _buf: res = run_experiment(_toy_run, _cfg, scale=2.0)
finally:
    if _old is None: del os.environ['TRUSTLIB_RUN_DIR']
    else: os.environ['TRUSTLIB_RUN_DIR'] = _old
_line = _buf.getvalue()
test_eq(_line.count("\n"), 1)
assert _line.startswith("profile smoke · ") and " s wall · " in _line, _line
assert _line.rstrip().endswith(" s CPU · 3 claims: 1 reproduced, 1 partially, 1 not_testable_offline"), _line
test_close(res.metrics['gap'], 0.8)                                  # kwargs reach run()
test_eq(sorted(res.timings), sorted(['cpu_seconds', 'wall_seconds', 'gflops_start', 'gflops_end', 'gbps_start', 'gbps_end']
                                    + (['load_start', 'load_end'] if hasattr(os, 'getloadavg') else [])))
assert all(res.timings[k] > 0 for k in ('gflops_start', 'gflops_end', 'gbps_start', 'gbps_end')), res.timings
assert all(res.timings[k] >= 0 for k in res.timings), res.timings
assert res.timings['cpu_seconds'] >= 0.45, res.timings              # includes the finished child process
assert res.timings['wall_seconds'] >= 0.45
_j = json.loads((_d/'exp'/'result.json').read_text())
test_eq(_j['timings'], res.timings); test_eq(sorted(_j['metrics']), ['gap', 'gap_lo'])
assert not any('seconds' in k for k in _j['metrics'])
test_eq(check_headline(res).claim, "the gap is positive")
test_eq(verdict_counts([]), "0 claims"); test_eq(verdict_counts(res.verdicts[:1]), "1 claim: 1 reproduced")
test_fail(lambda: run_experiment(lambda cfg: {}, _cfg), contains="must return a Result")
# the paper pattern: run() returns measurements, the claims table is graded by the one grader
_CLAIMS = [Claim("gap", "the gap is positive", "0.4", Above('gap', 0.2, 0.0, what='gap'), headline=True),
           Claim("gpu", "it scales", "8 GPUs", status="not_testable_offline", reason="needs a GPU")]
def _measure(cfg): return Result('toy', dict(profile=cfg.profile), dict(gap=[0.3, 0.4, 0.5]))
with contextlib.redirect_stdout(_io.StringIO()) as _buf: res2 = run_experiment(_measure, _cfg, _CLAIMS)
test_eq([v.verdict for v in res2.verdicts], ['partially', 'not_testable_offline']); test_eq(res2.claims_hash, claims_hash(_CLAIMS))
assert _buf.getvalue().rstrip().endswith("2 claims: 1 partially, 1 not_testable_offline")
test_fail(lambda: run_experiment(_toy_run, _cfg, _CLAIMS), contains="a paper never grades itself")
print(_line, end=''); res.verdict_table()
