"""Whole-module deletions (`cursorbench/factory/modules.py`): which modules qualify, what
they remove, and which importers refuse them or go with them (the package's `__init__.py`
re-exporting by name or by star import)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cursorbench.factory.coverage_map import CoverageMap
from cursorbench.factory.modules import enumerate_modules, module_importers
from cursorbench.tasks.task import RemoveFile
from harness.home import build_cache
from tests.cli_runner import cursorbench
from tests.cursorbench.factory.test_factory_parts import _tree
from tests.cursorbench.factory_pkg import validate_then_run
from tests.cursorbench.sdists import make_sdist, place_sdist

SHAPES = '''"""Areas and perimeters."""

SIDES = 4


def area(w, h):
    a = w * h
    return a


def perimeter(w, h):
    p = 2 * (w + h)
    return p
'''


def _map() -> CoverageMap:
    tests = [f"tests/test_shapes.py::test_{n}" for n in range(6)]
    outcomes = {t: "passed" for t in tests} | {"tests/test_other.py::test_x": "passed"}
    lines = {1: {""}, 3: {""}, 6: {""}, 7: set(tests), 8: set(tests), 11: {""}}
    runs = {"pkg/shapes.py": lines | {12: set(tests[:3]), 13: set(tests[:3])}}
    return CoverageMap(outcomes, {"pkg/shapes.py": [1, 3, 6, 7, 8, 11, 12, 13]}, runs)


def test_a_module_removes_every_line_of_its_file(tmp_path: Path) -> None:
    tree = _tree(tmp_path, {"pkg/__init__.py": "", "pkg/shapes.py": SHAPES})
    (found,) = enumerate_modules(tree, _map())
    assert found.key == "module:pkg/shapes.py" and found.names == ["area", "perimeter"]
    assert found.removed == {1, 3, 6, 7, 8, 11, 12, 13}  # the module-level lines too
    assert found.hidden_files == ["tests/test_shapes.py"] and len(found.predicted_fail) == 6
    assert found.hidden_coverage == 1.0
    assert found.operations() == [RemoveFile(file="pkg/shapes.py")]


def test_the_packages_init_reexport_goes_with_the_module(tmp_path: Path) -> None:
    for init, kept in [
        ('from .shapes import area, perimeter\nfrom .other import x\n\n'
         '__all__ = ["area", "perimeter", "x"]\n', 'from .other import x\n\n__all__ = ["x"]\n'),
        ('from .shapes import *\nfrom .other import *\n\n__all__ = ["area", "x"]\n',
         'from .other import *\n\n__all__ = ["x"]\n'),  # another module's star stays
    ]:  # fmt: skip
        files = {"pkg/__init__.py": init, "pkg/shapes.py": SHAPES, "pkg/other.py": "x = 1\n"}
        tree = _tree(tmp_path / str(len(init)), files)
        (candidate,) = enumerate_modules(tree, _map())
        assert module_importers(tree, candidate, sorted(files)) == []
        text = init
        for edit in candidate.unexport:
            assert text.count(edit.old) == 1
            text = text.replace(edit.old, edit.new)
        assert text.lstrip("\n") == kept  # a named re-export leaves its line empty


def test_any_other_importer_refuses_the_module(tmp_path: Path) -> None:
    for user in ["from .shapes import area\n", "from . import shapes\n", "import pkg.shapes\n",
                 "from pkg.shapes import perimeter\n"]:  # fmt: skip
        files = {"pkg/__init__.py": "", "pkg/shapes.py": SHAPES, "pkg/user.py": user}
        tree = _tree(tmp_path / str(abs(hash(user))), files)
        (candidate,) = enumerate_modules(tree, _map())
        assert module_importers(tree, candidate, sorted(files)) == ["pkg/user.py"], user
    init = "from .shapes import *\n\nDEFAULT = area(1, 1)\n"  # the init uses its names
    files = {"pkg/__init__.py": init, "pkg/shapes.py": SHAPES}
    tree = _tree(tmp_path / "uses", files)
    (candidate,) = enumerate_modules(tree, _map())
    assert module_importers(tree, candidate, sorted(files)) == ["pkg/__init__.py"]


SHAPEKIT_TESTS = "from shapekit import area, perimeter\n\n\n" + "\n\n".join(
    f"def test_{kind}_{w}_{h}():\n    assert {kind}({w}, {h}) == {value}\n"
    for kind, w, h, value in [
        ("area", 2, 3, 6), ("area", 0, 5, 0), ("area", 4, 4, 16),
        ("perimeter", 2, 3, 10), ("perimeter", 0, 0, 0), ("perimeter", 1, 4, 10),
    ]
)  # fmt: skip
SHAPEKIT = {
    "pyproject.toml": '[project]\nname = "shapekit"\nversion = "1.0"\n',
    "PKG-INFO": "Metadata-Version: 2.1\nName: shapekit\nVersion: 1.0\n",
    "src/shapekit/__init__.py": "from .shapes import *\nfrom .units import to_cm\n",
    "src/shapekit/shapes.py": SHAPES.replace("SIDES = 4\n", '__all__ = ["area", "perimeter"]\n'),
    "src/shapekit/units.py": "def to_cm(inches):\n    cm = inches * 2.54\n    return cm\n",
    "tests/test_shapes.py": SHAPEKIT_TESTS,
    "tests/test_units.py": "from shapekit import to_cm\n\n\ndef test_to_cm():\n"
                           "    assert to_cm(1) == 2.54\n\n\ndef test_zero():\n"
                           "    assert to_cm(0) == 0\n",
}  # fmt: skip


@pytest.mark.slow
def test_a_module_task_is_proposed_validated_and_resolved(tmp_path: Path) -> None:
    """shapekit (an sdist made here): its `shapes` module, star-imported by the package,
    becomes a task that removes the file and the import; `tasks validate` accepts it and
    the reference solver resolves it through `cursorbench run`."""
    place_sdist(build_cache(), make_sdist(SHAPEKIT, "shapekit-1.0"), "shapekit-1.0.tar.gz")
    out = tmp_path / "proposed"
    done = cursorbench("tasks", "propose", "shapekit==1.0", "--out", str(out), "--max", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    path = out / "tasks" / "shapekit-shapes-module.yaml"
    assert path.is_file(), done.stderr
    task = yaml.safe_load(path.read_text())
    ops = task["mutation"]["operations"]
    assert ops[0] == {"op": "remove_file", "file": "src/shapekit/shapes.py"}
    assert any(op.get("old") == "from .shapes import *\n" for op in ops[1:])
    run = validate_then_run(path, tmp_path)
    assert run["attempts"] == run["resolved"] == 1
