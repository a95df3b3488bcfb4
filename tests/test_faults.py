"""Faults and hostile input against trustlib.runs / trustlib.cli: failed and killed re-runs never replace a
complete run, concurrent sweeps never execute a run twice, parameter values never become code, oversized
specs and grids are refused early, and every user error is one line with exit code 2.

Runs use small notebooks written into tmp_path (a copy of tests/fixtures/toy.ipynb with a changed code cell),
never a paper."""
import errno, json, os, re, shutil, signal, subprocess, sys, textwrap, time
from pathlib import Path

import pytest

import trustlib.config
import trustlib.runs as R
from trustlib.cli import main
from trustlib.config import ConfigError, Paper

ROOT = Path(__file__).resolve().parents[1]
TOY = ROOT/'tests'/'fixtures'/'toy.ipynb'
kernel = pytest.mark.enable_socket
CLI = [sys.executable, '-c', 'import sys; from trustlib.cli import main; sys.exit(main(sys.argv[1:]))']


def toy_variant(path: Path, code: str, params: str | None = None) -> Path:
    "A copy of the toy notebook with its code cell (and optionally its parameters cell) replaced."
    nb = json.loads(TOY.read_text())
    nb['cells'][2]['source'] = textwrap.dedent(code)
    if params is not None: nb['cells'][1]['source'] = textwrap.dedent(params)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb))
    return path

RECORD = '''
from trustlib.results import Result, Verdict, record
record(Result(paper="toy", config=dict(seed=seed), metrics={"value": seed * 2}))
'''
SLOWABLE = ('import os, time, pathlib\n'
            'if os.environ.get("TOY_MARK"): pathlib.Path(os.environ["TOY_MARK"]).touch()   # the kernel is in the slow cell\n'
            'time.sleep(float(os.environ.get("TOY_SLEEP", "0")))\n') + RECORD
DATA_PARAMS = '''profile: str = "smoke"  # profile
seed: int = 0  # seed
name: str = "x"  # a string
items: list = []  # a list
opts: dict = {}  # a mapping
'''
DATA_CODE = '''
import json
from trustlib.results import Result, record
record(Result(paper="toy", config=dict(seed=seed), metrics={"echo": json.dumps([name, items, opts])}))
'''

def published(base: Path) -> list[str]:
    return sorted(p.name for p in base.iterdir() if not p.name.startswith('.')) if base.exists() else []

def env(**kw):
    e = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get('PYTHONPATH', '')]).strip(os.pathsep))
    e.update({k: str(v) for k, v in kw.items()}); return e


# --- 1, 12: a failed, interrupted or killed re-run never replaces a complete run ---------------------------

@kernel
@pytest.mark.parametrize('sig', ['SIGINT', 'SIGTERM', 'SIGKILL'])
def test_signal_during_rerun_keeps_the_complete_run(tmp_path, sig):
    nb = toy_variant(tmp_path/'nb'/'toy.ipynb', SLOWABLE)
    runs = tmp_path/'runs'
    d = R.run_notebook(notebook=nb, params=dict(seed=3), profile='smoke', runs_dir=runs, progress=False)
    before = (d/'metrics.json').read_bytes()
    proc = subprocess.Popen([*CLI, 'run', str(nb), '-p', 'seed', '3', '--profile', 'smoke', '-q', '--runs-dir', str(runs)],
                            env=env(TOY_SLEEP=60, TOY_MARK=tmp_path/'in-slow-cell'), start_new_session=True,
                            # a suite started in the background (`make test &`) inherits SIGINT ignored, and so would the CLI
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 600   # a hang guard, not a speed check: generous for a busy machine
        while not (tmp_path/'in-slow-cell').exists():   # the kernel is executing the slow cell (not still starting up, under load)
            assert proc.poll() is None, proc.communicate()
            assert time.time() < deadline; time.sleep(0.1)
        assert list((runs/'toy').glob('.tmp-*/.partial-toy.ipynb'))
        time.sleep(0.5)
        os.kill(proc.pid, getattr(signal, sig))
        out, err = proc.communicate(timeout=60)
        assert proc.returncode != 0, "the re-run was not interrupted"
    finally:
        try: os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError: pass
    assert (d/'metrics.json').read_bytes() == before and R.is_complete(d)   # nothing lost
    failed = [p for p in (runs/'toy').iterdir() if '.failed-' in p.name]
    if sig == 'SIGKILL':
        assert failed == []
        assert list((runs/'toy').glob('.lock-*')) and list((runs/'toy').glob('.tmp-*'))   # left by the killed process
        d2 = R.run_notebook(notebook=nb, params=dict(seed=3), profile='smoke', runs_dir=runs, progress=False)
        assert d2 == d and R.is_complete(d)
        assert [p.name for p in (runs/'toy').iterdir()] == [d.name]    # stale lock and temp folder cleaned
    else:
        assert proc.returncode == (130 if sig == 'SIGINT' else 143), (proc.returncode, err)
        assert len(failed) == 1, err
        m = R.load_run(failed[0])
        assert m['status'] == 'failed' and m['run_id'] == d.name
        assert ('KeyboardInterrupt' if sig == 'SIGINT' else 'Terminated') in m['error']
        assert not list((runs/'toy').glob('.lock-*'))


@kernel
def test_failed_rerun_is_recorded_beside_the_complete_run(tmp_path):
    runs = tmp_path/'runs'
    d = R.run_notebook(notebook=toy_variant(tmp_path/'a'/'toy.ipynb', RECORD), params=dict(seed=2), profile='smoke', runs_dir=runs, progress=False)
    with pytest.raises(R.RunFailed) as ei:
        R.run_notebook(notebook=toy_variant(tmp_path/'b'/'toy.ipynb', 'raise ValueError("x")'), params=dict(seed=2), profile='smoke',
                       runs_dir=runs, progress=False)
    assert ei.value.run_dir.name.startswith(d.name + '.failed-') and R.is_complete(d)
    assert R.load_run(d)['metrics']['value'] == 4
    # a failure with no complete run takes the run id's folder, and a later complete run replaces it
    with pytest.raises(R.RunFailed) as ei:
        R.run_notebook(notebook=tmp_path/'b'/'toy.ipynb', params=dict(seed=5), profile='smoke', runs_dir=runs, progress=False)
    assert ei.value.run_dir.name == R.run_id('smoke', dict(seed=5))
    d5 = R.run_notebook(notebook=tmp_path/'a'/'toy.ipynb', params=dict(seed=5), profile='smoke', runs_dir=runs, progress=False)
    assert R.is_complete(d5)


@kernel
def test_rename_failure_while_replacing_restores_the_old_run(tmp_path, monkeypatch):
    runs = tmp_path/'runs'
    d = R.run_notebook(notebook=TOY, params=dict(seed=1), profile='smoke', runs_dir=runs, progress=False)
    before = (d/'metrics.json').read_bytes()
    real = R._rename
    def slow_fail(src, dst):   # the new run cannot be renamed in (ENOTEMPTY, as with a racing process)
        if Path(src).name.startswith('.tmp-') and Path(dst).name == d.name and '-old-' not in Path(src).name:
            raise OSError(errno.ENOTEMPTY, 'Directory not empty (simulated)')
        return real(src, dst)
    monkeypatch.setattr(R, '_rename', slow_fail)
    with pytest.raises(R.RunFailed):
        R.run_notebook(notebook=TOY, params=dict(seed=1), profile='smoke', runs_dir=runs, progress=False)
    assert (d/'metrics.json').read_bytes() == before and R.is_complete(d)


@kernel
def test_death_between_the_two_renames_of_a_swap_loses_no_run(tmp_path):
    "A process killed after `_swap_in` set the old run aside and before the new one took its place: the next run or sweep puts the old run back instead of deleting it."
    runs = tmp_path/'runs'
    d = R.run_notebook(notebook=TOY, params=dict(seed=1), profile='smoke', runs_dir=runs, progress=False)
    before = (d/'metrics.json').read_bytes()
    aside = d.with_name(f".tmp-{d.name}-old-0123abcd"); os.rename(d, aside)
    (d.parent/f".tmp-{d.name}-4567cdef").mkdir()              # the new run's folder, never renamed in
    assert R.clean_stale(d.parent) and (d/'metrics.json').read_bytes() == before
    assert [p.name for p in d.parent.iterdir()] == [d.name]
    assert R.sweep(dict(notebook=str(TOY), profile='smoke', grid=dict(seed=[1])), runs_dir=runs, progress=False).skipped[0]


def test_lost_run_is_recorded_while_its_killed_worker_is_not_reaped_yet(tmp_path):
    """A worker SIGKILLed while it holds a run lock is a zombie until its parent reaps it (Ray's raylet may take a while
    on a busy machine); it answers signal 0, but it holds nothing: the sweep records the lost run as failed at once
    (before, the lock looked held, the run was 'not recorded' and left with no run folder at all)."""
    if not Path('/proc/self/stat').exists(): pytest.skip('zombie detection reads /proc (Linux)')
    base = tmp_path/'runs'/'toy'; base.mkdir(parents=True)
    z = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])
    try:
        (base/'.lock-smoke-x').write_text(json.dumps(dict(host=R.socket.gethostname(), pid=z.pid, started=R._now(), token='t')))
        z.kill(); time.sleep(0.2)
        state = Path(f'/proc/{z.pid}/stat').read_text().rsplit(')', 1)[1].split()[0]
        assert state == 'Z' and z.returncode is None          # killed, not reaped: signal 0 still reaches it
        job = dict(runs_dir=str(tmp_path/'runs'), name='toy', run_id='smoke-x', nb=str(TOY), params=dict(seed=1), profile='smoke')
        row = R._record_lost(job, 'WorkerDied: the worker running it died 1 time(s)')
        assert row['status'] == 'failed' and row['path'] == str(base/'smoke-x'), row
        assert R.load_run(base/'smoke-x')['status'] == 'failed' and not list(base.glob('.lock-*'))
    finally: z.kill(); z.wait()

@kernel
def test_disk_full_leaves_no_truncated_notebook(tmp_path, monkeypatch):
    import papermill.iorw as io_
    real, calls = io_.LocalHandler.write, []
    def full(self, buf, path):
        if '"status": "completed"' in buf: calls.append(path)
        if calls:   # the first save after a cell completed, mid-run: half the bytes reach the disk, then ENOSPC
            with open(path, 'w') as f: f.write(buf[:len(buf) // 2])
            raise OSError(errno.ENOSPC, 'No space left on device (simulated)')
        return real(self, buf, path)
    monkeypatch.setattr(io_.LocalHandler, 'write', full)
    with pytest.raises(R.RunFailed, match='No space left') as ei:
        R.run_notebook(notebook=TOY, params=dict(seed=1), profile='smoke', runs_dir=tmp_path, progress=False)
    d = ei.value.run_dir
    m = R.load_run(d)
    assert m['status'] == 'failed' and m['notebook'] is None
    for f in d.rglob('*.ipynb'): json.loads(f.read_text())   # whatever notebook is there is whole
    assert not (d/'toy.ipynb').exists() and not list(d.glob('.partial-*'))


@kernel
def test_notebook_without_record_is_a_failed_run(tmp_path):
    nb = toy_variant(tmp_path/'toy.ipynb', 'x = 1')
    with pytest.raises(R.RunFailed, match='recorded no result') as ei:
        R.run_notebook(notebook=nb, profile='smoke', runs_dir=tmp_path/'runs', progress=False)
    assert R.load_run(ei.value.run_dir)['status'] == 'failed' and not R.is_complete(ei.value.run_dir)


@kernel
def test_stale_temp_folders_without_owner_are_cleaned(tmp_path):
    base = tmp_path/'runs'/'toy'
    rid = R.run_id('smoke', dict(seed=1))
    (base/f'.tmp-{rid}-0badc0de').mkdir(parents=True)                 # killed before writing .owner
    (base/'.tmp-smoke-0123456789-deadbeef').mkdir()                    # another run id, nobody holds its lock
    (base/'.tmp-smoke-0123456789-deadbeef'/'.owner').write_text('{"host": "elsewhere", "pid": 1}')
    d = R.run_notebook(notebook=TOY, params=dict(seed=1), profile='smoke', runs_dir=tmp_path/'runs', progress=False)
    assert [p.name for p in base.iterdir()] == [d.name]


# --- 2: one lock per run id; concurrent sweeps execute each run once ------------------------------------

@kernel
def test_two_concurrent_sweeps_execute_each_run_once(tmp_path):
    runs, spec = tmp_path/'runs', tmp_path/'s.yaml'
    spec.write_text(f"notebook: {TOY}\nprofile: smoke\nparams: {{sleep: 1.0}}\ngrid:\n  seed: [0, 1, 2, 3]\n")
    cmd = [*CLI, 'sweep', str(spec), '--runs-dir', str(runs), '-q']
    procs = [subprocess.Popen(cmd, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    executed = [int(re.search(r'(\d+) executed by this sweep', o).group(1)) for o, _ in outs]
    assert sum(executed) == 4, outs                                      # no run executed twice
    assert len(published(runs/'toy')) == 4 and all(R.is_complete(runs/'toy'/n) for n in published(runs/'toy'))
    assert not list((runs/'toy').glob('.lock-*')) and not list((runs/'toy').glob('.tmp-*'))


@kernel
def test_run_waits_or_skips_when_locked(tmp_path, capsys):
    base = tmp_path/'runs'/'toy'; base.mkdir(parents=True)
    rid = R.run_id('smoke', {})
    holder = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])
    try:
        (base/f'.lock-{rid}').write_text(json.dumps(dict(host=R.socket.gethostname(), pid=holder.pid, started=R._now(), token='x')))
        assert main(['run', str(TOY), '--profile', 'smoke', '-q', '--runs-dir', str(tmp_path/'runs'), '--no-wait']) == 1
        assert f'run toy/{rid} is in progress in process {holder.pid}' in capsys.readouterr().err
    finally: holder.kill(); holder.wait()
    assert main(['run', str(TOY), '--profile', 'smoke', '-q', '--runs-dir', str(tmp_path/'runs')]) == 0   # holder gone: stale


# --- 3: parameter values never become code -----------------------------------------------------------------

INJECTIONS = [
    '", __import__("os").system("touch {m}"), "',
    "', __import__('os').system('touch {m}'), '",
    '"""\n__import__("os").system("touch {m}")\n"""',
    '\\"; __import__("os").system("touch {m}"); #',
    "\n__import__('os').system('touch {m}')\n",
    '{{__import__("os").system("touch {m}")}}',
    '\x00"; import os; os.system("touch {m}")',
    '\u2028__import__("os").system("touch {m}")',
]

@kernel
def test_injection_through_cli_values_executes_nothing(tmp_path, capsys):
    nb = toy_variant(tmp_path/'nb'/'toy.ipynb', DATA_CODE, DATA_PARAMS)
    runs = tmp_path/'runs'
    marker = tmp_path/'pwned'
    vals = [s.format(m=marker) for s in INJECTIONS]
    args = ['run', str(nb), '--profile', 'smoke', '-q', '--runs-dir', str(runs), '-p', 'name', vals[0],
            '-p', 'items', json.dumps(vals), '-p', 'opts', json.dumps({v: v for v in vals[:4]})]
    assert main(args) == 0, capsys.readouterr().err
    d = next(p for p in (runs/'toy').iterdir() if not p.name.startswith('.'))
    echo = json.loads(R.load_run(d)['metrics']['echo'])
    assert echo == [vals[0], vals, {v: v for v in vals[:4]}]        # received as data, exactly
    for bad in ['!!binary aGVsbG8=', '!!python/object/apply:os.system ["touch %s"]' % marker, '!!set {a, b}', '2026-01-01']:
        assert main(['run', str(nb), '--profile', 'smoke', '-q', '--runs-dir', str(runs), '-p', 'name', bad]) == 2
    assert not marker.exists()


@kernel
def test_injection_through_sweep_spec_executes_nothing(tmp_path):
    nb = toy_variant(tmp_path/'nb'/'toy.ipynb', DATA_CODE, DATA_PARAMS)
    marker = tmp_path/'pwned'
    import yaml
    spec = tmp_path/'s.yaml'
    spec.write_text(yaml.safe_dump(dict(notebook=str(nb), profile='smoke',
                    grid=dict(name=[s.format(m=marker) for s in INJECTIONS[:3]], items=[[INJECTIONS[0].format(m=marker)]]))))
    df = R.sweep(spec, runs_dir=tmp_path/'runs', progress=False)
    assert list(df.status) == ['complete'] * 3
    spec.write_text(f"notebook: {nb}\nprofile: smoke\nparams: {{name: !!binary aGVsbG8=}}\n")
    assert main(['sweep', str(spec), '--runs-dir', str(tmp_path/'runs'), '-q']) == 2
    assert not marker.exists()


def test_unannotated_parameter_and_unimportable_paper_are_refused(tmp_path, monkeypatch, capsys):
    nb = toy_variant(tmp_path/'toy.ipynb', RECORD, 'profile: str = "smoke"\nseed = 0\n')
    assert main(['run', str(nb), '--profile', 'smoke', '--runs-dir', str(tmp_path/'runs')]) == 2
    assert "parameter(s) ['seed'] have no type annotation" in capsys.readouterr().err
    (tmp_path/'broken_paper_mod.py').write_text('raise RuntimeError("syntax of the future")\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    orig = trustlib.config.get_paper
    monkeypatch.setattr(trustlib.config, 'get_paper', lambda n: Paper(98, 'toy', 'toy', 'Toy', 'broken_paper_mod') if n == 'toy' else orig(n))
    with pytest.raises(ConfigError, match=r"module broken_paper_mod cannot be imported, so its parameters cannot be validated: RuntimeError"):
        R.validate_params('toy', dict(seed=1), 'smoke', notebook=TOY)
    assert not (tmp_path/'runs').exists()


# --- 4: report never writes committed files unless asked ------------------------------------------------

@kernel
def test_report_writes_the_runs_folder_unless_publish(tmp_path, monkeypatch, capsys):
    root = tmp_path/'repo'; (root/'nbs'/'results').mkdir(parents=True)
    (root/'settings.ini').write_text("[DEFAULT]\nnbs_path = nbs\n")
    monkeypatch.chdir(root); monkeypatch.delenv('TRUSTLIB_RUNS', raising=False)
    assert main(['report']) == 2
    assert 'no runs in' in capsys.readouterr().err
    assert not (root/'nbs'/'results'/'dashboard.ipynb').exists() and not (root/'runs').exists()
    shutil.copy(TOY, tmp_path/'toy.ipynb')   # outside any git checkout: its runs are not dirty
    R.run_notebook(notebook=tmp_path/'toy.ipynb', profile='cpu', runs_dir=root/'runs', progress=False)
    assert main(['report']) == 0
    assert (root/'runs'/'dashboard.ipynb').exists() and not (root/'nbs'/'results'/'dashboard.ipynb').exists()
    assert main(['report', '--publish']) == 0                           # not a git checkout: nothing is dirty
    assert (root/'nbs'/'results'/'dashboard.ipynb').exists()


# --- 5, 7: skips need the same source and parameters; canonical ids -------------------------------------

@kernel
def test_sweep_reruns_when_the_notebook_source_or_params_changed(tmp_path):
    nb = toy_variant(tmp_path/'nb'/'toy.ipynb', RECORD)
    spec = dict(notebook=str(nb), profile='smoke', grid=dict(seed=[1]))
    runs = tmp_path/'runs'
    assert not R.sweep(spec, runs_dir=runs, progress=False).skipped[0]
    assert R.sweep(spec, runs_dir=runs, progress=False).skipped[0]
    n = json.loads(nb.read_text()); n['cells'][2]['outputs'] = [dict(output_type='stream', name='stdout', text='x')]; nb.write_text(json.dumps(n))
    assert R.sweep(spec, runs_dir=runs, progress=False).skipped[0]       # outputs are not source
    toy_variant(nb, RECORD + '\nprint("changed")\n')
    df = R.sweep(spec, runs_dir=runs, progress=False)
    assert not df.skipped[0] and df.note[0] == 're-run: the notebook source changed since the recorded run'
    d = Path(df.path[0]); m = R.load_run(d); m['params'] = dict(seed=2); (d/'metrics.json').write_text(json.dumps(m))
    df = R.sweep(spec, runs_dir=runs, progress=False)
    assert not df.skipped[0] and df.note[0] == 're-run: the recorded parameters differ'


@kernel
def test_sweep_reruns_when_package_versions_changed(tmp_path, monkeypatch):
    "A torch (or numpy, python, trustlib …) upgrade since the recorded run makes the sweep run the grid point again; papermill's does not."
    nb = toy_variant(tmp_path/'nb'/'toy.ipynb', RECORD)
    spec = dict(notebook=str(nb), profile='smoke', grid=dict(seed=[1]))
    runs = tmp_path/'runs'
    assert not R.sweep(spec, runs_dir=runs, progress=False).skipped[0]
    assert R.sweep(spec, runs_dir=runs, progress=False).skipped[0]
    real = R.versions()
    monkeypatch.setattr(R, 'versions', lambda: {**real, 'papermill': '0.0.1'})
    assert R.sweep(spec, runs_dir=runs, progress=False).skipped[0]      # the executor's version does not change results
    monkeypatch.setattr(R, 'versions', lambda: {**real, 'torch': '99.0'})
    df = R.sweep(spec, runs_dir=runs, progress=False)
    assert not df.skipped[0] and df.note[0] == f"re-run: package versions changed since the recorded run (torch {real.get('torch') or 'absent'} → 99.0)", df.note[0]
    assert R.load_run(df.path[0])['versions']['torch'] == '99.0'   # the new run records the versions it ran with
    assert R.sweep(spec, runs_dir=runs, progress=False).skipped[0]


@kernel
def test_equivalent_parameters_give_one_run(tmp_path, capsys):
    runs = tmp_path/'runs'
    for p in ([], ['-p', 'seed', '0'], ['-p', 'seed', '0.0'], ['-p', 'fail', 'false', '-p', 'sleep', '0']):
        assert main(['run', str(TOY), '--profile', 'smoke', '-q', '--runs-dir', str(runs), *p]) == 0
    assert published(runs/'toy') == [R.run_id('smoke', {})]


def test_nonfinite_values_are_refused_or_recorded_faithfully(tmp_path, capsys):
    assert main(['run', str(TOY), '--profile', 'smoke', '-p', 'sleep', '.inf', '--runs-dir', str(tmp_path)]) == 2
    assert "parameter 'sleep': inf is not a finite number" in capsys.readouterr().err
    assert R.decode_params(json.loads(json.dumps(R.encode_params(dict(x=[float('-inf')]))))) == dict(x=[float('-inf')])


# --- 8, 9, 10: bounded messages, bounded specs and grids, one-line user errors ---------------------------

def test_alias_bomb_spec_is_refused_quickly_with_a_short_message(tmp_path, capsys):
    spec = tmp_path/'bomb.yaml'
    lines = [f"notebook: {TOY}", "params:", "  seed: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    for p, c in zip('abcdefgh', 'bcdefghi'): lines.append(f"  x{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]")
    spec.write_text('\n'.join(lines) + '\n')
    assert len(spec.read_bytes()) < 600
    t0 = time.process_time()   # CPU time of this process: the bomb is refused without expanding it (wall time depends on the machine's load)
    assert main(['sweep', str(spec), '--runs-dir', str(tmp_path/'runs')]) == 2
    err = capsys.readouterr().err
    assert time.process_time() - t0 < 10 and len(err) < 1000 and 'items after loading' in err, err[:500]
    # the same bomb through -p
    bomb = '[' + ', '.join(['&a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]'] + ['*a'] * 9) + ']'
    for _ in range(4): bomb = bomb  # (a flat alias list is small; nest it through YAML anchors instead)
    val = "{a: &a [1,1,1,1,1,1,1,1,1,1], b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a], c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b], " \
          "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c], e: [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]}"
    assert main(['run', str(TOY), '-p', 'seed', val, '--runs-dir', str(tmp_path/'runs')]) == 2
    err = capsys.readouterr().err
    assert 'more than 10000 items' in err and len(err) < 1000


def test_huge_grid_is_refused_with_its_size(tmp_path, capsys):
    import yaml
    spec = tmp_path/'g.yaml'
    spec.write_text(yaml.safe_dump(dict(notebook=str(TOY), profile='smoke', grid=dict(seed=list(range(1000)), sleep=list(range(1000))))))
    t0 = time.process_time()   # CPU time: the grid is counted, not expanded (wall time depends on the machine's load)
    assert main(['sweep', str(spec), '--runs-dir', str(tmp_path/'runs')]) == 2
    err = capsys.readouterr().err
    assert 'the grid has 1,000,000 points (1000 seed × 1000 sleep); the limit is 10,000 (pass --allow-large' in err, err
    assert time.process_time() - t0 < 20


def test_long_values_are_quoted_capped(tmp_path, capsys):
    assert main(['run', str(TOY), '-p', 'seed', 'x' * 50_000, '--runs-dir', str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "parameter 'seed': expected int" in err and len(err) < 1500


@pytest.mark.parametrize('case', ['file', 'under_file', 'readonly', 'eacces'])
def test_unusable_runs_folder_is_one_line_exit_2(tmp_path, capsys, monkeypatch, case):
    f = tmp_path/'afile'; f.write_text('x')
    runs = {'file': f, 'under_file': f/'sub'}.get(case, tmp_path/'runs')
    if case in ('readonly', 'eacces'):
        code = errno.EROFS if case == 'readonly' else errno.EACCES
        real = Path.mkdir
        def mkdir(self, *a, **k):
            if str(self).startswith(str(tmp_path/'runs')): raise OSError(code, os.strerror(code), str(self))
            return real(self, *a, **k)
        monkeypatch.setattr(Path, 'mkdir', mkdir)
    assert main(['run', str(TOY), '--profile', 'smoke', '-q', '--runs-dir', str(runs)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and 'Traceback' not in err, err
    assert ('not a directory' in err.lower()) if case in ('file', 'under_file') else ('cannot write run folders' in err)


def test_paper_parameter_errors_are_exit_2(tmp_path, monkeypatch, capsys):
    (tmp_path/'odd_paper_mod.py').write_text(textwrap.dedent('''
        from dataclasses import dataclass
        from trustlib.config import BaseConfig, param
        @dataclass
        class Config(BaseConfig):
            fail: bool = param(False, "fail")
            sleep: float = param(0.0, "sleep")
            def validate(self):
                if self.sleep > 5: raise ValueError("sleep too long for this paper")
        '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    orig = trustlib.config.get_paper
    monkeypatch.setattr(trustlib.config, 'get_paper', lambda n: Paper(97, 'toy', 'toy', 'Toy', 'odd_paper_mod') if n == 'toy' else orig(n))
    root = tmp_path/'repo'; (root/'nbs'/'papers'/'toy').mkdir(parents=True)
    (root/'settings.ini').write_text("[DEFAULT]\nnbs_path = nbs\n"); shutil.copy(TOY, root/'nbs'/'papers'/'toy'/'toy.ipynb')
    monkeypatch.chdir(root)
    assert main(['run', 'toy', '--profile', 'smoke', '-p', 'sleep', '6', '--runs-dir', str(tmp_path/'runs')]) == 2
    err = capsys.readouterr().err
    assert 'ValueError: sleep too long for this paper' in err and len(err.strip().splitlines()) == 1


# --- harness: error chains, progress bars and local paths in executed notebooks, dirty trees --------------

@kernel
def test_run_failure_prints_the_underlying_cause(tmp_path, capsys):
    nb = toy_variant(tmp_path/'toy.ipynb', '''
        class DataUnavailable(RuntimeError): pass
        try: raise DataUnavailable("SNS-Bench data is not available")
        except DataUnavailable as e: raise RuntimeError("loading failed") from e
        ''')
    assert main(['run', str(nb), '--profile', 'smoke', '-q', '--runs-dir', str(tmp_path/'runs')]) == 1
    err = capsys.readouterr().err
    assert 'run failed: RuntimeError: loading failed' in err and 'caused by: DataUnavailable: SNS-Bench data is not available' in err, err


def test_error_chain_is_capped():
    try:
        try: raise KeyError('x' * 10_000)
        except KeyError as e: raise RuntimeError('wrapper') from e
    except RuntimeError as e: chain = R.error_chain(e)
    assert chain[0] == 'RuntimeError: wrapper' and chain[1].startswith('KeyError') and len(chain[1]) <= 500


@kernel
def test_executed_notebook_has_no_progress_bars_or_local_paths(tmp_path):
    nb = toy_variant(tmp_path/'toy.ipynb', textwrap.dedent('''
        import sys, os
        from tqdm.auto import tqdm
        for _ in tqdm(range(50)): pass
        for _ in tqdm(range(50), desc="explicit", disable=False): pass   # TQDM_DISABLE cannot stop this one; the scrub does
        print(os.__file__ + ": SomeWarning: a warning that shows a local path", file=sys.stderr)
        print("plain stderr line", file=sys.stderr)
        ''') + RECORD)
    d = R.run_notebook(notebook=nb, profile='smoke', runs_dir=tmp_path/'runs', progress=False)
    text = (d/'toy.ipynb').read_text()
    outs = [o for c in json.loads(text)['cells'] for o in c.get('outputs', [])]
    assert 'it/s' not in text and '%|' not in text and 'IProgress' not in text
    shown = json.dumps(outs)
    assert sys.prefix not in shown and 'SomeWarning' not in shown and 'TqdmWarning' not in shown
    assert any('plain stderr line' in ''.join(o.get('text', '')) for o in outs)


def _git(root, *a):
    e = dict(os.environ, GIT_AUTHOR_NAME='t', GIT_AUTHOR_EMAIL='t@t', GIT_COMMITTER_NAME='t', GIT_COMMITTER_EMAIL='t@t')
    subprocess.run(['git', '-C', str(root), *a], check=True, capture_output=True, env=e)

def test_publish_refuses_a_dirty_tree(tmp_path, monkeypatch, capsys):
    root = tmp_path/'repo'; (root/'nbs'/'papers'/'toy').mkdir(parents=True)
    (root/'settings.ini').write_text("[DEFAULT]\nnbs_path = nbs\n"); shutil.copy(TOY, root/'nbs'/'papers'/'toy'/'toy.ipynb')
    (root/'.gitignore').write_text('runs/\n')
    _git(root, 'init', '-q'); _git(root, 'add', '.'); _git(root, 'commit', '-qm', 'init')
    monkeypatch.chdir(root)
    (root/'settings.ini').write_text("[DEFAULT]\nnbs_path = nbs\n# edited\n")
    assert R.git_info(root)['git_dirty'] is True
    assert main(['report', '--publish', '--runs-dir', str(root/'runs')]) == 2   # no runs
    orig = trustlib.config.get_paper
    monkeypatch.setattr(trustlib.config, 'get_paper', lambda n: Paper(99, 'toy', 'toy', 'Toy', 'nonexistent_mod_x') if n == 'toy' else orig(n))
    from trustlib.cli import check_clean
    with pytest.raises(ConfigError, match=r"the work tree is dirty \(1 file\(s\) differ from the commit: settings.ini\)"): check_clean(root)
    _git(root, 'checkout', 'settings.ini')
    nbp = root/'nbs'/'papers'/'toy'/'toy.ipynb'
    n = json.loads(nbp.read_text()); n['cells'][2]['outputs'] = [dict(output_type='stream', name='stdout', text='x')]; nbp.write_text(json.dumps(n))
    check_clean(root)                                                            # outputs only: clean


@kernel
def test_attack_script_finds_no_silent_bad_input_and_no_code_execution():
    r = subprocess.run([sys.executable, str(ROOT/'tools'/'attack_params.py')], capture_output=True, text=True, timeout=300, env=env())
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    s = json.loads(r.stdout)
    assert s['bad_inputs'] >= 100 and s['silent'] == 0 and s['code_executed'] == 0 and s['injection_received_as_data']


def test_error_chain_digs_out_a_wrapped_remote_traceback():
    remote = '"""\nTraceback (most recent call last):\n  File "x.py", line 1, in f\n    g()\ntrustlib.config.DataUnavailable: SNS-Bench data is not available\n"""'
    class _RemoteTraceback(Exception): pass
    try:
        try: raise _RemoteTraceback(remote)
        except _RemoteTraceback as e: raise Exception("Error in notebook: data in cell 80") from e
    except Exception as e: chain = R.error_chain(e)
    assert chain[0] == 'Exception: Error in notebook: data in cell 80'
    assert chain[1].endswith('trustlib.config.DataUnavailable: SNS-Bench data is not available'), chain


@kernel
def test_result_timings_are_carried_into_metrics(tmp_path):
    nb = toy_variant(tmp_path/'toy.ipynb', RECORD + textwrap.dedent('''
        import json, os, pathlib
        _p = pathlib.Path(os.environ["TRUSTLIB_RUN_DIR"])/"result.json"
        _r = json.loads(_p.read_text()); _r["timings"] = {"train_s": 1.5}; _p.write_text(json.dumps(_r))
        '''))
    d = R.run_notebook(notebook=nb, profile='smoke', runs_dir=tmp_path/'runs', progress=False)
    assert R.load_run(d)['timings'] == {'train_s': 1.5}


@kernel
def test_ctrl_c_of_a_two_worker_sweep_is_one_line_per_worker(tmp_path):
    "ctrl-C (SIGINT to the whole process group) of `trustlib sweep --workers 2`: exit 130, at most one line per worker and no traceback, the complete run kept, the two stopped runs recorded as failed."
    nb = toy_variant(tmp_path/'nb'/'toy.ipynb', 'import os, time, pathlib\nif seed != 5: pathlib.Path(os.environ["TOY_MARK"] + str(seed)).touch()\n'
                     'time.sleep(0 if seed == 5 else float(os.environ["TOY_SLEEP"]))\n' + RECORD)
    runs, mark = tmp_path/'runs', tmp_path/'mark'
    done = R.run_notebook(notebook=nb, params=dict(seed=5), profile='smoke', runs_dir=runs, progress=False)
    before = (done/'metrics.json').read_bytes()
    spec = tmp_path/'s.yaml'; spec.write_text(f"notebook: {nb}\nprofile: smoke\ngrid:\n  seed: [5, 1, 2]\n")
    proc = subprocess.Popen([*CLI, 'sweep', str(spec), '--workers', '2', '--runs-dir', str(runs)], env=env(TOY_SLEEP=300, TOY_MARK=mark),
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 600   # a hang guard, not a speed check
        while not (Path(f"{mark}1").exists() and Path(f"{mark}2").exists()):   # both kernels are in the slow cell
            assert proc.poll() is None, proc.communicate()
            assert time.time() < deadline; time.sleep(0.1)
        time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGINT)   # what the terminal does on ctrl-C
        out, err = proc.communicate(timeout=600)
    finally:
        try: os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError: pass
    assert proc.returncode == 130, (proc.returncode, err[-3000:])
    assert 'Traceback' not in err and 'Process trustlib-sweep-worker' not in err, err[-3000:]
    assert len(re.findall(r'^sweep worker \d+: run toy/\S+ stopped by ctrl-C$', err, re.M)) <= 2, err
    assert err.rstrip().endswith('interrupted'), err[-500:]
    assert (done/'metrics.json').read_bytes() == before and R.is_complete(done)          # the complete run is kept
    stopped = [p for p in published(runs/'toy') if p != done.name]
    assert len(stopped) == 2 and all(R.load_run(runs/'toy'/p)['status'] == 'failed' for p in stopped), stopped
    assert not list((runs/'toy').glob('.lock-*'))
