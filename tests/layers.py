"""The one table of allowed imports (`LAYERS`), and the walker that finds every import.

The project is five packages, each split into layers: a subpackage, a module, or a named
group of root modules (`harness:shared`). A module belongs to the layer whose `modules`
name it most closely (`harness.grading.grade` to `harness.grading`). A module may import

- any module of its own layer;
- any module of a layer its layer lists in `imports`;
- one of the modules its layer lists in `exceptions` (a single module of a layer it may not
  import as a whole, each with the reason);
- under `if TYPE_CHECKING:` only, a module of a layer listed in `type_imports`.

Whatever else is imported is a violation, unless `KNOWN_VIOLATIONS` lists it as one to be
removed. `tests/test_imports.py` checks every import of every module (at module level, in
functions, under `if TYPE_CHECKING:`) against this table, that the layers' `imports` form
no cycle, and that the modules of a package import each other in no cycle.
`scripts/gen_architecture.py` draws `docs/architecture.md` from this table.

Packages, bottom to top: `harness` (the engine) < `leaderboard` < `evals` < `cursorbench` <
`training`; nothing outside `training` imports it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harness", "leaderboard", "evals", "cursorbench", "training")  # bottom to top
NOT_CODE = ("cursorbench/suite/", "evals/codebases/")  # task data: codebases, not the project

Where = Literal["module", "function", "types"]


@dataclass(frozen=True)
class Layer:
    """One row of the table: what a part of a package may import."""

    name: str  # a package, subpackage or module; `package:group` for a group of root modules
    imports: tuple[str, ...] = ()  # layers it may import as a whole
    exceptions: Mapping[str, str] = field(default_factory=dict)  # module -> why
    type_imports: tuple[str, ...] = ()  # layers it may import under TYPE_CHECKING only
    modules: tuple[str, ...] = ()  # what it holds [its name]; see `covers`
    facade: bool = False  # only the package's `__init__`: its lazy exports
    summary: str = ""  # what it owns, where no docstring says it (a group, a folder)

    def covers(self) -> tuple[str, ...]:
        return self.modules or (self.name,)

    @property
    def package(self) -> str:
        return self.name.split(":")[0].split(".")[0]


SHARED = "harness:shared"  # the harness's root modules below its subpackages
SHARED_MODULES = (
    "harness.errors", "harness.home", "harness.lazy", "harness.patch", "harness.pyast",
    "harness.results", "harness.trees",
)  # fmt: skip
ENGINE = (  # every layer of the engine but its exports, bottom to top
    SHARED, "harness.sandbox", "harness.envs", "harness.model", "harness.kinds",
    "harness.spec", "harness.agent", "harness.grading", "harness.run",
)  # fmt: skip
# what building and checking a task uses of the engine
BUILDING = (SHARED, "harness.sandbox", "harness.envs", "harness.kinds", "harness.spec")

LAYERS: tuple[Layer, ...] = (
    # -- harness: the engine; it knows nothing of the other packages ----------------------
    Layer(
        SHARED,
        modules=SHARED_MODULES,
        summary="The types and helpers every part of the engine shares: results, errors, "
        "the cache home, lazy exports, patches, Python source helpers, file trees.",
    ),
    Layer(
        "harness.sandbox",
        imports=(SHARED,),
        exceptions={
            "harness.grading.pytest_env": "an agent's pytest runs with grading's plugins and flags"
        },
    ),
    Layer("harness.envs", imports=(SHARED, "harness.sandbox")),
    Layer(
        "harness.model",
        imports=(SHARED,),
        exceptions={"harness.agent.trajectory": "a replay reads the recorded trajectories"},
    ),
    Layer(
        "harness.kinds",
        imports=(SHARED, "harness.sandbox"),
        exceptions={
            "harness.grading.blame": "a kind's grading says whose fault a failure is",
            "harness.grading.junit": "a kind reads the JUnit report of its test run",
            "harness.grading.canaries": "a kind's test run carries the tamper canaries",
            "harness.grading.twin": "a kind's test run is checked against its twin",
        },
        type_imports=("harness.spec",),
    ),
    Layer("harness.spec", imports=(SHARED, "harness.kinds")),
    Layer("harness.agent", imports=(SHARED, "harness.sandbox", "harness.model", "harness.spec")),
    Layer(
        "harness.grading",
        imports=(SHARED, "harness.sandbox", "harness.kinds", "harness.spec"),
    ),
    Layer("harness.run", imports=ENGINE[:-1]),
    Layer("harness", facade=True, imports=(SHARED,), type_imports=ENGINE[1:]),
    # -- leaderboard: stored runs; on the harness's result types --------------------------
    Layer(
        "leaderboard",
        imports=(SHARED,),
        exceptions={
            "harness.model.pricing": "costs are priced as a run prices them",
            "harness.agent.atif": "runs export their trajectories in ATIF",
            "harness.run.plan": "an imported run folder's plan",
            "harness.run.rundir": "an imported run folder",
            "harness.run.summary": "a stored run's summary is the runner's",
        },
    ),
    Layer(
        "leaderboard.migrations",
        imports=("leaderboard",),
        summary="The Alembic migrations of the leaderboard's schema (a folder of scripts, "
        "not a package).",
    ),
    # -- evals: the behaviour evals; on the harness ---------------------------------------
    Layer("evals.graders", imports=(SHARED, "harness.grading", "harness.spec")),
    Layer(
        "evals",
        imports=(SHARED, "harness.model", "harness.spec", "evals.graders"),
        exceptions={
            "leaderboard.stats": "an eval's interval is computed as the leaderboard's",
        },
    ),
    Layer("evals.generated", imports=(SHARED, "evals", "evals.graders")),
    Layer("evals.catalogue", imports=(SHARED, "evals", "evals.generated")),
    Layer(
        "evals.judge",
        imports=(
            SHARED,
            "harness.model",
            "harness.spec",
            "evals",
            "evals.graders",
            "evals.catalogue",
        ),
    ),
    Layer(
        "evals.labelled",
        imports=(
            SHARED,
            "harness.model",
            "evals",
            "evals.generated",
            "evals.catalogue",
            "evals.graders",
        ),
    ),
    # -- cursorbench: the suite, the run config, the API and the CLI ----------------------
    Layer("cursorbench.problems"),
    Layer("cursorbench.config", imports=(SHARED, "harness.model", "cursorbench.problems")),
    Layer(
        "cursorbench.tasks",
        imports=(*BUILDING, "harness.model", "harness.grading", "cursorbench.config"),
        exceptions={"cursorbench.validation.leaks": "a build ends with the leak scan"},
    ),
    Layer(
        "cursorbench.validation",
        imports=(*BUILDING, "harness.grading", "cursorbench.tasks"),
    ),
    Layer(
        "cursorbench.harbor",
        imports=(*BUILDING, "harness.model", "harness.grading", "cursorbench.tasks"),
    ),
    Layer(
        "cursorbench.factory",
        imports=(*ENGINE, "cursorbench.tasks", "cursorbench.validation"),
    ),
    Layer(
        "cursorbench.api",
        imports=(
            *ENGINE,
            "leaderboard",
            "evals",
            "evals.catalogue",
            "evals.judge",
            "cursorbench.config",
            "cursorbench.tasks",
            "cursorbench.harbor",
        ),
    ),
    Layer("cursorbench.report", imports=(SHARED, "harness.run", "evals")),
    Layer(
        "cursorbench.verify",
        imports=(
            SHARED,
            "harness.model",  # a replay's divergence, told apart from the recording's errors
            "harness.run",
            "cursorbench.config",
            "cursorbench.tasks",  # the current tasks' digests, compared with the recorded ones
            "cursorbench.api",
        ),
    ),
    Layer(
        "cursorbench.calibration",
        imports=(
            SHARED,
            "harness.model",
            "evals",
            "evals.catalogue",
            "evals.labelled",
            "cursorbench.config",
            "cursorbench.api",
        ),
    ),
    Layer(
        "cursorbench.cli",
        imports=(
            *ENGINE,
            "leaderboard",
            "cursorbench.config",
            "cursorbench.tasks",
            "cursorbench.validation",
            "cursorbench.harbor",
            "cursorbench.factory",
            "cursorbench.api",
            "cursorbench.report",
            "cursorbench.verify",
        ),
    ),
    Layer(
        "cursorbench",
        facade=True,
        imports=(SHARED,),
        type_imports=(
            "harness.run",
            "cursorbench.config",
            "cursorbench.tasks",
            "cursorbench.validation",
            "cursorbench.api",
        ),
    ),
    # -- training: models, serving, gating, RL; on the harness, the suite, the leaderboard --
    Layer(
        "training",
        imports=(
            SHARED,
            "harness.model",
            "harness.agent",
            "harness.run",
            "leaderboard",
            "cursorbench.config",
            "cursorbench.tasks",
            "cursorbench.api",
        ),
    ),
    Layer(
        "training.rl",
        imports=(*ENGINE, "cursorbench.tasks", "training"),
    ),
)


@dataclass(frozen=True)
class Known:
    """An import the table does not allow, to be removed: `importer` (a module and its
    submodules) importing `imported` (likewise)."""

    importer: str
    imported: str
    why: str


KNOWN_VIOLATIONS: tuple[Known, ...] = (
    Known(
        "cursorbench.tasks.stats",
        "cursorbench.validation",
        "suite statistics read validation results: they belong above validation",
    ),
)


@dataclass(frozen=True)
class KnownCycle:
    """Modules of one package that import each other in a circle through imports deferred
    into functions (none is at module level), to be broken."""

    modules: frozenset[str]
    why: str


KNOWN_DEFERRED_CYCLES: tuple[KnownCycle, ...] = ()


# -- the table's lookups --------------------------------------------------------------------


def layer_named(name: str) -> Layer:
    for layer in LAYERS:
        if layer.name == name:
            return layer
    raise KeyError(f"no layer {name!r} in tests/layers.py")


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def layer_of(module: str) -> Layer | None:
    """The layer holding `module`: the one naming it most closely (None: in none)."""
    best: tuple[int, Layer] | None = None
    for layer in LAYERS:
        for prefix in layer.covers():
            if (module == prefix if layer.facade else _within(module, prefix)) and (
                best is None or len(prefix) > best[0]
            ):
                best = (len(prefix), layer)
    return None if best is None else best[1]


def allowed(importer: str, imported: str, where: Where) -> bool:
    """Whether the table lets `importer` import `imported` (`where` it is imported)."""
    mine, theirs = layer_of(importer), layer_of(imported)
    if mine is None or theirs is None:
        return False
    if theirs is mine or theirs.name in mine.imports:
        return True
    if any(_within(imported, module) for module in mine.exceptions):
        return True
    return where == "types" and theirs.name in mine.type_imports


def known(importer: str, imported: str) -> Known | None:
    for entry in KNOWN_VIOLATIONS:
        if _within(importer, entry.importer) and _within(imported, entry.imported):
            return entry
    return None


# -- the walker -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Import:
    """One imported module of the project: `path:line` (relative to the root), who imports
    it, and where: at module level, in a function, or under `if TYPE_CHECKING:`."""

    path: str
    line: int
    importer: str
    imported: str
    where: Where

    def __str__(self) -> str:
        return f"{self.path}:{self.line} {self.importer} -> {self.imported} ({self.where})"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_files(root: Path = ROOT) -> list[Path]:
    """Every module of the five packages (task codebases under them left out)."""
    return [
        path
        for package in PACKAGES
        for path in sorted((root / package).rglob("*.py"))
        if not path.relative_to(root).as_posix().startswith(NOT_CODE)
    ]


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _targets(node: ast.Import | ast.ImportFrom, package: str, modules: set[str]) -> list[str]:
    """The modules one import statement names: `from a import b` is `a.b` where that is a
    module, else `a`; a relative import is resolved against `package`."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        parts = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join([*parts, *([node.module] if node.module else [])])
    named = [f"{base}.{alias.name}" for alias in node.names]
    return list(dict.fromkeys(name if name in modules else base for name in named))


def _statements(node: ast.AST, where: Where) -> Iterator[tuple[ast.AST, Where]]:
    """Every node under `node` with where it runs: a function's body is `function`, an
    `if TYPE_CHECKING:` body `types` (its `else:` stays where it was)."""
    for child in ast.iter_child_nodes(node):
        yield child, where
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for inner in child.body:
                yield inner, "types"
                yield from _statements(inner, "types")
            for inner in child.orelse:
                yield inner, where
                yield from _statements(inner, where)
            continue
        deferred = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        yield from _statements(child, "function" if deferred and where == "module" else where)


def imports_in(path: Path, root: Path = ROOT, modules: set[str] | None = None) -> list[Import]:
    """The project's modules `path` imports, at any depth (`modules`: the project's, to tell
    `from package import module` from `from module import name`)."""
    importer = module_name(path, root)
    package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    where_from = path.relative_to(root).as_posix()
    found = []
    for node, where in _statements(tree, "module"):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        for name in _targets(node, package, modules or set()):
            if name.split(".")[0] in PACKAGES:
                found.append(Import(where_from, node.lineno, importer, name, where))
    return found


def project_imports(root: Path = ROOT) -> list[Import]:
    """Every import of one project module by another, in file and line order."""
    files = source_files(root)
    modules = {module_name(path, root) for path in files}
    return [found for path in files for found in imports_in(path, root, modules)]


# -- graphs ---------------------------------------------------------------------------------


def circles(graph: Mapping[str, Iterable[str]]) -> list[frozenset[str]]:
    """The nodes that reach each other in `graph` (its strongly connected components of more
    than one node), each a set, in no particular order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = {stack.pop()}
            while node not in component:
                component.add(stack.pop())
            if len(component) > 1:
                found.append(frozenset(component))

    for node in list(graph):
        if node not in index:
            visit(node)
    return found


def layer_graph() -> dict[str, tuple[str, ...]]:
    """Each layer and the layers it may import as a whole."""
    return {layer.name: layer.imports for layer in LAYERS}


def package_graph() -> dict[str, set[str]]:
    """Each package and the other packages the table lets it import (whole layers,
    exceptions and type-only imports alike)."""
    graph: dict[str, set[str]] = {package: set() for package in PACKAGES}
    for layer in LAYERS:
        named = [*layer.imports, *layer.type_imports]
        targets = [layer_named(name).package for name in named]
        targets += [module.split(".")[0] for module in layer.exceptions]
        graph[layer.package] |= {target for target in targets if target != layer.package}
    return graph


def heights(graph: Mapping[str, Iterable[str]]) -> dict[str, int]:
    """How high each node of an acyclic `graph` stands: 0 when it imports nothing, else one
    above the highest node it imports."""
    found: dict[str, int] = {}

    def height(node: str) -> int:
        if node not in found:
            found[node] = 1 + max((height(other) for other in graph.get(node, ())), default=-1)
        return found[node]

    for node in graph:
        height(node)
    return found
