#!/usr/bin/env bash
# Issue 29's check: what cutting matrix products only where the kernel keeps the bits costs
# (Note [Splitting a matrix product] in src/runtime/blas.cpp). The MLP training step
# (train_step.cpp: 784-512-256-10, batch 128, SGD) and the GPT-style step (seq_models.cpp --case=gpt:
# width 512, depth 4, 8 heads, context 128, batch 8, Adam) at 1 and 2 threads, under OpenBLAS's
# AVX-512 family (this processor's own) and its AVX2 family (Haswell, as on an AVX2-only processor),
# for graft now, graft before the change (BEFORE_BIN, optional: a build-bench of the earlier
# commit) and LibTorch under the same OPENBLAS_CORETYPE, each process alone, the libraries taking
# turns round by round. Prints one line per process and a table of medians.
# Usage: bench/blas_families.sh [ROUNDS]   (BUILD_DIR: default build-bench; about 10 minutes)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${BUILD_DIR:-$ROOT/build-bench}/bench
BEFORE=${BEFORE_BIN:-}
ROUNDS=${1:-3}
export OMP_WAIT_POLICY=passive
out=$(mktemp)
avx512_family=SkylakeX
libs=(graft torch)
[[ -n "$BEFORE" ]] && libs+=(before)
run() {  # run LIB FAMILY THREADS MODEL: one process, one line "lib family threads model ms"
  local lib=$1 family=$2 threads=$3 model=$4 dir=$BIN name=graft ms
  [[ $lib == before ]] && dir=$BEFORE
  [[ $lib == torch ]] && name=torch
  if [[ $model == mlp ]]; then
    ms=$(OPENBLAS_CORETYPE=$family GRAFT_BLAS_CORETYPE=$family OPENBLAS_NUM_THREADS=$threads \
         "$dir/${name}_train_step" --mode=time --model=mlp --threads="$threads" --steps=40 --warmup=5 |
         sed -n 's/^RESULT .* ms=\([0-9.]*\).*/\1/p')
  else
    ms=$(OPENBLAS_CORETYPE=$family GRAFT_BLAS_CORETYPE=$family OPENBLAS_NUM_THREADS=$threads \
         "$dir/${name}_seq_models" --case=gpt --threads="$threads" --steps=4 |
         sed -n 's/.*"median_ms": \([0-9.]*\).*/\1/p')
  fi
  echo "$lib $family $threads $model $ms" | tee -a "$out"
}
for ((r = 1; r <= ROUNDS; ++r)); do
  for family in $avx512_family Haswell; do
    for threads in 1 2; do
      for model in mlp gpt; do
        # the order of the libraries turns with the round
        for ((i = 0; i < ${#libs[@]}; ++i)); do run "${libs[$(((i + r) % ${#libs[@]}))]}" $family $threads $model; done
      done
    done
  done
done
echo
echo "medians of $ROUNDS rounds, ms per step ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores)"
python3 - "$out" <<'PY'
import sys, statistics, collections
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    lib, fam, th, model, ms = line.split()
    d[(model, fam, th, lib)].append(float(ms))
print("| step | OpenBLAS family | threads | graft | graft before | LibTorch | graft / LibTorch | graft / before |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for model in ("mlp", "gpt"):
    for fam in ("SkylakeX", "Haswell"):
        for th in ("1", "2"):
            g = statistics.median(d[(model, fam, th, "graft")]); t = statistics.median(d[(model, fam, th, "torch")])
            b = d.get((model, fam, th, "before"))
            bm = statistics.median(b) if b else float("nan")
            print(f"| {model} | {fam} | {th} | {g:.2f} | {bm:.2f} | {t:.2f} | {g / t:.2f} | {g / bm:.2f} |")
PY
rm -f "$out"
