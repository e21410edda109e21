from pathlib import Path

from harness.sandbox.view import under_any


def test_under_any_holds_a_root_and_what_lies_inside_it_only() -> None:
    inside = under_any([Path("/venv/lib/site-packages/attrs"), Path("/py/lib/os.py")])
    assert inside("/venv/lib/site-packages/attrs")
    assert inside("/venv/lib/site-packages/attrs/__init__.py")
    assert inside("/py/lib/os.py")
    assert not inside("/venv/lib/site-packages/attrs-26.1.0.dist-info/RECORD")
    assert not inside("/venv/lib/site-packages")
    assert not inside("/py/lib/os.pyc")
    assert not inside("/")


def test_under_any_of_no_roots_holds_nothing() -> None:
    assert not under_any([])("/usr/bin/sh")


def test_trees_of_other_keys_unused_for_a_week_are_pruned(tmp_path: Path) -> None:
    import os
    import time

    from harness.sandbox.view import READY, UNUSED_TREE_S, prune_trees

    def tree(name: str, age_s: float | None) -> None:
        (tmp_path / name / "usr").mkdir(parents=True)
        if age_s is not None:
            marker = tmp_path / name / READY
            marker.write_text(name)
            then = time.time() - age_s
            os.utime(marker, (then, then))

    tree("current", UNUSED_TREE_S * 2)  # the one being opened stays, however old
    tree("old", UNUSED_TREE_S + 60)
    tree("recent", UNUSED_TREE_S - 60)
    tree("building", None)  # no marker yet: another process is making it
    assert prune_trees(tmp_path, keep="current") == ["old"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["building", "current", "recent"]


def test_opening_a_tree_marks_it_used_only_when_the_mark_is_old(tmp_path: Path) -> None:
    """The marker lies in what the leak scan walks: a mark at every opening would change the
    scan's environment fingerprint and make its cache stale."""
    import os
    import time

    from harness.sandbox.view import MARK_EVERY_S, UNUSED_TREE_S, mark_used

    marker = tmp_path / "marker"
    marker.write_text("k")
    recent = time.time() - MARK_EVERY_S / 2
    os.utime(marker, (recent, recent))
    assert not mark_used(marker) and abs(marker.stat().st_mtime - recent) < 1e-3
    old = time.time() - MARK_EVERY_S - 60
    os.utime(marker, (old, old))
    assert mark_used(marker) and time.time() - marker.stat().st_mtime < 60
    assert MARK_EVERY_S < UNUSED_TREE_S / 24  # a tree in use is never pruned for a late mark
