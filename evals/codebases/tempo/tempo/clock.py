"""Times of day written "HH:MM", as minutes since midnight."""

from __future__ import annotations

MINUTES_PER_DAY = 24 * 60


def parse_time(text: str) -> int:
    hours, _, minutes = text.partition(":")
    value = int(hours) * 60 + int(minutes)
    if not 0 <= value < MINUTES_PER_DAY:
        raise ValueError(f"not a time of day: {text!r}")
    return value


def format_time(minutes: int) -> str:
    hours, rest = divmod(minutes % MINUTES_PER_DAY, 60)
    return f"{hours:02d}:{rest:02d}"


def add_minutes(text: str, minutes: int) -> str:
    return format_time(parse_time(text) + minutes)
