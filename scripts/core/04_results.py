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
    def __post_init__(self):
        if self.verdict not in VERDICTS: raise ValueError(f"verdict {self.verdict!r} is not allowed; choose one of {list(VERDICTS)}")
        for k in ('claim', 'paper', 'ours', 'reason', 'rule'):
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

def bootstrap_ci(x, stat:Callable=np.mean, level:float=0.95, n_boot:int=2000, seed:int=0) -> Estimate:
    "`stat(x)` with a seeded percentile-bootstrap interval over `n_boot` resamples; n = 1 gives lo = hi = NaN."
    x = _sample(x); n = len(x); v = float(stat(x))
    if n == 1: return Estimate(v, math.nan, math.nan, 1, level)
    idx = np.random.default_rng(seed).integers(0, n, size=(int(n_boot), n))
    b = np.array([float(stat(x[i])) for i in idx])
    lo, hi = np.quantile(b, [0.5 - level / 2, 0.5 + level / 2])
    return Estimate(v, min(float(lo), v), max(float(hi), v), n, level)


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
assert not bootstrap_ci([1.0]).has_interval
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
    def to_json(self) -> dict[str, Any]:
        return to_jsonable(dict(paper=self.paper, config=self.config, metrics=self.metrics,
                                verdicts=[asdict(v) for v in self.verdicts], tables=sorted(self.tables), figures=sorted(self.figures),
                                timings=self.timings))
    def verdict_table(self):
        "The verdicts as a pandas DataFrame (shown in notebooks without truncating the text columns)."
        return _verdict_frame()([asdict(v) for v in self.verdicts], columns=['claim', 'paper', 'ours', 'verdict', 'rule', 'reason'])

def _verdict_frame():
    import pandas as pd
    class VerdictTable(pd.DataFrame):
        "A DataFrame whose notebook display shows every character of the claims and reasons."
        @property
        def _constructor(self): return VerdictTable
        def _repr_html_(self):
            with pd.option_context('display.max_colwidth', None): return super()._repr_html_()
        def __repr__(self):
            with pd.option_context('display.max_colwidth', None): return super().__repr__()
    return VerdictTable

TIMING_MARKERS = ("seconds", "throughput", "speed/", "wall_time", "bench_")

def deterministic_metrics(metrics:dict) -> dict:
    "`metrics` without timings (names containing one of `TIMING_MARKERS`): what must repeat exactly for a seed."
    return {k: v for k, v in metrics.items() if not any(m in k for m in TIMING_MARKERS)}

def record(result:Result, run_dir:str|Path|None=None) -> Path|None:
    "Write `result` into `run_dir` (default: `$TRUSTLIB_RUN_DIR`); return the folder, or None outside a run."
    run_dir = run_dir or os.environ.get('TRUSTLIB_RUN_DIR')
    if not run_dir: return None
    run_dir = Path(run_dir); run_dir.mkdir(parents=True, exist_ok=True)
    import io
    for name, df in result.tables.items(): atomic_write_text(run_dir/'tables'/f'{name}.csv', df.to_csv(index=True))
    for name, fig in result.figures.items():
        buf = io.BytesIO(); fig.savefig(buf, format='png', dpi=110, bbox_inches='tight'); atomic_write_bytes(run_dir/'figures'/f'{name}.png', buf.getvalue())
    write_json(run_dir/'result.json', result.to_json())
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
test_eq(_j['verdicts'][0], dict(claim='c', paper='p', ours='o', verdict='partially', reason='r', rule='partially if acc > 0.8', headline=False))
assert (out/'figures'/'f.png').stat().st_size > 100 and (out/'tables'/'t.csv').exists()
test_eq(deterministic_metrics(dict(acc=0.9, train_seconds=1.2, throughput_ratio=3.0, bench_peak_mib=5.0)), dict(acc=0.9))
test_eq(Result('demo', {}).timings, {})
vt = r.verdict_table()
assert 'partially' in vt._repr_html_() and list(vt.columns) == ['claim', 'paper', 'ours', 'verdict', 'rule', 'reason']
long = Result('demo', {}, verdicts=[Verdict('c' * 300, 'p', 'o', 'reproduced', 'r', 'x' * 300)]).verdict_table()
assert 'c' * 300 in long._repr_html_() and 'x' * 300 in long._repr_html_()   # nothing is cut off
vt


# %% [markdown]
# ## `run_experiment`: run, time, summarise, record
#
# The experiment cell of every paper notebook is `result = run_experiment(run, cfg)`. It calls
# `run(cfg, **kwargs)`, measures the wall time and the CPU time (this process's threads, plus child
# processes that have finished and been waited for, such as a `multiprocessing` pool that was joined),
# stores them in `result.timings` as `wall_seconds` and `cpu_seconds`, prints one line with the profile,
# the times and the verdict counts, records the result and returns it.

# %%
#| export
def _cpu_now() -> float:
    t = os.times()
    return time.process_time() + t.children_user + t.children_system

def verdict_counts(verdicts) -> str:
    "'6 claims: 4 reproduced, 1 partially, 1 not_testable_offline' (counts in the order of `VERDICTS`)."
    names = [v.verdict for v in verdicts]
    n = len(names); head = f"{n} claim{'' if n == 1 else 's'}"
    parts = [f"{names.count(k)} {k}" for k in VERDICTS if k in names]
    return head + (": " + ", ".join(parts) if parts else "")

def run_experiment(run:Callable, cfg, **kwargs) -> Result:
    "`run(cfg, **kwargs)`, timed (wall and CPU seconds into `result.timings`), summarised in one printed line, recorded; returns the `Result`."
    w0, c0 = time.perf_counter(), _cpu_now()
    result = run(cfg, **kwargs)
    wall, cpu = time.perf_counter() - w0, _cpu_now() - c0
    if not isinstance(result, Result): raise TypeError(f"run_experiment: run() must return a Result, got {type(result).__name__}")
    result.timings.update(wall_seconds=round(wall, 3), cpu_seconds=round(cpu, 3))
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
test_eq(sorted(res.timings), ['cpu_seconds', 'wall_seconds'])
assert res.timings['cpu_seconds'] >= 0.45, res.timings              # includes the finished child process
assert res.timings['wall_seconds'] >= 0.45
_j = json.loads((_d/'exp'/'result.json').read_text())
test_eq(_j['timings'], res.timings); test_eq(sorted(_j['metrics']), ['gap', 'gap_lo'])
assert not any('seconds' in k for k in _j['metrics'])
test_eq(check_headline(res).claim, "the gap is positive")
test_eq(verdict_counts([]), "0 claims"); test_eq(verdict_counts(res.verdicts[:1]), "1 claim: 1 reproduced")
test_fail(lambda: run_experiment(lambda cfg: {}, _cfg), contains="must return a Result")
print(_line, end=''); res.verdict_table()
