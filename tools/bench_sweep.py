"""Benchmark the sweep backends on one grid of smoke runs: local with 1 and 2 workers vs Ray with 2 CPUs.

    python tools/bench_sweep.py                          # sweeps/smoke.yaml's paper, seeds 0..7, profile smoke
    python tools/bench_sweep.py --n-runs 4 --out /tmp/bench_sweep.json

Each configuration sweeps the same grid into a fresh runs folder (nothing is skipped), one after the other:

- local, 1 worker (in this process), local, 2 worker processes, and Ray (`ray.init(num_cpus=2)`, started here);
- wall time of the sweep, throughput (runs per minute) and its ratio to local/1;
- per-run overhead: (sweep wall time x slots - sum of the runs' own `duration_s`) / runs, i.e. the time a
  run slot spends outside papermill's execution of the notebook (validation, scheduling, process start,
  writing and renaming the run folder, and idle slots at the end of the grid);
- CPU seconds of this process and its descendants (workers, kernels; for Ray also GCS, raylet and its workers);
- Ray's start-up cost: `ray.init` wall and CPU time, and the first (empty) task's round trip.

On a shared machine the numbers move with the other load: the load average is printed with them.
Prints a table and writes JSON to --out. Runs go to a temporary folder, never to runs/.
"""
import argparse, json, os, shutil, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def tree_cpu() -> float:
    "CPU seconds (user + system, children included) of this process and every live descendant."
    import psutil
    me = psutil.Process()
    total = 0.0
    for p in [me, *me.children(recursive=True)]:
        try: t = p.cpu_times()
        except psutil.Error: continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def timed(fn):
    t0, c0 = time.perf_counter(), tree_cpu()
    out = fn()
    return out, time.perf_counter() - t0, tree_cpu() - c0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--spec', default=str(ROOT/'sweeps'/'smoke.yaml'), help="a sweep spec; its grid is replaced by seed 0..n-1")
    ap.add_argument('--n-runs', type=int, default=8)
    ap.add_argument('--out', default=None, help="JSON file for the figures")
    ap.add_argument('--keep', action='store_true', help="keep the temporary runs folders")
    args = ap.parse_args(argv)
    import yaml
    import trustlib.runs as R
    spec = yaml.safe_load(Path(args.spec).read_text())
    spec['grid'] = dict(seed=list(range(args.n_runs)))
    tmp = Path(tempfile.mkdtemp(prefix='bench_sweep-'))
    res = dict(spec={k: spec[k] for k in spec if k != 'grid'}, n_runs=args.n_runs, cpus=os.cpu_count(), load_before=os.getloadavg())

    def one(label, slots, **kw):
        runs = tmp/label
        df, wall, cpu = timed(lambda: R.sweep(spec, runs_dir=runs, progress=False, **kw))
        assert list(df.status) == ['complete'] * args.n_runs and not df.skipped.any(), df
        durs = [R.load_run(p)['duration_s'] for p in df.path]
        row = dict(backend=label, slots=slots, wall_s=round(wall, 2), cpu_s=round(cpu, 2), runs_per_min=round(60 * args.n_runs / wall, 2),
                   mean_run_s=round(sum(durs) / len(durs), 2), overhead_per_run_s=round((wall * slots - sum(durs)) / len(durs), 2),
                   load=round(os.getloadavg()[0], 2))
        print(row, flush=True)
        return row, {rid: R.load_run(p)['metrics'] for rid, p in zip(df.run_id, df.path)}

    rows, metrics = [], {}
    for label, slots, kw in (('local-1', 1, dict(workers=1)), ('local-2', 2, dict(workers=2))):
        r, metrics[label] = one(label, slots, **kw); rows.append(r)
    import ray
    _, w_init, c_init = timed(lambda: ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False))
    f = ray.remote(num_cpus=1)(lambda: os.getpid())
    _, w_first, c_first = timed(lambda: ray.get(f.remote()))
    res['ray_startup'] = dict(init_wall_s=round(w_init, 2), init_cpu_s=round(c_init, 2), first_task_wall_s=round(w_first, 2),
                              first_task_cpu_s=round(c_first, 2))
    print('ray start-up:', res['ray_startup'], flush=True)
    r, metrics['ray-2'] = one('ray-2', 2, backend='ray'); rows.append(r)
    _, w_stop, _ = timed(ray.shutdown)
    res['ray_startup']['shutdown_wall_s'] = round(w_stop, 2)
    base = rows[0]['runs_per_min']
    for r in rows: r['throughput_vs_local_1'] = round(r['runs_per_min'] / base, 2)
    res['rows'] = rows
    timing = lambda k: any(s in k for s in ('seconds', 'throughput'))
    same = lambda a, b: all({k: v for k, v in a[rid].items() if not timing(k)} == {k: v for k, v in b[rid].items() if not timing(k)} for rid in a)
    res['metrics_identical_except_timings'] = dict(local_2=same(metrics['local-1'], metrics['local-2']), ray_2=same(metrics['local-1'], metrics['ray-2']))
    res['load_after'] = os.getloadavg()
    print(f"\n{args.n_runs} runs of {spec.get('paper') or spec.get('notebook')} ({spec.get('profile')}); {os.cpu_count()} CPUs, "
          f"load average before {res['load_before'][0]:.1f}, after {res['load_after'][0]:.1f}")
    cols = ['backend', 'slots', 'wall_s', 'cpu_s', 'runs_per_min', 'throughput_vs_local_1', 'mean_run_s', 'overhead_per_run_s', 'load']
    print(' | '.join(cols)); print(' | '.join('---' for _ in cols))
    for r in rows: print(' | '.join(str(r[c]) for c in cols))
    s = res['ray_startup']
    print(f"Ray start-up: ray.init {s['init_wall_s']} s wall, {s['init_cpu_s']} s CPU; first empty task {s['first_task_wall_s']} s; "
          f"shutdown {s['shutdown_wall_s']} s")
    print('metrics identical to local-1 (timings excluded):', res['metrics_identical_except_timings'])
    if args.out: Path(args.out).write_text(json.dumps(res, indent=1))
    if not args.keep: shutil.rmtree(tmp, ignore_errors=True)
    return res


if __name__ == '__main__':
    main()
