# %% [markdown]
# # cluster metrics — flat and hierarchical clustering quality
#
# > Leaf-level (NMI, ARI, Hungarian ACC, purity) and tree-level (dendrogram purity, leaf purity) clustering metrics.

# %% [markdown]
# Metrics shared by the clustering papers. The flat ones wrap scikit-learn and scipy. The tree-level ones
# work on a **cluster tree**: a scipy linkage matrix `Z` whose `n = len(Z) + 1` leaves are flat clusters,
# plus the leaf (flat cluster) of every data point. That is the setting of hierarchical clustering on top
# of a flat model (L2H, TreeVAE, DeepECT): two points in the same leaf have that leaf as their lowest common
# ancestor.
#
# - **Dendrogram purity** (Heller & Ghahramani 2005; Kobren et al. 2017): over all pairs of points with
#   the same class, the purity (w.r.t. that class) of the points under the pair's lowest common ancestor,
#   averaged. Computed here in time linear in the size of the tree (times the number of classes), never
#   over point pairs; `dendrogram_purity_bruteforce` is the literal pairwise definition, for tests.
# - **Leaf purity** (as in TreeVAE): the fraction of points that carry the majority class of their leaf.

# %%
#| default_exp clustering.metrics

# %%
#| export
from __future__ import annotations
import numpy as np

# %%
#| hide
from fastcore.test import test_eq, test_close, test_fail


# %% [markdown]
# ## Input checks and the count matrix
#
# Everything below starts from the count matrix `n[c, y]` = number of points in leaf `c` with class `y`.
# Labels may be any hashable values (ints, strings); leaves must be integers in `[0, n_leaves)`.

# %%
#| export
def _labels_1d(x, name:str) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 1: raise ValueError(f"{name} must be a 1-D array of labels, got shape {x.shape}")
    if x.size == 0: raise ValueError(f"{name} is empty")
    if x.dtype.kind == 'f' and not np.isfinite(x).all(): raise ValueError(f"{name} contains NaN or inf")
    return x

def _pair(y_true, y_pred, names=("y_true", "y_pred")):
    a, b = _labels_1d(y_true, names[0]), _labels_1d(y_pred, names[1])
    if len(a) != len(b): raise ValueError(f"{names[0]} and {names[1]} differ in length: {len(a)} vs {len(b)}")
    return a, b

def count_matrix(leaves, # leaf (flat cluster) index of every point, ints in [0, n_leaves)
                 y_true, # class label of every point (any hashable values)
                 n_leaves:int|None=None, # number of leaves (default: max(leaves) + 1); empty leaves get zero rows
                 ) -> tuple[np.ndarray, np.ndarray]:
    "Count matrix `n[c, k]` (leaves x classes, int64) and the sorted class values."
    leaves, y_true = _pair(leaves, y_true, ("leaves", "y_true"))
    if leaves.dtype.kind not in 'iu':
        if leaves.dtype.kind == 'f' and np.all(leaves == np.round(leaves)): leaves = leaves.astype(np.int64)
        else: raise ValueError(f"leaves must be integer leaf indices, got dtype {leaves.dtype}")
    if leaves.min() < 0: raise ValueError("leaves must be >= 0")
    n_leaves = int(leaves.max()) + 1 if n_leaves is None else int(n_leaves)
    if leaves.max() >= n_leaves: raise ValueError(f"leaf index {int(leaves.max())} is out of range for {n_leaves} leaves")
    classes, yi = np.unique(y_true, return_inverse=True)
    n = np.bincount(leaves.astype(np.int64) * len(classes) + yi, minlength=n_leaves * len(classes))
    return n.reshape(n_leaves, len(classes)).astype(np.int64), classes


# %%
n, cls = count_matrix([0, 0, 1, 2, 2, 2], ['a', 'b', 'a', 'b', 'b', 'a'], n_leaves=4)
test_eq(n, np.array([[1, 1], [1, 0], [1, 2], [0, 0]]))
test_eq(list(cls), ['a', 'b'])
test_fail(lambda: count_matrix([0, 1], [0]), contains="differ in length")
test_fail(lambda: count_matrix([0, -1], [0, 1]), contains=">= 0")
test_fail(lambda: count_matrix([0, 5], [0, 1], n_leaves=3), contains="out of range")


# %% [markdown]
# ## Leaf-level metrics
#
# NMI and ARI come from scikit-learn. ACC is the accuracy after the best one-to-one matching of clusters to
# classes (Hungarian algorithm, `scipy.optimize.linear_sum_assignment`); when there are more clusters than
# classes, the unmatched clusters count as errors. Purity maps every cluster to its majority class (many
# clusters may map to one class), so purity >= ACC.

# %%
#| export
def nmi(y_true, y_pred) -> float:
    "Normalized mutual information (scikit-learn, arithmetic normalisation)."
    from sklearn.metrics import normalized_mutual_info_score
    return float(normalized_mutual_info_score(*_pair(y_true, y_pred)))

def ari(y_true, y_pred) -> float:
    "Adjusted Rand index (scikit-learn)."
    from sklearn.metrics import adjusted_rand_score
    return float(adjusted_rand_score(*_pair(y_true, y_pred)))

def cluster_acc(y_true, y_pred) -> float:
    "Accuracy under the best one-to-one matching of predicted clusters to classes (Hungarian)."
    from scipy.optimize import linear_sum_assignment
    y_true, y_pred = _pair(y_true, y_pred)
    _, ci = np.unique(y_pred, return_inverse=True)
    n, _ = count_matrix(ci, y_true)
    rows, cols = linear_sum_assignment(n, maximize=True)
    return float(n[rows, cols].sum() / len(y_true))

def purity(y_true, y_pred) -> float:
    "Fraction of points whose class is the majority class of their cluster."
    y_true, y_pred = _pair(y_true, y_pred)
    _, ci = np.unique(y_pred, return_inverse=True)
    n, _ = count_matrix(ci, y_true)
    return float(n.max(1).sum() / len(y_true))

def leaf_metrics(y_true, y_pred) -> dict[str, float]:
    "NMI, ARI, ACC (Hungarian) and purity of a flat clustering."
    return dict(nmi=nmi(y_true, y_pred), ari=ari(y_true, y_pred), acc=cluster_acc(y_true, y_pred), purity=purity(y_true, y_pred))


# %%
y = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])
test_eq(leaf_metrics(y, (y + 1) % 3), dict(nmi=1.0, ari=1.0, acc=1.0, purity=1.0))   # a relabelling is perfect
p = np.array([0, 0, 1, 1, 1, 1, 2, 2, 2])
test_close(cluster_acc(y, p), 8/9)
test_close(purity(y, p), 8/9)
test_close(cluster_acc(y, np.zeros(9, int)), 3/9)          # one cluster: matched to one class
test_close(purity(y, np.arange(9)), 1.0)                   # singletons are pure, but ACC is not
test_close(cluster_acc(y, np.arange(9)), 3/9)
test_fail(lambda: nmi(y, p[:5]), contains="differ in length")

# %% [markdown]
# Hungarian ACC cross-checked against brute force over all permutations on a small random example:

# %%
from itertools import permutations

# %%
_rng = np.random.default_rng(0)
for _ in range(20):
    yt, yp = _rng.integers(0, 4, 30), _rng.integers(0, 4, 30)
    best = max(np.mean(np.array(perm)[yp] == yt) for perm in permutations(range(4)))
    test_close(cluster_acc(yt, yp), best)


# %% [markdown]
# ## Cluster trees as scipy linkage matrices
#
# A linkage matrix `Z` has `n - 1` rows `[id_a, id_b, height, n_leaves]`; row `i` creates node `n + i`.
# `check_linkage` validates it (scipy's `is_valid_linkage`, and that column 3 counts original leaves) and
# returns it as float64. `linkage_children` gives the two children of every internal node as int arrays.

# %%
#| export
def check_linkage(Z) -> np.ndarray:
    "`Z` as a float64 array, after checking that it is a valid scipy linkage matrix with correct leaf counts."
    from scipy.cluster.hierarchy import is_valid_linkage
    Z = np.asarray(Z, dtype=np.float64)
    if Z.ndim != 2 or Z.shape[1] != 4 or Z.shape[0] < 1:
        raise ValueError(f"a linkage matrix must have shape (n - 1, 4) with n >= 2 leaves, got shape {Z.shape}")
    try: is_valid_linkage(Z, throw=True, name='Z')
    except (ValueError, TypeError) as e: raise ValueError(f"invalid linkage matrix: {e}") from None
    n = Z.shape[0] + 1
    size = np.ones(2 * n - 1, dtype=np.int64)
    a, b = Z[:, 0].astype(np.int64), Z[:, 1].astype(np.int64)
    for i in range(n - 1): size[n + i] = size[a[i]] + size[b[i]]
    if not np.array_equal(size[n:], Z[:, 3].astype(np.int64)):
        raise ValueError("invalid linkage matrix: column 3 must count the original leaves under each node")
    return Z

def linkage_children(Z) -> tuple[np.ndarray, np.ndarray]:
    "Children (a, b) of internal nodes n, ..., 2n-2 of linkage `Z`, as int64 arrays."
    Z = np.asarray(Z)
    return Z[:, 0].astype(np.int64), Z[:, 1].astype(np.int64)


# %%
Zok = np.array([[0, 1, 1, 2], [2, 3, 2, 2], [4, 5, 3, 4]], float)
test_eq(check_linkage(Zok).dtype, np.float64)
test_fail(lambda: check_linkage(np.array([[0, 1, 1, 2], [0, 2, 2, 3]], float)), contains="invalid linkage")   # leaf 0 used twice
test_fail(lambda: check_linkage(np.array([[0, 1, 1, 2], [2, 3, 2, 2]], float)), contains="count the original leaves")
test_fail(lambda: check_linkage(np.zeros((3, 3))), contains="shape (n - 1, 4)")


# %% [markdown]
# ## Dendrogram purity in linear time
#
# With `P*` the set of unordered pairs of points that share a class,
#
# $$\mathrm{DP} = \frac{1}{|P^*|}\sum_{(i,j)\in P^*} \mathrm{pur}\big(\mathrm{lvs}(\mathrm{LCA}(i,j)),\, y_i\big),
# \qquad \mathrm{pur}(S, y) = \frac{|\{x\in S: y_x = y\}|}{|S|}.$$
#
# Group the pairs by their lowest common ancestor. A leaf `c` is the LCA of the $\binom{n_{cy}}{2}$ pairs of
# class `y` inside it; an internal node `v` with children `a`, `b` is the LCA of the $N_{ay} N_{by}$ pairs
# with one point under each child. So, with $N_{vy}$ the number of class-`y` points under `v`,
#
# $$\mathrm{DP} = \frac{\sum_c\sum_y \binom{n_{cy}}{2}\frac{n_{cy}}{n_c} + \sum_v\sum_y N_{ay}N_{by}\frac{N_{vy}}{N_v}}{\sum_y \binom{N_y}{2}},$$
#
# one pass over the `n - 1` merges, `O(n * classes)` time and memory. Points in empty leaves do not exist,
# so empty leaves contribute nothing; classes with a single point have no pairs.

# %%
#| export
def dendrogram_purity(Z, # scipy linkage matrix over the n flat clusters (the tree's leaves)
                      leaves, # leaf index (0..n-1) of every data point
                      y_true, # class of every data point
                      ) -> float:
    "Dendrogram purity of a cluster tree, in time linear in the number of nodes (times classes)."
    Z = check_linkage(Z); n = Z.shape[0] + 1
    cnt, _ = count_matrix(leaves, y_true, n_leaves=n)
    cnt = cnt.astype(np.float64)
    total_pairs = (cnt.sum(0) * (cnt.sum(0) - 1) / 2).sum()
    if total_pairs == 0: raise ValueError("dendrogram purity is undefined: no two points share a class")
    nc = cnt.sum(1)
    with np.errstate(invalid='ignore', divide='ignore'):
        acc = np.nansum(cnt * (cnt - 1) / 2 * cnt / nc[:, None])
    N = np.empty((2 * n - 1, cnt.shape[1])); N[:n] = cnt
    a, b = linkage_children(Z)
    for i in range(n - 1):
        Na, Nb = N[a[i]], N[b[i]]
        Nv = Na + Nb; N[n + i] = Nv
        s = Nv.sum()
        if s > 0: acc += float((Na * Nb * Nv).sum() / s)
    return float(acc / total_pairs)


# %% [markdown]
# The literal definition, over every same-class pair of points and its lowest common ancestor
# (quadratic in the number of points: tests and tiny inputs only):

# %%
#| export
def dendrogram_purity_bruteforce(Z, leaves, y_true) -> float:
    "Dendrogram purity by enumerating same-class point pairs and their LCA (O(N^2 * depth); for tests)."
    Z = check_linkage(Z); n = Z.shape[0] + 1
    leaves, y_true = np.asarray(leaves), np.asarray(y_true)
    a, b = linkage_children(Z)
    parent = np.full(2 * n - 1, -1)
    for i in range(n - 1): parent[a[i]] = parent[b[i]] = n + i
    def ancestors(v):                       # v, parent(v), ..., root
        out = [v]
        while parent[out[-1]] >= 0: out.append(parent[out[-1]])
        return out
    below = {}                               # node -> set of point indices under it
    for v in range(2 * n - 1):
        below[v] = set()
    for i, c in enumerate(leaves):
        for v in ancestors(int(c)): below[v].add(i)
    total, npairs = 0.0, 0
    for i in range(len(leaves)):
        anc_i = ancestors(int(leaves[i]))
        for j in range(i + 1, len(leaves)):
            if y_true[i] != y_true[j]: continue
            anc_j = set(ancestors(int(leaves[j])))
            lca = next(v for v in anc_i if v in anc_j)
            pts = below[lca]
            total += sum(y_true[k] == y_true[i] for k in pts) / len(pts)
            npairs += 1
    if npairs == 0: raise ValueError("dendrogram purity is undefined: no two points share a class")
    return total / npairs


# %% [markdown]
# Checks: a perfect tree (classes are whole subtrees) has DP = 1; a worked example by hand; and the
# linear-time form equals the brute force on random trees, labels and leaves (including empty leaves).

# %%
# 4 leaves: ((0, 1), (2, 3)); leaves 0, 1 hold class 'a', leaves 2, 3 class 'b' -> perfect
leaves = np.array([0, 0, 1, 1, 2, 3, 3])
ycls = np.array(['a', 'a', 'a', 'a', 'b', 'b', 'b'])
test_close(dendrogram_purity(Zok, leaves, ycls), 1.0)
# swap: ((0, 2), (1, 3)) mixes the classes at the first level
Zmix = np.array([[0, 2, 1, 2], [1, 3, 2, 2], [4, 5, 3, 4]], float)
dp_mix = dendrogram_purity(Zmix, leaves, ycls)
# by hand: class a: 1 pair in leaf 0 (pur 1), 1 pair in leaf 1 (pur 1), 4 pairs across leaves 0/1 -> root (pur 4/7)
#          class b: 1 pair in leaf 3 (pur 1), 2 pairs across leaves 2/3 -> root (pur 3/7)
test_close(dp_mix, (1 + 1 + 4 * 4/7 + 1 + 2 * 3/7) / 9)
test_close(dendrogram_purity_bruteforce(Zmix, leaves, ycls), dp_mix)


# %%
#| export
def random_linkage(n:int, # number of leaves
                   rng:np.random.Generator, # source of randomness
                   ) -> np.ndarray:
    "A uniformly random sequence of merges over `n` leaves, as a linkage matrix (height = merge step)."
    if n < 2: raise ValueError(f"a tree needs at least 2 leaves, got {n}")
    active, size = list(range(n)), {i: 1 for i in range(n)}
    Z = np.zeros((n - 1, 4))
    for i in range(n - 1):
        x, y = sorted(rng.choice(len(active), size=2, replace=False))
        a, b = active[x], active[y]
        active.pop(y); active.pop(x); active.append(n + i)
        size[n + i] = size[a] + size[b]
        Z[i] = (min(a, b), max(a, b), i + 1, size[n + i])
    return Z


# %%
_rng = np.random.default_rng(1)
for trial in range(60):
    n_leaves = int(_rng.integers(2, 8)); npts = int(_rng.integers(2, 25))
    Zr = random_linkage(n_leaves, _rng)
    lv = _rng.integers(0, n_leaves, npts); yr = _rng.integers(0, 3, npts)
    if len(np.unique(yr)) == npts: continue
    test_close(dendrogram_purity(Zr, lv, yr), dendrogram_purity_bruteforce(Zr, lv, yr), eps=1e-12)


# %% [markdown]
# ## Leaf purity
#
# TreeVAE's leaf purity: each leaf of the tree is labelled with its majority class; LP is the fraction of
# points carrying their leaf's label. When the tree's leaves are the flat clusters (L2H), LP is the purity
# of the flat clustering: a tree built on top of a flat model cannot change it.

# %%
#| export
def leaf_purity(Z, # linkage matrix over the n leaves (validated; its leaves are the clusters)
                leaves, # leaf index (0..n-1) of every point
                y_true, # class of every point
                ) -> float:
    "Leaf purity: fraction of points whose class is the majority class of their leaf."
    Z = check_linkage(Z)
    cnt, _ = count_matrix(leaves, y_true, n_leaves=Z.shape[0] + 1)
    return float(cnt.max(1).sum() / cnt.sum())


# %%
test_close(leaf_purity(Zmix, leaves, ycls), 1.0)            # every leaf holds one class
y_imp = np.array(['a', 'b', 'a', 'a', 'b', 'b', 'a'])        # leaf 0: a/b, leaf 3: b/a
test_close(leaf_purity(Zmix, leaves, y_imp), 5/7)
test_close(leaf_purity(Zmix, leaves, y_imp), purity(y_imp, leaves))
test_fail(lambda: leaf_purity(Zmix, [0, 9], ['a', 'b']), contains="out of range")


# %% [markdown]
# ## Cutting a tree
#
# `cut_linkage(Z, k)` returns, for every leaf, its group among the `k` subtrees obtained by undoing the last
# `k - 1` merges (scipy's `fcluster(..., 'maxclust')` does the same when heights are distinct; this version
# needs no heights and is exact for any merge order). Group labels are `0..k-1` in order of their smallest leaf.

# %%
#| export
def cut_linkage(Z, # linkage matrix over n leaves
                k:int, # number of groups, 1 <= k <= n
                ) -> np.ndarray:
    "Group label (0..k-1) of every leaf after applying only the first n - k merges."
    Z = check_linkage(Z); n = Z.shape[0] + 1
    if not 1 <= k <= n: raise ValueError(f"k must be between 1 and the number of leaves ({n}), got {k}")
    parent = np.arange(2 * n - 1)
    a, b = linkage_children(Z)
    for i in range(n - k): parent[a[i]] = parent[b[i]] = n + i
    root = np.arange(n)
    for _ in range(n):                       # pointer jumping; depth <= n
        nxt = parent[root]
        if np.array_equal(nxt, root): break
        root = nxt
    _, lab = np.unique(root, return_index=False, return_inverse=True)
    first = {}
    for leaf, r in enumerate(lab): first.setdefault(r, len(first))
    return np.array([first[r] for r in lab])


# %%
from scipy.cluster.hierarchy import fcluster

# %%
test_eq(cut_linkage(Zok, 2), np.array([0, 0, 1, 1]))
test_eq(cut_linkage(Zmix, 2), np.array([0, 1, 0, 1]))
test_eq(cut_linkage(Zok, 4), np.arange(4))
test_eq(cut_linkage(Zok, 1), np.zeros(4, int))
_Zr = random_linkage(12, np.random.default_rng(3))
for k in range(1, 13):
    ours, sp = cut_linkage(_Zr, k), fcluster(_Zr, k, 'maxclust')
    test_eq(len(set(zip(ours, sp))), k)      # same partition as scipy
