"""Exhaustive verdicts on Transformer Engine's own code: every program of the model's search run
on TE, the invariants judged on what TE does.

    te_explore.py --te-source DIR --explorer PATH --depth N [--semantics S] [--jobs J] [--json]
                  [--data-inputs] [--expect-violated I1,I4,...]
    te_explore.py --te-source DIR --programs FILE [--semantics S] ...
    te_explore.py ... --depth N --backward-depth M     # and deeper programs that recompute Linears

The programs are `explorer --depth N --programs --json` (one per distinct top-level state of
the model's search, shortest first), or, with --programs FILE, the lines of such a list saved
before (all of it, or the lines a filter kept: a part of the search's programs, so what it
finds is a finding of the search, and what it does not find proves nothing for the rest).
With --backward-depth M, programs of up to M statements are added to those of up to N: those
that run a backward and hold a Linear inside a checkpoint for each statement past N (`explorer
--programs-beyond N`), where the state code that runs at recompute time meets one more module
forward per level (docs/conformance.md, "What CI runs").

Each program runs on TE (te_observe.ObservedRun: I1 to I9 from TE's own calls and globals), and
so does the same program without its checkpoints (I8). The report has the explorer's form: per
invariant, holding or violated, how many programs violate it, and the shortest such program
with TE's results. With --semantics S, each program's TE result is also compared with the
model's under S (counts and exception kinds, then the violated invariants); every count
disagreement is shrunk to a minimal program.

Exit status: 0 all invariants hold on TE (with --expect-violated: exactly those are violated,
and with --semantics every program agrees); 1 otherwise; 2 the harness could not run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import scenario  # noqa: E402
import te_conformance  # noqa: E402
import te_observe  # noqa: E402
import te_workers  # noqa: E402

INVARIANTS = ["I1", "I2", "I3", "I4", "I5", "I6", "I7", "I8", "I9"]
# What this check judges on TE.
JUDGED_ON_TE = INVARIANTS


@dataclass
class Program:
    index: int
    depth: int
    text: str                      # one line
    model_steps: List[dict]        # `explorer run --json`'s steps under the search's semantics
    te_steps: List[dict] = field(default_factory=list)

    @classmethod
    def from_document(cls, document: dict) -> "Program":
        """One `fp8sm-program/1` line of `explorer --programs --json`."""
        return cls(document["index"], document["depth"], document["program"], document["steps"])

    def te_violations(self) -> Dict[str, str]:
        out: Dict[str, str] = {}
        for step in self.te_steps:
            for invariant, reason in step["violations"].items():
                out.setdefault(invariant, reason)
        return out

    def model_violations(self) -> Dict[str, str]:
        out: Dict[str, str] = {}
        for step in self.model_steps:
            for invariant in step["violations"]:
                out.setdefault(invariant, step["reasons"].get(invariant, ""))
        return out


def search_programs(explorer: str, depth: int, semantics: str, data_inputs: bool,
                    backward_depth: int = 0) -> List[Program]:
    """The search's programs to `depth`; with `backward_depth` (> depth), also those of up to
    that many statements that the explorer's --programs-beyond keeps. One search to the deeper
    bound: its programs of up to `depth` statements are the shallower search's, in the same
    order and with the same indexes (the search goes level by level)."""
    return [Program.from_document(json.loads(line))
            for line in search_lines(explorer, depth, semantics, data_inputs, backward_depth)]


def search_lines(explorer: str, depth: int, semantics: str, data_inputs: bool, backward_depth: int = 0) -> List[str]:
    """search_programs' lines of `explorer --programs --json`, as the explorer prints them (what
    --programs FILE reads back)."""
    command = [explorer, "--depth", str(max(depth, backward_depth)), "--semantics", semantics, "--programs", "--json"]
    if backward_depth:
        command += ["--programs-beyond", str(depth)]
    if data_inputs:
        command.append("--data-inputs")
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise te_conformance.HarnessFailure(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout.splitlines()


def read_programs(path: Path, semantics: str) -> List[Program]:
    """A saved `explorer --programs --json` list (or some of its lines), in the file's order."""
    programs = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            document = json.loads(line)
            if document.get("format") != "fp8sm-program/1":
                raise ValueError(f"format {document.get('format')!r}, not fp8sm-program/1")
            if document["semantics"] != semantics:
                raise ValueError(f"the model's run is under {document['semantics']}, not {semantics}")
            programs.append(Program.from_document(document))
        except (ValueError, KeyError, TypeError) as e:
            raise te_conformance.HarnessFailure(f"{path}:{number}: not an explorer --programs --json line: {e}")
    if not programs:
        raise te_conformance.HarnessFailure(f"{path}: no programs")
    return programs


def reference_text(text: str) -> str:
    """The program without its checkpoints (I8's reference), one line."""
    return scenario.render(te_observe.without_checkpoints(scenario.parse(text)))


def run_task(te, task: str) -> dict:
    """What a worker runs: "program TEXT" (judged on TE) or "reference TEXT" (a program
    without checkpoints, I8's other side); each from TE's pristine globals."""
    _, text = task.split(" ", 1)
    return te_observe.run_observed(te, text)


def judge_with_reference(text: str, result: dict, reference: dict) -> List[dict]:
    """The program's steps with I8 added (te_observe.judge_transparency), numerics removed."""
    program = scenario.parse(text)
    te_observe.judge_transparency(result["steps"], reference["steps"],
                                  te_observe.diverged_steps(program, set(result["executed"])))
    return [{k: v for k, v in step.items() if k != "numerics"} for step in result["steps"]]


def run_observed_program(te, text: str) -> dict:
    """One program judged on TE, its reference in a process of its own (each forked from this
    one, which loaded TE): for tests and single programs."""
    result = te_conformance.run_on_te(te, "program " + text, run_task)
    reference = te_conformance.run_on_te(te, "reference " + reference_text(text), run_task)
    return {"steps": judge_with_reference(text, result, reference)}


def run_many(pool, texts: List[str]) -> List[dict]:
    """The tasks in the pool's workers (te_workers: reused, TE's globals reset and checked after
    each), results in submission order."""
    return pool.map(texts)


def counts_agree(p: Program) -> bool:
    return te_conformance.comparable({"steps": p.te_steps}) == te_conformance.comparable({"steps": p.model_steps})


def differing_verdicts(p: Program) -> List[str]:
    te_found, model_found = p.te_violations(), p.model_violations()
    return [i for i in JUDGED_ON_TE if (i in te_found) != (i in model_found)]


CHUNK = 512  # programs handed to the workers at a time when the run may stop early


def run_on_te(pool, programs: List[Program], stop_at_disagreement: Optional[str]) -> List[Program]:
    """Runs the programs on TE (their te_steps). With `stop_at_disagreement` (a semantics), stops
    after the chunk holding the first program whose TE result differs from the model's, and
    returns the programs up to that one: the shortest such program, since they come shortest
    first."""
    step = CHUNK if stop_at_disagreement else max(len(programs), 1)
    references: Dict[str, dict] = {}  # by the reference's text: many programs share one
    for start in range(0, len(programs), step):
        chunk = programs[start:start + step]
        reference_of = {p.text: reference_text(p.text) for p in chunk}
        wanted = sorted({r for r in reference_of.values() if r not in references})
        tasks = ["program " + p.text for p in chunk] + ["reference " + r for r in wanted]
        results = run_many(pool, tasks)
        references.update(zip(wanted, results[len(chunk):]))
        for p, result in zip(chunk, results):
            p.te_steps = judge_with_reference(p.text, result, references[reference_of[p.text]])
        if stop_at_disagreement:
            for i, p in enumerate(chunk):
                if not counts_agree(p) or differing_verdicts(p):
                    return programs[:start + i + 1]
    return programs


def multiline(text: str) -> str:
    return scenario.render(scenario.parse(text)) + "\n"


def describe_te(steps: List[dict]) -> List[str]:
    lines = [f"TE: {te_conformance.describe({'steps': steps})}"]
    for step in steps:
        for r in step["raised"]:
            lines.append(f"    {r['kind']}: {r['message'][:200]}")
    return lines


def verdicts(programs: List[Program], side: str) -> Dict[str, List[Program]]:
    out: Dict[str, List[Program]] = {i: [] for i in INVARIANTS}
    for p in programs:
        found = p.te_violations() if side == "te" else p.model_violations()
        for invariant in found:
            out[invariant].append(p)
    return out


def report_text(programs: List[Program], args, te_source: Path, seconds: float,
                count_disagreements: List[Program], verdict_disagreements: Dict[str, List[Program]],
                shrunk: Dict[int, str], out) -> None:
    te_side = verdicts(programs, "te")
    source = f"from {args.programs}" if args.programs else "the model's search"
    deeper = (f", and of up to {args.backward_depth} that recompute a Linear per statement past {args.depth}"
              if args.backward_depth else "")
    print(f"TE from {te_source}: {len(programs)} programs of up to {args.depth} statements{deeper} "
          f"({source} under {args.search_semantics}), {seconds:.0f} s", file=out)
    for invariant in INVARIANTS:
        if invariant not in JUDGED_ON_TE:
            print(f"{invariant} not judged on TE (docs/conformance.md)", file=out)
            continue
        violating = te_side[invariant]
        if not violating:
            print(f"{invariant} holds", file=out)
            continue
        first = min(violating, key=lambda p: (p.depth, p.index))
        print(f"{invariant} violated ({len(violating)} programs); shortest counterexample, {first.depth} statements: "
              f"{first.te_violations()[invariant]}", file=out)
        for line in multiline(first.text).splitlines():
            print(f"    {line}", file=out)
        for line in describe_te(first.te_steps):
            print(f"  {line}", file=out)
    if args.semantics:
        agreeing = len(programs) - len(count_disagreements)
        print(f"model ({args.semantics}): counts and exceptions agree on {agreeing}/{len(programs)} programs", file=out)
        for p in count_disagreements:
            print(f"DISAGREE program {p.index}: {p.text}", file=out)
            print("  minimal program:", file=out)
            for line in shrunk.get(p.index, multiline(p.text)).splitlines():
                print(f"    {line}", file=out)
            print(f"  TE:    {te_conformance.describe({'steps': p.te_steps})}", file=out)
            print(f"  model: {te_conformance.describe({'steps': p.model_steps})}", file=out)
        model_side = verdicts(programs, "model")
        for invariant in JUDGED_ON_TE:
            differing = verdict_disagreements[invariant]
            te_n, model_n = len(te_side[invariant]), len(model_side[invariant])
            if not differing:
                print(f"model ({args.semantics}): {invariant} the same on every program ({te_n} violating)", file=out)
                continue
            print(f"model ({args.semantics}): {invariant} differs on {len(differing)} programs "
                  f"(TE {te_n} violating, model {model_n}); the shortest:", file=out)
            p = min(differing, key=lambda p: (p.depth, p.index))
            print(f"    {p.text}", file=out)
            print(f"  TE:    {p.te_violations().get(invariant, 'holds')}", file=out)
            print(f"  model: {p.model_violations().get(invariant, 'holds')}", file=out)


def report_json(programs: List[Program], args, te_source: Path, seconds: float,
                count_disagreements: List[Program], verdict_disagreements: Dict[str, List[Program]],
                shrunk: Dict[int, str]) -> dict:
    te_side = verdicts(programs, "te")
    invariants = []
    for invariant in INVARIANTS:
        entry = {"invariant": invariant, "judged": invariant in JUDGED_ON_TE}
        violating = te_side[invariant]
        entry["violated"] = bool(violating) and entry["judged"]
        entry["programs"] = len(violating)
        if violating and entry["judged"]:
            first = min(violating, key=lambda p: (p.depth, p.index))
            entry["counterexample"] = {"length": first.depth, "reason": first.te_violations()[invariant],
                                       "scenario": multiline(first.text), "scenario_one_line": first.text,
                                       "te_steps": first.te_steps}
        invariants.append(entry)
    document = {"format": "fp8sm-te-explore/1", "te_source": str(te_source), "depth": args.depth,
                "backward_depth": args.backward_depth or None,
                "programs_file": str(args.programs) if args.programs else None,
                "search_semantics": args.search_semantics, "programs": len(programs), "seconds": round(seconds, 1),
                "invariants": invariants}
    if args.semantics:
        document["model"] = {
            "semantics": args.semantics,
            "agreeing": len(programs) - len(count_disagreements),
            "disagreements": [{"program": p.text, "minimal": shrunk.get(p.index), "te_steps": p.te_steps,
                               "model_steps": p.model_steps} for p in count_disagreements],
            "verdict_differences": {i: [p.text for p in ps] for i, ps in verdict_disagreements.items() if ps},
        }
    return document


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--te-source", type=Path, required=True)
    parser.add_argument("--explorer", default=str(HERE.parent / "build" / "explorer" / "explorer"))
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--semantics", choices=["upstream", "pr3213", "fp8sm"],
                        help="also compare each program with the model")
    parser.add_argument("--plugin", choices=["upstream", "pr3213", "fp8sm"],
                        help="run TE with fp8sm's TE plugin under this semantics (the package fp8sm installed)")
    parser.add_argument("--jobs", type=int, default=0, help="worker processes (default: the cores)")
    parser.add_argument("--timeout", type=float, default=te_workers.DEFAULT_TIMEOUT,
                        help="seconds a program may run on TE before it counts as a harness failure")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--data-inputs", action="store_true", help="the search's alphabet includes `data`")
    parser.add_argument("--backward-depth", type=int, default=0, metavar="M",
                        help="also the programs of up to M statements (M > --depth) that run a backward and hold a "
                             "Linear inside a checkpoint for each statement past --depth")
    parser.add_argument("--programs", type=Path, metavar="FILE",
                        help="run these programs (lines of `explorer --programs --json`) instead of searching")
    parser.add_argument("--first-disagreement", action="store_true",
                        help="with --semantics: stop at the first program that disagrees (the mutation score's kill)")
    parser.add_argument("--expect-violated", default=None, metavar="I1,I4,...",
                        help="exit 0 only if exactly these invariants are violated on TE")
    args = parser.parse_args(argv)
    if args.depth < 1:
        parser.error("--depth must be 1 or more")
    if args.backward_depth and args.backward_depth <= args.depth:
        parser.error("--backward-depth must be more than --depth")
    if args.backward_depth and args.programs:
        parser.error("--backward-depth searches; --programs runs a saved list: one or the other")
    if args.first_disagreement and not args.semantics:
        parser.error("--first-disagreement needs --semantics")
    args.search_semantics = args.semantics or "upstream"

    started = time.monotonic()
    try:
        te = te_conformance.load_te(args.te_source, args.plugin)
        if args.programs:
            programs = read_programs(args.programs, args.search_semantics)
            args.depth = max(p.depth for p in programs)
        else:
            programs = search_programs(args.explorer, args.depth, args.search_semantics, args.data_inputs,
                                       args.backward_depth)
        with te_workers.Workers(te, jobs=args.jobs or None, timeout=args.timeout, function=run_task) as pool:
            programs = run_on_te(pool, programs, args.semantics if args.first_disagreement else None)
        count_disagreements: List[Program] = []
        verdict_disagreements: Dict[str, List[Program]] = {i: [] for i in JUDGED_ON_TE}
        shrunk: Dict[int, str] = {}
        if args.semantics:
            checker = te_conformance.Checker(te, args.explorer, args.semantics, args.jobs or None, args.timeout)
            for p in programs:
                if not counts_agree(p):
                    count_disagreements.append(p)
                    if not args.first_disagreement:
                        shrunk[p.index] = te_conformance.shrink(checker, multiline(p.text))
                for invariant in differing_verdicts(p):
                    verdict_disagreements[invariant].append(p)
    except te_conformance.HarnessFailure as e:
        print(f"te_explore: the harness failed: {e}", file=sys.stderr)
        return 2
    seconds = time.monotonic() - started
    if args.json:
        print(json.dumps(report_json(programs, args, args.te_source, seconds, count_disagreements,
                                     verdict_disagreements, shrunk)))
    else:
        report_text(programs, args, args.te_source, seconds, count_disagreements, verdict_disagreements, shrunk,
                    sys.stdout)
    violated = {i for i, ps in verdicts(programs, "te").items() if ps and i in JUDGED_ON_TE}
    agree = not count_disagreements and not any(verdict_disagreements.values())
    if args.expect_violated is not None:
        expected = {i for i in args.expect_violated.split(",") if i}
        return 0 if violated == expected and agree else 1
    return 0 if not violated and agree else 1


if __name__ == "__main__":
    sys.exit(main())
