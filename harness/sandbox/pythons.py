"""Where the interpreter lives, as a sandbox must see it: the running one's folders (or a
task's own environment's), the interpreter a sandboxed command starts, and the base
interpreter a task's environment is made from."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path


def python_bin_dir(env: Path | None = None) -> Path:
    """The running interpreter's folder, absolute and without `..`: `sys.executable` keeps the
    path it was started by (`../venv/bin/python`), which means nothing inside a sandbox. With
    a task's environment (`harness/envs.py`), that environment's `bin`."""
    if env is not None:
        return env / "bin"
    return Path(sys.executable).parent.resolve()


def sandbox_python(env: Path | None = None) -> str:
    """The interpreter a sandboxed command starts (see `python_bin_dir`): the running one, or
    the task's environment's."""
    if env is not None:
        return str(env / "bin" / "python")
    return str(python_bin_dir() / Path(sys.executable).name)


def with_sandbox_python(argv: Sequence[str], env: Path | None = None) -> list[str]:
    """`argv`, with the harness's own `sys.executable` (grading's `python -P -m pytest`) as
    `sandbox_python(env)` where it is the program started, also through `/usr/bin/env K=V`
    (a perturbed run's): a `..` in the path would walk through folders the sandbox lacks,
    and a task's environment replaces the harness's interpreter altogether."""
    command = list(argv)
    start = 1 if command[:1] == ["/usr/bin/env"] else 0
    while start and start < len(command) and "=" in command[start]:
        start += 1
    if start < len(command) and command[start] in (sys.executable, sandbox_python()):
        command[start] = sandbox_python(env)
    return command


def base_python() -> Path:
    """The base interpreter the running one was made from (the running one outside a venv)."""
    return Path(getattr(sys, "_base_executable", None) or sys.executable)


def python_paths(env: Path | None = None) -> list[Path]:
    """The running interpreter's environment: sandboxed commands need it, even under /tmp.
    With a task's environment, that environment and the base interpreter, never the
    harness's own venv."""
    if env is not None:
        paths = {env, Path(sys.base_prefix).resolve(), base_python().resolve().parent}
        return sorted(path for path in paths if path.is_dir())
    paths = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent}
    paths.add(python_bin_dir())
    return sorted(path for path in paths if path.is_dir())
