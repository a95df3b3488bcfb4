"""Property tests of trustlib.interp.sae_probing beyond the notebook's examples: the cross-validation rule, the
regime samplers, the quiver selection, planted-feature probes and determinism (no MiniLM needed)."""
import math
import numpy as np
import pandas as pd
import pytest
from trustlib.interp import sae_probing as sp


def _labels(n, pos, seed=0):
    y = np.array([1] * pos + [0] * (n - pos))
    return np.random.default_rng(seed).permutation(y)


@pytest.mark.parametrize("n,pos", [(4, 2), (7, 3), (10, 5), (12, 2)])
def test_leave_two_out_small_n(n, pos):
    y = _labels(n, pos)
    s = sp.cv_splits(y, np.random.default_rng(0))
    # every mixed pair whose complement still has both classes, and nothing else
    expect = sum(1 for i in range(n) for j in range(i + 1, n) if y[i] != y[j]
                 and len(set(np.delete(y, [i, j]).tolist())) == 2)
    assert len(s) == expect
    for tr, va in s:
        assert len(va) == 2 and set(y[va].tolist()) == {0, 1} and set(y[tr].tolist()) == {0, 1}
        assert len(tr) == n - 2 and not set(tr.tolist()) & set(va.tolist())


@pytest.mark.parametrize("n,pos", [(13, 6), (64, 32), (100, 20), (127, 60)])
def test_six_fold_mid_n(n, pos):
    y = _labels(n, pos)
    s = sp.cv_splits(y, np.random.default_rng(1))
    assert len(s) == 6
    allva = np.concatenate([va for _, va in s])
    assert sorted(allva.tolist()) == list(range(n))                     # a partition
    for tr, va in s:
        assert abs(int(y[va].sum()) - pos / 6) <= 1                    # stratified


@pytest.mark.parametrize("n,pos", [(128, 64), (300, 30), (499, 250), (5000, 2500)])
def test_single_holdout_large_n(n, pos):
    y = _labels(n, pos)
    s = sp.cv_splits(y, np.random.default_rng(2))
    assert len(s) == 1
    tr, va = s[0]
    assert len(va) == min(math.ceil(0.2 * n), 100) and len(tr) + len(va) == n
    assert abs(int(y[va].sum()) - pos / n * len(va)) <= 1


@pytest.mark.parametrize("n", [2, 4, 16, 64, 256])
def test_balanced_sampler_exact(n):
    y = _labels(700, 300)
    i = sp.sample_balanced(y, n, np.random.default_rng(n))
    assert len(i) == n and int(y[i].sum()) == n // 2 and len(set(i.tolist())) == n


@pytest.mark.parametrize("frac", [0.05, 0.2, 0.5, 0.8, 0.95])
@pytest.mark.parametrize("n_max", [64, 1024])
def test_imbalance_sampler_exact_ratio(frac, n_max):
    y = _labels(900, 400)
    i = sp.sample_imbalanced(y, frac, n_max, np.random.default_rng(0))
    n = len(i)
    assert int(y[i].sum()) == int(round(frac * n)) and len(set(i.tolist())) == n
    # the largest such set: one more example would need more of a class than the pool has, or exceed n_max
    n1 = n + 1
    assert n == n_max or int(round(frac * n1)) > 400 or n1 - int(round(frac * n1)) > 500


@pytest.mark.parametrize("frac", [0.0, 0.1, 0.25, 0.4, 0.5])
def test_label_noise_exact_and_test_untouched(frac):
    y = _labels(300, 150); orig = y.copy()
    tr = np.arange(200)
    yn = y.copy(); yn[tr] = sp.flip_labels(y[tr], frac, np.random.default_rng(1))
    assert int((yn[tr] != y[tr]).sum()) == int(round(frac * 200))
    assert np.array_equal(yn[200:], orig[200:]) and np.array_equal(y, orig)


def _table(seed, n_ds=8, methods=("logreg", "pca", "knn", "sae_k16", "sae_k128")):
    g = np.random.default_rng(seed)
    return pd.DataFrame([dict(dataset=f"d{d}", method=m, val_auc=float(g.random()), test_auc=float(g.random()))
                         for d in range(n_ds) for m in methods])


@pytest.mark.parametrize("seed", range(5))
def test_quiver_is_the_max_validation_choice(seed):
    t = _table(seed)
    allowed = ["logreg", "pca", "knn", "sae_k16", "sae_k128"]
    m, share, best = sp.quiver(t, allowed)
    ref = t.loc[t.groupby("dataset").val_auc.idxmax()]
    assert m == pytest.approx(ref.test_auc.mean()) and share == pytest.approx(ref.method.str.startswith("sae").mean())
    # row order does not matter
    assert sp.quiver(t.sample(frac=1, random_state=seed), allowed)[0] == pytest.approx(m)
    # a method whose validation AUC never wins changes nothing
    worse = t[t.method == "logreg"].assign(method="mlp", val_auc=-1.0, test_auc=1.0)
    assert sp.quiver(pd.concat([t, worse]), allowed + ["mlp"])[0] == pytest.approx(m)


@pytest.mark.parametrize("method", ["logreg", "pca", "knn"])
def test_planted_separable_feature_auc_one(method):
    g = np.random.default_rng(0)
    X = g.standard_normal((500, 64)).astype(np.float32)
    y = (g.random(500) < 0.5).astype(int)
    X[:, 5] = np.where(y == 1, 3.0, -3.0) + 0.3 * g.standard_normal(500)
    p = sp.fit_probe(method, X[:400], y[:400], rng=np.random.default_rng(1))
    assert sp._auc(y[400:], p.decision_function(X[400:])) > 0.99
    assert p.val_auc > 0.97


def test_sae_probe_keeps_the_planted_latent_and_is_deterministic():
    g = np.random.default_rng(3)
    Z = np.abs(g.standard_normal((300, 200))) * (g.random((300, 200)) < 0.1)
    y = (g.random(300) < 0.3).astype(int)
    Z[:, 123] = 1.5 * y
    a = sp.fit_probe("sae_k4", Z[:200], y[:200], rng=np.random.default_rng(7))
    b = sp.fit_probe("sae_k4", Z[:200], y[:200], rng=np.random.default_rng(7))
    assert a.cols[0] == 123 and len(a.cols) == 4
    assert sp._auc(y[200:], a.decision_function(Z[200:])) == pytest.approx(1.0)
    assert a.val_auc == b.val_auc and a.params == b.params
    assert np.array_equal(a.decision_function(Z[200:]), b.decision_function(Z[200:]))


def test_config_rejects_bad_values():
    from trustlib.config import ConfigError
    for kw in (dict(regime_baselines=["svm"]), dict(imbalance_fracs=[1.0]), dict(sae_k=5000), dict(datasets=[])):
        with pytest.raises(ConfigError):
            sp.Config.from_params("smoke", **kw)
    with pytest.raises(Exception, match="full profile"):
        sp.run(sp.Config.from_params("full", allow_large=True), progress=False)
