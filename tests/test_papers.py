"""Contract tests for every implemented paper module: `Config` validates before any work, and the same
parameters and seed give the same metrics (two in-process smoke runs compared value by value; timings,
named per `trustlib.results.TIMING_MARKERS`, are left out)."""
import importlib, json, math
from pathlib import Path
import pytest
from trustlib.config import PAPERS, ConfigError, BaseConfig
from trustlib.results import Result, VERDICTS, to_jsonable, deterministic_metrics

ROOT = Path(__file__).resolve().parents[1]
IMPLEMENTED = [p for p in PAPERS if (ROOT / "nbs" / p.notebook).exists()]

def _module(p):
    return importlib.import_module(p.module)

@pytest.mark.parametrize("paper", IMPLEMENTED, ids=lambda p: p.name)
def test_config_contract(paper):
    mod = _module(paper)
    assert issubclass(mod.Config, BaseConfig)
    for prof in ("smoke", "cpu", "full"): mod.Config.from_params(prof)          # every profile is valid
    with pytest.raises(ConfigError, match="unknown parameter"): mod.Config.from_params("smoke", not_a_param=1)
    with pytest.raises(ConfigError, match="'profile'"): mod.Config.from_params("laptop")
    with pytest.raises(ConfigError, match="'seed'"): mod.Config.from_params("smoke", seed=-1)
    with pytest.raises(ConfigError, match="'seed'"): mod.Config.from_params("smoke", seed="one")

@pytest.mark.parametrize("paper", IMPLEMENTED, ids=lambda p: p.name)
def test_same_seed_same_metrics(paper, offline_env):
    mod = _module(paper)
    cfg = mod.Config.from_params("smoke", seed=1)
    kw = {"progress": False} if "progress" in mod.run.__code__.co_varnames else {}
    r1, r2 = mod.run(cfg, **kw), mod.run(cfg, **kw)
    assert isinstance(r1, Result) and r1.paper == paper.name
    m1, m2 = to_jsonable(deterministic_metrics(r1.metrics)), to_jsonable(deterministic_metrics(r2.metrics))
    assert m1 == m2, {k: (m1[k], m2.get(k)) for k in m1 if m1[k] != m2.get(k)}
    assert r1.verdicts and all(v.verdict in VERDICTS for v in r1.verdicts)
    assert [v.verdict for v in r1.verdicts] == [v.verdict for v in r2.verdicts]
    json.dumps(r1.to_json())                                                     # JSON-serialisable
