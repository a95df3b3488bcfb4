import os, sys
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
NETGUARD = ROOT / "tests" / "netguard"

def kernel_env() -> dict:
    "Environment for papermill kernels started by tests: network blocked, offline hubs, smoke forced."
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(NETGUARD), env.get("PYTHONPATH", "")]).strip(os.pathsep)
    env.update(TRUSTLIB_NO_NETWORK="1", TRUSTLIB_OFFLINE="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               HF_DATASETS_OFFLINE="1", IN_TEST="1", MPLBACKEND="Agg", PYTHONHASHSEED="0")
    return env

def sns_bench_skip_reason() -> str | None:
    "None when SNS-Bench's licensed files are found (trustlib.data.sns_bench_dir); else the reason to skip."
    import trustlib.data as td
    return td.sns_bench_missing("these tests")

def _skip_without_sns_bench():
    why = sns_bench_skip_reason()
    if why is None: return
    if os.environ.get("TRUSTLIB_REQUIRE_SNS_BENCH") == "1":      # CI with the data: a missing folder is an error
        pytest.fail(why + " (TRUSTLIB_REQUIRE_SNS_BENCH=1: not skipping)", pytrace=False)
    pytest.skip(why)

def sae_probes_skip_reason() -> str | None:
    "None when the sae-probes datasets are found (trustlib.data.sae_probes_source); else the reason to skip."
    import trustlib.data as td
    return td.sae_probes_missing("these tests")

def pytest_configure(config):
    config.addinivalue_line("markers", "requires_sns_bench: needs SNS-Bench's licensed JSON files "
                            "(skipped with the reason when they are not found; TRUSTLIB_REQUIRE_SNS_BENCH=1 makes that a failure)")
    config.addinivalue_line("markers", "requires_sae_probes: reads the sae-probes text datasets (the wheel that `make install` "
                            "downloads); skipped with the reason when it is not found, a failure when TRUSTLIB_REQUIRE_SAE_PROBES=1")

SLOW_SKIP = ("marked slow: recomputes a claim's condition on the paper's whole cpu configuration (or builds or renders the site), "
             "several CPU-minutes; the published run's check runs without it. Set TRUSTLIB_SLOW=1 to run it (CI does)")

def pytest_collection_modifyitems(config, items):
    "Tests marked `slow` run only with TRUSTLIB_SLOW=1 (CI sets it); otherwise they skip with the reason."
    if os.environ.get("TRUSTLIB_SLOW") == "1": return
    for item in items:
        if item.get_closest_marker("slow"): item.add_marker(pytest.mark.skip(reason=SLOW_SKIP))

def pytest_runtest_setup(item):
    if item.get_closest_marker("requires_sns_bench"): _skip_without_sns_bench()
    if item.get_closest_marker("requires_sae_probes") and (why := sae_probes_skip_reason()) is not None:
        if os.environ.get("TRUSTLIB_REQUIRE_SAE_PROBES") == "1": pytest.fail(why + " (TRUSTLIB_REQUIRE_SAE_PROBES=1: not skipping)", pytrace=False)
        pytest.skip(why)

_SAE_MISSING_TEXT = "the sae-probes text datasets is not available"

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test that stops because the sae-probes datasets are absent (their DataUnavailable, raised directly, inside a
    ConfigError's message or a notebook's error) is reported as skipped with the reason, not failed, unless
    TRUSTLIB_REQUIRE_SAE_PROBES=1. Tests known to need the data carry the `requires_sae_probes` marker instead."""
    outcome = yield
    rep = outcome.get_result()
    if rep.when != "call" or not rep.failed or call.excinfo is None or os.environ.get("TRUSTLIB_REQUIRE_SAE_PROBES") == "1": return
    if _SAE_MISSING_TEXT not in str(call.excinfo.value) and _SAE_MISSING_TEXT not in str(rep.longrepr): return
    why = sae_probes_skip_reason()
    if why is None: return
    rep.outcome, rep.longrepr = "skipped", (str(item.path), item.location[1] or 0, "Skipped: " + why)

@pytest.fixture
def requires_sns_bench() -> Path:
    "The SNS-Bench folder; skips the test (with where it looked and how to provide the data) when it is absent."
    _skip_without_sns_bench()
    import trustlib.data as td
    return td.sns_bench_dir()

@pytest.fixture(scope="session")
def root() -> Path: return ROOT

def has_parameters_cell(path) -> bool:
    import nbformat
    nb = nbformat.read(path, as_version=4)
    return any("parameters" in c.get("metadata", {}).get("tags", []) for c in nb.cells)

def smoke_record_dir(base: Path, rel) -> Path:
    "Where the smoke run of notebook `rel` (relative to nbs/) records its result.json in this pytest session."
    return base / str(rel).replace("/", "__").removesuffix(".ipynb")

def execute_smoke(rel, out_dir: Path, record_base: Path | None = None) -> float:
    """Execute notebook `rel` (relative to nbs/) with papermill into `out_dir`, under kernel_env(); a paper notebook
    (one with a parameters cell) runs its smoke profile and, when `record_base` is given, records its Result there
    (TRUSTLIB_RUN_DIR). Returns the wall time in seconds."""
    import time
    import papermill as pm
    from trustlib.runs import kernel_sockets, papermill_engine
    path = ROOT / "nbs" / rel
    params = dict(profile="smoke") if has_parameters_cell(path) else {}
    env = kernel_env()
    env.pop("TRUSTLIB_RUN_DIR", None)
    if params and record_base is not None:
        rd = smoke_record_dir(record_base, rel); rd.mkdir(parents=True, exist_ok=True)   # exists = the run was attempted
        env["TRUSTLIB_RUN_DIR"] = str(rd)
    saved = dict(os.environ)
    os.environ.clear(); os.environ.update(env)          # the kernel inherits this process's environment
    try:
        t0 = time.time()
        with kernel_sockets() as kw:   # Unix sockets: no TCP port race with kernels started by the notebook's own sweeps
            pm.execute_notebook(str(path), str(out_dir / Path(rel).name), parameters=params, kernel_name="python3", engine_name=papermill_engine(),
                                cwd=str(path.parent), progress_bar=False, log_output=False, **kw)
        return time.time() - t0
    finally:
        os.environ.clear(); os.environ.update(saved)

_KERNEL_MODULES = ("test_notebooks.py", "test_rehearse.py", "test_papers.py")   # the toy kernels of the run and fault tests import little

@pytest.fixture(scope="session", autouse=True)
def kernel_zygote_session(request):
    """A session that runs paper or core notebooks (notebook items, rehearsals, determinism checks) forks their kernels from one warm
    zygote (trustlib.runs.kernel_zygote) started with kernel_env(): each kernel skips importing torch, SciPy, scikit-learn and
    pandas. Subprocesses (the CLI of a rehearsal) use it through $TRUSTLIB_KERNEL_ZYGOTE; a launch it declines starts the
    usual way. TRUSTLIB_TEST_ZYGOTE=0 turns it off. Its kernels' CPU time is counted in the per-item CPU CSV."""
    if os.environ.get("TRUSTLIB_TEST_ZYGOTE", "1") == "0" or not any(i.nodeid.split("::")[0].endswith(_KERNEL_MODULES) for i in request.session.items):
        yield None; return
    from trustlib.runs import kernel_zygote
    with kernel_zygote(env=kernel_env()) as z: yield z

@pytest.fixture(scope="session")
def smoke_records(tmp_path_factory) -> Path:
    "Session folder where the notebook items' smoke runs record result.json (read by the determinism check)."
    return tmp_path_factory.mktemp("smoke_records")

@pytest.fixture
def offline_env(monkeypatch):
    "Apply kernel_env() to this process (kernels started from here inherit it)."
    for k, v in kernel_env().items(): monkeypatch.setenv(k, v)
    yield

# --- Opt-in CPU accounting per test item (TRUSTLIB_TEST_CPU_CSV=path): user+sys CPU seconds of this process and of
# its reaped children (papermill kernels, subprocess CLIs, quarto, Chromium; kernels forked by the session zygote, which
# reaps them, through zygote_cpu) for setup+call+teardown of each item.
# Session fixtures are charged to the first item that uses them. Children are counted once waited for.
_CPU_CSV = os.environ.get("TRUSTLIB_TEST_CPU_CSV")

def _cpu_now():
    import resource, time
    from trustlib.runs import zygote_cpu   # kernels forked by the session's zygote are its children, not this process's
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime, c.ru_utime + c.ru_stime + zygote_cpu(), time.time()

if _CPU_CSV:
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        s0, c0, w0 = _cpu_now()
        yield
        s1, c1, w1 = _cpu_now()
        new = not Path(_CPU_CSV).exists()
        with open(_CPU_CSV, "a") as f:
            if new: f.write("nodeid,self_cpu_s,children_cpu_s,total_cpu_s,wall_s,load1\n")
            f.write(f'"{item.nodeid}",{s1-s0:.2f},{c1-c0:.2f},{s1-s0+c1-c0:.2f},{w1-w0:.1f},{os.getloadavg()[0]:.2f}\n')

    def pytest_sessionfinish(session, exitstatus):
        s, c, w = _cpu_now()
        with open(_CPU_CSV, "a") as f:
            f.write(f'"<session end: process total>",{s:.2f},{c:.2f},{s+c:.2f},,{os.getloadavg()[0]:.2f}\n')
