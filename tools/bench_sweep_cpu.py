"""The 2-worker sweep in CPU time: CPU-normalised throughput of the same grid swept with 1 and with 2 local workers.

    PYTHONPATH=. python tools/bench_sweep_cpu.py                       # paper l2h (sweeps/smoke.yaml), 4 grid points, 5 rounds
    PYTHONPATH=. python tools/bench_sweep_cpu.py --notebook tests/fixtures/toy.ipynb --runs 4   # pure overhead (no work)

Each case sweeps the grid (seeds 0..runs-1, profile smoke) into a fresh runs folder; the cases run in interleaved
rounds (trustlib.bench.interleaved, seeded shuffled order, one warm-up round). A case's CPU time is that of the whole
process tree: this process and every process it started (worker processes, papermill kernels), all of which have
been waited for when the sweep returns — the script checks that no descendant is left alive, so none is missed.

Throughput = runs completed / CPU seconds of the tree. On a shared machine the wall-clock speed-up of 2 workers
measures the other load; CPU time does not. On 2 free cores, 2 workers keep both cores busy, so the projected
speed-up over 1 worker is 2 × throughput(2) / throughput(1) (per round, paired; median and 90 % interval over rounds),
for a grid that splits evenly between the workers (an even number of equal grid points). The load average of every
sample, the reference probe and the summary go to runs/bench/<date>-sweep_cpu.{json,csv}."""
import argparse, shutil, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def live_descendants() -> list:
    "Descendants still alive, except multiprocessing's resource tracker (started once per process, it only waits)."
    import psutil
    out = []
    for p in psutil.Process().children(recursive=True):
        try:
            if p.status() == psutil.STATUS_ZOMBIE or any('resource_tracker' in a for a in p.cmdline()): continue
        except psutil.Error: continue
        out.append(p)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    src = ap.add_mutually_exclusive_group()
    src.add_argument('--paper', default=None, help="paper whose smoke profile is the grid point (default: l2h, as sweeps/smoke.yaml)")
    src.add_argument('--notebook', default=None, help="a parameterised notebook instead (tests/fixtures/toy.ipynb: no work, overhead only)")
    ap.add_argument('--runs', type=int, default=4, help="grid points per sweep (seeds 0..runs-1); even, so the 2 workers split it")
    ap.add_argument('--repeats', type=int, default=5)
    ap.add_argument('--out-dir', default=str(ROOT/'runs'/'bench'))
    args = ap.parse_args(argv)
    if args.repeats < 5: print("note: fewer than 5 rounds; the interval is rough", file=sys.stderr)
    import numpy as np
    import trustlib.runs as R
    from trustlib.bench import interleaved, summarize, write_bench, reference_probe, load_average
    target = dict(notebook=str(Path(args.notebook).resolve())) if args.notebook else dict(paper=args.paper or 'l2h')
    spec = dict(**target, profile='smoke', grid=dict(seed=list(range(args.runs))))
    tmp = Path(tempfile.mkdtemp(prefix='bench_sweep_cpu-'))
    count = iter(range(10**6))
    def case(workers):
        def go():
            runs = tmp/f"w{workers}-{next(count)}"
            df = R.sweep(spec, workers=workers, runs_dir=runs, progress=False)
            assert list(df.status) == ['complete'] * args.runs and not df.skipped.any(), df
            left = live_descendants()
            assert not left, f"processes still alive after the sweep (their CPU would be missed): {left}"
            shutil.rmtree(runs, ignore_errors=True)
            return dict(runs=args.runs)
        return go
    ref = reference_probe(repeats=3)
    samples = interleaved({'local-1': case(1), 'local-2': case(2)}, repeats=args.repeats, warmup=1, progress=True)
    samples['runs_per_cpu_s'] = samples['runs'] / samples['cpu_s']
    summ = summarize(samples, peer='local-1')
    # per round: throughput ratio 2 vs 1 = CPU(1) / CPU(2) for the same grid; projected speed-up on 2 free cores = 2 × that
    by = samples.pivot(index='round', columns='case', values='cpu_s')
    tr = (by['local-1'] / by['local-2']).to_numpy(float)
    lo, hi = np.quantile(tr, [0.05, 0.95])
    thr = samples.groupby('case')['runs_per_cpu_s'].median()
    proj = dict(grid_point=target.get('paper') or Path(target['notebook']).name, runs_per_sweep=args.runs, rounds=args.repeats,
                runs_per_cpu_s_1=round(float(thr['local-1']), 4), runs_per_cpu_s_2=round(float(thr['local-2']), 4),
                cpu_s_per_run_1=round(float(by['local-1'].median()) / args.runs, 2), cpu_s_per_run_2=round(float(by['local-2'].median()) / args.runs, 2),
                throughput_ratio_2_to_1=round(float(np.median(tr)), 3), throughput_ratio_interval_90=[round(float(lo), 3), round(float(hi), 3)],
                projected_speedup_2_free_cores=round(2 * float(np.median(tr)), 2),
                projected_speedup_interval_90=[round(2 * float(lo), 2), round(2 * float(hi), 2)],
                load1_median=round(float(samples['load1'].median()), 2), load1_range=[float(samples['load1'].min()), float(samples['load1'].max())])
    path = write_bench('sweep_cpu', summ, samples, ref, out_dir=args.out_dir, notes=proj)
    print(summ.to_string(index=False)); print(proj); print('load', load_average(), '->', path)
    shutil.rmtree(tmp, ignore_errors=True)
    return proj

if __name__ == '__main__':
    main()
