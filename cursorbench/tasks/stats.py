"""Suite figures (`tasks stats`) and the validation report (`tasks validate --report`).

Figures are pure functions of per-task rows: changed lines of the reference
solution, prompt characters, FAIL_TO_PASS/PASS_TO_PASS counts (from the task
files), and, where a validation report exists (`validation.json` beside the suite's
`tasks/`), hidden-test coverage of the removed lines and test runtime.
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cursorbench.tasks.answer import CODE_LINES_RULE
from cursorbench.tasks.sources.registry import source_of
from cursorbench.tasks.task import Task
from cursorbench.tasks.workspace import task_digest
from cursorbench.validation.checks import TaskValidation
from harness.kinds.registry import kind_of

# The Composer 2 report's figures, printed beside ours.
PUBLISHED = {"median_changed_lines": 181, "median_prompt_chars": 390}


class TaskRow(BaseModel):
    id: str
    package: str
    category: str
    changed_lines: int
    changed_code_lines: int | None = None  # without blank or comment lines
    prompt_chars: int
    fail_to_pass: int
    pass_to_pass: int
    coverage: float | None = None
    test_runtime_s: float | None = None
    validated: bool | None = None
    reviewed: bool | None = None  # None: the suite keeps no review log (written by hand)


def task_row(task: Task, changed: tuple[int, int | None], record: TaskValidation | None) -> TaskRow:
    """A task's row: its file's figures, the reference's changed lines (all, and without
    blank or comment lines), and what its validation record (if any) measured."""
    package = source_of(task.source).package_name(task.source)
    counts = kind_of(task.verification).test_counts(task.verification)
    return TaskRow(
        id=task.id,
        package=package,
        category=task.category.value,
        changed_lines=changed[0],
        changed_code_lines=changed[1],
        prompt_chars=len(task.prompt),
        fail_to_pass=counts.fail_to_pass,
        pass_to_pass=counts.pass_to_pass,
        coverage=record.coverage if record else None,
        test_runtime_s=record.test_runtime_s if record else None,
        validated=record.valid if record else None,
    )


def quartiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"q1": None, "median": None, "q3": None}
    if len(values) == 1:
        return {"q1": values[0], "median": values[0], "q3": values[0]}
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return {"q1": q1, "median": median, "q3": q3}


def suite_stats(rows: list[TaskRow]) -> dict[str, Any]:
    def figure(name: str) -> list[float]:
        return [float(v) for row in rows if (v := getattr(row, name)) is not None]

    changed = quartiles(figure("changed_lines"))
    code = quartiles(figure("changed_code_lines"))
    prompts = quartiles(figure("prompt_chars"))
    return {
        "tasks": len(rows),
        "packages": dict(sorted(Counter(row.package for row in rows).items())),
        "categories": dict(sorted(Counter(row.category for row in rows).items())),
        "median_changed_lines": changed["median"],
        "changed_lines_quartiles": changed,
        # blank and comment lines left out; over the tasks where it was counted
        "median_changed_code_lines": code["median"],
        "changed_code_lines_quartiles": code,
        "changed_code_lines_counted": len(figure("changed_code_lines")),
        "median_prompt_chars": prompts["median"],
        "prompt_chars_quartiles": prompts,
        "fail_to_pass": quartiles(figure("fail_to_pass")),
        "pass_to_pass": quartiles(figure("pass_to_pass")),
        "coverage_of_removed_lines": quartiles(figure("coverage")),
        "test_runtime_s": quartiles(figure("test_runtime_s")),
        "validated": sum(row.validated is True for row in rows),
        "reviewed": sum(row.reviewed is True for row in rows),
        "published": PUBLISHED,
    }


def load_validation(suite_dir: Path) -> dict[str, TaskValidation]:
    path = suite_dir / "validation.json"
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {item["id"]: TaskValidation.model_validate(item) for item in data["tasks"]}


class ValidationRun(BaseModel):
    """One `tasks validate` run that a report holds records from."""

    date: str
    duration_s: float
    tasks: list[str]


def write_validation_report(
    folder: Path,
    records: list[TaskValidation],
    started: dt.datetime,
    seconds: float,
    runs: list[ValidationRun] | None = None,
) -> None:
    """`validation.json` (machine-readable) and `VALIDATION.md` (for people).

    `runs` is given when the records come from several runs (`merge_validation_reports`)."""
    folder.mkdir(parents=True, exist_ok=True)
    ok = sum(r.valid for r in records)
    meta: dict[str, Any] = {
        "date": started.isoformat(timespec="seconds"),
        "duration_s": round(seconds, 1),
        "valid": ok,
        "tasks": [r.model_dump() for r in records],
    }
    if runs:
        meta["runs"] = [run.model_dump() for run in runs]
    (folder / "validation.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    if runs and len(runs) > 1:
        last = max(dt.datetime.fromisoformat(run.date) for run in runs)
        when = (
            f"Merged from {len(runs)} `cursorbench tasks validate` runs started between "
            f"{started:%Y-%m-%d %H:%M} and {last:%Y-%m-%d %H:%M} UTC; "
            f"{seconds / 60:.1f} minutes of validation in all; "
        )
    else:
        when = f"Run on {started:%Y-%m-%d %H:%M} UTC; took {seconds / 60:.1f} minutes; "
    healthy = last_healthy(folder, records)
    lines = [
        "# Validation report",
        "",
        f"{when}{ok} of {len(records)} tasks valid; "
        f"{sum(bool(r.perturbations) for r in records)} with perturbed runs (rows marked "
        "`unperturbed` were validated before they existed, or list no tests).",
        "",
        "Each task: the pristine tree's tests run 3 times and once under each perturbation "
        "(clock +1 day / +31 days / +366 days, TZ Pacific/Kiritimati and America/Adak, "
        "LC_ALL=POSIX, fixed hash seeds, reversed and shuffled order, a loaded CPU); only "
        "tests passing in every run count, the others are dropped with their reason (below). "
        "FAIL_TO_PASS are the stable tests inside the hidden files that fail on the broken "
        "tree (at least 5); visible tests that fail there are named, never graded; the "
        "reference solution resolves, the untouched workspace and a stub raising "
        "`NotImplementedError` do not; coverage is the share of the removed executable "
        "lines that the hidden tests alone execute on the reference; the leak scan and the "
        "import checks pass. `checked` is when the task was validated (a row without "
        "perturbed runs predates them); `last healthy` is the latest validation or "
        "`tasks health` check (`HEALTH.md`) that found its verdicts unchanged.",
        "",
        "| task | package | category | valid | F2P | P2P | visible failing | dropped "
        "| changed lines | coverage | stub F2P passing | test s | checked | last healthy "
        "| problems |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        coverage = "-" if r.coverage is None else f"{r.coverage:.0%}"
        problems = "; ".join(p.replace("|", "/") for p in r.problems)[:300] or "-"
        checked = (r.checked_at or "-")[:16] + ("" if r.perturbations else " (unperturbed)")
        lines.append(
            f"| {r.id} | {r.package} | {r.category} | {'yes' if r.valid else 'NO'} "
            f"| {r.fail_to_pass} | {r.pass_to_pass} | {r.spilled} | {len(r.dropped)} "
            f"| {r.changed_lines} | {coverage} | {r.stub_fail_to_pass_passed} "
            f"| {r.test_runtime_s:.1f} | {checked} | {healthy.get(r.id, '-')[:16]} | {problems} |"
        )
    lines += ["", "## Tests dropped, and why", ""]
    lines += [
        "Tests that passed on the pristine tree but not in every run (plain or perturbed); "
        "they are in neither list. The whole record is in `validation.json` (`dropped`).",
        "",
    ]
    for r in records:
        for number, (test, reason) in enumerate(sorted(r.dropped.items())):
            if number == MAX_LISTED:
                lines.append(f"- {r.id}: and {len(r.dropped) - MAX_LISTED} more")
                break
            lines.append(f"- {r.id}: `{test}`: {reason}")
    lines += ["", "## Visible tests that fail on the broken tree", ""]
    lines += ["Named, not graded (FAIL_TO_PASS comes only from the hidden files).", ""]
    for r in records:
        if r.visible_failing:
            shown = ", ".join(f"`{t}`" for t in r.visible_failing[:MAX_LISTED])
            more = len(r.visible_failing) - MAX_LISTED
            lines.append(f"- {r.id} ({len(r.visible_failing)}): {shown}" + (
                f" and {more} more" if more > 0 else ""))  # fmt: skip
    flagged = [r for r in records if r.review]
    if flagged:
        lines += ["", "## Flagged for review", ""]
        lines += ["Valid or not, a reviewer should look (`cursorbench/validation/pins.py`).", ""]
        lines += [f"- {r.id}: {'; '.join(r.review)}" for r in flagged]
    (folder / "VALIDATION.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


MAX_LISTED = 12  # tests listed per task in VALIDATION.md (validation.json has all)


def last_healthy(folder: Path, records: list[TaskValidation]) -> dict[str, str]:
    """Per task, the latest time its verdicts were shown unchanged: its validation (when
    valid) or a `tasks health` check in `folder`'s `health.json` that found no change."""
    from cursorbench.validation.health import load_health

    when = {r.id: r.checked_at for r in records if r.valid and r.checked_at}
    for check in load_health(folder):
        if not check.changed and check.checked_at > when.get(check.id, ""):
            when[check.id] = check.checked_at
    return when


def recorded_changed_lines(
    task: Task, record: TaskValidation | None
) -> tuple[int, int | None] | None:
    """The record's counts of the reference's changed lines (all; without blank or comment
    lines, None when the record predates that count or counted by another rule), if they
    were counted on the build the task makes today (a task file or builder changed since
    makes them stale)."""
    if record is None or record.changed_lines_digest != task_digest(task):
        return None
    current = record.code_lines_rule == CODE_LINES_RULE
    return record.changed_lines, record.changed_code_lines if current else None


def update_changed_lines(folder: Path, counted: dict[str, tuple[int, int, str]]) -> int:
    """Writes counts of changed lines (task id -> (lines, code lines, build digest)) into
    the folder's validation report, keeping everything else; returns how many records
    changed."""
    path = folder / "validation.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    records = [TaskValidation.model_validate(item) for item in data["tasks"]]
    changed = 0
    for record in records:
        if record.id in counted:
            lines, code, digest = counted[record.id]
            now = (record.changed_lines, record.changed_code_lines, record.changed_lines_digest)
            changed += now != (lines, code, digest) or record.code_lines_rule != CODE_LINES_RULE
            record.changed_lines, record.changed_code_lines = lines, code
            record.changed_lines_digest, record.code_lines_rule = digest, CODE_LINES_RULE
    runs = [ValidationRun.model_validate(run) for run in data.get("runs", [])]
    started = dt.datetime.fromisoformat(data["date"])
    write_validation_report(folder, records, started, data["duration_s"], runs or None)
    return changed


def merge_validation_reports(reports: list[Path], folder: Path) -> list[TaskValidation]:
    """Combine `validation.json` files (from runs on other machines, or one run per task) into
    one report in `folder`; where two reports hold the same task, the later run's record wins.
    A report that is itself merged contributes its own runs."""
    by_run: list[tuple[ValidationRun, list[TaskValidation]]] = []
    for path in reports:
        file = path / "validation.json" if path.is_dir() else path
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
            records = [TaskValidation.model_validate(item) for item in data["tasks"]]
            runs = [ValidationRun.model_validate(run) for run in data.get("runs", [])] or [
                ValidationRun(
                    date=data["date"], duration_s=data["duration_s"], tasks=[r.id for r in records]
                )
            ]
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise ValueError(f"{file}: not a validation report: {error}") from error
        for run in runs:
            by_run.append((run, [r for r in records if r.id in set(run.tasks)]))
    if not by_run:
        raise ValueError("no validation reports to merge")
    by_run.sort(key=lambda item: dt.datetime.fromisoformat(item[0].date))
    latest: dict[str, TaskValidation] = {}
    for run, records in by_run:
        for record in records:  # older reports did not date each task: their run's date
            record.checked_at = record.checked_at or run.date
        latest.update({r.id: r for r in records})
    runs = [run for run, _ in by_run]
    started = dt.datetime.fromisoformat(runs[0].date)
    seconds = sum(run.duration_s for run in runs)
    merged = sorted(latest.values(), key=lambda r: r.id)
    write_validation_report(folder, merged, started, seconds, runs)
    return merged


def print_stats(stats: dict[str, Any]) -> list[str]:
    """The figures as lines of text, beside the published ones."""

    def q(block: dict[str, Any], digits: int = 0) -> str:
        if block["median"] is None:
            return "-"
        return " / ".join(f"{block[k]:.{digits}f}" for k in ("q1", "median", "q3"))

    packages, categories = stats["packages"], stats["categories"]
    return [
        f"tasks: {stats['tasks']} (validated: {stats['validated']}, reviewed: {stats['reviewed']})",
        f"packages: {len(packages)} ({', '.join(f'{k} {v}' for k, v in packages.items())})",
        f"categories: {len(categories)} ({', '.join(f'{k} {v}' for k, v in categories.items())})",
        f"changed lines q1/median/q3: {q(stats['changed_lines_quartiles'])} "
        f"(published median {PUBLISHED['median_changed_lines']})",
        f"changed lines without blank or comment lines q1/median/q3: "
        f"{q(stats['changed_code_lines_quartiles'])} "
        f"(counted for {stats['changed_code_lines_counted']} of {stats['tasks']})",
        f"prompt chars q1/median/q3: {q(stats['prompt_chars_quartiles'])} "
        f"(published median {PUBLISHED['median_prompt_chars']})",
        f"FAIL_TO_PASS q1/median/q3: {q(stats['fail_to_pass'])}",
        f"PASS_TO_PASS q1/median/q3: {q(stats['pass_to_pass'])}",
        f"coverage of removed lines q1/median/q3: {q(stats['coverage_of_removed_lines'], 2)}",
        f"test runtime s q1/median/q3: {q(stats['test_runtime_s'], 1)}",
    ]
