import pytest

from textkit import truncate, truncate_middle

TEXT = "The quick brown fox"


def test_truncate_short_text_unchanged():
    assert truncate(TEXT, 19) == TEXT
    assert truncate(TEXT, 100) == TEXT


def test_truncate_at_word_boundary():
    assert truncate(TEXT, 12) == "The quick..."


def test_truncate_moves_back_to_whole_word():
    assert truncate(TEXT, 14) == "The quick..."


def test_truncate_without_whole_words():
    assert truncate(TEXT, 14, whole_words=False) == "The quick b..."


def test_truncate_single_long_word():
    assert truncate("Supercalifragilistic", 8) == "Super..."


def test_truncate_custom_suffix():
    assert truncate(TEXT, 10, suffix="\u2026") == "The quick\u2026"


def test_truncate_length_below_suffix():
    with pytest.raises(ValueError):
        truncate(TEXT, 2)


def test_truncate_middle():
    assert truncate_middle("/usr/local/lib/python3.11/site.py", 15) == "/usr/l...ite.py"


def test_truncate_middle_odd_room_favours_head():
    assert truncate_middle("abcdefghij", 8) == "abc...ij"


def test_truncate_middle_short_unchanged():
    assert truncate_middle("abc", 10) == "abc"


def test_truncate_middle_too_short():
    with pytest.raises(ValueError):
        truncate_middle("abcdefgh", 4)
