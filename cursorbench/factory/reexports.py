"""Deleting a name that the package's `__init__.py` re-exports: the re-export goes too.

Most packages define their API in private modules and re-export it from the package's
`__init__.py` (`from ._conversion import (hex_to_name, ...)` and `__all__`). Deleting
`hex_to_name` alone breaks that import, and with it every test; so when the only
importer of a candidate's names is the `__init__.py` of the candidate's own package, and
it uses them nowhere but in that import and in `__all__`, the candidate also edits those
two statements (`replace_text` on their whole lines, written back one name a line, as the
formatters write them). The reference solution is the original, so the re-export is part
of the answer. Any other importer still refuses the candidate (`imported_elsewhere`).
The deleted names also leave their own module's `__all__` (`own_all_edits`): a star
import of the module fails on a listed name that is missing.
"""

from __future__ import annotations

import ast
from pathlib import Path

from cursorbench.tasks.task import ReplaceText
from harness.pyast import parse_module


def package_init(candidate_file: str) -> str:
    return str(Path(candidate_file).parent / "__init__.py")


def _lines(text: str, node: ast.stmt) -> str:
    assert node.end_lineno is not None
    return "\n".join(text.splitlines()[node.lineno - 1 : node.end_lineno])


def _alias(alias: ast.alias) -> str:
    return f"{alias.name} as {alias.asname}" if alias.asname else alias.name


def _import_text(node: ast.ImportFrom, kept: list[ast.alias], multiline: bool) -> str:
    head = f"from {'.' * node.level}{node.module or ''} import "
    if not kept:
        return ""
    if not multiline:
        return head + ", ".join(_alias(a) for a in kept)
    return head + "(\n" + "".join(f"    {_alias(a)},\n" for a in kept) + ")"


def _all_text(node: ast.Assign, elements: list[ast.expr], text: str, multiline: bool) -> str:
    shown = [ast.get_source_segment(text, e) or "" for e in elements]
    opening, closing = ("(", ")") if isinstance(node.value, ast.Tuple) else ("[", "]")
    if not multiline:
        single = "," if opening == "(" and len(shown) == 1 else ""
        return f"__all__ = {opening}{', '.join(shown)}{single}{closing}"
    return f"__all__ = {opening}\n" + "".join(f"    {s},\n" for s in shown) + closing


def uses_names(module: ast.Module, names: set[str]) -> bool:
    return any(
        isinstance(node, ast.Name) and node.id in names and isinstance(node.ctx, ast.Load)
        for node in ast.walk(module)
    )


def unexport_edits(
    tree: Path, candidate_file: str, names: set[str], module_name: str
) -> list[ReplaceText] | None:
    """The edits removing `names` from the package `__init__.py`'s re-export of
    `module_name` and from its `__all__`; None when the init uses them otherwise."""
    init = package_init(candidate_file)
    text = (tree / init).read_text(encoding="utf-8", errors="replace")
    try:
        module = parse_module(text)
    except SyntaxError:
        return None
    edits: list[ReplaceText] = []
    exported: set[str] = set()
    for node in module.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[-1] == module_name:
            dropped = [a for a in node.names if a.name in names]
            if not dropped:
                continue
            exported |= {a.asname or a.name for a in dropped}
            kept = [a for a in node.names if a.name not in names]
            old = _lines(text, node)
            edits.append(ReplaceText(file=init, old=old, new=_import_text(node, kept, "\n" in old)))
    if not edits or uses_names(module, exported):
        return None
    listed = all_edits(init, text, module, exported)
    if listed is None:
        return None
    edits += listed
    if any(text.count(edit.old) != 1 for edit in edits):
        return None
    return edits


def all_edits(
    file: str, text: str, module: ast.Module, names: set[str]
) -> list[ReplaceText] | None:
    """The edit removing `names` from the module's literal `__all__` (none when it lists
    none of them); None when `__all__` is not a literal list or tuple."""
    edits: list[ReplaceText] = []
    for node in module.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and node.targets else None
        if not (isinstance(target, ast.Name) and target.id == "__all__"):
            continue
        assert isinstance(node, ast.Assign)
        if not isinstance(node.value, ast.List | ast.Tuple):
            return None
        elements = node.value.elts
        kept = [e for e in elements if not (isinstance(e, ast.Constant) and e.value in names)]
        if len(kept) != len(elements):
            old = _lines(text, node)
            edits.append(
                ReplaceText(file=file, old=old, new=_all_text(node, kept, text, "\n" in old))
            )
    return edits


def own_all_edits(tree: Path, file: str, names: set[str]) -> list[ReplaceText] | None:
    """The edit removing deleted names from their own module's `__all__`, which a star
    import (`from .functoolz import *`) would otherwise fail on."""
    text = (tree / file).read_text(encoding="utf-8", errors="replace")
    try:
        module = parse_module(text)
    except SyntaxError:
        return None
    edits = all_edits(file, text, module, names)
    if edits is None or any(text.count(edit.old) != 1 for edit in edits):
        return None
    return edits
