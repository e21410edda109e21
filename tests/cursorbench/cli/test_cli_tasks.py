"""`cursorbench tasks ...` (`cursorbench/cli/tasks.py`) as a user runs it: listing and showing
tasks, and bad task files reported one line each while the good ones are still checked."""

from __future__ import annotations

import json
from pathlib import Path

from cursorbench.tasks.answer import CODE_LINES_RULE
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

    from cursorbench.tasks.loader import bundled_suite

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


def test_tasks_stats_takes_changed_lines_from_the_report_only_when_counted_on_this_build(
    tmp_path: Path,
) -> None:
    import yaml

    from cursorbench.tasks.loader import bundled_suite

    suite = tmp_path / "suite"
    (suite / "tasks").mkdir(parents=True)
    bundled = bundled_suite() / "tasks" / "textkit-slugify.yaml"
    data = yaml.safe_load(bundled.read_text())
    data["source"]["path"] = str((bundled.parent / data["source"]["path"]).resolve())
    (suite / "tasks" / "slugify.yaml").write_text(yaml.safe_dump(data))

    def figures(*extra: str) -> dict[str, object]:
        shown = cursorbench("tasks", "stats", "--tasks", str(suite / "tasks"), "--json", *extra)
        assert shown.returncode == 0, shown.stderr
        return json.loads(shown.stdout)

    def median_changed_lines(*extra: str) -> float:
        return float(figures(*extra)["median_changed_lines"])  # type: ignore[arg-type]

    def write_report(changed_lines: int, digest: str | None) -> None:
        record: dict[str, object] = {"id": "textkit-slugify", "category": "new_feature"}
        record |= {"package": "textkit", "valid": True, "changed_lines": changed_lines}
        record["changed_lines_digest"] = digest
        report = {"date": "2026-12-01T00:00:00+00:00", "duration_s": 1.0, "tasks": [record]}
        (suite / "validation.json").write_text(json.dumps(report))

    built = median_changed_lines()  # no report: the task is built and its reference counted
    assert built > 0
    write_report(int(built) + 1000, digest="0" * 24)  # counted on another build: stale
    assert median_changed_lines("--update-report") == built
    refreshed = json.loads((suite / "validation.json").read_text())["tasks"][0]
    assert refreshed["changed_lines"] == built and refreshed["changed_lines_digest"] != "0" * 24
    assert refreshed["code_lines_rule"] == CODE_LINES_RULE  # source files only
    assert "textkit-slugify" in (suite / "VALIDATION.md").read_text()
    code = refreshed["changed_code_lines"]
    assert 0 < code < built  # the deleted code has docstrings, blank lines, comments
    write_report(int(built) + 1000, digest=refreshed["changed_lines_digest"])  # this build's
    shown = figures()
    assert shown["median_changed_lines"] == built + 1000
    # the record predates the code count: not counted, and not built to count it ...
    assert (shown["changed_code_lines_counted"], shown["median_changed_code_lines"]) == (0, None)
    shown = figures("--update-report")  # ... unless the report is to be updated
    assert (shown["changed_code_lines_counted"], shown["median_changed_code_lines"]) == (1, code)
    assert shown["reviewed"] == 0  # no review log: written by hand
    decision = {"id": "textkit-slugify", "decision": "accept", "reason": "", "at": "2026"}
    (suite / "review.jsonl").write_text(json.dumps(decision) + "\n")
    assert figures()["reviewed"] == 1
