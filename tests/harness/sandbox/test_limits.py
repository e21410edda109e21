"""Resource limits with real processes: fork storms, memory hogs, full workspaces, cleanup."""

from __future__ import annotations

import errno
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from harness.sandbox import cmdgroups
from harness.sandbox.limits import (
    CgroupError,
    Parents,
    ResourceLimits,
    SandboxCgroup,
    cgroups_available,
    cgroups_unavailable_reason,
    describe_bytes,
    find_layout,
    oom_victim_argv,
    prlimit_argv,
)
from harness.sandbox.mounts import disk_full, disk_usage, mount_workspace_tmpfs, unmount
from tests.harness import leftovers_kit

MIB = 1 << 20
needs_cgroups = pytest.mark.skipif(
    not cgroups_available(), reason=f"no cgroups here: {cgroups_unavailable_reason()}"
)


def own_cgroups() -> str:
    return Path("/proc/self/cgroup").read_text()


@pytest.fixture
def make_cgroup() -> Iterator[Callable[..., SandboxCgroup]]:
    """Makes sandbox cgroups and closes every one of them, whatever the test did."""
    made: list[SandboxCgroup] = []

    def make(**limits: int) -> SandboxCgroup:
        group = SandboxCgroup(ResourceLimits(**limits))
        made.append(group)
        return group

    yield make
    problems = []
    for group in made:  # every one, even when closing another failed
        try:
            group.close()
        except CgroupError as error:
            problems.append(str(error))
        problems += [str(folder) for folder in group.folders if folder.exists()]
    assert problems == []
    assert "cursorbench" not in own_cgroups()  # pytest itself never joined a group


def run(argv: list[str], timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


# --- limits and wrapping --------------------------------------------------------------------


def test_limits_are_frozen_validated_and_have_defaults() -> None:
    limits = ResourceLimits()
    assert (limits.memory_bytes, limits.processes) == (4 << 30, 512)
    assert (limits.disk_bytes, limits.file_bytes) == (1 << 30, 1 << 30)
    with pytest.raises(ValidationError):
        limits.processes = 5
    with pytest.raises(ValidationError):
        ResourceLimits(processes=0)
    with pytest.raises(ValidationError):
        ResourceLimits(memory=1)  # type: ignore[call-arg]


def test_sizes_read_well() -> None:
    assert describe_bytes(4 << 30) == "4.0 GiB"
    assert describe_bytes(256 * MIB) == "256 MiB"


@needs_cgroups
def test_wrapped_commands_join_the_group_with_argv_intact(
    make_cgroup: Callable[..., SandboxCgroup],
) -> None:
    group = make_cgroup()
    odd = ["a b", "$HOME", "'q'", '"; echo pwned', "-n", ""]
    done = run(group.wrap(["printf", "[%s]\\n", *odd]))
    assert done.returncode == 0 and done.stdout.splitlines() == [f"[{arg}]" for arg in odd]
    script = "cat /proc/self/oom_score_adj /proc/self/cgroup"
    lines = run(group.wrap(["sh", "-c", script])).stdout.splitlines()
    assert lines[0] == "1000"
    assert sum(line.endswith(f"/cursorbench/{group.name}") for line in lines) == 2 - (
        group.version == 2
    )
    assert group.limit_hit() is None


@needs_cgroups
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_the_wrapper_goes_around_bubblewrap(make_cgroup: Callable[..., SandboxCgroup]) -> None:
    group = make_cgroup()
    bwrap = ["bwrap", "--ro-bind", "/", "/", "--proc", "/proc", "--unshare-pid", "--"]
    done = run(group.wrap([*bwrap, "cat", "/proc/self/cgroup"]))
    assert done.returncode == 0 and group.name in done.stdout, done.stderr


# --- the limits hold ------------------------------------------------------------------------

FORK_STORM = """
import os, time
devnull = os.open(os.devnull, os.O_WRONLY)
count = 0
deadline = time.monotonic() + 10
while time.monotonic() < deadline:
    try:
        pid = os.fork()
    except OSError as error:
        print("stopped", count, error.errno, flush=True)
        break
    if pid == 0:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        time.sleep(60)
        os._exit(0)
    count += 1
else:
    print("never stopped", count)
"""


@needs_cgroups
def test_a_fork_storm_stops_at_the_limit_and_neighbours_can_still_fork(
    make_cgroup: Callable[..., SandboxCgroup],
) -> None:
    group = make_cgroup(processes=64)
    done = run(group.wrap([sys.executable, "-c", FORK_STORM]))
    words = done.stdout.split()
    assert words[0] == "stopped" and int(words[2]) == errno.EAGAIN, done.stdout + done.stderr
    assert 50 <= int(words[1]) < 64  # the storm's children (sleeping) fill the group
    assert len(group.pids()) == int(words[1])
    assert (
        run(["sh", "-c", "for i in 1 2 3 4 5 6 7 8; do true & done; wait; echo ok"]).stdout
        == "ok\n"
    )
    assert group.limit_hit() == "process limit of 64 reached"
    assert group.limit_hit() is None  # only what happened since the last check


MEMORY_HOG = """
chunks = []
for i in range(40):
    chunks.append(b"x" * (100 << 20))
    print(len(chunks) * 100, "MiB", flush=True)
"""


@needs_cgroups
def test_a_memory_hog_is_killed_at_the_limit_and_the_harness_lives(
    make_cgroup: Callable[..., SandboxCgroup],
) -> None:
    group = make_cgroup(memory_bytes=256 * MIB)
    done = run(group.wrap([sys.executable, "-c", MEMORY_HOG]))
    assert done.returncode == -9, done.stdout + done.stderr
    assert done.stdout.split()[-2:] == ["200", "MiB"]  # the third chunk did not fit
    assert group.limit_hit() == "memory limit of 256 MiB reached"
    assert group.limit_hit() is None
    assert run(["true"]).returncode == 0


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "workspace"
    path.mkdir(mode=0o750)
    yield path
    unmount(path)


def test_a_tmpfs_workspace_refuses_to_grow_past_its_size(workspace: Path) -> None:
    if not mount_workspace_tmpfs(workspace, 50 * MIB):
        pytest.skip("mounting is not permitted here")
    assert workspace.stat().st_dev != workspace.parent.stat().st_dev
    assert workspace.stat().st_mode & 0o777 == 0o750
    assert disk_usage(workspace).size_bytes == 50 * MIB and not disk_full(workspace)
    big = workspace / "big"
    with pytest.raises(OSError) as raised, big.open("wb") as file:
        for _ in range(60):
            file.write(b"x" * MIB)
            file.flush()
    assert raised.value.errno == errno.ENOSPC
    assert big.stat().st_size <= 50 * MIB and disk_full(workspace)
    assert unmount(workspace) and not unmount(workspace)
    assert list(workspace.iterdir()) == []  # nothing of it landed on the disk below


@needs_cgroups
def test_workspace_files_count_against_the_writers_memory_limit(
    workspace: Path, make_cgroup: Callable[..., SandboxCgroup]
) -> None:
    if not mount_workspace_tmpfs(workspace, 100 * MIB):
        pytest.skip("mounting is not permitted here")
    group = make_cgroup(memory_bytes=32 * MIB)
    done = run(group.wrap(["dd", "if=/dev/zero", f"of={workspace}/f", "bs=1M", "count=60"]))
    assert done.returncode == -9  # OOM-killed below the tmpfs size
    assert group.limit_hit() == "memory limit of 32 MiB reached"
    assert disk_usage(workspace).used_bytes < 32 * MIB


def test_mounting_refuses_a_folder_with_files(workspace: Path) -> None:
    (workspace / "kept").touch()
    with pytest.raises(ValueError):
        mount_workspace_tmpfs(workspace, 50 * MIB)


def test_unmount_leaves_other_mounts_and_plain_folders_alone(tmp_path: Path) -> None:
    assert not unmount(tmp_path)
    assert not unmount(Path("/proc"))
    assert Path("/proc/self").exists()


# --- cleanup --------------------------------------------------------------------------------


@needs_cgroups
def test_close_kills_what_is_left_and_removes_the_group(
    make_cgroup: Callable[..., SandboxCgroup],
) -> None:
    group = make_cgroup()
    sleeper = subprocess.Popen(group.wrap(["sleep", "1000"]))
    try:
        deadline = time.monotonic() + 10
        while sleeper.pid not in group.pids() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sleeper.pid in group.pids()
        group.close()
        assert sleeper.wait(timeout=10) == -9
        assert not any(folder.exists() for folder in group.folders)
        group.close()  # a second time: nothing to do
        assert group.limit_hit() is None
    finally:
        sleeper.kill()
        sleeper.wait()


@needs_cgroups
def test_two_groups_get_different_names(make_cgroup: Callable[..., SandboxCgroup]) -> None:
    first, second = make_cgroup(), make_cgroup()
    assert first.name != second.name and not set(first.folders) & set(second.folders)


@needs_cgroups
def test_a_name_in_use_is_refused(make_cgroup: Callable[..., SandboxCgroup]) -> None:
    group = make_cgroup()
    with pytest.raises(CgroupError):
        SandboxCgroup(ResourceLimits(), name=group.name)
    assert all(folder.exists() for folder in group.folders)  # the first is untouched


# --- the harness, and the fallback ----------------------------------------------------------


def test_protect_harness_lowers_the_score_where_permitted_and_victims_raise_it() -> None:
    code = (
        "import subprocess; from harness.sandbox.limits import protect_harness, oom_victim_argv\n"
        "print(protect_harness(), open('/proc/self/oom_score_adj').read().strip())\n"
        "argv = [*oom_victim_argv(), 'cat', '/proc/self/oom_score_adj']\n"
        "print(subprocess.run(argv, capture_output=True, text=True).stdout.strip())\n"
    )
    before = Path("/proc/self/oom_score_adj").read_text().strip()
    permitted, score, child = run([sys.executable, "-c", code]).stdout.split()
    # lowering needs CAP_SYS_RESOURCE, which some containers drop even for root
    assert (permitted, score) in (("True", "-900"), ("False", before))
    assert child == ("1000" if oom_victim_argv() else score)


@pytest.mark.skipif(shutil.which("prlimit") is None, reason="prlimit is not installed")
def test_prlimit_argv_sets_the_fallback_limits() -> None:
    limits = ResourceLimits(memory_bytes=512 * MIB, processes=100, file_bytes=10 * MIB)
    code = (
        "import resource as r\n"
        "print(*(r.getrlimit(k)[0] for k in (r.RLIMIT_DATA, r.RLIMIT_NPROC, r.RLIMIT_FSIZE)))\n"
    )
    done = run([*prlimit_argv(limits), sys.executable, "-c", code])
    assert done.stdout.split() == [str(512 * MIB), "100", str(10 * MIB)], done.stderr
    only_size = prlimit_argv(limits, with_cgroup=True)
    assert only_size == ["prlimit", f"--fsize={10 * MIB}:{10 * MIB}", "--"]


# --- finding the hierarchy ------------------------------------------------------------------

V1_MOUNTINFO = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
V1_CGROUP = "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/abc\n2:cpu,cpuacct:/\n0::/\n"
V2_MOUNTINFO = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
CONTAINER_MOUNTINFO = (
    "30 23 0:26 /docker/abc /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
)


def test_v1_layout_uses_the_own_memory_and_pids_groups() -> None:
    layout = find_layout(V1_MOUNTINFO, V1_CGROUP)
    assert layout is not None and layout.version == 1
    assert layout.memory == Path("/sys/fs/cgroup/memory/process_api/abc")
    assert layout.pids == layout.pids_mount == Path("/sys/fs/cgroup/pids")


def test_v2_layout_needs_memory_and_pids_controllers() -> None:
    own = "0::/user.slice/session-1.scope\n"
    layout = find_layout(V2_MOUNTINFO, own, "cpuset cpu io memory pids\n")
    assert layout is not None and layout.version == 2
    assert layout.memory == layout.pids == Path("/sys/fs/cgroup/user.slice/session-1.scope")
    assert find_layout(V2_MOUNTINFO, own, "cpu io\n") is None
    assert find_layout(V1_MOUNTINFO.replace("rw,pids", "rw,freezer"), V1_CGROUP) is None


def test_a_container_mount_shows_only_its_own_part_of_the_tree() -> None:
    layout = find_layout(CONTAINER_MOUNTINFO, "0::/docker/abc/app\n", "memory pids")
    assert layout is not None and layout.memory == Path("/sys/fs/cgroup/app")
    layout = find_layout(CONTAINER_MOUNTINFO, "0::/elsewhere\n", "memory pids")
    assert layout is not None and layout.memory == Path("/sys/fs/cgroup")


@pytest.mark.skipif(cmdgroups.unavailable_reason() is not None, reason="no cgroup v2 here")
def test_a_v2_sandbox_group_closes_with_its_command_groups_and_their_zombie_leaders(
    tmp_path: Path,
) -> None:
    """On a pure v2 host the per-command groups are children of the sandbox's own group: its
    close kills them (a zombie leader's thread included, which `cgroup.kill` misses) and
    removes them before itself."""
    home = cmdgroups.CommandGroups.create()
    group = home.command()
    (tmp_path / "leftovers.py").write_text(leftovers_kit.SCRIPT)
    mark = leftovers_kit.new_mark()
    join = 'echo $$ > "$1" && shift && exec "$@"'
    argv = ["sh", "-c", join, "sh", str(group.folder / "cgroup.procs"),
            sys.executable, "leftovers.py", mark, "leader"]  # fmt: skip
    leader = subprocess.Popen(argv, cwd=tmp_path)
    deadline = time.monotonic() + 30
    while not leftovers_kit.still_running(mark) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert leftovers_kit.still_running(mark)
    parent = home.home.parent
    SandboxCgroup.adopt(home.home.name, Parents(2, parent, parent)).close(timeout=10)
    assert leftovers_kit.still_running(mark) == []
    assert not home.home.exists()
    leader.wait(10)
