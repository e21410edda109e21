"""Code quality of a solved attempt's change: a score in [0, 1], every penalty listed.

Penalties: lint findings the change adds (ruff), functions it leaves too complex
or makes much more complex (cyclomatic, per function), duplicated blocks,
leftover TODO/FIXME, debug prints and breakpoints, dead code (commented-out
code, statements after a return, `if False:`), no tests when behaviour was
added, names out of step with the file's style, a diff much larger than the
reference solution's, and hazards in new code: bare or swallowing `except`
handlers, mutable default arguments, names that shadow builtins. Quality is
judged on top of a correct change, never instead of one: an empty change, one
whose hidden tests fail, or one that breaks the code scores 0 (every attempt gets
a score, so none is resolved for want of one).

Each penalty has a kind (`KINDS`). A scenario names the kind of slip it is about
in `focus`: a finding of a focused kind costs the whole score (weight 1), with
the reason saying so; findings of other kinds keep their usual weights.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections import Counter
from typing import Literal

from pydantic import BaseModel, ConfigDict

from evals.graders.common import (
    Function,
    added_lines,
    broken_python,
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
from harness.grading.scoring import FinalState, Records, register
from harness.pyast import parse_module
from harness.results import Score
from harness.spec import PreparedTask

Penalties = list[tuple[float, str]]
CAMEL = re.compile(r"[a-z][a-z0-9]*[A-Z]\w*")
SNAKE = re.compile(r"_*[a-z][a-z0-9_]*")
DUPLICATE_RUN = 4  # identical consecutive lines that make a duplicated block
LITERAL_ITEM = re.compile(r"""(?:'[^']*'|"[^"]*"|-?\d[\d_.]*),?""")  # one item of a listing
KINDS = (
    "lint",
    "complexity",
    "duplication",
    "todo",
    "debug",
    "dead_code",
    "tests",
    "naming",
    "size",
    "exceptions",
    "mutable_default",
    "shadowed_builtin",
)
# ruff rules the hazard checks report themselves (not counted twice)
COVERED_RULES = frozenset({"E722", "B001", "B006", "SIM105", "S110", "BLE001"})
BUILTIN_NAMES = frozenset(
    name for name in dir(builtins) if not name.startswith("_") and name[0].islower()
)


class QualityParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    expects_tests: bool = False  # the request adds behaviour: tests should come with it
    reference_lines: int | None = None  # lines changed by the reference solution
    max_complexity: int = 10
    max_complexity_added: int = 5
    allow_print: list[str] = []  # files where print is the point (a CLI)
    focus: list[Literal[KINDS]] = []  # type: ignore[valid-type]  # the slips the scenario is about


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
            if rule in COVERED_RULES:
                continue
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
            if all(LITERAL_ITEM.fullmatch(line) for line in block):
                continue  # a listing of data (names, numbers), not copied logic
            seen.add(block)
            hits = sum(
                tuple(text[i : i + DUPLICATE_RUN]) == block
                for i in range(len(text) - DUPLICATE_RUN + 1)
            )
            if hits > 1:
                reasons.append(f"duplicated block in {path}: {block[0]!r} ...")
                break
    return _capped(0.2, 0.4, reasons)


def _added(state: FinalState, path: str) -> list[str]:
    return added_lines(state.before.get(path), state.after[path])


def todos(state: FinalState, code: list[str]) -> Penalties:
    reasons = [
        f"leftover {line.strip()[:60]!r} in {path}"
        for path in code
        for line in _added(state, path)
        if re.search(r"\b(TODO|FIXME|XXX|HACK)\b", line)
    ]
    return _capped(0.15, 0.3, reasons)


def debug_output(state: FinalState, code: list[str], params: QualityParams) -> Penalties:
    reasons = [
        f"debug output {line.strip()[:60]!r} in {path}"
        for path in code
        for line in _added(state, path)
        if re.search(r"\b(breakpoint\(\)|pdb\.set_trace\(\)|import pdb)", line)
        or (re.search(r"\bprint\(", line) and path not in params.allow_print)
    ]
    return _capped(0.2, 0.4, reasons)


def dead_code(state: FinalState, code: list[str]) -> Penalties:
    reasons = []
    for path in code:
        for line in _added(state, path):
            stripped = line.strip()
            if stripped.startswith("#") and _is_code(stripped.lstrip("#").strip()):
                reasons.append(f"commented-out code {stripped[:60]!r} in {path}")
        reasons += _unreachable(state, path)
    return _capped(0.15, 0.3, reasons)


def _is_code(text: str) -> bool:
    """A comment that is a statement: `x = f(y)`, `return x`, `import os`. Prose that happens
    to parse is not: `Example: f(x) == 2` (a bare annotation), `f(x) == 2` (a comparison)."""
    if not text or not re.search(r"[=(\[]|^return\b|^import\b", text):
        return False
    try:
        tree = parse_module(text)
    except SyntaxError:
        return False
    return any(not _prose_like(statement) for statement in tree.body)


def _prose_like(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.AnnAssign):
        return statement.value is None  # "Example: ...", "Note: ..."
    if isinstance(statement, ast.Expr):
        return isinstance(statement.value, ast.Compare | ast.Name | ast.Constant)
    return False


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


def _style_names(name: str, node: Function) -> set[str]:
    names = [name.split(".")[-1]] + [a.arg for a in node.args.args]
    names += [
        t.id for t in ast.walk(node) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)
    ]
    return set(names)


def naming(state: FinalState, code: list[str]) -> Penalties:
    """camelCase names a change brings into a snake_case file (names the function already
    had are not the change's)."""
    reasons = []
    for path in code:
        existing = [n.split(".")[-1] for n in functions(state.before.get(path))]
        if existing and not all(SNAKE.fullmatch(n) for n in existing):
            continue  # the file has no single style to keep to
        old = functions(state.before.get(path))
        for name, node in new_or_changed_functions(state, path).items():
            had = _style_names(name, old[name]) if name in old else set()
            odd = sorted({n for n in _style_names(name, node) - had if CAMEL.fullmatch(n)})
            if odd:
                reasons.append(
                    f"camelCase names in {path}::{name} among snake_case: {', '.join(odd)}"
                )
    return _capped(0.1, 0.3, reasons)


def size(state: FinalState, params: QualityParams) -> Penalties:
    if not params.reference_lines:
        return []
    code = [path for path in changed_files(state) if not is_test_path(path)]  # tests are free
    lines, reference = changed_line_count(state, code), params.reference_lines
    if lines > 6 * reference and lines > reference + 20:
        return [(0.3, f"{lines} lines changed, the reference solution changes {reference}")]
    if lines > 3 * reference and lines > reference + 10:
        return [(0.2, f"{lines} lines changed, the reference solution changes {reference}")]
    return []


BROAD = ("Exception", "BaseException")


def _swallows(handler: ast.ExceptHandler) -> bool:
    """The handler's body only passes, continues or returns nothing."""
    quiet = (ast.Pass, ast.Continue)
    return all(
        isinstance(s, quiet)
        or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
        or (isinstance(s, ast.Return) and (s.value is None or _is_none(s.value)))
        for s in handler.body
    )


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def exception_handling(state: FinalState, code: list[str]) -> Penalties:
    """Bare `except:` and broad handlers (Exception, BaseException) that swallow the error,
    in new or changed functions."""
    reasons = []
    for path in code:
        old = functions(state.before.get(path))
        for name, node in new_or_changed_functions(state, path).items():
            had = Counter(kind for kind, _ in _handlers(old[name])) if name in old else Counter()
            for kind, line in _handlers(node):
                if had[kind]:  # the function had such a handler before the change
                    had[kind] -= 1
                    continue
                where = f"{path}::{name} line {line}"
                if kind == "bare":
                    reasons.append(f"bare `except:` in {where} (catches KeyboardInterrupt too)")
                else:
                    reasons.append(f"`except {kind}` swallows every error in {where}")
    return _capped(0.2, 0.4, reasons)


def _handlers(node: Function) -> list[tuple[str, int]]:
    """The function's hazardous handlers: ("bare", line) or (broad class, line)."""
    found = []
    for handler in ast.walk(node):
        if not isinstance(handler, ast.ExceptHandler):
            continue
        if handler.type is None:
            found.append(("bare", handler.lineno))
        elif ast.unparse(handler.type) in BROAD and _swallows(handler):
            found.append((ast.unparse(handler.type), handler.lineno))
    return found


def _mutable(node: ast.expr) -> bool:
    if isinstance(node, ast.List | ast.Dict | ast.Set | ast.ListComp | ast.DictComp):
        return True
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("list", "dict", "set", "bytearray")
    )


def mutable_defaults(state: FinalState, code: list[str]) -> Penalties:
    reasons = []
    for path in code:
        old = functions(state.before.get(path))
        for name, node in new_or_changed_functions(state, path).items():
            had = _mutable_defaults(old[name]) if name in old else []
            for found in [item for item in _mutable_defaults(node) if item not in had]:
                reasons.append(f"mutable default {found} in {path}::{name}")
    return _capped(0.2, 0.4, reasons)


def _mutable_defaults(node: Function) -> list[str]:
    arguments = node.args
    positional = [*arguments.posonlyargs, *arguments.args]
    pairs = list(zip(positional[len(positional) - len(arguments.defaults) :],
                     arguments.defaults, strict=True))  # fmt: skip
    pairs += [(a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults,
                                     strict=True) if d is not None]  # fmt: skip
    return [f"{a.arg}={ast.unparse(d)}" for a, d in pairs if _mutable(d)]


def _bound_names(node: Function) -> set[str]:
    arguments = node.args
    names = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}
    names |= {a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None}
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
            names.add(inner.id)
        elif isinstance(inner, Function | ast.ClassDef) and inner is not node:
            names.add(inner.name)
    return names


def shadowed_builtins(state: FinalState, code: list[str]) -> Penalties:
    """New functions, arguments or local names that shadow a builtin (`list`, `sum`, `id`)."""
    reasons = []
    for path in code:
        old = functions(state.before.get(path))
        for name, node in new_or_changed_functions(state, path).items():
            had = _bound_names(old[name]) if name in old else set()
            own = {name.split(".")[-1]} if "." not in name and name not in old else set()
            shadow = sorted(((_bound_names(node) | own) - had) & BUILTIN_NAMES)
            if shadow:
                reasons.append(f"builtins shadowed in {path}::{name}: {', '.join(shadow)}")
    return _capped(0.15, 0.3, reasons)


def _focused(kind: str, penalties: Penalties) -> Penalties:
    """A focused kind's findings: the first costs the whole score, the rest are listed."""
    reasons = [reason.removesuffix(" (cap reached)") for _, reason in penalties]
    note = f" [{kind}: the slip this scenario is about]"
    return _capped(1.0, 1.0, [reason + note for reason in reasons])


@register("code_quality", QualityParams)
def grade_quality(
    task: PreparedTask, state: FinalState, records: Records, params: QualityParams
) -> Score:
    changed = changed_files(state)
    if not changed:
        return Score(value=0.0, reasons=["no change: nothing to judge the quality of"])
    if state.resolved is False:
        return Score(value=0.0, reasons=["the change fails the hidden tests"])
    broken = broken_python(state)
    if broken:
        return Score(value=0.0, reasons=[f"the change breaks {', '.join(broken)}"])
    if not any(path.endswith(".py") for path in changed):
        return Score(value=0.0, reasons=["no Python changed: no code to judge"])
    code = [
        p
        for p in changed
        if p.endswith(".py") and not is_test_path(p) and state.after.get(p) is not None
    ]
    unparsable = [p for p in code if parse(state.after[p]) is None]
    penalties: Penalties = [(1.0, f"{p} does not parse") for p in unparsable]
    code = [p for p in code if p not in unparsable]
    found: dict[str, Penalties] = {
        "lint": lint(state, code),
        "complexity": complexity_penalties(state, code, params),
        "duplication": duplication(state, code),
        "todo": todos(state, code),
        "debug": debug_output(state, code, params),
        "dead_code": dead_code(state, code),
        "tests": tests_added(state, params),
        "naming": naming(state, code),
        "size": size(state, params),
        "exceptions": exception_handling(state, code),
        "mutable_default": mutable_defaults(state, code),
        "shadowed_builtin": shadowed_builtins(state, code),
    }
    for kind in KINDS:
        penalties += _focused(kind, found[kind]) if kind in params.focus else found[kind]
    value, reasons = penalty_score(penalties)
    return Score(value=value, reasons=reasons)
