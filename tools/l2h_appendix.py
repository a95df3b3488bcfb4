"""Differential check: trustlib's L2H against a plain, step-by-step transcription of the procedure that the
paper lists in its appendix (Palumbo et al., ICML 2025, arXiv 2410.07858, Appendix A, Figure 4).

`appendix_l2h` is written independently of trustlib and follows the appendix's procedure literally:
groups are tuples of cluster ids in merge order; each step scores every group by the sum of its clusters'
mean confidence, takes the first group with the lowest score in list order, re-assigns that group's points
with a softmax over the remaining clusters only, scores every other group by the mean over its clusters of
the re-assigned probability mass, takes the first group with the highest score in list order, and appends
the merged group at the end of the list. The only departure, for speed, is that the per-cluster mean
confidence (which never changes) is computed once instead of at every step; it yields the same floats.
The appendix takes the mean of an empty set for a cluster that owns no point, so inputs must give every
cluster at least one point (checked).

Usage (from the repository root):
  PYTHONPATH=$PWD python tools/l2h_appendix.py [--K 1000] [--N 20000] [--seed 0]
prints, for a hierarchical synthetic logits matrix and a plain Gaussian one, whether the merges agree and
how long each implementation took (CPU seconds).
"""
import argparse, sys, time
import numpy as np
from scipy.special import softmax


def appendix_l2h(logits) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    "The K - 1 merges (lowest-score group, partner group) of the appendix procedure, groups as tuples of cluster ids."
    logits = np.asarray(logits)
    K = logits.shape[1]
    prob = softmax(logits, axis=-1)
    assign, conf = prob.argmax(-1), prob.max(-1)
    owners = np.bincount(assign, minlength=K)
    if (owners == 0).any():
        raise ValueError(f"clusters {np.flatnonzero(owners == 0).tolist()} own no point: the appendix procedure is undefined there")
    mean_conf = [np.mean(conf[assign == c]) for c in range(K)]
    groups = [(c,) for c in range(K)]
    merges = []
    for _ in range(K - 1):
        # phase 1: the least confident group (first one in list order among equal scores)
        scores = [sum([mean_conf[c] for c in g]) for g in groups]
        low = 0
        for t in range(1, len(groups)):
            if scores[t] < scores[low]: low = t
        lsg = groups[low]
        # phase 2: re-assign its points to the clusters outside it
        pts = logits[np.flatnonzero(np.isin(assign, lsg))]
        outside = [c for c in range(K) if c not in lsg]
        inside = [c for c in range(K) if c in lsg]
        masked = np.zeros_like(pts)
        masked[:, outside] = softmax(pts[:, outside], axis=-1)
        masked[:, inside] = 0.0
        re_assign, re_conf = masked.argmax(-1), masked.max(-1)
        cand = [g for g in groups if g != lsg]
        pscore = [np.mean([np.sum(re_conf[re_assign == c]) for c in g]) for g in cand]
        high = 0
        for t in range(1, len(cand)):
            if pscore[t] > pscore[high]: high = t
        mtg = cand[high]
        groups = [g for g in groups if g != lsg and g != mtg] + [lsg + mtg]
        merges.append((lsg, mtg))
    return merges


def compare(logits) -> dict:
    "Run both implementations on `logits`; merges equal?, first differing step, CPU seconds of each."
    from trustlib.clustering.l2h import L2H
    c0 = time.process_time(); ref = appendix_l2h(logits); t_ref = time.process_time() - c0
    c0 = time.process_time(); ours = L2H().fit(logits).merges_; t_ours = time.process_time() - c0
    first = next((t for t, (a, b) in enumerate(zip(ref, ours)) if a != b), None)
    return dict(K=logits.shape[1], N=logits.shape[0], dtype=str(logits.dtype), identical=ref == ours and len(ref) == len(ours),
                first_difference=first, appendix_cpu_s=round(t_ref, 2), trustlib_cpu_s=round(t_ours, 2))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--K", type=int, default=1000); ap.add_argument("--N", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    from threadpoolctl import threadpool_limits
    from trustlib.clustering.l2h import synthetic_logits
    rng = np.random.default_rng(a.seed)
    cases = {"hierarchical synthetic logits (float64)": synthetic_logits(a.K, a.N, rng)[0].astype(np.float64),
             "i.i.d. Gaussian logits, scale 3 (float64)": 3.0 * rng.normal(size=(a.N, a.K))}
    ok = True
    with threadpool_limits(limits=1):
        for name, L in cases.items():
            r = compare(L); ok &= r["identical"]
            print(f"{name}: " + ", ".join(f"{k} = {v}" for k, v in r.items()), flush=True)
    print("all identical" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
