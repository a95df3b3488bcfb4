"""Repository invariants that CI enforces: the library is exactly what the notebooks export, notebooks are
clean, every notebook's py:percent pair is in sync, and the wheel carries every subpackage."""
import filecmp, json, os, re, shutil, subprocess, sys, zipfile
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

def _copy_project(dst: Path) -> Path:
    for name in ("settings.ini", "setup.py", "pyproject.toml", "README.md", "_quarto.yml"):
        if (ROOT / name).exists(): shutil.copy2(ROOT / name, dst / name)
    shutil.copytree(ROOT / "nbs", dst / "nbs", symlinks=True, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    shutil.copytree(ROOT / "trustlib", dst / "trustlib", ignore=shutil.ignore_patterns("__pycache__"))
    return dst

def _tree_diff(a: Path, b: Path, pattern="*") -> list[str]:
    fa = {p.relative_to(a) for p in a.rglob(pattern) if p.is_file() and "__pycache__" not in p.parts}
    fb = {p.relative_to(b) for p in b.rglob(pattern) if p.is_file() and "__pycache__" not in p.parts}
    diff = sorted(str(p) for p in fa ^ fb)
    diff += sorted(str(p) for p in fa & fb if (a / p).read_bytes() != (b / p).read_bytes())
    return diff

def test_nbdev_export_leaves_library_unchanged(tmp_path):
    work = _copy_project(tmp_path)
    r = subprocess.run([str(BIN / "nbdev_export")], cwd=work, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    diff = _tree_diff(ROOT / "trustlib", work / "trustlib", "*.py")
    assert not diff, f"nbdev_export would change {diff}: run `make export` and commit"

def test_nbdev_clean_leaves_notebooks_unchanged(tmp_path):
    work = _copy_project(tmp_path)
    r = subprocess.run([str(BIN / "nbdev_clean")], cwd=work, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    diff = _tree_diff(ROOT / "nbs", work / "nbs", "*.ipynb")
    assert not diff, f"nbdev_clean would change {diff}: run `make clean` and commit"

def test_jupytext_pairs_in_sync():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "pairs.py"), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr

def test_parameters_cell_is_smoke_by_default():
    "Every paper notebook's own parameters cell defaults to the smoke profile (papermill runs override it)."
    import nbformat
    for nb in (ROOT / "nbs" / "papers").rglob("*.ipynb"):
        cells = nbformat.read(nb, as_version=4).cells
        params = [c for c in cells if "parameters" in c.metadata.get("tags", [])]
        assert len(params) == 1, f"{nb}: needs exactly one cell tagged 'parameters'"
        assert 'profile: str = "smoke"' in params[0].source, f"{nb}: the parameters cell must default to profile 'smoke'"
        assert "paper vs" in "\n".join(c.source for c in cells).lower(), f"{nb}: no 'Paper vs. us' section"
        # papermill itself must see every declared parameter (its parser does not understand `X | None`)
        import papermill as pm
        declared = [l.split(":")[0].split("=")[0].strip() for l in params[0].source.splitlines() if l.strip() and not l.startswith(("#", "from ", "import "))]
        seen = set(pm.inspect_notebook(str(nb)))
        assert set(declared) <= seen, f"{nb}: papermill cannot parse parameter(s) {sorted(set(declared) - seen)}; use Optional[X], and no '=' in comments"

def test_wheel_contains_every_subpackage(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation", "-w", str(tmp_path), "-q"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    whl = next(tmp_path.glob("trustlib_icml25-*.whl"))   # the distribution name; `trustlib` on PyPI is another project
    names = set(zipfile.ZipFile(whl).namelist())
    expected = {str(p.relative_to(ROOT)) for p in (ROOT / "trustlib").rglob("*.py") if "__pycache__" not in p.parts}
    missing = sorted(expected - names)
    assert not missing, f"wheel lacks {missing}"
    assert "trustlib/fairness/disparate_benefits.py" in names
    assert {"trustlib/resources/wordnet_nouns_zipf.tsv.gz", "trustlib/resources/LICENSE-wordnet_nouns_zipf.txt"} <= names   # DOR's word table and its licences
    meta = next(n for n in names if n.endswith("METADATA"))
    text = zipfile.ZipFile(whl).read(meta).decode()
    assert "Name: trustlib-icml25" in text
    assert "Requires-Dist: torch>=2.4" in text             # a range: pip keeps a user's torch; the tested pin is in constraints.txt
    assert not any(l.startswith("Requires-Dist: playwright") and "extra == \"all\"" in l for l in text.splitlines())   # site tools stay out of [all]
    # the paper notebooks ship (outputs stripped), so the CLI works after pip install outside a checkout
    shipped = {n for n in names if n.startswith("trustlib/notebooks/papers/") and n.endswith(".ipynb")}
    assert "trustlib/notebooks/papers/fairness/disparate_benefits.ipynb" in shipped
    nb = json.loads(zipfile.ZipFile(whl).read("trustlib/notebooks/papers/fairness/disparate_benefits.ipynb"))
    assert all(not c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code")
    assert next(n for n in names if n.endswith("entry_points.txt"))

def test_import_trustlib_is_light():
    code = "import sys, trustlib, trustlib.config, trustlib.results, trustlib.data, trustlib.cli; heavy = [m for m in ('torch', 'pandas', 'sklearn', 'papermill', 'matplotlib', 'transformers') if m in sys.modules]; print(heavy)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", f"`import trustlib` pulls in heavy modules: {out.stdout}"

def test_readme_is_generated_from_index():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "readme.py"), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr

def _nbfix_check(*args):
    return subprocess.run([sys.executable, str(ROOT / "tools" / "nbfix.py"), "--check", *args], capture_output=True, text=True)

def _committed_notebooks(papers: bool) -> list[str]:
    nbs = ROOT / "nbs"
    out = [p for p in sorted(nbs.rglob("*.ipynb")) if not any(part.startswith((".", "_")) for part in p.relative_to(nbs).parts)]
    return [str(p) for p in out if (p.relative_to(nbs).parts[0] == "papers") == papers]

def test_notebooks_fit_nbdev_docs_build():
    "Title cells hold only title + summary; no non-exported cell mixes imports with other code (tools/nbfix.py)."
    r = _nbfix_check("--only=structure")
    assert r.returncode == 0, r.stdout + r.stderr

def test_published_pages_hygiene():
    "Core, index and results notebooks: no stored stderr, no 1,000-character output lines, no process narration on the home page."
    r = _nbfix_check("--only=hygiene", *_committed_notebooks(papers=False))
    assert r.returncode == 0, r.stdout + r.stderr

def test_paper_pages_hygiene():
    "The same for nbs/papers/**, whose markdown must also not narrate the process (issue, lead, helper, session)."
    r = _nbfix_check("--only=hygiene", *_committed_notebooks(papers=True))
    assert r.returncode == 0, r.stdout + r.stderr

def _load_nbfix():
    import importlib.util
    spec = importlib.util.spec_from_file_location("nbfix", ROOT / "tools" / "nbfix.py")
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    return mod

def test_hygiene_rules_catch_each_problem():
    import nbformat
    nbfix = _load_nbfix()
    v4 = nbformat.v4
    warn = "/work/x/.venv/lib/python3.11/site-packages/tqdm/auto.py:21: TqdmWarning: IProgress not found. Please update jupyter and ipywidgets.\n  from .autonotebook import tqdm as notebook_tqdm\n"
    code = v4.new_code_cell("f()", outputs=[v4.new_output("stream", name="stderr", text=warn),
                                            v4.new_output("stream", name="stderr", text="UserWarning in /home/me/x.py\n"),
                                            v4.new_output("stream", name="stdout", text="ok /tmp/ is fine on stdout\n"),
                                            v4.new_output("stream", name="stderr", text="FutureWarning: x is deprecated\n"),
                                            v4.new_output("stream", name="stdout", text="\r" + "#" * 1500 + "\n")])
    md = v4.new_markdown_cell("As the issue asks, a helper wrote this in one session. Closing note.")
    nb = v4.new_notebook(cells=[md, code])
    probs = nbfix.hygiene(nb, page=True)
    assert len([q for q in probs if "local path" in q]) == 2 and len([q for q in probs if "1,501 characters" in q]) == 1
    assert [q for q in probs if "stored stderr output 'FutureWarning" in q] == [q for q in probs if "stored stderr output '" in q] and \
        len([q for q in probs if "stored stderr output '" in q]) == 1   # any other stderr too: the site's browser check refuses it
    assert {q.split("(")[1].split(")")[0] for q in probs if "narrates" in q} == {"'the issue'", "'helper'", "'session'", "'Closing note'"}
    assert not [q for q in nbfix.hygiene(nb, page=False) if "narrates" in q]       # narration is only checked on published pages
    blank = v4.new_code_cell("g()", outputs=[v4.new_output("stream", name="stderr", text="\n"),
                                             v4.new_output("stream", name="stderr", text="  from .autonotebook import tqdm as notebook_tqdm\n")])
    assert len([q for q in nbfix.hygiene(v4.new_notebook(cells=[blank])) if "nothing for a reader" in q]) == 2
    assert nbfix.drop_tqdm_warnings(nb) == ["blank/tqdm-warning stderr dropped"] and len(nb.cells[1].outputs) == 4
    assert nbfix.is_page(ROOT / "nbs" / "index.ipynb") and nbfix.is_page(ROOT / "nbs" / "papers" / "x" / "y.ipynb")
    assert not nbfix.is_page(ROOT / "nbs" / "core" / "01_data.ipynb")


def test_optional_dependencies_match_the_extras():
    "Every install hint names an extra of settings.ini that really contains the package, under the distribution's name."
    import configparser
    from trustlib.config import OPTIONAL, DIST_NAME
    cp = configparser.ConfigParser(delimiters=["="], interpolation=None)
    cp.read(ROOT / "settings.ini", encoding="utf-8")
    assert cp["DEFAULT"]["lib_name"] == DIST_NAME
    for module, (extra, req) in OPTIONAL.items():
        assert req in cp["DEFAULT"].get(f"extra_{extra}", "").split(), (module, extra, req)


def test_jupytext_sync_round_trips_a_pair(tmp_path):
    "Edit the py:percent pair, `jupytext --sync`, `nbdev_clean`: the notebook takes the edit and keeps outputs and cell ids; the pair stays canonical."
    import importlib.util, nbformat
    spec = importlib.util.spec_from_file_location("pairs", ROOT / "tools" / "pairs.py"); pairs = importlib.util.module_from_spec(spec); spec.loader.exec_module(pairs)
    (tmp_path / "nbs" / "core").mkdir(parents=True); (tmp_path / "scripts" / "core").mkdir(parents=True)
    for f in ("jupytext.toml", "settings.ini"): shutil.copy(ROOT / f, tmp_path / f)
    nb_path, py_path = tmp_path / "nbs" / "core" / "08_cluster_metrics.ipynb", tmp_path / "scripts" / "core" / "08_cluster_metrics.py"
    shutil.copy(ROOT / "nbs" / "core" / "08_cluster_metrics.ipynb", nb_path); shutil.copy(ROOT / "scripts" / "core" / "08_cluster_metrics.py", py_path)
    before = nbformat.read(nb_path, as_version=4)
    text = py_path.read_text()
    assert "# Metrics shared by the clustering papers." in text
    py_path.write_text(text.replace("# Metrics shared by the clustering papers.", "# Metrics shared by every clustering paper."))
    os.utime(py_path, (nb_path.stat().st_mtime + 10,) * 2)   # the edited side is the newer one
    for cmd in ([sys.executable, "-m", "jupytext", "--sync", str(py_path)], [str(Path(sys.executable).parent / "nbdev_clean"), "--fname", str(nb_path)]):
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
        assert r.returncode == 0, r.stdout + r.stderr
    after = nbformat.read(nb_path, as_version=4)
    assert [c.id for c in after.cells] == [c.id for c in before.cells]
    assert [c.get("outputs") for c in after.cells] == [c.get("outputs") for c in before.cells]
    changed = [i for i, (a, b) in enumerate(zip(before.cells, after.cells)) if a.source != b.source]
    assert len(changed) == 1 and "every clustering paper" in after.cells[changed[0]].source
    assert pairs.render(nb_path) == py_path.read_text()   # what `tools/pairs.py --check` expects


def test_constraints_pin_every_declared_requirement_inside_its_range():
    "The library declares ranges; constraints.txt (used by make install and CI) pins each to one tested version inside that range."
    import configparser
    from packaging.requirements import Requirement
    cp = configparser.ConfigParser(delimiters=["="], interpolation=None); cp.read(ROOT / "settings.ini", encoding="utf-8")
    d = cp["DEFAULT"]
    reqs = [Requirement(r) for k in d if k == "requirements" or k.startswith("extra_") for r in d[k].split()]
    norm = lambda n: n.lower().replace("_", "-").replace(".", "-")
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, ver = line.partition("=="); pins[norm(name)] = ver.strip()
    assert pins.get("torch") == "2.13.0"
    for r in reqs:
        assert norm(r.name) in pins, f"{r.name} is declared in settings.ini but not pinned in constraints.txt"
        assert r.specifier.contains(pins[norm(r.name)], prereleases=True), f"constraints.txt pins {r.name}=={pins[norm(r.name)]}, outside {r}"
    assert "-c constraints.txt" in (ROOT / "Makefile").read_text()


def test_install_leaves_a_consistent_environment():
    """The README's and make install's steps never install the sae-probes wheel (its metadata asks for sae-lens,
    transformer-lens, xgboost and pandas<3): they download the file, which trustlib reads as a zip archive. This
    environment passes `pip check`; lines about a leftover `pip install --no-deps sae-probes` from an older
    make install (which the current one uninstalls) are the only ones tolerated."""
    readme, make = (ROOT / "README.md").read_text(), (ROOT / "Makefile").read_text()
    for name, text in (("README.md", readme), ("Makefile", make)):
        assert not re.search(r"pip install[^\n]*sae-probes", text), f"{name} installs sae-probes"
        assert re.search(r'pip download --no-deps "sae-probes==[\d.]+"|fetch_sae_probes\(\)', text), f"{name} does not fetch the sae-probes wheel"
    assert "pip check" in readme and "-m pip check" in make and "pip uninstall -q -y sae-probes" in make
    assert "sae-probes" not in (ROOT / "constraints.txt").read_text()
    r = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True, timeout=300)
    bad = [l for l in r.stdout.splitlines() if l.strip() and not l.startswith("sae-probes ") and l != "No broken requirements found."]
    assert not bad, r.stdout
