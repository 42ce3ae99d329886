#!/usr/bin/env bash
# All tests on a fresh machine: set up, build, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "test.sh: set-up done after $SECONDS s"
scripts/build.sh
echo "test.sh: build done after $SECONDS s"
cd build
ctest --output-on-failure -j"$(nproc)"
cd ..
# The Python package, installed with pip as a user installs it, and its pytest tests.
scripts/python-test.sh
