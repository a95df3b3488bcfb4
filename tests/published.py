"""Read what a committed paper page published: the verdict table stored in the notebook's output and the run note above
it (for tests that check a claim's condition on the published configuration without re-running it)."""
import json
from html.parser import HTMLParser
from pathlib import Path

class _Rows(HTMLParser):
    def __init__(self):
        super().__init__(); self.rows, self.row, self.cell = [], None, None
    def handle_starttag(self, tag, attrs):
        if tag == "tr": self.row = []
        elif tag in ("td", "th") and self.row is not None: self.cell = []
    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None: self.row.append("".join(self.cell).strip()); self.cell = None
        elif tag == "tr" and self.row is not None: self.rows.append(self.row); self.row = None
    def handle_data(self, data):
        if self.cell is not None: self.cell.append(data)

def published_verdicts(path) -> tuple[list[dict], str]:
    "(rows of the stored verdict table as dicts column -> text, the run note of the page) of a committed notebook."
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    src = lambda c: c["source"] if isinstance(c["source"], str) else "".join(c["source"])
    html = next(("".join(o["data"]["text/html"]) for c in nb["cells"] if c["cell_type"] == "code" and "verdict_table()" in src(c)
                 for o in c.get("outputs", []) if "text/html" in o.get("data", {})), None)
    assert html is not None, f"{path}: no stored verdict table"
    p = _Rows(); p.feed(html)
    head = [h for h in p.rows[0] if h]
    note = "".join(src(c) for c in nb["cells"] if "injected-parameters" in c.get("metadata", {}).get("tags", []))
    return [dict(zip(head, r[1:])) for r in p.rows[1:]], note
