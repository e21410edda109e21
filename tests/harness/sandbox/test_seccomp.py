"""The seccomp filter, in real bubblewrap sandboxes: no lock or watch crosses between them."""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.sandbox.seccomp import (
    AARCH64,
    ENOSYS_CALLS,
    EPERM_CALLS,
    X86_64,
    Arch,
    build_program,
    native_arch,
    seccomp_file,
    seccomp_program,
)

pytestmark = [
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed"),
    pytest.mark.skipif(native_arch() is None, reason="no seccomp filter for this architecture"),
]

TIMEOUT_S = 30


LOCK_FILES = Path(tempfile.mkdtemp(prefix="cursorbench-seccomp-"))
(LOCK_FILES / "ro").write_text("shared read-only\n")
(LOCK_FILES / "rw").write_text("shared writable\n")


def python_binds() -> list[str]:
    """Read-only binds for the running Python environment (a venv and its base install)."""
    paths = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent}
    args: list[str] = []
    for path in sorted(paths):
        args += ["--ro-bind", str(path), str(path)]
    return args


def bwrap_argv(argv: list[str], seccomp_fd: int | None) -> list[str]:
    """The minimal bubblewrap command line of the brief, with or without the filter."""
    command = ["bwrap", "--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib64"):
        link = Path("/") / name
        if link.is_symlink():
            command += ["--symlink", os.readlink(link), str(link)]
    command += ["--ro-bind", "/etc", "/etc"]
    command += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    command += python_binds()  # after /tmp's tmpfs: an environment under /tmp (a CI clone) shows
    # Two files every sandbox of this module shares, read-only and writable, like /usr/bin/env
    # and /dev/null: private to this test run, so no other process on the machine holds locks
    # on them.
    command += ["--ro-bind", str(LOCK_FILES / "ro"), "/lock-ro"]
    command += ["--bind", str(LOCK_FILES / "rw"), "/lock-rw"]
    command += ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--die-with-parent"]
    command += ["--cap-drop", "ALL", "--setenv", "PATH", f"{Path(sys.executable).parent}:/usr/bin"]
    if seccomp_fd is not None:
        command += ["--seccomp", str(seccomp_fd)]
    return [*command, *argv]


class Sandbox:
    """One bubblewrap process; with the filter, the descriptor it reads is opened per command."""

    def __init__(self, argv: list[str], *, filtered: bool, stdin: int | None = None) -> None:
        fd = os.open(seccomp_file_path(), os.O_RDONLY) if filtered else None
        try:
            self.proc = subprocess.Popen(
                bwrap_argv(argv, fd),
                stdin=stdin,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=() if fd is None else (fd,),
            )
        finally:
            if fd is not None:
                os.close(fd)

    def readline(self, timeout: float = TIMEOUT_S) -> str:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert ready, "sandbox said nothing in time"
        return self.proc.stdout.readline().decode()

    def finish(self) -> str:
        output, _ = self.proc.communicate(timeout=TIMEOUT_S)
        return output.decode()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate(timeout=TIMEOUT_S)


def seccomp_file_path() -> Path:
    path = seccomp_file()
    assert path is not None
    return path


def run(argv: list[str], *, filtered: bool = True) -> tuple[int, str]:
    sandbox = Sandbox(argv, filtered=filtered, stdin=subprocess.DEVNULL)
    try:
        output = sandbox.finish()
    finally:
        sandbox.kill()
    return sandbox.proc.returncode, output


def python(code: str, *args: str, filtered: bool = True) -> tuple[int, str]:
    return run([sys.executable, "-c", textwrap.dedent(code), *args], filtered=filtered)


# --- locks --------------------------------------------------------------------------------

LOCK_COMMON = """
import errno, fcntl, json, os, struct, sys
F_OFD_GETLK, F_OFD_SETLK = 36, 37

def flock_struct(kind, start, length):
    return struct.pack("hhqqi4x", kind, os.SEEK_SET, start, length, 0)

def lock_type(data):
    return struct.unpack("hhqqi4x", data)[0]
"""

HOLDER = (
    LOCK_COMMON
    + """
env = os.open("/lock-ro", os.O_RDONLY)
null = os.open("/lock-rw", os.O_RDWR)
env_ofd = os.open("/lock-ro", os.O_RDONLY)
null_ofd = os.open("/lock-rw", os.O_RDWR)
fcntl.flock(env, fcntl.LOCK_SH)
fcntl.flock(null, fcntl.LOCK_EX)
fcntl.fcntl(env, fcntl.F_SETLK, flock_struct(fcntl.F_RDLCK, 0, 10))
fcntl.fcntl(null, fcntl.F_SETLK, flock_struct(fcntl.F_WRLCK, 0, 10))
fcntl.fcntl(env_ofd, F_OFD_SETLK, flock_struct(fcntl.F_RDLCK, 100, 10))
fcntl.fcntl(null_ofd, F_OFD_SETLK, flock_struct(fcntl.F_WRLCK, 100, 10))
print("holding", flush=True)
sys.stdin.read()
"""
)

PROBER = (
    LOCK_COMMON
    + """
def refused(call):
    try:
        call()
    except OSError as error:
        assert error.errno in (errno.EAGAIN, errno.EACCES), error
        return True
    return False

def lock_seen(fd, command, start):
    return lock_type(fcntl.fcntl(fd, command, flock_struct(fcntl.F_WRLCK, start, 10))) != 2

def in_proc_locks(path):
    info = os.stat(path)
    key = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino} "
    with open("/proc/locks") as locks:
        return any(key in line for line in locks)

seen = {}
for path in ("/lock-ro", "/lock-rw"):
    fd = os.open(path, os.O_RDWR if path == "/lock-rw" else os.O_RDONLY)
    seen[f"{path} flock"] = refused(lambda: fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB))
    seen[f"{path} F_GETLK"] = lock_seen(fd, fcntl.F_GETLK, 0)
    seen[f"{path} F_OFD_GETLK"] = lock_seen(fd, F_OFD_GETLK, 100)
    seen[f"{path} /proc/locks"] = in_proc_locks(path)
    if path == "/lock-rw":
        setlk = lambda: fcntl.fcntl(fd, fcntl.F_SETLK, flock_struct(fcntl.F_WRLCK, 0, 10))
        ofd = lambda: fcntl.fcntl(fd, F_OFD_SETLK, flock_struct(fcntl.F_WRLCK, 100, 10))
        seen[f"{path} F_SETLK"] = refused(setlk)
        seen[f"{path} F_OFD_SETLK"] = refused(ofd)
    os.close(fd)
print(json.dumps(seen))
"""
)


@pytest.fixture
def holder(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    sandbox = Sandbox([sys.executable, "-c", HOLDER], filtered=request.param, stdin=subprocess.PIPE)
    try:
        line = sandbox.readline()
        assert line == "holding\n", line + sandbox.finish()
        yield sandbox
    finally:
        sandbox.kill()


@pytest.mark.parametrize("holder", [False], indirect=True, ids=["unfiltered"])
def test_without_the_filter_locks_cross_between_sandboxes(holder: Sandbox) -> None:
    code, output = python(PROBER, filtered=False)
    assert code == 0, output
    seen = json.loads(output)
    assert all(seen.values()), seen  # the channel exists, so the next test means something


@pytest.mark.parametrize("holder", [True], indirect=True, ids=["filtered"])
def test_with_the_filter_no_lock_crosses_between_sandboxes(holder: Sandbox) -> None:
    code, output = python(PROBER, filtered=True)
    assert code == 0, output
    seen = json.loads(output)
    assert len(seen) == 10 and not any(seen.values()), seen


def test_a_filtered_lock_call_returns_zero_and_takes_no_lock() -> None:
    code = """
    import ctypes, fcntl, os, struct
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open("/lock-rw", os.O_RDWR)
    lock = struct.pack("hhqqi4x", fcntl.F_WRLCK, 0, 0, 0, 0)
    print(libc.flock(fd, fcntl.LOCK_EX), libc.fcntl(fd, fcntl.F_SETLKW, lock), ctypes.get_errno())
    print(sum(1 for line in open("/proc/locks") if f":{os.stat('/lock-rw').st_ino} " in line))
    """
    status, output = python(code)
    assert status == 0 and output.split() == ["0", "0", "0", "0"], output


# --- denied calls -------------------------------------------------------------------------

PROBE_CALLS = """
import ctypes, errno, json, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
results = {}
for name, number in json.loads(sys.argv[1]).items():
    ctypes.set_errno(0)
    args = [ctypes.c_long(-1)] * 6
    returned = libc.syscall(ctypes.c_long(number), *args)
    results[name] = errno.errorcode.get(ctypes.get_errno(), "OK") if returned == -1 else "OK"
print(json.dumps(results))
"""


def test_watches_keyrings_and_privileged_calls_fail_with_the_chosen_errno() -> None:
    arch = native_arch()
    assert arch is not None
    names = [name for name in (*ENOSYS_CALLS, *EPERM_CALLS) if name in arch.syscalls]
    status, output = python(PROBE_CALLS, json.dumps({n: arch.syscalls[n] for n in names}))
    assert status == 0, output
    results = json.loads(output)
    expected = {n: "ENOSYS" if n in ENOSYS_CALLS else "EPERM" for n in names}
    assert results == expected


INOTIFY_AND_KEYRING = """
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
def call(name, *args):
    ctypes.set_errno(0)
    returned = getattr(libc, name)(*args)
    return "OK" if returned >= 0 else errno.errorcode[ctypes.get_errno()]
print(call("inotify_init"), call("inotify_init1", 0))
print(call("syscall", {keyctl}, 0, -4, 0))  # KEYCTL_GET_KEYRING_ID of the user keyring
print(call("unshare", 0x20000), call("unshare", 0x10000000))  # CLONE_NEWNS, CLONE_NEWUSER
"""


@pytest.mark.parametrize("filtered", [True, False], ids=["filtered", "unfiltered"])
def test_inotify_keyctl_and_unshare(filtered: bool) -> None:
    arch = native_arch()
    assert arch is not None
    code = INOTIFY_AND_KEYRING.replace("{keyctl}", str(arch.syscalls["keyctl"]))
    if arch is AARCH64:  # no inotify_init there
        code = code.replace('call("inotify_init"), ', "")
    status, output = python(code, filtered=filtered)
    assert status == 0, output
    lines = [line.split() for line in output.splitlines()]
    if filtered:
        assert lines[0] == ["ENOSYS"] * len(lines[0])
        assert lines[1:] == [["ENOSYS"], ["EPERM", "EPERM"]]
    else:  # with every capability dropped CLONE_NEWNS needs a user namespace first
        assert lines[0] == ["OK"] * len(lines[0])
        assert lines[1:] == [["OK"], ["EPERM", "OK"]]


@pytest.mark.parametrize("filtered", [True, False], ids=["filtered", "unfiltered"])
def test_unshare_command(filtered: bool) -> None:
    status, output = run(["unshare", "--user", "--map-root-user", "true"], filtered=filtered)
    if filtered:
        assert status != 0 and "unshare failed: Operation not permitted" in output, output
    else:
        assert "unshare failed" not in output, output  # it gets as far as writing uid_map


def test_clone_with_namespace_flags_is_refused_but_threads_and_children_work() -> None:
    arch = native_arch()
    assert arch is not None
    code = f"""
    import ctypes, errno, os, subprocess, threading
    libc = ctypes.CDLL(None, use_errno=True)
    pid = libc.syscall({arch.syscalls["clone"]}, 0x10000000 | 17, 0, 0, 0, 0)  # NEWUSER|SIGCHLD
    if pid == 0:
        os._exit(0)
    print(errno.errorcode.get(ctypes.get_errno()) if pid < 0 else "cloned")
    done = []
    thread = threading.Thread(target=lambda: done.append(1))
    thread.start(); thread.join()
    print(len(done), subprocess.run(["echo", "child"], capture_output=True, text=True).stdout)
    """
    status, output = python(code)
    assert status == 0 and output.split() == ["EPERM", "1", "child"], output


def test_personality_may_be_queried_but_not_changed() -> None:
    code = """
    import ctypes, errno
    libc = ctypes.CDLL(None, use_errno=True)
    print(libc.personality(0xFFFFFFFF), libc.personality(0))
    print(libc.personality(0x0040000), errno.errorcode[ctypes.get_errno()])  # ADDR_NO_RANDOMIZE
    """
    status, output = python(code)
    assert status == 0 and output.split() == ["0", "0", "-1", "EPERM"], output


@pytest.mark.skipif(native_arch() is not X86_64, reason="x32 is an x86_64 ABI")
def test_x32_calls_are_refused() -> None:
    code = """
    import ctypes, errno
    libc = ctypes.CDLL(None, use_errno=True)
    print(libc.syscall(0x40000000 | 39), errno.errorcode[ctypes.get_errno()])  # x32 getpid
    """
    status, output = python(code)
    assert status == 0 and output.split() == ["-1", "EPERM"], output


# --- ordinary work ------------------------------------------------------------------------

ORDINARY_WORK = r"""
set -euo pipefail
cd /tmp
python3 - <<'EOF'
import sqlite3
db = sqlite3.connect("/tmp/work.db")
db.execute("create table t (x integer)")
db.executemany("insert into t values (?)", [(i,) for i in range(100)])
db.commit()
print("sqlite", db.execute("select sum(x) from t").fetchone()[0])
EOF
python3 -m pytest --version 2>&1 | sed 's/ [0-9.]*$//'
git init -q repo && cd repo && echo hello > a.txt && git add a.txt
git -c user.name=t -c user.email=t@example.com commit -qm first && git log --format=%s
seq 1 1000 | sort -rn | head -3 | paste -sd,
"""


def test_ordinary_work_runs_under_the_filter() -> None:
    status, output = run(["bash", "-c", ORDINARY_WORK])
    assert status == 0, output
    assert output.splitlines() == ["sqlite 4950", "pytest", "first", "1000,999,998"]


# --- the program itself -------------------------------------------------------------------


def test_the_file_holds_the_program_and_only_its_owner_can_read_it() -> None:
    path = seccomp_file_path()
    assert path.read_bytes() == seccomp_program()
    assert path.stat().st_mode & 0o777 == 0o400 and path.parent.stat().st_mode & 0o777 == 0o700
    assert seccomp_file() == path  # written once


@pytest.mark.parametrize("arch", [X86_64, AARCH64], ids=lambda arch: arch.name)
def test_programs_are_whole_sock_filter_arrays(arch: Arch) -> None:
    program = build_program(arch)
    assert len(program) % 8 == 0 and 0 < len(program) // 8 < 4096


def header_numbers(path: Path, prefix: str) -> dict[str, int]:
    pattern = re.compile(rf"#define {prefix}(\w+)\s+(\d+)\b")
    return {m[1]: int(m[2]) for m in pattern.finditer(path.read_text())}


@pytest.mark.parametrize(
    ("arch", "header", "prefix"),
    [
        (X86_64, "/usr/include/x86_64-linux-gnu/asm/unistd_64.h", "__NR_"),
        (AARCH64, "/usr/include/asm-generic/unistd.h", r"__NR(?:3264)?_"),
    ],
    ids=["x86_64", "aarch64"],
)
def test_syscall_numbers_match_the_kernel_headers(arch: Arch, header: str, prefix: str) -> None:
    if not Path(header).is_file():
        pytest.skip(f"{header} is not installed")
    numbers = header_numbers(Path(header), prefix)
    expected = arch.syscalls
    assert {name: numbers.get(name) for name in expected} == expected
