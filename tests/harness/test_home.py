import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.home import READY_MARKER, build_once, self_test_folder


def test_build_once_fills_a_folder_once_and_marks_it_ready(tmp_path: Path) -> None:
    root = tmp_path / "cache" / "thing-abc"
    calls: list[Path] = []

    def fill(staging: Path) -> None:
        calls.append(staging)
        staging.mkdir()
        (staging / "made").write_text("1")

    build_once(root, "abc", fill)
    build_once(root, "abc", fill)
    assert len(calls) == 1 and calls[0] != root
    assert (root / "made").read_text() == "1"
    assert (root / READY_MARKER).read_text() == "abc"
    assert sorted(p.name for p in root.parent.iterdir()) == ["thing-abc"]


def test_a_failed_fill_leaves_neither_the_folder_nor_its_staging(tmp_path: Path) -> None:
    root = tmp_path / "thing"

    def fill(staging: Path) -> None:
        staging.mkdir()
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        build_once(root, "k", fill)
    assert list(tmp_path.iterdir()) == []


def test_a_folder_another_process_published_first_stands(tmp_path: Path) -> None:
    root = tmp_path / "thing"

    def fill(staging: Path) -> None:
        staging.mkdir()
        (staging / "mine").write_text("")
        root.mkdir()  # another process got there first
        (root / "theirs").write_text("")
        (root / READY_MARKER).write_text("k")

    build_once(root, "k", fill)
    assert sorted(p.name for p in root.iterdir()) == [READY_MARKER, "theirs"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["thing"]


def test_builders_of_one_folder_take_turns_and_the_waiters_build_nothing(tmp_path: Path) -> None:
    root = tmp_path / "thing"
    started = threading.Barrier(4)
    fills: list[int] = []

    def fill(staging: Path) -> None:
        fills.append(threading.get_ident())
        staging.mkdir()
        time.sleep(0.2)  # long enough for every other builder to be waiting on the lock
        (staging / "made").write_text("1")

    def builder() -> None:
        started.wait()
        build_once(root, "k", fill)
        assert (root / "made").read_text() == "1"  # ready when the call returns

    threads = [threading.Thread(target=builder) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(fills) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["thing"]  # no lock file left


def test_a_builder_that_dies_holding_the_lock_does_not_block_the_next(tmp_path: Path) -> None:
    root = tmp_path / "thing"
    script = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from harness.home import build_once\n"
        "build_once(Path(sys.argv[1]), 'k', lambda staging: os._exit(9))\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(root)], check=False)
    assert done.returncode == 9
    build_once(root, "k", lambda staging: staging.mkdir())
    assert (root / READY_MARKER).read_text() == "k"


def test_each_process_self_tests_in_a_folder_of_its_own() -> None:
    """Two `tasks validate` runs at once once removed each other's self-test workspace."""
    code = "from harness.home import self_test_folder; print(self_test_folder())"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert other.returncode == 0, other.stderr
    mine = self_test_folder()
    assert Path(other.stdout.strip()) != mine and mine.parent == Path(other.stdout.strip()).parent
