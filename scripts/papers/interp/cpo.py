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
#   calibration, task accuracy and test-time interventions, 5 seeds, two training lengths.
# - **Reconstructed, not checked against the code:** the exact form of the loss (one joint preference pair
#   per example, one sample from the current model, no gradient through the sample), the scale of the
#   concept losses (both are written in terms of the concept log-likelihood log π(c|x)), β, λ, and the
#   reference policy.
# - **Not testable offline:** the paper's gains on CUB, AwA2 and CelebA with pretrained image backbones
#   (the `full` profile asks for those datasets and stops when they are missing). Our magnitudes come from
#   small MLPs on small or synthetic data and are not comparable with the paper's.
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
epochs: Optional[list[int]] = None  # training lengths compared (full passes over the training set)
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
digits_epochs: Optional[int] = None  # training length on digits
intervention_levels: Optional[list[float]] = None  # fractions of concepts replaced by their true values at test time
n_bins: Optional[int] = None  # equal-width bins of the concept ECE
real_datasets: Optional[list[str]] = None  # the paper's image datasets (full profile only; need local copies and a GPU)
n_threads: Optional[int] = None  # torch CPU threads used for training


# %% [markdown] tags=["injected-parameters"]
# **This page shows a run with** `profile = "cpu"` (run `cpu-bf21a9e8fb`, commit `ed9063e`, 148 s, 2026-12-01). Running the notebook yourself uses the parameters cell above as written (the fast `smoke` profile unless you change it); `trustlib run cpo --profile cpu` repeats the run shown here.

# %%
#| export
@dataclass
class Config(BaseConfig):
    "Configuration of the CPO reproduction (synthetic CBM data and 7-segment digits)."
    n_seeds: int = param(1, "independent repetitions (data, noise draw and initialisation)", ge=1, max=100)
    noise_levels: tuple[float, ...] = param((0.0, 0.3), "fractions of training concept labels flipped (symmetric noise)", ge=0, lt=0.5)
    epochs: tuple[int, ...] = param((8,), "training lengths compared (full passes over the training set)", ge=1, max=10000)
    n_train: int = param(1000, "synthetic training examples", ge=20, max=1_000_000)
    n_test: int = param(1000, "synthetic test examples (clean concepts)", ge=20, max=1_000_000)
    n_concepts: int = param(20, "synthetic concepts K", ge=1, max=2000)
    n_classes: int = param(10, "synthetic classes", ge=2, max=1000)
    n_features: int = param(64, "synthetic input dimension d", ge=1, max=100_000)
    ambiguous_frac: float = param(0.15, "fraction of class-concept cells with P(c ＝ 1 | y) of 0.5 instead of 0.05/0.95", ge=0, le=1)
    x_noise: float = param(0.5, "std of the Gaussian input noise of the synthetic data", ge=0, le=100)
    hidden: tuple[int, ...] = param((128,), "hidden widths of the concept encoder", ge=1, max=65536)
    lr: float = param(1e-3, "Adam learning rate", gt=0, le=10)
    batch_size: int = param(128, "mini-batch size", ge=1, max=1_000_000)
    lam: float = param(1.0, "weight λ of the concept loss in the joint loss CE(y) + λ·L_concept", ge=0, le=1000)
    beta: float = param(1.0, "CPO temperature β of the main comparison", gt=0, le=100)
    reference: str = param("uniform", "CPO reference policy of the main comparison", choices=("uniform", "prior", "model"))
    ablation: bool = param(True, "run the CPO ablation (β, reference policy, per-concept loss) at one noise level")
    ablation_noise: float = param(0.3, "noise level of the ablation", ge=0, lt=0.5)
    ablation_betas: tuple[float, ...] = param((0.5, 2.0), "extra β values of the ablation", gt=0, le=100)
    systematic: bool = param(True, "run the systematic-noise variant (concepts flipped for whole classes)")
    systematic_per_class: int = param(2, "concepts flipped for every example of each class in the systematic variant", ge=1, max=2000)
    digits: bool = param(True, "run scikit-learn digits with 7-segment concepts")
    digits_epochs: int = param(8, "training length on digits", ge=1, max=10000)
    intervention_levels: tuple[float, ...] = param((0.0, 0.25, 0.5, 0.75, 1.0), "fractions of concepts replaced by their true values at test time", ge=0, le=1)
    n_bins: int = param(15, "equal-width bins of the concept ECE", ge=2, le=1000)
    real_datasets: tuple[str, ...] = param((), "the paper's image datasets (full profile only; need local copies and a GPU)", choices=("cub", "awa2", "celeba"))
    n_threads: Optional[int] = param(1, "torch CPU threads used for training", ge=1, le=1024)
    PROFILE_DEFAULTS = {
        "cpu": dict(n_seeds=5, noise_levels=(0.0, 0.1, 0.2, 0.3, 0.4), epochs=(30, 100), n_train=3000, n_test=2000,
                    digits_epochs=100),
        "full": dict(n_seeds=5, noise_levels=(0.0, 0.1, 0.2, 0.3, 0.4), epochs=(30, 100), n_train=3000, n_test=2000,
                     digits_epochs=100, real_datasets=("cub", "awa2", "celeba")),
    }
    def validate(self):
        if not self.noise_levels: raise ConfigError("parameter 'noise_levels': give at least one noise level")
        if not self.epochs: raise ConfigError("parameter 'epochs': give at least one training length")
        if self.systematic_per_class > self.n_concepts:
            raise ConfigError(f"parameter 'systematic_per_class': {self.systematic_per_class} exceeds n_concepts {self.n_concepts}")
        if not self.intervention_levels: raise ConfigError("parameter 'intervention_levels': give at least one level")


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
# `fit_cbm` trains all members with Adam for a fixed number of epochs (no early stopping: a noisy
# validation set would reward stopping before the noise is memorised, which is one of the things we want
# to see). Every member draws its own mini-batches and its own CPO samples from one seeded
# `torch.Generator`, so a run repeats exactly for a seed.

# %%
#| export
def _members(a, M:int, unbatched_ndim:int, dtype):
    "`a` as a tensor `[M, ...]`: an unbatched array (ndim `unbatched_ndim`) is shared by all M members."
    t = torch.as_tensor(np.asarray(a), dtype=dtype)
    return t.unsqueeze(0).expand(M, *t.shape) if t.ndim == unbatched_ndim else t

def fit_cbm(model:ConceptBottleneck, X, C, y, *, # inputs `[M, N, d]`, (noisy) concepts `[M, N, K]`, labels `[M, N]` (or unbatched)
            concept_loss:str="bce", lam:float=1.0, # 'bce' or 'cpo'; weight of the concept loss
            beta:float=1.0, z_ref=None, per_concept:bool=False, n_samples:int=1, # CPO options (z_ref: `[M, N, K]` or `[M, 1, K]`)
            epochs:int=30, batch_size:int=128, lr:float=1e-3, seed:int=0, progress:bool=False, desc:str="CBM") -> list[float]:
    "Train the members of `model` jointly on CE(y) + λ·L_concept; returns the mean training loss of each epoch."
    from tqdm.auto import tqdm
    if concept_loss not in ("bce", "cpo"): raise ValueError(f"concept_loss must be 'bce' or 'cpo', got {concept_loss!r}")
    M = model.n_members
    X, C, y = _members(X, M, 2, torch.float32), _members(C, M, 2, torch.float32), _members(y, M, 1, torch.long)
    if not (X.shape[:2] == C.shape[:2] == y.shape[:2] == (M, X.shape[1])): raise ValueError(f"X, C, y must be [M, N, ...] with M = {M}; got {tuple(X.shape)}, {tuple(C.shape)}, {tuple(y.shape)}")
    N = X.shape[1]
    if z_ref is not None: z_ref = torch.as_tensor(z_ref, dtype=torch.float32).expand(M, N, C.shape[-1])
    g = torch.Generator().manual_seed(int(seed))
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    rows, hist = torch.arange(M)[:, None], []
    model.train()
    for _ in tqdm(range(epochs), desc=desc, disable=not progress, leave=False):
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
    model.eval()
    return hist

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
# concept ECE over all (example, concept) pairs with `trustlib.metrics.ece` (binary, top-label, 15 equal-width
# bins), task accuracy. An intervention replaces, for every test example, a random `round(r·K)` of its
# predicted concept probabilities by the true concept values and re-runs the head; at r = 100 % the head
# sees the oracle concepts.

# %%
#| export
def concept_metrics(probs, C, n_bins:int=15) -> dict[str, float]:
    "Concept accuracy, AUC (pooled over concepts) and ECE of concept probabilities `probs` `[N, K]` against 0/1 concepts `C`."
    from sklearn.metrics import roc_auc_score
    from trustlib.metrics import ece
    p, c = np.asarray(probs, dtype=np.float64).ravel(), np.asarray(C).ravel().astype(np.int64)
    auc = float(roc_auc_score(c, p)) if 0 < c.mean() < 1 else float("nan")
    return dict(concept_acc=float(np.mean((p > 0.5) == c)), concept_auc=auc, concept_ece=ece(c, p, n_bins))

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
import torchmetrics.functional.classification as TMF   # cross-checks: AUC, and ECE as 2-class top-label calibration error

# %%
_pp = np.clip(_c * 0.7 + _rng.random(_c.shape) * 0.3, 0, 1)
_cm = concept_metrics(_pp, _c, n_bins=15)
test_close(_cm["concept_auc"], float(TMF.binary_auroc(torch.tensor(_pp.ravel()), torch.tensor(_c.ravel()).long())), eps=1e-6)
_two = torch.tensor(np.stack([1 - _pp.ravel(), _pp.ravel()], 1))
test_close(_cm["concept_ece"], float(TMF.multiclass_calibration_error(_two, torch.tensor(_c.ravel()).long(), num_classes=2, n_bins=15)), eps=1e-5)
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
# loss, and evaluates each on its clean test split. BCE and CPO members with the same index share the data,
# the noisy labels and the initialisation, so their differences are paired.
#
# `run` does, for every training length in `cfg.epochs`: the noise grid on synthetic data (BCE vs CPO),
# the CPO ablation at `ablation_noise` (β values, the prior and frozen-BCE references, the per-concept
# loss), and the systematic-noise variant; then the digits grid at `digits_epochs`.

# %%
#| export
def train_eval(datas:list[CBMData], C_noisy:list[np.ndarray], cfg:Config, epochs:int, seed:int, *,
               concept_loss:str="bce", beta:float=1.0, reference:str="uniform", per_concept:bool=False,
               ref_model:ConceptBottleneck|None=None) -> tuple[list[dict], ConceptBottleneck]:
    "Train one CBM per (data, noisy concepts) pair with one concept loss; returns per-member test metrics and the model."
    M = len(datas)
    X = np.stack([d.X_train for d in datas]); Cn = np.stack(C_noisy); y = np.stack([d.y_train for d in datas])
    K, n_classes = Cn.shape[-1], int(max(d.y_train.max() for d in datas)) + 1
    model = ConceptBottleneck(X.shape[-1], K, n_classes, cfg.hidden, n_members=M, seed=derive_seed(seed, "init"))
    z_ref = None
    if concept_loss == "cpo" and reference == "prior": z_ref = prior_logits(Cn)
    elif concept_loss == "cpo" and reference == "model":
        if ref_model is None: raise ValueError("reference='model' needs ref_model (a BCE-trained ConceptBottleneck on the same data)")
        with torch.no_grad(): z_ref = ref_model(torch.as_tensor(X))[0]
    fit_cbm(model, X, Cn, y, concept_loss=concept_loss, lam=cfg.lam, beta=beta, z_ref=z_ref, per_concept=per_concept,
            epochs=epochs, batch_size=cfg.batch_size, lr=cfg.lr, seed=derive_seed(seed, "train"))
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

# %% [markdown]
# ## The claims and their rules (stated before the run)
#
# Every comparison is **paired**: for a seed, BCE and CPO see the same data, the same noisy labels and the
# same initialisation; we compute the per-seed difference and its mean with a 95 % Student-t interval
# over seeds (`mean_ci`). A graded quantity is `reproduced` when the whole interval clears the first
# threshold, `partially` when it clears the second (never below the no-effect value 0), `inconclusive`
# when the interval straddles the weaker threshold or there is only one seed. "Noisy" means averaged over
# the noise levels p > 0; p_max is the largest level.
#
# Claims judged at each training length in `epochs` are combined by one compound rule: **reproduced** if
# the quantity is reproduced at every length, **partially** if it is reproduced or partially at one length
# at least, **inconclusive** if it is inconclusive at one length at least, otherwise not reproduced.
#
# | # | claim | quantity (synthetic unless stated) | thresholds |
# |---|---|---|---|
# | 1 | concept mislabelling degrades CBM performance (up to 25 %) | relative drop of BCE task accuracy from p = 0 to p_max, at the first training length | > 0.05 reproduced, > 0 partially |
# | 2 | **headline**: CPO outperforms BCE under concept noise | CPO − BCE concept accuracy, noisy, per length | > 0.01, > 0 |
# | 3 | CPO is less sensitive to concept noise than BCE | (BCE drop) − (CPO drop) of concept accuracy from p = 0 to p_max, per length | > 0.01, > 0 |
# | 4 | CPO outperforms BCE without added noise | CPO − BCE concept accuracy at p = 0, per length | > 0.005, > 0 |
# | 5 | CPO also gives better task accuracy under noise | CPO − BCE task accuracy, noisy, per length | > 0.01, > 0 |
# | 6 | CPO-trained CBMs do better under test-time interventions | CPO − BCE task accuracy averaged over intervention levels, noisy, per length | > 0.01, > 0 |
# | 7 | CPO fits the concept posterior: better-calibrated concepts | BCE − CPO concept ECE, noisy, per length | > 0.005, > 0 |
# | 8 | the headline on a second dataset | CPO − BCE concept accuracy on digits (7-segment concepts), noisy | > 0.01, > 0 |
# | 9 | systematic (class-level) mislabelling | shown, not graded (a reviewers' question, not a claim of the paper) | — |
# | 10 | β and the reference policy | shown, not graded (the paper's choices are unknown to us) | — |
# | 11 | CPO beats BCE on CUB, AwA2, CelebA | not testable offline | — |
#
# **The condition the claims need.** Claims 2 and 3 only mean something if concept noise actually hurts a
# BCE-trained CBM in our setup. `run` measures the drop of BCE concept accuracy from p = 0 to p_max at every
# length; unless its interval lies above 0 at every length, claims 2 and 3 are `inconclusive`. A separate
# check below the experiment asserts that the condition holds in the run shown.

# %%
#| export
GAP_RULES = {  # quantity -> (rule, claim)
    "degrade": Rule(">", 0.05, 0.0, what="relative drop of BCE task accuracy from p = 0 to p_max"),
    "concept_noisy": Rule(">", 0.01, 0.0, what="CPO − BCE concept accuracy (noisy)"),
    "sensitivity": Rule(">", 0.01, 0.0, what="BCE − CPO drop of concept accuracy (p = 0 → p_max)"),
    "concept_clean": Rule(">", 0.005, 0.0, what="CPO − BCE concept accuracy (p = 0)"),
    "task_noisy": Rule(">", 0.01, 0.0, what="CPO − BCE task accuracy (noisy)"),
    "intervention_noisy": Rule(">", 0.01, 0.0, what="CPO − BCE intervention accuracy (noisy)"),
    "ece_noisy": Rule(">", 0.005, 0.0, what="BCE − CPO concept ECE (noisy)"),
    "digits_noisy": Rule(">", 0.01, 0.0, what="CPO − BCE concept accuracy on digits (noisy)"),
}

def _cell(runs, block, epochs, method, metric):
    "seed × p table of `metric` for one block / training length / method."
    r = runs[(runs.block == block) & (runs.epochs == epochs) & (runs.method == method)]
    return r.pivot_table(index="seed", columns="p", values=metric, aggfunc="mean")

def paired_gap(runs, block:str, epochs:int, metric:str, ps, a:str="CPO", b:str="BCE") -> np.ndarray:
    "Per-seed mean over noise levels `ps` of metric(a) − metric(b)."
    A, B = _cell(runs, block, epochs, a, metric), _cell(runs, block, epochs, b, metric)
    ps = [p for p in ps if p in A.columns and p in B.columns]
    if not ps: return np.array([])
    return (A[ps] - B[ps]).mean(axis=1).dropna().to_numpy()

def noise_drop(runs, block:str, epochs:int, metric:str, method:str, p0:float, p1:float, relative:bool=False) -> np.ndarray:
    "Per-seed metric(p0) − metric(p1) of `method` (divided by metric(p0) if `relative`)."
    T = _cell(runs, block, epochs, method, metric)
    if p0 not in T.columns or p1 not in T.columns: return np.array([])
    d = T[p0] - T[p1]
    return (d / T[p0] if relative else d).dropna().to_numpy()

def _est(x):
    return mean_ci(x) if len(x) else None

def _fmt(e) -> str: return "not measured" if e is None else str(e)

def claims(cfg:Config, runs) -> tuple[dict, list]:
    "Metrics and verdicts from the table of runs (one row per trained CBM), by the rules stated above."
    levels = sorted(cfg.noise_levels); p0, pmax = levels[0], levels[-1]
    noisy = [p for p in levels if p > 0]
    lengths = list(cfg.epochs)
    metrics, verdicts = {}, []
    def per_length(fn, key):
        out = []
        for L in lengths:
            e = _est(fn(L))
            g = GAP_RULES[key].grade(e)[0] if e is not None else "inconclusive"
            out.append((L, e, g))
            if e is not None: metrics.update({f"synthetic/{key}_e{L}": e.value, f"synthetic/{key}_e{L}_lo": e.lo, f"synthetic/{key}_e{L}_hi": e.hi})
        return out
    def ours(res): return "; ".join(f"{L} epochs: {_fmt(e)} ({g})" for L, e, g in res)
    def combine(res):
        gs = [g for _, _, g in res]
        return dict(reproduced=all(g == "reproduced" for g in gs), partially=any(g in ("reproduced", "partially") for g in gs),
                    inconclusive=any(g == "inconclusive" for g in gs))
    def rule_text(key):
        return (f"per training length: {GAP_RULES[key].text()} (95 % t-interval over seeds); reproduced if reproduced at every length, "
                "partially if reproduced or partially at one length at least, inconclusive if inconclusive at one at least")
    # the condition: noise hurts BCE concept accuracy (interval above 0 at every length)
    cond = []
    for L in lengths:
        e = _est(noise_drop(runs, "grid", L, "concept_acc", "BCE", p0, pmax)) if pmax > p0 else None
        ok = e is not None and ((e.has_interval and e.lo > 0) or (not e.has_interval and e.value > 0))
        cond.append(ok)
        if e is not None: metrics[f"condition/bce_concept_acc_drop_e{L}"] = e.value
    cond_ok = bool(cond) and all(cond)
    metrics["condition/noise_hurts_bce"] = cond_ok
    cond_note = "" if cond_ok else "the setup does not show noise hurting BCE concept accuracy at every length, so the comparison cannot test the claim; "

    # 1. degradation
    e1 = _est(noise_drop(runs, "grid", lengths[0], "task_acc", "BCE", p0, pmax, relative=True)) if pmax > p0 else None
    if e1 is not None: metrics.update({"synthetic/degrade": e1.value})
    v1 = (judge("Concept mislabelling degrades CBM performance (by up to 25 % in some cases)", "up to 25 % (real datasets, abstract)",
                f"BCE task accuracy, relative drop p = {p0:g} → {pmax:g}, {lengths[0]} epochs: {_fmt(e1)}", rule=GAP_RULES["degrade"], value=e1,
                reason="direction testable on synthetic data; the magnitude depends on the data and is not comparable")
          if e1 is not None else judge("Concept mislabelling degrades CBM performance (by up to 25 % in some cases)", "up to 25 %", "not measured",
                                       reproduced=False, inconclusive=True, rule_text="needs two noise levels", reason="only one noise level was run"))
    verdicts.append(v1)
    # 2. headline
    res2 = per_length(lambda L: paired_gap(runs, "grid", L, "concept_acc", noisy), "concept_noisy")
    c2 = combine(res2)
    verdicts.append(judge("CPO outperforms BCE when concept labels are noisy (concept accuracy)", "consistent gains on CUB, AwA2, CelebA with added noise (abstract)",
                          ours(res2), reproduced=c2["reproduced"] and cond_ok, partially=c2["partially"] and cond_ok,
                          inconclusive=c2["inconclusive"] or not cond_ok, rule_text=rule_text("concept_noisy"),
                          reason=cond_note + "synthetic CBM data, symmetric noise p > 0, paired over seeds", headline=True))
    # 3. sensitivity
    res3 = per_length(lambda L: (noise_drop(runs, "grid", L, "concept_acc", "BCE", p0, pmax) - noise_drop(runs, "grid", L, "concept_acc", "CPO", p0, pmax))
                      if pmax > p0 else np.array([]), "sensitivity")
    c3 = combine(res3)
    verdicts.append(judge("CPO is less sensitive to concept noise than BCE", "shown analytically and on three datasets", ours(res3),
                          reproduced=c3["reproduced"] and cond_ok, partially=c3["partially"] and cond_ok, inconclusive=c3["inconclusive"] or not cond_ok,
                          rule_text=rule_text("sensitivity"), reason=cond_note + f"loss of concept accuracy from p = {p0:g} to {pmax:g}, BCE minus CPO"))
    # 4-7. other paired comparisons
    for key, metric, ps, sign, claim, paper in [
            ("concept_clean", "concept_acc", [p0] if p0 == 0 else [], 1, "CPO outperforms BCE without added noise (concept accuracy)", "consistent gains without added noise (abstract)"),
            ("task_noisy", "task_acc", noisy, 1, "CPO also gives better task accuracy under concept noise", "reported on three datasets (not checked)"),
            ("intervention_noisy", "iv_mean", noisy, 1, "Under concept noise, CPO-trained CBMs reach higher accuracy across test-time interventions", "intervention study in the paper (details not checked)"),
            ("ece_noisy", "concept_ece", noisy, -1, "CPO optimises the concept posterior: its concept probabilities are better calibrated than BCE's under noise", "analysis in the paper (posterior; details not checked)")]:
        res = per_length(lambda L, metric=metric, ps=ps, sign=sign: sign * paired_gap(runs, "grid", L, metric, ps), key)
        c = combine(res)
        verdicts.append(judge(claim, paper, ours(res), **c, rule_text=rule_text(key),
                              reason="reconstructed claim (the abstract does not give this number); synthetic data, paired over seeds"))
    verdicts += _claims_beyond_the_grid(cfg, runs, lengths, metrics)
    return metrics, verdicts

def _claims_beyond_the_grid(cfg:Config, runs, lengths, metrics:dict) -> list:
    "Claims 8–11: the digits dataset, systematic noise, the ablation (illustrated) and the paper's datasets (not testable offline)."
    noisy = [p for p in sorted(cfg.noise_levels) if p > 0]
    verdicts = []
    # 8. digits
    if cfg.digits and (runs.block == "digits").any():
        e8 = _est(paired_gap(runs, "digits", cfg.digits_epochs, "concept_acc", noisy))
        if e8 is not None: metrics.update({"digits/concept_noisy": e8.value, "digits/concept_noisy_lo": e8.lo, "digits/concept_noisy_hi": e8.hi})
        verdicts.append(judge("CPO outperforms BCE under concept noise on a second dataset (digits, 7-segment concepts)", "three real datasets",
                              f"{cfg.digits_epochs} epochs: {_fmt(e8)}", rule=GAP_RULES["digits_noisy"], value=e8 if e8 is not None else float("nan"),
                              reason="a small real dataset with concepts determined by the class"))
    # 9. systematic
    if cfg.systematic and (runs.block == "systematic").any():
        txt = "; ".join(f"{L} epochs: CPO − BCE concept accuracy {_fmt(_est(paired_gap(runs, 'systematic', L, 'concept_acc', sorted(runs[runs.block == 'systematic'].p.unique()))))}"
                        for L in lengths)
        verdicts.append(judge("Systematic mislabelling (some concepts wrong for a whole class)", "not studied in the abstract (a reviewers' question)", txt,
                              verdict="illustrated", reason="shown for information: with class-level errors the wrong labels are consistent, so neither loss can tell them from the truth"))
    # 10. ablation
    if cfg.ablation and (runs.block == "ablation").any():
        ab = runs[runs.block == "ablation"].groupby(["epochs", "method"]).concept_acc.mean()
        txt = "; ".join(f"{L} epochs: " + ", ".join(f"{m} {v:.3f}" for m, v in ab[L].items()) for L in lengths if L in ab.index.get_level_values(0))
        verdicts.append(judge("β and the reference policy (uniform, prior, frozen BCE model, per-concept loss)", "the paper's choices are not known to us",
                              f"concept accuracy at p = {cfg.ablation_noise:g}: {txt}", verdict="illustrated", reason="an ablation of our reconstruction, not a claim"))
    # 11. the paper's datasets
    verdicts.append(judge("CPO consistently outperforms BCE on CUB, AwA2 and CelebA with and without added noise", "three real-world datasets (abstract)",
                          "not run", verdict="not_testable_offline", reason="the image datasets and pretrained backbones are not available offline; the full profile asks for them"))
    return verdicts



# %% [markdown]
# The rules on crafted tables with known answers: CPO clearly better under noise at every length →
# reproduced; better at one length and worse at the other → partially; clearly worse → not reproduced; one
# seed → inconclusive; and no noise damage to BCE → the headline is inconclusive whatever the gap.

# %%
import pandas as pd


# %%
def _crafted(gap_by_length, n_seeds=5, bce_drop=0.10, jitter=0.002):
    rng = np.random.default_rng(0); rows = []
    for L, gap in gap_by_length.items():
        for s in range(n_seeds):
            for p in (0.0, 0.2, 0.4):
                base = 0.95 - bce_drop * p / 0.4
                for m, v in (("BCE", base), ("CPO", base + (gap if p > 0 else 0.0))):
                    rows.append(dict(block="grid", epochs=L, method=m, seed=s, p=p, concept_acc=v + jitter * rng.normal(),
                                     task_acc=v, iv_mean=v, concept_ece=0.05))
    return pd.DataFrame(rows)

_cc = Config.from_params("smoke", noise_levels=[0.0, 0.2, 0.4], epochs=[30, 100], digits=False, systematic=False, ablation=False)
def _verdict(runs, i=1): return claims(_cc, runs)[1][i].verdict
test_eq(_verdict(_crafted({30: 0.05, 100: 0.05})), "reproduced")
test_eq(_verdict(_crafted({30: 0.05, 100: -0.05})), "partially")
test_eq(_verdict(_crafted({30: -0.05, 100: -0.05})), "not_reproduced")
test_eq(_verdict(_crafted({30: 0.05, 100: 0.05}, n_seeds=1)), "inconclusive")
test_eq(_verdict(_crafted({30: 0.05, 100: 0.05}, bce_drop=-0.05)), "inconclusive")     # the condition fails
test_eq(_verdict(_crafted({30: 0.0005, 100: 0.0005}, jitter=0.01)), "inconclusive")   # within noise
test_eq(_verdict(_crafted({30: 0.05, 100: 0.05}), 0), "reproduced")                     # BCE task accuracy drops by > 5 %
test_eq(_verdict(_crafted({30: 0.05, 100: 0.05}, bce_drop=0.0), 0), "not_reproduced")   # no drop at all
_vs = claims(_cc, _crafted({30: 0.05, 100: 0.05}))[1]
test_eq(sum(v.headline for v in _vs), 1)
test_eq(_vs[2].verdict, "reproduced")       # CPO loses less accuracy between p = 0 and 0.4 (0.05 less)
test_eq(claims(_cc, _crafted({30: 0.05, 100: 0.05}, jitter=0.0))[1][3].verdict, "not_reproduced")   # no gap at p = 0
test_eq(_vs[3].verdict, "inconclusive")     # a zero gap measured with noise: the interval straddles 0


# %% [markdown]
# ## `run`: the whole experiment

# %%
#| export
def _check_real(cfg:Config):
    "The paper's datasets are needed for `real_datasets`; they are not available offline."
    if not cfg.real_datasets: return
    from trustlib.data import data_dir
    missing = [n for n in cfg.real_datasets if not (data_dir() / n).exists()]
    if missing:
        raise ResourceUnavailable(f"the full profile needs local copies of {missing} under {data_dir()} (CUB-200-2011, AwA2, CelebA with "
                                  "concept annotations) and a GPU for a pretrained image backbone; run the cpu profile for the offline reproduction")
    raise ResourceUnavailable("the image-backbone pipeline for CUB/AwA2/CelebA is not part of this offline reproduction; run the cpu profile")

def run(cfg:Config, progress:bool=True) -> Result:
    "Run the CPO reproduction described by `cfg`; returns metrics, tables, figures and verdicts."
    import pandas as pd
    from tqdm.auto import tqdm
    _check_real(cfg)
    levels, S = list(cfg.noise_levels), cfg.n_seeds
    n_tasks = len(cfg.epochs) * (2 + ((5 + len(cfg.ablation_betas)) if cfg.ablation else 0) + (2 if cfg.systematic else 0)) + (2 if cfg.digits else 0)
    bar = tqdm(total=n_tasks, desc="CBM trainings", disable=not progress)
    rows = []
    def add(block, members, res, method, epochs):
        for (s, p), r in zip(members, res): rows.append(dict(block=block, epochs=epochs, method=method, seed=s, p=p, **r))
        bar.update(1)
    def pair(block, datas, noisy, members, L, seed, variants):
        "BCE first (it is also the frozen reference of 'model'), then each CPO variant."
        res, bce = train_eval(datas, noisy, cfg, L, seed, concept_loss="bce"); add(block, members, res, "BCE", L)
        for name, kw in variants:
            res, _ = train_eval(datas, noisy, cfg, L, seed, concept_loss="cpo", ref_model=bce, **kw); add(block, members, res, name, L)
    with torch_threads(cfg.n_threads):
        syn = [synthetic_cbm(cfg.n_train, cfg.n_test, cfg.n_concepts, cfg.n_classes, cfg.n_features, cfg.ambiguous_frac, cfg.x_noise,
                             seed=derive_seed(cfg.seed, "synthetic", s)) for s in range(S)]
        noisy = {(s, p): flip_concepts(syn[s].C_train, p, np.random.default_rng(derive_seed(cfg.seed, "noise", s, int(round(p * 1000)))))[0]
                 for s in range(S) for p in set(levels) | {cfg.ablation_noise}}
        main = [("CPO", dict(beta=cfg.beta, reference=cfg.reference))]
        grid = [(s, p) for s in range(S) for p in levels]
        for L in cfg.epochs:
            pair("grid", [syn[s] for s, _ in grid], [noisy[m] for m in grid], grid, L, derive_seed(cfg.seed, "grid", L), main)
            if cfg.ablation:
                ab = [(s, cfg.ablation_noise) for s in range(S)]
                variants = main + [(f"CPO β={b:g}", dict(beta=b)) for b in cfg.ablation_betas] + [
                    ("CPO prior ref.", dict(beta=cfg.beta, reference="prior")), ("CPO BCE-model ref.", dict(beta=cfg.beta, reference="model")),
                    ("CPO per-concept", dict(beta=cfg.beta, per_concept=True))]
                pair("ablation", [syn[s] for s, _ in ab], [noisy[m] for m in ab], ab, L, derive_seed(cfg.seed, "ablation", L), variants)
            if cfg.systematic:
                sysn = [systematic_flips(syn[s].C_train, syn[s].y_train, cfg.systematic_per_class, np.random.default_rng(derive_seed(cfg.seed, "systematic", s)))
                        for s in range(S)]
                frac = cfg.systematic_per_class / cfg.n_concepts
                pair("systematic", syn, [n for n, _, _ in sysn], [(s, frac) for s in range(S)], L, derive_seed(cfg.seed, "systematic-train", L), main)
        if cfg.digits:
            dig = [digits_cbm(seed=derive_seed(cfg.seed, "digits", s)) for s in range(S)]
            dn = {(s, p): flip_concepts(dig[s].C_train, p, np.random.default_rng(derive_seed(cfg.seed, "digits-noise", s, int(round(p * 1000)))))[0]
                  for s in range(S) for p in levels}
            pair("digits", [dig[s] for s, _ in grid], [dn[m] for m in grid], grid, cfg.digits_epochs, derive_seed(cfg.seed, "digits-train"), main)
    bar.close()
    runs = pd.DataFrame(rows)
    metrics, verdicts = claims(cfg, runs)
    cols = ["concept_acc", "concept_auc", "concept_ece", "task_acc", "iv_mean", "fit_noisy_labels"]
    summary = runs.groupby(["block", "epochs", "method", "p"], sort=False)[cols].agg(["mean", "std"]).round(4)
    tables = dict(runs=runs, summary=summary)
    if cfg.ablation: tables["ablation"] = runs[runs.block == "ablation"].groupby(["epochs", "method"], sort=False)[cols].mean().round(4)
    if cfg.systematic: tables["systematic"] = runs[runs.block == "systematic"].groupby(["epochs", "method"], sort=False)[cols].mean().round(4)
    return Result(paper="cpo", config=cfg.to_dict(), metrics=metrics, verdicts=verdicts, tables=tables, figures=make_figures(cfg, runs))

def make_figures(cfg:Config, runs) -> dict:
    "Noise curves (concept accuracy, task accuracy, concept ECE vs p) per training length, and intervention curves at p_max."
    import matplotlib.pyplot as plt, seaborn as sns
    figs = {}
    g = runs[runs.block == "grid"]
    L = list(cfg.epochs)
    fig, axes = plt.subplots(3, len(L), figsize=(4.2 * len(L), 9), squeeze=False)
    for j, e in enumerate(L):
        for i, (m, lab) in enumerate([("concept_acc", "concept accuracy (clean test)"), ("task_acc", "task accuracy"), ("concept_ece", "concept ECE")]):
            ax = axes[i, j]
            sns.lineplot(data=g[g.epochs == e], x="p", y=m, hue="method", style="method", markers=True, errorbar="sd", ax=ax)
            ax.set_xlabel("fraction of training concept labels flipped, p"); ax.set_ylabel(lab)
            if i == 0: ax.set_title(f"synthetic CBM data, {e} epochs")
    fig.tight_layout(); figs["noise_curves"] = fig
    pmax = max(cfg.noise_levels)
    panels = [("grid", e, f"synthetic, p = {pmax:g}, {e} epochs") for e in L] + ([("digits", cfg.digits_epochs, f"digits, p = {pmax:g}, {cfg.digits_epochs} epochs")] if cfg.digits else [])
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), squeeze=False)
    for ax, (blk, e, title) in zip(axes[0], panels):
        r = runs[(runs.block == blk) & (runs.epochs == e) & (runs.p == pmax)]
        long = r.melt(id_vars=["method", "seed"], value_vars=[f"iv_{j}" for j in range(len(cfg.intervention_levels))], var_name="j", value_name="acc")
        long["r"] = [100 * cfg.intervention_levels[int(v.split("_")[1])] for v in long.j]
        sns.lineplot(data=long, x="r", y="acc", hue="method", style="method", markers=True, errorbar="sd", ax=ax)
        ax.set_xlabel("concepts replaced by true values at test time (%)"); ax.set_ylabel("task accuracy"); ax.set_title(title)
    fig.tight_layout(); figs["interventions"] = fig
    if cfg.digits:
        fig, ax = plt.subplots(figsize=(4.5, 3.6))
        sns.lineplot(data=runs[runs.block == "digits"], x="p", y="concept_acc", hue="method", style="method", markers=True, errorbar="sd", ax=ax)
        ax.set_xlabel("fraction of training concept labels flipped, p"); ax.set_ylabel("concept accuracy (clean test)"); ax.set_title("digits, 7-segment concepts")
        fig.tight_layout(); figs["digits"] = fig
    plt.close("all")
    return figs


# %% [markdown]
# ## The experiment
#
# One call runs everything for the chosen profile (`smoke` by default here; the committed page shows a
# `cpu` run: 5 seeds, p ∈ {0, 0.1, 0.2, 0.3, 0.4}, 30 and 100 epochs, 3,000 synthetic training examples).

# %%
from trustlib.results import run_experiment

# %%
result = run_experiment(run, cfg)

# %% [markdown]
# The comparison needs one condition: concept noise must hurt a BCE-trained CBM, so that a loss robust to noise
# has something to fix. A BCE model only suffers from flipped labels once it has trained long enough to fit
# them, so the condition is a property of the training length. A run that judges the claims (3 or more seeds)
# must show it at every length; the one-seed, 8-epoch `smoke` run only reports the drop, and its claims are
# marked accordingly. The published `cpu` run shows the condition at 30 and 100 epochs.

# %%
drops = {k: round(v, 4) for k, v in result.metrics.items() if k.startswith("condition/bce")}
if cfg.n_seeds >= 3:
    assert result.metrics["condition/noise_hurts_bce"], f"concept noise does not hurt BCE here ({drops}): the comparison cannot test the claims"
else:
    print(f"{cfg.n_seeds} seed(s): condition reported, not required; noise hurts BCE at every length: {result.metrics['condition/noise_hurts_bce']}")
drops

# %% [markdown]
# Mean (and standard deviation over seeds) of every metric, by block, training length, loss and noise level.
# `fit_noisy_labels` is the agreement of the model's training-set concepts with its own noisy training
# labels: above 1 − p it has memorised flipped labels.

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
# systematic-noise variant:

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
#   backbones) is not reproduced offline, and magnitudes such as the "25 %" are not comparable.
# - **A reconstruction.** One sampled concept vector per example, no gradient through the sample, both
#   losses written with the same concept log-likelihood, one λ. The authors' β, λ, number of samples,
#   reference policy or normalisation may differ, and the ablation table shows that such choices move
#   concept accuracy by about as much as the BCE–CPO gap itself.
# - **Two training lengths, because the derivation predicts a regime effect.** CPO's steps shrink by the
#   factor 1 − p on confident concepts: it learns more slowly at first and resists memorising flipped
#   labels later (compare `fit_noisy_labels` in the summary with 1 − p). A verdict of `partially` on the
#   headline means CPO won at one length and not at the other; the per-length grades are in `ours`.
# - **Calibration.** The fixed-point derivation above says CPO's concept probabilities sit closer to ½
#   than the label frequency, so lower concept ECE for CPO is not what our reconstruction predicts; the
#   calibration row tests the posterior claim in that light.
# - **Systematic noise** is shown, not graded: when the same concepts are wrong for every example of a
#   class, the wrong labels are consistent with the inputs and neither loss has a signal to undo them.
