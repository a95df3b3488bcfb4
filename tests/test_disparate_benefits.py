"""Disparate benefits: the conditions the claims need hold on the published (cpu) configuration, the redrawn composites
cannot be read through a fixed view, the mechanism analysis pools only the graded variants, and oversized runs are refused."""
import numpy as np
import pandas as pd
import pytest
from trustlib.config import ConfigError
from trustlib.results import mean_ci, grade
import trustlib.fairness.disparate_benefits as db


def test_cpu_graded_configuration_meets_its_conditions():
    """On the published configuration's largest noise level (the configuration the per-seed claims read), computed exactly as
    `run` computes it: group 1 is the more diverse group (ΔDIV interval above 0) and both post-processing constraints bind
    in at least 80 % of seeds. Runs the cpu configuration's training for that level (about 20 s of CPU)."""
    cfg = db.Config.from_params("cpu")
    level = max(cfg.noise_levels)
    ddiv, binds, binds_m = [], [], []
    for s in range(cfg.n_seeds):
        train, val, test = db.point_data(cfg, "noise", level, s)
        Pt, Pv = db.point_probs(cfg, "noise", level, s, train, val, test)
        div = db.diversity(test.y, test.a, Pt)
        ddiv.append(0.5 * sum(div[(y, 1)] - div[(y, 0)] for y in (0, 1)))
        H = pd.DataFrame(db.hpp_table((val.y, val.a), (test.y, test.a), Pv, Pt, cfg.tolerance))
        H = H[H.constraint == "demographic_parity"].set_index("setting")
        binds.append(H.loc["ensemble + HPP @ τ", "binds"]); binds_m.append(H.loc["ensemble + HPP @ member tolerance", "binds"])
    m = {"ddiv": ddiv, "hpp/binds_frac": float(np.mean(binds)), "hppm/binds_frac": float(np.mean(binds_m))}
    assert mean_ci(ddiv).lo > 0, mean_ci(ddiv)
    for c in db.CLAIMS:
        for cond in c.requires: assert cond.evaluate(m).verdict == "reproduced", (c.id, cond.text(), cond.evaluate(m).note)


def test_redrawn_split_has_no_fixed_view():
    "A concat split whose partners are redrawn on every access cannot be passed to a model as one fixed input matrix."
    train, val, test = db.digits_task("concat", 0.0, seed=0)
    with pytest.raises(ValueError, match="no fixed inputs X"): test.X
    assert test.n_features == 128 and test.partners is not None
    fixed = db.digits_task("concat", 0.0, seed=0, redraw=False)[2]
    assert fixed.partners is None and fixed.X.shape == (len(fixed.y), 128)


def test_mechanism_pools_only_graded_variants():
    "Rows of the concat variant (and of the Adult control) do not enter the mechanism's partial correlation or the graded configuration."
    rng = np.random.default_rng(0)
    rows = []
    for v, levels in (("noise", (0.1, 0.5, 0.9)), ("concat", (0.0,)), ("adult", (0.0,))):
        for l in levels:
            for s in range(8):
                d = rng.normal() * 0.01 + (l if v == "noise" else 5.0)
                rows.append(dict(variant=v, level=l, seed=s, ddiv_mean=d, rate_move_asym=rng.normal(), member_error_gap=rng.normal()))
    P = pd.DataFrame(rows)
    assert db.graded_configuration(P) == ("noise", 0.9)                          # concat's (huge) ΔDIV is not a candidate
    assert db._mechanism(P) == db._mechanism(P[P.variant == "noise"])
    assert db._mechanism(P)["mech/n_configs"] == 3
    assert db.graded_configuration(P[P.variant != "noise"]) is None


def test_footprint_refused_before_work():
    with pytest.raises(ConfigError, match="GiB"):
        db.Config.from_params("smoke", n_members=1000, test_copies=500, variants=["noise", "concat"])
    with pytest.raises(ConfigError, match="cpu profile's training work"): db.Config.from_params("cpu", epochs=5000)
    assert db.Config.from_params("cpu", epochs=5000, allow_large=True).epochs == 5000
    assert db.Config.from_params("smoke", n_members=1000, test_copies=500, allow_large=True).n_members == 1000
    with pytest.raises(ConfigError, match="'variants'"): db.Config.from_params("smoke", variants=["mixup"])
    for prof in ("smoke", "cpu", "full"): db.Config.from_params(prof)


def test_old_rules_regraded():
    """The defects of the old rules: a positive mean Δacc without significance is no longer 'partially', and a gap that
    shrinks significantly is against the headline claim even when another grows."""
    acc = next(c for c in db.CLAIMS if c.id == "accuracy")
    g = lambda c, m: grade([c.__class__(c.id, c.claim, c.paper, c.rule, c.requires, headline=True)], m)[0].verdict
    m = {"ensemble/acc": [0.80, 0.81, 0.79, 0.805, 0.795], "member/acc": [0.80, 0.80, 0.80, 0.80, 0.80]}   # Δacc +0.0005, p ≈ 0.9
    assert g(acc, m) == "inconclusive"
    gaps = next(c for c in db.CLAIMS if c.id == "gaps_grow")
    base = [0.10] * 6
    m = {"ddiv": [0.5, 0.6, 0.55, 0.52, 0.58, 0.6], "member/abs_spd": base, "member/abs_eod": base, "member/aod": base,
         "ensemble/abs_spd": [0.12, 0.125, 0.118, 0.122, 0.121, 0.119], "ensemble/abs_eod": [0.08, 0.082, 0.079, 0.081, 0.078, 0.08],
         "ensemble/aod": base}
    assert g(gaps, m) == "not_reproduced"                                           # was 'partially' (one grows, one shrinks)
    assert g(gaps, {**m, "ensemble/abs_eod": base}) == "reproduced"
    assert g(gaps, {**m, "ensemble/abs_eod": base, "ddiv": [0.01, -0.01, 0.02, -0.02, 0.0, 0.01]}) == "inconclusive"   # no diversity gap
