"""The mutation score of the exhaustive check: which one-edit mutants of TE's state code the
programs of `explorer --programs` tell apart from the model.

    te_mutation_score.py --te-source DIR --explorer PATH [--depth N [--backward-depth M] | --programs FILE]
                         [--jobs J] [--only ID]... [--json FILE]

Every mutant of conformance/mutants/te-2.20.2.json (te_mutants.py) is applied to a copy of the
TE tree, and `te_explore.py --semantics upstream --first-disagreement` runs the search's
programs on it (searched once, for TE and every mutant), in a process of its own (TE loads once
per process). A mutant is killed by the
first program, in discovery order (so a shortest one), whose TE result differs from the model's:
counts, exception kinds, or the invariants violated. The unmutated TE agrees with the model on
every program (CI checks it), so a difference is the mutant's doing. A mutant on which the
harness itself stops (a stub it calls, a file that no longer loads) is reported as such.

With --programs FILE (lines of `explorer --depth N --programs --json --data-inputs`, some of
them kept by a filter) only those programs run: a kill there is a kill by a program of the
search, a survival proves nothing for the programs left out. That is how a deep level's kills
are found at a fraction of its cost.

Prints a table, each survivor with the fixture's reason (equivalent, or what the language lacks),
and the score: killed / (mutants - equivalent ones). Exit 0 when the score is at least
--target (default 95 %), 1 otherwise, 2 when the harness cannot run on TE itself.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import te_conformance  # noqa: E402
import te_explore  # noqa: E402
import te_mutants  # noqa: E402


def explore(tree: Path, explorer: str, jobs: int, timeout: int, programs: Path) -> dict:
    command = [sys.executable, str(HERE / "te_explore.py"), "--te-source", str(tree), "--explorer", explorer,
               "--programs", str(programs), "--semantics", "upstream", "--first-disagreement",
               "--json"] + (["--jobs", str(jobs)] if jobs else [])
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"harness": f"timed out after {timeout} s"}
    if done.returncode == 2 or not done.stdout.strip():
        lines = done.stderr.strip().splitlines()
        return {"harness": lines[0][:300] if lines else f"exit {done.returncode}"}
    return json.loads(done.stdout)


def verdict(document: dict) -> dict:
    if "harness" in document:
        return {"killed": True, "by": "harness", "detail": document["harness"]}
    model = document["model"]
    if model["disagreements"]:
        first = model["disagreements"][-1]
        return {"killed": True, "by": "counts", "program": first["program"],
                "te": first["te_steps"], "model": first["model_steps"]}
    differences = model["verdict_differences"]
    if differences:
        invariant, programs = sorted(differences.items())[0]
        return {"killed": True, "by": f"verdict {invariant}", "program": programs[-1]}
    return {"killed": False, "programs": document["programs"]}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--te-source", type=Path, default=te_mutants.DEFAULT_TE_SOURCE)
    parser.add_argument("--explorer", default=str(HERE.parent / "build" / "explorer" / "explorer"))
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--jobs", type=int, default=0)
    parser.add_argument("--backward-depth", type=int, default=0, metavar="M",
                        help="and the programs of up to M statements that run a backward with a Linear in a "
                             "checkpoint per statement past --depth (as CI)")
    parser.add_argument("--programs", type=Path, metavar="FILE",
                        help="run these programs (lines of `explorer --programs --json --data-inputs`), not a search")
    parser.add_argument("--only", action="append", default=[], metavar="ID")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per mutant")
    parser.add_argument("--target", type=float, default=95.0, help="the score to reach, in percent")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)

    mutants = te_mutants.load_mutants()
    if args.only:
        mutants = [m for m in mutants if m.id in args.only]
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as scratch:
        try:
            programs = args.programs.resolve() if args.programs else searched(args, Path(scratch))
        except (te_conformance.HarnessFailure, OSError) as e:  # the explorer failed, or is not there
            print(f"te_mutation_score: {e}", file=sys.stderr)
            return 2
        return score_mutants(args, mutants, started, programs)


def searched(args, scratch: Path) -> Path:
    """The search's programs, listed once for TE and every mutant (the depth-6 search alone
    takes half a minute), in the form --programs reads."""
    lines = te_explore.search_lines(args.explorer, args.depth, "upstream", True, args.backward_depth)
    path = scratch / "programs.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    return path


def score_mutants(args, mutants: list, started: float, programs: Path) -> int:
    def run(tree: Path) -> dict:
        return verdict(explore(tree, args.explorer, args.jobs, args.timeout, programs))

    baseline = run(args.te_source)
    if baseline["killed"]:
        print(f"te_mutation_score: TE itself disagrees with the model ({baseline}); no score", file=sys.stderr)
        return 2
    rows = []
    for m in mutants:
        with te_mutants.mutated_tree(m, args.te_source) as tree:
            row = {"id": m.id, "what": m.what, "equivalent": m.equivalent, "needs": list(m.needs),
                   **run(tree)}
        rows.append(row)
        how = (f"killed by {row['by']}: {row.get('program', row.get('detail', ''))}" if row["killed"]
               else "survived" + (f" (equivalent: {m.equivalent})" if m.equivalent else ""))
        print(f"{m.id:45} {how}", flush=True)
    counted = [r for r in rows if not r["equivalent"] or r["killed"]]
    killed = [r for r in counted if r["killed"]]
    wrongly_equivalent = [r["id"] for r in rows if r["equivalent"] and r["killed"]]
    score = 100.0 * len(killed) / len(counted) if counted else 100.0
    scope = (f"the programs of {args.programs}" if args.programs else f"depth {args.depth}" +
             (f" and the programs to depth {args.backward_depth} that recompute a Linear per statement past it"
              if args.backward_depth else ""))
    print(f"{scope}: {len(killed)} of {len(counted)} non-equivalent mutants killed ({score:.1f} %); "
          f"{len(rows) - len(counted)} equivalent; {time.monotonic() - started:.0f} s")
    if wrongly_equivalent:
        print(f"killed although the fixture calls them equivalent: {', '.join(wrongly_equivalent)}")
    for r in rows:
        if not r["killed"] and not r["equivalent"]:
            print(f"SURVIVOR {r['id']}: {r['what']}")
    if args.json:
        header = {"depth": args.depth, "backward_depth": args.backward_depth or None,
                  "programs": str(args.programs) if args.programs else None}
        args.json.write_text(json.dumps({**header, "score": score, "rows": rows}, indent=1) + "\n")
    return 0 if score >= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
