"""DOR (trustlib.calibration.dor): properties beyond the notebook's examples — the parameters cell is canonical, the
synthetic stand-in creates the condition the paper's experiment needs, runs are deterministic, bad parameters and the
full profile are refused."""
from pathlib import Path
import numpy as np
import pytest
import torch
from trustlib.config import check_parameters_cell, ConfigError, ResourceUnavailable, derive_seed
from trustlib.calibration import dor

ROOT = Path(__file__).resolve().parents[1]

@pytest.fixture(scope="module")
def tower():
    torch.set_num_threads(1)
    return dor.load_tower()

def test_parameters_cell_is_canonical():
    import nbformat
    nb = nbformat.read(ROOT / "nbs" / "papers" / "calibration" / "dor.ipynb", as_version=4)
    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(cells) == 1
    assert check_parameters_cell(dor.Config, cells[0].source) == []
    assert any("Config.from_namespace(globals())" in c.source for c in nb.cells if c.cell_type == "code")
    assert dor.Config.unbounded_fields() == []

def test_stand_in_creates_the_papers_condition(tower):
    """At the cpu profile's scale (20 base / 20 new classes, 16 shots, 60 steps), on one seed: zero-shot is roughly
    calibrated, and CoOp gains base accuracy while it raises new-class confidence relative to new-class accuracy."""
    cfg = dor.Config.from_params("cpu")
    rng = np.random.default_rng(derive_seed(cfg.seed, "data", 0))
    perm = rng.permutation(len(dor.CLASS_NAMES)); base_i, new_i = perm[:20], perm[20:40]
    anchors = dor.class_anchors(tower.zero_shot(dor.CLASS_NAMES, cfg.image_template), cfg.sigma_class, rng)
    x_tr, y_tr = dor.synthetic_images(anchors[base_i], cfg.n_shots, cfg.sigma, rng)
    x_b, y_b = dor.synthetic_images(anchors[base_i], cfg.n_test, cfg.sigma, rng)
    x_n, y_n = dor.synthetic_images(anchors[new_i], cfg.n_test, cfg.sigma, rng)
    held = ["table", "river", "house", "garden", "window", "mountain", "chair", "train", "guitar", "bottle",
            "flower", "church", "bridge", "camera", "clock", "ship", "forest", "lamp", "tower", "desk"]
    pre_anchor = dor.class_anchors(tower.zero_shot(held, cfg.image_template), cfg.sigma_class, rng)
    x_p, y_p = dor.synthetic_images(pre_anchor, cfg.n_test, cfg.sigma, rng)
    tau = dor.fit_temperature(x_p, y_p, tower.zero_shot(held))
    cls, zs = tower.prompts(dor.CLASS_NAMES), tower.zero_shot(dor.CLASS_NAMES)
    base = {k: v[base_i] for k, v in cls.items()}; new = {k: v[new_i] for k, v in cls.items()}
    ones_b, ones_n = np.ones(len(y_b)), np.ones(len(y_n))
    zs_b = dor.evaluate_split(x_b, y_b, zs[base_i], tau, ones_b)
    zs_n = dor.evaluate_split(x_n, y_n, zs[new_i], tau, ones_n)
    assert 0.55 < zs_b["acc"] < 0.85 and 0.55 < zs_n["acc"] < 0.85, (zs_b["acc"], zs_n["acc"])
    assert zs_b["ece"] < 0.06 and zs_n["ece"] < 0.06, (zs_b["ece"], zs_n["ece"])
    ctx, _, _ = dor.tune_prompt(tower, x_tr, y_tr, base, zs[base_i], dor.Method("CoOp"), tau=tau, steps=cfg.steps, lr=cfg.lr, seed=1)
    with torch.no_grad(): W_b, W_n = tower.encode(ctx, base), tower.encode(ctx, new)
    co_b = dor.evaluate_split(x_b, y_b, W_b, tau, ones_b)
    co_n = dor.evaluate_split(x_n, y_n, W_n, tau, ones_n)
    assert co_b["acc"] - zs_b["acc"] > 0.05, (zs_b["acc"], co_b["acc"])                       # CoOp fits the base classes
    d_conf, d_acc = co_n["conf"] - zs_n["conf"], co_n["acc"] - zs_n["acc"]
    assert d_conf - d_acc > 0.03, (d_conf, d_acc)                                             # new: confidence up relative to accuracy
    assert co_n["ece"] > zs_n["ece"] + 0.02, (zs_n["ece"], co_n["ece"])
    assert co_n["fd"] > zs_n["fd"], (zs_n["fd"], co_n["fd"])                                  # new-class features spread apart

def test_tuning_is_deterministic(tower):
    names = ["dog", "cat", "apple", "bread"]
    p, zs = tower.prompts(names), tower.zero_shot(names)
    pool = ["car", "tree", "stone", "river", "house", "table"]
    pp, pz = tower.prompts(pool), tower.zero_shot(pool)
    idx, _ = dor.mine_outliers(pz, zs, 4)
    def once():
        rng = np.random.default_rng(5)
        x, y = dor.synthetic_images(dor.class_anchors(zs, 1.0, rng), 4, 0.1, rng)
        return dor.tune_prompt(tower, x, y, p, zs, dor.Method("DOR", dor=8.0, k=4), tau=50.0, steps=3, lr=3e-3,
                               pool=pp, pool_zs=pz, outlier_idx=idx, batch=3, seed=7)[0]
    assert torch.equal(once(), once())

def test_bad_parameters_are_refused():
    with pytest.raises(ConfigError, match="'dor_lambdas'"): dor.Config.from_params("smoke", dor_lambdas=[-2.0])
    with pytest.raises(ConfigError, match="exceeds the pool size"): dor.Config.from_params("smoke", max_pool=50, dor_ks=[100])
    with pytest.raises(ConfigError, match="exceeds the outlier pool"):
        dor.run(dor.Config.from_params("smoke", max_pool=0, dor_ks=[20000]), progress=False)

def test_full_profile_needs_clip():
    with pytest.raises(ResourceUnavailable, match="CLIP ViT-B/16"):
        dor.run(dor.Config.from_params("full"), progress=False)
