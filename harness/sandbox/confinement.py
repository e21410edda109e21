"""How a sandboxed command is confined: bubblewrap where it runs, else nothing.

Under bubblewrap a command sees only what it needs, read-only: the system
folders (`/usr`, `/etc`, the `/lib`s) and the running Python environment. Home
folders, checkouts, caches, earlier runs and everything else on the machine are
simply absent. Only the named folders are writable, `/tmp` is private, the
network is gone (loopback included), and the process tree lives in its own PID
namespace. The harness's secrets (task sources, caches, hidden tests, results)
are also covered by empty mounts, in case they sit inside what is shown. Without
bubblewrap a command runs as a plain subprocess: the caller must record a loud
warning on the run, since the agent can then read and write anything the
harness can.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.sandbox.process import Completed, run_process

BWRAP = "bwrap"
MAX_FILE_BYTES = 1 << 30  # no single file written in the sandbox grows past this
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
UNCONFINED_WARNING = (
    "UNCONFINED: bubblewrap is not available, so agent commands and tests run as plain "
    "subprocesses that can read hidden files, write outside the workspace, use the network, "
    "and leave background processes behind"
)


@dataclass(frozen=True)
class Confinement:
    """Turns a command into the argv that runs it confined."""

    backend: str  # "bubblewrap" or "subprocess"
    hidden: tuple[Path, ...] = field(default=())
    max_file_bytes: int = MAX_FILE_BYTES

    @property
    def confined(self) -> bool:
        return self.backend == "bubblewrap"

    def wrap(self, argv: Sequence[str], *, cwd: Path, writable: Sequence[Path]) -> list[str]:
        if not self.confined:
            return list(argv)
        prefix = bwrap_prefix(cwd=cwd, writable=writable, hidden=self.hidden)
        return [*prefix, *self._limits(), *argv]

    def _limits(self) -> list[str]:
        """Per-process limits; with capabilities dropped they cannot be raised again."""
        if shutil.which("prlimit") is None:
            return []
        size = self.max_file_bytes
        return ["prlimit", f"--fsize={size}:{size}", "--"]

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        writable: Sequence[Path],
        env: Mapping[str, str],
        timeout: float,
        report: bool = False,
    ) -> Completed:
        wrapped = self.wrap(argv, cwd=cwd, writable=writable)
        return run_process(wrapped, cwd=cwd, env=env, timeout=timeout, report=report)

    def self_test(self, scratch: Path) -> None:
        """Fails loudly when confined commands cannot run Python with pytest."""
        scratch.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-P", "-c", "import pytest"]
        done = self.run(
            argv, cwd=scratch, writable=[scratch], env=scrubbed_env(scratch), timeout=60
        )
        if done.exit_code != 0:
            last = (done.output.strip().splitlines() or ["no output"])[-1]
            raise SandboxUnavailable(f"the {self.backend} sandbox cannot run Python here: {last}")


@functools.cache
def empty_file() -> Path:
    """An empty read-only file to mount over hidden files (device files would not open)."""
    path = Path(tempfile.gettempdir()) / f"cursorbench-empty-{os.getuid()}"
    if not path.is_file() or path.stat().st_size:
        path.unlink(missing_ok=True)
        path.touch(mode=0o444)
    return path


def python_paths() -> list[Path]:
    """The running interpreter's environment: sandboxed commands need it, even under /tmp."""
    paths = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent}
    return sorted(path for path in paths if path.is_dir())


def system_mounts() -> list[str]:
    """Read-only system folders; merged-/usr links (`/bin -> usr/bin`) stay links."""
    args: list[str] = []
    for name in SYSTEM_PATHS:
        path = Path(name)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), name]
        elif path.is_dir():
            args += ["--ro-bind", name, name]
    return args


def bwrap_prefix(*, cwd: Path, writable: Sequence[Path], hidden: Sequence[Path]) -> list[str]:
    args = [BWRAP, *system_mounts(), "--dev", "/dev", "--proc", "/proc"]
    args += ["--tmpfs", "/tmp", "--tmpfs", "/var/tmp"]
    for path in python_paths():
        args += ["--ro-bind", str(path), str(path)]
    for path in hidden:
        if path.is_dir():
            args += ["--tmpfs", str(path)]
        elif path.exists():
            args += ["--ro-bind", str(empty_file()), str(path)]
    for path in writable:  # after the hidden mounts, so a workspace under a hidden folder shows
        args += ["--bind", str(path), str(path)]
    args += ["--remount-ro", "/"]  # the root bubblewrap builds is itself read-only
    args += [
        "--cap-drop",  # as root, bubblewrap would otherwise keep every capability, and
        "ALL",  # CAP_SYS_ADMIN can remount the read-only binds writable
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--die-with-parent",
        "--new-session",
        "--chdir",
        str(cwd),
    ]
    return args


@functools.cache
def bubblewrap_works() -> bool:
    """True when bubblewrap is installed and can build a namespace here."""
    if shutil.which(BWRAP) is None:
        return False
    probe = [*bwrap_prefix(cwd=Path("/"), writable=[], hidden=[]), "true"]
    try:
        return subprocess.run(probe, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class SandboxUnavailable(RuntimeError):
    pass


def choose_backend(requested: str) -> str:
    """'auto' picks bubblewrap when it works; naming a backend insists on it."""
    if requested == "subprocess":
        return "subprocess"
    if requested in ("auto", "bubblewrap"):
        if bubblewrap_works():
            return "bubblewrap"
        if requested == "bubblewrap":
            raise SandboxUnavailable(
                "bubblewrap cannot run here (install the Debian package 'bubblewrap')"
            )
        return "subprocess"
    raise SandboxUnavailable(f"unknown sandbox backend {requested!r}")


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


def scrubbed_env(home: Path) -> dict[str, str]:
    """The environment a sandboxed command sees: nothing of the harness's own."""
    python_bin = str(Path(sys.executable).parent)
    return {
        "PATH": os.pathsep.join([python_bin, "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": str(home),
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "PIP_NO_INDEX": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
