"""Bug reports for proposed debugging tasks: what a user saw go wrong, never where.

The symptoms come from the failing hidden tests: each test's first `assert CALL ==
LITERAL` (read from the pristine tree's test file) becomes "`CALL` should give
`LITERAL`"; tests without one give a phrase from their name. The report never names a
file, a test, or the functions that were changed (unless a symptom calls one, as a user
would), and keeps the rubric of `prompts.prompt_problems`. `EndpointWriter` can write it
instead from the same facts, with `BUG_RUBRIC` as its system prompt.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from cursorbench.factory.prompts import EndpointWriter, behaviours
from harness.pyast import parse_module

MAX_SYMPTOMS = 3
MAX_EXPR = 70
BUG_RUBRIC = """You write the bug report a developer would type to a coding assistant about
a Python package that started giving wrong results. Rules:
- One to five sentences; vary the length as real reports vary.
- Describe what goes wrong (the call and the result expected), not where the cause is.
- Never name a file, a module path, a line or a test; no bullet lists, no code blocks.
- Mention at most three calls.
Reply with the report text only."""


@dataclass(frozen=True)
class BugFacts:
    task_id: str
    package: str
    symptoms: list[str] = field(default_factory=list)  # "`f(1)` should give 2"
    test_names: list[str] = field(default_factory=list)


def _leaf(test: str) -> str:
    return re.sub(r"\[.*\]$", "", test.split("::")[-1])


def _segment(text: str, node: ast.expr) -> str | None:
    found = ast.get_source_segment(text, node)
    if found is None or "\n" in found or len(found) > MAX_EXPR:
        return None
    return found


def _literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _root(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute | ast.Call | ast.Subscript):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _plain_call(node: ast.expr, test: ast.AST) -> bool:
    """A call a user could type: every argument a literal, and not on a variable of the
    test (`f(example)` or `t.render()` mean nothing to the reader of the report)."""
    if not isinstance(node, ast.Call):
        return False
    bound = {
        n.id for n in ast.walk(test) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    if isinstance(test, ast.FunctionDef | ast.AsyncFunctionDef):
        bound |= {a.arg for a in [*test.args.args, *test.args.kwonlyargs]}
    if _root(node) in bound:
        return False
    return all(_literal(arg) for arg in [*node.args, *(k.value for k in node.keywords)])


def symptom_of(text: str, module: ast.Module, test: str) -> str | None:
    """The test's first `assert CALL == LITERAL` as "`CALL` should give `LITERAL`", where
    the call's arguments are literals too."""
    name = _leaf(test)
    for node in ast.walk(module):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.name != name:
            continue
        for inner in ast.walk(node):
            if not isinstance(inner, ast.Assert) or not isinstance(inner.test, ast.Compare):
                continue
            check = inner.test
            if len(check.ops) != 1 or not isinstance(check.ops[0], ast.Eq):
                continue
            call, want = check.left, check.comparators[0]
            if isinstance(want, ast.Call) and _literal(call):
                call, want = want, call
            if _plain_call(call, node) and _literal(want):
                shown, expected = _segment(text, call), _segment(text, want)
                if shown and expected:
                    return f"`{shown}` should give {expected}"
        return None
    return None


def symptoms(tree: Path, failing: list[str]) -> list[str]:
    """Up to `MAX_SYMPTOMS` distinct symptoms of the failing tests."""
    parsed: dict[str, tuple[str, ast.Module] | None] = {}
    found: list[str] = []
    for test in failing:
        path = test.split("::")[0]
        if path not in parsed:
            try:
                text = (tree / path).read_text(encoding="utf-8", errors="replace")
                parsed[path] = (text, parse_module(text))
            except (OSError, SyntaxError):
                parsed[path] = None
        entry = parsed[path]
        symptom = symptom_of(entry[0], entry[1], test) if entry else None
        if symptom and symptom not in found:
            found.append(symptom)
        if len(found) == MAX_SYMPTOMS:
            break
    return found


def _pick(seed: int, options: list[str]) -> str:
    return options[seed % len(options)]


def offline_bug_report(facts: BugFacts) -> str:
    seed = int(hashlib.sha256(facts.task_id.encode()).hexdigest()[:8], 16)
    parts = [_pick(seed, [
        f"Something in {facts.package} started returning wrong results.",
        f"After updating our copy of {facts.package}, a few things broke.",
        f"We're seeing incorrect output from {facts.package} since the last change.",
        f"{facts.package} has a regression that our users hit.",
    ])]  # fmt: skip
    shown = facts.symptoms[: 1 + (seed >> 4) % MAX_SYMPTOMS]
    if shown:
        listed = "; ".join(shown)
        parts.append(_pick(seed >> 8, [
            f"For example, {listed}, and it doesn't.",
            f"It used to work: {listed}.",
            f"Concretely, {listed}, but that is no longer the case.",
        ]))  # fmt: skip
    cases = behaviours(facts.test_names, [])[:3]
    if cases and (not shown or (seed >> 12) % 2):
        parts.append(f"Cases that fail now: {', '.join(cases)}.")
    parts.append(_pick(seed >> 16, [
        "Could you find the cause and fix it?",
        "Please track it down and fix it without changing anything that still works.",
        "Can you fix this?",
    ]))  # fmt: skip
    return " ".join(parts)


def write_bug_report(facts: BugFacts, writer: EndpointWriter | None) -> tuple[str, str]:
    """(report, writer): offline, or the endpoint's when it keeps the rubric."""
    fallback = offline_bug_report(facts)
    if writer is None:
        return fallback, "offline"
    data = {
        "package": facts.package, "symptoms": facts.symptoms,
        "failing_behaviours": behaviours(facts.test_names, [])[:12],
    }  # fmt: skip
    messages = [
        {"role": "system", "content": BUG_RUBRIC},
        {"role": "user", "content": json.dumps(data, indent=1)},
    ]
    return writer.ask(messages, [], fallback)
