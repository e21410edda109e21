"""Understanding tasks from the factory (`cursorbench/factory/usages.py`): the users of a
function found exactly, questions that would be ambiguous dropped, and a package going
from `propose --kind usages` to a task `tasks validate` accepts and the reference
resolves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from cursorbench.factory.coverage_map import CoverageMap
from cursorbench.factory.usages import enumerate_usages, usage_spec
from tests.cli_runner import cursorbench
from tests.cursorbench.factory_pkg import place_wordkit, validate_then_run

CORE = '''"""Core helpers."""

__all__ = ["norm", "pad"]


def norm(text):
    """Normalise text; see `norm` elsewhere."""
    return text.strip().lower()


def pad(text, width):
    return norm(text).ljust(width)


def banner(text):
    return pad(text, 20)


class Box:
    def label(self, text):
        return [norm(t) for t in text]

    def other(self, norm):  # binds the name itself: a question about norm is ambiguous
        return norm


def trim(text):
    return text.strip()


def wide(text):
    return trim(text) + trim(text)


def narrow(text):
    return trim(text)[:1]
'''
VIEWS = """from pkg.core import pad as padded, trim


def show(text):
    return padded(text, 10)


def shout(text):
    return getattr(text, "upper")()
"""


def _tree(tmp_path: Path, core: str = CORE) -> Path:
    (tmp_path / "pkg").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "core.py").write_text(core)
    (tmp_path / "pkg" / "views.py").write_text(VIEWS)
    return tmp_path


def _map(core: str = CORE) -> CoverageMap:
    """Every line of core.py run by tests/test_core.py; tests/test_other.py runs none."""
    lines = list(range(1, len(core.splitlines()) + 1))
    runs = {"pkg/core.py": {n: {"tests/test_core.py::test_a"} for n in lines}}
    outcomes = {"tests/test_core.py::test_a": "passed", "tests/test_other.py::test_b": "passed"}
    statements = {"pkg/core.py": lines, "pkg/views.py": [1, 4, 5, 8, 9]}
    return CoverageMap(outcomes, statements, runs)


def test_users_are_found_across_modules_and_aliases(tmp_path: Path) -> None:
    found = {c.function: c for c in enumerate_usages(_tree(tmp_path), _map())}
    # norm: Box.other binds the name itself; trim: one user in its own module plus one
    # import that nothing calls; pad: one user here, one through an alias in views
    assert "norm" not in found
    assert found["trim"].users == ["pkg.core.narrow", "pkg.core.wide"]
    assert found["pad"].users == ["pkg.core.banner", "pkg.views.show"]
    assert found["trim"].test_files == ["tests/test_core.py"]
    assert found["trim"].module == "pkg.core"


def test_a_name_used_as_an_attribute_or_in_a_string_is_no_question(tmp_path: Path) -> None:
    assert "trim" in {c.function for c in enumerate_usages(_tree(tmp_path / "a"), _map())}
    for number, use in enumerate(['{"trim": 1}.get(name)', "name.trim"]):
        core = CORE + f"\n\ndef lookup(name):\n    return {use}\n"
        found = enumerate_usages(_tree(tmp_path / str(number), core), _map(core))
        assert "trim" not in {c.function for c in found}, use


def test_the_task_takes_out_the_tests_that_run_it(tmp_path: Path) -> None:
    (candidate,) = [c for c in enumerate_usages(_tree(tmp_path), _map()) if c.function == "trim"]
    spec = usage_spec(candidate, {"id": "pkg-core-trim-usages"})
    assert spec["category"] == "understanding"
    assert spec["mutation"] == {
        "kind": "feature_deletion",
        "operations": [{"op": "remove_file", "file": "tests/test_core.py"}],
    }
    facts = spec["verification"]["facts"]  # type: ignore[index]
    assert facts == [{"kind": "names", "key": "functions",
                      "names": ["pkg.core.narrow", "pkg.core.wide"]}]  # fmt: skip
    prompt = str(spec["prompt"])
    assert "`trim`" in prompt and "answers.json" in prompt and "narrow" not in prompt


@pytest.mark.slow
def test_usage_tasks_propose_validate_and_resolve_with_the_reference(tmp_path: Path) -> None:
    place_wordkit()
    out = tmp_path / "proposed"
    done = cursorbench("tasks", "propose", "wordkit==0.3", "--out", str(out), "--kind", "usages")
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads((out / "proposals.json").read_text())
    assert summary["proposed_by_kind"].get("usages", 0) >= 1
    path = sorted((out / "tasks").glob("*-usages.yaml"))[0]
    task = yaml.safe_load(path.read_text())
    assert task["category"] == "understanding" and task["verification"]["kind"] == "answer"
    run = validate_then_run(out / "tasks", tmp_path)
    assert run["attempts"] == run["resolved"] >= 1


def test_relative_imports_count_and_star_imports_make_no_question(tmp_path: Path) -> None:
    views = "from .core import trim as cut\n\n\ndef one(text):\n    return cut(text)\n"
    tree = _tree(tmp_path / "relative")
    (tree / "pkg" / "views.py").write_text(views)
    found = {c.function: c for c in enumerate_usages(tree, _map())}
    assert found["trim"].users == ["pkg.core.narrow", "pkg.core.wide", "pkg.views.one"]
    tree = _tree(tmp_path / "star")
    (tree / "pkg" / "views.py").write_text(
        "from pkg.core import *\n\n\ndef one(t):\n    return trim(t)\n"
    )
    assert "trim" not in {c.function for c in enumerate_usages(tree, _map())}
