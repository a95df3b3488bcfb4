"""Disparate benefits: the conditions the claims need hold on the published (cpu) configuration, the redrawn composites
cannot be read through a fixed view, the mechanism analysis pools only the graded variants, and oversized runs are refused."""
import functools, json, re
from pathlib import Path
import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from trustlib.config import ConfigError
from trustlib.results import mean_ci, grade
import trustlib.fairness.disparate_benefits as db


@functools.lru_cache(maxsize=1)
def _graded_cpu_seeds():
    "The cpu configuration's largest noise level (the configuration the per-seed claims read), every seed: (val, test, Pv, Pt, hpp table)."
    cfg = db.Config.from_params("cpu")
    level = max(cfg.noise_levels)
    out = []
    for s in range(cfg.n_seeds):
        train, val, test = db.point_data(cfg, "noise", level, s)
        Pt, Pv = db.point_probs(cfg, "noise", level, s, train, val, test)
        out.append((val, test, Pv, Pt, pd.DataFrame(db.hpp_table((val.y, val.a), (test.y, test.a), Pv, Pt, cfg.tolerance))))
    return out


def test_cpu_graded_configuration_meets_its_conditions():
    """On the published configuration's largest noise level (the configuration the per-seed claims read), computed exactly as
    `run` computes it: group 1 is the more diverse group (ΔDIV interval above 0) and both post-processing constraints bind
    in at least 80 % of seeds. Runs the cpu configuration's training for that level (about 20 s of CPU)."""
    ddiv, binds, binds_m = [], [], []
    for val, test, Pv, Pt, H in _graded_cpu_seeds():
        div = db.diversity(test.y, test.a, Pt)
        ddiv.append(0.5 * sum(div[(y, 1)] - div[(y, 0)] for y in (0, 1)))
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


def _published_hpp_table() -> dict:
    "The page's stored post-processing table of the graded configuration: (constraint, setting) -> (acc, unfairness, binds) means."
    nb = json.loads((Path(__file__).resolve().parents[1] / "nbs/papers/fairness/disparate_benefits.ipynb").read_text(encoding="utf-8"))
    src = lambda c: "".join(c["source"])
    text = next("".join(o["data"]["text/plain"]) for c in nb["cells"] if c["cell_type"] == "code" and "result.tables['hpp_mean']" in src(c)
                for o in c.get("outputs", []) if "text/plain" in o.get("data", {}))
    out, constraint = {}, None
    for line in text.splitlines():
        m = re.match(r"^(\S+)?\s+((?:average member|ensemble|member)[^0-9]*?)\s+([-0-9.]+)\s+([-0-9.]+|NaN)\s+([-0-9.]+)\s+([-0-9.]+|NaN)\s+([-0-9.]+|NaN)", line)
        if not m: continue
        constraint = m.group(1) or constraint
        out[(constraint, m.group(2).strip())] = tuple(float(m.group(i)) for i in (3, 5, 7))
    return out


def test_two_group_post_processing_matches_the_published_page():
    """The any-number-of-groups RelaxedThresholdOptimizer gives the paper's two-group numbers: the post-processing table of the
    graded configuration, recomputed now, matches the one stored on the published page (means over seeds, 4 decimals). The page
    was computed on another CPU model, whose floating-point kernels round differently: the members' rows (no post-processing)
    agree within 0.001, the post-processed rows within 0.01 (their thresholds are chosen on validation scores that moved in the
    4th digit, e.g. 0.0259 vs 0.0312), and whether a constraint binds may change in one of the 10 seeds. The exact parity of the
    post-processing with fairlearn's is tested below."""
    pub = _published_hpp_table()
    assert len(pub) == 15, pub
    H = pd.concat([h for *_, h in _graded_cpu_seeds()])
    now = H.groupby(["constraint", "setting"], sort=False)[["acc", "unfairness", "binds"]].mean().round(4)
    for (c, setting), (acc, unf, binds) in pub.items():
        r = now.loc[(c, setting)]
        tol = 0.01 if "HPP" in setting else 0.001
        assert abs(r.acc - acc) <= tol and abs(r.unfairness - unf) <= tol, (c, setting, (r.acc, r.unfairness), (acc, unf))
        assert np.isnan(binds) and np.isnan(r.binds) or abs(r.binds - binds) <= 0.1 + 1e-9, (c, setting, r.binds, binds)


# --- RelaxedThresholdOptimizer with any number of groups, against fairlearn ---------------------------------------

class _Identity(ClassifierMixin, BaseEstimator):
    "A prefit 'model' whose P(y=1) is column 0 of X (for fairlearn's ThresholdOptimizer)."
    def fit(self, X, y): self.classes_ = np.array([0, 1]); return self
    def predict_proba(self, X): X = np.asarray(X); return np.stack([1 - X[:, 0], X[:, 0]], 1)
    def predict(self, X): return (np.asarray(X)[:, 0] >= 0.5).astype(int)


def _groups_data(n=4000, k=4, seed=0):
    "Scores, labels and k groups with different base rates and score shifts."
    rng = np.random.default_rng(seed)
    g = rng.integers(0, k, n); y = (rng.random(n) < 0.3 + 0.4 * g / max(k - 1, 1)).astype(int)
    s = 1 / (1 + np.exp(-(2.0 * (2 * y - 1) + rng.normal(0, 1.5, n) + 0.4 * (g - k / 2))))
    return s, y, g


def _rates(p, y, g, kind):
    m = {"pr": np.ones_like(y, bool), "tpr": y == 1, "fpr": y == 0}[kind]
    return np.array([p[m & (g == v)].mean() for v in np.unique(g)])


def _fairlearn(s, y, g, constraint, tol):
    from fairlearn.postprocessing import ThresholdOptimizer
    fl = ThresholdOptimizer(estimator=_Identity().fit(s[:, None], y), constraints=constraint, prefit=True, predict_method="predict_proba",
                            tol=tol or None).fit(s[:, None], y, sensitive_features=g)
    p = fl._pmf_predict(s[:, None], sensitive_features=g)[:, 1]
    return p, float(np.mean(np.where(y == 1, p, 1 - p)))


@pytest.mark.parametrize("k", [3, 5])
@pytest.mark.parametrize("constraint,tol", [("demographic_parity", 0.0), ("demographic_parity", 0.03), ("true_positive_rate_parity", 0.0),
                                            ("true_positive_rate_parity", 0.05), ("equalized_odds", 0.0)])
def test_rto_many_groups_against_fairlearn(k, constraint, tol):
    """k groups: the LP meets the same constraint fairlearn's ThresholdOptimizer(tol=) meets (max − min of the constrained rates
    <= tol; at tol = 0 equal rates, for equalized odds equal TPRs and equal FPRs), with an expected accuracy at least fairlearn's
    (fairlearn optimises over a grid of 1,000 rates, the LP exactly) and within 3e-3 of it."""
    s, y, g = _groups_data(k=k, seed=k)
    p_fl, acc_fl = _fairlearn(s, y, g, constraint, tol)
    h = db.RelaxedThresholdOptimizer(constraint, tol).fit(s, y, sensitive_features=g)
    q = h.pmf_predict(s, sensitive_features=g)[:, 1]
    assert h.feasible_ and h.val_gap_ <= tol + 1e-7 and len(h.thresholds_) == k
    assert abs(float(np.mean(np.where(y == 1, q, 1 - q))) - h.val_accuracy_) < 1e-9
    assert acc_fl <= h.val_accuracy_ + 1e-6 and h.val_accuracy_ - acc_fl < 3e-3, (h.val_accuracy_, acc_fl)
    kinds = {"demographic_parity": ["pr"], "true_positive_rate_parity": ["tpr"], "equalized_odds": ["tpr", "fpr"]}[constraint]
    for kind in kinds:
        assert np.ptp(_rates(q, y, g, kind)) <= tol + 1e-6, (kind, _rates(q, y, g, kind))
        assert np.ptp(_rates(p_fl, y, g, kind)) <= tol + 2e-3, (kind, _rates(p_fl, y, g, kind))   # fairlearn: up to its grid step
    if constraint != "equalized_odds":   # the reported gap is max − min of the constrained rate, as fairlearn's tol reads it
        assert abs(h.val_gap_ - np.ptp(_rates(q, y, g, kinds[0]))) < 1e-7


def test_rto_equalized_odds_many_groups_relaxed():
    "With more than two groups and tol > 0, equalized odds bounds the largest pairwise AOD = ½|ΔTPR| + ½|ΔFPR| (fairlearn has no relaxed version)."
    s, y, g = _groups_data(k=4, seed=2)
    for tol in (0.02, 0.1):
        h = db.RelaxedThresholdOptimizer("equalized_odds", tol).fit(s, y, sensitive_features=g)
        q = h.pmf_predict(s, sensitive_features=g)[:, 1]
        t, f = _rates(q, y, g, "tpr"), _rates(q, y, g, "fpr")
        aod = max(0.5 * abs(t[i] - t[j]) + 0.5 * abs(f[i] - f[j]) for i in range(4) for j in range(i))
        assert aod <= tol + 1e-6 and abs(aod - h.val_gap_) < 1e-7 and h.binds_


def test_rto_sensitive_features_forms():
    """A list, array, (n, 1) array, Series and one-column DataFrame give the same fit; a DataFrame of several columns (or an (n, k)
    array) makes each row's combination of values its group, as fairlearn and trustlib.metrics.group_labels do; errors name the shape."""
    s, y, g = _groups_data(n=2000, k=3, seed=1)
    lab = np.array(["a", "b", "c"])[g]
    ref = db.RelaxedThresholdOptimizer(tolerance=0.02).fit(s, y, sensitive_features=lab)
    for form in (list(lab), lab[:, None], pd.Series(lab, index=np.arange(len(lab))[::-1]), pd.DataFrame({"g": lab})):
        h = db.RelaxedThresholdOptimizer(tolerance=0.02).fit(s, y, sensitive_features=form)
        assert h.thresholds_ == ref.thresholds_
        np.testing.assert_array_equal(h.predict(s, sensitive_features=form), ref.predict(s, sensitive_features=lab))
    two = pd.DataFrame({"sex": np.where(g == 0, "F", "M"), "age": np.where(g == 2, "old", "young")})
    h = db.RelaxedThresholdOptimizer(tolerance=0.02).fit(s, y, sensitive_features=two)
    assert list(h.thresholds_) == ["F,young", "M,old", "M,young"]
    assert list(h.thresholds_) == list(db.RelaxedThresholdOptimizer(tolerance=0.02).fit(s, y, sensitive_features=two.to_numpy()).thresholds_)
    with pytest.raises(ValueError, match=r"one entry per prediction \(2000\), got shape \(1999, 1\)"):
        db.RelaxedThresholdOptimizer().fit(s, y, sensitive_features=lab[:-1, None])
    with pytest.raises(ValueError, match=r"got shape \(1999, 2\)"):
        db.RelaxedThresholdOptimizer().fit(s, y, sensitive_features=two.iloc[:-1])
    with pytest.raises(ValueError, match="not seen in fit"): h.predict(s, sensitive_features=two.assign(age="middle"))
    with pytest.raises(TypeError, match="sensitive_features"): h.predict(s)


# --- the full profile: the FairFace path ---------------------------------------------------------------------------

def test_full_profile_without_fairface_stops_before_work(monkeypatch, tmp_path):
    "Without the FairFace images the full profile stops with the data registry's instructions (where to put the files), before any training."
    from trustlib.data import DataUnavailable
    monkeypatch.setenv("TRUSTLIB_DATA", str(tmp_path))
    monkeypatch.setattr(db, "train_resnet_member", lambda *a, **k: pytest.fail("trained without data"))
    cfg = db.Config.from_params("full")
    assert (cfg.dataset, cfg.n_members, cfg.n_seeds, cfg.epochs, cfg.lr, cfg.batch_size, cfg.tolerance) == ("fairface", 10, 5, 100, 0.05, 128, 0.05)
    with pytest.raises(DataUnavailable, match="github.com/joojs/fairface"): db.run(cfg, progress=False)
    with pytest.raises(ConfigError, match="must differ from the target"): db.Config.from_params("full", fairface_target="gender")


def test_fairface_path_resumes_from_its_cache(monkeypatch, tmp_path):
    """On the FairFace stand-in (the real layout: train/ and val/ JPEG folders and the two label CSVs), the full path trains its
    members, caches their probabilities, and a second run reads every member from the cache (no training) and gives the same
    measurements; ImageNet weights that are not in the torch hub cache are refused before any training when asked for."""
    import trustlib.rehearse as RH
    from trustlib.config import ResourceUnavailable
    data = RH.build_standins(tmp_path/"standins", models=[], data=["fairface"])/"data"
    monkeypatch.setenv("TRUSTLIB_DATA", str(data)); monkeypatch.setenv("TRUSTLIB_FAIRFACE_CACHE", str(tmp_path/"cache"))
    monkeypatch.setenv("TORCH_HOME", str(tmp_path/"torch"))
    cfg = db.Config.from_params("smoke", dataset="fairface", n_members=2, n_seeds=1, epochs=1, image_size=16, batch_size=128, device="cpu")
    first = db.run_fairface(cfg, progress=False).metrics
    assert first["fairface/members_from_cache"] == 0 and first["fairface/n_test"] == 70 and len(first["fairface/member_val_acc"]) == 2
    assert len(list((tmp_path/"cache").glob("members_*/seed0_member*.npz"))) == 2 and list((tmp_path/"cache").glob("pixels_*.npy"))
    monkeypatch.setattr(db, "train_resnet_member", lambda *a, **k: pytest.fail("a cached member was trained again"))
    again = db.run_fairface(cfg, progress=False).metrics
    assert again["fairface/members_from_cache"] == 2
    for k in ("member/acc", "ensemble/acc", "ensemble/abs_spd", "hpp/ens_acc", "mit/fm_acc", "ddiv_y0", "fairface/member_val_acc"):
        assert again[k] == first[k], k
    with pytest.raises(ResourceUnavailable, match="not in the torch hub cache"): db.run_fairface(cfg.replace(init="imagenet"), progress=False)
