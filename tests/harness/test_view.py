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
