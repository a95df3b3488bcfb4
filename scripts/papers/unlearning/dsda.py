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
#   digits with a small CNN trained from scratch; single-class forgetting of every class and multi-class
#   forgetting (4 classes at a time) over five seeds, against Original, Retrain, fine-tuning and NegGrad+ on real
#   data (references that do use data), and the source-free rows noise-only + DAMO, plain EGDS + DAMO,
#   CE + NegGrad on the synthetic data, a small GKT-style generator baseline, and the two ablations. Costs are
#   counted in floating-point operations (machine-independent), not seconds.
# - **Our choices, not the paper's:** the forget loss (its formula is missing from the available text: three
#   candidates, one picked per model from synthetic data only), DAMO's stopping rule and its threshold (also set
#   from synthetic data only), the class centres (mean synthetic feature of each class under the original
#   model), a small noise scale in the sampler (pure sqrt(2 alpha) noise swamps 8x8 images), the measure of
#   sample quality in the sampler benchmark, the GKT-style baseline (a reduced version of Chundawat et al.'s
#   gated knowledge transfer), the CNN width (about 6k parameters rather than ResNet-18) and all step sizes.
#   How each was chosen is said where it is set.
# - **Not testable offline:** the CIFAR-10/100 and PinsFace tables, and the comparison with ISPF (not
#   implemented). The `full` profile's code path exists and stops with a clear message when the CIFAR-10
#   arrays are missing.
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
from trustlib.config import BaseConfig, param, ConfigError, ResourceUnavailable, derive_seed, cpu_threads, allow_large_env
from trustlib.models import SmallCNN, fit, predict_proba
from trustlib.results import Result, Claim, Change, Above, Below, AtLeast, Diff, AllOf, BestAmong

# %%
#| hide
from fastcore.test import test_eq, test_close, test_fail
from trustlib.results import run_experiment, claims_table, grade, synthetic_metrics
import pandas as pd
import warnings
from tqdm import TqdmWarning

# %%
#| hide
warnings.filterwarnings("ignore", category=TqdmWarning)   # no notebook widgets under papermill: plain-text progress bars are fine
torch.set_num_threads(1)   # the examples below run on one thread, as `run` does (cfg.n_threads)

# %%
from typing import Optional

# %% tags=["parameters"]
profile: str = "smoke"  # smoke (CI, < 60 s) | cpu (published results, minutes) | full (paper scale)
seed: Optional[int] = None  # base random seed; every random choice derives from it
n_seeds: Optional[int] = None  # repetitions (independent splits, models, samples)
forget_classes: Optional[list[int]] = None  # single-class tasks: classes forgotten one at a time
tasks_per_seed: Optional[int] = None  # single-class tasks per seed, taken in turn from forget_classes (0: all of them for every seed)
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
stop_rule: Optional[str] = None  # DAMO's stopping threshold: the synthetic reference level, or the fixed stop_prob
stop_prob: Optional[float] = None  # fixed stopping threshold (stop_rule fixed): mean forget-class probability on held-out synthetic forget samples
c: Optional[float] = None  # conflict-averse radius c (0: plain weighted sum)
lam: Optional[list[float]] = None  # loss weights (retain, forget, discrimination)
delta: Optional[float] = None  # Circle-loss scale delta
margin: Optional[float] = None  # Circle-loss relaxation m
forget_loss: Optional[str] = None  # forget loss: select one per model from synthetic data, or CE toward the most probable / a random retain class, or clipped gradient ascent
centers: Optional[str] = None  # class centres: mean synthetic feature, or classifier weight rows
finetune_epochs: Optional[int] = None  # reference: fine-tuning epochs on real retain data
neggrad_epochs: Optional[int] = None  # reference: NegGrad+ epochs on real data
bench_evals: Optional[int] = None  # sampler benchmark: plain Langevin's score-evaluation budget (the others get twice as many)
bench_per_class: Optional[int] = None  # sampler benchmark: samples per class
alpha_grid: Optional[list[float]] = None  # sampler benchmark: step sizes (at least three, increasing)
evaluator_width: Optional[int] = None  # sampler benchmark: width of the independent evaluator CNN
evaluator_epochs: Optional[int] = None  # sampler benchmark: training epochs of the evaluator CNN
gkt_batches: Optional[int] = None  # GKT-style baseline: pseudo-batches (its budget)
gkt_batch: Optional[int] = None  # GKT-style baseline: generated samples per pseudo-batch
gkt_student_iters: Optional[int] = None  # GKT-style baseline: student updates per pseudo-batch
gkt_eval_every: Optional[int] = None  # GKT-style baseline: evaluate the student every this many pseudo-batches
gkt_threshold: Optional[float] = None  # GKT-style baseline: the gate drops samples whose teacher forget-class probability exceeds this
gkt_beta: Optional[float] = None  # GKT-style baseline: weight of the attention-transfer loss
gkt_penalty: Optional[float] = None  # GKT-style baseline: weight of the generator's forget-class penalty
gkt_lr: Optional[float] = None  # GKT-style baseline: Adam learning rate of the generator and the student
match_tol: Optional[float] = None  # cost comparison: GKT matches DSDA when within this accuracy of DSDA's retain and forget accuracy
curve_every: Optional[int] = None  # accuracy-vs-compute curves (first task of each seed): evaluate every this many unlearning steps; 0: no curves
n_threads: Optional[int] = None  # torch and BLAS threads inside run (1: every number independent of the machine's core count)

# %% [markdown] tags=["injected-parameters"]
# **This page shows a run with** `profile = "cpu"` (run `cpu-bf21a9e8fb`, commit `19f58d1`, 102 s, 2026-12-05). Running the notebook yourself uses the parameters cell above as written (the fast `smoke` profile unless you change it); `trustlib run dsda --profile cpu` repeats the run shown here.

# %% [markdown]
# ## Configuration
#
# One validated `Config` per run. The `cpu` values were chosen as described in "How the settings were chosen"
# below; the `smoke` values only make the notebook fast. Besides the per-field limits, a configuration's whole
# cost is estimated before any work (in model passes over one sample: training, sampling, unlearning, the
# benchmark and the baseline, times the seeds); above a soft bound it is refused unless `allow_large=True`
# (CLI: `--allow-large`). A profile's own configuration is always allowed.

# %%
#| export
VARIANTS = ("algorithm1", "eq5")
ENERGIES = ("softmax", "logit")
FORGET_LOSSES = ("nearest_label", "random_label", "ascent")
CENTERS = ("synthetic_mean", "classifier")
STOP_RULES = ("synthetic_reference", "fixed")
N_CLASSES = 10
N_TRAIN = 1258          # training images per split (70 % of the 1,797 digits)
SOFT_COST = 4e8         # soft bound on `estimated_cost` (model passes over one sample): about ten times the cpu profile

def estimated_cost(p:dict) -> float:
    "Rough cost of a configuration (a dict of Config fields) in model passes over one sample (a backward pass counts two)."
    tasks = (p["tasks_per_seed"] or len(p["forget_classes"])) + len(p["multi_sizes"]) * p["n_multi_sets"]
    train = 3 * p["train_epochs"] * N_TRAIN * (2 + tasks) + 3 * (p["finetune_epochs"] + p["neggrad_epochs"]) * N_TRAIN * tasks
    synth = 3 * N_CLASSES * p["n_per_class"] * (p["egds_steps"] + 4 * p["aegds_steps"])
    damo = 3 * 3 * p["damo_max_steps"] * 2 * p["damo_batch"] * (6 * tasks + 3)
    bench = 3 * len(p["alpha_grid"]) * 7 * p["bench_evals"] * N_CLASSES * p["bench_per_class"] + 3 * p["evaluator_epochs"] * N_TRAIN
    gkt = 6 * p["gkt_batches"] * p["gkt_batch"] * (2 + p["gkt_student_iters"])
    return float(p["n_seeds"] * (train + synth + damo + bench + gkt) * max(p["width"] / 16, 1.0))

@dataclass
class Config(BaseConfig):
    "Parameters of the DSDA reproduction (defaults: the `smoke` profile)."
    n_seeds: int = param(1, "repetitions (independent splits, models, samples)", ge=1, le=100, max=20)
    forget_classes: tuple[int, ...] = param((3,), "single-class tasks: classes forgotten one at a time", ge=0, le=N_CLASSES - 1)
    tasks_per_seed: int = param(0, "single-class tasks per seed, taken in turn from forget_classes (0: all of them for every seed)", ge=0, le=N_CLASSES)
    multi_sizes: tuple[int, ...] = param((2,), "multi-class tasks: numbers of classes forgotten together", ge=1, le=N_CLASSES - 1)
    n_multi_sets: int = param(1, "multi-class tasks: random class sets per size and seed (0: none)", ge=0, le=100, max=10)
    width: int = param(16, "SmallCNN width (channels of the first conv)", ge=2, le=256, max=64)
    train_epochs: int = param(3, "epochs of the original and retrained models", ge=1, le=1000, max=200)
    train_lr: float = param(3e-3, "Adam learning rate of the original and retrained models", gt=0, le=1)
    batch_size: int = param(64, "batch size of the original and retrained models", ge=1, le=4096)
    n_per_class: int = param(12, "synthetic samples per class", ge=2, le=10_000, max=2000)
    aegds_steps: int = param(4, "AEGDS steps (two score evaluations each)", ge=1, le=10_000, max=500)
    aegds_alpha: float = param(3.0, "AEGDS step size alpha", gt=0, le=100)
    dt: float = param(1.0, "AEGDS time step Delta t", ge=0, le=100)
    gamma: float = param(0.9, "AEGDS momentum gamma", ge=0, lt=1)
    egds_steps: int = param(8, "EGDS (plain Langevin) steps", ge=1, le=10_000, max=1000)
    egds_alpha: float = param(1.0, "EGDS step size alpha", gt=0, le=100)
    noise_scale: float = param(0.01, "multiplies the sampler noise sqrt(2 alpha dt); 1 is pure Langevin", ge=0, le=10)
    variant: str = param("algorithm1", "AEGDS update: Algorithm 1 as written, or the placement of Eq. 5", choices=VARIANTS)
    energy_kind: str = param("softmax", "energy: -log softmax (the paper) or -logit (JEM)", choices=ENERGIES)
    damo_lr: float = param(1e-3, "DAMO Adam learning rate", gt=0, le=1)
    damo_max_steps: int = param(10, "DAMO steps at most", ge=1, le=100_000, max=5000)
    damo_batch: int = param(64, "DAMO batch size", ge=1, le=4096)
    check_every: int = param(5, "DAMO checks its stopping rule every this many steps", ge=1, le=10_000)
    stop_rule: str = param("synthetic_reference", "DAMO's stopping threshold: the synthetic reference level, or the fixed stop_prob", choices=STOP_RULES)
    stop_prob: float = param(5e-4, "fixed stopping threshold (stop_rule fixed): mean forget-class probability on held-out synthetic forget samples", ge=0, le=1)
    c: float = param(0.4, "conflict-averse radius c (0: plain weighted sum)", ge=0, lt=1)
    lam: tuple[float, float, float] = param((1.0, 1.0, 1.0), "loss weights (retain, forget, discrimination)", ge=0, le=100)
    delta: float = param(32.0, "Circle-loss scale delta", gt=0, le=1024)
    margin: float = param(0.25, "Circle-loss relaxation m", ge=0, le=1)
    forget_loss: str = param("select", "forget loss: select one per model from synthetic data, or CE toward the most probable / a random retain class, or clipped gradient ascent", choices=("select",) + FORGET_LOSSES)
    centers: str = param("synthetic_mean", "class centres: mean synthetic feature, or classifier weight rows", choices=CENTERS)
    finetune_epochs: int = param(1, "reference: fine-tuning epochs on real retain data", ge=1, le=1000, max=100)
    neggrad_epochs: int = param(1, "reference: NegGrad+ epochs on real data", ge=1, le=1000, max=100)
    bench_evals: int = param(4, "sampler benchmark: plain Langevin's score-evaluation budget (the others get twice as many)", ge=2, le=10_000, max=500)
    bench_per_class: int = param(3, "sampler benchmark: samples per class", ge=2, le=10_000, max=500)
    alpha_grid: tuple[float, ...] = param((0.3, 1.0, 3.0), "sampler benchmark: step sizes (at least three, increasing)", gt=0, le=100)
    evaluator_width: int = param(8, "sampler benchmark: width of the independent evaluator CNN", ge=2, le=256, max=64)
    evaluator_epochs: int = param(2, "sampler benchmark: training epochs of the evaluator CNN", ge=1, le=1000, max=200)
    gkt_batches: int = param(3, "GKT-style baseline: pseudo-batches (its budget)", ge=1, le=100_000, max=2000)
    gkt_batch: int = param(32, "GKT-style baseline: generated samples per pseudo-batch", ge=2, le=4096, max=1024)
    gkt_student_iters: int = param(10, "GKT-style baseline: student updates per pseudo-batch", ge=1, le=100)
    gkt_eval_every: int = param(2, "GKT-style baseline: evaluate the student every this many pseudo-batches", ge=1, le=10_000)
    gkt_threshold: float = param(0.01, "GKT-style baseline: the gate drops samples whose teacher forget-class probability exceeds this", gt=0, le=1)
    gkt_beta: float = param(250.0, "GKT-style baseline: weight of the attention-transfer loss", ge=0, le=10_000)
    gkt_penalty: float = param(1.0, "GKT-style baseline: weight of the generator's forget-class penalty", ge=0, le=1000)
    gkt_lr: float = param(1e-3, "GKT-style baseline: Adam learning rate of the generator and the student", gt=0, le=1)
    match_tol: float = param(0.01, "cost comparison: GKT matches DSDA when within this accuracy of DSDA's retain and forget accuracy", ge=0, le=1)
    curve_every: int = param(2, "accuracy-vs-compute curves (first task of each seed): evaluate every this many unlearning steps; 0: no curves", ge=0, le=10_000)
    n_threads: int = param(1, "torch and BLAS threads inside run (1: every number independent of the machine's core count)", ge=1, le=256)
    PROFILE_DEFAULTS = {
        "cpu": dict(n_seeds=5, forget_classes=tuple(range(N_CLASSES)), tasks_per_seed=2, multi_sizes=(4,), n_multi_sets=1, train_epochs=15,
                    n_per_class=40, aegds_steps=8, egds_steps=40, finetune_epochs=5, neggrad_epochs=3, damo_max_steps=100,
                    bench_evals=12, bench_per_class=12, alpha_grid=(0.03, 0.1, 0.3, 1.0, 3.0), evaluator_epochs=10,
                    gkt_batches=45, gkt_batch=64, gkt_eval_every=5, curve_every=2),
        "full": dict(n_seeds=3, forget_classes=tuple(range(N_CLASSES)), multi_sizes=(2, 4), n_multi_sets=2, width=64, train_epochs=60,
                     n_per_class=500, aegds_steps=20, egds_steps=100, damo_max_steps=2000, damo_batch=256, batch_size=256,
                     finetune_epochs=5, neggrad_epochs=3, bench_evals=100, bench_per_class=50, alpha_grid=(0.03, 0.1, 0.3, 1.0, 3.0, 10.0),
                     evaluator_width=32, evaluator_epochs=30, gkt_batches=1000, gkt_batch=256, gkt_eval_every=20),
    }

    def validate(self):
        if len(set(self.forget_classes)) != len(self.forget_classes) or not self.forget_classes:
            raise ConfigError(f"parameter 'forget_classes': give distinct classes in 0..{N_CLASSES - 1}, got {list(self.forget_classes)}")
        if self.tasks_per_seed > len(self.forget_classes):
            raise ConfigError(f"parameter 'tasks_per_seed': {self.tasks_per_seed} is more than the {len(self.forget_classes)} forget_classes")
        g = list(self.alpha_grid)
        if len(g) < 3 or any(b <= a for a, b in zip(g, g[1:])):
            raise ConfigError(f"parameter 'alpha_grid': give at least three increasing step sizes (a best point can then lie inside), got {g}")
        cost, own = estimated_cost(self.to_dict()), estimated_cost(type(self).profile_defaults(self.profile))
        if cost > max(SOFT_COST, own) and not (getattr(self, "_allow_large", False) or allow_large_env()):
            raise ConfigError(f"the configuration would cost about {cost:.2g} model passes over one sample (soft limit {max(SOFT_COST, own):.2g}; "
                              f"the cpu profile needs {estimated_cost(type(self).profile_defaults('cpu')):.2g}): lower n_seeds, train_epochs, "
                              "damo_max_steps, gkt_batches or the benchmark sizes, or pass allow_large=True (CLI: --allow-large)")


# %%
cfg = Config.from_namespace(globals())
test_fail(lambda: Config.from_params("smoke", c=1.0), contains="'c': 1.0 is out of range")
test_fail(lambda: Config.from_params("smoke", forget_loss="kl"), contains="'forget_loss'")
test_fail(lambda: Config.from_params("smoke", forget_classes=(3, 3)), contains="distinct")
test_fail(lambda: Config.from_params("smoke", forget_classes=(10,)), contains="'forget_classes': 10 is out of range")
test_fail(lambda: Config.from_params("smoke", variant="eq6"), contains="'variant'")
test_fail(lambda: Config.from_params("smoke", alpha_grid=(1.0, 3.0)), contains="at least three increasing")
test_fail(lambda: Config.from_params("smoke", tasks_per_seed=2), contains="'tasks_per_seed'")
test_fail(lambda: Config.from_params("smoke", train_epochs=1000), contains="'train_epochs': 1000 exceeds its limit 200")
# sizes that pass each field's limit can still add up: the whole configuration's cost is bounded too
test_fail(lambda: Config.from_params("cpu", n_seeds=20, train_epochs=200, damo_max_steps=5000), contains="soft limit")
test_eq(Config.from_params("cpu", n_seeds=20, train_epochs=200, damo_max_steps=5000, allow_large=True).n_seeds, 20)
test_eq(Config.from_params("full").profile, "full")                      # a profile's own configuration is allowed
assert estimated_cost(Config.profile_defaults("cpu")) < SOFT_COST / 5
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
               on_step=None, # if given: called as on_step(score evaluations so far, x) after every step
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
            if on_step is not None: on_step(n_eval, x)
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
_tr, _seen = [], []; synthesize(_cnn, _y6, steps=2, method="aegds", x0=_x0, trace=_tr, on_step=lambda n, x: _seen.append((n, x.shape)))
test_eq([n for n, _ in _tr], [2, 4]); test_eq(_seen, [(2, _x0.shape), (4, _x0.shape)]); test_eq(_cnn.training, True); test_eq(all(p.requires_grad for p in _cnn.parameters()), True)
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
    def obj(w):   # value and gradient: b + c||g_T|| GG w / ||g_w||
        n = math.sqrt(max(float(w @ GG @ w), 0.0) + 1e-20)
        return float(w @ b + sphi * n), b + sphi * (GG @ w) / n
    r = minimize(obj, np.full(k, 1.0 / k), jac=True, method="SLSQP", bounds=[(0.0, 1.0)] * k,   # convex in w: one start suffices
                 constraints={"type": "eq", "fun": lambda w: 1.0 - w.sum(), "jac": lambda w: -np.ones_like(w)}, options=dict(ftol=1e-12, maxiter=200))
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
# ### Counting compute: floating-point operations
#
# The paper compares execution times. Seconds depend on the machine and on its load, so every cost on this page
# is counted in floating-point operations instead: `FlopCount` is a dispatch mode that adds up, with PyTorch's
# own formulas (`torch.utils.flop_counter`), the operations of every matrix product and convolution run inside
# it, forward and backward. (Element-wise operations, the optimiser's updates and the 3-variable solve of the
# conflict-averse update are left out; on these models they are a small share.) Unlike
# `torch.utils.flop_counter.FlopCounterMode` it sets no module hooks, so `torch.autograd.grad` with respect to
# inputs, which the sampler needs, runs inside it. `pause()` leaves out work that is not part of a method, such as
# evaluating it on the test split.

# %%
#| export
from torch.utils._python_dispatch import TorchDispatchMode

class FlopCount(TorchDispatchMode):
    "Counts the floating-point operations of matrix products and convolutions (forward and backward) run inside the block."
    def __init__(self):
        super().__init__(); self.flops, self.paused = 0, False
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        from torch.utils.flop_counter import flop_registry
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if not self.paused:
            f = flop_registry.get(func._overloadpacket)
            if f is not None: self.flops += int(f(*args, **kwargs, out_val=out))
        return out
    @contextlib.contextmanager
    def pause(self):
        "Leave out what runs inside this block."
        was = self.paused; self.paused = True
        try: yield self
        finally: self.paused = was
    @property
    def gflops(self) -> float: return self.flops / 1e9


# %% [markdown]
# Checks: a linear layer on a batch of B rows and d inputs costs 2·B·d·k operations forward; a backward pass with
# respect to weights and inputs costs twice that; the counts agree with PyTorch's `FlopCounterMode` on a CNN's
# forward and backward pass; a paused block counts nothing; and a score evaluation (with respect to the input)
# runs inside it.

# %%
from torch.utils.flop_counter import FlopCounterMode

# %%
_lin3 = torch.nn.Linear(5, 3, bias=False); _xx = torch.randn(4, 5, requires_grad=True)
with FlopCount() as _fc: _o = _lin3(_xx)
test_eq(_fc.flops, 2 * 4 * 5 * 3)
with FlopCount() as _fc: _o.sum().backward()
test_eq(_fc.flops, 2 * 2 * 4 * 5 * 3)
_cnn8 = SmallCNN(width=4); _xb = torch.randn(6, 1, 8, 8)
with FlopCounterMode(display=False) as _ref: _cnn8(_xb).sum().backward()
with FlopCount() as _fc: _cnn8(_xb).sum().backward()
test_eq(_fc.flops, _ref.get_total_flops()); assert _fc.flops > 0
with FlopCount() as _fc:
    with _fc.pause(): _cnn8(_xb)
test_eq(_fc.flops, 0)
with FlopCount() as _fc: score(_cnn8, _xb, torch.arange(6))
assert _fc.gflops > 0


# %% [markdown]
# **Compute of sampling.** Each score evaluation is one forward and one backward pass (to the input) of the frozen
# model per sample, so a synthetic set costs the operations of one evaluation on one sample times the samples times
# the evaluations; `synthesis_flops` counts that on one sample (checked against counting a whole run).

# %%
#| export
def synthesis_flops(model, # the frozen classifier the samples come from
                    n_samples:int, n_evals:int) -> int:
    "Operations of drawing `n_samples` synthetic inputs with `n_evals` score evaluations each."
    m = copy.deepcopy(model).eval()
    for p in m.parameters(): p.requires_grad_(False)
    with FlopCount() as c: score(m, torch.zeros(1, m.in_channels, *m.image_size), torch.zeros(1, dtype=torch.long))
    return c.flops * int(n_samples) * int(n_evals)


# %%
with FlopCount() as _sc: synthesize(_cnn8, torch.arange(10).repeat(3), steps=4, method="aegds", noise_scale=0.01, generator=_g)
test_eq(synthesis_flops(_cnn8, 30, 8), _sc.flops)
with FlopCount() as _sc: synthesize(_cnn8, torch.arange(10).repeat(3), steps=5, method="egds", noise_scale=0.01, generator=_g)
test_eq(synthesis_flops(_cnn8, 30, 5), _sc.flops)


# %% [markdown]
# ### DAMO: unlearning on synthetic data
#
# From a copy of the original model, each step draws a batch of synthetic retain samples and one of synthetic
# forget samples and computes the three losses:
#
# - retain: cross-entropy on the retain samples;
# - forget (**our choice**, the paper's formula is missing from the available text): cross-entropy toward a
#   retain class, either each forget sample's most probable retain class under the original model
#   (`forget_loss="nearest_label"`, fixed once) or one drawn at random for every sample at every step
#   (`"random_label"`); or gradient ascent, -CE clipped at 2 log K (`"ascent"`). Each can drive forget accuracy
#   to 0, as the paper reports; a KL-to-uniform loss could not. Which one a run uses is picked per model from
#   synthetic data (below);
# - discrimination: the Circle loss above, with centres c_i = mean M_f feature of class i's synthetic samples
#   under the original model (**our choice**; `centers="classifier"` uses the rows of the last layer).
#
# Their gradients go through the conflict-averse update (`c`) into Adam. With c = 0 (the paper's "without
# multitask" ablation, "updated directly using g_T") the update is the gradient of the weighted sum of the losses,
# which one backward pass gives; the conflict-averse update needs the three gradients separately. The three losses
# sit on separate forward passes (retain batch, forget batch, features of the retain batch), so the three backward
# passes together cost the same operations as the one backward pass of their sum; the conflict-averse update adds a
# 3x3 Gram matrix and a 3-variable solve. Per step both cost about the same compute: what differs is the number of steps.
# **Stopping rule (our choice, source-free):** one sixth of the synthetic forget samples is held out of
# training; every `check_every` steps the model scores them, and DAMO stops as soon as their mean probability of
# the forget classes is at most `stop_prob` (or after `max_steps`). If the synthetic set has no sample of a forget
# class (which happens with noise inputs), there is nothing to forget with and DAMO runs the retain and
# discrimination losses for `max_steps`.

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

def _forget_term(model, x, y, jf, forget_loss, rc_t, nearest, g, n_classes):
    "The forget loss on the synthetic forget samples `x[jf]`."
    out_f = model(x[jf])
    if forget_loss == "random_label": return F.cross_entropy(out_f, rc_t[torch.randint(len(rc_t), (len(jf),), generator=g)])
    if forget_loss == "nearest_label": return F.cross_entropy(out_f, nearest[jf])
    return -F.cross_entropy(out_f, y[jf]).clamp(max=2 * math.log(n_classes))

def _damo_step(model, params, opt, S, batch, lam, c, forget_loss, delta, m, g):
    "One DAMO update of `model` on a retain and a forget batch drawn from the synthetic set described by `S`."
    ir = torch.randint(len(S["xr"]), (batch,), generator=g)
    bx, by = S["xr"][ir], S["yr"][ir]
    losses, weights = [F.cross_entropy(model(bx), by)], [lam[0]]
    if len(S["ftrain"]):
        jf = S["ftrain"][torch.randint(len(S["ftrain"]), (min(batch, len(S["ftrain"])),), generator=g)]
        losses.append(_forget_term(model, S["x"], S["y"], jf, forget_loss, S["rc_t"], S["nearest"], g, S["n_classes"])); weights.append(lam[1])
    if S["use_disc"]:
        kb = S["keep_r"][ir]
        losses.append(circle_loss(features(model, bx[kb]), S["remap"][by[kb]], S["C"], delta, m)); weights.append(lam[2])
    if c == 0: d = _grads(sum(w * L for w, L in zip(weights, losses)), params)   # g_T directly: one backward pass
    else:
        G = torch.stack([_grads(L, params) for L in losses])
        d, _ = conflict_averse(G, torch.tensor(weights, dtype=G.dtype), c)
    off = 0
    for p in params:
        p.grad = d[off:off + p.numel()].view_as(p).clone(); off += p.numel()
    opt.step(); opt.zero_grad(set_to_none=True)

def damo(model_o, # the original model (not modified)
         x:torch.Tensor, y:torch.Tensor, # synthetic inputs and their classes (all classes)
         forget, # classes to forget
         *, lam=(1.0, 1.0, 1.0), # weights of the retain, forget and discrimination losses
         c:float=0.4, # conflict-averse radius (0: plain weighted sum, one backward pass)
         use_disc:bool=True, # False: no discrimination loss (the ablation)
         forget_loss:str="nearest_label", # 'nearest_label' | 'random_label' | 'ascent'
         centers:str="synthetic_mean", # 'synthetic_mean' | 'classifier'
         delta:float=32.0, m:float=0.25, # Circle-loss scale and relaxation
         lr:float=1e-3, max_steps:int=200, batch:int=64, check_every:int=5,
         stop_prob:float=5e-4, # stop once the held-out synthetic forget samples give the forget classes at most this mean probability
         seed:int=0,
         on_step=None, # if given: called as on_step(step, model) after every update (see `StepTrace`)
         ):
    "The unlearned copy of `model_o` (DAMO on synthetic data); `model.steps_` holds the number of steps taken, `model.flops_` their operations."
    if forget_loss not in FORGET_LOSSES: raise ValueError(f"forget_loss must be one of {list(FORGET_LOSSES)}, got {forget_loss!r}")
    n_classes = int(model_o.head.out_features)
    fc, rc = check_forget_classes(forget, n_classes)
    g = torch.Generator().manual_seed(int(seed))
    is_f = torch.isin(y, torch.tensor(fc))
    S = dict(x=x, y=y, xr=x[~is_f], yr=y[~is_f], n_classes=n_classes, rc_t=torch.tensor(rc), nearest=None)
    if len(S["xr"]) == 0: raise ValueError("no synthetic sample of a retain class")
    fidx = torch.nonzero(is_f).flatten()
    fidx = fidx[torch.randperm(len(fidx), generator=g)]
    n_hold = len(fidx) // 6 if len(fidx) >= 6 else 0
    hold, S["ftrain"] = fidx[:n_hold], fidx[n_hold:]
    xcheck, fc_t = (x[hold] if n_hold else x[S["ftrain"]]), torch.tensor(fc)
    present = [k for k in rc if bool((S["yr"] == k).any())]
    S["use_disc"] = use_disc and len(present) >= 2 and lam[2] > 0
    meter = FlopCount()   # counts the setup, the first step and the first check: every step of a run has the same shapes
    with meter:
        if S["use_disc"]:
            S["C"] = class_centers(model_o, S["xr"], S["yr"], present, centers)
            S["remap"] = torch.full((n_classes,), -1, dtype=torch.long); S["remap"][torch.tensor(present)] = torch.arange(len(present))
            S["keep_r"] = torch.isin(S["yr"], torch.tensor(present))
        if forget_loss == "nearest_label":   # each forget sample's most probable retain class under the original model
            with torch.no_grad(): S["nearest"] = S["rc_t"][model_o(x)[:, S["rc_t"]].argmax(1)]
        model = copy.deepcopy(model_o); model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr, foreach=True)
    fl, steps = dict(setup=meter.flops, step=0, check=0, check_every=int(check_every)), 0
    for it in range(max_steps):
        with (meter if it == 0 else contextlib.nullcontext()): _damo_step(model, params, opt, S, batch, lam, c, forget_loss, delta, m, g)
        if it == 0: fl["step"] = meter.flops - fl["setup"]
        steps = it + 1
        if on_step is not None: on_step(steps, model)
        if len(S["ftrain"]) and steps % check_every == 0:
            first, before = steps == check_every, meter.flops
            model.eval()
            with (meter if first else contextlib.nullcontext()), torch.no_grad(): left = float(F.softmax(model(xcheck), -1)[:, fc_t].sum(1).mean())
            model.train()
            if first: fl["check"] = meter.flops - before
            if left <= stop_prob: break
    model.eval(); model.steps_ = steps
    model.flops_ = dict(fl, total=fl["setup"] + steps * fl["step"] + (steps // check_every if len(S["ftrain"]) else 0) * fl["check"])
    return model


# %% [markdown]
# A tiny end-to-end check on a linear model and Gaussian "classes": DAMO on samples drawn from the model
# itself removes class 2 from the synthetic check set and keeps the other classes; with c = 0 one update is
# one plain gradient step on the weighted sum, and costs the operations of the conflict-averse update less its Gram matrix.

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
# c = 0: one Adam step on the weighted sum of the losses, whichever way its gradient is computed
_a = damo(_toy, _xsyn, _yt, [2], c=0.0, max_steps=1, seed=3, forget_loss="ascent")
_b = copy.deepcopy(_toy); _b.train(); _gg = torch.Generator().manual_seed(3)
_isf = _yt == 2; _xr_, _yr_ = _xsyn[~_isf], _yt[~_isf]; _fi = torch.nonzero(_isf).flatten(); _fi = _fi[torch.randperm(len(_fi), generator=_gg)][len(_fi) // 6:]
_ir = torch.randint(len(_xr_), (64,), generator=_gg); _jf = _fi[torch.randint(len(_fi), (64,), generator=_gg)]
_C0 = class_centers(_toy, _xr_, _yr_, [0, 1])
_loss = (F.cross_entropy(_b(_xr_[_ir]), _yr_[_ir]) - F.cross_entropy(_b(_xsyn[_jf]), _yt[_jf]).clamp(max=2 * math.log(3))
         + circle_loss(features(_b, _xr_[_ir]), _yr_[_ir], _C0, 32.0, 0.25))
_opt = torch.optim.Adam(_b.parameters(), lr=1e-3); _loss.backward(); _opt.step()
for _p, _q in zip(_a.parameters(), _b.parameters()): test_close(_p, _q, eps=1e-6)
with FlopCount() as _f0: damo(_toy, _xsyn, _yt, [2], c=0.0, max_steps=10, stop_prob=0.0)
with FlopCount() as _f4: damo(_toy, _xsyn, _yt, [2], c=0.4, max_steps=10, stop_prob=0.0)
with FlopCount() as _ca: conflict_averse(torch.randn(3, sum(p.numel() for p in _toy.parameters())), torch.ones(3), 0.4)
test_eq(_f4.flops - _f0.flops, 10 * _ca.flops)                       # the same backward work; ten conflict-averse solves more


# %% [markdown]
# **Compute of a DAMO run.** Every step of a run draws batches of the same sizes (the retain batch, the forget
# batch, the features of the retain batch), so a run costs a setup (class centres, relabelling), a fixed number of
# operations per step, and a forward pass over the held-out check set at each check. `damo` counts the setup, its
# first step and its first check with `FlopCount` and reports the run's total in `model.flops_`; counting the whole
# run operation by operation gives the same number, at a fraction of the cost. `damo_gflops_at` gives the running
# total after any step (for the curves).

# %%
#| export
def damo_gflops_at(fl:dict, # a run's costs (`model.flops_` of `damo`)
                   k:int, # steps taken
                   ) -> float:
    "GFLOPs a `damo` run has spent after `k` steps."
    return (fl["setup"] + k * fl["step"] + (k // fl["check_every"]) * fl["check"]) / 1e9


# %%
_kw = dict(lr=1e-2, batch=32, stop_prob=0.01, seed=0, check_every=3)
with FlopCount() as _full: _u = damo(_toy, _xsyn, _yt, [2], max_steps=60, **_kw)
test_eq(_u.flops_["total"], _full.flops); test_close(damo_gflops_at(_u.flops_, _u.steps_), _full.gflops, eps=1e-12)
assert _u.steps_ >= 3 and _u.flops_["check"] > 0
with FlopCount() as _full: _u = damo(_toy, _xsyn, _yt, [2], max_steps=7, c=0.0, forget_loss="ascent", use_disc=False, stop_prob=0.0, check_every=2)
test_eq(_u.flops_["total"], _full.flops)
test_eq(all(torch.equal(a, b) for a, b in zip(_un.state_dict().values(), damo(_toy, _xsyn, _yt, [2], lr=1e-2, max_steps=60, batch=32, stop_prob=0.01, seed=0).state_dict().values())), True)


# %% [markdown]
# ### DAMO's settings from synthetic data only
#
# Two settings decide how far DAMO moves the model, and both must be set without real data.
#
# **The stopping threshold.** A retrained model never predicts a forget class; on inputs of the other classes
# it gives that class the kind of probability any wrong class gets. `reference_stop_prob` measures that level
# on the original model's own synthetic samples: the mean probability of one wrong class, (1 - p(y | x)) / (K - 1),
# averaged over the synthetic set. DAMO stops once the held-out synthetic forget samples give the forget classes
# no more than that level per forgotten class (`stop_rule="synthetic_reference"`; `"fixed"` uses `stop_prob`).
#
# **The forget loss.** The paper's forget loss is unknown; `select_forget_loss` runs DAMO with each candidate on
# one forget task and keeps the one that changes the model least on a *fresh* synthetic draw of the retain
# classes: the mean KL divergence KL(p_original || p_unlearned) over those samples, among the candidates that
# reassign every held-out synthetic forget sample to a retain class. Unlearning should remove the forget classes
# and leave the rest of the model's behaviour as it was; a fresh draw is not what DAMO trained on. The choice is
# made once per original model, on its first forget task, and used for all its tasks.

# %%
#| export
def reference_stop_prob(model, x:torch.Tensor, y:torch.Tensor) -> float:
    "Mean probability the model gives one wrong class on its own synthetic samples `x` of classes `y`: (1 - p(y|x)) / (K - 1), averaged."
    model.eval()
    with torch.no_grad(): p = F.softmax(model(x), -1)
    return float(((1 - p.gather(1, y[:, None]).squeeze(1)) / (p.shape[1] - 1)).mean())

def retain_shift(model_o, model, x:torch.Tensor, y:torch.Tensor, forget) -> tuple[float, float]:
    "(mean KL(p_original || p_model) on the retain-class rows of `x`, share of the forget-class rows still assigned to a forget class)."
    fc = torch.tensor(sorted(int(k) for k in forget)); is_f = torch.isin(y, fc)
    model_o.eval(); model.eval()
    with torch.no_grad():
        lo, lu = F.log_softmax(model_o(x), -1), F.log_softmax(model(x), -1)
        kl = (lo.exp() * (lo - lu)).sum(1)[~is_f].mean()
        left = torch.isin(lu[is_f].argmax(1), fc).float().mean() if bool(is_f.any()) else torch.tensor(0.0)
    return float(kl), float(left)

def select_forget_loss(model_o, x:torch.Tensor, y:torch.Tensor, # the synthetic set DAMO trains on
                       x_val:torch.Tensor, y_val:torch.Tensor, # a fresh synthetic draw (all classes)
                       forget, # the forget classes of the selection task
                       candidates=FORGET_LOSSES, **damo_kw) -> tuple[str, list, dict]:
    "(chosen forget loss, one row per candidate, {candidate: unlearned model}): the candidate with the least retain-class KL on the fresh draw among those that forget it."
    rows, models = [], {}
    for fl in candidates:
        m = damo(model_o, x, y, forget, forget_loss=fl, **damo_kw); models[fl] = m
        kl, left = retain_shift(model_o, m, x_val, y_val, forget)
        rows.append(dict(forget_loss=fl, synthetic_retain_kl=kl, synthetic_forget_left=left, damo_steps=m.steps_))
    ok = [r for r in rows if r["synthetic_forget_left"] == 0] or rows
    best = min(ok, key=lambda r: r["synthetic_retain_kl"])["forget_loss"]
    for r in rows: r["chosen"] = r["forget_loss"] == best
    return best, rows, models


# %%
with torch.no_grad(): _pw = float(((1 - F.softmax(_toy(_xsyn), -1)[torch.arange(300), _yt]) / 2).mean())
test_close(reference_stop_prob(_toy, _xsyn, _yt), _pw, eps=1e-9)
test_eq(retain_shift(_toy, _toy, _xsyn, _yt, [2])[0], 0.0)            # the original model has not moved
_xv = synthesize(_toy, _yt, steps=10, method="aegds", alpha=0.3, noise_scale=0.05, x_shape=(1, 2, 2), generator=_g)
_best, _rows, _ms = select_forget_loss(_toy, _xsyn, _yt, _xv, _yt, [2], lr=1e-2, max_steps=60, batch=32, stop_prob=0.01, seed=0)
test_eq(sorted(r["forget_loss"] for r in _rows), sorted(FORGET_LOSSES)); test_eq(sum(r["chosen"] for r in _rows), 1)
_ok = [r for r in _rows if r["synthetic_forget_left"] == 0] or _rows
test_eq(_best, min(_ok, key=lambda r: r["synthetic_retain_kl"])["forget_loss"])
test_eq(_ms[_best].steps_, damo(_toy, _xsyn, _yt, [2], forget_loss=_best, lr=1e-2, max_steps=60, batch=32, stop_prob=0.01, seed=0).steps_)
pd.DataFrame(_rows)


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

def train_model(cfg:Config, X, y, seed:int, n_classes:int=N_CLASSES, width:int|None=None, epochs:int|None=None):
    "A SmallCNN trained from scratch (the original model, Retrain on retain data, or the benchmark's evaluator with its own `width` and `epochs`)."
    torch.manual_seed(seed)
    m = SmallCNN(in_channels=X.shape[1], n_classes=n_classes, width=width or cfg.width, image_size=tuple(X.shape[2:]))
    fit(m, X, y, epochs=epochs or cfg.train_epochs, lr=cfg.train_lr, batch_size=cfg.batch_size, seed=seed, progress=False, threads=None)
    return m

def training_flops(model, # a model of the shape being trained (its weights do not matter)
                   n_samples:int, epochs:int) -> int:
    "Operations of training for `epochs` passes over `n_samples` inputs, one forward and one backward pass each (as `trustlib.models.fit` does); counted on one sample and scaled, exact because matrix products and convolutions are linear in the batch."
    m = copy.deepcopy(model).train(); x = torch.zeros(1, m.in_channels, *m.image_size)
    with FlopCount() as c: F.cross_entropy(m(x), torch.zeros(1, dtype=torch.long)).backward()
    return c.flops * int(n_samples) * int(epochs)

def neggrad_plus(model_o, Xr, yr, Xf, yf, *, epochs:int, lr:float, batch:int, seed:int, on_step=None):
    "NegGrad+ on real data: descent on retain batches plus clipped ascent on forget batches."
    model = copy.deepcopy(model_o); model.train(); g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr, foreach=True); K = int(model.head.out_features); n = 0
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



# %%
_cfg3 = Config.from_params("smoke", train_epochs=2)
_Xs, _ys = torch.randn(70, 1, 8, 8, generator=_g), torch.arange(10).repeat(7)
with FlopCount() as _fit_count: _m3 = train_model(_cfg3, _Xs, _ys, seed=0)
test_eq(training_flops(_m3, 70, 2), _fit_count.flops)          # two epochs of 70 samples, counted op by op
_r3 = _ys != 4
with FlopCount() as _ng_count: neggrad_plus(_m3, _Xs[_r3], _ys[_r3], _Xs[~_r3], _ys[~_r3], epochs=2, lr=1e-3, batch=20, seed=0)
test_eq(training_flops(_m3, 63 + math.ceil(63 / 20) * 7, 2), _ng_count.flops)   # retain batches plus a forget batch of 7 per step


# %% [markdown]
# ### The sampler benchmark: sample quality the sampler does not optimise
#
# The paper's efficiency claim is that AEGDS reaches plain Langevin's sample quality in fewer score
# evaluations (one forward and one backward pass of the model each). Measuring "quality" by the energy the samplers
# minimise would reward the sampler that runs colder, not the one that samples better, and the energy saturates at
# the noise scale we use. So quality here is something no sampler optimises: how close the synthetic samples of
# each class are to **held-out real images of that class**, seen through an **independent evaluator network**
# (a second CNN of another width, trained from another seed on the real training split; it plays the part
# Inception plays in FID and KID). `SampleQuality` is the class-conditional squared maximum mean discrepancy:
# for each class, the unbiased MMD² with a Gaussian kernel between the evaluator's features of the synthetic
# samples and of the real test images of that class, averaged over classes; the kernel width is the median
# distance between real features. Lower is better; 0 means indistinguishable at this sample size.

# %%
#| export
def mmd2(a:torch.Tensor, # samples [n, d]
         b:torch.Tensor, # samples [m, d]
         sigma:float, # Gaussian kernel width
         ) -> float:
    "Unbiased squared maximum mean discrepancy between `a` and `b` with the kernel exp(-|u - v|^2 / (2 sigma^2))."
    if len(a) < 2 or len(b) < 2: raise ValueError("mmd2 needs at least two samples on each side")
    k = lambda u, v: torch.exp(-torch.cdist(u, v).pow(2) / (2 * sigma ** 2))
    n, m = len(a), len(b); kaa, kbb = k(a, a), k(b, b)
    return float((kaa.sum() - kaa.diagonal().sum()) / (n * (n - 1)) + (kbb.sum() - kbb.diagonal().sum()) / (m * (m - 1)) - 2 * k(a, b).mean())

class SampleQuality:
    "Class-conditional MMD² between synthetic samples and held-out real images, in the features of an independent evaluator network."
    def __init__(self, evaluator, # a classifier with `features` (not the model the samples come from)
                 X_ref:torch.Tensor, y_ref:torch.Tensor, # held-out real images and their classes
                 ):
        self.evaluator = evaluator.eval()
        with torch.no_grad(): self.H = features(evaluator, X_ref)
        self.y = y_ref
        d = torch.cdist(self.H, self.H); self.sigma = float(d[~torch.eye(len(d), dtype=torch.bool)].median())
    def __call__(self, x:torch.Tensor, y:torch.Tensor) -> float:
        "The mean over the classes in `y` of MMD²(synthetic samples of the class, real samples of the class)."
        with torch.no_grad(): h = features(self.evaluator, x)
        return float(np.mean([mmd2(h[y == k], self.H[self.y == k], self.sigma) for k in torch.unique(y).tolist()]))
    def accuracy(self, x:torch.Tensor, y:torch.Tensor) -> float:
        "Share of the samples the evaluator assigns to their target class."
        with torch.no_grad(): return float((self.evaluator(x).argmax(1) == y).float().mean())


# %% [markdown]
# Checks: `mmd2` equals the textbook double sum, is about 0 for two samples of one distribution and grows with a
# shift; `SampleQuality` scores the real images of a class against themselves better than samples of another class.

# %%
_r2 = torch.Generator().manual_seed(4)
_a, _b = torch.randn(7, 3, generator=_r2, dtype=torch.float64), torch.randn(9, 3, generator=_r2, dtype=torch.float64) + 0.5
_kk = lambda u, v: math.exp(-float(((u - v) ** 2).sum()) / (2 * 1.3 ** 2))
_naive_m = (sum(_kk(_a[i], _a[j]) for i in range(7) for j in range(7) if i != j) / 42 + sum(_kk(_b[i], _b[j]) for i in range(9) for j in range(9) if i != j) / 72
            - 2 * sum(_kk(_a[i], _b[j]) for i in range(7) for j in range(9)) / 63)
test_close(mmd2(_a, _b, 1.3), _naive_m, eps=1e-12)
_same = [mmd2(torch.randn(200, 3, generator=_r2), torch.randn(200, 3, generator=_r2), 1.0) for _ in range(5)]
assert abs(float(np.mean(_same))) < 0.01 and mmd2(torch.randn(200, 3, generator=_r2), torch.randn(200, 3, generator=_r2) + 1.0, 1.0) > 0.1
test_fail(lambda: mmd2(_a[:1], _b, 1.0), contains="at least two")
_ev = _Lin(); fit(_ev, _xt, _yt, epochs=15, lr=1e-2, progress=False, seed=3)
_sq = SampleQuality(_ev, _xt[:150], _yt[:150])
assert _sq(_xt[150:], _yt[150:]) < _sq(_xt[150:], (_yt[150:] + 1) % 3)
test_close(_sq.accuracy(_xt[150:], _yt[150:]), float((_ev(_xt[150:]).argmax(1) == _yt[150:]).float().mean()), eps=1e-12)

# %% [markdown]
# **The benchmark.** From one shared noise start, each sampler (SGLD = plain Langevin = EGDS, Heun alone, momentum
# alone, and both together = AEGDS) runs at every step size of `alpha_grid`, with the same noise draws: plain
# Langevin for `bench_evals` score evaluations, the others for twice as many. The target is **Langevin's
# quality**: the best quality SGLD reaches at its full budget over the step sizes. For every sampler we record the
# fewest evaluations after which it is at least that good, over the step sizes (its best step size for the target),
# and the **evaluation ratio** = evaluations(sampler) / evaluations(SGLD) to the same quality: SGLD is timed to the
# target too, not charged its whole budget. A sampler that never reaches the target within twice SGLD's budget gets
# 2 x budget / evaluations(SGLD), a lower bound. The paper's claim is a ratio below 1 for AEGDS; its "at most half"
# reading, below 0.5. The benchmark records whether each sampler's best step size lies inside the grid (not at
# either end: otherwise a better one may lie outside), and how far Langevin's quality is from the noise it starts
# at (if it did not move, "reaching" it would mean nothing). Real images are used only to measure quality, never by
# a sampler or by DSDA.

# %%
#| export
BENCH = {"sgld": "egds", "heun": "heun", "momentum": "momentum", "aegds": "aegds"}

def _bench_curves(model, quality, cfg, y, x0, clamp, seed) -> dict:
    "{(sampler, alpha): [(score evaluations, quality), ...]} from the shared start `x0` (evaluation 0 included)."
    q0, curves = quality(x0, y), {}
    for name, method in BENCH.items():
        budget = cfg.bench_evals * (1 if name == "sgld" else 2)
        for a in cfg.alpha_grid:
            rows = [(0, q0)]
            synthesize(model, y, steps=budget // (2 if method in ("heun", "aegds") else 1), method=method, alpha=a, dt=cfg.dt, gamma=cfg.gamma,
                       noise_scale=cfg.noise_scale, variant=cfg.variant, x_shape=tuple(x0.shape[1:]), clamp=clamp, energy_kind=cfg.energy_kind,
                       generator=torch.Generator().manual_seed(derive_seed(seed, "bench_noise")), x0=x0, on_step=lambda n, x: rows.append((n, quality(x, y))))
            curves[name, a] = rows
    return curves

def sampler_benchmark(model, # the original classifier
                      quality:SampleQuality, # the quality measure (lower is better)
                      cfg:Config, seed:int, clamp, shape) -> tuple[dict, list]:
    "({sampler: alpha, evaluations to Langevin's quality, ratio to SGLD's, reached, interior}, curve rows at each sampler's chosen step size)."
    y = torch.arange(int(model.head.out_features)).repeat_interleave(cfg.bench_per_class)
    x0 = torch.randn(len(y), *shape, generator=torch.Generator().manual_seed(derive_seed(seed, "bench_start"))).clamp(*clamp)
    curves = _bench_curves(model, quality, cfg, y, x0, clamp, seed)
    grid, B = list(cfg.alpha_grid), cfg.bench_evals
    final = {a: dict(curves["sgld", a])[B] for a in grid}
    target = min(final.values()); q0 = curves["sgld", grid[0]][0][1]
    out = {}
    for name in BENCH:
        hits = {a: next((n for n, q in curves[name, a] if n > 0 and q <= target), None) for a in grid}
        best_q = {a: min(q for _, q in curves[name, a]) for a in grid}
        reached = [a for a in grid if hits[a] is not None]
        a = min(reached, key=lambda a: (hits[a], best_q[a])) if reached else min(grid, key=lambda a: best_q[a])
        if name == "sgld": a_check = min(grid, key=lambda a: final[a])   # the step size that defines Langevin's quality
        else: a_check = a
        out[name] = dict(alpha=a, evals_to_target=hits[a], reached=bool(reached), interior=grid[0] < a_check < grid[-1],
                         best_quality=best_q[a], target=target, start_quality=q0)
    n_s = out["sgld"]["evals_to_target"]
    for name, o in out.items():
        o["ratio"] = (o["evals_to_target"] if o["reached"] else 2 * B) / n_s
    rows = [dict(sampler=name, alpha=o["alpha"], score_evals=n, quality=q, target=target) for name, o in out.items() for n, q in curves[name, o["alpha"]]]
    return out, rows


# %% [markdown]
# A run of the benchmark on the toy model: every sampler gets a ratio, SGLD's is 1 by construction, and the
# curve rows start at the shared noise start.

# %%
_cfgb = Config.from_params("smoke", bench_evals=4, bench_per_class=6, alpha_grid=(0.1, 0.3, 1.0))
_bo, _brows = sampler_benchmark(_toy, _sq, _cfgb, 0, (-2.0, 5.0), (1, 2, 2))
test_eq(sorted(_bo), sorted(BENCH)); test_eq(_bo["sgld"]["ratio"], 1.0); test_eq(_bo["sgld"]["reached"], True)
assert all(o["ratio"] > 0 for o in _bo.values()) and all(r["score_evals"] == 0 for r in _brows[:1])
assert all(_bo[k]["ratio"] == 2 * 4 / _bo["sgld"]["evals_to_target"] for k in _bo if not _bo[k]["reached"])
pd.DataFrame(_bo).T[["alpha", "evals_to_target", "ratio", "interior"]]


# %% [markdown]
# ### A GKT-style source-free baseline
#
# The paper's time claim compares DSDA with two source-free baselines, GKT (Chundawat et al., "Zero-shot machine
# unlearning", 2023) and ISPF. We implement a small version of **gated knowledge transfer**, following the
# structure of its official code: a generator maps noise to inputs; a *gate* drops every generated input the
# original model (the teacher) assigns to a forget class with probability above `threshold`; a student of the
# same architecture, trained **from scratch**, learns the teacher's soft predictions (KL divergence) plus an
# attention-transfer loss on the two convolutional activations (weight `beta`) on the gated inputs; and the
# generator is trained adversarially, one step per pseudo-batch, to maximise the student-teacher KL, followed by
# `student_iters` student steps on that pseudo-batch. One change, said here: the official code lets the generator
# drift into the forget classes (whose inputs the gate then drops, until it resets the generator to an earlier
# checkpoint); we add a penalty on the teacher's forget-class probability to the generator's loss (`penalty`),
# which keeps it among the retain classes. ISPF is not implemented.

# %%
#| export
class Generator(torch.nn.Module):
    "GKT's generator, scaled down: noise z -> linear -> batch norm -> 2x upsampling -> two convolutions -> an image batch-normalised per channel."
    def __init__(self, z_dim:int=32, channels:int=1, image_size:tuple=(8, 8), width:int=32):
        super().__init__(); nn = torch.nn; self.z_dim = z_dim
        h, w = image_size[0] // 2, image_size[1] // 2
        self.net = nn.Sequential(nn.Linear(z_dim, width * h * w), nn.Unflatten(1, (width, h, w)), nn.BatchNorm2d(width), nn.Upsample(scale_factor=2),
                                 nn.Conv2d(width, width // 2, 3, padding=1), nn.BatchNorm2d(width // 2), nn.LeakyReLU(0.2),
                                 nn.Conv2d(width // 2, channels, 3, padding=1), nn.BatchNorm2d(channels))
    def forward(self, z): return self.net(z)

def _logits_and_maps(model, x):
    "(logits, [activation after each ReLU of the convolutional features]) of a SmallCNN."
    maps, h = [], x
    for layer in model.features:
        h = layer(h)
        if isinstance(layer, torch.nn.ReLU): maps.append(h)
    return model.head(h.flatten(1)), maps

def _attention(a): return F.normalize(a.pow(2).mean(1).flatten(1))

def _gkt_generator_step(gen, teacher, student, opt_g, z, fc_t, threshold, penalty):
    "One adversarial generator step: maximise the student-teacher KL on the gated samples, with a penalty on the teacher's forget-class probability."
    x = gen(z); pt = F.softmax(teacher(x), -1); pf = pt[:, fc_t].sum(1); keep = (pf.detach() <= threshold).float()
    kl = (pt * (pt.clamp_min(1e-12).log() - F.log_softmax(student(x), -1))).sum(1)
    loss_g = -(kl * keep).sum() / keep.sum().clamp_min(1.0) + penalty * pf.mean()
    opt_g.zero_grad(); loss_g.backward(); opt_g.step()

def _gkt_gate(gen, teacher, z, fc_t, threshold):
    "The generated inputs the gate lets through: the teacher gives the forget classes at most `threshold`."
    with torch.no_grad(): x = gen(z); return x[F.softmax(teacher(x), -1)[:, fc_t].sum(1) <= threshold]

def _gkt_student_steps(teacher, student, opt_s, x, beta, iters):
    "`iters` student updates on the gated inputs `x`: KL to the teacher's predictions plus attention transfer."
    with torch.no_grad(): lt, maps_t = _logits_and_maps(teacher, x)
    for _ in range(iters if len(x) else 0):
        ls, maps_s = _logits_and_maps(student, x)
        loss = F.kl_div(F.log_softmax(ls, -1), F.softmax(lt, -1), reduction="batchmean")
        loss = loss + beta * sum((_attention(a) - _attention(t)).pow(2).mean() for a, t in zip(maps_s, maps_t))
        opt_s.zero_grad(); loss.backward(); opt_s.step()

def _gkt_costs(gen, teacher, student, batch, z_dim, fc_t, threshold, penalty, beta, iters, lr) -> tuple[int, int]:
    "(operations of a pseudo-batch's generator step and gate pass, operations per gated sample of its student steps), counted once on copies."
    g2, s2 = copy.deepcopy(gen), copy.deepcopy(student)
    x1 = torch.zeros(1, teacher.in_channels, *teacher.image_size)
    with FlopCount() as fixed:
        _gkt_generator_step(g2, teacher, s2, torch.optim.Adam(g2.parameters(), lr=lr, foreach=True), torch.zeros(batch, z_dim), fc_t, threshold, penalty)
        with torch.no_grad(): teacher(g2(torch.zeros(batch, z_dim)))
    with FlopCount() as per: _gkt_student_steps(teacher, s2, torch.optim.Adam(s2.parameters(), lr=lr, foreach=True), x1, beta, iters)
    return fixed.flops, per.flops

def gkt_unlearn(model_o, # the original model (the teacher; not modified)
                forget, # classes to forget
                *, batches:int=80, # pseudo-batches (the budget)
                batch:int=64, # generated samples per pseudo-batch
                student_iters:int=10, # student updates per pseudo-batch
                z_dim:int=32, lr:float=1e-3, beta:float=250.0, threshold:float=0.01, penalty:float=1.0,
                seed:int=0, on_step=None, # if given: called as on_step(pseudo-batch, student) after every pseudo-batch
                ):
    "A student trained from scratch by gated, generator-based knowledge transfer from `model_o` (GKT-style); `student.flops_` lists each pseudo-batch's operations."
    fc, rc = check_forget_classes(forget, int(model_o.head.out_features)); fc_t = torch.tensor(fc)
    g = torch.Generator().manual_seed(int(seed)); torch.manual_seed(derive_seed(seed, "init"))
    teacher = copy.deepcopy(model_o).eval()
    for p in teacher.parameters(): p.requires_grad_(False)
    student = SmallCNN(in_channels=teacher.in_channels, n_classes=int(teacher.head.out_features), width=teacher.head.in_features // 8,
                       image_size=teacher.image_size)
    gen = Generator(z_dim, teacher.in_channels, teacher.image_size)
    opt_g, opt_s = torch.optim.Adam(gen.parameters(), lr=lr, foreach=True), torch.optim.Adam(student.parameters(), lr=lr, foreach=True)
    fixed, per = _gkt_costs(gen, teacher, student, batch, z_dim, fc_t, threshold, penalty, beta, student_iters, lr)
    student.flops_ = []
    for b in range(batches):
        z = torch.randn(batch, z_dim, generator=g)
        _gkt_generator_step(gen, teacher, student, opt_g, z, fc_t, threshold, penalty)
        x = _gkt_gate(gen, teacher, z, fc_t, threshold)
        _gkt_student_steps(teacher, student, opt_s, x, beta, student_iters)
        student.flops_.append(fixed + per * len(x))
        if on_step is not None: on_step(b + 1, student)
    student.eval(); student.batches_ = batches
    return student


# %% [markdown]
# Checks on a small SmallCNN teacher trained on Gaussian blobs: the gate keeps the student away from the forget
# class (it never predicts it on the blobs), the student learns the retain classes, the teacher is untouched,
# the same seed gives the same student, and the operations it reports are those it runs.

# %%
torch.manual_seed(0)
_teach = SmallCNN(width=4, image_size=(4, 4), n_classes=3)
_xg = torch.randn(300, 1, 4, 4, generator=_g) + 2.0 * _mu.repeat(100, 1).view(-1, 1, 2, 2).repeat_interleave(2, 2).repeat_interleave(2, 3)
fit(_teach, _xg, _yt, epochs=20, lr=1e-2, progress=False)
_before = copy.deepcopy(_teach.state_dict())
_stu = gkt_unlearn(_teach, [2], batches=30, batch=32, student_iters=5, lr=1e-2, seed=1)
with torch.no_grad(): _ps = _stu(_xg).argmax(1)
test_eq(int((_ps == 2).sum()), 0)
assert float((_ps[_yt != 2] == _yt[_yt != 2]).float().mean()) > 0.6
test_eq(all(torch.equal(v, _teach.state_dict()[k]) for k, v in _before.items()), True)
_stu2 = gkt_unlearn(_teach, [2], batches=30, batch=32, student_iters=5, lr=1e-2, seed=1)
test_eq(all(torch.equal(a, b) for a, b in zip(_stu.state_dict().values(), _stu2.state_dict().values())), True)
# the operations it reports are exact: a pseudo-batch costs a fixed part plus a part per gated sample (matrix products and
# convolutions are linear in the batch), as counting every operation of a whole run confirms
with FlopCount() as _all: _stu3 = gkt_unlearn(_teach, [2], batches=6, batch=32, student_iters=5, lr=1e-2, seed=1)
with FlopCount() as _cal: gkt_unlearn(_teach, [2], batches=0, batch=32, student_iters=5, lr=1e-2, seed=1)   # the one-off count of the two parts
test_eq(_all.flops, _cal.flops + sum(_stu3.flops_))
_tf = copy.deepcopy(_teach).requires_grad_(False)
_fx, _per = _gkt_costs(Generator(32, 1, (4, 4)), _tf, SmallCNN(width=4, image_size=(4, 4), n_classes=3), 32, 32, torch.tensor([2]), 0.01, 1.0, 250.0, 5, 1e-2)
test_eq(_cal.flops, _fx + _per)
_s4 = SmallCNN(width=4, image_size=(4, 4), n_classes=3)
with FlopCount() as _two: _gkt_student_steps(_tf, _s4, torch.optim.Adam(_s4.parameters()), torch.zeros(2, 1, 4, 4), 250.0, 5)
test_eq(_two.flops, 2 * _per)


# %% [markdown]
# ### Accuracy against compute during unlearning
#
# The paper's Fig. 3 plots retain accuracy against execution time. `StepTrace` records, while an unlearning loop
# runs, the retain and forget accuracy on the real test split every `every` updates, against the cumulative
# floating-point operations of a `FlopCount` (`meter`) that start at the method's synthesis cost, and against
# cumulative CPU seconds; its own evaluations are left out of both. It is called by `damo`, `neggrad_plus` and
# `gkt_unlearn` (`on_step`) and, for loops without a callback such as `trustlib.models.fit`, wraps them with
# `watch`, which listens to the optimiser's steps. Evaluating in eval mode without gradients uses no random
# numbers, so a traced run gives exactly the model an untraced one gives.

# %%
#| export
class StepTrace:
    "Retain and forget accuracy on the real test split against cumulative operations (GFLOPs) and CPU seconds of an unlearning loop."
    def __init__(self, D:dict, # data of one seed (`load_task_data`)
                 forget, # the forget classes
                 every:int=1, # evaluate every this many updates (and always at the start and the end)
                 t0:float=0.0, # seconds already spent before the loop (synthesis)
                 meter:FlopCount|None=None, # the FlopCount active around the loop (None: no operation counts)
                 gflops0:float=0.0, # GFLOPs already spent before the loop (synthesis)
                 ):
        te = D["te"]; self.X, self.y = D["X"][te], D["y"][te]
        self.fmask = torch.isin(self.y, torch.tensor(sorted(int(k) for k in forget)))
        self.every, self.seconds, self.overhead, self.rows, self.n = max(int(every), 1), float(t0), 0.0, [], 0
        self.meter, self.gflops0 = meter, float(gflops0)
        self.last = time.process_time()
    def __call__(self, step:int, model, force:bool=False):
        "Count the time since the last call, and evaluate `model` if `step` is due (or `force`)."
        now = time.process_time(); self.seconds += now - self.last; self.n = int(step)
        if force or step % self.every == 0:
            with (self.meter.pause() if self.meter is not None else contextlib.nullcontext()):
                was = model.training; model.eval()
                with torch.no_grad(): ok = (model(self.X).argmax(1) == self.y).float()
                model.train(was)
            gf = self.gflops0 + (self.meter.gflops if self.meter is not None else math.nan)
            self.rows.append(dict(step=int(step), seconds=self.seconds, gflops=gf, retain_acc=float(ok[~self.fmask].mean()),
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
with FlopCount() as _m:
    _tr = StepTrace(_Dt, [2], every=10, t0=0.5, meter=_m, gflops0=2.0).start(_toy)
    _un2 = damo(_toy, _xsyn, _yt, [2], lr=1e-2, max_steps=60, batch=32, stop_prob=0.01, seed=0, on_step=_tr)
    _tr.end(_un2)
with FlopCount() as _m2: damo(_toy, _xsyn, _yt, [2], lr=1e-2, max_steps=60, batch=32, stop_prob=0.01, seed=0)
test_eq(all(torch.equal(a, b) for a, b in zip(_un.state_dict().values(), _un2.state_dict().values())), True)   # tracing changes nothing
test_eq(_m.flops, _m2.flops); assert _tr.rows[-1]["gflops"] <= 2.0 + _m.gflops                                 # ... and is not counted
test_eq([r["step"] for r in _tr.rows][:2], [0, 10]); test_eq(_tr.rows[-1]["step"], _un2.steps_); test_eq(_tr.rows[0]["gflops"], 2.0)
test_eq(all(b["seconds"] >= a["seconds"] >= 0.5 and b["gflops"] > a["gflops"] for a, b in zip(_tr.rows, _tr.rows[1:])), True)
with torch.no_grad(): _ok = _un2(_xt[_Dt["te"]]).argmax(1) == _yt[_Dt["te"]]
test_close(_tr.rows[-1]["forget_acc"], float(_ok[_yt[_Dt["te"]] == 2].float().mean()), eps=1e-12)
test_close(_tr.rows[0]["retain_acc"], float((_toy(_xt[_Dt["te"]]).argmax(1) == _yt[_Dt["te"]])[_yt[_Dt["te"]] != 2].float().mean()), eps=1e-12)
_ft = copy.deepcopy(_toy)
_tw = StepTrace(_Dt, [2]).start(_ft)
with _tw.watch(_ft): fit(_ft, _xt, _yt, epochs=1, batch_size=100, progress=False)
_tw.end(_ft)
test_eq([r["step"] for r in _tw.rows], [0, 1, 2, 3])   # 300 samples in batches of 100: three optimiser steps
assert all(math.isnan(r["gflops"]) for r in _tw.rows)  # no meter: no operation counts

# %% [markdown]
# ## The experiment, step by step
#
# For every seed, `run` splits the data, trains the original model and the benchmark's evaluator, runs the sampler
# benchmark, draws the synthetic sets once (noise, EGDS, AEGDS, and a fresh AEGDS draw for the forget-loss
# selection; a synthetic set serves every forget task of that seed, since it depends only on the original model),
# sets DAMO's stopping threshold and forget loss from synthetic data, then for each of the seed's single-class
# tasks trains Retrain and applies the reference and source-free methods, and finally the multi-class tasks
# (Original, Retrain, DSDA). On each seed's first task it also runs the GKT-style baseline, traces accuracy against
# compute for the curves, and computes the feature silhouettes.

# %%
#| export
ROWS = ("Original", "Retrain", "Fine-tune (real retain data)", "NegGrad+ (real data)", "Noise + DAMO", "EGDS + DAMO",
        "CE + NegGrad (synthetic data)", "DSDA (AEGDS + DAMO)", "DSDA w/o discrimination", "DSDA w/o multitask (c = 0)")
GKT = "GKT-style generator"
DSDA = "DSDA (AEGDS + DAMO)"
KEYS = dict(zip(ROWS + (GKT,), ("original", "retrain", "finetune", "neggrad_plus", "noise_damo", "egds_damo", "ce_neggrad_syn", "dsda",
                                "dsda_wo_disc", "dsda_wo_mt", "gkt")))
SOURCE = dict(zip(ROWS + (GKT,), ("-", "real data", "real data", "real data") + ("source-free",) * 7))
DAMO_ROWS = {"Noise + DAMO": ("noise", {}), "EGDS + DAMO": ("egds", {}),
             "CE + NegGrad (synthetic data)": ("aegds", dict(forget_loss="ascent", use_disc=False, c=0.0)),
             DSDA: ("aegds", {}), "DSDA w/o discrimination": ("aegds", dict(use_disc=False)), "DSDA w/o multitask (c = 0)": ("aegds", dict(c=0.0))}
CURVE_ROWS = ("Noise + DAMO", "EGDS + DAMO", DSDA, GKT)   # the source-free rows, as in the paper's Fig. 3
SIL_ROWS = ("Original", "Retrain", "CE + NegGrad (synthetic data)", "DSDA w/o discrimination", DSDA)

def seed_tasks(cfg:Config, si:int) -> list[int]:
    "The single-class tasks of seed `si`: `tasks_per_seed` classes taken in turn from `forget_classes` (all of them if 0)."
    fc, k = list(cfg.forget_classes), cfg.tasks_per_seed
    return fc if not k else [fc[(si * k + j) % len(fc)] for j in range(k)]

def _measure(fn, D, task, *, every=1, count=False, trace=False, t_syn=0.0, g_syn=0.0, start_model=None):
    "(model, dict(gflops, seconds, trace rows)) of `fn(on_step)`, with its operations counted (`count`) and its accuracy traced (`trace`)."
    meter = FlopCount() if (count or trace) else None
    st = StepTrace(D, task, every, t_syn, meter, g_syn) if trace else None
    t0 = time.process_time()
    with (meter if meter is not None else contextlib.nullcontext()):
        if st is not None: st.start(start_model)
        m = fn(st)
        if st is not None: st.end(m)
    secs = time.process_time() - t0 - (st.overhead if st is not None else 0.0)
    return m, dict(gflops=meter.gflops if meter is not None else math.nan, seconds=secs, trace=st.rows if st is not None else [])

def _silhouette(model, D, retain, seed):
    from sklearn.metrics import silhouette_score
    te = D["te"]; y = D["y"][te]; keep = torch.isin(y, torch.tensor(retain))
    with torch.no_grad(): h = features(model, D["X"][te][keep]).numpy()
    return float(silhouette_score(h, y[keep].numpy(), random_state=seed)), h, y[keep].numpy()


# %%
test_eq([seed_tasks(Config.from_params("cpu"), s) for s in range(5)], [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]])   # every class once
test_eq(seed_tasks(Config.from_params("smoke"), 3), [3])


# %%
#| export
def _synthetic_sets(cfg, orig, D, sd) -> tuple[dict, dict, dict]:
    "({set: (x, y)}, {set: GFLOPs}, {set: CPU seconds}) of the noise, EGDS, AEGDS and validation sets of one original model."
    ys = torch.arange(N_CLASSES).repeat_interleave(cfg.n_per_class)
    common = dict(dt=cfg.dt, gamma=cfg.gamma, noise_scale=cfg.noise_scale, variant=cfg.variant, x_shape=D["shape"], clamp=D["clamp"],
                  energy_kind=cfg.energy_kind)
    def noise():
        xn = torch.randn(len(ys), *D["shape"], generator=torch.Generator().manual_seed(derive_seed(sd, "noise"))).clamp(*D["clamp"])
        with torch.no_grad(): return xn, orig(xn).argmax(1)
    def sampler(method, steps, alpha, key):
        return lambda: (synthesize(orig, ys, steps=steps, method=method, alpha=alpha, **common,
                                   generator=torch.Generator().manual_seed(derive_seed(sd, key))), ys)
    makers = dict(noise=(noise, 0), egds=(sampler("egds", cfg.egds_steps, cfg.egds_alpha, "egds"), cfg.egds_steps),
                  aegds=(sampler("aegds", cfg.aegds_steps, cfg.aegds_alpha, "aegds"), 2 * cfg.aegds_steps))
    if cfg.forget_loss == "select": makers["validation"] = (sampler("aegds", cfg.aegds_steps, cfg.aegds_alpha, "validation"), 2 * cfg.aegds_steps)
    with FlopCount() as fwd, torch.no_grad(): orig(torch.zeros(1, *D["shape"]))          # the noise set: one forward pass per sample
    syn, gfl, secs = {}, {}, {}
    for k, (make, n_evals) in makers.items():
        t0 = time.process_time(); syn[k] = make(); secs[k] = time.process_time() - t0
        gfl[k] = (synthesis_flops(orig, len(ys), n_evals) if n_evals else fwd.flops * len(ys)) / 1e9
    return syn, gfl, secs

def _prepare_seed(cfg:Config, si:int) -> dict:
    "Everything a seed's tasks share: data, original model, sampler benchmark, synthetic sets, DAMO's stopping thresholds and forget loss."
    sd = derive_seed(cfg.seed, si); D = load_task_data(cfg, sd); X, y, tr, te = D["X"], D["y"], D["tr"], D["te"]
    orig = train_model(cfg, X[tr], y[tr], derive_seed(sd, "original"))
    ev = train_model(cfg, X[tr], y[tr], derive_seed(sd, "evaluator"), width=cfg.evaluator_width, epochs=cfg.evaluator_epochs)
    quality = SampleQuality(ev, X[te], y[te])
    bench, brows = sampler_benchmark(orig, quality, cfg, derive_seed(sd, "bench"), D["clamp"], D["shape"])
    syn, gfl, secs = _synthetic_sets(cfg, orig, D, sd)
    stop = {k: (cfg.stop_prob if cfg.stop_rule == "fixed" else reference_stop_prob(orig, *syn[k])) for k in ("noise", "egds", "aegds")}
    tasks = seed_tasks(cfg, si)
    dkw = dict(lam=cfg.lam, c=cfg.c, centers=cfg.centers, delta=cfg.delta, m=cfg.margin, lr=cfg.damo_lr, max_steps=cfg.damo_max_steps,
               batch=cfg.damo_batch, check_every=cfg.check_every)
    selection, sel_gflops, loss = [], 0.0, cfg.forget_loss
    if loss == "select":
        skw = dict(dkw, stop_prob=stop["aegds"], seed=derive_seed(derive_seed(sd, "task", tasks[0]), "damo"))
        loss, selection, models = select_forget_loss(orig, *syn["aegds"], *syn["validation"], [tasks[0]], **skw)
        sel_gflops = gfl["validation"] + sum(m.flops_["total"] for m in models.values()) / 1e9
        for r in selection: r.update({f"real_{k}": v for k, v in evaluate(models[r["forget_loss"]], D, [tasks[0]]).items()})   # shown, never used
    with torch.no_grad(): rates = {k: float((orig(syn[k][0]).argmax(1) == syn[k][1]).float().mean()) for k in ("noise", "egds", "aegds")}
    synrows = [dict(seed=si, source=k, target_rate=rates[k], evaluator_rate=quality.accuracy(*syn[k]), quality=quality(*syn[k]),
                    classes_present=int(len(torch.unique(syn[k][1]))), gflops=gfl[k], stop_prob=stop[k]) for k in rates]
    return dict(si=si, sd=sd, D=D, orig=orig, bench=bench, brows=brows, syn=syn, gfl=gfl, secs=secs, stop=stop, tasks=tasks,
                dkw=dict(dkw, forget_loss=loss), selection=[dict(seed=si, task=tasks[0], **r) for r in selection], sel_gflops=sel_gflops,
                synrows=synrows)


# %%
#| export
def _single_task(cfg:Config, S:dict, f:int, first:bool) -> tuple[list, list, dict]:
    "(result rows, accuracy-trace rows, {method: model}) of forgetting class `f` with every method; the first task of a seed also runs GKT and traces."
    task = [f]; fc, rc = check_forget_classes(task, N_CLASSES); ts = derive_seed(S["sd"], "task", f)
    D, orig = S["D"], S["orig"]; X, y, tr = D["X"], D["y"], D["tr"]
    rmask = torch.isin(y[tr], torch.tensor(rc)); Xr, yr, Xf, yf = X[tr][rmask], y[tr][rmask], X[tr][~rmask], y[tr][~rmask]
    trace = first and cfg.curve_every > 0
    recs, curves, models = [], [], {}
    def add(name, model, info, g_syn=0.0):
        recs.append(dict(seed=S["si"], task=f, first_task=first, n_forget=1, method=name, **evaluate(model, D, task), synthesis_gflops=g_syn,
                         unlearning_gflops=info["gflops"], unlearning_seconds=info["seconds"], damo_steps=getattr(model, "steps_", None)))
        curves.extend(dict(seed=S["si"], task=f, method=name, **r) for r in info["trace"]); models[name] = model
    def finetune(st):
        m = copy.deepcopy(orig)
        with (st.watch(m) if st is not None else contextlib.nullcontext()):
            fit(m, Xr, yr, epochs=cfg.finetune_epochs, lr=cfg.train_lr, batch_size=cfg.batch_size, seed=derive_seed(ts, "ft"), progress=False, threads=None)
        return m
    add("Original", orig, dict(gflops=0.0, seconds=0.0, trace=[]))
    m, info = _measure(lambda st: train_model(cfg, Xr, yr, derive_seed(ts, "retrain")), D, task)
    add("Retrain", m, dict(info, gflops=training_flops(m, len(Xr), cfg.train_epochs) / 1e9))
    m, info = _measure(finetune, D, task)
    add("Fine-tune (real retain data)", m, dict(info, gflops=training_flops(orig, len(Xr), cfg.finetune_epochs) / 1e9))
    m, info = _measure(lambda st: neggrad_plus(orig, Xr, yr, Xf, yf, epochs=cfg.neggrad_epochs, lr=cfg.damo_lr, batch=cfg.batch_size,
                                               seed=derive_seed(ts, "ng")), D, task)
    per_epoch = len(Xr) + math.ceil(len(Xr) / cfg.batch_size) * min(cfg.batch_size, len(Xf))   # retain batches plus one forget batch per step
    add("NegGrad+ (real data)", m, dict(info, gflops=training_flops(orig, per_epoch, cfg.neggrad_epochs) / 1e9))
    for name, (src, extra) in DAMO_ROWS.items():   # operations: `model.flops_`, exact for the steps each run took
        kw = {**S["dkw"], "stop_prob": S["stop"][src], **extra, "seed": derive_seed(ts, "damo")}
        m, info = _measure(lambda st: damo(orig, *S["syn"][src], task, **kw, on_step=st), D, task, every=cfg.curve_every,
                           trace=trace and name in CURVE_ROWS, t_syn=S["secs"][src], start_model=orig)
        add(name, m, dict(info, gflops=m.flops_["total"] / 1e9, trace=[dict(r, gflops=S["gfl"][src] + damo_gflops_at(m.flops_, r["step"])) for r in info["trace"]]),
            S["gfl"][src])
    if first:   # GKT reports its own operations (student.flops_: per pseudo-batch), which the trace rows then take
        m, info = _measure(lambda st: gkt_unlearn(orig, task, batches=cfg.gkt_batches, batch=cfg.gkt_batch, student_iters=cfg.gkt_student_iters,
                                                  lr=cfg.gkt_lr, beta=cfg.gkt_beta, threshold=cfg.gkt_threshold, penalty=cfg.gkt_penalty,
                                                  seed=derive_seed(ts, "gkt"), on_step=st), D, task, every=cfg.gkt_eval_every, trace=True, start_model=orig)
        cum = np.concatenate([[0], np.cumsum(m.flops_)]) / 1e9
        add(GKT, m, dict(info, gflops=float(cum[-1]), trace=[dict(r, gflops=float(cum[r["step"]])) for r in info["trace"]]))
    return recs, curves, models

def gkt_match(trace_rows:list, retain_acc:float, forget_acc:float, tol:float) -> dict|None:
    "The first traced point (after the start) with retain accuracy >= `retain_acc` - tol and forget accuracy <= `forget_acc` + tol, or None."
    return next((r for r in trace_rows if r["step"] > 0 and r["retain_acc"] >= retain_acc - tol and r["forget_acc"] <= forget_acc + tol), None)

def _first_task_extras(cfg, S, recs, curves, models) -> tuple[dict, list]:
    "(cost comparison with the GKT-style baseline, silhouette rows) from a seed's first task."
    r = {x["method"]: x for x in recs}; d = r[DSDA]
    gk = [c for c in curves if c["method"] == GKT]
    hit = gkt_match(gk, d["retain_acc"], d["forget_acc"], cfg.match_tol)
    g_gkt = hit["gflops"] if hit is not None else r[GKT]["unlearning_gflops"]
    g_dsda = S["gfl"]["aegds"] + d["unlearning_gflops"]
    cost = dict(seed=S["si"], task=d["task"], dsda_gflops=g_dsda, selection_gflops=S["sel_gflops"], gkt_gflops_to_match=g_gkt,
                gkt_reached=hit is not None, gkt_budget_gflops=r[GKT]["unlearning_gflops"], dsda_over_gkt=g_dsda / g_gkt,
                dsda_with_selection_over_gkt=(g_dsda + S["sel_gflops"]) / g_gkt)
    rc = check_forget_classes([d["task"]], N_CLASSES)[1]
    sil = [dict(seed=S["si"], method=name, silhouette=_silhouette(models[name], S["D"], rc, S["sd"])[0]) for name in SIL_ROWS]
    return cost, sil

def _multi_tasks(cfg:Config, S:dict) -> list:
    "Rows of the multi-class tasks of one seed: Original, Retrain and DSDA on random class sets of each size."
    D, orig, out = S["D"], S["orig"], []
    X, y, tr = D["X"], D["y"], D["tr"]
    mrng = np.random.default_rng(derive_seed(S["sd"], "multi"))
    for size in cfg.multi_sizes:
        for j in range(cfg.n_multi_sets):
            task_f = sorted(mrng.choice(N_CLASSES, size=size, replace=False).tolist())
            fc, rc = check_forget_classes(task_f, N_CLASSES); ts = derive_seed(S["sd"], "multi", size, j)
            rmask = torch.isin(y[tr], torch.tensor(rc))
            models = dict(Original=orig, Retrain=train_model(cfg, X[tr][rmask], y[tr][rmask], derive_seed(ts, "retrain")))
            models[DSDA] = damo(orig, *S["syn"]["aegds"], task_f, **{**S["dkw"], "stop_prob": S["stop"]["aegds"] * size}, seed=derive_seed(ts, "damo"))
            out += [dict(seed=S["si"], task=str(task_f), n_forget=size, method=k, **evaluate(m, D, task_f)) for k, m in models.items()]
    return out


# %%
#| export
def _per_seed(df, method:str, col:str) -> list:
    "Per-seed means (over that seed's tasks) of column `col` for `method`, in seed order."
    return [float(v) for v in df[df.method == method].groupby("seed")[col].mean().sort_index()]

def _metrics(cfg:Config, df, mdf, bdf, sdf, costdf, sildf, seldf) -> dict:
    "The measurements the claims read: per-seed lists (one value per seed) where a claim takes an interval over seeds."
    import pandas as pd
    M, df = {}, df.copy()
    ret = df[df.method == "Retrain"].set_index(["seed", "task"]).mia
    df["mia_gap"] = np.abs(df.mia.to_numpy() - ret.reindex(pd.MultiIndex.from_frame(df[["seed", "task"]])).to_numpy())
    for name in ROWS:
        for col in ("retain_acc", "forget_acc", "mia", "mia_gap"): M[f"single/{KEYS[name]}/{col}"] = _per_seed(df, name, col)
        if name in DAMO_ROWS: M[f"single/{KEYS[name]}/damo_steps"] = _per_seed(df, name, "damo_steps")
    first = df[df.first_task]
    for name in (DSDA, GKT):
        for col in ("retain_acc", "forget_acc"): M[f"first/{KEYS[name]}/{col}"] = _per_seed(first, name, col)
    M["cost/dsda_unlearn_gflops"] = _per_seed(df, DSDA, "unlearning_gflops")
    M["cost/dsda_wo_mt_unlearn_gflops"] = _per_seed(df, "DSDA w/o multitask (c = 0)", "unlearning_gflops")
    c = costdf.sort_values("seed")
    for k in ("dsda_gflops", "gkt_gflops_to_match", "dsda_over_gkt", "dsda_with_selection_over_gkt"): M[f"cost/{k}"] = c[k].tolist()
    M["cost/gkt_reached_share"] = float(c.gkt_reached.mean())
    for s in BENCH: M[f"bench/{s}_eval_ratio"] = bdf[bdf.sampler == s].sort_values("seed").ratio.tolist()
    piv = bdf.pivot(index="seed", columns="sampler", values="interior")
    M["bench/interior_share"] = float((piv["sgld"].astype(bool) & piv["aegds"].astype(bool)).mean())
    sg = bdf[bdf.sampler == "sgld"].sort_values("seed"); M["bench/sgld_gain"] = (sg.start_quality - sg.target).tolist()
    for name in SIL_ROWS: M[f"features/{KEYS[name]}_silhouette"] = sildf[sildf.method == name].sort_values("seed").silhouette.tolist()
    M["multi/dsda_forget_acc"] = M["multi/gap_growth"] = None
    if len(mdf):
        g = mdf[mdf.n_forget == max(cfg.multi_sizes)].groupby(["seed", "method"])[["retain_acc", "forget_acc"]].mean()
        gap_big = (g.xs("Retrain", level="method").retain_acc - g.xs(DSDA, level="method").retain_acc).sort_index().to_numpy()
        gap_single = np.asarray(M["single/retrain/retain_acc"]) - np.asarray(M["single/dsda/retain_acc"])
        M["multi/dsda_forget_acc"] = g.xs(DSDA, level="method").forget_acc.sort_index().tolist()
        M["multi/gap_growth"] = (gap_big - gap_single).tolist()
        for (n, meth), r in mdf.groupby(["n_forget", "method"])[["retain_acc", "forget_acc"]].mean().iterrows():
            if meth in ("Retrain", DSDA): M.update({f"multi/k{n}_{KEYS[meth]}_{k}": float(r[k]) for k in ("retain_acc", "forget_acc")})
    for k, s in sdf.groupby("source"): M.update({f"synth/{k}_{col}": float(s[col].mean()) for col in ("target_rate", "evaluator_rate", "quality")})
    if len(seldf): M.update({f"select/{fl}_share": float((seldf[seldf.chosen].forget_loss == fl).mean()) for fl in FORGET_LOSSES})
    M["stop/reference_prob"] = float(sdf[sdf.source == "aegds"].stop_prob.mean())
    return M

def _tables(cfg:Config, df, mdf, bdf, sdf, costdf, sildf, seldf, cdf) -> dict:
    "The tables the page shows (means and spreads over tasks and seeds), plus the raw per-task and per-step rows."
    import pandas as pd
    cols = ["retain_acc", "forget_acc", "mia", "synthesis_gflops", "unlearning_gflops", "damo_steps"]
    t = df.groupby("method", sort=False)[cols].agg(["mean", "std"]); t.columns = [f"{a}_{b}" for a, b in t.columns]
    t = t.reindex([r for r in ROWS + (GKT,) if r in set(df.method)])
    t.insert(0, "n_tasks", df.groupby("method").size().reindex(t.index)); t.insert(0, "data", [SOURCE[r] for r in t.index])
    mt = mdf.groupby(["n_forget", "method"], sort=False)[["retain_acc", "forget_acc", "mia"]].mean() if len(mdf) else pd.DataFrame()
    bt = bdf.groupby("sampler", sort=False).agg(alpha_per_seed=("alpha", lambda a: ", ".join(f"{x:g}" for x in a)),
                                                evals_to_target=("evals_to_target", "mean"), ratio_mean=("ratio", "mean"), ratio_min=("ratio", "min"),
                                                ratio_max=("ratio", "max"), reached_share=("reached", "mean"), interior_share=("interior", "mean"))
    st = sdf.groupby("source")[["target_rate", "evaluator_rate", "quality", "classes_present", "gflops", "stop_prob"]].mean()
    sil = sildf.pivot(index="seed", columns="method", values="silhouette")[list(SIL_ROWS)]
    return dict(single_class=t, multi_class=mt, sampler_benchmark=bt, synthetic_sets=st, cost=costdf, silhouettes=sil,
                forget_loss_selection=seldf, per_task=df, accuracy_vs_compute=cdf)


# %%
#| export
SAMPLER_NAMES = dict(sgld="SGLD (plain Langevin, EGDS)", heun="Heun only", momentum="momentum only", aegds="AEGDS (Heun + momentum)")

def _band(ax, x, Y, label, **kw):
    "Median over rows of `Y` (seeds) with the band from the smallest to the largest value; columns with a NaN are left out."
    ok = np.isfinite(Y).all(0)
    l, = ax.plot(x[ok], np.median(Y[:, ok], 0), lw=1.6, label=label, **kw)
    ax.fill_between(x[ok], Y[:, ok].min(0), Y[:, ok].max(0), color=l.get_color(), alpha=0.15, lw=0)
    return l

def _sampler_figure(brows):
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    b = brows.assign(excess=brows.quality - brows.target)
    for s in BENCH:
        sub = b[b.sampler == s]; x = np.sort(sub.score_evals.unique())
        Y = np.stack([np.interp(x, g.score_evals, g.excess, right=np.nan) for _, g in sub.groupby("seed")])
        _band(ax, x.astype(float), Y, f"{SAMPLER_NAMES[s]}")
    ax.axhline(0.0, color="k", ls="--", lw=1, label="Langevin's quality at its budget")
    ax.set_xlabel("score evaluations (forward + backward passes)"); ax.set_ylabel("class-conditional MMD² minus Langevin's (lower is better)")
    ax.set_title("Sample quality against score evaluations, each sampler at its best step size\n(median over seeds; band: range over seeds)", fontsize=10)
    ax.legend(fontsize=9); fig.tight_layout(); return fig

def _curve_figure(cdf, retrain):
    "Retain and forget accuracy against cumulative GFLOPs (log scale): median over seeds with the range over seeds; Retrain as a point."
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 2, figsize=(11, 4.4), sharex=True)
    pos = cdf[cdf.gflops > 0]
    grid = np.geomspace(float(pos.gflops.min()), float(max(pos.gflops.max(), retrain.unlearning_gflops.max())), 200)
    for name in [r for r in CURVE_ROWS if r in set(pos.method)]:
        per = [g.sort_values("step") for _, g in pos[pos.method == name].groupby("seed")]
        for a, col in zip(ax, ("retain_acc", "forget_acc")):
            Y = np.stack([np.where(grid < g.gflops.iloc[0], np.nan, np.interp(grid, g.gflops, g[col])) for g in per])
            l = _band(a, grid, Y, name)
            a.plot([np.median([g.gflops.iloc[-1] for g in per])], [np.median([g[col].iloc[-1] for g in per])], "o", color=l.get_color(), ms=4)
    for a, col in zip(ax, ("retain_acc", "forget_acc")):
        x, yv = retrain.unlearning_gflops.to_numpy(), retrain[col].to_numpy()
        a.errorbar([np.median(x)], [np.median(yv)], xerr=[[np.median(x) - x.min()], [x.max() - np.median(x)]],
                   yerr=[[np.median(yv) - yv.min()], [yv.max() - np.median(yv)]], fmt="k*", ms=10, label="Retrain (training from scratch)")
        a.set_xscale("log"); a.set_ylim(-0.02, 1.02); a.set_xlabel("cumulative GFLOPs (synthesis + unlearning), log scale")
    ax[0].set_ylabel("retain accuracy, real test split"); ax[1].set_ylabel("forget accuracy, real test split")
    h, lab = ax[0].get_legend_handles_labels()
    fig.legend(h, lab, loc="lower center", ncol=4, fontsize=9, frameon=False)
    fig.suptitle(f"Accuracy against compute on each seed's first task (median over {cdf.seed.nunique()} seeds, band: range over seeds; "
                 "dot: median stop)", fontsize=10)
    fig.tight_layout(rect=(0, 0.12, 1, 1)); return fig

def _as_image(x):
    "A sample as `imshow` takes it: a grey (H, W) array as is; a colour (C, H, W) one moved to (H, W, C) and scaled to [0, 1]."
    x = np.asarray(x, dtype=float)
    if x.ndim == 3 and x.shape[0] in (1, 3):
        x = np.moveaxis(x, 0, -1)
        x = (x - x.min()) / max(float(x.max() - x.min()), 1e-12)
        if x.shape[-1] == 1: x = x[..., 0]
    return x

def _figures(cfg:Config, df, brows, cdf, samples, proj, sil) -> dict:
    "The page's figures: synthetic samples, sampler efficiency, features, accuracy bars and accuracy against compute."
    import matplotlib.pyplot as plt, seaborn as sns
    figs = {}
    fig, ax = plt.subplots(2, N_CLASSES, figsize=(1.1 * N_CLASSES, 2.6))
    for r, k in enumerate(("egds", "aegds")):
        for j in range(N_CLASSES):
            ax[r, j].imshow(_as_image(samples[k][j]), cmap="gray"); ax[r, j].set_xticks([]); ax[r, j].set_yticks([])
            if r == 0: ax[r, j].set_title(f"class {j}", fontsize=9)
        ax[r, 0].set_ylabel(k.upper(), fontsize=9)
    fig.suptitle("Synthetic samples (one per class, first seed)"); fig.tight_layout(); figs["samples"] = fig
    figs["sampler_efficiency"] = _sampler_figure(brows)
    fig, ax = plt.subplots(1, len(proj), figsize=(3.4 * len(proj), 3.4))
    for a, (name, z, yy) in zip(ax, proj):
        a.scatter(z[:, 0], z[:, 1], c=yy, cmap="tab10", s=6, vmin=0, vmax=9); a.set_title(f"{name}\n(silhouette {sil[name]:.2f})", fontsize=9)
        a.set_xlabel("PC 1 (feature units)"); a.set_ylabel("PC 2 (feature units)")
    fig.suptitle("Real test features of the retain classes (first seed, first task)", fontsize=10); fig.tight_layout(); figs["features"] = fig
    fig, ax = plt.subplots(figsize=(8, 4.2))
    order = [r for r in ROWS + (GKT,) if r in set(df.method)]
    bar_df = df.melt(id_vars=["method"], value_vars=["retain_acc", "forget_acc"], var_name="metric", value_name="accuracy")
    sns.barplot(bar_df, y="method", x="accuracy", hue="metric", order=order, ax=ax, errorbar=("pi", 100))
    ax.set_xlabel("accuracy on the real test split (fraction)"); ax.set_ylabel(""); ax.set_xlim(0, 1)
    ax.set_title("Single-class forgetting, mean over tasks and seeds (bar: range)", fontsize=10); fig.tight_layout(); figs["accuracy_bars"] = fig
    if cfg.curve_every and len(cdf): figs["accuracy_vs_compute"] = _curve_figure(cdf, df[(df.method == "Retrain") & df.first_task])
    return figs

def _feature_views(S, f, models) -> tuple[list, dict]:
    "([(name, 2-d PCA of the retain-class test features, labels)], {name: silhouette}) of the first seed's first task."
    from sklearn.decomposition import PCA
    rc = check_forget_classes([f], N_CLASSES)[1]; out, sil = [], {}
    for name in ("Original", "Retrain", "CE + NegGrad (synthetic data)", DSDA):
        sc, h, yy = _silhouette(models[name], S["D"], rc, S["sd"]); sil[name] = sc
        out.append((name, PCA(2, random_state=0).fit_transform(h), yy))
    return out, sil

def run(cfg:Config, progress:bool=True) -> Result:
    "The whole reproduction (single- and multi-class forgetting, the sampler benchmark, the GKT-style baseline): measurements, tables and figures."
    import pandas as pd
    from tqdm.auto import tqdm
    with cpu_threads(cfg.n_threads):
        recs, multi, bench, brows, curves, sil, sel, cost, synrows = [], [], [], [], [], [], [], [], []
        for si in tqdm(range(cfg.n_seeds), desc="dsda seeds", disable=not progress):
            S = _prepare_seed(cfg, si)
            bench += [dict(seed=si, sampler=k, **v) for k, v in S["bench"].items()]; brows += [dict(seed=si, **r) for r in S["brows"]]
            sel += S["selection"]; synrows += S["synrows"]
            for j, f in enumerate(S["tasks"]):
                r, c, models = _single_task(cfg, S, f, first=j == 0)
                recs += r; curves += c
                if j > 0: continue
                co, sr = _first_task_extras(cfg, S, r, c, models); cost.append(co); sil += sr
                if si == 0:
                    proj, psil = _feature_views(S, f, models)
                    samples = {k: S["syn"][k][0][:: cfg.n_per_class].squeeze(1).numpy() for k in ("egds", "aegds")}
            multi += _multi_tasks(cfg, S)
    df, mdf, bdf, sdf, costdf, sildf, seldf = (pd.DataFrame(x) for x in (recs, multi, bench, synrows, cost, sil, sel))
    cdf = pd.DataFrame(curves, columns=["seed", "task", "method", "step", "seconds", "gflops", "retain_acc", "forget_acc"])
    return Result(paper="dsda", config=cfg.to_dict(), metrics=_metrics(cfg, df, mdf, bdf, sdf, costdf, sildf, seldf),
                  tables=_tables(cfg, df, mdf, bdf, sdf, costdf, sildf, seldf, cdf),
                  figures=_figures(cfg, df, pd.DataFrame(brows), cdf, samples, proj, psil))


# %% [markdown]
# ## The claims
#
# Declared before any number exists. Every graded number is a per-seed value (the mean over that seed's tasks),
# summarised by its 95 % t-interval over seeds; the one grader in `trustlib.results` turns them into verdicts, and
# an interval across a threshold is inconclusive. "Best among" compares DSDA with each alternative on paired
# per-seed differences, with Bonferroni-adjusted joint intervals. Compute is counted in floating-point operations.

# %%
#| export
_LOG_DATE = "2026-12-01"
SOURCE_FREE = ("single/noise_damo/retain_acc", "single/egds_damo/retain_acc", "single/ce_neggrad_syn/retain_acc")
MIA_BASELINES = tuple(f"single/{k}/mia_gap" for k in ("finetune", "neggrad_plus", "noise_damo", "egds_damo", "ce_neggrad_syn"))

def _logged(claim:Claim, *entries) -> Claim:
    "`claim` with change-log entries (date, old rule, why); the new rule of each entry is the claim's own rule text (or status)."
    import dataclasses
    return dataclasses.replace(claim, log=tuple(Change(d, old, claim.rule_text() or claim.status, why) for d, old, why in entries))

CLAIMS = [
    Claim("forgets_without_data", "DSDA forgets the class completely (forget accuracy 0 %) and keeps retain accuracy, with no training data",
          "A_f = 0 % on every task; A_r close to Retrain's",
          AllOf(Below("single/dsda/forget_acc", 0.01, 0.05, what="DSDA's forget accuracy"),
                Below(Diff("single/retrain/retain_acc", "single/dsda/retain_acc"), 0.05, 0.10, what="retain-accuracy gap Retrain − DSDA")),
          headline=True, reason="single-class tasks; DAMO's forget loss and stopping threshold are set from synthetic data only"),
    _logged(Claim("best_source_free", "DSDA has the highest retain accuracy among source-free methods", "highest A_r among source-free methods (GKT, ISPF)",
                  AllOf(BestAmong("single/dsda/retain_acc", SOURCE_FREE, what="retain accuracy"),
                        Above(Diff("first/dsda/retain_acc", "first/gkt/retain_acc"), 0.0, what="retain accuracy DSDA − GKT-style baseline (first tasks)")),
                  reason="source-free rows: noise + DAMO, EGDS + DAMO, CE + NegGrad on the synthetic data (every task) and the GKT-style generator "
                         "at its full budget (each seed's first task); ISPF is not implemented"),
            (_LOG_DATE, "reproduced if A_r gain over the best source-free row > 0; interval must clear the threshold",
             "DSDA must beat each source-free row separately (joint intervals), and the rows now include CE + NegGrad on synthetic data and a "
             "GKT-style baseline")),
    _logged(Claim("mia_closest", "DSDA's membership-inference rate is the closest to Retrain's", "MIA closest to Retrain ('the best')",
                  BestAmong("single/dsda/mia_gap", MIA_BASELINES, op="<", what="|MIA − MIA(Retrain)|"),
                  reason="entropy attack of the GKT/SSD/UNSIR code on the forget-train split; baselines: fine-tuning, NegGrad+, noise + DAMO, "
                         "EGDS + DAMO, CE + NegGrad on synthetic data"),
            (_LOG_DATE, "reproduced if |MIA - MIA_Retrain| of DSDA minus the best baseline's < 0; interval must clear the threshold",
             "closest means closer than each baseline (joint intervals), not closer than the per-seed best one; CE + NegGrad on synthetic data added")),
    _logged(Claim("aegds_efficiency", "AEGDS reaches plain Langevin's sample quality with fewer score evaluations (at most half)",
                  "accelerated sampling cuts synthesis time: DSDA-w-EGDS takes much longer (Fig. 4)",
                  Below("bench/aegds_eval_ratio", 0.5, 1.0, what="evaluation ratio AEGDS / SGLD to Langevin's quality"),
                  requires=(AtLeast("bench/interior_share", 1.0, what="share of models whose best SGLD and AEGDS step sizes lie inside the grid"),
                            Above("bench/sgld_gain", 0.0, what="quality gain of Langevin's samples over the noise start")),
                  reason="quality: class-conditional MMD² to held-out real images in an independent evaluator's features, which no sampler "
                         "optimises; each sampler at its best step size; the ratio is 1 at equal speed"),
            (_LOG_DATE, "reproduced if score-evaluation ratio < 0.5; partially if score-evaluation ratio < 1; interval must clear the threshold",
             "quality was the mean energy, which the samplers minimise and which saturates at the noise scale used, and the ratio was taken against "
             "SGLD's whole budget although SGLD reached its own final energy in a few evaluations; quality is now a measure no sampler optimises, "
             "both samplers are timed to the same target, and the best step sizes must lie inside the grid")),
    Claim("egds_lower_retain", "Without acceleration (plain EGDS samples) DSDA's retain accuracy is lower", "DSDA-w-EGDS: slightly lower A_r (Fig. 4)",
          Above(Diff("single/dsda/retain_acc", "single/egds_damo/retain_acc"), 0.0, what="retain accuracy AEGDS + DAMO − EGDS + DAMO")),
    _logged(Claim("disc_raises_retain", "The discrimination loss raises retain accuracy", "DSDA-wo-disc has lower A_r (Fig. 4)",
                  Above(Diff("single/dsda/retain_acc", "single/dsda_wo_disc/retain_acc"), 0.0, what="retain-accuracy gain from L_Disc"),
                  requires=Above(Diff("features/original_silhouette", "features/dsda_wo_disc_silhouette"), 0.0,
                                 what="silhouette drop of the retain features without L_Disc (Original − DSDA w/o discrimination)"),
                  reason="the loss is there to undo the dispersion of retain-class features that unlearning causes (Fig. 2); the condition checks "
                         "that the dispersion occurs"),
            (_LOG_DATE, "reproduced if A_r gain from L_Disc > 0; interval must clear the threshold",
             "the claim rests on feature dispersion, which may be absent on 8x8 digits; that DAMO without the loss disperses the retain features "
             "is now a condition")),
    Claim("mt_raises_retain", "The conflict-averse update raises retain accuracy", "DSDA-wo-mt has lower A_r (Fig. 4)",
          Above(Diff("single/dsda/retain_acc", "single/dsda_wo_mt/retain_acc"), 0.0, what="retain-accuracy gain from the conflict-averse update")),
    _logged(Claim("mt_faster", "Without the multitask update, unlearning takes longer", "DSDA-wo-mt has higher execution time (Fig. 4)",
                  Above(Diff("cost/dsda_wo_mt_unlearn_gflops", "cost/dsda_unlearn_gflops"), 0.0, what="unlearning GFLOPs without the update − with it"),
                  reason="compute of the whole unlearning run in floating-point operations (per step the two cost about the same; the "
                         "conflict-averse update adds a 3x3 Gram matrix and a 3-variable solve), mean over each seed's tasks"),
            (_LOG_DATE, "reproduced if extra DAMO steps without the update > 0; interval must clear the threshold",
             "execution time is measured as the operations of the whole unlearning run, which also count what a step costs; five seeds")),
    Claim("multi_class_stable", "DSDA does not degrade as the number of forget classes grows", "A_f = 0 % and A_r stable on multi-class tasks (Table 2)",
          AllOf(Below("multi/dsda_forget_acc", 0.01, 0.05, what="DSDA's forget accuracy at the largest multi-class size"),
                Below("multi/gap_growth", 0.02, 0.05, what="growth of the Retrain − DSDA retain gap over single-class forgetting"))),
    _logged(Claim("faster_than_gkt", "DSDA needs 68.5 % less execution time than the source-free baselines", "−68.50 % on average against GKT and ISPF",
                  Below("cost/dsda_over_gkt", 0.315, 1.0, what="GFLOPs ratio DSDA / GKT-style baseline at DSDA's accuracy"),
                  reason="each seed's first task: DSDA's synthesis and DAMO against the GKT-style baseline's operations until it comes within "
                         "match_tol of DSDA's retain and forget accuracy (its whole budget if it never does, which makes the ratio an upper bound); "
                         "ISPF is not implemented"),
            (_LOG_DATE, "not_testable_offline", "a GKT-style baseline is implemented and compute is counted in operations, which do not depend on the machine")),
    _logged(Claim("features_compact", "DAMO keeps retain-class features compact and separated where a standard unlearning loss disperses them (Fig. 2)",
                  "t-SNE: compact, separated clusters like Retrain's",
                  Above(Diff("features/dsda_silhouette", "features/ce_neggrad_syn_silhouette"), 0.0, what="silhouette DSDA − CE + NegGrad (synthetic data)"),
                  requires=Above(Diff("features/original_silhouette", "features/ce_neggrad_syn_silhouette"), 0.0,
                                 what="silhouette drop under CE + NegGrad (Original − CE + NegGrad)"),
                  reason="silhouette of the real test features of the retain classes, each seed's first task"),
            (_LOG_DATE, "illustrated", "graded now that the standard-loss row exists (CE + NegGrad on synthetic data): DAMO's features must be more "
                                       "compact than that row's, once that loss is shown to disperse them")),
]

# %% [markdown]
# ### How each claim is judged

# %%
claims_table(CLAIMS)

# %% [markdown]
# ## The experiment

# %%
result = run_experiment(run, cfg, CLAIMS)

# %%
from trustlib.rehearse import rehearsing

# %%
assert all(k in result.metrics for c in CLAIMS for k in c.keys()), [k for c in CLAIMS for k in c.keys() if k not in result.metrics]
if not rehearsing():   # a rehearsal's tiny, briefly trained stand-ins need not reach the samplers' target rate
    assert result.metrics["synth/aegds_target_rate"] >= 0.9 and result.metrics["synth/egds_target_rate"] >= 0.9

# %% [markdown]
# ### Single-class forgetting (mean and standard deviation over tasks and seeds)
#
# Accuracies are on the real test split; MIA is the entropy attack's member rate on the forget-train split (the
# target is Retrain's); compute is in GFLOPs: synthesis once per model and data source, unlearning per task (for
# Retrain, training from scratch). The GKT-style row runs on each seed's first task only, at its whole budget.

# %%
result.tables["single_class"].round(3)

# %% [markdown]
# The synthetic sets: the share of samples the original model assigns to their target class, the share the
# independent evaluator assigns to it, their quality (class-conditional MMD², lower is better), the number of classes
# present (noise inputs labelled by the model's argmax can leave classes out), their cost, and DAMO's stopping
# threshold derived from each set.

# %%
result.tables["synthetic_sets"].round(4)

# %% [markdown]
# The forget loss picked per model (synthetic data only), with the real accuracies of each candidate on that task
# for the reader; the real accuracies play no part in the choice.

# %%
result.tables["forget_loss_selection"].round(4) if len(result.tables["forget_loss_selection"]) else "forget_loss is fixed in this run"

# %% [markdown]
# ### Sampler efficiency
#
# Quality against score evaluations for each sampler at its best step size, relative to Langevin's quality at its
# budget (0, dashed): a curve below 0 is better than Langevin's. The table gives each sampler's step size per
# model, the evaluations it needs to reach Langevin's quality, and the ratio to SGLD's evaluations to the same
# quality.

# %%
result.figures["sampler_efficiency"]

# %%
result.tables["sampler_benchmark"].round(3)

# %%
result.figures["samples"]

# %% [markdown]
# ### Compute: DSDA against the GKT-style baseline
#
# Per seed (first task): DSDA's synthesis + DAMO operations, the selection of its forget loss (reported apart: the
# paper's forget loss is fixed, ours is picked), the GKT-style baseline's operations until it comes within
# `match_tol` of DSDA's retain and forget accuracy (or its whole budget if it does not), and the ratio.

# %%
result.tables["cost"].round(3)

# %%
result.figures.get("accuracy_vs_compute", "no accuracy curves in this run (curve_every = 0)")

# %% [markdown]
# ### Multi-class forgetting (means over random class sets and seeds)

# %%
result.tables["multi_class"].round(3) if len(result.tables["multi_class"]) else "no multi-class tasks in this profile"

# %% [markdown]
# ### Features and ablations
#
# Silhouette scores of the real test features of the retain classes (each seed's first task): higher means more
# compact, better separated classes. The figure shows the first seed.

# %%
result.tables["silhouettes"].round(3)

# %%
result.figures["features"]

# %%
result.figures["accuracy_bars"]

# %% [markdown]
# ## How the settings were chosen
#
# None of the sampler or unlearning hyperparameters are in the paper.
#
# - **From synthetic data only, per model:** DAMO's forget loss (the candidate that changes the model least on a
#   fresh synthetic draw, see above) and its stopping threshold (the original model's wrong-class probability on its
#   own synthetic samples). The unlearning itself never sees a real image.
# - **Sampler step sizes** of the synthetic sets (AEGDS alpha 3 with 8 steps, EGDS alpha 1 with 40 steps) by the mean
#   synthetic energy alone; the benchmark picks its own step sizes per sampler from `alpha_grid`.
# - **DAMO's learning rate (1e-3), c = 0.4 and delta = 32** were set once on a validation split of real data: one
#   fifth of the *training* part of an extra seed (12345), with an original model trained on the other four fifths;
#   the splits and seeds the tables report were not used. These three values are the only place real data entered
#   the design.
# - **The GKT-style baseline** follows the official code's recipe (KL plus attention transfer with weight 250, one
#   generator step and ten student steps per pseudo-batch, gate threshold 0.01, Adam 1e-3) scaled down to 64
#   samples per pseudo-batch; its budget (`gkt_batches`) is set by the five-minute CPU budget of the `cpu`
#   profile, not tuned on results. The official code runs 4,000 pseudo-batches of 256.
# - The CNN width (16, about 6k parameters), 15 training epochs, 40 synthetic samples per class, at most 100 DAMO
#   steps, five seeds with two forget classes each (every class forgotten once) keep the `cpu` profile within five CPU
#   minutes on two cores.

# %% [markdown]
# ## Paper vs. us

# %%
result.verdict_table()

# %% [markdown]
# The verdicts follow the rules in "How each claim is judged" and are recomputed from whichever profile ran (a
# `smoke` run has one seed and no intervals, so every graded claim is inconclusive there). How to read them:
#
# - **The source-free premise.** The synthetic-set table shows whether the original model's own energy yields inputs
#   it, and an independent evaluator, assign to their target class, for every class, while noise inputs labelled by
#   the model miss classes; the headline grades how close DSDA's real-data forget and retain accuracy come to
#   Retrain's without any real image in the unlearning.
# - **Efficiency of the sampler** is measured where quality is not saturated: a measure no sampler optimises, each
#   sampler at its own best step size, both timed to the same target. The figure shows each half of the acceleration
#   (Heun, momentum) and both together against plain Langevin. The conditions say whether the best step sizes lie
#   inside the grid and whether Langevin's quality differs from the noise it starts from.
# - **Ablations.** The discrimination loss is meant to repair the dispersion of retain-class features; its claim and
#   the Fig. 2 claim are graded only if that dispersion is measured (the silhouette table). The conflict-averse update
#   is graded on accuracy and on compute; per step it costs about what the plain weighted update costs, so its
#   compute claim turns on whether it needs fewer steps.
# - **Compute against GKT.** The baseline is a reduced GKT and its budget is our choice; where it does not reach
#   DSDA's accuracy within that budget, the ratio is an upper bound, which makes the verdict conservative. ISPF is
#   not implemented, so the comparison covers one of the paper's two source-free baselines. The same budget works
#   the other way in the retain-accuracy comparison: a GKT-style student stopped far short of the official code's
#   budget is an easier row to beat than GKT at the paper's scale.
