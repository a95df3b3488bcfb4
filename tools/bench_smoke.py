"""CPU cost of every notebook's smoke run (the budget: ≤ 30 s CPU per notebook on 2 cores), as the test suite runs them.

    python tools/bench_smoke.py                      # every notebook, 5 interleaved rounds
    python tools/bench_smoke.py --repeats 3 dor l2h  # a subset (names match notebook stems)

Each repetition executes the notebook with papermill in a fresh process, network blocked and IN_TEST=1 as in
tests/test_notebooks.py; its CPU time is that process tree's. Cases run in a seeded shuffled order per round
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

def case(rel, out):
    from conftest import kernel_env, has_parameters_cell
    path = ROOT / "nbs" / rel
    params = ["-p", "profile", "smoke"] if has_parameters_cell(path) else []
    env = kernel_env(); env.pop("TRUSTLIB_RUN_DIR", None)
    def run():
        subprocess.run([sys.executable, "-m", "papermill", "-k", "python3", "--cwd", str(path.parent), "--no-progress-bar",
                        str(path), str(Path(out) / rel.name), *params], env=env, check=True, capture_output=True)
    return run

def main(argv=None):
    from trustlib.bench import interleaved, summarize, reference_probe, write_bench
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", help="notebook stems (default: all)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "runs" / "bench"))
    a = ap.parse_args(argv)
    rels = notebooks(set(a.names))
    if not rels: raise SystemExit(f"no notebook matches {a.names}")
    ref = reference_probe()
    with tempfile.TemporaryDirectory() as tmp:
        samples = interleaved({str(r): case(r, tmp) for r in rels}, repeats=a.repeats, warmup=0, progress=True)
    s = summarize(samples)
    s["budget_cpu_s"] = BUDGET_CPU_S; s["within_budget"] = s["median"] <= BUDGET_CPU_S
    p = write_bench("smoke", s, samples, ref, a.out, notes=dict(repeats=a.repeats))
    print(s.sort_values("median", ascending=False).to_string(index=False, float_format=lambda x: f"{x:.1f}"))
    print(f"\nreference: {ref}\nwritten: {p}")

if __name__ == "__main__": main()
