"""Micro-tasks: feature deletions small enough for a toy model to learn to fill.

Each task is a harness task file (`cursorbench.tasks.task.Task`, the suite's own format) over a
one-function repository whose body the feature-deletion builder replaces with
`raise NotImplementedError`; hidden tests fail until it is restored, and the evals'
`code_quality` grader runs as a behaviour check, so a verdict carries an auxiliary score.
The reference fill is one line, `return a <op> b`; which operator the request asks for is
what a policy has to learn.

`write_micro_tasks` writes the task files: one per operation and wording, the train set in
six wordings and the held-out set in two others, never trained on, so a held-out score
measures the mapping from request to code, not memorised prompts. (With one train wording,
RL fitted that one context: the operator rose on both wordings, but on the held-out one,
never seen in RL, the reply format broke: `benchmarks/RESULTS.md`.) `build_micro_tasks`
builds them with the suite's builder into `PreparedTask`s, the same objects an evaluation
attempts. The gate scores a checkpoint on the held-out task
files through `cursorbench.api.run` like any suite.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from cursorbench.tasks.loader import load_task
from cursorbench.tasks.workspace import build
from harness.spec import PreparedTask

MODULE = "calc.py"
DELETED = "raise NotImplementedError"
# operation -> (operator, hidden test cases (a, b))
OPERATIONS: dict[str, tuple[str, list[tuple[int, int]]]] = {
    "sum": ("+", [(2, 3), (-1, 7), (10, 0)]),
    "difference": ("-", [(9, 4), (1, 6), (0, 3)]),
    "product": ("*", [(3, 4), (-2, 5), (7, 7)]),
}
TRAIN_WORDINGS = (
    "Make combine in calc.py return the {op} of a and b.",
    "Implement combine in calc.py so that it returns the {op} of a and b.",
    "combine in calc.py raises NotImplementedError; it should return the {op} of a and b.",
    "Please fill in combine(a, b) in calc.py: it computes the {op} of its two arguments.",
    "Finish calc.py: combine needs to give back the {op} of a and b.",
    "The tests expect combine(a, b) from calc.py to be the {op} of a and b. Fix it.",
)
HELD_OUT_WORDINGS = (
    "combine(a, b) in calc.py should give the {op} of a and b.",
    "Write the body of combine in calc.py; it returns the {op} of both numbers.",
)


def wordings(held_out: bool) -> tuple[str, ...]:
    return HELD_OUT_WORDINGS if held_out else TRAIN_WORDINGS


@dataclass(frozen=True)
class MicroTask:
    task: PreparedTask
    operation: str
    wording: int  # its index in `wordings(held_out)`

    @property
    def reference(self) -> str:
        """The line that restores the deleted body."""
        return f"return a {OPERATIONS[self.operation][0]} b"


def _tests(operation: str) -> str:
    symbol, cases = OPERATIONS[operation]
    lines = ["from calc import combine", ""]
    for index, (a, b) in enumerate(cases):
        check = f"    assert combine({a}, {b}) == {a} {symbol} {b}"
        lines += [f"def test_case_{index}():", check, ""]
    return "\n".join(lines)


def _repo(root: Path, operation: str) -> Path:
    repo = root / "repos" / operation
    (repo / "tests").mkdir(parents=True, exist_ok=True)
    symbol = OPERATIONS[operation][0]
    (repo / MODULE).write_text(f"def combine(a, b):\n    return a {symbol} b\n")
    (repo / "tests" / "__init__.py").write_text("")
    (repo / "tests" / "test_calc.py").write_text(_tests(operation))
    return repo


def task_id(operation: str, held_out: bool, wording: int) -> str:
    return f"micro-{operation}{'-held' if held_out else ''}-{wording}"


def _operations(operations: list[str] | None) -> list[str]:
    chosen = list(OPERATIONS) if operations is None else list(operations)
    unknown = sorted(set(chosen) - set(OPERATIONS))
    if unknown or not chosen:
        raise ValueError(f"operations {unknown or chosen}: choose from {', '.join(OPERATIONS)}")
    return chosen


def _chosen(operations: list[str] | None, held_out: bool) -> list[tuple[str, tuple[int, str]]]:
    return [(op, w) for op in _operations(operations) for w in enumerate(wordings(held_out))]


def write_micro_tasks(
    root: Path, held_out: bool = False, operations: list[str] | None = None
) -> list[Path]:
    """Task files (one per operation and wording; all three operations unless `operations`
    names some) under `root/tasks`, operation by operation; their repositories beside them."""
    (root / "tasks").mkdir(parents=True, exist_ok=True)
    paths = []
    for operation, (index, wording) in _chosen(operations, held_out):
        symbol, cases = OPERATIONS[operation]
        _repo(root, operation)
        node = "tests/test_calc.py"
        spec = {
            "id": task_id(operation, held_out, index),
            "suite_version": "micro-0.2",
            "category": "new_feature",
            "prompt": wording.format(op=operation),
            "source": {"kind": "folder", "path": f"../repos/{operation}"},
            "mutation": {
                "kind": "feature_deletion",
                "operations": [
                    {
                        "op": "replace_text",
                        "file": MODULE,
                        "old": f"return a {symbol} b",
                        "new": DELETED,
                    }
                ],
            },
            "verification": {
                "test_args": [node],
                "hidden_tests": [node],
                "fail_to_pass": [f"{node}::test_case_{i}" for i in range(len(cases))],
            },
            "limits": {"max_turns": 3, "wall_time_s": 120, "test_timeout_s": 60},
            "behaviour_checks": ["code_quality"],
        }
        path = root / "tasks" / f"{spec['id']}.yaml"
        path.write_text(yaml.safe_dump(spec, sort_keys=False))
        paths.append(path)
    return paths


def build_micro_tasks(
    root: Path, held_out: bool = False, operations: list[str] | None = None
) -> list[MicroTask]:
    """The train set (or the held-out set), built by the suite's builder."""
    built = []
    chosen = _chosen(operations, held_out)
    paths = write_micro_tasks(root, held_out, operations)
    for path, (operation, (index, _)) in zip(paths, chosen, strict=True):
        built.append(MicroTask(build(load_task(path)).prepared(), operation, index))
    return built
