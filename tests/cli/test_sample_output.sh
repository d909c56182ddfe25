#!/bin/sh
# graft sample's output (issue 34, item 11): a sample that cannot be written (standard output on
# /dev/full, whose every write fails with ENOSPC) is an error naming standard output, with a non-zero
# exit status, not exit 0 with the sample lost. Usage: test_sample_output.sh path/to/graft
set -u
GRAFT=$1
if [ ! -c /dev/full ]; then
  echo "SKIP: no /dev/full"
  exit 77
fi
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT

# A tiny text checkpoint: one epoch of a one-layer GPT of width 8 on 4,500 bytes (a second or two).
i=0
while [ "$i" -lt 100 ]; do
  printf 'the quick brown fox jumps over the lazy dog. ' >>"$DIR/fox.txt"
  i=$((i + 1))
done
timeout 60 "$GRAFT" train --model gpt --data "$DIR/fox.txt" --context 8 --width 8 --depth 1 --heads 1 \
  --batch-size 16 --epochs 1 --threads 1 --progress none --save "$DIR/gpt.safetensors" >"$DIR/train.txt" 2>&1 || {
  echo "FAIL: the training run failed: $(cat "$DIR/train.txt")"
  exit 1
}

# The same sample to a file works; to /dev/full it fails, naming standard output.
timeout 60 "$GRAFT" sample --checkpoint "$DIR/gpt.safetensors" --length 20 --threads 1 >"$DIR/sample.txt" 2>&1 || {
  echo "FAIL: graft sample to a file: exit status $?: $(cat "$DIR/sample.txt")"
  exit 1
}
timeout 60 "$GRAFT" sample --checkpoint "$DIR/gpt.safetensors" --length 20 --threads 1 >/dev/full 2>"$DIR/err.txt"
rc=$?
failures=0
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
  echo "FAIL: graft sample > /dev/full: exit status $rc, expected an error"
  failures=$((failures + 1))
fi
if ! grep -q "graft sample.*standard output.*write error" "$DIR/err.txt"; then
  echo "FAIL: the error does not name standard output: $(cat "$DIR/err.txt")"
  failures=$((failures + 1))
fi
[ "$failures" -eq 0 ] && echo "graft sample > /dev/full fails naming standard output: $(cat "$DIR/err.txt")"
exit "$failures"
