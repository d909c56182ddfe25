#!/usr/bin/env bash
# Fails when apps/graft loses the shape docs/ARCHITECTURE.md ("Layout") gives it:
#   1. the --model string is read outside the task factory (apps/graft/task.cpp, Note [Task seam]
#      in apps/graft/task.h): a comparison of a model's name with a literal, a list of the names,
#      or the old is_text_model; everything else asks the Task;
#   2. its quoted #include "..." lines make a circle;
#   3. a file is longer than 500 lines.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0

pattern='is_text_model|model(\(\))? *[!=]= *"|" *[!=]= *[A-Za-z_.>-]*model\b|\{ *"(mlp|cnn|gpt|lstm)" *,'
# The pattern must catch the forks it is there for (a check that matches nothing passes forever).
for fork in 'if (cfg.model == "mlp")' 'c.model != "gpt"' 'if ("cnn" == cfg.model)' \
            'is_text_model(c.model)' 'IsMember({"mlp", "cnn"})'; do
  if ! grep -qE "$pattern" <<<"$fork"; then
    echo "check-apps: the model-name pattern misses: $fork" >&2
    exit 2
  fi
done
hits=$(grep -nE "$pattern" apps/graft/*.cpp apps/graft/*.h | grep -v '^apps/graft/task\.cpp:' || true)
if [[ -n "$hits" ]]; then
  echo "check-apps: the model's name is read outside apps/graft/task.cpp (ask the Task instead):" >&2
  echo "$hits" >&2
  status=1
fi

python3 - <<'PY' || status=1
import os, re, sys
root = "apps/graft"
edges = {}
for name in sorted(os.listdir(root)):
    if name.endswith((".h", ".cpp")):
        with open(os.path.join(root, name)) as f:
            edges[name] = [m for m in re.findall(r'^\s*#\s*include\s+"([^"]+)"', f.read(), re.M)
                           if os.path.exists(os.path.join(root, m))]
# A .cpp and its own header are one unit: a source that includes a second one's header, while the
# second one's source includes the first one's, is a circle too (train and text once were).
unit = lambda f: os.path.splitext(f)[0]
graph = {}
for f, deps in edges.items():
    graph.setdefault(unit(f), set()).update(unit(d) for d in deps if unit(d) != unit(f))
state, stack = {}, []
def visit(u):
    state[u] = 1
    stack.append(u)
    for v in sorted(graph.get(u, ())):
        if state.get(v) == 1:
            cycle = stack[stack.index(v):] + [v]
            sys.exit("check-apps: include circle in apps/graft: " + " -> ".join(cycle))
        if v not in state:
            visit(v)
    stack.pop()
    state[u] = 2
for u in sorted(graph):
    if u not in state:
        visit(u)
PY

for f in apps/graft/*.cpp apps/graft/*.h; do
  n=$(wc -l <"$f")
  if ((n > 500)); then
    echo "check-apps: $f has $n lines (at most 500: split it by job)" >&2
    status=1
  fi
done

((status == 0)) && echo "check-apps: the model's name is read only in apps/graft/task.cpp; no include circle; no file over 500 lines"
exit $status
