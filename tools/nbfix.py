"""Normalise notebooks for nbdev's docs build (python tools/nbfix.py [--check] [NOTEBOOK ...]).

1. The first markdown cell holds only `# Title` and the `> summary` line: nbdev turns that cell into the
   page's front matter and drops anything else in it, so the rest is moved to a new markdown cell.
2. Empty `tags: []` cell metadata (papermill writes it on every cell) is dropped, so that `jupytext --sync`
   writes the same py:percent pair as `tools/pairs.py` (one round trip, see tools/AUTHORING.md).
3. nbdev executes every cell that contains an import while it builds the docs (to render show_doc). A
   non-exported code cell that mixes top-level imports with other code is split in two: the imports, then
   the rest (which keeps the outputs). Otherwise the docs build would run experiments.
4. Published-page hygiene (checked; only the first item is fixed): no stored stderr output at all (the site shows each
   as a warning block, which its browser check refuses; one with an absolute path of the machine that ran it, /work/,
   /root/, /tmp/, /home/, is named as such; the `TqdmWarning: IProgress not found` output, its residue and blank
   stderr outputs are dropped by the fix), no stored stream/text line longer than
   1,000 characters (a progress bar stored as one line; the plain-text form of a table that is also stored as HTML is cut by
   the fix), and, in the markdown of the published paper pages
   (nbs/papers/**, nbs/index.ipynb), no process narration ("the issue", "the lead", "helper", "session",
   "closing note"): pages speak of the paper and the project.
Without arguments it fixes every notebook under nbs/ (structure: except nbs/results). --check only reports.
--only=structure or --only=hygiene restricts it to one group of checks.
"""
import re, sys
from pathlib import Path
import nbformat
from trustlib.runs import TQDM_RESIDUE, drop_empty_tags   # one rule for the tool and for publishing

ROOT = Path(__file__).resolve().parents[1]
IMPORT = re.compile(r"^(import\s+\S|from\s+\S+\s+import\s)")

LOCAL_PATH = re.compile(r"(?<![\w.~-])/(?:work|root|tmp|home)/")
NARRATION = re.compile(r"\b(the issue|the lead|helpers?|sessions?|closing notes?)\b", re.I)
MAX_LINE = 1000
TQDM_IPROGRESS = "TqdmWarning: IProgress not found"

def _text(x): return "".join(x) if isinstance(x, list) else (x or "")

def is_page(p: Path) -> bool:
    "A published paper page or the home page: where markdown must not narrate the process."
    try: rel = Path(p).resolve().relative_to(ROOT / "nbs")
    except ValueError: return False
    return rel.parts[0] == "papers" or rel.as_posix() == "index.ipynb"

def _stored_texts(c):
    "(kind, text) of a code cell's stored stream and text/plain outputs."
    for o in c.get("outputs", []):
        if o.get("output_type") == "stream": yield o.get("name", "stdout"), _text(o.get("text"))
        elif "text/plain" in o.get("data", {}): yield "text/plain", _text(o["data"]["text/plain"])

def hygiene(nb, page: bool = False) -> list[str]:
    "Problems of the stored outputs (any notebook) and, when `page`, of the markdown text (see the module docstring)."
    probs = []
    for i, c in enumerate(nb.cells):
        if c.cell_type == "code":
            for kind, t in _stored_texts(c):
                m = LOCAL_PATH.search(t) if kind == "stderr" else None
                if m:
                    hint = " (the tqdm IProgress warning: `python tools/nbfix.py` drops it)" if TQDM_IPROGRESS in t else ""
                    probs.append(f"cell {i}: stored stderr contains a local path {t[max(0, m.start() - 20):m.end() + 40].strip()!r}{hint}")
                if kind == "stderr" and _noise(t):
                    probs.append(f"cell {i}: stored stderr output with nothing for a reader ({t.strip()[:60]!r}; `python tools/nbfix.py` drops it)")
                elif kind == "stderr" and not m:
                    probs.append(f"cell {i}: stored stderr output {t.strip()[:80]!r} (the site shows it as a warning block, which its browser "
                                 "check refuses: silence the warning at its source or handle it in the cell)")
                long = [len(l) for l in t.split("\n") if len(l) > MAX_LINE]
                if long: probs.append(f"cell {i}: stored {kind} output has a line of {max(long):,} characters (> {MAX_LINE:,}; a progress bar?)")
        elif c.cell_type == "markdown" and page:
            for m in NARRATION.finditer(_text(c.source)):
                src = _text(c.source)
                probs.append(f"cell {i}: markdown narrates the process ({m.group(0)!r}): ...{src[max(0, m.start() - 40):m.end() + 30]!r}...")
    return probs


def _noise(t: str) -> bool:
    "A stderr text with nothing for a reader: blank (a disabled progress bar's newline), or what is left of tqdm's warning."
    lines = [l.strip() for l in t.splitlines() if l.strip()]
    return not lines or all(l == TQDM_RESIDUE for l in lines) or (TQDM_IPROGRESS in t and len(lines) <= 2)

def drop_tqdm_warnings(nb) -> list[str]:
    "Remove stored stderr outputs that are blank or only tqdm's `IProgress not found` warning (or its residue line)."
    changes = []
    for c in nb.cells:
        if c.cell_type != "code": continue
        keep = [o for o in c.get("outputs", []) if not (o.get("output_type") == "stream" and o.get("name") == "stderr"
                and _noise(_text(o.get("text"))))]
        if len(keep) != len(c.get("outputs", [])): c.outputs = keep; changes.append("blank/tqdm-warning stderr dropped")
    return changes

def _is_directive(line): return line.lstrip().startswith("#|")

def fix(nb) -> list[str]:
    changes, cells = [], []
    first_md = True
    empty = drop_empty_tags(nb)   # papermill's `tags: []` (the same rule as `trustlib run --publish`)
    if empty: changes.append(f"empty tags dropped from {empty} cell(s)")
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

def shorten_plain(nb) -> list[str]:
    "Cut the lines of a stored text/plain output that has an HTML form beside it (a wide table) to MAX_LINE characters."
    n = 0
    for c in nb.cells:
        for o in c.get("outputs", []) if c.cell_type == "code" else []:
            d = o.get("data", {})
            if "text/html" in d and "text/plain" in d:
                t = _text(d["text/plain"])
                if any(len(l) > MAX_LINE for l in t.split("\n")):
                    d["text/plain"] = "\n".join(l if len(l) <= MAX_LINE else l[:MAX_LINE - 1] + "…" for l in t.split("\n")); n += 1
    return [f"text/plain of {n} table output(s) shortened"] if n else []

def notebooks(args, results=False):
    if args: return [Path(a) for a in args]
    return [p for p in sorted((ROOT / "nbs").rglob("*.ipynb"))
            if not any(part.startswith(('.', '_')) for part in p.relative_to(ROOT / "nbs").parts) and (results or "results" not in p.parts)]

if __name__ == "__main__":
    check = "--check" in sys.argv
    only = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--only=")), None)
    if only not in (None, "structure", "hygiene"): sys.exit(f"--only must be 'structure' or 'hygiene', not {only!r}")
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    bad = 0
    for p in notebooks(args, results=True):
        nb = nbformat.read(p, as_version=4)
        p = Path(p).resolve()
        ch = fix(nb) if only != "hygiene" and (args or "results" not in p.parts) else []
        if only != "structure": ch += (drop_tqdm_warnings(nb) + shorten_plain(nb)) if not check else []
        probs = hygiene(nb, is_page(p)) if only != "structure" else []
        if ch and not check: nbformat.write(nb, p)
        if ROOT in p.parents: p = p.relative_to(ROOT)        # shown relative to the repository
        if check and ch: bad += 1; print(f"{p}: {'; '.join(ch)}")
        elif ch: print(f"{p}: {'; '.join(ch)}")
        if check and probs:
            bad += 1
            print(f"{p}: {len(probs)} published-page problem(s):" + "".join(f"\n  - {q}" for q in probs))
    sys.exit(1 if (check and bad) else 0)
