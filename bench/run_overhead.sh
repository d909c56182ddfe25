#!/usr/bin/env bash
# Builds and runs the per-op overhead benchmark (graft vs LibTorch) and rewrites the results table
# in BENCHMARKS.md. Usage: bench/run_overhead.sh   (from anywhere)
#
# Knobs (environment): BUILD_DIR (default build-bench), REPS (repetitions, default 5), MIN_TIME
# (seconds per repetition, default 0.5), TORCH_THREADS (torch::set_num_threads, default 1; 0 keeps
# LibTorch's default), JOBS (parallel build jobs, default 2), NO_UPDATE=1 (print, leave the file).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build-bench}
REPS=${REPS:-5}
MIN_TIME=${MIN_TIME:-0.5}
TORCH_THREADS=${TORCH_THREADS:-1}

# LibTorch's best configuration on this machine: OpenBLAS's SkylakeX kernels (it does not know
# this CPU by name), and OpenMP threads that sleep instead of spinning while idle.
export OPENBLAS_CORETYPE=SkylakeX
export OMP_WAIT_POLICY=passive

# The graft being measured: the working tree as it is now (other work in progress included).
GRAFT_REV="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
git -C "$ROOT" diff --quiet HEAD -- src include 2>/dev/null || GRAFT_REV="$GRAFT_REV + uncommitted changes in src/ include/"

cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DGRAFT_BUILD_BENCH=ON \
      -DGRAFT_BUILD_TESTS=OFF -DGRAFT_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$BUILD" --target graft_overhead graft_overhead_allocs -j"${JOBS:-2}"

"$BUILD/bench/graft_overhead_allocs" --torch_threads="$TORCH_THREADS" --json="$BUILD/overhead_allocs.json"

ARGS=(--torch_threads="$TORCH_THREADS" --benchmark_repetitions="$REPS"
      --benchmark_enable_random_interleaving=true --benchmark_min_time="$MIN_TIME"
      --benchmark_out="$BUILD/overhead.json" --benchmark_out_format=json)
CMD="OPENBLAS_CORETYPE=SkylakeX OMP_WAIT_POLICY=passive graft_overhead ${ARGS[*]}"
echo "+ $CMD"
"$BUILD/bench/graft_overhead" "${ARGS[@]}"

MODEL=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
CORES=$(nproc)
MEM=$(free -g | awk '/^Mem:/ {print $2 " GiB"}')
CXX=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
CXXVER=$("$CXX" --version | head -1)
FLAGS=$(sed -n 's/^CMAKE_CXX_FLAGS_RELEASE:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
TORCH_PKG=$(dpkg-query -W -f='${Version}' libtorch-dev 2>/dev/null || echo "(not installed)")
UPDATE=()
[[ "${NO_UPDATE:-0}" == 1 ]] || UPDATE=(--update "$ROOT/BENCHMARKS.md")
python3 "$ROOT/bench/summarise.py" "$BUILD/overhead.json" --allocs "$BUILD/overhead_allocs.json" \
  --command "bench/run_overhead.sh  # runs: $CMD" \
  --machine "$MODEL (lscpu), $CORES cores, $MEM RAM, $(uname -sr)" \
  --build "graft $GRAFT_REV; $CXXVER, CMAKE_BUILD_TYPE=Release ($FLAGS; graft as a static library, LibTorch from Debian's libtorch-dev $TORCH_PKG)" \
  "${UPDATE[@]}"
