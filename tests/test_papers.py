"""Contract tests for every implemented paper module: `Config` validates before any work, and the same
parameters and seed give the same metrics.

Determinism costs one smoke run per paper, not two: the notebook item (tests/test_notebooks.py) already ran the
paper's smoke profile in a fresh Jupyter kernel (PYTHONHASHSEED=0) and recorded its Result; here `run(cfg)` is
called once more, in this pytest process (another process, another hash seed, other modules already imported
and RNGs already used), and every deterministic metric (timings, named per `trustlib.results.TIMING_MARKERS`, are
left out) and every verdict must be equal. That catches unseeded or global RNGs, set/dict-order dependence,
state carried over from earlier code in the process and time-dependent logic — more than two back-to-back
in-process runs did. Every figure must also come out byte for byte as the notebook recorded it, except those that
plot measured times (`TIMING_FIGURES`). When the notebook item did not run in this session (e.g. `-k same_seed`),
the notebook is executed here first."""
import importlib, json
from pathlib import Path
import pytest
from trustlib.config import PAPERS, ConfigError, BaseConfig
from trustlib.results import Result, VERDICTS, to_jsonable, deterministic_metrics, figure_png
from conftest import execute_smoke, smoke_record_dir

ROOT = Path(__file__).resolve().parents[1]
IMPLEMENTED = [p for p in PAPERS if (ROOT / "nbs" / p.notebook).exists()]
TIMING_FIGURES = {"robust_sketches": {"throughput"}, "label_smoothing": {"benchmark"}}   # bars of measured CPU time

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
def test_same_seed_same_metrics(paper, offline_env, smoke_records, tmp_path):
    rec = smoke_record_dir(smoke_records, paper.notebook) / "result.json"
    if not rec.parent.exists(): execute_smoke(paper.notebook, tmp_path, smoke_records)   # its notebook item did not run
    elif not rec.exists(): pytest.fail(f"the notebook item of {paper.notebook} ran but recorded no result (it failed?)", pytrace=False)
    assert rec.exists(), f"the smoke run of {paper.notebook} did not record a result (no `record(result)` cell?)"
    saved = json.loads(rec.read_text())
    mod = _module(paper)
    cfg = mod.Config.from_params("smoke")                    # what the notebook's parameters cell gives for profile smoke
    assert to_jsonable(cfg) == saved["config"], "the notebook's smoke config differs from Config.from_params('smoke')"
    kw = {"progress": False} if "progress" in mod.run.__code__.co_varnames else {}
    r = mod.run(cfg, **kw)
    assert isinstance(r, Result) and r.paper == paper.name == saved["paper"]
    if hasattr(mod, "CLAIMS"):                   # run() measures; the one grader grades the claims table
        assert not r.verdicts, f"{paper.name}: run() returned verdicts; it must return measurements only"
        r.grade(mod.CLAIMS)
        assert saved.get("claims_hash") == r.claims_hash, "the notebook's run was not graded with the module's CLAIMS"
        assert [v.id for v in r.verdicts] == [c.id for c in mod.CLAIMS]
    m1 = to_jsonable(deterministic_metrics(r.metrics))
    m0 = deterministic_metrics(saved["metrics"])
    assert m0, "the recorded result has no deterministic metrics to compare"
    assert m1 == m0, {k: (m0.get(k), m1.get(k)) for k in set(m0) | set(m1) if m0.get(k) != m1.get(k)}
    assert r.verdicts and all(v.verdict in VERDICTS for v in r.verdicts)
    assert [v.verdict for v in r.verdicts] == [v["verdict"] for v in saved["verdicts"]]
    figs = rec.parent / "figures"
    assert sorted(p.stem for p in figs.glob("*.png")) == sorted(r.figures), "the recorded figures differ from run()'s"
    moved = [n for n, f in r.figures.items() if n not in TIMING_FIGURES.get(paper.name, ()) and figure_png(f) != (figs / f"{n}.png").read_bytes()]
    assert not moved, f"figures differ between two runs with the same seed (an unseeded random draw?): {moved}"
    json.dumps(r.to_json())                                                      # JSON-serialisable
