"""Backdoor complications (trustlib.robustness.backdoor): properties beyond the notebook's examples — the parameters
cell is canonical, poisoning and trigger insertion hold for random inputs, the KL matches scipy, the cached
bottom + trainable top equals the full encoder, and the full profile stops with ResourceUnavailable offline."""
from pathlib import Path
import numpy as np
import pytest
from trustlib.config import check_parameters_cell, ConfigError, ResourceUnavailable
from trustlib.robustness import backdoor as bd

ROOT = Path(__file__).resolve().parents[1]

def test_parameters_cell_is_canonical():
    import nbformat
    nb = nbformat.read(ROOT / "nbs" / "papers" / "robustness" / "backdoor_complications.ipynb", as_version=4)
    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(cells) == 1
    assert check_parameters_cell(bd.Config, cells[0].source) == []
    assert any("Config.from_namespace(globals())" in c.source for c in nb.cells if c.cell_type == "code")
    assert bd.Config.unbounded_fields() == []

def test_poison_mask_counts_for_random_labels():
    rng = np.random.default_rng(0)
    for _ in range(200):
        k = int(rng.integers(2, 6)); y = rng.integers(0, k, size=int(rng.integers(1, 80)))
        target, rate = int(rng.integers(0, k)), float(rng.choice([0.0, 1.0, rng.random()]))
        m = bd.poison_mask(y, target, rate, np.random.default_rng(1))
        assert not m[y == target].any()
        for c in set(y.tolist()) - {target}:
            assert m[y == c].sum() == round(rate * (y == c).sum())
        seqs = [[101, *rng.integers(1000, 2000, size=int(rng.integers(0, 6))).tolist(), 102] for _ in y]
        ps, py = bd.poison(seqs, y, m, 24477, target)
        for s, p, flag in zip(seqs, ps, m):
            if flag:
                assert p[1] == 24477 and p[0] == 101 and p[-1] == 102
                if len(s) > 2: assert len(p) == len(s) and p[2:] == s[2:]     # replaced, length kept
                else: assert p == [101, 24477, 102]                            # no word at position 1: inserted
            else: assert p == s
        assert (py[m] == target).all() and (py[~m] == y[~m]).all()

@pytest.mark.parametrize("rate", [-0.5, 1.01, float("nan"), True])
def test_bad_poison_rate_rejected(rate):
    with pytest.raises(ConfigError, match="'poison_rate'"): bd.poison_mask(np.array([0, 1, 1]), 0, rate, np.random.default_rng(0))
    if not isinstance(rate, bool) and rate == rate:
        with pytest.raises(ConfigError, match="'poison_rate'"): bd.Config.from_params("smoke", poison_rate=rate)

def test_kl_matches_scipy_and_is_finite():
    from scipy.stats import entropy
    rng = np.random.default_rng(0)
    for _ in range(100):
        p, q = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5))
        assert abs(bd.kl_divergence(p, q, eps=1e-12) - entropy(p, q)) < 1e-8
        assert bd.kl_divergence(p, q) >= 0 and abs(bd.kl_divergence(p, p)) < 1e-12
        p[rng.integers(0, 5)] = 0; p /= p.sum(); q[rng.integers(0, 5)] = 0; q /= q.sum()
        assert np.isfinite(bd.kl_divergence(p, q)) and np.isfinite(bd.kl_divergence(q, p))

def test_split_encoder_equals_minilm():
    "Cached bottom + untouched top reproduces MiniLM's last hidden states at every split point (float16 cache)."
    import torch
    torch.set_num_threads(1)
    tok, model = bd.load_ptlm("minilm")
    ids = bd.tokenize(tok, ["a quiet, moving film", "the worst two hours of my year", "yes"], max_length=16)
    enc = tok(["a quiet, moving film", "the worst two hours of my year", "yes"], padding=True, truncation=True, max_length=16, return_tensors="pt")
    with torch.no_grad(): h = model(**enc).last_hidden_state
    m = enc["attention_mask"].unsqueeze(-1).float(); ref = ((h * m).sum(1) / m.sum(1)).numpy()
    for k in (0, 3, 5):
        got = bd.pooled(bd.TopEncoder(model, k), bd.bottom_states(model, ids, k))
        assert np.abs(got - ref).max() < 2e-2
    with pytest.raises(ConfigError, match="'n_frozen'"): bd.bottom_states(model, ids, 6)

def test_full_profile_needs_a_local_bert(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    try: bd.load_ptlm("bert-base-uncased")
    except ResourceUnavailable as e: assert "bert-base-uncased" in str(e)
    else: pytest.skip("bert-base-uncased is in the local Hugging Face cache here")


@pytest.mark.parametrize("params,match", [
    (dict(aux_tasks=["87_glue_cola", "no_such_dataset"]), "parameter 'aux_tasks': 'no_such_dataset'"),
    (dict(downstream_tasks=["97_news_clas"]), "parameter 'downstream_tasks'"),
    (dict(backdoor_task="97_news_class"), "parameter 'backdoor_task'"),     # four classes: the backdoor task must be binary
    (dict(backdoor_task="sst2_typo"), "parameter 'backdoor_task'"),
    (dict(downstream_tasks=[]), "parameter 'downstream_tasks'"),
    (dict(n_frozen=6), "parameter 'n_frozen'"),
    (dict(precision="fp16"), "parameter 'precision'"),
])
def test_bad_names_refused_before_any_work(params, match):
    with pytest.raises(ConfigError, match=match): bd.Config.from_params("smoke", **params)


def _published_verdicts() -> list[dict]:
    "The verdict table stored in the committed page (the published cpu run), one dict per claim."
    import importlib.util, json
    spec = importlib.util.spec_from_file_location("ledger_legacy", ROOT / "tools" / "ledger_legacy.py")
    tool = importlib.util.module_from_spec(spec); spec.loader.exec_module(tool)
    nb = json.loads((ROOT / "nbs" / "papers" / "robustness" / "backdoor_complications.ipynb").read_text(encoding="utf-8"))
    html = next("".join(o["data"]["text/html"]) for c in nb["cells"] if c["cell_type"] == "code" and "verdict_table()" in "".join(c["source"])
                for o in c.get("outputs", []) if "text/html" in o.get("data", {}))
    p = tool._Table(); p.feed(html)
    cols = [h for h in p.rows[0] if h]
    return [dict(zip(cols, r[1:])) for r in p.rows[1:]]

def test_published_run_creates_the_papers_condition():
    """The stand-in creates the condition the complication claims need on the configuration the page publishes (its cpu run):
    a working backdoor (ASR of the backdoored models >= 0.9, and their clean accuracy at most 2 points below their clean twins')."""
    nb_params = (ROOT / "nbs" / "papers" / "robustness" / "backdoor_complications.ipynb").read_text(encoding="utf-8")
    assert 'profile = \\"cpu\\"' in nb_params or "profile = 'cpu'" in nb_params or '`profile = "cpu"`' in nb_params
    rows = _published_verdicts()
    with_conditions = [r for r in rows if r.get("conditions")]
    assert len(with_conditions) >= 6, rows
    for r in with_conditions:
        assert not r["reason"].startswith("condition not met"), (r["claim"], r["reason"])
