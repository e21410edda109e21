"""Follow-up candidates (`cursorbench/factory/followups.py`) from a hand-made coverage map,
and their session (`prompts.followup_turns`): a tested public earlier part stays, the
later part is asked for in the next turn."""

from __future__ import annotations

from pathlib import Path

from cursorbench.factory.coverage_map import CoverageMap
from cursorbench.factory.followups import enumerate_followups
from cursorbench.factory.prompts import PromptFacts, followup_turns, prompt_problems
from harness.spec import Turn, check_earlier_turns

MODULE = '''def parse(text):
    """Split text into fields."""
    parts = text.split(",")
    return parts


def render(fields):
    """Join fields back into text."""
    text = ",".join(fields)
    return text


def _untested_helper(x):
    y = x + 1
    return y


def shout(text):
    """Upper-case it."""
    loud = text.upper()
    return loud
'''


def _map() -> CoverageMap:
    tests = {n: f"tests/test_m.py::test_{n}" for n in ("parse", "render", "shout")}
    outcomes = {t: "passed" for t in tests.values()}
    runs = {
        "pkg/m.py": {
            3: {tests["parse"]}, 4: {tests["parse"]},
            9: {tests["render"]}, 10: {tests["render"]},
            20: {tests["shout"]}, 21: {tests["shout"]},
        }
    }  # fmt: skip
    statements = {"pkg/m.py": [1, 3, 4, 7, 9, 10, 13, 14, 15, 18, 20, 21]}
    return CoverageMap(outcomes, statements, runs)


def test_a_followup_keeps_a_tested_public_earlier_part(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(MODULE)
    found = {f.key: f for f in enumerate_followups(tmp_path, _map())}
    assert set(found) == {
        "iterate:pkg/m.py::parse>render",
        "iterate:pkg/m.py::parse>render+_untested_helper",
        "iterate:pkg/m.py::render>_untested_helper+shout",
    }  # `_untested_helper` is private and untested: never an earlier part; alone, not asked for
    followup = found["iterate:pkg/m.py::parse>render"]
    assert followup.names == ["render"] and followup.earlier is not None
    assert followup.predicted_fail == ["tests/test_m.py::test_render"]
    assert [op.symbol for op in followup.operations()] == ["render"]  # type: ignore[union-attr]


def test_the_session_alternates_and_the_prompt_asks_for_the_later_part_only() -> None:
    earlier = PromptFacts("t", "pkg", "pkg.m", ["parse"], ["Split text into fields."])
    for n in range(12):
        later = PromptFacts(
            f"pkg-m-render-followup-{n}", "pkg", "pkg.m", ["render"],
            ["Join fields back into text."], ["tests/test_m.py::test_render_empty_fields"],
        )  # fmt: skip
        turns, prompt = followup_turns(earlier, later)
        check_earlier_turns([Turn.model_validate(t) for t in turns])
        asked, answer = (t["content"] for t in turns)
        assert "`parse`" in asked and "`render`" in asked and "`parse`" in answer
        assert "`render`" in prompt and "`parse`" not in prompt
        assert prompt_problems(prompt, ["render"]) == [], prompt
        assert followup_turns(earlier, later) == (turns, prompt)  # the same task, the same words
