#!/usr/bin/env python3
"""The searches to the fixpoint, as a table (docs/performance.md, "Fixpoints"): for each bound
(K open blocks, M live nodes, N modules) and semantics, the fixpoint's depth D, the states, the
time and the peak memory, or where it gave up; and what was violated. One explorer process a row,
each with a time limit (SIGTERM: the explorer reports what it explored).

    bench/fixpoint_table.py [--explorer build/explorer/explorer] [--check I1,I2,I3,I6,I7]
                            [--limit 600] [--bounds 1,1,1 1,2,1 2,2,1 2,3,2] [--semantics fp8sm,upstream,pr3213]
"""
import argparse
import json
import subprocess
import sys


def row(explorer, semantics, bound, check, limit):
    k, m, n = bound
    command = ["timeout", "-s", "TERM", str(limit), explorer, "--until-fixpoint", "--max-open-blocks", str(k), "--max-live-nodes", str(m),
               "--modules", str(n), "--semantics", semantics, "--check", check, "--threads", "2", "--json"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=limit + 60)
    except subprocess.TimeoutExpired:
        return f"| {semantics} | {k} | {m} | {n} | no answer in {limit} s | | | | |"
    if not done.stdout.strip():
        return f"| {semantics} | {k} | {m} | {n} | error: {done.stderr.strip()[:80]} | | | | |"
    doc = json.loads(done.stdout)
    if doc["fixpoint_depth"] is not None:
        reached = f"fixpoint at {doc['fixpoint_depth']}"
    else:
        reached = f"none by {doc['depth_completed']} ({doc['stopped_by']})"
    violated = ", ".join(f"{v['invariant']} in {v['length']}" for v in doc["violations"]) or "none"
    return (f"| {semantics} | {k} | {m} | {n} | {reached} | {doc['distinct_states']:,} | {doc['seconds']:.1f} | "
            f"{doc['peak_memory_bytes'] / 2**20:.0f} | {violated} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--explorer", default="build/explorer/explorer")
    parser.add_argument("--check", default="I1,I2,I3,I6,I7")
    parser.add_argument("--limit", type=int, default=600, help="seconds a row, then SIGTERM")
    parser.add_argument("--bounds", nargs="+", default=["1,1,1", "1,2,1", "2,2,1", "2,3,2"])
    parser.add_argument("--semantics", default="fp8sm,upstream,pr3213")
    args = parser.parse_args()
    print("| semantics | K | M | modules | fixpoint | states | seconds | peak MiB | violated (shortest) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for bound in args.bounds:
        for semantics in args.semantics.split(","):
            k, m, n = (int(x) for x in bound.split(","))
            print(row(args.explorer, semantics, (k, m, n), args.check, args.limit), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
