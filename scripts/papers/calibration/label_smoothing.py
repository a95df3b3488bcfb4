# %% [markdown]
# # Calibrated Language Models and How to Find Them with Label Smoothing
#
# > Label-smoothed cross-entropy for LLM fine-tuning, a memory-lean chunked linear + smoothed cross-entropy, an MCQ calibration evaluator, and a toy study of calibration after SFT.

# %% [markdown]
# Huang, Lu and Zeng (ICML 2025) observe that supervised instruction tuning (SFT) leaves open language
# models worse calibrated than their pretrained bases: after SFT the models are more confident than they
# are accurate on multiple-choice benchmarks. Training the SFT stage with **label smoothing** (LS) — a
# target that keeps a mass β spread uniformly over the whole vocabulary — keeps calibration much closer to
# the base. The benefit shrinks for models whose vocabulary is large relative to their hidden size (the
# 256k-token Gemma models), which the authors tie to limits on how far such models can push their logits.
# Because a smoothed loss touches every vocabulary entry, the usual memory-saving fused kernels that skip
# small gradients do not apply; the paper ships label-smoothed Triton kernels (a fork of Apple's Cut
# Cross-Entropy) that never store the logits.
#
# Paper: [arXiv 2508.00264](https://arxiv.org/abs/2508.00264) · official code:
# [jhuang265/Calibrating-LLMs-with-Label-Smoothing](https://github.com/jhuang265/Calibrating-LLMs-with-Label-Smoothing)
# (a fork of open-instruct plus label-smoothed Cut Cross-Entropy kernels).
#
# ::: {.callout-note}
# ## What we reproduce / what we cannot
# - **The loss and the kernel idea, exactly:** the smoothed token loss with the paper's temperature and
#   soft-cap variants, and a memory-lean linear + smoothed cross-entropy (`linear_smooth_ce`, a custom
#   `torch.autograd.Function`) that never holds more than one chunk of logits. It matches
#   `F.cross_entropy(E @ C.T, y, label_smoothing=β)` in value and both gradients, computing in the inputs'
#   precision (float64 stays float64; bfloat16 runs bfloat16 matmuls with float32 reductions). Its peak
#   memory and CPU time against the naive PyTorch loss are measured on CPU (bfloat16 at N = 8192 tokens,
#   D = 1024, V = 32k in the cpu run, interleaved rounds; a stored table adds V = 128k and the fused variant). The official
#   fork's opt-in fused kernel has a sign error in its label term (off by 2β/V), shown below; ours has not.
# - **The calibration claims, as a toy:** tiny GPT-2-style models (`trustlib.models.tiny_gpt`, random init)
#   pretrained from scratch on a synthetic world of entities and attributes (30 % of the entities are never
#   described, so some questions are unknowable), then SFT on four-option questions with β ∈ {0, 0.1, 0.2},
#   a temperature-trained and a soft-capped variant; calibration measured on held-out questions with the
#   answer restricted to the option letters. A sweep over padded vocabulary size and hidden size explores
#   the large-vocabulary claim.
# - **Not testable offline:** the paper's models (Llama-3, Mistral, Gemma, Qwen …), SFT data (Tulu-3,
#   Alpaca, OpenHermes) and benchmarks (MMLU, HellaSwag, ARC) need downloads and GPUs; the Triton kernels and
#   the speed comparison with Liger / Cut Cross-Entropy need a CUDA GPU, which this machine does not have.
#   The `full` profile is that experiment at small scale (SFT of `Qwen/Qwen2.5-0.5B` on Alpaca with β ∈ {0, 0.1, 0.2},
#   a temperature-trained and a soft-capped variant, scored on MMLU, HellaSwag and ARC-Easy) for a machine with a GPU and
#   the Hugging Face Hub; offline, its code path is rehearsed on tiny stand-ins (never published).
# - **Scale:** the cpu profile uses one world, two model widths and three SFT seeds; toy effects are
#   small and noisy, and every verdict below is computed from the measured numbers by a rule stated in
#   advance.
# :::

# %%
#| default_exp calibration.label_smoothing

# %%
#| export
from __future__ import annotations
import contextlib, copy, json, math, os, subprocess, sys, time
from dataclasses import dataclass
import numpy as np
from trustlib.config import BaseConfig, param, ConfigError, ResourceUnavailable, derive_seed, seed_everything, torch_threads, require, check_hub_name
from trustlib.results import Result, Estimate, mean_ci, median_ci, Claim, Change, Above, Below, AtLeast, AllOf, Each, claims_table
from trustlib import metrics as M

# %%
#| hide
from fastcore.test import test_eq, test_close, test_fail
from trustlib.results import run_experiment
import torch, torch.nn.functional as F
from trustlib.models import tiny_gpt, with_vocab
import pandas as pd
from IPython.display import display
from pathlib import Path

# %% [markdown]
# ## Parameters
#
# Defaults are the `smoke` profile; `trustlib run label_smoothing --profile cpu` (or papermill with
# `-p profile cpu`) runs the published configuration. `None` means "the profile's value".

# %%
from typing import Optional

# %% tags=["parameters"]
profile: str = "smoke"  # smoke (CI, < 60 s) | cpu (published results, minutes) | full (paper scale)
seed: Optional[int] = None  # base random seed; every random choice derives from it
model: Optional[str] = None  # toy: tiny GPTs on a synthetic world; otherwise the hub id or local folder of an open causal LM to fine-tune (the full profile; GPU and downloads)
n_entities: Optional[int] = None  # entities in the synthetic world
unseen_frac: Optional[float] = None  # fraction of entities never described in pretraining (their questions are unknowable)
d_models: Optional[list[int]] = None  # hidden sizes D (Part B); Part A uses the largest
n_layers: Optional[int] = None  # transformer blocks
n_heads: Optional[int] = None  # attention heads (must divide every D)
vocab_sizes: Optional[list[int]] = None  # padded vocabulary sizes V (Part B); Part A uses the smallest
pretrain_steps: Optional[int] = None  # pretraining steps per hidden size
pretrain_batch_size: Optional[int] = None  # pretraining sequences per step
pretrain_lr: Optional[float] = None  # AdamW peak learning rate of pretraining (warm-up + cosine)
qa_frac: Optional[float] = None  # fraction of pretraining sequences that are questions (the rest are fact statements)
sft_frac: Optional[float] = None  # fraction of (entity, attribute) pairs used as the SFT question set; the rest are held out
sft_epochs: Optional[int] = None  # SFT epochs over the fixed question set
sft_batch_size: Optional[int] = None  # SFT questions per step
sft_lr: Optional[float] = None  # AdamW learning rate of SFT (constant)
n_seeds: Optional[int] = None  # SFT repetitions (data order) per model and variant
betas: Optional[list[float]] = None  # label smoothing values of Part A
sweep_beta: Optional[float] = None  # smoothing β compared with plain SFT (no smoothing) in the vocabulary/hidden-size sweep (Part B)
temperature: Optional[float] = None  # temperature T of the temperature-trained variant, loss T·CE(z/T)
softcap: Optional[float] = None  # cap c of the soft-capped variant, z ← c·tanh(z/c) in the loss
n_bins: Optional[int] = None  # equal-width bins for ECE / RMS-CE
bench: Optional[bool] = None  # run the naive-vs-chunked memory/time benchmark (Part C; its verdict rests on CPU times)
bench_tokens: Optional[int] = None  # benchmark tokens N
bench_dim: Optional[int] = None  # benchmark hidden size D
bench_vocab: Optional[list[int]] = None  # benchmark vocabulary sizes V
bench_dtype: Optional[str] = None  # dtype of the benchmark's hidden states and classifier
bench_impls: Optional[list[str]] = None  # implementations: naive, chunked (recompute in backward), fused (gradients in forward)
bench_repeats: Optional[int] = None  # interleaved timing rounds per vocabulary size (each times every implementation once; 6 or more give an interval)
bench_subprocess: Optional[bool] = None  # measure each case's memory in a fresh python process, and the timing rounds in another
n_threads: Optional[int] = None  # torch CPU threads (1 is fastest for tiny models on a shared CPU)
llm_sft_data: Optional[str] = None  # instruction data of the LLM's SFT: a hub dataset id or local path (name[:config][@split]) with Alpaca's fields or chat messages
llm_sft_examples: Optional[int] = None  # SFT examples drawn (seeded) from llm_sft_data
llm_max_len: Optional[int] = None  # tokens per SFT example (longer ones are cut)
llm_epochs: Optional[int] = None  # SFT epochs of the LLM
llm_batch_size: Optional[int] = None  # sequences per optimizer step of the LLM's SFT (the paper's total batch)
llm_micro_batch: Optional[int] = None  # sequences per forward pass (gradients accumulate up to llm_batch_size; evaluation takes twice as many)
llm_lr: Optional[float] = None  # AdamW learning rate of the LLM's SFT (linear warm-up and decay)
llm_warmup: Optional[float] = None  # warm-up fraction of the LLM's SFT steps
llm_seeds: Optional[int] = None  # SFT repetitions (data order) per variant of the LLM
llm_temperature: Optional[float] = None  # temperature T of the LLM's temperature-trained variant (0: not run)
llm_softcap: Optional[float] = None  # cap c of the LLM's soft-capped variant (0: not run)
llm_eval_data: Optional[list[str]] = None  # multiple-choice sets scored with answer-letter probabilities: hub ids or local paths (name[:config][@split])
llm_eval_examples: Optional[int] = None  # questions per evaluation set (a seeded sample; 0: all)
llm_loss: Optional[str] = None  # loss of the LLM's SFT: chunked (linear_smooth_ce on the hidden states, no logits stored) or logits (LabelSmoothedCrossEntropyLoss on the logits)
device: Optional[str] = None  # device of the LLM (auto: cuda when available)
precision: Optional[str] = None  # LLM precision: auto (bf16-mixed on CUDA, fp32 elsewhere), fp32, bf16-mixed (float32 weights, bfloat16 autocast) or bf16 (bfloat16 weights)


# %% [markdown] tags=["injected-parameters"]
# **This page shows a run with** `profile = "cpu"` (run `cpu-bf21a9e8fb`, commit `5374f15`, 258 s, 2026-12-05). Running the notebook yourself uses the parameters cell above as written (the fast `smoke` profile unless you change it); `trustlib run label_smoothing --profile cpu` repeats the run shown here.

# %%
#| export
@dataclass
class Config(BaseConfig):
    "Configuration of the label-smoothing reproduction."
    model: str = param("toy", "toy: tiny GPTs on a synthetic world; otherwise the hub id or local folder of an open causal LM to fine-tune (the full profile; GPU and downloads)")
    n_entities: int = param(40, "entities in the synthetic world", ge=8, max=15_000)
    unseen_frac: float = param(0.3, "fraction of entities never described in pretraining (their questions are unknowable)", ge=0, lt=1)
    d_models: tuple[int, ...] = param((32,), "hidden sizes D (Part B); Part A uses the largest", ge=8, max=16_384)
    n_layers: int = param(1, "transformer blocks", ge=1, max=200)
    n_heads: int = param(4, "attention heads (must divide every D)", ge=1, max=256)
    vocab_sizes: tuple[int, ...] = param((256, 1024), "padded vocabulary sizes V (Part B); Part A uses the smallest", ge=64, max=2**22)
    pretrain_steps: int = param(150, "pretraining steps per hidden size", ge=1, max=100_000)
    pretrain_batch_size: int = param(64, "pretraining sequences per step", ge=1, max=8192)
    pretrain_lr: float = param(2e-3, "AdamW peak learning rate of pretraining (warm-up + cosine)", gt=0, le=1)
    qa_frac: float = param(0.5, "fraction of pretraining sequences that are questions (the rest are fact statements)", ge=0, le=1)
    sft_frac: float = param(0.4, "fraction of (entity, attribute) pairs used as the SFT question set; the rest are held out", gt=0, lt=1)
    sft_epochs: int = param(5, "SFT epochs over the fixed question set", ge=1, max=1500)
    sft_batch_size: int = param(32, "SFT questions per step", ge=1, max=4096)
    sft_lr: float = param(1e-3, "AdamW learning rate of SFT (constant)", gt=0, le=1)
    n_seeds: int = param(1, "SFT repetitions (data order) per model and variant", ge=1, max=300)
    betas: tuple[float, ...] = param((0.0, 0.1, 0.2), "label smoothing values of Part A", ge=0, le=1)
    sweep_beta: float = param(0.1, "smoothing β compared with plain SFT (no smoothing) in the vocabulary/hidden-size sweep (Part B)", gt=0, le=1)
    temperature: float = param(0.5, "temperature T of the temperature-trained variant, loss T·CE(z/T)", gt=0, max=100)
    softcap: float = param(5.0, "cap c of the soft-capped variant, z ← c·tanh(z/c) in the loss", gt=0, max=1000)
    n_bins: int = param(15, "equal-width bins for ECE / RMS-CE", ge=2, max=1500)
    bench: bool = param(False, "run the naive-vs-chunked memory/time benchmark (Part C; its verdict rests on CPU times)")
    bench_tokens: int = param(512, "benchmark tokens N", ge=1, max=2**20)
    bench_dim: int = param(64, "benchmark hidden size D", ge=1, max=32_768)
    bench_vocab: tuple[int, ...] = param((4096,), "benchmark vocabulary sizes V", ge=2, max=2**24)
    bench_dtype: str = param("float32", "dtype of the benchmark's hidden states and classifier", choices=("float32", "bfloat16", "float64", "float16"))
    bench_impls: tuple[str, ...] = param(("naive", "chunked", "fused"), "implementations: naive, chunked (recompute in backward), fused (gradients in forward)")
    bench_repeats: int = param(6, "interleaved timing rounds per vocabulary size (each times every implementation once; 6 or more give an interval)", ge=1, max=100)
    bench_subprocess: bool = param(False, "measure each case's memory in a fresh python process, and the timing rounds in another")
    n_threads: int = param(1, "torch CPU threads (1 is fastest for tiny models on a shared CPU)", ge=1, max=256)
    llm_sft_data: str = param("tatsu-lab/alpaca", "instruction data of the LLM's SFT: a hub dataset id or local path (name[:config][@split]) with Alpaca's fields or chat messages")
    llm_sft_examples: int = param(52_002, "SFT examples drawn (seeded) from llm_sft_data", ge=1, max=10_000_000)
    llm_max_len: int = param(512, "tokens per SFT example (longer ones are cut)", ge=8, max=32_768)
    llm_epochs: int = param(2, "SFT epochs of the LLM", ge=1, max=100)
    llm_batch_size: int = param(128, "sequences per optimizer step of the LLM's SFT (the paper's total batch)", ge=1, max=65_536)
    llm_micro_batch: int = param(8, "sequences per forward pass (gradients accumulate up to llm_batch_size; evaluation takes twice as many)", ge=1, max=4096)
    llm_lr: float = param(2e-5, "AdamW learning rate of the LLM's SFT (linear warm-up and decay)", gt=0, le=1)
    llm_warmup: float = param(0.03, "warm-up fraction of the LLM's SFT steps", ge=0, lt=1)
    llm_seeds: int = param(1, "SFT repetitions (data order) per variant of the LLM", ge=1, max=100)
    llm_temperature: float = param(0.5, "temperature T of the LLM's temperature-trained variant (0: not run)", ge=0, max=100)
    llm_softcap: float = param(48.0, "cap c of the LLM's soft-capped variant (0: not run)", ge=0, max=10_000)
    llm_eval_data: tuple[str, ...] = param(("cais/mmlu:all@test", "Rowan/hellaswag@validation", "allenai/ai2_arc:ARC-Easy@test"), "multiple-choice sets scored with answer-letter probabilities: hub ids or local paths (name[:config][@split])")
    llm_eval_examples: int = param(0, "questions per evaluation set (a seeded sample; 0: all)", ge=0, max=10_000_000)
    llm_loss: str = param("chunked", "loss of the LLM's SFT: chunked (linear_smooth_ce on the hidden states, no logits stored) or logits (LabelSmoothedCrossEntropyLoss on the logits)", choices=("chunked", "logits"))
    device: str = param("auto", "device of the LLM (auto: cuda when available)", choices=("auto", "cpu", "cuda", "mps"))
    precision: str = param("auto", "LLM precision: auto (bf16-mixed on CUDA, fp32 elsewhere), fp32, bf16-mixed (float32 weights, bfloat16 autocast) or bf16 (bfloat16 weights)", choices=("auto", "fp32", "bf16-mixed", "bf16"))
    PROFILE_DEFAULTS = {
        "cpu": dict(n_entities=150, d_models=(32, 128), n_layers=2, vocab_sizes=(512, 4096, 32768), pretrain_steps=800,
                    sft_epochs=15, n_seeds=3, bench=True, bench_tokens=8192, bench_dim=1024, bench_vocab=(32768,), bench_dtype="bfloat16",
                    bench_impls=("naive", "chunked"), bench_subprocess=True),
        "full": dict(model="Qwen/Qwen2.5-0.5B", n_entities=150, d_models=(32, 128), n_layers=2, vocab_sizes=(512, 4096, 32768), pretrain_steps=800,
                     sft_epochs=15, n_seeds=3, bench=True, bench_tokens=8192, bench_dim=1024, bench_vocab=(32768, 131072), bench_dtype="bfloat16", bench_subprocess=True),
    }
    def validate(self):
        if not self.model.strip(): raise ConfigError("parameter 'model': give 'toy' or the hub id / local folder of a causal LM")
        if self.model != "toy": check_hub_name("model", self.model)
        from trustlib.data import data_dir
        for name, spec in [("llm_sft_data", self.llm_sft_data), *(("llm_eval_data", e) for e in self.llm_eval_data)]:
            check_hub_name(name, parse_data_spec(spec)[0], "dataset", roots=(data_dir() / "hf",))
        if not self.llm_eval_data: raise ConfigError("parameter 'llm_eval_data': give at least one multiple-choice set")
        bad = set(self.bench_impls) - {"naive", "chunked", "fused"}
        if bad or not self.bench_impls: raise ConfigError(f"parameter 'bench_impls': {sorted(bad) or '[]'} not allowed; choose a non-empty subset of ['naive', 'chunked', 'fused']")
        for d in self.d_models:
            if d % self.n_heads: raise ConfigError(f"parameter 'd_models': {d} is not divisible by n_heads={self.n_heads}")
        if not self.d_models or not self.vocab_sizes: raise ConfigError("parameters 'd_models' and 'vocab_sizes' must not be empty")
        if 0.0 not in self.betas: raise ConfigError("parameter 'betas' must contain 0.0 (plain SFT, the reference)")
        naive = 3 * self.bench_tokens * max(self.bench_vocab) * {"float64": 8, "float32": 4}.get(self.bench_dtype, 2)   # logits, log-softmax, gradient
        if self.bench and "naive" in self.bench_impls and naive > 8 * 2**30 and not getattr(self, '_allow_large', False):
            raise ConfigError(f"parameters 'bench_tokens' x 'bench_vocab': the naive loss would need about {naive / 2**30:.0f} GiB; "
                              "pass allow_large=True (CLI: --allow-large) to run it")
        need = world_vocab_size(self.n_entities)
        if min(self.vocab_sizes) < need: raise ConfigError(f"parameter 'vocab_sizes': {min(self.vocab_sizes)} is smaller than the world's {need} real tokens")


# %% [markdown]
# ## 1. The label-smoothed token loss
#
# For a hidden state $e \in \mathbb R^D$, output embedding $C \in \mathbb R^{V\times D}$, logits $z = Ce$ and
# smoothing $\beta\in[0,1]$, the target is $q = (1-\beta)\,\mathrm{onehot}(y) + \tfrac{\beta}{V}\mathbf 1$ and
#
# $$\ell = -\sum_v q_v \log\mathrm{softmax}(z)_v = \mathrm{LSE}(z) - (1-\beta)\,z_y - \frac{\beta}{V}\sum_v z_v,
# \qquad \frac{\partial \ell}{\partial z} = \mathrm{softmax}(z) - q .$$
#
# This is exactly PyTorch's `F.cross_entropy(..., label_smoothing=β)`. The paper's sweeps also train with
# a temperature, loss $T\cdot\mathrm{CE}(z/T;\beta)$, and with logit soft-capping $z \leftarrow c\tanh(z/c)$
# (in the official code: divide by T, then cap, then smoothed CE, then multiply by T). Rows whose target
# equals `ignore_index` contribute nothing; the mean is over the other rows, and **a batch in which every
# row is ignored gives 0, not NaN** (PyTorch returns NaN there).

# %%
#| export
REDUCTIONS = ("mean", "sum", "none")

def check_beta(beta) -> float:
    "`beta` as a float in [0, 1]; anything else raises `ValueError`."
    if isinstance(beta, bool) or not isinstance(beta, (int, float, np.integer, np.floating)) or not math.isfinite(float(beta)) or not 0 <= float(beta) <= 1:
        raise ValueError(f"label smoothing beta must be a number in [0, 1], got {beta!r}")
    return float(beta)

def _check_reduction(reduction):
    if reduction not in REDUCTIONS: raise ValueError(f"reduction must be one of {list(REDUCTIONS)}, got {reduction!r}")

def soft_cap(z, cap:float):
    "Logit soft-capping `cap * tanh(z / cap)`: smooth, odd, |result| < cap, ≈ z for |z| ≪ cap."
    import torch
    if not cap > 0: raise ValueError(f"softcap must be > 0, got {cap!r}")
    return cap * torch.tanh(z / cap)

def smoothed_cross_entropy(logits, # [..., V] logits
                           y, # [...] integer targets (or ignore_index)
                           beta:float=0.0, # label smoothing β ∈ [0, 1]
                           *, temperature:float|None=None, # train with T·CE(z/T; β)
                           softcap:float|None=None, # cap logits with c·tanh(z/c) before the loss
                           ignore_index:int=-100, reduction:str="mean"):
    "Label-smoothed cross-entropy on materialised logits, computed in float32, with the paper's temperature and soft-cap options."
    import torch
    beta = check_beta(beta); _check_reduction(reduction)
    if temperature is not None and not temperature > 0: raise ValueError(f"temperature must be > 0, got {temperature!r}")
    z = logits.float().reshape(-1, logits.shape[-1]); yy = y.reshape(-1).long()
    if temperature is not None: z = z / temperature
    if softcap is not None: z = soft_cap(z, softcap)
    V = z.shape[-1]
    valid = yy != ignore_index
    if bool(((yy < 0) | (yy >= V))[valid].any()): raise ValueError(f"targets must lie in 0..{V-1} or equal ignore_index={ignore_index}")
    ys = torch.where(valid, yy, torch.zeros_like(yy))
    loss = torch.logsumexp(z, -1) - (1 - beta) * z.gather(1, ys[:, None])[:, 0] - (beta / V) * z.sum(-1)
    loss = torch.where(valid, loss, torch.zeros_like(loss))
    if temperature is not None: loss = loss * temperature
    if reduction == "none": return loss.reshape(y.shape)
    return loss.sum() if reduction == "sum" else loss.sum() / valid.sum().clamp(min=1)

def ls_gradient(logits, y, beta:float=0.0, ignore_index:int=-100):
    "Analytic gradient of the per-token smoothed loss w.r.t. the logits: softmax(z) − q (zero rows for ignored tokens)."
    import torch
    beta = check_beta(beta)
    V = logits.shape[-1]; valid = y != ignore_index
    q = torch.full_like(logits, beta / V, dtype=torch.float32)
    q[valid] = q[valid].scatter_add(1, y[valid][:, None], torch.full((int(valid.sum()), 1), 1 - beta))
    return torch.where(valid[:, None], torch.softmax(logits.float(), -1) - q, 0.0)


# %% [markdown]
# Checks against PyTorch, with ignored rows, for the three reductions and β ∈ {0, 0.1, 0.5}; β = 0 is plain
# cross-entropy; the analytic gradient equals autograd's; soft-capping is bounded and near-identity for small
# logits; T = 1 is the plain loss.

# %%
g = torch.Generator().manual_seed(0)
Z = torch.randn(23, 17, generator=g) * 3; Y = torch.randint(0, 17, (23,), generator=g); Y[::4] = -100
for beta in (0.0, 0.1, 0.5):
    for red in REDUCTIONS:
        test_close(smoothed_cross_entropy(Z, Y, beta, reduction=red), F.cross_entropy(Z, Y, label_smoothing=beta, reduction=red), eps=1e-5)
test_close(smoothed_cross_entropy(Z, Y, 0.0), F.cross_entropy(Z, Y), eps=1e-6)
Zr = Z.clone().requires_grad_()
smoothed_cross_entropy(Zr, Y, 0.1, reduction="sum").backward()
test_close(Zr.grad, ls_gradient(Z, Y, 0.1), eps=1e-6)
test_close(ls_gradient(Z, Y, 0.1)[Y != -100].sum(1), torch.zeros(int((Y != -100).sum())), eps=1e-6)   # rows of p − q sum to 0
test_close(smoothed_cross_entropy(Z, Y, 0.1, temperature=1.0), smoothed_cross_entropy(Z, Y, 0.1), eps=1e-6)
test_close(smoothed_cross_entropy(Z, Y, 0.1, temperature=0.5), 0.5 * F.cross_entropy(Z / 0.5, Y, label_smoothing=0.1), eps=1e-5)
zz = torch.linspace(-100, 100, 201)
assert soft_cap(zz, 5.0).abs().max() <= 5.0 and (soft_cap(torch.linspace(-8, 8, 9), 5.0).abs() < 5.0).all()
test_close(soft_cap(torch.tensor([0.01, -0.02]), 50.0), torch.tensor([0.01, -0.02]), eps=1e-7)
test_eq(float(smoothed_cross_entropy(Z[:3], torch.full((3,), -100), 0.1)), 0.0)   # all ignored: 0, not NaN
for bad in (-0.1, 1.5, float('nan'), True, "0.1"): test_fail(lambda: check_beta(bad), contains="beta must be")
test_fail(lambda: smoothed_cross_entropy(Z, Y, 0.1, reduction="avg"), contains="reduction must be")

# %% [markdown]
# **As a drop-in `nn.Module`.** `LabelSmoothedCrossEntropyLoss` is the same fused loss with
# `nn.CrossEntropyLoss`'s interface: `weight=`, `ignore_index=`, `reduction=` and `label_smoothing=`, the
# classes on dim 1 of an `(N, C)`, `(N, C, d1, ...)` or unbatched `(C,)` input with integer targets of shape
# `(N,)`, `(N, d1, ...)` or `()`. It computes $\mathrm{LSE}(z)$ once per row, in float64 for float64 input
# and in float32 otherwise, never materialises $\log\mathrm{softmax}$ or the smoothed target, keeps only
# the input and one LSE per row for the backward pass, and returns the loss and the gradient in the
# input's dtype (float64, float32, bfloat16, float16). With class weights $w$ it follows PyTorch's
# semantics exactly: row $i$ costs $(1-\beta)\,w_{y_i}(\mathrm{LSE} - z_{y_i}) + \tfrac{\beta}{C}\sum_c w_c(\mathrm{LSE} - z_c)$,
# and `'mean'` divides the sum by $\sum_i w_{y_i}$ over the rows that are not ignored (not by the number
# of rows, and not by a smoothed weight). Two deliberate differences from PyTorch: a `'mean'` over a batch
# whose every row is ignored is 0 instead of NaN (as `smoothed_cross_entropy`), and targets must be class
# indices (PyTorch's class-probability targets are refused); the weight is a constant (no gradient).

# %%
#| export
import torch

class _LSCEFunction(torch.autograd.Function):
    "Fused label-smoothed CE over rows `z [R, C]`: forward keeps one LSE per row; backward forms (a + bW)·softmax(z) − a·onehot(y) − b·w."
    @staticmethod
    def forward(ctx, z, y, w, beta:float, ignore_index:int, reduction:str):
        adt = torch.float64 if z.dtype == torch.float64 else torch.float32; C = z.shape[1]   # acc_dtype (section 2)
        valid = y != ignore_index; ys = torch.where(valid, y, torch.zeros_like(y))
        za = z.to(adt); lse = torch.logsumexp(za, 1)
        zy = za.gather(1, ys[:, None])[:, 0]
        if w is None:
            wy = valid.to(adt); W = float(C); wz = za.sum(1)
        else:
            wa = w.to(adt); wy = torch.where(valid, wa[ys], 0.0); W = wa.sum(); wz = za @ wa
        a, b = (1 - beta) * wy, (beta / C) * valid.to(adt)
        loss = a * (lse - zy) + b * (W * lse - wz)
        denom = wy.sum().clamp(min=torch.finfo(adt).tiny) if reduction == "mean" else None
        ctx.save_for_backward(z, ys, lse, a, b, w if w is not None else torch.empty(0))
        ctx.beta, ctx.reduction, ctx.W, ctx.denom, ctx.weighted = beta, reduction, W, denom, w is not None
        ctx.mark_non_differentiable(y)
        out = loss if reduction == "none" else loss.sum() if reduction == "sum" else torch.where(wy.sum() > 0, loss.sum() / denom, loss.sum() * 0)
        return out.to(z.dtype)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):
        z, ys, lse, a, b, w = ctx.saved_tensors
        adt = lse.dtype; g = g.to(adt)
        scale = g if ctx.reduction == "none" else (g / ctx.denom if ctx.reduction == "mean" else g).expand(len(a))
        P = torch.exp(z.to(adt) - lse[:, None])
        dz = P * (a + b * ctx.W)[:, None]
        dz.scatter_add_(1, ys[:, None], -a[:, None])
        dz -= b[:, None] * (w.to(adt)[None, :] if ctx.weighted else 1.0)
        dz *= scale[:, None]
        return dz.to(z.dtype), None, None, None, None, None

class LabelSmoothedCrossEntropyLoss(torch.nn.Module):
    """`nn.CrossEntropyLoss(weight, ignore_index, reduction, label_smoothing)` as the fused label-smoothed loss: classes on dim 1,
    loss and gradient in the input's dtype (float64 computed in float64, others accumulated in float32), PyTorch's weighted
    smoothing semantics; a 'mean' over only ignored rows is 0 (PyTorch: NaN) and only class-index targets are accepted."""
    def __init__(self, weight=None, # class weights `[C]` (a constant; moved with the module as a buffer)
                 ignore_index:int=-100, # targets equal to it contribute nothing (and are not counted by 'mean')
                 reduction:str="mean", # 'mean' (divided by Σ w_{y_i} over kept rows), 'sum' or 'none'
                 label_smoothing:float=0.0, # β ∈ [0, 1]: the target is (1 − β)·onehot(y) + β/C
                 ):
        super().__init__()
        _check_reduction(reduction); self.label_smoothing = check_beta(label_smoothing)
        if isinstance(ignore_index, bool) or not isinstance(ignore_index, (int, np.integer)): raise ValueError(f"ignore_index must be an int, got {ignore_index!r}")
        if weight is not None:
            weight = torch.as_tensor(weight)
            if weight.ndim != 1 or not weight.is_floating_point(): raise ValueError(f"weight must be a 1-d floating tensor of class weights, got {tuple(weight.shape)} {weight.dtype}")
        self.register_buffer("weight", weight); self.ignore_index, self.reduction = int(ignore_index), reduction

    def extra_repr(self) -> str: return f"ignore_index={self.ignore_index}, reduction={self.reduction!r}, label_smoothing={self.label_smoothing}"

    def forward(self, input, # logits: (C,), (N, C) or (N, C, d1, ...); float64, float32, bfloat16 or float16
                target, # class indices: (), (N,) or (N, d1, ...)
                ):
        if not input.is_floating_point(): raise TypeError(f"input must be floating-point logits, got {input.dtype}")
        if target.is_floating_point() or target.dtype == torch.bool: raise TypeError(f"target must hold class indices (an integer tensor), got {target.dtype}; class-probability targets are not supported")
        unbatched = input.ndim == 1
        x = input[None] if unbatched else input
        t = target.reshape(1) if unbatched else target
        if x.ndim < 2 or t.shape != (x.shape[0], *x.shape[2:]):
            raise ValueError(f"expected target of shape {(x.shape[0], *x.shape[2:]) if x.ndim >= 2 else '()'} for input of shape {tuple(input.shape)} (classes on dim 1), got {tuple(target.shape)}")
        C = x.shape[1]
        if self.weight is not None and self.weight.shape[0] != C: raise ValueError(f"weight has {self.weight.shape[0]} entries, the input has {C} classes")
        z = x.movedim(1, -1).reshape(-1, C); y = t.reshape(-1).long()
        if y.device.type == "cpu" and bool(((y < 0) | (y >= C))[y != self.ignore_index].any()):
            raise ValueError(f"targets must lie in 0..{C - 1} or equal ignore_index={self.ignore_index}")
        out = _LSCEFunction.apply(z, y, self.weight, self.label_smoothing, self.ignore_index, self.reduction)
        if self.reduction != "none": return out
        return out.reshape(()) if unbatched else out.reshape(t.shape)


# %% [markdown]
# Checks against `nn.CrossEntropyLoss(label_smoothing=β)` on the same inputs: values and gradients for the
# three reductions, with and without class weights and ignored rows, on `(N, C)` and `(N, C, d1, d2)` inputs,
# and the dtype of loss and gradient for every input dtype.

# %%
def _pair_ls(shape, beta, red, weight, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    C = shape[1] if len(shape) > 1 else shape[0]
    x = (torch.randn(*shape, generator=g, dtype=torch.float64) * 3)
    t = torch.randint(0, C, (shape[0], *shape[2:]) if len(shape) > 1 else (), generator=g)
    if t.ndim: t.view(-1)[::5] = -100
    out = []
    for m in (LabelSmoothedCrossEntropyLoss(weight, reduction=red, label_smoothing=beta), torch.nn.CrossEntropyLoss(weight, reduction=red, label_smoothing=beta)):
        xi = x.detach().to(dtype).clone().requires_grad_(); l = m(xi, t); (l * torch.linspace(0.5, 1.5, l.numel(), dtype=l.dtype).reshape(l.shape)).sum().backward()
        out.append((l.detach(), xi.grad))
    return out

_wts = torch.rand(7, generator=torch.Generator().manual_seed(1), dtype=torch.float64) + 0.2
_maxdiff = 0.0
for shape in ((40, 7), (6, 7, 3, 4), (7,)):
    for beta in (0.0, 0.1, 0.6):
        for red in REDUCTIONS:
            for w in (None, _wts):
                (l1, g1), (l2, g2) = _pair_ls(shape, beta, red, w)
                test_eq((l1.dtype, l1.shape, g1.dtype), (torch.float64, l2.shape, torch.float64))
                test_close(l1, l2, eps=1e-10); test_close(g1, g2, eps=1e-10)
                _maxdiff = max(_maxdiff, float((l1 - l2).abs().max()), float((g1 - g2).abs().max()))
_x, _t = torch.randn(40, 7, dtype=torch.float64) * 3, torch.randint(0, 7, (40,))
for dtype in (torch.float32, torch.bfloat16, torch.float16):
    _xd = _x.to(dtype).requires_grad_(); _l = LabelSmoothedCrossEntropyLoss(_wts.to(dtype), label_smoothing=0.1)(_xd, _t); _l.backward()
    test_eq((_l.dtype, _xd.grad.dtype), (dtype, dtype))                         # float64/bf16/fp16 in, the same dtype out
    _ref = torch.nn.CrossEntropyLoss(_wts, label_smoothing=0.1)(_x.to(dtype).double(), _t)   # float64 on the same rounded inputs
    test_close(float(_l.detach()), float(_ref), eps={torch.float32: 1e-5, torch.bfloat16: 2e-2, torch.float16: 2e-3}[dtype] * float(_ref))
_all_ignored = LabelSmoothedCrossEntropyLoss(label_smoothing=0.1)(torch.randn(3, 5), torch.full((3,), -100))
test_eq(float(_all_ignored), 0.0)                                               # PyTorch: NaN
test_fail(lambda: LabelSmoothedCrossEntropyLoss()(torch.randn(4, 5), torch.rand(4, 5)), contains="class indices")
test_fail(lambda: LabelSmoothedCrossEntropyLoss()(torch.randn(4, 5, 2), torch.zeros(4, 5, dtype=torch.long)), contains="classes on dim 1")
test_fail(lambda: LabelSmoothedCrossEntropyLoss()(torch.randn(4, 5), torch.tensor([0, 1, 5, 2])), contains="targets must lie in 0..4")
test_fail(lambda: LabelSmoothedCrossEntropyLoss(reduction="avg"), contains="reduction must be")
test_fail(lambda: LabelSmoothedCrossEntropyLoss(label_smoothing=1.5), contains="beta must be")
test_fail(lambda: LabelSmoothedCrossEntropyLoss(torch.ones(3))(torch.randn(4, 5), torch.zeros(4, dtype=torch.long)), contains="weight has 3 entries")
test_close(LabelSmoothedCrossEntropyLoss(label_smoothing=0.1)(Z, Y), smoothed_cross_entropy(Z, Y, 0.1), eps=1e-6)   # the same loss as the function
_maxdiff


# %% [markdown]
# **The LS optimum and its logit gap.** For a free logit vector, the smoothed loss is minimised by the
# target itself: probability $p_y^* = 1-\beta+\beta/V$ on the label and $\beta/V$ elsewhere, i.e. a
# label-vs-rest logit gap of $\log\big(1 + (1-\beta)V/\beta\big)$. The gap *grows* with V (≈ 8.4 nats at
# V = 512, 12.6 at 32k, 13.96 at 128k for β = 0.1), so the cap that smoothing puts on confidence weakens
# as the vocabulary grows — one plausible reading of the paper's large-vocabulary argument (our
# derivation, not the paper's theorem, which we have not seen).

# %%
#| export
def ls_optimal_target_prob(vocab_size:int, beta:float) -> float:
    "Probability of the label at the minimum of the smoothed loss over free logits: 1 − β + β/V."
    return 1 - check_beta(beta) + beta / vocab_size

def ls_optimal_gap(vocab_size:int, beta:float) -> float:
    "Logit gap label − other token at that minimum: log(1 + (1 − β)·V/β) (inf for β = 0)."
    beta = check_beta(beta)
    return math.inf if beta == 0 else math.log1p((1 - beta) * vocab_size / beta)


# %%
z = torch.zeros(50, requires_grad=True); opt = torch.optim.LBFGS([z], max_iter=200, line_search_fn="strong_wolfe")
def _closure():
    opt.zero_grad(); l = smoothed_cross_entropy(z[None], torch.tensor([3]), 0.1); l.backward(); return l
opt.step(_closure)
test_close(torch.softmax(z, 0)[3].item(), ls_optimal_target_prob(50, 0.1), eps=1e-4)
test_close((z[3] - z[0]).item(), ls_optimal_gap(50, 0.1), eps=1e-3)
test_close(ls_optimal_gap(128_000, 0.1), 13.96, eps=0.01)
{V: round(ls_optimal_gap(V, 0.1), 2) for V in (512, 4096, 32768, 131072, 256000)}


# %% [markdown]
# ## 2. A memory-lean linear + smoothed cross-entropy
#
# With hidden states $E \in \mathbb R^{N\times D}$ the naive loss first builds the $N\times V$ logits
# $EC^\top$ (1 GiB in fp32 at N = 8192, V = 32k), then log-softmax outputs and a gradient of the same size.
# The smoothing term does not need the logits at all: $\sum_v z_{iv} = e_i\cdot\sum_v C_v$, one D-vector.
# So the loss needs per token only the log-sum-exp and the label's logit, and the gradient can be rebuilt
# chunk by chunk:
#
# - **forward**, per chunk of tokens: logits $z = E_c C^\top$ (the only V-sized buffer), the label logit,
#   the LSE (max-shifted, in place), and $\ell = \mathrm{LSE} - (1-\beta) z_y - \tfrac{\beta}{V} E_c\!\cdot\!\textstyle\sum_v C_v$.
#   It saves only $E$, $C$, $y$ and the LSE ($N$ floats);
# - **backward**, per block of the vocabulary (half as many logits as a token chunk): recompute $z = EC_b^\top$ for
#   all tokens, form $g = w\odot(\mathrm{softmax}(z) - q)$ on those columns from the saved LSE, where $w$ is the
#   upstream gradient (times 1/n for the mean, 0 on ignored rows), then $\partial C_b = g^\top E$ in one matmul
#   over all tokens and $\partial E \mathrel{+}= g\,C_b$. Looping over the vocabulary in the
#   backward means only the $N\times D$ sum for $\partial E$ is carried across blocks, not the larger
#   $V\times D$ one for $\partial C$.
#
# `fused=True` instead computes both gradients during the forward (as the official fork's fused kernel
# does) and keeps only $\partial E$ and $\partial C$ — inputs-sized — valid for the scalar reductions;
# `loss.backward()` then receives the saved gradients without a copy. In float32 and float64 it needs no
# recomputation: the gradients come out of the token chunks' logits (three matmuls, as the naive loss, where
# the chunked loss needs four) and $\partial C$ is summed over the chunks in its own dtype. In half precision that
# sum would have to be float32 (a $V\times D$ buffer, twice the size of $C$: a quarter of the naive loss's memory
# at $D = 1024$, $V = 32\text{k}$), so there the forward computes the LSE over token chunks and then the
# gradients by blocks of the vocabulary, as the chunked backward does (four matmuls, no float32 $V\times D$ sum).
# `chunk_size=None` picks chunks of about 32 MiB of logits (the one-pass fused loss: a quarter of $C$'s bytes,
# at least 16 MiB, so that a large vocabulary needs few passes over its $V\times D$ sum). As in the official fork, no gradient filtering is done: with smoothing, every gradient
# entry is at least about β/V in magnitude.
#
# **Precision.** The loss computes in the inputs' precision. float64 inputs stay float64 throughout (loss,
# LSE, gradients); float32 stays float32. For bfloat16 / float16 the three matmuls run in that type
# (PyTorch's CPU kernels accumulate them in float32 and round the output once) and the logits chunk is
# kept in it, while the softmax and $g$ (max, exp, sum and the subtraction of $q$, over cache-sized float32
# blocks of rows), the loss, the label logit and every sum carried across chunks are float32; the loss comes
# back in float32 (float64 for float64 inputs) and the gradients in the inputs' dtypes.

# %%
#| export
def auto_chunk_size(vocab_size:int, budget_bytes:int=32 * 2**20, itemsize:int=4) -> int:
    "Tokens per chunk so that one chunk of logits (`itemsize` bytes per entry) takes about `budget_bytes`."
    return max(1, int(budget_bytes) // (int(itemsize) * int(vocab_size)))

def acc_dtype(dtype):
    "The accumulation dtype of a compute dtype: float64 stays float64; float32, bfloat16 and float16 accumulate in float32."
    import torch
    return torch.float64 if dtype == torch.float64 else torch.float32

_ROWS, _ACC_ROWS = 64, 1024   # rows per cache-sized block: float32 exp of half-precision logits; float32 accumulation

def _rows(width:int) -> int:
    "Rows per float32 block of `width` columns: at most `_ROWS`, and at most about 2 MiB."
    return max(1, min(_ROWS, (2 << 20) // (4 * max(1, int(width)))))

def _row_lse_(z, adt, shift:float|None=None):
    "Row max m and Σ_v exp(z − m) in the accumulation dtype `adt` (blockwise for half types); if `shift` is given, z ← softmax(z) − shift in place."
    import torch
    if z.dtype == adt:
        m = z.amax(1, keepdim=True)
        u = torch.exp(z - m) if shift is None else z.sub_(m).exp_()
        tot = u.sum(1)
        if shift is not None: u.div_(tot[:, None]).sub_(shift)
        return m[:, 0], tot
    n = len(z)
    m = torch.empty(n, dtype=adt, device=z.device); tot = torch.empty(n, dtype=adt, device=z.device)
    R = _rows(z.shape[1])
    f = torch.empty(min(R, n), z.shape[1], dtype=adt, device=z.device)
    for r in range(0, n, R):
        zr = z[r:r + R]; fr = f[:len(zr)].copy_(zr)
        mr = fr.amax(1, keepdim=True); fr.sub_(mr).exp_(); tr = fr.sum(1)
        m[r:r + R], tot[r:r + R] = mr[:, 0], tr
        if shift is not None: zr.copy_(fr.div_(tr[:, None]).sub_(shift))
    return m, tot

def _probs_minus_(z, lse, w, adt, shift:float):
    "In place z ← w·(exp(z − lse) − shift) per row (a block of columns of the softmax minus the uniform target share, times the row weight), in `adt`."
    import torch
    if z.dtype == adt: return z.sub_(lse[:, None]).exp_().sub_(shift).mul_(w[:, None])
    R = _rows(z.shape[1])
    f = torch.empty(min(R, len(z)), z.shape[1], dtype=adt, device=z.device)
    for r in range(0, len(z), R):
        zr = z[r:r + R]; zr.copy_(f[:len(zr)].copy_(zr).sub_(lse[r:r + R, None]).exp_().sub_(shift).mul_(w[r:r + R, None]))
    return z

def _take_label_share_(P, rows, cols, share):
    "In place P[rows, cols] −= share (the label's part of the target; a number or one value per row), computed in float32 or better."
    P.index_put_((rows, cols), (P[rows, cols].to(acc_dtype(P.dtype)) - share).to(P.dtype))

def _col_sum(Cw, adt):
    "Σ_v C_v (a D-vector): one matrix-vector product in the compute dtype, returned in the accumulation dtype."
    import torch
    return torch.mv(Cw.T, torch.ones(Cw.shape[0], dtype=Cw.dtype, device=Cw.device)).to(adt)

def _grads_by_vocab_blocks(Ew, Cw, y, valid, lse, w, beta:float, cs:int, need_E:bool, need_C:bool, edt, cdt):
    """dE, dC of Σ_i w_i·loss_i from the saved LSE, by blocks of the vocabulary (as many logits per block as half a token chunk has):
    every dC block comes out of one matmul over all N tokens (accumulated inside it), and only the N×D sum for dE is carried across blocks."""
    import torch
    N, D = Ew.shape; V = Cw.shape[0]; wdt, adt = Ew.dtype, lse.dtype
    cv = max(1, min(V, cs * V // (2 * N)))
    dC = torch.empty(V, D, dtype=wdt, device=Ew.device) if need_C else None
    dE_acc = torch.zeros(N, D, dtype=adt, device=Ew.device) if need_E else None
    part = torch.empty(min(N, _ACC_ROWS), D, dtype=wdt, device=Ew.device) if need_E and wdt != adt else None
    zflat = torch.empty(N * cv, dtype=wdt, device=Ew.device)
    for v0 in range(0, V, cv):
        Cb = Cw[v0:v0 + cv]; nb = len(Cb)
        z = torch.mm(Ew, Cb.T, out=zflat[:N * nb].view(N, nb))
        g = _probs_minus_(z, lse, w, adt, beta / V)             # w·(softmax − β/V) on this block's columns
        rows = torch.nonzero(valid & (y >= v0) & (y < v0 + nb))[:, 0]
        _take_label_share_(g, rows, y[rows] - v0, (1.0 - beta) * w[rows])
        if need_C: torch.mm(g.T, Ew, out=dC[v0:v0 + nb])
        if need_E:
            if part is None: dE_acc.addmm_(g, Cb)
            else:
                for r in range(0, N, _ACC_ROWS): dE_acc[r:r + _ACC_ROWS].add_(torch.mm(g[r:r + _ACC_ROWS], Cb, out=part[:min(_ACC_ROWS, N - r)]))
    del zflat, part
    return (dE_acc.to(edt) if need_E else None), (None if dC is None else dC.to(cdt))

def _make_function():
    import torch
    class LinearSmoothCE(torch.autograd.Function):
        "Chunked linear + label-smoothed cross-entropy: never stores the N×V logits; computes in the inputs' precision."
        @staticmethod
        def forward(ctx, E, C, y, beta, ignore_index, reduction, chunk_size, fused):
            N, D = E.shape; V = C.shape[0]
            wdt = torch.promote_types(E.dtype, C.dtype); adt = acc_dtype(wdt)
            Ew, Cw = E.to(wdt), C.to(wdt)
            valid = y != ignore_index
            ys = torch.where(valid, y, torch.zeros_like(y))
            scale = 1.0 / max(int(valid.sum()), 1) if reduction == "mean" else 1.0
            c_sum = _col_sum(Cw, adt)
            lse = torch.empty(N, dtype=adt, device=E.device); loss = torch.empty(N, dtype=adt, device=E.device)
            fused = bool(fused and reduction != "none" and (ctx.needs_input_grad[0] or ctx.needs_input_grad[1]))
            one_pass = fused and wdt == adt    # half precision: no float32 V×D sum; gradients by blocks of the vocabulary after the LSE pass
            cs = max(1, min(chunk_size, N))
            zbuf = torch.empty(cs, V, dtype=wdt, device=E.device)
            if one_pass:   # gradients of the scalar loss, accumulated over token chunks (dC in the compute dtype, which is the accumulation dtype)
                w = valid.to(adt) * scale
                dE = torch.empty(N, D, dtype=wdt, device=E.device) if ctx.needs_input_grad[0] else None
                dC = torch.zeros(V, D, dtype=wdt, device=E.device) if ctx.needs_input_grad[1] else None
            for s in range(0, N, cs):
                sl = slice(s, s + cs); e, yc, vc = Ew[sl], ys[sl], valid[sl]; n = len(e)
                z = torch.mm(e, Cw.T, out=zbuf[:n])                 # the only V-sized buffer
                zy = z.gather(1, yc[:, None])[:, 0].to(adt)
                m, tot = _row_lse_(z, adt, shift=beta / V if one_pass else None)   # one pass: z ← softmax(z) − β/V
                lse[sl] = m + tot.log()
                loss[sl] = torch.where(vc, lse[sl] - (1 - beta) * zy - (beta / V) * (e.to(adt) @ c_sum), 0.0)
                if one_pass:                                        # z ← softmax − q; rows scaled by w through the small operands
                    _take_label_share_(z, torch.arange(n, device=E.device), yc, 1.0 - beta)
                    if dE is not None: torch.mm(z, Cw, out=dE[sl]).mul_(w[sl, None].to(wdt))
                    if dC is not None: dC.addmm_(z.T, e * w[sl, None])
            out = loss if reduction == "none" else loss.sum() * scale
            ctx.meta = (beta, ignore_index, reduction, cs, scale, fused, E.dtype, C.dtype)
            if fused and not one_pass:
                z = zbuf = None                                     # free the logits chunk before the vocabulary pass
                dE, dC = _grads_by_vocab_blocks(Ew, Cw, y, valid, lse, valid.to(adt) * scale, beta, cs, ctx.needs_input_grad[0],
                                                ctx.needs_input_grad[1], wdt, wdt)
            if fused: ctx.save_for_backward(dE, dC)
            else: ctx.save_for_backward(E, C, y, lse)
            return out

        @staticmethod
        def backward(ctx, grad_out):
            beta, ignore_index, reduction, cs, scale, fused, edt, cdt = ctx.meta
            none = (None,) * 6
            if fused:
                dE, dC = ctx.saved_tensors
                one = bool(grad_out == 1)                           # loss.backward(): the saved gradients as they are, no copies
                scaled = lambda t, dt: (t if one else t * grad_out.to(t.dtype)).to(dt)
                return (scaled(dE, edt) if ctx.needs_input_grad[0] else None, scaled(dC, cdt) if ctx.needs_input_grad[1] else None, *none)
            E, C, y, lse = ctx.saved_tensors
            wdt = torch.promote_types(E.dtype, C.dtype); adt = lse.dtype
            valid = y != ignore_index
            w = (grad_out.to(adt).expand(len(y)) if reduction != "none" else grad_out.to(adt)) * scale * valid.to(adt)
            return *_grads_by_vocab_blocks(E.to(wdt), C.to(wdt), y, valid, lse, w, beta, cs, ctx.needs_input_grad[0], ctx.needs_input_grad[1],
                                           edt, cdt), *none
    return LinearSmoothCE

_FN = None
def linear_smooth_ce(E, # [..., D] hidden states (float64, float32, bfloat16 or float16)
                     C, # [V, D] output embedding (classifier) weights
                     y, # [...] integer targets, or ignore_index
                     beta:float=0.0, # label smoothing β ∈ [0, 1]
                     *, ignore_index:int=-100, reduction:str="mean", # 'mean' (over non-ignored rows), 'sum' or 'none'
                     chunk_size:int|None=None, # tokens per chunk; None: about 32 MiB of logits per chunk (fused in float32/float64: a quarter of C's bytes, at least 16 MiB)
                     fused:bool=False): # compute the gradients in the forward (scalar reductions; float32/float64 without recomputing the logits)
    "Label-smoothed cross-entropy of the logits `E @ C.T`, computed chunk by chunk without storing them, in the inputs' precision."
    global _FN
    import torch
    beta = check_beta(beta); _check_reduction(reduction)
    if C.ndim != 2 or E.shape[-1] != C.shape[1]: raise ValueError(f"E must be [..., D] and C [V, D] with the same D, got {tuple(E.shape)} and {tuple(C.shape)}")
    if not (E.is_floating_point() and C.is_floating_point()): raise ValueError("E and C must be floating point")
    if tuple(y.shape) != tuple(E.shape[:-1]): raise ValueError(f"y must have shape {tuple(E.shape[:-1])}, got {tuple(y.shape)}")
    V = C.shape[0]; yf = y.reshape(-1).long()
    if bool(((yf != ignore_index) & ((yf < 0) | (yf >= V))).any()): raise ValueError(f"targets must lie in 0..{V-1} or equal ignore_index={ignore_index}")
    if chunk_size is None:   # one-pass fused (float32/float64): larger chunks at large V (fewer passes over its V×D sum), still far below the naive logits
        wdt = torch.promote_types(E.dtype, C.dtype); item = wdt.itemsize
        one_pass = fused and acc_dtype(wdt) == wdt
        chunk_size = auto_chunk_size(V, max(16 * 2**20, V * C.shape[1] * item // 4) if one_pass else 32 * 2**20, itemsize=item)
    chunk_size = int(chunk_size)
    if chunk_size < 1: raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    if _FN is None: _FN = _make_function()
    out = _FN.apply(E.reshape(-1, E.shape[-1]), C, yf, beta, int(ignore_index), reduction, chunk_size, bool(fused))
    return out.reshape(y.shape) if reduction == "none" else out


# %% [markdown]
# Equality with `F.cross_entropy(E @ C.T, y, label_smoothing=β)` in the loss and in both gradients, with
# ignored rows, chunk sizes that do and do not divide N, and the fused variant (the test suite runs the full
# grid at rtol 1e-5):

# %%
def _ref_and_ours(beta, red="mean", chunk=7, fused=False, N=29, D=6, V=41, seed=0):
    g = torch.Generator().manual_seed(seed)
    E = torch.randn(N, D, generator=g, requires_grad=True); C = torch.randn(V, D, generator=g, requires_grad=True)
    y = torch.randint(0, V, (N,), generator=g); y[::3] = -100
    ref = F.cross_entropy(E @ C.T, y, label_smoothing=beta, reduction=red)
    up = torch.randn(ref.shape, generator=g) if red == "none" else torch.tensor(1.7)
    rE, rC = torch.autograd.grad(ref, (E, C), up)
    out = linear_smooth_ce(E, C, y, beta, reduction=red, chunk_size=chunk, fused=fused)
    oE, oC = torch.autograd.grad(out, (E, C), up)
    return (ref, rE, rC), (out, oE, oC)

for beta in (0.0, 0.1, 0.5):
    for red, fused in (("mean", False), ("sum", True), ("none", False), ("mean", True)):
        for r, o in zip(*_ref_and_ours(beta, red, fused=fused)): torch.testing.assert_close(o, r, rtol=1e-5, atol=1e-5)
a = _ref_and_ours(0.1, chunk=1)[1]; b = _ref_and_ours(0.1, chunk=1000)[1]
for u, v in zip(a, b): torch.testing.assert_close(u, v, rtol=1e-6, atol=1e-6)   # chunk size does not matter
E0 = torch.randn(4, 6, requires_grad=True); C0 = torch.randn(9, 6, requires_grad=True)
l0 = linear_smooth_ce(E0, C0, torch.full((4,), -100), 0.1); l0.backward()
test_eq((float(l0.detach()), float(E0.grad.abs().sum()), float(C0.grad.abs().sum())), (0.0, 0.0, 0.0))   # all ignored: 0, zero gradients
test_fail(lambda: linear_smooth_ce(E0, C0, torch.zeros(4, dtype=torch.long), 1.2), contains="beta must be")
test_fail(lambda: linear_smooth_ce(E0, C0, torch.full((4,), 9)), contains="targets must lie in 0..8")

# %% [markdown]
# **Precision.** float64 inputs give a float64 loss and float64 gradients that match PyTorch's float64
# loss to 1e-12 and pass `gradcheck` at its default (tight) tolerances; a float32 computation would fail
# both. bf16 inputs: the logits are the bf16 matmul's (PyTorch's float32-accumulated, once-rounded
# output, as in the naive bf16 loss), everything after it is float32, so the loss agrees to 1e-5 with an
# exact (float64) evaluation on those bf16 logits, and is closer to the exact float64 loss than PyTorch's
# own bf16 `cross_entropy` is; gradients come back in bf16.

# %%
g = torch.Generator().manual_seed(0)
E64 = torch.randn(29, 6, generator=g, dtype=torch.float64); C64 = torch.randn(41, 6, generator=g, dtype=torch.float64)
y64 = torch.randint(0, 41, (29,), generator=g); y64[::3] = -100
for fused in (False, True):
    Eq, Cq = E64.clone().requires_grad_(), C64.clone().requires_grad_()
    out = linear_smooth_ce(Eq, Cq, y64, 0.1, chunk_size=7, fused=fused); out.backward()
    Er, Cr = E64.clone().requires_grad_(), C64.clone().requires_grad_()
    ref = F.cross_entropy(Er @ Cr.T, y64, label_smoothing=0.1); ref.backward()
    test_eq((out.dtype, Eq.grad.dtype, Cq.grad.dtype), (torch.float64,) * 3)
    for a, b in ((out, ref), (Eq.grad, Er.grad), (Cq.grad, Cr.grad)): torch.testing.assert_close(a.detach(), b.detach(), rtol=1e-12, atol=1e-12)
# gradcheck's fast mode (a random projection of the Jacobian, the same tolerances); tests/test_label_smoothing.py runs the full check
assert torch.autograd.gradcheck(lambda E, C: linear_smooth_ce(E, C, y64, 0.3, chunk_size=2), (E64.clone().requires_grad_(), C64.clone().requires_grad_()), fast_mode=True)
assert torch.autograd.gradcheck(lambda E, C: linear_smooth_ce(E, C, y64, 0.3, chunk_size=5, reduction="none"), (E64.clone().requires_grad_(), C64.clone().requires_grad_()), fast_mode=True)
# a float32 computation of the same loss is off by ~1e-7 relative: far outside the float64 check above
assert abs(float(F.cross_entropy(E64.float() @ C64.float().T, y64, label_smoothing=0.1)) - float(ref.detach())) > 1e-12

E = torch.randn(64, 16, generator=g); C = torch.randn(300, 16, generator=g); y = torch.randint(0, 300, (64,), generator=g); y[::3] = -100
Eb, Cb = E.bfloat16().requires_grad_(), C.bfloat16().requires_grad_()
lb = linear_smooth_ce(Eb, Cb, y, 0.1); lb.backward()
exact = F.cross_entropy(Eb.detach().double() @ Cb.detach().double().T, y, label_smoothing=0.1)        # exact inputs, exact maths
on_bf16_logits = F.cross_entropy((Eb.detach() @ Cb.detach().T).double(), y, label_smoothing=0.1)    # exact maths on the bf16 logits
torch_bf16 = F.cross_entropy(Eb.detach() @ Cb.detach().T, y, label_smoothing=0.1)                   # PyTorch's bf16 loss
test_eq((lb.dtype, Eb.grad.dtype, Cb.grad.dtype), (torch.float32, torch.bfloat16, torch.bfloat16))
_Ef, _Cf = Eb.detach().clone().requires_grad_(), Cb.detach().clone().requires_grad_()
linear_smooth_ce(_Ef, _Cf, y, 0.1, fused=True).backward()   # half precision: the fused loss runs the chunked loss's vocabulary pass in its forward
assert torch.equal(_Ef.grad, Eb.grad) and torch.equal(_Cf.grad, Cb.grad)
test_close(float(lb.detach()), float(on_bf16_logits), eps=1e-5)
assert abs(float(lb.detach()) - float(exact)) < abs(float(torch_bf16) - float(exact))
E32, C32 = Eb.detach().float().requires_grad_(), Cb.detach().float().requires_grad_()
F.cross_entropy(E32 @ C32.T, y, label_smoothing=0.1).backward()
test_close(Eb.grad.float(), E32.grad, eps=2e-2); test_close(Cb.grad.float(), C32.grad, eps=2e-2)
float(lb.detach()), float(on_bf16_logits), float(exact), float(torch_bf16)


# %% [markdown]
# **The official fused kernel's target term.** The official fork's opt-in fused forward-backward kernel
# (`cce_smooth_forwardbackward.py`, used with `impl="cce_fused"`; the default `cce` path uses the separate
# backward kernel) adds $-(1-\beta-\beta/V)$ to the softmax at the label, where the target's label entry is
# $1-\beta+\beta/V$ — its separate backward kernel has the correct $+$. Its logit gradient is therefore
# $\mathrm{softmax}(z) - q + \tfrac{2\beta}{V}\,\mathrm{onehot}(y)$: off by $2\beta/V$ at every label, and its rows
# sum to $2\beta/V$ instead of 0, so it is not the gradient of any loss of the softmax (such a gradient is
# orthogonal to shifting all logits) — in training it slowly pushes every label logit down. Below, with
# $C = I$ (so that $z = E$ and $\partial\ell/\partial E$ is the logit gradient), trustlib's gradient equals
# torch's `label_smoothing` gradient and the analytic softmax − q in float64, while the official sign
# differs by exactly $2\beta/V$ at the labels.

# %%
def official_fused_logit_grad(z, y, beta):
    "The logit gradient of the official fused kernel, as written there: softmax − β/V everywhere, −(1 − β − β/V) at the label."
    V = z.shape[1]; gz = torch.softmax(z, 1) - beta / V
    gz[torch.arange(len(y)), y] = torch.softmax(z, 1)[torch.arange(len(y)), y] - (1 - beta - beta / V)
    return gz

V_, beta_ = 41, 0.1
Z = torch.randn(17, V_, generator=g, dtype=torch.float64); Yz = torch.randint(0, V_, (17,), generator=g)
Zo = Z.clone().requires_grad_(); linear_smooth_ce(Zo, torch.eye(V_, dtype=torch.float64), Yz, beta_, reduction="sum").backward()
Zt = Z.clone().requires_grad_(); F.cross_entropy(Zt, Yz, label_smoothing=beta_, reduction="sum").backward()
torch.testing.assert_close(Zo.grad, Zt.grad, rtol=1e-12, atol=1e-12)                    # trustlib = torch, float64
torch.testing.assert_close(Zo.grad, ls_gradient(Z, Yz, beta_).double(), rtol=1e-6, atol=1e-7)   # = softmax − q
test_close(Zo.grad.sum(1), torch.zeros(17, dtype=torch.float64), eps=1e-12)            # rows sum to 0
off = official_fused_logit_grad(Z, Yz, beta_) - Zo.grad
onehot = F.one_hot(Yz, V_).double()
torch.testing.assert_close(off, 2 * beta_ / V_ * onehot, rtol=1e-9, atol=1e-12)         # off by 2β/V at the label, 0 elsewhere
test_close(official_fused_logit_grad(Z, Yz, beta_).sum(1), torch.full((17,), 2 * beta_ / V_, dtype=torch.float64), eps=1e-12)
2 * beta_ / V_

# %% [markdown]
# ### Measuring peak memory and time
#
# **Memory.** `bench_memory` measures the **peak resident memory above the baseline** (inputs already allocated) of
# one forward + backward. On Linux it resets the kernel's peak-RSS counter (`/proc/self/clear_refs`, value 5) right
# before the call and reads `VmHWM` after it, which sees every allocation, torch's included; elsewhere it falls back
# to `resource.getrusage` (peak over the process's life). Memory freed by one case can be kept by the allocator and
# reused by the next, which would hide part of the next peak, so `benchmark` measures each case's memory in a fresh
# python process.
#
# **Time.** `bench_times` measures the **CPU time** (`time.process_time`) of one forward + backward of every
# implementation in one process, after one untimed warm-up call each, in `repeats` *interleaved* rounds (every round
# runs each implementation once, the order rotating from round to round), so that a change of load on a shared machine
# hits all of them alike. Per round, each implementation's time over the naive loss's is a paired ratio; the
# benchmark reports the median of those ratios with its distribution-free 95 % interval (`median_ci`, order
# statistics; six rounds or more give one) and the median CPU and wall seconds of every implementation, with the
# load average before and after. CPU time, because wall time on a shared machine measures the load as much as the code.

# %%
#| export
BENCH_IMPLS = ("naive", "chunked", "fused")
BENCH_DTYPES = ("float32", "bfloat16", "float64", "float16")

def _proc_status(key:str) -> int|None:
    try:
        with open('/proc/self/status') as f:
            for line in f:
                if line.startswith(key + ':'): return int(line.split()[1]) * 1024
    except OSError: return None
    return None

def _reset_peak() -> bool:
    try:
        with open('/proc/self/clear_refs', 'w') as f: f.write('5')
        return True
    except OSError: return False

def _check_bench(impls, dtype):
    bad = [i for i in impls if i not in BENCH_IMPLS]
    if bad or not impls: raise ValueError(f"impl must be one of {list(BENCH_IMPLS)}, got {list(impls)!r}")
    if dtype not in BENCH_DTYPES: raise ValueError(f"dtype must be one of {list(BENCH_DTYPES)}, got {dtype!r}")

def _bench_inputs(n_tokens, d_model, vocab_size, dtype, seed):
    import torch
    dt = getattr(torch, dtype); g = torch.Generator().manual_seed(seed)
    E = (torch.randn(n_tokens, d_model, generator=g) / d_model ** 0.5).to(dt).requires_grad_()
    C = (torch.randn(vocab_size, d_model, generator=g) * 0.5).to(dt).requires_grad_()
    return E, C, torch.randint(0, vocab_size, (n_tokens,), generator=g)

def _bench_step(impl, E, C, y, beta, chunk_size) -> float:
    "One forward + backward of `impl`; returns the loss."
    import torch.nn.functional as F
    E.grad = C.grad = None
    if impl == "naive": loss = F.cross_entropy(E @ C.T, y, label_smoothing=beta)
    else: loss = linear_smooth_ce(E, C, y, beta, chunk_size=chunk_size, fused=impl == "fused")
    loss.backward()
    return float(loss.detach())

def bench_memory(impl:str, # 'naive' (F.cross_entropy on E @ C.T), 'chunked' or 'fused'
                 n_tokens:int=8192, d_model:int=256, vocab_size:int=32768, beta:float=0.1, chunk_size:int|None=None,
                 threads:int|None=None, seed:int=0, dtype:str="float32") -> dict:
    "Peak extra resident memory (MiB) of one forward + backward, measured in this process (a fresh one for exact peaks), and the loss."
    import torch, resource
    _check_bench([impl], dtype)
    with torch_threads(threads):
        E, C, y = _bench_inputs(n_tokens, d_model, vocab_size, dtype, seed)
        base = _proc_status('VmRSS'); exact = base is not None and _reset_peak()
        if not exact: base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        loss = _bench_step(impl, E, C, y, beta, chunk_size)
        peak = (_proc_status('VmHWM') if exact else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024) - base
    itemsize = torch.empty((), dtype=getattr(torch, dtype)).element_size()
    return dict(impl=impl, dtype=dtype, n_tokens=n_tokens, d_model=d_model, vocab_size=vocab_size, beta=beta,
                chunk_size=None if impl == "naive" else (chunk_size or auto_chunk_size(vocab_size, itemsize=itemsize)),
                peak_mib=max(peak, 0) / 2**20, loss=loss, memory_method="VmHWM reset" if exact else "ru_maxrss")

def bench_times(impls=BENCH_IMPLS, n_tokens:int=8192, d_model:int=256, vocab_size:int=32768, beta:float=0.1, chunk_size:int|None=None,
                repeats:int=6, # interleaved rounds (each runs every implementation once)
                threads:int|None=None, seed:int=0, dtype:str="float32") -> dict:
    "CPU and wall seconds of one forward + backward per implementation, `repeats` interleaved rounds after a warm-up call each, with the load average."
    import torch
    _check_bench(impls, dtype)
    out = dict(cpu={i: [] for i in impls}, wall={i: [] for i in impls}, load_before=os.getloadavg()[0] if hasattr(os, 'getloadavg') else float('nan'))
    with torch_threads(threads):
        E, C, y = _bench_inputs(n_tokens, d_model, vocab_size, dtype, seed)
        out['loss'] = {i: _bench_step(i, E, C, y, beta, chunk_size) for i in impls}          # warm-up
        for r in range(repeats):
            for i in impls[r % len(impls):] + impls[:r % len(impls)]:                       # the order rotates every round
                c0, t0 = time.process_time(), time.perf_counter(); _bench_step(i, E, C, y, beta, chunk_size)
                out['cpu'][i].append(time.process_time() - c0); out['wall'][i].append(time.perf_counter() - t0)
        out['threads'] = torch.get_num_threads()
    out['load_after'] = os.getloadavg()[0] if hasattr(os, 'getloadavg') else float('nan')
    return out

def _in_process(fn:str, kw:dict, subprocess:bool, timeout:float|None):
    "`fn(**kw)` of this module, in a fresh python process if `subprocess` (its JSON result read back)."
    if not subprocess: return globals()[fn](**kw)
    import subprocess as sp
    code = (f"import json,sys; from trustlib.calibration.label_smoothing import {fn}; "
            f"print('BENCH' + json.dumps({fn}(**json.loads(sys.argv[1]))))")
    r = sp.run([sys.executable, "-c", code, json.dumps(kw)], capture_output=True, text=True, timeout=timeout)
    line = [l for l in r.stdout.splitlines() if l.startswith('BENCH')]
    if r.returncode != 0 or not line: raise RuntimeError(f"benchmark {fn}({kw}) failed (exit {r.returncode}): {r.stderr[-2000:]}")
    return json.loads(line[-1][5:])

def _bench_rows(V, impls, mem, tm) -> list[dict]:
    rows = []
    for i in impls:
        row = dict(mem[i], process='fresh', cpu_s=float(np.median(tm['cpu'][i])), time_s=float(np.median(tm['wall'][i])),
                   cpu_runs=[round(x, 4) for x in tm['cpu'][i]], repeats=len(tm['cpu'][i]), threads=tm['threads'],
                   load_before=tm['load_before'], load_after=tm['load_after'])
        if "naive" in impls:
            e = median_ci(np.asarray(tm['cpu'][i]) / np.asarray(tm['cpu']["naive"]))
            row.update(memory_vs_naive=mem[i]['peak_mib'] / mem["naive"]['peak_mib'], cpu_vs_naive=e.value, cpu_vs_naive_lo=e.lo,
                       cpu_vs_naive_hi=e.hi, wall_vs_naive=float(np.median(np.asarray(tm['wall'][i]) / np.asarray(tm['wall']["naive"]))))
        rows.append(row)
    return rows

def benchmark(vocab_sizes=(32768,), n_tokens:int=8192, d_model:int=256, impls=BENCH_IMPLS, beta:float=0.1,
              repeats:int=6, threads:int=1, subprocess:bool=True, progress:bool=True, timeout:float|None=None,
              dtype:str="float32"):
    "Per vocabulary size: each implementation's peak memory (a fresh process each, if `subprocess`) and interleaved CPU times (one process); ratios to naive."
    import pandas as pd
    from tqdm.auto import tqdm
    impls = tuple(impls); _check_bench(impls, dtype)
    rows = []
    for V in tqdm(vocab_sizes, desc="benchmark", disable=not progress):
        kw = dict(n_tokens=n_tokens, d_model=d_model, vocab_size=V, beta=beta, threads=threads, dtype=dtype)
        mem = {i: _in_process('bench_memory', dict(kw, impl=i), subprocess, timeout) for i in impls}
        tm = _in_process('bench_times', dict(kw, impls=impls, repeats=repeats), subprocess, timeout)
        rows += _bench_rows(V, impls, mem, tm)
    return pd.DataFrame(rows)


# %%
_b = benchmark((2048,), n_tokens=256, d_model=32, subprocess=False, progress=False)
test_eq(list(_b.impl), list(BENCH_IMPLS)); test_eq(list(_b.repeats), [6] * 3)
test_close(_b.loss.values, np.full(3, _b.loss.iloc[0]), eps=1e-4)     # the three implementations compute the same loss
assert (_b.peak_mib >= 0).all() and (_b.time_s > 0).all() and (_b.cpu_s > 0).all()
assert (_b.cpu_vs_naive_lo <= _b.cpu_vs_naive).all() and (_b.cpu_vs_naive <= _b.cpu_vs_naive_hi).all()   # six rounds: an interval
test_eq(_b.set_index('impl').cpu_vs_naive['naive'], 1.0)
_t = bench_times(("naive", "fused"), n_tokens=64, d_model=8, vocab_size=512, repeats=3)
test_eq([len(_t['cpu'][i]) for i in ("naive", "fused")], [3, 3]); test_close(_t['loss']['naive'], _t['loss']['fused'], eps=1e-4)
_b16 = benchmark((2048,), n_tokens=256, d_model=32, impls=("naive", "fused"), subprocess=False, progress=False, dtype="bfloat16", repeats=2)
test_eq(list(_b16.dtype), ["bfloat16"] * 2); test_close(_b16.loss.values, np.full(2, _b16.loss.iloc[1]), eps=0.05)
assert not np.isfinite(_b16.cpu_vs_naive_lo).any()                    # two rounds: no interval
test_fail(lambda: bench_memory("naive", dtype="int8"), contains="dtype must be")
test_fail(lambda: bench_times(("naive", "triton")), contains="impl must be")
_b[['impl', 'dtype', 'vocab_size', 'peak_mib', 'cpu_s', 'cpu_vs_naive', 'cpu_vs_naive_lo', 'cpu_vs_naive_hi', 'time_s', 'memory_method']].round(3)


# %% [markdown]
# ## 3. Calibration on multiple-choice questions
#
# Following the paper's evaluation, a model's answer distribution is its next-token distribution
# **restricted to the option letters and renormalised**; confidence is the largest of those probabilities.
# Accuracy, ECE (15 equal-width bins) and RMS calibration error come from `trustlib.metrics` (top-label,
# cross-checked against torchmetrics in that notebook).

# %%
#| export
def option_probs(logits, # [N, V] next-token logits at the answer position (or [N, K] already restricted)
                 option_ids=None, # the K token ids of the option letters; None: `logits` are already the K option logits
                 ) -> np.ndarray:
    "Next-token probabilities restricted to the option tokens and renormalised: an [N, K] float64 array."
    import torch
    z = torch.as_tensor(logits).double()
    if option_ids is not None: z = z[:, torch.as_tensor(option_ids, dtype=torch.long)]
    return torch.softmax(z, -1).numpy()

def mcq_calibration(y, # [N] index of the correct option
                    probs, # [N, K] option probabilities
                    n_bins:int=15) -> dict[str, float]:
    "Accuracy, ECE, RMS calibration error, mean confidence and the over-confidence gap (confidence − accuracy)."
    probs = np.asarray(probs); acc = M.accuracy(y, probs); conf = float(probs.max(1).mean())
    return dict(acc=acc, ece=M.ece(y, probs, n_bins), rms_ce=M.rms_ce(y, probs, n_bins), conf=conf, overconf=conf - acc)


# %%
rng = np.random.default_rng(0)
Pc = rng.dirichlet(np.ones(4) * 0.7, size=20000); yc = np.array([rng.choice(4, p=p) for p in Pc])
cal = mcq_calibration(yc, Pc)
assert cal['ece'] < 0.02 and abs(cal['overconf']) < 0.02, cal          # labels drawn from the predictions: calibrated
Pover = option_probs(np.log(Pc) * 3)                                    # sharpened: over-confident
over = mcq_calibration(yc, Pover); assert over['ece'] > 0.1 and over['overconf'] > 0.1
lg = torch.randn(5, 30); P5 = option_probs(lg, [3, 4, 5, 6])
test_close(P5.sum(1), np.ones(5)); test_close(P5, torch.softmax(lg[:, 3:7].double(), -1).numpy())
cal, over

# %% [markdown]
# ## 4. A synthetic world, a tiny GPT, pretraining and SFT
#
# **The world.** `n_entities` entities (`e0`, `e1`, …), each with four attributes (colour, city, job,
# animal) drawn uniformly from four values each. A fraction `unseen_frac` of the entities is never
# described.
#
# **Pretraining text** mixes (i) fact statements about the described entities in five templates
# ("the city of e17 is oslo", "e17 's city : oslo", …) and (ii) exam-style questions about any entity,
# "Q city e17 ? A paris B rome C oslo D lima Answer", followed by the answer letter — the true one for
# described entities and a uniformly random one for undescribed entities (nobody knows their attributes).
# Every question lists the attribute's four values in a fixed order, so the letter identifies the value:
# the model has to recall the fact, not to search the options. To keep the large-vocabulary runs cheap on
# a CPU, the next-token loss is taken at the knowledge-bearing position of each sequence only (the value
# of a statement, the letter of a question); the other tokens are context.
#
# **SFT** trains on a fixed set of questions (`sft_frac` of all (entity, attribute) pairs, described and
# undescribed entities alike, always with the true answer) for several epochs, loss on the answer letter
# only — the setting in which instruction tuning teaches a model to answer confidently questions it
# cannot know. **Evaluation** uses the other pairs' questions.

# %%
#| export
ATTRIBUTES = {
    "colour": ("red", "blue", "green", "yellow"),
    "city": ("paris", "rome", "oslo", "lima"),
    "job": ("baker", "pilot", "nurse", "judge"),
    "animal": ("cat", "dog", "owl", "fox"),
}
TEMPLATES = ("the {a} of {e} is {v}", "{e} has {a} {v}", "{e} 's {a} : {v}", "about {e} , the {a} is {v}", "{e} - {a} - {v}")
LETTERS = ("A", "B", "C", "D")
_SPECIAL = ("<pad>", "<bos>")
_WORDS = ("the", "of", "is", "has", "'s", ":", "about", ",", "-", "Q", "?", "Answer")

def world_vocab_size(n_entities:int) -> int:
    "Number of real tokens of a world with `n_entities` entities."
    return len(_SPECIAL) + len(_WORDS) + len(LETTERS) + len(ATTRIBUTES) + sum(map(len, ATTRIBUTES.values())) + n_entities

@dataclass
class World:
    "A synthetic world: attribute values per entity, which entities are described, and the token vocabulary."
    values: np.ndarray   # [n_entities, 4] value index per attribute
    seen: np.ndarray     # [n_entities] True if the entity is described in pretraining
    vocab: tuple         # token strings; ids are positions
    def __post_init__(self): self.ids = {w: i for i, w in enumerate(self.vocab)}
    @property
    def n_entities(self) -> int: return len(self.values)
    def encode(self, text:str) -> list[int]: return [self.ids[w] for w in text.split()]
    @property
    def letter_ids(self) -> list[int]: return [self.ids[L] for L in LETTERS]

def make_world(n_entities:int, unseen_frac:float=0.3, seed:int=0) -> World:
    "A random world (values and described entities drawn from `seed`)."
    if n_entities < 2: raise ValueError("n_entities must be >= 2")
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 4, size=(n_entities, len(ATTRIBUTES)))
    seen = np.zeros(n_entities, bool); seen[rng.permutation(n_entities)[:int(round((1 - unseen_frac) * n_entities))]] = True
    vocab = _SPECIAL + _WORDS + LETTERS + tuple(ATTRIBUTES) + tuple(v for vs in ATTRIBUTES.values() for v in vs) + tuple(f"e{i}" for i in range(n_entities))
    return World(values, seen, vocab)

def fact_text(w:World, e:int, a:int, template:int) -> str:
    "Statement of entity `e`'s attribute `a` in template `template` (the value is the last word)."
    name = list(ATTRIBUTES)[a]
    return TEMPLATES[template].format(a=name, e=f"e{e}", v=ATTRIBUTES[name][w.values[e, a]])

def question_text(w:World, e:int, a:int) -> tuple[str, int]:
    "The multiple-choice question about (e, a) and the index of the correct option."
    name = list(ATTRIBUTES)[a]
    opts = " ".join(f"{L} {v}" for L, v in zip(LETTERS, ATTRIBUTES[name]))
    return f"Q {name} e{e} ? {opts} Answer", int(w.values[e, a])

def split_pairs(w:World, sft_frac:float, seed:int) -> tuple[np.ndarray, np.ndarray]:
    "(entity, attribute) pairs of the SFT question set and of the held-out evaluation set."
    pairs = np.array([(e, a) for e in range(w.n_entities) for a in range(len(ATTRIBUTES))])
    idx = np.random.default_rng(seed).permutation(len(pairs)); k = int(round(sft_frac * len(pairs)))
    return pairs[np.sort(idx[:k])], pairs[np.sort(idx[k:])]

def question_set(w:World, pairs) -> dict:
    "Token ids (with a leading <bos>), correct option and 'described' flag of the questions about `pairs`."
    items = [question_text(w, int(e), int(a)) for e, a in pairs]
    return dict(ids=[[w.ids["<bos>"]] + w.encode(q) for q, _ in items], y=np.array([y for _, y in items]),
                seen=np.array([bool(w.seen[e]) for e, _ in pairs]))


# %%
W = make_world(20, seed=0)
test_eq(len(W.vocab), world_vocab_size(20)); test_eq(W.seen.sum(), 14)
test_eq(fact_text(W, 3, 1, 0).split()[:4], ["the", "city", "of", "e3"])
q, ans = question_text(W, 3, 1); test_eq(q.split()[-1], "Answer"); test_eq(q.split()[5 + 2 * ans], ATTRIBUTES["city"][W.values[3, 1]])
S_, H_ = split_pairs(W, 0.4, seed=0); test_eq(len(S_) + len(H_), 80)
assert not set(map(tuple, S_)) & set(map(tuple, H_))
q, fact_text(W, 3, 1, 2)

# %% [markdown]
# **The model.** `tiny_gpt` (from `trustlib.models`) builds a `TinyTransformer`: GPT-2's architecture at toy
# size (pre-LayerNorm blocks, learned positions, tied input and output embeddings, no dropout), randomly
# initialised from an explicit seed with the weights transformers' `GPT2LMHeadModel` draws from that seed,
# and with named hook points on its residual stream (see the models page).
#
# `with_vocab` pads or truncates the vocabulary of a model (rows beyond the real tokens are "unused
# tokens": they never occur in the text). Part B pretrains once per hidden size at the largest V and
# truncates the unused rows for the smaller V, so the models compared at one D are identical on every
# real token and differ only in how many unused tokens their softmax (and the smoothing target) covers.

# %%
_m = tiny_gpt(100, 16, 1, 2, seed=3)
assert all(torch.equal(p, q) for p, q in zip(_m.parameters(), tiny_gpt(100, 16, 1, 2, seed=3).parameters()))   # same seed, same weights
_m2 = with_vocab(_m, 60)
test_eq(_m2.W_U.shape, (60, 16)); assert _m2.W_U.data_ptr() == _m2.embed.weight.data_ptr()   # tied
assert torch.equal(_m2.W_U, _m.W_U[:60])
_m3 = with_vocab(_m, 130, seed=1); test_eq(_m3.W_U.shape, (130, 16)); assert torch.equal(_m3.W_U[:100], _m.W_U)
assert torch.equal(_m3.W_U, with_vocab(_m, 130, seed=1).W_U)       # padding is deterministic
test_eq(_m3(torch.tensor([[1, 2, 3]])).shape, (1, 3, 130))
test_fail(lambda: tiny_gpt(100, 30, 1, 4), contains="divisible")


# %% [markdown]
# **Training.** Both stages use AdamW and `linear_smooth_ce` on the hidden states of the answer positions
# (the logits over the full, possibly padded vocabulary are never materialised). Pretraining is plain
# cross-entropy (β = 0) with warm-up and a cosine schedule; SFT uses a constant learning rate, the
# smoothing β of the variant, and for the temperature / soft-cap variants the logit-level
# `smoothed_cross_entropy`. Training runs single-threaded by default (`n_threads`), which is the fastest
# setting for models this small on a shared CPU. `answer_probs` evaluates a model on a question set.

# %%
#| export
def pretrain_batch(w:World, rng:np.random.Generator, batch:int, qa_frac:float):
    "A batch of pretraining contexts and the next token to predict (value of a statement / letter of a question)."
    ctx, tgt = [], []
    described = np.flatnonzero(w.seen); bos = w.ids["<bos>"]
    for _ in range(batch):
        if rng.random() < qa_frac:
            e, a = int(rng.integers(w.n_entities)), int(rng.integers(len(ATTRIBUTES)))
            q, ans = question_text(w, e, a)
            if not w.seen[e]: ans = int(rng.integers(4))        # nobody knows: random answers
            ctx.append([bos] + w.encode(q)); tgt.append(w.ids[LETTERS[ans]])
        else:
            e = int(described[rng.integers(len(described))]); a = int(rng.integers(len(ATTRIBUTES)))
            toks = [bos] + w.encode(fact_text(w, e, a, int(rng.integers(len(TEMPLATES)))))
            ctx.append(toks[:-1]); tgt.append(toks[-1])
    return ctx, tgt

def pretrain(model, w:World, steps:int, batch:int=64, lr:float=2e-3, qa_frac:float=0.5, seed:int=0,
             progress:bool=True, desc:str="pretrain") -> list[float]:
    "Pretrain `model` in place on the world's text; returns the loss per step."
    import torch
    from tqdm.auto import tqdm
    from trustlib.models import pad_batch
    rng = np.random.default_rng(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0, foreach=True)
    warm = max(1, steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))
    C = model.W_U; losses = []
    model.train()
    for _ in tqdm(range(steps), desc=desc, disable=not progress, leave=False):
        ctx, tgt = pretrain_batch(w, rng, batch, qa_frac)
        x, lens = pad_batch(ctx)
        loss = linear_smooth_ce(model.last_hidden(x, lens), C, torch.tensor(tgt), 0.0, fused=True)
        opt.zero_grad(set_to_none=True); loss.backward(); opt.step(); sched.step()
        losses.append(float(loss.detach()))
    model.eval()
    return losses

def sft(model, w:World, qs:dict, beta:float=0.0, temperature:float|None=None, softcap:float|None=None,
        epochs:int=15, batch:int=32, lr:float=1e-3, seed:int=0) -> list[float]:
    "Supervised fine-tuning in place on the question set `qs` (loss on the answer letter); returns the loss per epoch."
    import torch
    from trustlib.models import pad_batch
    g = torch.Generator().manual_seed(int(seed))
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0, foreach=True)
    C = model.W_U; letters = torch.tensor(w.letter_ids); y_all = letters[torch.as_tensor(qs['y'])]
    n = len(qs['ids']); out = []
    model.train()
    for _ in range(epochs):
        perm = torch.randperm(n, generator=g); tot = 0.0
        for s in range(0, n, batch):
            idx = perm[s:s + batch].tolist()
            x, lens = pad_batch([qs['ids'][i] for i in idx]); h = model.last_hidden(x, lens); y = y_all[idx]
            if temperature is None and softcap is None: loss = linear_smooth_ce(h, C, y, beta, fused=True)
            else: loss = smoothed_cross_entropy(h @ C.T, y, beta, temperature=temperature, softcap=softcap)
            opt.zero_grad(set_to_none=True); loss.backward(); opt.step(); tot += float(loss.detach()) * len(idx)
        out.append(tot / n)
    model.eval()
    return out

def answer_probs(model, w:World, qs:dict, batch:int=512) -> np.ndarray:
    "Option probabilities [N, 4] of `model` on the question set `qs` (next token restricted to A–D)."
    import torch
    from trustlib.models import pad_batch
    P = []
    with torch.no_grad():
        for s in range(0, len(qs['ids']), batch):
            x, lens = pad_batch(qs['ids'][s:s + batch])
            P.append(option_probs(model.last_hidden(x, lens) @ model.W_U[w.letter_ids].T))
    return np.concatenate(P)


# %% [markdown]
# A miniature run: pretraining teaches the described entities' facts, so questions about them become
# answerable, while questions about undescribed entities stay near chance; SFT then raises the confidence.

# %%
with torch_threads(1):
    Wd = make_world(12, seed=1)
    md = tiny_gpt(world_vocab_size(12), 32, 1, 4, seed=0)
    ld = pretrain(md, Wd, steps=300, lr=1e-2, progress=False)
    assert np.mean(ld[-10:]) < np.mean(ld[:10]), (ld[:3], ld[-3:])
    qd = question_set(Wd, split_pairs(Wd, 0.5, 0)[1])
    Pd = answer_probs(md, Wd, qd)
    test_close(Pd.sum(1), np.ones(len(Pd)))
    acc_seen = M.accuracy(qd['y'][qd['seen']], Pd[qd['seen']])
    assert acc_seen > 0.6, acc_seen
    ms = copy.deepcopy(md); sft(ms, Wd, question_set(Wd, split_pairs(Wd, 0.5, 0)[0]), epochs=10)
    conf_before, conf_after = Pd.max(1).mean(), answer_probs(ms, Wd, qd).max(1).mean()
    test_eq(answer_probs(md, Wd, qd), Pd)                               # deterministic evaluation
round(acc_seen, 3), round(conf_before, 3), round(conf_after, 3)


# %% [markdown]
# ## 5. The whole experiment: `run`
#
# - **Part A (SFT calibration):** the model with the largest D at the smallest V. Evaluate the pretrained
#   base, then SFT copies with each β in `betas`, with temperature T (β = 0) and with soft-cap c (β = 0),
#   each repeated `n_seeds` times (data order; the same orders for every variant, so differences are
#   paired). At evaluation the model's own logits are used (the temperature and the cap act in the
#   training loss only, as in the official code).
# - **Part B (vocabulary vs hidden size):** for each D, one pretrained model at the largest V, truncated to
#   each V; SFT with β = 0 and β = `sweep_beta`; ΔECE = ECE(β) − ECE(0), paired by seed.
# - **Part C (memory/time):** `benchmark` at the profile's sizes.

# %%
#| export
def _variants(cfg:Config) -> list[tuple[str, dict]]:
    v = [(f"SFT β={b:g}", dict(beta=b)) for b in cfg.betas]
    v.append((f"SFT T={cfg.temperature:g}", dict(beta=0.0, temperature=cfg.temperature)))
    v.append((f"SFT softcap={cfg.softcap:g}", dict(beta=0.0, softcap=cfg.softcap)))
    return v

def _eval_row(net, w, qs, n_bins, **info) -> tuple[dict, np.ndarray]:
    P = answer_probs(net, w, qs); y, seen = qs['y'], qs['seen']
    r = dict(info, **mcq_calibration(y, P, n_bins))
    r.update(acc_described=M.accuracy(y[seen], P[seen]), conf_described=float(P[seen].max(1).mean()),
             acc_undescribed=M.accuracy(y[~seen], P[~seen]) if (~seen).any() else float('nan'),
             conf_undescribed=float(P[~seen].max(1).mean()) if (~seen).any() else float('nan'))
    return r, P

def run_toy(cfg:Config, progress:bool=True):
    "Parts A and B: per-model evaluation rows, per-question probabilities of Part A, pretraining losses."
    import pandas as pd
    from tqdm.auto import tqdm
    from trustlib.models import tiny_gpt, with_vocab
    w = make_world(cfg.n_entities, cfg.unseen_frac, derive_seed(cfg.seed, "world"))
    S, H = split_pairs(w, cfg.sft_frac, derive_seed(cfg.seed, "split"))
    tr, ev = question_set(w, S), question_set(w, H)
    dA, vA = max(cfg.d_models), min(cfg.vocab_sizes)
    jobs = []   # (D, V, label, kwargs, sft seed)
    for D in sorted(cfg.d_models):
        for V in sorted(cfg.vocab_sizes):
            vs = _variants(cfg) if (D, V) == (dA, vA) else [("SFT β=0", dict(beta=0.0)), (f"SFT β={cfg.sweep_beta:g}", dict(beta=cfg.sweep_beta))]
            if (D, V) == (dA, vA) and cfg.sweep_beta not in cfg.betas: vs.append((f"SFT β={cfg.sweep_beta:g}", dict(beta=cfg.sweep_beta)))
            jobs += [(D, V, lab, kw, s) for lab, kw in vs for s in range(cfg.n_seeds)]
    rows, probs, losses = [], {}, {}
    bar = tqdm(total=len(cfg.d_models) * cfg.pretrain_steps + len(jobs), desc="pretrain + SFT", disable=not progress)
    with torch_threads(cfg.n_threads):
        for D in sorted(cfg.d_models):
            base = tiny_gpt(max(cfg.vocab_sizes), D, cfg.n_layers, cfg.n_heads, seed=derive_seed(cfg.seed, "init", D))
            t0 = time.time()
            losses[D] = pretrain(base, w, cfg.pretrain_steps, cfg.pretrain_batch_size, cfg.pretrain_lr, cfg.qa_frac,
                                 seed=derive_seed(cfg.seed, "pretrain", D), progress=False)
            bar.update(cfg.pretrain_steps)
            for V in sorted(cfg.vocab_sizes):
                mv = with_vocab(base, V)
                r, P = _eval_row(mv, w, ev, cfg.n_bins, D=D, V=V, model="base", beta=0.0, sft_seed=-1, seconds=time.time() - t0)
                rows.append(r)
                if (D, V) == (dA, vA): probs[("base", -1)] = P
                for (D_, V_, lab, kw, s) in [j for j in jobs if j[:2] == (D, V)]:
                    m = copy.deepcopy(mv); t1 = time.time()
                    sft(m, w, tr, epochs=cfg.sft_epochs, batch=cfg.sft_batch_size, lr=cfg.sft_lr, seed=derive_seed(cfg.seed, "sft", s), **kw)
                    r, P = _eval_row(m, w, ev, cfg.n_bins, D=D, V=V, model=lab, beta=kw.get('beta', 0.0), sft_seed=s, seconds=time.time() - t1)
                    rows.append(r); bar.update(1)
                    if (D, V) == (dA, vA): probs[(lab, s)] = P
                    del m
    bar.close()
    return pd.DataFrame(rows), probs, ev, losses


# %% [markdown]
# ### What `run` measures for the claims
#
# - *SFT degrades calibration*: over all models of Parts A and B and all SFT seeds, the rise of ECE after plain SFT
#   (β = 0) over the same model's base ECE (`sft_ece_rise_runs`).
# - *LS preserves calibration*: Part A, paired by SFT seed, the fraction of plain SFT's ECE rise that β = 0.1 removes,
#   −ΔECE / rise (`ls_fraction_removed_seeds`; undefined, NaN, for a seed without a rise).
# - *The benefit shrinks for large V relative to D*: Part B, benefit = −ΔECE(β = `sweep_beta` − β = 0) per (V, D) cell
#   and seed; the Spearman correlation between V/D and the benefit, per seed (`sweep_rho_seeds`), over `sweep_n_cells`
#   cells.
# - *Temperature / soft-capping*: Part A, the paired ΔECE of each variant against plain SFT (`t_delta_ece_seeds`,
#   `softcap_delta_ece_seeds`).
# - *The kernel*: per vocabulary size V of the benchmark, the peak memory of the chunked loss over the naive loss's
#   (`bench_memory_ratio/chunked_v<V>`) and the median of its paired CPU-time ratios over interleaved rounds, with
#   that median's interval (`bench_cpu_ratio/chunked_v<V>`); the same for the fused variant.

# %%
#| export
def _spearman(x, y) -> tuple[float, float]:
    "Spearman correlation and its two-sided p-value (NaN for fewer than 3 points or constant input)."
    from scipy.stats import spearmanr
    if len(x) < 3 or np.allclose(x, x[0]) or np.allclose(y, y[0]): return float('nan'), float('nan')
    r = spearmanr(x, y); return float(r[0]), float(r[1])

def _key(label:str) -> str:
    "A variant label as a metric-key prefix: 'SFT β=0.1' → 'sft_beta0_1', 'SFT T=0.5' → 'sft_t0_5'."
    import re
    return re.sub(r'[^a-z0-9_]', '_', label.replace("SFT ", "sft_").replace("β=", "beta").replace("=", "").lower())

def _metrics_part_a(cfg:Config, rows) -> dict:
    "Part A means per variant, the ECE rise after plain SFT (all models of Parts A and B), and the paired effects of β, T and the cap."
    dA, vA = max(cfg.d_models), min(cfg.vocab_sizes)
    base = rows[rows.model == "base"].set_index(['D', 'V'])
    sft0 = rows[rows.model == "SFT β=0"].copy()
    sft0['rise'] = sft0.ece.values - base.loc[list(zip(sft0.D, sft0.V)), 'ece'].values
    A = rows[(rows.D == dA) & (rows.V == vA)]
    byv = A.groupby('model', sort=False)[['acc', 'ece', 'rms_ce', 'conf', 'overconf']].mean()
    m = dict(part_a_d=dA, part_a_v=vA, base_ece=float(byv.loc['base', 'ece']), base_acc=float(byv.loc['base', 'acc']),
             base_rms_ce=float(byv.loc['base', 'rms_ce']), base_overconf=float(byv.loc['base', 'overconf']))
    for lab in byv.index:
        if lab != "base": m.update({f"{_key(lab)}_{c}": float(byv.loc[lab, c]) for c in ('acc', 'ece', 'rms_ce', 'overconf')})
    m.update(sft_ece_rise_runs=sft0.rise.tolist(), sft_ece_rise_frac=float((sft0.rise > 0).mean()), sft_ece_rise_mean=float(sft0.rise.mean()),
             n_sft_runs=int(len(sft0)))
    b0 = A[A.model == "SFT β=0"].set_index('sft_seed').ece
    def paired(lab):
        a = A[A.model == lab].set_index('sft_seed').ece
        return (a - b0.reindex(a.index)).values
    lab01 = f"SFT β={cfg.sweep_beta:g}"
    d01 = paired(lab01)
    rise_s = (b0 - float(byv.loc['base', 'ece'])).reindex(A[A.model == lab01].sft_seed.values).values   # per seed: plain SFT's rise
    frac = np.where(rise_s > 0, -d01 / np.where(rise_s > 0, rise_s, 1.0), np.nan)
    m.update(ls_delta_ece_mean=float(d01.mean()), ls_delta_ece_seeds=d01.tolist(), ls_fraction_removed_seeds=frac.tolist(),
             t_delta_ece_seeds=paired(f"SFT T={cfg.temperature:g}").tolist(), softcap_delta_ece_seeds=paired(f"SFT softcap={cfg.softcap:g}").tolist())
    return m

def _metrics_sweep(cfg:Config, rows) -> dict:
    "Part B: ΔECE = ECE(β = sweep_beta) − ECE(β = 0) per (D, V) and seed; Spearman ρ(V/D, benefit) per seed and pooled."
    lab01 = f"SFT β={cfg.sweep_beta:g}"
    B = rows[rows.model.isin(["SFT β=0", lab01])].pivot_table(index=['D', 'V', 'sft_seed'], columns='model', values='ece')
    d = (B[lab01] - B["SFT β=0"]).rename('delta_ece').reset_index()
    d['V_over_D'] = d.V / d.D; d['benefit'] = -d.delta_ece
    cell = d.groupby(['D', 'V'], as_index=False).agg(delta_ece=('delta_ece', 'mean'), delta_sd=('delta_ece', 'std'), V_over_D=('V_over_D', 'first'))
    cell['benefit'] = -cell.delta_ece
    rho, p_rho = _spearman(cell.V_over_D.values, cell.benefit.values)
    rho_s = [_spearman(g.V_over_D.values, g.benefit.values)[0] for _, g in d.groupby('sft_seed')]
    return dict(sweep_spearman_vd_benefit=rho, sweep_spearman_p=p_rho, sweep_rho_seeds=rho_s, sweep_n_cells=int(len(cell)),
                sweep_cells=cell.to_dict(orient='records'))


# %% [markdown]
# ### How each claim is judged
#
# The claims table below is the rule book, written before the run: each rule reads the metrics that `run` returns,
# and the one grader in `trustlib.results` turns them into verdicts. Every graded number from the toy comes with a
# 95 % interval over SFT seeds (Student t; one seed gives no interval, so the smoke profile is inconclusive almost
# everywhere); the kernel's CPU-time ratios come with the order-statistic interval of their median over interleaved
# rounds. An interval must clear its threshold; one that straddles it is inconclusive; an effect in the claim's
# opposite direction is not reproduced.
#
# **Recorded tolerances.** Some numbers differ between machines even for the same seed: the toy's training is
# chaotic, so a different summation order in the CPU's matrix kernels (another instruction set) changes every
# trained model a little, and CPU-time ratios and peak memory depend on the hardware and the allocator. Each such
# comparison carries a tolerance `tol` (its interval is widened by it), recorded from two measurements of the same
# code — the toy metrics once with this machine's default kernels and once restricted to AVX2 (as on a CPU without
# AVX-512 or AMX), the kernel's ratios from two machines (`KERNEL_TOL`) — so that a result within the tolerance of a
# threshold reads *inconclusive* on every machine instead of flipping between them.

# %%
#| export
def _metrics_bench(bench_df) -> dict:
    "Part C, per vocabulary size V: each implementation's peak memory over the naive loss's, and its median paired CPU-time ratio with the interval."
    if bench_df is None or not len(bench_df) or "naive" not in set(bench_df.impl): return {}
    m = dict(bench_n=int(bench_df.n_tokens.iloc[0]), bench_d=int(bench_df.d_model.iloc[0]), bench_dtype=str(bench_df.dtype.iloc[0]),
             bench_repeats=int(bench_df.repeats.iloc[0]))
    for r in bench_df.itertuples():
        m[f"bench_peak_mib/{r.impl}_v{r.vocab_size}"] = float(r.peak_mib); m[f"bench_cpu_seconds/{r.impl}_v{r.vocab_size}"] = float(r.cpu_s)
        if r.impl == "naive": continue
        m[f"bench_memory_ratio/{r.impl}_v{r.vocab_size}"] = float(r.memory_vs_naive)
        m[f"bench_cpu_ratio/{r.impl}_v{r.vocab_size}"] = Estimate(r.cpu_vs_naive, r.cpu_vs_naive_lo, r.cpu_vs_naive_hi, r.repeats)
    return m

def summarize(cfg:Config, rows, bench_df=None) -> dict:
    "The run's metrics, from the per-model evaluation rows (Parts A and B) and the benchmark table (Part C)."
    return {**_metrics_part_a(cfg, rows), **_metrics_sweep(cfg, rows), **_metrics_bench(bench_df)}

# recorded tolerances (see above): the toy metrics' change between default and AVX2-only kernels, with a margin; the kernel's ratios between machines
TOY_TOL = dict(sft_rise=0.011, ls_fraction=0.13, rho=0.26, delta_ece=0.072)
KERNEL_TOL = dict(memory=0.01, cpu=0.2)
_TOL_WHY = ("the same code on another CPU's instruction set (AVX2-only kernels) trains different toy models and moved the graded "
            "interval by up to this tolerance (the headline's lower end from +0.028 to -0.099): a result within it of a threshold "
            "is now inconclusive on every machine instead of flipping")

_LEGACY = dict(
    ls="reproduced if fraction of plain SFT's ECE rise removed by β=0.1 (mean over seeds) > 0.5; partially if fraction of plain SFT's ECE rise removed by β=0.1 (mean over seeds) > 0; interval must clear the threshold",
    sft="reproduced if mean ECE rise after plain SFT > 0.02; partially if mean ECE rise after plain SFT > 0; interval must clear the threshold",
    vocab="reproduced if Spearman ρ(V/D, ECE benefit of LS), mean over seeds < -0.8; partially if Spearman ρ(V/D, ECE benefit of LS), mean over seeds < 0; interval must clear the threshold",
    ts="paired ΔECE = ECE(variant) − ECE(plain SFT), 95% interval over seeds: reproduced if both intervals lie below 0; partially if exactly one does; not reproduced if both lie above 0; inconclusive otherwise",
    kernel="reproduced if the chunked loss's peak memory ≤ 1/8 of the naive loss's and its CPU time ≤ 1.3× naive; partially if only the memory target holds; inconclusive if the memory target holds and the CPU-time ratio is within 10% of 1.3")

CLAIMS = [
    Claim("sft_degrades", "Instruction tuning (SFT) degrades calibration",
          "every open LLM examined is less calibrated after SFT (Llama-3, Mistral, Gemma, … on MMLU/HellaSwag/ARC)",
          Above("sft_ece_rise_runs", 0.02, partially=0.0, tol=TOY_TOL['sft_rise'], what="ECE rise after plain SFT over the base (every model and seed)"),
          reason="toy GPTs on a synthetic world; runs of one D share a pretrained model",
          ours="ECE rise {sft_ece_rise_runs:+.3f}; Part A ECE: base {base_ece:.3f} → plain SFT {sft_beta0_ece:.3f}",
          log=[Change("2026-12-01", _LEGACY['sft'], 'reproduced if ECE rise after plain SFT over the base (every model and seed) > 0.02 (partially: > 0) (± 0.011 is within noise); partially at the weaker level; intervals must clear each threshold, one across it is inconclusive; an effect against the claim is not reproduced', _TOL_WHY)]),
    Claim("ls_calibrates", "Label smoothing during SFT (β ≈ 0.1) keeps the model calibrated",
          "β ≈ 0.1 lowers ECE and RMS-CE after SFT (Llama-3-8B, Mistral-7B); β ≈ 0.1 recommended",
          Above("ls_fraction_removed_seeds", 0.5, partially=0.0, tol=TOY_TOL['ls_fraction'],
                what="fraction of plain SFT's ECE rise that β = 0.1 removes (paired by seed)"),
          headline=True, reason="Part A: the widest model at the smallest vocabulary; a seed without an ECE rise to remove leaves the fraction undefined",
          log=[Change("2026-12-01", _LEGACY['ls'], "reproduced if fraction of plain SFT's ECE rise that β = 0.1 removes (paired by seed) > 0.5 (partially: > 0) (± 0.13 is within noise); partially at the weaker level; intervals must clear each threshold, one across it is inconclusive; an effect against the claim is not reproduced", _TOL_WHY)],
          ours="fraction removed {ls_fraction_removed_seeds:.3f}; paired ΔECE {ls_delta_ece_seeds:+.4f}; ECE β=0 {sft_beta0_ece:.3f}, "
               "β=0.1 {sft_beta0_1_ece:.3f}, β=0.2 {sft_beta0_2_ece:.3f}"),
    Claim("large_vocab", "LS's benefit is severely diminished when the vocabulary is large relative to the hidden size",
          "weak effect for Gemma/Gemma-2 (V = 256k, D = 2048–3584) vs Llama-3 / Mistral",
          Below("sweep_rho_seeds", -0.8, partially=0.0, tol=TOY_TOL['rho'], what="Spearman ρ(V/D, ECE benefit of LS) per seed"),
          requires=AtLeast("sweep_n_cells", 4, what="(V, D) cells in the sweep"),
          reason="exploratory toy sweep: padded vocabularies, one world",
          log=[Change("2026-12-01", _LEGACY['vocab'], 'reproduced if Spearman ρ(V/D, ECE benefit of LS) per seed < -0.8 (partially: < 0) (± 0.26 is within noise); partially at the weaker level; intervals must clear each threshold, one across it is inconclusive; an effect against the claim is not reproduced', _TOL_WHY + "; the need for >= 4 cells is now a condition")]),
    Claim("temperature_softcap", "Temperature-trained and soft-capped losses recover LS's benefit",
          "temperature / soft-capping during training help large-vocabulary models (secondary source)",
          AllOf(Below("t_delta_ece_seeds", 0.0, tol=TOY_TOL['delta_ece'], what="ΔECE, temperature-trained − plain SFT (paired by seed)"),
                Below("softcap_delta_ece_seeds", 0.0, tol=TOY_TOL['delta_ece'], what="ΔECE, soft-capped − plain SFT (paired by seed)"), partial='any'),
          reason="at evaluation the raw logits are used, as in the official code",
          log=[Change("2026-12-01", _LEGACY['ts'], 'reproduced if (ΔECE, temperature-trained − plain SFT (paired by seed) < 0 (± 0.072 is within noise)) and (ΔECE, soft-capped − plain SFT (paired by seed) < 0 (± 0.072 is within noise)); partially if some part holds; partially at the weaker level; intervals must clear each threshold, one across it is inconclusive; an effect against the claim is not reproduced', "a variant that significantly raises ECE (the claim's opposite) now makes the row not "
                      "reproduced instead of letting the other variant earn partially; both comparisons carry the toy's recorded tolerance")]),
    Claim("kernel", "A label-smoothed linear-cross-entropy kernel cuts memory without losing speed",
          "Triton kernels (GPU); CCE reports Gemma-2-2B loss memory 24 GB → 1 MB; speed on par with non-smoothed memory-efficient losses",
          AllOf(Each("bench_memory_ratio/chunked_v*", '<=', 0.125, tol=KERNEL_TOL['memory'], what="peak memory, chunked / naive"),
                Each("bench_cpu_ratio/chunked_v*", '<=', 1.3, partially=2.0, tol=KERNEL_TOL['cpu'],
                     what="CPU time, chunked / naive (median of interleaved rounds)")),
          reason="the chunked loss recomputes the logits in its backward, as the paper's default kernel does: four matmuls where the naive "
                 "loss has three; PyTorch on CPU, forward + backward, one thread",
          log=[Change("2026-12-01", _LEGACY['kernel'], "reproduced if (every peak memory, chunked / naive matching 'bench_memory_ratio/chunked_v*' <= 0.125 (± 0.01 is within noise)) and (every CPU time, chunked / naive (median of interleaved rounds) matching 'bench_cpu_ratio/chunked_v*' <= 1.3 (partially: <= 2) (± 0.2 is within noise)); partially at the weaker level; intervals must clear each threshold, one across it is inconclusive; an effect against the claim is not reproduced", "one CPU-time sample per case flipped the verdict between machines (0.74×, "
                      "1.14×, 1.18× for the same code); the median of interleaved rounds with its interval and a recorded cross-machine "
                      "tolerance now decide, per vocabulary size; partially now also requires the loss to be less than twice as slow")]),
    Claim("gpu_speed", "Speed parity with existing memory-efficient GPU losses (CCE, Liger) on real LLM training",
          "smoothed CCE kernels as fast as non-smoothed CCE / faster than Liger (GPU benchmark)", status="not_testable_offline",
          reason="Triton kernels need an Ampere-or-newer GPU; Liger and the paper's kernels were not run; CPU timings are not comparable"),
    Claim("real_llms", "The calibration results on real LLMs and benchmarks",
          "Llama-3 / Mistral / Gemma / Qwen SFT on Tulu-3, Alpaca, OpenHermes; MMLU, HellaSwag, ARC-Easy", status="not_testable_offline",
          reason="needs model and dataset downloads and multi-GPU training (≥ 4×A100-80GB)"),
]

# %%
claims_table(CLAIMS)

# %% [markdown]
# In the `full` profile, with an LLM as `model`, the same claims are graded on the LLM's measurements instead
# (`LLM_CLAIMS`, declared here, before any run): one value per (evaluation set, SFT seed) for the ECE rise after
# plain SFT and the paired effects of β, T and the cap; the large-vocabulary claim is recorded, not graded (one model
# per run); the kernel's rows are those above.

# %%
#| export
_LLM_WHY = ("the full profile: one open LLM fully fine-tuned on instruction data with each loss, base and fine-tuned models scored "
            "zero-shot on the multiple-choice sets (answer-letter probabilities); one value per (set, SFT seed)")

LLM_CLAIMS = [
    Claim("sft_degrades", "Instruction tuning (SFT) degrades calibration",
          "every open LLM examined is less calibrated after SFT (Llama-3, Mistral, Gemma, … on MMLU/HellaSwag/ARC)",
          Above("sft_ece_rise_runs", 0.02, partially=0.0, what="ECE rise after plain SFT over the base model (every set and seed)"),
          reason=_LLM_WHY, ours="ECE rise {sft_ece_rise_runs:+.3f}; ECE base {base_ece:.3f} → plain SFT {sft_beta0_ece:.3f} (mean over sets)"),
    Claim("ls_calibrates", "Label smoothing during SFT (β ≈ 0.1) keeps the model calibrated",
          "β ≈ 0.1 lowers ECE and RMS-CE after SFT (Llama-3-8B, Mistral-7B); β ≈ 0.1 recommended",
          Above("ls_fraction_removed_runs", 0.5, partially=0.0, what="fraction of plain SFT's ECE rise that β = 0.1 removes (paired by set and seed)"),
          headline=True, reason=_LLM_WHY + "; a (set, seed) without an ECE rise to remove leaves the fraction undefined",
          ours="fraction removed {ls_fraction_removed_runs:.3f}; paired ΔECE {ls_delta_ece_runs:+.4f}; ECE β=0 {sft_beta0_ece:.3f}, β=0.1 {sft_beta0_1_ece:.3f}"),
    Claim("large_vocab", "LS's benefit is severely diminished when the vocabulary is large relative to the hidden size",
          "weak effect for Gemma/Gemma-2 (V = 256k, D = 2048–3584) vs Llama-3 / Mistral", status="illustrated",
          reason="one model per run: the claim compares model families, so this run records the model's V, D and LS effect for runs of "
                 "models with different V/D to be set side by side",
          ours="V = {llm_vocab}, D = {llm_hidden}, V/D = {llm_v_over_d:.0f}; fraction of the ECE rise removed by β=0.1 {ls_fraction_removed_runs:.3f}"),
    Claim("temperature_softcap", "Temperature-trained and soft-capped losses recover LS's benefit",
          "temperature / soft-capping during training help large-vocabulary models (secondary source)",
          AllOf(Below("t_delta_ece_runs", 0.0, what="ΔECE, temperature-trained − plain SFT (paired by set and seed)"),
                Below("softcap_delta_ece_runs", 0.0, what="ΔECE, soft-capped − plain SFT (paired by set and seed)"), partial='any'),
          reason=_LLM_WHY + "; at evaluation the raw logits are used, as in the official code"),
    *[c for c in CLAIMS if c.id in ("kernel", "gpu_speed")],
]


# %% [markdown]
# Figures: reliability diagrams of Part A (questions pooled over SFT seeds), the ΔECE heat map of Part B,
# and the benchmark bars.

# %%
#| export
def make_figures(cfg:Config, rows, probs, ev, bench_df=None, losses=None) -> dict:
    "Reliability diagrams (Part A), ΔECE heat map (Part B), benchmark bars (Part C), pretraining curves."
    import matplotlib.pyplot as plt, seaborn as sns, pandas as pd
    figs = {}
    labels = ["base"] + [lab for lab, _ in _variants(cfg)]
    groups = [labels[i:i + 3] for i in range(0, len(labels), 3)]   # three panels per figure, so that each stays readable at page width
    for gi, group in enumerate(groups, 1):
        fig, axes = plt.subplots(1, 3, figsize=(8.4, 3.1), sharey=True)
        for ax, lab in zip(axes, group):
            keys = [k for k in probs if k[0] == lab]
            P = np.concatenate([probs[k] for k in keys]); y = np.tile(ev['y'], len(keys))
            M.reliability_diagram(y, P, n_bins=10, ax=ax, label=lab)
            ax.set_title(lab, fontsize=10); ax.set_xlabel('confidence (restricted to A–D)', fontsize=9)
        for ax in axes[len(group):]: ax.set_visible(False)
        fig.suptitle(f"Part A reliability diagrams ({gi}/{len(groups)}): D={max(cfg.d_models)}, V={min(cfg.vocab_sizes)}, held-out questions, "
                     f"pooled over {cfg.n_seeds} SFT seed(s)", fontsize=10)
        fig.tight_layout(); figs[f'reliability_{gi}'] = fig
    lab01 = f"SFT β={cfg.sweep_beta:g}"
    B = rows[rows.model.isin(["SFT β=0", lab01])].pivot_table(index=['D', 'V', 'sft_seed'], columns='model', values='ece')
    H = (B[lab01] - B["SFT β=0"]).groupby(level=[0, 1]).mean().unstack('V')
    fig, ax = plt.subplots(figsize=(1.6 + 1.3 * H.shape[1], 1.2 + 0.9 * H.shape[0]))
    sns.heatmap(H, annot=True, fmt="+.3f", cmap="RdBu_r", center=0, ax=ax, cbar_kws=dict(label=f"ΔECE = ECE(β={cfg.sweep_beta:g}) − ECE(β=0)"))
    ax.set(xlabel='vocabulary size V (padded)', ylabel='hidden size D', title=f'Part B: effect of label smoothing on ECE (mean over {cfg.n_seeds} seed(s))')
    fig.tight_layout(); figs['vocab_heatmap'] = fig
    if bench_df is not None and len(bench_df):
        fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.2))
        bd = bench_df.assign(V=bench_df.vocab_size.map(lambda v: f"{v // 1024}k" if v >= 1024 else str(v)))
        sns.barplot(data=bd, x='V', y='peak_mib', hue='impl', ax=axes[0]); axes[0].set_yscale('log')
        axes[0].set(xlabel='vocabulary size V', ylabel='peak extra memory (MiB, log)', title='peak memory')
        sns.barplot(data=bd, x='V', y='cpu_s', hue='impl', ax=axes[1])
        axes[1].set(xlabel='vocabulary size V', ylabel='CPU time (s, one thread)', title='CPU time')
        fig.suptitle(f"smoothed loss, forward + backward: {bd.dtype.iloc[0]}, N={int(bd.n_tokens.iloc[0])}, D={int(bd.d_model.iloc[0])}", fontsize=10)
        fig.tight_layout(); figs['benchmark'] = fig
    if losses:
        fig, ax = plt.subplots(figsize=(5, 3))
        for D, l in losses.items(): ax.plot(pd.Series(l).rolling(20, min_periods=1).mean(), label=f"D={D}")
        ax.set(xlabel='pretraining step', ylabel='next-token loss at answer positions (nats, smoothed)', title='pretraining'); ax.legend()
        fig.tight_layout(); figs['pretraining'] = fig
    plt.close('all')
    return figs


# %% [markdown]
# ## 6. The `full` profile: SFT of an open LLM
#
# With `model` set to a causal LM (a hub id or a local folder; the `full` profile's default is `Qwen/Qwen2.5-0.5B`,
# a model family the paper fine-tunes) `run` performs the paper's experiment instead of the toy:
#
# - **Data.** `load_records` reads a dataset given as `name[:config][@split]`: a local path (JSON, JSON lines,
#   CSV, parquet or a `datasets` `save_to_disk` folder), else a local copy under `data_dir()/hf/<hub id>[/<config>]`
#   (JSON lines of the hub's fields, as `Dataset.to_json` writes them), else the Hugging Face Hub through `datasets`.
#   SFT examples (Alpaca's `instruction`/`input`/`output`, or Tulu-3's chat `messages`) are written in
#   open-instruct's Tulu format (`<|user|>` … `<|assistant|>` …), with the loss on the assistant's tokens and the
#   end-of-sequence token only. Multiple-choice records of MMLU (`question`, `choices`, `answer`), ARC
#   (`question`, `choices.text/label`, `answerKey`) and HellaSwag (`ctx`, `endings`, `label`) become lettered
#   zero-shot prompts in lm-eval's MMLU format, ending in "Answer:".
# - **SFT.** Full fine-tuning from the pretrained weights for each variant — every β of `betas`, a temperature-trained
#   (T·CE(z/T)) and a soft-capped (c·tanh(z/c)) variant — with AdamW, linear warm-up and decay, gradient
#   clipping at 1 and the loss averaged over the labelled tokens of each batch (`llm_batch_size` sequences,
#   accumulated over micro-batches). The smoothed loss is trustlib's own: `linear_smooth_ce` on the final hidden
#   states and the output embedding, which never stores the logits (`llm_loss='chunked'`), or
#   `LabelSmoothedCrossEntropyLoss` on the logits; the temperature and soft-cap variants use
#   `smoothed_cross_entropy`. On CUDA the computation runs in bfloat16 autocast over float32 weights.
# - **Calibration.** Base and fine-tuned models are scored on each set: the next-token distribution after the prompt,
#   restricted to the option letters and renormalised (`option_probs`), gives accuracy, ECE and RMS-CE
#   (`mcq_calibration`), per set and SFT seed.

# %%
#| export
_READABLE = (".jsonl", ".json", ".csv", ".parquet")

def parse_data_spec(spec:str, # 'name[:config][@split]': a hub dataset id or a local path, e.g. 'cais/mmlu:all@test'
                    default_split:str="train") -> tuple[str, str|None, str]:
    "A dataset spec as (name, config or None, split)."
    if not isinstance(spec, str) or not spec.strip(): raise ConfigError(f"a dataset spec must be a non-empty string, got {spec!r}")
    name, _, split = spec.strip().partition("@")
    name, _, config = name.partition(":")
    return name, config or None, split or default_split

def _read_file(p) -> list[dict]:
    "Records of one file: JSON (an array, or JSON lines as `Dataset.to_json` writes them), JSON lines, CSV with a header, or parquet."
    import pandas as pd
    if p.suffix in (".json", ".jsonl"):
        txt = p.read_text(encoding="utf-8").lstrip()
        return json.loads(txt) if txt.startswith("[") else [json.loads(l) for l in txt.splitlines() if l.strip()]
    if p.suffix == ".csv": return pd.read_csv(p, keep_default_na=False).to_dict(orient="records")
    if p.suffix == ".parquet":
        require("pyarrow", "reading parquet files")
        return pd.read_parquet(p).to_dict(orient="records")
    raise ConfigError(f"cannot read {p.name}: a dataset file must end in one of {list(_READABLE)}")

def _read_local(p, split:str) -> list[dict]:
    "Records of a local dataset: a file, a `save_to_disk` folder (needs `datasets`), or a folder with `<split>.jsonl` / `<split>-*.parquet` / …"
    from trustlib.data import DataUnavailable
    if p.is_file(): return _read_file(p)
    if (p / "state.json").is_file() or (p / "dataset_dict.json").is_file():
        ds = require("datasets", "reading a `save_to_disk` folder").load_from_disk(str(p))
        return (ds[split] if hasattr(ds, "keys") else ds).to_list()
    files = sorted(f for f in p.iterdir() if f.suffix in _READABLE and (f.stem == split or f.stem.startswith(split + "-")))
    if not files and (p / split).is_dir(): return _read_local(p / split, split)
    if not files: raise DataUnavailable(f"split {split!r} of the dataset folder {p.name!r}", [p], f"put {split}.jsonl (or .json, .csv, .parquet) there")
    return [r for f in files for r in _read_file(f)]

def load_records(spec:str, # 'name[:config][@split]' (see `parse_data_spec`)
                 default_split:str="train") -> list[dict]:
    "Records of a dataset: a local path, else a local copy in `data_dir()/hf/<hub id>[/<config>]`, else the Hugging Face Hub through `datasets`."
    from pathlib import Path
    from trustlib.data import data_dir, DataUnavailable
    name, config, split = parse_data_spec(spec, default_split)
    for p in (Path(name).expanduser(), data_dir() / "hf" / name):
        q = p / config if config and (p / config).is_dir() else p
        if q.exists(): return _read_local(q, split)
    datasets = require("datasets", f"loading {name!r} from the Hugging Face Hub")
    try: return datasets.load_dataset(name, config, split=split).to_list()
    except Exception as e:
        try: return datasets.load_dataset(name, config, split=split, revision="refs/convert/parquet").to_list()   # a script-based hub dataset's parquet copy
        except Exception: pass
        raise DataUnavailable(f"dataset {spec!r}", [data_dir() / "hf" / name], f"datasets.load_dataset failed ({type(e).__name__}: {str(e)[:200]}); "
                              "put a local copy (JSON lines of the hub's fields, or a `save_to_disk` folder) there") from e


# %%
#| export
MC_LETTERS = "ABCDEFGHIJ"

def sft_segments(r:dict) -> list[tuple[str, bool]]:
    "An instruction record as (text, trained) segments in open-instruct's Tulu format: Alpaca's fields (instruction, input, output) or chat `messages`."
    if isinstance(r.get("messages"), (list, tuple)):
        segs = []
        for m in r["messages"]:
            if m["role"] == "assistant": segs += [("<|assistant|>\n", False), (str(m["content"]).strip(), True)]
            else: segs.append((f"<|{m['role']}|>\n{str(m['content']).strip()}\n", False))
        return segs
    if "instruction" in r and "output" in r:
        user = str(r["instruction"]).strip() + (f"\n\n{str(r['input']).strip()}" if str(r.get("input") or "").strip() else "")
        return [(f"<|user|>\n{user}\n<|assistant|>\n", False), (str(r["output"]).strip(), True)]
    raise ConfigError(f"an SFT record needs Alpaca's fields (instruction, input, output) or chat 'messages'; got fields {sorted(r)}")

def tokenize_sft(tok, r:dict, max_len:int) -> tuple[list[int], list[int]]:
    "Token ids and labels (-100: no loss) of one record, loss on each assistant turn and the end-of-sequence token after it; cut at `max_len`."
    first = tok("a")["input_ids"]
    bos = tok.bos_token_id is not None and first[:1] == [tok.bos_token_id]
    ids, labels = ([tok.bos_token_id], [-100]) if bos else ([], [])
    for text, trained in sft_segments(r):
        t = tok(text, add_special_tokens=False)["input_ids"] + ([tok.eos_token_id] if trained and tok.eos_token_id is not None else [])
        ids += t; labels += t if trained else [-100] * len(t)
    return ids[:max_len], labels[:max_len]

def _clean_hs(s:str) -> str:
    "HellaSwag's WikiHow markup removed, as lm-eval does."
    import re
    return re.sub(r"\s+", " ", re.sub(r"\[.*?\]", "", str(s).replace(" [title]", ". "))).strip()

def mcq_item(r:dict) -> tuple[str, list[str], int, str]:
    "(question, options, index of the answer, subject) of an MMLU, ARC or HellaSwag record (the hub's fields or the original ones)."
    if "endings" in r:                                                   # HellaSwag
        ctx = r.get("ctx") or f"{r.get('ctx_a', '')} {str(r.get('ctx_b', '')).capitalize()}"
        return _clean_hs(ctx), [_clean_hs(e) for e in r["endings"]], int(r["label"]), str(r.get("activity_label", ""))
    q, labels = r["question"], None
    if isinstance(q, dict): texts, labels, q = [c["text"] for c in q["choices"]], [str(c["label"]) for c in q["choices"]], q["stem"]   # ARC, original
    elif isinstance(r.get("choices"), dict): texts, labels = list(r["choices"]["text"]), [str(x) for x in r["choices"]["label"]]   # ARC, hub
    else: texts = list(r["choices"])                                     # MMLU
    ans = r["answerKey"] if "answerKey" in r else r["answer"]
    if labels is not None: y = labels.index(str(ans))
    elif isinstance(ans, str) and not ans.strip().isdigit(): y = MC_LETTERS.index(ans.strip())
    else: y = int(ans)
    if not 0 <= y < len(texts) or len(texts) > len(MC_LETTERS): raise ConfigError(f"a multiple-choice record has answer {ans!r} for {len(texts)} options")
    return str(q), [str(t) for t in texts], y, str(r.get("subject", ""))

def mcq_prompt(question:str, options, subject:str="") -> str:
    "The zero-shot prompt of a question (lm-eval's MMLU format): the options lettered A, B, …, then 'Answer:'."
    head = f"The following are multiple choice questions (with answers) about {subject.replace('_', ' ')}.\n\n" if subject else ""
    return head + question.strip() + "\n" + "".join(f"{L}. {o.strip()}\n" for L, o in zip(MC_LETTERS, options)) + "Answer:"

def letter_tokens(tok, k:int, probe:str="Answer:") -> tuple[list[int], list[int]]:
    "(prefix ids, one id per letter): how the tokenizer continues 'Answer:' with ' A', ' B', …: a prefix they share, then one distinct token each."
    ctx = tok(probe)["input_ids"]; enc = []
    for L in MC_LETTERS[:k]:
        full = tok(f"{probe} {L}")["input_ids"]
        if full[:len(ctx)] != ctx: raise ConfigError(f"the tokenizer does not extend {probe!r} when ' {L}' follows it")
        enc.append(full[len(ctx):])
    pre = 0
    while all(len(e) > pre + 1 for e in enc) and len({e[pre] for e in enc}) == 1: pre += 1
    if any(len(e) != pre + 1 for e in enc) or len({e[pre] for e in enc}) != k:
        raise ConfigError(f"the answer letters are not single tokens after a common prefix for this tokenizer: {enc}")
    return enc[0][:pre], [e[pre] for e in enc]


# %%
#| export
def _amp(precision:str, device:str) -> bool:
    "Whether to compute in bfloat16 autocast: 'bf16-mixed', or 'auto' on a CUDA device."
    return precision == "bf16-mixed" or (precision == "auto" and device == "cuda")

def load_llm(name:str, device:str, precision:str="auto"):
    "A `CausalLM` (tokenizer and weights) by hub id or local folder: float32 weights (bfloat16 for 'bf16'), on `device`, downloads allowed unless offline."
    import torch
    from trustlib.models import CausalLM
    from transformers.utils import logging as hf_logging
    hf_logging.disable_progress_bar()                                   # no loading bars on stderr (and on the page)
    lm = CausalLM(name, device=device, dtype=torch.bfloat16 if precision == "bf16" else torch.float32, allow_download=True)
    return lm.load()

def _collate(seqs, pad:int, device, labels=None):
    "Right-padded ids [B, L], attention mask and labels (-100 on padding)."
    import torch
    L = max(map(len, seqs))
    x = torch.full((len(seqs), L), pad, dtype=torch.long); y = torch.full((len(seqs), L), -100, dtype=torch.long)
    mask = torch.zeros(len(seqs), L, dtype=torch.long)
    for i, s in enumerate(seqs):
        x[i, :len(s)] = torch.tensor(s); mask[i, :len(s)] = 1
        if labels is not None: y[i, :len(s)] = torch.tensor(labels[i])
    return x.to(device), mask.to(device), y.to(device)

def lm_loss(model, x, mask, y, beta:float=0.0, temperature:float|None=None, softcap:float|None=None, loss:str="chunked", amp:bool=False):
    """Summed label-smoothed next-token loss over the labelled positions (`y` != -100) of a batch. 'chunked': `linear_smooth_ce` on the
    final hidden states and the output embedding (no logits stored); 'logits' (and the temperature / soft-cap variants, and heads with a
    bias or final soft-capping): the model's logits with `LabelSmoothedCrossEntropyLoss` / `smoothed_cross_entropy`."""
    import torch
    yy = y[:, 1:]; keep = yy != -100; tgt = yy[keep]
    head = model.get_output_embeddings()
    plain = temperature is None and softcap is None
    hidden = plain and loss == "chunked" and getattr(head, "bias", None) is None and not getattr(model.config, "final_logit_softcapping", None)
    with (torch.autocast(x.device.type, dtype=torch.bfloat16) if amp else contextlib.nullcontext()):
        if hidden: h = model.base_model(input_ids=x, attention_mask=mask).last_hidden_state[:, :-1][keep]
        else: z = model(input_ids=x, attention_mask=mask).logits[:, :-1][keep]
    if hidden:
        dt = torch.bfloat16 if amp else head.weight.dtype
        return linear_smooth_ce(h.to(dt), head.weight.to(dt), tgt, beta, reduction="sum")
    if plain: return LabelSmoothedCrossEntropyLoss(reduction="sum", label_smoothing=beta)(z, tgt)
    return smoothed_cross_entropy(z, tgt, beta, temperature=temperature, softcap=softcap, reduction="sum")

def sft_llm(model, data, # list of (ids, labels) from `tokenize_sft`
            pad:int, beta:float=0.0, temperature:float|None=None, softcap:float|None=None, *, epochs:int=2, batch:int=128, micro:int=8,
            lr:float=2e-5, warmup:float=0.03, seed:int=0, loss:str="chunked", amp:bool=False, progress:bool=True, desc:str="SFT") -> list[float]:
    "Full fine-tuning in place: AdamW, linear warm-up and decay, gradient clipping at 1, the loss averaged over the labelled tokens of each batch; returns the loss per step."
    import torch
    from tqdm.auto import tqdm
    g = torch.Generator().manual_seed(int(seed))
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0, foreach=True)
    total = epochs * math.ceil(len(data) / batch); warm = max(1, round(warmup * total))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min((s + 1) / warm, max(0.0, (total - s) / max(1, total - warm))))
    dev = next(model.parameters()).device; out = []
    model.train()
    with tqdm(total=total, desc=desc, disable=not progress, leave=False) as bar:
        for _ in range(epochs):
            perm = torch.randperm(len(data), generator=g).tolist()
            for s in range(0, len(data), batch):
                idx = perm[s:s + batch]
                ntok = max(1, sum(sum(l != -100 for l in data[i][1][1:]) for i in idx))
                opt.zero_grad(set_to_none=True); tot = 0.0
                for m in range(0, len(idx), micro):
                    part = [data[i] for i in idx[m:m + micro]]
                    x, mask, y = _collate([p[0] for p in part], pad, dev, [p[1] for p in part])
                    l = lm_loss(model, x, mask, y, beta, temperature, softcap, loss, amp) / ntok
                    l.backward(); tot += float(l.detach())
                torch.nn.utils.clip_grad_norm_(params, 1.0)
                opt.step(); sched.step(); out.append(tot); bar.update(1)
    model.eval()
    return out


# %%
#| export
def llm_option_probs(model, tok, items, # (question, options, answer, subject) from `mcq_item`
                     batch:int=16, amp:bool=False) -> np.ndarray:
    "Answer-letter probabilities [N, K_max] (zero-padded for questions with fewer options): the next token after the prompt, restricted to the letters."
    import torch
    head = model.get_output_embeddings(); cap = getattr(model.config, "final_logit_softcapping", None)
    limit = int(getattr(model.config, "max_position_embeddings", 4096) or 4096)
    dev = next(model.parameters()).device
    pad = next((i for i in (tok.pad_token_id, tok.eos_token_id) if i is not None), 0)
    letters, prep = {}, []
    for q, opts, _, subj in items:
        if len(opts) not in letters: letters[len(opts)] = letter_tokens(tok, len(opts))
        pre, ids = letters[len(opts)]
        prep.append(((tok(mcq_prompt(q, opts, subj))["input_ids"] + pre)[-limit:], ids))
    P = np.zeros((len(items), max(letters, default=0)))
    order = sorted(range(len(prep)), key=lambda i: len(prep[i][0]))
    with torch.no_grad():
        for s in range(0, len(order), batch):
            idx = order[s:s + batch]
            x, mask, _ = _collate([prep[i][0] for i in idx], pad, dev)
            with (torch.autocast(dev.type, dtype=torch.bfloat16) if amp else contextlib.nullcontext()):
                h = model.base_model(input_ids=x, attention_mask=mask).last_hidden_state
            h = h[torch.arange(len(idx), device=dev), mask.sum(1) - 1].float()
            for j, i in enumerate(idx):
                ids = torch.tensor(prep[i][1], device=dev)
                z = h[j] @ head.weight[ids].float().T + (head.bias[ids].float() if getattr(head, "bias", None) is not None else 0.0)
                if cap: z = cap * torch.tanh(z / cap)
                P[i, :len(ids)] = option_probs(z[None].cpu())[0]
    return P


# %%
#| export
def summarize_llm(cfg:Config, rows, V:int, D:int, **info) -> dict:
    "Metrics of the LLM path: means per variant (over sets and seeds) and per set; ECE rise after plain SFT and the paired effects of β, T and the cap, per (set, seed)."
    lab01 = f"SFT β={cfg.sweep_beta:g}"
    base = rows[rows.model == "base"].set_index('eval')
    m = dict(llm_vocab=int(V), llm_hidden=int(D), llm_v_over_d=V / D, llm_optimal_gap=ls_optimal_gap(V, cfg.sweep_beta),
             llm_eval_sets=list(base.index), **info)
    for lab, g in rows.groupby('model', sort=False):
        k = _key(lab)
        m.update({f"{k}_{c}": float(g[c].mean()) for c in ('acc', 'ece', 'rms_ce', 'overconf')})
        m.update({f"{k}_{ev}_{c}": float(x[c].mean()) for ev, x in g.groupby('eval', sort=False) for c in ('acc', 'ece')})
    def runs(lab):
        return rows[rows.model == lab].set_index(['eval', 'seed'])
    s0 = runs("SFT β=0")
    rise = s0.ece - base.ece.reindex(s0.index.get_level_values('eval')).values
    m.update(sft_ece_rise_runs=rise.tolist(), sft_ece_rise_frac=float((rise > 0).mean()))
    def paired(lab, col='ece'):
        if lab not in set(rows.model): return []
        return (runs(lab)[col] - s0[col].reindex(runs(lab).index)).tolist()
    d01 = np.asarray(paired(lab01)); r = rise.reindex(runs(lab01).index).values
    m.update(ls_delta_ece_runs=d01.tolist(), ls_delta_rms_ce_runs=paired(lab01, 'rms_ce'),
             ls_fraction_removed_runs=np.where(r > 0, -d01 / np.where(r > 0, r, 1.0), np.nan).tolist(),
             t_delta_ece_runs=paired(f"SFT T={cfg.llm_temperature:g}"), softcap_delta_ece_runs=paired(f"SFT softcap={cfg.llm_softcap:g}"))
    return m

def make_llm_figures(cfg:Config, rows, probs, evals, losses, bench_df=None) -> dict:
    "Reliability diagrams per variant (questions of every set and seed pooled) and the SFT loss curves."
    import matplotlib.pyplot as plt, pandas as pd
    figs = {}
    labels = list(dict.fromkeys(k[0] for k in probs))
    rows_ = math.ceil(len(labels) / 3)                                  # three panels a row, readable at page width
    fig, axes = plt.subplots(rows_, 3, figsize=(8.4, 2.8 * rows_), sharey=True, squeeze=False)
    for ax in axes.flat[len(labels):]: ax.set_visible(False)
    for ax, lab in zip(axes.flat, labels):
        keys = [k for k in probs if k[0] == lab]
        P = [probs[k][ev] for k in keys for ev in evals]; y = np.concatenate([[it[2] for it in evals[ev]] for k in keys for ev in evals])
        K = max(p.shape[1] for p in P); P = np.concatenate([np.pad(p, ((0, 0), (0, K - p.shape[1]))) for p in P])
        M.reliability_diagram(y, P, n_bins=10, ax=ax, label=lab); ax.set_title(lab, fontsize=9); ax.set_xlabel('confidence (answer letters)', fontsize=8)
    fig.suptitle(f"{cfg.model}: reliability, {' + '.join(evals)} pooled", fontsize=10); fig.tight_layout(); figs['llm_reliability'] = fig
    fig, ax = plt.subplots(figsize=(5, 3))
    for (lab, s), l in losses.items(): ax.plot(pd.Series(l).rolling(10, min_periods=1).mean(), label=f"{lab} (seed {s})")
    ax.set(xlabel='SFT step', ylabel='training loss per token', title='SFT'); ax.legend(fontsize=7); fig.tight_layout(); figs['llm_sft_loss'] = fig
    plt.close('all')
    return figs


# %%
#| export
def _llm_variants(cfg:Config) -> list[tuple[str, dict]]:
    "The SFT variants of the LLM path: each β of `betas` (and `sweep_beta`), then temperature and soft-cap (β = 0) unless set to 0."
    bs = list(cfg.betas) + ([cfg.sweep_beta] if cfg.sweep_beta not in cfg.betas else [])
    v = [(f"SFT β={b:g}", dict(beta=b)) for b in bs]
    if cfg.llm_temperature: v.append((f"SFT T={cfg.llm_temperature:g}", dict(beta=0.0, temperature=cfg.llm_temperature)))
    if cfg.llm_softcap: v.append((f"SFT softcap={cfg.llm_softcap:g}", dict(beta=0.0, softcap=cfg.llm_softcap)))
    return v

def _eval_name(spec:str) -> str:
    "A short metric-key name of an evaluation set: 'cais/mmlu:all@test' → 'mmlu', 'allenai/ai2_arc:ARC-Easy@test' → 'arc_easy'."
    import re
    name, config, _ = parse_data_spec(spec)
    base = config if config and config.lower() not in ("all", "default", "main") else name.rstrip("/").split("/")[-1]
    return re.sub(r"[^a-z0-9]+", "_", base.lower().removesuffix(".jsonl").removesuffix(".json")).strip("_")

def llm_data(cfg:Config, tok) -> tuple[list, dict]:
    "The tokenized SFT examples (a seeded sample of `llm_sft_examples`, each with a labelled token) and the evaluation items per set."
    recs = load_records(cfg.llm_sft_data, "train")
    order = np.random.default_rng(derive_seed(cfg.seed, "llm-data")).permutation(len(recs))[:cfg.llm_sft_examples]
    data = [tokenize_sft(tok, recs[i], cfg.llm_max_len) for i in order]
    data = [d for d in data if any(l != -100 for l in d[1][1:])]
    if not data: raise ConfigError(f"parameter 'llm_sft_data': no example of {cfg.llm_sft_data!r} has an answer token within llm_max_len={cfg.llm_max_len}")
    evals = {}
    for spec in cfg.llm_eval_data:
        items = [mcq_item(r) for r in load_records(spec, "test")]
        if cfg.llm_eval_examples and len(items) > cfg.llm_eval_examples:
            keep = np.sort(np.random.default_rng(derive_seed(cfg.seed, "llm-eval", spec)).permutation(len(items))[:cfg.llm_eval_examples])
            items = [items[i] for i in keep]
        evals[_eval_name(spec)] = items
    return data, evals

def _llm_rows(net, tok, evals, n_bins, amp, batch, **info) -> tuple[list[dict], dict]:
    rows, probs = [], {}
    for ev, items in evals.items():
        P = llm_option_probs(net, tok, items, batch=batch, amp=amp); y = np.array([it[2] for it in items])
        rows.append(dict(info, eval=ev, n=len(items), **mcq_calibration(y, P, n_bins))); probs[ev] = P
    return rows, probs

def _llm_study(cfg:Config, device:str, amp:bool, progress:bool):
    "Score the base model, then fine-tune it from its pretrained weights and score it per variant and seed: rows, probabilities, SFT losses, V, D, SFT size, sets."
    lm = load_llm(cfg.model, device, cfg.precision); m, tok = lm.model, lm.tokenizer
    pretrained = {k: v.detach().to("cpu", copy=True) for k, v in m.state_dict().items()}   # restored before every SFT run
    pad = next((i for i in (tok.pad_token_id, tok.eos_token_id) if i is not None), 0)
    V, D = m.get_output_embeddings().weight.shape
    data, evals = llm_data(cfg, tok)
    rows, probs, losses = [], {}, {}
    r, p = _llm_rows(m, tok, evals, cfg.n_bins, amp, cfg.llm_micro_batch * 2, model="base", beta=0.0, seed=-1)
    rows += r; probs[("base", -1)] = p
    for lab, kw in _llm_variants(cfg):
        for s in range(cfg.llm_seeds):
            m.load_state_dict(pretrained); t1 = time.perf_counter()
            losses[(lab, s)] = sft_llm(m, data, pad, **kw, epochs=cfg.llm_epochs, batch=cfg.llm_batch_size, micro=cfg.llm_micro_batch,
                                       lr=cfg.llm_lr, warmup=cfg.llm_warmup, seed=derive_seed(cfg.seed, "llm-sft", s), loss=cfg.llm_loss,
                                       amp=amp, progress=progress, desc=lab)
            r, p = _llm_rows(m, tok, evals, cfg.n_bins, amp, cfg.llm_micro_batch * 2, model=lab, beta=kw.get('beta', 0.0), seed=s,
                             sft_seconds=round(time.perf_counter() - t1, 3))
            rows += r; probs[(lab, s)] = p
    return rows, probs, losses, V, D, len(data), evals

def run_llm(cfg:Config, progress:bool=True) -> Result:
    "The paper's experiment: SFT of the open LLM `cfg.model` with each variant, calibration of base and fine-tuned models on the multiple-choice sets."
    import pandas as pd
    from trustlib.config import get_device
    seed_everything(cfg.seed)
    device = get_device(cfg.device); amp = _amp(cfg.precision, device)
    t0 = time.perf_counter()
    with torch_threads(cfg.n_threads): rows, probs, losses, V, D, n_sft, evals = _llm_study(cfg, device, amp, progress)
    llm_seconds = time.perf_counter() - t0
    rows = pd.DataFrame(rows)
    bench_df = None
    if cfg.bench:
        bench_df = benchmark(cfg.bench_vocab, cfg.bench_tokens, cfg.bench_dim, cfg.bench_impls, beta=0.1, repeats=cfg.bench_repeats,
                             threads=cfg.n_threads, subprocess=cfg.bench_subprocess, progress=progress, dtype=cfg.bench_dtype)
    metrics = {**summarize_llm(cfg, rows, V, D, n_sft=n_sft, device=device), **_metrics_bench(bench_df)}
    summary = rows.groupby(['model', 'eval'], sort=False)[['acc', 'ece', 'rms_ce', 'conf', 'overconf']].mean().round(4).unstack('eval')
    tables = dict(llm_runs=rows, llm_summary=summary,
                  llm_sft_loss=pd.DataFrame([dict(model=k[0], seed=k[1], step=i, loss=l) for k, ls in losses.items() for i, l in enumerate(ls)]))
    if bench_df is not None: tables['benchmark'] = bench_df
    return Result(paper="label_smoothing", config=cfg.to_dict(), metrics=metrics, tables=tables,
                  figures=make_llm_figures(cfg, rows, probs, evals, losses, bench_df), timings=dict(llm_seconds=round(llm_seconds, 3)))


# %%
#| export
def run(cfg:Config, progress:bool=True) -> Result:
    "Run the label-smoothing reproduction described by `cfg` (the toy study, or with an LLM as `model` the paper's experiment); returns measurements (metrics, tables, figures), never verdicts."
    import pandas as pd
    if cfg.model != "toy": return run_llm(cfg, progress=progress)   # the paper's experiment on an open LLM (section 6)
    seed_everything(cfg.seed)
    t0 = time.perf_counter()
    rows, probs, ev, losses = run_toy(cfg, progress=progress)
    toy_seconds = time.perf_counter() - t0
    bench_df = None
    if cfg.bench:
        bench_df = benchmark(cfg.bench_vocab, cfg.bench_tokens, cfg.bench_dim, cfg.bench_impls, beta=0.1, repeats=cfg.bench_repeats,
                             threads=cfg.n_threads, subprocess=cfg.bench_subprocess, progress=progress, dtype=cfg.bench_dtype)
    metrics = summarize(cfg, rows, bench_df)
    dA, vA = max(cfg.d_models), min(cfg.vocab_sizes)
    A = rows[(rows.D == dA) & (rows.V == vA)]
    cols = ['acc', 'ece', 'rms_ce', 'conf', 'overconf', 'acc_described', 'conf_described', 'acc_undescribed', 'conf_undescribed']
    partA = A.groupby('model', sort=False)[cols].agg(['mean', 'std']).round(4)
    B = rows[rows.model.isin(["base", "SFT β=0", f"SFT β={cfg.sweep_beta:g}"])].groupby(['D', 'V', 'model'], sort=False)[['acc', 'ece', 'rms_ce', 'conf']].mean().round(4)
    tables = dict(runs=rows, partA=partA, partB=B)
    if bench_df is not None: tables['benchmark'] = bench_df
    figures = make_figures(cfg, rows, probs, ev, bench_df, losses)
    return Result(paper="label_smoothing", config=cfg.to_dict(), metrics=metrics, tables=tables, figures=figures,
                  timings=dict(toy_seconds=round(toy_seconds, 3)))


# %% [markdown]
# ## The experiment

# %%
cfg = Config.from_namespace(globals())
cfg

# %%
test_fail(lambda: Config.from_params("smoke", betas=[0.1]), contains="must contain 0.0")
test_fail(lambda: Config.from_params("smoke", vocab_sizes=[64]), contains="smaller than the world")
test_fail(lambda: Config.from_params("smoke", bench_impls=["triton"]), contains="parameter 'bench_impls'")
test_fail(lambda: Config.from_params("smoke", sweep_beta=1.5), contains="'sweep_beta': 1.5 is out of range")
test_fail(lambda: Config.from_params("smoke", d_models=[30]), contains="not divisible")
test_eq(Config.from_params("cpu").vocab_sizes, (512, 4096, 32768))

# %%
if cfg.model != "toy":   # the full profile's LLM: its claims table, declared above, grades this run
    CLAIMS = LLM_CLAIMS
    display(claims_table(CLAIMS))

# %%
result = run_experiment(run, cfg, CLAIMS)

# %% [markdown]
# ### Part A: calibration after SFT
#
# Held-out questions (mean and standard deviation over SFT seeds). `overconf` is mean confidence minus
# accuracy; "described" / "undescribed" split the questions by whether pretraining describes the entity
# (undescribed entities' questions are unknowable: chance is 0.25).

# %%
pd.set_option('display.width', 220); pd.set_option('display.max_columns', 30)
result.tables['partA'] if 'partA' in result.tables else "not in this run: the toy study runs when model is 'toy' (this run fine-tunes an LLM; see the full profile below)"

# %%
for _k in sorted(k for k in result.figures if k.startswith('reliability_')): display(result.figures[_k])

# %% [markdown]
# ### Part B: vocabulary size vs hidden size
#
# Mean over SFT seeds; ΔECE < 0 (blue) means label smoothing lowered the ECE.

# %%
result.figures['vocab_heatmap'] if 'vocab_heatmap' in result.figures else "not in this run: the toy study runs when model is 'toy' (this run fine-tunes an LLM; see the full profile below)"

# %%
result.tables['partB'] if 'partB' in result.tables else "not in this run: the toy study runs when model is 'toy' (this run fine-tunes an LLM; see the full profile below)"

# %%
result.figures['pretraining'] if 'pretraining' in result.figures else "not in this run: the toy study runs when model is 'toy' (this run fine-tunes an LLM; see the full profile below)"

# %% [markdown]
# ### Part C: memory and time of the smoothed loss
#
# The run's own benchmark (at the profile's sizes: in the cpu profile bfloat16 inputs, N = 8192 tokens,
# D = 1024, V = 32k; `peak_mib` is the peak resident memory above the inputs, including the gradients).
# Times are for one forward + backward on one thread, the median over interleaved rounds (`repeats`); `cpu_s` is CPU
# time, the number the claim uses, because wall time on a shared machine grows with the load of other processes;
# `time_s` (wall) is shown for reference, with the load average before and after. `cpu_vs_naive` is the median of the
# per-round ratios to the naive loss, with its 95 % interval (`_lo`, `_hi`).
#
# On a CPU the time ratio also moves from run to run. Part of the naive loss's time is the operating system supplying
# fresh zeroed pages for its logits on every call: glibc's default allocator returns large freed blocks to the system,
# and the cost, counted as system CPU time, depends on the machine's memory state. An allocator that keeps freed memory
# makes the naive loss cheaper and brings the chunked loss's time ratio closer to 1; the memory ratio barely moves. The
# claim asks only that the kernel lose no speed (a ratio of at most 1.3), which holds either way: read the ratio as
# that, not as a speed-up factor.

# %%
bt = result.tables.get('benchmark')
(bt[['impl', 'dtype', 'n_tokens', 'd_model', 'vocab_size', 'chunk_size', 'peak_mib', 'memory_vs_naive', 'repeats', 'cpu_s', 'cpu_vs_naive',
     'cpu_vs_naive_lo', 'cpu_vs_naive_hi', 'time_s', 'wall_vs_naive', 'load_before', 'load_after']].round(3)
 if bt is not None else "benchmark not run")

# %%
if 'benchmark' in result.figures: display(result.figures['benchmark'])

# %% [markdown]
# A larger benchmark (N = 8192, bfloat16, D = 1024, V ∈ {32k, 128k}; naive vs chunked vs fused side by side, the same
# interleaved rounds) was run with `python tools/bench_label_smoothing.py`; its stored table, with the machine and the
# load it ran at (CPU time in `cpu_s`, the median paired ratios and their intervals in `cpu_vs_naive`):

# %%
_bench_file = Path("label_smoothing_bench.csv")
_stored = pd.read_csv(_bench_file) if _bench_file.exists() else None
if _stored is not None and 'cpu_vs_naive_lo' in _stored:      # a table of interleaved rounds (median and interval), not of single samples
    display(_stored.drop(columns=[c for c in ('cpu_runs', 'loss', 'beta', 'memory_method', 'process') if c in _stored]).round(3))
else: print("no stored benchmark table of interleaved rounds (run tools/bench_label_smoothing.py)")

# %% [markdown]
# ## The `full` profile
#
# `full` fine-tunes an open LLM (`Qwen/Qwen2.5-0.5B` unless `model` names another) on Alpaca with each smoothing
# value, a temperature-trained and a soft-capped variant, and scores the base and every fine-tuned model on MMLU,
# HellaSwag and ARC-Easy (section 6). It needs the Hugging Face Hub (or local copies) and, at this size, a GPU; its
# code path is rehearsed offline on tiny stand-ins (`trustlib run label_smoothing --profile full --rehearse`; never
# published). In a `full` run its tables and figures appear here:

# %%
if 'llm_summary' in result.tables:
    display(result.tables['llm_summary'])
    for _k in ('llm_reliability', 'llm_sft_loss'): display(result.figures[_k])
else:
    _f = Config.from_params("full")
    print(f"full profile: SFT of {_f.model} on {_f.llm_sft_data} ({len(_llm_variants(_f))} variants x {_f.llm_seeds} seed(s)), "
          f"scored on {', '.join(_f.llm_eval_data)}; not run here (the toy study above is this run)")

# %% [markdown]
# ## Paper vs. us
#
# The paper's column quotes its qualitative findings (exact table values were not available to us); ours
# come from the run above, and each verdict follows the rule stated in "How each claim is judged".

# %%
result.verdict_table()

# %% [markdown]
# **Reading the verdicts.** The toy reproduces the *setting* of the paper — a pretrained model that knows
# some facts and not others, then SFT on questions it partly cannot know — but not its scale. SFT on such
# data teaches confident answers to unknowable questions, which is why calibration degrades here. Label
# smoothing can only temper that through the size of the logits it tolerates: its optimum still puts
# probability 1 − β + β/V on the label, which after restriction to four letters is almost 1, so in a toy
# its effect comes from the training dynamics and is small compared with the noise of a few seeds. The
# vocabulary sweep pads the softmax with unused tokens; it isolates what V changes during SFT, but not
# what a larger real vocabulary changes in pretraining. The temperature variant trains the logits so that
# z/T fits the targets, so at evaluation (T = 1) its answers are softer by construction; the soft cap
# bounds only the logits the loss sees, not the raw logits used at evaluation, so it need not reduce
# over-confidence at all. Every graded row carries a 95% interval over SFT seeds, and where that interval
# straddles the threshold the verdict says the data cannot tell (inconclusive) rather than picking a word
# that a rerun on another machine could flip. One verdict still depends on the machine: the temperature part of the
# temperature / soft-cap claim clears its recorded tolerance with this machine's kernels, but a run of the same toy on
# another CPU model (the ledger keeps both publications) put its interval's upper end within the
# tolerance of 0, which reads inconclusive; both runs put the temperature-trained model's ΔECE below 0, and the
# soft-capped part straddles 0 on both. The memory result is structural (one chunk of logits instead
# of several N×V buffers; what remains is mostly the gradients themselves and, in bfloat16, the float32
# sum for ∂E) and does not depend on the CPU; the speed comparison is in CPU time on one thread against the
# naive PyTorch loss, not against the paper's GPU kernels. Of the official fork's two smoothed backward
# paths, the default one is correct and the opt-in fused one has a wrong sign at the label (2β/V), which
# a faithful port would have inherited.
