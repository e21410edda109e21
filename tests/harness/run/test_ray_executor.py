"""The Ray executor on a local cluster of 2 workers: whole runs, replay equality, a killed worker,
and a cluster joined by address.

Each test starts its own local cluster (`ray.init(num_cpus=2)`, ~6-10 s here)
and stops it at the end of the run; the last one starts a head node with `ray start`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cursorbench import api
from cursorbench.tasks.loader import bundled_suite
from harness.model.doubles import DoneOnlyDouble
from harness.run.runner import RunOutcome

pytest.importorskip("ray")  # in the `dev` extra: CI always has it
pytestmark = pytest.mark.slow

CLI = [sys.executable, "-m", "cursorbench.cli.app"]
RAY = {"kind": "ray", "num_cpus": 2, "concurrency": 2}

LEDGER_TASKS = len(list((bundled_suite() / "tasks").glob("ledger-*.yaml")))


def test_the_reference_solver_resolves_the_bundled_suite_on_ray(tmp_path: Path) -> None:
    # The ledger tasks (a test suite, an answer and a docs task): the Ray path does not depend
    # on the task beyond its kind; every bundled task runs on the local path and on Docker.
    out, db = tmp_path / "run", f"sqlite:///{tmp_path / 'lb.sqlite'}"
    done = subprocess.run(
        [*CLI, "run", "--executor", "ray", "--concurrency", "2", "--tasks", "ledger-*",
         "--out", str(out), "--db", db],
        capture_output=True, text=True, timeout=300, env=os.environ.copy(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["planned"] == summary["resolved"] == LEDGER_TASKS and summary["errors"] == 0
    lines = (out / "attempts.jsonl").read_text().splitlines()
    assert len(lines) == LEDGER_TASKS
    trajectories = sorted((out / "trajectories").glob("*.jsonl"))
    assert len(trajectories) == LEDGER_TASKS  # written by the driver from the workers
    assert all(path.read_text().splitlines()[-1].startswith('{"type": "result"') for path in
               trajectories)  # fmt: skip
    again = subprocess.run(
        [*CLI, "run", "--executor", "ray", "--tasks", "ledger-*", "--out", str(out), "--db", db],
        capture_output=True, text=True, timeout=300, env=os.environ.copy(),
    )  # fmt: skip
    assert (
        again.returncode == 0
        and f"run already complete: {LEDGER_TASKS} of {LEDGER_TASKS}" in again.stderr
    )


def test_local_and_ray_give_identical_outcomes_on_one_replay(tmp_path: Path) -> None:
    recorded = api.run(
        {"tasks": ["textkit-slugify", "minicalc-formatter"], "epochs": 2,
         "out": str(tmp_path / "recorded"), "store": {"kind": "none"}}
    )  # fmt: skip
    replay = {"kind": "replay", "run_dir": str(tmp_path / "recorded"), "max_retries": 0}
    local = api.run({"model": replay, "out": str(tmp_path / "local"), "store": {"kind": "none"}})
    on_ray = api.run(
        {"model": replay, "out": str(tmp_path / "ray"), "store": {"kind": "none"}, "executor": RAY}
    )
    assert len(local.results) == 4  # 2 tasks x 2 epochs
    assert outcomes(local) == outcomes(on_ray) == outcomes(recorded)


def outcomes(outcome: RunOutcome) -> list[tuple]:
    """What must not change between executors on one replay, per attempt."""
    return [
        (r.key, r.status, r.failure, r.tests, r.turns, r.tool_calls, r.usage.tokens, r.error)
        for r in outcome.results
    ]


class KillsARayWorkerOnce:
    """Says "done"; on its first request it kills the Ray worker running an attempt (the
    one asking: only one runs at a time), as a machine lost mid-attempt."""

    models = ["killer-double"]

    def __init__(self) -> None:
        self.killed: list[int] = []

    def respond(self, request: dict[str, Any]) -> Any:
        if not self.killed:
            for pid in ray_task_workers():
                os.kill(pid, signal.SIGKILL)
                self.killed.append(pid)
        return DoneOnlyDouble().respond(request)


def ray_task_workers() -> list[int]:
    """Ray worker processes running a task (Ray titles them `ray::_apply`)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            title = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if title.startswith(b"ray::_apply"):
            found.append(int(entry.name))
    return found


def test_a_killed_worker_s_attempt_runs_again_and_counts_once(tmp_path: Path, serve) -> None:
    killer = KillsARayWorkerOnce()
    outcome = api.run(
        {
            "tasks": ["textkit-*"],
            "out": str(tmp_path / "run"),
            "store": {"kind": "none"},
            "model": {"base_url": serve(killer), "name": "killer-double", "max_retries": 0},
            "executor": RAY | {"concurrency": 1},
        }
    )
    assert len(killer.killed) == 1, "no Ray worker was running an attempt"
    assert [(r.key, r.failure.value if r.failure else None) for r in outcome.results] == [
        ("textkit-case-styles#0", "empty_diff"),
        ("textkit-slugify#0", "empty_diff"),
    ]
    lines = (tmp_path / "run" / "attempts.jsonl").read_text().splitlines()
    assert len(lines) == 2
    mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    assert [line for line in mounts if str(tmp_path) in line] == []  # the dead worker's, swept


@pytest.fixture
def ray_cluster() -> Iterator[str]:
    """A real Ray cluster of one head node with 2 CPUs, joined by address, like a remote one.

    `ray start --block` stays in the foreground and stops the processes it started when it
    is terminated: ending it is `ray stop` for this cluster alone (`ray stop` itself would
    end every Ray process of this user on the machine, other clusters included)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    temp = tempfile.mkdtemp(prefix="cb-ray-")  # short: Ray's socket paths live under it
    head = subprocess.Popen(
        ["ray", "start", "--head", "--port", str(port), "--num-cpus", "2", "--block",
         "--node-ip-address", "127.0.0.1", "--include-dashboard", "false",
         "--disable-usage-stats", "--temp-dir", temp],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        env=os.environ | {"PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:  # the GCS answers on the port once the head is up
            assert head.poll() is None, "ray start --head exited"
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            assert time.monotonic() < deadline, "the Ray head did not come up"
            time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        head.terminate()  # `ray start` stops what it started, in order
        try:
            head.wait(timeout=60)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(head.pid, signal.SIGKILL)  # anything of this cluster left behind
            head.wait()
            shutil.rmtree(temp, ignore_errors=True)


def test_a_run_joins_a_cluster_by_address_and_leaves_it_running(
    tmp_path: Path, ray_cluster: str
) -> None:
    out = tmp_path / "run"
    done = subprocess.run(
        [*CLI, "run", "--executor", "ray", "--ray-address", ray_cluster, "--concurrency", "2",
         "--tasks", "textkit-slugify", "--out", str(out),
         "--db", f"sqlite:///{tmp_path / 'lb.sqlite'}"],
        capture_output=True, text=True, timeout=300, env=os.environ.copy(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["planned"] == summary["resolved"] == 1 and summary["errors"] == 0
    ray = pytest.importorskip("ray")
    ray.init(address=ray_cluster, logging_level="ERROR", log_to_driver=False)
    try:  # still up after the run, with the attempts' CPUs given back
        assert ray.cluster_resources().get("CPU") == 2
        assert ray.available_resources().get("CPU") == 2
    finally:
        ray.shutdown()
