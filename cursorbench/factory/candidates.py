"""Candidate deletions: top-level functions and classes of a package's modules, alone or
as a small cluster of neighbours in one module, with what the coverage map says of them.

A candidate's removed lines are its definitions' executable statements (decorators
included). The tests that exercise it are those that execute a statement of its body
(the `def`/`class` lines run at import, for every test). Its hidden test files are the
test files in which at least `HIDDEN_SHARE` of the tests (or `MIN_FAIL_TO_PASS` tests)
exercise it; the exercising tests elsewhere are its predicted spill.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from cursorbench.factory.coverage_map import CoverageMap
from cursorbench.factory.reexports import own_all_edits, package_init, unexport_edits
from cursorbench.tasks.task import RemoveFile, RemoveSymbol, ReplaceText
from cursorbench.validation.checks import MIN_FAIL_TO_PASS
from harness.pyast import parse_module

MAX_CLUSTER = 3
HIDDEN_SHARE = 0.2
MAX_HIDDEN_FILES = 3
Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


@dataclass(frozen=True)
class Symbol:
    file: str
    name: str
    start: int  # first line, decorators included
    end: int
    docstring: str
    function: bool = True  # a def (else a class, whose body runs at import anyway)

    @property
    def public(self) -> bool:
        return not self.name.startswith("_")


@dataclass
class Candidate:
    file: str
    symbols: list[Symbol]
    removed: set[int] = field(default_factory=set)  # executable lines deleted
    exercising: set[str] = field(default_factory=set)  # passing tests running its body
    hidden_files: list[str] = field(default_factory=list)
    predicted_fail: list[str] = field(default_factory=list)  # exercising, in hidden files
    predicted_spill: list[str] = field(default_factory=list)  # exercising, elsewhere
    hidden_coverage: float | None = None
    runs_at_import: bool = False  # a function body that runs outside any test
    unexport: list[ReplaceText] = field(default_factory=list)  # `reexports`' edits

    @property
    def names(self) -> list[str]:
        return [symbol.name for symbol in self.symbols]

    @property
    def key(self) -> str:
        return f"{self.file}::{'+'.join(self.names)}"

    def operations(self) -> list[RemoveSymbol | ReplaceText | RemoveFile]:
        removed: list[RemoveSymbol | ReplaceText | RemoveFile]
        removed = [RemoveSymbol(file=self.file, symbol=s.name) for s in self.symbols]
        return [*removed, *self.unexport]


def top_level_symbols(tree: Path, relative: str) -> list[Symbol]:
    text = (tree / relative).read_text(encoding="utf-8", errors="replace")
    try:
        module = parse_module(text)
    except SyntaxError:
        return []
    found = []
    for node in module.body:
        if isinstance(node, Definition) and node.end_lineno is not None:
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            doc = ast.get_docstring(node) or ""
            function = not isinstance(node, ast.ClassDef)
            found.append(Symbol(relative, node.name, start, node.end_lineno, doc, function))
    return found


def clusters(symbols: list[Symbol]) -> list[list[Symbol]]:
    """Each public symbol alone, and runs of 2..MAX_CLUSTER neighbours holding a public one."""
    groups = [[s] for s in symbols if s.public]
    for size in range(2, MAX_CLUSTER + 1):
        for at in range(len(symbols) - size + 1):
            window = symbols[at : at + size]
            if any(s.public for s in window):
                groups.append(window)
    return groups


def body_lines(symbol: Symbol, statements: list[int]) -> set[int]:
    """Executable lines inside the definition, past its first statement line."""
    inside = sorted(n for n in statements if symbol.start <= n <= symbol.end)
    return set(inside[1:]) if inside else set()


def test_file(test: str) -> str:
    return test.split("::")[0]


def choose_hidden(
    exercising: set[str], testmap: CoverageMap
) -> tuple[list[str], list[str], list[str]]:
    """(hidden files, predicted FAIL_TO_PASS, predicted spill) of passing tests that
    exercise a change: the files in which at least `HIDDEN_SHARE` of the passing tests, or
    at least `MIN_FAIL_TO_PASS` of them, exercise it (at most `MAX_HIDDEN_FILES`, most hits
    first). The second rule is for packages with one large test file per module (or one
    for the whole package), where a function is a few percent of its file's tests."""
    per_file = Counter(test_file(t) for t in testmap.passing())
    hits = Counter(test_file(t) for t in exercising)
    chosen = [
        f for f, n in hits.most_common() if n >= HIDDEN_SHARE * per_file[f] or n >= MIN_FAIL_TO_PASS
    ]
    hidden = sorted(chosen[:MAX_HIDDEN_FILES])
    inside = set(hidden)
    fail = sorted(t for t in exercising if test_file(t) in inside)
    return hidden, fail, sorted(t for t in exercising if test_file(t) not in inside)


def describe(candidate: Candidate, testmap: CoverageMap) -> Candidate:
    """Fills in what the coverage map predicts for the candidate."""
    statements = testmap.statements.get(candidate.file, [])
    for symbol in candidate.symbols:
        candidate.removed |= {n for n in statements if symbol.start <= n <= symbol.end}
        body = body_lines(symbol, statements)
        candidate.exercising |= testmap.tests_running(candidate.file, body)
        by_line = testmap.runs.get(candidate.file, {})
        if symbol.function and any("" in by_line.get(n, set()) for n in body):
            candidate.runs_at_import = True
    candidate.exercising &= testmap.passing()
    hidden, fail, spill = choose_hidden(candidate.exercising, testmap)
    candidate.hidden_files, candidate.predicted_fail, candidate.predicted_spill = (
        hidden,
        fail,
        spill,
    )
    inside = set(hidden)
    hidden_tests = {t for t in testmap.outcomes if test_file(t) in inside}
    if candidate.removed:
        ran = testmap.executed_by(candidate.file, candidate.removed, hidden_tests)
        candidate.hidden_coverage = round(len(ran) / len(candidate.removed), 3)
    return candidate


def used_at_import(tree: Path, candidate: Candidate) -> bool:
    """Whether code of the candidate's own module that runs at import (outside functions,
    lambdas and the deleted definitions) reads one of its names: `_obj = PyJWS()` after
    `class PyJWS` makes a module that no longer imports without it."""
    try:
        parsed = parse_module((tree / candidate.file).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return False
    names = set(candidate.names)
    pending: list[ast.AST] = [
        node for node in parsed.body
        if not (isinstance(node, Definition) and node.name in names)
    ]  # fmt: skip
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            pending.extend(node.decorator_list if not isinstance(node, ast.Lambda) else [])
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in names:
            return True
        pending.extend(ast.iter_child_nodes(node))
    return False


def enumerate_candidates(tree: Path, testmap: CoverageMap) -> list[Candidate]:
    """Every candidate of every measured package file, most exercised first."""
    found: list[Candidate] = []
    for relative in sorted(testmap.statements):
        symbols = top_level_symbols(tree, relative)
        for group in clusters(symbols):
            found.append(describe(Candidate(relative, group), testmap))
    found.sort(key=lambda c: (-len(c.predicted_fail), len(c.predicted_spill), c.key))
    return found


def imported_elsewhere(tree: Path, candidate: Candidate, files: list[str]) -> list[str]:
    """Other package files that import one of the candidate's names by name, or read it as
    a module's attribute at import (deleting it would break their import, and with it
    every test), but for the package's
    `__init__.py` when its re-export can go with the names (`candidate.unexport` is then
    set: see `reexports`)."""
    found = _importers(tree, candidate, files)
    own = own_all_edits(tree, candidate.file, set(candidate.names))
    if own is None:
        return [candidate.file]  # an `__all__` that is not a literal: cannot edit it
    candidate.unexport = own
    init = package_init(candidate.file)
    if init in found:
        module = Path(candidate.file).stem
        edits = unexport_edits(tree, candidate.file, set(candidate.names), module)
        if edits is not None:
            candidate.unexport += edits
            found.remove(init)
    return found


def other_modules(tree: Path, files: list[str], skipped: str) -> Iterator[tuple[str, ast.Module]]:
    """The package files but `skipped`, parsed (those that do not parse are left out)."""
    for relative in files:
        if relative == skipped:
            continue
        try:
            parsed = parse_module((tree / relative).read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            continue
        yield relative, parsed


def _importers(tree: Path, candidate: Candidate, files: list[str]) -> list[str]:
    names = set(candidate.names)
    module = candidate.file.removesuffix(".py").removesuffix("/__init__").split("/")[-1]
    found = []
    for relative, parsed in other_modules(tree, files, candidate.file):
        for node in ast.walk(parsed):
            if not isinstance(node, ast.ImportFrom):
                continue
            same = (node.module or "").split(".")[-1] in (module, "")
            if same and names & {alias.name for alias in node.names}:
                found.append(relative)
                break
        else:
            top = next(p for p in candidate.file.split("/") if p != "src")
            if _read_at_import(parsed, names, {module, top}):
                found.append(relative)
    return found


def _read_at_import(parsed: ast.Module, names: set[str], modules: set[str]) -> bool:
    """Whether code that runs at import (outside functions) reads one of `names` as an
    attribute of an imported module (`groupby = curry(toolz.groupby)`)."""
    bound: set[str] = set()
    for node in ast.walk(parsed):
        if isinstance(node, ast.Import):
            bound |= {a.asname or a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            bound |= {a.asname or a.name for a in node.names if a.name in modules}
    pending: list[ast.AST] = list(parsed.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in bound
            and node.attr in names
        ):
            return True
        pending.extend(ast.iter_child_nodes(node))
    return False
