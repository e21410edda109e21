"""The dashboard: a plain ASGI app (Starlette, served by uvicorn) over the store.

Every view is a server-rendered page with its own URL, and every filter and sort is a query
parameter, so any state of any view can be bookmarked, linked from a CI job or opened by a
test. Charts are Plotly figures drawn by plotly.js, served from the installed `plotly` package
at `/static/plotly.min.js` (no CDN: the page works offline).

Views: `/` the leaderboard (filters: suite, category, eval, model; sortable), `/cost` cost
against score with the Pareto frontier, `/breakdown` per category and per eval, `/training/NAME`
checkpoints over time with interval bands and gate decisions, `/runs/ID` one run (its attempts
filterable by status, failure and flags), `/compare?a=A&b=B` the tasks that flipped, and
`/runs/ID/attempts/TASK/EPOCH` one attempt's diff, tests and trajectory.

Not covered here: the numbers (`leaderboard.queries`); authentication (it listens on loopback).
"""

from __future__ import annotations

import html
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from sqlalchemy import Connection
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import Route

from leaderboard import queries, stats
from leaderboard.store import SqlStore, open_store

FILTERS = ("suite", "category", "eval", "model")
SORTABLE = ("rank", "model", "score", "cost_usd", "tokens", "latency_s", "started", "attempts")
NAV = [
    ("/", "Leaderboard"),
    ("/cost", "Cost vs score"),
    ("/breakdown", "Breakdown"),
    ("/training", "Training runs"),
    ("/compare", "Compare"),
]
STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5rem;color:#222}
nav a{margin-right:1rem} table{border-collapse:collapse;margin:1rem 0}
td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;font-size:.9rem}
th a{color:inherit} .pass{color:#1a7f37} .fail{color:#c62828} .inconclusive{color:#b26a00}
.tamper{background:#fde8e8} pre{background:#f6f8fa;padding:.5rem;overflow:auto;max-height:40rem}
form label{margin-right:.75rem} .chart{width:100%;max-width:1000px;height:480px}
"""


def plotly_js() -> Path:
    import plotly

    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def e(value: object) -> str:
    return html.escape(str(value), quote=True)


def page(title: str, body: str, charts: bool = False, status: int = 200) -> HTMLResponse:
    nav = "".join(f'<a href="{href}">{e(label)}</a>' for href, label in NAV)
    script = '<script src="/static/plotly.min.js"></script>' if charts else ""
    return HTMLResponse(
        f"<!doctype html><html><head><meta charset='utf-8'><title>{e(title)} · CursorBench"
        f"</title><link rel='icon' href='data:,'><style>{STYLE}</style>{script}</head>"
        f"<body><nav>{nav}</nav>"
        f"<h1>{e(title)}</h1>{body}{_DRAW if charts else ''}</body></html>",
        status_code=status,
    )


_DRAW = """<script>
for (const el of document.querySelectorAll('[data-figure]')) {
  const fig = JSON.parse(el.dataset.figure);
  Plotly.newPlot(el, fig.data, fig.layout, {responsive: true, displaylogo: false})
    .then(() => el.setAttribute('data-drawn', 'true'));
}
</script>"""


def chart(figure: dict[str, Any], chart_id: str) -> str:
    return f'<div class="chart" id="{e(chart_id)}" data-figure="{e(json.dumps(figure))}"></div>'


def table(headers: list[str], rows: list[list[str]], row_class: list[str] | None = None) -> str:
    head = "".join(f"<th>{h}</th>" for h in headers)
    body = "".join(
        f'<tr class="{row_class[i] if row_class else ""}">'
        + "".join(f"<td>{cell}</td>" for cell in row)
        + "</tr>"
        for i, row in enumerate(rows)
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def pct(score: float, low: float, high: float) -> str:
    return f"{score:.1%} <small>[{low:.1%}, {high:.1%}]</small>"


def run_link(run_id: str) -> str:
    return f'<a href="/runs/{quote(run_id)}">{e(run_id[:12])}</a>'


def filter_form(conn: Connection, request: Request, action: str) -> str:
    choices = queries.filter_choices(conn)
    fields = []
    for name in FILTERS:
        current = request.query_params.get(name, "")
        options = "".join(
            f'<option value="{e(v)}"{" selected" if v == current else ""}>{e(v)}</option>'
            for v in ["", *choices[name]]
        )
        fields.append(f'<label>{name} <select name="{name}">{options}</select></label>')
    for keep in ("sort", "order"):
        if request.query_params.get(keep):
            fields.append(
                f'<input type="hidden" name="{keep}" value="{e(request.query_params[keep])}">'
            )
    inner = "".join(fields) + "<button>Filter</button>"
    return f'<form method="get" action="{action}" id="filters">{inner}</form>'


def filters_of(request: Request) -> queries.Filters:
    values = {name: request.query_params.get(name) or None for name in FILTERS}
    return queries.Filters(**values)


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
                str(row.rank),
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
            for row in rows
        ]
        classes = ["tamper" if row.tampering else "" for row in rows]
        body = form + f"<p id='count'>{len(rows)} runs</p>" + table(headers, cells, classes)
        return page("Leaderboard", body)

    def cost(self, request: Request) -> Response:
        with self.conn() as conn:
            rows = queries.leaderboard(conn, filters_of(request))
            form = filter_form(conn, request, "/cost")
        points = [(row.run_id, row.cost_usd, row.score) for row in rows]
        front = stats.pareto_front(points)
        by_id = {row.run_id: row for row in rows}
        figure = {
            "data": [
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": "runs",
                    "x": [row.cost_usd for row in rows],
                    "y": [row.score for row in rows],
                    "text": [f"{row.model} {row.run_id[:12]}" for row in rows],
                    "error_y": {
                        "type": "data",
                        "symmetric": False,
                        "array": [row.high - row.score for row in rows],
                        "arrayminus": [row.score - row.low for row in rows],
                    },
                },
                {
                    "type": "scatter",
                    "mode": "lines+markers",
                    "name": "Pareto frontier",
                    "x": [by_id[run].cost_usd for run in front],
                    "y": [by_id[run].score for run in front],
                    "line": {"shape": "hv"},
                },
            ],
            "layout": {
                "xaxis": {"title": {"text": "cost ($)"}},
                "yaxis": {"title": {"text": "score"}, "range": [0, 1.05]},
                "margin": {"t": 20},
            },
        }
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
        series: dict[tuple[str, str], dict[str, float]] = {}
        for detail in details:
            for item in detail.breakdowns:
                series.setdefault((item["kind"], item["key"]), {})[detail.run_id] = item["mean"]
        labels = [f"{d.model} {d.run_id[:8]}" for d in details]
        figures = []
        for kind in ("category", "eval"):
            data = [
                {
                    "type": "bar",
                    "name": key,
                    "x": labels,
                    "y": [values.get(d.run_id) for d in details],
                }
                for (k, key), values in sorted(series.items())
                if k == kind
            ]
            layout = {"barmode": "group", "yaxis": {"range": [0, 1]}, "margin": {"t": 30}}
            layout["title"] = {"text": f"per {kind}"}
            figures.append(chart({"data": data, "layout": layout}, f"{kind}-chart"))
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
            + "".join(figures)
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
        steps = [p.step for p in points]
        colours = {"pass": "#1a7f37", "fail": "#c62828", "inconclusive": "#b26a00"}
        figure = {
            "data": [
                {
                    "type": "scatter",
                    "x": steps,
                    "y": [p.high for p in points],
                    "mode": "lines",
                    "line": {"width": 0},
                    "showlegend": False,
                    "hoverinfo": "skip",
                },
                {
                    "type": "scatter",
                    "x": steps,
                    "y": [p.low for p in points],
                    "mode": "lines",
                    "fill": "tonexty",
                    "line": {"width": 0},
                    "name": "95% CI",
                    "fillcolor": "rgba(31,119,180,0.2)",
                },
                {
                    "type": "scatter",
                    "x": steps,
                    "y": [p.score for p in points],
                    "mode": "lines+markers",
                    "name": "score",
                },
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": "gate decision",
                    "x": [p.step for p in points if p.gate_decision],
                    "y": [p.score for p in points if p.gate_decision],
                    "text": [p.gate_decision for p in points if p.gate_decision],
                    "marker": {
                        "size": 14,
                        "symbol": "diamond-open",
                        "color": [
                            colours.get(p.gate_decision or "", "#555")
                            for p in points
                            if p.gate_decision
                        ],
                    },
                },
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": "promoted",
                    "x": [p.step for p in points if p.promoted],
                    "y": [p.score for p in points if p.promoted],
                    "marker": {"size": 9, "symbol": "star", "color": "#1a7f37"},
                },
            ],
            "layout": {
                "xaxis": {"title": {"text": "step"}},
                "yaxis": {"title": {"text": "resolved rate"}, "range": [0, 1.05]},
                "margin": {"t": 20},
            },
        }
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
                f"<p>{run_link(b)} minus {run_link(a)}: {c.shared_tasks} shared tasks, "
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


def create_app(store: SqlStore) -> Starlette:
    board = Dashboard(store)

    def guarded(view: Callable[[Request], Response]) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            try:
                return view(request)
            except queries.QueryError as error:
                return page("Not found", f"<p>{e(error)}</p>", status=404)

        return endpoint

    routes = [
        Route("/", guarded(board.leaderboard)),
        Route("/cost", guarded(board.cost)),
        Route("/breakdown", guarded(board.breakdown)),
        Route("/training", guarded(board.training_index)),
        Route("/training/{name}", guarded(board.training)),
        Route("/compare", guarded(board.compare)),
        Route("/runs/{run_id}", guarded(board.run)),
        Route("/runs/{run_id}/attempts/{task_id}/{epoch:int}", guarded(board.attempt)),
        Route(
            "/static/plotly.min.js",
            lambda request: FileResponse(plotly_js(), media_type="text/javascript"),
        ),
        Route("/healthz", lambda request: Response("ok")),
    ]
    return Starlette(routes=routes)


class Served:
    """A dashboard served by uvicorn in a thread (tests, embedding); `url` once started."""

    def __init__(self, store: SqlStore, host: str = "127.0.0.1", port: int = 0) -> None:
        import uvicorn

        config = uvicorn.Config(create_app(store), host=host, port=port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.url = ""

    def __enter__(self) -> Served:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the dashboard did not start")
            time.sleep(0.02)
        host, port = self.server.servers[0].sockets[0].getsockname()[:2]
        self.url = f"http://{host}:{port}"
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def serve(url: str, host: str, port: int) -> None:
    """`cursorbench dashboard`: refuse an out-of-date schema, then serve until Ctrl-C."""
    import uvicorn

    store = open_store(url)
    print(f"dashboard for {store.url} at http://{host}:{port}/ (Ctrl-C stops it)", flush=True)
    try:
        uvicorn.run(create_app(store), host=host, port=port, log_level="warning")
    finally:
        store.close()
