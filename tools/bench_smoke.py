"""CPU cost of every notebook's smoke run (the budget: ≤ 30 s CPU per notebook on 2 cores), as the test suite runs them.

    python tools/bench_smoke.py                      # every notebook, 5 interleaved rounds
    python tools/bench_smoke.py --repeats 3 dor l2h  # a subset (names match notebook stems)
    python tools/bench_smoke.py --compare-engines l2h mib   # trustlib's papermill engine against papermill's own

Each repetition executes the notebook with papermill in a fresh process, network blocked and IN_TEST=1 as in
tests/test_notebooks.py, with trustlib's papermill engine (`trustlib.runs.papermill_engine`: the notebook written at
cell boundaries at most every few seconds) or, with --compare-engines, also with papermill's own engine (written at
every cell's start and end); its CPU time is that process tree's. Cases run in a seeded shuffled order per round
(trustlib.bench.interleaved), beside a reference probe of the machine, and the summary (median, quartiles, range
of CPU seconds, median wall, budget ratio) goes to runs/bench/<date>-smoke.{json,csv}.
"""
import argparse, subprocess, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT)); sys.path.insert(0, str(ROOT / "tests"))
BUDGET_CPU_S = 30.0

def notebooks(names):
    from test_notebooks import notebooks as all_nbs
    nbs = all_nbs()
    return [r for r in nbs if not names or r.stem in names or str(r) in names]

_RUN = """import sys, papermill as pm
from trustlib.runs import kernel_sockets, papermill_engine
src, out, cwd, engine, smoke = sys.argv[1:]
with kernel_sockets() as kw:
    pm.execute_notebook(src, out, parameters=dict(profile='smoke') if smoke == '1' else {}, kernel_name='python3', cwd=cwd,
                        progress_bar=False, engine_name=papermill_engine() if engine == 'trustlib' else None, **kw)
"""

def case(rel, out, engine="trustlib"):
    from conftest import kernel_env, has_parameters_cell
    path = ROOT / "nbs" / rel
    smoke = "1" if has_parameters_cell(path) else "0"
    env = kernel_env(); env.pop("TRUSTLIB_RUN_DIR", None)
    def run():
        subprocess.run([sys.executable, "-c", _RUN, str(path), str(Path(out) / f"{engine}-{rel.name}"), str(path.parent), engine, smoke],
                       env=env, check=True, capture_output=True)
    return run

def main(argv=None):
    from trustlib.bench import interleaved, summarize, reference_probe, write_bench
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", help="notebook stems (default: all)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "runs" / "bench"))
    ap.add_argument("--compare-engines", action="store_true", help="also run each notebook with papermill's own engine, interleaved")
    a = ap.parse_args(argv)
    rels = notebooks(set(a.names))
    if not rels: raise SystemExit(f"no notebook matches {a.names}")
    ref = reference_probe()
    engines = ("trustlib", "papermill") if a.compare_engines else ("trustlib",)
    with tempfile.TemporaryDirectory() as tmp:
        cases = {(str(r) if e == "trustlib" else f"{r} [papermill engine]"): case(r, tmp, e) for r in rels for e in engines}
        samples = interleaved(cases, repeats=a.repeats, warmup=0, progress=True)
    s = summarize(samples)
    s["budget_cpu_s"] = BUDGET_CPU_S; s["within_budget"] = s["median"] <= BUDGET_CPU_S
    if a.compare_engines:   # per notebook: the median over rounds of trustlib's CPU / papermill's, in the same round
        import numpy as np
        for r in rels:
            t = samples[samples.case == str(r)].set_index("round").cpu_s
            q = samples[samples.case == f"{r} [papermill engine]"].set_index("round").cpu_s
            ratio = (t / q.reindex(t.index)).to_numpy(float)
            s.loc[s.case == str(r), ["ratio_to_papermill_engine", "ratio_lo", "ratio_hi", "saved_cpu_s"]] = [
                float(np.median(ratio)), float(ratio.min()), float(ratio.max()), float(np.median(q.reindex(t.index) - t))]
    p = write_bench("smoke-engines" if a.compare_engines else "smoke", s, samples, ref, a.out, notes=dict(repeats=a.repeats, engines=engines))
    print(s.sort_values("median", ascending=False).to_string(index=False, float_format=lambda x: f"{x:.2f}"))
    print(f"\nreference: {ref}\nwritten: {p}")

if __name__ == "__main__": main()
