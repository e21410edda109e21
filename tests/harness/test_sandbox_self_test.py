"""The sandbox checks itself before a run: Python and pytest must be reachable inside."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest

from harness.sandbox import Confinement, SandboxUnavailable
from harness.sandbox.confinement import bubblewrap_works, bwrap_prefix, python_paths

needs_bwrap = pytest.mark.skipif(not bubblewrap_works(), reason="bubblewrap cannot run here")


@needs_bwrap
def test_a_working_sandbox_passes(tmp_path: Path) -> None:
    Confinement("bubblewrap").self_test(tmp_path / "scratch")


@needs_bwrap
def test_hiding_the_interpreter_fails_loudly_in_one_line(tmp_path: Path) -> None:
    hidden = (Path(sys.executable).resolve().parent,)
    with pytest.raises(SandboxUnavailable, match="cannot run Python here") as error:
        Confinement("bubblewrap", hidden=hidden).self_test(tmp_path / "scratch")
    assert "\n" not in str(error.value)


def test_a_python_environment_under_tmp_is_mounted_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "prefix", "/tmp")  # as in a checkout cloned under /tmp
    assert Path("/tmp") in python_paths()
    args = bwrap_prefix(cwd=Path("/"), writable=[], hidden=[])
    pairs = list(itertools.pairwise(args))
    private_tmp = pairs.index(("--tmpfs", "/tmp"))
    assert ("--ro-bind", "/tmp") in pairs[private_tmp:]
