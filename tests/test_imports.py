"""Every import follows the one table of allowed imports (`tests/layers.py`): a failure names
`file:line importer -> imported` for each import the table does not allow. The engine does
not know the suite (no module of `harness/` imports another package of the project), the
packages and the layers form no cycle, and the modules of a package import each other in no
cycle: none at module level, and none through deferred imports but the known ones.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from tests.layers import (
    KNOWN_DEFERRED_CYCLES,
    KNOWN_VIOLATIONS,
    LAYERS,
    PACKAGES,
    ROOT,
    Import,
    Where,
    allowed,
    circles,
    imports_in,
    known,
    layer_graph,
    layer_of,
    module_name,
    package_graph,
    project_imports,
    source_files,
)


@pytest.fixture(scope="module")
def imports() -> list[Import]:
    found = project_imports()
    assert len(found) > 500  # the walk found the packages
    return found


def modules() -> set[str]:
    return {module_name(path, ROOT) for path in source_files()}


def test_every_import_is_one_the_table_allows(imports: list[Import]) -> None:
    wrong = [
        str(found)
        for found in imports
        if not allowed(found.importer, found.imported, found.where)
        and known(found.importer, found.imported) is None
    ]
    assert not wrong, "imports tests/layers.py does not allow:\n" + "\n".join(wrong)


def test_every_known_violation_is_still_there(imports: list[Import]) -> None:
    """A known violation that was removed leaves the list too, so it cannot come back."""
    seen = {
        known(found.importer, found.imported)
        for found in imports
        if not allowed(found.importer, found.imported, found.where)
    }
    gone = [entry for entry in KNOWN_VIOLATIONS if entry not in seen]
    assert not gone, f"remove these from KNOWN_VIOLATIONS (tests/layers.py): {gone}"


def test_no_harness_module_imports_cursorbench_or_another_package(imports: list[Import]) -> None:
    """The engine does not know the suite, the evals, the leaderboard or training."""
    found = [
        str(one)
        for one in imports
        if one.importer.split(".")[0] == "harness" and one.imported.split(".")[0] != "harness"
    ]
    assert found == [], f"harness/ must not import cursorbench (nor the others): {found}"


def test_nothing_but_training_imports_training(imports: list[Import]) -> None:
    found = [
        str(one)
        for one in imports
        if one.imported.split(".")[0] == "training" and one.importer.split(".")[0] != "training"
    ]
    assert found == []


def test_every_module_is_in_a_layer_and_every_layer_holds_one() -> None:
    everything = modules()
    assert not sorted(m for m in everything if layer_of(m) is None), "add them to LAYERS"
    held = {layer.name for m in everything if (layer := layer_of(m)) is not None}
    assert held == {layer.name for layer in LAYERS}, "a layer that holds no module"


def test_the_table_names_only_its_own_layers_and_modules() -> None:
    names = [layer.name for layer in LAYERS]
    assert len(names) == len(set(names))
    everything = modules()
    for layer in LAYERS:
        assert set(layer.imports) | set(layer.type_imports) <= set(names), layer.name
        assert layer.name not in layer.imports
        for module in layer.exceptions:
            assert module in everything, module
            assert _layer_name(module) not in (layer.name, *layer.imports), module
        assert layer.package in PACKAGES
        assert all(module.split(".")[0] == layer.package for module in layer.covers())
    for entry in KNOWN_VIOLATIONS:
        assert {entry.importer, entry.imported} <= {
            prefix for m in everything for prefix in _prefixes(m)
        }, entry


def _prefixes(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts) + 1)]


def test_the_layers_form_no_cycle() -> None:
    assert circles(layer_graph()) == []


def test_the_packages_stack_in_order() -> None:
    """harness < leaderboard < evals < cursorbench < training: each imports only packages
    below it, so the packages form no cycle."""
    graph = package_graph()
    for number, package in enumerate(PACKAGES):
        assert graph[package] <= set(PACKAGES[:number]), package
    assert graph["harness"] == set()
    assert "training" not in set().union(*graph.values())


def _module_graph(imports: list[Import], wheres: set[Where]) -> dict[str, set[str]]:
    """Module -> the modules of its own package it imports, `wheres` counted."""
    graph: dict[str, set[str]] = defaultdict(set)
    for one in imports:
        same = one.importer.split(".")[0] == one.imported.split(".")[0]
        if same and one.where in wheres and one.importer != one.imported:
            graph[one.importer].add(one.imported)
    return graph


def test_no_cycle_of_module_level_imports_inside_a_package(imports: list[Import]) -> None:
    found = circles(_module_graph(imports, {"module"}))
    assert found == [], [sorted(circle) for circle in found]


def test_no_new_cycle_through_deferred_imports(imports: list[Import]) -> None:
    """Imports deferred into functions hide a cycle without removing it; only the known
    ones (KNOWN_DEFERRED_CYCLES, to be broken) may stay, and only as large as they are."""
    listed = [cycle.modules for cycle in KNOWN_DEFERRED_CYCLES]
    found = circles(_module_graph(imports, {"module", "function"}))
    new = [sorted(circle) for circle in found if not any(circle <= known for known in listed)]
    assert not new, f"import cycles (a deferred import does not break one): {new}"


def test_every_known_cycle_is_still_there_as_listed(imports: list[Import]) -> None:
    """A cycle broken, or made smaller, leaves the list or is listed as it is now."""
    found = circles(_module_graph(imports, {"module", "function"}))
    stale = [
        (sorted(cycle.modules), [sorted(now) for now in found if now <= cycle.modules])
        for cycle in KNOWN_DEFERRED_CYCLES
        if cycle.modules not in found
    ]
    assert not stale, f"update KNOWN_DEFERRED_CYCLES (listed, now): {stale}"


# -- the walker and the table's rules, on probes --------------------------------------------


def _probe(tmp_path: Path, text: str, *others: str) -> list[str]:
    package = tmp_path / "harness"
    package.mkdir()
    (package / "probe.py").write_text(text)
    for other in others:
        (package / f"{other}.py").write_text("")
    known_modules = {"harness.probe", *(f"harness.{other}" for other in others)}
    return [
        f"{one.path}:{one.line} {one.imported} {one.where}"
        for one in imports_in(package / "probe.py", tmp_path, known_modules)
    ]


def test_the_walker_finds_imports_inside_functions(tmp_path: Path) -> None:
    found = _probe(
        tmp_path,
        "import cursorbenchmark\n"
        "def f():\n"
        "    from cursorbench.tasks.workspace import cache_home\n"
        "    import os, cursorbench\n",
    )
    assert found == [
        "harness/probe.py:3 cursorbench.tasks.workspace function",
        "harness/probe.py:4 cursorbench function",
    ]


def test_the_walker_tells_type_checking_relative_and_submodule_imports(tmp_path: Path) -> None:
    found = _probe(
        tmp_path,
        "from typing import TYPE_CHECKING\n"
        "import typing\n"
        "from harness import spec, results\n"
        "from . import spec as again\n"
        "from .results import AttemptResult\n"
        "if TYPE_CHECKING:\n"
        "    from evals.scenario import Scenario\n"
        "else:\n"
        "    import leaderboard\n"
        "if typing.TYPE_CHECKING:\n"
        "    import training\n"
        "class C:\n"
        "    def m(self):\n"
        "        import harness.run.runner\n",
        "spec",
    )
    assert found == [
        "harness/probe.py:3 harness.spec module",
        "harness/probe.py:3 harness module",  # `results` is not a module here: a name
        "harness/probe.py:4 harness.spec module",
        "harness/probe.py:5 harness.results module",
        "harness/probe.py:7 evals.scenario types",
        "harness/probe.py:9 leaderboard module",
        "harness/probe.py:11 training types",
        "harness/probe.py:14 harness.run.runner function",
    ]


def test_the_rules_read_the_table() -> None:
    assert allowed("harness.run.attempt", "harness.sandbox.protocol", "module")
    assert allowed("harness.run.attempt", "harness.run.plan", "module")  # its own layer
    assert not allowed("harness.sandbox.local", "harness.run.plan", "function")
    assert not allowed("harness.sandbox.local", "harness.model.chat", "module")
    assert allowed("harness.sandbox.local", "harness.grading.pytest_env", "module")  # exception
    assert not allowed("harness.sandbox.local", "harness.grading.grade", "module")
    assert allowed("harness.kinds.base", "harness.spec", "types")  # type-only
    assert not allowed("harness.kinds.base", "harness.spec", "module")
    assert not allowed("harness.results", "harness.kinds.base", "module")  # shared is below
    assert not allowed("cursorbench.tasks.suites", "cursorbench.cli.progress", "module")
    assert allowed("cursorbench.validation.checks", "cursorbench.tasks.task", "module")
    assert not allowed("cursorbench.validation.checks", "cursorbench.cli.app", "function")
    assert not allowed("evals.baselines", "cursorbench.api", "function")
    assert allowed("cursorbench.calibration.baselines", "evals.baselines", "module")
    assert not allowed("leaderboard.store", "cursorbench.config", "function")
    assert not allowed("cursorbench.cli.app", "training.gate", "function")
    assert _layer_name("harness") == "harness"
    assert _layer_name("harness.results") == "harness:shared"
    assert _layer_name("harness.nowhere") is None  # a new root module needs a row
    assert _layer_name("evals.agents") == "evals"
    assert _layer_name("harness.grading.pytest_env") == "harness.grading"


def _layer_name(module: str) -> str | None:
    layer = layer_of(module)
    return None if layer is None else layer.name


def test_cycles_are_found() -> None:
    graph = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"], "e": []}
    assert circles(graph) == [frozenset({"a", "b", "c"})]
    assert circles({"a": ["b"], "b": []}) == []
