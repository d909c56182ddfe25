#!/bin/sh
# Issue 14, items 6, 7 and 9: inputs that are not regular files, a gzip bomb and bad labels, driven
# through the graft command. Every run has a timeout: a reader that blocks (open() of a FIFO without
# a writer) or grows without bound (/dev/zero) fails the test instead of hanging it.
# Usage: test_input_files.sh GRAFT_BINARY
set -u
graft=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT INT TERM
failures=0

# expect_error NAME PATTERN COMMAND...: COMMAND must exit non-zero (not by the timeout) within 20 s
# and print PATTERN (an extended regular expression).
expect_error() {
  name=$1 pattern=$2
  shift 2
  timeout 20 "$@" >"$dir/out.txt" 2>&1
  rc=$?
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo "FAIL $name: timed out (it blocked or read without bound)"
    failures=$((failures + 1))
  elif [ $rc -eq 0 ]; then
    echo "FAIL $name: exit status 0"; cat "$dir/out.txt"
    failures=$((failures + 1))
  elif ! grep -Eq "$pattern" "$dir/out.txt"; then
    echo "FAIL $name: no /$pattern/ in:"; cat "$dir/out.txt"
    failures=$((failures + 1))
  else
    echo "ok $name"
  fi
}

# A tiny data set (tests/cli/test_train.cpp's IDX layout): 4 images of 2 x 2, labels 0 1 0 1.
# write_set DIR PREFIX LABEL3 LABEL4 (octal escapes of the last two labels)
write_set() {
  printf '\000\000\010\003\000\000\000\004\000\000\000\002\000\000\000\002' >"$1/$2-images-idx3-ubyte"
  printf '\001\002\003\004\005\006\007\010\011\012\013\014\015\016\017\020' >>"$1/$2-images-idx3-ubyte"
  printf '\000\000\010\001\000\000\000\004\000\001' >"$1/$2-labels-idx1-ubyte"
  printf "$3$4" >>"$1/$2-labels-idx1-ubyte"
}
mkdir "$dir/data"
write_set "$dir/data" train '\000' '\001'
write_set "$dir/data" t10k '\000' '\001'
train_flags="--data $dir/data --epochs 1 --batch-size 2 --threads 1 --progress none"

mkfifo "$dir/fifo"
expect_error "graft report FIFO" "FIFO.*not a regular file" "$graft" report "$dir/fifo" -o "$dir/r.html"
expect_error "graft train --resume FIFO" "load_safetensors.*FIFO.*not a regular file" \
  "$graft" train $train_flags --resume "$dir/fifo"
expect_error "graft report /dev/zero" "not a regular file" "$graft" report /dev/zero -o "$dir/r.html"
expect_error "graft train --resume /dev/zero" "character device, not a regular file" \
  "$graft" train $train_flags --resume /dev/zero
mkdir "$dir/logdir"
expect_error "graft report DIRECTORY" "is a directory" "$graft" report "$dir/logdir" -o "$dir/r.html"
: >"$dir/empty.jsonl"
expect_error "graft report EMPTY" "at least a run or step record" "$graft" report "$dir/empty.jsonl" -o "$dir/r.html"
if [ -e "$dir/r.html" ]; then echo "FAIL: a report was written for a bad log"; failures=$((failures + 1)); fi

# A gzip bomb: a header claiming 4096 x 65536 x 65536 uint8 pixels (2^44 bytes), then 64 MiB of
# zeros, which gzip squeezes into about 64 KiB.
mkdir "$dir/bomb"
write_set "$dir/bomb" train '\000' '\001'
write_set "$dir/bomb" t10k '\000' '\001'
rm "$dir/bomb/train-images-idx3-ubyte"
{
  printf '\000\000\010\003\000\000\020\000\000\001\000\000\000\001\000\000'
  head -c 67108864 /dev/zero
} | gzip -1 >"$dir/bomb/train-images-idx3-ubyte.gz"
expect_error "a gzip bomb IDX" "inflates to at most.*17592186044416 bytes of data for uint8 sizes \[4096, 65536, 65536\]" \
  "$graft" train --data "$dir/bomb" --epochs 1 --threads 1 --progress none

# Labels outside 0 .. classes - 1: the training labels are 0 and 1, so a test label 12 is an error
# (it used to add 11 silent outputs), and so is a training label 2 with --classes 2.
mkdir "$dir/labels"
write_set "$dir/labels" train '\000' '\001'
write_set "$dir/labels" t10k '\000' '\014'
expect_error "test label 12" "label 12 at index 3 in .*t10k-labels-idx1-ubyte.*--classes" \
  "$graft" train --data "$dir/labels" --epochs 1 --batch-size 2 --threads 1 --progress none
write_set "$dir/labels" train '\002' '\001'
expect_error "train label 2 with --classes 2" "label 2 at index 2 in .*train-labels-idx1-ubyte" \
  "$graft" train --data "$dir/labels" --classes 2 --epochs 1 --batch-size 2 --threads 1 --progress none
# ... and --classes 13 takes them.
if timeout 20 "$graft" train --data "$dir/labels" --classes 13 --epochs 1 --batch-size 2 --threads 1 \
  --progress none >"$dir/out.txt" 2>&1; then
  echo "ok --classes 13"
else
  echo "FAIL --classes 13:"; cat "$dir/out.txt"; failures=$((failures + 1))
fi

[ $failures -eq 0 ] || { echo "$failures failures"; exit 1; }
echo "all passed"
