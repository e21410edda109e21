"""Shared fixtures: an isolated CursorBench home per test, endpoints served over HTTP."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from cursorbench import api
from cursorbench.config import spec_from_options
from harness.openai_server import OpenAIServer, Responder
from harness.runner import RunOutcome


@functools.cache
def _docker_unavailable() -> str | None:
    """Why the Docker engine cannot be used here (it is started if it can be), or None."""
    from harness.sandbox import SandboxSettings, SandboxUnavailable, open_backend

    try:
        open_backend("docker", SandboxSettings())  # engine up, base image built
    except SandboxUnavailable as error:
        return str(error)
    return None


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Tests marked `docker` need the engine: skipped without one, but failed under CI."""
    if item.get_closest_marker("docker") is None:
        return
    reason = _docker_unavailable()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"docker backend unavailable under CI: {reason}", pytrace=False)
        pytest.skip(f"docker backend unavailable: {reason}")


@pytest.fixture(autouse=True)
def cursorbench_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Caches, prepared workspaces and the default database live under tmp_path."""
    home = tmp_path / "cursorbench-home"
    monkeypatch.setenv("CURSORBENCH_HOME", str(home))
    monkeypatch.setenv("CURSORBENCH_DB", f"sqlite:///{home / 'leaderboard.sqlite'}")
    return home


@pytest.fixture
def serve() -> Iterator[Callable[[Responder], str]]:
    """Starts a responder on loopback; returns its base URL. Stopped after the test."""
    with ExitStack() as stack:

        def start(responder: Responder) -> str:
            return stack.enter_context(OpenAIServer(responder)).base_url

        yield start


@pytest.fixture
def run_benchmark(tmp_path: Path) -> Callable[..., RunOutcome]:
    """Runs the real runner in-process (as `cursorbench run` does) and returns its outcome."""

    def run(**options: Any) -> RunOutcome:
        """Options are the CLI's, by their Python names (`retry_backoff`, `db`, ...)."""
        options.setdefault("out", tmp_path / "run")
        options.setdefault("retry_backoff", 0.0)
        options.setdefault("max_retries", 1)
        return api.run(spec_from_options(**options))

    return run
