from tempo import add_minutes, format_time, parse_time


def test_round_trip():
    assert format_time(parse_time("07:05")) == "07:05"


def test_add_wraps():
    assert add_minutes("23:30", 45) == "00:15"
