"""The local sandbox: a copy of the workspace on this machine, commands under bubblewrap.

Each attempt gets its own folder holding `workspace/` (a copy of the prepared
workspace, the only place the agent can write) and `git/` (the baseline the
diff is taken against, hidden from the agent).
"""

from __future__ import annotations

import os
import shutil
import threading
from contextlib import nullcontext
from pathlib import Path

from harness.sandbox.baseline import Baseline
from harness.sandbox.confinement import Confinement, scrubbed_env
from harness.sandbox.process import Completed
from harness.sandbox.protocol import SandboxError

MAX_READ_BYTES = 2 * 1024 * 1024


def copy_tree(source: Path, target: Path) -> None:
    shutil.copytree(source, target, symlinks=True)


class LocalSandbox:
    def __init__(
        self,
        attempt_dir: Path,
        prepared_workspace: Path,
        confinement: Confinement,
        command_slots: threading.Semaphore | None = None,
    ) -> None:
        self.attempt_dir = attempt_dir
        self.workspace = attempt_dir / "workspace"
        self.confinement = confinement
        self._slots = command_slots
        if attempt_dir.exists():
            shutil.rmtree(attempt_dir)
        attempt_dir.mkdir(parents=True)
        copy_tree(prepared_workspace, self.workspace)
        self.baseline = Baseline(attempt_dir / "git", self.workspace)
        self.baseline.snapshot()
        self.home = Path("/tmp") if confinement.confined else attempt_dir / "home"
        self.home.mkdir(exist_ok=True)

    @property
    def root(self) -> str:
        return str(self.workspace)

    def run(self, command: str, timeout: float) -> Completed:
        with self._slots or nullcontext():
            return self.confinement.run(
                ["bash", "-c", command],
                cwd=self.workspace,
                writable=[self.workspace],
                env=scrubbed_env(self.home),
                timeout=timeout,
            )

    def resolve(self, path: str) -> Path:
        """A path inside the workspace, after following links; refuses anything else."""
        candidate = Path(path)
        if not candidate.is_absolute():
            candidate = self.workspace / candidate
        real = Path(os.path.realpath(candidate))
        root = Path(os.path.realpath(self.workspace))
        if real != root and root not in real.parents:
            raise SandboxError(f"{path}: outside the workspace {self.root}")
        return real

    def read(self, path: str) -> str:
        target = self.resolve(path)
        if not target.is_file():
            raise SandboxError(f"{path}: no such file")
        if target.stat().st_size > MAX_READ_BYTES:
            raise SandboxError(f"{path}: larger than {MAX_READ_BYTES} bytes; use `run` to inspect")
        return target.read_bytes().decode("utf-8", errors="replace")

    def write(self, path: str, text: str) -> None:
        target = self.resolve(path)
        if target.is_dir():
            raise SandboxError(f"{path}: is a directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    def diff(self) -> str:
        return self.baseline.diff()

    def close(self) -> None:
        shutil.rmtree(self.attempt_dir, ignore_errors=True)
