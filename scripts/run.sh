#!/usr/bin/env bash
# The main job on a fresh machine: set up, build the explorer, and run it on its default model:
# every program of up to 6 statements under fp8sm (exit 0: no invariant violated). Extra
# arguments go to the explorer (e.g. --depth 4 --semantics upstream). Depth 6 takes 15 to 20
# seconds and 190 MiB on two cores once built (docs/performance.md). The same search on two
# processes: mpirun -np 2 build/explorer/explorer --depth 6 (docs/explorer.md, "Many processes").
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# Only the explorer and the libraries it links: building every target, the tests included, is
# scripts/test.sh's job, and the main job need not wait for it.
scripts/build.sh --target explorer
# Depth 6 and a worker thread per core unless the arguments say otherwise (the explorer refuses
# an option given twice).
depth=(--depth 6)
threads=(--threads "$(nproc)")
for argument in "$@"; do
  case "$argument" in
    --depth | --depth=*) depth=() ;;
    --threads | --threads=*) threads=() ;;
  esac
done
exec build/explorer/explorer "${depth[@]}" "${threads[@]}" "$@"
