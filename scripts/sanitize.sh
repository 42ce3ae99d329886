#!/usr/bin/env bash
# CI's sanitizer stage: builds everything in build-sanitize/ (scripts/configure-sanitize.sh:
# clang, ASan, UBSan, no GPU backend) and runs every test there but the long exhaustive
# verdicts (label "exhaustive"), the installed-package test (label "install": the program it
# builds against the install would need the sanitizers' flags too) and the multi-process
# search's report comparisons through mpirun (label "mpi-report": a dozen depth-5 searches;
# the in-process ranks of tests/explorer/test_distributed_search.cpp make the same comparisons here).
# The deliberately broken table's test is not built there (tests/explorer/CMakeLists.txt).
# Needs scripts/setup.sh's packages (clang-14 among them).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/configure-sanitize.sh
cmake --build build-sanitize -j"$(nproc)"
echo "sanitize.sh: build done after $SECONDS s"
cd build-sanitize
# detect_leaks: the CUDA runtime and Open MPI keep allocations for the process's lifetime.
export ASAN_OPTIONS=detect_leaks=0:halt_on_error=1
export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-14/bin/llvm-symbolizer
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --output-on-failure -j"$(nproc)" -LE "exhaustive|install|mpi-report"
