#!/usr/bin/env bash
# graft plan's per-rank plan holds under mpirun (issue 31, item 1; Note [Planning a rank] in
# apps/graft/plan_internal.h): for each model, ZeRO stage (0: DDP alone, 1, 2) and optimiser (sgd
# with its momentum buffer, adam with two moments), `graft plan --world-size N --zero K --json`
# plans every rank, then `mpirun -np N graft train ... --zero K --json` runs with GRAFT_MEMORY_LIMIT at the plan's
# peak (its largest rank's): the run must train to the end, and each rank's measured peaks must be
# within 2% under that rank's plan: the run's (train's rank_peak_memory_bytes[r], every tensor byte
# the rank allocated from loading to the end, against the plan's ranks[].peak_bytes, the most of the
# loading, the setup of DDP and ZeRO, the training steps and evaluation), and the training steps'
# (rank_peak_train_memory_bytes[r], the peak within the epochs' steps, the data set included, against
# ranks[].step_peak_bytes). Both are graft's tensor counters (memory::stats), which the plan predicts
# on meta; mpirun's and MPI's own memory is outside them.
# The gpt of width 33 has an odd parameter count (31771): the two ranks' ZeRO shards differ (by one
# element), and so do their plans.
# Usage: test_plan_ranks.sh MPIEXEC GRAFT [quick]   (quick: four of the runs, for the sanitizer build)
set -euo pipefail
mpiexec=$1
graft=$2
quick=${3:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export GRAFT_DIST_TIMEOUT=${GRAFT_DIST_TIMEOUT:-60}
np=2
fail=0
err=$(mktemp)
trap 'rm -f "$err"' EXIT
check() {
  local plan_json peak run_json
  plan_json=$("$graft" plan "$@" --world-size "$np" --json | tail -1)
  peak=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["predicted_peak_bytes"])' "$plan_json")
  if ! run_json=$(GRAFT_MEMORY_LIMIT=$peak "$mpiexec" --oversubscribe -np "$np" "$graft" train "$@" --epochs 2 \
                    --progress none --json 2>"$err" | grep '^{' | tail -1); then
    echo "FAIL: mpirun -np $np graft train $* under GRAFT_MEMORY_LIMIT=$peak (the plan's peak):"
    head -3 "$err"
    fail=1
    return
  fi
  python3 - "$plan_json" "$run_json" "$*" "$np" <<'PY' || fail=1
import json, sys
plan, run, flags, np = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3], int(sys.argv[4])
ok = True
per_rank = {}
for rr in plan["ranks"]:
    for r in range(rr["first"], rr["last"] + 1):
        per_rank[r] = rr
if sorted(per_rank) != list(range(np)) or len(run["rank_peak_memory_bytes"]) != np:
    print(f"{flags}: FAIL: the plan covers ranks {sorted(per_rank)}, the run reports {len(run['rank_peak_memory_bytes'])}")
    sys.exit(1)
if plan["predicted_peak_bytes"] != max(rr["peak_bytes"] for rr in plan["ranks"]):
    print(f"{flags}: FAIL: predicted_peak_bytes is not the largest rank's peak")
    ok = False
for r in range(np):
    for what, p, m in [("run", per_rank[r]["peak_bytes"], run["rank_peak_memory_bytes"][r]),
                       ("training steps", per_rank[r]["step_peak_bytes"], run["rank_peak_train_memory_bytes"][r])]:
        gap = (p - m) / p
        print(f"{flags}: rank {r}: {what}: plan {p}, measured {m} ({100 * gap:+.2f}% of the plan unused)")
        if m > p or gap > 0.02:
            print(f"  FAIL: rank {r}'s measured peak of the {what} is not within 2% under the plan")
            ok = False
sys.exit(0 if ok else 1)
PY
}
images=(--train-limit 1200 --threads 1 --eval-limit 500)  # two epochs: the second starts with the optimiser state live
text=(--model gpt --train-limit 3000 --context 32 --depth 1 --threads 1 --eval-limit 64)
if [ "$quick" = quick ]; then
  check --model mlp --train-limit 600 --threads 1 --eval-limit 200 --batch-size 200 --zero 0 --optimizer sgd
  check --model mlp --train-limit 600 --threads 1 --eval-limit 200 --batch-size 200 --zero 1 --optimizer adam
  check --model gpt --train-limit 1500 --context 32 --depth 1 --threads 1 --eval-limit 32 --width 33 --heads 3 --zero 2 \
    --optimizer adam
  check --model cnn --train-limit 200 --threads 1 --eval-limit 100 --batch-size 50 --zero 2 --optimizer sgd
  exit $fail
fi
for zero in 0 1 2; do
  check --model mlp "${images[@]}" --batch-size 300 --zero "$zero" --optimizer sgd
  check --model mlp "${images[@]}" --batch-size 500 --zero "$zero" --optimizer adam --batch-norm
  check "${text[@]}" --width 32 --heads 2 --zero "$zero" --optimizer sgd
  check "${text[@]}" --width 33 --heads 3 --zero "$zero" --optimizer adam --batch-size 64
done
check --model cnn "${images[@]}" --batch-size 100 --zero 2 --optimizer adam
# With momentum 0, SGD keeps no momentum buffer: the plan must know (graft plan --momentum).
check --model mlp "${images[@]}" --batch-size 300 --zero 1 --optimizer sgd --momentum 0
check --model cnn "${images[@]}" --batch-size 100 --zero 1 --optimizer sgd --batch-norm
exit $fail
