"""Property tests of trustlib.interp.circuits (MIB) beyond the notebook's examples: the paper's 4x4 graph and GPT-2's edge count."""
import numpy as np
import pytest
import torch
from trustlib.interp import circuits as C
from trustlib.models import TinyTransformer

@pytest.fixture(scope="module")
def setup():
    torch.manual_seed(0)
    voc = C.ioi_vocab()
    m = TinyTransformer(len(voc), 64, 4, 4, d_mlp=256, max_len=16, seed=3).eval()
    gm = C.GraphModel(m)
    return m, gm, C.make_ioi(12, np.random.default_rng(0), voc)

def test_edge_count_formula():
    assert C.n_edges(4, 4) == C.CircuitGraph(4, 4).n_edges == 479
    assert C.n_edges(12, 12) == C.CircuitGraph(12, 12).n_edges == 32491
    for L in range(1, 6):
        for H in range(1, 6): assert C.CircuitGraph(L, H).n_edges == C.n_edges(L, H)

def test_decomposition_full_and_empty(setup):
    m, gm, d = setup; g = gm.graph
    with torch.no_grad():
        lo, A = gm(d.clean, return_acts=True)
        torch.testing.assert_close(lo, m(d.clean), atol=1e-4, rtol=1e-4)
        _, cache = m.run_with_cache(d.clean, names=lambda n: n.endswith("hook_resid_post"))
        for l in range(4):
            resid = A[:, :, :1 + (l + 1) * 5].sum(2) + sum(m.blocks[i].attn.b_O for i in range(l + 1))
            torch.testing.assert_close(resid, cache[f"blocks.{l}.hook_resid_post"], atol=1e-5, rtol=1e-5)
        Ak = C.node_acts(gm, d.corrupt)
        torch.testing.assert_close(gm(d.clean, mask=torch.zeros(g.n_fwd, g.n_bwd), corrupt=Ak), m(d.corrupt), atol=1e-4, rtol=1e-4)
    mN, m0 = C.circuit_metric(gm, d, [g.valid, torch.zeros_like(g.valid)])
    assert float(C.faithfulness(mN, mN, m0)) == pytest.approx(1.0) and float(C.faithfulness(m0, mN, m0)) == pytest.approx(0.0)

def test_ig_one_step_is_eap_at_corrupted_run(setup):
    _, _, d = setup
    gm = C.GraphModel(TinyTransformer(len(C.ioi_vocab()), 32, 2, 2, d_mlp=64, max_len=16, seed=5).eval())
    for p in gm.parameters(): p.requires_grad_(False)
    torch.testing.assert_close(C.eap_ig_inputs(gm, d, steps=1), C.eap(gm, d, grad_at="corrupted"), atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(C.clean_corrupted(gm, d), (C.eap(gm, d) + C.eap(gm, d, grad_at="corrupted")) / 2, atol=1e-6, rtol=1e-5)

def test_exact_patching_matches_mask(setup):
    _, _, d = setup
    gm = C.GraphModel(TinyTransformer(len(C.ioi_vocab()), 32, 2, 2, d_mlp=64, max_len=16, seed=4).eval()); g = gm.graph
    S = C.exact_patching(gm, d[:4])
    u, v = g.edges[20]
    M = torch.ones(g.n_fwd, g.n_bwd); M[u, v] = 0
    with torch.no_grad():
        full = C.logit_diff(gm(d[:4].clean), d[:4].labels)
        one = C.logit_diff(gm(d[:4].clean, mask=M, corrupt=C.node_acts(gm, d[:4].corrupt)), d[:4].labels)
    assert float(S[u, v]) == pytest.approx(float(full - one), abs=1e-4)

def test_prune_leaves_no_dangling_nodes(setup):
    _, gm, d = setup; g = gm.graph
    S = C.random_scores(g, 1)
    for n in (3, 20, 100):
        E = C.top_n(g, S, n)
        into = torch.zeros(g.n_fwd + 1).index_add_(0, g.slot_node, E.any(0).float()) > 0
        for node in range(1, g.n_fwd):
            assert bool(E[node].any()) == bool(into[node])

def test_das_rotation_orthogonal_during_training():
    rng = np.random.default_rng(0)
    from trustlib.models import MLP, fit
    d = C.equality_data(400, rng); m = MLP(16, (64, 64), 2); fit(m, d.x, d.y, epochs=2, progress=False); m.eval()
    f = C.DASFeaturizer(64, 4, seed=0)
    _, worst = C.train_intervention(m, 1, f, C.counterfactual_pairs(200, rng), "das", epochs=3, check_orthogonal=True)
    assert worst < 1e-5
