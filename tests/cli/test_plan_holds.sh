#!/usr/bin/env bash
# graft plan's peak holds (issue 34, item 2; Note [What graft plan counts] in apps/graft/plan.cpp):
# for each model and a sample of flags, `graft train` with GRAFT_MEMORY_LIMIT set to the peak that
# `graft plan` printed trains to the end, and the peak it measured (every allocation of the run,
# loading, training steps and evaluation) is within 2% of the plan and not above it; so is the
# training steps' own peak against the plan's step peak. With --memory-budget, the run's peak resident size
# (the program and the allocator's cache included) is within the budget as well.
# Usage: test_plan_holds.sh GRAFT [quick]   (quick: one small run per model, for the sanitizer build)
set -euo pipefail
graft=$1
quick=${2:-}
fail=0
check() {
  local plan_json peak measured
  plan_json=$("$graft" plan "$@" --json | tail -1)
  peak=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["predicted_peak_bytes"])' "$plan_json")
  local step_peak
  step_peak=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["step_peak_bytes"])' "$plan_json")
  if ! measured=$(GRAFT_MEMORY_LIMIT=$peak "$graft" train "$@" --epochs 2 --progress none --json 2>/tmp/plan_holds_err.$$ | tail -1); then
    echo "FAIL: graft train $* under GRAFT_MEMORY_LIMIT=$peak (the plan's peak):"
    head -3 /tmp/plan_holds_err.$$
    fail=1
    return
  fi
  python3 - "$peak" "$step_peak" "$measured" "$*" <<'PY' || fail=1
import json, sys
plan, step_plan, run, flags = int(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]
ok = True
for what, p, m in [("run", plan, run["peak_memory_bytes"]), ("training steps", step_plan, run["peak_train_memory_bytes"])]:
    gap = (p - m) / p
    print(f"{flags}: {what}: plan {p}, measured {m} ({100 * gap:+.2f}% of the plan unused)")
    if m > p or gap > 0.02:
        print(f"  FAIL: the measured peak of the {what} is not within 2% under the plan")
        ok = False
# --memory-budget is the process's (Note [The program's share of a budget]): its peak resident size,
# the program and the allocator's cache included, is within the budget.
words = flags.split()
if "--memory-budget" in words:
    text = words[words.index("--memory-budget") + 1]
    budget = int(float(text[:-3]) * {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[text[-3:]])
    rss = run["peak_rss_bytes"]
    print(f"{flags}: peak resident {rss} of the budget's {budget} ({100 * rss / budget:.1f}%)")
    if rss > budget:
        print("  FAIL: the process passed its memory budget")
        ok = False
sys.exit(0 if ok else 1)
PY
}
images=(--train-limit 1500 --threads 1 --eval-limit 2000)  # two epochs each: the second starts with the optimiser state live
text=(--train-limit 6000 --context 64 --width 64 --threads 1 --eval-limit 256)
if [ "$quick" = quick ]; then
  check --model mlp --train-limit 600 --threads 1 --batch-size 200
  check --model cnn --train-limit 300 --threads 1 --batch-size 100 --batch-norm
  check --model gpt --train-limit 1500 --context 32 --width 32 --heads 2 --depth 1 --threads 1
  check --model lstm --train-limit 1500 --context 32 --width 32 --depth 1 --threads 1
  exit $fail
fi
check --model mlp "${images[@]}"
check --model mlp "${images[@]}" --batch-size 300 --optimizer adam --batch-norm --dropout 0.2 --workers 2
check --model mlp "${images[@]}" --batch-size 750 --optimizer adagrad  # the step's peak is the run's
check --model cnn "${images[@]}" --batch-size 32 --workers 0
check --model cnn "${images[@]}" --optimizer rmsprop --batch-norm --batch-size 500
check --model gpt "${text[@]}"
check --model gpt "${text[@]}" --heads 2 --depth 3 --batch-size 16 --checkpoint-attention --optimizer adam
check --model lstm "${text[@]}"
check --model lstm "${text[@]}" --depth 1 --batch-size 8 --optimizer sgd --workers 0
check --model gpt "${text[@]}" --checkpoint-segments 2 --eval-batch-size 8
check --model gpt "${text[@]}" --depth 2 --checkpoint-segments 4 --selective-recompute --optimizer adam  # linears' outputs kept
check --model mlp "${images[@]}" --batch-size 500 --checkpoint-segments 3
check --model cnn "${images[@]}" --memory-budget 160MiB  # graft chooses a smaller evaluation batch
check --model gpt "${text[@]}" --optimizer adam --step-in-backward --optimizer-state int8 --chunked-loss
check --model cnn "${images[@]}" --optimizer-state bfloat16 --step-in-backward --batch-size 100
check --model gpt "${text[@]}" --memory-budget 48MiB  # every saving graft has, chosen from the plan
check --model cnn "${images[@]}" --batch-size 200 --micro-batches 4
check --model gpt "${text[@]}" --micro-batches 3 --chunked-loss --checkpoint-segments 2
check --model cnn "${images[@]}" --batch-size 500 --memory-budget 160MiB  # graft chooses micro-batches
rm -f /tmp/plan_holds_err.$$
exit $fail
