"""`tasks review`: every proposed task is accepted, edited or rejected before it joins a
suite. Decisions (with their reasons) are appended to `review.jsonl` in the proposal
folder; the last decision on a task is its state. Only accepted tasks can be moved into
a suite folder (`move_accepted`); an edit (a new prompt) leaves the task to be accepted.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import yaml

from cursorbench.suites import _Literal

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


def move_accepted(folder: Path, suite: Path) -> list[Path]:
    """Moves the accepted tasks' files into `suite/tasks/`; the others stay."""
    target = suite / "tasks"
    target.mkdir(parents=True, exist_ok=True)
    moved = []
    for task_id, state in sorted(states(folder).items()):
        source = folder / "tasks" / f"{task_id}.yaml"
        if state == "accept" and source.is_file():
            moved.append(Path(shutil.move(source, target / source.name)))
    return moved
