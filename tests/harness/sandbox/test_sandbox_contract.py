"""The sandbox contract: what every backend must do, run against every backend.

A new backend (remote, ...) passes this file by adding its name to BACKENDS; every field
of a `Command` is checked on each backend, in an agent's sandbox and a grading one. Docker
tests carry the `docker` mark: skipped where no engine can start, failed instead under CI.
Confinement itself (what a command can see and reach) is in test_bubblewrap.py.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.grading.grade import pytest_argv
from harness.grading.pytest_env import PYTEST_ENV
from harness.sandbox import (
    PatchRejected,
    ResourceLimitExceeded,
    Sandbox,
    SandboxBackend,
    SandboxError,
    SandboxSettings,
    bubblewrap_works,
    open_backend,
)
from harness.sandbox.command import Command
from harness.sandbox.limits import ResourceLimits
from harness.sandbox.process import REPORT_PLACEHOLDER
from tests.harness import leftovers_kit

BACKENDS = [
    "subprocess",
    pytest.param(
        "bubblewrap",
        marks=pytest.mark.skipif(not bubblewrap_works(), reason="bubblewrap cannot run here"),
    ),
    pytest.param("docker", marks=pytest.mark.docker),
]


@pytest.fixture
def prepared(tmp_path: Path) -> Path:
    root = tmp_path / "prepared"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("VALUE = 1\n")
    (root / "pkg" / "gone.py").write_text("x = 1\n")
    (root / "README.md").write_text("hello\n")
    return root


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> SandboxBackend:
    limits = ResourceLimits(diff_bytes=1 << 20)
    return open_backend(request.param, SandboxSettings(limits=limits))


@pytest.fixture
def sandbox(backend: SandboxBackend, prepared: Path, tmp_path: Path) -> Iterator[Sandbox]:
    box = backend.open(prepared, tmp_path / "box")
    yield box
    box.close()


def test_workspace_is_a_copy_the_prepared_tree_never_changes(
    sandbox: Sandbox, prepared: Path
) -> None:
    sandbox.write("pkg/__init__.py", "VALUE = 2\n")
    sandbox.run("rm pkg/gone.py && touch made.txt", timeout=10)
    assert (prepared / "pkg" / "__init__.py").read_text() == "VALUE = 1\n"
    assert (prepared / "pkg" / "gone.py").exists() and not (prepared / "made.txt").exists()


def test_write_creates_folders_and_read_returns_text(sandbox: Sandbox) -> None:
    sandbox.write("new/deep/mod.py", "a = 'é'\n")
    assert sandbox.read("new/deep/mod.py") == "a = 'é'\n"
    assert sandbox.read("./new/../new/deep/mod.py") == "a = 'é'\n"


def test_read_replaces_undecodable_bytes(sandbox: Sandbox) -> None:
    sandbox.run("printf 'ok \\377\\376 end' > bin.txt", timeout=10)
    assert sandbox.read("bin.txt") == "ok \ufffd\ufffd end"


@pytest.mark.parametrize("path", ["missing.py", "pkg"])
def test_read_of_a_missing_file_or_a_folder_is_refused(sandbox: Sandbox, path: str) -> None:
    with pytest.raises(SandboxError, match="no such file"):
        sandbox.read(path)


def test_read_of_a_huge_file_is_refused(sandbox: Sandbox) -> None:
    sandbox.run("head -c 3000000 /dev/zero | tr '\\0' a > big.txt", timeout=10)
    with pytest.raises(SandboxError, match="larger than"):
        sandbox.read("big.txt")


def test_write_over_a_folder_is_refused(sandbox: Sandbox) -> None:
    with pytest.raises(SandboxError, match="is a directory"):
        sandbox.write("pkg", "x")


@pytest.mark.parametrize("path", ["../x", "pkg/../../x", "/etc/passwd", "/"])
def test_paths_outside_the_workspace_are_refused(sandbox: Sandbox, path: str) -> None:
    with pytest.raises(SandboxError, match="outside the workspace"):
        sandbox.write(path, "x")
    with pytest.raises(SandboxError, match="outside the workspace"):
        sandbox.read(path)


def test_commands_run_in_the_workspace(sandbox: Sandbox) -> None:
    done = sandbox.run("pwd; cat README.md", timeout=10)
    assert done.exit_code == 0
    assert done.output.splitlines() == [sandbox.root, "hello"]


def test_timeouts_are_reported(sandbox: Sandbox) -> None:
    done = sandbox.run("sleep 30", timeout=0.5)
    assert done.timed_out and done.exit_code is None and done.duration_s < 30  # killed early


def test_diff_shows_added_modified_deleted_without_caches(sandbox: Sandbox) -> None:
    sandbox.write("pkg/__init__.py", "VALUE = 2\n")
    sandbox.write("pkg/new.py", "y = 2\n")
    sandbox.run("rm pkg/gone.py; mkdir -p pkg/__pycache__; echo x > pkg/__pycache__/a.pyc", 10)
    patch = sandbox.diff()
    assert "diff --git a/pkg/__init__.py b/pkg/__init__.py" in patch
    assert "+VALUE = 2" in patch and "-VALUE = 1" in patch
    assert "new file mode" in patch and "+y = 2" in patch
    assert "deleted file mode" in patch
    assert "__pycache__" not in patch


def test_diff_is_repeatable_and_tracks_reverts(sandbox: Sandbox) -> None:
    assert sandbox.diff() == ""
    sandbox.write("README.md", "changed\n")
    first = sandbox.diff()
    assert first and sandbox.diff() == first
    sandbox.write("README.md", "hello\n")
    assert sandbox.diff() == ""


def test_a_gitignored_file_is_still_part_of_the_change(sandbox: Sandbox) -> None:
    sandbox.write(".gitignore", "secret.py\n")
    sandbox.write("secret.py", "x = 1\n")
    assert "b/secret.py" in sandbox.diff()


def test_the_diff_round_trips_odd_bytes_through_apply(
    backend: SandboxBackend, prepared: Path, tmp_path: Path
) -> None:
    """Non-UTF-8 names and contents, binary files, links and modes survive diff + apply."""
    source = backend.open(prepared, tmp_path / "source")
    target = backend.open(prepared, tmp_path / "target")
    try:
        script = (
            "printf 'caf\\351\\n' > \"$(printf 'n\\351')\"; printf '\\000\\001\\002' > blob.bin; "
            "printf 'x' > 'with space.txt'; ln -s pkg/__init__.py link.py; "
            "printf '#!/bin/sh\\n' > tool.sh; chmod +x tool.sh; rm pkg/gone.py"
        )
        assert source.run(script, timeout=10).exit_code == 0
        patch = source.diff()
        target.apply_patch(patch)
        check = "md5sum \"$(printf 'n\\351')\" blob.bin 'with space.txt' tool.sh; "
        check += "readlink link.py; test -x tool.sh && echo exec; test -e pkg/gone.py || echo gone"
        assert target.run(check, 10).output == source.run(check, 10).output
        assert target.diff() == patch
    finally:
        source.close()
        target.close()


def test_a_patch_that_does_not_apply_is_rejected(sandbox: Sandbox) -> None:
    bad = "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n"
    bad += "@@ -1 +1 @@\n-not what is there\n+x\n"
    with pytest.raises(PatchRejected):
        sandbox.apply_patch(bad)


def test_a_change_larger_than_the_limit_ends_in_a_resource_limit(sandbox: Sandbox) -> None:
    script = "for f in $(seq 1 20); do seq 1 60000 > log$f.txt; done"  # 20 files of ~400 KB
    sandbox.run(script, timeout=30)
    with pytest.raises(ResourceLimitExceeded, match="larger than"):
        sandbox.diff()


def test_a_new_file_over_the_limit_is_refused_before_git_reads_it(sandbox: Sandbox) -> None:
    sandbox.run("head -c 3000000 /dev/urandom > big.bin", timeout=10)
    with pytest.raises(ResourceLimitExceeded, match=r"big\.bin"):
        sandbox.diff()


def test_a_very_deep_tree_is_diffed_or_refused_and_removed(
    backend: SandboxBackend, prepared: Path, tmp_path: Path
) -> None:
    box = backend.open(prepared, tmp_path / "deep")
    script = "d=.; for i in $(seq 1 1500); do d=$d/d; done; mkdir -p $d 2>/dev/null; "
    script += "cd /; python -c \"import os; os.chdir('" + box.root + "');\n"
    script += "for _ in range(3000): os.mkdir('d') if not os.path.exists('d') else None; "
    script += "os.chdir('d')\" 2>/dev/null; true"
    box.run(script, timeout=60)
    with contextlib.suppress(PatchRejected, ResourceLimitExceeded):
        box.diff()  # empty folders are no change; whatever git makes of it, it is not a crash
    box.close()
    assert not (tmp_path / "deep").exists()


def test_overlay_files_are_laid_over_the_workspace(
    backend: SandboxBackend, prepared: Path, tmp_path: Path
) -> None:
    overlay = tmp_path / "overlay"
    (overlay / "tests").mkdir(parents=True)
    (overlay / "tests" / "test_hidden.py").write_text("def test(): pass\n")
    (overlay / "README.md").write_text("over\n")
    box = backend.open(prepared, tmp_path / "over", overlay, track_changes=False)
    try:
        assert box.read("tests/test_hidden.py") == "def test(): pass\n"
        assert box.read("README.md") == "over\n"
    finally:
        box.close()


def test_execute_streams_the_report_pipe(sandbox: Sandbox) -> None:
    argv = ["sh", "-c", 'printf "<a/>" > "$1"; echo out', "sh", REPORT_PLACEHOLDER]
    done = sandbox.execute(Command(argv, timeout=10, report=True))
    assert done.report == b"<a/>" and done.output == "out\n"


# -- every field of a `Command`, on every backend -------------------------------------------
# An agent's sandbox (change tracking) and a grading one (none) may run commands differently
# (bubblewrap: the command server, or a fresh namespace); both must honour each field.
# `baseline` is the harness's own diff's: the diff tests above cover it.


@pytest.fixture(params=[True, False], ids=["agent", "grading"])
def either(
    request: pytest.FixtureRequest, backend: SandboxBackend, prepared: Path, tmp_path: Path
) -> Iterator[Sandbox]:
    box = backend.open(prepared, tmp_path / "either", track_changes=request.param)
    yield box
    box.close()


def test_a_command_runs_its_argv_in_the_workspace(either: Sandbox) -> None:
    done = either.execute(Command(["sh", "-c", 'pwd; printf "%s|" "$@"', "sh", "a b", "*"], 10))
    assert done.exit_code == 0 and done.output == f"{either.root}\na b|*|"


def test_a_command_reads_its_stdin_and_nothing_without_one(either: Sandbox) -> None:
    assert either.execute(Command(["cat"], timeout=10, stdin=b"in\x00put")).output == "in\x00put"
    done = either.execute(Command(["cat"], timeout=10))
    assert done.exit_code == 0 and done.output == ""


def test_a_command_sees_its_env_over_a_scrubbed_environment(
    either: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CURSORBENCH_CONTRACT_SECRET", "leaked")
    script = 'echo "${EXTRA}|${CURSORBENCH_CONTRACT_SECRET:-none}|${LANG}"'
    done = either.execute(Command(["sh", "-c", script], timeout=10, env={"EXTRA": "given"}))
    assert done.output == "given|none|C.UTF-8\n"
    overridden = either.execute(Command(["sh", "-c", "echo $LANG"], 10, env={"LANG": "C"}))
    assert overridden.output == "C\n"


def test_a_command_is_killed_at_its_timeout(either: Sandbox) -> None:
    done = either.execute(Command(["sleep", "30"], timeout=0.5))
    assert done.timed_out and done.exit_code is None and done.duration_s < 30


def test_output_cap_keeps_the_whole_output_up_to_it_and_kills_beyond(either: Sandbox) -> None:
    head = "head -c 40000 /dev/zero | tr '\\0' a"
    whole = either.execute(Command(["sh", "-c", head], timeout=10, output_cap=50_000))
    assert whole.output == "a" * 40_000 and not whole.output_limit_hit
    cut = either.execute(Command(["sh", "-c", head], timeout=10))  # head and tail only
    assert cut.omitted_bytes > 0 and len(cut.output) < 40_000 and not cut.output_limit_hit
    endless = either.execute(Command(["sh", "-c", "yes"], timeout=30, output_cap=10_000))
    assert endless.output_limit_hit and endless.exit_code is None and not endless.timed_out


def test_errors_decides_how_output_bytes_are_decoded(either: Sandbox) -> None:
    odd = ["printf", "ok\\377"]
    assert either.execute(Command(odd, timeout=10)).output == "ok\ufffd"
    kept = either.execute(Command(odd, timeout=10, errors="surrogateescape")).output
    assert kept.encode("utf-8", "surrogateescape") == b"ok\xff"


def test_a_read_only_command_cannot_change_a_grading_workspace(
    backend: SandboxBackend, prepared: Path, tmp_path: Path
) -> None:
    if not backend.confined:
        pytest.skip("the subprocess backend confines nothing (UNCONFINED_WARNING)")
    box = backend.open(prepared, tmp_path / "grading", track_changes=False)
    try:
        script = "echo x > README.md; touch new.txt; cat README.md"
        done = box.execute(Command(["sh", "-c", script], timeout=10, read_only=True))
        assert done.output.endswith("hello\n"), done.output
        assert box.read("README.md") == "hello\n"
        with pytest.raises(SandboxError, match="no such file"):
            box.read("new.txt")
        writable = box.execute(Command(["sh", "-c", "echo x > README.md"], timeout=10))
        assert writable.exit_code == 0 and box.read("README.md") == "x\n"
    finally:
        box.close()


def test_a_command_is_a_frozen_copy_of_what_it_was_given() -> None:
    argv, env = ["echo", "a"], {"K": "v"}
    command = Command(argv, timeout=1, env=env)
    argv.append("b")
    env["K"] = "changed"
    assert command.argv == ("echo", "a") and command.env == {"K": "v"}
    with pytest.raises(AttributeError):
        command.timeout = 2  # type: ignore[misc]
    assert Command.shell("true", 5).argv == ("bash", "-c", "true")


def test_close_removes_everything_and_reopening_starts_fresh(
    backend: SandboxBackend, prepared: Path, tmp_path: Path
) -> None:
    box = backend.open(prepared, tmp_path / "again")
    box.write("extra.txt", "x")
    box.close()
    assert not (tmp_path / "again").exists()
    box.close()  # twice is harmless
    again = backend.open(prepared, tmp_path / "again")
    try:
        assert again.diff() == ""
    finally:
        again.close()


def test_self_test_passes_where_python_and_pytest_run(
    backend: SandboxBackend, tmp_path: Path
) -> None:
    backend.self_test(tmp_path / "self-test")


PLUGIN_PROBE = """\
def test_plugins(request):
    manager = request.config.pluginmanager
    names = sorted(dist.project_name for _, dist in manager.list_plugin_distinfo())
    cache = manager.has_plugin("cacheprovider")
    print("PLUGINS", names, "CACHE", cache, "ADDOPTS", request.config.getini("addopts"))
"""


def _probe_line(output: str) -> str:
    return next(line for line in output.splitlines() if line.startswith("PLUGINS"))


def test_the_agents_pytest_loads_what_the_graders_loads(sandbox: Sandbox) -> None:
    """An agent's `pytest` (its `run` tool) has grading's plugins and flags: no autoloaded
    plugin of the harness's environment (hypothesis), no cache, the tree's addopts ignored."""
    sandbox.write("pytest.ini", "[pytest]\naddopts = --strict-markers\n")
    sandbox.write("test_probe.py", PLUGIN_PROBE)
    agent = sandbox.run("python -m pytest -s -q test_probe.py && pytest --version", timeout=60)
    assert agent.exit_code == 0, agent.output
    argv = pytest_argv(["-s", "test_probe.py"], sandbox.root, f"{sandbox.root}/pytest.ini")
    grader = sandbox.execute(Command(argv, timeout=60, read_only=True, report=True, env=PYTEST_ENV))
    assert grader.exit_code == 0, grader.output
    assert _probe_line(agent.output) == _probe_line(grader.output)
    assert _probe_line(agent.output) == "PLUGINS [] CACHE False ADDOPTS []"
    assert "pytest " in agent.output  # the `pytest` script, too, starts with these flags


# -- nothing outlives its command (issue 16, finding 6) -------------------------------------

CONFINED_BACKENDS = [b for b in BACKENDS if getattr(b, "values", (b,))[0] != "subprocess"]


@pytest.fixture(params=CONFINED_BACKENDS)
def confined(request: pytest.FixtureRequest, prepared: Path, tmp_path: Path) -> Iterator[Sandbox]:
    """A confined sandbox (the subprocess backend says it leaves background processes)."""
    box = open_backend(request.param, SandboxSettings()).open(prepared, tmp_path / "confined")
    box.write("leftovers.py", leftovers_kit.SCRIPT)
    yield box
    box.close()


def _ticks(sandbox: Sandbox) -> str:
    return sandbox.run("cat ticks-* | wc -l", timeout=10).output


def _assert_all_ended(sandbox: Sandbox, mark: str, started: str) -> None:
    # The attack happened: the leader was a zombie with a live thread, and all of them ticked.
    assert "leader-state Z threads 2" in started, started
    assert int(started.split("ticking ")[1].split()[0]) > 0, started
    assert leftovers_kit.still_running(mark) == []
    before = _ticks(sandbox)
    time.sleep(0.3)  # any survivor appends a line every 20 ms
    assert _ticks(sandbox) == before
    assert leftovers_kit.still_running(mark) == []


def test_nothing_a_command_started_outlives_it(confined: Sandbox) -> None:
    """A zombie leader with a live thread, a double-forked daemon in a new session and a
    stopped child all end when the command returns."""
    mark = leftovers_kit.new_mark()
    done = confined.run(leftovers_kit.START.format(mark=mark), timeout=60)
    assert done.exit_code == 0, done.output
    _assert_all_ended(confined, mark, done.output)


def test_nothing_a_command_started_outlives_its_timeout(confined: Sandbox) -> None:
    mark = leftovers_kit.new_mark()
    command = "{ " + leftovers_kit.START.format(mark=mark) + "; } > started.txt; sleep 60"
    done = confined.run(command, timeout=3)
    assert done.timed_out
    _assert_all_ended(confined, mark, confined.read("started.txt"))


def test_what_runs_when_the_sandbox_closes_dies_with_it(confined: Sandbox) -> None:
    """The attempt's end (an interrupted run closes its sandboxes mid-command)."""
    mark = leftovers_kit.new_mark()
    command = leftovers_kit.START.format(mark=mark) + "; sleep 60"
    worker = threading.Thread(target=_run_quietly, args=(confined, command), daemon=True)
    worker.start()
    deadline = time.monotonic() + 60
    while len(leftovers_kit.still_running(mark)) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # the middle of the daemon's double fork and the stopper are gone
    assert len(leftovers_kit.still_running(mark)) >= 3  # the leader, the daemon, the stopped
    confined.close()
    worker.join(30)
    assert leftovers_kit.still_running(mark) == []


def _run_quietly(sandbox: Sandbox, command: str) -> None:
    with contextlib.suppress(SandboxError):  # closed under it
        sandbox.run(command, timeout=60)
