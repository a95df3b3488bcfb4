# %% [markdown]
# # Breaking the Quadratic Barrier: Robust Cardinality Sketches for Adaptive Queries
#
# > Cardinality sketches (bottom-k, k-mins, k-partition) with explicit ranks, the Ahmadian-Cohen attacks on them, and reconstructed robust estimators with per-key participation accounting.

# %% [markdown]
# A cardinality sketch summarises a set by a few random hash values ("ranks") of its keys, and a union of
# two sets is sketched from the two sketches. Composability forces every query to reuse the same
# randomness, and that is what an adaptive adversary learns: Ahmadian & Cohen (ICML 2024, "AC24") break the
# standard estimators with O(k) queries and *any* estimator with Õ(k²) queries, k being the sketch size.
# Cohen, Singhal & Stemmer (ICML 2025, "CSS25") move this quadratic barrier from the *total* number of
# queries to the number of queries each *key* takes part in: their estimators for bottom-k sketches stay
# accurate for exponentially many adaptive queries as long as every key participates in at most Õ(k²)
# of them, and simulations with Uniform and Pareto participation show up to ~100× more queries survived.
#
# Paper: [arXiv 2502.05723](https://arxiv.org/abs/2502.05723) (PMLR v267, `cohen25c`); the attack:
# [arXiv 2405.17780](https://arxiv.org/abs/2405.17780) (PMLR v235, `ahmadian24a`). No official code exists for either.
#
# ::: {.callout-note}
# ## What we reproduce / what we cannot
# - **Exact and standard**: the bottom-k, k-mins and k-partition sketches with seeded per-key ranks, their
#   standard estimators and merges; AC24's single-batch Algorithm 1; datasketch's HyperLogLog++ estimator
#   (registers built from our controlled 64-bit hash). We measure our update throughput against datasketch.
# - **Our own design, "in the spirit of" AC24's Algorithm 4**: the adaptive multi-batch attack (mask growth,
#   1-bit soft-threshold answers). Its constants (z-threshold, batch sizes, rate adaptation) are ours.
# - **Reconstruction (not the paper's text)**: the *basic robust* and *tracking* estimators. We could not read
#   the CSS25 mechanisms offline; what is confirmed is only their names, the per-key participation bound
#   r = Õ(k²), the adaptive-data-analysis framing and the "reinterpreted Hassidim wrapper". Every cell that
#   implements them is labelled **[Reconstruction]**. Constants (noise level, budget, capacity) are ours,
#   so CSS25's "100×" is not expected to transfer; we test the *direction* of the claim.
# - **Scale**: Experiment 1 runs at full scale (n = 20,000 keys, k ∈ {32, 64, 128, 256}, 4k/16k/64k
#   queries). Experiments 2 and 3 (adaptive attacks, up to ~8·k² queries each) run on a smaller ground set
#   (n = 5,000) and k ∈ {32, 64, 128} in the `cpu` profile so the whole notebook takes a few minutes on 2 cores;
#   the `full` profile runs n = 20,000, k up to 256 and larger query caps.
# - **Not testable**: "exponentially many queries" (we can only run polynomially many).
# :::

# %%
#| default_exp sketches.cardinality

# %%
#| export
from __future__ import annotations
import hashlib, math, time
from dataclasses import dataclass
import numpy as np
from trustlib.config import BaseConfig, param, ConfigError, ResourceUnavailable, derive_seed
from trustlib.results import Result, Verdict, judge, run_experiment

# %%
#| hide
from fastcore.test import test_eq, test_close, test_fail
from IPython.display import display
import warnings

# %%
from typing import Optional

# %% tags=["parameters"]
profile: str = "smoke"  # smoke (CI, < 60 s) | cpu (published results, minutes) | full (paper scale)
seed: Optional[int] = None  # base random seed; every random choice derives from it
n: Optional[int] = None  # Experiment 1: number of keys in the ground set
ks: Optional[list[int]] = None  # Experiment 1: sketch sizes k (powers of two, for HLL++ registers)
query_mults: Optional[list[int]] = None  # Experiment 1: numbers of queries as multiples of k
n_seeds: Optional[int] = None  # Experiment 1: repetitions (independent hash seeds)
fractions: Optional[list[float]] = None  # prefix/suffix fractions of the score order
hll: Optional[bool] = None  # also attack datasketch's HyperLogLog++ (needs datasketch)
n_adaptive: Optional[int] = None  # Experiments 2-3: number of keys in the ground set
ks_adaptive: Optional[list[int]] = None  # Experiment 2: sketch sizes k
n_adaptive_seeds: Optional[int] = None  # Experiments 2-3: repetitions
cap_mult: Optional[float] = None  # Experiment 2: query cap as a multiple of k^2 (runs that survive it are censored)
k_skew: Optional[int] = None  # Experiment 3: sketch size k
query_frac: Optional[float] = None  # Experiment 3: expected query size as a fraction of the ground set
pareto_alphas: Optional[list[float]] = None  # Experiment 3: Pareto tail indices of the participation weights
skew_cap_mult: Optional[float] = None  # Experiment 3: query cap as a multiple of k^2
noise_eps: Optional[float] = None  # [reconstruction] noise sd as a fraction of the target count k/2
budget_mult: Optional[float] = None  # [reconstruction] tracking budget r ＝ budget_mult * sigma^2 participations
track_capacity: Optional[float] = None  # [reconstruction] tracking: most deactivated keys, as a fraction of the ground set
wrapper_k0: Optional[int] = None  # private-median wrapper: size of each of its k copies (bottom-k0)
wrapper_eps: Optional[float] = None  # private-median wrapper: epsilon of the exponential-mechanism median, per query
bench_items: Optional[int] = None  # throughput benchmark: keys per update


# %% [markdown] tags=["injected-parameters"]
# **This page shows a run with** `profile = "cpu"` (run `cpu-bf21a9e8fb`, commit `c7730d4`, 495 s, 2026-12-01). Running the notebook yourself uses the parameters cell above as written (the fast `smoke` profile unless you change it); `trustlib run robust_sketches --profile cpu` repeats the run shown here.

# %% [markdown]
# ## Configuration
#
# One validated `Config` per paper; the three profiles differ only in sizes. Robust-estimator knobs
# (`noise_eps`, `budget_mult`, `track_capacity`) are fixed design choices of our reconstruction, set once
# from first principles (noise comparable to the sampling error at k = 64, budget a few times below the
# participation at which the basic estimator breaks) and not tuned per run.

# %%
#| export
@dataclass
class Config(BaseConfig):
    "Experiment configuration for the robust-sketches notebook."
    n: int = param(3000, "Experiment 1: number of keys in the ground set", ge=100, max=2_000_000)
    ks: tuple[int, ...] = param((32, 64), "Experiment 1: sketch sizes k (powers of two, for HLL++ registers)", ge=16, le=4096)
    query_mults: tuple[int, ...] = param((4, 16), "Experiment 1: numbers of queries as multiples of k", ge=1, max=10_000)
    n_seeds: int = param(1, "Experiment 1: repetitions (independent hash seeds)", ge=1, max=500)
    fractions: tuple[float, ...] = param((0.01, 0.02, 0.05, 0.1, 0.2, 0.5), "prefix/suffix fractions of the score order", gt=0, le=1)
    hll: bool = param(True, "also attack datasketch's HyperLogLog++ (needs datasketch)")
    n_adaptive: int = param(1500, "Experiments 2-3: number of keys in the ground set", ge=200, max=2_000_000)
    ks_adaptive: tuple[int, ...] = param((16, 32), "Experiment 2: sketch sizes k", ge=8, le=1024)
    n_adaptive_seeds: int = param(1, "Experiments 2-3: repetitions", ge=1, max=500)
    cap_mult: float = param(4.0, "Experiment 2: query cap as a multiple of k^2 (runs that survive it are censored)", gt=0, max=5000)
    k_skew: int = param(32, "Experiment 3: sketch size k", ge=8, le=1024)
    query_frac: float = param(0.05, "Experiment 3: expected query size as a fraction of the ground set", gt=0, lt=1)
    pareto_alphas: tuple[float, ...] = param((1.2, 2.0), "Experiment 3: Pareto tail indices of the participation weights", gt=1, max=100)
    skew_cap_mult: float = param(16.0, "Experiment 3: query cap as a multiple of k^2", gt=0, max=2000)
    noise_eps: float = param(0.25, "[reconstruction] noise sd as a fraction of the target count k/2", gt=0, lt=1)
    budget_mult: float = param(16.0, "[reconstruction] tracking budget r = budget_mult * sigma^2 participations", gt=0, max=2000)
    track_capacity: float = param(0.1, "[reconstruction] tracking: most deactivated keys, as a fraction of the ground set", gt=0, le=1)
    wrapper_k0: int = param(4, "private-median wrapper: size of each of its k copies (bottom-k0)", ge=2, max=500)
    wrapper_eps: float = param(1.0, "private-median wrapper: epsilon of the exponential-mechanism median, per query", gt=0, max=100)
    bench_items: int = param(20_000, "throughput benchmark: keys per update", ge=1000, max=10**8)
    PROFILE_DEFAULTS = {
        "cpu": dict(n=20_000, ks=(32, 64, 128, 256), query_mults=(4, 16, 64), n_seeds=3, n_adaptive=5000,
                    ks_adaptive=(32, 64, 128), n_adaptive_seeds=2, cap_mult=8.0, k_skew=64, bench_items=200_000),
        "full": dict(n=20_000, ks=(32, 64, 128, 256), query_mults=(4, 16, 64), n_seeds=5, n_adaptive=20_000,
                     ks_adaptive=(32, 64, 128, 256), n_adaptive_seeds=5, cap_mult=32.0, k_skew=64, bench_items=1_000_000),
    }
    def validate(self):
        for name in ("ks", "query_mults", "fractions", "pareto_alphas"):
            if not getattr(self, name): raise ConfigError(f"parameter {name!r}: needs at least one value")
        for k in self.ks:
            if k & (k - 1): raise ConfigError(f"parameter 'ks': {k} is not a power of two (HLL++ needs 2^p registers)")
        if max(self.ks) * 4 > self.n: raise ConfigError(f"parameter 'n': {self.n} is too small for k = {max(self.ks)} (need n >= 4k)")
        if len(self.ks_adaptive) < 2: raise ConfigError("parameter 'ks_adaptive': need at least two sizes to fit a slope")
        if self.k_skew / self.query_frac > self.n_adaptive: raise ConfigError("parameter 'query_frac': queries would hold fewer than k keys")


# %%
cfg = Config.from_namespace(globals())
cfg

# %%
test_fail(lambda: Config.from_params("smoke", ks=(48,)), contains="not a power of two")
test_fail(lambda: Config.from_params("smoke", n=100, ks=(64,)), contains="too small")
test_fail(lambda: Config.from_params("smoke", noise_eps=1.5), contains="'noise_eps'")
test_fail(lambda: Config.from_params("smoke", n_key=5), contains="unknown parameter")
test_eq(Config.from_params("cpu").ks, (32, 64, 128, 256))

# %% [markdown]
# ## Ranks: a seeded hash of each key
#
# Every sketch here is a function of the keys' *ranks*. A key id (a 64-bit integer) is hashed with a seeded
# splitmix64 finaliser, a bijection of 64-bit words, so distinct ids get distinct hashes; the top 53 bits
# give a rank u ∈ (0, 1). The same key always gets the same rank under the same seed: that shared randomness
# is what makes sketches mergeable, and what an adaptive adversary learns. Other items (strings, bytes) are
# mapped to ids with `key_ids` first.

# %%
#| export
_M1, _M2, _GOLD = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB), np.uint64(0x9E3779B97F4A7C15)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
_UMAX = np.iinfo(np.uint64).max

def _mix64(x):
    "splitmix64 finaliser (a bijection of uint64), vectorised."
    x = x + _GOLD
    x ^= x >> _S30; x *= _M1
    x ^= x >> _S27; x *= _M2
    x ^= x >> _S31
    return x

def _as_keys(keys) -> np.ndarray:
    "Key ids as a flat uint64 array (negative int64 ids are reinterpreted, not rejected)."
    a = np.asarray(keys)
    if a.ndim == 0: a = a.reshape(1)
    if a.size == 0: return np.zeros(0, dtype=np.uint64)
    if a.dtype == np.uint64: return a.ravel()
    if not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"keys must be integer ids, got dtype {a.dtype}; map other items to ids with `key_ids` first")
    return a.astype(np.int64).ravel().view(np.uint64)

def hash64(keys, # integer key ids (array-like)
           seed:int=0, # hash seed: one seed = one random hash function
          ) -> np.ndarray:
    "Seeded 64-bit hash of integer key ids (uint64 array)."
    with np.errstate(over='ignore'):
        s = _mix64(np.array([int(seed) % 2**64], dtype=np.uint64))[0]
        return _mix64(_as_keys(keys) ^ s)

def uniform_ranks(keys, seed:int=0) -> np.ndarray:
    "Per-key ranks in (0, 1): the top 53 bits of `hash64`, centred in their cell."
    h = hash64(keys, seed)
    return ((h >> _S11).astype(np.float64) + 0.5) * 2.0**-53

def key_ids(items) -> np.ndarray:
    "Map arbitrary items (str, bytes, anything with a stable `str`) to uint64 key ids with BLAKE2b."
    return np.array([int.from_bytes(hashlib.blake2b(x if isinstance(x, bytes) else str(x).encode(), digest_size=8).digest(), 'little')
                     for x in items], dtype=np.uint64)

def _check_k(k) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)): raise TypeError(f"k must be an int, got {k!r}")
    if k < 2: raise ValueError(f"k must be >= 2 (the estimators divide by k-1), got {k}")
    return int(k)


# %%
u = uniform_ranks(np.arange(200_000), seed=1)
test_eq(len(np.unique(hash64(np.arange(200_000), 1))), 200_000)      # a bijection: no collisions
test_close(u.mean(), 0.5, eps=0.005); test_close((u < 0.1).mean(), 0.1, eps=0.003)
test_eq(uniform_ranks([5, 7], 1), u[[5, 7]])                          # same key, same seed -> same rank
assert not np.allclose(uniform_ranks([5, 7], 2), u[[5, 7]])           # another seed -> another hash function
test_eq(key_ids(["a", b"a"])[0], key_ids(["a"])[0])
test_fail(lambda: hash64([0.5, 1.5]), contains="map other items to ids")
test_fail(lambda: _check_k(1), contains="k must be >= 2"); test_fail(lambda: _check_k(3.0), contains="must be an int")


# %% [markdown]
# ## The three composable sketches
#
# - **Bottom-k** (KMV): the k smallest ranks of the set, with the key ids. Standard estimator
#   n̂ = (k − 1)/τ_k, τ_k the k-th smallest rank: unbiased, coefficient of variation ≈ 1/√(k − 2). A set of
#   fewer than k keys is stored whole and counted exactly. A sketch is a function of the *set*: adding a key
#   twice changes nothing.
# - **k-mins**: k independent hash functions, keep each one's minimum. With exponential ranks
#   E = −ln(1 − u), Σ minima ~ Gamma(k, n), so n̂ = (k − 1)/Σ E_i is unbiased. datasketch's
#   `MinHash.count()` uses k/Σ u_i − 1 on the same minima instead (both shown below; they differ by the
#   estimator, not by the sketch — a frequent point of confusion, cf. the "bottom-k vs k-mins MinHash" question).
# - **k-partition**: one hash splits keys into k buckets, each keeps its minimum exponential rank;
#   n̂ = k(k − 1)/Σ_b E_b once every bucket is non-empty (linear counting k·ln(k/#empty) before that).
#   HyperLogLog is a compressed k-partition sketch (it keeps only ⌈−log₂ u⌉).
#
# All three merge: the sketch of A ∪ B is computed from the sketches of A and B.

# %%
#| export
class BottomK:
    "Bottom-k (KMV) sketch: the k keys of smallest rank, with their ranks (ascending)."
    def __init__(self, k:int, # sketch size (>= 2)
                 seed:int=0): # hash seed; only sketches with the same (k, seed) merge
        self.k, self.seed = _check_k(k), int(seed)
        self.ids, self.ranks = np.zeros(0, np.uint64), np.zeros(0, np.float64)

    @classmethod
    def from_keys(cls, keys, k:int, seed:int=0) -> BottomK: return cls(k, seed).update(keys)

    def _set(self, ids, ranks):
        k = self.k
        if len(ids) > k:
            sel = np.argpartition(ranks, k - 1)[:k]
            if len(np.unique(ids[sel])) < k:                      # duplicates among the k smallest: dedupe all
                ids, first = np.unique(ids, return_index=True); ranks = ranks[first]
                sel = np.argpartition(ranks, k - 1)[:k] if len(ids) > k else np.arange(len(ids))
            ids, ranks = ids[sel], ranks[sel]
        else:
            ids, first = np.unique(ids, return_index=True); ranks = ranks[first]
        o = np.argsort(ranks, kind='stable')
        self.ids, self.ranks = ids[o], ranks[o]
        return self

    def update(self, keys) -> BottomK:
        "Add integer key ids (vectorised; duplicates are ignored). Returns self."
        ids = _as_keys(keys)
        if ids.size == 0: return self
        return self._set(np.concatenate([self.ids, ids]), np.concatenate([self.ranks, uniform_ranks(ids, self.seed)]))

    def merge(self, other:BottomK) -> BottomK:
        "The sketch of the union (a new sketch)."
        if not isinstance(other, BottomK): raise TypeError(f"cannot merge BottomK with {type(other).__name__}")
        if (self.k, self.seed) != (other.k, other.seed):
            raise ValueError(f"cannot merge sketches with different (k, seed): {(self.k, self.seed)} vs {(other.k, other.seed)}")
        return BottomK(self.k, self.seed)._set(np.concatenate([self.ids, other.ids]), np.concatenate([self.ranks, other.ranks]))
    __or__ = merge

    @property
    def full(self) -> bool: return len(self.ids) >= self.k
    @property
    def tau(self) -> float:
        "τ_k, the k-th smallest rank (nan while fewer than k keys were seen)."
        return float(self.ranks[self.k - 1]) if self.full else float('nan')
    def count_below(self, t:float) -> int:
        "c_t = #keys with rank < t; only determined by the sketch for t <= τ_k."
        if self.full and t > self.tau: raise ValueError("threshold above tau_k: the count is not determined by the sketch")
        return int(np.searchsorted(self.ranks, t, side='left'))
    def estimate(self) -> float:
        "Standard estimator (k-1)/τ_k; the exact count for sets of fewer than k keys; 0 for the empty set."
        return (self.k - 1) / self.tau if self.full else float(len(self.ids))
    def __len__(self): return len(self.ids)
    def __eq__(self, other): return isinstance(other, BottomK) and (self.k, self.seed) == (other.k, other.seed) and np.array_equal(self.ids, other.ids)
    def __repr__(self): return f"BottomK(k={self.k}, seed={self.seed}, stored={len(self.ids)}, estimate={self.estimate():.1f})"


# %%
rng = np.random.default_rng(0)
a, b = rng.choice(10**6, 3000, replace=False), rng.choice(10**6, 3000, replace=False)
test_eq(BottomK.from_keys(a, 64) | BottomK.from_keys(b, 64), BottomK.from_keys(np.concatenate([a, b]), 64))  # union
test_eq(BottomK.from_keys(np.concatenate([a, a]), 64), BottomK.from_keys(a, 64))                               # duplicates
test_eq(BottomK.from_keys([3, 3, 9], 8).estimate(), 2.0)                                                        # small set: exact
test_eq(BottomK(8).estimate(), 0.0)                                                                             # empty set
test_fail(lambda: BottomK.from_keys(a, 64) | BottomK.from_keys(b, 64, seed=1), contains="different (k, seed)")
sk = BottomK.from_keys(a, 64); test_eq(sk.count_below(sk.tau), 63); test_fail(lambda: sk.count_below(0.9), contains="not determined")
est = np.array([BottomK.from_keys(rng.choice(10**9, 5000, replace=False), 64, seed=s).estimate() for s in range(200)])
test_close(est.mean(), 5000, eps=3 * est.std() / np.sqrt(len(est)))          # unbiased (within 3 s.e.)
test_close(np.abs(est / 5000 - 1).mean(), np.sqrt(2 / np.pi) / np.sqrt(62), eps=0.03)  # mean |rel. err| ≈ sqrt(2/π)/sqrt(k-2)
sk


# %%
#| export
def _exp_ranks(u): return -np.log1p(-u)

class KMins:
    "k-mins sketch: the minimum rank under each of k independent hash functions."
    def __init__(self, k:int, seed:int=0):
        self.k, self.seed = _check_k(k), int(seed)
        self.salts = hash64(np.arange(self.k), self.seed ^ 0x5EED)
        self.hmin = np.full(self.k, _UMAX, dtype=np.uint64)      # minimum 64-bit hash per function
    @classmethod
    def from_keys(cls, keys, k:int, seed:int=0) -> KMins: return cls(k, seed).update(keys)
    def update(self, keys, chunk:int=1 << 22) -> KMins:
        "Add integer key ids (vectorised in chunks of `chunk` hash evaluations). Returns self."
        ids = _as_keys(keys); step = max(1, chunk // self.k)
        for i in range(0, ids.size, step):
            with np.errstate(over='ignore'): h = _mix64(ids[i:i + step, None] ^ self.salts[None, :])
            self.hmin = np.minimum(self.hmin, h.min(axis=0))
        return self
    @property
    def mins(self) -> np.ndarray:
        "The k minimum ranks in (0, 1) (1.0 where nothing was seen)."
        return np.where(self.hmin == _UMAX, 1.0, ((self.hmin >> _S11).astype(np.float64) + 0.5) * 2.0**-53)
    def merge(self, other:KMins) -> KMins:
        if not isinstance(other, KMins) or (self.k, self.seed) != (other.k, other.seed): raise ValueError("can only merge KMins sketches with the same (k, seed)")
        out = KMins(self.k, self.seed); out.hmin = np.minimum(self.hmin, other.hmin); return out
    __or__ = merge
    @property
    def empty(self) -> bool: return bool((self.hmin == _UMAX).all())
    def estimate(self) -> float:
        "(k-1)/Σ E_i with exponential ranks E = -ln(1-u): unbiased."
        return 0.0 if self.empty else (self.k - 1) / _exp_ranks(self.mins).sum()
    def estimate_datasketch(self) -> float:
        "datasketch's `MinHash.count()` formula on the same minima: k/Σ u_i - 1."
        return 0.0 if self.empty else self.k / self.mins.sum() - 1.0

class KPartition:
    "k-partition sketch: one hash splits keys into k buckets; each bucket keeps its minimum (exponential) rank."
    def __init__(self, k:int, seed:int=0):
        self.k, self.seed = _check_k(k), int(seed)
        self.mins = np.full(self.k, np.inf)
    @classmethod
    def from_keys(cls, keys, k:int, seed:int=0) -> KPartition: return cls(k, seed).update(keys)
    def update(self, keys) -> KPartition:
        ids = _as_keys(keys)
        if ids.size == 0: return self
        h = hash64(ids, self.seed)
        bucket = ((h & np.uint64(0xFFFFFFFF)) % np.uint64(self.k)).astype(np.intp)
        np.minimum.at(self.mins, bucket, _exp_ranks(uniform_ranks(h, self.seed + 1)))
        return self
    def merge(self, other:KPartition) -> KPartition:
        if not isinstance(other, KPartition) or (self.k, self.seed) != (other.k, other.seed): raise ValueError("can only merge KPartition sketches with the same (k, seed)")
        out = KPartition(self.k, self.seed); out.mins = np.minimum(self.mins, other.mins); return out
    __or__ = merge
    def estimate(self) -> float:
        empty = int(np.isinf(self.mins).sum())
        if empty == self.k: return 0.0
        if empty > 0: return self.k * math.log(self.k / empty)       # linear counting
        return self.k * (self.k - 1) / self.mins.sum()


# %%
from datasketch import MinHash

# %%
for cls in (KMins, KPartition):
    est = np.array([cls.from_keys(rng.choice(10**9, 5000, replace=False), 64, seed=s).estimate() for s in range(100)])
    test_close(est.mean(), 5000, eps=3 * est.std() / 10)
    assert (cls.from_keys(a, 16) | cls.from_keys(b, 16)).estimate() == cls.from_keys(np.concatenate([a, b]), 16).estimate()
    test_eq(cls(8).estimate(), 0.0)
# cross-check with datasketch: MinHash.count() on our minima equals our `estimate_datasketch`
km = KMins.from_keys(a, 128)
mh = MinHash(num_perm=128, scheme='affine32', hashvalues=np.minimum(km.mins * 2**32, 2**32 - 1).astype(np.uint32))
test_close(mh.count(), km.estimate_datasketch(), eps=1e-6 * len(a))
print(f"k-mins on 3000 keys: ours {km.estimate():.0f}, datasketch formula {mh.count():.0f}")


# %% [markdown]
# ### Update throughput against datasketch
#
# datasketch hashes each item in Python (SHA-1 on bytes by default) and `HyperLogLog.update` takes one item
# at a time; ours hash whole integer arrays in numpy. We time both at equal k (bottom-k and k-mins against
# `MinHash(num_perm=k)`, k-partition against `HyperLogLogPlusPlus` with k = 2^p registers). For fairness we
# also give datasketch its fastest path (integer items with the identity as `hashfunc`). Timings are the
# best of three runs.

# %%
#| export
def _require_datasketch():
    try:
        import datasketch
        return datasketch
    except ImportError as e:
        raise ResourceUnavailable("this experiment compares against datasketch; install it with `pip install datasketch`") from e

def _best_time(fn, repeats:int=3) -> float:
    best = float('inf')
    for _ in range(repeats):
        t = time.perf_counter(); fn(); best = min(best, time.perf_counter() - t)
    return best

def throughput(k:int=128, # sketch size (k-partition/HLL++: k = 2^p registers)
               n_items:int=100_000, # keys per update
               repeats:int=3):
    "Update throughput (items/s) of our sketches and datasketch's at equal k, and their ratios (a DataFrame)."
    import pandas as pd
    ds = _require_datasketch()
    ids = np.arange(n_items, dtype=np.int64); as_bytes = [str(i).encode() for i in range(n_items)]; as_int = list(range(n_items))
    p = int(round(math.log2(k)))
    def ds_minhash(): ds.MinHash(num_perm=k).update_batch(as_bytes)
    def ds_minhash_int(): ds.MinHash(num_perm=k, hashfunc=int).update_batch(as_int)
    def ds_hll():
        h = ds.HyperLogLogPlusPlus(p=p)
        for x in as_bytes: h.update(x)
    t = {name: _best_time(f, repeats) for name, f in [
        ('bottom-k', lambda: BottomK.from_keys(ids, k)), ('k-mins', lambda: KMins.from_keys(ids, k)),
        ('k-partition', lambda: KPartition.from_keys(ids, 1 << p)), ('MinHash', ds_minhash),
        ('MinHash (int ids)', ds_minhash_int), ('HyperLogLog++', ds_hll)]}
    pairs = [('bottom-k', 'MinHash'), ('bottom-k', 'MinHash (int ids)'), ('k-mins', 'MinHash'),
             ('k-mins', 'MinHash (int ids)'), ('k-partition', 'HyperLogLog++')]
    return pd.DataFrame([dict(ours=o, datasketch=d, k=k, ours_items_per_s=n_items / t[o], datasketch_items_per_s=n_items / t[d],
                              ratio=t[d] / t[o]) for o, d in pairs])


# %%
tp = throughput(64, 5000, repeats=1)
assert (tp.ratio > 0).all() and len(tp) == 5
tp


# %% [markdown]
# ## Simulating many queries in the rank domain
#
# The attacks issue tens of thousands of queries, each a subset of a fixed ground set N. Building a sketch
# per query would be wasteful: every sketch of Q ⊆ N is determined by which keys of N, taken in increasing
# rank order, belong to Q. A `Universe` sorts N by rank once; a batch of queries is a boolean membership
# matrix (one row per query), and τ_k(Q) is read off the k-th member in rank order. This is the analysis
# device AC24 call the *rank domain*; it gives exactly the standard bottom-k answers (checked below).
#
# A *responder* answers a batch of queries with cardinality estimates; it may keep state (noise generator,
# participation counters). The attacker only sees what the responder returns.

# %%
#| export
class Universe:
    "A ground set of keys with their ranks, sorted once (the rank domain)."
    def __init__(self, n:int, # number of keys (ids 0..n-1 unless `keys` is given)
                 seed:int=0, keys=None):
        self.keys = np.arange(n, dtype=np.int64) if keys is None else np.asarray(keys)
        self.n, self.seed = len(self.keys), int(seed)
        self.ranks = uniform_ranks(self.keys, self.seed)
        self.order = np.argsort(self.ranks, kind='stable')
        self.u_sorted = self.ranks[self.order]
    def mask(self, idx) -> np.ndarray:
        "A one-row membership matrix for the keys at positions `idx`."
        m = np.zeros((1, self.n), bool); m[0, idx] = True; return m

def random_halves(rng, b:int, n:int) -> np.ndarray:
    "b independent uniform random subsets of range(n) (each key with prob. 1/2) as a (b, n) bool matrix."
    by = rng.integers(0, 256, size=(b, (n + 7) // 8), dtype=np.uint8)
    return np.unpackbits(by, axis=1, count=n).view(bool)

def _bottomk_positions(masks, order, k):
    "Per row: position (in rank order) of the k-th member, or -1 if the row has < k members; the prefix cumsums; member counts."
    b, n = masks.shape
    L = min(n, 4 * k + 64)
    while True:
        cs = np.cumsum(masks[:, order[:L]], axis=1, dtype=np.int32)
        tot = cs[:, -1]
        if L == n or (tot >= k).all(): break
        L = min(n, 4 * L)
    return np.where(tot >= k, np.argmax(cs >= k, axis=1), -1), cs, tot

class StandardResponder:
    "Bottom-k sketch with the standard estimator (k-1)/τ_k (exact count for queries with < k keys)."
    name = 'standard'
    def __init__(self, uni:Universe, k:int): self.uni, self.k, self.exhausted = uni, _check_k(k), False
    def answer(self, masks) -> np.ndarray:
        pos, cs, tot = _bottomk_positions(masks, self.uni.order, self.k)
        return np.where(pos >= 0, (self.k - 1) / self.uni.u_sorted[np.maximum(pos, 0)], tot).astype(float)


# %%
uni = Universe(3000, seed=4)
m = random_halves(np.random.default_rng(1), 5, 3000)
test_close(m.mean(), 0.5, eps=0.02)
test_eq(StandardResponder(uni, 64).answer(m), [BottomK.from_keys(uni.keys[row], 64, seed=4).estimate() for row in m])
test_eq(StandardResponder(uni, 64).answer(uni.mask([1, 2, 3])), [3.0])


# %% [markdown]
# ## AC24 Algorithm 1: a single batch of random queries
#
# Draw r random halves U_i of N, ask for their cardinalities, and score every key by the mean answer over
# the queries that contain it. Keys of low rank lower τ_k whenever they are present, so they raise the
# answer: the score order puts them first. A *prefix* of the order (the highest scores) therefore holds
# disproportionately many low-rank keys and is over-estimated; a *suffix* is under-estimated. The batch is
# non-adaptive: the adversary only post-processes the answers. We score several oracles on the same queries:
# our bottom-k with the standard estimator, and datasketch's HyperLogLog++.
#
# The HLL++ oracle feeds datasketch's `HyperLogLogPlusPlus` our controlled 64-bit hash: registers are
# built vectorised exactly as its `update` builds them (checked against `update` below), then its own
# `count()` (bias correction, linear counting) answers.

# %%
#| export
def _bit_length(x) -> np.ndarray:
    "Vectorised int.bit_length for uint64 arrays."
    x = np.asarray(x, dtype=np.uint64).copy(); out = np.zeros(x.shape, np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        big = x >= (np.uint64(1) << np.uint64(s))
        out += big * s; x = np.where(big, x >> np.uint64(s), x)
    return out + (x > 0)

class HLLPPOracle:
    "datasketch's HyperLogLog++ (2^p registers) answering queries given as membership rows over a Universe."
    name = 'hll++'
    def __init__(self, uni:Universe, p:int, seed:int=0):
        ds = _require_datasketch()
        if not 4 <= p <= 16: raise ValueError(f"HyperLogLog++ precision p must be in 4..16, got {p}")
        self.cls, self.p, self.m = ds.HyperLogLogPlusPlus, int(p), 1 << int(p)
        self.hashes = h = hash64(uni.keys, seed + 0x4C4C)
        bucket = (h & np.uint64(self.m - 1)).astype(np.intp)
        rho = (64 - self.p - _bit_length(h >> np.uint64(self.p)) + 1).astype(np.int8)
        self.perm = np.argsort(bucket, kind='stable')
        self.starts = np.searchsorted(bucket[self.perm], np.arange(self.m))
        self.nonempty = np.bincount(bucket, minlength=self.m) > 0
        self.rho_sorted = rho[self.perm]
    def registers(self, masks) -> np.ndarray:
        v = masks[:, self.perm] * self.rho_sorted[None, :]
        reg = np.maximum.reduceat(v, np.minimum(self.starts, v.shape[1] - 1), axis=1)
        reg[:, ~self.nonempty] = 0
        return reg.astype(np.int8)
    def answer(self, masks) -> np.ndarray:
        return np.array([float(self.cls(reg=np.array(r, dtype=np.int8)).count()) for r in self.registers(masks)])

def algorithm1(oracles:dict, # name -> function(masks) -> answers
               n:int, # ground-set size
               r_list, # numbers of queries to report at (smaller batches are prefixes of the largest)
               rng, chunk:int=512):
    """AC24 Algorithm 1: r random halves of the ground set; score[x] = mean answer over the queries containing x.
    Returns ({r: {oracle: scores}}, {oracle: all answers}, query sizes)."""
    r_list = sorted(int(r) for r in r_list)
    S = {name: np.zeros(n) for name in oracles}; N = np.zeros(n)
    out, resp, sizes, done = {}, {name: [] for name in oracles}, [], 0
    for r in r_list:
        while done < r:
            b = min(chunk, r - done)
            m = random_halves(rng, b, n); mf = m.astype(np.float32)
            for name, o in oracles.items():
                y = np.asarray(o(m), dtype=np.float64)
                resp[name].append(y); S[name] += y.astype(np.float32) @ mf
            N += mf.sum(0); sizes.append(m.sum(1)); done += b
        out[r] = {name: S[name] / np.maximum(N, 1) for name in oracles}
    return out, {name: np.concatenate(v) for name, v in resp.items()}, np.concatenate(sizes)

def prefix_suffix_ratios(scores, # one score per key (higher: pushes estimates up)
                         estimate_set, # function(key positions) -> cardinality estimate
                         fractions) -> list[dict]:
    "est/true of the prefix (highest scores) and the suffix (lowest scores) of the score order, per fraction."
    o = np.argsort(-scores, kind='stable'); n = len(o); rows = []
    for f in fractions:
        m = max(1, int(round(f * n)))
        rows.append(dict(fraction=f, prefix=estimate_set(o[:m]) / m, suffix=estimate_set(o[-m:]) / m))
    return rows


# %%
from datasketch import HyperLogLogPlusPlus

# %%
hl = HLLPPOracle(uni, 6, seed=1)
for row in m[:2]:
    ref = HyperLogLogPlusPlus(p=6, hashfunc=int)
    for x in hl.hashes[row]: ref.update(int(x))
    test_eq(hl.registers(row[None])[0], ref.reg); test_eq(hl.answer(row[None])[0], ref.count())
# the attack at k = 64: a prefix of the score order is over-estimated after 4k queries
uni = Universe(5000, seed=11); std = StandardResponder(uni, 64)
sc, _, _ = algorithm1({'bottom-k': std.answer}, uni.n, [256], np.random.default_rng(0))
rows = prefix_suffix_ratios(sc[256]['bottom-k'], lambda idx: std.answer(uni.mask(idx))[0], [0.05, 0.1])
assert rows[0]['prefix'] > 1.5 and rows[1]['suffix'] < 1.0, rows
rows


# %% [markdown]
# ## Robust estimators — **[Reconstruction]**
#
# ::: {.callout-warning}
# ## Reconstruction, not the paper's text
# CSS25's full text was not available to us. Confirmed: a *Basic Robust Estimator* and a *Tracking
# estimator* for bottom-k sketches, accurate for exponentially many adaptive queries when every key takes
# part in at most r = Õ(k²) of them; an adaptive-data-analysis (ADA) framing with per-key guarantees built
# on "a reinterpretation of the Hassidim wrapper"; tracking "deactivates over-exposed keys". Everything
# below — the released statistic, the threshold selection, the noise, the budget, the treatment of
# deactivated keys — is **our construction consistent with those facts**, not the paper's algorithm.
# :::
#
# **Basic robust estimator (ours).** Treat the ranks (u_x) as the private data set. For a query Q and a
# threshold τ, c_τ(Q) = #{x ∈ Q : u_x < τ} ~ Binomial(|Q|, τ), readable from the bottom-k sketch for
# τ ≤ τ_k(Q). (1) Pick τ from a fixed geometric grid (4 points per octave): the largest grid τ with
# c_τ(Q) ≤ k/2 − Z₁; (2) release (c_τ(Q) + Z₂)/τ; Z₁, Z₂ ~ N(0, σ²). If τ = 1 is selected (a small query),
# c₁(Q) = |Q| does not depend on any rank and is released exactly. Changing one key's rank moves every
# count by at most 1 in the same direction, so each step is a Gaussian mechanism of sensitivity 1 with
# respect to that key: ρ = 1/(2σ²) zCDP per step, 1/σ² per query — and **only for the keys in Q**. After
# r_x queries that contain it, key x has spent r_x/σ² (`per_key_zcdp`). Holding that spend to a constant
# with σ = ε·k/2 (relative noise ε on the selected count) gives a per-key budget r ∝ ε²k², the Õ(k²) of
# the paper, while the number of queries t only enters through a union bound.
#
# **Tracking estimator (ours).** Keep a participation counter per key, incremented when x ∈ Q — on
# *membership*, never on "x appeared in the sketch": that would make deactivation depend on the ranks and
# bias every later answer (the prototype saw mean error 0.55). A key whose counter reaches the budget r is
# deactivated: it leaves the randomised part and is counted exactly; the answer is |Q ∩ D| + basic(Q \ D).
# Deactivated keys must be stored; we give the estimator a capacity (a fraction of N) and call it
# `exhausted` when it overflows. In a real deployment the sketch would have to exclude deactivated keys
# (e.g. keep k + |D| entries); in the rank-domain simulation we compute the active part directly.
#
# **The generic wrapper (Hassidim et al. 2020).** k independent copies of a small bottom-k₀ sketch; every
# answer is an ε-DP median of the copies' estimates (exponential mechanism on a 5 % log grid). Each copy
# reports (median of Gamma(k₀))/τ_k₀ rather than (k₀ − 1)/τ_k₀: the latter is mean-unbiased but its median
# is 18 % low at k₀ = 4, and the wrapper takes a median. Generic
# theory: ~k² adaptive queries. Its space is k·k₀, larger than the others' k.

# %%
#| export
def per_key_zcdp(participation, # number of queries each key took part in
                 sigma:float) -> np.ndarray:
    "[Reconstruction] zCDP spent by each key under the basic robust estimator: two Gaussian steps of sensitivity 1 per query."
    return np.asarray(participation, float) / sigma**2

class BasicRobustResponder:
    """[Reconstruction] basic robust estimator on a bottom-k sketch: noisy threshold selection on a fixed
    geometric grid so that c_τ(Q) ≈ k/2, then (c_τ(Q) + Z)/τ with Z ~ N(0, σ²)."""
    name = 'basic'
    def __init__(self, uni:Universe, k:int, sigma:float, # noise sd of both Gaussian steps
                 rng, per_octave:int=4, target:float|None=None):
        self.uni, self.k, self.sigma, self.rng, self.exhausted = uni, _check_k(k), float(sigma), rng, False
        self.target = k / 2 if target is None else float(target)
        J = int(np.ceil(per_octave * np.log2(16 * uni.n))) + 1
        self.grid = 2.0 ** (-np.arange(J) / per_octave)                    # τ grid, descending from 1
        self.gpos = np.searchsorted(uni.u_sorted, self.grid, side='left')  # keys of N below each τ
    def _robust(self, masks) -> np.ndarray:
        b = masks.shape[0]
        if b == 0: return np.zeros(0)
        pos, cs, tot = _bottomk_positions(masks, self.uni.order, self.k)
        L = cs.shape[1]
        c = np.where(self.gpos[None, :] == 0, 0, cs[:, np.clip(self.gpos - 1, 0, L - 1)])
        c_read = np.where((self.gpos <= L)[None, :], c, 10**9)            # above τ_k: not in the sketch
        ok = c_read <= (self.target - self.rng.normal(0, self.sigma, size=b))[:, None]
        j = np.where(ok.any(1), np.argmax(ok, axis=1), len(self.grid) - 1)
        cj = c[np.arange(b), j]
        est = (cj + self.rng.normal(0, self.sigma, size=b)) / self.grid[j]
        return np.where(j == 0, cj, np.maximum(est, 0.0))      # τ = 1: c_1(Q) = |Q| does not depend on ranks, no noise needed
    def answer(self, masks) -> np.ndarray: return self._robust(masks)

class TrackingResponder(BasicRobustResponder):
    """[Reconstruction] tracking estimator: participation counted on membership (x ∈ Q); keys that reach the budget
    are deactivated and counted exactly; the active part goes through the basic robust estimator."""
    name = 'tracking'
    def __init__(self, uni:Universe, k:int, sigma:float, rng, budget:int, # participations before deactivation
                 capacity:int|None=None, # most deactivated keys it can store (None: unlimited)
                 **kw):
        super().__init__(uni, k, sigma, rng, **kw)
        if budget < 1: raise ValueError(f"budget must be >= 1, got {budget}")
        self.budget, self.capacity = int(budget), capacity
        self.part = np.zeros(uni.n, np.int64); self.active = np.ones(uni.n, bool)
    def answer(self, masks) -> np.ndarray:
        out, step = [], max(1, self.budget // 4)        # counters advance in small steps: overshoot < budget/4
        for i in range(0, masks.shape[0], step):
            m = masks[i:i + step]
            out.append((m & ~self.active).sum(1) + self._robust(m & self.active))
            self.part += m.sum(0)
            self.active &= self.part < self.budget
        if self.capacity is not None and self.n_deactivated > self.capacity: self.exhausted = True
        return np.concatenate(out) if out else np.zeros(0)
    @property
    def n_deactivated(self) -> int: return int((~self.active).sum())

class PrivateMedianResponder:
    "The generic wrapper: `copies` independent bottom-k0 sketches; each answer is an ε-DP median (exponential mechanism) of their estimates."
    name = 'private_median'
    def __init__(self, uni:Universe, copies:int, k0:int, eps:float, rng, seed:int=0, grid_ratio:float=1.05):
        self.uni, self.copies, self.k0, self.eps, self.rng, self.exhausted = uni, int(copies), _check_k(k0), float(eps), rng, False
        R = np.stack([uniform_ranks(uni.keys, seed * 7919 + 1 + j) for j in range(self.copies)])
        self.orders = np.argsort(R, axis=1, kind='stable')
        self.u_sorted = np.take_along_axis(R, self.orders, axis=1)
        self.grid = grid_ratio ** np.arange(0, int(np.log(8 * uni.n) / np.log(grid_ratio)) + 1)
    def copy_estimates(self, masks) -> np.ndarray:
        "(queries, copies) estimates of every copy: (median of Gamma(k0)) / τ_k0, median-unbiased, since the wrapper takes a median."
        b, n = masks.shape
        L = min(n, 6 * self.k0 + 16)
        while True:
            cs = np.cumsum(masks[:, self.orders[:, :L]], axis=2, dtype=np.int32)   # (b, copies, L)
            tot = cs[:, :, -1]
            if L == n or (tot >= self.k0).all(): break
            L = min(n, 4 * L)
        pos = np.argmax(cs >= self.k0, axis=2)
        tau = np.take_along_axis(self.u_sorted[:, :L], pos.T, axis=1).T
        med = self.k0 - 1 / 3 + 8 / (405 * self.k0)            # ≈ median of Gamma(k0, 1): a median-unbiased copy estimate
        return np.where(tot >= self.k0, med / tau, tot)
    def answer(self, masks) -> np.ndarray:
        est = self.copy_estimates(masks)
        below = (est[:, :, None] <= self.grid[None, None, :]).sum(1)                   # (b, grid)
        util = -np.abs(below - self.copies / 2)                                         # sensitivity 1 per copy
        return self.grid[np.argmax(self.eps * util / 2 + self.rng.gumbel(size=util.shape), axis=1)]


# %%
uni = Universe(4000, seed=2); m = random_halves(np.random.default_rng(3), 200, 4000); true = m.sum(1)
k, sig = 64, 0.25 * 32
for R in [StandardResponder(uni, k), BasicRobustResponder(uni, k, sig, np.random.default_rng(0)),
          TrackingResponder(uni, k, sig, np.random.default_rng(0), budget=10**6),
          PrivateMedianResponder(uni, k, 4, 1.0, np.random.default_rng(0))]:
    err = np.abs(R.answer(m) / true - 1)
    print(f"{R.name:15s} honest mean |rel. err| {err.mean():.3f}")
    assert err.mean() < 0.35, (R.name, err.mean())
test_eq(BasicRobustResponder(uni, k, 1e-9, np.random.default_rng(0)).answer(uni.mask(np.arange(10)))[0] > 9.99, True)  # tiny set: τ = 1, exact
pm = PrivateMedianResponder(uni, 8, 16, 1.0, np.random.default_rng(0), seed=5)
test_close(pm.copy_estimates(m[:2])[:, 3] * 15 / (16 - 1/3 + 8 / (405 * 16)), [BottomK.from_keys(uni.keys[row], 16, seed=5 * 7919 + 4).estimate() for row in m[:2]], eps=1e-6)
# tracking: counters move on membership only; deactivated keys are counted exactly; no bias on honest queries
tr = TrackingResponder(uni, k, sig, np.random.default_rng(0), budget=50)
ans = tr.answer(m)
test_eq(tr.part, m.sum(0)); test_eq(tr.active, m.sum(0) < 50)
test_close(np.mean(ans[-50:] / true[-50:]), 1.0, eps=0.1)
test_eq(per_key_zcdp([0, 3, 8], 2.0), [0, 0.75, 2.0])


# %% [markdown]
# ## An adaptive attack in the spirit of AC24's Algorithm 4
#
# AC24's Algorithm 4 attacks *any* correct estimator with Õ(k²) queries by reducing it to a
# *soft-threshold* problem (answer 1 if |U| ≥ 2A, 0 if |U| ≤ A) and growing a *mask* M of keys that
# poison every later query. Our version (constants ours):
#
# - queries are M ∪ U, where U includes key x with probability min(1, q·w_x) (w = participation weights,
#   all 1 for the uniform pattern);
# - the attacker sees only the bit [estimate ≥ A]; keys are scored by the centred mean bit over the queries
#   that contain them; a key whose z-score exceeds 4.5 joins M;
# - q is adapted (Robbins–Monro on log q) so that about half the bits are 1 — as M fills with low-rank keys
#   the estimates rise, so U shrinks while the answers stay near A;
# - **failure**: the first batch whose *median* est/true leaves [1/2, 2] (or the responder is `exhausted`).
#   Queries-to-failure counts every query issued until then; a run that reaches the cap is *censored*.

# %%
#| export
def inclusion_weights(n:int, pattern:str, # 'uniform' or 'pareto'
                      rng, alpha:float|None=None) -> np.ndarray:
    "Per-key relative inclusion weights with mean 1: all ones, or Pareto(alpha) (classical, x_m = 1) normalised."
    if pattern == 'uniform': return np.ones(n)
    if pattern == 'pareto':
        if alpha is None or alpha <= 1: raise ValueError("pattern 'pareto' needs alpha > 1 (finite mean)")
        w = 1.0 + rng.pareto(alpha, size=n)
        return w / w.mean()
    raise ValueError(f"unknown pattern {pattern!r}; choose 'uniform' or 'pareto'")

def adaptive_attack(responder, # object with .answer(masks) and .exhausted
                    n:int, rng, *, weights=None, # per-key inclusion weights (mean 1)
                    A:float|None=None, # soft threshold (default n/4)
                    max_queries:int=10_000, batch:int=32, growth:float=0.05, z_thr:float=4.5,
                    fail_factor:float=2.0, eta:float=0.5, q_min:float=1e-4) -> dict:
    "Run the adaptive mask-growing attack until the responder fails or `max_queries` queries were asked."
    w = np.ones(n) if weights is None else np.asarray(weights, float)
    A = n / 4 if A is None else float(A)
    q = A / n
    M = np.zeros(n, bool); S = np.zeros(n); N = np.zeros(n); var_sum, var_cnt = 0.0, 0
    part = np.zeros(n, np.int64)
    t, hist, failed, reason = 0, [], False, 'survived'
    while t < max_queries:
        b = int(min(max(batch, growth * t), max_queries - t))
        p = np.clip(q * w, 0, 1).astype(np.float32)
        masks = (rng.random((b, n), dtype=np.float32) < p) | M
        est = np.asarray(responder.answer(masks), float)
        true = masks.sum(1)
        t += b; part += masks.sum(0)
        ratio = float(np.median(est / np.maximum(true, 1)))
        hist.append(dict(queries=t, ratio=ratio, mask=int(M.sum()), q=q, max_part=int(part.max())))
        if responder.exhausted: failed, reason = True, 'exhausted'; break
        if not (1 / fail_factor <= ratio <= fail_factor): failed, reason = True, 'wrong'; break
        y = (est >= A).astype(np.float64); yc = y - y.mean()
        var_sum += float((yc ** 2).sum()); var_cnt += b
        mf = masks.astype(np.float32)
        S += yc.astype(np.float32) @ mf; N += mf.sum(0)
        sd = math.sqrt(var_sum / var_cnt)
        if sd > 0: M |= (~M) & (S / (sd * np.sqrt(np.maximum(N, 1))) > z_thr)
        q = float(np.clip(q * math.exp(-eta * (y.mean() - 0.5)), q_min, 1.0))
    return dict(queries=t, failed=failed, reason=reason, mask=int(M.sum()), max_part=int(part.max()),
                mean_part=float(part.mean()), history=hist)


# %%
uni = Universe(1500, seed=3)
out = adaptive_attack(StandardResponder(uni, 16), uni.n, np.random.default_rng(0), max_queries=20_000, batch=8)
assert out['failed'] and out['reason'] == 'wrong' and out['mask'] > 0, out['reason']
test_close(inclusion_weights(1000, 'pareto', np.random.default_rng(0), 1.5).mean(), 1.0, eps=1e-9)
test_fail(lambda: inclusion_weights(10, 'zipf', None), contains="unknown pattern")
{key: out[key] for key in ('queries', 'reason', 'mask', 'max_part')}


# %% [markdown]
# ## The experiments
#
# 1. **AC24 Figure analogue.** Algorithm 1 against bottom-k (standard estimator) and datasketch's HLL++
#    (k = 2^p registers): est/true of prefixes and suffixes of the score order after 4k, 16k and 64k queries.
# 2. **Queries-to-failure vs k.** The adaptive attack against the standard estimator, the private-median
#    wrapper (k copies of bottom-k₀) and the two reconstructed robust estimators; log–log slopes.
# 3. **CSS25's claim: Uniform vs Pareto participation.** The same attack with a smaller query size
#    (`query_frac` of the ground set) and inclusion weights that are uniform or Pareto(α); queries survived by
#    each estimator and its ratio to the standard estimator's.

# %%
#| export
def _geo(x): x = np.asarray(x, float); return float(np.exp(np.mean(np.log(x))))

def experiment1(cfg:Config, progress:bool=True):
    "AC24 Algorithm 1 against bottom-k and HLL++: (rows per k, seed, r, oracle, fraction), honest errors."
    import pandas as pd
    from tqdm.auto import tqdm
    rows, honest = [], []
    jobs = [(k, s) for k in cfg.ks for s in range(cfg.n_seeds)]
    for k, s in tqdm(jobs, desc="exp1: Algorithm 1", disable=not progress):
        uni = Universe(cfg.n, derive_seed(cfg.seed, 'exp1-hash', k, s))
        std = StandardResponder(uni, k)
        oracles = {'bottom-k': std.answer}
        if cfg.hll: hll = HLLPPOracle(uni, int(math.log2(k)), seed=derive_seed(cfg.seed, 'exp1-hll', k, s)); oracles['hll++'] = hll.answer
        res, resp, sizes = algorithm1(oracles, uni.n, [mlt * k for mlt in cfg.query_mults], np.random.default_rng(derive_seed(cfg.seed, 'exp1-q', k, s)))
        for name in oracles:
            honest.append(dict(k=k, seed=s, oracle=name, honest_err=float(np.mean(np.abs(resp[name] / sizes - 1)))))
        for r, scores in res.items():
            for name, f in oracles.items():
                for row in prefix_suffix_ratios(scores[name], lambda idx: f(uni.mask(idx))[0], cfg.fractions):
                    rows.append(dict(k=k, seed=s, queries=r, mult=r // k, oracle=name, **row))
    return pd.DataFrame(rows), pd.DataFrame(honest)

def _responders(name:str, uni:Universe, k:int, cfg:Config, rng, seed:int):
    sigma = cfg.noise_eps * k / 2
    if name == 'standard': return StandardResponder(uni, k)
    if name == 'private_median': return PrivateMedianResponder(uni, k, cfg.wrapper_k0, cfg.wrapper_eps, rng, seed=seed)
    if name == 'basic': return BasicRobustResponder(uni, k, sigma, rng)
    if name == 'tracking': return TrackingResponder(uni, k, sigma, rng, budget=max(1, int(cfg.budget_mult * sigma**2)),
                                                    capacity=int(cfg.track_capacity * uni.n))
    raise ValueError(name)

def experiment2(cfg:Config, estimators=('standard', 'private_median', 'basic', 'tracking'), progress:bool=True):
    "Queries-to-failure of the adaptive attack against each estimator, for every k in cfg.ks_adaptive."
    import pandas as pd
    from tqdm.auto import tqdm
    rows = []
    jobs = [(k, s, e) for k in cfg.ks_adaptive for s in range(cfg.n_adaptive_seeds) for e in estimators]
    for k, s, e in tqdm(jobs, desc="exp2: queries-to-failure", disable=not progress):
        hs = derive_seed(cfg.seed, 'exp2-hash', k, s)
        uni = Universe(cfg.n_adaptive, hs)
        R = _responders(e, uni, k, cfg, np.random.default_rng(derive_seed(cfg.seed, 'exp2-noise', k, s, e)), hs)
        cap = int(cfg.cap_mult * k * k)
        t0 = time.perf_counter()
        out = adaptive_attack(R, uni.n, np.random.default_rng(derive_seed(cfg.seed, 'exp2-attack', k, s)),
                              max_queries=cap, batch=max(8, k // 2))
        rows.append(dict(k=k, seed=s, estimator=e, queries=out['queries'], censored=not out['failed'], reason=out['reason'],
                         cap=cap, mask=out['mask'], max_part=out['max_part'], seconds=time.perf_counter() - t0))
    return pd.DataFrame(rows)

def fit_slopes(df):
    "Least-squares slope of log(queries-to-failure) on log(k) per estimator (geometric mean over seeds)."
    import pandas as pd
    rows = []
    for e, g in df.groupby('estimator', sort=False):
        agg = g.groupby('k').agg(q=('queries', _geo), censored=('censored', 'mean')).reset_index()
        slope = float(np.polyfit(np.log(agg.k), np.log(agg.q), 1)[0])
        rows.append(dict(estimator=e, slope=slope, censored_frac=float(g.censored.mean()),
                         **{f"k={k}": q for k, q in zip(agg.k, agg.q)}))
    return pd.DataFrame(rows)

def experiment3(cfg:Config, estimators=('standard', 'basic', 'tracking'), progress:bool=True):
    "The adaptive attack under uniform and Pareto participation weights (smaller queries: cfg.query_frac)."
    import pandas as pd
    from tqdm.auto import tqdm
    k = cfg.k_skew; sigma = cfg.noise_eps * k / 2; budget = max(1, int(cfg.budget_mult * sigma**2))
    patterns = [('uniform', None)] + [('pareto', a) for a in cfg.pareto_alphas]
    rows = []
    jobs = [(p, a, s, e) for p, a in patterns for s in range(cfg.n_adaptive_seeds) for e in estimators]
    for p, a, s, e in tqdm(jobs, desc="exp3: participation patterns", disable=not progress):
        hs = derive_seed(cfg.seed, 'exp3-hash', s)
        uni = Universe(cfg.n_adaptive, hs)
        w = inclusion_weights(uni.n, p, np.random.default_rng(derive_seed(cfg.seed, 'exp3-w', s, p, str(a))), a)
        R = _responders(e, uni, k, cfg, np.random.default_rng(derive_seed(cfg.seed, 'exp3-noise', s, p, str(a), e)), hs)
        out = adaptive_attack(R, uni.n, np.random.default_rng(derive_seed(cfg.seed, 'exp3-attack', s, p, str(a))), weights=w,
                              A=cfg.query_frac * uni.n, max_queries=int(cfg.skew_cap_mult * k * k), batch=max(8, k // 2))
        over = [h['queries'] for h in out['history'] if h['max_part'] > budget]
        rows.append(dict(pattern=p if a is None else f"pareto({a:g})", seed=s, estimator=e, queries=out['queries'],
                         censored=not out['failed'], reason=out['reason'], mask=out['mask'], max_part=out['max_part'],
                         mean_part=out['mean_part'], budget=budget, queries_within_budget=over[0] if over else out['queries'],
                         deactivated=getattr(R, 'n_deactivated', 0)))
    return pd.DataFrame(rows)

def skew_summary(df):
    "Per pattern: geometric-mean queries survived per estimator and the ratio to the standard estimator."
    t = df.groupby(['pattern', 'estimator'], sort=False).queries.apply(_geo).unstack()
    for e in t.columns:
        if e != 'standard': t[f"{e}/standard"] = t[e] / t['standard']
    return t.reset_index()


# %% [markdown]
# ## Verdict rules
#
# The headline claim is CSS25's (the last graded rule). Written before looking at the `cpu` numbers and applied mechanically:
#
# - **AC24 Algorithm 1 vs bottom-k**: *reproduced* if at r = 4k the top-5 % prefix is over-estimated by ≥ 1.5×
#   and the bottom-10 % suffix is under-estimated (< 1) for every k (mean over seeds); *partially* if for some k.
# - **AC24 vs HLL++ (~40 % error at 4k queries)**: error = max(prefix₅ − 1, 1 − suffix₁₀) at r = 4k;
#   *reproduced* if ≥ 0.2 for every k, *partially* if for some k.
# - **Scaling (standard ∝ k, generic wrapper ∝ k²)**: *reproduced* if the standard estimator's slope is ≤ 1.5 and
#   the wrapper's is ≥ 1.5 (a run censored at the cap counts at the cap, a lower bound) and the wrapper
#   survives longer at every k; *partially* if only the ordering holds; else *not reproduced*.
# - **CSS25 Uniform vs Pareto**: for each pattern take the best robust/standard ratio of queries survived;
#   *reproduced* if it is ≥ 10 under every Pareto pattern and at least twice the uniform ratio; *partially* if
#   robust > standard under every pattern and every Pareto ratio exceeds the uniform one; else *not reproduced*.

# %%
#| export
def _mean_at(d, oracle:str, frac:float, col:str):
    "Mean over seeds of `col` for `oracle` at score fraction `frac`, per k."
    g = d[(d.oracle == oracle) & np.isclose(d.fraction, frac)]
    return g.groupby('k')[col].mean()

def _claim_algorithm1(ex1, cfg:Config) -> Verdict:
    "AC24 Algorithm 1 vs bottom-k: prefix >= 1.5x and suffix < 1 at the smallest r for every k (partially: some k)."
    at4, big = ex1[ex1.mult == min(cfg.query_mults)], ex1[ex1.mult == max(cfg.query_mults)]
    p5, s10 = _mean_at(at4, 'bottom-k', 0.05, 'prefix'), _mean_at(at4, 'bottom-k', 0.1, 'suffix')
    p5_big = _mean_at(big, 'bottom-k', 0.05, 'prefix')
    ok = (p5 >= 1.5) & (s10 < 1.0)
    return judge(
        "AC24: a single batch of O(k) random queries (Algorithm 1) makes the standard bottom-k estimator over-estimate prefixes and under-estimate suffixes of the score order",
        "O(k) queries suffice; research prototype (k=64): top-5% prefix ~2x at 4k queries, ~20x at 64k",
        f"top-5% prefix at {min(cfg.query_mults)}k: " + ", ".join(f"k={k}: {v:.2f}x" for k, v in p5.items())
        + f"; at {max(cfg.query_mults)}k: " + ", ".join(f"k={k}: {v:.1f}x" for k, v in p5_big.items())
        + "; bottom-10% suffix at 4k: " + ", ".join(f"{v:.2f}" for v in s10.values),
        reproduced=bool(ok.all()), partially=bool(ok.any()),
        rule_text=f"reproduced if, at r = {min(cfg.query_mults)}k, the top-5% prefix estimate is >= 1.5x and the bottom-10% suffix < 1x "
                  "(means over seeds) for every k; partially if for some k",
        reason=f"holds for {int(ok.sum())}/{len(ok)} k values (n={cfg.n}, {cfg.n_seeds} seeds)")

def _claim_hll(ex1, cfg:Config) -> Verdict:
    "AC24 vs HLL++: error max(prefix5 - 1, 1 - suffix10) >= 0.2 at the smallest r for every k (partially: some k)."
    at4 = ex1[ex1.mult == min(cfg.query_mults)]
    if not (cfg.hll and (at4.oracle == 'hll++').any()):
        return judge("AC24: ~40% error on HyperLogLog++ with 4k queries", "~40% at 4k queries", "not run (hll=False)",
                     verdict='not_testable_offline', reason="HLL++ part disabled")
    err = np.maximum(_mean_at(at4, 'hll++', 0.05, 'prefix') - 1, 1 - _mean_at(at4, 'hll++', 0.1, 'suffix'))
    ok = err >= 0.2
    return judge(
        "AC24: the same attack with 4k queries gives large errors on HyperLogLog++ (prefixes/suffixes mis-estimated by about 40%)",
        "~40% error at 4k queries, k = 2^6 ... 2^11 registers",
        "max(prefix5-1, 1-suffix10) at 4k: " + ", ".join(f"k={k}: {v:.2f}" for k, v in err.items()),
        reproduced=bool(ok.all()), partially=bool(ok.any()),
        rule_text=f"reproduced if the error max(prefix5 - 1, 1 - suffix10) at r = {min(cfg.query_mults)}k is >= 0.2 for every k; partially if for some k",
        reason=f"datasketch HyperLogLogPlusPlus with our 64-bit hash, n={cfg.n}; our ground set and prefix sizes differ from AC24's, so the size of the error differs")

def _claim_scaling(ex2_slopes, ex2, cfg:Config) -> Verdict:
    "Standard slope <= 1.5, wrapper slope >= 1.5 and wrapper longer at every k (partially: only the ordering)."
    sl = ex2_slopes.set_index('estimator')
    geo = ex2.groupby(['estimator', 'k']).queries.apply(_geo).unstack(0)
    s_std, s_med = sl.loc['standard', 'slope'], sl.loc['private_median', 'slope']
    longer = bool((geo['private_median'] > geo['standard']).all())
    robust_longer = {e: bool((geo[e] > geo['standard']).all()) for e in ('basic', 'tracking') if e in geo}
    return judge(
        "AC24/Hassidim: under adaptive queries the standard estimator fails after ~k queries, while the generic private-median wrapper survives ~k^2",
        "O(k) for standard estimators (Algorithm 1); Theta~(k^2) generic upper/lower bound",
        f"log-log slopes of queries-to-failure: " + ", ".join(f"{e} {r.slope:.2f}" + (f" ({r.censored_frac:.0%} censored)" if r.censored_frac else "") for e, r in sl.iterrows()),
        reproduced=bool(s_std <= 1.5 and s_med >= 1.5 and longer), partially=longer,
        rule_text="reproduced if the standard estimator's log-log slope of queries-to-failure on k is <= 1.5, the wrapper's >= 1.5 (a censored run "
                  "counts at the cap) and the wrapper survives longer at every k; partially if only the wrapper survives longer at every k",
        reason=f"our adaptive attack (1-bit answers, mask growth) is slower than Algorithm 1 against the standard estimator; robust estimators longer "
               f"than standard at every k: {robust_longer}; k in {list(cfg.ks_adaptive)}, n={cfg.n_adaptive}, cap {cfg.cap_mult:g}k^2")

def _claim_participation(ex3_summary, cfg:Config) -> Verdict:
    "CSS25 (headline): best robust/standard ratio >= 10 and >= 2x uniform under every Pareto pattern (partially: > 1 everywhere, Pareto > uniform)."
    s3 = ex3_summary.set_index('pattern')
    best = s3[[c for c in s3.columns if c.endswith('/standard')]].max(axis=1)
    par = [p for p in best.index if p.startswith('pareto')]
    uni_r = float(best.get('uniform', np.nan))
    rep = all(best[p] >= 10 and best[p] >= 2 * uni_r for p in par)
    part = all(best[p] > 1 for p in best.index) and all(best[p] > uni_r for p in par)
    return judge(
        "CSS25: robust estimators with per-key participation accounting survive far more total adaptive queries than the standard estimator when participation is skewed (Pareto) rather than uniform",
        "simulations with Uniform and Pareto query patterns: up to ~100x more queries survived",
        "best robust/standard ratio: " + ", ".join(f"{p}: {best[p]:.1f}x" for p in best.index),
        reproduced=bool(rep), partially=bool(part),
        rule_text="reproduced if the best robust/standard ratio of queries survived is >= 10x under every Pareto pattern and >= 2x the uniform ratio; "
                  "partially if it is > 1 under every pattern and every Pareto ratio exceeds the uniform one",
        reason=f"robust estimators are our reconstruction, k={cfg.k_skew}, n={cfg.n_adaptive}, query size {cfg.query_frac:g}n", headline=True)

def verdicts(ex1, ex2_slopes, ex2, ex3_summary, cfg:Config) -> list[Verdict]:
    "Verdicts from the measured tables, one claim at a time, by the rules stated above."
    return [_claim_algorithm1(ex1, cfg), _claim_hll(ex1, cfg), _claim_scaling(ex2_slopes, ex2, cfg), _claim_participation(ex3_summary, cfg),
            judge("CSS25: accuracy for an exponential number of adaptive queries when every key participates in at most r = O~(k^2) of them",
                  "theorem (exponential t)", "only polynomially many queries can be simulated", verdict='not_testable_offline',
                  reason="an exponential number of queries cannot be run; the estimators are reconstructed without the paper's text")]


# %% [markdown]
# The rules on crafted tables with known answers (at, above and below each threshold, and effects in the
# opposite direction of the claim):

# %%
import pandas as pd

# %%
_cf = Config.from_params("smoke")          # query_mults (4, 16), ks (32, 64)
def _ex1(p5, s10, oracle='bottom-k'):
    "Crafted experiment-1 rows: prefix at 5% and suffix at 10% per k (r = 4k; r = 16k copies them)."
    return pd.DataFrame([dict(k=k, seed=0, mult=m, oracle=oracle, fraction=f, prefix=p if f == 0.05 else 1.0, suffix=s if f == 0.1 else 1.0)
                         for (k, p, s) in zip((32, 64), p5, s10) for m in (4, 16) for f in (0.05, 0.1)])
test_eq([_claim_algorithm1(_ex1(p, s), _cf).verdict for p, s in [((2.0, 1.5), (0.5, 0.9)), ((2.0, 1.49), (0.5, 0.9)), ((2.0, 2.0), (0.5, 1.0)),
                                                                 ((1.4, 1.0), (0.5, 0.9)), ((0.5, 0.5), (1.5, 1.5))]],
        ['reproduced', 'partially', 'partially', 'not_reproduced', 'not_reproduced'])   # last: the opposite direction
_H = lambda p, s: _claim_hll(_ex1(p, s, 'hll++'), _cf).verdict
test_eq([_H((1.25, 1.0), (1.0, 0.75)), _H((1.25, 1.1), (1.0, 1.0)), _H((1.1, 1.1), (1.0, 0.9)), _H((0.9, 0.8), (1.0, 1.0))],
        ['reproduced', 'partially', 'not_reproduced', 'not_reproduced'])   # errors (0.25, 0.25), (0.25, 0.1), (0.1, 0.1), (0, 0)
test_eq(_claim_hll(_ex1((2, 2), (0.5, 0.5)), _cf).verdict, 'not_testable_offline')          # no HLL++ rows
def _ex2(q_std, q_med):
    rows = [dict(estimator=e, k=k, seed=0, queries=float(q), censored=False) for e, qs in (('standard', q_std), ('private_median', q_med))
            for k, q in zip((16, 32), qs)]
    df = pd.DataFrame(rows); return fit_slopes(df), df
_S = lambda a, b: _claim_scaling(*_ex2(a, b), _cf).verdict
test_eq(_S((16, 32), (256, 1024)), 'reproduced')                    # slopes 1 and 2
test_eq(_S((16, 64), (256, 1024)), 'partially')                     # standard slope 2 > 1.5
test_eq(_S((16, 32), (256, 512)), 'partially')                      # wrapper slope 1 < 1.5
test_eq(_S((16, 32), (16, 64)), 'not_reproduced')                   # not longer at k = 16 (equal)
test_eq(_S((256, 1024), (16, 32)), 'not_reproduced')                # the opposite order
def _ex3(uniform, pareto):
    return pd.DataFrame(dict(pattern=['uniform', 'pareto(1.2)'], standard=[100., 100.], basic=[100. * uniform, 100. * pareto],
                             **{'basic/standard': [uniform, pareto]}))
_P = lambda u, p: _claim_participation(_ex3(u, p), _cf)
test_eq([_P(2, 10).verdict, _P(2, 9.9).verdict, _P(6, 10).verdict, _P(1.0, 3).verdict, _P(2, 2).verdict, _P(0.5, 0.3).verdict],
        ['reproduced', 'partially', 'partially', 'not_reproduced', 'not_reproduced', 'not_reproduced'])
assert _P(2, 10).headline and not _claim_algorithm1(_ex1((2, 2), (0.5, 0.5)), _cf).headline


# %%
#| export
def _slug(s:str) -> str:
    "A metric-key fragment: lowercase snake_case ('hll++' -> 'hllpp', 'pareto(1.2)' -> 'pareto_1_2')."
    import re
    return re.sub(r'[^a-z0-9]+', '_', str(s).lower().replace('++', 'pp')).strip('_')

def _figures(ex1, ex2, ex3s, cfg):
    import matplotlib.pyplot as plt, seaborn as sns
    figs = {}
    oracles = list(dict.fromkeys(ex1.oracle))
    fig, axes = plt.subplots(1, len(oracles), figsize=(5.5 * len(oracles), 4), squeeze=False)
    for ax, o in zip(axes[0], oracles):
        d = ex1[(ex1.oracle == o)]
        for frac, col, ls in ((0.05, 'prefix', '-'), (0.1, 'suffix', '--')):
            g = d[np.isclose(d.fraction, frac)].groupby(['k', 'mult'])[col].mean().reset_index()
            for i, (k, gk) in enumerate(g.groupby('k')):
                ax.plot(gk.mult, gk[col], ls, marker='o', color=f"C{i}", label=f"k={k} {'top-5% prefix' if col == 'prefix' else 'bottom-10% suffix'}")
        ax.axhline(1, color='grey', lw=0.8); ax.set_xscale('log', base=2); ax.set_yscale('log')
        ax.set_xlabel('queries / k'); ax.set_ylabel('estimate / true size'); ax.set_title(f"Algorithm 1 vs {o}")
    axes[0][0].legend(fontsize=7, ncol=2)
    fig.tight_layout(); figs['exp1_prefix_suffix'] = fig
    fig, ax = plt.subplots(figsize=(6, 4.2))
    for i, (e, g) in enumerate(ex2.groupby('estimator', sort=False)):
        agg = g.groupby('k').agg(q=('queries', _geo), c=('censored', 'all')).reset_index()
        ax.plot(agg.k, agg.q, '-', color=f"C{i}", label=e)
        ax.scatter(agg.k, agg.q, color=f"C{i}", facecolors=np.where(agg.c, 'none', f"C{i}"), zorder=3)
    ks = np.array(sorted(set(ex2.k)))
    ax.plot(ks, cfg.cap_mult * ks**2, ':', color='grey', label='query cap (censoring)')
    ax.set_xscale('log', base=2); ax.set_yscale('log'); ax.set_xlabel('sketch size k'); ax.set_ylabel('queries to failure')
    ax.set_title('Adaptive attack: queries to failure (hollow = survived the cap)'); ax.legend(fontsize=8)
    fig.tight_layout(); figs['exp2_queries_to_failure'] = fig
    fig, ax = plt.subplots(figsize=(6.5, 4))
    long = ex3s.melt(id_vars='pattern', value_vars=[c for c in ('standard', 'basic', 'tracking') if c in ex3s], var_name='estimator', value_name='queries')
    sns.barplot(data=long, x='pattern', y='queries', hue='estimator', ax=ax)
    ax.set_yscale('log'); ax.set_ylabel('queries survived (geo. mean)'); ax.set_title(f'Participation patterns, k={cfg.k_skew}')
    fig.tight_layout(); figs['exp3_patterns'] = fig
    for f in figs.values(): plt.close(f)
    return figs

def run(cfg:Config, progress:bool=True) -> Result:
    "Run the benchmark and the three experiments; return tables, figures, metrics and verdicts."
    _require_datasketch()
    T = {}; t0 = time.perf_counter()
    tp = throughput(128, cfg.bench_items, repeats=3); T['throughput'] = time.perf_counter() - t0
    t = time.perf_counter(); ex1, ex1_honest = experiment1(cfg, progress); T['exp1'] = time.perf_counter() - t
    t = time.perf_counter(); ex2 = experiment2(cfg, progress=progress); T['exp2'] = time.perf_counter() - t
    slopes = fit_slopes(ex2)
    t = time.perf_counter(); ex3 = experiment3(cfg, progress=progress); T['exp3'] = time.perf_counter() - t
    ex3s = skew_summary(ex3)
    vs = verdicts(ex1, slopes, ex2, ex3s, cfg)
    piv = ex1[np.isclose(ex1.fraction, 0.05) | np.isclose(ex1.fraction, 0.1)].groupby(['oracle', 'k', 'mult', 'fraction'])[['prefix', 'suffix']].mean().reset_index()
    metrics = {f"throughput/ratio_{_slug(r.ours)}_vs_{_slug(r.datasketch)}": float(r.ratio) for r in tp.itertuples()}
    for r in piv.itertuples():
        if math.isclose(r.fraction, 0.05): metrics[f"exp1/{_slug(r.oracle)}_k{r.k}_r{r.mult}k_prefix5"] = float(r.prefix)
        else: metrics[f"exp1/{_slug(r.oracle)}_k{r.k}_r{r.mult}k_suffix10"] = float(r.suffix)
    for r in slopes.itertuples(): metrics[f"exp2/slope_{r.estimator}"] = float(r.slope)
    for _, r in ex3s.iterrows():
        for c, v in r.items():
            if c != 'pattern': metrics[f"exp3/{_slug(r['pattern'])}_{_slug(c.replace('/', '_over_'))}"] = float(v)
    tables = dict(throughput=tp, exp1=ex1, exp1_summary=piv, exp1_honest=ex1_honest, exp2=ex2, exp2_slopes=slopes, exp3=ex3, exp3_summary=ex3s)
    return Result(paper='robust_sketches', config=cfg.to_dict(), metrics=metrics, verdicts=vs, tables=tables,
                  figures=_figures(ex1, ex2, ex3s, cfg), timings={f"{k}_seconds": round(v, 3) for k, v in T.items()})


# %% [markdown]
# ## The experiment

# %%
result = run_experiment(run, cfg)

# %% [markdown]
# ### Update throughput against datasketch (equal k = 128)
#
# `ratio` = datasketch's time / ours (> 1: ours is faster).

# %%
display(result.tables['throughput'].round(2))

# %% [markdown]
# ### Experiment 1 — Algorithm 1 against bottom-k and HyperLogLog++
#
# Mean over seeds of est/true for the top-5 % prefix and the bottom-10 % suffix of the score order; the
# honest answers (the attack's own random halves) stay accurate throughout.

# %%
s = result.tables['exp1_summary']
display(s.pivot_table(index=['oracle', 'k'], columns=['mult', 'fraction'], values=['prefix', 'suffix']).round(2))
display(result.tables['exp1_honest'].groupby(['oracle', 'k']).honest_err.mean().round(3).to_frame('honest mean |rel. err|'))
result.figures['exp1_prefix_suffix']

# %% [markdown]
# ### Experiment 2 — queries to failure against k

# %%
display(result.tables['exp2'].drop(columns=['seconds']))
display(result.tables['exp2_slopes'].round(2))
result.figures['exp2_queries_to_failure']

# %% [markdown]
# ### Experiment 3 — Uniform vs Pareto participation
#
# `queries_within_budget` is the guarantee view: the first batch at which some key exceeded the tracking
# budget r (for the basic estimator, the point where its per-key accounting is spent); `deactivated` is the
# number of keys the tracking estimator had to count exactly.

# %%
display(result.tables['exp3'])
display(result.tables['exp3_summary'].round(2))
result.figures['exp3_patterns']

# %% [markdown]
# ## Paper vs. us

# %%
result.verdict_table()

# %% [markdown]
# The table above is computed from this run's numbers by the rules stated before the experiments. Reading it:
#
# - **AC24's attack is real and cheap.** One batch of a few·k random queries suffices to find keys whose inclusion
#   inflates the standard bottom-k estimate, and HyperLogLog++ (datasketch's own estimator) is fooled by the same
#   post-processing; the honest answers to the attack's own queries stay accurate, so nothing looks wrong to the
#   sketch's owner. Our bottom-k effect is far larger than AC24's ~40 % on HLL++ because a bottom-k prefix
#   collects the globally lowest ranks.
# - **Queries-to-failure.** Our adaptive attack sees only 1-bit soft-threshold answers, so against the standard
#   estimator it is slower than Algorithm 1 (its slope sits between 1 and 2); the private-median wrapper, with
#   k copies (more space), survives up to the k² cap. Compare slopes and the censoring column, not single numbers.
# - **CSS25 (reconstruction).** Our basic robust estimator survives longer than the standard one, and its
#   advantage grows under Pareto participation, but by small factors, not ~100×; our tracking estimator
#   exhausts its capacity for deactivated keys early under this attack, because the attack makes every key
#   participate. Whether the paper's mechanisms (which we could not read) or its workloads (likely lighter,
#   non-adversarial participation) explain the gap is open: a verdict of *partially* here says more about our
#   reconstruction than about the paper.
# - The `cpu` profile scales experiments 2-3 down (n = 5,000, k ≤ 128); see the callout at the top.
