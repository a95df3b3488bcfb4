# %% [markdown]
# # MIB: A Mechanistic Interpretability Benchmark
#
# > Circuit localisation (edge attribution, faithfulness integrated over circuit sizes) and causal-variable localisation (interchange interventions, DAS vs. masks over neurons, PCA and SAE features) on small models trained from scratch.

# %% [markdown]
# Mueller, Geiger, Wiegreffe, …, Belinkov (ICML 2025) propose MIB, a benchmark with two tracks. The
# **circuit-localisation track** asks for the subgraph of a model's computation graph (edges between
# embeddings, attention heads, MLPs and logits) that implements a task; a method produces a score per
# edge, circuits of 0.1 % to 100 % of the edges are built from the scores, and each circuit's
# faithfulness $f(C) = (m(C) - m(\emptyset)) / (m(N) - m(\emptyset))$ — the task metric with every edge
# outside the circuit patched from a counterfactual input — is integrated over the circuit sizes into the
# **CPR** (area under $f$, higher is better) and the **CMD** (area under $|1 - f|$, lower is better). The
# **causal-variable track** asks where a high-level causal variable lives: a featurizer maps a hidden
# vector into features, an interchange intervention swaps the selected features between a base and a
# source input, and the **interchange-intervention accuracy (IIA)** counts how often the model then
# gives the causal model's counterfactual answer. The paper finds that edge attribution patching with
# integrated gradients (EAP-IG) and mask optimisation do best on circuits, that edge-level circuits beat
# node-level ones, that counterfactual ablations beat mean ablations and that information-flow routes
# trail the causal methods; on causal variables, supervised DAS does best and SAE features are no better
# than raw neurons.
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
#   4-layer, 4-head, d = 64 transformer (`trustlib.models.TinyTransformer`) trained from scratch for each
#   seed. Its computation graph has the paper's structure — input, 16 heads with separate q/k/v input
#   slots, 4 MLPs, logits — and 479 edges, few enough for exact activation patching of every edge. All
#   the paper's method families are run: random, EAP, EAP-IG-inputs (5 steps), EAP-IG-activations,
#   clean-corrupted, node-level NAP, exact patching, information-flow routes (greedy) and a learned
#   continuous edge mask (a UGS-like stand-in), plus EAP-IG with mean instead of counterfactual ablation.
#   CPR and CMD over the paper's 10 circuit sizes, 3 seeds, 95 % intervals.
# - **Planted circuit instead of InterpBench:** after training, a subset of heads and MLPs is silenced
#   (output weights zero and frozen) and the model is fine-tuned; the edges between the surviving
#   components are the ground truth for the AUROC. This is a weaker ground truth than InterpBench's
#   SIIT-trained model: it only says which edges *can* matter, not which ones do.
# - **Causal-variable track, in miniature:** hierarchical equality (y = [(a = b) = (c = d)], variables
#   V1 = [a = b], V2 = [c = d]) on an MLP 16 → 64 → 64 → 2; IIA at both hidden layers for the full
#   vector, DBM over neurons, PCA + DBM, SAE + DBM (a TopK SAE of 256 latents with its error term kept)
#   and DAS with k ∈ {1, 2, 4}. The paper's IOI linear-parameter variant (scored by MSE) is not built.
# - **Not testable offline:** GPT-2 small, Qwen-2.5, Gemma-2, Llama-3.1 and the MIB datasets (hub
#   downloads; the `full` profile stops with a message). Our CPR/CMD magnitudes come from a 4-layer toy
#   model and are not comparable with the paper's tables; the verdicts compare the *ordering* of methods.
# - **Departures:** circuits are scored on 100 attribution and 100 evaluation prompts (MIB uses 100
#   training examples too); exact patching, EAP-IG-activations and the mask are run on the same 100
#   prompts; the learned mask is a sigmoid-gated mask with logistic noise and an L1 penalty, not the
#   authors' UGS code; the size axis of CPR/CMD is the nominal fraction of edges (before pruning).
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
from trustlib.config import BaseConfig, param, ConfigError, ResourceUnavailable, derive_seed, torch_threads
from trustlib.models import TinyTransformer, _affine

# %%
#| hide
from fastcore.test import test_eq, test_fail, test_close
import warnings
import pandas as pd
from trustlib.results import check_headline

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
planted: Optional[bool] = None  # run the planted-circuit AUROC (silence components, fine-tune, score against the surviving edges)
planted_steps: Optional[int] = None  # fine-tuning steps of the planted-circuit model
cv_n_train: Optional[int] = None  # hierarchical-equality training examples of the MLP
cv_epochs: Optional[int] = None  # MLP training epochs
cv_pairs: Optional[int] = None  # counterfactual pairs for training each intervention (as many again for its evaluation)
cv_int_epochs: Optional[int] = None  # training epochs of each DAS / DBM intervention
das_ks: Optional[list[int]] = None  # DAS subspace dimensions k
sae_latents: Optional[int] = None  # latents of the SAE featurizer
sae_k: Optional[int] = None  # active latents k of the TopK SAE
sae_steps: Optional[int] = None  # SAE training steps
dbm_lamb: Optional[float] = None  # L1 weight of the DBM masks
model_names: Optional[list[str]] = None  # hub models of the paper (full profile only; need downloads)
n_threads: Optional[int] = None  # torch CPU threads

# %% [markdown] tags=["injected-parameters"]
# **This page shows a run with** `profile = "cpu"` (run `cpu-bf21a9e8fb`, commit `cc26697`, 724 s, 2026-12-01). Running the notebook yourself uses the parameters cell above as written (the fast `smoke` profile unless you change it); `trustlib run mib --profile cpu` repeats the run shown here.

# %%
#| export
METHODS = ("random", "eap", "eap_ig_inputs", "eap_ig_activations", "clean_corrupted", "nap", "exact", "ifr", "mask")

@dataclass
class Config(BaseConfig):
    "Configuration of the MIB reproduction (IOI circuits on a tiny transformer; causal variables on an MLP)."
    n_seeds: int = param(1, "independent repetitions (model training, prompts, method randomness)", ge=1, max=20)
    n_layers: int = param(2, "transformer layers L of the IOI model", ge=1, max=12, le=48)
    n_heads: int = param(2, "attention heads H per layer", ge=1, max=12, le=64)
    d_model: int = param(32, "residual width D (divisible by n_heads)", ge=4, max=512, le=4096)
    d_mlp: int = param(128, "MLP width", ge=4, max=2048, le=16384)
    train_steps: int = param(30, "maximum training steps of the IOI model (fresh prompts every step; stops early at train_target accuracy)", ge=1, max=20000)
    train_target: float = param(0.99, "held-out accuracy at which training stops early", gt=0, le=1)
    batch_size: int = param(64, "IOI training batch size", ge=1, max=4096)
    lr: float = param(3e-3, "AdamW learning rate of the IOI model", gt=0, le=1)
    corruption: str = param("abc", "counterfactual prompts: abc (the repeated name replaced by a third name) or s2_io_flip", choices=("abc", "s2_io_flip"))
    n_attr: int = param(40, "prompts used by the attribution methods", ge=2, max=5000)
    n_eval: int = param(40, "prompts on which circuits are evaluated", ge=2, max=5000)
    ig_steps: int = param(5, "integration steps m of EAP-IG (MIB runs use 5)", ge=1, max=200)
    mask_steps: int = param(20, "optimisation steps of the learned edge mask", ge=1, max=5000)
    mask_lamb: float = param(1.0, "L1 weight of the learned edge mask (on the mean gate; the metric is normalised by the full model's)", ge=0, le=100)
    methods: tuple[str, ...] = param(METHODS, "circuit-discovery methods run", choices=METHODS)
    mean_ablation: bool = param(True, "also run EAP-IG with mean ablation (discovery and evaluation)")
    planted: bool = param(True, "run the planted-circuit AUROC (silence components, fine-tune, score against the surviving edges)")
    planted_steps: int = param(20, "fine-tuning steps of the planted-circuit model", ge=1, max=20000)
    cv_n_train: int = param(2000, "hierarchical-equality training examples of the MLP", ge=10, max=1_000_000)
    cv_epochs: int = param(5, "MLP training epochs", ge=1, max=1000)
    cv_pairs: int = param(400, "counterfactual pairs for training each intervention (as many again for its evaluation)", ge=10, max=1_000_000)
    cv_int_epochs: int = param(2, "training epochs of each DAS / DBM intervention", ge=1, max=1000)
    das_ks: tuple[int, ...] = param((1,), "DAS subspace dimensions k", ge=1, max=64)
    sae_latents: int = param(256, "latents of the SAE featurizer", ge=2, max=65536)
    sae_k: int = param(8, "active latents k of the TopK SAE", ge=1, max=1024)
    sae_steps: int = param(100, "SAE training steps", ge=1, max=100000)
    dbm_lamb: float = param(1e-3, "L1 weight of the DBM masks", ge=0, le=10)
    model_names: tuple[str, ...] = param((), "hub models of the paper (full profile only; need downloads)", choices=("gpt2", "qwen2.5-0.5b", "gemma-2-2b", "llama-3.1-8b"))
    n_threads: Optional[int] = param(1, "torch CPU threads", ge=1, le=1024)
    PROFILE_DEFAULTS = {
        "cpu": dict(n_seeds=3, n_layers=4, n_heads=4, d_model=64, d_mlp=256, train_steps=1500, n_attr=100, n_eval=100,
                    mask_steps=50, planted_steps=200, cv_n_train=20000, cv_epochs=20, cv_pairs=2000, cv_int_epochs=8,
                    das_ks=(1, 2, 4), sae_steps=400),
        "full": dict(n_seeds=3, n_layers=4, n_heads=4, d_model=64, d_mlp=256, train_steps=1500, n_attr=100, n_eval=100,
                     mask_steps=50, planted_steps=200, cv_n_train=20000, cv_epochs=20, cv_pairs=2000, cv_int_epochs=8,
                     das_ks=(1, 2, 4), sae_steps=400, model_names=("gpt2",)),
    }
    def validate(self):
        if self.d_model % self.n_heads: raise ConfigError(f"parameter 'd_model': {self.d_model} is not divisible by n_heads {self.n_heads}")
        if not self.methods: raise ConfigError("parameter 'methods': give at least one method")
        if self.sae_k > self.sae_latents: raise ConfigError(f"parameter 'sae_k': {self.sae_k} exceeds sae_latents {self.sae_latents}")
        if max(self.das_ks, default=1) > 64: raise ConfigError("parameter 'das_ks': k must be at most the hidden width 64")


# %%
cfg = Config.from_namespace(globals())
cfg

# %%
from trustlib.config import parameters_cell, check_parameters_cell

# %%
test_eq(Config.unbounded_fields(), [])
test_fail(lambda: Config.from_params("smoke", d_model=30, n_heads=4), contains="'d_model'")
test_fail(lambda: Config.from_params("smoke", methods=["acdc"]), contains="'methods'")
test_fail(lambda: Config.from_params("smoke", sae_k=300), contains="exceeds sae_latents")
test_eq(Config.from_params("cpu").n_layers, 4)
test_eq(Config.from_params("cpu").n_seeds, 3)

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
    clean, corr, labels, tmpl = [], [], [], []
    for _ in range(n):
        t = int(rng.integers(2 * len(FRAMES))); f, order = FRAMES[t // 2], t % 2
        A, B, C = rng.choice(names, 3, replace=False); P = rng.choice(PLACES); O = rng.choice(OBJECTS)
        X, Y = (A, B) if order == 0 else (B, A)
        s = f.format(X=X, Y=Y, S=B, P=P, O=O).split()
        c = f.format(X=X, Y=Y, S=C if corruption == "abc" else A, P=P, O=O).split()
        clean.append([vocab[w] for w in s]); corr.append([vocab[w] for w in c])
        labels.append([vocab[A], vocab[B]]); tmpl.append(t)
    return IOIData(torch.tensor(clean), torch.tensor(corr), torch.tensor(labels), np.array(tmpl))


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

def n_edges(n_layers:int, n_heads:int) -> int:
    "The closed-form edge count E(L, H)."
    L, H = n_layers, n_heads
    return sum(3 * H * (1 + l * (H + 1)) + (1 + l * (H + 1) + H) for l in range(L)) + 1 + L * (H + 1)


# %%
test_eq(n_edges(4, 4), 479); test_eq(n_edges(12, 12), 32491)
for _L, _H in [(1, 1), (2, 2), (4, 4), (3, 5), (12, 12)]: test_eq(CircuitGraph(_L, _H).n_edges, n_edges(_L, _H))
_g = CircuitGraph(4, 4)
test_eq((_g.n_fwd, _g.n_bwd), (21, 53))
test_eq(_g.edge_names()[:2], ['input->a0.h0<q>', 'input->a0.h1<q>'])
test_eq(int(_g.valid[:, _g.bwd_names.index("m0")].sum()), 5)                # input and the 4 heads of layer 0
test_eq(int(_g.valid[_g.fwd_index(3), :].sum()), 1)                         # the last MLP feeds only the logits


# %% [markdown]
# ## The graph model: a transformer run edge by edge
#
# `GraphModel` wraps a `TinyTransformer` (its weights, LayerNorms and MLPs) and runs it with the residual
# stream decomposed: it keeps every forward node's output `[B, T, n_fwd, D]` and computes every slot's
# input as a weighted sum over them. A **mask** `M[u, slot]` ∈ [0, 1] chooses per edge between the node's
# output in this run (1) and its output on the counterfactual run (0):
# $$\text{in}_v = \sum_u M_{uv}\,\text{out}_u + (1 - M_{uv})\,\text{out}_u^{\text{corr}} + \text{bias}_v .$$
# M = 1 everywhere is the model itself, M = 0 everywhere is the corrupted run, and a binary M is a circuit
# evaluated with everything outside it patched. Each head's q, k and v slot gets its own input (and its own
# LayerNorm of it), so the three are separate edges. The same forward pass also serves the attribution
# methods: it can replace the input embeddings (EAP-IG-inputs), fix one node's output (EAP-IG-activations),
# return every slot's input for gradients, and start at a later layer from cached outputs (exact patching).

# %%
#| export
class GraphModel(nn.Module):
    "A `TinyTransformer` run on its decomposed residual stream, with per-edge masks between clean and counterfactual node outputs."
    def __init__(self, model):
        super().__init__()
        self.model = model; self.graph = CircuitGraph(model.n_layers, model.n_heads)
    def embed(self, tokens):
        "Token + position embedding: the output of the input node."
        m = self.model; T = tokens.shape[1]
        return m.embed(tokens) + m.pos_embed(torch.arange(T, device=tokens.device))[None]
    def forward(self, tokens, mask=None, corrupt=None, input_embeds=None, replace=None, return_acts=False, return_inputs=False,
                cache=None, start_layer=0):
        """Logits `[B,T,V]` of the graph run. `mask` `[n_fwd, n_bwd]` (1 keep, 0 patch: the edge carries the node's `corrupt` output
        `[B,T,n_fwd,D]` instead); `replace=(u, out)` fixes node u's output; `cache` (node outputs of this same input) with
        `start_layer` skips the layers before it. Optionally also the node outputs `[B,T,n_fwd,D]` and the inputs of every slot."""
        m, g = self.model, self.graph; H, D, dh = m.n_heads, m.d_model, m.d_head
        if start_layer:
            up = cache.transpose(2, 3)[..., :1 + start_layer * (H + 1)]     # node outputs, kept as [B,T,D,n]
            bias = sum(m.blocks[l].attn.b_O for l in range(start_layer))
        else:
            x = self.embed(tokens) if input_embeds is None else input_embeds
            if replace is not None and replace[0] == 0: x = replace[1]
            up, bias = x[..., None], torch.zeros(D, dtype=x.dtype, device=x.device)
        B, T = up.shape[:2]
        if mask is not None:
            mask = torch.as_tensor(mask, dtype=up.dtype)
            ct = corrupt.transpose(2, 3)
            ct = ct if ct.is_contiguous() else ct.contiguous()
            ct = ct.view(-1, g.n_fwd)
            keep_c = (1 - mask) * g.valid                                    # weight of each corrupted output
        inputs = []
        causal = torch.ones(T, T, dtype=torch.bool, device=up.device).tril()
        def gather(b0, b1):
            n = up.shape[3]
            if mask is None: return (up.sum(3) + bias)[:, :, None].expand(B, T, b1 - b0, D)
            r = up.reshape(-1, n) @ mask[:n, b0:b1] + ct @ keep_c[:, b0:b1]
            return r.view(B, T, D, b1 - b0).transpose(2, 3) + bias
        for l in range(start_layer, m.n_layers):
            blk = m.blocks[l]; a = blk.attn
            b0, n_up = l * (3 * H + 1), 1 + l * (H + 1)
            xin = gather(b0, b0 + 3 * H); inputs.append(xin)
            if mask is None and not return_inputs:
                qkv = _affine(blk.ln1(xin[:, :, 0]), a.W_qkv, a.b_qkv).view(B, T, 3, H, dh)
            else:
                z = F.layer_norm(xin, (D,), blk.ln1.weight, blk.ln1.bias, blk.ln1.eps).reshape(B * T, 3 * H, D)
                qkv = torch.einsum('nsd,sdk->nsk', z, self._wqkv(a)).view(B, T, 3, H, dh) + a.b_qkv.view(3, H, dh)
            q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))      # [B,H,T,dh]
            pat = ((q @ k.transpose(-1, -2)) * dh ** -0.5).masked_fill(~causal, float("-inf")).softmax(-1)
            out = torch.matmul(pat @ v, a.W_O.view(H, dh, D))                # [B,H,T,D]: each head's output
            if replace is not None and n_up <= replace[0] < n_up + H:
                out = out.clone(); out[:, replace[0] - n_up] = replace[1]
            up = torch.cat([up, out.permute(0, 2, 3, 1)], 3)
            bias = bias + a.b_O
            xm = gather(b0 + 3 * H, b0 + 3 * H + 1); inputs.append(xm)
            mo = blk.mlp(blk.ln2(xm[:, :, 0]))
            if replace is not None and replace[0] == n_up + H: mo = replace[1]
            up = torch.cat([up, mo[..., None]], 3)
        xl = gather(g.n_bwd - 1, g.n_bwd); inputs.append(xl)
        logits = F.linear(m.ln_final(xl[:, :, 0]), m.W_U)
        res = [logits]
        if return_acts: res.append(up.transpose(2, 3))
        if return_inputs: res.append(inputs)
        return res[0] if len(res) == 1 else tuple(res)
    def _wqkv(self, a):
        "W_qkv as [3H, D, dh] (one matrix per q/k/v slot of each head)."
        H, D, dh = self.model.n_heads, self.model.d_model, self.model.d_head
        return a.W_qkv.view(D, 3, H, dh).permute(1, 2, 0, 3).reshape(3 * H, D, dh)


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
# The decomposition reproduces the model: the graph run gives the model's logits, the sum of the upstream
# outputs plus biases is the model's own residual stream before every block (read from its hook points),
# patching every edge gives the corrupted run's logits, and patching none gives the clean run's.

# %%
_m = TinyTransformer(len(_voc), 32, 2, 2, d_mlp=64, max_len=16, seed=1).eval(); _gm = GraphModel(_m)
_d = make_ioi(8, np.random.default_rng(1), _voc)
with torch.no_grad():
    _lo, _A = _gm(_d.clean, return_acts=True)
    _, _cache = _m.run_with_cache(_d.clean, names=lambda n: n.endswith("hook_resid_pre"))
    test_close(_lo, _m(_d.clean), eps=1e-4)
    for _l in range(2):
        _n = 1 + _l * 3
        test_close(_A[:, :, :_n].sum(2) + sum(_m.blocks[i].attn.b_O for i in range(_l)), _cache[f"blocks.{_l}.hook_resid_pre"], eps=1e-5)
    _Ak = node_acts(_gm, _d.corrupt); _G = _gm.graph
    test_close(_gm(_d.clean, mask=torch.zeros(_G.n_fwd, _G.n_bwd), corrupt=_Ak), _m(_d.corrupt), eps=1e-4)   # all edges patched = corrupted run
    test_close(_gm(_d.clean, mask=torch.ones(_G.n_fwd, _G.n_bwd), corrupt=_Ak), _m(_d.clean), eps=1e-4)     # none patched = clean run


# %% [markdown]
# ## Training the IOI model
#
# Next-token cross-entropy on the indirect object at the last position, fresh prompts at every step, AdamW
# (lr 3·10⁻³), stopping early once held-out accuracy reaches `train_target`.

# %%
#| export
def train_ioi(n_layers:int=4, n_heads:int=4, d_model:int=64, d_mlp:int=256, steps:int=1500, batch_size:int=64, lr:float=3e-3,
              target:float=0.99, seed:int=0, vocab:dict|None=None, model:TinyTransformer|None=None, frozen:dict|None=None,
              check_every:int=50, progress:bool=False) -> tuple[TinyTransformer, dict]:
    "Train (or fine-tune `model`) on IOI prompts; `frozen` maps parameters to masks of entries kept at zero. Returns (model, log)."
    from tqdm.auto import tqdm
    vocab = vocab or ioi_vocab(); rng = np.random.default_rng(derive_seed(seed, "ioi-train"))
    m = model if model is not None else TinyTransformer(len(vocab), d_model, n_layers, n_heads, d_mlp=d_mlp, max_len=16, seed=derive_seed(seed, "init"))
    m.train(); opt = torch.optim.AdamW(m.parameters(), lr=lr, weight_decay=0.01, betas=(0.9, 0.98))
    val = make_ioi(500, np.random.default_rng(derive_seed(seed, "ioi-val")), vocab)
    log = dict(steps=0, acc=float("nan"))
    for step in tqdm(range(steps), desc="train IOI model", disable=not progress, leave=False):
        b = make_ioi(batch_size, rng, vocab)
        loss = F.cross_entropy(m(b.clean)[:, -1], b.labels[:, 0])
        opt.zero_grad(); loss.backward()
        if frozen:
            for p, z in frozen.items(): p.grad[z] = 0
        opt.step(); log["steps"] = step + 1
        if (step + 1) % check_every == 0 or step == steps - 1:
            with torch.no_grad(): log["acc"] = float((m(val.clean)[:, -1].argmax(-1) == val.labels[:, 0]).float().mean())
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

def eap(gm:GraphModel, data:IOIData, batch_size:int=100, grad_at:str="clean", ablation:str="patching", mean_acts=None):
    "EAP: S[u,v] = Δ_u · ∂L/∂in_v, gradient at the clean run (grad_at='clean') or the corrupted run."
    g = gm.graph; S = torch.zeros(g.n_fwd, g.n_bwd)
    for b in _batches(data, batch_size):
        Ac = node_acts(gm, b.clean); Ak = _ref_acts(gm, b, ablation, mean_acts)
        G = _grads(gm, b.clean if grad_at == "clean" else b.corrupt, b.labels)
        S += torch.einsum('btud,btvd->uv', Ak - Ac, G)
    return (S / len(data)) * g.valid

def _ref_acts(gm, b, ablation, mean_acts):
    if ablation == "patching": return node_acts(gm, b.corrupt)
    if ablation == "mean": return mean_acts.expand(len(b), *mean_acts.shape[1:])
    if ablation == "zero": return torch.zeros_like(node_acts(gm, b.clean))
    raise ValueError(ablation)


def eap_ig_inputs(gm:GraphModel, data:IOIData, steps:int=5, batch_size:int=100, ablation:str="patching", mean_acts=None):
    "EAP-IG-inputs: gradients averaged over input embeddings e_corr + (k/m)(e_clean − e_corr), k = 0..m−1."
    g = gm.graph; S = torch.zeros(g.n_fwd, g.n_bwd)
    for b in _batches(data, batch_size):
        Ac = node_acts(gm, b.clean); Ak = _ref_acts(gm, b, ablation, mean_acts)
        with torch.no_grad(): ec = gm.embed(b.clean); ek = Ak[:, :, 0]
        G = 0
        for k in range(steps):
            G = G + _grads(gm, b.clean, b.labels, input_embeds=ek + (k / steps) * (ec - ek))
        S += torch.einsum('btud,btvd->uv', Ak - Ac, G / steps)
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
# **EAP-IG-activations** interpolates each node's own output, $\alpha\,\text{out}^{\text{clean}} +
# (1-\alpha)\,\text{out}^{\text{corr}}$ with α = k/m, k = 1 … m, while everything downstream runs freely,
# and accumulates the gradients at the node's downstream inputs (one loop per node). **NAP** scores a node
# by $\Delta_u \cdot \partial L/\partial \text{out}_u$, which is the sum of its EAP edge scores; a node
# circuit keeps every edge between kept nodes.

# %%
#| export
def eap_ig_activations(gm:GraphModel, data:IOIData, steps:int=5, batch_size:int=100):
    "EAP-IG-activations: for each node u, interpolate its own output α·clean + (1−α)·corr (α = k/m, k = 1..m), downstream runs freely."
    g = gm.graph; S = torch.zeros(g.n_fwd, g.n_bwd)
    for b in _batches(data, batch_size):
        Ac = node_acts(gm, b.clean); Ak = node_acts(gm, b.corrupt)
        for u in range(g.n_fwd - 0):
            down = g.valid[u]
            if not down.any(): continue
            G = 0
            for k in range(1, steps + 1):
                a = k / steps
                G = G + _grads(gm, b.clean, b.labels, replace=(u, (Ak[:, :, u] + a * (Ac[:, :, u] - Ak[:, :, u])).requires_grad_(True)))
            S[u] += torch.einsum('btd,btvd->v', Ak[:, :, u] - Ac[:, :, u], G / steps)
    return (S / len(data)) * g.valid

def nap(gm:GraphModel, data:IOIData, batch_size:int=100):
    "Node attribution patching: node score Δ_u·∂L/∂out_u = Σ_v S_EAP[u,v]."
    return eap(gm, data, batch_size).sum(1)


# %%
_a = eap_ig_activations(_gm, _d, steps=2)
test_eq(_a.shape, _e.shape); test_eq(bool((_a[~_G.valid] == 0).all()), True)
test_close(nap(_gm, _d), _e.sum(1), eps=1e-6)
assert torch.corrcoef(torch.stack([_G.to_vector(_a), _G.to_vector(_e)]))[0, 1] > 0.5   # close to EAP on this random model


# %% [markdown]
# **Exact activation patching (EActP)** patches one edge at a time, $S_{uv} = m(N) - m(N \text{ with only }
# u \to v \text{ patched})$ (same sign convention as EAP), one forward pass per edge; the pass starts at the
# edge's layer from cached clean outputs, since nothing before it changes. The test checks it against a
# direct computation: one edge patched by hand is the model run with that slot's input shifted by
# $\Delta_u$.

# %%
#| export
@torch.no_grad()
def exact_patching(gm:GraphModel, data:IOIData, progress:bool=False):
    "EActP: S[u,v] = m(full) − m(only edge u→v patched), one forward per edge."
    from tqdm.auto import tqdm
    g = gm.graph; S = torch.zeros(g.n_fwd, g.n_bwd)
    Ak = node_acts(gm, data.corrupt); Ac = node_acts(gm, data.clean)
    base = logit_diff(gm(data.clean), data.labels)
    ones = torch.ones(g.n_fwd, g.n_bwd); per = 3 * g.n_heads + 1
    for u, v in tqdm(g.edges, disable=not progress, desc="exact patching", leave=False):
        M = ones.clone(); M[u, v] = 0
        S[u, v] = base - logit_diff(gm(data.clean, mask=M, corrupt=Ak, cache=Ac, start_layer=min(v // per, g.n_layers)), data.labels)
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
        P = P * g.valid
        # the constant bias is a component too
        bias_c = Y - torch.einsum('btud,uv->btvd', A, g.valid.to(A.dtype))
        bias_part = (yn - (Y - bias_c).abs().sum(-1)).clamp_min(0)
        P = P / (P.sum(2) + bias_part + 1e-12)[:, :, None]
        S += P.sum((0, 1)); n += b.clean.shape[0] * b.clean.shape[1]
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
# the mean outputs for mean ablation). The CPR and CMD are trapezoid areas over the linear size axis
# 0.001 … 1. The AUROC sweeps the same sizes against a known edge set and integrates TPR over FPR
# (normalised by the last FPR).

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
    "Grow the circuit from the logits backwards: repeatedly add the best edge whose child is already in the circuit."
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
def circuit_metric(gm:GraphModel, data:IOIData, circuits, corrupt_acts=None, batch_size:int=200):
    "Mean logit diff of each circuit (bool [n_fwd, n_bwd]) with all other edges patched from `corrupt_acts` (default: the corrupted run)."
    out = torch.zeros(len(circuits)); n = 0
    for i in range(0, len(data), batch_size):
        b = data[i:i + batch_size]
        Ak = node_acts(gm, b.corrupt) if corrupt_acts is None else corrupt_acts[i:i + batch_size]
        for j, C in enumerate(circuits):
            out[j] += logit_diff(gm(b.clean, mask=torch.as_tensor(C).float(), corrupt=Ak), b.labels, per_example=True).sum()
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

def auroc(graph:CircuitGraph, scores, truth, sizes=SIZES, absolute:bool=True) -> float:
    "Area under TPR vs FPR over the circuit sizes (top-n edges by score, not pruned), FPR normalised by its last value, against a known edge set."
    t = graph.to_vector(truth).bool(); tpr, fpr = [0.0], [0.0]
    for k in sizes:
        c = graph.to_vector(top_n(graph, scores, n_for(graph, k), absolute=absolute, do_prune=False))
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
_mN, _m0, _mC = circuit_metric(_gm, _d, [_G.valid, torch.zeros_like(_G.valid), _c])
test_close(faithfulness(_mN, _mN, _m0), 1.0); test_close(faithfulness(_m0, _mN, _m0), 0.0)   # f(full) = 1, f(∅) = 0
with torch.no_grad():
    test_close(_mN, logit_diff(_m(_d.clean), _d.labels), eps=1e-4); test_close(_m0, logit_diff(_m(_d.corrupt), _d.labels), eps=1e-4)
test_close(cpr(np.ones(10)), 0.999); test_close(cmd(np.ones(10)), 0.0)
test_close(cpr(np.zeros(10)), 0.0); test_close(cmd(np.zeros(10)), 0.999)
_truth = _G.to_matrix(torch.arange(_G.n_edges) < 8)
test_close(auroc(_G, _truth.float(), _truth, absolute=False), 1.0, eps=0.05)
assert auroc(_G, -_truth.float(), _truth, absolute=False) < 0.3   # the coarse size grid joins the 50 % and 100 % points by a straight line


# %% [markdown]
# ## A planted circuit (our stand-in for InterpBench)
#
# `plant_circuit` silences every head except the first ⌈H/2⌉ of each layer and every MLP of an odd layer
# (their output weights and biases are set to zero and kept there), then fine-tunes the rest. Silenced
# components write exactly zero, so the only edges that can matter are those between surviving
# components: that set is the ground truth of the AUROC. It is a weaker test than InterpBench's model,
# whose circuit is trained to implement a known algorithm.

# %%
#| export
def plant_circuit(model:TinyTransformer, steps:int=200, seed:int=0, **train_kw) -> tuple[TinyTransformer, torch.Tensor, dict]:
    "A copy of `model` with silenced components fine-tuned on IOI; returns (model, ground-truth edges `[n_fwd, n_bwd]`, training log)."
    import copy
    m = copy.deepcopy(model); g = CircuitGraph(m.n_layers, m.n_heads); H, dh = m.n_heads, m.d_head
    for p in m.parameters(): p.requires_grad_(True)
    alive = torch.zeros(g.n_fwd + 1, dtype=torch.bool); alive[0] = alive[g.n_fwd] = True
    frozen = {}
    with torch.no_grad():
        for l, blk in enumerate(m.blocks):
            z = torch.zeros_like(blk.attn.W_O, dtype=torch.bool)
            for h in range(H):
                if h < math.ceil(H / 2): alive[g.fwd_index(l, h)] = True
                else: z[h * dh:(h + 1) * dh] = True
            blk.attn.W_O[z] = 0; frozen[blk.attn.W_O] = z
            if l % 2 == 0:
                alive[g.fwd_index(l)] = True
            else:
                blk.mlp.W_out.zero_(); blk.mlp.b_out.zero_()
                frozen[blk.mlp.W_out] = torch.ones_like(blk.mlp.W_out, dtype=torch.bool); frozen[blk.mlp.b_out] = torch.ones_like(blk.mlp.b_out, dtype=torch.bool)
    m, log = train_ioi(model=m, steps=steps, seed=derive_seed(seed, "planted"), frozen=frozen, **train_kw)
    truth = g.valid & alive[:g.n_fwd, None] & alive[g.slot_node][None]
    return m, truth, log


# %%
_pm, _truth, _plog = plant_circuit(_m, steps=2, seed=0)
test_eq(float(_pm.blocks[1].mlp.W_out.detach().abs().sum()), 0.0)                   # the odd-layer MLP stays silent
test_eq(float(_pm.blocks[0].attn.W_O.detach()[_m.d_head:].abs().sum()), 0.0)        # so does the second head
test_eq(int(_truth.sum()) < _G.n_edges, True)
_pg = GraphModel(_pm); _pd = make_ioi(8, np.random.default_rng(3), _voc)
_pe = eap(_pg, _pd)
test_eq(float(_pe[~_truth].abs().sum()), 0.0)                               # edges touching silenced nodes get zero attribution


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
    opt = torch.optim.Adam(params, lr=lr)
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
# by nodes. It also measures the rank correlation of each method's scores with exact patching, EAP-IG with
# mean ablation, and the planted-circuit AUROC.

# %%
#| export
ATTRIBUTION = dict(random=None, eap="eap", eap_ig_inputs="eap_ig_inputs", eap_ig_activations="eap_ig_activations",
                   clean_corrupted="clean_corrupted", nap="nap", exact="exact_patching", ifr="ifr", mask="learned_mask")

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

def circuit_seed(cfg:Config, seed:int, progress:bool=False) -> dict:
    "One seed of the circuit track: curves, CPR/CMD, rank correlations, timings and the planted-circuit AUROC."
    import time
    from scipy.stats import spearmanr
    vocab = ioi_vocab()
    model, log = train_ioi(cfg.n_layers, cfg.n_heads, cfg.d_model, cfg.d_mlp, steps=cfg.train_steps, batch_size=cfg.batch_size, lr=cfg.lr,
                           target=cfg.train_target, seed=seed, vocab=vocab, progress=progress)
    gm = GraphModel(model); g = gm.graph
    for p in gm.parameters(): p.requires_grad_(False)
    rng = np.random.default_rng(derive_seed(seed, "prompts"))
    attr, ev = make_ioi(cfg.n_attr, rng, vocab, cfg.corruption), make_ioi(cfg.n_eval, rng, vocab, cfg.corruption)
    empty = torch.zeros_like(g.valid)
    mN, m0 = (float(x) for x in circuit_metric(gm, ev, [g.valid, empty]))
    with torch.no_grad(): acc = float((model(ev.clean)[:, -1].argmax(-1) == ev.labels[:, 0]).float().mean())
    out = dict(seed=seed, acc=acc, train_steps=log["steps"], m_full=mN, m_empty=m0, curves=[], scores={}, seconds={})
    for method in cfg.methods:
        t0 = time.process_time()
        with torch.enable_grad(): S = score_edges(method, gm, attr, cfg, seed)
        out["seconds"][method] = time.process_time() - t0
        out["scores"][method] = S
        for kind, absolute in (("cpr", False), ("cmd", True)):
            f = faithfulness(circuit_metric(gm, ev, circuits_for(method, g, S, absolute)), mN, m0).numpy()
            out["curves"] += [dict(seed=seed, method=method, ablation="counterfactual", kind=kind, size=k, f=float(v)) for k, v in zip(SIZES, f)]
    if cfg.mean_ablation:
        ref = mean_node_acts(gm, make_ioi(cfg.n_attr, rng, vocab, cfg.corruption).clean)
        with torch.enable_grad(): S = eap_ig_inputs(gm, attr, steps=cfg.ig_steps, ablation="mean", mean_acts=ref)
        ref_e = ref.expand(len(ev), *ref.shape[1:])
        mNm, m0m = (float(x) for x in circuit_metric(gm, ev, [g.valid, empty], corrupt_acts=ref_e))
        for kind, absolute in (("cpr", False), ("cmd", True)):
            f = faithfulness(circuit_metric(gm, ev, circuits_for("eap_ig_inputs", g, S, absolute), corrupt_acts=ref_e), mNm, m0m).numpy()
            out["curves"] += [dict(seed=seed, method="eap_ig_inputs", ablation="mean", kind=kind, size=k, f=float(v)) for k, v in zip(SIZES, f)]
    if "exact" in out["scores"]:
        ref = g.to_vector(out["scores"]["exact"])
        out["rho"] = {m: float(spearmanr(g.to_vector(S), ref).statistic) for m, S in out["scores"].items() if m not in ("nap", "exact")}
    if cfg.planted:
        pm, truth, plog = plant_circuit(model, steps=cfg.planted_steps, seed=seed, batch_size=cfg.batch_size, lr=cfg.lr, target=cfg.train_target, vocab=vocab)
        pg = GraphModel(pm)
        for p in pg.parameters(): p.requires_grad_(False)
        out["planted_acc"], out["auroc"] = plog["acc"], {}
        for method in [m for m in ("random", "eap", "eap_ig_inputs", "clean_corrupted", "ifr") if m in cfg.methods]:
            with torch.enable_grad(): S = score_edges(method, pg, attr, cfg, seed)
            out["auroc"][method] = auroc(g, S, truth, absolute=method != "ifr")
    out["scores"] = {m: S.tolist() for m, S in out["scores"].items()}
    return out


# %%
_cfg = Config.from_params("smoke", train_steps=2, n_attr=6, n_eval=6, mask_steps=2, planted_steps=2, methods=["random", "eap", "exact", "nap", "ifr"])
_o = circuit_seed(_cfg, 0)
test_eq(len(_o["curves"]), (5 + 1) * 2 * len(SIZES)); test_eq(set(_o["rho"]), {"random", "eap", "ifr"})
_full = [c["f"] for c in _o["curves"] if c["size"] == 1.0]
test_close(np.array(_full), np.ones(len(_full)), eps=1e-4)                   # every 100 % circuit is the full model

# %% [markdown]
# ## Claims and their rules (fixed before the run)
#
# The per-seed CPR and CMD of every method come from its faithfulness curve; gaps between methods are
# paired over seeds and graded on their 95 % t-interval (`mean_ci`), so one seed is always
# `inconclusive`. Every circuit claim also needs the **condition** the paper's experiment depends on: the
# trained model solves IOI (held-out accuracy ≥ 0.95 at every seed) and the counterfactual removes the
# behaviour (m(N) − m(∅) > 1 logit at every seed); otherwise the verdict is `inconclusive`. The
# causal-variable claims need the MLP to solve the task (accuracy ≥ 0.95).
#
# | # | claim | rule |
# |---|---|---|
# | 1 | **(headline)** EAP-IG-inputs is among the best circuit-localisation methods | reproduced if CMD(random) − CMD(EAP-IG) > 0.3 (interval) and the mean CMD of EAP-IG is within 0.05 of the best method's; partially if the gap's interval is above 0 |
# | 2 | EAP-IG's circuits beat random on CPR | CPR(EAP-IG) − CPR(random): reproduced > 0.3, partially > 0 |
# | 3 | EAP-IG-inputs is at least as good as EAP | CMD(EAP) − CMD(EAP-IG): reproduced > 0.01, partially > 0 |
# | 4 | Edge-level circuits beat node-level circuits at equal edge count | CMD(NAP) − CMD(EAP): reproduced > 0.05, partially > 0 |
# | 5 | Information-flow routes trail the causal methods (but beat random) | CMD(IFR) − CMD(EAP-IG) and CMD(random) − CMD(IFR): reproduced if both > 0.05, partially if both > 0 |
# | 6 | Mask optimisation is among the best methods | CMD(random) − CMD(mask) > 0.3 and mean CMD(mask) within 0.05 of the best; partially if the gap is > 0 |
# | 7 | Counterfactual ablations beat mean ablations | CMD(EAP-IG, mean) − CMD(EAP-IG, counterfactual): reproduced > 0.05, partially > 0 |
# | 8 | A planted circuit is recovered | AUROC(EAP-IG): reproduced > 0.9, partially > 0.5 |
# | 9 | Supervised DAS localises causal variables best | best-layer IIA of DAS (best k) − best-layer IIA of the best other featurizer, averaged over V1 and V2: reproduced > 0.02, partially > 0 |
# | 10 | SAE features are no better than neurons | best-layer IIA(DBM SAE) − IIA(DBM neurons): reproduced < 0.02, partially < 0.05 |
# | 11 | Exact patching is not always the best method | shown (`illustrated`): rank of exact patching by CMD and CPR |
# | 12 | The paper's numbers on GPT-2, Qwen, Gemma, Llama | `not_testable_offline` |

# %%
#| export
from trustlib.results import Result, Rule, judge, mean_ci, Estimate

RULES = dict(
    headline=Rule(">", 0.3, 0.0, what="CMD(random) − CMD(EAP-IG)"),
    cpr=Rule(">", 0.3, 0.0, what="CPR(EAP-IG) − CPR(random)"),
    ig_vs_eap=Rule(">", 0.01, 0.0, what="CMD(EAP) − CMD(EAP-IG)"),
    edge_vs_node=Rule(">", 0.05, 0.0, what="CMD(NAP) − CMD(EAP)"),
    ifr_trails=Rule(">", 0.05, 0.0, what="CMD(IFR) − CMD(EAP-IG)"),
    ifr_random=Rule(">", 0.05, 0.0, what="CMD(random) − CMD(IFR)"),
    mask=Rule(">", 0.3, 0.0, what="CMD(random) − CMD(mask)"),
    cf_vs_mean=Rule(">", 0.05, 0.0, what="CMD(mean) − CMD(counterfactual)"),
    auroc=Rule(">", 0.9, 0.5, what="AUROC(EAP-IG)"),
    das=Rule(">", 0.02, 0.0, what="IIA(DAS) − IIA(best other)"),
    sae=Rule("<", 0.02, 0.05, what="IIA(DBM SAE) − IIA(DBM neurons)"),
)
NEAR_BEST = 0.05
PAPER = dict(cpr="IOI GPT-2 CPR: random 0.25, EAP-IG-inputs 1.85, NAP-IG 0.76 (third-party transcription of the paper's table)",
             cmd="IOI GPT-2 CMD: random 0.75, EAP 0.03, EAP-IG-inputs 0.03, NAP 0.38, IFR 0.42 (secondary summary, unverified)")

def scores_table(curves) -> "pd.DataFrame":
    "Per seed, method and ablation: CPR (signed-score circuits) and CMD (absolute-score circuits)."
    import pandas as pd
    rows = []
    for (seed, method, abl), grp in curves.groupby(["seed", "method", "ablation"], sort=False):
        c = grp[grp.kind == "cpr"].sort_values("size"); d = grp[grp.kind == "cmd"].sort_values("size")
        rows.append(dict(seed=seed, method=method, ablation=abl, cpr=cpr(c.f.to_numpy()), cmd=cmd(d.f.to_numpy())))
    return pd.DataFrame(rows)

def _gap(tab, a, b, col="cmd", abl_a="counterfactual", abl_b="counterfactual"):
    "Per-seed value(a) − value(b)."
    A = tab[(tab.method == a) & (tab.ablation == abl_a)].set_index("seed")[col]
    B = tab[(tab.method == b) & (tab.ablation == abl_b)].set_index("seed")[col]
    d = (A - B).dropna()
    return d.to_numpy()

def _est(x): return mean_ci(x) if len(x) else None
def _fmt(e): return "not measured" if e is None else str(e)

def claims(tab, seeds:list[dict], cv=None, cv_acc=None) -> tuple[dict, list]:
    "Metrics and verdicts from the per-seed CPR/CMD table, the per-seed circuit records and the causal-variable table."
    metrics, verdicts = {}, []
    cond = bool(seeds) and all(s["acc"] >= 0.95 and s["m_full"] - s["m_empty"] > 1 for s in seeds)
    metrics["condition/ioi_solved"] = cond
    metrics["condition/min_accuracy"] = min(s["acc"] for s in seeds) if seeds else float("nan")
    metrics["condition/min_effect"] = min(s["m_full"] - s["m_empty"] for s in seeds) if seeds else float("nan")
    note = "" if cond else "the trained model does not solve IOI at every seed (accuracy < 0.95 or no counterfactual effect), so the comparison cannot test the claim; "
    cf = tab[tab.ablation == "counterfactual"] if len(tab) else tab
    mean_cmd = cf.groupby("method").cmd.mean() if len(cf) else None
    for m, v in (mean_cmd.items() if mean_cmd is not None else []):
        metrics[f"cmd/{m}"] = float(v); metrics[f"cpr/{m}"] = float(cf[cf.method == m].cpr.mean())
    def graded(key, claim, paper, x, reason, headline=False):
        e = _est(x)
        if e is None:
            return judge(claim, paper, "not measured", reproduced=False, inconclusive=True, rule_text=RULES[key].text(), reason="a method it needs was not run", headline=headline)
        metrics.update({f"gap/{key}": e.value, f"gap/{key}_lo": e.lo, f"gap/{key}_hi": e.hi})
        if cond: return judge(claim, paper, _fmt(e), rule=RULES[key], value=e, reason=reason, headline=headline)
        return judge(claim, paper, _fmt(e), reproduced=False, inconclusive=True, rule_text=RULES[key].text(), reason=note + reason, headline=headline)
    def near_best(method, key, claim, paper, reason, headline=False):
        e = _est(_gap(tab, "random", method))
        if e is None or mean_cmd is None or method not in mean_cmd:
            return judge(claim, paper, "not measured", reproduced=False, inconclusive=True, rule_text="needs the method and random", reason="a method it needs was not run", headline=headline)
        best = mean_cmd.drop("random", errors="ignore"); behind = float(mean_cmd[method] - best.min())
        g, _ = RULES[key].grade(e)
        metrics[f"gap/{key}"] = e.value; metrics[f"behind_best/{method}"] = behind
        txt = (f"{RULES[key].text()}; reproduced also needs mean CMD({method}) within {NEAR_BEST} of the best method's; "
               "inconclusive if the gap is, or if the IOI condition fails")
        return judge(claim, paper, f"{RULES[key].what} = {_fmt(e)}; mean CMD {mean_cmd[method]:.3f}, best {best.idxmin()} {best.min():.3f} (behind by {behind:.3f})",
                     reproduced=cond and g == "reproduced" and behind <= NEAR_BEST, partially=cond and g in ("reproduced", "partially"),
                     inconclusive=(not cond) or g == "inconclusive", rule_text=txt, reason=note + reason, headline=headline)
    verdicts.append(near_best("eap_ig_inputs", "headline", "Edge attribution patching with integrated gradients (EAP-IG-inputs) is among the best circuit-localisation methods",
                              PAPER["cmd"], "CMD over 10 circuit sizes on a 4-layer IOI model, paired over seeds", headline=True))
    verdicts.append(graded("cpr", "EAP-IG's circuits beat random circuits on CPR", PAPER["cpr"], _gap(tab, "eap_ig_inputs", "random", "cpr"),
                           "our CPR stays below 1 where GPT-2's exceeds 1; the comparison is the gap to random"))
    verdicts.append(graded("ig_vs_eap", "EAP-IG-inputs is at least as good as EAP", "CMD 0.03 vs 0.03 on IOI GPT-2; EAP-IG better on other tasks (secondary)",
                           _gap(tab, "eap", "eap_ig_inputs"), "CMD, paired over seeds"))
    verdicts.append(graded("edge_vs_node", "Edge-level circuits beat node-level circuits at equal edge budget", "CMD: EAP 0.03 vs NAP 0.38 (secondary)",
                           _gap(tab, "nap", "eap"), "the same EAP gradients scored per edge or per node"))
    a, b = _est(_gap(tab, "ifr", "eap_ig_inputs")), _est(_gap(tab, "random", "ifr"))
    if a is None or b is None:
        verdicts.append(judge("Information-flow routes trail the causal methods but beat random", "CMD: IFR 0.42 vs EAP-IG 0.03 and random 0.75 (secondary)", "not measured",
                              reproduced=False, inconclusive=True, rule_text="needs IFR, EAP-IG and random", reason="a method it needs was not run"))
    else:
        ga, gb = RULES["ifr_trails"].grade(a)[0], RULES["ifr_random"].grade(b)[0]
        verdicts.append(judge("Information-flow routes trail the causal methods but beat random", "CMD: IFR 0.42 vs EAP-IG 0.03 and random 0.75 (secondary)",
                              f"{RULES['ifr_trails'].what} = {a}; {RULES['ifr_random'].what} = {b}",
                              reproduced=cond and ga == gb == "reproduced", partially=cond and ga in ("reproduced", "partially") and gb in ("reproduced", "partially"),
                              inconclusive=(not cond) or "inconclusive" in (ga, gb),
                              rule_text=f"{RULES['ifr_trails'].text()}; and {RULES['ifr_random'].text()}; reproduced if both are, partially if both are at least partially",
                              reason=note + "IFR circuits grown greedily from the logits"))
    verdicts.append(near_best("mask", "mask", "Mask optimisation (UGS) is among the best circuit-localisation methods", "CMD 0.03 on IOI GPT-2 (secondary)",
                              "a sigmoid-gated edge mask with an L1 penalty stands in for UGS"))
    verdicts.append(graded("cf_vs_mean", "Counterfactual ablations beat mean ablations", "reported across methods in the paper (abstract-level claim)",
                           _gap(tab, "eap_ig_inputs", "eap_ig_inputs", abl_a="mean", abl_b="counterfactual"),
                           "EAP-IG with mean ablation in discovery and evaluation vs. counterfactual patching; faithfulness is measured against each ablation's own empty circuit"))
    au = [s["auroc"]["eap_ig_inputs"] for s in seeds if "eap_ig_inputs" in s.get("auroc", {})]
    for m in ("random", "eap", "eap_ig_inputs", "clean_corrupted", "ifr"):
        v = [s["auroc"][m] for s in seeds if m in s.get("auroc", {})]
        if v: metrics[f"auroc/{m}"] = float(np.mean(v))
    pl_ok = all(s.get("planted_acc", 0) >= 0.95 for s in seeds)
    e = _est(au)
    if e is None:
        verdicts.append(judge("Circuit discovery recovers a planted circuit (InterpBench AUROC)", "AUROC on InterpBench's IOI model (values not recorded here)", "not run",
                              reproduced=False, inconclusive=True, rule_text=RULES["auroc"].text(), reason="the planted-circuit experiment was not run"))
    elif pl_ok:
        verdicts.append(judge("Circuit discovery recovers a planted circuit (InterpBench AUROC)", "AUROC on InterpBench's IOI model (values not recorded here)", _fmt(e),
                              rule=RULES["auroc"], value=e, reason="a weaker ground truth than InterpBench: the edges between components left alive"))
    else:
        verdicts.append(judge("Circuit discovery recovers a planted circuit (InterpBench AUROC)", "AUROC on InterpBench's IOI model (values not recorded here)", _fmt(e),
                              reproduced=False, inconclusive=True, rule_text=RULES["auroc"].text(), reason="the planted model does not solve IOI (accuracy < 0.95)"))
    # causal-variable track
    cv_ok = cv_acc is not None and len(cv_acc) > 0 and min(cv_acc) >= 0.95
    metrics["condition/cv_model_solved"] = cv_ok
    if cv is not None and len(cv):
        best = cv.groupby(["seed", "variable", "method"]).iia.max().reset_index()   # best layer
        das = best[best.method.str.startswith("DAS")].groupby(["seed", "variable"]).iia.max()
        other = best[~best.method.str.startswith("DAS")].groupby(["seed", "variable"]).iia.max()
        sae_ = best[best.method == "DBM SAE"].set_index(["seed", "variable"]).iia; neu = best[best.method == "DBM neurons"].set_index(["seed", "variable"]).iia
        for name, grp in best.groupby("method"): metrics[f"iia/{name.lower().replace(' ', '_').replace('=', '')}"] = float(grp.iia.mean())
        x9 = (das - other).groupby(level=0).mean().to_numpy(); x10 = (sae_ - neu).groupby(level=0).mean().to_numpy()
        cnote = "" if cv_ok else "the MLP does not solve hierarchical equality (accuracy < 0.95); "
        for key, x, claim, paper, reason in [
                ("das", x9, "Supervised DAS localises causal variables best", "DAS best across tasks and models (e.g. ARC-E Gemma-2 ≈ 94 best layer; secondary)",
                 "hierarchical equality on an MLP, best layer per method, averaged over V1 and V2"),
                ("sae", x10, "SAE features are no better than raw neurons for causal variables", "DBM+SAE ≈ DBM on neurons (abstract)",
                 "a TopK SAE trained on the layer's activations, error term kept")]:
            e = _est(x)
            metrics.update({f"gap/{key}": e.value, f"gap/{key}_lo": e.lo, f"gap/{key}_hi": e.hi})
            verdicts.append(judge(claim, paper, _fmt(e), rule=RULES[key], value=e, reason=cnote + reason) if cv_ok else
                            judge(claim, paper, _fmt(e), reproduced=False, inconclusive=True, rule_text=RULES[key].text(), reason=cnote + reason))
    else:
        for claim in ("Supervised DAS localises causal variables best", "SAE features are no better than raw neurons for causal variables"):
            verdicts.append(judge(claim, "see the paper", "not run", reproduced=False, inconclusive=True, rule_text="needs the causal-variable track", reason="not run"))
    if mean_cmd is not None and "exact" in mean_cmd:
        cm = mean_cmd.drop("random", errors="ignore").sort_values(); cp = cf.groupby("method").cpr.mean().drop("random", errors="ignore").sort_values(ascending=False)
        verdicts.append(judge("Exact activation patching is not always the best method (it scores edges one at a time)", "reported in the paper's discussion (secondary)",
                              f"exact patching ranks {list(cm.index).index('exact') + 1} of {len(cm)} by CMD and {list(cp.index).index('exact') + 1} of {len(cp)} by CPR",
                              verdict="illustrated", reason="a ranking shown for information; with 479 edges exact patching is affordable and is the causal reference of the rank correlations"))
    verdicts.append(judge("The benchmark's results on GPT-2 small, Qwen-2.5-0.5B, Gemma-2-2B and Llama-3.1-8B (IOI, MCQA, arithmetic, ARC, RAVEL)",
                          "the paper's CPR/CMD/IIA tables", "not run", verdict="not_testable_offline",
                          reason="needs the hub models and the MIB datasets (downloads); the full profile asks for them"))
    return metrics, verdicts


# %% [markdown]
# The rules on crafted tables with known answers: a clear gap over 3 seeds → reproduced, a reversed gap →
# not reproduced, one seed → inconclusive, a model that does not solve IOI → inconclusive whatever the
# numbers.

# %%
def _crafted(cmds:dict, n_seeds=3, acc=1.0, jitter=0.002):
    rng = np.random.default_rng(0); rows, seeds = [], []
    for s in range(n_seeds):
        for m, v in cmds.items():
            rows.append(dict(seed=s, method=m, ablation="counterfactual", cpr=1 - v + jitter * rng.normal(), cmd=v + jitter * rng.normal()))
        rows.append(dict(seed=s, method="eap_ig_inputs", ablation="mean", cpr=0.5, cmd=0.4 + jitter * rng.normal()))
        seeds.append(dict(acc=acc, m_full=10.0, m_empty=0.5, planted_acc=1.0, auroc=dict(eap_ig_inputs=0.95 + jitter * rng.normal(), random=0.5)))
    return pd.DataFrame(rows), seeds

_good = dict(random=0.75, eap=0.15, eap_ig_inputs=0.12, nap=0.3, ifr=0.35, mask=0.13, exact=0.11)
def _v(tab_seeds, i): return claims(*tab_seeds)[1][i].verdict
test_eq(_v(_crafted(_good), 0), "reproduced")
test_eq([_v(_crafted(_good), i) for i in range(1, 8)], ["reproduced"] * 7)
test_eq(_v(_crafted(dict(_good, eap_ig_inputs=0.3)), 0), "partially")                # beats random, far from the best
test_eq(_v(_crafted(dict(_good, eap_ig_inputs=0.9)), 0), "not_reproduced")           # worse than random
test_eq(_v(_crafted(_good, n_seeds=1), 0), "inconclusive")
test_eq(_v(_crafted(_good, acc=0.6), 0), "inconclusive")                             # the condition fails
test_eq(_v(_crafted(dict(_good, nap=0.1)), 3), "not_reproduced")                     # node-level better than edge-level
test_eq(_v(_crafted(dict(_good, ifr=0.9)), 4), "not_reproduced")                     # IFR worse than random
_cvt = pd.DataFrame([dict(seed=s, variable=v, layer=1, method=m, iia=x + 0.005 * ((s + len(m)) % 3)) for s in range(3) for v in ("v1", "v2")
                     for m, x in [("full vector", 0.5), ("DBM neurons", 0.85), ("DBM PCA", 0.6), ("DBM SAE", 0.7), ("DAS k=1", 0.95)]])
_cv_v = claims(*_crafted(_good), cv=_cvt, cv_acc=[1.0] * 3)[1]
test_eq([_cv_v[8].verdict, _cv_v[9].verdict], ["reproduced", "reproduced"])
test_eq(claims(*_crafted(_good), cv=_cvt.assign(iia=lambda t: np.where(t.method == "DBM SAE", 0.95, t.iia)), cv_acc=[1.0] * 3)[1][9].verdict, "not_reproduced")
test_eq(claims(*_crafted(_good), cv=_cvt, cv_acc=[0.7] * 3)[1][8].verdict, "inconclusive")
test_eq(sum(v.headline for v in _cv_v), 1)


# %% [markdown]
# ## `run`: the whole experiment

# %%
#| export
def _check_full(cfg:Config):
    "The paper's models need hub downloads; they are not available offline."
    if not cfg.model_names: return
    raise ResourceUnavailable(f"the full profile runs MIB on {list(cfg.model_names)} with the mib-bench datasets, which need Hugging Face hub downloads "
                              "(and a GPU for the larger models); they are not available offline. Run the cpu profile for the offline reproduction.")

def run(cfg:Config, progress:bool=True) -> Result:
    "Run the MIB reproduction described by `cfg`: the circuit track (IOI) and the causal-variable track (hierarchical equality)."
    import pandas as pd
    from tqdm.auto import tqdm
    _check_full(cfg)
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
    metrics, verdicts = claims(tab, seeds, cv, cv_acc)
    for m in cfg.methods: metrics[f"speed/{m}_cpu_seconds"] = float(np.mean([s["seconds"][m] for s in seeds]))
    summary = tab.groupby(["method", "ablation"], sort=False)[["cpr", "cmd"]].agg(["mean", "std"]).round(3)
    tables = dict(scores=tab, summary=summary, curves=curves,
                  models=pd.DataFrame([{k: s.get(k) for k in ("seed", "acc", "train_steps", "m_full", "m_empty", "planted_acc")} for s in seeds]),
                  timings=pd.DataFrame([s["seconds"] for s in seeds]).mean().rename("CPU seconds").round(2).to_frame(),
                  iia=cv.groupby(["variable", "layer", "method"], sort=False).iia.agg(["mean", "std"]).round(3).unstack(["variable", "layer"]) if len(cv) else pd.DataFrame(),
                  cv_rows=cv)
    if seeds and "rho" in seeds[0]:
        tables["rank_correlation"] = pd.DataFrame([s["rho"] for s in seeds]).agg(["mean", "std"]).T.round(3)
    if seeds and seeds[0].get("auroc"):
        tables["auroc"] = pd.DataFrame([s["auroc"] for s in seeds]).agg(["mean", "std"]).T.round(3)
    return Result(paper="mib", config=cfg.to_dict(), metrics=metrics, verdicts=verdicts, tables=tables, figures=make_figures(curves, tab, cv))

def make_figures(curves, tab, cv) -> dict:
    "Faithfulness curves (CPR and CMD circuits), CPR/CMD per method, IIA per featurizer and layer."
    import matplotlib.pyplot as plt, seaborn as sns
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
    if len(cv):
        fig, ax = plt.subplots(figsize=(9, 3.8))
        sns.barplot(data=cv.assign(where=lambda d: d.variable.str.upper() + ", layer " + d.layer.astype(str)), x="where", y="iia", hue="method", errorbar="sd", ax=ax)
        ax.set_xlabel("causal variable and hidden layer"); ax.set_ylabel("interchange-intervention accuracy"); ax.set_ylim(0, 1)
        ax.legend(fontsize=8, ncol=4, loc="lower center"); fig.tight_layout(); figs["iia"] = fig
    plt.close("all")
    return figs


# %%
test_fail(lambda: run(Config.from_params("smoke", model_names=["gpt2"]), progress=False), contains="not available offline")

# %% [markdown]
# ## The experiment
#
# One call runs both tracks for the chosen profile (`smoke` by default here; the committed page shows a
# `cpu` run: 3 seeds, the 4 × 4 model with 479 edges, every method, 100 attribution and 100 evaluation
# prompts, the planted circuit, and the causal-variable track with DAS k ∈ {1, 2, 4}).

# %%
from trustlib.results import run_experiment

# %%
result = run_experiment(run, cfg)

# %% [markdown]
# The condition the circuit claims need: each seed's model solves IOI (held-out accuracy) and the
# counterfactual removes the behaviour (m(N) vs. m(∅), mean logit differences). `train_steps` is where
# early stopping ended training; `planted_acc` is the accuracy of the planted-circuit model.

# %%
result.tables["models"]

# %%
{k: v for k, v in result.metrics.items() if k.startswith("condition/")}

# %% [markdown]
# CPR and CMD per method (mean and standard deviation over seeds), and the faithfulness curves behind them:

# %%
result.tables["summary"]

# %%
result.figures["faithfulness"]

# %%
result.figures["cpr_cmd"]

# %% [markdown]
# Spearman rank correlation of each method's edge scores with exact patching, and the planted-circuit
# AUROC (mean and standard deviation over seeds):

# %%
result.tables.get("rank_correlation")

# %%
result.tables.get("auroc")

# %% [markdown]
# Causal-variable track: IIA per featurizer, variable and hidden layer (mean and standard deviation over
# seeds).

# %%
result.tables["iia"]

# %%
result.figures.get("iia")

# %% [markdown]
# CPU seconds of each attribution method per seed (on `n_attr` prompts). The performance targets are measured
# separately for 200 prompts on the 4 × 4 model by `tools/bench_mib.py` (EAP-IG-inputs over all 479 edges
# and exact patching of every edge).

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
# - **Scale.** A 4-layer, 4-head model trained from scratch on our own IOI prompts, 479 edges, 100
#   prompts per method. The paper's CPR and CMD values come from GPT-2 and larger models; ours are of the
#   same kind (random circuits give CPR ≈ 0.25 and CMD ≈ 0.75 in both, which is what a curve that is 0 up to
#   the full circuit integrates to) but the other magnitudes are not comparable. The verdicts compare the
#   *ordering* of methods.
# - **What a small graph changes.** With 479 edges, exact patching of every edge is cheap and serves as the
#   causal reference; EAP-IG-activations and the mask are run on the same prompts. Gaps that the paper sees
#   between methods of the same family (EAP vs. EAP-IG) may be within noise here; the intervals in `ours`
#   say so.
# - **Planted circuit.** Silenced components write exactly zero, so every gradient-based method gives their
#   edges a zero score; the AUROC then mostly tests whether the surviving edges get non-zero scores. It is a
#   weaker test than InterpBench's.
# - **Causal variables.** Hierarchical equality on an MLP is the classic DAS test bed; the MIB tasks and
#   models are not. The SAE is small and trained on few activations; "no better than neurons" is a
#   statement about this setup.
