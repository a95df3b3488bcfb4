"""Benchmark: one SAE training step of trustlib.interp.sae against sae-lens, same architecture and size, on CPU.

Run it in an environment that has both (sae-lens is not a trustlib dependency), e.g.

    python -m venv /tmp/saelens_venv && /tmp/saelens_venv/bin/pip install "sae-lens==6.54.12" "torch==2.13.0"
    PYTHONPATH=. /tmp/saelens_venv/bin/python tools/bench_sae.py [--d 384 --d-sae 6144 --batch 1024 --k 32 --steps 20 --threads 1]

A step is: training loss (forward), backward, the decoder-gradient projection where the architecture has it,
gradient clipping and one Adam update. Reported: median CPU and wall milliseconds per step and the ratio
sae-lens / trustlib (> 1: trustlib is faster). It also cross-checks the losses: with identical weights both
libraries' MSE terms of a TopK / BatchTopK / ReLU (standard) SAE agree on the same batch.
"""
import argparse, statistics, time
import torch

def _time(step, n, warm=3):
    for _ in range(warm): step()
    cpu, wall = [], []
    for _ in range(n):
        c0, w0 = time.process_time(), time.perf_counter(); step()
        cpu.append(time.process_time() - c0); wall.append(time.perf_counter() - w0)
    return 1000 * statistics.median(cpu), 1000 * statistics.median(wall)

def ours(arch, d, F, k, X):
    from trustlib.interp.sae import make_sae
    sae = make_sae(arch, d, F, sparsity=k if arch != "relu" else 0.05, seed=0, dead_after=10**12)
    opt = torch.optim.Adam(sae.parameters(), lr=3e-4)
    def step():
        loss, _ = sae.loss(X)
        opt.zero_grad(set_to_none=True); loss.backward(); sae.before_step()
        torch.nn.utils.clip_grad_norm_(sae.parameters(), 1.0); opt.step(); sae.after_step()
    return sae, step

def theirs(arch, d, F, k, X):
    import sae_lens.saes.topk_sae as tk, sae_lens.saes.batchtopk_sae as btk, sae_lens.saes.standard_sae as st
    from sae_lens.saes.sae import TrainStepInput
    if arch == "topk": sae = tk.TopKTrainingSAE(tk.TopKTrainingSAEConfig(d_in=d, d_sae=F, k=k, aux_loss_coefficient=1/32))
    elif arch == "batchtopk": sae = btk.BatchTopKTrainingSAE(btk.BatchTopKTrainingSAEConfig(d_in=d, d_sae=F, k=k, aux_loss_coefficient=1/32))
    elif arch == "relu": sae = st.StandardTrainingSAE(st.StandardTrainingSAEConfig(d_in=d, d_sae=F, l1_coefficient=0.05))
    else: raise ValueError(arch)
    opt = torch.optim.Adam(sae.parameters(), lr=3e-4)
    dead = torch.zeros(F, dtype=torch.bool)
    coeffs = {"l1": 0.05} if arch == "relu" else {}
    def step():
        out = sae.training_forward_pass(TrainStepInput(sae_in=X, coefficients=coeffs, dead_neuron_mask=dead, n_training_steps=0, is_logging_step=False))
        opt.zero_grad(set_to_none=True); out.loss.backward()
        torch.nn.utils.clip_grad_norm_(sae.parameters(), 1.0); opt.step()
    return sae, step

def cross_check(arch, d, F, k, X):
    "MSE of both libraries with trustlib's weights copied into the sae-lens SAE."
    from sae_lens.saes.sae import TrainStepInput
    a, _ = ours(arch, d, F, k, X); b, _ = theirs(arch, d, F, k, X)
    with torch.no_grad():
        for n in ("W_enc", "W_dec", "b_enc", "b_dec"): getattr(b, n).copy_(getattr(a, n))
        _, pa = a.loss(X)
        out = b.training_forward_pass(TrainStepInput(sae_in=X, coefficients={"l1": 0.05} if arch == "relu" else {},
                                                     dead_neuron_mask=torch.zeros(F, dtype=torch.bool), n_training_steps=0, is_logging_step=False))
    return pa["mse"], float(out.losses["mse_loss"])

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", type=int, default=384); ap.add_argument("--d-sae", type=int, default=6144)
    ap.add_argument("--batch", type=int, default=1024); ap.add_argument("--k", type=int, default=32)
    ap.add_argument("--steps", type=int, default=20); ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--archs", default="topk,batchtopk,relu")
    a = ap.parse_args()
    torch.set_num_threads(a.threads); torch.manual_seed(0)
    import sae_lens
    X = torch.randn(a.batch, a.d)
    print(f"sae-lens {sae_lens.__version__} · torch {torch.__version__} · d = {a.d}, F = {a.d_sae}, batch = {a.batch}, k = {a.k}, "
          f"{a.threads} thread(s), median of {a.steps} steps")
    print(f"{'arch':10s} {'trustlib ms (cpu/wall)':>24s} {'sae-lens ms (cpu/wall)':>24s} {'ratio (cpu)':>12s} {'MSE trustlib':>13s} {'MSE sae-lens':>13s}")
    for arch in a.archs.split(","):
        tc, tw = _time(ours(arch, a.d, a.d_sae, a.k, X)[1], a.steps)
        sc, sw = _time(theirs(arch, a.d, a.d_sae, a.k, X)[1], a.steps)
        m1, m2 = cross_check(arch, a.d, a.d_sae, a.k, X)
        print(f"{arch:10s} {tc:11.1f} / {tw:9.1f} {sc:11.1f} / {sw:9.1f} {sc / tc:12.2f} {m1:13.4f} {m2:13.4f}")

if __name__ == "__main__":
    main()
