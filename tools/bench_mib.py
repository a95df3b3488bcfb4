"""Benchmark: edge attribution on the IOI model of trustlib.interp.circuits (the cpu profile's 3-layer, 4-head model, 262 edges), on CPU.

    PYTHONPATH=. python tools/bench_mib.py [--n 200 --layers 3 --heads 4 --d-model 32 --d-mlp 128 --threads 1 --repeats 5 --out bench_mib.json]

Measures the CPU seconds (and wall seconds) of scoring every edge for `--n` prompts with EAP (one clean and one
corrupted forward, one backward), EAP-IG-inputs with 5 steps (MIB's setting) and exact activation patching (one
patched forward per edge, batched by slot), over `--repeats` interleaved rounds: round r runs every method once,
so a burst of load on a shared machine hits all methods alike instead of one. Each round also times a reference
— a float32 matrix multiply (GFLOP/s) on the same thread count — and the report gives, per method, the median
and range of the CPU seconds, the median wall seconds, the median CPU time in units of the reference (seconds ×
GFLOP/s: how many reference GFLOPs the method costs, comparable across machines), the peak resident memory and
the load average before and after. The targets (EAP-IG <= 5 s, exact patching <= 60 s of CPU for 200 prompts)
are judged on the median CPU seconds; a target whose range straddles it is reported as within noise. The model
is trained briefly first (`--train-steps`; timing does not depend on the weights).
"""
import argparse, json, os, resource, statistics, time
import numpy as np
import torch

def cpu_wall(fn):
    "(result, CPU seconds of this process, wall seconds) of `fn()`."
    c0, w0 = time.process_time(), time.perf_counter(); out = fn()
    return out, time.process_time() - c0, time.perf_counter() - w0

def matmul_gflops(n:int=384, reps:int=10) -> float:
    "Reference: float32 n×n matrix multiplies per CPU second, in GFLOP/s."
    a, b = torch.randn(n, n), torch.randn(n, n)
    _, cpu, _ = cpu_wall(lambda: [a @ b for _ in range(reps)])
    return 2 * n ** 3 * reps / max(cpu, 1e-9) / 1e9

def main(argv=None):
    from trustlib.interp.circuits import GraphModel, train_ioi, make_ioi, ioi_vocab, eap, eap_ig_inputs, exact_patching, n_edges
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200); ap.add_argument("--layers", type=int, default=3); ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--d-model", type=int, default=32); ap.add_argument("--d-mlp", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1); ap.add_argument("--train-steps", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=5); ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    if a.repeats < 5: ap.error("--repeats must be at least 5")
    torch.set_num_threads(a.threads)
    vocab = ioi_vocab()
    model, log = train_ioi(a.layers, a.heads, a.d_model, a.d_mlp, steps=max(1, a.train_steps), seed=0, vocab=vocab)
    gm = GraphModel(model)
    for p in gm.parameters(): p.requires_grad_(False)
    data = make_ioi(a.n, np.random.default_rng(0), vocab)
    load0 = os.getloadavg()
    print(f"model {a.layers}x{a.heads}, d {a.d_model}, {gm.graph.n_edges} edges (formula {n_edges(a.layers, a.heads)}), {a.n} prompts, "
          f"{a.threads} thread(s), {a.repeats} interleaved repeats, trained {log['steps']} steps to accuracy {log['acc']:.3f}; load {load0[0]:.1f}")
    methods = [("EAP", lambda: eap(gm, data, batch_size=a.n), None),
               ("EAP-IG-inputs (5 steps)", lambda: eap_ig_inputs(gm, data, steps=5, batch_size=a.n), 5.0),
               ("exact patching", lambda: exact_patching(gm, data), 60.0)]
    cpu = {m: [] for m, _, _ in methods}; wall = {m: [] for m, _, _ in methods}; ref = []
    for r in range(a.repeats):
        ref.append(matmul_gflops())
        for name, fn, _ in methods:
            _, c, w = cpu_wall(fn); cpu[name].append(c); wall[name].append(w)
    gf = statistics.median(ref)
    rows = []
    print(f"reference matmul: median {gf:.1f} GFLOP/s (range {min(ref):.1f}-{max(ref):.1f})")
    print(f"{'method':<26}{'CPU s median':>13}{'range':>16}{'wall s':>9}{'ref GFLOP':>11}  target")
    for name, _, target in methods:
        med, lo, hi = statistics.median(cpu[name]), min(cpu[name]), max(cpu[name])
        verdict = "" if target is None else ("met" if hi <= target else "NOT met" if lo > target else "within noise")
        rows.append(dict(method=name, cpu_median_s=med, cpu_min_s=lo, cpu_max_s=hi, wall_median_s=statistics.median(wall[name]),
                         reference_gflop=med * gf, target_cpu_s=target, target=verdict or None, cpu_s=cpu[name]))
        print(f"{name:<26}{med:>13.2f}{f'{lo:.2f}-{hi:.2f}':>16}{statistics.median(wall[name]):>9.2f}{med * gf:>11.1f}  "
              + ("" if target is None else f"<= {target:g} s CPU: {verdict}"))
    report = dict(config=vars(a), load_before=load0, load_after=os.getloadavg(), reference_gflops=ref,
                  peak_rss_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, rows=rows)
    print(f"peak memory {report['peak_rss_mib']:.0f} MiB; load after {report['load_after'][0]:.1f}")
    if a.out:
        with open(a.out, "w") as f: json.dump(report, f, indent=1)
    return report

if __name__ == "__main__":
    main()
