"""Measuring one candidate: its draft task file written, built (with the leak scan), its
lists derived by `checks.derive_tests` without perturbations (`tasks validate` runs
those), the measured filters applied and, when it passes, its prompt written and the
task file completed; a failed draft's file is removed.

A `Job` holds plain data only, so that `measure_job` runs as well in another process
(`propose --jobs N`) as in this one. The prompt is written after the measurement: a
debugging task's bug report is made from the tests that measurably fail.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from cursorbench.factory.bug_prompts import BugFacts, symptoms, write_bug_report
from cursorbench.factory.filters import measured_failure
from cursorbench.factory.prompts import (
    EndpointWriter,
    PromptFacts,
    followup_turns,
    write_prompt,
)
from cursorbench.factory.review_tasks import review_prompt, review_spec
from cursorbench.tasks import answer
from cursorbench.tasks.loader import TaskFileError, load_task, load_task_for_derive
from cursorbench.tasks.suites import _Literal
from cursorbench.tasks.workspace import BuildError, BuiltTask, build, scan_hidden_paths
from cursorbench.validation.checks import asked, derive_tests
from harness.home import cache_home, self_test_folder
from harness.kinds.docs import DocsVerification
from harness.kinds.registry import kind_of
from harness.sandbox import SandboxSettings, open_backend
from harness.sandbox.protocol import SandboxBackend
from harness.sandbox.registry import with_python_env

DRAFT_PROMPT = "(written once the task is measured)"


@dataclass(frozen=True)
class Job:
    key: str
    kind: str  # deletion, bugs, iterate, review
    path: Path  # the task file
    data: dict[str, object]  # the task's fields, prompt still the draft's
    backend: str
    visible: int  # passing tests outside its hidden files (the spill limit's base)
    tree: Path  # the pristine tree (a bug report reads the failing tests there)
    facts: PromptFacts | None = None  # a deletion's prompt facts
    endpoint: tuple[str, str] | None = None  # (base URL, model) of the prompt writer
    earlier: PromptFacts | None = None  # a follow-up's earlier part (`followups`)
    prompt: str = ""  # a testing task's, written offline before it is measured
    review: list[dict[str, object]] | None = None  # a review task's answer facts
    module: str = ""  # the dotted name of the module it changes
    authored: dict[str, str] = field(default_factory=dict)  # a refactor's test files


@dataclass
class Measured:
    key: str
    path: Path | None = None  # the task file, when it passed
    fail_to_pass: list[str] = field(default_factory=list)
    pass_to_pass: int | None = None
    spilled: int | None = None
    changed_lines: int | None = None
    failure: tuple[str, str] | None = None
    prompt_writer: str = ""
    seconds: float = 0.0
    measured: bool = True  # False: failed before the derivation


def write_spec(path: Path, data: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(data, sort_keys=False, width=100, allow_unicode=True)
    path.write_text(text, encoding="utf-8")


def sandboxes_for(built: BuiltTask, backend: str) -> SandboxBackend:
    """`checks.backend_for` (the task's own environment shown where it has one),
    self-tested in this process's own folder."""
    settings = SandboxSettings(hidden=tuple(scan_hidden_paths(built.task)))
    sandboxes = open_backend(backend, settings)
    sandboxes.self_test(self_test_folder())
    return with_python_env(sandboxes, built.python_env)


def measure_job(job: Job) -> Measured:
    started = time.monotonic()
    done = _measure(job)
    done.seconds = round(time.monotonic() - started, 2)
    return done


def draft_path(path: Path) -> Path:
    """Where a task is measured before it is one: `DIR/drafts/`, beside `DIR/tasks/`, so
    that a run killed mid-measurement leaves no half-made task among the proposed ones."""
    return path.parent.parent / "drafts" / path.name


def _measure(job: Job) -> Measured:
    if job.kind == "usages":  # an answer task with its prompt: no tests to derive
        spec = dict(job.data)
        return _answer_task(job, spec, Measured(job.key))
    data = dict(job.data, prompt=DRAFT_PROMPT)
    draft = draft_path(job.path)
    write_spec(draft, data)
    write_authored(draft, job.authored)
    try:
        if job.kind == "testing":  # graded by mutants, no lists to derive (imports this module)
            from cursorbench.factory.testing_tasks import measure_testing

            return measure_testing(job, data, draft)
        return _measure_draft(job, data, draft)
    finally:
        draft.unlink(missing_ok=True)
        shutil.rmtree(draft.with_suffix(""), ignore_errors=True)


def write_authored(path: Path, files: dict[str, str]) -> None:
    """The task's authored test files, in the folder named like its file (`Task.authored_dir`)."""
    folder = path.with_suffix("")
    if files:
        shutil.rmtree(folder, ignore_errors=True)
    for relative, text in files.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text, encoding="utf-8")


def _measure_draft(job: Job, data: dict[str, object], draft: Path) -> Measured:
    try:
        built = build(load_task_for_derive(draft))
    except BuildError as error:
        return Measured(job.key, failure=("build", str(error)), measured=False)
    root = cache_home() / "validate"
    root.mkdir(parents=True, exist_ok=True)
    sandboxes = sandboxes_for(built, job.backend)
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
    if job.review is not None:
        return _write_review(job, data, done, derived.fail_to_pass)
    fail_to_pass = derived.fail_to_pass
    if job.kind == "docs":  # the names whose doctests are stable and called, their prompt
        from cursorbench.factory.docs_tasks import keep_called, keep_measured, measured_prompt

        keep_measured(data, derived.fail_to_pass)
        with tempfile.TemporaryDirectory(dir=root) as scratch:
            done.failure = keep_called(data, built, sandboxes, Path(scratch))
        if done.failure is not None:
            return done
        docs = DocsVerification.model_validate(data["verification"])
        fail_to_pass = [test for test in fail_to_pass if asked(docs, test)]  # the kept names'
        prompt, done.prompt_writer = measured_prompt(data, job.key, job.module), "offline"
    elif job.prompt:  # a refactor's, written offline before it was measured
        prompt, done.prompt_writer = job.prompt, "offline"
    elif job.earlier is not None and job.facts is not None:  # a follow-up: written offline
        data["earlier_turns"], prompt = followup_turns(job.earlier, job.facts)
        done.prompt_writer = "offline"
    else:
        prompt, done.prompt_writer = _prompt(job, derived.fail_to_pass)
    check = data["verification"]
    assert isinstance(check, dict)
    check["fail_to_pass"], check["pass_to_pass"] = fail_to_pass, derived.pass_to_pass
    data["prompt"] = _Literal(prompt) if "\n" in prompt else prompt
    write_spec(job.path, data)
    write_authored(job.path, job.authored)
    done.path = job.path
    return done


def _write_review(
    job: Job, data: dict[str, object], done: Measured, failing: list[str]
) -> Measured:
    """The measured bugs as a code-review task (`review_tasks`): its answer facts must
    point at the prepared workspace's lines, which its build checks."""
    assert job.review is not None
    spec = review_spec(data, job.review)
    source, check = spec["source"], job.data["verification"]
    assert isinstance(source, dict) and isinstance(check, dict)
    defects = len(job.review) - 1  # the last fact names the functions
    prompt = review_prompt(
        str(spec["id"]), str(source["name"]), job.module, defects, symptoms(job.tree, failing)
    )
    spec["prompt"] = prompt
    return _answer_task(job, spec, done)


def _answer_task(job: Job, spec: dict[str, object], done: Measured) -> Measured:
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


def rewrite_prompt(job: Job) -> bool:
    """A proposed task's prompt written again by today's writer from the same facts and
    its measured FAIL_TO_PASS (`propose --rewrite-prompts`), a refactor's from its
    candidate; True when it changed. Review and testing tasks keep theirs (their files do
    not hold what their prompts came from)."""
    if job.kind not in ("deletion", "bugs", "iterate", "refactor") or not job.path.is_file():
        return False
    data = yaml.safe_load(job.path.read_text(encoding="utf-8"))
    before = (data.get("prompt"), data.get("earlier_turns"))
    if job.kind == "refactor":  # written offline from the candidate
        prompt = job.prompt
    elif job.earlier is not None and job.facts is not None:
        data["earlier_turns"], prompt = followup_turns(job.earlier, job.facts)
    else:
        prompt, _ = _prompt(job, list(data["verification"]["fail_to_pass"]))
    if (prompt, data.get("earlier_turns")) == before:
        return False
    data["prompt"] = _Literal(prompt) if "\n" in prompt else prompt
    write_spec(job.path, data)
    return True


def _prompt(job: Job, failing: list[str]) -> tuple[str, str]:
    writer = EndpointWriter(*job.endpoint) if job.endpoint else None
    if job.facts is not None:
        return write_prompt(job.facts, writer)
    source = job.data["source"]
    assert isinstance(source, dict)
    ident = str(job.data["id"])
    facts = BugFacts(ident, str(source["name"]), symptoms(job.tree, failing), failing)
    return write_bug_report(facts, writer)
