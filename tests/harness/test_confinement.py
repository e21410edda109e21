"""Confinement under bubblewrap: read-only root, private /tmp, no network, hidden paths, PIDs."""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.sandbox.confinement import (
    Confinement,
    SandboxUnavailable,
    bubblewrap_works,
    choose_backend,
    scrubbed_env,
)
from harness.sandbox.process import Completed, run_process

needs_bwrap = pytest.mark.skipif(
    not bubblewrap_works(), reason="bubblewrap cannot build a namespace on this machine"
)


def run_in(
    confinement: Confinement,
    command: str,
    workspace: Path,
    *,
    writable: list[Path] | None = None,
    timeout: float = 10.0,
) -> Completed:
    argv = confinement.wrap(
        ["bash", "-c", command], cwd=workspace, writable=writable or [workspace]
    )
    return run_process(argv, cwd=workspace, env=scrubbed_env(Path("/tmp")), timeout=timeout)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir()
    return path


BWRAP = Confinement("bubblewrap")
PLAIN = Confinement("subprocess")


def processes_with(marker: str) -> list[int]:
    """Host pids whose command line contains `marker` (zombies have none)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(entry))
    return found


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP server on loopback (the host side); yields its port."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


# ---- backends and environment (no bubblewrap needed) ----


def test_choose_backend_subprocess_is_subprocess() -> None:
    assert choose_backend("subprocess") == "subprocess"


@pytest.mark.parametrize("name", ["docker", "", "Bubblewrap", "none"])
def test_choose_backend_unknown_name_raises(name: str) -> None:
    with pytest.raises(SandboxUnavailable, match="unknown sandbox backend"):
        choose_backend(name)


def test_choose_backend_auto_follows_bubblewrap_availability() -> None:
    assert choose_backend("auto") == ("bubblewrap" if bubblewrap_works() else "subprocess")


def test_subprocess_confinement_does_not_wrap(workspace: Path) -> None:
    argv = ["bash", "-c", "true"]
    assert not PLAIN.confined
    assert PLAIN.wrap(argv, cwd=workspace, writable=[workspace]) == argv


def test_bubblewrap_confinement_wraps_with_bwrap(workspace: Path) -> None:
    argv = BWRAP.wrap(["true"], cwd=workspace, writable=[workspace])
    assert BWRAP.confined
    assert argv[0] == "bwrap"
    assert argv[-1] == "true"
    assert "--unshare-net" in argv
    assert "--unshare-pid" in argv
    assert argv[argv.index("--chdir") + 1] == str(workspace)


def test_scrubbed_env_drops_the_harness_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
    env = scrubbed_env(Path("/home/agent"))
    assert "OPENAI_API_KEY" not in env
    assert "AWS_SECRET_ACCESS_KEY" not in env
    assert "CURSORBENCH_DB" not in env
    assert "sk-secret" not in env.values()
    assert env["HOME"] == "/home/agent"
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert env["PATH"].split(os.pathsep)[-1] == "/bin"


def test_scrubbed_env_reaches_the_command(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    done = run_in(PLAIN, "env", workspace)
    assert done.exit_code == 0
    assert "HOME=/tmp" in done.output.splitlines()
    assert "OPENAI_API_KEY" not in done.output
    assert "sk-secret" not in done.output


# ---- under bubblewrap ----


@needs_bwrap
def test_choose_backend_bubblewrap_when_it_works() -> None:
    assert choose_backend("bubblewrap") == "bubblewrap"
    assert choose_backend("auto") == "bubblewrap"


@needs_bwrap
@pytest.mark.parametrize("target", ["/etc", "/usr", "/root", "/var"])
def test_root_is_read_only(workspace: Path, target: str) -> None:
    name = f"cursorbench-{uuid.uuid4().hex}"
    done = run_in(BWRAP, f"touch {target}/{name}", workspace)
    assert done.exit_code != 0
    assert "Read-only file system" in done.output
    assert not Path(target, name).exists()


@needs_bwrap
def test_writable_folder_is_writable(workspace: Path) -> None:
    done = run_in(BWRAP, "echo made > made.txt && mkdir -p sub && echo deep > sub/d.txt", workspace)
    assert done.exit_code == 0, done.output
    assert (workspace / "made.txt").read_text() == "made\n"
    assert (workspace / "sub" / "d.txt").read_text() == "deep\n"


@needs_bwrap
def test_only_named_folders_are_writable(tmp_path: Path, workspace: Path) -> None:
    results = tmp_path / "results"
    other = Path.home() / f".cursorbench-test-{uuid.uuid4().hex}"
    results.mkdir()
    done = run_in(
        BWRAP,
        f"echo r > {results}/r.txt; touch {other}; echo rc=$?",
        workspace,
        writable=[workspace, results],
    )
    assert (results / "r.txt").read_text() == "r\n"
    assert "rc=1" in done.output
    assert not other.exists()


@needs_bwrap
def test_tmp_is_private(workspace: Path) -> None:
    name = f"/tmp/cursorbench-private-{uuid.uuid4().hex}"
    done = run_in(BWRAP, f"echo inside > {name} && cat {name} && ls /tmp | wc -l", workspace)
    assert done.exit_code == 0, done.output
    assert done.output.splitlines()[0] == "inside"
    assert not Path(name).exists()
    # The host's own /tmp is not visible either: the pytest folders are, at most, mount points.
    host_only = Path(f"/tmp/cursorbench-host-{uuid.uuid4().hex}")
    host_only.write_text("host")
    try:
        seen = run_in(BWRAP, f"cat {host_only} || echo missing", workspace)
        assert seen.output.strip().splitlines()[-1] == "missing"
    finally:
        host_only.unlink()


@needs_bwrap
def test_no_network_not_even_loopback(workspace: Path, listener: int) -> None:
    probe = f"exec 3<>/dev/tcp/127.0.0.1/{listener} && echo CONNECTED || echo REFUSED"
    unconfined = run_in(PLAIN, probe, workspace)
    assert "CONNECTED" in unconfined.output  # the probe can succeed: the server is up
    confined = run_in(BWRAP, probe, workspace)
    assert "CONNECTED" not in confined.output
    assert "REFUSED" in confined.output


@pytest.fixture
def secrets(tmp_path: Path) -> tuple[Path, Path]:
    secret_dir = tmp_path / "hidden-tests"
    secret_dir.mkdir()
    (secret_dir / "test_secret.py").write_text("ANSWER = 42\n")
    secret_file = tmp_path / "answer.txt"
    secret_file.write_text("the answer\n")
    return secret_dir, secret_file


@needs_bwrap
def test_hidden_paths_do_not_leak(
    tmp_path: Path, workspace: Path, secrets: tuple[Path, Path]
) -> None:
    secret_dir, secret_file = secrets
    confinement = Confinement("bubblewrap", hidden=(secret_dir, secret_file, tmp_path / "absent"))
    done = run_in(
        confinement,
        f"echo dir:$(ls -A {secret_dir} | wc -l); cat {secret_file}; cat {secret_dir}/*; "
        f"echo write:$(echo x 2>/dev/null > {secret_file} && echo yes || echo no); "
        f"echo new:$(touch {secret_dir}/planted 2>/dev/null && echo yes || echo no)",
        workspace,
    )
    lines = done.output.splitlines()
    assert lines[0] == "dir:0"
    assert "the answer" not in done.output
    assert "ANSWER" not in done.output
    assert lines[-2:] == ["write:no", "new:yes"]  # a private tmpfs: writes vanish afterwards
    # The host copies are untouched.
    assert sorted(p.name for p in secret_dir.iterdir()) == ["test_secret.py"]
    assert secret_file.read_text() == "the answer\n"


@needs_bwrap
def test_hidden_file_reads_as_empty(workspace: Path, secrets: tuple[Path, Path]) -> None:
    _, secret_file = secrets
    confinement = Confinement("bubblewrap", hidden=(secret_file,))
    done = run_in(confinement, f"wc -c < {secret_file}", workspace)
    assert done.exit_code == 0, done.output
    assert done.output.strip() == "0"


@needs_bwrap
def test_workspace_under_a_hidden_folder_still_shows(tmp_path: Path) -> None:
    hidden = tmp_path / "cache"
    workspace = hidden / "attempt" / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "mine.txt").write_text("mine\n")
    (hidden / "secret.txt").write_text("secret\n")
    confinement = Confinement("bubblewrap", hidden=(hidden,))
    done = run_in(
        confinement, f"cat mine.txt; ls -A {hidden}/attempt; cat {hidden}/secret.txt", workspace
    )
    lines = done.output.splitlines()
    assert lines[0] == "mine"
    assert lines[1] == "workspace"
    assert "secret" not in lines
    assert "No such file or directory" in lines[2]


@needs_bwrap
def test_pid_namespace_hides_host_processes(workspace: Path) -> None:
    done = run_in(
        BWRAP,
        "ls /proc | grep -E '^[0-9]+$' | sort -n | tr '\\n' ' '; echo; cat /proc/1/comm",
        workspace,
    )
    assert done.exit_code == 0, done.output
    pids_line, init = done.output.splitlines()
    inside = [int(pid) for pid in pids_line.split()]
    assert len(inside) <= 6, inside
    assert max(inside) < 20
    assert init == "bwrap"
    assert os.getpid() > 20 and os.getpid() not in inside


@needs_bwrap
def test_ps_inside_sees_only_its_own_processes(workspace: Path) -> None:
    done = run_in(BWRAP, "ps -e -o pid= | wc -l", workspace)
    assert done.exit_code == 0, done.output
    assert int(done.output.strip()) <= 6


@needs_bwrap
def test_timeout_kills_confined_children(workspace: Path) -> None:
    marker = f"{uuid.uuid4().int % 900 + 100}.{os.getpid() % 1000:03d}"
    started = time.monotonic()
    done = run_in(BWRAP, f"sleep {marker} & sleep {marker} & wait", workspace, timeout=0.5)
    assert done.timed_out
    assert done.exit_code is None
    assert time.monotonic() - started < 3
    deadline = time.monotonic() + 2
    while processes_with(f"sleep\0{marker}") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert processes_with(f"sleep\0{marker}") == []


@needs_bwrap
def test_confined_python_works_with_the_scrubbed_env(workspace: Path) -> None:
    done = run_in(
        BWRAP, "python -c 'import sys; print(sys.version_info[:2] >= (3, 11))'", workspace
    )
    assert done.exit_code == 0, done.output
    assert done.output.strip() == "True"


@pytest.mark.parametrize(
    "backend",
    ["subprocess", pytest.param("bubblewrap", marks=needs_bwrap)],
)
def test_self_test_passes_where_python_and_pytest_run(tmp_path: Path, backend: str) -> None:
    Confinement(backend).self_test(tmp_path / "scratch")


@needs_bwrap
def test_self_test_fails_loudly_when_pytest_is_hidden(tmp_path: Path) -> None:
    packages = Path(pytest.__file__).parent.parent  # site-packages
    with pytest.raises(SandboxUnavailable, match="the bubblewrap sandbox cannot run Python here"):
        Confinement("bubblewrap", hidden=(packages,)).self_test(tmp_path / "scratch")


@pytest.mark.parametrize(
    "backend",
    ["subprocess", pytest.param("bubblewrap", marks=needs_bwrap)],
)
def test_run_wraps_and_runs(workspace: Path, backend: str) -> None:
    done = Confinement(backend).run(
        ["bash", "-c", "pwd; echo $ONLY; echo x > w.txt"],
        cwd=workspace,
        writable=[workspace],
        env={"PATH": "/usr/bin:/bin", "ONLY": "given"},
        timeout=10,
    )
    assert done.exit_code == 0, done.output
    assert done.output.splitlines() == [str(workspace), "given"]
    assert (workspace / "w.txt").read_text() == "x\n"
