"""Sandboxes: where agent commands and grading runs happen (see `protocol.py`)."""

from harness.sandbox.bubblewrap import UNCONFINED_WARNING, bubblewrap_works
from harness.sandbox.local import LocalBackend, LocalSandbox, SandboxSettings
from harness.sandbox.process import Completed, run_process
from harness.sandbox.protocol import (
    PatchRejected,
    ResourceLimitExceeded,
    Sandbox,
    SandboxBackend,
    SandboxError,
    SandboxUnavailable,
)
from harness.sandbox.registry import BACKENDS, choose_backend, open_backend

__all__ = [
    "BACKENDS",
    "UNCONFINED_WARNING",
    "Completed",
    "LocalBackend",
    "LocalSandbox",
    "PatchRejected",
    "ResourceLimitExceeded",
    "Sandbox",
    "SandboxBackend",
    "SandboxError",
    "SandboxSettings",
    "SandboxUnavailable",
    "bubblewrap_works",
    "choose_backend",
    "open_backend",
    "run_process",
]
