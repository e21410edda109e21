"""Harbor's own tools for the interop tests: the pinned environment scripts/harbor.sh makes
(outside the checkout, under ~/.cache/cursorbench, which sandboxes hide), run by subprocess.

Building it the first time downloads Harbor from PyPI (a minute); without Python 3.12 or the
network the tests that need it are skipped, saying why.
"""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "harbor.sh"


@functools.cache
def _venv() -> Path | str:
    done = subprocess.run(
        [str(SCRIPT), "--ensure"], capture_output=True, text=True, timeout=900, check=False
    )
    if done.returncode != 0:
        return f"the Harbor environment could not be built: {done.stderr.strip()[-300:]}"
    return Path(done.stdout.strip().splitlines()[-1])


def harbor_python() -> Path:
    """The Python of the Harbor environment (the test is skipped when it cannot be built)."""
    venv = _venv()
    if isinstance(venv, str):
        pytest.skip(venv)
    return venv / "bin" / "python"


def harbor(*args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    """Harbor's own CLI (`harbor ARGS...`)."""
    command = [str(harbor_python().parent / "harbor"), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)


VALIDATE = """
import json, sys
from harbor.utils.trajectory_validator import TrajectoryValidator
report = {}
for path in sys.argv[1:]:
    validator = TrajectoryValidator()
    report[path] = [] if validator.validate(path) else validator.get_errors()
print(json.dumps(report))
"""


def validate_trajectories(paths: list[Path]) -> dict[str, list[str]]:
    """Harbor's ATIF validator on each file: path -> its errors ([] when valid)."""
    done = subprocess.run(
        [str(harbor_python()), "-c", VALIDATE, *map(str, paths)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
