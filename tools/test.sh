#!/usr/bin/env bash
# Builds and runs graft's whole test suite twice: a Release build with warnings as errors, and a
# build under AddressSanitizer + UndefinedBehaviorSanitizer (with the system allocator); then fuzzes
# the file readers with clang's libFuzzer for a bounded time each (GRAFT_FUZZ_SECONDS, default 30).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
jobs=$(nproc)

# Source checks first (seconds): Notes and the paths comments name, then the layer order.
tools/check-notes.sh
tools/check-layers.sh

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGRAFT_WERROR=ON
cmake --build build -j"$jobs"
GRAFT_REQUIRE_CHROMIUM=1 ctest --test-dir build --output-on-failure

cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRAFT_WERROR=ON -DGRAFT_SANITIZE=ON \
      -DGRAFT_BUILD_EXAMPLES=ON
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  GRAFT_ALLOCATOR=system ctest --test-dir build-asan --output-on-failure -LE "install|accuracy"

# The file readers under libFuzzer + ASan/UBSan: any crash, sanitizer report, leak or exception other
# than graft::Error fails the run (the input is saved as build-fuzz/crash-*).
CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRAFT_BUILD_FUZZ=ON \
      -DGRAFT_BUILD_TESTS=OFF -DGRAFT_BUILD_EXAMPLES=OFF
cmake --build build-fuzz -j"$jobs" --target fuzz_safetensors fuzz_idx
for target in safetensors idx; do
  mkdir -p "build-fuzz/corpus/$target"
  build-fuzz/fuzz/fuzz_$target -max_total_time="${GRAFT_FUZZ_SECONDS:-30}" -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 -dict="fuzz/$target.dict" -artifact_prefix="build-fuzz/crash-$target-" \
    "build-fuzz/corpus/$target" "fuzz/corpus/$target"
done
