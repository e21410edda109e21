"""Whose fault an exception is while an attempt is judged: one rule at the judge boundary.

Judging turns what the agent produced (its change, what its code wrote in a grading run,
its answer file, its final files) into a verdict. Agent output can be anything, so the
rule is not a list of exceptions that hostile output is known to raise:

- the harness marks its own steps where they happen: a sandbox that does not start or
  cannot run a command (`GuardedBackend`), a trusted task file that is missing or wrong
  (`harness_step`). What fails there is a `HarnessFault`: `error/infra_error`, which
  `--retry-errors` runs again;
- `PatchRejected` and `ResourceLimitExceeded` keep their types (the sandbox's own word
  that the agent caused them);
- any other exception while judging (`judging`) is the agent's: `failed/unjudgeable`,
  the exception summarised in the error. It is never a free re-roll, and it is kept apart
  from `tests_failed` so that a judge's own bug stays visible in the results.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from harness.results import Failure
from harness.sandbox.command import Command
from harness.sandbox.process import Completed
from harness.sandbox.protocol import (
    PatchRejected,
    ResourceLimitExceeded,
    Sandbox,
    SandboxBackend,
    SandboxError,
)

T = TypeVar("T")
AGENT_CAUSED: dict[type[Exception], Failure] = {
    PatchRejected: Failure.PATCH_REJECTED,
    ResourceLimitExceeded: Failure.RESOURCE_LIMIT,
}


class HarnessFault(Exception):
    """The harness's own step failed (sandbox start, a trusted file): not the agent's doing."""


def summary(error: BaseException, limit: int = 300) -> str:
    """`Type: first line of the message`, cut to `limit` characters; never raises."""
    try:
        text = str(error)
    except Exception:  # a message that cannot even be printed says nothing more
        text = ""
    first = text.strip().splitlines()[0] if text.strip() else ""
    line = f"{type(error).__name__}: {first}" if first else type(error).__name__
    return line[:limit]


@contextmanager
def harness_step(what: str) -> Iterator[None]:
    """A step of the harness's own (reading a trusted file, starting a sandbox): whatever
    fails inside is a `HarnessFault`, except what the sandbox says the agent caused."""
    try:
        yield
    except (HarnessFault, PatchRejected, ResourceLimitExceeded):
        raise
    except Exception as error:
        raise HarnessFault(f"{what}: {summary(error)}") from error


def judging(judge: Callable[[], T], verdict: Callable[[Failure, str], T]) -> T:
    """`judge()`, with the rule applied: a `HarnessFault` is raised on (an error), the
    sandbox's agent-caused exceptions become their failures, and any other exception is the
    agent's `unjudgeable`, built by `verdict(failure, message)`."""
    try:
        return judge()
    except HarnessFault:
        raise
    except (PatchRejected, ResourceLimitExceeded) as caused:
        return verdict(AGENT_CAUSED[type(caused)], str(caused) or type(caused).__name__)
    except Exception as error:
        return verdict(Failure.UNJUDGEABLE, "its output broke the judge: " + summary(error))


class GuardedSandbox:
    """A sandbox whose own failures are `HarnessFault`s. `read` and `write` keep their
    `SandboxError` (a file the agent left missing, huge or odd: the caller's answer)."""

    def __init__(self, inner: Sandbox) -> None:
        self._inner = inner

    @property
    def root(self) -> str:
        return self._inner.root

    def run(self, command: str, timeout: float) -> Completed:
        with harness_step("the sandbox could not run a command"):
            return self._inner.run(command, timeout)

    def execute(self, command: Command) -> Completed:
        with harness_step("the sandbox could not run a command"):
            return self._inner.execute(command)

    def read(self, path: str) -> str:
        return self._file_step(lambda: self._inner.read(path))

    def write(self, path: str, text: str) -> None:
        self._file_step(lambda: self._inner.write(path, text))

    def apply_patch(self, patch: str) -> None:
        with harness_step("the sandbox could not apply the change"):
            self._inner.apply_patch(patch)

    def diff(self) -> str:
        with harness_step("the sandbox could not take the change"):
            return self._inner.diff()

    def limit_hit(self) -> str | None:
        with harness_step("the sandbox could not report its limits"):
            return self._inner.limit_hit()

    def close(self) -> None:
        with harness_step("the sandbox did not close"):
            self._inner.close()

    def _file_step(self, step: Callable[[], T]) -> T:
        try:
            return step()
        except SandboxError:
            raise
        except (HarnessFault, PatchRejected, ResourceLimitExceeded):
            raise
        except Exception as error:
            raise HarnessFault(f"the sandbox could not reach a file: {summary(error)}") from error


class GuardedBackend:
    """A backend whose sandboxes are guarded, and whose failure to open one is a
    `HarnessFault` (what grading and the end of an attempt use)."""

    def __init__(self, inner: SandboxBackend) -> None:
        self._inner = inner
        self.name = inner.name
        self.confined = inner.confined

    def open(
        self,
        workspace: Path,
        scratch: Path,
        overlay: Path | None = None,
        track_changes: bool = True,
        python_env: Path | None = None,
    ) -> GuardedSandbox:
        with harness_step(f"the {self.name} sandbox did not start"):
            inner = self._inner.open(
                workspace, scratch, overlay, track_changes, python_env=python_env
            )
            return GuardedSandbox(inner)

    def self_test(self, scratch: Path) -> None:
        self._inner.self_test(scratch)

    def __getattr__(self, name: str) -> object:  # backend-specific extras pass through
        return getattr(self._inner, name)


def guarded(backend: SandboxBackend) -> SandboxBackend:
    """`backend` with the rule's harness side marked (idempotent)."""
    return backend if isinstance(backend, GuardedBackend) else GuardedBackend(backend)
