"""The attempt page's parts: coloured diffs, tests split by their lists, a trajectory as a
chat with nothing cut silently."""

from __future__ import annotations

import json
from typing import Any

from leaderboard import transcript

PATCH = """diff --git a/pkg/m.py b/pkg/m.py
--- a/pkg/m.py
+++ b/pkg/m.py
@@ -1,3 +1,3 @@
 def f():
-    return 1
+    return 2  # <b>
"""


def test_a_diff_is_coloured_line_by_line_and_escaped() -> None:
    html = transcript.coloured_diff(PATCH)
    assert "<span class='file'>diff --git a/pkg/m.py b/pkg/m.py</span>" in html
    assert "<span class='hunk'>@@ -1,3 +1,3 @@</span>" in html
    assert "<span class='del'>-    return 1</span>" in html
    assert "<span class='add'>+    return 2  # &lt;b&gt;</span>" in html
    assert "<span class='ctx'> def f():</span>" in html
    assert "+1</b>" in html and "-1</b>" in html  # the counts: one line added, one removed
    assert transcript.coloured_diff(None) == "<p id='diff'>(no diff kept)</p>"


def test_tests_are_split_into_fail_to_pass_and_pass_to_pass() -> None:
    tests = {"t::new": "passed", "t::old": "failed", "t::extra": "passed"}
    lists = (["t::new", "t::gone"], ["t::old"])
    sections = transcript.split_tests(tests, lists)
    assert sections == [
        ("tests-f2p", "fail-to-pass", [("t::new", "passed"), ("t::gone", "missing")]),
        ("tests-p2p", "pass-to-pass", [("t::old", "failed")]),
        ("tests-other", "other tests graded", [("t::extra", "passed")]),
    ]
    html = transcript.tests_html(tests, lists)
    assert "fail-to-pass: 1 of 2 passed" in html and "pass-to-pass: 0 of 1 passed" in html
    unknown = transcript.split_tests(tests, None)
    assert [section for section, _, _ in unknown] == ["tests-unclassified"]
    assert "unknown" in unknown[0][1]


def test_a_long_text_is_folded_whole_and_a_huge_one_elided_with_a_count() -> None:
    short = transcript.shown_text("one line", "/raw")
    assert short == "<pre>one line</pre>"
    lines = "\n".join(f"line {i}" for i in range(100))
    folded = transcript.shown_text(lines, "/raw")
    assert folded.startswith("<details>") and "line 99" in folded and "line 0" in folded
    assert "elided" not in folded
    huge = "x" * (transcript.MAX_SHOWN_CHARS + 1000)
    shown = transcript.shown_text(huge, "/raw")
    cut = len(huge) - transcript.KEEP_HEAD - transcript.KEEP_TAIL
    assert f"{cut:,} characters elided" in shown and "href='/raw'" in shown


def test_the_chat_shows_messages_calls_outputs_and_grading_in_order() -> None:
    arguments = json.dumps({"command": "pytest -q", "timeout": 30})
    records: list[dict[str, Any]] = [
        {"type": "header", "format_version": 1, "task_id": "t"},
        {"type": "message", "role": "system", "content": "You are an agent."},
        {"type": "message", "role": "user", "content": "Fix <it>"},
        {
            "type": "model",
            "message": {
                "role": "assistant",
                "content": "I will run the tests",
                "tool_calls": [{"id": "c1", "function": {"name": "bash", "arguments": arguments}}],
            },
            "finish_reason": "tool_calls",
            "usage": {"tokens_in": 10, "tokens_out": 5},
        },
        {"type": "tool", "id": "c1", "name": "bash", "arguments": arguments, "output": "ok\n"},
        {"type": "grade", "tests": {"t::a": "passed"}, "output": "1 passed"},
    ]
    html = transcript.chat(records, "/raw")
    order = [html.index(f"id='record-{i}'") for i in range(len(records))]
    assert order == sorted(order)
    assert "<details><summary>system prompt</summary>" in html
    assert "Fix &lt;it&gt;" in html and "<it>" not in html
    assert '"command": "pytest -q",\n  "timeout": 30' in html.replace("&quot;", '"')
    assert "<details class='output'><summary>output: 2 lines, 3 characters</summary>" in html
    assert "harness: grade" in html


def test_the_grader_section_gives_each_score_s_reasons() -> None:
    result = {
        "status": "failed",
        "failure": "behaviour_failed",
        "error": "intent 0.20 < 0.5",
        "flags": [],
        "scores": {"intent": {"value": 0.2, "reasons": ["asked nothing", "<edited>"]}},
    }
    html = transcript.grader_html(result, [], "/raw")
    assert "behaviour_failed" in html and "intent 0.20 &lt; 0.5" in html
    assert "<li>asked nothing</li>" in html and "<li>&lt;edited&gt;</li>" in html
