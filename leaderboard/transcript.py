"""An attempt's page parts as HTML: the trajectory as a chat, the coloured diff, the tests
split into fail-to-pass and pass-to-pass, and what the grader said. Pure functions of the
stored records; every model-written string is escaped.

The chat shows every record in order: system and user messages, the model's replies with
their tool calls (arguments pretty-printed as JSON), each tool's output, and the harness's
records (the diff taken, grading, scores, the end). Nothing is cut silently: a long text is
collapsed in a `<details>` (folded, all of it in the page), and only a text longer than
`MAX_SHOWN_CHARS` is elided in its middle, with a note saying how many characters and a link
to the raw trajectory (`RAW`), which has every byte.

Not covered here: reading the records (`leaderboard.runs`), the page shell (`leaderboard.pages`).
"""

from __future__ import annotations

import json
from typing import Any

from leaderboard.pages import e, table

FOLD_LINES = 12  # a text longer than this is shown folded
FOLD_CHARS = 1500
MAX_SHOWN_CHARS = 200_000  # beyond this a text is elided in the middle, with a link to the raw
KEEP_HEAD, KEEP_TAIL = 150_000, 40_000
ROLE_CLASS = {"system": "system", "user": "user", "assistant": "assistant", "tool": "tool"}
HARNESS_RECORDS = ("diff", "grade", "scores", "result", "agent_end", "judging")
STYLE = """
.chat{max-width:1100px} .turn{border:1px solid #ddd;border-radius:8px;margin:.6rem 0;
padding:.4rem .7rem} .turn h3{font-size:.8rem;margin:.1rem 0 .3rem;color:#555;
text-transform:uppercase;letter-spacing:.04em} .turn.system{background:#f7f7f7}
.turn.user{background:#eef5ff} .turn.assistant{background:#fff;border-color:#9ab}
.turn.tool{background:#fbfaf4} .turn.harness{background:#f4f0fb}
.turn pre{white-space:pre-wrap;word-break:break-word;margin:.2rem 0;max-height:none}
.call{border-left:3px solid #9ab;padding-left:.5rem;margin:.3rem 0}
.elided{color:#b26a00;font-weight:bold} details summary{cursor:pointer;color:#345}
pre.diff{padding:0;max-height:none} pre.diff span{display:block;padding:0 .5rem}
pre.diff .add{background:#e6ffec;color:#116329} pre.diff .del{background:#ffebe9;color:#82071e}
pre.diff .hunk{background:#ddf4ff;color:#0550ae} pre.diff .file{font-weight:bold;background:#eee}
td.passed{color:#1a7f37} td.failed,td.error,td.missing{color:#c62828} .reasons li{margin:.1rem 0}
"""


def shown_text(text: str, raw_href: str) -> str:
    """The text in a `<pre>`, folded when long, elided (and said so) only past the cap."""
    note = ""
    if len(text) > MAX_SHOWN_CHARS:
        cut = len(text) - KEEP_HEAD - KEEP_TAIL
        note = (
            f"<p class='elided'>{cut:,} characters elided in the middle of "
            f"{len(text):,}; <a href='{e(raw_href)}'>the raw trajectory</a> has all of them.</p>"
        )
        body = e(text[:KEEP_HEAD]) + f"\n[… {cut:,} characters elided …]\n" + e(text[-KEEP_TAIL:])
    else:
        body = e(text)
    lines = text.count("\n") + 1
    pre = f"<pre>{body}</pre>{note}"
    if lines <= FOLD_LINES and len(text) <= FOLD_CHARS:
        return pre
    return (
        f"<details><summary>{lines:,} lines, {len(text):,} characters (click to unfold)"
        f"</summary>{pre}</details>"
    )


def pretty_arguments(arguments: Any) -> str:
    """Tool-call arguments as indented JSON (a string that is not JSON stays as it is)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return arguments
    return json.dumps(arguments, indent=2, ensure_ascii=False, default=str)


def _content(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _turn(kind: str, title: str, inner: str, index: int) -> str:
    return (
        f"<div class='turn {kind}' id='record-{index}' data-kind='{e(kind)}'>"
        f"<h3>#{index} {title}</h3>{inner}</div>"
    )


def _call(call: dict[str, Any], raw_href: str) -> str:
    function = call.get("function") or {}
    name = function.get("name", call.get("name", "?"))
    arguments = function.get("arguments", call.get("arguments"))
    return (
        f"<div class='call'><b>call</b> <code>{e(name)}</code> "
        f"<small>{e(call.get('id', ''))}</small>"
        f"{shown_text(pretty_arguments(arguments), raw_href)}</div>"
    )


def chat(records: list[dict[str, Any]], raw_href: str) -> str:
    """The trajectory as a chat: one bubble per record, in order."""
    turns = [_record(record, index, raw_href) for index, record in enumerate(records)]
    return f"<div class='chat' id='chat'>{''.join(turns)}</div>"


def _record(record: dict[str, Any], index: int, raw_href: str) -> str:
    kind = record.get("type")
    if kind == "message":
        role = str(record.get("role", "?"))
        extra = " (sent mid-run)" if record.get("injected") else ""
        text = shown_text(_content(record.get("content")), raw_href)
        if role == "system":
            text = f"<details><summary>system prompt</summary>{text}</details>"
        return _turn(ROLE_CLASS.get(role, "user"), e(role) + e(extra), text, index)
    if kind == "model":
        message = record.get("message") or {}
        usage = record.get("usage") or {}
        title = (
            f"assistant <small>finish: {e(record.get('finish_reason'))}, "
            f"tokens {e(usage.get('tokens_in', '?'))} in / {e(usage.get('tokens_out', '?'))} out"
            "</small>"
        )
        content = _content(message.get("content"))
        inner = shown_text(content, raw_href) if content else ""
        inner += "".join(_call(call, raw_href) for call in message.get("tool_calls") or [])
        return _turn("assistant", title, inner or "<p><i>(empty reply)</i></p>", index)
    if kind == "tool":
        return _tool(record, index, raw_href)
    if kind in HARNESS_RECORDS or kind in ("header", "limit", "rejected", "exception"):
        shown = {k: v for k, v in record.items() if k not in ("type", "t")}
        if kind == "diff":
            shown.pop("patch", None)  # shown coloured in the Diff section
            shown["patch"] = "(see Diff above)"
        return _turn("harness", f"harness: {e(kind)}", shown_text(_content(shown), raw_href), index)
    shown = {k: v for k, v in record.items() if k != "t"}
    return _turn("harness", e(kind), shown_text(_content(shown), raw_href), index)


def _tool(record: dict[str, Any], index: int, raw_href: str) -> str:
    name = record.get("name", "?")
    facts = []
    if record.get("duration_s") is not None:
        facts.append(f"{record['duration_s']} s")
    if record.get("skipped"):
        facts.append("not run")
    title = f"tool <code>{e(name)}</code> <small>{e(', '.join(facts))}</small>"
    inner = ""
    if record.get("arguments") is not None:
        inner += (
            "<details><summary>arguments</summary>"
            f"{shown_text(pretty_arguments(record['arguments']), raw_href)}</details>"
        )
    if "output" in record:
        output = _content(record.get("output"))
        inner += (
            f"<details class='output'><summary>output: {output.count(chr(10)) + 1:,} lines, "
            f"{len(output):,} characters</summary><pre>{_elided(output, raw_href)}</pre>"
            "</details>"
        )
    else:
        inner += "<p><i>(no output: the call ended the attempt)</i></p>"
    return _turn("tool", title, inner, index)


def _elided(text: str, raw_href: str) -> str:
    if len(text) <= MAX_SHOWN_CHARS:
        return e(text)
    cut = len(text) - KEEP_HEAD - KEEP_TAIL
    return (
        e(text[:KEEP_HEAD])
        + f"</pre><p class='elided'>{cut:,} characters elided here; "
        + f"<a href='{e(raw_href)}'>the raw trajectory</a> has all of them.</p><pre>"
        + e(text[-KEEP_TAIL:])
    )


def coloured_diff(patch: str | None) -> str:
    """A unified diff, a line per span: added green, removed red, hunk headers blue."""
    if not patch:
        return "<p id='diff'>(no diff kept)</p>"
    spans = []
    for line in patch.splitlines():
        if line.startswith(("diff --git", "index ", "--- ", "+++ ", "new file", "deleted file")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "ctx"
        spans.append(f"<span class='{kind}'>{e(line) or ' '}</span>")
    added = sum(s.startswith("<span class='add'>") for s in spans)
    removed = sum(s.startswith("<span class='del'>") for s in spans)
    return (
        f"<p><b class='pass'>+{added}</b> <b class='fail'>-{removed}</b> lines</p>"
        f"<pre class='diff' id='diff'>{''.join(spans)}</pre>"
    )


def split_tests(
    tests: dict[str, str], lists: tuple[list[str], list[str]] | None
) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(section id, title, [(test, outcome)]) for fail-to-pass, pass-to-pass and any other
    test graded; a listed test with no outcome is `missing`. Without the task's lists, one
    section of every test, said to be unclassified."""
    if lists is None:
        every = sorted(tests.items())
        title = "tests (fail-to-pass and pass-to-pass unknown: the task's lists are not here)"
        return [("tests-unclassified", title, every)] if every else []
    fail_to_pass, pass_to_pass = lists
    listed = set(fail_to_pass) | set(pass_to_pass)
    sections = [
        ("tests-f2p", "fail-to-pass", [(t, tests.get(t, "missing")) for t in fail_to_pass]),
        ("tests-p2p", "pass-to-pass", [(t, tests.get(t, "missing")) for t in pass_to_pass]),
    ]
    others = sorted((t, o) for t, o in tests.items() if t not in listed)
    if others:
        sections.append(("tests-other", "other tests graded", others))
    return sections


def tests_html(tests: dict[str, str], lists: tuple[list[str], list[str]] | None) -> str:
    parts = []
    for section, title, rows in split_tests(tests, lists):
        passed = sum(outcome == "passed" for _, outcome in rows)
        cells = [[e(test), e(outcome)] for test, outcome in rows]
        body = table(["test", "outcome"], cells)
        body = body.replace("<td>passed</td>", "<td class='passed'>passed</td>")
        for bad in ("failed", "error", "missing"):
            body = body.replace(f"<td>{bad}</td>", f"<td class='{bad}'>{bad}</td>")
        parts.append(
            f"<section id='{section}'><h3>{e(title)}: {passed} of {len(rows)} passed</h3>"
            f"{body}</section>"
        )
    return "".join(parts) or "<p>no tests were run (see the grader below)</p>"


def grader_html(result: dict[str, Any], records: list[dict[str, Any]], raw_href: str) -> str:
    """What grading decided and why: status, failure and error, each score with its reasons,
    the tamper flags, and the grade record's canaries, dropped tests and output."""
    facts = [
        ("status", e(result.get("status"))),
        ("failure", e(result.get("failure") or "")),
        ("error", e(result.get("error") or "")),
        ("flags", e(", ".join(result.get("flags") or [])) or "none"),
    ]
    grade = next((r for r in records if r.get("type") == "grade"), None)
    if grade is not None:
        facts.append(("canaries passed", e(grade.get("canaries_passed"))))
        facts.append(
            ("tests dropped", e(", ".join(map(str, grade.get("dropped") or []))) or "none")
        )
    body = table(["", ""], [[k, v] for k, v in facts])
    scores = result.get("scores") or {}
    if scores:
        rows = [
            [
                e(name),
                f"{float(score.get('value', 0)):.2f}",
                "<ul class='reasons'>"
                + "".join(f"<li>{e(reason)}</li>" for reason in score.get("reasons") or [])
                + "</ul>",
            ]
            for name, score in sorted(scores.items())
        ]
        body += "<h3>scores</h3>" + table(["check", "score", "reasons"], rows)
    if grade is not None and grade.get("output"):
        body += (
            "<h3>test output</h3><p><small>as the harness keeps it: the last 4,000 "
            "characters of the test run's output</small></p>"
            + shown_text(str(grade["output"]), raw_href)
        )
    return f"<div id='grader'>{body}</div>"
