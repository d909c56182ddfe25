#!/usr/bin/env bash
# The performance suite, graft vs LibTorch side by side: per-op overhead and heap allocations per op
# (overhead.cpp), kernel throughput, matmul (also against cblas_sgemm), conv2d, optimiser steps and
# clipping (kernels.cpp), and the training steps with their peak memory (train_step.cpp). Each
# program is one source in LibTorch's spelling, built as torch_<name> (LibTorch only) and, ported
# by tools/port-from-libtorch.sh, as graft_<name> (bench/CMakeLists.txt). Every measurement runs one
# library in a process of its own; the two executables run alternately (which goes first alternates
# from round to round), and the ratios come from the medians of the same run.
#
# The standalone check (issue 16): the LibTorch executables also run on their own, with no graft
# process in the pair (STANDALONE_ROUNDS processes per case group, TRAIN_STANDALONE_REPS per
# training configuration), spread evenly among the alternating rounds (standalone_due below).
# bench/suite_report.py refuses a ratio (the row shows "refused", the script exits 3) when the
# suite's LibTorch median is more than 10% slower than that standalone one.
#
# Rewrites the results between <!-- suite-results:begin --> and <!-- suite-results:end --> in
# BENCHMARKS.md (the one results block there) and the chart bench/suite_ratios.svg.
# Usage: bench/run_suite.sh   (from anywhere; about 10 minutes on 2 cores)
#
# Knobs (environment): BUILD_DIR (default build-bench), JOBS (build jobs, default 2), ROUNDS
# (alternating processes per library for overhead and kernels, default 3), STANDALONE_ROUNDS
# (default 3), OVERHEAD_REPS (Google Benchmark repetitions per process, default 3), KERNEL_REPS
# (timed blocks per case per process, default 3), TRAIN_REPS (timing processes per library and
# configuration, default 9), TRAIN_STANDALONE_REPS (default 3), MEM_REPS (default 3), THREADS
# (kernel cases, default "1,2"), CNN_OPENBLAS_THREADS (OPENBLAS_NUM_THREADS for the CNN step at 2
# threads, default 1), NO_UPDATE=1 (print only), SKIP=overhead,kernels,train (reuse that
# part's last results from the build directory; "overhead" covers the allocation counts too).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build-bench}
SKIP=${SKIP:-}
ROUNDS=${ROUNDS:-3}
STANDALONE_ROUNDS=${STANDALONE_ROUNDS:-3}
OVERHEAD_REPS=${OVERHEAD_REPS:-3}
KERNEL_REPS=${KERNEL_REPS:-3}
TRAIN_REPS=${TRAIN_REPS:-9}
TRAIN_STANDALONE_REPS=${TRAIN_STANDALONE_REPS:-3}
MEM_REPS=${MEM_REPS:-3}
THREADS=${THREADS:-1,2}

# LibTorch's best configuration on this machine: OpenBLAS's AVX-512 "SkylakeX" kernels (0.3.21 does
# not recognise this processor by name) and OpenMP threads that sleep when idle. graft picks
# SkylakeX by itself; both libraries run under the same variables, and every process gets
# OPENBLAS_NUM_THREADS equal to its thread count (LibTorch's products run on OpenBLAS's own pool).
export OPENBLAS_CORETYPE=SkylakeX
export OMP_WAIT_POLICY=passive

GRAFT_REV="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
git -C "$ROOT" diff --quiet HEAD -- src include bench 2>/dev/null ||
  GRAFT_REV="$GRAFT_REV + uncommitted changes in src/ include/ bench/"

PROGRAMS=(overhead overhead_allocs kernels train_step)
TARGETS=()
for p in "${PROGRAMS[@]}"; do TARGETS+=("graft_$p" "torch_$p"); done
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DGRAFT_BUILD_BENCH=ON \
      -DGRAFT_BUILD_TESTS=OFF -DGRAFT_BUILD_EXAMPLES=OFF -DGRAFT_BUILD_APPS=OFF >/dev/null
if grep -q '^Torch_DIR:PATH=.*NOTFOUND' "$BUILD/CMakeCache.txt"; then
  echo "run_suite.sh: LibTorch not found at configure time; the suite needs it (tools/install-deps.sh --bench)" >&2
  exit 2
fi
cmake --build "$BUILD" --target "${TARGETS[@]}" -j"${JOBS:-2}"
BIN=$BUILD/bench
RUNS=$BUILD/suite  # every process's output; bench/suite_report.py reads the folder
mkdir -p "$RUNS"

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
DATE=$(date -Iseconds)

# standalone_due ROUND ROUNDS STANDALONE: whether the standalone LibTorch run goes after this round.
# The STANDALONE runs are spread evenly over the ROUNDS alternating rounds (the last round always
# gets one), so that the machine's speed, which drifts by tens of percent over minutes on this
# shared VM, is the same for the suite's LibTorch figures and the standalone ones they are checked
# against (run after all the rounds, they disagreed by up to 2x on quiet and busy minutes alike).
standalone_due() {
  local r=$1 n=$2 s=$3
  (((r * s) / n > ((r - 1) * s) / n))
}

# order ROUND A B [C]: the libraries rotated by ROUND, so that each goes first in turn.
order() {
  local r=$1
  shift
  local libs=("$@") n=$#
  for ((i = 0; i < n; ++i)); do echo "${libs[$(((i + r) % n))]}"; done
}

if [[ ",$SKIP," != *",overhead,"* ]]; then
  rm -f "$RUNS"/overhead_*.json "$RUNS"/overhead.stderr "$RUNS"/allocs_*.json
  gb=(--threads=1 --benchmark_repetitions="$OVERHEAD_REPS" --benchmark_enable_random_interleaving=true
      --benchmark_min_time=0.3 --benchmark_out_format=json)
  echo "+ overhead: cross-check, then $ROUNDS alternating rounds of $OVERHEAD_REPS repetitions"
  for lib in graft torch; do OPENBLAS_NUM_THREADS=1 "$BIN/${lib}_overhead" --check="$RUNS/overhead_check_$lib.json" >/dev/null; done
  echo "  (and standalone LibTorch $STANDALONE_ROUNDS times, spread over the rounds)"
  for ((r = 1; r <= ROUNDS; ++r)); do
    for lib in $(order "$r" graft torch); do
      OPENBLAS_NUM_THREADS=1 "$BIN/${lib}_overhead" "${gb[@]}" --benchmark_out="$RUNS/overhead_suite_${lib}_r$r.json" \
        >/dev/null 2>>"$RUNS/overhead.stderr"
    done
    if standalone_due "$r" "$ROUNDS" "$STANDALONE_ROUNDS"; then
      OPENBLAS_NUM_THREADS=1 "$BIN/torch_overhead" "${gb[@]}" --benchmark_out="$RUNS/overhead_standalone_torch_r$r.json" \
        >/dev/null 2>>"$RUNS/overhead.stderr"
    fi
  done
  # Heap allocations per op: a second build of the same chains that counts the malloc family (never
  # used for timing).
  echo "+ overhead_allocs"
  for lib in graft torch; do OPENBLAS_NUM_THREADS=1 "$BIN/${lib}_overhead_allocs" --json="$RUNS/allocs_$lib.json" >/dev/null; done
fi

if [[ ",$SKIP," != *",kernels,"* ]]; then
  rm -f "$RUNS"/kernels_*
  IFS=, read -r -a thread_list <<<"$THREADS"
  for t in "${thread_list[@]}"; do
    echo "+ kernels at $t thread(s): $ROUNDS alternating rounds (graft, LibTorch, cblas_sgemm) of $KERNEL_REPS repetitions, standalone LibTorch $STANDALONE_ROUNDS times among them"
    for ((r = 1; r <= ROUNDS; ++r)); do
      for lib in $(order "$r" graft torch openblas); do
        case $lib in
          openblas) cmd=("$BIN/torch_kernels" --openblas) ;;
          *) cmd=("$BIN/${lib}_kernels") ;;
        esac
        OPENBLAS_NUM_THREADS=$t "${cmd[@]}" --threads="$t" --reps="$KERNEL_REPS" \
          --json="$RUNS/kernels_suite_${lib}_t${t}_r$r.json" >"$RUNS/kernels_suite_${lib}_t${t}_r$r.log"
      done
      if standalone_due "$r" "$ROUNDS" "$STANDALONE_ROUNDS"; then
        OPENBLAS_NUM_THREADS=$t "$BIN/torch_kernels" --threads="$t" --reps="$KERNEL_REPS" \
          --json="$RUNS/kernels_standalone_torch_t${t}_r$r.json" >"$RUNS/kernels_standalone_torch_t${t}_r$r.log"
      fi
    done
  done
fi

if [[ ",$SKIP," != *",train,"* ]]; then
  TRAIN=$RUNS/train_step.txt  # one RESULT line per process, prefixed with its phase and round
  : >"$TRAIN"
  # child PHASE ROUND LIB THREADS OPENBLAS_THREADS ARGS...: one process, its RESULT line appended to $TRAIN.
  child() {
    local phase=$1 round=$2 lib=$3 threads=$4 ob=$5
    shift 5
    local line
    line=$(OPENBLAS_NUM_THREADS=$ob "$BIN/${lib}_train_step" --threads="$threads" "$@" | grep '^RESULT ') || {
      echo "train_step child failed: OPENBLAS_NUM_THREADS=$ob ${lib}_train_step --threads=$threads $*" >&2
      exit 1
    }
    echo "phase=$phase round=$round openblas_threads=$ob $line" >>"$TRAIN"
  }
  # model, threads, OPENBLAS_NUM_THREADS (both libraries). The CNN step at 2 threads gets a
  # single-threaded OpenBLAS: LibTorch runs its convolutions on oneDNN's OpenMP threads and only the
  # two Linear layers on OpenBLAS, whose own threads spin for a while after each product and take
  # the cores from oneDNN's (BENCHMARKS.md, "What was wrong"); graft keeps OpenBLAS at one thread
  # whatever the variable says.
  configs=("mlp 1 1" "mlp 2 2" "cnn 1 1" "cnn 2 ${CNN_OPENBLAS_THREADS:-1}")
  echo "+ train_step: cross-check, $MEM_REPS memory rounds, $TRAIN_REPS alternating timing rounds, standalone LibTorch $TRAIN_STANDALONE_REPS times among them"
  for lib in graft torch; do
    OPENBLAS_NUM_THREADS=1 "$BIN/${lib}_train_step" --mode=check | sed -n 's/^RESULT /phase=check round=1 RESULT /p' >>"$TRAIN"
  done
  for ((r = 1; r <= MEM_REPS; ++r)); do
    for c in "${configs[@]}"; do
      read -r model t ob <<<"$c"
      for lib in graft torch; do
        child suite "$r" "$lib" "$t" "$ob" --mode=mem --model="$model" --mem_steps=20
        child suite "$r" "$lib" "$t" "$ob" --mode=base --model="$model"
      done
    done
  done
  for ((r = 1; r <= TRAIN_REPS; ++r)); do
    for c in "${configs[@]}"; do
      read -r model t ob <<<"$c"
      for lib in $(order "$r" graft torch); do child suite "$r" "$lib" "$t" "$ob" --mode=time --model="$model" --steps=20 --warmup=3; done
      if standalone_due "$r" "$TRAIN_REPS" "$TRAIN_STANDALONE_REPS"; then
        child standalone "$r" torch "$t" "$ob" --mode=time --model="$model" --steps=20 --warmup=3
      fi
    done
  done
fi

MODEL=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
CXX=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
TORCH_PKG=$(dpkg-query -W -f='${Version}' libtorch-dev 2>/dev/null || echo "(not installed)")
LIBS="$(OPENBLAS_NUM_THREADS=1 "$BIN/graft_kernels" --filter=none | head -1) / $(OPENBLAS_NUM_THREADS=1 "$BIN/torch_kernels" --filter=none | head -1)"
UPDATE=()
[[ "${NO_UPDATE:-0}" == 1 ]] || UPDATE=(--update "$ROOT/BENCHMARKS.md" --svg "$ROOT/bench/suite_ratios.svg")
python3 "$ROOT/bench/suite_report.py" --runs "$RUNS" \
  --context "- date: $DATE${SKIP:+ (results of an earlier run reused for: $SKIP)}" \
  --context "- machine: $MODEL (lscpu model name), $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2 " GiB"}') RAM, $(uname -sr); load average $LOAD_START when the run started, $(cut -d' ' -f1-3 /proc/loadavg) when it ended" \
  --context "- build: graft $GRAFT_REV; $("$CXX" --version | head -1), CMAKE_BUILD_TYPE=Release (graft as a static library); LibTorch from Debian's libtorch-dev $TORCH_PKG, its executables linked to LibTorch only" \
  --context "- libraries (at 1 thread): $LIBS" \
  --context "- command: \`bench/run_suite.sh\` (ROUNDS=$ROUNDS STANDALONE_ROUNDS=$STANDALONE_ROUNDS OVERHEAD_REPS=$OVERHEAD_REPS KERNEL_REPS=$KERNEL_REPS TRAIN_REPS=$TRAIN_REPS TRAIN_STANDALONE_REPS=$TRAIN_STANDALONE_REPS MEM_REPS=$MEM_REPS THREADS=$THREADS)" \
  "${UPDATE[@]}"
