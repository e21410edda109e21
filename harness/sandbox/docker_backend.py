"""The `docker` backend: one container per sandbox, commands through a server inside it.

A sandbox is a container of the base image (`image.py`) started by the Docker engine
(`engine.py`, through the `docker` SDK) with: no network (`--network none`); a
read-only root; the workspace, `/tmp`, `/var/tmp` and the baseline as size-capped tmpfs
mounts (the workspace's size is `disk_bytes`; tmpfs pages count against the memory
limit, as under bubblewrap); memory (swap included) and process limits; every
capability dropped but SETUID, SETGID and KILL, which only the command server keeps
(`no-new-privileges` on everything); Docker's default seccomp profile plus the harness's
own filter, which the server installs on itself at start and every command inherits.
Its PID 1 is the command server (`cmdserver.py`), root inside, listening on a socket in
a folder bind-mounted from the sandbox's host scratch (mode 0700, so commands, which never
run as root, cannot reach it). Each command is spawned by the server as `nobody` (65534),
with no capabilities, `no_new_privs`, and its file size capped, in a cgroup of its own
(`cmdgroups.py`: a child of the container's cgroup v2 folder, or on a hybrid host of a
folder the container's init is moved into at start); when it ends, that cgroup is killed,
whatever state its processes are in; where no cgroup can be made, every other process of
the container's PID namespace is stopped and killed instead, and a warning says so. The
server refuses to start unless its PID namespace differs from the harness's.

Who owns the workspace decides what `read_only` means, since a running container's
mounts cannot change per command: an agent's sandbox (`track_changes`) belongs to
`nobody`, so its commands may write; a grading sandbox belongs to the grading user
(65533), which copies the files in and applies the patch, and every `read_only` command
(pytest) runs as `nobody`, who may then write nothing in the workspace. In an agent's
sandbox `read_only` (the harness's own diff) is not enforced.

The host copies trusted content in (a tar stream extracted inside by the owner), then
never touches the workspace again. The baseline git repository is made inside, by the
grading user, before any agent command, in `/.baseline`, which `nobody` can read but not
change. The report channel of `execute(report=True)` is a pipe the host made and passed
to the command as fd 3 (`/dev/fd/3`): append-only, as under bubblewrap.

What differs from bubblewrap (a fresh namespace per command, or per attempt with the same
command server, which empties /tmp after each command: `bwrap_server.py`):
- `/tmp` is the sandbox's, shared by the commands of one attempt (not one per command);
- `/sys` is present, read-only (Docker's default), and `/proc/1/cmdline` shows the
  command server;
- leftovers are killed with the command's cgroup rather than by a PID namespace ending;
  commands in one sandbox run one at a time.
"""

from __future__ import annotations

import contextlib
import io
import os
import secrets
import sys
import tarfile
import threading
import time
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

from harness.grading.pytest_env import AGENT_PYTEST_ENV
from harness.sandbox import cmdgroups
from harness.sandbox.baseline import NOT_CHANGES, diff_env, git_env
from harness.sandbox.bubblewrap import empty_file, scrubbed_env
from harness.sandbox.cmdclient import SERVER_SOURCE, ServerGone, run_served
from harness.sandbox.command import Command
from harness.sandbox.engine import docker_client
from harness.sandbox.files import SERVICE_TIMEOUT_S, WorkspaceFiles, last_line
from harness.sandbox.image import GRADER_UID, ensure_image
from harness.sandbox.limits import (
    ResourceLimits,
    SandboxCgroup,
    describe_bytes,
    detect_layout,
)
from harness.sandbox.local import SandboxSettings, _big_files, _open, _open_lock, remove_tree
from harness.sandbox.mounts import mount_workspace_tmpfs, unmount
from harness.sandbox.process import Completed
from harness.sandbox.protocol import (
    ResourceLimitExceeded,
    SandboxError,
    SandboxUnavailable,
)
from harness.sandbox.pythons import python_paths, sandbox_python, with_sandbox_python

if TYPE_CHECKING:
    import docker
    from docker.models.containers import Container

AGENT_UID = 65534
WORKSPACE = "/workspace"
BASELINE = "/.baseline"
CONTROL = "/.ctl"
LABEL = "cursorbench.sandbox"
START_TIMEOUT_S = 30.0
TMP_BYTES = 1 << 30
CONTROL_BYTES = 1 << 20
BASELINE_SCRIPT = """set -e
git init -q
git add -A --force -- . "$@"
git commit -q --allow-empty -m baseline
"""


def _tar_of(trees: Sequence[Path]) -> bytes:
    """The trusted trees, later ones laid over earlier ones, as one tar stream."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for tree in trees:
            for path in sorted(tree.rglob("*")):
                archive.add(path, arcname=path.relative_to(tree).as_posix(), recursive=False)
    return buffer.getvalue()


class DockerSandbox:
    def __init__(
        self,
        client: docker.DockerClient,
        image: str,
        source: Path,
        folder: Path,
        settings: SandboxSettings,
        overlay: Path | None = None,
        track_changes: bool = True,
        python_env: Path | None = None,
    ) -> None:
        self.client = client
        self.python_env = python_env
        self.folder = folder
        self.settings = settings
        self.limits = settings.limits
        self.owner = AGENT_UID if track_changes else GRADER_UID
        self.control = folder / "ctl"
        self.socket = self.control / "sock"
        self._control_fd: int | None = None
        self.container: Container | None = None
        self._cgroup: SandboxCgroup | None = None
        self._groups: cmdgroups.CommandGroups | None = None
        self.ended_by: str | None = None  # how the last command's leftovers were ended
        self._limit: str | None = None
        self.files: WorkspaceFiles  # made once the trusted files are in
        self._lock = threading.Lock()  # one command at a time per sandbox
        self._control_mounted = False
        remove_tree(folder)
        self.control.mkdir(parents=True, mode=0o700)
        # A tmpfs of its own, so the container's mount table shows `/`, not a host path.
        self._control_mounted = mount_workspace_tmpfs(self.control, CONTROL_BYTES)
        os.chmod(self.control, 0o700)
        # Socket paths are limited to 108 bytes; a scratch folder's may be longer.
        self._control_fd = os.open(self.control, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        self.socket = Path(f"/proc/self/fd/{self._control_fd}/sock")
        with _open_lock:
            _open.add(self)
        try:
            self._start(image)
            trees = [source] if overlay is None else [source, overlay]
            known_big: dict[str, int] = {}
            for tree in trees:
                known_big |= _big_files(tree, self.limits.diff_bytes)
            self._copy_in(trees)
            if track_changes:
                self._snapshot()
            diff_env = self._diff_env if track_changes else None
            self.files = WorkspaceFiles(self, self.limits, known_big, diff_env)
        except BaseException:
            self.close()
            raise

    # -- the container ------------------------------------------------------------------

    def _start(self, image: str) -> None:
        from harness.sandbox.seccomp import seccomp_program

        program = seccomp_program()
        filter_path = self.control / "seccomp.bpf"
        if program is not None:
            filter_path.write_bytes(program)
        limits = self.limits
        disk, owner = limits.disk_bytes, self.owner
        tmpfs = {
            WORKSPACE: f"rw,exec,nosuid,nodev,size={disk},uid={owner},gid={owner},mode=0755",
            "/tmp": f"rw,exec,nosuid,nodev,size={TMP_BYTES},mode=1777",
            "/var/tmp": f"rw,nosuid,nodev,size={TMP_BYTES},mode=1777",
            BASELINE: f"rw,nosuid,nodev,size={disk},uid={GRADER_UID},gid={GRADER_UID},mode=0755",
        }
        volumes = {str(self.control): {"bind": CONTROL, "mode": "rw"}}
        shown = [*python_paths(self.python_env)]
        for path in shown:  # an environment under /tmp (a CI clone): the tmpfs would hide it
            if any(str(path).startswith(folder + "/") for folder in ("/tmp", "/var/tmp")):
                volumes[str(path)] = {"bind": str(path), "mode": "ro"}
        if self.python_env is not None:  # at its own path: its python links to the image's
            volumes[str(self.python_env)] = {"bind": str(self.python_env), "mode": "ro"}
            for path in _harness_venv():  # the image holds it; this sandbox must not show it
                tmpfs[str(path)] = "ro,size=4k"
        for path in self.settings.hidden:  # secrets inside what the image holds: covered
            if not any(path == root or root in path.parents for root in shown):
                continue
            if path.is_dir():
                tmpfs[str(path)] = "ro,size=4k"
            elif path.exists():
                volumes[str(empty_file())] = {"bind": str(path), "mode": "ro"}
        command = [
            # the image holds the harness's own interpreter at its path
            sys.executable if self.python_env is None else sandbox_python(self.python_env),
            "-I",
            "-c",
            SERVER_SOURCE,
            f"{CONTROL}/sock",
            f"{CONTROL}/seccomp.bpf",
            os.readlink("/proc/self/ns/pid"),  # the server refuses to run in this namespace
        ]
        self.container = self.client.containers.run(
            image,
            command,
            detach=True,
            user="0:0",
            network_mode="none",
            read_only=True,
            cap_drop=["ALL"],
            cap_add=["SETUID", "SETGID", "KILL"],
            security_opt=["no-new-privileges"],
            mem_limit=limits.memory_bytes,
            memswap_limit=limits.memory_bytes,
            pids_limit=limits.processes,
            tmpfs=tmpfs,
            volumes=volumes,
            hostname="sandbox",
            ipc_mode="private",
            working_dir="/",
            environment={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            labels={LABEL: "1", f"{LABEL}.owner": str(os.getpid())},
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.socket.exists():
            self.container.reload()
            if self.container.status not in ("created", "running"):
                logs = self.container.logs().decode(errors="replace")
                raise SandboxUnavailable(f"the sandbox container stopped: {last_line(logs)}")
            if time.monotonic() > deadline:
                raise SandboxUnavailable("the sandbox container's command server did not start")
            time.sleep(0.01)
        self._cgroup = _container_cgroup(self.container, self.limits)
        self._groups = _command_groups(self.container)

    def _copy_in(self, trees: Sequence[Path]) -> None:
        argv = ["tar", "-x", "--no-same-owner", "-f", "-", "-C", WORKSPACE]
        done = self._run(Command(argv, timeout=SERVICE_TIMEOUT_S, stdin=_tar_of(trees)), self.owner)
        if done.exit_code != 0:
            raise SandboxUnavailable(f"cannot copy the workspace in: {last_line(done.output)}")

    def _snapshot(self) -> None:
        excluded = [f":(exclude,glob){pattern}" for pattern in NOT_CHANGES]
        env = git_env(home="/tmp") | {"GIT_DIR": BASELINE, "GIT_WORK_TREE": WORKSPACE}
        argv = ["sh", "-c", BASELINE_SCRIPT, "sh", *excluded]
        done = self._run(Command(argv, timeout=SERVICE_TIMEOUT_S, env=env), GRADER_UID)
        if done.exit_code != 0:
            raise SandboxUnavailable(f"cannot snapshot the workspace: {last_line(done.output)}")

    @property
    def root(self) -> str:
        return WORKSPACE

    # -- commands -----------------------------------------------------------------------

    def _run(self, command: Command, uid: int) -> Completed:
        """`command` through the server, as `uid` (the mounts are fixed: `read_only` and
        `baseline` mean what the owner of the workspace decides, see the module's notes)."""
        with self._lock, self.settings.command_slots or nullcontext():
            group = self._command_group()
            try:
                served = run_served(
                    self.socket,
                    command,
                    uid=uid,
                    cwd=WORKSPACE,
                    base_env=scrubbed_env("/tmp", self.python_env),
                    file_bytes=self.limits.file_bytes,
                    group=group,
                )
            except ServerGone as error:
                raise self._gone(str(error)) from None
        self.ended_by = served.ended_by
        if served.lost:
            raise self._gone("the command server went away")
        if served.reset:  # no fresh namespace to fall back on: this sandbox is done
            raise self._gone("a process of the command outlived every kill")
        if served.workspace_free == 0 and self._limit is None:
            self._limit = (
                f"workspace disk limit of {describe_bytes(self.limits.disk_bytes)} reached"
            )
        return served.completed

    def _command_group(self) -> cmdgroups.CommandGroup | None:
        if self._groups is None:
            return None
        try:
            return self._groups.command()
        except OSError as error:
            cmdgroups.log.warning("no cgroup for this command (%s): the server sweeps", error)
            return None

    def _gone(self, why: str) -> Exception:
        self._check_limits(raise_=False)
        if self._limit is not None:
            return ResourceLimitExceeded(self._limit)
        return SandboxError(f"the sandbox stopped working: {why}")

    def execute(self, command: Command) -> Completed:
        uid = AGENT_UID if command.read_only else self.owner
        done = self._run(command.with_argv(with_sandbox_python(command.argv, self.python_env)), uid)
        self._check_limits()
        return done

    def run(self, command: str, timeout: float) -> Completed:
        # The agent's own pytest runs as grading's does (same plugins and flags).
        return self.execute(Command.shell(command, timeout, env=AGENT_PYTEST_ENV))

    # -- files, through commands (`files.py`) -------------------------------------------

    def read(self, path: str) -> str:
        return self.files.read(path)

    def write(self, path: str, text: str) -> None:
        self.files.write(path, text)

    def diff(self) -> str:
        return self.files.diff()

    def apply_patch(self, patch: str) -> None:
        self.files.apply_patch(patch)

    def _check_limits(self, raise_: bool = True) -> None:
        if self._limit is None and self._cgroup is not None:
            self._limit = self._cgroup.limit_hit()
        if self._limit is not None and raise_:
            raise ResourceLimitExceeded(self._limit)

    def limit_hit(self) -> str | None:
        return self._limit

    # -- changes ------------------------------------------------------------------------

    def _diff_env(self) -> dict[str, str]:
        # /tmp outlives commands here: fresh, unguessable index and object folder per diff.
        env = diff_env(git_dir=BASELINE, work_tree=WORKSPACE, scratch="/tmp")
        token = secrets.token_hex(8)
        env["GIT_INDEX_FILE"] = f"/tmp/.cursorbench-index-{token}"
        env["GIT_OBJECT_DIRECTORY"] = f"/tmp/.cursorbench-objects-{token}"
        return env

    def close(self) -> None:
        with _open_lock:
            _open.discard(self)
        container, self.container = self.container, None
        groups, self._groups = self._groups, None
        if groups is not None:  # the attempt's end; and Docker removes no cgroup with children
            groups.close()
        if container is not None:
            with contextlib.suppress(Exception):  # gone already, or the engine is: nothing to do
                container.remove(force=True)
        self._cgroup = None
        if self._control_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._control_fd)
            self._control_fd = None
        if self._control_mounted:
            with contextlib.suppress(OSError):
                unmount(self.control)
            self._control_mounted = False
        remove_tree(self.folder)


def _harness_venv() -> list[Path]:
    """The harness's own virtual environment, where it runs in one (else nothing: the base
    interpreter's site-packages are not in the image)."""
    if Path(sys.prefix).resolve() == Path(sys.base_prefix).resolve():
        return []
    return [Path(sys.prefix).resolve()]


def _container_cgroup(container: Container, limits: ResourceLimits) -> SandboxCgroup | None:
    """The container's memory and pids cgroups, watched for limits hit; None if not found."""
    layout = detect_layout()
    pid = (container.attrs.get("State") or {}).get("Pid")
    if layout is None or not pid:
        container.reload()
        pid = (container.attrs.get("State") or {}).get("Pid")
    if layout is None or not pid:
        return None
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    paths: dict[str, str] = {}
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            paths[name] = path
    if layout.version == 2:
        folder = layout.memory_mount / paths.get("", "/").lstrip("/")
        return SandboxCgroup.observe(folder, folder, 2, limits)
    memory = layout.memory_mount / paths.get("memory", "/").lstrip("/")
    pids = layout.pids_mount / paths.get("pids", "/").lstrip("/")
    return SandboxCgroup.observe(memory, pids, 1, limits)


def _command_groups(container: Container) -> cmdgroups.CommandGroups | None:
    """Per-command cgroups under the container's v2 folder, or (a hybrid host, where the
    container has none of its own) under a home its init is moved into; None, logged, where
    neither works."""
    pid = (container.attrs.get("State") or {}).get("Pid")
    if not pid:
        container.reload()
        pid = (container.attrs.get("State") or {}).get("Pid")
    folder = cmdgroups.v2_folder_of(pid) if pid else None
    if not pid or folder is None:
        cmdgroups.warn_fallback("the container's cgroup v2 folder is unknown")
        return None
    own = folder != cmdgroups.v2_mount()
    groups = cmdgroups.for_sandbox(folder if own else None)
    if groups is not None and not own:
        try:
            groups.adopt(pid)  # before any command: only the server runs yet
        except OSError as error:
            groups.close()
            cmdgroups.warn_fallback(f"cannot move the container into its cgroup: {error}")
            return None
    return groups


def sweep_stale_containers(client: docker.DockerClient) -> int:
    """Removes sandbox containers whose owning process is gone (a killed run's)."""
    removed = 0
    for container in client.containers.list(all=True, filters={"label": LABEL}):
        owner = container.labels.get(f"{LABEL}.owner", "")
        if owner.isdigit() and not _alive(int(owner)):
            with contextlib.suppress(Exception):
                container.remove(force=True)
                removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class DockerBackend:
    """Opens `DockerSandbox`es from the base image; the engine is found or started first."""

    name = "docker"
    confined = True

    def __init__(self, settings: SandboxSettings) -> None:
        self.settings = settings
        self.client = docker_client()
        self.image = ensure_image(self.client)
        sweep_stale_containers(self.client)

    def open(
        self,
        workspace: Path,
        scratch: Path,
        overlay: Path | None = None,
        track_changes: bool = True,
        python_env: Path | None = None,
    ) -> DockerSandbox:
        return DockerSandbox(
            self.client,
            self.image,
            workspace,
            scratch,
            self.settings,
            overlay,
            track_changes,
            python_env,
        )

    def self_test(self, scratch: Path) -> None:
        scratch.mkdir(parents=True, exist_ok=True)
        probe = scratch / "probe"
        probe.mkdir(exist_ok=True)
        sandbox = self.open(probe, scratch / "sandbox", track_changes=False)
        try:
            done = sandbox.execute(Command(["python", "-P", "-c", "import pytest"], timeout=60))
        finally:
            sandbox.close()
        if done.exit_code != 0:
            last = last_line(done.output) or "no output"
            raise SandboxUnavailable(f"the docker sandbox cannot run Python here: {last}")
