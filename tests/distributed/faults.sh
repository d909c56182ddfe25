#!/usr/bin/env bash
# Faults under mpirun (issue 18): every surviving rank must end with a clear error within the
# collective timeout, and nothing may hang. Usage: faults.sh MPIEXEC PROGRAM
# mpirun's --enable-recovery keeps the job alive when one rank dies, so that the survivors show
# what they see (without it, mpirun kills them at once: nothing hangs either way).
set -uo pipefail
mpiexec=$1
program=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export GRAFT_DIST_TIMEOUT=3
status=0

# expect NP MODE WANT_RC PATTERN...: each PATTERN (an egrep) must match one line of the output.
expect() {
  local np=$1 mode=$2 want_rc=$3
  shift 3
  local start=$SECONDS out rc
  out=$(timeout 60 "$mpiexec" --oversubscribe --enable-recovery -np "$np" "$program" "$mode" 2>&1)
  rc=$?
  local took=$((SECONDS - start))
  local ok=1
  # With --enable-recovery, mpirun's own status is 0 even when ranks exit 1: the ranks' lines tell.
  if [[ $want_rc == 0 && $rc != 0 ]]; then ok=0; echo "faults: $mode: exit status $rc"; fi
  if ((took > 30)); then ok=0; echo "faults: $mode: took ${took} s (timeout 3 s)"; fi
  for pattern in "$@"; do
    if ! grep -Eq "$pattern" <<<"$out"; then ok=0; echo "faults: $mode: no line matches: $pattern"; fi
  done
  if ((ok)); then
    echo "faults: $mode (np $np): ok in ${took} s"
    grep -E '^rank' <<<"$out" | cut -c1-200
  else
    status=1
    echo "--- output of $mode:"
    echo "$out"
  fi
}

timed_out='error: all_reduce: timed out after 3 s on rank'
expect 2 none 0 '^rank 0: done' '^rank 1: done'
expect 3 throw 1 '^rank 1: error: forward: an injected failure' "^rank 0: $timed_out 0 of 3 \(all_reduce of DDP bucket 0" \
  "^rank 2: $timed_out 2 of 3 \(all_reduce of DDP bucket 0"
expect 3 kill 1 "^rank 0: $timed_out 0 of 3" "^rank 2: $timed_out 2 of 3"
expect 2 sizes 1 '^rank 0: error: all_reduce: the ranks issued different collectives.*rank 1: all_reduce of 5 float32' \
  '^rank 1: error: all_reduce: the ranks issued different collectives'
expect 2 models 1 '^rank 0: error: DistributedDataParallel: .*rank 0 and rank 1 differ' \
  '^rank 1: error: DistributedDataParallel: .*rank 0 and rank 1 differ'
exit $status
