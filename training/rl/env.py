"""The environment is the harness: a rollout is `harness.run.attempt.run_attempt` on a task,
through the same sandbox, tools and graders as an evaluation; the reward is the verdict.

`PolicyChatModel` is the harness's `ChatModel` for a policy being trained: it renders the
conversation with the chat template the model is trained and served with
(`training.chat`), samples through a `Sampler` (version-stamped tokens, recorded routes),
parses the reply into tool calls, and keeps every call as a `Segment`.

- Self-summarization: when a prompt no longer fits the context, the policy is first asked
  to summarize the conversation so far (that call is a segment too), then goes on from the
  task's prompt and its summary; the final reward applies to every segment.
- Text feedback: a reply that calls a tool the task does not offer flags its segment with
  a hint (the offered tools) inserted into that turn's context (`Segment.hint`).

Reward (`attempt_reward`): 1 when resolved, else the share of FAIL_TO_PASS tests that
passed; plus weighted auxiliary scores the harness computed with the evals' graders
(`code_quality` and any other behaviour check a task carries). Nothing is graded here;
a change already graded in this process (or, with `memo_dir`, in this run) is not graded
again (`harness.grading.memo`).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from harness.grading.memo import GradeMemo
from harness.model.chat import ContextOverflow, ModelReply, ToolCall
from harness.results import Attempt, AttemptResult, Status, TestOutcome
from harness.run.attempt import AttemptEnvironment, run_attempt
from harness.run.plan import SandboxPlan
from harness.sandbox.registry import open_backend
from harness.spec import PreparedTask
from training.chat import parse_reply, render_prompt
from training.rl.learner import Rollout
from training.rl.policy import Sampler, Segment
from training.tokenizer import END, EOS, USER, CodeTokenizer

SUMMARIZE = "Summarize the work so far in one line."
CONTINUE = "Summary of the work so far: "


def attempt_reward(
    result: AttemptResult, fail_to_pass: list[str], aux_weights: dict[str, float]
) -> tuple[float, dict[str, float]]:
    """The harness verdict as a reward, and its parts."""
    if result.status is Status.RESOLVED:
        base = 1.0
    elif fail_to_pass:
        passed = sum(result.tests.get(node) is TestOutcome.PASSED for node in fail_to_pass)
        base = passed / len(fail_to_pass)
    else:
        base = 0.0
    parts = {"verdict": base}
    total = base
    for key, weight in aux_weights.items():
        if key in result.scores:
            parts[key] = result.scores[key].value
            total += weight * result.scores[key].value
    return total, parts


def fail_to_pass_of(task: PreparedTask) -> list[str]:
    verification: Any = task.verification
    pytest = getattr(verification, "pytest", verification)
    return list(getattr(pytest, "fail_to_pass", []))


def _json(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments)


class PolicyChatModel:
    """A `ChatModel` over a `Sampler`; its calls' segments are in `segments`."""

    def __init__(
        self,
        sampler: Sampler,
        tokenizer: CodeTokenizer,
        context_length: int,
        max_tokens: int,
        offered: list[str] | None = None,
        seed: int | None = None,
        name: str = "policy",
    ) -> None:
        self.name = name
        self.sampler = sampler
        self.tokenizer = tokenizer
        self.context_length = context_length
        self.max_tokens = max_tokens
        self.offered = offered
        self.seeds = itertools.count(seed) if seed is not None else None
        self.stop_ids = {tokenizer.id(END), tokenizer.id(EOS)}
        self.segments: list[Segment] = []
        self.summary: str | None = None
        self.summarized_upto = 0  # messages before this index are in the summary

    def _sample(self, context: list[int], kind: str) -> Segment:
        seed = next(self.seeds) if self.seeds is not None else None
        segment = self.sampler.sample(context, self.max_tokens, self.stop_ids, seed)
        segment.kind = kind
        self.segments.append(segment)
        return segment

    def _view(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self.summary is None:
            return messages
        head = messages[:2]  # system prompt and the task
        note = {"role": "user", "content": CONTINUE + self.summary}
        return [*head, note, *messages[self.summarized_upto :]]  # what came after it

    def _fits(self, ids: list[int]) -> bool:
        return len(ids) + self.max_tokens <= self.context_length

    def _summarize(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> None:
        """Ask the policy for a summary of everything after the task."""
        history = " ".join(str(m.get("content") or "") for m in messages[2:])
        request = [*messages[:2], {"role": "user", "content": f"{SUMMARIZE} {history}"}]
        ids = self.tokenizer.encode(render_prompt(request, tools))
        while not self._fits(ids) and history:  # the oldest history goes first
            history = history[len(history) // 4 + 1 :]
            request[-1]["content"] = f"{SUMMARIZE} {history}"
            ids = self.tokenizer.encode(render_prompt(request, tools))
        segment = self._sample(ids, "summary")
        text = self.tokenizer.decode(segment.tokens, skip_special=True)
        self.summary = text.strip() or "(none)"
        self.summarized_upto = len(messages)

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelReply:
        ids = self.tokenizer.encode(render_prompt(self._view(messages), tools))
        if not self._fits(ids) and len(messages) > 3:
            self._summarize(messages, tools)
            ids = self.tokenizer.encode(render_prompt(self._view(messages), tools))
        if not self._fits(ids):
            raise ContextOverflow(f"{len(ids)} prompt tokens do not fit {self.context_length}")
        segment = self._sample(ids, "turn")
        text = self.tokenizer.decode(segment.tokens)
        reply = parse_reply(text)
        calls = [
            ToolCall(id=f"call_{len(self.segments)}_{i}", name=c.name, arguments=_json(c.arguments))
            for i, c in enumerate(reply.tool_calls)
        ]
        unknown = [c.name for c in calls if self.offered is not None and c.name not in self.offered]
        if unknown and self.offered:
            hint = f"{USER}Hint: the only tools are {', '.join(self.offered)}.{END}"
            segment.hint = self.tokenizer.encode(hint)
            segment.hint_at = len(ids) - 1  # before the open assistant turn
        finish = (
            "tool_calls" if calls else ("stop" if segment.tokens[-1] in self.stop_ids else "length")
        )
        return ModelReply(content=reply.content, tool_calls=calls, finish_reason=finish)


class Environment(Protocol):
    """Where rollouts happen: one attempt of `task` by the sampler's policy."""

    def rollout(self, task: Any, sampler: Sampler, group: int, seed: int) -> Rollout: ...


@dataclass
class HarnessEnv:
    """Attempts through the harness (picklable: a worker process opens its own backend)."""

    tokenizer_path: Path
    work_dir: Path
    context_length: int
    max_tokens: int
    sandbox: str = "subprocess"
    aux_weights: dict[str, float] = field(default_factory=lambda: {"code_quality": 0.1})
    # Grade each distinct change once per process (`harness.grading.memo`): a toy policy
    # repeats a handful of edits, and grading is most of an attempt's cost.
    memo_grades: bool = True
    # With a folder, the memo is kept there and shared by every process of the run (workers,
    # the held-out scorer, a resumed invocation): each change graded once between them.
    memo_dir: Path | None = None
    _env: AttemptEnvironment | None = None
    _tokenizer: CodeTokenizer | None = None
    _count: int = 0

    def __getstate__(self) -> dict[str, Any]:
        """What a worker process gets: the settings, not this process's backend or model."""
        return {**self.__dict__, "_env": None, "_tokenizer": None}

    def _open(self, model: PolicyChatModel | None = None) -> AttemptEnvironment:
        if self._env is None:
            plan = SandboxPlan()
            self._env = AttemptEnvironment(
                model=model,  # type: ignore[arg-type]  # set per attempt below
                backend=open_backend(self.sandbox, plan.settings()),
                work_dir=self.work_dir / "work",
                run_dir=self.work_dir / "runs",
                sandbox=plan,
                grade_memo=GradeMemo(self.memo_dir) if self.memo_grades else None,
            )
        return self._env

    def tokenizer(self) -> CodeTokenizer:
        if self._tokenizer is None:
            self._tokenizer = CodeTokenizer.load(self.tokenizer_path)
        return self._tokenizer

    def rollout(self, task: PreparedTask, sampler: Sampler, group: int, seed: int) -> Rollout:
        policy = PolicyChatModel(
            sampler, self.tokenizer(), self.context_length, self.max_tokens, task.tools, seed
        )
        env = self._open()
        env.model = policy
        self._count += 1
        attempt = Attempt(task_id=task.id, epoch=seed % 10**6 * 100 + self._count % 100)
        result = run_attempt(task, attempt, env)
        reward, parts = attempt_reward(result, fail_to_pass_of(task), self.aux_weights)
        if not policy.segments:  # nothing sampled (an infrastructure failure): nothing to learn
            raise RuntimeError(f"{task.id}: the attempt made no model call ({result.error})")
        return Rollout(task.id, group, policy.segments, reward, parts)
