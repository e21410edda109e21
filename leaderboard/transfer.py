"""Moving runs in and out of the store: load a run folder (`--out`), export any query to a
pandas DataFrame, CSV or Parquet, and a run's predictions in SWE-bench's JSONL format
(`instance_id`, `model_name_or_path`, `model_patch`), and attempts' trajectories in ATIF
(Harbor's Agent Trajectory Interchange Format, `harness.agent.atif`), one file per attempt.

Loading is idempotent like every write (insert-only rows): loading a folder twice, or one the
runner already recorded, adds nothing. A folder loaded without being verified first
(`runs import --unverified`) is stored with the `harness.results.UNVERIFIED` warning, so the
gate refuses it and the leaderboard lists it apart, unranked. The run keeps its id and config
hash, so a folder loaded on another machine merges with runs recorded there.

Not covered here: which rows a view shows (`leaderboard.queries`). pandas and pyarrow come with
the `export` extra (and `dev`); they are imported only when a DataFrame is asked for.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from sqlalchemy import Connection, Select, select, text
from sqlalchemy.exc import SQLAlchemyError

from harness.agent.atif import agent_version, to_atif
from harness.results import UNVERIFIED, in_order, verified
from harness.run.plan import RunConfig
from harness.run.rundir import RunDir, RunDirError
from harness.run.summary import summarize
from leaderboard.queries import attempt_view
from leaderboard.schema import AttemptRow, RunRow
from leaderboard.store import SqlStore

if TYPE_CHECKING:
    import pandas

EXPORT_FORMATS = ("csv", "parquet", "jsonl", "swebench", "atif")
UNVERIFIED_WARNING = f"{UNVERIFIED}: imported without `runs verify`; its verdicts were not replayed"


class TransferError(Exception):
    """A folder that is not a run, a format not known (one line)."""


def import_run_dir(
    store: SqlStore, folder: Path, keep_trajectories: bool = False, unverified: bool = False
) -> tuple[str, int]:
    """Record a run folder's run and attempts; returns (run id, attempts in the folder).
    `unverified`: the caller did not verify the folder; the run is stored marked so."""
    run_dir = RunDir(folder)
    try:
        run = run_dir.existing_run()
    except RunDirError as error:
        raise TransferError(str(error)) from None
    if run is None:
        raise TransferError(f"{folder}: not a run folder (no run.json)")
    results = in_order(run_dir.finished().values())
    run = run.model_copy(update={"out_dir": str(folder.resolve())})
    if unverified and verified(run.warnings):
        run = run.model_copy(update={"warnings": [*run.warnings, UNVERIFIED_WARNING]})
    store.start_run(run)
    store.record_many(run.id, results, keep_trajectories=keep_trajectories)
    try:
        planned = RunConfig.model_validate(run.config).planned
    except ValidationError:
        planned = len(results)
    summary = summarize(results, planned)
    if summary.complete or (folder / "summary.json").exists():
        store.finish_run(run.id, summary)
    return run.id, len(results)


def attempts_query(run_ids: list[str] | None = None) -> Select[Any]:
    """Every attempt column but the raw JSON, with the run's model and suite version."""
    columns = [c for c in AttemptRow.__table__.c if c.name not in ("result", "tests", "id")]
    query = select(RunRow.model, RunRow.suite_version, *columns).join(
        RunRow, RunRow.id == AttemptRow.run_id
    )
    if run_ids:
        query = query.where(AttemptRow.run_id.in_(run_ids))
    return query.order_by(AttemptRow.run_id, AttemptRow.task_id, AttemptRow.epoch)


def to_frame(conn: Connection, query: Select[Any] | str) -> pandas.DataFrame:
    """Any query (a SQLAlchemy select, or SQL text) as a DataFrame."""
    import pandas as pd

    statement = text(query) if isinstance(query, str) else query
    try:
        result = conn.execute(statement)
    except SQLAlchemyError as error:
        if not isinstance(query, str):
            raise
        conn.rollback()  # PostgreSQL aborts the transaction on an error
        reason = " ".join(str(getattr(error, "orig", None) or error).split()).split(" [SQL:")[0]
        raise TransferError(f"--sql: the database refused the query: {reason[:300]}") from None
    frame = pd.DataFrame(result.fetchall(), columns=list(result.keys()))
    for column in frame.columns:  # JSON columns hold lists and dicts: keep them as text
        if frame[column].map(lambda v: isinstance(v, list | dict)).any():
            frame[column] = frame[column].map(json.dumps)
    return frame


def write_frame(frame: pandas.DataFrame, path: Path, fmt: str) -> None:
    if fmt == "csv":
        frame.to_csv(path, index=False)
    elif fmt == "parquet":
        frame.to_parquet(path, index=False)
    elif fmt == "jsonl":
        frame.to_json(path, orient="records", lines=True, date_format="iso")
    else:
        raise TransferError(f"unknown format {fmt!r}; one of {', '.join(EXPORT_FORMATS)}")


def swebench_predictions(conn: Connection, run_id: str) -> list[dict[str, str]]:
    """One prediction per task (its first epoch) with the patch the agent made ('' only when
    it changed nothing). A patch that cannot be found (the trajectory is neither stored nor
    reachable at the run folder's path) is a `TransferError`, not an empty prediction."""
    model = conn.execute(select(RunRow.model).where(RunRow.id == run_id)).scalar_one_or_none()
    if model is None:
        raise TransferError(f"no run {run_id!r} in the store")
    keys = conn.execute(
        select(
            AttemptRow.task_id,
            AttemptRow.epoch,
            AttemptRow.resolved,
            AttemptRow.diff_lines_added + AttemptRow.diff_lines_removed,
        )
        .where(AttemptRow.run_id == run_id)
        .order_by(AttemptRow.task_id, AttemptRow.epoch)
    ).all()
    predictions: dict[str, dict[str, str]] = {}
    for task_id, epoch, resolved, changed in keys:
        if task_id in predictions:
            continue
        view = attempt_view(conn, run_id, task_id, epoch)
        if view.diff is None and (view.trajectory_source is None or resolved or changed):
            where = view.trajectory_source or "neither stored nor at the run folder's path"
            raise TransferError(
                f"no patch found for {task_id}#{epoch} of run {run_id} (trajectory: {where}); "
                "nothing written: import the run folder with --with-trajectories, or export "
                "where the folder is"
            )
        predictions[task_id] = {
            "instance_id": task_id,
            "model_name_or_path": model,
            "model_patch": view.diff or "",
        }
    return list(predictions.values())


def write_swebench(predictions: list[dict[str, str]], path: Path) -> None:
    with path.open("w", encoding="utf-8") as out:
        for prediction in predictions:
            out.write(json.dumps(prediction) + "\n")


def atif_trajectories(conn: Connection, run_ids: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """(RUN/TASK__EPOCH.atif.json, ATIF document) for every attempt of the runs [all runs].
    An attempt whose trajectory cannot be found is a `TransferError`: nothing is written."""
    if not run_ids:
        run_ids = list(conn.execute(select(RunRow.id).order_by(RunRow.created_at)).scalars())
    version = agent_version()
    documents = []
    for run_id in run_ids:
        keys = conn.execute(
            select(AttemptRow.task_id, AttemptRow.epoch)
            .where(AttemptRow.run_id == run_id)
            .order_by(AttemptRow.task_id, AttemptRow.epoch)
        ).all()
        for task_id, epoch in keys:
            view = attempt_view(conn, run_id, task_id, epoch)
            if not view.trajectory:
                raise TransferError(
                    f"no trajectory found for {task_id}#{epoch} of run {run_id}; nothing "
                    "written: import the run folder with --with-trajectories, or export where "
                    "the folder is"
                )
            document = to_atif(view.trajectory, agent_version=version, session_id=run_id)
            documents.append((f"{run_id}/{task_id}__{epoch}.atif.json", document))
    return documents


def write_atif_files(documents: list[tuple[str, dict[str, Any]]], out: Path) -> None:
    for relative, document in documents:
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
