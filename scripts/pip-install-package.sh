# Sourced by the scripts that install the package fp8sm with pip (python-test.sh into
# build/py-venv, te-env.sh into TE's environment):
#
#   fp8sm_pip_install PIP                # `PIP install .` from the repository's root
#
# Both install it with the same settings, so that pip's build directory (pyproject.toml's
# build-dir, one per Python version, which both share) stays configured and the second install
# rebuilds nothing of the project; a change of settings would configure it anew and compile
# everything again. The libraries are build/'s objects: the same sources and flags (warnings as
# errors, as scripts/build.sh has them; position-independent code in both), so where build/ was
# compiled through ccache (scripts/build.sh, where it is installed) the wheel's build takes them
# from its cache, and compiles only the nanobind module. The compiler is build/'s by the same
# name (ccache tells c++ from g++; CMake's Makefile generator, build/'s, looks for c++ first,
# the wheel's Ninja for g++).

fp8sm_pip_install() {
  local pip=$1
  (
    if command -v ccache >/dev/null; then export CMAKE_CXX_COMPILER_LAUNCHER=ccache; fi
    if [ -z "${CXX:-}" ] && [ -f build/CMakeCache.txt ]; then
      CXX=$(sed -n 's/^CMAKE_CXX_COMPILER:FILEPATH=//p' build/CMakeCache.txt)
      export CXX
    fi
    "$pip" install --quiet --disable-pip-version-check --config-settings=cmake.define.FP8SM_WERROR=ON .
  )
}
