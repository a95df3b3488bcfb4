"""Integration tests of trustlib.runs / trustlib.report / trustlib.cli: parameter validation, atomic and
failed runs, resumable sweeps after a kill, the dashboard, publishing, and nbdev's docs pre-processing.

The runs execute the toy notebook tests/fixtures/toy.ipynb with papermill (a kernel on localhost)."""
import json, os, shutil, signal, subprocess, sys, textwrap, time
from pathlib import Path

import pytest

import trustlib.config
import trustlib.runs as R
from trustlib.cli import main
from trustlib.config import ConfigError, Paper
from trustlib.report import build_dashboard, collect_runs, verdict_table
from trustlib.results import write_json

ROOT = Path(__file__).resolve().parents[1]
TOY = ROOT/'tests'/'fixtures'/'toy.ipynb'

# papermill talks to its kernel over localhost TCP; everything else stays blocked (pyproject's --allow-hosts).
kernel = pytest.mark.enable_socket


def published(runs_dir: Path, name='toy') -> list[Path]:
    "Run folders a reader would see (hidden .tmp-* folders excluded)."
    d = runs_dir/name
    return sorted(p for p in d.iterdir() if not p.name.startswith('.')) if d.exists() else []


@pytest.fixture
def fake_repo(tmp_path, monkeypatch):
    """A minimal checkout whose paper 'toy' (#99) is the toy notebook, with a validated Config module
    (seed >= 0 from BaseConfig, 0 <= sleep <= 10), so range checks can be exercised through the CLI."""
    root = tmp_path/'repo'
    (root/'nbs'/'papers'/'toy').mkdir(parents=True)
    (root/'settings.ini').write_text("[DEFAULT]\nnbs_path = nbs\nallowed_cell_metadata_keys = tags\nallowed_metadata_keys = \nclean_ids = True\n")
    shutil.copy(ROOT/'jupytext.toml', root/'jupytext.toml')
    shutil.copy(TOY, root/'nbs'/'papers'/'toy'/'toy.ipynb')
    (tmp_path/'toy_paper_cfg.py').write_text(textwrap.dedent('''
        from dataclasses import dataclass
        from trustlib.config import BaseConfig, param
        @dataclass
        class Config(BaseConfig):
            fail: bool = param(False, "fail on purpose")
            sleep: float = param(0.0, "seconds to sleep", ge=0, le=10)
        '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    orig = trustlib.config.get_paper
    toy = Paper(99, 'toy', 'toy', 'Toy paper', 'toy_paper_cfg')
    monkeypatch.setattr(trustlib.config, 'get_paper', lambda n: toy if n == 'toy' else orig(n))
    monkeypatch.chdir(root)
    monkeypatch.delenv('TRUSTLIB_RUNS', raising=False)
    return root


# --- parameter validation ------------------------------------------------------------------------------

@pytest.mark.parametrize('args, msg', [
    (['-p', 'seeed', '1'], "unknown parameter(s) ['seeed'] for toy; allowed: ['fail', 'seed', 'sleep']"),
    (['-p', 'seed', 'three'], "parameter 'seed': expected int, got 'three'"),
    (['-p', 'fail', '3'], "parameter 'fail': expected bool"),
    (['-p', 'seed', '-1'], "parameter 'seed': -1 is out of range; must be >= 0"),
    (['-p', 'sleep', '11'], "parameter 'sleep': 11.0 is out of range; must be <= 10"),
    (['-p', 'seed', '1', '-p', 'seed', '2'], "parameter 'seed' given twice"),
])
def test_cli_rejects_bad_params_before_any_work(fake_repo, capsys, args, msg):
    assert main(['run', 'toy', '--profile', 'smoke', *args]) == 2
    assert msg in capsys.readouterr().err
    assert not (fake_repo/'runs').exists()   # nothing ran, no folder was made


def test_cli_unknown_and_planned_papers(fake_repo, capsys):
    assert main(['run', 'disparate', '--profile', 'smoke']) == 2
    assert "unknown paper 'disparate'" in capsys.readouterr().err
    assert main(['run', 'saebench', '--profile', 'smoke']) == 2
    assert "'saebench' (#19) is planned: its notebook nbs/papers/interp/saebench.ipynb does not exist yet" in capsys.readouterr().err
    assert main(['list', '--params', 'toy']) == 0
    out = capsys.readouterr().out
    assert 'sleep' in out and '<= 10' in out and 'seconds to sleep' in out


def test_validate_params_on_a_notebook_uses_annotations():
    assert R.validate_params(notebook=TOY, params=dict(seed=2, sleep=1), profile='smoke') == dict(seed=2, sleep=1)
    with pytest.raises(ConfigError, match=r"unknown parameter\(s\) \['n'\]"): R.validate_params(notebook=TOY, params=dict(n=1))
    with pytest.raises(ConfigError, match="parameter 'sleep': expected float"): R.validate_params(notebook=TOY, params=dict(sleep='long'))
    with pytest.raises(ConfigError, match="not allowed; choose one of"): R.validate_params(notebook=TOY, profile='gpu')
    with pytest.raises(ConfigError, match="not inside a trustlib checkout"): R.find_root('/')


# --- single runs -----------------------------------------------------------------------------------------

@kernel
def test_successful_run_writes_complete_metrics(tmp_path):
    d = R.run_notebook(notebook=TOY, params=dict(seed=5), profile='smoke', runs_dir=tmp_path, progress=False)
    assert d == tmp_path.resolve()/'toy'/R.run_id('smoke', dict(seed=5))
    m = json.loads((d/'metrics.json').read_text())
    assert (m['status'], m['paper'], m['profile'], m['params']) == ('complete', 'toy', 'smoke', dict(seed=5))
    assert m['metrics'] == dict(value=10, seed_squared=25)
    assert m['config']['seed'] == 5 and m['verdicts'][0]['verdict'] == 'reproduced'
    assert {'python', 'numpy', 'papermill'} <= set(m['versions'])
    assert m['duration_s'] > 0 and m['started'] < m['finished'] and m['notebook'] == 'toy.ipynb'
    assert 'git_commit' in m and 'git_dirty' in m and m['hostname']
    assert (d/'toy.ipynb').exists() and R.is_complete(d)
    assert [p.name for p in (tmp_path/'toy').iterdir()] == [d.name]   # no temp folders left


@kernel
def test_failed_run_is_recorded_as_failed(tmp_path):
    with pytest.raises(R.RunFailed) as ei:
        R.run_notebook(notebook=TOY, params=dict(seed=2, fail=True), profile='smoke', runs_dir=tmp_path, progress=False)
    d = ei.value.run_dir
    assert d == tmp_path.resolve()/'toy'/R.run_id('smoke', dict(seed=2, fail=True))
    m = R.load_run(d)
    assert m['status'] == 'failed' and m['error'] == 'RuntimeError: toy failure requested (seed=2)'
    assert 'raise RuntimeError' in m['traceback'] and m['metrics'] == {} and m['verdicts'] == []
    assert not (d/'result.json').exists()     # nothing that looks like a complete result
    assert (d/'toy.ipynb').exists()           # the partially executed notebook, for debugging
    assert not R.is_complete(d)
    assert list(collect_runs(tmp_path).status) == ['failed']


@kernel
def test_crash_at_final_rename_leaves_nothing_that_looks_complete(tmp_path, monkeypatch):
    real = R._rename
    def crash(src, dst):
        if Path(src).name.startswith('.tmp-') and not Path(dst).name.startswith('.'): raise OSError(28, 'No space left on device (simulated)')
        return real(src, dst)
    monkeypatch.setattr(R, '_rename', crash)
    with pytest.raises(R.RunFailed, match='recording the failure failed') as ei:
        R.run_notebook(notebook=TOY, params=dict(seed=1), profile='smoke', runs_dir=tmp_path, progress=False)
    assert ei.value.run_dir is None
    assert published(tmp_path) == []                                   # no runs/toy/<id> at all
    hidden = [p for p in (tmp_path/'toy').iterdir() if p.name.startswith('.tmp-')]
    assert len(hidden) == 1 and (hidden[0]/'metrics.json').exists()  # the half-published run stays hidden...
    assert len(collect_runs(tmp_path)) == 0                            # ...and is ignored by readers
    monkeypatch.setattr(R, '_rename', real)
    d = R.run_notebook(notebook=TOY, params=dict(seed=1), profile='smoke', runs_dir=tmp_path, progress=False)
    assert R.is_complete(d) and R.load_run(d)['metrics']['value'] == 2
    assert [p.name for p in (tmp_path/'toy').iterdir()] == [d.name]    # the stale temp folder was cleaned


@kernel
def test_rerun_replaces_the_old_run(tmp_path):
    d1 = R.run_notebook(notebook=TOY, params=dict(seed=3), profile='smoke', runs_dir=tmp_path, progress=False)
    t1 = R.load_run(d1)['finished']
    d2 = R.run_notebook(notebook=TOY, params=dict(seed=3), profile='smoke', runs_dir=tmp_path, progress=False)
    assert d1 == d2 and R.load_run(d2)['finished'] > t1
    assert [p.name for p in (tmp_path/'toy').iterdir()] == [d2.name]


# --- sweeps ----------------------------------------------------------------------------------------------

def test_sweep_spec_is_validated_before_any_run(tmp_path, capsys):
    spec = tmp_path/'s.yaml'
    spec.write_text(f"notebook: {TOY}\nprofile: smoke\ngrid:\n  seed: [0, 1, two]\n")
    assert main(['sweep', str(spec), '--runs-dir', str(tmp_path/'runs')]) == 2
    assert "parameter 'seed': expected int, got 'two'" in capsys.readouterr().err
    spec.write_text(f"notebook: {TOY}\ngrid: {{seed: 3}}\n")
    assert main(['sweep', str(spec), '--runs-dir', str(tmp_path/'runs')]) == 2
    assert "grid 'seed' must be a non-empty list" in capsys.readouterr().err
    spec.write_text("!!python/object/apply:os.system ['echo pwned']\n")   # specs are data: safe_load refuses this
    assert main(['sweep', str(spec), '--runs-dir', str(tmp_path/'runs')]) == 2
    assert 'invalid YAML' in capsys.readouterr().err
    assert not (tmp_path/'runs').exists()


@kernel
def test_sweep_resumes_after_killed_worker(tmp_path):
    runs = tmp_path/'runs'
    spec = tmp_path/'toy.yaml'
    spec.write_text(f"notebook: {TOY}\nprofile: smoke\nparams: {{sleep: 1.5}}\ngrid:\n  seed: [0, 1, 2, 3, 4, 5]\n")
    cmd = [sys.executable, '-c', 'import sys; from trustlib.cli import main; sys.exit(main(sys.argv[1:]))',
           'sweep', str(spec), '--runs-dir', str(runs), '--workers', '1', '-q']
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 600   # a hang guard, not a speed check: generous for a busy machine
        while sum(R.is_complete(p) for p in published(runs)) < 2:
            assert proc.poll() is None, 'the sweep ended before it could be killed'
            assert time.time() < deadline, 'the sweep made no progress'
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL); proc.wait()
    before = {p.name: R.load_run(p)['finished'] for p in published(runs) if R.is_complete(p)}
    assert 2 <= len(before) < 6
    df = R.sweep(spec, workers=2, runs_dir=runs, progress=False)
    assert list(df.status) == ['complete'] * 6
    assert set(df[df.skipped].run_id) == set(before)                  # finished runs were skipped...
    for rid, fin in before.items(): assert R.load_run(runs/'toy'/rid)['finished'] == fin   # ...not re-executed
    folders = published(runs)
    assert sorted(p.name for p in folders) == sorted(df.run_id) and all(R.is_complete(p) for p in folders)
    assert sorted(R.load_run(p)['metrics']['value'] for p in folders) == [0, 2, 4, 6, 8, 10]
    assert R.sweep(spec, runs_dir=runs, progress=False).skipped.all()


# --- publishing ------------------------------------------------------------------------------------------

@kernel
def test_run_publish_updates_the_paper_notebook(fake_repo, capsys):
    assert main(['run', 'toy', '--profile', 'smoke', '-p', 'seed', '4', '-q', '--publish']) == 0
    out = capsys.readouterr().out
    assert 'value = 8' in out and 'published:' in out
    nb = json.loads((fake_repo/'nbs'/'papers'/'toy'/'toy.ipynb').read_text())
    inj = [c for c in nb['cells'] if 'injected-parameters' in c['metadata'].get('tags', [])]
    # papermill's injected cell becomes a note: Run All in Jupyter follows the parameters cell as written
    assert len(inj) == 1 and inj[0]['cell_type'] == 'markdown' and '`seed = 4`' in ''.join(inj[0]['source'])
    assert 'This page shows a run with' in ''.join(inj[0]['source'])
    assert any(o.get('data', {}).get('text/plain') for c in nb['cells'] for o in c.get('outputs', []))   # carries outputs
    assert 'papermill' not in nb['metadata'] and all(set(c['metadata']) <= {'tags'} for c in nb['cells'])
    py = (fake_repo/'scripts'/'papers'/'toy'/'toy.py').read_text()
    assert '[markdown] tags=["injected-parameters"]' in py and 'tags=[]' not in py
    # the notebook changed after a run started: refuse to publish over it
    d = fake_repo/'runs'/'toy'/R.run_id('smoke', dict(seed=4))
    m = R.load_run(d); m['source_sha1'] = m['source_code_sha1'] = '0' * 40; write_json(d/'metrics.json', m)
    from trustlib.cli import publish_run
    with pytest.raises(ConfigError, match='changed since run'): publish_run(d)


# --- report and site -------------------------------------------------------------------------------------

def test_dashboard_lists_all_19_papers(tmp_path):
    runs, nbs = tmp_path/'runs', tmp_path/'nbs'
    (nbs/'papers'/'fairness').mkdir(parents=True); (nbs/'papers'/'fairness'/'disparate_benefits.ipynb').write_text('{}')
    (nbs/'papers'/'theory').mkdir(parents=True); (nbs/'papers'/'theory'/'random_features.ipynb').write_text('{}')
    v = dict(claim='ensembles help', paper='+2%', ours='+1.5%', verdict='partially', reason='smaller scale')
    write_json(runs/'disparate_benefits'/'cpu-0123456789'/'metrics.json', dict(paper='disparate_benefits', run_id='cpu-0123456789',
               status='complete', profile='cpu', params={}, metrics=dict(acc=0.9), verdicts=[v], finished='2026-05-01T10:00:00+00:00'))
    write_json(runs/'disparate_benefits'/'.tmp-cpu-x-1'/'metrics.json', dict(paper='disparate_benefits', status='complete'))
    vt = verdict_table(runs, nbs_dir=nbs)
    assert sorted(set(vt.number)) == list(range(1, 20)) and len(vt) == 19
    assert vt.set_index('name').loc['disparate_benefits', 'verdict'] == 'partially'
    assert vt.set_index('name').loc['random_features', 'verdict'] == 'not yet run'
    assert (vt.verdict == 'planned').sum() == 17
    out = build_dashboard(runs, out=nbs/'results'/'dashboard.ipynb', nbs_dir=nbs)
    nb = json.loads(out.read_text())
    md = '\n'.join(''.join(c['source']) for c in nb['cells'] if c['cell_type'] == 'markdown')
    assert md.startswith('# Results dashboard — paper vs. us\n\n> ')
    for p in trustlib.config.PAPERS: assert f'| {p.number} |' in md and p.title in md
    assert '](../papers/fairness/disparate_benefits.ipynb)' in md and '](../papers/interp/' not in md
    assert 'class="verdict v-partially"' in md and 'cpu-0123456789' in md
    png = [o for c in nb['cells'] for o in c.get('outputs', []) if 'image/png' in o.get('data', {})]
    assert len(png) == 1 and png[0]['data']['image/png'].startswith('iVBOR')
    assert (nbs/'results'/'.notest').exists()


def test_pre_docs_keeps_symlinked_quarto_yml_and_site_check(tmp_path):
    "nbdev's _pre_docs (Quarto installer disabled) on a small checkout; then the site check, good and broken."
    root = tmp_path/'site'
    (root/'nbs'/'core').mkdir(parents=True); (root/'nbs'/'results').mkdir(); (root/'fakelib').mkdir()
    (root/'fakelib'/'__init__.py').write_text('')
    ini = (ROOT/'settings.ini').read_text().replace('lib_name = trustlib-icml25', 'lib_name = fakelib').replace('lib_path = trustlib', 'lib_path = fakelib')
    (root/'settings.ini').write_text(ini)
    shutil.copy(ROOT/'_quarto.yml', root/'_quarto.yml')
    os.symlink('../_quarto.yml', root/'nbs'/'_quarto.yml')
    def nb(path, title, md):   # nbdev turns the title cell into front matter; links live in the next cell
        cells = [dict(cell_type='markdown', id='a', metadata={}, source=f'# {title}\n\n> {title} page'),
                 dict(cell_type='markdown', id='b', metadata={}, source=md)]
        path.write_text(json.dumps(dict(nbformat=4, nbformat_minor=5, cells=cells,
                                        metadata=dict(kernelspec=dict(name='python3', language='python', display_name='Python 3')))))
    nb(root/'nbs'/'index.ipynb', 'Home', 'See [the config](core/00_config.ipynb) and [results](results/dashboard.ipynb#the-19-papers).')
    nb(root/'nbs'/'core'/'00_config.ipynb', 'config', 'Back [home](../index.ipynb "home").')
    nb(root/'nbs'/'results'/'dashboard.ipynb', 'Results dashboard', '## The 19 papers\n\n[config](../core/00_config.ipynb)')
    nb(root/'nbs'/'results'/'papers.ipynb', 'Papers', '[dashboard](dashboard.ipynb)')
    nb(root/'nbs'/'use.ipynb', 'Use and contribute', 'Back [home](index.ipynb).')   # the navbar links to it
    nb(root/'nbs'/'core'/'01_data.ipynb', 'data', 'A [broken link](../papers/nope.ipynb) and [a good one](00_config.ipynb).')
    code = ('import sys, json; from trustlib.cli import build_proc, check_site; '
            'build_proc("."); print(json.dumps(check_site(".")))')
    env = {**os.environ, 'PYTHONPATH': str(ROOT)}
    r = subprocess.run([sys.executable, '-c', code], cwd=root, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == ["core/01_data.ipynb: link '../papers/nope.ipynb' does not resolve"]
    assert (root/'nbs'/'_quarto.yml').is_symlink()                              # nbdev kept the symlink
    assert (root/'_proc'/'_quarto.yml').read_text() == (root/'_quarto.yml').read_text()
    side = (root/'_proc'/'sidebar.yml').read_text()
    assert 'core/00_config.ipynb' in side and 'core/01_data.ipynb' in side and 'results/dashboard.ipynb' in side
