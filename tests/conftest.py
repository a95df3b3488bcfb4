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

def pytest_configure(config):
    config.addinivalue_line("markers", "requires_sns_bench: needs SNS-Bench's licensed JSON files "
                            "(skipped with the reason when they are not found; TRUSTLIB_REQUIRE_SNS_BENCH=1 makes that a failure)")

def pytest_runtest_setup(item):
    if item.get_closest_marker("requires_sns_bench"): _skip_without_sns_bench()

@pytest.fixture
def requires_sns_bench() -> Path:
    "The SNS-Bench folder; skips the test (with where it looked and how to provide the data) when it is absent."
    _skip_without_sns_bench()
    import trustlib.data as td
    return td.sns_bench_dir()

@pytest.fixture(scope="session")
def root() -> Path: return ROOT

@pytest.fixture
def offline_env(monkeypatch):
    "Apply kernel_env() to this process (kernels started from here inherit it)."
    for k, v in kernel_env().items(): monkeypatch.setenv(k, v)
    yield
