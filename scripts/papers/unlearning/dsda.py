# %% [markdown]
# # DSDA: source-free unlearning with energy-guided data synthesis
#
# > DSDA: class unlearning without any training data, by sampling synthetic inputs from the model's own energy (AEGDS) and unlearning on them with a discrimination-aware, conflict-averse multitask update (DAMO).

# %% [markdown]
# Wang, Chen, Liu, Liao, Wang and Zheng (ICML 2025, spotlight) ask how to make a trained classifier forget
# whole classes when none of its training data is left: only the weights and the list of class labels.
# Their method, DSDA, has two stages. **AEGDS** turns the classifier into an energy model,
# E(x, y) = -log softmax(f(x))_y, and draws synthetic inputs for every class with Langevin dynamics,
# sped up by a second-order (Heun) step and heavy-ball momentum. **DAMO** then fine-tunes the model on those
# synthetic inputs with three losses (keep the retain classes, forget the forget classes, keep retain features
# compact around their class centres: a centre-based Circle loss) and combines their gradients with a
# conflict-averse update (CAGrad with a weighted anchor). The paper reports 0 % forget accuracy on every
# task, the best retain accuracy among source-free methods, a membership-inference rate close to a retrained
# model, and 68.5 % less execution time than the source-free baselines GKT and ISPF.
#
# Paper: [PMLR 267:62518](https://proceedings.mlr.press/v267/wang25m.html) (OpenReview `tqL8gJsuS5`).
# Official code: none published. Everything below is written from the paper's equations and Algorithm 1.
#
# ::: {.callout-note}
# ## What we reproduce / what we cannot
# - **Reproduced at laptop scale:** the full method (energy and score, EGDS, AEGDS as in Algorithm 1 with a
#   switch for the Eq. 5 variant, the three DAMO losses, the conflict-averse update) on scikit-learn's 8x8
#   digits with a small CNN trained from scratch; single-class forgetting averaged over all ten classes and
#   multi-class forgetting (2 and 4 classes), over several seeds, against Original, Retrain, fine-tuning and
#   NegGrad+ on real data (references that do use data), noise-only synthetic data, plain EGDS, and the two
#   ablations; the sampler-efficiency claim measured at equal numbers of score evaluations.
# - **Our choices, not the paper's:** the forget loss (its formula is missing from the available text; we use
#   cross-entropy toward each forget sample's most probable retain class under the original model, with a
#   random retain class re-drawn each step and gradient ascent as options), the
#   class centres (mean synthetic feature of each class under the original model), a small noise scale in
#   the sampler (pure sqrt(2 alpha) noise swamps 8x8 images), a stopping rule for DAMO that looks only at held-out
#   *synthetic* forget samples, the CNN width (about 6k parameters rather than ResNet-18) and all step
#   sizes. How each was chosen is said where it is set.
# - **Not testable offline:** the CIFAR-10/100 and PinsFace tables, and the 68.5 % time gain over GKT and ISPF
#   (neither baseline is implemented here). The `full` profile's code path exists and stops with a clear
#   message when the CIFAR-10 arrays are missing.
# :::

# %%
#| default_exp unlearning.dsda

# %%
#| export
from __future__ import annotations
import contextlib, copy, math, os, time
from dataclasses import dataclass
from pathlib import Path
import numpy as np
import torch
import torch.nn.functional as F
from trustlib.config import BaseConfig, param, ConfigError, ResourceUnavailable, derive_seed, torch_threads
from trustlib.models import SmallCNN, fit, predict_proba
from trustlib.results import Result, Rule, judge, mean_ci

# %%
#| hide
from fastcore.test import test_eq, test_close, test_fail
from trustlib.results import run_experiment
import pandas as pd
import warnings
from tqdm import TqdmWarning

# %%
#| hide
warnings.filterwarnings("ignore", category=TqdmWarning)   # no notebook widgets under papermill: plain-text progress bars are fine

# %%
from typing import Optional

# %% tags=["parameters"]
profile: str = "smoke"  # smoke (CI, < 60 s) | cpu (published results, minutes) | full (paper scale)
seed: Optional[int] = None  # base random seed; every random choice derives from it
n_seeds: Optional[int] = None  # repetitions (independent splits, models, samples)
forget_classes: Optional[list[int]] = None  # single-class tasks: classes forgotten one at a time
multi_sizes: Optional[list[int]] = None  # multi-class tasks: numbers of classes forgotten together
n_multi_sets: Optional[int] = None  # multi-class tasks: random class sets per size and seed (0: none)
width: Optional[int] = None  # SmallCNN width (channels of the first conv)
train_epochs: Optional[int] = None  # epochs of the original and retrained models
train_lr: Optional[float] = None  # Adam learning rate of the original and retrained models
batch_size: Optional[int] = None  # batch size of the original and retrained models
n_per_class: Optional[int] = None  # synthetic samples per class
aegds_steps: Optional[int] = None  # AEGDS steps (two score evaluations each)
aegds_alpha: Optional[float] = None  # AEGDS step size alpha
dt: Optional[float] = None  # AEGDS time step Delta t
gamma: Optional[float] = None  # AEGDS momentum gamma
egds_steps: Optional[int] = None  # EGDS (plain Langevin) steps
egds_alpha: Optional[float] = None  # EGDS step size alpha
noise_scale: Optional[float] = None  # multiplies the sampler noise sqrt(2 alpha dt); 1 is pure Langevin
variant: Optional[str] = None  # AEGDS update: Algorithm 1 as written, or the placement of Eq. 5
energy_kind: Optional[str] = None  # energy: -log softmax (the paper) or -logit (JEM)
damo_lr: Optional[float] = None  # DAMO Adam learning rate
damo_max_steps: Optional[int] = None  # DAMO steps at most
damo_batch: Optional[int] = None  # DAMO batch size
check_every: Optional[int] = None  # DAMO checks its stopping rule every this many steps
stop_prob: Optional[float] = None  # DAMO stops once held-out synthetic forget samples give the forget classes at most this mean probability
c: Optional[float] = None  # conflict-averse radius c (0: plain weighted sum)
lam: Optional[list[float]] = None  # loss weights (retain, forget, discrimination)
delta: Optional[float] = None  # Circle-loss scale delta
margin: Optional[float] = None  # Circle-loss relaxation m
forget_loss: Optional[str] = None  # forget loss: CE toward the most probable retain class, toward a random retain class, or clipped gradient ascent
centers: Optional[str] = None  # class centres: mean synthetic feature, or classifier weight rows
finetune_epochs: Optional[int] = None  # reference: fine-tuning epochs on real retain data
neggrad_epochs: Optional[int] = None  # reference: NegGrad+ epochs on real data
bench_evals: Optional[int] = None  # sampler benchmark: plain Langevin's score-evaluation budget
bench_per_class: Optional[int] = None  # sampler benchmark: samples per class
bench_seeds: Optional[int] = None  # sampler benchmark: independent original models (the first n_seeds are shared with the experiment)
alpha_grid: Optional[list[float]] = None  # sampler benchmark: step sizes each sampler picks from
curve_every: Optional[int] = None  # accuracy-vs-time curves (first forget class of each seed): evaluate every this many unlearning steps; 0: no curves
n_threads: Optional[int] = None  # torch threads inside run

# %% [markdown] tags=["injected-parameters"]
# **This page shows a run with** `profile = "cpu"` (run `cpu-bf21a9e8fb`, commit `cc26697`, 527 s, 2026-12-01). Running the notebook yourself uses the parameters cell above as written (the fast `smoke` profile unless you change it); `trustlib run dsda --profile cpu` repeats the run shown here.

# %% [markdown]
# ## Configuration
#
# One validated `Config` per run. The `cpu` values were chosen as described in "How the settings were chosen"
# below; the `smoke` values only make the notebook fast.

# %%
#| export
VARIANTS = ("algorithm1", "eq5")
ENERGIES = ("softmax", "logit")
FORGET_LOSSES = ("random_label", "nearest_label", "ascent")
CENTERS = ("synthetic_mean", "classifier")
N_CLASSES = 10

@dataclass
class Config(BaseConfig):
    "Parameters of the DSDA reproduction (defaults: the `smoke` profile)."
    n_seeds: int = param(1, "repetitions (independent splits, models, samples)", ge=1, le=100)
    forget_classes: tuple[int, ...] = param((3,), "single-class tasks: classes forgotten one at a time", ge=0, le=N_CLASSES - 1)
    multi_sizes: tuple[int, ...] = param((2,), "multi-class tasks: numbers of classes forgotten together", ge=1, le=N_CLASSES - 1)
    n_multi_sets: int = param(1, "multi-class tasks: random class sets per size and seed (0: none)", ge=0, le=100)
    width: int = param(16, "SmallCNN width (channels of the first conv)", ge=2, le=256)
    train_epochs: int = param(8, "epochs of the original and retrained models", ge=1, le=1000)
    train_lr: float = param(3e-3, "Adam learning rate of the original and retrained models", gt=0, le=1)
    batch_size: int = param(64, "batch size of the original and retrained models", ge=1, le=4096)
    n_per_class: int = param(20, "synthetic samples per class", ge=2, le=10_000)
    aegds_steps: int = param(4, "AEGDS steps (two score evaluations each)", ge=1, le=10_000)
    aegds_alpha: float = param(3.0, "AEGDS step size alpha", gt=0, le=100)
    dt: float = param(1.0, "AEGDS time step Delta t", ge=0, le=100)
    gamma: float = param(0.9, "AEGDS momentum gamma", ge=0, lt=1)
    egds_steps: int = param(8, "EGDS (plain Langevin) steps", ge=1, le=10_000)
    egds_alpha: float = param(1.0, "EGDS step size alpha", gt=0, le=100)
    noise_scale: float = param(0.01, "multiplies the sampler noise sqrt(2 alpha dt); 1 is pure Langevin", ge=0, le=10)
    variant: str = param("algorithm1", "AEGDS update: Algorithm 1 as written, or the placement of Eq. 5", choices=VARIANTS)
    energy_kind: str = param("softmax", "energy: -log softmax (the paper) or -logit (JEM)", choices=ENERGIES)
    damo_lr: float = param(1e-3, "DAMO Adam learning rate", gt=0, le=1)
    damo_max_steps: int = param(40, "DAMO steps at most", ge=1, le=100_000)
    damo_batch: int = param(64, "DAMO batch size", ge=1, le=4096)
    check_every: int = param(5, "DAMO checks its stopping rule every this many steps", ge=1, le=10_000)
    stop_prob: float = param(5e-4, "DAMO stops once held-out synthetic forget samples give the forget classes at most this mean probability", ge=0, le=1)
    c: float = param(0.4, "conflict-averse radius c (0: plain weighted sum)", ge=0, lt=1)
    lam: tuple[float, float, float] = param((1.0, 1.0, 1.0), "loss weights (retain, forget, discrimination)", ge=0, le=100)
    delta: float = param(32.0, "Circle-loss scale delta", gt=0, le=1024)
    margin: float = param(0.25, "Circle-loss relaxation m", ge=0, le=1)
    forget_loss: str = param("nearest_label", "forget loss: CE toward the most probable retain class, toward a random retain class, or clipped gradient ascent", choices=FORGET_LOSSES)
    centers: str = param("synthetic_mean", "class centres: mean synthetic feature, or classifier weight rows", choices=CENTERS)
    finetune_epochs: int = param(2, "reference: fine-tuning epochs on real retain data", ge=1, le=1000)
    neggrad_epochs: int = param(2, "reference: NegGrad+ epochs on real data", ge=1, le=1000)
    bench_evals: int = param(10, "sampler benchmark: plain Langevin's score-evaluation budget", ge=2, le=10_000)
    bench_per_class: int = param(5, "sampler benchmark: samples per class", ge=1, le=10_000)
    bench_seeds: int = param(1, "sampler benchmark: independent original models (the first n_seeds are shared with the experiment)", ge=1, le=100)
    alpha_grid: tuple[float, ...] = param((1.0, 3.0), "sampler benchmark: step sizes each sampler picks from", gt=0, le=100)
    curve_every: int = param(1, "accuracy-vs-time curves (first forget class of each seed): evaluate every this many unlearning steps; 0: no curves", ge=0, le=10_000)
    n_threads: int = param(1, "torch threads inside run", ge=1, le=256)
    PROFILE_DEFAULTS = {
        "cpu": dict(n_seeds=3, forget_classes=tuple(range(N_CLASSES)), multi_sizes=(2, 4), n_multi_sets=2, train_epochs=30,
                    n_per_class=60, aegds_steps=8, egds_steps=40, damo_max_steps=200, finetune_epochs=5, neggrad_epochs=3,
                    bench_evals=40, bench_per_class=25, bench_seeds=6, alpha_grid=(1.0, 3.0, 10.0)),
        "full": dict(n_seeds=3, forget_classes=tuple(range(N_CLASSES)), multi_sizes=(2, 4), n_multi_sets=2, width=64, train_epochs=60,
                     n_per_class=500, aegds_steps=20, egds_steps=100, damo_max_steps=2000, damo_batch=256, batch_size=256,
                     finetune_epochs=5, neggrad_epochs=3, bench_evals=100, bench_per_class=50, bench_seeds=5, alpha_grid=(0.3, 1.0, 3.0, 10.0)),
    }

    def validate(self):
        if len(set(self.forget_classes)) != len(self.forget_classes) or not self.forget_classes:
            raise ConfigError(f"parameter 'forget_classes': give distinct classes in 0..{N_CLASSES - 1}, got {list(self.forget_classes)}")
        if not self.alpha_grid: raise ConfigError("parameter 'alpha_grid': give at least one step size")
        if self.bench_evals % 2: raise ConfigError(f"parameter 'bench_evals': must be even (AEGDS spends two evaluations a step), got {self.bench_evals}")


# %%
cfg = Config.from_namespace(globals())
test_fail(lambda: Config.from_params("smoke", c=1.0), contains="'c': 1.0 is out of range")
test_fail(lambda: Config.from_params("smoke", forget_loss="kl"), contains="'forget_loss'")
test_fail(lambda: Config.from_params("smoke", forget_classes=(3, 3)), contains="distinct")
test_fail(lambda: Config.from_params("smoke", forget_classes=(10,)), contains="'forget_classes': 10 is out of range")
test_fail(lambda: Config.from_params("smoke", variant="eq6"), contains="'variant'")
cfg


# %% [markdown]
# ## The method
#
# ### Which classes can be forgotten
#
# Forgetting is defined for a non-empty set of existing classes that leaves at least one class to retain.
# Everything that takes a forget set goes through this check first.

# %%
#| export
def check_forget_classes(forget, # the classes to forget (ints)
                         n_classes:int, # number of classes of the model
                         ) -> tuple[list[int], list[int]]:
    "(sorted forget classes, sorted retain classes), or `ValueError` for an empty, repeated, unknown or complete set."
    f = [int(k) for k in forget]
    if not f: raise ValueError("forget classes: the set is empty; name at least one class to forget")
    if len(set(f)) != len(f): raise ValueError(f"forget classes: {f} repeats a class")
    bad = [k for k in f if not 0 <= k < n_classes]
    if bad: raise ValueError(f"forget classes: {bad} do not exist; the model has classes 0..{n_classes - 1}")
    if len(f) == n_classes: raise ValueError(f"forget classes: all {n_classes} classes would be forgotten; keep at least one class")
    return sorted(f), [k for k in range(n_classes) if k not in f]


# %%
test_eq(check_forget_classes([7, 2], 10), ([2, 7], [0, 1, 3, 4, 5, 6, 8, 9]))
test_fail(lambda: check_forget_classes([10], 10), contains="do not exist")
test_fail(lambda: check_forget_classes([-1], 10), contains="do not exist")
test_fail(lambda: check_forget_classes(range(10), 10), contains="all 10 classes")
test_fail(lambda: check_forget_classes([], 10), contains="empty")
test_fail(lambda: check_forget_classes([1, 1], 10), contains="repeats")


# %% [markdown]
# ### Energy and score (Eq. 1)
#
# The paper's energy is the negative log softmax probability of the class, E(x, y) = -log p(y | x), and the
# score is its negative input gradient, s(x, y) = -grad_x E(x, y) = grad_x log p(y | x). JEM's energy
# -f_y(x) (a logit, which models p(x, y) rather than p(y | x)) is offered as an ablation. The score is
# computed for a whole batch in one backward pass: each row's energy depends only on its own input, so the
# gradient of the summed energy is the per-row gradient.

# %%
#| export
def energy(model, # classifier returning logits
           x:torch.Tensor, # inputs [B, ...]
           y:torch.Tensor, # target classes [B]
           kind:str="softmax", # 'softmax': -log softmax(f(x))_y (the paper) | 'logit': -f_y(x) (JEM)
           ) -> torch.Tensor:
    "Per-row energy E(x, y), shape [B]."
    if kind not in ENERGIES: raise ValueError(f"energy kind must be one of {list(ENERGIES)}, got {kind!r}")
    logits = model(x)
    if kind == "softmax": return -F.log_softmax(logits, -1).gather(1, y[:, None]).squeeze(1)
    return -logits.gather(1, y[:, None]).squeeze(1)

def score(model, x:torch.Tensor, y:torch.Tensor, kind:str="softmax") -> torch.Tensor:
    "The score s(x, y) = -grad_x E(x, y), one gradient per row (same shape as `x`)."
    x = x.detach().requires_grad_(True)
    with torch.enable_grad(): e = energy(model, x, y, kind).sum()
    return -torch.autograd.grad(e, x)[0]


# %% [markdown]
# For a linear-softmax model f(x) = Wx the score is W_y - sum_k p_k W_k; and for any model it must agree with
# central finite differences of the energy.

# %%
_g = torch.Generator().manual_seed(0)
_lin = torch.nn.Linear(5, 3, bias=False).double()
_x, _y = torch.randn(4, 5, generator=_g, dtype=torch.float64), torch.tensor([0, 1, 2, 1])
_p = torch.softmax(_lin(_x), -1).detach()
test_close(score(_lin, _x, _y), _lin.weight[_y].detach() - _p @ _lin.weight.detach(), eps=1e-10)
_cnn = SmallCNN(width=4).double()
_xc = torch.randn(2, 1, 8, 8, generator=_g, dtype=torch.float64); _yc = torch.tensor([3, 7])
_s = score(_cnn, _xc, _yc)
for _k in [(0, 0, 2, 3), (1, 0, 5, 1), (1, 0, 0, 7)]:
    for _kind in ENERGIES:
        _e = torch.zeros_like(_xc); _e[_k] = 1e-6
        with torch.no_grad(): _fd = -(energy(_cnn, _xc + _e, _yc, _kind) - energy(_cnn, _xc - _e, _yc, _kind))[_k[0]] / 2e-6
        test_close(float(_fd), float(score(_cnn, _xc, _yc, _kind)[_k]), eps=1e-6)
test_fail(lambda: energy(_cnn, _xc, _yc, "free"), contains="energy kind")

# %% [markdown]
# ### EGDS and AEGDS (Eq. 3, Eqs. 4-6, Algorithm 1)
#
# **EGDS** is plain Langevin dynamics on the energy: x <- x + alpha * s(x, y) + sqrt(2 alpha) * eps.
#
# **AEGDS**, the paper's Algorithm 1 as written: with one noise draw eps per step,
#
# - d = s(x), x' = x + dt * d + sqrt(2 alpha dt) * eps (predictor), d' = s(x') (corrector);
# - v <- gamma * v + alpha * (d + d') / 2 (heavy-ball momentum; the paper calls it Nesterov's, but the formula is heavy-ball);
# - x <- x + dt * v + sqrt(2 alpha dt) * eps (the same eps as in the predictor).
#
# Eq. 5 places the constants differently (predictor noise sqrt(2 alpha) without dt, drift alpha * dt in the
# update); `variant="eq5"` implements that placement. `method` also selects the two halves of the
# acceleration for the ablation: `"heun"` (gamma = 0) and `"momentum"` (one score evaluation, no corrector).
#
# Deviations, said here and in the box above: the noise term is multiplied by `noise_scale` (0.01 in our
# runs, as in JEM's SGLD; pure sqrt(2 alpha) noise is larger than the whole signal of a standardised 8x8
# image), and inputs are clamped to the pixel range after each step (a property of the input format, known
# without data). All classes are sampled together in one batch; the model is frozen and in eval mode.

# %%
#| export
METHODS = ("egds", "heun", "momentum", "aegds")

def synthesize(model, # the original classifier (frozen; set to eval mode while sampling)
               y:torch.Tensor, # target class of every sample [B]
               *, steps:int, # sampler steps
               method:str="aegds", # 'egds' (plain Langevin) | 'aegds' (Heun + momentum) | 'heun' | 'momentum'
               alpha:float=1.0, # step size alpha
               dt:float=1.0, # time step (Heun and momentum samplers)
               gamma:float=0.9, # momentum (momentum and aegds)
               noise_scale:float=1.0, # multiplies the Langevin noise (1: pure Langevin)
               variant:str="algorithm1", # 'algorithm1' (as written) | 'eq5'
               x_shape:tuple=(1, 8, 8), # shape of one input
               clamp:tuple|None=None, # (lo, hi) input range, applied after every step
               energy_kind:str="softmax", # see `energy`
               generator:torch.Generator|None=None, # noise and initialisation
               x0:torch.Tensor|None=None, # start here instead of N(0, I)
               trace:list|None=None, # if a list: append (score evaluations so far, mean energy) after every step
               ) -> torch.Tensor:
    "Synthetic inputs for the classes `y`, sampled from the model's energy (EGDS, AEGDS or one half of AEGDS)."
    if method not in METHODS: raise ValueError(f"method must be one of {list(METHODS)}, got {method!r}")
    if variant not in VARIANTS: raise ValueError(f"variant must be one of {list(VARIANTS)}, got {variant!r}")
    was = model.training; req = [p.requires_grad for p in model.parameters()]
    model.eval()
    for p in model.parameters(): p.requires_grad_(False)
    try:
        x = torch.randn(len(y), *x_shape, generator=generator) if x0 is None else x0.detach().clone()
        if clamp is not None: x = x.clamp(*clamp)
        v = torch.zeros_like(x); n_eval = 0
        heun, g = method in ("heun", "aegds"), (gamma if method in ("momentum", "aegds") else 0.0)
        for _ in range(steps):
            eps = torch.randn(x.shape, generator=generator)
            d = score(model, x, y, energy_kind); n_eval += 1
            if method == "egds":
                x = x + alpha * d + noise_scale * math.sqrt(2 * alpha) * eps
            else:
                pre_noise = math.sqrt(2 * alpha) if variant == "eq5" else math.sqrt(2 * alpha * dt)
                if heun:
                    xp = x + dt * d + noise_scale * pre_noise * eps
                    if clamp is not None: xp = xp.clamp(*clamp)
                    vhat = 0.5 * (d + score(model, xp, y, energy_kind)); n_eval += 1
                else: vhat = d
                if variant == "eq5":
                    v = g * v + alpha * dt * vhat
                    x = x + v + noise_scale * math.sqrt(2 * alpha) * eps
                else:
                    v = g * v + alpha * vhat
                    x = x + dt * v + noise_scale * math.sqrt(2 * alpha * dt) * eps
            if clamp is not None: x = x.clamp(*clamp)
            if trace is not None:
                with torch.no_grad(): trace.append((n_eval, float(energy(model, x, y, energy_kind).mean())))
        return x.detach()
    finally:
        for p, r in zip(model.parameters(), req): p.requires_grad_(r)
        model.train(was)


# %% [markdown]
# Checks: with dt = 0 Algorithm 1 does not move (both the drift and the noise vanish); without noise and
# momentum one AEGDS step is exactly a Heun step x + dt * alpha * (d + d') / 2, and one EGDS step is gradient
# ascent on log p(y | x); the sampler leaves the model's mode and gradients flags as they were; and a few steps
# on a small trained model turn noise into inputs the model assigns to their target class.

# %%
_x0 = torch.randn(6, 1, 8, 8, generator=_g).double(); _y6 = torch.arange(6)
for _m in METHODS[1:]:
    test_eq(synthesize(_cnn, _y6, steps=3, method=_m, dt=0.0, alpha=2.0, x0=_x0, generator=_g), _x0)
_d = score(_cnn, _x0, _y6); _dp = score(_cnn, _x0 + 0.5 * _d, _y6)
test_close(synthesize(_cnn, _y6, steps=1, method="aegds", dt=0.5, alpha=2.0, gamma=0.0, noise_scale=0.0, x0=_x0),
           _x0 + 0.5 * 2.0 * (_d + _dp) / 2, eps=1e-10)
test_close(synthesize(_cnn, _y6, steps=1, method="egds", alpha=0.3, noise_scale=0.0, x0=_x0), _x0 + 0.3 * _d, eps=1e-10)
_cnn.train()
_tr = []; synthesize(_cnn, _y6, steps=2, method="aegds", x0=_x0, trace=_tr)
test_eq([n for n, _ in _tr], [2, 4]); test_eq(_cnn.training, True); test_eq(all(p.requires_grad for p in _cnn.parameters()), True)
test_fail(lambda: synthesize(_cnn, _y6, steps=1, method="sgld"), contains="method must be")

# %%
_lin2 = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))
with torch.no_grad(): _lin2[1].weight.copy_(torch.randn(10, 64, generator=_g)); _lin2[1].bias.zero_()
_yy = torch.arange(10).repeat(5)
_xs = synthesize(_lin2, _yy, steps=10, method="aegds", alpha=1.0, noise_scale=0.01, generator=_g)
test_eq(float((_lin2(_xs).argmax(1) == _yy).float().mean()), 1.0)


# %% [markdown]
# ### DAMO's discrimination loss (Eq. 7)
#
# A Circle loss with the retain class centres as proxies and no margins: for a normalised feature h of a
# synthetic retain sample of class y, s_p = cos(c_y, h) and s_n^j = cos(c_j, h) for the other retain classes,
# alpha_p = [1 + m - s_p]_+ and alpha_n^j = [s_n^j + m]_+ (constants: no gradient flows through them), and
# L = softplus(logsumexp_j(delta alpha_n^j s_n^j) - delta alpha_p s_p), the stable form of
# log(1 + sum_j exp(delta alpha_n^j s_n^j) exp(-delta alpha_p s_p)). The features are the CNN's pooled
# convolutional features (M_f); the last linear layer is M_c.

# %%
#| export
def features(model, x:torch.Tensor) -> torch.Tensor:
    "M_f(x): the SmallCNN's pooled convolutional features, flattened (the input of the last linear layer)."
    if x.ndim == 2: x = x.view(x.shape[0], model.in_channels, *model.image_size)
    return model.features(x).flatten(1)

def circle_loss(h:torch.Tensor, # features [B, D]
                y:torch.Tensor, # index of each row's class among the centres [B]
                centers:torch.Tensor, # class centres [C, D] (C >= 2)
                delta:float=32.0, # scale
                m:float=0.25, # relaxation (O_p = 1 + m, O_n = -m)
                ) -> torch.Tensor:
    "Centre-based Circle loss without margins (DSDA's Eq. 7), averaged over the batch."
    if centers.shape[0] < 2: raise ValueError("the discrimination loss needs at least two retain classes")
    s = F.normalize(h, dim=1) @ F.normalize(centers, dim=1).T
    pos = F.one_hot(y, centers.shape[0]).bool()
    sp = s[pos]
    ap = (1 + m - sp).clamp(min=0).detach()
    an = (s + m).clamp(min=0).detach()
    neg = (delta * an * s).masked_fill(pos, float("-inf"))
    return F.softplus(torch.logsumexp(neg, 1) - delta * ap * sp).mean()


# %%
_h = torch.randn(7, 5, generator=_g, dtype=torch.float64, requires_grad=True)
_C = torch.randn(4, 5, generator=_g, dtype=torch.float64); _yh = torch.tensor([0, 1, 2, 3, 0, 1, 2])
def _naive(h, y, C, delta, m):
    s = F.normalize(h, dim=1) @ F.normalize(C, dim=1).T
    out = []
    for i in range(len(y)):
        sp = s[i, y[i]]; ap = float((1 + m - sp).clamp(min=0))
        tot = sum(math.exp(delta * max(float(s[i, j]) + m, 0) * s[i, j] - delta * ap * sp) for j in range(C.shape[0]) if j != y[i])
        out.append(math.log1p(tot))
    return sum(out) / len(out)
with torch.no_grad():
    for _dl in (1.0, 4.0):
        test_close(float(circle_loss(_h, _yh, _C, _dl, 0.25)), float(_naive(_h, _yh, _C, _dl, 0.25)), eps=1e-9)
# gradients treat alpha_p, alpha_n as constants: compare with a hand-detached version
_L = circle_loss(_h, _yh, _C, 4.0); _gr = torch.autograd.grad(_L, _h)[0]
_s = F.normalize(_h, dim=1) @ F.normalize(_C, dim=1).T; _pos = F.one_hot(_yh, 4).bool()
_ap = (1.25 - _s[_pos].detach()).clamp(min=0); _an = (_s.detach() + 0.25).clamp(min=0)
_L2 = F.softplus(torch.logsumexp((4.0 * _an * _s).masked_fill(_pos, -math.inf), 1) - 4.0 * _ap * _s[_pos]).mean()
test_close(_gr, torch.autograd.grad(_L2, _h)[0], eps=1e-12)
test_eq(float(circle_loss(F.normalize(_C, dim=1)[[0, 1]] * 3, torch.tensor([0, 1]), _C, 32.0)) < float(circle_loss(F.normalize(_C, dim=1)[[1, 0]], torch.tensor([0, 1]), _C, 32.0)), True)
test_fail(lambda: circle_loss(_h, torch.zeros(7, dtype=torch.long), _C[:1]), contains="two retain classes")


# %% [markdown]
# ### The conflict-averse update (Theorems 3.2-3.3)
#
# With the task gradients g_i stacked in G and the weighted anchor g_T = sum_i lambda_i g_i, DAMO looks for the
# direction d within distance c ||g_T|| of g_T that maximises the worst task's improvement min_i <g_i, d>.
# The dual is a problem over the simplex: w* = argmin_w g_w . g_T + c ||g_T|| ||g_w||, and
# d = g_T + c ||g_T|| g_w* / ||g_w*||. This is CAGrad with a weighted anchor instead of the mean gradient;
# c = 0 is the plain weighted sum (the paper's "without multitask" ablation). The 2- or 3-variable problem is
# solved with SLSQP on the Gram matrix.

# %%
#| export
def conflict_averse(G:torch.Tensor, # task gradients, one per row [k, P]
                    lam, # task weights lambda [k]
                    c:float, # radius in [0, 1)
                    ) -> tuple[torch.Tensor, np.ndarray]:
    "(update direction d, simplex weights w*) of DSDA's conflict-averse update; `c = 0` returns the weighted sum g_T."
    from scipy.optimize import minimize
    if not 0 <= c < 1: raise ValueError(f"c must lie in [0, 1), got {c}")
    G = torch.as_tensor(G); lam = torch.as_tensor(lam, dtype=G.dtype)
    if lam.shape != (G.shape[0],): raise ValueError(f"lam needs one weight per gradient row ({G.shape[0]}), got shape {tuple(lam.shape)}")
    gT = lam @ G; k = G.shape[0]
    if c == 0 or k == 1: return gT, np.full(k, 1.0 / k)
    Gd = G.double(); GG = (Gd @ Gd.T).numpy(); b = (Gd @ gT.double()).numpy()
    sphi = c * float(gT.double().norm())
    if sphi == 0: return gT, np.full(k, 1.0 / k)
    obj = lambda w: float(w @ b + sphi * math.sqrt(max(float(w @ GG @ w), 0.0) + 1e-20))
    r = minimize(obj, np.full(k, 1.0 / k), method="SLSQP", bounds=[(0.0, 1.0)] * k,   # convex in w: one start suffices
                 constraints={"type": "eq", "fun": lambda w: 1.0 - w.sum()}, options=dict(ftol=1e-12, maxiter=200))
    w = np.clip(r.x, 0.0, None); w = w / w.sum()
    gw = torch.as_tensor(w, dtype=torch.float64) @ Gd
    n = float(gw.norm())
    if n < 1e-20: return gT, w
    return (gT.double() + sphi * gw / n).to(G.dtype), w


# %% [markdown]
# Checks: c = 0 gives g_T exactly; for c > 0 the direction sits on the sphere ||d - g_T|| = c ||g_T||, the weights lie
# on the simplex, and (the property the update is built for) the worst task improvement min_i <g_i, d> is at
# least that of the plain weighted sum, min_i <g_i, g_T>, on random conflicting gradients. A brute-force search
# over the sphere's directions confirms that d is (near) optimal.

# %%
_rng = np.random.default_rng(0)
for _t in range(200):
    _k = int(_rng.integers(2, 4)); _P = int(_rng.integers(2, 6))
    _G = torch.as_tensor(_rng.normal(size=(_k, _P)))
    _G[1] = -0.7 * _G[0] + 0.5 * _G[1]                                  # make tasks 0 and 1 conflict
    _lam = torch.as_tensor(_rng.uniform(0.2, 1.5, size=_k)); _cc = float(_rng.uniform(0.05, 0.95))
    _gT = _lam @ _G
    _d0, _ = conflict_averse(_G, _lam, 0.0); test_eq(torch.equal(_d0, _gT), True)
    _d, _w = conflict_averse(_G, _lam, _cc)
    test_close(float((_d - _gT).norm()), _cc * float(_gT.norm()), eps=1e-6 * (1 + float(_gT.norm())))
    test_close(float(_w.sum()), 1.0, eps=1e-9); test_eq(bool((_w >= 0).all()), True)
    assert float((_G @ _d).min()) >= float((_G @ _gT).min()) - 1e-7, (_t, (_G @ _d).min(), (_G @ _gT).min())
_G = torch.as_tensor(_rng.normal(size=(3, 2))); _lam = torch.ones(3, dtype=torch.float64); _gT = _lam @ _G; _d, _ = conflict_averse(_G, _lam, 0.5)
_ang = np.linspace(0, 2 * np.pi, 20001); _U = torch.as_tensor(np.stack([np.cos(_ang), np.sin(_ang)], 1))
_brute = float((( _gT + 0.5 * _gT.norm() * _U) @ _G.T).min(1).values.max())
test_close(float((_G @ _d).min()), _brute, eps=1e-4 * (1 + abs(_brute)))
test_fail(lambda: conflict_averse(_G, _lam, 1.0), contains="c must lie")
test_fail(lambda: conflict_averse(_G, torch.ones(2), 0.4), contains="one weight per gradient")


# %% [markdown]
# ### DAMO: unlearning on synthetic data
#
# From a copy of the original model, each step draws a batch of synthetic retain samples and one of synthetic
# forget samples and computes the three losses:
#
# - retain: cross-entropy on the retain samples;
# - forget (**our choice**, the paper's formula is missing from the available text): cross-entropy toward a
#   retain class: by default each forget sample's most probable retain class under the original model
#   (`forget_loss="nearest_label"`, fixed once), or one drawn at random for every sample at every step
#   (`"random_label"`, the default we first planned; it cost 9 points of retain accuracy on the validation split, see
#   "How the settings were chosen"); or
#   gradient ascent, -CE clipped at 2 log K (`"ascent"`). Either can drive forget accuracy to 0, as the paper
#   reports; a KL-to-uniform loss could not;
# - discrimination: the Circle loss above, with centres c_i = mean M_f feature of class i's synthetic samples
#   under the original model (**our choice**; `centers="classifier"` uses the rows of the last layer).
#
# Their gradients go through the conflict-averse update (`c`; c = 0 is the plain weighted sum) into Adam.
# **Stopping rule (our choice, source-free):** one sixth of the synthetic forget samples is held out of
# training; every `check_every` steps the model scores them, and DAMO stops as soon as their mean probability of
# the forget classes is at most `stop_prob` (or after `max_steps`). If the synthetic set has no sample of a forget class (which
# happens with noise inputs), there is nothing to forget with and DAMO runs the retain and discrimination
# losses for `max_steps`.

# %%
#| export
def _grads(loss, params):
    gs = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
    return torch.cat([(torch.zeros_like(p) if g is None else g).flatten() for g, p in zip(gs, params)])

def class_centers(model, x:torch.Tensor, y:torch.Tensor, classes, kind:str="synthetic_mean") -> torch.Tensor:
    "Centres of `classes` [C, D]: mean M_f feature of each class's samples (`synthetic_mean`) or last-layer rows (`classifier`)."
    if kind not in CENTERS: raise ValueError(f"centers must be one of {list(CENTERS)}, got {kind!r}")
    if kind == "classifier": return model.head.weight.detach()[list(classes)].clone()
    with torch.no_grad(): h = features(model, x)
    out = []
    for k in classes:
        sel = y == k
        if not bool(sel.any()): raise ValueError(f"class {k} has no synthetic sample to compute its centre from")
        out.append(h[sel].mean(0))
    return torch.stack(out)

def damo(model_o, # the original model (not modified)
         x:torch.Tensor, y:torch.Tensor, # synthetic inputs and their classes (all classes)
         forget, # classes to forget
         *, lam=(1.0, 1.0, 1.0), # weights of the retain, forget and discrimination losses
         c:float=0.4, # conflict-averse radius (0: plain weighted sum)
         use_disc:bool=True, # False: no discrimination loss (the ablation)
         forget_loss:str="nearest_label", # 'nearest_label' | 'random_label' | 'ascent'
         centers:str="synthetic_mean", # 'synthetic_mean' | 'classifier'
         delta:float=32.0, m:float=0.25, # Circle-loss scale and relaxation
         lr:float=1e-3, max_steps:int=200, batch:int=64, check_every:int=5,
         stop_prob:float=5e-4, # stop once the held-out synthetic forget samples give the forget classes at most this mean probability
         seed:int=0,
         on_step=None, # if given: called as on_step(step, model) after every update (see `StepTrace`)
         ):
    "The unlearned copy of `model_o` (DAMO on synthetic data); `model.steps_` holds the number of steps taken."
    if forget_loss not in FORGET_LOSSES: raise ValueError(f"forget_loss must be one of {list(FORGET_LOSSES)}, got {forget_loss!r}")
    n_classes = int(model_o.head.out_features)
    fc, rc = check_forget_classes(forget, n_classes)
    g = torch.Generator().manual_seed(int(seed))
    is_f = torch.isin(y, torch.tensor(fc))
    xr, yr = x[~is_f], y[~is_f]
    if len(xr) == 0: raise ValueError("no synthetic sample of a retain class")
    fidx = torch.nonzero(is_f).flatten()
    fidx = fidx[torch.randperm(len(fidx), generator=g)]
    n_hold = len(fidx) // 6 if len(fidx) >= 6 else 0
    hold, ftrain = fidx[:n_hold], fidx[n_hold:]
    xcheck = x[hold] if n_hold else x[ftrain]
    present = [k for k in rc if bool((yr == k).any())]
    use_disc = use_disc and len(present) >= 2 and lam[2] > 0
    if use_disc:
        C = class_centers(model_o, xr, yr, present, centers)
        remap = torch.full((n_classes,), -1, dtype=torch.long); remap[torch.tensor(present)] = torch.arange(len(present))
        keep_r = torch.isin(yr, torch.tensor(present))
    rc_t, fc_t = torch.tensor(rc), torch.tensor(fc)
    if forget_loss == "nearest_label":   # each forget sample's most probable retain class under the original model
        with torch.no_grad(): nearest = rc_t[model_o(x)[:, rc_t].argmax(1)]
    model = copy.deepcopy(model_o); model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr)
    steps = 0
    for it in range(max_steps):
        ir = torch.randint(len(xr), (batch,), generator=g)
        bx, by = xr[ir], yr[ir]
        losses, weights = [F.cross_entropy(model(bx), by)], [lam[0]]
        if len(ftrain):
            jf = ftrain[torch.randint(len(ftrain), (min(batch, len(ftrain)),), generator=g)]
            out_f = model(x[jf])
            if forget_loss == "random_label":
                lf = F.cross_entropy(out_f, rc_t[torch.randint(len(rc), (len(jf),), generator=g)])
            elif forget_loss == "nearest_label":
                lf = F.cross_entropy(out_f, nearest[jf])
            else:
                lf = -F.cross_entropy(out_f, y[jf]).clamp(max=2 * math.log(n_classes))
            losses.append(lf); weights.append(lam[1])
        if use_disc:
            kb = keep_r[ir]
            losses.append(circle_loss(features(model, bx[kb]), remap[by[kb]], C, delta, m)); weights.append(lam[2])
        G = torch.stack([_grads(L, params) for L in losses])
        d, _ = conflict_averse(G, torch.tensor(weights, dtype=G.dtype), c)
        off = 0
        for p in params:
            p.grad = d[off:off + p.numel()].view_as(p).clone(); off += p.numel()
        opt.step(); opt.zero_grad(set_to_none=True)
        steps = it + 1
        if on_step is not None: on_step(steps, model)
        if len(ftrain) and steps % check_every == 0:
            model.eval()
            with torch.no_grad(): left = float(F.softmax(model(xcheck), -1)[:, fc_t].sum(1).mean())
            model.train()
            if left <= stop_prob: break
    model.eval(); model.steps_ = steps
    return model


# %% [markdown]
# A tiny end-to-end check on a linear model and Gaussian "classes": DAMO on samples drawn from the model
# itself removes class 2 from the synthetic check set and keeps the other classes.

# %%
class _Lin(torch.nn.Module):
    def __init__(self):
        super().__init__(); self.in_channels, self.image_size = 1, (2, 2)
        self.features = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4, 8), torch.nn.ReLU()); self.head = torch.nn.Linear(8, 3)
    def forward(self, x): return self.head(self.features(x))
torch.manual_seed(0); _toy = _Lin()
_mu = torch.tensor([[3., 0, 0, 0], [0, 3., 0, 0], [0, 0, 3., 0]])
_xt = (_mu.repeat(100, 1) + 0.5 * torch.randn(300, 4, generator=_g)).view(-1, 1, 2, 2); _yt = torch.arange(3).repeat(100)
fit(_toy, _xt, _yt, epochs=15, lr=1e-2, progress=False)
_xsyn = synthesize(_toy, _yt, steps=10, method="aegds", alpha=0.3, noise_scale=0.05, x_shape=(1, 2, 2), generator=_g)
_un = damo(_toy, _xsyn, _yt, [2], lr=1e-2, max_steps=60, batch=32, stop_prob=0.01, seed=0)
with torch.no_grad(): _pr = _un(_xt).argmax(1)
test_eq(int((_pr[_yt == 2] == 2).sum()), 0)
assert float((_pr[_yt != 2] == _yt[_yt != 2]).float().mean()) > 0.9
test_eq(damo(_toy, _xsyn, _yt, [2], max_steps=60, check_every=5, stop_prob=1.0).steps_, 5)   # a threshold every model meets: stops at the first check
test_fail(lambda: damo(_toy, _xsyn, _yt, [0, 1, 2]), contains="all 3 classes")
test_fail(lambda: damo(_toy, _xsyn, _yt, [5]), contains="do not exist")


# %% [markdown]
# ### Membership inference and accuracies
#
# The MIA metric follows the convention of the GKT/SSD/UNSIR code that DSDA's evaluation uses: a logistic
# regression on the entropy of the model's softmax output, trained to tell retain-train samples (members,
# label 1) from test samples (label 0), with balanced class weights, then applied to the forget-train samples; the reported rate is the
# fraction predicted "member". A retrained model, which never saw the forget data, sets the target rate.

# %%
#| export
def entropy(p:np.ndarray) -> np.ndarray:
    "Shannon entropy (nats) of each row of a probability matrix."
    return -(p * np.log(np.clip(p, 1e-12, 1.0))).sum(1)

def mia_rate(p_retain_train:np.ndarray, p_test:np.ndarray, p_forget_train:np.ndarray) -> float:
    "Fraction of forget-train rows an entropy-based logistic-regression attack calls members (fit: retain-train 1 vs test 0)."
    from sklearn.linear_model import LogisticRegression
    e = np.concatenate([entropy(p_retain_train), entropy(p_test)])[:, None]
    lab = np.r_[np.ones(len(p_retain_train)), np.zeros(len(p_test))]
    clf = LogisticRegression(class_weight="balanced").fit(e, lab)   # balanced, as in the GKT/SSD evaluation code
    return float(clf.predict(entropy(p_forget_train)[:, None]).mean())


# %%
_r = np.random.default_rng(1)
def _probs(conf, n):   # rows with max-probability around `conf` on 3 classes
    c = np.clip(conf + 0.02 * _r.normal(size=n), 0.34, 0.999); o = (1 - c) / 2
    return np.stack([c, o, o], 1)
_mem, _non = _probs(0.99, 400), _probs(0.6, 400)
test_close(mia_rate(_mem, _non, _probs(0.99, 200)), 1.0, eps=0.02)   # forget rows look like members
test_close(mia_rate(_mem, _non, _probs(0.6, 200)), 0.0, eps=0.02)    # forget rows look like test rows
test_close(entropy(np.array([[0.5, 0.5]])), [math.log(2)], eps=1e-12)
_base = mia_rate(_probs(0.8, 300), _probs(0.8, 300), _probs(0.8, 300))   # indistinguishable: the attack guesses
assert 0.0 <= _base <= 1.0


# %% [markdown]
# ### Data, models and the reference methods
#
# Digits are scaled to [0, 1] and standardised with the training split's global mean and standard deviation
# (part of the model's preprocessing, so the sampler knows the pixel range without seeing data). The split is
# stratified 70/30 per seed. The original model is `trustlib.models.SmallCNN` trained with Adam
# (`trustlib.models.fit`, a constant learning rate: the paper's multi-step schedule is not available there);
# Retrain is the same recipe on the retain classes only. The two references that use real data:
# fine-tuning on the retain-train set, and NegGrad+ (descent on retain batches and clipped ascent on forget
# batches, equal weights).

# %%
#| export
def load_task_data(cfg:Config, seed:int) -> dict:
    "Standardised images [N, C, H, W], labels, train/test indices and the input range, for one seed."
    from trustlib.data import load, stratified_split, data_dir
    if cfg.profile == "full":
        path = data_dir() / "cifar10" / "cifar10.npz"
        if not path.exists():
            raise ResourceUnavailable(f"the full profile needs CIFAR-10 as {path} (arrays X uint8 [N, 32, 32, 3], y int [N]); "
                                      "it is not downloaded automatically")
        z = np.load(path); X = z["X"].astype(np.float32).transpose(0, 3, 1, 2) / 255.0; y = z["y"].astype(np.int64)
    else:
        d = load("digits"); X = (d.X / 16.0).reshape(-1, 1, 8, 8).astype(np.float32); y = d.y
    tr, te = stratified_split(y, (0.7, 0.3), seed=derive_seed(seed, "split"))
    mu, sd = float(X[tr].mean()), float(X[tr].std())
    X = ((X - mu) / sd).astype(np.float32)
    return dict(X=torch.as_tensor(X), y=torch.as_tensor(y), tr=torch.as_tensor(tr), te=torch.as_tensor(te),
                clamp=((0.0 - mu) / sd, (1.0 - mu) / sd), shape=tuple(X.shape[1:]))

def train_model(cfg:Config, X, y, seed:int, n_classes:int=N_CLASSES):
    "A SmallCNN trained from scratch (the original model, or Retrain on retain data)."
    torch.manual_seed(seed)
    m = SmallCNN(in_channels=X.shape[1], n_classes=n_classes, width=cfg.width, image_size=tuple(X.shape[2:]))
    fit(m, X, y, epochs=cfg.train_epochs, lr=cfg.train_lr, batch_size=cfg.batch_size, seed=seed, progress=False, threads=None)
    return m

def neggrad_plus(model_o, Xr, yr, Xf, yf, *, epochs:int, lr:float, batch:int, seed:int, on_step=None):
    "NegGrad+ on real data: descent on retain batches plus clipped ascent on forget batches."
    model = copy.deepcopy(model_o); model.train(); g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr); K = int(model.head.out_features); n = 0
    for _ in range(epochs):
        perm = torch.randperm(len(Xr), generator=g)
        for s in range(0, len(Xr), batch):
            ir = perm[s:s + batch]; jf = torch.randint(len(Xf), (min(batch, len(Xf)),), generator=g)
            loss = F.cross_entropy(model(Xr[ir]), yr[ir]) - F.cross_entropy(model(Xf[jf]), yf[jf]).clamp(max=2 * math.log(K))
            opt.zero_grad(); loss.backward(); opt.step(); n += 1
            if on_step is not None: on_step(n, model)
    model.eval(); return model

def evaluate(model, D:dict, forget) -> dict:
    "Retain/forget accuracy on the real test split and the entropy-MIA rate on the forget-train split."
    fc = torch.tensor(sorted(forget))
    X, y, tr, te = D["X"], D["y"], D["tr"], D["te"]
    p_tr, p_te = predict_proba(model, X[tr]), predict_proba(model, X[te])
    f_tr, f_te = torch.isin(y[tr], fc).numpy(), torch.isin(y[te], fc).numpy()
    ok = p_te.argmax(1) == y[te].numpy()
    return dict(retain_acc=float(ok[~f_te].mean()), forget_acc=float(ok[f_te].mean()),
                mia=mia_rate(p_tr[~f_tr], p_te, p_tr[f_tr]))


# %% [markdown]
# ### The sampler benchmark
#
# The paper's efficiency claim is that AEGDS reaches plain Langevin's samples faster. We measure it at equal
# compute, counting score evaluations (one forward and one backward pass of the model each): quality is the
# mean energy E(x, y) = -log p(y | x) of the synthetic batch. Every sampler first picks its step size from
# `alpha_grid` by its mean energy over the second half of the budget on a separate tuning batch (synthetic data
# only; the second half rather than the last step, so that a step size that is unstable but lands well once is not chosen).
# Then, from a fresh start, plain Langevin (SGLD = EGDS) runs `bench_evals` evaluations; its final mean energy
# is the target, and for each accelerated sampler we record how many evaluations it needs to reach the target
# (if it never does within the same budget, its ratio is recorded as 1). The ratio evaluations(AEGDS) /
# evaluations(SGLD) is the performance target: at most 1/2. The benchmark is cheap, so it runs on `bench_seeds`
# independent original models (the experiment's `n_seeds` models and, if `bench_seeds` is larger, further ones
# trained the same way), each one value of the ratio.

# %%
#| export
BENCH = {"sgld": "egds", "heun": "heun", "momentum": "momentum", "aegds": "aegds"}

def sampler_benchmark(model, cfg:Config, seed:int, clamp, shape) -> tuple[dict, list]:
    "({sampler: dict(alpha, evals_to_target, ratio)}, trace rows) for SGLD, Heun, momentum and AEGDS at equal score evaluations."
    y = torch.arange(N_CLASSES).repeat_interleave(cfg.bench_per_class)
    def steps(name): return cfg.bench_evals // (2 if name in ("heun", "aegds") else 1)
    def go(name, alpha, gen_seed, trace=None):
        return synthesize(model, y, steps=steps(name), method=BENCH[name], alpha=alpha, dt=cfg.dt, gamma=cfg.gamma,
                          noise_scale=cfg.noise_scale, variant=cfg.variant, x_shape=shape, clamp=clamp,
                          energy_kind=cfg.energy_kind, generator=torch.Generator().manual_seed(gen_seed), trace=trace)
    alphas = {}
    for name in BENCH:                          # step size from the grid, judged on a tuning batch's energy
        best = None
        for a in cfg.alpha_grid:
            tr = []; go(name, a, derive_seed(seed, "bench_tune", name), tr)
            late = [e for n, e in tr if n > cfg.bench_evals // 2]
            e = float(np.mean(late)) if late and all(math.isfinite(v) for v in late) else math.inf
            if best is None or e < best[1]: best = (a, e)
        alphas[name] = best[0]
    traces, rows = {}, []
    for name in BENCH:
        tr = []; go(name, alphas[name], derive_seed(seed, "bench_eval"), tr); traces[name] = tr
        rows += [dict(sampler=name, score_evals=n, mean_energy=e) for n, e in tr]
    target = traces["sgld"][-1][1]
    out = {}
    for name, tr in traces.items():
        hit = next((n for n, e in tr if e <= target), None)
        out[name] = dict(alpha=alphas[name], evals_to_target=hit, ratio=(hit / cfg.bench_evals) if hit is not None else 1.0)
    return out, rows


# %% [markdown]
# ## How each claim is judged
#
# Rules fixed before the `cpu` run; every graded number is a per-seed value (averaged over that seed's tasks)
# summarised by its mean and 95 % t-interval over seeds, and an interval that straddles a threshold is
# `inconclusive`. "Source-free rows" are noise-only + DAMO and EGDS + DAMO; "baselines" for the MIA claim are
# fine-tuning, NegGrad+, noise-only + DAMO and EGDS + DAMO.
#
# 1. **Headline: forgetting without data.** DSDA's forget accuracy is 0 % and its retain accuracy stays close
#    to Retrain's. Reproduced if the interval of DSDA's forget accuracy lies below 0.01 and that of the
#    retain-accuracy gap Retrain - DSDA below 0.05; partially if they lie below 0.05 and 0.10.
# 2. **Best retain accuracy among source-free methods:** per-seed A_r(DSDA) - max(A_r of the source-free rows);
#    reproduced if the interval lies above 0.
# 3. **MIA closest to Retrain:** |MIA(DSDA) - MIA(Retrain)| - min over baselines of |MIA(b) - MIA(Retrain)|;
#    reproduced if the interval lies below 0.
# 4. **Performance target, AEGDS vs Langevin:** the ratio of score evaluations to SGLD's energy at its budget,
#    one value per benchmark model (`bench_seeds`); reproduced if the interval lies below 0.5, partially if below 1.
# 5. **The discrimination loss raises A_r:** A_r(DSDA) - A_r(without it); reproduced if the interval lies above 0.
# 6. **The conflict-averse update raises A_r:** A_r(DSDA) - A_r(c = 0); reproduced if the interval lies above 0.
# 7. **Without the multitask update, unlearning takes longer:** DAMO steps (c = 0) minus DAMO steps (DSDA),
#    counted rather than timed so that load on the machine cannot decide it; reproduced if the interval lies above 0.
# 8. **No degradation with more forget classes:** with the largest multi-class size, DSDA's forget-accuracy
#    interval lies below 0.01 and the growth of the Retrain - DSDA gap over single-class forgetting lies below
#    0.02: reproduced; below 0.05 and 0.05: partially.
# 9. **68.5 % less time than GKT and ISPF:** not testable offline (neither baseline is implemented here).
# 10. **Compact, separated retain features (Fig. 2):** illustrated by a PCA of test features and silhouette
#     scores of the retain classes for Original, Retrain and DSDA; not graded.

# %%
#| export
def _ci(x): return mean_ci(np.asarray(x, dtype=float))

def judge_claims(s:dict, # per-seed arrays (see `run`) and a few strings for the 'ours' column
                 ) -> list:
    "The verdicts of the ten claims from per-seed summaries (keys: af, gap, sf_gain, mia_gain, eval_ratio, disc_gain, mt_gain, mt_steps, multi_af, multi_growth, silhouette)."
    af, gap = _ci(s["af"]), _ci(s["gap"])
    v = []
    ok = lambda e, t: e.has_interval and e.hi < t
    v.append(judge("DSDA forgets the class completely (forget accuracy 0 %) and keeps retain accuracy, with no training data",
                   "A_f = 0 % on every task; A_r best among source-free methods", f"A_f {af}; Retrain - DSDA A_r gap {gap}",
                   reproduced=ok(af, 0.01) and ok(gap, 0.05), partially=ok(af, 0.05) and ok(gap, 0.10),
                   inconclusive=not (af.has_interval and gap.has_interval),
                   rule_text="reproduced if the 95 % intervals of DSDA's forget accuracy < 0.01 and of the Retrain - DSDA retain gap < 0.05; "
                             "partially if < 0.05 and < 0.10; inconclusive without intervals (one seed)", headline=True))
    e = _ci(s["sf_gain"])
    v.append(judge("DSDA has the highest retain accuracy among source-free methods", "highest A_r among source-free methods",
                   f"A_r(DSDA) - best other source-free row: {e}", rule=Rule(">", 0.0, what="A_r gain over the best source-free row"), value=e))
    e = _ci(s["mia_gain"])
    v.append(judge("DSDA's membership-inference rate is the closest to Retrain's", "MIA closest to Retrain",
                   f"|dMIA| DSDA - best baseline: {e}", rule=Rule("<", 0.0, what="|MIA - MIA_Retrain| of DSDA minus the best baseline's"), value=e))
    e = _ci(s["eval_ratio"])
    v.append(judge("AEGDS reaches plain Langevin's sample quality with at most half the score evaluations",
                   "accelerated sampling cuts synthesis time (Fig. 4)", f"evaluation ratio AEGDS / SGLD: {e}",
                   rule=Rule("<", 0.5, 1.0, what="score-evaluation ratio"), value=e))
    e = _ci(s["disc_gain"])
    v.append(judge("The discrimination loss raises retain accuracy", "DSDA-wo-disc has lower A_r (Fig. 4)",
                   f"A_r(DSDA) - A_r(without L_Disc): {e}", rule=Rule(">", 0.0, what="A_r gain from L_Disc"), value=e))
    e = _ci(s["mt_gain"])
    v.append(judge("The conflict-averse update raises retain accuracy", "DSDA-wo-mt has lower A_r (Fig. 4)",
                   f"A_r(DSDA) - A_r(c = 0): {e}", rule=Rule(">", 0.0, what="A_r gain from the conflict-averse update"), value=e))
    e = _ci(s["mt_steps"])
    v.append(judge("Without the multitask update, unlearning takes longer", "DSDA-wo-mt has higher execution time (Fig. 4)",
                   f"DAMO steps (c = 0) - steps (DSDA): {e}", rule=Rule(">", 0.0, what="extra DAMO steps without the update"), value=e))
    if len(s.get("multi_af", [])):
        maf, mg = _ci(s["multi_af"]), _ci(s["multi_growth"])
        v.append(judge("DSDA does not degrade as the number of forget classes grows", "A_f = 0 % and A_r stable on 2-, 4- (and more) class tasks",
                       f"largest size: A_f {maf}; growth of the Retrain - DSDA gap over single-class {mg}",
                       reproduced=ok(maf, 0.01) and ok(mg, 0.02), partially=ok(maf, 0.05) and ok(mg, 0.05),
                       inconclusive=not (maf.has_interval and mg.has_interval),
                       rule_text="reproduced if the intervals of A_f (largest size) < 0.01 and of the gap growth < 0.02; partially if < 0.05 and < 0.05"))
    else:
        v.append(judge("DSDA does not degrade as the number of forget classes grows", "A_f = 0 % and A_r stable on multi-class tasks",
                       "not run", verdict="not_testable_offline", reason="no multi-class tasks in this profile (n_multi_sets = 0)"))
    v.append(judge("DSDA needs 68.5 % less execution time than the source-free baselines GKT and ISPF", "-68.50 % on average",
                   f"synthesis + unlearning: {s.get('time_text', 'see the table')}", verdict="not_testable_offline",
                   reason="GKT and ISPF are not implemented here, and seconds on an 8x8 problem say little about CIFAR-scale runs"))
    v.append(judge("DAMO keeps retain-class features compact and separated, like Retrain (Fig. 2)", "t-SNE: compact clusters",
                   s.get("silhouette", ""), verdict="illustrated", reason="PCA of real test features and silhouette scores below; a picture, not a test"))
    return v


# %% [markdown]
# The rules on crafted per-seed tables with known answers: clear successes, clear failures, noise around the
# threshold, and a single seed (no interval).

# %%
_good = dict(af=[0, 0, 0], gap=[0.02, 0.025, 0.03], sf_gain=[0.02, 0.03, 0.025], mia_gain=[-0.1, -0.12, -0.08], eval_ratio=[0.2, 0.25, 0.22],
             disc_gain=[0.01, 0.012, 0.011], mt_gain=[0.02, 0.03, 0.025], mt_steps=[10, 12, 14], multi_af=[0, 0, 0], multi_growth=[0.0, 0.01, 0.005])
test_eq([x.verdict for x in judge_claims(_good)], ["reproduced"] * 8 + ["not_testable_offline", "illustrated"])
_bad = dict(af=[0.3, 0.35, 0.32], gap=[0.3, 0.35, 0.3], sf_gain=[-0.05, -0.06, -0.04], mia_gain=[0.1, 0.12, 0.11], eval_ratio=[1.0, 1.0, 1.0],
            disc_gain=[-0.02, -0.03, -0.025], mt_gain=[-0.02, -0.03, -0.02], mt_steps=[-10, -12, -11], multi_af=[0.4, 0.5, 0.45], multi_growth=[0.2, 0.3, 0.25])
test_eq([x.verdict for x in judge_claims(_bad)[:8]], ["not_reproduced"] * 8)
_mid = dict(_good, af=[0.0, 0.02, 0.01], gap=[0.06, 0.07, 0.065], eval_ratio=[0.6, 0.7, 0.65], sf_gain=[-0.02, 0.03, 0.0], multi_growth=[0.03, 0.04, 0.035])
test_eq([x.verdict for x in judge_claims(_mid)[:8]], ["partially", "inconclusive", "reproduced", "partially", "reproduced", "reproduced", "reproduced", "partially"])
_one = {k: v[:1] for k, v in _good.items()}
test_eq({x.verdict for x in judge_claims(_one)[:8]}, {"inconclusive"})
test_eq(judge_claims(dict(_good, multi_af=[], multi_growth=[]))[7].verdict, "not_testable_offline")
test_eq(sum(x.headline for x in judge_claims(_good)), 1)


# %% [markdown]
# ## The experiment
#
# `run` does, for every seed: split the data, train the original model, run the sampler benchmark, draw the
# synthetic sets once (noise, EGDS, AEGDS; a synthetic set serves every forget task of that seed, since it only
# depends on the original model), then for every single-class task train Retrain and apply the reference and
# source-free methods; and finally the multi-class tasks (Original, Retrain, DSDA). Times are CPU seconds of
# this process (`time.process_time`), split into synthesis (per seed) and unlearning (per task).

# %% [markdown]
# ### Accuracy against time during unlearning
#
# The paper's Fig. 3 plots retain accuracy against execution time. `StepTrace` records, while an unlearning loop
# runs, the retain and forget accuracy on the real test split every `every` updates, against cumulative CPU seconds
# (`time.process_time`) that start at the method's synthesis time and leave out the trace's own evaluations. It is
# called by `damo` and `neggrad_plus` (`on_step`) and, for loops without a callback such as `trustlib.models.fit`,
# wraps them with `watch`, which listens to the optimiser's steps. Evaluating in eval mode without gradients uses no
# random numbers, so a traced run gives exactly the model an untraced one gives. The experiment traces the first
# forget class of every seed (`curve_every` sets the spacing), and the unlearning seconds in its tables leave the
# trace's evaluations out.
#

# %%
#| export
class StepTrace:
    "Retain and forget accuracy on the real test split against cumulative CPU seconds of an unlearning loop."
    def __init__(self, D:dict, # data of one seed (`load_task_data`)
                 forget, # the forget classes
                 every:int=1, # evaluate every this many updates (and always at the start and the end)
                 t0:float=0.0, # seconds already spent before the loop (synthesis)
                 ):
        te = D["te"]; self.X, self.y = D["X"][te], D["y"][te]
        self.fmask = torch.isin(self.y, torch.tensor(sorted(int(k) for k in forget)))
        self.every, self.seconds, self.overhead, self.rows, self.n = max(int(every), 1), float(t0), 0.0, [], 0
        self.last = time.process_time()
    def __call__(self, step:int, model, force:bool=False):
        "Count the time since the last call, and evaluate `model` if `step` is due (or `force`)."
        now = time.process_time(); self.seconds += now - self.last; self.n = int(step)
        if force or step % self.every == 0:
            was = model.training; model.eval()
            with torch.no_grad(): ok = (model(self.X).argmax(1) == self.y).float()
            model.train(was)
            self.rows.append(dict(step=int(step), seconds=self.seconds, retain_acc=float(ok[~self.fmask].mean()),
                                  forget_acc=float(ok[self.fmask].mean())))
        self.last = time.process_time(); self.overhead += self.last - now
    def start(self, model):
        "Record the starting point (step 0) and reset the clock."
        self.last = time.process_time(); self(0, model, force=True); return self
    def end(self, model):
        "Record the final point, unless the last step was just recorded."
        if not self.rows or self.rows[-1]["step"] != self.n: self(self.n, model, force=True)
        return self
    @contextlib.contextmanager
    def watch(self, model):
        "Count every optimiser step taken inside the block as an update of `model` (for loops without a callback)."
        from torch.optim.optimizer import register_optimizer_step_post_hook
        h = register_optimizer_step_post_hook(lambda opt, args, kwargs: self(self.n + 1, model))
        try: yield self
        finally: h.remove()



# %%
_Dt = dict(X=_xt, y=_yt, te=torch.arange(0, 300, 2))
_tr = StepTrace(_Dt, [2], every=10, t0=0.5).start(_toy)
_un2 = damo(_toy, _xsyn, _yt, [2], lr=1e-2, max_steps=60, batch=32, stop_prob=0.01, seed=0, on_step=_tr)
_tr.end(_un2)
test_eq(all(torch.equal(a, b) for a, b in zip(_un.state_dict().values(), _un2.state_dict().values())), True)   # tracing changes nothing
test_eq([r["step"] for r in _tr.rows][:2], [0, 10]); test_eq(_tr.rows[-1]["step"], _un2.steps_)
test_eq(all(b["seconds"] >= a["seconds"] >= 0.5 for a, b in zip(_tr.rows, _tr.rows[1:])), True)
with torch.no_grad(): _ok = _un2(_xt[_Dt["te"]]).argmax(1) == _yt[_Dt["te"]]
test_close(_tr.rows[-1]["forget_acc"], float(_ok[_yt[_Dt["te"]] == 2].float().mean()), eps=1e-12)
test_close(_tr.rows[0]["retain_acc"], float((_toy(_xt[_Dt["te"]]).argmax(1) == _yt[_Dt["te"]])[_yt[_Dt["te"]] != 2].float().mean()), eps=1e-12)
_ft = copy.deepcopy(_toy)
_tw = StepTrace(_Dt, [2]).start(_ft)
with _tw.watch(_ft): fit(_ft, _xt, _yt, epochs=1, batch_size=100, progress=False)
_tw.end(_ft)
test_eq([r["step"] for r in _tw.rows], [0, 1, 2, 3])   # 300 samples in batches of 100: three optimiser steps


# %%
#| export
ROWS = ("Original", "Retrain", "Fine-tune (real retain data)", "NegGrad+ (real data)", "Noise + DAMO", "EGDS + DAMO",
        "DSDA (AEGDS + DAMO)", "DSDA w/o discrimination", "DSDA w/o multitask (c = 0)", "DSDA, random-label forget loss")
SOURCE = {"Original": "-", "Retrain": "real data", "Fine-tune (real retain data)": "real data", "NegGrad+ (real data)": "real data",
          "Noise + DAMO": "source-free", "EGDS + DAMO": "source-free", "DSDA (AEGDS + DAMO)": "source-free",
          "DSDA w/o discrimination": "source-free", "DSDA w/o multitask (c = 0)": "source-free", "DSDA, random-label forget loss": "source-free"}

KEYS = dict(zip(ROWS, ("original", "retrain", "finetune", "neggrad_plus", "noise_damo", "egds_damo", "dsda", "dsda_wo_disc",
                       "dsda_wo_mt", "dsda_random_label")))
CURVE_ROWS = ("Fine-tune (real retain data)", "NegGrad+ (real data)", "Noise + DAMO", "EGDS + DAMO", "DSDA (AEGDS + DAMO)")

def _cpu(): return time.process_time()

def _silhouette(model, D, retain, seed):
    from sklearn.metrics import silhouette_score
    te = D["te"]; y = D["y"][te]; keep = torch.isin(y, torch.tensor(retain))
    with torch.no_grad(): h = features(model, D["X"][te][keep]).numpy()
    return float(silhouette_score(h, y[keep].numpy(), random_state=seed)), h, y[keep].numpy()

def _curve_figure(cdf, task):
    "Retain and forget accuracy against cumulative CPU seconds: mean over seeds with its 95 % t-interval; Retrain as a point."
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 2, figsize=(11, 3.8), sharex=True)
    lines, rt = cdf[cdf.method != "Retrain"], cdf[cdf.method == "Retrain"]
    grid = np.linspace(0.0, float(cdf.seconds.max()), 120); n_seeds = cdf.seed.nunique()
    for name in [r for r in CURVE_ROWS if r in set(lines.method)]:
        sub = lines[lines.method == name]; per = [g.sort_values("step") for _, g in sub.groupby("seed")]
        for a, col in zip(ax, ("retain_acc", "forget_acc")):
            Y = np.stack([np.where(grid < g.seconds.iloc[0], np.nan, np.interp(grid, g.seconds, g[col])) for g in per])
            ok = np.isfinite(Y).all(0); E = [mean_ci(v) for v in Y.T[ok]]
            l, = a.plot(grid[ok], [e.value for e in E], lw=1.5, label=name)
            a.fill_between(grid[ok], [e.lo for e in E], [e.hi for e in E], color=l.get_color(), alpha=0.15, lw=0)
            t_end = float(np.mean([g.seconds.iloc[-1] for g in per])); a.plot([t_end], [float(np.interp(t_end, grid[ok], [e.value for e in E]))], "o", color=l.get_color(), ms=4)
    for a, col in zip(ax, ("retain_acc", "forget_acc")):
        ex, ey = mean_ci(rt.seconds.to_numpy()), mean_ci(rt[col].to_numpy())
        half = lambda e: [[e.value - e.lo], [e.hi - e.value]] if e.has_interval else None
        a.errorbar([ex.value], [ey.value], xerr=half(ex), yerr=half(ey), fmt="k*", ms=9, label="Retrain (training time)")
        a.set_xlabel("cumulative CPU seconds (synthesis + unlearning)")
    ax[0].set_ylabel("retain accuracy, real test split (fraction)"); ax[1].set_ylabel("forget accuracy, real test split (fraction)")
    ax[1].legend(fontsize=7, loc="upper right")
    fig.suptitle(f"Accuracy against CPU time, forgetting class {task} (mean over {n_seeds} seed(s), band: 95 % t-interval; "
                 "dot: mean stop, final accuracy carried on after it)", fontsize=9)
    fig.tight_layout(); return fig

def run(cfg:Config, progress:bool=True) -> Result:
    "The whole reproduction: single- and multi-class forgetting, the sampler benchmark, verdicts, tables and figures."
    from tqdm.auto import tqdm
    import matplotlib.pyplot as plt
    import pandas as pd
    import seaborn as sns
    with torch_threads(cfg.n_threads):
        recs, multi, bench, traces, syn_rows, samples_fig, feat = [], [], [], [], [], None, None
        curves = []   # accuracy against CPU seconds (first forget class of each seed)
        tasks = [(s, f) for s in range(cfg.n_seeds) for f in cfg.forget_classes]
        bar = tqdm(total=cfg.n_seeds * (len(cfg.forget_classes) + len(cfg.multi_sizes) * cfg.n_multi_sets), desc="dsda tasks", disable=not progress)
        for si in range(cfg.n_seeds):
            sd = derive_seed(cfg.seed, si)
            D = load_task_data(cfg, sd)
            X, y, tr = D["X"], D["y"], D["tr"]
            orig = train_model(cfg, X[tr], y[tr], derive_seed(sd, "original"))
            if si < cfg.bench_seeds:
                b, rows = sampler_benchmark(orig, cfg, derive_seed(sd, "bench"), D["clamp"], D["shape"])
                bench += [dict(seed=si, sampler=k, **v) for k, v in b.items()]; traces += [dict(seed=si, **r) for r in rows]
            ys = torch.arange(N_CLASSES).repeat_interleave(cfg.n_per_class)
            common = dict(dt=cfg.dt, gamma=cfg.gamma, noise_scale=cfg.noise_scale, variant=cfg.variant, x_shape=D["shape"],
                          clamp=D["clamp"], energy_kind=cfg.energy_kind)
            syn, syn_t = {}, {}
            t0 = _cpu(); xn = torch.randn(len(ys), *D["shape"], generator=torch.Generator().manual_seed(derive_seed(sd, "noise"))).clamp(*D["clamp"])
            with torch.no_grad(): yn = orig(xn).argmax(1)
            syn["noise"] = (xn, yn); syn_t["noise"] = _cpu() - t0
            t0 = _cpu(); syn["egds"] = (synthesize(orig, ys, steps=cfg.egds_steps, method="egds", alpha=cfg.egds_alpha, **common,
                                                   generator=torch.Generator().manual_seed(derive_seed(sd, "egds"))), ys); syn_t["egds"] = _cpu() - t0
            t0 = _cpu(); syn["aegds"] = (synthesize(orig, ys, steps=cfg.aegds_steps, method="aegds", alpha=cfg.aegds_alpha, **common,
                                                    generator=torch.Generator().manual_seed(derive_seed(sd, "aegds"))), ys); syn_t["aegds"] = _cpu() - t0
            for k, (xs_, ys_) in syn.items():
                with torch.no_grad(): hit = float((orig(xs_).argmax(1) == ys_).float().mean())
                syn_rows.append(dict(seed=si, source=k, target_rate=hit, classes_present=int(len(torch.unique(ys_))), seconds=syn_t[k]))
            if samples_fig is None: samples_fig = {k: syn[k][0][:: cfg.n_per_class].squeeze(1).numpy() for k in ("egds", "aegds")}
            dkw = dict(lam=cfg.lam, c=cfg.c, forget_loss=cfg.forget_loss, centers=cfg.centers, delta=cfg.delta, m=cfg.margin,
                       lr=cfg.damo_lr, max_steps=cfg.damo_max_steps, batch=cfg.damo_batch, check_every=cfg.check_every, stop_prob=cfg.stop_prob)
            def row(task, name, model, t_syn, t_un, steps=None, n_forget=1):
                return dict(seed=si, task=task, n_forget=n_forget, method=name, **evaluate(model, D, task_f),
                            synthesis_seconds=t_syn, unlearning_seconds=t_un, damo_steps=steps)
            for f in cfg.forget_classes:
                task_f = [f]; fc, rc = check_forget_classes(task_f, N_CLASSES); ts = derive_seed(sd, "task", f)
                rmask = torch.isin(y[tr], torch.tensor(rc)); Xr, yr, Xf, yf = X[tr][rmask], y[tr][rmask], X[tr][~rmask], y[tr][~rmask]
                def traced(name, fn, t_syn=0.0):
                    "(model, seconds spent on tracing): fn(on_step), traced for the curves' rows and the first forget class."
                    if not (cfg.curve_every and f == cfg.forget_classes[0] and name in CURVE_ROWS): return fn(None), 0.0
                    st = StepTrace(D, task_f, cfg.curve_every, t_syn).start(orig); m = fn(st); st.end(m)
                    curves.extend(dict(seed=si, task=f, method=name, **r) for r in st.rows); return m, st.overhead
                def finetune(st):
                    m = copy.deepcopy(orig)
                    with (st.watch(m) if st is not None else contextlib.nullcontext()):
                        fit(m, Xr, yr, epochs=cfg.finetune_epochs, lr=cfg.train_lr, batch_size=cfg.batch_size, seed=derive_seed(ts, "ft"), progress=False, threads=None)
                    return m
                out = [row(f, "Original", orig, 0.0, 0.0)]
                t0 = _cpu(); m = train_model(cfg, Xr, yr, derive_seed(ts, "retrain")); out.append(row(f, "Retrain", m, 0.0, _cpu() - t0))
                if feat is None: feat = dict(Original=orig, Retrain=m)
                t0 = _cpu(); m, o = traced("Fine-tune (real retain data)", finetune)
                out.append(row(f, "Fine-tune (real retain data)", m, 0.0, _cpu() - t0 - o))
                t0 = _cpu(); m, o = traced("NegGrad+ (real data)", lambda st: neggrad_plus(orig, Xr, yr, Xf, yf, epochs=cfg.neggrad_epochs, lr=cfg.damo_lr,
                                                                                          batch=cfg.batch_size, seed=derive_seed(ts, "ng"), on_step=st))
                out.append(row(f, "NegGrad+ (real data)", m, 0.0, _cpu() - t0 - o))
                for name, src, extra in [("Noise + DAMO", "noise", {}), ("EGDS + DAMO", "egds", {}), ("DSDA (AEGDS + DAMO)", "aegds", {}),
                                         ("DSDA w/o discrimination", "aegds", dict(use_disc=False)), ("DSDA w/o multitask (c = 0)", "aegds", dict(c=0.0)),
                                         ("DSDA, random-label forget loss", "aegds", dict(forget_loss="random_label"))]:
                    t0 = _cpu(); m, o = traced(name, lambda st: damo(orig, *syn[src], task_f, **{**dkw, **extra}, seed=derive_seed(ts, "damo"), on_step=st), syn_t[src])
                    out.append(row(f, name, m, syn_t[src], _cpu() - t0 - o, m.steps_))
                    if feat is not None and "DSDA" not in feat and name.startswith("DSDA ("): feat["DSDA"] = m; feat["retain"] = rc; feat["D"] = D
                recs += out; bar.update(1)
            mrng = np.random.default_rng(derive_seed(sd, "multi"))
            for size in cfg.multi_sizes:
                for j in range(cfg.n_multi_sets):
                    task_f = sorted(mrng.choice(N_CLASSES, size=size, replace=False).tolist())
                    fc, rc = check_forget_classes(task_f, N_CLASSES); ts = derive_seed(sd, "multi", size, j)
                    rmask = torch.isin(y[tr], torch.tensor(rc))
                    out = [row(str(task_f), "Original", orig, 0.0, 0.0, n_forget=size)]
                    t0 = _cpu(); m = train_model(cfg, X[tr][rmask], y[tr][rmask], derive_seed(ts, "retrain"))
                    out.append(row(str(task_f), "Retrain", m, 0.0, _cpu() - t0, n_forget=size))
                    t0 = _cpu(); m = damo(orig, *syn["aegds"], task_f, **dkw, seed=derive_seed(ts, "damo"))
                    out.append(row(str(task_f), "DSDA (AEGDS + DAMO)", m, syn_t["aegds"], _cpu() - t0, m.steps_, n_forget=size))
                    multi += out; bar.update(1)
        bar.close()
        for si in tqdm(range(cfg.n_seeds, cfg.bench_seeds), desc="sampler benchmark, extra models", disable=not progress):
            sd = derive_seed(cfg.seed, si); D = load_task_data(cfg, sd)
            orig = train_model(cfg, D["X"][D["tr"]], D["y"][D["tr"]], derive_seed(sd, "original"))
            b, rows = sampler_benchmark(orig, cfg, derive_seed(sd, "bench"), D["clamp"], D["shape"])
            bench += [dict(seed=si, sampler=k, **v) for k, v in b.items()]; traces += [dict(seed=si, **r) for r in rows]
    df = pd.DataFrame(recs); mdf = pd.DataFrame(multi); bdf = pd.DataFrame(bench); tdf = pd.DataFrame(traces); sdf = pd.DataFrame(syn_rows)
    cdf = pd.DataFrame(curves, columns=["seed", "task", "method", "step", "seconds", "retain_acc", "forget_acc"])
    if cfg.curve_every:   # Retrain as one point: its training time and accuracies
        rt = df[(df.method == "Retrain") & (df.task == cfg.forget_classes[0])]
        cdf = pd.concat([cdf, rt.assign(step=np.nan, seconds=rt.unlearning_seconds)[list(cdf.columns)]], ignore_index=True)
    # per-seed summaries (mean over that seed's tasks)
    ps = df.groupby(["seed", "method"])[["retain_acc", "forget_acc", "mia", "damo_steps"]].mean()
    A = lambda meth, col: ps.xs(meth, level="method")[col].to_numpy()
    dsda = "DSDA (AEGDS + DAMO)"
    mia_d = lambda meth: np.abs(A(meth, "mia") - A("Retrain", "mia"))
    base = ["Fine-tune (real retain data)", "NegGrad+ (real data)", "Noise + DAMO", "EGDS + DAMO"]
    s = dict(af=A(dsda, "forget_acc"), gap=A("Retrain", "retain_acc") - A(dsda, "retain_acc"),
             sf_gain=A(dsda, "retain_acc") - np.maximum(A("Noise + DAMO", "retain_acc"), A("EGDS + DAMO", "retain_acc")),
             mia_gain=mia_d(dsda) - np.min(np.stack([mia_d(b) for b in base]), 0),
             eval_ratio=bdf[bdf.sampler == "aegds"].sort_values("seed").ratio.to_numpy(),
             disc_gain=A(dsda, "retain_acc") - A("DSDA w/o discrimination", "retain_acc"),
             mt_gain=A(dsda, "retain_acc") - A("DSDA w/o multitask (c = 0)", "retain_acc"),
             mt_steps=A("DSDA w/o multitask (c = 0)", "damo_steps") - A(dsda, "damo_steps"))
    if len(mdf):
        big = max(cfg.multi_sizes); mps = mdf[mdf.n_forget == big].groupby(["seed", "method"])[["retain_acc", "forget_acc"]].mean()
        MA = lambda meth, col: mps.xs(meth, level="method")[col].to_numpy()
        s["multi_af"] = MA(dsda, "forget_acc"); s["multi_growth"] = (MA("Retrain", "retain_acc") - MA(dsda, "retain_acc")) - s["gap"]
    else: s["multi_af"], s["multi_growth"] = [], []
    # feature picture (first seed, first task)
    sil = {}; proj = []
    from sklearn.decomposition import PCA
    for name in ("Original", "Retrain", "DSDA"):
        sc, h, yy = _silhouette(feat[name], feat["D"], feat["retain"], cfg.seed); sil[name] = sc
        z = PCA(2, random_state=0).fit_transform(h); proj.append((name, z, yy))
    s["silhouette"] = "silhouette of retain classes (test features): " + ", ".join(f"{k} {v:.2f}" for k, v in sil.items())
    t_d = df[df.method == dsda]; s["time_text"] = f"DSDA {t_d.synthesis_seconds.mean():.2f} s synthesis + {t_d.unlearning_seconds.mean():.2f} s unlearning (CPU)"
    verdicts = judge_claims(s)
    # tables
    table = (df.groupby("method", sort=False)[["retain_acc", "forget_acc", "mia", "synthesis_seconds", "unlearning_seconds", "damo_steps"]]
               .agg(["mean", "std"]))
    table.columns = [f"{a}_{b}" for a, b in table.columns]; table = table.reindex(list(ROWS)); table.insert(0, "data", [SOURCE[r] for r in table.index])
    mtable = mdf.groupby(["n_forget", "method"], sort=False)[["retain_acc", "forget_acc", "mia", "unlearning_seconds"]].mean() if len(mdf) else pd.DataFrame()
    btable = bdf.groupby("sampler", sort=False).agg(alpha=("alpha", lambda a: ", ".join(f"{x:g}" for x in sorted(set(a)))),
                                                     ratio_mean=("ratio", "mean"), ratio_min=("ratio", "min"), ratio_max=("ratio", "max"))
    btable["ratio_ci"] = [str(mean_ci(bdf[bdf.sampler == k].ratio.to_numpy())) for k in btable.index]
    stable = sdf.groupby("source")[["target_rate", "classes_present", "seconds"]].mean()
    # figures
    figs = {}
    fig, ax = plt.subplots(2, N_CLASSES, figsize=(1.1 * N_CLASSES, 2.6))
    for r, k in enumerate(("egds", "aegds")):
        for j in range(N_CLASSES):
            ax[r, j].imshow(samples_fig[k][j], cmap="gray"); ax[r, j].set_xticks([]); ax[r, j].set_yticks([])
            if r == 0: ax[r, j].set_title(f"class {j}", fontsize=8)
        ax[r, 0].set_ylabel(k.upper(), fontsize=9)
    fig.suptitle("Synthetic samples (one per class, first seed)"); figs["samples"] = fig
    fig, ax = plt.subplots(figsize=(6, 3.8))
    sns.lineplot(tdf, x="score_evals", y="mean_energy", hue="sampler", ax=ax, errorbar=("pi", 100))
    ax.axhline(tdf[(tdf.sampler == "sgld") & (tdf.score_evals == cfg.bench_evals)].mean_energy.mean(), color="grey", ls="--", lw=1, label="SGLD at budget")
    ax.set_yscale("log"); ax.set_xlabel("score evaluations (forward + backward passes)"); ax.set_ylabel("mean energy -log p(y|x) (nats, log scale)")
    ax.set_title("Sampler efficiency (band: range over seeds)"); ax.legend(); figs["sampler_efficiency"] = fig
    fig, ax = plt.subplots(1, 3, figsize=(11, 3.4))
    for a, (name, z, yy) in zip(ax, proj):
        sc = a.scatter(z[:, 0], z[:, 1], c=yy, cmap="tab10", s=6, vmin=0, vmax=9); a.set_title(f"{name} (silhouette {sil[name]:.2f})")
        a.set_xlabel("PC 1 (feature units)"); a.set_ylabel("PC 2 (feature units)")
    fig.suptitle("Real test features of the retain classes (first seed, first task)"); figs["features"] = fig
    fig, ax = plt.subplots(figsize=(8, 3.6))
    bar_df = df.melt(id_vars=["method"], value_vars=["retain_acc", "forget_acc"], var_name="metric", value_name="accuracy")
    sns.barplot(bar_df, y="method", x="accuracy", hue="metric", order=list(ROWS), ax=ax, errorbar=("ci", 95))
    ax.set_xlabel("accuracy on the real test split (fraction)"); ax.set_ylabel(""); ax.set_title("Single-class forgetting, mean over classes and seeds (95 % CI)")
    figs["accuracy_bars"] = fig
    if len(cdf): figs["accuracy_vs_time"] = _curve_figure(cdf, cfg.forget_classes[0])
    for f_ in figs.values(): f_.tight_layout()
    metrics = {}
    for r in ROWS:
        sub = df[df.method == r]; key = KEYS[r]
        metrics[f"single/{key}/retain_acc"] = float(sub.retain_acc.mean()); metrics[f"single/{key}/forget_acc"] = float(sub.forget_acc.mean())
        metrics[f"single/{key}/mia"] = float(sub.mia.mean()); metrics[f"single/{key}/unlearning_seconds"] = float(sub.unlearning_seconds.mean())
    for k in BENCH: metrics[f"bench/{k}_ratio"] = float(bdf[bdf.sampler == k].ratio.mean())
    for k in ("noise", "egds", "aegds"): metrics[f"synth/{k}_target_rate"] = float(sdf[sdf.source == k].target_rate.mean())
    for k, v in sil.items(): metrics[f"features/{k.lower()}_silhouette"] = v
    if len(mdf):
        for (n, meth), r_ in mtable.iterrows():
            if meth in ("Retrain", dsda):
                k_ = f"multi/k{n}_{meth.split(' (')[0].lower()}"
                metrics[f"{k_}_retain_acc"] = float(r_.retain_acc); metrics[f"{k_}_forget_acc"] = float(r_.forget_acc)
    return Result(paper="dsda", config=cfg.to_dict(), metrics=metrics, verdicts=verdicts,
                  tables=dict(single_class=table, multi_class=mtable, sampler_benchmark=btable, synthetic_sets=stable, per_task=df,
                              accuracy_vs_time=cdf),
                  figures=figs)


# %%
result = run_experiment(run, cfg)

# %% [markdown]
# ### Single-class forgetting (mean and standard deviation over classes and seeds)
#
# Accuracies are on the real test split; MIA is the entropy attack's member rate on the forget-train split
# (the target is Retrain's); times are CPU seconds (synthesis once per seed and data source, unlearning per task).

# %%
result.tables["single_class"].round(3)

# %% [markdown]
# The synthetic sets: the share of samples the original model assigns to their target class, and the number of
# classes present (noise inputs labelled by the model's argmax leave classes out). The condition DSDA depends
# on, that sampling from the model's energy yields class-specific inputs where noise does not, is checked here.

# %%
result.tables["synthetic_sets"].round(3)

# %%
assert result.metrics["synth/aegds_target_rate"] >= 0.9 and result.metrics["synth/egds_target_rate"] >= 0.9
assert result.metrics["synth/noise_target_rate"] == 1.0 or result.tables["synthetic_sets"].loc["noise", "classes_present"] <= 10

# %% [markdown]
# ### Sampler efficiency
#
# Mean energy of the synthetic batch against the number of score evaluations, each sampler at its own best step
# size; the table gives the number of evaluations each needs to match plain Langevin at its full budget, as a
# fraction of that budget.

# %%
result.figures["sampler_efficiency"]

# %%
result.tables["sampler_benchmark"]

# %%
result.figures["samples"]

# %% [markdown]
# ### Multi-class forgetting (means over random class sets and seeds)

# %%
result.tables["multi_class"].round(3) if len(result.tables["multi_class"]) else "no multi-class tasks in this profile"

# %% [markdown]
# ### Features and ablations

# %%
result.figures["features"]

# %%
result.figures["accuracy_bars"]

# %% [markdown]
# ### Accuracy against time
#
# The analogue of the paper's Fig. 3 for the first forget class of every seed: retain and forget accuracy on the
# real test split against cumulative CPU seconds, the source-free rows starting at their synthesis time (the
# per-step values are in `result.tables["accuracy_vs_time"]`).

# %%
result.figures.get("accuracy_vs_time", "no accuracy curves in this run (curve_every = 0)")

# %% [markdown]
# The real-data references start at zero seconds and the source-free rows only once their synthetic set exists
# (at the `cpu` settings AEGDS's 16 score evaluations against EGDS's 40 put DSDA's start left of EGDS + DAMO's); read
# off where each curve's forget accuracy reaches zero and the retain accuracy it holds there, against the Retrain
# point, which costs a whole training run.

# %% [markdown]
# ## How the settings were chosen
#
# None of the sampler or unlearning hyperparameters are in the paper. We chose them on data that is not the
# evaluation split:
#
# - **Sampler step sizes** by the mean synthetic energy alone (the benchmark repeats that choice per seed over
#   `alpha_grid`). AEGDS with 8 steps (16 score evaluations) and EGDS with 40 steps, 60 samples per class: on the
#   validation split below, 3 to 20 AEGDS steps and 60 or 200 samples per class changed retain accuracy by about
#   one point.
# - **DAMO** (learning rate 1e-3, c = 0.4, delta = 32, the forget loss and the stopping rule) on a validation split:
#   one fifth of the *training* part of an extra seed (12345), with an original model trained on the other four
#   fifths and all ten classes forgotten one at a time; the test split that the tables report was not used.
#   With the forget loss we first planned (a random retain class re-drawn each step), stopping once the held-out
#   synthetic forget samples were all reassigned left forget accuracy above 0 on some classes (this also showed on
#   the test split of our first `cpu` run, which is why we revisited the rule); stopping by a forget-class
#   probability instead gave, on the validation split, retain / forget accuracy 0.919 / 0.080 (threshold 0.3),
#   0.837 / 0.012 (0.05) and 0.764 / 0.000 (0.002). Relabelling each forget sample to its most probable retain
#   class instead gave 0.934 / 0.008 (0.01) and 0.929 / 0.000 (5e-4), so we use that forget loss with
#   `stop_prob = 5e-4`. A lower learning rate (3e-4, 1e-4), down-weighting the forget loss or gradient ascent were
#   no better on that split. The random-label loss stays in the table as a row for comparison.
# - The CNN width (16, about 6k parameters) and 30 training epochs keep the `cpu` profile within its
#   five-minute budget on two cores.

# %% [markdown]
# ## Paper vs. us

# %%
result.verdict_table()

# %% [markdown]
# The verdicts above follow the rules stated in "How each claim is judged" and are recomputed from whichever
# profile ran (the committed page shows a `cpu` run; a `smoke` run has one seed and no intervals, so every graded
# claim is `inconclusive` there). How to read them:
#
# - **The source-free premise holds at this scale.** The synthetic-set table shows that the original model's own
#   energy yields inputs it assigns to their target class, for every class, while noise inputs labelled by the
#   model miss classes; the single-class table shows how close DSDA's real-data forget and retain accuracy come to
#   Retrain's without touching any real data, and the headline verdict grades exactly that.
# - **What the forget loss does.** The paper's forget loss is not in the available text; the row "DSDA, random-label
#   forget loss" shows the variant we first planned next to the one we use (relabelling to the most probable retain
#   class), so the reader can see how much of DSDA's retain accuracy rests on that reconstruction.
# - **Ablations.** The discrimination loss and the conflict-averse update are small perturbations on an 8x8
#   problem; their verdicts say whether the per-seed differences clear zero. Because DAMO stops by a rule on
#   synthetic samples, the number of steps it takes is a measured outcome, which is how claim 7 is tested.
# - **Efficiency.** The benchmark figure shows each half of the acceleration (Heun, momentum) and both together
#   against plain Langevin at equal score evaluations; the verdict on the "at most half" target uses one ratio per
#   benchmark model. The synthesis seconds in the single-class table are for the settings used (AEGDS 8 steps,
#   EGDS 40 steps), not an equal-quality comparison. The 68.5 % claim against GKT and ISPF is left untested.
