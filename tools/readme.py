"""README.md is generated from nbs/index.ipynb (the website's home page): `python tools/readme.py`.
`--check` exits 1 when README.md is out of date (used by the tests)."""
import re, sys
from pathlib import Path
import nbformat

ROOT = Path(__file__).resolve().parents[1]

def render() -> str:
    nb = nbformat.read(ROOT / "nbs" / "index.ipynb", as_version=4)
    text = "\n\n".join(c.source.strip() for c in nb.cells if c.cell_type == "markdown")
    # links relative to nbs/ on the website are relative to the repository root here
    text = re.sub(r"\]\((?!https?:|#|/)([^)]+\.ipynb[^)]*)\)", r"](nbs/\1)", text)
    return "<!-- generated from nbs/index.ipynb by tools/readme.py: edit the notebook, not this file -->\n\n" + text + "\n"

if __name__ == "__main__":
    out = render()
    if "--check" in sys.argv:
        ok = (ROOT / "README.md").read_text() == out
        if not ok: print("README.md is out of date: run `python tools/readme.py`")
        sys.exit(0 if ok else 1)
    (ROOT / "README.md").write_text(out)
