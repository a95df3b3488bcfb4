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
from IPython.display import Image
from trustlib.results import write_json

# %% [markdown]
# ## Collecting runs
#
# `collect_runs` reads every published run folder (hidden `.tmp-*` folders of runs in progress or killed
# runs are ignored) into one row: the run's identity and status, its parameters as `params.<name>` columns
# and its metrics, flattened, as `metrics.<name>` columns.

# %%
#| export
_BASE_COLS = ['paper', 'run_id', 'status', 'profile', 'started', 'finished', 'duration_s', 'git_commit', 'git_dirty',
              'n_verdicts', 'error', 'path']

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
        row = {k: m.get(k) for k in _BASE_COLS if k not in ('n_verdicts', 'path', 'error')}
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

def build_dashboard(runs_dir:str|Path|None=None, # default: $TRUSTLIB_RUNS or <repo>/runs
                    out:str|Path|None=None, # default: <repo>/nbs/results/dashboard.ipynb
                    profile:str|None="cpu", # profile of the runs shown in the verdict table
                    nbs_dir:str|Path|None=None, # notebooks folder (default: the checkout's)
                    history:int=200, # at most this many runs in the run-history table
                    pair:bool=True, # also write its jupytext pair under scripts/ (when `out` is in the checkout's nbs/)
                    papers_index:bool|None=None, # also write `papers.ipynb` beside it (default: when `out` is the site's dashboard)
                   ) -> Path:
    "Write the results dashboard notebook (markdown tables + a stored chart; nothing to execute); return its path."
    import nbformat
    from nbformat.v4 import new_notebook, new_markdown_cell, new_code_cell, new_output
    runs_dir = Path(runs_dir) if runs_dir is not None else default_runs_dir()
    nbs = _nbs_dir(nbs_dir)
    if out is None:
        if nbs is None: raise ValueError("not inside a checkout: pass out= (and nbs_dir=)")
        out = nbs/'results'/'dashboard.ipynb'
    out = Path(out)
    runs = collect_runs(runs_dir)
    vt = verdict_table(runs_dir, profile, nbs, runs=runs)
    rows, seen = [], set()
    for r in _records(vt):
        first = r['name'] not in seen; seen.add(r['name'])
        link = os.path.relpath(nbs/Path(get_notebook(r['name'])), out.parent) if nbs is not None else None
        title = f"[{_md(r['title'])}]({Path(link).as_posix()})" if (r['implemented'] and link) else _md(r['title'])
        run = f"[`{r['run_id']}`](#{_run_anchor(r['name'], r['run_id'])})<br>{r['date']} · {r['profile']}" if r['run_id'] else ''
        verdict = verdict_badge(r['verdict'])
        if r['verdict'] in VERDICT_STYLE and r['implemented'] and link:   # the verdict links to the page's "Paper vs. us"
            verdict = f"[{verdict}]({Path(link).as_posix()}#paper-vs.-us)"
        claim = f"{HEADLINE_MARK} **{_md(r['claim'])}**" if r['headline'] else _md(r['claim'])
        reason = _md(r['reason']) + (f"<br><small>rule: `{_md(r['rule']).replace('`', '')}`</small>" if r.get('rule') else '')
        rows.append(dict(r, title_md=title if first else '', run_md=run if first else '', claim_md=claim, verdict_md=verdict,
                         reason_md=reason))
    table = md_table(rows, ['number', 'title_md!', 'claim_md!', 'paper', 'ours', 'verdict_md!', 'reason_md!', 'run_md!'],
                     ['#', 'Paper', 'Claim', 'Paper reports', 'We measure', 'Verdict', 'Reason (rule)', 'Run'])
    heads = [r for r in rows if r['title_md'] or r['headline']]   # a paper's first row: its headline claim when it recorded one
    head_md = md_table(heads, ['number', 'title_md!', 'claim', 'verdict_md!'], ['#', 'Paper', 'Headline claim', 'Verdict'])
    n_by = {k: int((vt.verdict == k).sum()) for k in VERDICT_STYLE}
    n_head = {k: int((vt.headline & (vt.verdict == k)).sum()) for k in VERDICT_STYLE}
    words = ', '.join(verdict_badge(k) for k in VERDICT_STYLE)
    counts_md = ' '.join(verdict_badge(k, n_by[k]) for k in VERDICT_STYLE if n_by[k])
    heads_md = ' '.join(verdict_badge(k, n_head[k]) for k in VERDICT_STYLE if n_head[k])
    hist = _records(runs.sort_values('finished', ascending=False, na_position='last').head(history)) if len(runs) else []
    for h in hist:
        h['commit'] = str(h.get('git_commit') or '')[:10] + ('+dirty' if h.get('git_dirty') else '')
        h['when'] = str(h.get('finished') or '')[:19].replace('T', ' ')
        h['duration'] = '' if h.get('duration_s') is None else f"{float(h['duration_s']):.1f}"
        h['error_short'] = str(h['error']).splitlines()[0][:120] if h.get('error') else ''
        h['run_md'] = f'<span id="{_run_anchor(h["paper"], h["run_id"])}"></span>`{_md(h["run_id"])}`'
        h['params_md'] = _md(_params_text({k[len('params.'):]: v for k, v in h.items() if k.startswith('params.') and v is not None}))
    hist_md = md_table(hist, ['paper', 'run_md!', 'profile', 'params_md!', 'status', 'when', 'duration', 'commit', 'error_short'],
                       ['Paper', 'Run id', 'Profile', 'Parameters', 'Status', 'Finished (UTC)', 'Duration (s)', 'Commit', 'Error']) if hist else '_No runs yet._'
    n_checked = int(vt.run_id.notna().sum())
    built = datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')
    cells = [
        new_markdown_cell("# Results dashboard — paper vs. us\n\n"
                          "> The headline claims of the 19 papers beside our CPU-scale numbers, with a verdict per claim.\n\n"
                          "- skip_exec: true\n- skip_showdoc: true\n- page-layout: full\n- toc: false"),
        new_markdown_cell(f"Built by `trustlib report --publish` on {built} from {len(runs)} run(s) in `{_rel(runs_dir, find_root_or(runs_dir))}`; "
                          f"the table shows each paper's latest complete `{profile or 'any'}`-profile run. Verdicts are data recorded "
                          f"by each paper notebook's \"Paper vs. us\" section, one of {words}, each with its reason and, for a "
                          f"graded claim, the explicit rule that decided it. Each paper has one headline claim, marked {HEADLINE_MARK} "
                          "and listed first. Papers without a run are listed as *not yet run* "
                          "(the notebook exists) or *planned*. Rebuild with `trustlib report --publish`."),
        new_markdown_cell("## Verdicts at a glance"),
        new_code_cell("#| echo: false\n# Chart of verdict counts, generated by trustlib.report.build_dashboard (stored output; not executed).",
                      outputs=[new_output('display_data', data={'image/png': base64.b64encode(verdict_chart(vt)).decode(),
                                                               'text/plain': [f'<verdict chart: {n_checked} claims>']})]),
        new_markdown_cell("## Headline claims\n\nEach paper's headline claim and its verdict"
                          + (f" ({heads_md})" if heads_md else '') + ".\n\n" + head_md),
        new_markdown_cell("## The 19 papers\n\nEvery claim of each paper's latest run"
                          + (f" ({counts_md})" if counts_md else '') + f"; the headline claim ({HEADLINE_MARK}) first.\n\n" + table),
        new_markdown_cell("## Run history\n\nEvery run folder found (latest first; failed runs keep their traceback in "
                          "`metrics.json`).\n\n" + hist_md),
    ]
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

AREA_TITLES = {'fairness': 'Fairness', 'privacy': 'Privacy', 'calibration': 'Calibration', 'robustness': 'Robustness',
               'interp': 'Interpretability', 'unlearning': 'Unlearning', 'clustering': 'Clustering', 'theory': 'Theory',
               'bias': 'Bias', 'evals': 'Evaluations'}

def paper_summary(nb_path:str|Path) -> str:
    "The one-line summary of a paper notebook: the `> ...` line of its title cell ('' if there is none)."
    try: nb = json.loads(Path(nb_path).read_text(encoding='utf-8'))
    except (OSError, ValueError): return ''
    for c in nb.get('cells', [])[:2]:
        if c.get('cell_type') != 'markdown': continue
        for line in ''.join(c.get('source', '')).splitlines():
            if line.startswith('> '): return line[2:].strip()
    return ''

def build_papers_index(vt, # the output of `verdict_table`
                       out:str|Path, # where to write (nbs/results/papers.ipynb)
                       nbs:str|Path, # the notebooks folder
                       built:str='', pair:bool=True) -> Path:
    "Write the papers index: the 19 papers by area, each with its one-line claim, status and verdict counts as badges."
    import nbformat
    from nbformat.v4 import new_notebook, new_markdown_cell
    out, nbs = Path(out), Path(nbs)
    cells = [new_markdown_cell("# Papers\n\n> The 19 ICML 2025 papers by area: what each claims, whether it is implemented, "
                               "and how its claims fared at CPU scale.\n\n- skip_exec: true\n- skip_showdoc: true"),
             new_markdown_cell("Each row links to the paper's page; the badges count its claims by verdict in the latest "
                               "published `cpu` run (details, intervals and rules on the [results dashboard](dashboard.ipynb)). "
                               + ' '.join(verdict_badge(k) for k in VERDICT_STYLE)
                               + (f"\n\nBuilt by `trustlib report --publish` on {built}." if built else ''))]
    by_area = {}
    for p in PAPERS: by_area.setdefault(p.area, []).append(p)
    for area in sorted(by_area, key=lambda a: (list(AREA_TITLES).index(a) if a in AREA_TITLES else 99, a)):
        rows = []
        for p in by_area[area]:
            d = vt[vt.name == p.name]
            nb = nbs/p.notebook
            implemented = nb.is_file()
            link = Path(os.path.relpath(nb, out.parent)).as_posix()
            title = f"[{_md(p.title)}]({link})" if implemented else _md(p.title)
            counts = d.verdict.value_counts()
            if implemented and d.run_id.notna().any():
                badges = ' '.join(verdict_badge(k, int(counts[k])) for k in VERDICT_STYLE if counts.get(k, 0))
            else: badges = verdict_badge('not yet run' if implemented else 'planned')
            links = ' · '.join(([f"[arXiv](https://arxiv.org/abs/{p.arxiv})"] if p.arxiv else []) + ([f"[code]({p.code})"] if p.code else []))
            rows.append(dict(number=p.number, title_md=title + (f"<br><small>{links}</small>" if links else ''),
                             summary=paper_summary(nb) if implemented else '',
                             status='implemented' if implemented else 'planned', badges_md=badges))
        cells.append(new_markdown_cell(f"## {AREA_TITLES.get(area, area.title())}\n\n"
                                       + md_table(rows, ['number', 'title_md!', 'summary', 'status', 'badges_md!'],
                                                  ['#', 'Paper', 'Claim in one line', 'Status', 'Verdicts'])))
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
table_md = nb.cells[5].source
heads_md = nb.cells[4].source
assert heads_md.startswith('## Headline claims') and f'| {HEADLINE_MARK} ' not in heads_md
test_eq(heads_md.count(f"| ensembles help | {verdict_badge('reproduced')} |"), 1)   # the headline claim of the latest cpu run (no page here: no link)
test_eq(heads_md.count('class="verdict v-planned"'), 17)
for p in PAPERS: assert p.title in table_md, p.name
assert '[From Logits to Hierarchies: Hierarchical Clustering made Simple](../papers/clustering/l2h.ipynb)' in table_md
test_eq(table_md.count(f"| {verdict_badge('reproduced')} |"), 1)   # one claim row (the counts line has its own badge)
assert f'{HEADLINE_MARK} **ensembles help** | 0.10 | 0.08 | {verdict_badge("reproduced")} |' in table_md   # the headline, marked, first
assert table_md.index('ensembles help') < table_md.index('gap grows') < table_md.index('a picture of the gap')
assert verdict_badge('illustrated') in table_md and 'rule: `ours &gt;= 0.5 * paper`' in table_md
test_eq(table_md.count('class="verdict v-planned"'), 17)
assert nb.cells[3].outputs[0]['data']['image/png'].startswith('iVBOR')
assert 'cpu-dddddddddd' in nb.cells[6].source and 'RuntimeError: boom' in nb.cells[6].source
for w in VERDICTS: assert verdict_badge(w) in nb.cells[1].source, w   # the prose lists all six words, as badges
test_eq((_nbs/'results'/'.notest').exists(), True)
test_eq(sorted(p.name for p in (_nbs/'results').iterdir()), ['.notest', 'dashboard.ipynb', 'papers.ipynb'])   # the papers index beside it
Image(base64.b64decode(nb.cells[3].outputs[0]['data']['image/png']))
