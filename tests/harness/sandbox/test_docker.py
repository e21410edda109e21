"""The Docker backend: confinement (what a command inside can see, write, reach and become),
resource limits, a whole run, and the same outcomes as bubblewrap.

Every test here needs the engine: the `docker` mark skips them where it cannot start and
fails them under CI (`tests/conftest.py`), where `.ci/run` must exercise them.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cursorbench.tasks.loader import bundled_suite
from harness.model.doubles import ScriptedDouble
from harness.model.openai_server import Reply
from harness.run.runner import RunOutcome
from harness.sandbox import (
    ResourceLimitExceeded,
    Sandbox,
    SandboxSettings,
    bubblewrap_works,
    open_backend,
)
from harness.sandbox.command import Command
from harness.sandbox.limits import ResourceLimits

pytestmark = pytest.mark.docker

SMOKE_TASKS = len(list((bundled_suite() / "tasks").glob("*.yaml")))  # the default run's tasks


@pytest.fixture
def prepared(tmp_path: Path) -> Path:
    root = tmp_path / "prepared"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    return root


def open_box(prepared: Path, folder: Path, track: bool = True, **settings: Any) -> Sandbox:
    backend = open_backend("docker", SandboxSettings(**settings))
    return backend.open(prepared, folder, track_changes=track)


@pytest.fixture
def box(prepared: Path, tmp_path: Path) -> Iterator[Sandbox]:
    sandbox = open_box(prepared, tmp_path / "box")
    yield sandbox
    sandbox.close()


def test_the_workspace_appears_at_a_fixed_path(box: Sandbox) -> None:
    assert box.root == "/workspace"
    assert box.run("pwd; ls", 10).output.split() == ["/workspace", "a.py"]


@pytest.mark.parametrize("target", ["/etc", "/usr", "/", "/var", sys.prefix, "/.baseline"])
def test_everything_but_the_workspace_and_tmp_is_read_only(box: Sandbox, target: str) -> None:
    marker = f"{target.rstrip('/')}/cb-{uuid.uuid4().hex[:8]}"
    done = box.run(f"touch {marker} && echo wrote", 10)
    assert "wrote" not in done.output
    assert not os.path.exists(marker)
    assert box.run("touch /tmp/x /workspace/y && echo wrote", 10).output == "wrote\n"


def test_commands_run_as_nobody_without_capabilities_or_a_way_back(box: Sandbox) -> None:
    output = box.run(
        "id -u; grep -E 'CapEff|CapPrm|CapInh|CapAmb|NoNewPrivs' /proc/self/status", 10
    )
    assert output.output.split() == [
        "65534", "CapInh:", "0000000000000000", "CapPrm:", "0000000000000000",
        "CapEff:", "0000000000000000", "CapAmb:", "0000000000000000", "NoNewPrivs:", "1",
    ]  # fmt: skip


def test_the_command_server_cannot_be_reached_or_killed(box: Sandbox) -> None:
    done = box.run("ls /.ctl 2>&1; kill -9 1 2>&1; echo rc=$?", 10)
    assert "Permission denied" in done.output and "rc=0" not in done.output
    assert box.run("echo still here", 10).output == "still here\n"


def test_no_network_not_even_to_the_host(box: Sandbox) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    try:
        port = server.getsockname()[1]
        script = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)"
        assert box.execute(Command(["python", "-c", script], timeout=20)).exit_code != 0
        interfaces = box.run("cat /proc/net/dev | tail -n +3 | cut -d: -f1", 10).output.split()
        assert interfaces == ["lo"]
    finally:
        server.close()


def test_home_folders_checkouts_caches_and_host_processes_are_absent(box: Sandbox) -> None:
    done = box.run("ls /root/.cache /home 2>&1", 10)
    assert done.output.count("No such file") == 2
    # the checkout holds the Python environment the image carries, and nothing else
    # (a checkout without one, e.g. a git worktree, is not there at all)
    assert box.run(f"ls -A {Path.cwd()} 2>/dev/null", 10).output.split() in ([], [".venv"])
    assert "cursorbench" not in box.run("ls -R / 2>/dev/null | grep -c cursorbench", 30).output
    processes = box.run("ls /proc | grep '^[0-9]' | wc -l", 10).output.strip()
    assert int(processes) <= 5  # the server, the shell, ls, grep, wc


def test_mounts_show_no_host_path(box: Sandbox, tmp_path: Path) -> None:
    mounts = box.run("cat /proc/self/mountinfo", 10).output
    assert str(tmp_path) not in mounts and "/.cache/" not in mounts


def test_kernel_interfaces_are_read_only(box: Sandbox) -> None:
    before = Path("/proc/sys/kernel/core_pattern").read_text()
    done = box.run("echo '|/tmp/x' > /proc/sys/kernel/core_pattern; echo rc=$?", 10)
    assert "rc=0" not in done.output
    assert Path("/proc/sys/kernel/core_pattern").read_text() == before
    assert "rc=0" not in box.run("touch /sys/cb-x; echo rc=$?", 10).output


def test_a_timeout_kills_every_child_even_in_a_new_session(box: Sandbox) -> None:
    done = box.run("setsid sleep 300 & (sleep 300 &); sleep 300", 0.5)
    assert done.timed_out
    deadline = time.monotonic() + 3
    left = box.run("ps -eo user=,comm= | grep -c '^nobody.*sleep'", 10).output.strip()
    while left != "0" and time.monotonic() < deadline:
        left = box.run("ps -eo user=,comm= | grep -c '^nobody.*sleep'", 10).output.strip()
    assert left == "0"


def test_background_processes_do_not_outlive_their_command(box: Sandbox) -> None:
    assert box.run("nohup sleep 300 >/dev/null 2>&1 & echo started", 10).output == "started\n"
    assert box.run("ps -eo comm= | grep -c sleep", 10).output.strip() == "0"


def test_a_file_cannot_grow_past_the_limit(prepared: Path, tmp_path: Path) -> None:
    box = open_box(prepared, tmp_path / "fsize", limits=ResourceLimits(file_bytes=1 << 20))
    try:
        done = box.run("head -c 3000000 /dev/zero > big; echo rc=$?; ulimit -f unlimited", 10)
        assert "rc=0" not in done.output
        assert int(box.run("stat -c %s big", 10).output) <= 1 << 20
    finally:
        box.close()


def test_grading_commands_cannot_write_the_workspace(prepared: Path, tmp_path: Path) -> None:
    box = open_box(prepared, tmp_path / "grading", track=False)
    try:
        done = box.execute(
            Command(
                ["sh", "-c", "echo y > a.py; touch new; echo rc=$?"], timeout=10, read_only=True
            )
        )
        assert "rc=0" not in done.output
        assert box.read("a.py") == "x = 1\n"
    finally:
        box.close()


def test_the_environment_is_scrubbed(box: Sandbox) -> None:
    output = box.run("env", 10).output
    assert "OPENAI_API_KEY" not in output and "HOME=/tmp" in output


@pytest.mark.parametrize(
    ("limits", "script", "message"),
    [
        (
            ResourceLimits(memory_bytes=256 << 20, disk_bytes=64 << 20),
            "python -c 'x = bytearray(1 << 30)'",
            "memory limit",
        ),
        (ResourceLimits(processes=64), "for i in $(seq 200); do sleep 5 & done; wait", "process"),
        (
            ResourceLimits(disk_bytes=8 << 20, memory_bytes=512 << 20),
            "head -c 20000000 /dev/zero > fill",
            "disk limit",
        ),
    ],
)
def test_limits_end_in_resource_limit_exceeded(
    prepared: Path, tmp_path: Path, limits: ResourceLimits, script: str, message: str
) -> None:
    box = open_box(prepared, tmp_path / "limits", limits=limits)
    try:
        with pytest.raises(ResourceLimitExceeded, match=message):
            box.run(script, 30)
        assert box.limit_hit() is not None
    finally:
        box.close()


# -- whole runs ------------------------------------------------------------------------------


def _outcomes(outcome: RunOutcome) -> dict[str, tuple[Any, ...]]:
    """What must not depend on the backend: per attempt, the verdict and each test's outcome."""
    return {
        result.key: (
            result.status,
            result.failure,
            dict(result.tests),
            result.diff_lines_added,
            result.diff_lines_removed,
            result.turns,
            result.tool_calls,
        )
        for result in outcome.results
    }


@pytest.mark.slow
def test_the_reference_solver_resolves_every_bundled_task_on_docker(
    run_benchmark: Callable[..., RunOutcome],
) -> None:
    outcome = run_benchmark(sandbox="docker")
    assert outcome.run.sandbox == "docker"
    assert len(outcome.results) == SMOKE_TASKS
    assert all(result.resolved for result in outcome.results), [
        (r.task_id, r.failure, r.error) for r in outcome.results
    ]
    assert not any("UNCONFINED" in warning for warning in outcome.run.warnings)


def _scripted_failure() -> ScriptedDouble:
    """A wrong change (a broken slugify), a failing test run, then finish."""
    wrong = "def slugify(text, separator='-', max_length=None):\n    return text\n"
    return ScriptedDouble(
        [
            Reply(tool_calls=[("write_file", {"path": "textkit/slug.py", "content": wrong})]),
            Reply(tool_calls=[("run", {"command": "ls textkit; echo hi > /tmp/x"})]),
            Reply(tool_calls=[("finish", {"summary": "done"})]),
        ]
    )


@pytest.mark.slow
@pytest.mark.skipif(not bubblewrap_works(), reason="bubblewrap cannot run here")
def test_bubblewrap_and_docker_give_identical_outcomes(
    run_benchmark: Callable[..., RunOutcome],
    serve: Callable[[Any], str],
    tmp_path: Path,
) -> None:
    tasks = ["textkit-*", "minicalc-*"]
    reference = {
        backend: _outcomes(
            run_benchmark(sandbox=backend, tasks=tasks, out=tmp_path / f"ref-{backend}")
        )
        for backend in ("bubblewrap", "docker")
    }
    assert reference["bubblewrap"] == reference["docker"]
    assert len(reference["docker"]) == 4
    scripted = {
        backend: _outcomes(
            run_benchmark(
                sandbox=backend,
                base_url=serve(_scripted_failure()),
                model="scripted-double",
                tasks=["textkit-slugify"],
                out=tmp_path / f"scripted-{backend}",
            )
        )
        for backend in ("bubblewrap", "docker")
    }
    assert scripted["bubblewrap"] == scripted["docker"]
    ((_status, failure, tests, *_),) = scripted["docker"].values()
    assert failure is not None and failure.value == "tests_failed"
    assert any(outcome.value == "passed" for outcome in tests.values())
    assert any(outcome.value != "passed" for outcome in tests.values())


def test_the_image_is_small_and_building_prunes_older_tags_only_of_its_own() -> None:
    """Older fingerprints' tags go when an image is built (`prune_images`); an image of
    another repository, even the same image under another name, stays."""
    from harness.sandbox.engine import docker_client
    from harness.sandbox.image import IMAGE_REPOSITORY, ensure_image, prune_images

    client = docker_client()
    tag = ensure_image(client)
    current = client.images.get(tag)
    assert current.attrs["Size"] < 800 * 2**20  # the harness's 2 GB environment, trimmed
    old, other = f"{IMAGE_REPOSITORY}:old-test", "not-cursorbench:kept-by-prune"
    current.tag(IMAGE_REPOSITORY, "old-test")
    current.tag("not-cursorbench", "kept-by-prune")
    try:
        assert prune_images(client, keep=tag) == [old]
        tags = set(client.images.get(tag).tags)
        assert tag in tags and other in tags and old not in tags
    finally:
        for name in (old, other):
            with contextlib.suppress(Exception):
                client.images.remove(name)


def test_the_root_is_the_same_allow_list_as_under_bubblewrap(box: Sandbox) -> None:
    from harness.sandbox.view import python_left_out, scan_roots, system_tree, under_any

    absent = (
        "/usr/lib/python3", "/usr/lib/python3.11", "/usr/lib/google-cloud-sdk", "/usr/share/doc",
        "/usr/local", "/opt", "/srv", "/home", "/etc/shadow", "/usr/bin/python3", "/usr/bin/perl",
    )  # fmt: skip
    checks = " ".join(f"test -e {path} && echo VISIBLE {path};" for path in absent)
    tools = "sh bash git grep sed find xargs tar gzip diff awk ps ls cat"
    done = box.run(
        f"{checks} for t in {tools}; do command -v $t >/dev/null || echo NO $t; done", 10
    )
    assert "VISIBLE" not in done.output and "NO " not in done.output, done.output
    skipped = ("/proc", "/dev", "/sys", "/tmp", "/var/tmp", "/workspace", "/.ctl", "/.baseline")
    prune = " -o ".join(f"-path {path}" for path in skipped)
    listed = box.run(f"find / \\( {prune} \\) -prune -o ! -type d -print > /tmp/seen", 120)
    assert listed.exit_code == 0, listed.output
    seen = box.execute(Command(["cat", "/tmp/seen"], timeout=60, output_cap=64 << 20)).output
    docker_own = {"/etc/hostname", "/etc/hosts", "/etc/resolv.conf", "/etc/mtab", "/.dockerenv"}
    tree, roots = system_tree(), scan_roots()
    in_python = under_any(root for root in roots if root != tree)
    covered = {str(path) for path in python_left_out()}

    def scanned(inside: str) -> bool:
        host = tree / inside.lstrip("/")
        if inside in docker_own or inside in covered or host.exists() or host.is_symlink():
            return True
        return in_python(inside)

    files = seen.splitlines()
    assert len(files) > 1000
    assert [path for path in files if not scanned(path)] == []
