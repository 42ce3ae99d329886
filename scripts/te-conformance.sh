#!/usr/bin/env bash
# The model against Transformer Engine's own code (docs/conformance.md): TE's Python state code
# runs on real PyTorch on the CPU, its C++ extension stubbed, and every program of the
# catalogue, of the edge scenarios and of a seeded random corpus runs on TE and on
# `explorer run`. Exit 0 when all agree, 1 when some disagree (each shown as a minimal
# program with both results), 2 when the harness could not run.
#
#   scripts/te-conformance.sh [--te-version V | --te-source DIR] [--semantics upstream|pr3213|fp8sm]
#                             [--plugin upstream|pr3213|fp8sm]
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
# --plugin S       TE with fp8sm's TE plugin installed under semantics S (docs/te-plugin.md);
#                  the package fp8sm is pip-installed into the environment first
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

source scripts/te-env.sh

te_version="$TE_VERSION_PINNED"
te_source=""
self_test=0
plugin=0
passed=()
while [ $# -gt 0 ]; do
  case "$1" in
    --te-version) te_version="${2:?--te-version needs a version}"; shift 2 ;;
    --te-source) te_source="$(absolute "${2:?--te-source needs a directory}")"; shift 2 ;;
    --scenario) passed+=("$1" "$(absolute "${2:?--scenario needs a file}")"); shift 2 ;;
    --self-test) self_test=1; shift ;;
    --semantics|--random|--seed|--length|--jobs|--timeout) passed+=("$1" "${2:?$1 needs a value}"); shift 2 ;;
    --plugin) plugin=1; passed+=("$1" "${2:?--plugin needs a semantics}"); shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "te-conformance.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

[ -x build/explorer/explorer ] || scripts/build.sh

te_env_install || exit 2
venv="$TE_VENV"
te_source="$(te_source_of "$te_version" "$te_source")"
if [ "$plugin" = 1 ] || [ "$self_test" = 1 ]; then te_plugin_install || exit 2; fi

if [ "$self_test" = 1 ]; then
  TE_SOURCE="$te_source" EXPLORER=build/explorer/explorer \
    exec "$venv/bin/python" -m unittest discover --start-directory conformance --pattern 'test_*.py'
fi
exec "$venv/bin/python" conformance/te_conformance.py --te-source "$te_source" \
  --explorer build/explorer/explorer "${passed[@]}"
