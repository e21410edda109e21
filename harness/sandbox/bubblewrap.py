"""Jails: how one command is confined. Bubblewrap where it runs, else nothing at all.

Under bubblewrap a command sees only what it needs, read-only: the sandbox's
view (`view.py`: an allow-list of system files bound over `/usr` and `/etc`, and
the running Python environment less what the harness alone uses). The
workspace appears at `/workspace` whatever its host path; home folders,
checkouts, caches and earlier runs are simply absent. `/proc` is the sandbox's
own, with its kernel interfaces (`/proc/sys`, `/proc/sysrq-trigger`, ...)
read-only; `/sys` is absent. `/tmp` is private, the network is gone (loopback
included), the process tree, IPC and hostname are the sandbox's own, every
capability is dropped, and, when the harness runs as root, the command runs
as an unprivileged user (`nobody`) with no way to gain privileges back. The
bubblewrap command line is handed over through a pipe, so the sandbox's
`/proc/1/cmdline` shows none of the host's paths. A seccomp filter
(`seccomp.py`) closes the channels read-only files would otherwise open
between concurrent sandboxes (file locks, inotify, the uid's keyring).

With `--sandbox subprocess` (never chosen by `auto`) a command runs as a plain
subprocess: the run is recorded unconfined and never ranked, since the agent can
then read and write anything the harness can.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.sandbox.protocol import SandboxUnavailable
from harness.sandbox.pythons import python_bin_dir, python_paths
from harness.sandbox.view import env_left_out, python_left_out, system_tree, tree_tops

BWRAP = "bwrap"
WORKSPACE = "/workspace"  # where the workspace appears inside a bubblewrap sandbox
BASELINE = "/.baseline"  # where the baseline git folder appears, for taking the diff only
SANDBOX_UID = 65534  # nobody: commands run as this user when the harness is root
MAX_FILE_BYTES = 1 << 30  # no single file written in the sandbox grows past this
# Kernel interfaces under the sandbox's own /proc that stay read-only even for root.
PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")
UNCONFINED_WARNING = (
    "UNCONFINED (--sandbox subprocess): agent commands and tests run as plain subprocesses "
    "that can read most of this machine, write outside the workspace, use the network and "
    "leave background processes behind; the run is recorded as unconfined and never ranked "
    "beside confined runs"
)


@dataclass(frozen=True)
class Mount:
    """A host path shown inside the sandbox."""

    host: Path
    inside: str
    writable: bool = False


@dataclass
class Wrapped:
    """A command ready to start: its argv and the descriptors it must inherit."""

    argv: list[str]
    pass_fds: list[int] = field(default_factory=list)

    def close(self) -> None:
        for descriptor in self.pass_fds:
            with contextlib.suppress(OSError):
                os.close(descriptor)
        self.pass_fds = []


class BubblewrapJail:
    name = "bubblewrap"
    confined = True

    def __init__(
        self,
        hidden: Sequence[Path] = (),
        max_file_bytes: int = MAX_FILE_BYTES,
        python_env: Path | None = None,
    ) -> None:
        self.hidden = tuple(hidden)
        self.max_file_bytes = max_file_bytes
        self.python_env = python_env  # a task's environment shown instead of the harness's
        self.uid = SANDBOX_UID if unprivileged_user_available() else None

    def for_env(self, python_env: Path | None) -> BubblewrapJail:
        """This jail showing `python_env` (None: the harness's environment)."""
        return BubblewrapJail(self.hidden, self.max_file_bytes, python_env)

    def workspace_path(self, host: Path) -> str:
        return WORKSPACE

    def baseline_path(self, host: Path) -> str:
        return BASELINE

    def tmp_path(self, scratch: Path) -> str:
        return "/tmp"

    def wrap(self, argv: Sequence[str], mounts: Sequence[Mount], cwd: str) -> Wrapped:
        """One command in a namespace of its own, run as the sandbox user."""
        inner = [*self._become_user(), *file_size_limit(self.max_file_bytes), *argv]
        return self._bwrap(inner, mounts, cwd, keep_setuid=self.uid is not None)

    def wrap_server(self, argv: Sequence[str], mounts: Sequence[Mount], cwd: str) -> Wrapped:
        """A command server (`cmdserver.py`) in a namespace kept for many commands: it stays
        root inside, with SETUID and SETGID to start each command as the sandbox user and
        KILL to end what each leaves behind; the seccomp filter covers it and so
        every command. Only where commands run as another user (`uid`): a server that
        shared their uid would be theirs to kill or to ask for commands."""
        if self.uid is None:
            raise ValueError("a command server needs an unprivileged sandbox user")
        return self._bwrap(argv, mounts, cwd, keep_setuid=True, extra_caps=("CAP_KILL",))

    def _bwrap(
        self,
        inner: Sequence[str],
        mounts: Sequence[Mount],
        cwd: str,
        *,
        keep_setuid: bool,
        extra_caps: Sequence[str] = (),
    ) -> Wrapped:
        from harness.sandbox.seccomp import seccomp_file  # optional: None where unsupported

        options = bwrap_options(
            mounts,
            cwd,
            self.hidden,
            keep_setuid=keep_setuid,
            extra_caps=extra_caps,
            python_env=self.python_env,
        )
        wrapped = Wrapped(argv=[])
        filter_path = seccomp_file()
        if filter_path is not None:
            descriptor = os.open(filter_path, os.O_RDONLY | os.O_CLOEXEC)
            wrapped.pass_fds.append(descriptor)
            options += ["--seccomp", str(descriptor)]
        args_fd = _args_pipe(options)
        wrapped.pass_fds.append(args_fd)
        wrapped.argv = [BWRAP, "--args", str(args_fd), "--", *inner]
        return wrapped

    def _become_user(self) -> list[str]:
        if self.uid is None:
            return []
        uid = str(self.uid)
        return [
            "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
            "--inh-caps=-all", "--no-new-privs", "--",
        ]  # fmt: skip


class UnconfinedJail:
    """Commands run as plain subprocesses on the host; see UNCONFINED_WARNING."""

    name = "subprocess"
    confined = False
    uid: int | None = None

    def __init__(
        self,
        hidden: Sequence[Path] = (),
        max_file_bytes: int = MAX_FILE_BYTES,
        python_env: Path | None = None,
    ) -> None:
        self.hidden = tuple(hidden)
        self.max_file_bytes = max_file_bytes
        self.python_env = python_env  # its python comes first on PATH; nothing is hidden

    def for_env(self, python_env: Path | None) -> UnconfinedJail:
        return UnconfinedJail(self.hidden, self.max_file_bytes, python_env)

    def workspace_path(self, host: Path) -> str:
        return str(host)

    def baseline_path(self, host: Path) -> str:
        return str(host)

    def tmp_path(self, scratch: Path) -> str:
        return str(scratch)

    def wrap(self, argv: Sequence[str], mounts: Sequence[Mount], cwd: str) -> Wrapped:
        return Wrapped(argv=[*file_size_limit(self.max_file_bytes), *argv])


def _args_pipe(options: Sequence[str]) -> int:
    """A pipe holding bubblewrap's options, NUL-separated, for `bwrap --args FD`."""
    data = b"".join(option.encode() + b"\0" for option in options)
    read_end, write_end = os.pipe()
    try:
        if len(data) > 60_000:  # a pipe holds 64 KiB; more would block this write
            raise ValueError("bubblewrap command line too long")
        os.write(write_end, data)
    finally:
        os.close(write_end)
    return read_end


def file_size_limit(size: int) -> list[str]:
    """Per-process file size limit; with capabilities dropped it cannot be raised again."""
    if shutil.which("prlimit") is None:
        return []
    return ["prlimit", f"--fsize={size}:{size}", "--"]


@functools.cache
def unprivileged_user_available() -> bool:
    """Commands can switch to `nobody` when the harness is root and `setpriv` exists."""
    return os.geteuid() == 0 and shutil.which("setpriv") is not None


def system_mounts() -> list[str]:
    """The view's system tree (`view.py`), read-only, its top folders over the host's:
    `/usr` and `/etc` hold only what the allow-list names; merged-/usr links stay links."""
    tree = system_tree()
    args: list[str] = []
    for name, target in tree_tops(tree):
        if target is not None:
            args += ["--symlink", target, name]
        else:
            args += ["--ro-bind", str(tree / name.lstrip("/")), name]
    return args


def system_tops() -> list[str]:
    """The top folders the system tree is bound at (`/usr`, `/etc`, ...)."""
    return [name for name, target in tree_tops(system_tree()) if target is None]


@functools.cache
def empty_file() -> Path:
    """An empty read-only file to mount over hidden files (device files may not open)."""
    path = Path(tempfile.gettempdir()) / f"cursorbench-empty-{os.getuid()}"
    if not path.is_file() or path.stat().st_size:
        path.unlink(missing_ok=True)
        path.touch(mode=0o444)
    return path


def _parent_dirs(path: str, made: set[str], system: Sequence[str]) -> list[str]:
    """Folders above a mount point, made traversable (bubblewrap would make them 0700, which
    shuts out the unprivileged user)."""
    args: list[str] = []
    for parent in reversed(Path(path).parents[:-1]):  # outermost first, "/" left out
        name = str(parent)
        if name not in made and not any(name == s or name.startswith(s + "/") for s in system):
            args += ["--perms", "0755", "--dir", name]
            made.add(name)
    return args


def _shown(path: Path, shown: Sequence[Path]) -> bool:
    """`path` is one of `shown` or inside one (absolute paths; compared as strings: this runs
    for every hidden path at every sandboxed command, and `Path.parents` is slow)."""
    name = str(path)
    return any(
        name == top or name.startswith(top if top.endswith("/") else top + "/")
        for top in map(str, shown)
    )


def bwrap_options(
    mounts: Sequence[Mount],
    cwd: str,
    hidden: Sequence[Path],
    *,
    keep_setuid: bool = False,
    extra_caps: Sequence[str] = (),
    python_env: Path | None = None,
) -> list[str]:
    system = system_tops()
    args = [*system_mounts(), "--dev", "/dev", "--proc", "/proc"]
    for interface in PROC_READ_ONLY:
        if os.path.exists(interface):
            args += ["--ro-bind", interface, interface]
    args += ["--perms", "1777", "--tmpfs", "/tmp", "--perms", "1777", "--tmpfs", "/var/tmp"]
    pythons = python_paths(python_env)
    made: set[str] = set()
    for path in pythons:
        args += _parent_dirs(str(path), made, system)
        args += ["--ro-bind", str(path), str(path)]
    # Hidden paths matter only where they lie inside something shown; the system tree
    # holds nothing but the allow-list, so only the Python folders can hold them.
    left_out = python_left_out() if python_env is None else env_left_out()
    for path in [*left_out, *hidden]:
        if not _shown(path, pythons):
            continue
        if path.is_dir():
            args += ["--tmpfs", str(path)]
        elif path.exists():
            args += ["--ro-bind", str(empty_file()), str(path)]
    for mount in mounts:
        args += _parent_dirs(mount.inside, made, system)
        args += ["--bind" if mount.writable else "--ro-bind", str(mount.host), mount.inside]
    args += ["--remount-ro", "/"]  # the root bubblewrap builds is itself read-only
    # As root, bubblewrap would otherwise keep every capability (CAP_SYS_ADMIN can remount
    # the read-only binds writable). SETUID/SETGID stay only to become `nobody` at once.
    args += ["--cap-drop", "ALL"]
    if keep_setuid:
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    for capability in extra_caps:
        args += ["--cap-add", capability]
    args += [
        "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
        "--hostname", "sandbox", "--die-with-parent", "--new-session", "--chdir", cwd,
    ]  # fmt: skip
    return args


@functools.cache
def bubblewrap_problem() -> str | None:
    """Why bubblewrap cannot build a namespace here, in bubblewrap's own words; None if it can."""
    if shutil.which(BWRAP) is None:
        return f"{BWRAP!r} is not on PATH (install the Debian package 'bubblewrap')"
    try:
        probe = [BWRAP, *bwrap_options([], "/", []), "true"]
    except SandboxUnavailable as error:  # the view's system tree cannot be built here
        return str(error)
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired:
        return f"{BWRAP} did not start a namespace within 10 s"
    except OSError as error:
        return f"cannot start {BWRAP}: {error}"
    if done.returncode == 0:
        return None
    said = done.stderr.strip().splitlines()
    return f"{BWRAP} exited {done.returncode}: {said[-1] if said else 'no message'}"


def bubblewrap_works() -> bool:
    """True when bubblewrap is installed and can build a namespace here."""
    return bubblewrap_problem() is None


def default_hidden_paths() -> list[Path]:
    """Caches an agent could mine for answers or packages."""
    home = Path.home()
    return [
        home / ".cache" / "pip",
        home / ".cache" / "uv",
        home / ".cache" / "pypoetry",
        home / ".cache" / "cursorbench",
        home / ".local" / "share" / "cursorbench",
    ]


def scrubbed_env(home: str, python_env: Path | None = None) -> dict[str, str]:
    """The environment a sandboxed command sees: nothing of the harness's own (its `python`
    is the task's environment's, when it has one)."""
    python_bin = str(python_bin_dir(python_env))
    return {
        "PATH": os.pathsep.join([python_bin, "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": home,
        "TMPDIR": "/tmp" if home == "/tmp" else home,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "PIP_NO_INDEX": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
