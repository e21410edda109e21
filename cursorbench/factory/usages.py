"""Understanding tasks: "which functions use `f`?", graded by the `answer` kind.

Before changing a function, a developer asks where it is used. A usage candidate is a
top-level function `f` of a package module that the suite's tests execute; its answer
is the set of functions and methods of the package's code (tests left out) whose bodies
refer to `f` by name: in `f`'s own module, and in modules that import it by name
(`from .m import f`, `import ... as` aliases included). Found on the AST, so it is
exact for what the question asks ("call it or refer to it by name"); a candidate is
dropped where the question would be ambiguous:
- a function that refers to `f` also binds the name itself (a parameter, an assignment,
  an import of another `f`), or a module rebinds it;
- `f`'s name is used in a string or an attribute (`obj.f`, `getattr(x, "f")`) anywhere
  in the package's code (the reader could not tell those apart from uses);
- fewer than `MIN_USERS` or more than `MAX_USERS` functions use it.

The workspace is the release without the test files that execute `f` (a trace of those
tests would list its callers for the agent; v1's understanding tasks take tests out
too; at least one test file stays); the agent writes `answers.json` with the dotted
names.
"""

from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from cursorbench.factory.bugs import functions_of
from cursorbench.factory.candidates import test_file
from cursorbench.factory.coverage_map import CoverageMap, dotted_module, is_test_file
from harness.pyast import parse_module

MIN_USERS, MAX_USERS = 2, 8
ANSWER_FILE = "answers.json"
Parsed = dict[str, ast.Module]


@dataclass
class UsageCandidate:
    file: str
    function: str
    module: str  # dotted
    users: list[str] = field(default_factory=list)  # dotted names, sorted
    test_files: list[str] = field(default_factory=list)  # test files that execute it

    @property
    def names(self) -> list[str]:
        return [self.function]

    @property
    def key(self) -> str:
        return f"{self.file}::usages:{self.function}"


def _bound(node: ast.AST, name: str) -> bool:
    """Whether `node` (a function) binds `name` itself."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name) and inner.id == name and not isinstance(inner.ctx, ast.Load):
            return True
        if isinstance(inner, ast.arg) and inner.arg == name:
            return True
        if isinstance(inner, ast.alias) and (inner.asname or inner.name) == name:
            return True
        if (
            isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and inner is not node
            and inner.name == name
        ):
            return True
    return False


def _refers(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _quiet_strings(module: ast.Module) -> set[int]:
    """Ids of the module's strings that are no use of a name: docstrings, `__all__`."""
    quiet: set[int] = set()
    for node in ast.walk(module):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            quiet.add(id(body[0].value))
        is_all = isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign) and any(
            isinstance(t, ast.Name) and t.id == "__all__"
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        )
        if is_all:
            quiet |= {id(inner) for inner in ast.walk(node)}
    return quiet


def _mentions(module: ast.Module, name: str) -> bool:
    """Whether `name` is an attribute (`mod.f`) or a word of a string (`getattr(x, "f")`)
    in the module, uses that the question's static reading would miss."""
    word = re.compile(rf"\b{re.escape(name)}\b")
    quiet = _quiet_strings(module)
    for node in ast.walk(module):
        if isinstance(node, ast.Attribute) and node.attr == name:
            return True
        text = node.value if isinstance(node, ast.Constant) else None
        if isinstance(text, str) and id(node) not in quiet and word.search(text):
            return True
    return False


def _source_of(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    """The dotted module an import takes from, relative imports resolved against the
    importing module (`importer`, dotted; a package's `__init__` is its package)."""
    if not node.level:
        return node.module or ""
    parts = importer.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
    return ".".join([*base, *([node.module] if node.module else [])])


def _imported_as(
    module: ast.Module, importer: str, is_package: bool, source: str, name: str
) -> str | None:
    """The local name under which `module` (dotted `importer`) imports `name` from the
    module `source`; "*" for a star import of it; None when it does neither."""
    for node in ast.walk(module):
        if not isinstance(node, ast.ImportFrom):
            continue
        if _source_of(node, importer, is_package) != source:
            continue
        for alias in node.names:
            if alias.name == "*":
                return "*"
            if alias.name == name:
                return alias.asname or alias.name
    return None


def _top_rebinds(module: ast.Module, name: str) -> int:
    """How many top-level statements of the module bind `name`."""
    count = 0
    for node in module.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            count += node.name == name
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            count += any(_refers(t, name) for t in targets)
    return count


def users_in(
    module: ast.Module, dotted: str, local: str, skip: str | None = None
) -> list[str] | None:
    """Dotted names of the module's functions and methods that refer to `local`; None
    when one of them binds that name itself (ambiguous). `skip`: the function itself."""
    found: list[str] = []
    for qualified, node in functions_of(module):
        if qualified == skip or not _refers(node, local):
            continue
        if _bound(node, local):
            return None
        found.append(f"{dotted}.{qualified}")
    return found


def _candidate(file: str, function: str, parsed: Parsed, tree: Path) -> UsageCandidate | None:
    own = parsed[file]
    dotted = dotted_module(tree, file)
    if _top_rebinds(own, function) != 1:
        return None
    users = users_in(own, dotted, function, skip=function)
    if users is None:
        return None
    for other, module in parsed.items():
        if _mentions(module, function):
            return None
        if other == file or is_test_file(other):
            continue
        importer = dotted_module(tree, other)
        local = _imported_as(module, importer, other.endswith("__init__.py"), dotted, function)
        if local is None:
            continue
        if local == "*":  # what a star import brings depends on __all__ and underscores
            if _refers(module, function):
                return None
            continue
        more = users_in(module, importer, local)
        if more is None:
            return None
        users += more
    if not MIN_USERS <= len(users) <= MAX_USERS:
        return None
    return UsageCandidate(file, function, dotted, sorted(users))


def enumerate_usages(tree: Path, testmap: CoverageMap) -> list[UsageCandidate]:
    """Every usage candidate among the top-level functions the tests execute, with the
    test files that execute it (taken out of its workspace, which keeps at least one)."""
    parsed: Parsed = {}
    for relative in sorted(testmap.statements):
        try:
            parsed[relative] = parse_module((tree / relative).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
    suite_files = {test_file(t) for t in testmap.outcomes}
    found: list[UsageCandidate] = []
    for file, module in parsed.items():
        for node in module.body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            body = range(node.body[0].lineno, (node.end_lineno or node.lineno) + 1)
            files = sorted({test_file(t) for t in testmap.tests_running(file, body)})
            if not files or len(files) >= len(suite_files):  # some suite must stay
                continue
            candidate = _candidate(file, node.name, parsed, tree)
            if candidate is not None:
                candidate.test_files = files
                found.append(candidate)
    found.sort(key=lambda c: (-len(c.users), c.key))
    return found


def usage_spec(candidate: UsageCandidate, base: dict[str, object]) -> dict[str, object]:
    """The task's fields: `base` holds the id, source and environment."""
    removed = [{"op": "remove_file", "file": path} for path in candidate.test_files]
    facts = [{"kind": "names", "key": "functions", "names": candidate.users}]
    return dict(
        base,
        category="understanding",
        prompt=usage_prompt(str(base["id"]), candidate),
        mutation={"kind": "feature_deletion", "operations": removed},
        verification={"kind": "answer", "answer_file": ANSWER_FILE, "facts": facts},
    )


def _pick(seed: int, options: list[str]) -> str:
    return options[seed % len(options)]


def usage_prompt(task_id: str, candidate: UsageCandidate) -> str:
    seed = int(hashlib.sha256(task_id.encode()).hexdigest()[:8], 16)
    name = f"`{candidate.function}` in `{candidate.module}`"
    opening = _pick(seed, [
        f"I'm about to change the signature of {name}.",
        f"We want to rename {name}, so I need to know what would break.",
        f"Before I touch {name}, I'd like the full list of its users.",
    ])  # fmt: skip
    ask = _pick(seed >> 4, [
        "Which functions and methods in the package's code (not its tests) use it, calling "
        "it or referring to it by name?",
        "Find every function or method of the library (tests aside) that calls it or "
        "refers to it by name.",
    ])  # fmt: skip
    form = (
        f'Put them in {ANSWER_FILE} as "functions": a list of dotted names '
        "(package.module.function, or package.module.Class.method for a method). "
        "Don't change any code."
    )
    return f"{opening} {ask} {form}"
