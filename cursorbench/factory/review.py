"""`tasks review`: every proposed task is accepted, edited or rejected before it joins a
suite. Decisions (with their reasons) are appended to `review.jsonl` in the proposal
folder; the last decision on a task is its state. Only accepted tasks can be moved into
a suite folder (`move_accepted`); an edit (a new prompt) leaves the task to be accepted.
A moved task takes its decisions along (the suite's own `review.jsonl`), so a suite
shows that each of its tasks was reviewed (`reviewed`), and can be given the suite's
version (its digest changes: validate it in the suite).
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import yaml

from cursorbench.tasks.suites import _Literal

LOG = "review.jsonl"


class ReviewError(ValueError):
    """A decision that cannot be made (one line)."""


def task_path(folder: Path, task_id: str) -> Path:
    path = folder / "tasks" / f"{task_id}.yaml"
    if not path.is_file():
        raise ReviewError(f"no proposed task {task_id!r} in {folder / 'tasks'}")
    return path


def record(folder: Path, task_id: str, decision: str, reason: str) -> None:
    task_path(folder, task_id)
    if decision == "reject" and not reason.strip():
        raise ReviewError(f"rejecting {task_id}: give a --reason")
    entry = {
        "id": task_id, "decision": decision, "reason": reason,
        "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }  # fmt: skip
    with (folder / LOG).open("a", encoding="utf-8") as log:
        log.write(json.dumps(entry) + "\n")


def edit_prompt(folder: Path, task_id: str, prompt: str, reason: str) -> None:
    path = task_path(folder, task_id)
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["prompt"] = _Literal(prompt) if "\n" in prompt else prompt
    path.write_text(yaml.safe_dump(data, sort_keys=False, width=100), encoding="utf-8")
    record(folder, task_id, "edit", reason)


def states(folder: Path) -> dict[str, str]:
    """Each reviewed task's last decision."""
    found: dict[str, str] = {}
    log = folder / LOG
    if log.is_file():
        for line in log.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            found[entry["id"]] = entry["decision"]
    return found


def pending(folder: Path) -> list[Path]:
    """Proposed task files with no decision yet, or whose last decision is an edit."""
    decided = states(folder)
    found = sorted((folder / "tasks").glob("*.yaml")) if (folder / "tasks").is_dir() else []
    return [path for path in found if decided.get(path.stem, "edit") == "edit"]


def _measured(folder: Path) -> dict[str, dict[str, object]]:
    try:
        data = json.loads((folder / "proposals.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    rows = data.get("candidates") if isinstance(data, dict) else None
    found = [r for r in rows or [] if isinstance(r, dict) and r.get("task_id")]
    # a task's own row is the one that proposed it (others of its id may have failed)
    return {str(r["task_id"]): r for r in sorted(found, key=lambda r: r.get("failed") is None)}


def describe(folder: Path, path: Path) -> list[str]:
    """What a reviewer reads of a proposed task: its prompt (and earlier turns), what the
    mutation does, what grades it, and what the proposer measured."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    row = _measured(folder).get(path.stem, {})
    ops = data.get("mutation", {}).get("operations", [])
    check = data.get("verification", {})
    lines = [f"== {data['id']} ({data['category']}, {data['source']['name']} "
             f"{data['source']['version']})"]  # fmt: skip
    for turn in data.get("earlier_turns", []):
        lines.append(f"   earlier {turn['role']}: {turn['content']}")
    lines.append(f"   prompt ({len(data['prompt'])} chars): {data['prompt'].strip()}")
    for op in ops:
        what = op.get("symbol") or (op.get("old", "").strip().splitlines() or [""])[0][:70]
        lines.append(f"   {op['op']} {op['file']} {what}")
    kind = check.get("kind", "pytest")
    graded = check.get("hidden_tests") or [f["key"] for f in check.get("facts", [])]
    lines.append(f"   graded by {kind}: {', '.join(map(str, graded))[:200]}")
    if row:
        lines.append(
            f"   measured: FAIL_TO_PASS {row.get('fail_to_pass')}, PASS_TO_PASS "
            f"{row.get('pass_to_pass')}, spilled {row.get('spilled')}, changed lines "
            f"{row.get('changed_lines')}"
        )
    return lines


def _entries(folder: Path) -> list[dict[str, str]]:
    log = folder / LOG
    if not log.is_file():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]


def reviewed(suite: Path) -> set[str]:
    """The suite's tasks whose last decision in its `review.jsonl` is an accept."""
    return {task_id for task_id, state in states(suite).items() if state == "accept"}


def move_accepted(folder: Path, suite: Path, suite_version: str | None = None) -> list[Path]:
    """Moves the accepted tasks' files into `suite/tasks/`, their decisions into the
    suite's `review.jsonl`, and sets their `suite_version` when given; the others stay.
    A task already in the suite is not overwritten."""
    target = suite / "tasks"
    target.mkdir(parents=True, exist_ok=True)
    decisions = _entries(folder)
    moved = []
    for task_id, state in sorted(states(folder).items()):
        source = folder / "tasks" / f"{task_id}.yaml"
        if state != "accept" or not source.is_file():
            continue
        destination = target / source.name
        if destination.exists():
            raise ReviewError(f"{destination} exists: the suite already has {task_id}")
        if suite_version is not None:
            data = yaml.safe_load(source.read_text(encoding="utf-8"))
            data["suite_version"] = suite_version
            if isinstance(data.get("prompt"), str) and "\n" in data["prompt"]:
                data["prompt"] = _Literal(data["prompt"])
            source.write_text(yaml.safe_dump(data, sort_keys=False, width=100), encoding="utf-8")
        with (suite / LOG).open("a", encoding="utf-8") as log:
            for entry in decisions:
                if entry["id"] == task_id:
                    log.write(json.dumps(entry) + "\n")
        moved.append(Path(shutil.move(source, destination)))
        _move_authored(source, destination)
    return moved


def _move_authored(source: Path, destination: Path) -> None:
    """A task's authored tests (the folder named like its file) go where its file went."""
    folder = source.with_suffix("")
    if folder.is_dir():
        shutil.move(folder, destination.with_suffix(""))


def drop_invalid(suite: Path) -> list[Path]:
    """Moves the suite's tasks that its validation report (`validation.json`) records as
    not valid into `suite/refused/`, each with a reject in the suite's `review.jsonl`
    giving the report's first problem; tasks the report does not hold stay."""
    try:
        data = json.loads((suite / "validation.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ReviewError(f"{suite}: no validation report to read ({error})") from None
    refused = suite / "refused"
    moved: list[Path] = []
    for entry in data.get("tasks", []):
        source = suite / "tasks" / f"{entry['id']}.yaml"
        if entry.get("valid") or not source.is_file():
            continue
        problems = entry.get("problems") or ["not valid"]
        refused.mkdir(exist_ok=True)
        decision = {
            "id": entry["id"], "decision": "reject", "reason": f"validation: {problems[0]}",
            "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        }  # fmt: skip
        with (suite / LOG).open("a", encoding="utf-8") as log:
            log.write(json.dumps(decision) + "\n")
        moved.append(Path(shutil.move(source, refused / source.name)))
        _move_authored(source, refused / source.name)
    return moved
