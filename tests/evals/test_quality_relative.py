"""Code quality is the change's, relative to the code it changes (issue 17): a one-line
change inside a function that already had a bare `except`, camelCase locals, a mutable
default or a builtin's name is not charged for them; the same hazards added are."""

from __future__ import annotations

from evals.graders.quality import QualityParams, grade_quality
from harness.grading.scoring import FinalState
from tests.evals.test_graders import TASK

OLD = """def compile(text, cache=[], strict=False):
    lineCount = 0
    try:
        lineCount = len(text)
    except:
        pass
    return lineCount
"""
ADDED = """

def parse(items=[]):
    nodeCount = 0
    try:
        nodeCount = len(items)
    except:
        pass
    return nodeCount
"""


def score(before: str, after: str) -> tuple[float, list[str]]:
    state = FinalState(patch="x", before={"m.py": before}, after={"m.py": after}, resolved=True)
    result = grade_quality(TASK, state, [], QualityParams())
    assert result is not None
    return result.value, result.reasons


def test_pre_existing_hazards_of_a_changed_function_are_not_the_changes() -> None:
    assert score(OLD, OLD.replace("strict=False", "strict=True")) == (1.0, [])


def test_the_same_hazards_added_by_the_change_are_charged() -> None:
    value, reasons = score(OLD, OLD + ADDED)
    assert value < 0.6
    assert any("bare `except:`" in r for r in reasons)
    assert any("mutable default items=[]" in r for r in reasons)
    assert any("camelCase" in r for r in reasons)
