"""The dashboard on a crafted runs folder: two papers whose verdicts use all six words, one headline claim each."""
import json, re
from pathlib import Path

import nbformat, pytest

from trustlib.results import VERDICTS, write_json
from trustlib.report import (HEADLINE_MARK, STATUS_STYLE, VERDICT_STYLE, build_dashboard, verdict_chart, verdict_color,
                             verdict_label, verdict_table, verdict_badge)


def _v(claim, verdict, headline=False, rule=''):
    return dict(claim=claim, paper='0.10', ours='0.08', verdict=verdict, reason=f'why {claim}', rule=rule, headline=headline)

@pytest.fixture
def crafted(tmp_path):
    runs, nbs = tmp_path/'runs', tmp_path/'nbs'
    for sub, name in [('fairness', 'disparate_benefits'), ('clustering', 'l2h')]:
        (nbs/'papers'/sub).mkdir(parents=True, exist_ok=True); (nbs/'papers'/sub/f'{name}.ipynb').write_text('{}')
    papers = {'disparate_benefits': [_v('db one', 'partially'), _v('db two', 'illustrated'), _v('db head', 'reproduced', True, 'gap >= 0.01')],
              'l2h': [_v('l2h one', 'not_testable_offline'), _v('l2h two', 'inconclusive'), _v('l2h head', 'not_reproduced', True, 'ci excludes 0')]}
    for name, vs in papers.items():
        write_json(runs/name/'cpu-0123456789'/'metrics.json', dict(paper=name, run_id='cpu-0123456789', status='complete', profile='cpu',
                   params={}, metrics={}, verdicts=vs, finished='2026-05-01T10:00:00+00:00', git_commit='abc', git_dirty=False))
    return runs, nbs

def test_every_verdict_word_is_styled():
    assert tuple(VERDICT_STYLE) == VERDICTS
    labels = [verdict_label(v) for v in VERDICTS]
    colors = [verdict_color(v) for v in [*VERDICTS, *STATUS_STYLE]]
    assert len(set(labels)) == 6 and len(set(colors)) == len(colors)
    assert verdict_label('illustrated') != verdict_label('partially') and verdict_color('illustrated') != verdict_color('partially')

def test_headline_first_and_chart_builds(crafted):
    runs, nbs = crafted
    vt = verdict_table(runs, nbs_dir=nbs)
    assert set(vt.verdict) >= set(VERDICTS)
    for name, head in [('disparate_benefits', 'db head'), ('l2h', 'l2h head')]:
        rows = vt[vt.name == name]
        assert list(rows.claim)[0] == head and list(rows.headline) == [True, False, False]
        assert rows.rule.iloc[0] != '' and list(rows.claim)[1:] == [c for c in rows.claim if c != head]   # others keep their order
    png = verdict_chart(vt)
    assert png[:8] == b'\x89PNG\r\n\x1a\n'
    nb = nbformat.read(build_dashboard(runs, out=nbs/'results'/'dashboard.ipynb', nbs_dir=nbs), as_version=4)
    md = {c.source.splitlines()[0]: c.source for c in nb.cells if c.cell_type == 'markdown'}
    heads, table = md['## Headline claims'], md['## The 19 papers']
    line = lambda t, key: next(l for l in t.splitlines() if key in l)
    # verdicts are coloured badges linking to the paper page's "Paper vs. us" section
    assert 'class="verdict v-reproduced"' in line(heads, '| db head |') and '#paper-vs.-us)' in line(heads, '| db head |')
    assert 'class="verdict v-not_reproduced"' in line(heads, '| l2h head |')
    assert 'db one' not in heads and f"{verdict_badge('reproduced', 1)} {verdict_badge('not_reproduced', 1)}" in heads
    assert table.index(f'{HEADLINE_MARK} **db head**') < table.index('db one') < table.index('db two')
    assert table.index(f'{HEADLINE_MARK} **l2h head**') < table.index('l2h one') < table.index('l2h two')
    assert 'rule: `gap &gt;= 0.01`' in table
    for w in VERDICTS: assert verdict_badge(w) in table, w                  # every word shown as its badge, with its label
    assert verdict_badge('partially', 1) in table and verdict_badge('illustrated', 1) in table   # counted separately
    prose = next(c.source for c in nb.cells if c.source.startswith('Built by'))
    for w in VERDICTS: assert verdict_badge(w) in prose, w
    # each claim's run links to its row in the run history, which names the parameters
    hist = md['## Run history']
    assert '<span id="run-disparate_benefits-' in hist and '| Parameters |' in hist
    anchors = set(re.findall(r'\]\(#(run-[^)]+)\)', table))
    assert anchors and all(f'id="{a}"' in hist for a in anchors)
    # and the papers index beside it: every paper by area, with badges
    idx = nbformat.read(nbs/'results'/'papers.ipynb', as_version=4)
    text = '\n'.join(c.source for c in idx.cells)
    assert '## Fairness' in text and 'disparate_benefits' not in text.split('## Fairness')[0]
    assert text.count('| planned |') >= 1 and verdict_badge('reproduced', 1) in text

def test_unknown_verdict_word_is_refused(crafted):
    import pandas as pd
    with pytest.raises(ValueError, match='unknown verdict'):
        verdict_chart(pd.DataFrame(dict(name=['a'], verdict=['sort of'], run_id=['r'])))


def test_sweep_report_has_a_table_and_a_plot_per_swept_parameter(tmp_path):
    from trustlib.report import build_sweep_report, sweep_table
    from trustlib.cli import main
    runs = tmp_path/'runs'
    spec = dict(paper='disparate_benefits', profile='smoke', params={'n_members': 3}, grid={'seed': [0, 1], 'noise_levels': [[0.3], [0.9]]})
    k = 0
    for seed in (0, 1):
        for nl in ([0.3], [0.9]):
            if (seed, nl) == (1, [0.9]): continue          # one grid point never ran
            k += 1
            write_json(runs/'disparate_benefits'/f'smoke-{k:010d}'/'metrics.json', dict(paper='disparate_benefits', run_id=f'smoke-{k:010d}',
                       status='complete', profile='smoke', params={'n_members': 3, 'seed': seed, 'noise_levels': nl},
                       metrics={'acc': 0.5 + 0.1 * seed + nl[0], 'gap': 0.01 * k, 'note': 'text'}, verdicts=[],
                       finished=f'2026-05-01T10:0{k}:00+00:00', git_commit='abc', git_dirty=False))
    # a run of another profile and one with other fixed parameters must not be picked up
    write_json(runs/'disparate_benefits'/'cpu-x'/'metrics.json', dict(paper='disparate_benefits', run_id='cpu-x', status='complete', profile='cpu',
               params={'n_members': 3, 'seed': 1, 'noise_levels': [0.9]}, metrics={'acc': 9.0}, verdicts=[], finished='2026-05-01T11:00:00+00:00'))
    write_json(runs/'disparate_benefits'/'smoke-y'/'metrics.json', dict(paper='disparate_benefits', run_id='smoke-y', status='complete', profile='smoke',
               params={'n_members': 5, 'seed': 1, 'noise_levels': [0.9]}, metrics={'acc': 9.0}, verdicts=[], finished='2026-05-01T11:00:00+00:00'))
    df = sweep_table(spec, runs)
    assert list(df.status) == ['complete', 'complete', 'complete', 'missing']
    assert df.acc.round(3).tolist()[:3] == [0.8, 1.4, 0.9] and df.acc.isna().tolist()[3]
    out = build_sweep_report(spec, runs)
    nb = nbformat.read(out, as_version=4)
    md = '\n'.join(c.source for c in nb.cells if c.cell_type == 'markdown')
    assert '3 of 4 grid points' in md and '| seed | noise_levels | status | run_id | acc | gap |' in md
    pngs = [o for c in nb.cells for o in c.get('outputs', []) if 'image/png' in o.get('data', {})]
    assert len(pngs) == 2 and '## Against `seed`' in md and '## Against `noise_levels`' in md
    spec_file = tmp_path/'s.yaml'
    import yaml; spec_file.write_text(yaml.safe_dump(spec))
    assert main(['report', '--runs-dir', str(runs), '--sweep', str(spec_file), '--out', str(tmp_path/'sw.ipynb')]) == 0
    assert (tmp_path/'sw.ipynb').exists()
