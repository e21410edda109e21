import pytest

from tempo import DurationError, format_duration, parse_duration


def test_parse():
    assert parse_duration("1h30m") == 5400


def test_parse_rejects_junk():
    with pytest.raises(DurationError):
        parse_duration("soon")


def test_format():
    assert format_duration(5400) == "1h30m"
    assert format_duration(0) == "0s"
