# %% [markdown]
# # Sum-of-Parts: Self-Attributing Neural Networks with End-to-End Learning of Feature Groups
#
# > Sum-of-Parts (SOP): a self-attributing network that predicts as a sum over learned feature groups; the per-feature error lower bound as exact linear programs, and SOP against post-hoc and BagNet-like baselines on digits pasted onto noise.

# %% [markdown]
# You, Qu, Gatti, Jain and Wong (ICML 2025) ask why *self-attributing* neural networks (SANNs), whose
# prediction is by construction a sum of attributions, tend to lose accuracy. They prove that any
# additive **per-feature** attribution of simple functions (a monomial, a two-term polynomial) has
# insertion or deletion errors that cannot be made small and grow with the dimension, whereas an
# attribution to **groups** of features can be exact. They then build **Sum-of-Parts (SOP)**, which turns
# any differentiable model into a group-based SANN: a group generator proposes binary feature groups, the
# frozen backbone runs on every masked input, and a sparse group selector weighs the groups' logits, so
# that the prediction *is* the sum of the groups' contributions. The groups are learned end to end from
# the task labels only. On ImageNet-S, CosmoGrid and MultiRC, SOP is the best SANN and its groups are the
# purest.
#
# Paper: [arXiv 2310.16316](https://arxiv.org/abs/2310.16316) (PMLR 267) · official code:
# [BrachioLab/sop](https://github.com/BrachioLab/sop), modules in
# [BrachioLab/exlib](https://github.com/BrachioLab/exlib) (we reimplement; no code is copied).
#
# ::: {.callout-note}
# ## What we reproduce / what we cannot
# - **The theorem, exactly.** The smallest total deletion error of any per-feature attribution of the
#   monomial ∏xᵢ, and the smallest total insertion error of a two-term polynomial, are linear programs over
#   all 2^d subsets; we solve them with `scipy.optimize.linprog` for d = 2 … `d_max` and show a group
#   attribution with zero error on every subset. The error definitions are our reconstruction of the
#   paper's; the paper's exact binomial (the sizes of its three index sets) is not known to us, so we solve
#   two splits and report both.
# - **SOP, at toy scale.** scikit-learn's 8×8 digits pasted at random positions onto 16×16 noise
#   canvases (the digit's box is a known ground-truth segment), a small CNN backbone trained from scratch
#   and then frozen, 2×2-pixel patches, top-τ binarised attention groups, a sparsemax group selector with
#   the backbone's class weights as queries. Compared with post-hoc attributions turned into SANNs
#   (top-τ patches by captum's integrated gradients, occlusion and KernelSHAP, then the backbone on those
#   patches) and a BagNet-like per-patch classifier with summed logits, over `n_seeds` seeds: accuracy,
#   fidelity, insertion/deletion, number of active groups and patches, purity and IoU.
# - **Groups that are groups.** As in the official code, the group generator reads the backbone's own patch
#   features (a trainable copy of its first block), and, as a ViT's patch tokens do, these carry their
#   position (a fixed 2-d sine-cosine code). 20 groups per image, as the paper uses. Without the position,
#   every query converges on the same salient patches — about one distinct mask per image — and SOP is one
#   learned saliency mask; the page reports the number of distinct groups and their overlap, and grades
#   purity only when at least half of an image's groups are distinct.
# - **Departures.** The backbone is trained with random patch dropping, so that it can read masked inputs
#   (an ImageNet ViT copes with masking; a tiny CNN trained on full images does not); the learning rate is
#   far higher than the paper's 5e-6 because everything is small and trained from scratch; insertion and
#   deletion rank *patches* by each method's pixel map and are scored by the frozen backbone, for every
#   method alike. The generator's score scale (10), the weight of the position code (3) and the number of
#   SOP epochs (10) were chosen on development seeds (base seed 100, not the reported ones): with score
#   scale 1 the initial attention is diffuse, the group scale c = Σtop − Σrest starts near −0.6 and flips the
#   sign of the group logits; with a position weight of 1 the groups collapsed again (2 distinct masks of 10).
# - **ImageNet-S in the `full` profile.** `trustlib run sop --profile full` trains SOP around a frozen pretrained
#   ViT (`google/vit-base-patch16-224`) on ImageNet-S50 and grades the same claims on its human segmentations
#   (section *The `full` profile* below); it needs ImageNet-S locally and a GPU, and no such run is shown here.
# - **Not testable offline:** CosmoGrid and MultiRC (out of scope of every profile); the page's numbers come from a
#   toy task and are not comparable with the paper's. The text variant
#   (frozen MiniLM on SST-2) does not fit the CPU budget: every training sentence runs through the encoder
#   once per group (20 × 6 layers per sentence and epoch), several CPU minutes per epoch for a few thousand
#   sentences, and SST-2 has no token-level ground truth to measure purity against.
# :::

# %%
#| default_exp interp.sop

# %%
#| export
from __future__ import annotations
import itertools, math
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
# Defaults are the `smoke` profile; `trustlib run sop --profile cpu` (or papermill with `-p profile cpu`)
# runs the published configuration. `None` means "the profile's value". Every field of `Config` (below)
# has one line here.

# %%
from typing import Optional

# %% tags=["parameters"]
profile: str = "smoke"  # smoke (CI, < 60 s) | cpu (published results, minutes) | full (paper scale)
seed: Optional[int] = None  # base random seed; every random choice derives from it
n_seeds: Optional[int] = None  # independent repetitions (data split, canvases, backbone, SOP and baselines)
d_max: Optional[int] = None  # largest dimension d of the theorem's linear programs (d from 2 to d_max)
n_train: Optional[int] = None  # training images (digits on noise canvases)
n_test: Optional[int] = None  # test images (all metrics)
canvas: Optional[int] = None  # side of the square noise canvas in pixels (the 8×8 digit is pasted inside)
patch: Optional[int] = None  # side of a patch in pixels (the unit of groups and of post-hoc masks)
noise: Optional[float] = None  # amplitude of the uniform background noise (digit pixels lie in 0..1)
tau: Optional[float] = None  # share of patches kept in each group (top-τ binarisation)
num_masks_max: Optional[int] = None  # query patches that may each propose a group
num_masks_sample: Optional[int] = None  # groups per image (random queries in training, evenly spaced at inference)
projection: Optional[str] = None  # the group generator's patch features: backbone (a trainable copy of the backbone's first block) or conv (a fresh patch convolution)
d_proj: Optional[int] = None  # width of the patch convolution of the group generator (projection conv)
pos_scale: Optional[float] = None  # weight of the 2-d position code added to the generator's patch features (times their RMS; 0 means none)
gen_scale: Optional[float] = None  # scale of the group generator's attention scores
sel_scale: Optional[float] = None  # scale of the group selector's attention scores
blur: Optional[int] = None  # Gaussian blur kernel on the patch grid of the generator's scores (0 means none)
epochs: Optional[int] = None  # SOP training epochs
lr: Optional[float] = None  # AdamW learning rate of SOP (generator, selector, projection)
weight_decay: Optional[float] = None  # AdamW weight decay of SOP
batch_size: Optional[int] = None  # SOP mini-batch size
backbone_width: Optional[int] = None  # channels of the backbone CNN's first block
backbone_epochs: Optional[int] = None  # backbone training epochs (then frozen)
bagnet_epochs: Optional[int] = None  # training epochs of the BagNet-like baseline
ig_steps: Optional[int] = None  # integration steps of integrated gradients
shap_samples: Optional[int] = None  # coalitions sampled by KernelSHAP per image
curve_steps: Optional[int] = None  # steps of the insertion and deletion curves
real_data: Optional[bool] = None  # the paper's ImageNet-S experiment with a pretrained ViT instead of the digits canvases (full profile; CosmoGrid and MultiRC are out of scope)
n_threads: Optional[int] = None  # torch CPU threads
vit: Optional[str] = None  # the frozen pretrained ViT of the ImageNet-S experiment: a Hugging Face id in the local cache, or a local folder
device: Optional[str] = None  # device of the ImageNet-S experiment: auto (CUDA when present), cuda or cpu
proj_layers: Optional[int] = None  # ViT blocks in the group generator's trainable projection (ImageNet-S; the paper reads the second-to-last layer: 11 of 12)
imagenet_train_per_class: Optional[int] = None  # ImageNet-S50 training images per class that SOP is trained on (0 means all)
imagenet_test_per_class: Optional[int] = None  # ImageNet-S50 validation images per class, with their segmentation, for every metric (0 means all)
vit_batch: Optional[int] = None  # images per ViT forward pass when evaluating (ImageNet-S; memory)


# %% [markdown] tags=["injected-parameters"]
# **This page shows a run with** `profile = "cpu"` (run `cpu-bf21a9e8fb`, commit `22b511b`, 173 s, 2026-12-05). Running the notebook yourself uses the parameters cell above as written (the fast `smoke` profile unless you change it); `trustlib run sop --profile cpu` repeats the run shown here.

# %%
#| export
@dataclass
class Config(BaseConfig):
    "Configuration of the Sum-of-Parts reproduction (linear programs and SOP on digits pasted onto noise)."
    n_seeds: int = param(1, "independent repetitions (data split, canvases, backbone, SOP and baselines)", ge=1, max=50)
    d_max: int = param(6, "largest dimension d of the theorem's linear programs (d from 2 to d_max)", ge=3, le=16, max=12)
    n_train: int = param(300, "training images (digits on noise canvases)", ge=20, le=1400)
    n_test: int = param(80, "test images (all metrics)", ge=10, le=397)
    canvas: int = param(16, "side of the square noise canvas in pixels (the 8×8 digit is pasted inside)", ge=8, le=128)
    patch: int = param(2, "side of a patch in pixels (the unit of groups and of post-hoc masks)", ge=1, le=32)
    noise: float = param(0.3, "amplitude of the uniform background noise (digit pixels lie in 0..1)", ge=0, le=1)
    tau: float = param(0.2, "share of patches kept in each group (top-τ binarisation)", gt=0, lt=1)
    num_masks_max: int = param(64, "query patches that may each propose a group", ge=1, le=16384)
    num_masks_sample: int = param(4, "groups per image (random queries in training, evenly spaced at inference)", ge=1, le=1024)
    projection: str = param("backbone", "the group generator's patch features: backbone (a trainable copy of the backbone's first block) or conv (a fresh patch convolution)",
                            choices=("backbone", "conv"))
    d_proj: int = param(32, "width of the patch convolution of the group generator (projection conv)", ge=4, le=4096)
    pos_scale: float = param(3.0, "weight of the 2-d position code added to the generator's patch features (times their RMS; 0 means none)", ge=0, le=100)
    gen_scale: float = param(10.0, "scale of the group generator's attention scores", gt=0, le=1000)
    sel_scale: float = param(1.0, "scale of the group selector's attention scores", gt=0, le=1000)
    blur: int = param(3, "Gaussian blur kernel on the patch grid of the generator's scores (0 means none)", choices=(0, 3, 5))
    epochs: int = param(1, "SOP training epochs", ge=1, max=500)
    lr: float = param(2e-3, "AdamW learning rate of SOP (generator, selector, projection)", gt=0, le=1)
    weight_decay: float = param(0.01, "AdamW weight decay of SOP", ge=0, le=10)
    batch_size: int = param(32, "SOP mini-batch size", ge=1, le=4096)
    backbone_width: int = param(16, "channels of the backbone CNN's first block", ge=2, le=256)
    backbone_epochs: int = param(4, "backbone training epochs (then frozen)", ge=1, max=500)
    bagnet_epochs: int = param(4, "training epochs of the BagNet-like baseline", ge=1, max=500)
    ig_steps: int = param(8, "integration steps of integrated gradients", ge=2, le=1000)
    shap_samples: int = param(32, "coalitions sampled by KernelSHAP per image", ge=8, max=5000)
    curve_steps: int = param(4, "steps of the insertion and deletion curves", ge=2, le=256)
    real_data: bool = param(False, "the paper's ImageNet-S experiment with a pretrained ViT instead of the digits canvases (full profile; CosmoGrid and MultiRC are out of scope)")
    n_threads: Optional[int] = param(1, "torch CPU threads", ge=1, le=1024)
    vit: str = param("google/vit-base-patch16-224", "the frozen pretrained ViT of the ImageNet-S experiment: a Hugging Face id in the local cache, or a local folder")
    device: str = param("auto", "device of the ImageNet-S experiment: auto (CUDA when present), cuda or cpu", choices=("auto", "cuda", "cpu"))
    proj_layers: int = param(11, "ViT blocks in the group generator's trainable projection (ImageNet-S; the paper reads the second-to-last layer: 11 of 12)", ge=1, le=64)
    imagenet_train_per_class: int = param(100, "ImageNet-S50 training images per class that SOP is trained on (0 means all)", ge=0, le=1300)
    imagenet_test_per_class: int = param(0, "ImageNet-S50 validation images per class, with their segmentation, for every metric (0 means all)", ge=0, le=100)
    vit_batch: int = param(128, "images per ViT forward pass when evaluating (ImageNet-S; memory)", ge=1, le=4096)
    PROFILE_DEFAULTS = {
        "cpu": dict(n_seeds=6, d_max=10, n_train=1200, n_test=300, num_masks_sample=20, epochs=10, backbone_epochs=20,
                    bagnet_epochs=20, ig_steps=16, shap_samples=96, curve_steps=8),
        # the paper's ImageNet-S experiment (ImageNet-S50, google/vit-base-patch16-224): 200 query patches, 20 groups, τ 0.2, blur 3,
        # AdamW, weight decay 0.01, batch 16 as the authors' config; 10 epochs over 100 images per class (the paper: 20 over all) at
        # lr 1e-5 (the paper's 5e-6 is for its 20 epochs over 64k images); no position code (a ViT's patch tokens carry their position)
        "full": dict(n_seeds=3, d_max=10, num_masks_max=200, num_masks_sample=20, epochs=10, lr=1e-5, batch_size=16, gen_scale=1.0,
                     sel_scale=1.0, pos_scale=0.0, ig_steps=16, shap_samples=96, curve_steps=8, real_data=True),
    }
    @property
    def n_patches(self) -> int: return (self.canvas // self.patch) ** 2
    @property
    def n_keep(self) -> int: return n_keep(self.n_patches, self.tau)
    def validate(self):
        check_hub_name("vit", self.vit)
        P = self.n_patches if not self.real_data else (224 // 16) ** 2      # the ImageNet-S experiment: a ViT-B/16 at 224 px (SOP checks its own ViT again)
        if not self.real_data and self.canvas % self.patch: raise ConfigError(f"parameter 'patch': {self.patch} does not divide canvas {self.canvas}")
        k = int(math.floor(P * self.tau))
        if not 1 <= k < P:
            raise ConfigError(f"parameter 'tau': {self.tau:g} keeps {k} of {P} patches per group; choose tau so that 1 <= floor(tau·P) < P")
        if self.num_masks_sample > min(self.num_masks_max, P):
            raise ConfigError(f"parameter 'num_masks_sample': {self.num_masks_sample} groups exceed the {min(self.num_masks_max, P)} "
                              "available queries (min of num_masks_max and the number of patches)")
        if self.real_data:                            # the ImageNet-S experiment runs on a GPU: only the CPU-side linear programs are checked here
            check_cost(self, {"CPU time": (2.0 ** self.d_max * self.d_max ** 2 * 200 / OPS_PER_S, 3600.0, "s")}, ("d_max",))
            return
        name, d = ("backbone_width", self.backbone_width) if self.projection == "backbone" else ("d_proj", self.d_proj)
        if self.pos_scale and d % 4:
            raise ConfigError(f"parameter 'pos_scale': the position code needs the generator's feature width ({name} = {d}) divisible by 4")
        sec, gib = estimate_cost(self)
        check_cost(self, {"CPU time": (sec, 3600.0, "s"), "peak memory": (gib, 8.0, "GiB")},
                   ("n_seeds", "n_train", "n_test", "canvas", "num_masks_sample", "epochs", "backbone_width", "backbone_epochs",
                    "bagnet_epochs", "ig_steps", "shap_samples", "curve_steps", "d_max"))

OPS_PER_S = 1e10   # CPU throughput the estimate assumes: 10 GFLOP/s, conservative (the 3-seed cpu run took 78 CPU-s on 2 cores, 1/33 of an estimate at 1 GFLOP/s)

def estimate_cost(cfg) -> tuple[float, float]:
    "A rough estimate of the whole run's CPU seconds and peak memory (GiB), from every size in `cfg`."
    C, w = cfg.canvas, cfg.backbone_width
    cnn = 2 * 9 * (C * C * w + (C // 2) ** 2 * w * 2 * w + (C // 4) ** 2 * 2 * w * 4 * w)          # FLOPs of one backbone forward
    P = (C // cfg.patch) ** 2
    per_seed = cnn * (3 * cfg.n_train * 3 * cfg.backbone_epochs                                     # backbone, with two patch-dropped copies
                      + cfg.epochs * cfg.n_train * cfg.num_masks_sample * 1.5                          # SOP (the backbone on every group)
                      + cfg.n_test * (3 * cfg.ig_steps + P + cfg.shap_samples + 10 * (cfg.curve_steps + 1) + cfg.num_masks_sample)) \
               + 2 * 9 * C * C * 32 * 3 * cfg.n_train * cfg.bagnet_epochs
    lp = 2.0 ** cfg.d_max * cfg.d_max ** 2 * 200
    sec = (cfg.n_seeds * per_seed + lp) / OPS_PER_S
    gib = 4 * (cfg.batch_size * cfg.num_masks_sample * C * C * w * 4 + 3 * cfg.n_train * C * C + 2.0 ** cfg.d_max * 2 ** cfg.d_max) / 2 ** 30
    return float(sec), float(gib)

def n_keep(n_patches:int, tau:float) -> int:
    "Patches kept per group: floor(τ·P), as in the authors' code; ValueError unless 1 <= it < P."
    if not 0 < tau < 1: raise ValueError(f"tau must lie in (0, 1), got {tau!r}")
    k = int(math.floor(n_patches * tau + 1e-9))
    if not 1 <= k < n_patches: raise ValueError(f"tau = {tau:g} keeps {k} of {n_patches} patches; need 1 <= floor(tau·P) < P")
    return k


# %%
cfg = Config.from_namespace(globals())
cfg

# %%
test_eq(Config.unbounded_fields(), [])
test_eq((cfg.n_patches, cfg.n_keep), (64, 12))
test_fail(lambda: Config.from_params("smoke", tau=0.01), contains="'tau'")
test_fail(lambda: Config.from_params("smoke", tau=1.0), contains="'tau'")
test_fail(lambda: Config.from_params("smoke", num_masks_sample=70), contains="'num_masks_sample'")
test_fail(lambda: Config.from_params("smoke", num_masks_max=4, num_masks_sample=5), contains="'num_masks_sample'")
test_fail(lambda: Config.from_params("smoke", patch=3), contains="'patch'")
test_fail(lambda: Config.from_params("smoke", epochs=10**4), contains="exceeds its limit")
test_fail(lambda: n_keep(10, 0.05), contains="keeps 0")
test_eq(Config.from_params("cpu").n_seeds, 6)
test_fail(lambda: Config.from_params("smoke", backbone_width=6), contains="'pos_scale'")
test_fail(lambda: Config.from_params("cpu", n_seeds=50, backbone_epochs=500, epochs=500, canvas=64), contains="the whole configuration is too large")
{p: tuple(round(x, 2) for x in estimate_cost(Config.from_params(p))) for p in ("smoke", "cpu")}   # (CPU seconds, GiB)

# %% [markdown]
# ## Sparsemax
#
# The group selector's weights are a **sparsemax** (Martins & Astudillo, 2016): the Euclidean projection of
# the scores onto the probability simplex, $\mathrm{sparsemax}(z) = \arg\min_{p\in\Delta}\|p - z\|^2$.
# With the scores sorted, $z_{(1)} \ge \dots \ge z_{(K)}$, the support size is the largest $k$ with
# $1 + k z_{(k)} > \sum_{i\le k} z_{(i)}$, the threshold is $\tau = (\sum_{i\le k} z_{(i)} - 1)/k$, and
# $p_i = \max(z_i - \tau, 0)$: weights sum to 1 and low scores get exactly 0. Autograd through the sort and
# the threshold gives the sparsemax Jacobian.

# %%
#| export
import torch
import torch.nn as nn
import torch.nn.functional as F

def sparsemax(z:torch.Tensor, dim:int=-1) -> torch.Tensor:
    "Sparsemax of `z` along `dim`: the projection onto the simplex (sums to 1, exact zeros)."
    z = z.transpose(dim, -1)
    zs = torch.sort(z, dim=-1, descending=True).values
    k = torch.arange(1, z.shape[-1] + 1, dtype=z.dtype, device=z.device)
    cs = zs.cumsum(-1)
    k_z = ((1 + k * zs) > cs).sum(-1, keepdim=True)           # support size (>= 1)
    tau = (cs.gather(-1, k_z - 1) - 1) / k_z.to(z.dtype)
    return torch.clamp(z - tau, min=0).transpose(dim, -1)

def simplex_projection(v:np.ndarray) -> np.ndarray:
    "Reference: Euclidean projection of a vector onto the simplex by bisection on the threshold (numpy, float64)."
    v = np.asarray(v, dtype=np.float64); lo, hi = v.min() - 1.0, v.max()
    for _ in range(200):
        mid = (lo + hi) / 2
        if np.maximum(v - mid, 0).sum() > 1: lo = mid
        else: hi = mid
    return np.maximum(v - (lo + hi) / 2, 0)


# %% [markdown]
# Hand cases: $(1, 0) \mapsto (1, 0)$ (only one coordinate in the support, τ = 0); $(0.5, 0.3) \mapsto
# (0.6, 0.4)$ (τ = −0.1); equal scores give the uniform distribution; a large gap gives a one-hot vector;
# and random inputs match the bisection reference.

# %%
test_close(sparsemax(torch.tensor([1.0, 0.0])), torch.tensor([1.0, 0.0]), eps=1e-7)
test_close(sparsemax(torch.tensor([0.5, 0.3])), torch.tensor([0.6, 0.4]), eps=1e-6)
test_close(sparsemax(torch.zeros(3)), torch.full((3,), 1 / 3), eps=1e-7)
test_close(sparsemax(torch.tensor([3.0, 0.5, -1.0])), torch.tensor([1.0, 0.0, 0.0]), eps=1e-7)
test_close(sparsemax(torch.tensor([0.9, 0.5, 0.1])), torch.tensor([0.7, 0.3, 0.0]), eps=1e-6)
_z = torch.randn(50, 7, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 2
_p = sparsemax(_z)
test_close(_p.sum(-1), torch.ones(50, dtype=torch.float64), eps=1e-12)
assert (_p >= 0).all() and (_p == 0).any()
test_close(_p.numpy(), np.stack([simplex_projection(r) for r in _z.numpy()]), eps=1e-9)
test_close(sparsemax(_z.T, dim=0).T, _p, eps=1e-12)
_zg = torch.tensor([0.9, 0.5, 0.1], requires_grad=True); sparsemax(_zg)[0].backward()
test_close(_zg.grad, torch.tensor([0.5, -0.5, 0.0]), eps=1e-6)   # Jacobian row of the support: δ_ij − 1/|S|


# %% [markdown]
# ## The theorem: per-feature attributions cannot be exact, groups can
#
# Features are binary and the explained input is $x = \mathbf 1$. Keeping the features in $S$ and zeroing
# the others gives $x_S$. For an additive per-feature attribution $\alpha \in \mathbb R^d$ with
# $\alpha(S) = \sum_{i\in S}\alpha_i$:
# $$\mathrm{InsErr}(\alpha, S) = |f(x_S) - \alpha(S)|, \qquad \mathrm{DelErr}(\alpha, S) = |f(x) - f(x_{[d]\setminus S}) - \alpha(S)|.$$
# For a group attribution (groups $g_j$ with scores $c_j$), insertion counts the groups inside $S$,
# $\sum_{j: g_j\subseteq S} c_j$, and deletion the groups that $S$ touches, $\sum_{j: g_j\cap S\ne\emptyset} c_j$.
#
# - **Monomial, deletion.** For $f = \prod_i x_i$, removing any nonempty $S$ drops $f$ from 1 to 0, so the
#   total error is $\sum_{S\ne\emptyset}|1 - \alpha(S)|$. For $d = 2$ the triangle inequality gives
#   $|1-\alpha_1| + |1-\alpha_2| + |1-\alpha_1-\alpha_2| \ge |(1-\alpha_1)+(1-\alpha_2)-(1-\alpha_1-\alpha_2)| = 1$, and
#   $\alpha = (1, 0)$ attains it: **the optimum for d = 2 is exactly 1**.
# - **Binomial, insertion.** $p = \prod_{i\in S_1\cup S_2} x_i + \prod_{j\in S_2\cup S_3} x_j$ with disjoint
#   $S_1, S_2, S_3$ covering $[d]$; the total error is $\sum_S |p(x_S) - \alpha(S)|$.
#
# Both minima are linear programs: minimise $\sum_S t_S$ subject to $t_S \ge \pm(y_S - a_S^\top\alpha)$,
# with one slack $t_S$ per subset. The group attributions $\{[d]\}$ with score 1 (monomial) and
# $\{S_1\cup S_2, S_2\cup S_3\}$ with scores (1, 1) (binomial) are exact on every subset.

# %%
#| export
def subset_matrix(d:int, nonempty:bool=False) -> np.ndarray:
    "All 2^d subsets of [d] as 0/1 rows (empty set first unless `nonempty`)."
    if not 1 <= d <= 20: raise ValueError(f"d must lie in 1..20, got {d}")
    A = ((np.arange(2 ** d)[:, None] >> np.arange(d)[None]) & 1).astype(float)
    return A[1:] if nonempty else A

def min_total_l1(A:np.ndarray, y:np.ndarray) -> tuple[float, np.ndarray]:
    "min over α of Σ_S |y_S − A_S·α| as a linear program (scipy HiGHS); returns (optimum, α)."
    from scipy.optimize import linprog
    n, d = A.shape
    c = np.r_[np.zeros(d), np.ones(n)]
    A_ub = np.block([[A, -np.eye(n)], [-A, -np.eye(n)]])
    b_ub = np.r_[y, -y]
    r = linprog(c, A_ub=A_ub, b_ub=b_ub, bounds=[(None, None)] * d + [(0, None)] * n, method="highs")
    if r.status != 0: raise RuntimeError(f"linprog failed: {r.message}")
    return float(r.fun), r.x[:d]

def monomial_deletion(d:int) -> dict:
    "Smallest total deletion error of a per-feature attribution of ∏x_i at x = 1, and the exact group attribution's error."
    A = subset_matrix(d, nonempty=True)
    drop = np.ones(len(A))                                      # f(1) − f(1 with S removed) = 1 for every S ≠ ∅
    opt, alpha = min_total_l1(A, drop)
    group = np.abs(drop - (A @ np.ones(d) > 0) * 1.0).sum()     # one group [d] with score 1: S touches it iff S ≠ ∅
    full = subset_matrix(d)
    group += np.abs(full.prod(1) - ((full @ np.ones(d)) == d)).sum()   # insertion: f(x_S) = ∏ kept features vs 1[[d] ⊆ S]
    return dict(d=d, optimum=opt, alpha=alpha, group_error=float(group), n_subsets=len(A))

def binomial_sets(d:int, split:str="end") -> tuple[list[int], list[int], list[int]]:
    "S1, S2, S3 for the binomial: 'end' puts one feature in S1 and S3 and the rest in S2; 'balanced' one feature in S2, the rest halved."
    if d < 2: raise ValueError("the binomial needs d >= 2")
    if split == "end": return [0], list(range(1, d - 1)), [d - 1]
    if split == "balanced":
        if d < 3: raise ValueError("the balanced split needs d >= 3")
        k1 = (d - 1) // 2
        return list(range(k1)), [k1], list(range(k1 + 1, d))
    raise ValueError(f"split must be 'end' or 'balanced', got {split!r}")

def binomial_insertion(d:int, split:str="end") -> dict:
    "Smallest total insertion error of a per-feature attribution of the binomial, and the exact 2-group attribution's error."
    S1, S2, S3 = binomial_sets(d, split)
    A = subset_matrix(d)
    g1, g2 = np.zeros(d), np.zeros(d); g1[S1 + S2] = 1; g2[S2 + S3] = 1
    inside = lambda g: ((A @ g) == g.sum()).astype(float)      # 1[g ⊆ S]
    y = inside(g1) + inside(g2)                                 # p(x_S)
    opt, alpha = min_total_l1(A, y)
    touches = lambda g: ((A @ g) > 0).astype(float)                  # 1[g ∩ S ≠ ∅]
    kept = lambda g: (((1 - A) @ g) == g.sum()).astype(float)       # 1[g ⊆ [d] ∖ S]
    drop = 2.0 - (kept(g1) + kept(g2))                              # p(1) − p(1 with S removed)
    group_ins = np.abs(y - (inside(g1) + inside(g2))).sum()
    group_del = np.abs(drop - (touches(g1) + touches(g2))).sum()
    return dict(d=d, split=split, optimum=opt, alpha=alpha, group_error=float(group_ins + group_del),
                zero_attribution_error=float(np.abs(y).sum()), n_subsets=len(A))

def theorem_table(d_max:int) -> "pd.DataFrame":
    "Optimal per-feature errors and group errors for d = 2..d_max (monomial deletion; binomial insertion, two splits)."
    import pandas as pd
    rows = []
    for d in range(2, d_max + 1):
        m = monomial_deletion(d)
        rows.append(dict(d=d, problem="monomial, deletion", per_feature_optimum=m["optimum"], group_error=m["group_error"]))
        for split in ("end", "balanced"):
            if split == "balanced" and d < 3: continue
            b = binomial_insertion(d, split)
            rows.append(dict(d=d, problem=f"binomial ({split} split), insertion", per_feature_optimum=b["optimum"],
                             group_error=b["group_error"], zero_attribution_error=b["zero_attribution_error"]))
    return pd.DataFrame(rows)


# %% [markdown]
# The hand-derived d = 2 optimum of the monomial (1), the d = 2 binomial (with $S_2 = \emptyset$ it is the
# linear $x_1 + x_2$, so α = (1, 1) is exact), zero group errors, and a cross-check of the LP optimum by
# evaluating the objective at the returned α.

# %%
_m2 = monomial_deletion(2)
test_close(_m2["optimum"], 1.0, eps=1e-9)
test_close(np.abs(1 - subset_matrix(2, True) @ _m2["alpha"]).sum(), 1.0, eps=1e-9)
test_close(binomial_insertion(2)["optimum"], 0.0, eps=1e-9)
test_close(binomial_insertion(2)["alpha"], np.array([1.0, 1.0]), eps=1e-7)
test_eq(binomial_sets(6, "end"), ([0], [1, 2, 3, 4], [5]))
test_eq(binomial_sets(6, "balanced"), ([0, 1], [2], [3, 4, 5]))
_tt = theorem_table(6)
test_eq(float(_tt.group_error.abs().max()), 0.0)
_mono = _tt[_tt.problem == "monomial, deletion"].per_feature_optimum.to_numpy()
assert (np.diff(_mono) > 0).all(), _mono
_rng = np.random.default_rng(0)
for _ in range(20):   # no random α beats the LP optimum (d = 5)
    _a = _rng.normal(0.3, 0.5, 5)
    assert np.abs(1 - subset_matrix(5, True) @ _a).sum() >= monomial_deletion(5)["optimum"] - 1e-9
test_fail(lambda: binomial_sets(4, "middle"), contains="'end' or 'balanced'")


# %% [markdown]
# ## Data: digits on noise canvases with known boxes
#
# Each 8×8 digit (pixels scaled to 0..1) is pasted at a uniformly random position onto a
# `canvas`×`canvas` canvas of uniform noise in [0, `noise`]; inside the box a pixel is the larger of the
# digit and the noise. The box is the ground-truth segment for purity and IoU. A check further down shows
# that the class evidence really lives in the box: the backbone is accurate on the box alone and at chance
# on the canvas without it.

# %%
#| export
@dataclass
class CanvasDigits:
    X: np.ndarray      # [N, 1, C, C] float32 images
    y: np.ndarray      # [N] int64 labels
    box: np.ndarray    # [N, 1, C, C] float32, 1 inside the digit's 8×8 box

def canvas_digits(images:np.ndarray, y:np.ndarray, canvas:int=16, noise:float=0.5, seed:int=0) -> CanvasDigits:
    "Paste 8×8 digit images (pixels 0..16) at random positions onto noise canvases."
    if canvas < 8: raise ValueError("canvas must be at least 8 pixels")
    rng = np.random.default_rng(seed)
    n = len(images)
    X = (rng.uniform(0, 1, (n, 1, canvas, canvas)) * noise).astype(np.float32)
    box = np.zeros_like(X)
    r, c = rng.integers(0, canvas - 8 + 1, n), rng.integers(0, canvas - 8 + 1, n)
    dig = np.asarray(images, dtype=np.float32).reshape(n, 8, 8) / 16.0
    for i in range(n):
        X[i, 0, r[i]:r[i] + 8, c[i]:c[i] + 8] = np.maximum(X[i, 0, r[i]:r[i] + 8, c[i]:c[i] + 8], dig[i])
        box[i, 0, r[i]:r[i] + 8, c[i]:c[i] + 8] = 1
    return CanvasDigits(X, np.asarray(y, dtype=np.int64), box)

def load_canvas_splits(n_train:int, n_test:int, canvas:int, noise:float, seed:int) -> tuple[CanvasDigits, CanvasDigits]:
    "A stratified train/test split of scikit-learn's digits, each pasted onto its own noise canvases."
    from trustlib.data import load
    from sklearn.model_selection import train_test_split
    d = load("digits")
    if n_train + n_test > len(d.y): raise ConfigError(f"parameter 'n_train': n_train + n_test must be <= {len(d.y)}")
    Xtr, Xte, ytr, yte = train_test_split(d.X, d.y, train_size=n_train, test_size=n_test, stratify=d.y, random_state=seed % 2**31)
    return (canvas_digits(Xtr, ytr, canvas, noise, derive_seed(seed, "cv-train")),
            canvas_digits(Xte, yte, canvas, noise, derive_seed(seed, "cv-test")))


# %%
_cd = canvas_digits(np.full((3, 64), 16.0), np.arange(3), canvas=16, noise=0.5, seed=0)
test_eq(_cd.X.shape, (3, 1, 16, 16)); test_eq(_cd.box.sum((1, 2, 3)), np.full(3, 64.0))
test_eq(_cd.X[_cd.box == 1].min(), 1.0)                       # the digit (all 16 here) covers its box
assert _cd.X[_cd.box == 0].max() <= 0.5
_tr, _te = load_canvas_splits(100, 50, 16, 0.5, seed=0)
test_eq((len(_tr.y), len(_te.y)), (100, 50)); test_eq(np.bincount(_tr.y).min() >= 9, True)


# %% [markdown]
# ## The frozen backbone
#
# A small CNN (three 3×3 convolution blocks with max pooling, global average pooling, a linear head; about
# 24k parameters). `trustlib.models.SmallCNN` has no global pooling and learns a digit at a random
# position much more slowly, so the backbone is defined here. Its pooled hidden state $z$ is the input of
# the head, and the head's weight rows are the class vectors that the group selector uses as queries. It
# is trained from scratch with random **patch dropping** (each image is also seen twice with a random
# share of its patches zeroed), then frozen.

# %%
#| export
def patch_masks(n:int, canvas:int, patch:int, keep:np.ndarray|float, rng:np.random.Generator) -> np.ndarray:
    "Random binary pixel masks [n, 1, C, C] that keep each patch with probability `keep` (per image or scalar)."
    g = canvas // patch
    keep = np.broadcast_to(np.asarray(keep, dtype=float), (n,))
    m = (rng.uniform(size=(n, g, g)) < keep[:, None, None]).astype(np.float32)
    return np.repeat(np.repeat(m, patch, 1), patch, 2)[:, None]

class PoolCNN(nn.Module):
    "Three conv blocks (width w, 2w, 4w; max pooling), global average pooling and a linear head; `features` gives the pooled state."
    def __init__(self, in_channels:int=1, n_classes:int=10, width:int=16):
        super().__init__()
        w = width
        self.features = nn.Sequential(nn.Conv2d(in_channels, w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(w, 2 * w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(2 * w, 4 * w, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(4 * w, n_classes)
    def forward(self, x): return self.head(self.features(x).flatten(1))

def backbone_outputs(model, x:torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    "(logits, pooled hidden state) of a model with `features` (pooled, flattened) and a linear `head`."
    z = model.features(x).flatten(1)
    return model.head(z), z

def train_backbone(data:CanvasDigits, cfg:Config, seed:int):
    "A `PoolCNN` trained with patch dropping (full images plus two randomly patch-masked copies), then frozen."
    from trustlib.models import fit
    torch.manual_seed(derive_seed(seed, "bb-init"))
    model = PoolCNN(1, 10, width=cfg.backbone_width)
    rng = np.random.default_rng(derive_seed(seed, "bb-drop"))
    n = len(data.y)
    masked = [data.X * patch_masks(n, cfg.canvas, cfg.patch, rng.uniform(0.1, 1.0, n), rng) for _ in range(2)]
    X = np.concatenate([data.X, *masked]); y = np.concatenate([data.y] * 3)
    fit(model, X, y, epochs=cfg.backbone_epochs, batch_size=32, lr=3e-3, seed=derive_seed(seed, "bb-fit"), progress=False, threads=None)
    model.eval()
    for p in model.parameters(): p.requires_grad_(False)
    return model


# %% [markdown]
# ## The SOP model
#
# **Group generator.** A convolution with kernel = stride = `patch` embeds the patches, $E\in\mathbb R^{P\times D}$.
# `num_masks_sample` query patches (a random subset of the first `num_masks_max` in training, evenly spaced at
# inference) attend over all patches: $A = \mathrm{softmax}(\text{blur}(s\,(E_qW_q)(EW_k)^\top/\sqrt D))$. Each
# row is binarised to its top $k = \lfloor\tau P\rfloor$ patches and upsampled to pixels (nearest neighbour).
# As in the authors' current code, the scale $c_j = \sum_{\text{top}} A - \sum_{\text{rest}} A$ multiplies
# the group's logits; it is the generator's path to the gradient, since the binary masks have none.
#
# **Backbone.** The frozen backbone runs on every masked input $g_j\odot x$, giving logits $h(g_j\odot x)$
# and pooled states $z_j$ (no gradient is needed through it).
#
# **Group selector.** Queries are the class vectors $C_y$ (initialised from the backbone's head, trainable),
# keys the pooled states: $w_{\cdot,y} = \mathrm{sparsemax}_j(s'\,(C_yW_q)(z_jW_k)^\top/\sqrt H)$ with $W_q, W_k$
# initialised to the identity.
#
# **Output.** $\hat y_y = \sum_j w_{j,y}\, c_j\, h_y(g_j\odot x)$; the explanation is the groups with
# $w_{j,y} > 0$ and their contributions $w_{j,y}\,c_j\,h_y(g_j\odot x)$, which sum to the prediction exactly.

# %%
#| export
def position_code(g:int, d:int) -> torch.Tensor:
    "A fixed 2-d sine-cosine position code `[d, g, g]` of a g×g patch grid (d divisible by 4; frequencies 4^(−i/(d/4)))."
    if d % 4: raise ValueError(f"the position code needs a width divisible by 4, got {d}")
    ys, xs = torch.meshgrid(torch.arange(g, dtype=torch.float32), torch.arange(g, dtype=torch.float32), indexing="ij")
    freq = 4.0 ** (-torch.arange(d // 4) / (d // 4)) * math.pi / 2
    return torch.cat([f(c[None] * freq[:, None, None]) for c in (ys, xs) for f in (torch.sin, torch.cos)])

def _gaussian_kernel(k:int, sigma:float=1.0) -> torch.Tensor:
    ax = torch.arange(k, dtype=torch.float32) - (k - 1) / 2
    g = torch.exp(-ax ** 2 / (2 * sigma ** 2)); g = g[:, None] * g[None]
    return (g / g.sum())[None, None]

class GroupGenerator(nn.Module):
    "Patch embeddings → single-head attention from query patches → top-τ binary groups [B, m, H, W] and their scales c [B, m]."
    def __init__(self, in_channels:int, patch:int, d_proj:int, tau:float, scale:float=1.0, blur:int=0,
                 projection:nn.Module|None=None, # a module mapping images to d_proj feature maps (pooled to the patch grid); None: a patch convolution
                 pos_scale:float=0.0, image_size:int=16): # weight of the position code added to the patch features (× their RMS); 0: none
        super().__init__()
        self.pos_scale = pos_scale
        if pos_scale: self.register_buffer("pos", position_code(image_size // patch, d_proj))
        if blur not in (0, 1, 3, 5, 7): raise ValueError(f"blur must be 0 (none) or an odd kernel size up to 7, got {blur}")
        self.patch, self.tau, self.scale, self.blur = patch, tau, scale, blur
        self.proj = nn.Conv2d(in_channels, d_proj, patch, patch) if projection is None else projection
        self.wq, self.wk = nn.Linear(d_proj, d_proj, bias=False), nn.Linear(d_proj, d_proj, bias=False)
        if blur > 1: self.register_buffer("kernel", _gaussian_kernel(blur))
    def forward(self, x:torch.Tensor, query_idx:torch.Tensor):
        E = self.proj(x); gh, gw = x.shape[-2] // self.patch, x.shape[-1] // self.patch; P = gh * gw
        if E.shape[-2:] != (gh, gw): E = F.adaptive_avg_pool2d(E, (gh, gw))
        if self.pos_scale: E = E + self.pos_scale * E.detach().pow(2).mean().sqrt() * self.pos
        E = E.flatten(2).transpose(1, 2)                                        # [B, P, D]
        S = self.wq(E[:, query_idx.to(E.device)]) @ self.wk(E).transpose(1, 2) * (self.scale / math.sqrt(E.shape[-1]))   # [B, m, P]
        B, m = S.shape[:2]
        if self.blur > 1:
            S = F.conv2d(S.reshape(B * m, 1, gh, gw), self.kernel, padding=self.blur // 2).reshape(B, m, P)
        A = S.softmax(-1)
        k = n_keep(P, self.tau)
        top = A.topk(k, dim=-1)
        c = 2 * top.values.sum(-1) - A.sum(-1)                                  # Σ top − Σ rest
        masks = torch.zeros_like(A).scatter(-1, top.indices, 1.0).reshape(B, m, gh, gw)
        masks = masks.repeat_interleave(self.patch, -2).repeat_interleave(self.patch, -1)
        return masks, c

@dataclass
class SOPOutput:
    logits: torch.Tensor          # [B, K] the prediction ŷ
    group_logits: torch.Tensor    # [B, m, K] c_j · h(g_j ⊙ x)
    weights: torch.Tensor         # [B, K, m] sparsemax selection weights w_{j,y}
    masks: torch.Tensor           # [B, m, H, W] binary groups
    @property
    def contributions(self) -> torch.Tensor:
        "[B, K, m] w_{j,y} · c_j · h_y(g_j ⊙ x); summed over groups they give `logits` exactly."
        return self.weights * self.group_logits.transpose(1, 2)

class SOP(nn.Module):
    "Sum-of-Parts around a frozen backbone `(logits, pooled) = backbone_fn(x)`; `class_weights` [K, H] initialise the selector's queries."
    def __init__(self, backbone:nn.Module, class_weights:torch.Tensor, *, in_channels:int=1, image_size:int=16, patch:int=2,
                 d_proj:int=32, tau:float=0.2, num_masks_max:int=64, num_masks_sample:int=8, gen_scale:float=1.0,
                 sel_scale:float=1.0, blur:int=0, backbone_fn=backbone_outputs, projection:nn.Module|None=None, pos_scale:float=0.0):
        super().__init__()
        if image_size % patch: raise ValueError(f"patch {patch} does not divide image_size {image_size}")
        P = (image_size // patch) ** 2
        n_keep(P, tau)                                                             # validates tau
        if not 1 <= num_masks_sample <= min(num_masks_max, P):
            raise ValueError(f"num_masks_sample must lie in 1..{min(num_masks_max, P)} (min of num_masks_max and {P} patches), got {num_masks_sample}")
        self.backbone, self.backbone_fn = backbone, backbone_fn
        for p in backbone.parameters(): p.requires_grad_(False)
        self.n_queries, self.m, self.sel_scale = min(num_masks_max, P), num_masks_sample, sel_scale
        self.generator = GroupGenerator(in_channels, patch, d_proj, tau, gen_scale, blur, projection, pos_scale, image_size)
        H = class_weights.shape[1]
        self.class_weights = nn.Parameter(class_weights.detach().clone())
        self.wq, self.wk = nn.Parameter(torch.eye(H)), nn.Parameter(torch.eye(H))
    def query_indices(self, generator:torch.Generator|None=None) -> torch.Tensor:
        "Random distinct queries in training (with a generator), evenly spaced ones otherwise."
        if self.training and generator is not None:
            return torch.randperm(self.n_queries, generator=generator)[:self.m].sort().values
        return torch.arange(self.m) * self.n_queries // self.m
    def forward(self, x:torch.Tensor, generator:torch.Generator|None=None) -> SOPOutput:
        B = x.shape[0]
        masks, c = self.generator(x, self.query_indices(generator))
        xm = (x[:, None] * masks[:, :, None]).flatten(0, 1)                        # [B·m, C, H, W]
        self.backbone.eval()
        with torch.no_grad(): logits, z = self.backbone_fn(self.backbone, xm)
        group_logits = logits.view(B, self.m, -1) * c[..., None]                  # [B, m, K]
        q = self.class_weights @ self.wq                                          # [K, H]
        keys = z.view(B, self.m, -1) @ self.wk                                    # [B, m, H]
        scores = torch.einsum("kh,bmh->bkm", q, keys) * (self.sel_scale / math.sqrt(q.shape[-1]))
        w = sparsemax(scores, -1)                                                 # [B, K, m]
        return SOPOutput((w * group_logits.transpose(1, 2)).sum(-1), group_logits, w, masks)


# %% [markdown]
# **The generator's patch features.** The official image SOP does not learn its patch embeddings from
# scratch: its projection is the backbone itself, read at its second-to-last layer (a ViT's patch tokens),
# and fine-tuned. `make_sop` does the same with our CNN backbone: the projection is a trainable copy of the
# backbone's first convolution block, whose feature map is pooled to the patch grid (`projection="backbone"`);
# `projection="conv"` is a fresh patch convolution instead.

# %%
#| export
def make_sop(backbone:nn.Module, cfg) -> "SOP":
    "The SOP model of `cfg` around a trained backbone (`PoolCNN`): its projection a trainable copy of the backbone's first block, or a fresh convolution."
    import copy
    proj, d = None, cfg.d_proj
    if cfg.projection == "backbone":
        proj = copy.deepcopy(backbone.features[:3]); d = proj[0].out_channels
        for p in proj.parameters(): p.requires_grad_(True)
    return SOP(backbone, backbone.head.weight, image_size=cfg.canvas, patch=cfg.patch, d_proj=d, tau=cfg.tau, num_masks_max=cfg.num_masks_max,
               num_masks_sample=cfg.num_masks_sample, gen_scale=cfg.gen_scale, sel_scale=cfg.sel_scale, blur=cfg.blur, projection=proj,
               pos_scale=cfg.pos_scale)


# %% [markdown]
# An untrained SOP around an untrained backbone: **fidelity** holds to float tolerance (the prediction is
# the sum of the contributions), masked inputs keep the input's shape, every group keeps exactly
# ⌊τP⌋ patches and is 0/1 at pixel level, inference is deterministic (evenly spaced queries), and bad τ or
# group counts are rejected.

# %%
torch.manual_seed(0)
_bb = PoolCNN(1, 10, width=4).eval()
_sop = SOP(_bb, _bb.head.weight, image_size=16, patch=2, tau=0.2, num_masks_sample=5, blur=3).eval()
_x = torch.rand(6, 1, 16, 16)
with torch.no_grad(): _o = _sop(_x)
test_eq(tuple(_o.logits.shape), (6, 10)); test_eq(tuple(_o.masks.shape), (6, 5, 16, 16))
test_close(_o.contributions.sum(-1), _o.logits, eps=1e-6)                     # fidelity
test_eq(_o.masks.sum((-2, -1)), torch.full((6, 5), 12.0 * 4))                  # 12 patches of 2×2 pixels each
test_eq(set(_o.masks.unique().tolist()), {0.0, 1.0})
test_close(_o.weights.sum(-1), torch.ones(6, 10), eps=1e-6)
test_eq(tuple((_x[:, None] * _o.masks[:, :, None]).shape[2:]), tuple(_x.shape[1:]))   # masked inputs keep shape
test_eq(_sop.query_indices().tolist(), [0, 12, 25, 38, 51])
test_eq(torch.equal(_sop(_x).logits.detach(), _o.logits), True)                                          # deterministic at inference
test_fail(lambda: SOP(_bb, _bb.head.weight, tau=0.0), contains="tau")
test_fail(lambda: SOP(_bb, _bb.head.weight, tau=1.5), contains="tau")
test_fail(lambda: SOP(_bb, _bb.head.weight, num_masks_sample=0), contains="num_masks_sample")
test_fail(lambda: SOP(_bb, _bb.head.weight, num_masks_max=8, num_masks_sample=9), contains="num_masks_sample")
test_fail(lambda: SOP(_bb, _bb.head.weight, patch=3), contains="does not divide")
_sb = make_sop(_bb, Config.from_params("smoke"))                                # the generator reads a trainable copy of the backbone's first block
assert all(p.requires_grad for p in _sb.generator.proj.parameters()) and not any(p.requires_grad for p in _bb.parameters())
with torch.no_grad(): _ob = _sb(_x)
test_close(_ob.contributions.sum(-1), _ob.logits, eps=1e-5)
test_eq(position_code(8, 16).shape, (16, 8, 8)); test_close(position_code(8, 16)[:, 0, 0], torch.tensor([0.0] * 4 + [1.0] * 4 + [0.0] * 4 + [1.0] * 4))
assert len({tuple(position_code(8, 16)[:, i, j].round(decimals=5).tolist()) for i in range(8) for j in range(8)}) == 64   # every patch has its own code


# %% [markdown]
# ## Training SOP
#
# Plain cross-entropy on $\hat y$ with AdamW; only the generator (projection and attention), the class
# vectors and the selector's $W_q, W_k$ train — the backbone stays frozen (checked below).

# %%
#| export
def train_sop(model:SOP, data:CanvasDigits, *, epochs:int=5, lr:float=2e-3, weight_decay:float=0.01, batch_size:int=32,
              seed:int=0, progress:bool=False,
              prep=None, # maps a batch of `data.X` to the model's input on its device (the ImageNet-S images: uint8 to normalised pixels); None: as stored
              ) -> list[float]:
    "Train the generator and selector of `model` with cross-entropy on ŷ; returns the mean loss per epoch."
    from tqdm.auto import tqdm
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, foreach=True)
    X, y = torch.as_tensor(data.X), torch.as_tensor(data.y)
    g = torch.Generator().manual_seed(int(seed))
    losses = []
    for _ in tqdm(range(epochs), desc="SOP epochs", disable=not progress, leave=False):
        model.train(); tot, nb = 0.0, 0
        perm = torch.randperm(len(y), generator=g)
        for s in range(0, len(y), batch_size):
            idx = perm[s:s + batch_size]
            xb = X[idx] if prep is None else prep(X[idx])
            loss = F.cross_entropy(model(xb, generator=g).logits, y[idx].to(xb.device))
            opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
            tot += loss.item(); nb += 1
        losses.append(tot / nb)
    model.eval()
    return losses

@torch.no_grad()
def sop_predict(model:SOP, X:np.ndarray, batch_size:int=100, prep=None) -> SOPOutput:
    "SOP outputs for all of `X` (inference: evenly spaced queries), concatenated on the CPU; `prep` as in `train_sop`."
    model.eval()
    outs = [model(torch.as_tensor(X[s:s + batch_size]) if prep is None else prep(X[s:s + batch_size])) for s in range(0, len(X), batch_size)]
    return SOPOutput(*(torch.cat([getattr(o, k).cpu() for o in outs]) for k in ("logits", "group_logits", "weights", "masks")))


# %%
_tr, _te = load_canvas_splits(120, 40, 16, 0.5, seed=1)
_before = {k: v.clone() for k, v in _bb.state_dict().items()}
_losses = train_sop(_sop, _tr, epochs=2, seed=0)
test_eq(len(_losses), 2); assert all(np.isfinite(_losses))
assert all(torch.equal(_before[k], v) for k, v in _bb.state_dict().items())  # the backbone is frozen
_oo = sop_predict(_sop, _te.X)
test_close(_oo.contributions.sum(-1), _oo.logits, eps=1e-5)


# %% [markdown]
# ## Baselines
#
# **Post-hoc, turned into SANNs ("-F").** Integrated gradients (zero baseline), occlusion (one patch at a
# time, zero fill) and KernelSHAP (patches as players, zero baseline) from `captum` explain the frozen
# backbone's predicted class. Each method's top ⌊τP⌋ patches form its one group, and the SANN's prediction is
# the backbone on those patches alone — the same group size as one SOP group.
#
# **BagNet-like.** A classifier whose logits are the mean of per-location logits computed from local windows
# (2·`patch` pixels wide, stride `patch`); the per-location terms are its exact additive attribution.
#
# Every method gives a pixel map for the predicted class (SOP: $\sum_j \text{contribution}_j\, g_j$;
# BagNet: each location's term spread over its window), from which patches are ranked.

# %%
#| export
class BagNetLike(nn.Module):
    "Per-location logits from local windows (size `rf`, stride `stride`), averaged: the prediction is the sum of location terms."
    def __init__(self, in_channels:int=1, n_classes:int=10, rf:int=4, stride:int=2, width:int=32):
        super().__init__()
        self.rf, self.stride = rf, stride
        self.local = nn.Sequential(nn.Conv2d(in_channels, width, rf, stride), nn.ReLU(), nn.Conv2d(width, width, 1), nn.ReLU(),
                                   nn.Conv2d(width, n_classes, 1))
    def terms(self, x): "[B, K, h, w] location terms; they sum to the logits."; t = self.local(x); return t / (t.shape[-2] * t.shape[-1])
    def forward(self, x): return self.terms(x).sum((-2, -1))
    def pixel_map(self, x, target):
        "Each location's term for class `target` [B] spread evenly over its window: a pixel map that sums to the logit."
        t = self.terms(x)[torch.arange(len(x)), target][:, None]
        w = torch.ones(1, 1, self.rf, self.rf) / self.rf ** 2
        out = F.conv_transpose2d(t, w, stride=self.stride)
        return F.pad(out, (0, x.shape[-1] - out.shape[-1], 0, x.shape[-2] - out.shape[-2]))

def patch_index(canvas:int, patch:int) -> torch.Tensor:
    "[1, 1, C, C] map from pixel to patch number (row-major), captum's feature mask."
    g = canvas // patch
    return torch.arange(g * g).view(g, g).repeat_interleave(patch, 0).repeat_interleave(patch, 1)[None, None]

def patch_scores(pixel_map:torch.Tensor, patch:int) -> torch.Tensor:
    "[B, P] sums of a pixel map [B, 1, C, C] over each patch."
    return F.avg_pool2d(pixel_map, patch).flatten(1) * patch ** 2

def top_patch_mask(scores:torch.Tensor, k:int, canvas:int, patch:int) -> torch.Tensor:
    "[B, 1, C, C] binary pixel mask of the `k` highest-scoring patches."
    g = canvas // patch
    m = torch.zeros_like(scores).scatter(-1, scores.topk(k, -1).indices, 1.0).view(-1, 1, g, g)
    return m.repeat_interleave(patch, -2).repeat_interleave(patch, -1)

def posthoc_map(method:str, model:nn.Module, X:torch.Tensor, target:torch.Tensor, cfg:Config, seed:int=0,
                f=None, # the logits function (default: `backbone_outputs(model, x)[0]`, the digits CNN)
                canvas:int|None=None, patch:int|None=None, # image side and patch side (default: `cfg.canvas`, `cfg.patch`)
                internal_batch:int=512, # integrated gradients' internal batch (memory)
                ) -> torch.Tensor:
    "Pixel attribution map [B, 1, H, W] (summed over channels) of the backbone's class `target` by captum's 'ig', 'occlusion' or 'kernelshap'."
    from captum.attr import IntegratedGradients, Occlusion, KernelShap
    f = f or (lambda x: backbone_outputs(model, x)[0])
    canvas, patch = canvas or cfg.canvas, patch or cfg.patch
    C = X.shape[1]
    if method == "ig":
        a = IntegratedGradients(f).attribute(X, baselines=0.0, target=target, n_steps=cfg.ig_steps, internal_batch_size=internal_batch)
        return a if C == 1 else a.sum(1, keepdim=True)
    if method == "occlusion":
        a = Occlusion(f).attribute(X, sliding_window_shapes=(C, patch, patch), strides=(C, patch, patch),
                                   baselines=0.0, target=target, perturbations_per_eval=64)
        return a if C == 1 else a[:, :1]            # every channel of a patch gets the patch's drop; keep one
    if method == "kernelshap":
        torch.manual_seed(seed)
        fm = patch_index(canvas, patch).to(X.device).expand(1, C, -1, -1)
        out = [KernelShap(f).attribute(X[i:i + 1], baselines=0.0, target=int(target[i]), feature_mask=fm, n_samples=cfg.shap_samples,
                                       perturbations_per_eval=cfg.shap_samples) for i in range(len(X))]
        return torch.cat(out)[:, :1] / patch ** 2        # captum gives each pixel its patch's value; spread it over the patch
    raise ValueError(f"method must be 'ig', 'occlusion' or 'kernelshap', got {method!r}")


# %% [markdown]
# Cross-checks: occlusion's patch score equals $f(x) - f(x \text{ without the patch})$ computed by hand;
# integrated gradients nearly satisfy completeness (the attributions sum to $f(x) - f(0)$); BagNet's pixel
# map sums to its logit.

# %%
_x4 = torch.as_tensor(_te.X[:4]); _t4 = backbone_outputs(_bb, _x4)[0].argmax(-1)
_c = Config.from_params("smoke", ig_steps=64, shap_samples=16)
_occ = patch_scores(posthoc_map("occlusion", _bb, _x4, _t4, _c), 2) / 4     # captum puts the drop on each of the patch's 4 pixels
_xm = _x4.clone(); _xm[:, :, 2:4, 4:6] = 0                                     # patch 1·8 + 2 = 10
_f = lambda x: backbone_outputs(_bb, x)[0].gather(1, _t4[:, None])[:, 0]
test_close(_occ[:, 10], _f(_x4) - _f(_xm), eps=1e-5)
_ig = posthoc_map("ig", _bb, _x4, _t4, _c).sum((1, 2, 3))
test_close(_ig, _f(_x4) - _f(torch.zeros_like(_x4)), eps=2e-2)
_ks = posthoc_map("kernelshap", _bb, _x4, _t4, _c)
test_eq(tuple(_ks.shape), (4, 1, 16, 16))
_bn = BagNetLike(rf=4, stride=2)
test_close(_bn.pixel_map(_x4, _t4).sum((1, 2, 3)), _bn(_x4).gather(1, _t4[:, None])[:, 0], eps=1e-5)
test_eq(top_patch_mask(torch.arange(64.0)[None], 3, 16, 2).sum(), 12.0)
test_eq(top_patch_mask(torch.arange(64.0)[None], 3, 16, 2)[0, 0, 14:, 10:].sum(), 12.0)   # patches 61..63
test_fail(lambda: posthoc_map("lime", _bb, _x4, _t4, _c), contains="'ig', 'occlusion'")


# %% [markdown]
# ## Metrics
#
# - **Purity** of a group $g$ against the box $b$: $|g\cap b| / |g|$; **IoU**: $|g\cap b|/|g\cup b|$. For SOP
#   we average the purity of the active groups (non-zero weight for the predicted class) weighted by their
#   selection weights; for the other methods we score their top-τ patches.
# - **Insertion / deletion**: reveal (or remove) patches in the order of the method's pixel map, in
#   `curve_steps` equal steps, and record the frozen backbone's probability of its predicted class; the area
#   under the curve (fraction of patches on the x-axis). Higher insertion and lower deletion are better.
# - **Fidelity error**: |prediction − sum of attributions| of the predicted class, in logits. SOP's is zero
#   by construction; for a post-hoc -F model it compares the backbone on the top patches with the sum of
#   those patches' attributions.

# %%
#| export
def purity_iou(masks:torch.Tensor, box:torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    "Purity |g∩b|/|g| and IoU |g∩b|/|g∪b| of binary masks [B, m, H, W] (or [B, 1, H, W]) against boxes [B, 1, H, W]."
    inter = (masks * box).sum((-2, -1)); size = masks.sum((-2, -1))
    union = size + box.sum((-2, -1)) - inter
    return inter / size.clamp_min(1e-12), inter / union.clamp_min(1e-12)

@torch.no_grad()
def insertion_deletion(f, X:torch.Tensor, target:torch.Tensor, scores:torch.Tensor, canvas:int, patch:int, steps:int) -> tuple[np.ndarray, np.ndarray]:
    "Insertion and deletion curves [B, steps+1]: probability of `target` under `f` with the top j·P/steps patches kept (or removed)."
    P = scores.shape[1]; order = scores.argsort(-1, descending=True)
    ins, dele = [], []
    for j in range(steps + 1):
        k = round(j * P / steps)
        m = torch.zeros_like(scores); m.scatter_(-1, order[:, :k], 1.0)
        g = canvas // patch
        m = m.view(-1, 1, g, g).repeat_interleave(patch, -2).repeat_interleave(patch, -1)
        pi = f(X * m).softmax(-1).gather(1, target[:, None])[:, 0]
        pd_ = f(X * (1 - m)).softmax(-1).gather(1, target[:, None])[:, 0]
        ins.append(pi.numpy()); dele.append(pd_.numpy())
    return np.stack(ins, 1), np.stack(dele, 1)

def auc(curve:np.ndarray) -> np.ndarray:
    "Area under curves [B, n] sampled evenly on [0, 1] (trapezoid)."
    return np.trapezoid(curve, dx=1.0 / (curve.shape[1] - 1), axis=1)

def mean_pairwise_iou(masks:torch.Tensor) -> float:
    "Mean IoU between the groups [B, m, H, W] of the same image, over all pairs and images (1: every group is the same mask)."
    m = masks.flatten(2).float(); inter = torch.einsum("bip,bjp->bij", m, m); size = m.sum(-1)
    iou = inter / (size[:, :, None] + size[:, None, :] - inter).clamp_min(1e-12)
    off = ~torch.eye(m.shape[1], dtype=torch.bool)
    return float(iou[:, off].mean()) if m.shape[1] > 1 else 1.0


# %% [markdown]
# A group inside the box has purity 1, one outside has 0; the insertion curve starts at f(0) and ends at
# f(x), the deletion curve the other way round.

# %%
_box = torch.zeros(1, 1, 16, 16); _box[..., 0:8, 0:8] = 1
_g = torch.zeros(1, 2, 16, 16); _g[0, 0, 0:4, 0:4] = 1; _g[0, 1, 12:16, 12:16] = 1
_pu, _io = purity_iou(_g, _box)
test_close(_pu, torch.tensor([[1.0, 0.0]])); test_close(_io, torch.tensor([[16 / 64, 0.0]]))
_fb = lambda x: backbone_outputs(_bb, x)[0]
_ins, _del = insertion_deletion(_fb, _x4, _t4, torch.rand(4, 64), 16, 2, 4)
_p = lambda x: _fb(x).softmax(-1).gather(1, _t4[:, None])[:, 0].numpy()
test_close(_ins[:, 0], _p(torch.zeros_like(_x4)), eps=1e-6); test_close(_ins[:, -1], _p(_x4), eps=1e-6)
test_close(_del[:, 0], _p(_x4), eps=1e-6); test_close(_del[:, -1], _p(torch.zeros_like(_x4)), eps=1e-6)
test_close(auc(np.array([[0.0, 0.5, 1.0]])), np.array([0.5]))
test_close(mean_pairwise_iou(torch.stack([_g[0], _g[0]])[None, :, 0]), 1.0)         # two copies of one group
test_close(mean_pairwise_iou(_g), 0.0)                                               # two disjoint groups

# %% [markdown]
# ## One seed, every method
#
# `evaluate_seed` builds the data of one seed, trains the backbone, SOP and the BagNet-like model, runs the
# three post-hoc explainers, and returns one row of metrics per method, plus the curves and the condition
# checks (accuracy of the backbone on the box alone and on the canvas without the box).

# %%
#| export
METHODS = ("SOP", "IG-F", "Occlusion-F", "KernelSHAP-F", "BagNet-like")

def evaluate_seed(cfg:Config, seed:int, progress:bool=False) -> dict:
    "All methods on one seed: per-method metric rows, insertion/deletion curves, condition checks and example groups."
    from trustlib.models import fit
    tr, te = load_canvas_splits(cfg.n_train, cfg.n_test, cfg.canvas, cfg.noise, seed)
    X, y, box = torch.as_tensor(te.X), torch.as_tensor(te.y), torch.as_tensor(te.box)
    bb = train_backbone(tr, cfg, seed)
    f = lambda x: backbone_outputs(bb, x)[0]
    with torch.no_grad():
        full_logits = f(X); pred_bb = full_logits.argmax(-1)
        cond = dict(backbone_acc=float((pred_bb == y).float().mean()),
                    box_only_acc=float((f(X * box).argmax(-1) == y).float().mean()),
                    no_box_acc=float((f(X * (1 - box)).argmax(-1) == y).float().mean()))
    torch.manual_seed(derive_seed(seed, "sop-init"))
    sop = make_sop(bb, cfg)
    losses = train_sop(sop, tr, epochs=cfg.epochs, lr=cfg.lr, weight_decay=cfg.weight_decay, batch_size=cfg.batch_size,
                       seed=derive_seed(seed, "sop-fit"), progress=progress)
    so = sop_predict(sop, te.X)
    pred = so.logits.argmax(-1); ar = torch.arange(len(y))
    contrib = so.contributions[ar, pred]                                       # [B, m]
    w = so.weights[ar, pred]                                                   # [B, m]
    active = w > 0
    pur, iou = purity_iou(so.masks, box)                                       # [B, m]
    top_group = contrib.argmax(-1)
    maps = {"SOP": (contrib[..., None, None] * so.masks).sum(1, keepdim=True)}
    rows, curves = [], {}
    k = cfg.n_keep
    rows.append(dict(method="SOP", accuracy=float((pred == y).float().mean()),
                     fidelity_error=float((so.contributions.sum(-1) - so.logits).abs().max()),
                     active_groups=float(active.sum(-1).float().mean()),
                     distinct_groups=float(np.mean([len(torch.unique(g.flatten(1), dim=0)) for g in so.masks])),
                     pairwise_iou=mean_pairwise_iou(so.masks),
                     active_patch_share=float(((so.masks * active[..., None, None]).amax(1) > 0).float().mean()),
                     purity=float(((w * pur).sum(-1) / w.sum(-1)).mean()),
                     iou=float(iou[ar, top_group].mean())))
    # post-hoc -F baselines on the backbone's own prediction
    for name, meth in (("IG-F", "ig"), ("Occlusion-F", "occlusion"), ("KernelSHAP-F", "kernelshap")):
        amap = posthoc_map(meth, bb, X, pred_bb, cfg, seed=derive_seed(seed, "shap")).detach()
        maps[name] = amap
        sc = patch_scores(amap, cfg.patch)
        m = top_patch_mask(sc, k, cfg.canvas, cfg.patch)
        with torch.no_grad(): lf = f(X * m)
        pf = lf.argmax(-1)
        sel = (sc.topk(k, -1).values.sum(-1) * (1.0 if meth != "occlusion" else 1.0 / cfg.patch ** 2))
        pu, io = purity_iou(m, box)
        rows.append(dict(method=name, accuracy=float((pf == y).float().mean()),
                         fidelity_error=float((lf.gather(1, pred_bb[:, None])[:, 0] - sel).abs().mean()),
                         active_groups=1.0, distinct_groups=1.0, pairwise_iou=1.0, active_patch_share=k / cfg.n_patches, purity=float(pu.mean()), iou=float(io.mean())))
    # BagNet-like
    torch.manual_seed(derive_seed(seed, "bag-init"))
    bag = BagNetLike(1, 10, rf=2 * cfg.patch, stride=cfg.patch)
    fit(bag, tr.X, tr.y, epochs=cfg.bagnet_epochs, batch_size=32, lr=3e-3, seed=derive_seed(seed, "bag-fit"), progress=False, threads=None)
    with torch.no_grad():
        lb = bag(X); pb = lb.argmax(-1); bmap = bag.pixel_map(X, pb)
    maps["BagNet-like"] = bmap
    m = top_patch_mask(patch_scores(bmap, cfg.patch), k, cfg.canvas, cfg.patch)
    pu, io = purity_iou(m, box)
    n_loc = bag.terms(X[:1]).shape[-1] * bag.terms(X[:1]).shape[-2]
    rows.append(dict(method="BagNet-like", accuracy=float((pb == y).float().mean()),
                     fidelity_error=float((bmap.sum((1, 2, 3)) - lb.gather(1, pb[:, None])[:, 0]).abs().max()),
                     active_groups=float(n_loc), distinct_groups=float(n_loc), pairwise_iou=0.0, active_patch_share=1.0, purity=float(pu.mean()), iou=float(io.mean())))
    # insertion / deletion on the frozen backbone, patches ranked by each map (and a random ranking)
    rng = torch.Generator().manual_seed(derive_seed(seed, "rand"))
    rank = {**{n: patch_scores(mp, cfg.patch) for n, mp in maps.items()}, "random": torch.rand(len(y), cfg.n_patches, generator=rng)}
    for r in rows + [dict(method="random")]:
        ins, dele = insertion_deletion(f, X, pred_bb, rank[r["method"]], cfg.canvas, cfg.patch, cfg.curve_steps)
        r["insertion_auc"], r["deletion_auc"] = float(auc(ins).mean()), float(auc(dele).mean())
        curves[r["method"]] = (ins.mean(0), dele.mean(0))
    rand_pur = float(purity_iou(top_patch_mask(rank["random"], k, cfg.canvas, cfg.patch), box)[0].mean())
    for r in rows: r["seed"] = seed
    ex = dict(X=te.X[:4], box=te.box[:4], masks=so.masks[:4].numpy(), contrib=contrib[:4].numpy(), pred=pred[:4].numpy(), y=te.y[:4])
    return dict(rows=rows, curves=curves, condition={**cond, "random_purity": rand_pur, "backbone_logits_mean": float(full_logits.abs().mean())},
                losses=losses, example=ex)


# %% [markdown]
# A tiny run of one seed (few images, one epoch) returns one row per method, and SOP's fidelity error is
# zero to float tolerance:

# %%
_cs = Config.from_params("smoke", n_train=100, n_test=20, backbone_epochs=1, bagnet_epochs=1, shap_samples=8, ig_steps=4, curve_steps=2)
_ev = evaluate_seed(_cs, seed=0)
test_eq([r["method"] for r in _ev["rows"]], list(METHODS))
assert _ev["rows"][0]["fidelity_error"] < 1e-5 and _ev["rows"][-1]["fidelity_error"] < 1e-4
assert all(0 <= r["purity"] <= 1 and 0 <= r["iou"] <= 1 for r in _ev["rows"])
assert 1 <= _ev["rows"][0]["distinct_groups"] <= _cs.num_masks_sample
test_eq(sorted(_ev["curves"]), sorted([*METHODS, "random"]))


# %% [markdown]
# ## From runs to measurements
#
# `measurements` reduces the theorem table and the per-seed method table to the numbers the claims read.
# The LP quantities are exact and deterministic (plain numbers). Comparisons over seeds are **paired** (every
# method sees the same data, canvases and backbone within a seed): per-seed lists such as `acc/sop` and
# `acc/best_other_sann` (the best of the other SANNs *in that seed*), which the claims compare with `Diff`
# (the per-seed difference and its Student-t interval).

# %%
#| export
def theory_measurements(theory) -> dict:
    "The theorem's numbers: growth factor of the monomial optimum, the smallest rise of each binomial optimum over its last three d, and the group errors."
    M = {}
    mono = theory[theory.problem == "monomial, deletion"].sort_values("d")
    mv = mono[mono.d >= 3].per_feature_optimum.to_numpy()
    M["theory/monomial_growth_factor"] = float(np.exp(np.polyfit(mono[mono.d >= 3].d, np.log(mv), 1)[0])) if len(mv) >= 2 else None
    for split in ("end", "balanced"):
        v = theory[theory.problem == f"binomial ({split} split), insertion"].sort_values("d").per_feature_optimum.to_numpy()[-3:]
        M[f"theory/binomial_{split}_min_rise"] = float(np.diff(v).min()) if len(v) == 3 else None
    M["theory/max_group_error"] = float(theory.group_error.abs().max())
    M["theory/min_per_feature_optimum"] = float(theory[theory.d >= 3].per_feature_optimum.min())
    return M

SANNS = ("IG-F", "Occlusion-F", "KernelSHAP-F", "BagNet-like")
POSTHOC = ("IG-F", "Occlusion-F", "KernelSHAP-F")

def measurements(theory, runs, cond, num_groups:int) -> dict:
    "The metrics the claims read: the theorem's numbers, and per-seed lists (in seed order) of accuracies, purities, group diversity and the box condition."
    key = lambda m: m.lower().replace("-", "_")
    M = theory_measurements(theory)
    acc = runs.pivot_table(index="seed", columns="method", values="accuracy").sort_index()
    pur = runs.pivot_table(index="seed", columns="method", values="purity").sort_index()
    sop = runs[runs.method == "SOP"].set_index("seed").sort_index()
    c = cond.set_index("seed").sort_index()
    L = lambda x: [float(v) for v in x]
    M.update({f"acc/{key(m)}": L(acc[m]) for m in acc.columns})
    sanns, posthoc = [m for m in SANNS if m in acc.columns], [m for m in POSTHOC if m in acc.columns]   # the ImageNet-S run has no BagNet-like
    M.update({"acc/best_other_sann": L(acc[sanns].max(axis=1)), "acc/backbone": L(c.backbone_acc),
              "purity/sop": L(pur["SOP"]), "purity/best_posthoc": L(pur[posthoc].max(axis=1)),
              "sop/distinct_groups": L(sop.distinct_groups), "sop/distinct_share": L(sop.distinct_groups / num_groups),
              "sop/pairwise_iou": L(sop.pairwise_iou), "sop/max_fidelity_error": float(sop.fidelity_error.max()),
              "condition/box_gap": L(c.box_only_acc - c.no_box_acc), "condition/random_purity": float(c.random_purity.mean())})
    for m, r in runs.groupby("method"): M[f"insertion/{key(m)}"], M[f"deletion/{key(m)}"] = float(r.insertion_auc.mean()), float(r.deletion_auc.mean())
    return M


# %% [markdown]
# ## The claims, declared before the run
#
# The purity claim needs, besides the class evidence living in the box (the backbone is accurate on the box
# alone and near chance without it: accuracy gap ≥ 0.5), groups that are groups: at least half of an image's
# SOP groups must be distinct masks — otherwise SOP is one saliency mask and its purity says nothing about
# learned feature groups.

# %%
#| export
from trustlib.results import Claim, Change, Above, Below, AtLeast, AtMost, Diff, AllOf

TODAY = "2026-12-01"
BOX = AtLeast("condition/box_gap", 0.5, what="backbone accuracy on the digit's box alone minus without the box")
DISTINCT = AtLeast("sop/distinct_share", 0.5, what="share of an image's SOP groups that are distinct masks")

def _text(rule) -> str: return Claim("x", "x", "x", rule).rule_text()

_BINOMIAL = AllOf(Above("theory/binomial_end_min_rise", 0.0, tol=1e-6, what="smallest rise of the end split's LP optimum over the last three d"),
                  Above("theory/binomial_balanced_min_rise", 0.0, tol=1e-6, what="smallest rise of the balanced split's LP optimum over the last three d"),
                  partial="any")
_BEST = Above(Diff("acc/sop", "acc/best_other_sann"), 0.01, 0.0, what="SOP − best other SANN accuracy")
_PURITY = Above(Diff("purity/sop", "purity/best_posthoc"), 0.02, 0.0, what="SOP − best post-hoc purity")
_KEEPS = Above(Diff("acc/sop", "acc/backbone"), -0.03, -0.10, what="SOP − backbone accuracy")
_BOX_WHY = "the condition on the box is now the interval of the per-seed accuracy gap (it was the mean over seeds)"
_SEEDS_WHY = ("configuration, not the rule: the cpu profile runs 6 seeds instead of 3; with 3, one seed decided an interval's width, and "
              "two machines' runs of the same code read the headline and keeps_accuracy differently (inconclusive on one, not reproduced "
              "on the other) with their means on the same side; the number of seeds was chosen before any 6-seed result")

CLAIMS = [
    Claim("mono_growth", "Per-feature attributions of a monomial have deletion errors that grow exponentially with d",
          "lower bound growing with d (Theorem 2.2)",
          Above("theory/monomial_growth_factor", 1.5, 1.0, what="growth factor of the monomial's optimal deletion error per added dimension"),
          reason="exact linear programs over all subsets, d = 2 … d_max"),
    Claim("binomial_growth", "Per-feature attributions of a two-term polynomial have insertion errors that grow with d",
          "lower bound via dual-feasible LP points (Theorem 2.3)", _BINOMIAL,
          reason="with |S1| = |S3| = 1 only three subsets make p non-zero, so the optimum is capped by the error of α = 0 (4); the balanced split grows with 2^(d/2)",
          log=[Change(TODAY, "reproduced if the LP optimum rises strictly over the last three d for both splits; partially for one split", _text(_BINOMIAL),
                      "written as a rule; a split whose optimum falls now counts against the claim instead of being ignored")]),
    Claim("group_zero", "Group attributions can have zero insertion and deletion error", "zero error with one group per term",
          AllOf(AtMost("theory/max_group_error", 0.0, what="largest error of the group attributions"),
                Above("theory/min_per_feature_optimum", 0.0, what="smallest per-feature LP optimum for d ≥ 3")),
          reason="groups = supports of the polynomial's terms"),
    Claim("fidelity", "SOP is faithful by construction: the prediction equals the sum of the group attributions", "fidelity 1 (soft-fidelity loss ≈ 0)",
          Below("sop/max_fidelity_error", 1e-4, what="largest |ŷ − Σ contributions| (logits)"), reason="float32 arithmetic"),
    Claim("best_sann", "SOP is the best SANN on task performance", "ImageNet-S error: SOP 0.267 vs SHAP-F 0.306, LIME-F 0.327, BagNet 0.501, FRESH 0.537",
          _BEST, requires=BOX, headline=True,
          reason="digits on noise canvases, a small frozen CNN; post-hoc -F models keep τ of the patches, as one SOP group does",
          ours="accuracy SOP {acc/sop:.3f}; IG-F {acc/ig_f:.3f}; Occlusion-F {acc/occlusion_f:.3f}; KernelSHAP-F {acc/kernelshap_f:.3f}; BagNet-like {acc/bagnet_like:.3f}",
          log=[Change(TODAY, "reproduced if SOP − best other SANN accuracy > 0.01; partially if SOP − best other SANN accuracy > 0; interval must clear the threshold",
                      _text(_BEST), _BOX_WHY), Change("2026-12-02", _text(_BEST), _text(_BEST), "configuration, not the rule: the cpu profile trains the backbone for 20 epochs (the earlier page's value) instead of 12; at 12 the backbone did not learn on the third seed (accuracy 0.36), so the box condition could not hold"),
               Change("2026-12-04", _text(_BEST), _text(_BEST), _SEEDS_WHY)]),
    Claim("purity", "SOP's groups are purer than post-hoc explanations", "ImageNet-S purity/IoU: SOP 0.630 vs SHAP-F 0.391, LIME-F 0.360",
          _PURITY, requires=(BOX, DISTINCT), reason="purity against the digit's pasted box",
          ours="purity SOP {purity/sop:.3f} vs best post-hoc {purity/best_posthoc:.3f} (random patches {condition/random_purity:.3f}); "
               "distinct SOP groups per image {sop/distinct_groups:.2f}, mean pairwise IoU of the groups {sop/pairwise_iou:.2f}",
          log=[Change(TODAY, "reproduced if SOP − best post-hoc purity > 0.02; partially if SOP − best post-hoc purity > 0; interval must clear the threshold",
                      _text(_PURITY), "purity is graded only when at least half of an image's groups are distinct masks: groups that collapse "
                      "onto one mask (1.04 distinct of 8 on the earlier page) make it the purity of one saliency mask; " + _BOX_WHY), Change("2026-12-02", _text(_PURITY), _text(_PURITY), "configuration, not the rule: the cpu profile trains the backbone for 20 epochs (the earlier page's value) instead of 12; at 12 the backbone did not learn on the third seed (accuracy 0.36), so the box condition could not hold"),
               Change("2026-12-04", _text(_PURITY), _text(_PURITY), _SEEDS_WHY)]),
    Claim("keeps_accuracy", "SOP keeps accuracy close to its backbone", "backbone accuracy 0.903 vs SOP error 0.267 on ImageNet-S",
          _KEEPS, requires=BOX, reason="the same frozen backbone inside SOP",
          log=[Change(TODAY, "reproduced if SOP − backbone accuracy > -0.03; partially if SOP − backbone accuracy > -0.1; interval must clear the threshold",
                      _text(_KEEPS), _BOX_WHY), Change("2026-12-02", _text(_KEEPS), _text(_KEEPS), "configuration, not the rule: the cpu profile trains the backbone for 20 epochs (the earlier page's value) instead of 12; at 12 the backbone did not learn on the third seed (accuracy 0.36), so the box condition could not hold"),
               Change("2026-12-04", _text(_KEEPS), _text(_KEEPS), _SEEDS_WHY)]),
    Claim("not_best_everywhere", "SOP is faithful by construction but not best on every faithfulness metric (e.g. deletion)",
          "MultiRC: SOP best insertion 1.018, worst deletion 0.949 (FRESH 0.710)", status="illustrated",
          ours="insertion / deletion AUC: SOP {insertion/sop:.3f}/{deletion/sop:.3f}; IG-F {insertion/ig_f:.3f}/{deletion/ig_f:.3f}; "
               "Occlusion-F {insertion/occlusion_f:.3f}/{deletion/occlusion_f:.3f}; KernelSHAP-F {insertion/kernelshap_f:.3f}/{deletion/kernelshap_f:.3f}; "
               "BagNet-like {insertion/bagnet_like:.3f}/{deletion/bagnet_like:.3f}",
          reason="shown, not graded: patches ranked by each method's pixel map and scored by the frozen backbone"),
    Claim("real_data", "SOP results on ImageNet-S, CosmoGrid and MultiRC; human study; cosmology case study",
          "SOP error 0.267, purity 0.630 (ImageNet-S); MSE 0.025 (CosmoGrid); error 0.366 (MultiRC)", status="not_testable_offline",
          reason="the cpu profile runs digits on noise canvases; the full profile runs the ImageNet-S experiment (a frozen pretrained ViT on "
                 "ImageNet-S50; the claims above are graded on it there); CosmoGrid, MultiRC, the human study and the cosmology case study are out of scope"),
]

# %% [markdown]
# ### How each claim is judged

# %%
from trustlib.results import claims_table

# %%
claims_table(CLAIMS)

# %% [markdown]
# ## The `full` profile: ImageNet-S with a pretrained ViT
#
# The `full` profile (`real_data`) runs the paper's ImageNet-S experiment instead of the digits canvases: the same
# `SOP`, `train_sop`, sparsemax selector, post-hoc -F baselines, metrics and claims as above, around a frozen
# pretrained ViT (`vit`, by default `google/vit-base-patch16-224`, ImageNet-1k classes, read from the local Hugging
# Face cache) on ImageNet-S50, whose human segmentations take the place of the digit's box.
#
# - **Data.** ImageNet-S50 as the ImageNet-S tools ([LUSSeg/ImageNet-S](https://github.com/LUSSeg/ImageNet-S))
#   lay it out, under the data folder (`trustlib.data.data_dir()`, `data/cache/` in a checkout):
#   `imagenet-s/ImageNetS50/train/<wnid>/*.JPEG` (SOP is trained on `imagenet_train_per_class` images of each class,
#   drawn per seed), `imagenet-s/ImageNetS50/validation/<wnid>/*.JPEG` and
#   `imagenet-s/ImageNetS50/validation-segmentation/<wnid>/<same stem>.png` (every metric; the first
#   `imagenet_test_per_class` of each class, or all 752). A segmentation PNG stores the ImageNet-S class id of a pixel
#   as R + 256·G (0: other, 1000: ignored); the id of class *i* is its rank among the 50 sorted wnids (from 1). The
#   image's own class's pixels are its segment; ignored pixels count in neither a group nor the segment. Images
#   and masks are resized to the ViT's input (224×224, bilinear for images, nearest for masks; the ViT's image
#   processor resizes the same way) and normalised with the processor's mean and standard deviation. Labels are
#   ImageNet-1k class indices (`IMAGENET_S50`), so accuracy is over the ViT's 1,000 classes.
# - **Model.** The ViT is frozen; its pooled state $z$ is the last layer's [CLS] token (the input of its
#   classifier) and its classifier rows initialise the selector's class queries. As in the official code, the
#   group generator reads the backbone's own patch tokens: a trainable copy of the ViT's patch embedding and its first
#   `proj_layers` blocks (11 of 12: the second-to-last layer). Patches are the ViT's (16 px, 196 per image), so
#   a group keeps ⌊τ·196⌋ = 39 of them; no position code is added (the tokens carry their position). A masked input
#   is $g_j\odot x$ on the normalised pixels (a removed patch is the processor's mean colour).
# - **Baselines and metrics.** Integrated gradients, occlusion (16-px patches) and KernelSHAP (patches as players)
#   explain the ViT's prediction; each keeps its top ⌊τ·196⌋ patches, as one SOP group does (the -F SANNs). No
#   BagNet: the paper's BagNet is an ImageNet-pretrained network that the hub does not serve; `best_other_sann` is the
#   best -F model. Purity, IoU, distinct groups, insertion/deletion and the condition (the ViT's accuracy on the
#   segment alone minus without it: `condition/box_gap`) are computed by the same functions as on the digits.
# - **Not here.** CosmoGrid (regression of cosmological parameters) and MultiRC (BERT, text) are out of scope of
#   this profile; so are the human study and the cosmology case study.

# %%
#| export
from pathlib import Path
from trustlib.data import data_dir, DataUnavailable

# ImageNet-S50's 50 classes (ImageNet wnids) and their ImageNet-1k class indices (the output units of an ImageNet-1k classifier)
IMAGENET_S50 = {
    "n01443537": 1, "n01491361": 3, "n01531178": 11, "n01644373": 31, "n02104029": 222, "n02119022": 277, "n02123597": 284,
    "n02133161": 295, "n02165456": 301, "n02281406": 325, "n02325366": 330, "n02342885": 333, "n02396427": 342, "n02483362": 368,
    "n02504458": 386, "n02510455": 388, "n02690373": 404, "n02747177": 412, "n02783161": 418, "n02814533": 436, "n02859443": 449,
    "n02917067": 466, "n02992529": 487, "n03014705": 492, "n03047690": 502, "n03095699": 510, "n03197337": 531, "n03201208": 532,
    "n03445777": 574, "n03452741": 579, "n03584829": 606, "n03630383": 617, "n03775546": 659, "n03791053": 670, "n03874599": 695,
    "n03891251": 703, "n04026417": 748, "n04335435": 829, "n04380533": 846, "n04404412": 851, "n04447861": 861, "n04507155": 879,
    "n04522168": 883, "n04557648": 898, "n04562935": 900, "n04612504": 914, "n06794110": 919, "n07749582": 951, "n07831146": 959,
    "n12998815": 992}
IMAGENET_S_IGNORE = 1000      # segmentation id of pixels the annotators left out

def imagenet_s_root() -> Path:
    "Where the ImageNet-S50 folders are read: `<data folder>/imagenet-s/ImageNetS50`."
    return data_dir() / "imagenet-s" / "ImageNetS50"

_IMAGENET_S_HOW = ("ImageNet-S is built from a local ImageNet-1k copy by the ImageNet-S tools (github.com/LUSSeg/ImageNet-S: "
                   "`datapreparation.sh` with mode 50, then `datapreparation_anno.sh ... 50` for the segmentations; ImageNet's "
                   "licence applies); put its ImageNetS50/ folder (train/, validation/, validation-segmentation/) at {dir}")

@dataclass
class SegImages:
    X: np.ndarray                 # [N, S, S, 3] uint8 images resized to the ViT's input
    y: np.ndarray                 # [N] int64 ImageNet-1k class indices
    seg: np.ndarray|None          # [N, 1, S, S] float32: 1 on the pixels of the image's own class (validation only)
    valid: np.ndarray|None        # [N, 1, S, S] float32: 0 on pixels the annotation ignores (validation only)
    files: list                   # the image files, in order

def _segment_ids(path:Path, size:int) -> np.ndarray:
    "ImageNet-S class ids [size, size] of a segmentation PNG (R + 256·G), resized with nearest neighbours."
    from PIL import Image
    with Image.open(path) as im: a = np.asarray(im.convert("RGB")).astype(np.int32)
    ids = a[..., 0] + 256 * a[..., 1]
    return np.asarray(Image.fromarray(ids).resize((size, size), Image.NEAREST))

def load_imagenet_s(split:str, # 'train' or 'validation' (with its segmentations)
                    per_class:int=0, # images per class (0: all); train: drawn with `seed`, validation: the first in name order
                    size:int=224, seed:int=0, root=None, # default root: imagenet_s_root()
                    ) -> SegImages:
    "ImageNet-S50 images (resized to `size`), their ImageNet-1k labels and, for the validation split, the segment of each image's class."
    from PIL import Image
    if split not in ("train", "validation"): raise ConfigError(f"split must be 'train' or 'validation', got {split!r}")
    root = Path(root) if root is not None else imagenet_s_root()
    how = _IMAGENET_S_HOW.format(dir=root)
    d = root / split
    wnids = sorted(p.name for p in d.iterdir() if p.is_dir()) if d.is_dir() else []
    if not wnids: raise DataUnavailable(f"ImageNet-S50 {split} images (one folder per wnid)", [d], how)
    unknown = [w for w in wnids if w not in IMAGENET_S50]
    if unknown: raise DataUnavailable(f"ImageNet-S50 {split} images ({len(unknown)} class folders are not ImageNet-S50 classes, e.g. {unknown[0]})", [d], how)
    cls_id = {w: i + 1 for i, w in enumerate(sorted(IMAGENET_S50))}
    rng = np.random.default_rng(seed)
    files = []
    for w in wnids:
        fs = sorted(p for p in (d / w).iterdir() if p.suffix.lower() in (".jpeg", ".jpg", ".png"))
        if per_class and len(fs) > per_class:
            fs = [fs[i] for i in np.sort(rng.choice(len(fs), per_class, replace=False))] if split == "train" else fs[:per_class]
        files += [(w, f) for f in fs]
    if not files: raise DataUnavailable(f"ImageNet-S50 {split} images (the class folders are empty)", [d], how)
    n = len(files)
    X = np.empty((n, size, size, 3), np.uint8); y = np.array([IMAGENET_S50[w] for w, _ in files], np.int64)
    seg = valid = None
    if split == "validation": seg, valid = np.zeros((n, 1, size, size), np.float32), np.zeros((n, 1, size, size), np.float32)
    for i, (w, f) in enumerate(files):
        with Image.open(f) as im: X[i] = np.asarray(im.convert("RGB").resize((size, size), Image.BILINEAR))
        if split == "validation":
            m = root / "validation-segmentation" / w / (f.stem + ".png")
            if not m.is_file(): raise DataUnavailable(f"the ImageNet-S50 segmentation of {w}/{f.name}", [m], how)
            ids = _segment_ids(m, size)
            seg[i, 0], valid[i, 0] = ids == cls_id[w], ids != IMAGENET_S_IGNORE
    return SegImages(X, y, seg, valid, [str(f) for _, f in files])


# %% [markdown]
# The loader on a tiny folder in the real layout (two classes; the segment of the first image is its upper-left
# quarter, with an ignored strip), and its message when the folder is missing:

# %%
import tempfile
from PIL import Image as _Image

# %%
with tempfile.TemporaryDirectory() as _t:
    _r = Path(_t) / "ImageNetS50"
    for _w, _stem in (("n01443537", "ILSVRC2012_val_00000001"), ("n12998815", "ILSVRC2012_val_00000002")):
        (_r / "validation" / _w).mkdir(parents=True); (_r / "validation-segmentation" / _w).mkdir(parents=True)
        _Image.fromarray(np.full((40, 60, 3), 200, np.uint8)).save(_r / "validation" / _w / f"{_stem}.JPEG")
        _ids = np.zeros((40, 60), np.int32); _ids[:20, :30] = 1 if _w == "n01443537" else 50; _ids[:, 58:] = 1000
        _Image.fromarray(np.stack([_ids % 256, _ids // 256, np.zeros_like(_ids)], -1).astype(np.uint8)).save(_r / "validation-segmentation" / _w / f"{_stem}.png")
    _d = load_imagenet_s("validation", size=32, root=_r)
    test_eq(_d.y.tolist(), [1, 992]); test_eq(_d.X.shape, (2, 32, 32, 3))
    test_eq(_d.seg[0, 0, :16, :16].mean(), 1.0); test_eq(_d.seg[0, 0, 16:].sum(), 0.0)   # upper-left quarter: the class's segment
    test_eq(_d.seg[1, 0, :16, :16].mean(), 1.0)                                           # class 50 (the last sorted wnid) in the second
    test_eq(_d.valid[0, 0, :, -1].sum(), 0.0); test_eq(_d.valid[0, 0, :, :30].mean(), 1.0)
    test_fail(lambda: load_imagenet_s("train", root=_r), contains="ImageNet-S50 train images")
test_eq(len(IMAGENET_S50), 50); test_eq(len(set(IMAGENET_S50.values())), 50)


# %% [markdown]
# **The ViT.** `load_vit` reads the classifier from the local cache (never the network) onto the device;
# `vit_outputs` is the backbone function SOP calls: logits and the [CLS] state of the last layer, in chunks.
# `ViTProjection` is the generator's trainable copy of the patch embedding and the first blocks, giving the
# patch tokens as a feature map.

# %%
#| export
def vit_norm(hub_id:str) -> tuple[list[float], list[float]]:
    "Mean and standard deviation of the ViT's image processor (its `preprocessor_config.json`; ImageNet's ViT uses 0.5, 0.5)."
    import json
    p = Path(hub_id) / "preprocessor_config.json"
    if not p.is_file():
        try:
            from huggingface_hub import try_to_load_from_cache
            q = try_to_load_from_cache(hub_id, "preprocessor_config.json"); p = Path(q) if isinstance(q, str) else p
        except Exception: pass
    c = json.loads(p.read_text()) if p.is_file() else {}
    return list(c.get("image_mean", [0.5] * 3)), list(c.get("image_std", [0.5] * 3))

def load_vit(hub_id:str, device:str="cpu") -> nn.Module:
    "The frozen `ViTForImageClassification` `hub_id` from the local Hugging Face cache (or a local folder), in eval mode on `device`."
    from transformers import ViTForImageClassification
    from transformers.utils import logging as hf_logging
    hf_logging.set_verbosity_error()
    try: model = ViTForImageClassification.from_pretrained(hub_id, local_files_only=True)
    except (OSError, ValueError) as e:
        from huggingface_hub.constants import HF_HUB_CACHE
        raise ResourceUnavailable(f"the ViT {hub_id!r} is neither a local folder nor in the local Hugging Face cache ({HF_HUB_CACHE}); "
                                  f"fetch it once on a machine with the network (`hf download {hub_id}`), then run offline") from e
    model.eval().to(device)
    for p in model.parameters(): p.requires_grad_(False)
    return model

def _vit_blocks(vit_model) -> nn.ModuleList:
    v = vit_model.vit
    return v.layers if hasattr(v, "layers") else v.encoder.layer

def vit_outputs(model, x:torch.Tensor, chunk:int=256) -> tuple[torch.Tensor, torch.Tensor]:
    "(logits, [CLS] state of the last layer) of a `ViTForImageClassification` on pixel values `x`, in chunks of `chunk` images."
    outs = []
    for c in x.split(chunk):
        z = model.vit(pixel_values=c).last_hidden_state[:, 0]
        outs.append((model.classifier(z), z))
    return torch.cat([o[0] for o in outs]), torch.cat([o[1] for o in outs])

class ViTProjection(nn.Module):
    "A trainable copy of a ViT's patch embedding and first `n_layers` blocks; returns the patch tokens as a map [B, D, h, w]."
    def __init__(self, vit_model, n_layers:int):
        super().__init__()
        import copy
        blocks = _vit_blocks(vit_model)
        if not 1 <= n_layers <= len(blocks): raise ConfigError(f"parameter 'proj_layers': {n_layers} is not in 1..{len(blocks)} (the ViT's blocks)")
        self.embeddings = copy.deepcopy(vit_model.vit.embeddings)
        self.blocks = nn.ModuleList(copy.deepcopy(blocks[i]) for i in range(n_layers))
        for p in self.parameters(): p.requires_grad_(True)
    def forward(self, x):
        h = self.embeddings(x)
        for b in self.blocks:
            h = b(h); h = h[0] if isinstance(h, tuple) else h
        t = h[:, 1:]; g = math.isqrt(t.shape[1])
        return t.transpose(1, 2).reshape(len(x), t.shape[-1], g, g)

def make_vit_sop(vit, cfg) -> "SOP":
    "The SOP model of `cfg` around a frozen ViT: its generator reads a trainable copy of the ViT's first `proj_layers` blocks."
    c = vit.config
    return SOP(vit, vit.classifier.weight, in_channels=c.num_channels, image_size=c.image_size, patch=c.patch_size, d_proj=c.hidden_size,
               tau=cfg.tau, num_masks_max=cfg.num_masks_max, num_masks_sample=cfg.num_masks_sample, gen_scale=cfg.gen_scale,
               sel_scale=cfg.sel_scale, blur=cfg.blur, backbone_fn=vit_outputs, projection=ViTProjection(vit, cfg.proj_layers),
               pos_scale=cfg.pos_scale)

class PixelPrep:
    "uint8 images [B, S, S, 3] (numpy or tensor) → normalised pixel values [B, 3, S, S] on `device`."
    def __init__(self, mean, std, device:str="cpu"):
        self.mean, self.std, self.device = torch.tensor(mean).view(1, 3, 1, 1), torch.tensor(std).view(1, 3, 1, 1), device
    def __call__(self, X):
        x = torch.as_tensor(np.asarray(X)).permute(0, 3, 1, 2).float() / 255.0
        return ((x - self.mean) / self.std).to(self.device)


# %% [markdown]
# A small random ViT (the real model's 16-px patches on a 64-px input, two blocks): SOP around it keeps fidelity, a
# group keeps ⌊0.2·16⌋ = 3 of its patches, training moves the generator and the selector but not the ViT.

# %%
import transformers as _T

# %%
torch.manual_seed(0)
_vit = _T.ViTForImageClassification(_T.ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                                                  image_size=64, patch_size=16, num_labels=1000)).eval()
for _p in _vit.parameters(): _p.requires_grad_(False)
_cv = Config.from_params("smoke", real_data=True, proj_layers=1, num_masks_sample=3, pos_scale=0.0)
_sv = make_vit_sop(_vit, _cv).eval()
_prep = PixelPrep([0.5] * 3, [0.5] * 3)
_xi = np.random.default_rng(0).integers(0, 256, (2, 64, 64, 3), dtype=np.uint8)
_ov = sop_predict(_sv, _xi, prep=_prep)
test_close(_ov.contributions.sum(-1), _ov.logits, eps=1e-4)
test_eq(_ov.masks.sum((-2, -1)), torch.full((2, 3), 3.0 * 256))
test_eq(tuple(ViTProjection(_vit, 2)(_prep(_xi)).shape), (2, 32, 4, 4))
_b0 = {k: v.clone() for k, v in _vit.state_dict().items()}
_g0 = _sv.generator.proj.embeddings.patch_embeddings.projection.weight.clone()
train_sop(_sv, SegImages(_xi, np.array([1, 3]), None, None, []), epochs=1, batch_size=2, prep=_prep)
assert all(torch.equal(_b0[k], v) for k, v in _vit.state_dict().items())                 # the ViT is frozen
assert not torch.equal(_g0, _sv.generator.proj.embeddings.patch_embeddings.projection.weight)   # its copy in the generator trains
test_fail(lambda: ViTProjection(_vit, 3), contains="'proj_layers'")
test_fail(lambda: load_vit("no-such-org/no-such-vit"), contains="no-such-org/no-such-vit")


# %% [markdown]
# **One seed on ImageNet-S.** `evaluate_imagenet_seed` trains SOP on the seed's training images and computes
# every metric on the validation images; it returns rows, curves and conditions in the form `evaluate_seed` does,
# so `run` aggregates, measures and grades them with the same code.

# %%
#| export
def evaluate_imagenet_seed(cfg:Config, seed:int, vit, test:SegImages, prep:PixelPrep, progress:bool=False) -> dict:
    "SOP and the post-hoc -F baselines around the frozen ViT on ImageNet-S50: per-method metric rows, insertion/deletion curves, condition checks, example groups."
    dev, c = prep.device, vit.config
    S, Pp = c.image_size, c.patch_size
    P = (S // Pp) ** 2; k = n_keep(P, cfg.tau)
    tr = load_imagenet_s("train", cfg.imagenet_train_per_class, S, derive_seed(seed, "in-train"))
    X = torch.cat([prep(test.X[s:s + cfg.vit_batch]).cpu() for s in range(0, len(test.X), cfg.vit_batch)])
    y, box = torch.as_tensor(test.y), torch.as_tensor(test.seg)
    valid = torch.as_tensor(test.valid)

    @torch.no_grad()
    def f(x):                                                                   # the frozen ViT's logits, CPU in and out
        return torch.cat([vit_outputs(vit, x[s:s + cfg.vit_batch].to(dev), cfg.vit_batch)[0].float().cpu() for s in range(0, len(x), cfg.vit_batch)])
    fg = lambda x: vit_outputs(vit, x, cfg.vit_batch)[0]                       # on the device, with gradients (captum)
    full_logits = f(X); pred_bb = full_logits.argmax(-1)
    cond = dict(backbone_acc=float((pred_bb == y).float().mean()),
                box_only_acc=float((f(X * box).argmax(-1) == y).float().mean()),
                no_box_acc=float((f(X * (1 - box)).argmax(-1) == y).float().mean()))
    torch.manual_seed(derive_seed(seed, "sop-init"))
    sop = make_vit_sop(vit, cfg).to(dev)
    losses = train_sop(sop, tr, epochs=cfg.epochs, lr=cfg.lr, weight_decay=cfg.weight_decay, batch_size=cfg.batch_size,
                       seed=derive_seed(seed, "sop-fit"), progress=progress, prep=prep)
    so = sop_predict(sop, test.X, batch_size=cfg.batch_size, prep=prep)
    del sop
    pred = so.logits.argmax(-1); ar = torch.arange(len(y))
    contrib, w = so.contributions[ar, pred], so.weights[ar, pred]
    active = w > 0
    pur, iou = purity_iou(so.masks * valid, box)                               # ignored pixels count in neither the group nor the segment
    top_group = contrib.argmax(-1)
    maps = {"SOP": (contrib[..., None, None] * so.masks).sum(1, keepdim=True)}
    rows, curves = [], {}
    rows.append(dict(method="SOP", accuracy=float((pred == y).float().mean()),
                     fidelity_error=float((so.contributions.sum(-1) - so.logits).abs().max()),
                     active_groups=float(active.sum(-1).float().mean()),
                     distinct_groups=float(np.mean([len(torch.unique(g.flatten(1), dim=0)) for g in so.masks])),
                     pairwise_iou=mean_pairwise_iou(so.masks),
                     active_patch_share=float(((so.masks * active[..., None, None]).amax(1) > 0).float().mean()),
                     purity=float(((w * pur).sum(-1) / w.sum(-1)).mean()), iou=float(iou[ar, top_group].mean())))
    for name, meth in (("IG-F", "ig"), ("Occlusion-F", "occlusion"), ("KernelSHAP-F", "kernelshap")):
        parts = []
        for s in range(0, len(y), cfg.batch_size):                              # on the device, a batch of images at a time
            xb, tb = X[s:s + cfg.batch_size].to(dev), pred_bb[s:s + cfg.batch_size].to(dev)
            parts.append(posthoc_map(meth, vit, xb, tb, cfg, seed=derive_seed(seed, "shap", s), f=fg, canvas=S, patch=Pp,
                                     internal_batch=cfg.vit_batch).detach().float().cpu())
        amap = torch.cat(parts); maps[name] = amap
        sc = patch_scores(amap, Pp)
        m = top_patch_mask(sc, k, S, Pp)
        lf = f(X * m); pf = lf.argmax(-1)
        sel = sc.topk(k, -1).values.sum(-1) * (1.0 if meth != "occlusion" else 1.0 / Pp ** 2)
        pu, io = purity_iou(m * valid, box)
        rows.append(dict(method=name, accuracy=float((pf == y).float().mean()),
                         fidelity_error=float((lf.gather(1, pred_bb[:, None])[:, 0] - sel).abs().mean()),
                         active_groups=1.0, distinct_groups=1.0, pairwise_iou=1.0, active_patch_share=k / P, purity=float(pu.mean()), iou=float(io.mean())))
    rng = torch.Generator().manual_seed(derive_seed(seed, "rand"))
    rank = {**{n: patch_scores(mp, Pp) for n, mp in maps.items()}, "random": torch.rand(len(y), P, generator=rng)}
    for r in rows + [dict(method="random")]:
        ins, dele = insertion_deletion(f, X, pred_bb, rank[r["method"]], S, Pp, cfg.curve_steps)
        r["insertion_auc"], r["deletion_auc"] = float(auc(ins).mean()), float(auc(dele).mean())
        curves[r["method"]] = (ins.mean(0), dele.mean(0))
    rand_pur = float(purity_iou(top_patch_mask(rank["random"], k, S, Pp) * valid, box)[0].mean())
    for r in rows: r["seed"] = seed
    n_ex = min(4, len(y))
    ex = dict(X=test.X[:n_ex].transpose(0, 3, 1, 2), box=test.seg[:n_ex], masks=so.masks[:n_ex].numpy(), contrib=contrib[:n_ex].numpy(),
              pred=pred[:n_ex].numpy(), y=test.y[:n_ex])
    return dict(rows=rows, curves=curves, condition={**cond, "random_purity": rand_pur, "backbone_logits_mean": float(full_logits.abs().mean())},
                losses=losses, example=ex)


# %% [markdown]
# ## `run`: the whole experiment

# %%
#| export
def _imagenet_setup(cfg:Config):
    "For `real_data`: the frozen ViT on its device, the ImageNet-S50 validation images with their segments, and the pixel preparation (ResourceUnavailable naming what is missing)."
    from trustlib.config import get_device
    test = load_imagenet_s("validation", cfg.imagenet_test_per_class)      # the data first: its message names the folder to fill
    dev = get_device(cfg.device)
    vit = load_vit(cfg.vit, dev)
    if vit.config.image_size != test.X.shape[1]: test = load_imagenet_s("validation", cfg.imagenet_test_per_class, vit.config.image_size)
    return vit, test, PixelPrep(*vit_norm(cfg.vit), dev)

def run(cfg:Config, progress:bool=True) -> Result:
    "Run the SOP reproduction described by `cfg`: theorem LPs, then SOP and the baselines over `n_seeds` seeds (digits canvases, or ImageNet-S with a ViT for `real_data`)."
    from tqdm.auto import tqdm
    setup = _imagenet_setup(cfg) if cfg.real_data else None
    theory = theorem_table(cfg.d_max)
    rows, conds, curves, losses, example = [], [], [], [], None
    with torch_threads(cfg.n_threads):
        for i in tqdm(range(cfg.n_seeds), desc="seeds", disable=not progress):
            s = derive_seed(cfg.seed, i)
            ev = evaluate_seed(cfg, s) if setup is None else evaluate_imagenet_seed(cfg, s, *setup)
            rows += [{**r, "seed": i} for r in ev["rows"]]
            conds.append({**ev["condition"], "seed": i})
            for m, (a, b) in ev["curves"].items():
                for j, (vi, vd) in enumerate(zip(a, b)):
                    curves.append(dict(seed=i, method=m, fraction=j / cfg.curve_steps, insertion=float(vi), deletion=float(vd)))
            losses += [dict(seed=i, epoch=e + 1, loss=l) for e, l in enumerate(ev["losses"])]
            if example is None: example = ev["example"]
    runs, cond = pd_frame(rows), pd_frame(conds)
    cols = ["accuracy", "fidelity_error", "active_groups", "distinct_groups", "pairwise_iou", "active_patch_share", "purity", "iou", "insertion_auc", "deletion_auc"]
    summary = runs.groupby("method", sort=False)[cols].agg(["mean", "std"]).round(4)
    tables = dict(theory=theory, runs=runs, summary=summary, condition=cond, curves=pd_frame(curves), losses=pd_frame(losses))
    return Result(paper="sop", config=cfg.to_dict(), metrics=measurements(theory, runs, cond, cfg.num_masks_sample), tables=tables,
                  figures=make_figures(cfg, theory, tables, example))

def pd_frame(rows):
    import pandas as pd
    return pd.DataFrame(rows)

def make_figures(cfg:Config, theory, tables, example) -> dict:
    "The LP optima against d, accuracy/purity per method, insertion and deletion curves, and example SOP groups."
    import matplotlib.pyplot as plt, seaborn as sns
    figs = {}
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    sns.lineplot(data=theory, x="d", y="per_feature_optimum", hue="problem", style="problem", markers=True, ax=ax)
    ax.set_yscale("log"); ax.set_xlabel("dimension d (features)"); ax.set_ylabel("minimal total error of any per-feature attribution")
    ax.set_title("per-feature lower bound (exact LP); group attributions: 0"); fig.tight_layout(); figs["theorem"] = fig
    runs = tables["runs"][tables["runs"].method.isin(METHODS)]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, col, lab in zip(axes, ("accuracy", "purity", "iou"), ("test accuracy", "purity of the explanation (share inside the box)", "IoU with the digit box")):
        sns.barplot(data=runs, x="method", y=col, errorbar="sd", ax=ax, order=[m for m in METHODS if m in set(runs.method)])
        ax.set_xlabel(""); ax.set_ylabel(lab); ax.tick_params(axis="x", rotation=30)
    axes[1].axhline(tables["condition"].random_purity.mean(), ls="--", c="grey", label="random patches"); axes[1].legend()
    fig.tight_layout(); figs["methods"] = fig
    cv = tables["curves"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for ax, col in zip(axes, ("insertion", "deletion")):
        sns.lineplot(data=cv, x="fraction", y=col, hue="method", style="method", markers=True, errorbar="sd", ax=ax)
        ax.set_xlabel(f"fraction of patches {'kept' if col == 'insertion' else 'removed'} (ranked by each method)")
        ax.set_ylabel("backbone probability of its prediction"); ax.set_title(col)
    fig.tight_layout(); figs["curves"] = fig
    if example is not None:
        n, m = len(example["y"]), example["masks"].shape[1]
        fig, axes = plt.subplots(n, m + 1, figsize=(1.6 * (m + 1), 1.7 * n), squeeze=False)
        rgb = example["X"].shape[1] == 3                                       # ImageNet-S: uint8 RGB images
        show = (lambda a, im: a.imshow(im.transpose(1, 2, 0) / 255.0)) if rgb else (lambda a, im: a.imshow(im[0], cmap="gray"))
        for i in range(n):
            show(axes[i, 0], example["X"][i]); axes[i, 0].contour(example["box"][i, 0], levels=[0.5], colors="r", linewidths=0.8)
            axes[i, 0].set_title(f"y={example['y'][i]}, ŷ={example['pred'][i]}", fontsize=8)
            for j in range(m):
                a = axes[i, j + 1]; show(a, example["X"][i] * example["masks"][i, j])
                a.contour(example["box"][i, 0], levels=[0.5], colors="r", linewidths=0.8)
                a.set_title(f"{example['contrib'][i, j]:+.2f}", fontsize=8, color="k" if example["contrib"][i, j] != 0 else "0.6")
        for a in axes.flat: a.set_xticks([]); a.set_yticks([])
        fig.suptitle("SOP groups (title: contribution to the predicted logit; 0 = not selected); red: " + ("the class's segment" if rgb else "digit box"), fontsize=9)
        fig.tight_layout(); figs["groups"] = fig
    plt.close("all")
    return figs


# %% [markdown]
# One seed end to end on the rehearsal's tiny ImageNet-S50 folder (three classes, one image each, written by
# `trustlib.rehearse.write_imagenet_s` in the real layout) with the small random ViT above saved as a local folder:
# every method has its row, SOP's fidelity holds, purities are shares, and `measurements` reads the rows as it reads
# the digits' (no BagNet-like here: the best other SANN is the best -F model).

# %%
import os
from trustlib.rehearse import write_imagenet_s
from transformers.utils import logging as _hl
from unittest.mock import patch as _patch

# %%
with tempfile.TemporaryDirectory() as _t, _patch.dict(os.environ, TRUSTLIB_DATA=_t):   # the data folder, restored afterwards
    write_imagenet_s(_t, n_train=1, n_val=1)
    _hl.disable_progress_bar(); _vit.save_pretrained(Path(_t) / "vit")
    _ce = Config.from_params("smoke", real_data=True, vit=str(Path(_t) / "vit"), proj_layers=1, num_masks_sample=3, pos_scale=0.0,
                             imagenet_train_per_class=1, imagenet_test_per_class=1, ig_steps=2, shap_samples=8, curve_steps=2, batch_size=2)
    _vv, _tv, _pp = _imagenet_setup(_ce)
    _ei = evaluate_imagenet_seed(_ce, 0, _vv, _tv, _pp)
test_eq(_tv.X.shape, (3, 64, 64, 3)); test_eq(sorted(_tv.y.tolist()), [1, 222, 992])
test_eq([r["method"] for r in _ei["rows"]], ["SOP", "IG-F", "Occlusion-F", "KernelSHAP-F"])
assert _ei["rows"][0]["fidelity_error"] < 1e-4 and all(0 <= r["purity"] <= 1 and 0 <= r["iou"] <= 1 for r in _ei["rows"])
_mi = measurements(theorem_table(3), pd_frame([{**r, "seed": 0} for r in _ei["rows"]]), pd_frame([{**_ei["condition"], "seed": 0}]), 3)
test_eq(_mi["acc/best_other_sann"], [max(r["accuracy"] for r in _ei["rows"][1:])])

# %% [markdown]
# ## The experiment
#
# One call runs everything for the chosen profile (`smoke` by default here; the committed page shows a
# `cpu` run: 6 seeds, 1,200 training and 300 test images, 8 groups per image, d up to 10).

# %%
from trustlib.results import run_experiment

# %%
result = run_experiment(run, cfg, CLAIMS)

# %% [markdown]
# The condition the purity comparison needs — the class evidence lives in the digit's box — holds when the
# backbone is accurate on the box alone and near chance (0.1) without it:

# %%
result.tables["condition"].round(3)

# %% [markdown]
# The theorem: the smallest total error of any per-feature attribution for each d, beside the (zero) error
# of the group attribution.

# %%
result.tables["theory"].round(3)

# %%
result.figures["theorem"]

# %% [markdown]
# Every method (mean and standard deviation over seeds). `active_groups` is the number of groups with a
# non-zero weight (SOP), one top-τ group (-F) or the number of local windows (BagNet-like);
# `distinct_groups` counts the different masks among an image's groups (SOP's queries may propose the
# same group); `active_patch_share` is the share of patches that the explanation uses.

# %%
result.tables["summary"]

# %%
result.figures["methods"]

# %%
result.figures["curves"]

# %%
result.figures["groups"]

# %% [markdown]
# ## Paper vs. us

# %%
result.verdict_table()

# %% [markdown]
# The table above is the verdict of the run shown on this page; the rules were fixed before the run, and
# the `ours` column gives every number with its interval. How to read it:
#
# - **The theorem is exact, the definitions are ours.** The LPs give the true minimum over all per-feature
#   attributions, not a bound. The monomial's deletion error grows roughly like 2^d. For the binomial, the
#   answer depends on the split: with one feature in S1 and S3 only three subsets make the polynomial
#   non-zero, so no attribution can do worse than α = 0 with error 4, and the optimum stops growing; with a
#   balanced split the optimum grows like 2^(d/2). The paper's own split and normalisation may differ.
# - **A toy vision task.** Digits on noise are a stand-in for ImageNet-S with a ViT; the box replaces the
#   human segmentation. The post-hoc -F models and SOP's groups keep the same number of patches, and all
#   of them share the same frozen backbone, which was trained with patch dropping so that masked inputs are
#   in distribution.
# - **Do the groups differ?** `distinct_groups` in the summary says how many different masks an image's
#   groups form and `pairwise_iou` how much they overlap. Groups that collapse onto one mask would make SOP
#   one learned saliency mask (pure, and accurate because the digit is the salient part), not a set of parts
#   that sparsemax chooses between; the purity claim is graded only when at least half of the groups are
#   distinct. Distinct groups cost accuracy on this toy: a group keeps 20 % of the patches and the digit
#   covers a quarter of the canvas, so most groups see little of it and the prediction rests on the few that
#   do.
# - **Magnitudes are not comparable** with the paper's; the direction of each comparison is what the
#   verdicts grade.
