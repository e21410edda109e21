"""Answer files (code review, understanding): read from the patch text, judged against facts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.kinds.answer import AnswerFileError, answer_text, judge_answers, reference_answer
from harness.results import TestOutcome
from harness.spec import AnswerVerification

CHECK = AnswerVerification.model_validate(
    {
        "kind": "answer",
        "answer_file": "review.json",
        "facts": [
            {"kind": "location", "key": "location", "file": "pkg/mod.py", "anchor": "x = 1 / 0\n"},
            {"kind": "text", "key": "function", "accept": ["divide", "Calc.divide"]},
            {"kind": "names", "key": "callers", "names": ["main", "run"]},
            {"kind": "number", "key": "limit", "value": 5},
        ],
    }
)
LINES = {"location": (40, 40)}
RIGHT = {
    "location": {"file": "pkg/mod.py", "start_line": 39, "end_line": 42},
    "function": "`divide()`",
    "callers": ["run", "MAIN"],
    "limit": "5",
}


def new_file_patch(path: str, text: str, mode: str = "100644") -> str:
    lines = text.splitlines()
    body = "".join(f"+{line}\n" for line in lines)
    return (
        f"diff --git a/{path} b/{path}\nnew file mode {mode}\nindex 0000000..1111111\n"
        f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n{body}"
    )


def judged(answer: dict) -> tuple[bool, dict[str, TestOutcome]]:
    verdict = judge_answers(CHECK, json.dumps(answer), LINES)
    return verdict.resolved, verdict.tests


def test_the_right_answers_resolve_and_the_file_comes_from_the_patch_text() -> None:
    text = answer_text(new_file_patch("review.json", json.dumps(RIGHT, indent=2)), "review.json")
    verdict = judge_answers(CHECK, text, LINES)
    assert verdict.resolved and verdict.score.value == 1.0
    assert set(verdict.tests) == {"answer:location", "answer:function", "answer:callers",
                                  "answer:limit"}  # fmt: skip


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("location", {"file": "pkg/mod.py", "start_line": 1, "end_line": 10_000}),  # every line
        ("location", {"file": "pkg/mod.py", "start_line": 30, "end_line": 35}),  # near, not on
        ("location", {"file": "pkg/other.py", "start_line": 40, "end_line": 40}),
        ("location", [{"file": "pkg/mod.py", "start_line": n, "end_line": n} for n in range(99)]),
        ("callers", ["main", "run", "helper", "divide"]),  # every name it could be
        ("callers", ["main"]),
        ("function", ["divide", "main", "run"]),
        ("limit", 6),
        ("limit", True),
    ],
)
def test_guessing_does_not_pass(key: str, value: object) -> None:
    resolved, tests = judged(RIGHT | {key: value})
    assert not resolved and tests[f"answer:{key}"] is TestOutcome.FAILED


def test_min_score_lets_some_answers_be_wrong() -> None:
    lenient = CHECK.model_copy(update={"min_score": 0.75})
    verdict = judge_answers(lenient, json.dumps(RIGHT | {"limit": 7}), LINES)
    assert verdict.resolved and verdict.score.value == 0.75
    assert verdict.score.reasons == ["limit: wrong"]


@pytest.mark.parametrize("text", [None, "not json", "[1, 2]", "{}"])
def test_a_missing_or_malformed_file_resolves_nothing(text: str | None) -> None:
    verdict = judge_answers(CHECK, text, LINES)
    assert not verdict.resolved and verdict.score.value == 0.0


def test_an_answer_file_that_is_a_link_an_edit_or_absent_is_refused() -> None:
    link = new_file_patch("review.json", "/etc/passwd", mode="120000")
    with pytest.raises(AnswerFileError, match="not a new regular file"):
        answer_text(link, "review.json")
    edit = "diff --git a/review.json b/review.json\nindex 1..2 100644\n--- a/review.json\n"
    edit += "+++ b/review.json\n@@ -1 +1 @@\n-{}\n+{}\n"
    with pytest.raises(AnswerFileError, match="not an edit"):
        answer_text(edit, "review.json")
    with pytest.raises(AnswerFileError, match=r"no review\.json"):
        answer_text(new_file_patch("other.json", "{}"), "review.json")


def test_the_reference_answer_comes_from_the_facts_and_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("a = 1\n\n" + "x = 1 / 0\n")
    data = json.loads(reference_answer(CHECK, tmp_path))
    assert data["location"] == {"file": "pkg/mod.py", "start_line": 3, "end_line": 3}
    assert judge_answers(CHECK, json.dumps(data), {"location": (3, 3)}).resolved


def test_red_team_answer_task_through_grading(tmp_path: Path) -> None:
    """A built review task over textkit: the reference answer resolves; a shotgun location,
    a link to the answer and a change elsewhere do not; no sandbox is opened."""
    from cursorbench.tasks import answer
    from cursorbench.tasks.loader import bundled_suite
    from cursorbench.tasks.task import Task
    from cursorbench.tasks.workspace import build
    from harness.grading.grade import grade

    textkit = bundled_suite() / "repos" / "textkit"
    task = Task.model_validate(
        {
            "id": "textkit-review", "suite_version": "test", "category": "code_review",
            "prompt": "Review textkit/slug.py and write review.json.",
            "source": {"kind": "folder", "path": str(textkit)},
            "mutation": {"kind": "bug_injection", "operations": [
                {"op": "replace_text", "file": "textkit/slug.py", "old": "n = 2", "new": "n = 1"}]},
            "verification": {"kind": "answer", "answer_file": "review.json", "facts": [
                {"kind": "location", "key": "location", "file": "textkit/slug.py",
                 "anchor": "    n = 1\n"},
                {"kind": "text", "key": "function", "accept": ["unique_slug"]}]},
        }
    ).model_copy(update={"path": tmp_path / "task.yaml"})  # fmt: skip
    built = build(task, tmp_path / "cache", scan=False)
    prepared = built.prepared()

    class NoSandboxes:  # a test double: grading an answer must never open a sandbox
        name, confined = "none", True

        def open(self, *args: object, **kwargs: object) -> None:
            raise AssertionError("an answer is graded from the patch text alone")

    def graded(files: dict[str, str | None], name: str):
        patch = answer.patch_for(built.workspace, files, tmp_path / name)
        return grade(prepared, patch, NoSandboxes(), tmp_path / f"{name}-grade")  # type: ignore[arg-type]

    reference = graded(answer.reference_tree(built), "ref")
    assert reference.resolved and reference.scores["answer"].value == 1.0
    shotgun = {"location": {"file": "textkit/slug.py", "start_line": 1, "end_line": 200},
               "function": "unique_slug"}  # fmt: skip
    report = graded({"review.json": json.dumps(shotgun)}, "shotgun")
    assert not report.resolved and report.tests["answer:location"] is TestOutcome.FAILED
    assert not graded({"textkit/slug.py": "n = 2\n"}, "elsewhere").resolved
    stub = graded(answer.stub_tree(built), "stub")
    assert not stub.resolved
