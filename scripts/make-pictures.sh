#!/usr/bin/env bash
# Makes every committed picture of docs/pictures.md again, with the explorer built in build/
# (or the one EXPLORER names) and Graphviz's dot (scripts/setup.sh installs it):
#
#   docs/img/table-fp8sm.svg                 explorer table --dot --semantics fp8sm | dot -Tsvg
#   docs/img/counterexample-upstream-I1.svg  explorer --depth N --semantics upstream --check I1 --dot | dot -Tsvg
#   docs/pictures.md, its ```mermaid block   explorer --depth N --semantics upstream --check I1 --mermaid
#
# N is the smallest depth at which the search finds an upstream I1 counterexample (the
# shortest one). tests/explorer/test_pictures.cpp fails when a committed picture is out of date.
set -euo pipefail
cd "$(dirname "$0")/.."

explorer="${EXPLORER:-build/explorer/explorer}"
[ -x "$explorer" ] || { echo "make-pictures: no explorer at $explorer (build it, or set EXPLORER)" >&2; exit 2; }
command -v dot >/dev/null || { echo "make-pictures: dot is not installed (scripts/setup.sh installs graphviz)" >&2; exit 2; }

mkdir -p docs/img
"$explorer" table --dot --semantics fp8sm | dot -Tsvg > docs/img/table-fp8sm.svg

# The search exits 1 when it finds a violation, which is what is asked of it here.
search() { "$explorer" --depth "$1" --semantics upstream --check I1 "$2" || [ $? -eq 1 ]; }
# Whether the search of depth N finds one (its pictures are never empty: without a
# counterexample they say so in a comment line).
finds() {
  local status=0
  "$explorer" --depth "$1" --semantics upstream --check I1 >/dev/null || status=$?
  [ "$status" -eq 1 ]
}
depth=0
until finds "$depth"; do
  depth=$((depth + 1))
  [ "$depth" -le 8 ] || { echo "make-pictures: no upstream I1 counterexample up to depth 8" >&2; exit 1; }
done
search "$depth" --dot | dot -Tsvg > docs/img/counterexample-upstream-I1.svg

# The Mermaid source goes between the page's markers, replacing what was there.
mermaid="$(search "$depth" --mermaid)"
page=docs/pictures.md
source="$mermaid" awk '
  /<!-- counterexample-mermaid:end -->/ { print "```mermaid"; print ENVIRON["source"]; print "```"; skipping = 0 }
  !skipping { print }
  /<!-- counterexample-mermaid:begin -->/ { skipping = 1 }
' "$page" > "$page.new"
mv "$page.new" "$page"
echo "make-pictures: docs/img/table-fp8sm.svg, docs/img/counterexample-upstream-I1.svg and $page (depth $depth)"
