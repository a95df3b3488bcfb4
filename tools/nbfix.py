"""Normalise notebooks for nbdev's docs build (python tools/nbfix.py [--check] [NOTEBOOK ...]).

1. The first markdown cell holds only `# Title` and the `> summary` line: nbdev turns that cell into the
   page's front matter and drops anything else in it, so the rest is moved to a new markdown cell.
2. nbdev executes every cell that contains an import while it builds the docs (to render show_doc). A
   non-exported code cell that mixes top-level imports with other code is split in two: the imports, then
   the rest (which keeps the outputs). Otherwise the docs build would run experiments.
Without arguments it fixes every notebook under nbs/ (except nbs/results). --check only reports.
"""
import re, sys
from pathlib import Path
import nbformat

ROOT = Path(__file__).resolve().parents[1]
IMPORT = re.compile(r"^(import\s+\S|from\s+\S+\s+import\s)")

def _is_directive(line): return line.lstrip().startswith("#|")

def fix(nb) -> list[str]:
    changes, cells = [], []
    first_md = True
    for c in nb.cells:
        if c.cell_type == "markdown" and first_md:
            first_md = False
            lines = c.source.split("\n")
            if lines and lines[0].startswith("# "):
                keep = [lines[0]]; i = 1
                while i < len(lines) and (not lines[i].strip() or lines[i].startswith(">")):
                    if lines[i].startswith(">"): keep += ["", lines[i]]
                    i += 1
                    if len(keep) > 1: break
                rest = "\n".join(lines[i:]).strip()
                if rest:
                    c.source = "\n".join(keep).strip()
                    cells += [c, nbformat.v4.new_markdown_cell(rest)]
                    changes.append("title cell split")
                    continue
        if c.cell_type == "code":
            lines = c.source.split("\n")
            exported = any(_is_directive(l) and re.search(r"\bexport", l) for l in lines)
            imps = [l for l in lines if IMPORT.match(l)]
            others = [l for l in lines if l.strip() and not IMPORT.match(l) and not l.lstrip().startswith("#")]
            if not exported and imps and others:
                directives = [l for l in lines if _is_directive(l)]
                head = nbformat.v4.new_code_cell("\n".join(directives + imps))
                head.metadata = dict(c.metadata)
                if "tags" in head.metadata: head.metadata["tags"] = [t for t in head.metadata["tags"] if t != "parameters"]
                c.source = "\n".join(l for l in lines if not IMPORT.match(l))
                cells += [head, c]
                changes.append(f"imports split from cell: {imps[0][:40]}")
                continue
        cells.append(c)
    nb.cells = cells
    return changes

def notebooks(args):
    if args: return [Path(a) for a in args]
    return [p for p in sorted((ROOT / "nbs").rglob("*.ipynb"))
            if not any(part.startswith(('.', '_')) for part in p.relative_to(ROOT / "nbs").parts) and "results" not in p.parts]

if __name__ == "__main__":
    check = "--check" in sys.argv
    bad = 0
    for p in notebooks([a for a in sys.argv[1:] if not a.startswith("--")]):
        nb = nbformat.read(p, as_version=4)
        ch = fix(nb)
        if ch:
            bad += 1
            print(f"{p}: {'; '.join(ch)}")
            if not check:
                nbformat.write(nb, p)
    sys.exit(1 if (check and bad) else 0)
