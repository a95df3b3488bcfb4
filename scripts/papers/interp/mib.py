# %% [markdown]
# # MIB: A Mechanistic Interpretability Benchmark
#
# > Circuit localisation (edge attribution, faithfulness integrated over circuit sizes, recovery of a planted circuit) and causal-variable localisation (interchange interventions, DAS vs. masks over neurons, PCA and SAE features) on small models trained from scratch.

# %% [markdown]
# Mueller, Geiger, Wiegreffe, …, Belinkov (ICML 2025) propose MIB, a benchmark with two tracks. The
# **circuit-localisation track** asks for the subgraph of a model's computation graph (edges between
# embeddings, attention heads, MLPs and logits) that implements a task; a method produces a score per
# edge, circuits of 0.1 % to 100 % of the edges are built from the scores, and each circuit's
# faithfulness $f(C) = (m(C) - m(\emptyset)) / (m(N) - m(\emptyset))$ — the task metric with every edge
# outside the circuit patched from a counterfactual input — is integrated over the circuit sizes into the
# **CPR** (area under $f$, higher is better) and the **CMD** (area under $|1 - f|$, lower is better). On a
# model with a circuit planted by training (InterpBench), the methods are also scored by the **AUROC** of
# their circuits against the planted edges. The **causal-variable track** asks where a high-level causal
# variable lives: a featurizer maps a hidden vector into features, an interchange intervention swaps the
# selected features between a base and a source input, and the **interchange-intervention accuracy (IIA)**
# counts how often the model then gives the causal model's counterfactual answer. The paper finds that
# attribution and mask-optimisation methods do best on circuits — edge attribution patching with integrated
# gradients (EAP-IG) in particular —, that edge-level circuits beat node-level ones, that counterfactual
# ablations beat mean ablations and that information-flow routes trail the causal methods; on causal
# variables, supervised DAS does best and SAE features are no better than raw neurons.
#
# Paper: [arXiv 2504.13151](https://arxiv.org/abs/2504.13151) · official code:
# [aaronmueller/MIB](https://github.com/aaronmueller/MIB) (hub and causal-variable track),
# [hannamw/MIB-circuit-track](https://github.com/hannamw/MIB-circuit-track) on
# [hannamw/EAP-IG](https://github.com/hannamw/EAP-IG), and
# [atticusg/CausalAbstraction](https://github.com/atticusg/CausalAbstraction). Everything below is our own
# implementation of the formulas; no code is taken from these repositories.
#
# ::: {.callout-note}
# ## What we reproduce / what we cannot
# - **Circuit track, in miniature.** An IOI task of our own (6 templates such as "When A and B went to the
#   store , B gave a book to" → A; 30 single-token names; a word-level vocabulary of 62 tokens) and a
#   3-layer, 4-head transformer (`trustlib.models.TinyTransformer`, run through its named hook points) trained
#   from scratch for each seed. Its computation graph has the paper's structure — input, 12 heads with separate
#   q/k/v input slots, 3 MLPs, logits — and 262 edges, few enough for exact activation patching of every
#   edge. All the paper's method families are run: random, EAP, EAP-IG-inputs (5 steps), EAP-IG-activations
#   (as in the official code: each attention layer, MLP and the input interpolated in turn, every edge
#   accumulated on every pass), clean-corrupted, node-level NAP, exact patching, information-flow routes
#   (greedy) and a learned continuous edge mask (a UGS-like stand-in), plus EAP-IG with mean instead of
#   counterfactual ablation. CPR and CMD over the paper's 10 circuit sizes, and the rank correlation of every
#   method's edge scores with exact patching, over `n_seeds` seeds with 95 % intervals.
# - **A planted circuit, trained in (our stand-in for InterpBench).** After the IOI model is trained, half of
#   its heads and MLPs are declared off-circuit and the model is fine-tuned with a strict interchange loss in
#   the spirit of InterpBench's SIIT: the task loss with every off-circuit component's output resampled from
#   another input, with every component's output-weight norm held fixed. The off-circuit components stay
#   live — they keep their trained weights, read and write the residual stream and change with the input —
#   but the model no longer depends on them, so the edges between circuit components are the ground truth of
#   the AUROC. That this holds is measured on every seed (and tested on the published configuration), and two
#   scorers that only look at the weights are run beside the methods. Unlike InterpBench, the circuit is not
#   trained to implement a given high-level algorithm (no IIT on the circuit's own nodes), so some edges
#   between circuit components carry nothing.
# - **Causal-variable track, in miniature:** hierarchical equality (y = [(a = b) = (c = d)], variables
#   V1 = [a = b], V2 = [c = d]) on an MLP 16 → 64 → 64 → 2; IIA at both hidden layers for the full
#   vector, DBM over neurons, PCA + DBM, SAE + DBM (a TopK SAE of 256 latents with its error term kept)
#   and DAS with k ∈ {1, 2, 4}. The paper's IOI linear-parameter variant (scored by MSE) is not built.
# - **The `full` profile: GPT-2 small on MIB's IOI data.** With GPT-2 in the local Hugging Face cache (and,
#   ideally, a GPU), `full` runs the circuit track on the paper's smallest model: GPT-2's weights in the same
#   hooked transformer and graph model (32,491 edges), MIB's `mib-bench/ioi` prompts (template prompts when the
#   dataset is absent), every method above (exact patching on a sample of edges) and the same claims, graded on
#   GPT-2's CPR/CMD (`FULL_CLAIMS`). Its code path is rehearsed offline on a random GPT-2 stand-in.
# - **Not testable offline:** Qwen-2.5, Gemma-2, Llama-3.1, InterpBench's model, the other MIB tasks, and
#   GPT-2 itself without its weights in the cache. Our `cpu` CPR/CMD magnitudes come from a 3-layer toy model
#   and are not comparable with the paper's tables; the verdicts compare the *ordering* of methods.
# - **Departures:** circuits are scored on 60 attribution and 60 evaluation prompts (MIB uses 100 training
#   examples); the learned mask is a sigmoid-gated mask with logistic noise and an L1 penalty, not the
#   authors' UGS code; the size axis of CPR/CMD is the nominal fraction of edges (before pruning); the model
#   has 3 layers and a residual width of 32 so that 8 seeds fit a few CPU minutes.
# :::

# %%
#| default_exp interp.circuits

# %%
#| export
from __future__ import annotations
import math
from dataclasses import dataclass
from typing import Optional
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from trustlib.config import BaseConfig, param, ConfigError, ResourceUnavailable, derive_seed, torch_threads, check_cost, numpy_global_seed
from trustlib.models import TinyTransformer

# %%
#| hide
from fastcore.test import test_eq, test_fail, test_close
import warnings
import pandas as pd

# %%
#| hide
torch.set_num_threads(1)   # the examples below run on one thread, as `run` does (cfg.n_threads)
warnings.filterwarnings("ignore", message="IProgress not found")

# %% [markdown]
# ## Parameters
#
# Defaults are the `smoke` profile (a 2-layer, 2-head model trained for a few steps, so that the notebook
# runs in seconds; its verdicts are inconclusive by design); `trustlib run mib --profile cpu` (or papermill
# with `-p profile cpu`) runs the published configuration. `None` means "the profile's value".

# %%
from typing import Optional

# %% tags=["parameters"]
profile: str = "smoke"  # smoke (CI, < 60 s) | cpu (published results, minutes) | full (paper scale)
seed: Optional[int] = None  # base random seed; every random choice derives from it
n_seeds: Optional[int] = None  # independent repetitions (model training, prompts, method randomness)
n_layers: Optional[int] = None  # transformer layers L of the IOI model
n_heads: Optional[int] = None  # attention heads H per layer
d_model: Optional[int] = None  # residual width D (divisible by n_heads)
d_mlp: Optional[int] = None  # MLP width
train_steps: Optional[int] = None  # maximum training steps of the IOI model (fresh prompts every step; stops early at train_target accuracy)
train_target: Optional[float] = None  # held-out accuracy at which training stops early
batch_size: Optional[int] = None  # IOI training batch size
lr: Optional[float] = None  # AdamW learning rate of the IOI model
corruption: Optional[str] = None  # counterfactual prompts: abc (the repeated name replaced by a third name) or s2_io_flip
n_attr: Optional[int] = None  # prompts used by the attribution methods
n_eval: Optional[int] = None  # prompts on which circuits are evaluated
ig_steps: Optional[int] = None  # integration steps m of EAP-IG (MIB runs use 5)
mask_steps: Optional[int] = None  # optimisation steps of the learned edge mask
mask_lamb: Optional[float] = None  # L1 weight of the learned edge mask (on the mean gate; the metric is normalised by the full model's)
methods: Optional[list[str]] = None  # circuit-discovery methods run
mean_ablation: Optional[bool] = None  # also run EAP-IG with mean ablation (discovery and evaluation)
planted: Optional[bool] = None  # run the planted-circuit AUROC (train a circuit in, score the methods against it)
planted_steps: Optional[int] = None  # fine-tuning steps of the planted-circuit model with the strict interchange loss
planted_batch_size: Optional[int] = None  # batch size of the planted-circuit fine-tuning
cv_n_train: Optional[int] = None  # hierarchical-equality training examples of the MLP
cv_epochs: Optional[int] = None  # MLP training epochs
cv_pairs: Optional[int] = None  # counterfactual pairs for training each intervention (as many again for its evaluation)
cv_int_epochs: Optional[int] = None  # training epochs of each DAS / DBM intervention
das_ks: Optional[list[int]] = None  # DAS subspace dimensions k
sae_latents: Optional[int] = None  # latents of the SAE featurizer
sae_k: Optional[int] = None  # active latents k of the TopK SAE
sae_steps: Optional[int] = None  # SAE training steps
dbm_lamb: Optional[float] = None  # L1 weight of the DBM masks
model_names: Optional[list[str]] = None  # hub models of the paper run by the full profile (GPT-2 small through transformers; only gpt2 is implemented)
exact_edges: Optional[int] = None  # exact patching of a random sample of this many edges (0: every edge); GPT-2 small has 32,491
device: Optional[str] = None  # where a hub model runs: cpu, cuda or auto (cuda when available)
n_threads: Optional[int] = None  # torch CPU threads

# %% [markdown] tags=["injected-parameters"]
# **This page shows a run with** `profile = "cpu"` (run `cpu-bf21a9e8fb`, commit `569516d`, 177 s, 2026-12-05). Running the notebook yourself uses the parameters cell above as written (the fast `smoke` profile unless you change it); `trustlib run mib --profile cpu` repeats the run shown here.

# %% [markdown]
# `Config` declares every parameter with its bounds. Besides the per-field limits, `validate` estimates the
# CPU time and the peak memory of the *whole* configuration (seeds × training steps × prompts × methods ×
# model size) and refuses one above the soft bounds unless it is asked for with `allow_large=True` (CLI:
# `--allow-large`).

# %%
#| export
METHODS = ("random", "eap", "eap_ig_inputs", "eap_ig_activations", "clean_corrupted", "nap", "exact", "ifr", "mask")
PROMPT_LEN = 14   # tokens in every IOI prompt

@dataclass
class Config(BaseConfig):
    "Configuration of the MIB reproduction (IOI circuits on a tiny transformer; causal variables on an MLP)."
    n_seeds: int = param(1, "independent repetitions (model training, prompts, method randomness)", ge=1, max=20, le=1000)
    n_layers: int = param(2, "transformer layers L of the IOI model", ge=1, max=12, le=48)
    n_heads: int = param(2, "attention heads H per layer", ge=1, max=12, le=64)
    d_model: int = param(32, "residual width D (divisible by n_heads)", ge=4, max=512, le=4096)
    d_mlp: int = param(128, "MLP width", ge=4, max=2048, le=16384)
    train_steps: int = param(30, "maximum training steps of the IOI model (fresh prompts every step; stops early at train_target accuracy)", ge=1, max=20000, le=10**6)
    train_target: float = param(0.99, "held-out accuracy at which training stops early", gt=0, le=1)
    batch_size: int = param(64, "IOI training batch size", ge=1, max=4096, le=65536)
    lr: float = param(3e-3, "AdamW learning rate of the IOI model", gt=0, le=1)
    corruption: str = param("abc", "counterfactual prompts: abc (the repeated name replaced by a third name) or s2_io_flip", choices=("abc", "s2_io_flip"))
    n_attr: int = param(40, "prompts used by the attribution methods", ge=2, max=5000, le=10**6)
    n_eval: int = param(40, "prompts on which circuits are evaluated", ge=2, max=5000, le=10**6)
    ig_steps: int = param(5, "integration steps m of EAP-IG (MIB runs use 5)", ge=1, max=200, le=10**4)
    mask_steps: int = param(20, "optimisation steps of the learned edge mask", ge=1, max=5000, le=10**6)
    mask_lamb: float = param(1.0, "L1 weight of the learned edge mask (on the mean gate; the metric is normalised by the full model's)", ge=0, le=100)
    methods: tuple[str, ...] = param(METHODS, "circuit-discovery methods run", choices=METHODS)
    mean_ablation: bool = param(True, "also run EAP-IG with mean ablation (discovery and evaluation)")
    planted: bool = param(True, "run the planted-circuit AUROC (train a circuit in, score the methods against it)")
    planted_steps: int = param(20, "fine-tuning steps of the planted-circuit model with the strict interchange loss", ge=1, max=20000, le=10**6)
    planted_batch_size: int = param(32, "batch size of the planted-circuit fine-tuning", ge=2, max=4096, le=65536)
    cv_n_train: int = param(2000, "hierarchical-equality training examples of the MLP", ge=10, max=1_000_000, le=10**8)
    cv_epochs: int = param(5, "MLP training epochs", ge=1, max=1000, le=10**5)
    cv_pairs: int = param(400, "counterfactual pairs for training each intervention (as many again for its evaluation)", ge=10, max=1_000_000, le=10**8)
    cv_int_epochs: int = param(2, "training epochs of each DAS / DBM intervention", ge=1, max=1000, le=10**5)
    das_ks: tuple[int, ...] = param((1,), "DAS subspace dimensions k", ge=1, le=64)
    sae_latents: int = param(256, "latents of the SAE featurizer", ge=2, max=65536, le=10**6)
    sae_k: int = param(8, "active latents k of the TopK SAE", ge=1, max=1024, le=10**6)
    sae_steps: int = param(100, "SAE training steps", ge=1, max=100000, le=10**7)
    dbm_lamb: float = param(1e-3, "L1 weight of the DBM masks", ge=0, le=10)
    model_names: tuple[str, ...] = param((), "hub models of the paper run by the full profile (GPT-2 small through transformers; only gpt2 is implemented)", choices=("gpt2",))
    exact_edges: int = param(0, "exact patching of a random sample of this many edges (0: every edge); GPT-2 small has 32,491", ge=0, max=100_000, le=10**7)
    device: str = param("cpu", "where a hub model runs: cpu, cuda or auto (cuda when available)", choices=("cpu", "cuda", "auto"))
    n_threads: Optional[int] = param(1, "torch CPU threads", ge=1, le=1024)
    PROFILE_DEFAULTS = {
        "cpu": dict(n_seeds=8, n_layers=3, n_heads=4, d_model=32, d_mlp=128, train_steps=1500, n_attr=60, n_eval=60,
                    mask_steps=40, planted_steps=400, cv_n_train=6000, cv_epochs=10, cv_pairs=600, cv_int_epochs=5,
                    das_ks=(1, 2, 4), sae_steps=200),
        "full": dict(n_seeds=5, n_attr=100, n_eval=100, corruption="s2_io_flip", mask_steps=100, planted=False, exact_edges=3000, device="auto",
                     cv_n_train=6000, cv_epochs=10, cv_pairs=600, cv_int_epochs=5, das_ks=(1, 2, 4), sae_steps=200, model_names=("gpt2",)),
    }
    def validate(self):
        if self.d_model % self.n_heads: raise ConfigError(f"parameter 'd_model': {self.d_model} is not divisible by n_heads {self.n_heads}")
        if not self.methods: raise ConfigError("parameter 'methods': give at least one method")
        if self.sae_k > self.sae_latents: raise ConfigError(f"parameter 'sae_k': {self.sae_k} exceeds sae_latents {self.sae_latents}")
        if not self.das_ks: raise ConfigError("parameter 'das_ks': give at least one subspace dimension")
        if len(self.model_names) > 1: raise ConfigError(f"parameter 'model_names': give one hub model per run, got {list(self.model_names)}")
        sec, gib = estimate_cost(self)
        check_cost(self, {"CPU time": (sec, 7200.0, "s"), "peak memory": (gib, 8.0, "GiB")},
                   ("n_seeds", "n_layers", "n_heads", "d_model", "d_mlp", "train_steps", "batch_size", "n_attr", "n_eval", "mask_steps",
                    "planted_steps", "planted_batch_size", "cv_n_train", "cv_epochs", "cv_pairs", "cv_int_epochs", "sae_latents", "sae_steps"))

def estimate_cost(cfg) -> tuple[float, float]:
    "A rough estimate of the whole run's CPU seconds (one thread) and peak memory in GiB, from every size in `cfg`."
    L, H, D, T = cfg.n_layers, cfg.n_heads, cfg.d_model, PROMPT_LEN
    fwd = 2 * T * L * (4 * D * D + 2 * D * cfg.d_mlp) + 2 * T * 62 * D       # FLOPs of one prompt through the model
    graph = 3 * fwd + 2 * T * L * (3 * H + 1) * (1 + L * (H + 1)) * D        # ... through the edge-decomposed graph
    E = n_edges(L, H); m = set(cfg.methods)
    seqs = cfg.train_steps * cfg.batch_size * 3 * fwd + (cfg.planted_steps * cfg.planted_batch_size * 5 * fwd if cfg.planted else 0)
    attr = cfg.n_attr * graph * (4 + 3 * cfg.ig_steps + 3 * cfg.ig_steps * (1 + 2 * L) * ("eap_ig_activations" in m)
                                 + E / 2 * ("exact" in m) + 3 * cfg.mask_steps * ("mask" in m))
    evals = cfg.n_eval * graph * 20 * (len(m) + 2)
    cv = 6e3 * (cfg.cv_n_train * cfg.cv_epochs + 14 * cfg.cv_pairs * cfg.cv_int_epochs * (4 + len(cfg.das_ks))) + 2e3 * cfg.sae_steps * cfg.sae_latents
    sec = cfg.n_seeds * (seqs + attr * (1 + cfg.planted / 2) + evals + cv) / 1.5e9
    nf = 1 + L * (H + 1)
    gib = 4 * max(cfg.n_attr, cfg.n_eval) * T * D * nf * max(3 * H + 1, 5) * 8 / 2 ** 30 + 4 * cfg.cv_n_train * 80 / 2 ** 30
    return float(sec), float(gib)

def n_edges(n_layers:int, n_heads:int) -> int:
    "The closed-form edge count E(L, H)."
    L, H = n_layers, n_heads
    return sum(3 * H * (1 + l * (H + 1)) + (1 + l * (H + 1) + H) for l in range(L)) + 1 + L * (H + 1)


# %%
cfg = Config.from_namespace(globals())
cfg

# %%
test_eq(Config.unbounded_fields(), [])
test_fail(lambda: Config.from_params("smoke", d_model=30, n_heads=4), contains="'d_model'")
test_fail(lambda: Config.from_params("smoke", methods=["acdc"]), contains="'methods'")
test_fail(lambda: Config.from_params("smoke", sae_k=300), contains="exceeds sae_latents")
test_fail(lambda: Config.from_params("cpu", n_seeds=20, train_steps=20000, n_attr=5000, n_eval=5000), contains="the whole configuration is too large")
test_eq(Config.from_params("cpu", n_seeds=20, train_steps=20000, n_attr=5000, allow_large=True).n_attr, 5000)
test_eq(Config.from_params("cpu").n_layers, 3); test_eq(Config.from_params("cpu").n_seeds, 8)
{p: tuple(round(x, 2) for x in estimate_cost(Config.from_params(p))) for p in ("smoke", "cpu")}   # (CPU seconds, GiB)

# %% [markdown]
# ## IOI prompts
#
# Six templates (three sentence frames, each with the names in the orders ABBA and BABA), all 14 tokens
# long, so that positions line up across prompts (mean ablation per position is then well defined). The
# clean answer is the indirect object A, the counterfactual answer the subject B. The **ABC** corruption
# replaces the second mention of B by a third name C (the prompt no longer says who the indirect object
# is); the **S2–IO flip** puts A in that slot (the answer becomes B). The vocabulary is a word-level map
# from every frame word, name, place and object to an id.

# %%
#| export
NAMES = ("Mary John Alice Bob Tom Anna Sam Kate Paul Emma Mark Lucy Jack Rose Dan Ella Max Ruth Ben Jane "
         "Carl Amy Joe Nina Luke Sara Ian Lily Ray Zoe").split()
PLACES = "store park school garden station beach office market".split()
OBJECTS = "book ball drink ring key apple letter gift".split()
FRAMES = ("When {X} and {Y} went to the {P} , {S} gave a {O} to",
          "After {X} and {Y} arrived at the {P} , {S} handed a {O} to",
          "Then {X} and {Y} were at the {P} and {S} brought a {O} to")

def ioi_vocab() -> dict:
    "Word-level vocabulary: padding, frame words, names, places, objects."
    words = sorted({w for f in FRAMES for w in f.split() if not w.startswith("{")})
    return {w: i for i, w in enumerate(["<pad>"] + words + NAMES + PLACES + OBJECTS)}

@dataclass
class IOIData:
    "Clean and counterfactual token ids `[N, 14]` and the label pairs (clean answer, counterfactual answer) `[N, 2]`."
    clean: torch.Tensor; corrupt: torch.Tensor; labels: torch.Tensor  # [N,T], [N,T], [N,2] (clean answer, counterfactual answer)
    template: np.ndarray
    def __len__(self): return len(self.clean)
    def __getitem__(self, i): return IOIData(self.clean[i], self.corrupt[i], self.labels[i], self.template[i])

def make_ioi(n:int, rng:np.random.Generator, vocab:dict|None=None, corruption:str="abc", n_names:int|None=None) -> IOIData:
    "`n` IOI prompts with their counterfactuals (`abc` or `s2_io_flip`)."
    if corruption not in ("abc", "s2_io_flip"): raise ValueError(f"corruption must be 'abc' or 's2_io_flip', got {corruption!r}")
    vocab = vocab or ioi_vocab(); names = NAMES[:n_names or len(NAMES)]
    # each frame as token ids, its slots as letters; the draws are indices (the same random stream as drawing the words)
    frames = [[w[1] if w.startswith("{") else vocab[w] for w in f.split()] for f in FRAMES]
    nid, pid, oid = [vocab[w] for w in names], [vocab[w] for w in PLACES], [vocab[w] for w in OBJECTS]
    T = len(frames[0]); clean, corr = np.empty((n, T), np.int64), np.empty((n, T), np.int64)
    labels, tmpl = np.empty((n, 2), np.int64), np.empty(n, np.int64)
    for r in range(n):
        t = int(rng.integers(2 * len(FRAMES)))
        a, b, c = rng.choice(len(nid), 3, replace=False); slot = dict(P=pid[rng.choice(len(pid))], O=oid[rng.choice(len(oid))])
        A, B, C = nid[a], nid[b], nid[c]
        slot["X"], slot["Y"] = (A, B) if t % 2 == 0 else (B, A)
        slot["S"] = B; clean[r] = [slot.get(w, w) for w in frames[t // 2]]
        slot["S"] = C if corruption == "abc" else A; corr[r] = [slot.get(w, w) for w in frames[t // 2]]
        labels[r] = (A, B); tmpl[r] = t
    return IOIData(torch.from_numpy(clean), torch.from_numpy(corr), torch.from_numpy(labels), tmpl)


# %%
_voc = ioi_vocab(); _inv = {i: w for w, i in _voc.items()}
_d = make_ioi(4, np.random.default_rng(0), _voc)
test_eq(_d.clean.shape, (4, 14)); test_eq(len(_voc), 62)
test_eq((_d.clean != _d.corrupt).sum(1).tolist(), [1, 1, 1, 1])             # ABC changes exactly one token, S2
_s = [_inv[int(t)] for t in _d.clean[0]]; _c = [_inv[int(t)] for t in _d.corrupt[0]]
test_eq(_s[9], _inv[int(_d.labels[0, 1])])                                   # S2 is the subject B
assert _c[9] not in (_inv[int(_d.labels[0, 0])], _inv[int(_d.labels[0, 1])])  # ... replaced by a third name
_f = make_ioi(4, np.random.default_rng(0), _voc, corruption="s2_io_flip")
test_eq(_f.corrupt[:, 9], _f.labels[:, 0])                                   # the flip puts the IO name at S2
print(" ".join(_s), "→", _inv[int(_d.labels[0, 0])], "| corrupted:", " ".join(_c))
# every prompt spells its frame with the drawn words: rebuilt from the words and their frame, for 300 prompts of each corruption
for _corr in ("abc", "s2_io_flip"):
    _g = make_ioi(300, np.random.default_rng(1), _voc, corruption=_corr)
    for _i in range(len(_g)):
        _w = [_inv[int(t)] for t in _g.clean[_i]]; _fr = FRAMES[int(_g.template[_i]) // 2].split()
        _A, _B = (_inv[int(t)] for t in _g.labels[_i]); _X, _Y = (_A, _B) if _g.template[_i] % 2 == 0 else (_B, _A)
        _slots = dict(zip(_fr, _w))
        test_eq(" ".join(_w), FRAMES[int(_g.template[_i]) // 2].format(X=_X, Y=_Y, S=_B, P=_slots["{P}"], O=_slots["{O}"]))
        test_eq(_inv[int(_g.corrupt[_i, 9])] == _A, _corr == "s2_io_flip"); assert len({_A, _B, _inv[int(_g.corrupt[_i, 9])]}) == (3 if _corr == "abc" else 2)
test_eq(make_ioi(0, np.random.default_rng(0), _voc).clean.shape, (0, 14))


# %% [markdown]
# ## The computation graph
#
# Nodes that write into the residual stream (*forward* nodes): the input (token + position embedding),
# every head `a{l}.h{i}` and every MLP `m{l}`. Nodes that read from it (*backward* slots): the q, k and v
# inputs of every head, every MLP input, and the logits. Because the residual stream is a sum, the input
# of a slot is the sum of the outputs of all forward nodes upstream of it (plus the constant attention
# output biases), and an **edge** is one term of that sum. With L layers and H heads,
# $$E = \sum_{l=0}^{L-1}\big[3H(1 + l(H+1)) + (1 + l(H+1) + H)\big] + 1 + L(H+1),$$
# which gives 479 edges for L = H = 4 and 32,491 for GPT-2 small (L = H = 12).

# %%
#| export
class CircuitGraph:
    "Forward nodes, backward slots (q/k/v of every head, MLP inputs, logits) and the valid edges `valid[u, slot]` of an L×H transformer."
    def __init__(self, n_layers, n_heads):
        L, H = self.n_layers, self.n_heads = int(n_layers), int(n_heads)
        self.fwd_names = ["input"] + [n for l in range(L) for n in [f"a{l}.h{h}" for h in range(H)] + [f"m{l}"]]
        self.bwd_names = [n for l in range(L) for n in [f"a{l}.h{h}<{s}>" for s in "qkv" for h in range(H)] + [f"m{l}"]] + ["logits"]
        self.n_fwd, self.n_bwd = len(self.fwd_names), len(self.bwd_names)
        valid = torch.zeros(self.n_fwd, self.n_bwd, dtype=torch.bool)
        for l in range(L):
            b0, up = l * (3 * H + 1), 1 + l * (H + 1)
            valid[:up, b0:b0 + 3 * H] = True; valid[:up + H, b0 + 3 * H] = True
        valid[:, -1] = True
        self.valid = valid
        self.edges = valid.nonzero().tolist()
        # node of each backward slot (its forward-node index; logits -> n_fwd)
        slot_node = []
        for l in range(L):
            slot_node += [1 + l * (H + 1) + h for s in range(3) for h in range(H)] + [1 + l * (H + 1) + H]
        self.slot_node = torch.tensor(slot_node + [self.n_fwd])
    @property
    def n_edges(self): return len(self.edges)
    def edge_names(self): return [f"{self.fwd_names[u]}->{self.bwd_names[v]}" for u, v in self.edges]
    def fwd_index(self, l, h=None): return 1 + l * (self.n_heads + 1) + (self.n_heads if h is None else h)
    def to_matrix(self, edge_values):
        M = torch.zeros(self.n_fwd, self.n_bwd, dtype=torch.as_tensor(edge_values).dtype)
        M[self.valid] = torch.as_tensor(edge_values); return M
    def to_vector(self, M): return torch.as_tensor(M)[self.valid]


# %%
test_eq(n_edges(4, 4), 479); test_eq(n_edges(12, 12), 32491)
for _L, _H in [(1, 1), (2, 2), (4, 4), (3, 5), (12, 12)]: test_eq(CircuitGraph(_L, _H).n_edges, n_edges(_L, _H))
_g = CircuitGraph(4, 4)
test_eq((_g.n_fwd, _g.n_bwd), (21, 53))
test_eq(_g.edge_names()[:2], ['input->a0.h0<q>', 'input->a0.h1<q>'])
test_eq(int(_g.valid[:, _g.bwd_names.index("m0")].sum()), 5)                # input and the 4 heads of layer 0
test_eq(int(_g.valid[_g.fwd_index(3), :].sum()), 1)                         # the last MLP feeds only the logits

# %% [markdown]
# ## The graph model: the transformer run edge by edge, through its hook points
#
# `GraphModel` runs a `TinyTransformer` with the residual stream decomposed, using the model's own modules and
# named hook points (`trustlib.models`): each block is the model's block, the attention core and the output
# projection are the model's, and hooks only read and replace activations. The hooks record every forward
# node's output — the input embedding, each head's contribution `attn.hook_result` (`[B, T, H, D]`, the model
# run with `use_attn_result=True`) and `hook_mlp_out` — and, where the run needs it, rebuild the input of every
# *slot* as a weighted sum of upstream outputs. A **mask** `M[u, slot]` ∈ [0, 1] chooses per edge between the
# node's output in this run (1) and its output on the counterfactual run (0):
# $$\text{in}_v = \sum_u M_{uv}\,\text{out}_u + (1 - M_{uv})\,\text{out}_u^{\text{corr}} + \text{bias}_v .$$
# As TransformerLens's edge-attribution code does, the model runs with split q/k/v inputs and an MLP-input hook
# point (`use_split_qkv_input`, `use_hook_mlp_in`): the q, k and v of every head get their own input at
# `hook_q_input` / `hook_k_input` / `hook_v_input` (the block then applies its own `ln1` and the head's slice of
# `W_qkv`), the MLP's input replaces `hook_mlp_in` (the block applies its own `ln2` and MLP), and the logits' input
# goes through the model's `ln_final` and unembedding; layers whose inputs need no change run unsplit. M = 1 everywhere
# is the model itself, M = 0 everywhere is the corrupted run, and a binary M is a circuit evaluated with
# everything outside it patched. A stack of K masks `[K, n_fwd, n_bwd]` evaluates K circuits in one pass on
# the prompts repeated K times. The same pass serves the attribution methods: it can replace the input
# embeddings (EAP-IG-inputs), fix the output of a node or of a whole attention layer (EAP-IG-activations),
# add a shift to one slot's input (exact patching), return every slot's input for gradients, and start at a
# later layer from cached outputs. When nothing is masked or shifted the model runs as it is and the hooks
# only record.

# %%
#| export
import contextlib

@contextlib.contextmanager
def hook_settings(model:TinyTransformer, **settings):
    "Run `model` with the given hook-point settings (e.g. `use_attn_result=True`) inside the block; the old ones are restored after it."
    old = {k: getattr(model, k) for k in settings}
    for k, v in settings.items(): setattr(model, k, v)
    try: yield model
    finally:
        for k, v in old.items(): setattr(model, k, v)

def attn_results(model:TinyTransformer):
    "Run `model` with `use_attn_result=True` (each head's output is a hook point, `attn.hook_result`) inside the block."
    return hook_settings(model, use_attn_result=True)

GRAPH_SETTINGS = dict(use_attn_result=True, use_split_qkv_input=True, use_hook_mlp_in=True)   # the hook points a graph pass uses

class _GraphRun:
    "The state of one graph pass: node outputs so far, the mask, the counterfactual outputs, replacements and a slot shift."
    # Slot v of layer l reads the first n = 1 + l(H + 1) forward nodes (+ H for the MLP, all for the logits): `[..., :n]` below
    def __init__(self, gm, mask, corrupt, replace, delta, need_inputs, batch):
        g, m = gm.graph, gm.model
        self.g, self.m, self.H, self.D = g, m, m.n_heads, m.d_model
        self.replace, self.delta, self.need_inputs, self.outs, self.inputs = replace, delta, need_inputs, [], []
        self.dev = m.W_U.device
        self.mask = None if mask is None else torch.as_tensor(mask, dtype=torch.float32).to(self.dev)
        if self.mask is not None:      # in_v = Σ_u M_uv (out_u − corr_u) + Σ_u corr_u: the second sum is a prefix sum of corr
            if corrupt is None or corrupt.shape[0] * (1 if self.mask.ndim == 2 else self.mask.shape[0]) != batch:
                raise ValueError("a mask needs `corrupt`, the counterfactual node outputs of the same prompts (once for all K masks)")
            self.corr, self.corr_sum = corrupt, corrupt.cumsum(2)
    def explicit(self, b0:int, b1:int) -> bool:
        "Whether slots b0..b1 need their own inputs (masked, shifted or differentiated) rather than the model's residual stream."
        return self.mask is not None or self.need_inputs or (self.delta is not None and b0 <= self.delta[0] < b1)
    def node_out(self, start:int, x):
        "Record the outputs `[B, T, k, D]` of nodes start..start+k−1, with any replacement applied; returns them."
        if self.replace is not None:
            sl, val = self.replace
            lo, hi = max(sl.start, start), min(sl.stop, start + x.shape[2])
            if lo < hi: x = torch.cat([x[:, :, :lo - start], val[:, :, lo - sl.start:hi - sl.start].to(x.dtype), x[:, :, hi - start:]], 2)
        self.outs.append(x); return x
    def bias(self, n_layers_done:int):
        return sum((self.m.blocks[l].attn.b_O for l in range(n_layers_done)), torch.zeros(self.D, device=self.dev))
    def residual(self, n_layers_done:int):
        "The residual stream implied by the recorded outputs (no mask): Σ outputs + attention biases."
        return torch.cat(self.outs, 2).sum(2) + self.bias(n_layers_done)
    def slots(self, b0:int, b1:int, n_layers_done:int):
        "Inputs `[B, T, b1 − b0, D]` of slots b0..b1−1."
        up = torch.cat(self.outs, 2); B, T, n, D = up.shape
        if self.mask is None: x = (up.sum(2) + self.bias(n_layers_done))[:, :, None].expand(B, T, b1 - b0, D)
        else:
            M, K = self.mask[..., :n, b0:b1], (1 if self.mask.ndim == 2 else self.mask.shape[0])
            diff = up.view(K, -1, T, n, D) - self.corr[None, :, :, :n]
            x = (torch.einsum('kbtnd,ns->kbtsd', diff, M) if M.ndim == 2 else torch.einsum('kbtnd,kns->kbtsd', diff, M))
            x = (x + self.corr_sum[None, :, :, n - 1:n] + self.bias(n_layers_done)).flatten(0, 1)
        if self.delta is not None and b0 <= self.delta[0] < b1:
            shift = torch.zeros(B, T, b1 - b0, D, device=self.dev); shift[:, :, self.delta[0] - b0] = self.delta[1]
            x = x + shift
        if self.need_inputs: self.inputs.append(x)
        return x
    def split(self, l:int) -> tuple[bool, bool]:
        "Whether block `l` runs with split q/k/v inputs and with its MLP input replaced (only where the run changes them)."
        b0 = l * (3 * self.H + 1)
        return self.explicit(b0, b0 + 3 * self.H), self.explicit(b0 + 3 * self.H, b0 + 3 * self.H + 1)
    def hooks(self, l:int) -> list:
        "The hook functions of block `l`: node outputs read at `attn.hook_result` / `hook_mlp_out`, slot inputs written at `hook_{q,k,v}_input` / `hook_mlp_in`."
        H, b0, slot_in = self.H, l * (3 * self.H + 1), {}
        def qkv_input(act, hook):                  # hook_q_input: the q slots of the H heads, etc. (computed once for the three)
            which = "qkv".index(hook.name.rsplit(".", 1)[1][len("hook_")])
            if not slot_in: slot_in['x'] = self.slots(b0, b0 + 3 * H, l)
            return slot_in['x'][:, :, which * H:(which + 1) * H]
        def result(act, hook): return self.node_out(1 + l * (H + 1), act)
        def mlp_in(act, hook): return self.slots(b0 + 3 * H, b0 + 3 * H + 1, l + 1)[:, :, 0]
        def mlp_out(act, hook): return self.node_out(1 + l * (H + 1) + H, act[:, :, None])[:, :, 0]
        split_qkv, split_mlp = self.split(l)
        hk = [(f"blocks.{l}.attn.hook_result", result), (f"blocks.{l}.hook_mlp_out", mlp_out)]
        if split_qkv: hk += [(f"blocks.{l}.hook_{c}_input", qkv_input) for c in "qkv"]
        if split_mlp: hk.append((f"blocks.{l}.hook_mlp_in", mlp_in))
        return hk

class GraphModel(nn.Module):
    "A `TinyTransformer` run on its decomposed residual stream through its hook points, with per-edge masks between clean and counterfactual node outputs."
    def __init__(self, model:TinyTransformer):
        super().__init__()
        self.model = model; self.graph = CircuitGraph(model.n_layers, model.n_heads)
    def embed(self, tokens):
        "Token + position embedding: the output of the input node."
        m = self.model
        return m.hook_embed(m.embed(tokens)) + m.hook_pos_embed(m.pos_embed(torch.arange(tokens.shape[1], device=tokens.device)))[None]
    def forward(self, tokens, mask=None, corrupt=None, input_embeds=None, replace=None, delta=None, return_acts=False,
                return_inputs=False, cache=None, start_layer:int=0):
        """Logits `[B,T,V]` of the graph run. `mask` `[n_fwd, n_bwd]` or `[K, n_fwd, n_bwd]` (1 keep, 0 patch: the edge carries the
        node's `corrupt` output `[B,T,n_fwd,D]`; with K masks `tokens` holds the prompts repeated K times); `replace=(slice, out)` fixes
        the outputs `[B,T,k,D]` of the nodes in the slice; `delta=(slot, shift)` adds `shift` `[B,T,D]` to one slot's input; `cache`
        (node outputs of this input) with `start_layer` skips the layers before it. Optionally also the node outputs `[B,T,n_fwd,D]`
        and the inputs of every slot (a list of `[B,T,s,D]`)."""
        m, g = self.model, self.graph; L, H = m.n_layers, m.n_heads
        run = _GraphRun(self, mask, corrupt, replace, delta, return_inputs, tokens.shape[0])
        if start_layer == 0:
            x = self.embed(tokens) if input_embeds is None else input_embeds
            resid = run.node_out(0, x[:, :, None])[:, :, 0]
        else:
            run.outs.append(cache[:, :, :1 + start_layer * (H + 1)]); resid = run.residual(start_layer)
        with hook_settings(m, **GRAPH_SETTINGS), m.hooks([h for l in range(start_layer, L) for h in run.hooks(l)]):
            for l in range(start_layer, L):
                if l > start_layer and run.explicit((l - 1) * (3 * H + 1), l * (3 * H + 1)): resid = run.residual(l)
                resid = m.blocks[l](resid, None, m.attn_impl, True, *run.split(l))
        if run.explicit(g.n_bwd - 1, g.n_bwd): xl = run.slots(g.n_bwd - 1, g.n_bwd, L)[:, :, 0]
        elif L > start_layer and run.explicit((L - 1) * (3 * H + 1), L * (3 * H + 1)): xl = run.residual(L)
        else: xl = resid
        logits = m.hook_logits(F.linear(m.hook_ln_final(m.ln_final(xl)), m.W_U))
        res = [logits] + ([torch.cat(run.outs, 2)] if return_acts else []) + ([run.inputs] if return_inputs else [])
        return res[0] if len(res) == 1 else tuple(res)


# %%
#| export
def logit_diff(logits, labels, per_example:bool=False):
    "MIB's metric: logit of the clean answer minus logit of the counterfactual answer at the last token (mean unless `per_example`)."
    last = logits[:, -1]
    d = last.gather(1, labels[:, :1])[:, 0] - last.gather(1, labels[:, 1:2])[:, 0]
    return d if per_example else d.mean()

def node_acts(gm:GraphModel, tokens):
    "Every forward node's output `[B, T, n_fwd, D]` (no gradient)."
    with torch.no_grad(): return gm(tokens, return_acts=True)[1]


# %% [markdown]
# `hook_settings` switches the model's hook-point settings for one block of code only. A masked graph pass turns on
# the split q/k/v inputs and the MLP-input hook points of the model and writes every slot's input there (a hook of
# our own on `blocks.1.hook_q_input`, registered with that setting on, sees the model's split input, one copy per head);
# the settings are restored afterwards.

# %%
_mm = TinyTransformer(len(ioi_vocab()), 16, 2, 2, d_mlp=32, max_len=16, seed=0).eval()
with hook_settings(_mm, use_attn_result=True, use_hook_mlp_in=True):
    test_eq((_mm.use_attn_result, _mm.use_hook_mlp_in, _mm.use_split_qkv_input), (True, True, False))
test_eq((_mm.use_attn_result, _mm.use_hook_mlp_in), (False, False))
_gmm, _dm = GraphModel(_mm), make_ioi(3, np.random.default_rng(0))
_seen = []
with torch.no_grad(), hook_settings(_mm, use_split_qkv_input=True), _mm.hooks(fwd_hooks=[("blocks.1.hook_q_input", lambda a, hook: _seen.append(tuple(a.shape)))]):
    _gmm(_dm.clean, mask=torch.ones(_gmm.graph.n_fwd, _gmm.graph.n_bwd), corrupt=node_acts(_gmm, _dm.corrupt))
test_eq(_seen, [(3, 14, 2, 16)]); test_eq(_mm.use_split_qkv_input, False)

# %% [markdown]
# The decomposition reproduces the model: the graph run gives the model's logits, the sum of the upstream
# outputs plus biases is the model's own residual stream before every block (read from its hook points),
# patching every edge gives the corrupted run's logits, patching none gives the clean run's, a stack of two
# masks gives both at once, and starting at a later layer from cached outputs changes nothing.

# %%
_m = TinyTransformer(len(_voc), 32, 2, 2, d_mlp=64, max_len=16, seed=1).eval(); _gm = GraphModel(_m)
_d = make_ioi(8, np.random.default_rng(1), _voc)
with torch.no_grad():
    _lo, _A = _gm(_d.clean, return_acts=True)
    _, _cache = _m.run_with_cache(_d.clean, names_filter=lambda n: n.endswith("hook_resid_pre"))
    test_close(_lo, _m(_d.clean), eps=1e-4)
    for _l in range(2):
        _n = 1 + _l * 3
        test_close(_A[:, :, :_n].sum(2) + sum(_m.blocks[i].attn.b_O for i in range(_l)), _cache[f"blocks.{_l}.hook_resid_pre"], eps=1e-5)
    _Ak = node_acts(_gm, _d.corrupt); _G = _gm.graph
    _Z, _O = torch.zeros(_G.n_fwd, _G.n_bwd), torch.ones(_G.n_fwd, _G.n_bwd)
    test_close(_gm(_d.clean, mask=_Z, corrupt=_Ak), _m(_d.corrupt), eps=1e-4)      # all edges patched = corrupted run
    test_close(_gm(_d.clean, mask=_O, corrupt=_Ak), _m(_d.clean), eps=1e-4)        # none patched = clean run
    _two = _gm(_d.clean.repeat(2, 1), mask=torch.stack([_Z, _O]), corrupt=_Ak)    # two circuits in one pass
    test_close(_two[:8], _m(_d.corrupt), eps=1e-4); test_close(_two[8:], _m(_d.clean), eps=1e-4)
    test_close(_gm(_d.clean, cache=_A, start_layer=1), _lo, eps=1e-5)


# %% [markdown]
# ## Training the IOI model
#
# Next-token cross-entropy on the indirect object at the last position, fresh prompts at every step, AdamW
# (lr 3·10⁻³), stopping early once held-out accuracy reaches `train_target`.

# %%
#| export
def ioi_accuracy(model, data:IOIData) -> float:
    "Share of prompts whose top next-token prediction is the indirect object."
    with torch.no_grad(): return float((model(data.clean)[:, -1].argmax(-1) == data.labels[:, 0]).float().mean())

def train_ioi(n_layers:int=4, n_heads:int=4, d_model:int=64, d_mlp:int=256, steps:int=1500, batch_size:int=64, lr:float=3e-3,
              target:float=0.99, seed:int=0, vocab:dict|None=None, check_every:int=50, progress:bool=False) -> tuple[TinyTransformer, dict]:
    "Train a `TinyTransformer` on IOI prompts until held-out accuracy reaches `target` (or `steps`). Returns (model, log)."
    from tqdm.auto import tqdm
    vocab = vocab or ioi_vocab(); rng = np.random.default_rng(derive_seed(seed, "ioi-train"))
    m = TinyTransformer(len(vocab), d_model, n_layers, n_heads, d_mlp=d_mlp, max_len=16, seed=derive_seed(seed, "init"))
    m.train(); opt = torch.optim.AdamW(m.parameters(), lr=lr, weight_decay=0.01, betas=(0.9, 0.98), foreach=True)
    val = make_ioi(500, np.random.default_rng(derive_seed(seed, "ioi-val")), vocab)
    log = dict(steps=0, acc=float("nan"))
    for step in tqdm(range(steps), desc="train IOI model", disable=not progress, leave=False):
        b = make_ioi(batch_size, rng, vocab)
        loss = F.cross_entropy(m(b.clean)[:, -1], b.labels[:, 0])
        opt.zero_grad(); loss.backward(); opt.step(); log["steps"] = step + 1
        if (step + 1) % check_every == 0 or step == steps - 1:
            log["acc"] = ioi_accuracy(m, val)
            if log["acc"] >= target: break
    return m.eval(), log


# %%
_tm, _log = train_ioi(1, 1, 16, 32, steps=3, seed=0)
test_eq(_log["steps"], 3); assert 0 <= _log["acc"] <= 1


# %% [markdown]
# ## Attribution methods
#
# Every method returns a score matrix `S[u, slot]` over the valid edges. With $L = -m$ (minus the logit
# difference) and $\Delta_u = \text{out}_u^{\text{corr}} - \text{out}_u^{\text{clean}}$, summed over
# positions and width and averaged over prompts:
#
# - **EAP**: $S_{uv} = \Delta_u \cdot \partial L / \partial \text{in}_v$, the gradient taken on the clean
#   run — the first-order estimate of how much patching the edge lowers the metric. Positive scores mark
#   edges that help the task.
# - **EAP-IG-inputs** (MIB's recommended method): the gradient averaged over $m$ runs whose *input
#   embeddings* are $e_{\text{corr}} + \tfrac{k}{m}(e_{\text{clean}} - e_{\text{corr}})$, **k = 0 … m − 1**
#   as in the official code (the clean end point is never evaluated). So with one step EAP-IG is EAP with
#   the gradient taken on the *corrupted* run, not on the clean one — the test below checks exactly that.
# - **clean-corrupted**: the mean of the gradients at the clean and the corrupted run (a two-point IG).
# - **Mean ablation**: Δ is taken against the mean of the node outputs over reference prompts (per position)
#   instead of a paired counterfactual prompt.

# %%
#| export
def _batches(data, batch_size):
    "Consecutive slices of `data`."
    for i in range(0, len(data), batch_size): yield data[i:i + batch_size]

def _grads(gm, tokens, labels, mask=None, corrupt=None, input_embeds=None, replace=None):
    "Gradients of L = −logit diff (summed over the batch) at every backward slot: [B,T,n_bwd,D]."
    x = (gm.embed(tokens) if input_embeds is None else input_embeds).detach().requires_grad_(True)
    logits, inputs = gm(tokens, mask=mask, corrupt=corrupt, input_embeds=x, replace=replace, return_inputs=True)
    loss = -logit_diff(logits, labels, per_example=True).sum()
    gs = torch.autograd.grad(loss, inputs, allow_unused=True)
    return torch.cat([torch.zeros_like(x) if g is None else g for x, g in zip(inputs, gs)], 2)

def _ref_acts(gm, b, ablation, mean_acts):
    if ablation == "patching": return node_acts(gm, b.corrupt)
    if ablation == "mean": return mean_acts.expand(len(b), *mean_acts.shape[1:])
    if ablation == "zero": return torch.zeros_like(node_acts(gm, b.clean))
    raise ValueError(f"ablation must be 'patching', 'mean' or 'zero', got {ablation!r}")

def eap(gm:GraphModel, data:IOIData, batch_size:int=100, grad_at:str="clean", ablation:str="patching", mean_acts=None):
    "EAP: S[u,v] = Δ_u · ∂L/∂in_v, gradient at the clean run (grad_at='clean') or the corrupted run."
    g = gm.graph; S = torch.zeros(g.n_fwd, g.n_bwd)
    for b in _batches(data, batch_size):
        Ac = node_acts(gm, b.clean); Ak = _ref_acts(gm, b, ablation, mean_acts)
        G = _grads(gm, b.clean if grad_at == "clean" else b.corrupt, b.labels)
        S += torch.einsum('btud,btvd->uv', Ak - Ac, G).cpu()
    return (S / len(data)) * g.valid

def eap_ig_inputs(gm:GraphModel, data:IOIData, steps:int=5, batch_size:int=100, ablation:str="patching", mean_acts=None):
    "EAP-IG-inputs: gradients averaged over input embeddings e_corr + (k/m)(e_clean − e_corr), k = 0..m−1."
    g = gm.graph; S = torch.zeros(g.n_fwd, g.n_bwd)
    for b in _batches(data, batch_size):
        Ac = node_acts(gm, b.clean); Ak = _ref_acts(gm, b, ablation, mean_acts)
        with torch.no_grad(): ec = gm.embed(b.clean); ek = Ak[:, :, 0]
        G = 0
        for k in range(steps):
            G = G + _grads(gm, b.clean, b.labels, input_embeds=ek + (k / steps) * (ec - ek))
        S += torch.einsum('btud,btvd->uv', Ak - Ac, G / steps).cpu()
    return (S / len(data)) * g.valid

def clean_corrupted(gm:GraphModel, data:IOIData, batch_size:int=100):
    "Mean of the gradients at the clean and the corrupted run."
    return 0.5 * (eap(gm, data, batch_size, "clean") + eap(gm, data, batch_size, "corrupted"))

def mean_node_acts(gm:GraphModel, tokens):
    "Mean node outputs per position over `tokens`, `[1, T, n_fwd, D]` (the reference of mean ablation)."
    return node_acts(gm, tokens).mean(0, keepdim=True)


# %%
_G = _gm.graph
_e, _ek = eap(_gm, _d), eap(_gm, _d, grad_at="corrupted")
test_close(eap_ig_inputs(_gm, _d, steps=1), _ek, eps=1e-6)                  # one IG step = EAP with the gradient at the corrupted run
test_close(clean_corrupted(_gm, _d), (_e + _ek) / 2, eps=1e-6)
test_eq(bool((_e[~_G.valid] == 0).all()), True)                           # scores only on valid edges
_i5, _i30, _i100 = (eap_ig_inputs(_gm, _d, steps=k) for k in (5, 30, 100))
assert (_i100 - _i30).abs().sum() < (_i100 - _i5).abs().sum()               # IG converges as the steps grow
_mean = mean_node_acts(_gm, make_ioi(16, np.random.default_rng(2), _voc).clean)
test_eq(eap(_gm, _d, ablation="mean", mean_acts=_mean).shape, (_G.n_fwd, _G.n_bwd))


# %% [markdown]
# **EAP-IG-activations**, as in the official code, interpolates one *group* of outputs at a time — the input
# embedding, all heads of one attention layer together, or one MLP — as
# $\alpha\,\text{out}^{\text{clean}} + (1-\alpha)\,\text{out}^{\text{corr}}$ with α = k/m, k = 1 … m (a fixed value: no
# gradient flows through the interpolated group), while everything else runs freely; on *every* pass the
# gradients at *all* slots are accumulated, and each edge's score is $\Delta_u$ times the gradient averaged
# over all $(1 + 2L)\,m$ passes. **NAP** scores a node by $\Delta_u \cdot \partial L/\partial
# \text{out}_u$, which is the sum of its EAP edge scores; a node circuit keeps every edge between kept nodes.

# %%
#| export
def node_groups(graph:CircuitGraph) -> list[slice]:
    "The groups EAP-IG-activations interpolates in turn: the input, then per layer all its heads and its MLP."
    H = graph.n_heads
    return [slice(0, 1)] + [s for l in range(graph.n_layers) for s in (slice(1 + l * (H + 1), 1 + l * (H + 1) + H),
                                                                       slice(1 + l * (H + 1) + H, 2 + l * (H + 1) + H))]

def eap_ig_activations(gm:GraphModel, data:IOIData, steps:int=5, batch_size:int=100):
    "EAP-IG-activations: each group's output fixed at α·clean + (1−α)·corr (α = k/m, k = 1..m) in turn; every edge accumulates every pass."
    g = gm.graph; S = torch.zeros(g.n_fwd, g.n_bwd)
    for b in _batches(data, batch_size):
        Ac = node_acts(gm, b.clean); Ak = node_acts(gm, b.corrupt)
        G, n = 0, 0
        for sl in node_groups(g):
            for k in range(1, steps + 1):
                val = Ak[:, :, sl] + (k / steps) * (Ac[:, :, sl] - Ak[:, :, sl])
                G = G + _grads(gm, b.clean, b.labels, replace=(sl, val)); n += 1
        S += torch.einsum('btud,btvd->uv', Ak - Ac, G / n).cpu()
    return (S / len(data)) * g.valid

def nap(gm:GraphModel, data:IOIData, batch_size:int=100):
    "Node attribution patching: node score Δ_u·∂L/∂out_u = Σ_v S_EAP[u,v]."
    return eap(gm, data, batch_size).sum(1)


# %% [markdown]
# Checks: the groups cover every node once; interpolating the whole model with α = 1 is the clean run, so
# one step with every group at α = 1 gives EAP's gradient (a one-group model, checked through the replacement
# mechanics: fixing a group to its clean output leaves the logits unchanged); NAP is the row sum of EAP.

# %%
test_eq(sum(s.stop - s.start for s in node_groups(_G)), _G.n_fwd)
test_eq([(s.start, s.stop) for s in node_groups(CircuitGraph(2, 2))], [(0, 1), (1, 3), (3, 4), (4, 6), (6, 7)])
with torch.no_grad():
    for _sl in node_groups(_G): test_close(_gm(_d.clean, replace=(_sl, _A[:, :, _sl])), _lo, eps=1e-5)   # fixing a group to its own output
_a = eap_ig_activations(_gm, _d, steps=2)
test_eq(_a.shape, _e.shape); test_eq(bool((_a[~_G.valid] == 0).all()), True)
test_close(nap(_gm, _d), _e.sum(1), eps=1e-6)
assert torch.corrcoef(torch.stack([_G.to_vector(_a), _G.to_vector(_e)]))[0, 1] > 0.5   # close to EAP on this random model


# %% [markdown]
# **Exact activation patching (EActP)** patches one edge at a time, $S_{uv} = m(N) - m(N \text{ with only }
# u \to v \text{ patched})$ (same sign convention as EAP). Patching the edge shifts the slot's input by
# $\Delta_u$ and nothing upstream of the slot changes, so for each slot all its upstream edges are run as one
# batch (the prompts repeated once per edge) starting at the slot's layer from cached clean outputs. The test
# checks it against a direct computation: the model itself with a forward hook that shifts that input.

# %%
#| export
@torch.no_grad()
def exact_patching(gm:GraphModel, data:IOIData, chunk:int=1024, progress:bool=False, only=None):
    "EActP: S[u,v] = m(full) − m(only edge u→v patched); the edges into one slot run as one batch (`chunk` sequences at most); `only` (bool `[n_fwd, n_bwd]`) restricts it to a sample of edges (0 elsewhere)."
    from tqdm.auto import tqdm
    g = gm.graph; B, T = data.clean.shape; per = 3 * g.n_heads + 1
    Ac, Ak = node_acts(gm, data.clean), node_acts(gm, data.corrupt); Dl = Ak - Ac
    base = logit_diff(gm(data.clean), data.labels); S = torch.zeros(g.n_fwd, g.n_bwd)
    for v in tqdm(range(g.n_bwd), disable=not progress, desc="exact patching", leave=False):
        us, layer = (g.valid[:, v] if only is None else g.valid[:, v] & only[:, v]).nonzero()[:, 0], min(v // per, g.n_layers)
        step = max(1, chunk // B)
        for i in range(0, len(us), step):
            u = us[i:i + step]; k = len(u)
            shift = Dl[:, :, u].permute(2, 0, 1, 3).reshape(k * B, T, -1)
            lo = gm(data.clean.repeat(k, 1), delta=(v, shift), cache=Ac.repeat(k, 1, 1, 1), start_layer=layer)
            S[u, v] = (base - logit_diff(lo, data.labels.repeat(k, 1), per_example=True).view(k, B).mean(1)).cpu()
    return S


# %%
_x = exact_patching(_gm, _d)
_u, _v = _G.fwd_names.index("a0.h1"), _G.bwd_names.index("m1")
with torch.no_grad():
    _Ac, _Ak = node_acts(_gm, _d.clean), node_acts(_gm, _d.corrupt)
    # by hand: the model with the input of m1 shifted by Δ_u (a forward hook on the LayerNorm in front of m1)
    _h = _m.blocks[1].ln2.register_forward_pre_hook(lambda mod, a: (a[0] + _Ak[:, :, _u] - _Ac[:, :, _u],))
    _by_hand = logit_diff(_m(_d.clean), _d.labels); _h.remove()
    test_close(_x[_u, _v], logit_diff(_m(_d.clean), _d.labels) - _by_hand, eps=1e-4)
    _M1 = torch.ones(_G.n_fwd, _G.n_bwd); _M1[_G.fwd_index(0, 0), _G.bwd_names.index("a1.h0<k>")] = 0    # a q/k/v edge, by mask
    test_close(_x[_G.fwd_index(0, 0), _G.bwd_names.index("a1.h0<k>")],
               logit_diff(_m(_d.clean), _d.labels) - logit_diff(_gm(_d.clean, mask=_M1, corrupt=_Ak), _d.labels), eps=1e-4)
test_eq(bool((_x[~_G.valid] == 0).all()), True)


# %% [markdown]
# **Information-flow routes (IFR)** are not causal: for every slot input $y = \sum_j c_j$ (the upstream
# outputs and the bias), the proximity of component $j$ is $\max(\lVert y\rVert_1 - \lVert y - c_j
# \rVert_1, 0)$, normalised over $j$ and averaged over tokens and prompts. As the MIB fixes require, IFR
# circuits are grown **greedily from the logits backwards**. The **learned mask** is our UGS-like stand-in:
# sigmoid gates over all edges trained to keep the logit difference with an L1 penalty; **random** scores
# are the baseline.

# %%
#| export
@torch.no_grad()
def ifr(gm:GraphModel, data:IOIData, batch_size:int=20):
    "Information-flow routes: proximity max(‖y‖₁ − ‖y − c_u‖₁, 0), normalised over the components of each node input, averaged over tokens."
    g = gm.graph; S = torch.zeros(g.n_fwd, g.n_bwd); n = 0
    for b in _batches(data, batch_size):
        A, inputs = gm(b.clean, return_acts=True, return_inputs=True)[1:]
        Y = torch.cat(inputs, 2)                                   # [B,T,n_bwd,D]
        yn = Y.abs().sum(-1)                                       # [B,T,n_bwd]
        P = (yn[:, :, None, :] - (Y[:, :, None] - A[:, :, :, None]).abs().sum(-1)).clamp_min(0)  # [B,T,n_fwd,n_bwd]
        valid = g.valid.to(A.device)
        P = P * valid
        bias_c = Y - torch.einsum('btud,uv->btvd', A, valid.to(A.dtype))   # the constant bias is a component too
        bias_part = (yn - (Y - bias_c).abs().sum(-1)).clamp_min(0)
        P = P / (P.sum(2) + bias_part + 1e-12)[:, :, None]
        S += P.sum((0, 1)).cpu(); n += b.clean.shape[0] * b.clean.shape[1]
    return S / n

def learned_mask(gm:GraphModel, data:IOIData, steps:int=50, lr:float=0.1, lamb:float=1.0, seed:int=0):
    """A continuous edge mask α = σ(θ) ∈ [0, 1]^E (UGS-like): each step samples relaxed gates σ(θ + logistic noise), runs the circuit
    with the gated edges patched, and minimises −m(α)/m(N) + λ·mean(α). The learned α is the edge score."""
    g = gm.graph
    flags = [p.requires_grad for p in gm.parameters()]
    for p in gm.parameters(): p.requires_grad_(False)
    try:
        theta = torch.ones(g.n_edges, requires_grad=True)
        opt = torch.optim.Adam([theta], lr=lr)
        Ak = node_acts(gm, data.corrupt)
        with torch.no_grad(): ref = logit_diff(gm(data.clean), data.labels).abs().clamp_min(1e-6)
        gen = torch.Generator().manual_seed(int(seed))
        for _ in range(steps):
            u = torch.rand(g.n_edges, generator=gen).clamp(1e-6, 1 - 1e-6)
            alpha = torch.sigmoid(theta + torch.log(u) - torch.log1p(-u))
            ld = logit_diff(gm(data.clean, mask=g.to_matrix(alpha), corrupt=Ak), data.labels)
            loss = -ld / ref + lamb * torch.sigmoid(theta).mean()
            opt.zero_grad(); loss.backward(); opt.step()
    finally:
        for p, f in zip(gm.parameters(), flags): p.requires_grad_(f)
    return g.to_matrix(torch.sigmoid(theta).detach())

def random_scores(graph:CircuitGraph, seed:int=0):
    "Uniform random edge scores (the baseline)."
    return graph.to_matrix(torch.rand(graph.n_edges, generator=torch.Generator().manual_seed(int(seed))))


# %%
_p = ifr(_gm, _d)
test_eq(bool(((_p >= 0) & (_p <= 1)).all()), True)
assert (_p.sum(0)[_G.valid.any(0)] <= 1 + 1e-5).all()                        # shares of each slot input sum to at most 1
_lm = learned_mask(_gm, _d, steps=5)
test_eq(bool(((_lm >= 0) & (_lm <= 1)).all()), True); test_eq(bool((_lm[~_G.valid] == 0).all()), True)
test_eq(random_scores(_G, 0), random_scores(_G, 0))

# %% [markdown]
# ## Circuits, faithfulness, CPR, CMD and AUROC
#
# Circuits of the sizes k ∈ {0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100} % of the edges (max(1, ⌈k·E⌉) edges)
# are the top edges by **signed** score for the CPR and by **|score|** for the CMD, then **pruned**: edges
# out of a node without incoming edges and into a node without outgoing edges are removed until nothing
# changes (the upstream bug fixed in EAP-IG's PR #17 left such nodes). A circuit is evaluated by running
# the graph model with the circuit as its mask (all other edges patched from the counterfactual run, or from
# the mean outputs for mean ablation); several circuits are evaluated in one pass. The CPR and CMD are
# trapezoid areas over the linear size axis 0.001 … 1. The AUROC builds the circuits of the same sizes
# **greedily** from the logits backwards by |score| (as MIB's `area_under_roc`, `apply_greedy`), compares
# them with the known edge set and integrates TPR over FPR (normalised by the last FPR).

# %%
#| export
SIZES = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)

def prune(graph:CircuitGraph, E):
    "Remove, until nothing changes, edges out of nodes with no incoming edge and edges into nodes with no outgoing edge."
    g = graph; E = torch.as_tensor(E, dtype=torch.bool) & g.valid
    while True:
        node_in = torch.zeros(g.n_fwd + 1).index_add_(0, g.slot_node, E.any(0).float()) > 0
        node_in[0] = True
        node_out = torch.cat([E.any(1), torch.tensor([True])])
        new = E & node_in[:g.n_fwd, None] & node_out[g.slot_node][None]
        if torch.equal(new, E): return E
        E = new

def n_for(graph:CircuitGraph, k:float) -> int:
    "Edges in a circuit of fraction k: max(1, ⌈k·E⌉)."
    return max(1, math.ceil(k * graph.n_edges - 1e-9))

def top_n(graph:CircuitGraph, scores, n:int, absolute:bool=False, do_prune:bool=True):
    "The n best edges by signed (CPR) or absolute (CMD) score, then pruned."
    v = graph.to_vector(scores).double(); v = v.abs() if absolute else v
    order = torch.argsort(-v, stable=True)[:n]
    keep = torch.zeros(graph.n_edges, dtype=torch.bool); keep[order] = True
    E = graph.to_matrix(keep)
    return prune(graph, E) if do_prune else E

def greedy(graph:CircuitGraph, scores, n:int, absolute:bool=False):
    "Grow the circuit from the logits backwards: repeatedly add the best edge whose child is already in the circuit; then prune."
    g = graph; S = torch.as_tensor(scores).double(); S = S.abs() if absolute else S
    E = torch.zeros(g.n_fwd, g.n_bwd, dtype=torch.bool)
    in_c = torch.zeros(g.n_fwd + 1, dtype=torch.bool); in_c[g.n_fwd] = True
    for _ in range(min(n, g.n_edges)):
        cand = g.valid & ~E & in_c[g.slot_node][None]
        if not cand.any(): break
        s = torch.where(cand, S, torch.tensor(-math.inf, dtype=S.dtype))
        u, v = divmod(int(s.argmax()), g.n_bwd)
        E[u, v] = True; in_c[u] = True
    return prune(g, E)

def node_circuit(graph:CircuitGraph, node_scores, n:int):
    "The largest circuit keeping the top nodes (all edges among kept nodes, input and logits) with at most n edges."
    g = graph; order = torch.argsort(-torch.as_tensor(node_scores[1:]).double(), stable=True) + 1
    best = None
    for j in range(len(order) + 1):
        kept = torch.zeros(g.n_fwd + 1, dtype=torch.bool); kept[0] = kept[g.n_fwd] = True; kept[order[:j]] = True
        E = prune(g, g.valid & kept[:g.n_fwd, None] & kept[g.slot_node][None])
        if j == 0 or int(E.sum()) <= n: best = E
        else: break
    return best

@torch.no_grad()
def circuit_metric(gm:GraphModel, data:IOIData, circuits, corrupt_acts=None, batch_size:int=200, chunk:int=5):
    "Mean logit diff of each circuit (bool [n_fwd, n_bwd]) with all other edges patched from `corrupt_acts` (default: the corrupted run); `chunk` circuits per pass."
    out = torch.zeros(len(circuits)); n = 0
    for i in range(0, len(data), batch_size):
        b = data[i:i + batch_size]
        Ak = node_acts(gm, b.corrupt) if corrupt_acts is None else corrupt_acts[i:i + batch_size]
        for j in range(0, len(circuits), chunk):
            Ms = torch.stack([torch.as_tensor(C).float() for C in circuits[j:j + chunk]]); K = len(Ms)
            lo = gm(b.clean.repeat(K, 1), mask=Ms, corrupt=Ak)
            out[j:j + K] += logit_diff(lo, b.labels.repeat(K, 1), per_example=True).view(K, -1).sum(1).cpu()
        n += len(b)
    return out / n

def faithfulness(m_c, m_full, m_empty):
    "f(C) = (m(C) − m(∅)) / (m(N) − m(∅))."
    return (m_c - m_empty) / (m_full - m_empty)

def area(xs, ys) -> float:
    "Trapezoid area of ys over xs."
    xs, ys = np.asarray(xs, float), np.asarray(ys, float)
    return float(np.sum(np.diff(xs) * (ys[1:] + ys[:-1]) / 2))

def cpr(f, sizes=SIZES) -> float:
    "Circuit performance ratio: the area under f over the circuit sizes (higher is better)."
    return area(sizes, f)
def cmd(f, sizes=SIZES) -> float:
    "Circuit–model distance: the area under |1 − f| (lower is better)."
    return area(sizes, np.abs(1 - np.asarray(f)))

def auroc(graph:CircuitGraph, scores, truth, sizes=SIZES) -> float:
    "Area under TPR vs FPR of greedy circuits (by |score|) of every size against a known edge set, FPR normalised by its last value."
    t = graph.to_vector(truth).bool(); tpr, fpr = [0.0], [0.0]
    for k in sizes:
        c = graph.to_vector(greedy(graph, scores, math.ceil(k * graph.n_edges - 1e-9), absolute=True))
        tpr.append(float((c & t).sum() / max(1, t.sum()))); fpr.append(float((c & ~t).sum() / max(1, (~t).sum())))
    return area(np.array(fpr) / max(fpr[-1], 1e-12), tpr)


# %%
_E = prune(_G, _G.valid)                                                    # the full graph is already pruned
test_eq(_E, _G.valid)
_c = top_n(_G, _e, 6)
_into = torch.zeros(_G.n_fwd + 1).index_add_(0, _G.slot_node, _c.any(0).float()) > 0
for _u in range(1, _G.n_fwd):                                               # every remaining node has in- and out-edges
    if _c[_u].any() or _into[_u]: assert _c[_u].any() and _into[_u]
_one = torch.zeros_like(_G.valid); _one[_G.fwd_names.index("a1.h0"), _G.n_bwd - 1] = True   # a head feeding the logits, with no input
test_eq(int(prune(_G, _one).sum()), 0)
test_eq(int(greedy(_G, _e, 4).sum()) <= 4, True)
test_eq(int(node_circuit(_G, nap(_gm, _d), 1).sum()), 1)                   # input → logits only
test_eq(n_for(CircuitGraph(4, 4), 0.001), 1); test_eq(n_for(CircuitGraph(4, 4), 0.05), 24)
_mN, _m0, _mC = circuit_metric(_gm, _d, [_G.valid, torch.zeros_like(_G.valid), _c], chunk=2)
test_close(faithfulness(_mN, _mN, _m0), 1.0); test_close(faithfulness(_m0, _mN, _m0), 0.0)   # f(full) = 1, f(∅) = 0
test_close(circuit_metric(_gm, _d, [_c], chunk=1)[0], _mC, eps=1e-5)                    # batching circuits changes nothing
with torch.no_grad():
    test_close(_mN, logit_diff(_m(_d.clean), _d.labels), eps=1e-4); test_close(_m0, logit_diff(_m(_d.corrupt), _d.labels), eps=1e-4)
test_close(cpr(np.ones(10)), 0.999); test_close(cmd(np.ones(10)), 0.0)
test_close(cpr(np.zeros(10)), 0.0); test_close(cmd(np.zeros(10)), 0.999)
_truth = prune(_G, _G.valid & torch.rand(_G.valid.shape, generator=torch.Generator().manual_seed(0)).lt(0.5))   # a connected edge set
test_close(auroc(_G, _truth.float() + 0.01 * random_scores(_G, 1), _truth), 1.0, eps=0.05)   # the true edges score highest
assert auroc(_G, -_truth.float() + 2 + 0.01 * random_scores(_G, 1), _truth) < 0.5   # the true edges score lowest


# %% [markdown]
# ## A planted circuit, trained in (our stand-in for InterpBench)
#
# InterpBench's models carry a known circuit because they are trained to: strict interchange-intervention
# training (SIIT) teaches the circuit's nodes the task and teaches the model that resampling any node *outside*
# the circuit — replacing its output by its output on another input — changes nothing. `plant_circuit` does the
# second part on a trained IOI model. The circuit is the first ⌈H/2⌉ heads of every layer and the MLPs of the
# even layers; every other head and MLP is *off-circuit*. Each fine-tuning step minimises the task loss of a
# run in which the outputs of all off-circuit components are taken from a source prompt — for half the batch
# the prompt's own counterfactual (the ABC corruption the circuits are evaluated with), for the other half an
# unrelated IOI prompt:
# $$\mathcal L = \mathrm{CE}\big(f(x \mid \text{off-circuit outputs} \leftarrow \text{source}), y\big).$$
# Since their outputs are replaced, the off-circuit components get no gradient: they keep the weights they were
# trained with, read the (changing) residual stream and write input-dependent outputs into it on every clean
# run — they stay live. What the training removes is the model's *dependence* on them. After every step the
# output weights of every head and MLP are scaled back to their norm before planting, so that the circuit
# cannot drown the off-circuit components by growing its own outputs (which would also let a scorer read the
# circuit off the weight norms). The ground truth of the AUROC is the set of edges between circuit components
# (input, circuit heads and MLPs, logits).

# %%
#| export
def circuit_nodes(graph:CircuitGraph) -> torch.Tensor:
    "Boolean `[n_fwd + 1]` (the last entry is the logits): the input, the first ⌈H/2⌉ heads of every layer, the MLPs of even layers, the logits."
    alive = torch.zeros(graph.n_fwd + 1, dtype=torch.bool); alive[0] = alive[graph.n_fwd] = True
    for l in range(graph.n_layers):
        for h in range(math.ceil(graph.n_heads / 2)): alive[graph.fwd_index(l, h)] = True
        if l % 2 == 0: alive[graph.fwd_index(l)] = True
    return alive

def planted_truth(graph:CircuitGraph) -> torch.Tensor:
    "The ground-truth edges `[n_fwd, n_bwd]`: every valid edge between circuit components."
    alive = circuit_nodes(graph)
    return graph.valid & alive[:graph.n_fwd, None] & alive[graph.slot_node][None]

def resample_hooks(model:TinyTransformer, source, off) -> list:
    "Hooks that replace the outputs of the off-circuit nodes (`off`: bool `[n_fwd]`) by their outputs on `source` tokens."
    g, H = CircuitGraph(model.n_layers, model.n_heads), model.n_heads
    with torch.no_grad(), attn_results(model):
        _, cache = model.run_with_cache(source, names_filter=lambda n: n.endswith("attn.hook_result") or n.endswith("hook_mlp_out"))
    hooks = []
    for l in range(model.n_layers):
        heads = off[1 + l * (H + 1):1 + l * (H + 1) + H]
        if heads.any(): hooks.append((f"blocks.{l}.attn.hook_result", lambda a, hook, h=heads: torch.where(h[None, None, :, None], cache[hook.name], a)))
        if off[g.fwd_index(l)]: hooks.append((f"blocks.{l}.hook_mlp_out", lambda a, hook: cache[hook.name]))
    return hooks

def _output_blocks(model:TinyTransformer) -> list:
    "(parameter, index) of every head's rows of W_O and every MLP's W_out: the output weights of the components."
    dh = model.d_head
    return [(b.attn.W_O, slice(h * dh, (h + 1) * dh)) for b in model.blocks for h in range(model.n_heads)] + [(b.mlp.W_out, slice(None)) for b in model.blocks]

def plant_circuit(model:TinyTransformer, steps:int=300, batch_size:int=32, lr:float=3e-3, seed:int=0,
                  vocab:dict|None=None, progress:bool=False) -> tuple[TinyTransformer, torch.Tensor, dict]:
    "A copy of `model` fine-tuned on IOI with every off-circuit output resampled, output-weight norms held fixed. Returns (model, truth, log)."
    import copy
    from tqdm.auto import tqdm
    vocab = vocab or ioi_vocab(); rng = np.random.default_rng(derive_seed(seed, "planted"))
    m = copy.deepcopy(model).train(); g = CircuitGraph(m.n_layers, m.n_heads)
    for p in m.parameters(): p.requires_grad_(True)
    off = ~circuit_nodes(g)[:g.n_fwd]; off[0] = False
    blocks = _output_blocks(m); norms = [float(p.detach()[ix].norm()) for p, ix in blocks]
    opt = torch.optim.AdamW(m.parameters(), lr=lr, weight_decay=0.01, betas=(0.9, 0.98), foreach=True)
    for _ in tqdm(range(steps), desc="plant circuit", disable=not progress, leave=False):
        b, other = make_ioi(batch_size, rng, vocab), make_ioi(batch_size, rng, vocab)
        half = batch_size // 2
        source = torch.cat([b.corrupt[:half], other.clean[half:]])
        with attn_results(m), m.hooks(resample_hooks(m, source, off)):
            loss = F.cross_entropy(m(b.clean)[:, -1], b.labels[:, 0])
        opt.zero_grad(); loss.backward(); opt.step()
        with torch.no_grad():
            for (p, ix), n0 in zip(blocks, norms): p[ix] *= n0 / p[ix].norm().clamp_min(1e-12)
    m.eval()
    val = make_ioi(500, np.random.default_rng(derive_seed(seed, "planted-val")), vocab)
    src = make_ioi(500, np.random.default_rng(derive_seed(seed, "planted-src")), vocab).clean
    with attn_results(m), m.hooks(resample_hooks(m, src, off)): acc_resampled = ioi_accuracy(m, val)
    return m, planted_truth(g), dict(steps=steps, acc=ioi_accuracy(m, val), acc_resampled=acc_resampled)


# %% [markdown]
# Two scorers that look only at the weights, run beside the methods. `zero_weight_scores` is what the
# AUROC of a model whose off-circuit components were silenced by zeroing their output weights rewards: an
# edge scores 1 when neither its parent nor its child node has all-zero output weights (random tie-breaking
# among equal scores). After
# strict training no weight is zero, so it must fall to chance. `weight_norm_scores` is a stronger static
# baseline: the norm of the parent's output weights times the norm of the child slot's input weights.

# %%
#| export
def _out_weights(model, graph:CircuitGraph, u:int):
    "Output weights of forward node u (the head's rows of W_O, the MLP's W_out; the input node's embedding)."
    H = model.n_heads; dh = model.d_head
    if u == 0: return model.embed.weight
    l, j = divmod(u - 1, H + 1)
    return model.blocks[l].mlp.W_out if j == H else model.blocks[l].attn.W_O[j * dh:(j + 1) * dh]

def _in_weights(model, graph:CircuitGraph, v:int):
    "Input weights of backward slot v (a head's q/k/v columns of W_qkv, the MLP's W_in; the unembedding)."
    H, D = model.n_heads, model.d_model; dh = model.d_head
    if v == graph.n_bwd - 1: return model.W_U
    l, j = divmod(v, 3 * H + 1)
    if j == 3 * H: return model.blocks[l].mlp.W_in
    return model.blocks[l].attn.W_qkv[:, (j // H) * D + (j % H) * dh:(j // H) * D + (j % H + 1) * dh]

def zero_weight_scores(model:TinyTransformer, seed:int=0):
    "1 for an edge whose parent's and child's output weights are not all zero (the logits always write), else 0; ties broken at random."
    g = CircuitGraph(model.n_layers, model.n_heads)
    live = torch.tensor([bool(_out_weights(model, g, u).detach().abs().sum() > 0) for u in range(g.n_fwd)] + [True])   # + logits
    return g.to_matrix(g.to_vector((live[:g.n_fwd, None] & live[g.slot_node][None]).float()) + 1e-6 * g.to_vector(random_scores(g, seed)))

def weight_norm_scores(model:TinyTransformer):
    "‖output weights of the parent‖ · ‖input weights of the child slot‖ for every edge."
    g = CircuitGraph(model.n_layers, model.n_heads)
    nu = torch.tensor([float(_out_weights(model, g, u).detach().norm()) for u in range(g.n_fwd)])
    nv = torch.tensor([float(_in_weights(model, g, v).detach().norm()) for v in range(g.n_bwd)])
    return (nu[:, None] * nv[None]) * g.valid

@torch.no_grad()
def planted_checks(gm:GraphModel, truth, data:IOIData) -> dict:
    """How the planted model meets the ground truth's premise on `data`: the faithfulness of the true circuit (every other edge patched;
    1 means the off-circuit components do not matter), and how live the off-circuit components are — their mean output norm and mean
    counterfactual change ‖out^corr − out^clean‖, each relative to the circuit components' (0 would mean dead or constant)."""
    g = gm.graph; alive = circuit_nodes(g)[:g.n_fwd].clone(); alive[0] = False
    off = ~circuit_nodes(g)[:g.n_fwd]
    mN, m0, mT = circuit_metric(gm, data, [g.valid, torch.zeros_like(g.valid), truth])
    Ac, Ak = node_acts(gm, data.clean), node_acts(gm, data.corrupt)
    norm, change = Ac.norm(dim=-1).mean((0, 1)), (Ak - Ac).norm(dim=-1).mean((0, 1))       # per node
    return dict(f_truth=float(faithfulness(mT, mN, m0)), norm_ratio=float(norm[off].mean() / norm[alive].mean()),
                live_ratio=float(change[off].mean() / change[alive].mean()), min_live_ratio=float(change[off].min() / change[alive].mean()))


# %% [markdown]
# On the small example model: the circuit covers half the heads; resampling hooks replace exactly the
# off-circuit outputs; the weight-only scorers see every edge of an unsilenced model as live; the old planting
# by zeroing output weights gives the zero-weight scorer a perfect AUROC — the degenerate check this design
# replaces — while a few strict fine-tuning steps keep every weight non-zero.

# %%
import copy

# %%
_g22 = CircuitGraph(2, 2)
test_eq(circuit_nodes(_g22).tolist(), [True, True, False, True, True, False, False, True])   # input a0.h0 m0 a1.h0 logits
test_eq(int(planted_truth(_g22).sum()), int((_g22.valid & circuit_nodes(_g22)[:7, None] & circuit_nodes(_g22)[_g22.slot_node][None]).sum()))
_off = ~circuit_nodes(_g22)[:7]; _off[0] = False
with torch.no_grad(), attn_results(_m):
    _, _c0 = _m.run_with_cache(_d.clean, names_filter=lambda n: n.endswith("hook_result"))
    with _m.hooks(resample_hooks(_m, _d.corrupt, _off)): _, _c1 = _m.run_with_cache(_d.clean, names_filter=lambda n: n.endswith("hook_result"))
    _, _ck = _m.run_with_cache(_d.corrupt, names_filter=lambda n: n.endswith("hook_result"))
test_close(_c1["blocks.0.attn.hook_result"][:, :, 1], _ck["blocks.0.attn.hook_result"][:, :, 1], eps=1e-6)   # off-circuit head: from the source
test_close(_c1["blocks.0.attn.hook_result"][:, :, 0], _c0["blocks.0.attn.hook_result"][:, :, 0], eps=1e-6)   # circuit head: its own
test_eq(float(zero_weight_scores(_m).min()), 0.0); test_eq(bool((zero_weight_scores(_m)[_G.valid] > 0.99).all()), True)
_zm = copy.deepcopy(_m)
with torch.no_grad():                                    # the old planting: silence off-circuit components by zeroing their output weights
    for _l, _blk in enumerate(_zm.blocks):
        _blk.attn.W_O[_zm.d_head:] = 0
        if _l % 2: _blk.mlp.W_out.zero_(); _blk.mlp.b_out.zero_()
_perfect = auroc(_G, planted_truth(_G).float() + 1e-3 * random_scores(_G, 2), planted_truth(_G))   # any scorer that ranks the truth first
test_close(auroc(_G, zero_weight_scores(_zm), planted_truth(_G)), _perfect, eps=1e-9)    # reading the zeros is as good as knowing the truth
_pm, _truth, _plog = plant_circuit(_m, steps=3, seed=0, batch_size=16)
assert all(bool(_out_weights(_pm, _G, u).abs().sum() > 0) for u in range(_G.n_fwd))   # no output weight is zero after strict training
for (_p0, _ix), (_p1, _) in zip(_output_blocks(_m), _output_blocks(_pm)):              # every component's output-weight norm is kept
    test_close(float(_p1.detach()[_ix].norm()), float(_p0.detach()[_ix].norm()), eps=1e-4)
assert not torch.equal(_pm.blocks[0].attn.W_O, _m.blocks[0].attn.W_O)                  # ... while the weights themselves were trained
_chk = planted_checks(GraphModel(_pm), _truth, _d)
assert _chk["live_ratio"] > 0 and _chk["norm_ratio"] > 0, _chk
_chk


# %% [markdown]
# ## Causal-variable localisation
#
# Its code lives in the same module as the circuit track, `trustlib.interp.circuits`.
# The task is hierarchical equality: four vectors a, b, c, d ∈ ℝ⁴ (each pair equal with probability ½),
# y = [(a = b) = (c = d)]. The causal model has two intermediate variables, V1 = [a = b] and V2 = [c = d].
# A counterfactual pair is a base and a source input; its label is the causal model's output on the base
# with one variable set to its value under the source. The neural model is an MLP 16 → 64 → 64 → 2
# (`trustlib.models.MLP`); interventions act on a hidden layer (after the ReLU).

# %%
#| export
@dataclass
class EqualityData:
    "Inputs `[N, 4·dim]`, the two causal variables and the label."
    x: torch.Tensor; v1: torch.Tensor; v2: torch.Tensor; y: torch.Tensor
    def __len__(self): return len(self.x)

def equality_data(n:int, rng:np.random.Generator, dim:int=4) -> EqualityData:
    "Hierarchical equality: x = (a, b, c, d) ∈ ℝ^{4·dim}, V1 = [a = b], V2 = [c = d], y = [V1 = V2]; each pair equal with p = 0.5."
    a, b, c, d = (rng.normal(size=(n, dim)) for _ in range(4))
    v1, v2 = rng.random(n) < 0.5, rng.random(n) < 0.5
    b[v1] = a[v1]; d[v2] = c[v2]
    x = np.concatenate([a, b, c, d], 1)
    return EqualityData(torch.tensor(x, dtype=torch.float32), torch.tensor(v1), torch.tensor(v2), torch.tensor(v1 == v2).long())

def equality_causal_model(v1, v2):
    "The high-level causal model: y = [V1 = V2]."
    return (v1 == v2).long()

@dataclass
class CounterfactualPairs:
    "Base and source inputs, and the counterfactual label for `variable`."
    base: EqualityData; source: EqualityData; label: torch.Tensor; variable: str
    def __len__(self): return len(self.label)

def counterfactual_pairs(n:int, rng:np.random.Generator, variable:str="v1", dim:int=4) -> CounterfactualPairs:
    "(base, source) pairs and the causal model's output on the base with `variable` set to its value under the source."
    b, s = equality_data(n, rng, dim), equality_data(n, rng, dim)
    lab = equality_causal_model(s.v1, b.v2) if variable == "v1" else equality_causal_model(b.v1, s.v2)
    return CounterfactualPairs(b, s, lab, variable)

def split_mlp(model, layer:int):
    "(to_hidden, from_hidden): trustlib.models.MLP's layers up to hidden layer `layer` (post-activation) and after it."
    net = model.net
    return (lambda x: net[:2 * layer](x)), (lambda h: net[2 * layer:](h))


# %%
_cd = equality_data(2000, np.random.default_rng(0))
test_close(float(_cd.v1.float().mean()), 0.5, eps=0.05); test_close(float(_cd.y.float().mean()), 0.5, eps=0.05)
test_eq(bool(torch.equal(_cd.x[_cd.v1, :4], _cd.x[_cd.v1, 4:8])), True)
_cp = counterfactual_pairs(1000, np.random.default_rng(1), "v1")
test_eq(_cp.label, (_cp.source.v1 == _cp.base.v2).long())
test_close(float((_cp.label == _cp.base.y).float().mean()), 0.5, eps=0.06)   # half the pairs change the answer


# %% [markdown]
# **Featurizers** map a hidden vector h to features f and an error term, with an exact inverse:
# neurons (identity), PCA of collected activations (a fixed rotation), the latents of a TopK SAE trained on
# the activations (the error h − dec(enc(h)) is kept, so the inverse is exact), and **DAS**: a learned
# matrix R ∈ ℝ^{d×k} with orthonormal columns (`torch.nn.utils.parametrizations.orthogonal`), f = hR,
# err = h − fRᵀ.

# %%
#| export
class Identity(nn.Module):
    "Neurons: f = h, no error term."
    def __init__(self, d): super().__init__(); self.n_features = d
    def forward(self, h): return h, torch.zeros_like(h)
    def inverse(self, f, err): return f + err

class PCAFeaturizer(nn.Module):
    "PCA of collected activations as an orthogonal rotation (all d components)."
    def __init__(self, H):
        super().__init__()
        mu = H.mean(0); U, S, Vt = torch.linalg.svd(H - mu, full_matrices=False)
        self.register_buffer("mu", mu); self.register_buffer("V", Vt.T.contiguous()); self.n_features = H.shape[1]
    def forward(self, h): return (h - self.mu) @ self.V, torch.zeros_like(h)
    def inverse(self, f, err): return f @ self.V.T + self.mu + err

class SAEFeaturizer(nn.Module):
    "SAE latents with the reconstruction error kept: f = enc(h), err = h − dec(f)."
    def __init__(self, sae):
        super().__init__(); self.sae = sae; self.n_features = sae.d_sae
        for p in sae.parameters(): p.requires_grad_(False)
    def forward(self, h):
        f = self.sae.encode(h); return f, h - self.sae.decode(f)
    def inverse(self, f, err): return self.sae.decode(f) + err

class DASFeaturizer(nn.Module):
    "DAS: a learned orthonormal R ∈ ℝ^{d×k}; f = hR, err = h − fRᵀ, h = fRᵀ + err."
    def __init__(self, d, k, seed=0):
        super().__init__()
        lin = nn.Linear(d, k, bias=False)
        with torch.no_grad(): lin.weight.copy_(torch.randn(k, d, generator=torch.Generator().manual_seed(seed)))
        self.rot = nn.utils.parametrizations.orthogonal(lin); self.n_features = k
    @property
    def R(self): return self.rot.weight.T          # [d, k], orthonormal columns
    def forward(self, h): f = h @ self.R; return f, h - f @ self.R.T
    def inverse(self, f, err): return f @ self.R.T + err


# %%
from trustlib.interp.sae import TopKSAE

# %%
_H = torch.randn(500, 64, generator=torch.Generator().manual_seed(0))
for _ft in [Identity(64), PCAFeaturizer(_H), SAEFeaturizer(TopKSAE(64, 128, k=8, seed=0)), DASFeaturizer(64, 3)]:
    _f, _err = _ft(_H[:10]); test_close(_ft.inverse(_f, _err), _H[:10], eps=1e-4)   # every featurizer inverts exactly
_R = DASFeaturizer(64, 4).R; test_close(_R.T @ _R, torch.eye(4), eps=1e-5)


# %% [markdown]
# An **interchange intervention** swaps the selected features: $f' = f_b + \text{mask}\odot(f_s - f_b)$,
# $h' = F^{-1}(f', \text{err}_b)$, and the rest of the model runs on $h'$. **IIA** is the share of pairs on
# which the intervened model outputs the counterfactual label. **DAS** trains the rotation (all k features
# swapped) with cross-entropy on the counterfactual labels; **DBM** trains a mask over the features of a
# fixed featurizer, σ(m/T) with the temperature annealed linearly from 1 to 0.01 and an L1 penalty, and
# evaluates the hard mask σ(m) > 0.5. The full-vector baseline swaps all neurons.

# %%
#| export
def interchange(feat:nn.Module, hb, hs, mask):
    "f_b with the features picked by `mask` (0..1) taken from the source, mapped back with the base's error term."
    fb, eb = feat(hb); fs, _ = feat(hs)
    return feat.inverse(fb + mask * (fs - fb), eb)

def intervened_logits(model, layer:int, feat:nn.Module, pairs:CounterfactualPairs, mask):
    "Logits of the model with the interchange intervention at hidden layer `layer`."
    to_h, from_h = split_mlp(model, layer)
    return from_h(interchange(feat, to_h(pairs.base.x), to_h(pairs.source.x), mask))

def iia(model, layer:int, feat:nn.Module, pairs:CounterfactualPairs, mask) -> float:
    "Interchange-intervention accuracy: the intervened model outputs the counterfactual label."
    with torch.no_grad(): return float((intervened_logits(model, layer, feat, pairs, mask).argmax(-1) == pairs.label).float().mean())

def train_intervention(model, layer:int, feat:nn.Module, pairs:CounterfactualPairs, method:str="das", epochs:int=5, lr:float=1e-2, batch_size:int=64,
                       lamb:float=1e-4, t_start:float=1.0, t_end:float=0.01, seed:int=0, check_orthogonal:bool=False):
    """Train DAS (the rotation, all its k features swapped) or DBM (a mask over the featurizer's features, σ(m/T) with T annealed
    linearly t_start → t_end and an L1 penalty λ‖σ(m/T)‖₁). Returns the evaluation mask (DBM: hard σ(m) > 0.5)."""
    for p in model.parameters(): p.requires_grad_(False)
    g = torch.Generator().manual_seed(seed); n = len(pairs)
    if method == "das": params = list(feat.parameters()); mlog = None
    else: mlog = torch.zeros(feat.n_features, requires_grad=True); params = [mlog]
    opt = torch.optim.Adam(params, lr=lr, foreach=True)
    to_h, from_h = split_mlp(model, layer)
    with torch.no_grad(): Hb, Hs = to_h(pairs.base.x), to_h(pairs.source.x)
    steps = epochs * math.ceil(n / batch_size); step = 0; worst = 0.0
    for ep in range(epochs):
        perm = torch.randperm(n, generator=g)
        for i in range(0, n, batch_size):
            idx = perm[i:i + batch_size]
            T = t_start + (t_end - t_start) * step / max(1, steps - 1)
            mask = torch.ones(feat.n_features) if mlog is None else torch.sigmoid(mlog / T)
            out = from_h(interchange(feat, Hb[idx], Hs[idx], mask))
            loss = F.cross_entropy(out, pairs.label[idx]) + (0 if mlog is None else lamb * mask.sum())
            opt.zero_grad(); loss.backward(); opt.step(); step += 1
            if check_orthogonal and mlog is None:
                with torch.no_grad(): R = feat.R; worst = max(worst, float((R.T @ R - torch.eye(R.shape[1])).abs().max()))
    for p in model.parameters(): p.requires_grad_(True)
    final = torch.ones(feat.n_features) if mlog is None else (torch.sigmoid(mlog.detach()) > 0.5).float()
    return (final, worst) if check_orthogonal else final


# %%
from trustlib.models import MLP, fit

# %%
_cm = MLP(16, (64, 64), 2); fit(_cm, _cd.x, _cd.y, epochs=3, batch_size=128, lr=3e-3, seed=0, progress=False); _cm.eval()
_cpt = counterfactual_pairs(300, np.random.default_rng(2), "v1")
with torch.no_grad(): _src_out = _cm(_cpt.source.x).argmax(-1)
test_close(iia(_cm, 1, Identity(64), _cpt, torch.ones(64)), float((_src_out == _cpt.label).float().mean()))   # full swap = the source's own output
test_close(iia(_cm, 1, Identity(64), _cpt, torch.zeros(64)), float((_cm(_cpt.base.x).argmax(-1) == _cpt.label).float().mean()))
_das = DASFeaturizer(64, 2, seed=0)
_mk, _worst = train_intervention(_cm, 1, _das, _cpt, "das", epochs=2, check_orthogonal=True)
assert _worst < 1e-5                                                          # R stays orthonormal during training
_dbm = train_intervention(_cm, 1, Identity(64), _cpt, "dbm", epochs=2, lamb=1e-3)
test_eq(set(_dbm.unique().tolist()) <= {0.0, 1.0}, True)                       # the evaluation mask is binary
test_eq(float(train_intervention(_cm, 1, Identity(64), _cpt, "dbm", epochs=2, lamb=10.0).sum()), 0.0)   # a large λ empties it


# %% [markdown]
# `causal_track` runs the whole causal-variable experiment for one seed: train the MLP, then for each
# variable and hidden layer train and score every featurizer on fresh counterfactual pairs.

# %%
#| export
def causal_track(seed:int, n_train:int=20000, epochs:int=20, n_pairs:int=2000, int_epochs:int=8, das_ks=(1, 2, 4),
                 sae_latents:int=256, sae_k:int=8, sae_steps:int=400, dbm_lamb:float=1e-3, layers=(1, 2), progress:bool=False):
    "One seed of the causal-variable track: a list of rows (variable, layer, method, iia, n_features) and the MLP's test accuracy."
    from trustlib.models import MLP, fit
    from trustlib.interp.sae import TopKSAE, train_sae
    rng = np.random.default_rng(derive_seed(seed, "cv-data"))
    tr, te = equality_data(n_train, rng), equality_data(2000, rng)
    torch.manual_seed(derive_seed(seed, "cv-init"))
    model = MLP(16, (64, 64), 2)
    fit(model, tr.x, tr.y, epochs=epochs, batch_size=128, lr=3e-3, seed=derive_seed(seed, "cv-fit"), progress=False)
    model.eval()
    with torch.no_grad(): acc = float((model(te.x).argmax(-1) == te.y).float().mean())
    rows = []
    for layer in layers:
        to_h, _ = split_mlp(model, layer)
        with torch.no_grad(): H = to_h(tr.x[:5000])
        sae = TopKSAE(64, sae_latents, k=sae_k, seed=derive_seed(seed, "sae", layer))
        train_sae(sae, H, steps=sae_steps, batch_size=256, lr=1e-3, seed=derive_seed(seed, "sae-train", layer), progress=False)
        for var in ("v1", "v2"):
            prng = np.random.default_rng(derive_seed(seed, "pairs", var, layer))
            ptr, pte = counterfactual_pairs(n_pairs, prng, var), counterfactual_pairs(n_pairs, prng, var)
            s = derive_seed(seed, "int", var, layer)
            feats = [("full vector", Identity(64), None), ("DBM neurons", Identity(64), "dbm"), ("DBM PCA", PCAFeaturizer(H), "dbm"),
                     ("DBM SAE", SAEFeaturizer(sae), "dbm")] + [(f"DAS k={k}", DASFeaturizer(64, k, seed=s), "das") for k in das_ks]
            for name, ft, how in feats:
                mask = torch.ones(ft.n_features) if how is None else train_intervention(model, layer, ft, ptr, how, epochs=int_epochs, lamb=dbm_lamb, seed=s)
                rows.append(dict(seed=seed, variable=var, layer=layer, method=name, iia=iia(model, layer, ft, pte, mask), n_features=int(mask.sum())))
    return rows, acc


# %%
_rows, _acc = causal_track(0, n_train=500, epochs=1, n_pairs=50, int_epochs=1, das_ks=(1,), sae_latents=32, sae_k=4, sae_steps=5, layers=(1,))
test_eq(len(_rows), 2 * 5); test_eq({r["method"] for r in _rows}, {"full vector", "DBM neurons", "DBM PCA", "DBM SAE", "DAS k=1"})
assert all(0 <= r["iia"] <= 1 for r in _rows)


# %% [markdown]
# ## One seed of the circuit track
#
# `circuit_seed` trains the IOI model, runs every method on `n_attr` prompts, and evaluates the CPR and
# CMD circuits of every size on `n_eval` other prompts; for IFR the circuits are built greedily, for NAP
# by nodes. It also measures the rank correlation of each method's edge scores with exact patching, EAP-IG
# with mean ablation, and — on the planted-circuit model trained from the same IOI model — the premise checks
# and the AUROC of the methods and of the two weight-only scorers.

# %%
#| export
def score_edges(method:str, gm:GraphModel, data:IOIData, cfg:Config, seed:int):
    "Edge scores `[n_fwd, n_bwd]` of `method` (node scores `[n_fwd]` for nap)."
    if method == "random": return random_scores(gm.graph, derive_seed(seed, "random"))
    if method == "eap": return eap(gm, data)
    if method == "eap_ig_inputs": return eap_ig_inputs(gm, data, steps=cfg.ig_steps)
    if method == "eap_ig_activations": return eap_ig_activations(gm, data, steps=cfg.ig_steps)
    if method == "clean_corrupted": return clean_corrupted(gm, data)
    if method == "nap": return nap(gm, data)
    if method == "exact": return exact_patching(gm, data)
    if method == "ifr": return ifr(gm, data)
    if method == "mask": return learned_mask(gm, data, steps=cfg.mask_steps, lamb=cfg.mask_lamb, seed=derive_seed(seed, "mask"))
    raise ValueError(f"unknown method {method!r}; choose from {list(METHODS)}")

def circuits_for(method:str, g:CircuitGraph, S, absolute:bool):
    "The circuits of all sizes: top-n (pruned), greedy for IFR, by nodes for NAP."
    ns = [n_for(g, k) for k in SIZES]
    if method == "nap": return [node_circuit(g, S.abs() if absolute else S, n) for n in ns]
    if method == "ifr": return [greedy(g, S, n) for n in ns]
    return [top_n(g, S, n, absolute=absolute) for n in ns]

def _curves(gm, ev, method, S, mN, m0, seed, ablation="counterfactual", corrupt_acts=None, cache:dict|None=None, chunk:int=5) -> list[dict]:
    "Faithfulness of the CPR (signed) and CMD (absolute) circuits of every size; a circuit already in `cache` (its bytes → metric) is not run again."
    g = gm.graph; cache = {} if cache is None else cache
    key = lambda C: torch.as_tensor(C, dtype=torch.bool).numpy().tobytes()
    cache.setdefault(key(g.valid), mN); cache.setdefault(key(torch.zeros_like(g.valid)), m0)
    circ = {kind: circuits_for(method, g, S, absolute) for kind, absolute in (("cpr", False), ("cmd", True))}
    new = {key(C): C for cs in circ.values() for C in cs}
    todo = [k for k in new if k not in cache]
    if todo: cache.update(zip(todo, (float(v) for v in circuit_metric(gm, ev, [new[k] for k in todo], corrupt_acts=corrupt_acts, chunk=chunk))))
    return [dict(seed=seed, method=method, ablation=ablation, kind=kind, size=k, f=float(faithfulness(cache[key(C)], mN, m0)))
            for kind, cs in circ.items() for k, C in zip(SIZES, cs)]

def _mean_ablation_curves(gm, cfg, attr, ev, rng, vocab, seed) -> list[dict]:
    "EAP-IG with mean ablation in discovery and evaluation, against its own empty circuit."
    return _mean_curves(gm, cfg, attr, ev, make_ioi(cfg.n_attr, rng, vocab, cfg.corruption).clean, seed)

def _mean_curves(gm, cfg, attr, ev, ref_tokens, seed, chunk:int=5) -> list[dict]:
    "EAP-IG with mean ablation (the mean node outputs over `ref_tokens`) in discovery and evaluation, against its own empty circuit."
    g = gm.graph
    ref = mean_node_acts(gm, ref_tokens)
    with torch.enable_grad(): S = eap_ig_inputs(gm, attr, steps=cfg.ig_steps, ablation="mean", mean_acts=ref)
    ref_e = ref.expand(len(ev), *ref.shape[1:])
    mN, m0 = (float(x) for x in circuit_metric(gm, ev, [g.valid, torch.zeros_like(g.valid)], corrupt_acts=ref_e))
    return _curves(gm, ev, "eap_ig_inputs", S, mN, m0, seed, "mean", ref_e, cache={}, chunk=chunk)

PLANTED_METHODS = ("random", "eap", "eap_ig_inputs", "clean_corrupted", "ifr")

def planted_seed(cfg:Config, model:TinyTransformer, attr:IOIData, ev:IOIData, seed:int, vocab:dict) -> dict:
    "Plant a circuit in `model`; its premise checks and the AUROC of the methods and of the weight-only scorers."
    pm, truth, log = plant_circuit(model, steps=cfg.planted_steps, batch_size=cfg.planted_batch_size, lr=cfg.lr, seed=seed, vocab=vocab)
    pg = GraphModel(pm); g = pg.graph
    for p in pg.parameters(): p.requires_grad_(False)
    au = {}
    for method in [m for m in PLANTED_METHODS if m in cfg.methods]:
        with torch.enable_grad(): au[method] = auroc(g, score_edges(method, pg, attr, cfg, seed), truth)
    au["zero_weights"] = auroc(g, zero_weight_scores(pm, derive_seed(seed, "ties")), truth)
    au["weight_norm"] = auroc(g, weight_norm_scores(pm), truth)
    return dict(acc=log["acc"], acc_resampled=log["acc_resampled"], **planted_checks(pg, truth, ev), auroc=au)

def circuit_seed(cfg:Config, seed:int, progress:bool=False) -> dict:
    "One seed of the circuit track: curves, rank correlations with exact patching, CPU seconds and the planted circuit."
    import time
    from scipy.stats import spearmanr
    vocab = ioi_vocab()
    model, log = train_ioi(cfg.n_layers, cfg.n_heads, cfg.d_model, cfg.d_mlp, steps=cfg.train_steps, batch_size=cfg.batch_size, lr=cfg.lr,
                           target=cfg.train_target, seed=seed, vocab=vocab, progress=progress)
    gm = GraphModel(model); g = gm.graph
    for p in gm.parameters(): p.requires_grad_(False)
    rng = np.random.default_rng(derive_seed(seed, "prompts"))
    attr, ev = make_ioi(cfg.n_attr, rng, vocab, cfg.corruption), make_ioi(cfg.n_eval, rng, vocab, cfg.corruption)
    mN, m0 = (float(x) for x in circuit_metric(gm, ev, [g.valid, torch.zeros_like(g.valid)]))
    out = dict(seed=seed, acc=ioi_accuracy(model, ev), train_steps=log["steps"], m_full=mN, m_empty=m0, curves=[], scores={}, seconds={})
    cache = {}                                                    # circuits shared by methods (or by their CPR and CMD sets) run once
    for method in cfg.methods:
        t0 = time.process_time()
        with torch.enable_grad(): S = score_edges(method, gm, attr, cfg, seed)
        out["seconds"][method] = time.process_time() - t0
        out["scores"][method] = S
        out["curves"] += _curves(gm, ev, method, S, mN, m0, seed, cache=cache)
    if cfg.mean_ablation: out["curves"] += _mean_ablation_curves(gm, cfg, attr, ev, rng, vocab, seed)
    if "exact" in out["scores"]:
        ref = g.to_vector(out["scores"]["exact"])
        out["rho"] = {m: float(spearmanr(g.to_vector(S), ref).statistic) for m, S in out["scores"].items() if m not in ("nap", "exact")}
    if cfg.planted: out["planted"] = planted_seed(cfg, model, attr, ev, seed, vocab)
    out["scores"] = {m: S.tolist() for m, S in out["scores"].items()}
    return out


# %%
_cfg = Config.from_params("smoke", train_steps=2, n_attr=6, n_eval=6, mask_steps=2, planted_steps=2, methods=["random", "eap", "exact", "nap", "ifr"])
_o = circuit_seed(_cfg, 0)
test_eq(len(_o["curves"]), (5 + 1) * 2 * len(SIZES)); test_eq(set(_o["rho"]), {"random", "eap", "ifr"})
_full = [c["f"] for c in _o["curves"] if c["size"] == 1.0]
test_close(np.array(_full), np.ones(len(_full)), eps=1e-4)                   # every 100 % circuit is the full model
test_eq(sorted(_o["planted"]["auroc"]), ["eap", "ifr", "random", "weight_norm", "zero_weights"])

# %% [markdown]
# ## The `full` profile: GPT-2 small on MIB's IOI data
#
# With `model_names = ["gpt2"]` (the `full` profile) the circuit track runs on the paper's smallest model instead of
# the toy: GPT-2 small, loaded with transformers from the local Hugging Face cache (`CausalLM`, float32, on
# `device`), its weights copied into `trustlib.models.TinyTransformer` (`TinyTransformer.from_gpt2`), so that the
# *same* graph model, hook points, attribution methods and circuit evaluation as above run on GPT-2's edge graph:
# 1 + 12 × 13 = 157 forward nodes, 445 slots and **32,491 edges**. The adapter's logits are checked against the
# transformers model's at the start of every run (`gpt2/adapter_max_abs_logit_gap`), and below on a random GPT-2.
#
# - **Data.** MIB's IOI dataset (`mib-bench/ioi`; a local copy under `data_dir()/hf/mib-bench/ioi/<split>.jsonl`
#   with the hub's fields, else the hub through `datasets`): attribution prompts from the `train` split, evaluation
#   prompts from `validation`. The fields read are those of MIB's rows — `prompt`, `choices`, `answerKey`, `metadata`
#   (`subject`, `indirect_object`) and the counterfactual columns `s2_io_flip_counterfactual` / `abc_counterfactual`
#   (each a row with its own `prompt`); these names come from third-party code that reads the dataset, not from its
#   card. When the dataset is not available, IOI prompts in the same format are generated from the templates above
#   (`template_ioi_records`; the `metrics` say which: `data/from_mib_bench`).
# - **Tokens.** A prompt is GPT-2's BOS token followed by the prompt's tokens (as TransformerLens prepends it); the
#   label pair is the first token of " " + indirect object and of " " + subject. The graph runs unpadded batches, so
#   only pairs whose clean and counterfactual prompts have the same length are kept, at the most common length (MIB
#   pads and reads the last real token instead).
# - **Methods.** Every method of `methods` on `n_attr` prompts; exact activation patching on a random sample of
#   `exact_edges` edges only (each edge is its own forward pass), so it has no circuits here and serves as the causal
#   reference of the rank correlations, computed on that sample. Circuits of the ten sizes are evaluated on `n_eval`
#   prompts, with the counterfactual given by `corruption` (`s2_io_flip` in the `full` profile, as MIB's circuit
#   track uses for IOI).
# - **Repetitions.** `n_seeds` independent samples of attribution and evaluation prompts (and of the random
#   scores, the mask noise and the exact-patching edges); the claims are paired over them. The planted-circuit AUROC
#   (InterpBench's model) is not run; the causal-variable track runs in miniature as in the `cpu` profile.

# %%
#| export
MIB_IOI = "mib-bench/ioi"
MIB_COUNTERFACTUAL = dict(abc="abc_counterfactual", s2_io_flip="s2_io_flip_counterfactual")

def load_gpt2(name:str="gpt2", device:str="auto") -> tuple:
    "(tokenizer, `TinyTransformer` with the weights of GPT-2 checkpoint `name` (hub id in the local cache, or a folder), the transformers model), float32 on `device`."
    from trustlib.models import CausalLM
    if device == "cuda" and not torch.cuda.is_available(): raise ResourceUnavailable("parameter 'device' is 'cuda', but no CUDA device is available")
    dev = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
    lm = CausalLM(name, device=dev, dtype=torch.float32).load()
    hf = lm.model
    if type(hf).__name__ != "GPT2LMHeadModel": raise ConfigError(f"{name!r} loads as {type(hf).__name__}; the graph adapter covers GPT2LMHeadModel only")
    tm = TinyTransformer.from_gpt2(hf).eval()
    for p in tm.parameters(): p.requires_grad_(False)
    return lm.tokenizer, tm, hf

@torch.no_grad()
def adapter_gap(hf, gm:GraphModel, tokens) -> float:
    "Largest |logit difference| between the transformers model and the graph model (every edge kept) on `tokens` `[B, T]`."
    return float((hf(input_ids=tokens).logits.float() - gm(tokens)).abs().max())

def mib_ioi_records(split:str) -> list[dict]|None:
    "Rows of MIB's IOI `split` (a local copy under `data_dir()/hf/mib-bench/ioi`, else the hub through `datasets`); None when unavailable."
    from trustlib.config import MissingDependency
    from trustlib.calibration.label_smoothing import load_records
    try: return load_records(f"{MIB_IOI}@{split}")
    except (ResourceUnavailable, ConfigError, MissingDependency): return None

def template_ioi_records(n:int, rng:np.random.Generator) -> list[dict]:
    "`n` IOI rows in MIB's format (prompt, choices, answerKey, metadata and the counterfactual rows) from this notebook's templates, as natural text."
    rows = []
    for _ in range(n):
        t = int(rng.integers(2 * len(FRAMES))); f, order = FRAMES[t // 2], t % 2
        A, B, C = (str(x) for x in rng.choice(NAMES, 3, replace=False)); P, O = str(rng.choice(PLACES)), str(rng.choice(OBJECTS))
        X, Y = (A, B) if order == 0 else (B, A)
        text = lambda S: f.format(X=X, Y=Y, S=S, P=P, O=O).replace(" ,", ",")
        row = lambda S, io, s: dict(prompt=text(S), choices=[io, s], answerKey=0, metadata=dict(subject=s, indirect_object=io, object=O, place=P))
        rows.append(dict(row(B, A, B), abc_counterfactual=row(C, A, C), s2_io_flip_counterfactual=row(A, B, A)))
    return rows

def ioi_tokens(records:list[dict], tok, corruption:str="s2_io_flip", length:int|None=None) -> tuple[IOIData, dict]:
    """MIB IOI rows as `IOIData`: BOS + prompt token ids `[N, T]`, the counterfactual of `corruption`, labels (first token of " " + indirect
    object, of " " + subject). Kept: pairs of equal length whose two labels differ, at `length` tokens (None: the most common). Also what was kept."""
    from collections import Counter
    col = MIB_COUNTERFACTUAL[corruption]
    bos = [tok.bos_token_id] if tok.bos_token_id is not None else []
    ids = lambda text: bos + tok(text, add_special_tokens=False)["input_ids"]
    first = lambda name: tok(" " + str(name).strip(), add_special_tokens=False)["input_ids"][0]
    rows = []
    for r in records:
        m, cf = r.get("metadata") or {}, r.get(col) or {}
        if not cf.get("prompt"): continue
        key = int(r.get("answerKey", 0)); ch = r.get("choices") or ["", ""]
        io, s = m.get("indirect_object") or ch[key], m.get("subject") or ch[1 - key]
        c, k, y = ids(r["prompt"]), ids(cf["prompt"]), (first(io), first(s))
        if len(c) == len(k) and y[0] != y[1]: rows.append((c, k, y))
    if not rows: raise ConfigError(f"no IOI row has a {col} prompt of its own length and two distinct answer tokens")
    T = Counter(len(c) for c, _, _ in rows).most_common(1)[0][0] if length is None else int(length)
    rows = [r for r in rows if len(r[0]) == T]
    if not rows: raise ConfigError(f"no IOI row has {T} tokens")
    data = IOIData(torch.tensor([r[0] for r in rows]), torch.tensor([r[1] for r in rows]), torch.tensor([r[2] for r in rows]), np.zeros(len(rows), dtype=int))
    return data, dict(rows=len(records), kept=len(rows), tokens=T)

def _take(data:IOIData, idx, device) -> IOIData:
    "Rows `idx` of `data`, on `device`."
    i = torch.as_tensor(np.asarray(idx), dtype=torch.long)
    return IOIData(data.clean[i].to(device), data.corrupt[i].to(device), data.labels[i].to(device), data.template[np.asarray(idx)])


# %% [markdown]
# The adapter on a randomly initialised transformers GPT-2 (two layers): the graph model built on
# `TinyTransformer.from_gpt2` gives the transformers model's logits, patching every edge gives its logits on the
# counterfactual prompts, and the template rows, tokenized by a word-level tokenizer with a BOS token, line up:
# the counterfactual differs from the clean prompt in the one S2 token, and the labels are the two names.

# %%
import transformers

# %%
from tokenizers import Tokenizer, models as tk_models, pre_tokenizers

# %%
_hf = transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=80, n_layer=2, n_head=2, n_embd=16, n_positions=32, bos_token_id=0, eos_token_id=0)).eval()
_ggm = GraphModel(TinyTransformer.from_gpt2(_hf).eval())
test_eq((_ggm.graph.n_edges, n_edges(12, 12)), (n_edges(2, 2), 32491))
_words = ["<bos>", "<unk>", ","] + list(ioi_vocab())[1:]
_wtok = transformers.PreTrainedTokenizerFast(tokenizer_object=Tokenizer(tk_models.WordLevel({w: i for i, w in enumerate(_words)}, unk_token="<unk>")),
                                             bos_token="<bos>", unk_token="<unk>")
_wtok.backend_tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
_recs = template_ioi_records(12, np.random.default_rng(0))
_gd, _info = ioi_tokens(_recs, _wtok, "s2_io_flip")
test_eq(_info, dict(rows=12, kept=12, tokens=15))                                   # BOS + the 14 tokens of a template
test_eq((_gd.clean != _gd.corrupt).sum(1).tolist(), [1] * 12)                        # the flip changes S2 only
test_eq(_gd.labels[0].tolist(), [_words.index(_recs[0]["metadata"]["indirect_object"]), _words.index(_recs[0]["metadata"]["subject"])])
test_eq(_gd.corrupt[:, 10], _gd.labels[:, 0])                                        # S2 is now the indirect object
with torch.no_grad():
    assert adapter_gap(_hf, _ggm, _gd.clean) < 1e-4                                 # the graph model is the transformers model
    _gG = _ggm.graph
    test_close(_ggm(_gd.clean, mask=torch.zeros(_gG.n_fwd, _gG.n_bwd), corrupt=node_acts(_ggm, _gd.corrupt)), _hf(input_ids=_gd.corrupt).logits, eps=1e-4)
test_fail(lambda: load_gpt2("no-such-org/no-such-gpt2", "cpu"), contains="could not be loaded")


# %% [markdown]
# `hub_circuit_seed` runs one prompt sample: every method on the attribution prompts (exact patching on the edge
# sample), the CPR and CMD circuits of every size on the evaluation prompts, EAP-IG with mean ablation (the mean
# over other training prompts), and the rank correlations with exact patching on the sampled edges. `run_hub` is
# the whole `full` run.

# %%
#| export
def hub_circuit_seed(cfg:Config, gm:GraphModel, train:IOIData, val:IOIData, seed:int) -> dict:
    "One prompt sample of the circuit track on a hub model: curves, rank correlations with exact patching (on an edge sample), CPU seconds."
    import time
    from scipy.stats import spearmanr
    g, dev = gm.graph, gm.model.W_U.device
    rng = np.random.default_rng(derive_seed(seed, "prompts"))
    ia = rng.permutation(len(train)); attr = _take(train, ia[:cfg.n_attr], dev)
    rest = ia[cfg.n_attr:2 * cfg.n_attr]
    ref = _take(train, rest if len(rest) else ia[:cfg.n_attr], dev).clean          # mean-ablation reference: other training prompts
    ev = _take(val, rng.permutation(len(val))[:cfg.n_eval], dev)
    mN, m0 = (float(x) for x in circuit_metric(gm, ev, [g.valid, torch.zeros_like(g.valid)]))
    with torch.no_grad(): ld = logit_diff(gm(ev.clean), ev.labels, per_example=True)
    out = dict(seed=seed, acc=float((ld > 0).float().mean()), train_steps=None, m_full=mN, m_empty=m0, n_attr=len(attr), n_eval=len(ev),
               curves=[], scores={}, seconds={})
    sample = None
    if cfg.exact_edges and cfg.exact_edges < g.n_edges:
        v = torch.zeros(g.n_edges, dtype=torch.bool); v[torch.as_tensor(rng.choice(g.n_edges, cfg.exact_edges, replace=False))] = True
        sample = g.to_matrix(v)
    cache, D = {}, gm.model.d_model
    chunk = int(np.clip(2**30 // (4 * len(ev) * ev.clean.shape[1] * g.n_fwd * D), 1, 20))   # circuits per evaluation pass: ~1 GiB of node outputs
    for method in cfg.methods:
        t0 = time.process_time()
        with torch.enable_grad():
            if method == "exact": S = exact_patching(gm, attr, chunk=512, only=sample)
            elif method == "ifr": S = ifr(gm, attr, batch_size=1)      # its [B, T, n_fwd, n_bwd, D] proximity tensor: one prompt at a time
            else: S = score_edges(method, gm, attr, cfg, seed)
        out["seconds"][method] = time.process_time() - t0
        out["scores"][method] = S
        if method != "exact" or sample is None: out["curves"] += _curves(gm, ev, method, S, mN, m0, seed, cache=cache, chunk=chunk)
    if cfg.mean_ablation: out["curves"] += _mean_curves(gm, cfg, attr, ev, ref, seed, chunk=chunk)
    if "exact" in out["scores"]:
        sel = g.valid if sample is None else sample
        ex = out["scores"]["exact"][sel]
        out["rho"] = {m: float(spearmanr(S[sel], ex).statistic) for m, S in out["scores"].items() if m not in ("nap", "exact")}
    out["exact_edges"] = int(sel.sum()) if "exact" in out["scores"] else 0
    del out["scores"]
    return out

def run_hub(cfg:Config, progress:bool=True) -> "Result":
    "The `full` run: the circuit track on GPT-2 small (MIB's IOI data or template prompts) and the causal-variable track in miniature."
    import pandas as pd
    from tqdm.auto import tqdm
    tok, tm, hf = load_gpt2(cfg.model_names[0], cfg.device)
    gm = GraphModel(tm); dev = tm.W_U.device
    recs = {sp: mib_ioi_records(sp) for sp in ("train", "validation")}
    source = MIB_IOI if all(recs.values()) else "templates"
    if source == "templates":
        rng = np.random.default_rng(derive_seed(cfg.seed, "ioi-templates"))
        recs = {sp: template_ioi_records(max(2000, 3 * (cfg.n_attr + cfg.n_eval)), rng) for sp in recs}
    T = ioi_tokens(recs["train"] + recs["validation"], tok, cfg.corruption)[1]["tokens"]      # one length for both splits (mean ablation mixes them)
    (train, i_tr), (val, i_va) = (ioi_tokens(recs[sp], tok, cfg.corruption, T) for sp in ("train", "validation"))
    gap = adapter_gap(hf, gm, val.clean[:8].to(dev)); del hf
    seeds, curves, cv_rows, cv_acc = [], [], [], []
    with torch_threads(cfg.n_threads):
        for i in tqdm(range(cfg.n_seeds), desc="prompt samples", disable=not progress):
            s = derive_seed(cfg.seed, i)
            o = hub_circuit_seed(cfg, gm, train, val, s); seeds.append(o); curves += o["curves"]
            rows, acc = causal_track(s, n_train=cfg.cv_n_train, epochs=cfg.cv_epochs, n_pairs=cfg.cv_pairs, int_epochs=cfg.cv_int_epochs,
                                     das_ks=cfg.das_ks, sae_latents=cfg.sae_latents, sae_k=cfg.sae_k, sae_steps=cfg.sae_steps, dbm_lamb=cfg.dbm_lamb)
            cv_rows += rows; cv_acc.append(acc)
    curves, cv = pd.DataFrame(curves), pd.DataFrame(cv_rows)
    tab = scores_table(curves)
    metrics = measurements(cfg, tab, seeds, cv, cv_acc)
    metrics.update({"gpt2/adapter_max_abs_logit_gap": gap, "gpt2/n_edges": gm.graph.n_edges, "data/from_mib_bench": float(source == MIB_IOI),
                    "data/prompt_tokens": i_tr["tokens"], "data/train_pairs": i_tr["kept"], "data/validation_pairs": i_va["kept"],
                    "exact/sampled_edges": int(np.mean([s["exact_edges"] for s in seeds]))})
    tables = make_tables(tab, curves, seeds, cv)
    tables["data"] = pd.DataFrame([dict(split=sp, source=source, rows=i["rows"], kept=i["kept"], tokens=i["tokens"]) for sp, i in (("train", i_tr), ("validation", i_va))])
    return Result(paper="mib", config=cfg.to_dict(), metrics=metrics, tables=tables, figures=make_figures(curves, tab, cv, seeds))


# %% [markdown]
# ## From runs to measurements
#
# `measurements` turns the per-seed records into the metrics the claims read: per-seed lists of every
# method's CPR and CMD (`cpr/<method>`, `cmd/<method>`; mean ablation under `cmd_mean/`), of the rank
# correlation with exact patching (`rho/<method>`), of the planted-circuit AUROC (`auroc/<scorer>`) and its
# premise checks (`planted/…`), and of the causal-variable gaps (`iia_gap/…`); the conditions on the trained
# models are the worst seed (`condition/…`). A key whose method was not run is `None` (not measured).

# %%
#| export
def scores_table(curves) -> "pd.DataFrame":
    "Per seed, method and ablation: CPR (signed-score circuits) and CMD (absolute-score circuits)."
    import pandas as pd
    rows = []
    for (seed, method, abl), grp in curves.groupby(["seed", "method", "ablation"], sort=False):
        c = grp[grp.kind == "cpr"].sort_values("size"); d = grp[grp.kind == "cmd"].sort_values("size")
        rows.append(dict(seed=seed, method=method, ablation=abl, cpr=cpr(c.f.to_numpy()), cmd=cmd(d.f.to_numpy())))
    return pd.DataFrame(rows)

def _per_seed(tab, method, col, ablation="counterfactual", seeds=()):
    "Values of `col` for `method` in seed order, or None if the method was not run."
    t = tab[(tab.method == method) & (tab.ablation == ablation)].set_index("seed")[col] if len(tab) else None
    return None if t is None or not len(t) else [float(t[s]) for s in seeds]

def _cv_gaps(cv) -> dict:
    "Per seed, averaged over V1 and V2 at the best layer: best DAS − best other featurizer, and DBM SAE − DBM neurons."
    best = cv.groupby(["seed", "variable", "method"], sort=False).iia.max().reset_index()
    das = best[best.method.str.startswith("DAS")].groupby(["seed", "variable"], sort=False).iia.max()
    other = best[~best.method.str.startswith("DAS")].groupby(["seed", "variable"], sort=False).iia.max()
    sae, neu = (best[best.method == m].set_index(["seed", "variable"]).iia for m in ("DBM SAE", "DBM neurons"))
    g = lambda s: [float(v) for v in s.groupby(level=0, sort=False).mean()]
    return {"iia_gap/das": g(das - other), "iia_gap/sae_vs_neurons": g(sae - neu),
            **{f"iia/{n.lower().replace(' ', '_').replace('=', '')}": float(x.iia.mean()) for n, x in best.groupby("method")}}

def measurements(cfg:Config, tab, seeds:list[dict], cv, cv_acc:list[float]) -> dict:
    "The metrics the claims read (per-seed lists in seed order; `None` where a method was not run)."
    order = [s["seed"] for s in seeds]
    M = {f"{c}/{m}": _per_seed(tab, m, c, seeds=order) for m in METHODS for c in ("cmd", "cpr")}
    M.update({f"{c}_mean/eap_ig_inputs": _per_seed(tab, "eap_ig_inputs", c, "mean", order) for c in ("cmd", "cpr")})
    M.update({f"rho/{m}": [s["rho"][m] for s in seeds] if all(m in s.get("rho", {}) for s in seeds) else None
              for m in METHODS if m not in ("nap", "exact")})
    pl = [s["planted"] for s in seeds if "planted" in s] if cfg.planted else []
    for k in (*PLANTED_METHODS, "zero_weights", "weight_norm"):
        M[f"auroc/{k}"] = [p["auroc"][k] for p in pl] if pl and all(k in p["auroc"] for p in pl) else None
    for k in ("acc", "acc_resampled", "f_truth", "live_ratio", "norm_ratio", "min_live_ratio"):
        M[f"planted/{k}"] = [p[k] for p in pl] if pl else None
    M["planted/min_acc"] = min(p["acc"] for p in pl) if pl else None
    M["condition/min_accuracy"] = min(s["acc"] for s in seeds)
    M["condition/min_effect"] = min(s["m_full"] - s["m_empty"] for s in seeds)
    M["condition/cv_min_accuracy"] = min(cv_acc) if cv_acc else None
    M.update(_cv_gaps(cv) if len(cv) else {"iia_gap/das": None, "iia_gap/sae_vs_neurons": None})
    cf = tab[tab.ablation == "counterfactual"]
    if "exact" in cfg.methods and len(cf) and (cf.method == "exact").any():
        others = cf[cf.method != "random"].groupby("method")
        M["rank/exact_cmd"] = int(others.cmd.mean().rank().loc["exact"]); M["rank/exact_cpr"] = int(others.cpr.mean().rank(ascending=False).loc["exact"])
        M["rank/n_methods"] = int(others.ngroups)
    for m in cfg.methods: M[f"speed/{m}_cpu_seconds"] = float(np.mean([s["seconds"][m] for s in seeds]))
    return M


# %% [markdown]
# ## The claims, declared before the run
#
# Each claim names the metrics it reads and its rule; `trustlib.results.grade` turns the measurements into
# verdicts. Differences between methods are paired over seeds and graded on their 95 % t-interval, so one seed
# is always inconclusive. *Among the best* means: clearly better than random, and no other method (random
# excepted) has a CMD lower by 0.05 or more — each of those gaps an interval wholly below 0.05. Every circuit
# claim needs the condition the paper's experiment depends on: the trained model solves IOI (held-out accuracy
# ≥ 0.95 at every seed) and the counterfactual removes the behaviour (m(N) − m(∅) > 1 logit at every seed).
# The planted-circuit claim needs its premise: the planted model solves IOI, the true circuit alone is faithful
# (the off-circuit components do not matter: f ≥ 0.9), the off-circuit components are live (their
# counterfactual change is at least a tenth of the circuit components'), and the circuit cannot be read off
# the weights (the zero-weight scorer's AUROC is at most 0.7). The causal-variable claims need the MLP to
# solve the task (accuracy ≥ 0.95).

# %%
#| export
from trustlib.results import Result, Claim, Change, Above, Below, AtLeast, AtMost, Diff, AllOf

METHOD_NAMES = dict(random="random", eap="EAP", eap_ig_inputs="EAP-IG-inputs", eap_ig_activations="EAP-IG-activations", clean_corrupted="clean-corrupted",
             nap="NAP", exact="exact patching", ifr="IFR", mask="learned mask")
GRADIENT_METHODS = ("eap", "eap_ig_inputs", "eap_ig_activations", "clean_corrupted")
IOI_SOLVED = (AtLeast("condition/min_accuracy", 0.95, what="lowest held-out IOI accuracy over seeds"),
              Above("condition/min_effect", 1.0, what="smallest m(N) − m(∅) over seeds (logits)"))
CV_SOLVED = (AtLeast("condition/cv_min_accuracy", 0.95, what="lowest hierarchical-equality accuracy of the MLP over seeds"),)
PLANTED_PREMISE = (AtLeast("planted/min_acc", 0.95, what="lowest IOI accuracy of the planted model over seeds"),
                   AtLeast("planted/f_truth", 0.9, what="faithfulness of the true circuit (off-circuit components patched)"),
                   AtLeast("planted/live_ratio", 0.1, what="counterfactual change of off-circuit components relative to circuit components"),
                   AtMost("auroc/zero_weights", 0.7, what="AUROC of the scorer that reads which weights are zero"))
PAPER_CMD = "IOI GPT-2 CMD: random 0.75, EAP 0.03, EAP-IG-inputs 0.03, EAP-IG-activations 0.03, NAP 0.38, IFR 0.42, UGS 0.03 (secondary summary, unverified)"
TODAY = "2026-12-01"

def _text(rule) -> str:
    "A rule's text as a claim states it (for change-log entries)."
    return Claim("x", "x", "x", rule).rule_text()

def among_the_best(method:str, exclude=()) -> AllOf:
    "Clearly better than random on CMD, and no other method's CMD (but those in `exclude`) lower by 0.05 or more."
    return AllOf(Above(Diff("cmd/random", f"cmd/{method}"), 0.3, 0.0, what=f"CMD(random) − CMD({METHOD_NAMES[method]})"),
                 *[Below(Diff(f"cmd/{method}", f"cmd/{o}"), 0.05, what=f"CMD({METHOD_NAMES[method]}) − CMD({METHOD_NAMES[o]})")
                   for o in METHODS if o not in ("random", method, *exclude)])

_LEGACY_BEST = ("reproduced if CMD(random) − CMD({w}) > 0.3; partially if CMD(random) − CMD({w}) > 0; interval must clear the threshold; "
                "reproduced also needs mean CMD({m}) within 0.05 of the best method's; inconclusive if the gap is, or if the IOI condition fails")

CLAIMS = [
    Claim("eap_ig_best", "Edge attribution patching with integrated gradients (EAP-IG-inputs) is among the best circuit-localisation methods",
          PAPER_CMD, among_the_best("eap_ig_inputs"), requires=IOI_SOLVED, headline=True,
          reason="CMD over 10 circuit sizes on a 3-layer IOI model, paired over seeds",
          ours="CMD: EAP-IG-inputs {cmd/eap_ig_inputs:.3f}; random {cmd/random:.3f}; EAP {cmd/eap:.3f}; EAP-IG-activations {cmd/eap_ig_activations:.3f}; "
               "clean-corrupted {cmd/clean_corrupted:.3f}; NAP {cmd/nap:.3f}; exact {cmd/exact:.3f}; IFR {cmd/ifr:.3f}; mask {cmd/mask:.3f}",
          log=[Change(TODAY, _LEGACY_BEST.format(w="EAP-IG", m="eap_ig_inputs"), _text(among_the_best("eap_ig_inputs")),
                      "'within 0.05 of the best' compared point means with a method picked after the run; now every gap to another method is "
                      "an interval, a method significantly better by 0.05 makes the claim not reproduced, and 8 seeds instead of 3")]),
    Claim("cpr_vs_random", "EAP-IG's circuits beat random circuits on CPR", "IOI GPT-2 CPR: random 0.25, EAP-IG-inputs 1.85 (third-party transcription)",
          Above(Diff("cpr/eap_ig_inputs", "cpr/random"), 0.3, 0.0, what="CPR(EAP-IG-inputs) − CPR(random)"), requires=IOI_SOLVED,
          reason="our CPR stays below 1 where GPT-2's exceeds 1; the comparison is the gap to random"),
    Claim("ig_vs_eap", "EAP-IG-inputs is at least as good as EAP", "CMD 0.03 vs 0.03 on IOI GPT-2; EAP-IG better on other tasks (secondary)",
          Above(Diff("cmd/eap", "cmd/eap_ig_inputs"), 0.01, 0.0, what="CMD(EAP) − CMD(EAP-IG-inputs)"), requires=IOI_SOLVED,
          reason="CMD, paired over seeds"),
    Claim("edge_vs_node", "Edge-level circuits beat node-level circuits at equal edge budget", "CMD: EAP 0.03 vs NAP 0.38 (secondary)",
          Above(Diff("cmd/nap", "cmd/eap"), 0.05, 0.0, what="CMD(NAP) − CMD(EAP)"), requires=IOI_SOLVED,
          reason="the same EAP gradients scored per edge or per node"),
    Claim("ifr_between", "Information-flow routes trail the causal methods but beat random", "CMD: IFR 0.42 vs EAP-IG 0.03 and random 0.75 (secondary)",
          AllOf(Above(Diff("cmd/ifr", "cmd/eap_ig_inputs"), 0.05, 0.0, what="CMD(IFR) − CMD(EAP-IG-inputs)"),
                Above(Diff("cmd/random", "cmd/ifr"), 0.05, 0.0, what="CMD(random) − CMD(IFR)")), requires=IOI_SOLVED,
          reason="IFR circuits grown greedily from the logits"),
    Claim("mask_best", "Mask optimisation (UGS) is among the best circuit-localisation methods", "CMD 0.03 on IOI GPT-2 (secondary)",
          among_the_best("mask"), requires=IOI_SOLVED, reason="a sigmoid-gated edge mask with an L1 penalty stands in for UGS",
          log=[Change(TODAY, _LEGACY_BEST.format(w="mask", m="mask"), _text(among_the_best("mask")),
                      "as for EAP-IG: every gap to another method is an interval, and a significantly better method is against the claim")]),
    Claim("cf_vs_mean", "Counterfactual ablations beat mean ablations", "reported across methods in the paper (abstract-level claim)",
          Above(Diff("cmd_mean/eap_ig_inputs", "cmd/eap_ig_inputs"), 0.05, 0.0, what="CMD(EAP-IG, mean) − CMD(EAP-IG, counterfactual)"),
          requires=IOI_SOLVED, reason="EAP-IG with mean ablation in discovery and evaluation; faithfulness against each ablation's own empty circuit"),
    Claim("planted_auroc", "Circuit discovery recovers a planted circuit (InterpBench AUROC)", "AUROC on InterpBench's IOI model (values not recorded here)",
          Above("auroc/eap_ig_inputs", 0.9, 0.5, what="AUROC(EAP-IG-inputs)"), requires=PLANTED_PREMISE,
          reason="a circuit planted by strict interchange training (off-circuit components live but resampled in training); greedy circuits as in MIB",
          ours="AUROC: EAP-IG-inputs {auroc/eap_ig_inputs:.3f}; EAP {auroc/eap:.3f}; IFR {auroc/ifr:.3f}; random {auroc/random:.3f}; "
               "zero-weight scorer {auroc/zero_weights:.3f}; weight-norm scorer {auroc/weight_norm:.3f}",
          log=[Change(TODAY, "reproduced if AUROC(EAP-IG) > 0.9; partially if AUROC(EAP-IG) > 0.5; interval must clear the threshold",
                      _text(Above("auroc/eap_ig_inputs", 0.9, 0.5, what="AUROC(EAP-IG-inputs)")),
                      "the old planted model silenced off-circuit components by zeroing their output weights, so a scorer reading the zeros "
                      "matched every gradient method (0.953, no spread) and the check could not fail; the circuit is now trained in with live "
                      "off-circuit components, the premise is a condition, and circuits are built greedily as in MIB's AUROC")]),
    Claim("rank_corr", "Attribution patching (EAP and its integrated-gradient variants) ranks edges like exact activation patching",
          "EAP and EAP-IG are gradient approximations of activation patching, which MIB also runs exactly (EActP); no correlation is reported",
          AllOf(*[Above(f"rho/{m}", 0.5, 0.0, what=f"Spearman ρ({METHOD_NAMES[m]}, exact patching)") for m in GRADIENT_METHODS]), requires=IOI_SOLVED,
          reason="Spearman correlation over all edge scores with exact patching on the same prompts; a claim the benchmark rests on, added here"),
    Claim("das_best", "Supervised DAS localises causal variables best", "DAS best across tasks and models (e.g. ARC-E Gemma-2 ≈ 94 best layer; secondary)",
          Above("iia_gap/das", 0.02, 0.0, what="IIA(best DAS) − IIA(best other featurizer)"), requires=CV_SOLVED,
          reason="hierarchical equality on an MLP, best layer per method, averaged over V1 and V2"),
    Claim("sae_no_better", "SAE features are no better than raw neurons for causal variables", "DBM+SAE ≈ DBM on neurons (abstract)",
          Below("iia_gap/sae_vs_neurons", 0.02, 0.05, what="IIA(DBM SAE) − IIA(DBM neurons)"), requires=CV_SOLVED,
          reason="a TopK SAE trained on the layer's activations, error term kept"),
    Claim("exact_not_best", "Exact activation patching is not always the best method (it scores edges one at a time)",
          "reported in the paper's discussion (secondary)", status="illustrated",
          ours="exact patching ranks {rank/exact_cmd} of {rank/n_methods} by mean CMD and {rank/exact_cpr} by mean CPR",
          reason="a ranking shown for information; with a few hundred edges exact patching is affordable and is the causal reference of the rank correlations"),
    Claim("full_models", "The benchmark's results on GPT-2 small, Qwen-2.5-0.5B, Gemma-2-2B and Llama-3.1-8B (IOI, MCQA, arithmetic, ARC, RAVEL)",
          "the paper's CPR/CMD/IIA tables", status="not_testable_offline",
          reason="needs the hub models and the MIB datasets (downloads); the full profile asks for them"),
]

# %% [markdown]
# ### The claims of the `full` profile (GPT-2 small)
#
# In the `full` profile the circuit claims are graded on GPT-2's measurements instead (`FULL_CLAIMS`, declared here,
# before any run): the same rules, paired over the prompt samples, with the condition the paper's experiment needs on
# GPT-2 — the model prefers the indirect object to the subject on at least 90 % of the evaluation prompts of every
# sample, and the counterfactual moves the logit difference by more than 1. Exact patching runs on a sample of
# edges, so it has no circuits and leaves the "among the best" comparisons; the planted-circuit claim needs
# InterpBench's model, which this path does not load. The causal-variable claims are the miniature ones above.

# %%
#| export
import dataclasses

GPT2_IOI = (AtLeast("condition/min_accuracy", 0.9, what="lowest share of evaluation prompts on which GPT-2 ranks the indirect object above the subject, over prompt samples"),
            Above("condition/min_effect", 1.0, what="smallest m(N) − m(∅) over prompt samples (logits)"))
_FULL_WHY = ("GPT-2 small (transformers weights through the graph adapter) on MIB's IOI prompts, 32,491 edges; paired over independent "
             "samples of attribution and evaluation prompts")

def _on_gpt2(c:Claim, **changes) -> Claim:
    "Claim `c` graded on the full profile's GPT-2 measurements (its rule unless changed, the GPT-2 condition, no change log of its own)."
    return dataclasses.replace(c, requires=GPT2_IOI, reason=changes.pop("reason", _FULL_WHY), log=(), **changes)

_BY_ID = {c.id: c for c in CLAIMS}
FULL_CLAIMS = [
    _on_gpt2(_BY_ID["eap_ig_best"], rule=among_the_best("eap_ig_inputs", exclude=("exact",)),
             ours="CMD: EAP-IG-inputs {cmd/eap_ig_inputs:.3f}; random {cmd/random:.3f}; EAP {cmd/eap:.3f}; EAP-IG-activations {cmd/eap_ig_activations:.3f}; "
                  "clean-corrupted {cmd/clean_corrupted:.3f}; NAP {cmd/nap:.3f}; IFR {cmd/ifr:.3f}; mask {cmd/mask:.3f}"),
    *[_on_gpt2(_BY_ID[i]) for i in ("cpr_vs_random", "ig_vs_eap", "edge_vs_node", "ifr_between")],
    _on_gpt2(_BY_ID["mask_best"], rule=among_the_best("mask", exclude=("exact",))),
    _on_gpt2(_BY_ID["cf_vs_mean"], reason=_FULL_WHY + "; mean ablation over other training prompts, faithfulness against its own empty circuit"),
    _on_gpt2(_BY_ID["rank_corr"], reason=_FULL_WHY + "; Spearman correlation with exact patching on a random sample of `exact_edges` edges (same prompts)"),
    Claim("planted_auroc", _BY_ID["planted_auroc"].claim, _BY_ID["planted_auroc"].paper, status="not_testable_offline",
          reason="needs InterpBench's planted-circuit model from the hub, which the full profile does not load (the cpu profile grades a planted stand-in)"),
    _BY_ID["das_best"], _BY_ID["sae_no_better"],
    Claim("exact_not_best", _BY_ID["exact_not_best"].claim, _BY_ID["exact_not_best"].paper, status="illustrated",
          reason="on GPT-2 exact patching runs on a sample of edges only, so it builds no circuits to rank; its agreement with the gradient methods is rank_corr"),
    Claim("full_models", _BY_ID["full_models"].claim, _BY_ID["full_models"].paper, status="not_testable_offline",
          reason="GPT-2 small on IOI is run (the claims above); Qwen-2.5, Gemma-2, Llama-3.1, the other tasks and the causal-variable track on the "
                 "hub models are not"),
]

# %% [markdown]
# ### How each claim is judged

# %%
from trustlib.results import claims_table

# %%
claims_table(CLAIMS)

# %%
if cfg.model_names:   # the full profile's GPT-2 run: its claims table, declared above, grades this run
    CLAIMS = FULL_CLAIMS
    display(claims_table(CLAIMS))


# %% [markdown]
# ## `run`: the whole experiment

# %%
#| export
def run(cfg:Config, progress:bool=True) -> Result:
    "Run the MIB reproduction described by `cfg`: the circuit track (IOI, planted circuit; on GPT-2 with `model_names`) and the causal-variable track (hierarchical equality)."
    import pandas as pd
    from tqdm.auto import tqdm
    if cfg.model_names: return run_hub(cfg, progress)
    seeds, curves, cv_rows, cv_acc = [], [], [], []
    with torch_threads(cfg.n_threads):
        for i in tqdm(range(cfg.n_seeds), desc="seeds", disable=not progress):
            s = derive_seed(cfg.seed, i)
            o = circuit_seed(cfg, s); seeds.append(o); curves += o["curves"]
            rows, acc = causal_track(s, n_train=cfg.cv_n_train, epochs=cfg.cv_epochs, n_pairs=cfg.cv_pairs, int_epochs=cfg.cv_int_epochs,
                                     das_ks=cfg.das_ks, sae_latents=cfg.sae_latents, sae_k=cfg.sae_k, sae_steps=cfg.sae_steps, dbm_lamb=cfg.dbm_lamb)
            cv_rows += rows; cv_acc.append(acc)
    curves, cv = pd.DataFrame(curves), pd.DataFrame(cv_rows)
    tab = scores_table(curves)
    metrics = measurements(cfg, tab, seeds, cv, cv_acc)
    return Result(paper="mib", config=cfg.to_dict(), metrics=metrics, tables=make_tables(tab, curves, seeds, cv), figures=make_figures(curves, tab, cv, seeds))

def make_tables(tab, curves, seeds, cv) -> dict:
    "CPR/CMD per method, the trained models, the planted-circuit checks and AUROC, rank correlations, IIA and CPU seconds per method."
    import pandas as pd
    t = dict(scores=tab, curves=curves, cv_rows=cv,
             summary=tab.groupby(["method", "ablation"], sort=False)[["cpr", "cmd"]].agg(["mean", "std"]).round(3),
             models=pd.DataFrame([{k: s.get(k) for k in ("seed", "acc", "train_steps", "m_full", "m_empty")} for s in seeds]),
             timings=pd.DataFrame([s["seconds"] for s in seeds]).mean().rename("CPU seconds").round(2).to_frame())
    if len(cv): t["iia"] = cv.groupby(["variable", "layer", "method"], sort=False).iia.agg(["mean", "std"]).round(3).unstack(["variable", "layer"])
    if seeds and "rho" in seeds[0]: t["rank_correlation"] = pd.DataFrame([s["rho"] for s in seeds]).agg(["mean", "std"]).T.round(3)
    if seeds and "planted" in seeds[0]:
        t["planted"] = pd.DataFrame([{"seed": s["seed"], **{k: v for k, v in s["planted"].items() if k != "auroc"}} for s in seeds]).round(3)
        t["auroc"] = pd.DataFrame([s["planted"]["auroc"] for s in seeds]).agg(["mean", "std"]).T.round(3)
    return t

def make_figures(curves, tab, cv, seeds) -> dict:
    "Faithfulness curves, CPR/CMD per method, planted-circuit AUROC per scorer, IIA per featurizer and layer."
    import matplotlib.pyplot as plt, seaborn as sns, pandas as pd
    figs = {}
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, kind, title in zip(axes, ("cpr", "cmd"), ("signed scores (CPR circuits)", "absolute scores (CMD circuits)")):
        d = curves[(curves.kind == kind) & (curves.ablation == "counterfactual")].assign(pct=lambda t: 100 * t["size"])
        sns.lineplot(data=d, x="pct", y="f", hue="method", style="method", markers=True, errorbar="sd", ax=ax)
        ax.set_xscale("log"); ax.set_xlabel("circuit size (% of edges)"); ax.set_ylabel("faithfulness f(C)"); ax.set_title(title)
        ax.axhline(1, color="grey", lw=0.8, ls=":")
    axes[1].get_legend().remove(); fig.tight_layout(); figs["faithfulness"] = fig
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    t = tab.assign(label=lambda d: d.method + np.where(d.ablation == "mean", " (mean abl.)", ""))
    order = t.groupby("label").cmd.mean().sort_values().index
    for ax, col, lab in zip(axes, ("cpr", "cmd"), ("CPR (higher is better)", "CMD (lower is better)")):
        sns.barplot(data=t, y="label", x=col, order=order, errorbar="sd", ax=ax); ax.set_xlabel(lab); ax.set_ylabel("")
    fig.tight_layout(); figs["cpr_cmd"] = fig
    if seeds and "planted" in seeds[0]:
        au = pd.DataFrame([{"seed": s["seed"], **s["planted"]["auroc"]} for s in seeds]).melt(id_vars="seed", var_name="scorer", value_name="auroc")
        fig, ax = plt.subplots(figsize=(6.5, 3.4))
        with numpy_global_seed(0): sns.stripplot(data=au, y="scorer", x="auroc", ax=ax)   # seaborn jitters with numpy's global generator
        sns.pointplot(data=au, y="scorer", x="auroc", errorbar=("ci", 95), seed=0, color="k", markers="|", ax=ax)
        ax.set_xlabel("AUROC against the planted circuit (one dot per seed)"); ax.set_ylabel(""); ax.set_xlim(0, 1); ax.axvline(0.5, color="grey", ls=":")
        fig.tight_layout(); figs["planted"] = fig
    if len(cv):
        fig, ax = plt.subplots(figsize=(9, 3.8))
        sns.barplot(data=cv.assign(where=lambda d: d.variable.str.upper() + ", layer " + d.layer.astype(str)), x="where", y="iia", hue="method", errorbar="sd", ax=ax)
        ax.set_xlabel("causal variable and hidden layer"); ax.set_ylabel("interchange-intervention accuracy"); ax.set_ylim(0, 1)
        ax.legend(fontsize=8, ncol=4, loc="lower center"); fig.tight_layout(); figs["iia"] = fig
    plt.close("all")
    return figs


# %%
test_fail(lambda: run(Config.from_params("smoke", model_names=["gpt2", "gpt2"]), progress=False), contains="'model_names'")   # one hub model per run

# %% [markdown]
# ## The experiment
#
# One call runs both tracks for the chosen profile (`smoke` by default here; the committed page shows a
# `cpu` run: 8 seeds, the 3-layer, 4-head model with 262 edges, every method, 60 attribution and 60
# evaluation prompts, the planted circuit, and the causal-variable track with DAS k ∈ {1, 2, 4}).

# %%
from trustlib.results import run_experiment

# %%
result = run_experiment(run, cfg, CLAIMS)

# %% [markdown]
# The condition the circuit claims need: each seed's model solves IOI (held-out accuracy) and the
# counterfactual removes the behaviour (m(N) vs. m(∅), mean logit differences). `train_steps` is where
# early stopping ended training.

# %%
result.tables["models"]

# %% [markdown]
# CPR and CMD per method (mean and standard deviation over seeds), and the faithfulness curves behind them:

# %%
result.tables["summary"]

# %%
result.figures["faithfulness"]

# %%
result.figures["cpr_cmd"]

# %% [markdown]
# Spearman rank correlation of each method's edge scores with exact patching (mean and standard deviation
# over seeds):

# %%
result.tables.get("rank_correlation")

# %% [markdown]
# The planted circuit, per seed: the planted model's accuracy (clean, and with every off-circuit output
# resampled from another prompt), the faithfulness of the true circuit `f_truth` (1: nothing outside it
# matters), and how live the off-circuit components are — their mean output norm (`norm_ratio`) and mean
# counterfactual change (`live_ratio`, and the least live one, `min_live_ratio`), relative to the circuit
# components'. Then the AUROC of every scorer against the planted edges, including the two that read only
# the weights.

# %%
result.tables.get("planted")

# %%
result.tables.get("auroc")

# %%
result.figures.get("planted")

# %% [markdown]
# Causal-variable track: IIA per featurizer, variable and hidden layer (mean and standard deviation over
# seeds).

# %%
result.tables.get("iia")

# %%
result.figures.get("iia")

# %% [markdown]
# CPU seconds of each attribution method per seed (on `n_attr` prompts). `tools/bench_mib.py` measures
# EAP, EAP-IG-inputs and exact patching for 200 prompts on the same model separately, with interleaved
# repeats.

# %%
result.tables["timings"]

# %% [markdown]
# ## Paper vs. us

# %%
result.verdict_table()

# %% [markdown]
# The table is the verdict of the run shown on this page; the rules were fixed before the run. How to read
# it:
#
# - **Scale.** A 3-layer, 4-head model trained from scratch on our own IOI prompts, 262 edges, 60
#   prompts per method. The paper's CPR and CMD values come from GPT-2 and larger models; ours are of the
#   same kind (random circuits give CPR ≈ 0.25 and CMD ≈ 0.75 in both, which is what a curve that is 0 up to
#   the full circuit integrates to) but the other magnitudes are not comparable. The verdicts compare the
#   *ordering* of methods.
# - **What a small graph changes.** With 262 edges, exact patching of every edge is cheap and serves as the
#   causal reference of the rank correlations. Gaps that the paper sees between methods of the same family
#   (EAP vs. EAP-IG) may be within noise here; the intervals say so.
# - **Planted circuit.** The off-circuit components are trained, live and change with the input, but the
#   model was trained not to depend on them; the `planted` table shows, per seed, whether that premise
#   holds, and the zero-weight scorer shows that the circuit cannot be read off the weights. The circuit is
#   a set of components the task was confined to, not an algorithm the circuit was trained to implement
#   (InterpBench's IIT part), and some edges between circuit components may carry nothing, which caps every
#   scorer's AUROC below 1.
# - **Causal variables.** Hierarchical equality on an MLP is the classic DAS test bed; the MIB tasks and
#   models are not. The SAE is small and trained on few activations; "no better than neurons" is a
#   statement about this setup.
