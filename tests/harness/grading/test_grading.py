"""Grading through the sandbox seam, on a bundled task: what runs, and how."""

from __future__ import annotations

import random
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from cursorbench.tasks.loader import tasks_from_options
from cursorbench.tasks.workspace import build
from harness.grading.canaries import plant
from harness.grading.grade import grade
from harness.results import Failure
from harness.sandbox import SandboxBackend, open_backend
from harness.sandbox.command import Command


class Recording:
    """A real backend whose sandboxes remember how each command was executed."""

    def __init__(self, inner: SandboxBackend) -> None:
        self.inner = inner
        self.name, self.confined = inner.name, inner.confined
        self.calls: list[dict[str, Any]] = []

    def open(self, *args: Any, **kwargs: Any) -> Any:
        sandbox = self.inner.open(*args, **kwargs)
        execute = sandbox.execute

        def recorded(command: Command) -> Any:
            self.calls.append(asdict(command))
            return execute(command)

        sandbox.execute = recorded  # type: ignore[method-assign]
        return sandbox

    def self_test(self, scratch: Path) -> None:
        self.inner.self_test(scratch)


@pytest.fixture(scope="module")
def built() -> Any:
    return build(tasks_from_options(["textkit-slugify"])[0])


def test_tests_run_read_only_with_plugin_autoloading_off(built: Any, tmp_path: Path) -> None:
    backend = Recording(open_backend("subprocess"))
    report = grade(built.prepared(), built.reference_patch, backend, tmp_path, random.Random(0))
    assert report.resolved, report.error
    calls = [call for call in backend.calls if "pytest" in call["argv"]]
    assert len(calls) == 3  # the hidden files, the other tests, the twin (twin_run.py)
    for pytest_call in calls:
        assert pytest_call["read_only"] is True and pytest_call["report"] is True
        assert pytest_call["env"]["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] == "1"
        assert pytest_call["argv"][1] == "-P"  # the workspace is not on sys.path at start


def test_canaries_run_and_fail_for_the_reference(built: Any, tmp_path: Path) -> None:
    rng = random.Random(0)
    planted = plant(
        {"tests/test_slugify.py": (built.hidden / "tests/test_slugify.py").read_text()},
        random.Random(0),
    )
    report = grade(
        built.prepared(), built.reference_patch, open_backend("subprocess"), tmp_path, rng
    )
    assert report.resolved and report.canaries_passed == []
    count = len(planted.names["tests/test_slugify.py"])
    assert count >= 3 and f"{count} failed" in report.output  # the canaries, nothing else


def test_protected_parts_of_the_change_are_dropped_and_listed(built: Any, tmp_path: Path) -> None:
    test_change = (
        "diff --git a/tests/test_wrap.py b/tests/test_wrap.py\n"
        "deleted file mode 100644\n"
        "index 1111111..0000000\n"
    )
    report = grade(
        built.prepared(), built.reference_patch + test_change, open_backend("subprocess"), tmp_path
    )
    assert report.resolved, report.error
    assert report.dropped == ["tests/test_wrap.py"]


def test_a_change_that_does_not_apply_is_patch_rejected(built: Any, tmp_path: Path) -> None:
    bad = "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n"
    bad += "@@ -1 +1 @@\n-not what is there\n+x\n"
    report = grade(built.prepared(), bad, open_backend("subprocess"), tmp_path)
    assert report.failure is Failure.PATCH_REJECTED and not report.resolved
