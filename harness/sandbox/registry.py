"""Sandbox backends by name: `auto`, `bubblewrap`, `subprocess`, `docker`.

A new backend is one module with a factory added to `BACKENDS`; the contract
tests in `tests/harness/sandbox/test_sandbox_contract.py` pin what it must do.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.sandbox.bubblewrap import (
    BubblewrapJail,
    UnconfinedJail,
    bubblewrap_problem,
)
from harness.sandbox.local import LocalBackend, SandboxSettings
from harness.sandbox.protocol import Sandbox, SandboxBackend, SandboxUnavailable


def bubblewrap_backend(settings: SandboxSettings) -> SandboxBackend:
    problem = bubblewrap_problem()
    if problem is not None:
        raise SandboxUnavailable(f"bubblewrap cannot run here: {problem}")
    jail = BubblewrapJail(settings.hidden, settings.limits.file_bytes)
    return LocalBackend(jail, settings)


def subprocess_backend(settings: SandboxSettings) -> SandboxBackend:
    return LocalBackend(UnconfinedJail(settings.hidden, settings.limits.file_bytes), settings)


def docker_backend(settings: SandboxSettings) -> SandboxBackend:
    from harness.sandbox.docker_backend import DockerBackend  # the `docker` SDK: optional

    return DockerBackend(settings)


BACKENDS: dict[str, Callable[[SandboxSettings], SandboxBackend]] = {
    "bubblewrap": bubblewrap_backend,
    "subprocess": subprocess_backend,
    "docker": docker_backend,
}


def choose_backend(requested: str) -> str:
    """'auto' is bubblewrap, and refuses (one line) where bubblewrap cannot run: it never
    falls back to running unconfined. Naming a backend insists on it; `subprocess` is the
    explicit opt-in to unconfined runs."""
    if requested == "auto":
        problem = bubblewrap_problem()
        if problem is None:
            return "bubblewrap"
        raise SandboxUnavailable(
            f"--sandbox auto: bubblewrap cannot run here ({problem}); install bubblewrap, use "
            "--sandbox docker, or --sandbox subprocess to run unconfined (the run is recorded "
            "as unconfined and never ranked beside confined runs)"
        )
    if requested not in BACKENDS:
        known = ", ".join(["auto", *BACKENDS])
        raise SandboxUnavailable(f"unknown sandbox backend {requested!r} (choose from {known})")
    return requested


class EnvBackend:
    """`inner`, whose sandboxes show a task's environment (`harness/envs.py`) unless the
    caller names one: for code that runs a task's trees without the task at hand."""

    def __init__(self, inner: SandboxBackend, python_env: Path) -> None:
        self._inner = inner
        self.python_env = python_env
        self.name = inner.name
        self.confined = inner.confined

    def open(
        self,
        workspace: Path,
        scratch: Path,
        overlay: Path | None = None,
        track_changes: bool = True,
        python_env: Path | None = None,
    ) -> Sandbox:
        env = python_env or self.python_env
        return self._inner.open(workspace, scratch, overlay, track_changes, python_env=env)

    def self_test(self, scratch: Path) -> None:
        self._inner.self_test(scratch)

    def __getattr__(self, name: str) -> object:  # backend-specific extras pass through
        return getattr(self._inner, name)


def with_python_env(backend: SandboxBackend, python_env: Path | None) -> SandboxBackend:
    """`backend` showing `python_env` in every sandbox (itself when None)."""
    return backend if python_env is None else EnvBackend(backend, python_env)


def open_backend(requested: str, settings: SandboxSettings | None = None) -> SandboxBackend:
    """The backend named (or chosen by 'auto'), ready to open sandboxes."""
    return BACKENDS[choose_backend(requested)](settings or SandboxSettings())
