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
# The wheel's libraries are build/'s objects: the same sources and flags (warnings as errors as
# in build/, position-independent code in both), so where build/ was compiled through ccache
# (scripts/build.sh, where it is installed) the wheel's build takes them from its cache instead
# of compiling them again; only the nanobind module is compiled.
# The compiler is build/'s too, by the same name (ccache tells c++ from g++; CMake's Makefile
# generator, build/'s, looks for c++ first, the wheel's Ninja for g++).
if command -v ccache >/dev/null; then export CMAKE_CXX_COMPILER_LAUNCHER=ccache; fi
if [ -z "${CXX:-}" ] && [ -f build/CMakeCache.txt ]; then
  CXX=$(sed -n 's/^CMAKE_CXX_COMPILER:FILEPATH=//p' build/CMakeCache.txt)
  export CXX
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check --config-settings=cmake.define.FP8SM_WERROR=ON .
cd build
"$venv/bin/python" -m pytest -q ../python/tests "$@"
