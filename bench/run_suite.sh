#!/usr/bin/env bash
# The performance suite, graft vs LibTorch side by side: per-op overhead (graft_overhead) and heap
# allocations per op (graft_overhead_allocs), kernel throughput, matmul, conv2d, optimiser steps and
# clipping (graft_kernels), and the training steps with their peak memory and the cross-check of
# their losses (graft_train_step). Rewrites the results between <!-- suite-results:begin --> and
# <!-- suite-results:end --> in BENCHMARKS.md (the one results block there) and the chart
# bench/suite_ratios.svg.
# Usage: bench/run_suite.sh   (from anywhere; about 15 minutes on 2 cores)
#
# Knobs (environment): BUILD_DIR (default build-bench), JOBS (build jobs, default 2),
# OVERHEAD_REPS (default 7), KERNEL_REPS (default 9), TRAIN_REPS (default 9), THREADS (kernel
# cases, default "1,2"), NO_UPDATE=1 (print only), SKIP=overhead,kernels,train (reuse that part's
# last results from the build directory; "overhead" covers the allocation counts too).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build-bench}
SKIP=${SKIP:-}

# LibTorch's best configuration on this machine: OpenBLAS's AVX-512 "SkylakeX" kernels (0.3.21 does
# not recognise this processor by name) and OpenMP threads that sleep when idle. graft picks
# SkylakeX by itself; both libraries run under the same variables.
export OPENBLAS_CORETYPE=SkylakeX
export OMP_WAIT_POLICY=passive

GRAFT_REV="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
git -C "$ROOT" diff --quiet HEAD -- src include 2>/dev/null || GRAFT_REV="$GRAFT_REV + uncommitted changes in src/ include/"

cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DGRAFT_BUILD_BENCH=ON \
      -DGRAFT_BUILD_TESTS=OFF -DGRAFT_BUILD_EXAMPLES=OFF -DGRAFT_BUILD_APPS=OFF >/dev/null
cmake --build "$BUILD" --target graft_overhead graft_overhead_allocs graft_kernels graft_train_step -j"${JOBS:-2}"

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
DATE=$(date -Iseconds)

if [[ ",$SKIP," != *",overhead,"* ]]; then
  echo "+ graft_overhead (per-op overhead chains)"
  "$BUILD/bench/graft_overhead" --torch_threads=1 --benchmark_repetitions="${OVERHEAD_REPS:-7}" \
    --benchmark_enable_random_interleaving=true --benchmark_min_time=0.3 \
    --benchmark_out="$BUILD/suite_overhead.json" --benchmark_out_format=json >/dev/null
  # Heap allocations per op: a second build of the same chains that counts the malloc family (never
  # used for timing).
  echo "+ graft_overhead_allocs"
  "$BUILD/bench/graft_overhead_allocs" --torch_threads=1 --json="$BUILD/suite_overhead_allocs.json" >/dev/null
fi
if [[ ",$SKIP," != *",kernels,"* ]]; then
  echo "+ graft_kernels --threads=${THREADS:-1,2} --reps=${KERNEL_REPS:-9}"
  "$BUILD/bench/graft_kernels" --threads="${THREADS:-1,2}" --reps="${KERNEL_REPS:-9}" --json="$BUILD/suite_kernels.json" \
    | tee "$BUILD/suite_kernels.log"
fi
if [[ ",$SKIP," != *",train,"* ]]; then
  echo "+ graft_train_step --reps=${TRAIN_REPS:-9}"
  "$BUILD/bench/graft_train_step" --reps="${TRAIN_REPS:-9}" --steps=20 --warmup=3 --mem_reps=3 \
    --json="$BUILD/suite_train_step.json" > "$BUILD/suite_train_step.log"
fi

MODEL=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
CXX=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
TORCH_PKG=$(dpkg-query -W -f='${Version}' libtorch-dev 2>/dev/null || echo "(not installed)")
CORE=$(head -1 "$BUILD/suite_kernels.log")
# The training steps' cross-check: both libraries, same initial weights and data, same losses.
CHECK=$(grep '^check ' "$BUILD/suite_train_step.log" | sed 's/^/  - /' || true)
ALLOCS=()
[[ -f "$BUILD/suite_overhead_allocs.json" ]] && ALLOCS=(--allocs "$BUILD/suite_overhead_allocs.json")
UPDATE=()
[[ "${NO_UPDATE:-0}" == 1 ]] || UPDATE=(--update "$ROOT/BENCHMARKS.md" --svg "$ROOT/bench/suite_ratios.svg")
python3 "$ROOT/bench/suite_report.py" --overhead "$BUILD/suite_overhead.json" --kernels "$BUILD/suite_kernels.json" \
  --train-step "$BUILD/suite_train_step.json" "${ALLOCS[@]}" \
  --context "- date: $DATE${SKIP:+ (results of an earlier run reused for: $SKIP)}" \
  --context "- machine: $MODEL (lscpu model name), $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2 " GiB"}') RAM, $(uname -sr); load average $LOAD_START when the run started, $(cut -d' ' -f1-3 /proc/loadavg) when it ended" \
  --context "- build: graft $GRAFT_REV; $("$CXX" --version | head -1), CMAKE_BUILD_TYPE=Release (graft as a static library); LibTorch from Debian's libtorch-dev $TORCH_PKG" \
  --context "- libraries: $CORE" \
  --context "- command: \`bench/run_suite.sh\` (OVERHEAD_REPS=${OVERHEAD_REPS:-7} KERNEL_REPS=${KERNEL_REPS:-9} TRAIN_REPS=${TRAIN_REPS:-9} THREADS=${THREADS:-1,2})" \
  --context "- training-step cross-check (same initial weights and data in both):" --context "$CHECK" \
  "${UPDATE[@]}"
