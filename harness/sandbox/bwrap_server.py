"""A bubblewrap namespace kept alive for an agent's sandbox, with the command server inside.

Building a namespace costs milliseconds per command (a bare `bwrap true` is ~3.5 ms on a
quiet machine, three times that under load). An agent's sandbox instead starts one
bubblewrap namespace, built from the same options, with `cmdserver.py` in it, and each
command is spawned by that server (`posix_spawn`, see `cmdserver.py`).

Each command is confined as a fresh namespace would confine it:
- the same mounts, hidden paths, namespaces and seccomp filter: bubblewrap installs the
  filter on the server, so every process it starts carries it;
- the sandbox user `nobody`, groups cleared, no capabilities, no_new_privs, the file size
  limit and OOM score 1000, inherited from the server, which confines itself at start;
- the sandbox's cgroup: the namespace is started inside it, server and all;
- stateless: each command starts in /workspace with the scrubbed environment it is given;
  when it ends, times out or prints too much, everything it started is killed (as the end
  of its own PID namespace did) and /tmp and /var/tmp are emptied;
- its own cgroup: the namespace lives in the sandbox's cgroup v2 folder (`cmdgroups.py`)
  and each command is born in a child of it, killed by `cgroup.kill` at the command's end,
  whatever its processes' state (a zombie leader with live threads, stopped, in new
  sessions); the sandbox's close kills the whole folder. Where no v2 folder can be made
  the server sweeps the namespace instead, and a warning says so.

The server listens on a socket the host bound in the sandbox's host folder (mode 0700) and
passed down as a descriptor: no path inside the sandbox leads to it, and the commands,
which never run as root, can neither signal nor trace it. If it dies all the same (the OOM
killer, a bug), the next command finds the socket refusing and runs in a fresh namespace
started on the spot; a command during which it died ends as killed (exit -9). A server
that reports state it could not clear (`reset`: a process that outlived every kill, a
folder it could not empty, a System V IPC object) is replaced before the next command.
After `MAX_START_FAILURES` starts in a row that never served, the sandbox goes back to a
fresh bubblewrap per command.

What a fresh bubblewrap per command still runs (`LocalSandbox.execute` falls back):
read-only commands (the namespace's workspace is writable), commands that see the
baseline (the diff), grading sandboxes (two or three commands: a server costs more than it
saves), and every command where the harness is not root (a server sharing the commands'
uid would be theirs to kill).

What differs from a namespace per command: `/proc` shows the server and bubblewrap's init
(both root) besides the command, and POSIX message queues (`mq_open`) live as long as the
namespace, not the command.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from harness.sandbox import cmdgroups
from harness.sandbox.bubblewrap import BubblewrapJail, Mount, scrubbed_env
from harness.sandbox.cmdclient import SERVER_SOURCE, ServerGone, run_served
from harness.sandbox.command import Command
from harness.sandbox.limits import SandboxCgroup
from harness.sandbox.process import Completed
from harness.sandbox.pythons import sandbox_python

FRESH_FOLDERS = ("/tmp", "/var/tmp")  # emptied after every command
START_TIMEOUT_S = 30.0  # Python's start-up on a loaded machine can take a while
MAX_START_FAILURES = 3
READY = b"ready\n"


class CommandServer:
    """The long-lived namespace of one sandbox and the command server in it."""

    def __init__(
        self,
        jail: BubblewrapJail,
        workspace: Path,
        control: Path,
        cgroup: SandboxCgroup | None,
    ) -> None:
        if jail.uid is None:
            raise ValueError("a command server needs an unprivileged sandbox user")
        self.jail = jail
        self.uid = jail.uid
        self.workspace = workspace
        self.root = jail.workspace_path(workspace)
        self.cgroup = cgroup
        v2 = cgroup.memory_dir if cgroup is not None and cgroup.version == 2 else None
        self.groups = cmdgroups.for_sandbox(v2)
        self.ended_by: str | None = None  # how the last command's leftovers were ended
        self.starts = 0  # namespaces started so far
        self._proc: subprocess.Popen[bytes] | None = None
        self._ready = False
        self._failures = 0  # starts in a row that never served a command
        self._closed = False
        self._lock = threading.Lock()
        control.mkdir(mode=0o700)
        os.chmod(control, 0o700)
        self.control = control
        # Socket paths are limited to 108 bytes; a scratch folder's may be longer.
        self._control_fd: int | None = os.open(control, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        self.socket = Path(f"/proc/self/fd/{self._control_fd}/sock")

    @property
    def pid(self) -> int | None:
        """The host pid of the running namespace's outer bubblewrap, if one runs."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def start(self) -> None:
        """Starts the namespace now (it gets ready while the caller does other work)."""
        with self._lock:
            if self._proc is None and not self._closed:
                self._start()

    def _start(self) -> None:
        self.socket.unlink(missing_ok=True)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(str(self.socket))
            listener.listen(64)
            source = _pipe_holding(SERVER_SOURCE.encode())  # keeps /proc/1/cmdline short
            python = (
                sys.executable
                if self.jail.python_env is None
                else sandbox_python(self.jail.python_env)
            )
            server = [python, "-I", "-S", f"/dev/fd/{source}", f"fd:{listener.fileno()}"]
            mounts = [Mount(self.workspace, self.root, writable=True)]
            namespace = os.readlink("/proc/self/ns/pid")  # the server refuses to run in it
            argv = [*server, "", namespace, *FRESH_FOLDERS]  # "": bubblewrap's filter covers all
            wrapped = self.jail.wrap_server(argv, mounts, cwd=self.root)
            wrapped.pass_fds += [source, listener.fileno()]
            if self.cgroup is not None:
                wrapped.argv = self.cgroup.wrap(wrapped.argv)
            if self.groups is not None and self.groups.owned:
                wrapped.argv = self.groups.join_argv(wrapped.argv)
            try:
                with open(self.control / "server.log", "ab") as log:
                    self._proc = subprocess.Popen(
                        wrapped.argv,
                        cwd="/",
                        env=scrubbed_env("/tmp", self.jail.python_env),
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE,
                        stderr=log,
                        start_new_session=True,
                        pass_fds=wrapped.pass_fds,
                    )
            finally:
                wrapped.pass_fds.remove(listener.fileno())  # closed below, as a socket
                wrapped.close()
        finally:
            listener.close()  # the server holds it now: when the server dies, it refuses
        self._ready = False
        self.starts += 1

    def _wait_ready(self) -> bool:
        """Waits for the server's `ready` line; False if it exits or is too slow."""
        proc = self._proc
        if proc is None or proc.stdout is None:
            return False
        if self._ready:
            return True
        deadline = time.monotonic() + START_TIMEOUT_S
        line = b""
        descriptor = proc.stdout.fileno()
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([descriptor], [], [], left)[0]:
                return False
            chunk = os.read(descriptor, len(READY))
            if not chunk:
                return False
            line += chunk
        self._ready = line == READY
        return self._ready

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        self._ready = False
        if proc is None:
            return
        # Killing the outer bubblewrap kills its init (--die-with-parent), and the end of
        # the PID namespace kills everything in it.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
        if proc.stdout is not None:
            proc.stdout.close()

    def _ensure_ready(self) -> bool:
        """A ready server, started if need be; False when none can run (fall back)."""
        with self._lock:
            while not self._closed and self._failures < MAX_START_FAILURES:
                if self._proc is None or self._proc.poll() is not None:
                    self._stop()
                    self._start()
                if self._wait_ready():
                    return True
                self._failures += 1
                self._stop()
            return False

    def run(self, command: Command) -> Completed | None:
        """Runs `command` in the workspace through the server (its `read_only` and `baseline`
        are the caller's to refuse: the server's workspace is writable, without the
        baseline); None when no server can run it (the caller then runs it in a fresh
        namespace)."""
        for _ in range(2):  # a server found dead is replaced once, then the command falls back
            if not self._ensure_ready():
                return None
            group = self._command_group()
            try:
                served = run_served(
                    self.socket,
                    command,
                    uid=self.uid,
                    cwd=self.root,
                    base_env=scrubbed_env("/tmp", self.jail.python_env),
                    file_bytes=self.jail.max_file_bytes,
                    group=group,
                )
            except ServerGone:  # it died between commands: nothing of this one ran
                with self._lock:
                    self._stop()
                continue
            with self._lock:
                self._failures = 0
                self.ended_by = served.ended_by
                if served.lost or served.reset:
                    self._stop()
            return served.completed
        return None

    def _command_group(self) -> cmdgroups.CommandGroup | None:
        if self.groups is None:
            return None
        try:
            return self.groups.command()
        except OSError as error:
            cmdgroups.log.warning("no cgroup for this command (%s): the server sweeps", error)
            return None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._stop()
            if self.groups is not None:
                self.groups.close()  # the attempt's end: whatever is left in its cgroup dies
            if self._control_fd is not None:
                with contextlib.suppress(OSError):
                    os.close(self._control_fd)
                self._control_fd = None


def _pipe_holding(data: bytes) -> int:
    """The read end of a pipe that holds `data` and then ends."""
    read_end, write_end = os.pipe()
    try:
        if len(data) > 60_000:  # a pipe holds 64 KiB; more would block this write
            raise ValueError("command server source too long for a pipe")
        os.write(write_end, data)
    finally:
        os.close(write_end)
    return read_end
