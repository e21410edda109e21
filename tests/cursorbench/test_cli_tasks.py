"""`cursorbench tasks ...` (`cursorbench/cli_tasks.py`) as a user runs it: listing and showing
tasks, and bad task files reported one line each while the good ones are still checked."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_runner import cursorbench


def test_tasks_list_and_show() -> None:
    listed = cursorbench("tasks", "list")
    assert listed.returncode == 0 and "textkit-slugify" in listed.stdout
    shown = cursorbench("tasks", "show", "textkit-slugify")
    assert shown.returncode == 0
    assert json.loads(shown.stdout)["id"] == "textkit-slugify"
    several = cursorbench("tasks", "show", "textkit-*")
    assert several.returncode == 2
    assert several.stderr == (
        "error: 'textkit-*' matches 2 tasks (textkit-case-styles, textkit-slugify); name one\n"
    )


def suite_with_bad_files(folder: Path) -> tuple[Path, Path]:
    """A task folder holding the bundled textkit-slugify and two bad task files."""
    import yaml

    from cursorbench.loader import bundled_suite

    folder.mkdir()
    bundled = bundled_suite() / "tasks" / "textkit-slugify.yaml"
    data = yaml.safe_load(bundled.read_text())
    data["source"]["path"] = str((bundled.parent / data["source"]["path"]).resolve())
    (folder / "good.yaml").write_text(yaml.safe_dump(data))
    no_source = folder / "no-source.yaml"
    no_source.write_text("id: broken\nsuite_version: '1'\ncategory: new_feature\nprompt: hi\n")
    not_yaml = folder / "not-yaml.yaml"
    not_yaml.write_text("id: [unclosed\n")
    return no_source, not_yaml


def test_tasks_list_lists_the_good_files_and_reports_every_bad_one(tmp_path: Path) -> None:
    no_source, not_yaml = suite_with_bad_files(tmp_path / "suite")
    listed = cursorbench("tasks", "list", "--tasks", str(tmp_path / "suite"))
    assert listed.returncode == 2
    assert "textkit-slugify" in listed.stdout
    lines = listed.stderr.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"error: {no_source}: source: Field required")
    assert lines[1].startswith(f"error: {not_yaml}: not valid YAML")


def test_tasks_validate_reports_every_bad_file_then_checks_the_good_ones(tmp_path: Path) -> None:
    no_source, not_yaml = suite_with_bad_files(tmp_path / "suite")
    checked = cursorbench("tasks", "validate", "--tasks", str(tmp_path / "suite"), "--repeat", "1")
    assert checked.returncode == 2
    lines = checked.stderr.splitlines()
    assert [line.split(":")[1].strip() for line in lines] == [str(no_source), str(not_yaml)]
    assert "ok textkit-slugify" in checked.stdout
    assert "Traceback" not in checked.stderr
