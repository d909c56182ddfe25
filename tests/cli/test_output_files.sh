#!/usr/bin/env bash
# graft train's and graft report's output files (issue 14, items 1-3): a target that is not a regular
# file is refused before any training, a symlink is followed (its file written, the link kept), a
# write error of the run log fails the run and leaves only complete lines, and a save leaves no
# temporary. Usage: test_output_files.sh path/to/graft
set -u
GRAFT=$1
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# A tiny valid IDX data set: 12x12 random pixels, labels 0 1 2 repeated (it need not be learnable).
# $1 prefix, $2 count as an octal escape for the last header byte, $3 count
write_split() {
  { printf '\0\0\10\3\0\0\0'"$2"'\0\0\0\14\0\0\0\14'; head -c $(($3 * 144)) /dev/urandom; } >"$DIR/data/$1-images-idx3-ubyte"
  { printf '\0\0\10\1\0\0\0'"$2"; for ((i = 0; i < $3; i++)); do printf "\\$((i % 3))"; done; } \
    >"$DIR/data/$1-labels-idx1-ubyte"
}
mkdir "$DIR/data" "$DIR/out"
write_split train '\100' 64  # 64 images
write_split t10k '\20' 16    # 16 images

# train [flags...]: one short run; output in $DIR/run.txt, exit status in $rc.
train() {
  timeout 20 "$GRAFT" train --data "$DIR/data" --epochs 1 --batch-size 16 --threads 1 --progress lines "$@" \
    >"$DIR/run.txt" 2>&1
  rc=$?
}
expect_refused() {  # $1: what the message must hold; before any training
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then fail "$2: exit status $rc, expected an error"; fi
  grep -q -- "$1" "$DIR/run.txt" || fail "$2: the message lacks '$1': $(cat "$DIR/run.txt")"
  if grep -q "epoch 1/1" "$DIR/run.txt"; then fail "$2: refused only after training"; fi
}
O=$DIR/out

# --save, --log onto device nodes (as root only: mknod): refused up front, the nodes stay devices.
if [ "$(id -u)" -eq 0 ]; then
  mknod "$O/null" c 1 3 && mknod "$O/full" c 1 7
  train --save "$O/null"
  expect_refused "--save.*is a character device" "--save onto a device node"
  [ -c "$O/null" ] || fail "--save replaced the device node"
  ln -s null "$O/to_null"
  train --save "$O/to_null"
  expect_refused "--save.*is a symlink to a character device" "--save onto a symlink to a device node"
  [ -L "$O/to_null" ] && [ -c "$O/null" ] || fail "--save replaced the link or the device node"
  train --log "$O/full"
  expect_refused "--log.*is a character device" "--log onto a device node"
  [ -c "$O/full" ] || fail "--log replaced the device node"
  rm -f "$O/null" "$O/full" "$O/to_null"
else
  echo "SKIP: device nodes (mknod needs root)"
fi

# --report and graft report -o onto a FIFO: refused at once, no hang (a writer would wait for a reader).
mkfifo "$O/fifo"
train --report "$O/fifo"
expect_refused "--report.*is a FIFO" "--report onto a FIFO"
[ -p "$O/fifo" ] || fail "--report replaced the FIFO"

# --log onto a symlink: the link stays, the file it names gets the log.
ln -s real.jsonl "$O/link.jsonl"
train --log "$O/link.jsonl"
[ "$rc" -eq 0 ] || fail "--log onto a symlink: exit status $rc: $(cat "$DIR/run.txt")"
[ -L "$O/link.jsonl" ] || fail "--log replaced the symlink"
grep -q '"type":"run"' "$O/real.jsonl" || fail "--log did not write the file the link names"

timeout 20 "$GRAFT" report "$O/real.jsonl" -o "$O/fifo" >"$DIR/run.txt" 2>&1
rc=$?
expect_refused "-o.*is a FIFO" "graft report -o onto a FIFO"

# --save onto a symlink latest -> run42.safetensors: run42 is replaced, latest stays a link, and no
# temporary is left.
touch "$O/run42.safetensors"
ln -s run42.safetensors "$O/latest"
train --save "$O/latest"
[ "$rc" -eq 0 ] || fail "--save onto a symlink: exit status $rc: $(cat "$DIR/run.txt")"
[ -L "$O/latest" ] || fail "--save replaced the symlink"
[ -f "$O/run42.safetensors" ] && [ -s "$O/run42.safetensors" ] || fail "--save did not write run42.safetensors"
ls "$O" | grep -q '\.tmp\.' && fail "a temporary was left: $(ls "$O")"

# A write error of the run log (the file-size limit, as a full disk would): the run fails naming
# --log and the file, and the log ends with a complete line. SIGXFSZ is ignored so that the write
# fails (EFBIG) instead of killing graft; ulimit -f counts 1024-byte blocks in bash.
(
  trap '' XFSZ
  ulimit -f 2
  exec timeout 20 "$GRAFT" train --data "$DIR/data" --epochs 3 --batch-size 16 --threads 1 --progress lines \
    --log "$O/limited.jsonl" >"$DIR/run.txt" 2>&1
)
rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "a failed log write: exit status $rc, expected an error"
grep -q -- "--log.*limited.jsonl" "$DIR/run.txt" || fail "the log write error names no --log file: $(cat "$DIR/run.txt")"
size=$(wc -c <"$O/limited.jsonl")
[ "$size" -gt 0 ] && [ "$size" -le 2048 ] || fail "the limited log has $size bytes"
[ "$(tail -c 1 "$O/limited.jsonl" | od -An -c | tr -d ' ')" = '\n' ] || fail "the log ends mid-line"

[ "$failures" -eq 0 ] && echo "all output-file checks passed"
exit "$failures"
