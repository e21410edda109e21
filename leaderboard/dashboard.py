"""The dashboard: a plain ASGI app (Starlette, served by uvicorn) over the store.

Every view is a server-rendered page with its own URL, and every filter and sort is a query
parameter, so any state of any view can be bookmarked, linked from a CI job or opened by a
test. Charts are Plotly figures drawn by plotly.js, served from the installed `plotly` package
at `/static/plotly.min.js` (no CDN: the page works offline).

Views: `/` the leaderboard by model (one row per model and suite version: its latest, or
`?pick=best` best, complete confined run; partial and unconfined ones apart, unranked),
`/runs` every run (filters: suite, category, eval, model; sortable; paged; tick two to
compare), `/cost` cost against score with the Pareto frontier, `/breakdown` per category and
per eval with error bars (a page of runs at a time), `/training/NAME` checkpoints over time
with interval bands and gate decisions, `/runs/ID` one run (its attempts paged, filterable by
status, failure and flags), `/compare?a=A&b=B` (or `?run=A&run=B` from the tick boxes) the
tasks that flipped, `/runs/ID/attempts/TASK/EPOCH` one attempt: coloured diff, fail-to-pass
and pass-to-pass tests apart, the grader's reasons and the trajectory as a chat, and
`.../raw` that trajectory's JSON lines. A run id in a URL may be any unique prefix.

Which tests are fail-to-pass is in the task's definition, not in the store: `test_lists`
(suite version, task id) -> (fail_to_pass, pass_to_pass) gives it (`cursorbench dashboard`
looks tasks up in the bundled suites); without it the tests are shown unclassified.

The views are `leaderboard.views`, their HTML `leaderboard.pages`, their charts
`leaderboard.figures`. Not covered here: the numbers (`leaderboard.queries`); authentication
(it listens on loopback).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Route

from leaderboard import queries
from leaderboard.pages import e, page, plotly_js
from leaderboard.run_pages import TestLists
from leaderboard.store import SqlStore, open_store
from leaderboard.views import Dashboard

__all__ = ["Dashboard", "Served", "TestLists", "create_app", "serve"]


def create_app(store: SqlStore, test_lists: TestLists | None = None) -> Starlette:
    board = Dashboard(store, test_lists)

    def guarded(view: Callable[[Request], Response]) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            try:
                return view(request)
            except queries.QueryError as error:
                return page("Not found", f"<p>{e(error)}</p>", status=404)

        return endpoint

    routes = [
        Route("/", guarded(board.models)),
        Route("/runs", guarded(board.runs)),
        Route("/cost", guarded(board.cost)),
        Route("/breakdown", guarded(board.breakdown)),
        Route("/training", guarded(board.training_index)),
        Route("/training/{name}", guarded(board.training)),
        Route("/compare", guarded(board.compare)),
        Route("/runs/{run_id}", guarded(board.run)),
        Route("/runs/{run_id}/attempts/{task_id}/{epoch:int}", guarded(board.attempt)),
        Route("/runs/{run_id}/attempts/{task_id}/{epoch:int}/raw", guarded(board.raw)),
        Route(
            "/static/plotly.min.js",
            lambda request: FileResponse(plotly_js(), media_type="text/javascript"),
        ),
        Route("/healthz", lambda request: Response("ok")),
    ]
    return Starlette(routes=routes)


class Served:
    """A dashboard served by uvicorn in a thread (tests, embedding); `url` once started."""

    def __init__(
        self,
        store: SqlStore,
        host: str = "127.0.0.1",
        port: int = 0,
        test_lists: TestLists | None = None,
    ) -> None:
        import uvicorn

        app = create_app(store, test_lists)
        config = uvicorn.Config(app, host=host, port=port, log_level="warning")
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


def serve(url: str, host: str, port: int, test_lists: TestLists | None = None) -> None:
    """`cursorbench dashboard`: refuse an out-of-date schema, then serve until Ctrl-C."""
    import uvicorn

    store = open_store(url)
    print(f"dashboard for {store.url} at http://{host}:{port}/ (Ctrl-C stops it)", flush=True)
    threading.Thread(target=_warm, args=(test_lists,), daemon=True).start()
    try:
        uvicorn.run(create_app(store, test_lists), host=host, port=port, log_level="warning")
    finally:
        store.close()


def _warm(test_lists: TestLists | None) -> None:
    """What the first requests would otherwise wait for, loaded while the server starts: the
    task definitions behind `test_lists` (every bundled suite: seconds) and numpy (/compare)."""
    try:
        import numpy  # noqa: F401

        if test_lists is not None:
            test_lists("", "")
    except Exception:  # the page that needs it reports the problem, as before
        return
