"""The host side of the command server (`cmdserver.py`): one command, start to finish.

The host makes the pipes (output, stdin, report), passes the command's ends to the server
over its Unix socket, and reads its own ends with `process.collect`, the same loop that
reads a local subprocess: output caps, head-and-tail keeping, timeouts and the
append-only report behave identically. Killing the command is one byte (`K`) on the
connection; the server then kills the command's cgroup (`cmdgroups.py`) or, without one,
every other process of the sandbox's PID namespace. With a cgroup the host kills it again
once the command is over, whatever the server did (it may have died), and removes it.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from harness.sandbox.cmdgroups import CommandGroup
from harness.sandbox.command import Command
from harness.sandbox.process import (
    REPORT_PLACEHOLDER,
    Completed,
    collect,
    feed,
)

SERVER_SOURCE = (Path(__file__).parent / "cmdserver.py").read_text()
REPORT_FD = 3
KILL_WAIT_S = 10.0


class ServerGone(ConnectionError):
    """The command server did not answer (killed, or its sandbox is gone)."""


class ServedCommand:
    """A command running under the server, shaped like `subprocess.Popen` for `collect`."""

    def __init__(self, conn: socket.socket, stdout: int) -> None:
        self.conn = conn
        self.stdout: IO[bytes] | None = os.fdopen(stdout, "rb", buffering=0)
        self.returncode: int | None = None
        self.reply: dict = {}
        self.lost = False  # the server hung up without an answer
        self._buffer = b""
        conn.setblocking(False)

    def _take(self, data: bytes) -> None:
        if not data:
            self.lost = True
            self.returncode = -9
            return
        self._buffer += data
        if b"\n" in self._buffer:
            line, _, _ = self._buffer.partition(b"\n")
            self.reply = json.loads(line)
            self.returncode = self.reply["exit"]

    def poll(self) -> int | None:
        while self.returncode is None:
            try:
                data = self.conn.recv(4096)
            except BlockingIOError:
                return None
            except OSError:
                data = b""
            self._take(data)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            left = KILL_WAIT_S if deadline is None else deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired("served command", timeout or 0)
            self.conn.settimeout(min(left, 0.5))
            try:
                self._take(self.conn.recv(4096))
            except TimeoutError:
                pass
            except OSError:
                self._take(b"")
            finally:
                self.conn.setblocking(False)
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        """Asks the server to kill the command and everything it started."""
        if self.returncode is None:
            with contextlib.suppress(OSError):
                self.conn.send(b"K")


@dataclass
class ServedResult:
    completed: Completed
    workspace_free: int | None  # bytes left on the workspace after the command, if known
    lost: bool  # the server went away during the command
    reset: bool = False  # the sandbox kept state the server could not clear: start afresh
    ended_by: str | None = None  # how leftovers were ended: "cgroup" or "namespace sweep"


def _send(conn: socket.socket, header: dict, fds: Sequence[int]) -> None:
    body = json.dumps(header).encode()
    data = struct.pack(">I", len(body)) + body
    rights = (socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))
    sent = conn.sendmsg([data[:4]], [rights])
    if sent != 4:
        raise ServerGone("short write to the command server")
    conn.sendall(data[4:])


def run_served(
    socket_path: Path,
    command: Command,
    *,
    uid: int,
    cwd: str,
    base_env: Mapping[str, str],
    file_bytes: int,
    group: CommandGroup | None = None,
) -> ServedResult:
    """Runs `command` through the server at `socket_path` in `cwd`, as `uid`, with
    `base_env` and the command's own variables; `ServerGone` if it cannot be reached.

    With `report`, REPORT_PLACEHOLDER in argv becomes `/dev/fd/3`, the write end of a pipe
    the harness drains (owned by `uid`, so the command can reopen it by that name). With
    `group`, the command is born in that cgroup, and it is ended (`CommandGroup.end`) before
    this returns: a group that cannot be emptied sets `reset`."""
    start = time.monotonic()
    argv, stdin = list(command.argv), command.stdin
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(socket_path))
    except OSError as error:
        conn.close()
        raise ServerGone(f"command server unreachable: {error}") from None
    ours: list[int] = []  # our ends, closed when done
    theirs: dict[str, int] = {}  # ends for the command, closed once sent
    try:
        out_read, theirs["out"] = os.pipe()
        stdin_write = report_read = None
        if stdin is not None:
            theirs["in"], stdin_write = os.pipe()
        if command.report:
            report_read, theirs["report"] = os.pipe()
            os.fchown(theirs["report"], uid, uid)
            ours.append(report_read)
            argv = [a.replace(REPORT_PLACEHOLDER, f"/dev/fd/{REPORT_FD}") for a in argv]
        lent = {} if group is None else dict(group.fds)  # the group's: it closes them
        header = {
            "argv": argv, "env": dict(base_env) | dict(command.env), "cwd": cwd, "uid": uid,
            "fsize": file_bytes, "fds": [*theirs, *lent],
        }  # fmt: skip
        try:
            _send(conn, header, [*theirs.values(), *lent.values()])
        except OSError as error:
            os.close(out_read)
            if stdin_write is not None:
                os.close(stdin_write)
            raise ServerGone(f"command server unreachable: {error}") from None
        finally:
            for fd in theirs.values():
                os.close(fd)
            theirs.clear()
        child = ServedCommand(conn, out_read)
        if stdin_write is not None and stdin is not None:
            feed(os.fdopen(stdin_write, "wb", buffering=0), stdin)
        done = collect(
            child, child.kill, start, command.timeout, command.keep_bytes,
            command.max_output_bytes, report_read, command.errors,
        )  # fmt: skip
        free = child.reply.get("workspace_free")
        ended = group is None or group.end()
        ended_by = child.reply.get("ended_by")
        return ServedResult(
            done,
            free if isinstance(free, int) and free >= 0 else None,
            child.lost,
            reset=child.reply.get("reset") is True or not ended,
            ended_by=ended_by if isinstance(ended_by, str) else None,
        )
    finally:
        if group is not None:
            group.end()  # a second call does nothing; here for the paths that raised
        for fd in [*ours, *theirs.values()]:
            with contextlib.suppress(OSError):
                os.close(fd)
        conn.close()
