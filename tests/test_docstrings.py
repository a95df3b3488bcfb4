"""Parameter documentation reaches `help()`: importing `trustlib` installs a hook (nbs/core/12_package.ipynb) that
appends each signature's docments, as a numpy-style "Parameters" section, to the `__doc__` of every function, class
and method a `trustlib.*` module defines; the notebooks and the exported files keep the docments only (nothing
written twice, and `nbdev_export` leaves the tree unchanged)."""
import importlib, importlib.util, inspect, os, pydoc, warnings
from pathlib import Path
import pytest
from fastcore.docments import docments, parse_docstring

ROOT = Path(__file__).resolve().parents[1]

def _norm(s) -> str: return ' '.join(str(s).split())

def _resolve(path:str):
    mod, _, name = path.rpartition(':')
    o = importlib.import_module(mod)
    for part in name.split('.'): o = getattr(o, part)
    return o

def _docments(o) -> dict:
    "The non-empty docments of `o` as the website (`show_doc`, via fastcore) reads them, without `self`."
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try: dm = docments(o)
        except OSError: return {}                          # no source: e.g. the methods a dataclass generates
    return {k: v for k, v in dm.items() if v and k != 'self'}

def _sig_names(o) -> list[str]:
    sig = inspect.signature(o)
    pre = {inspect.Parameter.VAR_POSITIONAL: '*', inspect.Parameter.VAR_KEYWORD: '**'}
    return [pre.get(p.kind, '') + n for n, p in sig.parameters.items() if n != 'self']

# a core function, a core dataclass, a core function with a multi-parameter comment line, a paper estimator (its
# __init__ documented on the class, as numpy does) and two of its methods, a paper function
REPRESENTATIVE = ["trustlib.config:require", "trustlib.config:param", "trustlib.results:Estimate", "trustlib.results:judge",
                  "trustlib.fairness.disparate_benefits:RelaxedThresholdOptimizer",
                  "trustlib.fairness.disparate_benefits:RelaxedThresholdOptimizer.fit",
                  "trustlib.fairness.disparate_benefits:RelaxedThresholdOptimizer.predict",
                  "trustlib.privacy.accounting:gaussian_epsilon"]

@pytest.mark.parametrize("path", REPRESENTATIVE)
def test_help_shows_every_docment(path):
    o = _resolve(path)
    dm = _docments(o)
    assert dm, f"{path} has no docments (pick another representative)"
    text = _norm(pydoc.render_doc(o, renderer=pydoc.plaintext))
    for k, v in dm.items(): assert _norm(v) in text, f"help({path}) lacks the docment of {k!r}: {v!r}"
    # a well-formed numpy section: every parameter of the signature, in order (IDEs and numpydoc parse it)
    params = parse_docstring(o)['Parameters']
    assert list(params) == _sig_names(o)
    for p in params.values():
        if p.name in dm: assert _norm(' '.join(p.desc)) == _norm(dm[p.name])

def test_estimator_entry_has_type_default_and_docment():
    from trustlib.fairness.disparate_benefits import RelaxedThresholdOptimizer as R
    doc = inspect.getdoc(R)
    assert doc.startswith("Group-specific (randomised) thresholds on a score maximising accuracy")
    assert ("tolerance : float, default 0.05\n    the largest allowed gap, >= 0 (np.inf: no constraint; > 0 when randomized=False)") in doc
    assert "sensitive_features : default None\n    the protected attribute" in inspect.getdoc(R.fit)

# every module; every object in them with docments carries them in its docstring
LIGHT = sorted(".".join(p.relative_to(ROOT).with_suffix("").parts) for p in (ROOT / "trustlib").rglob("*.py")
               if p.name not in ("__init__.py", "_modidx.py") and "__pycache__" not in p.parts) + ["trustlib"]

def _objects(mod):
    for nm, o in vars(mod).items():
        if getattr(o, '__module__', None) != mod.__name__: continue
        if inspect.isfunction(o): yield nm, o
        elif inspect.isclass(o):
            from trustlib.config import BaseConfig
            # an inherited __init__ is documented on its own class; a config documents itself (`param_docs`)
            if '__init__' in vars(o) and not issubclass(o, BaseConfig): yield nm, o
            for k, v in vars(o).items():
                if isinstance(v, (staticmethod, classmethod)): v = v.__func__
                if inspect.isfunction(v) and k != '__init__': yield f"{nm}.{k}", v

def _one_line_def(o) -> bool:
    "`def f(x): return x  # a comment`: fastcore reads a code comment as a docment; such a def has no docstring to extend."
    try: src = inspect.getsource(o).strip()
    except (OSError, TypeError): return True
    return inspect.isfunction(o) and len(src.splitlines()) == 1

@pytest.mark.parametrize("modname", LIGHT)
def test_every_docment_reaches_the_docstring(modname):
    mod = importlib.import_module(modname)
    missing, n = [], 0
    for nm, o in _objects(mod):
        dm = _docments(o)
        if not dm or _one_line_def(o): continue
        n += 1
        doc = _norm(inspect.getdoc(o) or '')
        missing += [f"{nm}:{k}" for k, v in dm.items() if _norm(v) not in doc]
    assert not missing, f"{modname}: docments missing from docstrings (the import hook in nbs/core/12_package.ipynb missed them): {missing}"


def test_hook_documents_a_fresh_import_and_leaves_the_files_alone():
    "In a fresh interpreter, a module imported the ordinary way is documented; its file has no such section."
    import subprocess, sys
    code = ("import inspect, trustlib.results as r; d = inspect.getdoc(r.judge); "
            "assert 'Parameters\\n----------' in d and 'form 1: a rule on one measured number' in d, d; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "ok", out.stderr
    assert "Parameters\n    ----------" not in (ROOT / "trustlib" / "results.py").read_text()

def test_hook_only_wraps_trustlib_source_modules():
    import sys, json
    import trustlib
    finders = [f for f in sys.meta_path if type(f).__name__ == "_Finder"]
    assert len(finders) == 1
    assert finders[0].find_spec("json", None) is None                   # other packages: the normal finders
    spec = finders[0].find_spec("trustlib.results", trustlib.__path__)
    assert type(spec.loader).__name__ == "_DocumentingLoader" and spec.origin.endswith("results.py")
