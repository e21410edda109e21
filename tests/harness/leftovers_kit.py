"""Processes that try to outlive their command, and a host-wide check that none did.

`SCRIPT` (written into a sandbox's workspace as `leftovers.py`) starts one of:
- `leader`: a thread-group leader that leaves by a raw SYS_exit, so it shows state Z while
  its thread runs on, appending to `ticks-thread`;
- `daemon`: a double-forked daemon in a session of its own, appending to `ticks-daemon`;
- `stopped`: a child that appends to `ticks-stopped` and is SIGSTOPped by its parent.
Every process and thread is named MARK (`prctl(PR_SET_NAME)`), which `still_running`
looks for in the host's /proc (a sandbox's processes, Docker's included, are the host's).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

SCRIPT = r"""
import ctypes, os, signal, sys, threading, time

MARK, ROLE = sys.argv[1], sys.argv[2]
DELAY = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.prctl(15, MARK.encode(), 0, 0, 0)  # PR_SET_NAME: threads and children inherit it
SYS_EXIT = {"x86_64": 60, "aarch64": 93}[os.uname().machine]


def tick(path):
    time.sleep(DELAY)
    while True:
        with open(path, "a") as file:
            file.write("x\n")
        time.sleep(0.02)


if ROLE == "leader":
    threading.Thread(target=tick, args=("ticks-thread",)).start()
    with open("leader.pid", "w") as file:
        file.write(str(os.getpid()))
    LIBC.syscall(SYS_EXIT, 0)  # this thread alone leaves; the process shows Z
elif ROLE == "daemon":
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            tick("ticks-daemon")
        os._exit(0)
    os.wait()
elif ROLE == "stopped":
    child = os.fork()
    if child == 0:
        tick("ticks-stopped")
    time.sleep(0.1)
    os.kill(child, signal.SIGSTOP)
"""

# Starts all three and shows, while they run, that the leader is a zombie with a live thread.
START = (
    "python leftovers.py {mark} leader & python leftovers.py {mark} daemon; "
    "python leftovers.py {mark} stopped; sleep 0.3; "
    "echo leader-state $(cut -d' ' -f3 /proc/$(cat leader.pid)/stat) "
    "threads $(ls /proc/$(cat leader.pid)/task | wc -l); "
    "echo ticking $(cat ticks-thread ticks-daemon | wc -l)"
)


def new_mark() -> str:
    return f"cbleft{uuid.uuid4().hex[:8]}"  # a process name holds 15 bytes


def still_running(mark: str) -> list[int]:
    """Host pids with a live thread named `mark`."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            tasks = os.listdir(f"/proc/{name}/task")
        except OSError:
            continue
        for task in tasks:
            folder = Path(f"/proc/{name}/task/{task}")
            try:
                comm = (folder / "comm").read_text().strip()
                state = (folder / "stat").read_text().rpartition(")")[2].split()[0]
            except (OSError, IndexError):
                continue
            if comm == mark and state not in ("Z", "X"):
                found.append(int(name))
                break
    return found
