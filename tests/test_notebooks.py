"""One pytest item per notebook: each is executed with papermill under the smoke profile, with the network
blocked in the kernel (tests/netguard) and IN_TEST=1 so that a committed `injected-parameters` cell from a
cpu run can never make a test run the cpu profile. A paper notebook records its Result (TRUSTLIB_RUN_DIR) into
the session's `smoke_records` folder; tests/test_papers.py compares one fresh in-process run against it.
A test asserts behaviour, never elapsed time: the smoke profiles' CPU budget is measured by `make bench`
(tools/bench_smoke.py), where the machine's load and a reference are recorded beside it."""
from pathlib import Path
import pytest
from conftest import execute_smoke

ROOT = Path(__file__).resolve().parents[1]
NBS = ROOT / "nbs"

def notebooks():
    out = []
    for p in sorted(NBS.rglob("*.ipynb")):
        rel = p.relative_to(NBS)
        if any(part.startswith(('.', '_')) for part in rel.parts) or rel.parts[0] == "results": continue
        out.append(rel)
    return out

@pytest.mark.notebook
@pytest.mark.parametrize("rel", notebooks(), ids=lambda r: str(r))
def test_notebook_runs_smoke(rel, tmp_path, smoke_records):
    "The notebook runs top to bottom (a test asserts behaviour; its speed is a benchmark's business, in CPU time, not a wall-clock test's)."
    execute_smoke(rel, tmp_path, smoke_records)
