"""One-edit mutants of TE's state code: a fixture of edits, and a TE tree with one applied.

A conformance check is only as good as what it would notice. A *mutant* is TE's own source with
one small edit (a FIFO popped at the wrong end, a condition dropped, a flag not cleared); a
check that still agrees with the model on a mutant that changes what TE does has a blind spot.
The mutants live in conformance/mutants/te-V.json, each described by the short token it replaces
inside one def or class of one file, so this repository holds no TE code beyond those tokens:

    {"id": "fifo-pop-end", "file": "transformer_engine/pytorch/distributed.py",
     "scope": "activation_recompute_forward.__enter__", "token": "pop(0)", "replacement": "pop()",
     "what": "...", "equivalent": null | "why no program can tell", "needs": [], "shows": "..."}

`needs` names what a program must hold before the mutant can show at all: "data" (an input that
does not require grad) or "two-tensors" (a node that saves two tensors of different shapes).
`equivalent` says why no program of the scenario language can tell the mutant from TE, where
that holds (under the harness's stubs: no number is ever computed or compared). `witness` is a
program on which TE and the mutant give different counts or exception kinds: the proof that a
mutant is not equivalent (none for the few that show only to an observer of TE's calls and
globals, te_observe: the amax registry, which stash entry a pop takes; `shows` says how).

    te_mutants.py --list
    te_mutants.py --apply ID --te-source DIR --into NEWDIR    # prints the mutated tree's path
    te_mutants.py --compare ID [--program FILE]               # a program (the witness) on TE and on ID
    te_mutants.py --check-witnesses [--only ID]...            # every witness still shows
    te_mutants.py --find-witness ID                           # a corpus program that shows ID, shrunk
    te_mutants.py --score-with-conformance [--random N --seed S] [--only ID]... [--json FILE]

The last runs today's conformance corpora (te_conformance.py's catalogue, edge scenarios and
random programs, compared as it compares them) against every mutant and prints which corpus
kills it. From Python: load_mutants(), mutant(id), mutated_tree(m, te_source) (a context
manager giving the tree), build_tree(m, te_source, into), apply_to_source(m, text), and
compare(m, text) (TE's and the mutant's results of one program).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TE_VERSION = "2.20.2"
FIXTURE = HERE / "mutants" / f"te-{TE_VERSION}.json"
DEFAULT_TE_SOURCE = ROOT / "build" / "te-src" / TE_VERSION
NEEDS = {"data", "two-tensors"}


class MutantError(Exception):
    """A mutant that does not apply to the given TE: the fixture has drifted from that version
    (the token is gone, or no longer unique in its scope), or the edit does not compile."""


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str          # relative to the tree's root, e.g. transformer_engine/pytorch/distributed.py
    scope: str         # the def or class holding the edit: a dotted path, or its tail
    token: str         # what is replaced: must occur exactly once in the scope
    replacement: str
    what: str          # the behaviour the edit gives TE
    equivalent: Optional[str] = None  # why no program can tell it from TE, if none can
    needs: Tuple[str, ...] = ()       # what a program must hold before it can show
    shows: str = ""                   # how a program sees it (for the non-equivalent ones)
    witness: Optional[str] = None     # a program on which TE and the mutant differ (counts, kinds)

    @property
    def module(self) -> str:
        return self.file[:-3].replace("/", ".")


# ---- the fixture --------------------------------------------------------------------------------

_FIELDS = {"id", "file", "scope", "token", "replacement", "what", "equivalent", "needs", "shows", "witness"}


def load_mutants(path: Path = FIXTURE) -> List[Mutant]:
    """The fixture's mutants, checked for form (not yet against a TE tree: see apply_to_source)."""
    data = json.loads(Path(path).read_text())
    mutants = []
    for entry in data["mutants"]:
        unknown = set(entry) - _FIELDS
        if unknown:
            raise MutantError(f"{path}: mutant {entry.get('id')}: unknown fields {sorted(unknown)}")
        m = Mutant(**{**entry, "needs": tuple(entry.get("needs", ()))})
        _check_form(m, path)
        mutants.append(m)
    ids = [m.id for m in mutants]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise MutantError(f"{path}: mutant ids used twice: {duplicates}")
    return mutants


def _check_form(m: Mutant, path: Path) -> None:
    where = f"{path}: mutant {m.id}"
    if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", m.id):
        raise MutantError(f"{where}: an id is lower-case words joined by '-'")
    if not m.file.startswith("transformer_engine/") or not m.file.endswith(".py"):
        raise MutantError(f"{where}: file must be a .py path under transformer_engine/")
    for name, text in (("token", m.token), ("replacement", m.replacement)):
        if "\n" in text:
            raise MutantError(f"{where}: the {name} spans lines (a mutant edits one line)")
    if not m.token.strip():
        raise MutantError(f"{where}: empty token")
    if m.token == m.replacement:
        raise MutantError(f"{where}: the replacement is the token itself")
    if not set(m.needs) <= NEEDS:
        raise MutantError(f"{where}: needs must be among {sorted(NEEDS)}")
    if m.equivalent is not None and (m.needs or m.witness):
        raise MutantError(f"{where}: an equivalent mutant needs nothing and has no witness")


def mutant(mutant_id: str, path: Path = FIXTURE) -> Mutant:
    for m in load_mutants(path):
        if m.id == mutant_id:
            return m
    raise KeyError(f"no mutant {mutant_id!r} in {path}")


# ---- one edit -----------------------------------------------------------------------------------

def _scope_lines(tree: ast.Module, scope: str, file: str) -> Tuple[int, int]:
    """First and last line (1-based) of the one def/class named by `scope`: its dotted path from
    the module (Class.method, function.inner), or a tail of that path."""
    found = []

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                path = f"{prefix}{child.name}"
                if path == scope or path.endswith("." + scope):
                    found.append((path, child.lineno, child.end_lineno))
                walk(child, path + ".")
            else:
                walk(child, prefix)

    walk(tree, "")
    if len(found) != 1:
        what = "no def or class" if not found else f"{len(found)} ({', '.join(p for p, _, _ in found)})"
        raise MutantError(f"{file}: scope {scope!r} names {what}; the fixture has drifted from this TE")
    return found[0][1], found[0][2]


def _blank_comments_and_docstrings(text: str) -> str:
    """The text with comments and docstring-like strings (a string that is a whole statement)
    turned into blanks, offsets kept: a token is looked for in code only."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    chars = list(text)

    def blank(start, end):
        a = starts[start[0] - 1] + start[1]
        b = starts[end[0] - 1] + end[1]
        for i in range(a, b):
            if chars[i] != "\n":
                chars[i] = " "

    statement_start = {tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.NL, tokenize.ENCODING}
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    previous = tokenize.NEWLINE
    for i, tok in enumerate(tokens):
        if tok.type == tokenize.COMMENT:
            blank(tok.start, tok.end)
        elif tok.type == tokenize.STRING and previous in statement_start:
            following = next((t.type for t in tokens[i + 1:] if t.type not in (tokenize.COMMENT, tokenize.NL)), None)
            if following in (tokenize.NEWLINE, tokenize.ENDMARKER):
                blank(tok.start, tok.end)
        if tok.type not in (tokenize.COMMENT, tokenize.NL):
            previous = tok.type
    return "".join(chars)


def _occurrences(code: str, token: str, start: int, end: int) -> List[int]:
    """Offsets of `token` in code[start:end] that are not part of a longer name."""
    ident = re.compile(r"[A-Za-z0-9_]")
    found = []
    at = code.find(token, start, end)
    while at != -1:
        before_ok = not (ident.match(token[0]) and at > 0 and ident.match(code[at - 1]))
        after = at + len(token)
        after_ok = not (ident.match(token[-1]) and after < len(code) and ident.match(code[after]))
        if before_ok and after_ok:
            found.append(at)
        at = code.find(token, at + 1, end)
    return found


def apply_to_source(m: Mutant, text: str) -> str:
    """`text` (the source of m.file) with m's one edit; MutantError if the token does not occur
    exactly once in its scope, or if the edited file does not compile."""
    tree = ast.parse(text, filename=m.file)
    first, last = _scope_lines(tree, m.scope, m.file)
    lines = text.splitlines(keepends=True)
    start = sum(len(line) for line in lines[:first - 1])
    end = start + sum(len(line) for line in lines[first - 1:last])
    found = _occurrences(_blank_comments_and_docstrings(text), m.token, start, end)
    if len(found) != 1:
        raise MutantError(f"mutant {m.id}: {m.token!r} occurs {len(found)} times in {m.scope} of {m.file} "
                          "(once expected): the fixture has drifted from this TE")
    at = found[0]
    edited = text[:at] + m.replacement + text[at + len(m.token):]
    try:
        compile(edited, m.file, "exec")
    except SyntaxError as e:
        raise MutantError(f"mutant {m.id}: {m.file} no longer compiles: {e}") from None
    return edited


def edited_line(m: Mutant, text: str) -> Tuple[int, str, str]:
    """(line number, line before, line after): what a mutant does, for a reader."""
    edited = apply_to_source(m, text)
    before, after = text.splitlines(), edited.splitlines()
    for number, (a, b) in enumerate(zip(before, after), start=1):
        if a != b:
            return number, a, b
    raise MutantError(f"mutant {m.id}: the edit changed nothing")


# ---- a mutated tree -----------------------------------------------------------------------------

def build_tree(m: Mutant, te_source: Path, into: Path) -> Path:
    """A TE tree at `into` (created; must not exist) that is te_source with m applied.

    Only the directories on the way to the edited file are real; every other entry is a symlink
    into te_source, so a tree costs a few hundred links, not a copy. The bytecode caches next to
    the edited file are linked too, all but the edited module's own, so Python recompiles that
    one alone and never writes into te_source's caches."""
    te_source, into = Path(te_source).resolve(), Path(into)
    original = te_source / m.file
    if not original.is_file():
        raise MutantError(f"mutant {m.id}: {original} does not exist (not a TE {TE_VERSION} tree?)")
    edited = apply_to_source(m, original.read_text())
    into.mkdir(parents=True)
    parts = Path(m.file).parts
    source_dir, target_dir = te_source, into
    for depth, part in enumerate(parts):
        for entry in sorted(source_dir.iterdir()):
            if entry.name == part:
                continue
            if entry.name == "__pycache__":
                edited_here = depth == len(parts) - 1
                _link_caches(entry, target_dir / "__pycache__", skip=Path(m.file).stem if edited_here else None)
            else:
                (target_dir / entry.name).symlink_to(entry)
        if depth < len(parts) - 1:
            source_dir, target_dir = source_dir / part, target_dir / part
            target_dir.mkdir()
    (target_dir / parts[-1]).write_text(edited)
    return into


def _link_caches(source: Path, target: Path, skip: Optional[str]) -> None:
    target.mkdir()
    for pyc in source.iterdir():
        if skip is None or pyc.name.split(".")[0] != skip:
            (target / pyc.name).symlink_to(pyc)


@contextlib.contextmanager
def mutated_tree(m: Mutant, te_source: Path = DEFAULT_TE_SOURCE) -> Iterator[Path]:
    """A temporary TE tree with m applied; removed when the block ends."""
    with tempfile.TemporaryDirectory(prefix=f"te-mutant-{m.id}-") as scratch:
        yield build_tree(m, te_source, Path(scratch) / "te")


# ---- programs on TE and on a mutant: witnesses --------------------------------------------------

class TEServer:
    """A process that loaded the TE at `tree` and runs programs sent to it, each in a child
    forked from it as te_conformance runs them (TE loads once per process, in seconds; a
    program then costs milliseconds)."""

    def __init__(self, tree: Path):
        self.tree = tree
        self.process = subprocess.Popen([sys.executable, str(Path(__file__)), "--te-serve", str(tree)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def run(self, text: str) -> dict:
        """te_harness's result: steps with counts and raised exceptions."""
        self.process.stdin.write(json.dumps(text) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise MutantError(f"the TE process of {self.tree} died")
        result = json.loads(line)
        if "harness_failure" in result:
            raise MutantError(f"the harness failed on {self.tree}: {result['harness_failure']}")
        return result

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _answers():
    """The standard output, kept for the answers of a child process; whatever else writes to it
    (an import that prints) goes to the standard error instead of into an answer."""
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    return answers


def _serve(tree: Path) -> None:
    import te_conformance

    answers = _answers()
    te = te_conformance.load_te(tree)
    for line in sys.stdin:
        try:
            result = te_conformance.run_on_te(te, json.loads(line))
        except te_conformance.HarnessFailure as e:
            result = {"harness_failure": str(e).splitlines()[0]}
        print(json.dumps(result), file=answers, flush=True)


class _Against:
    """te_conformance's shrinking, with TE as it is in the model's place: a program
    'disagrees' when TE and the mutant give different counts or exception kinds."""

    def __init__(self, original: TEServer, mutated: TEServer):
        self.original, self.mutated = original, mutated

    def results(self, text: str) -> Tuple[dict, dict]:
        return self.original.run(text), self.mutated.run(text)

    def disagrees(self, text: str) -> bool:
        import te_conformance

        a, b = self.results(text)
        return te_conformance.comparable(a) != te_conformance.comparable(b)


def one_line(text: str) -> str:
    """A program on one line, as the scenario language allows (`;` between statements)."""
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    out = lines[0] if lines else ""
    for before, line in zip(lines, lines[1:]):
        out += (" " if before.endswith("{") or line == "}" else "; ") + line
    return out


def compare(m: Mutant, text: str, te_source: Path = DEFAULT_TE_SOURCE) -> Tuple[dict, dict]:
    """(TE's result, the mutant's result) of one program."""
    with mutated_tree(m, te_source) as tree, TEServer(te_source) as original, TEServer(tree) as mutated:
        return original.run(text), mutated.run(text)


def find_witness(m: Mutant, programs: List[Tuple[str, str]], te_source: Path = DEFAULT_TE_SOURCE,
                 original: Optional[TEServer] = None) -> Optional[Tuple[str, str]]:
    """(name, minimal program) from the first of `programs` on which the mutant shows, shrunk
    as te_conformance shrinks a disagreement; None when none shows."""
    import te_conformance

    with contextlib.ExitStack() as stack:
        tree = stack.enter_context(mutated_tree(m, te_source))
        original = original or stack.enter_context(TEServer(te_source))
        against = _Against(original, stack.enter_context(TEServer(tree)))
        for name, text in programs:
            if against.disagrees(text):
                return name, one_line(te_conformance.shrink(against, text))
    return None


def check_witnesses(mutants: List[Mutant], te_source: Path = DEFAULT_TE_SOURCE, out=sys.stdout) -> List[str]:
    """Runs each mutant's witness on TE and on the mutant; the ids whose witness does not show.
    A witness of a mutant that `needs` what a harness may not have (an older one lacked `data`
    and two-tensor nodes) is reported as waiting for it rather than failing."""
    import te_conformance

    failed = []
    with TEServer(te_source) as original:
        for m in mutants:
            if m.witness is None:
                note = "equivalent" if m.equivalent else "no witness: " + m.shows
                print(f"{m.id:<44} -          ({note})", file=out, flush=True)
                continue
            try:
                with mutated_tree(m, te_source) as tree, TEServer(tree) as mutated:
                    a, b = original.run(m.witness), mutated.run(m.witness)
                shows = te_conformance.comparable(a) != te_conformance.comparable(b)
                detail = f"TE {te_conformance.describe(a)}, mutant {te_conformance.describe(b)}"
            except MutantError as e:
                shows, detail = False, str(e).splitlines()[0][:200]
            verdict = "shows" if shows else ("waits" if m.needs else "NO")
            if verdict == "NO":
                failed.append(m.id)
            needs = f" (needs {', '.join(m.needs)})" if m.needs else ""
            print(f"{m.id:<44} {verdict:<10} {detail}{needs}", file=out, flush=True)
    return failed


# ---- the score of today's conformance check ----------------------------------------------------

def _corpora(explorer: str, random: int, seed: int, length: int) -> List[Tuple[str, List[Tuple[str, str]]]]:
    """te_conformance.py's corpora, in its order and with its names."""
    import te_conformance

    corpora = [("catalogue", te_conformance.corpus_files(ROOT / "spec" / "catalogue")),
               ("edge scenarios", te_conformance.corpus_files(ROOT / "tests" / "scenarios"))]
    if random > 0:
        corpora.append(("random", te_conformance.random_corpus(explorer, random, seed, length)))
    return corpora


def _model_results(explorer: str, corpora) -> Dict[str, list]:
    """The model's side once for all mutants: it does not depend on TE."""
    import te_conformance

    return {f"{corpus}/{name}": te_conformance.comparable(te_conformance.run_on_model(explorer, "upstream", text))
            for corpus, programs in corpora for name, text in programs}


def _te_side(te_source: Path, work: Path) -> dict:
    """Runs in a child process (TE loads once per process): every program of the corpora in
    `work`/programs.json on the TE at te_source, compared with the model's results as
    te_conformance compares them. Per corpus: programs, disagreements, the first one's name."""
    import te_conformance

    programs = json.loads((work / "programs.json").read_text())
    te = te_conformance.load_te(te_source)
    summary: Dict[str, dict] = {}
    for corpus, entries in programs["corpora"]:
        row = summary.setdefault(corpus, {"programs": 0, "disagree": 0, "first": None, "harness_failures": 0,
                                          "first_failure": None})
        for name, text in entries:
            row["programs"] += 1
            try:
                te_result = te_conformance.comparable(te_conformance.run_on_te(te, text))
            except te_conformance.HarnessFailure as e:
                row["harness_failures"] += 1
                row["first_failure"] = row["first_failure"] or f"{name}: {str(e).splitlines()[0]}"
                continue
            model = [tuple(step[:2]) + (tuple(step[2]),) for step in programs["model"][f"{corpus}/{name}"]]
            if te_result != model:
                row["disagree"] += 1
                row["first"] = row["first"] or name
    return summary


def _verdict(result: dict) -> Tuple[str, str]:
    """(verdict, by which corpora) of one run: killed when some program disagrees."""
    if "timeout" in result:
        return "hang", f"no result within {result['timeout']} s"
    if "crash" in result:
        return "crash", result["crash"]
    corpora = result["corpora"]
    killers = [f"{c} {r['disagree']}/{r['programs']}" for c, r in corpora.items() if r["disagree"]]
    failures = [f"{c}: {r['harness_failures']} harness failures ({r['first_failure']})"
                for c, r in corpora.items() if r["harness_failures"]]
    if killers:
        return "killed", "; ".join(killers + failures)
    if failures:
        return "crash", "; ".join(failures)
    return "survived", ""


def score(mutants: List[Mutant], te_source: Path, explorer: str, random: int, seed: int, length: int,
          timeout: int, out=sys.stdout) -> List[dict]:
    """Every mutant through today's corpora, one child process each (at low priority, under a
    timeout); first TE as it is, which must agree everywhere for the score to mean anything."""
    corpora = _corpora(explorer, random, seed, length)
    rows = []
    with tempfile.TemporaryDirectory(prefix="te-mutant-score-") as scratch:
        work = Path(scratch)
        (work / "programs.json").write_text(json.dumps({"corpora": corpora, "model": _model_results(explorer, corpora)}))
        for m in [None] + mutants:
            started = time.monotonic()
            if m is None:
                result = _run_te_side(te_source, work, timeout)
            else:
                with mutated_tree(m, te_source) as tree:
                    result = _run_te_side(tree, work, timeout)
            verdict, by = _verdict(result)
            if m is None and verdict == "survived":
                verdict = "agrees"
            row = {"id": m.id if m else "(TE as it is)", "verdict": verdict, "by": by,
                   "equivalent": bool(m and m.equivalent), "needs": list(m.needs) if m else [],
                   "seconds": round(time.monotonic() - started), "corpora": result.get("corpora")}
            rows.append(row)
            print(f"{row['id']:<44} {verdict:<9} {row['seconds']:>4} s  {by}", file=out, flush=True)
            if m is None and verdict != "agrees":
                raise SystemExit("te_mutants: TE as it is does not agree with the model on these corpora; "
                                 "no score can be given")
    return rows


def _run_te_side(tree: Path, work: Path, timeout: int) -> dict:
    command = ["nice", "-n", "10", "timeout", str(timeout), sys.executable, str(Path(__file__)),
               "--te-side", str(tree), "--work", str(work)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode == 124:
        return {"timeout": timeout}
    if done.returncode != 0:
        return {"crash": f"exit {done.returncode}: {(done.stderr.strip().splitlines() or [''])[-1][:300]}"}
    return {"corpora": json.loads(done.stdout)}


def print_table(rows: List[dict], mutants: List[Mutant], out=sys.stdout) -> None:
    by_id = {m.id: m for m in mutants}
    counted = [r for r in rows if r["id"] in by_id and not by_id[r["id"]].equivalent]
    killed = [r for r in counted if r["verdict"] == "killed"]
    print(f"\nscore: {len(killed)}/{len(counted)} non-equivalent mutants killed "
          f"({sum(1 for m in mutants if m.equivalent)} equivalent ones not counted)", file=out)
    survivors = [r["id"] for r in counted if r["verdict"] != "killed"]
    if survivors:
        print("not killed: " + ", ".join(survivors), file=out)


# ---- command line -------------------------------------------------------------------------------

def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fixture", type=Path, default=FIXTURE)
    parser.add_argument("--te-source", type=Path, default=DEFAULT_TE_SOURCE,
                        help="the TE tree the mutants apply to (default: the pinned wheel under build/)")
    parser.add_argument("--list", action="store_true", help="print the mutants and exit")
    parser.add_argument("--apply", metavar="ID", help="build the tree of mutant ID at --into and print its path")
    parser.add_argument("--into", type=Path, help="with --apply: the directory to create")
    parser.add_argument("--score-with-conformance", action="store_true",
                        help="run today's conformance corpora against every mutant")
    parser.add_argument("--only", action="append", default=[], metavar="ID", help="score only these mutants")
    parser.add_argument("--explorer", default=str(ROOT / "build" / "explorer" / "explorer"))
    parser.add_argument("--random", type=int, default=300, metavar="N")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--length", type=int, default=30)
    parser.add_argument("--timeout", type=int, default=600, help="seconds per mutant before it counts as a hang")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the score's rows to FILE")
    parser.add_argument("--compare", metavar="ID",
                        help="run --program (default: the mutant's witness) on TE and on mutant ID, print both")
    parser.add_argument("--program", metavar="FILE", help="with --compare: a scenario file, or - for the standard input")
    parser.add_argument("--check-witnesses", action="store_true",
                        help="run every witness (or those of --only) on TE and on its mutant")
    parser.add_argument("--find-witness", metavar="ID",
                        help="the first corpus program on which mutant ID shows, shrunk")
    parser.add_argument("--te-side", type=Path, help=argparse.SUPPRESS)  # the child of a score run
    parser.add_argument("--te-serve", type=Path, help=argparse.SUPPRESS)  # a TEServer
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.te_side or args.te_serve:
        sys.path.insert(0, str(HERE))
        if args.te_serve:
            _serve(args.te_serve)
        else:
            answers = _answers()
            json.dump(_te_side(args.te_side, args.work), answers)
            answers.flush()
        return 0
    sys.path.insert(0, str(HERE))
    mutants = load_mutants(args.fixture)
    if args.list:
        for m in mutants:
            mark = " [equivalent]" if m.equivalent else (f" [needs {', '.join(m.needs)}]" if m.needs else "")
            print(f"{m.id}{mark}\n    {m.file} {m.scope}: {m.token!r} -> {m.replacement!r}\n    {m.what}")
        return 0
    if args.apply:
        if args.into is None:
            parser.error("--apply needs --into")
        print(build_tree(mutant(args.apply, args.fixture), args.te_source, args.into))
        return 0
    unknown = set(args.only) - {m.id for m in mutants}
    if unknown:
        parser.error(f"--only: no mutants {sorted(unknown)}")
    chosen = [m for m in mutants if not args.only or m.id in args.only]
    if args.compare:
        import te_conformance

        m = mutant(args.compare, args.fixture)
        if args.program is None and m.witness is None:
            parser.error(f"--compare: {m.id} has no witness; give --program")
        text = m.witness if args.program is None else (
            sys.stdin.read() if args.program == "-" else Path(args.program).read_text())
        original, mutated = compare(m, text, args.te_source)
        for name, result in (("TE", original), (args.compare, mutated)):
            print(f"{name + ':':<{len(args.compare) + 2}} {te_conformance.describe(result)}")
        differs = te_conformance.comparable(original) != te_conformance.comparable(mutated)
        print("the mutant shows" if differs else "no difference in counts or exception kinds")
        return 1 if differs else 0
    if args.check_witnesses:
        return 1 if check_witnesses(chosen, args.te_source) else 0
    if args.find_witness:
        programs = [(f"{corpus}: {name}", text) for corpus, entries in
                    _corpora(args.explorer, args.random, args.seed, args.length) for name, text in entries]
        found = find_witness(mutant(args.find_witness, args.fixture), programs, args.te_source)
        print(f"{found[0]}\n{found[1]}" if found else "no program of the corpora shows it")
        return 0 if found else 1
    if args.score_with_conformance:
        rows = score(chosen, args.te_source, args.explorer, args.random, args.seed, args.length, args.timeout)
        print_table(rows, chosen)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1) + "\n")
        return 0
    parser.error("nothing to do: --list, --apply or --score-with-conformance")
    return 2


if __name__ == "__main__":
    sys.exit(main())
