"""Schedules: named lists of durations."""

from __future__ import annotations

from tempo.durations import parse_duration


def total_seconds(entries: list[str]) -> int:
    return sum(parse_duration(entry) for entry in entries)


def busiest(schedule: dict[str, list[str]]) -> str:
    """The name with the most scheduled time; ties by name."""
    return min(schedule, key=lambda name: (-total_seconds(schedule[name]), name))
