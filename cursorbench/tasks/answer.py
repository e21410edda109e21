"""What the reference solution writes, a stub of it, and how many lines a patch changes.

- `stub_tree(built)`: the original files, with the body of every function that
  holds removed lines (`BuiltTask.removed_lines()`: the lines the mutation took away, which
  a solver must write back) replaced by `raise NotImplementedError`: every name exists,
  nothing works. A task whose tests pass on the stub does not test the feature.
- `changed_lines(patch)`: lines added plus lines removed by a patch;
  `changed_code_lines(patch)` the same without blank or comment lines (`#`).
- `reference_tree(built)` / `reference_patch(built, scratch)`: what the reference solution
  writes: the reverse of the mutation, or for an answer task the answer file made from
  its facts (the reverse of a mutation answers no question).
"""

from __future__ import annotations

import ast
import shutil
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from cursorbench.tasks.workspace import BuiltTask
from harness.kinds.registry import kind_of
from harness.pyast import parse_module
from harness.sandbox.baseline import Baseline


def changed_lines(patch: str) -> int:
    return sum(
        1
        for line in patch.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++ ", "--- "))
    )


# What `changed_code_lines` counts (a record counted by another rule is counted again):
# 2: source files only (a docs page or a changelog the reference restores is not code).
CODE_LINES_RULE = 2
CODE_SUFFIXES = frozenset(
    {".py", ".pyi", ".pyx", ".pxd", ".c", ".h", ".cc", ".cpp", ".hpp", ".rs", ".go", ".java"}
    | {".js", ".jsx", ".ts", ".tsx", ".rb", ".sh"}
)


def changed_code_lines(patch: str) -> int:
    """Changed lines of source files (`CODE_SUFFIXES`), without blank or comment lines."""
    counted, code = 0, True  # a patch without file headers is taken as code
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            code = PurePosixPath(line.rsplit(" b/", 1)[-1]).suffix in CODE_SUFFIXES
        elif (
            code
            and line[:1] in "+-"
            and not line.startswith(("+++ ", "--- "))
            and line[1:].strip()
            and not line[1:].lstrip().startswith("#")
        ):
            counted += 1
    return counted


def stub_source(text: str, lines: set[int]) -> str:
    """Each outermost function holding any of `lines` keeps its signature; its body
    becomes `raise NotImplementedError`."""
    try:
        tree = parse_module(text)
    except SyntaxError:
        return text
    targets: list[ast.FunctionDef | ast.AsyncFunctionDef] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                span = set(range(child.lineno, (child.end_lineno or child.lineno) + 1))
                if span & lines:
                    targets.append(child)
                continue  # nested functions go with their outermost function
            visit(child)

    visit(tree)
    source = text.splitlines(keepends=True)
    for function in sorted(targets, key=lambda f: f.lineno, reverse=True):
        first = function.body[0]
        start, end = first.lineno - 1, function.end_lineno or first.lineno
        if start < function.lineno:  # one-line `def f(): ...`: leave it
            continue
        indent = " " * first.col_offset
        source[start:end] = [f"{indent}raise NotImplementedError\n"]
    return "".join(source)


def _own_reference(built: BuiltTask) -> dict[str, str | None] | None:
    """The files the task's kind makes its reference from (an answer task's answer file),
    or None when the reference is the reverse of the mutation."""
    check = built.task.verification
    return kind_of(check).reference_files(check, built.workspace)


def reference_tree(built: BuiltTask) -> dict[str, str | None]:
    """Files the reference solution writes (None: deletes), relative to the workspace."""
    own = _own_reference(built)
    return built.solution_tree() if own is None else own


def reference_patch(built: BuiltTask, scratch: Path) -> str:
    own = _own_reference(built)
    return built.reference_patch if own is None else patch_for(built.workspace, own, scratch)


def reference_changed_lines(built: BuiltTask) -> int:
    """The size of the reference solution: for an answer task its answer file (the reverse
    of its mutation is not what the agent writes)."""
    own = _own_reference(built)
    if own is None:
        return changed_lines(built.reference_patch)
    return sum(len(text.splitlines()) for text in own.values() if text is not None)


def reference_code_lines(built: BuiltTask) -> int:
    """`reference_changed_lines` without blank or comment lines."""
    own = _own_reference(built)
    if own is None:
        return changed_code_lines(built.reference_patch)
    texts = (text for text in own.values() if text is not None)
    return sum(1 for text in texts for line in text.splitlines() if line.strip())


def stub_tree(built: BuiltTask) -> dict[str, str | None]:
    """The reference's files, stubbed: the same shape as `BuiltTask.solution_tree()`. For an
    answer task: the answer file with every key and no knowledge (the kind's own stub)."""
    check = built.task.verification
    own = kind_of(check).stub_files(check)
    if own is not None:
        return own
    removed = built.removed_lines()
    stubbed: dict[str, str | None] = {}
    for path, text in built.solution_tree().items():
        if text is not None and path.endswith(".py") and path in removed:
            stubbed[path] = stub_source(text, removed[path])
        else:
            stubbed[path] = text
    return stubbed


def patch_for(workspace: Path, changes: Mapping[str, str | None], scratch: Path) -> str:
    """The git patch that turns `workspace` into `workspace` with `changes` written."""
    shutil.rmtree(scratch, ignore_errors=True)
    tree = scratch / "tree"
    shutil.copytree(workspace, tree, symlinks=True)
    baseline = Baseline(scratch / "git", tree)
    baseline.snapshot()
    for path, text in changes.items():
        if text is None:
            (tree / path).unlink(missing_ok=True)
        else:
            (tree / path).parent.mkdir(parents=True, exist_ok=True)
            (tree / path).write_text(text, encoding="utf-8")
    patch = baseline.diff()
    shutil.rmtree(scratch, ignore_errors=True)
    return patch
