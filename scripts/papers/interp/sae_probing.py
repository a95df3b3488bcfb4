# %% [markdown]
# # Are Sparse Autoencoders Useful? A Case Study in Sparse Probing
#
# > Probes on sparse-autoencoder latents do not beat simple baselines on language-model activations, in the standard setting or under data scarcity, class imbalance, label noise and covariate shift, and adding them to a validation-selected ensemble does not raise test AUC.

# %% [markdown]
# Kantamneni, Engels, Rajamanoharan, Tegmark and Nanda (ICML 2025) ask whether sparse autoencoders (SAEs)
# help on a concrete downstream task: training binary probes on a language model's activations. On 113
# binary datasets (Gemma-2-9B, layer 20) they compare probes on the top-k SAE latents, ranked by the gap
# between the class means, with five baselines tuned by validation AUC (L2 logistic regression, PCA +
# logistic regression, k-nearest neighbours, XGBoost, an MLP), in five regimes: standard, data scarcity,
# class imbalance, label noise and covariate shift. SAE probes win on single datasets, but a
# "quiver of arrows" that picks, per dataset, the method with the best validation AUC does not get better
# when SAE probes are added to it (mean test AUC 0.9400 without, 0.9367 with them).
#
# Paper: [arXiv 2502.16681](https://arxiv.org/abs/2502.16681) · official code:
# [JoshEngels/SAE-Probes](https://github.com/JoshEngels/SAE-Probes) (research code and result files),
# packaged as [sae-probes](https://github.com/sae-probes/sae-probes) (whose wheel ships the text datasets we use).
# The SAE comes from the shared module `trustlib.interp.sae` (page [sae](../../core/10_sae.ipynb)).
#
# ::: {.callout-note}
# ## What we reproduce / what we cannot
# - **The protocol, on a small real encoder.** Text datasets from the sae-probes wheel (binary tasks,
#   subsampled copies of the paper's data), represented by MiniLM (all-MiniLM-L6-v2, 22M parameters)
#   hidden states at one layer, mean-pooled over the non-padding tokens (or the `[CLS]` token). MiniLM is
#   bidirectional, so the paper's "last token of the prompt" has no exact counterpart: this is a departure.
# - **Our own SAE:** a TopK SAE trained on MiniLM token activations (plus the pooled sentence vectors the
#   probes see) of the same texts, instead of Gemma Scope SAEs trained on billions of tokens. A
#   **random-init SAE** (same architecture, untrained) is the control: its latents are random projections.
# - **Same probe families and selection rules** as the paper (grids, the n-dependent cross-validation rule,
#   the latent ranking, L1 probes on the top-k latents, the quiver), and the four hard regimes on reduced
#   grids. Covariate shift uses the out-of-distribution test files the wheel ships.
# - **Shrunk for the CPU budget** (cpu profile): 8 datasets (about 20 suggested) of at most 1,000 rows
#   (2,000 suggested), 3 seeds, scarcity up to 256 training examples (the paper goes to 1,024; a
#   1,000-row dataset cannot supply more), imbalance and noise on 5 levels each; XGBoost (≤ 100 trees,
#   depth ≤ 4) and the MLP (100 epochs) only in the standard regime with 3 random-search draws (10
#   suggested); the hard regimes with logistic regression, PCA, KNN and SAE probes at k = 16 and 128; the
#   random-init control in the standard regime only; one SAE per run (the seeds resample splits and probes).
# - **Not reproducible offline:** the paper's numbers (Gemma-2-9B, Llama-3.1-8B and their SAEs are hub
#   downloads needing a GPU), the Section-4 interpretability case studies (manual inspection of latents on
#   specific datasets), multi-token probing and the SAEBench-architecture comparison. Verdicts compare
#   **directions** (do SAE probes add anything?), not the paper's numbers.
# :::

# %%
#| default_exp interp.sae_probing

# %%
#| export
from __future__ import annotations
import math, os, zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Optional
import numpy as np
from trustlib.config import BaseConfig, param, ConfigError, ResourceUnavailable, derive_seed, torch_threads
from trustlib.data import sae_probes_datasets

# %%
#| hide
from fastcore.test import test_eq, test_fail, test_close
import pandas as pd
from trustlib.results import check_headline

# %% [markdown]
# ## Parameters
#
# Defaults are the `smoke` profile; `trustlib run sae_probing --profile cpu` (or papermill with
# `-p profile cpu`) runs the published configuration. `None` means "the profile's value".

# %%
from typing import Optional

# %% tags=["parameters"]
profile: str = "smoke"  # smoke (CI, < 60 s) | cpu (published results, minutes) | full (paper scale)
seed: Optional[int] = None  # base random seed; every random choice derives from it
n_seeds: Optional[int] = None  # independent repetitions (splits, regime samples, probe searches)
datasets: Optional[list[str]] = None  # sae-probes binary datasets (file stems)
max_rows: Optional[int] = None  # rows kept per dataset (stratified subsample)
test_frac: Optional[float] = None  # share of each dataset held out as the test set
n_train: Optional[int] = None  # training examples in the standard, noise and covariate-shift regimes
layer: Optional[int] = None  # MiniLM hidden-state layer (0 ＝ embeddings, 6 ＝ last)
pooling: Optional[str] = None  # mean (over non-padding tokens) or cls
max_length: Optional[int] = None  # tokens per text (truncation)
tokens_per_text: Optional[int] = None  # token activations kept per text for SAE training
d_sae: Optional[int] = None  # SAE width
sae_k: Optional[int] = None  # active latents per input of the TopK SAE
sae_steps: Optional[int] = None  # SAE optimiser steps
sae_batch_size: Optional[int] = None  # SAE training batch size
sae_lr: Optional[float] = None  # SAE Adam learning rate
k_values: Optional[list[int]] = None  # SAE-probe k sweep in the standard regime
regime_k: Optional[list[int]] = None  # SAE-probe k in the hard regimes
baselines: Optional[list[str]] = None  # baseline probes in the standard regime
regime_baselines: Optional[list[str]] = None  # baseline probes in the hard regimes
regimes: Optional[list[str]] = None  # hard regimes to run (scarcity, imbalance, noise, ood)
scarcity_n: Optional[list[int]] = None  # balanced training-set sizes (data scarcity)
imbalance_fracs: Optional[list[float]] = None  # positive fractions of the training set (class imbalance)
imbalance_n: Optional[int] = None  # largest training set in the imbalance regime
noise_fracs: Optional[list[float]] = None  # fractions of flipped training labels (label noise)
n_search: Optional[int] = None  # random-search draws of XGBoost and the MLP
random_sae: Optional[bool] = None  # also probe a random-init SAE (control)
cache: Optional[bool] = None  # cache MiniLM representations under the data folder
n_threads: Optional[int] = None  # torch/BLAS threads (None: leave as is)

# %% [markdown] tags=["injected-parameters"]
# **This page shows a run with** `profile = "cpu"` (run `cpu-bf21a9e8fb`, commit `cc26697`, 785 s, 2026-12-01). Running the notebook yourself uses the parameters cell above as written (the fast `smoke` profile unless you change it); `trustlib run sae_probing --profile cpu` repeats the run shown here.

# %%
#| export
BASELINES = ("logreg", "pca", "knn", "xgboost", "mlp")
REGIMES = ("scarcity", "imbalance", "noise", "ood")
CPU_DATASETS = ("5_hist_fig_ismale", "6_hist_fig_isamerican", "87_glue_cola", "90_glue_qnli", "66_living-room",
                "92_glue_sst2", "96_spam_is", "154_athlete_sport_football")

@dataclass
class Config(BaseConfig):
    "Configuration of the SAE-probing reproduction on MiniLM representations of the sae-probes datasets."
    n_seeds: int = param(3, "independent repetitions (splits, regime samples, probe searches)", ge=1, le=100)
    datasets: tuple[str, ...] = param(("92_glue_sst2", "96_spam_is", "5_hist_fig_ismale"), "sae-probes binary datasets (file stems)", choices=lambda: sae_probes_datasets("binary"))
    max_rows: int = param(300, "rows kept per dataset (stratified subsample)", ge=40, max=20_000, le=1_000_000)
    test_frac: float = param(0.3, "share of each dataset held out as the test set", gt=0.05, lt=0.9)
    n_train: int = param(1024, "training examples in the standard, noise and covariate-shift regimes", ge=8, le=1_000_000)
    layer: int = param(4, "MiniLM hidden-state layer (0 = embeddings, 6 = last)", ge=0, le=6)
    pooling: str = param("mean", "mean (over non-padding tokens) or cls", choices=("mean", "cls"))
    max_length: int = param(64, "tokens per text (truncation)", ge=4, le=512)
    tokens_per_text: int = param(4, "token activations kept per text for SAE training", ge=1, le=512)
    d_sae: int = param(768, "SAE width", ge=16, max=65_536, le=1_000_000)
    sae_k: int = param(32, "active latents per input of the TopK SAE", ge=1, le=10_000)
    sae_steps: int = param(60, "SAE optimiser steps", ge=1, max=100_000, le=10_000_000)
    sae_batch_size: int = param(512, "SAE training batch size", ge=8, le=65_536)
    sae_lr: float = param(4e-4, "SAE Adam learning rate", gt=0, le=1)
    k_values: tuple[int, ...] = param((8, 32), "SAE-probe k sweep in the standard regime", ge=1, le=100_000)
    regime_k: tuple[int, ...] = param((8, 32), "SAE-probe k in the hard regimes", ge=1, le=100_000)
    baselines: tuple[str, ...] = param(("logreg",), "baseline probes in the standard regime")
    regime_baselines: tuple[str, ...] = param(("logreg",), "baseline probes in the hard regimes")
    regimes: tuple[str, ...] = param((), "hard regimes to run (scarcity, imbalance, noise, ood)")
    scarcity_n: tuple[int, ...] = param((4, 16, 64, 256), "balanced training-set sizes (data scarcity)", ge=2, le=1_000_000)
    imbalance_fracs: tuple[float, ...] = param((0.05, 0.2, 0.5, 0.8, 0.95), "positive fractions of the training set (class imbalance)", gt=0, lt=1)
    imbalance_n: int = param(1024, "largest training set in the imbalance regime", ge=8, le=1_000_000)
    noise_fracs: tuple[float, ...] = param((0.0, 0.1, 0.2, 0.3, 0.4), "fractions of flipped training labels (label noise)", ge=0, le=0.5)
    n_search: int = param(2, "random-search draws of XGBoost and the MLP", ge=1, le=1000)
    random_sae: bool = param(True, "also probe a random-init SAE (control)")
    cache: bool = param(True, "cache MiniLM representations under the data folder")
    n_threads: Optional[int] = param(1, "torch/BLAS threads (None: leave as is)", ge=1, le=1024)
    PROFILE_DEFAULTS = {
        "cpu": dict(datasets=CPU_DATASETS, max_rows=1000, d_sae=3072, sae_steps=400, tokens_per_text=8, n_search=3,
                    k_values=(1, 2, 4, 8, 16, 32, 64, 128), regime_k=(16, 128), baselines=BASELINES,
                    regime_baselines=("logreg", "pca", "knn"), regimes=REGIMES),
        "full": dict(max_rows=5000, d_sae=16_384, sae_steps=20_000, sae_batch_size=2048, n_search=10,
                     k_values=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512), regime_k=(16, 128), baselines=BASELINES,
                     regime_baselines=BASELINES, regimes=REGIMES, scarcity_n=(2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
                     n_seeds=5),
    }
    def validate(self):
        for field, allowed in (("baselines", BASELINES), ("regime_baselines", BASELINES), ("regimes", REGIMES)):
            bad = sorted(set(getattr(self, field)) - set(allowed))
            if bad: raise ConfigError(f"parameter '{field}': {bad} not allowed; choose a subset of {list(allowed)}")
        if not self.datasets: raise ConfigError("parameter 'datasets': give at least one dataset")
        if not self.baselines: raise ConfigError("parameter 'baselines': give at least one baseline")
        if not self.k_values: raise ConfigError("parameter 'k_values': give at least one k")
        for field in ("k_values", "regime_k"):
            if max(getattr(self, field) or (1,)) > self.d_sae: raise ConfigError(f"parameter '{field}': every k must be <= d_sae ({self.d_sae})")
        if self.sae_k > self.d_sae: raise ConfigError(f"parameter 'sae_k': must be <= d_sae ({self.d_sae})")


# %%
cfg = Config.from_namespace(globals())
cfg

# %%
test_fail(lambda: Config.from_params("smoke", baselines=["svm"]), contains="parameter 'baselines'")
test_fail(lambda: Config.from_params("smoke", regimes=["drift"]), contains="parameter 'regimes'")
test_fail(lambda: Config.from_params("smoke", k_values=[4096]), contains="'k_values'")
test_fail(lambda: Config.from_params("smoke", pooling="max"), contains="'pooling'")
test_fail(lambda: Config.from_params("smoke", noise_fracs=[0.7]), contains="'noise_fracs'")
test_eq(Config.from_params("cpu").regimes, REGIMES)


# %% [markdown]
# ## Representations: MiniLM hidden states
#
# Each text goes through MiniLM once, truncated to `max_length` tokens. A forward hook stops the encoder
# after the requested layer (the later layers cannot change it), keep the pooled sentence vector that the probes see
# (the mean over non-padding tokens, or the `[CLS]` token) and a few random token activations per text for
# training the SAE. Both are cached on disk, keyed by dataset, layer, pooling, row cap, truncation and seed.

# %%
#| export
def name_key(name:str) -> int:
    "A stable integer key for a string (for `derive_seed`, which reads only 8 bytes of a string key)."
    return zlib.crc32(name.encode())

def minilm_features(texts, tok, model, layer:int=4, pooling:str="mean", max_length:int=64, batch_size:int=64,
                    tokens_per_text:int=0, seed:int=0, progress:bool=False) -> tuple[np.ndarray, np.ndarray]:
    "Pooled hidden states `[N, 384]` of MiniLM's `layer` and a random sample of token activations `[M, 384]` (up to `tokens_per_text` per text)."
    import torch
    from tqdm.auto import tqdm
    if pooling not in ("mean", "cls"): raise ValueError(f"pooling must be 'mean' or 'cls', got {pooling!r}")
    if isinstance(texts, str): raise TypeError("texts must be a list of strings, not one string")
    n_layers = len(model.encoder.layer)
    if not 0 <= layer <= n_layers: raise ValueError(f"layer must be in 0..{n_layers}, got {layer}")
    rng = np.random.default_rng(seed)
    pooled, toks = [], []
    site = model.embeddings if layer == 0 else model.encoder.layer[layer - 1]
    grab = {}
    class _Stop(Exception): pass
    def hook(mod, inp, out):                                    # the hidden state after `layer`; later layers are skipped
        grab["h"] = out[0] if isinstance(out, tuple) else out
        raise _Stop
    handle = site.register_forward_hook(hook)
    try:
        with torch.no_grad():
            for s in tqdm(range(0, len(texts), batch_size), desc="MiniLM", disable=not progress, leave=False):
                enc = tok([str(t) for t in texts[s:s + batch_size]], padding=True, truncation=True, max_length=max_length, return_tensors="pt")
                try: model(**enc)
                except _Stop: pass
                hs = grab.pop("h").float()
                m = enc["attention_mask"].bool()
                if pooling == "mean":
                    mf = m.unsqueeze(-1).float(); pooled.append(((hs * mf).sum(1) / mf.sum(1).clamp(min=1)).numpy())
                else: pooled.append(hs[:, 0].numpy())
                if tokens_per_text:
                    for i in range(hs.shape[0]):
                        h = hs[i][m[i]].numpy()
                        toks.append(h[rng.choice(len(h), size=min(tokens_per_text, len(h)), replace=False)])
    finally:
        handle.remove()
    d = model.config.hidden_size
    return (np.concatenate(pooled).astype(np.float32) if pooled else np.zeros((0, d), np.float32),
            np.concatenate(toks).astype(np.float32) if toks else np.zeros((0, d), np.float32))


# %% [markdown]
# Stopping early changes nothing: the truncated encoder gives exactly the full model's hidden state, and
# mean pooling ignores the padding of a shorter text in the batch.

# %%
from trustlib.models import load_minilm
import torch

# %%
_tok, _model = load_minilm()
_texts = ["The film was a delight from start to finish.", "Spam! Win a free cruise now, reply YES", "Ada Lovelace"]
_p, _t = minilm_features(_texts, _tok, _model, layer=4, tokens_per_text=2, seed=0)
with torch.no_grad():
    _enc = _tok(_texts[2:], return_tensors="pt"); _ref = _model(**_enc).hidden_states[4][0].mean(0).numpy()
test_eq(_p.shape, (3, 384)); test_eq(_t.shape, (6, 384))
test_close(_p[2], _ref, eps=1e-4)
test_close(minilm_features(_texts, _tok, _model, layer=6)[0][2], _model(**_enc).hidden_states[6][0].mean(0).detach().numpy(), eps=1e-4)
with torch.no_grad(): test_close(_model(**_enc).hidden_states[6][0].mean(0).numpy(), _model(**_enc).last_hidden_state[0].mean(0).numpy(), eps=1e-5)   # the model runs whole again
test_close(minilm_features(_texts, _tok, _model, layer=4, pooling="cls")[0][2], _model(**_enc).hidden_states[4][0, 0].detach().numpy(), eps=1e-4)


# %%
#| export
def _atomic_savez(path:Path, **arrays):
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}.npz")
    np.savez(tmp, **arrays); os.replace(tmp, path)

def load_representations(name:str, tok, model, *, layer:int, pooling:str, max_rows:int|None, max_length:int,
                         tokens_per_text:int, seed:int, cache:bool=True, cache_dir:str|Path|None=None) -> dict:
    "Pooled MiniLM representations `X`, labels `y` and SAE-training tokens of one sae-probes dataset (or OOD set), cached as .npz."
    from trustlib.data import load_sae_probes, data_dir
    key = f"{name}__L{layer}__{pooling}__r{max_rows}__t{max_length}__k{tokens_per_text}__s{seed}"
    path = Path(cache_dir or (data_dir() / "sae_probing")) / f"{key}.npz"
    if cache and path.is_file():
        with np.load(path, allow_pickle=False) as z: return dict(X=z["X"], y=z["y"], tokens=z["tokens"].astype(np.float32), cached=True)
    df = load_sae_probes(name, max_rows=max_rows, seed=seed)
    if df.attrs.get("data_type") != "Binary Classification" or df["y"].nunique() != 2:
        raise ConfigError(f"dataset {name!r} is not a binary classification task ({df.attrs.get('data_type')})")
    X, T = minilm_features(df["prompt"].astype(str).tolist(), tok, model, layer=layer, pooling=pooling, max_length=max_length,
                           tokens_per_text=tokens_per_text, seed=seed)
    T = T.astype(np.float16)                                    # tokens are stored in half precision: a cached and a fresh run agree
    out = dict(X=X, y=df["y"].to_numpy().astype(np.int64), tokens=T.astype(np.float32))
    if cache:
        try: _atomic_savez(path, X=X, y=out["y"], tokens=T)
        except OSError: pass                                    # a read-only data folder: no cache, same result
    return {**out, "cached": False}


# %%
import tempfile

# %%
_d = tempfile.mkdtemp()
_r1 = load_representations("96_spam_is", _tok, _model, layer=2, pooling="mean", max_rows=40, max_length=32, tokens_per_text=2, seed=1, cache_dir=_d)
_r2 = load_representations("96_spam_is", _tok, _model, layer=2, pooling="mean", max_rows=40, max_length=32, tokens_per_text=2, seed=1, cache_dir=_d)
test_eq((_r1["cached"], _r2["cached"]), (False, True))
assert np.array_equal(_r1["X"], _r2["X"]); test_eq(_r1["y"], _r2["y"]); test_eq(sorted(set(_r1["y"].tolist())), [0, 1])
test_eq(_r1["tokens"].shape, (80, 384)); assert np.array_equal(_r1["tokens"], _r2["tokens"])


# %% [markdown]
# ## Cross-validation: the paper's n-dependent rule
#
# Hyperparameters of every probe are chosen by validation AUC on the training set alone. With $n\le 12$
# training examples the splits are leave-2-out, keeping only the pairs with one example of each class (so
# that the AUC of a split is defined) whose remaining training part still has both classes; with
# $n < 128$ six-fold stratified cross-validation; otherwise one stratified holdout of $\min(\lceil 0.2n\rceil, 100)$ examples.

# %%
#| export
def cv_splits(y, rng:np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    "(train, validation) index pairs by the paper's rule: leave-2-out (n <= 12), 6-fold stratified (n < 128), else one holdout of min(20%, 100)."
    from sklearn.model_selection import StratifiedKFold, train_test_split
    y = np.asarray(y); n = len(y); idx = np.arange(n)
    if len(np.unique(y)) < 2: raise ValueError("cross-validation needs both classes in the training set")
    if n <= 12:
        out = []
        for i in range(n):
            for j in range(i + 1, n):
                if y[i] == y[j]: continue
                tr = np.setdiff1d(idx, [i, j])
                if len(np.unique(y[tr])) == 2: out.append((tr, np.array([i, j])))
        return out
    if n < 128:
        folds = int(min(6, np.bincount(y).min()))
        if folds < 2: raise ValueError("6-fold cross-validation needs at least 2 examples of each class")
        skf = StratifiedKFold(n_splits=folds, shuffle=True, random_state=int(rng.integers(2**31)))
        return [(tr, va) for tr, va in skf.split(idx, y)]
    n_val = min(int(math.ceil(0.2 * n)), 100)
    tr, va = train_test_split(idx, test_size=n_val, stratify=y, random_state=int(rng.integers(2**31)))
    return [(np.sort(tr), np.sort(va))]


# %%
_rng = np.random.default_rng(0)
_y10 = np.array([0, 1] * 5); _s = cv_splits(_y10, _rng)
test_eq(len(_s), 25)                                                      # 5 × 5 mixed pairs
assert all(len(va) == 2 and set(_y10[va]) == {0, 1} and set(_y10[tr]) == {0, 1} and len(tr) == 8 for tr, va in _s)
_y100 = np.array([0] * 60 + [1] * 40); _s = cv_splits(_y100, _rng)
test_eq(len(_s), 6); test_eq(sorted(np.concatenate([va for _, va in _s]).tolist()), list(range(100)))
assert all(abs(_y100[va].mean() - 0.4) < 0.1 for _, va in _s)
_y1000 = np.array([0] * 700 + [1] * 300); _s = cv_splits(_y1000, _rng)
test_eq(len(_s), 1); test_eq(len(_s[0][1]), 100); test_eq(int(_y1000[_s[0][1]].sum()), 30)
test_eq(len(cv_splits(np.array([0] * 100 + [1] * 100), _rng)[0][1]), 40)  # 20% of 200 < 100
test_fail(lambda: cv_splits(np.zeros(20, int), _rng), contains="both classes")

# %% [markdown]
# ## Probes
#
# Each probe family has a hyperparameter grid and is scored on the validation splits; the best grid point
# (mean validation AUC over splits) is refit on the whole training set. The grids follow the paper's code:
#
# | probe | preprocessing | grid |
# |---|---|---|
# | `logreg` | standardise | L2, $C\in$ logspace(5, −5, 10) |
# | `pca` | standardise, PCA | components ∈ unique(round(logspace₂(0, log₂ min(n, d, 100), 10))), logistic regression |
# | `knn` | standardise | $k\in$ unique(round(logspace₂(0, log₂ min(n − 1, 100), 8))) |
# | `xgboost` | — | random search: trees ∈ {50, 100}, depth ∈ {2, 3, 4}, learning rate ∈ logspace(−2, 0), reg_alpha ∈ logspace(−3, 1), subsampling |
# | `mlp` | standardise | random search: hidden sizes {16, 32, 64}ⁿ (n ≤ 3), alpha ∈ logspace(−5, −2, 5), learning rate; 100 epochs |
# | `sae_k{k}` | SAE latents | top-k latents by the class-mean gap, L1 logistic regression, $C\in$ logspace(5, −5, 10) |
#
# The L1 probes use `liblinear` rather than the paper's `saga` (same objective, faster on few features).

# %%
#| export
C_GRID = tuple(float(c) for c in np.logspace(5, -5, 10))

def _auc(y, s) -> float:
    from sklearn.metrics import roc_auc_score
    y = np.asarray(y)
    return float(roc_auc_score(y, s)) if len(np.unique(y)) == 2 else float("nan")

def _lr_path(Xtr, ytr, Xva, penalty="l2", seed=0):
    "Validation scores of logistic regression for every C of C_GRID (L2: a warm-started lbfgs path)."
    import warnings
    from sklearn.linear_model import LogisticRegression
    from sklearn.exceptions import ConvergenceWarning
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if penalty == "l2":
            m = LogisticRegression(C=C_GRID[-1], max_iter=1000, warm_start=True)
            for c in sorted(C_GRID):
                m.set_params(C=c); m.fit(Xtr, ytr); out[c] = m.decision_function(Xva)
        else:
            for c in C_GRID:
                m = LogisticRegression(C=c, penalty="l1", solver="liblinear", max_iter=1000, random_state=seed).fit(Xtr, ytr)
                out[c] = m.decision_function(Xva)
    return [out[c] for c in C_GRID]

def _lr(c, penalty="l2", seed=0):
    from sklearn.linear_model import LogisticRegression
    if penalty == "l2": return LogisticRegression(C=c, max_iter=1000)
    return LogisticRegression(C=c, penalty="l1", solver="liblinear", max_iter=1000, random_state=seed)

def _std(X): from sklearn.preprocessing import StandardScaler; return StandardScaler().fit(X)

def rank_latents(Z, y) -> np.ndarray:
    "Latent indices sorted by |mean(Z[y = 1]) − mean(Z[y = 0])|, largest first (ties: lower index first)."
    Z, y = np.asarray(Z, float), np.asarray(y)
    gap = np.abs(Z[y == 1].mean(0) - Z[y == 0].mean(0))
    return np.argsort(-gap, kind="stable")

@dataclass
class Probe:
    "A fitted probe: method name, chosen hyperparameters, mean validation AUC, and a scorer for new inputs."
    method: str
    params: dict
    val_auc: float
    model: object = None
    cols: np.ndarray|None = None      # SAE probes: the kept latents
    scaler: object = None
    def decision_function(self, X) -> np.ndarray:
        X = np.asarray(X)
        if self.cols is not None: X = X[:, self.cols]
        if self.scaler is not None: X = self.scaler.transform(X)
        m = self.model
        if hasattr(m, "decision_function"): return m.decision_function(X)
        return m.predict_proba(X)[:, 1]

def _grids(method, n, d, rng, n_search):
    if method == "pca":
        m = max(1, min(n, d, 100)); return sorted({int(round(v)) for v in np.logspace(0, math.log2(m), 10, base=2)})
    if method == "knn":
        m = max(1, min(n - 1, 100)); return sorted({int(round(v)) for v in np.logspace(0, math.log2(m), 8, base=2)})
    if method == "xgboost":
        return [dict(n_estimators=int(rng.choice([50, 100])), max_depth=int(rng.choice([2, 3, 4])),
                     learning_rate=float(rng.choice(np.logspace(-2, 0, 5))), reg_alpha=float(rng.choice(np.logspace(-3, 1, 5))),
                     subsample=float(rng.choice([0.7, 1.0])), colsample_bytree=float(rng.choice([0.5, 1.0]))) for _ in range(n_search)]
    if method == "mlp":
        sizes = [(16,), (32,), (64,), (16, 16), (32, 32), (64, 64), (16, 16, 16), (32, 32, 32), (64, 64, 64)]
        return [dict(hidden_layer_sizes=sizes[int(rng.integers(len(sizes)))], alpha=float(rng.choice(np.logspace(-5, -2, 5))),
                     learning_rate_init=float(rng.choice([1e-3, 3e-3, 1e-2]))) for _ in range(n_search)]
    raise ValueError(method)

def _make(method, p, seed):
    if method == "pca": return _lr(1.0)
    if method == "knn":
        from sklearn.neighbors import KNeighborsClassifier; return KNeighborsClassifier(n_neighbors=p)
    if method == "xgboost":
        try: from xgboost import XGBClassifier
        except ImportError as e: raise ResourceUnavailable("the xgboost baseline needs the xgboost package (pip install xgboost)") from e
        return XGBClassifier(**p, tree_method="hist", max_bin=64, n_jobs=1, random_state=seed, verbosity=0)
    if method == "mlp":
        from sklearn.neural_network import MLPClassifier
        return MLPClassifier(**p, max_iter=100, early_stopping=False, random_state=seed)
    raise ValueError(method)

def _scores(m, X): return m.decision_function(X) if hasattr(m, "decision_function") else m.predict_proba(X)[:, 1]

def fit_probe(method:str, # 'logreg', 'pca', 'knn', 'xgboost', 'mlp' or 'sae_k<k>' (then X are SAE latents)
              X, y, *, rng:np.random.Generator, n_search:int=10) -> Probe:
    "A probe of family `method` with hyperparameters chosen by mean validation AUC over `cv_splits`, refit on all of (X, y)."
    import warnings
    from sklearn.exceptions import ConvergenceWarning
    X, y = np.asarray(X, np.float32), np.asarray(y)
    splits = cv_splits(y, rng)
    seed = int(rng.integers(2**31))
    n, d = X.shape
    cols = None
    if method.startswith("sae_k"):
        k = int(method[5:]); cols = rank_latents(X, y)[:min(k, d)]; X = X[:, cols]
    def fold_scores(Xtr, ytr, Xva):
        if method == "logreg" or cols is not None:
            if method == "logreg": s = _std(Xtr); Xtr, Xva = s.transform(Xtr), s.transform(Xva)
            return _lr_path(Xtr, ytr, Xva, penalty="l1" if cols is not None else "l2", seed=seed)
        if method in ("pca", "knn"):
            s = _std(Xtr); Xtr, Xva = s.transform(Xtr), s.transform(Xva)
        if method == "pca":
            from sklearn.decomposition import PCA
            ok = [c for c in grid if c <= min(len(Xtr), d)] or [1]
            p = PCA(n_components=max(ok), random_state=0).fit(Xtr)
            Ptr, Pva = p.transform(Xtr), p.transform(Xva)
            return [_make("pca", c, seed).fit(Ptr[:, :c], ytr).decision_function(Pva[:, :c]) if c <= Ptr.shape[1] else None for c in grid]
        if method == "knn":
            return [_make("knn", c, seed).fit(Xtr, ytr).predict_proba(Xva)[:, 1] if c < len(Xtr) else None for c in grid]
        return [_scores(_make(method, p, seed).fit(Xtr, ytr), Xva) for p in grid]
    grid = C_GRID if (method == "logreg" or cols is not None) else _grids(method, int(min(len(tr) for tr, _ in splits)), d, rng, n_search)
    aucs = np.full((len(grid), len(splits)), np.nan)
    with warnings.catch_warnings():
        for w in (ConvergenceWarning, UserWarning, FutureWarning): warnings.simplefilter("ignore", w)
        for j, (tr, va) in enumerate(splits):
            for i, s in enumerate(fold_scores(X[tr], y[tr], X[va])):
                if s is not None: aucs[i, j] = _auc(y[va], s)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning); mean = np.nanmean(aucs, axis=1)
        best = int(np.nanargmax(mean)) if np.isfinite(mean).any() else 0
        p = grid[best]
        scaler = _std(X) if method in ("logreg", "pca", "knn", "mlp") else None
        Xs = scaler.transform(X) if scaler is not None else X
        if method == "logreg" or cols is not None:
            model = _lr(p, "l1" if cols is not None else "l2", seed).fit(Xs, y); params = dict(C=p)
        elif method == "pca":
            from sklearn.decomposition import PCA
            from sklearn.pipeline import make_pipeline
            model = make_pipeline(PCA(n_components=min(p, n, d), random_state=0), _lr(1.0)).fit(Xs, y); params = dict(n_components=p)
        else:
            model = _make(method, p, seed).fit(Xs, y)
            params = dict(k=p) if method == "knn" else dict(p)
    return Probe(method, params, float(mean[best]) if np.isfinite(mean[best]) else float("nan"), model, cols, scaler)


# %% [markdown]
# A planted, linearly separable feature: every probe family reaches a test AUC of about 1, and the SAE probe
# finds the planted latent (ranked first) even with $k = 1$.

# %%
_rng = np.random.default_rng(0)
_Xp = _rng.standard_normal((400, 20)).astype(np.float32); _yp = (_Xp[:, 3] > 0).astype(int)
_Xp[:, 3] += np.where(_yp == 1, 1.0, -1.0)                   # a margin of 2 between the classes
_tr, _te = np.arange(300), np.arange(300, 400)
for _m in ("logreg", "pca", "knn", "xgboost", "mlp"):
    _p = fit_probe(_m, _Xp[_tr], _yp[_tr], rng=np.random.default_rng(1), n_search=3)
    assert _auc(_yp[_te], _p.decision_function(_Xp[_te])) > 0.97, _m
_Zp = np.abs(_rng.standard_normal((400, 50))) * (_rng.random((400, 50)) < 0.2); _Zp[:, 17] = 2.0 * _yp + 0.1 * _rng.random(400)
test_eq(rank_latents(_Zp[_tr], _yp[_tr])[0], 17)
_ps = fit_probe("sae_k1", _Zp[_tr], _yp[_tr], rng=np.random.default_rng(1))
test_eq(_ps.cols.tolist(), [17]); test_close(_auc(_yp[_te], _ps.decision_function(_Zp[_te])), 1.0, eps=1e-9)
_pl = fit_probe("logreg", _Xp[:10], _yp[:10], rng=np.random.default_rng(1))   # leave-2-out at n = 10
assert 0 <= _pl.val_auc <= 1 and _pl.params["C"] in C_GRID


# %% [markdown]
# ## Regime samplers
#
# From a dataset's training pool (the rows not in its test set), each regime draws its training set:
# **scarcity** a balanced set of exactly $n$ examples ($n/2$ per class); **imbalance** the largest set of at
# most `imbalance_n` examples whose positive share is the requested fraction (exactly
# $\mathrm{round}(p\,n)$ positives); **label noise** the standard training set with exactly
# $\mathrm{round}(f\,n)$ labels flipped (the test set stays clean). A cell that the pool cannot supply is
# skipped, never silently resized.

# %%
#| export
def sample_balanced(y, n:int, rng:np.random.Generator) -> np.ndarray|None:
    "Indices of a balanced sample of exactly `n` (even) examples, n/2 per class; None if the pool is too small."
    y = np.asarray(y)
    if n < 2 or n % 2: raise ValueError(f"a balanced sample needs an even n >= 2, got {n}")
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    if min(len(pos), len(neg)) < n // 2: return None
    return rng.permutation(np.concatenate([rng.choice(pos, n // 2, replace=False), rng.choice(neg, n // 2, replace=False)]))

def sample_imbalanced(y, frac:float, n_max:int, rng:np.random.Generator) -> np.ndarray|None:
    "Indices of the largest sample (<= n_max) with round(frac·n) positives, at least one of each class; None if impossible."
    y = np.asarray(y)
    if not 0 < frac < 1: raise ValueError(f"frac must be in (0, 1), got {frac}")
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    for n in range(min(n_max, len(y)), 1, -1):
        n_pos = int(round(frac * n)); n_neg = n - n_pos
        if 1 <= n_pos <= len(pos) and 1 <= n_neg <= len(neg):
            return rng.permutation(np.concatenate([rng.choice(pos, n_pos, replace=False), rng.choice(neg, n_neg, replace=False)]))
    return None

def flip_labels(y, frac:float, rng:np.random.Generator) -> np.ndarray:
    "A copy of binary labels `y` with exactly round(frac·len(y)) of them, chosen at random, flipped."
    y = np.asarray(y).copy()
    if not 0 <= frac <= 1: raise ValueError(f"frac must be in [0, 1], got {frac}")
    i = rng.choice(len(y), int(round(frac * len(y))), replace=False)
    y[i] = 1 - y[i]
    return y

def subsample(y, n:int, rng:np.random.Generator) -> np.ndarray:
    "A stratified random subset of at most `n` indices (all of them, shuffled, if n >= len(y))."
    y = np.asarray(y)
    if n >= len(y): return rng.permutation(len(y))
    from sklearn.model_selection import train_test_split
    return train_test_split(np.arange(len(y)), train_size=n, stratify=y, random_state=int(rng.integers(2**31)))[0]


# %%
_y = np.array([1] * 300 + [0] * 500); _rng = np.random.default_rng(3)
for _n in (4, 16, 64, 256):
    _i = sample_balanced(_y, _n, _rng); test_eq(len(_i), _n); test_eq(int(_y[_i].sum()), _n // 2); test_eq(len(set(_i.tolist())), _n)
test_eq(sample_balanced(_y, 1024, _rng), None)
for _f in (0.05, 0.2, 0.5, 0.8, 0.95):
    _i = sample_imbalanced(_y, _f, 500, _rng)
    test_eq(int(_y[_i].sum()), int(round(_f * len(_i)))); assert len(set(_i.tolist())) == len(_i)
test_eq(len(sample_imbalanced(_y, 0.5, 500, _rng)), 500); test_eq(len(sample_imbalanced(_y, 0.95, 500, _rng)), 316)   # 300 positives limit it
test_eq(int(_y[sample_imbalanced(_y, 0.95, 500, _rng)].sum()), 300)
_yn = np.array([0, 1] * 50)
for _f in (0.0, 0.1, 0.2, 0.3, 0.4):
    _z = flip_labels(_yn, _f, _rng); test_eq(int((_z != _yn).sum()), int(round(_f * 100)))
test_eq(_yn[:4].tolist(), [0, 1, 0, 1])                       # the input is not modified
test_eq(len(subsample(_y, 100, _rng)), 100); assert int(_y[subsample(_y, 100, _rng)].sum()) in (37, 38)   # stratified: 37.5 expected


# %% [markdown]
# ## The quiver of arrows
#
# For each dataset (and each seed and regime cell), the quiver takes the single method with the highest
# validation AUC among the allowed ones and reports its test AUC. Comparing the quiver over the baselines
# with the quiver over baselines + SAE probes asks whether SAE probes add anything that validation can find.
# Ties go to the method listed first in `allowed`, so a baseline keeps a tie against an SAE probe.

# %%
#| export
def quiver(rows:"pd.DataFrame", # one row per (cell, method): columns `by`, method, val_auc, test_auc
           allowed, # candidate methods, in tie-break order
           by=("dataset",)) -> tuple[float, float, "pd.DataFrame"]:
    "Mean test AUC of the max-validation method per group, the share of groups where an SAE probe wins, and the chosen rows."
    allowed = list(allowed)
    r = rows[rows["method"].isin(allowed) & rows["val_auc"].notna()].copy()
    if r.empty: return float("nan"), float("nan"), r
    r["_order"] = r["method"].map({m: i for i, m in enumerate(allowed)})
    r = r.sort_values([*by, "val_auc", "_order"], ascending=[True] * len(by) + [False, True], kind="stable")
    best = r.groupby(list(by), sort=True).head(1).drop(columns="_order")
    return float(best["test_auc"].mean()), float(best["method"].str.startswith("sae").mean()), best


# %%
_rows = pd.DataFrame(dict(dataset=["a", "a", "a", "b", "b", "b", "c", "c"],
                          method=["logreg", "knn", "sae_k16", "logreg", "knn", "sae_k16", "logreg", "sae_k16"],
                          val_auc=[0.90, 0.80, 0.95, 0.70, 0.75, 0.60, 0.88, 0.88],
                          test_auc=[0.91, 0.79, 0.85, 0.72, 0.70, 0.65, 0.86, 0.99]))
_m, _share, _best = quiver(_rows, ["logreg", "knn"])
test_eq(_best["method"].tolist(), ["logreg", "knn", "logreg"]); test_close(_m, (0.91 + 0.70 + 0.86) / 3, eps=1e-12); test_eq(_share, 0.0)
_m, _share, _best = quiver(_rows, ["logreg", "knn", "sae_k16"])
test_eq(_best["method"].tolist(), ["sae_k16", "knn", "logreg"])          # c: a tie, the baseline listed first keeps it
test_close(_m, (0.85 + 0.70 + 0.86) / 3, eps=1e-12); test_close(_share, 1 / 3, eps=1e-12)
_never = pd.concat([_rows, pd.DataFrame(dict(dataset=["a", "b", "c"], method="pca", val_auc=0.1, test_auc=1.0))])
test_close(quiver(_never, ["logreg", "knn", "pca"])[0], quiver(_rows, ["logreg", "knn"])[0], eps=1e-12)   # a never-chosen method changes nothing
_cells = _rows.assign(seed=[0, 1] * 4)
test_eq(len(quiver(_cells, ["logreg", "knn"], by=("dataset", "seed"))[2]), 5)   # (c, 1) has only an SAE probe


# %% [markdown]
# ## The SAE
#
# A TopK SAE (`trustlib.interp.sae`) trained on MiniLM token activations of the chosen datasets' texts,
# with the pooled sentence vectors added so that the inputs the probes encode are in its training
# distribution. Activations are scaled by one constant so that $\mathbb E\lVert x\rVert^2 = d$. The control is
# the same architecture with the same initialisation, never trained (its decoder bias set to the geometric
# median of the data, as the trained one starts). We report the fraction of variance unexplained (FVU) and
# the dead-latent fraction on held-out activations.

# %%
#| export
def train_probe_sae(X, *, d_sae:int, k:int, steps:int, batch_size:int=512, lr:float=4e-4, seed:int=0,
                    trained:bool=True, progress:bool=False):
    "A TopK SAE on activations `X` [N, d] (already scaled); `trained=False` gives the random-init control."
    import torch
    from trustlib.interp.sae import make_sae, train_sae
    X = torch.as_tensor(np.asarray(X, np.float32))
    sae = make_sae("topk", X.shape[1], d_sae, sparsity=k, seed=seed, dead_after=max(1, steps * batch_size // 5))
    sae.threshold_start = max(1, steps // 2)
    if trained: train_sae(sae, X, steps=steps, batch_size=batch_size, lr=lr, seed=seed, progress=progress, desc="SAE")
    else:
        sae.init_from_data(X[torch.randperm(len(X), generator=torch.Generator().manual_seed(seed))[:4096]]); sae.eval()
    return sae

def sae_encode(sae, X, batch_size:int=4096) -> np.ndarray:
    "SAE latents of `X` as a float32 array (no gradients)."
    import torch
    out = []
    with torch.no_grad():
        for s in range(0, len(X), batch_size): out.append(sae.encode(torch.as_tensor(np.asarray(X[s:s + batch_size], np.float32))).numpy())
    return np.concatenate(out) if out else np.zeros((0, sae.d_sae), np.float32)

def sae_fit_stats(sae, X) -> dict[str, float]:
    "FVU, mean L0 and dead-latent fraction of `sae` on activations `X`."
    import torch
    Z = sae_encode(sae, X)
    with torch.no_grad(): Xh = sae.decode(torch.from_numpy(Z)).numpy()
    X = np.asarray(X, np.float64)
    return dict(fvu=float(((X - Xh) ** 2).sum() / ((X - X.mean(0)) ** 2).sum()), l0=float((Z != 0).sum(1).mean()),
                dead_frac=float(((Z != 0).sum(0) == 0).mean()))


# %% [markdown]
# On synthetic data built from 16 sparse directions, the trained SAE reconstructs far better than the
# random-init control, and both keep exactly $k$ latents per input.

# %%
_g = np.random.default_rng(0); _D = _g.standard_normal((16, 24)); _D /= np.linalg.norm(_D, axis=1, keepdims=True)
_A = (_g.random((4000, 16)) < 0.15) * _g.random((4000, 16)) * 3; _Xs = (_A @ _D).astype(np.float32)
_tr_sae = train_probe_sae(_Xs[:3000], d_sae=48, k=4, steps=300, batch_size=256, lr=3e-3, seed=0)
_rd_sae = train_probe_sae(_Xs[:3000], d_sae=48, k=4, steps=300, seed=0, trained=False)
_st, _sr = sae_fit_stats(_tr_sae, _Xs[3000:]), sae_fit_stats(_rd_sae, _Xs[3000:])
test_close(_st["l0"], 4.0, eps=0.05); test_close(_sr["l0"], 4.0, eps=0.05)
assert _st["fvu"] < 0.5 * _sr["fvu"], (_st, _sr)


# %% [markdown]
# ## The experiment driver
#
# Per seed and dataset: a stratified test split (`test_frac`), the training pool the rest. The standard
# regime trains every baseline and every SAE-probe k on at most `n_train` pool examples; the same probes
# are scored on the dataset's out-of-distribution file where the wheel has one (covariate shift). The
# scarcity, imbalance and noise regimes train the regime baselines and the SAE probes at `regime_k` on
# their own samples of the pool. Each row of the result records the cell, the method, its validation AUC
# and its test AUC.

# %%
#| export
def probe_cell(Xb, Zs:dict, y, tr, te, methods, *, rng, n_search, ood=None, extra=None) -> list[dict]:
    "Train every method on rows `tr` (baselines on `Xb`, SAE probes on the latents in `Zs`) and score them on `te` (and on `ood`)."
    rows = []
    for m in methods:
        if m.startswith(("sae_k", "rand_k")):
            src, kk = m.rsplit("_k", 1); Z = Zs[src]
            p = fit_probe(f"sae_k{kk}", Z[tr], y[tr], rng=rng); Zte = Z[te]; Zo = ood[src] if ood is not None else None
        else:
            p = fit_probe(m, Xb[tr], y[tr], rng=rng, n_search=n_search); Zte = Xb[te]; Zo = ood["X"] if ood is not None else None
        r = dict(**(extra or {}), method=m, val_auc=p.val_auc, test_auc=_auc(y[te], p.decision_function(Zte)))
        if ood is not None: r["ood_auc"] = _auc(ood["y"], p.decision_function(Zo))
        rows.append(r)
    return rows

def _ood_name(name): return f"{name}_OOD"


# %%
#| export
def _methods(baselines, ks, random_sae):
    return [*baselines, *[f"sae_k{k}" for k in ks], *([f"rand_k{k}" for k in ks] if random_sae else [])]

def run_probes(cfg, reps:dict, codes:dict, ood:dict, progress:bool=True) -> "pd.DataFrame":
    "All probing cells of the experiment as one long table (dataset, seed, regime, level, method, val_auc, test_auc, ood_auc)."
    import pandas as pd
    from tqdm.auto import tqdm
    rows = []
    jobs = [(s, name) for s in range(cfg.n_seeds) for name in reps]
    for s, name in tqdm(jobs, desc="probing", disable=not progress):
        X, y = reps[name]["X"], reps[name]["y"]
        Zs = {"sae": codes[name]["sae"], **({"rand": codes[name]["rand"]} if cfg.random_sae else {})}
        rng = np.random.default_rng(derive_seed(cfg.seed, s, name_key(name)))
        from sklearn.model_selection import train_test_split
        pool, te = train_test_split(np.arange(len(y)), test_size=cfg.test_frac, stratify=y, random_state=int(rng.integers(2**31)))
        base = dict(dataset=name, seed=s)
        std = pool[subsample(y[pool], cfg.n_train, rng)]
        o = None
        if "ood" in cfg.regimes and name in ood:
            o = {"X": ood[name]["X"], "y": ood[name]["y"], **{k: v for k, v in ood[name]["codes"].items() if k in Zs}}
        rows += probe_cell(X, Zs, y, std, te, _methods(cfg.baselines, cfg.k_values, cfg.random_sae), rng=rng, n_search=cfg.n_search,
                           ood=o, extra=dict(base, regime="standard", level=float(len(std))))
        rmeth = _methods(cfg.regime_baselines, cfg.regime_k, False)      # the random-init control runs in the standard regime
        if "scarcity" in cfg.regimes:
            for n in cfg.scarcity_n:
                i = sample_balanced(y[pool], n, rng)
                if i is None: continue
                rows += probe_cell(X, Zs, y, pool[i], te, rmeth, rng=rng, n_search=cfg.n_search, extra=dict(base, regime="scarcity", level=float(n)))
        if "imbalance" in cfg.regimes:
            for f in cfg.imbalance_fracs:
                i = sample_imbalanced(y[pool], f, cfg.imbalance_n, rng)
                if i is None: continue
                rows += probe_cell(X, Zs, y, pool[i], te, rmeth, rng=rng, n_search=cfg.n_search, extra=dict(base, regime="imbalance", level=float(f)))
        if "noise" in cfg.regimes:
            for f in cfg.noise_fracs:
                yn = y.copy(); yn[std] = flip_labels(y[std], f, rng)     # training labels flipped, the test labels stay clean
                rows += probe_cell(X, Zs, yn, std, te, rmeth, rng=rng, n_search=cfg.n_search, extra=dict(base, regime="noise", level=float(f)))
    return pd.DataFrame(rows)


# %% [markdown]
# ## Claims and their rules (stated before the run)
#
# All differences are paired: for each (dataset, seed) unit we average the difference over the regime's
# cells, then take a percentile-bootstrap 95 % interval over the units.
#
# 1. **Headline — adding SAE probes to the quiver does not raise mean test AUC** (paper: 0.9400 → 0.9367,
#    standard regime; also lower under scarcity and imbalance). Measured: Δ = quiver(baselines + SAE probes)
#    − quiver(baselines), pooled over the standard, scarcity, imbalance and noise cells. Reproduced if the
#    interval's upper end is below +0.01 (a gain of one AUC point is excluded); inconclusive if the interval
#    straddles +0.01; not reproduced if it lies wholly above.
# 2. **SAE probes do not beat logistic regression** in each regime (paper, standard: SAE 16k k = 128
#    0.9210 vs logistic regression 0.9414): Δ = AUC(SAE probe, k = 128 or the largest k) − AUC(logistic
#    regression), same rule (upper end below +0.01). One verdict per regime: standard, scarcity, imbalance,
#    label noise, covariate shift (the OOD AUC).
# 3. **Label noise degrades logistic regression** (0.941 → 0.905 → 0.757 at 0, 0.2, 0.4): the drop
#    AUC(0) − AUC(0.4) must be above 0.02 (reproduced) or above 0 (partially).
# 4. **Control — the trained SAE's latents beat a random-init SAE's** (a condition of the setup, not a
#    claim of the paper): Δ = AUC(trained, k = 16 or the smallest regime k) − AUC(random, same k) in the
#    standard regime must be above 0.01 (reproduced) or above 0 (partially).
# 5. **Interpretability wins matched by baselines** and **newer SAE architectures do not close the gap**:
#    not testable offline (manual case studies on Gemma SAE latents; SAEBench SAEs on Gemma-2-2B).

# %%
#| export
def _paired(df, regime, a, b, col="test_auc", rng_seed=0):
    "Per (dataset, seed) mean of AUC(a) − AUC(b) over the regime's cells, with a bootstrap interval over the units."
    from trustlib.results import bootstrap_ci
    d = df[df["regime"].isin([regime] if isinstance(regime, str) else regime)]
    w = d.pivot_table(index=["dataset", "seed", "regime", "level"], columns="method", values=col)
    if a not in w or b not in w: return None
    u = (w[a] - w[b]).dropna().groupby(level=["dataset", "seed"]).mean()
    return bootstrap_ci(u.to_numpy(), seed=rng_seed) if len(u) else None

def quiver_deltas(df, baselines, sae_methods, regimes=("standard",)) -> "pd.Series":
    "Per (dataset, seed): mean over the regimes' cells of quiver(baselines + SAE) − quiver(baselines) test AUC."
    import pandas as pd
    d = df[df["regime"].isin(regimes)]
    by = ("dataset", "seed", "regime", "level")
    _, _, b0 = quiver(d, [m for m in baselines if m in set(d["method"])], by=by)
    _, _, b1 = quiver(d, [m for m in baselines if m in set(d["method"])] + list(sae_methods), by=by)
    j = b0.set_index(list(by))["test_auc"].rename("base").to_frame().join(b1.set_index(list(by))["test_auc"].rename("with_sae"))
    return (j["with_sae"] - j["base"]).groupby(level=["dataset", "seed"]).mean()

def claims(df, cfg) -> list:
    "The verdicts, graded by the rules stated before the run."
    from trustlib.results import judge, Rule, bootstrap_ci
    V = []
    ran = set(df["regime"])
    kmax = max(cfg.regime_k) if cfg.regime_k else max(cfg.k_values)
    sae_all = sorted({m for m in df["method"] if m.startswith("sae_")})
    hard = [r for r in ("standard", "scarcity", "imbalance", "noise") if r in ran]
    qd = quiver_deltas(df, BASELINES, sae_all, regimes=hard)
    e = bootstrap_ci(qd.to_numpy(), seed=0)
    _, share, _ = quiver(df[df.regime == "standard"], [*[b for b in BASELINES if b in cfg.baselines], *sae_all], by=("dataset", "seed"))
    no_gain = Rule("<", 0.01, what="Δ AUC")
    V.append(judge("Adding SAE probes to a validation-selected quiver of baselines does not raise mean test AUC",
                   "0.9400 → 0.9367 (standard, Gemma-2-9B); SAE chosen on 14.2% of datasets",
                   f"Δ = quiver(+SAE) − quiver(baselines) = {e} over {', '.join(hard)}; SAE chosen on {share:.1%} of standard cells",
                   rule=no_gain, value=e, headline=True,
                   reason="Δ AUC is quiver(baselines + SAE probes) − quiver(baselines), paired per dataset and seed; the rule excludes a gain of 0.01"))
    paper = dict(standard="logreg 0.9414 vs SAE 16k k=128 0.9210", scarcity="logreg 0.8358 vs SAE 16k k=128 0.8134 (mean over n)",
                 imbalance="logreg 0.9294 vs SAE 16k k=128 0.9109 (mean over ratios)", noise="SAE probes no better than baselines (paper's plots)",
                 ood="baseline 0.826 vs SAE 0.723 (mean over 8 OOD sets)")
    for reg in ("standard", "scarcity", "imbalance", "noise", "ood"):
        regime = "standard" if reg == "ood" else reg
        col = "ood_auc" if reg == "ood" else "test_auc"
        k = max(cfg.k_values) if regime == "standard" and reg != "ood" else kmax
        if reg == "ood" and f"sae_k{k}" not in set(df["method"]): k = max(cfg.k_values)
        claim = f"SAE probes (k = {k}) do not beat logistic regression: {reg if reg != 'ood' else 'covariate shift'}"
        ok = (regime in ran) and (reg != "ood" or ("ood_auc" in df and df["ood_auc"].notna().any()))
        e = _paired(df, regime, f"sae_k{k}", "logreg", col=col) if ok else None
        if e is None:
            V.append(judge(claim, paper[reg], "not run at this profile", reproduced=False, inconclusive=True,
                           rule_text="reproduced if the 95% interval of AUC(SAE) − AUC(logreg) lies below +0.01", reason="the regime is not run at this profile"))
            continue
        d = df[df.regime == regime]
        a, b = d[d.method == f"sae_k{k}"][col].mean(), d[d.method == "logreg"][col].mean()
        V.append(judge(claim, paper[reg], f"SAE {a:.3f} vs logreg {b:.3f}; Δ = {e}", rule=no_gain, value=e,
                       reason="Δ AUC is AUC(SAE probe) − AUC(logistic regression), paired per dataset and seed"))
    if "noise" in ran:
        d = df[(df.regime == "noise") & (df.method == "logreg")]
        w = d.pivot_table(index=["dataset", "seed"], columns="level", values="test_auc")
        lo_, hi_ = min(w.columns), max(w.columns)
        e = bootstrap_ci((w[lo_] - w[hi_]).dropna().to_numpy(), seed=0)
        V.append(judge("Label noise lowers the logistic-regression AUC", "0.941 / 0.905 / 0.757 at noise 0 / 0.2 / 0.4",
                       " / ".join(f"{w[c].mean():.3f}" for c in w.columns) + f" at noise {' / '.join(f'{c:g}' for c in w.columns)}; drop {e}",
                       rule=Rule(">", 0.02, 0.0, what=f"AUC(noise {lo_:g}) − AUC(noise {hi_:g})"), value=e))
    else:
        V.append(judge("Label noise lowers the logistic-regression AUC", "0.941 / 0.905 / 0.757 at noise 0 / 0.2 / 0.4", "not run at this profile",
                       reproduced=False, inconclusive=True, rule_text="reproduced if the drop AUC(0) − AUC(0.4) > 0.02", reason="the regime is not run at this profile"))
    kc = min(cfg.regime_k or cfg.k_values)
    e = _paired(df, "standard", f"sae_k{kc}", f"rand_k{kc}") if cfg.random_sae else None
    if e is None:
        V.append(judge("[control] Trained SAE latents probe better than random-init SAE latents", "not reported (a condition of the setup)",
                       "control not run", reproduced=False, inconclusive=True, rule_text="reproduced if AUC(trained) − AUC(random) > 0.01",
                       reason="random_sae is off"))
    else:
        V.append(judge("[control] Trained SAE latents probe better than random-init SAE latents", "not reported (a condition of the setup)",
                       f"Δ AUC(trained − random, k = {kc}) = {e}", rule=Rule(">", 0.01, 0.0, what="Δ AUC"), value=e,
                       reason="the comparison is meaningful only if training gives the SAE latents more than random projections"))
    V.append(judge("SAE probes' interpretability wins (spurious features, dataset quality) are matched by simple baselines",
                   "case studies on Gemma Scope latents", "not measured", verdict="not_testable_offline",
                   reason="the case studies inspect specific Gemma-2-9B SAE latents by hand on chosen datasets"))
    V.append(judge("Newer SAE architectures (SAEBench SAEs on Gemma-2-2B) do not close the gap", "Section 6", "not measured",
                   verdict="not_testable_offline", reason="needs Gemma-2-2B and the SAEBench SAEs (hub downloads, GPU)"))
    return V


# %% [markdown]
# The rules on crafted tables with known answers: SAE probes that never win and a quiver that never
# changes is reproduced; an SAE probe two AUC points better than logistic regression on every dataset is
# not reproduced; a noisy tie that straddles the tolerance is inconclusive.

# %%
def _crafted(gap, spread=0.0, n_ds=6, seeds=3, noise_drop=0.1):
    g = np.random.default_rng(0); rows = []
    for d in range(n_ds):
        for s in range(seeds):
            for reg, lev in (("standard", 100.0), ("noise", 0.0), ("noise", 0.4)):
                base = 0.9 - (noise_drop if lev == 0.4 else 0)
                for m, v in (("logreg", base), ("knn", base - 0.05), ("sae_k16", base + gap + spread * g.standard_normal()), ("rand_k16", 0.7)):
                    rows.append(dict(dataset=f"d{d}", seed=s, regime=reg, level=lev, method=m, val_auc=v, test_auc=v))
    return pd.DataFrame(rows)
_cc = Config.from_params("smoke", k_values=[16], regime_k=[16], regimes=["noise"], baselines=["logreg", "knn"])
_v = {x.claim: x.verdict for x in claims(_crafted(-0.02), _cc)}
test_eq([_v[c] for c in _v][:3], ["reproduced", "reproduced", "inconclusive"])     # scarcity not run -> inconclusive
test_eq(_v["Label noise lowers the logistic-regression AUC"], "reproduced")
test_eq(_v["[control] Trained SAE latents probe better than random-init SAE latents"], "reproduced")
_v2 = claims(_crafted(+0.02), _cc)
test_eq(_v2[0].verdict, "not_reproduced"); test_eq(_v2[1].verdict, "not_reproduced")
test_eq(claims(_crafted(0.0, spread=0.05), _cc)[1].verdict, "inconclusive")
test_eq(claims(_crafted(-0.02, noise_drop=-0.05), _cc)[6].verdict, "not_reproduced")   # noise raising AUC is never partially
test_eq(check_headline(claims(_crafted(-0.02), _cc)).headline, True)


# %% [markdown]
# ## `run`

# %%
#| export
def run(cfg:Config, progress:bool=True):
    "The whole experiment: representations, SAE (+ random control), all probing cells, tables, figures, metrics and verdicts."
    import pandas as pd
    from tqdm.auto import tqdm
    from trustlib.results import Result
    from trustlib.data import sae_probes_datasets
    if cfg.profile == "full":
        raise ResourceUnavailable("the full profile probes Gemma-2-9B / Llama-3.1-8B residual streams with Gemma Scope / LlamaScope SAEs "
                                  "(hub downloads through SAELens, a GPU); none of these is available offline. Use the cpu profile, "
                                  "or run the official sae-probes package.")
    import time
    from threadpoolctl import threadpool_limits
    from trustlib.models import load_minilm
    cpu = {}
    with torch_threads(cfg.n_threads), threadpool_limits(cfg.n_threads):
        t0 = time.process_time()
        tok, model = load_minilm()
        kw = dict(layer=cfg.layer, pooling=cfg.pooling, max_length=cfg.max_length, cache=cfg.cache)
        reps, ood = {}, {}
        ood_names = set(sae_probes_datasets(ood=True))
        for name in tqdm(cfg.datasets, desc="MiniLM representations", disable=not progress):
            reps[name] = load_representations(name, tok, model, max_rows=cfg.max_rows, tokens_per_text=cfg.tokens_per_text,
                                              seed=derive_seed(cfg.seed, "rows", name_key(name)) % 2**31, **kw)
            if "ood" in cfg.regimes and _ood_name(name) in ood_names:
                ood[name] = load_representations(_ood_name(name), tok, model, max_rows=None, tokens_per_text=0, seed=0, **kw)
        cpu["embed"] = time.process_time() - t0; t0 = time.process_time()
        # SAE training data: token activations and pooled vectors of all texts, one scale for everything
        T = np.concatenate([np.concatenate([r["tokens"], r["X"]]) for r in reps.values()])
        g = np.random.default_rng(derive_seed(cfg.seed, "sae_split")); perm = g.permutation(len(T)); n_hold = max(1, len(T) // 10)
        scale = float(np.sqrt(T.shape[1] / (T[perm[n_hold:]].astype(np.float64) ** 2).sum(1).mean()))
        Ttr, Tho = T[perm[n_hold:]] * scale, T[perm[:n_hold]] * scale
        Xho = np.concatenate([r["X"] for r in reps.values()]) * scale
        sae_seed = derive_seed(cfg.seed, "sae")
        saes = {"sae": train_probe_sae(Ttr, d_sae=cfg.d_sae, k=cfg.sae_k, steps=cfg.sae_steps, batch_size=cfg.sae_batch_size, lr=cfg.sae_lr,
                                       seed=sae_seed, progress=progress)}
        if cfg.random_sae: saes["rand"] = train_probe_sae(Ttr, d_sae=cfg.d_sae, k=cfg.sae_k, steps=1, seed=sae_seed, trained=False)
        sae_tab = pd.DataFrame({n: {**{f"tokens/{k}": v for k, v in sae_fit_stats(s, Tho).items()},
                                    **{f"pooled/{k}": v for k, v in sae_fit_stats(s, Xho).items()}} for n, s in saes.items()}).T
        sae_tab.insert(0, "training_vectors", len(Ttr))
        codes = {n: {k: sae_encode(s, r["X"] * scale) for k, s in saes.items()} for n, r in reps.items()}
        for n, o in ood.items(): o["codes"] = {k: sae_encode(s, o["X"] * scale) for k, s in saes.items()}
        cpu["sae"] = time.process_time() - t0; t0 = time.process_time()
        df = run_probes(cfg, reps, codes, ood, progress=progress)
        cpu["probe"] = time.process_time() - t0
    res = _assemble(cfg, df, sae_tab, reps, ood)
    for k, v in cpu.items(): res.metrics[f"speed/{k}_cpu_seconds"] = round(v, 2)   # CPU seconds of this process per phase
    return res

def _fmt(e): return f"{e.value:.3f} [{e.lo:.3f}, {e.hi:.3f}]" if e.has_interval else f"{e.value:.3f}"

def _assemble(cfg, df, sae_tab, reps, ood):
    import pandas as pd
    from trustlib.results import Result, bootstrap_ci
    # methods × regimes: mean test AUC, bootstrap interval over (dataset, seed) units
    long = df.assign(regime=df["regime"])
    parts = [long]
    if "ood_auc" in df and df["ood_auc"].notna().any():
        parts.append(df[df["ood_auc"].notna()].assign(regime="ood", test_auc=lambda x: x["ood_auc"]))
    allr = pd.concat(parts, ignore_index=True)
    unit = allr.groupby(["regime", "method", "dataset", "seed"])["test_auc"].mean()
    order = [r for r in ("standard", "scarcity", "imbalance", "noise", "ood") if r in set(allr["regime"])]
    table = pd.DataFrame({r: {m: _fmt(bootstrap_ci(unit.loc[r, m].to_numpy(), seed=0)) for m in unit.loc[r].index.get_level_values(0).unique()}
                          for r in order})
    # quiver table per regime
    qrows = []
    sae_all = sorted({m for m in df["method"] if m.startswith("sae_")})
    for r in order:
        d = allr[allr.regime == r]
        bl = [b for b in BASELINES if b in set(d["method"])]
        sa = [m for m in sae_all if m in set(d["method"])]
        by = ("dataset", "seed", "level") if r != "ood" else ("dataset", "seed")
        if r == "ood":   # select by in-distribution validation AUC, report the OOD AUC
            d = d.copy()
        q0, _, _ = quiver(d, bl, by=by); q1, share, best = quiver(d, bl + sa, by=by)
        qrows.append(dict(regime=r, baseline_quiver=q0, quiver_plus_sae=q1, delta=q1 - q0, sae_chosen_share=share,
                          logreg_alone=float(d[d.method == "logreg"]["test_auc"].mean()), cells=len(best)))
    qtab = pd.DataFrame(qrows).set_index("regime").round(4)
    # k sweep in the standard regime
    std = df[df.regime == "standard"]
    ks = pd.DataFrame([dict(k=int(m.rsplit("_k", 1)[1]), sae="trained" if m.startswith("sae") else "random-init", test_auc=v, dataset=d_, seed=s)
                       for m, v, d_, s in zip(std["method"], std["test_auc"], std["dataset"], std["seed"]) if "_k" in m])
    metrics = {}
    for r in order:
        for m in unit.loc[r].index.get_level_values(0).unique(): metrics[f"auc/{r}/{m}"] = float(unit.loc[r, m].mean())
    for r, row in qtab.iterrows():
        metrics[f"quiver/{r}/baseline"] = float(row.baseline_quiver); metrics[f"quiver/{r}/with_sae"] = float(row.quiver_plus_sae)
        metrics[f"quiver/{r}/sae_share"] = float(row.sae_chosen_share)
    for n, row in sae_tab.iterrows():
        for c in ("tokens/fvu", "pooled/fvu", "tokens/dead_frac"): metrics[f"sae/{n}/{c.replace('/', '_')}"] = float(row[c])
    metrics["n_datasets"] = len(reps); metrics["n_ood_sets"] = len(ood); metrics["n_cells"] = int(len(df.groupby(["dataset", "seed", "regime", "level"])))
    figures = dict(k_sweep=_fig_k(ks, std), regimes=_fig_regimes(df))
    tables = dict(auc=table, quiver=qtab, sae=sae_tab.round(4), cells=df,
                  datasets=pd.DataFrame({n: dict(rows=len(r["y"]), positive_share=round(float(r["y"].mean()), 3), ood_rows=len(ood[n]["y"]) if n in ood else 0)
                                         for n, r in reps.items()}).T)
    return Result(paper="sae_probing", config=cfg.to_dict(), metrics=metrics, verdicts=claims(df, cfg), tables=tables, figures=figures)

def _fig_k(ks, std):
    import matplotlib.pyplot as plt; import seaborn as sns
    fig, ax = plt.subplots(figsize=(6.5, 4))
    if len(ks):
        sns.lineplot(ks, x="k", y="test_auc", hue="sae", style="sae", markers=True, errorbar=("ci", 95), ax=ax)
    lr = std[std.method == "logreg"]["test_auc"]
    ax.axhline(lr.mean(), color="k", ls="--", label=f"logistic regression ({lr.mean():.3f})")
    ax.set_xscale("log", base=2); ax.set_xlabel("k (SAE latents kept by the probe)"); ax.set_ylabel("test AUC (mean over datasets and seeds)")
    ax.set_title("SAE probes against k, standard regime"); ax.legend(fontsize=8); fig.tight_layout(); plt.close(fig)
    return fig

def _fig_regimes(df):
    import matplotlib.pyplot as plt; import seaborn as sns
    regs = [r for r in ("scarcity", "imbalance", "noise") if r in set(df["regime"])]
    fig, axes = plt.subplots(1, max(1, len(regs)), figsize=(5 * max(1, len(regs)), 3.8), squeeze=False)
    lab = dict(scarcity="training examples (balanced)", imbalance="positive share of the training set", noise="share of flipped training labels")
    for ax, r in zip(axes[0], regs):
        d = df[df.regime == r]
        sns.lineplot(d, x="level", y="test_auc", hue="method", marker="o", errorbar=("ci", 95), ax=ax, legend=(r == regs[-1]))
        if r == "scarcity": ax.set_xscale("log", base=2)
        ax.set_xlabel(lab[r]); ax.set_ylabel("test AUC"); ax.set_title(r)
    if not regs: axes[0][0].text(0.5, 0.5, "no hard regime run at this profile", ha="center"); axes[0][0].set_axis_off()
    elif axes[0][-1].get_legend() is not None: axes[0][-1].legend(fontsize=7, loc="lower right")
    fig.suptitle("Hard regimes: mean test AUC and 95% interval over datasets and seeds"); fig.tight_layout(); plt.close(fig)
    return fig


# %% [markdown]
# ## The experiment

# %%
from trustlib.results import run_experiment

# %%
result = run_experiment(run, cfg)

# %% [markdown]
# ### The datasets and the SAE
#
# The datasets (rows after the cap, positive share, rows of the out-of-distribution file), and the SAE's
# fit on held-out token activations and on the pooled vectors the probes encode. The trained SAE must
# reconstruct far better than the random-init control, or the SAE probes would test nothing:

# %%
result.tables["datasets"]

# %%
result.tables["sae"]

# %%
_sae = result.tables["sae"]
if "rand" in _sae.index: assert _sae.loc["sae", "tokens/fvu"] < _sae.loc["rand", "tokens/fvu"], "the trained SAE does not beat its random-init control"

# %% [markdown]
# ### Methods × regimes: mean test AUC (95 % bootstrap interval over datasets × seeds)
#
# `sae_k<k>` are probes on the trained SAE's top-k latents, `rand_k<k>` the same on the random-init
# control; the `ood` column is the covariate-shift test (probes of the standard regime, scored on the
# out-of-distribution file).

# %%
result.tables["auc"]

# %% [markdown]
# ### The quiver of arrows
#
# Per regime: the mean test AUC of the max-validation method over the baselines, over baselines + SAE
# probes, their difference, the share of cells where an SAE probe was chosen, and logistic regression alone.

# %%
result.tables["quiver"]

# %%
result.figures["k_sweep"]

# %%
result.figures["regimes"]

# %% [markdown]
# ## Paper vs. us

# %%
result.verdict_table()

# %% [markdown]
# The table grades each claim by the rule stated before the run. The setting is far smaller than the
# paper's — a 22M-parameter bidirectional encoder instead of a 9B decoder, our own SAE trained on little
# data instead of Gemma Scope, subsampled copies of the datasets, reduced regime grids — so the verdicts
# are about directions: whether SAE probes add anything to strong baselines once methods are chosen by
# validation AUC, not the paper's AUC values. Read the SAE table first: the SAE comparisons mean something
# only where the trained SAE reconstructs well and beats its random-init control. A result on a single
# dataset can flip either way at this scale; the claims are about averages.
