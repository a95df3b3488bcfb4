"""Parameter documentation reaches `help()` and IDEs: the export command (tools/export.py, `make export`) copies each
signature's docments into a numpy-style "Parameters" section of the exported docstring; the notebooks keep the
docments only (nothing written twice) and are never changed by the export."""
import importlib, importlib.util, inspect, os, pydoc, warnings
from pathlib import Path
import pytest
from fastcore.docments import docments, parse_docstring

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("trustlib_tools_export", ROOT / "tools" / "export.py")
tx = importlib.util.module_from_spec(_spec); _spec.loader.exec_module(tx)

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

# modules that import without torch (fast); every object in them with docments carries them in its docstring
LIGHT = ["trustlib.config", "trustlib.results", "trustlib.data", "trustlib.metrics", "trustlib.report", "trustlib.runs",
         "trustlib.fairness.disparate_benefits", "trustlib.fairness.generalization", "trustlib.privacy.accounting"]

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
    assert not missing, f"{modname}: docments missing from docstrings (run `make export`): {missing}"

def test_processor_is_idempotent_on_the_generated_modules():
    "Running the processor again over the exported files changes nothing (each section is added once)."
    for p in sorted((ROOT / "trustlib").rglob("*.py")):
        src = p.read_text(encoding="utf-8")
        assert tx.add_parameter_sections(src) == src, f"{p.relative_to(ROOT)}"

def test_processor_examples():
    src = ('def f(a:int, # the a\n      *args, b="x", # the b\n      **kw):\n    "Summary."\n    return a\n\n'
           'class C:\n    def __init__(self, x=1, # the \\\\x\n                 ): pass\n    def m(self): "No docments."\n')
    out = tx.add_parameter_sections(src)
    ns = {}; exec(compile(out, "<t>", "exec"), ns)
    assert inspect.getdoc(ns['f']) == ("Summary.\n\nParameters\n----------\na : int\n    the a\n*args\n"
                                       "b : default \"x\"\n    the b\n**kw")
    assert inspect.getdoc(ns['C']) == "Parameters\n----------\nx : default 1\n    the \\\\x"   # no docstring before: one is made
    assert ns['C'].m.__doc__ == "No docments."
    assert tx.add_parameter_sections(out) == out
    hand = 'def g(a, # the a\n      ):\n    """G.\n\n    Parameters\n    ----------\n    a : int\n        written by hand\n    """\n'
    assert tx.add_parameter_sections(hand) == hand      # a hand-written section is left alone

@pytest.mark.parametrize("nb, module", [("nbs/core/04_results.ipynb", "trustlib/results.py"),
                                        ("nbs/papers/fairness/disparate_benefits.ipynb", "trustlib/fairness/disparate_benefits.py")])
def test_export_writes_the_committed_module_and_leaves_the_notebook(nb, module, tmp_path, monkeypatch):
    "nbdev's `nb_export` with the project's processors reproduces the committed module; the notebook is not touched."
    from nbdev.export import nb_export, black_format
    monkeypatch.chdir(ROOT); monkeypatch.delenv("IN_TEST", raising=False)
    before = (ROOT / nb).read_bytes()
    nb_export(ROOT / nb, lib_path=str(tmp_path / "trustlib"), procs=[black_format, tx.docments_docstring])
    assert (ROOT / nb).read_bytes() == before
    out = tmp_path / module
    got = out.read_text(encoding="utf-8")
    # nbdev writes the notebook's path relative to the module: map the temporary location onto the real one
    got = got.replace(os.path.relpath(ROOT, out.parent) + "/", os.path.relpath(ROOT, (ROOT / module).parent) + "/")
    assert got == (ROOT / module).read_text(encoding="utf-8"), f"{module} is not what tools/export.py writes: run `make export`"
