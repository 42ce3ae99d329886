"""The model against Transformer Engine's own code: every program of a corpus run on both.

    te_conformance.py --te-source DIR --explorer PATH [--semantics upstream|pr3213]
                      [--random N --seed S] [--length L] [--scenario FILE]... [--list-stubs]

DIR holds the `transformer_engine` package (an unpacked wheel or a checkout). The corpora are
the catalogue (spec/catalogue), the edge scenarios (tests/scenarios) and N random programs of
`explorer random`. Each program runs on TE (te_harness, in a child process forked from one that
loaded TE, so every program starts from TE's import-time state) and on the model (`explorer run
--json`). A program agrees when both give the same steps: the same forward and backward update
counts and the same kinds of escaped exceptions, in order. Every disagreement is shrunk to a
minimal program that still disagrees and printed with both results.

Exit status: 0 all agree, 1 some disagree, 2 the harness could not run (a stub missing, bad
arguments).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path
from typing import List, Optional, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import scenario  # noqa: E402
import te_stubs  # noqa: E402

ROOT = HERE.parent


class HarnessFailure(Exception):
    pass


# ---- both sides ---------------------------------------------------------------------------------

def run_on_te(te, text: str, function=None) -> dict:
    """The program on TE, in a forked child: TE's globals (the FIFO, the region flags, the
    quantization state) start as TE's import left them, for every program. `function(te, text)`
    runs it (default: te_harness.run_program)."""
    import te_harness

    function = function or te_harness.run_program

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read_end)
        try:
            result = function(te, text)
        except BaseException as e:  # noqa: BLE001  (reported to the parent, which stops)
            result = {"harness_failure": f"{type(e).__name__}: {e}\n{traceback.format_exc()}"}
        with os.fdopen(write_end, "w") as out:
            json.dump(result, out)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if status != 0 or not data:
        raise HarnessFailure(f"the child running the program on TE died (status {status}):\n{text}")
    result = json.loads(data)
    if "harness_failure" in result:
        raise HarnessFailure(f"{result['harness_failure']}\nwhile running:\n{text}")
    return result


def run_on_model(explorer: str, semantics: str, text: str) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".scn", delete=False) as f:
        f.write(text)
        path = f.name
    try:
        done = subprocess.run([explorer, "run", path, "--json", "--semantics", semantics],
                              capture_output=True, text=True)
    finally:
        os.unlink(path)
    if done.returncode not in (0, 1):
        raise HarnessFailure(f"explorer run failed ({done.returncode}): {done.stderr.strip()}\n{text}")
    return json.loads(done.stdout)


def comparable(result: dict) -> List[Tuple[int, int, Tuple[str, ...]]]:
    return [(s["forward_updates"], s["backward_updates"], tuple(r["kind"] for r in s["raised"]))
            for s in result["steps"]]


class Checker:
    def __init__(self, te, explorer: str, semantics: str):
        self.te, self.explorer, self.semantics = te, explorer, semantics

    def results(self, text: str) -> Tuple[dict, dict]:
        return run_on_te(self.te, text), run_on_model(self.explorer, self.semantics, text)

    def disagrees(self, text: str) -> bool:
        te_result, model_result = self.results(text)
        return comparable(te_result) != comparable(model_result)


def load_te(source: Path):
    """TE from `source`, in a process quiet about the missing GPU and ready to fork per program."""
    warnings.simplefilter("ignore")  # torch's and TE's import-time warnings about the missing GPU
    logging.getLogger("torch").setLevel(logging.ERROR)  # and torch's deprecation notices of TE's calls
    import torch

    torch.set_num_threads(1)  # children are forked: no thread pool may be running
    import te_loader

    return te_loader.load(source)


# ---- shrinking ----------------------------------------------------------------------------------

def _candidates(program: List[scenario.Statement]):
    """Programs one edit smaller: a statement (or a whole block) removed, or a block replaced
    by its body; the edits inside blocks too."""
    for i, s in enumerate(program):
        yield program[:i] + program[i + 1:]
        if isinstance(s, scenario.Block):
            yield program[:i] + s.body + program[i + 1:]
            for smaller in _candidates(s.body):
                yield program[:i] + [scenario.Block(s.op, s.mode, smaller)] + program[i + 1:]


def _valid(program: List[scenario.Statement]) -> bool:
    """What the parser accepts: a tape's backward after its save (in program order)."""
    saved = set()

    def walk(statements) -> bool:
        for s in statements:
            if isinstance(s, scenario.Block):
                if not walk(s.body):
                    return False
            elif s.op == "save":
                saved.add(s.name)
            elif s.op == "backward" and s.name is not None and s.name not in saved:
                return False
        return True

    return walk(program)


def shrink(checker: Checker, text: str) -> str:
    program = scenario.parse(text)
    shrunk = True
    while shrunk:
        shrunk = False
        for candidate in _candidates(program):
            if not _valid(candidate):
                continue
            if checker.disagrees(scenario.render(candidate) + "\n"):
                program, shrunk = candidate, True
                break
    return scenario.render(program) + "\n"


# ---- corpora ------------------------------------------------------------------------------------

def corpus_files(directory: Path) -> List[Tuple[str, str]]:
    return [(p.name, p.read_text()) for p in sorted(directory.glob("*.scn"))]


def random_corpus(explorer: str, count: int, seed: int, length: int) -> List[Tuple[str, str]]:
    done = subprocess.run([explorer, "random", "--seed", str(seed), "--count", str(count), "--length", str(length)],
                          capture_output=True, text=True, check=True)
    programs: List[Tuple[str, str]] = []
    for line in done.stdout.splitlines(keepends=True):
        if line.startswith("# program "):
            programs.append((line[2:].strip(), ""))
        else:
            name, text = programs[-1]
            programs[-1] = (name, text + line)
    return programs


def describe(result: dict) -> str:
    steps = []
    for s in result["steps"]:
        raised = ", ".join(r["kind"] for r in s["raised"])
        steps.append(f"{s['forward_updates']}/{s['backward_updates']}" + (f" raised {raised}" if raised else ""))
    return "; ".join(steps) if steps else "(no step)"


def check_corpus(checker: Checker, name: str, programs: List[Tuple[str, str]], out) -> Tuple[int, int]:
    agreed = 0
    for program_name, text in programs:
        te_result, model_result = checker.results(text)
        if comparable(te_result) == comparable(model_result):
            agreed += 1
            continue
        minimal = shrink(checker, text)
        te_min, model_min = checker.results(minimal)
        print(f"DISAGREE {name}: {program_name}", file=out)
        print("  minimal program:", file=out)
        for line in minimal.splitlines():
            print(f"    {line}", file=out)
        print(f"  TE:    {describe(te_min)}", file=out)
        for step in te_min["steps"]:
            for r in step["raised"]:
                print(f"         {r['kind']}: {r['message'][:200]}", file=out)
        print(f"  model: {describe(model_min)}", file=out)
        out.flush()
    print(f"{name}: {agreed}/{len(programs)} agree", file=out)
    out.flush()
    return agreed, len(programs)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--te-source", type=Path, help="directory holding the transformer_engine package")
    parser.add_argument("--explorer", default=str(ROOT / "build" / "explorer" / "explorer"))
    parser.add_argument("--semantics", default="upstream", choices=["upstream", "pr3213"])
    parser.add_argument("--random", type=int, default=1000, metavar="N", help="random programs (default 1000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--length", type=int, default=30, help="at most this many choices a random program")
    parser.add_argument("--scenario", type=Path, action="append", default=[], metavar="FILE",
                        help="compare only these scenario files (repeatable)")
    parser.add_argument("--list-stubs", action="store_true", help="print what is stubbed and why, then exit")
    args = parser.parse_args(argv)

    if args.list_stubs:
        for name, why in {**te_stubs.STUBS, **te_stubs.OPAQUE_MODULES}.items():
            print(f"{name}\n    {why}")
        return 0
    if args.te_source is None:
        parser.error("--te-source is required")
    if args.random < 0:
        parser.error("--random: must be 0 or more")

    started = time.monotonic()
    te = load_te(args.te_source)
    checker = Checker(te, args.explorer, args.semantics)
    print(f"TE from {te.source} against `explorer run --semantics {args.semantics}`", flush=True)
    if args.scenario:
        corpora = [("given", [(str(p), p.read_text()) for p in args.scenario])]
    else:
        corpora = [("catalogue", corpus_files(ROOT / "spec" / "catalogue")),
                   ("edge scenarios", corpus_files(ROOT / "tests" / "scenarios"))]
    if args.random > 0 and not args.scenario:
        corpora.append((f"random (seed {args.seed}, length {args.length})",
                        random_corpus(args.explorer, args.random, args.seed, args.length)))
    try:
        totals = [check_corpus(checker, name, programs, sys.stdout) for name, programs in corpora]
    except HarnessFailure as e:
        print(f"te_conformance: the harness failed: {e}", file=sys.stderr)
        return 2
    agreed = sum(a for a, _ in totals)
    total = sum(n for _, n in totals)
    print(f"all: {agreed}/{total} agree ({time.monotonic() - started:.0f} s)")
    return 0 if agreed == total else 1


if __name__ == "__main__":
    sys.exit(main())
