"""The cpu profile's cost across papers, in CPU seconds, from what the runs recorded (nothing is re-run):
each paper's newest cpu run with `timings.cpu_seconds`, from the ledgers (`nbs/results/ledger/<paper>.json`,
`cpu_seconds` of a publication) and the run folders (`runs/<paper>/cpu-*/metrics.json`) of the given checkouts.

    PYTHONPATH=. python tools/bench_cpu_total.py [CHECKOUT ...]     # default: this checkout

Prints a table (paper, CPU s, wall s, the 1-minute load average and the machine's matmul GFLOP/s at the run's start and end where they were recorded, date, source), the total over measured papers, the papers without a recorded
CPU time, and writes a dated JSON/CSV under runs/bench/ (trustlib.bench.write_bench). Budget: <= 300 CPU s a paper."""
import json, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BUDGET_S = 300

def collect(roots):
    from trustlib.config import PAPERS
    from trustlib.results import ledger_entry
    best = {}
    def offer(paper, cpu, wall, when, src, load=None, gflops=None):   # the newest wins; on the same date, the later one (ledgers list publications in order)
        if cpu is None: return
        if paper not in best or str(when) >= str(best[paper]["when"]):
            best[paper] = dict(paper=paper, cpu_s=float(cpu), wall_s=wall, load_start=(load or [None])[0], load_end=(load or [None, None])[1],
                               gflops_start=(gflops or [None])[0], gflops_end=(gflops or [None, None])[1], when=str(when), source=src)
    for root in map(Path, roots):
        for f in (root/'nbs'/'results'/'ledger').glob('*.json'):
            try: d = json.loads(f.read_text())
            except (OSError, ValueError): continue
            for p in d.get('publications', []):
                if p.get('profile') == 'cpu': offer(d.get('paper', f.stem), p.get('cpu_seconds'), p.get('wall_seconds'), p.get('date', ''), f"{root.name}:ledger", p.get('load'), (p.get('speed') or {}).get('matmul_gflops'))
        for f in (root/'runs').glob('*/cpu-*/metrics.json'):
            try: m = json.loads(f.read_text())
            except (OSError, ValueError): continue
            if m.get('status') != 'complete': continue
            e = ledger_entry(m)                                # the timings as a publication would keep them
            offer(m.get('paper', f.parts[-3]), e['cpu_seconds'], e['wall_seconds'], m.get('finished', ''), f"{root.name}:runs",
                  e['load'], (e['speed'] or {}).get('matmul_gflops'))
    names = [p.name for p in PAPERS]
    return [best[n] for n in names if n in best], [n for n in names if n not in best]

def main(argv=None):
    import pandas as pd
    from trustlib.bench import write_bench, load_average
    roots = (argv if argv is not None else sys.argv[1:]) or [str(ROOT)]
    rows, missing = collect(roots)
    df = pd.DataFrame(rows)
    total = float(df.cpu_s.sum()) if len(df) else 0.0
    notes = dict(measured=len(rows), missing=missing, total_cpu_s=round(total, 1), over_budget=[r['paper'] for r in rows if r['cpu_s'] > BUDGET_S],
                 roots=[str(r) for r in roots])
    if len(df): print(df.to_string(index=False))
    print(notes, 'load', load_average())
    if len(df): print('->', write_bench('cpu_total', df, reference={}, out_dir=ROOT/'runs'/'bench', notes=notes))
    return notes

if __name__ == '__main__':
    main()
