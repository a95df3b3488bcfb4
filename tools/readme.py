"""README.md is generated from the website's home page (nbs/index.ipynb) and its developer guide, "Use and contribute"
(nbs/use.ipynb): `python tools/readme.py`. `--check` exits 1 when README.md is out of date (used by the tests).

On the website the home page leads with the results, which `trustlib site` writes from the ledger where the notebook
has its `<!-- trustlib:results -->` marker; README.md keeps the marker cell's text (links to the website's results) and
carries the whole developer guide, so that a reader on GitHub finds what the project is, where the results are, and
how to run, test, install and extend it. README.md never holds verdicts: they change with every publication."""
import re, sys
from pathlib import Path
import nbformat

ROOT = Path(__file__).resolve().parents[1]
MARKER = "<!-- trustlib:results -->"
FULL_MARKER = "<!-- trustlib:full-profile -->"

def full_profile_table() -> str:
    sys.path.insert(0, str(ROOT))
    from trustlib.rehearse import full_profile_table as table
    return table()

def _markdown(nb_path: Path, skip_title: bool = False) -> list[str]:
    nb = nbformat.read(nb_path, as_version=4)
    cells = [c.source.strip() for c in nb.cells if c.cell_type == "markdown"]
    if skip_title: cells = cells[1:]
    return [c.replace(MARKER, "").strip() for c in cells]

def render() -> str:
    home = _markdown(ROOT / "nbs" / "index.ipynb")
    guide = _markdown(ROOT / "nbs" / "use.ipynb", skip_title=True)[1:]   # without its introduction (the home page says it)
    # the home page's short "Use and contribute" section is replaced by the guide itself, under the same heading
    home = [c for c in home if not c.startswith("## Use and contribute")]
    cite = [c for c in home if c.startswith("## Cite")]
    home = [c for c in home if not c.startswith("## Cite")]
    guide = [re.sub(r"^## ", "### ", c, flags=re.M) for c in guide]
    text = "\n\n".join(home + ["## Use and contribute"] + guide + cite)
    text = text.replace(FULL_MARKER, full_profile_table())   # the table of what `full` runs, from trustlib.rehearse.FULL_PROFILE
    # links relative to nbs/ on the website are relative to the repository root here
    text = re.sub(r"\]\((?!https?:|#|/)([^)]+\.ipynb[^)]*)\)", r"](nbs/\1)", text)
    return "<!-- generated from nbs/index.ipynb and nbs/use.ipynb by tools/readme.py: edit the notebooks, not this file -->\n\n" + text + "\n"

if __name__ == "__main__":
    out = render()
    if "--check" in sys.argv:
        ok = (ROOT / "README.md").read_text() == out
        if not ok: print("README.md is out of date: run `python tools/readme.py`")
        sys.exit(0 if ok else 1)
    (ROOT / "README.md").write_text(out)
