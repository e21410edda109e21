"""Shared fixtures: an isolated CursorBench home per test (one build cache for the session),
endpoints served over HTTP, and the suite's own temp folder."""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from cursorbench import api
from cursorbench.config import spec_from_options
from harness.model.openai_server import OpenAIServer, Responder
from harness.run.runner import RunOutcome

ROOT = Path(__file__).resolve().parents[1]
# On xdist workers, whole files are handed out the heaviest first (`tests/heavy_first.py`).
pytest_plugins = ["tests.heavy_first"]


def pytest_configure(config: pytest.Config) -> None:
    """Temp folders go to a root of this checkout's own (pytest keeps its last 3 runs there),
    not the machine-wide `/tmp/pytest-of-<user>` that every pytest on the machine shares.
    Not under the checkout itself: git commands in a test's folder would find its `.git`."""
    if not os.environ.get("PYTEST_DEBUG_TEMPROOT"):
        checkout = hashlib.sha256(str(ROOT).encode()).hexdigest()[:10]
        temproot = Path(tempfile.gettempdir()) / f"cursorbench-tests-{os.getuid()}-{checkout}"
        temproot.mkdir(mode=0o700, exist_ok=True)
        os.environ["PYTEST_DEBUG_TEMPROOT"] = str(temproot)


# Fixtures that make a test a whole benchmark run: such a test is `slow` wherever it lives.
WHOLE_RUN_FIXTURES = {"run_benchmark"}
# `scripts/test.sh` runs the suite in phases (`CURSORBENCH_TEST_PHASE`):
# - `parallel`: every test not named below, under pytest-xdist;
# - `resources`, at the same time in a process of its own, one test at a time: the tests of
#   the Docker engine and its image (marked `docker`), which other Docker tests beside them
#   would disturb;
# - `exclusive`, afterwards, alone: the tests that need the machine to themselves: local Ray
#   clusters (their auth token is machine-wide, and beside other tests a cluster's many
#   processes starve: its tests took ten times as long), test_sources (it plants a task's
#   answer in the shared site-packages for a moment, which would fail a build of that task
#   beside it, e.g. in test_checks) and tests marked `exclusive` (the red team's
#   resource-limit and side-channel attacks, which load the machine or watch its locks).
EXCLUSIVE_FILES = {"test_sources.py", "test_ray_executor.py", "test_ray_workers.py"}
RESOURCE_FILES = {"test_docker.py"}
PHASES = ("parallel", "resources", "exclusive")


def phase_of(item: pytest.Item) -> str:
    if item.path.name in EXCLUSIVE_FILES or item.get_closest_marker("exclusive") is not None:
        return "exclusive"
    if item.path.name in RESOURCE_FILES or item.get_closest_marker("docker") is not None:
        return "resources"
    return "parallel"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`-m "not slow"` (the quick tier) leaves out every whole run, marked or not; under
    `CURSORBENCH_TEST_PHASE`, only that phase's tests are kept."""
    for item in items:
        if WHOLE_RUN_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    phase = os.environ.get("CURSORBENCH_TEST_PHASE")
    if not phase:
        return
    if phase not in PHASES:
        raise pytest.UsageError(f"CURSORBENCH_TEST_PHASE must be one of {', '.join(PHASES)}")
    keep = [item for item in items if phase_of(item) == phase]
    config.hook.pytest_deselected(items=[item for item in items if item not in keep])
    items[:] = keep


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


@pytest.fixture(scope="session")
def session_build_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built tasks, sdists and leak-scan results, shared by every test of the session (and
    by every xdist worker: the folder is above theirs; `scripts/test.sh` names one for the
    phases it runs at once). Entries are content-addressed and built once under a lock
    (`harness.home.build_once`), so two tests building the same task both get a whole one."""
    shared = os.environ.get("CURSORBENCH_TEST_BUILD_CACHE")  # phases run at once share it
    if shared:
        return Path(shared)
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    return base / "build-cache"


@pytest.fixture(autouse=True)
def cursorbench_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, session_build_cache: Path
) -> Path:
    """Attempts, validation scratch and the default database live under tmp_path; built
    tasks come from the session's build cache (a test of the cache passes its own folder
    to `build(task, cache)`)."""
    home = tmp_path / "cursorbench-home"
    monkeypatch.setenv("CURSORBENCH_HOME", str(home))
    monkeypatch.setenv("CURSORBENCH_DB", f"sqlite:///{home / 'leaderboard.sqlite'}")
    monkeypatch.setenv("CURSORBENCH_BUILD_CACHE", str(session_build_cache))
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
