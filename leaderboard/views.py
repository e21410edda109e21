"""The dashboard's pages, one method per view, each rendered from `leaderboard.queries`.

`/` is the leaderboard by model (`leaderboard.board`: one row per model and suite version,
ranked rows apart from partial and unconfined ones), `/runs` every run (ranked within its
suite version, paged, with tick boxes to compare two), `/compare` two runs (pickers name the
model of each run), `/cost` and `/training`. The run, attempt and breakdown pages are
`leaderboard.run_pages`. Run ids are shown short (the shortest unique prefix) and any unique
prefix is accepted in a URL.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import Response

from leaderboard import figures, queries, run_pages, stats, summaries
from leaderboard.board import Pick
from leaderboard.pages import (
    SORTABLE,
    chart,
    e,
    filter_form,
    filters_of,
    page,
    pct,
    run_link,
    table,
)
from leaderboard.paging import page_links, paging_of
from leaderboard.run_pages import TestLists
from leaderboard.store import SqlStore

RUNS_PER_PAGE = 50
FLIPS_PER_PAGE = 100
RUN_HEADERS = [
    ("rank", "rank"),
    ("run", ""),
    ("model", "model"),
    ("suite", ""),
    ("score [95% CI]", "score"),
    ("cost $", "cost_usd"),
    ("tokens", "tokens"),
    ("latency s", "latency_s"),
    ("attempts", "attempts"),
    ("status", ""),
    ("checkpoint", ""),
    ("gate", ""),
    ("tampering", ""),
    ("flagged", ""),
]


class Dashboard:
    def __init__(self, store: SqlStore, test_lists: TestLists | None = None) -> None:
        self.store = store
        self.test_lists = test_lists

    def conn(self) -> Any:
        return self.store.engine.connect()

    # --- views ------------------------------------------------------------------------------

    def models(self, request: Request) -> Response:
        pick: Pick = "best" if request.query_params.get("pick") == "best" else "latest"
        filters = queries.Filters(
            suite=request.query_params.get("suite") or None,
            model=request.query_params.get("model") or None,
        )
        with self.conn() as conn:
            boards = queries.model_board(conn, filters, pick)
            short = queries.ShortIds(conn)
        other = "best" if pick == "latest" else "latest"
        params = {k: v for k, v in request.query_params.items() if k != "pick"}
        switch = "/?" + urlencode(params | {"pick": other})
        body = (
            f"<p id='pick'>One row per model: its <b>{pick}</b> complete, confined run "
            f"(<a href='{e(switch)}'>show its {other} instead</a>). Ranks are CI-aware and "
            "only among complete, confined runs of one suite version; a model with no such "
            "run is listed apart with why, never ranked. <a href='/runs'>Every run</a>.</p>"
        )
        if not boards:
            body += "<p>no runs yet (`cursorbench run` records one)</p>"
        for board in boards:
            name = f"{board.suite}@{board.version}"
            body += f"<section class='board' data-suite='{e(name)}'><h2>{e(name)}</h2>"
            if board.ranked:
                body += _board_table(board.ranked, short, "ranked")
            if board.unranked:
                body += (
                    "<h3>Not ranked</h3><p class='note'>Partial runs (fewer attempts than "
                    "planned), runs still going, unconfined runs (<code>--sandbox "
                    "subprocess</code>: the agent could read the answers), runs whose "
                    "verdicts are not tamper-evident and runs imported unverified (never "
                    "replayed by <code>runs verify</code>).</p>"
                    + _board_table(board.unranked, short, "unranked")
                )
            body += "</section>"
        return page("Leaderboard", body)

    def runs(self, request: Request) -> Response:
        sort = request.query_params.get("sort", "rank")
        order = request.query_params.get("order", "asc")
        paging = paging_of(request, RUNS_PER_PAGE)
        with self.conn() as conn:
            rows, unranked = queries.standings(conn, filters_of(request))
            form = filter_form(conn, request, "/runs")
            short = queries.ShortIds(conn)
        if sort in SORTABLE:
            rows.sort(key=lambda row: getattr(row, sort), reverse=order == "desc")
        params = {
            k: v for k, v in request.query_params.items() if k not in ("sort", "order", "page")
        }

        def header(label: str, key: str) -> str:
            if not key:
                return e(label)
            flip = "desc" if sort == key and order == "asc" else "asc"
            href = "/runs?" + urlencode(params | {"sort": key, "order": flip})
            return f'<a href="{e(href)}" data-sort="{key}">{e(label)}</a>'

        headers = ["compare", *(header(label, key) for label, key in RUN_HEADERS)]
        every = [*rows, *unranked]
        shown = every[paging.offset : paging.offset + paging.per]
        ranked_shown = [row for row in shown if row.rankable]
        unranked_shown = [row for row in shown if not row.rankable]
        body = (
            form + f"<p id='count'>{len(rows)} runs</p>" + page_links(request, paging, len(every))
        )
        tick = "<button id='compare-ticked'>Compare the two ticked runs</button>"
        body += f"<form method='get' action='/compare' id='tick'>{tick}"
        body += _runs_table(headers, ranked_shown, short)
        if unranked_shown:
            body += (
                "<h2 id='unconfined'>Not ranked: unconfined runs</h2><p class='note'>Made with "
                "<code>--sandbox subprocess</code>: the agent could read the answers, so these "
                "scores are not comparable and are never ranked; or with verdicts that are not "
                "tamper-evident (imported Harbor tasks without a canary run).</p>"
            )
            body += _runs_table(headers, unranked_shown, short)
        body += "</form>"
        return page("Runs", body)

    def cost(self, request: Request) -> Response:
        with self.conn() as conn:
            rows = queries.leaderboard(conn, filters_of(request))
            costs = summaries.extras(conn, [row.run_id for row in rows])
            form = filter_form(conn, request, "/cost")
            short = queries.ShortIds(conn)
        per_task = {
            run: found["cost_per_task"]
            for run, found in costs.items()
            if found["cost_per_task"] is not None
        }
        priced = [row for row in rows if row.run_id in per_task]
        front = stats.pareto_front(
            [(row.run_id, per_task[row.run_id], row.score) for row in priced]
        )
        by_id = {row.run_id: row for row in rows}
        shorts = {row.run_id: short(row.run_id) for row in rows}
        figure = figures.cost_figure(priced, per_task, front, shorts)
        front_list = "".join(
            f"<li>{run_link(run, short(run))} {e(by_id[run].model)}</li>" for run in front
        )
        unknown = "".join(
            f"<li>{run_link(row.run_id, short(row.run_id))} {e(row.model)}</li>"
            for row in rows
            if row.run_id not in per_task
        )
        body = (
            form
            + "<p class='note'>Cost per task (the run's cost over the tasks it recorded); a run "
            "whose model has no price is not drawn: its cost is unknown, not $0.</p>"
            + chart(figure, "cost-chart")
            + f"<h2>Pareto frontier</h2><ul id='front'>{front_list}</ul>"
        )
        if unknown:
            body += (
                f"<h2>Cost unknown (no price for the model)</h2><ul id='unpriced'>{unknown}</ul>"
            )
        return page("Cost vs score", body, charts=True)

    def breakdown(self, request: Request) -> Response:
        with self.conn() as conn:
            return run_pages.breakdown_page(conn, request)

    def run(self, request: Request) -> Response:
        with self.conn() as conn:
            return run_pages.run_page(conn, request)

    def attempt(self, request: Request) -> Response:
        with self.conn() as conn:
            return run_pages.attempt_page(conn, request, self.test_lists)

    def raw(self, request: Request) -> Response:
        with self.conn() as conn:
            return run_pages.raw_trajectory(conn, request)

    def training_index(self, request: Request) -> Response:
        with self.conn() as conn:
            names = queries.filter_choices(conn)["training_run"]
        items = "".join(f'<li><a href="/training/{quote(n)}">{e(n)}</a></li>' for n in names)
        return page(
            "Training runs", f"<ul id='training-runs'>{items}</ul>" if names else "<p>none</p>"
        )

    def training(self, request: Request) -> Response:
        name = request.path_params["name"]
        with self.conn() as conn:
            points = queries.checkpoint_curve(conn, name)
            short = queries.ShortIds(conn)
        figure = figures.training_figure(points)
        promoted = [p for p in points if p.promoted]
        best = max(promoted, key=lambda p: p.step) if promoted else None
        cells = [
            [
                str(p.step),
                f"{p.tokens_seen:,}" if p.tokens_seen else "",
                run_link(p.run_id, short(p.run_id)),
                pct(p.score, p.low, p.high),
                f'<span class="{e(p.gate_decision or "")}">{e(p.gate_decision or "")}</span>',
                ("best" if p is best else "yes") if p.promoted else "",
            ]
            for p in points
        ]
        summary = (
            f"<p id='best-checkpoint'>best checkpoint: step {best.step} "
            f"({pct(best.score, best.low, best.high)}), the latest the gate promoted</p>"
            if best
            else "<p id='best-checkpoint'>no checkpoint promoted yet</p>"
        )
        body = (
            chart(figure, "training-chart")
            + summary
            + table(["step", "tokens seen", "run", "score", "gate", "promoted"], cells)
        )
        return page(f"Training run {name}", body, charts=True)

    def compare(self, request: Request) -> Response:
        ticked = request.query_params.getlist("run")
        a, b = request.query_params.get("a"), request.query_params.get("b")
        note = ""
        with self.conn() as conn:
            ranked, unranked = queries.standings(conn)
            choices = [*ranked, *unranked]
            short = queries.ShortIds(conn)
            if ticked:
                if len(ticked) == 2:
                    a, b = sorted(ticked, key=lambda r: _started(choices, r))
                else:
                    note = (
                        f"<p id='tick-note' class='fail'>tick two runs ({len(ticked)} ticked)</p>"
                    )
            a = queries.resolve_run(conn, a) if a else None
            b = queries.resolve_run(conn, b) if b else None
            comparison = queries.compare(conn, a, b) if a and b else None
        choices.sort(key=lambda row: (row.model, row.started))

        def picker(name: str, current: str | None) -> str:
            opts = "<option value=''></option>" + "".join(
                f"<option value='{e(r.run_id)}'{' selected' if r.run_id == current else ''}>"
                f"{e(r.model)} · {e(short(r.run_id))} · {e(r.suite)}@{e(r.version)} · "
                f"{r.started:%Y-%m-%d %H:%M}</option>"
                for r in choices
            )
            return f'<label>{name} <select name="{name}">{opts}</select></label>'

        pickers = picker("a", a) + picker("b", b) + "<button>Compare</button>"
        body = note + f'<form method="get" action="/compare" id="pick">{pickers}</form>'
        if comparison is not None:
            body += _comparison(comparison, short, request)
        return page("Compare runs", body)


def _started(rows: list[queries.LeaderRow], run_id: str) -> tuple[str, str]:
    """The run's start time (ISO, so it sorts) and id; an id not listed sorts last."""
    found = next((row.started for row in rows if row.run_id == run_id), None)
    return (found.isoformat() if found else "~", run_id)


def _comparison(c: queries.Comparison, short: queries.ShortIds, request: Request) -> str:
    measures = [
        [
            name,
            f"{getattr(c, name).difference:+.4f}",
            f"[{getattr(c, name).low:+.4f}, {getattr(c, name).high:+.4f}]",
        ]
        for name in ("resolved", "tests_passed", "cost_usd", "latency_s")
    ]
    every = [
        (label, flip) for label, group in (("gained", c.gained), ("lost", c.lost)) for flip in group
    ]
    paging = paging_of(request, FLIPS_PER_PAGE)
    flips = [
        [label, e(flip.task_id), f"{flip.first:.2f}", f"{flip.second:.2f}"]
        for label, flip in every[paging.offset : paging.offset + paging.per]
    ]
    rates = "".join(
        f"<li>{which}: {run_link(run, short(run))} <b>{e(model)}</b> resolved "
        f"{pct(rate.estimate, rate.low, rate.high)}</li>"
        for which, run, model, rate in (
            ("A", c.first, c.first_model, c.first_rate),
            ("B", c.second, c.second_model, c.second_rate),
        )
    )
    return (
        f"<ul id='sides'>{rates}</ul>"
        f"<p>B minus A: {c.shared_tasks} shared tasks, {c.shared_attempts} shared attempts. "
        f"Paired exact p over tasks = {c.mcnemar_p:.4g} ({c.first_only} tasks resolved more "
        f"often by A, {c.second_only} by B).</p>"
        + table(["measure", "B - A", "95% CI"], measures)
        + f"<h2>Tasks that flipped</h2><p id='count'>{len(every)} tasks</p>"
        + page_links(request, paging, len(every))
        + table(["", "task", "A", "B"], flips)
    )


def _board_table(entries: list[queries.ModelEntry], short: queries.ShortIds, kind: str) -> str:
    headers = [
        "rank",
        "model",
        "run",
        "coverage",
        "resolved [95% CI over tasks]",
        "pass@1",
        "pass@k",
        "cost $/task",
        "tokens/task",
        "runs",
        "started",
    ]
    if kind == "unranked":
        headers[0] = "not ranked: why"
    cells = []
    for entry in entries:
        coverage = (
            f"{entry.attempts}/{entry.planned} ({entry.coverage:.0%})"
            if entry.planned and entry.coverage is not None
            else f"{entry.attempts}/?"
        )
        score = pct(entry.score, entry.low, entry.high)
        if entry.degenerate:
            score += " <small title='every task scored the same'>(no spread)</small>"
        cells.append(
            [
                str(entry.rank)
                if entry.ranked
                else f"<span class='why'>{e(entry.why_unranked)}</span>",
                f"<b>{e(entry.model)}</b>",
                run_link(entry.run_id, short(entry.run_id)),
                coverage,
                score,
                f"{entry.pass_at_1:.1%}",
                f"{entry.pass_at_k:.1%} <small>k={entry.k}</small>",
                "unknown" if entry.cost_per_task is None else f"{entry.cost_per_task:.4f}",
                "" if entry.tokens_per_task is None else f"{entry.tokens_per_task:,.0f}",
                str(entry.runs),
                f"{entry.started:%Y-%m-%d %H:%M}",
            ]
        )
    classes = ["tamper" if entry.tampering else kind for entry in entries]
    return table(headers, cells, classes).replace("<table>", f"<table class='{kind}'>", 1)


def _runs_table(headers: list[str], rows: list[queries.LeaderRow], short: queries.ShortIds) -> str:
    cells = [
        [
            f"<input type='checkbox' name='run' value='{e(row.run_id)}' "
            f"aria-label='compare {e(short(row.run_id))}'>",
            str(row.rank) if row.rankable else "-",
            run_link(row.run_id, short(row.run_id)),
            e(row.model),
            e(f"{row.suite}@{row.version}"),
            pct(row.score, row.low, row.high),
            f"{row.cost_usd:.4f}",
            f"{row.tokens:,}",
            f"{row.latency_s:.2f}",
            str(row.attempts),
            e(row.status)
            + (
                f" (repeat of {run_link(row.repeat_of, short(row.repeat_of))})"
                if row.repeat_of
                else ""
            ),
            e(f"{row.training_run}@{row.step}") if row.training_run else "",
            f'<span class="{e(row.gate_decision)}">{e(row.gate_decision)}</span>'
            if row.gate_decision
            else "",
            str(row.tampering),
            str(row.flagged),
        ]
        for row in rows
    ]
    classes = ["tamper" if row.tampering else "" for row in rows]
    return table(headers, cells, classes)
