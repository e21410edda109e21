"""Sandboxes: where agent commands and grading runs happen."""

from harness.sandbox.confinement import (
    UNCONFINED_WARNING,
    Confinement,
    SandboxUnavailable,
    choose_backend,
)
from harness.sandbox.local import LocalSandbox
from harness.sandbox.process import Completed, run_process
from harness.sandbox.protocol import Sandbox, SandboxError

__all__ = [
    "UNCONFINED_WARNING",
    "Completed",
    "Confinement",
    "LocalSandbox",
    "Sandbox",
    "SandboxError",
    "SandboxUnavailable",
    "choose_backend",
    "run_process",
]
