"""Benchmark: one SAE training step of trustlib.interp.sae against sae-lens, same architecture and size, on CPU.

Run it in an environment that has both (sae-lens is not a trustlib dependency), e.g.

    python -m venv /tmp/saelens_venv && /tmp/saelens_venv/bin/pip install "sae-lens==6.54.12" "torch==2.13.0"
    PYTHONPATH=. /tmp/saelens_venv/bin/python tools/bench_sae.py [--d 384 --d-sae 6144 --batch 1024 --k 32 --steps 10 --repeats 5]

A step is: training loss (forward), backward, the decoder-gradient projection where the architecture has it,
gradient clipping and one Adam update. The two libraries are measured side by side and interleaved: each repeat
times `--steps` steps of every architecture in both libraries (which library goes first alternates between
repeats), so a change of machine load hits both alike. Per repeat the median CPU milliseconds per step of each
library give a ratio sae-lens / trustlib (> 1: trustlib is faster); reported are the median of the repeats and
their range, the median wall milliseconds, and the load average at the start and the end. It also cross-checks
the losses: with identical weights both libraries' reconstruction errors of the full dictionary agree on the
same batch. `--out FILE.json` writes the figures.
"""
import argparse, json, os, statistics, time
import torch

def _time(step, n, warm=2):
    for _ in range(warm): step()
    cpu, wall = [], []
    for _ in range(n):
        c0, w0 = time.process_time(), time.perf_counter(); step()
        cpu.append(time.process_time() - c0); wall.append(time.perf_counter() - w0)
    return 1000 * statistics.median(cpu), 1000 * statistics.median(wall)

def _widths(F):
    from trustlib.interp.sae import group_sizes
    out, acc = [], 0
    for s in group_sizes(F): acc += s; out.append(acc)
    return out

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
    import sae_lens.saes.matryoshka_batchtopk_sae as mt
    from sae_lens.saes.sae import TrainStepInput
    if arch == "topk": sae = tk.TopKTrainingSAE(tk.TopKTrainingSAEConfig(d_in=d, d_sae=F, k=k, aux_loss_coefficient=1/32))
    elif arch == "batchtopk": sae = btk.BatchTopKTrainingSAE(btk.BatchTopKTrainingSAEConfig(d_in=d, d_sae=F, k=k, aux_loss_coefficient=1/32))
    elif arch == "matryoshka":
        sae = mt.MatryoshkaBatchTopKTrainingSAE(mt.MatryoshkaBatchTopKTrainingSAEConfig(d_in=d, d_sae=F, k=k, aux_loss_coefficient=1/32,
                                                                                        matryoshka_widths=_widths(F)))
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
    "Reconstruction error of the full dictionary in both libraries, with trustlib's weights copied into the sae-lens SAE."
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
    ap.add_argument("--steps", type=int, default=10); ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1); ap.add_argument("--archs", default="topk,batchtopk,matryoshka,relu")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.repeats < 5: raise SystemExit("--repeats must be at least 5")
    torch.set_num_threads(a.threads); torch.manual_seed(0)
    import sae_lens
    X = torch.randn(a.batch, a.d)
    archs = a.archs.split(",")
    load0 = os.getloadavg()
    print(f"sae-lens {sae_lens.__version__} · torch {torch.__version__} · d = {a.d}, F = {a.d_sae}, batch = {a.batch}, k = {a.k}, "
          f"{a.threads} thread(s); {a.repeats} interleaved repeats of {a.steps} steps; load average {load0[0]:.1f} / {load0[1]:.1f} / {load0[2]:.1f}")
    steps = {(arch, lib): (ours if lib == "trustlib" else theirs)(arch, a.d, a.d_sae, a.k, X)[1] for arch in archs for lib in ("trustlib", "sae-lens")}
    res = {arch: dict(trustlib=[], sae_lens=[], trustlib_wall=[], sae_lens_wall=[], ratio=[]) for arch in archs}
    for r in range(a.repeats):
        for arch in archs:
            order = ("trustlib", "sae-lens") if r % 2 == 0 else ("sae-lens", "trustlib")
            t = {lib: _time(steps[arch, lib], a.steps) for lib in order}
            res[arch]["trustlib"].append(t["trustlib"][0]); res[arch]["sae_lens"].append(t["sae-lens"][0])
            res[arch]["trustlib_wall"].append(t["trustlib"][1]); res[arch]["sae_lens_wall"].append(t["sae-lens"][1])
            res[arch]["ratio"].append(t["sae-lens"][0] / t["trustlib"][0])
    load1 = os.getloadavg()
    print(f"{'arch':10s} {'trustlib ms cpu (wall)':>24s} {'sae-lens ms cpu (wall)':>24s} {'ratio cpu [range]':>22s} {'MSE trustlib':>13s} {'MSE sae-lens':>13s}")
    med = statistics.median
    for arch in archs:
        r = res[arch]; m1, m2 = cross_check(arch, a.d, a.d_sae, a.k, X)
        r.update(mse_trustlib=m1, mse_sae_lens=m2)
        print(f"{arch:10s} {med(r['trustlib']):11.1f} ({med(r['trustlib_wall']):8.1f}) {med(r['sae_lens']):11.1f} ({med(r['sae_lens_wall']):8.1f}) "
              f"{med(r['ratio']):8.2f} [{min(r['ratio']):.2f}, {max(r['ratio']):.2f}] {m1:13.4f} {m2:13.4f}")
    print(f"load average at the end {load1[0]:.1f} / {load1[1]:.1f} / {load1[2]:.1f}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(dict(sae_lens=sae_lens.__version__, torch=torch.__version__, config=vars(a), load_start=load0, load_end=load1, results=res), f, indent=1)

if __name__ == "__main__":
    main()
