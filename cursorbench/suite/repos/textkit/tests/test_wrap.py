import pytest

from textkit import fill, wrap

TEXT = "The quick brown fox jumps over the lazy dog"


def test_wrap_basic():
    assert wrap(TEXT, 15) == ["The quick brown", "fox jumps over", "the lazy dog"]


def test_wrap_fits_on_one_line():
    assert wrap("short text", 40) == ["short text"]


def test_wrap_collapses_whitespace():
    assert wrap("a   b\n\tc", 40) == ["a b c"]


def test_wrap_empty():
    assert wrap("", 10) == []
    assert wrap("   ", 10) == []


def test_wrap_lines_never_exceed_width():
    for width in range(5, 30):
        assert all(len(line) <= width for line in wrap(TEXT, width))


def test_wrap_indent():
    assert wrap(TEXT, 20, indent="* ", subsequent_indent="  ") == [
        "* The quick brown",
        "  fox jumps over the",
        "  lazy dog",
    ]


def test_wrap_indent_applies_to_every_line_by_default():
    assert wrap("aa bb cc", 5, indent="> ") == ["> aa", "> bb", "> cc"]


def test_wrap_breaks_long_words():
    assert wrap("abcdefghij xy", 4) == ["abcd", "efgh", "ij", "xy"]


def test_wrap_keeps_long_words():
    assert wrap("abcdefghij xy", 4, break_long_words=False) == ["abcdefghij", "xy"]


def test_wrap_width_must_exceed_indent():
    with pytest.raises(ValueError):
        wrap("abc", 2, indent="  ")


def test_fill_paragraphs():
    text = "one two three four\n\n  \n five six"
    assert fill(text, 9) == "one two\nthree\nfour\n\nfive six"


def test_fill_passes_options():
    assert fill("aa bb", 4, indent="-") == "-aa\n-bb"
