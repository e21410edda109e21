"""Every parse in the harness goes through one lock (CPython 3.11's AST constructor is not
safe on several threads at once)."""

from __future__ import annotations

import ast
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness.pyast import parse_module

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("harness", "evals", "cursorbench", "leaderboard", "training")


def test_no_module_parses_python_but_through_the_lock() -> None:
    direct = []
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "suite" in path.parts and ({"tasks", "refused"} & set(path.parts)):
                continue  # tasks' own tests run in sandboxes, one process each
            if path.name in ("docs_probe.py", "refactor_template.py"):
                continue  # runs alone in a grading sandbox (the latter: a test's text)
            if path.name != "pyast.py" and re.search(r"\bast\.parse\(", path.read_text()):
                direct.append(str(path.relative_to(ROOT)))
    assert direct == []


def test_parses_from_many_threads_give_the_same_trees() -> None:
    body = "def f{}(x):\n    return [y for y in x if (y + {}) % 3]"
    source = "\n".join(body.format(i, i) for i in range(50))
    expected = ast.dump(ast.parse(source))
    with ThreadPoolExecutor(8) as pool:
        trees = list(pool.map(lambda _: ast.dump(parse_module(source)), range(64)))
    assert trees == [expected] * 64


def test_a_source_python_cannot_build_a_tree_for_does_not_parse() -> None:
    for source in ("x = " + "+".join(["1"] * 300_000), "x = 1\0", "(" * 10_000 + ")" * 10_000):
        try:
            parse_module(source)
        except SyntaxError:
            continue
        raise AssertionError(f"parsed: {source[:20]!r}")
