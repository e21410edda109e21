"""The factory's job kinds by name, and the one place that dispatches on a job's kind.

A kind says how a proposed task of its kind is measured (from the steps of `measure.py`)
and whether its prompt can be written again (`propose --rewrite-prompts`). A new kind is
one class and one line in `JOB_KINDS`; `measure_job` and `rewrite_prompt` are what the
scheduler calls.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

import yaml

from cursorbench.factory.docs_tasks import DocsKind
from cursorbench.factory.job import Job, Measured, write_spec
from cursorbench.factory.measure import (
    Derivation,
    answer_task,
    derive,
    write_derived,
    write_review,
    written_prompt,
)
from cursorbench.factory.prompts import followup_turns
from cursorbench.factory.refactor_tasks import RefactorKind
from cursorbench.factory.testing_tasks import TestingKind
from cursorbench.tasks.suites import _Literal


class JobKind(Protocol):
    @property
    def family(self) -> str | None:
        """The kind whose candidates it is made from, when another's: a symbol one kind's
        task uses, the other's may not (a follow-up that removes what a deletion removes is
        the same task with a story before it)."""
        ...

    def measure(self, job: Job) -> Measured:
        """Measures `job`; its task file is written when it passes."""
        ...

    def prompt_again(self, job: Job, data: dict[str, Any]) -> str | None:
        """The proposed task's prompt written again by today's writer from the same facts
        (`data`: its task file's fields, which it may complete); None where the file does
        not hold what its prompt came from (the prompt stays)."""
        ...


class DeletionKind:
    """Code deleted; the prompt is written from the deletion's facts (`prompts.py`)."""

    family = None

    def measure(self, job: Job) -> Measured:
        return derive(job, self._finish)

    def _finish(self, step: Derivation) -> Measured:
        return write_derived(step, *written_prompt(step.job, step.fail_to_pass))

    def prompt_again(self, job: Job, data: dict[str, Any]) -> str | None:
        return written_prompt(job, list(data["verification"]["fail_to_pass"]))[0]


class BugsKind(DeletionKind):
    """Bugs planted; the prompt is a bug report of the tests that fail (`bug_prompts.py`:
    `written_prompt` tells the two apart by the deletion's facts)."""


class IterateKind:
    """A follow-up: a deletion with an earlier part as earlier turns, written offline."""

    family = "deletion"

    def measure(self, job: Job) -> Measured:
        return derive(job, self._finish)

    def _finish(self, step: Derivation) -> Measured:
        return write_derived(step, self.prompt_again(step.job, step.data), "offline")

    def prompt_again(self, job: Job, data: dict[str, Any]) -> str:
        assert job.earlier is not None and job.facts is not None
        data["earlier_turns"], prompt = followup_turns(job.earlier, job.facts)
        return prompt


class ReviewKind:
    """Bugs measured as a deletion's are, then written as a code-review (answer) task."""

    family = "bugs"

    def measure(self, job: Job) -> Measured:
        return derive(job, write_review)

    def prompt_again(self, job: Job, data: dict[str, Any]) -> str | None:
        return None


class UsagesKind:
    """An understanding (answer) task with its prompt: no tests to derive."""

    family = None

    def measure(self, job: Job) -> Measured:
        return answer_task(job, dict(job.data), Measured(job.key))

    def prompt_again(self, job: Job, data: dict[str, Any]) -> str | None:
        return None


JOB_KINDS: dict[str, JobKind] = {
    "deletion": DeletionKind(),
    "bugs": BugsKind(),
    "iterate": IterateKind(),
    "review": ReviewKind(),
    "usages": UsagesKind(),
    "docs": DocsKind(),
    "testing": TestingKind(),
    "refactor": RefactorKind(),
}


class UnknownJobKind(ValueError):
    pass


def job_kind(name: str) -> JobKind:
    kind = JOB_KINDS.get(name)
    if kind is None:
        raise UnknownJobKind(f"no job kind named {name!r} (known: {', '.join(JOB_KINDS)})")
    return kind


def family_of(name: str) -> str:
    """The family whose symbols a kind's tasks share (its own name, for most; and for a
    kind no longer known, of an earlier run's rows)."""
    kind = JOB_KINDS.get(name)
    return (kind.family if kind is not None else None) or name


def measure_job(job: Job) -> Measured:
    started = time.monotonic()
    done = job_kind(job.kind).measure(job)
    done.seconds = round(time.monotonic() - started, 2)
    return done


def rewrite_prompt(job: Job) -> bool:
    """A proposed task's prompt written again by today's writer from the same facts and
    its measured FAIL_TO_PASS (`propose --rewrite-prompts`); True when it changed."""
    if not job.path.is_file():
        return False
    data = yaml.safe_load(job.path.read_text(encoding="utf-8"))
    before = (data.get("prompt"), data.get("earlier_turns"))
    prompt = job_kind(job.kind).prompt_again(job, data)
    if prompt is None or (prompt, data.get("earlier_turns")) == before:
        return False
    data["prompt"] = _Literal(prompt) if "\n" in prompt else prompt
    write_spec(job.path, data)
    return True
