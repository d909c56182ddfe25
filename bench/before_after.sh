#!/usr/bin/env bash
# graft against graft: the training steps (MLP, CNN: train_step.cpp; GPT, LSTM: seq_models.cpp) of two
# builds, run alternately, one process per measurement, ROUNDS rounds; prints each step's median of
# the per-round medians for both builds and their ratio (after / before).
#   bench/before_after.sh BEFORE_BENCH_DIR AFTER_BENCH_DIR [ROUNDS] [THREADS]
# Each DIR is a build's bench/ folder holding graft_train_step and graft_seq_models.
set -euo pipefail
before=$1 after=$2 rounds=${3:-5} threads=${4:-2}
out=$(mktemp -d)
for r in $(seq "$rounds"); do
  for side in before after; do
    dir=$before; [[ $side == after ]] && dir=$after
    for m in mlp cnn; do
      ms=$("$dir/graft_train_step" --mode=time --model=$m --threads="$threads" | sed -n "s/^RESULT .* ms=\([0-9.]*\).*/\1/p")
      echo "$ms" >>"$out/$m.$side"
    done
    for c in gpt lstm; do
      ms=$("$dir/graft_seq_models" --case=$c --threads="$threads" --steps=5 | sed -n 's/.*"median_ms": \([0-9.]*\).*/\1/p')
      echo "$ms" >>"$out/$c.$side"
    done
  done
done
median() { sort -g "$1" | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
printf '%-6s %12s %12s %8s\n' step before_ms after_ms ratio
for s in mlp cnn gpt lstm; do
  b=$(median "$out/$s.before") a=$(median "$out/$s.after")
  printf '%-6s %12.2f %12.2f %8.3f\n' "$s" "$b" "$a" "$(echo "$a / $b" | bc -l)"
done
