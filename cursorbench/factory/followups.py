"""Follow-up candidates (`--kind iterate`): an earlier part of a feature is in place, a
later part is asked for in the next turn.

A follow-up is a deletion candidate (`candidates`: one to `MAX_CLUSTER - 1` neighbours in
a module) whose preceding top-level symbol, the earlier part, is public, stays in the
workspace and is run by some passing test. The task's `earlier_turns` are a user's
request for the whole feature and an answer that did the earlier part only; its prompt is
the follow-up (`prompts.followup_turns`). Everything else, the filters and the
measurement included, is the deletion's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cursorbench.factory.candidates import (
    MAX_CLUSTER,
    Candidate,
    Symbol,
    body_lines,
    describe,
    top_level_symbols,
)
from cursorbench.factory.coverage_map import CoverageMap


@dataclass
class FollowUp(Candidate):
    earlier: Symbol | None = None  # set by `enumerate_followups`

    @property
    def key(self) -> str:
        assert self.earlier is not None
        return f"iterate:{self.file}::{self.earlier.name}>{'+'.join(self.names)}"


def _tested(symbol: Symbol, testmap: CoverageMap) -> bool:
    body = body_lines(symbol, testmap.statements.get(symbol.file, []))
    return bool(testmap.tests_running(symbol.file, body) & testmap.passing())


def enumerate_followups(tree: Path, testmap: CoverageMap) -> list[FollowUp]:
    """Every follow-up of every measured package file, most exercised first."""
    found: list[FollowUp] = []
    for relative in sorted(testmap.statements):
        symbols = top_level_symbols(tree, relative)
        for at in range(1, len(symbols)):
            earlier = symbols[at - 1]
            if not earlier.public or not _tested(earlier, testmap):
                continue
            for size in range(1, MAX_CLUSTER):
                later = symbols[at : at + size]
                if len(later) < size or not any(s.public for s in later):
                    continue
                followup = FollowUp(relative, later, earlier=earlier)
                describe(followup, testmap)
                found.append(followup)
    found.sort(key=lambda c: (-len(c.predicted_fail), len(c.predicted_spill), c.key))
    return found
