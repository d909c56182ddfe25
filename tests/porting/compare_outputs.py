#!/usr/bin/env python3
"""Runs a ported program built against graft and the same source built against LibTorch, and checks
that both print the same: line by line, numbers equal to 1e-6 relative (1e-7 absolute: float32's
rounding near a value that should be 0, which one library hits exactly and the other not), words equal
after reading LibTorch's torch::, at:: and c10:: as graft:: (the renaming of
tools/port-from-libtorch.sh). With --exact the lines must be equal byte for byte after that renaming
(the programs whose source says "porting: byte for byte").
Usage: compare_outputs.py [--exact] GRAFT_PROGRAM LIBTORCH_PROGRAM"""
import re
import subprocess
import sys

NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^[-+]?(inf|nan)$")


def run(program):
    done = subprocess.run([program], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        sys.exit(f"{program} exited with {done.returncode}:\n{done.stdout}{done.stderr}")
    return done.stdout.splitlines()


def same_token(a, b):
    if NUMBER.match(a) and NUMBER.match(b):
        x, y = float(a), float(b)
        if x != x or y != y:
            return x != x and y != y
        return abs(x - y) <= 1e-7 + 1e-6 * max(abs(x), abs(y))
    return a == b


def main():
    args = sys.argv[1:]
    exact = bool(args) and args[0] == "--exact"
    if exact:
        args = args[1:]
    if len(args) != 2:
        sys.exit(__doc__)
    ours, theirs = run(args[0]), run(args[1])
    theirs = [re.sub(r"\b(torch|at|c10)::", "graft::", line) for line in theirs]
    bad = 0
    for i in range(max(len(ours), len(theirs))):
        a = ours[i] if i < len(ours) else "<no line>"
        b = theirs[i] if i < len(theirs) else "<no line>"
        ta, tb = a.split(), b.split()
        if exact:
            differs = a != b
        else:
            differs = len(ta) != len(tb) or not all(same_token(x, y) for x, y in zip(ta, tb))
        if differs:
            print(f"line {i + 1} differs:\n  graft:    {a}\n  LibTorch: {b}")
            bad += 1
    if bad:
        sys.exit(f"{bad} of {max(len(ours), len(theirs))} lines differ")
    print(f"the same {len(ours)} lines" + (", byte for byte" if exact else ""))


if __name__ == "__main__":
    main()
