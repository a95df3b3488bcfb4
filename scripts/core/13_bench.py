# %% [markdown]
# # bench — benchmarks that mean something on a shared machine
#
# > Interleaved repeats with CPU and wall time, a reference probe measured in the same run (matrix-multiply FLOP/s and memory bandwidth), medians with spreads, and ratios to a peer, written as dated CSV and JSON.

# %% [markdown]
# trustlib's machines are shared: two cores that other work keeps busy. A benchmark that takes the best of N
# runs, or one sample, or wall time alone, measures the neighbours as much as the code. The rules here:
#
# - **Interleaved repeats.** Every case runs once per round, in a seeded shuffled order, for `repeats` rounds
#   (≥ 5), after a warm-up round. A slow minute on the machine then hits every case alike.
# - **CPU time first.** Each sample records the CPU seconds of this process and of the child processes it
#   waited for, and the wall seconds. Budgets are stated in CPU time; wall time is reported beside it.
# - **Medians with spreads, not minima.** The summary gives the median, the quartiles and the range per case.
# - **Ratios paired by round.** A case's speed relative to a peer is the median of the per-round ratios (the
#   two ran back to back in the same round), with a percentile interval over rounds.
# - **A reference in the same run.** `reference_probe` measures a float32 matrix multiply (GFLOP/s) and a memory
#   copy (GB/s) and records the load average, so a budget can be stated as a ratio to the machine.
#
# Nothing here asserts a time: tests assert behaviour; `make bench` reports.

# %%
#| default_exp bench

# %%
#| export
from __future__ import annotations
import json, os, platform, random, time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable
import numpy as np

# %%
#| hide
from fastcore.test import test_eq, test_fail, test_close


# %%
#| export
def cpu_now() -> float:
    "CPU seconds used so far by this process (all threads) and by the child processes it has waited for."
    t = os.times()   # children at clock-tick resolution; this process at the finer resolution of process_time
    return time.process_time() + t.children_user + t.children_system

def load_average() -> tuple[float, float, float]:
    "The 1, 5 and 15 minute load averages (NaN where the platform has none)."
    try: return tuple(round(x, 2) for x in os.getloadavg())
    except (AttributeError, OSError): return (float('nan'),) * 3

def reference_probe(repeats:int=5, n:int=768, mib:int=128) -> dict:
    "The machine now: float32 matmul GFLOP/s (`n`×`n`, torch if installed, else numpy) and memory-copy GB/s (`mib` MiB), medians of `repeats`, with the load average and CPU count."
    a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    try:
        import torch
        ta = torch.from_numpy(a); mm = lambda: ta @ ta; lib = f"torch {torch.__version__} ({torch.get_num_threads()} threads)"
    except ImportError: mm = lambda: a @ a; lib = f"numpy {np.__version__}"
    src = np.ones(mib * 2**20 // 8); dst = np.empty_like(src)
    flops, bw = [], []
    mm()
    for _ in range(repeats):
        t = time.perf_counter(); mm(); flops.append(2 * n**3 / (time.perf_counter() - t) / 1e9)
        t = time.perf_counter(); np.copyto(dst, src); bw.append(2 * src.nbytes / (time.perf_counter() - t) / 1e9)
    return dict(matmul_gflops=round(float(np.median(flops)), 2), copy_gbps=round(float(np.median(bw)), 2), matmul_lib=lib,
                load_average=load_average(), cpu_count=os.cpu_count(), machine=platform.machine(), python=platform.python_version())


# %%
_ref = reference_probe(repeats=3, n=256, mib=16)
assert _ref['matmul_gflops'] > 0 and _ref['copy_gbps'] > 0 and len(_ref['load_average']) == 3
_t = cpu_now(); _x = sum(i * i for i in range(200_000)); assert cpu_now() >= _t
_ref


# %%
#| export
def interleaved(cases:dict[str, Callable[[], Any]], # name -> zero-argument callable (one repetition of the case)
                repeats:int=5,                     # measured rounds (each case once per round)
                warmup:int=1,                      # unmeasured rounds first
                seed:int=0,                        # seed of the per-round shuffled order
                progress:bool=False):              # a tqdm bar over rounds
    "Run every case once per round in a seeded shuffled order; one row per (round, case) with CPU and wall seconds, the load, and any numbers the case returns as a dict."
    import pandas as pd
    if not cases: raise ValueError("interleaved: no cases to run")
    if not (isinstance(repeats, int) and repeats >= 1): raise ValueError(f"interleaved: repeats must be a positive integer, got {repeats!r}")
    names, rng, rows = list(cases), random.Random(seed), []
    from tqdm.auto import tqdm
    for r in tqdm(range(-warmup, repeats), desc="benchmark rounds", disable=not progress):
        order = names[:]; rng.shuffle(order)
        for name in order:
            c0, w0 = cpu_now(), time.perf_counter()
            out = cases[name]()
            wall, cpu = time.perf_counter() - w0, cpu_now() - c0
            if r < 0: continue
            extra = {k: v for k, v in out.items() if isinstance(v, (int, float))} if isinstance(out, dict) else {}
            rows.append(dict(case=name, round=r, cpu_s=cpu, wall_s=wall, load1=load_average()[0], **extra))
    return pd.DataFrame(rows)

def summarize(samples, peer:str|None=None, col:str="cpu_s", level:float=0.9):
    "Per case: median, quartiles and range of `col` (CPU seconds by default) and the median wall time; with `peer`, the median of per-round ratios case/peer with a percentile interval over rounds."
    import pandas as pd
    out = []
    for name, g in samples.groupby('case', sort=False):
        x = g[col].to_numpy(float)
        row = dict(case=name, n=len(x), median=float(np.median(x)), q25=float(np.quantile(x, .25)), q75=float(np.quantile(x, .75)),
                   min=float(x.min()), max=float(x.max()), wall_median=float(g['wall_s'].median()))
        if peer is not None:
            p = samples[samples.case == peer].set_index('round')[col]
            ratio = (g.set_index('round')[col] / p.reindex(g['round'])).dropna().to_numpy(float)
            lo, hi = np.quantile(ratio, [0.5 - level / 2, 0.5 + level / 2]) if len(ratio) else (np.nan, np.nan)
            row.update(ratio_to=peer, ratio=float(np.median(ratio)) if len(ratio) else np.nan, ratio_lo=float(lo), ratio_hi=float(hi))
        out.append(row)
    return pd.DataFrame(out)


# %%
_calls = []
def _busy(k):
    def f():
        _calls.append(k); t = time.process_time()
        while time.process_time() - t < 0.02 * k: pass   # CPU time, whatever the load
        return dict(items=k)
    return f
_s = interleaved({'one': _busy(1), 'three': _busy(3)}, repeats=5, warmup=1, seed=1)
test_eq(len(_s), 10); test_eq(sorted(_s.case.unique()), ['one', 'three']); test_eq(len(_calls), 12)   # warm-up round not recorded
assert _calls[:2] != _calls[2:4] or _calls[2:4] != _calls[4:6]          # the order changes between rounds
_sum = summarize(_s, peer='one')
_r = _sum.set_index('case')
assert _r.loc['three', 'median'] > 2 * _r.loc['one', 'median'] > 0 and _r.loc['one', 'ratio'] == 1.0
assert 2 < _r.loc['three', 'ratio'] < 4.5 and _r.loc['three', 'ratio_lo'] <= _r.loc['three', 'ratio'] <= _r.loc['three', 'ratio_hi']
test_eq(list(_s['items'].unique()), [1, 3] if _s['case'].iloc[0] == 'one' else [3, 1])   # numbers a case returns are kept
test_fail(lambda: interleaved({}), contains="no cases"); test_fail(lambda: interleaved({'a': _busy(1)}, repeats=0), contains="positive integer")
_sum


# %%
#| export
def write_bench(name:str,                  # benchmark name, e.g. 'sketches'
                summary,                   # `summarize` output (or any DataFrame of results)
                samples=None,              # `interleaved` output (every repeat), kept beside the summary
                reference:dict|None=None,  # `reference_probe()` measured in the same run
                out_dir:str|Path="runs/bench", # folder of the dated files
                notes:dict|None=None) -> Path:  # anything else worth keeping (parameters, versions)
    "Write `<out_dir>/<date>-<name>.json` (summary, samples, reference, notes, load) and `.csv` (the summary), atomically; returns the JSON path."
    from trustlib.results import write_json, atomic_write_text
    stamp = datetime.now(timezone.utc).strftime('%Y-%m-%dT%H%M%SZ')
    out = Path(out_dir); base = out / f"{stamp}-{name}"
    write_json(base.with_suffix('.json'), dict(name=name, when=stamp, reference=reference or {}, notes=notes or {},
                                              load_average_end=load_average(), summary=summary,
                                              samples=samples if samples is not None else []))
    atomic_write_text(base.with_suffix('.csv'), summary.to_csv(index=False))
    return base.with_suffix('.json')


# %%
import tempfile

# %%
_p = write_bench('demo', _sum, _s, _ref, tempfile.mkdtemp(), notes=dict(repeats=5))
_j = json.loads(_p.read_text())
test_eq(sorted(_j), ['load_average_end', 'name', 'notes', 'reference', 'samples', 'summary', 'when'])
test_eq(len(_j['samples']), 10); assert _p.with_suffix('.csv').read_text().startswith('case,n,median')

# %% [markdown]
# ## The results on the site
#
# `make bench` writes its dated files to `runs/bench/` (not committed: they belong to the machine that ran them).
# When the site is built, the section below is filled with the latest file of each benchmark found there
# (`bench_markdown`): its summary table, the load during the run and the reference probe, so every figure is read
# beside the machine it was measured on.
#
# <!-- trustlib:bench -->

# %%
#| export
BENCH_MARKER = "<!-- trustlib:bench -->"

def latest_bench(out_dir:str|Path="runs/bench") -> dict[str, dict]:
    "The latest `<date>-<name>.json` written by `write_bench` in `out_dir`, per benchmark name (unreadable files are skipped)."
    out = {}
    for p in sorted(Path(out_dir).glob("*.json")):   # the date stamp sorts: a later file replaces an earlier one
        try: j = json.loads(p.read_text())
        except (OSError, ValueError): continue
        if isinstance(j, dict) and j.get('name') and 'summary' in j: out[j['name']] = dict(j, path=p.name)
    return out

def _fmt(v) -> str:
    if isinstance(v, float): return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
    if isinstance(v, (list, tuple)): return "[" + ", ".join(_fmt(x) for x in v) + "]"
    return str(v).replace("|", "\\|")

def bench_markdown(out_dir:str|Path="runs/bench") -> str:
    "Markdown of the latest result of each benchmark in `out_dir` (summary table, notes, load, reference), or how to produce them."
    found = latest_bench(out_dir)
    if not found: return "No benchmark results were found when this site was built: run `make bench` (it writes `runs/bench/`), then rebuild the site."
    parts = []
    for name, j in sorted(found.items()):
        rows = j['summary'] if isinstance(j['summary'], list) else []
        cols = [c for c in ('case', 'n', 'median', 'q25', 'q75', 'min', 'max', 'wall_median', 'ratio', 'ratio_lo', 'ratio_hi', 'budget_cpu_s', 'within_budget') if rows and c in rows[0]]
        ref, notes = j.get('reference') or {}, j.get('notes') or {}
        parts.append(f"### {name}\n\n`{j['path']}`, measured {j.get('when', '?')}; CPU seconds unless named otherwise; "
                     f"load average at the end {_fmt(list(j.get('load_average_end') or []))}; reference: "
                     f"{_fmt(ref.get('matmul_gflops'))} GFLOP/s float32 matmul, {_fmt(ref.get('copy_gbps'))} GB/s copy, {ref.get('cpu_count', '?')} CPUs.")
        if cols:
            parts.append("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n"
                         + "\n".join("| " + " | ".join(_fmt(r.get(c)) for c in cols) + " |" for r in rows))
        if notes: parts.append("\n".join(f"- {k}: {_fmt(v)}" for k, v in notes.items()))
    return "\n\n".join(parts)


# %%
_bd = tempfile.mkdtemp()
test_eq(latest_bench(_bd), {}); assert "make bench" in bench_markdown(_bd)
write_bench('demo', _sum, _s, _ref, _bd, notes=dict(repeats=5))
_md_ = bench_markdown(_bd)
assert "### demo" in _md_ and "| case | n | median" in _md_ and "- repeats: 5" in _md_ and "GFLOP/s" in _md_
test_eq(list(latest_bench(_bd)), ['demo'])
