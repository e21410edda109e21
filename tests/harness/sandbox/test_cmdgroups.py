"""Per-command cgroups (cgroup v2): what they hold dies with them, zombie leaders included."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.sandbox import cmdgroups
from tests.harness import leftovers_kit

pytestmark = pytest.mark.skipif(
    cmdgroups.unavailable_reason() is not None,
    reason=f"no per-command cgroups here: {cmdgroups.unavailable_reason()}",
)


@pytest.fixture
def groups() -> Iterator[cmdgroups.CommandGroups]:
    made = cmdgroups.CommandGroups.create()
    yield made
    made.close()


def _start_in(folder: Path, workdir: Path, role: str, mark: str) -> subprocess.Popen[bytes]:
    """A leftovers role started inside `folder` (it joins before it execs)."""
    script_file = workdir / "leftovers.py"
    if not script_file.exists():  # rewriting it could cut it under a role still reading it
        script_file.write_text(leftovers_kit.SCRIPT)
    script = 'echo $$ > "$1" && shift && exec "$@"'
    argv = ["sh", "-c", script, "sh", str(folder / "cgroup.procs"),
            sys.executable, "leftovers.py", mark, role]  # fmt: skip
    return subprocess.Popen(argv, cwd=workdir)


def _wait_for(mark: str, count: int) -> None:
    deadline = time.monotonic() + 30
    while len(leftovers_kit.still_running(mark)) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(leftovers_kit.still_running(mark)) >= count  # passing forks may add some


def test_a_command_group_ends_a_zombie_leader_whose_thread_runs_on(
    groups: cmdgroups.CommandGroups, tmp_path: Path
) -> None:
    group = groups.command()
    mark = leftovers_kit.new_mark()
    leader = _start_in(group.folder, tmp_path, "leader", mark)
    _wait_for(mark, 1)
    pid = int((tmp_path / "leader.pid").read_text())
    assert (Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]) == "Z"
    assert group.end() is True
    assert leftovers_kit.still_running(mark) == []
    assert not group.folder.exists()
    leader.wait(10)


def test_closing_the_home_ends_what_any_command_left_and_removes_it(
    tmp_path: Path,
) -> None:
    groups = cmdgroups.CommandGroups.create()
    first, second = groups.command(), groups.command()
    mark = leftovers_kit.new_mark()
    started = [_start_in(first.folder, tmp_path, "daemon", mark),
               _start_in(second.folder, tmp_path, "leader", mark),
               _start_in(groups.home, tmp_path, "stopped", mark)]  # fmt: skip
    _wait_for(mark, 3)
    assert groups.close() is True
    assert leftovers_kit.still_running(mark) == []
    assert not groups.home.exists()
    for process in started:
        process.wait(10)


def test_the_homes_of_dead_harnesses_are_swept(tmp_path: Path) -> None:
    # A folder of its own: a sweep by another test worker would take the dead home first.
    outer = cmdgroups.CommandGroups.create(f"tests-{uuid.uuid4().hex[:12]}")
    parent = outer.home
    home = parent / f"sandbox-{_unused_pid()}-deadbeef0000"
    home.mkdir()
    alive = parent / f"sandbox-{os.getpid()}-0000deadbeef"
    alive.mkdir()
    try:
        group = cmdgroups.CommandGroups(home, owned=True).command()
        mark = leftovers_kit.new_mark()
        left = _start_in(group.folder, tmp_path, "leader", mark)
        _wait_for(mark, 1)
        assert cmdgroups.sweep_stale_homes(parent) == 1
        assert not home.exists()
        assert alive.exists()  # its harness (this process) still runs
        assert leftovers_kit.still_running(mark) == []
        left.wait(10)
    finally:
        for folder in (home, alive):
            with contextlib.suppress(OSError):
                folder.rmdir()
        outer.close()


def _unused_pid() -> int:
    limit = int(Path("/proc/sys/kernel/pid_max").read_text())
    pid = limit - 1
    while Path(f"/proc/{pid}").exists():
        pid -= 1
    return pid


def test_the_server_moves_itself_with_the_descriptors_it_is_given(
    groups: cmdgroups.CommandGroups,
) -> None:
    """What the command server does per spawn, from the harness's descriptors alone: in,
    out again, and the group's listing shows only what was born inside."""
    group = groups.command()
    original = cmdgroups.v2_folder_of("self")
    assert original is not None
    try:
        os.write(group.fds["cg_procs"], b"0")
        child = subprocess.Popen(["sleep", "30"])
        os.write(group.fds["cg_home"], b"0")
        assert cmdgroups.v2_folder_of("self") == groups.home
    finally:
        (original / "cgroup.procs").write_text("0")  # the home dies at close: not with us
    listed = os.pread(group.fds["cg_list"], 4096, 0).split()
    assert listed == [str(child.pid).encode()]
    assert group.end() is True
    assert child.wait(10) == -9
