"""Issue 37, round 4: a run folder is one sealed record, and the store, the gate and the
leaderboard take only runs whose record holds. Each attack goes through the real CLI
(`tests.cli_runner`): deleted attempts, a trimmed run.json, a relabelled sandbox, tasks edited
under the same ids, hand-flipped verdicts imported under a new id. The honest run still
verifies, imports, gates and ranks."""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cursorbench.verify import compare_tamper_evidence
from harness.model.doubles import IrrelevantEditDouble
from harness.results import NOT_TAMPER_EVIDENT, AttemptResult, Status
from harness.run.plan import RunConfig
from harness.run.rundir import ATTEMPTS_FILE, RUN_FILE
from harness.run.seal import SEAL_FILE, resealed, write_seal
from harness.run.summary import summarize
from tests.cli_runner import CliResult, cursorbench

SLUG, CASES = "textkit-slugify", "textkit-case-styles"
TASKS = ("--tasks", SLUG, "--tasks", CASES)


def reference_run(out: Path, *options: str) -> None:
    ran = cursorbench("run", *TASKS, "--out", str(out), *options)
    assert ran.returncode == 0, ran.stdout + ran.stderr


def double_run(serve: Callable[[Any], str], out: Path) -> None:
    """Every attempt fails: the agent edits something unrelated."""
    double = IrrelevantEditDouble()
    ran = cursorbench("run", *TASKS, "--base-url", serve(double), "--model", double.models[0],
                      "--api-key", "none", "--out", str(out))  # fmt: skip
    assert ran.returncode == 0, ran.stderr


def results(out: Path) -> list[AttemptResult]:
    lines = (out / ATTEMPTS_FILE).read_text().splitlines()
    return [AttemptResult.model_validate_json(line) for line in lines]


def write_results(out: Path, kept: list[AttemptResult], planned: int) -> None:
    """The attempts file and a summary.json that adds up to it, as a careful forger writes."""
    (out / ATTEMPTS_FILE).write_text("".join(r.model_dump_json() + "\n" for r in kept))
    summary = json.loads((out / "summary.json").read_text())
    summary |= summarize(kept, planned).model_dump(mode="json", exclude_none=True)
    (out / "summary.json").write_text(json.dumps(summary))


def edit_run(out: Path, config: dict[str, Any] | None = None, **fields: Any) -> None:
    """run.json with `fields` and `config` changed, its config hash recomputed to match."""
    run = json.loads((out / RUN_FILE).read_text())
    run |= fields
    run["config"] |= config or {}
    run["config_hash"] = RunConfig.model_validate(run["config"]).digest()
    (out / RUN_FILE).write_text(json.dumps(run))


def reseal(out: Path) -> None:
    """What a forger who knows the seal's format does last: seal the edited files anew."""
    (out / SEAL_FILE).unlink()
    write_seal(out, resealed(out, RUN_FILE, ATTEMPTS_FILE))


def verify(out: Path, replay: Path) -> tuple[CliResult, set[tuple[str, str]]]:
    done = cursorbench("runs", "verify", str(out), "--out", str(replay), "--json")
    found = {(m["where"], m["field"]) for m in json.loads(done.stdout)["mismatches"]}
    return done, found


def listed(db: str) -> dict[str, dict[str, Any]]:
    rows = json.loads(cursorbench("runs", "list", "--db", db, "--json").stdout)
    return {row["run_id"]: row for row in rows}


def gate_refused(done: CliResult, says: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    assert says in done.stderr, done.stderr


@pytest.mark.slow
def test_deleted_attempts_and_a_trimmed_run_json_do_not_verify(
    cursorbench_home: Path, tmp_path: Path
) -> None:
    honest = tmp_path / "honest"
    reference_run(honest)
    done, found = verify(honest, tmp_path / "v-honest")
    assert done.returncode == 0 and found == set(), done.stdout

    deleted = tmp_path / "deleted"  # the attempt of one task gone, the summary made to agree
    shutil.copytree(honest, deleted)
    kept = [r for r in results(deleted) if r.task_id != CASES]
    write_results(deleted, kept, planned=1)
    (deleted / "trajectories" / f"{CASES}__0.jsonl").unlink()
    done, found = verify(deleted, tmp_path / "v-deleted")
    assert done.returncode == 1
    assert {(f"{CASES}#0", "attempt"), (f"{CASES}#0", "seal")} <= found  # planned, not recorded
    assert ("summary", "planned") in found

    trimmed = tmp_path / "trimmed"  # and the task taken out of run.json's plan too
    shutil.copytree(deleted, trimmed)
    plan = json.loads((trimmed / RUN_FILE).read_text())["config"]
    edit_run(trimmed, config={"tasks": {SLUG: plan["tasks"][SLUG]}})
    done, found = verify(trimmed, tmp_path / "v-trimmed")
    assert done.returncode == 1
    assert {("seal", "seal"), (f"{CASES}#0", "seal")} <= found  # run.json, the attempt
    assert f"{CASES}#0" not in {where for where, field in found if field == "attempt"}


@pytest.mark.slow
def test_a_relabelled_sandbox_does_not_verify_import_or_gate(
    cursorbench_home: Path, tmp_path: Path
) -> None:
    unconfined = tmp_path / "unconfined"
    reference_run(unconfined, "--sandbox", "subprocess")
    edit_run(unconfined, config={"sandbox": "bubblewrap"}, sandbox="bubblewrap", confined=True)
    summary = json.loads((unconfined / "summary.json").read_text())
    summary |= {"sandbox": "bubblewrap", "confined": True}
    (unconfined / "summary.json").write_text(json.dumps(summary))
    reseal(unconfined)  # even with a seal that matches: each attempt says where it ran
    done, found = verify(unconfined, tmp_path / "v")
    assert done.returncode == 1
    assert {(f"{SLUG}#0", "sandbox"), (f"{CASES}#0", "sandbox")} <= found
    assert not any(where == "seal" for where, _ in found)

    db = f"sqlite:///{tmp_path / 'board.sqlite'}"
    imported = cursorbench("runs", "import", str(unconfined), "--db", db)
    assert imported.returncode == 1
    assert imported.stderr.startswith(f"error: {unconfined}: not verified (")
    assert listed(db) == {}


@pytest.mark.slow
def test_tasks_edited_under_the_same_ids_do_not_verify_or_gate(
    cursorbench_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = f"sqlite:///{tmp_path / 'board.sqlite'}"
    first, second = tmp_path / "first", tmp_path / "second"
    reference_run(first, "--db", db)
    reference_run(second, "--db", db)
    ids = {json.loads((out / RUN_FILE).read_text())["id"]: out for out in (first, second)}
    candidate, baseline = list(ids)
    gated = cursorbench("gate", "--candidate", candidate, "--baseline", baseline, "--db", db)
    assert gated.returncode in (0, 1) and "## Gate:" in gated.stdout, gated.stderr

    # Every task's content here now differs from what the runs ran (as an edit of the task
    # files under the same ids would make it).
    monkeypatch.setattr("cursorbench.tasks.workspace.BUILDER_VERSION", "edited-task")
    refused = cursorbench("gate", "--candidate", candidate, "--baseline", baseline, "--db", db)
    gate_refused(refused, "differ from this machine's tasks of the same ids")
    done, found = verify(first, tmp_path / "v")
    assert done.returncode == 1
    assert {(SLUG, "digest"), (CASES, "digest")} <= found


@pytest.mark.slow
def test_flipped_verdicts_under_a_new_id_are_not_imported_gated_or_ranked(
    serve: Callable[[Any], str], cursorbench_home: Path, tmp_path: Path
) -> None:
    honest, again, forged = tmp_path / "honest", tmp_path / "again", tmp_path / "forged"
    double_run(serve, honest)
    double_run(serve, again)
    shutil.copytree(honest, forged)
    flipped = [
        r.model_copy(update={"status": Status.RESOLVED, "failure": None, "error": None})
        for r in results(forged)
    ]
    write_results(forged, flipped, planned=len(flipped))
    new_id = uuid.uuid4().hex
    edit_run(forged, id=new_id)
    summary = json.loads((forged / "summary.json").read_text())
    (forged / "summary.json").write_text(json.dumps(summary | {"run_id": new_id}))
    reseal(forged)  # every file agrees: only the replay can tell

    db = f"sqlite:///{tmp_path / 'board.sqlite'}"
    imported = cursorbench("runs", "import", str(honest), str(again), str(forged), "--db", db)
    assert imported.returncode == 1
    assert f"{honest}: run " in imported.stdout and f"{again}: run " in imported.stdout
    assert imported.stderr.startswith(f"error: {forged}: not verified (") and str(forged) not in (
        imported.stdout
    )
    assert new_id not in listed(db)

    unverified = cursorbench("runs", "import", str(forged), "--unverified", "--db", db)
    assert unverified.returncode == 0 and "(unverified" in unverified.stdout
    rows = listed(db)
    honest_id = json.loads((honest / RUN_FILE).read_text())["id"]
    again_id = json.loads((again / RUN_FILE).read_text())["id"]
    assert rows[new_id]["rank"] == 0 and rows[new_id]["verified"] is False  # apart, unranked
    assert rows[honest_id]["rank"] >= 1 and rows[again_id]["rank"] >= 1
    shown = cursorbench("runs", "list", "--db", db)
    assert "imported unverified" in shown.stdout

    refused = cursorbench("gate", "--candidate", new_id, "--baseline", honest_id, "--db", db)
    gate_refused(refused, f"the candidate run {new_id} was imported unverified")
    fair = cursorbench("gate", "--candidate", again_id, "--baseline", honest_id, "--db", db)
    assert fair.returncode in (0, 1) and "## Gate:" in fair.stdout, fair.stderr


def test_a_replay_folder_that_came_with_the_run_is_not_resumed(tmp_path: Path) -> None:
    """A forger could ship RUN-verify/ holding a finished "replay" of their own: the replay
    must be graded anew, so a folder that is not new or empty is refused (exit 2)."""
    (tmp_path / "run").mkdir()
    (tmp_path / "run-verify").mkdir()
    (tmp_path / "run-verify" / ATTEMPTS_FILE).write_text("{}\n")
    refused = cursorbench("runs", "verify", str(tmp_path / "run"))
    assert refused.returncode == 2
    assert refused.stderr == (
        f"error: {tmp_path / 'run-verify'}: the replay needs a new or empty folder (--out)\n"
    )


def test_a_run_json_that_dropped_its_not_tamper_evident_warning_differs() -> None:
    """The replay says what its tasks' verdicts are here; run.json cannot claim more."""
    said = [f"{NOT_TAMPER_EVIDENT}: some task has no canary run"]
    [mismatch] = compare_tamper_evidence([], said)
    assert (mismatch.where, mismatch.field) == ("run", "warnings")
    assert compare_tamper_evidence(said, said) == compare_tamper_evidence(said, []) == []
