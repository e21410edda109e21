"""The bubblewrap command server: one namespace per agent sandbox, stateless per command,
replaced when it dies, and a fresh namespace for what it cannot run."""

from __future__ import annotations

import errno
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.sandbox import SandboxSettings, bubblewrap_works, cmdgroups, open_backend
from harness.sandbox.bubblewrap import unprivileged_user_available
from harness.sandbox.bwrap_server import CommandServer
from harness.sandbox.cmdclient import SERVER_SOURCE, run_served
from harness.sandbox.command import Command
from harness.sandbox.local import LocalSandbox
from tests.harness import leftovers_kit

pytestmark = pytest.mark.skipif(
    not (bubblewrap_works() and unprivileged_user_available()),
    reason="the command server needs bubblewrap, root and setpriv",
)

PID1 = "tr '\\0' ' ' < /proc/1/cmdline"


@pytest.fixture
def box(tmp_path: Path) -> Iterator[LocalSandbox]:
    prepared = tmp_path / "prepared"
    prepared.mkdir()
    (prepared / "a.py").write_text("x = 1\n")
    sandbox = open_backend("bubblewrap", SandboxSettings()).open(prepared, tmp_path / "box")
    assert isinstance(sandbox, LocalSandbox)
    yield sandbox
    sandbox.close()


def server_of(box: LocalSandbox) -> CommandServer:
    assert box.server is not None
    return box.server


def served(box: LocalSandbox, command: str) -> str:
    """Runs `command`, checking it ran under the command server."""
    done = box.run(f"{PID1}; echo; {command}", 10)
    first, _, rest = done.output.partition("\n")
    assert "/dev/fd/" in first and "setpriv" not in first, first  # the server's namespace
    return rest


def test_an_agent_sandbox_runs_its_commands_in_one_namespace(box: LocalSandbox) -> None:
    for _ in range(5):
        assert served(box, "id -u; pwd") == "65534\n/workspace\n"
    assert server_of(box).starts == 1


def test_nothing_of_a_command_reaches_the_next(box: LocalSandbox) -> None:
    leave = (
        "cd /tmp; export LEFT=1; umask 077; sleep 300 & "
        "mkdir -p /tmp/d/e /var/tmp/v && touch /tmp/d/e/f /tmp/.hidden && chmod 0 /tmp/d"
    )
    # /tmp holds nothing but the folders bubblewrap made to mount host paths kept under /tmp
    # (a checkout or venv there), which a command cannot write into.
    mount_points = served(box, "ls -A /tmp /var/tmp")
    served(box, leave)
    after = served(box, "pwd; echo LEFT=${LEFT:-}; umask; ls -A /tmp /var/tmp; ps -eo user,comm")
    lines = after.splitlines()
    assert lines[:3] == ["/workspace", "LEFT=", "0022"]
    listing = mount_points.splitlines()
    assert lines[3 : 3 + len(listing)] == listing  # nothing the command left
    assert "d" not in listing and ".hidden" not in listing and "v" not in listing
    users = [line.split()[0] for line in lines[4 + len(listing) :]]  # after the header of ps
    assert sorted(users) == ["nobody", "root", "root"], after  # init, server, ps (bash exec)
    assert "sleep" not in after
    assert server_of(box).starts == 1


def status_fields(text: str) -> dict[str, str]:
    return {k: v.strip() for k, _, v in (line.partition(":") for line in text.splitlines())}


def test_a_command_holds_no_privilege_and_nothing_of_the_server(box: LocalSandbox) -> None:
    # The server is root with SETUID, SETGID and KILL; what its commands inherit must be
    # what a fresh namespace per command gave them: nobody, no capability at all.
    fields = status_fields(served(box, "cat /proc/self/status"))
    assert fields["Uid"].split() == ["65534"] * 4 and fields["Gid"].split() == ["65534"] * 4
    assert fields["Groups"] == ""
    for capability in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
        assert int(fields[capability], 16) == 0, capability
    assert fields["NoNewPrivs"] == "1"
    ignored = int(fields["SigIgn"], 16)
    for number in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM):
        assert not ignored & (1 << (number - 1)), number  # Python ignores some; commands don't
    descriptors = served(box, "for fd in /proc/self/fd/*; do readlink $fd; done")
    assert "socket:" not in descriptors and "server.log" not in descriptors, descriptors
    assert len(descriptors.split()) <= 4, descriptors  # 0, 1, 2 and the listing's own
    size = box.jail.max_file_bytes // 1024
    assert served(box, "ulimit -f; ulimit -Hf; ulimit -f unlimited 2>/dev/null || echo kept") == (
        f"{size}\n{size}\nkept\n"
    )


def test_a_program_that_cannot_start_exits_127_with_one_line(box: LocalSandbox) -> None:
    done = box.execute(Command(["no-such-program"], timeout=10))
    assert done.exit_code == 127
    assert done.output.startswith("sandbox: cannot run ['no-such-program']:")
    assert done.output.count("\n") == 1
    assert served(box, "echo next") == "next\n"
    assert server_of(box).starts == 1


def test_the_server_refuses_to_run_a_command_as_root(box: LocalSandbox) -> None:
    server = server_of(box)
    served(box, "true")
    done = run_served(
        server.socket, Command(["id", "-u"], timeout=10), uid=0, cwd="/workspace",
        base_env={"PATH": "/usr/bin:/bin"}, file_bytes=1 << 20,
    ).completed  # fmt: skip
    assert done.exit_code == 127 and "unprivileged" in done.output


def test_the_agent_cannot_kill_the_server(box: LocalSandbox) -> None:
    for attack in ("kill -9 -1", "pkill -9 -f .", "kill -9 1 2", "killall5 -9"):
        box.run(attack, 10)
        assert served(box, "echo alive") == "alive\n", attack
    assert server_of(box).starts == 1


def test_a_command_that_signals_everything_as_it_starts_never_hits_the_server(
    box: LocalSandbox,
) -> None:
    # A command runs while its spawn returns: however soon it signals, the server's ids (of
    # its main thread, which signals are checked against) are root's again or still.
    for _ in range(40):
        box.execute(Command(["kill", "-9", "-1"], timeout=10))
        box.execute(Command(["pkill", "-9", "-f", "."], timeout=10))
    assert served(box, "echo alive") == "alive\n"
    assert server_of(box).starts == 1


def test_a_killed_server_is_replaced_and_the_next_command_runs(box: LocalSandbox) -> None:
    server = server_of(box)
    served(box, "true")
    pid = server.pid
    assert pid is not None
    os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while server.pid == pid and time.monotonic() < deadline:
        time.sleep(0.01)
    assert served(box, "echo again") == "again\n"
    assert server.starts == 2


def test_a_command_whose_server_dies_ends_killed_and_the_next_runs(box: LocalSandbox) -> None:
    server = server_of(box)
    served(box, "true")
    pid = server.pid
    assert pid is not None
    marker = box.host_workspace / "started"
    # The command tells the host it runs (through the workspace), then waits to be ended.
    command = "touch started; sleep 30; echo finished"

    def kill_when_started() -> None:
        deadline = time.monotonic() + 10
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        os.killpg(pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_when_started)
    killer.start()
    done = box.run(command, 20)
    killer.join()
    # ended with its server, not by its own timeout (20 s)
    assert done.exit_code == -9 and not done.timed_out and "finished" not in done.output
    assert served(box, "echo next") == "next\n"
    assert server.starts == 2


def test_state_the_server_cannot_clear_gets_a_fresh_namespace(box: LocalSandbox) -> None:
    served(box, "ipcmk -M 4096 >/dev/null")
    assert served(box, "ipcs -m | grep -c 0x || true") == "0\n"
    assert server_of(box).starts == 2


def test_read_only_commands_get_a_fresh_read_only_namespace(box: LocalSandbox) -> None:
    done = box.execute(
        Command(["sh", "-c", f"{PID1}; echo; touch b.py"], timeout=10, read_only=True)
    )
    assert "setpriv" in done.output and done.exit_code != 0
    assert not (box.host_workspace / "b.py").exists()
    assert served(box, "touch b.py; ls") == "a.py\nb.py\n"


def test_grading_sandboxes_use_no_server(tmp_path: Path) -> None:
    prepared = tmp_path / "prepared"
    prepared.mkdir()
    backend = open_backend("bubblewrap", SandboxSettings())
    sandbox = backend.open(prepared, tmp_path / "grade", track_changes=False)
    try:
        assert isinstance(sandbox, LocalSandbox) and sandbox.server is None
        assert "setpriv" in sandbox.run(PID1, 10).output
    finally:
        sandbox.close()


# -- what outlives a command (issue 16, finding 6) ------------------------------------------


def _leftovers(box: LocalSandbox) -> tuple[str, str]:
    """Starts the leftovers of `leftovers_kit` in `box`: (their name, the command's output)."""
    box.write("leftovers.py", leftovers_kit.SCRIPT)
    mark = leftovers_kit.new_mark()
    done = box.run(leftovers_kit.START.format(mark=mark), 60)
    assert "leader-state Z threads 2" in done.output, done.output  # the attack took place
    return mark, done.output


def _ticks(box: LocalSandbox) -> int:
    return sum(len(path.read_bytes()) for path in box.host_workspace.glob("ticks-*"))


@pytest.mark.skipif(cmdgroups.unavailable_reason() is not None, reason="no cgroup v2 here")
def test_each_command_runs_and_ends_in_a_cgroup_of_its_own(box: LocalSandbox) -> None:
    server = server_of(box)
    assert server.groups is not None
    home = server.groups.home
    inside = served(box, "cat /proc/self/cgroup | grep '^0::'")
    assert inside.strip().startswith("0::/") and "/cmd-" in inside  # the server's view
    mark, _ = _leftovers(box)
    assert server.ended_by == "cgroup" and server.starts == 1  # no reset was needed
    assert leftovers_kit.still_running(mark) == []
    assert not [child for child in home.iterdir() if child.name.startswith("cmd-")]
    box.close()
    assert not (server.groups.owned and home.exists())


def test_without_a_cgroup_the_namespace_sweep_ends_zombie_leaders_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def unavailable(*_: object, **__: object) -> cmdgroups.CommandGroups:
        raise OSError(errno.ENOTSUP, "no cgroup v2 (test)")

    monkeypatch.setattr(cmdgroups.CommandGroups, "create", unavailable)
    monkeypatch.setattr(cmdgroups.CommandGroups, "inside", unavailable)
    prepared = tmp_path / "prepared"
    prepared.mkdir()
    with caplog.at_level(logging.WARNING, logger="harness.sandbox.cmdgroups"):
        box = open_backend("bubblewrap", SandboxSettings()).open(prepared, tmp_path / "box")
    assert isinstance(box, LocalSandbox)
    try:
        assert server_of(box).groups is None
        assert cmdgroups.KILL_FALLBACK_WARNING in caplog.text  # never silent
        mark, _ = _leftovers(box)
        assert server_of(box).ended_by == "namespace sweep"
        assert leftovers_kit.still_running(mark) == []
        before = _ticks(box)
        time.sleep(0.3)
        assert _ticks(box) == before
    finally:
        box.close()


@pytest.mark.parametrize("given", ["host", "none", "init"])
def test_the_server_refuses_to_start_outside_a_pid_namespace_of_its_own(
    tmp_path: Path, given: str
) -> None:
    """Run on the host, the server's sweep would kill the host's processes: it refuses, and a
    process of `nobody` on the host lives on."""
    canary = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                               "sleep", "60"])  # fmt: skip
    try:
        host = os.readlink("/proc/self/ns/pid")
        if given == "init" and host != f"pid:[{0xEFFFFFFC}]":
            pytest.skip("the harness is not in the host's first PID namespace")
        launcher = {"host": host, "none": "", "init": "pid:[1]"}[given]
        argv = [sys.executable, "-I", "-c", SERVER_SOURCE, str(tmp_path / "sock"), "", launcher]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("cmdserver: refusing to start:"), done.stderr
        assert not (tmp_path / "sock").exists()
        assert canary.poll() is None
    finally:
        canary.kill()
        canary.wait()
