#!/usr/bin/env bash
# Builds the libFuzzer target (clang, ASan, UBSan) in build-fuzz/ and runs it on the scenario
# language, seeded with the catalogue and the regression corpus. Arguments: the number of runs
# (default 20000; CI's), or "--seconds N" to run for a time instead. Exit 0: nothing found.
#
#   scripts/fuzz.sh                # 20000 inputs, as CI
#   scripts/fuzz.sh --seconds 600  # ten minutes
set -euo pipefail
cd "$(dirname "$0")/.."
limit=(-runs="${1:-20000}")
if [ "${1:-}" = "--seconds" ]; then limit=(-max_total_time="${2:?--seconds needs a number}"); fi
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-14 -DFP8SM_FUZZ=ON \
  -DFP8SM_TESTS=OFF -DFP8SM_CUDA=OFF -DFP8SM_MPI=OFF >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target fuzz_scenario
corpus=build-fuzz/fuzz-corpus
mkdir -p "$corpus"
cp spec/catalogue/*.scn tests/scenarios/*.scn "$corpus"/
# -max_len keeps inputs near the size of real scenarios; -timeout catches a slow input.
exec build-fuzz/tests/fuzz/fuzz_scenario "$corpus" -max_len=4096 -timeout=10 "${limit[@]}"
