"""Keep every notebook in nbs/ paired with its py:percent copy in scripts/ (jupytext).

python tools/pairs.py --write   rewrite scripts/ from the notebooks (the .ipynb is the source of truth)
python tools/pairs.py --check   exit 1 and list the pairs that are out of sync (used by the tests)
python tools/pairs.py --edited  print the notebooks whose .ipynb or scripts/ pair differs from git's HEAD (what
                                `make sync` hands to `jupytext --sync`, so that untouched notebooks are never
                                rewritten from their pair because of a checkout's file times)
"""
import sys
from pathlib import Path
import jupytext

ROOT = Path(__file__).resolve().parents[1]
FMT = dict(extension=".py", format_name="percent")

def notebooks():
    return [p for p in sorted((ROOT / "nbs").rglob("*.ipynb"))
            if not any(part.startswith(('.', '_')) for part in p.relative_to(ROOT / "nbs").parts)]

def script_for(nb: Path) -> Path:
    return ROOT / "scripts" / nb.relative_to(ROOT / "nbs").with_suffix(".py")

def render(nb: Path) -> str:
    n = jupytext.read(nb)
    for c in n.cells:   # papermill adds `tags: []` everywhere; an empty list carries no information
        if c.metadata.get("tags") == []: del c.metadata["tags"]
    n.metadata.setdefault("jupytext", {}).update(notebook_metadata_filter="-all", cell_metadata_filter="tags,-all")
    return jupytext.writes(n, fmt=FMT)

def edited() -> list[Path]:
    "Notebooks whose .ipynb or pair is modified or untracked in git (every notebook outside a git checkout)."
    import subprocess
    r = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=all", "--", "nbs", "scripts"],
                       capture_output=True, text=True)
    if r.returncode: return notebooks()
    paths = {(ROOT / line[3:].split(" -> ")[-1].strip('"')).resolve() for line in r.stdout.splitlines() if len(line) > 3}
    return [nb for nb in notebooks() if nb.resolve() in paths or script_for(nb).resolve() in paths]

def main(argv):
    if "--edited" in argv:
        print("\n".join(str(nb.relative_to(ROOT)) for nb in edited())); return 0
    write = "--write" in argv
    only = [Path(a).resolve() for a in argv if not a.startswith("--")]
    stale = []
    expected = {script_for(nb) for nb in notebooks()}
    for nb in notebooks():
        if only and nb.resolve() not in only and script_for(nb).resolve() not in only: continue
        sp, text = script_for(nb), render(nb)
        if not sp.exists() or sp.read_text() != text:
            stale.append(sp)
            if write: sp.parent.mkdir(parents=True, exist_ok=True); sp.write_text(text)
    orphans = [] if only else [p for p in (ROOT / "scripts").rglob("*.py") if p not in expected]
    if write:
        for p in orphans: p.unlink()
        print(f"rewrote {len(stale)} script(s), removed {len(orphans)} orphan(s)")
        return 0
    for p in stale: print(f"out of sync: {p.relative_to(ROOT)} (run `make sync`)")
    for p in orphans: print(f"orphan script without a notebook: {p.relative_to(ROOT)}")
    return 1 if stale or orphans else 0

if __name__ == "__main__": sys.exit(main(sys.argv[1:]))
