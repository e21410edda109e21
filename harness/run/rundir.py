"""The run folder (`--out`): run.json, attempts.jsonl, summary.json, seal.json, trajectories/.

`attempts.jsonl` is the record of truth: one line per finished attempt,
appended and fsynced as each attempt ends. Opening a folder again resumes the
run it holds: finished attempts are read back (a line torn by a kill is cut
off), and a different configuration is refused with what differs. Every write of run.json
or an attempt also updates the folder's seal (`harness.run.seal`).
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness.errors import CursorBenchError
from harness.results import AttemptResult, RunInfo
from harness.run.seal import Seal, entry, file_digest, resealed, write_seal
from harness.run.summary import RunSummary

RUN_FILE = "run.json"
ATTEMPTS_FILE = "attempts.jsonl"
SUMMARY_FILE = "summary.json"


class RunDirError(CursorBenchError):
    """The folder cannot be used for this run (one line, for the user)."""


def write_json_atomic(path: Path, data: Any) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(data, indent=2, default=str) + "\n")
    os.replace(temporary, path)


def config_differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    keys = sorted(set(old) | set(new))
    return [
        f"{key}: {old.get(key)!r} -> {new.get(key)!r}"
        for key in keys
        if old.get(key) != new.get(key)
    ]


class RunDir:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.attempts_path = path / ATTEMPTS_FILE
        self._lock_file: int | None = None
        self._seal: Seal | None = None  # as this process last wrote it

    def lock(self) -> None:
        """Holds the folder for this process; a second run writing to it is refused."""
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(self.path / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as error:
            reason = error.strerror or type(error).__name__
            raise RunDirError(f"{self.path}: cannot be used as a run folder ({reason})") from None
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            raise RunDirError(f"{self.path} is in use by another cursorbench run") from None
        self._lock_file = descriptor

    def unlock(self) -> None:
        if self._lock_file is not None:
            os.close(self._lock_file)  # closing the descriptor releases the lock
            self._lock_file = None

    @property
    def locked(self) -> bool:
        """Whether this object holds the folder's lock."""
        return self._lock_file is not None

    @contextmanager
    def holding(self) -> Iterator[RunDir]:
        """The folder, locked for the block: its one owner takes and releases the lock."""
        self.lock()
        try:
            yield self
        finally:
            self.unlock()

    def wall_time_s(self) -> float:
        """The wall time earlier sessions of this run spent (from summary.json), or 0."""
        summary = self.summary()
        if summary is None or summary.attempt_time_s is None:
            return 0.0  # an older summary whose wall_time_s was the sum of attempts
        return summary.wall_time_s

    def write_text(self, relative: str, text: str) -> None:
        """Writes a file under the folder at once (e.g. a trajectory that came back)."""
        path = self.path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)

    def existing_run(self) -> RunInfo | None:
        run_file = self.path / RUN_FILE
        if not run_file.exists():
            return None
        try:
            return RunInfo.model_validate_json(run_file.read_text())
        except (ValidationError, ValueError):
            raise RunDirError(f"{run_file}: not a CursorBench run file") from None

    def open(self, fresh: RunInfo) -> RunInfo:
        """The run this folder holds: `fresh` if it is new, else the stored one if it matches."""
        stored = self.existing_run()
        if stored is None:
            self.path.mkdir(parents=True, exist_ok=True)
            (self.path / "trajectories").mkdir(exist_ok=True)
            write_json_atomic(self.path / RUN_FILE, fresh.model_dump(mode="json"))
            self._seal = Seal(run=file_digest(self.path / RUN_FILE))
            write_seal(self.path, self._seal)
            return fresh
        if stored.config_hash != fresh.config_hash:
            changes = "; ".join(config_differences(stored.config, fresh.config))
            raise RunDirError(
                f"{self.path} holds a run with another configuration ({changes}); "
                "use another --out, or the original options to resume"
            )
        return stored

    def finished(self) -> dict[str, AttemptResult]:
        """Finished attempts by key. A torn last line (a killed writer) is cut off the
        file; a bad line anywhere else is refused rather than thrown away with what follows."""
        if not self.attempts_path.exists():
            return {}
        lines = self.attempts_path.read_bytes().splitlines(keepends=True)
        results: dict[str, AttemptResult] = {}
        good_bytes = 0
        for number, line in enumerate(lines, start=1):
            try:
                result = AttemptResult.model_validate_json(line)
            except ValidationError:
                if number == len(lines):
                    with self.attempts_path.open("r+b") as file:
                        file.truncate(good_bytes)
                    break
                raise RunDirError(f"{self.attempts_path}: line {number} is corrupt") from None
            results[result.key] = result
            good_bytes += len(line)
        return results

    def append(self, result: AttemptResult) -> None:
        line = result.model_dump_json()
        seal = self._current_seal()  # before the line: a kill between the writes is healed
        with self.attempts_path.open("a", encoding="utf-8") as file:
            file.write(line + "\n")
            file.flush()
            os.fsync(file.fileno())
        seal.attempts[result.key] = entry(self.path, line.encode(), result.trajectory)
        write_seal(self.path, seal)

    def _current_seal(self) -> Seal:
        if self._seal is None:
            self._seal = resealed(self.path, RUN_FILE, ATTEMPTS_FILE)
        return self._seal

    def rewrite(self, results: list[AttemptResult]) -> None:
        """Replaces the attempts file at once (for dropping attempts to run again)."""
        temporary = self.attempts_path.with_name(ATTEMPTS_FILE + ".tmp")
        with temporary.open("w", encoding="utf-8") as file:
            file.writelines(result.model_dump_json() + "\n" for result in results)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, self.attempts_path)
        self._seal = resealed(self.path, RUN_FILE, ATTEMPTS_FILE)
        write_seal(self.path, self._seal)

    def summary(self) -> RunSummary | None:
        """summary.json as last written, or None (none yet, or not readable as a summary)."""
        try:
            data = json.loads((self.path / SUMMARY_FILE).read_text())
        except (OSError, ValueError):
            return None
        return RunSummary.read(data)

    def write_summary(self, summary: RunSummary) -> None:
        write_json_atomic(self.path / SUMMARY_FILE, summary.as_json())
