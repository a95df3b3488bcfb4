"Property tests for trustlib.sketches.cardinality: sketches, merges, attacks, robust estimators."
import numpy as np
import pytest

from trustlib.config import ConfigError
from trustlib.sketches.cardinality import (
    BottomK, KMins, KPartition, Universe, StandardResponder, BasicRobustResponder, TrackingResponder,
    PrivateMedianResponder, HLLPPOracle, Config, algorithm1, prefix_suffix_ratios, random_halves, adaptive_attack,
    per_key_zcdp, hash64, uniform_ranks, key_ids, experiment1, inclusion_weights, selection_grid, threshold_distribution,
    old_threshold_distribution, neighbour_privacy_loss, query_renyi, query_zcdp, rotating_attack)


def _random_sets(n_sets, size, seed):
    rng = np.random.default_rng(seed)
    return [rng.choice(10**9, size, replace=False) for _ in range(n_sets)]


# --- accuracy and unbiasedness -------------------------------------------------------------------

@pytest.mark.parametrize("k", [16, 64])
def test_bottomk_unbiased_and_error_about_one_over_sqrt_k(k):
    size = 4000
    est = np.array([BottomK.from_keys(s, k, seed=i).estimate() for i, s in enumerate(_random_sets(300, size, k))])
    se = est.std() / np.sqrt(len(est))
    assert abs(est.mean() - size) < 3 * se
    mre = np.abs(est / size - 1).mean()
    expected = np.sqrt(2 / np.pi) / np.sqrt(k - 2)          # mean |N(0, 1/(k-2))|
    assert abs(mre - expected) < 0.3 * expected
    assert abs(mre - 1 / np.sqrt(k)) < 0.3 / np.sqrt(k) + 0.02


@pytest.mark.parametrize("cls", [KMins, KPartition])
def test_kmins_kpartition_unbiased(cls):
    est = np.array([cls.from_keys(s, 64, seed=i).estimate() for i, s in enumerate(_random_sets(150, 4000, 3))])
    assert abs(est.mean() - 4000) < 3 * est.std() / np.sqrt(len(est))


# --- composability -------------------------------------------------------------------------------

@pytest.mark.parametrize("cls", [BottomK, KMins, KPartition])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_union_of_sketches_equals_sketch_of_union(cls, seed):
    rng = np.random.default_rng(seed)
    a = rng.choice(10**6, rng.integers(1, 5000), replace=False)
    b = rng.choice(10**6, rng.integers(1, 5000), replace=False)      # overlaps with a are likely
    merged, direct = cls.from_keys(a, 32, seed) | cls.from_keys(b, 32, seed), cls.from_keys(np.concatenate([a, b]), 32, seed)
    assert merged.estimate() == direct.estimate()
    if cls is BottomK:
        assert merged == direct and np.array_equal(merged.ranks, direct.ranks)
    else:
        assert np.array_equal(getattr(merged, 'hmin', getattr(merged, 'mins', None)), getattr(direct, 'hmin', getattr(direct, 'mins', None)))


def test_incremental_updates_equal_one_update():
    keys = np.arange(10_000)
    sk = BottomK(64)
    for part in np.array_split(keys, 7): sk.update(part)
    assert sk == BottomK.from_keys(keys, 64)


def test_merge_rejects_incompatible_sketches():
    with pytest.raises(ValueError, match="different"): BottomK.from_keys([1, 2], 8) | BottomK.from_keys([1, 2], 8, seed=1)
    with pytest.raises(ValueError, match="different"): BottomK.from_keys([1, 2], 8) | BottomK.from_keys([1, 2], 16)
    with pytest.raises(TypeError): BottomK(8) | KMins(8)
    with pytest.raises(ValueError): KMins(8) | KMins(16)
    with pytest.raises(ValueError): KPartition(8) | KPartition(8, seed=3)


# --- invalid input, empty sets, duplicates -------------------------------------------------------

@pytest.mark.parametrize("cls", [BottomK, KMins, KPartition])
def test_invalid_k(cls):
    for bad in (0, 1, -5):
        with pytest.raises(ValueError, match="k must be >= 2"): cls(bad)
    for bad in (2.5, "64", True, None):
        with pytest.raises(TypeError, match="k must be an int"): cls(bad)


@pytest.mark.parametrize("cls", [BottomK, KMins, KPartition])
def test_empty_sets_and_duplicates(cls):
    assert cls(16).estimate() == 0.0
    assert cls.from_keys([], 16).estimate() == 0.0
    assert cls.from_keys(np.array([], dtype=np.int64), 16).update([]).estimate() == 0.0
    keys = np.arange(3000)
    assert cls.from_keys(np.concatenate([keys, keys, keys[::-1]]), 16).estimate() == cls.from_keys(keys, 16).estimate()


def test_bottomk_small_sets_are_exact_and_duplicates_ignored():
    assert BottomK.from_keys([5, 5, 5, 9], 8).estimate() == 2.0
    assert len(BottomK.from_keys(np.arange(100), 8)) == 8
    with pytest.raises(TypeError, match="integer ids"): BottomK.from_keys(["a", "b"], 8)
    with pytest.raises(TypeError, match="integer ids"): BottomK.from_keys([0.5], 8)
    assert BottomK.from_keys(key_ids(["a", "b", "a"]), 8).estimate() == 2.0


def test_hash_is_a_seeded_bijection():
    h = hash64(np.arange(100_000), 7)
    assert len(np.unique(h)) == 100_000
    assert not np.array_equal(h, hash64(np.arange(100_000), 8))
    u = uniform_ranks(np.arange(100_000), 7)
    assert 0 < u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.01


# --- cross-checks with datasketch ----------------------------------------------------------------

def test_kmins_agrees_with_datasketch_minhash_count():
    datasketch = pytest.importorskip("datasketch")
    km = KMins.from_keys(np.arange(5000), 128, seed=3)
    mh = datasketch.MinHash(num_perm=128, scheme='affine32', hashvalues=np.minimum(km.mins * 2**32, 2**32 - 1).astype(np.uint32))
    assert abs(mh.count() / km.estimate_datasketch() - 1) < 1e-6   # uint32 rounding of the minima
    assert abs(km.estimate() / km.estimate_datasketch() - 1) < 0.1   # different formulas, same sketch


def test_hll_registers_match_datasketch_update():
    datasketch = pytest.importorskip("datasketch")
    uni = Universe(2000, seed=5)
    o = HLLPPOracle(uni, 5, seed=2)
    m = random_halves(np.random.default_rng(0), 3, uni.n)
    for row in m:
        ref = datasketch.HyperLogLogPlusPlus(p=5, hashfunc=int)
        for x in o.hashes[row]: ref.update(int(x))
        assert np.array_equal(o.registers(row[None])[0], ref.reg)
        assert o.answer(row[None])[0] == ref.count()


def test_rank_domain_responder_equals_real_sketches():
    uni = Universe(3000, seed=9)
    m = random_halves(np.random.default_rng(1), 20, uni.n)
    got = StandardResponder(uni, 32).answer(m)
    want = [BottomK.from_keys(uni.keys[row], 32, seed=9).estimate() for row in m]
    assert np.allclose(got, want)


# --- the attack ----------------------------------------------------------------------------------

def test_algorithm1_overestimates_a_prefix_at_4k_queries():
    k, uni = 64, Universe(20_000, seed=0)
    std = StandardResponder(uni, k)
    scores, resp, sizes = algorithm1({'bk': std.answer}, uni.n, [4 * k], np.random.default_rng(0))
    rows = prefix_suffix_ratios(scores[4 * k]['bk'], lambda idx: std.answer(uni.mask(idx))[0], [0.05, 0.1])
    assert rows[0]['prefix'] > 1.5
    assert rows[1]['suffix'] < 1.0
    assert np.abs(resp['bk'] / sizes - 1).mean() < 0.2       # the attack's own (honest) queries stay accurate


# --- robust estimators (reconstruction) ----------------------------------------------------------

def test_tracking_counts_participation_on_membership_and_deactivated_keys_exactly():
    m = random_halves(np.random.default_rng(4), 120, 3000)
    actives = []
    for rank_seed in (1, 2):                       # different ranks, same queries
        uni = Universe(3000, seed=rank_seed)
        tr = TrackingResponder(uni, 64, 8.0, np.random.default_rng(0), budget=40)
        ans = tr.answer(m)
        assert np.array_equal(tr.part, m.sum(0))
        actives.append(tr.active.copy())
    # bias guard: deactivation depends on membership only, never on the ranks
    assert np.array_equal(actives[0], actives[1]) and np.array_equal(actives[0], m.sum(0) <= 40)
    # every key has spent its budget -> later answers are exact counts, and only keys seen again are stored
    uni = Universe(3000, seed=1)
    tr = TrackingResponder(uni, 64, 8.0, np.random.default_rng(0), budget=1)
    tr.answer(np.ones((1, 3000), bool))
    assert tr.n_deactivated == 0 and (tr.spent == 1).all()
    assert np.array_equal(tr.answer(m[:10]), m[:10].sum(1))
    assert tr.n_deactivated == int(m[:10].any(0).sum()) and tr.spent.max() == 1


def test_robust_estimators_honest_accuracy():
    uni = Universe(4000, seed=2)
    m = random_halves(np.random.default_rng(3), 300, uni.n); true = m.sum(1)
    for R in (BasicRobustResponder(uni, 64, 0.25 * 32, np.random.default_rng(0)),
              TrackingResponder(uni, 64, 0.25 * 32, np.random.default_rng(0), budget=100),
              PrivateMedianResponder(uni, 64, 4, 1.0, np.random.default_rng(0))):
        ratio = R.answer(m) / true
        assert abs(np.median(ratio) - 1) < 0.1, R.name
        assert np.abs(ratio - 1).mean() < 0.35, R.name
    # mostly deactivated tracking: error shrinks towards exact counting
    tr = TrackingResponder(uni, 64, 0.25 * 32, np.random.default_rng(0), budget=20)
    tr.answer(m[:100])
    assert np.abs(tr.answer(m[100:]) / true[100:] - 1).mean() <= 0.1


def test_zcdp_bookkeeping():
    assert np.allclose(per_key_zcdp([0, 1, 10], 2.0, 1.0), [0, 0.25, 2.5])
    assert np.isclose(query_zcdp(3.0, 0.5), 0.5**2 / 8 + 1 / 18)


# --- differential privacy of the threshold selection (exact, on instances the notebook does not use) ---------

@pytest.mark.parametrize("n,k,sigma,eps", [(16, 6, 2.0, 0.7), (10, 2, 0.5, 3.0)])
def test_selection_is_eps_dp_and_accounting_bounds_renyi(n, k, sigma, eps):
    rng = np.random.default_rng(n + k)
    grid = selection_grid(n, k)
    em = lambda c: threshold_distribution(np.minimum(c, k), k, eps)
    worst, worst_renyi = 0.0, 0.0
    for _ in range(25):
        u, member = rng.random(n), rng.random(n) < 0.7
        member[0] = True
        worst = max(worst, neighbour_privacy_loss(u, member, k, grid, em))
        for a in (1.5, 4.0, 64.0):
            worst_renyi = max(worst_renyi, query_renyi(u, member, k, grid, sigma, eps, a) / (a * query_zcdp(sigma, eps)))
    assert 0 < worst <= eps + 1e-9
    assert worst_renyi <= 1 + 1e-9


def test_old_selection_has_unbounded_privacy_loss():
    rng = np.random.default_rng(7)
    grid = selection_grid(16, 6)
    old = lambda c: old_threshold_distribution(c, 6, 2.0)
    losses = [neighbour_privacy_loss(rng.random(16), rng.random(16) < 0.8, 6, grid, old) for _ in range(20)]
    assert np.isinf(losses).any()


def test_responder_samples_the_exact_selection_distribution():
    uni = Universe(3000, seed=8)
    br = BasicRobustResponder(uni, 32, 4.0, np.random.default_rng(1), select_eps=0.6)
    row = random_halves(np.random.default_rng(2), 1, uni.n)
    j, m = br.select(np.repeat(row, 30_000, axis=0))
    emp = np.bincount(j, minlength=len(br.grid)) / len(j)
    assert np.abs(emp - threshold_distribution(m[0], 32, 0.6)).max() < 0.012


# --- the CSS25 regime: participation capped, total queries far beyond it ------------------------------------

def test_capped_workloads_keep_every_key_within_r():
    uni = Universe(2000, seed=4)
    w = inclusion_weights(uni.n, 'pareto', np.random.default_rng(0), 1.2)
    out = adaptive_attack(StandardResponder(uni, 16), uni.n, np.random.default_rng(3), weights=w, A=80, max_queries=40_000,
                          batch=8, part_cap=30)
    assert out['max_part'] <= 30 and out['queries'] > 20 * 30 and out['queries_within_budget'] == out['queries']
    unc = adaptive_attack(StandardResponder(uni, 16), uni.n, np.random.default_rng(3), weights=w, A=80, max_queries=3000, batch=8, budget=30)
    assert unc['max_part'] < unc['queries'] and unc['queries_within_budget'] < unc['queries']     # p_max 1/2: no key in every query
    blocks = lambda i: (lambda u: (TrackingResponder(u, 16, 2.0, np.random.default_rng(i), budget=40), u))(Universe(400, seed=i))
    rot = rotating_attack(blocks, 6, 40, np.random.default_rng(0))
    assert rot['max_part'] <= 40 and rot['queries'] % 41 == 0


# --- configuration and determinism ---------------------------------------------------------------

def test_config_validation():
    with pytest.raises(ConfigError, match="unknown parameter"): Config.from_params("smoke", kk=3)
    with pytest.raises(ConfigError, match="power of two"): Config.from_params("smoke", ks=(48,))
    with pytest.raises(ConfigError, match="'n_seeds'"): Config.from_params("smoke", n_seeds=0)
    with pytest.raises(ConfigError, match="at least two"): Config.from_params("smoke", ks_adaptive=(32,))
    with pytest.raises(ValueError, match="unknown pattern"): inclusion_weights(10, "zipf", None)


def test_same_config_same_numbers():
    pytest.importorskip("datasketch")
    cfg = Config.from_params("smoke", n=2000, ks=(16,), query_mults=(4,), seed=3)
    a, _ = experiment1(cfg, progress=False)
    b, _ = experiment1(cfg, progress=False)
    assert a.equals(b)


def test_run_smoke_has_one_headline_and_rules():
    pytest.importorskip("datasketch")
    from trustlib.results import check_headline, grade
    from trustlib.sketches.cardinality import run, CLAIMS
    r = run(Config.from_params("smoke", seed=2), progress=False)
    assert r.verdicts == []                                                   # run() measures; the claims table grades
    vs = grade(CLAIMS, r.metrics)
    assert check_headline(vs).id == "capped" and len(vs) == 6
    assert all(v.rule for v in vs if v.verdict != "not_testable_offline")
    cap = {v.id: v for v in vs}["capped"]
    assert cap.verdict == "inconclusive" and cap.condition_met is False      # smoke: k_capped = 32 is outside the regime (σ²/k = 2)
    assert {"exp1_cpu_seconds", "exp2_cpu_seconds", "exp3_cpu_seconds", "throughput_cpu_seconds", "privacy_cpu_seconds"} <= set(r.timings)


def test_published_capped_configuration_is_in_the_theorys_regime():
    "The cpu profile's capped workload meets the regime derived before the run: σ²/k >= 8, r = σ² >= 4k, r <= k², 4k² queries in all."
    from trustlib.sketches.cardinality import robust_params
    cfg = Config.from_params("cpu")
    rp = robust_params(cfg.k_capped, cfg)
    assert rp["noise_var_over_k"] >= 8 and rp["budget_over_k"] >= 4 and rp["budget"] <= cfg.k_capped ** 2
    assert abs(rp["budget"] - rp["sigma"] ** 2) <= 1 and abs(rp["zcdp_at_budget"] - cfg.key_zcdp) < 0.01
    assert cfg.n_blocks * (rp["budget"] + 1) >= 4 * cfg.k_capped ** 2
    assert cfg.block_n >= 5 * cfg.probe_mult * cfg.k_capped


def test_throughput_compares_like_for_like():
    "Both sides get the same int ids or the same bytes; the table has a median ratio with an interval per pair (no timing assertion)."
    pytest.importorskip("datasketch")
    from trustlib.sketches.cardinality import throughput
    tp = throughput((64,), 20_000, repeats=3).set_index(["ours", "datasketch", "input"])
    assert set(tp.index) >= {("k-mins", "MinHash", "int ids"), ("k-mins", "MinHash", "bytes"), ("bottom-k", "MinHash", "bytes")}
    assert (tp.ratio > 0).all()

def test_config_bounded_and_lists_checked():
    from trustlib.sketches.cardinality import Config
    assert Config.unbounded_fields() == []
    for p in ("smoke", "cpu", "full"): Config.from_params(p)
    for name in ("ks", "query_mults", "fractions", "pareto_alphas"):      # empty grids: a clear error, not max() of nothing
        with pytest.raises(ConfigError, match=f"parameter '{name}': needs at least one value"): Config.from_params("smoke", **{name: []})
    with pytest.raises(ConfigError, match="'ks'.*<= 4096"): Config.from_params("smoke", ks=[2**20])
    with pytest.raises(ConfigError, match="'bench_ks'.*power of two"): Config.from_params("smoke", bench_ks=[48])
    with pytest.raises(ConfigError, match="'block_n'"): Config.from_params("smoke", block_n=100)
    with pytest.raises(ConfigError, match="'n'.*allow_large"): Config.from_params("smoke", n=10**9)
