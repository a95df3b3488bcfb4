"""Seed a paper's ledger (nbs/results/ledger/<paper>.json) with the verdicts of its page as published before claims
tables existed: the verdict table stored in the committed notebook's output and the run note above it.

python tools/ledger_legacy.py PAPER [PAPER ...]    # or --all
python tools/ledger_legacy.py --all --headlines      # mark each legacy entry's headline claim (see below)

The entry is marked `legacy`: its rules were prose and it has no hashes. Claim ids are `legacy_<row>` until the paper's
claims table maps them (`--ids new_id1,new_id2,...`, one per row, '-' for a row with no successor).

The stored verdict tables do not say which claim is the headline; the runs behind them did (their `metrics.json`), and
the results dashboard published from those runs marks it with ★. `--headlines` sets `headline` (True on that claim,
False on the others) in legacy entries whose rows carry none, from the ★ rows of nbs/results/dashboard.ipynb as of the
commit that built it from those runs (`--dashboard-commit`, default 716bced); it refuses unless exactly one row matches.
"""
import json, re, sys
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

class _Table(HTMLParser):
    def __init__(self):
        super().__init__(); self.rows, self.cell, self.row = [], None, None
    def handle_starttag(self, tag, attrs):
        if tag == 'tr': self.row = []
        elif tag in ('td', 'th') and self.row is not None: self.cell = []
    def handle_endtag(self, tag):
        if tag in ('td', 'th') and self.cell is not None: self.row.append(''.join(self.cell).strip()); self.cell = None
        elif tag == 'tr' and self.row is not None: self.rows.append(self.row); self.row = None
    def handle_data(self, data):
        if self.cell is not None: self.cell.append(data)

def legacy_entry(paper:str) -> dict:
    from trustlib.config import get_paper
    nb = json.loads((ROOT/'nbs'/get_paper(paper).notebook).read_text(encoding='utf-8'))
    note, table = '', None
    for c in nb['cells']:
        src = ''.join(c['source'])
        if 'injected-parameters' in (c.get('metadata') or {}).get('tags', []): note = src
        if c['cell_type'] == 'code' and 'verdict_table()' in src:
            for o in c.get('outputs', []):
                html = ''.join((o.get('data') or {}).get('text/html', ''))
                if '<table' in html: table = html
    if table is None: raise SystemExit(f"{paper}: no stored verdict table in its notebook")
    p = _Table(); p.feed(table)
    head, rows = p.rows[0], p.rows[1:]
    cols = [h for h in head if h]
    get = lambda r, k: r[1:][cols.index(k)] if k in cols else ''
    rid = re.search(r"run `([^`]+)`", note); commit = re.search(r"commit `([^`]+)`", note); date = re.search(r"(\d{4}-\d{2}-\d{2})", note)
    verdicts = [dict(id=f"legacy_{i}", claim_hash=None, verdict=get(r, 'verdict'), claim=get(r, 'claim'), rule=get(r, 'rule'),
                     ours=get(r, 'ours'), headline=None) for i, r in enumerate(rows)]
    return dict(run_id=rid and rid.group(1), date=date and date.group(1), commit=commit and commit.group(1), profile='cpu',
                claims_hash=None, cpu_seconds=None, legacy=True, verdicts=verdicts)

def dashboard_headlines(commit:str='716bced') -> dict[int, str]:
    "Paper number -> headline claim text, from the ★ rows of the dashboard committed at `commit`."
    import html, subprocess
    text = subprocess.run(['git', 'show', f'{commit}:nbs/results/dashboard.ipynb'], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    md = '\n'.join(''.join(c['source']) for c in json.loads(text)['cells'] if c['cell_type'] == 'markdown')
    out = {}
    for line in md.splitlines():
        m = re.match(r'\| (\d+) \| .*? \| ★ \*\*(.*?)\*\* \|', line)
        if m: out[int(m.group(1))] = html.unescape(m.group(2)).replace('\\|', '|')
    return out

def mark_headlines(pubs:list, paper, heads:dict) -> bool:
    "Set `headline` on the legacy entries' rows from `heads`; True if anything changed."
    changed = False
    for pub in pubs:
        if not pub.get('legacy') or any(v.get('headline') is not None for v in pub['verdicts']): continue
        want = heads.get(paper.number)
        hits = [v for v in pub['verdicts'] if v['claim'] == want]
        if len(hits) != 1: raise SystemExit(f"{paper.name}: {len(hits)} legacy rows match the dashboard's headline claim {want!r}")
        for v in pub['verdicts']: v['headline'] = v is hits[0]
        changed = True
    return changed

def main(argv):
    from trustlib.config import PAPERS
    from trustlib.results import ledger_path, load_ledger, atomic_write_text
    ids = next((a.split('=', 1)[1].split(',') for a in argv if a.startswith('--ids=')), None)
    if '--headlines' in argv:
        from trustlib.config import get_paper
        commit = next((a.split('=', 1)[1] for a in argv if a.startswith('--dashboard-commit=')), '716bced')
        heads = dashboard_headlines(commit)
        for paper in ([p.name for p in PAPERS] if '--all' in argv else [a for a in argv if not a.startswith('--')]):
            pubs = load_ledger(paper, ROOT)
            if mark_headlines(pubs, get_paper(paper), heads):
                atomic_write_text(ledger_path(paper, ROOT), json.dumps(dict(paper=paper, publications=pubs), indent=1, ensure_ascii=False) + "\n")
                print(f"{paper}: headline marked")
        return
    papers = [p.name for p in PAPERS] if '--all' in argv else [a for a in argv if not a.startswith('--')]
    for paper in papers:
        pubs = load_ledger(paper, ROOT)
        if ids is not None:   # map the legacy rows to the claims table's ids
            leg = [p for p in pubs if p.get('legacy')]
            if not leg: raise SystemExit(f"{paper}: no legacy entry to map")
            if len(ids) != len(leg[-1]['verdicts']): raise SystemExit(f"{paper}: {len(leg[-1]['verdicts'])} legacy rows, {len(ids)} ids given")
            for v, i in zip(leg[-1]['verdicts'], ids): v['id'] = None if i == '-' else i
        elif any(p.get('legacy') for p in pubs): print(f"{paper}: already has a legacy entry"); continue
        else: pubs = [legacy_entry(paper)] + pubs
        atomic_write_text(ledger_path(paper, ROOT), json.dumps(dict(paper=paper, publications=pubs), indent=1, ensure_ascii=False) + "\n")
        print(f"{paper}: {len(pubs[0]['verdicts'])} legacy verdicts")

if __name__ == '__main__': main(sys.argv[1:])
