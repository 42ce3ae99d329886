"""The model against Transformer Engine's own code: every program of a corpus run on both.

    te_conformance.py --te-source DIR --explorer PATH [--semantics upstream|pr3213]
                      [--random N --seed S] [--length L] [--scenario FILE]...
                      [--jobs J] [--timeout T] [--list-stubs]

DIR holds the `transformer_engine` package (an unpacked wheel or a checkout). The corpora are
the catalogue (spec/catalogue), the edge scenarios (tests/scenarios) and N random programs of
`explorer random`. Each program runs on TE (te_harness, in one of J workers forked from the
process that loaded TE, which reset TE's state to what its import left after every program and
check that they did: te_workers) and on the model (`explorer run --json`, J at a time). A
program agrees when both give the same steps: the same forward and backward update counts and
the same kinds of escaped exceptions, in order. Every disagreement is shrunk to a minimal
program that still disagrees and printed with both results.

Exit status: 0 all agree, 1 some disagree, 2 the harness could not run (a stub missing or
failing, a program that left state behind or ran past T seconds, bad arguments).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import scenario  # noqa: E402
import te_stubs  # noqa: E402
import te_workers  # noqa: E402

ROOT = HERE.parent

HarnessFailure = te_workers.HarnessFailure


# ---- both sides ---------------------------------------------------------------------------------

def run_on_te(te, text: str, function=None, timeout: float = te_workers.DEFAULT_TIMEOUT) -> dict:
    """One program on TE, in a worker of its own forked now: what the caller patched in TE
    (a test's mutant) is in it. `function(te, text)` runs it (default: te_harness.run_program;
    a closure is fine here, the worker is forked with it)."""
    with te_workers.Workers(te, jobs=1, timeout=timeout, reuse=False, function=function) as pool:
        return pool.run(text)


def run_on_model(explorer: str, semantics: str, text: str) -> dict:
    return runs_on_model(explorer, semantics, [text], jobs=1)[0]


def runs_on_model(explorer: str, semantics: str, texts: Sequence[str], jobs: int) -> List[dict]:
    """`explorer run - --json` for every text, `jobs` processes at a time (no threads: the
    TE workers are forked from this process)."""
    results: List[dict] = []
    running: List[Tuple[str, subprocess.Popen]] = []

    def finish_oldest() -> None:
        text, process = running.pop(0)
        out, err = process.stdout.read(), process.stderr.read()  # what it writes to stderr is a line
        process.stdout.close()
        process.stderr.close()
        process.wait()
        if process.returncode not in (0, 1):
            raise HarnessFailure(f"explorer run failed ({process.returncode}): {err.strip()}\n{text}")
        results.append(json.loads(out))

    try:
        for text in texts:
            if len(running) >= jobs:
                finish_oldest()
            process = subprocess.Popen([explorer, "run", "-", "--json", "--semantics", semantics], text=True,
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            process.stdin.write(text)  # the explorer reads all of it before it writes anything
            process.stdin.close()
            running.append((text, process))
        while running:
            finish_oldest()
    finally:
        for _, process in running:  # after a failure: the others are not left behind
            process.kill()
            process.stdout.close()
            process.stderr.close()
            process.wait()
    return results


def comparable(result: dict) -> List[Tuple[int, int, Tuple[str, ...]]]:
    return [(s["forward_updates"], s["backward_updates"], tuple(r["kind"] for r in s["raised"]))
            for s in result["steps"]]


def made_backward_update(result: dict) -> bool:
    return any(s["backward_updates"] > 0 for s in result["steps"])


class Checker:
    """Runs programs on both sides: TE's in a pool of `jobs` workers (te_workers), the
    model's `jobs` at a time."""

    def __init__(self, te, explorer: str, semantics: str, jobs: Optional[int] = None,
                 timeout: float = te_workers.DEFAULT_TIMEOUT):
        self.explorer, self.semantics = explorer, semantics
        self.pool = te_workers.Workers(te, jobs=jobs, timeout=timeout)

    def __enter__(self) -> "Checker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.pool.close()

    def all_results(self, texts: Sequence[str]) -> List[Tuple[dict, dict]]:
        models = runs_on_model(self.explorer, self.semantics, texts, self.pool.jobs)
        return list(zip(self.pool.map(texts), models))

    def results(self, text: str) -> Tuple[dict, dict]:
        return self.all_results([text])[0]

    def disagrees(self, text: str) -> bool:
        te_result, model_result = self.results(text)
        return comparable(te_result) != comparable(model_result)

    def first_disagreeing(self, texts: Sequence[str]) -> Optional[int]:
        """The index of the first text that disagrees, run a few pools' worth at a time."""
        batch = 4 * self.pool.jobs
        for start in range(0, len(texts), batch):
            for i, (te_result, model_result) in enumerate(self.all_results(texts[start:start + batch])):
                if comparable(te_result) != comparable(model_result):
                    return start + i
        return None


def load_te(source: Path, plugin: Optional[str] = None):
    """TE from `source`, in a process quiet about the missing GPU and ready to fork workers;
    with `plugin` (a semantics), with fp8sm's TE plugin installed under it (docs/te-plugin.md),
    before the workers fork, so that every program runs on TE with the plugin."""
    warnings.simplefilter("ignore")  # torch's and TE's import-time warnings about the missing GPU
    logging.getLogger("torch").setLevel(logging.ERROR)  # and torch's deprecation notices of TE's calls
    import torch

    torch.set_num_threads(1)  # workers are forked: no thread pool may be running
    import te_loader

    te = te_loader.load(source)
    if plugin is not None:
        import fp8sm.te

        fp8sm.te.install(plugin)
    return te


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
    """Takes the first smaller program (in _candidates' order) that still disagrees, until
    none does; the candidates run in the pool, a batch at a time, with its timeout."""
    program = scenario.parse(text)
    while True:
        candidates = [c for c in _candidates(program) if _valid(c)]
        found = checker.first_disagreeing([scenario.render(c) + "\n" for c in candidates])
        if found is None:
            return scenario.render(program) + "\n"
        program = candidates[found]


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


def share_text(updated: int, total: int) -> str:
    return f", {round(100 * updated / total)} % made a backward update on TE" if total else ""


def check_corpus(checker: Checker, name: str, programs: List[Tuple[str, str]], out) -> Tuple[int, int, int]:
    """(agreed, programs, programs that made a backward update on TE)."""
    agreed = updated = 0
    results = checker.all_results([text for _, text in programs])
    for (program_name, text), (te_result, model_result) in zip(programs, results):
        updated += made_backward_update(te_result)
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
    print(f"{name}: {agreed}/{len(programs)} agree{share_text(updated, len(programs))}", file=out)
    out.flush()
    return agreed, len(programs), updated


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--te-source", type=Path, help="directory holding the transformer_engine package")
    parser.add_argument("--explorer", default=str(ROOT / "build" / "explorer" / "explorer"))
    parser.add_argument("--semantics", default="upstream", choices=["upstream", "pr3213", "fp8sm"])
    parser.add_argument("--plugin", choices=["upstream", "pr3213", "fp8sm"],
                        help="run TE with fp8sm's TE plugin under this semantics (the package fp8sm installed)")
    parser.add_argument("--random", type=int, default=1000, metavar="N", help="random programs (default 1000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--length", type=int, default=30, help="at most this many choices a random program")
    parser.add_argument("--scenario", type=Path, action="append", default=[], metavar="FILE",
                        help="compare only these scenario files (repeatable)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="J",
                        help="programs run at once on each side (default: the number of cores)")
    parser.add_argument("--timeout", type=float, default=te_workers.DEFAULT_TIMEOUT, metavar="T",
                        help=f"seconds a program may run on TE (default {te_workers.DEFAULT_TIMEOUT:g})")
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
    if args.jobs < 1 or args.timeout <= 0:
        parser.error("--jobs and --timeout: must be positive")

    started = time.monotonic()
    te = load_te(args.te_source, args.plugin)
    checker = Checker(te, args.explorer, args.semantics, args.jobs, args.timeout)
    with_plugin = f" with the fp8sm plugin under {args.plugin}" if args.plugin else ""
    print(f"TE from {te.source}{with_plugin} against `explorer run --semantics {args.semantics}`", flush=True)
    if args.scenario:
        corpora = [("given", [(str(p), p.read_text()) for p in args.scenario])]
    else:
        corpora = [("catalogue", corpus_files(ROOT / "spec" / "catalogue")),
                   ("edge scenarios", corpus_files(ROOT / "tests" / "scenarios"))]
    if args.random > 0 and not args.scenario:
        corpora.append((f"random (seed {args.seed}, length {args.length})",
                        random_corpus(args.explorer, args.random, args.seed, args.length)))
    try:
        with checker:
            totals = [check_corpus(checker, name, programs, sys.stdout) for name, programs in corpora]
    except HarnessFailure as e:
        print(f"te_conformance: the harness failed: {e}", file=sys.stderr)
        return 2
    agreed, total, updated = (sum(column) for column in zip(*totals))
    print(f"all: {agreed}/{total} agree{share_text(updated, total)} ({time.monotonic() - started:.0f} s)")
    return 0 if agreed == total else 1


if __name__ == "__main__":
    sys.exit(main())
