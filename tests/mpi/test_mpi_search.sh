#!/usr/bin/env bash
# The explorer's search on several MPI processes, through mpirun as a user runs it:
#
#   test_mpi_search.sh EXPLORER MPIEXEC "LAUNCHER FLAGS" CASE [ARGUMENT]
#
#   same-report SEMANTICS  mpirun -np 2 and -np 3 at depth 5, text (with --coverage) and JSON: the
#                          same as the one-process search, but for the lines and fields a run
#                          measures (time, memory, the ranks' own figures)
#   kill-and-resume        one rank killed (kill -9) after layer 3, then every rank killed while
#                          writing layer 3: the job ends at once naming the rank, and resuming
#                          gives the uninterrupted result
#   interrupt              SIGINT to one rank: every rank stops at the same round with the report
#                          of what was explored, exit 4, and the snapshot resumes
#   programs               --programs, text and JSON, on 2 and 3 ranks at depth 5: the same bytes
#                          as one process, exit 0, and the same summary line
#   faults                 a rank that fails, or runs out of its --max-memory share: one line naming
#                          it; a snapshot of 2 ranks resumed by 3 is refused; non-search commands
#                          are refused under mpirun
#
# Every mpirun runs under `timeout`: a job that hangs fails the test instead of stalling CI.
set -euo pipefail
explorer=$1
mpiexec=$2
read -r -a launcher <<<"$3"
case_name=$4
argument=${5:-}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
# mpirun -np K explorer ARGS..., its standard output in $work/out, its standard error in
# $work/err, its exit status in $status.
mpi() {
  local ranks=$1
  shift
  status=0
  timeout 120 "$mpiexec" -np "$ranks" "${launcher[@]}" "$explorer" "$@" >"$work/out" 2>"$work/err" || status=$?
  if [ "$status" -eq 124 ]; then fail "mpirun -np $ranks explorer $* did not end within 120 s"; fi
}
# A text report without the lines a run measures.
report() { grep -v -e '^total:' -e '^stored:' -e '^ranks:' "$1"; }
# A JSON document without the fields a run measures.
document() {
  python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
for k in ("seconds", "states_per_second", "peak_memory_bytes", "stored_bytes", "stored_bytes_per_state",
          "ranks", "peak_memory_bytes_per_rank", "exchanged_bytes"):
    d.pop(k)
print(json.dumps(d))' "$1"
}

case "$case_name" in
  same-report)
    semantics=$argument
    search=(--depth 5 --semantics "$semantics")
    single_status=0
    "$explorer" "${search[@]}" --coverage >"$work/single.txt" || single_status=$?
    "$explorer" "${search[@]}" --json >"$work/single.json" || true
    for ranks in 2 3; do
      mpi "$ranks" "${search[@]}" --coverage
      [ "$status" -eq "$single_status" ] || fail "$ranks ranks exit $status, one process $single_status"
      diff <(report "$work/single.txt") <(report "$work/out") || fail "$ranks ranks: another text report"
      grep -q "^ranks: $ranks, peak memory per rank" "$work/out" || fail "$ranks ranks: no ranks line"
      mpi "$ranks" "${search[@]}" --json
      diff <(document "$work/single.json") <(document "$work/out") || fail "$ranks ranks: another JSON document"
      python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["ranks"] == int(sys.argv[2]), d["ranks"]; assert len(d["peak_memory_bytes_per_rank"]) == d["ranks"]' \
        "$work/out" "$ranks" || fail "$ranks ranks: the JSON document's ranks"
    done
    ;;
  kill-and-resume)
    search=(--depth 4 --semantics upstream --coverage)
    "$explorer" "${search[@]}" >"$work/single.txt" || true
    # Rank 1 dies (kill -9) once layer 3 is saved: mpirun ends the job, naming the rank.
    FP8SM_TEST_FAULT="kill manifest-written 3 1" mpi 2 "${search[@]}" --snapshot "$work/one"
    [ "$status" -ne 0 ] || fail "a job with a killed rank exited 0"
    grep -q "rank 1 .*signal 9" "$work/err" || { cat "$work/err" >&2; fail "nothing names the killed rank"; }
    grep -q '^layer 3$' "$work/one/manifest" || fail "the snapshot is not of layer 3"
    mpi 2 "${search[@]}" --resume "$work/one"
    grep -q "resumed from layer 3" "$work/err" || fail "not resumed from layer 3"
    diff <(report "$work/single.txt") <(report "$work/out") || fail "resumed after a killed rank: another report"
    # Every rank dies while layer 3 is half written (their files in place, no manifest yet).
    FP8SM_TEST_FAULT="kill rank-file-written 3" mpi 2 "${search[@]}" --snapshot "$work/all"
    [ "$status" -ne 0 ] || fail "a killed job exited 0"
    grep -q '^layer 2$' "$work/all/manifest" || fail "a half-written layer 3 replaced layer 2"
    mpi 2 "${search[@]}" --resume "$work/all"
    diff <(report "$work/single.txt") <(report "$work/out") || fail "resumed after every rank was killed: another report"
    ;;
  interrupt)
    # SIGINT to rank 1 alone (sent by itself, as Ctrl-C would be to one process) while it expands
    # layer 3: every rank stops at the same round, rank 0 prints the report of layers 0 to 2 and
    # one line saying so, with the states the one-process search counts to depth 2, and every
    # rank exits 4; the snapshot of layer 2 resumes, building a layer with a next frontier and
    # then the last, to the result of the uninterrupted search.
    search=(--depth 4 --semantics upstream --coverage)
    "$explorer" "${search[@]}" >"$work/single.txt" || true
    to_depth_2=$(awk '/^depth +frontier +distinct/ { table = 1; next } table && $1 == "2" { print $3; exit }' "$work/single.txt")
    [ -n "$to_depth_2" ] || fail "no row for depth 2 in the one-process report"
    FP8SM_TEST_FAULT="interrupt expansion 3 1" mpi 2 "${search[@]}" --snapshot "$work/stopped"
    [ "$status" -eq 4 ] || { cat "$work/err" >&2; fail "an interrupted job: exit $status, not 4"; }
    [ "$(grep -c "^explorer: interrupted at depth 3: $to_depth_2 states explored, complete to depth 2" "$work/err")" -eq 1 ] \
      || { cat "$work/err" >&2; fail "not one line saying where the job was interrupted"; }
    grep -q '^interrupted (SIGINT or SIGTERM) while expanding depth 3' "$work/out" || fail "no partial report"
    grep -q '^layer 2$' "$work/stopped/manifest" || fail "the snapshot is not of layer 2"
    mpi 2 "${search[@]}" --resume "$work/stopped"
    diff <(report "$work/single.txt") <(report "$work/out") || fail "resumed after an interrupt: another report"
    ;;
  programs)
    search=(--depth 5 --semantics upstream --programs)
    "$explorer" "${search[@]}" >"$work/single.txt" 2>"$work/single.err"
    "$explorer" "${search[@]}" --json >"$work/single.json" 2>/dev/null
    [ -s "$work/single.txt" ] || fail "one process listed nothing"
    for ranks in 2 3; do
      mpi "$ranks" "${search[@]}"
      [ "$status" -eq 0 ] || { cat "$work/err" >&2; fail "$ranks ranks: exit $status"; }
      cmp -s "$work/single.txt" "$work/out" || fail "$ranks ranks: another list"
      grep -q "^$(head -c 60 "$work/single.err")" "$work/err" || { cat "$work/err" >&2; fail "$ranks ranks: summary"; }
      [ "$(grep -c '^explorer: ' "$work/err")" -eq 1 ] || { cat "$work/err" >&2; fail "$ranks ranks: not one summary"; }
      mpi "$ranks" "${search[@]}" --json
      cmp -s "$work/single.json" "$work/out" || fail "$ranks ranks: another JSON list"
    done
    ;;
  faults)
    # A rank that fails: every rank stops; one line, printed once, names it; exit 2.
    FP8SM_TEST_FAULT="throw expansion 4 1" mpi 2 --depth 5
    [ "$status" -eq 2 ] || fail "a failing rank: exit $status, not 2"
    [ "$(grep -c '^explorer: error: rank 1 of 2: a fault on purpose' "$work/err")" -eq 1 ] \
      || { cat "$work/err" >&2; fail "not one line naming the failing rank"; }
    # A rank past its share of --max-memory: a partial report and one line naming the rank.
    mpi 2 --depth 6 --semantics fp8sm --max-memory 4M
    [ "$status" -eq 3 ] || fail "a memory budget with no violation: exit $status, not 3"
    grep -q '^explorer: rank [01] of 2 reached its share of --max-memory (2.0 MiB' "$work/err" \
      || { cat "$work/err" >&2; fail "no line naming the rank out of memory"; }
    grep -q '^stopped at the memory budget' "$work/out" || fail "no partial report"
    # A snapshot of 2 ranks is resumed by 2 ranks only.
    mpi 2 --depth 4 --snapshot "$work/two"
    mpi 3 --depth 4 --resume "$work/two"
    [ "$status" -eq 2 ] || fail "a snapshot of 2 ranks resumed by 3: exit $status"
    grep -q 'was written by 2 ranks; this run has 3' "$work/err" || { cat "$work/err" >&2; fail "no reason given"; }
    # Only a search runs on several processes.
    mpi 2 list
    [ "$status" -eq 2 ] || fail "list under mpirun -np 2: exit $status"
    [ "$(grep -c "only a search runs on several processes" "$work/err")" -eq 1 ] || fail "list: not one line"
    ;;
  *)
    fail "unknown case $case_name"
    ;;
esac
echo "ok: $case_name $argument"
