#!/usr/bin/env bash
# Runs the libFuzzer target on the scenario language (tests/fuzz/fuzz_scenario.cpp), built in
# build-sanitize/ (clang, ASan, UBSan; scripts/configure-sanitize.sh), seeded with the catalogue
# and the regression corpus. Argument: the number of inputs (default 20000, CI's), or
# "--seconds N" to run for a time instead. Exit 0: nothing found; a crash leaves the input in
# build-sanitize/ as crash-*.
#
#   scripts/fuzz.sh                # 20000 inputs, as CI
#   scripts/fuzz.sh --seconds 600  # ten minutes
set -euo pipefail
cd "$(dirname "$0")/.."
limit=(-runs="${1:-20000}")
if [ "${1:-}" = "--seconds" ]; then limit=(-max_total_time="${2:?--seconds needs a number}"); fi
scripts/configure-sanitize.sh
cmake --build build-sanitize -j"$(nproc)" --target fuzz_scenario
corpus=build-sanitize/fuzz-corpus
mkdir -p "$corpus"
cp spec/catalogue/*.scn tests/scenarios/*.scn "$corpus"/
export ASAN_OPTIONS=detect_leaks=0
# -max_len keeps inputs near the size of real scenarios; -timeout catches a slow input.
cd build-sanitize
exec tests/fuzz/fuzz_scenario fuzz-corpus -max_len=4096 -timeout=10 "${limit[@]}"
