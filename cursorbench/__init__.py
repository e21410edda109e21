"""CursorBench: the task format, the bundled suite, building and validating tasks, the run
config and library entry point (`cursorbench.api.run`), the CLI."""

from cursorbench.api import SetupError, prepare, run
from cursorbench.config import RunSpec, load_spec
from cursorbench.loader import TaskFileError, bundled_suite, load_task, load_tasks, select_tasks
from cursorbench.reference import REFERENCE_SOLVER, ReferenceSolver
from cursorbench.task import Category, Mutation, Task
from cursorbench.validate import validate_task
from cursorbench.workspace import BuildError, BuiltTask, build
from harness.errors import CursorBenchError

__all__ = [
    "REFERENCE_SOLVER",
    "BuildError",
    "BuiltTask",
    "Category",
    "CursorBenchError",
    "Mutation",
    "ReferenceSolver",
    "RunSpec",
    "SetupError",
    "Task",
    "TaskFileError",
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
