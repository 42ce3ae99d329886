"""The scenario language (docs/scenarios.md), read into a tree for the harness.

The harness reads what `explorer show` and `explorer random` print; the explorer's own parser
has already checked it, so this reader only has to be right on well-formed text. It still
refuses what it does not know, with the line, so a drift between the two is seen at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Optional, Union

BLOCKS = {
    ("autocast", "on"), ("autocast", "off"),
    ("checkpoint", "reentrant"), ("checkpoint", "nonreentrant"),
    ("no_grad",), ("try",),
}


@dataclass
class Simple:
    op: str                      # linear, raise, recompute_uncaptured, save, backward, step, data
    name: Optional[str] = None   # module, raise mode, tape
    retain: bool = False


@dataclass
class Block:
    op: str                      # autocast, checkpoint, no_grad, try
    mode: Optional[str] = None   # on/off, reentrant/nonreentrant
    body: List["Statement"] = field(default_factory=list)


Statement = Union[Simple, Block]


class ScenarioError(ValueError):
    pass


_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[{};\n]")


def _tokens(text: str):
    for line_no, line in enumerate(text.split("\n"), start=1):
        line = line.split("#", 1)[0]
        for match in _TOKEN.finditer(line):
            yield line_no, match.group(0)
        rest = _TOKEN.sub("", line).strip()
        if rest:
            raise ScenarioError(f"line {line_no}: unexpected {rest!r}")
        yield line_no, "\n"


def parse(text: str) -> List[Statement]:
    """The statements of a program; `step` stays a statement (see steps())."""
    top: List[Statement] = []
    stack: List[List[Statement]] = [top]
    words: List[str] = []
    line = 0

    def flush():
        if not words:
            return
        head, args = words[0], words[1:]
        if head == "linear" and len(args) == 1:
            stack[-1].append(Simple("linear", args[0]))
        elif head == "raise" and len(args) == 1 and args[0] in ("always", "original", "recompute"):
            stack[-1].append(Simple("raise", args[0]))
        elif head in ("recompute_uncaptured", "step", "data") and not args:
            stack[-1].append(Simple(head))
        elif head == "save" and len(args) == 1:
            stack[-1].append(Simple("save", args[0]))
        elif head == "backward" and len(args) <= 2:
            retain = bool(args) and args[-1] == "retain"
            names = args[:-1] if retain else args
            if len(names) > 1:
                raise ScenarioError(f"line {line}: bad backward {' '.join(words)!r}")
            stack[-1].append(Simple("backward", names[0] if names else None, retain))
        else:
            raise ScenarioError(f"line {line}: unknown statement {' '.join(words)!r}")
        words.clear()

    for line, token in _tokens(text):
        if token == "{":
            if tuple(words) not in BLOCKS:
                raise ScenarioError(f"line {line}: unknown block {' '.join(words)!r}")
            block = Block(words[0], words[1] if len(words) > 1 else None)
            words.clear()
            stack[-1].append(block)
            stack.append(block.body)
        elif token == "}":
            flush()
            if len(stack) == 1:
                raise ScenarioError(f"line {line}: '}}' without a block")
            stack.pop()
        elif token == "\n" and tuple(words) in BLOCKS:
            pass  # a block's '{' may stand on a later line than its header, after blank lines
        elif token in (";", "\n"):
            flush()
        else:
            words.append(token)
    flush()
    if len(stack) != 1:
        raise ScenarioError("a block is not closed")
    return top


def steps(program: List[Statement]) -> List[List[Statement]]:
    """The program cut at its top-level `step` statements. `step` ends a step even when it is
    empty; the end of the text ends the last one only if it holds a statement (as the model)."""
    out: List[List[Statement]] = [[]]
    for statement in program:
        if isinstance(statement, Simple) and statement.op == "step":
            out.append([])
        else:
            out[-1].append(statement)
    if not out[-1]:
        out.pop()
    return out


def render(program: List[Statement], indent: str = "") -> str:
    """The program as text, one statement per line (for reports of disagreements)."""
    lines = []
    for s in program:
        if isinstance(s, Block):
            head = s.op if s.mode is None else f"{s.op} {s.mode}"
            lines.append(f"{indent}{head} {{")
            if s.body:
                lines.append(render(s.body, indent + "  "))
            lines.append(f"{indent}}}")
        else:
            parts = [s.op] + ([s.name] if s.name else []) + (["retain"] if s.retain else [])
            lines.append(indent + " ".join(parts))
    return "\n".join(lines)
