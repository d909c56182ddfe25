#!/usr/bin/env python3
"""Merge the suite's results into one table of graft / LibTorch ratios with the issue's targets,
and draw the ratios as an SVG chart (standard library only).

    python3 bench/suite_report.py --overhead OVERHEAD.json --train-step TRAIN_STEP.json \
        --kernels KERNELS.json [--allocs ALLOCS.json] [--context "- line"]... [--update BENCHMARKS.md]
        [--svg CHART.svg]

Inputs (bench/run_suite.sh writes them): Google Benchmark's JSON from graft_overhead (repetitions
of 1000-op chains), graft_train_step --json (ms per step per process, peak RSS growth per
process), graft_kernels --json (ms per run per repetition), graft_overhead_allocs --json (heap
allocations per op of each overhead chain, both libraries). Every ratio is graft / LibTorch from
medians of the same run; "ratio at p90" divides the two 90th percentiles (the slow tail). With
--update, the table replaces what lies between <!-- suite-results:begin --> and
<!-- suite-results:end --> in that file.
"""
import argparse
import json
import math
import re
import statistics
import sys

BEGIN = "<!-- suite-results:begin -->"
END = "<!-- suite-results:end -->"


def p90(v):
    s = sorted(v)
    if not s:
        return math.nan
    k = 0.9 * (len(s) - 1)
    lo = int(math.floor(k))
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def med(v):
    return statistics.median(v) if v else math.nan


class Row:
    def __init__(self, group, case, threads, unit, graft, other, target, other_name="LibTorch", higher_is_better=False):
        self.group, self.case, self.threads, self.unit = group, case, threads, unit
        self.graft, self.other, self.target, self.other_name = graft, other, target, other_name
        self.higher_is_better = higher_is_better
        if higher_is_better:  # a speed-up: graft alone, "other" holds the 2-thread samples
            self.ratio = med(graft) / med(other)
            self.ratio90 = p90(graft) / p90(other)
        else:
            self.ratio = med(graft) / med(other)
            self.ratio90 = p90(graft) / p90(other)

    def status(self):
        if self.target is None or math.isnan(self.ratio):
            return "(no target)"
        if self.higher_is_better:
            return "met" if self.ratio >= self.target else "MISSED"
        if self.ratio <= self.target:
            return "met"
        if self.target == 1.0 and self.ratio <= 1.05 and self.group == "matmul vs OpenBLAS":
            return "tie (within 5%)"
        return "MISSED"


def to_ns(value, unit):
    return value * {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[unit]


def overhead_rows(path):
    data = json.load(open(path))
    chain = int(data.get("context", {}).get("chain_len", 1000))
    samples = {}
    for b in data["benchmarks"]:
        if b.get("run_type") != "iteration" or b.get("error_occurred"):
            continue
        case, _, lib = b.get("run_name", b["name"]).rpartition("/")
        samples.setdefault((case, lib), []).append(to_ns(b["cpu_time"], b["time_unit"]) / chain)
    rows = []
    order = {"fwd_grad": 0, "fwd_bwd": 1, "no_grad": 2}
    for case in sorted({c for c, _ in samples}, key=lambda c: (order.get(c.split("/")[0], 9), c)):
        torch = samples.get((case, "libtorch"), samples.get((case, "torch")))  # graft_overhead names it "libtorch"
        if (case, "graft") in samples and torch:
            rows.append(Row("per-op overhead", case, 1, "ns/op", samples[(case, "graft")], torch, 0.3))
    return rows


def train_rows(path):
    data = json.load(open(path))
    rows = []
    times = {}
    for r in data:
        model, t = r["model"], r["threads"]
        label = {"mlp": "MLP step", "cnn": "CNN step"}[model]
        target = 0.8 if model == "mlp" else 0.6
        rows.append(Row("training step", label, t, "ms", r["graft_ms"], r["torch_ms"], target))
        times[(model, t)] = r["graft_ms"]
        rows.append(Row("peak memory", label, t, "MiB", [k / 1024 for k in r["graft_peak_kib"]],
                        [k / 1024 for k in r["torch_peak_kib"]], 1.0))
    if ("mlp", 1) in times and ("mlp", 2) in times:
        rows.append(Row("thread scaling", "MLP step speed-up, 1 -> 2 threads", 2, "ms", times[("mlp", 1)],
                        times[("mlp", 2)], 1.6, other_name="graft at 2 threads", higher_is_better=True))
    return rows


def kernel_rows(path):
    data = json.load(open(path))
    rows = []
    for r in data["results"]:
        case, t = r["case"], r["threads"]
        op, size = case.split("/")
        if op == "matmul":
            rows.append(Row("matmul", case, t, "ms", r["graft_ms"], r["torch_ms"], None))
            if "openblas_ms" in r:
                rows.append(Row("matmul vs OpenBLAS", case, t, "ms", r["graft_ms"], r["openblas_ms"], 1.0,
                                other_name="cblas_sgemm"))
        elif op == "conv2d":
            rows.append(Row("conv2d fwd+bwd", case, t, "ms", r["graft_ms"], r["torch_ms"], None))
        elif size == "10M":
            rows.append(Row("optimiser and clipping", case, t, "ms", r["graft_ms"], r["torch_ms"], 0.8))
        else:
            group = "reduction" if op.startswith("sum") or op.startswith("softmax") else "elementwise"
            rows.append(Row(group, case, t, "ms", r["graft_ms"], r["torch_ms"], None if size == "1K" else 1.0))
    return rows


def allocs_table(path):
    """Heap allocations per op of each overhead chain (graft_overhead_allocs --json)."""
    cases = json.load(open(path))["cases"]
    order = {"fwd_grad": 0, "fwd_bwd": 1, "no_grad": 2}
    out = ["Heap allocations per op (malloc, calloc, realloc, the aligned allocators and so operator new,"
           " counted by `graft_overhead_allocs`):", "",
           "| case | graft allocs/op | LibTorch allocs/op |", "|---|---:|---:|"]
    for case in sorted(cases, key=lambda c: (order.get(c.split("/")[0], 9), c)):
        a = cases[case]
        torch = a.get("libtorch")
        out.append(f"| {case} | {a['graft']:.2f} | {'n/a' if torch is None else f'{torch:.2f}'} |")
    return "\n".join(out)


def fmt(v, unit):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if unit == "ns/op":
        return f"{v:.0f}"
    if v >= 100:
        return f"{v:.1f}"
    if v >= 1:
        return f"{v:.2f}"
    if v >= 0.01:
        return f"{v:.3f}"
    return f"{v:.4f}"


def table(rows):
    out = ["| group | case | threads | graft | other side | unit | ratio | ratio at p90 | target | status |",
           "|---|---|---:|---:|---:|---|---:|---:|---:|---|"]
    for r in rows:
        tgt = "" if r.target is None else (f">= {r.target}" if r.higher_is_better else f"<= {r.target}")
        other = f"{fmt(med(r.other), r.unit)} ({r.other_name})" if r.other_name != "LibTorch" else fmt(med(r.other), r.unit)
        out.append(f"| {r.group} | {r.case} | {r.threads} | {fmt(med(r.graft), r.unit)} | {other} | {r.unit} | "
                   f"{r.ratio:.2f} | {r.ratio90:.2f} | {tgt} | {r.status()} |")
    return "\n".join(out)


def summary(rows):
    lines = []
    groups = []
    for r in rows:
        if r.group not in groups:
            groups.append(r.group)
    for g in groups:
        rs = [r for r in rows if r.group == g and r.target is not None]
        if not rs:
            continue
        missed = [r for r in rs if r.status() == "MISSED"]
        if missed:
            lines.append(f"- {g}: MISSED in {len(missed)} of {len(rs)}: " +
                         "; ".join(f"{r.case} at {r.threads} thread(s) ({r.ratio:.2f})" for r in missed))
        else:
            lines.append(f"- {g}: met in all {len(rs)} cases (ratios {min(r.ratio for r in rs):.2f} to "
                         f"{max(r.ratio for r in rs):.2f})")
    return "\n".join(lines)


def svg(rows):
    """A horizontal bar per row: the ratio on a log axis, the target as a tick, green if met."""
    rows = [r for r in rows if not math.isnan(r.ratio)]
    left, width, row_h, top = 330, 560, 15, 40
    lo, hi = math.log10(0.01), math.log10(300.0)
    height = top + row_h * len(rows) + 40

    def x(v):
        v = min(max(v, 10 ** lo), 10 ** hi)
        return left + (math.log10(v) - lo) / (hi - lo) * width

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 70}" height="{height}" '
             f'font-family="sans-serif" font-size="10">',
             '<rect width="100%" height="100%" fill="white"/>',
             f'<text x="10" y="16" font-size="13" font-weight="bold">graft / LibTorch (speed-up for thread scaling): '
             f'log scale, lower is better; tick = target</text>',
             '<text x="10" y="30" fill="#555">green: target met; red: missed; grey: no target (reference only)</text>']
    for t in [0.01, 0.03, 0.1, 0.3, 1, 3, 10, 30, 100, 300]:
        parts.append(f'<line x1="{x(t):.1f}" y1="{top - 4}" x2="{x(t):.1f}" y2="{top + row_h * len(rows)}" '
                     f'stroke="{"#000" if t == 1 else "#ddd"}" stroke-width="{1.2 if t == 1 else 0.6}"/>')
        parts.append(f'<text x="{x(t):.1f}" y="{top + row_h * len(rows) + 14}" text-anchor="middle">{t:g}</text>')
    for i, r in enumerate(rows):
        y = top + i * row_h
        st = r.status()
        colour = "#9e9e9e" if r.target is None else ("#2e7d32" if st in ("met", "tie (within 5%)") else "#c62828")
        label = f"{r.group}: {r.case}" + (f" ({r.threads}t)" if r.group != "per-op overhead" else "")
        parts.append(f'<text x="{left - 6}" y="{y + 11}" text-anchor="end">{label}</text>')
        x0, x1 = x(1.0), x(r.ratio)
        parts.append(f'<rect x="{min(x0, x1):.1f}" y="{y + 3}" width="{max(abs(x1 - x0), 1):.1f}" height="{row_h - 5}" '
                     f'fill="{colour}"/>')
        parts.append(f'<text x="{max(x0, x1) + 3:.1f}" y="{y + 11}">{r.ratio:.2f}</text>')
        if r.target is not None:
            parts.append(f'<line x1="{x(r.target):.1f}" y1="{y + 1}" x2="{x(r.target):.1f}" y2="{y + row_h - 1}" '
                         f'stroke="#000" stroke-width="2"/>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--overhead")
    ap.add_argument("--train-step")
    ap.add_argument("--kernels")
    ap.add_argument("--allocs")
    ap.add_argument("--context", action="append", default=[])
    ap.add_argument("--update")
    ap.add_argument("--svg")
    ap.add_argument("--svg-link", default="bench/suite_ratios.svg")
    a = ap.parse_args()
    rows = []
    if a.overhead:
        rows += overhead_rows(a.overhead)
    if a.kernels:
        rows += kernel_rows(a.kernels)
    if a.train_step:
        rows += train_rows(a.train_step)
    section = "\n".join(c for c in a.context if c) + "\n\n" + table(rows) + "\n\n" + summary(rows) + "\n"
    if a.allocs:
        section += "\n" + allocs_table(a.allocs) + "\n"
    if a.svg:
        open(a.svg, "w").write(svg(rows))
        section += f"\n![graft / LibTorch ratios against the targets]({a.svg_link})\n"
    print(section)
    if a.update:
        text = open(a.update).read()
        if BEGIN not in text or END not in text:
            sys.exit(f"{a.update}: markers {BEGIN} / {END} not found")
        text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: BEGIN + "\n" + section.strip() + "\n" + END,
                      text, flags=re.S)
        open(a.update, "w").write(text)
        print(f"updated {a.update}", file=sys.stderr)


if __name__ == "__main__":
    main()
