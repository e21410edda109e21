"""Real codebases for generated scenarios: pure-Python packages installed with the project
(pinned by its environment), each copied as released into a codebase folder, and facts
about them read from their AST, so an expected answer is true of the code.

A package codebase is named `NAME-VERSION` (e.g. `click-8.5.1`). `package_codebase(name)`
builds it once into `$CURSORBENCH_HOME/evals/codebases/` (content-keyed): the package's
`.py` files and a `pyproject.toml` whose pytest `pythonpath` makes the workspace's copy the
one tests import. Packages that pytest itself loads (pluggy, iniconfig, packaging) are
never used: a hidden test would exercise the installed copy, not the workspace's.

Facts (`module_facts`): per module, its public top-level functions and the functions and
methods whose parameters default to an int or a bool (the edits generated tasks ask for).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import importlib.util
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from harness.home import build_once, cache_home
from harness.pyast import parse_module

# (import name, distribution): pure Python, not loaded by pytest or the harness's test run
PACKAGES: tuple[tuple[str, str], ...] = (
    ("click", "click"),
    ("h11", "h11"),
    ("mdurl", "mdurl"),
    ("markdown_it", "markdown-it-py"),
    ("pathspec", "pathspec"),
    ("tqdm", "tqdm"),
    ("mako", "Mako"),
    ("dateutil", "python-dateutil"),
    ("freezegun", "freezegun"),
    ("idna", "idna"),
    ("sortedcontainers", "sortedcontainers"),
    ("attr", "attrs"),
)
SKIPPED_PARTS = ("__pycache__", "tests", "test", "contrib", "_vendor", "ext")
SKIPPED_NAMES = ("__main__.py", "idnadata.py", "uts46data.py", "_winconsole.py", "conftest.py")
MAX_MODULE_BYTES = 60_000  # a whole-file write of a bigger module is unwieldy for a script


class PackageMissing(LookupError):
    """A package of `PACKAGES` is not installed here."""


@dataclass(frozen=True)
class Package:
    module: str  # import name
    version: str
    source: Path  # the installed package folder

    @property
    def codebase(self) -> str:
        return f"{self.module}-{self.version}"


@cache
def packages() -> tuple[Package, ...]:
    """The packages of `PACKAGES` installed here, in that order."""
    found = []
    for module, distribution in PACKAGES:
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            continue
        version = importlib.metadata.version(distribution)
        found.append(Package(module, version, Path(next(iter(spec.submodule_search_locations)))))
    return tuple(found)


def by_codebase(name: str) -> Package | None:
    return next((p for p in packages() if p.codebase == name), None)


def _about(path: str) -> bool:
    """A module facts are read from (not tests, optional extras or data tables)."""
    parts = path.split("/")
    return not any(part in SKIPPED_PARTS for part in parts[1:-1]) and parts[-1] not in SKIPPED_NAMES


@cache
def source_files(package: Package) -> dict[str, str]:
    """The package's Python files, by path in the codebase (`NAME/...`)."""
    files = {}
    for path in sorted(package.source.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        relative = path.relative_to(package.source).as_posix()
        files[f"{package.module}/{relative}"] = path.read_text(encoding="utf-8")
    return files


PYPROJECT = """[project]
name = "{module}-workspace"
version = "{version}"
dependencies = []

[tool.pytest.ini_options]
pythonpath = ["."]
testpaths = ["tests"]
"""


def package_codebase(name: str) -> Path:
    """The folder of the package codebase `name`, built once into the cache."""
    package = by_codebase(name)
    if package is None:
        raise PackageMissing(f"no installed package for codebase {name!r}")
    files = dict(source_files(package))
    files["pyproject.toml"] = PYPROJECT.format(module=package.module, version=package.version)
    key = hashlib.sha256(repr(sorted(files.items())).encode()).hexdigest()[:16]
    root = cache_home() / "evals" / "codebases" / f"{name}-{key}"

    def fill(staging: Path) -> None:
        for path, text in files.items():
            target = staging / "tree" / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")

    build_once(root, key, fill)
    return root / "tree"


# -- facts read from the AST -----------------------------------------------------------------


@dataclass(frozen=True)
class Default:
    """A parameter of a function (or `Class.method`) whose default is an int or a bool."""

    path: str  # in the codebase
    function: str  # "name" or "Class.name"
    parameter: str
    value: int | bool
    line: int  # 1-based line of the default
    col: int  # its start and end columns (utf-8 offsets, as ast gives them)
    end_col: int

    @property
    def module(self) -> str:
        return self.path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")

    def changed(self, step: int = 1) -> int | bool:
        """A different value: the other bool, or the int `step` above."""
        if isinstance(self.value, bool):
            return not self.value if step % 2 else self.value
        return self.value + step


@dataclass(frozen=True)
class ModuleFacts:
    path: str
    public_functions: tuple[str, ...]  # top-level `def`s not starting with "_", in order
    defaults: tuple[Default, ...]
    parameters: dict[str, tuple[str, ...]]  # public function -> its parameter names


def _public(name: str) -> bool:
    return not name.startswith("_")


def _function_defaults(path: str, qualified: str, node: ast.FunctionDef) -> list[Default]:
    args = node.args
    positional = args.posonlyargs + args.args
    tail = positional[len(positional) - len(args.defaults) :]
    pairs = list(zip(tail, args.defaults, strict=True))
    keywords = zip(args.kwonlyargs, args.kw_defaults, strict=True)
    pairs += [(a, d) for a, d in keywords if d is not None]
    found = []
    for arg, default in pairs:
        if not isinstance(default, ast.Constant) or default.lineno != default.end_lineno:
            continue
        value = default.value
        if isinstance(value, int):  # bool is an int too
            end = default.end_col_offset or default.col_offset
            found.append(
                Default(path, qualified, arg.arg, value, default.lineno, default.col_offset, end)
            )
    return found


def _decorated_oddly(node: ast.FunctionDef) -> bool:
    """Decorators other than staticmethod/classmethod may hide the signature."""
    return any(
        not (isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod"))
        for d in node.decorator_list
    )


# importable here but not in an attempt's sandbox (a GUI toolkit) or not on Linux
UNUSABLE_IMPORTS = frozenset({"tkinter", "_tkinter", "winreg", "msvcrt", "_winapi"})


@cache
def _importable(module: str) -> bool:
    return module not in UNUSABLE_IMPORTS and importlib.util.find_spec(module) is not None


def _imports_here(tree: ast.Module) -> bool:
    """Every module the file imports unconditionally (at its top level) is installed here
    (a Windows-only module, or one needing an optional extra, cannot be tested)."""
    names = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            names += [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module.split(".")[0])
    return all(_importable(name) for name in names)


def facts_of(path: str, source: str) -> ModuleFacts | None:
    try:
        tree = parse_module(source, path)
    except SyntaxError:
        return None
    if not _imports_here(tree):
        return None
    public, defaults, parameters = [], [], {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and _public(node.name):
            public.append(node.name)
            every = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
            parameters[node.name] = tuple(a.arg for a in every)
            if not _decorated_oddly(node):
                defaults += _function_defaults(path, node.name, node)
        elif isinstance(node, ast.ClassDef) and _public(node.name) and not node.decorator_list:
            for child in node.body:
                if (
                    isinstance(child, ast.FunctionDef)
                    and _public(child.name)
                    and not _decorated_oddly(child)
                ):
                    defaults += _function_defaults(path, f"{node.name}.{child.name}", child)
    return ModuleFacts(path, tuple(public), tuple(defaults), parameters)


@cache
def module_facts(name: str) -> tuple[ModuleFacts, ...]:
    """Facts of every module of the package codebase `name` small enough to script."""
    package = by_codebase(name)
    if package is None:
        raise PackageMissing(f"no installed package for codebase {name!r}")
    found = []
    for path, source in source_files(package).items():
        if not _about(path) or len(source.encode()) > MAX_MODULE_BYTES or "\t" in source:
            continue
        facts = facts_of(path, source)
        if facts is not None:
            found.append(facts)
    return tuple(found)


def with_default(source: str, default: Default, value: int | bool) -> str:
    """The source with that default replaced by `value` (its exact columns)."""
    lines = source.splitlines(keepends=True)
    raw = lines[default.line - 1].encode()
    new = raw[: default.col] + repr(value).encode() + raw[default.end_col :]
    lines[default.line - 1] = new.decode()
    return "".join(lines)
