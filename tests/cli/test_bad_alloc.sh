#!/usr/bin/env bash
# Issue 34, item 3: memory the system refuses outside graft's tensor memory (std::bad_alloc, here
# while graft train reads a 220 MB text under a 600 MB address-space limit) is graft's out-of-memory
# error naming the command, with exit status 1, not a bare "std::bad_alloc".
# Usage: test_bad_alloc.sh GRAFT   (not under the sanitizers: they reserve terabytes of address space)
set -uo pipefail
graft=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
yes "the quick brown fox jumps over the lazy dog" | head -c 220000000 >"$work/big.txt"
out=$( (ulimit -v 600000; "$graft" train --model gpt --data "$work/big.txt" --epochs 1 --threads 1 --workers 0) 2>&1)
rc=$?
echo "$out" | tail -2
if [ $rc -ne 1 ]; then echo "FAIL: exit status $rc, expected 1"; exit 1; fi
case "$out" in
  *"graft: out of memory: graft train"*"std::bad_alloc"*"ulimit"*) echo ok ;;
  *) echo "FAIL: not graft's out-of-memory error naming the command and the hint"; exit 1 ;;
esac
