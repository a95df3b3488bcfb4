"""One pytest item per notebook: each is executed with papermill under the smoke profile, with the network
blocked in the kernel (tests/netguard) and IN_TEST=1 so that a committed `injected-parameters` cell from a
cpu run can never make a test run the cpu profile."""
import time
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
NBS = ROOT / "nbs"

def notebooks():
    out = []
    for p in sorted(NBS.rglob("*.ipynb")):
        rel = p.relative_to(NBS)
        if any(part.startswith(('.', '_')) for part in rel.parts) or rel.parts[0] == "results": continue
        out.append(rel)
    return out

def has_parameters_cell(path) -> bool:
    import nbformat
    nb = nbformat.read(path, as_version=4)
    return any("parameters" in c.get("metadata", {}).get("tags", []) for c in nb.cells)

@pytest.mark.notebook
@pytest.mark.parametrize("rel", notebooks(), ids=lambda r: str(r))
def test_notebook_runs_smoke(rel, tmp_path, monkeypatch):
    import papermill as pm
    from conftest import kernel_env
    for k, v in kernel_env().items(): monkeypatch.setenv(k, v)
    monkeypatch.delenv("TRUSTLIB_RUN_DIR", raising=False)
    path = NBS / rel
    params = dict(profile="smoke") if has_parameters_cell(path) else {}
    t0 = time.time()
    pm.execute_notebook(str(path), str(tmp_path / rel.name), parameters=params, kernel_name="python3",
                        cwd=str(path.parent), progress_bar=False, log_output=False)
    took = time.time() - t0
    if params: assert took < 120, f"smoke profile of {rel} took {took:.0f} s (budget: 60 s on 2 cores, 120 s hard limit)"
