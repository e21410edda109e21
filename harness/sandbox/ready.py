"""Opening a sandbox backend ready to use: the one way a run, a worker or a tool gets one.

`open_ready` opens the backend named (`registry.open_backend`), sets up this process's
protections (the OOM killer takes a sandbox's processes before the harness; cgroups left
by killed runs are swept), says what this machine cannot enforce, and runs the backend's
self-test, so that a backend that cannot run Python with pytest fails here, in one line,
rather than in every attempt.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from harness.home import self_test_folder
from harness.sandbox.bubblewrap import UNCONFINED_WARNING
from harness.sandbox.cmdgroups import KILL_FALLBACK_WARNING, sweep_stale_cgroups
from harness.sandbox.cmdgroups import unavailable_reason as command_groups_unavailable_reason
from harness.sandbox.limits import cgroups_unavailable_reason, protect_harness
from harness.sandbox.local import SandboxSettings
from harness.sandbox.protocol import SandboxBackend
from harness.sandbox.registry import open_backend, with_python_env


class Ready(NamedTuple):
    """A self-tested backend, and what it cannot enforce on this machine (for the user)."""

    backend: SandboxBackend
    warnings: list[str]


def open_ready(
    requested: str,
    settings: SandboxSettings | None = None,
    *,
    python_env: Path | None = None,
    self_test_in: Path | None = None,
) -> Ready:
    """The backend named (or chosen by 'auto'), protected and self-tested (in `self_test_in`,
    else this process's own folder), showing `python_env` in every sandbox where given.
    Raises `SandboxUnavailable` (one line) where it cannot run here."""
    backend = open_backend(requested, settings)
    protect()
    warnings = shortfalls(backend)
    backend.self_test(self_test_in or self_test_folder())
    return Ready(with_python_env(backend, python_env), warnings)


def protect() -> None:
    """This process's protections while it runs sandboxes."""
    protect_harness()  # the OOM killer takes a sandbox's processes first, never the harness
    sweep_stale_cgroups()  # left by runs killed before they could close their sandboxes


def shortfalls(backend: SandboxBackend) -> list[str]:
    """What `backend` cannot enforce here, one warning each."""
    if not backend.confined:
        return [UNCONFINED_WARNING]
    warnings = []
    if reason := cgroups_unavailable_reason():
        warnings.append(f"no memory, process or disk limits per attempt: {reason}")
    if reason := command_groups_unavailable_reason():
        warnings.append(f"{KILL_FALLBACK_WARNING}: {reason}")
    return warnings
