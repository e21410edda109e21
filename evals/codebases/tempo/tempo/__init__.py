"""tempo: durations and times of day."""

from tempo.clock import add_minutes, format_time, parse_time
from tempo.durations import DurationError, format_duration, parse_duration

__all__ = [
    "DurationError",
    "add_minutes",
    "format_duration",
    "format_time",
    "parse_duration",
    "parse_time",
]
