# %% [markdown]
# # SNS-Bench: Defining, Building, and Assessing Capabilities of Large Language Models in Social Networking Services
#
# > An offline harness for SNS-Bench: loaders, prompt builders and the benchmark's own scorers for its 12 subsets, trivial and MiniLM baselines, and what the scorers reward.

# %% [markdown]
# Guo et al. (ICML 2025) build SNS-Bench from notes of the Xiaohongshu (RedNote) social network, translated
# into English: 6,658 questions in 12 subsets that cover 8 tasks a language model needs in a social
# networking service — note classification (Taxonomy), hashtag selection (Hashtag), query–note relevance
# (QueryCorr), reading comprehension (MRC), named entities (NER), gender sensitivity (Gender), comment
# highlight words (CHLW) and search-query generation (QueryGen). Each subset has its own scorer, several of
# them "success-" metrics that multiply the score by the fraction of answers the scorer could parse. The
# paper evaluates more than 25 LLMs and reports that performance varies with model size along a scaling law.
#
# This page is a harness: it reads the benchmark's JSON files at run time, builds prompts, lets any model
# with a `generate(prompts) -> texts` method answer them, and scores the answers with ports of the official
# evaluators. Without LLMs offline, it runs trivial strategies and an embedding zero-shot model, and studies
# what the scorers themselves reward.
#
# Official code and data: [HC-Guo/SNS-Bench](https://github.com/HC-Guo/SNS-Bench) (an OpenCompass fork;
# data licensed CC BY-NC-SA 4.0).
#
# ::: {.callout-note}
# ## What we reproduce / what we cannot
# - **The benchmark itself:** the 12 subsets are read from a local copy of the official files (never stored
#   in this repository: the licence is non-commercial share-alike). Their counts and label distributions are
#   checked. In a checkout without the files, every data-dependent cell says so and is skipped.
# - **The scorers**, ported from the official evaluators and tested on hand-made answers (the success ratio,
#   the set micro-F1 with its 1e-4 term, the CHLW empty-list rule, the MRC scorers).
# - **Baselines that run offline:** random, majority (fitted on a 20 % dev split), first-candidate and
#   always-empty strategies, and a MiniLM (all-MiniLM-L6-v2) zero-shot model whose thresholds are fitted on
#   the dev split only. Three seeds redraw the dev/test split. To fit the CPU budget, the `cpu` profile
#   evaluates the baselines on at most 400 items per subset (3,741 of the 6,658; the five smaller subsets
#   whole) and MiniLM reads the first 64 tokens of each text; the constant-answer and oracle scores use
#   every item. `-p n_items 0` runs all items.
# - **Trustworthiness of the scoring:** on CHLW the constant answer `[]` scores about 67.6 success-F1,
#   more than any strategy that picks words; oracle answers do not all reach 100.
# - **Not testable offline:** the paper's results on 25+ LLMs and their scaling with size. The `full`
#   profile runs any local Hugging Face causal LM through the same prompts and scorers.
# - **Metric deviations:** QueryGen's cosine term uses MiniLM instead of bge-large-en-v1.5; ROUGE comes
#   from `rouge-score` (on jieba tokens, as upstream) instead of the `rouge` package, whose ROUGE-L is
#   summary-level and splits sentences at periods; emoji are removed with a Unicode-range pattern instead
#   of `demoji`; answers are parsed with `ast.literal_eval`, never `eval`. The paper's overall
#   aggregation is not stated in its code; we report the mean of the 12 subset scores.
# :::

# %%
#| default_exp evals.sns_bench

# %%
#| export
from __future__ import annotations
import ast, json, math, re, warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence
import numpy as np
from trustlib.config import BaseConfig, param, ConfigError, ResourceUnavailable, derive_seed, torch_threads
from trustlib.data import DataUnavailable, sns_bench_dir, sns_bench_missing

# %%
#| hide
from fastcore.test import test_eq, test_fail, test_close
import tempfile
import pandas as pd
from trustlib.results import check_headline

# %% [markdown]
# ## Parameters
#
# Defaults are the `smoke` profile; `trustlib run sns_bench --profile cpu` (or papermill with
# `-p profile cpu`) runs the published configuration. `None` means "the profile's value".

# %%
from typing import Optional

# %% tags=["parameters"]
profile: str = "smoke"  # smoke (CI, < 60 s) | cpu (published results, minutes) | full (paper scale)
seed: Optional[int] = None  # base random seed; every random choice derives from it
n_seeds: Optional[int] = None  # independent dev/test splits
n_items: Optional[int] = None  # items per subset (0 means all)
dev_fraction: Optional[float] = None  # share of each subset used to fit majorities and thresholds
baselines: Optional[list[str]] = None  # strategies to evaluate (random, majority, first, empty, minilm, lm)
corruption_rates: Optional[list[float]] = None  # shares of answers made unparseable in the format-failure study
model: Optional[str] = None  # Hugging Face causal LM (name or local folder) for the lm baseline
max_new_tokens: Optional[int] = None  # generation length of the lm baseline
n_threads: Optional[int] = None  # torch threads (None: leave as is)

# %% [markdown] tags=["injected-parameters"]
# **This page shows a run with** `profile = "cpu"` (run `cpu-bf21a9e8fb`, commit `ac01ede`, 745 s, 2026-12-01). Running the notebook yourself uses the parameters cell above as written (the fast `smoke` profile unless you change it); `trustlib run sns_bench --profile cpu` repeats the run shown here.

# %%
#| export
BASELINES = ("random", "majority", "first", "empty", "minilm", "lm")

@dataclass
class Config(BaseConfig):
    "Configuration of the SNS-Bench harness run."
    n_seeds: int = param(3, "independent dev/test splits", ge=1, le=100)
    n_items: int = param(50, "items per subset (0 means all)", ge=0, le=100_000)
    dev_fraction: float = param(0.2, "share of each subset used to fit majorities and thresholds", gt=0, lt=1)
    baselines: tuple[str, ...] = param(("random", "majority", "first", "empty"), "strategies to evaluate (random, majority, first, empty, minilm, lm)", choices=BASELINES)
    corruption_rates: tuple[float, ...] = param((0.0, 0.1, 0.25, 0.5), "shares of answers made unparseable in the format-failure study", ge=0, le=1)
    model: str = param("", "Hugging Face causal LM (name or local folder) for the lm baseline")
    max_new_tokens: int = param(64, "generation length of the lm baseline", ge=1, le=4096)
    n_threads: Optional[int] = param(1, "torch threads (None: leave as is)", ge=1, le=1024)
    PROFILE_DEFAULTS = {
        "cpu": dict(n_items=400, baselines=("random", "majority", "first", "empty", "minilm")),
        "full": dict(n_items=0, baselines=("random", "majority", "first", "empty", "minilm", "lm"), max_new_tokens=256),
    }
    def validate(self):
        if 0.0 not in tuple(self.corruption_rates):
            raise ConfigError(f"parameter 'corruption_rates': must include 0.0 (the uncorrupted score), got {list(self.corruption_rates)}")


# %%
cfg = Config.from_namespace(globals())
cfg

# %%
test_eq(Config.from_params("cpu").n_items, 400)
test_fail(lambda: Config.from_params("smoke", baselines=("oracle",)), contains="baselines")
test_fail(lambda: Config.from_params("smoke", corruption_rates=(0.1, 0.5)), contains="0.0")
test_eq(Config.from_params("full").model, "")          # valid; run() then says which model is missing


# %% [markdown]
# ## The data
#
# The 12 subsets, their fields (from the data's provenance note), their sizes and the score each one
# reports. Questions are single-choice, multiple-choice or generative. The files are looked for in
# `$TRUSTLIB_SNS_BENCH`, else in `shared/data/sns_bench` in or next to the repository
# (`trustlib.data.sns_bench_dir`).

# %%
#| export
@dataclass(frozen=True)
class Subset:
    name: str            # file stem, e.g. 'Note-NER'
    task: str            # one of the 8 tasks
    fields: tuple        # fields every record must have
    n: int               # items in the official file
    kind: str            # single-choice | multiple-choice | generative
    metric: str          # the reported score

SUBSETS = {s.name: s for s in [
    Subset("Note-Taxonomy-single", "Note-Taxonomy", ("content", "candidates", "answer"), 1205, "single-choice", "accuracy"),
    Subset("Note-Taxonomy-multiple", "Note-Taxonomy", ("content", "candidates_primary", "candidates_secondary", "candidates_tertiary", "answer"), 800, "multiple-choice", "exact match"),
    Subset("Note-Hashtag-single", "Note-Hashtag", ("content", "candidates", "answer"), 800, "single-choice", "accuracy"),
    Subset("Note-Hashtag-multiple", "Note-Hashtag", ("content", "candidates", "answer"), 795, "multiple-choice", "micro-F1"),
    Subset("Note-QueryCorr-topic", "Note-QueryCorr", ("content", "answer"), 800, "single-choice", "success-macro-F1"),
    Subset("Note-QueryCorr-explain", "Note-QueryCorr", ("sentence1", "sentence2", "answer"), 144, "single-choice", "accuracy"),
    Subset("Note-MRC-simple", "Note-MRC", ("query", "content", "answer"), 800, "generative", "mean of success-F1, -BLEU, -ROUGE-1/2/L"),
    Subset("Note-MRC-complex", "Note-MRC", ("content", "answer"), 227, "generative", "mean of success-total-F1, -option-F1, -option-EM"),
    Subset("Note-NER", "Note-NER", ("question", "content", "answer"), 517, "generative", "micro-F1"),
    Subset("Note-Gender", "Note-Gender", ("content", "answer"), 193, "single-choice", "accuracy"),
    Subset("Note-CHLW", "Note-CHLW", ("content", "answer"), 297, "multiple-choice", "success-micro-F1"),
    Subset("Note-QueryGen", "Note-QueryGen", ("content", "answer"), 80, "generative", "mean of (cosine + ANLS)/2"),
]}

class SNSBenchFormatError(ValueError):
    "An SNS-Bench file is not what the harness expects (not JSON, not a list of records, a missing or mistyped field)."

def load_subset(name:str, # subset name, e.g. 'Note-NER' (see `SUBSETS`)
                root:str|Path|None=None, # folder with the JSON files (None: `trustlib.data.sns_bench_dir()`)
                ) -> list[dict]:
    "The records of subset `name`, each checked to have the subset's fields as strings (MRC-simple's answer: a list of strings)."
    if name not in SUBSETS: raise ConfigError(f"parameter 'name': {name!r} is not allowed; choose one of {list(SUBSETS)}")
    folder = Path(root) if root is not None else sns_bench_dir()
    path = folder / f"{name}.json"
    if not path.is_file():
        raise DataUnavailable(f"SNS-Bench subset {name}", [path], "the SNS-Bench folder must hold all 12 official JSON files")
    try: recs = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e: raise SNSBenchFormatError(f"{path.name}: not valid JSON ({e})") from None
    if not isinstance(recs, list) or not recs: raise SNSBenchFormatError(f"{path.name}: expected a non-empty JSON list of records, got {type(recs).__name__}")
    for i, r in enumerate(recs):
        if not isinstance(r, dict): raise SNSBenchFormatError(f"{path.name}: item {i} is a {type(r).__name__}, not a record")
        missing = [f for f in SUBSETS[name].fields if f not in r]
        if missing: raise SNSBenchFormatError(f"{path.name}: item {i} lacks field(s) {missing}")
        for f in SUBSETS[name].fields:
            v = r[f]
            ok = (isinstance(v, list) and all(isinstance(x, str) for x in v)) if (name == "Note-MRC-simple" and f == "answer") else isinstance(v, str)
            if not ok: raise SNSBenchFormatError(f"{path.name}: item {i}, field {f!r} has type {type(v).__name__}")
    return recs

def load_taxonomy_single(root=None): "Note-Taxonomy-single (1,205 items)."; return load_subset("Note-Taxonomy-single", root)
def load_taxonomy_multiple(root=None): "Note-Taxonomy-multiple (800 items)."; return load_subset("Note-Taxonomy-multiple", root)
def load_hashtag_single(root=None): "Note-Hashtag-single (800 items)."; return load_subset("Note-Hashtag-single", root)
def load_hashtag_multiple(root=None): "Note-Hashtag-multiple (795 items)."; return load_subset("Note-Hashtag-multiple", root)
def load_querycorr_topic(root=None): "Note-QueryCorr-topic (800 items)."; return load_subset("Note-QueryCorr-topic", root)
def load_querycorr_explain(root=None): "Note-QueryCorr-explain (144 items)."; return load_subset("Note-QueryCorr-explain", root)
def load_mrc_simple(root=None): "Note-MRC-simple (800 items)."; return load_subset("Note-MRC-simple", root)
def load_mrc_complex(root=None): "Note-MRC-complex (227 items)."; return load_subset("Note-MRC-complex", root)
def load_ner(root=None): "Note-NER (517 items)."; return load_subset("Note-NER", root)
def load_gender(root=None): "Note-Gender (193 items)."; return load_subset("Note-Gender", root)
def load_chlw(root=None): "Note-CHLW (297 items)."; return load_subset("Note-CHLW", root)
def load_querygen(root=None): "Note-QueryGen (80 items)."; return load_subset("Note-QueryGen", root)

def load_all(root:str|Path|None=None) -> dict[str, list[dict]]:
    "All 12 subsets, by name."
    return {n: load_subset(n, root) for n in SUBSETS}


# %% [markdown]
# The loader rejects malformed files with a message naming the file and the field (checked on small files
# written here, so this runs without the data):

# %%
_tmp = Path(tempfile.mkdtemp())
(_tmp / "Note-Gender.json").write_text('[{"content": "a note", "answer": "Yes"}, {"content": "b"}]')
test_fail(lambda: load_gender(_tmp), contains="item 1 lacks field(s) ['answer']")
(_tmp / "Note-Gender.json").write_text('{"content": "a note"')
test_fail(lambda: load_gender(_tmp), contains="Note-Gender.json: not valid JSON")
(_tmp / "Note-Gender.json").write_text('[{"content": "a note", "answer": 1}]')
test_fail(lambda: load_gender(_tmp), contains="field 'answer' has type int")
test_fail(lambda: load_ner(_tmp), contains="SNS-Bench subset Note-NER is not available")
(_tmp / "Note-Gender.json").write_text('[{"content": "a note", "answer": "Yes"}]')
test_eq(load_gender(_tmp), [{"content": "a note", "answer": "Yes"}])
test_eq(sum(s.n for s in SUBSETS.values()), 6658)
test_eq(len({s.task for s in SUBSETS.values()}), 8)

# %% [markdown]
# Where the data is present, the counts and label distributions must match the official files. In a
# checkout without the data this cell prints why it is skipped.

# %%
MISSING = sns_bench_missing("the data-dependent examples of this page")
if MISSING: print("Skipped:", MISSING)
else:
    DATA = load_all()
    test_eq({n: len(r) for n, r in DATA.items()}, {n: s.n for n, s in SUBSETS.items()})
    test_eq(Counter(r["answer"] for r in DATA["Note-QueryCorr-topic"]), {"-1": 188, "0": 132, "1": 142, "2": 165, "3": 173})
    test_eq(Counter(r["answer"] for r in DATA["Note-Gender"]), {"No": 98, "Yes": 95})
    test_eq(Counter(r["answer"] for r in DATA["Note-QueryCorr-explain"]), {"Yes": 78, "No": 66})
    test_eq(sum(r["answer"] == "[]" for r in DATA["Note-CHLW"]), 208)
    test_eq(sum(r["answer"] == [] for r in DATA["Note-MRC-simple"]), 246)
    display(pd.DataFrame([dict(subset=n, task=s.task, kind=s.kind, items=len(DATA[n]), reported=s.metric) for n, s in SUBSETS.items()]))

# %% [markdown]
# ## Post-processing
#
# Closed answers are cleaned the way the official post-processors do: drop `Answer:`, strip, and cut at
# the first newline, period or comma, or at a `<`, `>` or `endofresponse` (chat end tokens). The Taxonomy
# and Hashtag-single post-processors add `end` and `im_end` to that pattern as bare alternatives, so they
# also cut *inside* a word containing "end" — a quirk we keep (it makes a perfect answer such as "Trends"
# wrong; see the oracle table below). List answers (Hashtag-multiple, NER) cut only at a newline or end
# token and split at commas. Taxonomy-multiple is then compared with OpenCompass's exact-match
# normalisation (punctuation, articles and repeated spaces removed).

# %%
#| export
_CUT = r"[\n.,]|<|endofresponse|>"
_CUT_CHAT = _CUT + r"|<|end|>|<|im_end|>"    # as upstream: 'end' and 'im_end' are bare alternatives

def closed_postprocess(text:str, # raw model output
                       chat_tokens:bool=False, # also cut at 'end'/'im_end' (Taxonomy and Hashtag-single)
                       ) -> str:
    "A closed answer: 'Answer:' removed, stripped, cut at the first newline, period, comma or end token."
    text = text.replace("Answer:", "").strip()
    return re.split(_CUT_CHAT if chat_tokens else _CUT, text, maxsplit=1)[0].strip()

def list_postprocess(text:str, delimiter:str=",") -> list[str]:
    "A list answer: 'Answer:' removed, cut at the first newline or end token, split at `delimiter`, items stripped."
    text = text.replace("Answer:", "").strip()
    first = re.split(r"[\n]|<|endofresponse|>", text, maxsplit=1)[0]
    return [t.strip() for t in first.split(delimiter) if t]

def general_postprocess(text:str) -> str:
    "OpenCompass's exact-match normalisation: cut at newline/period/comma, drop punctuation and English articles, squeeze spaces."
    t = re.split(r"[\n.,]", text, maxsplit=1)[0]
    t = re.sub(r"[^\w\s]", "", t)
    t = re.sub(r"\b(a|an|the)\b", "", t, flags=re.IGNORECASE)
    return re.sub(r"\s+", " ", t).strip()


# %%
test_eq(closed_postprocess("Answer: Yes.\nBecause the note says so"), "Yes")
test_eq(closed_postprocess(" No, it is not"), "No")
test_eq(closed_postprocess("Food<|im_end|>"), "Food")
test_eq(closed_postprocess("Trends", chat_tokens=True), "Tr")          # the upstream quirk
test_eq(closed_postprocess("Trends"), "Trends")
test_eq(list_postprocess("Answer: Wuhan, Bank,, Savings\nmore"), ["Wuhan", "Bank", "Savings"])
test_eq(general_postprocess("Beauty | Skincare | The Cleansing"), "Beauty Skincare Cleansing")


# %% [markdown]
# ## Scorers
#
# All scores are on a 0–100 scale. The **success ratio** is `(1 − unparseable/N)·100` and a
# "success-X" score is `success ratio × X` with X in [0, 1]. The **set micro-F1** sums over items:
# `2·Σ|pred ∩ gold| / (Σ|pred| + Σ|gold| + 1e-4)`, rounded to 4 decimals as upstream.

# %%
#| export
def success_ratio(n_unparseable:int, n:int) -> float:
    "(1 − unparseable/N)·100."
    return (1 - n_unparseable / n) * 100

def set_micro_f1(preds:Sequence, golds:Sequence) -> dict:
    "Micro-averaged set F1, precision and recall (fractions, rounded to 4 decimals) over items of predicted and gold sets."
    if len(preds) != len(golds): raise ValueError(f"{len(preds)} predictions for {len(golds)} references")
    tp = n_pred = n_gold = 0
    for p, g in zip(preds, golds):
        p, g = set(p), set(g); tp += len(p & g); n_pred += len(p); n_gold += len(g)
    return dict(f1=round(2 * tp / (n_pred + n_gold + 1e-4), 4), precision=round(tp / (n_pred + 1e-4), 4),
                recall=round(tp / (n_gold + 1e-4), 4), tp=tp, n_pred=n_pred, n_gold=n_gold)

def score_accuracy(preds:Sequence[str], refs:Sequence[str], chat_tokens:bool=False) -> dict:
    "Accuracy (×100) of post-processed closed answers against the gold strings."
    p = [closed_postprocess(x, chat_tokens) for x in preds]
    acc = float(np.mean([a == str(b) for a, b in zip(p, refs, strict=True)]) * 100)
    return dict(score=acc, accuracy=acc)

def score_exact_match(preds:Sequence[str], refs:Sequence[str]) -> dict:
    "Taxonomy-multiple: exact match (×100) after the Taxonomy post-processor and OpenCompass's normalisation of both sides."
    hits = [general_postprocess(closed_postprocess(p, True)) in (general_postprocess(r), r) for p, r in zip(preds, refs, strict=True)]
    em = float(np.mean(hits) * 100)
    return dict(score=em, exact_match=em)

def score_set_f1(preds:Sequence[str], refs:Sequence[str]) -> dict:
    "Hashtag-multiple and NER: set micro-F1 (×100) of comma-split predictions against comma-split gold answers."
    m = set_micro_f1([list_postprocess(p) for p in preds], [list_postprocess(r) for r in refs])
    return dict(score=m["f1"] * 100, f1=m["f1"] * 100, precision=m["precision"] * 100, recall=m["recall"] * 100)


# %%
m = set_micro_f1([["a", "b"], ["c"], []], [["a"], ["c", "d"], ["e"]])
test_eq((m["tp"], m["n_pred"], m["n_gold"]), (2, 3, 4))
test_eq(m["f1"], round(4 / 7.0001, 4))                       # the 1e-4 term: 0.5714, not 4/7 = 0.571428…
test_eq(set_micro_f1([[]], [[]])["f1"], 0.0)
test_close(score_accuracy(["Answer: Yes.", "No, because", "yes"], ["Yes", "No", "Yes"])["score"], 200 / 3, eps=1e-9)
test_eq(score_exact_match(["Beauty | Skincare | Cleansing"], ["Beauty | Skincare | Cleansing"])["score"], 100.0)
test_eq(score_set_f1(["Wuhan, Bank"], ["Wuhan, Savings, Bank"])["score"], round(4 / 5.0001, 4) * 100)
test_eq(success_ratio(1, 4), 75.0)

# %% [markdown]
# **QueryCorr-topic.** The first match of `(-1|0|1|2|3)` in the answer is the level ("−1" is tried before
# "1"); no match is unparseable. Per-level precision, recall and F1 (with 1e-5 guards), then
# success-macro-F1 = mean of the five level F1s × the parsed fraction.

# %%
#| export
LEVELS = ("-1", "0", "1", "2", "3")

def score_querycorr_topic(preds:Sequence[str], refs:Sequence[str]) -> dict:
    "QueryCorr-topic: success-macro-F1 over the five relevance levels."
    cnt = {l: dict(tp=0, fp=0, fn=0) for l in LEVELS}; err = 0
    for p, r in zip(preds, refs, strict=True):
        m = re.findall(r"(-1|0|1|2|3)", p)
        if not m: err += 1; continue
        if m[0] == r: cnt[r]["tp"] += 1
        else: cnt[r]["fn"] += 1; cnt[m[0]]["fp"] += 1
    f1s = {}
    for l in LEVELS:
        c = cnt[l]; pr = c["tp"] / (c["tp"] + c["fp"] + 1e-5) * 100; rc = c["tp"] / (c["tp"] + c["fn"] + 1e-5) * 100
        f1s[l] = 2 * pr * rc / (pr + rc + 1e-5)
    sr = success_ratio(err, len(preds))
    return dict(score=float(np.mean(list(f1s.values())) * sr / 100), success_ratio=sr, macro_f1=float(np.mean(list(f1s.values()))),
                **{f"f1_level_{l}": v for l, v in f1s.items()})


# %%
s = score_querycorr_topic(["-1", "level 1", "no idea", "3"], ["-1", "1", "2", "0"])
test_eq(s["success_ratio"], 75.0)
test_close(s["f1_level_-1"], 100, eps=1e-2); test_close(s["f1_level_1"], 100, eps=1e-2); test_eq(s["f1_level_3"], 0.0)
test_close(s["score"], 0.75 * 200 / 5, eps=1e-2)
test_eq(score_querycorr_topic(["10"], ["1"])["f1_level_1"] > 99, True)     # '10' reads as level 1

# %% [markdown]
# **MRC-simple.** The answer is a Python list of passages (the first `[...]` in the output, parsed with
# `ast.literal_eval`); its passages are joined by newlines, the gold passages are concatenated. Empty vs
# non-empty gives tp/fp/fn/tn and an F1; on the true positives, BLEU (`nltk.sentence_bleu`, no smoothing)
# and ROUGE-1/2/L F-scores on jieba tokens, after removing newlines, replacement characters and emoji.
# Reported: the mean of the five success-scaled numbers.

# %%
#| export
_LIST_RE = re.compile(r"\[[^\[\]]*\]", re.DOTALL)
_EMOJI = re.compile("[\U0001F000-\U0001FAFF\U00002600-\U000027BF\U00002B00-\U00002BFF\U00002300-\U000023FF"
                    "\U0001F1E6-\U0001F1FF\uFE0F\u200D\u20E3]")

def _literal(s:str):
    try: return ast.literal_eval(s.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError): return _BAD
_BAD = object()

def parse_list(text:str) -> list[str]|None:
    "The first `[...]` in `text` (else the whole text) as a list of strings, or None when it is not one."
    m = _LIST_RE.search(text)
    v = _literal(m.group(0) if m else text)
    return v if isinstance(v, list) and all(isinstance(x, str) for x in v) else None

def _tokens(text:str) -> list[str]:
    import jieba, logging
    jieba.setLogLevel(logging.WARNING)
    return list(jieba.cut(text))

def _clean_passage(text:str) -> str: return _EMOJI.sub("", text.replace("\n", "").replace("\ufffd", ""))

class _Spaces:
    "rouge-score tokenizer: the text is already jieba-tokenised and joined by spaces."
    def tokenize(self, text): return text.split()

def score_mrc_simple(preds:Sequence[str], refs:Sequence) -> dict:
    "MRC-simple: mean of success-F1 (empty vs non-empty), success-BLEU and success-ROUGE-1/2/L on the true positives."
    from nltk.translate.bleu_score import sentence_bleu
    from rouge_score import rouge_scorer
    tp, fp, fn, tn, err = [], 0, 0, 0, 0
    for p, r in zip(preds, refs, strict=True):
        m = _LIST_RE.search(p); v = _literal(m.group(0) if m else p)
        try: p = "\n".join(v).strip()
        except TypeError: err += 1; continue
        r = "".join(r) if isinstance(r, list) else r
        if p == "" and r == "": tn += 1
        elif p == "": fn += 1
        elif r == "": fp += 1
        else: tp.append((p, r))
    prec = len(tp) / (len(tp) + fp + 1e-4); rec = len(tp) / (len(tp) + fn + 1e-4); f1 = 2 * prec * rec / (prec + rec + 1e-4)
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], tokenizer=_Spaces())
    bleu, r1, r2, rl = [], [], [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for p, r in tp:
            hyp, ref = _tokens(_clean_passage(p)), _tokens(_clean_passage(r))
            bleu.append(sentence_bleu([ref], hyp))
            sc = scorer.score(" ".join(ref), " ".join(hyp))
            r1.append(sc["rouge1"].fmeasure); r2.append(sc["rouge2"].fmeasure); rl.append(sc["rougeL"].fmeasure)
    sr = success_ratio(err, len(preds)); mean = lambda x: float(np.mean(x)) if x else 0.0
    parts = dict(success_f1=sr * f1, success_bleu=sr * mean(bleu), success_rouge1=sr * mean(r1),
                 success_rouge2=sr * mean(r2), success_rougeL=sr * mean(rl))
    return dict(score=float(np.mean(list(parts.values()))), success_ratio=sr, f1=f1 * 100, n_tp=len(tp), n_fp=fp, n_fn=fn, n_tn=tn, **parts)


# %%
_gold = [["the cat sat on the mat"], [], ["red shoes are nice"], []]
s = score_mrc_simple(["['the cat sat on the mat']", "[]", "[]", "not a list at all"], _gold)
test_eq((s["n_tp"], s["n_tn"], s["n_fn"], s["success_ratio"]), (1, 1, 1, 75.0))
test_close(s["success_bleu"], 75.0, eps=1e-6); test_close(s["success_rougeL"], 75.0, eps=1e-6)
test_close(s["success_f1"], 75 * 2 * (1 / 1.0001) * (1 / 2.0001) / (1 / 1.0001 + 1 / 2.0001 + 1e-4), eps=1e-9)
test_eq(score_mrc_simple(["[]"] * 4, _gold)["score"], 0.0)          # always [] scores 0 on MRC-simple

# %% [markdown]
# **MRC-complex.** The answer's last `<Result>…</Result>` holds a JSON list of `{"Option", "Reason"}`
# (a missing or malformed block, in the answer *or the gold*, is unparseable). Empty vs non-empty lists
# give tp/fp/fn/tn and a total F1. Per item, the option F1 is the mean over predicted options of the best
# F1 against a gold option, computed from the longest common run of tokens, and option EM likewise; two
# empty lists score 1, one empty list 0. Tokens are single CJK characters and the runs of other
# characters between them — so on the (English) data an option is one token and **option F1 equals option
# EM** (a match of the whole normalised option or nothing). Reported: the mean of success-total-F1,
# success-option-F1 and success-option-EM. Upstream divides by zero when precision and recall are both 0;
# we score that case 0.

# %%
#| export
_SP_CHARS = set(":_`，。：？！()“”；’《》……·、,「」（）－～『』|")

def _normalize(s:str) -> str: return "".join(c for c in s.lower() if c not in _SP_CHARS)

def _cjk(cp:int) -> bool:
    return any(a <= cp <= b for a, b in ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
                                          (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)))

def _char_tokens(text:str) -> list[str]:
    "CJK characters and '=' alone; runs of other characters as one token (as upstream)."
    out, buf = [], ""
    for ch in text:
        if _cjk(ord(ch)) or ch == "=":
            if buf: out.append(buf); buf = ""
            out.append(ch)
        else: buf += ch
    if buf: out.append(buf)
    return out

def _longest_common_run(a:list, b:list) -> int:
    best, prev = 0, [0] * (len(b) + 1)
    for x in a:
        cur = [0] * (len(b) + 1)
        for j, y in enumerate(b):
            if x == y: cur[j + 1] = prev[j] + 1; best = max(best, cur[j + 1])
        prev = cur
    return best

def option_f1(answers:Sequence[str], prediction:str) -> float:
    "Best F1 of `prediction` against any of `answers` from their longest common token run."
    out = []
    for a in answers:
        at, pt = _char_tokens(_normalize(a)), _char_tokens(_normalize(prediction))
        k = _longest_common_run(at, pt)
        out.append(0.0 if k == 0 else 2 * (k / len(pt)) * (k / len(at)) / (k / len(pt) + k / len(at)))
    return max(out)

def parse_result_block(text:str) -> list[dict]|None:
    "The options of the last <Result>…</Result> block (duplicates of an option keep the last reason), or None when malformed."
    blocks = list(re.finditer(r"(?<=<Result>).+?(?=</Result>)", text, re.DOTALL))
    if not blocks: return None
    s = blocks[-1].group(0).strip().lstrip("```json").rstrip("```")     # character-set strips, as upstream
    try: d = json.loads(s)
    except (json.JSONDecodeError, ValueError): return None
    if not isinstance(d, list): return None
    dedup = {}
    for it in d:
        if not (isinstance(it, dict) and isinstance(it.get("Option"), str) and isinstance(it.get("Reason"), str)): return None
        dedup[it["Option"]] = it["Reason"]
    return [dict(Option=k, Reason=v) for k, v in dedup.items()]

def score_mrc_complex(preds:Sequence[str], refs:Sequence[str]) -> dict:
    "MRC-complex: mean of success-total-F1, success-option-F1 and success-option-EM."
    tp = fp = fn = tn = err = 0; f1s, ems = [], []
    for p, r in zip(preds, refs, strict=True):
        p, g = parse_result_block(p), parse_result_block(r)
        if p is None or g is None: err += 1; continue
        if not g and not p: tn += 1; f1s.append(1.0); ems.append(1.0); continue
        if not g or not p: fp += bool(p); fn += bool(g); f1s.append(0.0); ems.append(0.0); continue
        tp += 1
        gold_opts = [o["Option"] for o in g]
        f1s.append(float(np.mean([option_f1(gold_opts, o["Option"]) for o in p])))
        ems.append(float(np.mean([any(_normalize(a) == _normalize(o["Option"]) for a in gold_opts) for o in p])))
    P = tp / (tp + fp) if tp + fp else -1.0; R = tp / (tp + fn) if tp + fn else -1.0
    total_f1 = 2 * P * R / (P + R) if P + R != 0 else 0.0
    sr = success_ratio(err, len(preds)); mean = lambda x: float(np.mean(x)) if x else 0.0
    parts = dict(success_total_f1=sr * total_f1 if total_f1 > 0 else 0.0, success_option_f1=sr * mean(f1s), success_option_em=sr * mean(ems))
    return dict(score=float(np.mean(list(parts.values()))), success_ratio=sr, n_tp=tp, n_fp=fp, n_fn=fn, n_tn=tn, **parts)


# %%
res = lambda *opts: "<Result>" + json.dumps([dict(Option=o, Reason="r") for o in opts]) + "</Result>"
test_eq(parse_result_block("<rewrite_query>q</rewrite_query><Result>[]</Result>"), [])
test_eq(parse_result_block("no block"), None)
test_eq(option_f1(["The Forbidden City 100"], "the forbidden city 100"), 1.0)
test_eq(option_f1(["The Forbidden City 100"], "The Forbidden City"), 0.0)        # one token each: EM in disguise
test_close(option_f1(["故宫一百"], "故宫"), 2 * 1 * 0.5 / 1.5, eps=1e-12)          # CJK text is scored per character
s = score_mrc_complex([res("A", "B"), res(), "garbage", res("C")], [res("A"), res(), res("X"), res()])
test_eq((s["n_tp"], s["n_tn"], s["n_fp"], s["success_ratio"]), (1, 1, 1, 75.0))
test_close(s["success_option_f1"], 75 * (0.5 + 1 + 0) / 3, eps=1e-9)
test_close(s["success_total_f1"], 75 * 2 * 0.5 * 1 / 1.5, eps=1e-9)


# %% [markdown]
# **CHLW.** The answer's first `[...]` (else the whole text) must parse as a list of strings; an empty
# list — predicted *or gold* — is replaced by `[""]` before the set micro-F1, so an empty answer to an
# item whose gold list is empty counts as one correct word. Reported: success-F1.

# %%
#| export
def score_chlw(preds:Sequence[str], refs:Sequence[str]) -> dict:
    "CHLW: success-scaled set micro-F1 where empty lists count as ['']."
    P, G, err = [], [], 0
    for p, r in zip(preds, refs, strict=True):
        g = _literal(r); p = parse_list(p)
        if p is None or not (isinstance(g, list) and all(isinstance(x, str) for x in g)): err += 1; continue
        P.append(p or [""]); G.append(g or [""])
    m = set_micro_f1(P, G); sr = success_ratio(err, len(preds))
    return dict(score=sr * m["f1"], success_ratio=sr, f1=m["f1"] * 100, precision=m["precision"] * 100, recall=m["recall"] * 100)


# %%
s = score_chlw(["[]", "[]", "['CC mode']", "none"], ["[]", "['a', 'b']", "['CC mode', 'x']", "[]"])
test_eq(s["success_ratio"], 75.0)
test_eq(s["f1"], round(2 * 2 / (3 + 5 + 1e-4), 4) * 100)     # hits: ''∩'' and 'CC mode'; |pred| 1+1+1, |gold| 1+2+2
test_eq(score_chlw(["[]"], ["[]"])["score"], round(2 / 2.0001, 4) * 100)   # empty matches empty: a hit


# %% [markdown]
# **QueryGen.** Per item, (cosine similarity of the answer's first line and the gold query × 100 +
# ANLS × 100)/2, where ANLS = 1 − Levenshtein distance / the longer length, computed on the whole answer
# (as upstream). The cosine uses MiniLM here (bge-large-en-v1.5 upstream: a **metric deviation**). The
# Levenshtein distance comes from `rapidfuzz`, checked against a hand-written dynamic programme.

# %%
#| export
def anls(prediction:str, reference:str) -> float:
    "1 − Levenshtein(prediction, reference)/max length (1 for two empty strings)."
    from rapidfuzz.distance import Levenshtein
    n = max(len(prediction), len(reference))
    return 1.0 if n == 0 else 1.0 - Levenshtein.distance(prediction, reference) / n

def score_querygen(preds:Sequence[str], refs:Sequence[str], embed:Callable[[list[str]], np.ndarray]) -> dict:
    "QueryGen: mean over items of (cosine(first line of answer, gold)·100 + ANLS·100)/2; `embed` maps texts to vectors."
    first = [re.split(r"[\n]|<|endofresponse|>", p.strip(), maxsplit=1)[0] for p in preds]
    E = np.asarray(embed(list(first) + list(refs)), dtype=np.float64)
    E = E / np.maximum(np.linalg.norm(E, axis=1, keepdims=True), 1e-12)
    cos = (E[:len(first)] * E[len(first):]).sum(1) * 100
    a = np.array([anls(p, r) * 100 for p, r in zip(preds, refs, strict=True)])
    return dict(score=float(np.mean((cos + a) / 2)), cosine=float(cos.mean()), anls=float(a.mean()))


# %%
def _lev(a, b):
    d = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, d[0] = d[0], i
        for j, y in enumerate(b, 1): prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (x != y))
    return d[-1]
for a_, b_ in [("kitten", "sitting"), ("flute or xiao", "xiao vs flute"), ("", "abc"), ("same", "same")]:
    test_close(anls(a_, b_), 1 - _lev(a_, b_) / max(len(a_), len(b_), 1), eps=1e-12)
test_eq(anls("abcd", "abcd"), 1.0); test_eq(anls("abcd", "wxyz"), 0.0)
_onehot = lambda texts: np.array([[t.startswith("flute"), not t.startswith("flute")] for t in texts], float)
test_eq(score_querygen(["flute tips\nmore"], ["flute tips"], _onehot)["cosine"], 100.0)
test_close(score_querygen(["flute tips\nmore"], ["flute tips"], _onehot)["score"], (100 + 100 * (1 - 5 / 15)) / 2, eps=1e-9)


# %% [markdown]
# ### One entry point
#
# `score_subset(name, answers, records)` scores raw model answers to a subset's records with that
# subset's scorer; `gold_answer` gives the reference each scorer compares with, and `oracle_answer` the
# gold written as a compliant model would write it.

# %%
#| export
def gold_answer(name:str, rec:dict):
    "The reference of `rec` as the subset's scorer takes it."
    return rec["answer"]

def oracle_answer(name:str, rec:dict) -> str:
    "The gold answer in the output format the prompts ask for (a perfect model's answer)."
    a = rec["answer"]
    return repr(list(a)) if name == "Note-MRC-simple" else a

def score_subset(name:str, # subset name
                 answers:Sequence[str], # raw model outputs, one per record
                 records:Sequence[dict], # the subset's records (for the gold answers)
                 embed:Callable|None=None, # texts -> vectors (QueryGen only)
                 ) -> dict:
    "The subset's official-style scores of `answers`; the reported number is under 'score' (0–100)."
    if name not in SUBSETS: raise ConfigError(f"parameter 'name': {name!r} is not allowed; choose one of {list(SUBSETS)}")
    if len(answers) != len(records): raise ValueError(f"{len(answers)} answers for {len(records)} records of {name}")
    refs = [gold_answer(name, r) for r in records]
    if name in ("Note-Taxonomy-single", "Note-Hashtag-single"): return score_accuracy(answers, refs, chat_tokens=True)
    if name in ("Note-QueryCorr-explain", "Note-Gender"): return score_accuracy(answers, refs)
    if name == "Note-Taxonomy-multiple": return score_exact_match(answers, refs)
    if name in ("Note-Hashtag-multiple", "Note-NER"): return score_set_f1(answers, refs)
    if name == "Note-QueryCorr-topic": return score_querycorr_topic(answers, refs)
    if name == "Note-MRC-simple": return score_mrc_simple(answers, refs)
    if name == "Note-MRC-complex": return score_mrc_complex(answers, refs)
    if name == "Note-CHLW": return score_chlw(answers, refs)
    if embed is None: raise ValueError("Note-QueryGen needs embed= (a function from texts to vectors) for its cosine term")
    return score_querygen(answers, refs, embed)


# %%
test_eq(score_subset("Note-Gender", ["Yes", "No."], [dict(answer="Yes"), dict(answer="Yes")])["score"], 50.0)
test_eq(score_subset("Note-CHLW", ["[]"], [dict(answer="[]")])["score"], 100 * round(2 / 2.0001, 4))
test_fail(lambda: score_subset("Note-QueryGen", ["q"], [dict(answer="q")]), contains="embed=")
test_fail(lambda: score_subset("Note-Nothing", [], []), contains="Note-Nothing")


# %% [markdown]
# A hand-made check suite that `run` records as metrics, so every run (with or without the data) shows
# that the scorers give the hand-computed values.

# %%
#| export
def scorer_selfcheck() -> dict[str, float]:
    "Scores of hand-built answers with known values (no data needed)."
    return {
        "micro_f1_3_items": set_micro_f1([["a", "b"], ["c"], []], [["a"], ["c", "d"], ["e"]])["f1"],
        "chlw_empty_on_empty": score_chlw(["[]"], ["[]"])["score"],
        "chlw_one_unparseable_of_4": score_chlw(["[]", "[]", "['x']", "oops"], ["[]", "['a']", "['x']", "[]"])["score"],
        "querycorr_topic_success_ratio": score_querycorr_topic(["-1", "1", "?", "3"], ["-1", "1", "2", "0"])["success_ratio"],
        "mrc_simple_always_empty": score_mrc_simple(["[]", "[]"], [["a passage"], []])["score"],
        "anls_kitten_sitting": anls("kitten", "sitting"),
    }


# %%
chk = scorer_selfcheck()
test_eq(chk["micro_f1_3_items"], 0.5714); test_eq(chk["querycorr_topic_success_ratio"], 75.0)
test_eq(chk["mrc_simple_always_empty"], 0.0); test_close(chk["anls_kitten_sitting"], 4 / 7, eps=1e-12)
test_eq(chk["chlw_one_unparseable_of_4"], 75 * round(2 * 2 / (3 + 3 + 1e-4), 4))

# %% [markdown]
# ## Prompts and the model interface
#
# A model is anything with `generate(prompts) -> texts`. `build_prompt` writes one prompt per record in
# our own words (the official prompts add few-shot examples); CHLW and MRC-complex records carry their
# instructions in the content, as upstream. `PromptModel` turns a generator into a predictor
# (`predict(subset, records) -> answers`), the interface the baselines share.

# %%
#| export
_INSTR = {
    "Note-Taxonomy-single": "Choose the one category from the candidates that best fits this social-media note. Reply with the category only, after 'Answer:'.",
    "Note-Taxonomy-multiple": "Choose one primary, one secondary and one tertiary category for this note from the candidate lists. Reply as 'Primary | Secondary | Tertiary' after 'Answer:'.",
    "Note-Hashtag-single": "Choose the one topic tag from the candidates that best fits this note. Reply with the tag only, after 'Answer:'.",
    "Note-Hashtag-multiple": "Choose every topic tag from the candidates that fits this note. Reply with the tags separated by commas, after 'Answer:'.",
    "Note-QueryCorr-topic": "Rate how well the note answers the search query: 3 fully relevant, 2 partly, 1 barely, 0 related keywords only, -1 unrelated. Reply with the number only.",
    "Note-QueryCorr-explain": "Can the document answer the question? Reply 'Yes' or 'No' only, after 'Answer:'.",
    "Note-MRC-simple": "Copy the passages of the note that answer the user's question, as a Python list of strings; reply [] if none does.",
    "Note-MRC-complex": ("Follow the instructions in the input. End with <Result>[{\"Option\": ..., \"Reason\": ...}]</Result> "
                         "(a JSON list, empty if nothing in the document is relevant)."),
    "Note-NER": "List every entity of the asked type in the passage, separated by commas, after 'Answer:'.",
    "Note-Gender": "Does this note touch on gender in a sensitive way (stereotypes, discrimination, gender conflict)? Reply 'Yes' or 'No' only, after 'Answer:'.",
    "Note-CHLW": "",
    "Note-QueryGen": "Write the search query a user would type to find this note. Reply with the query only.",
}

def build_prompt(name:str, rec:dict) -> str:
    "The prompt for record `rec` of subset `name`."
    body = {
        "Note-Taxonomy-single": lambda r: f"Note: {r['content']}\nCandidates: {r['candidates']}\nAnswer: ",
        "Note-Taxonomy-multiple": lambda r: (f"Note: {r['content']}\nPrimary candidates: {r['candidates_primary']}\n"
                                             f"Secondary candidates: {r['candidates_secondary']}\nTertiary candidates: {r['candidates_tertiary']}\nAnswer: "),
        "Note-Hashtag-single": lambda r: f"Note: {r['content']}\nCandidate tags: {r['candidates']}\nAnswer: ",
        "Note-Hashtag-multiple": lambda r: f"Note: {r['content']}\nCandidate tags: {r['candidates']}\nAnswer: ",
        "Note-QueryCorr-topic": lambda r: f"{r['content']}\nRating: ",
        "Note-QueryCorr-explain": lambda r: f"Question: {r['sentence1']}\nDocument: {r['sentence2']}\nAnswer: ",
        "Note-MRC-simple": lambda r: f"Note: {r['content']}\nQuestion: {r['query']}\nOutput: ",
        "Note-NER": lambda r: f"Passage: {r['content']}\nQuestion: {r['question']}\nAnswer: ",
        "Note-Gender": lambda r: f"Note: {r['content']}\nAnswer: ",
        "Note-QueryGen": lambda r: f"{r['content']}\nSearch query: ",
    }.get(name, lambda r: r["content"])(rec)
    return (_INSTR[name] + "\n\n" + body) if _INSTR[name] else body

class PromptModel:
    "Predictor from any `generate(prompts) -> texts` function: one prompt per record, the raw texts as answers."
    def __init__(self, generate:Callable[[list[str]], list[str]], name:str="model"): self.generate, self.name = generate, name
    def fit(self, name:str, records:Sequence[dict]): return self
    def predict(self, name:str, records:Sequence[dict]) -> list[str]:
        out = list(self.generate([build_prompt(name, r) for r in records]))
        if len(out) != len(records): raise ValueError(f"{self.name}: generate returned {len(out)} texts for {len(records)} prompts")
        return [str(o) for o in out]

class HFGenerator:
    "`generate(prompts)` with a local Hugging Face causal LM (greedy, chat template when the tokenizer has one)."
    def __init__(self, name_or_path:str, max_new_tokens:int=64, device:str|None=None):
        from trustlib.models import CausalLM
        self.lm, self.max_new_tokens = CausalLM(name_or_path, device=device), int(max_new_tokens)
    def __call__(self, prompts:list[str]) -> list[str]:
        import torch
        tok, model = self.lm.tokenizer, self.lm.model          # ResourceUnavailable when not found offline
        out = []
        for p in prompts:
            text = (tok.apply_chat_template([dict(role="user", content=p)], tokenize=False, add_generation_prompt=True)
                    if getattr(tok, "chat_template", None) else p)
            enc = tok(text, return_tensors="pt").to(self.lm.device)
            with torch.no_grad():
                ids = model.generate(**enc, max_new_tokens=self.max_new_tokens, do_sample=False, pad_token_id=self.lm._pad_id())
            out.append(tok.decode(ids[0, enc["input_ids"].shape[1]:], skip_special_tokens=True))
        return out


# %%
_rec = dict(content="Day 8 of brush calligraphy practice", candidates="Art, Food, Travel", answer="Art")
print(build_prompt("Note-Taxonomy-single", _rec))
_echo = PromptModel(lambda prompts: ["Answer: " + p.split("Candidates: ")[1].split(",")[0] for p in prompts], "first-candidate echo")
test_eq(_echo.predict("Note-Taxonomy-single", [_rec]), ["Answer: Art"])
test_eq(score_subset("Note-Taxonomy-single", _echo.predict("Note-Taxonomy-single", [_rec]), [_rec])["score"], 100.0)
test_fail(lambda: PromptModel(lambda p: []).predict("Note-Gender", [_rec]), contains="0 texts for 1 prompts")


# %% [markdown]
# ## Baselines
#
# The fields a strategy needs are parsed from each record: the candidate lists, the query and the note,
# CHLW's comment and option list, MRC passages, NER word spans, the QueryGen note title.

# %%
#| export
def _split_cands(s:str) -> list[str]: return [c.strip() for c in s.split(",") if c.strip()]

def _between(s:str, start:str, end:str|None=None) -> str:
    i = s.find(start); i = 0 if i < 0 else i + len(start)
    j = s.find(end, i) if end else -1
    return (s[i:j] if j >= 0 else s[i:]).strip()

def parse_fields(name:str, rec:dict) -> dict:
    "What the baselines use from `rec`: 'text' (the note), 'query', 'cands' (list, or three lists for Taxonomy-multiple)."
    c = rec.get("content", "")
    if name in ("Note-Taxonomy-single", "Note-Hashtag-single", "Note-Hashtag-multiple"):
        return dict(text=c, cands=_split_cands(rec["candidates"]))
    if name == "Note-Taxonomy-multiple":
        lv = [_literal(rec[f"candidates_{k}"]) for k in ("primary", "secondary", "tertiary")]
        return dict(text=c, cands=[l if isinstance(l, list) else _split_cands(rec[f"candidates_{k}"]) for l, k in zip(lv, ("primary", "secondary", "tertiary"))])
    if name == "Note-QueryCorr-topic":
        return dict(query=_between(c, "Query:", "\n"), text=_between(c, "Notes:", "```") or c, cands=list(LEVELS))
    if name == "Note-QueryCorr-explain": return dict(query=rec["sentence1"], text=rec["sentence2"], cands=["Yes", "No"])
    if name == "Note-Gender": return dict(text=c, cands=["Yes", "No"])
    if name == "Note-CHLW":
        m = re.search(r"(?i)(?:possible|potential)[^\n\[]*?:\s*(\[.*?\])\s*(?:\n|please|$)", c, re.DOTALL); opts = _literal(m.group(1)) if m else []
        if m and not isinstance(opts, list):            # an option with an apostrophe inside single quotes: split by hand
            opts = [o for o in m.group(1).strip()[2:-2].split("', '") if o]
        return dict(text=_between(c, "Comment:", "\n\nPossible"), cands=[o for o in opts if isinstance(o, str)] if isinstance(opts, list) else [])
    if name == "Note-MRC-simple":
        return dict(query=rec["query"], text=c, cands=[l.strip() for l in c.split("\n") if l.strip()])
    if name == "Note-MRC-complex":
        doc = _between(c, "<Doc>", "</Doc>")
        return dict(query=_between(c, "Query:", "Level:"), text=doc, cands=[s.strip() for s in re.split(r"[\n.!?]", doc) if len(s.strip()) > 2])
    if name == "Note-NER":
        words = re.findall(r"[\w'&-]+", c); grams = list(dict.fromkeys(words + [" ".join(p) for p in zip(words, words[1:])]))
        m = re.search(r"'([^']+)'", rec["question"])
        return dict(query=m.group(1) if m else rec["question"], text=c, cands=grams[:16])
    if name == "Note-QueryGen":
        m = re.search(r"Note Title:\s*(.*?),?\s*\n", c)
        return dict(text=c, title=m.group(1).strip() if m else c.split("\n")[0][:60], cands=[s.strip() for s in re.split(r"[\n.!?,]", c) if s.strip()])
    raise ConfigError(f"parameter 'name': {name!r} is not allowed; choose one of {list(SUBSETS)}")

def format_answer(name:str, choice) -> str:
    "A choice written as a compliant model would: a string, 'A | B | C', 'a, b', a Python list, or a <Result> block."
    if name == "Note-Taxonomy-multiple": return " | ".join(choice)
    if name in ("Note-Hashtag-multiple", "Note-NER"): return ", ".join(choice)
    if name in ("Note-CHLW", "Note-MRC-simple"): return repr(list(choice))
    if name == "Note-MRC-complex": return "<Result>" + json.dumps([dict(Option=o, Reason=o) for o in choice]) + "</Result>"
    return str(choice)


# %%
test_eq(parse_fields("Note-CHLW", dict(content="Comment: \nnice CC mode\n\nPossible highlight word options list:\n['CC mode']\n\nPlease ...", answer="[]")),
        dict(text="nice CC mode", cands=["CC mode"]))
test_eq(parse_fields("Note-QueryCorr-topic", dict(content="```\nQuery: dog food\nNotes: five dogs```", answer="0"))["query"], "dog food")
test_eq(format_answer("Note-CHLW", []), "[]")
test_eq(score_subset("Note-MRC-complex", [format_answer("Note-MRC-complex", ["A"])], [dict(answer=res("a"))])["score"], 100.0)

# %% [markdown]
# **Trivial strategies.** `random` picks uniformly (lists: each candidate with probability ½); `majority`
# answers the most frequent gold answer of the dev split; `first` takes the first candidate (the first
# level listed, "Yes", the first passage or word, the note title); `empty` answers `[]` where a list is
# asked for and the empty string elsewhere.

# %%
#| export
_LIST_SUBSETS = ("Note-Hashtag-multiple", "Note-CHLW", "Note-MRC-simple", "Note-MRC-complex", "Note-NER")

class TrivialBaseline:
    "A strategy that ignores the meaning of the note: 'random', 'majority', 'first' or 'empty'."
    STRATEGIES = ("random", "majority", "first", "empty")
    def __init__(self, strategy:str, random_state:int=0):
        if strategy not in self.STRATEGIES: raise ConfigError(f"parameter 'strategy': {strategy!r} is not allowed; choose one of {list(self.STRATEGIES)}")
        self.strategy, self.random_state, self.name = strategy, int(random_state), strategy
    def fit(self, name:str, records:Sequence[dict]):
        c = Counter(oracle_answer(name, r) for r in records)
        self.majority_ = dict(self.__dict__.get("majority_", {}), **{name: c.most_common(1)[0][0] if c else ""})
        return self
    def _one(self, name, f, rng):
        s, cands = self.strategy, f.get("cands", [])
        if s == "empty": return format_answer(name, []) if name in _LIST_SUBSETS else ""
        if name == "Note-Taxonomy-multiple":
            return format_answer(name, [(l[int(rng.integers(len(l)))] if s == "random" else l[0]) if l else "" for l in cands])
        if name == "Note-QueryGen": return f["title"] if s == "first" else (cands[int(rng.integers(len(cands)))] if cands else "")
        if name in ("Note-Hashtag-multiple", "Note-CHLW"):
            pick = [c for c in cands if rng.random() < 0.5] if s == "random" else cands[:1]
            return format_answer(name, pick)
        if name in ("Note-MRC-simple", "Note-MRC-complex", "Note-NER"):
            if s == "random": pick = [cands[int(rng.integers(len(cands)))]] if cands and rng.random() < 0.5 else []
            else: pick = cands[:1]
            return format_answer(name, pick if (pick or name != "Note-NER") else [""])
        if not cands: return ""
        return cands[int(rng.integers(len(cands)))] if s == "random" else cands[0]
    def predict(self, name:str, records:Sequence[dict]) -> list[str]:
        if self.strategy == "majority":
            if name not in getattr(self, "majority_", {}): raise RuntimeError(f"majority baseline: call fit({name!r}, dev_records) first")
            return [self.majority_[name]] * len(records)
        rng = np.random.default_rng(derive_seed(self.random_state, list(SUBSETS).index(name)))
        return [self._one(name, parse_fields(name, r), rng) for r in records]


# %%
_g = [dict(content="n", answer=a) for a in ("Yes", "No", "No")]
test_eq(TrivialBaseline("majority").fit("Note-Gender", _g).predict("Note-Gender", _g[:2]), ["No", "No"])
test_eq(TrivialBaseline("first").predict("Note-Taxonomy-single", [_rec]), ["Art"])
test_eq(TrivialBaseline("empty").predict("Note-CHLW", [dict(content="", answer="[]")]), ["[]"])
_r = TrivialBaseline("random", 3).predict("Note-Taxonomy-single", [_rec] * 30)
test_eq(set(_r) <= {"Art", "Food", "Travel"} and len(set(_r)) == 3, True)
test_eq(_r, TrivialBaseline("random", 3).predict("Note-Taxonomy-single", [_rec] * 30))    # seeded
test_fail(lambda: TrivialBaseline("majority").predict("Note-Gender", _g), contains="fit(")


# %% [markdown]
# **MiniLM zero-shot.** Texts are embedded with all-MiniLM-L6-v2 (mean-pooled last layer, the sentence
# embedding it was trained for; cached per text). Single choice: the candidate closest to the note (per
# level for Taxonomy-multiple). Multiple choice and span answers: every candidate whose cosine to the
# note (Hashtag), comment (CHLW), query (MRC) or entity type (NER) clears a threshold; QueryCorr-topic:
# the query–note cosine cut into five levels at dev-split quantiles matching the dev label shares;
# QueryCorr-explain and Gender: Yes above a cosine threshold (Gender: to a short description of gender
# topics); QueryGen: the note title. Every threshold is chosen on the dev split (the best score over a
# grid of dev quantiles and "never", i.e. always answering no / empty), never on test items.

# %%
#| export
class TextEmbedder:
    "Unit-norm MiniLM sentence embeddings with a per-text cache; `embedder(texts) -> [N, 384]`."
    def __init__(self, batch_size:int=64, max_length:int=64, progress:bool=False):
        self.batch_size, self.max_length, self.progress, self.cache, self._m = batch_size, max_length, progress, {}, None
    def __call__(self, texts:Sequence[str]) -> np.ndarray:
        new = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if new:
            from trustlib.models import load_minilm, embed_texts
            if self._m is None: self._m = load_minilm()
            E = embed_texts(new, *self._m, batch_size=self.batch_size, max_length=self.max_length, normalize=True, progress=self.progress)
            self.cache.update(zip(new, E))
        return np.stack([self.cache[t] for t in texts]) if len(texts) else np.zeros((0, 384), np.float32)

GENDER_PROBE = "gender, women and men, sexism, gender roles, stereotypes about girls and boys, discrimination against women"

class EmbeddingZeroShot:
    "MiniLM zero-shot answers, with thresholds and level cut points fitted on dev records only."
    def __init__(self, embed:Callable[[Sequence[str]], np.ndarray], name:str="minilm"):
        self.embed, self.name, self.params_ = embed, name, {}
    def _cos(self, a:Sequence[str], b:Sequence[str]) -> np.ndarray:
        return (self.embed(a) * self.embed(b)).sum(1)
    def _anchor(self, name, f) -> str:
        return f["query"] if name in ("Note-MRC-simple", "Note-MRC-complex", "Note-NER") else f["text"]
    def _sims(self, name, f) -> np.ndarray:
        "Cosine of each candidate with the item's anchor (note, comment, query or entity type); cached in `f`."
        if "_sims" not in f:
            f["_sims"] = self._cos([self._anchor(name, f)] * len(f["cands"]), f["cands"]) if f["cands"] else np.zeros(0)
        return f["_sims"]
    def _item_score(self, name, f) -> float:
        if "_item" not in f:
            if name in ("Note-QueryCorr-topic", "Note-QueryCorr-explain"): f["_item"] = float(self._cos([f["query"]], [f["text"]])[0])
            elif name == "Note-Gender": f["_item"] = float(self._cos([GENDER_PROBE], [f["text"]])[0])
            else: f["_item"] = 0.0
        return f["_item"]
    def _fields(self, name, records) -> list[dict]:
        "Parsed records, with every text they need embedded in one batch (the embedder caches it)."
        F = [parse_fields(name, r) for r in records]
        texts = [GENDER_PROBE]
        for f in F:
            texts += [f.get("text", ""), f.get("query", "")]
            c = f.get("cands", [])
            texts += [x for l in c for x in l] if name == "Note-Taxonomy-multiple" else list(c)
        if name != "Note-QueryGen": self.embed([t for t in dict.fromkeys(texts)])
        return F
    def _answer(self, name, f, t) -> str:
        if name in ("Note-Taxonomy-single", "Note-Hashtag-single"): return f["cands"][int(np.argmax(self._sims(name, f)))] if f["cands"] else ""
        if name == "Note-Taxonomy-multiple":
            return format_answer(name, [l[int(np.argmax(self._cos([f["text"]] * len(l), l)))] if l else "" for l in f["cands"]])
        if name == "Note-QueryGen": return f["title"]
        if name == "Note-QueryCorr-topic": return LEVELS[int(np.searchsorted(t, self._item_score(name, f), side="right"))]
        if name in ("Note-QueryCorr-explain", "Note-Gender"): return "Yes" if self._item_score(name, f) >= t else "No"
        s = self._sims(name, f); keep = [c for c, v in zip(f["cands"], s) if v >= t]
        if name == "Note-Hashtag-multiple" and not keep and len(s): keep = [f["cands"][int(np.argmax(s))]]
        if name in ("Note-MRC-complex", "Note-NER"): keep = sorted(keep, key=lambda c: -s[f["cands"].index(c)])[:3]
        return format_answer(name, keep if (keep or name != "Note-NER") else [""])
    def fit(self, name:str, records:Sequence[dict]):
        F = self._fields(name, records)
        if name in ("Note-Taxonomy-single", "Note-Hashtag-single", "Note-Taxonomy-multiple", "Note-QueryGen"): self.params_[name] = None; return self
        if name == "Note-QueryCorr-topic":
            x = np.array([self._item_score(name, f) for f in F]); share = Counter(r["answer"] for r in records)
            q = np.cumsum([share.get(l, 0) for l in LEVELS])[:-1] / len(records)
            self.params_[name] = np.quantile(x, q); return self
        if name in ("Note-QueryCorr-explain", "Note-Gender"): x = np.array([self._item_score(name, f) for f in F])
        else: x = np.concatenate([self._sims(name, f) for f in F] + [np.zeros(0)])
        grid = list(np.unique(np.quantile(x, np.linspace(0, 1, 21)))) if len(x) else []
        best = (-np.inf, np.inf)
        for t in grid + [np.inf]:
            sc = score_subset(name, [self._answer(name, f, t) for f in F], records)["score"]
            if sc > best[0]: best = (sc, t)
        self.params_[name] = best[1]; return self
    def predict(self, name:str, records:Sequence[dict]) -> list[str]:
        if name not in self.params_: raise RuntimeError(f"{self.name}: call fit({name!r}, dev_records) first")
        return [self._answer(name, f, self.params_[name]) for f in self._fields(name, records)]


# %%
def _unit(texts):
    E = np.array([[("dog" in t.lower()) + 0.1, ("cat" in t.lower()) + 0.1] for t in texts])
    return E / np.linalg.norm(E, axis=1, keepdims=True)
_z = EmbeddingZeroShot(_unit).fit("Note-Hashtag-single", [])
test_eq(_z.predict("Note-Hashtag-single", [dict(content="my dog", candidates="Cats, Dog tricks", answer="Dog tricks")]), ["Dog tricks"])
_dev = [dict(sentence1="dog food", sentence2=d, answer=a) for d, a in [("dog kibble", "Yes"), ("cat toys", "No"), ("dog toys", "Yes"), ("cats", "No")]]
_z.fit("Note-QueryCorr-explain", _dev)
test_eq(_z.predict("Note-QueryCorr-explain", _dev), ["Yes", "No", "Yes", "No"])          # a threshold between the two clusters
test_fail(lambda: EmbeddingZeroShot(_unit).predict("Note-Gender", _dev), contains="fit(")


# %% [markdown]
# ## What the scorers reward: constant answers and oracles
#
# Before any model, the scorers are run on constant answers and on the gold answers themselves, over all
# items of each subset. The empty list on CHLW is the case the brief asks about: each of the items whose
# gold list is empty becomes `[""]` on both sides — a hit — while an item with gold words adds one wrong
# prediction. With h empty-gold items out of N and G gold words elsewhere, the score is
# `2h/(N + h + G + 1e-4)` × 100 (success ratio 1).

# %%
#| export
def constant_scores(data:dict[str, list[dict]], embed:Callable|None=None) -> "pd.DataFrame":
    "Scores, on all items, of constant answers that need no model and of the oracle (gold answers), per subset."
    import pandas as pd
    rows = []
    def add(name, label, answers):
        if name not in data: return
        recs = data[name]; ans = answers(recs) if callable(answers) else [answers] * len(recs)
        if name == "Note-QueryGen" and embed is None: return
        rows.append(dict(subset=name, strategy=label, score=score_subset(name, ans, recs, embed)["score"]))
    add("Note-CHLW", "always []", "[]")
    add("Note-CHLW", "all options", lambda R: [format_answer("Note-CHLW", parse_fields("Note-CHLW", r)["cands"]) for r in R])
    add("Note-MRC-simple", "always []", "[]")
    add("Note-MRC-complex", "always <Result>[]</Result>", "<Result>[]</Result>")
    add("Note-QueryCorr-explain", "always Yes", "Yes")
    add("Note-Gender", "always No", "No")
    add("Note-QueryCorr-topic", "always -1", "-1")
    for name in SUBSETS: add(name, "oracle (gold answer)", lambda R, n=name: [oracle_answer(n, r) for r in R])
    return pd.DataFrame(rows)


# %%
if MISSING: print("Skipped:", MISSING)
else:
    _chlw = DATA["Note-CHLW"]; _G = [ast.literal_eval(r["answer"]) for r in _chlw]
    _h = sum(not g for g in _G); _words = sum(len(set(g)) for g in _G if g)
    _closed = round(2 * _h / (len(_chlw) + _h + _words + 1e-4), 4) * 100
    test_eq(score_subset("Note-CHLW", ["[]"] * len(_chlw), _chlw)["score"], _closed)
    print(f"CHLW: {_h} of {len(_chlw)} gold lists empty, {_words} gold words elsewhere -> always [] scores {_closed:.2f}")
    display(constant_scores({k: v for k, v in DATA.items() if k != "Note-QueryGen"}).round(2))

# %% [markdown]
# ## The whole experiment: `run`
#
# For each seed, every subset (subsampled to `n_items` items — 50 at the smoke profile, 400 at cpu — with a
# seed fixed across repetitions) is split into a dev part (`dev_fraction`) and a test part. Each baseline is fitted on dev
# and scored on test; the overall score is the mean of the 12 subset scores (the paper's aggregation is
# not verified). The **format-failure study** makes a random share of a reference baseline's test answers
# unparseable ("I cannot answer that.") and rescores them.

# %%
#| export
SUCCESS_SCALED = ("Note-QueryCorr-topic", "Note-MRC-simple", "Note-MRC-complex", "Note-CHLW")
WORD_PICKERS = ("random", "first", "all options")
DERIVED = {"chlw_always_empty": 67.64, "chlw_all_options": 30.47, "gender_always_no": 50.8, "explain_always_yes": 54.2, "topic_always_minus1": 7.6}

def _split(n, frac, seed):
    idx = np.random.default_rng(seed).permutation(n); k = max(1, int(round(frac * n)))
    return idx[:k], idx[k:]

def _subsample(data, n_items, seed):
    if not n_items: return data
    out = {}
    for i, (name, recs) in enumerate(data.items()):
        if len(recs) <= n_items: out[name] = recs; continue
        idx = np.sort(np.random.default_rng(derive_seed(seed, 7, i)).choice(len(recs), n_items, replace=False))
        out[name] = [recs[j] for j in idx]
    return out

def _models(cfg, seed, embedder):
    out = [TrivialBaseline(s, derive_seed(seed, 11)) for s in TrivialBaseline.STRATEGIES if s in cfg.baselines]
    if "minilm" in cfg.baselines: out.append(EmbeddingZeroShot(embedder))
    if "lm" in cfg.baselines and not cfg.model:
        raise ResourceUnavailable("the lm baseline (full profile) needs a causal LM: pass model=<Hugging Face name or local folder> "
                                  "(e.g. -p model Qwen/Qwen2.5-0.5B-Instruct with the weights in the local Hugging Face cache)")
    if "lm" in cfg.baselines: out.append(PromptModel(HFGenerator(cfg.model, cfg.max_new_tokens), name="lm"))
    return out

def corrupt(answers:Sequence[str], rate:float, seed:int) -> list[str]:
    "`answers` with a random share `rate` replaced by an unparseable text."
    a = list(answers); k = int(round(rate * len(a)))
    for j in np.random.default_rng(seed).choice(len(a), k, replace=False): a[j] = "I cannot answer that."
    return a


# %%
test_eq(corrupt(["[]"] * 4, 0.5, 0).count("I cannot answer that."), 2)
test_eq(score_chlw(corrupt(["[]"] * 4, 0.5, 0), ["[]"] * 4)["success_ratio"], 50.0)


# %% [markdown]
# ### How each claim is judged (stated before the run)
#
# | claim | source | rule |
# |---|---|---|
# | LLMs of different sizes differ along a scaling law (**headline**) | paper | not testable offline: no LLMs |
# | 8 tasks, 12 subsets, 6,658 items | paper / data | reproduced if every subset has its official count |
# | On CHLW, always `[]` scores ≈ 67.6 success-F1 under the official rule | derived from the scorer | reproduced if within 0.05 of 67.64 on all 297 items; partially within 1 |
# | …and it beats every strategy that picks words (random, first option, all options) | derived | mean over seeds of (always `[]` − best word picker) on test: reproduced if > 10 points, partially if > 0; the 95 % interval must clear it |
# | Constant answers: Gender "No" 50.8 %, QueryCorr-explain "Yes" 54.2 %, QueryCorr-topic "−1" macro-F1 7.6 | derived | reproduced if all three within 0.1 on all items; partially within 1 |
# | "success-" metrics penalise output-format failures | official code | score ratio (50 % of answers unparseable / none), mean over the success-scaled subsets, over seeds: reproduced if < 0.75, partially if < 0.95 |
# | A real model (MiniLM zero-shot) outscores the best trivial strategy overall | our check of the benchmark | mean over seeds of (MiniLM − best trivial) overall: reproduced if > 2 points, partially if > 0; inconclusive when MiniLM is not run |
# | A perfect answer scores 100 on every subset | our check of the scorers | illustrated: the oracle scores are reported, with the subsets that fall short |
#
# `claims` turns the measured numbers into verdicts, so the rules can be tested on crafted numbers.

# %%
#| export
def claims(m:dict, # measured numbers: counts_ok, chlw_empty, chlw_gap (per seed), constants, success_ratio_50 (per seed), minilm_gap (per seed or None), oracle
           missing:str|None=None, # why the data-dependent claims cannot be graded (data absent), else None
           ) -> list:
    "The verdicts of the SNS-Bench claims from the measured numbers, by the rules stated before the run."
    from trustlib.results import judge, Rule, mean_ci
    V = [judge("LLM performance varies with model size and follows a scaling law (25+ LLMs)", "25+ LLMs, scaling with size", "no LLM offline",
               verdict="not_testable_offline", reason="needs the evaluated LLMs; the full profile runs one local Hugging Face causal LM through the same prompts and scorers",
               headline=True)]
    if missing:
        why = f"data absent: {missing}"
        return V + [judge(c, p, "not run", verdict="not_testable_offline", reason=why) for c, p in [
            ("8 tasks in 12 subsets, 6,658 items", "6,658 items"), ("CHLW: always [] scores about 67.6 success-F1", "67.64 (derived)"),
            ("CHLW: always [] beats every word-picking strategy", "derived"), ("Constant-answer baselines", "50.8 / 54.2 / 7.6 (derived)"),
            ("success- metrics penalise output-format failures", "official scorers"), ("MiniLM zero-shot beats the best trivial strategy", "our check"),
            ("A perfect answer scores 100 on every subset", "our check")]]
    V.append(judge("8 tasks in 12 subsets, 6,658 items", "8 tasks, 12 subsets, 6,658 items", f"{m['n_items']} items, {m['n_subsets']} subsets",
                   reproduced=bool(m["counts_ok"]), rule_text="reproduced if every subset has its official item count"))
    V.append(judge("CHLW: always [] scores about 67.6 success-F1 under the official rule (empty lists count as [''])", "67.64 (derived)",
                   f"{m['chlw_empty']:.2f}", rule=Rule("<", 0.05, 1.0, what="|always [] − 67.64|"), value=abs(m["chlw_empty"] - DERIVED["chlw_always_empty"])))
    V.append(judge("CHLW: always [] beats every word-picking strategy (random, first option, all options)", "derived",
                   f"gap {np.mean(m['chlw_gap']):.1f} points", rule=Rule(">", 10, 0, what="always [] − best word picker (points)"), value=mean_ci(m["chlw_gap"])))
    c = m["constants"]; err = max(abs(c[k] - DERIVED[k]) for k in ("gender_always_no", "explain_always_yes", "topic_always_minus1"))
    V.append(judge("Constant answers: Gender 'No', QueryCorr-explain 'Yes', QueryCorr-topic '-1'", "50.8 / 54.2 / 7.6 (derived)",
                   f"{c['gender_always_no']:.1f} / {c['explain_always_yes']:.1f} / {c['topic_always_minus1']:.1f}",
                   reproduced=bool(err < 0.1), partially=bool(err < 1.0), rule_text="reproduced if all three within 0.1 of the derived values; partially within 1"))
    V.append(judge("success- metrics penalise output-format failures", "official scorers", f"score ratio {np.mean(m['success_ratio_50']):.2f} at 50 % unparseable",
                   rule=Rule("<", 0.75, 0.95, what="score(50 % unparseable)/score(0 %)"), value=mean_ci(m["success_ratio_50"])))
    if m.get("minilm_gap") is None:
        V.append(judge("MiniLM zero-shot beats the best trivial strategy overall", "our check", "MiniLM not run",
                       reproduced=False, inconclusive=True, rule_text="mean over seeds of MiniLM − best trivial overall: reproduced if > 2 points, partially if > 0",
                       reason="the MiniLM baseline is not run at this profile"))
    else:
        V.append(judge("MiniLM zero-shot beats the best trivial strategy overall", "our check", f"gap {np.mean(m['minilm_gap']):.1f} points",
                       rule=Rule(">", 2, 0, what="MiniLM − best trivial, overall (points)"), value=mean_ci(m["minilm_gap"])))
    short = {k: v for k, v in m["oracle"].items() if v < 99.99}
    V.append(judge("A perfect answer scores 100 on every subset", "implicit in the scorers",
                   "oracle below 100 on " + (", ".join(f"{k} ({v:.1f})" for k, v in short.items()) or "no subset"), verdict="illustrated",
                   reason="the gold answers, written as the prompts ask, are scored by the same post-processing and scorers"))
    return V


# %%
_m = dict(n_items=6658, n_subsets=12, counts_ok=True, chlw_empty=67.64, chlw_gap=[30.0, 31.0, 29.5],
          constants=dict(gender_always_no=50.78, explain_always_yes=54.17, topic_always_minus1=7.62),
          success_ratio_50=[0.5, 0.52, 0.49], minilm_gap=[5.0, 6.0, 5.5], oracle={"Note-NER": 100.0, "Note-Taxonomy-single": 97.0})
test_eq([v.verdict for v in claims(_m)], ["not_testable_offline", "reproduced", "reproduced", "reproduced", "reproduced", "reproduced", "reproduced", "illustrated"])
test_eq(check_headline(claims(_m)).verdict, "not_testable_offline")
_bad = dict(_m, counts_ok=False, chlw_empty=60.0, chlw_gap=[-5.0, -4.0, -6.0], success_ratio_50=[1.0, 1.0, 1.01], minilm_gap=[-1.0, -2.0, -1.5],
            constants=dict(gender_always_no=50.78, explain_always_yes=55.0, topic_always_minus1=7.62))
test_eq([v.verdict for v in claims(_bad)][1:7], ["not_reproduced", "not_reproduced", "not_reproduced", "partially", "not_reproduced", "not_reproduced"])
test_eq([v.verdict for v in claims(dict(_m, minilm_gap=None, chlw_gap=[1.0, 30.0, -5.0]))][3:7:3], ["inconclusive", "inconclusive"])
test_eq({v.verdict for v in claims({}, missing="no data")}, {"not_testable_offline"})


# %%
#| export
def run(cfg:Config, progress:bool=True):
    "The SNS-Bench harness experiment: constant and oracle scores, baselines over seeds, the format-failure study, verdicts."
    import pandas as pd
    from tqdm.auto import tqdm
    from trustlib.results import Result
    metrics = {f"selfcheck/{k}": float(v) for k, v in scorer_selfcheck().items()}
    missing = sns_bench_missing("the SNS-Bench experiment")
    if missing:
        print("Skipped:", missing)
        return Result(paper="sns_bench", config=cfg.to_dict(), metrics=dict(metrics, data_available=0), verdicts=claims({}, missing))
    with torch_threads(cfg.n_threads):
        full = load_all()
        embedder = TextEmbedder()                      # MiniLM: the minilm baseline and QueryGen's cosine term
        const = constant_scores(full, embedder)
        cs = {(r.subset, r.strategy): r.score for r in const.itertuples()}
        data = _subsample(full, cfg.n_items, cfg.seed)
        rows, crows = [], []
        ref_name = "minilm" if "minilm" in cfg.baselines else "first"
        for i in tqdm(range(cfg.n_seeds), desc="seeds", disable=not progress):
            s = derive_seed(cfg.seed, i)
            models = _models(cfg, s, embedder)
            for j, (name, recs) in enumerate(data.items()):
                dev, test = _split(len(recs), cfg.dev_fraction, derive_seed(s, j))
                D, T = [recs[k] for k in dev], [recs[k] for k in test]
                answers = {}
                for mdl in models:
                    mdl.fit(name, D); answers[mdl.name] = mdl.predict(name, T)
                if name == "Note-CHLW":
                    answers["all options"] = [format_answer(name, parse_fields(name, r)["cands"]) for r in T]
                for b, a in answers.items():
                    sc = score_subset(name, a, T, embedder)
                    rows.append(dict(seed=i, subset=name, baseline=b, score=sc["score"], success_ratio=sc.get("success_ratio", np.nan)))
                if ref_name in answers:
                    for rate in cfg.corruption_rates:
                        sc = score_subset(name, corrupt(answers[ref_name], rate, derive_seed(s, j, 99)), T, embedder)["score"]
                        crows.append(dict(seed=i, subset=name, rate=rate, score=sc))
    scores = pd.DataFrame(rows); corr = pd.DataFrame(crows)
    main = scores[scores.baseline != "all options"]
    overall = main.groupby(["seed", "baseline"]).score.mean().unstack()
    trivial = [b for b in TrivialBaseline.STRATEGIES if b in overall]
    chlw = scores[scores.subset == "Note-CHLW"].pivot(index="seed", columns="baseline", values="score")
    chlw_gap = (chlw["empty"] - chlw[[b for b in WORD_PICKERS if b in chlw]].max(axis=1)).tolist() if "empty" in chlw else [float("nan")]
    base = corr[corr.rate == 0].set_index(["seed", "subset"]).score
    half = corr[corr.rate == max(cfg.corruption_rates)].set_index(["seed", "subset"]).score
    ratio = (half / base).loc[[k for k in base.index if k[1] in SUCCESS_SCALED and base[k] > 0]]
    ratio_seed = ratio.groupby(level=0).mean().tolist() or [float("nan")]
    oracle = {k[0]: v for k, v in cs.items() if k[1] == "oracle (gold answer)"}
    m = dict(n_items=sum(len(v) for v in full.values()), n_subsets=len(full), counts_ok=all(len(full[n]) == s.n for n, s in SUBSETS.items()),
             chlw_empty=cs[("Note-CHLW", "always []")], chlw_gap=chlw_gap, success_ratio_50=ratio_seed,
             constants=dict(gender_always_no=cs[("Note-Gender", "always No")], explain_always_yes=cs[("Note-QueryCorr-explain", "always Yes")],
                            topic_always_minus1=cs[("Note-QueryCorr-topic", "always -1")]),
             minilm_gap=(overall["minilm"] - overall[trivial].max(axis=1)).tolist() if "minilm" in overall else None, oracle=oracle)
    metrics.update(data_available=1, n_items=m["n_items"], chlw_always_empty=m["chlw_empty"], chlw_all_options=cs[("Note-CHLW", "all options")],
                   chlw_gap_mean=float(np.mean(chlw_gap)), success_ratio_50_mean=float(np.mean(ratio_seed)),
                   **{f"constant/{k}": v for k, v in m["constants"].items()},
                   **{f"overall/{b}": float(overall[b].mean()) for b in overall},
                   **{f"oracle/{k.removeprefix('Note-').lower().replace('-', '_')}": v for k, v in oracle.items()})
    if m["minilm_gap"] is not None: metrics["minilm_gap_mean"] = float(np.mean(m["minilm_gap"]))
    metrics = {k: v for k, v in metrics.items() if not (isinstance(v, float) and not math.isfinite(v))}   # NaN never equals itself
    summary = main.groupby(["subset", "baseline"]).score.agg(["mean", "std"]).unstack("baseline")
    summary = summary.reindex(list(SUBSETS))
    figs = _figures(scores, corr, cfg)
    tables = dict(scores=scores, summary=summary.round(2), overall=overall.round(2), constants=const.round(2), corruption=corr)
    return Result(paper="sns_bench", config=cfg.to_dict(), metrics=metrics, verdicts=claims(m), tables=tables, figures=figs)

def _figures(scores, corr, cfg) -> dict:
    import matplotlib.pyplot as plt, seaborn as sns
    short = lambda s: s.removeprefix("Note-")
    d = scores.assign(subset=scores.subset.map(short))
    fig1, ax = plt.subplots(figsize=(12, 4.5))
    sns.barplot(data=d, x="subset", y="score", hue="baseline", errorbar=("ci", 95), ax=ax)
    ax.set(xlabel="subset", ylabel="score (0–100, the subset's reported metric)", title="Baselines per subset (test splits; bars: mean over seeds, 95 % CI)")
    ax.tick_params(axis="x", rotation=35); ax.legend(title="baseline", ncol=3, fontsize=8); fig1.tight_layout()
    fig2, ax = plt.subplots(figsize=(7, 4.5))
    c = corr.assign(subset=corr.subset.map(short), rate=corr.rate * 100)
    sns.lineplot(data=c, x="rate", y="score", hue="subset", marker="o", errorbar=None, ax=ax)
    ax.set(xlabel="answers made unparseable (%)", ylabel="score (0–100)",
           title=f"Format-failure sensitivity ({'MiniLM' if 'minilm' in cfg.baselines else 'first-candidate'} answers)")
    ax.legend(fontsize=7, ncol=2); fig2.tight_layout()
    plt.close(fig1); plt.close(fig2)
    return dict(baselines=fig1, format_failure=fig2)


# %% [markdown]
# ## The experiment

# %%
from trustlib.results import run_experiment

# %%
result = run_experiment(run, cfg)

# %% [markdown]
# ### Scores per subset and baseline (test splits; mean and standard deviation over seeds)

# %%
result.tables.get("summary", "skipped: " + str(sns_bench_missing("this table")))

# %% [markdown]
# ### Overall score per seed (mean of the 12 subset scores; the paper's aggregation is not verified)

# %%
result.tables.get("overall", "skipped: " + str(sns_bench_missing("this table")))

# %%
result.figures["baselines"] if "baselines" in result.figures else print("Skipped:", sns_bench_missing("this figure"))

# %% [markdown]
# ### Constant answers and oracles on all items
#
# The CHLW row "always []" is the trustworthiness finding: a predictor that never answers scores about
# two thirds of the maximum, because 208 of the 297 gold lists are empty and the scorer counts an empty
# answer to them as a correct word. "All options" — every candidate word — scores far less. MRC-complex has
# the same weakness in a milder form: an empty `<Result>` list earns option-F1 and option-EM of 1 on every
# item whose gold list is empty. The oracle rows show which scorers cannot give a perfect answer 100: the
# Taxonomy and Hashtag-single post-processors cut at "end" inside words and at commas or periods inside a
# category or tag (Taxonomy-multiple as well, before its exact match); MRC-simple's BLEU is 0 for an
# identical passage shorter than four tokens (4-gram BLEU without smoothing).

# %%
result.tables.get("constants", "skipped: " + str(sns_bench_missing("this table")))

# %% [markdown]
# ### Format-failure sensitivity
#
# Success-scaled scores (QueryCorr-topic, MRC, CHLW) fall about in proportion to the unparseable share;
# accuracy and F1 scores fall because an unparseable answer is simply wrong.

# %%
result.figures["format_failure"] if "format_failure" in result.figures else print("Skipped:", sns_bench_missing("this figure"))

# %% [markdown]
# ## Paper vs. us

# %%
result.verdict_table()

# %% [markdown]
# The paper's main result — how 25+ LLMs score and how that scales with size — needs those models and is
# not testable offline; the harness is ready for them (`full` profile, any local causal LM). What the
# table can test is the benchmark's machinery: the data and its counts, the scorers, and what they
# reward. Read the CHLW rows with the constants table: the official rule that scores an empty list as
# `[""]` lets a model that never answers beat models that try, so a CHLW number says little unless it is
# compared with 67.6. The MiniLM row says whether a weak real model is separated from strategies that
# ignore the note; it is inconclusive at the smoke profile, which does not run MiniLM. Without the data
# every data-dependent claim reads "not testable offline", with the reason.
