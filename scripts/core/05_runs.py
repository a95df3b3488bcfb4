# %% [markdown]
# # runs — executing paper notebooks with papermill
#
# > Validated, atomic, resumable papermill runs of paper notebooks, and sweeps over parameter grids.

# %% [markdown]
# A *run* executes a paper notebook (or any parameterised notebook) with papermill into its own folder
# `runs/<paper>/<run_id>/`: the executed notebook, `metrics.json` (parameters, metrics, verdicts, versions,
# git commit, timings) and whatever the notebook recorded with `trustlib.results.record` (`result.json`,
# `tables/`, `figures/`). The rules a run keeps, whatever the input and whatever happens to the process:
#
# - Parameters are data: validated JSON-like values (null, bool, int, float, str, lists, string-keyed
#   mappings), checked against the paper's `Config` or the notebook's type annotations before any work, and
#   written into the notebook by a renderer that can only produce literals (papermill's own is not used).
# - The run id is a hash of the *canonical* parameters: `{}`, `{seed: 0}` and `{seed: 0.0}` are one run.
# - One process at a time per run id (a lock file, across processes and hosts on a shared file system).
# - A run is built in a hidden temporary folder and renamed into place when finished; a complete run is only
#   ever replaced by another complete run of the same id. A failed or interrupted re-run is recorded beside
#   it, in `<run_id>.failed-<UTC time>/`.
# - A *sweep* runs a grid of parameters and skips grid points whose complete run was made from the same
#   notebook source with the same parameters and the same versions of the packages that can change results
#   (`_RESULT_VERSIONS`: python, trustlib, numpy, scipy, torch, pandas, scikit-learn, matplotlib, seaborn), so it
#   can be restarted after a kill, and an upgrade runs the grid again.

# %%
#| default_exp runs

# %%
#| export
from __future__ import annotations
import ast, configparser, contextlib, hashlib, io, json, keyword, math, os, platform, re, secrets, shutil, signal, socket
import subprocess, sys, tempfile, threading, time, tokenize, traceback, typing
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from trustlib.config import PROFILES, ConfigError
from trustlib.results import write_json

# %%
#| hide
from fastcore.test import test_eq, test_fail, test_close
import importlib.util, yaml


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
                      "run inside the checkout, or (from Python) pass root= or nbs_dir=")

def _package_dir() -> Path:
    import trustlib
    return Path(trustlib.__file__).resolve().parent

def package_checkout() -> Path|None:
    "The checkout the imported `trustlib` package lives in (an editable install), or None (a wheel)."
    d = _package_dir().parent
    return d if (d/'settings.ini').is_file() and (d/'nbs').is_dir() else None

def packaged_notebooks() -> Path|None:
    "The paper notebooks a wheel ships (`trustlib/notebooks/`), or None in a checkout."
    d = _package_dir()/'notebooks'
    return d if (d/'papers').is_dir() else None

def nbs_path(root:str|Path|None=None) -> Path:
    "The notebooks folder: the checkout's around `root` (default: the working directory); outside any checkout, the one the package was installed from (editable), else the notebooks shipped in the wheel."
    try: root = find_root(root)
    except ConfigError:
        if root is not None: raise
        root = package_checkout()
        if root is None:
            shipped = packaged_notebooks()
            if shipped is None: raise
            return shipped
    cp = configparser.ConfigParser(delimiters=['='], interpolation=None)
    cp.read(root/'settings.ini', encoding='utf-8')
    return root/cp['DEFAULT'].get('nbs_path', 'nbs')

def default_runs_dir(root:str|Path|None=None) -> Path:
    "`$TRUSTLIB_RUNS` if set, else `<repository root>/runs` inside a checkout, else `./runs`."
    env = os.environ.get('TRUSTLIB_RUNS')
    if env: return Path(env).expanduser()
    try: return find_root(root)/'runs'
    except ConfigError:
        if root is not None: raise
        return Path.cwd()/'runs'

def _get_paper(name:str):
    import trustlib.config   # looked up at call time, so tests can substitute the registry
    return trustlib.config.get_paper(name)


# %%
_root = find_root()
test_eq((_root/'settings.ini').exists(), True)
test_eq(nbs_path(), _root/'nbs')
test_fail(lambda: find_root(tempfile.mkdtemp()), contains="not inside a trustlib checkout")
# outside any checkout: the notebooks of the checkout the package came from, runs under ./runs
test_eq(package_checkout(), _root); test_eq(packaged_notebooks(), None)
_cwd, _env = os.getcwd(), os.environ.pop('TRUSTLIB_RUNS', None)
_away = Path(tempfile.mkdtemp()).resolve()
try:
    os.chdir(_away)
    test_eq(nbs_path(), _root/'nbs'); test_eq(default_runs_dir(), _away/'runs')
    test_fail(lambda: nbs_path(_away), contains="not inside a trustlib checkout")   # an explicit root must be a checkout
finally:
    os.chdir(_cwd)
    if _env is not None: os.environ['TRUSTLIB_RUNS'] = _env


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
    """`{name: dict(type, default, help)}` of the notebook's `parameters` cell, or None if it has none. Parsed once per
    content of the file (its SHA-1: a notebook rewritten within the file system's time resolution is read again); each
    call returns fresh dicts."""
    raw = Path(nb_path).read_bytes()
    sha = hashlib.sha1(raw).hexdigest()
    if sha not in _PARAMS_CACHE:
        if len(_PARAMS_CACHE) >= 64: _PARAMS_CACHE.pop(next(iter(_PARAMS_CACHE)))   # the oldest entry goes
        _PARAMS_CACHE[sha] = _parse_parameters(raw, str(nb_path))
    res = _PARAMS_CACHE[sha]
    return None if res is None else {k: dict(v) for k, v in res.items()}

_PARAMS_CACHE: dict = {}   # SHA-1 of a notebook's bytes -> its parsed parameters cell (at most 64 entries)

def _segment(lines:list[bytes], node) -> str:
    "The source text of `node` (as `ast.get_source_segment`, from the cell's lines as UTF-8 bytes: linear in the node's size)."
    a, b = node.lineno - 1, node.end_lineno - 1
    if a == b: return lines[a][node.col_offset:node.end_col_offset].decode('utf-8')
    return b''.join([lines[a][node.col_offset:], *lines[a + 1:b], lines[b][:node.end_col_offset]]).decode('utf-8')

def _parse_parameters(raw:bytes, nb_path:str):
    nb = json.loads(raw.decode('utf-8'))
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
    lines = [l.encode('utf-8') for l in src.splitlines(keepends=True)] + [b'']
    res = {}
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name): targets, ann = [node.target], node.annotation
        elif isinstance(node, ast.Assign): targets, ann = [t for t in node.targets if isinstance(t, ast.Name)], None
        else: continue
        default = _segment(lines, node.value) if node.value is not None else None
        for t in targets:
            res[t.id] = dict(type=ast.unparse(ann) if ann is not None else None, default=default,
                             help=comments.get(node.end_lineno, ''), _ann=ann, _value=node.value)
    return res

def _public(info): return {k: {kk: vv for kk, vv in v.items() if not kk.startswith('_')} for k, v in info.items()}


# %%
_p = notebook_parameters(TOY)
test_eq(list(_p), ['profile', 'seed', 'fail', 'sleep'])
_src = 'a: int = 1  # one\nb: dict = {"é": [1,\n   2]}  # two lines\nc = "x" ; d: str = \'ü\''
_tree = ast.parse(_src); _ls = [l.encode('utf-8') for l in _src.splitlines(keepends=True)] + [b'']
test_eq([_segment(_ls, n.value) for n in _tree.body], [ast.get_source_segment(_src, n.value) for n in _tree.body])   # as the library's
_q = notebook_parameters(TOY); _q['seed']['default'] = 'changed'; test_eq(notebook_parameters(TOY)['seed']['default'], '0')   # a caller's change does not reach the cache
_tmpnb = Path(tempfile.mkdtemp())/'p.ipynb'; _j = json.loads(Path(TOY).read_text())
_tmpnb.write_text(json.dumps(_j)); test_eq(notebook_parameters(_tmpnb)['seed']['default'], '0')
for _c in _j['cells']:
    if 'parameters' in _c['metadata'].get('tags', []): _c['source'] = _cell_source(_c).replace('seed: int = 0', 'seed: int = 7')
_tmpnb.write_text(json.dumps(_j)); test_eq(notebook_parameters(_tmpnb)['seed']['default'], '7')   # same size, rewritten at once: read again
shutil.rmtree(_tmpnb.parent)
test_eq(_public(_p)['seed'], dict(type='int', default='0', help='the metric `value` is 2 * seed'))
_public(_p)

# %% [markdown]
# Every parameter of a runnable notebook must be declared with a type annotation: an unannotated parameter is
# rejected (its value could not be checked). For a paper, the paper's `Config` validates the values; every
# other parameter (and every parameter of a notebook that is not a paper) is checked against its annotation.
# Annotations are turned into types by walking their syntax tree over a fixed vocabulary (`int`, `float`,
# `str`, `bool`, `list[...]`, `tuple[...]`, `dict`, `Any`, `Literal[...]`, `X | None`, `Optional[...]`) —
# nothing is evaluated; an annotation outside it is rejected too.

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
    "The type declared by a parameter's annotation, or None (no annotation, or one outside the vocabulary)."
    if info.get('_ann') is None: return None
    try: return _ann2type(info['_ann'])
    except (_Unknown, SyntaxError, ValueError, TypeError): return None


# %%
_t = lambda s: _ann2type(ast.parse(s, mode='eval').body)
assert _t('int | None') == typing.Optional[int]
assert _t('tuple[int, ...]') == tuple[int, ...]
assert _t("Literal['a', 'b']") == typing.Literal['a', 'b']
assert _t('typing.Optional[float]') == typing.Optional[float]
test_fail(lambda: _t('np.ndarray'), exc=_Unknown)
assert param_type(_p['fail']) is bool
test_eq(param_type(dict(_ann=None, _value=ast.parse('x = 3').body[0].value)), None)   # unannotated: no type

# %% [markdown]
# ## Parameter values are data
#
# `check_value` accepts exactly the JSON-like values YAML and JSON give (plus tuples and numpy scalars from
# Python callers), as plain built-in objects: `None`, `bool`, `int`, `float`, `str`, lists and mappings with
# string keys, at most `MAX_VALUE_NODES` items in all and nested at most `MAX_DEPTH` deep. Everything else —
# bytes (YAML `!!binary`), dates, sets, objects, subclasses of the built-in types (whose `repr` could be
# anything) — is refused. Non-finite floats are refused unless `allow_nonfinite` (a paper's `Config` may
# declare them). Messages quote values capped to `MAX_QUOTE` characters (`short`), however big the value.

# %%
#| export
MAX_VALUE_NODES = 10_000   # items in one parameter value (all levels)
MAX_DEPTH = 20
MAX_QUOTE = 200            # characters of a value quoted in an error message

def short(v, n:int=MAX_QUOTE) -> str:
    "`repr(v)` capped to `n` characters (and never built in full for big containers)."
    if isinstance(v, (list, tuple, dict, set)) and len(v) > n: v = type(v).__name__ + f" of {len(v)} items"
    try: s = repr(v) if not isinstance(v, str) else repr(v[:n + 1])
    except Exception: s = f"<{type(v).__name__}>"
    return s if len(s) <= n else s[:n - 1] + '…'

def _count_nodes(v, limit:int) -> int:
    "Number of items in `v` (all levels), counting shared references each time; stops past `limit`."
    n, stack = 0, [v]
    while stack:
        x = stack.pop(); n += 1
        if n > limit: return n
        if isinstance(x, dict): stack.extend(x.keys()); stack.extend(x.values())
        elif isinstance(x, (list, tuple, set)): stack.extend(x)
    return n

def check_value(name:str, v, allow_nonfinite:bool=False, _depth:int=0):
    "`v` as plain JSON-like data (tuples become lists, numpy scalars Python numbers), or raise `ConfigError`."
    if _depth == 0 and _count_nodes(v, MAX_VALUE_NODES) > MAX_VALUE_NODES:
        raise ConfigError(f"parameter {name!r}: the value has more than {MAX_VALUE_NODES} items; parameters are small data")
    if _depth > MAX_DEPTH: raise ConfigError(f"parameter {name!r}: the value is nested more than {MAX_DEPTH} levels deep")
    t = type(v)
    if v is None or t is bool or t is str: return v
    if t is int: return v
    if t is float:
        if not math.isfinite(v) and not allow_nonfinite:
            raise ConfigError(f"parameter {name!r}: {v!r} is not a finite number")
        return v
    if t.__module__ == 'numpy' and hasattr(v, 'dtype') and getattr(v, 'ndim', 1) == 0 and v.dtype.kind in 'biuf':
        return check_value(name, v.item(), allow_nonfinite, _depth)
    if t in (list, tuple): return [check_value(f"{name}[{i}]", x, allow_nonfinite, _depth + 1) for i, x in enumerate(v)]
    if t is dict:
        bad = [k for k in v if type(k) is not str]
        if bad: raise ConfigError(f"parameter {name!r}: mapping keys must be strings, got {short(bad[0])}")
        return {k: check_value(f"{name}[{k!r}]", x, allow_nonfinite, _depth + 1) for k, x in v.items()}
    raise ConfigError(f"parameter {name!r}: a value of type {t.__name__} ({short(v)}) is not allowed; parameters are "
                      "JSON-like data: null, true/false, numbers, strings, lists and mappings with string keys")


# %%
test_eq(check_value('x', (1, [2.5, 'a'], dict(k=None))), [1, [2.5, 'a'], dict(k=None)])
test_fail(lambda: check_value('x', b'hello'), contains="parameter 'x': a value of type bytes")
test_fail(lambda: check_value('x', {1: 2}), contains="mapping keys must be strings")
test_fail(lambda: check_value('x', [float('nan')]), contains="parameter 'x[0]': nan is not a finite number")
class _Evil(str):
    def __repr__(self): return '__import__("os").system("true")'
test_fail(lambda: check_value('x', _Evil('a')), contains="a value of type _Evil")
_bomb = ['a'] * 10; [_bomb := [_bomb] * 10 for _ in range(8)]   # 10**9 leaves by shared references
test_fail(lambda: check_value('x', _bomb), contains="more than 10000 items")
assert len(short('x' * 10**6)) <= MAX_QUOTE

# %% [markdown]
# ## Writing the parameters into the notebook
#
# `render_parameters` writes the `injected-parameters` cell: one `name = literal` line per parameter. Each
# literal is built from the checked value (strings through `json.dumps`, which Python reads as the same
# string; non-finite floats as `float('inf')`), and the finished cell is parsed again and accepted only if
# every statement assigns a plain name to a literal that evaluates back to the value given — so no value,
# whatever its text, can become code.

# %%
#| export
_NONFINITE = {'inf': "float('inf')", '-inf': "float('-inf')", 'nan': "float('nan')"}

def _literal(v) -> str:
    if v is None or type(v) is bool: return repr(v)
    if type(v) is int: return repr(v)
    if type(v) is float: return repr(v) if math.isfinite(v) else _NONFINITE[repr(v)]
    if type(v) is str: return json.dumps(v, ensure_ascii=False)
    if type(v) is list: return '[' + ', '.join(_literal(x) for x in v) + ']'
    if type(v) is dict: return '{' + ', '.join(f"{json.dumps(k, ensure_ascii=False)}: {_literal(x)}" for k, x in v.items()) + '}'
    raise ConfigError(f"cannot write a value of type {type(v).__name__} into a notebook")

def _eval_literal(node):
    "The value of literal AST `node`; raises `ConfigError` for anything that is not a literal."
    if isinstance(node, ast.Constant) and (node.value is None or type(node.value) in (bool, int, float, str)): return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
       and type(node.operand.value) in (int, float): return -node.operand.value
    if isinstance(node, ast.List): return [_eval_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict) and all(k is not None for k in node.keys):
        return {_eval_literal(k): _eval_literal(v) for k, v in zip(node.keys, node.values)}
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == 'float' and not node.keywords
        and len(node.args) == 1 and isinstance(node.args[0], ast.Constant) and node.args[0].value in ('inf', '-inf', 'nan')):
        return float(node.args[0].value)
    raise ConfigError(f"refusing to write parameters: {ast.dump(node)[:MAX_QUOTE]} is not a literal")

def _same(a, b) -> bool:
    "Equal as data (types included; NaN equals NaN)."
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)

def render_parameters(params:dict) -> str:
    "The source of the `injected-parameters` cell for checked `params`; raises `ConfigError` if it could be anything but literals."
    lines = ['# Parameters']
    for k, v in params.items():
        if type(k) is not str or not k.isidentifier() or keyword.iskeyword(k) or k.startswith('__'):
            raise ConfigError(f"parameter name {short(k)} is not a plain Python name")
        lines.append(f"{k} = {_literal(check_value(k, v, allow_nonfinite=True))}")
    src = '\n'.join(lines) + '\n'
    tree = ast.parse(src)
    if len(tree.body) != len(params): raise ConfigError("refusing to write parameters: the rendered cell does not have one statement per parameter")
    for stmt, (k, v) in zip(tree.body, params.items()):
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == k):
            raise ConfigError(f"refusing to write parameters: the line for {k!r} is not a plain assignment")
        if not _same(_eval_literal(stmt.value), check_value(k, v, allow_nonfinite=True)):
            raise ConfigError(f"refusing to write parameters: the literal for {k!r} does not read back as its value")
    return src


# %%
_inj = '", __import__("os").system("touch /tmp/pwned"), "'
_src = render_parameters(dict(profile='smoke', seed=3, x=[_inj, {'k"': float('inf')}], ok=None))
print(_src)
test_eq(_src.splitlines()[1:3], ['profile = "smoke"', 'seed = 3'])
_ns = {}; exec(compile(ast.parse(_src), '<params>', 'exec'), {'__builtins__': {'float': float}}, _ns)   # what the kernel runs
test_eq(_ns['x'][0], _inj)
test_eq(_ns['x'][1], {'k"': float('inf')})
test_fail(lambda: render_parameters({'a=1;import os;b': 1}), contains="is not a plain Python name")
test_fail(lambda: render_parameters(dict(x=b'\x00')), contains="type bytes")


# %% [markdown]
# ## Validating parameters before any work
#
# `validate_params` rejects names that are not in the notebook's parameters cell and parameters without a
# type, checks that every value is JSON-like data, then validates the values with the paper's
# `Config.from_params(profile, **params)` (types, ranges, choices, cross-parameter rules), importing the paper
# module named in the registry. If that module cannot be imported the run is refused with the import error
# (no looser check stands in for it). Parameters that are not `Config` fields, and every parameter of a
# notebook that is not a paper, are checked against their annotations. Errors are `ConfigError`s that name
# the parameter and what is allowed, in one line.
#
# It returns the *canonical* parameters: each value normalised to its declared type (`0.0` for an `int`
# parameter is `0`, a tuple is a list) and parameters equal to their default left out (for a paper: the
# profile's default; `None` means the default). The run id is computed from them, and they are what the
# notebook receives. `allow_large` lifts a `Config`'s soft upper bounds (`param(..., max=N)`), as does
# `TRUSTLIB_ALLOW_LARGE=1`.

# %%
#| export
def _check_profile(profile):
    if profile not in PROFILES:
        raise ConfigError(f"parameter 'profile': {short(profile)} is not allowed; choose one of {list(PROFILES)}")

def _cap_msg(s:str, n:int=1000) -> str:
    s = ' '.join(str(s).split())
    return s if len(s) <= n else s[:n - 1] + '…'

def _from_params(Config, profile, params, allow_large):
    "`Config.from_params`, passing `allow_large` where the installed trustlib.config supports it."
    import inspect
    kw = dict(allow_large=True) if allow_large and 'allow_large' in inspect.signature(Config.from_params).parameters else {}
    try: return Config.from_params(profile, **params, **kw)
    except ConfigError as e: raise ConfigError(_cap_msg(str(e))) from None
    except Exception as e:
        raise ConfigError(f"invalid parameters for {Config.__module__}.Config: {type(e).__name__}: {_cap_msg(str(e), 500)}") from None

class ParamValidator:
    "Checks parameters of one paper or notebook; caches the parameters cell and the paper's `Config` (a sweep checks many points)."
    def __init__(self, paper:str|None=None, notebook:str|Path|None=None, root=None, nbs_dir=None, allow_large:bool=False):
        self.name, self.nb, self.entry = resolve_notebook(paper, notebook, root, nbs_dir)
        self.info = notebook_parameters(self.nb)
        self.allow_large = allow_large or os.environ.get('TRUSTLIB_ALLOW_LARGE', '') not in ('', '0')
        self.Config, self._defaults = None, {}
        if self.info is None: return
        untyped = [k for k, v in self.info.items() if k != 'profile' and param_type(v) is None]
        if untyped:
            raise ConfigError(f"notebook {self.nb.name}: parameter(s) {untyped} have no type annotation the runner understands "
                              f"(e.g. `seed: int = 0`, `sizes: Optional[list] = None`); every parameter must declare its type")
        if self.entry is not None:
            import importlib
            try: mod = importlib.import_module(self.entry.module)
            except Exception as e:
                raise ConfigError(f"paper {self.name!r}: its module {self.entry.module} cannot be imported, so its parameters cannot be "
                                  f"validated: {type(e).__name__}: {_cap_msg(str(e), 300)}") from None
            self.Config = getattr(mod, 'Config', None)
            if self.Config is None: raise ConfigError(f"paper {self.name!r}: module {self.entry.module} has no Config class")

    def _nb_default(self, k):
        if k not in self._defaults:
            try: d = _coerce_jsonable(k, ast.literal_eval(self.info[k]['default']), param_type(self.info[k]))
            except Exception: d = _NODEFAULT
            self._defaults[k] = d
        return self._defaults[k]

    def check(self, profile:str, params:dict|None) -> dict:
        "The canonical parameters for `profile` and `params`, or raise `ConfigError`."
        _check_profile(profile)
        params = {} if params is None else params
        if type(params) is not dict or not all(type(k) is str for k in params):
            raise ConfigError(f"parameters must be a mapping of names to values, got {short(params)}")
        if 'profile' in params: raise ConfigError("pass the profile as profile=... (CLI: --profile), not as a parameter")
        if self.info is None:
            if params: raise ConfigError(f"notebook {self.nb.name} has no cell tagged 'parameters'; it takes no parameters (got {sorted(params)[:20]})")
            return {}
        unknown = sorted(set(params) - set(self.info))
        if unknown:
            import difflib
            names = sorted(n for n in self.info if n != 'profile')
            close = {u: difflib.get_close_matches(u, names, n=3) for u in unknown[:20]}
            hint = ', '.join(f"{c} for {short(u, 60)}" for u, c in close.items() if c)
            raise ConfigError(f"unknown parameter(s) {[u if len(u) <= 60 else u[:59] + '…' for u in unknown[:20]]} for {self.name}; "
                              f"allowed: {names}" + (f"; did you mean {hint}?" if hint else ''))
        fields = set(self.Config.param_names()) if self.Config is not None else set()
        vals = {k: check_value(k, v, allow_nonfinite=k in fields) for k, v in params.items()}
        canon = {}
        if self.Config is not None:
            cfg_in = {k: v for k, v in vals.items() if k in fields}
            cp = getattr(_config_module(), 'canonical_params', None)
            if cp is not None:   # the stricter checks of trustlib.config (finite floats, soft bounds), where present
                try: cp(self.Config, profile, cfg_in, **({'allow_large': True} if self.allow_large and _accepts(cp, 'allow_large') else {}))
                except ConfigError as e: raise ConfigError(_cap_msg(str(e))) from None
                except TypeError as e:
                    if 'argument' not in str(e): raise ConfigError(f"invalid parameters for {self.Config.__module__}.Config: TypeError: {_cap_msg(str(e), 500)}") from None
                    # another signature than expected: Config.from_params below still validates
                except Exception as e:   # a paper's validate() raising something else than ConfigError
                    raise ConfigError(f"invalid parameters for {self.Config.__module__}.Config: {type(e).__name__}: {_cap_msg(str(e), 500)}") from None
            got = _from_params(self.Config, profile, cfg_in, self.allow_large).to_dict()
            dflt = _from_params(self.Config, profile, {}, self.allow_large).to_dict()
            for k in cfg_in:
                v = to_plain(got[k])
                if not _same(v, to_plain(dflt[k])): canon[k] = v
        for k, v in vals.items():
            if k in fields: continue
            v = _coerce_jsonable(k, v, param_type(self.info[k]))
            if isinstance(v, float) and not math.isfinite(v): raise ConfigError(f"parameter {k!r}: {v!r} is not a finite number")
            if not _same(v, self._nb_default(k)): canon[k] = v
        return {k: canon[k] for k in params if k in canon}   # in the order given

_NODEFAULT = object()

def _accepts(f, name) -> bool:
    import inspect
    try: return name in inspect.signature(f).parameters
    except (TypeError, ValueError): return False

def _config_module():
    import trustlib.config
    return trustlib.config

def to_plain(v):
    "Tuples as lists, recursively (what JSON and the notebook see)."
    if isinstance(v, (list, tuple)): return [to_plain(x) for x in v]
    if isinstance(v, dict): return {k: to_plain(x) for k, x in v.items()}
    return v

def _coerce_jsonable(k, v, tp):
    from trustlib.config import _coerce
    try: return to_plain(_coerce(k, v, tp))
    except ConfigError as e: raise ConfigError(_cap_msg(str(e))) from None

def validate_params(paper:str|None=None, # paper name (see `trustlib.config.PAPERS`)
                    params:dict|None=None, # parameter overrides, as a user gives them
                    profile:str="cpu", # smoke | cpu | full
                    *, notebook:str|Path|None=None, # or: a notebook path
                    root:str|Path|None=None, nbs_dir:str|Path|None=None,
                    allow_large:bool=False, # lift the Config's soft upper bounds
                   ) -> dict:
    "Check `params` for `paper`/`notebook` and `profile`; return the canonical parameters or raise `ConfigError`."
    _check_profile(profile)
    return ParamValidator(paper, notebook, root, nbs_dir, allow_large).check(profile, params)


# %%
test_eq(validate_params(notebook=TOY, params=dict(seed=3, sleep=1)), dict(seed=3, sleep=1.0))
test_eq(validate_params(notebook=TOY, params=dict(seed=0.0, fail=False)), {})      # defaults are left out
test_fail(lambda: validate_params(notebook=TOY, params=dict(seeed=3)), contains="unknown parameter(s) ['seeed'] for toy; allowed: ['fail', 'seed', 'sleep']; did you mean ['seed', 'sleep'] for 'seeed'?")
test_fail(lambda: validate_params(notebook=TOY, params=dict(seed='three')), contains="parameter 'seed': expected int")
test_fail(lambda: validate_params(notebook=TOY, params=dict(fail='yes')), contains="parameter 'fail': expected bool")
test_fail(lambda: validate_params(notebook=TOY, params=dict(sleep=float('inf'))), contains="parameter 'sleep': inf is not a finite number")
test_fail(lambda: validate_params(notebook=TOY, params=dict(seed=b'1')), contains="a value of type bytes")
test_fail(lambda: validate_params(notebook=TOY, profile='laptop'), contains="choose one of ['smoke', 'cpu', 'full']")
test_fail(lambda: validate_params('disparate', {}), contains="unknown paper")

# %% [markdown]
# A notebook whose parameters are not all typed cannot be run:

# %%
_untyped = Path(tempfile.mkdtemp())/'untyped.ipynb'
_unb = json.loads(TOY.read_text()); _unb['cells'][1]['source'] = 'profile: str = "smoke"\nseed = 0\n'
_untyped.write_text(json.dumps(_unb))
test_fail(lambda: validate_params(notebook=_untyped, params={}), contains="parameter(s) ['seed'] have no type annotation")


# %% [markdown]
# ## Run ids
#
# A run id is the profile plus a hash of the canonical parameters, so the same experiment always maps to the
# same folder, however its parameters were spelled: a sweep can see which grid points are finished. Non-finite
# floats (which a paper's `Config` may allow) are hashed and recorded as `{"__float__": "inf"}`, never as
# `null` (which would read as "the default").

# %%
#| export
def encode_params(v):
    "`v` with non-finite floats as `{'__float__': 'inf' | '-inf' | 'nan'}` (JSON has no inf/NaN)."
    if isinstance(v, float) and not math.isfinite(v): return {'__float__': repr(v)}
    if isinstance(v, (list, tuple)): return [encode_params(x) for x in v]
    if isinstance(v, dict): return {k: encode_params(x) for k, x in v.items()}
    return v

def decode_params(v):
    "The inverse of `encode_params`."
    if isinstance(v, dict) and set(v) == {'__float__'} and v['__float__'] in ('inf', '-inf', 'nan'): return float(v['__float__'])
    if isinstance(v, list): return [decode_params(x) for x in v]
    if isinstance(v, dict): return {k: decode_params(x) for k, x in v.items()}
    return v

def run_id(profile:str, params:dict|None=None) -> str:
    "`<profile>-<first 10 hex digits of sha1 of the canonical JSON of the sorted params>`."
    canon = json.dumps(encode_params(params or {}), sort_keys=True, separators=(',', ':'), allow_nan=False)
    return f"{profile}-{hashlib.sha1(canon.encode()).hexdigest()[:10]}"


# %%
test_eq(run_id('smoke', dict(seed=1, n=2)), run_id('smoke', dict(n=2, seed=1)))
assert run_id('smoke', dict(seed=1)) != run_id('smoke', dict(seed=2)) != run_id('cpu', dict(seed=1))
test_eq(run_id('cpu', {}), 'cpu-bf21a9e8fb')
test_eq(len(run_id('cpu', dict(seed=3))), len('cpu-') + 10)
_ids = {run_id('smoke', validate_params(notebook=TOY, params=p, profile='smoke')) for p in ({}, dict(seed=0), dict(seed=0.0))}
test_eq(len(_ids), 1)
test_eq(decode_params(encode_params(dict(x=[float('inf'), 1.0]))), dict(x=[float('inf'), 1.0]))
assert run_id('cpu', dict(x=float('inf'))) != run_id('cpu', dict(x=None))

# %% [markdown]
# ## Provenance
#
# `metrics.json` records the versions of the main packages (read from package metadata, so nothing heavy is
# imported), the git commit and whether the work tree had uncommitted changes, and the host.
#
# *Dirty* means that a tracked file differs from the commit in a way that matters: a notebook whose cells'
# types and sources equal the committed ones (it differs only in outputs, execution counts or metadata, as
# after executing it) does not make the tree dirty. `notebook_source_sha1` is that same view of a notebook,
# hashed: it is recorded with every run, and a sweep re-runs a grid point when it changes.

# %%
#| export
_VERSION_DISTS = ('trustlib-icml25', 'numpy', 'scipy', 'torch', 'pandas', 'scikit-learn', 'matplotlib', 'seaborn',
                  'papermill', 'nbformat', 'ipykernel')

def build_info() -> dict:
    "The commit a wheel was built from (`trustlib/_build.json`, written by setup.py), or {} for a checkout (whose commit `git_info` records)."
    p = _package_dir()/'_build.json'
    try: return json.loads(p.read_text(encoding='utf-8'))
    except (OSError, ValueError): return {}

def versions() -> dict[str, str]:
    "Versions of python and of the installed packages in `_VERSION_DISTS`; from a wheel, also the commit it was built from (`trustlib_build_commit`)."
    from importlib import metadata
    res = dict(python=platform.python_version())
    for d in _VERSION_DISTS:
        try: res[d] = metadata.version(d)
        except metadata.PackageNotFoundError: pass
    b = build_info()
    if b.get('git_commit'): res['trustlib_build_commit'] = b['git_commit'] + ('-dirty' if b.get('git_dirty') else '')
    return res

def _nb_sources(text:str|bytes):
    "`[(cell_type, source)]` of a notebook's text, without papermill's injected-parameters cell; None if it is not a notebook."
    try: nb = json.loads(text)
    except ValueError: return None
    if not isinstance(nb, dict) or not isinstance(nb.get('cells'), list): return None
    return [(c.get('cell_type'), _cell_source(c)) for c in nb['cells'] if isinstance(c, dict)
            and 'injected-parameters' not in (c.get('metadata') or {}).get('tags', [])]

def notebook_source_sha1(nb_path:str|Path) -> str|None:
    "sha1 of a notebook's cell types and sources (outputs, counts, metadata and injected parameters left out)."
    src = _nb_sources(Path(nb_path).read_bytes())
    return None if src is None else hashlib.sha1(json.dumps(src).encode()).hexdigest()

def _pair_code(text:str|bytes) -> list[str]:
    "The cells of a py:percent pair without papermill's injected-parameters cell, blank lines at cell edges dropped."
    if isinstance(text, bytes): text = text.decode('utf-8', 'replace')
    cells, cur = [], []
    for line in text.splitlines():
        if line.startswith('# %%'): cells.append(cur); cur = [line]
        else: cur.append(line)
    cells.append(cur)
    keep = [c for c in cells if not (c and 'injected-parameters' in c[0])]
    return ['\n'.join(c).strip('\n') for c in keep]

def git_info(path:str|Path) -> dict[str, Any]:
    "`dict(git_commit, git_dirty, git_dirty_files)` of the repository holding `path` (None outside git)."
    def _git(*args, text=True):
        return subprocess.run(['git', '-C', str(path), *args], capture_output=True, text=text, timeout=20)
    none = dict(git_commit=None, git_dirty=None, git_dirty_files=None)
    try:
        head = _git('rev-parse', 'HEAD')
        if head.returncode: return none
        top = _git('rev-parse', '--show-toplevel').stdout.strip()
        st = _git('status', '--porcelain', '-z', '--untracked-files=no', text=False)
        if st.returncode: return dict(none, git_commit=head.stdout.strip())
        dirty = []
        entries = st.stdout.decode('utf-8', 'surrogateescape').split('\0')
        i = 0
        while i < len(entries):
            e = entries[i]; i += 1
            if len(e) < 4: continue
            code, f = e[:2], e[3:]
            if 'R' in code or 'C' in code: i += 1; dirty.append(f); continue   # renames/copies carry a second path
            if code.strip() == 'M' and f.endswith('.ipynb'):
                old = subprocess.run(['git', '-C', top, 'show', f'HEAD:{f}'], capture_output=True, timeout=20)
                try: new = (Path(top)/f).read_bytes()
                except OSError: new = b''
                if old.returncode == 0 and _nb_sources(old.stdout) is not None and _nb_sources(old.stdout) == _nb_sources(new): continue
            if code.strip() == 'M' and f.startswith('scripts/') and f.endswith('.py'):
                # a generated jupytext pair: clean when only the injected-parameters cell (or blank lines around cells) moved
                old = subprocess.run(['git', '-C', top, 'show', f'HEAD:{f}'], capture_output=True, timeout=20)
                try: new = (Path(top)/f).read_bytes()
                except OSError: new = b''
                if old.returncode == 0 and _pair_code(old.stdout) == _pair_code(new): continue
            dirty.append(f)
        return dict(git_commit=head.stdout.strip(), git_dirty=bool(dirty), git_dirty_files=dirty[:20])
    except (OSError, subprocess.SubprocessError): return none

def _now() -> str: return datetime.now(timezone.utc).isoformat()

def machine_info() -> dict:
    "The machine a run ran on: CPU model, logical cores, architecture. Floating-point results can differ in the last digits between CPU models (their BLAS kernels differ), so a run records it."
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"): cpu = line.split(":", 1)[1].strip(); break
    except OSError: pass
    return dict(cpu=cpu or platform.processor() or platform.machine(), cores=os.cpu_count(), arch=platform.machine(), system=platform.system())

def _sha1_file(p:Path) -> str: return hashlib.sha1(Path(p).read_bytes()).hexdigest()


# %%
_v = versions()
assert {'python', 'numpy', 'papermill', 'trustlib-icml25'} <= set(_v), _v     # the code's own version is recorded with every run
test_eq(set(git_info(_root)), {'git_commit', 'git_dirty', 'git_dirty_files'})
test_eq(git_info(tempfile.mkdtemp()), dict(git_commit=None, git_dirty=None, git_dirty_files=None))
_m = machine_info()                                                              # metrics.json's `machine`: what the numbers were computed on
test_eq((_m['cores'], _m['arch']), (os.cpu_count(), platform.machine())); assert isinstance(_m['cpu'], str) and _m['cpu']

# %% [markdown]
# A repository where a notebook's outputs changed is clean; a changed source is dirty:

# %%
_g = Path(tempfile.mkdtemp())
_gnb = lambda src, out: json.dumps(dict(cells=[dict(cell_type='code', source=src, metadata={}, outputs=out, execution_count=None)], metadata={}))
(_g/'a.ipynb').write_text(_gnb('x = 1', []))
_genv = dict(os.environ, GIT_AUTHOR_NAME='t', GIT_AUTHOR_EMAIL='t@t', GIT_COMMITTER_NAME='t', GIT_COMMITTER_EMAIL='t@t')
for _c in (['init', '-q'], ['add', 'a.ipynb'], ['commit', '-qm', 'a']): subprocess.run(['git', '-C', str(_g), *_c], check=True, env=_genv)
(_g/'a.ipynb').write_text(_gnb('x = 1', [dict(output_type='stream', name='stdout', text='1\n')]))
test_eq(git_info(_g)['git_dirty'], False)
(_g/'a.ipynb').write_text(_gnb('x = 2', []))
test_eq((git_info(_g)['git_dirty'], git_info(_g)['git_dirty_files']), (True, ['a.ipynb']))
(_g/'a.ipynb').write_text(_gnb('x = 1', []))
# a py:percent pair under scripts/ is generated: a changed injected-parameters cell does not make the tree dirty, changed code does
(_g/'scripts').mkdir()
(_g/'scripts'/'a.py').write_text('# %%\nx = 1\n\n# %% tags=["injected-parameters"]\nprofile = "smoke"\n')
for _c in (['add', 'scripts/a.py'], ['commit', '-qm', 'pair']): subprocess.run(['git', '-C', str(_g), *_c], check=True, env=_genv)
(_g/'scripts'/'a.py').write_text('# %%\nx = 1\n\n\n# %% tags=["injected-parameters"]\n# Parameters\nprofile = "cpu"\n')
test_eq(git_info(_g)['git_dirty'], False)
(_g/'scripts'/'a.py').write_text('# %%\nx = 2\n')
test_eq(git_info(_g)['git_dirty_files'], ['scripts/a.py'])
assert notebook_source_sha1(TOY) == notebook_source_sha1(TOY) and len(notebook_source_sha1(TOY)) == 40

# %% [markdown]
# ## One run at a time: the run lock
#
# Before it touches anything of run `<run_id>`, a process takes the lock `runs/<paper>/.lock-<run_id>`: a file
# created with `O_CREAT | O_EXCL` (atomic on local file systems and on NFSv3+), holding the owner's host,
# process id, start time and a random token. While the run lasts, a thread refreshes the file's modification
# time every `LOCK_HEARTBEAT_S` seconds. A lock is *stale* — and is broken by the next process that wants it —
# when its owner is on this host and the process is gone, or when it has not been refreshed for
# `LOCK_STALE_S` seconds (an owner on another host that died, a reused process id; 30 s for an unreadable
# lock file, which is written right after it is created). Breaking renames the lock
# file aside and checks it is still the stale one, so two processes never both break and both take it.
# A second process that finds the lock held waits (and says so), or skips the run (`wait=False`).

# %%
#| export
LOCK_HEARTBEAT_S = 30.0
LOCK_STALE_S = 600.0

class RunLocked(RuntimeError):
    "Another live process holds the lock of this run id."

def _pid_alive(pid:int) -> bool:
    try: os.kill(pid, 0)
    except ProcessLookupError: return False
    except PermissionError: return True
    except (OverflowError, ValueError): return False
    try:   # a killed process that its parent has not reaped yet (a zombie: Ray's raylet, under load) answers signal 0 but holds nothing
        with open(f'/proc/{pid}/stat', 'rb') as f: return f.read().rsplit(b')', 1)[1].split()[0] not in (b'Z', b'X')
    except (OSError, IndexError): return True   # no /proc (macOS): alive, as signal 0 says

class RunLock:
    "A lock file per run id, across processes and hosts (see above). Use `acquire`/`release` or `with`."
    def __init__(self, base:str|Path, rid:str, stale_s:float|None=None, heartbeat_s:float|None=None):
        self.path = Path(base)/f".lock-{rid}"
        self.stale_s = LOCK_STALE_S if stale_s is None else stale_s
        self.heartbeat_s = LOCK_HEARTBEAT_S if heartbeat_s is None else heartbeat_s
        self.token, self._stop, self._thread = None, None, None

    def holder(self) -> dict|None:
        "The lock file's content (`{}` if unreadable), or None if there is no lock."
        try: return json.loads(self.path.read_text()) or {}
        except FileNotFoundError: return None
        except (OSError, ValueError): return {}

    def _stale(self, h:dict) -> bool:
        try: age = time.time() - self.path.stat().st_mtime
        except FileNotFoundError: return True
        if age > (self.stale_s if h else min(self.stale_s, 30.0)): return True   # not refreshed: its owner is gone (or its pid was reused)
        if h.get('host') == socket.gethostname() and isinstance(h.get('pid'), int):
            return not _pid_alive(h['pid']) or (h['pid'] == os.getpid() and h.get('token') not in _HELD)
        return False

    def _try(self) -> bool:
        token = secrets.token_hex(8)
        data = json.dumps(dict(host=socket.gethostname(), pid=os.getpid(), started=_now(), token=token)).encode()
        try: fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError: return False
        try: os.write(fd, data); os.fsync(fd)
        finally: os.close(fd)
        self.token = token; _HELD.add(token)
        return True

    def _break(self, h:dict):
        "Remove the stale lock `h` (only if it is still that lock)."
        aside = self.path.with_name(f"{self.path.name}.broken-{secrets.token_hex(4)}")
        try: os.rename(self.path, aside)
        except FileNotFoundError: return
        try: now = json.loads(aside.read_text()) or {}
        except (OSError, ValueError): now = {}
        if now != h:   # someone else broke it and took a fresh lock meanwhile: put theirs back
            try: os.link(aside, self.path)
            except OSError: pass
        aside.unlink(missing_ok=True)

    def acquire(self, wait:bool=True, timeout:float|None=None, poll:float=0.25, on_wait=None) -> bool:
        "Take the lock; if it is held: wait (calling `on_wait(holder)` once), or return False (`wait=False` or after `timeout`)."
        t0, told = time.time(), False
        while True:
            if self._try(): break
            h = self.holder()
            if h is not None and self._stale(h): self._break(h); continue
            if not wait or (timeout is not None and time.time() - t0 > timeout): return False
            if not told and on_wait is not None: on_wait(h or {}); told = True
            time.sleep(poll)
        self._stop = threading.Event()
        def beat(stop=self._stop, path=self.path, every=self.heartbeat_s):
            while not stop.wait(every):
                try: os.utime(path)
                except OSError: pass
        self._thread = threading.Thread(target=beat, daemon=True, name=f"trustlib-lock-{self.path.name}"); self._thread.start()
        return True

    def owned(self) -> bool:
        "True while the lock file is still ours."
        return self.token is not None and (self.holder() or {}).get('token') == self.token

    def release(self):
        if self._stop is not None: self._stop.set()
        if self.token is not None and self.owned(): self.path.unlink(missing_ok=True)
        _HELD.discard(self.token); self.token = None

    def __enter__(self):
        if not self.acquire(): raise RunLocked(f"{self.path} is held")
        return self
    def __exit__(self, *exc): self.release()

_HELD: set = set()   # tokens of the locks this process holds

def describe_holder(h:dict) -> str:
    return f"process {h.get('pid', '?')} on {h.get('host', '?')} (since {str(h.get('started', '?'))[:19]})"


# %%
_lb = Path(tempfile.mkdtemp())
_l1, _l2 = RunLock(_lb, 'cpu-x'), RunLock(_lb, 'cpu-x')
test_eq(_l1.acquire(), True)
test_eq(_l2.acquire(wait=False), False)                    # held by a live process (this one)
test_eq(_l1.owned(), True); _l1.release()
test_eq(_l2.acquire(wait=False), True); _l2.release()
_dead = subprocess.Popen([sys.executable, '-c', 'pass']); _dead.wait()
(_lb/'.lock-cpu-x').write_text(json.dumps(dict(host=socket.gethostname(), pid=_dead.pid, started=_now(), token='t')))
test_eq(_l1.acquire(wait=False), True)                     # its owner is gone: stale, broken, taken
test_eq(json.loads((_lb/'.lock-cpu-x').read_text())['pid'], os.getpid()); _l1.release()
(_lb/'.lock-cpu-x').write_text(json.dumps(dict(host='elsewhere', pid=1, started=_now(), token='t')))
test_eq(_l1.acquire(wait=False), False)                    # another host, fresh: respected
os.utime(_lb/'.lock-cpu-x', (time.time() - LOCK_STALE_S - 1,) * 2)
test_eq(_l1.acquire(wait=False), True); _l1.release()      # another host, not refreshed for LOCK_STALE_S: stale
test_eq(sorted(p.name for p in _lb.iterdir()), [])
if Path('/proc/self/stat').exists():                       # a killed but not yet reaped process (a zombie) holds no lock
    _z = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); _z.kill()
    for _ in range(1000):
        if not _pid_alive(_z.pid): break
        time.sleep(0.01)
    test_eq((_pid_alive(_z.pid), _z.poll() is None or _z.returncode), (False, -9)); _z.wait()

# %% [markdown]
# ## Atomic run folders
#
# A run is built, under its lock, in `runs/<paper>/.tmp-<run_id>-<random>/`, which holds an `.owner` file (host,
# process id). Everything that reads runs ignores folders whose name starts with a dot. When the run ends:
#
# - complete: `_swap_in` renames the temporary folder to `runs/<paper>/<run_id>`; an existing folder of that
#   name is first renamed aside (a hidden `.tmp-<run_id>-old-*` name), and renamed back if the second rename
#   fails, so a reader sees the old run or the new one — and a complete run is never lost;
# - failed (an error, ctrl-C, SIGTERM, a notebook that recorded no result): if `<run_id>` holds a complete run,
#   the failure goes *beside* it, to `runs/<paper>/<run_id>.failed-<UTC time>/`; otherwise it takes the
#   `<run_id>` folder (replacing an earlier failure).
#
# Temporary folders of killed runs are deleted when they are stale: every `.tmp-<run_id>-*` folder when the
# lock of `<run_id>` is free (it is taken first), whether or not its `.owner` file was written.

# %%
#| export
_ACTIVE: set[str] = set()   # temporary folders of runs in progress in this process
_TMP = re.compile(r'^\.tmp-(?P<rid>.+?)-(?:old-)?[0-9a-f]{8}$')

def _rename(src:Path, dst:Path): os.rename(src, dst)   # one place, so tests can simulate a crash here

def clean_stale(base:str|Path, rid:str|None=None, holding:str|None=None) -> list[Path]:
    "Delete stale temporary folders under `base` (all run ids, or only `rid`; `holding`: a run id whose lock the caller holds)."
    removed = []
    try: entries = list(Path(base).iterdir())
    except OSError: return removed
    for tmp in entries:
        m = _TMP.match(tmp.name)
        if not m or not tmp.is_dir() or str(tmp) in _ACTIVE or (rid is not None and m['rid'] != rid): continue
        if m['rid'] == holding: _drop_or_restore(tmp, Path(base)/m['rid']); removed.append(tmp); continue
        lock = RunLock(base, m['rid'])
        if not lock.acquire(wait=False): continue   # that run is in progress somewhere
        try:
            if str(tmp) not in _ACTIVE: _drop_or_restore(tmp, Path(base)/m['rid']); removed.append(tmp)
        finally: lock.release()
    return removed

def _drop_or_restore(tmp:Path, final:Path):
    "Delete a stale temporary folder, except a run `_swap_in` had set aside (`.tmp-<rid>-old-*`) when its process died before the new one took its place: that one is put back."
    if '-old-' in tmp.name and not final.exists() and (tmp/'metrics.json').is_file():
        try: _rename(tmp, final); return
        except OSError: pass
    shutil.rmtree(tmp, ignore_errors=True)

def _swap_in(tmp:Path, final:Path):
    "Rename `tmp` to `final`, replacing an existing `final` without ever exposing a partial folder or losing it."
    old = None
    if final.exists():
        old = final.with_name(f".tmp-{final.name}-old-{secrets.token_hex(4)}")
        _rename(final, old)
    try: _rename(tmp, final)
    except BaseException:
        if old is not None and not final.exists(): _rename(old, final)   # put the previous run back
        raise
    (final/'.owner').unlink(missing_ok=True)   # kept until now: a temp folder left by a crash stays attributable
    if old is not None: shutil.rmtree(old, ignore_errors=True)

def _failed_name(final:Path) -> Path:
    ts = datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%SZ')
    return final.with_name(f"{final.name}.failed-{ts}-{secrets.token_hex(2)}")


# %% [markdown]
# ## `run_notebook`
#
# Executes the notebook with papermill (kernel `python3`, working directory = the notebook's folder) into the
# temporary folder, with the parameters written by `render_parameters` into an `injected-parameters` cell after
# the `parameters` cell (replacing one left by an earlier run), `TRUSTLIB_RUN_DIR` pointing at the folder (so
# `trustlib.results.record(result)` writes `result.json`, `tables/` and `figures/` there) and `TQDM_DISABLE=1`
# (for tqdm bars whose `disable` is not given explicitly). papermill saves the notebook after every cell,
# non-atomically, to a hidden file; the run folder gets the notebook written once, atomically, without the
# stderr lines that show absolute paths of this machine or tqdm progress bars (`scrub_notebook`; set
# `TRUSTLIB_PROGRESS=1` to keep the bars, both in the kernel and in the stored notebook). Then `metrics.json`,
# and the folder is renamed into place.
#
# On failure — an error in a cell (`PapermillExecutionError`), a timeout, ctrl-C, SIGTERM, a full disk, a
# notebook that never called `record()` — the run is published as failed (see above), with `metrics.json`
# saying `status: "failed"`, the error, its chain of causes and the traceback, and the partially executed
# notebook if it could be saved whole; `result.json` is removed so nothing looks complete. Then `RunFailed` is
# raised (`KeyboardInterrupt` and `Terminated` are re-raised as themselves after recording). Runs never call
# `nbdev_export`.

# %%
#| export
class RunFailed(RuntimeError):
    "A run failed; `run_dir` is its folder (with `metrics.json` status `failed` and the traceback)."
    def __init__(self, msg:str, run_dir:Path|None=None, error:str="", chain:list|None=None):
        super().__init__(msg); self.run_dir, self.error, self.chain = run_dir, error, chain or []

class Terminated(KeyboardInterrupt):
    "The process received SIGTERM (handled like ctrl-C: the run is recorded as failed, then this propagates)."

class NoResult(RuntimeError):
    "The notebook ran to the end without calling `trustlib.results.record`."

_ANSI = re.compile(r'\x1b\[[0-9;]*[A-Za-z]')
_EXC_LINE = re.compile(r'^([A-Za-z_][\w.]*(?:Error|Exception|Unavailable|Interrupt|Exit|Failed|Warning|Terminated|Missing)\w*)(?::\s?(.*))?$')

def error_chain(e:BaseException, cap:int=500, depth:int=8) -> list[str]:
    "`['Type: message', ...]` of `e` and its causes/contexts (`__cause__`, else `__context__`), each capped."
    out, seen = [], set()
    while e is not None and id(e) not in seen and len(out) < depth:
        seen.add(id(e))
        msg = str(e).strip()
        if 'Traceback (most recent call last)' in msg:   # a wrapper quoting a remote traceback: keep its last exception line
            inner = [l.strip() for l in msg.splitlines() if _EXC_LINE.match(l.strip())]
            if inner: msg = f"{msg.splitlines()[0][:200]} … {inner[-1]}" if not msg.startswith('Traceback') else f"… {inner[-1]}"
        out.append(_cap_msg(f"{type(e).__name__}: {msg}" if msg else type(e).__name__, cap))
        e = e.__cause__ or (None if e.__suppress_context__ else e.__context__)
    return out

def _tb_chain(tb:str, cap:int=500) -> list[str]:
    "The exception lines (`Type: message`, unindented) of a traceback text, outermost last as Python prints them."
    return [_cap_msg(l, cap) for l in tb.splitlines() if _EXC_LINE.match(l)]

def _describe_error(e:BaseException) -> tuple[str, str, list[str]]:
    "(one-line error, traceback text, chain); for errors inside the notebook, the notebook's own traceback."
    if type(e).__name__ == 'PapermillExecutionError':
        tb = _ANSI.sub('', '\n'.join(e.traceback))
        return _cap_msg(f"{e.ename}: {e.evalue}"), tb, _tb_chain(tb)[::-1] or [_cap_msg(f"{e.ename}: {e.evalue}")]
    chain = error_chain(e)
    return chain[0], ''.join(traceback.format_exception(type(e), e, e.__traceback__)), chain


# %%
#| export
def _machine_paths(*extra) -> list[str]:
    "Absolute paths of this machine that must not appear in published pages."
    ps = {str(Path.home()), sys.prefix, sys.base_prefix, sys.exec_prefix, tempfile.gettempdir(), os.getcwd(), *map(str, extra)}
    try: ps.add(str(find_root()))
    except ConfigError: pass
    ps |= {os.path.realpath(p) for p in ps if p}   # a symlinked venv (a worktree's): the kernel reports the resolved path
    return sorted((p for p in ps if p and p not in ('/', '.') and len(p) > 4), key=len, reverse=True)

_BAR = re.compile(r'\d+%\|[^\n]*\||\[\d+:\d+(?::\d+)?(?:<[\d:?]+)?,\s*(?:\?|[\d.]+[kMGT]?)\s*(?:[A-Za-z]+/s|s/[A-Za-z]+)\]')   # tqdm bars

def _keep_bars() -> bool: return os.environ.get('TRUSTLIB_PROGRESS', '') not in ('', '0')

TQDM_RESIDUE = "from .autonotebook import tqdm as notebook_tqdm"   # the 2nd line of tqdm's `IProgress not found` warning

def drop_empty_tags(nb:dict) -> int:
    "Remove papermill's empty `tags: []` cell metadata, in place (no information, and `jupytext --sync` would write it out); how many."
    n = 0
    for c in nb.get('cells', []):
        if (c.get('metadata') or {}).get('tags') == []: del c['metadata']['tags']; n += 1
    return n

def scrub_notebook(nb:dict, extra_paths=(), bars:bool|None=None) -> int:
    "Remove from stderr stream outputs the lines that show absolute paths of this machine and tqdm progress bars; return how many."
    paths, n = _machine_paths(*extra_paths), 0
    bars = (not _keep_bars()) if bars is None else bars
    for c in nb.get('cells', []):
        outs = c.get('outputs')
        if not outs: continue
        keep = []
        for o in outs:
            if o.get('output_type') == 'stream' and o.get('name') == 'stderr':
                txt = o.get('text', ''); txt = ''.join(txt) if isinstance(txt, list) else txt
                lines = re.split(r'(?<=[\r\n])', txt)   # tqdm redraws with \r: each redraw is a line here
                kept = [l for l in lines if not any(p in l for p in paths) and not (bars and _BAR.search(l))
                        and l.strip() != TQDM_RESIDUE]
                n += len(lines) - len(kept)
                if not ''.join(kept).strip(): continue   # blank (e.g. a disabled bar's newline): nothing for a reader
                o['text'] = ''.join(kept)
            keep.append(o)
        c['outputs'] = keep
    return n

def inject_parameters(nb:dict, params:dict) -> dict:
    "`nb` with an `injected-parameters` cell (from `render_parameters`) after its `parameters` cell, replacing an old one."
    import nbformat
    src = render_parameters(params)
    cell = nbformat.v4.new_code_cell(source=src); cell.metadata['tags'] = ['injected-parameters']
    cells = [c for c in nb['cells'] if 'injected-parameters' not in c.get('metadata', {}).get('tags', [])]
    idx = next((i for i, c in enumerate(cells) if 'parameters' in c.get('metadata', {}).get('tags', [])), -1)
    nb['cells'] = cells[:idx + 1] + [cell] + cells[idx + 1:]
    nb.setdefault('metadata', {}).setdefault('papermill', {})['parameters'] = encode_params(params)
    return nb


# %%
_nb = dict(cells=[dict(cell_type='code', metadata={'tags': []}, source=''), dict(cell_type='code', metadata={'tags': ['parameters']}, source=''),
                  dict(cell_type='markdown', metadata={}, source='')])
test_eq(drop_empty_tags(_nb), 1)
test_eq([c['metadata'] for c in _nb['cells']], [{}, {'tags': ['parameters']}, {}])
_nb = dict(cells=[dict(cell_type='code', metadata={}, source='', outputs=[dict(output_type='stream', name='stderr', text='  ' + TQDM_RESIDUE + '\n'),
                                                                       dict(output_type='stream', name='stderr', text='\n')])])
scrub_notebook(_nb)
test_eq(_nb['cells'][0]['outputs'], [])   # the warning's residue and a blank stream are nothing for a reader

# %%
_nb = inject_parameters(json.loads(TOY.read_text()), dict(profile='smoke', seed=2))
_tags = [c['metadata'].get('tags', []) for c in _nb['cells']]
test_eq(_tags.index(['injected-parameters']), _tags.index(['parameters']) + 1)
_nb = inject_parameters(_nb, dict(profile='cpu'))   # a second injection replaces the first
test_eq(sum(t == ['injected-parameters'] for t in [c['metadata'].get('tags', []) for c in _nb['cells']]), 1)
_sn = dict(cells=[dict(cell_type='code', outputs=[dict(output_type='stream', name='stderr', text=f'{sys.prefix}/x.py:1: TqdmWarning: IProgress not found'),
                                                    dict(output_type='stream', name='stderr', text='a plain warning\n' + f'{sys.prefix}/y.py:2: UserWarning\n'),
                                                    dict(output_type='stream', name='stdout', text='ok')])])
_sn['cells'][0]['outputs'].append(dict(output_type='stream', name='stderr', text='\rexp1:  50%|#####     | 1/2 [00:00<00:00, 46.92it/s]\rexp1: 100%|##########| 2/2 [00:00<00:00, 46.92it/s]\n'))
_sn['cells'][0]['outputs'].append(dict(output_type='stream', name='stderr', text='\rsteps: 7it [00:01,  5.01it/s]'))
test_eq(scrub_notebook(_sn), 5)   # 2 lines with paths, 3 progress-bar redraws
test_eq([o['text'] for o in _sn['cells'][0]['outputs']], ['a plain warning\n', 'ok'])

# %% [markdown]
# ### A rehearsal skips the examples
#
# A paper notebook explains its method with small examples, each right after the function it shows; the smoke test
# runs them. A rehearsal (`rehearse=True`) checks the `full` profile's code path, so it leaves them out.
# `example_cells` finds them among the plain code cells (no `#|` directive) between the parameters cell and the cell
# that runs the experiment (`run_experiment(`): a cell that sets no attribute or item of anything but the private
# objects it made itself (`_d[0] = 1`, not `cfg.x = 1`), declares no global, imports no `*`, and binds no name that
# a kept cell reads (a check such as `test_eq(...)` binds nothing; an example's `_x`, `rng` or `import tempfile`
# that nothing kept reads is the example's own). A cell that a kept cell needs is kept, with what it needs in turn;
# so are cells that cannot be parsed, and every cell from the experiment on. A cell *needs* a name it reads from
# outside: not a function's parameter or local, not a comprehension's target, not a private name it binds itself,
# and not a name it binds before it first reads it (`rng = ...; rng.random()` reads no outside `rng`). Names read only through `globals()` are not seen: the
# configuration cell reads the parameters that way, and they come from the parameters cell, which is always kept.
# If a kept cell needed a dropped one after all, the rehearsal fails with a `NameError`: loudly, never silently.

# %%
#| export
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)

def _end(node) -> tuple: return (node.end_lineno, node.end_col_offset)

def _scope_locals(node) -> set:
    "The names local to function, lambda, class body or comprehension `node`: its parameters and what it binds (not inside nested scopes), less its globals."
    names, glob = set(), set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        a = node.args
        names |= {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs} | {x.arg for x in (a.vararg, a.kwarg) if x is not None}
        todo = list(node.body) if isinstance(node.body, list) else [node.body]
    elif isinstance(node, ast.ClassDef): todo = list(node.body)
    else: todo = list(node.generators)
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)): names.add(n.id)
        elif isinstance(n, (ast.Global, ast.Nonlocal)): glob |= set(n.names)
        elif isinstance(n, (ast.Import, ast.ImportFrom)): names |= {(x.asname or x.name).split('.')[0] for x in n.names}
        elif isinstance(n, ast.ExceptHandler) and n.name: names.add(n.name)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)): names.add(n.name)
        if not isinstance(n, _SCOPES): todo.extend(ast.iter_child_nodes(n))
    return names - glob

def _names(src:str) -> tuple[set, set, bool]|None:
    """`(bound, read, sets_state)` of code `src`: the names its top level binds; the names it reads from outside (also
    inside its functions, other than their parameters and locals), that is other than the private names it binds
    itself and the names it binds before it first reads them (an assignment binds when its statement ends, a loop's or
    `with`'s target after its iterable or context expression); and whether it assigns an attribute or item of anything
    but an object it binds itself, declares a global or imports `*`. None when it does not parse."""
    try: tree = ast.parse(src)
    except SyntaxError: return None   # IPython magics and the like
    binds, loads, stores, state = {}, [], [], False
    def bind(name, at): binds[name] = min(binds.get(name, at), at)
    def visit(node, at, top, local):   # at: where a Name stored here becomes bound; top: the cell's own scope; local: names of enclosing scopes
        nonlocal state
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                if node.id not in local: loads.append(((node.lineno, node.col_offset), node.id))
            elif top: bind(node.id, at)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if top:
                for a in node.names: bind((a.asname or a.name).split('.')[0], _end(node))
                state = state or any(a.name == '*' for a in node.names)   # binds names no one can list
            return
        if isinstance(node, (ast.Global, ast.Nonlocal)): state = True; return
        if top and isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, ast.Store): stores.append(node)
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete, ast.NamedExpr)): at = _end(node)
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id not in local:
            loads.append(((node.lineno, node.col_offset), node.target.id))
        if isinstance(node, (ast.For, ast.AsyncFor)):
            visit(node.iter, at, top, local); visit(node.target, _end(node.iter), top, local)
            for c in node.body + node.orelse: visit(c, at, top, local)
            return
        if isinstance(node, ast.withitem):
            visit(node.context_expr, at, top, local)
            if node.optional_vars is not None: visit(node.optional_vars, _end(node.context_expr), top, local)
            return
        if isinstance(node, ast.ExceptHandler) and node.name and top: bind(node.name, (node.lineno, node.col_offset))
        if isinstance(node, _SCOPES):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if top: bind(node.name, _end(node))
                outer = node.decorator_list + (node.bases + [k.value for k in node.keywords] if isinstance(node, ast.ClassDef)
                                               else node.args.defaults + [d for d in node.args.kw_defaults if d is not None])
                for c in outer: visit(c, at, top, local)
                inner = node.body
            elif isinstance(node, ast.Lambda):
                for c in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]: visit(c, at, top, local)
                inner = [node.body]
            else: inner = node.generators + ([node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt])
            scope = local | _scope_locals(node)
            for c in inner: visit(c, at, False, scope)
            return
        for c in ast.iter_child_nodes(node): visit(c, at, top, local)
    for stmt in tree.body: visit(stmt, _end(stmt), True, frozenset())
    first = {}
    for pos, n in loads: first[n] = min(first.get(n, pos), pos)
    own = {n for n, at in binds.items() if n.startswith('_') or n not in first or at <= first[n]}
    for node in stores:   # `_x[0] = 1`, `Y[::4] = -100` after `Y = ...` change an object this cell made; `cfg.x = 1` changes shared state
        while isinstance(node, (ast.Attribute, ast.Subscript)): node = node.value
        state = state or not (isinstance(node, ast.Name) and node.id in own)
    return set(binds), set(first) - own, state

def example_cells(nb:dict) -> list[int]:
    "Indices of notebook `nb`'s example cells: see above. Empty when it has no parameters cell or no `run_experiment(` cell."
    cells = nb['cells']
    code = [i for i, c in enumerate(cells) if c['cell_type'] == 'code']
    tags = lambda c: c.get('metadata', {}).get('tags', [])
    first = next((i for i in code if 'parameters' in tags(cells[i])), None)
    last = next((i for i in code if 'run_experiment(' in _cell_source(cells[i])), None)
    if first is None or last is None: return []
    info = {i: _names(_cell_source(cells[i])) for i in code}
    plain = [i for i in code if first < i < last and 'injected-parameters' not in tags(cells[i])
             and not re.search(r'^\s*#\|', _cell_source(cells[i]), re.M) and info[i] is not None]
    drop = {i for i in plain if not info[i][2]}   # every cell that changes no shared state, ...
    changed = True
    while changed:   # ... unless a kept cell needs it: then it is kept, with what it needs in turn
        kept_reads = set().union(*(info[i][1] for i in code if i not in drop and info[i] is not None))
        back = {i for i in drop if info[i][0] & kept_reads}
        drop -= back; changed = bool(back)
    return sorted(drop)

def drop_examples(nb:dict) -> dict:
    "A copy of notebook `nb` without its example cells (`example_cells`)."
    import copy
    drop = set(example_cells(nb))
    out = copy.deepcopy(nb)
    out['cells'] = [c for i, c in enumerate(nb['cells']) if i not in drop]
    return out


# %%
_ex = dict(cells=[dict(cell_type='code', source=s, metadata=m) for s, m in [
    ('#| export\ndef f(x): return 2*x', {}), ('seed = 0', {'tags': ['parameters']}), ('cfg = dict(seed=seed)', {}),
    ('_y = f(3)\ntest_eq(_y, 6)', {}), ('import math', {}), ('for _i in range(2): _z = _i', {}), ('cfg.x = 1', {}),
    ('def _g(): return 1', {}), ('def g(): return 1', {}), ('%time _a = 1', {}), ('[k for k in range(3)]', {}),
    ('w = _z + 1', {}), ('_m = 2', {}), ('test_eq(_y, 6)', {}),
    ('result = run_experiment(f, cfg, _m)', {}), ('_after = 1', {})]])
test_eq(example_cells(_ex), [3, 4, 5, 7, 8, 10, 11, 13])   # `math`, `g` and `w` are read by no kept cell; `_m` is needed later
test_eq([c['source'] for c in drop_examples(_ex)['cells']][3:6], ['cfg.x = 1', '%time _a = 1', '_m = 2'])
test_eq(len(_ex['cells']), 16)   # the input is left as it was
_ex['cells'].insert(12, dict(cell_type='code', source='v = w * 2', metadata={}))   # reads only what examples bind: an example
test_eq(example_cells(_ex), [3, 4, 5, 7, 8, 10, 11, 12, 14])
_ex['cells'][12]['source'] = 'cfg.w = w'   # a kept cell (it sets state) reads w: w's cell and _z's come back
test_eq(example_cells(_ex), [3, 4, 7, 8, 10, 14])
_ex['cells'][14]['source'] = 'from math import *'   # binds names no one can list: kept, like a cell that sets state
test_eq(example_cells(_ex), [3, 4, 7, 8, 10])
test_eq(example_cells(dict(cells=_ex['cells'][:-2])), [])   # no experiment cell: nothing is dropped
_ex2 = dict(cells=[dict(cell_type='code', source=s, metadata=m) for s, m in [
    ('seed = 0', {'tags': ['parameters']}), ('cfg = dict(seed=seed)', {}),
    ('_d = [0, 0]\n_d[0] = 1\ntest_eq(_d, [1, 0])', {}),   # changes only the private list it made itself: an example
    ('for _d in range(2): cfg["d"] = _d', {}),              # sets shared state; reads only the `_d` it binds itself
    ('result = run_experiment(f, cfg)', {})]])
test_eq(example_cells(_ex2), [2])
test_eq(_names("x = x + 1")[1], {"x"}); test_eq(_names("x += 1")[1], {"x"})                 # reads the x from outside
test_eq(_names("rng = f(0)\ny = rng.random()")[1], {"f"})                               # reads only its own rng
test_eq(_names("for b in bs: g(b)")[1], {"bs", "g"}); test_eq(_names("with o() as t: t.x = 1")[1:], ({"o"}, False))
test_eq(_names("def h(): return z\nz = 1")[1], {"z"})                                   # h may run before z is bound here
test_eq(_names("def h(b, *, c=d):\n    e = b + c\n    return [e * k for k in q]")[1], {"d", "q"})   # parameters, locals, comprehension targets
test_eq(_names("Y = f()\nY[::4] = 0")[2], False); test_eq(_names("cfg.x = 1")[2], True); test_eq(_names("Y[0] = 1\nY = f()")[2], True)

# %% [markdown]
# ### The kernel's sockets
#
# Jupyter's default transport is TCP on 127.0.0.1: the client picks five free ports, closes them, and the kernel binds
# them a moment later. Two kernels started at once (a two-worker sweep, or anything else on the machine) can pick
# the same port; the kernel that loses prints `ZMQError: Address already in use`, and its client can wait forever on
# a heartbeat that never answers. Every kernel trustlib starts therefore talks over Unix sockets in a private
# temporary folder of its own (`kernel_sockets`), which no other process can take; the folder is removed when the
# notebook is done. On Windows, or where that folder's path would be too long for a Unix socket, TCP is kept.

# %%
#| export
_UNIX_PATH_MAX = 100   # sun_path holds 104 (macOS) to 108 (Linux) bytes; the kernel appends "-<port>"
ZYGOTE_ENV = 'TRUSTLIB_KERNEL_ZYGOTE'   # the socket of a kernel zygote (`kernel_zygote`, below) to launch kernels through

@contextlib.contextmanager
def kernel_sockets():
    """Keyword arguments for `papermill.execute_notebook` that start its kernel on Unix sockets in a private temporary
    folder (removed on exit), so that kernels started at the same time never race for a TCP port. Yields `{}` (TCP)
    on Windows or when the temporary folder's path is too long for a socket."""
    if os.name == 'nt' or not hasattr(socket, 'AF_UNIX'): yield {}; return
    d = tempfile.mkdtemp(prefix='tlk-')
    prefix = os.path.join(d, 'k')
    try:
        if len(prefix) + 8 > _UNIX_PATH_MAX: yield {}; return
        from jupyter_client.manager import AsyncKernelManager
        from traitlets import default
        class _UnixSocketKernelManager(AsyncKernelManager):
            @default('transport')
            def _transport_default(self): return 'ipc'
            @default('ip')
            def _ip_default(self): return prefix
            async def _async_launch_kernel(self, kernel_cmd, **kw):
                if kw.get('env') is not None: kw['env'] = {k: v for k, v in kw['env'].items() if k != ZYGOTE_ENV}   # not a kernel's
                proc = _zygote_launch(kernel_cmd, kw) if os.environ.get(ZYGOTE_ENV) else None   # forked by a warm zygote (below)
                if proc is None: return await super()._async_launch_kernel(kernel_cmd, **kw)
                pv = self.provisioner
                pv.process, pv.pid, pv.pgid, pv.cwd = proc, proc.pid, proc.pid, kw.get('cwd')
                self._reconcile_connection_info(pv.connection_info)
        yield dict(kernel_manager_class=_UnixSocketKernelManager)
    finally: shutil.rmtree(d, ignore_errors=True)


# %% [markdown]
# A notebook run this way reports the `ipc` transport from inside its kernel, and its socket folder is gone afterwards:

# %%
import nbformat as _nbf, papermill as _pm

# %%
_probe = _nbf.v4.new_notebook(cells=[_nbf.v4.new_code_cell(
    "from ipykernel.connect import get_connection_info\ninfo = get_connection_info(unpack=True)\n"
    "print(info['transport'], info['ip'])")])
_probe.metadata['kernelspec'] = dict(name='python3', display_name='Python 3', language='python')
_pd = Path(tempfile.mkdtemp())
_nbf.write(_probe, _pd/'probe.ipynb')
with kernel_sockets() as _kw:
    test_eq(sorted(_kw), ['kernel_manager_class'])
    _out = _pm.execute_notebook(str(_pd/'probe.ipynb'), str(_pd/'out.ipynb'), kernel_name='python3', progress_bar=False, **_kw)
    _transport, _ip = _out.cells[0].outputs[0]['text'].split()
    test_eq(_transport, 'ipc')
    assert Path(_ip).parent.is_dir() and Path(_ip).parent.name.startswith('tlk-')
assert not Path(_ip).parent.exists()   # the private socket folder is removed
shutil.rmtree(_pd)

# %% [markdown]
# Papermill writes the whole output notebook, figures included, when every cell starts and again when it
# ends: a paper notebook of about 80 cells is serialised 160 times, which costs the process that runs it
# 3–5 CPU-seconds per notebook (more than many of its cells). trustlib runs notebooks with papermill's own
# engine except for that: at cell boundaries the notebook is written at most every `NOTEBOOK_SAVE_EVERY`
# seconds. It is still written when the run starts, as soon as a cell fails, when the run ends or stops for
# any reason (a dead kernel, Ctrl-C, a timeout), and during a long cell by papermill's 30-second autosave, so
# a crash loses nothing that was already shown, and a notebook being watched is at most a few seconds behind.

# %%
#| export
NOTEBOOK_SAVE_EVERY = 5.0   # seconds: the most often a running notebook is written at cell boundaries

_ENGINE = None   # the registered engine's name, once papermill_engine() has run in this process

def papermill_engine() -> str:
    """The name of trustlib's papermill engine, registered on the first call (papermill is imported only then): papermill's
    nbclient engine with the output notebook written at cell boundaries at most every `NOTEBOOK_SAVE_EVERY` seconds (always
    at the start, on a failed cell, and at the end, whatever ends the run). Pass it as `engine_name` to `papermill.execute_notebook`."""
    global _ENGINE
    if _ENGINE is not None: return _ENGINE
    from papermill.engines import papermill_engines, NBClientEngine, NotebookExecutionManager

    class _Manager(NotebookExecutionManager):
        _throttle = False
        def save(self, **kwargs):
            if self._throttle and (self.now() - self.last_save_time).total_seconds() < NOTEBOOK_SAVE_EVERY: return
            super().save(**kwargs)
        def cell_start(self, cell, cell_index=None, **kwargs):
            self._throttle = True
            try: return super().cell_start(cell, cell_index, **kwargs)
            finally: self._throttle = False
        def cell_complete(self, cell, cell_index=None, **kwargs):
            self._throttle = cell.metadata.papermill.get('status') != self.FAILED   # a failure is written at once
            try: return super().cell_complete(cell, cell_index, **kwargs)
            finally: self._throttle = False

    class _Engine(NBClientEngine):
        @classmethod
        def execute_notebook(cls, nb, kernel_name, output_path=None, progress_bar=True, log_output=False, autosave_cell_every=30, **kwargs):
            nb_man = _Manager(nb, output_path=output_path, progress_bar=progress_bar, log_output=log_output, autosave_cell_every=autosave_cell_every)
            nb_man.notebook_start()
            try: cls.execute_managed_notebook(nb_man, kernel_name, log_output=log_output, **kwargs)
            finally:
                nb_man.cleanup_pbar()
                nb_man.notebook_complete()   # written whatever ended the run
            return nb_man.nb

    papermill_engines.register('trustlib', _Engine)
    _ENGINE = 'trustlib'
    return _ENGINE


# %% [markdown]
# Forty quick cells are written twice (start and end) instead of 82 times; a failed cell's traceback and a
# dead kernel's last outputs are on disk all the same:

# %%
from unittest import mock
import papermill.engines as _pme


# %%
def _nb(*srcs):
    n = _nbf.v4.new_notebook(cells=[_nbf.v4.new_code_cell(s) for s in srcs])
    n.metadata['kernelspec'] = dict(name='python3', display_name='Python 3', language='python')
    return n

def _count_saves(nb, engine):
    d = Path(tempfile.mkdtemp()); _nbf.write(nb, d/'in.ipynb')
    with mock.patch.object(_pme, 'write_ipynb', wraps=_pme.write_ipynb) as w, kernel_sockets() as kw:
        try: _pm.execute_notebook(str(d/'in.ipynb'), str(d/'out.ipynb'), kernel_name='python3', progress_bar=False, engine_name=engine, **kw)
        except Exception as e: err = e
        else: err = None
    out = [c for c in _nbf.read(d/'out.ipynb', as_version=4).cells if c.cell_type == 'code']   # papermill adds a note on an error
    shutil.rmtree(d)
    return w.call_count, out, err

_n40 = _nb(*[f"x{i} = {i}" for i in range(39)], "print(sum(x0 for x0 in range(39)))")
_k_pm, _, _ = _count_saves(_n40, None)            # papermill's own engine
_every = NOTEBOOK_SAVE_EVERY
try:
    NOTEBOOK_SAVE_EVERY = 0;   _k_0, _, _ = _count_saves(_n40, papermill_engine())
    NOTEBOOK_SAVE_EVERY = 1e9; _k_tl, _o_tl, _ = _count_saves(_n40, papermill_engine())   # however slow the machine
finally: NOTEBOOK_SAVE_EVERY = _every
test_eq(_k_pm, 2 * 40 + 2); test_eq(_k_0, _k_pm)
test_eq(_k_tl, 2)
test_eq(_o_tl[-1].outputs[0]['text'], "741\n")
test_eq([c.metadata.papermill['status'] for c in _o_tl], ['completed'] * 40)
_k, _o, _e = _count_saves(_nb("print('before')", "1 / 0", "print('never')"), papermill_engine())
assert type(_e).__name__ == 'PapermillExecutionError'
test_eq(_o[0].outputs[0]["text"], "before\n"); test_eq(_o[1].outputs[-1]['ename'], 'ZeroDivisionError')
_k, _o, _e = _count_saves(_nb("print('before')", "import os; os._exit(1)", "print('never')"), papermill_engine())
assert _e is not None and _o[0].outputs[0]['text'] == "before\n"   # the kernel died: what it had shown is on disk
test_eq(_o[0].metadata.papermill['status'], 'completed')

# %% [markdown]
# ### A warm kernel launcher
#
# Every kernel is a new Python process that imports what its notebook needs; torch, SciPy, scikit-learn, pandas and
# matplotlib alone cost a kernel about 5 CPU-seconds on a small machine, more than many notebooks' own cells. A
# process that runs many notebooks one after another (the test suite runs about 75) can start a *zygote*
# (`kernel_zygote`): a process that imports those libraries (and IPython's) once and then forks a kernel for each
# launch. Each kernel starts from the same clean state as a fresh one: trustlib's and ipykernel's modules are
# dropped and imported again in the kernel, the random generators are reseeded from the OS, the working folder,
# environment, standard streams and arguments are the ones the launch asked for, and the kernel exits when the
# process that launched it dies, as a fresh one does. A launch whose environment differs where the libraries
# already read it at import (`PYTHON*`, thread counts, `MPL*`, `HOME`, `TRUSTLIB_NO_NETWORK`, ...) or whose
# interpreter differs is started the usual way. The zygote waits for its kernels and adds up their CPU time
# (`zygote_cpu`), so a measurement of the launching process's CPU can include them; it stops, killing its kernels,
# when the process that started it ends or dies. No `trustlib run` uses a
# zygote unless `TRUSTLIB_KERNEL_ZYGOTE` points to one.

# %%
#| export
ZYGOTE_PRELOAD = ('numpy', 'scipy.stats', 'pandas', 'sklearn.linear_model', 'torch', 'matplotlib.pyplot', 'ipykernel.kernelapp',
                  'ipykernel.ipkernel')   # not transformers: huggingface_hub reads its cache folders at import
_ZYGOTE_FIXED = ('PYTHON', 'OMP_', 'MKL_', 'OPENBLAS_', 'KMP_', 'GOMP_', 'LD_', 'MALLOC_', 'TORCH_USE_RTLD_GLOBAL', 'TORCH_CPP_',
                 'TORCH_SHOW_CPP', 'TORCH_LOGS', 'CUDA', 'MPL', 'HOME', 'XDG_', 'TRUSTLIB_NO_NETWORK')   # read by the interpreter or
# by a preloaded library when it starts (not TORCHINDUCTOR_CACHE_DIR and the like, which torch reads when it compiles)

def _zygote_fixed(env) -> dict: return {k: v for k, v in env.items() if k.startswith(_ZYGOTE_FIXED)}

def _zygote_call(path:str, msg:dict, fds:tuple=(), timeout:float=10.0) -> dict:
    "Send `msg` (and file descriptors `fds`) to the zygote at `path`; its JSON answer."
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout); s.connect(path)
        socket.send_fds(s, [json.dumps(msg).encode()], list(fds)) if fds else s.sendall(json.dumps(msg).encode())
        s.shutdown(socket.SHUT_WR)
        data = b''.join(iter(lambda: s.recv(65536), b''))
    return json.loads(data)

class _ZygoteKernel:
    "What a provisioner needs of a `Popen`, for a kernel forked by a zygote (not this process's child)."
    stdin = stdout = stderr = None
    def __init__(self, pid:int, path:str): self.pid, self.path, self.returncode = pid, path, None
    def poll(self):
        if self.returncode is None:
            try: os.kill(self.pid, 0)                 # the zygote reaps its kernels at once: a gone pid is an ended kernel
            except ProcessLookupError:
                try: self.returncode = _zygote_call(self.path, dict(op='status', pid=self.pid)).get('exit')
                except (OSError, ValueError): pass
                if self.returncode is None: self.returncode = -signal.SIGKILL
            except PermissionError: pass
        return self.returncode
    def wait(self, timeout:float|None=None):
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() > end: raise subprocess.TimeoutExpired(str(self.pid), timeout)
            time.sleep(0.05)
        return self.returncode
    def send_signal(self, sig):
        if self.poll() is None: os.kill(self.pid, sig)
    def kill(self): self.send_signal(signal.SIGKILL)
    def terminate(self): self.send_signal(signal.SIGTERM)

def _zygote_launch(cmd:list, kw:dict) -> _ZygoteKernel|None:
    "Launch kernel command `cmd` through the zygote named by $TRUSTLIB_KERNEL_ZYGOTE; None (launch it the usual way) when there is none or it declines."
    path = os.environ.get(ZYGOTE_ENV)
    if not path or os.name == 'nt': return None
    env = dict(kw.get('env') or os.environ)   # kernel_sockets has taken the zygote's address out of it
    if not kw.get('independent'): env['JPY_PARENT_PID'] = str(os.getpid())   # as jupyter_client's launch_kernel sets it
    msg = dict(op='launch', cmd=list(cmd), env=env, cwd=str(kw.get('cwd') or os.getcwd()), client=os.getpid())
    fd = lambda v, default: v if isinstance(v, int) and v >= 0 else v.fileno() if hasattr(v, 'fileno') else default
    null = os.open(os.devnull, os.O_RDONLY)
    try: out = _zygote_call(path, msg, (null, fd(kw.get('stdout'), 1), fd(kw.get('stderr'), 2)))   # the streams a launch here would inherit
    except (OSError, ValueError, io.UnsupportedOperation): return None
    finally: os.close(null)
    return _ZygoteKernel(out['pid'], path) if 'pid' in out else None

def _zygote_child(msg:dict, fds:list, prefix:list, added:dict):
    "In the forked kernel: become what `msg`'s command would have started, run ipykernel, and exit."
    code = 1
    try:
        os.setsid()
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT): signal.signal(sig, signal.SIG_DFL)
        for target, fd in enumerate(fds): os.dup2(fd, target)
        for fd in fds: os.close(fd)
        os.chdir(msg['cwd'])
        os.environ.clear(); os.environ.update(msg['env'])
        for k, v in added.items(): os.environ.setdefault(k, v)
        for m in [m for m in sys.modules if m.split('.')[0] in ('trustlib', 'ipykernel', 'ipykernel_launcher')]:
            del sys.modules[m]   # imported again: they read the environment at import (ipykernel: its launcher's pid)
        import random
        random.seed()
        if 'numpy' in sys.modules: sys.modules['numpy'].random.seed()
        client = int(msg['client'])
        def _watch():   # a fresh kernel exits when its launcher dies (ipykernel's parent poller); so does this one
            while True:
                time.sleep(1.0)
                try: os.kill(client, 0)
                except ProcessLookupError: os._exit(1)
                except PermissionError: pass
        threading.Thread(target=_watch, daemon=True).start()
        sys.argv = ['ipykernel_launcher', *msg['cmd'][len(prefix) + 2:]]
        sys.path[0] = ''
        import runpy
        runpy.run_module('ipykernel_launcher', run_name='__main__', alter_sys=True)
        code = 0
    except SystemExit as e: code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException: traceback.print_exc()
    finally:
        try:
            import atexit; atexit._run_exitfuncs()
            sys.stdout.flush(); sys.stderr.flush()
        finally: os._exit(code)

def zygote_serve(path:str, # the Unix socket to listen on
                 prefix:list, # the interpreter and its options, as the kernel spec starts them (before `-m`)
                 preload=ZYGOTE_PRELOAD, # modules to import once
                ):
    "Serve kernel launches on `path` until SIGTERM or the end of the process that started it (see `kernel_zygote`, which starts this)."
    import importlib
    before = dict(os.environ)
    for m in preload:
        try: importlib.import_module(m)
        except Exception: pass
    added = {k: v for k, v in os.environ.items() if k not in before}   # set by an import (scikit-learn's KMP_*): set in each kernel too
    fixed = _zygote_fixed({**added, **before})   # a launcher that imported those libraries itself has them set too
    done, live, cpu, parent = {}, set(), [0.0], os.getppid()
    def reap(*_):
        while True:
            try: pid, status, ru = os.wait4(-1, os.WNOHANG)
            except ChildProcessError: return
            if pid == 0: return
            cpu[0] += ru.ru_utime + ru.ru_stime
            done[pid] = os.waitstatus_to_exitcode(status); live.discard(pid)
    def stop(*_): raise SystemExit(0)
    signal.signal(signal.SIGCHLD, reap); signal.signal(signal.SIGTERM, stop)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path); srv.listen(64); srv.settimeout(1.0)
    print('ready', flush=True)
    try:
        while True:
            try: conn, _ = srv.accept()
            except TimeoutError:
                if os.getppid() != parent: break   # the process that started it died: so does the zygote, with its kernels
                continue
            fds = []
            try:
                conn.settimeout(10)
                data, fds, *_ = socket.recv_fds(conn, 1 << 22, 3)
                while chunk := conn.recv(1 << 22): data += chunk
                msg = json.loads(data)
                if msg.get('op') == 'status': ans = dict(exit=done.get(msg.get('pid')), cpu=cpu[0])
                elif msg.get('op') != 'launch': ans = dict(error=f"unknown op {msg.get('op')!r}")
                elif len(fds) != 3: ans = dict(error='a launch passes stdin, stdout and stderr')
                elif msg['cmd'][:len(prefix) + 2] != [*prefix, '-m', 'ipykernel_launcher']: ans = dict(error='another interpreter or command')
                elif _zygote_fixed({**added, **msg['env']}) != fixed: ans = dict(error='the environment differs where the preloaded libraries read it')
                else:
                    pid = os.fork()
                    if pid == 0:
                        srv.close(); conn.close()
                        _zygote_child(msg, fds, prefix, added)
                    live.add(pid); ans = dict(pid=pid)
                conn.sendall(json.dumps(ans).encode())
            except Exception as e:
                try: conn.sendall(json.dumps(dict(error=repr(e))).encode())
                except OSError: pass
            finally:
                for fd in fds: os.close(fd)
                conn.close()
    finally:
        srv.close()
        for pid in list(live):
            try: os.killpg(pid, signal.SIGKILL)
            except OSError: pass
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        while True:
            try: os.wait4(-1, 0)
            except ChildProcessError: break

def zygote_cpu() -> float:
    "CPU seconds of the kernels that the zygote serving this process (`kernel_zygote`) has forked and reaped; 0 without one."
    path = os.environ.get(ZYGOTE_ENV)
    if not path: return 0.0
    try: return float(_zygote_call(path, dict(op='status'), timeout=5)['cpu'])
    except (OSError, ValueError, KeyError): return 0.0

@contextlib.contextmanager
def kernel_zygote(env:dict|None=None, # the environment of the zygote and of the kernels it may start (default: this process's)
                  preload=ZYGOTE_PRELOAD, # modules it imports once
                  kernel_name:str='python3', # the kernel spec whose interpreter it stands in for
                 ):
    """Start a zygote that forks warm kernels, and point `TRUSTLIB_KERNEL_ZYGOTE` at it (in this process's environment,
    so child processes use it too) until the block ends. Yields the zygote's `Popen`, or None where it cannot start
    (Windows, or no such kernel spec); kernels are then launched the usual way."""
    if os.name == 'nt': yield None; return
    from jupyter_client.kernelspec import KernelSpecManager
    try: argv = KernelSpecManager().get_kernel_spec(kernel_name).argv
    except Exception: yield None; return
    if '-m' not in argv or argv[argv.index('-m') + 1:argv.index('-m') + 2] != ['ipykernel_launcher']: yield None; return
    prefix = argv[:argv.index('-m')]
    d = tempfile.mkdtemp(prefix='tlz-')
    path = os.path.join(d, 'z')
    env = dict(os.environ if env is None else env); env.pop(ZYGOTE_ENV, None)
    code = "import json, sys; from trustlib.runs import zygote_serve; zygote_serve(sys.argv[1], json.loads(sys.argv[2]), sys.argv[3:])"
    p = subprocess.Popen([*prefix, '-c', code, path, json.dumps(prefix), *preload], env=env, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    old = os.environ.get(ZYGOTE_ENV)
    try:
        if p.stdout.readline().strip() != b'ready': p.kill(); p.wait(); yield None; return
        os.environ[ZYGOTE_ENV] = path
        yield p
    finally:
        if old is None: os.environ.pop(ZYGOTE_ENV, None)
        else: os.environ[ZYGOTE_ENV] = old
        if p.poll() is None:
            p.terminate()
            try: p.wait(30)
            except subprocess.TimeoutExpired: p.kill(); p.wait()
        p.stdout.close()
        shutil.rmtree(d, ignore_errors=True)


# %% [markdown]
# Two kernels launched through a zygote are its children, each in the folder and environment its launch asked for,
# without the zygote's trustlib modules and with its own random state; the zygote counts their CPU time. A launch
# whose environment differs where a preloaded library read it at import is started the usual way, and a kernel
# that dies is seen as dead:

# %%
_zn = _nbf.v4.new_notebook(cells=[_nbf.v4.new_code_cell(
    "import os, sys, random\nprint(os.getppid(), os.getcwd(), os.environ.get('TL_ZYGOTE_T'), 'trustlib.runs' in sys.modules, random.random())")])
_zn.metadata['kernelspec'] = dict(name='python3', display_name='Python 3', language='python')
_zd = Path(tempfile.mkdtemp()).resolve()
_nbf.write(_zn, _zd/'z.ipynb')
def _zrun(**env):
    saved = dict(os.environ); os.environ.update(env)
    try:
        with kernel_sockets() as kw:
            out = _pm.execute_notebook(str(_zd/'z.ipynb'), str(_zd/'o.ipynb'), kernel_name='python3', progress_bar=False,
                                       cwd=str(_zd), engine_name=papermill_engine(), **kw)
        return out.cells[0].outputs[0]['text'].split()
    finally: os.environ.clear(); os.environ.update(saved)
with kernel_zygote(preload=('json',)) as _z:
    assert _z is not None and os.environ[ZYGOTE_ENV]
    _o = [_zrun(TL_ZYGOTE_T=str(i)) for i in range(2)]
    test_eq([int(o[0]) for o in _o], [_z.pid] * 2)                       # forked by the zygote
    test_eq([o[1:4] for o in _o], [[str(_zd), '0', 'False'], [str(_zd), '1', 'False']])
    assert _o[0][4] != _o[1][4]                                           # reseeded: not the zygote's random state
    _c = zygote_cpu()
    assert _c > 0
    test_eq(int(_zrun(PYTHONHASHSEED='12345')[0]), os.getpid())           # declined: started the usual way
    _zd2 = _nbf.v4.new_notebook(cells=[_nbf.v4.new_code_cell("import os\nos._exit(3)")])
    _zd2.metadata['kernelspec'] = _zn.metadata['kernelspec']
    _nbf.write(_zd2, _zd/'die.ipynb')
    with kernel_sockets() as _kw:
        test_fail(lambda: _pm.execute_notebook(str(_zd/'die.ipynb'), str(_zd/'o2.ipynb'), kernel_name='python3', progress_bar=False,
                                               engine_name=papermill_engine(), **_kw), contains='Kernel died')
    assert zygote_cpu() > _c
assert ZYGOTE_ENV not in os.environ and _z.returncode is not None        # the zygote is stopped with the block
shutil.rmtree(_zd)


# %%
#| export
def _prepare_base(runs_dir:Path, name:str) -> Path:
    "`runs_dir/name`, created; a `ConfigError` with one clear line when that is impossible."
    base = runs_dir/name
    for p in (runs_dir, base):
        if p.exists() and not p.is_dir(): raise ConfigError(f"runs folder {p} is not a directory (a file is in the way); pass --runs-dir DIR")
    try:
        base.mkdir(parents=True, exist_ok=True)
        probe = base/f".probe-{secrets.token_hex(4)}"
        probe.mkdir(); probe.rmdir()
    except OSError as e:
        raise ConfigError(f"cannot write run folders under {runs_dir}: {e.strerror or e}; pass --runs-dir DIR "
                          "(or set TRUSTLIB_RUNS) to a writable folder") from None
    return base

# the recorded versions that can change a run's numbers or figures (not papermill / nbformat / ipykernel, which only execute it)
_RESULT_VERSIONS = ('python', 'trustlib-icml25', 'trustlib_build_commit', 'numpy', 'scipy', 'torch', 'pandas', 'scikit-learn', 'matplotlib', 'seaborn')

def changed_versions(recorded:dict|None, current:dict|None=None) -> list[str]:
    "'name old → new' for each of `_RESULT_VERSIONS` that differs between a run's recorded `versions` and `current` (default: this environment's)."
    current = versions() if current is None else current
    recorded = recorded if isinstance(recorded, dict) else {}
    return [f"{k} {recorded.get(k) or 'absent'} → {current.get(k) or 'absent'}" for k in _RESULT_VERSIONS if recorded.get(k) != current.get(k)]

def _current(final:Path, src_sha:str|None, file_sha:str|None, params:dict) -> tuple[bool, str]:
    "Whether `final` is a complete run of this notebook source with these parameters and package versions, and why not."
    if not final.exists(): return False, 'no run yet'
    if not is_complete(final): return False, 're-run: the recorded run did not complete'
    try: m = load_run(final)
    except (OSError, ValueError): return False, 're-run: the recorded run is unreadable'
    rec = m.get('source_code_sha1')
    if rec is not None and src_sha is not None:
        if rec != src_sha: return False, 're-run: the notebook source changed since the recorded run'
    elif m.get('source_sha1') != file_sha: return False, 're-run: the notebook changed since the recorded run'
    if not _same(decode_params(m.get('params') or {}), params): return False, 're-run: the recorded parameters differ'
    changed = changed_versions(m.get('versions'))
    if changed: return False, f"re-run: package versions changed since the recorded run ({_cap_msg(', '.join(changed), 200)})"
    return True, 'already complete'

def _run(paper, params, profile, *, notebook=None, runs_dir=None, kernel="python3", progress=True, timeout=None,
         root=None, nbs_dir=None, allow_large=False, wait=True, reuse=False, on_wait=None, validator=None, rehearse=False) -> tuple[Path, bool, str]:
    "Run (or, with `reuse`, skip a current run); return `(folder, executed, note)`."
    if rehearse and rehearse != 'inner':   # the full profile on stand-ins: validated and run with the hub and the data folder redirected
        from trustlib.rehearse import rehearsal, rehearsal_params, REHEARSAL
        if profile != 'full': raise ConfigError(f"a rehearsal runs the full profile, not {profile!r}")
        name = paper or Path(notebook).stem
        if name not in REHEARSAL: rehearsal_params(name)   # raises, saying why this paper's full path cannot be rehearsed yet
        with rehearsal(paper=name):
            return _run(paper, {**rehearsal_params(name), **dict(params or {})}, profile, notebook=notebook, runs_dir=runs_dir, kernel=kernel,
                        progress=progress, timeout=timeout, root=root, nbs_dir=nbs_dir, allow_large=allow_large, wait=wait, reuse=reuse,
                        on_wait=on_wait, validator=validator, rehearse='inner')
    v = validator or ParamValidator(paper, notebook, root, nbs_dir, allow_large)
    params = v.check(profile, dict(params or {}))
    name, nb = v.name, v.nb
    runs_dir = _local_runs_dir(runs_dir, root if notebook is None else None)
    base = _prepare_base(runs_dir, name)
    rid = run_id(profile, params)
    if rehearse == 'inner': rid = rid.replace(f"{profile}-", f"{profile}-rehearsal-", 1)   # never the id of a real run
    final = base/rid
    lock = RunLock(base, rid)
    waited = []
    def _told(h):
        waited.append(h)
        (on_wait or (lambda h: print(f"run {name}/{rid} is in progress in {describe_holder(h)}; waiting for it", file=sys.stderr)))(h)
    if not lock.acquire(wait=wait, on_wait=_told):
        raise RunLocked(f"run {name}/{rid} is in progress in {describe_holder(lock.holder() or {})}; skipped")
    try:
        src_sha, file_sha = notebook_source_sha1(nb), _sha1_file(nb)
        if reuse:
            ok, why = _current(final, src_sha, file_sha, params)
            if ok: return final, False, ('completed by another process' if waited else why)
        else: why = ''
        clean_stale(base, holding=rid)
        return _execute(name, nb, rid, profile, params, base, final, lock, kernel, progress, timeout, allow_large, src_sha, file_sha,
                        rehearse == 'inner'), True, why
    finally: lock.release()

def _execute(name, nb, rid, profile, params, base, final, lock, kernel, progress, timeout, allow_large, src_sha, file_sha, rehearsal=False) -> Path:
    import nbformat
    tmp = base/f".tmp-{rid}-{secrets.token_hex(4)}"
    tmp.mkdir()
    _ACTIVE.add(str(tmp))
    partial = tmp/f".partial-{nb.name}"
    out_nb = tmp/nb.name
    meta = dict(paper=name, run_id=rid, status='running', profile=profile, params=encode_params(params),
                notebook=nb.name, source_notebook=_relpath(nb), source_sha1=file_sha, source_code_sha1=src_sha,
                hostname=socket.gethostname(), machine=machine_info(), started=_now(), **(dict(rehearsal=True) if rehearsal else {}))
    t0 = time.perf_counter()
    saved_env = {k: os.environ.get(k) for k in ('TRUSTLIB_RUN_DIR', 'TQDM_DISABLE', 'TRUSTLIB_ALLOW_LARGE')}
    old_term = None
    def _set_env():
        os.environ['TRUSTLIB_RUN_DIR'] = str(tmp)   # the kernel inherits it: `record` writes here
        if os.environ.get('TRUSTLIB_PROGRESS', '') in ('', '0'): os.environ['TQDM_DISABLE'] = '1'
        if allow_large: os.environ['TRUSTLIB_ALLOW_LARGE'] = '1'
    def _restore_env():
        for k, val in saved_env.items():
            if val is None: os.environ.pop(k, None)
            else: os.environ[k] = val
    def _save_notebook(node=None):
        "Write the executed notebook into the run folder atomically (from papermill's node, or its last complete save)."
        from trustlib.results import atomic_write_text
        if node is None:
            try: node = nbformat.reads(partial.read_text(encoding='utf-8'), as_version=4)
            except Exception: return False   # missing or torn (e.g. the disk filled up mid-write): publish no notebook
        pm_meta = node.get('metadata', {}).get('papermill')
        if pm_meta is not None: pm_meta.update(input_path=meta['source_notebook'], output_path=nb.name)
        scrub_notebook(node, (tmp, base))
        atomic_write_text(out_nb, nbformat.writes(node))
        partial.unlink(missing_ok=True)
        return True
    try:
        (tmp/'.owner').write_text(json.dumps(dict(host=socket.gethostname(), pid=os.getpid(), started=_now())))
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            def _on_term(signum, frame): raise Terminated("the run received SIGTERM")
            old_term = signal.signal(signal.SIGTERM, _on_term)
        import papermill as pm
        src = inject_parameters(nbformat.read(str(nb), as_version=4), dict(profile=profile, **params))
        if rehearsal: src = drop_examples(src)   # the examples are the smoke test's; a rehearsal checks the full path
        inp = tmp/f".input-{nb.name}"
        inp.write_text(nbformat.writes(src), encoding='utf-8')
        _set_env()
        try:
            with kernel_sockets() as kkw:
                node = pm.execute_notebook(str(inp), str(partial), parameters=None, kernel_name=kernel, engine_name=papermill_engine(),
                                           cwd=str(nb.parent), progress_bar=progress, log_output=False, execution_timeout=timeout,
                                           extra_arguments=['--IPKernelApp.log_level=CRITICAL'], **kkw)   # no kernel log noise on stderr
        finally: _restore_env()
        inp.unlink(missing_ok=True)
        _save_notebook(node)
        if not (tmp/'result.json').exists():
            raise NoResult("the notebook recorded no result: it ran to the end without calling trustlib.results.record(result)")
        res = json.loads((tmp/'result.json').read_text())
        meta.update(status='complete', **{k: res.get(k, d) for k, d in (('config', {}), ('metrics', {}), ('verdicts', []), ('claims_hash', ''), ('tables', []), ('figures', []))})
        if isinstance(res.get('timings'), dict): meta['timings'] = res['timings']
        if res.get('rehearsal'): meta['rehearsal'] = True
        meta.update(versions=versions(), **git_info(nb.parent), finished=_now(), duration_s=round(time.perf_counter() - t0, 3))
        write_json(tmp/'metrics.json', meta)
        if not lock.owned(): raise RunFailed(f"the lock {lock.path.name} was taken over by another process; not publishing")
        _swap_in(tmp, final)
        return final
    except BaseException as e:
        err, tb, chain = _describe_error(e)
        where = None
        try:
            (tmp/f".input-{nb.name}").unlink(missing_ok=True)
            (tmp/'result.json').unlink(missing_ok=True)   # never leave a result that looks complete
            if not out_nb.exists() and not _save_notebook(): meta['notebook'] = None
            partial.unlink(missing_ok=True)
            meta.update(status='failed', error=err, error_chain=chain, traceback=tb, config={}, metrics={}, verdicts=[], tables=[], figures=[],
                        versions=versions(), **git_info(nb.parent), finished=_now(), duration_s=round(time.perf_counter() - t0, 3))
            write_json(tmp/'metrics.json', meta)
            if lock.owned():
                if is_complete(final): where = _failed_name(final); _rename(tmp, where)   # a complete run is never replaced by a failure
                else: _swap_in(tmp, final); where = final
                (where/'.owner').unlink(missing_ok=True)
        except BaseException as e2:   # recording failed too (disk full, crash in rename): leave the hidden temp folder
            where, err = None, f"{err} (and recording the failure failed: {type(e2).__name__}: {_cap_msg(str(e2), 300)})"
        if isinstance(e, (KeyboardInterrupt, SystemExit)): raise
        raise RunFailed(f"run {name}/{rid} failed: {err}" + (f"; see {where}/metrics.json" if where else ""), where, err, chain) from e
    finally:
        _ACTIVE.discard(str(tmp))
        if old_term is not None: signal.signal(signal.SIGTERM, old_term)

def run_notebook(paper:str|None=None, # paper name (notebook stem); see `trustlib list`
                 params:dict|None=None, # parameter overrides (validated before any work)
                 profile:str="cpu", # smoke | cpu | full
                 *, notebook:str|Path|None=None, # or: any parameterised notebook (run name = its stem)
                 runs_dir:str|Path|None=None, # default: $TRUSTLIB_RUNS or <repo>/runs
                 kernel:str="python3", # Jupyter kernel name
                 progress:bool=True, # papermill's per-cell progress bar
                 timeout:float|None=None, # per-cell timeout in seconds
                 root:str|Path|None=None, nbs_dir:str|Path|None=None,
                 allow_large:bool=False, # lift the Config's soft upper bounds
                 wait:bool=True, # if another process runs this run id: wait for it (False: raise `RunLocked`)
                 rehearse:bool=False, # run the full profile on offline stand-ins (`trustlib.rehearse`); marked `rehearsal: true`, never published
                ) -> Path:
    "Execute a paper notebook with papermill into `runs/<paper>/<run_id>/`; return that folder."
    return _run(paper, params, profile, notebook=notebook, runs_dir=runs_dir, kernel=kernel, progress=progress, timeout=timeout,
                root=root, nbs_dir=nbs_dir, allow_large=allow_large, wait=wait, rehearse=rehearse)[0]

_OBJECT_STORE_FS = ('fuse.s3fs', 'fuse.gcsfuse', 'fuse.goofys', 'fuse.geesefs', 'fuse.rclone', 'fuse.mountpoint-s3',
                    'fuse.blobfuse', 'fuse.blobfuse2', 'fuse.s3backer', 'fuse.riofs', 'fuse.cloudfuse')

def mount_of(path:str|Path, mounts:str|None=None) -> tuple[str, str]|None:
    "`(mount point, file system type)` of the mount holding absolute `path`, from `/proc/mounts` (or `mounts`); None if unknown."
    if mounts is None:
        try: mounts = Path('/proc/mounts').read_text()
        except OSError: return None
    p, best = str(path), None
    for line in mounts.splitlines():
        f = line.split()
        if len(f) < 3: continue
        mp = f[1].replace('\\040', ' ')
        if (p == mp or p.startswith(mp.rstrip('/') + '/')) and (best is None or len(mp) > len(best[0])): best = (mp, f[2])
    return best

def _local_runs_dir(runs_dir, root=None) -> Path:
    "`runs_dir` (default `default_runs_dir(root)`) as an absolute local path; URLs and object-store mounts are rejected."
    if runs_dir is not None and re.match(r'^[a-z][a-z0-9+.-]*://', str(runs_dir)):
        raise ConfigError(f"runs_dir {short(str(runs_dir))}: run folders need a file system with atomic rename; on a cluster use "
                          "a shared mount of a file system (NFS, EFS, CephFS, Lustre) at the same path on every node instead of a URL")
    try: p = (Path(runs_dir).expanduser() if runs_dir is not None else default_runs_dir(root)).resolve()
    except (OSError, RuntimeError) as e: raise ConfigError(f"runs folder {short(str(runs_dir))}: {e}") from None
    m = mount_of(p)
    if m is not None and m[1] in _OBJECT_STORE_FS:
        raise ConfigError(f"runs folder {p} is on a {m[1]} mount of an object store ({m[0]}): it has no atomic rename and no exclusive "
                          "file creation, so a run could be seen half-written or run twice; use a shared file system (NFS, EFS, CephFS, Lustre)")
    return p

def _relpath(p:Path) -> str:
    try: return str(Path(p).resolve().relative_to(find_root(Path(p).parent)))
    except (ConfigError, ValueError): return Path(p).name


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
    "Yield the published run folders `runs_dir/<paper>/<run_id>` and `<run_id>.failed-*` (hidden folders are skipped)."
    runs_dir = Path(runs_dir) if runs_dir is not None else default_runs_dir()
    try:
        if not runs_dir.is_dir(): return
        papers = sorted(runs_dir.iterdir())
    except OSError: return
    for pd_ in papers:
        try:
            if not pd_.is_dir() or pd_.name.startswith('.'): continue
            rds = sorted(pd_.iterdir())
        except OSError: continue
        for rd in rds:
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
test_eq([p.name for p in (runs/'toy').iterdir()], [d.name])   # no temporary folders or locks left
{k: m[k] for k in ('paper', 'run_id', 'status', 'profile', 'params', 'metrics', 'notebook', 'git_commit', 'duration_s')}

# %% [markdown]
# The executed notebook carries the `injected-parameters` cell:

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
# A failed re-run of a run id that has a complete run is recorded beside it; the complete run stays. Here the
# notebook is changed to fail whatever its parameters, and the seed-3 run is run again:

# %%
_brk = Path(tempfile.mkdtemp())/'toy.ipynb'
_bnb = json.loads(TOY.read_text()); _bnb['cells'][2]['source'] = 'raise ValueError("broken notebook")'
_brk.write_text(json.dumps(_bnb))
try: run_notebook(notebook=_brk, params=dict(seed=3), profile='smoke', runs_dir=runs, progress=False); raise AssertionError('no error')
except RunFailed as e: failed = e
test_eq(failed.run_dir.name.startswith(d.name + '.failed-'), True)
test_eq((is_complete(d), load_run(d)['metrics']['value']), (True, 6))   # the complete run is intact
test_eq(load_run(failed.run_dir)['error'], 'ValueError: broken notebook')

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
# resources: {num_cpus: 1}      # what one run needs (Ray backend; see below)
# ```
#
# The spec is limited in size (`MAX_SPEC_BYTES`) and, after loading, in items (`MAX_SPEC_NODES`, counting
# every reference: a YAML alias "bomb" of a few hundred bytes is refused, not expanded), and its grid in points
# (`MAX_GRID_POINTS`, unless `allow_large`). The spec and every grid point are validated before the first run
# starts (with a progress count). A grid point is skipped when its complete run was made from the same
# notebook source with the same canonical parameters; otherwise it runs, and the result table says why
# (`note`). Failed runs are run again. Two sweeps of one spec at the same time never execute a run twice:
# each takes a run's lock before it runs it; a sweep that finds a lock held moves on and comes back to that
# grid point at the end, waiting for the lock, and then skips it if the other sweep completed it.

# %%
#| export
_SPEC_KEYS = ('paper', 'notebook', 'profile', 'params', 'grid', 'resources')
MAX_SPEC_BYTES = 64 * 1024
MAX_SPEC_NODES = 100_000
MAX_GRID_POINTS = 10_000

def load_spec(spec:dict|str|Path) -> dict:
    "Read and check a sweep spec (dict or YAML file); relative notebook paths are resolved against the cwd, then the spec's folder."
    src = None
    if isinstance(spec, (str, Path)):
        src = Path(spec).expanduser()
        if src.is_dir(): raise ConfigError(f"sweep spec {short(str(spec))} is a folder; give the path of a YAML spec file (e.g. sweeps/smoke.yaml)")
        if not src.is_file(): raise ConfigError(f"sweep spec {short(str(spec))} does not exist")
        import yaml
        try:
            size = src.stat().st_size
            if size > MAX_SPEC_BYTES: raise ConfigError(f"sweep spec {src.name}: {size} bytes; a spec is at most {MAX_SPEC_BYTES} bytes")
            text = src.read_text(encoding='utf-8')
        except UnicodeDecodeError: raise ConfigError(f"sweep spec {src.name}: not UTF-8 text") from None
        except OSError as e: raise ConfigError(f"sweep spec {src.name}: cannot read it: {e.strerror or e}") from None
        try: spec = yaml.safe_load(text)
        except yaml.YAMLError as e: raise ConfigError(f"sweep spec {src.name}: invalid YAML: {_cap_msg(str(e), 300)}") from None
        except RecursionError: raise ConfigError(f"sweep spec {src.name}: nested too deeply") from None
        except Exception as e: raise ConfigError(f"sweep spec {src.name}: cannot be read as YAML ({type(e).__name__}: {_cap_msg(str(e), 200)})") from None
    if _count_nodes(spec, MAX_SPEC_NODES) > MAX_SPEC_NODES:
        raise ConfigError(f"sweep spec: more than {MAX_SPEC_NODES} items after loading (YAML aliases count every time they are used); refused")
    if not isinstance(spec, dict): raise ConfigError(f"a sweep spec must be a mapping with keys {list(_SPEC_KEYS)}, got {type(spec).__name__}")
    unknown = sorted(k if len(k) <= 40 else k[:39] + '…' for k in set(map(str, spec)) - set(_SPEC_KEYS))
    if unknown: raise ConfigError(f"sweep spec: unknown key(s) {unknown[:10]}; allowed: {list(_SPEC_KEYS)}")
    if bool(spec.get('paper')) == bool(spec.get('notebook')): raise ConfigError("sweep spec: give exactly one of 'paper' or 'notebook'")
    for k in ('paper', 'notebook', 'profile'):
        if k in spec and type(spec[k]) is not str: raise ConfigError(f"sweep spec: {k!r} must be a string, got {short(spec[k])}")
    spec = dict(spec)
    spec.setdefault('profile', 'cpu'); _check_profile(spec['profile'])
    if isinstance(spec.get('grid'), dict) and not spec['grid']:
        raise ConfigError("sweep spec: 'grid' is empty; give each swept parameter a list of values, or leave 'grid' out to run 'params' once")
    for k in ('params', 'grid'):
        spec[k] = {} if spec.get(k) is None else spec[k]
        if not isinstance(spec[k], dict) or not all(isinstance(n, str) for n in spec[k]):
            raise ConfigError(f"sweep spec: {k!r} must be a mapping of parameter names to values")
    for n, vals in spec['grid'].items():
        if not isinstance(vals, list) or not vals: raise ConfigError(f"sweep spec: grid {n!r} must be a non-empty list of values, got {short(vals)}")
    both = sorted(set(spec['params']) & set(spec['grid']))
    if both: raise ConfigError(f"sweep spec: parameter(s) {both} are both fixed (params) and swept (grid)")
    if 'profile' in spec['params']: raise ConfigError("sweep spec: set the profile with the 'profile' key (or sweep it in 'grid')")
    spec['resources'] = check_resources(spec.get('resources'))
    if spec.get('notebook'):
        nb = Path(spec['notebook']).expanduser()
        if not nb.is_absolute() and not nb.exists() and src is not None and (src.parent/nb).exists(): nb = src.parent/nb
        spec['notebook'] = str(nb.resolve())
    return spec

_RESOURCE_KEYS = ('num_cpus', 'num_gpus', 'memory')
_UNITS = {'': 1, 'b': 1, 'k': 10**3, 'kb': 10**3, 'm': 10**6, 'mb': 10**6, 'g': 10**9, 'gb': 10**9, 't': 10**12, 'tb': 10**12,
          'ki': 2**10, 'kib': 2**10, 'mi': 2**20, 'mib': 2**20, 'gi': 2**30, 'gib': 2**30, 'ti': 2**40, 'tib': 2**40}

def parse_memory(v) -> int:
    "Bytes, from a positive int or a size such as `'512MiB'`, `'4GB'`, `'2.5GiB'`."
    if type(v) is int and v > 0: return v
    if type(v) is str:
        m = re.fullmatch(r'\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*', v.lower())
        if m and m[2] in _UNITS and int(float(m[1]) * _UNITS[m[2]]) > 0: return int(float(m[1]) * _UNITS[m[2]])
    raise ConfigError(f"sweep spec: resources 'memory' must be a positive number of bytes or a size such as '4GiB' or '500MB', got {short(v)}")

def check_resources(r) -> dict:
    "The per-run resources of a spec (`num_cpus` default 1, `num_gpus`, `memory` in bytes), checked; `ConfigError` otherwise."
    r = {} if r is None else r
    if not isinstance(r, dict): raise ConfigError(f"sweep spec: 'resources' must be a mapping with keys {list(_RESOURCE_KEYS)}, got {short(r)}")
    unknown = sorted(map(str, set(r) - set(_RESOURCE_KEYS)))
    if unknown: raise ConfigError(f"sweep spec: unknown resource(s) {[u[:40] for u in unknown[:10]]}; allowed: {list(_RESOURCE_KEYS)}")
    out = dict(num_cpus=1)
    for k in ('num_cpus', 'num_gpus'):
        if k not in r: continue
        v = r[k]
        if type(v) not in (int, float) or not math.isfinite(v) or v < 0:
            raise ConfigError(f"sweep spec: resources {k!r} must be a number >= 0, got {short(v)}")
        out[k] = v
    if 'memory' in r: out['memory'] = parse_memory(r['memory'])
    return out

def grid_size(spec:dict) -> int:
    "Number of grid points (the product of the grid's list lengths), computed without building them."
    return math.prod(len(v) for v in spec['grid'].values())

def grid_points(spec:dict, allow_large:bool=False) -> list[tuple[str, dict]]:
    "`(profile, params)` for every combination of the grid (in grid order); refuses more than `MAX_GRID_POINTS` unless `allow_large`."
    import itertools
    n = grid_size(spec)
    if n > MAX_GRID_POINTS and not allow_large:
        dims = ' × '.join(f"{len(v)} {k}" for k, v in spec['grid'].items())
        raise ConfigError(f"sweep spec: the grid has {n:,} points ({dims}); the limit is {MAX_GRID_POINTS:,} (pass --allow-large to run it anyway)")
    names = list(spec['grid'])
    pts = []
    for combo in itertools.product(*(spec['grid'][k] for k in names)):
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
test_fail(lambda: grid_points(load_spec(dict(notebook=str(TOY), grid=dict(seed=list(range(1000)), sleep=list(range(1000)))))),
          contains="the grid has 1,000,000 points (1000 seed × 1000 sleep); the limit is 10,000")
test_eq(_spec['resources'], dict(num_cpus=1))
test_eq(check_resources(dict(num_cpus=2, num_gpus=0.5, memory='1.5GiB')), dict(num_cpus=2, num_gpus=0.5, memory=3 * 2**29))
test_eq(parse_memory('500MB'), 500 * 10**6)
test_fail(lambda: check_resources(dict(cpus=2)), contains="unknown resource(s) ['cpus']; allowed: ['num_cpus', 'num_gpus', 'memory']")
test_fail(lambda: check_resources(dict(num_gpus=-1)), contains="resources 'num_gpus' must be a number >= 0")
test_fail(lambda: check_resources(dict(memory='lots')), contains="such as '4GiB'")
_yb = Path(tempfile.mkdtemp())/'bomb.yaml'
_yb.write_text(f"notebook: {TOY}\na: &a [x, x, x, x, x, x, x, x, x]\n" + ''.join(f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
               for p, c in zip('abcdefgh', 'bcdefghi')))
test_fail(lambda: load_spec(_yb), contains="more than 100000 items after loading")

# %%
#| export
SWEEP_RETRIES = 2     # times a grid point whose worker died is submitted again before it is recorded as failed
SWEEP_POLL_S = 0.5    # how often the scheduling loop looks at its tasks (and refreshes the progress counts)

class WorkerDied(RuntimeError):
    "The process executing a grid point died (killed, out of memory, node lost) before it returned a result."

def _row(status, path=None, error=None, skipped=False, note=''):
    return dict(status=status, path=path, error=error, skipped=skipped, note=note)

def _sweep_job(job:dict) -> dict:
    "Run one grid point (in this process, a worker process or a Ray task); never raises for a failed run."
    marker = job.get('marker')
    if marker and not os.path.exists(marker):
        return _row('failed', error=f"the runs folder {job['runs_dir']} on host {socket.gethostname()} is not the one the sweep writes to: "
                                    "every node must see the same runs folder (and checkout) at the same path")
    try:
        d, executed, note = _run(job['paper'], job['params'], job['profile'], notebook=job['notebook'], runs_dir=job['runs_dir'],
                                 progress=False, root=job.get('root'), nbs_dir=job.get('nbs_dir'), allow_large=job.get('allow_large', False),
                                 wait=job.get('wait', False), reuse=True, on_wait=lambda h: None)
        return _row('complete', str(d), skipped=not executed, note=note)
    except RunLocked as e: return _row('busy', error=str(e), skipped=True, note='in progress elsewhere')
    except RunFailed as e: return _row('failed', str(e.run_dir) if e.run_dir else None, e.error)
    except Exception as e: return _row('failed', error=_cap_msg(f"{type(e).__name__}: {e}", 500))

def _record_lost(job:dict, error:str) -> dict:
    "Publish a grid point whose worker kept dying as a failed run (under its lock, like any run); return its result row."
    base, rid = Path(job['runs_dir'])/job['name'], job['run_id']
    final, nb, err = base/rid, Path(job['nb']), _cap_msg(error, 500)
    lock = RunLock(base, rid)
    try:
        if not lock.acquire(wait=False):
            return _row('failed', error=f"{err}; not recorded: the run is locked by {describe_holder(lock.holder() or {})}")
    except OSError as e: return _row('failed', error=f"{err}; not recorded: {e}")
    try:
        src_sha, file_sha = notebook_source_sha1(nb), _sha1_file(nb)
        ok, _ = _current(final, src_sha, file_sha, job['params'])
        if ok: return _row('complete', str(final), skipped=True, note='completed by another process')
        clean_stale(base, holding=rid)
        tmp = base/f".tmp-{rid}-{secrets.token_hex(4)}"
        tmp.mkdir()
        now = _now()
        write_json(tmp/'metrics.json', dict(
            paper=job['name'], run_id=rid, status='failed', profile=job['profile'], params=encode_params(job['params']), notebook=None,
            source_notebook=_relpath(nb), source_sha1=file_sha, source_code_sha1=src_sha, hostname=socket.gethostname(), machine=machine_info(), started=now,
            error=err, error_chain=[err], traceback='', config={}, metrics={}, verdicts=[], tables=[], figures=[],
            versions=versions(), **git_info(nb.parent), finished=now, duration_s=None))
        if is_complete(final): where = _failed_name(final); _rename(tmp, where)   # a complete run is never replaced by a failure
        else: _swap_in(tmp, final); where = final
        return _row('failed', str(where), err)
    finally: lock.release()


# %% [markdown]
# ### One scheduling loop for every backend
#
# A backend only starts grid points and says how they ended: `submit(i, job)`, `wait(timeout, progress)` →
# `[(i, result_row, None) | (i, None, "why the worker died")]`, `running(inflight)`, `close()`, and a
# `capacity` (grid points it runs at once). Everything else is `_drive`, the same for all of them:
#
# - a grid point whose run is locked by another process (`busy`) is put back at the end of the queue, and
#   then waits for that lock (and is skipped if the other process completed it);
# - a grid point whose worker died is submitted again (first in the queue), at most `retries` times, and is
#   then published as a failed run with the reason (`_record_lost`); a dead worker leaves only a hidden
#   `.tmp-*` folder and a lock whose process is gone, which the next attempt breaks and deletes;
# - progress: `SweepProgress` counts done (complete, skipped included) / running / failed / remaining.
#
# The backends: `_InlineBackend` (`workers=1`: in this process), `_PoolBackend` (`workers=N`: N spawned worker
# processes, each running one grid point at a time; a worker that dies is replaced, and the grid point it held
# is the one reported lost; ctrl-C, which the terminal sends to the workers too, makes each record its run as
# failed, say so in one line and exit, and the sweep waits up to `SWEEP_STOP_S` for them, then exits 130) and
# `_RayBackend` (one Ray task per grid point, with the spec's `resources`; Ray's own retries are off, so `_drive`
# decides). A worker killed while it holds a run lock may stay a zombie until its parent reaps it (Ray's raylet, on
# a busy machine); `_pid_alive` counts a zombie as dead, so the lost run is recorded at once.

# %%
#| export
class SweepProgress:
    "Live counts of a sweep (done, running, failed, remaining) on a tqdm bar and/or passed to `callback(counts)` when they change."
    def __init__(self, total:int, done:int=0, desc:str='sweep', show:bool=True, callback=None):
        from tqdm import tqdm
        self.total, self.done, self.failed, self.running, self.callback, self._last = total, done, 0, 0, callback, None
        self.bar = tqdm(total=total, initial=done, desc=desc, unit='run', disable=not show)
        self.update(0)

    def counts(self) -> dict:
        return dict(done=self.done, running=self.running, failed=self.failed, remaining=self.total - self.done - self.failed - self.running)

    def update(self, running:int, ended=()):
        "`running` grid points now in progress; `ended`: the statuses of those that just ended."
        for st in ended:
            if st == 'complete': self.done += 1
            else: self.failed += 1
        self.running = running
        c = self.counts()
        if c == self._last: return
        self._last = c
        self.bar.set_postfix_str(f"done={c['done']} running={c['running']} failed={c['failed']} remaining={c['remaining']}", refresh=False)
        if ended: self.bar.update(len(ended))
        self.bar.refresh()   # every change is shown (update alone redraws at most every `mininterval`)
        if self.callback is not None: self.callback(dict(c))

    def close(self): self.bar.close()

def _drive(jobs:list, todo:list, backend, prog:SweepProgress, retries:int=SWEEP_RETRIES) -> dict:
    "Run grid points `todo` (indices into `jobs`) on `backend`; return `{index: result row}` (see above)."
    results, lost, queue, inflight = {}, {}, list(todo), set()
    try:
        while queue or inflight:
            while queue and len(inflight) < backend.capacity:
                i = queue.pop(0); backend.submit(i, jobs[i]); inflight.add(i)
            ended = []
            for i, res, died in backend.wait(SWEEP_POLL_S, prog):
                inflight.discard(i)
                if died is not None:
                    lost[i] = lost.get(i, 0) + 1
                    if lost[i] <= retries: queue.insert(0, i); continue
                    res = _record_lost(jobs[i], f"{WorkerDied.__name__}: the worker running it died {lost[i]} time(s); last: {died}")
                elif res['status'] == 'busy' and not jobs[i].get('wait'):
                    jobs[i] = dict(jobs[i], wait=True); queue.append(i); continue
                if lost.get(i) and res['status'] == 'complete': res = dict(res, note=f"ran again after its worker died ({lost[i]}×)")
                results[i] = res; ended.append(res['status'])
            prog.update(backend.running(inflight), ended)
    finally: backend.close()
    return results

class _InlineBackend:
    "One grid point at a time, in this process."
    capacity = 1
    def __init__(self): self.q = []
    def submit(self, i, job): self.q.append((i, job))
    def running(self, inflight): return len(inflight)
    def wait(self, timeout, prog):
        i, job = self.q.pop(0)
        prog.update(1)
        return [(i, _sweep_job(job), None)]
    def close(self): self.q.clear()

def _pool_worker(conn):
    """A local worker process: run the jobs it is sent, one at a time, until the pipe closes. ctrl-C (SIGINT, which the
    terminal sends to the whole process group) or SIGTERM stops the run it holds, which is recorded as failed while
    further signals are ignored; the worker then says so in one line and exits (130 or 143), with no traceback."""
    def _ignore(signum, frame): pass
    def _stop(signum, frame):
        # a second signal must not cut the recording short. A no-op handler, not SIG_IGN: a signal already caught at the C
        # level but not yet handled in Python would then raise "OSError: Signal 15 ignored due to race condition" (a traceback)
        signal.signal(signal.SIGINT, _ignore); signal.signal(signal.SIGTERM, _ignore)
        if signum == signal.SIGINT: raise KeyboardInterrupt
        raise Terminated("the run received SIGTERM")
    signal.signal(signal.SIGINT, _stop); signal.signal(signal.SIGTERM, _stop)
    job = None
    try:
        while True:
            try: job = conn.recv()
            except (EOFError, OSError): return
            if job is None: return
            conn.send(_sweep_job(job)); job = None
    except KeyboardInterrupt as e:   # Terminated included
        how = 'SIGTERM' if isinstance(e, Terminated) else 'ctrl-C'
        if job is not None: print(f"sweep worker {os.getpid()}: run {job.get('name')}/{job.get('run_id')} stopped by {how}", file=sys.stderr, flush=True)
        try: conn.close()
        finally: os._exit(143 if isinstance(e, Terminated) else 130)   # the run is recorded; no interpreter teardown (asyncio would print papermill's dead-kernel task)

SWEEP_STOP_S = 60   # how long an interrupted sweep waits for a stopped worker to record its run as failed

class _PoolBackend:
    "`n` spawned worker processes; a worker that dies is replaced and its grid point reported lost."
    def __init__(self, n:int):
        import multiprocessing as mp
        self.ctx, self.capacity, self.idle, self.busy = mp.get_context('spawn'), n, [], {}   # spawn: safe under threads (Jupyter, tqdm)

    def _start(self):
        import trustlib.runs   # the library's own function: picklable by reference even when called from a notebook
        parent, child = self.ctx.Pipe()
        p = self.ctx.Process(target=trustlib.runs._pool_worker, args=(child,), daemon=True, name='trustlib-sweep-worker')
        p.start(); child.close()
        return p, parent

    def submit(self, i, job):
        w = self.idle.pop() if self.idle else self._start()
        try: w[1].send(job)
        except (OSError, EOFError): w = self._start(); w[1].send(job)   # it died while idle
        self.busy[i] = w

    def running(self, inflight): return len(self.busy)

    def wait(self, timeout, prog):
        from multiprocessing.connection import wait
        ready = set(wait([c for _, c in self.busy.values()] + [p.sentinel for p, _ in self.busy.values()], timeout))
        out = []
        for i, (p, c) in list(self.busy.items()):
            if c not in ready and p.sentinel not in ready: continue
            del self.busy[i]
            try:
                if not c.poll(): raise EOFError
                out.append((i, c.recv(), None)); self.idle.append((p, c))
            except (EOFError, OSError):
                p.join(5); c.close()
                code = p.exitcode
                why = f"killed by signal {-code}" if isinstance(code, int) and code < 0 else f"exit code {code}"
                out.append((i, None, f"local worker process {p.pid} died ({why})"))
        return out

    def close(self):
        for p, c in self.idle + list(self.busy.values()):
            try: c.send(None)
            except (OSError, EOFError): pass
        for p, c in self.idle: p.join(5)
        for p, c in list(self.busy.values()) + self.idle:   # interrupted: workers still running are stopped (their runs are recorded as failed)
            if p.is_alive(): p.terminate()                   # a worker already stopping (ctrl-C reached it too) ignores this
        for p, c in list(self.busy.values()) + self.idle:
            p.join(SWEEP_STOP_S)                             # time to record the stopped run as failed
            if p.is_alive(): p.kill(); p.join(5)             # stuck: its run stays a hidden temp folder, cleaned by the next run
            c.close()
        self.idle, self.busy = [], {}

RAY_CONNECT_TIMEOUT_S = 10   # an address that does not answer within this is refused (Ray itself retries forever)
# the environment of a local Ray's processes: no usage stats, and HTTP only through a closed loopback port, so that
# Ray's own cloud probes (the usage-stats module asks the cloud metadata address even when stats are off; the TPU
# check asks GCE's) fail at once on 127.0.0.1 instead of leaving the machine; Ray's gRPC ignores the proxy
# (and no cluster address lookup: RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 makes Ray's processes use 127.0.0.1 instead of
# asking a UDP socket towards 8.8.8.8 for the machine's address)
_RAY_LOCAL_ENV = dict(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER='0', RAY_USAGE_STATS_ENABLED='0', RAY_USAGE_STATS_PROMPT_ENABLED='0', http_proxy='http://127.0.0.1:9',
                      https_proxy='http://127.0.0.1:9', HTTP_PROXY='http://127.0.0.1:9', HTTPS_PROXY='http://127.0.0.1:9',
                      no_proxy='', NO_PROXY='')

def _ray_probe(address:str, timeout:float=RAY_CONNECT_TIMEOUT_S):
    "Raise `ConfigError` unless `address` ('host:port' or 'ray://host:port'; other forms are left to Ray) accepts a TCP connection within `timeout` s."
    import socket
    hostport = address.split('://', 1)[1] if '://' in address else address
    host, _, port = hostport.rstrip('/').rpartition(':')
    if not host or not port.isdigit(): return
    try: socket.create_connection((host.strip('[]'), int(port)), timeout=timeout).close()
    except OSError as e:
        raise ConfigError(f"cannot connect to the Ray cluster at {short(address)}: {_cap_msg(str(e) or type(e).__name__, 200)} "
                          f"(no answer within {timeout:g} s); check --address / $RAY_ADDRESS") from None

RAY_HANDSHAKE_TIMEOUT_S = 60   # a cluster that does not let a driver connect within this is refused

def _ray_handshake(address:str, timeout:float|None=None):
    """Raise `ConfigError` unless a Ray driver can connect to `address` within `timeout` s (default: $TRUSTLIB_RAY_CONNECT_TIMEOUT,
    else `RAY_HANDSHAKE_TIMEOUT_S`), tried in a child process: `ray.init` on an address that accepts TCP but is no Ray (or
    behind a proxy that accepts everything) waits forever, warning every ~40 s."""
    timeout = timeout or float(os.environ.get('TRUSTLIB_RAY_CONNECT_TIMEOUT') or RAY_HANDSHAKE_TIMEOUT_S)
    code = 'import sys, ray; ray.init(address=sys.argv[1], log_to_driver=False); ray.shutdown()'
    try: r = subprocess.run([sys.executable, '-c', code, address], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ConfigError(f"cannot connect to the Ray cluster at {short(address)}: no Ray answered within {timeout:g} s; "
                          "check --address / $RAY_ADDRESS (TRUSTLIB_RAY_CONNECT_TIMEOUT sets the wait)") from None
    if r.returncode != 0:
        last = [ln for ln in r.stderr.splitlines() if ln.strip()][-1:] or [f"exit {r.returncode}"]
        raise ConfigError(f"cannot connect to the Ray cluster at {short(address)}: {_cap_msg(last[0], 300)}")

def _ray_init(address:str|None):
    "Ray, connected to `address` (None: $RAY_ADDRESS, else a new local Ray on 127.0.0.1, without dashboard, usage stats or off-machine probes); returns the module."
    try: import ray
    except ImportError as e: raise ImportError('backend="ray" needs Ray, which is not installed: pip install "trustlib-icml25[ray]"') from e
    if not ray.is_initialized():
        kw, target = dict(log_to_driver=False), address or os.environ.get('RAY_ADDRESS')
        if target and target not in ('local',): _ray_probe(target); _ray_handshake(target)   # fail fast: Ray would retry forever
        else: kw.update(include_dashboard=False, _node_ip_address='127.0.0.1')   # starting a local Ray: loopback only
        saved = {k: os.environ.get(k) for k in _RAY_LOCAL_ENV}
        from ray._private import ray_constants as rc
        cluster = rc.ENABLE_RAY_CLUSTER
        if not target: os.environ.update(_RAY_LOCAL_ENV); rc.ENABLE_RAY_CLUSTER = False   # the env: for the processes Ray starts now
        try: ray.init(address=address, **kw)
        except (ConnectionError, TimeoutError, RuntimeError) as e:
            raise ConfigError(f"cannot connect to the Ray cluster at {short(target)}: {_cap_msg(str(e), 300)}") from None
        finally:
            rc.ENABLE_RAY_CLUSTER = cluster
            for k, v in saved.items():
                if v is None: os.environ.pop(k, None)
                else: os.environ[k] = v
    return ray

class _RayBackend:
    "One Ray task per grid point, with the spec's resources; Ray does not retry (`_drive` does)."
    def __init__(self, address, resources:dict, base:Path):
        ray = self.ray = _ray_init(address)
        import trustlib.runs
        opts = {k: v for k, v in resources.items() if k in _RESOURCE_KEYS and v}
        opts.setdefault('num_cpus', resources.get('num_cpus', 1))
        fits = [n for n in ray.nodes() if n.get('Alive') and all(n['Resources'].get(r, 0) >= opts.get(k, 0)
                for k, r in (('num_cpus', 'CPU'), ('num_gpus', 'GPU'), ('memory', 'memory')))]
        if not fits:
            have = [{r: n['Resources'].get(r, 0) for r in ('CPU', 'GPU', 'memory')} for n in ray.nodes() if n.get('Alive')]
            raise ConfigError(f"no node of the Ray cluster has the resources one run asks for ({opts}); its nodes have {short(have, 300)}")
        self.task = ray.remote(max_retries=0, **opts)(trustlib.runs._sweep_job)
        self.base, self.refs, self.rids, self.capacity = base, {}, {}, 10**9   # Ray queues tasks itself

    def submit(self, i, job): self.refs[self.task.remote(job)] = i; self.rids[i] = job['run_id']

    def running(self, inflight):   # a task has started once it holds its run's lock (or waits for another sweep's)
        return sum((self.base/f".lock-{self.rids[i]}").exists() for i in inflight)

    def wait(self, timeout, prog):
        if not self.refs: return []
        done, _ = self.ray.wait(list(self.refs), num_returns=len(self.refs), timeout=timeout, fetch_local=False)
        out = []
        for r in done:
            i = self.refs.pop(r)
            try: out.append((i, self.ray.get(r), None))
            except self.ray.exceptions.RayTaskError as e:   # an error in trustlib's own code on the worker: not a lost worker
                out.append((i, _row('failed', error=_cap_msg(f"{type(e).__name__}: {e}", 500)), None))
            except self.ray.exceptions.RayError as e:       # the worker or its node died, or the result was lost
                out.append((i, None, _cap_msg(f"{type(e).__name__}: {e}", 300)))
        return out

    def close(self):
        for r in self.refs: self.ray.cancel(r, force=True)
        self.refs = {}


# %%
#| export
def sweep(spec:dict|str|Path, # a spec dict or the path of a YAML spec
          workers:int=1, # parallel runs (local backend; 1 = one after the other in this process)
          backend:str="local", # 'local' (worker processes on this machine) or 'ray' (one Ray task per run)
          ray_address:str|None=None, # passed to `ray.init(address=...)`; None: $RAY_ADDRESS, else a new local Ray
          runs_dir:str|Path|None=None, # default: $TRUSTLIB_RUNS or <repo>/runs; with Ray: a folder every node sees at this path
          progress:bool=True, # tqdm progress over validation and runs (done / running / failed / remaining)
          root:str|Path|None=None, nbs_dir:str|Path|None=None,
          allow_large:bool=False, # allow grids over MAX_GRID_POINTS and lift the Config's soft upper bounds
          retries:int=SWEEP_RETRIES, # re-submissions of a grid point whose worker died, before it is recorded as failed
          on_progress=None, # called with dict(done, running, failed, remaining) whenever the counts change
         ):
    "Run every grid point of `spec` that has no current complete run; return a DataFrame with one row per grid point."
    import pandas as pd
    from tqdm import tqdm
    if backend not in ('local', 'ray'): raise ConfigError(f"backend {short(backend)} is not allowed; choose one of ['local', 'ray']")
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1: raise ConfigError(f"workers must be an int >= 1, got {short(workers)}")
    if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0: raise ConfigError(f"retries must be an int >= 0, got {short(retries)}")
    if ray_address is not None and backend != 'ray': raise ConfigError("a Ray address is only used with backend 'ray' (--backend ray)")
    if backend == 'ray' and workers != 1: raise ConfigError("workers is for the local backend; with Ray, the cluster's resources and the spec's 'resources' decide")
    spec = load_spec(spec)
    pts = grid_points(spec, allow_large)
    v = ParamValidator(spec.get('paper'), spec.get('notebook'), root, nbs_dir, allow_large)
    name, nb = v.name, v.nb
    canon = []
    for i, (prof, p) in enumerate(tqdm(pts, desc=f"validating {len(pts):,} grid point(s) of {name}", unit='point', disable=not progress, leave=False)):
        try: canon.append(v.check(prof, p))
        except ConfigError as e:
            raise ConfigError(f"grid point {i + 1} of {len(pts)} ({short({k: p[k] for k in spec['grid'] if k in p}, 120)}): {e}") from None
    runs_dir = str(_local_runs_dir(runs_dir, root if not spec.get('notebook') else None))
    base = _prepare_base(Path(runs_dir), name)
    root_s, nbs_s = None, (str(nbs_dir) if nbs_dir else None)
    if spec.get('paper') and nbs_dir is None:
        try: root_s = str(find_root(root))
        except ConfigError:
            if root is not None: raise
            nbs_s = str(nbs_path())   # outside a checkout: the notebooks of the installed package (a wheel ships them)
    jobs, seen = [], {}
    for (prof, p), c in zip(pts, canon):
        jobs.append(dict(paper=spec.get('paper'), notebook=spec.get('notebook'), name=name, nb=str(nb), params=c, profile=prof, runs_dir=runs_dir,
                         root=root_s, nbs_dir=nbs_s, run_id=run_id(prof, c), allow_large=allow_large,
                         wait=False, given=p))
    src_sha, file_sha = notebook_source_sha1(nb), _sha1_file(nb)
    results, todo = {}, []
    for i, j in enumerate(jobs):
        if j['run_id'] in seen: continue   # duplicate grid point (canonically): same run
        seen[j['run_id']] = i
        ok, why = _current(base/j['run_id'], src_sha, file_sha, j['params'])
        if ok: results[i] = _row('complete', str(base/j['run_id']), skipped=True, note=why)
        else: todo.append(i); j['note'] = why
    marker = None
    if backend == 'ray' and todo:
        be = _RayBackend(ray_address, spec['resources'], base)
        marker = base/f".sweep-{secrets.token_hex(6)}"   # each task checks that it sees this file: the runs folder is shared
        marker.write_text(json.dumps(dict(host=socket.gethostname(), pid=os.getpid(), started=_now())))
        for i in todo: jobs[i]['marker'] = str(marker)
    else: be = _InlineBackend() if workers == 1 or len(todo) <= 1 else _PoolBackend(min(workers, len(todo)))
    prog = SweepProgress(len(seen), len(seen) - len(todo), f"sweep {name} ({backend})", progress, on_progress)
    try: results.update(_drive(jobs, todo, be, prog, retries))
    finally:
        prog.close()
        if marker is not None: marker.unlink(missing_ok=True)
    rows = []
    for i, j in enumerate(jobs):
        r = results.get(i) or results[seen[j['run_id']]]
        note = r.get('note') or ''
        if r['status'] == 'complete' and not r.get('skipped') and j.get('note') and j['note'] != 'no run yet' and not note.startswith('ran again'): note = j['note']
        if i not in results: note = 'same run as an earlier grid point'
        row = dict(paper=name, run_id=j['run_id'], status=r['status'], path=r['path'], skipped=bool(r.get('skipped', False)), profile=j['profile'])
        for k in spec['grid']:
            if k != 'profile': row[k if k not in row else f'param_{k}'] = j['given'].get(k)
        rows.append({**row, 'note': note, 'error': r['error']})
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
test_fail(lambda: sweep(dict(notebook=str(TOY), grid=dict(seed=[0, 'x'])), runs_dir=runs, progress=False), contains="parameter 'seed': expected int")
test_fail(lambda: sweep(spec, backend='slurm', runs_dir=runs), contains="choose one of ['local', 'ray']")

# %% [markdown]
# Progress counts as the sweep goes (here passed to a callback; the CLI shows them on its progress bar), with
# two local worker processes:

# %%
_counts = []
df4 = sweep(dict(spec, grid=dict(seed=[10, 11, 12])), workers=2, runs_dir=runs, progress=False, on_progress=_counts.append)
test_eq(list(df4.status), ['complete'] * 3)
test_eq(_counts[0], dict(done=0, running=0, failed=0, remaining=3))
test_eq(max(c['running'] for c in _counts), 2)
test_eq(_counts[-1], dict(done=3, running=0, failed=0, remaining=0))
_counts


# %% [markdown]
# What the loop does with a grid point whose worker dies every time: it is submitted again `retries` times,
# then published as a failed run that says why (a backend whose workers always die stands in for real kills
# here; `tests/test_ray.py` SIGKILLs real local and Ray workers). The next sweep runs it again.

# %%
class _DyingBackend:
    capacity = 2
    def __init__(self): self.q, self.submitted = [], []
    def submit(self, i, job): self.q.append(i); self.submitted.append(i)
    def running(self, inflight): return len(inflight)
    def wait(self, timeout, prog): out, self.q = [(i, None, 'local worker process 1 died (killed by signal 9)') for i in self.q], []; return out
    def close(self): pass
_jobs = [dict(name='toy', nb=str(TOY), runs_dir=str(runs.resolve()), run_id=run_id('smoke', dict(seed=40)), profile='smoke', params=dict(seed=40))]
_be, _counts = _DyingBackend(), []
_res = _drive(_jobs, [0], _be, SweepProgress(1, show=False, callback=_counts.append), retries=2)
test_eq(_be.submitted, [0, 0, 0])   # the first attempt and 2 retries
test_eq(_res[0]['status'], 'failed'); assert 'died 3 time(s)' in _res[0]['error'], _res
_m = load_run(_res[0]['path'])
test_eq((_m['status'], _m['error'], _m['metrics'], is_complete(_res[0]['path'])), ('failed', _res[0]['error'], {}, False))
test_eq(_counts[-1], dict(done=0, running=0, failed=1, remaining=0))
test_eq(list(sweep(dict(spec, grid=dict(seed=[40])), runs_dir=runs, progress=False).note), ['re-run: the recorded run did not complete'])
_res[0]['error']

# %% [markdown]
# ## Ray
#
# `sweep(spec, backend="ray", ray_address="ray://head:10001")` (CLI: `trustlib sweep SPEC --backend ray
# --address ADDR`) sends each grid point to a Ray cluster as one task, after the same validation and skipping,
# and through the same loop (`_drive`) as the local backend. Each task asks for the spec's `resources`:
#
# ```yaml
# resources: {num_cpus: 2, num_gpus: 1, memory: 8GiB}   # per run; default num_cpus: 1
# ```
#
# (the local backend does not look at them: it runs `workers` grid points at once). A spec whose resources no
# node of the cluster has is refused before any task starts, instead of waiting forever. Ray's own task retries
# are off: a task whose worker or node dies is submitted again by `_drive` (`retries`, default 2) and then
# recorded as failed. A process can only be checked for life on its own host, so a run whose worker died on
# another node than the one that retries it waits until that worker's lock is stale (`LOCK_STALE_S` after its last
# heartbeat) before it runs again. Ray is an optional dependency (`pip install "trustlib-icml25[ray]"`); with no address, Ray
# joins the cluster named by `$RAY_ADDRESS` or starts a local one.
#
# Every node needs trustlib installed and the checkout (notebooks) at the same path, and `runs_dir` must be a
# file system that all nodes share at the same path (NFS, EFS, CephFS, Lustre). The
# sweep writes a marker file into the runs folder and every task checks that it sees it; a node that does not
# fails its runs with a message saying so, instead of writing results where nobody looks. A run folder is
# published by an atomic rename and runs are serialised by lock files created with `O_EXCL`, which object
# stores do not have. papermill's own I/O handlers can read and write *notebooks* at `s3://` and `gs://`
# URLs, but a run folder is more than one notebook (metrics, tables, figures) and object storage is not
# implemented here: a URL `runs_dir` is rejected before any task starts, with a message pointing to a shared
# mount. So is a folder on a FUSE mount of an object store (s3fs, gcsfuse, goofys, mountpoint-s3, rclone,
# blobfuse…, recognised by its file system type in `/proc/mounts`): there a "rename" of a folder is a copy
# and a delete, and an exclusive create is not exclusive.

# %%
_has_ray = importlib.util.find_spec('ray') is not None
if not _has_ray: test_fail(lambda: sweep(spec, backend='ray', runs_dir=runs, progress=False), contains='pip install "trustlib-icml25[ray]"')
test_fail(lambda: sweep(spec, backend='ray', runs_dir='s3://bucket/runs', progress=False), contains="use a shared mount")
test_fail(lambda: sweep(spec, ray_address='127.0.0.1:6379', runs_dir=runs, progress=False), contains="only used with backend 'ray'")
test_fail(lambda: _ray_probe('127.0.0.1:9', timeout=2), contains="cannot connect to the Ray cluster at '127.0.0.1:9'")   # nothing listens there
test_fail(lambda: _ray_probe('ray://127.0.0.1:9', timeout=2), contains="(no answer within 2 s)")
_ray_probe('auto')                                           # forms Ray resolves itself are left to it
if _has_ray:                                                 # something that accepts TCP but is no Ray: refused, not waited for forever
    _srv = socket.create_server(('127.0.0.1', 0)); _port = _srv.getsockname()[1]
    test_fail(lambda: _ray_handshake(f'127.0.0.1:{_port}', timeout=20), contains=f"cannot connect to the Ray cluster at '127.0.0.1:{_port}'")
    _srv.close()
test_fail(lambda: load_spec(find_root()/'sweeps'), contains="is a folder; give the path of a YAML spec file")
test_fail(lambda: load_spec(dict(notebook=str(TOY), grid={})), contains="'grid' is empty")
test_fail(lambda: sweep(dict(spec, resources=dict(gpus=1)), backend='ray', runs_dir=runs, progress=False), contains="unknown resource(s) ['gpus']")
_mounts = "/dev/sda1 / ext4 rw 0 0\ns3fs /mnt/bucket fuse.s3fs rw,nosuid 0 0\nnfs:/export /mnt/shared nfs4 rw 0 0\n"
test_eq(mount_of('/mnt/bucket/runs', _mounts), ('/mnt/bucket', 'fuse.s3fs'))
test_eq(mount_of('/mnt/shared/runs', _mounts), ('/mnt/shared', 'nfs4'))
test_eq(mount_of('/mnt/bucketx/runs', _mounts), ('/', 'ext4'))
