"""The task factory: a package the v1 suite does not use (wordkit, an sdist made here)
goes from `tasks propose` to a task `tasks validate` accepts; and its parts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from cursorbench.factory.prompts import PromptFacts, offline_prompt, prompt_problems
from cursorbench.factory.release import parse_requirement
from tests.cli_runner import cursorbench
from tests.cursorbench.factory_pkg import place_wordkit, validate_then_run


@pytest.mark.slow
def test_bugs_propose_on_two_jobs_validate_then_resume(tmp_path: Path) -> None:
    """`--kind both --jobs 2` proposes a new-feature (deletion) task and a debugging task,
    `tasks validate` accepts what was proposed, and a rerun with the same --out measures
    nothing again."""
    place_wordkit()
    out = tmp_path / "proposed"
    command = ["tasks", "propose", "wordkit==0.3", "--out", str(out), "--kind", "both"]
    done = cursorbench(*command, "--jobs", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[1/" in done.stderr  # progress lines
    summary = json.loads((out / "proposals.json").read_text())
    assert summary["released"] == "2024-06-01"  # wordkit's PKG-INFO date
    assert summary["failed_by_filter"]["size"] >= 1
    bugs = [c for c in summary["candidates"] if c["kind"] == "bugs" and c["failed"] is None]
    assert bugs and summary["proposed_by_kind"]["deletion"] >= 1
    task = (out / "tasks" / f"{bugs[0]['task_id']}.yaml").read_text()
    assert "category: debugging" in task and "kind: bug_injection" in task
    assert "cases.py" not in task.split("source:")[0]  # the report never names the place
    done = cursorbench("tasks", "validate", "--tasks", str(out))  # the folder: its tasks/
    assert done.returncode == 0, done.stdout + done.stderr
    done = cursorbench(*command)
    assert done.returncode == 0, done.stdout + done.stderr
    again = json.loads((out / "proposals.json").read_text())
    assert again["measured_now"] == 0 and again["coverage_reused"] is True
    assert again["resumed"] == summary["measured_now"] and again["proposed"] == summary["proposed"]
    assert again["prompts_rewritten"] == 0
    # a newer prompt writer: the prompts are written again, nothing is measured again
    path = out / "tasks" / f"{bugs[0]['task_id']}.yaml"
    data = yaml.safe_load(path.read_text())
    written, data["prompt"] = data["prompt"], "a prompt an older writer wrote"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    done = cursorbench(*command, "--rewrite-prompts")
    assert done.returncode == 0, done.stdout + done.stderr
    again = json.loads((out / "proposals.json").read_text())
    assert (again["measured_now"], again["prompts_rewritten"]) == (0, 1)
    assert yaml.safe_load(path.read_text())["prompt"] == written


@pytest.mark.slow
def test_followups_propose_validate_and_resolve_with_the_reference(tmp_path: Path) -> None:
    """`--kind iterate`: a follow-up task (the earlier part in the workspace, the session
    so far in `earlier_turns`) that `tasks validate` accepts and the reference solver,
    answering after the earlier turns, resolves through `cursorbench run`."""
    place_wordkit()
    out = tmp_path / "proposed"
    command = ["tasks", "propose", "wordkit==0.3", "--out", str(out), "--kind", "iterate"]
    done = cursorbench(*command)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads((out / "proposals.json").read_text())
    assert summary["proposed_by_kind"].get("iterate", 0) >= 1
    (path,) = sorted((out / "tasks").glob("*-followup.yaml"))[:1]
    task = yaml.safe_load(path.read_text())
    assert task["category"] == "iterate_on_feature"
    assert [t["role"] for t in task["earlier_turns"]] == ["user", "assistant"]
    run = validate_then_run(out / "tasks", tmp_path)
    assert run["attempts"] == run["resolved"] >= 1


def test_offline_prompt_keeps_the_rubric_and_varies() -> None:
    prompts = [
        offline_prompt(
            PromptFacts(
                task_id=f"t{n}",
                package="wordkit",
                module="wordkit.cases",
                names=["to_camel_identifier"],
                docstrings=["Join words in camel case."],
                test_names=["tests/t.py::test_camel_from_snake", "tests/t.py::test_camel_empty"],
            )
        )
        for n in range(12)
    ]
    assert all(prompt_problems(p, ["to_camel_identifier"]) == [] for p in prompts)
    assert len({len(p) for p in prompts}) > 3


@pytest.mark.parametrize(
    ("docstring", "goal"),
    [
        ("Returns the words of an identifier.", "return the words of an identifier"),
        ("Converts text to camel case.\n\nMore.", "convert text to camel case"),
        ("Applies a plan", "apply a plan"),
        ("Fix the text.", "fix the text"),
        ("Given Unicode text as input, fix it.", None),  # not what the code does
        ("NOTE: Using guess_bytes is not recommended.", None),
        ("A helper for names.", None),
        ("Returns", None),
    ],
)
def test_a_goal_is_a_docstring_sentence_that_says_what_the_code_does(
    docstring: str, goal: str | None
) -> None:
    from cursorbench.factory.prompts import goal_of

    assert goal_of(docstring) == goal


def test_requirement_needs_a_version() -> None:
    assert parse_requirement("wordkit==0.3") == ("wordkit", "0.3")
    with pytest.raises(Exception, match="NAME==VERSION"):
        parse_requirement("wordkit")


def test_review_moves_only_accepted_tasks(tmp_path: Path) -> None:
    from cursorbench.factory import review

    for name in ("a", "b"):
        (tmp_path / "tasks").mkdir(exist_ok=True)
        (tmp_path / "tasks" / f"{name}.yaml").write_text(f"id: {name}\nprompt: old\n")
    review.record(tmp_path, "a", "accept", "")
    review.edit_prompt(tmp_path, "b", "new prompt", "clearer")
    with pytest.raises(review.ReviewError, match="reason"):
        review.record(tmp_path, "b", "reject", "")
    suite = tmp_path / "suite"
    moved = review.move_accepted(tmp_path, suite, suite_version="2.0")
    assert [p.name for p in moved] == ["a.yaml"]
    assert yaml.safe_load(moved[0].read_text())["suite_version"] == "2.0"
    assert "new prompt" in (tmp_path / "tasks" / "b.yaml").read_text()
    assert review.states(tmp_path) == {"a": "accept", "b": "edit"}
    assert review.reviewed(suite) == {"a"}  # its decision went along; b's stayed behind
    (tmp_path / "tasks" / "a.yaml").write_text("id: a\nprompt: again\n")
    with pytest.raises(review.ReviewError, match="already has a"):
        review.move_accepted(tmp_path, suite)  # never overwrites a suite's task


def test_review_shows_each_undecided_task_as_a_reviewer_reads_it(tmp_path: Path) -> None:
    from cursorbench.factory import review

    task = {
        "id": "p-m-f", "category": "iterate_on_feature", "prompt": "Next, `f`.",
        "source": {"name": "p", "version": "1"},
        "earlier_turns": [{"role": "user", "content": "I'd like e and f."},
                          {"role": "assistant", "content": "Added e."}],
        "mutation": {"operations": [{"op": "remove_symbol", "file": "m.py", "symbol": "f"}]},
        "verification": {"hidden_tests": ["tests/test_m.py"]},
    }  # fmt: skip
    (tmp_path / "tasks").mkdir()
    for name in ("p-m-f", "p-m-g"):
        (tmp_path / "tasks" / f"{name}.yaml").write_text(yaml.safe_dump(task | {"id": name}))
    rows = [
        {"task_id": "p-m-f", "failed": "overlap"},
        {"task_id": "p-m-f", "failed": None, "fail_to_pass": 7, "changed_lines": 40},
    ]
    (tmp_path / "proposals.json").write_text(json.dumps({"candidates": rows}))
    review.record(tmp_path, "p-m-g", "accept", "")
    assert [p.stem for p in review.pending(tmp_path)] == ["p-m-f"]
    shown = "\n".join(review.describe(tmp_path, tmp_path / "tasks" / "p-m-f.yaml"))
    assert "earlier user: I'd like e and f." in shown and "Next, `f`." in shown
    assert "remove_symbol m.py f" in shown and "tests/test_m.py" in shown
    assert "FAIL_TO_PASS 7" in shown  # the row that proposed it, not the one that failed


def test_a_suite_drops_the_tasks_its_validation_refused(tmp_path: Path) -> None:
    from cursorbench.factory import review

    (tmp_path / "tasks").mkdir()
    for name in ("a", "b", "c"):
        (tmp_path / "tasks" / f"{name}.yaml").write_text(f"id: {name}\n")
    records = [{"id": "a", "valid": True}, {"id": "b", "valid": False, "problems": ["leak: x"]}]
    (tmp_path / "validation.json").write_text(json.dumps({"tasks": records}))
    review.record(tmp_path, "b", "accept", "")
    assert review.drop_invalid(tmp_path) == [tmp_path / "refused" / "b.yaml"]
    assert sorted(p.stem for p in (tmp_path / "tasks").glob("*.yaml")) == ["a", "c"]
    assert review.states(tmp_path)["b"] == "reject"  # c: not validated yet, stays
    assert "validation: leak: x" in (tmp_path / "review.jsonl").read_text()
    with pytest.raises(review.ReviewError, match="no validation report"):
        review.drop_invalid(tmp_path / "tasks")


class PromptWriterDouble:
    """A scripted model that answers every request with one prompt, keeping the requests."""

    models = ["prompt-writer-double"]

    def __init__(self, text: str) -> None:
        self.text = text
        self.seen: list[dict[str, object]] = []

    def respond(self, request: dict[str, object]) -> object:
        from harness.model.openai_server import Reply

        self.seen.append(request)
        return Reply(content=self.text)


@pytest.fixture
def prompt_endpoint(serve: Any) -> tuple[Any, str]:
    double = PromptWriterDouble("Bring back camel-case joining of identifier words in wordkit.")
    return double, serve(double)


def test_endpoint_writer_sends_the_rubric(prompt_endpoint: tuple[Any, str]) -> None:
    from cursorbench.factory.prompts import RUBRIC, EndpointWriter

    double, url = prompt_endpoint
    facts = PromptFacts(task_id="t", package="wordkit", module="wordkit.cases", names=["f"])
    text, writer = EndpointWriter(url, "prompt-writer-double").write(facts)
    assert text == double.text and writer == "endpoint:prompt-writer-double"
    assert double.seen[0]["messages"][0] == {"role": "system", "content": RUBRIC}


def test_endpoint_writer_sends_the_bug_rubric(prompt_endpoint: tuple[Any, str]) -> None:
    from cursorbench.factory.bug_prompts import BUG_RUBRIC, BugFacts, write_bug_report
    from cursorbench.factory.prompts import EndpointWriter

    double, url = prompt_endpoint
    facts = BugFacts("t", "wordkit", ["`to_camel_identifier('a_b')` should give 'aB'"], [])
    text, writer = write_bug_report(facts, EndpointWriter(url, "prompt-writer-double"))
    assert text == double.text and writer == "endpoint:prompt-writer-double"
    assert double.seen[0]["messages"][0] == {"role": "system", "content": BUG_RUBRIC}
    assert "should give" in double.seen[0]["messages"][1]["content"]


@pytest.mark.slow
def test_a_task_moved_into_a_suite_is_not_proposed_again_by_a_newer_factory(
    tmp_path: Path,
) -> None:
    """A rerun after the factory changed a candidate (its digest) measures it again, but not
    the one a person accepted and moved into a suite: the suite has it."""
    from cursorbench.factory import review

    place_wordkit()
    out, suite = tmp_path / "proposed", tmp_path / "suite"
    command = ["tasks", "propose", "wordkit==0.3", "--out", str(out), "--max", "1"]
    done = cursorbench(*command)
    assert done.returncode == 0, done.stdout + done.stderr
    [task] = sorted((out / "tasks").glob("*.yaml"))
    review.record(out, task.stem, "accept", "fine")
    review.move_accepted(out, suite, suite_version="2.0")
    data = json.loads((out / "proposals.json").read_text())
    for row in data["candidates"]:
        row["candidate_digest"] = "changed-since"  # as a newer factory's candidates are
    (out / "proposals.json").write_text(json.dumps(data))
    done = cursorbench(*command)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (out / "tasks" / task.name).exists() and (suite / "tasks" / task.name).exists()
