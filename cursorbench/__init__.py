"""CursorBench: the task format, the bundled suite, building and validating tasks, the CLI."""

from cursorbench.loader import TaskFileError, bundled_suite, load_task, load_tasks, select_tasks
from cursorbench.reference import REFERENCE_SOLVER, ReferenceSolver
from cursorbench.runs import RunRequest, start_run
from cursorbench.task import Category, Mutation, Task
from cursorbench.validate import validate_task
from cursorbench.workspace import BuildError, BuiltTask, build

__all__ = [
    "REFERENCE_SOLVER",
    "BuildError",
    "BuiltTask",
    "Category",
    "Mutation",
    "ReferenceSolver",
    "RunRequest",
    "Task",
    "TaskFileError",
    "build",
    "bundled_suite",
    "load_task",
    "load_tasks",
    "select_tasks",
    "start_run",
    "validate_task",
]
