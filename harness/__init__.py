"""The harness: sandboxes, the model client, tools, the agent loop, grading and the runner.

It knows nothing of how tasks are authored (`cursorbench`) or where results are
browsed (`leaderboard`): it takes `PreparedTask`s and gives `AttemptResult`s.

The names below are imported when first used (`harness.lazy`), so `import harness.spec`
does not load the agent loop, the model client or `openai`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import exports

if TYPE_CHECKING:
    from harness.agent.loop import AgentOutcome, run_agent
    from harness.grading.grade import GradeReport, grade
    from harness.model.chat import (
        ChatModel,
        ContextOverflow,
        ModelAPIError,
        OpenAIChatModel,
        RetryPolicy,
    )
    from harness.model.openai_server import OpenAIServer, Reply, Responder
    from harness.results import Attempt, AttemptResult, Failure, RunInfo, Status, Usage
    from harness.run.attempt import AttemptEnvironment, run_attempt
    from harness.run.executor import Executor, LocalExecutor
    from harness.run.plan import RunConfig, RunPlan
    from harness.run.runner import Runner
    from harness.run.store import ResultStore
    from harness.spec import Limits, PreparedTask, Verification

_EXPORTS = {
    "AgentOutcome": "harness.agent.loop",
    "run_agent": "harness.agent.loop",
    "AttemptEnvironment": "harness.run.attempt",
    "run_attempt": "harness.run.attempt",
    "Executor": "harness.run.executor",
    "LocalExecutor": "harness.run.executor",
    "GradeReport": "harness.grading.grade",
    "grade": "harness.grading.grade",
    "ChatModel": "harness.model.chat",
    "ContextOverflow": "harness.model.chat",
    "ModelAPIError": "harness.model.chat",
    "OpenAIChatModel": "harness.model.chat",
    "RetryPolicy": "harness.model.chat",
    "OpenAIServer": "harness.model.openai_server",
    "Reply": "harness.model.openai_server",
    "Responder": "harness.model.openai_server",
    "Attempt": "harness.results",
    "AttemptResult": "harness.results",
    "Failure": "harness.results",
    "RunInfo": "harness.results",
    "Status": "harness.results",
    "Usage": "harness.results",
    "ResultStore": "harness.run.store",
    "RunConfig": "harness.run.plan",
    "RunPlan": "harness.run.plan",
    "Runner": "harness.run.runner",
    "Limits": "harness.spec",
    "PreparedTask": "harness.spec",
    "Verification": "harness.spec",
}
__getattr__, __dir__ = exports(__name__, _EXPORTS)

__all__ = [
    "AgentOutcome",
    "Attempt",
    "AttemptEnvironment",
    "AttemptResult",
    "ChatModel",
    "ContextOverflow",
    "Executor",
    "Failure",
    "GradeReport",
    "Limits",
    "LocalExecutor",
    "ModelAPIError",
    "OpenAIChatModel",
    "OpenAIServer",
    "PreparedTask",
    "Reply",
    "Responder",
    "ResultStore",
    "RetryPolicy",
    "RunConfig",
    "RunInfo",
    "RunPlan",
    "Runner",
    "Status",
    "Usage",
    "Verification",
    "grade",
    "run_agent",
    "run_attempt",
]
