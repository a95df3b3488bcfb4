# %% [markdown]
# # cli — the `trustlib` command
#
# > The trustlib command line: list papers, run and publish notebooks, sweep grids, report results, build the site.

# %% [markdown]
# ```
# trustlib list [--params PAPER]
# trustlib run PAPER [-p KEY VALUE]... [--profile smoke|cpu|full] [--runs-dir DIR] [--allow-large] [--no-wait]
#                    [--rehearse] [--publish [--allow-dirty]]
# trustlib sweep SPEC.yaml [--workers N | --backend ray [--address ADDR]] [--retries N] [--runs-dir DIR] [--allow-large]
# trustlib report [--runs-dir DIR] [--profile cpu] [--out NOTEBOOK | --publish [--allow-dirty]]
# trustlib site [--run | --check] [--runs-dir DIR]
# ```
#
# Every subcommand is a plain function of the parsed arguments, and `main(argv)` returns the exit code
# (0 success, 1 a run or check failed, 2 a user error: invalid parameters or spec, a runs folder that cannot be
# written, a dirty tree for `--publish`; 130/143 interrupted by ctrl-C/SIGTERM), so everything here is testable
# in-process. A user error is reported as one line; an unexpected error as one line per link of its chain of
# causes (capped), never as a bare traceback.
# Heavy libraries (papermill, pandas, nbdev) are imported inside the functions: `trustlib --help` is instant.

# %%
#| default_exp cli

# %%
#| export
from __future__ import annotations
import argparse, io, json, os, shutil, signal, subprocess, sys, threading
from pathlib import Path

from trustlib.config import PAPERS, PROFILES, ConfigError, DIST_NAME

# %%
#| hide
from fastcore.test import test_eq, test_fail
import contextlib, io, tempfile, yaml
from trustlib.runs import find_root


# %%
#| hide

def run_cli(*args) -> tuple[int, str, str]:
    "Run `main(args)`, capturing stdout and stderr."
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err): rc = main(list(args))
    return rc, out.getvalue(), err.getvalue()


# %% [markdown]
# ## Small helpers
#
# Plain-text tables (no pandas needed), and `-p KEY VALUE` parsing: values are read with `yaml.safe_load`,
# like papermill's `-y`: `3` is an int, `0.5` a float, `true` a bool, `[1, 2]` a list, `null` None, anything
# else a string. Parameters are data, never code: a value YAML turns into anything but JSON-like data (bytes
# from `!!binary`, a date, a set) is refused, as is a value of more than `MAX_VALUE_NODES` items (YAML aliases
# counted every time they are used).

# %%
#| export
def text_table(rows:list[dict], cols:list[str]|None=None, max_width:int=60) -> str:
    "A fixed-width text table of `rows`."
    if not rows: return '(none)'
    cols = cols or list(rows[0])
    cell = lambda v: ('' if v is None else str(v)).replace('\n', ' ')
    trunc = lambda s: s if len(s) <= max_width else s[:max_width - 1] + '…'
    w = {c: max(len(c), *(len(trunc(cell(r.get(c)))) for r in rows)) for c in cols}
    lines = ['  '.join(c.ljust(w[c]) for c in cols).rstrip(), '  '.join('-' * w[c] for c in cols)]
    lines += ['  '.join(trunc(cell(r.get(c))).ljust(w[c]) for c in cols).rstrip() for r in rows]
    return '\n'.join(lines)

def _one_line(s, n:int=200) -> str:
    s = ' '.join(str(s).split()); return s if len(s) <= n else s[:n - 1] + '…'

def parse_params(pairs:list[list[str]]|None) -> dict:
    "`[[key, value], ...]` from `-p KEY VALUE` options to a dict, values parsed with `yaml.safe_load`."
    import yaml
    from trustlib.runs import check_value, short
    res = {}
    for k, v in pairs or []:
        if k in res: raise ConfigError(f"parameter {short(k, 60)} given twice")
        if len(v) > 100_000: raise ConfigError(f"parameter {short(k, 60)}: the value is {len(v)} characters long; parameters are small data")
        try: val = yaml.safe_load(v)
        except yaml.constructor.ConstructorError as e:
            raise ConfigError(f"parameter {short(k, 60)}: {short(v, 80)} uses a YAML tag that is not allowed ({_one_line(e.problem)})") from None
        except yaml.YAMLError: val = v
        except RecursionError: raise ConfigError(f"parameter {short(k, 60)}: the value is nested too deeply") from None
        except Exception as e:   # PyYAML's constructors can fail with other errors (e.g. KeyError for `!!bool 1`)
            raise ConfigError(f"parameter {short(k, 60)}: {short(v, 80)} cannot be read as YAML ({type(e).__name__})") from None
        res[k] = check_value(k, val, allow_nonfinite=True)   # non-finite floats: the paper's Config decides
    return res


# %%
test_eq(parse_params([['seed', '3'], ['lr', '0.5'], ['fast', 'true'], ['sizes', '[1, 2]'], ['name', 'abc'], ['x', 'null']]),
        dict(seed=3, lr=0.5, fast=True, sizes=[1, 2], name='abc', x=None))
test_fail(lambda: parse_params([['seed', '1'], ['seed', '2']]), contains="'seed' given twice")
test_fail(lambda: parse_params([['x', '!!binary aGVsbG8=']]), contains="parameter 'x': a value of type bytes")
test_fail(lambda: parse_params([['x', '2026-01-01']]), contains="a value of type date")
test_fail(lambda: parse_params([['x', '!!python/object/apply:os.system ["true"]']]), contains="uses a YAML tag that is not allowed")
test_eq(parse_params([['x', '.inf']]), dict(x=float('inf')))
test_eq(text_table([dict(a=1, b='x')]), 'a  b\n-  -\n1  x')


# %% [markdown]
# ## `trustlib list`
#
# The 19 papers with their status (`implemented` when the notebook exists) and profiles; with
# `--params PAPER`, the paper's parameters: type, allowed values, value per profile and help, from the
# paper's `Config.describe()` (or, if its module cannot be imported yet, from the notebook's parameters cell).

# %%
#| export
def _implemented(p, nbs) -> bool: return nbs is not None and (nbs/p.notebook).is_file()

def _nbs_or_none():
    from trustlib.runs import nbs_path
    try: return nbs_path()
    except ConfigError: return None

def cmd_list(args) -> int:
    "trustlib list [--params PAPER]"
    nbs = _nbs_or_none()
    if args.params: return _list_params(args.params, nbs)
    rows = [dict(number=p.number, name=p.name, area=p.area, status='implemented' if _implemented(p, nbs) else 'planned',
                 profiles=', '.join(PROFILES), title=p.title) for p in PAPERS]
    print(text_table(rows, max_width=70))
    if nbs is None: print("\n(no paper notebooks found: not inside a checkout, and this installation ships none)")
    return 0

def _list_params(name:str, nbs) -> int:
    import importlib
    from trustlib.runs import _get_paper, notebook_parameters, _public
    p = _get_paper(name)
    try: Config = getattr(importlib.import_module(p.module), 'Config', None)
    except ImportError: Config = None
    if Config is not None:
        rows = Config.describe()
        print(f"{p.name} (#{p.number}, {p.module}.Config)\n")
        print(text_table(rows, ['name', 'type', 'allowed', *PROFILES, 'help'], max_width=50))
        return 0
    if not _implemented(p, nbs): raise ConfigError(f"paper {name!r} (#{p.number}) is planned: its notebook nbs/{p.notebook} does not exist yet")
    info = _public(notebook_parameters(nbs/p.notebook) or {})
    print(f"{p.name} (#{p.number}): parameters cell of nbs/{p.notebook} ({p.module} is not importable yet)\n")
    print(text_table([dict(name=k, **v) for k, v in info.items()], ['name', 'type', 'default', 'help'], max_width=50))
    return 0


# %% [markdown]
# ## `trustlib run`
#
# Validates the parameters (exit code 2 with the message if they are wrong), runs the paper's notebook with
# `trustlib.runs.run_notebook`, and prints the run folder and the headline metrics (exit code 1 if the run
# failed; its folder holds the traceback). `PAPER` may also be the path of a notebook (`*.ipynb`).
#
# `--publish` (complete runs only) copies the executed notebook over the committed paper notebook, so the
# website page carries the outputs of this run (papermill's `injected-parameters` cell is kept: it records
# what was run), cleans it with nbdev's `clean_nb` and the settings.ini rules, and rewrites its py:percent pair
# (`trustlib.report.write_pair`: what `jupytext --sync` does, normalised like `tools/pairs.py`, so the pair check passes).
# `--profile full --rehearse` runs the `full` code path on offline stand-ins (`trustlib.rehearse`): the run is
# marked `rehearsal: true` and `--publish` refuses it, as does `trustlib report --publish`.
# It refuses if the paper notebook's source changed since the run started, and if the run was made from a
# dirty work tree (see `trustlib.runs.git_info`: notebooks that differ from the commit only in outputs do not
# count) unless `--allow-dirty`; `trustlib run --publish` checks the tree before it runs.

# %%
#| export
def _settings(root:Path) -> dict:
    import configparser
    cp = configparser.ConfigParser(delimiters=['='], interpolation=None)
    cp.read(root/'settings.ini', encoding='utf-8')
    return dict(cp['DEFAULT'])

def _dirty_msg(files) -> str:
    fs = list(files or [])
    return f"{len(fs)} file(s) differ from the commit: {', '.join(fs[:5])}" + (' …' if len(fs) > 5 else '')

def check_clean(root:str|Path|None=None):
    "Raise `ConfigError` if the checkout has uncommitted changes that matter (notebook outputs do not)."
    from trustlib.runs import git_info, find_root
    g = git_info(find_root(root))
    if g['git_dirty']:
        raise ConfigError(f"the work tree is dirty ({_dirty_msg(g['git_dirty_files'])}); commit first, or pass --allow-dirty")

def run_note(m:dict) -> str:
    "Markdown saying which run a published page shows, and what running the notebook yourself does."
    from trustlib.runs import render_parameters
    params = {'profile': m.get('profile'), **(m.get('params') or {})}
    shown = ', '.join(f"`{line.strip()}`" for line in render_parameters(params).splitlines()
                      if line.strip() and not line.lstrip().startswith('#'))
    commit = (m.get('git_commit') or '')[:7]
    when = (m.get('finished') or m.get('started') or '')[:10]
    facts = [f"run `{m.get('run_id')}`"] + ([f"commit `{commit}`"] if commit else []) + \
            ([f"{m['duration_s']:.0f} s"] if isinstance(m.get('duration_s'), (int, float)) else []) + ([when] if when else [])
    return (f"**This page shows a run with** {shown} ({', '.join(facts)}). Running the notebook yourself uses the "
            f"parameters cell above as written (the fast `smoke` profile unless you change it); "
            f"`trustlib run {m.get('paper')} --profile {m.get('profile')}` repeats the run shown here.")

def label_injected(nb:dict, m:dict) -> dict:
    "Turn papermill's injected-parameters code cell into a markdown note (`run_note`), in place: Run All then follows the parameters cell."
    for i, c in enumerate(nb.get('cells', [])):
        if 'injected-parameters' in (c.get('metadata') or {}).get('tags', []):
            nb['cells'][i] = dict(cell_type='markdown', id=c.get('id', 'injected'), metadata={'tags': ['injected-parameters']},
                                  source=[run_note(m)])   # a list of lines, as Jupyter and jupytext store it
    return nb

def publish_run(run_dir:str|Path, root:str|Path|None=None, allow_dirty:bool=False) -> Path:
    "Copy a complete run's executed notebook over its paper notebook in `nbs/`, clean it, resync its pair, record a `cpu` run in the paper's ledger; return the notebook."
    from trustlib.runs import load_run, find_root, _get_paper, _sha1_file, notebook_source_sha1, scrub_notebook, drop_empty_tags
    from trustlib.results import atomic_write_text
    run_dir = Path(run_dir); m = load_run(run_dir)
    if m.get('status') != 'complete': raise ConfigError(f"only a complete run can be published; {run_dir} is {m.get('status')!r}")
    if m.get('rehearsal'):
        raise ConfigError(f"run {m.get('run_id')} is a rehearsal (the full profile on offline stand-ins: random weights, random data); "
                          "a rehearsal is never published")
    if m.get('git_dirty') and not allow_dirty:
        raise ConfigError(f"run {m['run_id']} was made from a dirty work tree ({_dirty_msg(m.get('git_dirty_files'))}); "
                          "commit and run again, or pass --allow-dirty")
    p = _get_paper(m['paper'])
    root = find_root(root)
    s = _settings(root)
    target = root/s.get('nbs_path', 'nbs')/p.notebook
    if target.exists():
        changed = (notebook_source_sha1(target) != m['source_code_sha1']) if m.get('source_code_sha1') else \
                  (bool(m.get('source_sha1')) and _sha1_file(target) != m['source_sha1'])
        if changed: raise ConfigError(f"nbs/{p.notebook} changed since run {m['run_id']} started; run it again before publishing")
    from nbdev.clean import clean_nb
    from execnb.nbio import nb2str
    nb = json.loads((run_dir/m['notebook']).read_text(encoding='utf-8'))
    scrub_notebook(nb, (run_dir,))
    from trustlib.site import cap_figures
    cap_figures(nb)   # no stored figure wider than the site can show (see `trustlib.site.cap_figures`)
    label_injected(nb, m)
    drop_empty_tags(nb)
    clean_nb(nb, clear_all=False, allowed_metadata_keys=s.get('allowed_metadata_keys', '').split(),
             allowed_cell_metadata_keys=s.get('allowed_cell_metadata_keys', '').split(),
             clean_ids=s.get('clean_ids', 'True').lower() in ('true', '1', 'yes'))
    atomic_write_text(target, nb2str(nb))
    from trustlib.report import write_pair
    write_pair(target, root)   # the py:percent pair, rendered like `jupytext --sync` / tools/pairs.py
    if m.get('profile') == 'cpu':   # the ledger records the published verdicts (pre-registration, verdict history)
        from trustlib.results import append_ledger, ledger_entry
        append_ledger(m['paper'], ledger_entry(m), root)
    return target

def _headline(m:dict, n:int=12) -> list[str]:
    items = [(k, v) for k, v in (m.get('metrics') or {}).items() if isinstance(v, (int, float, str, bool)) or v is None]
    return [f"  {k} = {v:.4g}" if isinstance(v, float) else f"  {k} = {_one_line(v)}" for k, v in items[:n]]

def _print_chain(chain, first:str|None=None, n:int=6):
    "Print an error and its causes, one capped line each, to stderr."
    lines = list(chain or [])
    if first is not None and (not lines or lines[0] != first): lines.insert(0, first)
    for i, l in enumerate(lines[:n]): print(("  caused by: " if i else "") + l[:500], file=sys.stderr)

def _check_publishable(paper:str):
    "Refuse `--publish` before any work when the paper's module says a run made here cannot be published (its `publish_blocker()`, e.g. licensed data not found)."
    import importlib
    from trustlib.runs import _get_paper
    why = getattr(importlib.import_module(_get_paper(paper).module), 'publish_blocker', lambda: None)()
    if why: raise ConfigError(f"--publish refused: {why}")

def cmd_run(args) -> int:
    "trustlib run PAPER [-p KEY VALUE]... [--profile P] [--rehearse] [--runs-dir DIR] [--allow-large] [--no-wait] [--publish [--allow-dirty]]"
    from trustlib.runs import run_notebook, validate_params, load_run, RunFailed, RunLocked
    params = parse_params(args.param)
    paper, notebook = (None, args.paper) if args.paper.endswith('.ipynb') else (args.paper, None)
    rehearse = getattr(args, 'rehearse', False)
    if args.publish and notebook: raise ConfigError("--publish needs a paper name, not a notebook path")
    if args.allow_dirty and not args.publish: raise ConfigError("--allow-dirty only applies with --publish")
    if rehearse and args.publish: raise ConfigError("--rehearse runs the full profile on stand-ins; a rehearsal is never published (drop --publish)")
    if rehearse and args.profile != 'full': raise ConfigError(f"--rehearse rehearses the full profile; pass --profile full (got {args.profile!r})")
    if not rehearse: validate_params(paper, params, args.profile, notebook=notebook, allow_large=args.allow_large)   # a rehearsal validates on its stand-ins
    if args.publish: _check_publishable(paper)
    if args.publish and not args.allow_dirty: check_clean()
    try: d = run_notebook(paper, params, args.profile, notebook=notebook, runs_dir=args.runs_dir, progress=not args.quiet,
                          timeout=args.timeout, allow_large=args.allow_large, wait=not args.no_wait, rehearse=rehearse)
    except RunLocked as e: print(f"trustlib run: {e}", file=sys.stderr); return 1
    except RunFailed as e:
        print("run failed: ", end='', file=sys.stderr); _print_chain(e.chain, e.error)
        if e.run_dir: print(f"run folder (status failed, traceback in metrics.json): {e.run_dir}", file=sys.stderr)
        return 1
    m = load_run(d)
    print(f"run complete: {d}")
    from trustlib.runs import short
    print(f"  duration: {m.get('duration_s')} s, profile {m['profile']}" + (" (rehearsal on offline stand-ins; never published)" if m.get('rehearsal') else "")
          + f", params {short(m['params'], 300)}")
    lines = _headline(m)
    if lines: print("metrics:"); print('\n'.join(lines))
    for v in m.get('verdicts') or []: print(f"  verdict: {v.get('verdict')}: {v.get('claim')}")
    if args.publish: print(f"published: {publish_run(d, allow_dirty=args.allow_dirty)}")
    return 0


# %%
_m = dict(paper='toy', run_id='cpu-abc', profile='cpu', params={'seed': 4}, git_commit='0123456789abcdef',
          duration_s=212.4, finished='2026-12-01T10:00:00+00:00')
_nb = dict(cells=[dict(cell_type='code', id='x1', metadata={'tags': ['injected-parameters']}, execution_count=1, outputs=[],
                       source='# Parameters\nprofile = "cpu"\nseed = 4\n'),
                  dict(cell_type='code', id='x2', metadata={}, execution_count=2, outputs=[], source='1 + 1')])
label_injected(_nb, _m)
_c = _nb['cells'][0]
test_eq((_c['cell_type'], _c['metadata'], _c['id']), ('markdown', {'tags': ['injected-parameters']}, 'x1'))
test_eq(_nb['cells'][1]['source'], '1 + 1')   # other cells untouched
for s in ('`profile = "cpu"`, `seed = 4`', 'run `cpu-abc`', 'commit `0123456`', '212 s', '2026-12-01', 'trustlib run toy --profile cpu'):
    assert s in ''.join(_c['source']), s
test_eq(len(_c['source']), 1)
print(_c['source'][0])


# %% [markdown]
# ## `trustlib sweep` and `trustlib report`

# %%
#| export
def cmd_sweep(args) -> int:
    "trustlib sweep SPEC.yaml [--workers N | --backend ray [--address ADDR]] [--retries N] [--runs-dir DIR] [--allow-large]"
    from trustlib.runs import sweep, load_spec, grid_size
    if not args.quiet:
        try: print(f"sweep {args.spec}: {grid_size(load_spec(args.spec)):,} grid point(s)", file=sys.stderr)
        except ConfigError: pass   # reported by sweep() below
    df = sweep(args.spec, workers=args.workers, backend=args.backend, ray_address=args.address, runs_dir=args.runs_dir,
               progress=not args.quiet, allow_large=args.allow_large, retries=args.retries)
    rows = df.drop(columns=['path']).to_dict('records')
    print(text_table(rows, max_width=60))
    n_fail, n_skip = int((df.status != 'complete').sum()), int(df.skipped.sum())
    n_other = int((df.note == 'completed by another process').sum())
    print(f"\n{len(df)} grid point(s): {len(df) - n_fail} complete ({n_skip} skipped: already complete"
          + (f", {n_other} of them completed by another process meanwhile" if n_other else '') + f"), {n_fail} failed; "
          f"{len(df) - n_fail - n_skip} executed by this sweep")
    return 1 if n_fail else 0

def cmd_notebook(args) -> int:
    "trustlib notebook PAPER [DEST] [--force]: copy a paper's notebook (from the checkout, or the one a wheel ships) to DEST for Jupyter."
    import shutil
    from trustlib.runs import resolve_notebook
    name, nb, _ = resolve_notebook(args.paper)
    dest = Path(args.dest or '.').expanduser()
    if dest.is_dir() or not dest.suffix: dest = dest/nb.name
    if dest.suffix != '.ipynb': raise ConfigError(f"DEST must be a folder or an .ipynb file, got {str(args.dest)!r}")
    if dest.resolve() == nb.resolve(): raise ConfigError(f"{dest} is the paper's own notebook; give another DEST")
    if dest.exists() and not args.force: raise ConfigError(f"{dest} exists; pass --force to overwrite it")
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(nb, dest)
    print(dest)
    if not args.quiet: print(f"open it with: jupyter lab {dest}   (the parameters cell's profile: smoke, cpu or full)", file=sys.stderr)
    return 0

def cmd_report(args) -> int:
    "trustlib report [--runs-dir DIR] [--profile cpu] [--out NB | --publish [--allow-dirty]]: collect runs, write the report, print the verdict table."
    from trustlib.report import build_dashboard, verdict_table, collect_runs, latest_runs
    from trustlib.runs import default_runs_dir, iter_runs, nbs_path
    runs_dir = Path(args.runs_dir).expanduser() if args.runs_dir else default_runs_dir()
    if runs_dir.exists() and not runs_dir.is_dir(): raise ConfigError(f"runs folder {runs_dir} is not a directory")
    if args.publish and args.out: raise ConfigError("--out and --publish exclude each other (--publish writes nbs/results/dashboard.ipynb)")
    if args.allow_dirty and not args.publish: raise ConfigError("--allow-dirty only applies with --publish")
    if not any(True for _ in iter_runs(runs_dir)):
        raise ConfigError(f"no runs in {runs_dir}: nothing to report (run papers with `trustlib run PAPER` first, or pass --runs-dir)")
    if getattr(args, 'sweep', None):
        if args.publish: raise ConfigError("--sweep writes a page into the runs folder; it does not combine with --publish")
        from trustlib.report import build_sweep_report, sweep_table
        out = build_sweep_report(args.sweep, runs_dir, out=args.out)
        df = sweep_table(args.sweep, runs_dir)
        print(text_table(df.to_dict('records'), max_width=40))
        print(f"\nsweep report: {out}")
        return 0
    runs = collect_runs(runs_dir)
    if args.publish:
        out = nbs_path()/'results'/'dashboard.ipynb'
        shown = latest_runs(runs, args.profile)
        reh = sorted(shown[shown.rehearsal.fillna(False).astype(bool)].paper) if len(shown) else []
        if reh: raise ConfigError(f"the latest {args.profile} runs of {reh[:5]} are rehearsals (stand-ins, never published); "
                                  "run them for real, or publish another profile")
        dirty = sorted(shown[shown.git_dirty.fillna(False).astype(bool)].paper) if len(shown) else []
        if dirty and not args.allow_dirty:
            raise ConfigError(f"runs of {dirty[:5]} were made from a dirty work tree; a published dashboard shows runs of clean commits "
                              "(run them again from a clean checkout, or pass --allow-dirty)")
        if not args.allow_dirty: check_clean()
    else: out = Path(args.out) if args.out else runs_dir/'dashboard.ipynb'
    ledger = args.publish and (nbs_path()/'results'/'ledger').is_dir()   # a published dashboard shows what the pages show: the ledger
    out = build_dashboard(runs_dir, out=out, profile=args.profile, published=ledger)
    if ledger:
        from trustlib.report import published_table
        vt = published_table(runs_dir=runs_dir)
    else: vt = verdict_table(runs_dir, profile=args.profile, runs=runs)
    print(text_table(vt[['number', 'name', 'verdict', 'claim', 'ours', 'run_id']].to_dict('records'), max_width=50))
    print(f"\n{'published dashboard' if args.publish else 'report'}: {out}")
    return 0


# %% [markdown]
# ## `trustlib site`
#
# The pages a reader sees are prepared from data when the site is built (`trustlib.site.polish_proc`): the
# dashboard, the papers index and the home page's results from the ledger of publications, and on every paper
# page a summary box, a parameter table, its API entries moved to an API page, and an audit trail. After
# Quarto, MathJax, the scripts and the font that Quarto loads from CDNs are copied into the site (`trustlib.site.vendor_assets`) so that it works offline, and the
# rendered site is checked in headless Chromium. The command prints the CPU time of the render.
#
# Builds the website's source tree the way `nbdev_docs` does, without Quarto's auto-installer (nbdev would
# try to download Quarto; these machines are offline): nbdev's `_pre_docs` refreshes `nbs/nbdev.yml`, keeps
# the `nbs/_quarto.yml` symlink (nbdev only writes that file when it is missing), writes `nbs/sidebar.yml` and
# processes every notebook into `_proc/`. `check_site` then verifies the tree: `_proc/_quarto.yml` is the
# top-level `_quarto.yml`, the sidebar lists every page, every relative link in the pages' markdown and in the
# navbar resolves, and no page loses text to nbdev's front matter processor (it turns the first markdown cell
# with a `# title` into the page's title and description and drops everything else in that cell). If `quarto` is on PATH the site is rendered into `_docs/` (like `nbdev_docs`).

# %%
#| export
def build_proc(root:str|Path|None=None, n_workers:int|None=None) -> Path:
    "Run nbdev's `_pre_docs` (Quarto installer disabled) in a fresh `_proc/`; return `_proc`."
    from trustlib.runs import find_root
    root = find_root(root)
    import nbdev.quarto as nq, nbdev.config
    from fastcore.xtras import working_directory
    nbdev.config.get_config.cache_clear()
    saved = nq._ensure_quarto
    nq._ensure_quarto = lambda: None   # never download/install Quarto from here
    try:
        with working_directory(root):
            shutil.rmtree(root/'_proc', ignore_errors=True)
            cache, cfg, path = nq._pre_docs(n_workers=n_workers if n_workers is not None else min(os.cpu_count() or 1, 4))
    finally:
        nq._ensure_quarto = saved
        nbdev.config.get_config.cache_clear()
    return Path(cache)


# %%
#| export
import re as _re
_LINK = _re.compile(r'\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
_PAGE_SUFFIXES = ('.ipynb', '.qmd', '.md')

def _pages(proc:Path) -> list[str]:
    "Site pages in `_proc` (notebooks and .qmd files outside hidden/underscore folders), relative posix paths."
    res = []
    for f in proc.rglob('*'):
        rel = f.relative_to(proc)
        if f.suffix in ('.ipynb', '.qmd') and f.is_file() and not any(part.startswith(('_', '.')) for part in rel.parts): res.append(rel.as_posix())
    return sorted(res)

def _sidebar_hrefs(node) -> set[str]:
    out = set()
    if isinstance(node, str): out.add(node)
    elif isinstance(node, list):
        for x in node: out |= _sidebar_hrefs(x)
    elif isinstance(node, dict):
        for k in ('href', 'file'):
            if isinstance(node.get(k), str): out.add(node[k])
        for k in ('contents', 'sidebar', 'website'):
            if k in node: out |= _sidebar_hrefs(node[k])
    return out

def _target_ok(base:Path, target:str, proc:Path) -> bool|None:
    "None if `target` is not a relative page link; else whether it resolves to a file in `proc`."
    if _re.match(r'^[a-zA-Z][a-zA-Z0-9+.-]*:', target) or target.startswith(('#', '/')): return None
    path = target.split('#')[0].split('?')[0]
    if not path.endswith(_PAGE_SUFFIXES): return None
    from urllib.parse import unquote
    f = (base/unquote(path)).resolve()
    return f.is_file() and (f == proc.resolve() or proc.resolve() in f.parents)

def _title_cell_extra(nb:dict) -> list[str]:
    "Lines of the notebook's title cell that nbdev's front matter processor drops from the page."
    for c in nb.get('cells', []):
        if c.get('cell_type') != 'markdown': continue
        src = ''.join(c['source']) if isinstance(c['source'], list) else (c['source'] or '')
        if not _re.search(r'^#\s+\S', src, flags=_re.M): continue   # nbdev takes the first markdown cell with a `# title`
        lines = [l for l in src.splitlines() if l.strip()]
        desc = [l for l in lines if _re.match(r'^>\s+\S', l)][:1]
        return [l for l in lines if not (_re.match(r'^#\s+\S', l) or l in desc or _re.match(r'^-\s+\S.*:.*\S\s*$', l))]
    return []

def check_site(root:str|Path|None=None) -> list[str]:
    "Problems found in the `_proc/` tree (empty list: ready for `quarto render`)."
    import yaml
    from trustlib.runs import find_root
    root = find_root(root); proc = root/'_proc'
    problems = []
    qy = proc/'_quarto.yml'
    if not qy.is_file(): return [f"{qy} is missing"]
    if (root/'_quarto.yml').is_file() and qy.read_text() != (root/'_quarto.yml').read_text():
        problems.append("_proc/_quarto.yml differs from the top-level _quarto.yml (nbs/_quarto.yml must be a symlink to ../_quarto.yml)")
    q = yaml.safe_load(qy.read_text()) or {}
    if (q.get('project') or {}).get('type') != 'website': problems.append("_quarto.yml: project.type is not 'website'")
    if (q.get('execute') or {}).get('enabled') is not False: problems.append("_quarto.yml: execute.enabled must be false (pages carry stored outputs)")
    if 'sidebar.yml' not in (q.get('metadata-files') or []): problems.append("_quarto.yml: metadata-files does not include sidebar.yml")
    nav = ((q.get('website') or {}).get('navbar') or {})
    for item in (nav.get('left') or []) + (nav.get('right') or []):
        href = item.get('href') if isinstance(item, dict) else item
        if isinstance(href, str) and _target_ok(proc, href, proc) is False: problems.append(f"_quarto.yml: navbar link {href!r} does not resolve")
    sb = proc/'sidebar.yml'
    if not sb.is_file(): problems.append("_proc/sidebar.yml is missing")
    else:
        listed = _sidebar_hrefs(yaml.safe_load(sb.read_text()) or {})
        for page in _pages(proc):
            if page not in listed: problems.append(f"sidebar.yml does not list {page}")
        for h in sorted(listed):
            if h.endswith(_PAGE_SUFFIXES) and not (proc/h).is_file(): problems.append(f"sidebar.yml lists {h}, which does not exist")
    nbs = root/_settings(root).get('nbs_path', 'nbs')
    for page in _pages(proc):
        if not page.endswith('.ipynb'): continue
        src_nb = nbs/page
        if src_nb.is_file():
            extra = _title_cell_extra(json.loads(src_nb.read_text(encoding='utf-8')))
            if extra: problems.append(f"{page}: the title cell has more than '# title', '> summary' and '- key: value' lines; nbdev turns "
                                      f"that cell into front matter and drops the rest from the page (move it into a second markdown cell): {extra[0][:60]!r}")
        nb = json.loads((proc/page).read_text(encoding='utf-8'))
        for c in nb.get('cells', []):
            if c.get('cell_type') != 'markdown': continue
            src = ''.join(c['source']) if isinstance(c['source'], list) else c['source']
            for t in _LINK.findall(src):
                if _target_ok((proc/page).parent, t, proc) is False: problems.append(f"{page}: link {t!r} does not resolve")
    return problems


# %% [markdown]
# The site check on a hand-made `_proc` tree: one good page, one page that is missing from the sidebar and
# has a broken link.

# %%
_r = Path(tempfile.mkdtemp()); (_r/'settings.ini').write_text('[DEFAULT]\n'); _p = _r/'_proc'
(_p/'core').mkdir(parents=True)
_q = dict(project=dict(type='website'), execute=dict(enabled=False), website=dict(navbar=dict(left=[dict(text='Home', href='index.ipynb')])),
          **{'metadata-files': ['nbdev.yml', 'sidebar.yml']})
(_r/'_quarto.yml').write_text(yaml.safe_dump(_q)); (_p/'_quarto.yml').write_text(yaml.safe_dump(_q))
(_p/'sidebar.yml').write_text(yaml.safe_dump(dict(website=dict(sidebar=dict(contents=['index.ipynb', dict(section='core', contents=['core/a.ipynb'])])))))
_mk = lambda md: json.dumps(dict(cells=[dict(cell_type='markdown', source=md, metadata={})]))
(_p/'index.ipynb').write_text(_mk('See [a](core/a.ipynb), [b](core/b.ipynb#x) and [the web](https://example.com/x.md).'))
(_p/'core'/'a.ipynb').write_text(_mk('Back [home](../index.ipynb).'))
(_p/'core'/'b.ipynb').write_text(_mk('Broken [link](missing.ipynb).'))
test_eq(check_site(_r), ["sidebar.yml does not list core/b.ipynb", "core/b.ipynb: link 'missing.ipynb' does not resolve"])
(_p/'core'/'b.ipynb').unlink(); (_p/'index.ipynb').write_text(_mk('See [a](core/a.ipynb).'))
test_eq(check_site(_r), [])
(_r/'nbs').mkdir(); (_r/'nbs'/'index.ipynb').write_text(_mk('# Home\n\n> The home page.\n\nSee [a](core/a.ipynb).'))
test_eq(check_site(_r), ["index.ipynb: the title cell has more than '# title', '> summary' and '- key: value' lines; nbdev turns that cell "
                         "into front matter and drops the rest from the page (move it into a second markdown cell): 'See [a](core/a.ipynb).'"])
(_r/'nbs'/'index.ipynb').write_text(_mk('# Home\n\n> The home page.\n\n- skip_exec: true'))
test_eq(check_site(_r), [])
test_eq(_title_cell_extra(json.loads(_mk('Intro without a title'))), [])
(_r/'_quarto.yml').write_text('project: {type: website}\n')
test_eq(check_site(_r), ["_proc/_quarto.yml differs from the top-level _quarto.yml (nbs/_quarto.yml must be a symlink to ../_quarto.yml)"])

# %%
#| export
QUARTO_MISSING = ("Quarto not found on PATH: the _proc/ tree is ready and checked, but the site was not rendered.\n"
                  "Install Quarto from https://quarto.org/docs/get-started/ and rerun `trustlib site`.")

def render_site(root:str|Path|None=None) -> Path|None:
    "`quarto render` in `_proc/` and move the output to the doc path (as `nbdev_docs`); None if Quarto is not installed."
    from trustlib.runs import find_root
    root = find_root(root)
    if not shutil.which('quarto'): return None
    subprocess.run(['quarto', 'render', '--no-cache'], cwd=root/'_proc', check=True)
    doc = _settings(root).get('doc_path', '_docs')
    shutil.rmtree(root/doc, ignore_errors=True)
    shutil.move(str(root/'_proc'/Path(doc).name), str(root/doc))
    return root/doc

def cmd_site(args) -> int:
    "trustlib site [--run] [--check] [--runs-dir DIR]: (run papers,) report, build and check `_proc/`, render if Quarto exists."
    from trustlib.runs import run_notebook, find_root, RunFailed, default_runs_dir, iter_runs
    from trustlib.report import build_dashboard
    root = find_root(); nbs = _nbs_or_none()
    failed = []
    check_only = getattr(args, 'check', False)
    if check_only and args.run: print("trustlib site: --check and --run exclude each other", file=sys.stderr); return 2
    if args.run:
        for p in PAPERS:
            if not _implemented(p, nbs): continue
            print(f"running {p.name} (profile cpu)")
            try: run_notebook(p.name, {}, 'cpu', runs_dir=args.runs_dir, progress=not args.quiet)
            except RunFailed as e: failed.append(p.name); print(f"  failed: {e.error}", file=sys.stderr)
    runs_dir = Path(args.runs_dir) if args.runs_dir else default_runs_dir(root)
    dash = nbs/'results'/'dashboard.ipynb'
    if check_only: pass
    elif args.run and any(True for _ in iter_runs(runs_dir)): print(f"dashboard: {build_dashboard(runs_dir, profile='cpu')}")
    else: print(f"keeping the committed {dash.relative_to(root)} (rebuild it with `trustlib report --publish`)")
    try: proc = build_proc(root)
    except Exception as e:   # nbdev's processing failed: say where, and the usual cause (with the real error under nbdev's wrapper)
        from trustlib.runs import error_chain
        chain = error_chain(e, cap=1000)
        msg = '\n  caused by: '.join(chain)
        hint = ("nbdev executes, while building the docs, every exported cell and every cell containing an import statement "
                "(to render show_doc); a cell that mixes an import with example code that needs earlier cells fails there. "
                "Move the import into the notebook's import cell.")
        if not any(w in chain[-1] for w in ('NameError', 'ImportError', 'ModuleNotFoundError', 'AttributeError')):
            hint = "That cell fails when nbdev executes it (the last cause above is the real error). " + hint
        print(f"site: nbdev_proc_nbs failed: {msg[:4000]}\n\n{hint}", file=sys.stderr)
        return 1
    problems = check_site(root)
    if problems:
        print(f"site check: {len(problems)} problem(s) in {proc}:", file=sys.stderr)
        for p in problems: print(f"  - {p}", file=sys.stderr)
        return 1
    print(f"site check passed: {proc}")
    from trustlib.site import polish_proc, vendor_assets
    print("prepared for reading: " + ', '.join(f"{k} {v}" for k, v in polish_proc(proc, nbs, root, runs_dir).items()))
    problems = check_site(root)   # the generated pages and links pass the same check
    if problems:
        print(f"site check after preparing the pages: {len(problems)} problem(s) in {proc}:", file=sys.stderr)
        for p in problems: print(f"  - {p}", file=sys.stderr)
        return 1
    if check_only: return 0
    import time
    t0, c0 = time.perf_counter(), _cpu_seconds()
    out = render_site(root)
    if out is None: print(QUARTO_MISSING); return 1 if failed else 0
    va = vendor_assets(out)
    (out/'.nojekyll').write_text('')   # GitHub Pages: serve `_downloads/` and `site_libs/` as they are
    print(f"site rendered: {out} ({time.perf_counter() - t0:.0f} s wall, {_cpu_seconds() - c0:.0f} s CPU with Quarto's processes); "
          f"MathJax, scripts and fonts served from the site on {va['pages']} pages"
          + (f" (left on their CDN: {'; '.join(va['skipped'])})" if va['skipped'] else ''))
    if getattr(args, 'no_browser', False): return 1 if failed else 0
    return max(browser_check(out, root/'runs'/'site-check', root, runs_dir), 1 if failed else 0)

def _cpu_seconds() -> float:
    "CPU seconds of this process and its finished children (Quarto, pandoc, deno)."
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system

def browser_check(site:Path, shots:Path, root:Path|None=None, runs_dir:Path|None=None) -> int:
    "Run `trustlib.site.check_rendered` on the rendered site (summary boxes against the ledger, production links against the site); 1 if it found a problem, 0 if clean or unavailable."
    from trustlib.site import browser_unavailable, check_rendered, site_problems, expected_summaries, doc_host
    why = browser_unavailable()
    if why: print(f"browser check skipped: {why}"); return 0
    from trustlib.runs import find_root
    root = Path(root) if root is not None else find_root(site)
    rep = check_rendered(site, screenshots=shots, expect=expected_summaries(root, runs_dir), host=doc_host(root))
    print(f"browser check: {rep['pages']} pages at 1366 and 390 px, {rep['links']} internal links ({rep['prod_links']} to the production site), "
          f"{rep['anchors']} anchors; {len(rep['broken_links'])} broken links, {len(rep['broken_anchors'])} broken anchors, "
          f"{len(rep['broken_images'])} broken images, {len(rep['overflow'])} pages wider than 1366 px, {len(rep['phone_overflow'])} wider than a phone, "
          f"{len(rep['clipped'])} clipped, {len(rep['wide'])} tables wider than their column, {len(rep['downscaled'])} downscaled images, "
          f"{len(rep['stderr'])} stderr blocks, {len(rep['external'])} requests outside the site, {len(rep['summary'])} summary-box problems, "
          f"{len(rep['first_screen'])} headline verdicts below the first screen, {len(rep['tables'])} sortable-table problems; "
          f"screenshots in {shots}")
    ys = {k: v for k, v in rep['verdict_y'].items() if k.startswith(('index', 'results/', 'papers/'))}
    if ys: print("first verdict badge (y px, 1366 / 390): " + '; '.join(f"{k} {v.get(1366)} / {v.get(390)}" for k, v in sorted(ys.items())))
    problems = site_problems(rep)
    for p in problems: print(f"  - {p}", file=sys.stderr)
    return 1 if problems else 0


# %% [markdown]
# ## The parser and `main`

# %%
#| export
_NEGATIVE = __import__('re').compile(r'^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-\.?(inf|nan)$', __import__('re').I)

def _seconds(v:str) -> float:
    "A finite, positive number of seconds (argparse type)."
    try: x = float(v)
    except ValueError: raise argparse.ArgumentTypeError(f"{v[:40]!r} is not a number of seconds") from None
    if not (x > 0 and x < float('inf')): raise argparse.ArgumentTypeError(f"{v[:40]!r}: give a finite number of seconds > 0")
    return x

def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog='trustlib', description="Literate, CPU-scale reproductions of 19 ICML 2025 papers on trustworthy ML.")
    from trustlib import __version__
    ap.add_argument('--version', action='version', version=f"trustlib {__version__} (distribution {DIST_NAME})")
    sub = ap.add_subparsers(dest='command', required=True, metavar='COMMAND')
    p = sub.add_parser('list', help="the 19 papers; --params PAPER: a paper's parameters")
    p.add_argument('--params', metavar='PAPER', help="show this paper's parameters (types, allowed values, per-profile values)")
    p.set_defaults(func=cmd_list)
    p = sub.add_parser('run', help="run a paper notebook with papermill into runs/<paper>/<run_id>/")
    p.add_argument('paper', metavar='PAPER', help="paper name (see `trustlib list`) or a notebook path (*.ipynb)")
    p.add_argument('-p', '--param', nargs=2, action='append', metavar=('KEY', 'VALUE'), help="parameter override (value parsed as YAML); repeatable")
    p.add_argument('--profile', default='cpu', choices=PROFILES, help="smoke (CI, < 60 s) | cpu (published results; default) | full (paper scale)")
    p.add_argument('--runs-dir', help="where run folders go (default: $TRUSTLIB_RUNS, else <repo>/runs inside a checkout, else ./runs)")
    p._negative_number_matcher = _NEGATIVE   # -p lr -5e-1: a negative number (also 1e-3 forms, -inf) is a value, not an option
    p.add_argument('--timeout', type=_seconds, help="per-cell timeout in seconds")
    p.add_argument('--rehearse', action='store_true', help="with --profile full: run the full code path offline on tiny stand-ins in the real formats (never published)")
    p.add_argument('--publish', action='store_true', help="after a complete run, copy the executed notebook over nbs/<paper notebook> (needs a clean tree)")
    p.add_argument('--allow-dirty', action='store_true', help="with --publish: publish even if the work tree has uncommitted changes")
    p.add_argument('--allow-large', action='store_true', help="lift the paper's soft upper bounds on sizes (also TRUSTLIB_ALLOW_LARGE=1)")
    p.add_argument('--no-wait', action='store_true', help="if another process is running this run id, skip (exit 1) instead of waiting")
    p.add_argument('-q', '--quiet', action='store_true', help="no progress bar")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser('sweep', help="run a grid of parameters from a YAML spec (finished runs are skipped)")
    p.add_argument('spec', metavar='SPEC.yaml')
    p.add_argument('--workers', type=int, default=1, help="parallel runs (local backend: worker processes on this machine)")
    p.add_argument('--backend', default='local', choices=('local', 'ray'), help="local, or ray: one Ray task per run, with the spec's resources")
    p.add_argument('--address', help="Ray cluster address, e.g. HOST:6379 or ray://HOST:10001 (default: $RAY_ADDRESS, else a new local Ray)")
    p.add_argument('--retries', type=int, default=2, help="times a run whose worker died is submitted again before it is recorded as failed (default 2)")
    p.add_argument('--runs-dir')
    p.add_argument('--allow-large', action='store_true', help=f"allow grids of more than 10,000 points and lift the paper's soft upper bounds")
    p.add_argument('-q', '--quiet', action='store_true')
    p.set_defaults(func=cmd_sweep)
    p = sub.add_parser('notebook', help="copy a paper's notebook (also from an installed wheel) into a folder, to open it in Jupyter")
    p.add_argument('paper'); p.add_argument('dest', nargs='?', help="a folder (default: the working directory) or a .ipynb path")
    p.add_argument('--force', action='store_true', help="overwrite DEST if it exists"); p.add_argument('-q', '--quiet', action='store_true')
    p.set_defaults(func=cmd_notebook)
    p = sub.add_parser('report', help="collect runs, write a report into the runs folder (--publish: nbs/results/dashboard.ipynb), print the verdict table")
    p.add_argument('--runs-dir'); p.add_argument('--profile', default='cpu', choices=PROFILES)
    p.add_argument('--out', help="report notebook to write (default: <runs folder>/dashboard.ipynb)")
    p.add_argument('--sweep', metavar='SPEC.yaml', help="a results page for one sweep (table + a plot per swept parameter) in <runs folder>/sweeps/")
    p.add_argument('--publish', action='store_true', help="write the committed nbs/results/dashboard.ipynb (and its pair); needs clean runs and tree")
    p.add_argument('--allow-dirty', action='store_true', help="with --publish: allow runs made from, and a tree with, uncommitted changes")
    p.set_defaults(func=cmd_report)
    p = sub.add_parser('site', help="(run papers,) report, build and check the website tree; render it if Quarto is installed")
    p.add_argument('--run', action='store_true', help="first run every implemented paper with profile cpu")
    p.add_argument('--check', action='store_true', help="only build and check _proc/ (no runs, no dashboard rebuild, no render): what CI runs")
    p.add_argument('--no-browser', action='store_true', help="render, but skip the headless-Chromium check of the rendered pages")
    p.add_argument('--runs-dir'); p.add_argument('-q', '--quiet', action='store_true')
    p.set_defaults(func=cmd_site)
    return ap

def main(argv:list[str]|None=None) -> int:
    "The `trustlib` command; returns the exit code (0 ok, 1 failed run/check, 2 invalid arguments or parameters)."
    from trustlib.runs import Terminated, error_chain
    ap = _parser()
    try: args = ap.parse_args(argv)
    except SystemExit as e: return int(e.code or 0)
    old = None
    if threading.current_thread() is threading.main_thread():   # SIGTERM: recorded like ctrl-C, then exit 143
        def _term(signum, frame): raise Terminated("received SIGTERM")
        try: old = signal.signal(signal.SIGTERM, _term)
        except (ValueError, OSError): old = None
    one = lambda e: ' '.join(str(e).split())[:1000]
    try: return args.func(args)
    except ConfigError as e:
        print(f"trustlib {args.command}: error: {one(e)}", file=sys.stderr); return 2
    except ImportError as e:
        print(f"trustlib {args.command}: error: {one(e)}", file=sys.stderr); return 2
    except Terminated:
        print("terminated (SIGTERM)", file=sys.stderr); return 143
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr); return 130
    except BrokenPipeError:   # `trustlib list | head`: the reader went away; no traceback
        try: os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, io.UnsupportedOperation): pass
        return 0
    except OSError as e:   # the file system refused (read-only, permissions, missing folder): the user's environment
        print(f"trustlib {args.command}: error: {type(e).__name__}: {one(e)}", file=sys.stderr); return 2
    except Exception as e:   # a bug or an unexpected failure: its chain of causes, one line each, no traceback
        chain = error_chain(e)
        print(f"trustlib {args.command}: unexpected error: {chain[0]}", file=sys.stderr)
        for c in chain[1:]: print(f"  caused by: {c}", file=sys.stderr)
        return 1
    finally:
        if old is not None: signal.signal(signal.SIGTERM, old)


# %% [markdown]
# ## Examples
#
# `list`:

# %%
rc, out, err = run_cli('list')
test_eq(rc, 0)
test_eq(len([l for l in out.splitlines() if l.split() and l.split()[0].isdigit()]), 19)
assert 'disparate_benefits' in out and 'saebench' in out
print(out[:600])

# %% [markdown]
# Invalid parameters are rejected before any work, with exit code 2 and a message naming the parameter:

# %%
TOY = str(find_root()/'tests'/'fixtures'/'toy.ipynb')
runs = tempfile.mkdtemp()
rc, out, err = run_cli('run', TOY, '-p', 'seeed', '1', '--runs-dir', runs)
test_eq(rc, 2); assert "unknown parameter(s) ['seeed']" in err and "allowed: ['fail', 'seed', 'sleep']" in err, err
rc, out, err = run_cli('run', TOY, '-p', 'seed', 'three', '--runs-dir', runs)
test_eq(rc, 2); assert "parameter 'seed': expected int" in err, err
rc, out, err = run_cli('run', 'disparate', '--runs-dir', runs)
test_eq(rc, 2); assert "unknown paper 'disparate'" in err
rc, out, err = run_cli('run', TOY, '--profile', 'gpu')
test_eq(rc, 2); assert "invalid choice: 'gpu'" in err
rc, out, err = run_cli('run', TOY, '-p', 'seed', '-5e-1', '--runs-dir', runs)   # a negative number is a value, not an option
test_eq(rc, 2); assert "parameter 'seed'" in err and "expected" in err, err
for _t in ('nan', 'inf', '-1', 'soon'):
    rc, out, err = run_cli('run', TOY, '--timeout', _t, '--runs-dir', runs)
    test_eq(rc, 2); assert "argument --timeout" in err, err
test_eq(os.listdir(runs), [])   # nothing ran
print(err)

# %% [markdown]
# A run, and a failed run (exit code 1):

# %%
rc, out, err = run_cli('run', TOY, '-p', 'seed', '4', '--profile', 'smoke', '--runs-dir', runs, '-q')
test_eq(rc, 0); assert 'value = 8' in out, out
print(out)
rc, out, err = run_cli('run', TOY, '-p', 'fail', 'true', '--profile', 'smoke', '--runs-dir', runs, '-q')
test_eq(rc, 1); assert 'toy failure requested' in err
print(err)

# %% [markdown]
# `sweep` and `report`:

# %%
spec = Path(tempfile.mkdtemp())/'toy.yaml'
spec.write_text(yaml.safe_dump(dict(notebook=TOY, profile='smoke', grid=dict(seed=[4, 5]))))
rc, out, err = run_cli('sweep', str(spec), '--runs-dir', runs, '-q')
test_eq(rc, 0); assert '2 grid point(s): 2 complete (1 skipped: already complete), 0 failed; 1 executed by this sweep' in out, out
print(out)

# %%
_dash = Path(tempfile.mkdtemp())/'dashboard.ipynb'
rc, out, err = run_cli('report', '--runs-dir', runs, '--out', str(_dash))
test_eq(rc, 0); test_eq(_dash.exists(), True)
test_eq(len([l for l in out.splitlines() if l.split() and l.split()[0].isdigit()]), 19)   # toy runs are not papers
print(out[:500])

# %% [markdown]
# `report` writes into the runs folder unless `--publish` is given; with no runs it says so and exits 2, and a
# committed file is never touched:

# %%
rc, out, err = run_cli('report', '--runs-dir', runs)
test_eq(rc, 0); test_eq((Path(runs)/'dashboard.ipynb').exists(), True)
_empty = tempfile.mkdtemp()
rc, out, err = run_cli('report', '--runs-dir', _empty)
test_eq(rc, 2); assert 'no runs in' in err, err
test_eq(os.listdir(_empty), [])
print(err)

# %% [markdown]
# User errors are one line with exit code 2: a runs folder that is a file, a spec that is an alias bomb, a grid
# too large, a parameter value that is not data:

# %%
_file = Path(tempfile.mkdtemp())/'afile'; _file.write_text('x')
rc, out, err = run_cli('run', TOY, '--profile', 'smoke', '--runs-dir', str(_file), '-q')
test_eq(rc, 2); assert 'is not a directory' in err and len(err.splitlines()) == 1, err
_big = Path(tempfile.mkdtemp())/'big.yaml'
_big.write_text(yaml.safe_dump(dict(notebook=TOY, profile='smoke', grid=dict(seed=list(range(1000)), sleep=list(range(100))))))
rc, out, err = run_cli('sweep', str(_big), '--runs-dir', runs, '-q')
test_eq(rc, 2); assert 'the grid has 100,000 points' in err and '--allow-large' in err, err
rc, out, err = run_cli('run', TOY, '-p', 'seed', '!!binary aGVsbG8=', '--runs-dir', runs, '-q')
test_eq(rc, 2); assert "a value of type bytes" in err, err
print(err)
