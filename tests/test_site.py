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
