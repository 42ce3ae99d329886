#!/usr/bin/env bash
# The main job on a fresh machine: set up, build, and run the explorer on its default model
# (every configuration of the catalogue under both semantics). Exit 1 means violations were
# found, which is expected: upstream and pr3213 both break invariants.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
exec build/explorer/explorer catalogue "$@"
