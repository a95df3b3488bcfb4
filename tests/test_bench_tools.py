"""tools/bench_cpu_total.py: which recorded cpu run counts for each paper, and what is read from it (nothing is re-run)."""
import importlib.util
from pathlib import Path

from trustlib.results import ledger_path, write_json

ROOT = Path(__file__).resolve().parents[1]

def _tool():
    spec = importlib.util.spec_from_file_location("bench_cpu_total", ROOT / "tools" / "bench_cpu_total.py")
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    return mod

def _run(root:Path, paper:str, name:str, cpu:float, finished:str, status:str="complete", speed:bool=True):
    t = dict(cpu_seconds=cpu, wall_seconds=cpu + 1, load_start=0.5, load_end=1.25)
    if speed: t.update(gflops_start=200.0, gflops_end=180.0, gbps_start=10.0, gbps_end=11.0)
    write_json(root / "runs" / paper / name / "metrics.json", dict(paper=paper, status=status, profile="cpu", finished=finished, run_id=name, timings=t))

def _ledger(root:Path, paper:str, pubs:list):
    write_json(ledger_path(paper, root), dict(paper=paper, publications=pubs))          # where the tool reads ledgers

def test_cpu_total_takes_each_papers_newest_complete_cpu_run(tmp_path):
    from trustlib.config import PAPERS
    tool = _tool()
    a, b = PAPERS[0].name, PAPERS[1].name
    # paper a: a publication, a newer complete run folder (counts), a still newer failed run and a newer smoke publication (ignored)
    _ledger(tmp_path, a, [dict(profile="cpu", cpu_seconds=100.0, wall_seconds=101.0, date="2026-12-01"),
                          dict(profile="smoke", cpu_seconds=5.0, wall_seconds=5.0, date="2026-12-03")])
    _run(tmp_path, a, "cpu-new", 90.0, "2026-12-02T10:00:00+00:00")
    _run(tmp_path, a, "cpu-failed", 1.0, "2026-12-04T10:00:00+00:00", status="failed")
    # paper b: a run folder older than its newest publication (the publication counts; it recorded no speed probe)
    _run(tmp_path, b, "cpu-old", 40.0, "2026-12-04T10:00:00+00:00")
    _ledger(tmp_path, b, [dict(profile="cpu", cpu_seconds=50.0, wall_seconds=52.0, date="2026-12-05", load=[0.1, 0.9])])
    rows, missing = tool.collect([tmp_path])
    by = {r["paper"]: r for r in rows}
    assert list(by) == [a, b]                                         # in the papers' order
    assert missing == [p.name for p in PAPERS[2:]]
    assert by[a]["cpu_s"] == 90.0 and by[a]["wall_s"] == 91.0 and by[a]["source"].endswith(":runs")
    assert (by[a]["load_start"], by[a]["load_end"], by[a]["gflops_start"], by[a]["gflops_end"]) == (0.5, 1.25, 200.0, 180.0)
    assert by[b]["cpu_s"] == 50.0 and by[b]["source"].endswith(":ledger")
    assert (by[b]["load_start"], by[b]["load_end"], by[b]["gflops_start"]) == (0.1, 0.9, None)
    assert sum(r["cpu_s"] for r in rows) == 140.0

def test_cpu_total_of_an_empty_checkout_lists_every_paper_missing(tmp_path):
    from trustlib.config import PAPERS
    rows, missing = _tool().collect([tmp_path])
    assert rows == [] and missing == [p.name for p in PAPERS]
