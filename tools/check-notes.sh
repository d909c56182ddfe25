#!/usr/bin/env bash
# Fails when a Note is cited but not defined exactly once, or a path named in a comment does not
# exist. The rules are at the top of tools/check-notes.py, which does the work (Python 3, standard
# library only).
set -euo pipefail
exec python3 "$(dirname "$0")/check-notes.py" "$@"
