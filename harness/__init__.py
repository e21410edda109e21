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
    from harness.agent import AgentOutcome, run_agent
    from harness.attempt import AttemptEnvironment, run_attempt
    from harness.executor import Executor, LocalExecutor
    from harness.grading import GradeReport, grade
    from harness.model import (
        ChatModel,
        ContextOverflow,
        ModelAPIError,
        OpenAIChatModel,
        RetryPolicy,
    )
    from harness.openai_server import OpenAIServer, Reply, Responder
    from harness.plan import RunConfig, RunPlan
    from harness.results import Attempt, AttemptResult, Failure, RunInfo, Status, Usage
    from harness.runner import Runner
    from harness.spec import Limits, PreparedTask, Verification
    from harness.store import ResultStore

_EXPORTS = {
    "AgentOutcome": "harness.agent",
    "run_agent": "harness.agent",
    "AttemptEnvironment": "harness.attempt",
    "run_attempt": "harness.attempt",
    "Executor": "harness.executor",
    "LocalExecutor": "harness.executor",
    "GradeReport": "harness.grading",
    "grade": "harness.grading",
    "ChatModel": "harness.model",
    "ContextOverflow": "harness.model",
    "ModelAPIError": "harness.model",
    "OpenAIChatModel": "harness.model",
    "RetryPolicy": "harness.model",
    "OpenAIServer": "harness.openai_server",
    "Reply": "harness.openai_server",
    "Responder": "harness.openai_server",
    "Attempt": "harness.results",
    "AttemptResult": "harness.results",
    "Failure": "harness.results",
    "RunInfo": "harness.results",
    "Status": "harness.results",
    "Usage": "harness.results",
    "ResultStore": "harness.store",
    "RunConfig": "harness.plan",
    "RunPlan": "harness.plan",
    "Runner": "harness.runner",
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
