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
#
#
# ::: {.callout-note}
# ## What we reproduce / what we cannot
# - **The protocol, on a small real encoder.** 32 binary text tasks from the sae-probes wheel (subsampled copies
#   of the paper's data), each text represented by MiniLM's (all-MiniLM-L6-v2, 22M parameters) hidden state after
#   layer 4 at its **last token** before `[SEP]`, as the paper probes the last token of the prompt. MiniLM is
#   bidirectional, so that token has seen the whole text, not only what precedes it: a departure.
# - **Our own SAE, trained on generic text:** a TopK SAE trained on the token activations of a pool of other
#   sae-probes texts (every dataset that is not a probing set, minus every text of a probing set or an
#   out-of-distribution file), instead of Gemma Scope SAEs trained on billions of tokens; it reconstructs held-out
#   pool tokens with a fraction of variance unexplained below 0.15 (a condition of every SAE claim): 1,200 Adam steps
#   of 1,024 tokens, about three passes over 380,000 pool tokens, in float32 (trained once, then read from a cache). A
#   **random-init SAE** (same architecture, untrained) is the control: every k at which an SAE probe is graded must
#   beat it, or the comparison would be about random projections.
# - **Same probe families and selection rules** as the paper's code: logistic regression on the raw activations
#   (no standardisation), PCA, KNN, XGBoost and an MLP with their grids or random searches, hyperparameters chosen
#   by validation AUC with the official rule (leave-two-out up to 12 examples, six folds below 128, otherwise the
#   last rows of the shuffled training set as one holdout); SAE probes on the top-k latents by class-mean gap with
#   L1 logistic regression; the quiver of arrows.
# - **Covariate shift on the English out-of-distribution sets** the wheel ships (fictional characters, an inserted
#   letter, reversed names, two GLUE-X sets); the three translated sets (French, Spanish, German) are left out,
#   since MiniLM is an English model.
# - **Shrunk for the CPU budget** (cpu profile): 32 datasets (the paper: 113) of at most 800 rows, one split
#   each; the standard regime with 512 training examples; the hard regimes (scarcity, imbalance, label noise) on
#   the first 12 datasets with logistic regression and the SAE probes at k = 16 and 128 only; XGBoost with 2
#   random-search draws (official: 10) and the MLP with 1 (as the official code); the quiver's SAE probes are the
#   graded k = 16 and 128 (the k sweep is shown, not graded).
# - **The `full` profile is the paper's experiment** (Gemma-2-9B at layer 20, its last token, Gemma Scope's 16k SAE,
#   all 113 binary datasets and the eight out-of-distribution sets, the paper's grids; hub downloads, a GPU): see
#   [below](#the-full-profile-gemma-2-9b-and-gemma-scope). It is rehearsed offline on tiny stand-ins, never published here.
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
import math, zlib
from dataclasses import dataclass
from typing import Optional
import numpy as np
from trustlib.config import BaseConfig, param, ConfigError, ResourceUnavailable, derive_seed, cpu_threads, install_hint

# %%
#| hide
from fastcore.test import test_eq, test_fail, test_close
import pandas as pd
import torch
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
# Defaults are the `smoke` profile; `trustlib run sae_probing --profile cpu` (or papermill with
# `-p profile cpu`) runs the published configuration. `None` means "the profile's value".

# %%
from typing import Optional

# %% tags=["parameters"]
profile: str = "smoke"  # smoke (CI, < 60 s) | cpu (published results, minutes) | full (paper scale)
seed: Optional[int] = None  # base random seed; every random choice derives from it
n_seeds: Optional[int] = None  # independent repetitions (splits, regime samples, probe searches)
datasets: Optional[list[str]] = None  # sae-probes binary datasets (file stems)
regime_datasets: Optional[int] = None  # the first this many datasets also run the hard regimes
ood_datasets: Optional[list[str]] = None  # datasets scored on their out-of-distribution file (covariate shift)
max_rows: Optional[int] = None  # rows kept per dataset (stratified subsample)
test_frac: Optional[float] = None  # share of each dataset held out as the test set
n_train: Optional[int] = None  # training examples in the standard, noise and covariate-shift regimes
layer: Optional[int] = None  # MiniLM hidden-state layer (0 ＝ embeddings, 6 ＝ last); a causal LM: the residual stream after block `layer`, counted from 0
pooling: Optional[str] = None  # last (the last token before [SEP], as the paper) or mean (over the text's tokens)
max_length: Optional[int] = None  # tokens per text (truncation)
pool_rows: Optional[int] = None  # texts per sae-probes dataset in the SAE's generic training pool
pool_datasets: Optional[int] = None  # datasets in the generic pool (0 ＝ every one that is not a probing set)
d_sae: Optional[int] = None  # SAE width
sae_k: Optional[int] = None  # active latents per input of the TopK SAE
sae_steps: Optional[int] = None  # SAE optimiser steps
sae_batch_size: Optional[int] = None  # SAE training batch size
sae_lr: Optional[float] = None  # SAE Adam learning rate
autocast: Optional[str] = None  # float32, or bfloat16 (matrix products of SAE training in bfloat16)
k_values: Optional[list[int]] = None  # SAE-probe k sweep in the standard regime (shown, not graded)
regime_k: Optional[list[int]] = None  # SAE-probe k graded in every regime and in the quiver
baselines: Optional[list[str]] = None  # baseline probes in the standard regime
regime_baselines: Optional[list[str]] = None  # baseline probes in the hard regimes
regimes: Optional[list[str]] = None  # hard regimes to run (scarcity, imbalance, noise, ood)
scarcity_n: Optional[list[int]] = None  # balanced training-set sizes (data scarcity)
imbalance_fracs: Optional[list[float]] = None  # positive fractions of the training set (class imbalance)
imbalance_n: Optional[int] = None  # largest training set in the imbalance regime
noise_fracs: Optional[list[float]] = None  # fractions of flipped training labels (label noise)
n_search: Optional[int] = None  # random-search draws of XGBoost (the MLP draws one, as the official code)
n_threads: Optional[int] = None  # torch/BLAS threads (None: leave as is)
model: Optional[str] = None  # the probed model: minilm (all-MiniLM-L6-v2, offline) or a Hugging Face causal LM by hub id (full: google/gemma-2-9b)
lm_dtype: Optional[str] = None  # weights and activations of a causal LM (float32 as the official code, or bfloat16)
sae_repo: Optional[str] = None  # a pretrained SAE in Gemma Scope's layout, by hub id or local folder (full: google/gemma-scope-9b-pt-res); empty: train one
sae_folder: Optional[str] = None  # the pretrained SAE's subfolder (full: layer_20/width_16k/average_l0_408, the paper's 16k SAE)

# %% [markdown] tags=["injected-parameters"]
# **This page shows a run with** `profile = "cpu"` (run `cpu-bf21a9e8fb`, commit `4582c6e`, 425 s, 2026-12-04). Running the notebook yourself uses the parameters cell above as written (the fast `smoke` profile unless you change it); `trustlib run sae_probing --profile cpu` repeats the run shown here.

# %%
#| export
BASELINES = ("logreg", "pca", "knn", "xgboost", "mlp")
REGIMES = ("scarcity", "imbalance", "noise", "ood")
ENGLISH_OOD = ("5_hist_fig_ismale", "6_hist_fig_isamerican", "7_hist_fig_ispolitician", "87_glue_cola", "90_glue_qnli")
CPU_DATASETS = ("5_hist_fig_ismale", "87_glue_cola", "92_glue_sst2", "96_spam_is", "113_movie_sent", "139_news_class_Politics",
                "36_sciq_tf", "56_wikidatasex_or_gender", "106_hate_hate", "149_twt_emotion_happiness", "154_athlete_sport_football", "158_code_C",
                "6_hist_fig_isamerican", "7_hist_fig_ispolitician", "90_glue_qnli", "21_headline_istrump", "26_headline_isfrontpage",
                "44_phys_tf", "48_cm_correct", "51_just_is", "54_cs_tf", "60_wikidata_occupation_isathlete", "65_high-school",
                "69_blood-pressure", "76_trial-court", "100_news_fake", "105_click_bait", "110_aimade_humangpt3",
                "117_us_state_FL", "123_world_country_United_Kingdom", "126_art_type_book", "136_glue_mnli_entailment")
ALL_OOD = ENGLISH_OOD + ("66_living-room", "67_social-security", "73_control-group")   # with the French, Spanish and German sets
PAPER_DATASETS = ('5_hist_fig_ismale', '6_hist_fig_isamerican', '7_hist_fig_ispolitician', '21_headline_istrump', '22_headline_isobama',
                   '23_headline_ischina', '24_headline_isiran', '26_headline_isfrontpage', '36_sciq_tf', '41_truthqa_tf', '42_temp_sense',
                   '44_phys_tf', '47_reasoning_tf', '48_cm_correct', '49_cm_isshort', '50_deon_isvalid', '51_just_is', '52_virtue_is',
                   '54_cs_tf', '56_wikidatasex_or_gender', '57_wikidatais_alive', '58_wikidatapolitical_party',
                   '59_wikidata_occupation_isjournalist', '60_wikidata_occupation_isathlete', '61_wikidata_occupation_isactor',
                   '62_wikidata_occupation_ispolitician', '63_wikidata_occupation_issinger', '64_wikidata_occupation_isresearcher',
                   '65_high-school', '66_living-room', '67_social-security', '68_credit-card', '69_blood-pressure', '70_prime-factors',
                   '71_social-media', '72_gene-expression', '73_control-group', '74_magnetic-field', '75_cell-lines', '76_trial-court',
                   '77_second-derivative', '78_north-america', '79_human-rights', '80_side-effects', '81_public-health',
                   '82_federal-government', '83_third-party', '84_clinical-trials', '85_mental-health', '87_glue_cola', '89_glue_mrpc',
                   '90_glue_qnli', '91_glue_qqp', '92_glue_sst2', '94_ai_gen', '95_toxic_is', '96_spam_is', '100_news_fake',
                   '105_click_bait', '106_hate_hate', '107_hate_offensive', '110_aimade_humangpt3', '113_movie_sent',
                   '114_nyc_borough_Manhattan', '115_nyc_borough_Brooklyn', '116_nyc_borough_Bronx', '117_us_state_FL', '118_us_state_CA',
                   '119_us_state_TX', '120_us_timezone_Chicago', '121_us_timezone_New_York', '122_us_timezone_Los_Angeles',
                   '123_world_country_United_Kingdom', '124_world_country_United_States', '125_world_country_Italy', '126_art_type_book',
                   '127_art_type_song', '128_art_type_movie', '129_arith_mc_A', '130_temp_cat_Frequency', '131_temp_cat_Typical Time',
                   '132_temp_cat_Event Ordering', '133_context_type_Causality', '134_context_type_Belief_states',
                   '135_context_type_Event_duration', '136_glue_mnli_entailment', '137_glue_mnli_neutral', '138_glue_mnli_contradiction',
                   '139_news_class_Politics', '140_news_class_Technology', '141_news_class_Entertainment', '142_cancer_cat_Thyroid_Cancer',
                   '143_cancer_cat_Lung_Cancer', '144_cancer_cat_Colon_Cancer', '145_disease_class_digestive system diseases',
                   '146_disease_class_cardiovascular diseases', '147_disease_class_nervous system diseases', '148_twt_emotion_worry',
                   '149_twt_emotion_happiness', '150_twt_emotion_sadness', '151_it_tick_HR Support', '152_it_tick_Hardware',
                   '153_it_tick_Administrative rights', '154_athlete_sport_football', '155_athlete_sport_basketball',
                   '156_athlete_sport_baseball', '157_amazon_5star', '158_code_C', '159_code_Python', '160_code_HTML', '161_agnews_0',
                   '162_agnews_1', '163_agnews_2')   # every binary sae-probes dataset: the paper's 113 tasks
_LM_WIDTH = {"google/gemma-2-9b": 3584, "google/gemma-2-2b": 2304, "meta-llama/Llama-3.1-8B": 4096}   # residual width, for size estimates
POOL_MAX_TOKENS = 128   # a causal LM's generic pool texts are cut to this many tokens (after BOS)
_BYTES_PER_FLOAT = 4

@dataclass
class Config(BaseConfig):
    "Configuration of the SAE-probing reproduction on MiniLM representations of the sae-probes datasets."
    n_seeds: int = param(1, "independent repetitions (splits, regime samples, probe searches)", ge=1, le=100)
    datasets: tuple[str, ...] = param(("92_glue_sst2", "96_spam_is", "5_hist_fig_ismale"), "sae-probes binary datasets (file stems)")
    regime_datasets: int = param(2, "the first this many datasets also run the hard regimes", ge=0, le=1000)
    ood_datasets: tuple[str, ...] = param(("5_hist_fig_ismale",), "datasets scored on their out-of-distribution file (covariate shift)")
    max_rows: int = param(300, "rows kept per dataset (stratified subsample)", ge=40, max=20_000, le=1_000_000)
    test_frac: float = param(0.25, "share of each dataset held out as the test set", gt=0.05, lt=0.9)
    n_train: int = param(512, "training examples in the standard, noise and covariate-shift regimes", ge=8, le=1_000_000)
    layer: int = param(4, "MiniLM hidden-state layer (0 = embeddings, 6 = last); a causal LM: the residual stream after block `layer`, counted from 0", ge=0, le=1000)
    pooling: str = param("last", "last (the last token before [SEP], as the paper) or mean (over the text's tokens)", choices=("last", "mean"))
    max_length: int = param(64, "tokens per text (truncation)", ge=4, le=8192)
    pool_rows: int = param(20, "texts per sae-probes dataset in the SAE's generic training pool", ge=1, max=5000, le=100_000)
    pool_datasets: int = param(20, "datasets in the generic pool (0 = every one that is not a probing set)", ge=0, le=155)
    d_sae: int = param(512, "SAE width", ge=16, max=65_536, le=1_000_000)
    sae_k: int = param(32, "active latents per input of the TopK SAE", ge=1, le=10_000)
    sae_steps: int = param(40, "SAE optimiser steps", ge=1, max=200_000, le=10_000_000)
    sae_batch_size: int = param(512, "SAE training batch size", ge=8, le=65_536)
    sae_lr: float = param(3e-3, "SAE Adam learning rate", gt=0, le=1)
    autocast: str = param("bfloat16", "float32, or bfloat16 (matrix products of SAE training in bfloat16)", choices=("float32", "bfloat16"))
    k_values: tuple[int, ...] = param((4, 16), "SAE-probe k sweep in the standard regime (shown, not graded)", ge=1, le=100_000)
    regime_k: tuple[int, ...] = param((16,), "SAE-probe k graded in every regime and in the quiver", ge=1, le=100_000)
    baselines: tuple[str, ...] = param(("logreg",), "baseline probes in the standard regime", choices=BASELINES)
    regime_baselines: tuple[str, ...] = param(("logreg",), "baseline probes in the hard regimes", choices=BASELINES)
    regimes: tuple[str, ...] = param(("noise", "ood"), "hard regimes to run (scarcity, imbalance, noise, ood)", choices=REGIMES)
    scarcity_n: tuple[int, ...] = param((4, 16, 64, 256), "balanced training-set sizes (data scarcity)", ge=2, le=1_000_000)
    imbalance_fracs: tuple[float, ...] = param((0.05, 0.5, 0.95), "positive fractions of the training set (class imbalance)", gt=0, lt=1)
    imbalance_n: int = param(512, "largest training set in the imbalance regime", ge=8, le=1_000_000)
    noise_fracs: tuple[float, ...] = param((0.0, 0.4), "fractions of flipped training labels (label noise)", ge=0, le=0.5)
    n_search: int = param(1, "random-search draws of XGBoost (the MLP draws one, as the official code)", ge=1, le=1000)
    n_threads: Optional[int] = param(1, "torch/BLAS threads (None: leave as is)", ge=1, le=1024)
    model: str = param("minilm", "the probed model: minilm (all-MiniLM-L6-v2, offline) or a Hugging Face causal LM by hub id (full: google/gemma-2-9b)")
    lm_dtype: str = param("float32", "weights and activations of a causal LM (float32 as the official code, or bfloat16)", choices=("float32", "bfloat16"))
    sae_repo: str = param("", "a pretrained SAE in Gemma Scope's layout, by hub id or local folder (full: google/gemma-scope-9b-pt-res); empty: train one")
    sae_folder: str = param("", "the pretrained SAE's subfolder (full: layer_20/width_16k/average_l0_408, the paper's 16k SAE)")
    PROFILE_DEFAULTS = {
        "cpu": dict(datasets=CPU_DATASETS, regime_datasets=12, ood_datasets=ENGLISH_OOD, max_rows=800, pool_rows=150, pool_datasets=0,
                    d_sae=1536, sae_k=64, sae_steps=1200, sae_batch_size=1024, autocast="float32", k_values=(1, 4, 16, 64, 128), regime_k=(16, 128),
                    baselines=BASELINES, regime_baselines=("logreg",), regimes=REGIMES, noise_fracs=(0.0, 0.2, 0.4), n_search=2),
        "full": dict(model="google/gemma-2-9b", layer=20, max_length=1024, sae_repo="google/gemma-scope-9b-pt-res", sae_folder="layer_20/width_16k/average_l0_408",
                     d_sae=16_384, datasets=PAPER_DATASETS, regime_datasets=len(PAPER_DATASETS), ood_datasets=ALL_OOD, max_rows=3500, n_train=1024,
                     imbalance_n=1024, pool_rows=50, pool_datasets=0, k_values=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512), regime_k=(16, 128),
                     baselines=BASELINES, regime_baselines=BASELINES, regimes=REGIMES, scarcity_n=(2, 4, 8, 16, 32, 64, 128, 256, 512, 1024),
                     imbalance_fracs=tuple(np.round(np.linspace(0.05, 0.95, 19), 2)), noise_fracs=tuple(np.round(np.linspace(0, 0.5, 11), 2)), n_search=10),
    }
    def validate(self):
        if not self.datasets: raise ConfigError("parameter 'datasets': give at least one dataset")
        if len(set(self.datasets)) != len(self.datasets): raise ConfigError("parameter 'datasets': a dataset is listed twice")
        self._check_datasets()
        if not self.baselines or "logreg" not in self.baselines: raise ConfigError("parameter 'baselines': must include 'logreg' (the claims compare with it)")
        if "logreg" not in self.regime_baselines: raise ConfigError("parameter 'regime_baselines': must include 'logreg' (the claims compare with it)")
        if not self.k_values or not self.regime_k: raise ConfigError("parameters 'k_values' and 'regime_k': give at least one k each")
        for field in ("k_values", "regime_k"):
            if max(getattr(self, field)) > self.d_sae: raise ConfigError(f"parameter '{field}': every k must be <= d_sae ({self.d_sae})")
        if self.sae_k > self.d_sae: raise ConfigError(f"parameter 'sae_k': must be <= d_sae ({self.d_sae})")
        if self.regime_datasets > len(self.datasets): raise ConfigError(f"parameter 'regime_datasets': at most the {len(self.datasets)} datasets given")
        self._check_model()
        self._check_size()
    def _check_datasets(self):
        "Every named dataset is a binary sae-probes dataset, and every OOD dataset has an out-of-distribution file (checked before any work)."
        from trustlib.data import sae_probes_datasets
        binary, ood = set(sae_probes_datasets('binary')), {n.removesuffix('_OOD') for n in sae_probes_datasets(ood=True)}
        bad = [n for n in self.datasets if n not in binary]
        if bad: raise ConfigError(f"parameter 'datasets': {bad} are not binary sae-probes datasets; choose from trustlib.data.sae_probes_datasets('binary'), e.g. {sorted(binary)[:6]}")
        bad = [n for n in self.ood_datasets if n not in ood]
        if bad: raise ConfigError(f"parameter 'ood_datasets': {bad} have no out-of-distribution file; choose from {sorted(ood)}")
        bad = [n for n in self.ood_datasets if n not in self.datasets]
        if bad: raise ConfigError(f"parameter 'ood_datasets': {bad} are not among the probed 'datasets'")
    def _check_model(self):
        "MiniLM goes with an SAE trained here, a causal LM (by hub id) with a pretrained SAE (`sae_repo` and `sae_folder`)."
        if bool(self.sae_repo) != bool(self.sae_folder): raise ConfigError("parameters 'sae_repo' and 'sae_folder': give both (a pretrained SAE) or neither (train one)")
        if (self.model == "minilm") == bool(self.sae_repo):
            raise ConfigError("parameters 'model' and 'sae_repo': MiniLM is probed with an SAE trained here (sae_repo empty), a causal LM such as "
                              "google/gemma-2-9b with a pretrained SAE (sae_repo and sae_folder, e.g. Gemma Scope's)")
        if self.model == "minilm" and self.layer > 6: raise ConfigError(f"parameter 'layer': MiniLM has layers 0 (embeddings) to 6, got {self.layer}")
        if self.model == "minilm" and self.max_length > 512: raise ConfigError(f"parameter 'max_length': MiniLM reads at most 512 tokens, got {self.max_length}")
    def _check_size(self):
        "Memory of the largest arrays, from products of the sizes; refused above 8 GiB unless allow_large."
        gib = _BYTES_PER_FLOAT / 2**30
        if self.sae_repo: est = self._lm_sizes(gib)
        else: est = {"SAE training batch (sae_batch_size × d_sae)": 6 * self.sae_batch_size * self.d_sae * gib,
               "SAE parameters and Adam state (d_sae × 384)": 8 * self.d_sae * 384 * gib,
               "SAE codes of the probing sets (datasets × max_rows × d_sae)": len(self.datasets) * self.max_rows * self.d_sae * gib,
               "token pool (pool_rows × datasets × max_length × 384)": self.pool_rows * (self.pool_datasets or 155) * self.max_length * 384 * gib}
        big = {k: v for k, v in est.items() if v > 8}
        if big and not getattr(self, '_allow_large', False):
            k, v = max(big.items(), key=lambda kv: kv[1])
            raise ConfigError(f"the configuration needs about {v:.0f} GiB for the {k}; the limit is 8 GiB; pass allow_large=True (CLI: --allow-large) to run it anyway")
    def _lm_sizes(self, gib) -> dict:
        "The largest arrays of the causal-LM path (codes are made one dataset at a time)."
        d = _LM_WIDTH.get(self.model, 4096)
        return {"probing vectors (datasets × max_rows × d_model)": len(self.datasets) * self.max_rows * d * gib,
                "SAE codes of one dataset, SAE and control (2 × max_rows × d_sae)": 2 * self.max_rows * self.d_sae * gib,
                "pool tokens in float16 (pool_rows × datasets × 128 × d_model)": self.pool_rows * (self.pool_datasets or 155) * min(self.max_length, POOL_MAX_TOKENS) * d * gib / 2}


# %%
cfg = Config.from_namespace(globals())
cfg

# %%
test_fail(lambda: Config.from_params("smoke", baselines=["svm"]), contains="parameter 'baselines'")
test_fail(lambda: Config.from_params("smoke", regimes=["drift"]), contains="parameter 'regimes'")
test_fail(lambda: Config.from_params("smoke", k_values=[4096]), contains="'k_values'")
test_fail(lambda: Config.from_params("smoke", pooling="max"), contains="'pooling'")
test_fail(lambda: Config.from_params("smoke", noise_fracs=[0.7]), contains="'noise_fracs'")
test_fail(lambda: Config.from_params("smoke", datasets=["92_glue_sst3"]), contains="parameter 'datasets'")
test_fail(lambda: Config.from_params("smoke", datasets=["97_news_class"]), contains="not binary")
test_fail(lambda: Config.from_params("smoke", ood_datasets=["96_spam_is"]), contains="'ood_datasets'")
test_fail(lambda: Config.from_params("smoke", datasets=["96_spam_is", "5_hist_fig_ismale"], ood_datasets=["5_hist_fig_ismale"], regime_datasets=3), contains="'regime_datasets'")
test_fail(lambda: Config.from_params("smoke", d_sae=1_000_000), contains="exceeds its limit")
test_fail(lambda: Config.from_params("smoke", d_sae=60_000, sae_batch_size=65_536), contains="GiB")
test_eq(Config.from_params("cpu").regimes, REGIMES); test_eq(len(Config.from_params("cpu").datasets), 32)


# %% [markdown]
# ## Representations: MiniLM hidden states
#
# Every text goes through MiniLM once (`trustlib.interp.sae.token_activations`: truncated to `max_length` tokens,
# the encoder stopped after `layer`, cached on disk keyed by the model, layer, truncation and texts). A text is
# represented by its last token before `[SEP]` (`pooling='last'`, the paper's last-token probing) or by the mean
# over its tokens. `representations` returns, for one dataset, the vectors `X` and labels `y` of a stratified
# subsample of `max_rows` rows (or of its out-of-distribution file).

# %%
#| export
def name_key(name:str) -> int:
    "A stable integer key for a string (for `derive_seed`, which reads only 8 bytes of a string key)."
    return zlib.crc32(name.encode())

def representations(name:str, *, layer:int, pooling:str, max_rows:int|None, max_length:int, seed:int) -> dict:
    "MiniLM representations `X` [n, 384], labels `y` and texts of one sae-probes dataset (or OOD set '<name>_OOD')."
    from trustlib.data import load_sae_probes
    from trustlib.interp.sae import token_activations, pool_tokens
    df = load_sae_probes(name, max_rows=max_rows, seed=seed)
    if df.attrs.get("data_type") != "Binary Classification" or df["y"].nunique() != 2:
        raise ConfigError(f"dataset {name!r} is not a binary classification task ({df.attrs.get('data_type')})")
    texts = df["prompt"].astype(str).tolist()
    r = token_activations(texts, layer=layer, max_length=max_length)
    return dict(X=pool_tokens(r["acts"], r["offsets"], pooling), y=df["y"].to_numpy().astype(np.int64), texts=texts)

def _ood_name(name): return f"{name}_OOD"


# %% [markdown]
# The same text gives the same vector whichever dataset it comes from, labels are 0/1, and the OOD file loads:

# %%
_r = representations("96_spam_is", layer=4, pooling="last", max_rows=40, max_length=64, seed=1)
test_eq(_r["X"].shape, (40, 384)); test_eq(sorted(set(_r["y"].tolist())), [0, 1])
_o = representations(_ood_name("5_hist_fig_ismale"), layer=4, pooling="last", max_rows=None, max_length=64, seed=0)
test_eq(_o["X"].shape[1], 384); assert len(_o["y"]) > 100


# %% [markdown]
# ## Cross-validation: the official n-dependent rule
#
# Hyperparameters of every probe are chosen by validation AUC on the training set alone, as the paper's code does:
# with $n\le 12$ training examples every pair of examples is a validation split (leave-2-out), keeping the pairs that
# hold both classes (a split whose training part has one class only scores 0.5); with $n < 128$ six-fold stratified
# cross-validation (folds whose validation part has both classes); otherwise one holdout: the **last**
# $\min(\lfloor 0.2n\rfloor, 100)$ rows of the training set, whose rows come in random order.

# %%
#| export
def cv_splits(y, rng:np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    "(train, validation) index pairs by the official rule: leave-2-out (n <= 12), 6-fold stratified (n < 128), else the last min(⌊0.2 n⌋, 100) rows."
    from sklearn.model_selection import StratifiedKFold
    y = np.asarray(y); n = len(y); idx = np.arange(n)
    if len(np.unique(y)) < 2: raise ValueError("cross-validation needs both classes in the training set")
    if n <= 12:
        return [(np.setdiff1d(idx, [i, j]), np.array([i, j])) for i in range(n) for j in range(i + 1, n) if y[i] != y[j]]
    if n < 128:
        folds = int(min(6, np.bincount(y).min()))
        if folds < 2: raise ValueError("6-fold cross-validation needs at least 2 examples of each class")
        skf = StratifiedKFold(n_splits=folds, shuffle=True, random_state=int(rng.integers(2**31)))
        return [(tr, va) for tr, va in skf.split(idx, y) if len(np.unique(y[va])) == 2]
    n_val = min(int(0.2 * n), 100)
    return [(idx[:n - n_val], idx[n - n_val:])]


# %%
_rng = np.random.default_rng(0)
_y10 = np.array([0, 1] * 5); _s = cv_splits(_y10, _rng)
test_eq(len(_s), 25)                                                      # 5 × 5 mixed pairs
assert all(len(va) == 2 and set(_y10[va]) == {0, 1} and len(tr) == 8 for tr, va in _s)
test_eq(len(cv_splits(np.array([0, 1]), _rng)[0][0]), 0)                 # n = 2: one split, nothing left to train on
_y100 = np.array([0] * 60 + [1] * 40); _s = cv_splits(_y100, _rng)
test_eq(len(_s), 6); test_eq(sorted(np.concatenate([va for _, va in _s]).tolist()), list(range(100)))
assert all(abs(_y100[va].mean() - 0.4) < 0.1 for _, va in _s)
_s = cv_splits(np.array([0, 1] * 500), _rng)
test_eq(len(_s), 1); test_eq(_s[0][1].tolist(), list(range(900, 1000)))    # the last 100 rows
test_eq(cv_splits(np.array([0, 1] * 100), _rng)[0][1].tolist(), list(range(160, 200)))   # ⌊20 % of 200⌋ < 100
test_fail(lambda: cv_splits(np.zeros(20, int), _rng), contains="both classes")

# %% [markdown]
# ## Probes
#
# Each probe family has a hyperparameter grid and is scored on the validation splits; the best grid point
# (mean validation AUC over splits) is refit on the whole training set. The grids follow the paper's code:
#
# | probe | preprocessing | grid |
# |---|---|---|
# | `logreg` | none (the raw activations) | L2, $C\in$ logspace(5, −5, 10) |
# | `pca` | standardise, PCA | components ∈ unique(round(logspace₂(0, log₂ min(n, d, 100), 10))), logistic regression |
# | `knn` | standardise | $k\in$ unique(round(logspace₂(0, log₂ min(n − 1, 100), 8))) |
# | `xgboost` | — | random search: trees ∈ {50, 100}, depth ∈ {2, 3, 4}, learning rate ∈ logspace(−2, 0), reg_alpha ∈ logspace(−3, 1), subsampling |
# | `mlp` | standardise | one random draw (as the official code): hidden sizes {16, 32, 64}ⁿ (n ≤ 3), alpha ∈ logspace(−5, −2, 5), learning rate ∈ logspace(−4, −2, 5); at most 200 epochs |
# | `sae_k{k}` | SAE latents | top-k latents by the class-mean gap, L1 logistic regression, $C\in$ logspace(5, −5, 10) |
#
# The L1 probes use `liblinear` rather than the paper's `saga` (same objective, faster on few features); the L2 path
# is warm-started from small to large $C$ (the same solutions as fitting each $C$ afresh, fewer iterations). XGBoost
# draws from a smaller space than the official one (at most 100 trees of depth 4) to fit the CPU budget.

# %%
#| export
C_GRID = tuple(float(c) for c in np.logspace(5, -5, 10))

from trustlib.metrics import binary_auc

def _auc(y, s) -> float:
    "ROC AUC (`trustlib.metrics.binary_auc`: scikit-learn's value to the last bit, without its per-call validation); NaN with one class."
    y = np.asarray(y)
    return binary_auc(y, s) if 0 < y.sum() < len(y) else float("nan")

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
                     learning_rate_init=float(rng.choice(np.logspace(-4, -2, 5))))]
    raise ValueError(method)

def _make(method, p, seed):
    if method == "pca": return _lr(1.0)
    if method == "knn":
        from sklearn.neighbors import KNeighborsClassifier; return KNeighborsClassifier(n_neighbors=p)
    if method == "xgboost":
        try: from xgboost import XGBClassifier
        except ImportError as e: raise ResourceUnavailable(f"the xgboost baseline needs the xgboost package: {install_hint('xgboost')}") from e
        return XGBClassifier(**p, tree_method="hist", max_bin=64, n_jobs=1, random_state=seed, verbosity=0)
    if method == "mlp":
        from sklearn.neural_network import MLPClassifier
        return MLPClassifier(**p, max_iter=200, early_stopping=False, random_state=seed)
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
    from sklearn import config_context
    with warnings.catch_warnings(), config_context(assume_finite=True, skip_parameter_validation=True):   # inputs checked once here: thousands of small fits
        if not np.isfinite(X).all(): raise ValueError(f"fit_probe({method!r}): X has NaN or infinite values")
        for w in (ConvergenceWarning, UserWarning, FutureWarning): warnings.simplefilter("ignore", w)
        for j, (tr, va) in enumerate(splits):
            if len(np.unique(y[tr])) < 2: aucs[:, j] = 0.5; continue          # a one-class training part scores 0.5 (official)
            for i, s in enumerate(fold_scores(X[tr], y[tr], X[va])):
                if s is not None: aucs[i, j] = _auc(y[va], s)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning); mean = np.nanmean(aucs, axis=1)
        best = int(np.nanargmax(mean)) if np.isfinite(mean).any() else 0
        p = grid[best]
        scaler = _std(X) if method in ("pca", "knn", "mlp") else None
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
# A TopK SAE (`trustlib.interp.sae`) trained on **generic text**: the token activations (without `[CLS]`/`[SEP]`)
# of a pool of sae-probes texts that are not probing data — every dataset except the probing sets, and no text
# that occurs in a probing set or its out-of-distribution file (`trustlib.interp.sae.sae_probes_pool`); 5 % of the
# pool's texts are held out. Activations are scaled by one constant so that $\mathbb E\lVert x\rVert^2 = d$ on
# the pool. The control is the same architecture with the same initialisation, never trained (its decoder bias set
# to the geometric median of the data, as the trained one starts). We report the fraction of variance unexplained
# (FVU), $L_0$ and the dead-latent fraction on the held-out pool tokens and on the probing sets' vectors.
#
# `generic_sae` builds both and stores them with their held-out statistics under `data/cache/sae_probing/`, keyed by
# everything they depend on (`sae_cache_key`: the MiniLM weights, the sae-probes version, the probing sets whose texts
# the pool leaves out, the seed, layer, truncation, pool and SAE parameters, the torch version and the source of the
# code that trains them); a rerun reads them instead of embedding the pool and training again. The run records
# whether it did (`speed/sae_from_cache`).

# %%
#| export
def train_probe_sae(X, *, d_sae:int, k:int, steps:int, batch_size:int=512, lr:float=4e-4, seed:int=0,
                    trained:bool=True, autocast:str="float32", progress:bool=False):
    "A TopK SAE on activations `X` [N, d] (already scaled); `trained=False` gives the random-init control."
    import torch
    from trustlib.interp.sae import make_sae, train_sae
    X = torch.as_tensor(np.asarray(X, np.float32))
    sae = make_sae("topk", X.shape[1], d_sae, sparsity=k, seed=seed, dead_after=max(1, steps * batch_size // 5))
    sae.threshold_start = max(1, steps // 2)
    if trained: train_sae(sae, X, steps=steps, batch_size=batch_size, lr=lr, seed=seed, progress=progress, desc="SAE",
                          autocast=None if autocast == "float32" else autocast)
    else:
        sae.init_from_data(X[torch.randperm(len(X), generator=torch.Generator().manual_seed(seed))[:4096]]); sae.eval()
    return sae

def sae_encode(sae, X, batch_size:int=4096) -> np.ndarray:
    "SAE latents of `X` as a float32 array (no gradients), computed on the SAE's device."
    import torch
    out, dev = [], next(sae.parameters()).device
    with torch.no_grad():
        for s in range(0, len(X), batch_size): out.append(sae.encode(torch.as_tensor(np.asarray(X[s:s + batch_size], np.float32)).to(dev)).cpu().numpy())
    return np.concatenate(out) if out else np.zeros((0, sae.d_sae), np.float32)

def sae_fit_stats(sae, X) -> dict[str, float]:
    "FVU, mean L0 and dead-latent fraction of `sae` on activations `X`."
    import torch
    Z = sae_encode(sae, X)
    with torch.no_grad(): Xh = sae.decode(torch.from_numpy(Z)).numpy()
    X = np.asarray(X, np.float64)
    return dict(fvu=float(((X - Xh) ** 2).sum() / ((X - X.mean(0)) ** 2).sum()), l0=float((Z != 0).sum(1).mean()),
                dead_frac=float(((Z != 0).sum(0) == 0).mean()))

def sae_cache_key(cfg) -> str:
    "Key of the generic SAE: the MiniLM weights, the sae-probes data, the pool and SAE parameters, the seed, torch and the code that trains it."
    import hashlib, inspect, json
    import torch, trustlib.interp.sae as S
    from trustlib.data import sae_probes_source
    code = hashlib.sha256(open(S.__file__, "rb").read() + "".join(inspect.getsource(f) for f in (train_probe_sae, sae_fit_stats, generic_sae, probing_texts)).encode()).hexdigest()
    parts = [S._minilm_id(), sae_probes_source().version, torch.__version__, code, sorted(cfg.datasets), cfg.seed, cfg.layer, cfg.max_length,
             cfg.pool_rows, cfg.pool_datasets, cfg.d_sae, cfg.sae_k, cfg.sae_steps, cfg.sae_batch_size, cfg.sae_lr, cfg.autocast]
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:24]

def generic_sae(cfg, progress:bool=False, cache:bool=True) -> dict:
    "The SAE trained on the generic pool and its random-init control, the activation scale and their fit on held-out pool tokens; cached on disk."
    import torch
    from pathlib import Path
    from trustlib.data import data_dir
    from trustlib.interp.sae import make_sae, sae_probes_pool
    path = Path(data_dir()) / "sae_probing" / f"sae_{sae_cache_key(cfg)}.pt"
    build = lambda: make_sae("topk", 384, cfg.d_sae, sparsity=cfg.sae_k, seed=derive_seed(cfg.seed, "sae"))
    if cache and path.is_file():
        z = torch.load(path, weights_only=True); saes = {}
        for n in ("sae", "rand"): saes[n] = build(); saes[n].load_state_dict(z[n]); saes[n].eval()
        return dict(saes=saes, scale=float(z["scale"]), stats=z["stats"], n_tokens=int(z["n_tokens"]), n_texts=int(z["n_texts"]), pool=list(z["pool"]), cached=True)
    p = sae_probes_pool(exclude=probing_texts(cfg), skip=set(cfg.datasets), rows=cfg.pool_rows, datasets=cfg.pool_datasets, layer=cfg.layer,
                        max_length=cfg.max_length, seed=cfg.seed, progress=progress)
    scale = np.float32(p["scale"]); Ttr, Tho = p["train"] * scale, p["heldout"] * scale
    kw = dict(d_sae=cfg.d_sae, k=cfg.sae_k, steps=cfg.sae_steps, batch_size=cfg.sae_batch_size, lr=cfg.sae_lr, seed=derive_seed(cfg.seed, "sae"))
    saes = {"sae": train_probe_sae(Ttr, autocast=cfg.autocast, progress=progress, **kw), "rand": train_probe_sae(Ttr, trained=False, **kw)}
    out = dict(saes=saes, scale=float(scale), stats={n: sae_fit_stats(s, Tho) for n, s in saes.items()}, n_tokens=len(Ttr), n_texts=int(p["n_texts"]),
               pool=list(p["datasets"]), cached=False)
    if cache:
        try:
            path.parent.mkdir(parents=True, exist_ok=True); tmp = path.with_name(f"{path.name}.tmp")
            torch.save({**{n: s.state_dict() for n, s in saes.items()}, **{k: out[k] for k in ("scale", "stats", "n_tokens", "n_texts", "pool")}}, tmp); tmp.replace(path)
        except OSError: pass                                    # a read-only data folder: no cache, same result
    return out

def probing_texts(cfg) -> set[str]:
    "Every text of every probing dataset (all rows) and of their out-of-distribution files: the SAE's pool leaves these out."
    from trustlib.data import load_sae_probes, sae_probes_datasets
    ood = set(sae_probes_datasets(ood=True)); out = set()
    for n in cfg.datasets:
        out |= set(load_sae_probes(n)["prompt"].astype(str))
        if _ood_name(n) in ood: out |= set(load_sae_probes(_ood_name(n))["prompt"].astype(str))
    return out


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
# A tiny generic SAE (6 pool datasets, 4 texts each, 3 steps) in a scratch data folder: the pool holds no probing
# set, the second call reads the cache and gives the same codes, and another seed is another key.

# %%
import os, tempfile, dataclasses
from unittest.mock import patch as _patch

# %%
with tempfile.TemporaryDirectory() as _d, _patch.dict(os.environ, TRUSTLIB_DATA=_d):   # the data folder, restored afterwards
    _cf = Config.from_params("smoke", pool_rows=4, pool_datasets=6, d_sae=64, sae_k=8, sae_steps=3, sae_batch_size=64, max_length=16)
    _g1, _g2 = generic_sae(_cf), generic_sae(_cf)
test_eq((_g1["cached"], _g2["cached"]), (False, True)); assert not set(_g1["pool"]) & set(_cf.datasets)
test_eq(_g1["stats"], _g2["stats"]); _Xr = np.random.default_rng(0).standard_normal((5, 384)).astype(np.float32)
test_eq(sae_encode(_g1["saes"]["sae"], _Xr), sae_encode(_g2["saes"]["sae"], _Xr))
assert sae_cache_key(dataclasses.replace(_cf, seed=_cf.seed + 1)) != sae_cache_key(_cf)


# %% [markdown]
# ## The `full` profile: Gemma-2-9B and Gemma Scope
#
# `full` runs the paper's own setup. The model is `google/gemma-2-9b`, loaded by hub id with `transformers`
# (`AutoModelForCausalLM`, on the GPU when there is one, float32 as the official TransformerLens code). A text is
# represented by the residual stream after block 20 (`layer`, counted from 0: TransformerLens's `blocks.20.hook_resid_post`,
# Gemma Scope's `layer_20`) at its last token. Texts are cut from the left to `max_length` = 1024 tokens, so the last
# token stays, as in the official code. The activations are cached on disk, keyed by the model's snapshot, the layer,
# the truncation and the texts. The 113 binary datasets and the eight out-of-distribution sets, the translated ones
# included, come from the same sae-probes wheel. The SAE is Gemma Scope's 16k residual SAE at layer 20
# (`google/gemma-scope-9b-pt-res`, `layer_20/width_16k/average_l0_408`, the paper's "16k"). It is read from its
# `params.npz` through the hub cache (`trustlib.interp.sae.load_gemma_scope`) and applied to the raw residual stream,
# with no scaling.
#
# Its conditions are checked as the cpu profile checks them. The FVU is measured on the tokens after BOS of generic
# text: `pool_rows` texts of each sae-probes dataset that is not probed, cut to 128 tokens. The SAE was trained on none
# of them, so no text is excluded. The random-init control is an untrained TopK SAE of the same width, with $k$ equal
# to the Gemma Scope SAE's mean $L_0$ on those tokens and its decoder bias at their geometric median. The probes,
# regimes, quiver and claims are the cpu profile's; the codes are made one dataset at a time. A rehearsal
# (`trustlib run sae_probing --profile full --rehearse`) runs this path offline. It uses a 42-layer random Gemma-2
# stand-in and a stand-in Gemma Scope `params.npz` in the hub cache layout. Its datasets and sizes are tiny.

# %%
#| export
class HubLM:
    "A causal LM by hub id (or local folder), loaded on first use through `transformers` (cuda if available), with an identity for cache keys."
    def __init__(self, model:str, dtype:str="float32"): self.name, self.dtype, self._lm = str(model), dtype, None
    @property
    def lm(self):
        "The loaded `trustlib.models.CausalLM` (downloads by hub id only when the hub is online and the files are missing)."
        if self._lm is None:
            import torch
            from transformers.utils import logging as hf_logging
            from trustlib.models import CausalLM
            from trustlib.config import ResourceUnavailable
            hf_logging.disable_progress_bar()                         # no progress bars in the run's notebook
            try: self._lm = CausalLM(self.name, dtype=getattr(torch, self.dtype), allow_download=True).load()
            except ResourceUnavailable as e:
                raise ResourceUnavailable(f"the model {self.name!r} is neither in the Hugging Face cache nor downloadable here ({str(e)[:400]}). "
                                          "google/gemma-2-9b is gated: accept its licence on its hub page and log in (`hf auth login`) on a "
                                          "machine with network access, or give a local folder as `model`") from e
        return self._lm
    def revision(self) -> str|None:
        "The snapshot the local hub cache resolves the hub id to (a local folder: a hash of its file listing); None if it is not there yet."
        import hashlib
        from pathlib import Path
        p = Path(self.name).expanduser()
        if p.is_dir():
            files = sorted((str(f.relative_to(p)), f.stat().st_size) for f in p.rglob("*") if f.is_file())
            return "local-" + hashlib.sha256(repr(files).encode()).hexdigest()[:16]
        from huggingface_hub import try_to_load_from_cache
        c = try_to_load_from_cache(self.name, "config.json")
        return Path(c).parent.name if isinstance(c, str) else None
    @property
    def key(self) -> str:
        "`<name>@<revision>`, loading the model first when the hub cache does not hold it yet."
        rev = self.revision()
        if rev is None: self.lm; rev = self.revision() or str(getattr(self.lm.model.config, "_commit_hash", None))
        return f"{self.name}@{rev}"

def lm_hidden(texts:list[str], lm, *, layer:int, max_length:int, what:str="last", batch_size:int=16) -> list[np.ndarray]:
    "Per text, the residual stream after decoder block `layer`: the last token's vector (`what='last'`), the mean over the tokens after BOS ('mean'), or every token after BOS [T, d] in float16 ('tokens')."
    import torch
    tok, model = lm.tokenizer, lm.model
    from trustlib.interp.sae import _blocks                           # the shared finder of a model's block list
    blocks = _blocks(model)
    if not 0 <= layer < len(blocks): raise ConfigError(f"parameter 'layer': {lm.name_or_path} has blocks 0 to {len(blocks) - 1}, got {layer}")
    tok.truncation_side, tok.padding_side = "left", "right"          # keep the end of a long prompt, as the official code
    ids = tok([str(t) for t in texts], truncation=True, max_length=max_length)["input_ids"]
    order, bos, grab, out = np.argsort([len(t) for t in ids], kind="stable"), tok.bos_token_id, {}, [None] * len(texts)
    class _Stop(Exception): pass
    def hook(mod, inp, o):
        grab["h"] = o[0] if isinstance(o, tuple) else o
        raise _Stop                                                   # the blocks above `layer` are not needed
    handle = blocks[layer].register_forward_hook(hook)
    try:
        with torch.no_grad():
            for s in range(0, len(texts), batch_size):
                b = order[s:s + batch_size]
                enc = tok.pad({"input_ids": [ids[i] for i in b]}, return_tensors="pt")
                try: model(input_ids=enc["input_ids"].to(lm.device), attention_mask=enc["attention_mask"].to(lm.device), use_cache=False)
                except _Stop: pass
                H, lens = grab.pop("h").float().cpu(), enc["attention_mask"].sum(1).tolist()
                for j, i in enumerate(b):
                    n = int(lens[j]); a = 1 if n > 1 and bos is not None and int(enc["input_ids"][j, 0]) == bos else 0
                    out[i] = H[j, n - 1].numpy() if what == "last" else H[j, a:n].mean(0).numpy() if what == "mean" else H[j, a:n].numpy().astype(np.float16)
    finally: handle.remove()
    return out

def lm_activations(texts:list[str], lm:HubLM, *, layer:int, max_length:int, what:str="last", cache:bool=True) -> dict:
    "`lm_hidden` of `texts` as arrays, cached on disk (`data/cache/activations`, keyed by the model's snapshot, layer, truncation, pooling and texts): `X` [n, d], or `acts` [T, d] and `offsets` for `what='tokens'`."
    import hashlib, json, os
    from pathlib import Path
    from trustlib.data import data_dir
    texts = [str(t) for t in texts]
    key = hashlib.sha256(json.dumps([lm.key, lm.dtype, int(layer), int(max_length), what, hashlib.sha256("\x1f".join(texts).encode()).hexdigest()]).encode()).hexdigest()[:24]
    path = Path(data_dir()) / "activations" / f"lm_{lm.name.replace('/', '--')}_L{layer}_{what}_{key}.npz"
    if cache and path.is_file():
        with np.load(path, allow_pickle=False) as z: return {k: z[k] for k in z.files}
    h = lm_hidden(texts, lm.lm, layer=layer, max_length=max_length, what=what)
    if what == "tokens":
        out = dict(acts=np.concatenate(h) if h else np.zeros((0, 0), np.float16), offsets=np.concatenate([[0], np.cumsum([len(a) for a in h])]).astype(np.int64))
    else: out = dict(X=np.stack(h).astype(np.float32))
    if cache:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.tmp{os.getpid()}.npz"); np.savez(tmp, **out); os.replace(tmp, path)
        except OSError: pass                                        # a read-only data folder: no cache, same result
    return out

def lm_representations(name:str, *, lm:HubLM, layer:int, pooling:str, max_rows:int|None, max_length:int, seed:int) -> dict:
    "`representations` from a causal LM: the residual stream after block `layer` at the last token of each text (or its mean over the tokens after BOS)."
    from trustlib.data import load_sae_probes
    df = load_sae_probes(name, max_rows=max_rows, seed=seed)
    if df.attrs.get("data_type") != "Binary Classification" or df["y"].nunique() != 2:
        raise ConfigError(f"dataset {name!r} is not a binary classification task ({df.attrs.get('data_type')})")
    texts = df["prompt"].astype(str).tolist()
    X = lm_activations(texts, lm, layer=layer, max_length=max_length, what=pooling)["X"]
    return dict(X=X, y=df["y"].to_numpy().astype(np.int64), texts=texts)

def lm_pool(cfg, lm:HubLM) -> dict:
    "Token activations (after BOS, cut to `POOL_MAX_TOKENS`) of generic text: `pool_rows` texts of each sae-probes dataset that is not probed."
    from trustlib.data import sae_probes_datasets, load_sae_probes
    names = [n for n in sae_probes_datasets() if n not in set(cfg.datasets)][:cfg.pool_datasets or None]
    acts, n_texts = [], 0
    for n in names:
        texts = load_sae_probes(n, max_rows=cfg.pool_rows, seed=derive_seed(cfg.seed, "pool", name_key(n)) % 2**31)["prompt"].astype(str).tolist()
        acts.append(lm_activations(texts, lm, layer=cfg.layer, max_length=min(cfg.max_length, POOL_MAX_TOKENS), what="tokens")["acts"]); n_texts += len(texts)
    return dict(tokens=np.concatenate(acts), n_texts=n_texts, datasets=names)

def sae_stats_batched(sae, X, batch_size:int=4096) -> dict[str, float]:
    "`sae_fit_stats` (FVU, mean L0, dead-latent fraction) in batches on the SAE's device, with float64 sums; `X` an array or a list of arrays."
    import torch
    dev = next(sae.parameters()).device
    sse = sxx = 0.0; sx, n, l0 = 0.0, 0, 0.0
    fired = torch.zeros(sae.d_sae, dtype=torch.bool, device=dev)
    with torch.no_grad():
        for part in (X if isinstance(X, (list, tuple)) else [X]):
            for s in range(0, len(part), batch_size):
                x = torch.as_tensor(np.asarray(part[s:s + batch_size], np.float32)).to(dev)
                z = sae.encode(x); xd = x.double()
                sse += float(((xd - sae.decode(z).double()) ** 2).sum()); sxx += float((xd ** 2).sum()); sx = sx + xd.sum(0); n += len(x)
                nz = z != 0; l0 += float(nz.sum()); fired |= nz.any(0)
    return dict(fvu=sse / (sxx - float((sx ** 2).sum()) / n), l0=l0 / n, dead_frac=float((~fired).double().mean()))

def pretrained_sae(cfg, lm:HubLM) -> dict:
    "The pretrained SAE (`sae_repo`/`sae_folder`, Gemma Scope's layout) and its random-init control (an untrained TopK SAE of the same width, k = the SAE's mean L0 on the pool), with their fit on the pool tokens."
    import torch
    from trustlib.interp.sae import load_gemma_scope
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    sae = load_gemma_scope(cfg.sae_repo, cfg.sae_folder, device=dev)
    if sae.d_sae != cfg.d_sae: raise ConfigError(f"parameter 'd_sae': the SAE {cfg.sae_repo}/{cfg.sae_folder} has {sae.d_sae} latents, not {cfg.d_sae}")
    p = lm_pool(cfg, lm); T = p["tokens"]
    if T.shape[1] != sae.d_in: raise ConfigError(f"the SAE reads width {sae.d_in}; the residual stream of {cfg.model} has width {T.shape[1]}")
    st = sae_stats_batched(sae, T)
    k = int(min(cfg.d_sae, max(1, round(st["l0"]))))
    pick = np.random.default_rng(derive_seed(cfg.seed, "rand-init")).permutation(len(T))[:4096]
    rand = train_probe_sae(T[np.sort(pick)], d_sae=cfg.d_sae, k=k, steps=1, seed=derive_seed(cfg.seed, "sae"), trained=False).to(dev)
    return dict(saes=dict(sae=sae, rand=rand), stats=dict(sae=st, rand=sae_stats_batched(rand, T)), n_tokens=len(T), n_texts=p["n_texts"],
                pool=p["datasets"], control_k=k)

class LazyCodes(dict):
    "Per dataset, the codes of each SAE, computed when asked (the last one kept): the codes of all datasets at once would not fit in memory."
    def __init__(self, saes:dict, reps:dict): super().__init__(); self.saes, self.reps, self._last = saes, reps, (None, None)
    def __getitem__(self, name):
        if self._last[0] != name: self._last = (name, {k: sae_encode(s, self.reps[name]["X"]) for k, s in self.saes.items()})
        return self._last[1]
    def __contains__(self, name): return name in self.reps

def _pretrained_sae_and_codes(cfg, reps:dict, ood:dict, lm:HubLM):
    "`_sae_and_codes` for a pretrained SAE on a causal LM's raw residual stream (no scaling): the SAE, its control, their fit, and lazily made codes."
    import pandas as pd
    g = pretrained_sae(cfg, lm); saes = g["saes"]
    Xp = [r["X"] for r in reps.values()]
    tab = pd.DataFrame({n: {**{f"pool tokens/{k}": v for k, v in g["stats"][n].items()},
                            **{f"probing vectors/{k}": v for k, v in sae_stats_batched(s, Xp).items()}} for n, s in saes.items()}).T
    tab.insert(0, "model", lm.key); tab.insert(1, "training tokens", 0); tab.insert(2, "pool texts", g["n_texts"])
    for n, o in ood.items(): o["codes"] = {k: sae_encode(s, o["X"]) for k, s in saes.items()}
    return tab, LazyCodes(saes, reps), g



# %% [markdown]
# ## The experiment driver
#
# Per seed and dataset: a stratified test split (`test_frac`), the training pool the rest. The standard
# regime trains every baseline, every SAE-probe k and the random-init control at the graded k on at most `n_train`
# pool examples (a random, shuffled subset); for the datasets in `ood_datasets` the same probes are scored on the
# out-of-distribution file too (covariate shift). For the first `regime_datasets` datasets the scarcity, imbalance
# and noise regimes train the regime baselines and the SAE probes at the graded k on their own samples of the pool.
# Each row of the result records the cell, the method, its validation AUC and its test AUC.

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

def _methods(baselines, ks, random_ks=()):
    return [*baselines, *[f"sae_k{k}" for k in ks], *[f"rand_k{k}" for k in random_ks]]

def _hard_regimes(cfg, X, Zs, y, pool, std, te, rng, base) -> list[dict]:
    "The scarcity, imbalance and label-noise cells of one dataset and seed."
    rows, rmeth = [], _methods(cfg.regime_baselines, cfg.regime_k)
    cell = lambda tr, yy, reg, lev: probe_cell(X, Zs, yy, tr, te, rmeth, rng=rng, n_search=cfg.n_search, extra=dict(base, regime=reg, level=float(lev)))
    if "scarcity" in cfg.regimes:
        for n in cfg.scarcity_n:
            i = sample_balanced(y[pool], n, rng)
            if i is not None: rows += cell(pool[i], y, "scarcity", n)
    if "imbalance" in cfg.regimes:
        for f in cfg.imbalance_fracs:
            i = sample_imbalanced(y[pool], f, cfg.imbalance_n, rng)
            if i is not None: rows += cell(pool[i], y, "imbalance", f)
    if "noise" in cfg.regimes:
        for f in cfg.noise_fracs:
            yn = y.copy(); yn[std] = flip_labels(y[std], f, rng)          # training labels flipped, the test labels stay clean
            rows += cell(std, yn, "noise", f)
    return rows

def run_probes(cfg, reps:dict, codes:dict, ood:dict, progress:bool=True) -> "pd.DataFrame":
    "All probing cells of the experiment as one long table (dataset, seed, regime, level, method, val_auc, test_auc, ood_auc)."
    import pandas as pd
    from tqdm.auto import tqdm
    from sklearn.model_selection import train_test_split
    rows, hard = [], set(cfg.datasets[:cfg.regime_datasets])
    ks = sorted(set(cfg.k_values) | set(cfg.regime_k))
    for s, name in tqdm([(s, n) for s in range(cfg.n_seeds) for n in reps], desc="probing", disable=not progress):
        X, y = reps[name]["X"], reps[name]["y"]
        rng = np.random.default_rng(derive_seed(cfg.seed, s, name_key(name)))
        pool, te = train_test_split(np.arange(len(y)), test_size=cfg.test_frac, stratify=y, random_state=int(rng.integers(2**31)))
        base = dict(dataset=name, seed=s)
        std = pool[subsample(y[pool], cfg.n_train, rng)]
        o = {"X": ood[name]["X"], "y": ood[name]["y"], **ood[name]["codes"]} if name in ood else None
        rows += probe_cell(X, codes[name], y, std, te, _methods(cfg.baselines, ks, cfg.regime_k), rng=rng, n_search=cfg.n_search,
                           ood=o, extra=dict(base, regime="standard", level=float(len(std))))
        if name in hard: rows += _hard_regimes(cfg, X, codes[name], y, pool, std, te, rng, base)
    return pd.DataFrame(rows)


# %% [markdown]
# ## Measurements the claims read
#
# The unit is a (dataset, seed) pair: the cpu profile has one split per dataset, so 32 units in the standard regime,
# 12 in the hard regimes, 5 with an out-of-distribution file. Per unit, `regime_auc` averages a method's test AUC
# over the regime's cells (its training-set sizes, imbalance ratios or noise levels); the graded quantities are
# per-unit lists, so that two methods are compared unit by unit (paired) and the grader's interval is a t-interval
# over units. `quiver_deltas` gives, per unit, the quiver over the baselines plus the SAE probes at the graded k
# minus the quiver over the baselines alone (standard regime). The control is, per unit, the SAE probe's test AUC
# minus the random-init SAE probe's at the same k.

# %%
#| export
def regime_auc(df, regime:str, method:str, col:str="test_auc") -> "pd.Series":
    "Per (dataset, seed) unit: the mean of `method`'s `col` over the regime's cells."
    d = df[(df["regime"] == regime) & (df["method"] == method)]
    return d.groupby(["dataset", "seed"], sort=True)[col].mean()

def quiver_deltas(df, baselines, sae_methods, regime:str="standard") -> "pd.Series":
    "Per (dataset, seed): mean over the regime's cells of quiver(baselines + SAE) − quiver(baselines) test AUC."
    d = df[df["regime"] == regime]
    by = ("dataset", "seed", "level")
    bl = [m for m in baselines if m in set(d["method"])]
    _, _, b0 = quiver(d, bl, by=by); _, _, b1 = quiver(d, bl + list(sae_methods), by=by)
    j = b0.set_index(list(by))["test_auc"].rename("base").to_frame().join(b1.set_index(list(by))["test_auc"].rename("with_sae"))
    return (j["with_sae"] - j["base"]).groupby(level=["dataset", "seed"]).mean()

def _pairs(a:"pd.Series", b:"pd.Series") -> tuple[list, list]:
    "Two per-unit series on their common units, as lists in the same order."
    j = a.rename("a").to_frame().join(b.rename("b"), how="inner").dropna()
    return [float(v) for v in j["a"]], [float(v) for v in j["b"]]

def claim_metrics(df, cfg) -> dict:
    "The per-unit lists and numbers the claims read."
    m, k = {}, max(cfg.regime_k)
    for reg in ("standard", "scarcity", "imbalance", "noise", "ood"):
        regime, col = ("standard", "ood_auc") if reg == "ood" else (reg, "test_auc")
        if regime not in set(df["regime"]) or (reg == "ood" and ("ood_auc" not in df or df["ood_auc"].isna().all())):
            m[f"auc/{reg}/sae_k{k}"] = m[f"auc/{reg}/logreg"] = None; continue
        m[f"auc/{reg}/sae_k{k}"], m[f"auc/{reg}/logreg"] = _pairs(regime_auc(df, regime, f"sae_k{k}", col), regime_auc(df, regime, "logreg", col))
    qd = quiver_deltas(df, BASELINES, [f"sae_k{kk}" for kk in cfg.regime_k])
    m["quiver/delta"] = [float(v) for v in qd]
    for kk in cfg.regime_k:
        a, b = _pairs(regime_auc(df, "standard", f"sae_k{kk}"), regime_auc(df, "standard", f"rand_k{kk}"))
        m[f"control/gain/k{kk}"] = [x - y for x, y in zip(a, b)] if a else None
    noise = df[(df["regime"] == "noise") & (df["method"] == "logreg")]
    if len(noise) and noise["level"].nunique() >= 2:
        w = noise.pivot_table(index=["dataset", "seed"], columns="level", values="test_auc").dropna()
        m["noise/logreg_clean"], m["noise/logreg_noisiest"] = [float(v) for v in w[w.columns.min()]], [float(v) for v in w[w.columns.max()]]
    else: m["noise/logreg_clean"] = m["noise/logreg_noisiest"] = None
    return m


# %% [markdown]
# On a crafted table — two datasets, an SAE probe 0.02 below logistic regression and 0.10 above its random control,
# never chosen by the quiver — the lists are paired by unit and the quiver difference is 0:

# %%
_rows = []
for _d in ("a", "b"):
    for _m, _v in (("logreg", 0.9), ("pca", 0.85), ("sae_k16", 0.88), ("rand_k16", 0.78)):
        _rows.append(dict(dataset=_d, seed=0, regime="standard", level=100.0, method=_m, val_auc=_v, test_auc=_v, ood_auc=_v - 0.1))
    for _lev, _v in ((0.0, 0.9), (0.4, 0.7)):
        _rows.append(dict(dataset=_d, seed=0, regime="noise", level=_lev, method="logreg", val_auc=_v, test_auc=_v, ood_auc=np.nan))
_cm = claim_metrics(pd.DataFrame(_rows), Config.from_params("smoke", regime_k=[16]))
test_eq(_cm["quiver/delta"], [0.0, 0.0]); test_close(_cm["control/gain/k16"], [0.1, 0.1], eps=1e-12)
test_eq(_cm["auc/standard/sae_k16"], [0.88, 0.88]); test_eq(_cm["auc/ood/logreg"], [0.8, 0.8])
test_eq((_cm["noise/logreg_clean"], _cm["noise/logreg_noisiest"]), ([0.9, 0.9], [0.7, 0.7])); test_eq(_cm["auc/scarcity/logreg"], None)

# %% [markdown]
# ## The claims, as data (declared before the run)
#
# Every comparison is paired by unit and graded by its t-interval over units. "Does not beat" is graded as
# Δ AUC < 0.01: reproduced when the whole interval lies below one AUC point, not reproduced when it lies wholly above
# it. Every claim about SAE probes requires the SAE to be usable: FVU ≤ 0.15 on held-out tokens, and SAE probes that
# beat the random-init control by more than 0.01 at each k they are graded at.
#
# **A recorded tolerance on the control.** The same code on two machines (the ledger keeps both publications)
# trained SAEs with the same token FVU (0.128) whose advantage over the random-init control at k = 128 differed by up
# to 0.004 (mean 0.028 vs 0.0315; interval ends 0.0089 vs 0.012 and 0.047 vs 0.051): different summation orders in
# the CPU's kernels change every probe a little. The lower end sits within that difference of the 0.01 threshold, so
# the control carries the tolerance (`CONTROL_TOL`: its interval is widened by it) and reads *not met* on both
# machines, instead of a verdict that flips between them.

# %%
#| export
from functools import partial
from trustlib.results import Claim, Change, Above, Below, AtMost, Diff, Each, logged_claim

_FVU = AtMost("sae/token_fvu", 0.15, what="FVU of the SAE on held-out pool tokens")
CONTROL_TOL = 0.004   # the largest change of the k = 128 control's mean or interval ends between two machines' runs of the same code
_CONTROL = lambda k, tol=CONTROL_TOL: Above(f"control/gain/k{k}", 0.01, tol=tol, what=f"AUC(trained SAE) − AUC(random-init SAE), k = {k}")
_DATE = "2026-12-02"
_TOL_CHANGE = lambda ks: Change("2026-12-04", "condition on the control: " + " and ".join(_CONTROL(k, 0.0).text() for k in ks),
                                "condition on the control: " + " and ".join(_CONTROL(k).text() for k in ks),
                                "two publications of the same code on two machines put the k = 128 control at 0.028 [0.0089, 0.047] and "
                                "0.0315 [0.012, 0.051]: its lower end is within their difference (0.004) of the threshold, so the condition read "
                                "not met on one machine and met on the other; with the recorded tolerance it reads not met on both (a stricter "
                                "condition, decided from those two runs' control numbers only)")
_OLD_NO_GAIN = "reproduced if Δ AUC < 0.01; interval must clear the threshold"
_WHY_REGIME = ("graded by the one grader on per-dataset paired differences (a t-interval over datasets); the claim now requires a usable "
               "SAE: FVU ≤ 0.15 on held-out generic tokens and probes that beat the random-init SAE at the graded k = 128 (the control "
               "was graded at k = 16 only); 32 datasets, logistic regression without standardisation and the official holdout")

_claim = partial(logged_claim, _DATE)   # a claim whose log starts with the legacy page's rule (`old=`), then the later changes (`more=`)

def _regime(reg:str, paper:str) -> Claim:
    k = 128; what = f"AUC(SAE probe, k = {k}) − AUC(logistic regression)"
    name = "covariate shift" if reg == "ood" else reg
    return _claim(f"regime_{reg}", f"SAE probes (k = {k}) do not beat logistic regression: {name}", paper,
                  Below(Diff(f"auc/{reg}/sae_k{k}", f"auc/{reg}/logreg"), 0.01, what=what), requires=(_FVU, _CONTROL(k)), more=(_TOL_CHANGE((k,)),),
                  reason="out-of-distribution AUC of the standard-regime probes, English OOD sets" if reg == "ood" else "",
                  old=_OLD_NO_GAIN, why=_WHY_REGIME)

CLAIMS = [
    _claim("quiver", "Adding SAE probes to a validation-selected quiver of baselines does not raise mean test AUC",
           "0.9400 → 0.9367 (standard regime, Gemma-2-9B, 113 datasets); an SAE probe is chosen on 14.2 % of datasets",
           Below("quiver/delta", 0.01, what="quiver(baselines + SAE probes) − quiver(baselines), test AUC"),
           requires=(_FVU, _CONTROL(16), _CONTROL(128)), headline=True, more=(_TOL_CHANGE((16, 128)),),
           reason="standard regime; the SAE probes in the quiver are the graded k = 16 and 128", ours="Δ {quiver/delta:+.4f}; SAE chosen on {quiver/standard/sae_chosen_share:.1%} of datasets",
           old=_OLD_NO_GAIN, why="graded on the standard regime (the paper's headline number) over 32 datasets, paired per dataset; requires a usable SAE "
                                 "(FVU ≤ 0.15; beats the random-init SAE at every k the quiver offers, 16 and 128)"),
    _regime("standard", "logreg 0.9414 vs SAE 16k k = 128 0.9210"),
    _regime("scarcity", "logreg 0.8358 vs SAE 16k k = 128 0.8134 (mean over n)"),
    _regime("imbalance", "logreg 0.9294 vs SAE 16k k = 128 0.9109 (mean over ratios)"),
    _regime("noise", "SAE probes no better than the baselines (paper's plots)"),
    _regime("ood", "baseline 0.826 vs SAE 0.723 (mean over 8 OOD sets)"),
    _claim("noise_degrades", "Label noise lowers the logistic-regression AUC", "0.941 / 0.905 / 0.757 at noise 0 / 0.2 / 0.4",
           Above(Diff("noise/logreg_clean", "noise/logreg_noisiest"), 0.02, partially=0.0, what="AUC(no noise) − AUC(most noise)"),
           old="reproduced if AUC(noise 0) − AUC(noise 0.4) > 0.02; partially if AUC(noise 0) − AUC(noise 0.4) > 0; interval must clear the threshold",
           why="graded by the one grader on per-dataset paired differences (a t-interval over datasets instead of a bootstrap); logistic regression without standardisation"),
    Claim("interpretability", "SAE probes' interpretability wins (spurious features, dataset quality) are matched by simple baselines",
          "case studies on Gemma Scope latents", status="not_testable_offline",
          reason="the case studies inspect specific Gemma-2-9B SAE latents by hand on chosen datasets"),
    Claim("newer_architectures", "Newer SAE architectures (SAEBench SAEs on Gemma-2-2B) do not close the gap", "Section 6",
          status="not_testable_offline", reason="needs Gemma-2-2B and the SAEBench SAEs (hub downloads, GPU)"),
]

# %% [markdown]
# The tolerance at work: 32 per-dataset control gains with mean 0.0315 and a 95 % interval of about [0.012, 0.051]
# (the second machine's numbers) meet the condition without it and are within noise of it with it; a gain of 0.05
# with the same spread meets it either way.

# %%
_g = lambda m: [m + (0.0532 if i % 2 else -0.0532) for i in range(32)]
test_eq(_CONTROL(128, 0.0).evaluate({"control/gain/k128": _g(0.0315)}).verdict, "reproduced")
test_eq(_CONTROL(128).evaluate({"control/gain/k128": _g(0.0315)}).verdict, "inconclusive")
test_eq(_CONTROL(128).evaluate({"control/gain/k128": _g(0.05)}).verdict, "reproduced")
assert all(any(ch.date == "2026-12-04" for ch in c.log) for c in CLAIMS if any("control/gain" in str(t.spec()) for t in c.requires))


# %% [markdown]
# ## `run`

# %%
#| export
def _sae_and_codes(cfg, reps:dict, ood:dict, progress:bool):
    "The generic-pool SAE and its random-init control, their fit on held-out pool tokens and on the probing vectors, and every dataset's codes."
    import pandas as pd
    g = generic_sae(cfg, progress=progress); saes, scale = g["saes"], np.float32(g["scale"])
    Xp = np.concatenate([r["X"] for r in reps.values()]) * scale
    tab = pd.DataFrame({n: {**{f"pool tokens/{k}": v for k, v in g["stats"][n].items()},
                            **{f"probing vectors/{k}": v for k, v in sae_fit_stats(s, Xp).items()}} for n, s in saes.items()}).T
    tab.insert(0, "training tokens", g["n_tokens"]); tab.insert(1, "pool texts", g["n_texts"])
    codes = {n: {k: sae_encode(s, r["X"] * scale) for k, s in saes.items()} for n, r in reps.items()}
    for n, o in ood.items(): o["codes"] = {k: sae_encode(s, o["X"] * scale) for k, s in saes.items()}
    return tab, codes, g["cached"]

def run(cfg:Config, progress:bool=True):
    "The whole experiment: representations, the SAE (+ random control), all probing cells, tables, figures and measurements (no verdicts)."
    import time
    from functools import partial
    from tqdm.auto import tqdm
    cpu, lm = {}, (None if cfg.model == "minilm" else HubLM(cfg.model, cfg.lm_dtype))
    embed = representations if lm is None else partial(lm_representations, lm=lm)
    with cpu_threads(cfg.n_threads):
        t0 = time.process_time()
        kw = dict(layer=cfg.layer, pooling=cfg.pooling, max_length=cfg.max_length)
        reps = {n: embed(n, max_rows=cfg.max_rows, seed=derive_seed(cfg.seed, "rows", name_key(n)) % 2**31, **kw)
                for n in tqdm(cfg.datasets, desc="MiniLM representations" if lm is None else f"{cfg.model} representations", disable=not progress)}
        ood = {n: embed(_ood_name(n), max_rows=None, seed=0, **kw) for n in cfg.ood_datasets} if "ood" in cfg.regimes else {}
        cpu["embed"] = time.process_time() - t0; t0 = time.process_time()
        if lm is None: sae_tab, codes, cached = _sae_and_codes(cfg, reps, ood, progress)
        else: sae_tab, codes, g = _pretrained_sae_and_codes(cfg, reps, ood, lm); cached = False
        cpu["sae"] = time.process_time() - t0; t0 = time.process_time()
        df = run_probes(cfg, reps, codes, ood, progress=progress)
        cpu["probe"] = time.process_time() - t0
    res = _assemble(cfg, df, sae_tab, reps, ood)
    for k, v in cpu.items(): res.metrics[f"speed/{k}_cpu_seconds"] = round(v, 2)   # CPU seconds of this process per phase
    res.metrics["speed/sae_from_cache"] = bool(cached)     # the SAE phase read a trained SAE from the cache (no pool, no training)
    if lm is not None: res.metrics.update({"sae/control_k": g["control_k"], "sae/pool_tokens": g["n_tokens"]})
    return res

def _assemble(cfg, df, sae_tab, reps, ood):
    import pandas as pd
    from trustlib.results import Result, mean_ci
    parts = [df] + ([df[df["ood_auc"].notna()].assign(regime="ood", test_auc=lambda x: x["ood_auc"])] if "ood_auc" in df and df["ood_auc"].notna().any() else [])
    allr = pd.concat(parts, ignore_index=True)
    unit = allr.groupby(["regime", "method", "dataset", "seed"])["test_auc"].mean()
    order = [r for r in ("standard", "scarcity", "imbalance", "noise", "ood") if r in set(allr["regime"])]
    auc = pd.DataFrame({r: {m: f"{mean_ci(unit.loc[r, m].to_numpy()):.3f}" for m in unit.loc[r].index.get_level_values(0).unique()} for r in order})
    graded = [f"sae_k{k}" for k in cfg.regime_k]
    qrows = []
    for r in order:
        d, by = allr[allr.regime == r], ("dataset", "seed") if r == "ood" else ("dataset", "seed", "level")
        bl = [b for b in BASELINES if b in set(d["method"])]
        q0, _, _ = quiver(d, bl, by=by); q1, share, best = quiver(d, bl + [m for m in graded if m in set(d["method"])], by=by)
        qrows.append(dict(regime=r, baselines=", ".join(bl), baseline_quiver=q0, quiver_plus_sae=q1, delta=q1 - q0, sae_chosen_share=share,
                          logreg_alone=float(d[d.method == "logreg"]["test_auc"].mean()), cells=len(best)))
    qtab = pd.DataFrame(qrows).set_index("regime").round(4)
    metrics = claim_metrics(df, cfg)
    metrics.update({f"quiver/{r}/{c}": float(row[c]) for r, row in qtab.iterrows() for c in ("baseline_quiver", "quiver_plus_sae", "sae_chosen_share")})
    metrics.update({"sae/token_fvu": float(sae_tab.loc["sae", "pool tokens/fvu"]), "sae/probe_fvu": float(sae_tab.loc["sae", "probing vectors/fvu"]),
                    "sae/dead_frac": float(sae_tab.loc["sae", "pool tokens/dead_frac"]), "sae/rand_token_fvu": float(sae_tab.loc["rand", "pool tokens/fvu"])})
    metrics.update(n_datasets=len(reps), n_ood_sets=len(ood), n_cells=int(len(df.groupby(["dataset", "seed", "regime", "level"]))))
    std = df[df.regime == "standard"]
    ks = pd.DataFrame([dict(k=int(m.rsplit("_k", 1)[1]), sae="trained" if m.startswith("sae") else "random-init", test_auc=v)
                       for m, v in zip(std["method"], std["test_auc"]) if "_k" in m])
    tables = dict(auc=auc, quiver=qtab, sae=sae_tab.round(4), cells=df,
                  datasets=pd.DataFrame({n: dict(rows=len(r["y"]), positive_share=round(float(r["y"].mean()), 3), ood_rows=len(ood[n]["y"]) if n in ood else 0)
                                         for n, r in reps.items()}).T)
    return Result(paper="sae_probing", config=cfg.to_dict(), metrics=metrics, tables=tables, figures=dict(k_sweep=_fig_k(ks, std), regimes=_fig_regimes(df)))


def _fig_k(ks, std):
    import matplotlib.pyplot as plt; import seaborn as sns
    fig, ax = plt.subplots(figsize=(6.5, 4))
    if len(ks):
        sns.lineplot(ks, x="k", y="test_auc", hue="sae", style="sae", markers=True, errorbar=("ci", 95), seed=0, ax=ax)   # 95 % bootstrap interval over datasets (seeded: the same figure every run)
    lr = std[std.method == "logreg"]["test_auc"]
    ax.axhline(lr.mean(), color="k", ls="--", label=f"logistic regression ({lr.mean():.3f})")
    ax.set_xscale("log", base=2); ax.set_xlabel("k (SAE latents kept by the probe)"); ax.set_ylabel("test AUC (mean over datasets and seeds)")
    ax.set_title("SAE probes against k, standard regime (mean, 95 % bootstrap interval over datasets)"); ax.legend(fontsize=8); fig.tight_layout(); plt.close(fig)
    return fig

def _fig_regimes(df):
    import matplotlib.pyplot as plt; import seaborn as sns
    regs = [r for r in ("scarcity", "imbalance", "noise") if r in set(df["regime"])]
    fig, axes = plt.subplots(1, max(1, len(regs)), figsize=(5 * max(1, len(regs)), 3.8), squeeze=False)
    lab = dict(scarcity="training examples (balanced)", imbalance="positive share of the training set", noise="share of flipped training labels")
    for ax, r in zip(axes[0], regs):
        d = df[df.regime == r]
        sns.lineplot(d, x="level", y="test_auc", hue="method", marker="o", errorbar=("ci", 95), seed=0, ax=ax, legend=(r == regs[-1]))
        if r == "scarcity": ax.set_xscale("log", base=2)
        ax.set_xlabel(lab[r]); ax.set_ylabel("test AUC"); ax.set_title(r)
    if not regs: axes[0][0].text(0.5, 0.5, "no hard regime run at this profile", ha="center"); axes[0][0].set_axis_off()
    elif axes[0][-1].get_legend() is not None: axes[0][-1].legend(fontsize=7, loc="lower right")
    fig.suptitle("Hard regimes: mean test AUC and its 95 % bootstrap interval over datasets"); fig.tight_layout(); plt.close(fig)
    return fig


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
# ### The datasets and the SAE
#
# The datasets (rows after the cap, positive share, rows of the out-of-distribution file), and the SAE's fit on
# held-out pool tokens and on the probing sets' vectors, beside the random-init control:

# %%
result.tables["datasets"]

# %%
result.tables["sae"]

# %% [markdown]
# ### Methods × regimes: mean test AUC (95 % t-interval over datasets)
#
# `sae_k<k>` are probes on the trained SAE's top-k latents, `rand_k<k>` the same on the random-init control; the
# `ood` column is the covariate-shift test (probes of the standard regime, scored on the out-of-distribution file).

# %%
result.tables["auc"]

# %% [markdown]
# ### The quiver of arrows
#
# Per regime: the mean test AUC of the max-validation method over the baselines, over baselines + SAE probes at
# the graded k, their difference, the share of cells where an SAE probe was chosen, and logistic regression alone.

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
# The table grades each claim by the rule declared above it. The setting is far smaller than the paper's — a
# 22M-parameter bidirectional encoder instead of a 9B decoder, our own SAE trained on a few hundred thousand tokens
# of generic text instead of Gemma Scope, subsampled copies of the datasets, reduced regime grids — so the verdicts
# are about directions: whether SAE probes add anything to strong baselines once methods are chosen by validation
# AUC, not the paper's AUC values. Each SAE claim holds only under its conditions (the SAE reconstructs held-out
# text, and its probes beat those of a random-init SAE at the graded k); a result on a single dataset can flip either
# way at this scale; the claims are about averages over datasets.
