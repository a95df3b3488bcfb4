"""Property and integration tests of trustlib.interp.sae / trustlib.interp.saebench beyond the notebooks' examples."""
import numpy as np
import pytest
import torch
from trustlib.interp.sae import ARCHITECTURES, make_sae, train_sae, batch_topk_mask, MatryoshkaSAE, BatchTopKSAE, PAnnealSAE
from trustlib.interp import saebench as sb

torch.set_num_threads(1)   # small tensors: a second thread only spins (and costs CPU time) on a busy machine

KNOB = {"relu": 0.05, "gated": 0.05, "panneal": 0.05}

@pytest.mark.parametrize("arch", list(ARCHITECTURES))
def test_every_architecture_rejects_bad_inputs(arch):
    sae = make_sae(arch, 8, 32, KNOB.get(arch, 4), seed=0)
    for bad, msg in ((torch.zeros(3, 7), "d_in = 8"), (torch.zeros(8), "2-d"), (torch.full((2, 8), float("nan")), "NaN"),
                     (torch.zeros(0, 8), "empty")):
        with pytest.raises(ValueError, match=msg): sae.loss(bad)
        with pytest.raises(ValueError, match=msg): sae(bad)

@pytest.mark.parametrize("B,k", [(1, 3), (7, 5), (64, 16)])
def test_batch_topk_keeps_k_times_batch(B, k):
    z = torch.rand(B, 50, generator=torch.Generator().manual_seed(B)) + 0.01
    assert int((batch_topk_mask(z, k) > 0).sum()) == k * B

@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matryoshka_one_group_is_batchtopk(seed):
    X = torch.randn(40, 12, generator=torch.Generator().manual_seed(seed))
    m, b = MatryoshkaSAE(12, 48, k=3, seed=seed, fractions=()), BatchTopKSAE(12, 48, k=3, seed=seed)
    m.since_fired[:10] = m.dead_after; b.since_fired[:10] = b.dead_after       # AuxK active in both
    lm, lb = m.loss(X)[0], b.loss(X)[0]
    assert torch.allclose(lm, lb, atol=1e-6)

def test_panneal_penalty_continuous_through_training():
    X = torch.rand(3000, 8, generator=torch.Generator().manual_seed(0))
    sae = PAnnealSAE(8, 32, l1_coeff=0.01, seed=0)
    train_sae(sae, X, steps=120, batch_size=64, lr=1e-3, seed=0, progress=False)
    assert len(sae.rescales) == 9 and abs(sae.p - 0.2) < 1e-9
    for step, p, before, after in sae.rescales: assert abs(before - after) <= 1e-6 * max(1.0, abs(before))

def test_controller_reaches_target_l0():
    g = torch.Generator().manual_seed(0)
    D = torch.randn(16, 16, generator=g); D /= D.norm(dim=1, keepdim=True)
    idx = torch.rand(4000, 16, generator=g).argsort(1)[:, :3]
    X = torch.zeros(4000, 16).scatter_(1, idx, 0.5 + torch.rand(4000, 3, generator=g)) @ D
    sae = make_sae("gated", 16, 32, 0.05, seed=0)
    train_sae(sae, X, steps=300, batch_size=256, lr=3e-3, target_l0=3, seed=0, progress=False)
    assert 2.0 <= sae.l0(X) <= 4.0

def test_ablating_everything_returns_the_error_term():
    sae = make_sae("topk", 8, 32, 4, seed=0)
    X = np.random.default_rng(0).standard_normal((20, 8)).astype(np.float32)
    f, xh = sb.sae_codes(sae, X)
    W = sae.W_dec.detach().numpy()
    b = sae.b_dec.detach().numpy()
    np.testing.assert_allclose(sb.ablate(X, f, W, range(32)), X - xh + b, atol=1e-5)   # only b_dec and the error remain

def _planted(n=8000, d=32, n_feat=32, k=3, seed=0):
    rng = np.random.default_rng(seed)
    D = rng.standard_normal((n_feat, d)); D /= np.linalg.norm(D, axis=1, keepdims=True)
    A = np.zeros((n, n_feat)); idx = rng.random((n, n_feat)).argsort(1)[:, :k]
    np.put_along_axis(A, idx, rng.uniform(0.5, 1.5, (n, k)), 1)
    return (A @ D).astype(np.float32)

def test_relu_sae_reconstructs_a_planted_dictionary_at_moderate_l0():
    # 32 unit directions in R^32, 3 active per sample; at L0 4 a properly trained ReLU SAE reconstructs most of
    # the variance (the experiment's ReLU settings reach FVU ≈ 0.12 here; lr 3e-3 with the controller frozen at
    # 80 % of training left it at ≈ 0.47, its L1 penalty still shrinking every code)
    X = _planted(); Xtr, Xe = X[:6000], X[6000:]
    cfg = sb.Config.from_params("smoke", steps=600)
    sae = sb.fit_sae("relu", Xtr, d_sae=64, l0=4, steps=cfg.steps, batch_size=cfg.batch_size, lr=cfg.lr, relu_lr=cfg.relu_lr, seed=0)
    m = sb.core_metrics(sae, Xe)
    assert 3.0 <= m["l0"] <= 5.0, m
    assert m["fvu"] < 0.25, m

def test_metrics_behave_as_the_dictionary_grows():
    # the same data, F = 128 and 256 at matched L0: reconstruction does not get worse with width, every metric stays in range
    cfg = sb.Config.from_params("smoke", steps=200)
    kw = dict(p_parent=cfg.p_parent, p_child=cfg.p_child, p_independent=cfg.p_independent, noise=cfg.noise)
    h = sb.make_hierarchy(cfg.d, cfg.n_features, cfg.n_parents, seed=0)
    rng = np.random.default_rng(0)
    Xtr, _ = sb.sample_hierarchy(h, 6000, rng, **kw); Xe, Ae = sb.sample_hierarchy(h, 1500, rng, **kw)
    res = {}
    for arch in ("topk", "matryoshka"):
        for F in (128, 256):
            sae = sb.fit_sae(arch, Xtr, d_sae=F, l0=4, steps=cfg.steps, batch_size=cfg.batch_size, lr=cfg.lr, relu_lr=cfg.relu_lr, seed=0)
            m = sb.core_metrics(sae, Xe)
            m["absorption"], m["full_absorption"] = sb.gt_absorption(sae, Xe, Ae, h)
            m.update({f"ravel_{k}": v for k, v in sb.gt_ravel(sae, h, np.random.default_rng(1), kw, 300, n_attr=4).items()})
            res[arch, F] = m
    print({key: {k: round(v, 3) for k, v in m.items() if k in ("fvu", "l0", "absorption", "dead_frac", "ravel_disentanglement")} for key, m in res.items()})
    for (arch, F), m in res.items():
        assert all(np.isfinite(v) for v in m.values()), (arch, F, m)
        for key in ("absorption", "full_absorption", "ravel_cause", "ravel_isolation", "ravel_disentanglement", "dead_frac"):
            assert 0.0 <= m[key] <= 1.0, (arch, F, key, m[key])
        assert abs(m["l0"] - 4) <= 1.0, (arch, F, m["l0"])
    for arch in ("topk", "matryoshka"):
        assert res[arch, 256]["fvu"] <= res[arch, 128]["fvu"] + 0.03, (arch, res[arch, 128]["fvu"], res[arch, 256]["fvu"])
        assert res[arch, 256]["dead_frac"] >= res[arch, 128]["dead_frac"] - 0.05   # a wider dictionary leaves at least as many latents unused

@pytest.mark.parametrize("arch", ["topk", "batchtopk", "matryoshka"])
def test_sparse_training_path_matches_the_dense_code(arch):
    # TopK, BatchTopK and Matryoshka train through their kept values; the same loss and gradients as the dense code
    from trustlib.interp.sae import topk_mask
    X = torch.randn(48, 12, generator=torch.Generator().manual_seed(3))
    a = make_sae(arch, 12, 64, 5, seed=1); a.since_fired[:30] = a.dead_after
    la = a.loss(X)[0]; la.backward()
    ga = [p.grad.clone() for p in (a.W_enc, a.W_dec, a.b_enc, a.b_dec)]; a.zero_grad()
    z = torch.relu(a.pre(X)); f = a.select(z)
    if arch == "matryoshka":
        ends = np.cumsum(a.sizes)
        rec = sum(w * ((X - f[:, :e] @ a.W_dec[:e] - a.b_dec) ** 2).sum(1).mean() for w, e in zip(a.weights, ends)) / len(ends)
    else: rec = ((X - f @ a.W_dec - a.b_dec) ** 2).sum(1).mean()
    e_ = (X - f @ a.W_dec - a.b_dec).detach(); dead = torch.zeros(64, dtype=torch.bool); dead[:30] = True
    fa = topk_mask(torch.where(dead, z, torch.zeros_like(z)), a.aux_k)
    lb = rec + ((e_ - fa @ a.W_dec) ** 2).sum() / ((e_ - e_.mean(0)) ** 2).sum() / 32; lb.backward()
    assert torch.allclose(la, lb, atol=1e-5)
    for g_, p in zip(ga, (a.W_enc, a.W_dec, a.b_enc, a.b_dec)): assert torch.allclose(g_, p.grad, atol=1e-5)

def test_jumprelu_has_no_relu_after_the_jump():
    # pre-activations just below the threshold move it (the straight-through estimator), as in dictionary_learning
    sae = make_sae("jumprelu", 4, 8, 2, seed=0, bandwidth=0.01)
    with torch.no_grad(): sae.threshold.fill_(0.5)
    z = sae.pre(torch.zeros(1, 4)).detach()
    x = torch.zeros(1, 4)
    with torch.no_grad(): sae.b_enc.copy_(torch.full((8,), 0.497))             # every latent 0.003 below its threshold
    sae.encode(x).sum().backward()
    assert torch.allclose(sae.threshold.grad, torch.full((8,), -0.5 / 0.01))


# --- the conditions the claims need, on the published (cpu) configuration -------------------------------------------

@pytest.fixture(scope="module")
def cpu_eval():
    cfg = sb.Config.from_params("cpu")
    _, _, scale = sb.generic_pool(cfg, sb.eval_dataset_texts(cfg))
    ev = sb.eval_sets(cfg, scale)
    return cfg, ev, sb.fixed_probes(ev)

@pytest.mark.slow
def test_minilm_tasks_work_at_the_cpu_configuration(cpu_eval):
    """The stand-ins create the conditions of the practical metrics: the cue of SCR misleads the biased probe and TPP's
    class probes (AG News topics) reach 0.7 on balanced test sets. (The first-letter probe has its own check below.)"""
    cfg, ev, probes = cpu_eval
    for (name, sets, _, _), p in zip(ev.scr, probes["scr"]):
        assert p.a_oracle - p.a_base >= 0.1, (name, p.a_base, p.a_oracle)          # the biased probe leans on the cue
        assert set(np.unique(sets.y_test)) == {0, 1}
    t = ev.tpp
    accs = [(probes["tpp"][j].predict(ev.X[t["test"][j]]) == t["Y"][t["test"][j], j]).mean() for j in range(t["Y"].shape[1])]
    assert np.mean(accs) >= 0.7, accs

@pytest.mark.slow
@pytest.mark.xfail(strict=False, reason="MiniLM's token activations do not encode the first letter linearly: with all 21,358 vocabulary words the probe's validation F1 is about 0.3 per letter (at most about 0.5), at layer 4 and at the embeddings alike; the page grades the absorption claims inconclusive, condition not met")
def test_first_letter_probe_reads_ten_letters_at_the_cpu_configuration(cpu_eval):
    """The first-letter probe of the cpu configuration reads at least 10 letters with F1 >= 0.6 on its own validation
    words (the condition of the absorption claims), and the letters are chosen on words disjoint from the scored ones."""
    cfg, ev, probes = cpu_eval
    w, pr = ev.words, probes["letters"]
    assert len(pr["letters"]) >= 10, pr["f1"]
    assert all(pr["f1"][c] >= 0.6 for c in pr["letters"])
    assert not (set(w["val"]) & set(w["test"])) and not (set(w["train"]) & set(w["val"]))
    assert len(w["words"]) == min(cfg.n_words, 21_358)

def test_pool_excludes_every_evaluation_text():
    cfg = sb.Config.from_params("smoke")
    ex = sb.eval_dataset_texts(cfg)
    from trustlib.interp.sae import sae_probes_pool
    p = sae_probes_pool(exclude=ex, skip={*cfg.probe_datasets, *cfg.scr_datasets, cfg.tpp_dataset}, rows=cfg.pool_rows, datasets=cfg.pool_datasets)
    assert not set(p["datasets"]) & {*cfg.probe_datasets, *cfg.scr_datasets, cfg.tpp_dataset}
    assert len(ex) > 1000 and p["train"].shape[1] == 384 and len(p["heldout"]) > 0

@pytest.mark.slow
@pytest.mark.parametrize("arch", ["relu", "jumprelu", "gated", "panneal", "batchtopk", "matryoshka"])
def test_matched_l0_at_the_cpu_configuration(arch):
    """At the cpu configuration's training length, an architecture whose L0 is set indirectly meets the lowest target
    within the tolerance the claims require (15 %) on held-out tokens."""
    cfg = sb.Config.from_params("cpu")
    tr, ho, _ = sb.generic_pool(cfg, sb.eval_dataset_texts(cfg))
    l0 = min(cfg.l0_targets)
    sae = sb.fit_sae(arch, tr, d_sae=cfg.minilm_d_sae, l0=l0, steps=cfg.minilm_steps, batch_size=cfg.minilm_batch_size, lr=cfg.minilm_lr,
                     relu_lr=cfg.minilm_relu_lr, seed=0, bandwidth=cfg.jumprelu_bandwidth, autocast=cfg.autocast)
    m = sb.core_metrics(sae, ho[:5000], codes=sb.encode_sparse(sae, ho[:5000], cfg.autocast))
    assert abs(m["l0"] / l0 - 1) <= 0.15, (arch, m["l0"])

@pytest.mark.slow
@pytest.mark.xfail(strict=False, reason="absorption excess not > 0.02 for every architecture on seed 0: the stand-in does not yet create this condition at the cpu configuration (the page grades the claims that need it inconclusive, condition not met)")
def test_hierarchy_creates_absorption_at_the_cpu_configuration():
    """On the cpu configuration's synthetic data, a BatchTopK SAE absorbs more on the hierarchy than on the flat control
    with the same feature frequencies (the condition of the synthetic absorption claim), on the first seed."""
    cfg = sb.Config.from_params("cpu", architectures=["topk", "batchtopk"], n_seeds=1)
    rows = sb.synthetic_seed(cfg, 0)
    assert all(r["absorption_excess"] > 0.02 for r in rows), rows


@pytest.mark.xfail(strict=True, reason="the published cpu run is at matched L0 (largest |L0/target − 1| = 0.047) and its TPP class probes work "
                   "(0.85), but it misses the first-letter probe (0 letters < 10) and seed-to-seed rank agreement (0.42 < 0.5): those claims are "
                   "inconclusive, condition not met, on the page")
def test_conditions_hold_on_the_published_run():
    """The page is a cpu run, and every graded claim with a condition was graded with it met: the SAEs at matched L0,
    the first-letter probe, the SCR cue that misleads the biased probe, TPP's class probes, properly trained ReLU SAEs,
    reproducible practical metrics, and absorption created by the hierarchy in every non-Matryoshka architecture."""
    from pathlib import Path
    from published import published_verdicts
    rows, note = published_verdicts(Path(__file__).resolve().parents[1] / "nbs" / "papers" / "interp" / "saebench.ipynb")
    assert 'profile = "cpu"' in note, note
    by = {r["claim"]: r for r in rows}
    from trustlib.results import claims_hash, load_ledger
    last = (load_ledger("saebench") or [{}])[-1]
    if last.get("claims_hash") != claims_hash(sb.CLAIMS):
        pytest.skip("the page was not yet published from this claims table; republish it from a cpu run")
    needing = [c for c in sb.CLAIMS if c.requires]
    assert {c.id for c in needing} >= {"proxy_metrics", "matryoshka_absorption", "matryoshka_scr", "matryoshka_tpp", "synthetic_absorption"}
    for c in needing:
        assert "condition not met" not in by[c.claim]["reason"], (c.id, by[c.claim]["reason"])

def _published_conditions() -> dict:
    "The condition measurements printed on the published page (its 'The conditions' cell), as floats."
    import json
    from pathlib import Path
    nb = json.loads((Path(__file__).resolve().parents[1] / "nbs" / "papers" / "interp" / "saebench.ipynb").read_text())
    for c in nb["cells"]:
        if c["cell_type"] == "code" and "".join(c["source"]).startswith("pd.Series(") and '"minilm/l0_mismatch"' in "".join(c["source"]):
            text = "".join("".join(o.get("data", {}).get("text/plain", o.get("text", ""))) for o in c.get("outputs", []))
            return {k: float(v) for k, v in (line.split()[:2] for line in text.splitlines() if line.startswith("minilm/"))}
    return {}

def test_published_run_is_at_matched_l0():
    """On the published cpu run every SAE is within 15 % of its target L0 on held-out tokens (the condition of every MiniLM claim)."""
    m = _published_conditions()
    assert m, "the published page has no conditions cell"
    assert m["minilm/l0_mismatch"] <= 0.15, m["minilm/l0_mismatch"]

@pytest.mark.xfail(strict=True, reason="MiniLM's token activations do not encode the first letter linearly (validation F1 about 0.3 per letter with "
                   "all 21,358 vocabulary words): the absorption claims are inconclusive, condition not met, on the page")
def test_published_run_has_ten_letters():
    """On the published cpu run the first-letter probe reads at least 10 letters (F1 >= 0.6 on its validation words)."""
    m = _published_conditions()
    assert m["minilm/letters"] >= 10, m["minilm/letters"]

def test_scr_dataset_without_short_texts_of_both_classes_is_refused():
    # AG News "is world news": no negative text fits in max_length with the cue, so the biased set would have one class
    from trustlib.config import ConfigError
    assert sb.scr_fitting("161_agnews_0", 64, sb.SCR_MARKER)[0] == 0
    with pytest.raises(ConfigError, match="scr_datasets"):
        sb.Config.from_params("cpu", scr_datasets=["161_agnews_0"])
    cfg = sb.Config.from_params("cpu")
    assert all(min(sb.scr_fitting(n, cfg.max_length, cfg.scr_marker)) >= 2 * cfg.scr_rows for n in cfg.scr_datasets)
    n = cfg.scr_datasets[0]   # the counts are kept per dataset, length, cue and tokenizer: the kept ones are the counted ones
    assert sb.scr_fitting(n, cfg.max_length, cfg.scr_marker) == sb._scr_fitting(n, cfg.max_length, cfg.scr_marker, sb._minilm_tokenizer())
    assert sb.scr_fitting(n, 16, cfg.scr_marker) == sb._scr_fitting(n, 16, cfg.scr_marker, sb._minilm_tokenizer()) != sb.scr_fitting(n, cfg.max_length, cfg.scr_marker)

def test_corpus_folders_read_in_each_format(tmp_path):
    """The full profile's training text: a folder of .txt documents (OpenWebText's layout) or JSON lines, plain or
    zstd-compressed (The Pile's), read in file-name order up to the number of documents asked for; a dataset id maps
    to its cache folder under the data folder."""
    import json, zstandard
    (tmp_path/"a.txt").write_text("first document")
    (tmp_path/"b.jsonl").write_text(json.dumps(dict(text="second")) + "\n\n" + json.dumps(dict(text="third")) + "\n")
    (tmp_path/"c.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress((json.dumps(dict(text="fourth", meta={})) + "\n").encode()))
    (tmp_path/"d.csv").write_text("text\nignored\n")
    assert sb.corpus_texts(str(tmp_path), 10) == ["first document", "second", "third", "fourth"]
    assert sb.corpus_texts(str(tmp_path), 2) == ["first document", "second"]
    assert sb.corpus_folder("owner/name").parts[-2:] == ("corpora", "owner--name")
    from trustlib.config import ResourceUnavailable
    (tmp_path/"empty").mkdir()
    with pytest.raises(ResourceUnavailable, match="no documents"): sb.corpus_texts(str(tmp_path/"empty"), 5)

def test_full_profile_is_the_papers_setup():
    """The full profile trains on Pythia-160M's residual stream after block 8 (SAEBench's layer 8, `blocks.8.hook_resid_post`)
    with The Pile as training text, all 7 architectures at the paper's L0 targets; MiniLM's layer bound still holds for MiniLM."""
    from trustlib.config import ConfigError
    cfg = sb.Config.from_params("full")
    assert (cfg.lm, cfg.layer, cfg.corpus, cfg.device) == ("EleutherAI/pythia-160m", 9, "monology/pile-uncopyrighted", "auto")
    assert cfg.architectures == sb.ARCHS and cfg.l0_targets == (20, 40, 80, 160, 320, 640) and cfg.minilm_d_sae == 2**14
    with pytest.raises(ConfigError, match="'layer'"): sb.Config.from_params("smoke", layer=7)
    with pytest.raises(ConfigError, match="'device'"): sb.Config.from_params("smoke", device="cuda")

def test_corpus_by_dataset_id_is_streamed_once_and_cached(tmp_path, monkeypatch):
    """A Hugging Face dataset id is read with `datasets` (streamed, its first n documents) once; the documents are kept in
    The Pile's format under the data folder and later runs read them from there without `datasets`."""
    import sys, types
    calls = []
    def load_dataset(name, split, streaming):
        calls.append((name, split, streaming))
        return iter([dict(text=f"document {i}", meta={}) for i in range(10)])
    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    monkeypatch.setenv("TRUSTLIB_DATA", str(tmp_path))
    assert sb.corpus_texts("owner/pile", 4) == [f"document {i}" for i in range(4)]
    assert calls == [("owner/pile", "train", True)]
    assert [p.name for p in (tmp_path/"corpora"/"owner--pile").iterdir()] == ["00.jsonl.zst"]
    monkeypatch.delitem(sys.modules, "datasets")
    assert sb.corpus_texts("owner/pile", 3) == [f"document {i}" for i in range(3)] and len(calls) == 1
