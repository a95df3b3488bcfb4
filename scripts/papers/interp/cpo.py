# %% [markdown]
# # Addressing Concept Mislabeling in Concept Bottleneck Models Through Preference Optimization
#
# > Concept Preference Optimization (CPO): a DPO-style concept loss for concept bottleneck models, compared with binary cross-entropy when concept labels are noisy.

# %% [markdown]
# Penaloza, Zhang, Charlin and Espinosa Zarlenga (ICML 2025) study concept bottleneck models (CBMs) whose
# concept annotations are partly wrong. A CBM predicts human-readable concepts from the input and the task
# label from those concepts only, and is normally trained with binary cross-entropy (BCE) on the annotated
# concepts plus the task loss. The paper shows that mislabelled concepts can cost a CBM a lot of
# performance (up to 25 % in some cases) and proposes **Concept Preference Optimization (CPO)**: a concept
# loss built like Direct Preference Optimization, where the annotated concept vector is the "preferred"
# answer and a concept vector sampled from the model itself is the "dispreferred" one. The authors argue
# that CPO fits the concept posterior, that it is less sensitive to concept noise than BCE, and they find
# that it beats BCE on CUB, AwA2 and CelebA with and without added noise.
#
# Paper: [arXiv 2504.18026](https://arxiv.org/abs/2504.18026) (PMLR 267) · official code:
# [Emilianopp/ConceptPreferenceOptimization](https://github.com/Emilianopp/ConceptPreferenceOptimization)
# (not available to us; the loss below is reconstructed from the paper's abstract and public reviews).
#
# ::: {.callout-note}
# ## What we reproduce / what we cannot
# - **Implemented:** a joint CBM (concept encoder → concept probabilities → linear label head), the BCE
#   concept loss, and CPO with three reference policies (uniform, i.e. reference-free; the training
#   prevalence of each concept; a frozen BCE-trained CBM), a per-concept variant and the temperature β.
# - **Tested offline:** synthetic CBM data (20 concepts, 10 classes) and scikit-learn's digits with the
#   seven segments of a digital display as concepts; symmetric concept-label noise at rates 0–0.4, and a
#   systematic variant (some concepts flipped for a whole class). BCE vs CPO on concept accuracy, AUC and
#   calibration, task accuracy and test-time interventions, 5 seeds. Both losses are trained as a
#   practitioner would: with early stopping on a validation split carved out of the training set, whose
#   concept labels are as noisy as the training labels (chosen before the run). Fixed training lengths
#   without early stopping are shown beside, for information.
# - **Reconstructed, not checked against the code:** the exact form of the loss (one joint preference pair
#   per example, one sample from the current model, no gradient through the sample), the scale of the
#   concept losses (both are written in terms of the concept log-likelihood log π(c|x)), β, λ, the
#   reference policy, and the paper's training protocol.
# - **Not testable offline:** the paper's gains on CUB, AwA2 and CelebA with pretrained image backbones.
#   The `full` profile runs the same comparison on CUB-200-2011 and AwA2 when their official copies are in
#   the data folder (features of a frozen pretrained ResNet-50, computed once and cached; CelebA is skipped),
#   and stops when none is there. Our magnitudes come from small MLPs on small or synthetic data and are not
#   comparable with the paper's.
# :::

# %%
#| default_exp interp.cbm

# %%
#| export
from __future__ import annotations
import math
from dataclasses import dataclass
from typing import Optional
import numpy as np
from trustlib.config import BaseConfig, param, ConfigError, ResourceUnavailable, derive_seed, torch_threads, check_cost, check_hub_name
from trustlib.results import Result

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
# Defaults are the `smoke` profile; `trustlib run cpo --profile cpu` (or papermill with `-p profile cpu`)
# runs the published configuration. `None` means "the profile's value". Every field of `Config` (below)
# has one line here.

# %%
from typing import Optional

# %% tags=["parameters"]
profile: str = "smoke"  # smoke (CI, < 60 s) | cpu (published results, minutes) | full (paper scale)
seed: Optional[int] = None  # base random seed; every random choice derives from it
n_seeds: Optional[int] = None  # independent repetitions (data, noise draw and initialisation)
noise_levels: Optional[list[float]] = None  # fractions of training concept labels flipped (symmetric noise)
max_epochs: Optional[int] = None  # most epochs of a training run with early stopping
patience: Optional[int] = None  # epochs without a better validation score before a CBM stops (its best epoch is kept)
val_frac: Optional[float] = None  # share of the training set held out as the noisy validation split of early stopping
fixed_epochs: Optional[list[int]] = None  # fixed training lengths without early stopping, shown for information (empty: none)
n_train: Optional[int] = None  # synthetic training examples
n_test: Optional[int] = None  # synthetic test examples (clean concepts)
n_concepts: Optional[int] = None  # synthetic concepts K
n_classes: Optional[int] = None  # synthetic classes
n_features: Optional[int] = None  # synthetic input dimension d
ambiguous_frac: Optional[float] = None  # fraction of class-concept cells with P(c ＝ 1 | y) of 0.5 instead of 0.05/0.95
x_noise: Optional[float] = None  # std of the Gaussian input noise of the synthetic data
hidden: Optional[list[int]] = None  # hidden widths of the concept encoder
lr: Optional[float] = None  # Adam learning rate
batch_size: Optional[int] = None  # mini-batch size
lam: Optional[float] = None  # weight λ of the concept loss in the joint loss CE(y) + λ·L_concept
beta: Optional[float] = None  # CPO temperature β of the main comparison
reference: Optional[str] = None  # CPO reference policy of the main comparison
ablation: Optional[bool] = None  # run the CPO ablation (β, reference policy, per-concept loss) at one noise level
ablation_noise: Optional[float] = None  # noise level of the ablation
ablation_betas: Optional[list[float]] = None  # extra β values of the ablation
systematic: Optional[bool] = None  # run the systematic-noise variant (concepts flipped for whole classes)
systematic_per_class: Optional[int] = None  # concepts flipped for every example of each class in the systematic variant
digits: Optional[bool] = None  # run scikit-learn digits with 7-segment concepts
intervention_levels: Optional[list[float]] = None  # fractions of concepts replaced by their true values at test time
n_bins: Optional[int] = None  # equal-width bins of the concept ECE
real_datasets: Optional[list[str]] = None  # the paper's image datasets (full profile only; need local copies and a GPU)
backbone: Optional[str] = None  # pretrained image backbone of the full profile: Hugging Face hub id (or local folder) whose pooled features feed the concept encoder
device: Optional[str] = None  # where the backbone computes the image embeddings: auto (CUDA when present), cpu, cuda or mps
embed_batch: Optional[int] = None  # images per backbone forward pass
cub_concepts: Optional[str] = None  # CUB concept labels: class (Koh et al.'s class-level majority vote) or image (the raw per-image annotations, all 312)
cub_min_classes: Optional[int] = None  # with cub_concepts class: keep the attributes on in at least this many classes (10 gives Koh et al.'s 112)
n_threads: Optional[int] = None  # torch CPU threads used for training


# %% [markdown] tags=["injected-parameters"]
# **This page shows a run with** `profile = "cpu"` (run `cpu-bf21a9e8fb`, commit `940b446`, 113 s, 2026-12-05). Running the notebook yourself uses the parameters cell above as written (the fast `smoke` profile unless you change it); `trustlib run cpo --profile cpu` repeats the run shown here.

# %%
#| export
@dataclass
class Config(BaseConfig):
    "Configuration of the CPO reproduction (synthetic CBM data and 7-segment digits)."
    n_seeds: int = param(1, "independent repetitions (data, noise draw and initialisation)", ge=1, max=100, le=10**5)
    noise_levels: tuple[float, ...] = param((0.0, 0.3), "fractions of training concept labels flipped (symmetric noise)", ge=0, lt=0.5)
    max_epochs: int = param(8, "most epochs of a training run with early stopping", ge=1, max=10000, le=10**6)
    patience: int = param(3, "epochs without a better validation score before a CBM stops (its best epoch is kept)", ge=1, le=10**6)
    val_frac: float = param(0.2, "share of the training set held out as the noisy validation split of early stopping", gt=0, le=0.5)
    fixed_epochs: tuple[int, ...] = param((), "fixed training lengths without early stopping, shown for information (empty: none)", ge=1, max=10000, le=10**6)
    n_train: int = param(1000, "synthetic training examples", ge=20, max=1_000_000, le=10**9)
    n_test: int = param(1000, "synthetic test examples (clean concepts)", ge=20, max=1_000_000, le=10**9)
    n_concepts: int = param(20, "synthetic concepts K", ge=1, max=2000, le=10**6)
    n_classes: int = param(10, "synthetic classes", ge=2, max=1000, le=10**6)
    n_features: int = param(64, "synthetic input dimension d", ge=1, max=100_000, le=10**8)
    ambiguous_frac: float = param(0.15, "fraction of class-concept cells with P(c ＝ 1 | y) of 0.5 instead of 0.05/0.95", ge=0, le=1)
    x_noise: float = param(0.5, "std of the Gaussian input noise of the synthetic data", ge=0, le=100)
    hidden: tuple[int, ...] = param((128,), "hidden widths of the concept encoder", ge=1, max=65536, le=10**7)
    lr: float = param(1e-3, "Adam learning rate", gt=0, le=10)
    batch_size: int = param(128, "mini-batch size", ge=1, max=1_000_000, le=10**9)
    lam: float = param(1.0, "weight λ of the concept loss in the joint loss CE(y) + λ·L_concept", ge=0, le=1000)
    beta: float = param(1.0, "CPO temperature β of the main comparison", gt=0, le=100)
    reference: str = param("uniform", "CPO reference policy of the main comparison", choices=("uniform", "prior", "model"))
    ablation: bool = param(True, "run the CPO ablation (β, reference policy, per-concept loss) at one noise level")
    ablation_noise: float = param(0.3, "noise level of the ablation", ge=0, lt=0.5)
    ablation_betas: tuple[float, ...] = param((0.5, 2.0), "extra β values of the ablation", gt=0, le=100)
    systematic: bool = param(True, "run the systematic-noise variant (concepts flipped for whole classes)")
    systematic_per_class: int = param(2, "concepts flipped for every example of each class in the systematic variant", ge=1, max=2000, le=10**6)
    digits: bool = param(True, "run scikit-learn digits with 7-segment concepts")
    intervention_levels: tuple[float, ...] = param((0.0, 0.25, 0.5, 0.75, 1.0), "fractions of concepts replaced by their true values at test time", ge=0, le=1)
    n_bins: int = param(15, "equal-width bins of the concept ECE", ge=2, le=1000)
    real_datasets: tuple[str, ...] = param((), "the paper's image datasets (full profile only; need local copies and a GPU)", choices=("cub", "awa2", "celeba"))
    backbone: str = param("microsoft/resnet-50", "pretrained image backbone of the full profile: Hugging Face hub id (or local folder) whose pooled features feed the concept encoder",
                          allowed="the hub id ('owner/name') or local folder of a transformers image model with pooled features (e.g. 'microsoft/resnet-50')")
    device: str = param("auto", "where the backbone computes the image embeddings: auto (CUDA when present), cpu, cuda or mps", choices=("auto", "cpu", "cuda", "mps"))
    embed_batch: int = param(64, "images per backbone forward pass", ge=1, max=4096, le=10**6)
    cub_concepts: str = param("class", "CUB concept labels: class (Koh et al.'s class-level majority vote) or image (the raw per-image annotations, all 312)", choices=("class", "image"))
    cub_min_classes: int = param(10, "with cub_concepts class: keep the attributes on in at least this many classes (10 gives Koh et al.'s 112)", ge=1, max=200, le=10**6)
    n_threads: Optional[int] = param(1, "torch CPU threads used for training", ge=1, le=1024)
    PROFILE_DEFAULTS = {
        "cpu": dict(n_seeds=5, noise_levels=(0.0, 0.1, 0.2, 0.3, 0.4), max_epochs=100, patience=10, fixed_epochs=(30, 100),
                    n_train=3000, n_test=2000),
        "full": dict(n_seeds=5, noise_levels=(0.0, 0.1, 0.2, 0.3, 0.4), max_epochs=100, patience=10, fixed_epochs=(30, 100),
                     n_train=3000, n_test=2000, real_datasets=("cub", "awa2", "celeba"), n_threads=None),
    }
    def validate(self):
        if not self.noise_levels: raise ConfigError("parameter 'noise_levels': give at least one noise level")
        if round(self.n_train * self.val_frac) < 10 or round(self.n_train * (1 - self.val_frac)) < 10:
            raise ConfigError(f"parameter 'val_frac': {self.val_frac:g} of n_train {self.n_train} leaves fewer than 10 training or validation examples")
        if self.systematic_per_class > self.n_concepts:
            raise ConfigError(f"parameter 'systematic_per_class': {self.systematic_per_class} exceeds n_concepts {self.n_concepts}")
        if not self.intervention_levels: raise ConfigError("parameter 'intervention_levels': give at least one level")
        check_hub_name("backbone", self.backbone)
        if self.real_datasets: return        # the image datasets' cost: see the full-profile table (estimate_cost sizes the synthetic experiment)
        sec, gib = estimate_cost(self)
        check_cost(self, {"CPU time": (sec, 3600.0, "s"), "peak memory": (gib, 8.0, "GiB")},
                   ("n_seeds", "noise_levels", "max_epochs", "fixed_epochs", "n_train", "n_test", "n_concepts", "n_features", "hidden",
                    "ablation_betas", "intervention_levels"))

def estimate_cost(cfg) -> tuple[float, float]:
    "A rough estimate of the whole run's CPU seconds and peak memory (GiB), from every size in `cfg`."
    widths = [cfg.n_features, *cfg.hidden, cfg.n_concepts]
    per_example = 6 * (sum(a * b for a, b in zip(widths[:-1], widths[1:])) + cfg.n_concepts * cfg.n_classes)   # FLOPs, forward + backward
    S, P = cfg.n_seeds, len(cfg.noise_levels)
    runs = 2 * S * P + (S * (6 + len(cfg.ablation_betas)) if cfg.ablation else 0) + (2 * S if cfg.systematic else 0)
    epochs = cfg.max_epochs + sum(cfg.fixed_epochs) * 2 * S * P / max(runs, 1)
    sec = (runs * epochs * cfg.n_train * per_example + (2 * S * P * cfg.max_epochs * 1257 * 6 * 64 * 128 if cfg.digits else 0)) / 2e9
    members = 2 * S * P
    gib = 4 * members * (cfg.n_train + cfg.n_test) * (cfg.n_features + 2 * cfg.n_concepts + max(cfg.hidden, default=1)) / 2 ** 30
    return float(sec), float(gib)


# %%
cfg = Config.from_namespace(globals())
cfg

# %%
from trustlib.config import parameters_cell, check_parameters_cell

# %%
test_eq(Config.unbounded_fields(), [])
test_fail(lambda: Config.from_params("smoke", noise_levels=[0.6]), contains="'noise_levels'")
test_fail(lambda: Config.from_params("smoke", reference="dpo"), contains="'reference'")
test_fail(lambda: Config.from_params("smoke", systematic_per_class=30), contains="exceeds n_concepts")
test_fail(lambda: Config.from_params("smoke", n_train=10**8), contains="exceeds its limit")
test_fail(lambda: Config.from_params("cpu", n_seeds=100, max_epochs=5000, n_train=10**5), contains="the whole configuration is too large")
test_fail(lambda: Config.from_params("smoke", n_train=20, val_frac=0.4, n_test=40), contains="'val_frac'")
test_eq(Config.unbounded_fields(), [])
{p: tuple(round(x, 2) for x in estimate_cost(Config.from_params(p))) for p in ("smoke", "cpu")}   # (CPU seconds, GiB)
test_eq(Config.from_params("cpu").n_seeds, 5)
test_eq(Config.from_params("cpu").noise_levels, (0.0, 0.1, 0.2, 0.3, 0.4))

# %% [markdown]
# ## Concept bottleneck model and its concept policy
#
# A CBM maps an input $x$ to concept logits $\hat z = g(x) \in \mathbb{R}^K$, concept probabilities
# $\hat c = \sigma(\hat z)$, and task logits $h(\hat c)$ with a linear head. It is trained *jointly*:
# $L = \mathrm{CE}(h(\hat c), y) + \lambda\, L_{\text{concept}}$. The concepts are read as a factorised
# policy
# $$\pi_\theta(c \mid x) = \prod_{k=1}^K \mathrm{Bernoulli}\big(c_k;\ \sigma(\hat z_k)\big),$$
# so BCE on the annotated vector $c$ is $-\log \pi_\theta(c\mid x)$ (we sum over concepts, so that BCE and
# CPO are both written in terms of the same log-likelihood and one λ weighs them alike).
#
# The encoder and head are `trustlib.models.BatchedMLP`s: many independent CBMs (seeds × noise levels)
# are trained side by side in one vectorised model, each on its own data. Member $m$ sees only its own
# inputs, labels and random stream, so the members are exactly independent CBMs.

# %%
#| export
import torch
import torch.nn as nn
import torch.nn.functional as F

class ConceptBottleneck(nn.Module):
    "`n_members` independent joint CBMs: encoder MLP → K concept logits → sigmoid → linear task head. Outputs are `[M, B, ...]`."
    def __init__(self, in_features:int, n_concepts:int, n_classes:int, hidden:tuple[int, ...]=(128,), n_members:int=1, seed:int=0):
        super().__init__()
        from trustlib.models import BatchedMLP
        self.n_members, self.n_concepts, self.n_classes = n_members, n_concepts, n_classes
        self.encoder = BatchedMLP(n_members, in_features, tuple(hidden), n_concepts, seed=derive_seed(seed, "encoder"))
        self.head = BatchedMLP(n_members, n_concepts, (), n_classes, seed=derive_seed(seed, "head"))
    def forward(self, x):
        "(concept logits, task logits) for `x` of shape `[B, d]` (shared by all members) or `[M, B, d]`."
        z = self.encoder(x)
        return z, self.head(torch.sigmoid(z))
    def task_logits(self, concepts):
        "Task logits from given concept values or probabilities `[M, B, K]` (used for interventions)."
        return self.head(concepts)

def concept_log_prob(z, c):
    "log π_θ(c|x) = Σ_k log Bernoulli(c_k; σ(z_k)) for logits `z` and concept vectors `c` (broadcastable, `[..., K]`)."
    z, c = torch.broadcast_tensors(z, c.to(z.dtype))
    return -F.binary_cross_entropy_with_logits(z, c, reduction='none').sum(-1)

def bce_concept_loss(z, c):
    "The usual concept loss, as a negative log-likelihood: mean over examples of −log π_θ(c|x) (BCE summed over concepts)."
    return -concept_log_prob(z, c).mean()


# %%
_m = ConceptBottleneck(5, 3, 4, hidden=(8,), n_members=2, seed=0)
_z, _out = _m(torch.randn(6, 5))
test_eq(tuple(_z.shape), (2, 6, 3)); test_eq(tuple(_out.shape), (2, 6, 4))
_zz, _c = torch.tensor([[2.0, -1.0]]), torch.tensor([[1.0, 1.0]])
test_close(float(concept_log_prob(_zz, _c)), math.log(torch.sigmoid(torch.tensor(2.0))) + math.log(torch.sigmoid(torch.tensor(-1.0))), eps=1e-6)
test_close(float(bce_concept_loss(_zz, _c)), 2 * float(F.binary_cross_entropy_with_logits(_zz, _c)), eps=1e-6)   # summed, not averaged, over K


# %% [markdown]
# ## The CPO loss
#
# DPO compares a preferred answer $c^w$ with a dispreferred one $c^l$ through the implicit reward
# $\beta \log \frac{\pi_\theta}{\pi_{\text{ref}}}$. CPO takes the annotated concept vector as preferred
# and a vector sampled from the current model, $c' \sim \pi_\theta(\cdot \mid x)$, as dispreferred (no
# gradient flows through the sample):
# $$L_{\text{CPO}} = -\,\mathbb{E}_{(x,c)}\,\mathbb{E}_{c'}\Big[\log \sigma\Big(\beta \log\tfrac{\pi_\theta(c\mid x)}{\pi_{\text{ref}}(c\mid x)} - \beta \log\tfrac{\pi_\theta(c'\mid x)}{\pi_{\text{ref}}(c'\mid x)}\Big)\Big].$$
# With the factorised policy and $s_k = 2c_k - 1$, the difference of log-probabilities is
# $\sum_{k:\, c'_k \ne c_k} s_k \hat z_k$: **only concepts where the sample disagrees with the label
# contribute**, and when $c' = c$ the loss is the constant $\log 2$ with zero gradient. A reference policy
# with concept logits $z^{\text{ref}}$ replaces $\hat z_k$ by $\hat z_k - z^{\text{ref}}_k$:
# - `uniform`: $z^{\text{ref}} = 0$, the reference cancels (reference-free CPO);
# - `prior`: $z^{\text{ref}}_k = \operatorname{logit}$ of the training prevalence of concept $k$;
# - `model`: the concept logits of a frozen CBM trained with BCE on the same data (as DPO uses its SFT model).
#
# The **per-concept** variant treats every concept as its own preference pair:
# $\sum_k \mathbb{1}[c'_k \ne c_k]\,(-\log\sigma(\beta s_k(\hat z_k - z^{\text{ref}}_k)))$.
#
# Why it should resist noise (our derivation, in the spirit of the paper's Proposition 4.2): for one
# concept, β = 1 and the uniform reference, the expected gradient of CPO on $\hat z$ is
# $-s\,(1-p)^2$ where $p = \pi_\theta(c\mid x)$, while BCE's is $-s\,(1-p)$. CPO's step is smaller by the
# factor $1 - p$: a label that contradicts a confident prediction — often a flipped label — pulls much less.
#
# Where the two losses settle (also our derivation): for one concept whose label is 1 with probability $a$
# (under symmetric noise p, $a = 1 - p$ for a concept that is truly on), BCE's expected gradient vanishes at
# $\pi = a$, CPO's (β = 1, uniform reference) where $a(1-\pi)^2 = (1-a)\pi^2$, that is at
# $\operatorname{logit}\pi = \tfrac12 \operatorname{logit} a$. Both predict the majority label, but CPO with
# less confidence than the label frequency: it trades calibration for smaller steps on contradicting labels.

# %%
#| export
def sample_concepts(z, n_samples:int=1, generator=None):
    "`n_samples` concept vectors from π_θ(·|x), shape `[n_samples, *z.shape]`, without gradient."
    with torch.no_grad():
        p = torch.sigmoid(z.detach()).expand(n_samples, *z.shape)
        return torch.bernoulli(p, generator=generator)

def cpo_concept_loss(z, c, *, beta:float=1.0, # logits `[..., K]`, annotated concepts (0/1), temperature
                     z_ref=None, # reference-policy concept logits (broadcastable to `z`); None: uniform reference
                     samples=None, # dispreferred vectors `[S, ..., K]` or `[..., K]`; None: drawn from the model
                     n_samples:int=1, generator=None, # number of samples and their torch.Generator
                     per_concept:bool=False): # one preference pair per concept instead of one per example
    "Concept Preference Optimization loss (mean over samples and examples); the annotated `c` is preferred over model samples."
    c = c.to(z.dtype)
    if samples is None: samples = sample_concepts(z, n_samples, generator)
    samples = samples.to(z.dtype)
    if samples.shape == z.shape: samples = samples.unsqueeze(0)
    s = 2 * c - 1
    mism = (samples != c).to(z.dtype)                        # only concepts where the sample disagrees matter
    r = z if z_ref is None else z - z_ref                    # implicit-reward logits
    if per_concept: return (F.softplus(-beta * s * r) * mism).sum(-1).mean()
    margin = beta * (mism * s * r).sum(-1)                   # β[log π/π_ref (c) − log π/π_ref (c')]
    return F.softplus(-margin).mean()

def prior_logits(C, eps:float=1e-3):
    "Concept logits of the prior reference policy: logit of each concept's prevalence in `C` (`[..., N, K]` → `[..., 1, K]`)."
    C = torch.as_tensor(C, dtype=torch.float32)
    p = C.mean(-2, keepdim=True).clamp(eps, 1 - eps)
    return torch.log(p) - torch.log1p(-p)


# %% [markdown]
# Tests of the loss: zero gradient when the sample equals the label; only mismatched concepts matter; the
# mismatch form equals the literal DPO expression; the closed form with one concept and the uniform
# reference, exactly for given samples and in expectation over the model's own samples; the prior
# reference adds the margin −β·s·logit(prior); and the expected per-concept gradient is $-s(1-p)^2$.

# %%
_g = torch.Generator().manual_seed(0)
z = torch.randn(64, 6, requires_grad=True); c = (torch.rand(64, 6, generator=_g) < 0.5).float()
loss = cpo_concept_loss(z, c, samples=c.clone())                       # sample == label
loss.backward()
test_close(float(loss.detach()), math.log(2), eps=1e-6); test_eq(float(z.grad.abs().max()), 0.0)

# the mismatch-only form equals the literal DPO expression with log π of both vectors
z = torch.randn(32, 5); c = (torch.rand(32, 5, generator=_g) < 0.5).float(); cs = (torch.rand(3, 32, 5, generator=_g) < 0.5).float()
zr, beta = torch.randn(32, 5), 1.7
lit = -F.logsigmoid(beta * ((concept_log_prob(z, c) - concept_log_prob(zr, c)) - (concept_log_prob(z, cs) - concept_log_prob(zr, cs)))).mean()
test_close(float(cpo_concept_loss(z, c, beta=beta, z_ref=zr, samples=cs)), float(lit), eps=1e-5)

# changing the logits of concepts where sample == label leaves the loss unchanged
same = (cs[0] == c).float()
test_close(float(cpo_concept_loss(z + 5 * same, c, samples=cs[0])), float(cpo_concept_loss(z, c, samples=cs[0])), eps=1e-5)

# one concept, uniform reference: closed form softplus(−β s z) on a mismatch, log 2 on a match ...
z1, c1 = torch.tensor([[0.8], [-1.3]]), torch.tensor([[1.0], [1.0]])
test_close(float(cpo_concept_loss(z1, c1, beta=2.0, samples=1 - c1)), float(F.softplus(-2.0 * z1).mean()), eps=1e-6)
# ... and in expectation over the model's own samples: π(c)·log 2 + (1 − π(c))·softplus(−β s z)
pc = torch.sigmoid(z1)
closed = float((pc * math.log(2) + (1 - pc) * F.softplus(-2.0 * z1)).mean())
test_close(float(cpo_concept_loss(z1, c1, beta=2.0, n_samples=200_000, generator=torch.Generator().manual_seed(1))), closed, eps=5e-3)

# the prior reference adds the margin −β·s·logit(prior)
C_train = torch.tensor([[1.0], [1.0], [1.0], [0.0]])                  # prevalence 0.75
zp = prior_logits(C_train); test_close(float(zp), math.log(3), eps=1e-6)
test_close(float(cpo_concept_loss(z1, c1, samples=1 - c1, z_ref=zp)), float(F.softplus(-(z1 - math.log(3))).mean()), eps=1e-6)

# expected per-concept gradient: CPO −s(1−p)², BCE −s(1−p)
zg = torch.tensor([[1.2], [-0.4]], requires_grad=True); cg = torch.tensor([[1.0], [0.0]])
cpo_concept_loss(zg, cg, n_samples=400_000, generator=torch.Generator().manual_seed(2), per_concept=True).backward()
s_, p_ = 2 * cg - 1, torch.sigmoid(zg.detach()) * cg + (1 - torch.sigmoid(zg.detach())) * (1 - cg)
test_close(zg.grad * 2, -s_ * (1 - p_) ** 2, eps=3e-3)                 # ×2: the loss is a mean over the 2 examples
zb = zg.detach().clone().requires_grad_(True); bce_concept_loss(zb, cg).backward()
test_close(zb.grad * 2, -s_ * (1 - p_), eps=1e-6)

# fixed points for one concept labelled 1 with probability a: BCE at logit a, CPO at ½·logit a
def _expected_grad(z0, a, loss):
    z, tot, pi1 = torch.tensor([[z0]], requires_grad=True), 0.0, float(torch.sigmoid(torch.tensor(z0)))
    for c, pc in ((1.0, a), (0.0, 1 - a)):
        for cs, ps in ((1.0, pi1), (0.0, 1 - pi1)):            # exact expectation over the model's sample
            l = cpo_concept_loss(z, torch.tensor([[c]]), samples=torch.tensor([[cs]])) if loss == "cpo" else bce_concept_loss(z, torch.tensor([[c]]))
            tot += pc * ps * float(torch.autograd.grad(l, z)[0])
    return tot
_a = 0.8; _lg = math.log(_a / (1 - _a))
test_close(_expected_grad(0.5 * _lg, _a, "cpo"), 0.0, eps=1e-7)
test_close(_expected_grad(_lg, _a, "bce"), 0.0, eps=1e-7)
assert _expected_grad(_lg, _a, "cpo") > 0                        # at BCE's fixed point CPO pulls back towards ½


# %% [markdown]
# ## Training a joint CBM with either concept loss
#
# `fit_cbm` trains all members with Adam, either for a fixed number of epochs or with **early stopping** on
# a validation split: after every epoch each member is scored on its own validation rows by task accuracy
# plus concept accuracy against the validation concept labels — which are as noisy as the training labels,
# as they would be in practice — and each member keeps the parameters of its best epoch; training ends when
# every member has gone `patience` epochs without improving (or at `epochs`). The score does not depend on
# the concept loss, so BCE and CPO are stopped by the same rule. Under symmetric noise p < ½ the expected
# agreement with noisy labels is p + (1 − 2p)·(true accuracy), so the best epoch on noisy labels is the best
# on clean ones in expectation. Every member draws its own mini-batches and its own CPO samples from one
# seeded `torch.Generator`, so a run repeats exactly for a seed.

# %%
#| export
def _members(a, M:int, unbatched_ndim:int, dtype):
    "`a` as a tensor `[M, ...]`: an unbatched array (ndim `unbatched_ndim`) is shared by all M members."
    t = torch.as_tensor(np.asarray(a), dtype=dtype)
    return t.unsqueeze(0).expand(M, *t.shape) if t.ndim == unbatched_ndim else t

def fit_cbm(model:ConceptBottleneck, X, C, y, *, # inputs `[M, N, d]`, (noisy) concepts `[M, N, K]`, labels `[M, N]` (or unbatched)
            concept_loss:str="bce", lam:float=1.0, # 'bce' or 'cpo'; weight of the concept loss
            beta:float=1.0, z_ref=None, per_concept:bool=False, n_samples:int=1, # CPO options (z_ref: `[M, N, K]` or `[M, 1, K]`)
            epochs:int=30, batch_size:int=128, lr:float=1e-3, seed:int=0, progress:bool=False, desc:str="CBM",
            val=None, patience:int|None=None) -> list[float]: # val: (X, C, y) validation rows per member, for early stopping
    "Train the members of `model` jointly on CE(y) + λ·L_concept (early stopping on `val` when given); returns the mean training loss per epoch."
    from tqdm.auto import tqdm
    if concept_loss not in ("bce", "cpo"): raise ValueError(f"concept_loss must be 'bce' or 'cpo', got {concept_loss!r}")
    M = model.n_members
    X, C, y = _members(X, M, 2, torch.float32), _members(C, M, 2, torch.float32), _members(y, M, 1, torch.long)
    if not (X.shape[:2] == C.shape[:2] == y.shape[:2] == (M, X.shape[1])): raise ValueError(f"X, C, y must be [M, N, ...] with M = {M}; got {tuple(X.shape)}, {tuple(C.shape)}, {tuple(y.shape)}")
    N = X.shape[1]
    if z_ref is not None: z_ref = torch.as_tensor(z_ref, dtype=torch.float32).expand(M, N, C.shape[-1])
    g = torch.Generator().manual_seed(int(seed))
    opt = torch.optim.Adam(model.parameters(), lr=lr, foreach=True)
    rows, hist = torch.arange(M)[:, None], []
    stop = _EarlyStopping(model, val, patience) if val is not None else None
    model.train()
    for ep in tqdm(range(epochs), desc=desc, disable=not progress, leave=False):
        perm = torch.stack([torch.randperm(N, generator=g) for _ in range(M)])
        tot, nb = 0.0, 0
        for s in range(0, N, batch_size):
            idx = perm[:, s:s + batch_size]
            z, out = model(X[rows, idx])
            lt = F.cross_entropy(out.reshape(-1, out.shape[-1]), y[rows, idx].reshape(-1))
            if concept_loss == "bce": lc = bce_concept_loss(z, C[rows, idx])
            else: lc = cpo_concept_loss(z, C[rows, idx], beta=beta, z_ref=None if z_ref is None else z_ref[rows, idx],
                                        n_samples=n_samples, generator=g, per_concept=per_concept)
            loss = M * (lt + lam * lc)                       # sum over members of each member's mean loss
            opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
            tot += float(loss.detach()) / M; nb += 1
        hist.append(tot / nb)
        if stop is not None and stop.update(ep + 1): break
    if stop is not None: stop.restore()
    model.eval()
    return hist

class _EarlyStopping:
    "Per-member early stopping: keeps each member's best parameters by validation task + concept accuracy."
    def __init__(self, model, val, patience):
        self.model, self.patience = model, patience or 10**9
        X, C, y = val; M = model.n_members
        self.X, self.C, self.y = _members(X, M, 2, torch.float32), _members(C, M, 2, torch.float32), _members(y, M, 1, torch.long)
        self.best = torch.full((M,), -math.inf); self.since = torch.zeros(M, dtype=torch.long)
        self.best_epoch = torch.zeros(M, dtype=torch.long)
        self.params = [p.detach().clone() for p in model.parameters()]
    @torch.no_grad()
    def update(self, epoch:int) -> bool:
        "Score every member after `epoch`; keep improved members' parameters; True when every member has run out of patience."
        z, out = self.model(self.X)
        score = (out.argmax(-1) == self.y).float().mean(1) + ((z > 0).float() == self.C).float().mean((1, 2))
        better = (score > self.best) & (self.since < self.patience)     # a member that has stopped stays stopped, as if trained alone
        self.best = torch.where(better, score, self.best); self.since = torch.where(better, 0, self.since + 1)
        self.best_epoch[better] = epoch
        for kept, p in zip(self.params, self.model.parameters()): kept[better] = p.detach()[better]
        return bool((self.since >= self.patience).all())
    @torch.no_grad()
    def restore(self):
        for kept, p in zip(self.params, self.model.parameters()): p.copy_(kept)
        self.model.best_epoch_ = self.best_epoch.numpy()

@torch.no_grad()
def cbm_predict(model:ConceptBottleneck, X) -> tuple[np.ndarray, np.ndarray]:
    "(concept probabilities `[M, N, K]`, task probabilities `[M, N, n_classes]`) as numpy."
    model.eval()
    z, out = model(torch.as_tensor(np.asarray(X), dtype=torch.float32))
    return torch.sigmoid(z).numpy().astype(np.float64), F.softmax(out, -1).numpy().astype(np.float64)


# %% [markdown]
# ## Data: synthetic concepts and 7-segment digits
#
# **Synthetic** (as in the project's plan): every class $y$ has a concept profile
# $P(c_k = 1 \mid y) \in \{0.05, 0.95\}$, with a fraction `ambiguous_frac` of entries set to 0.5 (attributes
# that vary within a class, as in CUB). Concepts are drawn from the profile and the input is a fixed random
# two-layer network of the concepts plus Gaussian noise, $x = W_2 \tanh(W_1 (2c - 1)) + \varepsilon$,
# $d = 64$. The task label is determined by the class, the concepts carry most of it, and concepts
# are recoverable from $x$.
#
# **Digits**: scikit-learn's 8×8 handwritten digits, with the seven segments a–g of a digital display as
# concepts (a top, b top right, c bottom right, d bottom, e bottom left, f top left, g middle). The concepts
# are a function of the class, so a head on the true concepts classifies perfectly.

# %%
#| export
@dataclass
class CBMData:
    X_train: np.ndarray; C_train: np.ndarray; y_train: np.ndarray   # training split (clean concepts)
    X_test: np.ndarray; C_test: np.ndarray; y_test: np.ndarray      # test split (clean concepts)
    name: str = ""
    profile: np.ndarray|None = None                                # P(c_k = 1 | y), `[n_classes, K]`, when known

def synthetic_cbm(n_train:int=3000, n_test:int=2000, n_concepts:int=20, n_classes:int=10, n_features:int=64,
                  ambiguous_frac:float=0.15, x_noise:float=0.5, seed:int=0) -> CBMData:
    "Synthetic CBM data: class-conditional Bernoulli concepts, inputs from a fixed random MLP of the concepts plus noise."
    rng = np.random.default_rng(seed)
    prof = np.where(rng.random((n_classes, n_concepts)) < 0.5, 0.95, 0.05)
    prof[rng.random((n_classes, n_concepts)) < ambiguous_frac] = 0.5
    W1 = rng.normal(size=(n_concepts, n_features)) / math.sqrt(n_concepts)
    W2 = rng.normal(size=(n_features, n_features)) / math.sqrt(n_features)
    def draw(n):
        y = rng.integers(0, n_classes, n)
        c = (rng.random((n, n_concepts)) < prof[y]).astype(np.float32)
        x = np.tanh((2 * c - 1) @ W1) @ W2 + x_noise * rng.normal(size=(n, n_features))
        return x.astype(np.float32), c, y.astype(np.int64)
    (Xa, Ca, ya), (Xb, Cb, yb) = draw(n_train), draw(n_test)
    return CBMData(Xa, Ca, ya, Xb, Cb, yb, name="synthetic", profile=prof)

SEGMENTS = "abcdefg"
SEVEN_SEGMENTS = {0: "abcdef", 1: "bc", 2: "abdeg", 3: "abcdg", 4: "bcfg", 5: "acdfg", 6: "acdefg", 7: "abc", 8: "abcdefg", 9: "abcdfg"}

def seven_segment_concepts(y) -> np.ndarray:
    "The lit segments a–g of each digit in `y`, as a `[N, 7]` float32 0/1 array."
    table = np.array([[s in SEVEN_SEGMENTS[d] for s in SEGMENTS] for d in range(10)], dtype=np.float32)
    return table[np.asarray(y, dtype=np.int64)]

def digits_cbm(seed:int=0, test_frac:float=0.3) -> CBMData:
    "scikit-learn digits (pixels / 16) with 7-segment concepts; a stratified train/test split."
    from trustlib.data import load, stratified_split
    d = load("digits")
    X, y = (d.X / 16.0).astype(np.float32), d.y.astype(np.int64)
    tr, te = stratified_split(y, (1 - test_frac, test_frac), seed=seed)
    C = seven_segment_concepts(y)
    return CBMData(X[tr], C[tr], y[tr], X[te], C[te], y[te], name="digits")


# %%
_d = synthetic_cbm(500, 300, seed=0)
test_eq(_d.X_train.shape, (500, 64)); test_eq(_d.C_test.shape, (300, 20))
test_close(_d.C_train.mean(), _d.profile[_d.y_train].mean(), eps=0.03)          # concepts follow the class profile
test_eq(synthetic_cbm(500, 300, seed=0).X_test, _d.X_test)                          # deterministic
_seg = seven_segment_concepts([8, 1, 7, 0])
test_eq(_seg[0].tolist(), [1] * 7)                                                  # 8 lights every segment
test_eq([SEGMENTS[i] for i in np.flatnonzero(_seg[1])], ["b", "c"])                  # 1 lights b and c
test_eq(_seg[3, SEGMENTS.index("g")], 0.0)                                          # 0 has no middle bar
test_eq(len({tuple(r) for r in seven_segment_concepts(range(10))}), 10)             # the patterns identify the digit
_dd = digits_cbm(seed=0)
test_eq(len(_dd.y_train) + len(_dd.y_test), 1797); test_eq(_dd.C_train, seven_segment_concepts(_dd.y_train))


# %% [markdown]
# ## Concept-label noise
#
# Symmetric noise flips exactly `round(p · N · K)` training concept labels chosen uniformly at random. The
# systematic variant picks, for every class, `n_per_class` concepts and flips them for **every** training
# example of that class (an annotator who consistently gets some attributes of a class wrong). Test
# concepts stay clean in both.

# %%
#| export
def flip_concepts(C, p:float, rng:np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    "Flip exactly `round(p·C.size)` entries of the 0/1 array `C` chosen uniformly; returns (noisy copy, flip mask)."
    C = np.asarray(C)
    if not 0 <= p <= 1: raise ValueError(f"p must lie in [0, 1], got {p}")
    m = int(round(p * C.size))
    mask = np.zeros(C.size, dtype=bool); mask[rng.choice(C.size, m, replace=False)] = True
    mask = mask.reshape(C.shape)
    return np.where(mask, 1 - C, C).astype(C.dtype), mask

def systematic_flips(C, y, n_per_class:int, rng:np.random.Generator) -> tuple[np.ndarray, np.ndarray, dict]:
    "Flip `n_per_class` randomly chosen concepts for all examples of each class; returns (noisy copy, mask, {class: concepts})."
    C, y = np.asarray(C), np.asarray(y)
    K = C.shape[1]
    if not 0 <= n_per_class <= K: raise ValueError(f"n_per_class must lie in 0..{K}, got {n_per_class}")
    table = {int(k): sorted(rng.choice(K, n_per_class, replace=False).tolist()) for k in np.unique(y)}
    mask = np.zeros(C.shape, dtype=bool)
    for k, cols in table.items(): mask[np.ix_(y == k, cols)] = True
    return np.where(mask, 1 - C, C).astype(C.dtype), mask, table


# %%
_C = (np.random.default_rng(0).random((1000, 20)) < 0.4).astype(np.float32); _C0 = _C.copy()
for p in (0.0, 0.1, 0.25, 0.4):
    _n, _mask = flip_concepts(_C, p, np.random.default_rng(1))
    test_eq(int((_n != _C).sum()), round(p * _C.size))                 # exactly the requested fraction
    test_eq(_mask, _n != _C)
test_eq(_C, _C0)                                                         # the input is not modified
_y = np.repeat(np.arange(5), 20)
_n, _mask, _tab = systematic_flips(_C[:100], _y, 2, np.random.default_rng(0))
test_eq(sorted(_tab), [0, 1, 2, 3, 4]); test_eq({len(v) for v in _tab.values()}, {2})
test_eq(int(_mask.sum()), 100 * 2)                                       # 2 concepts for every example
test_eq(_mask[_y == 3][:, _tab[3]].all(), True)
test_fail(lambda: flip_concepts(_C, 1.5, np.random.default_rng(0)), contains="p must lie")


# %% [markdown]
# ## Metrics and test-time interventions
#
# Concept accuracy (threshold 0.5) and concept AUC (all test concepts pooled) on **clean** test concepts,
# concept ECE over all (example, concept) pairs with `trustlib.metrics.binary_ece` (the calibration error of the
# positive-class probability, torchmetrics' `binary_calibration_error`: 15 equal-width bins over P(c = 1), each
# bin's mean probability against its fraction of positive concepts), task accuracy. An intervention replaces, for every test example, a random `round(r·K)` of its
# predicted concept probabilities by the true concept values and re-runs the head; at r = 100 % the head
# sees the oracle concepts.

# %%
#| export
def concept_metrics(probs, C, n_bins:int=15) -> dict[str, float]:
    "Concept accuracy, AUC (pooled over concepts) and ECE of concept probabilities `probs` `[N, K]` against 0/1 concepts `C`."
    from sklearn.metrics import roc_auc_score
    from trustlib.metrics import binary_ece
    p, c = np.asarray(probs, dtype=np.float64).ravel(), np.asarray(C).ravel().astype(np.int64)
    auc = float(roc_auc_score(c, p)) if 0 < c.mean() < 1 else float("nan")
    return dict(concept_acc=float(np.mean((p > 0.5) == c)), concept_auc=auc, concept_ece=binary_ece(c, p, n_bins))

def intervene(probs, C_true, r:float, rng:np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    "Replace `round(r·K)` randomly chosen concept probabilities of every example by the true concepts; returns (concepts, mask)."
    probs, C_true = np.asarray(probs, dtype=np.float64), np.asarray(C_true, dtype=np.float64)
    if not 0 <= r <= 1: raise ValueError(f"r must lie in [0, 1], got {r}")
    K = probs.shape[-1]; m = int(round(r * K))
    order = np.argsort(rng.random(probs.shape), axis=-1)[..., :m]
    mask = np.zeros(probs.shape, dtype=bool); np.put_along_axis(mask, order, True, axis=-1)
    return np.where(mask, C_true, probs), mask

@torch.no_grad()
def intervention_curve(model:ConceptBottleneck, X, C, y, levels=(0.0, 0.25, 0.5, 0.75, 1.0), seed:int=0) -> np.ndarray:
    "Task accuracy of every member after intervening on a fraction r of the concepts, for each r in `levels`: `[M, len(levels)]`."
    cp, _ = cbm_predict(model, X)
    C = np.broadcast_to(np.asarray(C, dtype=np.float64), cp.shape); y = np.broadcast_to(np.asarray(y), cp.shape[:2])
    out = np.zeros((cp.shape[0], len(levels)))
    for j, r in enumerate(levels):
        ci, _ = intervene(cp, C, r, np.random.default_rng(derive_seed(seed, "intervene", j)))
        logits = model.task_logits(torch.as_tensor(ci, dtype=torch.float32))
        out[:, j] = (logits.argmax(-1).numpy() == y).mean(1)
    return out


# %%
_rng = np.random.default_rng(0)
_p = _rng.random((200, 7)); _c = (_rng.random((200, 7)) < 0.5).astype(float)
_full, _mk = intervene(_p, _c, 1.0, _rng); test_eq(_full, _c)                   # r = 100 %: the oracle concepts
_none, _ = intervene(_p, _c, 0.0, _rng); test_eq(_none, _p)
_half, _mk = intervene(_p, _c, 3 / 7, _rng); test_eq(set(_mk.sum(1)), {3})       # exactly round(r·K) per example

# %%
import torchmetrics.functional.classification as TMF   # cross-checks: AUC, and the binary (positive-class) calibration error

# %%
_pp = np.clip(_c * 0.7 + _rng.random(_c.shape) * 0.3, 0, 1)
_cm = concept_metrics(_pp, _c, n_bins=15)
test_close(_cm["concept_auc"], float(TMF.binary_auroc(torch.tensor(_pp.ravel()), torch.tensor(_c.ravel()).long())), eps=1e-6)
test_close(_cm["concept_ece"], float(TMF.binary_calibration_error(torch.tensor(_pp.ravel()), torch.tensor(_c.ravel()).long(), n_bins=15)), eps=1e-6)
test_close(_cm["concept_acc"], float(((_pp > 0.5) == _c).mean()), eps=1e-12)
_cm

# %% [markdown]
# A trained CBM on synthetic data: interventions at r = 100 % give the head's accuracy on the oracle concepts.

# %%
_d = synthetic_cbm(600, 400, seed=1)
_cbm = ConceptBottleneck(64, 20, 10, hidden=(64,), n_members=2, seed=0)
_h = fit_cbm(_cbm, _d.X_train, _d.C_train, _d.y_train, epochs=15, seed=0)
assert _h[-1] < _h[0]
_cp, _tp = cbm_predict(_cbm, _d.X_test)
_curve = intervention_curve(_cbm, _d.X_test, _d.C_test, _d.y_test, levels=(0.0, 1.0), seed=0)
_oracle = (_cbm.task_logits(torch.as_tensor(np.broadcast_to(_d.C_test, _cp.shape).copy())).argmax(-1).numpy() == _d.y_test).mean(1)
test_close(_curve[:, 1], _oracle, eps=1e-12)
test_close(_curve[:, 0], (_tp.argmax(-1) == _d.y_test).mean(1), eps=1e-12)
assert concept_metrics(_cp[0], _d.C_test)["concept_acc"] > 0.8
_cbm2 = ConceptBottleneck(64, 20, 10, hidden=(64,), n_members=2, seed=0)
test_eq(fit_cbm(_cbm2, _d.X_train, _d.C_train, _d.y_train, concept_loss="cpo", epochs=3, seed=0),
        fit_cbm(ConceptBottleneck(64, 20, 10, hidden=(64,), n_members=2, seed=0), _d.X_train, _d.C_train, _d.y_train, concept_loss="cpo", epochs=3, seed=0))
{"concept_acc": round(concept_metrics(_cp[0], _d.C_test)["concept_acc"], 3), "intervention r=0, r=1": _curve[0].round(3).tolist()}


# %% [markdown]
# ## Training and evaluating a grid of CBMs
#
# `train_eval` trains one batch of independent CBMs — one member per (seed, noise level) — with one concept
# loss, and evaluates each on its clean test split. With early stopping, a share `val_frac` of every
# member's (noisy) training rows is held out as its validation split. BCE and CPO members with the same
# index share the data, the noisy labels, the validation split and the initialisation, so their differences
# are paired.
#
# `run` does, with early stopping: the noise grid on synthetic data (BCE vs CPO), the CPO ablation at
# `ablation_noise` (β values, the prior and frozen-BCE references, the per-concept loss), the
# systematic-noise variant and the digits grid; then, for information, the synthetic noise grid at every
# fixed training length in `fixed_epochs`, without early stopping.

# %%
#| export
def train_eval(datas:list[CBMData], C_noisy:list[np.ndarray], cfg:Config, epochs:int, seed:int, *,
               concept_loss:str="bce", beta:float=1.0, reference:str="uniform", per_concept:bool=False,
               ref_model:ConceptBottleneck|None=None, early_stopping:bool=False) -> tuple[list[dict], ConceptBottleneck]:
    "Train one CBM per (data, noisy concepts) pair with one concept loss (for at most `epochs`); returns per-member test metrics and the model."
    M = len(datas)
    X = np.stack([d.X_train for d in datas]); Cn = np.stack(C_noisy); y = np.stack([d.y_train for d in datas])
    val = None
    if early_stopping:                                            # the same noisy-label validation rows for BCE and CPO
        idx = np.random.default_rng(derive_seed(seed, "val-split")).permutation(X.shape[1]); n_val = int(round(cfg.val_frac * X.shape[1]))
        val = (X[:, idx[:n_val]], Cn[:, idx[:n_val]], y[:, idx[:n_val]])
        X, Cn, y = X[:, idx[n_val:]], Cn[:, idx[n_val:]], y[:, idx[n_val:]]
    K, n_classes = Cn.shape[-1], int(max(d.y_train.max() for d in datas)) + 1
    model = ConceptBottleneck(X.shape[-1], K, n_classes, cfg.hidden, n_members=M, seed=derive_seed(seed, "init"))
    z_ref = None
    if concept_loss == "cpo" and reference == "prior": z_ref = prior_logits(Cn)
    elif concept_loss == "cpo" and reference == "model":
        if ref_model is None: raise ValueError("reference='model' needs ref_model (a BCE-trained ConceptBottleneck on the same data)")
        with torch.no_grad(): z_ref = ref_model(torch.as_tensor(X))[0]
    fit_cbm(model, X, Cn, y, concept_loss=concept_loss, lam=cfg.lam, beta=beta, z_ref=z_ref, per_concept=per_concept,
            epochs=epochs, batch_size=cfg.batch_size, lr=cfg.lr, seed=derive_seed(seed, "train"), val=val, patience=cfg.patience)
    Xt, Ct, yt = (np.stack([getattr(d, k) for d in datas]) for k in ("X_test", "C_test", "y_test"))
    cp, tp = cbm_predict(model, Xt)
    iv = intervention_curve(model, Xt, Ct, yt, cfg.intervention_levels, seed=derive_seed(seed, "intervene"))
    cpt, _ = cbm_predict(model, X)                                # concepts on the training inputs
    rows = []
    for m in range(M):
        r = concept_metrics(cp[m], Ct[m], cfg.n_bins)
        r["task_acc"] = float(np.mean(tp[m].argmax(-1) == yt[m]))
        r.update({f"iv_{j}": float(a) for j, a in enumerate(iv[m])}); r["iv_mean"] = float(iv[m].mean())
        r["fit_noisy_labels"] = float(np.mean((cpt[m] > 0.5) == Cn[m]))   # agreement with its own noisy training labels
        r["stop_epoch"] = int(model.best_epoch_[m]) if early_stopping else epochs
        rows.append(r)
    return rows, model


# %%
_c = Config.from_params("smoke", n_train=300, n_test=200)
_ds = [synthetic_cbm(300, 200, seed=s) for s in range(2)]
_noisy = [flip_concepts(d.C_train, 0.2, np.random.default_rng(s))[0] for s, d in enumerate(_ds)]
_rows, _bce = train_eval(_ds, _noisy, _c, epochs=3, seed=0)
_rows2, _ = train_eval(_ds, _noisy, _c, epochs=3, seed=0, concept_loss="cpo", reference="model", ref_model=_bce)
test_eq(len(_rows), 2); test_eq(_rows, train_eval(_ds, _noisy, _c, epochs=3, seed=0)[0])      # same seed, same numbers
assert all(0 <= r["concept_acc"] <= 1 and 0 <= r["iv_mean"] <= 1 for r in _rows + _rows2)
test_eq(sorted(k for k in _rows[0] if k.startswith("iv_")), ["iv_0", "iv_1", "iv_2", "iv_3", "iv_4", "iv_mean"])
test_fail(lambda: train_eval(_ds, _noisy, _c, epochs=1, seed=0, concept_loss="cpo", reference="model"), contains="needs ref_model")
# early stopping: each member keeps its best epoch on its noisy validation rows; with patience 1 it stops long before the limit
_res, _es = train_eval(_ds, _noisy, _c.replace(patience=1), epochs=200, seed=0, early_stopping=True)
assert all(1 <= r["stop_epoch"] < 200 for r in _res), [r["stop_epoch"] for r in _res]
test_eq(_res, train_eval(_ds, _noisy, _c.replace(patience=1), epochs=200, seed=0, early_stopping=True)[0])


# %% [markdown]
# ## From runs to measurements
#
# Every comparison is **paired**: for a seed, BCE and CPO see the same data, the same noisy labels, the same
# validation split and the same initialisation. `measurements` reduces the table of runs (one row per trained
# CBM) to per-seed lists — for each loss, the mean over the noise levels p > 0 ("noisy"), the value at p = 0
# ("clean"), and the drop from p = 0 to p_max — which the claims compare with `Diff` (the per-seed difference
# and its Student-t interval). Keys: `<data>/<loss>/<quantity>`, e.g. `synthetic/cpo/concept_acc_noisy`.

# %%
#| export
def _cell(runs, block, method, metric, epochs=None):
    "seed × p table of `metric` for one block / method (and training length)."
    r = runs[(runs.block == block) & (runs.method == method)]
    if epochs is not None: r = r[r.epochs == epochs]
    return r.pivot_table(index="seed", columns="p", values=metric, aggfunc="mean")

def _seeds(x) -> list|None:
    "A per-seed list (None when nothing was measured)."
    x = np.asarray(x, dtype=float)
    return None if x.size == 0 or np.isnan(x).any() else [float(v) for v in x]

def loss_summary(runs, block:str, method:str, levels, epochs=None) -> dict:
    "Per-seed lists for one loss: noisy/clean means of every metric, drops p0 → p_max of concept accuracy, and BCE's relative task drop."
    levels = sorted(levels); p0, pmax = levels[0], levels[-1]; noisy = [p for p in levels if p > 0]
    out = {}
    for metric, name in (("concept_acc", "concept_acc"), ("task_acc", "task_acc"), ("iv_mean", "iv"), ("concept_ece", "ece"), ("stop_epoch", "stop_epoch")):
        T = _cell(runs, block, method, metric, epochs)
        out[f"{name}_noisy"] = _seeds(T[noisy].mean(axis=1)) if noisy and set(noisy) <= set(T.columns) and len(T) else None
        out[f"{name}_clean"] = _seeds(T[0.0]) if 0.0 in T.columns else None
    T, A = _cell(runs, block, method, "concept_acc", epochs), _cell(runs, block, method, "task_acc", epochs)
    two = pmax > p0 and {p0, pmax} <= set(T.columns) and len(T)
    out["concept_drop"] = _seeds(T[p0] - T[pmax]) if two else None
    out["task_drop_rel"] = _seeds((A[p0] - A[pmax]) / A[p0]) if two else None
    return out

def measurements(cfg:Config, runs) -> dict:
    "The metrics the claims read: per-seed lists for BCE and CPO on the synthetic grid and digits (early stopping), and the fixed lengths."
    M = {}
    blocks = [("synthetic", "grid", None)] + ([("digits", "digits", None)] if cfg.digits else []) + [(f"fixed_e{L}", "fixed", L) for L in cfg.fixed_epochs]
    for prefix, block, L in blocks:
        for method in ("BCE", "CPO"):
            for k, v in loss_summary(runs, block, method, cfg.noise_levels, L).items(): M[f"{prefix}/{method.lower()}/{k}"] = v
    if not cfg.digits: M.update({f"digits/{m}/{k}": None for m in ("bce", "cpo") for k in ("concept_acc_noisy", "concept_drop")})
    return M


# %%
import pandas as pd

# %%
_rows = [dict(block="grid", epochs=8, method=m, seed=s, p=p, concept_acc=0.9 - p / 4 + 0.01 * (m == "CPO") + 0.001 * s, task_acc=0.95 - p / 10,
              iv_mean=0.9, concept_ece=0.05, stop_epoch=5) for m in ("BCE", "CPO") for s in range(3) for p in (0.0, 0.2, 0.4)]
_ms = measurements(Config.from_params("smoke", noise_levels=[0.0, 0.2, 0.4], digits=False), pd.DataFrame(_rows))
test_close(_ms["synthetic/cpo/concept_acc_noisy"], [0.9 - 0.075 + 0.01 + 0.001 * s for s in range(3)], eps=1e-12)   # mean over p = 0.2, 0.4
test_close(_ms["synthetic/bce/concept_drop"], [0.1] * 3, eps=1e-12); test_close(_ms["synthetic/bce/task_drop_rel"], [0.04 / 0.95] * 3, eps=1e-12)
test_eq(_ms["digits/cpo/concept_acc_noisy"], None)

# %% [markdown]
# ## The claims, declared before the run
#
# The headline and the comparisons of the paper are graded on CBMs trained with early stopping (the protocol
# above), paired over seeds, with 95 % intervals; one seed is always inconclusive. The comparisons under noise
# need the condition the paper's experiment depends on — concept noise hurts a BCE-trained CBM here (the drop
# of its concept accuracy from p = 0 to p_max is above 0) — or they are inconclusive. Fixed training lengths
# without early stopping, systematic noise and the ablation are shown, not graded.

# %%
#| export
from trustlib.results import Claim, Change, Above, Diff

TODAY = "2026-12-01"
NOISE_HURTS = Above("synthetic/bce/concept_drop", 0.0, what="drop of BCE concept accuracy from p = 0 to p_max (early stopping)")
NOISE_HURTS_DIGITS = Above("digits/bce/concept_drop", 0.0, what="drop of BCE concept accuracy on digits from p = 0 to p_max")
WHY = ("both losses are now compared as a practitioner trains them — early stopping on a validation split whose concept labels are as noisy "
       "as the training labels, declared before the run — instead of at two fixed training lengths combined by a rule that gave partial "
       "credit when one length showed a significant effect against the claim")

def _gap(a:str, b:str, what:str, reproduced:float) -> Above:
    return Above(Diff(a, b), reproduced, 0.0, what=what)

def _text(rule) -> str: return Claim("x", "x", "x", rule).rule_text()

def _legacy(what:str, t:float) -> str:
    return (f"per training length: reproduced if {what} > {t:g}; partially if {what} > 0; interval must clear the threshold (95 % t-interval over "
            "seeds); reproduced if reproduced at every length, partially if reproduced or partially at one length at least, inconclusive if "
            "inconclusive at one at least")

def _claim(id, claim, paper, rule, legacy, reason, requires=(), headline=False, ours="", log=(), was=None):
    "A graded claim whose log starts with the conversion from the legacy rule (to `was`, the rule then, if it changed since)."
    return Claim(id, claim, paper, rule, requires=requires, headline=headline, reason=reason, ours=ours,
                 log=[Change(TODAY, legacy, _text(was or rule), WHY), *log])

_ECE_RULE = _gap("synthetic/bce/ece_noisy", "synthetic/cpo/ece_noisy", "BCE − CPO concept ECE (noisy)", 0.005)
_ECE_BINARY = _gap("synthetic/bce/ece_noisy", "synthetic/cpo/ece_noisy", "BCE − CPO binary concept ECE (noisy)", 0.005)
ECE_CHANGE = Change("2026-12-02", _text(_ECE_RULE), _text(_ECE_BINARY),
                    "the rule is unchanged in substance (same comparison, same thresholds), but the metric definition changes: the concept "
                    "ECE was top-label ECE (confidence max(p, 1 − p) against the accuracy of the rounded prediction); it is now the binary "
                    "calibration error of P(c = 1) against the fraction of positive concepts per bin, torchmetrics' binary_calibration_error, "
                    "which is what calibration of a concept posterior means")

_S = "synthetic/{}/{}"
CLAIMS = [
    _claim("degrade", "Concept mislabelling degrades CBM performance (by up to 25 % in some cases)", "up to 25 % (real datasets, abstract)",
           Above("synthetic/bce/task_drop_rel", 0.05, 0.0, what="relative drop of BCE task accuracy from p = 0 to p_max"),
           "reproduced if relative drop of BCE task accuracy from p = 0 to p_max > 0.05; partially if relative drop of BCE task accuracy from "
           "p = 0 to p_max > 0; interval must clear the threshold",
           "direction testable on synthetic data; the magnitude depends on the data and is not comparable"),
    _claim("concept_noisy", "CPO outperforms BCE when concept labels are noisy (concept accuracy)", "consistent gains on CUB, AwA2, CelebA with added noise (abstract)",
           _gap(_S.format("cpo", "concept_acc_noisy"), _S.format("bce", "concept_acc_noisy"), "CPO − BCE concept accuracy (noisy)", 0.01),
           _legacy("CPO − BCE concept accuracy (noisy)", 0.01), "synthetic CBM data, symmetric noise p > 0, early stopping, paired over seeds",
           requires=NOISE_HURTS, headline=True),
    _claim("sensitivity", "CPO is less sensitive to concept noise than BCE", "shown analytically and on three datasets",
           _gap(_S.format("bce", "concept_drop"), _S.format("cpo", "concept_drop"), "BCE − CPO drop of concept accuracy (p = 0 → p_max)", 0.01),
           _legacy("BCE − CPO drop of concept accuracy (p = 0 → p_max)", 0.01), "loss of concept accuracy from p = 0 to p_max, BCE minus CPO",
           requires=NOISE_HURTS),
    _claim("concept_clean", "CPO outperforms BCE without added noise (concept accuracy)", "consistent gains without added noise (abstract)",
           _gap(_S.format("cpo", "concept_acc_clean"), _S.format("bce", "concept_acc_clean"), "CPO − BCE concept accuracy (p = 0)", 0.005),
           _legacy("CPO − BCE concept accuracy (p = 0)", 0.005), "synthetic CBM data without added noise, early stopping"),
    _claim("task_noisy", "CPO also gives better task accuracy under concept noise", "reported on three datasets (not checked)",
           _gap(_S.format("cpo", "task_acc_noisy"), _S.format("bce", "task_acc_noisy"), "CPO − BCE task accuracy (noisy)", 0.01),
           _legacy("CPO − BCE task accuracy (noisy)", 0.01), "reconstructed claim (the abstract gives no number); synthetic data", requires=NOISE_HURTS),
    _claim("intervention_noisy", "Under concept noise, CPO-trained CBMs reach higher accuracy across test-time interventions",
           "intervention study in the paper (details not checked)",
           _gap(_S.format("cpo", "iv_noisy"), _S.format("bce", "iv_noisy"), "CPO − BCE intervention accuracy (noisy)", 0.01),
           _legacy("CPO − BCE intervention accuracy (noisy)", 0.01), "task accuracy averaged over the intervention levels; synthetic data",
           requires=NOISE_HURTS),
    _claim("ece_noisy", "CPO optimises the concept posterior: its concept probabilities are better calibrated than BCE's under noise",
           "analysis in the paper (posterior; details not checked)",
           _ECE_BINARY, _legacy("BCE − CPO concept ECE (noisy)", 0.005),
           "binary ECE of the concept probabilities P(c = 1) (torchmetrics' binary_calibration_error, 15 bins); synthetic data",
           requires=NOISE_HURTS, log=[ECE_CHANGE], was=_ECE_RULE),
    _claim("digits", "CPO outperforms BCE under concept noise on a second dataset (digits, 7-segment concepts)", "three real datasets",
           _gap("digits/cpo/concept_acc_noisy", "digits/bce/concept_acc_noisy", "CPO − BCE concept accuracy on digits (noisy)", 0.01),
           "reproduced if CPO − BCE concept accuracy on digits (noisy) > 0.01; partially if CPO − BCE concept accuracy on digits (noisy) > 0; "
           "interval must clear the threshold", "a small real dataset with concepts determined by the class", requires=NOISE_HURTS_DIGITS),
    Claim("fixed_lengths", "Without early stopping, which loss wins depends on the training length", "not studied in the abstract",
          status="illustrated", reason="shown for information: fixed lengths without early stopping, synthetic grid",
          ours="CPO − BCE concept accuracy (noisy): 30 epochs CPO {fixed_e30/cpo/concept_acc_noisy:.3f} vs BCE {fixed_e30/bce/concept_acc_noisy:.3f}; "
               "100 epochs CPO {fixed_e100/cpo/concept_acc_noisy:.3f} vs BCE {fixed_e100/bce/concept_acc_noisy:.3f}"),
    Claim("systematic", "Systematic mislabelling (some concepts wrong for a whole class)", "not studied in the abstract (a reviewers' question)",
          status="illustrated", reason="shown for information: with class-level errors the wrong labels are consistent, so neither loss can tell them from the truth"),
    Claim("ablation", "β and the reference policy (uniform, prior, frozen BCE model, per-concept loss)", "the paper's choices are not known to us",
          status="illustrated", reason="an ablation of our reconstruction, not a claim (table below)"),
    Claim("real_data", "CPO consistently outperforms BCE on CUB, AwA2 and CelebA with and without added noise", "three real-world datasets (abstract)",
          status="not_testable_offline", reason="the image datasets and pretrained backbones are not available offline; the full profile asks for them"),
]

# %% [markdown]
# ### How each claim is judged

# %%
from trustlib.results import claims_table

# %%
claims_table(CLAIMS)

# %% [markdown]
# ## The paper's datasets: the `full` profile
#
# The `full` profile runs the same CBMs, losses, noise injection, early stopping and metrics on the paper's
# image datasets, read from their official on-disk layouts under the data folder (`trustlib.data.data_dir()`,
# `data/cache/` by default):
#
# - **CUB-200-2011** at `cub/CUB_200_2011/` as the official archive unpacks: `images.txt` (`<id> <class
#   folder>/<file>.jpg`), `image_class_labels.txt` (`<id> <class 1..200>`), `train_test_split.txt` (`<id>
#   <1 = train>`), `attributes/image_attribute_labels.txt` (`<id> <attribute 1..312> <present> <certainty>
#   <time>`; a few rows of the real file carry extra fields, only the first three are read) and `images/`. The
#   official train/test split is used. Concepts (`cub_concepts`): `class`, the usual CBM benchmark of Koh et
#   al. (2020): each attribute's majority vote over a class's *training* images, attributes kept when they
#   are on for at least `cub_min_classes` classes (10 gives their 112), every image labelled with its class's
#   vector; or `image`, the raw per-image annotations of all 312 attributes (themselves noisy).
# - **AwA2** at `awa2/Animals_with_Attributes2/`: `classes.txt` (`<n>\t<name>`), `predicates.txt`,
#   `predicate-matrix-binary.txt` (50 × 85, the class-level attributes are the concepts) and
#   `JPEGImages/<class>/<file>.jpg`. AwA2 has no image-level train/test split (its proposed splits are over
#   classes, for zero-shot learning); we take a stratified 80/20 split of the images (seed 0), fixed across seeds.
# - **CelebA** is not read yet: the concept and task construction used for CBMs on CelebA is not known to us
#   from the paper; it is skipped with a message.
#
# Image features come from a pretrained backbone by Hugging Face hub id (`backbone`, ResNet-50 by default),
# preprocessed as its `preprocessor_config.json` says (resize to `shortest_edge / crop_pct`, centre crop,
# ImageNet normalisation), on `device` (CUDA when present). The pooled features are computed once and cached
# under `cpo-features/` in the data folder, keyed by the dataset's image list and the backbone's revision. The
# backbone stays **frozen**: the concept encoder is the notebook's MLP on these features, trained jointly with
# the label head (the paper trains its CBMs end to end, as far as we know). A missing dataset is skipped with
# a message naming its path; when none is present the run stops with `ResourceUnavailable`.

# %%
#| export
REAL_DIRS = {"cub": "cub/CUB_200_2011", "awa2": "awa2/Animals_with_Attributes2", "celeba": "celeba"}
REAL_NAMES = {"cub": "CUB-200-2011", "awa2": "AwA2", "celeba": "CelebA"}

@dataclass
class ImageConcepts:
    "An image dataset with binary concepts: image paths, concepts `[N, K]` (clean, as annotated), labels, and the official train rows."
    name: str; root: object; paths: list; C: np.ndarray; y: np.ndarray; train: np.ndarray; concept_names: list

def _int_fields(path, n:int) -> np.ndarray:
    "The first `n` whitespace-separated integer fields of every non-empty line of `path` (extra fields are ignored)."
    with open(path) as f: return np.array([[int(float(v)) for v in l.split()[:n]] for l in f if l.strip()], dtype=np.int64)

def load_cub(root, concepts:str="class", min_classes:int=10) -> ImageConcepts:
    "CUB-200-2011 from its official layout at `root` (`CUB_200_2011/`): images, labels 0..199, the official split and the attribute concepts."
    from pathlib import Path
    root = Path(root)
    ids = {}; paths = []
    with open(root / "images.txt") as f:
        for l in f:
            if l.strip(): i, rel = l.split(maxsplit=1); ids[int(i)] = len(paths); paths.append(str(root / "images" / rel.strip()))
    lab, split = _int_fields(root / "image_class_labels.txt", 2), _int_fields(root / "train_test_split.txt", 2)
    y = np.zeros(len(paths), np.int64); y[[ids[i] for i in lab[:, 0]]] = lab[:, 1] - 1
    train = np.zeros(len(paths), bool); train[[ids[i] for i in split[:, 0]]] = split[:, 1] == 1
    att = _int_fields(root / "attributes" / "image_attribute_labels.txt", 3)
    n_att = int(att[:, 1].max())
    A = np.zeros((len(paths), n_att), np.float32); A[[ids[i] for i in att[:, 0]], att[:, 1] - 1] = att[:, 2]
    names = [f"attribute_{k + 1}" for k in range(n_att)]
    for f in (root / "attributes.txt", root.parent / "attributes.txt", root / "attributes" / "attributes.txt"):
        if f.is_file():
            names = [l.split(maxsplit=1)[1].strip() for l in f.read_text().splitlines() if l.strip()][:n_att]; break
    if concepts == "image": return ImageConcepts("cub", root, paths, A, y, train, names)
    if concepts != "class": raise ValueError(f"concepts must be 'class' or 'image', got {concepts!r}")
    n_cls = int(y.max()) + 1
    votes = np.stack([A[train & (y == k)].mean(0) if (train & (y == k)).any() else np.zeros(n_att) for k in range(n_cls)])
    prof = (votes > 0.5).astype(np.float32)                     # class-level majority vote on the training images
    keep = np.flatnonzero(prof.sum(0) >= min_classes)
    if not len(keep): raise ConfigError(f"parameter 'cub_min_classes': no CUB attribute is on for {min_classes} classes or more")
    return ImageConcepts("cub", root, paths, prof[y][:, keep], y, train, [names[k] for k in keep])

def load_awa2(root, test_frac:float=0.2) -> ImageConcepts:
    "AwA2 from its official layout at `root` (`Animals_with_Attributes2/`): images, labels, the 85 class-level attributes; a stratified split (seed 0)."
    from pathlib import Path
    from trustlib.data import stratified_split
    root = Path(root)
    classes = [l.split()[-1] for l in (root / "classes.txt").read_text().splitlines() if l.strip()]
    preds = [l.split()[-1] for l in (root / "predicates.txt").read_text().splitlines() if l.strip()]
    M = np.loadtxt(root / "predicate-matrix-binary.txt", dtype=np.float32, ndmin=2)
    paths, y = [], []
    for k, c in enumerate(classes):
        for f in sorted((root / "JPEGImages" / c).glob("*.jpg")): paths.append(str(f)); y.append(k)
    y = np.asarray(y, np.int64)
    tr, _ = stratified_split(y, (1 - test_frac, test_frac), seed=0)
    train = np.zeros(len(y), bool); train[tr] = True
    return ImageConcepts("awa2", root, paths, M[y], y, train, preds)

REAL_LOADERS = {"cub": lambda root, cfg: load_cub(root, cfg.cub_concepts, cfg.cub_min_classes), "awa2": lambda root, cfg: load_awa2(root)}


# %% [markdown]
# The backbone and its cached embeddings:

# %%
#| export
def _preprocess(path, spec:dict):
    "One image as the backbone's processor prepares it: RGB, resize the short side to shortest_edge / crop_pct, centre crop, rescale, normalise; `[3, H, W]`."
    from PIL import Image
    size = spec.get("size", {}); edge = int(size.get("shortest_edge", size.get("height", 224)) if isinstance(size, dict) else size)
    crop = float(spec.get("crop_pct") or 1.0)
    with Image.open(path) as im:
        im = im.convert("RGB"); w, h = im.size; s = int(edge / crop) / min(w, h)
        im = im.resize((max(edge, round(w * s)), max(edge, round(h * s))), resample=int(spec.get("resample", 3)))
        w, h = im.size; l, t = (w - edge) // 2, (h - edge) // 2
        a = np.asarray(im.crop((l, t, l + edge, t + edge)), dtype=np.float32) * float(spec.get("rescale_factor", 1 / 255))
    mean, std = np.asarray(spec.get("image_mean", (0.485, 0.456, 0.406)), np.float32), np.asarray(spec.get("image_std", (0.229, 0.224, 0.225)), np.float32)
    return ((a - mean) / std).transpose(2, 0, 1) if spec.get("do_normalize", True) else a.transpose(2, 0, 1)

def load_backbone(hub_id:str, device:str="cpu"):
    "(model, preprocessing spec, revision) of an image backbone by hub id or folder, in eval mode on `device`."
    import json
    from trustlib.config import require
    transformers = require("transformers", "the full profile's image backbone")
    from transformers.utils import cached_file
    from transformers.utils import logging as hf_logging
    hf_logging.set_verbosity_error()
    model = transformers.AutoModel.from_pretrained(hub_id).to(device).eval()
    spec = json.loads(open(cached_file(hub_id, "preprocessor_config.json")).read())
    return model, spec, str(getattr(model.config, "_commit_hash", None) or hub_id)

@torch.no_grad()
def embed_images(paths:list, model, spec:dict, device:str="cpu", batch:int=64, progress:bool=False) -> np.ndarray:
    "Pooled backbone features `[N, D]` (float32) of the images at `paths`."
    from tqdm.auto import tqdm
    out = []
    for s in tqdm(range(0, len(paths), batch), desc="image embeddings", disable=not progress, leave=False):
        x = torch.as_tensor(np.stack([_preprocess(p, spec) for p in paths[s:s + batch]])).to(device)
        o = model(pixel_values=x)
        f = o.pooler_output if getattr(o, "pooler_output", None) is not None else o.last_hidden_state.mean(1)
        out.append(f.flatten(1).float().cpu().numpy())
    return np.concatenate(out).astype(np.float32)

def cached_embeddings(ds:ImageConcepts, cfg:Config, progress:bool=False) -> np.ndarray:
    "The backbone features of every image of `ds`, computed once and cached under `<data_dir>/cpo-features/` (keyed by images and backbone revision)."
    import hashlib, os
    from trustlib.config import get_device
    from trustlib.data import data_dir
    device = get_device(cfg.device)
    model, spec, rev = load_backbone(cfg.backbone, device)
    rel = [os.path.relpath(p, ds.root) for p in ds.paths]
    key = hashlib.sha1("\n".join([cfg.backbone, rev, json_dumps(spec), *rel]).encode()).hexdigest()[:12]
    f = data_dir() / "cpo-features" / f"{ds.name}-{cfg.backbone.replace('/', '--')}-{key}.npy"
    if f.is_file(): return np.load(f)
    X = embed_images(ds.paths, model, spec, device, cfg.embed_batch, progress)
    f.parent.mkdir(parents=True, exist_ok=True)
    tmp = f.with_suffix(f".{os.getpid()}.tmp.npy"); np.save(tmp, X); os.replace(tmp, f)
    return X

def json_dumps(x) -> str:
    import json
    return json.dumps(x, sort_keys=True)

def real_cbm(name:str, cfg:Config, progress:bool=False) -> CBMData|str:
    "The CBM data of one of the paper's datasets (backbone features, concepts, labels, official or fixed split), or why it is skipped."
    from trustlib.data import data_dir, display_path
    root = data_dir() / REAL_DIRS[name]
    if name not in REAL_LOADERS: return f"{REAL_NAMES[name]} skipped: its loader is not implemented (the CBM construction on it is not known to us)"
    if not root.exists(): return f"{REAL_NAMES[name]} skipped: not found at {display_path(root)}"
    ds = REAL_LOADERS[name](root, cfg)
    X = cached_embeddings(ds, cfg, progress)
    tr, te = ds.train, ~ds.train
    return CBMData(X[tr], ds.C[tr], ds.y[tr], X[te], ds.C[te], ds.y[te], name=name)


# %% [markdown]
# The loaders on a tiny CUB folder in the official layout (the rehearsal's stand-in: 12 classes of 6 images, all
# 312 attributes), the preprocessing, and the embedding loop with a stand-in model that averages the pixels:

# %%
import tempfile
from pathlib import Path
from trustlib.rehearse import write_cub

# %%
with tempfile.TemporaryDirectory() as _t:
    _root = write_cub(_t)
    _raw = load_cub(_root, concepts="image"); _cls = load_cub(_root, concepts="class", min_classes=3)
    test_eq((_raw.C.shape, int(_raw.train.sum()), sorted(set(_raw.y.tolist()))), ((72, 312), 36, list(range(12))))
    _votes = np.stack([_raw.C[_raw.train & (_raw.y == k)].mean(0) > 0.5 for k in range(12)])
    test_eq(_cls.C, _votes[_raw.y][:, _votes.sum(0) >= 3].astype(np.float32))       # Koh et al.'s class-level concepts
    _spec = dict(size=224, crop_pct=0.875, image_mean=[0.5] * 3, image_std=[0.25] * 3)
    _x = _preprocess(_raw.paths[0], _spec); test_eq(_x.shape, (3, 224, 224))
    class _Mean(torch.nn.Module):
        def forward(self, pixel_values): return type("O", (), dict(pooler_output=pixel_values.mean((2, 3), keepdim=True)))()
    _E = embed_images(_raw.paths[:5], _Mean(), _spec, batch=2)
    test_eq(_E.shape, (5, 3)); test_close(_E[0], _x.mean((1, 2)), eps=1e-3)
    test_fail(lambda: load_cub(_root, concepts="class", min_classes=13), contains="cub_min_classes")
{"CUB stand-in: concepts kept at min_classes 3": _cls.C.shape[1], "per-image": _raw.C.shape[1]}

# %% [markdown]
# ### The claims of a `full` run, declared before it
#
# On the paper's datasets the same claims are graded, with the same rules, on the same measurements: the
# synthetic grid's keys (`synthetic/<loss>/<quantity>`) become `real/<loss>/<quantity>`, per-seed values
# pooled over the datasets that were present (units: dataset × seed, BCE and CPO paired), with the same
# condition (concept noise hurts a BCE-trained CBM there). "Consistently on three datasets" adds one claim per
# dataset of the run: CPO − BCE concept accuracy under noise on that dataset alone. A dataset that is
# missing leaves its claim inconclusive (not measured). The synthetic-only rows (digits, fixed lengths,
# systematic noise, the ablation) are not part of a `full` run.

# %%
#| export
import dataclasses
from trustlib.results import Compare, check_claims

def _on(test, prefix:str, where:str):
    "`test` (a Compare) reading `<prefix>/...` instead of `synthetic/...`, its quantity named with `where`."
    sub = lambda k: prefix + k[len("synthetic"):] if k.startswith("synthetic/") else k
    of = Diff(sub(test.of.a), sub(test.of.b)) if isinstance(test.of, Diff) else sub(test.of)
    return dataclasses.replace(test, of=of, what=f"{test.what}, {where}")

_REAL_WHY = ("the paper's datasets with a frozen pretrained backbone (features cached) and the notebook's MLP concept encoder; "
             "early stopping on a noisy validation split; per-seed values pooled over the datasets present (dataset × seed)")

def real_claims(datasets=("cub", "awa2", "celeba")) -> list[Claim]:
    "The claims of a `full` run on `datasets`: CLAIMS' graded synthetic-grid claims on the pooled real data, and one per dataset."
    out = []
    for c in CLAIMS:
        if c.status != "graded" or not all(k.startswith("synthetic/") for k in c.rule.keys()): continue
        out.append(dataclasses.replace(c, id=f"real_{c.id}", paper=c.paper, rule=_on(c.rule, "real", "paper's datasets"),
                                       requires=tuple(_on(r, "real", "paper's datasets") for r in c.requires), reason=_REAL_WHY, ours="", log=()))
    for d in datasets:
        hurts = Above(f"{d}/bce/concept_drop", 0.0, what=f"drop of BCE concept accuracy on {REAL_NAMES[d]} from p = 0 to p_max")
        out.append(Claim(f"{d}_concept_noisy", f"CPO outperforms BCE under concept noise on {REAL_NAMES[d]} (concept accuracy)",
                         "consistent gains on CUB, AwA2 and CelebA (abstract)",
                         _gap(f"{d}/cpo/concept_acc_noisy", f"{d}/bce/concept_acc_noisy", f"CPO − BCE concept accuracy on {REAL_NAMES[d]} (noisy)", 0.01),
                         requires=hurts, reason=f"{REAL_NAMES[d]} alone; " + _REAL_WHY.split(";")[0]))
    return check_claims(out)

_SUMMARY_KEYS = [f"{n}_{s}" for n in ("concept_acc", "task_acc", "iv", "ece", "stop_epoch") for s in ("noisy", "clean")] + ["concept_drop", "task_drop_rel"]

def real_measurements(cfg:Config, runs, names) -> dict:
    "Per-seed lists per dataset (`<name>/<loss>/<quantity>`; None for a dataset not run) and pooled over the datasets run (`real/...`, dataset-major)."
    M = {}
    for d in cfg.real_datasets:
        for method in ("BCE", "CPO"):
            got = loss_summary(runs, d, method, cfg.noise_levels) if d in names else {}
            for k in _SUMMARY_KEYS: M[f"{d}/{method.lower()}/{k}"] = got.get(k)
    for method in ("bce", "cpo"):
        for k in _SUMMARY_KEYS:
            parts = [M[f"{d}/{method}/{k}"] for d in names]
            M[f"real/{method}/{k}"] = None if not parts or any(p is None for p in parts) else [v for p in parts for v in p]
    return M


# %%
_rc = real_claims(("cub",))
test_eq([c.id for c in _rc], ["real_degrade", "real_concept_noisy", "real_sensitivity", "real_concept_clean", "real_task_noisy",
                              "real_intervention_noisy", "real_ece_noisy", "cub_concept_noisy"])
test_eq(next(c for c in _rc if c.headline).rule.keys(), ("real/cpo/concept_acc_noisy", "real/bce/concept_acc_noisy"))
_rrows = [dict(block="cub", epochs=0, method=m, seed=s, p=p, concept_acc=0.9 - p / 4 + 0.01 * (m == "CPO"), task_acc=0.8, iv_mean=0.8,
              concept_ece=0.1, stop_epoch=5) for m in ("BCE", "CPO") for s in range(2) for p in (0.0, 0.4)]
_M = real_measurements(Config.from_params("smoke", noise_levels=[0.0, 0.4], real_datasets=["cub", "awa2"]), pd.DataFrame(_rrows), ["cub"])
test_close(_M["real/cpo/concept_acc_noisy"], [0.81, 0.81], eps=1e-12); test_eq(_M["awa2/cpo/concept_acc_noisy"], None)
claims_table(_rc)


# %% [markdown]
# ## `run`: the whole experiment

# %%
#| export
def run_real(cfg:Config, progress:bool=True) -> Result:
    "The `full` profile: BCE vs CPO CBMs on the paper's datasets present (backbone features), over seeds × noise levels, early stopping."
    import pandas as pd
    from tqdm.auto import tqdm
    datas = {}
    for name in cfg.real_datasets:
        d = real_cbm(name, cfg, progress)
        if isinstance(d, str): print(d)
        else: datas[name] = d
    if not datas:
        from trustlib.data import data_dir, display_path
        raise ResourceUnavailable(f"none of the paper's datasets {list(cfg.real_datasets)} is under {display_path(data_dir())} (CUB-200-2011 as "
                                  f"{REAL_DIRS['cub']}/, AwA2 as {REAL_DIRS['awa2']}/, in their official layouts); run the cpu profile for the offline reproduction")
    levels, S = list(cfg.noise_levels), cfg.n_seeds
    grid = [(s, p) for s in range(S) for p in levels]
    rows = []
    bar = tqdm(total=2 * len(datas), desc="CBM trainings", disable=not progress)
    with torch_threads(cfg.n_threads):
        for name, d in datas.items():
            noisy = [flip_concepts(d.C_train, p, np.random.default_rng(derive_seed(cfg.seed, name, "noise", s, int(round(p * 1000)))))[0] for s, p in grid]
            seed, bce = derive_seed(cfg.seed, name, "grid"), None
            for method, kw in (("BCE", dict(concept_loss="bce")), ("CPO", dict(concept_loss="cpo", beta=cfg.beta, reference=cfg.reference))):
                res, model = train_eval([d] * len(grid), noisy, cfg, cfg.max_epochs, seed, ref_model=bce, early_stopping=True, **kw)
                if method == "BCE": bce = model
                for (s, p), r in zip(grid, res): rows.append(dict(block=name, epochs=0, method=method, seed=s, p=p, **r))
                bar.update(1)
    bar.close()
    runs = pd.DataFrame(rows)
    cols = ["concept_acc", "concept_auc", "concept_ece", "task_acc", "iv_mean", "fit_noisy_labels", "stop_epoch"]
    data = pd.DataFrame([dict(dataset=n, n_train=len(d.y_train), n_test=len(d.y_test), concepts=d.C_train.shape[1], classes=int(d.y_train.max()) + 1,
                              features=d.X_train.shape[1]) for n, d in datas.items()])
    tables = dict(runs=runs, data=data, summary=runs.groupby(["block", "epochs", "method", "p"], sort=False)[cols].agg(["mean", "std"]).round(4))
    return Result(paper="cpo", config=cfg.to_dict(), metrics=real_measurements(cfg, runs, list(datas)), tables=tables,
                  figures=make_real_figures(cfg, runs, list(datas)))

def make_real_figures(cfg:Config, runs, names) -> dict:
    "Per dataset: concept accuracy, task accuracy and concept ECE against p, and the intervention curves at p_max (early stopping)."
    import matplotlib.pyplot as plt, seaborn as sns
    figs = {}
    fig, axes = plt.subplots(3, len(names), figsize=(4.2 * len(names), 9), squeeze=False)
    for j, n in enumerate(names):
        for i, (m, lab) in enumerate([("concept_acc", "concept accuracy (test)"), ("task_acc", "task accuracy"), ("concept_ece", "concept ECE")]):
            sns.lineplot(data=runs[runs.block == n], x="p", y=m, hue="method", style="method", markers=True, errorbar="sd", ax=axes[i, j])
            axes[i, j].set_xlabel("fraction of training concept labels flipped, p"); axes[i, j].set_ylabel(lab)
        axes[0, j].set_title(f"{REAL_NAMES[n]}, early stopping")
    fig.tight_layout(); figs["noise_curves"] = fig
    pmax = max(cfg.noise_levels)
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.6), squeeze=False)
    for ax, n in zip(axes[0], names):
        r = runs[(runs.block == n) & (runs.p == pmax)]
        long = r.melt(id_vars=["method", "seed"], value_vars=[f"iv_{j}" for j in range(len(cfg.intervention_levels))], var_name="j", value_name="acc")
        long["r"] = [100 * cfg.intervention_levels[int(v.split("_")[1])] for v in long.j]
        sns.lineplot(data=long, x="r", y="acc", hue="method", style="method", markers=True, errorbar="sd", ax=ax)
        ax.set_xlabel("concepts replaced by true values at test time (%)"); ax.set_ylabel("task accuracy"); ax.set_title(f"{REAL_NAMES[n]}, p = {pmax:g}")
    fig.tight_layout(); figs["interventions"] = fig
    plt.close("all")
    return figs

def _grid_runs(cfg:Config, add, pair):
    "Every training of the experiment: the early-stopping blocks (grid, ablation, systematic, digits), then the fixed lengths."
    levels, S = list(cfg.noise_levels), cfg.n_seeds
    syn = [synthetic_cbm(cfg.n_train, cfg.n_test, cfg.n_concepts, cfg.n_classes, cfg.n_features, cfg.ambiguous_frac, cfg.x_noise,
                         seed=derive_seed(cfg.seed, "synthetic", s)) for s in range(S)]
    noisy = {(s, p): flip_concepts(syn[s].C_train, p, np.random.default_rng(derive_seed(cfg.seed, "noise", s, int(round(p * 1000)))))[0]
             for s in range(S) for p in set(levels) | {cfg.ablation_noise}}
    main = [("CPO", dict(beta=cfg.beta, reference=cfg.reference))]
    grid = [(s, p) for s in range(S) for p in levels]
    pair("grid", [syn[s] for s, _ in grid], [noisy[m] for m in grid], grid, cfg.max_epochs, derive_seed(cfg.seed, "grid"), main, True)
    if cfg.ablation:
        ab = [(s, cfg.ablation_noise) for s in range(S)]
        variants = main + [(f"CPO β={b:g}", dict(beta=b)) for b in cfg.ablation_betas] + [
            ("CPO prior ref.", dict(beta=cfg.beta, reference="prior")), ("CPO BCE-model ref.", dict(beta=cfg.beta, reference="model")),
            ("CPO per-concept", dict(beta=cfg.beta, per_concept=True))]
        pair("ablation", [syn[s] for s, _ in ab], [noisy[m] for m in ab], ab, cfg.max_epochs, derive_seed(cfg.seed, "ablation"), variants, True)
    if cfg.systematic:
        sysn = [systematic_flips(syn[s].C_train, syn[s].y_train, cfg.systematic_per_class, np.random.default_rng(derive_seed(cfg.seed, "systematic", s)))
                for s in range(S)]
        frac = cfg.systematic_per_class / cfg.n_concepts
        pair("systematic", syn, [n for n, _, _ in sysn], [(s, frac) for s in range(S)], cfg.max_epochs, derive_seed(cfg.seed, "systematic-train"), main, True)
    if cfg.digits:
        dig = [digits_cbm(seed=derive_seed(cfg.seed, "digits", s)) for s in range(S)]
        dn = {(s, p): flip_concepts(dig[s].C_train, p, np.random.default_rng(derive_seed(cfg.seed, "digits-noise", s, int(round(p * 1000)))))[0]
              for s in range(S) for p in levels}
        pair("digits", [dig[s] for s, _ in grid], [dn[m] for m in grid], grid, cfg.max_epochs, derive_seed(cfg.seed, "digits-train"), main, True)
    for L in cfg.fixed_epochs:
        pair("fixed", [syn[s] for s, _ in grid], [noisy[m] for m in grid], grid, L, derive_seed(cfg.seed, "grid", L), main, False)

def run(cfg:Config, progress:bool=True) -> Result:
    "Run the CPO reproduction described by `cfg`; returns measurements, tables and figures."
    import pandas as pd
    from tqdm.auto import tqdm
    if cfg.real_datasets: return run_real(cfg, progress)
    n_tasks = 2 * (1 + bool(cfg.digits) + len(cfg.fixed_epochs) + bool(cfg.systematic)) + (6 + len(cfg.ablation_betas) if cfg.ablation else 0)
    bar = tqdm(total=n_tasks, desc="CBM trainings", disable=not progress)
    rows = []
    def add(block, members, res, method, epochs, es):
        for (s, p), r in zip(members, res): rows.append(dict(block=block, epochs=epochs if not es else 0, method=method, seed=s, p=p, **r))
        bar.update(1)
    def pair(block, datas, noisy, members, L, seed, variants, es):
        "BCE first (it is also the frozen reference of 'model'), then each CPO variant."
        res, bce = train_eval(datas, noisy, cfg, L, seed, concept_loss="bce", early_stopping=es); add(block, members, res, "BCE", L, es)
        for name, kw in variants:
            res, _ = train_eval(datas, noisy, cfg, L, seed, concept_loss="cpo", ref_model=bce, early_stopping=es, **kw); add(block, members, res, name, L, es)
    with torch_threads(cfg.n_threads): _grid_runs(cfg, add, pair)
    bar.close()
    runs = pd.DataFrame(rows)
    cols = ["concept_acc", "concept_auc", "concept_ece", "task_acc", "iv_mean", "fit_noisy_labels", "stop_epoch"]
    tables = dict(runs=runs, summary=runs.groupby(["block", "epochs", "method", "p"], sort=False)[cols].agg(["mean", "std"]).round(4))
    if cfg.ablation: tables["ablation"] = runs[runs.block == "ablation"].groupby("method", sort=False)[cols].mean().round(4)
    if cfg.systematic: tables["systematic"] = runs[runs.block == "systematic"].groupby("method", sort=False)[cols].mean().round(4)
    return Result(paper="cpo", config=cfg.to_dict(), metrics=measurements(cfg, runs), tables=tables, figures=make_figures(cfg, runs))

def make_figures(cfg:Config, runs) -> dict:
    "Noise curves (concept accuracy, task accuracy, concept ECE vs p) with early stopping and at the fixed lengths, intervention curves at p_max."
    import matplotlib.pyplot as plt, seaborn as sns
    figs = {}
    panels = [("grid", 0, "early stopping")] + [("fixed", L, f"{L} epochs, no early stopping") for L in cfg.fixed_epochs]
    fig, axes = plt.subplots(3, len(panels), figsize=(4.2 * len(panels), 9), squeeze=False)
    for j, (blk, e, title) in enumerate(panels):
        d = runs[(runs.block == blk) & (runs.epochs == e)]
        for i, (m, lab) in enumerate([("concept_acc", "concept accuracy (clean test)"), ("task_acc", "task accuracy"), ("concept_ece", "concept ECE")]):
            ax = axes[i, j]
            sns.lineplot(data=d, x="p", y=m, hue="method", style="method", markers=True, errorbar="sd", ax=ax)
            ax.set_xlabel("fraction of training concept labels flipped, p"); ax.set_ylabel(lab)
            if i == 0: ax.set_title(f"synthetic CBM data, {title}")
    fig.tight_layout(); figs["noise_curves"] = fig
    pmax = max(cfg.noise_levels)
    ivp = [("grid", 0, f"synthetic, p = {pmax:g}, early stopping")] + ([("digits", 0, f"digits, p = {pmax:g}, early stopping")] if cfg.digits else [])
    fig, axes = plt.subplots(1, len(ivp), figsize=(4.2 * len(ivp), 3.6), squeeze=False)
    for ax, (blk, e, title) in zip(axes[0], ivp):
        r = runs[(runs.block == blk) & (runs.epochs == e) & (runs.p == pmax)]
        long = r.melt(id_vars=["method", "seed"], value_vars=[f"iv_{j}" for j in range(len(cfg.intervention_levels))], var_name="j", value_name="acc")
        long["r"] = [100 * cfg.intervention_levels[int(v.split("_")[1])] for v in long.j]
        sns.lineplot(data=long, x="r", y="acc", hue="method", style="method", markers=True, errorbar="sd", ax=ax)
        ax.set_xlabel("concepts replaced by true values at test time (%)"); ax.set_ylabel("task accuracy"); ax.set_title(title)
    fig.tight_layout(); figs["interventions"] = fig
    if cfg.digits:
        fig, ax = plt.subplots(figsize=(4.5, 3.6))
        sns.lineplot(data=runs[runs.block == "digits"], x="p", y="concept_acc", hue="method", style="method", markers=True, errorbar="sd", ax=ax)
        ax.set_xlabel("fraction of training concept labels flipped, p"); ax.set_ylabel("concept accuracy (clean test)"); ax.set_title("digits, 7-segment concepts, early stopping")
        fig.tight_layout(); figs["digits"] = fig
    plt.close("all")
    return figs


# %% [markdown]
# ## The experiment
#
# One call runs everything for the chosen profile (`smoke` by default here; the committed page shows a
# `cpu` run: 5 seeds, p ∈ {0, 0.1, 0.2, 0.3, 0.4}, 3,000 synthetic training examples of which 20 % are the
# noisy validation split, early stopping with patience 10 within 100 epochs, and the fixed lengths 30 and 100).

# %%
from trustlib.results import run_experiment

# %%
if cfg.real_datasets:   # the full profile on the paper's datasets: its claims table, declared above, grades this run
    CLAIMS = real_claims(cfg.real_datasets)
    display(claims_table(CLAIMS))

# %%
result = run_experiment(run, cfg, CLAIMS)

# %% [markdown]
# The comparisons under noise need one condition: concept noise must hurt a BCE-trained CBM, so that a loss
# robust to noise has something to fix. It is measured (per seed, with its interval) on the early-stopping
# grid and on digits (in a `full` run: on the paper's datasets, pooled and one by one); `stop_epoch` is the
# epoch each CBM kept.

# %%
_shown = ("synthetic/bce/concept_drop", "synthetic/cpo/concept_drop", "digits/bce/concept_drop", "synthetic/bce/stop_epoch_noisy",
          "synthetic/cpo/stop_epoch_noisy")
if cfg.real_datasets: _shown = tuple(f"{d}/{m}/{k}" for d in ("real", *cfg.real_datasets) for m in ("bce", "cpo") for k in ("concept_drop", "stop_epoch_noisy"))
{k: result.metrics.get(k) for k in _shown}

# %% [markdown]
# Mean (and standard deviation over seeds) of every metric, by block, training length (0: early stopping),
# loss and noise level. `fit_noisy_labels` is the agreement of the model's training-set concepts with its own
# noisy training labels: above 1 − p it has memorised flipped labels.

# %%
result.tables["summary"]

# %%
result.figures["noise_curves"]

# %%
result.figures["interventions"]

# %%
result.figures.get("digits")

# %% [markdown]
# The CPO ablation (concept accuracy and the other metrics at `ablation_noise`, mean over seeds) and the
# systematic-noise variant, both with early stopping:

# %%
result.tables.get("ablation")

# %%
result.tables.get("systematic")

# %% [markdown]
# ## Paper vs. us

# %%
result.verdict_table()

# %% [markdown]
# The table above is the verdict of the run shown on this page; the rules were fixed before the run, and
# the `ours` column gives every number with its interval. How to read it:
#
# - **Scale and data.** Everything here is a small MLP on synthetic data or on 8×8 digits, with symmetric
#   or class-level noise that we inject. The paper's own evidence (CUB, AwA2, CelebA with pretrained
#   backbones) is not reproduced offline, and magnitudes such as the "25 %" are not comparable. The `full`
#   profile runs the same comparison on CUB-200-2011 and AwA2 (official copies in the data folder), on the
#   features of a frozen pretrained ResNet-50 rather than a backbone fine-tuned end to end, and grades the
#   same rules on those measurements (`real_claims`); CelebA is not read.
# - **A reconstruction.** One sampled concept vector per example, no gradient through the sample, both
#   losses written with the same concept log-likelihood, one λ. The authors' β, λ, number of samples,
#   reference policy, normalisation or training protocol may differ, and the ablation table shows that such
#   choices move concept accuracy by about as much as the BCE–CPO gap itself.
# - **Training protocol.** CPO's steps shrink by the factor 1 − p on confident concepts: it learns more
#   slowly at first and resists memorising flipped labels later. At a fixed training length the comparison
#   therefore depends on the length (the `fixed_lengths` row); the graded comparisons stop each model where
#   its own noisy validation split says, which is what a practitioner would do.
# - **Calibration.** The fixed-point derivation above says CPO's concept probabilities sit closer to ½
#   than the label frequency, so lower concept ECE for CPO is not what our reconstruction predicts; the
#   calibration row tests the posterior claim in that light.
# - **Systematic noise** is shown, not graded: when the same concepts are wrong for every example of a
#   class, the wrong labels are consistent with the inputs and neither loss has a signal to undo them.
