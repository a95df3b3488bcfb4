"""The Ray backend of `trustlib sweep` on a real Ray cluster started by the tests on 127.0.0.1 (2 CPUs), and the
scheduling loop both backends share: a worker SIGKILLed mid-sweep, then a rerun (0 lost, 0 duplicated runs); two
sweeps over one runs folder at once; the example spec sweeps/smoke.yaml giving the same metrics on both backends."""
import json, os, re, signal, subprocess, sys, threading, time
from pathlib import Path

import pytest

ray = pytest.importorskip('ray', reason='the Ray backend needs the ray extra: pip install -e ".[ray]"')
import trustlib.runs as R
from trustlib.cli import main
from trustlib.results import deterministic_metrics

ROOT = Path(__file__).resolve().parents[1]
TOY = ROOT/'tests'/'fixtures'/'toy.ipynb'
SPEC = ROOT/'sweeps'/'smoke.yaml'
pytestmark = pytest.mark.enable_socket   # Ray and papermill's kernels talk over 127.0.0.1


@pytest.fixture(scope='module')
def cluster():
    "A local Ray cluster with 2 CPUs on 127.0.0.1, this process its first driver; yields its address."
    os.environ.setdefault('RAY_USAGE_STATS_ENABLED', '0')
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _node_ip_address='127.0.0.1')
    try: yield ray.get_runtime_context().gcs_address
    finally: ray.shutdown()


def toy_spec(tmp_path, seeds, sleep):
    spec = tmp_path/'toy.yaml'
    spec.write_text(f"notebook: {TOY}\nprofile: smoke\nparams: {{sleep: {sleep}}}\ngrid:\n  seed: {list(seeds)}\n")
    return spec

def published(runs: Path, name='toy') -> list[Path]:
    d = runs/name
    return sorted(p for p in d.iterdir() if not p.name.startswith('.')) if d.exists() else []

def hidden(runs: Path, name='toy') -> list[str]:
    "Temporary folders and lock files left in the paper's runs folder."
    d = runs/name
    return sorted(p.name for p in d.iterdir() if p.name.startswith(('.tmp-', '.lock-', '.sweep-'))) if d.exists() else []

def lost_and_duplicated(runs: Path, run_ids, before: dict) -> tuple[int, int]:
    """Grid points without a complete run, and complete runs executed more than once: re-executed after they had
    completed (`before`: run id -> finished time) or published twice (a `.failed-*` folder next to a complete one)."""
    lost = sum(not R.is_complete(runs/'toy'/rid) for rid in run_ids)
    rerun = sum(R.load_run(runs/'toy'/rid)['finished'] != fin for rid, fin in before.items())
    extra = len([p for p in published(runs) if '.failed-' in p.name])
    return lost, rerun + extra

def kill_first_worker(runs: Path, thread: threading.Thread, timeout=120) -> tuple[set[str], int]:
    """SIGKILL the process that holds the first run lock seen under `runs/toy` (a worker: not this process); return the
    run ids it may have held when it died, and its pid. That is the run whose lock was read and, on a busy machine, the
    next one if the worker finished the first and took another between the read and the kill; which of them died is
    read from the sweep's result. (The lock cannot be read again after the kill to decide: the sweep may already have
    broken a dead worker's lock.)"""
    deadline = time.time() + timeout
    locks = lambda: [p for p in (runs/'toy').glob('.lock-*') if '.broken-' not in p.name] if (runs/'toy').exists() else []
    while time.time() < deadline:
        assert thread.is_alive(), 'the sweep ended before a worker could be killed'
        for lock in locks():
            try: h = json.loads(lock.read_text())
            except (OSError, ValueError): continue
            if h.get('pid') and h['pid'] != os.getpid():
                os.kill(h['pid'], signal.SIGKILL)
                held = {lock.name.removeprefix('.lock-')}
                for again in locks():
                    try: h2 = json.loads(again.read_text())
                    except (OSError, ValueError): continue
                    if h2.get('pid') == h['pid']: held.add(again.name.removeprefix('.lock-'))
                return held, h['pid']
        time.sleep(0.05)
    raise AssertionError('no worker took a run lock')

def died_run(df, candidates: set[str], retries: int):
    "The row of the one run whose worker was killed: failed (no retry) or run again (a retry), among the candidates."
    died = df[df.run_id.isin(candidates) & ((df.status == 'failed') if retries == 0 else df.note.str.contains('ran again after its worker died'))]
    assert len(died) == 1, ('the killed worker held none or several of these runs', candidates, df.to_dict('records'))
    return died.iloc[0]


@pytest.mark.parametrize('backend,retries', [('local', 0), ('ray', 0), ('ray', 1)])
def test_killed_worker_then_rerun_loses_and_duplicates_nothing(cluster, tmp_path, backend, retries):
    runs, seeds = tmp_path/'runs', [0, 1, 2]
    spec = toy_spec(tmp_path, seeds, sleep=2.0)
    out, counts = {}, []
    kw = dict(workers=2) if backend == 'local' else dict(backend='ray')
    t = threading.Thread(target=lambda: out.update(df=R.sweep(spec, runs_dir=runs, progress=False, retries=retries,
                                                             on_progress=counts.append, **kw)))
    t.start()
    try: candidates, pid = kill_first_worker(runs, t, timeout=600)
    finally: t.join(600)   # hang guards, generous for a busy machine
    assert not t.is_alive() and 'df' in out, 'the sweep did not end'
    df = out['df']
    row = died_run(df, candidates, retries); killed = row.run_id
    if retries == 0:   # recorded as failed, with why, as a run folder that does not look complete
        assert (row.status, row.skipped) == ('failed', False) and 'WorkerDied' in row.error, row.to_dict()
        m = R.load_run(runs/'toy'/killed)
        assert m['status'] == 'failed' and m['metrics'] == {} and not (runs/'toy'/killed/'result.json').exists()
    else:              # submitted again: complete in the same sweep
        assert row.status == 'complete' and 'ran again after its worker died (1×)' in row.note, row.to_dict()
    assert sorted(df.status) == sorted(['complete'] * (2 if retries == 0 else 3) + (['failed'] if retries == 0 else []))
    assert max(c['running'] for c in counts) >= 1 and counts[-1]['remaining'] == 0 and counts[-1]['running'] == 0
    assert counts[-1]['done'] + counts[-1]['failed'] == 3
    assert all((p/'metrics.json').is_file() for p in published(runs))   # nothing half-written is visible
    before = {rid: R.load_run(runs/'toy'/rid)['finished'] for rid in df.run_id if R.is_complete(runs/'toy'/rid)}

    df2 = R.sweep(spec, runs_dir=runs, progress=False, **kw)           # the rerun
    assert list(df2.status) == ['complete'] * 3
    assert set(df2[df2.skipped].run_id) == set(before)
    assert lost_and_duplicated(runs, df.run_id, before) == (0, 0)
    assert sorted(R.load_run(p)['metrics']['value'] for p in published(runs)) == [2 * s for s in seeds]
    assert hidden(runs) == []


def test_two_sweeps_over_one_runs_folder_at_once(cluster, tmp_path):
    "A CLI sweep on the Ray cluster (--address) and a local sweep in this process, same spec and runs folder, at once."
    runs, seeds = tmp_path/'runs', [0, 1, 2, 3]
    spec = toy_spec(tmp_path, seeds, sleep=1.0)
    cmd = [sys.executable, '-c', 'import sys; from trustlib.cli import main; sys.exit(main(sys.argv[1:]))', 'sweep', str(spec),
           '--backend', 'ray', '--address', cluster, '--runs-dir', str(runs), '-q']
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 600   # a hang guard, generous for a busy machine; start the local sweep once the Ray sweep has started a run
        while not list((runs/'toy').glob('.lock-*')) if (runs/'toy').exists() else True:
            assert proc.poll() is None, proc.communicate()
            assert time.time() < deadline, 'the Ray sweep started no run'
            time.sleep(0.05)
        df = R.sweep(spec, runs_dir=runs, progress=False)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None: proc.kill(); proc.wait()
    assert proc.returncode == 0, stdout + stderr
    ray_executed = int(re.search(r'(\d+) executed by this sweep', stdout)[1])
    assert list(df.status) == ['complete'] * 4
    assert ray_executed + int((~df.skipped).sum()) == 4, (stdout, df)   # every run executed once, by one of the two
    assert ray_executed >= 1 and (~df.skipped).sum() >= 1
    folders = published(runs)
    assert len(folders) == 4 and all(R.is_complete(p) for p in folders)
    assert sorted(R.load_run(p)['metrics']['value'] for p in folders) == [2 * s for s in seeds]
    assert hidden(runs) == []



def test_example_spec_gives_the_same_metrics_on_ray_and_local(cluster, tmp_path, capsys):
    "sweeps/smoke.yaml, cut to its first grid point (one smoke run of a paper per backend keeps the test short)."
    import yaml
    spec = yaml.safe_load(SPEC.read_text())
    spec['grid'] = {k: v[:1] for k, v in spec['grid'].items()}
    (tmp_path/'one.yaml').write_text(yaml.safe_dump(spec))
    local = {}   # the two sweeps run at the same time (2 cores), into separate runs folders
    t = threading.Thread(target=lambda: local.update(df=R.sweep(tmp_path/'one.yaml', runs_dir=tmp_path/'local', progress=False)))
    t.start()
    try: assert main(['sweep', str(tmp_path/'one.yaml'), '--backend', 'ray', '--runs-dir', str(tmp_path/'ray')]) == 0
    finally: t.join(600)   # a hang guard, generous for a busy machine
    assert not t.is_alive() and 'df' in local, 'the local sweep did not end'
    df = local['df']
    out, err = capsys.readouterr()
    assert '1 grid point(s): 1 complete (0 skipped: already complete), 0 failed; 1 executed by this sweep' in out, out
    assert 'done=1 running=0 failed=0 remaining=0' in err, err[-500:]   # the live counts, on the progress bar
    assert list(df.status) == ['complete']
    for rid in df.run_id:
        a, b = R.load_run(tmp_path/'local'/'l2h'/rid), R.load_run(tmp_path/'ray'/'l2h'/rid)
        # verdict words and rules must agree; the 'ours'/'reason' texts of a speed claim quote measured CPU time
        words = lambda r: [(v['claim'], v['verdict'], v['rule'], v['headline']) for v in r['verdicts']]
        assert a['config'] == b['config'] and words(a) == words(b)
        same = deterministic_metrics   # the harness's own rule for which metrics are timings
        assert same(a['metrics']) == same(b['metrics']) and len(same(a['metrics'])) > 10
    assert main(['sweep', str(tmp_path/'one.yaml'), '--backend', 'ray', '--runs-dir', str(tmp_path/'ray'), '-q']) == 0   # rerun: skipped
    assert '1 skipped' in capsys.readouterr().out


def test_refused_before_any_task(cluster, tmp_path, capsys, monkeypatch):
    assert main(['sweep', str(SPEC), '--backend', 'ray', '--runs-dir', 's3://bucket/runs', '-q']) == 2
    err = capsys.readouterr().err
    assert 'need a file system with atomic rename' in err and 'shared mount' in err, err
    with monkeypatch.context() as m:   # a runs folder on a FUSE mount of a bucket (as /proc/mounts would say)
        m.setattr(R, 'mount_of', lambda p, mounts=None: ('/mnt/bucket', 'fuse.s3fs'))
        assert main(['sweep', str(SPEC), '--backend', 'ray', '--runs-dir', str(tmp_path/'runs'), '-q']) == 2
        err = capsys.readouterr().err
        assert 'is on a fuse.s3fs mount of an object store (/mnt/bucket): it has no atomic rename' in err, err
    big = tmp_path/'gpu.yaml'
    big.write_text(SPEC.read_text().replace('num_cpus: 1', 'num_gpus: 1'))
    assert main(['sweep', str(big), '--backend', 'ray', '--runs-dir', str(tmp_path/'runs'), '-q']) == 2
    assert 'no node of the Ray cluster has the resources one run asks for' in capsys.readouterr().err
    assert main(['sweep', str(SPEC), '--address', cluster, '--runs-dir', str(tmp_path/'runs'), '-q']) == 2
    assert "only used with backend 'ray'" in capsys.readouterr().err
    assert not list((tmp_path/'runs'/'l2h').glob('*'))


def test_a_node_that_does_not_share_the_runs_folder_says_so(tmp_path):
    job = dict(marker=str(tmp_path/'.sweep-x'), runs_dir=str(tmp_path), paper=None, notebook=str(TOY), params={}, profile='smoke')
    res = R._sweep_job(job)
    assert res['status'] == 'failed' and 'every node must see the same runs folder' in res['error']


LOCAL_RAY = '''
import time
from trustlib.runs import _ray_init
ray = _ray_init(None)
print("task", ray.get(ray.remote(num_cpus=1)(lambda: 2).remote()))
time.sleep(15)     # the dashboard's usage module asks the clouds' metadata addresses a few seconds after start
ray.shutdown()
'''

def test_local_ray_stays_on_the_machine(tmp_path):
    """The local Ray the CLI starts (`_ray_init(None)`) makes no connection and no DNS query off loopback, from any of its
    Python processes (driver, dashboard, workers): they all run under tests/netguard, which logs every blocked attempt."""
    log = tmp_path/'net.log'
    env = {k: v for k, v in os.environ.items() if k != 'RAY_ADDRESS'}
    env.update(TRUSTLIB_NO_NETWORK='1', TRUSTLIB_NETLOG=str(log), PYTHONPATH=os.pathsep.join([str(ROOT/'tests'/'netguard'), str(ROOT)]))
    r = subprocess.run([sys.executable, '-c', LOCAL_RAY], env=env, capture_output=True, text=True, timeout=600)
    assert not log.exists() or log.read_text() == '', log.read_text()[:2000]
    if r.returncode != 0 and ('Deadline Exceeded' in r.stderr or 'timed out during startup' in r.stderr):   # Ray's own deadlines, on an overloaded machine
        pytest.skip("the local Ray did not start in time (machine overloaded); no connection left the machine meanwhile")
    assert r.returncode == 0 and 'task 2' in r.stdout, r.stderr[-2000:]

def test_unreachable_or_silent_address_refused():
    "An address nothing answers on, or where something that is no Ray listens, is refused with a message, not retried forever."
    import socket
    from trustlib.config import ConfigError
    with pytest.raises(ConfigError, match="cannot connect to the Ray cluster at '127.0.0.1:9'"): R._ray_probe('127.0.0.1:9', timeout=5)
    srv = socket.create_server(('127.0.0.1', 0))
    try:
        with pytest.raises(ConfigError, match="cannot connect to the Ray cluster at"): R._ray_handshake(f"127.0.0.1:{srv.getsockname()[1]}", timeout=20)
    finally: srv.close()
