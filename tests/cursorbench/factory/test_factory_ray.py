"""`tasks propose --executor ray`: candidates measured as Ray tasks on a local cluster
propose exactly the tasks that local processes do (cursorbench/factory/schedule.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli_runner import cursorbench
from tests.cursorbench.factory_pkg import place_wordkit

pytest.importorskip("ray")  # in the `dev` extra: CI always has it
CLI = [sys.executable, "-m", "cursorbench.cli.app"]


def proposed(out: Path) -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted((out / "tasks").glob("*.yaml"))}


@pytest.mark.slow
@pytest.mark.exclusive  # a local Ray cluster wants the machine to itself (tests/conftest.py)
def test_ray_measures_the_same_tasks_as_local_processes(tmp_path: Path) -> None:
    place_wordkit()
    runs = {
        "local": ["--jobs", "2"],
        "ray": ["--executor", "ray", "--jobs", "2"],
    }
    for name, extra in runs.items():
        out = tmp_path / name
        argv = ["tasks", "propose", "wordkit==0.3", "--out", str(out),
                "--kind", "deletion", "--max", "1", *extra]  # fmt: skip
        if name == "local":  # in this process (tests/cli_runner.py): no Ray driver in it
            done: Any = cursorbench(*argv)
        else:  # Ray's driver in a process of its own, stopped with it
            done = subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stdout + done.stderr
    local, ray = (json.loads((tmp_path / n / "proposals.json").read_text()) for n in runs)
    assert ray["executor"] == "ray" and local["executor"] == "local"
    assert ray["measured_now"] == local["measured_now"] > 0
    assert ray["proposed_by_kind"] == local["proposed_by_kind"]
    assert proposed(tmp_path / "ray") == proposed(tmp_path / "local") != {}


def test_an_unknown_executor_is_a_one_line_error(tmp_path: Path) -> None:
    done = cursorbench("tasks", "propose", "wordkit==0.3", "--out", str(tmp_path), "--executor",
                       "spark")  # fmt: skip
    assert done.returncode == 2 and "--executor 'spark': give local or ray" in done.stdout
