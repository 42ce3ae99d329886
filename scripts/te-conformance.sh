#!/usr/bin/env bash
# The model against Transformer Engine's own code (docs/conformance.md): TE's Python state code
# runs on real PyTorch on the CPU, its C++ extension stubbed, and every program of the
# catalogue, of the edge scenarios and of a seeded random corpus runs on TE and on
# `explorer run`. Exit 0 when all agree, 1 when some disagree (each shown as a minimal
# program with both results), 2 when the harness could not run.
#
#   scripts/te-conformance.sh [--te-version V | --te-source DIR] [--semantics upstream|pr3213]
#                             [--random N] [--seed S] [--length L] [--scenario FILE]...
#                             [--jobs J] [--timeout T]
#   scripts/te-conformance.sh --self-test [--te-version V | --te-source DIR]
#
# --te-version V   TE's sources from the `transformer-engine` wheel V on PyPI (default: the
#                  version pinned below, whose state code is the `upstream` semantics)
# --te-source DIR  TE's sources from DIR, a checkout holding transformer_engine/ (a branch,
#                  the PR #3213 head for --semantics pr3213)
# --self-test      the harness's own tests instead (conformance/test_*.py): it gives the
#                  seed's GPU counts, a broken piece (the re-arm, the saved tensors, a stub)
#                  shows, and a reused worker gives what a fresh process gives, state left
#                  behind and hangs being caught
# --scenario FILE  compare only this scenario file (repeatable)
# --jobs J         programs run at once (default: the number of cores)
# --timeout T      seconds a program may run on TE before it counts as a harness failure (60)
# The rest go to conformance/te_conformance.py (default: upstream, 1000 programs, seed 1).
#
# Everything it installs goes under build/: a virtual environment build/te-venv (torch and
# the pure-Python packages TE imports, pinned) and the unpacked wheel build/te-src/V. No
# system Python package is touched.
set -euo pipefail
caller_dir="$PWD"
cd "$(dirname "$0")/.."
absolute() { case "$1" in /*) echo "$1" ;; *) echo "$caller_dir/$1" ;; esac; }  # as the caller meant it

readonly TE_VERSION_PINNED=2.20.2
readonly PYTHON_PACKAGES=(torch==2.15.0 numpy==2.4.6 pydantic==2.14.4 packaging==26.4 einops==0.8.2
                          onnx==1.23.2 onnxscript==0.7.2)
# PyPI's torch brings the CUDA libraries (and TE imports triton), 5.5 GB installed, even to run
# on the CPU: a clear refusal beats pip's "No space left on device" halfway through.
readonly INSTALL_NEEDS_GB=7   # with room for pip's downloads and unpacking

te_version="$TE_VERSION_PINNED"
te_source=""
self_test=0
passed=()
while [ $# -gt 0 ]; do
  case "$1" in
    --te-version) te_version="${2:?--te-version needs a version}"; shift 2 ;;
    --te-source) te_source="$(absolute "${2:?--te-source needs a directory}")"; shift 2 ;;
    --scenario) passed+=("$1" "$(absolute "${2:?--scenario needs a file}")"); shift 2 ;;
    --self-test) self_test=1; shift ;;
    --semantics|--random|--seed|--length|--jobs|--timeout) passed+=("$1" "${2:?$1 needs a value}"); shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "te-conformance.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

[ -x build/explorer/explorer ] || scripts/build.sh

venv=build/te-venv
stamp="$venv/.installed"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "${PYTHON_PACKAGES[*]}" ]; then
  mkdir -p build
  free_gb=$(df --output=avail -BG build | tail -1 | tr -dc 0-9)
  if [ "$free_gb" -lt "$INSTALL_NEEDS_GB" ]; then
    echo "te-conformance: the environment needs about ${INSTALL_NEEDS_GB} GB free under build/, there are ${free_gb} GB" >&2
    exit 2
  fi
  echo "te-conformance: installing ${PYTHON_PACKAGES[*]} into $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  # No cache: pip would keep a second copy of every wheel (gigabytes) that nothing reads again.
  pip_install=("$venv/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir)
  "${pip_install[@]}" "${PYTHON_PACKAGES[@]}"
  echo "${PYTHON_PACKAGES[*]}" > "$stamp"
fi

if [ -z "$te_source" ]; then
  te_source="build/te-src/$te_version"
  if [ ! -f "$te_source/transformer_engine/pytorch/quantization.py" ]; then
    wheels="build/te-wheels"
    mkdir -p "$wheels"
    "$venv/bin/pip" download --quiet --disable-pip-version-check --no-cache-dir --no-deps --dest "$wheels" \
      "transformer-engine==$te_version"
    rm -rf "$te_source"
    "$venv/bin/python" -m zipfile -e "$wheels/transformer_engine-$te_version-py3-none-any.whl" "$te_source"
  fi
fi

if [ "$self_test" = 1 ]; then
  TE_SOURCE="$te_source" EXPLORER=build/explorer/explorer \
    exec "$venv/bin/python" -m unittest discover --start-directory conformance --pattern 'test_*.py'
fi
exec "$venv/bin/python" conformance/te_conformance.py --te-source "$te_source" \
  --explorer build/explorer/explorer "${passed[@]}"
