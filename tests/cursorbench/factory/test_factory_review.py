"""Code-review tasks from the factory (`cursorbench/factory/review_tasks.py`): anchors that
point at each defect, the answer task's fields, review and debugging tasks kept apart,
and a package going from `propose --kind review` to a task `tasks validate` accepts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from cursorbench.factory.filters import Proposal
from cursorbench.factory.measure import Job
from cursorbench.factory.review_tasks import anchors, review_prompt, review_spec
from cursorbench.factory.schedule import Entry, Scheduler
from cursorbench.tasks.task import ReplaceText
from tests.cli_runner import cursorbench
from tests.cursorbench.factory_pkg import place_wordkit, validate_then_run

TEXT = """def f(a, b):
    if a < b:
        return a
    return b


def g(a, b):
    if a < b:
        return b
    return a
"""


def _op(old: str, new: str) -> ReplaceText:
    return ReplaceText(file="m.py", old=old, new=new)


def test_each_defect_gets_an_anchor_that_is_unique_after_every_change() -> None:
    ops = [
        _op("    if a < b:\n        return a\n", "    if a <= b:\n        return a\n"),
        _op("        return b\n    return a\n", "        return b\n    return b - 1\n"),
    ]
    made = anchors(TEXT, ops)
    assert made is not None
    mutated, found = made
    assert found == ["if a <= b:", "return b - 1"]
    assert all(mutated.count(anchor) == 1 for anchor in found)


def test_a_defect_whose_lines_repeat_elsewhere_has_no_anchor() -> None:
    text = "def f(a):\n    return a + 1\n\n\ndef g(a):\n    return a + 2\n"
    # g's change makes it read as f does: nothing unique points at it
    assert anchors(text, [_op("    return a + 2\n", "    return a + 1\n")]) is None
    assert anchors(text, [_op("nowhere", "x")]) is None  # an operation that does not apply


def test_review_spec_hides_the_failing_tests_and_grades_by_answer() -> None:
    data: dict[str, object] = {
        "id": "p-m-f-review", "category": "debugging", "prompt": "",
        "mutation": {"kind": "bug_injection", "operations": [{"op": "replace_text"}]},
        "verification": {"test_args": ["tests"], "hidden_tests": ["tests/test_m.py"],
                         "fail_to_pass": ["tests/test_m.py::t"], "pass_to_pass": []},
    }  # fmt: skip
    facts: list[dict[str, object]] = [{"kind": "names", "key": "functions", "names": ["f"]}]
    spec = review_spec(data, facts)
    assert spec["category"] == "code_review"
    assert spec["mutation"] == {
        "kind": "bug_injection",
        "operations": [{"op": "replace_text"}, {"op": "remove_file", "file": "tests/test_m.py"}],
    }
    assert spec["verification"] == {"kind": "answer", "answer_file": "review.json", "facts": facts}
    assert data["category"] == "debugging"  # the measured task's fields are left as they were


def test_review_prompt_names_the_module_and_count_never_the_lines() -> None:
    prompt = review_prompt("p-m-f-review", "pkg", "pkg.m", 2, ["`f(1, 2)` should give 1"])
    assert "pkg.m" in prompt and "2 separate defects" in prompt
    assert '"defect_2"' in prompt and "review.json" in prompt
    assert "if a" not in prompt  # nothing of the code
    one = review_prompt("p-m-f-review", "pkg", "pkg.m", 1, [])
    assert "one defect" in one and '"defect_2"' not in one


def _entry(key: str, kind: str, names: set[tuple[str, str]], measured: list[str]) -> Entry:
    def job() -> Job:
        measured.append(key)
        raise RuntimeError("stop here")  # the test only looks at what gets measured

    return Entry(Proposal(key=key, kind=kind, file="m.py", symbols=[]), names, job)


def test_review_and_debugging_tasks_never_share_a_function(tmp_path: Path) -> None:
    previous = {"bug": Proposal(key="bug", kind="bugs", file="m.py", symbols=[], task_id="a",
                                fail_to_pass=6)}  # fmt: skip
    (tmp_path / "a.yaml").write_text("id: a\n")
    measured: list[str] = []
    entries = [
        _entry("bug", "bugs", {("m.py", "f")}, measured),
        _entry("review-f", "review", {("m.py", "f")}, measured),  # f is the bug task's
        _entry("deletion-f", "deletion", {("m.py", "f")}, measured),  # another family
    ]
    scheduler = Scheduler(entries, previous, tmp_path, max_tasks=5)
    with pytest.raises(RuntimeError, match="stop here"):
        scheduler.run(jobs=1)
    assert entries[1].row.failed == "overlap"
    assert measured == ["deletion-f"]


@pytest.mark.slow
def test_review_tasks_propose_validate_and_resolve_with_the_reference(tmp_path: Path) -> None:
    """`--kind review`: a code-review task whose answer is checked against the defects'
    places; `tasks validate` accepts it (the reference answer resolves, the untouched
    workspace and the stub answer do not) and the reference solver resolves it through
    `cursorbench run`."""
    place_wordkit()
    out = tmp_path / "proposed"
    command = ["tasks", "propose", "wordkit==0.3", "--out", str(out), "--kind", "review"]
    done = cursorbench(*command, "--max", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads((out / "proposals.json").read_text())
    assert summary["proposed_by_kind"].get("review", 0) == 1
    (path,) = sorted((out / "tasks").glob("*-review.yaml"))
    task = yaml.safe_load(path.read_text())
    assert task["category"] == "code_review" and task["verification"]["kind"] == "answer"
    removed = [op["file"] for op in task["mutation"]["operations"] if op["op"] == "remove_file"]
    assert removed and all(name.startswith("tests/") for name in removed)
    facts = {fact["key"]: fact for fact in task["verification"]["facts"]}
    assert "defect_1" in facts and facts["functions"]["kind"] == "names"
    # a rerun of another kind in the same folder keeps the review task, and its functions
    bugs = ["tasks", "propose", "wordkit==0.3", "--out", str(out), "--kind", "bugs"]
    done = cursorbench(*bugs, "--max", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert path.is_file()
    # also once the review task was accepted and moved into a suite: and a rerun of its
    # own kind does not propose it again
    suite = tmp_path / "suite"
    done = cursorbench("tasks", "review", str(out), "--accept", path.stem, "--move-to", str(suite))
    assert done.returncode == 0, done.stdout + done.stderr
    done = cursorbench(*bugs, "--max", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    done = cursorbench(*command, "--max", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert not path.exists() and (suite / "tasks" / path.name).is_file()
    assert json.loads((out / "proposals.json").read_text())["measured_now"] == 0
    (suite / "tasks" / path.name).rename(path)
    rows = json.loads((out / "proposals.json").read_text())["candidates"]
    (review,) = [r for r in rows if r["kind"] == "review" and r["failed"] is None]
    same = [r for r in rows if r["kind"] == "bugs" and r["symbols"] == review["symbols"]]
    assert same and all(r["failed"] == "overlap" for r in same)  # wordkit has no other
    run = validate_then_run(out / "tasks", tmp_path)
    assert run["attempts"] == run["resolved"] == 1
