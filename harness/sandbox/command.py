"""One command for a sandbox to run: the single value every backend's `execute` takes.

Grading, validation, the agent's tools and the workspace's own file service all describe
what to run as a `Command`; each backend decides how (a fresh namespace, its command
server, a container's). A field added here reaches every backend at once, and the
contract suite (`tests/harness/sandbox/test_sandbox_contract.py`) checks each field on
each of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from harness.sandbox.process import KEEP_BYTES, MAX_OUTPUT_BYTES

Decoding = Literal["replace", "surrogateescape"]


@dataclass(frozen=True)
class Command:
    """`argv`, run in the sandbox's workspace (its `root`) under the sandbox's limits.

    - `timeout`: seconds before the command (and all it started) is killed;
    - `stdin`: bytes fed to it (else it reads nothing);
    - `read_only`: the workspace is read-only to it (grading's pytest);
    - `report`: REPORT_PLACEHOLDER in argv names an append-only path whose bytes come back
      as `Completed.report`;
    - `env`: added to the sandbox's scrubbed environment;
    - `output_cap`: the whole output is kept up to that many bytes and the command is
      killed beyond it (else the head and tail of the default limits are kept);
    - `baseline`: the baseline git folder is shown (read-only) for the harness's own diff;
    - `errors`: how output bytes are decoded ("surrogateescape" keeps every byte).
    """

    argv: Sequence[str]
    timeout: float
    stdin: bytes | None = None
    read_only: bool = False
    report: bool = False
    env: Mapping[str, str] = field(default_factory=dict)
    output_cap: int | None = None
    baseline: bool = False
    errors: Decoding = "replace"

    def __post_init__(self) -> None:
        # Copies, so that the caller's list or dict cannot change a command once made.
        object.__setattr__(self, "argv", tuple(self.argv))
        object.__setattr__(self, "env", dict(self.env))

    @classmethod
    def shell(cls, line: str, timeout: float, env: Mapping[str, str] | None = None) -> Command:
        """A bash command line (an agent's `run` tool)."""
        return cls(["bash", "-c", line], timeout=timeout, env=env or {})

    def with_argv(self, argv: Sequence[str]) -> Command:
        """This command with `argv` in place of its own."""
        return replace(self, argv=tuple(argv))

    @property
    def keep_bytes(self) -> int:
        """How much output is kept (head and tail)."""
        return KEEP_BYTES if self.output_cap is None else self.output_cap

    @property
    def max_output_bytes(self) -> int:
        """The output past which the command is killed."""
        return MAX_OUTPUT_BYTES if self.output_cap is None else self.output_cap
