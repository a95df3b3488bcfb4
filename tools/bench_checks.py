"""Benchmark: the two per-call checks that SAE training and probing run thousands of times, each against the call it replaced.

    python tools/bench_checks.py [--repeats 7] [--out runs/bench]

Cases, interleaved in a seeded shuffled order each round (trustlib.bench.interleaved), so machine load hits each pair alike:
- `finite_aminmax` vs `finite_isfinite`: the SAE activation check (`trustlib.interp.sae.check_activations`, one
  `torch.aminmax` pass) against `torch.isfinite(x).all()`, 200 calls on a 512 × 384 batch and 5 on a 100,000 × 384 matrix;
- `auc_trustlib` vs `auc_sklearn`: `trustlib.metrics.binary_auc` against `sklearn.metrics.roc_auc_score` on 2,000
  validation folds of 100 rows (the size of SAE probing's folds); the two must agree bit for bit, which is checked.
Reports per case the median CPU seconds and the median per-round ratio to its peer with a 90 % interval over rounds,
the load average, and a reference (matmul GFLOP/s, memory GB/s) measured in the same run; writes a dated JSON/CSV under --out.
"""
import argparse, sys
from pathlib import Path
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

def cases():
    import torch
    from sklearn.metrics import roc_auc_score
    from trustlib.interp.sae import check_activations
    from trustlib.metrics import binary_auc
    g = torch.Generator().manual_seed(0)
    small, large = torch.randn(512, 384, generator=g), torch.randn(100_000, 384, generator=g)
    rng = np.random.default_rng(0)
    folds = [(rng.integers(0, 2, 100), rng.normal(size=100)) for _ in range(2000)]
    for y, _ in folds: y[:2] = (0, 1)
    def isfinite_all(x):
        if not torch.isfinite(x).all(): raise ValueError("x contains NaN or inf")
    def finite(check):
        def f():
            for _ in range(200): check(small)
            for _ in range(5): check(large)
        return f
    def auc(fn):
        return lambda: dict(auc_sum=float(sum(fn(y, s) for y, s in folds)))
    return {"finite_aminmax": finite(check_activations), "finite_isfinite": finite(isfinite_all),
            "auc_trustlib": auc(binary_auc), "auc_sklearn": auc(lambda y, s: float(roc_auc_score(y, s)))}

def main(argv=None):
    import pandas as pd
    from trustlib.bench import interleaved, summarize, write_bench, reference_probe, load_average
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7); ap.add_argument("--out", default=str(ROOT / "runs" / "bench"))
    a = ap.parse_args(argv)
    load0, ref = load_average(), reference_probe()
    samples = interleaved(cases(), repeats=a.repeats, progress=True)
    sums = samples[samples.case.str.startswith("auc")].groupby("case")["auc_sum"].unique()
    if len({v for vals in sums for v in vals}) != 1: raise SystemExit(f"binary_auc and roc_auc_score disagree: {sums.to_dict()}")
    summary = pd.concat([summarize(samples[samples.case.str.startswith("finite")], peer="finite_isfinite"),
                         summarize(samples[samples.case.str.startswith("auc")], peer="auc_sklearn")], ignore_index=True)
    print(summary.to_string(index=False)); print("load", load0, "->", load_average(), "reference", ref)
    print("->", write_bench("checks", summary, samples, reference=ref, out_dir=a.out, notes=dict(repeats=a.repeats, load_start=load0)))
    return summary

if __name__ == "__main__":
    main()
