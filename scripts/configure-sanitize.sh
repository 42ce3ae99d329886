#!/usr/bin/env bash
# Configures build-sanitize/: clang, AddressSanitizer and UndefinedBehaviorSanitizer
# (-fno-sanitize-recover=all: the first report fails), every library instrumented for libFuzzer's
# coverage, -O1 with line tables (what ASan recommends; a third of the build time of -O2 -g).
# -gsimple-template-names and -gz keep that debug info small: with the table's Boost.MSM
# instantiations spelt out in full, the line tables' function names came to 600 MB in every
# binary that links the table (18 GB for the whole build, more than a CI machine may have free);
# reports still name each frame by file and line, and non-inlined frames in full.
# The random properties run fewer cases there (500 and 50) than in build/, which runs them in
# full. Without the GPU backend (FP8SM_CUDA=OFF): its tests skip on machines without a GPU and
# its NVRTC and CUDA runtime calls go into closed libraries the sanitizers cannot see, while it
# would add a third to the build; the CUDA kernels' host emulation, which runs them on the CPU,
# is built and tested. Without the benchmark programs (FP8SM_BENCHMARKS=OFF), which no test runs,
# and the exhaustive tests (FP8SM_EXHAUSTIVE_TESTS=OFF), which scripts/sanitize.sh does not run:
# build/ compiles both with warnings as errors. Used by scripts/sanitize.sh and
# scripts/fuzz.sh, which share the build.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -gline-tables-only -gsimple-template-names -gz" \
  -DCMAKE_CXX_COMPILER=clang++-14 -DFP8SM_SANITIZE=ON -DFP8SM_FUZZ=ON -DFP8SM_BENCHMARKS=OFF -DFP8SM_EXHAUSTIVE_TESTS=OFF -DFP8SM_WERROR=ON -DFP8SM_CUDA=OFF \
  -DFP8SM_PROPERTY_CASES=500 -DFP8SM_DEVICE_PROPERTY_CASES=50 >/dev/null
