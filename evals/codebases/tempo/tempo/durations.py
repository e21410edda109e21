"""Durations written like "1h30m" or "45s", as seconds."""

from __future__ import annotations

import re

UNITS = {"h": 3600, "m": 60, "s": 1}
_PART = re.compile(r"(\d+)([hms])")


class DurationError(ValueError):
    """Text that is not a duration."""


def parse_duration(text: str) -> int:
    text = text.strip()
    if not text or _PART.sub("", text):
        raise DurationError(f"not a duration: {text!r}")
    return sum(int(number) * UNITS[unit] for number, unit in _PART.findall(text))


def format_duration(seconds: int) -> str:
    if seconds < 0:
        raise DurationError("negative duration")
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{value}{unit}" for value, unit in ((hours, "h"), (minutes, "m"), (secs, "s")) if value]
    return "".join(parts) or "0s"
