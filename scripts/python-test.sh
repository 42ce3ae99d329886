#!/usr/bin/env bash
# The Python package's tests (docs/python.md): `pip install .` into build/py-venv, as a user
# would, then pytest on python/tests from outside the source tree, so that they import the
# installed package and not the sources. Needs network access to PyPI (or a mirror) the first
# time: pip fetches scikit-build-core and nanobind to build, and pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="$PWD/build/py-venv"
if [ ! -x "$venv/bin/python" ]; then python3 -m venv "$venv"; fi
"$venv/bin/pip" install --quiet --disable-pip-version-check pytest
source scripts/pip-install-package.sh
fp8sm_pip_install "$venv/bin/pip"
cd build
"$venv/bin/python" -m pytest -q ../python/tests "$@"
