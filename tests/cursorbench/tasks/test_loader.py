"""Task files: valid ones load, malformed ones fail with one line naming file and field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cursorbench.tasks.loader import (
    TaskFileError,
    bundled_suite,
    load_task,
    load_tasks,
    load_tasks_reporting,
    select_tasks,
    tasks_from_options,
    tasks_from_options_reporting,
)
from cursorbench.tasks.sources.folder import FolderSource
from cursorbench.tasks.sources.package import PackageSource
from cursorbench.tasks.suites import suite_options
from cursorbench.tasks.task import Category
from cursorbench.tasks.workspace import source_tree
from harness.kinds.registry import KINDS, task_file_kinds
from harness.spec import pytest_part, with_behaviour_checks

BUNDLED = bundled_suite() / "tasks" / "textkit-slugify.yaml"


def write_variant(tmp_path: Path, change: dict, drop: tuple[str, ...] = ()) -> Path:
    data = yaml.safe_load(BUNDLED.read_text()) | change
    for key in drop:
        data.pop(key)
    data["source"] = {"kind": "folder", "path": str(BUNDLED.parent / "../repos/textkit")}
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_bundled_suite_loads_with_real_types() -> None:
    tasks = load_tasks([bundled_suite()])
    assert len(tasks) >= 6
    slugify = next(task for task in tasks if task.id == "textkit-slugify")
    assert slugify.category is Category.NEW_FEATURE
    assert isinstance(slugify.source, FolderSource)
    assert source_tree(slugify).is_dir()
    tests = pytest_part(slugify.verification)
    assert tests is not None and all(isinstance(test, str) for test in tests.fail_to_pass)
    assert slugify.path == BUNDLED.resolve()


@pytest.mark.parametrize(
    ("change", "drop", "expected"),
    [
        ({}, ("prompt",), "prompt: Field required"),
        ({"category": "vibes"}, (), "category: Input should be"),
        ({"id": "Has Spaces"}, (), "id: String should match pattern"),
        ({"verification": {"fail_to_pass": []}}, (), "verification.fail_to_pass: List should have"),
        ({"limits": {"max_turns": 0}}, (), "limits.max_turns: Input should be greater"),
        ({"surprise": 1}, (), "surprise: Extra inputs are not permitted"),
        (
            {"mutation": {"operations": [{"op": "explode", "file": "x"}]}},
            (),
            "mutation.operations.0",
        ),
        (
            {"earlier_turns": [{"role": "assistant", "content": "Done."}]},
            (),
            "earlier_turns: Value error, earlier turn 1 is the assistant's",
        ),
        (
            {"earlier_turns": [{"role": "user", "content": "Add it."}]},
            (),
            "earlier_turns: Value error, the earlier turns end with the user's",
        ),
        ({"earlier_turns": [{"role": "system", "content": "x"}]}, (), "earlier_turns.0.role"),
    ],
)
def test_malformed_fields_are_named_in_one_line(
    tmp_path: Path, change: dict, drop: tuple[str, ...], expected: str
) -> None:
    path = write_variant(tmp_path, change, drop)
    with pytest.raises(TaskFileError) as error:
        load_task(path)
    message = str(error.value)
    assert message.startswith(f"{path}: ")
    assert expected in message
    assert "\n" not in message


MUTANTS = {"kind": "mutants", "mutants": [{"id": "m", "file": "textkit/slug.py", "old": "a",
                                           "new": "b"}]}  # fmt: skip
ANSWER = {"kind": "answer", "answer_file": "a.json",
          "facts": [{"kind": "number", "key": "n", "value": 1}]}  # fmt: skip


@pytest.mark.parametrize("verification", [MUTANTS, ANSWER], ids=["mutants", "answer"])
def test_behaviour_checks_on_a_kind_that_takes_none_are_refused_at_load(
    tmp_path: Path, verification: dict
) -> None:
    path = write_variant(tmp_path, {"verification": verification, "behaviour_checks": ["intent"]})
    with pytest.raises(TaskFileError) as error:
        load_task(path)
    kind = verification["kind"]
    expected = (
        f"behaviour_checks: a {kind} verification takes no behaviour checks (only pytest, docs do)"
    )
    assert str(error.value) == f"{path}: {expected}"
    # the same file without behaviour checks loads
    assert (
        load_task(write_variant(tmp_path, {"verification": verification})).verification.kind == kind
    )


def test_behaviour_checks_on_pytest_and_docs_load_and_combine(tmp_path: Path) -> None:
    takers = [name for name in task_file_kinds() if KINDS[name].takes_behaviour_checks]
    assert takers == ["pytest", "docs"]
    task = load_task(write_variant(tmp_path, {"behaviour_checks": ["intent"]}))
    assert task.behaviour_checks == ["intent"] and task.verification.kind == "pytest"
    both = with_behaviour_checks(task.verification, task.behaviour_checks)
    assert both.kind == "both" and pytest_part(both) == task.verification
    documented = {"documented_file": "textkit/slug.py", "documented": ["slugify"]}
    docs = yaml.safe_load(BUNDLED.read_text())["verification"] | {"kind": "docs", **documented}
    task = load_task(
        write_variant(tmp_path, {"verification": docs, "behaviour_checks": ["intent"]})
    )
    both = with_behaviour_checks(task.verification, task.behaviour_checks)
    assert task.verification.kind == "docs" and pytest_part(both) == task.verification


def test_broken_yaml_and_wrong_shapes(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("id: [unclosed\n")
    with pytest.raises(TaskFileError, match=r"broken.yaml: not valid YAML"):
        load_task(broken)
    listing = tmp_path / "list.yaml"
    listing.write_text("- a\n- b\n")
    with pytest.raises(TaskFileError, match="expected a mapping"):
        load_task(listing)
    with pytest.raises(TaskFileError, match="no such task file or folder"):
        load_tasks([tmp_path / "missing"])


def test_duplicate_ids_are_refused(tmp_path: Path) -> None:
    first = write_variant(tmp_path, {})
    (tmp_path / "copy.yaml").write_text(first.read_text())
    with pytest.raises(TaskFileError, match="also in"):
        load_tasks([tmp_path])


def test_reporting_loads_the_good_files_and_names_every_bad_one(tmp_path: Path) -> None:
    first = write_variant(tmp_path, {})
    (tmp_path / "copy.yaml").write_text(first.read_text())
    (tmp_path / "broken.yaml").write_text("id: [unclosed\n")
    tasks, problems = load_tasks_reporting([tmp_path, tmp_path / "missing"])
    assert [task.id for task in tasks] == ["textkit-slugify"]
    assert problems[0].startswith(f"{tmp_path / 'broken.yaml'}: not valid YAML")
    assert problems[1].startswith(f"{tmp_path / 'task.yaml'}: task id 'textkit-slugify' also in")
    assert problems[2] == f"{tmp_path / 'missing'}: no such task file or folder"
    with pytest.raises(TaskFileError, match=r"not valid YAML .* \(and 2 more bad task files\)$"):
        load_tasks([tmp_path, tmp_path / "missing"])


def test_selection_by_glob_and_unknown_ids() -> None:
    tasks = load_tasks([bundled_suite()])
    picked = select_tasks(tasks, ["textkit-*"])
    assert {task.id for task in picked} == {"textkit-slugify", "textkit-case-styles"}
    assert select_tasks(tasks, []) == tasks
    with pytest.raises(TaskFileError, match="no task matches 'nope'"):
        select_tasks(tasks, ["nope"])


def test_package_sources_are_part_of_the_format(tmp_path: Path) -> None:
    source = {"kind": "package", "name": "humanize", "version": "4.9.0", "sha256": "ab" * 32}
    path = write_variant(tmp_path, {})
    data = yaml.safe_load(path.read_text()) | {"source": source}
    path.write_text(yaml.safe_dump(data))
    assert isinstance(load_task(path).source, PackageSource)


def test_a_task_of_another_bundled_suite_is_named_with_the_flag_to_add() -> None:
    with pytest.raises(TaskFileError) as caught:
        tasks_from_options(["jinja2-sandbox-review"])
    assert str(caught.value) == (
        "no task 'jinja2-sandbox-review' in the smoke suite; it is in suite v1: add --suite v1"
    )
    assert [t.id for t in tasks_from_options(suite_options("v1", ["jinja2-sandbox-review"]))] == [
        "jinja2-sandbox-review"
    ]
    with pytest.raises(TaskFileError) as caught:
        tasks_from_options(suite_options("v1", ["textkit-slugify"]))
    assert str(caught.value) == (
        "no task 'textkit-slugify' in the v1 suite; it is in suite smoke: use --suite smoke"
    )
    found, problems = tasks_from_options_reporting(["jinja2-*"])
    assert found == [] and problems == [
        "no task 'jinja2-*' in the smoke suite; it is in suite v1: add --suite v1"
    ]


def test_a_task_in_no_bundled_suite_lists_the_known_ones() -> None:
    known = r"^no task matches 'nope' \(known: followup-textkit-unique-slug, ledger-csv, "
    with pytest.raises(TaskFileError, match=known):
        tasks_from_options(["nope"])
