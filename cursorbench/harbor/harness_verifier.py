"""The verifier of an exported task whose verdict is not a pytest run over the tree (kinds
`answer` and `mutants`): CursorBench's own grading, run inside Harbor's verifier container.

Copied verbatim into the task's tests/ folder beside a copy of the `harness` package
(`tests/lib/harness`, run on the image's Python environment, which is the harness's),
the prepared workspace (`tests/prepared`), the hidden files (`tests/hidden`) and the
prepared task (`tests/task.json`). It takes the agent's change as CursorBench does, as a
patch (the prepared workspace against /workspace, by git), and grades it with
`harness.grading.grade.grade` on the `subprocess` backend: Harbor's verifier container is the
sandbox. It writes the reward (1 or 0) to /logs/verifier/reward.txt and each test's
outcome to /logs/verifier/outcomes.json.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path

TESTS = Path(os.environ.get("CURSORBENCH_TESTS", "/tests"))
WORKSPACE = Path(os.environ.get("CURSORBENCH_WORKSPACE", "/workspace"))
LOGS = Path(os.environ.get("CURSORBENCH_LOGS", "/logs/verifier"))


def main() -> int:
    sys.path.insert(0, str(TESTS / "lib"))
    scratch = Path(tempfile.mkdtemp(prefix="cursorbench-verifier-"))
    os.environ.setdefault("CURSORBENCH_HOME", str(scratch / "home"))
    from harness.grading.grade import grade
    from harness.sandbox import SandboxSettings, open_backend
    from harness.sandbox.baseline import Baseline
    from harness.spec import PreparedTask

    data = json.loads((TESTS / "task.json").read_text())
    data |= {"workspace": str(TESTS / "prepared"), "hidden_dir": str(TESTS / "hidden")}
    task = PreparedTask.model_validate(data | {"secret_paths": []})
    LOGS.mkdir(parents=True, exist_ok=True)
    try:
        Baseline(scratch / "git", task.workspace).snapshot()
        patch = Baseline(scratch / "git", WORKSPACE).diff()
        backend = open_backend("subprocess", SandboxSettings())
        report = grade(task, patch, backend, scratch / "grade", random.Random())
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    outcomes = {
        "resolved": report.resolved,
        "failure": report.failure.value if report.failure else None,
        "error": report.error,
        "tests": {node: outcome.value for node, outcome in report.tests.items()},
        "scores": {name: score.value for name, score in report.scores.items()},
    }
    (LOGS / "outcomes.json").write_text(json.dumps(outcomes))
    (LOGS / "grade.txt").write_text(report.output)
    (LOGS / "reward.txt").write_text("1\n" if report.resolved else "0\n")
    print(report.output[-4000:])
    print(f"cursorbench: {'resolved' if report.resolved else 'failed'} {report.error or ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
