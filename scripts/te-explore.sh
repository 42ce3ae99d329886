#!/usr/bin/env bash
# Exhaustive verdicts on Transformer Engine's own code (docs/conformance.md, "Exhaustive
# verdicts"): every program of the model's search to depth N (`explorer --programs`, one per
# distinct top-level state) runs on TE's state code on real torch, and the invariants are
# judged on what TE does. The report has the explorer's form.
#
#   scripts/te-explore.sh --depth N [--te-version V | --te-source DIR] [--semantics upstream|pr3213|fp8sm]
#                         [--plugin upstream|pr3213|fp8sm]
#                         [--jobs J] [--json] [--data-inputs] [--expect-violated I1,I4,...]
#                         [--backward-depth M]
#   scripts/te-explore.sh --programs FILE [--te-version V | --te-source DIR] [--semantics S] ...
#   scripts/te-explore.sh --mutants [--depth N [--backward-depth M] | --programs FILE] [--jobs J] [--only ID]...   # the mutation score (TE 2.20.2)
#
# --te-version V   TE's sources from the `transformer-engine` wheel V on PyPI (default: 2.20.2)
# --te-source DIR  TE's sources from DIR, a checkout holding transformer_engine/ (any branch)
# --semantics S    also compare every program's TE result with the model's under S: counts,
#                  exception kinds and violated invariants; disagreements are listed, shrunk
# --plugin S       TE with fp8sm's TE plugin installed under semantics S (docs/te-plugin.md)
# --jobs J         worker processes (default: the cores)
# --json           one JSON document (docs/json.md, "fp8sm-te-explore/1")
# --data-inputs    the search's alphabet includes `data` (an input that does not require grad)
# --backward-depth M  also the programs of up to M statements (M > N) that run a backward and
#                  hold a Linear inside a checkpoint per statement past N (explorer
#                  --programs-beyond N): where recompute-time state code meets one more module
#                  forward per level (CI: --depth 4 --backward-depth 6)
# --only ID        with --mutants, only this mutant (repeatable)
# --programs FILE  run the lines of FILE (saved from `explorer --depth N --programs --json`, all
#                  or some) instead of searching: a part of a deep level, at a part of its cost
# --expect-violated  exit 0 only if exactly these invariants are violated (and, with
#                  --semantics, every program agrees): what CI checks
#
# Exit status 0: every invariant judged holds on TE (or, with --expect-violated, exactly
# those are violated); 1: otherwise; 2: the harness could not run. Installs as
# te-conformance.sh does, under build/ only.
set -euo pipefail
caller_dir="$PWD"
cd "$(dirname "$0")/.."
absolute() { case "$1" in /*) echo "$1" ;; *) echo "$caller_dir/$1" ;; esac; }  # as the caller meant it

source scripts/te-env.sh

te_version="$TE_VERSION_PINNED"
te_source=""
mutants=0
plugin=0
passed=()
while [ $# -gt 0 ]; do
  case "$1" in
    --te-version) te_version="${2:?--te-version needs a version}"; shift 2 ;;
    --te-source) te_source="$(absolute "${2:?--te-source needs a directory}")"; shift 2 ;;
    --depth|--backward-depth|--semantics|--jobs|--expect-violated|--only) passed+=("$1" "${2:?$1 needs a value}"); shift 2 ;;
    --plugin) plugin=1; passed+=("$1" "${2:?--plugin needs a semantics}"); shift 2 ;;
    --programs) passed+=("$1" "$(absolute "${2:?--programs needs a file}")"); shift 2 ;;
    --json|--data-inputs) passed+=("$1"); shift ;;
    --mutants) mutants=1; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "te-explore.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

[ -x build/explorer/explorer ] || scripts/build.sh
te_env_install || exit 2
te_source="$(te_source_of "$te_version" "$te_source")"
if [ "$plugin" = 1 ]; then te_plugin_install || exit 2; fi

if [ "$mutants" = 1 ]; then
  exec "$TE_VENV/bin/python" conformance/te_mutation_score.py --te-source "$te_source" \
    --explorer build/explorer/explorer "${passed[@]}"
fi
exec "$TE_VENV/bin/python" conformance/te_explore.py --te-source "$te_source" \
  --explorer build/explorer/explorer "${passed[@]}"
