#!/usr/bin/env bash
# The largest GPT that trains within a memory budget, graft against LibTorch (issue 31; BENCHMARKS.md,
# "Training in a memory budget"). The family: graft train --model gpt's (byte embedding, learnt
# positions, depth pre-norm Transformer blocks of width, 8 heads, a 4 x width feed-forward, final
# LayerNorm, Linear to 256), context 128, batch 8, Adam; widths are multiples of 64.
#
# For each depth, the widest model that fits is found by bisection on the width:
#   LibTorch: torch_seq_models --case=gpt (the same parameters in LibTorch's own Transformer modules)
#             runs a warm-up step and one more, and fits when its whole peak resident size (VmHWM) is
#             within the budget;
#   graft:    `graft plan --memory-budget` on shapes alone says whether the run fits (the budget is the
#             process's resident size, Note [The program's share of a budget]).
# Then the largest of each side (by parameters) trains for real: LibTorch's again, and graft's as
# `graft train --memory-budget` for two steps and an evaluation, whose peak resident size is reported.
#
# Usage: bench/largest_in_budget.sh BUILD_DIR [BUDGET_MIB=1024] [THREADS=2] [MAX_DEPTH=8]
#   BUILD_DIR holds graft and bench/torch_seq_models (built where libtorch-dev is installed).
set -euo pipefail
build=${1:?usage: largest_in_budget.sh BUILD_DIR [BUDGET_MIB] [THREADS] [MAX_DEPTH]}
budget_mib=${2:-1024}
threads=${3:-2}
max_depth=${4:-8}
graft=$build/graft
torch=$build/bench/torch_seq_models
[ -x "$graft" ] || { echo "no $graft"; exit 2; }
[ -x "$torch" ] || { echo "no $torch (LibTorch's side needs libtorch-dev)"; exit 2; }
# LibTorch at its best (BENCHMARKS.md): OpenBLAS's core for the processor, passive OpenMP waits.
if grep -q -m1 avx512f /proc/cpuinfo; then core=SkylakeX; else core=Haswell; fi
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-$core} OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS=$threads

# Parameters of the family at width w, depth d (context 128): per block 12 w^2 + 13 w (attention's
# in- and out-projections, the feed-forward, two layer norms); embeddings 256 w + 128 w; the final
# layer norm 2 w; the head 256 w + 256.
params() { echo $(( 12 * $1 * $1 * $2 + 13 * $1 * $2 + 256 * $1 + 128 * $1 + 2 * $1 + 256 * $1 + 256 )); }

torch_hwm_mib() {  # width depth -> VmHWM in MiB (integer part)
  "$torch" --case=gpt --width="$1" --depth="$2" --heads=8 --t=128 --batch=8 --threads="$threads" --steps=1 |
    python3 -c 'import json,sys; print(int(json.load(sys.stdin)["vmhwm_mib"]))'
}
torch_fits() { [ "$(torch_hwm_mib "$1" "$2")" -le "$budget_mib" ]; }
graft_fits() {
  "$graft" plan --model gpt --width "$1" --depth "$2" --heads 8 --context 128 --batch-size 8 --optimizer adam \
    --train-limit 16 --eval-limit 8 --threads "$threads" --memory-budget "${budget_mib}MiB" >/dev/null 2>&1
}

# The widest multiple of 64 in [64, 4096] that fits at depth d (0 when none), by bisection: memory
# grows with the width.
widest() {  # fits_fn depth
  local fn=$1 d=$2 lo=1 hi=64
  "$fn" 64 "$d" || { echo 0; return; }
  while [ "$hi" -gt "$lo" ]; do
    local mid=$(( (lo + hi + 1) / 2 ))
    if "$fn" $(( mid * 64 )) "$d"; then lo=$mid; else hi=$(( mid - 1 )); fi
  done
  echo $(( lo * 64 ))
}

best() {  # fits_fn -> "params width depth" of the largest model
  local fn=$1 top="0 0 0"
  for d in $(seq 1 "$max_depth"); do
    local w
    w=$(widest "$fn" "$d")
    [ "$w" -gt 0 ] || continue
    local p
    p=$(params "$w" "$d")
    echo "  $fn depth $d: width $w, $p parameters" >&2
    if [ "$p" -gt "${top%% *}" ]; then top="$p $w $d"; fi
  done
  echo "$top"
}

echo "budget ${budget_mib} MiB, $threads thread(s), OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
read -r tp tw td < <(best torch_fits)
read -r gp gw gd < <(best graft_fits)
echo "LibTorch: the largest is width $tw, depth $td: $tp parameters; peak resident $(torch_hwm_mib "$tw" "$td") MiB"
run=$("$graft" train --model gpt --width "$gw" --depth "$gd" --heads 8 --context 128 --batch-size 8 --optimizer adam \
  --train-limit 16 --eval-limit 8 --epochs 1 --threads "$threads" --memory-budget "${budget_mib}MiB" --progress none --json | tail -1)
python3 - "$run" "$gp" "$gw" "$gd" "$tp" "$budget_mib" <<'PY'
import json, sys
run, gp, gw, gd, tp, budget = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
assert run["parameters"] == gp, (run["parameters"], gp)
rss = run["peak_rss_bytes"] / 2**20
print(f"graft: the largest is width {gw}, depth {gd}: {gp} parameters; trained 2 steps in a peak resident "
      f"{rss:.1f} MiB ({'within' if rss <= budget else 'OVER'} the budget); {gp / tp:.2f}x LibTorch's parameters")
sys.exit(0 if rss <= budget else 1)
PY
