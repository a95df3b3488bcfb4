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

@pytest.fixture(scope="session")
def root() -> Path: return ROOT

@pytest.fixture
def offline_env(monkeypatch):
    "Apply kernel_env() to this process (kernels started from here inherit it)."
    for k, v in kernel_env().items(): monkeypatch.setenv(k, v)
    yield
