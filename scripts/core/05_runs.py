# %% [markdown]
# # runs — executing paper notebooks with papermill
#
# > Validated, atomic, resumable papermill runs of paper notebooks, and sweeps over parameter grids.

# %% [markdown]
# A *run* executes a paper notebook (or any parameterised notebook) with papermill into its own folder
# `runs/<paper>/<run_id>/`: the executed notebook, `metrics.json` (parameters, metrics, verdicts, versions,
# git commit, timings) and whatever the notebook recorded with `trustlib.results.record` (`result.json`,
# `tables/`, `figures/`). Runs are built in a hidden temporary folder and renamed into place when finished,
# so a crashed or killed run never leaves a folder that looks complete. A *sweep* runs a grid of parameters
# and skips grid points that already have a complete run, so it can be restarted after a kill.

# %%
#| default_exp runs

# %%
#| export
from __future__ import annotations
import ast, configparser, hashlib, io, json, os, platform, re, secrets, shutil, socket, subprocess, sys, time
import tokenize, traceback, typing
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from trustlib.config import PROFILES, ConfigError
from trustlib.results import write_json

# %%
#| hide
from fastcore.test import test_eq, test_fail, test_close
import importlib.util, tempfile, yaml


# %% [markdown]
# ## Where things are
#
# The repository root is the folder holding `settings.ini`; paper notebooks live under its `nbs/` folder
# (`nbs_path` in settings.ini) at `get_paper(name).notebook`. Runs go to `$TRUSTLIB_RUNS` or `<root>/runs`
# (git-ignored).

# %%
#| export
def find_root(start:str|Path|None=None) -> Path:
    "The repository root: `start` (default: the working directory) or the first parent holding `settings.ini`."
    here = Path(start or os.getcwd()).expanduser().resolve()
    for d in (here, *here.parents):
        if (d/'settings.ini').is_file(): return d
    raise ConfigError(f"not inside a trustlib checkout: no settings.ini in {here} or its parents; "
                      "run from the repository, or pass root= / nbs_dir= (CLI: cd into the checkout)")

def nbs_path(root:str|Path|None=None) -> Path:
    "The notebooks folder of the checkout (`nbs_path` in settings.ini, default `nbs`)."
    root = find_root(root)
    cp = configparser.ConfigParser(delimiters=['='], interpolation=None)
    cp.read(root/'settings.ini', encoding='utf-8')
    return root/cp['DEFAULT'].get('nbs_path', 'nbs')

def default_runs_dir(root:str|Path|None=None) -> Path:
    "`$TRUSTLIB_RUNS` if set, else `<repository root>/runs`."
    env = os.environ.get('TRUSTLIB_RUNS')
    return Path(env).expanduser() if env else find_root(root)/'runs'

def _get_paper(name:str):
    import trustlib.config   # looked up at call time, so tests can substitute the registry
    return trustlib.config.get_paper(name)


# %%
_root = find_root()
test_eq((_root/'settings.ini').exists(), True)
test_eq(nbs_path(), _root/'nbs')
test_fail(lambda: find_root(tempfile.mkdtemp()), contains="not inside a trustlib checkout")


# %% [markdown]
# `resolve_notebook` maps a paper name (or an explicit notebook path, for tests and user notebooks) to the
# run name and the notebook file, with clear errors for unknown papers and papers that are only planned.

# %%
#| export
def resolve_notebook(paper:str|None=None, # paper name (notebook stem, see `trustlib.config.PAPERS`)
                     notebook:str|Path|None=None, # or: any parameterised notebook; the run name is its stem
                     root:str|Path|None=None, nbs_dir:str|Path|None=None):
    "`(name, notebook_path, paper_entry_or_None)` for a paper name or a notebook path."
    if notebook is not None:
        nb = Path(notebook).expanduser().resolve()
        if not nb.is_file(): raise ConfigError(f"notebook {str(notebook)!r} does not exist")
        return (paper or nb.stem), nb, (_get_paper(paper) if paper else None)
    if not paper: raise ConfigError("give a paper name (see `trustlib list`) or a notebook path")
    p = _get_paper(paper)
    nbs = Path(nbs_dir) if nbs_dir else nbs_path(root)
    nb = nbs/p.notebook
    if not nb.is_file():
        raise ConfigError(f"paper {paper!r} (#{p.number}) is planned: its notebook nbs/{p.notebook} does not exist yet")
    return paper, nb, p


# %%
TOY = _root/'tests'/'fixtures'/'toy.ipynb'
test_eq(resolve_notebook(notebook=TOY)[:2], ('toy', TOY))
test_fail(lambda: resolve_notebook('disparate'), contains="unknown paper 'disparate'")
test_fail(lambda: resolve_notebook('saebench', nbs_dir=tempfile.mkdtemp()), contains="'saebench' (#19) is planned")
test_fail(lambda: resolve_notebook(notebook='nope.ipynb'), contains="does not exist")


# %% [markdown]
# ## The parameters cell
#
# papermill injects parameters after the cell tagged `parameters`. `notebook_parameters` reads that cell
# without executing it (like `papermill.inspect_notebook`, but keeping the full type annotation, e.g.
# `int | None`): name, annotation, default (source text) and the comment as help.

# %%
#| export
def _cell_source(cell) -> str:
    s = cell.get('source', '')
    return ''.join(s) if isinstance(s, list) else s

def notebook_parameters(nb_path:str|Path) -> dict[str, dict[str, Any]]|None:
    "`{name: dict(type, default, help)}` of the notebook's `parameters` cell, or None if it has none."
    nb = json.loads(Path(nb_path).read_text(encoding='utf-8'))
    cells = [c for c in nb.get('cells', []) if c.get('cell_type') == 'code' and 'parameters' in c.get('metadata', {}).get('tags', [])]
    if not cells: return None
    src = _cell_source(cells[0])
    try: tree = ast.parse(src)
    except SyntaxError as e: raise ConfigError(f"cannot parse the parameters cell of {nb_path}: {e}") from e
    comments = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(src).readline):
            if tok.type == tokenize.COMMENT: comments[tok.start[0]] = tok.string.lstrip('#').strip()
    except tokenize.TokenError: pass
    res = {}
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name): targets, ann = [node.target], node.annotation
        elif isinstance(node, ast.Assign): targets, ann = [t for t in node.targets if isinstance(t, ast.Name)], None
        else: continue
        default = ast.get_source_segment(src, node.value) if node.value is not None else None
        for t in targets:
            res[t.id] = dict(type=ast.unparse(ann) if ann is not None else None, default=default,
                             help=comments.get(node.end_lineno, ''), _ann=ann, _value=node.value)
    return res

def _public(info): return {k: {kk: vv for kk, vv in v.items() if not kk.startswith('_')} for k, v in info.items()}


# %%
_p = notebook_parameters(TOY)
test_eq(list(_p), ['profile', 'seed', 'fail', 'sleep'])
test_eq(_public(_p)['seed'], dict(type='int', default='0', help='the metric `value` is 2 * seed'))
_public(_p)

# %% [markdown]
# When a paper's module cannot be imported (or for a notebook that is not a paper), parameter values are
# checked against the annotations of the parameters cell. Annotations are turned into types by walking
# their syntax tree over a fixed vocabulary (`int`, `float`, `str`, `bool`, `list[...]`, `tuple[...]`,
# `dict`, `Literal[...]`, `X | None`, `Optional[...]`) — nothing is evaluated; anything else is not checked.
# Without an annotation, the type of a literal default (`0`, `0.5`, `"a"`, `True`) is used.

# %%
#| export
_NAMES = dict(int=int, float=float, str=str, bool=bool, list=list, dict=dict, tuple=tuple, Any=Any,
              NoneType=type(None), List=list, Dict=dict, Tuple=tuple)

class _Unknown(Exception): pass

def _ann2type(node):
    "A typing object for annotation AST `node` (no evaluation); raises `_Unknown` outside the vocabulary."
    if isinstance(node, ast.Constant):
        if node.value is None: return type(None)
        if isinstance(node.value, str): return _ann2type(ast.parse(node.value, mode='eval').body)
        if node.value is Ellipsis: return Ellipsis
        raise _Unknown()
    if isinstance(node, ast.Name) and node.id in _NAMES: return _NAMES[node.id]
    if isinstance(node, ast.Attribute) and node.attr in _NAMES: return _NAMES[node.attr]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr): return typing.Union[_ann2type(node.left), _ann2type(node.right)]
    if isinstance(node, ast.Subscript):
        base = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, 'id', None)
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if base == 'Literal': return typing.Literal[tuple(ast.literal_eval(e) for e in elts)]
        args = tuple(_ann2type(e) for e in elts)
        if base == 'Optional': return typing.Optional[args[0]]
        if base == 'Union': return typing.Union[args]
        if base in ('list', 'List'): return list[args[0]]
        if base in ('tuple', 'Tuple'): return tuple[args]
        if base in ('dict', 'Dict'): return dict[args]
    raise _Unknown()

def param_type(info:dict):
    "The type to check a parameter against (from its annotation or literal default), or None."
    if info.get('_ann') is not None:
        try: return _ann2type(info['_ann'])
        except (_Unknown, SyntaxError, ValueError, TypeError): return None
    v = info.get('_value')
    if isinstance(v, ast.Constant) and type(v.value) in (bool, int, float, str): return type(v.value)
    return None


# %%
_t = lambda s: _ann2type(ast.parse(s, mode='eval').body)
assert _t('int | None') == typing.Optional[int]
assert _t('tuple[int, ...]') == tuple[int, ...]
assert _t("Literal['a', 'b']") == typing.Literal['a', 'b']
assert _t('typing.Optional[float]') == typing.Optional[float]
test_fail(lambda: _t('np.ndarray'), exc=_Unknown)
assert param_type(_p['fail']) is bool
assert param_type(dict(_ann=None, _value=ast.parse('x = 3').body[0].value)) is int


# %% [markdown]
# ## Validating parameters before any work
#
# `validate_params` rejects names that are not in the notebook's parameters cell, then validates the values
# with the paper's `Config.from_params(profile, **params)` (types, ranges, choices, cross-parameter rules),
# importing the paper module named in the registry. If the module cannot be imported (or for a notebook that
# is not a paper) it falls back to the annotations of the parameters cell. Errors are `ConfigError`s that
# name the parameter and what is allowed.

# %%
#| export
def _check_profile(profile):
    if profile not in PROFILES:
        raise ConfigError(f"parameter 'profile': {profile!r} is not allowed; choose one of {list(PROFILES)}")

def validate_params(paper:str|None=None, # paper name (see `trustlib.config.PAPERS`)
                    params:dict|None=None, # parameter overrides, as papermill will receive them
                    profile:str="cpu", # smoke | cpu | full
                    *, notebook:str|Path|None=None, # or: a notebook path
                    root:str|Path|None=None, nbs_dir:str|Path|None=None) -> dict:
    "Check `params` for `paper`/`notebook` and `profile`; return them unchanged or raise `ConfigError`."
    from trustlib.config import _coerce
    _check_profile(profile)
    params = {} if params is None else params
    if not isinstance(params, dict) or not all(isinstance(k, str) for k in params):
        raise ConfigError(f"parameters must be a mapping of names to values, got {params!r}")
    if 'profile' in params: raise ConfigError("pass the profile as profile=... (CLI: --profile), not as a parameter")
    name, nb, entry = resolve_notebook(paper, notebook, root, nbs_dir)
    info = notebook_parameters(nb)
    if info is None:
        if params: raise ConfigError(f"notebook {nb.name} has no cell tagged 'parameters'; it takes no parameters (got {sorted(params)})")
        return params
    allowed = sorted(n for n in info if n != 'profile')
    unknown = sorted(set(params) - set(info))
    if unknown: raise ConfigError(f"unknown parameter(s) {unknown} for {name}; allowed: {allowed}")
    Config = None
    if entry is not None:
        import importlib
        try: Config = getattr(importlib.import_module(entry.module), 'Config', None)
        except ImportError: Config = None
    if Config is not None:
        fields = set(Config.param_names())
        Config.from_params(profile, **{k: v for k, v in params.items() if k in fields})
        rest = {k: v for k, v in params.items() if k not in fields}
    else: rest = params
    for k, v in rest.items():
        tp = param_type(info[k])
        if tp is None: continue
        if v is None and info[k].get('default') == 'None': continue
        _coerce(k, v, tp)
    return params


# %%
test_eq(validate_params(notebook=TOY, params=dict(seed=3, sleep=1)), dict(seed=3, sleep=1))
test_fail(lambda: validate_params(notebook=TOY, params=dict(seeed=3)), contains="unknown parameter(s) ['seeed'] for toy; allowed: ['fail', 'seed', 'sleep']")
test_fail(lambda: validate_params(notebook=TOY, params=dict(seed='three')), contains="parameter 'seed': expected int")
test_fail(lambda: validate_params(notebook=TOY, params=dict(fail='yes')), contains="parameter 'fail': expected bool")
test_fail(lambda: validate_params(notebook=TOY, profile='laptop'), contains="choose one of ['smoke', 'cpu', 'full']")
test_fail(lambda: validate_params('disparate', {}), contains="unknown paper")


# %% [markdown]
# ## Run ids
#
# A run id is the profile plus a hash of the parameters, so the same parameters always map to the same
# folder: a sweep can see which grid points are finished, and rerunning replaces the previous attempt.

# %%
#| export
def run_id(profile:str, params:dict|None=None) -> str:
    "`<profile>-<first 10 hex digits of sha1 of the canonical JSON of the sorted params>`."
    canon = json.dumps(params or {}, sort_keys=True, separators=(',', ':'), default=str)
    return f"{profile}-{hashlib.sha1(canon.encode()).hexdigest()[:10]}"


# %%
test_eq(run_id('smoke', dict(seed=1, n=2)), run_id('smoke', dict(n=2, seed=1)))
assert run_id('smoke', dict(seed=1)) != run_id('smoke', dict(seed=2)) != run_id('cpu', dict(seed=1))
test_eq(run_id('cpu', {}), 'cpu-bf21a9e8fb')
test_eq(len(run_id('cpu', dict(seed=3))), len('cpu-') + 10)

# %% [markdown]
# ## Provenance
#
# `metrics.json` records the versions of the main packages (read from package metadata, so nothing heavy is
# imported), the git commit and whether the work tree had uncommitted changes, and the host.

# %%
#| export
_VERSION_DISTS = ('trustlib', 'numpy', 'scipy', 'torch', 'pandas', 'scikit-learn', 'matplotlib', 'seaborn',
                  'papermill', 'nbformat', 'ipykernel')

def versions() -> dict[str, str]:
    "Versions of python and of the installed packages in `_VERSION_DISTS`."
    from importlib import metadata
    res = dict(python=platform.python_version())
    for d in _VERSION_DISTS:
        try: res[d] = metadata.version(d)
        except metadata.PackageNotFoundError: pass
    return res

def git_info(path:str|Path) -> dict[str, Any]:
    "`dict(git_commit, git_dirty)` of the repository holding `path` (both None outside git)."
    def _git(*args):
        return subprocess.run(['git', '-C', str(path), *args], capture_output=True, text=True, timeout=20)
    try:
        head = _git('rev-parse', 'HEAD')
        if head.returncode: return dict(git_commit=None, git_dirty=None)
        st = _git('status', '--porcelain', '--untracked-files=no')
        return dict(git_commit=head.stdout.strip(), git_dirty=bool(st.stdout.strip()) if st.returncode == 0 else None)
    except (OSError, subprocess.SubprocessError): return dict(git_commit=None, git_dirty=None)

def _now() -> str: return datetime.now(timezone.utc).isoformat()

def _sha1_file(p:Path) -> str: return hashlib.sha1(Path(p).read_bytes()).hexdigest()


# %%
_v = versions()
assert {'python', 'numpy', 'papermill'} <= set(_v), _v
test_eq(set(git_info(_root)), {'git_commit', 'git_dirty'})
test_eq(git_info(tempfile.mkdtemp()), dict(git_commit=None, git_dirty=None))

# %% [markdown]
# ## Atomic run folders
#
# A run is built in `runs/<paper>/.tmp-<run_id>-<random>/`, which holds an `.owner` file (host, process id).
# Everything that reads runs ignores folders whose name starts with a dot. When the run ends, `_swap_in`
# renames the temporary folder to `runs/<paper>/<run_id>`; if that folder exists (an earlier attempt), it is
# first renamed aside (to another hidden `.tmp-` name) and deleted afterwards, so a reader sees the old run,
# then briefly no run, then the new run — never a half-written one. Temporary folders of killed runs are
# deleted by the next run of the same id once their owner process is gone.

# %%
#| export
_ACTIVE: set[str] = set()   # temporary folders of runs in progress in this process

def _rename(src:Path, dst:Path): os.rename(src, dst)   # one place, so tests can simulate a crash here

def _pid_alive(pid:int) -> bool:
    try: os.kill(pid, 0)
    except ProcessLookupError: return False
    except PermissionError: return True
    return True

def _is_stale(tmp:Path, max_age_s:float=7*24*3600) -> bool:
    "A temporary run folder whose owner process is gone (or, from another host, older than `max_age_s`)."
    if str(tmp) in _ACTIVE: return False
    if '-old-' in tmp.name: return True   # a finished run renamed aside by `_swap_in`, which crashed before deleting it
    try: owner = json.loads((tmp/'.owner').read_text())
    except (OSError, ValueError): owner = {}
    if owner.get('host') == socket.gethostname() and isinstance(owner.get('pid'), int):
        return owner['pid'] == os.getpid() or not _pid_alive(owner['pid'])
    try: return time.time() - tmp.stat().st_mtime > (max_age_s if owner else 3600)
    except OSError: return False

def clean_stale(base:str|Path, rid:str) -> list[Path]:
    "Delete stale `.tmp-<rid>-*` folders under `base`; return them."
    removed = []
    for tmp in Path(base).glob(f".tmp-{rid}-*"):
        if tmp.is_dir() and _is_stale(tmp):
            shutil.rmtree(tmp, ignore_errors=True); removed.append(tmp)
    return removed

def _swap_in(tmp:Path, final:Path):
    "Rename `tmp` to `final`, replacing an existing `final` without ever exposing a partial folder."
    old = None
    if final.exists():
        old = final.with_name(f".tmp-{final.name}-old-{secrets.token_hex(4)}")
        _rename(final, old)
    _rename(tmp, final)
    (final/'.owner').unlink(missing_ok=True)   # kept until now: a temp folder left by a crash stays attributable
    if old is not None: shutil.rmtree(old, ignore_errors=True)


# %% [markdown]
# ## `run_notebook`
#
# Executes the notebook with papermill (kernel `python3`, working directory = the notebook's folder,
# parameters = `dict(profile=profile, **params)`) into the temporary folder, with `TRUSTLIB_RUN_DIR` pointing
# at it, so `trustlib.results.record(result)` in the notebook writes `result.json`, `tables/` and `figures/`
# there. Then it writes `metrics.json` and renames the folder into place.
#
# On failure — an error in a cell (`PapermillExecutionError`), a timeout, Ctrl-C, anything — the folder is
# still published, with `metrics.json` saying `status: "failed"`, the error and its traceback, and the
# partially executed notebook; `result.json` is removed so nothing looks complete. Then `RunFailed` is
# raised (a `KeyboardInterrupt` is re-raised as itself after recording). Runs never call `nbdev_export`.

# %%
#| export
class RunFailed(RuntimeError):
    "A run failed; `run_dir` is its folder (with `metrics.json` status `failed` and the traceback)."
    def __init__(self, msg:str, run_dir:Path|None=None, error:str=""):
        super().__init__(msg); self.run_dir, self.error = run_dir, error

_ANSI = re.compile(r'\x1b\[[0-9;]*[A-Za-z]')

def _describe_error(e:BaseException) -> tuple[str, str]:
    "(one-line error, traceback text); for errors inside the notebook, the notebook's own traceback."
    if type(e).__name__ == 'PapermillExecutionError':
        return f"{e.ename}: {e.evalue}", _ANSI.sub('', '\n'.join(e.traceback))
    msg = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
    return msg, ''.join(traceback.format_exception(type(e), e, e.__traceback__))


# %%
#| export
def run_notebook(paper:str|None=None, # paper name (notebook stem); see `trustlib list`
                 params:dict|None=None, # parameter overrides (validated before any work)
                 profile:str="cpu", # smoke | cpu | full
                 *, notebook:str|Path|None=None, # or: any parameterised notebook (run name = its stem)
                 runs_dir:str|Path|None=None, # default: $TRUSTLIB_RUNS or <repo>/runs
                 kernel:str="python3", # Jupyter kernel name
                 progress:bool=True, # papermill's per-cell progress bar
                 timeout:float|None=None, # per-cell timeout in seconds
                 root:str|Path|None=None, nbs_dir:str|Path|None=None) -> Path:
    "Execute a paper notebook with papermill into `runs/<paper>/<run_id>/`; return that folder."
    params = dict(params or {})
    validate_params(paper, params, profile, notebook=notebook, root=root, nbs_dir=nbs_dir)
    name, nb, _ = resolve_notebook(paper, notebook, root, nbs_dir)
    runs_dir = _local_runs_dir(runs_dir, root if notebook is None else None)
    rid = run_id(profile, params)
    base = runs_dir/name
    base.mkdir(parents=True, exist_ok=True)
    clean_stale(base, rid)
    final = base/rid
    tmp = base/f".tmp-{rid}-{secrets.token_hex(4)}"
    tmp.mkdir()
    _ACTIVE.add(str(tmp))
    (tmp/'.owner').write_text(json.dumps(dict(host=socket.gethostname(), pid=os.getpid())))
    out_nb = tmp/nb.name
    meta = dict(paper=name, run_id=rid, status='running', profile=profile, params=params,
                notebook=nb.name, source_notebook=_relpath(nb), source_sha1=_sha1_file(nb),
                hostname=socket.gethostname(), started=_now())
    t0 = time.perf_counter()
    old_env = os.environ.get('TRUSTLIB_RUN_DIR')
    try:
        import papermill as pm
        os.environ['TRUSTLIB_RUN_DIR'] = str(tmp)   # the kernel inherits it: `record` writes here
        try:
            pm.execute_notebook(str(nb), str(out_nb), parameters=dict(profile=profile, **params), kernel_name=kernel,
                                cwd=str(nb.parent), progress_bar=progress, log_output=False, execution_timeout=timeout,
                                extra_arguments=['--IPKernelApp.log_level=CRITICAL'])   # no kernel log noise on stderr
        finally:
            if old_env is None: os.environ.pop('TRUSTLIB_RUN_DIR', None)
            else: os.environ['TRUSTLIB_RUN_DIR'] = old_env
        res = json.loads((tmp/'result.json').read_text()) if (tmp/'result.json').exists() else {}
        meta.update(status='complete', **{k: res.get(k, d) for k, d in (('config', {}), ('metrics', {}), ('verdicts', []), ('tables', []), ('figures', []))})
        meta.update(versions=versions(), **git_info(nb.parent), finished=_now(), duration_s=round(time.perf_counter() - t0, 3))
        write_json(tmp/'metrics.json', meta)
        _swap_in(tmp, final)
        return final
    except BaseException as e:
        err, tb = _describe_error(e)
        try:
            (tmp/'result.json').unlink(missing_ok=True)   # never leave a result that looks complete
            meta.update(status='failed', error=err, traceback=tb, config={}, metrics={}, verdicts=[], tables=[], figures=[],
                        versions=versions(), **git_info(nb.parent), finished=_now(), duration_s=round(time.perf_counter() - t0, 3))
            if not out_nb.exists(): meta['notebook'] = None
            write_json(tmp/'metrics.json', meta)
            _swap_in(tmp, final)
            where = final
        except BaseException as e2:   # recording failed too (disk full, crash in rename): leave the hidden temp folder
            where, err = None, f"{err} (and recording the failure failed: {type(e2).__name__}: {e2})"
        if isinstance(e, (KeyboardInterrupt, SystemExit)): raise
        raise RunFailed(f"run {name}/{rid} failed: {err}" + (f"; see {where}/metrics.json" if where else ""), where, err) from e
    finally:
        _ACTIVE.discard(str(tmp))

def _local_runs_dir(runs_dir, root=None) -> Path:
    "`runs_dir` (default `default_runs_dir(root)`) as an absolute local path; URLs are rejected."
    if runs_dir is not None and re.match(r'^[a-z][a-z0-9+.-]*://', str(runs_dir)):
        raise ConfigError(f"runs_dir {str(runs_dir)!r}: run folders need a file system with atomic rename; "
                          "on a cluster use a shared mount (NFS, EFS, a bucket mounted with gcsfuse/s3fs) instead of a URL")
    return (Path(runs_dir).expanduser() if runs_dir is not None else default_runs_dir(root)).resolve()

def _relpath(p:Path) -> str:
    try: return str(Path(p).resolve().relative_to(find_root(Path(p).parent)))
    except (ConfigError, ValueError): return str(p)


# %% [markdown]
# `is_complete` and `load_run` read a run folder. Hidden folders (`.tmp-*`) are never complete.

# %%
#| export
def load_run(run_dir:str|Path) -> dict:
    "The `metrics.json` of `run_dir` as a dict."
    p = Path(run_dir)/'metrics.json'
    if not p.is_file(): raise FileNotFoundError(f"{run_dir} is not a run folder (no metrics.json)")
    return json.loads(p.read_text(encoding='utf-8'))

def is_complete(run_dir:str|Path) -> bool:
    "True if `run_dir` is a published run whose `metrics.json` says `status: complete`."
    run_dir = Path(run_dir)
    if run_dir.name.startswith('.'): return False
    try: return load_run(run_dir).get('status') == 'complete'
    except (OSError, ValueError): return False

def iter_runs(runs_dir:str|Path|None=None):
    "Yield the published run folders `runs_dir/<paper>/<run_id>` (hidden folders are skipped)."
    runs_dir = Path(runs_dir) if runs_dir is not None else default_runs_dir()
    if not runs_dir.is_dir(): return
    for pd_ in sorted(runs_dir.iterdir()):
        if not pd_.is_dir() or pd_.name.startswith('.'): continue
        for rd in sorted(pd_.iterdir()):
            if rd.is_dir() and not rd.name.startswith('.') and (rd/'metrics.json').is_file(): yield rd


# %% [markdown]
# A run of the toy notebook (`tests/fixtures/toy.ipynb`: its metric `value` is twice the seed):

# %%
runs = Path(tempfile.mkdtemp())/'runs'
d = run_notebook(notebook=TOY, params=dict(seed=3), profile='smoke', runs_dir=runs, progress=False)
m = load_run(d)
test_eq(d, runs.resolve()/'toy'/run_id('smoke', dict(seed=3)))
test_eq((m['status'], m['paper'], m['profile'], m['params'], m['metrics']['value']), ('complete', 'toy', 'smoke', dict(seed=3), 6))
test_eq(m['config'], dict(profile='smoke', seed=3, fail=False, sleep=0.0))
test_eq(m['verdicts'][0]['verdict'], 'reproduced')
test_eq(sorted(p.name for p in d.iterdir()), ['metrics.json', 'result.json', 'toy.ipynb'])
test_eq(is_complete(d), True)
test_eq([p.name for p in (runs/'toy').iterdir()], [d.name])   # no temporary folders left
{k: m[k] for k in ('paper', 'run_id', 'status', 'profile', 'params', 'metrics', 'notebook', 'git_commit', 'duration_s')}

# %% [markdown]
# The executed notebook carries papermill's `injected-parameters` cell:

# %%
_cells = json.loads((d/'toy.ipynb').read_text())['cells']
_inj = [c for c in _cells if 'injected-parameters' in c['metadata'].get('tags', [])]
test_eq(len(_inj), 1)
assert 'seed = 3' in _cell_source(_inj[0]) and 'profile = "smoke"' in _cell_source(_inj[0])

# %% [markdown]
# A failing run is recorded as failed, with the notebook's traceback, and `RunFailed` is raised:

# %%
try: run_notebook(notebook=TOY, params=dict(seed=1, fail=True), profile='smoke', runs_dir=runs, progress=False); raise AssertionError('no error')
except RunFailed as e: failed = e
mf = load_run(failed.run_dir)
test_eq((mf['status'], mf['error']), ('failed', 'RuntimeError: toy failure requested (seed=1)'))
assert 'toy failure requested' in mf['traceback'] and 'raise RuntimeError' in mf['traceback']
test_eq((failed.run_dir/'result.json').exists(), False)
test_eq(is_complete(failed.run_dir), False)
test_eq(mf['metrics'], {})
print(mf['traceback'][-300:])

# %% [markdown]
# ## Sweeps
#
# A sweep spec is data (a dict, or a YAML file read with `yaml.safe_load`):
#
# ```yaml
# paper: disparate_benefits     # or  notebook: path/to/notebook.ipynb
# profile: smoke                # default: cpu
# params: {n_members: 5}        # fixed overrides
# grid: {seed: [0, 1, 2, 3]}    # every combination of these values is one run
# ```
#
# The spec and every grid point are validated before the first run starts. Grid points that already have a
# complete run are skipped (so a killed sweep resumes where it stopped); failed runs are run again.

# %%
#| export
_SPEC_KEYS = ('paper', 'notebook', 'profile', 'params', 'grid')

def load_spec(spec:dict|str|Path) -> dict:
    "Read and check a sweep spec (dict or YAML file); relative notebook paths are resolved against the cwd, then the spec's folder."
    src = None
    if isinstance(spec, (str, Path)):
        src = Path(spec).expanduser()
        if not src.is_file(): raise ConfigError(f"sweep spec {str(spec)!r} does not exist")
        import yaml
        try: spec = yaml.safe_load(src.read_text(encoding='utf-8'))
        except yaml.YAMLError as e: raise ConfigError(f"sweep spec {src}: invalid YAML: {e}") from e
    if not isinstance(spec, dict): raise ConfigError(f"a sweep spec must be a mapping with keys {list(_SPEC_KEYS)}, got {type(spec).__name__}")
    unknown = sorted(set(map(str, spec)) - set(_SPEC_KEYS))
    if unknown: raise ConfigError(f"sweep spec: unknown key(s) {unknown}; allowed: {list(_SPEC_KEYS)}")
    if bool(spec.get('paper')) == bool(spec.get('notebook')): raise ConfigError("sweep spec: give exactly one of 'paper' or 'notebook'")
    spec = dict(spec)
    spec.setdefault('profile', 'cpu'); _check_profile(spec['profile'])
    for k in ('params', 'grid'):
        spec[k] = {} if spec.get(k) is None else spec[k]
        if not isinstance(spec[k], dict) or not all(isinstance(n, str) for n in spec[k]):
            raise ConfigError(f"sweep spec: {k!r} must be a mapping of parameter names to values")
    for n, vals in spec['grid'].items():
        if not isinstance(vals, list) or not vals: raise ConfigError(f"sweep spec: grid {n!r} must be a non-empty list of values, got {vals!r}")
    both = sorted(set(spec['params']) & set(spec['grid']))
    if both: raise ConfigError(f"sweep spec: parameter(s) {both} are both fixed (params) and swept (grid)")
    if 'profile' in spec['params']: raise ConfigError("sweep spec: set the profile with the 'profile' key (or sweep it in 'grid')")
    if spec.get('notebook'):
        nb = Path(spec['notebook']).expanduser()
        if not nb.is_absolute() and not nb.exists() and src is not None and (src.parent/nb).exists(): nb = src.parent/nb
        spec['notebook'] = str(nb.resolve())
    return spec

def grid_points(spec:dict) -> list[tuple[str, dict]]:
    "`(profile, params)` for every combination of the grid (in grid order)."
    import itertools
    names = list(spec['grid'])
    pts = []
    for combo in itertools.product(*(spec['grid'][n] for n in names)):
        p = {**spec['params'], **dict(zip(names, combo))}
        pts.append((p.pop('profile', spec['profile']), p))
    return pts


# %%
_spec = load_spec(dict(notebook=str(TOY), profile='smoke', params=dict(sleep=0.0), grid=dict(seed=[0, 1], fail=[False])))
test_eq(grid_points(_spec), [('smoke', dict(sleep=0.0, seed=0, fail=False)), ('smoke', dict(sleep=0.0, seed=1, fail=False))])
test_eq(grid_points(load_spec(dict(notebook=str(TOY), grid=dict(profile=['smoke', 'cpu'])))), [('smoke', {}), ('cpu', {})])
test_fail(lambda: load_spec(dict(paper='toy', notebook='x')), contains="exactly one of 'paper' or 'notebook'")
test_fail(lambda: load_spec(dict(notebook=str(TOY), grid=dict(seed=3))), contains="grid 'seed' must be a non-empty list")
test_fail(lambda: load_spec(dict(notebook=str(TOY), grids={})), contains="unknown key(s) ['grids']")
test_fail(lambda: load_spec(dict(notebook=str(TOY), params=dict(seed=1), grid=dict(seed=[1]))), contains="both fixed (params) and swept")


# %%
#| export
def _sweep_job(job:dict) -> dict:
    "Run one grid point (in a worker process or a Ray task); never raises for a failed run."
    try:
        d = run_notebook(job['paper'], job['params'], job['profile'], notebook=job['notebook'], runs_dir=job['runs_dir'],
                         progress=False, root=job.get('root'), nbs_dir=job.get('nbs_dir'))
        return dict(status='complete', path=str(d), error=None)
    except RunFailed as e: return dict(status='failed', path=str(e.run_dir) if e.run_dir else None, error=e.error)
    except Exception as e: return dict(status='failed', path=None, error=f"{type(e).__name__}: {e}")

def _run_local(jobs, todo, workers, results, pbar):
    if workers == 1:
        for i in todo: results[i] = _sweep_job(jobs[i]); pbar.update()
        return
    import concurrent.futures as cf, multiprocessing as mp
    import trustlib.runs   # the library's own function: picklable by reference even when called from a notebook
    # spawn: safe when the caller has threads (a Jupyter kernel, tqdm); workers import trustlib afresh
    ex = cf.ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context('spawn'))
    try:
        futs = {ex.submit(trustlib.runs._sweep_job, jobs[i]): i for i in todo}
        for f in cf.as_completed(futs):
            i = futs[f]
            try: results[i] = f.result()
            except Exception as e: results[i] = dict(status='failed', path=None, error=f"worker died: {type(e).__name__}: {e}")
            pbar.update()
    except BaseException:
        ex.shutdown(wait=False, cancel_futures=True); raise
    ex.shutdown(wait=True)

def _run_ray(jobs, todo, results, pbar, address):
    try: import ray
    except ImportError as e: raise ImportError('backend="ray" needs Ray, which is not installed: pip install "trustlib[ray]"') from e
    if not ray.is_initialized(): ray.init(address=address)
    import trustlib.runs
    task = ray.remote(num_cpus=1)(trustlib.runs._sweep_job)
    refs = {task.remote(jobs[i]): i for i in todo}
    pending = list(refs)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        for r in done: results[refs[r]] = ray.get(r); pbar.update()


# %%
#| export
def sweep(spec:dict|str|Path, # a spec dict or the path of a YAML spec
          workers:int=1, # parallel runs (local backend; 1 = one after the other in this process)
          backend:str="local", # 'local' (process pool) or 'ray' (one Ray task per run)
          ray_address:str|None=None, # passed to `ray.init(address=...)`; None starts/joins a local Ray
          runs_dir:str|Path|None=None, # default: $TRUSTLIB_RUNS or <repo>/runs
          progress:bool=True, # tqdm progress over the runs
          root:str|Path|None=None, nbs_dir:str|Path|None=None):
    "Run every grid point of `spec` that has no complete run yet; return a DataFrame with one row per grid point."
    import pandas as pd
    from tqdm import tqdm
    if backend not in ('local', 'ray'): raise ConfigError(f"backend {backend!r} is not allowed; choose one of ['local', 'ray']")
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1: raise ConfigError(f"workers must be an int >= 1, got {workers!r}")
    spec = load_spec(spec)
    pts = grid_points(spec)
    for prof, p in pts: validate_params(spec.get('paper'), p, prof, notebook=spec.get('notebook'), root=root, nbs_dir=nbs_dir)
    name, nb, _ = resolve_notebook(spec.get('paper'), spec.get('notebook'), root, nbs_dir)
    runs_dir = str(_local_runs_dir(runs_dir, root if not spec.get('notebook') else None))
    root_s = str(find_root(root)) if spec.get('paper') and nbs_dir is None else None
    jobs, seen = [], {}
    for prof, p in pts:
        jobs.append(dict(paper=spec.get('paper'), notebook=spec.get('notebook'), params=p, profile=prof, runs_dir=runs_dir,
                         root=root_s, nbs_dir=str(nbs_dir) if nbs_dir else None, run_id=run_id(prof, p)))
    results, todo = {}, []
    for i, j in enumerate(jobs):
        final = Path(runs_dir)/name/j['run_id']
        if j['run_id'] in seen: continue   # duplicate grid point: same run
        seen[j['run_id']] = i
        if is_complete(final): results[i] = dict(status='complete', path=str(final), error=None, skipped=True)
        else: todo.append(i)
    with tqdm(total=len(seen), initial=len(seen) - len(todo), desc=f"sweep {name}", unit='run', disable=not progress) as pbar:
        if backend == 'ray': _run_ray(jobs, todo, results, pbar, ray_address)
        else: _run_local(jobs, todo, workers, results, pbar)
    rows = []
    for i, j in enumerate(jobs):
        r = results.get(i) or results[seen[j['run_id']]]
        row = dict(paper=name, run_id=j['run_id'], status=r['status'], path=r['path'], skipped=bool(r.get('skipped', False)), profile=j['profile'])
        for k in spec['grid']:
            if k != 'profile': row[k if k not in row else f'param_{k}'] = j['params'].get(k)
        rows.append({**row, 'error': r['error']})
    return pd.DataFrame(rows)


# %% [markdown]
# A 4-point sweep of the toy notebook (the seed-3 run from above is already complete, so it is skipped), then
# the same sweep again: everything is skipped. A YAML file works the same way (`sweep('spec.yaml')`).

# %%
spec = dict(notebook=str(TOY), profile='smoke', grid=dict(seed=[0, 1, 2, 3]))
df1 = sweep(spec, workers=2, runs_dir=runs, progress=False)
test_eq(list(df1.status), ['complete'] * 4)
test_eq(list(df1.skipped), [False, False, False, True])
test_eq([load_run(p)['metrics']['value'] for p in df1.path], [0, 2, 4, 6])
df2 = sweep(spec, workers=2, runs_dir=runs, progress=False)
test_eq(list(df2.skipped), [True] * 4)
test_eq(list(df2.run_id), list(df1.run_id))
df1

# %% [markdown]
# A failed grid point does not stop the sweep; it shows as `failed` and is run again by the next sweep.
# Specs are checked before anything runs:

# %%
_y = Path(tempfile.mkdtemp())/'spec.yaml'
_y.write_text(yaml.safe_dump(dict(notebook=str(TOY), profile='smoke', params=dict(fail=True), grid=dict(seed=[7]))))
df3 = sweep(_y, runs_dir=runs, progress=False)
test_eq((df3.status[0], df3.skipped[0]), ('failed', False))
assert 'toy failure requested (seed=7)' in df3.error[0]
test_fail(lambda: sweep(dict(notebook=str(TOY), grid=dict(seed=[0, 'x'])), runs_dir=runs), contains="parameter 'seed': expected int")
test_fail(lambda: sweep(spec, backend='slurm', runs_dir=runs), contains="choose one of ['local', 'ray']")

# %% [markdown]
# ## Ray
#
# `sweep(spec, backend="ray", ray_address="ray://head:10001")` sends each grid point to a Ray cluster as one
# task (`ray.remote(num_cpus=1)`), after the same validation and skipping. Ray is an optional dependency
# (`pip install "trustlib[ray]"`). Every node needs trustlib installed and the checkout (notebooks) at the
# same path, and `runs_dir` must be a file system that all nodes share (NFS, EFS, or a bucket mounted with
# gcsfuse/s3fs): a run folder is published by an atomic rename, which object stores do not have. papermill's
# own I/O handlers can read and write *notebooks* at `s3://` and `gs://` URLs, but a run folder is more than
# one notebook (metrics, tables, figures) and object storage is not implemented here: a URL `runs_dir` is
# rejected before any task starts, with a message pointing to a shared mount.

# %%
_has_ray = importlib.util.find_spec('ray') is not None
if not _has_ray: test_fail(lambda: sweep(spec, backend='ray', runs_dir=runs, progress=False), contains='pip install "trustlib[ray]"')
test_fail(lambda: sweep(spec, backend='ray', runs_dir='s3://bucket/runs', progress=False), contains="use a shared mount")
