"""The dashboard's Plotly figures (data and layout, drawn by plotly.js in the page)."""

from __future__ import annotations

from typing import Any

from leaderboard.queries import CheckpointPoint, LeaderRow


def cost_figure(
    rows: list[LeaderRow],
    cost_per_task: dict[str, float],
    front: list[str],
    short: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Cost per task against score, each run (all priced: `cost_per_task` holds each) with its
    interval, and the Pareto frontier through `front`."""
    by_id = {row.run_id: row for row in rows}
    short = short or {}
    return {
        "data": [
            {
                "type": "scatter",
                "mode": "markers",
                "name": "runs",
                "x": [cost_per_task[row.run_id] for row in rows],
                "y": [row.score for row in rows],
                "text": [f"{row.model} {short.get(row.run_id, row.run_id[:12])}" for row in rows],
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
                "x": [cost_per_task[run] for run in front],
                "y": [by_id[run].score for run in front],
                "line": {"shape": "hv"},
            },
        ],
        "layout": {
            "xaxis": {"title": {"text": "cost per task ($)"}},
            "yaxis": {"title": {"text": "score"}, "range": [0, 1.05]},
            "margin": {"t": 20},
        },
    }


def breakdown_figures(
    runs: list[tuple[str, str]], found: dict[str, list[dict[str, Any]]]
) -> dict[str, dict[str, Any]]:
    """One grouped bar chart per breakdown kind ("category", "eval"), a bar group per run
    (`runs`: (run id, label)), each bar with its 95% interval as an error bar. A measured 0 is
    labelled "0%" and has its whisker; a key a run has no attempt of has no bar, no label
    and no whisker (its hover text says "not measured")."""
    series: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for run_id, _label in runs:
        for item in found.get(run_id, []):
            series.setdefault((item["kind"], item["key"]), {})[run_id] = item
    labels = [label for _, label in runs]
    figures: dict[str, dict[str, Any]] = {}
    for kind in ("category", "eval"):
        data = []
        for (k, key), values in sorted(series.items()):
            if k != kind:
                continue
            items = [values.get(run_id) for run_id, _ in runs]
            data.append(
                {
                    "type": "bar",
                    "name": key,
                    "x": labels,
                    "y": [item["mean"] if item else None for item in items],
                    "text": [f"{item['mean']:.0%}" if item else "not measured" for item in items],
                    "textposition": "outside",
                    "cliponaxis": False,
                    "customdata": [item["n"] if item else 0 for item in items],
                    "hovertemplate": "%{x}<br>"
                    + key
                    + ": %{text} (n=%{customdata})<extra></extra>",
                    "error_y": {
                        "type": "data",
                        "symmetric": False,
                        "array": [item["high"] - item["mean"] if item else None for item in items],
                        "arrayminus": [
                            item["mean"] - item["low"] if item else None for item in items
                        ],
                        "visible": True,
                    },
                }
            )
        layout: dict[str, Any] = {
            "barmode": "group",
            "yaxis": {"range": [0, 1.15], "tickformat": ".0%"},
            "margin": {"t": 30},
            "title": {"text": f"per {kind} (95% CI over tasks)"},
        }
        figures[kind] = {"data": data, "layout": layout}
    return figures


def training_figure(points: list[CheckpointPoint]) -> dict[str, Any]:
    """A training run's checkpoints: score with its band, gate decisions, promotions."""
    steps = [p.step for p in points]
    colours = {"pass": "#1a7f37", "fail": "#c62828", "inconclusive": "#b26a00"}
    return {
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
