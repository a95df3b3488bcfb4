# %% [markdown]
# # report — collecting runs into the results table and the dashboard
#
# > Collect run folders into one results table, pick the latest run per paper, and build the results dashboard.

# %% [markdown]
# Every run folder (`runs/<paper>/<run_id>/`, see `trustlib.runs`) holds a `metrics.json`. This notebook
# turns them into one pandas table, a "paper vs. us" verdict table for all 19 papers, and the website's
# results dashboard (`nbs/results/dashboard.ipynb`), a notebook built from stored outputs: it is written, not
# executed.

# %%
#| default_exp report

# %%
#| export
from __future__ import annotations
import base64, html, io, json, math, os, re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from trustlib.config import PAPERS
from trustlib.results import VERDICTS, atomic_write_text
from trustlib.runs import iter_runs, default_runs_dir, find_root, nbs_path

# %%
#| hide
from fastcore.test import test_eq, test_fail
import tempfile, nbformat
import pandas as pd
from IPython.display import Image, HTML
from trustlib.results import write_json, Claim, Above, Change, append_ledger
from dataclasses import dataclass
from trustlib.config import BaseConfig, param

# %% [markdown]
# ## Collecting runs
#
# `collect_runs` reads every published run folder (hidden `.tmp-*` folders of runs in progress or killed
# runs are ignored) into one row: the run's identity and status, its parameters as `params.<name>` columns
# and its metrics, flattened, as `metrics.<name>` columns.

# %%
#| export
_BASE_COLS = ['paper', 'run_id', 'status', 'profile', 'started', 'finished', 'duration_s', 'git_commit', 'git_dirty',
              'n_verdicts', 'error', 'path', 'rehearsal']

def _flatten(d:dict, prefix:str) -> dict[str, Any]:
    out = {}
    for k, v in (d or {}).items():
        if isinstance(v, dict): out.update(_flatten(v, f"{prefix}{k}."))
        else: out[f"{prefix}{k}"] = v
    return out

def collect_runs(runs_dir:str|Path|None=None # default: $TRUSTLIB_RUNS or <repo>/runs
                ):
    "One row per run folder with a `metrics.json`: identity, status, `params.*` and `metrics.*` columns."
    import pandas as pd
    runs_dir = Path(runs_dir) if runs_dir is not None else default_runs_dir()
    rows = []
    for rd in iter_runs(runs_dir):
        try: m = json.loads((rd/'metrics.json').read_text(encoding='utf-8'))
        except (OSError, ValueError) as e:
            rows.append(dict(paper=rd.parent.name, run_id=rd.name, status='unreadable', error=str(e), path=str(rd))); continue
        row = {k: m.get(k) for k in _BASE_COLS if k not in ('n_verdicts', 'path', 'error', 'rehearsal')}
        row['rehearsal'] = bool(m.get('rehearsal'))   # a rehearsal of the full profile on stand-ins (never published)
        row.update(paper=m.get('paper', rd.parent.name), run_id=m.get('run_id', rd.name), n_verdicts=len(m.get('verdicts') or []),
                   error=m.get('error'), path=str(rd))
        row.update(_flatten(m.get('params'), 'params.')); row.update(_flatten(m.get('metrics'), 'metrics.'))
        rows.append(row)
    df = pd.DataFrame(rows)
    for c in _BASE_COLS:
        if c not in df.columns: df[c] = None
    extra = sorted(c for c in df.columns if c not in _BASE_COLS)
    df = df[_BASE_COLS + extra]
    return df.sort_values(['paper', 'finished'], na_position='first', kind='stable').reset_index(drop=True)


# %% [markdown]
# An example runs folder, written by hand (the format `trustlib.runs.run_notebook` writes): two `cpu` runs
# and one `smoke` run of one paper, a failed run, and a hidden temporary folder of a killed run.

# %%
def _fake_run(runs, paper, rid, status='complete', profile='cpu', finished='2026-01-01T00:00:00+00:00', verdicts=(), **metrics):
    write_json(runs/paper/rid/'metrics.json', dict(paper=paper, run_id=rid, status=status, profile=profile, params=dict(seed=0),
               metrics=metrics, verdicts=list(verdicts), started=finished, finished=finished, duration_s=1.5,
               git_commit='abc1234def', git_dirty=False, **({'error': 'RuntimeError: boom'} if status == 'failed' else {})))

V = lambda c, v, headline=False: dict(claim=c, paper='0.10', ours='0.08', verdict=v, reason='same direction, smaller scale',
                                     rule='ours >= 0.5 * paper' if v != 'illustrated' else '', headline=headline)
runs = Path(tempfile.mkdtemp())/'runs'
_fake_run(runs, 'disparate_benefits', 'cpu-aaaaaaaaaa', finished='2026-01-01T00:00:00+00:00', verdicts=[V('ensembles help', 'partially', True)], acc=0.8)
_fake_run(runs, 'disparate_benefits', 'cpu-bbbbbbbbbb', finished='2026-02-01T00:00:00+00:00',
          verdicts=[V('gap grows', 'not_reproduced'), V('ensembles help', 'reproduced', True), V('a picture of the gap', 'illustrated')],
          acc=0.9, group=dict(a=0.1))
_fake_run(runs, 'disparate_benefits', 'smoke-cccccccccc', profile='smoke', finished='2026-03-01T00:00:00+00:00', acc=0.5)
_fake_run(runs, 'l2h', 'cpu-dddddddddd', status='failed', finished='2026-03-02T00:00:00+00:00')
(runs/'l2h'/'.tmp-cpu-eeeeeeeeee-1234').mkdir()
write_json(runs/'l2h'/'.tmp-cpu-eeeeeeeeee-1234'/'metrics.json', dict(paper='l2h', status='complete'))   # must be ignored
df = collect_runs(runs)
test_eq(list(df.run_id), ['cpu-aaaaaaaaaa', 'cpu-bbbbbbbbbb', 'smoke-cccccccccc', 'cpu-dddddddddd'])
test_eq(list(df.status), ['complete', 'complete', 'complete', 'failed'])
test_eq(df['metrics.acc'].tolist()[:3], [0.8, 0.9, 0.5])
test_eq(df.loc[1, 'metrics.group.a'], 0.1)
test_eq(df.loc[1, 'n_verdicts'], 3)
test_eq(len(collect_runs(Path(tempfile.mkdtemp())/'nothing')), 0)
df[['paper', 'run_id', 'status', 'profile', 'finished', 'metrics.acc']]


# %% [markdown]
# ## The latest run per paper
#
# The dashboard shows, for each paper, its latest *complete* run of one profile (`cpu` by default, the profile
# of published results).

# %%
#| export
def latest_runs(df, # the output of `collect_runs`
                profile:str|None="cpu" # only runs of this profile (None: any profile)
               ):
    "The latest complete run per paper (by `finished` time), one row per paper."
    d = df[df.status == 'complete']
    if profile is not None: d = d[d.profile == profile]
    return d.sort_values('finished', kind='stable').groupby('paper', sort=True).tail(1).sort_values('paper').reset_index(drop=True)


# %%
test_eq(list(latest_runs(df).run_id), ['cpu-bbbbbbbbbb'])
test_eq(list(latest_runs(df, profile=None).run_id), ['smoke-cccccccccc'])
test_eq(len(latest_runs(df, profile='full')), 0)

# %% [markdown]
# ## The verdict table: all 19 papers
#
# One row per claim of each paper's latest complete run (the `verdicts` its notebook recorded), the paper's
# headline claim first (`headline` is True on it; a paper records exactly one), then its other claims in the
# order recorded; `rule` is the explicit rule that graded the claim (empty for ungraded claims). A paper
# without a complete run gets a single row whose verdict says why: `not yet run` when its notebook exists,
# `planned` when it does not; a run that recorded no verdicts shows `no verdicts recorded`.

# %%
#| export
_VT_COLS = ['number', 'name', 'area', 'title', 'implemented', 'headline', 'claim', 'paper', 'ours', 'verdict', 'reason', 'rule',
            'run_id', 'date', 'profile', 'path']

def _nbs_dir(nbs_dir=None) -> Path|None:
    if nbs_dir is not None: return Path(nbs_dir)
    try: return nbs_path()
    except Exception: return None

def verdict_table(runs_dir:str|Path|None=None, # default: $TRUSTLIB_RUNS or <repo>/runs
                  profile:str|None="cpu", # the profile of the runs shown (None: any)
                  nbs_dir:str|Path|None=None, # notebooks folder (default: the checkout's), to tell implemented from planned
                  runs=None # optional: an already collected `collect_runs` table
                 ):
    "Paper-vs-us table for all 19 papers: one row per claim of the latest complete run, or one row saying why there is none."
    import pandas as pd
    runs = collect_runs(runs_dir) if runs is None else runs
    latest = {r.paper: r for r in latest_runs(runs, profile).itertuples()} if len(runs) else {}
    nbs = _nbs_dir(nbs_dir)
    rows = []
    for p in PAPERS:
        implemented = bool(nbs is not None and (nbs/p.notebook).is_file())
        base = dict(number=p.number, name=p.name, area=p.area, title=p.title, implemented=implemented)
        r = latest.get(p.name)
        if r is None:
            rows.append(dict(base, headline=False, claim='', paper='', ours='', verdict='not yet run' if implemented else 'planned',
                             reason='', rule='', run_id=None, date=None, profile=None, path=None)); continue
        m = json.loads((Path(r.path)/'metrics.json').read_text(encoding='utf-8'))
        run = dict(run_id=r.run_id, date=(r.finished or '')[:10], profile=r.profile, path=r.path)
        vs = m.get('verdicts') or [dict(claim='', paper='', ours='', verdict='no verdicts recorded', reason='')]
        vs = sorted(vs, key=lambda v: not v.get('headline'))   # stable: the headline claim first, the rest as recorded
        for v in vs: rows.append(dict(base, headline=bool(v.get('headline')),
                                      **{k: v.get(k) or '' for k in ('claim', 'paper', 'ours', 'verdict', 'reason', 'rule')}, **run))
    return pd.DataFrame(rows, columns=_VT_COLS)


# %%
_nbs = Path(tempfile.mkdtemp())
(_nbs/'papers'/'clustering').mkdir(parents=True); (_nbs/'papers'/'clustering'/'l2h.ipynb').write_text('{}')
vt = verdict_table(runs, nbs_dir=_nbs)
test_eq(sorted(set(vt.number)), list(range(1, 20)))
test_eq(len(vt), 19 + 2)   # disparate_benefits has three claims
test_eq(list(vt[vt.name == 'disparate_benefits'].verdict), ['reproduced', 'not_reproduced', 'illustrated'])   # the headline first
test_eq(list(vt[vt.name == 'disparate_benefits'].headline), [True, False, False])
test_eq(vt[vt.name == 'disparate_benefits'].rule.iloc[0], 'ours >= 0.5 * paper')
test_eq(vt[vt.name == 'l2h'].verdict.item(), 'not yet run')   # its only run failed
test_eq(vt[vt.name == 'dsda'].verdict.item(), 'planned')
test_eq(verdict_table(runs, profile='smoke', nbs_dir=_nbs).query("name == 'disparate_benefits'").verdict.item(), 'no verdicts recorded')
vt[['number', 'name', 'headline', 'claim', 'verdict', 'rule', 'run_id']].head(5)

# %% [markdown]
# ## The published record of a paper
#
# The website shows what was *published*, not whatever runs happen to sit in a local `runs/` folder. The
# record of a publication is the paper's ledger (`nbs/results/ledger/<paper>.json`, see
# `trustlib.results`): its latest entry names the run, the commit, the date, the CPU time, the claims hash
# and each claim's verdict and rule. `published_record` completes it from, in this order,
#
# 1. the run's own `metrics.json` (`runs/<paper>/<run_id>/`), when this machine has it: the paper's
#    numbers, the reasons, the conditions, the change logs;
# 2. the paper's claims table (`CLAIMS` in its module), matched by claim id: the paper's numbers, the
#    conditions and the change logs, and the current rule (shown only when its hash is the published one);
# 3. the verdict table stored in the published notebook (its "Paper vs. us" output): the paper's numbers and
#    the reasons of pages published before claims tables existed (`legacy` entries).
#
# The verdicts themselves always come from the ledger: the other sources only add the words around them.
# A paper with no publication yet has a record with no claims.

# %%
#| export
from html.parser import HTMLParser as _HTMLParser

class _Cells(_HTMLParser):
    "The rows of the HTML tables fed to it, as lists of cell texts (`rows`, header rows included)."
    def __init__(self):
        super().__init__(); self.rows, self.cell, self.row = [], None, None
    def handle_starttag(self, tag, attrs):
        if tag == 'tr': self.row = []
        elif tag in ('td', 'th') and self.row is not None: self.cell = []
        elif tag == 'br' and self.cell is not None: self.cell.append('\n')
    def handle_endtag(self, tag):
        if tag in ('td', 'th') and self.cell is not None: self.row.append(''.join(self.cell).strip()); self.cell = None
        elif tag == 'tr' and self.row is not None: self.rows.append(self.row); self.row = None
    def handle_data(self, data):
        if self.cell is not None: self.cell.append(data)

def _nb_json(nb) -> dict:
    if isinstance(nb, dict): return nb
    try: return json.loads(Path(nb).read_text(encoding='utf-8'))
    except (OSError, ValueError): return {}

def _src(c) -> str: return ''.join(c.get('source', '')) if isinstance(c.get('source'), list) else (c.get('source') or '')

def stored_verdict_table(nb) -> list[dict]:
    "The verdict table stored in a published paper notebook (the last `…verdict_table()` output): one dict per row, keyed by its column names."
    found = None
    for c in _nb_json(nb).get('cells', []):
        if c.get('cell_type') != 'code' or 'verdict_table()' not in _src(c): continue
        for o in c.get('outputs', []) or []:
            h = (o.get('data') or {}).get('text/html', '')
            h = ''.join(h) if isinstance(h, list) else h
            if '<table' in h: found = h
    if found is None: return []
    p = _Cells(); p.feed(found)
    if not p.rows: return []
    head, out = p.rows[0], []
    cols = head[1:] if head and not head[0] else head            # pandas writes the index column with an empty header
    for r in p.rows[1:]:
        if len(r) == len(cols) + 1: r = r[1:]
        if len(r) == len(cols): out.append(dict(zip(cols, r)))
    return out

_NOTE_RUN = re.compile(r"run `([^`]+)`(?:, commit `([^`]+)`)?(?:, (\d+(?:\.\d+)?) s)?(?:, (\d{4}-\d{2}-\d{2}))?")

def run_note_facts(nb) -> dict:
    "Run id, commit, wall seconds, date and profile from a published page's run note (its `injected-parameters` markdown cell); {} if none."
    for c in _nb_json(nb).get('cells', []):
        if 'injected-parameters' not in ((c.get('metadata') or {}).get('tags') or []) or c.get('cell_type') != 'markdown': continue
        s = _src(c); m = _NOTE_RUN.search(s); prof = re.search(r'profile = "(\w+)"', s)
        if not m: return {}
        return dict(run_id=m.group(1), commit=m.group(2), wall_seconds=float(m.group(3)) if m.group(3) else None,
                    date=m.group(4), profile=prof.group(1) if prof else None)
    return {}


# %%
_pnb = dict(cells=[
    dict(cell_type='markdown', metadata={'tags': ['injected-parameters']},
         source='**This page shows a run with** `profile = "cpu"` (run `cpu-1234567890`, commit `abc1234`, 527 s, 2026-12-01). Running…'),
    dict(cell_type='code', source='result.verdict_table()', outputs=[dict(output_type='execute_result', data={'text/html': [
        '<table border="1" class="dataframe"><thead><tr style="text-align: right;"><th></th><th>claim</th><th>paper</th><th>ours</th>'
        '<th>verdict</th><th>rule</th><th>reason</th></tr></thead><tbody>',
        '<tr><th>0</th><td>gaps grow &amp; stay</td><td>SPD 0.17 → 0.19</td><td>0.02 [0.01, 0.03]</td><td>reproduced</td><td>r</td><td>why</td></tr>',
        '<tr><th>1</th><td>needs FairFace</td><td>FairFace</td><td></td><td>not_testable_offline</td><td></td><td>no data</td></tr></tbody></table>']})])])
test_eq(stored_verdict_table(_pnb)[0], dict(claim='gaps grow & stay', paper='SPD 0.17 → 0.19', ours='0.02 [0.01, 0.03]', verdict='reproduced', rule='r', reason='why'))
test_eq([r['verdict'] for r in stored_verdict_table(_pnb)], ['reproduced', 'not_testable_offline'])
test_eq(run_note_facts(_pnb), dict(run_id='cpu-1234567890', commit='abc1234', wall_seconds=527.0, date='2026-12-01', profile='cpu'))
test_eq((stored_verdict_table({}), run_note_facts({})), ([], {}))


# %%
#| export
def paper_claims(name:str):
    "The claims table (`CLAIMS`) exported by paper `name`'s module, or None when the module declares none or cannot be imported."
    import importlib
    from trustlib.config import get_paper
    try: mod = importlib.import_module(get_paper(name).module)
    except Exception: return None
    claims = getattr(mod, 'CLAIMS', None)
    return list(claims) if claims else None

def find_published_run(paper:str, run_id:str|None, runs_dir:str|Path|None=None) -> dict|None:
    "The `metrics.json` of run `run_id` of `paper` in the runs folder, when this machine has it complete; else None."
    if not run_id: return None
    try: d = Path(runs_dir) if runs_dir is not None else default_runs_dir()
    except Exception: return None
    f = d/paper/run_id/'metrics.json'
    try: m = json.loads(f.read_text(encoding='utf-8'))
    except (OSError, ValueError): return None
    return m if m.get('status') == 'complete' else None

_ROW_KEYS = ('id', 'claim', 'paper', 'ours', 'verdict', 'rule', 'reason', 'conditions', 'changes', 'headline', 'claim_hash')

def _changes_of(c) -> list[dict]:
    return [dict(date=e.date, old=e.old, new=e.new, why=e.why) for e in getattr(c, 'log', ())]

def published_record(name:str, # the paper's notebook stem
                     root:str|Path|None=None, # the checkout (default: this one)
                     runs_dir:str|Path|None=None, # where to look for the run's metrics.json (default: <root>/runs)
                     claims=None, # the paper's claims table (default: its module's `CLAIMS`, if any)
                    ) -> dict:
    "What a paper's website shows: its latest publication (ledger) with each claim's words completed from metrics.json, `CLAIMS` and the stored page."
    from trustlib.config import get_paper
    from trustlib.results import load_ledger, verdict_history
    p = get_paper(name)
    root = Path(root) if root is not None else find_root()
    nb_path = root/'nbs'/p.notebook
    pubs = load_ledger(name, root)
    latest = pubs[-1] if pubs else None
    title = next((l[2:].strip() for c in _nb_json(nb_path).get('cells', [])[:1] for l in _src(c).splitlines() if l.startswith('# ')), '') if nb_path.is_file() else ''
    rec = dict(paper=p, implemented=nb_path.is_file(), notebook=nb_path, page_title=title, publications=pubs, latest=latest,
               legacy=bool(latest and latest.get('legacy')), claims=[], headline=None, sources=[], history=[], config=None,
               page=run_note_facts(nb_path) if nb_path.is_file() else {})
    if latest is None: return rec
    m = find_published_run(name, latest.get('run_id'), runs_dir if runs_dir is not None else root/'runs')
    claims = paper_claims(name) if claims is None else list(claims)
    by_id = {c.id: c for c in claims or []}
    stored = stored_verdict_table(nb_path) if nb_path.is_file() else []
    mv = (m or {}).get('verdicts') or []
    rows = []
    for i, v in enumerate(latest.get('verdicts') or []):
        r = {k: v.get(k) for k in _ROW_KEYS}
        r.update(number=i + 1, anchor='claim-' + re.sub(r'[^a-z0-9_-]+', '-', str(v.get('id') or i + 1).lower()),
                 changes=list(v.get('changes') or []))
        src = next((x for x in mv if x.get('id') and x.get('id') == v.get('id')), None) or (mv[i] if i < len(mv) and mv[i].get('claim') == v.get('claim') else None)
        if src:
            for k in ('paper', 'reason', 'conditions', 'changes', 'rule', 'ours'):
                if not r.get(k) and src.get(k): r[k] = src[k]
            if r.get('headline') is None: r['headline'] = bool(src.get('headline'))
        c = by_id.get(v.get('id'))
        if c is not None:
            if not r.get('paper'): r['paper'] = c.paper
            if not r.get('changes'): r['changes'] = _changes_of(c)
            if not r.get('conditions') and c.hash() == v.get('claim_hash'): r['conditions'] = c.condition_text()
            if r.get('headline') is None: r['headline'] = bool(c.headline)
        s = next((x for x in stored if x.get('claim') == v.get('claim')), None) or (stored[i] if i < len(stored) and not stored[i].get('claim') else None)
        if s:
            for k in ('paper', 'reason', 'conditions'):
                if not r.get(k) and s.get(k): r[k] = s[k]
        r['headline'] = bool(r.get('headline'))
        r['changes'] = r['changes'] or []
        for k in ('claim', 'paper', 'ours', 'rule', 'reason', 'conditions'): r[k] = r.get(k) or ''
        rows.append(r)
    rec['claims'] = rows
    rec['headline'] = next((r for r in rows if r['headline']), None)
    rec['sources'] = ['ledger'] + (['metrics.json'] if m else []) + (['CLAIMS'] if claims else []) + (['page'] if stored else [])
    rec['config'] = (m or {}).get('params')
    rec['history'] = verdict_history(pubs, claims)
    return rec

def published_table(root:str|Path|None=None, runs_dir:str|Path|None=None, records:dict|None=None):
    "The verdict table of the website: one row per claim of each paper's latest publication (the headline first), or one row saying why there is none."
    import pandas as pd
    from trustlib.config import PAPERS
    rows = []
    for p in PAPERS:
        rec = (records or {}).get(p.name) or published_record(p.name, root, runs_dir)
        base = dict(number=p.number, name=p.name, area=p.area, title=p.title, implemented=rec['implemented'])
        pub = rec['latest']
        if not rec['claims']:
            rows.append(dict(base, headline=False, claim='', paper='', ours='', verdict='not yet run' if rec['implemented'] else 'planned',
                             reason='', rule='', run_id=None, date=None, profile=None, path=None, id=None, anchor=None, conditions='', changes=[],
                             commit=None, cpu_seconds=None, claims_hash=None, legacy=False)); continue
        run = dict(run_id=pub.get('run_id'), date=pub.get('date'), profile=pub.get('profile'), path=None, commit=pub.get('commit'),
                   cpu_seconds=pub.get('cpu_seconds'), claims_hash=pub.get('claims_hash'), legacy=bool(pub.get('legacy')))
        for r in sorted(rec['claims'], key=lambda r: not r['headline']):
            rows.append(dict(base, **{k: r[k] for k in ('headline', 'claim', 'paper', 'ours', 'verdict', 'reason', 'rule', 'id', 'anchor',
                                                         'conditions', 'changes')}, **run))
    return pd.DataFrame(rows, columns=_VT_COLS + ['id', 'anchor', 'conditions', 'changes', 'commit', 'cpu_seconds', 'claims_hash', 'legacy'])


# %% [markdown]
# A crafted checkout: one paper with a legacy publication (its page's stored table gives the paper's numbers)
# and a second publication graded by a claims table; the verdict that changed between them is in the history.

# %%
_root = Path(tempfile.mkdtemp()); (_root/'nbs'/'papers'/'fairness').mkdir(parents=True)
(_root/'nbs'/'papers'/'fairness'/'disparate_benefits.ipynb').write_text(json.dumps(_pnb))
append_ledger('disparate_benefits', dict(run_id='cpu-1234567890', date='2026-12-01', commit='abc1234', profile='cpu', claims_hash=None, cpu_seconds=None,
              legacy=True, verdicts=[dict(id='gaps', claim_hash=None, verdict='partially', claim='gaps grow & stay', rule='prose rule', ours='0.02', headline=True),
                                     dict(id='fairface', claim_hash=None, verdict='not_testable_offline', claim='needs FairFace', rule='', ours='', headline=False)]), _root)
_C = [Claim('gaps', 'gaps grow & stay', 'SPD 0.173 → 0.194', Above('spd', 0.0), headline=True,
            log=[Change('2026-12-02', 'prose rule', 'reproduced if spd > 0; …', 'an interval, not a point')]),
      Claim('fairface', 'needs FairFace', 'FairFace', status='not_testable_offline', reason='no data offline')]
append_ledger('disparate_benefits', dict(run_id='cpu-2', date='2026-12-03', commit='def5678', profile='cpu', claims_hash='h', cpu_seconds=123.4,
              verdicts=[dict(id='gaps', claim_hash=_C[0].hash(), verdict='reproduced', claim='gaps grow & stay', rule=_C[0].rule_text(), ours='0.02 [0.01, 0.03]', headline=True),
                        dict(id='fairface', claim_hash=_C[1].hash(), verdict='not_testable_offline', claim='needs FairFace', rule='', ours='', headline=False)]), _root)
rec = published_record('disparate_benefits', _root, claims=_C)
test_eq((rec['latest']['run_id'], rec['legacy'], rec['headline']['verdict'], rec['headline']['paper']), ('cpu-2', False, 'reproduced', 'SPD 0.173 → 0.194'))
test_eq(rec['claims'][0]['changes'][0]['why'], 'an interval, not a point')
test_eq(rec['claims'][1]['reason'], 'no data')                    # from the stored page (no metrics.json here)
test_eq([(h['id'], h['old'], h['new'], h['why']) for h in rec['history']], [('gaps', 'partially', 'reproduced', '2026-12-02: an interval, not a point')])
test_eq(rec['page']['run_id'], 'cpu-1234567890')                 # the page still shows the older run: the site says so
test_eq(published_record('l2h', _root)['claims'], [])
pt = published_table(_root)
test_eq(len(pt), 2 + 18); test_eq(pt[pt.name == 'disparate_benefits'].verdict.tolist(), ['reproduced', 'not_testable_offline'])
test_eq(pt[pt.name == 'l2h'].verdict.item(), 'planned')
pt[pt.name == 'disparate_benefits'][['number', 'headline', 'claim', 'paper', 'verdict', 'run_id', 'cpu_seconds']]

# %% [markdown]
# ## The dashboard notebook
#
# `build_dashboard` writes `nbs/results/dashboard.ipynb` (or `out`; `trustlib report` writes into the runs
# folder and only `trustlib report --publish` writes the committed page, from runs of a clean commit: a run's
# commit shows `+dirty` when it was made from a tree with changes other than notebook outputs): markdown cells with the tables (Quarto renders
# markdown tables natively, and the site check in `trustlib site` verifies their links) and one code cell
# holding a stored PNG output, a seaborn bar chart of the verdicts. Nothing in it is executed: it carries
# `skip_exec`/`skip_showdoc` front matter, the `nbs/results/` folder has a `.notest` marker, and the website
# renders with `execute: enabled: false`. The file is written atomically, and so is its py:percent pair
# (`scripts/results/dashboard.py`, like every notebook in `nbs/`; `write_pair` renders it as `tools/pairs.py` does).

# %%
#| export
VERDICT_STYLE = {   # one label and one colour per verdict word of `trustlib.results.VERDICTS`, in that order
    'reproduced':           dict(label='reproduced',           color='#2e7d32'),   # green
    'partially':            dict(label='partially',            color='#f9a825'),   # amber
    'not_reproduced':       dict(label='not reproduced',       color='#c62828'),   # red
    'inconclusive':         dict(label='inconclusive',         color='#6a1b9a'),   # purple
    'illustrated':          dict(label='illustrated',          color='#1565c0'),   # blue
    'not_testable_offline': dict(label='not testable offline', color='#757575'),   # grey
}
assert tuple(VERDICT_STYLE) == tuple(VERDICTS), "VERDICT_STYLE must style every verdict word, in the order of VERDICTS"
STATUS_STYLE = {   # the rows of papers without graded claims
    'no verdicts recorded': dict(label='no verdicts recorded', color='#90a4ae'),
    'not yet run':          dict(label='not yet run',          color='#b0bec5'),
    'planned':              dict(label='planned',              color='#cfd8dc'),
}
_VERDICT_ORDER = list(VERDICT_STYLE) + list(STATUS_STYLE)
HEADLINE_MARK = '★'
AREA_TITLES = {'fairness': 'Fairness', 'privacy': 'Privacy', 'calibration': 'Calibration', 'robustness': 'Robustness',
               'interp': 'Interpretability', 'unlearning': 'Unlearning', 'clustering': 'Clustering', 'theory': 'Theory',
               'bias': 'Bias', 'evals': 'Evaluations'}

def verdict_label(v:str) -> str:
    "The display label of a verdict word (or a row status); unknown words unchanged."
    return {**VERDICT_STYLE, **STATUS_STYLE}.get(v, {}).get('label', v)

def verdict_color(v:str) -> str:
    "The chart colour of a verdict word (or a row status); KeyError for an unknown word."
    return {**VERDICT_STYLE, **STATUS_STYLE}[v]['color']

def verdict_badge(v:str, n:int|None=None) -> str:
    "An HTML badge for a verdict word or row status (class `verdict v-<word>`, colour inline so it shows outside the site too); `n` prefixes a count."
    style = {**VERDICT_STYLE, **STATUS_STYLE}.get(v)
    if style is None: return html.escape(str(v), quote=False)
    dark = v in VERDICT_STYLE and v != 'partially'
    fg = '#ffffff' if dark else '#212121'
    text = (f"{n} " if n is not None else '') + style['label']
    return (f'<span class="verdict v-{v}" style="background:{style["color"]};color:{fg};padding:0 .45em;'
            f'border-radius:.35em;white-space:nowrap">{html.escape(text, quote=False)}</span>')

def _md(x) -> str:
    "A value as text for a markdown table cell."
    if x is None or (isinstance(x, float) and x != x): return ''
    s = re.sub(r'\s+', ' ', str(x)).strip()
    return html.escape(s, quote=False).replace('|', '\\|')

def _records(df) -> list[dict]:
    "DataFrame rows as dicts, with missing values (NaN/NaT) as None."
    isna = lambda v: v is None or (isinstance(v, float) and v != v) or str(v) in ('NaT', 'nan')
    return [{k: (None if isna(v) else v) for k, v in r.items()} for r in df.to_dict('records')]

def md_table(rows:list[dict], cols:list[str], header:list[str]|None=None) -> str:
    "A markdown (pipe) table; cell values are escaped unless a column name ends with `!` (raw markdown)."
    header = header or [c.rstrip('!') for c in cols]
    out = ['| ' + ' | '.join(header) + ' |', '|' + '|'.join('---' for _ in cols) + '|']
    for r in rows: out.append('| ' + ' | '.join(str(r.get(c[:-1]) or '') if c.endswith('!') else _md(r.get(c.rstrip('!'))) for c in cols) + ' |')
    return '\n'.join(out)

def verdict_chart(vt) -> bytes:
    "PNG bytes of a horizontal bar chart: number of claims per verdict (papers, for the rows without a run)."
    import pandas as pd, seaborn as sns
    from matplotlib.figure import Figure   # no pyplot: no global state, no GUI backend
    counts = vt.verdict.value_counts()
    unknown = sorted(set(counts.index) - set(_VERDICT_ORDER))
    if unknown: raise ValueError(f"unknown verdict word(s) {unknown}; allowed: {list(VERDICTS)}")
    d = pd.DataFrame(dict(verdict=[v for v in _VERDICT_ORDER if counts.get(v, 0)],))
    d['count'] = [int(counts[v]) for v in d.verdict]
    d['label'] = [verdict_label(v) for v in d.verdict]
    fig = Figure(figsize=(6.4, 0.45 * len(d) + 1.2))
    ax = fig.subplots()
    sns.barplot(data=d, x='count', y='label', hue='label', palette=[verdict_color(v) for v in d.verdict], legend=False, ax=ax)
    for i, c in enumerate(d['count']): ax.text(c + 0.1, i, str(c), va='center')
    ax.set_xlabel('number of claims (papers, for "not yet run" / "planned")'); ax.set_ylabel('verdict')
    ax.set_title(f"Paper vs. us: {vt.name.nunique()} papers, {int((vt.run_id.notna()).sum())} claims checked")
    fig.tight_layout()
    buf = io.BytesIO(); fig.savefig(buf, format='png', dpi=100); return buf.getvalue()


# %%
png = verdict_chart(vt)
test_eq(png[:8], b'\x89PNG\r\n\x1a\n')
_all6 = pd.DataFrame(dict(name=['a'] * 6 + ['b'], verdict=list(VERDICTS) + ['planned'], run_id=['r'] * 6 + [None]))
test_eq(verdict_chart(_all6)[:4], b'\x89PNG')   # every verdict word has a colour and a label
test_eq([verdict_label(v) for v in VERDICTS],
        ['reproduced', 'partially', 'not reproduced', 'inconclusive', 'illustrated', 'not testable offline'])
test_eq(len({verdict_color(v) for v in _VERDICT_ORDER}), len(_VERDICT_ORDER))   # distinct colours
_b = verdict_badge('not_reproduced', 3)
assert _b.startswith('<span class="verdict v-not_reproduced"') and '>3 not reproduced</span>' in _b and '#c62828' in _b
test_eq(verdict_badge('maybe<'), 'maybe&lt;')   # unknown words: escaped text, no badge
test_fail(lambda: verdict_chart(pd.DataFrame(dict(name=['a'], verdict=['maybe'], run_id=['r']))), contains='unknown verdict')
test_eq(md_table([dict(a='x|y', b='[l](p.ipynb)')], ['a', 'b!']), '| a | b |\n|---|---|\n| x\\|y | [l](p.ipynb) |')


# %% [markdown]
# ## Pages for readers: HTML pieces
#
# The website's results are written as small pieces of HTML (Quarto passes ```` ```{=html} ```` blocks through
# untouched), each text escaped exactly once: a claim's rule `|x| < 0.01` is shown as written, never as
# `\|x\| &lt; 0.01`. Links point at the rendered `.html` pages, relative to the page that shows them.
#
# - `claims_table_html`: every claim of every paper in one table that a reader can sort (click a column
#   head) and filter by paper, area and verdict, or search. Its script is a few lines of plain JavaScript in
#   the page (no CDN, works offline); without JavaScript it is a plain table. Its columns fit a 1366 px
#   screen; on a phone each row becomes a card with the column names as labels.
# - `papers_chart`: the one figure of the home page and the dashboard, each paper's claims by verdict.

# %%
#| export
def _e(x) -> str:
    "A value as HTML text (escaped once; None and NaN as '')."
    if x is None or (isinstance(x, float) and x != x): return ''
    return html.escape(str(x), quote=True)

def html_block(s:str) -> str:
    "Raw HTML for a markdown cell: a pandoc raw block, passed to the page untouched."
    return "```{=html}\n" + s.strip() + "\n```"

def page_href(name:str, from_dir:str='results', anchor:str='') -> str:
    "The link from a page in site folder `from_dir` ('.' for the home page) to paper `name`'s rendered page."
    from trustlib.config import get_paper
    target = Path(get_paper(name).notebook).with_suffix('.html').as_posix()
    rel = Path(os.path.relpath(target, from_dir)).as_posix()
    return rel + (f"#{anchor}" if anchor else '')

def short_name(p) -> str: return p.short or p.title

TABLE_JS = """<script>
/* trustlib: sortable, filterable tables (no dependencies). */
(function () {
  var each = function (xs, f) { Array.prototype.forEach.call(xs, f); };
  var key = function (td) { return (td.getAttribute('data-v') || td.textContent).trim().toLowerCase(); };
  each(document.querySelectorAll('table.tl-sortable'), function (t) {
    var ths = t.tHead.rows[0].cells, body = t.tBodies[0];
    each(ths, function (th, i) {
      if (!th.hasAttribute('data-sort')) return;
      th.tabIndex = 0; th.title = 'Sort by this column';
      var go = function () {
        var asc = th.getAttribute('aria-sort') !== 'ascending', num = th.getAttribute('data-sort') === 'num';
        each(ths, function (h) { h.removeAttribute('aria-sort'); });
        th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = key(a.cells[i]), y = key(b.cells[i]);
          var c = num ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
          return asc ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      };
      th.addEventListener('click', go);
      th.addEventListener('keydown', function (e) { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); go(); } });
    });
  });
  each(document.querySelectorAll('.tl-filter'), function (f) {
    var t = document.getElementById(f.getAttribute('data-for'));
    if (!t) return;
    var ctl = f.querySelectorAll('select, input'), out = f.querySelector('.tl-count'), rows = t.tBodies[0].rows;
    var apply = function () {
      var n = 0;
      each(rows, function (r) {
        var ok = true;
        each(ctl, function (c) {
          var v = c.value.trim().toLowerCase(), k = c.getAttribute('data-key');
          if (!v) return;
          if (k === '*' ? r.textContent.toLowerCase().indexOf(v) < 0 : (r.getAttribute('data-' + k) || '') !== v) ok = false;
        });
        r.hidden = !ok; if (ok) n++;
      });
      if (out) out.textContent = n + ' of ' + rows.length + ' shown';
    };
    each(ctl, function (c) { c.addEventListener('input', apply); c.addEventListener('change', apply); });
    apply();
  });
})();
</script>"""

def _options(values) -> str:
    return ''.join(f'<option value="{_e(v)}">{_e(label)}</option>' for v, label in values)

def _changes_html(changes) -> str:
    if not changes: return ''
    items = ''.join(f"<li><b>{_e(c.get('date'))}</b>: {_e(c.get('why'))}<br><span class=\"tl-old\">was: {_e(c.get('old'))}</span>"
                    f"<br><span class=\"tl-new\">now: {_e(c.get('new'))}</span></li>" for c in changes)
    return f'<div class="tl-changes">Change log<ul>{items}</ul></div>'

def _rule_html(r:dict) -> str:
    "The rule, conditions and change log of a claim row, in a collapsed block."
    parts = []
    if r.get('rule'): parts.append(f"<p><b>Rule.</b> {_e(r['rule'])}</p>")
    if r.get('conditions'): parts.append(f"<p><b>Conditions.</b> {_e(r['conditions'])}</p>")
    parts.append(_changes_html(r.get('changes')))
    body = ''.join(p for p in parts if p)
    if not body: return ''
    label = 'rule' + (', conditions' if r.get('conditions') else '') + (', change log' if r.get('changes') else '')
    return f'<details class="tl-rule"><summary>{label}</summary>{body}</details>'

def claims_table_html(vt, # a verdict table (`published_table` or `verdict_table`)
                      from_dir:str='results', # the site folder of the page that shows it
                      table_id:str='tl-claims') -> str:
    "Every claim in one sortable, filterable HTML table (filters: paper, area, verdict, text), with its script."
    from trustlib.config import get_paper
    recs = _records(vt)
    papers = sorted({(r['name'], r['number']) for r in recs}, key=lambda x: x[1])
    areas = sorted({r['area'] for r in recs})
    verdicts = [v for v in _VERDICT_ORDER if any(r['verdict'] == v for r in recs)]
    filt = (f'<div class="tl-filter" data-for="{table_id}">'
            f'<label>Paper <select data-key="paper"><option value="">all</option>{_options((n, f"{k}. {short_name(get_paper(n))}") for n, k in papers)}</select></label>'
            f'<label>Area <select data-key="area"><option value="">all</option>{_options((a, AREA_TITLES.get(a, a.title())) for a in areas)}</select></label>'
            f'<label>Verdict <select data-key="verdict"><option value="">all</option>{_options((v, verdict_label(v)) for v in verdicts)}</select></label>'
            f'<label>Search <input type="search" data-key="*" placeholder="words in any column"></label>'
            f'<span class="tl-count" aria-live="polite"></span></div>')
    heads = [('#', 'num', 'tl-c-num'), ('Paper', 'text', 'tl-c-paper'), ('Claim', 'text', 'tl-c-claim'), ('Paper reports', None, 'tl-c-pap'),
             ('We measure', None, 'tl-c-ours'), ('Verdict', 'verdict', 'tl-c-verdict'), ('Reason', None, 'tl-c-reason')]
    th = ''.join(f'<th class="{c}"' + (f' data-sort="{"num" if s == "num" else "text"}"' if s else '') + f'>{h}</th>' for h, s, c in heads)
    rows, k = [], {}
    for r in recs:
        k[r['name']] = k.get(r['name'], 0) + 1
        p = get_paper(r['name'])
        link = page_href(r['name'], from_dir) if r['implemented'] else ''
        paper = f'<a href="{link}">{_e(short_name(p))}</a>' if link else _e(short_name(p))
        v = r['verdict']
        badge = verdict_badge(v)
        if link and v in VERDICT_STYLE: badge = f'<a href="{link}#{_e(r.get("anchor") or "paper-vs.-us")}">{badge}</a>'
        cause = inconclusive_cause(r['reason']) if v == 'inconclusive' else ''
        if cause: badge += f'<br><span class="tl-note tl-cause">{_e(cause)}</span>'
        claim = (f'<span class="tl-star" title="headline claim">{HEADLINE_MARK}</span> <b>{_e(r["claim"])}</b>' if r['headline'] else _e(r['claim']))
        order = _VERDICT_ORDER.index(v) if v in _VERDICT_ORDER else 99
        cells = [(f'{r["number"]}.{k[r["name"]]}', f'{r["number"]}.{k[r["name"]]:02d}', '#'), (paper, None, 'Paper'), (claim, None, 'Claim'),
                 (_e(r['paper']), None, 'Paper reports'), (_e(r['ours']), None, 'We measure'), (badge, f'{order}', 'Verdict'),
                 (_e(r['reason']) + _rule_html(r), None, 'Reason')]
        tds = ''.join(f'<td data-label="{lab}"' + (f' data-v="{dv}"' if dv else '') + f'>{c}</td>' for c, dv, lab in cells)
        head_attr = ' data-headline="1"' if r['headline'] else ''
        cause_attr = f' data-cause="{_e(cause)}"' if cause else ''
        rows.append(f'<tr data-paper="{_e(r["name"])}" data-area="{_e(r["area"])}" data-verdict="{_e(v)}"{cause_attr}{head_attr}>{tds}</tr>')
    table = (f'<table id="{table_id}" class="tl-table tl-sortable tl-cards"><thead><tr>{th}</tr></thead>'
             f'<tbody>{"".join(rows)}</tbody></table>')
    return filt + table + TABLE_JS

def papers_chart(vt) -> bytes:
    "PNG bytes: one bar per paper, its claims by verdict (stacked, verdict colours), the headline verdict named at the end of the bar."
    import numpy as np
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch
    from trustlib.config import PAPERS
    recs = _records(vt)
    fig = Figure(figsize=(8.0, 0.3 * len(PAPERS) + 1.5))
    ax = fig.subplots()
    ys = np.arange(len(PAPERS))[::-1]
    longest = 1
    for y, p in zip(ys, PAPERS):
        rs = [r for r in recs if r['name'] == p.name and r['verdict'] in VERDICT_STYLE]
        left = 0
        for v in VERDICT_STYLE:
            n = sum(r['verdict'] == v for r in rs)
            if n: ax.barh(y, n, left=left, color=verdict_color(v), edgecolor='white', linewidth=0.6, height=0.72); left += n
        head = next((r['verdict'] for r in rs if r['headline']), None)
        ax.text(left + 0.25, y, f"{HEADLINE_MARK} {verdict_label(head)}" if head else 'not published', va='center', fontsize=8,
                color=verdict_color(head) if head else '#555555', fontweight='bold' if head else 'normal')
        longest = max(longest, left)
    ax.set_yticks(ys, [f"{p.number}. {short_name(p)}" for p in PAPERS], fontsize=8.5)
    ax.set_xlim(0, longest + 6); ax.set_ylim(-0.6, len(PAPERS) - 0.4)
    ax.set_xlabel('claims (colour: verdict; ★ the headline claim\'s verdict)', fontsize=8.5)
    for s in ('top', 'right'): ax.spines[s].set_visible(False)
    ax.tick_params(axis='x', labelsize=8)
    used = [v for v in VERDICT_STYLE if any(r['verdict'] == v for r in recs)]
    if used: ax.legend(handles=[Patch(color=verdict_color(v), label=verdict_label(v)) for v in used], loc='lower center',
                       bbox_to_anchor=(0.45, 1.0), ncol=min(len(used), 3), fontsize=8, frameon=False)
    fig.tight_layout()
    buf = io.BytesIO(); fig.savefig(buf, format='png', dpi=100); return buf.getvalue()


# %%
_h = claims_table_html(pt, 'results')
assert _h.count('<tr data-paper=') == len(pt) and '<script>' in _h and 'data-sort="num"' in _h
assert 'href="../papers/fairness/disparate_benefits.html#claim-gaps"' in _h            # the verdict links to its claim on the page
assert '<option value="not_testable_offline">not testable offline</option>' in _h
test_eq(_e('|SPD| < 0.01'), '|SPD| &lt; 0.01')                                          # escaped once: no `\|`, no `&amp;lt;`
assert 'reproduced if spd &gt; 0' in _h and '\\|' not in _h and '&amp;gt;' not in _h
test_eq(page_href('dsda', '.'), 'papers/unlearning/dsda.html'); test_eq(page_href('dsda', 'papers/fairness', 'x'), '../unlearning/dsda.html#x')
_png = papers_chart(pt); test_eq(_png[:4], b'\x89PNG')
test_eq(papers_chart(pt.iloc[0:0])[:4], b'\x89PNG')   # no verdicts yet: an empty chart, not an error
Image(_png)


# %% [markdown]
# ### The summary at the top of a paper page
#
# `summary_box` writes the first screen of a paper's page from its published record: the paper (title,
# authors, venue, where to read it, its official code or "no official code published"), the headline claim
# with the paper's number beside ours and the verdict, every other claim's verdict as a row of small badges
# (each links to its row in the page's verdict table), the compute of the published run (CPU time, profile,
# run id, commit, date), the claims hash, and links to the full verdict table and the audit trail. The box
# carries `data-paper`, `data-verdict` and `data-run` attributes, which the browser check compares with the
# ledger.

# %%
#| export
def _fmt_s(x) -> str:
    if x is None: return ''
    x = float(x)
    return f"{x:.0f} s" if x < 120 else f"{x:.0f} s ({x / 60:.1f} min)"

def run_cost(pub:dict) -> str:
    "A publication's cost as recorded: CPU time, and where the run recorded them, wall time, the 1-minute load average at its start and end, and the cores (CPU time grows when other work shares the cores)."
    out = f"{_fmt_s(pub.get('cpu_seconds'))} CPU" if pub.get('cpu_seconds') is not None else "CPU time not recorded"
    if pub.get('wall_seconds') is not None: out += f" · wall {float(pub['wall_seconds']):.0f} s"
    if pub.get('load'):
        cores = (pub.get('machine') or {}).get('cores')
        out += f" · load {pub['load'][0]:.2f} → {pub['load'][1]:.2f}" + (f" on {cores} cores" if cores else "")
    return out

def code_html(p) -> str:
    "The paper's official code as a link, or what exists instead."
    if p.code:
        label = re.sub(r'^https?://(www\.)?github\.com/', '', p.code)
        return f'<a href="{_e(p.code)}">{_e(label)}</a>'
    note = re.sub(r'`([^`]+)`', r'<code>\1</code>', _e(p.code_note))
    return '<span class="tl-nocode">no official code published</span>' + (f' <span class="tl-note">({note})</span>' if p.code_note else '')

def _mini_badge(r:dict) -> str:
    "A claim's verdict as a small badge with its number, linking to its row of the verdict table."
    v = r['verdict']; st = {**VERDICT_STYLE, **STATUS_STYLE}.get(v, dict(color='#999999', label=v))
    fg = '#212121' if v in ('partially',) or v in STATUS_STYLE else '#ffffff'
    return (f'<a class="tl-mini" href="#{_e(r["anchor"])}" title="{_e(r["claim"])} ({_e(verdict_label(v))})" '
            f'style="background:{st["color"]};color:{fg}">{r["number"]}&nbsp;{_e(verdict_label(v))}</a>')

def summary_box(rec:dict) -> str:
    "The one-screen summary of a paper page (HTML), from `published_record`."
    p, pub, h = rec['paper'], rec['latest'], rec['headline']
    links = ' · '.join(f'<a href="{_e(u)}">{_e(k)}</a>' for k, u in p.links.items())
    authors = ', '.join(p.author_list)
    same = lambda a, b: re.sub(r'\W+', '', a or '').lower() == re.sub(r'\W+', '', b or '').lower()
    title = '' if same(p.title, rec.get('page_title')) else f'<div class="tl-ptitle">{_e(p.title)}</div>'   # the page title says it already
    out = [f'<div class="tl-summary" data-paper="{_e(p.name)}" data-verdict="{_e(h["verdict"] if h else "")}" '
           f'data-run="{_e((pub or {}).get("run_id") or "")}">',
           f'<div class="tl-paper">{title}'
           f'<div class="tl-authors">{_e(authors)} · {_e(p.venue)}</div>'
           f'<div class="tl-links">Paper: {links or "—"} · Code: {code_html(p)}</div></div>']
    if h is None:
        out.append('<div class="tl-head"><div class="tl-claim">No published run yet: the verdicts appear here once the page is '
                   'published from a <code>cpu</code> run.</div></div></div>')
        return '\n'.join(out)
    cause = f'<div class="tl-note tl-cause">{_e(inconclusive_cause(h["reason"]))}</div>' if h['verdict'] == 'inconclusive' else ''
    out.append(f'<div class="tl-head"><div class="tl-verdict tl-headline-verdict">{verdict_badge(h["verdict"])}{cause}</div>'
               f'<div class="tl-claim"><span class="tl-label">Headline claim</span> {_e(h["claim"])}</div></div>')
    out.append('<table class="tl-nums"><colgroup><col class="tl-nums-h"><col></colgroup><tbody>'
               f'<tr><th>Paper</th><td>{_e(h["paper"]) or "—"}</td></tr>'
               f'<tr><th>Us ({_e(pub.get("profile") or "cpu")} profile)</th><td>{_e(h["ours"]) or "—"}</td></tr></tbody></table>')
    others = [r for r in rec['claims'] if r is not h]
    if others:
        out.append(f'<div class="tl-others"><span class="tl-label">Other claims</span> {" ".join(_mini_badge(r) for r in others)}</div>')
    wall = (rec.get('page') or {}).get('wall_seconds') if (rec.get('page') or {}).get('run_id') == pub.get('run_id') else None
    compute = run_cost({**pub, 'wall_seconds': pub.get('wall_seconds') if pub.get('wall_seconds') is not None else wall})
    hash_ = (f'claims hash <code>{_e(pub["claims_hash"])}</code>' if pub.get('claims_hash')
             else 'claims hash: none (published before claims tables; rules as prose)')
    out.append(f'<div class="tl-run">Published run <code>{_e(pub.get("run_id"))}</code> · profile <code>{_e(pub.get("profile"))}</code> · '
               f'{_e(compute)} · commit <code>{_e((pub.get("commit") or "")[:10])}</code> · {_e(pub.get("date"))} · {hash_}</div>')
    out.append(f'<div class="tl-more"><a href="#paper-vs.-us">All {len(rec["claims"])} claims: numbers, rules and reasons</a> · '
               f'<a href="#audit-trail">Audit trail</a> · <a href="#cite">Cite</a></div>')
    out.append('</div>')
    return '\n'.join(out)


# %%
_box = summary_box(rec)
assert _box.startswith('<div class="tl-summary" data-paper="disparate_benefits" data-verdict="reproduced" data-run="cpu-2">')
assert 'SPD 0.173 → 0.194' in _box and '123 s (2.1 min) CPU' in _box and 'commit <code>def5678</code>' in _box
assert 'ml-jku/disparate-benefits' in _box and 'Kajetan Schweighofer' in _box and 'href="#claim-fairface"' in _box
assert 'no official code published' in summary_box(published_record('dsda', _root))      # no publication yet, no official code
test_eq(run_cost(dict(cpu_seconds=123.4)), '123 s (2.1 min) CPU')                        # a run from before load was recorded
test_eq(run_cost(dict(cpu_seconds=179.3, wall_seconds=180.1, load=[0.2, 1.15], machine=dict(cores=2))),
        '179 s (3.0 min) CPU · wall 180 s · load 0.20 → 1.15 on 2 cores')
test_eq(run_cost(dict(wall_seconds=5.0)), 'CPU time not recorded · wall 5 s')
HTML(_box)

# %% [markdown]
# ### The audit trail at the end of a paper page
#
# `audit_trail` writes what a reviewer needs to check a page: every claim with the paper's number, ours, the
# verdict, the reason, the rule that graded it, its conditions and its change log; the verdict history across
# the paper's publications (which verdicts changed between two published runs, and why: the change-log
# entries made in between, or "same rule; the measurements changed"); the files behind the page (its
# ledger entry or `metrics.json`, the claims as CSV, the executed notebook); and a BibTeX entry for the paper
# and one for trustlib.

# %%
#| export
TRUSTLIB_BIBTEX = """@software{trustlib2026,
  title = {trustlib: literate, CPU-scale reproductions of 19 ICML 2025 papers on trustworthy machine learning},
  author = {{trustlib developers}},
  year = {2026},
  url = {https://github.com/trustlib/trustlib},
  note = {Website: https://trustlib.github.io/trustlib/}
}"""

def claims_csv(rec:dict) -> str:
    "The claims of a published record as CSV: id, headline, claim, paper, ours, verdict, rule, conditions, reason, changes, run."
    import csv
    buf = io.StringIO(); w = csv.writer(buf, lineterminator='\n')
    w.writerow(['id', 'headline', 'claim', 'paper', 'ours', 'verdict', 'rule', 'conditions', 'reason', 'changes', 'run_id', 'commit', 'claims_hash'])
    pub = rec['latest'] or {}
    for r in rec['claims']:
        ch = ' | '.join(f"{c.get('date')}: {c.get('old')} -> {c.get('new')} ({c.get('why')})" for c in r['changes'])
        w.writerow([r['id'] or '', int(r['headline']), r['claim'], r['paper'], r['ours'], r['verdict'], r['rule'], r['conditions'], r['reason'], ch,
                    pub.get('run_id') or '', pub.get('commit') or '', pub.get('claims_hash') or ''])
    return buf.getvalue()

def _pub_counts(pub:dict) -> str:
    vs = [v.get('verdict') for v in pub.get('verdicts') or []]
    return ' '.join(verdict_badge(k, vs.count(k)) for k in VERDICT_STYLE if vs.count(k))

def audit_trail(rec:dict, # from `published_record`
                downloads:dict|None=None, # label -> relative link of the files behind the page
               ) -> str:
    "The audit trail of a paper page (HTML): claims with rules and change logs, the verdict history, downloads, citation."
    p, pub = rec['paper'], rec['latest']
    out = ['<div class="tl-audit">']
    if rec['claims']:
        rows = []
        for r in rec['claims']:
            star = f'<span class="tl-star" title="headline claim">{HEADLINE_MARK}</span> ' if r['headline'] else ''
            rule = _e(r['rule']) if r['rule'] else '<i>not graded</i>'
            extra = (f'<br><b>Conditions.</b> {_e(r["conditions"])}' if r['conditions'] else '') + _changes_html(r['changes'])
            rows.append(f'<tr id="{_e(r["anchor"])}"><td data-label="#">{r["number"]}</td><td data-label="Claim">{star}{_e(r["claim"])}'
                        f'<br><span class="tl-id">{_e(r["id"] or "")}</span></td><td data-label="Paper reports">{_e(r["paper"])}</td>'
                        f'<td data-label="We measure">{_e(r["ours"])}</td><td data-label="Verdict">{verdict_badge(r["verdict"])}</td>'
                        f'<td data-label="Reason, rule">{_e(r["reason"])}<br><b>Rule.</b> {rule}{extra}</td></tr>')
        out.append('<h3 class="anchored" id="claims-rules-and-change-log">Claims, rules and change log</h3>'
                   '<table class="tl-table tl-cards tl-audit-claims"><thead><tr><th class="tl-c-num">#</th><th class="tl-c-claim">Claim</th>'
                   '<th class="tl-c-pap">Paper reports</th><th class="tl-c-ours">We measure</th><th class="tl-c-verdict">Verdict</th>'
                   f'<th class="tl-c-reason">Reason and rule</th></tr></thead><tbody>{"".join(rows)}</tbody></table>')
    pubs = rec['publications']
    if pubs:
        prow = ''.join(f'<tr><td data-label="Date">{_e(x.get("date"))}</td><td data-label="Run"><code>{_e(x.get("run_id"))}</code></td>'
                       f'<td data-label="Commit"><code>{_e((x.get("commit") or "")[:10])}</code></td>'
                       f'<td data-label="Claims hash">{"<code>" + _e(x["claims_hash"]) + "</code>" if x.get("claims_hash") else "legacy (prose rules)"}</td>'
                       f'<td data-label="CPU">{_e(run_cost(x) if x.get("cpu_seconds") is not None else "not recorded")}</td><td data-label="Verdicts">{_pub_counts(x)}</td></tr>'
                       for x in reversed(pubs))
        hist = rec['history']
        if hist:
            hrow = ''.join(f'<tr><td data-label="Claim">{_e(h["claim"])}<br><span class="tl-id">{_e(h["id"])}</span></td>'
                           f'<td data-label="Between">{_e(h["from_date"])} → {_e(h["to_date"])}</td>'
                           f'<td data-label="Verdict">{verdict_badge(h["old"])} → {verdict_badge(h["new"])}</td><td data-label="Why">{_e(h["why"])}'
                           + (f'<br><span class="tl-old">rule was: {_e(h["old_rule"])}</span><br><span class="tl-new">rule now: {_e(h["new_rule"])}</span>'
                              if h['old_rule'] != h['new_rule'] else '') + '</td></tr>' for h in hist)
            changed = ('<table class="tl-table tl-cards"><thead><tr><th style="width:30%">Claim</th><th style="width:14%">Between</th>'
                       '<th style="width:22%">Verdict</th><th>Why</th></tr></thead>'
                       f'<tbody>{hrow}</tbody></table>')
        else:
            changed = ('<p>No verdict changed between publications.</p>' if len(pubs) > 1 else
                       '<p>One publication so far: no verdict has changed.</p>')
        out.append('<h3 class="anchored" id="verdict-history">Verdict history</h3>'
                   f'<p>Every publication of this page, newest first (from <code>nbs/results/ledger/{_e(p.name)}.json</code>).</p>'
                   '<table class="tl-table tl-cards"><thead><tr><th style="width:12%">Date</th><th style="width:16%">Run</th><th style="width:12%">Commit</th>'
                   f'<th style="width:15%">Claims hash</th><th style="width:12%">CPU</th><th>Verdicts</th></tr></thead><tbody>{prow}</tbody></table>' + changed)
    if downloads:
        out.append('<h3 class="anchored" id="downloads">Downloads</h3><ul class="tl-downloads">'
                   + ''.join(f'<li><a href="{_e(href)}" download>{_e(label)}</a></li>' for label, href in downloads.items()) + '</ul>')
    out.append('<h3 class="anchored" id="cite">Cite</h3><p>The paper:</p>'
               f'<pre class="tl-bibtex"><code>{_e(p.bibtex())}</code></pre><p>This reproduction:</p>'
               f'<pre class="tl-bibtex"><code>{_e(TRUSTLIB_BIBTEX)}</code></pre>')
    out.append('</div>')
    return '\n'.join(out)


# %%
_a = audit_trail(rec, {'claims (CSV)': '../../_downloads/disparate_benefits/claims.csv'})
assert '<tr id="claim-gaps">' in _a and 'an interval, not a point' in _a and 'id="verdict-history"' in _a
assert _a.index('cpu-2') < _a.index('cpu-1234567890')                                     # newest publication first
assert 'was: prose rule' in _a and '@inproceedings{schweighofer2025disparate' in _a and '@software{trustlib2026' in _a
_csv = claims_csv(rec).splitlines()
test_eq(_csv[0].split(',')[:6], ['id', 'headline', 'claim', 'paper', 'ours', 'verdict']); test_eq(len(_csv), 3)
assert _csv[1].startswith('gaps,1,gaps grow & stay,SPD 0.173 → 0.194,')
HTML(_a)


# %% [markdown]
# ### The values behind the published numbers
#
# `config_table` shows a paper's parameters as a table a reader can scan: each parameter, the value of the
# published run (the `cpu` profile with any overrides), the default (`smoke`) and the `full` value, what the
# parameter means and which values are allowed. Values that differ from the default are marked.

# %%
#| export
def _short_val(v, n:int=60) -> str:
    s = json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else repr(v)
    return s if len(s) <= n else s[:n - 1] + '…'

def config_table(Config, # a paper's `BaseConfig` subclass
                 profile:str='cpu', # the profile of the published run
                 params:dict|None=None, # the run's overrides (None: the profile's own values)
                ) -> str:
    "HTML table of a paper's parameters: the published run's value beside the smoke default and the full value, with meaning and allowed values."
    rows = Config.describe()
    over = dict(params or {})
    trs = []
    for r in rows:
        name = r['name']
        run = over.get(name, r.get(profile))
        as_json = lambda v: json.dumps(v, sort_keys=True, default=str)
        tr = '<tr class="tl-diff">' if as_json(run) != as_json(r.get('smoke')) else '<tr>'
        trs.append(f'{tr}<td data-label="Parameter"><code>{_e(name)}</code></td>'
                   f'<td data-label="This page ({_e(profile)})"><code>{_e(_short_val(run))}</code></td>'
                   f'<td data-label="Default (smoke)"><code>{_e(_short_val(r.get("smoke")))}</code></td>'
                   f'<td data-label="full"><code>{_e(_short_val(r.get("full")))}</code></td>'
                   f'<td data-label="Meaning">{_e(r.get("help"))}<br><span class="tl-note">{_e(r.get("type"))}'
                   + (f'; {_e(r.get("allowed"))}' if r.get('allowed') else '') + '</span></td></tr>')
    return (f'<table class="tl-table tl-cards tl-config"><thead><tr><th>Parameter</th><th>This page ({_e(profile)})</th><th>Default (smoke)</th>'
            f'<th>full</th><th>Meaning and allowed values</th></tr></thead><tbody>{"".join(trs)}</tbody></table>'
            f'<p class="tl-note">{sum("tl-diff" in t for t in trs)} of {len(trs)} values differ from the defaults (marked).</p>')


# %%
@dataclass
class _DemoConfig(BaseConfig):
    n_members: int = param(3, "ensemble size", ge=1, le=1000)
    lr: float = param(0.1, "learning rate", gt=0, le=10)
    widths: tuple[int, ...] = param((8, 16), "hidden widths swept", ge=1, max=4096)
    variant: str = param("noise", "which construction", choices=("noise", "concat"))
    n_items: int = param(100, "items per run", ge=1, max=10**6)
    PROFILE_DEFAULTS = {"cpu": dict(n_members=10), "full": dict(n_members=10, widths=(256,), n_items=10**7)}
_ct = config_table(_DemoConfig, 'cpu', dict(seed=3))
assert '<tr class="tl-diff"><td data-label="Parameter"><code>n_members</code></td><td data-label="This page (cpu)"><code>10</code>' in _ct
assert '<tr><td data-label="Parameter"><code>lr</code></td>' in _ct and '3 of 7 values differ' in _ct   # profile, seed and n_members
HTML(_ct)


# %%
#| export
def write_pair(nb_path:str|Path, root:str|Path|None=None) -> Path|None:
    "Write the py:percent pair `scripts/<path>.py` of notebook `nbs/<path>.ipynb` (as `tools/pairs.py --write` does); None if not paired."
    nb_path = Path(nb_path).resolve()
    try: root = find_root(root or nb_path.parent); nbs = nbs_path(root).resolve()
    except Exception: return None
    if not (root/'jupytext.toml').is_file() or nbs not in nb_path.parents: return None
    try: import jupytext
    except ImportError: return None
    n = jupytext.read(nb_path)
    for c in n.cells:   # papermill adds `tags: []` everywhere; an empty list carries no information
        if c.metadata.get('tags') == []: del c.metadata['tags']
    n.metadata.setdefault('jupytext', {}).update(notebook_metadata_filter='-all', cell_metadata_filter='tags,-all')
    sp = root/'scripts'/nb_path.relative_to(nbs).with_suffix('.py')
    atomic_write_text(sp, jupytext.writes(n, fmt=dict(extension='.py', format_name='percent')))
    return sp

def _run_anchor(paper, run_id) -> str:
    "The id of a run's row in the dashboard's run history (run ids repeat across papers, so the paper is part of it)."
    return 'run-' + re.sub(r'[^A-Za-z0-9_-]+', '-', f"{paper}-{run_id}")

def _params_text(p:dict) -> str:
    "A run's parameter overrides as `k=v` text (`profile defaults` when there are none)."
    if not p: return 'profile defaults'
    return ', '.join(f"{k}={json.dumps(v)}" for k, v in p.items())

def _rel(p, start) -> str:
    try: return str(Path(p).resolve().relative_to(Path(start).resolve()))
    except ValueError: return Path(p).name

def _history_md(runs, history:int) -> str:
    "The run-history table of a runs folder (latest first), with an anchor per run."
    hist = _records(runs.sort_values('finished', ascending=False, na_position='last').head(history)) if len(runs) else []
    for h in hist:
        h['commit'] = str(h.get('git_commit') or '')[:10] + ('+dirty' if h.get('git_dirty') else '')
        h['when'] = str(h.get('finished') or '')[:19].replace('T', ' ')
        h['duration'] = '' if h.get('duration_s') is None else f"{float(h['duration_s']):.1f}"
        h['error_short'] = str(h['error']).splitlines()[0][:120] if h.get('error') else ''
        h['run_md'] = f'<span id="{_run_anchor(h["paper"], h["run_id"])}"></span>`{_md(h["run_id"])}`'
        h['params_md'] = _md(_params_text({k[len('params.'):]: v for k, v in h.items() if k.startswith('params.') and v is not None}))
    return md_table(hist, ['paper', 'run_md!', 'profile', 'params_md!', 'status', 'when', 'duration', 'commit', 'error_short'],
                    ['Paper', 'Run id', 'Profile', 'Parameters', 'Status', 'Finished (UTC)', 'Duration (s)', 'Commit', 'Error']) if hist else '_No runs yet._'

def _publications_html(records:dict) -> str:
    "Each paper's latest publication, and every verdict that changed between two of its publications (HTML)."
    from trustlib.config import PAPERS
    rows, changes = [], []
    for p in PAPERS:
        rec = records.get(p.name)
        pub = rec and rec['latest']
        link = page_href(p.name, 'results') if rec and rec['implemented'] else ''
        name = f'<a href="{link}">{_e(short_name(p))}</a>' if link else _e(short_name(p))
        if not pub:
            rows.append(f'<tr><td data-label="#">{p.number}</td><td data-label="Paper">{name}</td><td data-label="Published" colspan="5">not published yet</td></tr>')
            continue
        rows.append(f'<tr><td data-label="#">{p.number}</td><td data-label="Paper">{name}</td><td data-label="Date">{_e(pub.get("date"))}</td>'
                    f'<td data-label="Run"><code>{_e(pub.get("run_id"))}</code></td><td data-label="Commit"><code>{_e((pub.get("commit") or "")[:10])}</code></td>'
                    f'<td data-label="CPU">{_e(run_cost(pub) if pub.get("cpu_seconds") is not None else "not recorded")}</td>'
                    f'<td data-label="Claims hash">{"<code>" + _e(pub["claims_hash"]) + "</code>" if pub.get("claims_hash") else "legacy (prose rules)"}'
                    f' · {len(rec["publications"])} publication{"s" if len(rec["publications"]) != 1 else ""}</td></tr>')
        for h in rec['history']:
            changes.append(f'<tr><td data-label="Paper">{name}</td><td data-label="Claim">{_e(h["claim"])}</td>'
                           f'<td data-label="Between">{_e(h["from_date"])} → {_e(h["to_date"])}</td>'
                           f'<td data-label="Verdict">{verdict_badge(h["old"])} → {verdict_badge(h["new"])}</td><td data-label="Why">{_e(h["why"])}</td></tr>')
    pubs = ('<table class="tl-table tl-cards"><thead><tr><th>#</th><th>Paper</th><th>Date</th><th>Run</th><th>Commit</th><th>CPU</th>'
            f'<th>Claims hash</th></tr></thead><tbody>{"".join(rows)}</tbody></table>')
    ch = ('<table class="tl-table tl-cards"><thead><tr><th>Paper</th><th>Claim</th><th>Between</th><th>Verdict</th><th>Why</th></tr></thead>'
          f'<tbody>{"".join(changes)}</tbody></table>') if changes else '<p>No verdict has changed between two publications of a page yet.</p>'
    return pubs, ch

INCONCLUSIVE_CAUSES = {   # why a claim is inconclusive, read from the grader's reason; in this order of precedence
    'condition not met': re.compile(r'condition not met|condition \(.*\) fails|precondition', re.I),
    'within noise': re.compile(r'within noise|straddl|interval contains 0|cannot be told from noise|cannot tell|n = 1\b|unresolved', re.I),
}

def inconclusive_cause(reason:str) -> str:
    "Why an inconclusive claim is inconclusive, from its reason: 'condition not met', 'within noise' (the interval straddles a threshold, or one seed), else 'other'."
    for k, pat in INCONCLUSIVE_CAUSES.items():
        if pat.search(reason or ''): return k
    return 'other'

def verdict_totals(vt) -> dict:
    "Counts of the headline verdicts and of all claims' verdicts (graded words only), the causes of the inconclusive ones, and the numbers of papers and claims."
    graded = vt[vt.verdict.isin(list(VERDICT_STYLE))]
    inc = graded[graded.verdict == 'inconclusive']
    causes = lambda d: {k: int(sum(inconclusive_cause(r) == k for r in (d['reason'] if 'reason' in d else [''] * len(d)))) for k in (*INCONCLUSIVE_CAUSES, 'other')}
    return dict(papers=int(graded.name.nunique()), claims=len(graded),
                headline={k: int((graded.headline & (graded.verdict == k)).sum()) for k in VERDICT_STYLE},
                all={k: int((graded.verdict == k).sum()) for k in VERDICT_STYLE},
                inconclusive=causes(inc), inconclusive_headline=causes(inc[inc.headline]))

def inconclusive_note(tot:dict) -> str:
    "One sentence (HTML) on what the inconclusive verdicts of `verdict_totals` are: how many are within noise, how many lack their condition."
    n = sum(tot['inconclusive'].values())
    if not n: return ''
    parts = {'within noise': 'within noise of their threshold (the interval over seeds straddles it, or there is one seed)',
             'condition not met': 'with the condition the claim needs not met in our experiment',
             'other': 'for another reason given in the claim\'s row'}
    order = ('within noise', 'condition not met', 'other')
    said = [f"{tot['inconclusive'][c]} {parts[c]}" for c in order if tot['inconclusive'].get(c)]
    hc = tot['inconclusive_headline']; nh = sum(hc.values())
    head = (f" {nh} of them {'is a headline claim' if nh == 1 else 'are headline claims'}"
            f" ({', '.join(f'{hc[c]} {c}' for c in order if hc.get(c))}).") if nh else ''
    return (f'<span class="tl-inconclusive-note">{verdict_badge("inconclusive", n)} means the data at this scale cannot tell, '
            f'neither reproduced nor refuted: {"; ".join(said)}.{head}</span>')

def _badges(counts:dict) -> str: return ' '.join(verdict_badge(k, n) for k, n in counts.items() if n)

def build_dashboard(runs_dir:str|Path|None=None, # default: $TRUSTLIB_RUNS or <repo>/runs
                    out:str|Path|None=None, # default: <repo>/nbs/results/dashboard.ipynb
                    profile:str|None="cpu", # profile of the runs shown in the verdict table (runs mode)
                    nbs_dir:str|Path|None=None, # notebooks folder (default: the checkout's)
                    history:int=200, # at most this many runs in the run-history table (runs mode)
                    pair:bool=True, # also write its jupytext pair under scripts/ (when `out` is in the checkout's nbs/)
                    papers_index:bool|None=None, # also write `papers.ipynb` beside it (default: when `out` is the site's dashboard)
                    published:bool=False, # build from the ledger of publications (what the pages show) instead of the runs folder
                    records:dict|None=None, # (published) paper name -> `published_record`, when already computed
                    link_root:str|Path|None=None, # the folder that stands for `nbs/` in the page links (default: `nbs`)
                   ) -> Path:
    "Write the results dashboard notebook (markdown and HTML tables, one stored figure; nothing to execute); return its path."
    import nbformat
    from nbformat.v4 import new_notebook, new_markdown_cell, new_code_cell, new_output
    from trustlib.config import PAPERS
    runs_dir = Path(runs_dir) if runs_dir is not None else default_runs_dir()
    nbs = _nbs_dir(nbs_dir)
    if out is None:
        if nbs is None: raise ValueError("not inside a checkout: pass out= (and nbs_dir=)")
        out = nbs/'results'/'dashboard.ipynb'
    out = Path(out)
    built = datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')
    if published:
        root = nbs.parent if nbs is not None else find_root()
        records = {p.name: (records or {}).get(p.name) or published_record(p.name, root, runs_dir) for p in PAPERS}
        vt = published_table(root, runs_dir, records)
        source = (f"Built by `trustlib report --publish` on {built} from the ledger of publications (`nbs/results/ledger/`): "
                  "each paper's latest published run, the one its page shows. ")
    else:
        runs = collect_runs(runs_dir)
        vt = verdict_table(runs_dir, profile, nbs, runs=runs)
        source = (f"Built by `trustlib report` on {built} from {len(runs)} run(s) in `{_rel(runs_dir, find_root_or(runs_dir))}`; "
                  f"the tables show each paper's latest complete `{profile or 'any'}`-profile run. ")
    words = ', '.join(verdict_badge(k) for k in VERDICT_STYLE)
    tot = verdict_totals(vt)
    rows, seen = [], set()
    for r in _records(vt):
        first = r['name'] not in seen; seen.add(r['name'])
        if not (first or r['headline']): continue
        base = Path(link_root) if link_root is not None else nbs
        link = os.path.relpath(base/Path(get_notebook(r['name'])), out.parent) if base is not None else None
        title = f"[{_md(r['title'])}]({Path(link).as_posix()})" if (r['implemented'] and link) else _md(r['title'])
        verdict = verdict_badge(r['verdict'])
        if r['verdict'] in VERDICT_STYLE and r['implemented'] and link:   # the verdict links to the page's "Paper vs. us"
            verdict = f"[{verdict}]({Path(link).as_posix()}#paper-vs.-us)"
        rows.append(dict(r, title_md=title, verdict_md=verdict))
    head_md = md_table(rows, ['number', 'title_md!', 'claim', 'paper', 'ours', 'verdict_md!'],
                       ['#', 'Paper', 'Headline claim', 'Paper reports', 'We measure', 'Verdict'])
    n_checked = int(vt.run_id.notna().sum())
    cells = [
        new_markdown_cell("# Results dashboard — paper vs. us\n\n"
                          "> The headline claims of the 19 papers beside our CPU-scale numbers, with a verdict per claim.\n\n"
                          "- skip_exec: true\n- skip_showdoc: true\n- page-layout: full\n- toc: false"),
        new_markdown_cell("## Verdicts at a glance\n\n"
                          + (f"**Headline claims** of {tot['papers']} papers: <span class=\"tl-headline-verdict\">{_badges(tot['headline'])}</span>. "
                             f"**All {tot['claims']} claims**: {_badges(tot['all'])}." + (f"\n\n{html_block(inconclusive_note(tot))}" if inconclusive_note(tot) else '')
                             if tot['claims'] else "_No verdicts yet._")),
        new_code_cell("#| echo: false\n# Claims per paper by verdict, generated by trustlib.report.build_dashboard (stored output; not executed).",
                      outputs=[new_output('display_data', data={'image/png': base64.b64encode(papers_chart(vt)).decode(),
                                                               'text/plain': [f'<claims by verdict: {n_checked} claims>']})]),
        new_markdown_cell(source + f"Every claim has one verdict, one of {words}, with the numbers, the reason and, for a graded claim, "
                          f"the rule that decided it (written from the paper's claims table). Each paper has one headline claim, marked "
                          f"{HEADLINE_MARK}. Papers without a published run are listed as *not yet run* (the notebook exists) or *planned*."),
        new_markdown_cell("## Headline claims\n\nEach paper's headline claim, the paper's number beside ours, and its verdict.\n\n" + head_md),
        new_markdown_cell("## All claims\n\nEvery claim of every paper. Click a column head to sort; choose a paper, an area or a verdict, "
                          "or type words, to filter. The reason is shown; the rule, the conditions and the change log open under it.\n\n"
                          + html_block(claims_table_html(vt, 'results'))),
    ]
    if published:
        pubs_html, changes_html = _publications_html(records)
        cells += [new_markdown_cell("## Verdicts that changed\n\nEvery verdict that differs between two publications of a page, and why "
                                    "(the claim's change-log entries made in between, or the same rule on new measurements).\n\n" + html_block(changes_html)),
                  new_markdown_cell("## Publications\n\nEach paper's latest published run. A page's own audit trail lists all of its "
                                    "publications.\n\n" + html_block(pubs_html))]
    else:
        cells.append(new_markdown_cell("## Run history\n\nEvery run folder found (latest first; failed runs keep their traceback in "
                                       "`metrics.json`).\n\n" + _history_md(runs, history)))
    for i, c in enumerate(cells): c['id'] = f"dashboard-{i}"
    nb = new_notebook(cells=cells, metadata=dict(kernelspec=dict(display_name='python3', language='python', name='python3')))  # as nbdev_clean writes it
    nb.nbformat_minor = 5
    nbformat.validate(nb)
    out.parent.mkdir(parents=True, exist_ok=True)
    notest = out.parent/'.notest'
    in_site = nbs is not None and out.parent.resolve() == (nbs/'results').resolve()
    if in_site and not notest.exists(): atomic_write_text(notest, '')
    if papers_index is None: papers_index = in_site
    atomic_write_text(out, nbformat.writes(nb) + '\n')
    if pair: write_pair(out)
    if papers_index and nbs is not None:
        build_papers_index(vt, out.parent/'papers.ipynb', nbs, built=built, pair=pair)
    return out

def _same(a, b) -> bool:
    "Equal as JSON values (tuples and lists alike, 1 == 1.0)."
    norm = lambda v: json.dumps(v.tolist() if hasattr(v, 'tolist') else v, sort_keys=True, default=str)
    try: return a == b or norm(list(a) if isinstance(a, tuple) else a) == norm(list(b) if isinstance(b, tuple) else b)
    except (TypeError, ValueError): return False

def sweep_table(spec, # a sweep spec (dict or YAML path), as for `trustlib sweep`
                runs_dir:str|Path|None=None):
    "One row per grid point of `spec`: its swept parameters, the latest complete run's id and scalar metrics (status `missing` if none)."
    import pandas as pd
    from trustlib.runs import load_spec, grid_points
    spec = load_spec(spec)
    paper = spec.get('paper') or Path(spec['notebook']).stem
    runs = collect_runs(runs_dir)
    runs = runs[(runs.paper == paper) & (runs.status == 'complete')] if len(runs) else runs
    rows = []
    for prof, p in grid_points(spec):
        cand = runs[runs.profile == prof] if len(runs) else runs
        for k, v in p.items():
            col = f'params.{k}'
            cand = cand[cand[col].map(lambda x, v=v: _same(x, v))] if col in cand.columns else cand.iloc[0:0]
        row = {k: (json.dumps(v) if isinstance(v, (list, tuple, dict)) else v) for k, v in p.items() if k in spec['grid']}
        row['profile'] = prof
        if len(cand):
            r = cand.sort_values('finished', na_position='first').iloc[-1]
            row.update(status='complete', run_id=r['run_id'])
            row.update({c[len('metrics.'):]: r[c] for c in cand.columns if c.startswith('metrics.')
                        and isinstance(r[c], (int, float)) and not isinstance(r[c], bool) and r[c] == r[c]})
        else: row.update(status='missing', run_id=None)
        rows.append(row)
    return pd.DataFrame(rows)

def build_sweep_report(spec, # a sweep spec (dict or YAML path)
                       runs_dir:str|Path|None=None, # default: $TRUSTLIB_RUNS or <repo>/runs
                       out:str|Path|None=None, # default: <runs>/sweeps/<paper>-<spec hash>.ipynb
                       metrics:list[str]|None=None, # metrics to plot (default: the first `max_metrics` numeric ones)
                       max_metrics:int=6) -> Path:
    "A results page for one sweep: a table of its grid points and, per swept parameter, each metric against it (mean ± sd over the rest)."
    import hashlib, nbformat, pandas as pd, seaborn as sns
    from matplotlib.figure import Figure
    from nbformat.v4 import new_notebook, new_markdown_cell, new_code_cell, new_output
    from trustlib.runs import load_spec
    spec = load_spec(spec)
    paper = spec.get('paper') or Path(spec['notebook']).stem
    runs_dir = Path(runs_dir) if runs_dir is not None else default_runs_dir()
    df = sweep_table(spec, runs_dir)
    swept = list(spec['grid'])
    base = set(swept) | {'profile', 'status', 'run_id'}
    numeric = [c for c in df.columns if c not in base and pd.api.types.is_numeric_dtype(df[c])]
    metrics = [m for m in (metrics or numeric) if m in df.columns][:max_metrics]
    key = hashlib.sha1(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:8]
    out = Path(out) if out is not None else runs_dir/'sweeps'/f"{paper}-{key}.ipynb"
    done = int((df.status == 'complete').sum())
    cells = [new_markdown_cell(f"# Sweep: {paper} over {', '.join(swept)}\n\n> {done} of {len(df)} grid points have a complete run.\n\n"
                               "- skip_exec: true\n- skip_showdoc: true"),
             new_markdown_cell("Fixed parameters: " + (', '.join(f"`{k}={json.dumps(v)}`" for k, v in spec['params'].items()) or 'none')
                               + f"; profile `{spec['profile']}`. Built by `trustlib report --sweep` from `{runs_dir.name}`."),
             new_markdown_cell("## Grid points\n\n" + md_table(_records(df.round(4)), [*swept, 'status', 'run_id', *metrics]))]
    for p in swept:
        d = df[df.status == 'complete']
        if not len(d) or not metrics: continue
        fig = Figure(figsize=(min(3.2 * len(metrics), 9.6), 2.8 * math.ceil(len(metrics) / 3)))
        axes = fig.subplots(math.ceil(len(metrics) / 3), min(len(metrics), 3), squeeze=False).ravel()
        x = d[p].astype(str) if not pd.api.types.is_numeric_dtype(d[p]) else d[p]
        for ax, m in zip(axes, metrics):
            sns.pointplot(x=x, y=d[m], errorbar='sd', ax=ax, color='#1565c0')
            ax.set_xlabel(p); ax.set_ylabel(m); ax.set_title(m, fontsize=9)
        for ax in axes[len(metrics):]: ax.set_visible(False)
        fig.suptitle(f"metrics against {p} (mean ± sd over the other swept parameters)", fontsize=10); fig.tight_layout()
        buf = io.BytesIO(); fig.savefig(buf, format='png', dpi=100)
        cells += [new_markdown_cell(f"## Against `{p}`"),
                  new_code_cell("#| echo: false", outputs=[new_output('display_data', data={'image/png': base64.b64encode(buf.getvalue()).decode(),
                                                                                                'text/plain': [f'<metrics against {p}>']})])]
    for i, c in enumerate(cells): c['id'] = f"sweep-{i}"
    nb = new_notebook(cells=cells, metadata=dict(kernelspec=dict(display_name='python3', language='python', name='python3')))
    nb.nbformat_minor = 5
    nbformat.validate(nb)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, nbformat.writes(nb) + '\n')
    return out

def paper_summary(nb_path:str|Path) -> str:
    "The one-line summary of a paper notebook: the `> ...` line of its title cell ('' if there is none)."
    try: nb = json.loads(Path(nb_path).read_text(encoding='utf-8'))
    except (OSError, ValueError): return ''
    for c in nb.get('cells', [])[:2]:
        if c.get('cell_type') != 'markdown': continue
        for line in ''.join(c.get('source', '')).splitlines():
            if line.startswith('> '): return line[2:].strip()
    return ''

def papers_index_html(vt, nbs:str|Path|None, from_dir:str='results') -> str:
    "The 19 papers by area as HTML tables (cards on a phone): paper and its links, the claim in one line, the headline verdict, all verdicts."
    from trustlib.config import PAPERS
    by_area = {}
    for p in PAPERS: by_area.setdefault(p.area, []).append(p)
    out = []
    for area in sorted(by_area, key=lambda a: (list(AREA_TITLES).index(a) if a in AREA_TITLES else 99, a)):
        rows = []
        for p in by_area[area]:
            d = vt[vt.name == p.name]
            implemented = bool(d.implemented.any()) if len(d) else False
            link = page_href(p.name, from_dir) if implemented else ''
            title = f'<a href="{link}">{_e(p.title)}</a>' if link else _e(p.title)
            links = ' · '.join([f'<a href="{_e(u)}">{_e(k)}</a>' for k, u in p.links.items()] + [f'code: {code_html(p)}'])
            authors = p.author_list
            who = ', '.join(authors[:3]) + (' et al.' if len(authors) > 3 and authors[-1] != 'et al.' else '')
            published = implemented and d.run_id.notna().any()
            counts = d.verdict.value_counts()
            head = d[d.headline]
            headline = (verdict_badge(head.verdict.iloc[0]) + f'<br><span class="tl-note">{_e(head.claim.iloc[0])}</span>') if published and len(head) else \
                       verdict_badge('not yet run' if implemented else 'planned')
            allv = ' '.join(verdict_badge(k, int(counts[k])) for k in VERDICT_STYLE if counts.get(k, 0)) if published else ''
            summary = paper_summary(Path(nbs)/p.notebook) if (nbs is not None and implemented) else ''
            rows.append(f'<tr data-paper="{_e(p.name)}"><td data-label="Paper"><b>{p.number}. {title}</b><br><span class="tl-note">{_e(who)} · {_e(p.venue)}</span>'
                        f'<br><span class="tl-links">{links}</span></td><td data-label="Headline verdict" class="tl-headline-verdict">{headline}</td>'
                        f'<td data-label="All claims">{allv}</td><td data-label="In one line">{_e(summary)}</td></tr>')
        out.append((AREA_TITLES.get(area, area.title()),
                    '<table class="tl-table tl-cards tl-papers"><thead><tr><th class="tl-c-title">Paper</th><th class="tl-c-head">Headline verdict</th>'
                    '<th class="tl-c-all">All claims</th><th class="tl-c-sum">In one line</th></tr></thead>'
                    f'<tbody>{"".join(rows)}</tbody></table>'))
    return out

def build_papers_index(vt, # the output of `verdict_table` or `published_table`
                       out:str|Path, # where to write (nbs/results/papers.ipynb)
                       nbs:str|Path, # the notebooks folder
                       built:str='', pair:bool=True) -> Path:
    "Write the papers index: the 19 papers by area, each with its links, its one-line claim, its headline verdict and all its verdicts as badges."
    import nbformat
    from nbformat.v4 import new_notebook, new_markdown_cell
    out, nbs = Path(out), Path(nbs)
    cells = [new_markdown_cell("# Papers\n\n> The 19 ICML 2025 papers by area: what each claims, where to read it, and how its claims fared "
                               "at CPU scale.\n\n- skip_exec: true\n- skip_showdoc: true"),
             new_markdown_cell(f"The headline verdict is the one of the abstract's main claim ({HEADLINE_MARK}); the badges count all the "
                               "paper's claims by verdict in its published `cpu` run. Numbers, intervals and rules: the "
                               "[results dashboard](dashboard.ipynb)." + (f" Built on {built}." if built else ''))]
    for area, table in papers_index_html(vt, nbs, 'results'):
        cells.append(new_markdown_cell(f"## {area}\n\n" + html_block(table)))
    for i, c in enumerate(cells): c['id'] = f"papers-{i}"
    nb = new_notebook(cells=cells, metadata=dict(kernelspec=dict(display_name='python3', language='python', name='python3')))
    nb.nbformat_minor = 5
    nbformat.validate(nb)
    atomic_write_text(out, nbformat.writes(nb) + '\n')
    if pair: write_pair(out)
    return out

def get_notebook(name:str) -> str:
    "The notebook path of paper `name`, relative to `nbs/`."
    from trustlib.config import get_paper
    return get_paper(name).notebook

def find_root_or(p) -> Path:
    "The checkout holding `p`, or `p`'s parent if it is outside one."
    try: return find_root(p if Path(p).exists() else Path(p).parent)
    except Exception: return Path(p).parent


# %% [markdown]
# The dashboard for the example runs folder, written into a temporary `results/` folder next to the example
# notebooks folder (so the link to the implemented `l2h` notebook resolves):

# %%
dash = build_dashboard(runs, out=_nbs/'results'/'dashboard.ipynb', nbs_dir=_nbs)
nb = nbformat.read(dash, as_version=4)
test_eq(nb.cells[0].source.splitlines()[0], '# Results dashboard — paper vs. us')
heads_md, table_md = nb.cells[4].source, nb.cells[5].source
assert heads_md.startswith('## Headline claims') and table_md.startswith('## All claims')
test_eq(heads_md.count(f"| ensembles help | 0.10 | 0.08 | {verdict_badge('reproduced')} |"), 1)   # the headline claim of the latest cpu run (no page here: no link)
test_eq(heads_md.count('class="verdict v-planned"'), 17)
for p in PAPERS: assert p.title in heads_md, p.name
assert '[From Logits to Hierarchies: Hierarchical Clustering made Simple](../papers/clustering/l2h.ipynb)' in heads_md
assert table_md.index('<b>ensembles help</b>') < table_md.index('gap grows') < table_md.index('a picture of the gap')   # the headline first
assert 'Rule.</b> ours &gt;= 0.5 * paper' in table_md and '`' not in table_md.split('```{=html}')[1].rsplit('```', 1)[0]      # escaped once, no code spans
test_eq(table_md.count('<tr data-paper='), 3 + 18)
assert nb.cells[2].outputs[0]['data']['image/png'].startswith('iVBOR')
assert 'cpu-dddddddddd' in nb.cells[6].source and 'RuntimeError: boom' in nb.cells[6].source
for w in VERDICTS: assert verdict_badge(w) in nb.cells[3].source, w   # the prose lists all six words, as badges
test_eq((_nbs/'results'/'.notest').exists(), True)
test_eq(sorted(p.name for p in (_nbs/'results').iterdir()), ['.notest', 'dashboard.ipynb', 'papers.ipynb'])   # the papers index beside it
_idx = nbformat.read(_nbs/'results'/'papers.ipynb', as_version=4)
assert [c.source.splitlines()[0] for c in _idx.cells[2:4]] == ['## Fairness', '## Privacy'] and verdict_badge('planned') in _idx.cells[2].source
Image(base64.b64decode(nb.cells[2].outputs[0]['data']['image/png']))

# %% [markdown]
# An inconclusive verdict is told apart by its cause, read from the grader's reason: the interval straddles the
# threshold (or one seed gives none), or the condition the claim needs is not met. The dashboard and the home page
# count both, and the claims table names the cause under the badge:

# %%
test_eq([inconclusive_cause(r) for r in ("x = 0.01: within noise of the reproduced threshold (interval -0.01…0.03)",
                                         "x = 0.5 from n = 1: no interval, so it cannot be told from noise",
                                         "condition not met: share >= 0.8 — 0.5; the rule alone would give reproduced",
                                         "bootstrap over the words", "")],
        ['within noise', 'within noise', 'condition not met', 'other', 'other'])
_vt_inc = pd.DataFrame(dict(name=['a', 'a', 'b', 'c'], headline=[True, False, True, True], verdict=['inconclusive', 'inconclusive', 'reproduced', 'inconclusive'],
                            reason=['within noise of the partially threshold', 'condition not met: c', '', 'no model offline']))
_tot = verdict_totals(_vt_inc)
test_eq((_tot['inconclusive'], _tot['inconclusive_headline']), ({'condition not met': 1, 'within noise': 1, 'other': 1}, {'condition not met': 0, 'within noise': 1, 'other': 1}))
_note = inconclusive_note(_tot)
assert _note.startswith('<span class="tl-inconclusive-note">' + verdict_badge('inconclusive', 3)) and '1 within noise of their threshold' in _note, _note
assert '1 with the condition the claim needs not met' in _note and '2 of them are headline claims (1 within noise, 1 other)' in _note, _note
test_eq(inconclusive_note(verdict_totals(_vt_inc[_vt_inc.verdict != 'inconclusive'])), '')
_rec_inc = dict(rec, headline=dict(rec['headline'], verdict='inconclusive', reason='x: within noise of the reproduced threshold'))
assert '<span class="verdict v-inconclusive"' in summary_box(_rec_inc) and '<div class="tl-note tl-cause">within noise</div>' in summary_box(_rec_inc)
assert 'tl-cause' not in summary_box(rec)
assert 'data-cause="within noise"' in claims_table_html(pd.DataFrame([dict(number=1, name='l2h', area='clustering', title='L2H', implemented=False, headline=True, claim='c',
                                                                        paper='p', ours='o', verdict='inconclusive', reason='within noise of x', rule='r', anchor=None)]))

# %% [markdown]
# The same dashboard from the ledger of publications (what the pages show), on the crafted checkout above:

# %%
_pd = build_dashboard(out=_root/'nbs'/'results'/'dashboard.ipynb', nbs_dir=_root/'nbs', published=True, pair=False, records=dict(disparate_benefits=rec))
_pnb2 = nbformat.read(_pd, as_version=4)
_md_all = '\n'.join(c.source for c in _pnb2.cells if c.cell_type == 'markdown')
assert '## Verdicts that changed' in _md_all and '## Publications' in _md_all and '2026-12-02: an interval, not a point' in _md_all
assert 'Headline claims</b>' not in _md_all and f'**Headline claims** of 1 papers: <span class="tl-headline-verdict">{verdict_badge("reproduced", 1)}</span>' in _md_all
