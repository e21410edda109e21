"""CursorBench: the task format, the bundled suite, building and validating tasks, the run
config and library entry point, the CLI.

What a user of the Python API imports is here:

```python
import cursorbench

outcome = cursorbench.run({"tasks": ["textkit-*"], "model": {"base_url": URL, "name": "m"}})
print(outcome.summary.resolved_rate)
```

- running: `run`, `prepare`, `RunSpec`, `load_spec`, `RunOutcome`;
- tasks: `Task`, `Category`, `Mutation`, `load_task`, `load_tasks`, `select_tasks`,
  `bundled_suite`, `build`, `BuiltTask`, `validate_task`;
- results: `AttemptResult`, `RunInfo`, `RunSummary`, `Status`, `Failure`, `Usage`;
- errors (each one line a user can act on): `CursorBenchError` and its kinds
  `ConfigError`, `SetupError`, `TaskFileError`, `BuildError`;
- the reference solver: `REFERENCE_SOLVER`, `ReferenceSolver`.

The names are imported when first used (`harness.lazy`): `import cursorbench.cli.app` for
`--help` does not load the runner, the model client or `openai`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import exports

if TYPE_CHECKING:
    from cursorbench.api import SetupError, prepare, run
    from cursorbench.config import RunSpec, load_spec
    from cursorbench.tasks.loader import (
        TaskFileError,
        bundled_suite,
        load_task,
        load_tasks,
        select_tasks,
    )
    from cursorbench.tasks.reference import REFERENCE_SOLVER, ReferenceSolver
    from cursorbench.tasks.task import Category, Mutation, Task
    from cursorbench.tasks.workspace import BuildError, BuiltTask, build
    from cursorbench.validation.validate import validate_task
    from harness.errors import ConfigError, CursorBenchError
    from harness.results import AttemptResult, Failure, RunInfo, Status, Usage
    from harness.run.runner import RunOutcome
    from harness.run.summary import RunSummary

_EXPORTS = {
    "SetupError": "cursorbench.api",
    "prepare": "cursorbench.api",
    "run": "cursorbench.api",
    "RunSpec": "cursorbench.config",
    "load_spec": "cursorbench.config",
    "TaskFileError": "cursorbench.tasks.loader",
    "bundled_suite": "cursorbench.tasks.loader",
    "load_task": "cursorbench.tasks.loader",
    "load_tasks": "cursorbench.tasks.loader",
    "select_tasks": "cursorbench.tasks.loader",
    "REFERENCE_SOLVER": "cursorbench.tasks.reference",
    "ReferenceSolver": "cursorbench.tasks.reference",
    "Category": "cursorbench.tasks.task",
    "Mutation": "cursorbench.tasks.task",
    "Task": "cursorbench.tasks.task",
    "validate_task": "cursorbench.validation.validate",
    "BuildError": "cursorbench.tasks.workspace",
    "BuiltTask": "cursorbench.tasks.workspace",
    "build": "cursorbench.tasks.workspace",
    "ConfigError": "harness.errors",
    "CursorBenchError": "harness.errors",
    "AttemptResult": "harness.results",
    "Failure": "harness.results",
    "RunInfo": "harness.results",
    "Status": "harness.results",
    "Usage": "harness.results",
    "RunOutcome": "harness.run.runner",
    "RunSummary": "harness.run.summary",
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
