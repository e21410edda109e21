"""`open_ready`: the one way a run, a worker or a tool gets a backend to use."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.sandbox import UNCONFINED_WARNING, SandboxUnavailable, bubblewrap_works, open_ready
from harness.sandbox.limits import OOM_SCORE_HARNESS
from harness.sandbox.local import LocalBackend
from harness.sandbox.registry import EnvBackend


def test_subprocess_is_opened_self_tested_and_says_it_is_unconfined(tmp_path: Path) -> None:
    backend, warnings = open_ready("subprocess", self_test_in=tmp_path / "self-test")
    assert backend.name == "subprocess" and not backend.confined
    assert warnings == [UNCONFINED_WARNING]


@pytest.mark.skipif(not bubblewrap_works(), reason="bubblewrap cannot run here")
def test_a_confined_backend_protects_the_harness_and_never_says_unconfined(
    tmp_path: Path,
) -> None:
    backend, warnings = open_ready("auto", self_test_in=tmp_path / "self-test")
    assert backend.name == "bubblewrap" and UNCONFINED_WARNING not in warnings
    score = int(Path("/proc/self/oom_score_adj").read_text())
    assert score <= OOM_SCORE_HARNESS or score == 0  # 0: not permitted here (not root)


def test_a_task_environment_is_shown_in_every_sandbox(tmp_path: Path) -> None:
    env = tmp_path / "env"
    backend, _ = open_ready("subprocess", python_env=env, self_test_in=tmp_path / "self-test")
    assert isinstance(backend, EnvBackend) and backend.python_env == env


def test_an_unknown_backend_is_refused_in_one_line() -> None:
    with pytest.raises(SandboxUnavailable, match="unknown sandbox backend 'nope'"):
        open_ready("nope")


def test_a_backend_whose_self_test_fails_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: LocalBackend, scratch: Path) -> None:
        raise SandboxUnavailable("python does not start in it")

    monkeypatch.setattr(LocalBackend, "self_test", broken)
    with pytest.raises(SandboxUnavailable, match="does not start"):
        open_ready("subprocess", self_test_in=tmp_path / "self-test")
