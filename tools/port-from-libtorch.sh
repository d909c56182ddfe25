#!/usr/bin/env bash
# Ports a LibTorch program to graft by renaming, and nothing else (docs/porting.md):
#   1. every #include of <torch/...>, <ATen/...> or <c10/...> becomes #include <graft/graft.h>;
#   2. torch::, at:: and c10:: become graft:: (in code and string literals alike), and
#      `namespace torch|at|c10` becomes `namespace graft`;
#   3. TORCH_MODULE(, TORCH_MODULE_IMPL(, TORCH_ARG( become GRAFT_MODULE(, GRAFT_MODULE_IMPL(, GRAFT_ARG(.
# Usage: tools/port-from-libtorch.sh IN OUT
#   IN a file: OUT is the ported file. IN a directory: every file under it is copied to OUT, and the
#   C and C++ sources (.cpp .cc .cxx .h .hpp .hh .hxx) among them are ported; a CMakeLists.txt that
#   asks for Torch is left as it is (point it at graft yourself: docs/porting.md shows how).
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 IN OUT   (IN and OUT: two files, or two directories)" >&2
  exit 2
fi
in=$1 out=$2

port_file() {
  # \< is GNU sed's start of a word: "at::" inside "format::" is not renamed.
  sed -E \
    -e 's@^([[:space:]]*#[[:space:]]*include[[:space:]]*)[<"](torch|ATen|c10)/[^>"]*[>"]@\1<graft/graft.h>@' \
    -e 's@\<(torch|at|c10)::@graft::@g' \
    -e 's@\<namespace[[:space:]]+(torch|at|c10)\>@namespace graft@g' \
    -e 's@\<TORCH_(MODULE|MODULE_IMPL|ARG)\(@GRAFT_\1(@g' \
    "$1" >"$2"
}

if [[ -d "$in" ]]; then
  [[ -e "$out" && ! -d "$out" ]] && { echo "$0: $out exists and is not a directory" >&2; exit 1; }
  in_abs=$(cd "$in" && pwd)
  mkdir -p "$out"
  out_abs=$(cd "$out" && pwd)
  [[ "$out_abs" == "$in_abs" || "$out_abs" == "$in_abs"/* ]] && { echo "$0: OUT must not be inside IN" >&2; exit 1; }
  (cd "$in_abs" && find . -type f -print0) | while IFS= read -r -d '' rel; do
    mkdir -p "$out_abs/$(dirname "$rel")"
    case "$rel" in
      *.cpp | *.cc | *.cxx | *.h | *.hpp | *.hh | *.hxx) port_file "$in_abs/$rel" "$out_abs/$rel" ;;
      *) cp -p "$in_abs/$rel" "$out_abs/$rel" ;;
    esac
  done
elif [[ -f "$in" ]]; then
  [[ -d "$out" ]] && { echo "$0: OUT is a directory; give the output file's name" >&2; exit 1; }
  [[ "$(realpath -m "$in")" == "$(realpath -m "$out")" ]] && { echo "$0: OUT must differ from IN" >&2; exit 1; }
  port_file "$in" "$out"
else
  echo "$0: $in: no such file or directory" >&2
  exit 1
fi
