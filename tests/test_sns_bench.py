"""SNS-Bench harness: scorers cross-checked against libraries on hand-made answers (no data needed), the run
without the licensed data (every data claim `not_testable_offline`, with the reason), and — where the data is
present — the counts, label distributions and constant-answer scores derived from the official scoring rules."""
import ast, json
from collections import Counter
from pathlib import Path
import numpy as np
import pytest
import trustlib.evals.sns_bench as sb

ROOT = Path(__file__).resolve().parents[1]


def test_set_micro_f1_matches_sklearn_micro_f1():
    from sklearn.metrics import f1_score
    from sklearn.preprocessing import MultiLabelBinarizer
    rng = np.random.default_rng(0)
    vocab = list("abcdefgh")
    preds = [list(rng.choice(vocab, rng.integers(0, 4), replace=False)) for _ in range(40)]
    golds = [list(rng.choice(vocab, rng.integers(1, 4), replace=False)) for _ in range(40)]
    mlb = MultiLabelBinarizer(classes=vocab).fit([vocab])
    ref = f1_score(mlb.transform(golds), mlb.transform(preds), average="micro")
    assert abs(sb.set_micro_f1(preds, golds)["f1"] - ref) < 2e-4          # only the 1e-4 term and the rounding differ


def test_bleu_and_rouge_on_hand_made_passages():
    # identical passages of >= 4 tokens: BLEU 1 and ROUGE 1; shorter passages get BLEU 0 (4-gram BLEU, no smoothing)
    s = sb.score_mrc_simple(["['a long enough passage here']"], [["a long enough passage here"]])
    assert s["success_bleu"] == pytest.approx(100) and s["success_rougeL"] == pytest.approx(100)
    s = sb.score_mrc_simple(["['two words']"], [["two words"]])
    assert s["success_bleu"] == pytest.approx(0) and s["success_rouge1"] == pytest.approx(100)
    s = sb.score_mrc_simple(["['the cat sat']"], [["the cat sat on the mat"]])
    assert s["success_rouge1"] == pytest.approx(100 * 2 * 1 * 0.5 / 1.5)   # P 3/3 (jieba spaces dropped), R 3/6


def test_chlw_unparseable_and_empty_rules():
    s = sb.score_chlw(["Sure! ['a']", "['a', 1]", "[]"], ["['a']", "['a']", "[]"])
    assert s["success_ratio"] == pytest.approx(100 * 2 / 3)                   # a list with a non-string is unparseable
    assert s["f1"] == pytest.approx(round(2 * 2 / (2 + 2 + 1e-4), 4) * 100)   # 'a' and ''∩'' both hit


def test_run_without_data_skips_with_reason(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("TRUSTLIB_SNS_BENCH", str(tmp_path))
    r = sb.run(sb.Config.from_params("smoke"), progress=False)
    assert r.metrics["data_available"] == 0 and r.metrics["selfcheck/micro_f1_3_items"] == 0.5714
    assert {v.verdict for v in r.verdicts} == {"not_testable_offline"}
    assert all("licensed CC BY-NC-SA 4.0" in v.reason for v in r.verdicts[1:])
    assert "Skipped: SNS-Bench data not found" in capsys.readouterr().out


def test_lm_baseline_without_model_fails_clearly(monkeypatch):
    cfg = sb.Config.from_params("full")
    with pytest.raises(sb.ResourceUnavailable, match="needs a causal LM"):
        sb._models(cfg, 0, None)


@pytest.mark.requires_sns_bench
def test_counts_and_label_distributions():
    data = sb.load_all()
    assert {n: len(r) for n, r in data.items()} == {n: s.n for n, s in sb.SUBSETS.items()}
    assert sum(map(len, data.values())) == 6658
    assert Counter(r["answer"] for r in data["Note-QueryCorr-topic"]) == {"-1": 188, "0": 132, "1": 142, "2": 165, "3": 173}
    assert sum(ast.literal_eval(r["answer"]) == [] for r in data["Note-CHLW"]) == 208
    assert sum(r["answer"] == [] for r in data["Note-MRC-simple"]) == 246
    for name, recs in data.items():                                            # every option list of CHLW parses
        if name == "Note-CHLW": assert all(sb.parse_fields(name, r)["cands"] for r in recs)


@pytest.mark.requires_sns_bench
def test_constant_answers_under_the_official_rules():
    data = sb.load_all()
    sc = lambda name, a: sb.score_subset(name, [a] * len(data[name]), data[name])["score"]
    assert sc("Note-CHLW", "[]") == pytest.approx(67.64, abs=0.01)
    assert sc("Note-MRC-simple", "[]") == 0
    assert sc("Note-QueryCorr-explain", "Yes") == pytest.approx(54.17, abs=0.01)
    assert sc("Note-Gender", "No") == pytest.approx(50.78, abs=0.01)
    assert sc("Note-QueryCorr-topic", "-1") == pytest.approx(7.6, abs=0.05)


@pytest.mark.requires_sns_bench
def test_no_note_text_in_the_committed_notebook():
    # licence guard: the published page shows counts and scores, never the notes themselves
    nb = (ROOT / "nbs" / "papers" / "evals" / "sns_bench.ipynb").read_text(encoding="utf-8")
    data = sb.load_all()
    leaked = [(n, r["content"][:60]) for n, recs in data.items() for r in recs
              if "content" in r and len(r["content"]) >= 60 and json.dumps(r["content"][:60])[1:-1] in nb]
    assert not leaked, leaked[:3]
