#!/usr/bin/env bash
# CI's sanitizer stage: builds everything with clang, AddressSanitizer and UndefinedBehavior-
# Sanitizer (-fno-sanitize-recover=all: the first report fails) in build-sanitize/, and runs
# every test but the long exhaustive verdicts (label "exhaustive"). Needs scripts/setup.sh's
# packages (clang-14 among them).
set -euo pipefail
cd "$(dirname "$0")/.."
cuda=()
[ -d /usr/local/cuda ] && cuda=(-DCUDAToolkit_ROOT=/usr/local/cuda)
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-14 \
  -DFP8SM_SANITIZE=ON -DFP8SM_WERROR=ON "${cuda[@]}" >/dev/null
cmake --build build-sanitize -j"$(nproc)"
cd build-sanitize
# detect_leaks: the CUDA runtime and Open MPI keep allocations for the process's lifetime.
export ASAN_OPTIONS=detect_leaks=0:halt_on_error=1
export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-14/bin/llvm-symbolizer
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --output-on-failure -j"$(nproc)" -LE exhaustive
