"""Repository invariants that CI enforces: the library is exactly what the notebooks export, notebooks are
clean, every notebook's py:percent pair is in sync, and the wheel carries every subpackage."""
import os, shutil, subprocess, sys, zipfile, filecmp
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
    whl = next(tmp_path.glob("trustlib-*.whl"))
    names = set(zipfile.ZipFile(whl).namelist())
    expected = {str(p.relative_to(ROOT)) for p in (ROOT / "trustlib").rglob("*.py") if "__pycache__" not in p.parts}
    missing = sorted(expected - names)
    assert not missing, f"wheel lacks {missing}"
    assert "trustlib/fairness/disparate_benefits.py" in names
    meta = next(n for n in names if n.endswith("METADATA"))
    text = zipfile.ZipFile(whl).read(meta).decode()
    assert "Requires-Dist: torch==2.13.0" in text          # pinned CPU build, never a bare `torch`
    assert next(n for n in names if n.endswith("entry_points.txt"))

def test_import_trustlib_is_light():
    code = "import sys, trustlib, trustlib.config, trustlib.results, trustlib.data, trustlib.cli; heavy = [m for m in ('torch', 'pandas', 'sklearn', 'papermill', 'matplotlib', 'transformers') if m in sys.modules]; print(heavy)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", f"`import trustlib` pulls in heavy modules: {out.stdout}"

def test_readme_is_generated_from_index():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "readme.py"), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr

def test_notebooks_fit_nbdev_docs_build():
    "Title cells hold only title + summary; no non-exported cell mixes imports with other code (tools/nbfix.py)."
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "nbfix.py"), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
