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

def test_session_kernels_are_forked_by_the_zygote(kernel_zygote_session, tmp_path):
    """This session's notebook kernels come from its warm zygote (a launch it declines would only cost time, unseen), also
    when this process has imported scikit-learn or compiled with torch, which set variables; a kernel does not inherit the
    zygote's address."""
    if kernel_zygote_session is None: pytest.skip("no kernel zygote in this session (TRUSTLIB_TEST_ZYGOTE=0)")
    import os, nbformat as nbf, papermill as pm
    from conftest import kernel_env
    from trustlib.runs import kernel_sockets, papermill_engine
    nb = nbf.v4.new_notebook(cells=[nbf.v4.new_code_cell("import os\nprint(os.getppid(), 'TRUSTLIB_KERNEL_ZYGOTE' in os.environ)")])
    nb.metadata["kernelspec"] = dict(name="python3", display_name="Python 3", language="python")
    nbf.write(nb, tmp_path / "probe.ipynb")
    env = dict(kernel_env(), KMP_DUPLICATE_LIB_OK="True", KMP_INIT_AT_FORK="FALSE",   # as scikit-learn's import sets them
               TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"))                      # and torch.compile
    saved = dict(os.environ); os.environ.clear(); os.environ.update(env)
    try:
        with kernel_sockets() as kw:
            out = pm.execute_notebook(str(tmp_path / "probe.ipynb"), str(tmp_path / "out.ipynb"), kernel_name="python3",
                                      engine_name=papermill_engine(), progress_bar=False, **kw)
    finally: os.environ.clear(); os.environ.update(saved)
    ppid, inherited = out.cells[0].outputs[0]["text"].split()
    assert (int(ppid), inherited) == (kernel_zygote_session.pid, "False")

@pytest.mark.notebook
@pytest.mark.parametrize("rel", notebooks(), ids=lambda r: str(r))
def test_notebook_runs_smoke(rel, tmp_path, smoke_records):
    "The notebook runs top to bottom (a test asserts behaviour; its speed is a benchmark's business, in CPU time, not a wall-clock test's)."
    execute_smoke(rel, tmp_path, smoke_records)
