"""The leaderboard's commands: `runs` (list, show, compare, delete, export, import, checkpoint),
`gate`, `dashboard` and `db` (upgrade, current). `register(app)` adds them to `cursorbench`.

Every command takes `--db URL` (default: env `CURSORBENCH_DB`, else the same SQLite file
`cursorbench run` writes). Only `runs import` and `db upgrade` create a database: the others
read one, and a database that does not exist is one line (`runs list` says there are no runs).
A run is named by its id or any unique prefix of it (`runs list` shows the shortest, at least
8 characters). Exit status: 0 ok, 2 bad input (an unknown or ambiguous run, an unknown filter
value, a bad URL or query, an out-of-date schema: one line on stderr); `gate`: 0 pass, 1 fail
(and inconclusive unless the rules say otherwise), 2 error.

Opening the database, naming runs by prefix, known errors and the `db` commands are
`cursorbench.cli.store`. Not covered here: what the numbers mean (`leaderboard.queries`,
`leaderboard.stats`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from cursorbench.cli.common import EXIT_BAD_INPUT
from cursorbench.cli.store import (
    DbOption,
    JsonOption,
    _print_json,
    _reader,
    _resolve,
    _sqlite_file_exists,
    _store,
    _url,
    console,
    db_app,
    known_errors,
    one_line_errors,
    short_ids,
)

# The commands import the leaderboard (SQLAlchemy, Alembic, pandas) when they run, so that
# `cursorbench --help` and `cursorbench run` do not pay for it.

EXPORT_FORMATS = (
    "csv",
    "parquet",
    "jsonl",
    "swebench",
    "atif",
)  # leaderboard.transfer's; a test checks

runs_app = typer.Typer(no_args_is_help=True, help="List, show, compare, export runs in the store.")
gate_app = typer.Typer()  # `gate --candidate --baseline` decides; `gate plan` sizes runs


def register(app: typer.Typer) -> None:
    from cursorbench.cli.verify import verify_command

    runs_app.command("verify")(verify_command)
    app.add_typer(runs_app, name="runs")
    app.add_typer(db_app, name="db")
    gate_app.callback(invoke_without_command=True)(gate_command)
    gate_app.command("plan")(gate_plan_command)
    app.add_typer(gate_app, name="gate")
    app.command("dashboard")(dashboard_command)


def _interval(score: float, low: float, high: float) -> str:
    return f"{score:.1%} [{low:.1%}, {high:.1%}]"


def _widest(rows: list[Any], column: str) -> int:
    if column == "suite":
        return max(len(f"{row.suite}@{row.version}") for row in rows)
    return max(len(str(getattr(row, column))) for row in rows)


def _coverage(attempts: int, planned: int | None) -> str:
    return f"{attempts}/{planned}" if planned else str(attempts)


def _money(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.4f}"


def _known_filters(choices: dict[str, list[str]], filters: Any) -> None:
    """An unknown filter value is an error (exit 2), not an empty table."""
    from leaderboard.queries import QueryError

    for name, value in filters.model_dump().items():
        if value is not None and value not in choices.get(name, []):
            known = ", ".join(choices.get(name, [])[:10]) or "none recorded"
            flag = "--" + name.replace("_", "-")
            raise QueryError(f"{flag} {value!r}: no such value in the store (known: {known})")


# --- runs ---------------------------------------------------------------------------------


@runs_app.command("list")
@one_line_errors
def runs_list(
    db: DbOption = None,
    as_json: JsonOption = False,
    suite: Annotated[str | None, typer.Option(help="NAME or NAME@VERSION.")] = None,
    model: Annotated[str | None, typer.Option()] = None,
    category: Annotated[str | None, typer.Option(help="Score on one task category.")] = None,
    eval_name: Annotated[str | None, typer.Option("--eval", help="Score on one eval.")] = None,
    training_run: Annotated[str | None, typer.Option()] = None,
) -> None:
    """Every run: id, model, suite, started, complete or not, resolved rate with its 95%
    interval, CI-aware rank, cost; for checkpoint runs the training run, step and gate."""
    from leaderboard import queries, summaries

    filters = queries.Filters(
        suite=suite, model=model, category=category, eval=eval_name, training_run=training_run
    )
    if not _sqlite_file_exists(_url(db)) and filters == queries.Filters():
        _print_json([]) if as_json else console.print(f"no runs: no database at '{_url(db)}'")
        return
    store = _reader(db)
    try:
        with store.engine.connect() as conn:
            _known_filters(queries.filter_choices(conn), filters)
            rows, unranked = queries.standings(conn, filters)
            more = summaries.extras(conn, [row.run_id for row in [*rows, *unranked]])
    finally:
        store.close()
    if as_json:
        _print_json(
            [row.model_dump(mode="json") | more.get(row.run_id, {}) for row in [*rows, *unranked]]
        )
        return
    if not rows and not unranked:
        console.print(f"no runs in '{store.url}' match (`cursorbench run` adds one)")
        return
    short = short_ids([row.run_id for row in [*rows, *unranked]])
    if rows:
        console.print(_leader_table(rows, more, short))
    if unranked:
        console.print(
            f"not ranked: {len(unranked)} run(s) made unconfined (--sandbox subprocess), "
            "which could read the answers, or with verdicts that are not tamper-evident, or "
            "imported unverified (runs import --unverified)"
        )
        console.print(_leader_table(unranked, more, short))


def _leader_table(rows: list[Any], more: dict[str, dict], short: dict[str, str]) -> Table:
    table = Table("rank")
    # never cut: a run's id (its shortest unique prefix) is what `runs show` takes back
    shown = [short[row.run_id] for row in rows]
    table.add_column("run", no_wrap=True, min_width=max(len(run) for run in shown))
    for column in ("model", "suite"):  # names are not cut either
        table.add_column(column, no_wrap=True, min_width=_widest(rows, column))
    for column in ("started", "complete"):
        table.add_column(column)
    table.add_column("score [95% CI]", no_wrap=True)
    for column in ("attempts", "cost $/task", "checkpoint", "gate", "note"):
        table.add_column(column)
    for row in rows:
        extra = more.get(row.run_id, {})
        notes = []
        if row.repeat_of:
            notes.append(f"repeat of {row.repeat_of[:12]}")
        if row.tampering:
            notes.append(f"{row.tampering} tampering")
        if not row.tamper_evident:
            notes.append("not tamper-evident")
        if not row.verified:
            notes.append("unverified")
        table.add_row(
            str(row.rank) if row.rankable else "-",
            short[row.run_id],
            row.model,
            f"{row.suite}@{row.version}",
            row.started.strftime("%Y-%m-%d %H:%M"),
            "yes" if row.complete else row.status,
            _interval(row.score, row.low, row.high),
            _coverage(row.attempts, extra.get("planned")),
            _money(extra.get("cost_per_task")),
            f"{row.training_run}@{row.step}" if row.training_run else "",
            (row.gate_decision or "") + (", promoted" if row.promoted else ""),
            "; ".join(notes),
        )
    return table


@runs_app.command("show")
@one_line_errors
def runs_show(run_id: str, db: DbOption = None, as_json: JsonOption = False) -> None:
    """One run: identity, figures, breakdowns per category and eval, attempts."""
    from leaderboard import queries, summaries

    store = _reader(db)
    try:
        with store.engine.connect() as conn:
            detail = queries.run_detail(conn, _resolve(conn, run_id))
            extra = summaries.extras(conn, [detail.run_id]).get(detail.run_id, {})
    finally:
        store.close()
    detail.figures |= extra
    if as_json:
        _print_json(detail.model_dump(mode="json"))
        return
    figures = detail.figures
    console.print(
        f"[bold]{detail.run_id}[/] {detail.model} suite {detail.suite_version} "
        f"status {detail.status}, config {detail.config_hash}"
    )
    if detail.repeats:
        console.print(f"same config as: {', '.join(detail.repeats)}")
    if detail.training_run:
        console.print(
            f"checkpoint {detail.training_run} step {detail.step}, gate {detail.gate_decision}"
        )
    if figures:
        console.print(
            f"resolved {figures['resolved']}/{figures['attempts']} "
            + _interval(figures["resolved_rate"], figures["rate_low"], figures["rate_high"])
            + " (95% CI over tasks)"
            + (
                f", {_coverage(figures['attempts'], extra['planned'])} planned attempts recorded"
                if extra.get("planned")
                else ""
            )
            + (
                f", cost ${figures['cost_usd'] or 0:.4f} (${_money(extra.get('cost_per_task'))}"
                " per task)"
                if extra.get("cost_known", True)
                else ", cost unknown (no price)"
            )
        )
    breakdown = Table("kind", "key", "n", "mean [95% CI]")
    for row in detail.breakdowns:
        breakdown.add_row(
            row["kind"], row["key"], str(row["n"]), _interval(row["mean"], row["low"], row["high"])
        )
    console.print(breakdown)
    attempts = Table("task", "epoch", "category", "status", "failure", "flags", "cost $")
    for line in detail.attempts:
        attempts.add_row(
            line.task_id,
            str(line.epoch),
            line.category or "",
            line.status,
            line.failure or "",
            str(len(line.flags)) if line.flags else "",
            f"{line.cost_usd:.4f}",
        )
    console.print(attempts)


@runs_app.command("compare")
@one_line_errors
def runs_compare(first: str, second: str, db: DbOption = None, as_json: JsonOption = False) -> None:
    """SECOND minus FIRST on their shared attempts: the tasks that flipped, exact McNemar,
    paired bootstrap intervals for resolved rate, tests passed, cost and latency."""
    from leaderboard import queries

    store = _reader(db)
    try:
        with store.engine.connect() as conn:
            first, second = _resolve(conn, first), _resolve(conn, second)
            comparison = queries.compare(conn, first, second)
    finally:
        store.close()
    if as_json:
        _print_json(comparison.model_dump(mode="json"))
        return
    c = comparison
    console.print(
        f"{second} ({c.second_model}) vs {first} ({c.first_model}), suite {c.suite_version}: "
        f"{c.shared_tasks} shared tasks, {c.shared_attempts} shared attempts"
    )
    for run_id, rate in ((first, c.first_rate), (second, c.second_rate)):
        console.print(f"  {run_id}: resolved {_interval(rate.estimate, rate.low, rate.high)}")
    table = Table("measure", "difference", "95% CI (over tasks)")
    for name in ("resolved", "tests_passed", "cost_usd", "latency_s"):
        paired = getattr(c, name)
        note = " no task differs" if paired.degenerate else ""
        table.add_row(
            name, f"{paired.difference:+.4f}", f"[{paired.low:+.4f}, {paired.high:+.4f}]{note}"
        )
    console.print(table)
    console.print(
        f"paired exact p over tasks = {c.mcnemar_p:.4g} ({c.first_only} tasks resolved more "
        f"often by {first}, {c.second_only} by {second})"
    )
    for label, flips in (("gained", c.gained), ("lost", c.lost)):
        for flip in flips:
            console.print(f"  {label}: {flip.task_id} {flip.first:.2f} -> {flip.second:.2f}")


@runs_app.command("delete")
@one_line_errors
def runs_delete(run_id: str, db: DbOption = None) -> None:
    """Delete a run and all it recorded (the run folder stays)."""
    from leaderboard import queries

    store = _reader(db)
    try:
        with store.engine.connect() as conn:
            run_id = _resolve(conn, run_id)
        if not store.delete_run(run_id):
            raise queries.QueryError(f"no run {run_id!r} in '{store.url}'")
    finally:
        store.close()
    console.print(f"deleted run {run_id}")


@runs_app.command("export")
@one_line_errors
def runs_export(
    run_ids: Annotated[list[str] | None, typer.Argument(help="Runs to export [all].")] = None,
    out: Annotated[Path, typer.Option(help="File to write (with --format atif: a folder).")] = Path(
        "attempts.csv"
    ),
    fmt: Annotated[str, typer.Option("--format", help=", ".join(EXPORT_FORMATS))] = "csv",
    sql: Annotated[str | None, typer.Option(help="Export this SQL query instead.")] = None,
    db: DbOption = None,
) -> None:
    """Attempts (or any `--sql` query) to CSV, Parquet or JSONL; `--format swebench` writes
    one run's predictions as SWE-bench JSONL (instance_id, model_name_or_path, model_patch);
    `--format atif` writes every attempt's trajectory in ATIF, as OUT/RUN/TASK__EPOCH.atif.json."""
    from leaderboard.transfer import (
        TransferError,
        atif_trajectories,
        attempts_query,
        swebench_predictions,
        to_frame,
        write_atif_files,
        write_frame,
        write_swebench,
    )

    if fmt not in EXPORT_FORMATS:
        raise TransferError(f"--format {fmt!r}: one of {', '.join(EXPORT_FORMATS)}")
    store = _reader(db)
    try:
        with store.engine.connect() as conn:
            run_ids = [_resolve(conn, run_id) for run_id in run_ids or []]
            if fmt == "swebench":
                if not run_ids or len(run_ids) != 1:
                    raise TransferError("--format swebench exports exactly one run")
                predictions = swebench_predictions(conn, run_ids[0])
                write_swebench(predictions, out)
                count = len(predictions)
            elif fmt == "atif":
                documents = atif_trajectories(conn, run_ids)
                write_atif_files(documents, out)
                count = len(documents)
            else:
                frame = to_frame(conn, sql if sql else attempts_query(run_ids))
                write_frame(frame, out, fmt)
                count = len(frame)
    except OSError as error:
        raise TransferError(f"cannot write {out}: {error.strerror or error}") from None
    finally:
        store.close()
    console.print(f"wrote {count} {'trajectories' if fmt == 'atif' else 'rows'} to {out}")


@runs_app.command("import")
@one_line_errors
def runs_import(
    folders: Annotated[list[Path], typer.Argument(help="Run folders written by `run --out`.")],
    db: DbOption = None,
    with_trajectories: Annotated[
        bool, typer.Option(help="Store trajectory files' bytes in the database too.")
    ] = False,
    verify: Annotated[
        bool,
        typer.Option(
            "--verify/--unverified",
            help="Import only folders `runs verify` verifies (sealed, complete as planned, "
            "verdicts replayed here); the others are named and left out, exit 1. "
            "--unverified: import without replaying, marked unverified: never gated or ranked.",
        ),
    ] = True,
) -> None:
    """Load run folders into the store (idempotent), each verified first unless --unverified."""
    import tempfile

    from cursorbench.verify import verify_run
    from leaderboard.transfer import import_run_dir

    store = _store(db)
    refused = 0
    try:
        for folder in folders:
            if verify:
                with tempfile.TemporaryDirectory(prefix="cursorbench-verify-") as scratch:
                    report = verify_run(folder, Path(scratch) / "replay")
                if not report.verified:
                    refused += 1
                    first = report.mismatches[0] if report.mismatches else None
                    why = f"{first.where} {first.field}" if first else "not every attempt replayed"
                    print(f"error: {folder}: not verified ({why}); not imported", file=sys.stderr)
                    continue
            run_id, count = import_run_dir(store, folder, with_trajectories, not verify)
            marked = "" if verify else " (unverified: not gated or ranked)"
            console.print(f"{folder}: run {run_id}, {count} attempts{marked}")
    finally:
        store.close()
    if refused:
        raise typer.Exit(1)


@runs_app.command("checkpoint")
@one_line_errors
def runs_checkpoint(
    run_id: str,
    training_run: Annotated[str, typer.Option(help="The training run's name.")],
    step: Annotated[int, typer.Option(min=0)],
    tokens_seen: Annotated[int | None, typer.Option(min=0)] = None,
    db: DbOption = None,
) -> None:
    """Mark a run as the evaluation of a training run's checkpoint."""
    store = _reader(db)
    try:
        with store.engine.connect() as conn:
            run_id = _resolve(conn, run_id)
        checkpoint = store.attach_checkpoint(run_id, training_run, step, tokens_seen)
    finally:
        store.close()
    console.print(f"run {run_id} is checkpoint {checkpoint} ({training_run} step {step})")


# --- gate, dashboard, db ----------------------------------------------------------------------


def gate_command(
    ctx: typer.Context,
    candidate: Annotated[str | None, typer.Option(help="Run id of the candidate.")] = None,
    baseline: Annotated[str | None, typer.Option(help="Run id of the baseline.")] = None,
    rules: Annotated[Path | None, typer.Option(help="Rules file (YAML or JSON).")] = None,
    margin: Annotated[
        float | None,
        typer.Option(help="Non-inferiority margin (overrides the rules' max_regression)."),
    ] = None,
    alpha: Annotated[
        float | None, typer.Option(help="One-sided error rate (overrides the rules' alpha).")
    ] = None,
    markdown: Annotated[Path | None, typer.Option(help="Also write the summary here.")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write JSON here.")] = None,
    link: Annotated[
        str | None,
        typer.Option(help="The dashboard's base URL: the summary links each task lost or gained."),
    ] = None,
    db: DbOption = None,
) -> None:
    """Is the candidate at least as good as the baseline? Exit 0 pass, 1 fail (and
    inconclusive unless the rules say otherwise), 2 error (unknown runs, runs that do not
    cover the same tasks x epochs of one suite version, runs imported unverified or run on
    task contents other than each other's or this machine's, bad rules). Prints a Markdown summary
    (also appended to $GITHUB_STEP_SUMMARY when set). It passes only if the one-sided upper
    bound of (baseline - candidate) over tasks is below the margin; `gate plan` says how many
    tasks x epochs that needs."""
    if ctx.invoked_subcommand is not None:
        return
    from leaderboard.gate import gate, load_rules, override

    caught: tuple[type[Exception], ...] = (*known_errors(), OSError)
    if candidate is None or baseline is None:
        print("error: gate needs --candidate and --baseline (or: gate plan)", file=sys.stderr)
        raise typer.Exit(EXIT_BAD_INPUT)
    try:
        decision_rules = override(load_rules(rules), margin, alpha)
        store = _reader(db)
        try:
            with store.engine.connect() as conn:
                candidate, baseline = _resolve(conn, candidate), _resolve(conn, baseline)
                current = _current_tasks(conn, [candidate, baseline])
            decision = gate(candidate, baseline, decision_rules, store, current)
        finally:
            store.close()
        text = decision.to_markdown(link)
        for path, content in ((markdown, text), (json_out, decision.to_json())):
            if path is not None:
                path.write_text(content, encoding="utf-8")
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary:
            with open(summary, "a", encoding="utf-8") as out:
                out.write(text)
    except caught as error:
        print(f"error: {error}", file=sys.stderr)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    print(text, end="")
    raise typer.Exit(decision.exit_code)


def gate_plan_command(
    baseline: Annotated[str, typer.Option(help="Run id of the baseline to plan from.")],
    margin: Annotated[float, typer.Option(help="The non-inferiority margin to decide.")],
    alpha: Annotated[float, typer.Option(help="One-sided error rate.")] = 0.025,
    power: Annotated[float, typer.Option(help="Chance an equal candidate passes.")] = 0.8,
    candidate: Annotated[
        str | None,
        typer.Option(help="A second run: the paired correlation is measured, not assumed."),
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """How many tasks x epochs a gate decision at MARGIN needs: from the baseline's per-task
    variance (and the pair's correlation with --candidate, else a stated assumption), the
    tasks an equal candidate needs to pass with the given power, for 1-5 epochs. Exit 2 on
    bad input."""
    from leaderboard.planning import plan

    caught: tuple[type[Exception], ...] = (*known_errors(), ValueError)
    try:
        store = _reader(db)
        try:
            with store.engine.connect() as conn:
                baseline = _resolve(conn, baseline)
                candidate = _resolve(conn, candidate) if candidate else None
                found = plan(conn, baseline, margin, alpha, power, candidate)
        finally:
            store.close()
    except caught as error:
        print(f"error: {error}", file=sys.stderr)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    if as_json:
        _print_json(found.model_dump())
    else:
        print(found.to_text(), end="")


def _current_tasks(conn: Any, run_ids: list[str]) -> dict[str, set[str]]:
    """This machine's digests of the runs' tasks (by id), for the gate to compare."""
    from sqlalchemy import select

    from cursorbench.verify import current_digests
    from leaderboard.provenance import task_digests
    from leaderboard.schema import RunRow

    configs = conn.execute(select(RunRow.config).where(RunRow.id.in_(run_ids))).scalars()
    return current_digests({task for config in configs for task in task_digests(config)})


@one_line_errors
def dashboard_command(
    db: DbOption = None,
    host: Annotated[str, typer.Option(help="Address to listen on (loopback by default).")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(min=0, max=65535)] = 8050,
) -> None:
    """Serve the leaderboard web page (open the printed URL)."""
    from leaderboard.dashboard import serve

    _reader(db).close()  # a read-only view: refuse a database that is not there
    serve(_url(db), host, port, bundled_test_lists())


def bundled_test_lists() -> Any:
    """(suite version, task id) -> the task's (fail_to_pass, pass_to_pass) from the bundled
    suites, loaded on first use; None for a task they do not hold (or hold at another suite
    version), which the dashboard then shows unclassified."""
    import threading

    found: dict[tuple[str, str], tuple[list[str], list[str]]] = {}
    loaded: list[bool] = []
    loading = threading.Lock()  # the dashboard warms it in a thread while serving

    def lookup(suite_version: str, task_id: str) -> tuple[list[str], list[str]] | None:
        with loading:
            if not loaded:
                _load()
        return found.get((suite_version, task_id))

    def _load() -> None:
        from cursorbench.tasks.loader import bundled_suites, load_tasks_reporting

        tasks, _problems = load_tasks_reporting(list(bundled_suites().values()))
        for task in tasks:
            check = task.verification
            fail_to_pass = list(getattr(check, "fail_to_pass", None) or [])
            pass_to_pass = list(getattr(check, "pass_to_pass", None) or [])
            if fail_to_pass or pass_to_pass:
                found[(task.suite_version, task.id)] = (fail_to_pass, pass_to_pass)
        loaded.append(True)

    return lookup
