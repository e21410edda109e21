"""Checking a run folder someone else made (`cursorbench runs verify RUN_DIR`).

A run folder is plain files: whoever hands one over could have edited its
`attempts.jsonl` or `summary.json`. Verification trusts neither. It recomputes the summary
from the recorded attempts, then replays the run offline (`harness/model/replay.py`: the
recorded model replies served back over HTTP through the same agent loop, sandboxes and
grading on this machine's build of each task) into a folder of its own, and compares every
attempt's verdict with the recorded one. A replay whose tool results differ from the
recording diverges, so a trajectory edited to hide what really happened fails too.

What it cannot tell: a trajectory that is wholly made up but self-consistent, e.g. replies
written by a person who knew the answer, replays to the same verdicts. It shows that the
verdicts follow from the recorded replies, not who wrote them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from harness.results import AttemptResult
from harness.run.rundir import RunDir, RunDirError
from harness.run.summary import RunSummary, summarize

# What the grading on this machine must reproduce. Wall times and costs (prices change)
# are left out; token counts are the recorded ones in a replay, so they must match too.
SUMMARY_FIGURES = ("attempts", "resolved", "failed", "errors", "failures", "per_task", "turns")


class Mismatch(BaseModel):
    """One figure that the files or the replay do not bear out."""

    where: str  # "summary" or "TASK#EPOCH"
    field: str
    recorded: str
    found: str


class Verification(BaseModel):
    run_dir: str
    replay_dir: str
    attempts: int
    replayed: int
    mismatches: list[Mismatch]
    warnings: list[str] = []

    @property
    def verified(self) -> bool:
        return not self.mismatches and self.replayed == self.attempts


def _shown(value: Any, limit: int = 160) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _mismatch(where: str, field: str, recorded: Any, found: Any) -> Mismatch:
    return Mismatch(where=where, field=field, recorded=_shown(recorded), found=_shown(found))


def verdict(result: AttemptResult) -> dict[str, Any]:
    """What a replay must give again for an attempt."""
    return {
        "status": result.status.value,
        "failure": result.failure.value if result.failure else None,
        "tests": {name: outcome.value for name, outcome in sorted(result.tests.items())},
        "scores": {name: round(score.value, 6) for name, score in sorted(result.scores.items())},
        "turns": result.turns,
        "tool_calls": result.tool_calls,
        "diff_lines": (result.diff_lines_added, result.diff_lines_removed),
        "tokens": (result.usage.tokens_in, result.usage.tokens_out),
    }


def compare_attempts(
    recorded: dict[str, AttemptResult], replayed: dict[str, AttemptResult]
) -> list[Mismatch]:
    """Per attempt of the recording: each field of its verdict the replay gives otherwise,
    or that the replay did not give it at all."""
    mismatches = []
    for key, result in sorted(recorded.items()):
        again = replayed.get(key)
        if again is None:
            mismatches.append(_mismatch(key, "attempt", "finished", "not replayed"))
            continue
        before, after = verdict(result), verdict(again)
        mismatches += [
            _mismatch(key, field, value, after[field])
            for field, value in before.items()
            if after[field] != value
        ]
    return mismatches


def compare_summary(
    summary: RunSummary | None, results: list[AttemptResult], planned: int
) -> list[Mismatch]:
    """The figures of summary.json that the recorded attempts do not add up to."""
    if summary is None:
        return [_mismatch("summary", "summary.json", "missing or unreadable", "-")]
    counted = summarize(results, planned).model_dump(mode="json")
    stated = summary.model_dump(mode="json")
    mismatches = [
        _mismatch("summary", name, stated[name], counted[name])
        for name in SUMMARY_FIGURES
        if stated[name] != counted[name]
    ]
    if abs(stated["resolved_rate"] - counted["resolved_rate"]) > 1e-9:
        rates = stated["resolved_rate"], counted["resolved_rate"]
        mismatches.append(_mismatch("summary", "resolved_rate", *rates))
    return mismatches


def recorded_attempts(run_dir: Path) -> dict[str, AttemptResult]:
    """The run folder's finished attempts; a folder with none cannot be verified."""
    found = RunDir(run_dir).finished()
    if not found:
        raise RunDirError(f"{run_dir}: no finished attempts to verify")
    return found


def verify_run(
    run_dir: Path, replay_dir: Path, sandbox: str = "auto", concurrency: int = 2
) -> Verification:
    """Replays `run_dir` into `replay_dir` and compares (see the module docstring)."""
    from cursorbench import api
    from cursorbench.config import validate_spec

    recorded = recorded_attempts(run_dir)
    summary = RunDir(run_dir).summary()
    planned = summary.planned if summary and summary.planned else len(recorded)
    mismatches = compare_summary(summary, list(recorded.values()), planned)
    spec = validate_spec(
        {
            "out": str(replay_dir),
            "sandbox": {"kind": sandbox},
            "executor": {"kind": "local", "concurrency": concurrency},
            "model": {"kind": "replay", "run_dir": str(run_dir)},
        }
    )
    outcome = api.run(spec)
    replayed = {result.key: result for result in outcome.results}
    mismatches += compare_attempts(recorded, replayed)
    return Verification(
        run_dir=str(run_dir),
        replay_dir=str(replay_dir),
        attempts=len(recorded),
        replayed=sum(key in replayed for key in recorded),
        mismatches=mismatches,
        warnings=[*outcome.run.warnings, *outcome.store_warnings],
    )
