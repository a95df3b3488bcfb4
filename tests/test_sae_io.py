"SAE save/load: bit-identical round trips of every architecture, sae-lens's on-disk field names, and loading into sae-lens when it is installed."
import importlib.util, json
import pytest
import torch
from safetensors.torch import load_file, save_file
from trustlib.interp.sae import (ARCHITECTURES, SAE, SAE_CFG_FILE, SAE_WEIGHTS_FILE, SAE_STATE_FILE, BatchTopKSAE, JumpReLUSAE, TopKSAE,
                                 make_sae, train_sae)

KNOB = {"relu": 0.05, "gated": 0.05, "panneal": 0.05, "topk": 3, "batchtopk": 3, "matryoshka": 3, "jumprelu": 3}
# sae-lens 6.18 (sae_lens/saes/{standard,topk,jumprelu,gated}_sae.py, sae.py): the parameters of each inference SAE
SAE_LENS_PARAMS = {"standard": {"W_enc", "W_dec", "b_enc", "b_dec"}, "topk": {"W_enc", "W_dec", "b_enc", "b_dec"},
                   "jumprelu": {"W_enc", "W_dec", "b_enc", "b_dec", "threshold"},
                   "gated": {"W_enc", "W_dec", "b_dec", "b_gate", "b_mag", "r_mag"}}
SAE_LENS_CFG = {"d_in", "d_sae", "dtype", "device", "apply_b_dec_to_input", "normalize_activations", "reshape_activations", "metadata", "architecture"}


def _data(n=512, d=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    D = torch.randn(32, d, generator=g)
    idx = torch.rand(n, 32, generator=g).argsort(1)[:, :3]
    return torch.zeros(n, 32).scatter_(1, idx, 0.5 + torch.rand(n, 3, generator=g)) @ D


def _trained(arch, X, dtype=torch.float32):
    kw = {"threshold_start": 0} if arch in ("topk", "batchtopk", "matryoshka") else {}
    sae = make_sae(arch, X.shape[1], 64, sparsity=KNOB[arch], seed=1, **kw)
    train_sae(sae, X, steps=20, batch_size=128, lr=3e-3, seed=0, progress=False)
    return sae.to(dtype)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    X = _data(); root = tmp_path_factory.mktemp("saes")
    saes = {a: _trained(a, X) for a in ARCHITECTURES}
    for a, s in saes.items(): s.save_pretrained(root / a)
    return X, saes, root


@pytest.mark.parametrize("arch", list(ARCHITECTURES))
def test_round_trip_is_bit_identical(saved, arch):
    X, saes, root = saved
    s, s2 = saes[arch], ARCHITECTURES[arch].from_pretrained(root / arch)
    assert type(s2) is type(s) and s2.n_steps == s.n_steps == 20
    assert s.state_dict().keys() == s2.state_dict().keys()
    for k, v in s.state_dict().items(): assert torch.equal(v, s2.state_dict()[k]), k
    with torch.no_grad():
        assert torch.equal(s.encode(X), s2.encode(X)) and torch.equal(s.decode(s.encode(X)), s2.decode(s2.encode(X)))
        assert torch.equal(s(X), s2(X))
    if arch == "panneal": assert (s2.p, s2.l1_coeff, s2.change_steps) == (s.p, s.l1_coeff, s.change_steps)
    if arch == "matryoshka": assert (s2.sizes, s2.weights) == (s.sizes, s.weights)


def test_round_trip_keeps_float64(tmp_path):
    X = _data().double(); s = _trained("jumprelu", X.float(), torch.float64)
    s2 = SAE.from_pretrained(s.save_pretrained(tmp_path / "j"))
    assert s2.W_enc.dtype == torch.float64 and json.loads((tmp_path / "j" / SAE_CFG_FILE).read_text())["dtype"] == "float64"
    with torch.no_grad(): assert torch.equal(s.pre(X), s2.pre(X))


@pytest.mark.parametrize("arch", list(ARCHITECTURES))
def test_files_carry_sae_lens_names_shapes_and_dtypes(saved, arch):
    "Read with plain json/safetensors: the fields sae-lens's loader needs (checked against sae-lens 6.18's source)."
    X, saes, root = saved
    cfg = json.loads((root / arch / SAE_CFG_FILE).read_text())
    w = load_file(str(root / arch / SAE_WEIGHTS_FILE))
    assert SAE_LENS_CFG <= set(cfg) and cfg["d_in"] == 16 and cfg["d_sae"] == 64 and cfg["dtype"] == "float32"
    assert cfg["normalize_activations"] == "none" and cfg["reshape_activations"] == "none"
    assert tuple(int(p) for p in cfg["metadata"]["sae_lens_version"].split(".")[:1]) >= (6,)   # else sae-lens converts it as a pre-6 config
    assert set(w) == SAE_LENS_PARAMS[cfg["architecture"]]                     # sae-lens loads with strict load_state_dict
    shapes = dict(W_enc=(16, 64), W_dec=(64, 16), b_enc=(64,), b_dec=(16,), threshold=(64,), b_gate=(64,), b_mag=(64,), r_mag=(64,))
    assert {k: tuple(v.shape) for k, v in w.items()} == {k: shapes[k] for k in w}
    assert all(v.dtype == torch.float32 for v in w.values())
    assert "theta" not in w and "theta" not in load_file(str(root / arch / SAE_STATE_FILE))
    expected = dict(relu="standard", panneal="standard", topk="topk", gated="gated", jumprelu="jumprelu", batchtopk="jumprelu", matryoshka="jumprelu")
    assert cfg["architecture"] == expected[arch]
    if arch == "topk": assert cfg["k"] == 3 and cfg["rescale_acts_by_decoder_norm"] is False
    assert cfg["apply_b_dec_to_input"] is (arch != "jumprelu")
    if arch in ("batchtopk", "matryoshka"): assert torch.all(w["threshold"] == float(saes[arch].threshold)) and float(saes[arch].threshold) > 0


def _sae_lens_encode(cfg, w, x):
    "sae-lens 6.18's inference encode (StandardSAE, TopKSAE, JumpReLUSAE, GatedSAE), written from its source."
    x = x - w["b_dec"] * cfg["apply_b_dec_to_input"]
    if cfg["architecture"] == "gated":
        return ((x @ w["W_enc"] + w["b_gate"]) > 0).float() * torch.relu(x @ (w["W_enc"] * w["r_mag"].exp()) + w["b_mag"])
    h = x @ w["W_enc"] + w["b_enc"]
    if cfg["architecture"] == "standard": return torch.relu(h)
    if cfg["architecture"] == "jumprelu": return torch.relu(h) * (h > w["threshold"]).float()
    v, i = h.topk(cfg["k"], dim=-1); return torch.zeros_like(h).scatter(-1, i, v.relu())


@pytest.mark.parametrize("arch", list(ARCHITECTURES))
def test_files_compute_sae_lens_code(saved, arch):
    X, saes, root = saved
    cfg, w = json.loads((root / arch / SAE_CFG_FILE).read_text()), load_file(str(root / arch / SAE_WEIGHTS_FILE))
    with torch.no_grad():
        f = saes[arch].encode(X)
        torch.testing.assert_close(_sae_lens_encode(cfg, w, X), f, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(f @ w["W_dec"] + w["b_dec"], saes[arch].decode(f), rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(importlib.util.find_spec("sae_lens") is None, reason="sae-lens is not installed: loading our folders into sae_lens.SAE.load_from_disk is not tested")
@pytest.mark.parametrize("arch", list(ARCHITECTURES))
def test_sae_lens_loads_our_folder(saved, arch):
    from sae_lens import SAE as LensSAE
    X, saes, root = saved
    lens = LensSAE.load_from_disk(str(root / arch), device="cpu")
    with torch.no_grad():
        torch.testing.assert_close(lens.encode(X), saes[arch].encode(X), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(lens.decode(lens.encode(X)), saes[arch](X), rtol=1e-5, atol=1e-5)


def test_unthresholded_batchtopk_and_foreign_folders(tmp_path):
    s = make_sae("batchtopk", 16, 64, 3, seed=0); s.save_pretrained(tmp_path / "b")
    assert json.loads((tmp_path / "b" / SAE_CFG_FILE).read_text())["architecture"] == "batchtopk"
    assert type(BatchTopKSAE.from_pretrained(tmp_path / "b")) is BatchTopKSAE
    with pytest.raises(TypeError, match="holds a BatchTopKSAE, not a JumpReLUSAE"): JumpReLUSAE.from_pretrained(tmp_path / "b")
    # a folder as sae-lens writes a JumpReLU SAE that subtracts b_dec from the input: folded into b_enc
    j = make_sae("jumprelu", 16, 64, 3, seed=3); (tmp_path / "lens").mkdir(); X = _data()
    w = {"W_enc": j.W_enc.detach().contiguous(), "W_dec": j.W_dec.detach(), "b_enc": j.b_enc.detach() + 0.05, "b_dec": torch.linspace(-1, 1, 16),
         "threshold": torch.full((64,), 0.02)}
    save_file(w, str(tmp_path / "lens" / SAE_WEIGHTS_FILE))
    cfg = dict(d_in=16, d_sae=64, dtype="float32", device="cpu", apply_b_dec_to_input=True, normalize_activations="none",
               reshape_activations="none", metadata=dict(sae_lens_version="6.18.0"), architecture="jumprelu")
    (tmp_path / "lens" / SAE_CFG_FILE).write_text(json.dumps(cfg))
    with torch.no_grad(): torch.testing.assert_close(SAE.from_pretrained(tmp_path / "lens").encode(X), _sae_lens_encode(cfg, w, X), rtol=1e-5, atol=1e-5)
    (tmp_path / "lens" / SAE_CFG_FILE).write_text(json.dumps({**cfg, "architecture": "transcoder"}))
    with pytest.raises(ValueError, match="'transcoder' is not supported"): SAE.from_pretrained(tmp_path / "lens")


def test_old_theta_state_dicts_still_load():
    j = JumpReLUSAE(8, 16, seed=0)
    with torch.no_grad(): j.threshold.fill_(0.25)
    old = {("theta" if k == "threshold" else k): v for k, v in j.state_dict().items()}
    j2 = JumpReLUSAE(8, 16, seed=1); j2.load_state_dict(old)
    assert torch.equal(j2.threshold, j.threshold) and j2.theta is j2.threshold
    assert "threshold" in dict(j2.named_parameters()) and "theta" not in dict(j2.named_parameters())


@pytest.mark.skipif(importlib.util.find_spec("sae_lens") is None, reason="sae-lens is not installed: reading folders that sae-lens wrote is tested only on hand-written ones")
@pytest.mark.parametrize("lens_arch", ["standard", "topk", "jumprelu", "gated"])
def test_we_load_folders_sae_lens_wrote(tmp_path, lens_arch):
    from sae_lens import SAE as LensSAE
    cfg = dict(d_in=16, d_sae=64, architecture=lens_arch, apply_b_dec_to_input=lens_arch != "jumprelu", **({"k": 4} if lens_arch == "topk" else {}))
    lens = LensSAE.from_dict(cfg)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in lens.parameters(): p.copy_(torch.randn(p.shape, generator=g) * 0.3)
        if lens_arch == "jumprelu": lens.threshold.abs_()
    lens.save_model(str(tmp_path / "l"))
    ours, X = SAE.from_pretrained(tmp_path / "l"), _data()
    with torch.no_grad():
        torch.testing.assert_close(ours.encode(X), lens.encode(X), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(ours(X), lens(X), rtol=1e-5, atol=1e-5)


def test_gemma_scope_params_npz_by_hub_id(tmp_path):
    """Gemma Scope's layout (`<layer>/<width>/<l0>/params.npz` in a hub repo) loads by repo id through the hub cache, offline,
    as a JumpReLU SAE with the arrays bit for bit and Gemma Scope's code z·1[z > θ], z = x W_enc + b_enc (no b_dec on the input)."""
    import numpy as np
    import trustlib.rehearse as RH
    from trustlib.interp.sae import load_gemma_scope, gemma_scope_file
    from trustlib.config import ResourceUnavailable
    folder = RH.build_standins(tmp_path, models=[], data=["gemma_scope"])
    with RH.rehearsal(folder):
        path = gemma_scope_file("google/gemma-scope-9b-pt-res", "layer_20/width_16k/average_l0_408")
        assert path.is_file() and path.parts[-4:] == ("layer_20", "width_16k", "average_l0_408", "params.npz") and "snapshots" in path.parts
        sae = load_gemma_scope("google/gemma-scope-9b-pt-res", "layer_20/width_16k/average_l0_408")
        with pytest.raises(ResourceUnavailable, match="could not be found"): load_gemma_scope("google/gemma-scope-9b-pt-res", "layer_9/width_16k/average_l0_1")
    z = np.load(path)
    assert isinstance(sae, JumpReLUSAE) and (sae.d_in, sae.d_sae) == z["W_enc"].shape and not sae.training
    for k in ("W_enc", "W_dec", "b_enc", "b_dec", "threshold"): assert np.array_equal(getattr(sae, k).detach().numpy(), z[k]), k
    x = torch.randn(50, sae.d_in, generator=torch.Generator().manual_seed(0))
    h = x.numpy() @ z["W_enc"] + z["b_enc"]
    with torch.no_grad(): np.testing.assert_allclose(sae.encode(x).numpy(), h * (h > z["threshold"]), rtol=1e-5, atol=1e-6)
    snap = path.parents[3]                                                                                 # a local folder works too
    assert torch.equal(load_gemma_scope(str(snap), "layer_20/width_16k/average_l0_408").W_enc, sae.W_enc)
