"""Confinement under bubblewrap: what a command inside can see, write, reach and become."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.sandbox import (
    Sandbox,
    SandboxSettings,
    SandboxUnavailable,
    bubblewrap_works,
    choose_backend,
    open_backend,
)
from harness.sandbox.bubblewrap import (
    bubblewrap_problem,
    scrubbed_env,
    unprivileged_user_available,
)
from harness.sandbox.command import Command
from harness.sandbox.limits import ResourceLimits

pytestmark = pytest.mark.skipif(not bubblewrap_works(), reason="bubblewrap cannot run here")


@pytest.fixture
def prepared(tmp_path: Path) -> Path:
    root = tmp_path / "prepared"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    return root


def open_box(prepared: Path, folder: Path, **settings: object) -> Sandbox:
    return open_backend("bubblewrap", SandboxSettings(**settings)).open(prepared, folder)  # type: ignore[arg-type]


@pytest.fixture
def box(prepared: Path, tmp_path: Path) -> Iterator[Sandbox]:
    sandbox = open_box(prepared, tmp_path / "box")
    yield sandbox
    sandbox.close()


def test_choose_backend() -> None:
    assert choose_backend("auto") == "bubblewrap"
    assert choose_backend("subprocess") == "subprocess"
    assert choose_backend("docker") == "docker"
    for bad in ("", "Bubblewrap", "none", "Docker"):
        with pytest.raises(SandboxUnavailable, match="unknown sandbox backend"):
            choose_backend(bad)


def test_the_workspace_appears_at_a_fixed_path(box: Sandbox) -> None:
    assert box.root == "/workspace"
    assert box.run("pwd; ls", 10).output.split() == ["/workspace", "a.py"]


@pytest.mark.parametrize("target", ["/etc", "/usr", "/", "/var", sys.prefix])
def test_everything_but_the_workspace_and_tmp_is_read_only(box: Sandbox, target: str) -> None:
    marker = f"{target.rstrip('/')}/cb-{uuid.uuid4().hex[:8]}"
    done = box.run(f"touch {marker} && echo wrote", 10)
    assert "wrote" not in done.output
    assert not os.path.exists(marker)


def test_tmp_is_private_and_writable(box: Sandbox, tmp_path: Path) -> None:
    marker = f"cb-{uuid.uuid4().hex[:8]}"
    assert box.run(f"echo hi > /tmp/{marker} && cat /tmp/{marker}", 10).output == "hi\n"
    assert not (Path("/tmp") / marker).exists()
    assert box.run(f"ls /tmp/{marker}", 10).exit_code != 0  # a new command, a new /tmp


def test_home_folders_checkouts_and_caches_are_absent(box: Sandbox) -> None:
    done = box.run(f"ls /root/.cache /home {Path.cwd()} 2>&1; ls / | tr '\\n' ' '", 10)
    assert "No such file" in done.output or "Permission denied" in done.output
    assert "cursorbench" not in box.run("ls -R / 2>/dev/null | grep -c cursorbench", 30).output


def test_no_network_not_even_loopback(box: Sandbox) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    try:
        port = server.getsockname()[1]
        script = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)"
        done = box.execute(Command(["python", "-c", script], timeout=20))
        assert done.exit_code != 0
    finally:
        server.close()


def test_host_processes_are_invisible(box: Sandbox) -> None:
    assert box.run("ls /proc | grep -c '^[0-9]'", 10).output.strip() in {"2", "3", "4", "5"}


@pytest.mark.skipif(not unprivileged_user_available(), reason="needs root and setpriv")
def test_commands_run_as_nobody_without_capabilities_or_a_way_back(box: Sandbox) -> None:
    output = box.run("id -u; grep -E 'CapEff|CapPrm|NoNewPrivs' /proc/self/status", 10).output
    assert output.split() == [
        "65534", "CapPrm:", "0000000000000000", "CapEff:", "0000000000000000", "NoNewPrivs:", "1",
    ]  # fmt: skip


def test_kernel_interfaces_are_read_only(box: Sandbox) -> None:
    before = Path("/proc/sys/kernel/core_pattern").read_text()
    done = box.run("echo '|/tmp/x' > /proc/sys/kernel/core_pattern; echo rc=$?", 10)
    assert "rc=0" not in done.output
    assert Path("/proc/sys/kernel/core_pattern").read_text() == before
    assert (
        box.run("ls /sys 2>&1 | head -1", 10).output.strip().endswith("No such file or directory")
    )


def test_read_only_mounts_cannot_be_remounted_writable(box: Sandbox) -> None:
    done = box.run("mount -o remount,bind,rw /usr 2>&1; touch /usr/cb-escape; echo rc=$?", 10)
    assert "rc=0" not in done.output
    assert not Path("/usr/cb-escape").exists()


def test_the_command_line_of_pid_1_shows_no_host_path(box: Sandbox, tmp_path: Path) -> None:
    pid1 = box.run("tr '\\0' ' ' < /proc/1/cmdline", 10).output
    assert pid1.startswith("bwrap --args ")
    assert "--bind" not in pid1 and "--tmpfs" not in pid1 and str(tmp_path) not in pid1
    mounts = box.run("cat /proc/self/mountinfo", 10).output
    assert str(tmp_path) not in mounts and "/.cache/" not in mounts


def test_a_file_cannot_grow_past_the_limit(prepared: Path, tmp_path: Path) -> None:
    box = open_box(prepared, tmp_path / "fsize", limits=ResourceLimits(file_bytes=1 << 20))
    try:
        done = box.run("head -c 3000000 /dev/zero > big; echo rc=$?; ulimit -f unlimited", 10)
        assert "rc=0" not in done.output
        size = int(box.run("stat -c %s big", 10).output)
        assert size <= 1 << 20
    finally:
        box.close()


def test_hidden_paths_inside_the_python_environment_are_empty(
    prepared: Path, tmp_path: Path
) -> None:
    secret_dir = Path(sys.prefix) / f"cb-secret-{uuid.uuid4().hex[:8]}"
    secret_dir.mkdir()
    (secret_dir / "answer.py").write_text("ANSWER = 42\n")
    try:
        box = open_box(prepared, tmp_path / "hidden", hidden=(secret_dir,))
        try:
            assert box.run(f"ls -A {secret_dir}", 10).output == ""
        finally:
            box.close()
    finally:
        (secret_dir / "answer.py").unlink()
        secret_dir.rmdir()


def test_a_timeout_kills_every_child(box: Sandbox) -> None:
    marker = f"cb-sleeper-{uuid.uuid4().hex[:8]}"
    done = box.run(f"(exec -a {marker} sleep 300 &) ; sleep 300", 0.5)
    assert done.timed_out
    deadline = time.monotonic() + 3  # the kernel tears the PID namespace down asynchronously
    while _running(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _running(marker) == []


def _running(marker: str) -> list[str]:
    return [p for p in os.listdir("/proc") if p.isdigit() and _cmdline(p).startswith(marker)]


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def test_the_environment_is_scrubbed(box: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    assert "OPENAI_API_KEY" not in scrubbed_env("/tmp")
    output = box.run("env", 10).output
    assert "OPENAI_API_KEY" not in output and "HOME=/tmp" in output


DOTDOT_SCRIPT = """
import sys
from pathlib import Path
from harness.sandbox import Command, open_backend

assert ".." in sys.executable, sys.executable
scratch = Path(sys.argv[1])
backend = open_backend("bubblewrap")
backend.self_test(scratch / "self-test")  # what open_ready runs: `python` on the PATH
(scratch / "tree").mkdir()
box = backend.open(scratch / "tree", scratch / "box", track_changes=False)
try:  # grading's way: the harness's own sys.executable, `-P -m pytest`
    done = box.execute(Command([sys.executable, "-P", "-m", "pytest", "--version"], timeout=60))
finally:
    box.close()
assert done.exit_code == 0, done.output
print("ok")
"""


def test_an_interpreter_started_by_a_dotdot_path_still_runs_python_inside(
    tmp_path: Path,
) -> None:
    """`sys.executable` keeps the path Python was started by (`../../venv/bin/python`), which
    walks through folders the sandbox lacks: the sandbox's PATH gets the resolved folder, and
    a command started by `sys.executable` (grading's pytest) the resolved interpreter."""
    start = tmp_path / "a" / "b"
    start.mkdir(parents=True)
    dotted = os.path.relpath(sys.executable, start)
    assert ".." in dotted
    env = os.environ | {"PYTHONPATH": str(Path(__file__).parents[3])}
    done = subprocess.run(
        [dotted, "-c", DOTDOT_SCRIPT, str(tmp_path)],
        cwd=start,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_a_missing_bwrap_is_named_in_the_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    bubblewrap_problem.cache_clear()
    try:
        with pytest.raises(SandboxUnavailable, match=r"'bwrap' is not on PATH .*bubblewrap"):
            open_backend("bubblewrap")
    finally:
        monkeypatch.undo()
        bubblewrap_problem.cache_clear()


def test_auto_refuses_in_one_line_where_bubblewrap_cannot_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from tests.cli_runner import cursorbench

    monkeypatch.setenv("PATH", "/nonexistent")
    bubblewrap_problem.cache_clear()
    try:
        with pytest.raises(SandboxUnavailable) as refused:
            choose_backend("auto")
        assert "\n" not in str(refused.value) and "--sandbox subprocess" in str(refused.value)
        assert choose_backend("subprocess") == "subprocess"  # the explicit opt-in still works
        done = cursorbench("run", "--tasks", "textkit-slugify", "--out", str(tmp_path / "run"))
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert "--sandbox auto: bubblewrap cannot run here" in done.stderr
        assert not (tmp_path / "run").exists()
    finally:
        monkeypatch.undo()
        bubblewrap_problem.cache_clear()


ABSENT = (
    "/usr/lib/python3", "/usr/lib/python3.11", "/usr/lib/google-cloud-sdk", "/usr/share/doc",
    "/usr/local", "/opt", "/srv", "/home", "/etc/shadow", "/etc/ssh",
    "/usr/bin/python3", "/usr/bin/perl", "/usr/bin/curl",
)  # fmt: skip


def test_the_root_is_the_allow_list(box: Sandbox) -> None:
    checks = " ".join(f"test -e {path} && echo VISIBLE {path};" for path in ABSENT)
    tools = "sh bash git grep sed find xargs tar gzip diff awk ps setpriv prlimit ls cat"
    done = box.run(
        f"{checks} for t in {tools}; do command -v $t >/dev/null || echo NO $t; done", 10
    )
    assert "VISIBLE" not in done.output and "NO " not in done.output, done.output
    users = box.run("cat /etc/passwd", 10).output
    assert [line.split(":")[0] for line in users.splitlines()] == ["root", "cbgrader", "nobody"]
    python = box.run("python -c 'import pytest, hypothesis, zoneinfo, sqlite3, ssl; print(1)'", 30)
    assert python.output.strip() == "1", python.output


def test_the_python_environment_shows_no_left_out_distribution(box: Sandbox) -> None:
    from harness.sandbox.view import python_left_out

    left_out = [str(path) for path in python_left_out()][:40]
    assert left_out  # torch, ray, ... and the base interpreter's own site-packages
    done = box.run(
        " ".join(
            f'{{ test -f {p} -a -s {p} || {{ test -d {p} && test -n "$(ls -A {p})"; }}; }} '
            f"&& echo SHOWN {p};"
            for p in left_out
        ),
        10,
    )
    assert "SHOWN" not in done.output, done.output


def test_the_leak_scan_covers_every_file_a_sandbox_can_read(box: Sandbox, tmp_path: Path) -> None:
    from harness.sandbox.view import python_left_out, scan_roots, system_tree, under_any

    prune = " -o ".join(f"-path {p}" for p in ("/proc", "/dev", "/tmp", "/var/tmp", "/workspace"))
    done = box.run(f"find / \\( {prune} \\) -prune -o ! -type d -print > /workspace/seen", 120)
    assert done.exit_code == 0, done.output
    seen = (Path(box.host_workspace) / "seen").read_text().splitlines()  # type: ignore[attr-defined]
    tree, roots = system_tree(), scan_roots()
    in_python = under_any(root for root in roots if root != tree)
    covered = {str(path) for path in python_left_out()}  # shown as empty files: nothing to read

    def scanned(inside: str) -> bool:
        if inside in covered:
            return True
        if (tree / inside.lstrip("/")).exists() or (tree / inside.lstrip("/")).is_symlink():
            return True
        return in_python(inside)

    assert len(seen) > 1000
    assert [path for path in seen if not scanned(path)] == []
