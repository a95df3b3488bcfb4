# %% [markdown]
# # Understanding and Mitigating Miscalibration in Prompt Tuning for Vision-Language Models
#
# > Dynamic Outlier Regularization (DOR) for prompt tuning: CoOp, KgCoOp and DOR on a MiniLM text tower with learnable context tokens, synthetic image features and WordNet outlier nouns.

# %% [markdown]
# Wang, Li and Wei (ICML 2025) look at what prompt tuning does to the calibration of CLIP. Tuning the
# context words of the text prompt ("[V1]…[VM] [CLASS].") with cross-entropy on a few shots of the *base*
# classes (CoOp) makes the model **overconfident on new classes**: the loss pushes the text features of
# the classes apart (a larger *feature divergence*), which widens the logit gap of every class, new ones
# included, while new-class accuracy does not follow. Regularisers that pin the tuned class features to
# the zero-shot ones (KgCoOp) keep confidence where it was while base accuracy rises, so base classes end
# up **underconfident**. The paper's fix, **Dynamic Outlier Regularization**, leaves the base-class
# features free and pins instead the text features of *outlier* words — nouns from WordNet that are close
# to the base classes but are not class names — to their zero-shot features, resampling a batch of them at
# every step. It is a plug-in loss term for any prompt-tuning method.
#
# Paper: [arXiv 2410.02681](https://arxiv.org/abs/2410.02681) · official code:
# [ml-stat-Sustech/Outlier-Calibration](https://github.com/ml-stat-Sustech/Outlier-Calibration) (not read
# for this reproduction; the loss follows the paper's description and the closely related KgCoOp loss).
#
# ::: {.callout-note}
# ## What we reproduce / what we cannot
# - **Implemented as described:** the CLIP-style classifier p(y=c|x) = softmax(τ⟨f(x), w_c⟩); CoOp's
#   learned context (M = 4 vectors initialised from "a photo of a", placed by position); KgCoOp's loss
#   (λ = 8); DOR (top-K WordNet nouns by mean zero-shot cosine to the base classes, B outliers resampled at
#   every step, loss λ·(1 − mean cos) to their zero-shot features) on CoOp and on KgCoOp; the feature
#   divergence (FD) and logit-gap diagnostics; ECE, MCE, ACE and PIECE (`trustlib.metrics`).
# - **A stand-in for CLIP:** no offline package ships CLIP weights. The text tower is the frozen MiniLM
#   sentence encoder (all-MiniLM-L6-v2), fed `inputs_embeds` in which the four context positions are
#   learned; at initialisation the learned prompt gives exactly the zero-shot feature of
#   "a photo of a {class}.". The "images" are synthetic features: for class c an anchor
#   v_c = normalise(ψ("a satellite photo of a {c}.") + σ_c·ξ_c) — a shift shared by all classes (which
#   prompt tuning can learn and carry to new classes) plus a class-specific offset ξ_c (which base-class
#   cross-entropy can overfit) — and samples x = normalise(v_c + σ·ε). σ_c and σ put zero-shot accuracy
#   near 70 %; τ is fitted on held-out nouns so that zero-shot starts calibrated, as CLIP roughly is.
#   40 animal and food nouns are split at random, per seed, into base and new halves; 16 shots per base class.
# - **Shrunk for two CPU cores:** the cost is MiniLM's forward and backward passes. We train 60 steps
#   (Adam, lr 3·10⁻³, full 16-shot batch) instead of the paper's epochs of SGD, sample B = 16 outliers per
#   step (the paper does not give B; 64 was our first plan), use K ∈ {500, 2000} instead of 5,000, and keep
#   only nouns that MiniLM's tokenizer reads as one word piece (so every prompt has the same length and no
#   padding is computed); 3 seeds. Frozen pieces are computed once: zero-shot features of the whole pool
#   and of the classes, the word embeddings of every prompt.
# - **Not testable offline:** the paper's numbers on 11 image datasets with CLIP ViT-B/16 (the `full` profile
#   asks for CLIP and stops), the visual-outlier variant, domain generalisation. Our absolute numbers are
#   meaningless; the experiment tests the *mechanism*: what cross-entropy does to the text features, and
#   whether anchoring outlier words fixes it.
# :::

# %%
#| default_exp calibration.dor

# %%
#| export
from __future__ import annotations
import math, time
from dataclasses import dataclass
from typing import Optional
import numpy as np
from trustlib.config import BaseConfig, param, ConfigError, ResourceUnavailable, derive_seed, torch_threads
from trustlib.results import Result, Rule, judge, mean_ci
from trustlib import metrics as M

# %%
#| hide
from fastcore.test import test_eq, test_fail, test_close
import torch, warnings, logging

# %%
#| hide
torch.set_num_threads(1)   # the examples below run on one thread, as `run` does (cfg.n_threads)
warnings.filterwarnings("ignore", message="IProgress not found")   # text progress bars are fine here
logging.getLogger("transformers").setLevel(logging.ERROR)

# %% [markdown]
# ## Parameters
#
# Defaults are the `smoke` profile; `trustlib run dor --profile cpu` (or papermill with `-p profile cpu`)
# runs the published configuration. `None` means "the profile's value". Every field of `Config` (below)
# has one line here.

# %%
from typing import Optional

# %% tags=["parameters"]
profile: str = "smoke"  # smoke (CI, < 60 s) | cpu (published results, minutes) | full (paper scale)
seed: Optional[int] = None  # base random seed; every random choice derives from it
n_seeds: Optional[int] = None  # independent repetitions (class split, synthetic images, outlier draws)
n_classes: Optional[int] = None  # classes per split (base and new each; drawn from the 40 class nouns)
n_shots: Optional[int] = None  # training images per base class
n_test: Optional[int] = None  # test images per class
n_pretrain: Optional[int] = None  # held-out nouns whose synthetic images fit the temperature τ
image_template: Optional[str] = None  # prompt whose text feature is the shared part of every image anchor
sigma_class: Optional[float] = None  # scale σ_c of the class-specific anchor offsets
sigma: Optional[float] = None  # per-dimension noise σ of the synthetic image features
steps: Optional[int] = None  # prompt-tuning steps (full-batch Adam)
lr: Optional[float] = None  # Adam learning rate of the context vectors
ctx_init: Optional[str] = None  # words whose embeddings initialise the learned context (M: their word-piece count)
kg_lambda: Optional[float] = None  # KgCoOp weight λ on 1 − mean cos(w_c, w_c^zs) over base classes
dor_lambdas: Optional[list[float]] = None  # DOR weights λ tried on CoOp (the largest is the main DOR)
dor_ks: Optional[list[int]] = None  # outlier-set sizes K tried (top-K nouns by relevance; the largest is the main DOR)
kg_dor_lambda: Optional[float] = None  # DOR weight λ on top of KgCoOp
dor_batch: Optional[int] = None  # outliers B sampled at every step
min_zipf: Optional[float] = None  # wordfreq Zipf frequency a WordNet noun needs to enter the pool
max_pool: Optional[int] = None  # keep at most this many of the most frequent nouns (0: all)
n_bins: Optional[int] = None  # confidence bins of ECE, MCE, ACE and PIECE
piece_k: Optional[int] = None  # nearest training images that define the proximity of PIECE
piece_bins: Optional[int] = None  # equal-mass proximity bins of PIECE
fd_neighbours: Optional[int] = None  # nearest class features averaged by the feature-divergence score
log_every: Optional[int] = None  # steps between feature-divergence records
backbone: Optional[str] = None  # text tower and images: minilm (offline stand-in) | clip-vit-b16 (the paper's; full profile)
n_threads: Optional[int] = None  # torch CPU threads

# %% [markdown] tags=["injected-parameters"]
# **This page shows a run with** `profile = "cpu"` (run `cpu-bf21a9e8fb`, commit `fb342fa`, 182 s, 2026-12-01). Running the notebook yourself uses the parameters cell above as written (the fast `smoke` profile unless you change it); `trustlib run dor --profile cpu` repeats the run shown here.

# %% [markdown]
# The configuration: bounds on every number, the profile table, and the checks that need two fields.

# %%
#| export
CLASS_NAMES = tuple(("dog cat horse cow sheep pig goat rabbit mouse rat lion tiger bear wolf fox deer elephant giraffe zebra monkey "
                     "apple banana orange grape lemon cherry peach pear mango strawberry bread cheese butter rice pasta pizza cake cookie soup salad").split())

@dataclass
class Config(BaseConfig):
    "Configuration of the DOR reproduction (MiniLM text tower, synthetic image features, WordNet outliers)."
    n_seeds: int = param(1, "independent repetitions (class split, synthetic images, outlier draws)", ge=1, max=50, le=1000)
    n_classes: int = param(6, "classes per split (base and new each; drawn from the 40 class nouns)", ge=2, le=20)
    n_shots: int = param(8, "training images per base class", ge=1, max=256, le=100_000)
    n_test: int = param(30, "test images per class", ge=5, max=5000, le=1_000_000)
    n_pretrain: int = param(20, "held-out nouns whose synthetic images fit the temperature τ", ge=2, max=500, le=5000)
    image_template: str = param("a satellite photo of a {}.", "prompt whose text feature is the shared part of every image anchor")
    sigma_class: float = param(2.0, "scale σ_c of the class-specific anchor offsets", ge=0, le=100)
    sigma: float = param(0.1, "per-dimension noise σ of the synthetic image features", gt=0, le=10)
    steps: int = param(12, "prompt-tuning steps (full-batch Adam)", ge=1, max=2000, le=100_000)
    lr: float = param(3e-3, "Adam learning rate of the context vectors", gt=0, le=1)
    ctx_init: str = param("a photo of a", "words whose embeddings initialise the learned context (M: their word-piece count)")
    kg_lambda: float = param(8.0, "KgCoOp weight λ on 1 − mean cos(w_c, w_c^zs) over base classes", ge=0, le=1000)
    dor_lambdas: tuple[float, ...] = param((2.0, 8.0), "DOR weights λ tried on CoOp (the largest is the main DOR)", ge=0, le=1000)
    dor_ks: tuple[int, ...] = param((30, 60), "outlier-set sizes K tried (top-K nouns by relevance; the largest is the main DOR)", ge=1, max=20000, le=200_000)
    kg_dor_lambda: float = param(2.0, "DOR weight λ on top of KgCoOp", ge=0, le=1000)
    dor_batch: int = param(8, "outliers B sampled at every step", ge=1, max=512, le=100_000)
    min_zipf: float = param(3.5, "wordfreq Zipf frequency a WordNet noun needs to enter the pool", ge=0, le=8)
    max_pool: int = param(300, "keep at most this many of the most frequent nouns (0: all)", ge=0, le=1_000_000)
    n_bins: int = param(15, "confidence bins of ECE, MCE, ACE and PIECE", ge=2, le=1000)
    piece_k: int = param(10, "nearest training images that define the proximity of PIECE", ge=1, le=1000)
    piece_bins: int = param(5, "equal-mass proximity bins of PIECE", ge=1, le=100)
    fd_neighbours: int = param(3, "nearest class features averaged by the feature-divergence score", ge=1, le=19)
    log_every: int = param(4, "steps between feature-divergence records", ge=1, le=100_000)
    backbone: str = param("minilm", "text tower and images: minilm (offline stand-in) | clip-vit-b16 (the paper's; full profile)",
                          choices=("minilm", "clip-vit-b16"))
    n_threads: Optional[int] = param(1, "torch CPU threads", ge=1, le=1024)
    PROFILE_DEFAULTS = {
        "cpu": dict(n_seeds=3, n_classes=20, n_shots=16, n_test=100, n_pretrain=40, steps=60, dor_ks=(500, 2000), dor_batch=16,
                    max_pool=0, log_every=10),
        "full": dict(n_seeds=3, n_classes=20, n_shots=16, n_test=100, n_pretrain=40, steps=60, dor_ks=(500, 2000), dor_batch=16,
                     max_pool=0, log_every=10, backbone="clip-vit-b16"),
    }
    def validate(self):
        if not self.dor_lambdas: raise ConfigError("parameter 'dor_lambdas': give at least one DOR weight")
        if not self.dor_ks: raise ConfigError("parameter 'dor_ks': give at least one outlier-set size")
        if self.image_template.count("{}") != 1: raise ConfigError("parameter 'image_template': it must contain one '{}' for the class name")
        if not self.ctx_init.strip(): raise ConfigError("parameter 'ctx_init': give at least one word")
        if self.fd_neighbours >= self.n_classes:
            raise ConfigError(f"parameter 'fd_neighbours': {self.fd_neighbours} needs more than {self.fd_neighbours} classes per split, got n_classes {self.n_classes}")
        if self.max_pool and max(self.dor_ks) > self.max_pool:
            raise ConfigError(f"parameter 'dor_ks': K = {max(self.dor_ks)} exceeds the pool size max_pool = {self.max_pool}")
        if self.piece_k >= self.n_classes * self.n_shots:
            raise ConfigError(f"parameter 'piece_k': {self.piece_k} needs more training images than n_classes × n_shots = {self.n_classes * self.n_shots}")


# %%
cfg = Config.from_namespace(globals())
cfg

# %%
test_eq(Config.unbounded_fields(), [])
test_fail(lambda: Config.from_params("smoke", kg_lambda=-1.0), contains="'kg_lambda'")
test_fail(lambda: Config.from_params("smoke", dor_lambdas=[2.0, -8.0]), contains="'dor_lambdas'")
test_fail(lambda: Config.from_params("smoke", dor_ks=[500]), contains="exceeds the pool size")
test_fail(lambda: Config.from_params("smoke", n_classes=21), contains="'n_classes'")
test_fail(lambda: Config.from_params("smoke", image_template="a photo"), contains="'image_template'")
test_fail(lambda: Config.from_params("smoke", backbone="vit"), contains="'backbone'")
test_eq(Config.from_params("cpu").dor_ks, (500, 2000))
test_eq(Config.from_params("cpu").n_seeds, 3)


# %% [markdown]
# ## The outlier vocabulary: WordNet nouns
#
# `spacy-lookups-data` ships the WordNet 3.0 noun index used by spaCy's English lemmatiser (57,528
# entries). We keep lower-case alphabetic nouns of at least three letters that are common enough
# (`wordfreq` Zipf frequency ≥ `min_zipf`) and that MiniLM's tokenizer reads as one word piece, sorted
# from most to least frequent. The list is read from the installed package at run time.

# %%
#| export
def wordnet_nouns(min_zipf:float=3.5, # wordfreq Zipf frequency a noun needs (3.5: about 3 per million words)
                  min_len:int=3, # shortest noun kept
                  tokenizer=None, # keep only nouns this tokenizer reads as one token (None: no such filter)
                  ) -> list[str]:
    "Common WordNet nouns from `spacy-lookups-data`, most frequent first."
    import gzip, json
    from pathlib import Path
    try:
        import spacy_lookups_data
        from wordfreq import zipf_frequency
    except ImportError as e:
        raise ResourceUnavailable('the outlier vocabulary needs `spacy-lookups-data` and `wordfreq`: pip install "trustlib-icml25[text]"') from e
    path = Path(spacy_lookups_data.__file__).parent / "data" / "en_lemma_index.json.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f: nouns = json.load(f)["noun"]
    keep = [(w, zipf_frequency(w, "en")) for w in nouns if w.isalpha() and w.islower() and len(w) >= min_len]
    keep = [(w, z) for w, z in keep if z >= min_zipf]
    if tokenizer is not None: keep = [(w, z) for w, z in keep if len(tokenizer.tokenize(w)) == 1]
    return [w for w, _ in sorted(keep, key=lambda t: (-t[1], t[0]))]

def outlier_pool(nouns:list[str], class_names) -> list[str]:
    "`nouns` without any word that equals, contains or is contained in a class name."
    names = [c.lower() for c in class_names]
    return [w for w in nouns if not any(c in w or w in c for c in names)]


# %%
_nouns = wordnet_nouns(4.5)
assert len(_nouns) > 300 and "time" in _nouns[:50]
_pool = outlier_pool(_nouns, CLASS_NAMES)
test_eq([w for w in _pool if w in CLASS_NAMES or "cat" in w or w in "grape"], [])
test_eq(outlier_pool(["catfish", "car", "ape", "dog", "tree"], ["cat", "grape", "dog"]), ["car", "tree"])
len(_nouns), _pool[:12]

# %% [markdown]
# ## A learned-context prompt on MiniLM
#
# CoOp's prompt is "[V1]…[VM] [CLASS]." with M learned vectors in the token-embedding space. We tokenise
# the zero-shot prompt "a photo of a {class}." (here "a photo of a" is M = 4 word pieces), look up its word
# embeddings once, and replace the M positions after `[CLS]` — by position, not by token id — with the
# learned context. MiniLM adds its position and segment embeddings, runs its six frozen layers, and we
# mean-pool over the real tokens and L2-normalise. With the context at its initial value the input is the
# zero-shot prompt's, so the feature is the zero-shot feature exactly.

# %%
#| export
import torch
import torch.nn.functional as F

class PromptTower:
    "Frozen MiniLM text tower with M learnable context positions (CoOp-style prompts)."
    def __init__(self, tokenizer, model, ctx_init:str="a photo of a"):
        self.tok, self.model = tokenizer, model.eval()
        for p in self.model.parameters(): p.requires_grad_(False)
        self.ctx_init = ctx_init
        self.n_ctx = len(tokenizer.tokenize(ctx_init))
        ids = tokenizer(ctx_init, add_special_tokens=False, return_tensors="pt")["input_ids"][0]
        with torch.no_grad(): self.ctx0 = self.model.embeddings.word_embeddings(ids).clone()   # [M, D]
    @property
    def dim(self) -> int: return self.ctx0.shape[1]
    def prompts(self, names, template:str|None=None) -> dict:
        "Token ids, mask and (frozen) word embeddings of `template` (default: '{ctx_init} {}.') for each name."
        template = template or self.ctx_init + " {}."
        enc = self.tok([template.format(n) for n in names], padding=True, return_tensors="pt")
        with torch.no_grad(): emb = self.model.embeddings.word_embeddings(enc["input_ids"])
        return dict(ids=enc["input_ids"], mask=enc["attention_mask"], emb=emb)
    def _pool(self, h, mask):
        m = mask.unsqueeze(-1).to(h.dtype)
        return F.normalize((h * m).sum(1) / m.sum(1).clamp(min=1), dim=-1)
    def encode(self, ctx, p:dict, idx=None):
        "L2-normalised features of the prompts `p` (rows `idx`) with context `ctx` [M, D] at positions 1..M."
        emb, mask = (p["emb"], p["mask"]) if idx is None else (p["emb"][idx], p["mask"][idx])
        x = torch.cat([emb[:, :1], ctx.unsqueeze(0).expand(len(emb), -1, -1), emb[:, 1 + self.n_ctx:]], 1)
        return self._pool(self.model(inputs_embeds=x, attention_mask=mask).last_hidden_state, mask)
    @torch.no_grad()
    def zero_shot(self, names, template:str|None=None, batch_size:int=256):
        "Frozen features of the hand-written prompts (`template`, default '{ctx_init} {}.') for `names`, computed from token ids."
        out = []
        for s in range(0, len(names), batch_size):
            p = self.prompts(names[s:s + batch_size], template)
            out.append(self._pool(self.model(input_ids=p["ids"], attention_mask=p["mask"]).last_hidden_state, p["mask"]))
        return torch.cat(out) if out else torch.zeros(0, self.dim)

def load_tower(ctx_init:str="a photo of a") -> PromptTower:
    "The MiniLM prompt tower (`trustlib.models.load_minilm`, offline)."
    from trustlib.models import load_minilm
    tok, model = load_minilm()
    return PromptTower(tok, model, ctx_init)


# %%
tower = load_tower()
test_eq(tower.n_ctx, 4); test_eq(tower.dim, 384)
_names = ["dog", "strawberry", "rat"]
_p = tower.prompts(_names)
test_eq(tower.tok.convert_ids_to_tokens(_p["ids"][0])[:7], ["[CLS]", "a", "photo", "of", "a", "dog", "."])
_w_learned = tower.encode(tower.ctx0, _p)                 # learned-context path at initialisation
_w_zs = tower.zero_shot(_names)                           # zero-shot path from token ids
assert float((_w_learned - _w_zs).abs().max()) < 1e-5     # identical features at initialisation
test_close(_w_learned.norm(dim=1), torch.ones(3), eps=1e-5)
_ctx = (tower.ctx0 + 0.05 * torch.randn(tower.ctx0.shape, generator=torch.Generator().manual_seed(0))).requires_grad_(True)   # (a constant shift would vanish in the LayerNorm)
_w = tower.encode(_ctx, _p)
assert float((_w.detach() - _w_zs).abs().max()) > 1e-3            # a moved context moves the features
_w.sum().backward(); assert _ctx.grad.abs().sum() > 0 and all(p.grad is None for p in tower.model.parameters())


# %% [markdown]
# ## The losses: CoOp, KgCoOp and DOR
#
# The classifier is p(y=c|x) = softmax_c(τ⟨f(x), w_c⟩). CoOp minimises cross-entropy over the base classes.
# KgCoOp adds λ·(1 − mean_c cos(w_c, w_c^zs)) over the base classes. DOR adds, for a batch of B outliers
# o_b freshly drawn from the top-K set at every step,
# $$L_{\text{DOR}} = 1 - \frac1B\sum_{b=1}^B \cos\big(\psi(t'_{o_b}),\ \psi(t_{o_b})\big),$$
# where t′ is the learned prompt filled with o_b and t the hand-written one. Both regularisers are the
# same anchoring loss; they differ in *which* words are anchored. The outlier set is mined once: the
# relevance of a candidate is the mean cosine of its zero-shot feature to the base classes' zero-shot
# features, and the K most relevant form the set.

# %%
#| export
def anchor_loss(W, W_zs) -> torch.Tensor:
    "1 − mean cosine between rows of `W` and of the frozen `W_zs` (both L2-normalised): KgCoOp's and DOR's term."
    return 1 - (W * W_zs).sum(-1).mean()

def mine_outliers(pool_feats, base_feats, k:int):
    "(indices, scores) of the `k` pool words most similar on average to the base classes, most relevant first."
    if k > len(pool_feats): raise ConfigError(f"parameter 'dor_ks': K = {k} exceeds the outlier pool of {len(pool_feats)} nouns")
    score = (torch.as_tensor(pool_feats) @ torch.as_tensor(base_feats).T).mean(1)
    top = torch.topk(score, k)
    return top.indices, top.values

def feature_divergence(W, m:int=3) -> float:
    "FD: mean over classes of the mean cosine distance 1 − cos(w_c, w_c') to its `m` nearest other class features."
    W = torch.as_tensor(W)
    S = W @ W.T
    S = S - 3 * torch.eye(len(W), dtype=S.dtype)   # exclude self
    return float((1 - S.topk(m, dim=1).values).mean())

def logit_gap(logits) -> float:
    "Mean difference between the largest and the second-largest logit."
    top = torch.as_tensor(logits).topk(2, dim=1).values
    return float((top[:, 0] - top[:, 1]).mean())


# %%
_W = F.normalize(torch.randn(5, 8), dim=-1)
test_close(float(anchor_loss(_W, _W)), 0.0, eps=1e-6)
test_close(float(anchor_loss(_W, -_W)), 2.0, eps=1e-6)
test_close(feature_divergence(torch.ones(4, 3) / math.sqrt(3), m=2), 0.0, eps=1e-6)    # identical features: FD 0
_E = torch.eye(4)
test_close(feature_divergence(_E, m=2), 1.0, eps=1e-6)                                # orthogonal: distance 1
assert feature_divergence(F.normalize(_E + 0.5, dim=-1), m=2) < feature_divergence(_E, m=2)   # features spread apart → FD up
test_close(logit_gap(torch.tensor([[3.0, 1.0, 0.0], [0.0, 0.5, 2.0]])), 1.75)
_idx, _sc = mine_outliers(torch.eye(5), torch.tensor([[1.0, 0, 0, 0, 0], [0.6, 0.8, 0, 0, 0]]), 2)
test_eq(_idx.tolist(), [0, 1]); assert bool((_sc[:-1] >= _sc[1:]).all())
test_fail(lambda: mine_outliers(torch.eye(5), torch.eye(5), 6), contains="exceeds the outlier pool")

# %% [markdown]
# DOR's loss is 0 at initialisation (the learned prompt *is* the zero-shot prompt), and so is KgCoOp's:

# %%
_pp = tower.prompts(_pool[:16])
_zs_pool = tower.zero_shot(_pool[:16])
test_close(float(anchor_loss(tower.encode(tower.ctx0, _pp), _zs_pool)), 0.0, eps=1e-6)
test_close(float(anchor_loss(tower.encode(tower.ctx0, _p), _w_zs)), 0.0, eps=1e-6)


# %% [markdown]
# ## Synthetic "images" and the temperature
#
# For each class c: anchor v_c = normalise(ψ(image_template(c)) + σ_c·ξ_c) with ξ_c a random unit vector,
# and images x = normalise(v_c + σ·ε), ε ~ N(0, I). τ is fitted by maximum likelihood of the zero-shot
# classifier on images of `n_pretrain` held-out nouns (neither class names nor outliers' near neighbours
# in any special way: simply other common nouns), mimicking a CLIP whose pretraining made it calibrated.

# %%
#| export
def class_anchors(template_feats, sigma_class:float, rng:np.random.Generator) -> torch.Tensor:
    "Anchors normalise(ψ(template(c)) + σ_c·ξ_c), ξ_c uniform on the unit sphere."
    T = torch.as_tensor(template_feats, dtype=torch.float32)
    xi = F.normalize(torch.as_tensor(rng.normal(size=tuple(T.shape)), dtype=torch.float32), dim=-1)
    return F.normalize(T + sigma_class * xi, dim=-1)

def synthetic_images(anchors, n_per_class:int, sigma:float, rng:np.random.Generator):
    "(features [C·n, D], labels) with x = normalise(v_y + σ·ε)."
    A = torch.as_tensor(anchors, dtype=torch.float32)
    y = torch.arange(len(A)).repeat_interleave(n_per_class)
    x = A[y] + sigma * torch.as_tensor(rng.normal(size=(len(y), A.shape[1])), dtype=torch.float32)
    return F.normalize(x, dim=-1), y

def fit_temperature(x, y, W, bounds=(1.0, 1000.0)) -> float:
    "τ minimising the NLL of softmax(τ·x Wᵀ) on (x, y)."
    from scipy.optimize import minimize_scalar
    S = (torch.as_tensor(x) @ torch.as_tensor(W).T).double(); y = torch.as_tensor(y)
    f = lambda lt: float(F.cross_entropy(math.exp(lt) * S, y))
    return float(math.exp(minimize_scalar(f, bounds=tuple(map(math.log, bounds)), method="bounded").x))


# %%
_rng = np.random.default_rng(0)
_A = class_anchors(torch.eye(3, 16), 0.0, _rng)
test_close(_A, torch.eye(3, 16), eps=1e-6)                                     # σ_c = 0: anchors = template features
_x, _y = synthetic_images(_A, 50, 0.05, _rng)
test_eq(tuple(_x.shape), (150, 16)); test_close(_x.norm(dim=1), torch.ones(150), eps=1e-5)
assert float((_x @ _A.T).argmax(1).eq(_y).float().mean()) == 1.0              # low noise: separable
# a temperature fitted on labels drawn from softmax(τ₀·s) recovers τ₀
_S = torch.as_tensor(_rng.uniform(-1, 1, size=(4000, 5)), dtype=torch.float32)
_yy = torch.multinomial(torch.softmax(7.0 * _S, 1), 1).squeeze(1)
test_close(fit_temperature(_S, _yy, torch.eye(5)), 7.0, eps=0.5)


# %% [markdown]
# ## Prompt tuning
#
# `tune_prompt` trains the context vectors from their initial value with full-batch Adam on the 16-shot
# base set. A `Method` names the losses: CoOp is `Method("CoOp")`, KgCoOp adds `kg`, DOR adds `dor` with an
# outlier index set. Every `log_every` steps it records the feature divergence of the base and the new
# class features, and it times its steps.

# %%
#| export
@dataclass(frozen=True)
class Method:
    "A prompt-tuning method: CoOp's cross-entropy plus optional KgCoOp (`kg`) and DOR (`dor`) weights."
    name: str
    kg: float = 0.0          # KgCoOp weight λ
    dor: float = 0.0         # DOR weight λ
    k: int = 0               # outlier-set size K (DOR)
    outliers: str = "near"   # 'near' (top-K by relevance) or 'random' (K nouns drawn uniformly from the pool)

def tune_prompt(tower:PromptTower, x, y, base:dict, W_zs_base, method:Method, *, tau:float, steps:int, lr:float,
                pool:dict|None=None, pool_zs=None, outlier_idx=None, batch:int=16, new:dict|None=None,
                log_every:int=10, fd_m:int=3, seed:int=0):
    "Train the context for `method`; returns (context, history rows, seconds per step)."
    g = torch.Generator().manual_seed(seed)
    ctx = tower.ctx0.clone().requires_grad_(True)
    opt = torch.optim.Adam([ctx], lr=lr)
    hist, t0 = [], time.process_time()
    def log(step, Wb):
        with torch.no_grad(): Wn = tower.encode(ctx, new) if new is not None else None
        hist.append(dict(step=step, fd_base=feature_divergence(Wb.detach(), fd_m), fd_new=feature_divergence(Wn, fd_m) if Wn is not None else math.nan))
    for step in range(steps):
        W = tower.encode(ctx, base)
        if step % log_every == 0: log(step, W)
        loss = F.cross_entropy(tau * x @ W.T, y)
        if method.kg: loss = loss + method.kg * anchor_loss(W, W_zs_base)
        if method.dor:
            o = outlier_idx[torch.randint(len(outlier_idx), (batch,), generator=g)]
            loss = loss + method.dor * anchor_loss(tower.encode(ctx, pool, o), pool_zs[o])
        opt.zero_grad(); loss.backward(); opt.step()
    sec = (time.process_time() - t0) / max(steps, 1)
    with torch.no_grad(): log(steps, tower.encode(ctx, base))
    return ctx.detach(), hist, sec


# %% [markdown]
# A tiny check: a few CoOp steps on four classes lower the training loss, and with zero steps the context
# stays the zero-shot one.

# %%
_cls = ["dog", "cat", "apple", "bread"]
_pb, _zb = tower.prompts(_cls), tower.zero_shot(_cls)
_xa, _ya = synthetic_images(class_anchors(tower.zero_shot(_cls, "a satellite photo of a {}."), 2.0, _rng), 8, 0.1, _rng)
_ctx0, _, _ = tune_prompt(tower, _xa, _ya, _pb, _zb, Method("CoOp"), tau=60.0, steps=0, lr=3e-3)
assert torch.equal(_ctx0, tower.ctx0)
_ctx5, _h, _ = tune_prompt(tower, _xa, _ya, _pb, _zb, Method("CoOp"), tau=60.0, steps=5, lr=3e-3, log_every=5)
with torch.no_grad():
    _l0 = F.cross_entropy(60 * _xa @ tower.encode(_ctx0, _pb).T, _ya); _l5 = F.cross_entropy(60 * _xa @ tower.encode(_ctx5, _pb).T, _ya)
assert _l5 < _l0, (_l0, _l5)
test_eq([r["step"] for r in _h], [0, 5])


# %% [markdown]
# ## Evaluation
#
# On base and new test images separately (each split classified among its own classes, as in the
# base-to-new protocol): accuracy, mean confidence, ECE, MCE, ACE (equal-mass bins), PIECE (proximity to
# the k nearest *training* images), the logit gap, and FD of that split's class features. HM is the
# harmonic mean of base and new accuracy.

# %%
#| export
def evaluate_split(x, y, W, tau:float, proximity, n_bins:int=15, piece_bins:int=5, fd_m:int=3) -> dict:
    "Accuracy, confidence, ECE/MCE/ACE/PIECE, logit gap and FD of classifier softmax(τ x Wᵀ) on (x, y)."
    logits = tau * torch.as_tensor(x) @ torch.as_tensor(W).T
    p = torch.softmax(logits.double(), 1).numpy(); yy = np.asarray(y)
    return dict(acc=M.accuracy(yy, p), conf=float(p.max(1).mean()), ece=M.ece(yy, p, n_bins), mce=M.mce(yy, p, n_bins),
                ace=M.ace(yy, p, n_bins), piece=M.piece(yy, p, proximity, n_bins, piece_bins),
                logit_gap=logit_gap(logits), fd=feature_divergence(W, fd_m))

def harmonic_mean(a:float, b:float) -> float:
    "HM of base and new accuracy."
    return 2 * a * b / (a + b) if a + b > 0 else 0.0


# %%
_r = evaluate_split(_xa, _ya, _zb, 60.0, np.ones(len(_ya)), n_bins=10, piece_bins=1, fd_m=2)
test_close(_r["piece"], _r["ece"])                     # one proximity bin: PIECE = ECE
test_close(_r["acc"], float((_xa @ _zb.T).argmax(1).eq(_ya).float().mean()))
assert 0 <= _r["ece"] <= 1 and _r["mce"] >= _r["ece"] - 1e-12
test_close(harmonic_mean(0.8, 0.6), 2 * 0.48 / 1.4)
_r


# %% [markdown]
# ## One seed of the experiment
#
# `run_seed` draws the base/new split, the class offsets and the images of one seed, fits τ, mines the
# outlier sets from the (shared, precomputed) zero-shot features of the pool, trains every method, and
# returns one row per (method, split) plus the FD histories and, for the reliability diagrams, the
# probabilities of the main methods.

# %%
#| export
def methods_for(cfg:Config) -> list[Method]:
    "Zero-shot, CoOp, KgCoOp, CoOp+DOR on the (λ, K) grid, KgCoOp+DOR, and CoOp+DOR with random nouns."
    lam, K = max(cfg.dor_lambdas), max(cfg.dor_ks)
    ms = [Method("Zero-shot"), Method("CoOp"), Method("KgCoOp", kg=cfg.kg_lambda)]
    ms += [Method(f"CoOp+DOR λ={l:g} K={k}", dor=l, k=k) for l in sorted(cfg.dor_lambdas) for k in sorted(cfg.dor_ks)]
    ms += [Method(f"KgCoOp+DOR λ={cfg.kg_dor_lambda:g} K={K}", kg=cfg.kg_lambda, dor=cfg.kg_dor_lambda, k=K),
           Method(f"CoOp+random λ={lam:g} K={K}", dor=lam, k=K, outliers="random")]
    return ms

def main_dor(cfg:Config) -> str:
    "Name of the main CoOp+DOR method (the largest λ and K)."
    return f"CoOp+DOR λ={max(cfg.dor_lambdas):g} K={max(cfg.dor_ks)}"

def run_seed(cfg:Config, tower:PromptTower, shared:dict, s:int, progress=None):
    "Rows (method × split), FD history and kept probabilities for seed index `s`."
    rng = np.random.default_rng(derive_seed(cfg.seed, "data", s))
    perm = rng.permutation(len(CLASS_NAMES)); n = cfg.n_classes
    base_i, new_i = perm[:n], perm[n:2 * n]
    anchors = class_anchors(shared["img_feats"], cfg.sigma_class, rng)
    x_tr, y_tr = synthetic_images(anchors[base_i], cfg.n_shots, cfg.sigma, rng)
    x_b, y_b = synthetic_images(anchors[base_i], cfg.n_test, cfg.sigma, rng)
    x_n, y_n = synthetic_images(anchors[new_i], cfg.n_test, cfg.sigma, rng)
    # temperature from held-out "pretraining" nouns (not class names)
    pre = rng.choice(len(shared["pool"]), size=cfg.n_pretrain, replace=False)
    pre_anchor = class_anchors(tower.zero_shot([shared["pool"][i] for i in pre], cfg.image_template), cfg.sigma_class, rng)
    x_p, y_p = synthetic_images(pre_anchor, cfg.n_test, cfg.sigma, rng)
    tau = fit_temperature(x_p, y_p, shared["pool_zs"][pre])
    k_prox = min(cfg.piece_k, len(x_tr) - 1)
    prox_b, prox_n = M.knn_proximity(x_b, x_tr, k_prox), M.knn_proximity(x_n, x_tr, k_prox)
    base = {k: v[base_i] for k, v in shared["cls"].items()}; new = {k: v[new_i] for k, v in shared["cls"].items()}
    Wzs_b, Wzs_n = shared["cls_zs"][base_i], shared["cls_zs"][new_i]
    near = {k: mine_outliers(shared["pool_zs"], Wzs_b, k)[0] for k in cfg.dor_ks}
    rand = torch.as_tensor(np.random.default_rng(derive_seed(cfg.seed, "rand", s)).choice(len(shared["pool"]), max(cfg.dor_ks), replace=False))
    rows, hist, probs, speed = [], [], {}, {}
    keep = {"Zero-shot", "CoOp", "KgCoOp", main_dor(cfg)}
    for j, m in enumerate(methods_for(cfg)):
        if m.name == "Zero-shot":
            ctx, h, sec = tower.ctx0, [dict(step=0, fd_base=feature_divergence(Wzs_b, cfg.fd_neighbours), fd_new=feature_divergence(Wzs_n, cfg.fd_neighbours))], math.nan
        else:
            idx = (near[m.k] if m.outliers == "near" else rand[:m.k]) if m.dor else None
            ctx, h, sec = tune_prompt(tower, x_tr, y_tr, base, Wzs_b, m, tau=tau, steps=cfg.steps, lr=cfg.lr, pool=shared["pool_p"],
                                      pool_zs=shared["pool_zs"], outlier_idx=idx, batch=cfg.dor_batch, new=new,
                                      log_every=cfg.log_every, fd_m=cfg.fd_neighbours, seed=derive_seed(cfg.seed, "tune", s, j))
            speed[m.name] = sec
        with torch.no_grad(): W_b, W_n = tower.encode(ctx, base), tower.encode(ctx, new)
        for split, (x, y, W, prox) in dict(base=(x_b, y_b, W_b, prox_b), new=(x_n, y_n, W_n, prox_n)).items():
            r = evaluate_split(x, y, W, tau, prox, cfg.n_bins, cfg.piece_bins, cfg.fd_neighbours)
            rows.append(dict(seed=s, method=m.name, split=split, tau=tau, **r))
            if s == 0 and m.name in keep:
                probs[(m.name, split)] = (y.numpy(), torch.softmax(tau * x @ W.T, 1).double().numpy())
        hist += [dict(seed=s, method=m.name, **r) for r in h]
        if progress is not None: progress.update(1)
    return rows, hist, probs, speed


# %% [markdown]
# ## Claims and the rules that grade them
#
# Stated before the run; every graded quantity is computed per seed and summarised by its mean and 95 %
# Student-t interval over seeds (`mean_ci`). A rule is `reproduced` when the whole interval clears the first
# threshold, `partially` when it clears the second (always on the claim's side of zero), `inconclusive`
# when the interval straddles the weakest threshold (and always with one seed), `not_reproduced` otherwise.
# "DOR" below is the main CoOp+DOR (largest λ and K: λ = 8, K = 2000 in the cpu profile).
#
# | claim | measured per seed | reproduced | partially |
# |---|---|---|---|
# | 1. CoOp makes new classes overconfident: confidence rises more than accuracy | (conf − acc) on new classes, CoOp minus zero-shot | > 0.03 | > 0 |
# | 2. CE raises the feature divergence of new-class text features | FD_new, CoOp minus zero-shot | > 0.02 | > 0 |
# | 3. KgCoOp is underconfident on base classes | acc − conf on base classes, KgCoOp | > 0.02 | > 0 |
# | 4. **headline**: DOR lowers CoOp's new-class ECE while keeping most of its base gain | ECE_new(CoOp) − ECE_new(DOR); base-gain kept (acc_b(DOR) − acc_b(ZS)) / (acc_b(CoOp) − acc_b(ZS)), mean over seeds | ECE gap reproduced (> 0.02) and kept ≥ 0.5 | ECE gap at least partially (> 0) |
# | 5. DOR improves the base-to-new harmonic mean over CoOp | HM(DOR) − HM(CoOp) | > 0.01 | > 0 |
# | 6. near-OOD outliers beat random nouns | ECE_new(random, same λ and K) − ECE_new(DOR) | > 0.005 | > 0 |
#
# The headline needs the condition it is about: CoOp must raise new-class ECE over zero-shot (interval
# above 0) and gain base accuracy; otherwise it is `inconclusive` whatever DOR does. Zero-shot calibration
# (τ is fitted for it), the ECE-vs-λ curve and KgCoOp+DOR are shown, not graded; the paper's CLIP numbers
# are not testable offline.

# %%
#| export
RULES = {
    "overconf_new": Rule(">", 0.03, 0.0, what="Δ(conf − acc) on new classes, CoOp − zero-shot"),
    "fd_new": Rule(">", 0.02, 0.0, what="Δ FD of new-class features, CoOp − zero-shot"),
    "underconf_base": Rule(">", 0.02, 0.0, what="acc − conf on base classes, KgCoOp"),
    "ece_new_dor": Rule(">", 0.02, 0.0, what="ECE_new(CoOp) − ECE_new(CoOp+DOR)"),
    "hm": Rule(">", 0.01, 0.0, what="HM(CoOp+DOR) − HM(CoOp)"),
    "near_vs_random": Rule(">", 0.005, 0.0, what="ECE_new(random nouns) − ECE_new(near-OOD)"),
}
KEEP_BASE_GAIN = 0.5   # DOR keeps at least half of CoOp's base-accuracy gain over zero-shot

def _wide(runs, split:str, col:str):
    "seed × method table of `col` on `split`."
    return runs[runs.split == split].pivot(index="seed", columns="method", values=col)

def _per_seed_hm(runs):
    a = runs.pivot_table(index=["seed", "method"], columns="split", values="acc")
    return a.apply(lambda r: harmonic_mean(r["base"], r["new"]), axis=1).unstack("method")

def claims(cfg:Config, runs) -> tuple[dict, list]:
    "Metrics and verdicts from the per-(seed, method, split) table `runs`."
    dor, K, lam = main_dor(cfg), max(cfg.dor_ks), max(cfg.dor_lambdas)
    rnd = f"CoOp+random λ={lam:g} K={K}"
    ece_n, ece_b = _wide(runs, "new", "ece"), _wide(runs, "base", "ece")
    acc_n, acc_b = _wide(runs, "new", "acc"), _wide(runs, "base", "acc")
    conf_n, conf_b = _wide(runs, "new", "conf"), _wide(runs, "base", "conf")
    fd_n = _wide(runs, "new", "fd"); hm = _per_seed_hm(runs)
    oc = (conf_n - acc_n)
    e1 = mean_ci((oc["CoOp"] - oc["Zero-shot"]).values)
    e2 = mean_ci((fd_n["CoOp"] - fd_n["Zero-shot"]).values)
    e3 = mean_ci((acc_b["KgCoOp"] - conf_b["KgCoOp"]).values)
    e4 = mean_ci((ece_n["CoOp"] - ece_n[dor]).values)
    gain_coop = float((acc_b["CoOp"] - acc_b["Zero-shot"]).mean()); gain_dor = float((acc_b[dor] - acc_b["Zero-shot"]).mean())
    kept = gain_dor / gain_coop if gain_coop > 0 else math.nan
    e5 = mean_ci((hm[dor] - hm["CoOp"]).values)
    e6 = mean_ci((ece_n[rnd] - ece_n[dor]).values)
    cond_ece = mean_ci((ece_n["CoOp"] - ece_n["Zero-shot"]).values)
    cond = bool(cond_ece.has_interval and cond_ece.lo > 0 and gain_coop > 0)
    metrics = {"condition/zs_ece_base": float(ece_b["Zero-shot"].mean()), "condition/zs_ece_new": float(ece_n["Zero-shot"].mean()),
               "condition/zs_acc_base": float(acc_b["Zero-shot"].mean()), "condition/zs_acc_new": float(acc_n["Zero-shot"].mean()),
               "condition/coop_base_gain": gain_coop, "condition/coop_ece_new_rise": cond_ece.value, "condition/coop_miscalibrates_new": cond,
               "overconf_new_delta": e1.value, "fd_new_delta": e2.value, "kgcoop_underconf_base": e3.value,
               "dor_ece_new_drop": e4.value, "dor_base_gain_kept": kept, "dor_hm_gain": e5.value, "near_vs_random_ece_new": e6.value}
    for mname, short in (("Zero-shot", "zs"), ("CoOp", "coop"), ("KgCoOp", "kgcoop"), (dor, "dor")):
        for sp, tab in (("base", ece_b), ("new", ece_n)): metrics[f"{short}/ece_{sp}"] = float(tab[mname].mean())
        metrics[f"{short}/acc_base"] = float(acc_b[mname].mean()); metrics[f"{short}/acc_new"] = float(acc_n[mname].mean())
        metrics[f"{short}/hm"] = float(hm[mname].mean())
    pct = lambda t, m, sp="new": f"{100 * float(t[m].mean()):.1f}"
    v = []
    v.append(judge("CoOp makes new classes overconfident: their confidence rises more than their accuracy", "new-class ECE 4.61 (zero-shot) → 14.58 (CoOp), 11-dataset average",
                   f"(conf − acc) on new classes {100 * float(oc['Zero-shot'].mean()):+.1f} → {100 * float(oc['CoOp'].mean()):+.1f} points; ECE_new {pct(ece_n, 'Zero-shot')} → {pct(ece_n, 'CoOp')} %; Δ = {e1}",
                   rule=RULES["overconf_new"], value=e1))
    v.append(judge("Cross-entropy tuning increases the feature divergence of new-class text features", "FD rises under CoOp (paper's Fig. on FD), pinned by KgCoOp",
                   f"FD_new {float(fd_n['Zero-shot'].mean()):.3f} → {float(fd_n['CoOp'].mean()):.3f} (KgCoOp {float(fd_n['KgCoOp'].mean()):.3f}); Δ = {e2}",
                   rule=RULES["fd_new"], value=e2))
    v.append(judge("KgCoOp keeps confidence near zero-shot while base accuracy rises: base classes underconfident", "KgCoOp base ECE 5.82 (underconfident)",
                   f"KgCoOp base acc {pct(acc_b, 'KgCoOp')} %, conf {pct(conf_b, 'KgCoOp')} %; acc − conf = {e3}", rule=RULES["underconf_base"], value=e3))
    r4, _ = RULES["ece_new_dor"].grade(e4)
    ok_keep = bool(math.isfinite(kept) and kept >= KEEP_BASE_GAIN)
    v.append(judge("DOR lowers CoOp's new-class ECE while keeping most of its base-class gain", "CoOp new ECE 14.58 → 6.49 with DOR; base ECE 3.07 → 2.67",
                   f"ECE_new {pct(ece_n, 'CoOp')} → {pct(ece_n, dor)} % (drop {e4}); base acc ZS {pct(acc_b, 'Zero-shot')}, CoOp {pct(acc_b, 'CoOp')}, DOR {pct(acc_b, dor)} % "
                   f"(gain kept {kept:.2f}); ECE_base CoOp {pct(ece_b, 'CoOp')} → DOR {pct(ece_b, dor)} %",
                   reproduced=cond and r4 == "reproduced" and ok_keep, partially=cond and r4 in ("reproduced", "partially"),
                   inconclusive=(not cond) or r4 == "inconclusive",
                   rule_text=f"reproduced if the ECE drop is 'reproduced' by its rule ({RULES['ece_new_dor'].text()}) and DOR keeps ≥ {KEEP_BASE_GAIN:g} of CoOp's base-accuracy gain; "
                             "partially if the ECE drop is at least 'partially'; inconclusive if its interval straddles 0 or CoOp does not miscalibrate new classes here",
                   reason=f"condition (CoOp raises ECE_new over zero-shot: {cond_ece}; base gain {gain_coop:+.3f}) {'holds' if cond else 'fails'}; ECE-drop grade: {r4}",
                   headline=True))
    v.append(judge("DOR improves the base-to-new harmonic mean of accuracy over CoOp", "HM 72.36 → 77.61",
                   f"HM CoOp {pct(hm, 'CoOp')} → DOR {pct(hm, dor)} %; Δ = {e5}", rule=RULES["hm"], value=e5))
    v.append(judge("Near-OOD outliers (top-K by relevance) beat random nouns", "near-OOD better than far-OOD and random outliers (ablation)",
                   f"ECE_new random {pct(ece_n, rnd)} vs near-OOD {pct(ece_n, dor)} %; Δ = {e6}", rule=RULES["near_vs_random"], value=e6))
    v.append(judge("Zero-shot CLIP is roughly calibrated on base and new classes", "ECE 3.58 base / 4.61 new",
                   f"zero-shot ECE {pct(ece_b, 'Zero-shot')} base / {pct(ece_n, 'Zero-shot')} new %, accuracy {pct(acc_b, 'Zero-shot')} / {pct(acc_n, 'Zero-shot')} %",
                   verdict="illustrated", reason="true by construction here: τ is fitted on held-out nouns so that the stand-in starts calibrated"))
    lam_txt = "; ".join(f"λ={l:g}: " + ", ".join(f"K={k} {pct(ece_n, f'CoOp+DOR λ={l:g} K={k}')} %" for k in sorted(cfg.dor_ks)) for l in sorted(cfg.dor_lambdas))
    v.append(judge("New-class ECE as a function of the DOR weight λ and the outlier-set size K", "λ = 8 for CoOp (the paper's default)",
                   f"CoOp (λ = 0) {pct(ece_n, 'CoOp')} %; {lam_txt}", verdict="illustrated", reason="a sweep shown for information, not a claim of the abstract"))
    kgd = f"KgCoOp+DOR λ={cfg.kg_dor_lambda:g} K={K}"
    v.append(judge("DOR is a plug-in: it combines with KgCoOp", "KgCoOp base ECE 5.82 → 6.07 with DOR",
                   f"KgCoOp → KgCoOp+DOR: base acc {pct(acc_b, 'KgCoOp')} → {pct(acc_b, kgd)} %, ECE_base {pct(ece_b, 'KgCoOp')} → {pct(ece_b, kgd)} %, "
                   f"ECE_new {pct(ece_n, 'KgCoOp')} → {pct(ece_n, kgd)} %", verdict="illustrated", reason="the paper reports no new-class change for KgCoOp+DOR to compare with"))
    v.append(judge("The numbers on 11 image datasets with CLIP ViT-B/16 (base-to-new and domain generalisation)", "e.g. CoOp HM 72.36 → 77.61, ECE_new 14.58 → 6.49",
                   "not run", verdict="not_testable_offline", reason="CLIP weights and the 11 image datasets are not available offline; the full profile asks for them"))
    return metrics, v


# %% [markdown]
# The rules on crafted tables with known answers: a CoOp that is overconfident on new classes and a DOR
# that fixes it and keeps its base gain → reproduced; a DOR that fixes ECE but loses the base gain →
# partially; a DOR that makes things worse → not reproduced; one seed → inconclusive; and a CoOp that is
# not miscalibrated → the headline is inconclusive whatever DOR does.

# %%
import pandas as pd


# %%
def _crafted(dor_ece_new=0.04, dor_acc_b=0.85, coop_ece_new=0.14, n_seeds=3, jitter=0.002):
    rng = np.random.default_rng(0); c = Config.from_params("smoke"); rows = []
    dor, K, lam = main_dor(c), max(c.dor_ks), max(c.dor_lambdas)
    table = {"Zero-shot": dict(base=(0.70, 0.70, 0.03, 0.40), new=(0.68, 0.68, 0.03, 0.40)),
             "CoOp": dict(base=(0.90, 0.90, 0.03, 0.55), new=(0.55, 0.55 + coop_ece_new, coop_ece_new, 0.50)),
             "KgCoOp": dict(base=(0.85, 0.78, 0.07, 0.42), new=(0.66, 0.67, 0.03, 0.41)),
             dor: dict(base=(dor_acc_b, dor_acc_b, 0.03, 0.43), new=(0.67, 0.67 + dor_ece_new, dor_ece_new, 0.41)),
             f"CoOp+random λ={lam:g} K={K}": dict(base=(0.85, 0.85, 0.03, 0.45), new=(0.64, 0.70, 0.06, 0.45))}
    for s in range(n_seeds):
        for m, d in table.items():
            for sp, (acc, conf, e, fd) in d.items():
                j = jitter * rng.normal(size=4)
                rows.append(dict(seed=s, method=m, split=sp, acc=acc + j[0], conf=conf + j[1], ece=e + j[2], fd=fd + j[3]))
    for m in methods_for(c):   # methods the table leaves out, as zero-shot copies
        if m.name not in table:
            rows += [dict(r, method=m.name) for r in rows if r["method"] == "Zero-shot" and r["seed"] < n_seeds]
    return pd.DataFrame(rows)

_c = Config.from_params("smoke")
def _v(runs, i=3): return claims(_c, runs)[1][i].verdict
test_eq(_v(_crafted()), "reproduced")
test_eq(_v(_crafted(dor_acc_b=0.72)), "partially")                 # ECE fixed, base gain lost (kept 0.1)
test_eq(_v(_crafted(dor_ece_new=0.20)), "not_reproduced")          # DOR worse than CoOp
test_eq(_v(_crafted(n_seeds=1)), "inconclusive")                   # one seed: no interval
test_eq(_v(_crafted(coop_ece_new=0.03, dor_ece_new=0.01)), "inconclusive")   # CoOp not miscalibrated: condition fails
_vs = claims(_c, _crafted())[1]
test_eq([x.verdict for x in _vs[:3]], ["reproduced"] * 3)           # overconfidence, FD rise, KgCoOp underconfidence
test_eq(_vs[4].verdict, "reproduced")                               # HM 0.61 → 0.75
test_eq(_vs[5].verdict, "reproduced")                               # random nouns: ECE 0.06 vs 0.04
test_eq(sum(x.headline for x in _vs), 1)
test_eq(claims(_c, _crafted(coop_ece_new=-0.02))[1][0].verdict, "not_reproduced")   # CoOp underconfident on new: the opposite


# %% [markdown]
# ## `run`: the whole experiment

# %%
#| export
def _check_backbone(cfg:Config):
    "The paper's backbone (CLIP ViT-B/16 on 11 image datasets) is not available offline."
    if cfg.backbone == "minilm": return
    try: import open_clip  # noqa: F401
    except ImportError: raise ResourceUnavailable("backbone 'clip-vit-b16' needs open_clip with CLIP ViT-B/16 weights and the 11 base-to-new image datasets "
                                                  "(ImageNet, Caltech101, OxfordPets, ...); none ships offline. Run the cpu profile for the MiniLM stand-in") from None
    raise ResourceUnavailable("the CLIP image pipeline for the 11 datasets is not part of this offline reproduction; run the cpu profile")

def run(cfg:Config, progress:bool=True) -> Result:
    "Run the DOR reproduction described by `cfg`; returns metrics, tables, figures and verdicts."
    import pandas as pd
    from tqdm.auto import tqdm
    _check_backbone(cfg)
    with torch_threads(cfg.n_threads):
        tower = load_tower(cfg.ctx_init)
        t0 = time.process_time()
        nouns = wordnet_nouns(cfg.min_zipf, tokenizer=tower.tok)
        pool = outlier_pool(nouns, CLASS_NAMES)
        if cfg.max_pool: pool = pool[:cfg.max_pool]
        if max(cfg.dor_ks) > len(pool): raise ConfigError(f"parameter 'dor_ks': K = {max(cfg.dor_ks)} exceeds the outlier pool of {len(pool)} nouns")
        shared = dict(pool=pool, pool_zs=tower.zero_shot(pool), pool_p=tower.prompts(pool),
                      cls=tower.prompts(CLASS_NAMES), cls_zs=tower.zero_shot(CLASS_NAMES), img_feats=tower.zero_shot(CLASS_NAMES, cfg.image_template))
        pool_sec = time.process_time() - t0
        ms = methods_for(cfg)
        bar = tqdm(total=cfg.n_seeds * len(ms), desc="prompt tunings", disable=not progress)
        rows, hist, probs, speed = [], [], {}, []
        for s in range(cfg.n_seeds):
            r, h, p, sp = run_seed(cfg, tower, shared, s, bar)
            rows += r; hist += h; probs.update(p); speed.append(sp)
        bar.close()
    runs, history = pd.DataFrame(rows), pd.DataFrame(hist)
    metrics, verdicts = claims(cfg, runs)
    metrics["pool_size"] = len(pool)
    metrics["speed/pool_features_seconds"] = pool_sec
    metrics["speed/coop_step_seconds"] = float(np.mean([d["CoOp"] for d in speed]))
    metrics["speed/dor_step_seconds"] = float(np.mean([d[main_dor(cfg)] for d in speed]))
    cols = ["acc", "conf", "ece", "mce", "ace", "piece", "logit_gap", "fd"]
    order = [m.name for m in ms]
    summary = runs.groupby(["method", "split"], sort=False)[cols].mean().unstack("split")
    summary.columns = [f"{c}_{s}" for c, s in summary.columns]
    summary.insert(0, "hm", _per_seed_hm(runs).mean())
    summary = (100 * summary.loc[order]).round(2).rename(columns={"logit_gap_base": "logit_gap_base (×100)", "logit_gap_new": "logit_gap_new (×100)"})
    tables = dict(runs=runs, history=history, summary=summary)
    return Result(paper="dor", config=cfg.to_dict(), metrics=metrics, verdicts=verdicts, tables=tables,
                  figures=make_figures(cfg, runs, history, probs))

def make_figures(cfg:Config, runs, history, probs) -> dict:
    "Reliability diagrams (seed 0), FD over training steps, ECE vs λ, near-OOD vs random outliers."
    import matplotlib.pyplot as plt, seaborn as sns, pandas as pd
    figs, dor = {}, main_dor(cfg)
    main = ["Zero-shot", "CoOp", "KgCoOp", dor]
    fig, axes = plt.subplots(2, 4, figsize=(15, 7.5))
    for i, sp in enumerate(("base", "new")):
        for j, m in enumerate(main):
            if (m, sp) in probs:
                M.reliability_diagram(*probs[(m, sp)], n_bins=10, ax=axes[i, j], label=m)
                axes[i, j].set_title(f"{m}: {sp} classes (seed 0)", fontsize=9)
    fig.tight_layout(); figs["reliability"] = fig
    h = history[history.method.isin(["CoOp", "KgCoOp", dor])].melt(id_vars=["seed", "method", "step"], value_vars=["fd_base", "fd_new"], var_name="split", value_name="fd")
    h["split"] = h.split.str.replace("fd_", "") + " classes"
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, sp in zip(axes, ("base classes", "new classes")):
        sns.lineplot(data=h[h.split == sp], x="step", y="fd", hue="method", errorbar="sd", ax=ax)
        z = history[history.method == "Zero-shot"]["fd_" + sp.split()[0]].mean()
        ax.axhline(z, ls="--", c="grey", lw=1, label="zero-shot"); ax.legend(fontsize=8)
        ax.set_xlabel("training step"); ax.set_ylabel(f"feature divergence (mean 1 − cos to {cfg.fd_neighbours} nearest)"); ax.set_title(sp)
    fig.tight_layout(); figs["fd_over_steps"] = fig
    lam_rows = []
    for _, r in runs.iterrows():
        if r.method == "CoOp": lam_rows += [dict(r, lam=0.0, K=k) for k in cfg.dor_ks]
        elif r.method.startswith("CoOp+DOR"):
            lam_rows.append(dict(r, lam=float(r.method.split("λ=")[1].split()[0]), K=int(r.method.split("K=")[1])))
    lam = pd.DataFrame(lam_rows)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, sp in zip(axes, ("base", "new")):
        sns.lineplot(data=lam[lam.split == sp], x="lam", y="ece", hue="K", style="K", markers=True, errorbar="sd", ax=ax, palette="deep")
        ax.axhline(runs[(runs.method == "Zero-shot") & (runs.split == sp)].ece.mean(), ls="--", c="grey", lw=1)
        ax.set_xlabel("DOR weight λ (0: CoOp)"); ax.set_ylabel(f"ECE on {sp} classes ({cfg.n_bins} bins)"); ax.set_title(f"{sp} classes (dashed: zero-shot)")
    fig.tight_layout(); figs["ece_vs_lambda"] = fig
    K, l = max(cfg.dor_ks), max(cfg.dor_lambdas)
    sel = runs[runs.method.isin(["CoOp", dor, f"CoOp+random λ={l:g} K={K}"])].copy()
    sel["method"] = sel.method.replace({dor: f"near-OOD (top-{K})", f"CoOp+random λ={l:g} K={K}": f"random nouns ({K})"})
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, (col, lab) in zip(axes, (("ece", "ECE"), ("acc", "accuracy"))):
        sns.barplot(data=sel, x="split", y=col, hue="method", errorbar="sd", ax=ax)
        ax.set_xlabel("classes"); ax.set_ylabel(f"{lab} (mean ± sd over seeds)"); ax.legend(fontsize=8)
    fig.suptitle(f"CoOp + DOR (λ = {l:g}): outliers near the base classes vs random nouns"); fig.tight_layout(); figs["near_vs_random"] = fig
    plt.close("all")
    return figs


# %% [markdown]
# The `full` profile asks for the paper's backbone and stops with a clear message:

# %%
test_fail(lambda: run(Config.from_params("full"), progress=False), contains="CLIP ViT-B/16")

# %% [markdown]
# ## The experiment
#
# One call runs everything for the chosen profile (`smoke` by default here; the committed page shows a
# `cpu` run: 3 seeds, 20 base and 20 new classes, 16 shots, 60 steps, K ∈ {500, 2000}, λ ∈ {2, 8}, B = 16).

# %%
from trustlib.results import run_experiment

# %%
result = run_experiment(run, cfg)

# %% [markdown]
# What the comparison needs from the stand-in — zero-shot roughly calibrated, CoOp gaining base accuracy
# and miscalibrating new classes — in this run (the test suite checks it at a scale where it must hold):

# %%
{k: (round(v, 4) if isinstance(v, float) else v) for k, v in result.metrics.items() if k.startswith("condition/") or k.startswith("speed/") or k == "pool_size"}

# %% [markdown]
# Mean over seeds, in percent (HM, accuracy, confidence, ECE, MCE, ACE, PIECE; FD and logit gap ×100), per
# method, for base and new classes:

# %%
result.tables["summary"]

# %%
result.figures["reliability"]

# %%
result.figures["fd_over_steps"]

# %%
result.figures["ece_vs_lambda"]

# %%
result.figures["near_vs_random"]

# %% [markdown]
# ## Paper vs. us

# %%
result.verdict_table()

# %% [markdown]
# The table above is the verdict of the run shown on this page; the rules were fixed before the run and
# the `ours` column gives every number with its interval over seeds. How to read it:
#
# - **What is tested.** Only the mechanism: a frozen text encoder whose prompt context is tuned, class
#   features that cross-entropy can pull apart, and an anchoring term on outlier words. MiniLM is not an
#   image–text model and the images are synthetic features built around text features, so the paper's
#   absolute numbers (ECE in %, HM) are printed for orientation, not as targets.
# - **The stand-in is built so that the paper's starting point holds:** τ is fitted so zero-shot is
#   calibrated, and the synthetic images have a part every class shares (learnable and transferable)
#   and a class-specific part (which 16 shots of base classes invite the context to overfit). Whether CoOp
#   then miscalibrates new classes, whether KgCoOp turns underconfident and whether DOR helps are
#   outcomes, graded in the table; the condition line above says whether the headline could be tested.
# - **Scale.** 60 full-batch steps, B = 16 outliers per step and K up to 2,000 of about 7,000 single-piece
#   WordNet nouns, where the paper trains for epochs with K = 5,000; three seeds, each with its own
#   base/new split of the 40 class nouns, so intervals are wide and a `partially` or `inconclusive` often
#   means "the right direction, not enough seeds to be sure".
# - **Near-OOD vs random outliers.** With a vocabulary of common nouns, many random nouns are already
#   "near" in MiniLM's feature space, so this ablation is weaker here than with the paper's large WordNet
#   pool and CLIP's more spread-out text features.
