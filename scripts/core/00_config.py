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
import contextlib, dataclasses, os, random, sys, types, typing, warnings
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


# %%
#| export
def param(default, # default value (the `smoke` profile's, unless the profile table overrides it)
          help:str="", # one-line description shown by `trustlib list`
          *, ge=None, gt=None, le=None, lt=None, # numeric bounds (inclusive / exclusive)
          choices=None, # allowed values (for str or numeric parameters)
          ):
    "A dataclass field carrying documentation and validation rules."
    md = dict(help=help, ge=ge, gt=gt, le=le, lt=lt, choices=tuple(choices) if choices is not None else None)
    if isinstance(default, (list, dict, set)): return field(default_factory=lambda: type(default)(default), metadata=md)
    return field(default=default, metadata=md)


# %% [markdown]
# ## Type checking of parameter values
#
# Papermill passes parameters through YAML, so `-p seed 3` arrives as an `int` and `-p sizes "[1, 2]"` as a
# list. `_coerce` accepts exactly what a reasonable user would expect (an `int` where a `float` is wanted, a
# list where a tuple is wanted) and rejects everything else with a message naming the parameter.

# %%
#| export
def _tname(tp) -> str:
    if isinstance(tp, type): return tp.__name__
    return str(tp).replace('typing.', '')

def _coerce(name:str, value, tp):
    "Return `value` converted to type `tp`, or raise `ConfigError` naming `name`."
    origin, args = get_origin(tp), get_args(tp)
    bad = lambda: ConfigError(f"parameter {name!r}: expected {_tname(tp)}, got {value!r} ({type(value).__name__})")
    if tp is Any: return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args: return None
        for a in args:
            if a is type(None): continue
            try: return _coerce(name, value, a)
            except ConfigError: pass
        raise bad()
    if origin is Literal:
        if value not in args: raise ConfigError(f"parameter {name!r}: {value!r} is not allowed; choose one of {list(args)}")
        return value
    if origin in (tuple, list):
        if not isinstance(value, (list, tuple)): raise bad()
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis: items = [_coerce(f"{name}[{i}]", v, args[0]) for i, v in enumerate(value)]
        elif origin is tuple and args:
            if len(args) != len(value): raise ConfigError(f"parameter {name!r}: expected {len(args)} items, got {len(value)}")
            items = [_coerce(f"{name}[{i}]", v, a) for i, (v, a) in enumerate(zip(value, args))]
        else: items = [_coerce(f"{name}[{i}]", v, args[0]) if args else v for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else list(items)
    if origin is dict:
        if not isinstance(value, dict): raise bad()
        return dict(value)
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
        if isinstance(value, (int, float, np.integer, np.floating)): return float(value)
        raise bad()
    if tp is str:
        if isinstance(value, str): return value
        raise bad()
    if isinstance(tp, type):
        if isinstance(value, tp): return value
        raise bad()
    return value


# %%
test_eq(_coerce('x', 3, float), 3.0)
test_eq(_coerce('x', [1, 2], tuple[int, ...]), (1, 2))
test_eq(_coerce('x', None, int | None), None)
test_eq(_coerce('x', 'a', Literal['a', 'b']), 'a')
test_fail(lambda: _coerce('x', 'three', int), contains="parameter 'x': expected int")
test_fail(lambda: _coerce('x', True, int), contains="expected int")
test_fail(lambda: _coerce('x', 2.5, int), contains="expected int")
test_fail(lambda: _coerce('x', 'c', Literal['a', 'b']), contains="choose one of ['a', 'b']")
test_fail(lambda: _coerce('xs', [1, 'a'], tuple[int, ...]), contains="parameter 'xs[1]'")


# %% [markdown]
# ## `BaseConfig`
#
# A paper's `Config` subclasses `BaseConfig`, declares its parameters with `param(...)` and lists the
# per-profile overrides in the class variable `PROFILE_DEFAULTS`. `Config.from_params(profile, **params)`
# is what notebooks, the CLI and library users call: it rejects unknown names, treats `None` as "use the
# profile's default", merges, coerces types and checks ranges — all before any work starts.

# %%
#| export
@dataclass
class BaseConfig:
    "Base class of every paper's experiment configuration."
    profile: str = param("smoke", "smoke (CI, < 60 s) | cpu (published results, minutes) | full (paper scale)", choices=PROFILES)
    seed: int = param(0, "base random seed; every random choice derives from it", ge=0)
    PROFILE_DEFAULTS: ClassVar[dict[str, dict[str, Any]]] = {}

    def __post_init__(self):
        hints = get_type_hints(type(self))
        for f in fields(self):
            v = _coerce(f.name, getattr(self, f.name), hints[f.name])
            md = f.metadata
            if md.get('choices') is not None and v not in md['choices']:
                raise ConfigError(f"parameter {f.name!r}: {v!r} is not allowed; choose one of {list(md['choices'])}")
            for key, ok, word in (('ge', lambda a, b: a >= b, '>='), ('gt', lambda a, b: a > b, '>'),
                                  ('le', lambda a, b: a <= b, '<='), ('lt', lambda a, b: a < b, '<')):
                bound = md.get(key)
                if bound is None or v is None: continue
                vals = v if isinstance(v, (tuple, list)) else (v,)
                for x in vals:
                    if not ok(x, bound): raise ConfigError(f"parameter {f.name!r}: {x!r} is out of range; must be {word} {bound}")
            object.__setattr__(self, f.name, v)
        self.validate()

    def validate(self):
        "Cross-parameter checks; subclasses override and raise `ConfigError`."

    @classmethod
    def param_names(cls) -> list[str]: return [f.name for f in fields(cls)]

    @classmethod
    def profile_defaults(cls, profile:str) -> dict[str, Any]:
        "Parameter values of `profile` (class defaults updated with `PROFILE_DEFAULTS[profile]`)."
        if profile not in PROFILES: raise ConfigError(f"parameter 'profile': {profile!r} is not allowed; choose one of {list(PROFILES)}")
        base = {f.name: (f.default if f.default is not dataclasses.MISSING else f.default_factory()) for f in fields(cls)}
        base.update(cls.PROFILE_DEFAULTS.get(profile, {}))
        base['profile'] = profile
        return base

    @classmethod
    def from_params(cls, profile:str="smoke", **params):
        "Validated config for `profile` with explicit overrides; `None` means the profile's default."
        unknown = sorted(set(params) - set(cls.param_names()))
        if unknown:
            raise ConfigError(f"unknown parameter(s) {unknown} for {cls.__qualname__}; allowed: {sorted(cls.param_names())}")
        vals = cls.profile_defaults(profile)
        vals.update({k: v for k, v in params.items() if v is not None})
        return cls(**vals)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v) for f in fields(self)}

    def replace(self, **changes): return type(self).from_params(**{**self.to_dict(), **changes})

    @classmethod
    def describe(cls) -> list[dict[str, Any]]:
        "One row per parameter: name, type, help, bounds, and its value in each profile."
        hints = get_type_hints(cls)
        rows = []
        for f in fields(cls):
            md = f.metadata
            bounds = ', '.join(f"{w} {md[k]}" for k, w in (('ge', '>='), ('gt', '>'), ('le', '<='), ('lt', '<')) if md.get(k) is not None)
            if md.get('choices'): bounds = 'one of ' + ', '.join(map(str, md['choices']))
            row = dict(name=f.name, type=_tname(hints[f.name]), help=md.get('help', ''), allowed=bounds)
            for p in PROFILES: row[p] = cls.profile_defaults(p)[f.name]
            rows.append(row)
        return rows


# %% [markdown]
# An example config, as a paper would write it:

# %%
@dataclass
class _DemoConfig(BaseConfig):
    n_members: int = param(3, "ensemble size", ge=1)
    lr: float = param(0.1, "learning rate", gt=0)
    widths: tuple[int, ...] = param((8, 16), "hidden widths swept", ge=1)
    variant: str = param("noise", "which construction", choices=("noise", "concat"))
    PROFILE_DEFAULTS = {"cpu": dict(n_members=10), "full": dict(n_members=10, widths=(256,))}

    def validate(self):
        if self.variant == 'concat' and self.n_members < 2: raise ConfigError("variant 'concat' needs n_members >= 2")

c = _DemoConfig.from_params("cpu", seed=3)
test_eq((c.profile, c.n_members, c.seed, c.widths), ("cpu", 10, 3, (8, 16)))
test_eq(_DemoConfig.from_params("smoke", n_members=None).n_members, 3)   # None -> profile default
test_eq(_DemoConfig.from_params("smoke", widths=[4, 5]).widths, (4, 5))   # YAML list -> tuple
test_eq(_DemoConfig.from_params("smoke", lr=1).lr, 1.0)
test_fail(lambda: _DemoConfig.from_params("smoke", n_member=3), contains="unknown parameter(s) ['n_member']")
test_fail(lambda: _DemoConfig.from_params("gpu"), contains="choose one of ['smoke', 'cpu', 'full']")
test_fail(lambda: _DemoConfig.from_params("smoke", n_members=0), contains="'n_members': 0 is out of range; must be >= 1")
test_fail(lambda: _DemoConfig.from_params("smoke", lr=-1.0), contains="must be > 0")
test_fail(lambda: _DemoConfig.from_params("smoke", widths=(8, 0)), contains="'widths': 0 is out of range")
test_fail(lambda: _DemoConfig.from_params("smoke", variant="mix"), contains="choose one of ['noise', 'concat']")
test_fail(lambda: _DemoConfig.from_params("smoke", lr="fast"), contains="'lr': expected float")
test_fail(lambda: _DemoConfig.from_params("smoke", variant="concat", n_members=1), contains="needs n_members >= 2")
test_eq(c.replace(seed=5).seed, 5)
test_eq([r['name'] for r in _DemoConfig.describe()], ['profile', 'seed', 'n_members', 'lr', 'widths', 'variant'])
_DemoConfig.describe()[2]


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
    "`profile`, except under a test runner (without `TRUSTLIB_ALLOW_PROFILE=1`), where it is always `smoke`."
    if profile not in PROFILES: raise ConfigError(f"parameter 'profile': {profile!r} is not allowed; choose one of {list(PROFILES)}")
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
        raise ConfigError(f"parameter 'seed': expected a non-negative int, got {seed!r}")
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

def derive_seed(seed:int, *keys) -> int:
    "A reproducible child seed of `seed` for the sub-task named by `keys` (ints or strings)."
    ints = [k if isinstance(k, (int, np.integer)) else int.from_bytes(str(k).encode()[:8].ljust(8, b'\0'), 'little') for k in keys]
    return int(np.random.SeedSequence([int(seed), *map(int, ints)]).generate_state(1)[0])

@contextlib.contextmanager
def torch_threads(n:int|None):
    "Temporarily run torch's CPU kernels on `n` threads (None: leave as is); restores the previous setting. Imports torch lazily."
    if n is None: yield; return
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1: raise ConfigError(f"threads must be an int >= 1 or None, got {n!r}")
    import torch
    old = torch.get_num_threads(); torch.set_num_threads(int(n))
    try: yield
    finally: torch.set_num_threads(old)

def get_device(preference:str="auto") -> str:
    "'cpu', 'cuda' or 'mps'; `auto` picks CUDA when present. Asking for a missing device raises `ResourceUnavailable`."
    if preference not in ("auto", "cpu", "cuda", "mps"): raise ConfigError(f"parameter 'device': {preference!r} is not allowed; choose one of ['auto', 'cpu', 'cuda', 'mps']")
    if preference == "cpu": return "cpu"
    import torch
    if preference == "auto": return "cuda" if torch.cuda.is_available() else "cpu"
    ok = torch.cuda.is_available() if preference == "cuda" else torch.backends.mps.is_available()
    if not ok: raise ResourceUnavailable(f"device {preference!r} was requested but is not available on this machine")
    return preference


# %%
import torch

# %%
a = seed_everything(7).random(3); b = seed_everything(7).random(3)
test_eq(a, b)
test_eq(derive_seed(1, 'member', 3), derive_seed(1, 'member', 3))
assert derive_seed(1, 'member', 3) != derive_seed(1, 'member', 4) != derive_seed(2, 'member', 3)
test_eq(get_device('cpu'), 'cpu')
test_fail(lambda: seed_everything(-1), contains="non-negative")
test_eq(torch_generator(3).initial_seed(), 3)
_n = torch.get_num_threads()
with torch_threads(1): test_eq(torch.get_num_threads(), 1)
test_eq(torch.get_num_threads(), _n)
with torch_threads(None): test_eq(torch.get_num_threads(), _n)
test_fail(lambda: torch_threads(0).__enter__(), contains="threads must be")


# %% [markdown]
# ## The paper registry
#
# The 19 papers, their notebook (`nbs/papers/<area>/<name>.ipynb`) and main module. `trustlib run <name>`
# takes the notebook's file stem. Papers whose notebook does not exist yet are listed as `planned`; the
# results dashboard shows them too.

# %%
#| export
@dataclass(frozen=True)
class Paper:
    number: int
    name: str     # notebook stem, e.g. 'disparate_benefits'
    area: str     # folder under nbs/papers
    title: str
    module: str   # main module
    arxiv: str = ""
    code: str = ""  # official code repository, if any

    @property
    def notebook(self) -> str: return f"papers/{self.area}/{self.name}.ipynb"

PAPERS: tuple[Paper, ...] = (
    Paper(1, "dsda", "unlearning", "Efficient Source-free Unlearning via Energy-Guided Data Synthesis and Discrimination-Aware Multitask Optimization", "trustlib.unlearning.dsda"),
    Paper(2, "disparate_benefits", "fairness", "The Disparate Benefits of Deep Ensembles", "trustlib.fairness.disparate_benefits", "2410.13831", "https://github.com/ml-jku/disparate-benefits"),
    Paper(3, "noisy_signsgd", "privacy", "Noisy SignSGD Is More Differentially Private Than You (Might) Think", "trustlib.privacy.signsgd"),
    Paper(4, "ecolevels", "bias", "Position: Rethinking LLM Bias Probing Using Lessons from the Social Sciences", "trustlib.bias.ecolevels"),
    Paper(5, "random_features", "theory", "The Power of Random Features and the Limits of Distribution-Free Gradient Descent", "trustlib.theory.random_features", "2505.10423"),
    Paper(6, "dor", "calibration", "Understanding and Mitigating Miscalibration in Prompt Tuning for Vision-Language Models", "trustlib.calibration.dor"),
    Paper(7, "l2h", "clustering", "From Logits to Hierarchies: Hierarchical Clustering made Simple", "trustlib.clustering.l2h", "2410.07858"),
    Paper(8, "backdoor_complications", "robustness", "The Ripple Effect: On Unforeseen Complications of Backdoor Attacks", "trustlib.robustness.backdoor"),
    Paper(9, "label_smoothing", "calibration", "Calibrated Language Models and How to Find Them with Label Smoothing", "trustlib.calibration.label_smoothing", "2508.00264", "https://github.com/jhuang265/Calibrating-LLMs-with-Label-Smoothing"),
    Paper(10, "pta", "privacy", "Plausible Token Amplification for Improving Accuracy of Differentially Private In-Context Learning Based on Implicit Bayesian Inference", "trustlib.privacy.dp_icl"),
    Paper(11, "fairness_generalization", "fairness", "Fairness Overfitting in Machine Learning: An Information-Theoretic Perspective", "trustlib.fairness.generalization", "2506.07861"),
    Paper(12, "sns_bench", "evals", "SNS-Bench: Defining, Building, and Assessing Capabilities of Large Language Models in Social Networking Services", "trustlib.evals.sns_bench"),
    Paper(13, "mib", "interp", "MIB: A Mechanistic Interpretability Benchmark", "trustlib.interp.circuits"),
    Paper(14, "cpo", "interp", "Addressing Concept Mislabeling in Concept Bottleneck Models Through Preference Optimization", "trustlib.interp.cbm"),
    Paper(15, "proxy_multicalibration", "fairness", "Multiaccuracy and Multicalibration via Proxy Groups", "trustlib.fairness.multicalibration", "2503.02870", "https://github.com/beepulbharti/proxy_ma-mc"),
    Paper(16, "robust_sketches", "robustness", "Breaking the Quadratic Barrier: Robust Cardinality Sketches for Adaptive Queries", "trustlib.sketches.cardinality", "2502.05723"),
    Paper(17, "sae_probing", "interp", "Are Sparse Autoencoders Useful? A Case Study in Sparse Probing", "trustlib.interp.sae_probing"),
    Paper(18, "sop", "interp", "Sum-of-Parts: Self-Attributing Neural Networks with End-to-End Learning of Feature Groups", "trustlib.interp.sop"),
    Paper(19, "saebench", "interp", "SAEBench: A Comprehensive Benchmark for Sparse Autoencoders in Language Model Interpretability", "trustlib.interp.saebench"),
)

def get_paper(name:str) -> Paper:
    "The registry entry for notebook stem `name`."
    for p in PAPERS:
        if p.name == name: return p
    raise ConfigError(f"unknown paper {name!r}; known papers: {[p.name for p in PAPERS]}")


# %%
test_eq(len(PAPERS), 19)
test_eq(len({p.name for p in PAPERS}), 19)
test_eq(get_paper('disparate_benefits').notebook, 'papers/fairness/disparate_benefits.ipynb')
test_fail(lambda: get_paper('disparate'), contains="unknown paper 'disparate'")
