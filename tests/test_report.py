"""The dashboard on a crafted runs folder: two papers whose verdicts use all six words, one headline claim each."""
import json
from pathlib import Path

import nbformat, pytest

from trustlib.results import VERDICTS, write_json
from trustlib.report import (HEADLINE_MARK, STATUS_STYLE, VERDICT_STYLE, build_dashboard, verdict_chart, verdict_color,
                             verdict_label, verdict_table)


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
    assert '| db head | **reproduced** |' in heads and '| l2h head | **not reproduced** |' in heads
    assert 'db one' not in heads and '1 reproduced, 1 not reproduced' in heads
    assert table.index(f'{HEADLINE_MARK} **db head**') < table.index('db one') < table.index('db two')
    assert table.index(f'{HEADLINE_MARK} **l2h head**') < table.index('l2h one') < table.index('l2h two')
    assert 'rule: `gap &gt;= 0.01`' in table
    for w in VERDICTS: assert f'**{verdict_label(w)}**' in table, w          # every word shown, bold, with its label
    assert '1 partially' in table and '1 illustrated' in table               # counted separately
    prose = next(c.source for c in nb.cells if c.source.startswith('Built by'))
    for w in VERDICTS: assert f'**{verdict_label(w)}**' in prose, w

def test_unknown_verdict_word_is_refused(crafted):
    import pandas as pd
    with pytest.raises(ValueError, match='unknown verdict'):
        verdict_chart(pd.DataFrame(dict(name=['a'], verdict=['sort of'], run_id=['r'])))
