"""run_process: exit codes, timeouts and output limits that kill whole process groups."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from harness.sandbox import process
from harness.sandbox.process import (
    KEEP_BYTES,
    MAX_OUTPUT_BYTES,
    Completed,
    kill_running_commands,
    run_process,
)

ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}


def alive(pid: int) -> bool:
    """A process that exists and is not a zombie (an unreaped corpse is dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def wait_dead(pids: list[int], within_s: float = 2.0) -> list[int]:
    """The pids still alive after `within_s` seconds."""
    deadline = time.monotonic() + within_s
    while True:
        living = [pid for pid in pids if alive(pid)]
        if not living or time.monotonic() > deadline:
            return living
        time.sleep(0.02)


def kill_quietly(pids: list[int]) -> None:
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def bash(
    command: str,
    cwd: Path,
    timeout: float = 10.0,
    keep_bytes: int = KEEP_BYTES,
    max_output_bytes: int = MAX_OUTPUT_BYTES,
) -> Completed:
    return run_process(
        ["bash", "-c", command],
        cwd=cwd,
        env=ENV,
        timeout=timeout,
        keep_bytes=keep_bytes,
        max_output_bytes=max_output_bytes,
    )


@pytest.mark.parametrize("code", [0, 1, 3, 42])
def test_exit_code_is_reported(tmp_path: Path, code: int) -> None:
    done = bash(f"echo out; echo err >&2; exit {code}", tmp_path)
    assert done.exit_code == code
    assert done.ok is (code == 0)
    assert done.output == "out\nerr\n"
    assert not done.timed_out
    assert not done.output_limit_hit
    assert done.omitted_bytes == 0


def test_runs_in_cwd_with_only_the_given_environment(tmp_path: Path) -> None:
    done = run_process(
        ["bash", "-c", "pwd; echo ${SECRET:-unset}; echo $ONLY"],
        cwd=tmp_path,
        env={**ENV, "ONLY": "given"},
        timeout=10,
    )
    assert done.output.splitlines() == [str(tmp_path), "unset", "given"]


def test_stdin_is_closed(tmp_path: Path) -> None:
    done = bash("cat; echo after", tmp_path, timeout=5)
    assert done.exit_code == 0
    assert done.output == "after\n"
    assert not done.timed_out  # with stdin open, `cat` would wait for its timeout


def test_killed_by_signal_reports_negative_code(tmp_path: Path) -> None:
    done = bash("kill -TERM $$", tmp_path)
    assert done.exit_code == -signal.SIGTERM
    assert not done.timed_out


def test_timeout_kills_the_whole_group_including_background_children(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    started = time.monotonic()
    done = bash(
        f"sleep 100 & echo $! >> {pids}; sleep 100 & echo $! >> {pids}; wait",
        tmp_path,
        timeout=0.5,
    )
    elapsed = time.monotonic() - started
    children = [int(line) for line in pids.read_text().split()]
    try:
        assert done.timed_out
        assert done.exit_code is None
        assert not done.ok
        assert elapsed >= 0.4  # not ended early (a lower bound: load cannot break it)
        assert len(children) == 2
        assert wait_dead(children) == []
    finally:
        kill_quietly(children)


def test_background_children_die_when_the_command_exits(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    done = bash(f"sleep 100 >/dev/null 2>&1 & echo $! > {pids}; echo parent done", tmp_path)
    children = [int(pids.read_text())]
    try:
        assert done.exit_code == 0
        assert done.output == "parent done\n"
        assert wait_dead(children) == []
    finally:
        kill_quietly(children)


def test_endless_output_is_killed_by_the_output_limit(tmp_path: Path) -> None:
    done = bash("yes", tmp_path, timeout=20, keep_bytes=64, max_output_bytes=100_000)
    assert done.output_limit_hit
    assert not done.timed_out  # ended by the limit, well before its timeout
    assert done.exit_code is None
    assert done.omitted_bytes > 100_000 - 128
    head, marker, tail = done.output.partition(f"\n[... {done.omitted_bytes} bytes of output")
    assert marker, done.output[:300]
    assert head == "y\n" * 32  # the first 64 bytes, untouched
    assert tail.endswith(" omitted ...]\n" + "y\n" * 32)  # and the last 64


def test_long_but_bounded_output_keeps_head_and_tail(tmp_path: Path) -> None:
    done = bash("seq 1 10000", tmp_path, keep_bytes=20)
    total = len("".join(f"{n}\n" for n in range(1, 10001)))
    assert done.exit_code == 0
    assert not done.output_limit_hit
    assert done.omitted_bytes == total - 40
    head = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10"  # the first 20 bytes
    tail = "997\n9998\n9999\n10000\n"  # the last 20 bytes
    assert done.output == f"{head}\n[... {total - 40} bytes of output omitted ...]\n{tail}"


def test_short_output_has_no_marker(tmp_path: Path) -> None:
    done = bash("printf 'abc'", tmp_path, keep_bytes=2)
    assert done.omitted_bytes == 0
    assert done.output == "abc"


def test_daemon_holding_stdout_does_not_hang_the_call(tmp_path: Path) -> None:
    pid_file = tmp_path / "daemon.pid"
    done = bash(f"setsid sleep 60 & echo $! > {pid_file}; echo launched", tmp_path, timeout=30)
    daemon = int(pid_file.read_text())
    try:  # a call waiting for the daemon's stdout would end by its timeout (30 s < 60 s)
        assert done.exit_code == 0
        assert not done.timed_out
        assert done.output == "launched\n"
    finally:
        kill_quietly([daemon])
    assert wait_dead([daemon]) == []


def test_invalid_utf8_is_replaced_not_fatal(tmp_path: Path) -> None:
    done = bash(r"printf 'ok \xff\xfe end'", tmp_path)
    assert done.exit_code == 0
    assert done.output == "ok \ufffd\ufffd end"


def test_kill_running_commands_ends_commands_in_flight(tmp_path: Path) -> None:
    results: list[Completed] = []
    pids = tmp_path / "pids"
    worker = threading.Thread(
        target=lambda: results.append(
            bash(f"sleep 100 & echo $! > {pids}; wait", tmp_path, timeout=60)
        )
    )
    worker.start()
    deadline = time.monotonic() + 30
    # in flight: its pid file written and its group registered (the child can write the file
    # before the thread that started it has registered it, on a loaded machine)
    while not (pids.exists() and pids.read_text().strip() and process._running):
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.01)
    child = int(pids.read_text())
    try:
        kill_running_commands()
        worker.join(timeout=5)
        assert not worker.is_alive()  # the command (timeout 60 s) was ended, not waited for
        (done,) = results
        assert done.exit_code == -signal.SIGKILL
        assert not done.timed_out
        assert wait_dead([child]) == []
    finally:
        kill_quietly([child])


def test_kill_running_commands_with_nothing_running() -> None:
    kill_running_commands()  # harmless
