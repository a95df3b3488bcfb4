"""EcoLevels (trustlib.bias.ecolevels): properties beyond the notebook's examples — the parameters cell is the canonical
one, the exact permutation p-value equals a brute-force enumeration, the taxonomy can be re-worded as data, the
audit agrees with fairlearn's MetricFrame, and the full profile stops with ResourceUnavailable without a local model."""
import itertools
from pathlib import Path
import numpy as np
import pytest
from trustlib.config import check_parameters_cell, ResourceUnavailable, ConfigError
from trustlib.bias import ecolevels as eco
from published import published_verdicts

ROOT = Path(__file__).resolve().parents[1]

def test_parameters_cell_is_canonical():
    import nbformat
    nb = nbformat.read(ROOT / "nbs" / "papers" / "bias" / "ecolevels.ipynb", as_version=4)
    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(cells) == 1
    assert check_parameters_cell(eco.Config, cells[0].source) == []
    assert any("Config.from_namespace(globals())" in c.source for c in nb.cells if c.cell_type == "code")
    assert eco.Config.unbounded_fields() == []

def test_exact_pvalue_is_brute_force_enumeration():
    rng = np.random.default_rng(3)
    X, Y, A, B = (rng.normal(size=(4, 5)) for _ in range(4))
    XY = np.concatenate([X, Y])
    obs = eco.weat_statistic(X, Y, A, B)
    stats = []
    for c in itertools.combinations(range(8), 4):
        rest = [i for i in range(8) if i not in c]
        stats.append(eco.weat_statistic(XY[list(c)], XY[rest], A, B))
    brute = np.mean(np.array(stats) >= obs - 1e-12)
    p, n, exact = eco.weat_pvalue(X, Y, A, B, n_permutations=1000)
    assert exact and n == 70 and p == pytest.approx(brute, abs=1e-12)
    assert 0 < p <= 1

def test_effect_size_matches_scipy_formula():
    rng = np.random.default_rng(0)
    X, Y, A, B = (rng.normal(size=(6, 8)) for _ in range(4))
    sx, sy = eco.association_scores(X, A, B), eco.association_scores(Y, A, B)
    assert eco.weat_effect_size(X, Y, A, B) == pytest.approx((sx.mean() - sy.mean()) / np.std(np.r_[sx, sy], ddof=1))

def test_taxonomy_is_data():
    runners = {k: None for k in ("weat", "resume_trained", "resume_zeroshot", "bias_in_bios", "planted_weat", "planted_screener")}
    text = eco.CATALOGUE_YAML.replace("name: association", "name: implicit").replace("level: association", "level: implicit")
    cat = eco.load_catalogue(text, runners=runners)
    assert "implicit" in cat.levels and cat.probes["weat_word"].level == "implicit"
    with pytest.raises(ValueError, match="unknown level 'association'"):
        eco.load_catalogue(eco.CATALOGUE_YAML.replace("name: association", "name: implicit"), runners=runners)
    with pytest.raises(ValueError, match="duplicate id"):
        eco.load_catalogue(eco.CATALOGUE_YAML.replace("id: weat_static", "id: weat_word"), runners=runners)
    with pytest.raises(ValueError, match="levels, tasks and probes"):
        eco.load_catalogue("levels: []\n", runners=runners)
    with pytest.raises(ValueError, match="known runner"):
        eco.load_catalogue(eco.CATALOGUE_YAML.replace("runner: weat\n", "runner: os.system\n", 1))

def test_audit_agrees_with_metricframe():
    from fairlearn.metrics import MetricFrame, selection_rate
    rng = np.random.default_rng(1)
    f, m = rng.integers(0, 2, 50), rng.integers(0, 2, 50)
    a = eco.counterfactual_audit(f, m, ["nurse"] * 50, {"nurse": "female"})
    y = np.r_[f, m]; sens = ["female"] * 50 + ["male"] * 50
    mf = MetricFrame(metrics=selection_rate, y_true=y, y_pred=y, sensitive_features=sens)
    assert a["gap"] == pytest.approx(mf.by_group["female"] - mf.by_group["male"])
    assert a["dp"] == pytest.approx(mf.difference())

def test_planted_corpus_is_seeded():
    a, ra = eco.planted_corpus(500, 0.8, np.random.default_rng(7))
    b, rb = eco.planted_corpus(500, 0.8, np.random.default_rng(7))
    assert ra == rb and np.array_equal(a, b)

def test_full_profile_needs_a_local_model(tmp_path):
    with pytest.raises(ResourceUnavailable, match="lm_path"):
        eco.run(eco.Config.from_params("full"), progress=False)
    with pytest.raises(ResourceUnavailable, match="is not a folder"):
        eco.load_encoder(lm_path=str(tmp_path / "missing"))

def test_named_resources_are_refused_before_work(tmp_path):
    "A model path that is not a Hugging Face folder, and an unknown occupation, are refused by Config (naming the parameter)."
    with pytest.raises(ConfigError, match="parameter 'lm_path'.*is not a folder"): eco.Config.from_params("full", lm_path=str(tmp_path / "missing"))
    (tmp_path / "m").mkdir()
    with pytest.raises(ConfigError, match="parameter 'lm_path'.*no config.json"): eco.Config.from_params("smoke", lm_path=str(tmp_path / "m"))
    (tmp_path / "m" / "config.json").write_text("{}")
    with pytest.raises(ConfigError, match="parameter 'lm_path'.*no weights"): eco.Config.from_params("smoke", lm_path=str(tmp_path / "m"))
    with pytest.raises(ConfigError, match="'bios_occupations'"): eco.Config.from_params("smoke", bios_occupations=["nurse"])

def test_valid_decision_probes_come_from_the_catalogue():
    "The headline reads every decision probe the catalogue rates valid for resume screening: a re-rated probe joins or leaves."
    runners = {k: None for k in ("weat", "resume_trained", "resume_zeroshot", "bias_in_bios", "planted_weat", "planted_screener")}
    assert eco.valid_decision_probes(eco.load_catalogue(runners=runners)) == ["bias_in_bios", "resume_retrieval", "resume_screener"]
    low = eco.CATALOGUE_YAML.replace("eco: {input_naturalness: 3, output_format: 4, task_match: {resume_screening: 4, reference_letters: 2, word_association: 1}}\n"
                                     "    stimuli: {resumes: synthetic, swaps: names and pronouns, ranking",
                                     "eco: {input_naturalness: 1, output_format: 1, task_match: {resume_screening: 1, reference_letters: 2, word_association: 1}}\n"
                                     "    stimuli: {resumes: synthetic, swaps: names and pronouns, ranking")
    assert low != eco.CATALOGUE_YAML
    assert eco.valid_decision_probes(eco.load_catalogue(low, runners=runners)) == ["bias_in_bios", "resume_screener"]

def test_headline_condition_holds_on_the_published_run():
    """The page is a cpu run, and the headline (which needs the resume audit's positive control and working occupation
    classifiers) was graded with its conditions met on that run."""
    rows, note = published_verdicts(ROOT / "nbs" / "papers" / "bias" / "ecolevels.ipynb")
    assert 'profile = "cpu"' in note, note
    head = next(c for c in eco.CLAIMS if c.headline)
    row = next(r for r in rows if r["claim"] == head.claim)
    assert row.get("conditions") and "condition not met" not in row["reason"], row

@pytest.mark.slow
def test_headline_condition_on_part_of_the_cpu_configuration():
    """Recomputed on a cheap part of the published configuration (the condition on all cpu seeds is read from the
    published run above): on the first cpu seed, with the cpu sizes, the resume audit's positive control shows a gap
    above the condition's 0.1 — and the same audit with no bias put into the labels does not, so the check can fail;
    the Bias-in-Bios classifier of the cpu configuration's first occupation is well above chance. Checked by the same
    tests the claim requires. (The whole condition costs about two CPU minutes, most of it encoding every occupation's
    biographies; the encodings of the resume seed are shared by both audits.)"""
    cfg = eco.Config.from_params("cpu")
    encode = eco.load_encoder(cfg)
    from trustlib.config import derive_seed
    ctrl, nobias = [eco.resume_probe(encode, cfg.n_train_resumes, cfg.n_test_resumes, b, derive_seed(cfg.seed, "resume", 0))["control"]["gap"]
                    for b in (cfg.positive_bias, 0.0)]
    data, _ = eco.bios_data(cfg.bios_occupations[:1], cfg.bios_train, cfg.bios_max_test, cfg.bios_min_per_gender, cfg.seed)
    bios = eco.bios_probe(encode, data, 200, cfg.seed, cfg.bios_max_length)
    control, accuracy = next(c for c in eco.CLAIMS if c.headline).requires
    assert control.evaluate({"resume/control/gap": ctrl}).verdict == "reproduced", (ctrl, control.evaluate({"resume/control/gap": ctrl}).note)
    assert control.evaluate({"resume/control/gap": nobias}).verdict != "reproduced", nobias      # the check can fail
    o = accuracy.evaluate({"bios/balanced_accuracy": bios["balanced_accuracy"]})
    assert o.verdict == "reproduced", o.note
