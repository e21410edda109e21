"""The run folder's seal (`seal.json`): a manifest of what the runner wrote, kept as it writes.

It holds the sha256 of run.json, and per finished attempt (`task#epoch`) the sha256 of its
line in attempts.jsonl and of its trajectory file. The runner updates it with every attempt it
appends (`RunDir.append`, `RunDir.rewrite`), so a folder whose attempts were deleted, trimmed
or edited, or whose run.json or a trajectory was edited, no longer matches it
(`seal_problems`), which `runs verify` reports before replaying anything.

What it is not: a signature. It has no key, so whoever holds the folder can rewrite the seal
along with the files (and a local key would be theirs too). It makes careless or partial
tampering cheap to detect and consistent to report; the real check of a run's verdicts is the
replay (`cursorbench/verify.py`), and of its completeness the plan in run.json.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from pydantic import BaseModel, ValidationError

SEAL_FILE = "seal.json"
SEAL_FORMAT = 1


class SealEntry(BaseModel):
    """One attempt as written: its attempts.jsonl line's digest and its trajectory's."""

    record: str
    trajectory: str | None = None  # None: the attempt has no trajectory file


class Seal(BaseModel):
    format: int = SEAL_FORMAT
    run: str | None  # sha256 of run.json's bytes (None: there was none)
    attempts: dict[str, SealEntry] = {}


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_digest(path: Path) -> str | None:
    """The file's sha256, or None when it is not there."""
    try:
        return digest(path.read_bytes())
    except OSError:
        return None


def entry(folder: Path, line: bytes, trajectory: str | None) -> SealEntry:
    """The seal entry of one attempts.jsonl line (with or without its newline)."""
    where = file_digest(folder / trajectory) if trajectory else None
    return SealEntry(record=digest(line.rstrip(b"\n")), trajectory=where)


def read_seal(folder: Path) -> Seal | None:
    """The folder's seal, or None when it has none (or not one this code reads)."""
    try:
        return Seal.model_validate_json((folder / SEAL_FILE).read_bytes())
    except (OSError, ValidationError, ValueError):
        return None


def write_seal(folder: Path, seal: Seal) -> None:
    path = folder / SEAL_FILE
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(seal.model_dump(mode="json"), indent=1) + "\n")
    os.replace(temporary, path)


def attempt_lines(folder: Path, attempts_file: str) -> dict[str, tuple[bytes, str | None]]:
    """Per attempt key in the attempts file: its line and its trajectory's path."""
    try:
        lines = (folder / attempts_file).read_bytes().splitlines()
    except OSError:
        return {}
    found: dict[str, tuple[bytes, str | None]] = {}
    for line in lines:
        try:
            record = json.loads(line)
            key = f"{record['task_id']}#{record['epoch']}"
        except (ValueError, KeyError, TypeError):
            continue  # a line the run folder reader refuses on its own
        trajectory = record.get("trajectory")
        found[key] = (line, trajectory if isinstance(trajectory, str) else None)
    return found


def resealed(folder: Path, run_file: str, attempts_file: str) -> Seal:
    """The folder's seal brought up to its files as the runner left them: attempts appended but
    not sealed (a kill between the two writes) are added, and sealed attempts no longer in the
    file (a torn last line cut off, errored attempts dropped to run again) are left out. Edited
    records keep their old entries, so they still do not match."""
    seal = read_seal(folder) or Seal(run=file_digest(folder / run_file))
    lines = attempt_lines(folder, attempts_file)
    attempts = {
        key: seal.attempts.get(key) or entry(folder, line, trajectory)
        for key, (line, trajectory) in lines.items()
    }
    return seal.model_copy(update={"attempts": attempts})


def seal_problems(folder: Path, run_file: str, attempts_file: str) -> list[tuple[str, str]]:
    """(where, what) for each way the folder's files differ from its seal; [] if they match."""
    seal = read_seal(folder)
    if seal is None:
        return [("seal", f"{SEAL_FILE} missing or unreadable")]
    problems = []
    if file_digest(folder / run_file) != seal.run:
        problems.append(("seal", f"{run_file} is not the one the runner wrote"))
    lines = attempt_lines(folder, attempts_file)
    for key in sorted(set(seal.attempts) - set(lines)):
        problems.append((key, "sealed attempt missing from the attempts file"))
    for key in sorted(set(lines) - set(seal.attempts)):
        problems.append((key, "attempt not in the seal"))
    for key in sorted(set(lines) & set(seal.attempts)):
        line, trajectory = lines[key]
        sealed, now = seal.attempts[key], entry(folder, line, trajectory)
        if now.record != sealed.record:
            problems.append((key, "attempt record edited since it was sealed"))
        elif now.trajectory != sealed.trajectory:
            problems.append((key, "trajectory edited or removed since it was sealed"))
    return problems
