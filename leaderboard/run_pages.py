"""The dashboard's pages about runs: one run (its attempts paged), one attempt (chat-style
trajectory, coloured diff, fail-to-pass and pass-to-pass apart, the grader's reasons), the
raw trajectory, and the breakdowns (a page of runs at a time, with error bars).

Every run in a URL may be a unique prefix of its id (`leaderboard.ids.resolve_run`); an
unknown or ambiguous one is a 404 page saying which. Not covered here: the leaderboards,
compare and training views (`leaderboard.views`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from sqlalchemy import Connection
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from leaderboard import figures, queries, summaries, transcript
from leaderboard.pages import chart, e, filter_form, filters_of, page, pct, run_link, table
from leaderboard.paging import page_links, paging_of
from leaderboard.standings import run_row

# (suite version, task id) -> (fail_to_pass, pass_to_pass), or None where not known
TestLists = Callable[[str, str], tuple[list[str], list[str]] | None]
ATTEMPTS_PER_PAGE = 100
RUNS_PER_BREAKDOWN_PAGE = 10


def attempt_href(run_id: str, task_id: str, epoch: int) -> str:
    return f"/runs/{quote(run_id)}/attempts/{quote(task_id)}/{epoch}"


def run_page(conn: Connection, request: Request) -> Response:
    run_id = queries.resolve_run(conn, request.path_params["run_id"])
    short = queries.ShortIds(conn)
    filters = queries.AttemptFilters(
        status=request.query_params.get("status") or None,
        failure=request.query_params.get("failure") or None,
        flagged=request.query_params.get("flagged") == "1",
    )
    paging = paging_of(request, ATTEMPTS_PER_PAGE)
    detail = queries.run_detail(conn, run_id, with_attempts=False)
    extra = summaries.extras(conn, [run_id]).get(run_id, {})
    lines, total = queries.attempt_page(
        conn, run_id, detail.suite_id, filters, paging.offset, paging.per
    )
    failures = queries.failures_of(conn, run_id)
    body = _facts(detail, extra, short) + "<h2>Breakdown</h2>" + _breakdown_table(detail)
    base = f"/runs/{quote(run_id)}"
    links = [f'<a href="{base}">all</a>', f'<a href="{base}?flagged=1">flagged</a>']
    links += [f'<a href="{base}?failure={quote(x)}">{e(x)}</a>' for x in failures]
    cells = [
        [
            f'<a href="{attempt_href(run_id, line.task_id, line.epoch)}">{e(line.task_id)}</a>',
            str(line.epoch),
            e(line.category or ""),
            e(line.status),
            e(line.failure or ""),
            e(", ".join(line.flags)),
            f"{line.cost_usd:.4f}",
            str(line.turns),
        ]
        for line in lines
    ]
    classes = ["tamper" if line.failure == "grader_tampering" else "" for line in lines]
    body += (
        f"<h2>Attempts</h2><p id='attempt-filters'>show: {' · '.join(links)}</p>"
        f"<p id='count'>{total} attempts</p>"
        + page_links(request, paging, total)
        + table(
            ["task", "epoch", "category", "status", "failure", "flags", "cost $", "turns"],
            cells,
            classes,
        )
    )
    return page(f"Run {short(run_id)} · {detail.model}", body)


def _facts(detail: queries.RunDetail, extra: dict[str, Any], short: queries.ShortIds) -> str:
    f = detail.figures
    repeats = ", ".join(run_link(r, short(r)) for r in detail.repeats)
    planned = extra.get("planned")
    cost = extra.get("cost_per_task")
    facts = [
        ("run", f"<span class='short'>{e(detail.run_id)}</span>"),
        ("model", f"<b id='run-model'>{e(detail.model)}</b>"),
        ("suite version", e(detail.suite_version)),
        ("status", e(detail.status)),
        (
            "config hash",
            e(detail.config_hash) + (f" — same config as {repeats}" if repeats else ""),
        ),
        ("harness", e(f"{detail.harness_version or '?'} {detail.git_sha or ''}")),
        (
            "resolved (95% CI over tasks)",
            pct(f["resolved_rate"], f["rate_low"], f["rate_high"]) if f else "no attempts",
        ),
        ("coverage", f"{f.get('attempts', 0)} of {planned} planned" if planned else "unknown"),
        (
            "cost $",
            (f"{(f.get('cost_usd') or 0):.4f} ({cost:.4f} per task)" if cost is not None else "")
            if extra.get("cost_known", True)
            else "unknown (no price for this model)",
        ),
    ]
    if detail.training_run:
        facts.append(
            (
                "checkpoint",
                f'<a href="/training/{quote(detail.training_run)}">{e(detail.training_run)}</a>'
                f" step {detail.step}, gate {e(detail.gate_decision)}",
            )
        )
    return table(["", ""], [[k, v] for k, v in facts])


def _breakdown_table(detail: queries.RunDetail) -> str:
    rows = [
        [e(b["kind"]), e(b["key"]), str(b["n"]), pct(b["mean"], b["low"], b["high"])]
        for b in detail.breakdowns
    ]
    return table(["kind", "key", "n", "mean [95% CI]"], rows)


def attempt_page(conn: Connection, request: Request, test_lists: TestLists | None) -> Response:
    p = request.path_params
    run_id = queries.resolve_run(conn, p["run_id"])
    short = queries.ShortIds(conn)
    view = queries.attempt_view(conn, run_id, p["task_id"], int(p["epoch"]))
    detail = run_row(conn, run_id)  # the model and suite version: one row
    result = view.result
    raw = attempt_href(run_id, view.task_id, view.epoch) + "/raw"
    lists = test_lists(detail.suite_version, view.task_id) if test_lists else None
    flags = result.get("flags") or []
    source = e(view.trajectory_source or "not available")
    body = (
        f"<p>{run_link(run_id, short(run_id))} · model <b>{e(detail.model)}</b> · status "
        f"<b id='status'>{e(result.get('status'))}</b> {e(result.get('failure') or '')}"
        f" · flags: <span id='flags'>{e(', '.join(flags)) or 'none'}</span></p>"
        + "<h2>Diff</h2>"
        + transcript.coloured_diff(view.diff)
        + "<h2>Tests</h2>"
        + transcript.tests_html(result.get("tests", {}), lists)
        + "<h2>Grader</h2>"
        + transcript.grader_html(result, view.trajectory, raw)
        + f"<h2>Trajectory</h2><p>{len(view.trajectory)} records, from {source}"
        + (f" · <a href='{e(raw)}' id='raw-link'>raw JSON lines</a>" if view.trajectory else "")
        + "</p>"
        + transcript.chat(view.trajectory, raw)
    )
    return page(f"Attempt {view.task_id}#{view.epoch}", body, style=transcript.STYLE)


def raw_trajectory(conn: Connection, request: Request) -> Response:
    """Every record of the attempt's trajectory, one JSON object a line, as stored."""
    p = request.path_params
    run_id = queries.resolve_run(conn, p["run_id"])
    view = queries.attempt_view(conn, run_id, p["task_id"], int(p["epoch"]))
    text = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in view.trajectory)
    return PlainTextResponse(text, media_type="application/x-ndjson; charset=utf-8")


def breakdown_page(conn: Connection, request: Request) -> Response:
    paging = paging_of(request, RUNS_PER_BREAKDOWN_PAGE)
    rows = queries.leaderboard(conn, filters_of(request))
    form = filter_form(conn, request, "/breakdown")
    shown = rows[paging.offset : paging.offset + paging.per]
    short = queries.ShortIds(conn)
    found = queries.breakdowns_of(conn, [row.run_id for row in shown])
    runs = [(row.run_id, f"{row.model} {short(row.run_id)}") for row in shown]
    charts = [
        chart(figure, f"{kind}-chart")
        for kind, figure in figures.breakdown_figures(runs, found).items()
    ]
    keys = sorted({(b["kind"], b["key"]) for items in found.values() for b in items})
    cells = []
    for row in shown:
        by_key = {(b["kind"], b["key"]): b for b in found[row.run_id]}
        for kind, key in keys:
            item = by_key.get((kind, key))
            cells.append(
                [
                    run_link(row.run_id, short(row.run_id)),
                    e(row.model),
                    e(kind),
                    e(key),
                    pct(item["mean"], item["low"], item["high"])
                    if item
                    else "<span class='nm'>not measured</span>",
                    str(item["n"]) if item else "0",
                ]
            )
    note = (
        "<p class='note'>Bars show the mean with its 95% interval over tasks (error bars). A "
        "bar labelled 0% was measured and is zero; <i>not measured</i> means the run has no "
        "attempt of that category or eval.</p>"
    )
    body = (
        form
        + note
        + page_links(request, paging, len(rows))
        + "".join(charts)
        + table(["run", "model", "kind", "key", "mean [95% CI]", "n"], cells)
    )
    return page("Breakdown", body, charts=True)
