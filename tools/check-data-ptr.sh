#!/usr/bin/env bash
# Fails when src/ops touches tensor memory outside tools/data_ptr_allowlist.txt (docs/ARCHITECTURE.md,
# "Layers": only the kernel layer, src/kernels, reads or writes a tensor's elements; an op keeps its
# checks, its shape rule and its node). Every .cpp and .h under src/ops is read; a line that names
# data_ptr counts once. A file may have at most the count its allow-list line gives; a file not
# listed, none. A listed file that uses fewer lines than allowed is named (without failing), so
# that the list shrinks as loops move out: lower its count, or remove its line at zero.
set -euo pipefail
cd "$(dirname "$0")/.."
list=tools/data_ptr_allowlist.txt

declare -A allowed
while read -r file count reason; do
  [[ -z "$file" || "$file" == \#* ]] && continue
  if [[ ! "$count" =~ ^[0-9]+$ || -z "$reason" ]]; then
    echo "check-data-ptr: $list: \"$file $count $reason\" is not \"file count reason\""
    exit 1
  fi
  if [[ ! -f "$file" ]]; then
    echo "check-data-ptr: $list names $file, which is not in the tree (remove its line)"
    exit 1
  fi
  allowed[$file]=$count
done < "$list"

status=0
total=0
files=0
while IFS= read -r file; do
  n=$(grep -c 'data_ptr' "$file" || true)
  allow=${allowed[$file]:-0}
  if (( n > allow )); then
    if (( allow == 0 )); then
      echo "check-data-ptr: $file uses data_ptr on $n lines and is not in $list: write the loop as a kernel in src/kernels (its Args<T> of pointers, sizes and strides) and call it"
    else
      echo "check-data-ptr: $file uses data_ptr on $n lines, $allow allowed ($list): move the new loop into src/kernels"
    fi
    status=1
  elif (( n < allow )); then
    echo "check-data-ptr: note: $file uses data_ptr on $n lines, $allow allowed: lower its count in $list to $n"
  fi
  if (( n > 0 )); then
    total=$((total + n))
    files=$((files + 1))
  fi
done < <(find src/ops -type f \( -name '*.cpp' -o -name '*.h' \) | sort)

if (( status == 0 )); then
  echo "check-data-ptr: $total lines in $files src/ops files touch tensor memory, all in $list"
fi
exit $status
