"""The dashboard's HTML: the page shell, tables, links, the filter form (no views here)."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Connection
from starlette.requests import Request
from starlette.responses import HTMLResponse

from leaderboard import queries

FILTERS = ("suite", "category", "eval", "model")
SORTABLE = ("rank", "model", "score", "cost_usd", "tokens", "latency_s", "started", "attempts")
NAV = [
    ("/", "Leaderboard"),
    ("/runs", "Runs"),
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
.unranked td{color:#666} .why{color:#b26a00;font-weight:bold} .paging a,.paging span{margin:0 .2rem}
.paging .here{font-weight:bold} .nm{color:#999;font-style:italic} .short{font-family:monospace}
"""


def plotly_js() -> Path:
    import plotly

    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def e(value: object) -> str:
    return html.escape(str(value), quote=True)


def page(
    title: str, body: str, charts: bool = False, status: int = 200, style: str = ""
) -> HTMLResponse:
    nav = "".join(f'<a href="{href}">{e(label)}</a>' for href, label in NAV)
    script = '<script src="/static/plotly.min.js"></script>' if charts else ""
    return HTMLResponse(
        f"<!doctype html><html><head><meta charset='utf-8'><title>{e(title)} · CursorBench"
        f"</title><link rel='icon' href='data:,'><style>{STYLE}{style}</style>{script}</head>"
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


def run_link(run_id: str, label: str | None = None) -> str:
    """A link to the run, shown as `label` (its short id) or its first 12 characters."""
    shown = label or run_id[:12]
    return f'<a href="/runs/{quote(run_id)}" class="short" title="{e(run_id)}">{e(shown)}</a>'


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
