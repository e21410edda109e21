"""The `harbor` source: a Harbor task folder (`--tasks harbor:DIR`, read by
`harbor_folder.py`). The workspace is what its environment copies in; its own verifier
(`tests/`, the `harbor` verification kind) and solution (`solution/solve.sh`) decide and
solve, so its tasks have no mutation."""

from __future__ import annotations

import base64
import io
import shlex
import shutil
import tarfile
import uuid
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from cursorbench.tasks.sources.base import SourceExample, SourceLocation, SourceSpec
from cursorbench.tasks.sources.harbor_folder import PREFIX, read_location
from harness.kinds.harbor_kind import HarborVerification, rewrite_file
from harness.model.openai_server import Reply
from harness.sandbox.image import IMAGE_REPOSITORY
from harness.trees import copy_source, tree_digest

if TYPE_CHECKING:
    from cursorbench.tasks.task import Task
    from cursorbench.tasks.workspace import BuiltTask

SOLUTION_HOME = "/tmp/cursorbench-harbor-solution"


class HarborSource(SourceSpec):
    """A Harbor task folder: the workspace is what its environment copies in; its own
    verifier (`tests/`) and solution decide and solve, so it has no mutation."""

    kind: Literal["harbor"] = "harbor"
    path: str = Field(description="The Harbor task folder (absolute).")
    workspace: str = Field(description="The folder its Dockerfile copies in, relative to it.")


class HarborTaskSource:
    name = "harbor"
    model = HarborSource
    mutated = False
    own_verification = "harbor"
    takes_environment = False  # its environment is its Dockerfile's
    location = SourceLocation(prefix=PREFIX, what="Harbor task folder", read=read_location)

    def tree(self, spec: HarborSource, task: Task, cache: Path) -> Path:
        return Path(spec.path) / spec.workspace

    def digest(self, spec: HarborSource, task: Task) -> str:
        return tree_digest(Path(spec.path))  # the whole task folder: tests, solution too

    def secret_paths(self, spec: HarborSource, task: Task) -> list[Path]:
        return [Path(spec.path)]  # its verifier and its solution lie there

    def build_into(self, spec: HarborSource, task: Task, tree: Path, staging: Path) -> None:
        """workspace/ (the environment's copied folder), hidden/ (its tests/), solution/,
        original/ (the workspace: the reference's tree is not known before solve.sh runs)
        and an empty reference.patch. No leak scan: no answer text is known."""
        folder = Path(spec.path)
        if tree.is_dir():
            copy_source(tree, staging / "workspace")
        else:
            (staging / "workspace").mkdir(parents=True)
        shutil.copytree(folder / "tests", staging / "hidden", symlinks=True)
        if (folder / "solution").is_dir():
            shutil.copytree(folder / "solution", staging / "solution", symlinks=True)
        shutil.copytree(staging / "workspace", staging / "original", symlinks=True)
        (staging / "reference.patch").write_text("")

    def solution_steps(self, spec: HarborSource, built: BuiltTask) -> list[Reply]:
        """One `run` that lays the task's solution/ in a scratch folder (`/solution`
        rewritten to it; the workdir to the sandbox's) and runs its solve.sh; then `finish`.
        Only the solver knows the solution: it is never in the agent's sandbox otherwise."""
        check = built.task.verification
        assert isinstance(check, HarborVerification)
        solution = built.root / "solution"
        summary = f"Ran the Harbor solution of {built.task.id}."
        if not (solution / "solve.sh").is_file():
            return [Reply(content="No solution.", tool_calls=[("finish", {"summary": "none"})])]
        home = f"{SOLUTION_HOME}-{uuid.uuid4().hex[:12]}"
        command = solve_command(solution, check.workdir, home)
        return [
            Reply(content="Running the solution.", tool_calls=[("run", {"command": command})]),
            Reply(content=summary, tool_calls=[("finish", {"summary": summary})]),
        ]

    def distribution(self, spec: HarborSource) -> None:
        return None

    def package_name(self, spec: HarborSource) -> str:
        return Path(spec.path).name

    def label(self, spec: HarborSource) -> str:
        return f"harbor:{Path(spec.path).name}"

    def example(self, root: Path, cache: Path) -> SourceExample:
        """A Harbor task of the shape Harbor's own have (workdir /app): write add()."""
        folder = root / "harbor-task"
        for path, text in EXAMPLE_FILES.items():
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_text(text, encoding="utf-8")
        source = {"kind": "harbor", "path": str(folder), "workspace": "environment/app"}
        return SourceExample(
            {"source": source, "verification": {"kind": "harbor", "workdir": "/app"}}
        )


EXAMPLE_FILES = {
    "task.toml": 'schema_version = "1.4"\n\n[verifier]\ntimeout_sec = 90.0\n',
    "instruction.md": "Write add(a, b) in calc.py.\n",
    "environment/Dockerfile": f"FROM {IMAGE_REPOSITORY}:any\nWORKDIR /app\nCOPY app/ /app/\n",
    "environment/app/calc.py": "def add(a, b):\n    return 0\n",
    "tests/test.sh": (
        "#!/bin/bash\ncd /app\n"
        "if python -c 'import sys; from calc import add; sys.exit(add(2, 3) != 5)'; then\n"
        "    echo 1 > /logs/verifier/reward.txt\nelse\n    echo 0 > /logs/verifier/reward.txt\nfi\n"
    ),
    "solution/solve.sh": "#!/bin/bash\ncp /solution/calc.py /app/calc.py\n",
    "solution/calc.py": "def add(a, b):\n    return a + b\n",
}

UNPACK = (
    "import base64, io, sys, tarfile, zlib; "
    "data = zlib.decompress(base64.b64decode(sys.stdin.read())); "
    "tarfile.open(fileobj=io.BytesIO(data), mode='r:').extractall(sys.argv[1])"
)


def solve_command(solution: Path, workdir: str, home: str) -> str:
    """A shell command (for the `run` tool) that unpacks `solution` at `home` and runs it."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for path in sorted(solution.rglob("*")):
            info = archive.gettarinfo(str(path), arcname=path.relative_to(solution).as_posix())
            if path.is_file() and not path.is_symlink():
                data = rewrite_file(path.read_bytes(), {"/solution": home})
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
            else:
                archive.addfile(info)
    packed = base64.b64encode(zlib.compress(buffer.getvalue(), 9)).decode("ascii")
    at, there = shlex.quote(home), shlex.quote(workdir)
    swap = (
        f'if [ "$PWD" != {there} ]; then grep -rlF -- {there} {at} | '
        f'xargs -r sed -i "s#{workdir}#$PWD#g"; fi'
    )
    return (
        f"mkdir -p {at} && python -c {shlex.quote(UNPACK)} {at} <<'CURSORBENCH_EOF'\n{packed}\n"
        f"CURSORBENCH_EOF\n{swap}\nbash {at}/solve.sh; status=$?; rm -rf {at}; exit $status"
    )
