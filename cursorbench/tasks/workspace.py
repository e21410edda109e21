"""Building a task's prepared workspace, once, into a content-addressed cache (the build
cache, `homes.build_cache()`, unless a cache folder is given).

From the task's source tree (copied without caches, bytecode or `.git`) the
builder makes:
  original/   the source as it was after `setup`, plus the task's authored tests (the
              reference solution, plus hidden tests)
  workspace/  the source with the mutation applied and the hidden tests taken out
  hidden/     the hidden test files, laid out as in the workspace
  reference.patch  the reverse of the mutation: workspace -> original minus hidden tests
The cache key covers the task's content, the source tree's bytes (for a package,
the sdist's sha256, checked on every build) and the builder's version, so an edited
task or source is rebuilt, never reused. The tree comes from the task's source
(`sources/`: a folder, a package's sdist, ...). Every build ends with the leak scan
(`leaks.py`); a leak fails the build. A source whose tasks are no mutation of its tree
(a Harbor task folder) lays its build out itself.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import shutil
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cursorbench.tasks.sources.base import SourceError
from cursorbench.tasks.sources.registry import source_of
from cursorbench.tasks.task import (
    MoveSymbol,
    Operation,
    RemoveFile,
    RemoveSymbol,
    ReplaceText,
    Task,
)
from cursorbench.validation import leaks
from harness.envs import EnvironmentFailed, ensure_environment, environment_path, refuse_package
from harness.errors import CursorBenchError
from harness.grading.twin import restored_functions
from harness.home import build_cache, build_once, harness_dirs
from harness.pyast import parse_module
from harness.sandbox.baseline import Baseline
from harness.sandbox.bubblewrap import default_hidden_paths
from harness.spec import PreparedTask, with_behaviour_checks
from harness.trees import copy_source, tree_files

BUILDER_VERSION = "4"


class BuildError(CursorBenchError, RuntimeError):
    """The task cannot be built (one line, naming the task)."""


@dataclass(frozen=True)
class BuiltTask:
    task: Task
    digest: str
    root: Path

    @property
    def workspace(self) -> Path:
        return self.root / "workspace"

    @property
    def original(self) -> Path:
        return self.root / "original"

    @property
    def hidden(self) -> Path:
        return self.root / "hidden"

    @property
    def python_env(self) -> Path | None:
        """The task's own Python environment (made by `build`), None for the harness's."""
        return environment_of(self.task)

    @property
    def reference_patch(self) -> str:
        return (self.root / "reference.patch").read_text()

    def solution_tree(self) -> dict[str, str | None]:
        """Files the reference solution writes (None: deletes), relative to the workspace."""
        hidden = set(self.task.verification.hidden_tests)
        after = {p for p in tree_files(self.original) if p not in hidden}
        before = set(tree_files(self.workspace))
        changes: dict[str, str | None] = {}
        for path in sorted(after):
            data = (self.original / path).read_bytes()
            if path not in before or (self.workspace / path).read_bytes() != data:
                changes[path] = data.decode("utf-8")
        changes.update({path: None for path in sorted(before - after)})
        return changes

    def prepared(self) -> PreparedTask:
        task = self.task
        return PreparedTask(
            id=task.id,
            prompt=task.prompt,
            workspace=self.workspace,
            hidden_dir=self.hidden,
            verification=with_behaviour_checks(task.verification, task.behaviour_checks),
            limits=task.limits,
            secret_paths=secret_paths(task),
            python_env=self.python_env,
            restored_functions=self.restored_functions(),
            earlier_turns=task.earlier_turns,
        )

    def removed_lines(self) -> dict[str, set[int]]:
        """For each source file the reference writes, the line numbers (1-based, in the
        original file) the mutation took away: the lines a solver must write back."""
        found: dict[str, set[int]] = {}
        for path, text in self.solution_tree().items():
            if text is None:
                continue
            before_path = self.workspace / path
            before = (
                before_path.read_text(encoding="utf-8").splitlines()
                if before_path.is_file()
                else []
            )
            lines: set[int] = set()
            matcher = difflib.SequenceMatcher(a=before, b=text.splitlines(), autojunk=False)
            for tag, _, _, j1, j2 in matcher.get_opcodes():
                if tag in ("replace", "insert"):
                    lines.update(range(j1 + 1, j2 + 1))
            if lines:
                found[path] = lines
        return found

    def restored_functions(self) -> dict[str, list[str]]:
        """The functions the reference restores, by file (what the twin run stubs)."""
        found = {}
        for path, lines in self.removed_lines().items():
            text = (self.original / path).read_text(encoding="utf-8", errors="replace")
            if path.endswith(".py") and (names := restored_functions(text, lines)):
                found[path] = names
        return found


def digested_json(task: Task) -> str:
    """The task file as its digest reads it: `released` is no build input, and an absent
    `environment`, no `earlier_turns` and no `canary_exempt` are left out, so tasks
    written before them keep their digests."""
    unset: dict[str, Any] = {"released": True}
    if task.environment is None:
        unset["environment"] = True
    if not task.earlier_turns:
        unset["earlier_turns"] = True
    if not getattr(task.verification, "canary_exempt", None):
        unset["verification"] = {"canary_exempt"}
    return task.model_dump_json(exclude=unset)


def task_digest(task: Task) -> str:
    digest = hashlib.sha256(BUILDER_VERSION.encode())
    digest.update(digested_json(task).encode())
    try:
        digest.update(source_of(task.source).digest(task.source, task).encode())
    except SourceError as error:
        raise BuildError(f"task {task.id}: {error}") from None
    for relative in task.authored_tests:
        path = task.authored_dir() / relative
        if not path.is_file():
            raise BuildError(f"task {task.id}: authored test {path} does not exist")
        digest.update(relative.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:24]


def unused_site_packages() -> list[Path]:
    """The base interpreter's site-packages when the running venv does not use them: the
    sandbox shows the base interpreter's folder, and packages installed there (maybe the
    very package a task is made from) must not be readable."""
    if sys.prefix == sys.base_prefix:
        return []
    config = Path(sys.prefix) / "pyvenv.cfg"
    text = config.read_text(encoding="utf-8") if config.is_file() else ""
    if "include-system-site-packages = true" in text.replace("\t", " "):
        return []
    base = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_prefix})
    found = {Path(base["purelib"]), Path(base["platlib"])}
    return sorted(path for path in found if path.is_dir())


def secret_paths(task: Task) -> list[Path]:
    """What an agent must not see: the task file's folder, what its source hides (a
    source folder and its git history, a Harbor task folder), the base interpreter's
    unused site-packages."""
    paths = unused_site_packages()
    if task.path is not None:
        paths.append(task.path.parent)
    paths += source_of(task.source).secret_paths(task.source, task)
    return list(dict.fromkeys(paths))


def scan_hidden_paths(task: Task) -> list[Path]:
    """What the sandbox will hide of what it shows, for the leak scan's view."""
    return [*default_hidden_paths(), *harness_dirs(), *secret_paths(task)]


def source_tree(task: Task, cache: Path | None = None) -> Path:
    """The task's source as a folder: the repository's folder, the prepared sdist, ..."""
    try:
        return source_of(task.source).tree(task.source, task, cache or build_cache())
    except SourceError as error:
        raise BuildError(f"task {task.id}: {error}") from None


def build(task: Task, cache: Path | None = None, scan: bool = True) -> BuiltTask:
    digest = task_digest(task)
    root = (cache or build_cache()) / "workspaces" / f"{task.id}-{digest}"
    source = source_of(task.source)
    tree = source_tree(task, cache)  # a package's sdist hash is checked on every build
    ensure_task_environment(task)  # before the leak scan, which reads it too

    def fill(staging: Path) -> None:
        if not source.mutated:
            source.build_into(task.source, task, tree, staging)
            return
        _build_into(task, staging, tree)
        if scan:
            check_leaks(task, staging)

    build_once(root, digest, fill)
    return BuiltTask(task, digest, root)


def environment_of(task: Task) -> Path | None:
    """Where the task's own Python environment is kept; None: it runs in the harness's."""
    if task.environment is None:
        return None
    return environment_path(task.environment.requirements)


def ensure_task_environment(task: Task) -> Path | None:
    """The task's environment, made unless it is made already; refused when it holds the
    task's own package."""
    if task.environment is None:
        return None
    try:
        env = ensure_environment(task.environment.requirements)
        package = source_of(task.source).distribution(task.source)
        if package is not None:
            refuse_package(env, package)
    except EnvironmentFailed as error:
        raise BuildError(f"task {task.id}: environment: {error}") from None
    return env


def check_leaks(task: Task, root: Path) -> None:
    """Fails the build when the answer can be read from the workspace or the environment."""
    patch = (root / "reference.patch").read_text(encoding="utf-8")
    found = leaks.scan(
        root / "workspace",
        patch,
        root / "hidden",
        scan_hidden_paths(task),
        allow=task.leak_allow,
        python_env=environment_of(task),
    )
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise BuildError(f"task {task.id}: leak: {found[0]}{more}")


def _build_into(task: Task, staging: Path, source: Path) -> None:
    original, workspace, hidden = staging / "original", staging / "workspace", staging / "hidden"
    copy_source(source, original)
    for number, operation in enumerate(task.setup, start=1):
        try:
            apply_operation(original, operation)
        except (BuildError, OSError, SyntaxError) as error:
            raise BuildError(
                f"task {task.id}: setup step {number} ({operation.op}): {error}"
            ) from None
    for relative in task.authored_tests:
        if (original / relative).exists():
            raise BuildError(f"task {task.id}: authored test {relative} is already in the source")
        (original / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(task.authored_dir() / relative, original / relative)
    shutil.copytree(original, workspace, symlinks=True)
    operations = task.mutation.operations if task.mutation is not None else []
    for number, operation in enumerate(operations, start=1):
        try:
            apply_operation(workspace, operation)
        except (BuildError, OSError, SyntaxError) as error:
            message = f"task {task.id}: mutation step {number} ({operation.op}): {error}"
            raise BuildError(message) from None
    hidden.mkdir()
    for relative in task.verification.hidden_tests:
        if not (original / relative).is_file():
            raise BuildError(f"task {task.id}: hidden test {relative} is not in the source")
        (hidden / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(original / relative, hidden / relative)
        (workspace / relative).unlink(missing_ok=True)
    removed = leaks.removed_definitions(
        original, workspace, [Path(test) for test in task.verification.hidden_tests]
    )
    leaks.strip_spec(workspace, removed, task.leak_allow)
    (staging / "reference.patch").write_text(_reference_patch(staging, task))


def _reference_patch(staging: Path, task: Task) -> str:
    """The reverse of the mutation, made by git: workspace -> original minus hidden tests."""
    scratch = staging / "scratch"
    shutil.copytree(staging / "workspace", scratch / "tree", symlinks=True)
    baseline = Baseline(scratch / "git", scratch / "tree")
    baseline.snapshot()
    shutil.rmtree(scratch / "tree")
    shutil.copytree(staging / "original", scratch / "tree", symlinks=True)
    for relative in task.verification.hidden_tests:
        (scratch / "tree" / relative).unlink()
    patch = baseline.diff()
    shutil.rmtree(scratch)
    return patch


def apply_operation(root: Path, operation: Operation) -> None:
    path = root / operation.file
    if not path.is_file():
        raise BuildError(f"{operation.file}: no such file")
    if isinstance(operation, RemoveFile):
        path.unlink()
    elif isinstance(operation, ReplaceText):
        text = path.read_text(encoding="utf-8")
        count = text.count(operation.old)
        if count != 1:
            raise BuildError(f"{operation.file}: text to replace occurs {count} times, not once")
        path.write_text(text.replace(operation.old, operation.new), encoding="utf-8")
    elif isinstance(operation, RemoveSymbol):
        text = path.read_text(encoding="utf-8")
        path.write_text(remove_symbol(text, operation.symbol, operation.file), encoding="utf-8")
    elif isinstance(operation, MoveSymbol):
        move_symbol(root, operation)


def move_symbol(root: Path, operation: MoveSymbol) -> None:
    """Cuts a top-level def/class (with its decorators) and appends it to `into`."""
    if "." in operation.symbol:
        raise BuildError(
            f"{operation.file}: only a top-level symbol can move, not {operation.symbol!r}"
        )
    path, target = root / operation.file, root / operation.into
    text = path.read_text(encoding="utf-8")
    node = _find(parse_module(text, filename=operation.file).body, operation.symbol, _DEFINITIONS)
    if node is None or node.end_lineno is None:
        raise BuildError(f"{operation.file}: no definition {operation.symbol!r}")
    start = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
    code = "".join(text.splitlines(keepends=True)[start : node.end_lineno])
    path.write_text(remove_symbol(text, operation.symbol, operation.file), encoding="utf-8")
    before = target.read_text(encoding="utf-8").rstrip() if target.is_file() else ""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(
        (before + "\n\n\n" if before else "") + code.rstrip() + "\n", encoding="utf-8"
    )


def remove_symbol(source: str, symbol: str, filename: str = "<source>") -> str:
    """Deletes a top-level def/class, or `Class.method`, with its decorators."""
    body = parse_module(source, filename=filename).body
    *owners, name = symbol.split(".")
    for owner in owners:
        owner_node = _find(body, owner, (ast.ClassDef,))
        if owner_node is None:
            raise BuildError(f"{filename}: no class {owner!r}")
        body = owner_node.body
    node = _find(body, name, _DEFINITIONS)
    if node is None or node.end_lineno is None:
        raise BuildError(f"{filename}: no definition {symbol!r}")
    start = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
    lines = source.splitlines(keepends=True)
    end = node.end_lineno
    while (
        start > 0 and end < len(lines) and not lines[start - 1].strip() and not lines[end].strip()
    ):
        end += 1  # also drop the blank lines that separated it from what follows
    kept = "".join(lines[:start] + lines[end:])
    return kept.rstrip() + "\n" if end >= len(lines) else kept  # no blank tail at the end


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _find(
    body: list[ast.stmt], name: str, kinds: tuple[type[Definition], ...]
) -> Definition | None:
    for node in body:
        if isinstance(node, kinds) and node.name == name:
            return node
    return None
