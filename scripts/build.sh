#!/usr/bin/env bash
# Configures and builds fp8sm in build/ (warnings are errors). Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
# The CUDA toolkit (nvcc, NVRTC) is where the machines have it; no GPU is needed to build.
cuda=()
[ -d /usr/local/cuda ] && cuda=(-DCUDAToolkit_ROOT=/usr/local/cuda)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DFP8SM_WERROR=ON -DFP8SM_REQUIRE_MPI=ON -DFP8SM_REQUIRE_CUDA=ON \
  "${cuda[@]}" "$@" >/dev/null
cmake --build build -j"$(nproc)"
