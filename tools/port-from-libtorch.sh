#!/usr/bin/env bash
# Ports a LibTorch program to graft by renaming, and nothing else (docs/porting.md):
#   1. every #include of <torch/...>, <ATen/...> or <c10/...> becomes #include <graft/graft.h>;
#   2. torch::, at:: and c10:: become graft:: (in code and string literals alike), and
#      `namespace torch|at|c10` becomes `namespace graft`;
#   3. TORCH_MODULE(, TORCH_MODULE_IMPL(, TORCH_ARG( become GRAFT_MODULE(, GRAFT_MODULE_IMPL(, GRAFT_ARG(;
#   4. LibTorch's check and warning macros TORCH_CHECK( (and _INDEX, _VALUE, _TYPE, _NOT_IMPLEMENTED),
#      TORCH_INTERNAL_ASSERT( (and _DEBUG_ONLY), TORCH_WARN( and TORCH_WARN_ONCE( become GRAFT_TORCH_CHECK( and
#      so on (graft/core/torch_check.h: graft's own GRAFT_CHECK takes op, expected, got and hint).
# Usage: tools/port-from-libtorch.sh IN OUT
#   IN a file: OUT is the ported file. IN a directory: every file under it is copied to OUT, and the
#   C and C++ sources (.cpp .cc .cxx .h .hpp .hh .hxx) among them are ported; a CMakeLists.txt that
#   asks for Torch is left as it is (point it at graft yourself: docs/porting.md shows how).
#   A symlink to a regular file is ported (or copied) as a regular file with its target's content; a
#   symlink to a directory is not followed (it may loop, or lead out of IN), nor is anything that is
#   not a regular file (a FIFO, a socket, a device, a dangling symlink): each one skipped is named on
#   stderr. Hidden files are ported like any other.
# OUT never overwrites IN: the same path, a hard link or a symlink to it (the same device and inode)
# is refused, and IN is left as it was. IN must be a regular file or a directory; a FIFO is refused
# without being opened (opening one for reading waits for a writer).
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 IN OUT   (IN and OUT: two files, or two directories)" >&2
  exit 2
fi
in=$1 out=$2

# "device:inode" of a path, symlinks followed; empty when it does not exist.
file_id() { stat -L -c '%d:%i' -- "$1" 2>/dev/null || true; }

port_file() {
  # \< is GNU sed's start of a word: "at::" inside "format::" is not renamed.
  sed -E \
    -e 's@^([[:space:]]*#[[:space:]]*include[[:space:]]*)[<"](torch|ATen|c10)/[^>"]*[>"]@\1<graft/graft.h>@' \
    -e 's@\<(torch|at|c10)::@graft::@g' \
    -e 's@\<namespace[[:space:]]+(torch|at|c10)\>@namespace graft@g' \
    -e 's@\<TORCH_(MODULE|MODULE_IMPL|ARG)\(@GRAFT_\1(@g' \
    -e 's@\<TORCH_(CHECK|CHECK_INDEX|CHECK_VALUE|CHECK_TYPE|CHECK_NOT_IMPLEMENTED|INTERNAL_ASSERT|INTERNAL_ASSERT_DEBUG_ONLY|WARN|WARN_ONCE)\(@GRAFT_TORCH_\1(@g' \
    "$1" >"$2"
}

if [[ -d "$in" ]]; then
  [[ -e "$out" && ! -d "$out" ]] && { echo "$0: $out exists and is not a directory" >&2; exit 1; }
  in_abs=$(cd "$in" && pwd -P)  # -P: symlinks resolved, so an OUT that links to IN is caught
  mkdir -p "$out"
  out_abs=$(cd "$out" && pwd -P)
  [[ "$out_abs" == "$in_abs" || "$out_abs" == "$in_abs"/* ]] && { echo "$0: OUT must not be inside IN" >&2; exit 1; }
  # Regular files and symlinks to regular files (-xtype f: the target's type), the rest named.
  (cd "$in_abs" && find . \( -type f -o -type l \) -print0) | while IFS= read -r -d '' rel; do
    if [[ -L "$in_abs/$rel" && ! -f "$in_abs/$rel" ]]; then
      if [[ -d "$in_abs/$rel" ]]; then
        echo "$0: skipped $in/${rel#./}: a symlink to a directory (not followed)" >&2
      else
        echo "$0: skipped $in/${rel#./}: a dangling symlink, or one to something not a regular file" >&2
      fi
      continue
    fi
    mkdir -p "$out_abs/$(dirname "$rel")"
    if [[ "$(file_id "$out_abs/$rel")" == "$(file_id "$in_abs/$rel")" ]]; then
      echo "$0: $out/${rel#./} is $in/${rel#./} itself (a hard link): refusing to write over the input" >&2
      exit 1
    fi
    case "$rel" in
      *.cpp | *.cc | *.cxx | *.h | *.hpp | *.hh | *.hxx) port_file "$in_abs/$rel" "$out_abs/$rel" ;;
      *) cp -pL "$in_abs/$rel" "$out_abs/$rel" ;;
    esac
  done
  (cd "$in_abs" && find . ! -type f ! -type l ! -type d -print0) | while IFS= read -r -d '' rel; do
    echo "$0: skipped $in/${rel#./}: not a regular file (a FIFO, socket or device)" >&2
  done
elif [[ -f "$in" ]]; then
  [[ -d "$out" ]] && { echo "$0: OUT is a directory; give the output file's name" >&2; exit 1; }
  # The same file under another name (a hard link, a symlink, ../x): writing OUT would empty IN.
  in_id=$(file_id "$in") out_id=$(file_id "$out")
  if [[ "$(realpath -m -- "$in")" == "$(realpath -m -- "$out")" || (-n "$out_id" && "$out_id" == "$in_id") ]]; then
    echo "$0: OUT ($out) is IN ($in) itself, a link to it or the same file (device:inode $in_id): refusing to" \
      "write over the input; give another OUT" >&2
    exit 1
  fi
  port_file "$in" "$out"
elif [[ -e "$in" ]]; then
  echo "$0: $in: not a regular file or a directory (a FIFO, socket or device); give a source file" >&2
  exit 1
else
  echo "$0: $in: no such file or directory" >&2
  exit 1
fi
