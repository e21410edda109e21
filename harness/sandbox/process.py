"""Run one command to completion, however badly it behaves.

The command gets its own session (process group); on timeout, on too much
output, and after it exits, the whole group is killed, so background children
do not outlive it. Output is merged, and only its head and tail are kept.
Confinement (what the command can see) is the caller's business: see
`bubblewrap.py`.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

KEEP_BYTES = 16 * 1024  # kept from each end of the output
MAX_OUTPUT_BYTES = 64 * 1024 * 1024  # beyond this the command is killed
EXIT_GRACE_S = 0.2  # how long to drain a pipe still held open by a stray child

_running: set[int] = set()  # process groups of commands in flight, for an interrupted run
_running_lock = threading.Lock()


REPORT_PLACEHOLDER = "{report}"  # in argv: a path whose writes stream back as `report`


@dataclass(frozen=True)
class Completed:
    exit_code: int | None  # None when the command was killed
    output: str
    duration_s: float
    timed_out: bool = False
    output_limit_hit: bool = False
    omitted_bytes: int = 0
    output_bytes: int = 0  # how many bytes the command printed in all
    report: bytes | None = None  # what the command wrote to its report path, in order

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


class _HeadTail:
    """Keeps the first and last `keep` bytes of a stream."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.keep - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            del self.tail[: max(0, len(self.tail) - self.keep)]

    @property
    def omitted(self) -> int:
        return self.total - len(self.head) - len(self.tail)

    def text(self, errors: str = "replace") -> str:
        middle = f"\n[... {self.omitted} bytes of output omitted ...]\n" if self.omitted else ""
        decode = lambda b: bytes(b).decode("utf-8", errors=errors)  # noqa: E731
        return decode(self.head) + middle + decode(self.tail)


class Child(Protocol):
    """A started command as `collect` needs it: `subprocess.Popen`, or one started by a
    command server (`cmdclient.py`)."""

    stdout: IO[bytes] | None

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    keep_bytes: int = KEEP_BYTES,
    max_output_bytes: int = MAX_OUTPUT_BYTES,
    report: bool = False,
    stdin: bytes | None = None,
    pass_fds: Sequence[int] = (),
    errors: str = "replace",
    report_owner: int | None = None,
) -> Completed:
    """Runs `argv`. With `report`, each REPORT_PLACEHOLDER in it becomes a path to a pipe
    the harness drains: what is written there can be appended to, never rewritten.
    `stdin` is fed to the command; `pass_fds` stay open in it; `errors` decodes the output
    ("surrogateescape" keeps every byte); `report_owner` is the uid that opens the report
    path (a command that switches user must own the pipe to reopen it)."""
    start = time.monotonic()
    report_read, report_write = os.pipe() if report else (None, None)
    if report_write is not None and report_owner is not None:
        os.fchown(report_write, report_owner, report_owner)
    if report_write is not None:
        argv = [arg.replace(REPORT_PLACEHOLDER, f"/dev/fd/{report_write}") for arg in argv]
    try:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=(*pass_fds, *(() if report_write is None else (report_write,))),
        )
    finally:
        if report_write is not None:
            os.close(report_write)  # the child holds it now; EOF comes when the child is gone
    with _running_lock:
        _running.add(proc.pid)
    if stdin is not None:
        _feed(proc, stdin)
    try:
        kill = lambda: _kill_group(proc)  # noqa: E731
        return collect(
            proc, kill, start, timeout, keep_bytes, max_output_bytes, report_read, errors
        )
    finally:
        _kill_group(proc)
        if report_read is not None:
            os.close(report_read)
        with _running_lock:
            _running.discard(proc.pid)


def _feed(proc: subprocess.Popen[bytes], data: bytes) -> None:
    assert proc.stdin is not None
    feed(proc.stdin, data)


def feed(stdin: IO[bytes], data: bytes) -> None:
    """Writes `data` to a command's stdin from a thread, so a command that does not read
    it (or reads it slowly) cannot block the harness."""

    def write() -> None:
        with contextlib.suppress(OSError):
            stdin.write(data)
        with contextlib.suppress(OSError):
            stdin.close()

    threading.Thread(target=write, daemon=True, name="stdin").start()


def kill_running_commands() -> None:
    """Kills every command still running (their whole process groups)."""
    with _running_lock:
        groups = list(_running)
    for group in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)


def collect(
    proc: Child,
    kill: Callable[[], None],
    start: float,
    timeout: float,
    keep_bytes: int,
    max_output_bytes: int,
    report_fd: int | None,
    errors: str,
) -> Completed:
    assert proc.stdout is not None
    buffer = _HeadTail(keep_bytes)
    report = bytearray()
    sinks: dict[int, Callable[[bytes], None]] = {proc.stdout.fileno(): buffer.add}
    if report_fd is not None:
        sinks[report_fd] = report.extend
    timed_out = limit_hit = eof = False
    exited_at: float | None = None
    with selectors.DefaultSelector() as selector:
        for fd in sinks:
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ)
        while True:
            now = time.monotonic()
            remaining = timeout - (now - start)
            if exited_at is None and proc.poll() is not None:
                exited_at = now
                kill()  # stray background children die with their parent
            if exited_at is not None and (eof or now - exited_at > EXIT_GRACE_S):
                break
            if exited_at is None and remaining <= 0:
                timed_out = True
                break
            if eof:  # output closed, process still running
                _wait_quietly(proc, min(remaining, 0.5))
                continue
            wait = EXIT_GRACE_S if exited_at is not None else min(0.5, remaining)
            for key, _ in selector.select(max(wait, 0.0)):
                chunk = _read_available(key.fd)
                if chunk is None:
                    selector.unregister(key.fd)
                else:
                    sinks[key.fd](chunk)
            eof = not selector.get_map()
            if buffer.total + len(report) > max_output_bytes:
                limit_hit = True
                break
    kill()
    proc.stdout.close()
    exit_code = proc.wait()
    killed = timed_out or limit_hit
    return Completed(
        exit_code=None if killed else exit_code,
        output=buffer.text(errors),
        duration_s=time.monotonic() - start,
        timed_out=timed_out,
        output_limit_hit=limit_hit,
        omitted_bytes=buffer.omitted,
        output_bytes=buffer.total,
        report=bytes(report) if report_fd is not None else None,
    )


def _wait_quietly(proc: Child, seconds: float) -> None:
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=max(seconds, 0.0))


def _read_available(fd: int) -> bytes | None:
    """Reads what the pipe holds now; None at end of file."""
    try:
        chunk = os.read(fd, 1 << 16)
    except BlockingIOError:
        return b""
    return chunk or None
