"""Measuring one candidate: the steps its kind (`job_kinds.py`) is made of.

A draft task file is written (`in_draft`), built (with the leak scan), its lists derived
by `checks.derive_tests` without perturbations (`tasks validate` runs those) and the
measured filters applied (`derive`); when it passes, its kind finishes it, and
`write_derived` completes its task file with its lists and prompt. A failed draft's file
is removed. Answer tasks (review, understanding) are written once their build shows that
their facts point at the prepared workspace (`answer_task`).

The prompt is written after the measurement: a debugging task's bug report is made from
the tests that measurably fail.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cursorbench.factory.bug_prompts import BugFacts, symptoms, write_bug_report
from cursorbench.factory.filters import measured_failure
from cursorbench.factory.job import Job, Measured, write_spec
from cursorbench.factory.prompts import EndpointWriter, write_prompt
from cursorbench.factory.review_tasks import review_prompt, review_spec
from cursorbench.tasks import answer
from cursorbench.tasks.loader import TaskFileError, load_task, load_task_for_derive
from cursorbench.tasks.suites import _Literal
from cursorbench.tasks.workspace import BuildError, BuiltTask, build
from cursorbench.validation.checks import backend_for, derive_tests
from harness.home import cache_home
from harness.kinds.registry import kind_of
from harness.sandbox.protocol import SandboxBackend

DRAFT_PROMPT = "(written once the task is measured)"

DraftStep = Callable[[Job, dict[str, object], Path], Measured]  # (job, draft's data, its file)


def draft_path(path: Path) -> Path:
    """Where a task is measured before it is one: `DIR/drafts/`, beside `DIR/tasks/`, so
    that a run killed mid-measurement leaves no half-made task among the proposed ones."""
    return path.parent.parent / "drafts" / path.name


def write_authored(path: Path, files: dict[str, str]) -> None:
    """The task's authored test files, in the folder named like its file (`Task.authored_dir`)."""
    folder = path.with_suffix("")
    if files:
        shutil.rmtree(folder, ignore_errors=True)
    for relative, text in files.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text, encoding="utf-8")


def in_draft(job: Job, step: DraftStep) -> Measured:
    """`step` on the job's draft task file (its prompt still the draft's, its authored
    files beside it), which is removed afterwards."""
    data = dict(job.data, prompt=DRAFT_PROMPT)
    draft = draft_path(job.path)
    write_spec(draft, data)
    write_authored(draft, job.authored)
    try:
        return step(job, data, draft)
    finally:
        draft.unlink(missing_ok=True)
        shutil.rmtree(draft.with_suffix(""), ignore_errors=True)


@dataclass(frozen=True)
class Derivation:
    """A draft whose lists were derived and passed the measured filters: what its kind
    finishes it from."""

    job: Job
    data: dict[str, object]  # the draft's fields, completed by its kind
    built: BuiltTask
    sandboxes: SandboxBackend
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    done: Measured
    scratch: Path  # where its kind's own runs keep their files


Finish = Callable[[Derivation], Measured]


def derive(job: Job, finish: Finish) -> Measured:
    """The job's lists derived from its draft; `finish` completes one that passes the
    measured filters."""
    return in_draft(job, lambda job, data, draft: _derived(job, data, draft, finish))


def _derived(job: Job, data: dict[str, object], draft: Path, finish: Finish) -> Measured:
    try:
        built = build(load_task_for_derive(draft))
    except BuildError as error:
        return Measured(job.key, failure=("build", str(error)), measured=False)
    root = cache_home() / "validate"
    root.mkdir(parents=True, exist_ok=True)
    sandboxes = backend_for(built, job.backend)
    with tempfile.TemporaryDirectory(dir=root) as scratch:
        derived = derive_tests(built, sandboxes, Path(scratch), False)
    done = Measured(
        job.key, fail_to_pass=derived.fail_to_pass, pass_to_pass=len(derived.pass_to_pass),
        spilled=len(derived.spilled), changed_lines=answer.reference_changed_lines(built),
    )  # fmt: skip
    done.failure = measured_failure(
        len(derived.fail_to_pass), derived.problems, len(derived.spilled), job.visible
    )
    if done.failure is not None:
        return done
    step = Derivation(
        job, data, built, sandboxes, derived.fail_to_pass, derived.pass_to_pass, done, root
    )
    return finish(step)


def write_derived(
    step: Derivation, prompt: str, writer: str, fail_to_pass: list[str] | None = None
) -> Measured:
    """The task file completed with its lists (`fail_to_pass`, else every one derived)
    and `prompt`, written by `writer`."""
    job, data, done = step.job, step.data, step.done
    check = data["verification"]
    assert isinstance(check, dict)
    check["fail_to_pass"] = step.fail_to_pass if fail_to_pass is None else fail_to_pass
    check["pass_to_pass"] = step.pass_to_pass
    data["prompt"] = _Literal(prompt) if "\n" in prompt else prompt
    done.prompt_writer = writer
    write_spec(job.path, data)
    write_authored(job.path, job.authored)
    done.path = job.path
    return done


def written_prompt(job: Job, failing: list[str]) -> tuple[str, str]:
    """A deletion's prompt from its facts, else a bug report of the tests that fail; and
    who wrote it (the job's endpoint, or offline)."""
    writer = EndpointWriter(*job.endpoint) if job.endpoint else None
    if job.facts is not None:
        return write_prompt(job.facts, writer)
    source = job.data["source"]
    assert isinstance(source, dict)
    ident = str(job.data["id"])
    facts = BugFacts(ident, str(source["name"]), symptoms(job.tree, failing), failing)
    return write_bug_report(facts, writer)


def write_review(step: Derivation) -> Measured:
    """The measured bugs as a code-review task (`review_tasks`): its answer facts must
    point at the prepared workspace's lines, which its build checks."""
    job = step.job
    assert job.review is not None
    spec = review_spec(step.data, job.review)
    source = spec["source"]
    assert isinstance(source, dict)
    defects = len(job.review) - 1  # the last fact names the functions
    failing = symptoms(job.tree, step.fail_to_pass)
    spec["prompt"] = review_prompt(
        str(spec["id"]), str(source["name"]), job.module, defects, failing
    )
    return answer_task(job, spec, step.done)


def answer_task(job: Job, spec: dict[str, object], done: Measured) -> Measured:
    """Writes an answer task (review, understanding) once its build shows that its facts
    point at the prepared workspace's lines."""
    draft = draft_path(job.path).with_suffix(".answer.yaml")
    write_spec(draft, spec)
    try:
        built = build(load_task(draft))
    except (BuildError, TaskFileError) as error:
        done.failure = ("build", f"the review task: {error}")
        return done
    finally:
        draft.unlink(missing_ok=True)
    verification = built.task.verification
    problems = kind_of(verification).workspace_problems(verification, built.workspace)
    if problems:
        done.failure = ("derive", f"the review task: {problems[0]}")
        return done
    done.changed_lines = answer.reference_changed_lines(built)
    done.prompt_writer = "offline"
    write_spec(job.path, spec)
    done.path = job.path
    return done
