"""The dashboard's pages, one method per view, each rendered from `leaderboard.queries`."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import Response

from leaderboard import figures, queries, stats
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
from leaderboard.store import SqlStore


class Dashboard:
    def __init__(self, store: SqlStore) -> None:
        self.store = store

    def conn(self) -> Any:
        return self.store.engine.connect()

    # --- views ------------------------------------------------------------------------------

    def leaderboard(self, request: Request) -> Response:
        sort = request.query_params.get("sort", "rank")
        order = request.query_params.get("order", "asc")
        with self.conn() as conn:
            rows = queries.leaderboard(conn, filters_of(request))
            unranked = queries.unconfined_runs(conn, filters_of(request))
            form = filter_form(conn, request, "/")
        if sort in SORTABLE:
            rows.sort(key=lambda row: getattr(row, sort), reverse=order == "desc")
        params = {k: v for k, v in request.query_params.items() if k not in ("sort", "order")}

        def header(label: str, key: str) -> str:
            flip = "desc" if sort == key and order == "asc" else "asc"
            href = "/?" + urlencode(params | {"sort": key, "order": flip})
            return f'<a href="{e(href)}" data-sort="{key}">{e(label)}</a>'

        headers = [
            header("rank", "rank"),
            "run",
            header("model", "model"),
            "suite",
            header("score [95% CI]", "score"),
            header("cost $", "cost_usd"),
            header("tokens", "tokens"),
            header("latency s", "latency_s"),
            header("attempts", "attempts"),
            "status",
            "checkpoint",
            "gate",
            "tampering",
            "flagged",
        ]
        cells = [
            [
                str(row.rank) if row.confined else "-",
                run_link(row.run_id),
                e(row.model),
                e(f"{row.suite}@{row.version}"),
                pct(row.score, row.low, row.high),
                f"{row.cost_usd:.4f}",
                f"{row.tokens:,}",
                f"{row.latency_s:.2f}",
                str(row.attempts),
                e(row.status)
                + (f" (repeat of {run_link(row.repeat_of)})" if row.repeat_of else ""),
                e(f"{row.training_run}@{row.step}") if row.training_run else "",
                f'<span class="{e(row.gate_decision)}">{e(row.gate_decision)}</span>'
                if row.gate_decision
                else "",
                str(row.tampering),
                str(row.flagged),
            ]
            for row in [*rows, *unranked]
        ]
        classes = ["tamper" if row.tampering else "" for row in [*rows, *unranked]]
        body = form + f"<p id='count'>{len(rows)} runs</p>"
        body += table(headers, cells[: len(rows)], classes[: len(rows)])
        if unranked:
            body += (
                "<h2 id='unconfined'>Not ranked: unconfined runs</h2><p class='note'>Made with "
                "<code>--sandbox subprocess</code>: the agent could read the answers, so these "
                "scores are not comparable and are never ranked.</p>"
            )
            body += table(headers, cells[len(rows) :], classes[len(rows) :])
        return page("Leaderboard", body)

    def cost(self, request: Request) -> Response:
        with self.conn() as conn:
            rows = queries.leaderboard(conn, filters_of(request))
            form = filter_form(conn, request, "/cost")
        points = [(row.run_id, row.cost_usd, row.score) for row in rows]
        front = stats.pareto_front(points)
        by_id = {row.run_id: row for row in rows}
        figure = figures.cost_figure(rows, front)
        front_list = "".join(f"<li>{run_link(run)} {e(by_id[run].model)}</li>" for run in front)
        body = (
            form
            + chart(figure, "cost-chart")
            + f"<h2>Pareto frontier</h2><ul id='front'>{front_list}</ul>"
        )
        return page("Cost vs score", body, charts=True)

    def breakdown(self, request: Request) -> Response:
        with self.conn() as conn:
            rows = queries.leaderboard(conn, filters_of(request))
            form = filter_form(conn, request, "/breakdown")
            details = [queries.run_detail(conn, row.run_id) for row in rows[:30]]
        charts = [
            chart(figure, f"{kind}-chart")
            for kind, figure in figures.breakdown_figures(details).items()
        ]
        cells = [
            [
                run_link(d.run_id),
                e(d.model),
                e(kind),
                e(key),
                pct(item["mean"], item["low"], item["high"]),
                str(item["n"]),
            ]
            for d in details
            for item in d.breakdowns
            for kind, key in [(item["kind"], item["key"])]
        ]
        body = (
            form
            + "".join(charts)
            + table(["run", "model", "kind", "key", "mean [95% CI]", "n"], cells)
        )
        return page("Breakdown", body, charts=True)

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
        figure = figures.training_figure(points)
        promoted = [p for p in points if p.promoted]
        best = max(promoted, key=lambda p: p.step) if promoted else None
        cells = [
            [
                str(p.step),
                f"{p.tokens_seen:,}" if p.tokens_seen else "",
                run_link(p.run_id),
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

    def run(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        status = request.query_params.get("status") or None
        failure = request.query_params.get("failure") or None
        flagged = request.query_params.get("flagged") == "1"
        with self.conn() as conn:
            detail = queries.run_detail(conn, run_id)
        lines = [
            line
            for line in detail.attempts
            if (status is None or line.status == status)
            and (failure is None or line.failure == failure)
            and (not flagged or line.flags)
        ]
        f = detail.figures
        facts = [
            ("model", e(detail.model)),
            ("suite version", e(detail.suite_version)),
            ("status", e(detail.status)),
            (
                "config hash",
                e(detail.config_hash)
                + (
                    " — same config as " + ", ".join(run_link(r) for r in detail.repeats)
                    if detail.repeats
                    else ""
                ),
            ),
            ("harness", e(f"{detail.harness_version or '?'} {detail.git_sha or ''}")),
            (
                "resolved",
                pct(f["resolved_rate"], f["rate_low"], f["rate_high"]) if f else "no attempts",
            ),
            ("cost $", f"{(f.get('cost_usd') or 0):.4f}" if f else ""),
        ]
        if detail.training_run:
            facts.append(
                (
                    "checkpoint",
                    f'<a href="/training/{quote(detail.training_run)}">'
                    f"{e(detail.training_run)}</a> step {detail.step}, "
                    f"gate {e(detail.gate_decision)}",
                )
            )
        failures = sorted({line.failure for line in detail.attempts if line.failure})
        links = [
            f'<a href="/runs/{quote(run_id)}">all</a>',
            f'<a href="/runs/{quote(run_id)}?flagged=1">flagged</a>',
        ]
        links += [
            f'<a href="/runs/{quote(run_id)}?failure={quote(x)}">{e(x)}</a>' for x in failures
        ]
        cells = [
            [
                f'<a href="/runs/{quote(run_id)}/attempts/{quote(line.task_id)}/{line.epoch}">'
                f"{e(line.task_id)}</a>",
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
        breakdown = table(
            ["kind", "key", "n", "mean [95% CI]"],
            [
                [e(b["kind"]), e(b["key"]), str(b["n"]), pct(b["mean"], b["low"], b["high"])]
                for b in detail.breakdowns
            ],
        )
        body = (
            table(["", ""], [[k, v] for k, v in facts])
            + "<h2>Breakdown</h2>"
            + breakdown
            + f"<h2>Attempts</h2><p id='attempt-filters'>show: {' · '.join(links)}</p>"
            + f"<p id='count'>{len(lines)} attempts</p>"
            + table(
                ["task", "epoch", "category", "status", "failure", "flags", "cost $", "turns"],
                cells,
                classes,
            )
        )
        return page(f"Run {run_id}", body)

    def compare(self, request: Request) -> Response:
        a, b = request.query_params.get("a"), request.query_params.get("b")
        with self.conn() as conn:
            runs = [row.run_id for row in queries.leaderboard(conn)]
            comparison = queries.compare(conn, a, b) if a and b else None

        def picker(name: str, current: str | None) -> str:
            opts = "".join(
                f"<option{' selected' if r == current else ''}>{e(r)}</option>" for r in ["", *runs]
            )
            return f'<label>{name} <select name="{name}">{opts}</select></label>'

        pickers = picker("a", a) + picker("b", b) + "<button>Compare</button>"
        body = f'<form method="get" action="/compare" id="pick">{pickers}</form>'
        if comparison is not None:
            c = comparison
            measures = [
                [
                    name,
                    f"{getattr(c, name).difference:+.4f}",
                    f"[{getattr(c, name).low:+.4f}, {getattr(c, name).high:+.4f}]",
                ]
                for name in ("resolved", "tests_passed", "cost_usd", "latency_s")
            ]
            flips = [
                [label, e(flip.task_id), f"{flip.first:.2f}", f"{flip.second:.2f}"]
                for label, group in (("gained", c.gained), ("lost", c.lost))
                for flip in group
            ]
            body += (
                f"<p>{run_link(c.second)} minus {run_link(c.first)}: "
                f"{c.shared_tasks} shared tasks, "
                f"{c.shared_attempts} shared attempts. McNemar exact p = {c.mcnemar_p:.4g} "
                f"({c.first_only} resolved by A only, {c.second_only} by B only).</p>"
                + table(["measure", "B - A", "95% CI"], measures)
                + f"<h2>Tasks that flipped</h2><p id='count'>{len(flips)} tasks</p>"
                + table(["", "task", "A", "B"], flips)
            )
        return page("Compare runs", body)

    def attempt(self, request: Request) -> Response:
        p = request.path_params
        with self.conn() as conn:
            view = queries.attempt_view(conn, p["run_id"], p["task_id"], int(p["epoch"]))
        result = view.result
        tests = [[e(node), e(outcome)] for node, outcome in sorted(result.get("tests", {}).items())]
        steps = [
            [
                str(i),
                e(r.get("type")),
                f"<pre>{e(_record_text(r))}</pre>",
            ]
            for i, r in enumerate(view.trajectory)
        ]
        flags = result.get("flags") or []
        body = (
            f"<p>{run_link(view.run_id)} · status <b>{e(result.get('status'))}</b> "
            f"{e(result.get('failure') or '')}"
            f" · flags: <span id='flags'>{e(', '.join(flags)) or 'none'}</span></p>"
            + f"<h2>Diff</h2><pre id='diff'>{e(view.diff or '(no diff kept)')}</pre>"
            + "<h2>Tests</h2>"
            + table(["test", "outcome"], tests)
            + f"<h2>Trajectory</h2><p>{e(view.trajectory_source or 'not available')}</p>"
            + table(["#", "type", "record"], steps)
        )
        return page(f"Attempt {view.task_id}#{view.epoch}", body)


def _record_text(record: dict[str, Any]) -> str:
    shown = {key: value for key, value in record.items() if key != "type"}
    return json.dumps(shown, indent=1, default=str)[:4000]
