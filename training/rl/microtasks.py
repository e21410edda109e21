"""Micro-tasks: feature deletions small enough for a toy model to learn to fill.

Each task is a one-function module whose body was deleted (`raise NotImplementedError`
left in its place) and hidden tests that fail until it is restored: the harness's own task
format (`PreparedTask` with pytest `fail_to_pass` tests), plus the evals' `code_quality`
grader as a behaviour check, so an attempt's verdict carries an auxiliary score. The
reference fill of every task is one line, `return a <op> b`; which operator the prompt
asks for is what a policy has to learn.

Train and held-out tasks ask for the same operations in different words, so a held-out
score measures the mapping from the request to the code, not memorised prompts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.kinds.behaviour import BehaviourCheck, BehaviourVerification
from harness.kinds.both import BothVerification
from harness.kinds.pytest_kind import Verification
from harness.spec import Limits, PreparedTask

MODULE = "calc.py"
DELETED = "raise NotImplementedError"
SYSTEM_PROMPT = "Fill in the missing code in {root}."
TOOLS = ["edit_file"]
# operation -> (operator, hidden test cases (a, b))
OPERATIONS: dict[str, tuple[str, list[tuple[int, int]]]] = {
    "sum": ("+", [(2, 3), (-1, 7), (10, 0)]),
    "difference": ("-", [(9, 4), (1, 6), (0, 3)]),
    "product": ("*", [(3, 4), (-2, 5), (7, 7)]),
}
TRAIN_WORDING = "Make combine in calc.py return the {op} of a and b."
HELD_OUT_WORDING = "combine(a, b) in calc.py should give the {op} of a and b."


@dataclass(frozen=True)
class MicroTask:
    task: PreparedTask
    operation: str

    @property
    def reference(self) -> str:
        """The line that restores the deleted body."""
        return f"return a {OPERATIONS[self.operation][0]} b"


def _tests(operation: str) -> str:
    symbol, cases = OPERATIONS[operation]
    lines = ["from calc import combine", ""]
    for index, (a, b) in enumerate(cases):
        lines += [
            f"def test_case_{index}():",
            f"    assert combine({a}, {b}) == {a} {symbol} {b}",
            "",
        ]
    return "\n".join(lines)


def build_task(root: Path, operation: str, held_out: bool = False) -> MicroTask:
    """One task under `root/<id>`: workspace, hidden tests and the harness spec."""
    task_id = f"micro-{operation}{'-held' if held_out else ''}"
    folder = root / task_id
    workspace, hidden = folder / "workspace", folder / "hidden"
    (workspace / "tests").mkdir(parents=True, exist_ok=True)
    (hidden / "tests").mkdir(parents=True, exist_ok=True)
    (workspace / MODULE).write_text(f"def combine(a, b):\n    {DELETED}\n")
    (workspace / "tests" / "__init__.py").write_text("")
    (hidden / "tests" / f"test_{operation}.py").write_text(_tests(operation))
    node = f"tests/test_{operation}.py"
    cases = len(OPERATIONS[operation][1])
    pytest = Verification(
        test_args=[node],
        hidden_tests=[node],
        fail_to_pass=[f"{node}::test_case_{i}" for i in range(cases)],
    )
    verification = BothVerification(
        pytest=pytest,
        behaviour=BehaviourVerification(checks=[BehaviourCheck(grader="code_quality")]),
    )
    wording = HELD_OUT_WORDING if held_out else TRAIN_WORDING
    task = PreparedTask(
        id=task_id,
        prompt=wording.format(op=operation),
        workspace=workspace,
        hidden_dir=hidden,
        verification=verification,
        limits=Limits(max_turns=3, wall_time_s=120.0, test_timeout_s=60.0),
        system_prompt=SYSTEM_PROMPT,
        tools=TOOLS,
    )
    return MicroTask(task=task, operation=operation)


def micro_tasks(root: Path, held_out: bool = False) -> list[MicroTask]:
    """The train set (or the held-out set): one task per operation."""
    return [build_task(root, operation, held_out) for operation in OPERATIONS]
