"""Sandboxes: where agent commands and grading runs happen (see `protocol.py`).

The names below are imported when first used (`harness.lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import exports

if TYPE_CHECKING:
    from harness.sandbox.bubblewrap import UNCONFINED_WARNING, bubblewrap_works
    from harness.sandbox.command import Command
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
    from harness.sandbox.ready import Ready, open_ready
    from harness.sandbox.registry import BACKENDS, choose_backend, open_backend

_EXPORTS = {
    "UNCONFINED_WARNING": "harness.sandbox.bubblewrap",
    "bubblewrap_works": "harness.sandbox.bubblewrap",
    "LocalBackend": "harness.sandbox.local",
    "LocalSandbox": "harness.sandbox.local",
    "SandboxSettings": "harness.sandbox.local",
    "Command": "harness.sandbox.command",
    "Completed": "harness.sandbox.process",
    "run_process": "harness.sandbox.process",
    "PatchRejected": "harness.sandbox.protocol",
    "ResourceLimitExceeded": "harness.sandbox.protocol",
    "Sandbox": "harness.sandbox.protocol",
    "SandboxBackend": "harness.sandbox.protocol",
    "SandboxError": "harness.sandbox.protocol",
    "SandboxUnavailable": "harness.sandbox.protocol",
    "Ready": "harness.sandbox.ready",
    "open_ready": "harness.sandbox.ready",
    "BACKENDS": "harness.sandbox.registry",
    "choose_backend": "harness.sandbox.registry",
    "open_backend": "harness.sandbox.registry",
}
__getattr__, __dir__ = exports(__name__, _EXPORTS)

__all__ = [
    "BACKENDS",
    "UNCONFINED_WARNING",
    "Command",
    "Completed",
    "LocalBackend",
    "LocalSandbox",
    "PatchRejected",
    "Ready",
    "ResourceLimitExceeded",
    "Sandbox",
    "SandboxBackend",
    "SandboxError",
    "SandboxSettings",
    "SandboxUnavailable",
    "bubblewrap_works",
    "choose_backend",
    "open_backend",
    "open_ready",
    "run_process",
]
