"""CursorBench: the task format, the bundled suite, building and validating tasks, the run
config and library entry point, the CLI.

What a user of the Python API imports is here:

```python
import cursorbench

outcome = cursorbench.run({"tasks": ["textkit-*"], "model": {"base_url": URL, "name": "m"}})
print(outcome.summary["resolved_rate"])
```

- running: `run`, `prepare`, `RunSpec`, `load_spec`, `RunOutcome`;
- tasks: `Task`, `Category`, `Mutation`, `load_task`, `load_tasks`, `select_tasks`,
  `bundled_suite`, `build`, `BuiltTask`, `validate_task`;
- results: `AttemptResult`, `RunInfo`, `RunSummary`, `Status`, `Failure`, `Usage`;
- errors (each one line a user can act on): `CursorBenchError` and its kinds
  `ConfigError`, `SetupError`, `TaskFileError`, `BuildError`;
- the reference solver: `REFERENCE_SOLVER`, `ReferenceSolver`.

The names are imported when first used (`harness.lazy`): `import cursorbench.cli` for
`--help` does not load the runner, the model client or `openai`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import exports

if TYPE_CHECKING:
    from cursorbench.api import SetupError, prepare, run
    from cursorbench.config import RunSpec, load_spec
    from cursorbench.loader import (
        TaskFileError,
        bundled_suite,
        load_task,
        load_tasks,
        select_tasks,
    )
    from cursorbench.reference import REFERENCE_SOLVER, ReferenceSolver
    from cursorbench.task import Category, Mutation, Task
    from cursorbench.validate import validate_task
    from cursorbench.workspace import BuildError, BuiltTask, build
    from harness.errors import ConfigError, CursorBenchError
    from harness.results import AttemptResult, Failure, RunInfo, Status, Usage
    from harness.runner import RunOutcome
    from harness.summary import RunSummary

_EXPORTS = {
    "SetupError": "cursorbench.api",
    "prepare": "cursorbench.api",
    "run": "cursorbench.api",
    "RunSpec": "cursorbench.config",
    "load_spec": "cursorbench.config",
    "TaskFileError": "cursorbench.loader",
    "bundled_suite": "cursorbench.loader",
    "load_task": "cursorbench.loader",
    "load_tasks": "cursorbench.loader",
    "select_tasks": "cursorbench.loader",
    "REFERENCE_SOLVER": "cursorbench.reference",
    "ReferenceSolver": "cursorbench.reference",
    "Category": "cursorbench.task",
    "Mutation": "cursorbench.task",
    "Task": "cursorbench.task",
    "validate_task": "cursorbench.validate",
    "BuildError": "cursorbench.workspace",
    "BuiltTask": "cursorbench.workspace",
    "build": "cursorbench.workspace",
    "ConfigError": "harness.errors",
    "CursorBenchError": "harness.errors",
    "AttemptResult": "harness.results",
    "Failure": "harness.results",
    "RunInfo": "harness.results",
    "Status": "harness.results",
    "Usage": "harness.results",
    "RunOutcome": "harness.runner",
    "RunSummary": "harness.summary",
}
__getattr__, __dir__ = exports(__name__, _EXPORTS)

__all__ = [
    "REFERENCE_SOLVER",
    "AttemptResult",
    "BuildError",
    "BuiltTask",
    "Category",
    "ConfigError",
    "CursorBenchError",
    "Failure",
    "Mutation",
    "ReferenceSolver",
    "RunInfo",
    "RunOutcome",
    "RunSpec",
    "RunSummary",
    "SetupError",
    "Status",
    "Task",
    "TaskFileError",
    "Usage",
    "build",
    "bundled_suite",
    "load_spec",
    "load_task",
    "load_tasks",
    "prepare",
    "run",
    "select_tasks",
    "validate_task",
]
