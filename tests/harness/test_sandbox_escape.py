"""Escapes a root agent would try first: capabilities, remounting, giant files."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.sandbox import Confinement
from harness.sandbox.confinement import bubblewrap_works, scrubbed_env

pytestmark = pytest.mark.skipif(not bubblewrap_works(), reason="bubblewrap cannot run here")


def run(confinement: Confinement, command: str, workspace: Path) -> str:
    done = confinement.run(
        ["bash", "-c", command],
        cwd=workspace,
        writable=[workspace],
        env=scrubbed_env(Path("/tmp")),
        timeout=30,
    )
    return done.output


def test_commands_run_without_capabilities(tmp_path: Path) -> None:
    output = run(Confinement("bubblewrap"), "grep CapEff /proc/self/status", tmp_path)
    assert output.split() == ["CapEff:", "0000000000000000"]


@pytest.mark.parametrize("target", ["/usr", sys.prefix])
def test_read_only_mounts_cannot_be_remounted_writable(tmp_path: Path, target: str) -> None:
    marker = Path(target) / f"cursorbench-escape-{tmp_path.name}"
    command = f"mount -o remount,bind,rw {target}; touch {marker}; echo rc=$?"
    output = run(Confinement("bubblewrap"), command, tmp_path)
    try:
        assert "rc=1" in output and "Read-only file system" in output, output
        assert not marker.exists()
    finally:
        marker.unlink(missing_ok=True)


def test_a_file_cannot_grow_past_the_limit(tmp_path: Path) -> None:
    confinement = Confinement("bubblewrap", max_file_bytes=1 << 20)
    command = "head -c 3000000 /dev/zero > big; echo rc=$?; ulimit -f unlimited; echo raise=$?"
    output = run(confinement, command, tmp_path)
    assert "rc=0" not in output and "raise=1" in output, output
    assert (tmp_path / "big").stat().st_size <= 1 << 20
