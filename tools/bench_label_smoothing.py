"""Memory/time benchmark of the label-smoothed linear cross-entropy (issues 10, 38 and 42).

Naive PyTorch (`F.cross_entropy(E @ C.T, y, label_smoothing=β)`) vs `trustlib.calibration.label_smoothing.
linear_smooth_ce` (chunked, logits recomputed in the backward) and its fused variant (gradients computed in
the forward), one forward + backward each, side by side in one run. Per vocabulary size: each case's peak memory
in a fresh python process (the peak resident set size above the baseline with the inputs allocated: Linux VmHWM
reset through /proc/self/clear_refs; elsewhere ru_maxrss), and CPU times (`time.process_time`) in `--repeats`
interleaved rounds in one process (each round times every implementation once, the order rotating), after a
warm-up call each. Reported: the median CPU and wall seconds per implementation, the median of the per-round CPU-time
ratios to the naive loss with its distribution-free 95 % interval (six rounds or more), the load average before and
after, the machine. Not a timed test: run it by hand; it writes a CSV that the label_smoothing notebook shows.

Usage:
    python tools/bench_label_smoothing.py        # N=8192, bfloat16, D=1024, V=32k and 128k, 6 rounds
    python tools/bench_label_smoothing.py --configs float32:256 --vocab 32768 --impls naive chunked --repeats 8
"""
import argparse, os, platform, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "nbs" / "papers" / "calibration" / "label_smoothing_bench.csv"


def _mem_available_gib() -> float | None:
    try:
        for line in open('/proc/meminfo'):
            if line.startswith('MemAvailable:'): return int(line.split()[1]) / 2**20
    except OSError: return None
    return None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tokens", type=int, default=8192, help="N tokens (default 8192)")
    p.add_argument("--configs", nargs="+", default=["bfloat16:1024"], help="dtype:D pairs to benchmark (default bfloat16:1024)")
    p.add_argument("--vocab", type=int, nargs="+", default=[32768, 131072], help="vocabulary sizes V")
    p.add_argument("--impls", nargs="+", default=["naive", "chunked", "fused"], choices=["naive", "chunked", "fused"])
    p.add_argument("--beta", type=float, default=0.1, help="label smoothing β (default 0.1)")
    p.add_argument("--repeats", type=int, default=6, help="interleaved timing rounds per vocabulary size (default 6; >= 6 give an interval)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads per case (default 1)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"CSV to write (default {DEFAULT_OUT.relative_to(ROOT)})")
    p.add_argument("--min-free-gib", type=float, default=2.0, help="skip a naive case if MemAvailable is below its estimate plus this margin")
    a = p.parse_args(argv)

    from trustlib.calibration.label_smoothing import benchmark
    from trustlib.results import atomic_write_text
    import pandas as pd
    frames = []
    configs = []
    for c in a.configs:
        dtype, _, dim = c.partition(":")
        if dtype not in ("float32", "bfloat16", "float64", "float16") or not dim.isdigit(): p.error(f"--configs: {c!r} is not dtype:D")
        configs.append((dtype, int(dim)))
    for (dtype, dim), V in [(c, V) for c in configs for V in a.vocab]:
        impls = list(a.impls)
        size = {"float64": 8, "float32": 4}.get(dtype, 2)
        est = 3 * a.tokens * V * size / 2**30   # naive: logits, log-softmax output and their gradient
        free = _mem_available_gib()
        if "naive" in impls and free is not None and free < est + a.min_free_gib:
            print(f"{dtype}, D={dim}, V={V}: skipping naive (needs ~{est:.1f} GiB, {free:.1f} GiB available)", file=sys.stderr)
            impls.remove("naive")
        t0 = time.time()
        df = benchmark((V,), a.tokens, dim, impls, beta=a.beta, repeats=a.repeats, threads=a.threads, subprocess=True, dtype=dtype)
        print(f"{dtype}, D={dim}, V={V}: {time.time() - t0:.0f} s", file=sys.stderr)
        frames.append(df)
    df = pd.concat(frames, ignore_index=True)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor()) if os.path.exists("/proc/cpuinfo") else platform.processor()
    df["machine"] = f"{model}, {os.cpu_count()} cpus, load {load:.1f} at the end, {platform.system()}"
    import torch
    df["torch"] = torch.__version__
    atomic_write_text(a.out, df.to_csv(index=False))
    cols = ["impl", "dtype", "d_model", "vocab_size", "chunk_size", "peak_mib", "memory_vs_naive", "repeats", "cpu_s", "cpu_vs_naive",
            "cpu_vs_naive_lo", "cpu_vs_naive_hi", "time_s", "wall_vs_naive", "load_before", "load_after"]
    print(df[cols].round(3).to_string(index=False))
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
