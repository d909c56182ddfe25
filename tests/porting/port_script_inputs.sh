#!/usr/bin/env bash
# Issue 34, item 10: tools/port-from-libtorch.sh never writes over its input (OUT the same path as IN,
# a hard link or a symlink to it), ports symlinked sources in directory mode, refuses a FIFO as "not a
# regular file" without opening it, and still ports a plain file.
# Usage: port_script_inputs.sh [SCRIPT]   (default: tools/port-from-libtorch.sh of this checkout)
set -uo pipefail

script=${1:-$(cd "$(dirname "$0")/../.." && pwd)/tools/port-from-libtorch.sh}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

src='#include <torch/torch.h>
int main() { torch::Tensor t = torch::ones({2}); return t.numel() == 2 ? 0 : 1; }'
expected='#include <graft/graft.h>
int main() { graft::Tensor t = graft::ones({2}); return t.numel() == 2 ? 0 : 1; }'

# A plain file is ported: the include and every torch:: name.
printf '%s\n' "$src" >"$tmp/in.cpp"
if bash "$script" "$tmp/in.cpp" "$tmp/out.cpp" 2>"$tmp/err"; then
  [[ "$(cat "$tmp/out.cpp")" == "$expected" ]] || fail "plain file: got $(cat "$tmp/out.cpp")"
else
  fail "plain file: exit $? ($(cat "$tmp/err"))"
fi

# OUT a hard link to IN, OUT the same path, OUT a symlink to IN: refused, IN byte for byte as it was.
ln "$tmp/in.cpp" "$tmp/hard.cpp"
ln -s "$tmp/in.cpp" "$tmp/soft.cpp"
for out in "$tmp/hard.cpp" "$tmp/in.cpp" "$tmp/soft.cpp" "$tmp/./in.cpp"; do
  bash "$script" "$tmp/in.cpp" "$out" 2>"$tmp/err"
  rc=$?
  [[ $rc -ne 0 ]] || fail "OUT $out (the input itself): exit 0"
  [[ "$(cat "$tmp/in.cpp")" == "$src" ]] || fail "OUT $out: the input changed to '$(cat "$tmp/in.cpp")'"
  grep -q "write over the input" "$tmp/err" || fail "OUT $out: message '$(cat "$tmp/err")'"
  printf '%s\n' "$src" >"$tmp/in.cpp"  # for the next case, should this one have emptied it
done

# Directory mode: a symlinked .cpp is ported as a regular file with its target's content; a symlink to
# a directory and a FIFO are named on stderr as skipped.
mkdir -p "$tmp/elsewhere" "$tmp/project/sub"
printf '%s\n' "$src" >"$tmp/elsewhere/real.cpp"
printf '%s\n' "$src" >"$tmp/project/main.cpp"
ln -s "$tmp/elsewhere/real.cpp" "$tmp/project/linked.cpp"
ln -s "$tmp/elsewhere" "$tmp/project/sub/dirlink"
mkfifo "$tmp/project/pipe"
if timeout 20 bash "$script" "$tmp/project" "$tmp/ported" 2>"$tmp/err"; then
  [[ "$(cat "$tmp/ported/main.cpp" 2>/dev/null)" == "$expected" ]] || fail "directory: main.cpp not ported"
  [[ -f "$tmp/ported/linked.cpp" && ! -L "$tmp/ported/linked.cpp" ]] || fail "directory: linked.cpp missing or a link"
  [[ "$(cat "$tmp/ported/linked.cpp" 2>/dev/null)" == "$expected" ]] || fail "directory: linked.cpp not ported"
  grep -q "skipped.*dirlink" "$tmp/err" || fail "directory: the skipped symlink to a directory is not named"
  grep -q "skipped.*pipe.*not a regular file" "$tmp/err" || fail "directory: the skipped FIFO is not named"
else
  fail "directory: exit $? ($(cat "$tmp/err"))"
fi
[[ "$(cat "$tmp/elsewhere/real.cpp")" == "$src" ]] || fail "directory: the symlink's target changed"

# A directory OUT that is a symlink to IN: refused, IN intact.
ln -s "$tmp/project" "$tmp/project_link"
bash "$script" "$tmp/project" "$tmp/project_link" 2>"$tmp/err" && fail "OUT a symlink to the IN directory: exit 0"
[[ "$(cat "$tmp/project/main.cpp")" == "$src" ]] || fail "OUT a symlink to the IN directory: main.cpp changed"

# A FIFO as IN: "not a regular file", at once (no writer ever comes: a read would wait forever).
mkfifo "$tmp/fifo.cpp"
timeout 20 bash "$script" "$tmp/fifo.cpp" "$tmp/fifo_out.cpp" 2>"$tmp/err"
rc=$?
[[ $rc -ne 124 ]] || fail "FIFO input: the script hung (opened the FIFO)"
[[ $rc -ne 0 ]] || fail "FIFO input: exit 0"
grep -q "not a regular file" "$tmp/err" || fail "FIFO input: message '$(cat "$tmp/err")'"

# Rule 4: LibTorch's check and warning macros get graft's LibTorch-form names; a name that only ends
# in one (MY_TORCH_CHECK) is left alone.
printf '%s\n' 'TORCH_CHECK(n > 0, "n is ", n); TORCH_INTERNAL_ASSERT(ok); TORCH_WARN_ONCE("w"); MY_TORCH_CHECK(1);' >"$tmp/macros.cpp"
bash "$script" "$tmp/macros.cpp" "$tmp/macros_out.cpp" 2>"$tmp/err" || fail "macros: exit $?"
[[ "$(cat "$tmp/macros_out.cpp")" == 'GRAFT_TORCH_CHECK(n > 0, "n is ", n); GRAFT_TORCH_INTERNAL_ASSERT(ok); GRAFT_TORCH_WARN_ONCE("w"); MY_TORCH_CHECK(1);' ]] ||
  fail "macros: got $(cat "$tmp/macros_out.cpp")"

if [[ $failures -ne 0 ]]; then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "port-from-libtorch.sh: all input cases passed"
