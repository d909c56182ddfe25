#!/usr/bin/env bash
# Fails when an #include runs up a layer (docs/ARCHITECTURE.md, "Layers"). Each file of include/,
# src/ and apps/ belongs to the layer of its folder; it may include its own layer and the layers
# below it, never one above. Apps may use the public API (include/graft) only, not src/. Both
# spellings are read: #include "graft/..." (or a path next to the file) and #include <graft/...>.
#
#   layer 0  core                 include/graft/core, src/core
#   layer 1  runtime, kernels     include/graft/runtime, src/runtime, src/kernels
#   layer 2  autograd             include/graft/autograd, src/autograd
#   layer 3  ops                  include/graft/ops, src/ops
#   layer 4  engine               include/graft/engine, src/engine (backward, grad, gradcheck: the
#                                 engine sums and casts gradients with ops, so it sits above them)
#   layer 5  nn                   include/graft/nn, src/nn
#   layer 6  optim                include/graft/optim, src/optim
#   layer 7  data, io             include/graft/{data,io}, src/{data,io}
#   layer 8  amp, diagnostics,    include/graft/{amp,diagnostics,distributed,utils}, src/{amp,diagnostics,distributed,utils}
#            utils (checkpoint)
#   layer 9  apps                 apps/, include/graft/graft.h (the umbrella header)
set -euo pipefail
cd "$(dirname "$0")/.."

layer_of_area() {
  case "$1" in
    core) echo 0 ;;
    runtime|kernels) echo 1 ;;
    autograd) echo 2 ;;
    ops) echo 3 ;;
    engine) echo 4 ;;
    nn) echo 5 ;;
    optim) echo 6 ;;
    data|io) echo 7 ;;
    amp|diagnostics|distributed|utils) echo 8 ;;
    apps) echo 9 ;;
    *) echo "" ;;
  esac
}

# The area of a path relative to the repository root.
area_of_path() {
  local p=$1
  case "$p" in
    include/graft/graft.h) echo apps ;;
    include/graft/*/*) p=${p#include/graft/}; echo "${p%%/*}" ;;
    src/*/*) p=${p#src/}; echo "${p%%/*}" ;;
    apps/*) echo apps ;;
    *) echo "" ;;
  esac
}

status=0
count=0
while IFS= read -r file; do
  from_area=$(area_of_path "$file")
  from_layer=$(layer_of_area "$from_area")
  if [[ -z "$from_layer" ]]; then
    echo "check-layers: $file is in no layer (add its folder to tools/check-layers.sh)"
    status=1
    continue
  fi
  dir=$(dirname "$file")
  while IFS= read -r line; do
    inc=$(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' <<<"$line")
    angle=0
    if [[ -z "$inc" ]]; then
      inc=$(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*<\(graft\/[^>]*\)>.*/\1/p' <<<"$line")
      angle=1
    fi
    [[ -z "$inc" ]] && continue
    # Resolve the include as the compiler would: next to the file (quoted only), then include/,
    # then src/.
    target=""
    if (( angle == 0 )) && [[ -f "$dir/$inc" ]]; then
      target=$(realpath --relative-to=. "$dir/$inc")
    elif [[ -f "include/$inc" ]]; then
      target="include/$inc"
    elif [[ -f "src/$inc" ]]; then
      target="src/$inc"
    else
      echo "check-layers: $file includes $( ((angle)) && echo "<$inc>" || echo "\"$inc\""), which is not in the tree"
      status=1
      continue
    fi
    if [[ "$from_area" == apps && "$target" == src/* ]]; then
      echo "check-layers: $file (apps) includes private $target: apps use include/graft only"
      status=1
      continue
    fi
    to_area=$(area_of_path "$target")
    to_layer=$(layer_of_area "$to_area")
    [[ -z "$to_layer" ]] && continue
    if (( to_layer > from_layer )); then
      echo "check-layers: $file ($from_area, layer $from_layer) includes $target ($to_area, layer $to_layer)"
      status=1
    fi
    count=$((count + 1))
  done < <(grep -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*("|<graft/)' "$file" || true)
done < <(find include src apps -type f \( -name '*.h' -o -name '*.cpp' \) | sort)

if (( status == 0 )); then
  echo "check-layers: $count includes, none runs up a layer"
fi
exit $status
