#!/usr/bin/env bash
# Installs what fp8sm needs to build and test, from Debian packages. Safe to run again.
set -euo pipefail

packages=(
  build-essential cmake
  libboost-dev        # Boost.MSM (header-only)
  librapidcheck-dev   # property tests
  libfmt-dev
  googletest libgtest-dev
  libcli11-dev        # command-line options
  nlohmann-json3-dev
  libxxhash-dev
  libopenmpi-dev openmpi-bin   # the MPI amax reduction (runtime/) and its 2-rank test
  clang-14 libclang-rt-14-dev llvm-14   # the sanitizer stage and the fuzzer (scripts/sanitize.sh, fuzz.sh)
  python3-dev python3-venv   # the Python package (scripts/python-test.sh): its module, its venv
  ccache              # the wheel's build reuses build/'s objects (scripts/build.sh, python-test.sh)
  graphviz            # dot: the pictures of docs/pictures.md and their test (tests/explorer/test_pictures.cpp)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "setup: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
