"""Refactor tasks (`--kind refactor`): a module split out of the one that imports it.

A candidate is a package module `sub` that a sibling module `host` (same folder) imports
names from at its top level. The workspace has `sub`'s code merged into `host` where
`host` imported it, `sub.py` gone, and the package's other `from ...sub import` lines
pointing at `host`; the request is to split it out again, the original being the target.
The behaviour is unchanged, so the package's tests pass either way but for the test files
naming `sub` (hidden); what tells the split apart is an authored test (hidden too) that
every top-level definition of `sub` is defined there and no longer in `host`, and that
`host` still offers the names it imported. A workspace left as it is fails it; moving the
code by copy, or re-exporting `host`'s copy from a new `sub.py`, fails it as well.

A merge is proposed only when it keeps the code's meaning: `sub` does not import `host`
(no cycle to fold), every import of `sub` in the package is a plain `from ...sub import
names` this module can point elsewhere, no name bound by `sub` is bound otherwise in
`host`, and a `from __future__` import of `sub` is one `host` has too. Measurement (the
derivation) shows whether the merged tree still passes the visible tests.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from cursorbench.factory.candidates import other_modules, test_file, top_level_symbols
from cursorbench.factory.coverage_map import CoverageMap, dotted_module
from cursorbench.factory.filters import Proposal
from cursorbench.factory.job import Entry, Job, Measured
from cursorbench.factory.measure import derive, write_derived
from cursorbench.factory.refactor_template import PER_NAME, STRUCTURE_TEST
from cursorbench.tasks.task import RemoveFile, ReplaceText
from harness.pyast import parse_module

SKIPPED_HOSTS = ("__init__", "__main__")  # a package's face and its script: no place for code
MIN_STATEMENTS = 20  # a smaller move is an edit, not a refactor
MAX_STATEMENTS = 600  # a larger one is a package's core moved, thousands of lines of diff
MIN_DEFINITIONS = 1  # one large class is a move a user asks for too
MAX_HIDDEN_SHARE = 0.5  # of the suite's test files: more, and the visible suite is too thin
Edit = ReplaceText | RemoveFile
# `from __future__` features Python 3 has anyway: dropping their import changes nothing
PYTHON3_FUTURES = {
    "nested_scopes", "generators", "division", "absolute_import", "with_statement",
    "print_function", "unicode_literals", "generator_stop",
}  # fmt: skip


@dataclass
class RefactorCandidate:
    file: str  # the module to split out again
    host: str  # the module its code is merged into
    definitions: list[str]  # its top-level functions and classes, in order
    taken: list[str]  # the names `host` imports from it (kept importable from `host`)
    bound: list[str]  # every name its code binds but by imports, in order (the prompt's)
    statements: int  # its executable lines (the size of the move)
    operations: list[Edit] = field(default_factory=list)
    hidden_files: list[str] = field(default_factory=list)  # package tests naming it

    @property
    def key(self) -> str:
        return f"refactor:{self.file}>{self.host}"


class Refused(Exception):
    """Why a module cannot be merged into its host (a candidate's `merge` failure)."""


def _stem(relative: str) -> str:
    return PurePosixPath(relative).stem


def _bound(statements: list[ast.stmt]) -> Iterator[tuple[str, ast.stmt]]:
    """The names module-level statements bind, with the statement binding each (the
    blocks of `if`, `try`, `with` and loops are module level too; function and class
    bodies are not)."""
    for node in statements:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name, node
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                if alias.name != "*":
                    yield (alias.asname or alias.name.split(".")[0]), node
            continue
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.For | ast.AsyncFor):
            targets = [node.target]
        elif isinstance(node, ast.With | ast.AsyncWith):
            targets = [item.optional_vars for item in node.items if item.optional_vars]
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    yield name.id, node
        for block in ("body", "orelse", "finalbody"):
            inner = getattr(node, block, None)
            if isinstance(inner, list):
                yield from _bound([child for child in inner if isinstance(child, ast.stmt)])
        for handler in getattr(node, "handlers", []):
            if handler.name:
                yield handler.name, node
            yield from _bound(handler.body)


def _origin(node: ast.stmt, name: str) -> tuple[object, ...] | None:
    """Where an import binds `name` from (two equal origins bind the same object)."""
    if isinstance(node, ast.Import):
        return next((("import", a.name) for a in node.names if (a.asname or a.name) == name), None)
    if isinstance(node, ast.ImportFrom):
        for alias in node.names:
            if (alias.asname or alias.name) == name:
                return ("from", node.level, node.module, alias.name)
    return None


def _lines(text: str, node: ast.stmt) -> str:
    assert node.end_lineno is not None
    return "".join(text.splitlines(keepends=True)[node.lineno - 1 : node.end_lineno])


def _imports_from(node: ast.AST, stem: str, dotted: str) -> bool:
    """`from .sub import ...`, `from pkg.sub import ...` (the forms this module rewrites)."""
    if not isinstance(node, ast.ImportFrom) or not node.module:
        return False
    return node.module == dotted or (node.level > 0 and node.module.split(".")[-1] == stem)


def _names_module(node: ast.AST, stem: str, dotted: str) -> bool:
    """Any import of the module or from it (`import pkg.sub`, `from . import sub`, ...)."""
    if isinstance(node, ast.Import):
        return any(a.name == dotted or a.name.startswith(dotted + ".") for a in node.names)
    if not isinstance(node, ast.ImportFrom):
        return False
    if _imports_from(node, stem, dotted) or (node.module or "").startswith(dotted + "."):
        return True
    parent = dotted.rpartition(".")[0]
    of_parent = (node.level > 0 and (node.module or "") in ("", parent.split(".")[-1])) or (
        node.module == parent
    )
    return of_parent and any(a.name == stem for a in node.names)


def merged_body(text: str, parsed: ast.Module, host_futures: set[str]) -> str:
    """The module's text as it goes into its host: without its docstring, its `__all__`
    and its `from __future__` imports (which the host must have too)."""
    drop: list[ast.stmt] = []
    for node in parsed.body:
        if node is parsed.body[0] and isinstance(node, ast.Expr):
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                drop.append(node)
        elif isinstance(node, ast.ImportFrom) and node.module == "__future__":
            missing = {a.name for a in node.names} - host_futures - PYTHON3_FUTURES
            if missing:
                raise Refused(f"from __future__ import {', '.join(sorted(missing))}")
            drop.append(node)
        elif any(name == "__all__" for name, _ in _bound([node])):
            drop.append(node)
    lines = text.splitlines(keepends=True)
    for node in sorted(drop, key=lambda n: -n.lineno):
        assert node.end_lineno is not None
        del lines[node.lineno - 1 : node.end_lineno]
    return "".join(lines).strip("\n") + "\n"


def _futures(parsed: ast.Module) -> set[str]:
    return {
        alias.name for node in parsed.body
        if isinstance(node, ast.ImportFrom) and node.module == "__future__"
        for alias in node.names
    }  # fmt: skip


def _check_names(host: ast.Module, sub: ast.Module, merged: list[int]) -> None:
    """Refuses a merge that would bind one name twice: a definition of the module that the
    host binds as well, or an import of it that the host binds otherwise."""
    kept = [node for node in host.body if node.lineno not in merged]
    host_names: dict[str, list[ast.stmt]] = {}
    for name, node in _bound(kept):
        host_names.setdefault(name, []).append(node)
    sub_names: dict[str, list[ast.stmt]] = {}
    for name, node in _bound(sub.body):
        sub_names.setdefault(name, []).append(node)
    for name, nodes in sub_names.items():
        if name in ("__all__", "__doc__") or name not in host_names:
            continue
        mine = {_origin(node, name) for node in nodes}
        theirs = {_origin(other, name) for other in host_names[name]}
        if None in mine or theirs != mine:  # both import it from the same places: one object
            raise Refused(f"`{name}` is bound in both modules")


def host_edits(tree: Path, host: str, sub: str, dotted: str) -> tuple[list[ReplaceText], list[str]]:
    """The edits merging `sub` into `host` where `host` first imports it (its other imports
    of `sub` go), and the names `host` imported from it."""
    host_text = (tree / host).read_text(encoding="utf-8")
    sub_text = (tree / sub).read_text(encoding="utf-8")
    host_tree, sub_tree = parse_module(host_text), parse_module(sub_text)
    stem = _stem(sub)
    if any(_names_module(n, _stem(host), dotted.rpartition(".")[0] + "." + _stem(host))
           for n in ast.walk(sub_tree)):  # fmt: skip
        raise Refused("the module imports its host")
    top = [node for node in host_tree.body if _imports_from(node, stem, dotted)]
    nested = [
        node for node in ast.walk(host_tree)
        if _names_module(node, stem, dotted) and node not in top
    ]  # fmt: skip
    if not top or nested:
        raise Refused("the host imports the module other than at its top level")
    taken: list[str] = []
    for node in top:
        assert isinstance(node, ast.ImportFrom)
        for alias in node.names:
            if alias.name == "*" or (alias.asname and alias.asname != alias.name):
                raise Refused("the host imports the module with * or under other names")
            taken.append(alias.name)
    _check_names(host_tree, sub_tree, [node.lineno for node in top])
    body = merged_body(sub_text, sub_tree, _futures(host_tree))
    edits = []
    for at, node in enumerate(top):
        old = _lines(host_text, node)
        if host_text.count(old) != 1:
            raise Refused("the host's import of the module is not unique")
        edits.append(ReplaceText(file=host, old=old, new=body if at == 0 else ""))
    return edits, taken


def importer_edits(
    tree: Path, files: list[str], candidate_files: tuple[str, str], dotted: str
) -> list[ReplaceText]:
    """The package's other imports from `sub`, pointed at `host` (`from .sub import x` ->
    `from .host import x`); any other form of import refuses the merge."""
    sub, host = candidate_files
    stem, host_stem = _stem(sub), _stem(host)
    edits: list[ReplaceText] = []
    for relative, parsed in other_modules(tree, files, sub):
        if relative == host:
            continue
        text = (tree / relative).read_text(encoding="utf-8")
        for node in ast.walk(parsed):
            if not _names_module(node, stem, dotted):
                continue
            if not _imports_from(node, stem, dotted) or not isinstance(node, ast.ImportFrom):
                raise Refused(f"{relative} imports the module itself")
            if any(alias.name == "*" for alias in node.names):
                raise Refused(f"{relative} star-imports the module")
            old = ast.get_source_segment(text, node)
            module = node.module or ""
            pattern = r"(from\s+\.*)" + re.escape(module) + r"(\s+import)"
            renamed = module[: len(module) - len(stem)] + host_stem
            if old is None or text.count(old) != 1:
                raise Refused(f"{relative}'s import of the module is not unique")
            new = re.sub(pattern, rf"\g<1>{renamed}\g<2>", old, count=1)
            if new == old:
                raise Refused(f"{relative}'s import of the module could not be rewritten")
            edits.append(ReplaceText(file=relative, old=old, new=new))
    return edits


def naming_tests(tree: Path, test_files: list[str], dotted: str) -> list[str]:
    """The test files that name the module (`pkg.sub`, `from pkg import sub`)."""
    parent, _, stem = dotted.rpartition(".")
    named = re.compile(
        rf"\b{re.escape(dotted)}\b|from\s+{re.escape(parent)}\s+import\s[^\n]*\b{stem}\b"
    )
    found = []
    for relative in test_files:
        try:
            text = (tree / relative).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if named.search(text):
            found.append(relative)
    return found


def code_names(path: Path) -> list[str]:
    """The names a module's code binds (not its imports, docstring or dunders), in order."""
    parsed = parse_module(path.read_text(encoding="utf-8"))
    found: dict[str, int] = {}
    for name, node in _bound(parsed.body):
        if not isinstance(node, ast.Import | ast.ImportFrom) and not name.startswith("__"):
            found.setdefault(name, node.lineno)
    return sorted(found, key=lambda name: found[name])


def hosts(tree: Path, files: list[str], sub: str, dotted: str) -> list[str]:
    """The sibling modules that import names from `sub` at their top level."""
    folder, stem = str(PurePosixPath(sub).parent), _stem(sub)
    found = []
    for relative, parsed in other_modules(tree, files, sub):
        if str(PurePosixPath(relative).parent) != folder or _stem(relative) in SKIPPED_HOSTS:
            continue
        if any(_imports_from(node, stem, dotted) for node in parsed.body):
            found.append(relative)
    return found


def enumerate_refactors(
    tree: Path, testmap: CoverageMap, files: list[str]
) -> Iterator[RefactorCandidate | tuple[str, str, str]]:
    """Every module with a host: a candidate, or (file, host, why) when the merge is
    refused."""
    test_files = sorted({test_file(t) for t in testmap.outcomes})
    for sub in sorted(testmap.statements):
        if PurePosixPath(sub).name in ("__init__.py", "__main__.py"):
            continue
        dotted = dotted_module(tree, sub)
        definitions = [s.name for s in top_level_symbols(tree, sub)]
        for host in hosts(tree, files, sub, dotted):
            try:
                if len(definitions) < MIN_DEFINITIONS:
                    raise Refused(f"{len(definitions)} top-level definitions")
                edits, taken = host_edits(tree, host, sub, dotted)
                edits += importer_edits(tree, files, (sub, host), dotted)
            except (Refused, SyntaxError, UnicodeDecodeError) as why:
                yield sub, host, str(why)
                continue
            candidate = RefactorCandidate(
                sub, host, definitions, taken, code_names(tree / sub),
                len(testmap.statements[sub]),
                operations=[*edits[:1], RemoveFile(file=sub), *edits[1:]],
                hidden_files=naming_tests(tree, test_files, dotted),
            )  # fmt: skip
            yield candidate
            break  # one host a module: the others would be the same task


# --- the authored test ----------------------------------------------------------------


def test_path(tree: Path, testmap: CoverageMap, sub: str) -> str:
    """Where the structure test goes: the folder holding most of the suite's test files,
    named as they are (`test_x.py` or `x_test.py`)."""
    files = [test_file(t) for t in testmap.outcomes]
    folder = Counter(str(PurePosixPath(f).parent) for f in files).most_common(1)
    where = folder[0][0] if folder else "tests"
    suffixed = sum(f.endswith("_test.py") for f in files) > len(files) / 2
    name = f"{_stem(sub)}_split_test.py" if suffixed else f"test_{_stem(sub)}_split.py"
    path = name if where in ("", ".") else f"{where}/{name}"
    while (tree / path).exists():
        path = path.replace("split", "split_again", 1)
    return path


def structure_test(
    sub_dotted: str, host_dotted: str, definitions: list[str], taken: list[str]
) -> str:
    """The authored test: the definitions are the module's own, and the host still offers
    what it imported; two tests a public definition: its code lives in the module, the host
    does not define it (at any depth)."""
    text = STRUCTURE_TEST.format(
        sub=sub_dotted, host=host_dotted, definitions=definitions, taken=taken
    )
    for name in definitions:
        if not name.startswith("_"):
            text += PER_NAME.format(test_name=name, name=name)
    return text


# --- rows, ids and prompts ------------------------------------------------------------


def refactor_id(package: str, candidate: RefactorCandidate) -> str:
    base = f"{package}-{_stem(candidate.file)}-split-from-{_stem(candidate.host)}"
    return re.sub(r"[^a-z0-9.]+", "-", base.lower()).strip("-.")


def refactor_row(candidate: RefactorCandidate | tuple[str, str, str]) -> Proposal:
    if isinstance(candidate, tuple):
        sub, host, why = candidate
        row = Proposal(key=f"refactor:{sub}>{host}", kind="refactor", file=sub, symbols=[])
        row.failed, row.why = "merge", why
        return row
    measured = {
        "operations": [op.model_dump() for op in candidate.operations],
        "hidden": candidate.hidden_files, "definitions": candidate.definitions,
    }  # fmt: skip
    digest = hashlib.sha256(json.dumps(measured).encode()).hexdigest()
    return Proposal(
        key=candidate.key, kind="refactor", file=candidate.file,
        symbols=candidate.definitions, candidate_digest=digest[:16],
        removed_statements=candidate.statements, hidden_tests=candidate.hidden_files,
    )  # fmt: skip


OPENINGS = (
    "`{host_path}` has grown to hold {what} as well.",
    "{what_cap} ended up inside `{host_path}`.",
    "`{host}` mixes two things now: its own code and {what}.",
    "I keep scrolling past {what} in `{host_path}`.",
)
ASKS = (
    " Please move that code out into its own module, `{sub_path}`.",
    " Can you split it into a new module `{sub}` (`{sub_path}`)?",
    " I'd like it to live in `{sub_path}` instead, imports and all.",
    " Pull it out into `{sub_path}` and have `{host}` import it from there.",
)
KEEPS = (
    " Code that imports these names from `{host}` today has to keep working.",
    " Existing `from {host} import ...` lines must not break, and no import cycles please.",
    " Don't change behaviour; `{host}` should still expose what it exposes now.",
    " Keep `{host}` exporting the same names, since other code imports them from there.",
)


def refactor_prompt(ident: str, candidate: RefactorCandidate, sub: str, host: str) -> str:
    """A user's request, worded by one of a few openings, asks and reminders (chosen by the
    task id, so that the suite's prompts vary): what to move is named by the first and the
    last name the block's code binds, as a person pointing at the code would."""
    names = candidate.bound or candidate.definitions
    what = f"everything from `{names[0]}` down to `{names[-1]}` ({len(names)} names)"
    if len(names) <= 3:
        quoted = [f"`{name}`" for name in names]
        what = " and ".join([", ".join(quoted[:-1]), quoted[-1]] if len(quoted) > 1 else quoted)
    pick = int(hashlib.sha256(ident.encode()).hexdigest(), 16)
    values = {
        "host": host, "sub": sub, "host_path": candidate.host, "sub_path": candidate.file,
        "what": what, "what_cap": what[0].upper() + what[1:],
    }  # fmt: skip
    parts = (OPENINGS[pick % 4], ASKS[(pick >> 4) % 4], KEEPS[(pick >> 8) % 4])
    return "".join(part.format(**values) for part in parts)


class RefactorKind:
    """Lists derived as a deletion's are; the prompt written offline from the candidate
    (`refactor_prompt`), before it is measured."""

    family = None

    def measure(self, job: Job) -> Measured:
        return derive(job, lambda step: write_derived(step, job.prompt, "offline"))

    def prompt_again(self, job: Job, data: dict[str, Any]) -> str | None:
        return job.prompt


def _visibly_run(testmap: CoverageMap, candidate: RefactorCandidate) -> bool:
    """Whether a passing test the task leaves visible runs the module's code."""
    hidden = set(candidate.hidden_files)
    visible = {test for test in testmap.passing() if test_file(test) not in hidden}
    lines = testmap.statements.get(candidate.file, [])
    return bool(testmap.tests_running(candidate.file, lines) & visible)


def refactor_entries(
    tree: Path,
    testmap: CoverageMap,
    files: list[str],
    package: str,
    job: Callable[[RefactorCandidate, str], Job],
    min_statements: int,
) -> tuple[list[Proposal], list[Entry], set[str]]:
    """Every refactor candidate's row (the cheap filters applied: the merge, the size, the
    share of hidden test files), the survivors to measure and their task ids."""
    rows: list[Proposal] = []
    entries: list[Entry] = []
    ids: set[str] = set()
    suite_files = len({test_file(t) for t in testmap.outcomes})
    for candidate in enumerate_refactors(tree, testmap, files):
        row = refactor_row(candidate)
        rows.append(row)
        if isinstance(candidate, tuple):
            continue
        ident = refactor_id(package, candidate)
        ids.add(ident)
        if not max(min_statements, MIN_STATEMENTS) <= candidate.statements <= MAX_STATEMENTS:
            row.failed, row.why = "size", f"{candidate.statements} statements"
        elif len(candidate.hidden_files) > MAX_HIDDEN_SHARE * suite_files:
            row.failed = "hidden_fail_to_pass"
            row.why = f"{len(candidate.hidden_files)} of {suite_files} test files name it"
        elif not _visibly_run(testmap, candidate):  # validation would refuse it, after a build
            row.failed = "spill"
            row.why = "no visible passing test runs the module: nothing checks its behaviour"
        if row.failed:
            continue
        row.task_id = ident
        names = {(candidate.file, "(module)"), (candidate.host, "(host)")}
        entries.append(Entry(row, names, lambda c=candidate, i=ident: job(c, i)))  # type: ignore[misc]
    return rows, entries, ids
