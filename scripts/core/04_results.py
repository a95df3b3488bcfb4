# %% [markdown]
# # results — what an experiment returns, and how it is recorded
#
# > What an experiment returns (`Result`, `Verdict`) and how it is written to disk, atomically.

# %% [markdown]
# A paper's `run(cfg)` returns a `Result`: scalar metrics, tables, figures, and the "paper vs. us"
# verdicts as data. `record` writes it into the run directory that `trustlib.runs` prepared.

# %%
#| default_exp results

# %%
#| export
from __future__ import annotations
import json, math, os, tempfile
from dataclasses import dataclass, field, asdict
from pathlib import Path
from typing import Any
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
# ## Verdicts
#
# Each paper notebook ends with "Paper vs. us": one `Verdict` per claim. The verdict is data — the results
# dashboard is built from these records — and must be one of four words.

# %%
#| export
VERDICTS = ("reproduced", "partially", "not_reproduced", "not_testable_offline")

@dataclass
class Verdict:
    claim: str   # the paper's claim, in one sentence
    paper: str   # the paper's number(s) for it
    ours: str    # our number(s), at the profile that was run
    verdict: str # one of VERDICTS
    reason: str  # why: scale, substitutions, what the numbers show
    def __post_init__(self):
        if self.verdict not in VERDICTS: raise ValueError(f"verdict {self.verdict!r} is not allowed; choose one of {list(VERDICTS)}")
        for k in ('claim', 'paper', 'ours', 'reason'):
            if not isinstance(getattr(self, k), str): raise TypeError(f"Verdict.{k} must be a string")


# %%
test_fail(lambda: Verdict("c", "1", "2", "yes", "r"), contains="choose one of")
Verdict("ensembles are better calibrated", "ECE 0.091 -> 0.046", "ECE 0.05 -> 0.03", "reproduced", "same direction")


# %% [markdown]
# ## `Result` and `record`
#
# `record(result)` writes, into the run directory named by the `TRUSTLIB_RUN_DIR` environment variable
# (set by `trustlib.runs` for papermill runs) or into an explicit `run_dir`:
# `result.json` (paper, config, metrics, verdicts), `tables/<name>.csv` and `figures/<name>.png`.
# Outside a run it does nothing, so interactive use of a notebook writes no files.
#
# Metrics are deterministic for a given seed, except timings and benchmark measurements (time, peak
# memory): a metric whose name contains `seconds`, `throughput`, `speed/`, `wall_time` or `bench_` is
# machine-dependent, and `deterministic_metrics` leaves it out (the tests compare two runs with it).

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
    def to_json(self) -> dict[str, Any]:
        return to_jsonable(dict(paper=self.paper, config=self.config, metrics=self.metrics,
                                verdicts=[asdict(v) for v in self.verdicts], tables=sorted(self.tables), figures=sorted(self.figures)))
    def verdict_table(self):
        "The verdicts as a pandas DataFrame (shown in notebooks without truncating the text columns)."
        return _verdict_frame()([asdict(v) for v in self.verdicts], columns=['claim', 'paper', 'ours', 'verdict', 'reason'])

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
r = Result('demo', dict(seed=0), dict(acc=np.float64(0.9)), [Verdict('c', 'p', 'o', 'partially', 'r')],
           dict(t=pd.DataFrame(dict(a=[1, 2]))), dict(f=fig))
test_eq(record(r), None if not os.environ.get('TRUSTLIB_RUN_DIR') else Path(os.environ['TRUSTLIB_RUN_DIR']))
out = record(r, _d/'run')
test_eq(json.loads((out/'result.json').read_text())['metrics'], dict(acc=0.9))
test_eq(json.loads((out/'result.json').read_text())['verdicts'][0]['verdict'], 'partially')
assert (out/'figures'/'f.png').stat().st_size > 100 and (out/'tables'/'t.csv').exists()
test_eq(deterministic_metrics(dict(acc=0.9, train_seconds=1.2, throughput_ratio=3.0, bench_peak_mib=5.0)), dict(acc=0.9))
vt = r.verdict_table()
assert 'partially' in vt._repr_html_() and list(vt.columns) == ['claim', 'paper', 'ours', 'verdict', 'reason']
long = Result('demo', {}, verdicts=[Verdict('c' * 300, 'p', 'o', 'reproduced', 'r')]).verdict_table()
assert 'c' * 300 in long._repr_html_()          # nothing is cut off
vt
