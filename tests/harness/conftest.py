"""Fixtures for the harness tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.doubles import DoneOnlyDouble
from harness.openai_server import (
    Answer,
    AnswersModels,
    OpenAIServer,
    RawReply,
    Responder,
    models_list_reply,
)
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


@pytest.fixture
def red_team(tmp_path: Path, serve, host_canaries: HostCanaries) -> RedTeam:
    """Runs a script of steps through `cursorbench run` (`red_team_kit.red_team_runner`)."""
    return red_team_runner(tmp_path, serve, host_canaries)
