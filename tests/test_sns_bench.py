"""SNS-Bench harness: scorers cross-checked against libraries and against the official evaluator code (parity on
hand-made answers without the data, and on perturbed gold answers of all 12 subsets where the data is present),
the run without the licensed data (every data claim inconclusive, with the reason), bad parameters refused before
any work, valid baseline choices that must not crash, and — where the data is present — the counts, label
distributions and constant-answer scores derived from the official scoring rules."""
import ast, importlib.util, json, os
from collections import Counter
from pathlib import Path
import numpy as np
import pytest
import trustlib.evals.sns_bench as sb
from trustlib.config import ConfigError, ResourceUnavailable
from trustlib.results import grade

ROOT = Path(__file__).resolve().parents[1]
PARITY = json.loads((ROOT / "tests" / "fixtures" / "sns_bench_parity.json").read_text())

def _tool():
    spec = importlib.util.spec_from_file_location("sns_bench_parity", ROOT / "tools" / "sns_bench_parity.py")
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
    return m


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
    # the rouge package counts distinct n-grams: P 3/3, R 3/5 ('the' once); rouge-score would give R 3/6
    assert s["success_rouge1"] == pytest.approx(100 * 2 * 1 * 0.6 / 1.6)


def test_rouge_is_the_official_package():
    "ROUGE comes from the `rouge` package the official evaluator uses, on the jieba tokens joined by spaces."
    from rouge import Rouge
    import jieba
    hyp, ref = "the plot is thin. the acting is fine", "the acting is fine. the plot is thin and slow"
    sc = Rouge().get_scores(" ".join(jieba.cut(hyp)), " ".join(jieba.cut(ref)))[0]
    s = sb.score_mrc_simple([repr([hyp])], [[ref]])
    assert s["success_rouge1"] == pytest.approx(100 * sc["rouge-1"]["f"]) and s["success_rougeL"] == pytest.approx(100 * sc["rouge-l"]["f"])


def test_emoji_removed_with_demoji():
    import demoji
    text = "Sunset at the pier 🌅🏖️ — worth it ✨ (2 hrs) ☕️\nnext stop"
    assert sb.clean_passage(text) == demoji.replace(text.replace("\n", ""), "")


def test_parity_with_official_code_on_handmade_answers():
    "Our scorers give the official evaluators' numbers (recorded from the official code by tools/sns_bench_parity.py) on answers written there."
    tool = _tool()
    for name, (preds, golds) in tool.HANDMADE.items():
        got = tool.ours(name, preds, [dict(answer=g) for g in golds])
        assert got == pytest.approx(PARITY["handmade"][name], abs=1e-9), name


@pytest.mark.requires_sns_bench
def test_parity_with_official_code_on_perturbed_gold_answers():
    "Every gold answer of the 12 subsets, perturbed (seeded), scored by ours and by the official evaluator code: the same reported score."
    tool, data = _tool(), sb.load_all()
    answers = tool.perturbed_answers(data, PARITY["seed"])
    assert sorted(answers) == sorted(PARITY["perturbed"])
    for name, preds in answers.items():
        assert tool.ours(name, preds, data[name]) == pytest.approx(PARITY["perturbed"][name], abs=1e-9), name


@pytest.mark.skipif(not os.environ.get("SNS_BENCH_OFFICIAL"), reason="set SNS_BENCH_OFFICIAL=<an SNS-Bench checkout> to run the official code live")
def test_parity_live_with_the_official_checkout():
    tool = _tool(); mods = tool.load_official(os.environ["SNS_BENCH_OFFICIAL"])
    for name, (preds, golds) in tool.HANDMADE.items():
        recs = [dict(answer=g) for g in golds]
        assert tool.ours(name, preds, recs) == pytest.approx(tool.official_score(mods, name, preds, recs), abs=1e-9), name


def test_chlw_unparseable_and_empty_rules():
    s = sb.score_chlw(["Sure! ['a']", "['a', 1]", "[]"], ["['a']", "['a']", "[]"])
    assert s["success_ratio"] == pytest.approx(100 * 2 / 3)                   # a list with a non-string is unparseable
    assert s["f1"] == pytest.approx(round(2 * 2 / (2 + 2 + 1e-4), 4) * 100)   # 'a' and ''∩'' both hit


def test_run_without_data_skips_with_reason(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("TRUSTLIB_SNS_BENCH", str(tmp_path))
    r = sb.run(sb.Config.from_params("smoke"), progress=False)
    assert r.metrics["data_available"] == 0 and r.metrics["selfcheck/micro_f1_3_items"] == 0.5714
    assert "Skipped: SNS-Bench data not found" in capsys.readouterr().out
    verdicts = {v.id: v for v in grade(sb.CLAIMS, r.metrics)}
    graded = [v for v in verdicts.values() if v.verdict not in ("not_testable_offline", "illustrated")]
    assert graded and all(v.verdict == "inconclusive" and v.condition_met is False and "SNS-Bench data present" in v.reason for v in graded)



def test_publish_refused_without_the_data(monkeypatch, tmp_path, capsys):
    "`trustlib run sns_bench --publish` without the licensed files would publish an all-inconclusive page: refused before any work, saying where it looked and which variable to set."
    from trustlib.cli import main
    monkeypatch.setenv("TRUSTLIB_SNS_BENCH", str(tmp_path/"empty"))
    rc = main(["run", "sns_bench", "--profile", "cpu", "-q", "--runs-dir", str(tmp_path/"runs"), "--publish"])
    err = capsys.readouterr().err
    assert rc == 2 and "--publish refused: SNS-Bench data not found at" in err and str(tmp_path/"empty") in err and "TRUSTLIB_SNS_BENCH=" in err, err
    assert not (tmp_path/"runs").exists()
    assert sb.publish_blocker() is not None


@pytest.mark.requires_sns_bench
def test_publish_allowed_with_the_data():
    assert sb.publish_blocker() is None

@pytest.mark.parametrize("params,match", [
    (dict(baselines=()), "parameter 'baselines'"),
    (dict(baselines=("random", "lm")), "parameter 'model'"),
    (dict(baselines=("first", "first")), "listed twice"),
    (dict(model="./no/such/model/folder"), "parameter 'model'"),
    (dict(model="/definitely/not/here"), "parameter 'model'"),
])
def test_bad_parameters_refused_before_any_work(params, match):
    with pytest.raises(ConfigError, match=match): sb.Config.from_params("smoke", **params)


def test_model_not_in_the_local_cache_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path)); monkeypatch.setenv("HF_HOME", str(tmp_path))
    with pytest.raises(ResourceUnavailable, match="not in the local Hugging Face cache"):
        sb.Config.from_params("full", model="some-org/some-model-that-is-not-here")


@pytest.mark.requires_sns_bench
@pytest.mark.parametrize("baselines", [("random", "majority"), ("empty",), ("majority",)])
def test_valid_baseline_choices_run(baselines):
    "Any non-empty choice of baselines runs to the end (no baseline is assumed), and the claims it cannot feed are inconclusive."
    cfg = sb.Config.from_params("smoke", baselines=baselines, n_items=20, n_seeds=2)
    r = sb.run(cfg, progress=False)
    assert set(r.tables["scores"].baseline) >= set(baselines)
    v = {x.id: x.verdict for x in grade(sb.CLAIMS, r.metrics)}
    assert v["minilm_beats_trivial"] == "inconclusive" and v["benchmark_size"] == "reproduced"
    if "empty" not in baselines: assert r.metrics["chlw/empty_minus_best_picker"] is None


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
