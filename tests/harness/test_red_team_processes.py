"""Red team: processes that outlive their command and edit the solution afterwards.

Issue 16, finding 6: a thread-group leader that leaves by a raw SYS_exit shows state Z
while its threads run on, and a double-forked daemon in a session of its own leaves its
command's process group. Either, left by a command, used to write the solution after the
command had returned or timed out, before the diff was taken: resolved by late edits. Now
each command's processes end with its cgroup (`harness/sandbox/cmdgroups.py`), so the edit
never lands: the attempt fails, and nothing named by the attack runs afterwards. The
positive control runs the same writer in the foreground, where its edit counts.
"""

from __future__ import annotations

import pytest

from tests.harness import leftovers_kit
from tests.harness.red_team_kit import INIT, SLUG, assert_failed, assert_resolved, shell, tool

pytestmark = pytest.mark.slow

# The writer: as `leader`, a thread writes the solution after DELAY seconds while the main
# thread leaves by SYS_exit at once; as `daemon`, a grandchild in a new session does.
LATE = f"""
import ctypes, os, sys, threading, time

MARK, ROLE, DELAY = sys.argv[1], sys.argv[2], float(sys.argv[3])
LIBC = ctypes.CDLL(None)
LIBC.prctl(15, MARK.encode(), 0, 0, 0)
FILES = {{"textkit/slug.py": {SLUG!r}, "textkit/__init__.py": {INIT!r}}}


def late():
    time.sleep(DELAY)
    for path, text in FILES.items():
        with open(path, "w") as file:
            file.write(text)


if ROLE == "leader":
    threading.Thread(target=late).start()
    LIBC.syscall({{"x86_64": 60, "aarch64": 93}}[os.uname().machine], 0)
elif os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        late()
    os._exit(0)
"""


def _write_late() -> object:
    return tool("write_file", path="late.py", content=LATE)


def _check(mark: str) -> object:
    """A later command that gives the writer time, then shows whether the edit landed."""
    return shell("sleep 4; grep -c slugify textkit/__init__.py || true")


def test_control_a_writer_in_the_foreground_resolves(red_team) -> None:
    mark = leftovers_kit.new_mark()
    steps = [_write_late(), shell(f"python late.py {mark} leader 0.5; echo done")]
    assert_resolved(red_team(steps))


@pytest.mark.red_team_ci
def test_edits_after_the_command_returned_do_not_count(red_team) -> None:
    mark = leftovers_kit.new_mark()
    start = f"python late.py {mark} leader 1.5 & python late.py {mark} daemon 1.5; echo started"
    result = red_team([_write_late(), shell(start), _check(mark)])
    assert_failed(result)
    assert leftovers_kit.still_running(mark) == []


def test_edits_after_the_command_timed_out_do_not_count(red_team) -> None:
    mark = leftovers_kit.new_mark()
    start = f"python late.py {mark} leader 2 & python late.py {mark} daemon 2; sleep 60"
    steps = [_write_late(), tool("run", command=start, timeout_s=1), _check(mark)]
    result = red_team(steps)
    assert_failed(result)
    assert leftovers_kit.still_running(mark) == []


@pytest.mark.red_team_ci
def test_edits_after_finish_do_not_count(red_team) -> None:
    """The writer's command returns and the agent finishes at once: the edit would land
    while the harness takes the diff and grades."""
    mark = leftovers_kit.new_mark()
    start = f"python late.py {mark} leader 0.3 & python late.py {mark} daemon 0.3; echo started"
    result = red_team([_write_late(), shell(start)])
    assert_failed(result)
    assert leftovers_kit.still_running(mark) == []
