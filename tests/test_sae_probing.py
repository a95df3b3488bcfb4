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
    # every pair with one example of each class (the official rule keeps validation pairs with both classes)
    assert len(s) == pos * (n - pos)
    for tr, va in s:
        assert len(va) == 2 and set(y[va].tolist()) == {0, 1}
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
    assert len(va) == min(int(0.2 * n), 100) and len(tr) + len(va) == n
    assert va.tolist() == list(range(n - len(va), n))                  # the last rows (the training rows come shuffled)


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


def test_full_profile_without_the_model_stops_with_a_clear_message(tmp_path, monkeypatch):
    "Offline and without Gemma-2-9B in the hub cache, the full run stops when it first needs the model, saying how to get it."
    import huggingface_hub.constants as hc
    from trustlib.config import ResourceUnavailable
    monkeypatch.setenv("TRUSTLIB_DATA", str(tmp_path)); monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", True); monkeypatch.setattr(hc, "HF_HUB_CACHE", str(tmp_path / "hub"))
    cfg = sp.Config.from_params("full", datasets=["96_spam_is", "5_hist_fig_ismale"], ood_datasets=["5_hist_fig_ismale"], regime_datasets=1, max_rows=60)
    with pytest.raises(ResourceUnavailable, match="google/gemma-2-9b is gated"):
        sp.run(cfg, progress=False)
    assert not (tmp_path / "activations").exists()


def test_logreg_is_not_standardised():
    # the official logistic regression reads the raw activations: rescaling a feature changes the fitted probe
    g = np.random.default_rng(0)
    X = g.standard_normal((300, 8)); y = (X[:, 0] + 0.5 * g.standard_normal(300) > 0).astype(int)
    p = sp.fit_probe("logreg", X, y, rng=np.random.default_rng(1))
    assert p.scaler is None
    q = sp.fit_probe("pca", X, y, rng=np.random.default_rng(1))
    assert q.scaler is not None                                           # PCA, KNN and the MLP standardise, as the official code


# --- the conditions the claims need, on the published (cpu) configuration -------------------------------------------

@pytest.mark.slow
def test_sae_reconstructs_generic_text_at_the_cpu_configuration():
    """The cpu configuration's SAE, trained on the generic pool (no probing set, no probing text), reconstructs held-out
    pool tokens with FVU below 0.15, far better than its random-init control (the condition of every SAE claim).
    Reads the cached SAE when there is one (keyed by everything it depends on), else trains it."""
    import torch
    torch.set_num_threads(1)
    cfg = sp.Config.from_params("cpu")
    g = sp.generic_sae(cfg, progress=False)
    assert g["pool"] and not set(g["pool"]) & set(cfg.datasets)
    fvu, fvu_rand = g["stats"]["sae"]["fvu"], g["stats"]["rand"]["fvu"]
    assert fvu < 0.15 and fvu < 0.5 * fvu_rand, (fvu, fvu_rand)


def test_generic_sae_cache_is_keyed_and_exact(tmp_path, monkeypatch):
    """A cached SAE gives the same codes and statistics as the one just trained; every parameter it depends on changes the key."""
    import dataclasses, torch
    torch.set_num_threads(1)
    monkeypatch.setenv("TRUSTLIB_DATA", str(tmp_path))
    cfg = sp.Config.from_params("smoke", pool_rows=4, pool_datasets=6, d_sae=64, sae_k=8, sae_steps=3, sae_batch_size=64, max_length=16)
    a = sp.generic_sae(cfg); b = sp.generic_sae(cfg)
    assert not a["cached"] and b["cached"] and a["stats"] == b["stats"] and a["pool"] == b["pool"] and a["n_tokens"] == b["n_tokens"]
    X = np.random.default_rng(0).standard_normal((20, 384)).astype(np.float32)
    for n in ("sae", "rand"):
        assert np.array_equal(sp.sae_encode(a["saes"][n], X), sp.sae_encode(b["saes"][n], X))
    k0 = sp.sae_cache_key(cfg)
    for field, v in dict(seed=cfg.seed + 1, layer=3, max_length=17, pool_rows=5, pool_datasets=7, d_sae=65, sae_k=9, sae_steps=4,
                         sae_batch_size=65, sae_lr=1e-3, autocast="float32", datasets=cfg.datasets[1:]).items():
        assert sp.sae_cache_key(dataclasses.replace(cfg, **{field: v})) != k0, field


def test_ood_sets_are_english():
    # the covariate-shift sets of the cpu profile are the wheel's English OOD files (no translations)
    cfg = sp.Config.from_params("cpu")
    assert set(cfg.ood_datasets) == set(sp.ENGLISH_OOD) and not {"66_living-room", "67_social-security", "73_control-group"} & set(cfg.ood_datasets)


@pytest.mark.xfail(strict=True, reason="on the published cpu run the trained SAE beats its random-init control at k = 128 by 0.0315 "
                   "[0.0119, 0.0511], within the recorded tolerance (0.004) of the 0.01 threshold: the SAE claims are "
                   "inconclusive, condition not met, on the page (two machines put this gain on either side of the threshold)")
def test_conditions_hold_on_the_published_run():
    """The page is a cpu run, and every claim about SAE probes was graded with a usable SAE: FVU ≤ 0.15 on held-out
    generic tokens and a trained SAE that beats its random-init control at every graded k."""
    from pathlib import Path
    from published import published_verdicts
    rows, note = published_verdicts(Path(__file__).resolve().parents[1] / "nbs" / "papers" / "interp" / "sae_probing.ipynb")
    assert 'profile = "cpu"' in note, note
    by = {r["claim"]: r for r in rows}
    from trustlib.results import claims_hash, load_ledger
    last = (load_ledger("sae_probing") or [{}])[-1]
    if last.get("claims_hash") != claims_hash(sp.CLAIMS):
        pytest.skip("the page was not yet published from this claims table; republish it from a cpu run")
    needing = [c for c in sp.CLAIMS if c.requires]
    assert {c.id for c in needing} >= {"quiver", "regime_standard", "regime_ood"}
    for c in needing:
        assert "condition not met" not in by[c.claim]["reason"], (c.id, by[c.claim]["reason"])


# --- the full profile's path: a causal LM by hub id and a pretrained Gemma Scope SAE (on the rehearsal's stand-ins) ---

@pytest.fixture(scope="module")
def gemma(tmp_path_factory):
    "The 42-layer Gemma-2 stand-in and the Gemma Scope stand-in in a hub cache; the hub and the data folder redirected to them (offline)."
    import trustlib.rehearse as RH
    folder = RH.build_standins(tmp_path_factory.mktemp("standins"), models=["google/gemma-2-9b"], data=["gemma_scope"])
    with RH.rehearsal(folder):
        yield folder


def test_full_profile_is_the_papers_setup():
    from trustlib.data import sae_probes_datasets
    cfg = sp.Config.from_params("full")
    assert (cfg.model, cfg.layer, cfg.pooling, cfg.d_sae) == ("google/gemma-2-9b", 20, "last", 16_384)
    assert (cfg.sae_repo, cfg.sae_folder) == ("google/gemma-scope-9b-pt-res", "layer_20/width_16k/average_l0_408")
    assert list(cfg.datasets) == sae_probes_datasets("binary") and len(cfg.datasets) == 113          # the paper's 113 tasks
    assert {f"{n}_OOD" for n in cfg.ood_datasets} == set(sae_probes_datasets(ood=True))             # all eight OOD sets
    assert cfg.regime_k == (16, 128) and set(cfg.baselines) == set(cfg.regime_baselines) == set(sp.BASELINES)
    c = sp.Config.from_params("cpu")
    assert (c.model, c.sae_repo, c.sae_folder) == ("minilm", "", "")                                  # the cpu profile is unchanged


def test_config_pairs_the_model_with_its_sae():
    from trustlib.config import ConfigError
    with pytest.raises(ConfigError, match="'model' and 'sae_repo'"): sp.Config.from_params("smoke", model="google/gemma-2-9b")
    with pytest.raises(ConfigError, match="'model' and 'sae_repo'"): sp.Config.from_params("smoke", sae_repo="google/gemma-scope-9b-pt-res", sae_folder="x")
    with pytest.raises(ConfigError, match="give both"): sp.Config.from_params("full", sae_folder="")
    with pytest.raises(ConfigError, match="MiniLM has layers"): sp.Config.from_params("smoke", layer=20)
    with pytest.raises(ConfigError, match="GiB"): sp.Config.from_params("full", max_rows=20_000)


def _hf_hidden(lm, text, layer):
    "The reference: transformers' own hidden_states[layer + 1] (the output of block `layer`) for one unpadded text."
    import torch
    ids = lm.tokenizer(text, return_tensors="pt")
    with torch.no_grad(): return lm.model(**ids, output_hidden_states=True).hidden_states[layer + 1][0].numpy(), ids["input_ids"][0]


def test_lm_hidden_is_the_residual_stream_after_the_block(gemma):
    lm = sp.HubLM("google/gemma-2-9b")
    assert lm.lm.model.config.num_hidden_layers == 42
    texts = ["the quick brown fox jumps over the lazy dog", "Paris.", "World news: markets rose 3% on Monday; sports: the team won 2-1."]
    last = sp.lm_hidden(texts, lm.lm, layer=20, max_length=512, what="last", batch_size=2)           # padded batches of unequal lengths
    toks = sp.lm_hidden(texts, lm.lm, layer=20, max_length=512, what="tokens", batch_size=2)
    mean = sp.lm_hidden(texts, lm.lm, layer=20, max_length=512, what="mean", batch_size=3)
    for t, a, T, m in zip(texts, last, toks, mean):
        ref, ids = _hf_hidden(lm.lm, t, 20)
        assert int(ids[0]) == lm.lm.tokenizer.bos_token_id
        np.testing.assert_allclose(a, ref[-1], rtol=1e-4, atol=1e-5)                                  # the last token of the prompt
        np.testing.assert_allclose(T.astype(np.float32), ref[1:], rtol=2e-3, atol=2e-3)               # every token after BOS (float16)
        np.testing.assert_allclose(m, ref[1:].mean(0), rtol=1e-4, atol=1e-5)
    with pytest.raises(sp.ConfigError, match="blocks 0 to 41"): sp.lm_hidden(texts, lm.lm, layer=42, max_length=16)


def test_long_texts_are_cut_from_the_left(gemma):
    lm = sp.HubLM("google/gemma-2-9b")
    text = "the quick brown fox jumps over the lazy dog. " * 6 + "Paris."
    (T,) = sp.lm_hidden([text], lm.lm, layer=3, max_length=8, what="tokens")
    assert len(T) == 7                                                                                 # 8 tokens, BOS dropped
    tok = lm.lm.tokenizer; tok.truncation_side = "left"
    ids = tok(text, truncation=True, max_length=8)["input_ids"]
    assert ids[0] == tok.bos_token_id and tok.decode(ids[1:]).endswith("Paris.")                       # the end of the prompt is kept


def test_lm_activations_are_cached_by_snapshot_layer_and_texts(gemma, tmp_path, monkeypatch):
    monkeypatch.setenv("TRUSTLIB_DATA", str(tmp_path))
    lm = sp.HubLM("google/gemma-2-9b")
    assert lm.key.startswith("google/gemma-2-9b@") and len(lm.key.split("@")[1]) == 40                 # the hub cache's snapshot
    a = sp.lm_activations(["Paris.", "a cat sat on the mat"], lm, layer=20, max_length=64)
    files = list((tmp_path / "activations").iterdir())
    assert len(files) == 1 and files[0].name.startswith("lm_google--gemma-2-9b_L20_last_")
    b = sp.lm_activations(["Paris.", "a cat sat on the mat"], lm, layer=20, max_length=64)
    assert np.array_equal(a["X"], b["X"]) and a["X"].shape == (2, 32) and len(list((tmp_path / "activations").iterdir())) == 1
    sp.lm_activations(["Paris.", "a cat sat on the mat"], lm, layer=19, max_length=64)
    t = sp.lm_activations(["Paris.", "a cat sat on the mat"], lm, layer=20, max_length=64, what="tokens")
    assert len(list((tmp_path / "activations").iterdir())) == 3 and t["offsets"][0] == 0 and t["offsets"][-1] == len(t["acts"])


def test_batched_stats_equal_the_dense_ones():
    import torch
    X = np.random.default_rng(0).standard_normal((700, 24)).astype(np.float32)
    sae = sp.train_probe_sae(X, d_sae=64, k=6, steps=20, batch_size=128, seed=0)
    a, b, c = sp.sae_fit_stats(sae, X), sp.sae_stats_batched(sae, X, batch_size=97), sp.sae_stats_batched(sae, [X[:300], X[300:]], batch_size=128)
    for k in ("fvu", "l0", "dead_frac"): assert a[k] == pytest.approx(b[k], rel=1e-5, abs=1e-7) and b[k] == pytest.approx(c[k], rel=1e-9, abs=1e-12), k


def test_pretrained_sae_and_its_control_on_the_standins(gemma, tmp_path, monkeypatch):
    monkeypatch.setenv("TRUSTLIB_DATA", str(tmp_path))
    import trustlib.rehearse as RH
    cfg = sp.Config.from_params("full", **RH.rehearsal_params("sae_probing", gemma))
    lm = sp.HubLM(cfg.model)
    g = sp.pretrained_sae(cfg, lm)
    sae, rand = g["saes"]["sae"], g["saes"]["rand"]
    assert type(sae).__name__ == "JumpReLUSAE" and (sae.d_in, sae.d_sae) == (32, 512)
    assert type(rand).__name__ == "TopKSAE" and rand.d_sae == 512 and rand.k == g["control_k"] == round(g["stats"]["sae"]["l0"])
    assert 0 < g["stats"]["rand"]["l0"] <= g["control_k"] and g["n_tokens"] > 0 and not set(g["pool"]) & set(cfg.datasets)
    with pytest.raises(sp.ConfigError, match="has 512 latents, not 256"): sp.pretrained_sae(sp.Config.from_params("full", **{**RH.rehearsal_params("sae_probing", gemma), "d_sae": 256}), lm)
    reps = {n: sp.lm_representations(n, lm=lm, layer=cfg.layer, pooling="last", max_rows=60, max_length=32, seed=0) for n in cfg.datasets}
    codes = sp.LazyCodes(g["saes"], reps)
    n = cfg.datasets[0]
    assert n in codes and np.array_equal(codes[n]["sae"], sp.sae_encode(sae, reps[n]["X"])) and codes[n]["rand"].shape == (60, 512)
