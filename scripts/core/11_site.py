# %% [markdown]
# # site — the website as readers see it
#
# > Prepare the pages from the published record before Quarto renders them, and check the rendered site in a real browser.

# %% [markdown]
# The website is the first way most people meet trustlib, so it leads with results and is checked as a
# reader would see it. `trustlib site` runs nbdev's processing into `_proc/`, then `polish_proc` on it, which
# writes everything paper-specific from data — the ledger of publications (`nbs/results/ledger/`), each
# paper's claims table (`CLAIMS`), the run's `metrics.json` when this machine has it, and the paper registry
# (`trustlib.config.PAPERS`) — never from text written by hand:
#
# - **The home page leads with results**: the headline verdicts and all verdicts counted, one figure, the 19
#   papers with their headline verdicts. The results dashboard and the papers index are rebuilt from the ledger.
# - **A one-screen summary at the top of every paper page**: the paper, its authors, venue, links and official
#   code, the headline claim with the paper's number beside ours, the verdict, every other claim's verdict, and
#   the compute of the published run.
# - **Reference apart from narrative**: API entries move to an API page per paper module; the one-line
#   `Config(...)` becomes a table of the values behind the published numbers.
# - **An audit trail closing every paper page**: each claim's rule and change log, the verdict history across
#   publications, the files behind the page, and citations.
# - **Cross-links** to the module that defines a name, relative to the page; **code folding**, **API entries in
#   source order** and **verdicts as coloured badges**, as before.
#
# After `quarto render`, `vendor_assets` serves MathJax, the scripts and the font from the site, and
# `check_rendered` loads every page in headless Chromium at 1366 and 390 px (through Playwright, with every
# request outside the site blocked and reported) and reports broken links, anchors and images (links to the
# production site resolved against the built one), pages wider than the screen, clipped text, generated tables
# wider than their column, downscaled images, stored stderr, summary boxes that disagree with the ledger,
# headline verdicts below the first screen and sortable tables that do not sort or filter; it keeps
# screenshots of the home page, the papers index, the dashboard and three paper pages at both widths.

# %%
#| default_exp site

# %%
#| export
from __future__ import annotations
import functools, http.server, json, os, re, shutil, socketserver, tempfile, threading
from pathlib import Path
from urllib.parse import urlsplit, unquote

from trustlib.config import require
from trustlib.results import VERDICTS

# %%
#| hide
import base64, struct, tempfile, zlib
import pandas as pd
import trustlib.results as _tr
from trustlib.report import TABLE_JS
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

def _lines(x):
    "Text as Jupyter stores it: a list of lines, each with its newline (Quarto joins the list; a plain string loses its line breaks)."
    return x.splitlines(keepends=True) if isinstance(x, str) else x

def as_stored(nb:dict) -> dict:
    "The notebook with every cell source and every text output as a list of lines, in place."
    for c in nb.get('cells', []):
        c['source'] = _lines(c.get('source', ''))
        for o in c.get('outputs', []) or []:
            if 'text' in o: o['text'] = _lines(o['text'])
            for k, v in (o.get('data') or {}).items():
                if k.startswith('text/') or k.endswith(('+xml', 'javascript')): o['data'][k] = _lines(v)
    return nb

def _write_nb(path:Path, nb:dict):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(as_stored(nb), indent=1, ensure_ascii=False) + '\n', encoding='utf-8')


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
test_eq(as_stored(dict(cells=[dict(source='a\nb', outputs=[dict(data={'text/html': '<p>\n</p>', 'image/png': 'iVBOR'})])]))['cells'][0],
        dict(source=['a\n', 'b'], outputs=[dict(data={'text/html': ['<p>\n', '</p>'], 'image/png': 'iVBOR'})]))
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

# %% [markdown]
# The widest column a figure gets (`screen-inset`) is about 1,270 px in a 1,366-px window, and the browser check wants
# a figure shown at 60 % of its width or more: a stored figure wider than 2,100 px cannot pass. Publishing a run
# (`trustlib run --publish`) stores such a figure resampled to 2,100 px (`cap_figures`); narrower ones are left as
# they are, byte for byte.

# %%
#| export
MAX_FIGURE_PX = 2100

def cap_figures(nb:dict, max_px:int=MAX_FIGURE_PX) -> int:
    "Resample every stored PNG figure of `nb` wider than `max_px` to that width (same aspect ratio); the number changed."
    import base64, io
    n = 0
    for c in nb.get('cells', []):
        for o in c.get('outputs', []) or []:
            data = o.get('data') or {}
            if 'image/png' not in data or (png_width(data['image/png']) or 0) <= max_px: continue
            from PIL import Image
            raw = data['image/png']
            im = Image.open(io.BytesIO(base64.b64decode(''.join(raw) if isinstance(raw, list) else raw)))
            im = im.resize((max_px, max(1, round(im.height * max_px / im.width))), Image.LANCZOS)
            buf = io.BytesIO(); im.save(buf, format='PNG', optimize=True)
            data['image/png'] = base64.b64encode(buf.getvalue()).decode()
            meta = (o.get('metadata') or {}).get('image/png')
            if isinstance(meta, dict): meta.pop('width', None); meta.pop('height', None)
            n += 1
    return n


# %%
_nb = dict(cells=[dict(cell_type='code', source='plot()', outputs=[_img(w)]) for w in (600, 3340)])
_before = _nb['cells'][0]['outputs'][0]['data']['image/png']
test_eq(cap_figures(_nb), 1)
test_eq([png_width(c['outputs'][0]['data']['image/png']) for c in _nb['cells']], [600, 2100])
assert _nb['cells'][0]['outputs'][0]['data']['image/png'] is _before   # a narrower figure is not touched
test_eq(cap_figures(_nb), 0)


# %%
#| export
def polish_pages(proc:str|Path, # the `_proc/` folder nbdev wrote
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
        if any(k.values()): f.write_text(json.dumps(as_stored(nb), indent=1, ensure_ascii=False) + '\n', encoding='utf-8')
        counts['pages'] += 1
        for key, v in k.items(): counts[key] += v
    return counts


# %%
_d = Path(tempfile.mkdtemp()); (_d/'proc'/'papers'/'a').mkdir(parents=True); (_d/'nbs'/'papers'/'a').mkdir(parents=True)
(_d/'proc'/'papers'/'a'/'p.ipynb').write_text(json.dumps(dict(cells=[_sd('g'), _sd('f'), dict(cell_type='code', metadata={}, source='1 + 1', outputs=[])])))
(_d/'nbs'/'papers'/'a'/'p.ipynb').write_text(json.dumps(dict(cells=[dict(cell_type='code', source='def f(): ...\ndef g(): ...')])))
test_eq(polish_pages(_d/'proc', _d/'nbs'), dict(pages=1, folded=1, reordered=2, badges=0, widened=0))
test_eq(polish_pages(_d/'proc', _d/'nbs'), dict(pages=1, folded=0, reordered=0, badges=0, widened=0))   # a second pass changes nothing

# %% [markdown]
# ## Reference apart from narrative
#
# nbdev shows every exported function of a paper as its API entry (`show_doc`) right where the paper page
# defines it, so a reader met 20–54 signatures before the first result. `split_api` takes them out of the
# paper page, leaving one line that links to them, and `api_page` collects them on an API page of the paper's
# module (`api/<area>/<paper>.html`), grouped by the section of the paper page that explains them, as the
# fastai and nbdev documentation do. The paper page keeps the prose, the math, the examples, the experiment,
# the figures and "Paper vs. us".

# %%
#| export
_SHOW_DOC_CELL = re.compile(r'^\s*show_doc\(\s*([A-Za-z_][\w.]*)', re.M)
_MD_HEADING = re.compile(r'^(#{2,4})\s+(.+?)\s*#*\s*$', re.M)

def pandoc_id(text:str) -> str:
    "The id pandoc (and so Quarto) gives a heading with this text: markup dropped, lowercased, spaces to '-', only letters, digits, '_', '-', '.' kept, up to the first letter removed."
    t = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', text)          # links keep their text
    t = re.sub(r'[`*]', '', t).lower()
    t = ''.join(ch for ch in t if ch.isalnum() or ch in '_-. ')
    t = re.sub(r'\s+', '-', t.strip())
    t = re.sub(r'^[^a-z]+', '', t)
    return t or 'section'

def _is_show_doc(c) -> bool:
    return c.get('cell_type') == 'code' and bool(_SHOW_DOC_CELL.search(_src(c))) and 'output' in cell_directives(_src(c))

def show_doc_title(c) -> str|None:
    "The heading of a `show_doc` cell's stored entry (its symbol as shown, e.g. 'Config.from_params'), else the name in its source."
    for o in c.get('outputs', []) or []:
        md = (o.get('data') or {}).get('text/markdown')
        if md:
            m = re.search(r'^#{2,4}\s+(\S.*?)\s*$', ''.join(md) if isinstance(md, list) else md, re.M)
            if m: return m.group(1).strip()
    m = _SHOW_DOC_CELL.search(_src(c))
    return m.group(1) if m else None

def split_api(nb:dict, # a processed paper page (changed in place)
              api_href:str, # the link from the page to its API page
             ) -> list[tuple[str, str, list]]:
    "Move the page's `show_doc` cells out: each run of them becomes a one-line link to its entries; returns (section title, section id, cells) groups in page order."
    cells, out, groups = nb.get('cells', []), [], []
    section, sid, i = 'Module', '', 0
    while i < len(cells):
        c = cells[i]
        if c.get('cell_type') == 'markdown':
            hs = _MD_HEADING.findall(_src(c))
            if hs: section = hs[-1][1]; sid = pandoc_id(section)
        if not _is_show_doc(c):
            out.append(c); i += 1; continue
        run = []
        while i < len(cells) and _is_show_doc(cells[i]): run.append(cells[i]); i += 1
        names = [show_doc_title(x) for x in run]
        links = ', '.join(f"[`{n}`]({api_href}#{pandoc_id(n)})" for n in names if n)
        out.append(dict(cell_type='markdown', metadata={}, source=f'<p class="tl-api-link">API: {links}</p>'))
        if groups and groups[-1][1] == sid: groups[-1][2].extend(run)
        else: groups.append((section, sid, run))
    nb['cells'] = out
    return groups

def api_page(module:str, # the paper's module, e.g. 'trustlib.unlearning.dsda'
             paper_title:str, # the paper page's title
             paper_href:str, # the link from the API page to the paper page
             groups:list, # from `split_api`
             output_file:str) -> dict:
    "The API page of a paper's module: its entries grouped by the sections of the paper page that explain them."
    import yaml
    front = '---\n' + yaml.safe_dump({'title': module, 'description': f"The functions and classes of {paper_title}", 'output-file': output_file},
                                     allow_unicode=True, sort_keys=False, width=1000) + '---\n\n'
    cells = [dict(cell_type='raw', metadata={}, source=front),
             dict(cell_type='markdown', metadata={}, source=f"The functions and classes that [{paper_title}]({paper_href}) exports into `{module}`, "
                  f"grouped by the section of that page that explains them, with a runnable example and tests beside each one there. "
                  f"`from {module} import *` imports them.")]
    for title, sid, run in groups:
        where = f"[{title}]({paper_href}#{sid})" if sid else f"[the paper page]({paper_href})"
        cells.append(dict(cell_type='markdown', metadata={}, source=f"## {title}\n\nExplained in {where}."))
        cells.extend(run)
    return dict(cells=cells, metadata=dict(kernelspec=dict(display_name='python3', language='python', name='python3')), nbformat=4, nbformat_minor=5)


# %%
_sdc = lambda n, head=None: dict(cell_type='code', metadata={}, source=f'#| echo: false\n#| output: asis\nshow_doc({n})',
                                 outputs=[dict(output_type='display_data', data={'text/markdown': f'---\n\n### {head or n}\n\n> {n}()'})])
_md = lambda s: dict(cell_type='markdown', metadata={}, source=s)
_nb = dict(cells=[_md('## The method\n\n### Energy and score (Eq. 1)'), _sdc('energy'), _sdc('score'), _md('An example:'),
                  dict(cell_type='code', metadata={}, source='energy(1)', outputs=[]), _md('### DAMO'), _sdc('Config.from_params')])
_g = split_api(_nb, '../../api/u/dsda.html')
test_eq([c['cell_type'] for c in _nb['cells']], ['markdown', 'markdown', 'markdown', 'code', 'markdown', 'markdown'])
test_eq(_src(_nb['cells'][1]), '<p class="tl-api-link">API: [`energy`](../../api/u/dsda.html#energy), [`score`](../../api/u/dsda.html#score)</p>')
test_eq([(t, s, len(r)) for t, s, r in _g], [('Energy and score (Eq. 1)', 'energy-and-score-eq.-1', 2), ('DAMO', 'damo', 1)])
test_eq(pandoc_id('Config.from_params'), 'config.from_params'); test_eq(pandoc_id('3. Paper vs. us'), 'paper-vs.-us')
test_eq(pandoc_id('`run` and [the `Config`](x.html)'), 'run-and-the-config')
_ap = api_page('trustlib.u.dsda', 'DSDA', '../../papers/u/dsda.html', _g, 'dsda.html')
test_eq([c['cell_type'] for c in _ap['cells']], ['raw', 'markdown', 'markdown', 'code', 'code', 'markdown', 'code'])
assert 'Explained in [Energy and score (Eq. 1)](../../papers/u/dsda.html#energy-and-score-eq.-1)' in _src(_ap['cells'][2])


# %% [markdown]
# ### Cross-links to the right page, relative to the page
#
# nbdev links every backticked name it knows (`` `run` ``, `` `Config` ``) to the production site, through one
# index of names for the whole package: 19 modules define `run` and `Config`, so every page's `run` went to
# the EcoLevels page, and the link only worked online. `rewrite_doclinks` points each such link at the page's
# own module when that module defines the name, otherwise at the module the link named (its API page once
# the entries moved there), and writes it relative to the page, so the site works offline and in previews.
# `fix_source_links` does the same for the `[source]` links of API entries, from the module's own source.

# %%
#| export
def doc_host(root:str|Path) -> str:
    "The production site URL (`doc_host` + `doc_baseurl` of settings.ini), with a trailing '/'."
    import configparser
    cp = configparser.ConfigParser(delimiters=['='], interpolation=None); cp.read(Path(root)/'settings.ini', encoding='utf-8')
    d = cp['DEFAULT'] if 'DEFAULT' in cp else {}
    return (d.get('doc_host', '') + d.get('doc_baseurl', '')).rstrip('/') + '/'

def _rel_href(target:str, page:str) -> str:
    "Link from site page `page` (e.g. 'papers/a/b.html') to site path `target` ('core/x.html#y')."
    path, _, frag = target.partition('#')
    rel = os.path.relpath(path or page, os.path.dirname(page) or '.') if path else os.path.basename(page)
    return Path(rel).as_posix() + (f'#{frag}' if frag else '')

def rewrite_doclinks(nb:dict, # a processed page (changed in place)
                     page:str, # its output path in the site, e.g. 'papers/unlearning/dsda.html'
                     host:str, # the production URL (`doc_host`)
                     api:dict, # paper page path -> (its API page path, the anchors of its entries)
                     own:str|None=None, # the paper page whose module this page documents (a paper page or its API page)
                    ) -> int:
    "Point nbdev's links to the production site at the right page, relative to `page`; returns how many links changed."
    pat = re.compile(re.escape(host) + r'([^)\s"\'<>#]*)(?:#([^)\s"\'<>]*))?')
    n = 0
    def fix(m):
        nonlocal n
        path, anchor = m.group(1) or 'index.html', m.group(2)
        if anchor:
            if own in api and anchor in api[own][1]: path = api[own][0]          # the page's own module defines the name
            elif path in api and anchor in api[path][1]: path = api[path][0]      # the entry moved to that module's API page
        n += 1
        return _rel_href(path + (f'#{anchor}' if anchor else ''), page)
    for c in nb.get('cells', []):
        if c.get('cell_type') == 'markdown':
            s = _src(c); new = pat.sub(fix, s)
            if new != s: c['source'] = new
        for o in c.get('outputs', []) or []:
            data = o.get('data') or {}
            for k in ('text/markdown', 'text/html'):
                if k in data:
                    s = ''.join(data[k]) if isinstance(data[k], list) else data[k]; new = pat.sub(fix, s)
                    if new != s: data[k] = new
    return n

@functools.lru_cache(maxsize=256)
def _class_lines(path:str) -> dict[str, int]:
    "`{qualname: line}` of every class defined in source file `path` (its first decorator's line if decorated), from one parse."
    import ast
    out, stack = {}, []
    def visit(node):
        for ch in ast.iter_child_nodes(node):
            if isinstance(ch, ast.ClassDef):
                stack.append(ch.name)
                out.setdefault('.'.join(stack), ch.decorator_list[0].lineno if ch.decorator_list else ch.lineno)
                visit(ch); stack.pop()
            elif isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef)):
                stack.extend([ch.name, '<locals>']); visit(ch); del stack[-2:]
            else: visit(ch)
    visit(ast.parse(Path(path).read_text(encoding='utf-8')))
    return out

def source_line(obj) -> tuple[str, int]:
    """(source file, first line) of a function or class, as `inspect.getsourcefile` and `inspect.getsourcelines(obj)[1]`
    give them, without re-parsing the module's source for every class (what `inspect` does on Python 3.11)."""
    import inspect
    obj = inspect.unwrap(obj) if callable(obj) else obj
    fn = getattr(obj, '__func__', obj)
    if inspect.isfunction(fn):
        f = inspect.getsourcefile(fn)
        if not f or not os.path.isfile(f): raise OSError(f"no source file for {fn.__qualname__} (generated code?)")
        return f, fn.__code__.co_firstlineno
    if inspect.isclass(obj):
        f = inspect.getsourcefile(obj)
        line = _class_lines(f).get(obj.__qualname__) if f else None
        if line is not None: return f, line
    return inspect.getsourcefile(obj), inspect.getsourcelines(obj)[1]

def fix_source_links(cells:list, module, repo:str, branch:str='main') -> int:
    "Rewrite the `[source](…)` link of each `show_doc` entry in `cells` from `module`'s own source (file and line); returns how many changed."
    n = 0
    for c in cells:
        name = show_doc_title(c)
        obj = module
        for part in (name or '').split('.'):
            obj = getattr(obj, part, None)
            if obj is None: break
        try: f, line = source_line(obj)
        except (TypeError, OSError): continue
        top = Path(module.__file__).resolve().parents[len(module.__name__.split('.')) - 1]   # the folder that holds the package
        try: rel = Path(f).resolve().relative_to(top).as_posix()
        except ValueError: continue
        url = f"{repo.rstrip('/')}/blob/{branch}/{rel}#L{line}"
        for o in c.get('outputs', []) or []:
            data = o.get('data') or {}
            if 'text/markdown' in data:
                s = ''.join(data['text/markdown']) if isinstance(data['text/markdown'], list) else data['text/markdown']
                new = re.sub(r'\[source\]\([^)]*\)', f'[source]({url})', s, count=1)
                if new != s: data['text/markdown'] = new; n += 1
    return n


# %%
import inspect, importlib.util, sys, trustlib.runs as _trr

# %%
_H = 'https://x.github.io/lib/'
_api = {'papers/b/eco.html': ('api/b/eco.html', {'run', 'config'}), 'papers/u/dsda.html': ('api/u/dsda.html', {'run', 'config', 'energy'})}
_nb = dict(cells=[_md(f'One [`Config`]({_H}papers/b/eco.html#config), [`fit`]({_H}core/models.html#fit), [eco]({_H}papers/b/eco.html) '
                      f'and [`energy`]({_H}papers/u/dsda.html#energy).')])
test_eq(rewrite_doclinks(_nb, 'papers/u/dsda.html', _H, _api, own='papers/u/dsda.html'), 4)
test_eq(_src(_nb['cells'][0]), 'One [`Config`](../../api/u/dsda.html#config), [`fit`](../../core/models.html#fit), [eco](../b/eco.html) '
                               'and [`energy`](../../api/u/dsda.html#energy).')
_nb = dict(cells=[_md(f'[`run`]({_H}papers/b/eco.html#run) [home]({_H})')])
rewrite_doclinks(_nb, 'core/report.html', _H, _api)                     # a core page: the module the link named
test_eq(_src(_nb['cells'][0]), '[`run`](../api/b/eco.html#run) [home](../index.html)')
test_eq(_rel_href('index.html#x', 'index.html'), 'index.html#x')
_c = _sdc('grade'); _c['outputs'][0]['data']['text/markdown'] = '[source](https://github.com/o/r/blob/main/trustlib/x.py#L1)\n\n### grade'
test_eq(fix_source_links([_c, _sdc('nothing_here')], _tr, 'https://github.com/o/r'), 1)
assert re.match(r'\[source\]\(https://github.com/o/r/blob/main/trustlib/results\.py#L\d+\)', _c['outputs'][0]['data']['text/markdown'])
_objs = [o for m in (_tr, _trr) for o in vars(m).values() if (inspect.isfunction(o) or inspect.isclass(o)) and getattr(o, '__module__', '') == m.__name__]
_objs += [v for o in _objs if inspect.isclass(o) for v in vars(o).values() if inspect.isfunction(v)]   # methods too
assert len(_objs) > 100
def _insp(o):
    try: return inspect.getsourcefile(o), inspect.getsourcelines(o)[1]
    except (OSError, TypeError): return None   # generated code (a dataclass's __init__, ...): no source to link
_wrapped = [o for o in _objs if hasattr(o, '__wrapped__') and _insp(inspect.unwrap(o)) is not None]   # e.g. a @contextmanager: inspect names the wrapper's file
_gen = [o for o in _objs if _insp(inspect.unwrap(o)) is None]   # generated code: no source
_objs = [o for o in _objs if o not in _wrapped and o not in _gen]
assert len(_objs) > 100 and _wrapped and _gen
for _o in _gen: test_fail(lambda: source_line(_o), exc=OSError)
test_eq([source_line(o) for o in _objs], [_insp(o) for o in _objs])   # as inspect gives them
test_eq([source_line(o) for o in _wrapped], [_insp(inspect.unwrap(o)) for o in _wrapped])   # a decorated function links to its own source
_dir = Path(tempfile.mkdtemp()); (_dir/'_sl_mod.py').write_text(
    "import functools\nclass Outer:\n    class Inner: pass\ndef f():\n    @functools.total_ordering\n    class Local:\n"
    "        def __lt__(self, o): return False\n    return Local\nif True:\n    class Twice: pass\nelse:\n    class Twice: pass\n")
_spec = importlib.util.spec_from_file_location('_sl_mod', _dir/'_sl_mod.py'); _m = importlib.util.module_from_spec(_spec)
sys.modules['_sl_mod'] = _m; _spec.loader.exec_module(_m)
_cls = [_m.Outer, _m.Outer.Inner, _m.f(), _m.Twice]   # nested, local and decorated, defined in two branches
test_eq([source_line(o)[1] for o in _cls], [inspect.getsourcelines(o)[1] for o in _cls]); test_eq([source_line(o)[1] for o in _cls], [2, 3, 5, 10])
del sys.modules['_sl_mod']; shutil.rmtree(_dir)


# %% [markdown]
# ### The paper page's first screen, its parameters and its audit trail
#
# `polish_paper` rewrites one processed paper page from its published record (`trustlib.report.published_record`):
# the summary box goes first (after nbdev's front matter), the one-line `Config(...)` output becomes a table
# of the values behind the published numbers (`trustlib.report.config_table`), and an "Audit trail" section
# closes the page: the claims with their rules and change logs, the verdict history, the files behind the page
# (written by `write_downloads` into `_downloads/<paper>/`) and the citations. A page that shows another run
# than the ledger's latest publication says so.

# %%
#| export
def _insert_at(nb:dict) -> int:
    "Where generated cells go at the top of a processed page: after nbdev's front matter and its 'autogenerated' comment."
    cells, i = nb.get('cells', []), 0
    while i < len(cells) and (cells[i].get('cell_type') == 'raw' or 'AUTOGENERATED' in _src(cells[i])): i += 1
    return i

def _cfg_output(c) -> bool:
    for o in c.get('outputs', []) or []:
        t = (o.get('data') or {}).get('text/plain')
        if t and re.match(r'^\s*(\w+\.)?Config\(', ''.join(t) if isinstance(t, list) else t): return True
    return False

def replace_config_output(nb:dict, Config, profile:str, params:dict|None) -> int:
    "Replace the stored one-line `Config(...)` output of the page by `trustlib.report.config_table`; returns how many."
    from trustlib.report import config_table
    n = 0
    for c in nb.get('cells', []):
        if c.get('cell_type') != 'code' or not _cfg_output(c): continue
        c['outputs'] = [dict(output_type='display_data', metadata={}, data={
            'text/html': config_table(Config, profile, params), 'text/plain': [f'<{Config.__name__} of the published run: profile {profile}>']})]
        n += 1
    return n

def write_downloads(proc:str|Path, rec:dict, page:str) -> dict[str, str]:
    "Write the files behind a paper page into `<proc>/_downloads/<paper>/`: the run's metrics.json or its ledger entry, the claims (CSV), the executed notebook; label -> link from `page`."
    from trustlib.report import claims_csv, find_published_run
    import shutil
    p = rec['paper']; d = Path(proc)/'_downloads'/p.name; d.mkdir(parents=True, exist_ok=True)
    out = {}
    m = find_published_run(p.name, (rec['latest'] or {}).get('run_id'), Path(proc).parent/'runs') if rec['latest'] else None
    if m is not None:
        (d/'metrics.json').write_text(json.dumps(m, indent=1, ensure_ascii=False), encoding='utf-8'); out["the run's metrics.json"] = 'metrics.json'
    elif rec['latest'] is not None:
        (d/f'{p.name}-ledger-entry.json').write_text(json.dumps(dict(paper=p.name, **rec['latest']), indent=1, ensure_ascii=False), encoding='utf-8')
        out['the ledger entry of this publication (JSON)'] = f'{p.name}-ledger-entry.json'
    if rec['claims']:
        (d/f'{p.name}-claims.csv').write_text(claims_csv(rec), encoding='utf-8'); out['the claims, verdicts and rules (CSV)'] = f'{p.name}-claims.csv'
    if Path(rec['notebook']).is_file():
        shutil.copyfile(rec['notebook'], d/f'{p.name}.ipynb'); out['the executed notebook (.ipynb)'] = f'{p.name}.ipynb'
    return {k: _rel_href(f'_downloads/{p.name}/{v}', page) for k, v in out.items()}

def polish_paper(nb:dict, # a processed paper page (changed in place)
                 rec:dict, # its `published_record`
                 downloads:dict|None=None, # from `write_downloads`
                 Config=None, # the paper's config class (for the parameter table)
                ) -> dict[str, int]:
    "Summary box first, a parameter table instead of the `Config(...)` line, the audit trail last; counts of changes."
    from trustlib.report import summary_box, audit_trail, html_block
    if any('tl-summary' in _src(c) for c in nb.get('cells', [])): return dict(summary=0, config=0, audit=0)   # done already
    md = lambda s: dict(cell_type='markdown', metadata={}, source=s)
    top = [md(html_block(summary_box(rec)))]
    pub, page = rec['latest'] or {}, rec.get('page') or {}
    if pub and page.get('run_id') and page.get('run_id') != pub.get('run_id'):
        top.append(md(f'::: {{.callout-warning}}\nThe numbers on this page come from run `{page["run_id"]}`; the summary above and the '
                      f'audit trail show the latest publication, run `{pub.get("run_id")}`.\n:::'))
    i = _insert_at(nb); nb['cells'][i:i] = top
    k = replace_config_output(nb, Config, pub.get('profile') or 'cpu', rec.get('config')) if Config is not None else 0
    nb['cells'].append(md("## Audit trail\n\nHow each verdict on this page was reached, and how it changed: every claim with the rule "
                          "that graded it, its conditions and its change log; every publication of the page; the files behind it.\n\n"
                          + html_block(audit_trail(rec, downloads))))
    return dict(summary=1, config=k, audit=1)


# %% [markdown]
# ### The home page, the dashboard and the papers index, from the published record
#
# The home page leads with results: the totals of the headline verdicts and of all claims, one figure (each
# paper's claims by verdict) and the 19 papers with their headline verdicts; then what trustlib is, and a
# citation. The results go where `nbs/index.ipynb` has its `<!-- trustlib:results -->` marker; README.md
# (written from the same notebook by `tools/readme.py`) shows a link to the website there instead. The
# dashboard and the papers index are rebuilt from the ledger (`trustlib.report.build_dashboard(published=True)`)
# whenever the site is built, so they always agree with the pages; their committed copies are what
# `trustlib report --publish` last wrote.

# %%
#| export
RESULTS_MARKER = '<!-- trustlib:results -->'
FULL_PROFILE_MARKER = '<!-- trustlib:full-profile -->'

def fill_full_profile(nb:dict) -> bool:
    "Replace the `<!-- trustlib:full-profile -->` marker in `nb`'s markdown cells by the table of what `full` runs per paper; True if one was found."
    from trustlib.rehearse import full_profile_table
    found = False
    for c in nb.get('cells', []):
        src = _src(c)
        if c.get('cell_type') == 'markdown' and FULL_PROFILE_MARKER in src:
            c['source'] = src.replace(FULL_PROFILE_MARKER, full_profile_table()); found = True
    return found


# %%
_fnb = dict(cells=[dict(cell_type='markdown', metadata={}, source=['Intro\n', '\n', FULL_PROFILE_MARKER + '\n'])])
assert fill_full_profile(_fnb) and '| `saebench` |' in _fnb['cells'][0]['source'] and FULL_PROFILE_MARKER not in _fnb['cells'][0]['source']
assert not fill_full_profile(_fnb)                                           # filled once


# %%
#| export
def home_results(vt, # `trustlib.report.published_table`
                 from_dir:str='.') -> list[dict]:
    "The cells of the home page's results: totals, the figure, the 19 papers with their headline verdicts, links."
    import base64
    from trustlib.config import PAPERS
    from trustlib.report import (verdict_totals, verdict_badge, papers_chart, html_block, page_href, short_name, _e, HEADLINE_MARK,
                                 VERDICT_STYLE, AREA_TITLES, verdict_label, TRUSTLIB_BIBTEX, inconclusive_note)
    tot = verdict_totals(vt)
    badges = lambda d: ' '.join(verdict_badge(k, n) for k, n in d.items() if n)
    rows = []
    for p in PAPERS:
        d = vt[(vt.name == p.name) & vt.headline]
        link = page_href(p.name, from_dir) if bool(vt[vt.name == p.name].implemented.any()) else ''
        name = f'<a href="{link}">{_e(short_name(p))}</a>' if link else _e(short_name(p))
        if len(d):
            r = d.iloc[0]
            verdict = verdict_badge(r.verdict); claim = _e(r.claim); ours = _e(r.ours); paper = _e(r.paper)
        else:
            verdict, claim, ours, paper = verdict_badge('not yet run' if link else 'planned'), '', '', ''
        rows.append(f'<tr data-paper="{_e(p.name)}" data-verdict="{_e(d.iloc[0].verdict if len(d) else "")}"><td data-label="#">{p.number}</td>'
                    f'<td data-label="Paper">{name}<br><span class="tl-note">{_e(AREA_TITLES.get(p.area, p.area))}</span></td>'
                    f'<td data-label="Headline verdict" class="tl-headline-verdict">{verdict}</td><td data-label="Headline claim">{claim}</td>'
                    f'<td data-label="Paper / us"><span class="tl-note">paper:</span> {paper}<br><span class="tl-note">us:</span> {ours}</td></tr>')
    table = ('<table class="tl-table tl-cards tl-home"><thead><tr><th class="tl-c-num">#</th><th class="tl-c-paper">Paper</th>'
             '<th class="tl-c-verdict">Headline verdict</th><th class="tl-c-claim">Headline claim</th><th class="tl-c-ours">Paper / us</th></tr></thead>'
             f'<tbody>{"".join(rows)}</tbody></table>')
    rel = lambda t: _e(Path(os.path.relpath(t, from_dir)).as_posix())
    lead = (f'<div class="tl-lead"><p><b>Headline claims</b> of the {tot["papers"]} papers ({HEADLINE_MARK} the abstract\'s main finding): '
            f'<span class="tl-headline-verdict">{badges(tot["headline"])}</span></p><p><b>All {tot["claims"]} claims</b>: {badges(tot["all"])}</p>'
            + (f'<p class="tl-note">{inconclusive_note(tot)}</p>' if inconclusive_note(tot) else '') +
            f'<p class="tl-note">Each verdict comes from a rule written down before the numbers existed. '
            f'<a href="{rel("results/dashboard.html")}">Every claim</a> · <a href="{rel("results/papers.html")}">the papers by area</a> · '
            f'<a href="{rel("core/results.html")}">how claims are graded</a> · <a href="{rel("use.html")}">use and contribute</a></p></div>')
    md = lambda s: dict(cell_type='markdown', metadata={}, source=s)
    fig = dict(cell_type='code', metadata={}, execution_count=None, source='#| echo: false\n# Claims per paper by verdict (stored output).',
               outputs=[dict(output_type='display_data', metadata={}, data={'image/png': base64.b64encode(papers_chart(vt)).decode(),
                                                                            'text/plain': ['<claims per paper by verdict>']})])
    return [md(html_block(lead)), fig, md("## The 19 papers\n\n" + html_block(table))]

def polish_home(nb:dict, cells:list[dict]) -> int:
    "Put the results cells where the home page has its marker (or right after its front matter); returns 1 if it changed."
    cs = nb.get('cells', [])
    if any('tl-lead' in _src(c) for c in cs): return 0
    at = next((i for i, c in enumerate(cs) if RESULTS_MARKER in _src(c)), None)
    if at is None: cs[_insert_at(nb):_insert_at(nb)] = cells
    else: cs[at:at + 1] = cells
    return 1

def replace_body(proc_nb:Path, new_nb:Path) -> None:
    "Keep nbdev's front matter of a processed page and replace the rest by the cells (after the title cell) of a freshly written notebook."
    old = json.loads(Path(proc_nb).read_text(encoding='utf-8'))
    new = json.loads(Path(new_nb).read_text(encoding='utf-8'))
    keep = old['cells'][:_insert_at(old)]
    old['cells'] = keep + new['cells'][1:]
    Path(proc_nb).write_text(json.dumps(as_stored(old), indent=1, ensure_ascii=False) + '\n', encoding='utf-8')


# %%
_vt = pd.DataFrame([dict(number=2, name='disparate_benefits', area='fairness', title='t', implemented=True, headline=True, claim='gaps grow',
                         paper='0.19', ours='0.02 [0.01, 0.03]', verdict='partially', run_id='r'),
                    dict(number=2, name='disparate_benefits', area='fairness', title='t', implemented=True, headline=False, claim='b',
                         paper='', ours='', verdict='illustrated', run_id='r')])
_hc = home_results(_vt)
assert '<b>Headline claims</b>' in _hc[0]['source'] and 'class="verdict v-partially"' in _hc[0]['source'] and 'All 2 claims' in _hc[0]['source']
assert 'href="results/dashboard.html"' in _hc[0]['source']
assert _hc[1]['outputs'][0]['data']['image/png'].startswith('iVBOR')
assert '<tr data-paper="disparate_benefits" data-verdict="partially">' in _hc[2]['source'] and 'href="papers/fairness/disparate_benefits.html"' in _hc[2]['source']
_home = dict(cells=[dict(cell_type='raw', source='---\ntitle: x\n---'), _md('intro'), _md(RESULTS_MARKER), _md('more')])
test_eq(polish_home(_home, _hc), 1); test_eq([_src(c)[:6] for c in _home['cells']][1], 'intro'); test_eq(len(_home['cells']), 6)
test_eq(polish_home(_home, _hc), 0)

# %% [markdown]
# ### Serving MathJax, scripts and fonts from the site
#
# Quarto's pages load MathJax from a CDN (and, on pages with HTML outputs, require.js, jQuery and a polyfill;
# the cosmo theme imports its font from Google Fonts), so an offline copy showed raw TeX. After the render,
# `vendor_assets` copies each of them from its npm package (fetched once with `npm pack` into a cache
# outside the repository, `~/.cache/trustlib/npm/`) into `site_libs/vendor/` and points the pages at the
# copies with relative links; the polyfill (ES6, which every current browser has) is dropped. Without npm and
# without a cached copy it leaves the CDN links and says so.

# %%
#| export
NPM_ASSETS = {   # npm package -> (version, the files or folders of it the site uses)
    'mathjax': ('3.2.2', ['es5', 'LICENSE']),
    'jquery': ('3.5.1', ['dist/jquery.min.js', 'LICENSE.txt']),
    'requirejs': ('2.3.6', ['require.js']),
    '@fontsource/source-sans-pro': ('5.2.5', [f'files/source-sans-pro-latin-{w}-normal.woff2' for w in (300, 400, 700)] + ['LICENSE']),
}
CDN_SCRIPTS = [   # (a CDN URL Quarto writes, the package, the file in it)
    (re.compile(r'https://cdn\.jsdelivr\.net/npm/mathjax@3[^"\'/]*/es5/([\w.-]+\.js)'), 'mathjax', r'es5/\1'),
    (re.compile(r'https://cdnjs\.cloudflare\.com/ajax/libs/jquery/3\.5\.1/jquery\.min\.js'), 'jquery', 'dist/jquery.min.js'),
    (re.compile(r'https://cdnjs\.cloudflare\.com/ajax/libs/require\.js/2\.3\.6/require\.min\.js'), 'requirejs', 'require.js'),
]
_POLYFILL = re.compile(r'<script[^>]*src="https://cdnjs\.cloudflare\.com/polyfill/[^"]*"[^>]*>\s*</script>\s*')
_GOOGLE_FONT = re.compile(r'@import\s*(?:url\(\s*)?["\']?https://fonts\.googleapis\.com/css2\?family=Source\+Sans\+Pro[^"\')]*["\']?\s*\)?\s*;?')

def npm_cache() -> Path:
    "Where npm packages for the site are cached: `$TRUSTLIB_CACHE/npm`, default `~/.cache/trustlib/npm`."
    return Path(os.environ.get('TRUSTLIB_CACHE', Path.home()/'.cache'/'trustlib'))/'npm'

def fetch_npm(name:str) -> Path|str:
    "The cached `package/` folder of npm package `name` (its files of `NPM_ASSETS`, fetched with `npm pack` on first use), or why it is not available."
    import subprocess, tarfile
    version, files = NPM_ASSETS[name]
    dest = npm_cache()/f"{name.replace('/', '+')}-{version}"
    if (dest/'package'/files[0]).exists(): return dest/'package'
    npm = shutil.which('npm')
    if npm is None: return f'npm is not installed, and {name}@{version} is not cached in {npm_cache()}'
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([npm, 'pack', f'{name}@{version}', '--silent'], cwd=tmp, capture_output=True, text=True, timeout=300)
        tgz = next(Path(tmp).glob('*.tgz'), None)
        if r.returncode or tgz is None: return f"npm pack {name}@{version} failed: {(r.stderr or r.stdout).strip()[-300:]}"
        part = dest.with_name(dest.name + '.part'); shutil.rmtree(part, ignore_errors=True); part.mkdir(parents=True)
        want = tuple(f'package/{f}' for f in files)
        with tarfile.open(tgz) as t:
            t.extractall(part, members=[m for m in t.getmembers() if m.name.startswith(want)], filter='data')
        shutil.rmtree(dest, ignore_errors=True); part.rename(dest)
    return dest/'package'

def _font_css() -> str:
    return ''.join(f"@font-face{{font-family:'Source Sans Pro';font-style:normal;font-display:swap;font-weight:{w};"
                   f"src:url(source-sans-pro-latin-{w}-normal.woff2) format('woff2')}}\n" for w in (300, 400, 700))

def vendor_assets(site:str|Path, # the rendered site
                  packages:dict|None=None, # npm name -> its cached `package/` folder (default: `fetch_npm`)
                 ) -> dict:
    "Copy MathJax, jQuery, require.js and the theme's font into `site/site_libs/vendor/` and point every page at them; counts and what was skipped."
    site = Path(site); vend = site/'site_libs'/'vendor'
    packages = dict(packages or {})
    out = dict(pages=0, skipped=[])
    def get(name):
        if name not in packages: packages[name] = fetch_npm(name)
        src = packages[name]
        if not isinstance(src, Path): out['skipped'].append(str(src)); packages[name] = None; return None
        if src is None: return None
        dest = vend/name.split('/')[-1]
        if not dest.exists():
            for f in NPM_ASSETS[name][1]:
                if (src/f).is_dir(): shutil.copytree(src/f, dest/f)
                elif (src/f).is_file(): (dest/f).parent.mkdir(parents=True, exist_ok=True); shutil.copy2(src/f, dest/f)
        return dest
    for f in sorted(site.rglob('*.html')):
        s = f.read_text(encoding='utf-8', errors='replace'); new = _POLYFILL.sub('', s)
        for pat, name, target in CDN_SCRIPTS:
            if not pat.search(new): continue
            dest = get(name)
            if dest is None: continue
            rel = Path(os.path.relpath(dest, f.parent)).as_posix()
            new = pat.sub(lambda m: f"{rel}/{m.expand(target)}", new)
        new = re.sub(r'(<script src="[^"]*site_libs/vendor/[^"]*")\s+integrity="[^"]*"\s+crossorigin="anonymous"', r'\1', new)
        if new != s: f.write_text(new, encoding='utf-8'); out['pages'] += 1
    for css in (site/'site_libs').rglob('*.css') if (site/'site_libs').is_dir() else []:
        s = css.read_text(encoding='utf-8', errors='replace')
        if not _GOOGLE_FONT.search(s): continue
        dest = get('@fontsource/source-sans-pro')
        if dest is None: continue
        (dest/'files'/'source-sans-pro.css').write_text(_font_css())
        rel = Path(os.path.relpath(dest/'files'/'source-sans-pro.css', css.parent)).as_posix()
        css.write_text(_GOOGLE_FONT.sub(f'@import url("{rel}");', s, count=1), encoding='utf-8')
    out['skipped'] = sorted(set(out['skipped']))
    return out


# %%
_s = Path(tempfile.mkdtemp()); (_s/'a').mkdir(); (_s/'site_libs'/'bootstrap').mkdir(parents=True)
(_s/'a'/'p.html').write_text('<script src="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-chtml-full.js" type="text/javascript"></script>\n'
                             '<script src="https://cdnjs.cloudflare.com/polyfill/v3/polyfill.min.js?features=es6"></script>\n'
                             '<script src="https://cdnjs.cloudflare.com/ajax/libs/jquery/3.5.1/jquery.min.js" integrity="sha512-x" crossorigin="anonymous"></script>')
(_s/'i.html').write_text('no math')
(_s/'site_libs'/'bootstrap'/'b.css').write_text('@import url("https://fonts.googleapis.com/css2?family=Source+Sans+Pro:wght@300;400;700&display=swap");body{}')
(_s/'site_libs'/'bootstrap'/'c.min.css').write_text('*/@import"https://fonts.googleapis.com/css2?family=Source+Sans+Pro:wght@300;400;700&display=swap";:root{}')
_pk = Path(tempfile.mkdtemp())
for _n, (_v, _fs) in NPM_ASSETS.items():
    for _f in _fs:
        _t = _pk/_n/(_f + ('/tex-chtml-full.js' if _f == 'es5' else '')); _t.parent.mkdir(parents=True, exist_ok=True); _t.write_text('/* x */')
test_eq(vendor_assets(_s, {n: _pk/n for n in NPM_ASSETS}), dict(pages=1, skipped=[]))
test_eq((_s/'a'/'p.html').read_text(), '<script src="../site_libs/vendor/mathjax/es5/tex-chtml-full.js" type="text/javascript"></script>\n'
                                       '<script src="../site_libs/vendor/jquery/dist/jquery.min.js"></script>')
assert (_s/'site_libs'/'vendor'/'mathjax'/'es5'/'tex-chtml-full.js').is_file()
assert (_s/'site_libs'/'bootstrap'/'b.css').read_text().startswith('@import url("../vendor/source-sans-pro/files/source-sans-pro.css");')
test_eq((_s/'site_libs'/'bootstrap'/'c.min.css').read_text(), '*/@import url("../vendor/source-sans-pro/files/source-sans-pro.css");:root{}')
_s2 = Path(tempfile.mkdtemp()); (_s2/'p.html').write_text('<script src="https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.6/require.min.js"></script>')
test_eq(vendor_assets(_s2, {'requirejs': 'npm is not installed'}), dict(pages=0, skipped=['npm is not installed']))


# %% [markdown]
# ### Putting it together: `polish_proc`
#
# `polish_proc` runs after nbdev's processing and before Quarto: it rebuilds the dashboard and the papers
# index from the ledger, puts the results on the home page, rewrites every paper page (summary box, parameter
# table, API entries moved to `api/<area>/<paper>`, audit trail, downloads), points the cross-links at the
# right pages, adds the API pages to the sidebar, then applies `polish_pages`. Pages without a publication
# keep their text and get a summary box that says so.

# %%
#| export
def front_matter(nb:dict) -> dict:
    "The YAML front matter nbdev wrote into a processed page's first (raw) cell ({} if none)."
    import yaml
    c = (nb.get('cells') or [{}])[0]
    if c.get('cell_type') != 'raw': return {}
    m = re.match(r'^\s*---\s*\n(.*?)\n---', _src(c), re.S)
    try: return (yaml.safe_load(m.group(1)) or {}) if m else {}
    except yaml.YAMLError: return {}

def page_path(nb:dict, rel:str|Path) -> str:
    "The site path of processed page `rel` (e.g. 'core/02_models.ipynb' -> 'core/models.html', from its front matter's `output-file`)."
    rel = Path(rel)
    for c in nb.get('cells', [])[:1]:
        m = re.search(r'^output-file:\s*(\S+)\s*$', _src(c), re.M) if c.get('cell_type') == 'raw' else None
        if m: return (rel.parent/m.group(1).strip('"\'')).as_posix()
    return rel.with_suffix('.html').as_posix()

def _add_to_sidebar(proc:Path, api_pages:list[str], extra_top:list[str]) -> None:
    "List the generated API pages (a 'paper APIs' section) and the top-level pages in `extra_top` in `_proc/sidebar.yml`."
    import yaml
    sb = proc/'sidebar.yml'
    if not sb.is_file(): return
    y = yaml.safe_load(sb.read_text()) or {}
    contents = y.setdefault('website', {}).setdefault('sidebar', {}).setdefault('contents', [])
    flat = json.dumps(contents)
    for page in extra_top:
        if f'"{page}"' not in flat: contents.insert(1, page)
    by_area = {}
    for a in api_pages: by_area.setdefault(a.split('/')[1], []).append(a)
    if api_pages and 'paper APIs' not in flat:
        contents.append(dict(section='paper APIs', contents=[dict(section=k, contents=sorted(v)) for k, v in sorted(by_area.items())]))
    sb.write_text(yaml.safe_dump(y, sort_keys=False, allow_unicode=True))

def polish_proc(proc:str|Path, # the `_proc/` folder nbdev wrote
                nbs:str|Path, # the source notebooks
                root:str|Path|None=None, # the checkout (default: the folder above `nbs`)
                runs_dir:str|Path|None=None, # where published runs' metrics.json may be (default: <root>/runs)
                records:dict|None=None, # paper name -> `published_record` (default: computed)
               ) -> dict[str, int]:
    "Make `_proc/` the site readers see: results pages from the ledger, results on the home page, paper pages rewritten, API pages, links; counts."
    import importlib
    from trustlib.config import PAPERS
    from trustlib.report import published_record, published_table, build_dashboard
    proc, nbs = Path(proc), Path(nbs)
    root = Path(root) if root is not None else nbs.parent
    runs_dir = Path(runs_dir) if runs_dir is not None else root/'runs'
    counts = dict(summaries=0, config_tables=0, audits=0, api_pages=0, api_entries=0, links=0, sources=0, results_pages=0, home=0)
    records = {p.name: (records or {}).get(p.name) or published_record(p.name, root, runs_dir) for p in PAPERS}
    vt = published_table(root, runs_dir, records)
    # the order of API entries first (nbdev writes them in reverse), so that they move in source order
    for f in sorted((proc/'papers').rglob('*.ipynb')) if (proc/'papers').is_dir() else []:
        nb = json.loads(f.read_text(encoding='utf-8')); src = nbs/f.relative_to(proc)
        text = '\n'.join(_src(c) for c in json.loads(src.read_text(encoding='utf-8')).get('cells', [])) if src.is_file() else ''
        if source_order(nb, text): _write_nb(f, nb)
    # results pages and the home page
    if (proc/'results'/'dashboard.ipynb').is_file():
        gen = proc/'_gen'
        build_dashboard(runs_dir, out=gen/'results'/'dashboard.ipynb', nbs_dir=nbs, pair=False, published=True, records=records,
                        papers_index=True, link_root=gen)
        for name in ('dashboard.ipynb', 'papers.ipynb'):
            if (proc/'results'/name).is_file(): replace_body(proc/'results'/name, gen/'results'/name); counts['results_pages'] += 1
        shutil.rmtree(gen, ignore_errors=True)
    if (proc/'index.ipynb').is_file():
        nb = json.loads((proc/'index.ipynb').read_text(encoding='utf-8'))
        if polish_home(nb, home_results(vt, '.')): _write_nb(proc/'index.ipynb', nb); counts['home'] = 1
    bench_page = proc/'core'/'13_bench.ipynb'   # the latest `make bench` results (runs/bench/) on the bench page
    if bench_page.is_file():
        from trustlib.bench import BENCH_MARKER, bench_markdown
        nb = json.loads(bench_page.read_text(encoding='utf-8'))
        hit = [c for c in nb.get('cells', []) if c.get('cell_type') == 'markdown' and BENCH_MARKER in _src(c)]
        for c in hit: c['source'] = _src(c).replace(BENCH_MARKER, bench_markdown(runs_dir/'bench'))
        if hit: _write_nb(bench_page, nb); counts['bench'] = 1
    if (proc/'use.ipynb').is_file():                     # the table of what `full` runs per paper (trustlib.rehearse.FULL_PROFILE)
        nb = json.loads((proc/'use.ipynb').read_text(encoding='utf-8'))
        if fill_full_profile(nb): _write_nb(proc/'use.ipynb', nb)
    # paper pages: API entries out, summary, parameters, audit trail, downloads
    api, pages = {}, {}
    for p in PAPERS:
        f = proc/p.notebook
        if not f.is_file(): continue
        page = Path(p.notebook).with_suffix('.html').as_posix()
        api_rel = f"api/{p.area}/{p.name}.ipynb"
        nb = json.loads(f.read_text(encoding='utf-8'))
        groups = split_api(nb, _rel_href(api_rel.replace('.ipynb', '.html'), page))
        try: mod = importlib.import_module(p.module)
        except Exception: mod = None
        moved = [c for _, _, run in groups for c in run]
        if moved:
            if mod is not None: counts['sources'] += fix_source_links(moved, mod, 'https://github.com/trustlib/trustlib')
            title = front_matter(nb).get('title') or p.title
            _write_nb(proc/api_rel, api_page(p.module, title, _rel_href(page, api_rel.replace('.ipynb', '.html')), groups, f"{p.name}.html"))
            counts['api_pages'] += 1; counts['api_entries'] += len(moved)
            api[page] = (api_rel.replace('.ipynb', '.html'), {pandoc_id(show_doc_title(c) or '') for c in moved})
        rec = records[p.name]
        k = polish_paper(nb, rec, write_downloads(proc, rec, page), getattr(mod, 'Config', None) if mod is not None else None)
        counts['summaries'] += k['summary']; counts['config_tables'] += k['config']; counts['audits'] += k['audit']
        pages[page] = nb; _write_nb(f, nb)
    # links: every page, relative, to the right module
    host = doc_host(root)
    for f in sorted(proc.rglob('*.ipynb')):
        rel = f.relative_to(proc)
        if any(x.startswith(('.', '_')) for x in rel.parts): continue
        nb = json.loads(f.read_text(encoding='utf-8'))
        page = page_path(nb, rel)
        own = page if page in api else next((k for k, v in api.items() if v[0] == page), None)
        n = rewrite_doclinks(nb, page, host, api, own)
        if n: _write_nb(f, nb); counts['links'] += n
    _add_to_sidebar(proc, [v[0].replace('.html', '.ipynb') for v in api.values()], [x for x in ('use.ipynb',) if (proc/x).is_file()])
    counts.update(polish_pages(proc, nbs))
    return counts


# %% [markdown]
# A miniature checkout and its `_proc/`: one published paper page (with an API entry, the one-line `Config(...)`
# output and a cross-link nbdev pointed at the production site), the home page, the results pages and the sidebar.

# %%
_r = Path(tempfile.mkdtemp())
(_r/'settings.ini').write_text('[DEFAULT]\ndoc_host = https://trustlib.github.io\ndoc_baseurl = /trustlib\n')
(_r/'nbs'/'papers'/'clustering').mkdir(parents=True)
(_r/'nbs'/'papers'/'clustering'/'l2h.ipynb').write_text(json.dumps(dict(cells=[_md('# From Logits to Hierarchies: Hierarchical Clustering made Simple\n\n> L2H.')])))
_tr.append_ledger('l2h', dict(run_id='cpu-1', date='2026-12-01', commit='abc', profile='cpu', claims_hash=None, cpu_seconds=50.0,
                               verdicts=[dict(id='tree', claim='L2H builds better trees', verdict='partially', rule='r', ours='0.5', headline=True)]), _r)
_front = lambda t, f: dict(cell_type='raw', metadata={}, source=f'---\ntitle: "{t}"\noutput-file: {f}\n---\n')
_pp = _r/'_proc'
_write_nb(_pp/'index.ipynb', dict(cells=[_front('trustlib', 'index.html'), _md(RESULTS_MARKER), _md('What it is.')]))
for _n in ('dashboard', 'papers'): _write_nb(_pp/'results'/f'{_n}.ipynb', dict(cells=[_front(_n, f'{_n}.html'), _md('old')]))
_cfgc = dict(cell_type='code', metadata={}, source='cfg = Config.from_namespace(globals())',
             outputs=[dict(output_type='execute_result', data={'text/plain': "Config(profile='cpu', seed=0)"})])
_write_nb(_pp/'papers'/'clustering'/'l2h.ipynb', dict(cells=[_front('From Logits to Hierarchies (L2H)', 'l2h.html'), _md('<!-- WARNING: THIS FILE WAS AUTOGENERATED! -->'),
          _md('Uses [`run`](https://trustlib.github.io/trustlib/papers/bias/ecolevels.html#run).'), _cfgc, _md('### The tree'), _sdc('l2h'), _sdc('run'), _md('## Paper vs. us')]))
(_pp/'sidebar.yml').write_text('website:\n  sidebar:\n    contents:\n      - index.ipynb\n')
_counts = polish_proc(_pp, _r/'nbs', _r)
test_eq({k: _counts[k] for k in ('summaries', 'config_tables', 'audits', 'api_pages', 'api_entries', 'results_pages', 'home')},
        dict(summaries=1, config_tables=1, audits=1, api_pages=1, api_entries=2, results_pages=2, home=1))
_page = '\n'.join(_src(c) for c in json.loads((_pp/'papers'/'clustering'/'l2h.ipynb').read_text())['cells'])
assert _page.index('class="tl-summary"') < _page.index('Uses [`run`]') < _page.index('## Audit trail')
assert '[`run`](../../api/clustering/l2h.html#run)' in _page and 'show_doc' not in _page
assert 'tl-config' in (_pp/'papers'/'clustering'/'l2h.ipynb').read_text() and "Config(profile='cpu'" not in (_pp/'papers'/'clustering'/'l2h.ipynb').read_text()
assert '<div class="tl-ptitle">' not in _page                       # the page title is the paper's: not said twice
_api = json.loads((_pp/'api'/'clustering'/'l2h.ipynb').read_text())
test_eq(front_matter(_api)['title'], 'trustlib.clustering.l2h'); assert 'Explained in [The tree](../../papers/clustering/l2h.html#the-tree)' in _src(_api['cells'][2])
assert 'tl-lead' in _src(json.loads((_pp/'index.ipynb').read_text())['cells'][1])
assert 'paper APIs' in (_pp/'sidebar.yml').read_text() and (_pp/'_downloads'/'l2h'/'l2h-claims.csv').is_file()
test_eq(page_path(json.loads((_pp/'results'/'papers.ipynb').read_text()), 'results/papers.ipynb'), 'results/papers.html')
_counts


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
  const de = document.documentElement, main = document.querySelector('main') || document.body;
  const say = el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\\s+/).slice(0, 2).join('.') : '');
  const imgs = [...document.querySelectorAll('img')].map(i => ({src: i.getAttribute('src') || '', complete: i.complete, natural: i.naturalWidth,
      shown: Math.round(i.getBoundingClientRect().width), inmain: main.contains(i)}));
  const clipped = [];
  for (const el of main.querySelectorAll('*')) {
    if (!el.clientWidth || !el.textContent.trim()) continue;
    const cs = getComputedStyle(el);
    if (cs.clip !== 'auto' && cs.clip !== '' || cs.clipPath !== 'none' || el.closest('mjx-assistive-mml, .visually-hidden, .sr-only')) continue;   // hidden on purpose (screen readers)
    const hides = ['hidden', 'clip'].includes(cs.overflowX) || cs.textOverflow === 'ellipsis';
    if (hides && el.scrollWidth > el.clientWidth + 2) clipped.push(say(el) + ': ' + el.scrollWidth + ' px of content in ' + el.clientWidth + ' px');
  }
  const wide = [...document.querySelectorAll('table.tl-table, .tl-summary, .tl-filter')].filter(t => t.offsetParent !== null && t.parentElement)
      .filter(t => t.scrollWidth > t.parentElement.clientWidth + 2 || t.getBoundingClientRect().right > de.clientWidth + 2)
      .map(t => say(t) + ': ' + t.scrollWidth + ' px in ' + t.parentElement.clientWidth + ' px');
  const top = el => el ? Math.round(el.getBoundingClientRect().top + window.scrollY) : null;
  const box = document.querySelector('.tl-summary');
  const firstVerdict = main.querySelector('.verdict');
  const headline = document.querySelector('.tl-headline-verdict .verdict') || document.querySelector('.tl-headline-verdict');
  return {scroll: de.scrollWidth, client: de.clientWidth, height: de.scrollHeight,
          links: [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href')),
          ids: [...document.querySelectorAll('[id]')].map(e => e.id),
          stderr: document.querySelectorAll('.cell-output-stderr').length, imgs: imgs, clipped: clipped, wide: wide,
          summary: box ? {paper: box.dataset.paper, verdict: box.dataset.verdict, run: box.dataset.run,
                          badge: (box.querySelector('.tl-verdict .verdict') || {}).className || '', y: top(box.querySelector('.tl-verdict .verdict'))} : null,
          verdict_y: top(firstVerdict), headline_y: top(headline), filters: document.querySelectorAll('.tl-filter').length};
}"""

_TABLE_JS = """() => {   // the sortable, filterable tables: filter by the last verdict offered, then sort by the first sortable column
  const out = [];
  for (const f of document.querySelectorAll('.tl-filter')) {
    const t = document.getElementById(f.getAttribute('data-for')), sel = f.querySelector('select[data-key="verdict"]');
    if (!t || !sel || sel.options.length < 2) { out.push('filter without its table or verdict choices'); continue; }
    const rows = [...t.tBodies[0].rows], want = sel.options[sel.options.length - 1].value;
    sel.value = want; sel.dispatchEvent(new Event('change'));
    const shown = rows.filter(r => !r.hidden);
    if (!shown.length || shown.some(r => r.dataset.verdict !== want)) out.push(`filter by verdict ${want}: ${shown.length} rows shown, not all ${want}`);
    if (rows.filter(r => r.dataset.verdict === want).length !== shown.length) out.push(`filter by verdict ${want} hides matching rows`);
    const count = f.querySelector('.tl-count');
    if (count && !count.textContent.startsWith(shown.length + ' of ' + rows.length)) out.push(`the count says ${count.textContent}`);
    sel.value = ''; sel.dispatchEvent(new Event('change'));
    if (rows.some(r => r.hidden)) out.push('clearing the filter leaves rows hidden');
    const th = t.tHead.querySelector('th[data-sort]');
    if (th) {
      const i = [...th.parentElement.cells].indexOf(th); th.click(); th.click();   // twice: descending
      const keys = [...t.tBodies[0].rows].map(r => (r.cells[i].getAttribute('data-v') || r.cells[i].textContent).trim().toLowerCase());
      const num = th.getAttribute('data-sort') === 'num';
      for (let k = 1; k < keys.length; k++) {
        const c = num ? parseFloat(keys[k - 1]) - parseFloat(keys[k]) : keys[k - 1].localeCompare(keys[k]);
        if (c < 0) { out.push(`sorting by "${th.textContent.trim()}" left rows out of order`); break; }
      }
    }
  }
  return out;
}"""

def _internal(href:str) -> bool:
    return bool(href) and not re.match(r'^([a-z][a-z0-9+.-]*:|//)', href, re.I)

def site_pages(site:str|Path) -> list[str]:
    "The pages of a rendered site (relative paths of its .html files outside `site_libs/` and hidden or underscore folders)."
    site = Path(site)
    return sorted(p.relative_to(site).as_posix() for p in site.rglob('*.html')
                  if not any(part.startswith(('site_libs', '_', '.')) for part in p.relative_to(site).parts))

def expected_summaries(root:str|Path, runs_dir:str|Path|None=None) -> dict[str, dict]:
    "Page -> the headline verdict and run its summary box must show, read straight from each paper's ledger (and the run's metrics.json, when present)."
    from trustlib.config import PAPERS
    root = Path(root); runs_dir = Path(runs_dir) if runs_dir is not None else root/'runs'
    out = {}
    for p in PAPERS:
        if not (root/'nbs'/p.notebook).is_file(): continue
        f = root/'nbs'/'results'/'ledger'/f'{p.name}.json'
        pubs = json.loads(f.read_text(encoding='utf-8'))['publications'] if f.is_file() else []
        page = Path(p.notebook).with_suffix('.html').as_posix()
        if not pubs: out[page] = dict(verdict='', run=''); continue
        last = pubs[-1]
        heads = [v['verdict'] for v in last['verdicts'] if v.get('headline')]
        exp = dict(verdict=heads[0] if len(heads) == 1 else None, run=last.get('run_id') or '')
        m = runs_dir/p.name/(last.get('run_id') or '-')/'metrics.json'
        if m.is_file():
            mh = [v['verdict'] for v in json.loads(m.read_text(encoding='utf-8')).get('verdicts') or [] if v.get('headline')]
            exp['metrics_verdict'] = mh[0] if mh else None
        out[page] = exp
    return out

def check_rendered(site:str|Path, # the rendered site (`_docs/`)
                   screenshots:str|Path|None=None, # folder for screenshots of `shot_pages` at both widths
                   width:int=1366, height:int=768, # desktop viewport (px)
                   phone:int=390, phone_height:int=844, # phone viewport (px); every page is checked at both
                   min_scale:float=0.6, # images shown below this fraction of their natural width (desktop) are reported
                   shot_pages=('index.html', 'results/dashboard.html', 'results/papers.html', 'papers/fairness/disparate_benefits.html',
                              'papers/unlearning/dsda.html', 'papers/interp/saebench.html'),
                   expect:dict|None=None, # page -> dict(verdict=, run=) its summary box must show (`expected_summaries`)
                   host:str|None=None, # the production URL: links to it are checked against the built site
                   timeout_s:float=120) -> dict:
    "Load every page of `site` in headless Chromium at desktop and phone width; counts and lists of every defect found."
    why = browser_unavailable()
    if why: raise RuntimeError(why)
    sync_api = require('playwright.sync_api', 'the browser check')
    site = Path(site).resolve()
    pages = site_pages(site)
    handler = functools.partial(_Quiet, directory=str(site))
    httpd = socketserver.ThreadingTCPServer(('127.0.0.1', 0), handler); httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}/"
    rep = dict(pages=len(pages), links=0, anchors=0, prod_links=0, broken_links=[], broken_anchors=[], overflow=[], phone_overflow=[],
               downscaled=[], broken_images=[], clipped=[], wide=[], external=[], summary=[], first_screen=[], tables=[], stderr=[], screenshots=[],
               verdict_y={})
    seen, wanted, external = {}, [], set()
    if screenshots is not None: Path(screenshots).mkdir(parents=True, exist_ok=True)
    def route(r):
        if r.request.url.startswith(base): r.continue_()
        else: external.add(r.request.url); r.abort()
    def local_target(rel, href):
        "The site file a link points at, or None when it leaves the site; production links are resolved against the site."
        if host and href.startswith(host):
            rep['prod_links'] += 1; href = href[len(host):]; start = ''
        elif not _internal(href) or href == '#': return None
        else: start = str(Path(rel).parent)
        u = urlsplit(href)
        target = os.path.normpath(os.path.join(start, unquote(u.path))).replace(os.sep, '/') if u.path else rel
        if target.endswith('/') or (site/target).is_dir(): target = target.rstrip('/').removesuffix('.') + '/index.html'
        return target.lstrip('/'), unquote(u.fragment)
    def visit(page, rel, wide_label):
        for attempt in (1, 2):   # a busy machine can stall one load: try again before calling the page broken
            try: page.goto(base + rel, wait_until='load', timeout=timeout_s * 1000); break
            except sync_api.TimeoutError:
                if attempt == 2: raise RuntimeError(f"{rel} did not load within {timeout_s:.0f} s, twice")
        info = page.evaluate(_PAGE_JS)
        label = f"{rel} at {wide_label} px"
        screen = height if wide_label == width else phone_height
        if info['headline_y'] is not None and info['headline_y'] > screen - 24:
            rep['first_screen'].append(f"{label}: the headline verdict is at y = {info['headline_y']} px, below the first screen ({screen} px)")
        if info['scroll'] > info['client'] + 1: (rep['overflow'] if wide_label == width else rep['phone_overflow']).append(f"{rel}: {info['scroll']} px wide at {info['client']} px")
        rep['clipped'] += [f"{label}: {c}" for c in info['clipped']]
        rep['wide'] += [f"{label}: {c}" for c in info['wide']]
        rep['verdict_y'].setdefault(rel, {})[wide_label] = info['headline_y'] if info['headline_y'] is not None else info['verdict_y']
        return info
    def browse():   # Playwright's sync API refuses to run inside an asyncio loop (Jupyter's): a thread of its own
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=find_chromium(), args=['--no-sandbox'])
            try:
                page = browser.new_page(viewport=dict(width=width, height=height)); page.route('**/*', route)
                small = browser.new_page(viewport=dict(width=phone, height=phone_height), is_mobile=True, device_scale_factor=1); small.route('**/*', route)
                for rel in pages:
                    info = visit(page, rel, width)
                    seen[rel] = set(info['ids'])
                    if info['filters']: rep['tables'] += [f"{rel}: {x}" for x in page.evaluate(_TABLE_JS)]
                    if info['stderr']: rep['stderr'].append(f"{rel}: {info['stderr']} stderr block(s)")
                    for im in info['imgs']:
                        if im['complete'] and im['natural'] == 0: rep['broken_images'].append(f"{rel}: {im['src'][:100]}")
                        elif im['inmain'] and im['shown'] > 0 and im['shown'] < min_scale * im['natural']:
                            rep['downscaled'].append(f"{rel}: {im['src'][:80]} shown at {im['shown']} of {im['natural']} px")
                    for href in info['links']:
                        t = local_target(rel, href)
                        if t is None: continue
                        target, frag = t
                        rep['links'] += 1
                        if target.startswith('..') or not (site/target).is_file():
                            rep['broken_links'].append(f"{rel}: {href}"); continue
                        if frag: wanted.append((rel, href, target, frag))
                    if expect is not None and rel in expect:
                        s, e = info['summary'], expect[rel]
                        if s is None: rep['summary'].append(f"{rel}: no summary box")
                        else:
                            for k in ('verdict', 'run'):
                                if e.get(k) is not None and s.get(k) != e[k]: rep['summary'].append(f"{rel}: the summary shows {k} {s.get(k)!r}, the ledger {e[k]!r}")
                            if e.get('metrics_verdict') is not None and s.get('verdict') != e['metrics_verdict']:
                                rep['summary'].append(f"{rel}: the summary shows {s.get('verdict')!r}, the run's metrics.json {e['metrics_verdict']!r}")
                            if e.get('verdict') and f"v-{e['verdict']}" not in s.get('badge', ''): rep['summary'].append(f"{rel}: the badge is not {e['verdict']!r}")
                    if screenshots is not None and rel in shot_pages:
                        out = Path(screenshots)/(rel.replace('/', '__').removesuffix('.html') + f'-{width}.png')
                        page.screenshot(path=str(out), full_page=False); rep['screenshots'].append(str(out))
                    visit(small, rel, phone)
                    if screenshots is not None and rel in shot_pages:
                        out = Path(screenshots)/(rel.replace('/', '__').removesuffix('.html') + f'-{phone}.png')
                        small.screenshot(path=str(out), full_page=False); rep['screenshots'].append(str(out))
            finally: browser.close()
    try:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(1) as ex: ex.submit(browse).result()
    finally:
        httpd.shutdown(); httpd.server_close()
    for rel, href, target, frag in wanted:
        rep['anchors'] += 1
        ids = seen.get(target)
        if ids is None and target.endswith('.html'):   # a page outside the list: read its ids statically
            ids = set(re.findall(r'\bid="([^"]+)"', (site/target).read_text(encoding='utf-8', errors='replace')))
        if ids is not None and frag not in ids: rep['broken_anchors'].append(f"{rel}: {href}")
    rep['external'] = sorted(external)
    rep['summary'] += [f"{rel}: the page is missing from the site" for rel in sorted(expect or {}) if rel not in pages]
    return rep

def site_problems(rep:dict) -> list[str]:
    "The failures in a `check_rendered` report, one line each (empty: the site passes)."
    names = dict(broken_links='broken link', broken_anchors='broken anchor', broken_images='broken image', overflow='page wider than the screen',
                 phone_overflow='page wider than a phone', clipped='clipped text', wide='table or box wider than its column',
                 downscaled='image shown below 60 % of its width', stderr='stored stderr', external='request outside the site (offline it fails)',
                 summary='summary box', first_screen='headline verdict not on the first screen', tables='sortable table')
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
                                      '<a href="missing.html">gone</a> <a href="https://example.org">out</a> <a href="#top">self</a> '
                                      '<a href="https://x.github.io/lib/papers/good.html#fine">production</a> <a href="https://x.github.io/lib/nope.html">gone online</a>'
                                      '<img src="missing.png"><div style="width:200px;overflow:hidden;white-space:nowrap">' + 'clipped text ' * 40 + '</div>'
                                      '<div class="tl-filter" data-for="t"><select data-key="verdict"><option value="">all</option><option value="partially">p</option>'
                                      '</select><span class="tl-count"></span></div><table id="t" class="tl-sortable"><thead><tr><th data-sort="num">#</th><th>v</th></tr>'
                                      '</thead><tbody><tr data-verdict="reproduced"><td>1</td><td>r</td></tr><tr data-verdict="partially"><td>2</td><td>p</td></tr>'
                                      '</tbody></table>' + TABLE_JS))
(_site/'papers'/'good.html').write_text(_page('<p id="fine">fine</p><img src="../big.png" style="width:100px">'
                                              '<div class="tl-summary" data-paper="good" data-verdict="partially" data-run="r1"><span class="tl-verdict tl-headline-verdict">'
                                              '<span class="verdict v-partially">partially</span></span></div>'
                                              '<div class="cell-output-stderr">warn</div><div style="width:3000px">wide</div>'
                                              '<script src="https://cdn.example.org/x.js"></script><div class="tl-filter" data-for="nope"></div>'))
(_site/'big.png').write_bytes(_png_of(400, 10))
_why = browser_unavailable()
if _why: print(f"skipped: {_why}")
else:
    _rep = check_rendered(_site, expect={'papers/good.html': dict(verdict='reproduced', run='r1'), 'papers/gone.html': dict(verdict='', run='')},
                          host='https://x.github.io/lib/')
    test_eq((_rep['pages'], _rep['links'], _rep['anchors'], _rep['prod_links']), (2, 6, 4, 2))   # #top on the page itself counts too
    test_eq(_rep['broken_links'], ['index.html: missing.html', 'index.html: https://x.github.io/lib/nope.html'])
    test_eq(_rep['broken_anchors'], ['index.html: papers/good.html#nope'])
    test_eq([x.split(':')[0] for x in _rep['overflow']], ['papers/good.html']); test_eq([x.split(':')[0] for x in _rep['phone_overflow']], ['papers/good.html'])
    test_eq(_rep['downscaled'], ['papers/good.html: ../big.png shown at 100 of 400 px'])
    test_eq(_rep['broken_images'], ['index.html: missing.png'])
    assert _rep['clipped'] and all(x.startswith('index.html at ') and 'div' in x for x in _rep['clipped']), _rep['clipped']
    test_eq(_rep['stderr'], ['papers/good.html: 1 stderr block(s)'])
    test_eq(_rep['external'], ['https://cdn.example.org/x.js'])
    test_eq(_rep['summary'], ["papers/good.html: the summary shows verdict 'partially', the ledger 'reproduced'", "papers/good.html: the badge is not 'reproduced'",
                              "papers/gone.html: the page is missing from the site"])
    assert _rep['verdict_y']['papers/good.html'][1366] is not None and not _rep['first_screen']
    test_eq(_rep['tables'], ['papers/good.html: filter without its table or verdict choices'])   # the working table on index.html passes
    print('\n'.join(site_problems(_rep)))
