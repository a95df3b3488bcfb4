"""The 2-worker sweep in CPU time: the same grid of toy runs swept with 1 and with 2 local workers, interleaved rounds
(trustlib.bench), CPU seconds of the sweep and of every process it waited for (workers, papermill kernels).

    PYTHONPATH=. python tools/bench_sweep_cpu.py [--runs 4] [--repeats 3] [--notebook tests/fixtures/toy.ipynb]

On a shared machine the wall-clock speed-up of 2 workers measures the other load, not the sweep. CPU time does
not: with the same grid, 2 workers cost `ratio` = CPU(local-2) / CPU(local-1) times the CPU of 1 worker (the
price of parallelism: a second worker process, its imports, its scheduling). On 2 free cores and a grid that
splits evenly, the projected speed-up is 2 / ratio (CPU-normalised throughput relative to 1 worker). The
per-round ratio's median and 90 % interval over rounds are reported, with the load, the reference probe, and
a dated JSON/CSV under runs/bench/."""
import argparse, shutil, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--runs', type=int, default=4, help="grid points per sweep (seeds 0..runs-1)")
    ap.add_argument('--repeats', type=int, default=3)
    ap.add_argument('--notebook', default=str(ROOT/'tests'/'fixtures'/'toy.ipynb'))
    ap.add_argument('--out-dir', default=str(ROOT/'runs'/'bench'))
    args = ap.parse_args(argv)
    import trustlib.runs as R
    from trustlib.bench import interleaved, summarize, write_bench, reference_probe, load_average
    tmp = Path(tempfile.mkdtemp(prefix='bench_sweep_cpu-'))
    spec = dict(notebook=args.notebook, profile='smoke', grid=dict(seed=list(range(args.runs))))
    count = iter(range(10**6))
    def case(workers):
        def go():
            runs = tmp/f"w{workers}-{next(count)}"
            df = R.sweep(spec, workers=workers, runs_dir=runs, progress=False)
            assert list(df.status) == ['complete'] * args.runs and not df.skipped.any(), df
            shutil.rmtree(runs, ignore_errors=True)
            return dict(runs=args.runs)
        return go
    ref = reference_probe(repeats=3)
    samples = interleaved({'local-1': case(1), 'local-2': case(2)}, repeats=args.repeats, warmup=0)
    summ = summarize(samples, peer='local-1')
    r = summ.set_index('case').loc['local-2']
    proj = dict(cpu_ratio_2_to_1=round(r['ratio'], 3), cpu_ratio_interval=[round(r['ratio_lo'], 3), round(r['ratio_hi'], 3)],
                projected_speedup_2_free_cores=round(2 / r['ratio'], 2),
                projected_speedup_interval=[round(2 / r['ratio_hi'], 2), round(2 / r['ratio_lo'], 2)])
    path = write_bench('sweep_cpu', summ, samples, ref, out_dir=args.out_dir,
                       notes=dict(runs_per_sweep=args.runs, repeats=args.repeats, notebook=Path(args.notebook).name, **proj))
    print(summ.to_string(index=False)); print(proj); print('load', load_average(), '->', path)
    shutil.rmtree(tmp, ignore_errors=True)
    return proj

if __name__ == '__main__':
    main()
