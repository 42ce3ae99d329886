#!/usr/bin/env bash
# Configures and builds fp8sm in build/ (warnings are errors). Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DFP8SM_WERROR=ON -DFP8SM_REQUIRE_MPI=ON "$@" >/dev/null
cmake --build build -j"$(nproc)"
