#!/usr/bin/env bash
# Configures and builds fp8sm in build/ (warnings are errors). By default it builds every target,
# tests included (scripts/test.sh); `--target NAME`, given once or more, builds only those targets
# and what they need (scripts/run.sh builds the explorer alone, so that the main job does not wait
# for the tests). Other arguments go to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=()
configure=()
while [ $# -gt 0 ]; do
  case "$1" in
    --target)
      [ $# -ge 2 ] || { echo "build.sh: --target needs a target name" >&2; exit 2; }
      targets+=(--target "$2")
      shift 2
      ;;
    --target=*)
      targets+=(--target "${1#--target=}")
      shift
      ;;
    *)
      configure+=("$1")
      shift
      ;;
  esac
done
# The CUDA toolkit (nvcc, NVRTC) is where the machines have it; no GPU is needed to build.
cuda=()
[ -d /usr/local/cuda ] && cuda=(-DCUDAToolkit_ROOT=/usr/local/cuda)
# Through ccache where it is installed (scripts/setup.sh installs it): the Python wheel's build
# (scripts/python-test.sh) compiles the same libraries with the same flags, and takes them from
# its cache.
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DFP8SM_WERROR=ON -DFP8SM_REQUIRE_MPI=ON -DFP8SM_REQUIRE_CUDA=ON \
  "${cuda[@]}" "${launcher[@]}" "${configure[@]}" >/dev/null
cmake --build build -j"$(nproc)" "${targets[@]}"
