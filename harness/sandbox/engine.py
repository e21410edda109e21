"""The Docker engine the `docker` backend talks to: found, or started by the harness itself.

`docker_client()` returns a client of, in order:
1. the engine named by `CURSORBENCH_DOCKER_HOST` (e.g. `unix:///var/run/docker.sock`), used
   as it is;
2. the harness's private engine at `/run/cursorbench-docker/docker.sock`, started here if it
   is not answering: `dockerd` (Debian's `docker.io`) as root with no bridge, no iptables
   rules, its own data root (`CURSORBENCH_DOCKER_ROOT`, default
   `/var/lib/cursorbench/docker`, so images built once are reused) and exec root. The engine
   outlives the process that started it (its own session) and is reused by the next run; a
   lock file keeps two processes from starting it at once.

Where neither works (no `dockerd`, not root, the engine does not come up) it raises
`SandboxUnavailable` with one line saying why. Not covered: stopping the engine (it is
meant to stay up, like a system service), rootless Docker, remote engines over TCP/TLS
(they work through `CURSORBENCH_DOCKER_HOST` when the client's environment is set up, but
are not tested).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

from harness.sandbox.protocol import SandboxUnavailable

if TYPE_CHECKING:
    import docker

RUN_DIR = Path("/run/cursorbench-docker")
SOCKET = RUN_DIR / "docker.sock"
DEFAULT_DATA_ROOT = Path("/var/lib/cursorbench/docker")
START_TIMEOUT_S = 60.0
API_VERSION = "1.41"  # Docker 20.10 (Debian 12); newer engines serve it too
STORAGE_DRIVER = "overlay2"  # shares layers; `vfs` copies each (CURSORBENCH_DOCKER_STORAGE)


def data_root() -> Path:
    return Path(os.environ.get("CURSORBENCH_DOCKER_ROOT") or DEFAULT_DATA_ROOT)


def _client(base_url: str) -> docker.DockerClient:
    try:
        import docker
    except ImportError:
        raise SandboxUnavailable(
            "the docker backend needs the `docker` package: pip install 'cursorbench[docker]'"
        ) from None
    return docker.DockerClient(base_url=base_url, version=API_VERSION, timeout=300)


def _answers(client: docker.DockerClient) -> bool:
    try:
        return bool(client.ping())
    except Exception:  # any failure means "not answering"
        return False


def dockerd_command(socket: Path, root: Path, exec_root: Path, driver: str) -> list[str]:
    return [
        "dockerd",
        "--iptables=false",
        "--ip6tables=false",
        "--bridge=none",
        f"--storage-driver={driver}",
        f"--data-root={root}",
        f"--exec-root={exec_root}",
        f"--pidfile={exec_root}/dockerd.pid",
        "--host",
        f"unix://{socket}",
    ]


def _start_engine() -> None:
    """Starts the private engine unless another process already did (or is doing it)."""
    if shutil.which("dockerd") is None:
        raise SandboxUnavailable(
            "the docker backend needs the Docker engine: apt-get install docker.io"
        )
    if os.geteuid() != 0:
        raise SandboxUnavailable(
            "the docker backend starts its own engine as root; not root here "
            "(or set CURSORBENCH_DOCKER_HOST to a running engine)"
        )
    RUN_DIR.mkdir(parents=True, exist_ok=True, mode=0o700)
    root = data_root()
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(RUN_DIR / "start.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        client = _client(f"unix://{SOCKET}")
        if SOCKET.exists() and _answers(client):
            return
        driver = os.environ.get("CURSORBENCH_DOCKER_STORAGE") or STORAGE_DRIVER
        log_path = root / "dockerd.log"
        with open(log_path, "ab") as log:
            process = subprocess.Popen(
                dockerd_command(SOCKET, root, RUN_DIR / "exec", driver),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # it outlives this process, to be reused
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if SOCKET.exists() and _answers(client):
                return
            if process.poll() is not None:
                break
            time.sleep(0.2)
        with contextlib.suppress(ProcessLookupError):
            if process.poll() is None:
                process.kill()
        last = _last_line(log_path)
        raise SandboxUnavailable(f"the Docker engine did not start (see {log_path}): {last}")


def _last_line(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no log"
    return lines[-1][-300:] if lines else "no output"


@functools.cache
def docker_client() -> docker.DockerClient:
    """A client of a running engine (see the module docstring); `SandboxUnavailable` if none."""
    named = os.environ.get("CURSORBENCH_DOCKER_HOST")
    if named:
        client = _client(named)
        if not _answers(client):
            raise SandboxUnavailable(f"the Docker engine at {named} does not answer")
        return client
    client = _client(f"unix://{SOCKET}")
    if not (SOCKET.exists() and _answers(client)):
        _start_engine()
    return client


def engine_works() -> bool:
    """True when a Docker engine answers, or could be started here."""
    try:
        docker_client()
    except SandboxUnavailable:
        return False
    return True
