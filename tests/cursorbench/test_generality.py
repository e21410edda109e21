"""The builder and validator are general, not fitted to the v1 suite: a task file written
for a package the suite does not use (inflection, whose sdist ships its tests) builds and
passes full validation with the suite's own commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cursorbench.tasks.loader import load_tasks
from cursorbench.tasks.sources.package import PackageSource
from cursorbench.tasks.suites import suite_path
from tests.cli_runner import cursorbench

TASK = Path(__file__).parent / "data" / "inflection-plurals.yaml"


def test_the_generality_task_uses_a_package_the_suite_does_not() -> None:
    (task,) = load_tasks([TASK])
    suite = {
        t.source.name for t in load_tasks([suite_path("v1")]) if isinstance(t.source, PackageSource)
    }
    assert isinstance(task.source, PackageSource)
    assert task.source.name not in suite


@pytest.mark.slow
def test_a_task_for_another_package_builds_and_validates(tmp_path: Path) -> None:
    """Fetches the pinned sdist (network to the package index), then the full checks."""
    report = tmp_path / "report"
    done = cursorbench("tasks", "validate", "--tasks", str(TASK), "--report", str(report))
    assert done.returncode == 0, done.stdout + done.stderr
    (record,) = json.loads((report / "validation.json").read_text())["tasks"]
    assert record["valid"] and record["problems"] == []
    assert record["fail_to_pass"] >= 5 and record["reference_resolved"]
    assert not record["untouched_resolved"] and not record["stub_resolved"]
