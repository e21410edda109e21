"""The harness: sandboxes, the model client, tools, the agent loop, grading and the runner.

It knows nothing of how tasks are authored (`cursorbench`) or where results are
browsed (`leaderboard`): it takes `PreparedTask`s and gives `AttemptResult`s.
"""

from harness.agent import AgentOutcome, run_agent
from harness.attempt import AttemptEnvironment, run_attempt
from harness.executor import Executor, LocalExecutor
from harness.grading import GradeReport, grade
from harness.model import ChatModel, ContextOverflow, ModelAPIError, OpenAIChatModel, RetryPolicy
from harness.openai_server import OpenAIServer, Reply, Responder
from harness.plan import RunConfig, RunPlan
from harness.results import Attempt, AttemptResult, Failure, RunInfo, Status, Usage
from harness.runner import Runner
from harness.spec import Limits, PreparedTask, Verification
from harness.store import ResultStore

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
