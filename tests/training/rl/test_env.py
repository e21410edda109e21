"""The harness as the environment: micro-tasks built by the suite's builder, attempted
through the harness's sandbox, tools and graders; the reward is the verdict plus the
evals' code_quality score. Replies come from a scripted chat-model fixture (the policy
itself is exercised by the RL run and the pipeline tests)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.model.chat import ModelReply, ToolCall
from harness.results import Attempt
from harness.run.attempt import AttemptEnvironment, run_attempt
from harness.run.plan import SandboxPlan
from harness.sandbox.registry import open_backend
from training.rl.env import attempt_reward, fail_to_pass_of
from training.rl.microtasks import DELETED, MODULE, build_micro_tasks


class ScriptedEditFixture:
    """A chat model fixture: one edit_file call writing `line`, then a closing reply."""

    name = "scripted-edit-fixture"

    def __init__(self, line: str) -> None:
        self.line = line
        self.calls = 0

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelReply:
        self.calls += 1
        if self.calls > 1:
            return ModelReply(content="Done.", finish_reason="stop")
        arguments = {"path": MODULE, "old_string": DELETED, "new_string": self.line}
        call = ToolCall(id="c1", name="edit_file", arguments=json.dumps(arguments))
        return ModelReply(content="", tool_calls=[call], finish_reason="tool_calls")


@pytest.mark.slow
def test_the_reward_is_the_harness_verdict_plus_the_graders_score(tmp_path: Path) -> None:
    tasks = {t.operation: t for t in build_micro_tasks(tmp_path / "micro")}
    assert (tasks["sum"].task.workspace / MODULE).read_text().count(DELETED) == 1
    plan = SandboxPlan()
    backend = open_backend("auto", plan.settings())
    weights = {"code_quality": 0.1}
    rewards: dict[str, tuple[float, dict[str, float]]] = {}
    for line in ("return a + b", "return a - b"):
        env = AttemptEnvironment(
            ScriptedEditFixture(line), backend, tmp_path / "work", tmp_path / "run", plan
        )
        task = tasks["sum"].task
        result = run_attempt(task, Attempt(task_id=task.id, epoch=len(rewards)), env)
        rewards[line] = attempt_reward(result, fail_to_pass_of(task), weights)
    assert rewards["return a + b"] == (1.1, {"verdict": 1.0, "code_quality": 1.0})
    # a - b passes the one case where b is 0: a third of FAIL_TO_PASS, and no quality score
    reward, parts = rewards["return a - b"]
    assert parts == {"verdict": 1 / 3, "code_quality": 0.0} and reward == 1 / 3


@pytest.mark.slow
def test_a_change_graded_once_is_not_graded_again(tmp_path: Path) -> None:
    """With a grade memo (an RL environment's), the same edit gets the very verdict its
    first grading gave, and a different edit is graded afresh."""
    from harness.grading.memo import GradeMemo

    task = build_micro_tasks(tmp_path / "micro", operations=["sum"])[0].task
    plan = SandboxPlan()
    memo = GradeMemo()
    backend = open_backend("auto", plan.settings())
    results = []
    for epoch, line in enumerate(("return a + b", "return a - b", "return a + b")):
        env = AttemptEnvironment(
            ScriptedEditFixture(line), backend, tmp_path / "work", tmp_path / "run", plan, memo
        )
        results.append(run_attempt(task, Attempt(task_id=task.id, epoch=epoch), env))
    assert memo.hits == 1 and len(memo.reports) == 2
    assert [r.status.value for r in results] == ["resolved", "failed", "resolved"]
    assert results[2].tests == results[0].tests and results[1].tests != results[0].tests
