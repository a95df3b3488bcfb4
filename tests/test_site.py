"""The website, as readers see it.

1. Its sources build: nbdev processes every notebook into _proc/ (its Quarto installer disabled), the pages are
   prepared from data (results pages from the ledger, summary boxes, API pages, audit trails) and the tree passes
   trustlib's checks (config, sidebar, links, title cells). Quarto is not needed.
2. The same works in a copy of the repository with no ../shared beside it (a user's clone).
3. Rendered with Quarto and loaded in headless Chromium at 1366 and 390 px, every page passes the browser check: no
   broken link, anchor or image (links to the production host resolved against the built site), no page wider than
   the screen, no clipped text or table, no request outside the site, and on each of the 19 paper pages a summary box
   whose verdict and run are the ledger's (and the run's metrics.json, when present). Skips, saying why, without
   Quarto, Chromium or Playwright, and outside the slow tier (TRUSTLIB_SLOW=1; CI sets it)."""
import json, os, re, shutil, subprocess, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXE = Path(sys.executable).parent / "trustlib"


def _env(root: Path, extra_path: str | None = None) -> dict:
    env = {**os.environ, "PYTHONPATH": str(root)}
    if extra_path: env["PATH"] = f"{extra_path}{os.pathsep}{env.get('PATH', '')}"
    return env


def _check_proc(root: Path):
    "What `trustlib site --check` must leave in _proc/: pages prepared from the ledger and the paper registry."
    from trustlib.config import PAPERS
    proc = root / "_proc"
    assert (proc / "_quarto.yml").exists()
    for p in PAPERS:
        page = json.loads((proc / p.notebook).read_text())
        text = "\n".join("".join(c["source"]) for c in page["cells"])
        assert 'class="tl-summary"' in text and f'data-paper="{p.name}"' in text, p.name   # the summary box ...
        first = next(i for i, c in enumerate(page["cells"]) if "tl-summary" in "".join(c["source"]))
        assert first <= 2, (p.name, first)                                                    # ... comes first
        assert "## Audit trail" in text and "@inproceedings{" in text, p.name
        assert "show_doc(" not in text, p.name                                                # API entries moved out
        assert (proc / "api" / p.area / f"{p.name}.ipynb").exists(), p.name
        assert "trustlib.github.io/trustlib/" not in text, p.name                             # cross-links are relative
        assert (proc / "_downloads" / p.name / f"{p.name}.ipynb").exists(), p.name
    dash = "\n".join("".join(c["source"]) for c in json.loads((proc / "results" / "dashboard.ipynb").read_text())["cells"])
    assert "## All claims" in dash and '<select data-key="verdict">' in dash and "\\|" not in dash.split("## All claims")[1]
    home = "\n".join("".join(c["source"]) for c in json.loads((proc / "index.ipynb").read_text())["cells"])
    assert 'class="tl-lead"' in home and "<!-- trustlib:results -->" not in home
    from trustlib.bench import BENCH_MARKER
    bench = (proc / "core" / "13_bench.ipynb").read_text()
    assert BENCH_MARKER not in bench and ("make bench" in bench or "### " in bench)   # the latest runs/bench results, or how to get them


def _quarto():
    "The quarto binary: on PATH, else where ../shared/tools/quarto/install.sh puts it by default (~/.local/quarto)."
    q = shutil.which("quarto")
    if q: return q
    home = Path.home() / ".local" / "quarto" / "bin" / "quarto"
    return str(home) if home.is_file() else None


@pytest.fixture(scope="module")
def site_build():
    """One build of the site for this module: `trustlib site` (build, check, prepare, render, browser check) when Quarto
    and a browser are available, else `trustlib site --check` (build, check, prepare). Both tests below read it, so the
    sources are built and prepared once, not once per test. Returns (CompletedProcess, rendered: bool, why not rendered)."""
    from trustlib.site import browser_unavailable
    q = _quarto()
    why = "Quarto is not installed: bash ../shared/tools/quarto/install.sh ~/.local/quarto (see its README), then rerun" if q is None else browser_unavailable()
    if os.environ.get("TRUSTLIB_SLOW") != "1":   # the Quarto render and the browser check cost ~5 CPU-minutes: the slow tier (CI) runs them
        why = why or "the Quarto render and the browser check are in the slow tier: set TRUSTLIB_SLOW=1 to run them (CI does; `make site` renders)"
    cmd = [str(EXE), "site"] + (["--check"] if why else [])
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=3600, env=_env(ROOT, None if why else str(Path(q).parent)))
    return r, not why, why


def test_site_sources_build_and_check(site_build):
    "The sources build, pass the check, and are prepared for reading (the part of `trustlib site` before rendering)."
    r, rendered, _ = site_build
    if not rendered: assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    assert "site check passed" in r.stdout and "prepared for reading: summaries 19" in r.stdout, (r.stdout[-2000:], r.stderr[-3000:])
    assert "problem(s)" not in r.stderr, r.stderr[-3000:]
    _check_proc(ROOT)


def test_index_cites_trustlib_as_the_pages_do():
    "The home page's BibTeX block is the one every paper page shows."
    import nbformat
    from trustlib.report import TRUSTLIB_BIBTEX
    text = "\n".join(c.source for c in nbformat.read(ROOT / "nbs" / "index.ipynb", as_version=4).cells)
    assert TRUSTLIB_BIBTEX in text


@pytest.mark.slow
def test_site_sources_build_in_a_clone_without_shared(tmp_path):
    "A user's clone: the tracked files (and new ones not ignored) in a folder with no ../shared beside it."
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split("\n")
    clone = tmp_path / "repo" / "trustlib"
    for f in filter(None, files):
        src = ROOT / f
        if src.is_symlink() or src.is_file():
            (clone / f).parent.mkdir(parents=True, exist_ok=True)
            if src.is_symlink(): os.symlink(os.readlink(src), clone / f)
            else: shutil.copy2(src, clone / f)
    assert not (clone.parent / "shared").exists()
    env = {k: v for k, v in _env(clone).items() if not k.startswith("TRUSTLIB_")}
    r = subprocess.run([str(EXE), "site", "--check"], cwd=clone, capture_output=True, text=True, timeout=1800, env=env)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    _check_proc(clone)


@pytest.mark.slow
def test_rendered_site_passes_the_browser_check(site_build):
    "Render with Quarto, then load every page in headless Chromium at 1366 and 390 px: the check finds nothing."
    from trustlib.site import site_pages
    r, rendered, why = site_build
    if not rendered: pytest.skip(why)
    assert r.returncode == 0, (r.stdout[-4000:], r.stderr[-4000:])
    assert "site rendered" in r.stdout and "browser check:" in r.stdout, r.stdout[-2000:]
    line = next(l for l in r.stdout.splitlines() if l.startswith("browser check:"))
    n = int(re.search(r"browser check: (\d+) pages", line).group(1))
    docs = ROOT / "_docs"
    assert n == len(site_pages(docs)) >= 19 + 19 + 3, line                       # every page: papers, their API pages, results ...
    assert "0 summary-box problems" in line and "0 requests outside the site" in line, line
    shots = sorted(p.name for p in (ROOT / "runs" / "site-check").glob("*.png"))
    for page in ("index", "results__dashboard", "results__papers", "papers__unlearning__dsda"):
        assert {f"{page}-1366.png", f"{page}-390.png"} <= set(shots), shots
    # MathJax, jQuery, require.js and the font are served from the site, so it works offline
    assert (docs / "site_libs" / "vendor" / "mathjax" / "es5" / "tex-chtml-full.js").is_file() or "left on their CDN" in r.stdout
