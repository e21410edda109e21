"""A candidate's measurement as plain data: the `Job` it is given, the `Measured` it gives
back, and the scheduler's `Entry` that makes the job when its turn comes.

A `Job` holds plain data only, so that it is measured as well in another process
(`propose --jobs N`, Ray) as in this one; its `kind` names an entry of
`job_kinds.JOB_KINDS`, the one place that decides what measuring it means.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from cursorbench.factory.filters import Proposal
from cursorbench.factory.prompts import PromptFacts


@dataclass(frozen=True)
class Job:
    key: str
    kind: str  # a name in `job_kinds.JOB_KINDS`
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


@dataclass
class Entry:
    row: Proposal
    names: set[tuple[str, str]]
    job: Callable[[], Job]  # made when it is measured


def write_spec(path: Path, data: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(data, sort_keys=False, width=100, allow_unicode=True)
    path.write_text(text, encoding="utf-8")
