"""Candidate procedural bugs: several small coordinated mutations of one covered function
(or of a function and a same-module function it calls), for `debugging` tasks whose
mutation is a `bug_injection` of `replace_text` operations.

A *site* is one small change at one node of a function's body: a comparison flipped
(`<` to `<=`, `==` to `!=`, `in` to `not in`, ...), an integer constant of an index, a
slice, a `range()` call, an addition or a comparison moved by one, an `and` swapped for
an `or`, a `not` dropped, the first two positional arguments of a call swapped, or a
returned variable replaced by another local of the function. Edits are made on the
source text at the node's position (never by unparsing), and each becomes a
`replace_text` whose `old` is the smallest run of whole lines around the edit that occurs
exactly once in the file at the moment it applies (operations apply in order, so each is
checked on the text its predecessors left). Only sites on lines that at least two passing
tests execute, and that do not run at import or collection, are used.

A candidate takes up to `MAX_SITES` sites of different kinds on distinct lines. Its
hidden test files are chosen as for a deletion (`candidates.choose_hidden`) from the
tests that execute its sites' lines; a bug fails only some of them, so the prediction
is an upper bound and the measured lists (`checks.derive_tests`) decide.

The failing tests are hidden, as in the v1 debugging tasks (the validator takes
FAIL_TO_PASS from the hidden files only); the prompt is a user's bug report built from
what those tests assert (`bug_prompts`), naming the behaviour, never the location.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from cursorbench.factory.candidates import choose_hidden
from cursorbench.factory.coverage_map import CoverageMap
from cursorbench.tasks.task import ReplaceText
from harness.pyast import parse_module

MIN_SITES, MAX_SITES = 2, 3
MIN_LINE_TESTS = 2  # passing tests that must execute a site's line
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
FLIPS: dict[type[ast.cmpop], str] = {
    ast.Lt: "<=", ast.LtE: "<", ast.Gt: ">=", ast.GtE: ">", ast.Eq: "!=", ast.NotEq: "==",
    ast.In: "not in", ast.NotIn: "in", ast.Is: "is not", ast.IsNot: "is",
}  # fmt: skip
SPELLED: dict[type[ast.cmpop], str] = {
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
    ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not",
}  # fmt: skip


@dataclass(frozen=True)
class Site:
    kind: str  # comparison, off_by_one, boolean, negation, arguments, return_value
    function: str
    line: int  # first line of the statement holding it (the line coverage reports)
    start: int  # byte offsets of the edit in the file
    end: int
    new: bytes


@dataclass
class BugCandidate:
    file: str
    functions: list[str]
    sites: list[Site]
    operations: list[ReplaceText] = field(default_factory=list)
    exercising: set[str] = field(default_factory=set)
    hidden_files: list[str] = field(default_factory=list)
    predicted_fail: list[str] = field(default_factory=list)
    predicted_spill: list[str] = field(default_factory=list)
    hidden_coverage: float | None = None

    @property
    def names(self) -> list[str]:
        return self.functions

    @property
    def lines(self) -> set[int]:
        return {site.line for site in self.sites}

    @property
    def key(self) -> str:
        kinds = ",".join(site.kind for site in self.sites)
        return f"{self.file}::bug:{'+'.join(self.functions)}[{kinds}]"


class Offsets:
    """Byte offsets of (line, column) positions; ast columns count UTF-8 bytes."""

    def __init__(self, data: bytes) -> None:
        self.starts = [0]
        for at, byte in enumerate(data):
            if byte == 0x0A:
                self.starts.append(at + 1)

    def at(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def span(self, node: ast.expr) -> tuple[int, int]:
        assert node.end_lineno is not None and node.end_col_offset is not None
        return self.at(node.lineno, node.col_offset), self.at(node.end_lineno, node.end_col_offset)


def _statement_lines(function: FunctionNode) -> dict[int, int]:
    """Each node's line -> the first line of the innermost statement holding it."""
    found: dict[int, int] = {}
    for statement in ast.walk(function):
        if isinstance(statement, ast.stmt) and statement is not function:
            for node in ast.walk(statement):
                if isinstance(node, ast.expr | ast.stmt):
                    found[node.lineno] = max(found.get(node.lineno, 0), statement.lineno)
    return found


def _gap(data: bytes, left: tuple[int, int], right: tuple[int, int]) -> tuple[int, int]:
    return left[1], right[0]


def _operator_edit(
    data: bytes, start: int, end: int, old: str, new: str
) -> tuple[int, int, bytes] | None:
    """Replaces the operator `old`, alone between two operands (spaces and parentheses
    aside), by `new`."""
    gap = data[start:end].decode("utf-8", errors="replace")
    core = gap.strip(" ()")
    if " ".join(core.split()) != old:
        return None
    at = start + len(gap[: gap.index(core)].encode())
    return at, at + len(core.encode()), new.encode()


def _locals(function: FunctionNode) -> list[str]:
    arguments = function.args
    names = {a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return sorted(names - {"self", "cls"})


def sites_in(function: FunctionNode, name: str, data: bytes, offsets: Offsets) -> list[Site]:
    lines = _statement_lines(function)
    found: list[Site] = []

    def add(kind: str, node: ast.AST, edit: tuple[int, int, bytes] | None) -> None:
        if edit is not None and isinstance(node, ast.expr | ast.stmt):
            found.append(Site(kind, name, lines.get(node.lineno, node.lineno), *edit))

    parents = {child: node for node in ast.walk(function) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(function):
        if isinstance(node, FunctionNode | ast.ClassDef | ast.Lambda) and node is not function:
            continue
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in FLIPS:
            start, end = _gap(data, offsets.span(node.left), offsets.span(node.comparators[0]))
            op = type(node.ops[0])
            add("comparison", node, _operator_edit(data, start, end, SPELLED[op], FLIPS[op]))
        elif isinstance(node, ast.BoolOp) and len(node.values) == 2:
            start, end = _gap(data, offsets.span(node.values[0]), offsets.span(node.values[1]))
            old, new = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
            add("boolean", node, _operator_edit(data, start, end, old, new))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            outer, inner = offsets.span(node), offsets.span(node.operand)
            if data[outer[0] : inner[0]].strip() == b"not":
                add("negation", node, (outer[0], inner[0], b""))
        elif isinstance(node, ast.Constant) and _off_by_one_spot(node, parents):
            value = node.value
            assert isinstance(value, int)
            start, end = offsets.span(node)
            if data[start:end] == str(value).encode():
                add(
                    "off_by_one",
                    node,
                    (start, end, str(value + 1 if value < 2 else value - 1).encode()),
                )
        elif isinstance(node, ast.Call) and _swappable(node):
            first, second = offsets.span(node.args[0]), offsets.span(node.args[1])
            a, b = data[first[0] : first[1]], data[second[0] : second[1]]
            if a != b and b"\n" not in data[first[0] : second[1]]:
                add("arguments", node, (first[0], second[1], b + data[first[1] : second[0]] + a))
        elif isinstance(node, ast.Return) and isinstance(node.value, ast.Name):
            others = [n for n in _locals(function) if n != node.value.id]
            if others:
                start, end = offsets.span(node.value)
                add("return_value", node, (start, end, others[0].encode()))
    return found


def _off_by_one_spot(node: ast.Constant, parents: dict[ast.AST, ast.AST]) -> bool:
    if type(node.value) is not int or abs(node.value) > 1000:
        return False
    parent = parents.get(node)
    if isinstance(parent, ast.Slice | ast.Compare):
        return True
    if isinstance(parent, ast.Subscript):
        return parent.slice is node
    if isinstance(parent, ast.BinOp):
        return isinstance(parent.op, ast.Add | ast.Sub) and parent.right is node
    return (
        isinstance(parent, ast.Call)
        and isinstance(parent.func, ast.Name)
        and parent.func.id == "range"
    )


def _swappable(node: ast.Call) -> bool:
    simple = (ast.Name, ast.Constant, ast.Attribute)
    args = node.args
    return (
        len(args) >= 2
        and isinstance(args[0], simple)
        and isinstance(args[1], simple)
        and not any(isinstance(a, ast.Starred) for a in args)
    )


def functions_of(module: ast.Module) -> list[tuple[str, FunctionNode]]:
    """Top-level functions and the methods of top-level classes, with qualified names."""
    found: list[tuple[str, FunctionNode]] = []
    for node in module.body:
        if isinstance(node, FunctionNode):
            found.append((node.name, node))
        elif isinstance(node, ast.ClassDef):
            for inner in node.body:
                if isinstance(inner, FunctionNode):
                    found.append((f"{node.name}.{inner.name}", inner))
    return found


def pick_sites(sites: list[Site], seed: str) -> list[Site]:
    """Up to MAX_SITES sites of distinct kinds on distinct lines, the first of each kind
    in an order a hash of `seed` picks (the same function always gets the same bugs);
    with a single kind, MIN_SITES of it."""
    kinds = sorted({s.kind for s in sites})
    turn = int(hashlib.sha256(seed.encode()).hexdigest()[:8], 16)
    kinds = kinds[turn % len(kinds) :] + kinds[: turn % len(kinds)] if kinds else []
    chosen: list[Site] = []
    for kind in kinds:
        site = next(
            (s for s in sites if s.kind == kind and s.line not in {c.line for c in chosen}), None
        )
        if site is not None and len(chosen) < MAX_SITES:
            chosen.append(site)
    for site in sites:  # too few kinds: a second site of one
        if len(chosen) < MIN_SITES and site.line not in {c.line for c in chosen}:
            chosen.append(site)
    return chosen


def operations(file: str, text: str, sites: list[Site]) -> list[ReplaceText] | None:
    """The sites as `replace_text` operations that apply one after another, each `old`
    occurring once when it applies; None when they cannot be made so."""
    data = text.encode()
    ops: list[ReplaceText] = []
    current = text
    used: list[tuple[int, int]] = []
    for site in sorted(sites, key=lambda s: s.start):
        old, new, span = unique_block(data, current, site)
        overlaps = any(span[0] <= end and start <= span[1] for start, end in used)
        if old is None or overlaps or current.count(old) != 1:
            return None
        used.append(span)
        current = current.replace(old, new)
        ops.append(ReplaceText(file=file, old=old, new=new))
    return ops


def unique_block(data: bytes, current: str, site: Site) -> tuple[str | None, str, tuple[int, int]]:
    """Whole lines around the edit, grown upwards until they occur once in `current`, and
    their span in the original."""
    first = data.rfind(b"\n", 0, site.start) + 1
    last = data.find(b"\n", site.end)
    last = len(data) if last < 0 else last
    for _ in range(6):
        old = data[first:last].decode("utf-8")
        new = (data[first : site.start] + site.new + data[site.end : last]).decode("utf-8")
        if old.strip() and current.count(old) == 1:
            return old, new, (first, last)
        if first == 0:
            break
        first = data.rfind(b"\n", 0, first - 1) + 1
    return None, "", (first, last)


def _covered(sites: list[Site], file: str, testmap: CoverageMap) -> list[Site]:
    """The sites on lines that enough passing tests run, and nothing at import (a bug
    there would break every test)."""
    passing = testmap.passing()
    by_line = testmap.runs.get(file, {})
    return [
        s
        for s in sites
        if len(testmap.tests_running(file, [s.line]) & passing) >= MIN_LINE_TESTS
        and "" not in by_line.get(s.line, set())
    ]


def _calls(function: FunctionNode) -> set[str]:
    return {
        node.func.id
        for node in ast.walk(function)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }


def groups_of(
    module: ast.Module, data: bytes, file: str, testmap: CoverageMap
) -> list[tuple[list[str], list[Site]]]:
    """Each function with enough covered sites, and each top-level function with one it
    calls in the module (one site or more from each)."""
    offsets = Offsets(data)
    functions = functions_of(module)
    covered = {
        name: _covered(sites_in(node, name, data, offsets), file, testmap)
        for name, node in functions
    }
    found: list[tuple[list[str], list[Site]]] = []
    for name, _ in functions:
        chosen = pick_sites(covered[name], f"{file}::{name}")
        if len(chosen) >= MIN_SITES:
            found.append(([name], chosen))
    for name, node in functions:
        for callee in sorted(_calls(node) & set(covered)):
            if callee == name or not covered[name] or not covered[callee]:
                continue
            head = pick_sites(covered[name], f"{file}::{name}")[:2]
            tail = [
                s
                for s in pick_sites(covered[callee], f"{file}::{callee}")
                if s.line not in {h.line for h in head}
            ]
            if head and tail:
                found.append(([name, callee], head + tail[: MAX_SITES - len(head)]))
    return found


def describe_bug(candidate: BugCandidate, testmap: CoverageMap) -> BugCandidate:
    passing = testmap.passing()
    candidate.exercising = testmap.tests_running(candidate.file, candidate.lines) & passing
    hidden, fail, spill = choose_hidden(candidate.exercising, testmap)
    candidate.hidden_files, candidate.predicted_fail, candidate.predicted_spill = (
        hidden,
        fail,
        spill,
    )
    hidden_tests = {t for t in testmap.outcomes if t.split("::")[0] in set(hidden)}
    ran = testmap.executed_by(candidate.file, candidate.lines, hidden_tests)
    candidate.hidden_coverage = round(len(ran) / len(candidate.lines), 3)
    return candidate


def enumerate_bugs(tree: Path, testmap: CoverageMap) -> list[BugCandidate]:
    """Every bug candidate of every measured package file, most exercised first."""
    found: list[BugCandidate] = []
    for relative in sorted(testmap.statements):
        text = (tree / relative).read_text(encoding="utf-8", errors="replace")
        try:
            module = parse_module(text)
        except SyntaxError:
            continue
        data = text.encode()
        for names, sites in groups_of(module, data, relative, testmap):
            ops = operations(relative, text, sites)
            if ops is None:
                continue
            candidate = BugCandidate(relative, names, sorted(sites, key=lambda s: s.start), ops)
            found.append(describe_bug(candidate, testmap))
    found.sort(key=lambda c: (-len(c.predicted_fail), len(c.predicted_spill), c.key))
    # one candidate per key (a function's group can come up more than once, from each
    # function it calls): keys name rows of proposals.json and task ids
    unique: dict[str, BugCandidate] = {}
    for candidate in found:
        unique.setdefault(candidate.key, candidate)
    return list(unique.values())
