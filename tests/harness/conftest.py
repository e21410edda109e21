"""Fixtures for the harness tests."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.model.doubles import DoneOnlyDouble
from harness.model.openai_server import (
    Answer,
    AnswersModels,
    OpenAIServer,
    RawReply,
    Responder,
    models_list_reply,
)
from harness.sandbox import bubblewrap_works
from tests.harness.red_team_kit import HostCanaries, RedTeam, red_team_runner


class Switch:
    """Forwards every request to whichever responder the current test installed."""

    def __init__(self) -> None:
        self.target: Responder = DoneOnlyDouble()

    @property
    def models(self) -> list[str]:
        return self.target.models

    def respond(self, request: dict[str, Any]) -> Answer:
        return self.target.respond(request)

    def models_reply(self) -> RawReply:
        if isinstance(self.target, AnswersModels):
            return self.target.models_reply()
        return models_list_reply(self.target.models)


@pytest.fixture(scope="session")
def shared_endpoint() -> Iterator[tuple[Switch, str]]:
    switch = Switch()
    with OpenAIServer(switch) as server:
        yield switch, server.base_url


@pytest.fixture
def serve_fast(shared_endpoint: tuple[Switch, str]) -> Iterator[Callable[[Responder], str]]:
    """Like the shared `serve`, over one real server for the session, one responder at a time.

    Stopping an `OpenAIServer` takes up to 0.5 s (its poll interval), which would dominate
    these tests if each started its own.
    """
    switch, base_url = shared_endpoint

    def start(responder: Responder) -> str:
        switch.target = responder
        return base_url

    yield start
    switch.target = DoneOnlyDouble()


@pytest.fixture
def host_canaries(tmp_path: Path) -> Iterator[HostCanaries]:
    """Files outside every sandbox that red-team attacks aim at (`red_team_kit.HostCanaries`)."""
    canaries = HostCanaries(tmp_path)
    yield canaries
    canaries.remove()


# The confined backends every red-team attack runs on; the docker cases go to the
# `resources` phase (`tests/conftest.py`) by their mark.
RED_TEAM_SANDBOXES = [
    pytest.param(
        "bubblewrap",
        marks=pytest.mark.skipif(not bubblewrap_works(), reason="bubblewrap cannot run here"),
    ),
    pytest.param("docker", marks=pytest.mark.docker),
]


# Every red-team case runs on bubblewrap; on docker, by default (CI included), only those
# marked `red_team_ci` (one or two per part of the Docker backend an attack crosses): all
# of them take ~7 min there (`benchmarks/RESULTS.md`). `CURSORBENCH_RED_TEAM_DOCKER=all`
# runs every docker case.
RED_TEAM_DOCKER_ALL = "CURSORBENCH_RED_TEAM_DOCKER"


def _docker_case_on_demand(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    if callspec is None or callspec.params.get("red_team_sandbox") != "docker":
        return False
    return item.get_closest_marker("red_team_ci") is None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leaves out the docker cases of red-team tests not marked `red_team_ci`, unless
    `CURSORBENCH_RED_TEAM_DOCKER=all`."""
    if os.environ.get(RED_TEAM_DOCKER_ALL) == "all":
        return
    left_out = [item for item in items if _docker_case_on_demand(item)]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        dropped = set(left_out)
        items[:] = [item for item in items if item not in dropped]


@pytest.fixture(params=RED_TEAM_SANDBOXES)
def red_team_sandbox(request: pytest.FixtureRequest) -> str:
    """The backend a red-team test attacks: each test runs once per confined backend."""
    return str(request.param)


@pytest.fixture
def red_team(tmp_path: Path, serve, host_canaries: HostCanaries, red_team_sandbox: str) -> RedTeam:
    """Runs a script of steps through `cursorbench run --sandbox <backend>`
    (`red_team_kit.red_team_runner`), once per confined backend."""
    return red_team_runner(tmp_path, serve, host_canaries, red_team_sandbox)


@pytest.fixture
def unconfined_red_team(tmp_path: Path, serve, host_canaries: HostCanaries) -> RedTeam:
    """The same, through `--sandbox subprocess`: for controls that show an attack is real."""
    return red_team_runner(tmp_path, serve, host_canaries, "subprocess")
