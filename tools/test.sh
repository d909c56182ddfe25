#!/usr/bin/env bash
# Builds and runs graft's whole test suite twice: a Release build with warnings as errors, and a
# build under AddressSanitizer + UndefinedBehaviorSanitizer (with the system allocator).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
jobs=$(nproc)

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGRAFT_WERROR=ON
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure

cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRAFT_WERROR=ON -DGRAFT_SANITIZE=ON \
      -DGRAFT_BUILD_EXAMPLES=ON
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  GRAFT_ALLOCATOR=system ctest --test-dir build-asan --output-on-failure -LE install
