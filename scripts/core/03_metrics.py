# %% [markdown]
# # metrics — calibration and group-fairness metrics
#
# > Pure-function metrics shared by the papers: accuracy, NLL, Brier, ECE/MCE/ACE/RMS-CE, PIECE, reliability diagrams, and per-group fairness rates.

# %% [markdown]
# Conventions: `probs` is either a 1-d array of positive-class probabilities (binary tasks) or an `N×C`
# matrix of class probabilities; labels are integers. Calibration metrics are *top-label* (confidence =
# largest probability, correct = argmax equals the label), as in Guo et al. (2017) and torchmetrics.
# `ece` on 1-d probabilities is top-label too (confidence max(p, 1 − p)); `binary_ece` is torchmetrics'
# `binary_calibration_error` (bins over the positive-class probability) — the two differ on the same input.
# The protected attribute is `sensitive_features=`, keyword-only, in any form fairlearn takes (any number of
# groups, Series/DataFrame). `demographic_parity_difference` and `equalized_odds_difference` are fairlearn's
# (largest minus smallest rate over the groups); the *signed* differences (privileged minus the other group,
# the disparate-benefits paper's convention) need exactly two groups. The tests cross-check all of them against
# fairlearn and the calibration errors against torchmetrics.

# %%
#| default_exp metrics

# %%
#| export
from __future__ import annotations
import numpy as np

# %%
#| hide
from fastcore.test import test_eq, test_fail, test_close


# %% [markdown]
# ## Input checks

# %%
#| export
def as_prob_matrix(probs) -> np.ndarray:
    "`probs` as an `N×C` float64 matrix (a 1-d array is read as P(y=1) of a binary task); validated."
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim == 1: p = np.stack([1 - p, p], axis=1)
    if p.ndim != 2 or p.shape[0] == 0: raise ValueError(f"probs must be a non-empty 1-d or 2-d array, got shape {np.shape(probs)}")
    if not np.all(np.isfinite(p)): raise ValueError("probs contains NaN or inf")
    if p.min() < -1e-6 or p.max() > 1 + 1e-6: raise ValueError("probs must lie in [0, 1]")
    if not np.allclose(p.sum(1), 1, atol=1e-4): raise ValueError("rows of probs must sum to 1")
    return np.clip(p, 0, 1)

def _labels(y, n:int, n_classes:int|None=None) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1 or len(y) != n: raise ValueError(f"labels must be 1-d with {n} entries, got shape {y.shape}")
    if not np.issubdtype(y.dtype, np.integer):
        if not np.all(np.equal(np.mod(y, 1), 0)): raise ValueError("labels must be integers")
        y = y.astype(np.int64)
    if n_classes is not None and (y.min() < 0 or y.max() >= n_classes): raise ValueError(f"labels must lie in 0..{n_classes-1}")
    return y


# %%
test_close(as_prob_matrix([0.2, 0.9]), np.array([[0.8, 0.2], [0.1, 0.9]]))
test_fail(lambda: as_prob_matrix([[0.5, 0.6]]), contains="sum to 1")
test_fail(lambda: as_prob_matrix([np.nan]), contains="NaN")
test_fail(lambda: _labels([0, 1], 3), contains="3 entries")


# %% [markdown]
# The protected attribute is passed as fairlearn does, keyword-only: `fit(X, y, *, sensitive_features=...)`,
# `predict(X, *, sensitive_features=...)`. `check_sensitive_features` is the one check every estimator and
# metric of the papers runs on it: present, and one entry per row of `X`. A paper whose groups take another
# form (for example a list of boolean masks or index arrays) passes a `convert` function that builds the
# `(n, ...)` array; its errors are reported as a mismatch with the rows of `X`.

# %%
#| export
def check_sensitive_features(sensitive_features, # the protected attribute: one entry per row of X (1-d), or what `convert` reads
                             n:int, # number of rows of X
                             *, name:str="sensitive_features", # the argument's name, used in the messages
                             method:str|None=None, # the calling method (`"fit"`, `"predict"`): a missing attribute names the call to make
                             convert=None, # `convert(sensitive_features, n) -> array` of `n` rows; None: `np.asarray`, which must be 1-d
                             form:str="one entry per row of X", # what the attribute must look like, for the missing-attribute message
                             ) -> np.ndarray:
    "`sensitive_features` as an array with `n` rows; `TypeError` if it is missing, `ValueError` if it does not match the rows of X."
    if sensitive_features is None:
        call = f"{method}(X, ..., {name}=...)" if method else f"{name}=..."
        raise TypeError(f"{method + '() ' if method else ''}needs the protected attribute: pass {call} with {form}")
    if convert is None:
        a = np.asarray(sensitive_features)
        if a.ndim != 1: raise ValueError(f"{name} does not match the {n} rows of X: expected a 1-d array, got shape {a.shape}")
    else:
        try: a = np.asarray(convert(sensitive_features, n))
        except (ValueError, IndexError) as e: raise type(e)(f"{name} does not match the {n} rows of X: {e}") from None
    if a.ndim == 0 or len(a) != n: raise ValueError(f"{name} does not match the {n} rows of X: it has {len(a) if a.ndim else 'no'} entries")
    return a


# %%
a = np.array([0, 1, 1, 0])
test_eq(check_sensitive_features(a, 4), a)
test_eq(check_sensitive_features([1, 0], 2, method="fit").tolist(), [1, 0])
test_fail(lambda: check_sensitive_features(None, 4, method="fit"), contains="fit(X, ..., sensitive_features=...)")
test_fail(lambda: check_sensitive_features(a[:3], 4), contains="does not match the 4 rows of X: it has 3 entries")
test_fail(lambda: check_sensitive_features(a[:, None], 4), contains="expected a 1-d array")
test_fail(lambda: check_sensitive_features(7, 4), contains="1-d")
masks = lambda g, n: np.stack([np.isin(np.arange(n), ix) for ix in g], axis=1)   # index arrays -> (n, k) boolean matrix
test_eq(check_sensitive_features([[0, 2], [1]], 3, convert=masks).shape, (3, 2))
test_fail(lambda: check_sensitive_features(np.ones((5, 2)), 4, convert=lambda g, n: g), contains="it has 5 entries")
def strict(g, n): raise ValueError("mask 0 has 3 rows, expected 4")
test_fail(lambda: check_sensitive_features([[True] * 3], 4, convert=strict), contains="does not match the 4 rows of X: mask 0 has 3 rows")
check_sensitive_features([0, 1, 1], 3, method="predict")


# %% [markdown]
# ## Accuracy, NLL, Brier

# %%
#| export
def accuracy(y_true, probs_or_pred) -> float:
    "Fraction correct; accepts hard predictions (1-d ints) or probabilities."
    x = np.asarray(probs_or_pred)
    pred = x.argmax(1) if x.ndim == 2 else (x if np.issubdtype(x.dtype, np.integer) else (x >= 0.5).astype(int))
    y = _labels(y_true, len(pred))
    return float(np.mean(pred == y))

def nll(y_true, probs, eps:float=1e-12) -> float:
    "Mean negative log-likelihood (natural log) of the true labels."
    p = as_prob_matrix(probs); y = _labels(y_true, len(p), p.shape[1])
    return float(-np.mean(np.log(np.clip(p[np.arange(len(y)), y], eps, 1))))

def brier(y_true, probs) -> float:
    "Multi-class Brier score: mean over samples of the squared distance to the one-hot label (binary: 2× the usual 1-d score)."
    p = as_prob_matrix(probs); y = _labels(y_true, len(p), p.shape[1])
    onehot = np.eye(p.shape[1])[y]
    return float(np.mean(np.sum((p - onehot) ** 2, axis=1)))


# %%
from sklearn.metrics import log_loss, brier_score_loss

# %%
y = np.array([0, 1, 1, 0]); p = np.array([0.1, 0.8, 0.4, 0.3])
test_eq(accuracy(y, p), 0.75)
test_eq(accuracy(y, np.array([0, 1, 0, 0])), 0.75)
test_close(nll(y, p), log_loss(y, p))
test_close(brier(y, p), 2 * brier_score_loss(y, p))


# %% [markdown]
# ## Calibration: ECE, MCE, RMS-CE (equal-width bins) and ACE (equal-mass bins)
#
# With bins $B_b$ over the confidence $\hat p_i = \max_c p_{ic}$,
# $\mathrm{ECE} = \sum_b \frac{|B_b|}{N}\,|\mathrm{acc}(B_b) - \mathrm{conf}(B_b)|$,
# $\mathrm{MCE} = \max_b |\mathrm{acc}(B_b) - \mathrm{conf}(B_b)|$,
# $\mathrm{RMS} = \sqrt{\sum_b \frac{|B_b|}{N}(\mathrm{acc}(B_b) - \mathrm{conf}(B_b))^2}$.
# Equal-width bins are `[0, 1/n), [1/n, 2/n), …, [(n-1)/n, 1]` (torchmetrics' rule). ACE uses `n_bins`
# bins holding (nearly) equal numbers of samples.

# %%
#| export
def calibration_bins(y_true, probs, n_bins:int=15, strategy:str="uniform"):
    "Per-bin table (pandas): lower/upper edge, count, mean confidence, accuracy, |gap|; empty bins dropped."
    import pandas as pd
    if not isinstance(n_bins, (int, np.integer)) or n_bins < 1: raise ValueError(f"n_bins must be a positive int, got {n_bins!r}")
    p = as_prob_matrix(probs); y = _labels(y_true, len(p), p.shape[1])
    conf = p.max(1); correct = (p.argmax(1) == y).astype(float)
    if strategy == "uniform":
        edges = np.linspace(0, 1, n_bins + 1)
        idx = np.clip(np.searchsorted(edges, conf, side='right') - 1, 0, n_bins - 1)
        lo, hi = edges[:-1], edges[1:]
    elif strategy == "quantile":
        order = np.argsort(conf, kind='stable'); idx = np.empty(len(conf), dtype=int)
        for b, chunk in enumerate(np.array_split(order, n_bins)): idx[chunk] = b
        lo = np.array([conf[idx == b].min() if np.any(idx == b) else np.nan for b in range(n_bins)])
        hi = np.array([conf[idx == b].max() if np.any(idx == b) else np.nan for b in range(n_bins)])
    else: raise ValueError(f"strategy must be 'uniform' or 'quantile', got {strategy!r}")
    count = np.bincount(idx, minlength=n_bins)
    s_conf = np.bincount(idx, conf, minlength=n_bins); s_acc = np.bincount(idx, correct, minlength=n_bins)
    nz = count > 0
    df = pd.DataFrame(dict(lower=lo[nz], upper=hi[nz], count=count[nz], confidence=s_conf[nz] / count[nz], accuracy=s_acc[nz] / count[nz]))
    df['gap'] = (df.accuracy - df.confidence).abs()
    return df

def ece(y_true, probs, n_bins:int=15) -> float:
    "Expected calibration error, equal-width bins (top-label)."
    b = calibration_bins(y_true, probs, n_bins); return float(np.sum(b['count'] * b.gap) / b['count'].sum())

def mce(y_true, probs, n_bins:int=15) -> float:
    "Maximum calibration error over non-empty equal-width bins."
    return float(calibration_bins(y_true, probs, n_bins).gap.max())

def rms_ce(y_true, probs, n_bins:int=15) -> float:
    "Root-mean-square calibration error (the l2 version of ECE), equal-width bins."
    b = calibration_bins(y_true, probs, n_bins); return float(np.sqrt(np.sum(b['count'] * b.gap ** 2) / b['count'].sum()))

def ace(y_true, probs, n_bins:int=15) -> float:
    "Adaptive calibration error: ECE with equal-mass (quantile) bins."
    b = calibration_bins(y_true, probs, n_bins, strategy="quantile"); return float(np.sum(b['count'] * b.gap) / b['count'].sum())

def binary_ece(y_true, p, n_bins:int=15, norm:str="l1") -> float:
    """Calibration error of the *positive-class* probability `p` (1-d), torchmetrics' `binary_calibration_error`:
    bins over p, each bin's mean p against its fraction of positives. `ece(y, p)` on the same input is top-label
    (confidence max(p, 1 − p), correct = the rounded prediction is right) and differs in general."""
    if not isinstance(n_bins, (int, np.integer)) or n_bins < 1: raise ValueError(f"n_bins must be a positive int, got {n_bins!r}")
    if norm not in ("l1", "l2", "max"): raise ValueError(f"norm must be 'l1', 'l2' or 'max', got {norm!r}")
    p = np.asarray(p, dtype=float)
    if p.ndim != 1: raise ValueError(f"p must be 1-d positive-class probabilities, got shape {p.shape}")
    if np.any((p < 0) | (p > 1)) or not np.all(np.isfinite(p)): raise ValueError("p must be probabilities in [0, 1]")
    y = _labels(y_true, len(p), 2).astype(float)
    edges = np.linspace(0, 1, n_bins + 1)
    idx = np.clip(np.searchsorted(edges, p, side='right') - 1, 0, n_bins - 1)
    count = np.bincount(idx, minlength=n_bins); nz = count > 0
    gap = np.abs(np.bincount(idx, y, minlength=n_bins)[nz] - np.bincount(idx, p, minlength=n_bins)[nz]) / count[nz]
    w = count[nz] / count.sum()
    return float(gap.max() if norm == "max" else np.sqrt(np.sum(w * gap ** 2)) if norm == "l2" else np.sum(w * gap))


# %% [markdown]
# A hand-computed example with two bins: confidences 0.6, 0.7 (bin `[0.5, 1]`, one correct) and
# 0.2 → top-label confidence 0.8 (correct). Bin `[0.5,1]` holds all three: mean confidence 0.7, accuracy 2/3.

# %%
p = np.array([0.6, 0.7, 0.2]); y = np.array([1, 0, 0])
test_close(ece(y, p, n_bins=2), abs(2/3 - 0.7))
test_close(mce(y, p, n_bins=2), abs(2/3 - 0.7))
perfect = np.array([1.0, 0.0, 1.0]); test_eq(ece([1, 0, 1], perfect), 0.0)
test_fail(lambda: ece(y, p, n_bins=0), contains="positive int")

# %% [markdown]
# Cross-check against torchmetrics on random multi-class and binary data:

# %%
import torch
from torchmetrics.functional.classification import multiclass_calibration_error

# %%
from torchmetrics.functional.classification import binary_calibration_error

# %%
rng = np.random.default_rng(0)
for C in (2, 5):
    logits = rng.normal(size=(2000, C)) * 2; pr = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    yy = rng.integers(0, C, 2000)
    for norm, fn in (('l1', ece), ('max', mce), ('l2', rms_ce)):
        ref = multiclass_calibration_error(torch.tensor(pr), torch.tensor(yy), num_classes=C, n_bins=10, norm=norm).item()
        test_close(fn(yy, pr, n_bins=10), ref, eps=1e-5)
test_close(ace(yy, pr, n_bins=10), ece(yy, pr, n_bins=10), eps=0.05)  # close on large random data, not equal
# binary ECE over the positive-class probability is torchmetrics' binary definition, not the top-label one
pb = rng.uniform(size=3000); yb = (rng.uniform(size=3000) < pb ** 1.5).astype(int)   # miscalibrated on purpose
for norm in ('l1', 'l2', 'max'):
    test_close(binary_ece(yb, pb, n_bins=10, norm=norm), binary_calibration_error(torch.tensor(pb), torch.tensor(yb), n_bins=10, norm=norm).item(), eps=1e-5)
assert abs(ece(yb, pb, n_bins=10) - binary_ece(yb, pb, n_bins=10)) > 0.01          # the two definitions differ on the same input
test_close(binary_ece([1, 0, 1, 0], [0.9, 0.1, 0.6, 0.4], n_bins=2), 0.5 * abs(0.75 - 1) + 0.5 * abs(0.25 - 0))   # by hand: bins [0, .5), [.5, 1]
test_fail(lambda: binary_ece([1, 0], [[0.2, 0.8], [0.6, 0.4]]), contains="1-d"); test_fail(lambda: binary_ece([1, 0], [1.2, 0.1]), contains="[0, 1]")
calibration_bins(yy, pr, n_bins=10).round(3).head()


# %%
#| export
def reliability_diagram(y_true, probs, n_bins:int=10, ax=None, label:str|None=None, strategy:str="uniform"):
    "Plot accuracy vs confidence per bin (with the diagonal) and return the bin table."
    import matplotlib.pyplot as plt
    b = calibration_bins(y_true, probs, n_bins, strategy)
    if ax is None: _, ax = plt.subplots(figsize=(4, 4))
    ax.plot([0, 1], [0, 1], ls='--', c='grey', lw=1)
    e = ece(y_true, probs, n_bins)
    ax.plot(b.confidence, b.accuracy, marker='o', label=f"{label or 'model'} (ECE {e:.3f})")
    ax.set_xlabel('confidence (mean top-label probability in bin)'); ax.set_ylabel('accuracy in bin')
    ax.set_xlim(0, 1); ax.set_ylim(0, 1); ax.legend(loc='upper left', fontsize=8)
    return b


# %%
import matplotlib.pyplot as plt

# %%
fig, ax = plt.subplots(figsize=(4, 4))
_ = reliability_diagram(yy, pr, ax=ax, label='random'); plt.show()


# %% [markdown]
# ## Proximity-informed calibration: PIECE
#
# Xiong et al. (NeurIPS 2023) observe that models are more overconfident on inputs that lie far from the
# training data (low *proximity*) and that ECE hides this: over- and underconfident regions cancel inside a
# confidence bin. **PIECE** bins jointly by confidence (equal-width, as ECE) and by proximity (equal-mass), so
# $\mathrm{PIECE} = \sum_{b,q} \frac{|B_{bq}|}{N}\,|\mathrm{acc}(B_{bq}) - \mathrm{conf}(B_{bq})|$.
# Proximity is $\exp(-\bar d_k)$, with $\bar d_k$ the mean Euclidean distance of a sample's features to its $k$
# nearest neighbours in a reference set (the training features; $k = 10$ by default). Because the joint bins
# refine the confidence bins, PIECE ≥ ECE (triangle inequality), with equality for one proximity bin.

# %%
#| export
def knn_proximity(features, # [N, d] features of the samples to score
                  reference, # [M, d] reference features (e.g. the training set)
                  k:int=10, # number of nearest neighbours
                  exclude_self:bool=False, # drop the nearest neighbour (use when `features` is `reference`)
                  ) -> np.ndarray:
    "Proximity exp(−mean Euclidean distance to the `k` nearest reference points), one value in (0, 1] per sample."
    from sklearn.neighbors import NearestNeighbors
    X = np.asarray(features, dtype=np.float64); R = np.asarray(reference, dtype=np.float64)
    if X.ndim != 2 or R.ndim != 2 or X.shape[1] != R.shape[1]: raise ValueError(f"features and reference must be 2-d with the same width, got {X.shape} and {R.shape}")
    if not isinstance(k, (int, np.integer)) or k < 1: raise ValueError(f"k must be a positive int, got {k!r}")
    kk = k + int(exclude_self)
    if kk > len(R): raise ValueError(f"k = {k} needs at least {kk} reference points, got {len(R)}")
    d, _ = NearestNeighbors(n_neighbors=kk).fit(R).kneighbors(X)
    return np.exp(-d[:, int(exclude_self):].mean(1))

def piece(y_true, probs, proximity, # one proximity value per sample (e.g. from `knn_proximity`)
          n_bins:int=15, # equal-width confidence bins
          n_proximity_bins:int=5, # equal-mass proximity bins
          ) -> float:
    "Proximity-informed ECE: ECE over joint (confidence, proximity) bins (top-label)."
    p = as_prob_matrix(probs); y = _labels(y_true, len(p), p.shape[1])
    prox = np.asarray(proximity, dtype=np.float64)
    if prox.shape != (len(p),): raise ValueError(f"proximity must have one value per sample ({len(p)}), got shape {prox.shape}")
    if not isinstance(n_proximity_bins, (int, np.integer)) or n_proximity_bins < 1: raise ValueError(f"n_proximity_bins must be a positive int, got {n_proximity_bins!r}")
    order = np.argsort(prox, kind='stable'); q = np.empty(len(p), dtype=int)
    for b, chunk in enumerate(np.array_split(order, n_proximity_bins)): q[chunk] = b
    total = 0.0
    for b in range(n_proximity_bins):
        m = q == b
        if m.any(): total += m.sum() * ece(y[m], p[m], n_bins)
    return float(total / len(p))


# %% [markdown]
# A crafted case that ECE cannot see: every confidence is 0.7, but the 50 samples near the training data are
# right 90 % of the time and the 50 far ones 50 % of the time. Overall accuracy is 0.7, so ECE is 0 while
# PIECE is 0.2. With one proximity bin PIECE is ECE; on random data it is never below it.

# %%
yc = np.array([1] * 45 + [0] * 5 + [1] * 25 + [0] * 25); pc = np.tile([0.3, 0.7], (100, 1))
proxc = np.r_[np.full(50, 0.9), np.full(50, 0.1)]
test_close(ece(yc, pc), 0.0, eps=1e-12)
test_close(piece(yc, pc, proxc, n_proximity_bins=2), 0.2)
test_close(piece(yy, pr, rng.random(len(yy)), n_bins=10, n_proximity_bins=1), ece(yy, pr, n_bins=10))
for s in range(3):
    prox_r = np.random.default_rng(s).random(len(yy))
    assert piece(yy, pr, prox_r, n_bins=10) >= ece(yy, pr, n_bins=10) - 1e-12
ref = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
test_close(knn_proximity([[0.0, 0.0]], ref, k=2), np.exp(-0.5))                      # distances 0 and 1
test_close(knn_proximity(ref, ref, k=1, exclude_self=True), np.exp(-np.array([1.0, 1.0, 2.0])))
test_fail(lambda: knn_proximity(ref, ref, k=3, exclude_self=True), contains="at least 4 reference points")
test_fail(lambda: piece(yc, pc, proxc[:10]), contains="one value per sample")


# %% [markdown]
# ## Group fairness
#
# `group_rates` gives the per-group table (size, selection rate, TPR, FPR, accuracy), in the spirit of
# fairlearn's `MetricFrame`; the protected attribute is `sensitive_features=` (keyword-only), any number of groups.
# Two-group differences are signed **privileged − other** (privileged = 1 for 0/1 labels, or `privileged=`):
#
# - statistical parity difference $\mathrm{SPD} = P(\hat Y=1\mid A=1) - P(\hat Y=1\mid A=0)$;
# - equal opportunity difference $\mathrm{EOD} = \mathrm{TPR}_1 - \mathrm{TPR}_0$;
# - average odds difference $\mathrm{AOD} = \tfrac12|\mathrm{TPR}_1-\mathrm{TPR}_0| + \tfrac12|\mathrm{FPR}_1-\mathrm{FPR}_0|$ (absolute).
#
# Over any number of groups, as fairlearn defines them (absolute, largest minus smallest):
#
# - demographic parity difference $\max_a P(\hat Y=1\mid A=a) - \min_a P(\hat Y=1\mid A=a)$;
# - equalized odds difference: the larger of the TPR range and the FPR range over the groups.
#
# A rate that is undefined in a group (no positives for TPR, no negatives for FPR) is NaN.

# %%
#| export
def _binary(name, v, n=None):
    v = np.asarray(v)
    if v.ndim == 2 and v.shape[1] == 1: v = v[:, 0]
    if v.ndim != 1 or (n is not None and len(v) != n): raise ValueError(f"{name} must be 1-d" + (f" with {n} entries" if n else "") + f", got shape {v.shape}")
    if not np.isin(v, (0, 1)).all(): raise ValueError(f"{name} must be binary (0/1), got values {np.unique(v)[:5].tolist()}")
    return v.astype(np.int64)

def _safe_mean(x): return float(np.mean(x)) if len(x) else float('nan')

def group_labels(sensitive_features, n:int) -> np.ndarray:
    """One group label per row from what fairlearn accepts: a list, array, (n, 1) array, Series or DataFrame
    (several columns, or an (n, k) array: each row's combination of values is its group, as in fairlearn)."""
    if sensitive_features is None: raise TypeError("pass sensitive_features=... (keyword-only, as in fairlearn): one group label per row")
    s = sensitive_features
    if hasattr(s, "to_numpy"): s = s.to_numpy()       # Series, DataFrame
    a = np.asarray(s)
    if a.ndim == 2 and a.shape[1] == 1: a = a[:, 0]
    elif a.ndim == 2: a = np.array([",".join(map(str, r)) for r in a])
    if a.ndim != 1 or len(a) != n:
        raise ValueError(f"sensitive_features must have one entry per prediction ({n}), got shape {np.shape(sensitive_features)}")
    return a

def group_rates(y_true, y_pred, *, sensitive_features):
    "Per-group table: n, selection rate, TPR, FPR, accuracy (binary y and predictions; any number of groups, any labels)."
    import pandas as pd
    yp = _binary('y_pred', y_pred); y = _binary('y_true', y_true, len(yp)); g = group_labels(sensitive_features, len(yp))
    rows = {}
    for a in np.unique(g):
        m = g == a
        rows[a] = dict(n=int(m.sum()), selection_rate=_safe_mean(yp[m]), tpr=_safe_mean(yp[m & (y == 1)]),
                       fpr=_safe_mean(yp[m & (y == 0)]), accuracy=_safe_mean(yp[m] == y[m]))
    df = pd.DataFrame.from_dict(rows, orient='index'); df.index.name = 'group'
    return df

def _pair(y_true, y_pred, sensitive_features, privileged):
    "The group table of exactly two groups and the (privileged, other) labels."
    r = group_rates(y_true, y_pred, sensitive_features=sensitive_features)
    if len(r) != 2: raise ValueError(f"a signed difference needs exactly two groups, got {len(r)} ({list(r.index)[:5]}); "
                                     "use demographic_parity_difference / equalized_odds_difference for any number of groups")
    if privileged is None:
        if set(r.index.tolist()) != {0, 1}: raise ValueError(f"groups are {list(r.index)}: say which is privileged with privileged=")
        privileged = 1
    if privileged not in r.index: raise ValueError(f"privileged={privileged!r} is not one of the groups {list(r.index)}")
    return r, privileged, next(g for g in r.index if g != privileged)

def statistical_parity_difference(y_pred, *, sensitive_features, privileged=None) -> float:
    "SPD = P(ŷ=1 | privileged) − P(ŷ=1 | other), signed; two groups (privileged: 1 when the labels are 0/1)."
    r, p, o = _pair(y_pred, y_pred, sensitive_features, privileged)
    return float(r.loc[p, 'selection_rate'] - r.loc[o, 'selection_rate'])

def equal_opportunity_difference(y_true, y_pred, *, sensitive_features, privileged=None) -> float:
    "EOD = TPR(privileged) − TPR(other), signed; two groups."
    r, p, o = _pair(y_true, y_pred, sensitive_features, privileged)
    return float(r.loc[p, 'tpr'] - r.loc[o, 'tpr'])

def average_odds_difference(y_true, y_pred, *, sensitive_features) -> float:
    "AOD = ½|ΔTPR| + ½|ΔFPR| (absolute); two groups."
    r = group_rates(y_true, y_pred, sensitive_features=sensitive_features)
    if len(r) != 2: raise ValueError(f"average_odds_difference needs exactly two groups, got {len(r)}; use equalized_odds_difference for any number")
    p, o = r.index
    return float(0.5 * abs(r.loc[p, 'tpr'] - r.loc[o, 'tpr']) + 0.5 * abs(r.loc[p, 'fpr'] - r.loc[o, 'fpr']))

def demographic_parity_difference(y_true, y_pred, *, sensitive_features) -> float:
    "Largest minus smallest selection rate over the groups (fairlearn's `demographic_parity_difference`, any number of groups)."
    r = group_rates(y_true, y_pred, sensitive_features=sensitive_features)
    return float(r.selection_rate.max() - r.selection_rate.min())

def equalized_odds_difference(y_true, y_pred, *, sensitive_features) -> float:
    "max(range of TPR, range of FPR) over the groups (fairlearn's `equalized_odds_difference`, any number of groups)."
    r = group_rates(y_true, y_pred, sensitive_features=sensitive_features)
    return float(max(r.tpr.max() - r.tpr.min(), r.fpr.max() - r.fpr.min()))

def fairness_report(y_true, y_pred, *, sensitive_features, privileged=None) -> dict[str, float]:
    "Accuracy and the group differences in one dict (signed ones need two groups)."
    kw = dict(sensitive_features=sensitive_features)
    return dict(accuracy=accuracy(y_true, np.asarray(y_pred).astype(int)), spd=statistical_parity_difference(y_pred, **kw, privileged=privileged),
                eod=equal_opportunity_difference(y_true, y_pred, **kw, privileged=privileged), aod=average_odds_difference(y_true, y_pred, **kw),
                eq_odds=equalized_odds_difference(y_true, y_pred, **kw), dp_diff=demographic_parity_difference(y_true, y_pred, **kw))


# %% [markdown]
# A hand-built 8-sample example. Group 1: predictions 1,1,1,0 for labels 1,1,0,0 → PR 0.75, TPR 1, FPR 0.5.
# Group 0: predictions 1,0,0,0 for labels 1,1,0,0 → PR 0.25, TPR 0.5, FPR 0.

# %%
y  = np.array([1, 1, 0, 0, 1, 1, 0, 0]); yp = np.array([1, 1, 1, 0, 1, 0, 0, 0]); a = np.array([1, 1, 1, 1, 0, 0, 0, 0])
test_close(statistical_parity_difference(yp, sensitive_features=a), 0.5)
test_close(equal_opportunity_difference(y, yp, sensitive_features=a), 0.5)
test_close(average_odds_difference(y, yp, sensitive_features=a), 0.5)
test_close(equalized_odds_difference(y, yp, sensitive_features=a), 0.5)
test_close(statistical_parity_difference(yp, sensitive_features=1 - a), -0.5)   # signed: swapping the privileged group flips it
test_close(statistical_parity_difference(yp, sensitive_features=np.where(a, 'm', 'f'), privileged='f'), -0.5)   # any labels, named privileged group
test_fail(lambda: statistical_parity_difference(yp, sensitive_features=np.where(a, 'm', 'f')), contains="privileged=")
test_fail(lambda: statistical_parity_difference(yp, sensitive_features=np.ones(8, int)), contains="exactly two groups")
test_fail(lambda: statistical_parity_difference(yp, sensitive_features=a[:4]), contains="one entry per prediction (8)")
test_fail(lambda: statistical_parity_difference(y, yp), contains="positional")          # (y, ŷ) by mistake: refused, never a silent number
test_fail(lambda: group_rates(y, yp * 2, sensitive_features=a), contains="binary")
test_fail(lambda: group_rates(y, yp), contains="sensitive_features")
group_rates(y, yp, sensitive_features=a)

# %% [markdown]
# Cross-check against fairlearn on random data — two groups, four groups, pandas input (a Series, an (n, 1)
# DataFrame, and a two-column DataFrame whose column combinations are the groups):

# %%
from fairlearn.metrics import demographic_parity_difference as fl_dp, equalized_odds_difference as fl_eqodds, MetricFrame
from fairlearn.metrics import true_positive_rate, false_positive_rate, selection_rate
import pandas as pd

# %%
rng = np.random.default_rng(1)
for k in (2, 2, 4, 4, 7):
    y = rng.integers(0, 2, 500); yp = (rng.uniform(size=500) < 0.3 + 0.1 * y).astype(int); a = rng.integers(0, k, 500)
    for sf in (a, pd.Series(a, name='g'), pd.DataFrame({'g': a}), a.reshape(-1, 1)):
        test_close(demographic_parity_difference(y, yp, sensitive_features=sf), fl_dp(y, yp, sensitive_features=sf))
        test_close(equalized_odds_difference(y, yp, sensitive_features=sf), fl_eqodds(y, yp, sensitive_features=sf))
    mf = MetricFrame(metrics=dict(tpr=true_positive_rate, fpr=false_positive_rate, sr=selection_rate), y_true=y, y_pred=yp, sensitive_features=a)
    r = group_rates(y, yp, sensitive_features=a)
    test_close(r.tpr.values, mf.by_group['tpr'].values); test_close(r.fpr.values, mf.by_group['fpr'].values)
    test_close(r.selection_rate.values, mf.by_group['sr'].values)
    if k == 2:
        test_close(abs(statistical_parity_difference(yp, sensitive_features=a)), fl_dp(y, yp, sensitive_features=a))
        test_close(abs(equal_opportunity_difference(y, yp, sensitive_features=a)), abs(mf.by_group['tpr'][1] - mf.by_group['tpr'][0]))
two = pd.DataFrame({'sex': rng.integers(0, 2, 500), 'race': rng.choice(['a', 'b', 'c'], 500)})
test_close(demographic_parity_difference(y, yp, sensitive_features=two), fl_dp(y, yp, sensitive_features=two))
test_close(equalized_odds_difference(y, yp, sensitive_features=two), fl_eqodds(y, yp, sensitive_features=two))
test_eq(len(group_rates(y, yp, sensitive_features=two)), 6)
fairness_report(y, yp, sensitive_features=rng.integers(0, 2, 500))


# %% [markdown]
# ## Ranking: the area under the ROC curve
#
# `binary_auc` is the area under the ROC curve of `scores` for binary labels: the probability that a random
# positive scores above a random negative, ties counted as one half. It computes it as scikit-learn's
# `roc_auc_score` does (the trapezoid rule over the curve's corner points, collinear points dropped), so the two
# agree to the last bit, but without scikit-learn's per-call input validation: probing experiments score tens of
# thousands of small validation folds, where that validation costs more than the ranking. The positive class is 1
# (or `True`).

# %%
#| export
def binary_auc(y_true, scores) -> float:
    "ROC AUC of `scores` for binary labels `y_true` (0/1 or bool), bit-identical to scikit-learn's `roc_auc_score`; ValueError with one class."
    y, s = np.asarray(y_true), np.asarray(scores, dtype=float)
    if y.ndim != 1 or s.ndim != 1 or len(y) != len(s): raise ValueError(f"y_true and scores must be 1-d of the same length, got shapes {y.shape} and {s.shape}")
    if not np.all(np.isfinite(s)): raise ValueError("scores must be finite")
    if not np.isin(y, (0, 1)).all(): raise ValueError("y_true must hold binary labels 0/1 (or bool)")
    n1 = int(np.count_nonzero(y))
    if n1 == 0 or n1 == len(y): raise ValueError("the AUC needs both classes in y_true")
    order = np.argsort(-s, kind="stable"); s = s[order]                       # descending scores
    thr = np.r_[np.flatnonzero(np.diff(s)), len(s) - 1]                        # the last row of every distinct score
    tps = np.cumsum(y[order].astype(np.float64))[thr]; fps = 1 + thr.astype(np.float64) - tps
    if len(fps) > 2:                                                           # drop collinear corner points
        keep = np.flatnonzero(np.r_[True, np.logical_or(np.diff(fps, 2), np.diff(tps, 2)), True]); fps, tps = fps[keep], tps[keep]
    fpr, tpr = np.r_[0.0, fps] / fps[-1], np.r_[0.0, tps] / tps[-1]
    return float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2.0))


# %% [markdown]
# By hand: scores (0.1, 0.4, 0.35, 0.8) for labels (0, 0, 1, 1): of the four positive–negative pairs, three are
# ordered right, so 0.75; a tie between a positive and a negative counts one half. Then against scikit-learn on
# random data with and without ties, float32 scores and labels as bool (bit for bit), and against the
# Mann–Whitney U statistic computed from mid-ranks (to rounding):

# %%
from sklearn.metrics import roc_auc_score
from scipy.stats import mannwhitneyu

# %%
test_eq(binary_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]), 0.75)
test_eq(binary_auc([0, 1], [0.5, 0.5]), 0.5)
test_eq(binary_auc([1, 0, 0], [3.0, 3.0, 1.0]), 0.75)
rng = np.random.default_rng(2)
for n in (2, 7, 50, 1000):
    y = rng.integers(0, 2, n); y[:2] = (0, 1)
    for s in (rng.normal(size=n), rng.normal(size=n).astype(np.float32), rng.integers(0, 4, n).astype(float), np.zeros(n)):
        test_eq(binary_auc(y, s), roc_auc_score(y, s)); test_eq(binary_auc(y.astype(bool), s), roc_auc_score(y, s))
        test_close(binary_auc(y, s), mannwhitneyu(s[y == 1], s[y == 0]).statistic / (y.sum() * (n - y.sum())), eps=1e-12)
test_fail(lambda: binary_auc([1, 1, 1], [0.1, 0.2, 0.3]), contains="both classes")
test_fail(lambda: binary_auc([0, 2], [0.1, 0.2]), contains="binary labels")
test_fail(lambda: binary_auc([0, 1], [0.1, np.nan]), contains="finite")
test_fail(lambda: binary_auc([0, 1], [0.1, 0.2, 0.3]), contains="same length")
