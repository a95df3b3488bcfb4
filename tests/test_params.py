"""Parameters are data, and one parameter surface: validation of parameter values (JSON-like literals only,
finite floats, hard and soft bounds, capped messages), canonical values for hashing, and the papermill
parameters cell generated from each paper's `Config` (fast, in-process)."""
import importlib, json, os, pydoc, typing, warnings
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Optional
import numpy as np
import pytest
from trustlib.config import (PAPERS, BaseConfig, ConfigError, param, parameters_cell, check_parameters_cell,
                             param_docs, canonical_params, _coerce, _short)

ROOT = Path(__file__).resolve().parents[1]
IMPLEMENTED = [p for p in PAPERS if (ROOT / "nbs" / p.notebook).exists()]
PWNED = '", __import__("os").system("touch /tmp/pwned"), "'

@dataclass
class Demo(BaseConfig):
    "A config for the tests."
    n_items: int = param(100, "items per run", ge=1, max=10**6)
    lr: float = param(0.1, "learning rate", gt=0, le=10)
    widths: tuple[int, ...] = param((8,), "hidden widths", ge=1, le=4096)
    names: tuple[str, ...] = param(("a",), "names of things")
    label: str = param("x", "a free-form label")
    extra: list = param([], "free-form JSON-like list")
    maybe: Optional[list] = param(None, "optional free-form list")
    table: dict = param({}, "free-form JSON-like mapping")
    anything: Any = param(None, "any JSON-like value")
    budget: float = param(1.0, "privacy budget (inf: no noise)", gt=0, le=float("inf"), finite=False)
    PROFILE_DEFAULTS = {"full": dict(n_items=10**7)}

def assert_bounded(Config):
    "Every int/float field of `Config` declares an upper bound (`le`, `lt`, `max`) or `choices`. For other tests."
    missing = Config.unbounded_fields()
    assert not missing, f"{Config.__module__}.{Config.__qualname__}: int/float fields without an upper bound: {missing}"

# --- parameters are data -------------------------------------------------------------------------------

@pytest.mark.parametrize("name,value", [
    ("extra", [1, b"bytes"]), ("extra", [{1, 2}]), ("extra", [object()]), ("extra", [[1, [2, {"k": {3}}]]]),
    ("maybe", [b"x"]), ("maybe", {"a": 1}), ("table", {"k": b"v"}), ("table", {1: "int key"}),
    ("anything", b"raw"), ("anything", {1, 2}), ("anything", object()), ("anything", np.array([None], dtype=object)),
    ("label", b"bytes"), ("names", [b"a"]), ("widths", {1, 2}), ("lr", np.array([0.1], dtype=object)),
])
def test_non_json_values_rejected(name, value):
    with pytest.raises(ConfigError, match=f"parameter '{name}"):
        Demo.from_params("smoke", **{name: value})

def test_json_values_accepted_and_plain():
    c = Demo.from_params("smoke", extra=[1, 2.5, "s", None, True, {"k": [np.int64(3)]}], maybe=[[1]], table={"a": {"b": [1]}},
                         anything={"x": [1, "y"]}, widths=np.array([4, 5]))
    assert c.extra == [1, 2.5, "s", None, True, {"k": [3]}] and type(c.extra[5]["k"][0]) is int
    assert c.maybe == [[1]] and c.table == {"a": {"b": [1]}} and c.anything == {"x": [1, "y"]} and c.widths == (4, 5)
    json.dumps(c.to_dict())

def test_code_like_string_is_only_a_string(tmp_path):
    if os.path.exists("/tmp/pwned"): pytest.skip("/tmp/pwned exists already")
    c = Demo.from_params("smoke", names=["ok", PWNED], label=PWNED, extra=[PWNED])
    assert c.names == ("ok", PWNED) and c.label == PWNED and c.extra == [PWNED]
    assert type(c.label) is str and all(type(x) is str for x in c.names)
    assert canonical_params(Demo, "smoke", {"label": PWNED})["label"] == PWNED
    for where in (dict(widths=[PWNED]), dict(n_items=PWNED), dict(lr=PWNED)):
        with pytest.raises(ConfigError, match="expected"): Demo.from_params("smoke", **where)
    assert not os.path.exists("/tmp/pwned")

@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf"), np.float64("nan")])
def test_non_finite_rejected(bad):
    for kw in (dict(lr=bad), dict(widths=[bad]), dict(extra=[1, [bad]]), dict(table={"k": bad}), dict(anything=bad),
               dict(n_items=bad)):
        with pytest.raises(ConfigError, match="parameter"): Demo.from_params("smoke", **kw)

def test_finite_false_and_gt_inf():
    assert Demo.from_params("smoke", budget=float("inf")).budget == float("inf")
    with pytest.raises(ConfigError, match="'lr': inf is not a finite number"): Demo.from_params("smoke", lr=float("inf"))
    assert _coerce("x", float("nan"), float, finite=False) != _coerce("x", float("nan"), float, finite=False)

def test_seed_bounds():
    with pytest.raises(ConfigError, match="'seed'.*must be <= 4294967295"): Demo.from_params("smoke", seed=2**70)
    with pytest.raises(ConfigError, match="'seed'"): Demo.from_params("smoke", seed=float(2**70))
    assert Demo.from_params("smoke", seed=2**32 - 1).seed == 2**32 - 1

def test_soft_max(monkeypatch):
    monkeypatch.delenv("TRUSTLIB_ALLOW_LARGE", raising=False)
    with pytest.raises(ConfigError) as e: Demo.from_params("smoke", n_items=10**12)
    assert str(e.value) == ("parameter 'n_items': 1000000000000 exceeds its limit 1000000; "
                            "pass allow_large=True (CLI: --allow-large) to raise it")
    assert Demo.from_params("smoke", n_items=10**12, allow_large=True).n_items == 10**12
    assert Demo.from_params("smoke", n_items=10**12, allow_large=True).replace(seed=2).n_items == 10**12
    assert Demo.from_params("full").n_items == 10**7                 # a profile's own value is exempt
    with pytest.raises(ConfigError, match="exceeds its limit"): Demo.from_params("full", n_items=10**7 + 1)
    with pytest.raises(ConfigError, match="out of range"): Demo.from_params("smoke", n_items=0, allow_large=True)  # hard bounds stay
    monkeypatch.setenv("TRUSTLIB_ALLOW_LARGE", "1")
    assert Demo.from_params("smoke", n_items=10**12).n_items == 10**12
    assert canonical_params(Demo, "smoke", {"n_items": 10**12})["n_items"] == 10**12

def test_messages_capped():
    with pytest.raises(ConfigError) as e: Demo.from_params("smoke", n_items="x" * 10_000_000)
    assert len(str(e.value)) < 1000 and "'n_items'" in str(e.value)
    for kw in (dict(label=b"y" * 10_000_000), dict(extra=[b"z" * 10**7]), {"q" * 10**7: 1},
               dict(widths=list(range(10**6)) + ["a"]), dict(lr=10**5000), dict(profile="p" * 10**7)):
        with pytest.raises(ConfigError) as e: Demo.from_params(**({"profile": "smoke"} | kw))
        assert len(str(e.value)) < 1000, (list(kw), len(str(e.value)))
    bomb = ["a"]
    for _ in range(40): bomb = [bomb, bomb]                          # YAML aliases: 2**40 leaves
    with pytest.raises(ConfigError) as e: Demo.from_params("smoke", extra=bomb)
    assert len(str(e.value)) < 1000
    assert len(_short("x" * 10**7)) <= 200

def test_unknown_names_listed():
    with pytest.raises(ConfigError, match=r"unknown parameter\(s\) \['n_item'\] for Demo; allowed: \['anything', "):
        Demo.from_params("smoke", n_item=3)

def test_canonical_params():
    h = lambda p: json.dumps(canonical_params(Demo, "smoke", p), sort_keys=True)
    assert h({}) == h({"seed": 0}) == h({"seed": 0.0}) == h(None) == h({"seed": None, "lr": 0.1, "widths": [8]})
    assert canonical_params(Demo, "smoke", {}) == canonical_params(Demo, "smoke", {"seed": 0.0})
    c = canonical_params(Demo, "smoke", {"seed": 3.0, "lr": 1, "widths": (2, 3)})
    assert type(c["seed"]) is int and type(c["lr"]) is float and c["widths"] == [2, 3]
    assert h({}) != h({"seed": 1}) and canonical_params(Demo, "cpu")["profile"] == "cpu"
    with pytest.raises(ConfigError, match="unknown parameter"): canonical_params(Demo, "smoke", {"nope": 1})

def test_base_fields_bounded():
    assert BaseConfig.unbounded_fields() == []
    assert_bounded(Demo)
    @dataclass
    class Loose(BaseConfig):
        n: int = param(3, "size", ge=1)
        xs: tuple[float, ...] = param((0.5,), "values")
        flag: bool = param(False, "a switch")
    assert Loose.unbounded_fields() == ["n", "xs"]
    with pytest.raises(AssertionError, match=r"\['n', 'xs'\]"): assert_bounded(Loose)

# --- one parameter surface -----------------------------------------------------------------------------

def test_from_namespace():
    ns = {}
    exec(parameters_cell(Demo), {"Optional": typing.Optional}, ns)
    ns.update(n_items=7, widths=[3], print=print, unrelated=object())
    c = Demo.from_namespace(ns)
    assert (c.profile, c.seed, c.n_items, c.widths, c.lr) == ("smoke", 0, 7, (3,), 0.1)
    with warnings.catch_warnings():                                  # under pytest, resolve_profile runs 'smoke'
        warnings.simplefilter("ignore")
        assert Demo.from_namespace({**ns, "profile": "cpu", "seed": 5}).seed == 5
    assert Demo.from_namespace(ns, n_items=10**9, allow_large=True).n_items == 10**9
    with pytest.raises(ConfigError, match="'n_items'"): Demo.from_namespace({**ns, "n_items": "many"})

def _papermill_params(source):
    import nbformat
    from papermill.translators import PythonTranslator
    return PythonTranslator.inspect(nbformat.v4.new_code_cell(source, metadata={"tags": ["parameters"]}))

@pytest.mark.parametrize("Config", [Demo, BaseConfig] + [pytest.param(p, id=p.name) for p in IMPLEMENTED])
def test_parameters_cell_papermill_roundtrip(Config, caplog):
    if not isinstance(Config, type): Config = importlib.import_module(Config.module).Config
    cell = parameters_cell(Config)
    assert cell.splitlines()[0].startswith('profile: str = "smoke"  # ')
    assert check_parameters_cell(Config, cell) == []
    parsed = _papermill_params(cell)
    assert [p.name for p in parsed] == Config.param_names()
    assert all(p.inferred_type_name not in ("None", "") for p in parsed), parsed   # papermill: "Unknown type"
    assert [p.help for p in parsed] == [line.split("  # ", 1)[1] for line in cell.splitlines()]
    assert not [r for r in caplog.records if "Unable to parse" in r.getMessage()]
    ns = {}
    exec(cell, {"Optional": typing.Optional}, ns)                   # the cell is valid python as written
    ns.pop("__annotations__", None)
    assert ns == {"profile": "smoke", **{n: None for n in Config.param_names() if n != "profile"}}

def test_papermill_notebook_help(tmp_path):
    import nbformat
    from papermill.inspection import inspect_notebook
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}}, cells=[nbformat.v4.new_code_cell("from typing import Optional"),
                                         nbformat.v4.new_code_cell(parameters_cell(Demo), metadata={"tags": ["parameters"]})])
    path = tmp_path / "demo.ipynb"; nbformat.write(nb, path)
    info = inspect_notebook(str(path))
    assert list(info) == Demo.param_names()
    assert info["widths"]["inferred_type_name"] == "Optional[list[int]]" and info["widths"]["help"] == "hidden widths"

def test_check_parameters_cell_finds_drift():
    cell = parameters_cell(Demo).splitlines()
    lr = next(line for line in cell if line.startswith("lr:"))
    drifted = [cell[0], cell[2].replace("Optional[int]", "int"), cell[1], *cell[3:-1], "lr2: Optional[float] = None  # x",
               lr.split("#")[0] + "# learning rate (cpu: 0.3)"]
    probs = check_parameters_cell(Demo, "\n".join(drifted))
    text = "\n".join(probs)
    for needle in ("missing parameter(s) ['budget']", "['lr2'] are not fields", "order differs", "annotation 'int'",
                   "'lr' is assigned twice"):
        assert needle in text, (needle, probs)
    assert any("comment contains '='" in p for p in check_parameters_cell(Demo, cell[0] + "\nseed: Optional[int] = None  # a = b"))

@pytest.mark.parametrize("paper", IMPLEMENTED, ids=lambda p: p.name)
def test_paper_parameters_cell(paper):
    import nbformat
    nb = nbformat.read(ROOT / "nbs" / paper.notebook, as_version=4)
    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(cells) == 1
    Config = importlib.import_module(paper.module).Config
    assert check_parameters_cell(Config, cells[0].source) == []

@pytest.mark.parametrize("paper", IMPLEMENTED, ids=lambda p: p.name)
def test_paper_config_bounded(paper):
    Config = importlib.import_module(paper.module).Config
    assert_bounded(Config)
    for prof in ("smoke", "cpu", "full"): Config.from_params(prof)   # each profile's own values pass the bounds

def test_help_shows_parameter_docs():
    text = pydoc.render_doc(Demo, renderer=pydoc.plaintext)
    for f in fields(Demo): assert f.metadata["help"] in text, f.name
    assert Demo.__doc__.startswith("A config for the tests.\n\nParameters\n----------\nprofile : str, one of smoke, cpu, full")
    assert Demo.__doc__ == "A config for the tests.\n\n" + param_docs(Demo)
    assert "n_items : int, >= 1, <= 1000000 (soft: allow_large raises it)" in param_docs(Demo)

@pytest.mark.parametrize("paper", IMPLEMENTED, ids=lambda p: p.name)
def test_paper_docs(paper):
    Config = importlib.import_module(paper.module).Config
    doc = Config.__doc__
    assert "Parameters\n----------\n" in doc
    for f in fields(Config): assert f"\n{f.name} : " in doc


def test_misspelt_papermill_parameter_is_an_error_before_work(tmp_path, offline_env):
    """Raw papermill only warns about a parameter the notebook's parameters cell lacks (`-p n_seed 3`); the paper's
    `Config.from_namespace` (its first cell after the parameters) refuses it, naming it and the close matches, and
    `trustlib run` does the same before any run folder exists."""
    import papermill as pm
    from trustlib.cli import main
    nb = ROOT/'nbs'/'papers'/'clustering'/'l2h.ipynb'
    with pytest.raises(pm.PapermillExecutionError) as e:
        pm.execute_notebook(str(nb), str(tmp_path/'out.ipynb'), parameters=dict(profile='smoke', n_seed=3), kernel_name='python3',
                            cwd=str(nb.parent), progress_bar=False, log_output=False)
    assert e.value.ename == 'ConfigError', e.value.ename
    assert "unknown parameter(s) ['n_seed'] passed to the notebook" in e.value.evalue and "did you mean ['n_seeds', " in e.value.evalue, e.value.evalue
    assert 'Config.from_namespace(globals())' in e.value.source   # it stopped at the configuration, before the method and the experiment
    rc = main(['run', 'l2h', '--profile', 'smoke', '-q', '--runs-dir', str(tmp_path/'runs'), '-p', 'n_seed', '3'])
    assert rc == 2 and not (tmp_path/'runs'/'l2h').exists() or not any((tmp_path/'runs'/'l2h').iterdir())
