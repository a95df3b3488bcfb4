"""The website's sources build: nbdev processes every notebook into _proc/ (its Quarto installer disabled)
and the tree passes trustlib's checks (config, sidebar, links, title cells). Quarto itself is not needed."""
import subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

def test_site_sources_build_and_check():
    exe = Path(sys.executable).parent / "trustlib"
    r = subprocess.run([str(exe), "site", "--check"], cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    assert "site check passed" in r.stdout
    assert (ROOT / "_proc" / "_quarto.yml").exists() and (ROOT / "_proc" / "papers" / "fairness" / "disparate_benefits.ipynb").exists()


def _quarto():
    "The quarto binary: on PATH, else where ../shared/tools/quarto/install.sh puts it by default (~/.local/quarto)."
    import shutil
    q = shutil.which("quarto")
    if q: return q
    home = Path.home() / ".local" / "quarto" / "bin" / "quarto"
    return str(home) if home.is_file() else None

def test_rendered_site_passes_the_browser_check():
    "Render with Quarto, then load every page in headless Chromium: no broken links/anchors, overflow, downscaled images or stderr."
    import os, pytest
    from trustlib.site import browser_unavailable
    q = _quarto()
    if q is None:
        pytest.skip("Quarto is not installed: bash ../shared/tools/quarto/install.sh ~/.local/quarto (see its README), then rerun")
    why = browser_unavailable()
    if why: pytest.skip(why)
    exe = Path(sys.executable).parent / "trustlib"
    env = {**os.environ, "PATH": f"{Path(q).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    r = subprocess.run([str(exe), "site"], cwd=ROOT, capture_output=True, text=True, timeout=2400, env=env)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    assert "site rendered" in r.stdout and "browser check:" in r.stdout, r.stdout[-2000:]
    shots = sorted(p.name for p in (ROOT / "runs" / "site-check").glob("*.png"))
    assert {"index.png", "results__dashboard.png", "results__dashboard-phone.png"} <= set(shots), shots
