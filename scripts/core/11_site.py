# %% [markdown]
# # site — the website as readers see it
#
# > Polish the processed notebooks before Quarto renders them, and check the rendered site in a real browser.

# %% [markdown]
# The website is the first way most people meet trustlib, so it is built for reading, then checked as a
# reader would see it. `trustlib site` runs nbdev's processing into `_proc/`, then `polish_proc` on it:
#
# - **Code folding on paper pages.** Exported functions already appear as their documentation; the other
#   code cells (examples, assertions, the experiment's plumbing) are folded behind a *Code* toggle, so a
#   reader scrolls from the summary to the method, the figures and the verdicts. The parameters cell stays
#   open: it is what a reader changes.
# - **API entries in source order.** nbdev adds one `show_doc` cell per symbol of an exported cell, in
#   reverse order; they are put back in the order the symbols are defined.
# - **Verdicts as coloured badges** in the stored verdict tables, with the same colours as the dashboard
#   (`trustlib.report.verdict_badge`).
#
# After `quarto render`, `check_rendered` loads every page in headless Chromium (through Playwright, with
# every request outside the site blocked) and reports broken internal links and anchors, pages wider than
# the viewport at 1280 px (and the home, papers and dashboard pages at phone width), images shown at less
# than 60 % of their natural width, and stored stderr blocks; it keeps screenshots of the home page, the
# dashboard and one paper page.

# %%
#| default_exp site

# %%
#| export
from __future__ import annotations
import functools, http.server, json, os, re, shutil, socketserver, threading
from pathlib import Path
from urllib.parse import urlsplit, unquote

from trustlib.config import require
from trustlib.results import VERDICTS

# %%
#| hide
import base64, struct, tempfile, zlib
from fastcore.test import test_eq, test_fail


# %%
#| hide
def _png_of(w, h):   # a solid w×h PNG
    raw = b''.join(b'\x00' + b'\x80' * (3 * w) for _ in range(h))
    chunk = lambda t, d: struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
    return b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b'')


# %% [markdown]
# ## Polishing the processed notebooks

# %%
#| export
_DIRECTIVE = re.compile(r'^\s*#\s*\|\s*([\w-]+)\s*:?\s*(.*)$')

def cell_directives(src:str) -> dict[str, str]:
    "The `#| key: value` options at the top of a code cell's source."
    out = {}
    for line in src.splitlines():
        m = _DIRECTIVE.match(line)
        if not m: break
        out[m.group(1)] = m.group(2).strip()
    return out

def _src(c) -> str: return ''.join(c['source']) if isinstance(c.get('source'), list) else c.get('source', '')

def fold_code(nb:dict) -> int:
    "Fold (Quarto `code-fold`) every shown code cell except the parameters cell and nbdev's `show_doc` cells; returns how many."
    n = 0
    for c in nb.get('cells', []):
        if c.get('cell_type') != 'code': continue
        src, tags = _src(c), (c.get('metadata') or {}).get('tags', [])
        d = cell_directives(src)
        if not src.strip() or 'parameters' in tags or d.get('echo') == 'false' or d.get('include') == 'false' \
           or 'hide' in d or 'code-fold' in d: continue
        c['source'] = '#| code-fold: true\n' + src
        n += 1
    return n


# %%
_nb = dict(cells=[dict(cell_type='code', metadata={'tags': ['parameters']}, source='profile = "smoke"'),
                  dict(cell_type='code', metadata={}, source='#| echo: false\n#| output: asis\nshow_doc(f)'),
                  dict(cell_type='code', metadata={}, source='x = 1\nassert x == 1'),
                  dict(cell_type='markdown', metadata={}, source='text'),
                  dict(cell_type='code', metadata={}, source='')])
test_eq(fold_code(_nb), 1)
test_eq([_src(c).splitlines()[0] if _src(c) else '' for c in _nb['cells']],
        ['profile = "smoke"', '#| echo: false', '#| code-fold: true', 'text', ''])
test_eq(fold_code(_nb), 0)   # idempotent
test_eq(cell_directives('#| echo: false\n#|output: asis\nx = 1\n#| late: no'), {'echo': 'false', 'output': 'asis'})

# %%
#| export
_SHOW_DOC = re.compile(r'show_doc\(\s*([A-Za-z_][\w.]*)')

def _defined_at(name:str, text:str) -> int:
    "Where `name` is defined in `text` (def, class or assignment at line start); large if it is not found."
    leaf = re.escape(name.split('.')[-1])
    m = re.search(rf'^(?:async\s+def|def|class)\s+{leaf}\b|^{leaf}\s*[:=]', text, re.M)
    return m.start() if m else 10**12

def source_order(nb:dict, source_text:str) -> int:
    "Sort each run of consecutive `show_doc` cells by where their symbols are defined in `source_text`; returns cells moved."
    cells, moved, i = nb.get('cells', []), 0, 0
    while i < len(cells):
        j = i
        while j < len(cells) and cells[j].get('cell_type') == 'code' and _SHOW_DOC.search(_src(cells[j])): j += 1
        if j - i > 1:
            run = cells[i:j]
            pos = lambda c: _defined_at(_SHOW_DOC.search(_src(c)).group(1), source_text)
            new = sorted(run, key=pos)   # stable: symbols not found keep their order
            moved += sum(a is not b for a, b in zip(run, new))
            cells[i:j] = new
        i = max(j, i + 1)
    return moved


# %%
_code = "def accuracy(y, p): ...\ndef nll(y, p): ...\nclass Brier: ...\n"
_sd = lambda n: dict(cell_type='code', metadata={}, source=f'#| echo: false\n#| output: asis\nshow_doc({n})')
_nb = dict(cells=[_sd('Brier'), _sd('nll'), _sd('accuracy'), dict(cell_type='markdown', source='x'), _sd('nll'), _sd('unknown')])
test_eq(source_order(_nb, _code), 2)
test_eq([_SHOW_DOC.search(_src(c)).group(1) if c['cell_type'] == 'code' else '-' for c in _nb['cells']],
        ['accuracy', 'nll', 'Brier', '-', 'nll', 'unknown'])


# %%
#| export
def badge_verdicts(nb:dict) -> int:
    "Replace bare verdict words in stored HTML tables (`<td>not_reproduced</td>`) by the dashboard's coloured badges; returns how many."
    from trustlib.report import verdict_badge
    pat = re.compile(r'<td>(' + '|'.join(map(re.escape, VERDICTS)) + r')</td>')
    n = 0
    for c in nb.get('cells', []):
        for o in c.get('outputs', []) or []:
            data = o.get('data') or {}
            if 'text/html' not in data: continue
            h = ''.join(data['text/html']) if isinstance(data['text/html'], list) else data['text/html']
            h, k = pat.subn(lambda m: f'<td>{verdict_badge(m.group(1))}</td>', h)
            if k: data['text/html'] = h; n += k
    return n


# %%
_nb = dict(cells=[dict(cell_type='code', source='t', outputs=[dict(output_type='execute_result', data={
    'text/html': ['<table><tr><td>not_reproduced</td><td>partially</td><td>reproduced here</td></tr></table>'],
    'text/plain': 'not_reproduced'})])])
test_eq(badge_verdicts(_nb), 2)
_h = _nb['cells'][0]['outputs'][0]['data']['text/html']
assert 'class="verdict v-not_reproduced"' in _h and '>not reproduced<' in _h and '<td>reproduced here</td>' in _h


# %%
#| export
def png_width(b64:str) -> int|None:
    "The pixel width of a base64 PNG (from its IHDR chunk), None if it is not a PNG."
    import base64, struct
    head = base64.b64decode(''.join(b64)[:44])
    return struct.unpack('>I', head[16:20])[0] if head[:8] == b'\x89PNG\r\n\x1a\n' else None

def widen_figures(nb:dict, text_px:int=678, min_scale:float=0.6, page_px:int=980) -> int:
    "Give cells whose figure would be shown below `min_scale` of its width in the text column a wider Quarto column (`page`, else `screen-inset`)."
    n = 0
    for c in nb.get('cells', []):
        if c.get('cell_type') != 'code' or 'column' in cell_directives(_src(c)): continue
        ws = [png_width(o['data']['image/png']) or 0 for o in c.get('outputs', []) or [] if 'image/png' in (o.get('data') or {})]
        if not ws or max(ws) * min_scale <= text_px: continue
        col = 'page' if max(ws) * min_scale <= page_px else 'screen-inset'
        c['source'] = f'#| column: {col}\n' + _src(c); n += 1
    return n


# %%
_img = lambda w: dict(output_type='display_data', data={'image/png': base64.b64encode(_png_of(w, 2)).decode()})
_nb = dict(cells=[dict(cell_type='code', source='plot()', outputs=[_img(w)]) for w in (600, 1190, 1845)])
test_eq(png_width(_nb[ 'cells'][1]['outputs'][0]['data']['image/png']), 1190)
test_eq(widen_figures(_nb), 2)
test_eq([cell_directives(_src(c)).get('column') for c in _nb['cells']], [None, 'page', 'screen-inset'])
test_eq(widen_figures(_nb), 0)


# %%
#| export
def polish_proc(proc:str|Path, # the `_proc/` folder nbdev wrote
                nbs:str|Path, # the source notebooks (for the order in which symbols are defined)
               ) -> dict[str, int]:
    "Apply `fold_code` (paper pages), `source_order`, `badge_verdicts` and `widen_figures` to every page notebook in `proc`; counts of changes."
    proc, nbs = Path(proc), Path(nbs)
    counts = dict(pages=0, folded=0, reordered=0, badges=0, widened=0)
    for f in sorted(proc.rglob('*.ipynb')):
        rel = f.relative_to(proc)
        if any(p.startswith(('.', '_')) for p in rel.parts): continue
        nb = json.loads(f.read_text(encoding='utf-8'))
        src = nbs/rel
        text = '\n'.join(_src(c) for c in json.loads(src.read_text(encoding='utf-8')).get('cells', [])) if src.is_file() else ''
        k = dict(folded=fold_code(nb) if rel.parts[0] == 'papers' else 0, reordered=source_order(nb, text), badges=badge_verdicts(nb),
                 widened=widen_figures(nb))
        if any(k.values()): f.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + '\n', encoding='utf-8')
        counts['pages'] += 1
        for key, v in k.items(): counts[key] += v
    return counts


# %%
_d = Path(tempfile.mkdtemp()); (_d/'proc'/'papers'/'a').mkdir(parents=True); (_d/'nbs'/'papers'/'a').mkdir(parents=True)
(_d/'proc'/'papers'/'a'/'p.ipynb').write_text(json.dumps(dict(cells=[_sd('g'), _sd('f'), dict(cell_type='code', metadata={}, source='1 + 1', outputs=[])])))
(_d/'nbs'/'papers'/'a'/'p.ipynb').write_text(json.dumps(dict(cells=[dict(cell_type='code', source='def f(): ...\ndef g(): ...')])))
test_eq(polish_proc(_d/'proc', _d/'nbs'), dict(pages=1, folded=1, reordered=2, badges=0, widened=0))
test_eq(polish_proc(_d/'proc', _d/'nbs'), dict(pages=1, folded=0, reordered=0, badges=0, widened=0))   # a second pass changes nothing


# %% [markdown]
# ## Checking the rendered site in a browser
#
# `check_rendered` serves the rendered folder on 127.0.0.1 and loads each page in headless Chromium. It
# needs Playwright's Python package (the `site` extra) and a Chromium binary (Debian's `chromium`;
# Playwright's own browser download is never used). `browser_unavailable` says why a check cannot run.

# %%
#| export
def find_chromium() -> str|None:
    "A Chromium/Chrome binary: `$TRUSTLIB_CHROMIUM`, else the first of chromium, chromium-browser, google-chrome on PATH."
    env = os.environ.get('TRUSTLIB_CHROMIUM')
    if env: return env if Path(env).is_file() else None
    return next((p for p in map(shutil.which, ('chromium', 'chromium-browser', 'google-chrome')) if p), None)

def browser_unavailable() -> str|None:
    "Why the browser check cannot run here (None when it can)."
    import importlib.util
    if importlib.util.find_spec('playwright') is None:
        return 'the browser check needs Playwright: pip install "trustlib-icml25[site]"'
    if find_chromium() is None:
        return "the browser check needs Chromium: apt-get install chromium (or set TRUSTLIB_CHROMIUM to a Chromium binary)"
    return None

class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass


# %%
#| export
_PAGE_JS = """() => {
  const de = document.documentElement;
  const imgs = [...document.querySelectorAll('main img, #quarto-document-content img')]
      .filter(i => i.complete && i.naturalWidth > 0 && i.getBoundingClientRect().width > 0)
      .map(i => ({src: i.getAttribute('src') || '', natural: i.naturalWidth, shown: Math.round(i.getBoundingClientRect().width)}));
  return {scroll: de.scrollWidth, client: de.clientWidth,
          links: [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href')),
          ids: [...document.querySelectorAll('[id]')].map(e => e.id),
          stderr: document.querySelectorAll('.cell-output-stderr').length, imgs: imgs};
}"""

def _internal(href:str) -> bool:
    return bool(href) and not re.match(r'^([a-z][a-z0-9+.-]*:|//)', href, re.I)

def check_rendered(site:str|Path, # the rendered site (`_docs/`)
                   screenshots:str|Path|None=None, # folder for screenshots of the home page, the dashboard, one paper page
                   width:int=1280, # desktop viewport width (px)
                   phone:int=390, # phone viewport width (px), for the pages in `phone_pages`
                   phone_pages=('index.html', 'results/dashboard.html', 'results/papers.html'),
                   min_scale:float=0.6, # images shown below this fraction of their natural width are reported
                   shot_pages=('index.html', 'results/dashboard.html', 'papers/fairness/disparate_benefits.html'),
                   timeout_s:float=60) -> dict:
    "Load every page of `site` in headless Chromium; counts and lists of broken links/anchors, overflows, downscaled images, stderr blocks."
    why = browser_unavailable()
    if why: raise RuntimeError(why)
    sync_api = require('playwright.sync_api', 'the browser check')
    site = Path(site).resolve()
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob('*.html')
                   if not any(part.startswith(('site_libs', '_', '.')) for part in p.relative_to(site).parts))
    handler = functools.partial(_Quiet, directory=str(site))
    httpd = socketserver.ThreadingTCPServer(('127.0.0.1', 0), handler); httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}/"
    rep = dict(pages=len(pages), links=0, anchors=0, broken_links=[], broken_anchors=[], overflow=[], phone_overflow=[],
               downscaled=[], stderr=[], screenshots=[])
    seen, wanted = {}, []
    if screenshots is not None: Path(screenshots).mkdir(parents=True, exist_ok=True)
    def browse():   # Playwright's sync API refuses to run inside an asyncio loop (Jupyter's): a thread of its own
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=find_chromium(), args=['--no-sandbox'])
            try:
                page = browser.new_page(viewport=dict(width=width, height=900))
                page.route('**/*', lambda r: r.continue_() if r.request.url.startswith(base) else r.abort())
                for rel in pages:
                    page.goto(base + rel, wait_until='load', timeout=timeout_s * 1000)
                    info = page.evaluate(_PAGE_JS)
                    seen[rel] = set(info['ids'])
                    if info['scroll'] > info['client'] + 1: rep['overflow'].append(f"{rel}: {info['scroll']} px wide at {info['client']} px")
                    if info['stderr']: rep['stderr'].append(f"{rel}: {info['stderr']} stderr block(s)")
                    for im in info['imgs']:
                        if im['shown'] < min_scale * im['natural']:
                            rep['downscaled'].append(f"{rel}: {im['src'][:80]} shown at {im['shown']} of {im['natural']} px")
                    for href in info['links']:
                        if not _internal(href) or href.startswith('#') and len(href) == 1: continue
                        u = urlsplit(href)
                        target = (Path(rel).parent/unquote(u.path)).as_posix() if u.path else rel
                        target = os.path.normpath(target).replace(os.sep, '/')
                        if target.endswith('/') or (site/target).is_dir(): target = target.rstrip('/') + '/index.html'
                        rep['links'] += 1
                        if target.startswith('..') or not (site/target).is_file():
                            rep['broken_links'].append(f"{rel}: {href}"); continue
                        if u.fragment: wanted.append((rel, href, target, unquote(u.fragment)))
                    if screenshots is not None and rel in shot_pages:
                        out = Path(screenshots)/(rel.replace('/', '__').removesuffix('.html') + '.png')
                        page.screenshot(path=str(out), full_page=False); rep['screenshots'].append(str(out))
                small = browser.new_page(viewport=dict(width=phone, height=800))
                small.route('**/*', lambda r: r.continue_() if r.request.url.startswith(base) else r.abort())
                for rel in phone_pages:
                    if rel not in seen: continue
                    small.goto(base + rel, wait_until='load', timeout=timeout_s * 1000)
                    info = small.evaluate(_PAGE_JS)
                    if info['scroll'] > info['client'] + 1: rep['phone_overflow'].append(f"{rel}: {info['scroll']} px wide at {info['client']} px")
                    if screenshots is not None and rel == 'results/dashboard.html':
                        out = Path(screenshots)/'results__dashboard-phone.png'
                        small.screenshot(path=str(out)); rep['screenshots'].append(str(out))
            finally: browser.close()
    try:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(1) as ex: ex.submit(browse).result()
    finally:
        httpd.shutdown(); httpd.server_close()
    for rel, href, target, frag in wanted:
        rep['anchors'] += 1
        ids = seen.get(target)
        if ids is None and target.endswith('.html'):   # a page outside the list (should not happen): read its ids statically
            ids = set(re.findall(r'\bid="([^"]+)"', (site/target).read_text(encoding='utf-8', errors='replace')))
        if ids is not None and frag not in ids: rep['broken_anchors'].append(f"{rel}: {href}")
    return rep

def site_problems(rep:dict) -> list[str]:
    "The failures in a `check_rendered` report, one line each (empty: the site passes)."
    names = dict(broken_links='broken link', broken_anchors='broken anchor', overflow='page wider than the viewport',
                 phone_overflow='page wider than a phone', downscaled='image shown below 60 % of its width', stderr='stored stderr')
    return [f"{names[k]}: {x}" for k in names for x in rep.get(k, [])]


# %% [markdown]
# A tiny site with one defect of each kind shows what the check catches (it runs where Chromium and
# Playwright are installed; otherwise it says why not).

# %%
def _page(body, css=''):
    return f'<html><head><style>{css}</style></head><body><main>{body}</main></body></html>'
_site = Path(tempfile.mkdtemp())
(_site/'papers').mkdir()
(_site/'index.html').write_text(_page('<h2 id="top">x</h2><a href="papers/good.html#fine">ok</a> <a href="papers/good.html#nope">bad anchor</a> '
                                      '<a href="missing.html">gone</a> <a href="https://example.org">out</a> <a href="#top">self</a>'))
(_site/'papers'/'good.html').write_text(_page('<p id="fine">fine</p><img src="../big.png" style="width:100px">'
                                              '<div class="cell-output-stderr">warn</div><div style="width:3000px">wide</div>'))
(_site/'big.png').write_bytes(_png_of(400, 10))
_why = browser_unavailable()
if _why: print(f"skipped: {_why}")
else:
    _rep = check_rendered(_site)
    test_eq((_rep['pages'], _rep['links'], _rep['anchors']), (2, 4, 3))   # #top on the page itself counts too
    test_eq(_rep['broken_links'], ['index.html: missing.html'])
    test_eq(_rep['broken_anchors'], ['index.html: papers/good.html#nope'])
    test_eq([x.split(':')[0] for x in _rep['overflow']], ['papers/good.html'])
    test_eq(_rep['downscaled'], ['papers/good.html: ../big.png shown at 100 of 400 px'])
    test_eq(_rep['stderr'], ['papers/good.html: 1 stderr block(s)'])
    test_eq(len(site_problems(_rep)), 5)
    print('\n'.join(site_problems(_rep)))
