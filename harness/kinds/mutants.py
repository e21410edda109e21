"""The `mutants` kind, a testing task: the agent's tests against hidden mutants of the code.

1. Only the agent's test files cross (`agent_change`: the task's `test_files` globs,
   never a conftest, never a link out of the workspace); the rest of the change is
   dropped and listed. The code under test is always the task's own.
2. Each variant of the code runs the agent's tests in a fresh sandbox, the change
   applied inside, pytest run read-only with its JUnit report through the pipe (the
   grading run of `harness/kinds/testrun.py`):
   - `original`: the workspace's code; every test must pass, at least `min_tests`;
   - `equivalent`: the same code compiled with a behaviour-preserving change (an unused
     local, a random name and value, at a random place in each function), so tests
     that fingerprint the bytecode or the compiled file instead of the behaviour fail;
   - one per mutant: killed when any test fails or errors, the run times out or reaches
     a resource limit (memory, processes, disk), or it writes no report.
3. Every variant is presented identically: the `.py` files on disk are the original
   text in every run, and the variant's code runs from a compiled file laid beside
   them (`__pycache__`, an unchecked hash-based pyc, which Python loads without
   comparing it to the source). Reading, hashing or parsing the source tells a test
   nothing about which variant runs, so a test can only kill a mutant through what
   the code does, or through its compiled code, which the equivalent control catches.
4. `judge_mutants` turns the runs into a verdict: a pure function. Resolved when
   both controls pass and at least `min_kill_share` of the mutants are killed.

Not covered: a test that reads the compiled code and normalises the equivalent change
away (strips unused stores) before comparing it with the original's; the change's
random name, value and place raise the cost but cannot close the class.
"""

from __future__ import annotations

import ast
import marshal
import random
import shutil
import time
from importlib.util import MAGIC_NUMBER, cache_from_source, source_hash
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field, model_validator

from harness.grading.blame import harness_step
from harness.grading.junit import ReportError, parse_junit_report
from harness.kinds.base import DEFAULT_PROTECTED_PATHS, FileKindDefaults, Files, Frozen, KindExample
from harness.kinds.testrun import (
    EMPTY_CONFIG,
    PYTEST_ENV,
    GradeReport,
    pytest_argv,
    pytest_config,
)
from harness.patch import (
    PatchFormatError,
    glob_regex,
    is_protected,
    link_leaves_workspace,
    split_patch,
)
from harness.pyast import parse_module
from harness.results import Failure, Score, TestOutcome
from harness.sandbox.command import Command
from harness.sandbox.process import Completed
from harness.sandbox.protocol import PatchRejected, ResourceLimitExceeded, SandboxBackend

if TYPE_CHECKING:
    from harness.spec import PreparedTask

ORIGINAL, EQUIVALENT = "original", "equivalent"
REWRITTEN = "equivalent (compiled differently, same behaviour)"
MUTATION_SCORE = "mutation_score"
NEVER_CROSSES = ["**/conftest.py"]


class Mutant(Frozen):
    """One hidden mutant: `old` replaced by `new` (exactly one occurrence) in `file`."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    file: str = Field(min_length=1)
    old: str = Field(min_length=1)
    new: str


class MutantsVerification(Frozen):
    """The agent writes tests; graded by the hidden mutants they kill.

    Only the agent's test files cross into grading; they must pass on the workspace's own
    code and on a behaviour-preserving rewrite of it, and fail on at least
    `min_kill_share` of the mutants."""

    kind: Literal["mutants"] = "mutants"
    test_files: list[str] = Field(
        default_factory=lambda: ["tests/**/test_*.py"],
        description="Globs of the test files the agent writes; nothing else of the change is used.",
    )
    mutants: list[Mutant] = Field(min_length=1)
    min_kill_share: float = Field(default=0.8, gt=0, le=1)
    min_tests: int = Field(default=3, ge=1, description="Agent tests that must pass unmutated.")

    @model_validator(mode="after")
    def _unique_ids(self) -> MutantsVerification:
        ids = [mutant.id for mutant in self.mutants]
        if len(ids) != len(set(ids)):
            raise ValueError("mutant ids must be unique")
        return self

    @property
    def hidden_tests(self) -> list[str]:
        return []  # the deleted tests are the reference answer, not hidden tests

    @property
    def protected_paths(self) -> list[str]:
        return list(DEFAULT_PROTECTED_PATHS)


def agent_change(patch: str, check: MutantsVerification) -> tuple[str, list[str], list[str]]:
    """(the patch of the agent's test files, the test files it leaves, what was dropped)."""
    allowed = [glob_regex(pattern) for pattern in check.test_files]
    kept: list[str] = []
    tests: list[str] = []
    dropped: list[str] = []
    for change in split_patch(patch):
        target = change.link_target
        if (
            not any(regex.fullmatch(change.path) for regex in allowed)
            or is_protected(change.path, NEVER_CROSSES, set())
            or change.new_mode == "120000"
            or (target is not None and link_leaves_workspace(change.path, target))
        ):
            dropped.append(change.path)
            continue
        kept.append(change.text)
        if not change.deleted and change.path.endswith(".py"):
            tests.append(change.path)
    return "".join(kept), sorted(tests), dropped


def apply_mutant(text: str, old: str, new: str) -> str:
    count = text.count(old)
    if count != 1:
        raise ValueError(f"mutant text occurs {count} times, not once")
    return text.replace(old, new)


class _AddUnusedLocal(ast.NodeTransformer):
    """Each function's body gets an unused assignment at a random place (after its
    docstring), on the line of the statement it precedes: line numbers stay the same."""

    def __init__(self, name: str, rng: random.Random) -> None:
        self.name = name
        self.rng = rng

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        self.generic_visit(node)
        first = node.body[0] if node.body else None
        has_doc = (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        )
        start = 1 if has_doc else 0
        place = self.rng.randint(start, max(start, len(node.body) - 1))
        anchor = node.body[min(place, len(node.body) - 1)]
        line, column = anchor.lineno, anchor.col_offset  # no line number moves
        value = ast.Constant(self.rng.randint(0, 2**31), lineno=line, col_offset=column,
                             end_lineno=line, end_col_offset=column)  # fmt: skip
        target = ast.Name(self.name, ast.Store(), lineno=line, col_offset=column,
                          end_lineno=line, end_col_offset=column)  # fmt: skip
        assign = ast.Assign(targets=[target], value=value, lineno=line, col_offset=column,
                            end_lineno=line, end_col_offset=column)  # fmt: skip
        node.body.insert(place, assign)
        return node

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function


def unused_name(rng: random.Random) -> str:
    return "_" + "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(10))


def equivalent_tree(text: str, rng: random.Random) -> ast.Module:
    """The same module, behaving the same, compiling to other bytecode (same line numbers)."""
    return _AddUnusedLocal(unused_name(rng), rng).visit(parse_module(text))


def compiled(path: str, code: str | ast.Module, source: str) -> tuple[str, bytes]:
    """(where Python looks for `path`'s compiled file, that file holding `code`): an
    unchecked hash-based pyc, loaded without comparing it to `source` on disk."""
    compiled_code = compile(code, path, "exec", dont_inherit=True)
    header = MAGIC_NUMBER + (0b01).to_bytes(4, "little") + source_hash(source.encode("utf-8"))
    return cache_from_source(path), header + marshal.dumps(compiled_code)


def variants(
    check: MutantsVerification, workspace: Path, rng: random.Random
) -> dict[str, dict[str, bytes]]:
    """Files laid over the workspace per variant: each mutated file's compiled code (the
    `.py` files stay the original text). Made from the trusted prepared workspace."""
    files = sorted({mutant.file for mutant in check.mutants})
    texts = {path: (workspace / path).read_text(encoding="utf-8") for path in files}

    def laid(code: dict[str, str | ast.Module]) -> dict[str, bytes]:
        return dict(compiled(path, code.get(path, texts[path]), texts[path]) for path in files)

    found = {
        ORIGINAL: laid({}),
        EQUIVALENT: laid({path: equivalent_tree(text, rng) for path, text in texts.items()}),
    }
    for mutant in check.mutants:
        mutated = apply_mutant(texts[mutant.file], mutant.old, mutant.new)
        found[mutant.id] = laid({mutant.file: mutated})
    return found


def run_variant(
    task: PreparedTask,
    backend: SandboxBackend,
    scratch: Path,
    files: dict[str, bytes],
    patch: str,
    test_paths: list[str],
) -> Completed:
    shutil.rmtree(scratch, ignore_errors=True)
    overlay = scratch / "overlay"
    overlay.mkdir(parents=True)
    for path, data in files.items():
        (overlay / path).parent.mkdir(parents=True, exist_ok=True)
        (overlay / path).write_bytes(data)
    config = pytest_config(task.workspace)
    if config is None:
        (overlay / EMPTY_CONFIG).write_text("[pytest]\n")
    sandbox = backend.open(
        task.workspace,
        scratch / "sandbox",
        overlay,
        track_changes=False,
        python_env=task.python_env,
    )
    try:
        sandbox.apply_patch(patch)
        argv = pytest_argv(test_paths, sandbox.root, f"{sandbox.root}/{config or EMPTY_CONFIG}")
        timeout = task.limits.test_timeout_s
        return sandbox.execute(
            Command(argv, timeout=timeout, read_only=True, report=True, env=PYTEST_ENV)
        )
    finally:
        sandbox.close()
        shutil.rmtree(overlay, ignore_errors=True)


def _outcomes(done: Completed) -> dict[str, TestOutcome] | None:
    """Outcome per `classname::name`, or None when there is no readable report."""
    try:
        report = parse_junit_report(done.report or b"")
    except ReportError:
        return None
    if not report:
        return None
    return {f"{classname}::{name}": outcome for (classname, name), outcome in report.items()}


def _control_problem(label: str, done: Completed, minimum: int) -> str | None:
    outcomes = _outcomes(done)
    if done.timed_out:
        return f"the tests ran past the time limit on the {label} code"
    if outcomes is None:
        return f"the tests wrote no readable report on the {label} code"
    bad = [name for name, o in outcomes.items() if o in (TestOutcome.FAILED, TestOutcome.ERROR)]
    if bad:
        return f"{len(bad)} tests fail on the {label} code, e.g. {bad[0]}"
    passed = sum(o is TestOutcome.PASSED for o in outcomes.values())
    if passed < minimum:
        return f"only {passed} tests pass on the {label} code (need {minimum})"
    return None


def killed(done: Completed) -> bool:
    if done.timed_out:
        return True
    outcomes = _outcomes(done)
    if outcomes is None:
        return True
    return any(o in (TestOutcome.FAILED, TestOutcome.ERROR) for o in outcomes.values())


def judge_mutants(
    check: MutantsVerification, runs: dict[str, Completed]
) -> tuple[bool, Failure | None, dict[str, TestOutcome], Score, str | None]:
    """(resolved, failure, outcomes, mutation score, error) from the variants' runs: pure.

    Outcomes hold the agent's tests on the original code and one `mutant:ID` per mutant
    (passed: killed)."""
    tests: dict[str, TestOutcome] = dict(_outcomes(runs[ORIGINAL]) or {})
    survivors = []
    for mutant in check.mutants:
        dead = killed(runs[mutant.id])
        tests[f"mutant:{mutant.id}"] = TestOutcome.PASSED if dead else TestOutcome.FAILED
        if not dead:
            survivors.append(mutant.id)
    share = 1 - len(survivors) / len(check.mutants)
    reasons = [f"mutant {name} survived" for name in survivors]
    problem = _control_problem("original", runs[ORIGINAL], check.min_tests)
    problem = problem or _control_problem(REWRITTEN, runs[EQUIVALENT], 1)
    if problem is not None:
        score = Score(value=0.0, reasons=[problem, *reasons])
        return False, Failure.TESTS_FAILED, tests, score, problem
    score = Score(value=share, reasons=reasons)
    if share + 1e-9 < check.min_kill_share:
        error = f"the tests kill {share:.0%} of the mutants (need {check.min_kill_share:.0%})"
        return False, Failure.TESTS_FAILED, tests, score, error
    return True, None, tests, score, None


def _run_or_limit(
    name: str,
    task: PreparedTask,
    backend: SandboxBackend,
    scratch: Path,
    files: dict[str, bytes],
    patch: str,
    test_paths: list[str],
) -> Completed:
    """A variant's run; a mutant whose run reached a resource limit (its code exhausts
    memory, say, where the original's does not) is killed, as one that runs past the time
    limit is. On a control the limit is the tests' own: raised."""
    try:
        return run_variant(task, backend, scratch, files, patch, test_paths)
    except ResourceLimitExceeded as limit:
        if name in (ORIGINAL, EQUIVALENT):
            raise
        return Completed(None, f"the run reached a resource limit: {limit}", 0.0)


def grade_mutants(
    task: PreparedTask,
    check: MutantsVerification,
    patch: str,
    backend: SandboxBackend,
    scratch: Path,
    rng: random.Random,
) -> dict:
    """Runs every variant; the fields of a `GradeReport`."""
    started = time.monotonic()
    try:
        change, test_paths, dropped = agent_change(patch, check)
    except PatchFormatError as unreadable:
        return {"failure": Failure.PATCH_REJECTED, "error": f"unreadable change: {unreadable}"}
    if not test_paths:
        error = "the change adds no test file matching " + ", ".join(check.test_files)
        return {"failure": Failure.TESTS_FAILED, "error": error, "dropped": dropped}
    with harness_step("the task's mutants"):
        laid = variants(check, task.workspace, rng)
    runs: dict[str, Completed] = {}
    try:
        for name, files in laid.items():
            runs[name] = _run_or_limit(
                name, task, backend, scratch / name, files, change, test_paths
            )
            minimum = check.min_tests if name == ORIGINAL else 1
            if name in (ORIGINAL, EQUIVALENT) and _control_problem(name, runs[name], minimum):
                break  # a control failed: the mutants cannot change the verdict
    except PatchRejected as rejected:
        return {"failure": Failure.PATCH_REJECTED, "error": str(rejected), "dropped": dropped}
    except ResourceLimitExceeded as limit:
        return {"failure": Failure.RESOURCE_LIMIT, "error": str(limit), "dropped": dropped}
    if len(runs) < len(check.mutants) + 2:
        problem = _control_problem(ORIGINAL, runs[ORIGINAL], check.min_tests)
        if problem is None:
            problem = _control_problem(REWRITTEN, runs[EQUIVALENT], 1)
        tests = dict(_outcomes(runs[ORIGINAL]) or {})
        return {
            "failure": Failure.TESTS_FAILED, "error": problem, "dropped": dropped,
            "tests": tests, "output": runs[ORIGINAL].output,
            "scores": {MUTATION_SCORE: Score(value=0.0, reasons=[str(problem)])},
        }  # fmt: skip
    resolved, failure, tests, score, verdict_error = judge_mutants(check, runs)
    return {
        "resolved": resolved, "failure": failure, "tests": tests, "error": verdict_error,
        "dropped": dropped, "output": runs[ORIGINAL].output,
        "scores": {MUTATION_SCORE: score}, "duration_s": time.monotonic() - started,
    }  # fmt: skip


class MutantsKind(FileKindDefaults):
    name = "mutants"
    model = MutantsVerification

    def grade(
        self,
        task: PreparedTask,
        check: MutantsVerification,
        patch: str,
        backend: SandboxBackend,
        scratch: Path,
        rng: random.Random,
    ) -> GradeReport | None:
        started = time.monotonic()
        fields = grade_mutants(task, check, patch, backend, scratch, rng)
        report = GradeReport(**({"resolved": False, "failure": None} | fields))
        report.duration_s = time.monotonic() - started
        return report

    def reference_files(self, check: MutantsVerification, workspace: Path) -> Files | None:
        return None  # the deleted tests

    def stub_files(self, check: MutantsVerification) -> Files | None:
        return None

    def solver_test_args(self, check: MutantsVerification, written: list[str]) -> list[str]:
        globs = [glob_regex(pattern) for pattern in check.test_files]
        return [path for path in written if any(g.fullmatch(path) for g in globs)]

    def reference_problems(self, check: MutantsVerification, report: GradeReport) -> list[str]:
        survivors = sorted(
            name
            for name, outcome in report.tests.items()
            if name.startswith("mutant:") and outcome is not TestOutcome.PASSED
        )
        return [f"mutants the reference tests do not kill: {survivors}"] if survivors else []

    def example(self) -> KindExample:
        code = "def clamp(x, low, high):\n    return max(low, min(x, high))\n"
        tests = "".join(
            f"\n\ndef test_{n}():\n    assert clamp({x}, 0, 10) == {want}\n"
            for n, x, want in [("inside", 5, 5), ("low", -3, 0), ("high", 12, 10)]
        )
        weak = "".join(  # pass on every mutant: they kill none
            f"\n\ndef test_{n}():\n    assert clamp({x}, 0, 10) == {x}\n"
            for n, x in [("a", 5), ("b", 7)]
        )
        cheat = (  # kills every mutant by its text; it would resolve the stub if it crossed
            "import inspect\nimport calc\n\n"
            "if 'return max(low, min(x, high))' not in inspect.getsource(calc):\n"
            "    raise SystemExit(1)\n"
        )
        return KindExample(
            workspace={"pytest.ini": "[pytest]\npythonpath = .\n", "calc.py": code},
            hidden={},
            verification=MutantsVerification(
                min_tests=2,
                mutants=[
                    Mutant(id="no-high", file="calc.py", old="min(x, high)", new="x"),
                    Mutant(id="no-low", file="calc.py", old="max(low, ", new="(0 or "),
                ],
            ),
            reference={"tests/test_calc.py": "from calc import clamp" + tests},
            stub={"tests/test_calc.py": "from calc import clamp" + weak},
            tamper={"tests/conftest.py": cheat},
        )
