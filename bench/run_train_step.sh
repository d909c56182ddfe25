#!/usr/bin/env bash
# Builds and runs the training-step benchmark (graft vs LibTorch: MLP and CNN SGD steps at 1 and 2
# threads, time and peak memory) and rewrites its results in BENCHMARKS.md, between
# <!-- train-step-results:begin --> and <!-- train-step-results:end -->.
# Usage: bench/run_train_step.sh   (from anywhere)
#
# Knobs (environment): BUILD_DIR (default build-bench), REPS (timing repetitions, default 15),
# STEPS (timed steps per process, default 20), WARMUP (default 3), MEM_REPS (default 3),
# JOBS (parallel build jobs, default 2), NO_UPDATE=1 (print, leave BENCHMARKS.md alone).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build-bench}
REPS=${REPS:-15}
STEPS=${STEPS:-20}
WARMUP=${WARMUP:-3}
MEM_REPS=${MEM_REPS:-3}

# LibTorch's best configuration on this machine: OpenBLAS's SkylakeX kernels (OpenBLAS 0.3.21 does
# not know this CPU by name; the environment may pin Haswell), and OpenMP threads that sleep
# instead of spinning while idle. graft picks SkylakeX by itself; both runs get the same variables.
export OPENBLAS_CORETYPE=SkylakeX
export OMP_WAIT_POLICY=passive

GRAFT_REV="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
git -C "$ROOT" diff --quiet HEAD -- src include 2>/dev/null || GRAFT_REV="$GRAFT_REV + uncommitted changes in src/ include/"

cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DGRAFT_BUILD_BENCH=ON \
      -DGRAFT_BUILD_TESTS=OFF -DGRAFT_BUILD_EXAMPLES=OFF -DGRAFT_BUILD_APPS=OFF >/dev/null
cmake --build "$BUILD" --target graft_train_step -j"${JOBS:-2}"

MODEL=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
MACHINE="$MODEL (lscpu model name), $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2 " GiB"}') RAM, $(uname -sr), load average $(cut -d' ' -f1-3 /proc/loadavg) when the run started"
DATE=$(date -Iseconds)
TORCH_PKG=$(dpkg-query -W -f='${Version}' libtorch-dev 2>/dev/null || echo "(not installed)")
CXX=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")

ARGS=(--reps="$REPS" --steps="$STEPS" --warmup="$WARMUP" --mem_reps="$MEM_REPS" --markdown="$BUILD/train_step.md")
CMD="OPENBLAS_CORETYPE=SkylakeX OMP_WAIT_POLICY=passive graft_train_step ${ARGS[*]%--markdown=*}"
echo "+ $CMD"
"$BUILD/bench/graft_train_step" "${ARGS[@]}" | tee "$BUILD/train_step.log"

# The header line the program prints first (LibTorch version, corename, environment).
HEADER=$(head -1 "$BUILD/train_step.log")
CHECK=$(grep '^check ' "$BUILD/train_step.log" | sed 's/^/  - /')

SECTION=$(cat <<MD
- date: $DATE
- machine: $MACHINE
- build: graft $GRAFT_REV; $("$CXX" --version | head -1), CMAKE_BUILD_TYPE=Release (graft as a static library); LibTorch from Debian's libtorch-dev $TORCH_PKG
- libraries: $HEADER
- command: \`bench/run_train_step.sh\` (REPS=$REPS; runs \`$CMD\`)
- medians of $REPS repetitions (one process each, libraries interleaved); each repetition is the median of $STEPS timed steps after $WARMUP warm-up steps; peak memory: medians of $MEM_REPS processes of 20 steps and $MEM_REPS of none
- cross-check (same initial weights and data in both):
$CHECK

$(cat "$BUILD/train_step.md")
MD
)

if [[ "${NO_UPDATE:-0}" != 1 ]]; then
  SECTION="$SECTION" python3 - "$ROOT/BENCHMARKS.md" <<'PY'
import os, re, sys
path = sys.argv[1]
text = open(path).read()
begin, end = "<!-- train-step-results:begin -->", "<!-- train-step-results:end -->"
if begin not in text or end not in text:
    sys.exit(f"{path}: markers {begin} / {end} not found")
new = re.sub(re.escape(begin) + ".*?" + re.escape(end),
             lambda _: begin + "\n" + os.environ["SECTION"].strip() + "\n" + end, text, flags=re.S)
open(path, "w").write(new)
print(f"updated {path}")
PY
fi
