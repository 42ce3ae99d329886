#!/usr/bin/env bash
# Runs the libFuzzer targets, built in build-sanitize/ (clang, ASan, UBSan;
# scripts/configure-sanitize.sh): the scenario language (tests/fuzz/fuzz_scenario.cpp), seeded
# with the catalogue and the regression corpus, then the runtime's API driven by random call
# sequences, misuse included (tests/fuzz/fuzz_runtime_api.cpp). Argument: the number of inputs
# each (default 20000, CI's), or "--seconds N" to run each for a time instead. Exit 0: nothing
# found; a finding leaves its input in build-sanitize/ as crash-* (replay it by giving the file
# to the target).
#
#   scripts/fuzz.sh                # 20000 inputs each, as CI
#   scripts/fuzz.sh --seconds 600  # ten minutes each
set -euo pipefail
cd "$(dirname "$0")/.."
limit=(-runs="${1:-20000}")
if [ "${1:-}" = "--seconds" ]; then limit=(-max_total_time="${2:?--seconds needs a number}"); fi
scripts/configure-sanitize.sh
cmake --build build-sanitize -j"$(nproc)" --target fuzz_scenario fuzz_runtime_api
corpus=build-sanitize/fuzz-corpus
mkdir -p "$corpus" build-sanitize/fuzz-runtime-corpus
cp spec/catalogue/*.scn tests/scenarios/*.scn "$corpus"/
export ASAN_OPTIONS=detect_leaks=0
cd build-sanitize
# -max_len keeps inputs near the size of real scenarios (a call sequence reads a few bytes a
# call: 512 bytes are about a hundred calls); -timeout catches a slow input.
tests/fuzz/fuzz_scenario fuzz-corpus -max_len=4096 -timeout=10 "${limit[@]}"
tests/fuzz/fuzz_runtime_api fuzz-runtime-corpus -max_len=512 -timeout=10 "${limit[@]}"
