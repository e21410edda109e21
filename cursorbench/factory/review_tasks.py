"""Code-review tasks from procedural bugs: the reviewer is told a recent edit broke a
module and reports where, graded by the `answer` kind (`harness/kinds/answer.py`).

A review candidate is a bug candidate (`bugs.py`: two or three small mutations of one
function, or of a function and one it calls). It is measured as a debugging task is
(`checks.derive_tests`: the hidden tests must measurably fail, so every mutation
together is a real defect, not an equivalent rewrite); then the task written is an
answer task:
- the mutation is the bugs plus the removal of the hidden test files, so the tests
  that would point at the defects are not there to run (the workspace still has the
  rest of the suite);
- one `location` fact per mutation, `defect_1`, ... in file order, its anchor the
  changed line as the workspace shows it (or the mutation's whole block where that
  line is not unique), and a `names` fact, `functions`, of the functions changed;
- the prompt names the module and the count of defects, gives the symptoms the failing
  tests assert (`bug_prompts.symptoms`), and spells out the answer file's format.

Review and debugging candidates are the same enumeration, so the scheduler keeps them
apart (`job_kinds.family_of`): a function used by one kind's task is not used by the
other's, whose answer would give this one's away.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, fields
from pathlib import Path

from cursorbench.factory.bugs import BugCandidate, enumerate_bugs
from cursorbench.factory.coverage_map import CoverageMap
from cursorbench.tasks.task import ReplaceText

ANSWER_FILE = "review.json"


@dataclass
class ReviewCandidate(BugCandidate):
    @property
    def key(self) -> str:
        kinds = ",".join(site.kind for site in self.sites)
        return f"{self.file}::review:{'+'.join(self.functions)}[{kinds}]"


def enumerate_reviews(tree: Path, testmap: CoverageMap) -> list[ReviewCandidate]:
    """Every bug candidate, as a review candidate (most exercised first)."""
    found: list[ReviewCandidate] = []
    for bug in enumerate_bugs(tree, testmap):
        found.append(ReviewCandidate(**{f.name: getattr(bug, f.name) for f in fields(bug)}))
    return found


def _changed_line(op: ReplaceText) -> str:
    """The first line of `op.new` that differs from `op.old` at the same place."""
    old, new = op.old.splitlines(), op.new.splitlines()
    for at, line in enumerate(new):
        if at >= len(old) or line != old[at]:
            return line.strip()
    return op.new.strip()


def anchors(text: str, operations: list[ReplaceText]) -> tuple[str, list[str]] | None:
    """The file the operations leave, and per operation (in order) a text that occurs
    once in it; None when one has none (the task could not say where a defect is)."""
    for op in operations:
        if text.count(op.old) != 1:
            return None
        text = text.replace(op.old, op.new, 1)
    found: list[str] = []
    for op in operations:
        for anchor in (_changed_line(op), op.new.strip()):
            if anchor and text.count(anchor) == 1:
                found.append(anchor)
                break
        else:
            return None
    return text, found


def review_facts(tree: Path, candidate: BugCandidate) -> list[dict[str, object]] | None:
    """The answer's facts, defects in file order; None when one has no unique anchor."""
    made = anchors((tree / candidate.file).read_text(encoding="utf-8"), candidate.operations)
    if made is None:
        return None
    mutated, found = made
    facts: list[dict[str, object]] = [
        {"kind": "location", "key": f"defect_{number}", "file": candidate.file,
         "anchor": anchor}
        for number, anchor in enumerate(sorted(found, key=mutated.index), start=1)
    ]  # fmt: skip
    facts.append({"kind": "names", "key": "functions", "names": sorted(candidate.functions)})
    return facts


def review_spec(data: dict[str, object], facts: list[dict[str, object]]) -> dict[str, object]:
    """The measured debugging task's fields turned into the review task's."""
    check = data["verification"]
    mutation = data["mutation"]
    assert isinstance(check, dict) and isinstance(mutation, dict)
    removed = [{"op": "remove_file", "file": path} for path in check["hidden_tests"]]
    spec = dict(data, category="code_review")
    spec["mutation"] = {"kind": "bug_injection", "operations": [*mutation["operations"], *removed]}
    spec["verification"] = {"kind": "answer", "answer_file": ANSWER_FILE, "facts": facts}
    return spec


def _pick(seed: int, options: list[str]) -> str:
    return options[seed % len(options)]


def review_prompt(
    task_id: str, package: str, module: str, defects: int, symptoms: list[str]
) -> str:
    """The reviewer's request, offline: what broke, where to look, what to report."""
    seed = int(hashlib.sha256(task_id.encode()).hexdigest()[:8], 16)
    count = "one defect" if defects == 1 else f"{defects} separate defects"
    parts = [_pick(seed, [
        f"A recent edit to {module} in {package} introduced {count}.",
        f"Someone changed {module} last week and left {count} behind.",
        f"Our {package} fork has {count} in {module} since the last merge.",
    ])]  # fmt: skip
    if symptoms:
        shown = "; ".join(symptoms[: 1 + (seed >> 4) % len(symptoms)])
        parts.append(_pick(seed >> 8, [
            f"What we noticed: {shown}, and it doesn't any more.",
            f"For instance, {shown}, but not now.",
        ]))  # fmt: skip
    parts.append(_pick(seed >> 12, [
        "Please review the module and find them; don't fix anything.",
        "Review it and point me at the faulty lines, without changing the code.",
    ]))  # fmt: skip
    parts.append(
        f'Write {ANSWER_FILE} with "defect_1" to "defect_{defects}" in the order they appear '
        'in the file, each {"file", "start_line", "end_line"} of the faulty lines, and '
        '"functions": the functions they are in (methods as Class.method).'
        if defects > 1
        else f'Write {ANSWER_FILE} with "defect_1": {{"file", "start_line", "end_line"}} of '
        'the faulty lines, and "functions": the function it is in, as a list (a method as '
        "Class.method)."
    )
    return " ".join(parts)
