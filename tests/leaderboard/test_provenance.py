"""`leaderboard.provenance`: runs the gate refuses on where they came from, each in one line
(the CLI's attacks are in tests/cursorbench/test_provenance.py)."""

from __future__ import annotations

from types import SimpleNamespace

from harness.results import UNVERIFIED
from leaderboard.provenance import provenance_refusal


def run(run_id: str, tasks: dict[str, str], warnings: list[str] | None = None) -> SimpleNamespace:
    config = {"tasks": tasks, "epochs": 1}
    return SimpleNamespace(id=run_id, config=config, warnings=warnings or [])


def test_runs_of_the_same_tasks_recorded_or_verified_are_fit() -> None:
    runs = {"candidate": run("c", {"a": "1", "b": "2"}), "baseline": run("b", {"a": "1"})}
    assert provenance_refusal(runs) is None
    assert provenance_refusal(runs, {"a": {"1"}, "b": {"2"}, "other": {"9"}}) is None
    assert provenance_refusal(runs, {}) is None  # ids this machine does not know


def test_an_unverified_run_is_refused_first() -> None:
    marked = run("c", {"a": "1"}, [f"{UNVERIFIED}: imported"])
    runs = {"candidate": marked, "baseline": run("b", {})}
    refusal = provenance_refusal(runs)
    assert refusal is not None and refusal.startswith("the candidate run c was imported unverified")


def test_other_contents_under_the_same_ids_are_refused() -> None:
    runs = {"candidate": run("c", {"a": "1", "b": "X"}), "baseline": run("b", {"a": "1", "b": "2"})}
    refusal = provenance_refusal(runs)
    assert refusal is not None and "different contents under the same task ids (b)" in refusal
    same = {"candidate": run("c", {"a": "1"}), "baseline": run("b", {"a": "1"})}
    refusal = provenance_refusal(same, {"a": {"2"}})
    assert refusal is not None and "the candidate's tasks differ from this machine's" in refusal
    assert "\n" not in refusal
