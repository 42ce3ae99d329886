#!/usr/bin/env python3
"""The search on several processes against the search in one, measured in pairs, and what a
deeper search would need on K machines (docs/performance.md, "Many processes").

    bench/distributed_search.py [--explorer build/explorer/explorer] [--depth 6] [--semantics fp8sm]
                                [--ranks 2] [--pairs 3] [--mpirun "mpirun --allow-run-as-root"]
                                [--skip-snapshots] [--estimate-only]

1. Pairs of (one process, one thread) and (mpirun -np K), run alternately, so that a machine
   whose speed drifts slows both: the wall time of each, their ratio pair by pair (median, min,
   max), and each rank's peak resident memory against the one process's (as the explorer reports
   them: VmHWM of every process).
2. The same for --snapshot DIR against none, one process and K ranks: what writing a snapshot at
   every layer costs.
3. A capacity estimate for depths 7 and 8 on K machines, from the layers of the one-process
   search (depths 4-6 by default: states per layer, transitions, stored bytes per state) and the
   bytes the K-rank search sent per transition: states, memory per rank, network bytes per
   layer. It is arithmetic on measured figures; the docs say what it leaves out.

Prints what it measured and computed; judges nothing.
"""
import argparse
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

MIB = 1024.0 * 1024.0


def run(command):
    """Runs the explorer command; returns (wall seconds, its JSON document)."""
    start = time.monotonic()
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seconds = time.monotonic() - start
    if done.returncode not in (0, 1):
        sys.exit(f"distributed_search: {' '.join(command)} exited {done.returncode}:\n{done.stderr}")
    return seconds, json.loads(done.stdout)


def spread(values):
    return f"{statistics.median(values):.3f} (min {min(values):.3f}, max {max(values):.3f})"


def pairs(label_a, command_a, label_b, command_b, count):
    """A and B alternately, `count` times each after one warm-up of each; the ratios A/B. A
    command may be a function that makes the command line afresh for each run."""
    line = lambda command: command() if callable(command) else command  # noqa: E731
    run(line(command_a))
    run(line(command_b))
    walls_a, walls_b, peaks_a, peaks_b = [], [], [], []
    for _ in range(count):
        seconds_a, doc_a = run(line(command_a))
        seconds_b, doc_b = run(line(command_b))
        walls_a.append(seconds_a)
        walls_b.append(seconds_b)
        peaks_a.append(max(doc_a["peak_memory_bytes_per_rank"]))
        peaks_b.append(max(doc_b["peak_memory_bytes_per_rank"]))
    ratios = [a / b for a, b in zip(walls_a, walls_b)]
    memory = [a / b for a, b in zip(peaks_a, peaks_b)]
    print(f"  {label_a}: wall {spread(walls_a)} s, largest process {statistics.median(peaks_a) / MIB:.1f} MiB")
    print(f"  {label_b}: wall {spread(walls_b)} s, largest process {statistics.median(peaks_b) / MIB:.1f} MiB")
    print(f"  wall {label_a} / {label_b}: {spread(ratios)}")
    print(f"  peak memory of the largest process, {label_a} / {label_b}: {spread(memory)}")


def estimate(explorer, semantics, depth, ranks, mpirun):
    """Layers of the one-process search to `depth`, bytes sent per transition by `ranks` ranks,
    extrapolated to depths 7 and 8."""
    _, single = run([explorer, "--depth", str(depth), "--semantics", semantics, "--json"])
    _, many = run(shlex.split(mpirun) + ["-np", str(ranks), explorer, "--depth", str(depth), "--semantics", semantics,
                                         "--json"])
    layers = {layer["depth"]: layer for layer in single["layers"]}
    print(f"  measured, one process, {semantics}:")
    for d in range(max(0, depth - 2), depth + 1):
        growth = layers[d]["frontier"] / layers[d - 1]["frontier"] if d > 0 else float("nan")
        print(f"    depth {d}: {layers[d]['frontier']:>13,} new states (x{growth:.1f}), "
              f"{layers[d]['distinct']:>13,} in all, {layers[d]['transitions']:>13,} transitions")
    bytes_per_state = single["stored_bytes"] / single["distinct_states"]
    # The bytes a transition costs on the network: all the ranks sent, over the transitions, as if
    # every record left its rank (a fraction (K-1)/K of them do).
    sent_per_transition = many["exchanged_bytes"] / single["transitions"] / ((ranks - 1) / ranks)
    transitions_per_state = layers[depth]["transitions"] / layers[depth]["frontier"]
    print(f"    stored {bytes_per_state:.1f} bytes per state; {ranks} ranks sent {many['exchanged_bytes'] / MIB:.1f} MiB: "
          f"{sent_per_transition:.1f} bytes per transition that leaves its rank; "
          f"{transitions_per_state:.2f} transitions per new state at depth {depth}")
    # Growth per layer rises slowly with depth: carry the last ratio forward with its trend.
    frontier = {d: layers[d]["frontier"] for d in layers}
    ratio = frontier[depth] / frontier[depth - 1]
    trend = ratio / (frontier[depth - 1] / frontier[depth - 2])
    distinct = layers[depth]["distinct"]
    baseline = 20 * MIB  # a rank besides its tables: the program and MPI (14 MiB at depth 2) and round buffers
    print(f"  estimated (layer growth x{ratio:.1f}, rising x{trend:.3f} a layer; {bytes_per_state:.1f} bytes a stored "
          f"state, 24 bytes a state of the frontier being expanded, {baseline / MIB:.0f} MiB a rank besides):")
    for d in range(depth + 1, 9):
        ratio *= trend
        frontier[d] = frontier[d - 1] * ratio
        distinct += frontier[d]
        transitions = frontier[d] * transitions_per_state
        print(f"    depth {d}: {frontier[d]:.3g} new states, {distinct:.3g} in all, {transitions:.3g} transitions in the last layer")
        for k in (1, 2, 4, 8, 16, 32, 64):
            per_rank = (distinct * bytes_per_state + frontier[d - 1] * 24) / k + baseline
            network = transitions * sent_per_transition * (k - 1) / k
            print(f"      K={k:>2}: {per_rank / 2**30:8.1f} GiB per rank, last layer sends "
                  f"{network / 2**30:8.1f} GiB in all ({network / k / 2**30:7.2f} GiB per rank)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--explorer", default="build/explorer/explorer")
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("--semantics", default="fp8sm")
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--mpirun", default="mpirun --allow-run-as-root")
    parser.add_argument("--skip-snapshots", action="store_true", help="leave out the snapshots' pairs")
    parser.add_argument("--estimate-only", action="store_true", help="only the capacity estimate")
    args = parser.parse_args()
    search = [args.explorer, "--depth", str(args.depth), "--semantics", args.semantics, "--json"]
    mpi = shlex.split(args.mpirun) + ["-np", str(args.ranks)]
    if not args.estimate_only:
        print(f"one process against mpirun -np {args.ranks}, depth {args.depth}, {args.semantics}, {args.pairs} pairs:")
        pairs(f"mpirun -np {args.ranks}", mpi + search, "one process", search, args.pairs)
        if not args.skip_snapshots:
            with tempfile.TemporaryDirectory() as scratch:
                serial = iter(range(1000000))
                fresh = lambda: f"{scratch}/{next(serial)}"  # noqa: E731 (a new directory per run)
                print(f"--snapshot against none, one process:")
                pairs("--snapshot", lambda: search + ["--snapshot", fresh()], "none", search, args.pairs)
                print(f"--snapshot against none, mpirun -np {args.ranks}:")
                pairs("--snapshot", lambda: mpi + search + ["--snapshot", fresh()], "none", mpi + search, args.pairs)
    print(f"capacity, from depths {args.depth - 2}-{args.depth}:")
    estimate(args.explorer, args.semantics, args.depth, args.ranks, args.mpirun)


if __name__ == "__main__":
    main()
