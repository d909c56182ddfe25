#!/usr/bin/env bash
# graft train under mpirun, issue 34 items 1, 8 and 12 (Note [Ranks that agree] in apps/graft/rank_agreement.h,
# Note [A last batch of one example] in apps/graft/train.cpp):
#  1. ranks given different flags (mpirun's MPMD form `A : B`), --save on rank 1 only, or --resume files
#     that differ (the same path in other directories) stop on every rank with an error naming the flag
#     and each rank's value; flags that may differ (--threads, --workers, --progress) still train;
#  8. batch norm trains when a rank's shard of an epoch would end in a batch of one example;
#  12. --json has world_size and global_batch_size (2 ranks, and one process).
# Usage: ranks_disagree.sh MPIEXEC GRAFT
set -euo pipefail
mpiexec=$1
graft=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export GRAFT_DIST_TIMEOUT=60
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
short=(train --train-limit 200 --epochs 1 --threads 1 --progress none)
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# expect_error NAME TEXT... -- MPIRUN-ARGS: the job exits != 0 and its stderr holds every TEXT.
expect_error() {
  local name=$1
  shift
  local texts=()
  while [[ $1 != -- ]]; do
    texts+=("$1")
    shift
  done
  shift
  local rc=0
  "$mpiexec" --oversubscribe "$@" >"$name.out" 2>"$name.err" || rc=$?
  if [[ $rc == 0 ]]; then
    fail "$name: exit status 0 (the ranks trained)"
    return
  fi
  local before=$failures
  for t in "${texts[@]}"; do
    grep -qF -- "$t" "$name.err" || fail "$name: stderr lacks \"$t\":$(echo; cat "$name.err")"
  done
  [[ $failures != "$before" ]] || echo "ok: $name (exit $rc)"
}

# --- item 1: flags that shape the run --------------------------------------------------------------
expect_error lr "--lr: rank 0 has 0.05, rank 1 has 0.5" -- \
  -np 1 "$graft" "${short[@]}" --lr 0.05 : -np 1 "$graft" "${short[@]}" --lr 0.5
expect_error seed "--seed: rank 0 has 1, rank 1 has 2" -- \
  -np 1 "$graft" "${short[@]}" --seed 1 : -np 1 "$graft" "${short[@]}" --seed 2
expect_error optimizer "--optimizer: rank 0 has sgd, rank 1 has adam" -- \
  -np 1 "$graft" "${short[@]}" --optimizer sgd : -np 1 "$graft" "${short[@]}" --optimizer adam
# Rank 0 alone writes the checkpoint: given on rank 1 only, --save must not be dropped without a word.
expect_error save_on_rank1 "--save: rank 0 has (not given), rank 1 has ck.safetensors" -- \
  -np 1 "$graft" "${short[@]}" : -np 1 "$graft" "${short[@]}" --save ck.safetensors
[[ ! -e ck.safetensors ]] || fail "save_on_rank1: a checkpoint was written"
# Three ranks: each value with the ranks that have it. (DDP itself notices --dropout 0 against 0.25:
# the dropout layers rename the parameters; not 0.1 against 0.25, nor another momentum.)
expect_error momentum3 "--momentum: ranks 0, 2 have 0.9, rank 1 has 0.5" -- \
  -np 1 "$graft" "${short[@]}" : -np 1 "$graft" "${short[@]}" --momentum 0.5 : -np 1 "$graft" "${short[@]}"
expect_error dropout "--dropout: rank 0 has 0.1, rank 1 has 0.25" -- \
  -np 1 "$graft" "${short[@]}" --dropout 0.1 : -np 1 "$graft" "${short[@]}" --dropout 0.25

# --- item 1: the resumed checkpoint ---------------------------------------------------------------
# Each rank runs in a directory of its own (mpirun -wdir), so that the same --resume path names
# another file on each: A after 1 of 2 epochs, B after 2 epochs, C = A with one bit of a weight
# flipped, S after 1 of 2 epochs with another seed.
run2=(train --train-limit 200 --epochs 2 --threads 1 --progress none)
mkdir A B C S
(cd A && "$graft" "${run2[@]}" --seed 1 --stop-after 1 --save ck.safetensors)
(cd B && "$graft" "${run2[@]}" --seed 1 --save ck.safetensors)
(cd S && "$graft" "${run2[@]}" --seed 2 --stop-after 1 --save ck.safetensors)
# The FNV-1a hash of the model's weights as graft must compute it, worked out here from the file:
# 64-bit FNV-1a over the parameters' bytes in registration order (Linear: weight, then bias).
python3 - <<'PY'
import json, struct
def flip(src, dst):
    b = bytearray(open(src, "rb").read())
    n = struct.unpack("<Q", b[:8])[0]
    start = json.loads(b[8:8 + n])["model.1.bias"]["data_offsets"][0]
    b[8 + n + start] ^= 1  # the lowest mantissa bit of the first bias: still finite
    open(dst, "wb").write(b)
def fnv1a(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    header = json.loads(b[8:8 + n])
    h = 14695981039346656037
    for layer in ("1", "3", "5"):
        for kind in ("weight", "bias"):
            lo, hi = header[f"model.{layer}.{kind}"]["data_offsets"]
            for byte in b[8 + n + lo:8 + n + hi]:
                h = ((h ^ byte) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return f"fnv1a:{h:016x}"
flip("A/ck.safetensors", "C/ck.safetensors")
for d in "ABC":
    open(f"{d}.fnv", "w").write(fnv1a(f"{d}/ck.safetensors"))
PY
resume=(train --train-limit 200 --epochs 2 --threads 1 --progress none --seed 1 --resume ck.safetensors)
a="rank 0 has epochs 1 and weights $(cat A.fnv)"
expect_error resume_epochs "graft train --resume" "$a, rank 1 has epochs 2 and weights $(cat B.fnv)" -- \
  -np 1 -wdir A "$graft" "${resume[@]}" : -np 1 -wdir B "$graft" "${resume[@]}"
expect_error resume_weights "graft train --resume" "$a, rank 1 has epochs 1 and weights $(cat C.fnv)" -- \
  -np 1 -wdir A "$graft" "${resume[@]}" : -np 1 -wdir C "$graft" "${resume[@]}"
[[ $(cat A.fnv) != $(cat C.fnv) ]] || fail "the flipped bit did not change the hash"
# A rank that cannot load its file stops every rank, at once (no rank waits for the timeout).
start=$SECONDS
export GRAFT_DIST_TIMEOUT=300
expect_error resume_seed "rank 1 could not resume from ck.safetensors" "--seed 2 (as in ck.safetensors)" -- \
  -np 1 -wdir A "$graft" "${resume[@]}" : -np 1 -wdir S "$graft" "${resume[@]}"
export GRAFT_DIST_TIMEOUT=60
(( SECONDS - start < 120 )) || fail "resume_seed: took $((SECONDS - start)) s (a rank waited for the timeout)"

# --- item 1 for --init-from (Note [Starting from a state dict] in apps/graft/run_setup.h) ----------
# init.safetensors in A and C: the "model." part of their checkpoints as a plain state dict (the
# prefix dropped), so the ranks' weights hash as A.fnv and C.fnv; in S a file that is no state dict.
python3 - <<'PY'
import json, struct
def state_dict(src, dst):
    b = open(src, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    header = json.loads(b[8:8 + n])
    out, data = {}, b""
    for key, e in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0] if kv[0] != "__metadata__" else -1):
        if not key.startswith("model."):
            continue
        lo, hi = e["data_offsets"]
        out[key[6:]] = {"dtype": e["dtype"], "shape": e["shape"], "data_offsets": [len(data), len(data) + hi - lo]}
        data += b[8 + n + lo:8 + n + hi]
    h = json.dumps(out).encode()
    h += b" " * (-(8 + len(h)) % 8)
    open(dst, "wb").write(struct.pack("<Q", len(h)) + h + data)
for d in "AC":
    state_dict(f"{d}/ck.safetensors", f"{d}/init.safetensors")
open("S/init.safetensors", "w").write("not a state dict\n")
PY
init=(train --train-limit 200 --epochs 1 --threads 1 --progress none --init-from init.safetensors)
expect_error init_from_weights "graft train --init-from" "rank 0 has weights $(cat A.fnv), rank 1 has weights $(cat C.fnv)" -- \
  -np 1 -wdir A "$graft" "${init[@]}" : -np 1 -wdir C "$graft" "${init[@]}"
expect_error init_from_unreadable "rank 1 could not load init.safetensors" "neither torch.save's format nor a safetensors header" -- \
  -np 1 -wdir A "$graft" "${init[@]}" : -np 1 -wdir S "$graft" "${init[@]}"
"$mpiexec" --oversubscribe -np 2 -wdir A "$graft" "${init[@]}" >init_from.out 2>&1 ||
  fail "init_from: 2 ranks from the same state dict did not train:$(echo; cat init_from.out)"

# --- items 1 and 12: flags that may differ train; --json has the world size and the global batch ---
"$mpiexec" --oversubscribe -np 1 "$graft" "${short[@]}" --batch-size 32 --json : \
  -np 1 "$graft" train --train-limit 200 --epochs 1 --threads 2 --workers 2 --progress lines --batch-size 32 --json \
  >mixed.out || fail "mixed: identical flags with other --threads, --workers and --progress did not train"
"$graft" "${short[@]}" --batch-size 32 --json >one.out || fail "one process did not train"

# --- item 8: batch norm, a rank's shard that would end in a batch of 1 ----------------------------
bn=(train --batch-norm --epochs 1 --threads 1 --progress lines)
"$mpiexec" --oversubscribe -np 2 "$graft" "${bn[@]}" --train-limit 130 --batch-size 64 >bn2.out 2>&1 ||
  fail "bn2: batch norm over 2 ranks, 130 examples, batch 64 failed:$(echo; cat bn2.out)"
"$mpiexec" --oversubscribe -np 3 "$graft" "${bn[@]}" --train-limit 8 --batch-size 2 >bn3.out 2>&1 ||
  fail "bn3: batch norm over 3 ranks, 8 examples, batch 2 failed:$(echo; cat bn3.out)"
# Worked out by hand: 130 over 2 ranks is 65 each (64 + 1): drop_last keeps 64 a rank, 2 left out;
# 8 over 3 ranks is 3 each (padded; 2 + 1): drop_last keeps 2 a rank, 2 left out.
grep -qF "each rank's share of an epoch (65 examples) would end in one, so each epoch leaves 2 examples out" bn2.out ||
  fail "bn2: no message about the dropped batch:$(echo; cat bn2.out)"
grep -qF "each rank's share of an epoch (3 examples) would end in one, so each epoch leaves 2 examples out" bn3.out ||
  fail "bn3: no message about the dropped batch:$(echo; cat bn3.out)"
# Every rank with one example in all is an error before training, on every rank.
expect_error bn_one_each "at least 2 training examples per rank" "1 example per rank (3 examples over 3 ranks)" -- \
  -np 3 "$graft" "${bn[@]}" --train-limit 3 --batch-size 2

python3 - <<'PY' || fail "--json"
import json
ok = True
def last_json(name):
    lines = [l for l in open(name) if l.startswith("{")]
    return json.loads(lines[-1]) if lines else {}
for name, world in (("mixed.out", 2), ("one.out", 1)):
    j = last_json(name)
    got = (j.get("world_size"), j.get("global_batch_size"), j.get("batch_size"))
    want = (world, world * 32, 32)
    print(f"{name}: world_size, global_batch_size, batch_size = {got} (expected {want})")
    if got != want:
        ok = False
        print(f"FAIL: {name}: --json")
raise SystemExit(0 if ok else 1)
PY
[[ $failures == 0 ]] || { echo "$failures failures"; exit 1; }
echo "all passed"
