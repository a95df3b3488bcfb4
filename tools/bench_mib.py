"""Benchmark: edge attribution on the 4-layer, 4-head IOI model of trustlib.interp.circuits (479 edges), on CPU.

    PYTHONPATH=. python tools/bench_mib.py [--n 200 --layers 4 --heads 4 --threads 1 --train-steps 600]

Measures, side by side in one run, the CPU and wall seconds of scoring all edges for `--n` prompts with
EAP (one clean and one corrupted forward, one backward), EAP-IG-inputs with 5 steps (MIB's setting) and
exact activation patching (one forward per edge). The targets are: EAP-IG <= 5 s and exact patching <= 60 s
for 200 prompts. CPU seconds are the number to compare when the machine is shared (wall time is then
inflated by other processes). The model is trained briefly first (`--train-steps`, 0 for random weights;
timing does not depend on the weights).
"""
import argparse, time
import numpy as np
import torch

def timed(fn):
    c0, w0 = time.process_time(), time.perf_counter(); out = fn()
    return out, time.process_time() - c0, time.perf_counter() - w0

def main(argv=None):
    from trustlib.interp.circuits import GraphModel, train_ioi, make_ioi, ioi_vocab, eap, eap_ig_inputs, exact_patching, n_edges
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200); ap.add_argument("--layers", type=int, default=4); ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--threads", type=int, default=1); ap.add_argument("--train-steps", type=int, default=600)
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    vocab = ioi_vocab()
    model, log = train_ioi(a.layers, a.heads, 64, 256, steps=max(1, a.train_steps), seed=0, vocab=vocab)
    gm = GraphModel(model)
    for p in gm.parameters(): p.requires_grad_(False)
    data = make_ioi(a.n, np.random.default_rng(0), vocab)
    print(f"model {a.layers}x{a.heads}, {gm.graph.n_edges} edges (formula {n_edges(a.layers, a.heads)}), {a.n} prompts, "
          f"{a.threads} thread(s), trained {log['steps']} steps to accuracy {log['acc']:.3f}")
    rows = []
    for name, fn, target in [("EAP", lambda: eap(gm, data, batch_size=a.n), None),
                             ("EAP-IG-inputs (5 steps)", lambda: eap_ig_inputs(gm, data, steps=5, batch_size=a.n), 5.0),
                             ("exact patching", lambda: exact_patching(gm, data), 60.0)]:
        _, cpu, wall = timed(fn)
        rows.append((name, cpu, wall, target))
    print(f"{'method':<26}{'CPU s':>9}{'wall s':>9}  target")
    for name, cpu, wall, target in rows:
        ok = "" if target is None else f"<= {target:g} s CPU: {'met' if cpu <= target else 'NOT met'}"
        print(f"{name:<26}{cpu:>9.2f}{wall:>9.2f}  {ok}")
    return rows

if __name__ == "__main__":
    main()
