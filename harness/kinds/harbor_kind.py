"""The `harbor` kind: a Harbor task's own verifier (`tests/test.sh`) decides, by the reward
it writes (`cursorbench run --tasks harbor:DIR`, cursorbench/tasks/sources/harbor.py).

The task's hidden folder is the Harbor task's `tests/` folder. Grading, after the agent's
sandbox is closed (its processes are gone with it):

1. the agent's change arrives as patch text; what touches the task's protected paths
   (if it names any) or links out of the workspace is dropped (`patch.grading_change`);
2. a fresh sandbox of the run's backend opens over the prepared workspace and the change
   is applied there: nothing of the agent's sandbox survives but its patch;
3. only then are the verifier's files copied in, by the one command that also runs them
   (`VERIFY_PY`): to `/tmp/cursorbench-harbor-TOKEN/tests` (outside the workspace, so no
   patch can reach them; TOKEN is fresh each time), with an empty `.../logs/verifier`.
   Harbor's paths in their text (`/tests`, `/logs/verifier`, the environment's workdir)
   are rewritten to those (`rewrite_paths`): a sandbox's root file system is read-only;
4. that command's runner holds the report channel, non-dumpable (no process of its user
   can open its descriptors), and is a child subreaper: `test.sh` runs without the
   channel, a process that leaves test.sh's tree is killed at once, and once test.sh
   ends every process it left is killed before the logs are read and sent back;
5. where the task has a canary run (`canary`, set by the import check,
   cursorbench/harbor/canary.py), steps 2-4 run again in a fresh sandbox with the
   verifier's Python tests turned into canaries in place (`canary_files`), before or
   after the real run at random;
6. `judge` reads the reward as Harbor does (`reward.json` first, else `reward.txt`, a
   number) and resolves when it reaches `min_reward`, unless the canary run reached it
   too (tampering: the code under test forced the reward): a pure function.

The code under test runs in the verifier's processes, as its user, so it can still write
the reward file or make the test runner report success while test.sh runs: the canary run
is what detects that, as canaries do for the pytest kind. Without one (tests that are not
Python test files, or whose canary run passes on the solution) the verdict is not
tamper-evident, which the record (`CANARY_TEST` skipped) and the run's warnings say.
docs/interop.md.
"""

from __future__ import annotations

import io
import json
import math
import random
import re
import secrets
import sys
import tarfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from harness.grading import canaries
from harness.kinds.base import FileKindDefaults, Files, Frozen, KindExample
from harness.kinds.pytest_kind import EXAMPLE_BROKEN, EXAMPLE_SOLVED, EXAMPLE_STUB
from harness.kinds.testrun import GradeReport, protected_files
from harness.patch import PatchFormatError, grading_change
from harness.results import Failure, Score, TestOutcome
from harness.sandbox.command import Command
from harness.sandbox.process import REPORT_PLACEHOLDER, Completed
from harness.sandbox.protocol import PatchRejected, ResourceLimitExceeded

if TYPE_CHECKING:
    from harness.sandbox.protocol import SandboxBackend
    from harness.spec import PreparedTask

HOME = "/tmp/cursorbench-harbor"  # a fresh `HOME-TOKEN` per grading run
REWARD_SCORE = "harbor_reward"
REWARD_TEST = "harbor:reward"
CANARY_TEST = "harbor:canary-run"  # passed: the canary run failed, as it must
CANARY_SEED = "cursorbench-harbor-canary"
CANARY_OUTPUT_CHARS = 2000  # of the canary run's output, kept before the verifier's own
MAX_LOG_BYTES = 4 * 1024 * 1024
MAX_TEXT_REWRITE_BYTES = 2 * 1024 * 1024
# The verifier's runner, started as the command itself (`python -I`: the workspace, its cwd,
# is not on its path). Before test.sh starts it opens the report channel and becomes
# non-dumpable (so no process of its user can open its descriptors through /proc) and a
# child subreaper (so whatever test.sh starts stays its descendant, however it detaches);
# test.sh runs with the channel closed. While it runs, a process that leaves its tree (its
# parent ended: it comes to the runner) is killed at once (polled every 10 ms); after it
# ends, every descendant is killed until none is left, so none can write after; only then
# are the logs read, regular files only, and sent back. If some process cannot be ended,
# nothing is sent: no reward.
VERIFY_PY = r"""
import ctypes, io, os, shutil, signal, subprocess, sys, tarfile, time
channel, home, cap = sys.argv[1], sys.argv[2], int(sys.argv[3])
out = os.open(channel, os.O_WRONLY | os.O_CLOEXEC)
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(4, 0, 0, 0, 0) != 0 or libc.prctl(36, 1, 0, 0, 0) != 0:
    print("cursorbench: cannot protect the verifier's runner", flush=True)
    sys.exit(93)
shutil.rmtree(home, ignore_errors=True)
for sub in ("tests", "logs/verifier", "logs/agent"):
    os.makedirs(os.path.join(home, sub))
tests = sys.stdin.buffer.read()
unpack = subprocess.run(["tar", "-x", "--no-same-owner", "-f", "-", "-C", home + "/tests"],
                        input=tests, close_fds=True)
if unpack.returncode != 0:
    sys.exit(91)

def children():
    me = os.getpid()
    try:
        with open(f"/proc/{me}/task/{me}/children", "rb") as handle:
            return [int(word) for word in handle.read().split()]
    except OSError:
        pass
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        if int(stat.rsplit(b")", 1)[1].split()[1]) == me:
            found.append(int(name))
    return found

def end(pid):  # one of our children: it stays ours (a zombie at worst) until reaped
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, os.WNOHANG)
    except OSError:
        pass

test = subprocess.Popen(["bash", home + "/tests/test.sh"], stdin=subprocess.DEVNULL,
                        stderr=subprocess.STDOUT, close_fds=True)
while test.poll() is None:  # a process that leaves test.sh's tree comes to us: it ends
    for pid in children():
        if pid != test.pid:
            end(pid)
    time.sleep(0.01)
print(f"cursorbench: test.sh exited {test.returncode}", flush=True)

deadline = time.monotonic() + 10
while True:
    for pid in children():  # our children: zombies stay ours until reaped, never reused
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        break  # a subreaper with no child has no descendant left
    if time.monotonic() > deadline:
        print("cursorbench: test.sh left processes that could not be ended", flush=True)
        sys.exit(92)
    time.sleep(0.005)
logs, buffer, total = home + "/logs/verifier", io.BytesIO(), 0
with tarfile.open(fileobj=buffer, mode="w") as archive:
    for folder, _, names in os.walk(logs):
        for name in sorted(names):
            path = os.path.join(folder, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            total += os.path.getsize(path)
            if total <= cap:
                archive.add(path, arcname=os.path.relpath(path, logs), recursive=False)
with os.fdopen(out, "wb") as channel_file:
    channel_file.write(buffer.getvalue())
shutil.rmtree(home, ignore_errors=True)
"""


class HarborVerification(Frozen):
    """A Harbor verifier (the task's `tests/`, hidden) run after the agent; its reward
    decides."""

    kind: Literal["harbor"] = "harbor"
    workdir: str = Field(
        default="/workspace",
        description="The Harbor environment's working folder, the workspace's path there.",
    )
    min_reward: float = Field(default=1.0, gt=0, description="The reward that resolves.")
    protected_paths: list[str] = Field(
        default_factory=list,
        description="Globs of workspace files the change may not touch (dropped before grading).",
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="The verifier's environment (`[verifier.env]`)."
    )
    canary: bool = Field(
        default=False,
        description="Run the verifier a second time with canaries planted in its Python "
        "test files; that run must fail. Set by the import check (cursorbench/"
        "harbor/canary.py) once the task's own solution resolves and fails that run.",
    )
    canary_note: str = Field(
        default="", description="What the import check found: why there is a canary run or none."
    )

    @property
    def hidden_tests(self) -> list[str]:
        return []  # the verifier's files never enter the workspace


def rewrite_paths(text: str, mapping: dict[str, str]) -> str:
    """Each absolute path of `mapping` (a whole path component sequence, not part of a
    longer name) replaced by its target, in one pass: pure."""
    if not mapping:
        return text
    keys = sorted(mapping, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w.~$/-])(" + "|".join(re.escape(k) for k in keys) + r")(?![\w.-])")
    return pattern.sub(lambda match: mapping[match.group(1)], text)


def path_mapping(workdir: str, root: str, home: str) -> dict[str, str]:
    mapping = {
        "/tests": f"{home}/tests",
        "/logs/verifier": f"{home}/logs/verifier",
        "/logs/agent": f"{home}/logs/agent",
    }
    if workdir.rstrip("/") and workdir.rstrip("/") != root.rstrip("/"):
        mapping[workdir.rstrip("/")] = root.rstrip("/")
    return mapping


def rewrite_file(data: bytes, mapping: dict[str, str]) -> bytes:
    """A file's bytes with `rewrite_paths` applied, if it is UTF-8 text of a sane size."""
    if len(data) > MAX_TEXT_REWRITE_BYTES or b"\0" in data:
        return data
    try:
        return rewrite_paths(data.decode("utf-8"), mapping).encode("utf-8")
    except UnicodeDecodeError:
        return data


def verifier_tar(
    tests: Path, mapping: dict[str, str], replace: dict[str, str] | None = None
) -> bytes:
    """The verifier's files as a tar stream, Harbor's paths in text files rewritten;
    `replace` gives some files other text (the canary run's test files)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for path in sorted(tests.rglob("*")) if tests.is_dir() else []:
            name = path.relative_to(tests).as_posix()
            info = archive.gettarinfo(str(path), arcname=name)
            if not path.is_file() or path.is_symlink():
                archive.addfile(info)
                continue
            text = (replace or {}).get(name)
            data = path.read_bytes() if text is None else text.encode("utf-8")
            data = rewrite_file(data, mapping)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def canary_files(tests: Path, task_id: str) -> dict[str, str]:
    """The verifier's Python test files for the canary run: each test that can carry a
    canary (`harness/grading/canaries.py`) turned into it, in place, under its own name, so the
    files hold the same tests and any honest tree fails them. One draw per task (seeded by
    its id): the one the import check tried on the task's solution, so an honest solution
    is never flagged. {} where no test of them can carry a canary."""
    sources = {}
    for path in sorted(tests.rglob("*.py")) if tests.is_dir() else []:
        small = path.is_file() and path.stat().st_size <= MAX_TEXT_REWRITE_BYTES
        if small and not path.is_symlink():
            sources[path.relative_to(tests).as_posix()] = path.read_text("utf-8", "replace")
    return canaries.swapped(sources, random.Random(f"{CANARY_SEED}:{task_id}"))


def read_logs(report: bytes | None) -> dict[str, str]:
    """The logs folder's regular files from the report's tar stream (written by code the
    agent's change may control: read in memory only, never extracted)."""
    logs: dict[str, str] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(report or b""), mode="r:") as archive:
            for member in archive:
                if not member.isfile() or member.size > MAX_LOG_BYTES:
                    continue
                handle = archive.extractfile(member)
                if handle is not None:
                    name = member.name.removeprefix("./")
                    logs[name] = handle.read().decode("utf-8", errors="replace")
    except (tarfile.TarError, EOFError, OSError):
        pass
    return logs


def reward_of(logs: dict[str, str]) -> tuple[float | None, str | None]:
    """Harbor's reward (`reward.json`'s `reward`, or its only value; else `reward.txt`) and
    what made it unreadable: pure."""
    if "reward.json" in logs:
        try:
            data = json.loads(logs["reward.json"])
        except ValueError:
            return None, "reward.json is not JSON"
        if isinstance(data, dict):
            values = [data["reward"]] if "reward" in data else list(data.values())
        else:
            values = [data]
        if len(values) != 1:
            return None, f"reward.json holds {len(values)} rewards and none named `reward`"
        value: object = values[0]
    elif "reward.txt" in logs:
        value = logs["reward.txt"].strip()
    else:
        return None, "the verifier wrote no reward file (reward.txt or reward.json)"
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None, f"the reward {str(value)[:40]!r} is not a number"
    if isinstance(value, bool) or not math.isfinite(number):
        return None, f"the reward {value!r} is not a finite number"
    return number, None


def listed_outcomes(logs: dict[str, str]) -> dict[str, TestOutcome]:
    """Per-test outcomes a verifier reports in CursorBench's `outcomes.json` (the verifier
    of an exported task writes one); none otherwise."""
    try:
        tests = json.loads(logs.get("outcomes.json", "{}")).get("tests", {})
    except (ValueError, AttributeError):
        return {}
    if not isinstance(tests, dict):
        return {}
    known = {outcome.value for outcome in TestOutcome}
    return {
        str(node): TestOutcome(outcome) if outcome in known else TestOutcome.MISSING
        for node, outcome in tests.items()
    }


def judge_reward(
    check: HarborVerification, done: Completed, logs: dict[str, str], timeout_s: float
) -> GradeReport:
    """The verdict from the verifier's run and its logs: pure, no I/O."""
    output = done.output
    if done.timed_out:
        error = f"the verifier ran over {timeout_s}s"
        return GradeReport(False, Failure.TEST_TIMEOUT, {}, error, 0.0, output)
    reward, problem = reward_of(logs)
    tests = listed_outcomes(logs)
    passed = reward is not None and reward >= check.min_reward
    tests[REWARD_TEST] = TestOutcome.PASSED if passed else TestOutcome.FAILED
    scores = {}
    if reward is not None:
        value = min(1.0, max(0.0, reward))
        reasons = [] if passed else [f"reward {reward:g} < {check.min_reward:g}"]
        scores[REWARD_SCORE] = Score(value=value, reasons=reasons)
    failure = None if passed else Failure.TESTS_FAILED
    return GradeReport(passed, failure, tests, problem, 0.0, output, scores=scores)


@dataclass(frozen=True)
class VerifierRun:
    done: Completed
    logs: dict[str, str]


def judge(
    check: HarborVerification, real: VerifierRun, canary: VerifierRun | None, timeout_s: float
) -> GradeReport:
    """The verdict from the verifier's run and, where the task has one, the canary run's:
    pure, no I/O. A canary run that reaches `min_reward` means the verdict was forced (its
    tests fail on any honest tree): tampering, never resolved. Without a canary run the
    record says the verdict is not tamper-evident (`CANARY_TEST` skipped)."""
    report = judge_reward(check, real.done, real.logs, timeout_s)
    if canary is None:
        report.tests[CANARY_TEST] = TestOutcome.SKIPPED
        why = check.canary_note or "the task has no canary run"
        report.output = f"cursorbench: the verdict is not tamper-evident: {why}\n{report.output}"
        return report
    # the canary run's output first, so that the verifier's own ends the record (its tail)
    shown = canary.done.output[-CANARY_OUTPUT_CHARS:]
    report.output = (
        f"--- cursorbench: the canary run ---\n{shown}\n"
        f"--- cursorbench: the verifier ---\n{report.output}"
    )
    if canary.done.timed_out:
        report.tests[CANARY_TEST] = TestOutcome.ERROR
        error = f"the canary run ran over {timeout_s}s: the verdict cannot be trusted"
        return replace(report, resolved=False, failure=Failure.TEST_TIMEOUT, error=error)
    reward, _ = reward_of(canary.logs)
    if reward is None or reward < check.min_reward:
        report.tests[CANARY_TEST] = TestOutcome.PASSED  # it failed, as it must
        return report
    report.tests[CANARY_TEST] = TestOutcome.FAILED
    sprung = [f"canary run: reward {reward:g} >= {check.min_reward:g}"]
    error = (
        f"the canary run (the task's tests with their expected values changed, which any "
        f"honest tree fails) got reward {reward:g}: the verdict was forced"
    )
    forced = Score(value=0.0, reasons=["the reward was forced (the canary run passed)"])
    return replace(
        report, resolved=False, failure=Failure.GRADER_TAMPERING, error=error,
        canaries_passed=sprung, scores={**report.scores, REWARD_SCORE: forced},
    )  # fmt: skip


def run_verifier(
    task: PreparedTask, check: HarborVerification, patch: str, backend: SandboxBackend,
    scratch: Path, replace_files: dict[str, str] | None = None,
) -> VerifierRun:  # fmt: skip
    """The verifier (with `replace_files` over its files) on the prepared workspace with
    `patch` applied, in a fresh sandbox at `scratch` (the same path for every run)."""
    sandbox = backend.open(task.workspace, scratch, track_changes=False)
    try:
        sandbox.apply_patch(patch)
        home = f"{HOME}-{secrets.token_hex(8)}"
        mapping = path_mapping(check.workdir, sandbox.root, home)
        tests = verifier_tar(task.hidden_dir, mapping, replace_files)
        argv = [sys.executable, "-I", "-c", VERIFY_PY, REPORT_PLACEHOLDER, home, str(MAX_LOG_BYTES)]
        timeout = task.limits.test_timeout_s
        command = Command(argv, timeout=timeout, stdin=tests, report=True, env=check.env)
        done = sandbox.execute(command)
    finally:
        sandbox.close()
    return VerifierRun(done, read_logs(done.report))


def grade_harbor(
    task: PreparedTask, check: HarborVerification, patch: str, backend: SandboxBackend,
    scratch: Path, rng: random.Random,
) -> GradeReport:  # fmt: skip
    started = time.monotonic()
    try:
        change = grading_change(
            patch,
            check.protected_paths,
            protected_files(task.workspace, check),  # type: ignore[arg-type]
        )
    except PatchFormatError as error:
        return GradeReport(False, Failure.PATCH_REJECTED, error=f"unreadable change: {error}")
    dropped = change.dropped_protected + change.dropped_links
    planted = canary_files(task.hidden_dir, task.id) if check.canary else {}
    runs: list[dict[str, str] | None] = [None, planted] if planted else [None]
    if rng.random() < 0.5:
        runs.reverse()  # the canary run first or second, at random
    found: dict[bool, VerifierRun] = {}
    try:
        for files in runs:
            found[files is not None] = run_verifier(
                task, check, change.patch, backend, scratch / "sandbox", files
            )
    except PatchRejected as error:
        return GradeReport(False, Failure.PATCH_REJECTED, error=str(error), dropped=dropped)
    except ResourceLimitExceeded as error:
        return GradeReport(False, Failure.RESOURCE_LIMIT, error=str(error), dropped=dropped)
    timeout = task.limits.test_timeout_s
    if check.canary and not planted:
        check = check.model_copy(update={"canary_note": "no canary could be planted"})
    report = judge(check, found[False], found.get(True), timeout)
    report.duration_s = time.monotonic() - started
    report.dropped = dropped
    return report


class HarborKind(FileKindDefaults):
    name = "harbor"
    model: type[HarborVerification] = HarborVerification

    def grade(
        self,
        task: PreparedTask,
        check: HarborVerification,
        patch: str,
        backend: SandboxBackend,
        scratch: Path,
        rng: random.Random,
    ) -> GradeReport | None:
        return grade_harbor(task, check, patch, backend, scratch, rng)

    def reference_files(self, check: HarborVerification, workspace: Path) -> Files | None:
        return None  # the task's solution/solve.sh (cursorbench/tasks/sources/harbor.py)

    def stub_files(self, check: HarborVerification) -> Files | None:
        return None

    def solver_test_args(self, check: HarborVerification, written: list[str]) -> list[str]:
        return []

    def failing_by_design(self, check: HarborVerification) -> set[str]:
        return set()

    def example(self) -> KindExample:
        return KindExample(
            workspace={"calc.py": EXAMPLE_BROKEN, "tests/test_sub.py": EXAMPLE_VISIBLE},
            hidden={"test.sh": EXAMPLE_TEST_SH, "test_calc.py": EXAMPLE_TESTS},
            verification=HarborVerification(
                protected_paths=["tests/**", "**/conftest.py"], canary=True
            ),
            reference={"calc.py": EXAMPLE_SOLVED},
            stub={"calc.py": EXAMPLE_STUB},
            tamper={"tests/conftest.py": EXAMPLE_CHEAT, "tests/test_calc.py": "pass\n"},
        )


EXAMPLE_VISIBLE = "from calc import sub\n\n\ndef test_sub():\n    assert sub(3, 2) == 1\n"
EXAMPLE_TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
# As Harbor writes them: /tests, /logs/verifier and the workdir, rewritten at grading.
EXAMPLE_TEST_SH = """#!/bin/bash
cd /workspace
cp /tests/test_calc.py tests/test_calc.py
if python -m pytest -q -p no:cacheprovider tests; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
"""
# A conftest that turns every failure into a pass: dropped with the protected paths.
EXAMPLE_CHEAT = """import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"
"""
