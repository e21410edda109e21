"""The engine does not know the suite: no module of `harness/` imports `cursorbench`."""

from __future__ import annotations

import ast
from pathlib import Path

HARNESS = Path(__file__).resolve().parents[2] / "harness"


def suite_imports(path: Path) -> list[str]:
    """`file:line name` of each import of `cursorbench` in the file, at any depth."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [
            f"{path.name}:{node.lineno} {name}"
            for name in names
            if name == "cursorbench" or name.startswith("cursorbench.")
        ]
    return found


def test_no_harness_module_imports_cursorbench() -> None:
    modules = sorted(HARNESS.rglob("*.py"))
    assert len(modules) > 20  # the walk found the package
    found = [line for path in modules for line in suite_imports(path)]
    assert found == [], f"harness/ must not import cursorbench: {found}"


def test_the_check_finds_imports_inside_functions(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import cursorbenchmark\n"
        "def f():\n"
        "    from cursorbench.tasks.workspace import cache_home\n"
        "    import os, cursorbench\n"
    )
    assert suite_imports(probe) == [
        "probe.py:3 cursorbench.tasks.workspace",
        "probe.py:4 cursorbench",
    ]
