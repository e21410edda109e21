from pathlib import Path

import pytest

from harness.home import READY_MARKER, build_once


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
