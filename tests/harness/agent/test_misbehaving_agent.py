"""Agent commands that hang, fork, flood or reach for the network are stopped, and the run goes on.

Each test runs two tasks in one run, one attempt at a time. Whichever attempt
asks first gets the bad command (with a short `timeout_s`), then a harmless
command; the other attempt runs only the harmless command. The tests check what
the trajectory recorded for the bad command, that the sandbox still worked
afterwards, that both attempts have results, that no process the command
started is left, and that the run ended (each bad command by its own short timeout:
the harmless command after it ran, and printed that the sandbox is still alive).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.agent.trajectory import read_trajectory
from harness.model.openai_server import Reply, first_user_message, step_index
from harness.results import AttemptResult, Failure
from harness.run.runner import RunOutcome
from harness.sandbox.bubblewrap import bubblewrap_works
from harness.sandbox.process import KEEP_BYTES

TASKS = ["textkit-slugify", "textkit-case-styles"]
MAX_RECORDED_OUTPUT = 100_000

NO_BUBBLEWRAP = "bubblewrap cannot run here, so agent commands are not confined"
needs_bubblewrap = pytest.mark.skipif(not bubblewrap_works(), reason=NO_BUBBLEWRAP)
BACKENDS = [pytest.param("bubblewrap", marks=needs_bubblewrap), "subprocess"]

HARMLESS = "echo still-alive"


def tool(name: str, **arguments: Any) -> Reply:
    return Reply(tool_calls=[(name, arguments)])


class OneBadAttempt:
    """The first attempt to call runs `bad` then HARMLESS; every other runs HARMLESS only."""

    models = ["scripted-double"]

    def __init__(self, bad: Reply) -> None:
        self.bad = bad
        self.bad_prompt: str | None = None
        self._lock = threading.Lock()

    def respond(self, request: dict[str, Any]) -> Reply:
        prompt = first_user_message(request)
        with self._lock:
            if self.bad_prompt is None:
                self.bad_prompt = prompt
        harmless = tool("run", command=HARMLESS, timeout_s=10)
        steps = [self.bad, harmless] if prompt == self.bad_prompt else [harmless]
        index = step_index(request)
        return steps[index] if index < len(steps) else tool("finish", summary="done")


@dataclass
class Ran:
    outcome: RunOutcome
    bad: AttemptResult
    bad_outputs: list[str]  # what the bad attempt's `run` calls returned, in order
    good: AttemptResult
    good_outputs: list[str]


def run_outputs(outcome: RunOutcome, result: AttemptResult) -> list[str]:
    assert outcome.run.out_dir is not None and result.trajectory is not None
    records = read_trajectory(Path(outcome.run.out_dir) / result.trajectory)
    return [r["output"] for r in records if r["type"] == "tool" and r.get("name") == "run"]


def run_bad_command(
    run_benchmark: Callable[..., RunOutcome],
    serve: Callable[[Any], str],
    command: str,
    sandbox: str,
    timeout_s: float = 2,
) -> Ran:
    responder = OneBadAttempt(tool("run", command=command, timeout_s=timeout_s))
    outcome = run_benchmark(
        base_url=serve(responder),
        model="scripted-double",
        tasks=TASKS,
        sandbox=sandbox,
        concurrency=1,  # the second attempt starts only after the bad one is over
    )
    assert outcome.run.sandbox == sandbox
    assert sorted(r.task_id for r in outcome.results) == sorted(TASKS)  # both have a result
    for result in outcome.results:
        # Nothing was changed, so each attempt ends as an ordinary failure, not a harness error.
        assert result.failure is Failure.EMPTY_DIFF, (result.task_id, result.failure, result.error)
    assert responder.bad_prompt is not None
    (bad,) = [
        r for r in outcome.results if r.task_id == TASK_BY_PROMPT[responder.bad_prompt.strip()]
    ]
    (good,) = [r for r in outcome.results if r is not bad]
    ran = Ran(outcome, bad, run_outputs(outcome, bad), good, run_outputs(outcome, good))
    assert len(ran.bad_outputs) == 2 and ran.bad_outputs[1].endswith("still-alive\n"), ran
    assert ran.good_outputs == ["[exit code 0]\nstill-alive\n"], ran.good_outputs
    return ran


def _task_prompts() -> dict[str, str]:
    from cursorbench.tasks.loader import bundled_suite, load_task

    tasks = [load_task(bundled_suite() / "tasks" / f"{task_id}.yaml") for task_id in TASKS]
    return {task.prompt.strip(): task.id for task in tasks}


TASK_BY_PROMPT = _task_prompts()


# --- stray processes --------------------------------------------------------------------------


def processes_with(token: str) -> list[int]:
    """Live processes whose command line contains `token` (zombies have none)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if token in cmdline:
            found.append(int(entry.name))
    return found


@contextmanager
def sleeper_token() -> Iterator[str]:
    """A `sleep` argument no other process uses, so the survivors can only be ours."""
    token = f"1000.{uuid.uuid4().int % 10**9:09d}"
    assert processes_with(f"sleep {token}") == []
    try:
        yield token
    finally:  # kill survivors of a failed test, ours by their unique argument
        for pid in processes_with(f"sleep {token}"):
            with suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def survivors(token: str, grace_s: float = 2.0) -> list[int]:
    """Processes still running `sleep <token>` once killed ones had time to go."""
    deadline = time.monotonic() + grace_s
    while (left := processes_with(f"sleep {token}")) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


# --- hanging and forking ----------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", BACKENDS)
def test_command_that_sleeps_forever_is_timed_out(run_benchmark, serve, sandbox: str) -> None:
    with sleeper_token() as token:
        ran = run_bad_command(run_benchmark, serve, f"echo started; sleep {token}", sandbox)
        output = ran.bad_outputs[0]
        assert output.startswith("[timed out after 2s; the command and its children were killed]")
        assert "started" in output
        assert survivors(token) == []


FORKING = {
    "subshells": "for i in 1 2 3; do (sleep {token} &); done; sleep {token}",
    "nohup": "for i in 1 2 3; do nohup sleep {token} >/dev/null 2>&1 & done; sleep {token}",
}


@pytest.mark.slow
@pytest.mark.parametrize("how", sorted(FORKING))
@pytest.mark.parametrize("sandbox", BACKENDS)
def test_forked_children_are_killed_with_the_command(
    run_benchmark, serve, sandbox: str, how: str
) -> None:
    with sleeper_token() as token:
        ran = run_bad_command(run_benchmark, serve, FORKING[how].format(token=token), sandbox)
        assert ran.bad_outputs[0].startswith("[timed out after 2s;"), ran.bad_outputs[0]
        assert survivors(token) == []


@pytest.mark.parametrize("sandbox", BACKENDS)
def test_children_left_behind_by_a_finished_command_are_killed(
    run_benchmark, serve, sandbox: str
) -> None:
    with sleeper_token() as token:
        command = f"for i in 1 2 3; do (sleep {token} >/dev/null 2>&1 &); done; echo forked"
        ran = run_bad_command(run_benchmark, serve, command, sandbox)
        assert ran.bad_outputs[0] == "[exit code 0]\nforked\n"
        assert survivors(token) == []


@pytest.mark.parametrize(
    "sandbox",
    [
        pytest.param("bubblewrap", marks=needs_bubblewrap),
        pytest.param(
            "subprocess",
            marks=pytest.mark.xfail(
                strict=True,
                reason=(
                    "BUG: without bubblewrap a command is stopped by killing its process "
                    "group only, so a child that calls setsid() (its own session) survives "
                    "the command, the attempt and the run"
                ),
            ),
        ),
    ],
)
@pytest.mark.slow
def test_a_child_in_its_own_session_is_killed(run_benchmark, serve, sandbox: str) -> None:
    with sleeper_token() as token:
        # Waits until the child has its own session, so the group kill cannot catch it early.
        command = (
            f"setsid sleep {token} >/dev/null 2>&1 </dev/null & "
            'until [ "$(ps -o sid= -p $!)" -eq $! ] 2>/dev/null; do sleep 0.02; done; '
            "echo detached"
        )
        ran = run_bad_command(run_benchmark, serve, command, sandbox)
        assert ran.bad_outputs[0] == "[exit code 0]\ndetached\n"
        assert survivors(token) == []


# --- flooding output --------------------------------------------------------------------------

FLOODS = {
    "yes": "yes | head -c 3000000000",
    "zeros": "cat /dev/zero",
}


@pytest.mark.parametrize("flood", sorted(FLOODS))
@pytest.mark.parametrize("sandbox", BACKENDS)
def test_output_flood_is_cut_and_killed(run_benchmark, serve, sandbox: str, flood: str) -> None:
    ran = run_bad_command(run_benchmark, serve, FLOODS[flood], sandbox, timeout_s=60)
    output = ran.bad_outputs[0]
    assert output.startswith("[killed: the command printed more output than allowed]"), output[:200]
    assert len(output.encode()) < MAX_RECORDED_OUTPUT
    assert "bytes of output omitted" in output
    assert len(output) > 2 * KEEP_BYTES - 100  # head and tail were kept
    trajectory = Path(ran.outcome.run.out_dir or "") / (ran.bad.trajectory or "")
    assert trajectory.stat().st_size < 4 * MAX_RECORDED_OUTPUT


# --- the network ------------------------------------------------------------------------------


@contextmanager
def listening_server() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on loopback; yields its port and what each connection sent."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    received: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(2)
                try:
                    received.append(connection.recv(100))
                    connection.sendall(b"hello from the host\n")
                except OSError:
                    received.append(b"")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], received
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()


def socket_probe(port: int) -> str:
    code = (
        "import socket; "
        f"s = socket.create_connection(('127.0.0.1', {port}), timeout=3); "
        "s.sendall(b'agent'); print('CONNECTED', s.recv(100))"
    )
    return f"python -c {json.dumps(code)}; echo rc=$?"


@needs_bubblewrap
def test_network_is_unreachable(run_benchmark, serve) -> None:
    with listening_server() as (port, received):
        command = "; ".join(
            [
                socket_probe(port),
                "getent hosts example.com; echo rc=$?",
                "if command -v curl >/dev/null; then curl -sS -m 5 http://example.com/; "
                "echo curl-rc=$?; fi",
            ]
        )
        ran = run_bad_command(run_benchmark, serve, command, "bubblewrap", timeout_s=30)
    output = ran.bad_outputs[0]
    assert "CONNECTED" not in output and received == [], output
    assert "Network is unreachable" in output or "Connection refused" in output, output
    exit_codes = [line for line in output.splitlines() if "rc=" in line]
    assert len(exit_codes) in (2, 3) and "rc=0" not in " ".join(exit_codes), output
    assert "<html" not in output.lower(), output


def test_without_bubblewrap_the_network_probe_connects(run_benchmark, serve) -> None:
    """The control for the test above: the probe does reach the server when unconfined."""
    with listening_server() as (port, received):
        ran = run_bad_command(run_benchmark, serve, socket_probe(port), "subprocess", 30)
    assert "CONNECTED b'hello from the host\\n'" in ran.bad_outputs[0], ran.bad_outputs[0]
    assert received == [b"agent"]
