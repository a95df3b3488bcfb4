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
# This page is a harness: it reads the benchmark's JSON files at run time, builds the official prompts, lets
# any model with a `generate(prompts) -> texts` method answer them, and scores the answers with ports of the
# official evaluators. Without LLMs offline, it runs trivial strategies and an embedding zero-shot model, and
# studies what the scorers themselves reward.
#
# Official code and data: [HC-Guo/SNS-Bench](https://github.com/HC-Guo/SNS-Bench) (an OpenCompass fork;
# data licensed CC BY-NC-SA 4.0).
#
# ::: {.callout-note}
# ## What we reproduce / what we cannot
# - **The benchmark itself:** the 12 subsets are read from a local copy of the official files (never stored
#   in this repository: the licence is non-commercial share-alike). Their counts and label distributions are
#   checked. In a checkout without the files, every data-dependent cell says so and is skipped, and the
#   claims that need the data are inconclusive with that reason.
# - **The scorers**, ported from the official evaluators with the libraries they use (`nltk` BLEU, the
#   `rouge` package's ROUGE-1/2/L, `jieba` tokens, `demoji`), and checked against the official evaluator code
#   on perturbed gold answers of every subset (`tests/test_sns_bench.py`, `tools/sns_bench_parity.py`).
# - **The prompts:** the official few-shot templates of the OpenCompass configs, wrapped the way OpenCompass
#   wraps them for a chat model (the instruction and the item in one user turn), so a `full`-profile score of
#   a local causal LM is comparable with the paper's table (up to decoding: we decode greedily).
# - **Baselines that run offline:** random, majority (fitted on a 20 % dev split), first-candidate and
#   always-empty strategies, and a MiniLM (all-MiniLM-L6-v2) zero-shot model whose thresholds are fitted on
#   the dev split only. Three seeds redraw the dev/test split. To fit the CPU budget, the `cpu` profile
#   evaluates the baselines on at most 200 items per subset (2,217 of the 6,658; the three smaller subsets
#   whole) and MiniLM reads the first 64 tokens of each text, with its matrix products in bfloat16; the constant-answer scores use every item, the
#   oracle the evaluated ones. `-p n_items 0` runs all items.
# - **Trustworthiness of the scoring:** on CHLW the constant answer `[]` scores about 67.6 success-F1,
#   more than any strategy that picks words; oracle answers do not all reach 100.
# - **Not testable offline:** the paper's results on 25+ LLMs and their scaling with size. The paper's
#   per-model table is not published with its code or data, so its size–score relation cannot be refitted
#   here; `fit_size_score` does that re-analysis for any table of model sizes and overall scores, and the
#   `full` profile scores any local Hugging Face causal LM (`-p model …`) through the same prompts and scorers.
# - **Metric deviations:** QueryGen's cosine term uses MiniLM (in bfloat16) instead of bge-large-en-v1.5; answers are
#   parsed with `ast.literal_eval`, never `eval` (an answer that only `eval` could read, such as
#   `['a'] + ['b']`, counts as unparseable); where the official code would stop with an error (ROUGE of a
#   passage that is empty after emoji removal, MRC-complex's F1 with no true positive), that item or number
#   scores 0. The paper's overall aggregation is not stated in its code; we report the mean of the 12 subset
#   scores.
# :::

# %%
#| default_exp evals.sns_bench

# %%
#| export
from __future__ import annotations
import ast, functools, json, math, re, warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence
import numpy as np
from trustlib.config import BaseConfig, param, ConfigError, ResourceUnavailable, derive_seed, torch_threads, install_hint
from trustlib.data import DataUnavailable, sns_bench_dir, sns_bench_missing
from trustlib.results import Claim, Change, Above, Below, AtLeast, AllOf

# %%
#| hide
from fastcore.test import test_eq, test_fail, test_close
import tempfile
import pandas as pd

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
baselines: Optional[list[str]] = None  # strategies to evaluate (random, majority, first, empty, minilm; lm: the causal LM named by model)
corruption_rates: Optional[list[float]] = None  # shares of answers made unparseable in the format-failure study
model: Optional[str] = None  # Hugging Face causal LM (local folder, or an id in the local cache) scored as the lm baseline; empty: none
max_new_tokens: Optional[int] = None  # generation length of the lm baseline
n_threads: Optional[int] = None  # torch threads (None: leave as is)

# %% [markdown] tags=["injected-parameters"]
# **This page shows a run with** `profile = "cpu"` (run `cpu-bf21a9e8fb`, commit `9e86ae9`, 40 s, 2026-12-04). Running the notebook yourself uses the parameters cell above as written (the fast `smoke` profile unless you change it); `trustlib run sns_bench --profile cpu` repeats the run shown here.

# %%
#| export
BASELINES = ("random", "majority", "first", "empty", "minilm", "lm")

def _is_pathlike(name:str) -> bool:
    "A model name that can only be a folder: absolute, relative ('./', '../'), home ('~'), or with more than one '/'."
    return name.startswith(("/", ".", "~")) or name.count("/") > 1 or "\\" in name

def check_model(name:str) -> str:
    "Resolve the `model` parameter before any work: an existing local folder with a `config.json`, or a Hugging Face id in the local cache (never downloaded)."
    import os
    p = Path(os.path.expanduser(name))
    if p.is_dir():
        if not (p / "config.json").is_file(): raise ConfigError(f"parameter 'model': folder {name!r} has no config.json; give a Hugging Face model folder")
        return str(p)
    if p.exists() or _is_pathlike(name): raise ConfigError(f"parameter 'model': {name!r} is not a model folder (no such directory)")
    try: from huggingface_hub import try_to_load_from_cache
    except ImportError as e: raise ResourceUnavailable(f"the lm baseline needs `transformers` and `huggingface_hub`: {install_hint('transformers')}") from e
    if not isinstance(try_to_load_from_cache(name, "config.json"), str):
        raise ResourceUnavailable(f"parameter 'model': {name!r} is not in the local Hugging Face cache (models are never downloaded here); "
                                  "download it on a networked machine or give a local folder")
    return name

@dataclass
class Config(BaseConfig):
    "Configuration of the SNS-Bench harness run."
    n_seeds: int = param(3, "independent dev/test splits", ge=1, le=100)
    n_items: int = param(50, "items per subset (0 means all)", ge=0, le=100_000)
    dev_fraction: float = param(0.2, "share of each subset used to fit majorities and thresholds", gt=0, lt=1)
    baselines: tuple[str, ...] = param(("random", "majority", "first", "empty"), "strategies to evaluate (random, majority, first, empty, minilm; lm: the causal LM named by model)", choices=BASELINES)
    corruption_rates: tuple[float, ...] = param((0.0, 0.1, 0.25, 0.5), "shares of answers made unparseable in the format-failure study", ge=0, le=1)
    model: str = param("", "Hugging Face causal LM (local folder, or an id in the local cache) scored as the lm baseline; empty: none")
    max_new_tokens: int = param(64, "generation length of the lm baseline", ge=1, le=4096)
    n_threads: Optional[int] = param(1, "torch threads (None: leave as is)", ge=1, le=1024)
    PROFILE_DEFAULTS = {
        "cpu": dict(n_items=200, baselines=("random", "majority", "first", "empty", "minilm")),
        "full": dict(n_items=0, baselines=("random", "majority", "first", "empty", "minilm"), max_new_tokens=256),
    }
    def validate(self):
        if 0.0 not in tuple(self.corruption_rates):
            raise ConfigError(f"parameter 'corruption_rates': must include 0.0 (the uncorrupted score), got {list(self.corruption_rates)}")
        if len(set(self.baselines)) != len(self.baselines): raise ConfigError(f"parameter 'baselines': a baseline is listed twice in {list(self.baselines)}")
        if not self.baselines and not self.model:
            raise ConfigError("parameter 'baselines': give at least one baseline (random, majority, first, empty, minilm), or a causal LM with 'model'")
        if "lm" in self.baselines and not self.model:
            raise ConfigError("parameter 'model': the lm baseline needs a causal LM (a local folder, or a Hugging Face id in the local cache)")
        if self.model: check_model(self.model)

    @property
    def strategies(self) -> tuple[str, ...]:
        "The baselines that run: `baselines`, plus `lm` when a model is given."
        return tuple(self.baselines) + (("lm",) if self.model and "lm" not in self.baselines else ())


# %%
cfg = Config.from_namespace(globals())
cfg

# %% [markdown]
# Bad parameters are refused before any work, naming the parameter: an unknown baseline, no baseline at all,
# the lm baseline without a model, a model folder that does not exist, a model id that is not in the local
# Hugging Face cache (nothing is downloaded).

# %%
test_eq(Config.from_params("cpu").n_items, 200)
test_fail(lambda: Config.from_params("smoke", baselines=("oracle",)), contains="baselines")
test_fail(lambda: Config.from_params("smoke", baselines=()), contains="parameter 'baselines'")
test_fail(lambda: Config.from_params("smoke", baselines=("random", "random")), contains="listed twice")
test_fail(lambda: Config.from_params("smoke", corruption_rates=(0.1, 0.5)), contains="0.0")
test_fail(lambda: Config.from_params("smoke", baselines=("random", "lm")), contains="parameter 'model'")
test_fail(lambda: Config.from_params("full", model="./no/such/folder"), contains="parameter 'model': './no/such/folder' is not a model folder")
test_fail(lambda: Config.from_params("full", model="no-such-org/no-such-model-xyz"), contains="not in the local Hugging Face cache")
_tmp_model = Path(tempfile.mkdtemp())
test_fail(lambda: Config.from_params("full", model=str(_tmp_model)), contains="has no config.json")
(_tmp_model / "config.json").write_text("{}")
test_eq(Config.from_params("full", model=str(_tmp_model)).strategies, ("random", "majority", "first", "empty", "minilm", "lm"))
test_eq(Config.from_params("full", model="").strategies, ("random", "majority", "first", "empty", "minilm"))   # no model: no lm baseline


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

def publish_blocker() -> str|None:
    "Why a run made here must not be published (`trustlib run sns_bench --publish` refuses before running), or None: without the licensed files every data claim is inconclusive."
    return sns_bench_missing("a run that can be published (without them every data claim of the page is inconclusive)")


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
# non-empty gives tp/fp/fn/tn and an F1; on the true positives, BLEU (`nltk.sentence_bleu`, no smoothing) on
# jieba tokens and ROUGE-1/2/L F-scores of the `rouge` package on the jieba tokens joined by spaces, after
# removing newlines, replacement characters and emoji (`demoji`), exactly as the official evaluator does.
# The `rouge` package is not `rouge-score`: its ROUGE-L is summary-level and splits sentences at periods, and
# its F-scores differ, so the two give different MRC-simple scores on the same answers. When a passage is
# empty after emoji removal, the `rouge` package raises an error, which stops the official evaluation; we
# score that item's ROUGE 0 instead. Reported: the mean of the five success-scaled numbers.

# %%
#| export
_LIST_RE = re.compile(r"\[[^\[\]]*\]", re.DOTALL)

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

def clean_passage(text:str) -> str:
    "A passage as the official MRC-simple evaluator compares it: newlines and replacement characters removed, emoji removed with `demoji`."
    from trustlib.config import require
    demoji = require("demoji", "the MRC-simple scorer")
    return demoji.replace(text.replace("\n", "").replace("\ufffd", ""), "")

@functools.lru_cache(maxsize=100_000)
def passage_scores(pred:str, gold:str) -> tuple[float, float, float, float]:
    "(BLEU, ROUGE-1, ROUGE-2, ROUGE-L F) of one predicted passage against the gold, as the official MRC-simple evaluator computes them (cached: a pure function)."
    from nltk.translate.bleu_score import sentence_bleu
    from trustlib.config import require
    hyp, ref = clean_passage(pred), clean_passage(gold)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bleu = float(sentence_bleu([_tokens(ref)], _tokens(hyp)))
    try: sc = require("rouge", "the MRC-simple scorer").Rouge().get_scores(" ".join(_tokens(hyp)), " ".join(_tokens(ref)))[0]
    except (ValueError, RecursionError): return bleu, 0.0, 0.0, 0.0        # an empty passage: the rouge package raises
    return bleu, sc["rouge-1"]["f"], sc["rouge-2"]["f"], sc["rouge-l"]["f"]

def score_mrc_simple(preds:Sequence[str], refs:Sequence) -> dict:
    "MRC-simple: mean of success-F1 (empty vs non-empty), success-BLEU and success-ROUGE-1/2/L on the true positives."
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
    bleu, r1, r2, rl = (list(x) for x in zip(*[passage_scores(p, r) for p, r in tp])) if tp else ([], [], [], [])
    sr = success_ratio(err, len(preds)); mean = lambda x: float(np.mean(x)) if x else 0.0
    parts = dict(success_f1=sr * f1, success_bleu=sr * mean(bleu), success_rouge1=sr * mean(r1),
                 success_rouge2=sr * mean(r2), success_rougeL=sr * mean(rl))
    return dict(score=float(np.mean(list(parts.values()))), success_ratio=sr, f1=f1 * 100, n_tp=len(tp), n_fp=fp, n_fn=fn, n_tn=tn, **parts)


# %% [markdown]
# Identical passages score 100; the `rouge` package's ROUGE-L is summary-level (sentences split at periods),
# so a passage whose sentences are reordered keeps a perfect ROUGE-1 but not a perfect ROUGE-2; emoji are
# removed before scoring (a passage that differs from the gold only by emoji is a perfect match) and an
# all-emoji passage scores ROUGE 0 instead of stopping the evaluation.

# %%
_gold = [["the cat sat on the mat"], [], ["red shoes are nice"], []]
s = score_mrc_simple(["['the cat sat on the mat']", "[]", "[]", "not a list at all"], _gold)
test_eq((s["n_tp"], s["n_tn"], s["n_fn"], s["success_ratio"]), (1, 1, 1, 75.0))
test_close(s["success_bleu"], 75.0, eps=1e-6); test_close(s["success_rougeL"], 75.0, eps=1e-4)
test_close(s["success_f1"], 75 * 2 * (1 / 1.0001) * (1 / 2.0001) / (1 / 1.0001 + 1 / 2.0001 + 1e-4), eps=1e-9)
test_eq(score_mrc_simple(["[]"] * 4, _gold)["score"], 0.0)          # always [] scores 0 on MRC-simple
test_eq(clean_passage("great view 😍🏔️\nworth it ✨"), "great view worth it ")
_e = score_mrc_simple(["['great view 😍 worth it']", "['😍😍']"], [["great view worth it"], ["some gold passage here"]])
test_close(_e["success_rouge1"], 50.0, eps=1e-4); test_eq(_e["n_tp"], 2)          # the all-emoji passage scores ROUGE 0
_o = score_mrc_simple(["['b c d. a b c']"], [["a b c. b c d"]])
test_close(_o["success_rouge1"], 100.0, eps=1e-4); assert _o["success_rouge2"] < 100

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
# The prompts are the official few-shot templates of the OpenCompass configs of SNS-Bench (`OFFICIAL_PROMPTS`:
# per subset, the instruction with its worked examples, and the item template). OpenCompass maps the
# instruction's SYSTEM role to the user for Hugging Face chat models and merges consecutive turns of the same
# role with a newline, so the model sees **one user turn**: instruction, a newline, then the item. The item
# template's fields are filled by plain substitution (as OpenCompass does), so braces inside a note are left
# alone. CHLW and MRC-complex records carry their own task text in the content, as upstream. A model is
# anything with `generate(prompts) -> texts`; `PromptModel` turns it into a predictor
# (`predict(subset, records) -> answers`), the interface the baselines share. `HFGenerator` wraps the prompt
# in the tokenizer's chat template (with the generation prompt), as OpenCompass's `HuggingFacewithChatTemplate`
# does, and decodes greedily (the official example runs near-greedy sampling: temperature 0.1, top-p 0.01).

# %%
#| export
#| code-fold: true
# The instruction and item template of each subset, verbatim from the SNS-Bench OpenCompass configs
# (HC-Guo/SNS-Bench, commit fbe9840, opencompass/configs/datasets/sns_bench/*.py; OpenCompass is Apache-2.0).
# The few-shot examples quote short pieces of the benchmark (CC BY-NC-SA 4.0).
OFFICIAL_PROMPTS = {
    'Note-Taxonomy-single': (
        ("Given a SNS note's title and content, and a list of candidate categories, please select the most suitable category from the candidate category list. \n"
         'Here are some examples:\n'
         '\n'
         'Input: Note title: Need help, is this a car dash cam\n'
         " Note content: Bought a DV for 250, came with a battery and charging cable, and it's very light, wondering if it's really a dash cam[crying R][crying R]#DV[topic]# \n"
         'Candidate categories: Car knowledge, Trending, Car lifestyle, Car accessories, Motorcycles, Car shopping, Car modification, New energy & smart, Car culture, Driving test learning, Other automotive\n'
         'Answer: Car accessories\n'
         '\n'
         "Input: Note content: Traveling Henan · Understanding China | Xinxiang South Taihang Tourism Resort: Let's follow the lens to see the sea of clouds in South Taihang #TravelingHenanUnderstandingChina#HomelandHenan#HomelandHenanNewMediaMatrix#May19ChinaTourismDay#XinxiangSouthTaihangTourismResort#SeaOfClouds#XinxiangCultureBroadcastingForeignAffairsAndTourismBureau \n"
         'Candidate categories: Travel VLOG, Shopping, Food exploration, Places to go, Travel guide, Travel records, Hotels & B&Bs, Attraction experience, Travel tips, Living abroad, Indoor leisure \n'
         'Answer: Travel records\n'
         '\n'
         '\n'
         '\n'
         "Please output the answer (in the same format as the examples above) DIRECTLY after 'Answer:', WITHOUT any additional content.\n"
         '\n'),
        ('Input: {content}\n'
         'Candidate categories: {candidates}\n'
         'Answer: ')),
    'Note-Taxonomy-multiple': (
        ("Given a SNS note's title and content, and lists of candidate primary, secondary, and tertiary categories, please select the most suitable categories from each level. Answer in the format: Primary category | Secondary category | Tertiary category. \n"
         'Here are some examples:\n'
         '\n'
         'Input: Note title: The super disappointing AHC facial cleanser for me\n'
         ' Note content: During National Day trip to Hong Kong, several colleagues asked me to help buy AHC facial cleanser, saying it was especially good.\n'
         "I followed the trend and bought one, used it in the hotel that night💥💢After washing, my eyes were particularly painful, even a tiny bit made me feel like I was going blind👉🙅🙅so where exactly is it good😤😤😱😱Now a full bottle is sitting at home, won't repurchase.\n"
         'Bought for about 70 HKD ~ equivalent to about 60 RMB. The Innisfree green tea cleanser is still better for an affordable cleanser😖😖😖 \n'
         "Candidate primary categories: ['Music', 'Beauty', 'Mother&Baby', 'Outdoor', 'Humanities', 'Photography', 'Gaming', 'Art', 'Trends', 'Entertainment', 'Film&TV', 'Kids', 'Career', 'Food']\n"
         "Candidate secondary categories: ['Education Daily', 'Skincare', 'Other Pets', 'Handicraft', 'Resource Sharing', 'Exhibition', 'Personal Care', 'Shoes', 'Mobile Games', 'Relationship Knowledge', 'Meals', 'Places', 'Language Education', 'Makeup']\n"
         "Candidate tertiary categories: ['Cycling Records', 'Playlist Sharing', 'Cleansing', 'Other Shoes', 'Fruit', 'Self-study', 'Instrument Playing', 'JK', 'Beverage Review', 'Tablet', 'Career Development', 'Boutique', 'Other Campus', 'Driving Safety']\n"
         'Answer: Beauty | Skincare | Cleansing\n'
         '\n'
         'Input: Note title: Day8\n'
         ' Note content: Forgot to post yesterday\n'
         'Making up for it today#ChineseBrushCalligraphyCheckIn[topic]# #DailyCalligraphyCheckIn[topic]# # \n'
         "Candidate primary categories: ['Anime', 'Beauty', 'Gaming', 'Humanities', 'Home&Decoration', 'Health', 'Relationships', 'Social Science', 'Career', 'Art', 'Education', 'Life Records']\n"
         "Candidate secondary categories: ['Science', 'Car Lifestyle', 'Running', 'Other', 'Culture', 'Weight Loss Medicine', 'Parks', 'Fashion', 'Accessories', 'Weight Loss', 'Music Sharing', 'Finger Gaming']\n"
         "Candidate tertiary categories: ['Bags', 'Fruit', 'Leisure Guide', 'Sheet Music Sharing', 'Font Design', 'Calligraphy', 'Weight Loss Tutorial', 'Snack Review', 'Life Science', 'Swimwear', 'Ball Sports', 'Skincare Collection']\n"
         'Answer: Humanities | Culture | Calligraphy\n'
         '\n'
         '\n'
         '\n'
         "Please output the answer (in the same format as the examples above) DIRECTLY after 'Answer:', WITHOUT any additional content.\n"
         '\n'),
        ('Input: {content}\n'
         'Candidate primary categories: {candidates_primary}\n'
         'Candidate secondary categories: {candidates_secondary}\n'
         'Candidate tertiary categories: {candidates_tertiary}\n'
         'Answer: ')),
    'Note-Hashtag-single': (
        ('Give you a SNS note title and content, along with a list of candidate topic tags, please select the most relevant tag from the list for the note. \n'
         'Below are some examples:\n'
         '\n'
         'Input: \n'
         'Note Title: ❤️Enfj Big Swords Will Love Life BGM Recommendations 🔥\n'
         " Note Content: Compiled some BGMs for everyone, if you have any recommended songs, please leave them in the comments section, let's exchange and share together 😀\n"
         'Candidate Topic Tags: \n'
         'National Peace and Tranquility, Outfit for Pear-Shaped Body, High EQ Small Tricks, Vienna Guide\n'
         'Answer: High EQ Small Tricks\n'
         '\n'
         'Input: \n'
         'Note Title: Must-Have 🩱 at the Sanya Beach\n'
         ' Note Content: On a summer beach, how can you do without this blue tie-dye dress! 💙\t\n'
         '\t\n'
         'Size XL, perfectly fits plus-size sisters! 👯\u200d♀️\t\n'
         '\t\n'
         'A high-end, laid-back style, loose design, wear it and instantly look whiter and slimmer! 🩱\t\n'
         '\t\n'
         'This dress is not only fashionable but also of great quality, a must-have item for beach vacations! 🏖️\t\n'
         '\t\n'
         'Even the most picky of you will fall in love with it! 💖\n'
         'Candidate Topic Tags: \n'
         'National Trend Short Sleeves, Beach Outfit, Miracle Warm Pictures, Badminton Uniform Outfit\n'
         'Answer: Beach Outfit\n'
         '\n'
         '\n'
         '\n'
         "Please output the answer (in the same format as the examples above) DIRECTLY after 'Answer:', WITHOUT any additional content.\n"
         '\n'),
        ('Input: \n'
         '{content}\n'
         'Candidate Topic Tags: \n'
         '{candidates}\n'
         'Answer: ')),
    'Note-Hashtag-multiple': (
        ('Given a title and content of a SNS note, and a list of candidate topic tags, please select all the tags that match the note from the list of topic tags.\n'
         'Here are some examples:\n'
         '\n'
         'Input: \n'
         'Note Title: Deposit Money in Wuhan\n'
         ' Note Content: Squat for a Wuhan customer manager \n'
         ' Deposit for 5 years!!!\n'
         'Candidate Topic Tags: \n'
         "September Birthday, DIY in Guangzhou, Savings Check-in, Wuhan, Henna Tattoo, Nap Time, Vancouver Mercedes, Must-Have Outdoor Gear, Bank, Liu Xiang, Savings, 5D Stereoscopic Mask, Sam's Club, Non-Cyan Earring Recommendations\n"
         'Answer: Wuhan, Savings, Savings Check-in, Bank\n'
         '\n'
         'Input: \n'
         'Note Title: First Time Making Handmade Balls, Afraid of Sealing Issues!!\n'
         ' Note Content: Love handmade balls so much! Never thought making them myself would be so much fun! But the glue for sealing is really hard to handle. Use too little and it might not be sturdy, use too much and it might burn [Cry R][Cry R]. How long should I wait before peeling off the film? 🐷Girls interested can check my page, switched to a new account, will be sharing more textured balls\n'
         '52💼u (5 balls)\n'
         'Candidate Topic Tags: \n'
         'CPA Exam Review, After Being a Mom, Recruiting Agents, Manicure Wholesale Collaboration, First Time Making Handmade Balls, Korea Trip, Shanghai Yuanxing Huayu Real Estate Group Co., Ltd., Handmade Ball, Pinching Ball Fun, Popular Mask Recommendations, Resume Coaching, Handmade Ball FX, Handmade Ball Sharing, New Driving Style, Pinching Sharing, Basic Skills Competition for Class Teachers, Handmade Ball Original\n'
         'Answer: Pinching Sharing, Handmade Ball Sharing, Handmade Ball FX, Handmade Ball Original, First Time Making Handmade Balls, Handmade Ball, Pinching Ball Fun\n'
         '\n'
         '\n'
         '\n'
         "Please output the answer (in the same format as the examples above) DIRECTLY after 'Answer:', WITHOUT any additional content.\n"
         '\n'),
        ('Input: \n'
         '{content}\n'
         'Candidate Topic Tags: \n'
         '{candidates}\n'
         'Answer: ')),
    'Note-QueryCorr-topic': (
        ('You are a relevance scoring robot. You will receive a query and a Xiaohongshu note content, and you will score the relevance between the note and the query. \n'
         'Before scoring, I will first introduce you to the concepts of requirements and topics, and then provide you with rating levels to choose from.\n'
         '\n'
         'First, I will introduce you to the concepts of requirements and topics.\n'
         '\n'
         'Requirements:\n'
         '```\n'
         "In search engines, users express their search intent through queries. However, due to factors such as knowledge level and cognition, the input queries may not accurately describe users' true needs.\n"
         'Therefore, search systems need to accurately understand the real needs behind queries to retrieve the content users need.\n'
         'Generally, queries can be divided into "Precise Need Queries" and "General Need Queries" based on requirements. Their definitions and differences are as follows:\n'
         '* Precise Need Queries: queries with clear and unique intentions.\n'
         'e.g. how to treat knee pain, how to cook tomato and eggs\n'
         '* General Need Queries: queries that may have multiple intentions, which can be further divided into two categories according to primary and secondary needs:\n'
         '** Primary Needs: The most direct and basic expectations when users search, covering common user needs. Usually what users first think of and most want to get answers to immediately.\n'
         "** Secondary Needs: Some additional needs around the primary needs, or specific needs. Although these needs aren't common to all users, they are very important to some users.\n"
         '```\n'
         '\n'
         'Topics:\n'
         '```\n'
         "Can be understood as core issues or involved entity objects, and notes' topics can be viewed from different angles, examples as follows:\n"
         'Example 1:\n'
         '618 must-haves‼️Sharing happiness-boosting bathroom fixtures😌\n'
         'Abstract perspective: Home bathroom essentials\n'
         'Specific perspective: Introduction of bathroom cabinet, smart toilet, shower head\n'
         '\n'
         'Example 2:\n'
         "Five easy-to-raise dogs that don't smell\n"
         'Abstract perspective: Introduction to easy-to-raise dogs\n'
         'Specific perspective: Introduction of 5 dogs: Schnauzer, Poodle, Bichon Frise, Shiba Inu, Pomeranian\n'
         '\n'
         'Based on the matching degree between "query topic" and "note topic", they can be divided into 3 categories:\n'
         "* Category 1: Complete topic match: The note's topic matches the query topic\n"
         'For example:\n'
         'Query=home bathroom recommendations, Note=618 must-haves‼️Sharing happiness-boosting bathroom fixtures😌\n'
         "Query=which dogs are easy to raise, Note=Five easy-to-raise dogs that don't smell\n"
         '\n'
         "* Category 2: Partial topic match: Part of the note's topic matches the query topic\n"
         'For example:\n'
         'Query=smart toilet, Note=618 must-haves‼️Sharing happiness-boosting bathroom fixtures😌\n'
         "Query=poodle, Note=Five easy-to-raise dogs that don't smell\n"
         '\n'
         "* Category 3: No topic match: The note's topic doesn't match the query topic at all\n"
         'For example:\n'
         'Query=ceiling decoration recommendations, Note=618 must-haves‼️Sharing happiness-boosting bathroom fixtures😌\n'
         "Query=are kangaroos easy to raise, Note=Five easy-to-raise dogs that don't smell\n"
         '```\n'
         '\n'
         '\n'
         'Available rating levels:\n'
         '```\n'
         '* 3: Meets primary needs, complete topic match (relevant content ≥80%)\n'
         'Examples:\n'
         'Query=basketball Note=Who invented basketball?\n'
         '\n'
         '* 2: Meets primary needs, partial topic match (relevant content between 10%~80%)\n'
         'Examples:\n'
         "Query=Schnauzer vs Poodle comparison Note=Five easy-to-raise dogs that don't smell  | [Meets secondary needs, complete topic match (relevant content ≥80%)]\n"
         'Query=Apple Note=After becoming famous, Fan Bingbing\'s most regrettable movie "Apple" | [Meets secondary needs, partial topic match (relevant content between 10%~80%)]\n'
         'Query=Xiaomi su7 Note=Help! Should I choose su7 or Mercedes c260\n'
         '\n'
         '* 1: Low satisfaction level, relevant content less than 10%\n'
         'Examples:\n'
         'Query=23-week glucose tolerance Note=Peking Union Medical College Hospital International Birth Record - Prenatal Care | [Low satisfaction level, only mentioned]\n'
         "Query=Can gold be purchased Note=Today's gold price-May 18, 2024 <Up> | [Low satisfaction level, extremely specific need]\n"
         'Query=How to play badminton Note=About sharing a racket with my bestie to play badminton | [Low satisfaction level, helpful for query with matching topic]\n'
         'Query=Quick weight loss exercise Note=100 reps daily, anytime anywhere💦belly fat + thigh fat reduction❗️effective\n'
         '\n'
         "* 0: Doesn't meet needs, has some connection, keywords match\n"
         'Examples:\n'
         "Query=Gemini wants to break up Note=How long does it take for Gemini to forget ex  [Doesn't meet needs, has some connection, no keyword match]\n"
         'Query=Chaotianmen Hotpot Note=Haidilao please stop posting on social media\n'
         '\n'
         "* -1: Doesn't meet needs, no connection at all\n"
         'Examples:\n'
         "Query=Amazing girls Note=These three makeup schools are not recommended, ordinary girls can't afford\n"
         '\n'
         '```\n'
         '\n'),
        ('The Query and note you received are:\n'
         '{content}\n'
         'Please output the rating level, choosing from the five numerical levels: -1, 0, 1, 2, 3. \n'
         'Output only the numerical rating, without any additional content.\n'
         '\n')),
    'Note-QueryCorr-explain': (
        ('Below is a question and a document. Please determine if the given document can answer the given question. \n'
         'If it can, reply with "Yes", otherwise reply with "No". Only reply with "Yes" or "No", no additional explanations are needed. \n'
         'Here are some examples:\n'
         '\n'
         'Question: \n'
         'Is the distorted face in the back camera of an iPhone the real you? \n'
         'Document: \n'
         "Revealed | Is the you in the original camera really you? |- Distorted features? Facial asymmetry? Poor skin condition? Skewed face? Why do you see all these when you open the original camera on your phone? And then you get anxious: Am I really that ugly? Actually, it's not the case. The original camera on your phone does indeed make you look worse. Let me explain one by one about appearance anxiety #notcamerafriendly\n"
         'Answer: No\n'
         '\n'
         'Question: \n'
         'Is the corn used in cultural playthings real corn? \n'
         'Document: \n'
         "Light Macaroon | Beautiful, beautiful | All real corn grown, nature's colorful gifts currently popular cultural plaything corn (naturally grown) undyed\n"
         'Answer: Yes\n'
         '\n'),
        ('Question: \n'
         '{sentence1}\n'
         'Document: \n'
         '{sentence2}\n'
         'Answer: ')),
    'Note-MRC-simple': (
        ('You are a reading comprehension master: \n'
         'I will provide you with a user\'s note article, including a title and content, where the title may be empty "". I will also give you a user\'s question. \n'
         '\n'
         'Please think according to the following steps:\n'
         "* Step 1, combine the note's title and content to determine if the user's question can be answered. If there are specific entity words or qualifiers in the question, they must be satisfied to count as having an answer.\n"
         "* Step 2, if Step 1 determines that the content can answer the user's question, then extract the answer from the original note content and output the extracted original content.\n"
         '\n'
         'Content requirements for answers:\n'
         '* Extract sentences that can answer the question, cross-sentence extraction is allowed, but must be complete sentences or paragraphs, multiple consecutive sentences must be extracted continuously, and preserve special characters like \n'
         '.\n'
         '* If the middle part of consecutive sentences is irrelevant to the answer, it can be skipped for cross-sentence extraction; if the answer is long (more than 120 characters), it can be extracted by points.\n'
         "* Content must come from the original text, no summarization allowed; do not extract content unrelated to answering the user's question.\n"
         '\n'
         'Format requirements for answers:\n'
         '* Output the answers in list form, where each value in the list is a sentence or paragraph that can answer the question.\n'
         '* If no answer can be extracted, return an empty list [].\n'
         '* Do not output any content other than the answer list.\n'
         '\n'
         '\n'),
        ('Here is the note title and content:\n'
         '\n'
         '{content}\n'
         '\n'
         '\n'
         "User's question:\n"
         '{query}\n'
         'Output:\n')),
    'Note-MRC-complex': (
        ('Task: First rewrite the Query, then perform reading comprehension.\n'
         '\n'
         '###Reference Content Format###\n'
         '* The reference content consists of three parts: Query, Doc, and Level\n'
         "* Query is the user's search term with question-asking intent; Doc is the main text part of the image note, wrapped in <Doc> and </Doc>; Level defines the expected answer type, indicating what type of answer the user needs.\n"
         '\n'
         '###Task Requirements###\n'
         'Step 1: Based on Query and Level, rewrite the Query into specific answer requirements, please output the rewritten rewrite_query. Here are some examples for the first step:\n'
         "1. [Query=World's most beautiful museums recommendations, Level=museum names]=>[Names of the world's most beautiful museums]\n"
         '2. [Query=Coody Coffee recommendations, Level=drink names]=>[Delicious drink names at Coody Coffee]\n'
         '3. [Query=Qingdao food, Level=dishes]=>[Delicious dishes in Qingdao]\n'
         '4. [Query=Games similar to Number Bomb, Level=game names]=>[What games are similar to Number Bomb]\n'
         '5. [Query=Birthday cake recommendations in Licheng District, Jinan, Level=bakery cake names]=>[Delicious birthday cakes from bakeries in Licheng District, Jinan]\n'
         '6. [Query=Guangzhou Yuexiu District food recommendations, Level=restaurant dishes]=>[Delicious restaurant dishes in Yuexiu District, Guangzhou]\n'
         '7. [Query=Hiking survival bracelet recommendations, Level=brand model]=>[Brand and model recommendations for hiking survival bracelets]\n'
         '8. [Query=Must-buy in Japan, Level=brand model]=>[Brand and model of Japanese specialty products]\n'
         '9. [Query=iPhone 11 photography recommendations, Level=model]=>[iPhone 11 models good for photography]\n'
         '10. [Query=1000 desk essentials, Level=product names]=>[1000 useful products for desks]\n'
         '11. [Query=Changsha special breakfast recommendations, Level=restaurants]=>[Names of restaurants with special breakfast in Changsha]\n'
         '12. [Query=Nanjing surrounding tours, Level=cities]=>[Cities suitable for tourism around Nanjing]\n'
         '13. [Query=Cheap clothing places in Shenzhen, Level=shopping locations]=>[Names of shopping locations for cheap clothes in Shenzhen]\n'
         '14. [Query=Harbin bathhouse recommendations, Level=bathhouse names]=>[Names of worthwhile bathhouses in Harbin]\n'
         '\n'
         'Step 2: Evaluate the relevance between Doc and rewrite_query, paying attention to important qualifiers in rewrite_query, such as time and location modifiers. If Doc misses important qualifiers, it can be considered irrelevant. Analyze the relevance in 1-2 sentences.\n'
         '\n'
         'Step 3: If Doc is relevant to rewrite_query, extract all answers (Options) from Doc that can answer the user\'s question and put them in AnswerList. Options must match the answer type required by rewrite_query. Specifically, if rewrite_query requires "brand model", ensure each answer Option includes both "brand name" and "model"; if this cannot be satisfied, consider it unextractable. If rewrite_query requires "restaurant dishes", ensure each answer Option includes both "restaurant name" and "dish name". Others like "bakery cake names" follow the same pattern. If Option cannot meet the required answer type, consider it unextractable, and AnswerList will be an empty list [].\n'
         '\n'
         'Step 4: For each answer Option in AnswerList, extract a related description (Reason) from Doc. Format: [{"Option": "xxx", "Reason": "xxx"}, ...]. If Doc is irrelevant or has no answers, return an empty list [].\n'
         '\n'
         'Notes:\n'
         '1. Answer Options must follow the original text, non-continuous extraction is allowed.\n'
         '2. Reasons must be extracted from the original text, no modifications allowed.\n'
         '3. Answer Options should typically be specific entity nouns or names that can be directly searched through search engines; avoid extracting vague descriptions like "this hidden gem hotel" or "rice noodles from the shop near XXX bus station".\n'
         '4. Doc may have various article structures, including a common parallel point structure with leading words. When extracting answer Options, avoid including leading words like "Figure 1", "Figure 2", ..., "Shop 1", "Shop 2", etc.\n'
         '5. Reason length should not exceed 100 english character widths.\n'
         '\n'
         '\n'
         'Output format:\n'
         '<rewrite_query>...</rewrite_query>\n'
         '<relevance_analysis>...</relevance_analysis>\n'
         '<AnswerList>["...", ...]</AnswerList>\n'
         '<Result>[{"Option": "xxx", "Reason": "xxx"}, ...]</Result>\n'
         '\n'
         '\n'
         '\n'
         '\n'),
        '{content}'),
    'Note-NER': (
        ('Extract entity information from the Passage according to the Question requirements. \n'
         'Note that the extracted answers should maintain the same case as in the passage.\n'
         'Here are some examples:\n'
         '\n'
         'Passage:212 In stock Japanese DIOR 2023 Fall new single color flame gold blush 100/625/343\n'
         "Question:Please find all 'season' entities\n"
         'Answer:Fall\n'
         '\n'
         'Passage:BUTOO tattoo stickers English series colored tattoo stickers waterproof female long-lasting niche high-end tattoo stickers\n'
         "Question:Please find all 'style' entities\n"
         'Answer: high-end, niche\n'
         '\n'
         "Passage:mmm collection slim fit t-shirt women's versatile solid color curved hem short sleeve v-neck fitted hot girl top\n"
         "Question:Please find all 'style (for clothing and accessories)' entities\n"
         'Answer: short sleeve, fitted, curved, v-neck\n'
         '\n'
         'Passage:Early autumn 2022 new sweater plus-size slimming outfit high-end top skirt autumn winter short skirt two-piece set\n'
         "Question: Please find all 'category' entities\n"
         'Answer: skirt, sweater, short skirt\n'
         '\n'
         '\n'
         '\n'
         "Please output the answer (in the same format as the examples above) DIRECTLY after 'Answer:', WITHOUT any additional content.\n"
         '\n'),
        ('Passage:{content}\n'
         'Question:{question}\n')),
    'Note-Gender': (
        ('According to the following note content fields, determine whether the content is likely to trigger discussions of interest to both men and women. \n'
         "If it includes such content, reply 'Yes,' otherwise reply 'No.' Only reply with 'Yes' or 'No,' without any additional explanation.\n"
         '\n'
         'These contents mainly include the following aspects: \n'
         'Stereotypes about men and women;\n'
         'Gender bias phenomena, gender inequality in occupations, sports, interests, etc.;\n'
         'Fertility-related content: including views on childbirth, parenting experiences, etc.;\n'
         'Marriage-related content: including matchmaking, weddings, post-marriage life, mother-in-law relationships, marital breakdown, prenuptial property, etc.;\n'
         'Romance-related content: emotional experiences, arguments, scumbag men/women, cheating, etc.; \n'
         'Sex-related content: including sexual violence, sexual harassment, discussions on sexual knowledge, etc.;\n'
         'And some related social events.\n'
         'If the text mentions these topics, it is likely to trigger discussions of interest to both men and women.\n'
         '\n'
         'Here are some examples: \n'
         'Note Content:\n'
         'Title: When I deliberately sleep in separate beds from my boyfriend to see his reaction\n'
         'Category: Emotions-Daily Life\n'
         'Text: In the end it really scared me #Love[Topic]# #Boyfriend[Topic]# #Couple Daily[Topic]# \n'
         'asr:When I deliberately sleep in separate beds from my boyfriend...(rest of content)\n'
         'Answer:Yes\n'
         '\n'
         'Note Content:\n'
         "Title:《The Young Lady's Meng》\n"
         'Category: Humanities-Reading\n'
         'Text:#Baby Food[Topic]##Accessories Share[Topic]# \n'
         'asr:\n'
         'ocr:...(rest of content)\n'
         'Answer:No\n'
         '\n'),
        ('Please provide your judgment on the following content: \n'
         'Note Content:\n'
         '{content}\n'
         'Answer:')),
    'Note-CHLW': (
        ("Please select words worth highlighting from comments. These words should be meaningful and specific entities, issues, or descriptions that spark users' search interest. \n"
         'For life trivia without meaning or search value and content containing numbers, please select carefully. Here are extraction examples:\n'
         '\n'
         "1) Input: Give me a transparent Bluetooth speaker link; Return: ['transparent Bluetooth speaker']\n"
         "2) Input: Is there a tutorial for Huawei Smart Screen; Return: ['Huawei Smart Screen tutorial']\n"
         "3) Input: Is there any specific fitness and weight loss APK?; Return: ['fitness and weight loss APK']\n"
         "4) Input: Noodles have no calories but the sauce does; Return: ['noodles have no calories but sauce does']\n"
         "5) Input: How's Peking duck; Return: ['Peking duck']\n"
         '\n'),
        '{content}'),
    'Note-QueryGen': (
        ('Assume you are an internet user, your task is: based on the input image/text or video note content, generate 1 novel search term related to the core entity words in the note.\n'
         '\n'
         'Output format: \n'
         'The return result is a single line string, recording the generated search term.\n'
         'Output requirements:\n'
         '1. You need to fully understand the input note information, ensure that the given search terms are complete, novel and interesting, with the possibility of being targeted or in-depth exploration, and can bring incremental information to the current note;\n'
         '2. Ensure that the given search terms are fluent, without expression problems (including incomprehensible, repetitive, typos, word order, etc.);\n'
         '3. Good search terms can be questions (such as how to xx, what is xx, how to xx etc.), or appropriate compound words (xx tips, xx tutorials, xx outfits, xx recommendations, xx collection, xx selection), where xx comes from the note content.\n'
         '4. Output search term DIRECTLY, without any additional analysis content.\n'
         '\n'),
        ('Please generate search terms for the following note based on the above instructions: \n'
         'Input: \n'
         '{content}\n'
         'Search term:\n')),
}

# %%
#| export
_FIELDS = re.compile(r"\{(content|candidates|candidates_primary|candidates_secondary|candidates_tertiary|sentence1|sentence2|query|question)\}")

def build_prompt(name:str, # subset name
                 rec:dict, # one record of the subset
                 ) -> str:
    "The official prompt of record `rec`: the subset's instruction and its filled item template, as one user turn."
    if name not in OFFICIAL_PROMPTS: raise ConfigError(f"parameter 'name': {name!r} is not allowed; choose one of {list(OFFICIAL_PROMPTS)}")
    system, human = OFFICIAL_PROMPTS[name]
    return system + "\n" + _FIELDS.sub(lambda m: str(rec[m.group(1)]), human)

class PromptModel:
    "Predictor from any `generate(prompts) -> texts` function: one prompt per record, the raw texts as answers."
    def __init__(self, generate:Callable[[list[str]], list[str]], name:str="model"): self.generate, self.name = generate, name
    def fit(self, name:str, records:Sequence[dict]): return self
    def predict(self, name:str, records:Sequence[dict]) -> list[str]:
        out = list(self.generate([build_prompt(name, r) for r in records]))
        if len(out) != len(records): raise ValueError(f"{self.name}: generate returned {len(out)} texts for {len(records)} prompts")
        return [str(o) for o in out]

class HFGenerator:
    "`generate(prompts)` with a local Hugging Face causal LM: the prompt as one user turn of the chat template (when the tokenizer has one), greedy decoding."
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
            enc = tok(text, return_tensors="pt", add_special_tokens=not getattr(tok, "chat_template", None)).to(self.lm.device)
            with torch.no_grad():
                ids = model.generate(**enc, max_new_tokens=self.max_new_tokens, do_sample=False, pad_token_id=self.lm._pad_id())
            out.append(tok.decode(ids[0, enc["input_ids"].shape[1]:], skip_special_tokens=True))
        return out


# %% [markdown]
# A Taxonomy prompt ends with the item, after the instruction and its two worked examples; fields are filled
# once and literally (a brace in a note stays); an echo "model" that answers the first candidate is scored
# through the same path as a real one.

# %%
_rec = dict(content="Day 8 of brush calligraphy practice {not a field}", candidates="Art, Food, Travel", answer="Art")
_p = build_prompt("Note-Taxonomy-single", _rec)
assert _p.startswith(OFFICIAL_PROMPTS["Note-Taxonomy-single"][0] + "\n") and "Here are some examples" in _p
test_eq(_p.rsplit("Input: ", 1)[-1], "Day 8 of brush calligraphy practice {not a field}\nCandidate categories: Art, Food, Travel\nAnswer: ")
test_eq(build_prompt("Note-NER", dict(content="red silk scarf", question="Please find all 'color' entities")).split("\n")[-3:],
        ["Passage:red silk scarf", "Question:Please find all 'color' entities", ""])
test_eq(sorted(OFFICIAL_PROMPTS), sorted(SUBSETS))
_echo = PromptModel(lambda prompts: ["Answer: " + p.rsplit("Candidate categories: ", 1)[1].split(",")[0] for p in prompts], "first-candidate echo")
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
    "Unit-norm MiniLM sentence embeddings with a per-text cache; `embedder(texts) -> [N, 384]`; `precision='bf16'` runs the matrix products in bfloat16."
    def __init__(self, batch_size:int=64, max_length:int=64, precision:str="bf16", progress:bool=False):
        if precision not in ("fp32", "bf16"): raise ConfigError(f"parameter 'precision': {precision!r} is not allowed; choose one of ['fp32', 'bf16']")
        self.batch_size, self.max_length, self.precision, self.progress, self.cache, self._m = batch_size, max_length, precision, progress, {}, None
    def __call__(self, texts:Sequence[str]) -> np.ndarray:
        new = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if new:
            from trustlib.models import load_minilm, embed_texts
            if self._m is None: self._m = load_minilm()
            import contextlib, torch
            new = sorted(new, key=len)                 # batches of similar lengths: little padding
            with torch.autocast("cpu", dtype=torch.bfloat16) if self.precision == "bf16" else contextlib.nullcontext():
                E = embed_texts(new, *self._m, batch_size=self.batch_size, max_length=self.max_length, normalize=True, progress=self.progress)
            E = np.asarray(E, dtype=np.float32)
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
# Before any model, the scorers are run on constant answers over all items of each subset, and on the gold
# answers themselves (the oracle) over the items the baselines are evaluated on (`n_items` per subset). The empty list on CHLW is the case the brief asks about: each of the items whose
# gold list is empty becomes `[""]` on both sides — a hit — while an item with gold words adds one wrong
# prediction. With h empty-gold items out of N and G gold words elsewhere, the score is
# `2h/(N + h + G + 1e-4)` × 100 (success ratio 1).

# %%
#| export
def constant_scores(data:dict[str, list[dict]], # the subsets, all items (constant answers)
                    embed:Callable|None=None, # texts -> vectors, for QueryGen's cosine (None: QueryGen is left out)
                    oracle_data:dict[str, list[dict]]|None=None, # the items to score the oracle on (None: `data`)
                    ) -> "pd.DataFrame":
    "Scores of constant answers that need no model (on `data`) and of the oracle, the gold answers (on `oracle_data`), per subset."
    import pandas as pd
    rows, oracle_data = [], data if oracle_data is None else oracle_data
    def add(name, label, answers, D=data):
        if name not in D: return
        recs = D[name]; ans = answers(recs) if callable(answers) else [answers] * len(recs)
        if name == "Note-QueryGen" and embed is None: return
        rows.append(dict(subset=name, strategy=label, score=score_subset(name, ans, recs, embed)["score"]))
    add("Note-CHLW", "always []", "[]")
    add("Note-CHLW", "all options", lambda R: [format_answer("Note-CHLW", parse_fields("Note-CHLW", r)["cands"]) for r in R])
    add("Note-MRC-simple", "always []", "[]")
    add("Note-MRC-complex", "always <Result>[]</Result>", "<Result>[]</Result>")
    add("Note-QueryCorr-explain", "always Yes", "Yes")
    add("Note-Gender", "always No", "No")
    add("Note-QueryCorr-topic", "always -1", "-1")
    for name in SUBSETS: add(name, "oracle (gold answer)", lambda R, n=name: [oracle_answer(n, r) for r in R], oracle_data)
    return pd.DataFrame(rows)


# %%
if MISSING: print("Skipped:", MISSING)
else:
    _chlw = DATA["Note-CHLW"]; _G = [ast.literal_eval(r["answer"]) for r in _chlw]
    _h = sum(not g for g in _G); _words = sum(len(set(g)) for g in _G if g)
    _closed = round(2 * _h / (len(_chlw) + _h + _words + 1e-4), 4) * 100
    test_eq(score_subset("Note-CHLW", ["[]"] * len(_chlw), _chlw)["score"], _closed)
    print(f"CHLW: {_h} of {len(_chlw)} gold lists empty, {_words} gold words elsewhere -> always [] scores {_closed:.2f}")
    _cs = constant_scores({k: DATA[k] for k in ("Note-Gender", "Note-QueryCorr-explain")}, oracle_data={"Note-Gender": DATA["Note-Gender"][:20]})
    test_eq(list(_cs.strategy), ["always Yes", "always No", "oracle (gold answer)"]); test_eq(_cs.score.iloc[-1], 100.0)

# %% [markdown]
# ## The whole experiment: `run`
#
# For each seed, every subset (subsampled to `n_items` items — 50 at the smoke profile, 200 at cpu — with a
# seed fixed across repetitions) is split into a dev part (`dev_fraction`) and a test part. Each baseline is
# fitted on dev and scored on test; the overall score is the mean of the 12 subset scores (the paper's
# aggregation is not verified). The **format-failure study** makes a random share of one baseline's test
# answers unparseable ("I cannot answer that.") and rescores them; the baseline is the first of lm, minilm,
# first, majority, random and empty that runs.

# %%
#| export
SUCCESS_SCALED = ("Note-QueryCorr-topic", "Note-MRC-simple", "Note-MRC-complex", "Note-CHLW")
WORD_PICKERS = ("random", "first", "all options")
REFERENCE_ORDER = ("lm", "minilm", "first", "majority", "random", "empty")

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
    "The predictors of `cfg.strategies` for one seed (the lm baseline loads its model on first use)."
    names = cfg.strategies
    out = [TrivialBaseline(s, derive_seed(seed, 11)) for s in TrivialBaseline.STRATEGIES if s in names]
    if "minilm" in names: out.append(EmbeddingZeroShot(embedder))
    if "lm" in names: out.append(PromptModel(HFGenerator(check_model(cfg.model), cfg.max_new_tokens), name="lm"))
    return out

def corrupt(answers:Sequence[str], rate:float, seed:int) -> list[str]:
    "`answers` with a random share `rate` replaced by an unparseable text."
    a = list(answers); k = int(round(rate * len(a)))
    for j in np.random.default_rng(seed).choice(len(a), k, replace=False): a[j] = "I cannot answer that."
    return a


# %%
test_eq(corrupt(["[]"] * 4, 0.5, 0).count("I cannot answer that."), 2)
test_eq(score_chlw(corrupt(["[]"] * 4, 0.5, 0), ["[]"] * 4)["success_ratio"], 50.0)
test_eq([m.name for m in _models(Config.from_params("smoke", baselines=("empty", "random")), 0, None)], ["random", "empty"])


# %%
#| export
def evaluate_baselines(cfg:Config, data:dict, embedder, progress:bool=True):
    "Scores of every baseline on the test split of every subset and seed, and the format-failure study: two DataFrames."
    import pandas as pd
    from tqdm.auto import tqdm
    rows, crows = [], []
    ref = next((b for b in REFERENCE_ORDER if b in cfg.strategies), None)
    for i in tqdm(range(cfg.n_seeds), desc="seeds", disable=not progress):
        s = derive_seed(cfg.seed, i)
        models = _models(cfg, s, embedder)
        for j, (name, recs) in enumerate(data.items()):
            dev, test = _split(len(recs), cfg.dev_fraction, derive_seed(s, j))
            D, T = [recs[k] for k in dev], [recs[k] for k in test]
            answers = {}
            for mdl in models:
                mdl.fit(name, D); answers[mdl.name] = mdl.predict(name, T)
            if name == "Note-CHLW": answers["all options"] = [format_answer(name, parse_fields(name, r)["cands"]) for r in T]
            for b, a in answers.items():
                sc = score_subset(name, a, T, embedder)
                rows.append(dict(seed=i, subset=name, baseline=b, score=sc["score"], success_ratio=sc.get("success_ratio", np.nan)))
            for rate in (cfg.corruption_rates if ref else ()):
                sc = score_subset(name, corrupt(answers[ref], rate, derive_seed(s, j, 99)), T, embedder)["score"]
                crows.append(dict(seed=i, subset=name, rate=rate, score=sc, baseline=ref))
    cols = ["seed", "subset", "rate", "score", "baseline"]
    return pd.DataFrame(rows, columns=["seed", "subset", "baseline", "score", "success_ratio"]), pd.DataFrame(crows, columns=cols)

def _per_seed(frame) -> list[float]|None:
    "A per-seed Series as a list of floats in seed order (None when empty)."
    v = [float(x) for x in frame.sort_index()]
    return v or None

def measurements(full:dict, const, scores, corr) -> dict:
    "What the claims read, from all items (`full`), the constant-answer table and the per-seed baseline and format-failure tables."
    cs = {(r.subset, r.strategy): r.score for r in const.itertuples()}
    main = scores[scores.baseline != "all options"]
    overall = main.groupby(["seed", "baseline"]).score.mean().unstack() if len(main) else None
    trivial = [b for b in TrivialBaseline.STRATEGIES if overall is not None and b in overall]
    chlw = scores[scores.subset == "Note-CHLW"].pivot(index="seed", columns="baseline", values="score")
    pickers = [b for b in WORD_PICKERS if b in chlw]
    m = {"data/n_items": sum(len(v) for v in full.values()), "data/subsets_with_official_count": sum(len(full.get(n, ())) == s.n for n, s in SUBSETS.items()),
         "chlw/always_empty": cs.get(("Note-CHLW", "always []")), "chlw/all_options": cs.get(("Note-CHLW", "all options")),
         "chlw/empty_minus_best_picker": _per_seed(chlw["empty"] - chlw[pickers].max(axis=1)) if "empty" in chlw and pickers else None,
         "constant/gender_always_no": cs.get(("Note-Gender", "always No")), "constant/explain_always_yes": cs.get(("Note-QueryCorr-explain", "always Yes")),
         "constant/topic_always_minus1": cs.get(("Note-QueryCorr-topic", "always -1")), "format/score_ratio_at_max_rate": None,
         "overall/minilm_minus_best_trivial": _per_seed(overall["minilm"] - overall[trivial].max(axis=1)) if overall is not None and "minilm" in overall and trivial else None}
    if len(corr):
        base = corr[corr.rate == 0].set_index(["seed", "subset"]).score
        top = corr[corr.rate == corr.rate.max()].set_index(["seed", "subset"]).score
        keep = [k for k in base.index if k[1] in SUCCESS_SCALED and base[k] > 0]
        if keep: m["format/score_ratio_at_max_rate"] = _per_seed((top / base).loc[keep].groupby(level=0).mean())
    if overall is not None: m.update({f"overall/{b}": float(overall[b].mean()) for b in overall})
    m.update({f"oracle/{k[0].removeprefix('Note-').lower().replace('-', '_')}": v for k, v in cs.items() if k[1] == "oracle (gold answer)"})
    return m


# %% [markdown]
# ## Claims and their rules (fixed before the run)
#
# The paper's headline — LLMs of different sizes follow a scaling law on SNS-Bench — needs the 25+ LLMs and
# is not testable offline. What the page tests is the benchmark's own machinery: the data, and what the
# official scorers reward. Every data claim needs the licensed files (`requires=`); without them it is
# inconclusive with that reason. The values 67.64 (CHLW, always `[]`), 50.8, 54.2 and 7.6 (constant answers)
# follow from the data and the official scoring rules (the project's dossier derives them); they are
# deterministic numbers, so a tolerance of 0.05 or 0.1 points stands for rounding, and 1 point for partially.

# %%
#| export
_DATA = AtLeast("data_available", 1, what="SNS-Bench data present (the licensed files, read at run time)")
_TODAY = "2026-12-01"

def _window(key:str, target:float, tol:float, partial_tol:float, what:str) -> AllOf:
    "`key` strictly within `tol` of `target` (partially: within `partial_tol`), as two one-sided comparisons."
    return AllOf(Above(key, round(target - tol, 4), round(target - partial_tol, 4), what=what),
                 Below(key, round(target + tol, 4), round(target + partial_tol, 4), what=what))

def _logged(old:str, why:str, claim:Claim) -> Claim:
    "`claim` with a change-log entry from the page's legacy rule `old` to its current rule."
    import dataclasses
    return dataclasses.replace(claim, log=(Change(_TODAY, old, claim.rule_text(), why),))

_AS_DATA = "written as data; the licensed data's presence is now a declared condition (without it: inconclusive, with the reason)"

CLAIMS = [
    Claim("scaling_law", "LLM performance varies with model size and follows a scaling law (25+ LLMs)", "25+ LLMs, scaling with size",
          status="not_testable_offline", headline=True, ours="no LLM offline",
          reason="needs the 25+ evaluated LLMs; the paper's per-model table is not published with its code or data, so its size–score relation "
                 "cannot be refitted here (fit_size_score does it for any table of sizes and scores); the full profile scores local causal LMs "
                 "through the official prompts and scorers"),
    _logged("reproduced if every subset has its official item count", _AS_DATA,
            Claim("benchmark_size", "8 tasks in 12 subsets, 6,658 items", "8 tasks, 12 subsets, 6,658 items",
                  AtLeast("data/subsets_with_official_count", 12, what="subsets with their official item count"), requires=_DATA,
                  ours="{data/n_items:.0f} items; {data/subsets_with_official_count:.0f} of 12 subsets with the official count")),
    _logged("reproduced if |always [] − 67.64| < 0.05; partially if |always [] − 67.64| < 1", _AS_DATA,
            Claim("chlw_empty_score", "CHLW: always [] scores about 67.6 success-F1 under the official rule (empty lists count as [''])",
                  "67.64 (derived from the scorer)", _window("chlw/always_empty", 67.64, 0.05, 1.0, "always [] on CHLW, success-F1"), requires=_DATA,
                  ours="{chlw/always_empty:.2f} (all options: {chlw/all_options:.2f})")),
    _logged("reproduced if always [] − best word picker (points) > 10; partially if always [] − best word picker (points) > 0; interval must clear the threshold",
            _AS_DATA, Claim("chlw_empty_beats_pickers", "CHLW: always [] beats every word-picking strategy (random, first option, all options)",
                            "derived from the scorer", Above("chlw/empty_minus_best_picker", 10, 0, what="always [] − best word picker on CHLW, points"),
                            requires=_DATA)),
    _logged("reproduced if all three within 0.1 of the derived values; partially within 1", _AS_DATA,
            Claim("constant_answers", "Constant answers: Gender 'No', QueryCorr-explain 'Yes', QueryCorr-topic '-1'", "50.8 / 54.2 / 7.6 (derived)",
                  AllOf(_window("constant/gender_always_no", 50.8, 0.1, 1.0, "Gender, always No"),
                        _window("constant/explain_always_yes", 54.2, 0.1, 1.0, "QueryCorr-explain, always Yes"),
                        _window("constant/topic_always_minus1", 7.6, 0.1, 1.0, "QueryCorr-topic, always -1")), requires=_DATA,
                  ours="{constant/gender_always_no:.2f} / {constant/explain_always_yes:.2f} / {constant/topic_always_minus1:.2f}")),
    _logged("reproduced if score(50 % unparseable)/score(0 %) < 0.75; partially if score(50 % unparseable)/score(0 %) < 0.95; interval must clear the threshold",
            _AS_DATA, Claim("success_penalty", "success- metrics penalise output-format failures", "official scorers",
                            Below("format/score_ratio_at_max_rate", 0.75, 0.95, what="score with 50 % of answers unparseable ÷ score with none, success-scaled subsets"),
                            requires=_DATA)),
    _logged("reproduced if MiniLM − best trivial, overall (points) > 2; partially if MiniLM − best trivial, overall (points) > 0; interval must clear the threshold",
            _AS_DATA, Claim("minilm_beats_trivial", "MiniLM zero-shot beats the best trivial strategy overall", "our check of the benchmark",
                            Above("overall/minilm_minus_best_trivial", 2, 0, what="MiniLM − best trivial strategy, overall, points"), requires=_DATA,
                            reason="inconclusive where MiniLM does not run (the smoke profile)")),
    Claim("oracle_100", "A perfect answer scores 100 on every subset", "implicit in the scorers", status="illustrated",
          reason="the gold answers, written as the prompts ask, are scored by the same post-processing and scorers (see the constants table)"),
]

# %% [markdown]
# ### How each claim is judged

# %%
from trustlib.results import claims_table, grade

# %%
claims_table(CLAIMS)

# %% [markdown]
# The windows on crafted numbers (the generic test cannot place one number on both sides of a window): the
# derived values pass, a value 0.5 off is partially, 2 off is not reproduced; without the data every graded
# claim is inconclusive, with the reason.

# %%
_ok = {"data_available": 1, "data/subsets_with_official_count": 12, "chlw/always_empty": 67.64, "chlw/empty_minus_best_picker": [30.0, 31.0, 29.5],
       "constant/gender_always_no": 50.78, "constant/explain_always_yes": 54.17, "constant/topic_always_minus1": 7.62,
       "format/score_ratio_at_max_rate": [0.5, 0.52, 0.49], "overall/minilm_minus_best_trivial": [5.0, 6.0, 5.5]}
_G = lambda **k: {v.id: v.verdict for v in grade(CLAIMS, {**_ok, **k})}
test_eq(_G(), dict(scaling_law="not_testable_offline", benchmark_size="reproduced", chlw_empty_score="reproduced", chlw_empty_beats_pickers="reproduced",
                   constant_answers="reproduced", success_penalty="reproduced", minilm_beats_trivial="reproduced", oracle_100="illustrated"))
test_eq([_G(**{"chlw/always_empty": v})["chlw_empty_score"] for v in (67.2, 65.6, 69.7)], ["partially", "not_reproduced", "not_reproduced"])
test_eq(_G(**{"constant/explain_always_yes": 55.0})["constant_answers"], "partially")
test_eq(_G(**{"data/subsets_with_official_count": 11})["benchmark_size"], "not_reproduced")
test_eq(_G(**{"overall/minilm_minus_best_trivial": None})["minilm_beats_trivial"], "inconclusive")
test_eq(set(_G(data_available=0).values()), {"inconclusive", "not_testable_offline", "illustrated"})


# %%
#| export
def run(cfg:Config, progress:bool=True):
    "The SNS-Bench harness experiment: constant and oracle scores, baselines over seeds, the format-failure study; measurements only."
    import pandas as pd
    from trustlib.results import Result
    metrics = {f"selfcheck/{k}": float(v) for k, v in scorer_selfcheck().items()}
    missing = sns_bench_missing("the SNS-Bench experiment")
    if missing:
        print("Skipped:", missing)
        return Result(paper="sns_bench", config=cfg.to_dict(), metrics=dict(metrics, data_available=0))
    with torch_threads(cfg.n_threads):
        full = load_all()
        embedder = TextEmbedder()                      # MiniLM: the minilm baseline and QueryGen's cosine term
        data = _subsample(full, cfg.n_items, cfg.seed)
        const = constant_scores(full, embedder, oracle_data=data)
        scores, corr = evaluate_baselines(cfg, data, embedder, progress)
    metrics.update(data_available=1, **measurements(full, const, scores, corr))
    metrics = {k: v for k, v in metrics.items() if not (isinstance(v, float) and not math.isfinite(v))}   # NaN never equals itself
    main = scores[scores.baseline != "all options"]
    summary = main.groupby(["subset", "baseline"]).score.agg(["mean", "std"]).unstack("baseline").reindex(list(SUBSETS))
    overall = main.groupby(["seed", "baseline"]).score.mean().unstack()
    tables = dict(scores=scores, summary=summary.round(2), overall=overall.round(2), constants=const.round(2), corruption=corr)
    return Result(paper="sns_bench", config=cfg.to_dict(), metrics=metrics, tables=tables, figures=_figures(scores, corr))

def _figures(scores, corr) -> dict:
    import matplotlib.pyplot as plt, seaborn as sns
    short = lambda s: s.removeprefix("Note-")
    d = scores.assign(subset=scores.subset.map(short))
    fig1, ax = plt.subplots(figsize=(12, 4.5))
    sns.barplot(data=d, x="subset", y="score", hue="baseline", errorbar=("ci", 95), seed=0, ax=ax)
    ax.set(xlabel="subset", ylabel="score (0–100, the subset's reported metric)", title="Baselines per subset (test splits; bars: mean over seeds, 95 % CI)")
    ax.tick_params(axis="x", rotation=35); ax.legend(title="baseline", ncol=3, fontsize=8); fig1.tight_layout()
    figs = dict(baselines=fig1)
    if len(corr):
        fig2, ax = plt.subplots(figsize=(7, 4.5))
        c = corr.assign(subset=corr.subset.map(short), rate=corr.rate * 100)
        sns.lineplot(data=c, x="rate", y="score", hue="subset", marker="o", errorbar=None, ax=ax)
        ax.set(xlabel="answers made unparseable (%)", ylabel="score (0–100)", title=f"Format-failure sensitivity ({corr.baseline.iloc[0]} answers)")
        ax.legend(fontsize=7, ncol=2); fig2.tight_layout(); figs["format_failure"] = fig2
    plt.close("all")
    return figs


# %% [markdown]
# ## Re-analysing a size–score table
#
# The paper's scaling statement is about its table of 25+ LLMs. `fit_size_score` refits such a relation from
# any table of model sizes (billions of parameters) and overall scores: the least-squares slope of the score
# on log10(size), per tenfold increase in size, with its Student-t interval, and Spearman's rank correlation.
# A re-analysis of the paper's own table would use it; that table is not published in a form we can read
# offline, so the example below uses made-up numbers.

# %%
#| export
def fit_size_score(table, size:str="params_b", score:str="score", level:float=0.95) -> dict:
    "Slope of `score` on log10(`size`) (points per tenfold size) with its t-interval, and Spearman's ρ, from a table with one row per model."
    from scipy import stats
    from trustlib.results import Estimate
    x, y = np.log10(np.asarray(table[size], float)), np.asarray(table[score], float)
    if len(x) < 3 or np.any(~np.isfinite(x)) or np.ptp(x) == 0: raise ValueError("fit_size_score needs at least 3 models of different, positive sizes")
    fit = stats.linregress(x, y); half = float(stats.t.ppf(0.5 + level / 2, len(x) - 2)) * fit.stderr
    rho = stats.spearmanr(x, y)
    return dict(n_models=len(x), slope_per_decade=Estimate(fit.slope, fit.slope - half, fit.slope + half, len(x), level),
                spearman_rho=float(rho.statistic), spearman_p=float(rho.pvalue))


# %%
_toy = pd.DataFrame(dict(model=["a", "b", "c", "d", "e"], params_b=[0.5, 1.5, 7, 32, 72], score=[30.0, 36.0, 44.0, 49.0, 55.0]))   # illustrative numbers
_fit = fit_size_score(_toy)
test_close(_fit["slope_per_decade"].value, np.polyfit(np.log10(_toy.params_b), _toy.score, 1)[0], eps=1e-9)
test_eq(_fit["n_models"], 5); test_close(_fit["spearman_rho"], 1.0, eps=1e-12); assert _fit["slope_per_decade"].lo > 0
test_fail(lambda: fit_size_score(_toy.head(2)), contains="at least 3 models")

# %% [markdown]
# ## The experiment

# %%
from trustlib.results import run_experiment

# %%
result = run_experiment(run, cfg, CLAIMS)

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
# ### Constant answers (all items) and oracles (the evaluated items)
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
# not testable offline; the harness is ready for them (`full` profile with `-p model …`: any local causal LM,
# the official prompts and scorers), and `fit_size_score` refits a size–score relation from a table of
# models. What the table can test is the benchmark's machinery: the data and its counts, the scorers, and
# what they reward. Read the CHLW rows with the constants table: the official rule that scores an empty list
# as `[""]` lets a model that never answers beat models that try, so a CHLW number says little unless it is
# compared with 67.6. The MiniLM row says whether a weak real model is separated from strategies that ignore
# the note; it is inconclusive at the smoke profile, which does not run MiniLM. Without the data every
# data-dependent claim is inconclusive, and its reason says the data are missing.
