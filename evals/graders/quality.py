"""Code quality of a solved attempt's change: a score in [0, 1], every penalty listed.

Penalties: lint findings the change adds (ruff), functions it leaves too complex
or makes much more complex (cyclomatic, per function), duplicated blocks,
leftover TODO/FIXME, debug prints and breakpoints, dead code (commented-out
code, statements after a return, `if False:`), no tests when behaviour was
added, names out of step with the file's style, and a diff much larger than
the reference solution's. An attempt whose tests failed is not scored (the
grader returns None): quality is judged on solved attempts only.
"""

from __future__ import annotations

import ast
import re

from pydantic import BaseModel, ConfigDict

from evals.graders.common import (
    added_lines,
    changed_files,
    changed_line_count,
    functions,
    is_test_path,
    new_or_changed_functions,
    parse,
    penalty_score,
)
from evals.graders.complexity import complexity
from evals.graders.lint import added_findings
from harness.results import Score
from harness.scoring import FinalState, Records, register
from harness.spec import PreparedTask

Penalties = list[tuple[float, str]]
CAMEL = re.compile(r"[a-z][a-z0-9]*[A-Z]\w*")
SNAKE = re.compile(r"_*[a-z][a-z0-9_]*")
DUPLICATE_RUN = 4  # identical consecutive lines that make a duplicated block


class QualityParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    expects_tests: bool = False  # the request adds behaviour: tests should come with it
    reference_lines: int | None = None  # lines changed by the reference solution
    max_complexity: int = 10
    max_complexity_added: int = 5
    allow_print: list[str] = []  # files where print is the point (a CLI)


def _capped(weight: float, cap: float, reasons: list[str]) -> Penalties:
    """One penalty per reason, at most `cap` in all; reasons past the cap are listed at 0."""
    out: Penalties = []
    for reason in reasons:
        step = max(0.0, min(weight, cap - sum(w for w, _ in out)))
        out.append((round(step, 4), reason if step else f"{reason} (cap reached)"))
    return out


def lint(state: FinalState, code: list[str]) -> Penalties:
    reasons = []
    for path in code:
        for rule, count in sorted(
            added_findings(state.before.get(path), state.after[path], path).items()
        ):
            reasons.append(f"ruff {rule} added in {path}" + (f" ({count}x)" if count > 1 else ""))
    return _capped(0.1, 0.4, reasons)


def complexity_penalties(state: FinalState, code: list[str], params: QualityParams) -> Penalties:
    reasons = []
    for path in code:
        old = functions(state.before.get(path))
        for name, node in new_or_changed_functions(state, path).items():
            now = complexity(node)
            was = complexity(old[name]) if name in old else 1
            if now > params.max_complexity and now > was:
                reasons.append(f"{path}::{name} has complexity {now} (> {params.max_complexity})")
            elif now - was >= params.max_complexity_added:
                reasons.append(f"{path}::{name} complexity {was} -> {now}")
    return _capped(0.2, 0.4, reasons)


def _normal(line: str) -> str:
    return " ".join(line.split())


def duplication(state: FinalState, code: list[str]) -> Penalties:
    """Runs of DUPLICATE_RUN added lines that occur twice in the file's final text."""
    reasons = []
    for path in code:
        text = [_normal(line) for line in (state.after[path] or "").splitlines()]
        added = [_normal(x) for x in added_lines(state.before.get(path), state.after[path])]
        seen: set[tuple[str, ...]] = set()
        for start in range(len(added) - DUPLICATE_RUN + 1):
            block = tuple(added[start : start + DUPLICATE_RUN])
            if block in seen or sum(len(line) > 3 for line in block) < DUPLICATE_RUN:
                continue
            seen.add(block)
            hits = sum(
                tuple(text[i : i + DUPLICATE_RUN]) == block
                for i in range(len(text) - DUPLICATE_RUN + 1)
            )
            if hits > 1:
                reasons.append(f"duplicated block in {path}: {block[0]!r} ...")
                break
    return _capped(0.2, 0.4, reasons)


def leftovers(state: FinalState, code: list[str], params: QualityParams) -> Penalties:
    todo, debug, dead = [], [], []
    for path in code:
        new = added_lines(state.before.get(path), state.after[path])
        for line in new:
            stripped = line.strip()
            if re.search(r"\b(TODO|FIXME|XXX|HACK)\b", line):
                todo.append(f"leftover {stripped[:60]!r} in {path}")
            if re.search(r"\b(breakpoint\(\)|pdb\.set_trace\(\)|import pdb)", line) or (
                re.search(r"\bprint\(", line) and path not in params.allow_print
            ):
                debug.append(f"debug output {stripped[:60]!r} in {path}")
            if stripped.startswith("#") and _is_code(stripped.lstrip("#").strip()):
                dead.append(f"commented-out code {stripped[:60]!r} in {path}")
        dead += _unreachable(state, path)
    return _capped(0.15, 0.3, todo) + _capped(0.2, 0.4, debug) + _capped(0.15, 0.3, dead)


def _is_code(text: str) -> bool:
    if not text or not re.search(r"[=(\[]|^return\b|^import\b", text):
        return False
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


def _unreachable(state: FinalState, path: str) -> list[str]:
    found = []
    for name, node in new_or_changed_functions(state, path).items():
        for inner in ast.walk(node):
            body = getattr(inner, "body", None)
            test = getattr(inner, "test", None)
            if isinstance(inner, ast.If) and isinstance(test, ast.Constant) and not test.value:
                found.append(f"dead branch `if {test.value!r}:` in {path}::{name}")
            if not isinstance(body, list):
                continue
            for statement in body[:-1]:
                if isinstance(statement, ast.Return | ast.Raise | ast.Continue | ast.Break):
                    found.append(
                        f"unreachable code after line {statement.lineno} in {path}::{name}"
                    )
                    break
    return found


def tests_added(state: FinalState, params: QualityParams) -> Penalties:
    if not params.expects_tests:
        return []
    for path in changed_files(state):
        if is_test_path(path) and path.endswith(".py"):
            old = set(functions(state.before.get(path)))
            if any(
                name.split(".")[-1].startswith("test")
                for name in set(functions(state.after[path])) - old
            ):
                return []
    return [(0.3, "behaviour was added without a test")]


def naming(state: FinalState, code: list[str]) -> Penalties:
    reasons = []
    for path in code:
        existing = [n.split(".")[-1] for n in functions(state.before.get(path))]
        if existing and not all(SNAKE.fullmatch(n) for n in existing):
            continue  # the file has no single style to keep to
        for name, node in new_or_changed_functions(state, path).items():
            names = [name.split(".")[-1]] + [a.arg for a in node.args.args]
            names += [
                t.id
                for t in ast.walk(node)
                if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)
            ]
            odd = sorted({n for n in names if CAMEL.fullmatch(n)})
            if odd:
                reasons.append(
                    f"camelCase names in {path}::{name} among snake_case: {', '.join(odd)}"
                )
    return _capped(0.1, 0.3, reasons)


def size(state: FinalState, params: QualityParams) -> Penalties:
    if not params.reference_lines:
        return []
    lines, reference = changed_line_count(state), params.reference_lines
    if lines > 6 * reference and lines > reference + 20:
        return [(0.3, f"{lines} lines changed, the reference solution changes {reference}")]
    if lines > 3 * reference and lines > reference + 10:
        return [(0.2, f"{lines} lines changed, the reference solution changes {reference}")]
    return []


@register("code_quality", QualityParams)
def grade_quality(
    task: PreparedTask, state: FinalState, records: Records, params: QualityParams
) -> Score | None:
    changed = changed_files(state)
    if state.resolved is False or not changed:
        return None  # scored on solved attempts only
    code = [
        p
        for p in changed
        if p.endswith(".py") and not is_test_path(p) and state.after.get(p) is not None
    ]
    unparsable = [p for p in code if parse(state.after[p]) is None]
    penalties: Penalties = [(1.0, f"{p} does not parse") for p in unparsable]
    code = [p for p in code if p not in unparsable]
    penalties += lint(state, code) + complexity_penalties(state, code, params)
    penalties += duplication(state, code) + leftovers(state, code, params)
    penalties += tests_added(state, params) + naming(state, code) + size(state, params)
    value, reasons = penalty_score(penalties)
    return Score(value=value, reasons=reasons)
