#!/usr/bin/env python3
"""The communication model of docs/distributed.md, from measured all-reduce times.

Reads the RESULT lines of `mpirun -np 2 graft_ddp_step --mode=allreduce` (stdin), fits the ring
all-reduce cost of one bucket of S bytes over N ranks,

    T(S, N) = 2 (N - 1) alpha + 2 (N - 1) / N * S / beta,

(for N = 2: T = 2 alpha + S / beta) by least squares, prints the fit against the measurements, and
what the model predicts for a 100M-parameter float32 model (400 MB of gradients) on 8, 64 and 512
ranks on a 100 Gb/s network, with bucket sizes chosen so that the latency term stays under a tenth
of the bandwidth term; then the memory per rank with ZeRO stage 0, 1 and 2 for that model at 64 ranks
(Adam: two float32 moments per parameter).

Usage: mpirun -np 2 build-bench/bench/graft_ddp_step --mode=allreduce | python3 bench/comm_model.py
"""
import math
import re
import sys

MiB = 1024 * 1024


def fit(points):
    """Least squares T = a + b S."""
    n = len(points)
    sx = sum(s for s, _ in points)
    sy = sum(t for _, t in points)
    sxx = sum(s * s for s, _ in points)
    sxy = sum(s * t for s, t in points)
    b = (n * sxy - sx * sy) / (n * sxx - sx * sx)
    a = (sy - b * sx) / n
    return a, b


def ring(S, N, alpha, beta):
    return 2 * (N - 1) * alpha + 2 * (N - 1) / N * S / beta


def buckets_for(total, first, cap):
    sizes = [min(first, total)]
    left = total - sizes[0]
    while left > 0:
        sizes.append(min(cap, left))
        left -= sizes[-1]
    return sizes


def main():
    pts = {}
    for line in sys.stdin:
        m = re.search(r"mode=allreduce library=(\S+) world=(\d+) bytes=(\d+) us=([\d.]+)", line)
        if m:
            pts.setdefault((m.group(1), int(m.group(2))), []).append((int(m.group(3)), float(m.group(4)) * 1e-6))
    if not pts:
        sys.exit("no RESULT mode=allreduce lines on stdin")
    for (lib, N), p in sorted(pts.items()):
        a, b = fit(p)
        alpha = a / (2 * (N - 1))
        beta = (2 * (N - 1) / N) / b
        print(f"{lib}, {N} ranks on this machine: alpha = {alpha * 1e6:.2f} us, beta = {beta / 1e9:.2f} GB/s")
        print("| bytes | measured us | model us |")
        print("|---:|---:|---:|")
        for S, t in p:
            print(f"| {S} | {t * 1e6:.1f} | {ring(S, N, alpha, beta) * 1e6:.1f} |")
        print()

    # A 100M-parameter model on a 100 Gb/s network (12.5 GB/s per link); alpha is the network's
    # latency per message step (not measurable here: 5 us for RDMA, 25 us for TCP).
    P = 100_000_000
    grad_bytes = 4 * P
    beta_net = 12.5e9
    print("100M parameters (400 MB of float32 gradients), all-reduce per step, 100 Gb/s:")
    print("| ranks | alpha | ring, 25 MiB buckets (17) ms | ring, bucket cap chosen | its buckets | ring with it ms | "
          "recursive halving + doubling, 25 MiB ms |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for N in (8, 64, 512):
        for alpha in (5e-6, 25e-6):
            bw = 2 * (N - 1) / N * grad_bytes / beta_net
            default = buckets_for(grad_bytes, 1 * MiB, 25 * MiB)
            ring_default = len(default) * 2 * (N - 1) * alpha + bw
            # The most buckets whose latency term stays under a tenth of the bandwidth term (more
            # buckets overlap more of backward), but none above what latency forces.
            max_buckets = max(1, int(0.1 * bw / (2 * (N - 1) * alpha)))
            cap = max(25 * MiB, grad_bytes / max_buckets)
            sizes = buckets_for(grad_bytes, 1 * MiB, cap)
            ring_chosen = len(sizes) * 2 * (N - 1) * alpha + bw
            # Rabenseifner (reduce-scatter by recursive halving, all-gather by doubling): the same
            # bytes, 2 log2(N) latency steps.
            rab = len(default) * 2 * math.log2(N) * alpha + bw
            print(f"| {N} | {alpha * 1e6:.0f} us | {ring_default * 1e3:.1f} | {cap / MiB:.0f} MiB | {len(sizes)} | "
                  f"{ring_chosen * 1e3:.1f} | {rab * 1e3:.1f} |")
    print()
    N = 64
    print(f"Memory per rank, 100M parameters, Adam, float32, {N} ranks (MB; between steps):")
    print("| mode | parameters | gradients | optimizer state | total |")
    print("|---|---:|---:|---:|---:|")
    p4 = 4 * P / 1e6
    rows = [
        ("DDP (ZeRO 0)", p4, p4, 2 * p4),
        ("ZeRO 1", p4 + p4 / N, p4 + p4 / N, 2 * p4 / N),
        ("ZeRO 2", p4 + p4 / N, p4 / N, 2 * p4 / N),
    ]
    for name, a, g, s in rows:
        print(f"| {name} | {a:.1f} | {g:.1f} | {s:.1f} | {a + g + s:.1f} |")


if __name__ == "__main__":
    main()
