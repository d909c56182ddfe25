#!/usr/bin/env bash
# Runs graft_clone_bits (clone_bits.cpp beside this file) on this processor and under QEMU's user-mode
# emulation of two others, and fails when their hashes differ (Note [Clones give the same bits] in
# src/kernels/vector_clones.h):
#   - this processor: the x86-64-v4 (AVX-512) clones where it has AVX-512, otherwise x86-64-v3;
#   - qemu-x86_64 -cpu Haswell: AVX2 + FMA, no AVX-512, so the x86-64-v3 clones;
#   - qemu-x86_64 -cpu Nehalem: no AVX, so the baseline (SSE2) clones.
# Every run uses OpenBLAS's Nehalem kernels (GRAFT_BLAS_CORETYPE), which all three processors run,
# so the matrix products are the same code in all three and only graft's clones differ.
set -euo pipefail
prog=$1
qemu=$(command -v qemu-x86_64 || true)
if [[ -z "$qemu" ]]; then
  echo "qemu-x86_64 not found: tools/install-deps.sh installs Debian's qemu-user" >&2
  exit 1
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export GRAFT_BLAS_CORETYPE=Nehalem
"$prog" > "$out/native.txt"
# QEMU warns on stderr about host features its emulator lacks; only a failed run matters.
"$qemu" -cpu Haswell "$prog" > "$out/haswell.txt" 2> "$out/haswell.err" || { cat "$out/haswell.err" >&2; exit 1; }
"$qemu" -cpu Nehalem "$prog" > "$out/nehalem.txt" 2> "$out/nehalem.err" || { cat "$out/nehalem.err" >&2; exit 1; }

status=0
expect_variant() {  # expect_variant FILE TEXT: the run took the clones it was meant to
  if ! head -1 "$1" | grep -q "$2"; then
    echo "FAIL: $(basename "$1" .txt) ran $(head -1 "$1"), expected $2" >&2
    status=1
  fi
}
expect_variant "$out/haswell.txt" "x86-64-v3"
expect_variant "$out/nehalem.txt" "baseline"
native_variant=$(head -1 "$out/native.txt")
lines=$(($(wc -l < "$out/native.txt") - 1))
echo "this processor: ${native_variant#clones: }; emulated: x86-64-v3 (qemu -cpu Haswell), baseline (qemu -cpu Nehalem)"
if ! grep -q "x86-64-v4" <<< "$native_variant"; then
  echo "note: the x86-64-v4 (AVX-512) clones are not covered here: this processor has no AVX-512"
fi
for other in haswell nehalem; do
  if ! diff <(tail -n +2 "$out/native.txt") <(tail -n +2 "$out/$other.txt") > "$out/diff.txt"; then
    echo "FAIL: results differ between this processor and qemu -cpu ${other^}:" >&2
    cat "$out/diff.txt" >&2
    status=1
  fi
done
if [[ $status -eq 0 ]]; then
  echo "$lines results compared: the same bits on all three runs"
fi
exit $status
