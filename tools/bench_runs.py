"""Benchmark trustlib runs: papermill overhead per run, and sweep throughput with 1 vs 2 workers.

    python tools/bench_runs.py                                   # paper disparate_benefits, profile smoke
    python tools/bench_runs.py --notebook tests/fixtures/toy.ipynb -p sleep 1.0 --out /tmp/bench.json

1. Overhead: the notebook run through `trustlib.runs.run_notebook` (papermill: a fresh kernel, parameter
   injection, the executed notebook and metrics.json written, atomic rename) vs the same work in-process
   (a paper: `Config.from_params` + `run(cfg)` + `record`; a notebook: its code cells executed in a fresh
   namespace with the parameters applied), mean over --repeats runs after one warm-up run of each.
2. Throughput: a sweep of --n-runs grid points (seed 0..n-1, plus the -p parameters) with 1 and with 2
   workers (local backend), each into a fresh runs folder.

Prints a small table and writes JSON to --out. Runs go to a temporary folder, never to runs/.
"""
import argparse, importlib, json, os, platform, statistics, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    src = ap.add_mutually_exclusive_group()
    src.add_argument('--paper', default=None, help="paper name (default: disparate_benefits)")
    src.add_argument('--notebook', help="any parameterised notebook instead of a paper (e.g. tests/fixtures/toy.ipynb)")
    ap.add_argument('--profile', default='smoke')
    ap.add_argument('-p', '--param', nargs=2, action='append', metavar=('KEY', 'VALUE'), help="fixed parameter (YAML value)")
    ap.add_argument('--repeats', type=int, default=5, help="timed runs per method for the overhead")
    ap.add_argument('--n-runs', type=int, default=8, help="grid size of the sweeps (seed 0..n-1)")
    ap.add_argument('--workers', type=int, nargs='+', default=[1, 2])
    ap.add_argument('--out', help="write the results as JSON here")
    a = ap.parse_args(argv)
    if not a.notebook and not a.paper: a.paper = 'disparate_benefits'
    return a


def in_process_paper(paper, profile, params, run_dir):
    from trustlib.config import get_paper
    from trustlib.results import record
    mod = importlib.import_module(get_paper(paper).module)
    res = mod.run(mod.Config.from_params(profile, **params))
    record(res, run_dir)


def in_process_notebook(nb_path, profile, params, run_dir):
    "Execute the notebook's code cells in a fresh namespace (parameters applied after the parameters cell)."
    nb = json.loads(Path(nb_path).read_text())
    ns = {'__name__': '__bench__'}
    old_cwd, old_env = os.getcwd(), os.environ.get('TRUSTLIB_RUN_DIR')
    os.chdir(Path(nb_path).parent); os.environ['TRUSTLIB_RUN_DIR'] = str(run_dir)
    try:
        for c in nb['cells']:
            if c['cell_type'] != 'code': continue
            src = ''.join(c['source']) if isinstance(c['source'], list) else c['source']
            if any(l.lstrip().startswith(('%', '!')) for l in src.splitlines()): continue   # IPython magics
            exec(compile(src, f"<{Path(nb_path).name}>", 'exec'), ns)
            if 'parameters' in c.get('metadata', {}).get('tags', []): ns.update(dict(profile=profile, **params))
    finally:
        os.chdir(old_cwd)
        if old_env is None: os.environ.pop('TRUSTLIB_RUN_DIR', None)
        else: os.environ['TRUSTLIB_RUN_DIR'] = old_env


def main(argv=None):
    a = parse_args(argv)
    from trustlib.cli import parse_params, text_table
    from trustlib.runs import run_notebook, sweep, validate_params, versions, is_complete
    params = parse_params(a.param)
    nb = str((Path(a.notebook) if Path(a.notebook).is_absolute() else Path.cwd()/a.notebook).resolve()) if a.notebook else None
    validate_params(a.paper, params, a.profile, notebook=nb)
    for s in range(a.n_runs): validate_params(a.paper, {**params, 'seed': s}, a.profile, notebook=nb)
    tmp = Path(tempfile.mkdtemp(prefix='trustlib-bench-'))
    name = a.paper or Path(nb).stem

    def via_papermill(i):
        t = time.perf_counter()
        run_notebook(a.paper, {**params, 'seed': i}, a.profile, notebook=nb, runs_dir=tmp/'overhead', progress=False)
        return time.perf_counter() - t

    def via_process(i):
        t = time.perf_counter()
        d = tmp/'inprocess'/str(i)
        if nb: in_process_notebook(nb, a.profile, {**params, 'seed': i}, d)
        else: in_process_paper(a.paper, a.profile, {**params, 'seed': i}, d)
        return time.perf_counter() - t

    print(f"benchmark: {name}, profile {a.profile}, params {params}, {os.cpu_count()} CPU(s)")
    via_papermill(999); via_process(999)   # warm-up (imports, caches, kernel spec lookup)
    pm = [via_papermill(i) for i in range(a.repeats)]
    ip = [via_process(i) for i in range(a.repeats)]
    overhead = dict(papermill_mean_s=statistics.mean(pm), papermill_sd_s=statistics.stdev(pm) if len(pm) > 1 else 0.0,
                    inprocess_mean_s=statistics.mean(ip), inprocess_sd_s=statistics.stdev(ip) if len(ip) > 1 else 0.0)
    overhead['overhead_s'] = overhead['papermill_mean_s'] - overhead['inprocess_mean_s']

    spec = dict(profile=a.profile, params=params, grid=dict(seed=list(range(a.n_runs))), **({'notebook': nb} if nb else {'paper': a.paper}))
    sweeps = []
    for w in a.workers:
        d = tmp/f'sweep-{w}'
        t = time.perf_counter()
        df = sweep(spec, workers=w, runs_dir=d, progress=False)
        wall = time.perf_counter() - t
        ok = int((df.status == 'complete').sum())
        sweeps.append(dict(workers=w, runs=len(df), complete=ok, wall_s=wall, runs_per_min=60 * ok / wall))
    for s in sweeps: s['speedup'] = sweeps[0]['wall_s'] / s['wall_s']

    print("\nper-run time (mean ± sd over %d runs)" % a.repeats)
    print(text_table([dict(method='run_notebook (papermill)', mean_s=f"{overhead['papermill_mean_s']:.2f}", sd_s=f"{overhead['papermill_sd_s']:.2f}"),
                      dict(method='in-process', mean_s=f"{overhead['inprocess_mean_s']:.2f}", sd_s=f"{overhead['inprocess_sd_s']:.2f}"),
                      dict(method='papermill overhead', mean_s=f"{overhead['overhead_s']:.2f}", sd_s='')]))
    print(f"\nsweep of {a.n_runs} runs")
    print(text_table([dict(workers=s['workers'], complete=f"{s['complete']}/{s['runs']}", wall_s=f"{s['wall_s']:.1f}",
                           runs_per_min=f"{s['runs_per_min']:.1f}", speedup=f"{s['speedup']:.2f}x") for s in sweeps]))
    res = dict(target=name, notebook=nb, paper=a.paper, profile=a.profile, params=params, repeats=a.repeats,
               papermill_s=pm, inprocess_s=ip, overhead=overhead, sweeps=sweeps,
               machine=dict(cpus=os.cpu_count(), platform=platform.platform(), versions=versions()))
    if a.out:
        from trustlib.results import write_json
        write_json(a.out, res); print(f"\nwrote {a.out}")
    import shutil; shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == '__main__': sys.exit(main())
