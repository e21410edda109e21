"""CursorBench v2's folder keeps its promises (`cursorbench/suite/v2/README.md`): every task
in it was accepted by a person (its review log) and is valid in its validation report,
which was made on the build the task makes today."""

from __future__ import annotations

from cursorbench.factory.review import reviewed
from cursorbench.tasks.loader import load_tasks
from cursorbench.tasks.sources.package import PackageSource
from cursorbench.tasks.stats import load_validation, recorded_changed_lines
from cursorbench.tasks.suites import suite_path


def test_every_v2_task_is_reviewed_and_validated_on_its_build() -> None:
    folder = suite_path("v2")
    tasks = load_tasks([folder])
    accepted = reviewed(folder)
    records = load_validation(folder)
    for task in tasks:
        assert task.suite_version == "2.0", task.id
        assert isinstance(task.source, PackageSource) and task.released, task.id
        assert task.id in accepted, f"{task.id}: no accept in review.jsonl"
        record = records.get(task.id)
        assert record is not None and record.valid, f"{task.id}: not valid in validation.json"
        assert recorded_changed_lines(task, record) is not None, (
            f"{task.id}: validated on another build"
        )


def test_v2_takes_no_package_v1_uses() -> None:
    """v2 is made from packages v1 does not use (its README): a v1 package's tasks in v2
    would repeat v1's (boltons' iterutils and strutils docs tasks are in both otherwise)."""

    def packages(suite: str) -> set[str]:
        tasks = load_tasks([suite_path(suite)])
        return {t.source.name for t in tasks if isinstance(t.source, PackageSource)}

    assert not packages("v1") & packages("v2")
