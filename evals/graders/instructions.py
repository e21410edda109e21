"""Instruction-following: explicit constraints in the prompt, each a check over the diff
and the AST of the result. The score is the share of constraints kept; whether the
task itself was solved is the attempt's `status` (pytest), reported next to it.

A constraint kept only because the code it is about is gone is not kept: a
required function that does not exist keeps no `type_hints` or `naming`
constraint, a public function removed breaks `keep_signatures`, and deleted
lines count against a `line_budget` (a modified line counts once).

Constraints are kept on top of a correct change, never instead of one: no change,
a change whose hidden tests fail, or one that breaks the code scores 0.
"""

from __future__ import annotations

import ast
import re
import sys
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from evals.graders.common import (
    added_lines,
    broken_python,
    changed_files,
    definitions,
    functions,
    imported_modules,
    is_test_path,
    matches,
    modified_line_count,
    new_or_changed_functions,
    parse,
    signature,
)
from harness.grading.scoring import FinalState, Records, register
from harness.results import Score
from harness.spec import PreparedTask

DEPENDENCY_FILES = ["pyproject.toml", "setup.py", "setup.cfg", "**/requirements*.txt", "Pipfile"]


class _Constraint(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NoTouch(_Constraint):
    kind: Literal["no_touch"] = "no_touch"
    globs: list[str]


class KeepSignatures(_Constraint):
    kind: Literal["keep_signatures"] = "keep_signatures"
    file: str
    names: list[str] = []  # [] = every public function of the file


class NoNewDependencies(_Constraint):
    kind: Literal["no_new_dependencies"] = "no_new_dependencies"
    local: list[str] = []  # the project's own top-level packages


class StdlibOnly(_Constraint):
    kind: Literal["stdlib_only"] = "stdlib_only"
    local: list[str] = []


class InModule(_Constraint):
    kind: Literal["module"] = "module"
    file: str
    names: list[str]


class TypeHints(_Constraint):
    kind: Literal["type_hints"] = "type_hints"
    require: list[str] = []  # "path::name" that must exist (new work the hints are about)


class Naming(_Constraint):
    kind: Literal["naming"] = "naming"
    pattern: str  # new or changed function names must match (re.fullmatch)
    require: list[str] = []


class ErrorStyle(_Constraint):
    kind: Literal["error_style"] = "error_style"
    exception: str  # every `raise X(...)` added outside tests raises this class


class LineBudget(_Constraint):
    kind: Literal["line_budget"] = "line_budget"
    max_lines: int = Field(ge=1)  # lines touched, a modified line once


class NoPrint(_Constraint):
    kind: Literal["no_print"] = "no_print"


Constraint = Annotated[
    NoTouch
    | KeepSignatures
    | NoNewDependencies
    | StdlibOnly
    | InModule
    | TypeHints
    | Naming
    | ErrorStyle
    | LineBudget
    | NoPrint,
    Field(discriminator="kind"),
]


class InstructionParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    constraints: list[Constraint] = Field(min_length=1)


def _code_files(state: FinalState) -> list[str]:
    return [p for p in changed_files(state) if p.endswith(".py") and not is_test_path(p)]


def _missing(state: FinalState, required: list[str]) -> list[str]:
    missing = []
    for item in required:
        path, _, name = item.partition("::")
        if name not in definitions(state.after.get(path, state.before.get(path))):
            missing.append(item)
    return missing


def check_no_touch(state: FinalState, rule: NoTouch) -> str | None:
    hit = [path for path in changed_files(state) if matches(path, rule.globs)]
    return f"changed {', '.join(hit)} (told not to touch {', '.join(rule.globs)})" if hit else None


def check_keep_signatures(state: FinalState, rule: KeepSignatures) -> str | None:
    if rule.file not in state.after:
        return None
    old, new = functions(state.before.get(rule.file)), functions(state.after.get(rule.file))
    names = rule.names or [n for n in old if not any(p.startswith("_") for p in n.split("."))]
    problems = []
    for name in names:
        if name not in old:
            continue
        if name not in new:
            problems.append(f"{name} removed")
        elif signature(old[name]) != signature(new[name]):
            problems.append(f"{name}{signature(old[name])} became {signature(new[name])}")
    return f"public signatures in {rule.file} changed: {'; '.join(problems)}" if problems else None


def _new_imports(state: FinalState) -> dict[str, set[str]]:
    return {
        path: imported_modules(state.after.get(path)) - imported_modules(state.before.get(path))
        for path in changed_files(state)
        if path.endswith(".py")
    }


def check_no_new_dependencies(state: FinalState, rule: NoNewDependencies) -> str | None:
    touched = [path for path in changed_files(state) if matches(path, DEPENDENCY_FILES)]
    if touched:
        return f"changed dependency files: {', '.join(touched)}"
    return check_stdlib_only(state, StdlibOnly(local=rule.local), "new third-party imports")


def check_stdlib_only(
    state: FinalState, rule: StdlibOnly, what: str = "imports outside the standard library"
) -> str | None:
    allowed = set(sys.stdlib_module_names) | set(rule.local)
    found = sorted(
        f"{module} ({path})"
        for path, modules in _new_imports(state).items()
        for module in modules
        if module not in allowed
    )
    return f"{what}: {', '.join(found)}" if found else None


def check_module(state: FinalState, rule: InModule) -> str | None:
    home = definitions(state.after.get(rule.file, state.before.get(rule.file)))
    problems = [f"{name} is not defined in {rule.file}" for name in rule.names if name not in home]
    for path in _code_files(state):
        if path == rule.file:
            continue
        defined = set(definitions(state.after.get(path))) - set(definitions(state.before.get(path)))
        problems += [f"{name} defined in {path}" for name in rule.names if name in defined]
    return "; ".join(problems) or None


def _unannotated(node: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> list[str]:
    args = node.args
    every = args.posonlyargs + args.args + args.kwonlyargs
    every += [a for a in (args.vararg, args.kwarg) if a is not None]
    missing = [a.arg for a in every if a.annotation is None and a.arg not in ("self", "cls")]
    problems = [f"{name}: parameter {arg} has no type hint" for arg in missing]
    if node.returns is None and name.split(".")[-1] != "__init__":
        problems.append(f"{name}: no return type")
    return problems


def check_type_hints(state: FinalState, rule: TypeHints) -> str | None:
    missing = _missing(state, rule.require)
    if missing:
        return f"required {', '.join(missing)} missing: nothing to judge the hints on"
    problems = []
    for path in _code_files(state):
        for name, node in new_or_changed_functions(state, path).items():
            problems += _unannotated(node, name)
    return "; ".join(problems) or None


def check_naming(state: FinalState, rule: Naming) -> str | None:
    missing = _missing(state, rule.require)
    if missing:
        return f"required {', '.join(missing)} missing: nothing to judge the naming on"
    bad = [
        name
        for path in _code_files(state)
        for name in new_or_changed_functions(state, path)
        if not re.fullmatch(rule.pattern, name.split(".")[-1])
    ]
    return f"names not matching {rule.pattern!r}: {', '.join(bad)}" if bad else None


def _raised(node: ast.Raise) -> str | None:
    target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute):
        return target.attr
    return None


def check_error_style(state: FinalState, rule: ErrorStyle) -> str | None:
    wrong = []
    for path in _code_files(state):
        new_text = "\n".join(added_lines(state.before.get(path), state.after.get(path)))
        tree = parse(state.after.get(path))
        if tree is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Raise) and node.exc is not None:
                name = _raised(node)
                line = ast.get_source_segment(state.after.get(path) or "", node) or ""
                if name not in (None, rule.exception) and line and line in new_text:
                    wrong.append(f"{path}: raise {name}")
    return f"raises other than {rule.exception}: {', '.join(wrong)}" if wrong else None


def check_line_budget(state: FinalState, rule: LineBudget) -> str | None:
    count = modified_line_count(state)
    return f"{count} lines changed, budget {rule.max_lines}" if count > rule.max_lines else None


def check_no_print(state: FinalState, rule: NoPrint) -> str | None:
    found = [
        f"{path}: {line.strip()}"
        for path in _code_files(state)
        for line in added_lines(state.before.get(path), state.after.get(path))
        if re.search(r"\bprint\(", line)
    ]
    return f"print calls added: {'; '.join(found)}" if found else None


CHECKS = {
    "no_touch": check_no_touch,
    "keep_signatures": check_keep_signatures,
    "no_new_dependencies": check_no_new_dependencies,
    "stdlib_only": check_stdlib_only,
    "module": check_module,
    "type_hints": check_type_hints,
    "naming": check_naming,
    "error_style": check_error_style,
    "line_budget": check_line_budget,
    "no_print": check_no_print,
}


@register("instruction_following", InstructionParams)
def grade_instructions(
    task: PreparedTask, state: FinalState, records: Records, params: InstructionParams
) -> Score:
    if not changed_files(state):
        return Score(value=0.0, reasons=["no change made: no constraint was kept by doing work"])
    if state.resolved is False:
        return Score(value=0.0, reasons=["the change fails the hidden tests"])
    code = broken_python(state)
    if code:
        return Score(value=0.0, reasons=[f"the change breaks {', '.join(code)}"])
    broken = []
    for rule in params.constraints:
        problem = CHECKS[rule.kind](state, rule)  # type: ignore[operator]
        if problem:
            broken.append(f"{rule.kind}: {problem}")
    kept = len(params.constraints) - len(broken)
    return Score(value=round(kept / len(params.constraints), 4), reasons=broken)
