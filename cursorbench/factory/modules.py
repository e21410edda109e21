"""Whole-module deletions: a package module (not `__init__.py` or `__main__.py`) with at
least two top-level definitions, removed as a file.

A module candidate removes every executable line of the file (the module-level code too),
so it makes the larger changes real sessions ask for. No other package file may import
the module or from it (`module_importers`), but for the package's own `__init__.py`
re-exporting names from it, whose import and `__all__` entries go with it
(`reexports.unexport_edits`), as for a symbol's deletion. Otherwise it is a deletion
candidate like the others (`candidates.describe`, the same filters).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from cursorbench.factory.candidates import (
    Candidate,
    describe,
    other_modules,
    top_level_symbols,
)
from cursorbench.factory.coverage_map import CoverageMap
from cursorbench.factory.reexports import all_edits, package_init, unexport_edits, uses_names
from cursorbench.tasks.task import RemoveFile, RemoveSymbol, ReplaceText
from harness.pyast import parse_module

MIN_DEFINITIONS = 2  # one definition alone is a symbol candidate already


@dataclass
class ModuleCandidate(Candidate):
    @property
    def key(self) -> str:
        return f"module:{self.file}"

    def operations(self) -> list[RemoveSymbol | ReplaceText | RemoveFile]:
        return [RemoveFile(file=self.file), *self.unexport]


def enumerate_modules(tree: Path, testmap: CoverageMap) -> list[ModuleCandidate]:
    """Every module candidate of the measured package files (`tasks propose` orders them
    with the other deletions)."""
    found: list[ModuleCandidate] = []
    for relative in sorted(testmap.statements):
        if Path(relative).name in ("__init__.py", "__main__.py"):
            continue
        symbols = top_level_symbols(tree, relative)
        if len(symbols) < MIN_DEFINITIONS or not any(s.public for s in symbols):
            continue
        # every line of the file goes, the module-level ones too (`describe` adds the rest)
        every_line = set(testmap.statements.get(relative, []))
        candidate = ModuleCandidate(relative, symbols, removed=every_line)
        describe(candidate, testmap)
        found.append(candidate)
    return found


def _imports_module(node: ast.AST, module: str, dotted: str) -> bool:
    """Whether the statement imports the module, or from it (`import pkg.mod`, `from .mod
    import x`, `from pkg.mod import *`, `from . import mod`, `from pkg import mod`)."""
    if isinstance(node, ast.Import):
        return any(a.name == dotted or a.name.startswith(dotted + ".") for a in node.names)
    if not isinstance(node, ast.ImportFrom):
        return False
    source = node.module or ""
    if source.split(".")[-1] == module or source == dotted:
        return True
    parent = dotted.rpartition(".")[0]
    of_parent = (node.level > 0 and source in ("", parent.split(".")[-1])) or source == parent
    return of_parent and any(a.name == module for a in node.names)


def module_importers(tree: Path, candidate: ModuleCandidate, files: list[str]) -> list[str]:
    """The package files that import the module (deleting it would break their import),
    but for the package's `__init__.py` when its re-export of the module's names can go
    with it (`candidate.unexport` is then set)."""
    stem = Path(candidate.file).stem
    inside = candidate.file.removeprefix("src/").removesuffix(".py")
    dotted = inside.replace("/", ".")
    init = package_init(candidate.file)
    found = [
        relative for relative, parsed in other_modules(tree, files, candidate.file)
        if any(_imports_module(node, stem, dotted) for node in ast.walk(parsed))
    ]  # fmt: skip
    if init in found:
        edits = _init_edits(tree / init, candidate.file, tree, stem)
        if edits is not None and not _still_imports(tree / init, stem, dotted, edits):
            candidate.unexport = edits
            found.remove(init)
    return found


def _init_edits(init: Path, file: str, tree: Path, module: str) -> list[ReplaceText] | None:
    """The edits taking the module out of the package's `__init__.py`: its named re-exports
    (with `__all__`), and its star imports (`from .module import *`, whole lines); None when
    the init uses the module or its names otherwise."""
    text = init.read_text(encoding="utf-8", errors="replace")
    parsed = parse_module(text)
    stars = [
        node for node in parsed.body
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[-1] == module
        and [a.name for a in node.names] == ["*"]
    ]  # fmt: skip
    named = _names_taken(init, module) - {"*"}
    edits = unexport_edits(tree, file, named, module) if named else []
    if edits is None:
        return None
    relative = str(Path(file).parent / "__init__.py")
    if stars:  # the module's names arrive unnamed: the init may not use them, `__all__` drops them
        defined = {symbol.name for symbol in top_level_symbols(tree, file)}
        listed = all_edits(relative, text, parsed, defined)
        if uses_names(parsed, defined) or listed is None:
            return None
        edits += listed
    for node in stars:
        assert node.end_lineno is not None
        old = "\n".join(text.splitlines()[node.lineno - 1 : node.end_lineno]) + "\n"
        if text.count(old) != 1:
            return None
        edits.append(ReplaceText(file=relative, old=old, new=""))
    return edits or None


def _names_taken(init: Path, module: str) -> set[str]:
    """The names `init` imports from the module (`from .module import a, b`)."""
    parsed = parse_module(init.read_text(encoding="utf-8", errors="replace"))
    names: set[str] = set()
    for node in parsed.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[-1] == module:
            names |= {a.name for a in node.names}
    return names


def _still_imports(init: Path, module: str, dotted: str, edits: list[ReplaceText]) -> bool:
    """Whether `init`, edited, would still import the module (a star import, `from . import
    module`, `import pkg.module`)."""
    text = init.read_text(encoding="utf-8", errors="replace")
    for edit in edits:
        text = text.replace(edit.old, edit.new, 1)
    try:
        parsed = parse_module(text)
    except SyntaxError:
        return True
    return any(_imports_module(node, module, dotted) for node in ast.walk(parsed))
