"""A task's own environment (`harness/envs.py`): how long making one takes, cold (a fresh
build cache: the runner's wheels packed, the venv made, pip run) and warm (found made), and
what it changes in a bubblewrap sandbox's start (open, one `python -c 'import pytest'`,
close), grading's and an agent's. Offline: the one requirement is a wheel made here.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/task_envs.py [--repeats 8]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from harness.sandbox.command import Command


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=8)
    repeats = parser.parse_args().repeats
    cache = Path(tempfile.mkdtemp(prefix="cursorbench-envbench-"))
    os.environ["CURSORBENCH_BUILD_CACHE"] = str(cache)
    os.environ["CURSORBENCH_HOME"] = str(cache / "home")
    from tests.harness.test_envs import make_wheel

    wheels = cache / "wheels"
    wheels.mkdir()
    make_wheel(wheels, "cbdep", {"cbdep.py": "def times(a, b):\n    return a * b\n"}, [])
    os.environ |= {"PIP_FIND_LINKS": str(wheels), "PIP_NO_INDEX": "1"}
    from harness import envs
    from harness.sandbox import SandboxSettings, open_backend

    started = time.perf_counter()
    env = envs.ensure_environment(["cbdep==1.0"])
    cold = time.perf_counter() - started
    warm = []
    for _ in range(repeats):
        started = time.perf_counter()
        envs.ensure_environment(["cbdep==1.0"])
        warm.append(time.perf_counter() - started)
    print(f"environment: cold {cold:.2f} s, warm median {statistics.median(warm) * 1000:.1f} ms")
    backend = open_backend("bubblewrap", SandboxSettings())
    workspace = cache / "workspace"
    workspace.mkdir()
    for track in (False, True):
        for label, python_env in (("harness venv", None), ("task environment", env)):
            times = []
            for number in range(repeats):
                started = time.perf_counter()
                box = backend.open(
                    workspace, cache / f"box{number}", track_changes=track, python_env=python_env
                )
                done = box.execute(Command([sys.executable, "-c", "import pytest"], timeout=60))
                box.close()
                if done.exit_code != 0:
                    raise SystemExit(done.output)
                times.append(time.perf_counter() - started)
            who = "agent" if track else "grading"
            median = statistics.median(times) * 1000
            print(f"{who} sandbox, {label}: median {median:.0f} ms (n={repeats})")


if __name__ == "__main__":
    main()
