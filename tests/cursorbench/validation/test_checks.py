"""Full validation of a package task (pristine x3, broken tree, reference, untouched, stub,
coverage, leaks, imports), and a sample of the v1 suite end to end (build, reference
passes, untouched fails): a broken builder cannot land."""

from __future__ import annotations

from pathlib import Path

import pytest

from cursorbench.tasks.loader import load_tasks
from cursorbench.tasks.suites import suite_path
from cursorbench.tasks.workspace import build
from cursorbench.validation.checks import network_problem, stub_changes, validate_full
from cursorbench.validation.coverage_check import hidden_only_args
from cursorbench.validation.testruns import SuiteRun
from cursorbench.validation.validate import validate_task
from harness.results import TestOutcome as Outcome
from harness.sandbox import choose_backend
from harness.spec import pytest_part
from tests.cursorbench.sdists import FILES, tiny_task
from tests.cursorbench.tasks.test_workspace import authored_task

V1_SAMPLE = [
    "boltons-mathutils",
    "cachetools-tlru",
    "jinja2-sandbox-review",
    "boltons-urlutils-debugging",  # a bug injection with authored tests
]


@pytest.mark.slow
def test_a_package_task_passes_full_validation(cursorbench_home: Path, tmp_path: Path) -> None:
    # the package's own coverage settings hide nothing from the coverage check
    files = FILES | {".coveragerc": "[run]\nomit = */*\n"}
    built = build(tiny_task(cursorbench_home, tmp_path, files))
    record = validate_full(built, choose_backend("auto"))
    assert record.problems == []
    assert record.changed_lines > 0 and record.changed_lines_digest == built.digest
    assert record.changed_code_lines is not None
    assert 0 < record.changed_code_lines <= record.changed_lines
    assert (record.fail_to_pass, record.pass_to_pass, record.stable_tests) == (6, 3, 9)
    assert record.reference_resolved and not record.untouched_resolved
    assert not record.stub_resolved and record.stub_fail_to_pass_passed == 0
    assert record.coverage == 1.0


@pytest.mark.slow
def test_weak_or_wrong_tasks_are_rejected(cursorbench_home: Path, tmp_path: Path) -> None:
    task = tiny_task(cursorbench_home, tmp_path)
    check = pytest_part(task.verification)
    assert check is not None and task.mutation is not None
    few = check.model_copy(
        update={"hidden_tests": [], "fail_to_pass": check.fail_to_pass[:1], "pass_to_pass": []}
    )
    weak = task.model_copy(
        update={
            "mutation": task.mutation.model_copy(
                update={
                    "operations": [
                        {
                            "op": "remove_symbol",
                            "file": "src/tinypkg/extra.py",
                            "symbol": "count_distinctive_vowels_in_text",
                        }
                    ]
                }
            ),
            "verification": few.model_copy(
                update={"fail_to_pass": ["tests/test_extra.py::test_vowels"]}
            ),
        }
    )
    weak = type(task).model_validate(weak.model_dump()).model_copy(update={"path": task.path})
    record = validate_full(build(weak), choose_backend("auto"))
    assert not record.valid
    need = "only 0 stable tests inside the hidden files fail on the broken tree (need 5)"
    assert need in record.problems  # test_vowels fails, but outside the (no) hidden files
    assert record.visible_failing == ["tests/test_extra.py::test_vowels"]


def test_network_errors_on_the_pristine_tree_mean_the_tests_need_the_network() -> None:
    fetch, other = "tests/test_net.py::test_fetch", "tests/test_net.py::test_other"
    outcomes = {fetch: Outcome.FAILED, other: Outcome.PASSED}
    offline = "E   socket.gaierror: [Errno -3] Temporary failure in name resolution"
    assert network_problem([SuiteRun(outcomes, 1.0, output=offline)] * 3) == (
        "tests need the network: 1 fail on the pristine tree in the sandbox (no network) "
        f"with 'socket.gaierror', e.g. {fetch}"
    )
    assert network_problem([SuiteRun(outcomes, 1.0, output="E   AssertionError")]) is None
    passing = {fetch: Outcome.PASSED}
    assert network_problem([SuiteRun(passing, 1.0, output="socket.gaierror in a log")]) is None


NET_TEST = (
    "import socket\n\n\n"
    "def test_fetch():\n"
    "    socket.create_connection(('pypi.org', 443), timeout=10).close()\n"
)


@pytest.mark.slow
def test_a_task_whose_tests_need_the_network_is_refused(
    cursorbench_home: Path, tmp_path: Path
) -> None:
    backend = choose_backend("auto")
    if backend == "subprocess":
        pytest.skip("the subprocess backend does not cut the network")
    files = {**FILES, "tests/test_net.py": NET_TEST}
    record = validate_full(build(tiny_task(cursorbench_home, tmp_path, files)), backend)
    assert not record.valid
    assert any(p.startswith("tests need the network: 1 fail") for p in record.problems)
    assert "tests/test_net.py::test_fetch" in next(p for p in record.problems if "network" in p)


@pytest.mark.slow
@pytest.mark.parametrize("task_id", V1_SAMPLE)
def test_v1_sample_builds_and_tells_solved_from_unsolved(task_id: str) -> None:
    """Fetches the pinned sdist (network to the package index), builds, grades."""
    task = next(t for t in load_tasks([suite_path("v1")]) if t.id == task_id)
    assert validate_task(build(task), choose_backend("auto"), repeat=1) == []


def test_the_stub_stubs_code_and_leaves_configuration_as_it_was(tmp_path: Path) -> None:
    """A stub of a makefile or pyproject would be the answer itself: it stays as the
    workspace has it (absent, here), while Python the reference writes is stubbed."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "Makefile").write_text("test:\n\tpython -m pytest\n")
    task = authored_task(tmp_path)
    assert task.mutation is not None
    operations = [*task.mutation.operations, {"op": "remove_file", "file": "Makefile"}]
    task = (
        type(task)
        .model_validate(
            {**task.model_dump(), "mutation": {"kind": "rewrite", "operations": operations}}
        )
        .model_copy(update={"path": task.path})
    )
    built = build(task, scan=False)
    assert set(built.solution_tree()) == {"Makefile", "pkg/core.py", "pkg/helpers.py"}
    stub = stub_changes(built)
    assert "Makefile" not in stub
    assert "raise NotImplementedError" in str(stub["pkg/core.py"])


def test_coverage_runs_the_hidden_files_with_the_tasks_own_options() -> None:
    args = ["tests", "-p", "pytest_mock", "-k", "not slow", "--ignore=tests/x", "--doctest-modules"]
    assert hidden_only_args(args, ["tests/test_a.py", "pkg/mod.py"]) == [
        "-p", "pytest_mock", "-k", "not slow", "--ignore=tests/x", "--doctest-modules",
        "tests/test_a.py", "pkg/mod.py",
    ]  # fmt: skip


@pytest.mark.slow
def test_a_hidden_test_that_needs_another_modules_import_leaves_the_lists(
    cursorbench_home: Path, tmp_path: Path
) -> None:
    """Grading runs the hidden files on their own and the others apart (a twin run applies):
    a test that passes only after the other part imported a module fails there, and
    derivation drops it."""
    from cursorbench.validation.checks import backend_for, derive_tests
    from cursorbench.validation.tree_runs import ALONE, split_run

    needs = FILES["tests/test_extra.py"] + (
        "\n\ndef test_core_loaded():\n    import tinypkg\n\n    assert hasattr(tinypkg, 'core')\n"
    )
    visible = FILES["tests/test_core.py"] + (
        "\n\ndef test_extra_loaded():\n    import tinypkg\n\n    assert hasattr(tinypkg, 'extra')\n"
    )
    files = FILES | {"tests/test_extra.py": needs, "tests/test_core.py": visible}
    task = tiny_task(cursorbench_home, tmp_path, files)
    built = build(task)
    sandboxes = backend_for(built, choose_backend("auto"))
    split = split_run(built, sandboxes, tmp_path / "split")
    assert split is not None  # the reference restores functions: grading splits the run
    assert split.outcomes["tests/test_extra.py::test_core_loaded"] is Outcome.FAILED
    assert split.outcomes["tests/test_core.py::test_double"] is Outcome.PASSED
    assert split.outcomes["tests/test_core.py::test_extra_loaded"] is Outcome.FAILED
    derived = derive_tests(built, sandboxes, tmp_path / "derive", perturb=False)
    assert derived.dropped["tests/test_extra.py::test_core_loaded"].endswith(ALONE)
    assert "tests/test_extra.py::test_core_loaded" not in derived.fail_to_pass
    assert derived.dropped["tests/test_core.py::test_extra_loaded"].endswith(ALONE)
    assert len(derived.fail_to_pass) == 6 and derived.problems == []
