"""The tests/ and solution/ of an exported task graded by CursorBench's own grading inside
Harbor's verifier container (kinds `answer` and `mutants`: harness_verifier.py).

tests/ holds: `test.sh`; the verifier; `lib/harness`, a copy of the `harness` package
(the image holds its Python environment, not the checkout); `prepared/`, the prepared
workspace (the change is taken against it); `hidden/`, the hidden files; `task.json`,
the prepared task (its verification, limits and restored functions). solution/ holds the
reference's files (`files/`) and the paths it deletes (`deleted.txt`): the kind's own
reference (an answer file made from the facts; the test files of a testing task).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from cursorbench.tasks.answer import reference_tree
from cursorbench.tasks.workspace import BuiltTask

VERIFIER_SOURCE = Path(__file__).with_name("harness_verifier.py")
HARNESS = Path(__file__).resolve().parents[2] / "harness"
SKIPPED = shutil.ignore_patterns("__pycache__", "*.pyc")


def write_harness_tests(built: BuiltTask, folder: Path, image: str, python: str) -> None:
    folder.mkdir()
    shutil.copytree(HARNESS, folder / "lib" / "harness", ignore=SKIPPED)
    shutil.copytree(built.workspace, folder / "prepared", symlinks=True)
    if built.hidden.exists():
        shutil.copytree(built.hidden, folder / "hidden", symlinks=True)
    else:
        (folder / "hidden").mkdir()
    prepared = built.prepared().model_dump(mode="json")
    for host_only in ("workspace", "hidden_dir", "secret_paths", "python_env"):  # none here
        prepared.pop(host_only, None)
    (folder / "task.json").write_text(json.dumps(prepared, indent=1) + "\n")
    shutil.copy2(VERIFIER_SOURCE, folder / "cursorbench_harness_verifier.py")
    (folder / "Dockerfile").write_text(
        "# The verifier's own image: the same base, with these files at /tests only.\n"
        f"FROM {image}\nCOPY . /tests/\nWORKDIR /workspace\n",
        encoding="utf-8",
    )
    script = folder / "test.sh"
    script.write_text(
        "#!/bin/bash\n"
        "# Grades /workspace (the agent's) with CursorBench's own grading (lib/harness);\n"
        "# writes /logs/verifier/reward.txt (1 resolved, 0 not) and outcomes.json.\n"
        f"exec {python} -P /tests/cursorbench_harness_verifier.py\n",
        encoding="utf-8",
    )
    script.chmod(0o755)


def write_tree_solution(built: BuiltTask, folder: Path) -> None:
    """The reference as files to copy in and paths to delete (kinds whose reference is
    not the reverse of the mutation)."""
    (folder / "files").mkdir(parents=True)
    deleted = []
    for path, text in reference_tree(built).items():
        if text is None:
            deleted.append(path)
            continue
        (folder / "files" / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / "files" / path).write_text(text, encoding="utf-8")
    (folder / "deleted.txt").write_text("".join(f"{path}\n" for path in deleted))
    script = folder / "solve.sh"
    script.write_text(
        "#!/bin/bash\n"
        "# The reference solution: its files copied in, the files it deletes removed.\n"
        "set -euo pipefail\n"
        "cd /workspace\n"
        "cp -R /solution/files/. /workspace/\n"
        'while IFS= read -r path; do rm -f -- "$path"; done < /solution/deleted.txt\n',
        encoding="utf-8",
    )
    script.chmod(0o755)
