"""Refactor tasks from the factory (`cursorbench/factory/refactor_tasks.py`): a module merged
into the sibling that imports it keeps the package working, merges that would change the
code's meaning are refused, the authored structure test tells the split from a copy or a
re-export, and a package goes from `propose --kind refactor` to a task that `tasks
validate` accepts and the reference resolves."""

from __future__ import annotations

import ast
import dataclasses
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cursorbench.factory.coverage_map import CoverageMap
from cursorbench.factory.measure import Job
from cursorbench.factory.refactor_tasks import (
    RefactorCandidate,
    enumerate_refactors,
    refactor_entries,
    refactor_prompt,
    structure_test,
)
from cursorbench.tasks.workspace import apply_operation
from tests.cursorbench.factory_pkg import propose_from, validate_then_run

CLI = [sys.executable, "-m", "cursorbench.cli.app"]
GEOMETRY = '''"""Plane geometry the shapes are built on."""

from __future__ import print_function

import math

__all__ = ["Shape", "circle_area", "square_area"]
UNIT = 1.0


class Shape:
    """A named plane figure."""

    def __init__(self, name):
        self.name = name

    def area(self):
        raise NotImplementedError

    def describe(self):
        return f"{self.name} of area {self.area():.2f}"


def circle_area(radius):
    if radius < 0:
        raise ValueError("negative radius")
    return math.pi * radius * radius


def square_area(side):
    if side < 0:
        raise ValueError("negative side")
    return side * side * UNIT


def _scaled(value, factor):
    total = value
    for _ in range(factor - 1):
        total += value
    return total


def doubled_area(shape):
    return _scaled(shape.area(), 2)
'''
SHAPES = '''"""The shapes users draw."""

import math

from .geometry import Shape, circle_area, square_area


class Circle(Shape):
    def __init__(self, radius):
        super().__init__("circle")
        self.radius = radius

    def area(self):
        return circle_area(self.radius)

    def perimeter(self):
        return 2 * math.pi * self.radius


class Square(Shape):
    def __init__(self, side):
        super().__init__("square")
        self.side = side

    def area(self):
        return square_area(self.side)
'''
INIT = (
    '"""splitkit: shapes."""\n\nfrom .geometry import doubled_area\n'
    "from .shapes import Circle, Square\n"
)
TEST_SHAPES = """import pytest

from splitkit import Circle, Square, doubled_area


def test_square_area():
    assert Square(3).area() == 9


def test_circle_area():
    assert round(Circle(1).area(), 4) == 3.1416


def test_describe():
    assert Square(2).describe() == "square of area 4.00"


def test_doubled():
    assert doubled_area(Square(2)) == 8


def test_negative():
    with pytest.raises(ValueError):
        Square(-1).area()


def test_perimeter():
    assert round(Circle(1).perimeter(), 2) == 6.28
"""
TEST_GEOMETRY = """from splitkit.geometry import circle_area, square_area


def test_circle_zero():
    assert circle_area(0) == 0


def test_square_one():
    assert square_area(1) == 1
"""
FILES = {
    "pyproject.toml": (
        '[project]\nname = "splitkit"\nversion = "0.2"\n\n'
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'
    ),
    "PKG-INFO": "Metadata-Version: 2.1\nName: splitkit\nVersion: 0.2\n",
    "src/splitkit/__init__.py": INIT,
    "src/splitkit/geometry.py": GEOMETRY,
    "src/splitkit/shapes.py": SHAPES,
    "tests/test_shapes.py": TEST_SHAPES,
    "tests/test_geometry.py": TEST_GEOMETRY,
}
SUB, HOST = "src/splitkit/geometry.py", "src/splitkit/shapes.py"


def _tree(root: Path, changes: dict[str, str] | None = None) -> Path:
    for relative, text in {**FILES, **(changes or {})}.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    return root


def _map(tree: Path) -> CoverageMap:
    """The coverage map's parts the enumeration reads: the package files' statements and
    the tests."""
    statements = {}
    for path in sorted((tree / "src").rglob("*.py")):
        parsed = ast.parse(path.read_text(encoding="utf-8"))
        lines = sorted({node.lineno for node in ast.walk(parsed) if isinstance(node, ast.stmt)})
        statements[str(path.relative_to(tree))] = lines
    outcomes = {f"tests/test_{name}.py::test_x": "passed" for name in ("shapes", "geometry")}
    return CoverageMap(outcomes, statements, {}, 0.0)


def _candidates(tree: Path) -> list[RefactorCandidate | tuple[str, str, str]]:
    testmap = _map(tree)
    return list(enumerate_refactors(tree, testmap, sorted(testmap.statements)))


def _pytest(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    env = {"PYTHONPATH": str(tree / "src"), "PATH": "/usr/bin:/bin"}
    return subprocess.run(command, cwd=tree, capture_output=True, text=True, env=env)


def _merged(tmp_path: Path) -> tuple[Path, RefactorCandidate]:
    tree = _tree(tmp_path / "tree")
    [candidate] = [c for c in _candidates(tree) if isinstance(c, RefactorCandidate)]
    merged = tmp_path / "merged"
    shutil.copytree(tree, merged)
    for operation in candidate.operations:
        apply_operation(merged, operation)
    return merged, candidate


def _no_job(candidate: RefactorCandidate, ident: str) -> Job:
    raise AssertionError("the entries are not measured here")


def test_a_module_no_visible_test_runs_is_not_measured(tmp_path: Path) -> None:
    """Only the split's structure would be checked, not that its behaviour is kept (validation
    refuses such a task: no PASS_TO_PASS), so it is left out before its build."""
    tree = _tree(tmp_path / "tree")
    testmap = _map(tree)

    def entries(runs: dict[str, dict[int, set[str]]]) -> list[str]:
        testmap.runs = runs
        files = sorted(testmap.statements)
        rows, _entries, _ = refactor_entries(tree, testmap, files, "splitkit", _no_job, 1)
        return [row.failed or "measured" for row in rows if row.task_id or row.failed == "spill"]

    assert entries({}) == ["spill"]  # no test runs it
    line = testmap.statements[SUB][0]
    assert entries({SUB: {line: {"tests/test_shapes.py::test_x"}}}) == ["measured"]


def test_the_merge_keeps_the_package_working_without_the_module(tmp_path: Path) -> None:
    merged, candidate = _merged(tmp_path)
    assert (candidate.file, candidate.host) == (SUB, HOST)
    defined = ["Shape", "circle_area", "square_area", "_scaled", "doubled_area"]
    assert candidate.definitions == defined
    assert candidate.taken == ["Shape", "circle_area", "square_area"]
    assert candidate.bound[:2] == ["UNIT", "Shape"]
    assert candidate.hidden_files == ["tests/test_geometry.py"]
    assert not (merged / SUB).exists()
    host = (merged / HOST).read_text()
    assert "def doubled_area(shape):" in host and "from .geometry" not in host
    # the module's docstring, __all__ and Python-3-only futures stay behind
    assert "__all__" not in host and "__future__" not in host and "Plane geometry" not in host
    assert (merged / "src/splitkit/__init__.py").read_text().count("from .shapes import") == 2
    done = _pytest(merged, "tests/test_shapes.py")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({SUB: GEOMETRY + "\nfrom .shapes import Circle\n"}, "imports its host"),
        ({HOST: SHAPES + "\nUNIT = 2.0\n"}, "`UNIT` is bound in both"),
        ({HOST: SHAPES + "\nfrom math import tau as math\n"}, "`math` is bound in both"),
        ({HOST: SHAPES.replace("Shape, circle", "Shape as Base, circle")}, "other names"),
        ({HOST: SHAPES + "\n\ndef later():\n    from .geometry import UNIT\n"}, "top level"),
        ({"src/splitkit/__init__.py": INIT + "from . import geometry\n"}, "imports the module"),
        ({SUB: "from __future__ import annotations\n" + GEOMETRY}, "annotations"),
    ],
)
def test_merges_that_would_change_the_code_are_refused(
    tmp_path: Path, changes: dict[str, str], why: str
) -> None:
    found = _candidates(_tree(tmp_path, changes))
    refused = [c for c in found if isinstance(c, tuple) and c[:2] == (SUB, HOST)]
    assert refused and why in refused[0][2], found


def test_an_import_both_modules_make_alike_is_not_a_clash(tmp_path: Path) -> None:
    both = {HOST: "import math as math\n" + SHAPES}
    found = _candidates(_tree(tmp_path, both))
    assert any(isinstance(c, RefactorCandidate) for c in found), found


def _structure(tree: Path, candidate: RefactorCandidate) -> subprocess.CompletedProcess[str]:
    test = structure_test("splitkit.geometry", "splitkit.shapes", candidate.definitions,
                          candidate.taken)  # fmt: skip
    (tree / "tests" / "test_geometry_split.py").write_text(test, encoding="utf-8")
    return _pytest(tree, "tests/test_geometry_split.py", "-rA")


def test_the_structure_test_passes_the_split_and_fails_a_copy_or_a_reexport(
    tmp_path: Path,
) -> None:
    merged, candidate = _merged(tmp_path)
    original = _tree(tmp_path / "original")
    done = _structure(original, candidate)
    assert done.returncode == 0 and "11 passed" in done.stdout, done.stdout
    assert "11 failed" in _structure(merged, candidate).stdout  # nothing done: every test fails
    # the code copied into the new module, the host keeping its own
    copied = tmp_path / "copied"
    shutil.copytree(merged, copied)
    (copied / SUB).write_text(GEOMETRY, encoding="utf-8")
    out = _structure(copied, candidate).stdout
    failed = "FAILED tests/test_geometry_split.py::"
    assert "passed" in out and f"{failed}test_the_host_still_offers_its_names" in out
    assert f"{failed}test_Shape_is_gone_from_the_host" in out
    # the definitions moved under an `if` in the host, the new module taking them from there
    tucked = tmp_path / "tucked"
    shutil.copytree(merged, tucked)
    host = (tucked / HOST).read_text().replace("\nclass Shape:", "\nif True:\n  class Shape:")
    (tucked / HOST).write_text(host, encoding="utf-8")
    (tucked / SUB).write_text("class Shape:\n    pass\n\nfrom .shapes import Shape  # noqa\n")
    out = _structure(tucked, candidate).stdout
    assert f"{failed}test_Shape_is_gone_from_the_host" in out
    # a new module re-exporting the host's code
    exported = tmp_path / "exported"
    shutil.copytree(merged, exported)
    (exported / SUB).write_text("from .shapes import *  # noqa\n", encoding="utf-8")
    out = _structure(exported, candidate).stdout
    assert f"{failed}test_the_module_defines_its_code_again" in out
    assert f"{failed}test_circle_area_is_defined_in_the_new_module" in out


def test_prompts_name_the_new_module_and_vary(tmp_path: Path) -> None:
    _, candidate = _merged(tmp_path)
    few = dataclasses.replace(candidate, bound=["A", "B", "C"])
    assert "`A`, `B` and `C`" in refactor_prompt("x", few, "splitkit.geometry", "splitkit.shapes")
    prompts = {
        refactor_prompt(f"splitkit-{n}", candidate, "splitkit.geometry", "splitkit.shapes")
        for n in range(12)
    }  # fmt: skip
    assert len(prompts) >= 4
    for prompt in prompts:
        assert "geometry" in prompt and "shapes" in prompt and len(prompt) < 400
        assert "`UNIT` down to `doubled_area`" in prompt, prompt
        # the authored test checks that the host still offers its names: every prompt says so
        keeps = ("keep working", "must not break", "still expose", "exporting the same names")
        assert any(phrase in prompt for phrase in keeps), prompt


@pytest.mark.slow
def test_refactor_tasks_propose_validate_and_resolve_with_the_reference(tmp_path: Path) -> None:
    out = tmp_path / "proposed"
    summary = propose_from(FILES, "splitkit==0.2", out, "refactor")
    assert summary["proposed_by_kind"] == {"refactor": 1}, summary
    ident = "splitkit-geometry-split-from-shapes"
    task = yaml.safe_load((out / "tasks" / f"{ident}.yaml").read_text())
    assert task["category"] == "refactor" and task["mutation"]["kind"] == "rewrite"
    authored = "tests/test_geometry_split.py"
    assert task["authored_tests"] == [authored]
    assert (out / "tasks" / ident / authored).is_file()
    check = task["verification"]
    assert check["hidden_tests"] == [authored, "tests/test_geometry.py"]
    assert "tests/test_geometry.py::test_circle_zero" in check["fail_to_pass"]
    assert f"{authored}::test_Shape_is_gone_from_the_host" in check["fail_to_pass"]
    assert "tests/test_shapes.py::test_doubled" in check["pass_to_pass"]
    run = validate_then_run(out / "tasks", tmp_path)  # validate: untouched and stub fail
    assert run["attempts"] == run["resolved"] == 1
