"""The one result-store protocol: where a run's results land besides its run folder.

`leaderboard.SqlStore` implements it; a test may pass any object with these members.

The write rule: the first record of an attempt (run, task, epoch) stands. Recording
an attempt a store already holds changes nothing, so a resumed run may record again
whatever it is not sure the store has (a kill between the run folder's write and the
store's, a database that was down). To replace an attempt, forget it first with
`delete_attempts` (what `--retry-errors` does), then record it anew.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from harness.results import AttemptResult, RunInfo
from harness.run.summary import RunSummary


@runtime_checkable
class ResultStore(Protocol):
    def start_run(self, run: RunInfo) -> None:
        """Registers the run; again with the same config hash does nothing, with another
        it is refused."""
        ...

    def describe_tasks(self, suite_version: str, categories: dict[str, str | None]) -> None:
        """What each task of the run is (its category, None if it has none)."""
        ...

    def record(self, run_id: str, result: AttemptResult) -> None:
        """Stores one attempt once: a record of the same (task, epoch) already there stands."""
        ...

    def attempt_keys(self, run_id: str) -> set[str]:
        """Keys (`task_id#epoch`) of the attempts already recorded for the run."""
        ...

    def finish_run(self, run_id: str, summary: RunSummary) -> None:
        """Stores the run's summary (the latest one given) and whether it is complete."""
        ...

    def delete_attempts(self, run_id: str, keys: set[str]) -> None:
        """Forgets attempts (to run them again); unknown keys are ignored."""
        ...

    def close(self) -> None: ...
