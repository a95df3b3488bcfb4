"""Every bad input refused before work, for all 19 papers: cases generated from each paper's `Config` declarations
(tests/badparams.py: wrong types, values just outside each bound, unknown choices, unknown names for str parameters)
go through `trustlib.runs.validate_params`, the check `trustlib run` / `sweep` make before any run folder exists,
and must be refused with a message naming the parameter. Run as a script for the tally per paper:
`PYTHONPATH=. python tests/test_bad_params.py`."""
import importlib, json, sys
from pathlib import Path
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from badparams import bad_cases, NO_SUCH
from trustlib.config import PAPERS, ConfigError

ROOT = Path(__file__).resolve().parents[1]
IMPLEMENTED = [p for p in PAPERS if (ROOT/'nbs'/p.notebook).exists()]
def outcome(paper, name, value) -> tuple[str, str]:
    "('early', message) if refused before work naming the parameter; ('unnamed', message) if refused without naming it; ('silent', '') if accepted."
    from trustlib.runs import validate_params
    try: validate_params(paper, {name: value}, profile='smoke')
    except ConfigError as e: return ('early' if f"'{name}" in str(e) else 'unnamed'), str(e)
    return 'silent', ''

def tally(papers=IMPLEMENTED) -> dict:
    "Per paper: tried / early / unnamed / silent (and the failing cases)."
    out = {}
    for p in papers:
        Config = importlib.import_module(p.module).Config
        row = dict(tried=0, early=0, unnamed=0, silent=0, failing=[])
        for name, kind, value in bad_cases(Config):
            res, msg = outcome(p.name, name, value)
            row['tried'] += 1; row[res] += 1
            if res != 'early': row['failing'].append((name, kind, repr(value)[:40], msg[:120]))
        out[p.name] = row
    return out

def test_all_papers_have_cases():
    assert len(IMPLEMENTED) == len(PAPERS) == 19
    for p in IMPLEMENTED:
        cases = bad_cases(importlib.import_module(p.module).Config)
        kinds = {k for _, k, _ in cases}
        assert len(cases) >= 20 and {'type', 'range'} <= kinds, (p.name, len(cases), kinds)

@pytest.mark.parametrize('paper', IMPLEMENTED, ids=lambda p: p.name)
def test_bad_inputs_refused_before_work(paper):
    Config = importlib.import_module(paper.module).Config
    failing = []
    for name, kind, value in bad_cases(Config):
        res, msg = outcome(paper.name, name, value)
        if res != 'early': failing.append(f"{name} ({kind}) = {value!r:.40}: {res} {msg[:150]}")
    assert not failing, f"{paper.name}: {len(failing)} bad inputs not refused before work:\n" + '\n'.join(failing)

def test_cli_refuses_before_any_run_folder(tmp_path, capsys):
    "Through the CLI: exit 2, a message naming the parameter, and no run folder, for one generated case per paper."
    from trustlib.cli import main
    for p in IMPLEMENTED:
        name, kind, value = bad_cases(importlib.import_module(p.module).Config)[0]
        rc = main(['run', p.name, '--profile', 'smoke', '-q', '--runs-dir', str(tmp_path), '-p', name, json.dumps(value)])
        err = capsys.readouterr().err
        assert rc == 2 and f"'{name}" in err, (p.name, name, value, rc, err[-300:])
        assert not any(tmp_path.iterdir()), (p.name, list(tmp_path.iterdir()))

if __name__ == '__main__':
    # the closing-note table: tried / early / late / silent per paper. The check is the one `trustlib run` / `sweep` make
    # before any run folder exists, so a case is early or not refused before work; only a case of the second kind would
    # need a run to tell late (fails during the run) from silent (accepted): printed as 'late or silent'.
    t = tally()
    size = {p.name: sum(k == 'soft max' for _, k, _ in bad_cases(importlib.import_module(p.module).Config)) for p in IMPLEMENTED}
    print('| paper | tried | early | late or silent | refused without naming the parameter | of which size bombs (soft max) |')
    print('|---|---:|---:|---:|---:|---:|')
    for p, r in t.items(): print(f"| {p} | {r['tried']} | {r['early']} | {r['silent']} | {r['unnamed']} | {size[p]} |")
    tot = {k: sum(r[k] for r in t.values()) for k in ('tried', 'early', 'unnamed', 'silent')}
    print(f"| all {len(t)} | {tot['tried']} | {tot['early']} | {tot['silent']} | {tot['unnamed']} | {sum(size.values())} |")
    for p, r in t.items():
        for f in r['failing']: print(p, *f, sep='  ')
