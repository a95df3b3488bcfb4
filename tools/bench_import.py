"""CPU time of importing modules, each in a fresh python process (issue 42: `import trustlib.clustering.l2h`).

Every round imports each module once in a new interpreter (the order rotating from round to round, so that a change
of load hits all of them alike) and reads `time.process_time()` around the import statement inside that process.
Reported per module: the median CPU seconds over the rounds with its distribution-free 95 % interval (six rounds or
more), the samples, and the load average before and after. Not a test: run it by hand.

Usage:
    python tools/bench_import.py                      # trustlib.clustering.l2h, its L2H class (scikit-learn), numpy
    python tools/bench_import.py --repeats 9 trustlib.sketches.cardinality "from trustlib.clustering.l2h import L2H"
"""
import argparse, os, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEFAULT = ["trustlib.clustering.l2h", "from trustlib.clustering.l2h import L2H", "numpy"]


def import_cpu_seconds(statement: str) -> float:
    "CPU seconds of one import statement ('a.b' or 'from a import b') in a fresh interpreter."
    stmt = statement if statement.startswith(("import ", "from ")) else f"import {statement}"
    code = f"import time; c = time.process_time(); {stmt}; print(time.process_time() - c)"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    return float(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("modules", nargs="*", default=DEFAULT, help="modules or import statements")
    p.add_argument("--repeats", type=int, default=7, help="interleaved rounds (default 7; >= 6 give an interval)")
    p.add_argument("--out", default=None, help="also write the dated <date>-import.{json,csv} here (e.g. runs/bench)")
    a = p.parse_args(argv)
    from trustlib.results import median_ci
    load0 = os.getloadavg()[0]
    times, rows = {m: [] for m in a.modules}, []
    for r in range(a.repeats):
        for m in a.modules[r % len(a.modules):] + a.modules[:r % len(a.modules)]:
            times[m].append(import_cpu_seconds(m))
            rows.append(dict(case=m, round=r, cpu_s=times[m][-1], wall_s=float("nan"), load1=os.getloadavg()[0]))
    load1 = os.getloadavg()[0]
    for m, t in times.items():
        e = median_ci(t)
        print(f"{m}: median {e.value:.3f} s CPU [{e.lo:.3f}, {e.hi:.3f}] over {e.n} rounds; samples {[round(x, 3) for x in t]}")
    print(f"load average {load0:.1f} before, {load1:.1f} after")
    if a.out:
        import pandas as pd
        from trustlib.bench import summarize, write_bench, reference_probe
        samples = pd.DataFrame(rows)
        path = write_bench("import", summarize(samples), samples, reference_probe(repeats=3), a.out,
                           notes=dict(repeats=a.repeats, load1_before=load0, load1_after=load1, what="CPU seconds of a fresh interpreter importing the module"))
        print(f"written: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
