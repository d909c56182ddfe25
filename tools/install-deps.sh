#!/usr/bin/env bash
# Installs graft's build and test dependencies from Debian 12's packages.
#   tools/install-deps.sh          what the library, examples and tests need
#   tools/install-deps.sh --bench  also LibTorch, for the side-by-side benchmarks
set -euo pipefail
pkgs=(cmake g++ make clang libclang-rt-14-dev lld libopenblas-dev libdnnl-dev libgtest-dev libgmock-dev libbenchmark-dev
      nlohmann-json3-dev libfmt-dev libcli11-dev zlib1g-dev libzip-dev pkgconf libopenmpi-dev openmpi-bin
      dataset-fashion-mnist fortunes chromium python3 python3-torch qemu-user)
# libzip-dev: the zip archives of PyTorch checkpoints (src/io/zip_archive.cpp), found through pkgconf's
# pkg-config; python3: tools/check-notes.py and tests/fixtures/zip/gen_zip_fixtures.py --check;
# python3-torch: PyTorch 1.13 reads back what graft::pickle_save writes (graft_pickle_python_reads);
# qemu-user: tests/kernels/clone_bits/
if [[ "${1:-}" == "--bench" ]]; then pkgs+=(libtorch-dev); fi

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
