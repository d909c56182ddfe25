#!/usr/bin/env bash
# Installs graft's dependencies from Debian 12's packages.
#   tools/install-deps.sh          what the library and the `graft` command need (the README's
#                                  first command): compiler, CMake, OpenBLAS, oneDNN, the header
#                                  libraries, zlib, libzip, OpenMPI, Fashion-MNIST and fortunes
#   tools/install-deps.sh --test   also what the tests need (tools/test.sh passes it): GoogleTest,
#                                  clang with its sanitizer runtimes and lld, Chromium, Python with
#                                  PyTorch, QEMU
#   tools/install-deps.sh --bench  --test's packages and LibTorch, for the side-by-side benchmarks
# The first command installs only the first list, so that a fresh machine trains within minutes
# (README: about 500 MiB of packages are the tests', Chromium and PyTorch most of it).
set -euo pipefail
pkgs=(cmake g++ make libopenblas-dev libdnnl-dev nlohmann-json3-dev libfmt-dev libcli11-dev zlib1g-dev libzip-dev
      pkgconf libopenmpi-dev openmpi-bin dataset-fashion-mnist fortunes)
# libzip-dev: the zip archives of PyTorch checkpoints (src/io/zip_archive.cpp), found through pkgconf's
# pkg-config; libopenmpi-dev + openmpi-bin: graft::distributed and `mpirun graft train`; fortunes:
# the text models' corpus (graft train --model gpt / lstm).
test_pkgs=(clang libclang-rt-14-dev lld libgtest-dev libgmock-dev libbenchmark-dev chromium python3 python3-torch
           qemu-user)
# python3: tools/check-notes.py and tests/fixtures/zip/gen_zip_fixtures.py --check; python3-torch:
# PyTorch 1.13 reads back what graft::pickle_save writes (graft_pickle_python_reads); qemu-user:
# tests/kernels/clone_bits/.
case "${1:-}" in
  "") ;;
  --test) pkgs+=("${test_pkgs[@]}") ;;
  --bench) pkgs+=("${test_pkgs[@]}" libtorch-dev) ;;
  *) echo "install-deps.sh: unknown option ${1} (expected nothing, --test or --bench)" >&2; exit 2 ;;
esac

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
