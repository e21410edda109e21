"""Documentation tasks (`--kind docs`): a module's docstring examples removed, asked back.

A candidate is a package module with at least `MIN_DOCUMENTED` public functions, classes
or methods, not decorated, whose docstrings hold doctest examples (`>>>`). The mutation
removes the examples from every docstring of the module that has some (each example's
`>>>` and `...` lines, its expected output, and an `Examples:` heading left with nothing
under it), one `replace_text` per docstring, the rest of each docstring kept: examples
left in a private or decorated definition's docstring would hold lines of the answer for
the leak scan. The task asks for the public plain ones back (at most `MAX_DOCUMENTED`, in
source order) and is graded by the `docs` kind: FAIL_TO_PASS are those names' doctest
items (`--doctest-modules`; the other removed items are graded by nothing, `checks`
leaves them out of the lists), and at grading each name's examples must call it and
show its result (`harness/kinds/docs.py`). The test file that runs the module most is
hidden (its tests keep behaviour fixed and carry the canaries), as v1's documentation
tasks do.

Measuring derives the lists as for a deletion; a name whose doctest is not stable on the
pristine tree is no longer asked for (`keep_measured`), and fewer than `MIN_DOCUMENTED`
left fails the candidate.
"""

from __future__ import annotations

import ast
import hashlib
import re
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cursorbench.factory.candidates import test_file
from cursorbench.factory.coverage_map import CoverageMap, dotted_module, package_files
from cursorbench.factory.filters import Proposal, canary_failure
from cursorbench.factory.job import Entry, Job, Measured
from cursorbench.factory.measure import Derivation, derive, write_derived
from cursorbench.factory.release import Release, base_spec
from cursorbench.tasks.workspace import BuiltTask
from cursorbench.validation.checks import asked
from harness.kinds.docs import DocsVerification, example_problem, run_probe
from harness.pyast import parse_module
from harness.sandbox.protocol import SandboxBackend

MIN_DOCUMENTED = 5
MAX_DOCUMENTED = 20
_HEADING = re.compile(r"^\s*(examples?|example usage|usage|for example)\s*:{0,2}\s*$", re.I)


@dataclass(frozen=True)
class Documented:
    name: str  # "f", "C" or "C.method": what the docs kind's probe runs
    old: str  # the docstring literal as the source has it
    new: str  # the same literal without its examples
    lines: range  # where the definition sits
    asked: bool = True  # public and plain: the task asks for its examples back


@dataclass
class DocsCandidate:
    key: str
    file: str
    module: str  # dotted
    edited: list[Documented]  # every docstring whose examples go, asked for or not
    hidden_files: list[str] = field(default_factory=list)

    @property
    def documented(self) -> list[Documented]:
        """The definitions whose examples the task asks for (at most `MAX_DOCUMENTED`)."""
        return [d for d in self.edited if d.asked][:MAX_DOCUMENTED]

    @property
    def names(self) -> list[str]:
        return [d.name for d in self.documented]

    def item(self, name: str) -> str:
        """The pytest doctest item of a name's docstring."""
        return f"{self.file}::{self.module}.{name}"


def _example_lines(lines: list[str]) -> set[int]:
    """Indexes of the lines that belong to doctest examples: `>>>` lines, their `...`
    continuations and their expected output (up to a blank line or the next `>>>`)."""
    found: set[int] = set()
    in_example = False
    for at, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith(">>>"):
            in_example = True
        elif not stripped:
            in_example = False
        if in_example:
            found.add(at)
    return found


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _empty_headings(lines: list[str], examples: set[int]) -> set[int]:
    """Headings (`Examples:`, `Usage::`) whose section holds examples and nothing else."""
    found: set[int] = set()
    for at, line in enumerate(lines):
        if not _HEADING.match(line):
            continue
        section = []
        for later in range(at + 1, len(lines)):
            text = lines[later]
            if text.strip() and later not in examples and _indent(text) <= _indent(line):
                break
            if text.strip():
                section.append(later)
        if section and all(index in examples for index in section):
            found.add(at)
    return found


def without_examples(docstring: str) -> str:
    """The docstring's text with its doctest examples removed (`_example_lines`), a
    heading left with nothing under it, and the blank lines that would then run
    together; the last line (the closing quotes' indentation) stays."""
    lines = docstring.split("\n")
    tail = lines.pop() if len(lines) > 1 and not lines[-1].strip() else None
    ended_blank = bool(lines) and not lines[-1].strip()
    examples = _example_lines(lines)
    dropped = examples | _empty_headings(lines, examples)
    out: list[str] = []
    for at, line in enumerate(lines):
        if at == 0 and at not in dropped:
            out.append(line)  # the opening quotes' line, empty or not, stays as it is
            continue
        if at in dropped or (not line.strip() and (not out or not out[-1].strip())):
            continue
        out.append(line)
    while out and not out[-1].strip():
        out.pop()
    if ended_blank and out:
        out.append("")
    return "\n".join(out + ([tail] if tail is not None else []))


Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _documented(text: str, node: Definition, name: str, asked: bool) -> Documented | None:
    body = node.body
    if not body or not isinstance(body[0], ast.Expr):
        return None
    literal = body[0].value
    if not isinstance(literal, ast.Constant) or not isinstance(literal.value, str):
        return None
    if ">>>" not in literal.value:
        return None
    old = ast.get_source_segment(text, literal)
    if old is None or text.count(old) != 1:
        return None  # replace_text needs exactly one occurrence
    inner = literal.value
    quote = next((q for q in ('"""', "'''") if old.rstrip().endswith(q)), None)
    if quote is None or "\\" in old or inner not in old:
        return None  # only plain triple-quoted docstrings are edited in place
    new = old.replace(inner, without_examples(inner), 1)
    if ">>>" in new or new == old:
        return None
    lines = range(node.lineno, (node.end_lineno or node.lineno) + 1)
    return Documented(name, old, new, lines, asked)


def example_docstrings(text: str) -> list[Documented]:
    """Every definition (functions, classes, their methods) whose docstring holds examples
    that can be removed in place, in source order; `asked` for the public ones that are not
    decorated (a decorated function may be no function at all, toolz's `@curry`, whose
    calls the docs kind cannot see). The others' examples go too, since kept they could
    hold lines of the answer, but no task asks for them."""
    try:
        module = parse_module(text)
    except (SyntaxError, ValueError, RecursionError):
        return []
    found: list[Documented] = []
    for node in module.body:
        if not isinstance(node, Definition):
            continue
        public = not node.name.startswith("_")
        own = _documented(text, node, node.name, public and not node.decorator_list)
        found += [own] if own is not None else []
        if not isinstance(node, ast.ClassDef):
            continue
        for item in node.body:
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                plain = public and not item.name.startswith("_") and not item.decorator_list
                method = _documented(text, item, f"{node.name}.{item.name}", plain)
                found += [method] if method is not None else []
    return found


def _hidden_file(testmap: CoverageMap, relative: str, documented: list[Documented]) -> str:
    """The test file whose passing tests run the documented definitions most ('' if none)."""
    passing = testmap.passing()
    counts: Counter[str] = Counter()
    for item in documented:
        for test in testmap.tests_running(relative, item.lines) & passing:
            counts[test_file(test)] += 1
    return counts.most_common(1)[0][0] if counts else ""


def enumerate_docs(tree: Path, testmap: CoverageMap) -> Iterator[DocsCandidate]:
    """One candidate per package module that asks for at least `MIN_DOCUMENTED` names."""
    for relative in package_files(tree):
        text = (tree / relative).read_text(encoding="utf-8", errors="replace")
        edited = example_docstrings(text)
        candidate = DocsCandidate(
            f"docs:{relative}", relative, dotted_module(tree, relative), edited
        )
        if len(candidate.documented) < MIN_DOCUMENTED:
            continue
        hidden = _hidden_file(testmap, relative, candidate.documented)
        candidate.hidden_files = [hidden] if hidden else []
        yield candidate


def docs_id(package: str, candidate: DocsCandidate) -> str:
    stem = Path(candidate.file).stem
    stem = Path(candidate.file).parent.name if stem == "__init__" else stem
    return re.sub(r"[^a-z0-9.]+", "-", f"{package}-{stem}-docs".lower()).strip("-.")


def docs_spec(
    release: Release, candidate: DocsCandidate, ident: str, environment: list[str] | None
) -> dict[str, object]:
    data = base_spec(release, ident, "documentation", environment)
    data["mutation"] = {
        "kind": "feature_deletion",
        "operations": [
            {"op": "replace_text", "file": candidate.file, "old": d.old, "new": d.new}
            for d in candidate.edited
        ],
    }
    data["verification"] = {
        "kind": "docs",
        "test_args": [*candidate.hidden_files, "--doctest-modules", candidate.file],
        "hidden_tests": candidate.hidden_files,
        "documented_file": candidate.file,
        "documented": candidate.names,
        "fail_to_pass": [candidate.item(n) for n in candidate.names],
        "pass_to_pass": [],
    }
    return data


def keep_measured(data: dict[str, object], fail_to_pass: list[str]) -> int:
    """Drops from a measured docs task's `documented` the names whose doctest item is not
    among the measured FAIL_TO_PASS (unstable or failing on the pristine tree); returns how
    many are left. Their examples stay removed (the build's leak scan passed that tree;
    kept, they could hold lines of the answer), but nothing asks for them or grades them.
    `data` still holds the predicted items, one per name, in order (`docs_spec`)."""
    check = data["verification"]
    assert isinstance(check, dict)
    measured = set(fail_to_pass)
    rows = zip(check["documented"], check["fail_to_pass"], strict=True)
    kept = [name for name, item in rows if item in measured]
    data["verification"] = {**check, "documented": kept}
    return len(kept)


def keep_called(
    data: dict[str, object], built: BuiltTask, sandboxes: SandboxBackend, scratch: Path
) -> tuple[str, str] | None:
    """Drops from a measured docs task's `documented` the names whose examples in the
    original never call them (an example of `Graph.copy` where `MultiGraph.copy` is asked
    for): the docs kind would fail the reference for them. The failure, when fewer than
    `MIN_DOCUMENTED` are left or the probe did not finish; else None."""
    check = data["verification"]
    assert isinstance(check, dict)
    model = DocsVerification.model_validate(check)
    probe = run_probe(built.prepared(), model, built.reference_patch, sandboxes, scratch)
    if probe is None:
        return "reference_graded", "the reference's examples did not finish"
    kept = [name for name in model.documented if example_problem(probe, name) is None]
    data["verification"] = {**check, "documented": kept}
    if len(kept) < MIN_DOCUMENTED:
        return "reference_graded", f"the reference's examples call {len(kept)} of the names"
    return None


PROMPTS = (
    "{module} lost the examples from its docstrings, and the API reference is much harder "
    "to use without them. Please write runnable doctest examples for {names}: each one "
    "should use it and show what comes back. Don't change any behaviour.",
    "The docstrings in {file} have no usage examples any more. Could you add doctest "
    "examples for {names}? They have to pass under `pytest --doctest-modules`, and the "
    "code itself should stay as it is.",
    "I'd like the public API of {module} documented with examples again. Add a short "
    "doctest to the docstrings of {names}, showing a typical call and its result (an edge "
    "case where it matters).",
)


def docs_prompt(package: str, module: str, file: str, names: list[str], key: str) -> str:
    """One of a few phrasings, chosen by the task's key so a rerun writes the same one."""
    listed = ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]
    pick = int(hashlib.sha256(key.encode()).hexdigest(), 16) % len(PROMPTS)
    module = module if "." in module else f"{package}'s {module}"
    return PROMPTS[pick].format(module=module, names=listed, file=file)


def measured_prompt(data: dict[str, object], key: str, module: str) -> str:
    """The prompt of a measured docs task (`keep_measured` first): the names it kept."""
    check, source = data["verification"], data["source"]
    assert isinstance(check, dict) and isinstance(source, dict)
    names = [str(n) for n in check["documented"]]
    return docs_prompt(str(source["name"]), module, str(check["documented_file"]), names, key)


class DocsKind:
    """Measured as a deletion is; then only the names whose doctests are stable and whose
    examples call them are asked for, in a prompt written offline."""

    family = None

    def measure(self, job: Job) -> Measured:
        return derive(job, self._finish)

    def _finish(self, step: Derivation) -> Measured:
        data = step.data
        keep_measured(data, step.fail_to_pass)
        with tempfile.TemporaryDirectory(dir=step.scratch) as scratch:
            step.done.failure = keep_called(data, step.built, step.sandboxes, Path(scratch))
        if step.done.failure is not None:
            return step.done
        docs = DocsVerification.model_validate(data["verification"])
        kept = [test for test in step.fail_to_pass if asked(docs, test)]  # the kept names'
        prompt = measured_prompt(data, step.job.key, step.job.module)
        return write_derived(step, prompt, "offline", kept)

    def prompt_again(self, job: Job, data: dict[str, Any]) -> str | None:
        return None


def docs_row(candidate: DocsCandidate) -> Proposal:
    measured = [(d.name, d.old, d.new) for d in candidate.edited], candidate.hidden_files
    digest = hashlib.sha256(repr(measured).encode()).hexdigest()
    return Proposal(
        key=candidate.key, kind="docs", file=candidate.file, symbols=candidate.names,
        candidate_digest=digest[:16], hidden_tests=candidate.hidden_files,
        predicted_fail_to_pass=len(candidate.names),
        removed_statements=removed_lines(candidate),
    )  # fmt: skip


def removed_lines(candidate: DocsCandidate) -> int:
    return sum(d.old.count("\n") - d.new.count("\n") for d in candidate.edited)


def docs_entries(
    tree: Path,
    testmap: CoverageMap,
    package: str,
    job: Callable[[DocsCandidate, str], Job],
) -> tuple[list[Proposal], list[Entry], set[str]]:
    """Every docs candidate's row (its one cheap filter: a hidden test file that gets
    canaries), the survivors to measure and every candidate's task id."""
    rows: list[Proposal] = []
    entries: list[Entry] = []
    ids: set[str] = set()
    for candidate in enumerate_docs(tree, testmap):
        ident = docs_id(package, candidate)
        ids.add(ident)
        row = docs_row(candidate)
        rows.append(row)
        if not candidate.hidden_files:
            row.failed, row.why = "canaries", "no test file runs the documented definitions"
            continue
        failure = canary_failure(tree, candidate.hidden_files)
        if failure is not None:
            row.failed, row.why = failure
            continue
        row.task_id = ident
        names = {(candidate.file, f"(docs {candidate.key})")}
        entries.append(Entry(row, names, lambda c=candidate, i=ident: job(c, i)))  # type: ignore[misc]
    return rows, entries, ids
