#!/usr/bin/env bash
# Downloads here (where apt works) the Debian packages the build needs, into .deps/ (ignored by
# git), for a GPU machine that cannot reach a package archive: carry .deps there and
# scripts/gpu-check.sh unpacks them into a private prefix. About 11 MB. The -dev packages of shared
# libraries hold only the link to the library: its own package (libfmt9, libxxhash0) comes too.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .deps
cd .deps
apt-get download libboost1.74-dev libgtest-dev googletest libcli11-dev libxxhash-dev libxxhash0 \
  librapidcheck-dev nlohmann-json3-dev libfmt-dev libfmt9
ls -l
