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
    heads, table, glance = md['## Headline claims'], md['## All claims'], md['## Verdicts at a glance']
    line = lambda t, key: next(l for l in t.splitlines() if key in l)
    # verdicts are coloured badges linking to the paper page's "Paper vs. us" section
    assert 'class="verdict v-reproduced"' in line(heads, '| db head |') and '#paper-vs.-us)' in line(heads, '| db head |')
    assert 'class="verdict v-not_reproduced"' in line(heads, '| l2h head |')
    assert 'db one' not in heads and f"{verdict_badge('reproduced', 1)} {verdict_badge('not_reproduced', 1)}" in glance
    assert table.index('<b>db head</b>') < table.index('db one') < table.index('db two')
    assert table.index('<b>l2h head</b>') < table.index('l2h one') < table.index('l2h two')
    assert 'Rule.</b> gap &gt;= 0.01' in table and '\\|' not in table and '&amp;gt;' not in table   # escaped once
    for w in VERDICTS: assert verdict_badge(w) in table, w                  # every word shown as its badge, with its label
    assert verdict_badge('partially', 1) in glance and verdict_badge('illustrated', 1) in glance   # counted separately
    prose = next(c.source for c in nb.cells if c.source.startswith('Built by'))
    for w in VERDICTS: assert verdict_badge(w) in prose, w
    # the all-claims table can be sorted and filtered by paper, area and verdict, offline (its script is in the page)
    assert '<select data-key="paper">' in table and '<select data-key="area">' in table and '<select data-key="verdict">' in table
    assert 'data-paper="l2h" data-area="clustering" data-verdict="not_reproduced" data-headline="1"' in table and '<script>' in table
    assert 'http' not in table.split('<script>')[1]                          # no CDN
    hist = md['## Run history']
    assert '<span id="run-disparate_benefits-' in hist and '| Parameters |' in hist
    # and the papers index beside it: every paper by area, with badges and links to the paper and its code
    idx = nbformat.read(nbs/'results'/'papers.ipynb', as_version=4)
    text = '\n'.join(c.source for c in idx.cells)
    assert '## Fairness' in text and 'disparate_benefits' not in text.split('## Fairness')[0]
    assert verdict_badge('planned') in text and verdict_badge('reproduced', 1) in text
    assert 'no official code published' in text.split('## Unlearning')[1] and 'ChildEden' not in text.split('## Unlearning')[1].split('no official code')[0]
    assert 'https://openreview.net/forum?id=sVNNlzjZVN' in text                 # SNS-Bench has a paper link

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


def test_paper_registry_links_every_paper():
    from trustlib.config import PAPERS, get_paper
    for p in PAPERS:
        assert p.url.startswith('https://') and p.authors and p.venue.startswith('ICML 2025'), p.name
        assert p.bibtex().count('{') == p.bibtex().count('}') and p.title in p.bibtex()
    assert get_paper('dsda').code == '' and 'ISPF' in get_paper('dsda').code_note          # a baseline's code is not the paper's
    for n in ('dsda', 'noisy_signsgd', 'pta', 'sns_bench'): assert get_paper(n).url, n       # the index used to give no link


def _ledger(root, paper, pubs):
    from trustlib.results import atomic_write_text
    atomic_write_text(root/'nbs'/'results'/'ledger'/f'{paper}.json', json.dumps(dict(paper=paper, publications=pubs)))

def test_published_record_follows_the_ledger(tmp_path):
    "The site shows the ledger's latest publication; metrics.json adds the words, never changes a verdict."
    from trustlib.report import published_record, published_table, summary_box, audit_trail
    root = tmp_path; (root/'nbs'/'papers'/'clustering').mkdir(parents=True); (root/'nbs'/'papers'/'clustering'/'l2h.ipynb').write_text('{}')
    v = lambda i, verdict, head: dict(id=i, claim_hash='h' + i, verdict=verdict, claim=f'claim {i} |x| < 0.01', rule=f'reproduced if |{i}| < 0.01', ours='0.1', headline=head)
    _ledger(root, 'l2h', [dict(run_id='cpu-a', date='2026-12-01', commit='aaa', profile='cpu', claims_hash=None, cpu_seconds=None, legacy=True,
                               verdicts=[v('a', 'partially', True), v('b', 'inconclusive', False)]),
                          dict(run_id='cpu-b', date='2026-12-05', commit='bbb', profile='cpu', claims_hash='hh', cpu_seconds=61.0,
                               verdicts=[v('a', 'reproduced', True), v('b', 'inconclusive', False)])])
    write_json(root/'runs'/'l2h'/'cpu-b'/'metrics.json', dict(paper='l2h', run_id='cpu-b', status='complete', verdicts=[
        dict(v('a', 'reproduced', True), paper='0.9 (Table 2)', reason='the interval clears 0.01'), dict(v('b', 'inconclusive', False), paper='x', reason='one seed')]))
    rec = published_record('l2h', root, claims=[])
    assert rec['headline']['verdict'] == 'reproduced' and rec['headline']['paper'] == '0.9 (Table 2)' and rec['sources'][:2] == ['ledger', 'metrics.json']
    assert [(h['id'], h['old'], h['new']) for h in rec['history']] == [('a', 'partially', 'reproduced')]
    box = summary_box(rec)
    assert 'data-verdict="reproduced" data-run="cpu-b"' in box and '61 s CPU' in box and 'claims hash <code>hh</code>' in box
    assert 'claim a |x| &lt; 0.01' in box and '\\|' not in box
    assert 'no official code published' in box and 'arXiv' in box
    a = audit_trail(rec, {'claims (CSV)': 'x.csv'})
    assert a.index('cpu-b') < a.index('cpu-a') and 'same rule; the measurements changed' in a and '<tr id="claim-a">' in a
    pt = published_table(root, records={'l2h': rec})
    assert pt[pt.name == 'l2h'].verdict.tolist() == ['reproduced', 'inconclusive'] and (pt.verdict == 'planned').sum() == 18
