#!/usr/bin/env python3
"""Summarise the overhead benchmark (standard library only).

    python3 bench/summarise.py RESULTS.json [--allocs ALLOCS.json] [--update BENCHMARKS.md]
                               [--command "..."] [--metric cpu|real]

Reads the JSON that graft_overhead writes with --benchmark_out=RESULTS.json (run with
--benchmark_repetitions=N; the medians of the repetitions are used), prints

    case | graft ns/op | LibTorch ns/op | ratio

where ns/op is the median time of one chain divided by its length, and ratio = graft / LibTorch
(the target is <= 0.5). With --update, the table (plus the run's context) replaces whatever lies
between the markers <!-- overhead-results:begin --> and <!-- overhead-results:end --> in that file.
"""
import argparse
import json
import re
import statistics
import sys

BEGIN = "<!-- overhead-results:begin -->"
END = "<!-- overhead-results:end -->"
TARGET = 0.5
MODES = {"fwd_grad": "(a) forward, grad recorded", "fwd_bwd": "(b) forward + backward",
         "no_grad": "(c) forward, NoGradGuard"}


def to_ns(value, unit):
    return value * {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[unit]


def load(path, metric):
    with open(path) as f:
        data = json.load(f)
    ctx = data.get("context", {})
    chain = int(ctx.get("chain_len", 1000))
    key = "cpu_time" if metric == "cpu" else "real_time"
    samples = {}  # (case, lib) -> [ns/op of each repetition]
    runs = [b for b in data["benchmarks"] if b.get("run_type") == "iteration"]
    if not runs:  # written with --benchmark_report_aggregates_only: use the medians
        runs = [b for b in data["benchmarks"] if b.get("aggregate_name") == "median"]
    for b in runs:
        if b.get("error_occurred"):
            continue
        name = b.get("run_name", b["name"])
        case, _, lib = name.rpartition("/")
        samples.setdefault((case, lib), []).append(to_ns(b[key], b["time_unit"]) / chain)
    return ctx, samples


def case_order(case):
    mode, operand, n = case.split("/")
    return (list(MODES).index(mode) if mode in MODES else 9, operand, int(n.lstrip("n")))


def build_rows(samples):
    cases = sorted({c for c, _ in samples}, key=case_order)
    rows = []
    for c in cases:
        g = samples.get((c, "graft"), [])
        t = samples.get((c, "libtorch"), [])
        gm = statistics.median(g) if g else None
        tm = statistics.median(t) if t else None
        rows.append({"case": c, "graft": gm, "torch": tm, "reps": len(g),
                     "ratio": gm / tm if gm and tm else None,
                     "ratio_min": min(g) / min(t) if g and t else None,
                     "spread_g": (max(g) - min(g)) / gm if len(g) > 1 else 0.0,
                     "spread_t": (max(t) - min(t)) / tm if len(t) > 1 else 0.0})
    return rows


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def table(rows, real_rows, allocs):
    has_real = real_rows is not None
    head = ["case", "graft ns/op", "LibTorch ns/op", "ratio", "ratio (fastest reps)"]
    if has_real:
        head.append("ratio (wall)")
    if allocs:
        head += ["graft allocs/op", "LibTorch allocs/op"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    real = {r["case"]: r for r in real_rows or []}
    for r in rows:
        cells = [r["case"], fmt(r["graft"], ".1f"), fmt(r["torch"], ".1f"), fmt(r["ratio"], ".2f"),
                 fmt(r["ratio_min"], ".2f")]
        if has_real:
            cells.append(fmt(real.get(r["case"], {}).get("ratio"), ".2f"))
        if allocs:
            a = allocs.get(r["case"], {})
            cells += [fmt(a.get("graft"), ".2f"), fmt(a.get("libtorch"), ".2f")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def verdict(rows):
    out = []
    for mode, label in MODES.items():
        rs = [r for r in rows if r["case"].startswith(mode + "/") and r["ratio"] is not None]
        if not rs:
            continue
        worst = max(r["ratio"] for r in rs)
        best = min(r["ratio"] for r in rs)
        ok = "met" if worst <= TARGET else "NOT met"
        out.append(f"- {label}: ratio {best:.2f} to {worst:.2f}; target <= {TARGET} {ok}")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results")
    ap.add_argument("--allocs", help="JSON written by graft_overhead_allocs --json=FILE")
    ap.add_argument("--update", help="markdown file whose marked section to rewrite")
    ap.add_argument("--command", default="", help="the command that produced the results (for the file)")
    ap.add_argument("--machine", default="", help="a line describing the machine (for the file)")
    ap.add_argument("--build", default="", help="a line describing compiler and flags (for the file)")
    ap.add_argument("--metric", choices=["cpu", "real"], default="cpu",
                    help="cpu: the benchmark thread's CPU time (robust to other processes on a shared "
                         "machine; default); real: wall-clock time")
    args = ap.parse_args()

    ctx, samples = load(args.results, args.metric)
    rows = build_rows(samples)
    if not rows:
        sys.exit("no benchmark iterations found in " + args.results)
    real_rows = build_rows(load(args.results, "real")[1]) if args.metric == "cpu" else None
    allocs = None
    if args.allocs:
        with open(args.allocs) as f:
            allocs = json.load(f)["cases"]

    metric_txt = "thread CPU time" if args.metric == "cpu" else "wall-clock time"
    reps = max(r["reps"] for r in rows)
    ctx_lines = [f"- date: {ctx.get('date', '?')}"]
    if args.machine:
        ctx_lines.append(f"- machine: {args.machine}")
    if args.build:
        ctx_lines.append(f"- build: {args.build}")
    ctx_lines += [
        f"- host: {ctx.get('host_name', '?')}, {ctx.get('num_cpus', '?')} CPUs at "
        f"{ctx.get('mhz_per_cpu', '?')} MHz, load average {' '.join(f'{x:.1f}' for x in ctx.get('load_avg', []))} when the run started",
        f"- {ctx.get('torch_version', 'LibTorch')}: intra-op threads {ctx.get('torch_num_threads', '?')} "
        f"(default {ctx.get('torch_default_num_threads', '?')}), inter-op threads "
        f"{ctx.get('torch_num_interop_threads', '?')}",
        f"- openblas_get_corename(): {ctx.get('openblas_corename', '?')}; OpenBLAS threads "
        f"{ctx.get('openblas_num_threads', '?')}; OPENBLAS_CORETYPE={ctx.get('env_OPENBLAS_CORETYPE', '?')}, "
        f"OMP_WAIT_POLICY={ctx.get('env_OMP_WAIT_POLICY', '?')}",
        f"- chain length {ctx.get('chain_len', '?')} ops; medians of {reps} repetitions "
        f"(randomly interleaved); ns/op from {metric_txt}"
        + ("; 'ratio (fastest reps)' compares each side's fastest repetition"
        + ("; 'ratio (wall)' is the median ratio from wall-clock time" if real_rows else "")),
    ]
    if args.command:
        ctx_lines.append(f"- command: `{args.command}`")
    body = "\n".join(ctx_lines) + "\n\n" + table(rows, real_rows, allocs) + "\n\n" + verdict(rows) + "\n"

    print(table(rows, real_rows, allocs))
    print()
    print(verdict(rows))
    noisy = [r["case"] for r in rows if max(r["spread_g"], r["spread_t"]) > 0.25]
    if noisy:
        print("\nnote: repetitions spread by more than 25% in: " + ", ".join(noisy))
        body += (f"\nThe repetitions of {len(noisy)} of {len(rows)} cases spread by more than 25% "
                 "((max - min) / median) on one side or both (a shared, loaded machine): compare the median and "
                 "fastest-repetition ratios before reading much into differences of less than 0.1.\n")

    if args.update:
        with open(args.update) as f:
            text = f.read()
        pat = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
        if not pat.search(text):
            sys.exit(f"{args.update}: markers {BEGIN} ... {END} not found")
        text = pat.sub(lambda _: BEGIN + "\n" + body + END, text, count=1)
        with open(args.update, "w") as f:
            f.write(text)
        print(f"\nupdated {args.update}")


if __name__ == "__main__":
    main()
