"""Hidden tests pinning exact wording are found and the task flagged for review; tests that
check behaviour (numbers, short keys, identifiers, membership) are not."""

from __future__ import annotations

from pathlib import Path

from cursorbench.validation.pins import find_pins

PYTEST_STYLE = """
from pkg import describe, total

def test_phrase():
    assert describe(3) == "three minutes ago"

def test_phrase_reversed():
    expected = 1
    assert "an hour from now" == describe(-60), expected

def test_number():
    assert total([1, 2]) == 3

def test_short_key():
    assert describe(0) == "now"

def test_identifier_like():
    assert describe(9) == "nine_minutes_ago_label"

def test_membership_is_behaviour():
    assert "minutes" in describe(3)
"""

UNITTEST_STYLE = """
import unittest

class DescribeTest(unittest.TestCase):
    def test_message(self):
        self.assertEqual(make_message(2), "2 files were changed")

    def test_count(self):
        self.assertEqual(count(2), 2)
"""


def _hidden(tmp_path: Path) -> Path:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_words.py").write_text(PYTEST_STYLE)
    (tmp_path / "tests" / "test_unit.py").write_text(UNITTEST_STYLE)
    return tmp_path


def test_long_prose_literals_compared_for_equality_are_pins(tmp_path: Path) -> None:
    names = ["phrase", "phrase_reversed", "number", "short_key", "identifier_like"]
    names.append("membership_is_behaviour")
    ids = [f"tests/test_words.py::test_{name}" for name in names]
    pins = find_pins(_hidden(tmp_path), ids)
    assert pins.pinned == ids[:2] and pins.example == "three minutes ago"
    assert pins.tests == 6 and not pins.flagged


def test_unittest_methods_and_parametrized_ids_are_read(tmp_path: Path) -> None:
    ids = [
        "tests/test_unit.py::DescribeTest::test_message",
        "tests/test_unit.py::DescribeTest::test_count",
        "tests/test_words.py::test_phrase[case-1]",
    ]
    pins = find_pins(_hidden(tmp_path), ids)
    assert pins.pinned == [ids[0], ids[2]] and pins.flagged
    assert "2 of 3 FAIL_TO_PASS tests compare with an exact string" in pins.note()


def test_unreadable_or_missing_tests_pin_nothing(tmp_path: Path) -> None:
    hidden = _hidden(tmp_path)
    (hidden / "tests" / "test_broken.py").write_text("def test_x(:\n")
    ids = ["tests/test_broken.py::test_x", "tests/test_gone.py::test_y"]
    pins = find_pins(hidden, ids)
    assert pins.pinned == [] and not pins.flagged
    assert not find_pins(hidden, []).flagged  # no FAIL_TO_PASS: nothing to flag


PARAMETRIZED = """
import pytest

@pytest.mark.parametrize(
    "seconds, expected",
    [(3, "3 seconds ago"), pytest.param(60, "a minute ago", id="minute"), (0, "now")],
)
def test_words(seconds, expected):
    assert describe(seconds) == expected

@pytest.mark.parametrize("seconds, expected", [(3, 3), (60, 60)])
def test_numbers(seconds, expected):
    assert count(seconds) == expected

@pytest.mark.parametrize("label", ["a long label here", "another long label"])
def test_label_is_only_input(label):
    assert len(parse(label)) == 2
"""


def test_strings_given_by_parametrize_to_the_compared_parameter_are_pins(tmp_path: Path) -> None:
    (tmp_path / "test_p.py").write_text(PARAMETRIZED)
    names = ["test_words[3-3 seconds ago]", "test_numbers[3-3]", "test_label_is_only_input[x]"]
    pins = find_pins(tmp_path, [f"test_p.py::{name}" for name in names])
    assert pins.pinned == ["test_p.py::test_words[3-3 seconds ago]"]
    assert pins.example == "3 seconds ago"
