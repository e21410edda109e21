"""A task's own Python environment: its package's test dependencies, apart from the harness's.

A task with an `environment` (`cursorbench/tasks/task.py`) is run, by the agent and by grading
alike, in a virtual environment of its own instead of the harness's: made from the
harness's *base* interpreter (`python -m venv --without-pip`), filled by the harness's pip
(`pip --python ENV/bin/python install ...`) with the task's pinned requirements and the
harness's own test runner (pytest and coverage at the versions the harness runs). The
runner is installed from wheels packed from the harness's installed copies
(`runner_wheels`, with `--no-index`); the requirements come from wherever pip is told
(its own configuration: `PIP_INDEX_URL`, `PIP_FIND_LINKS`, `PIP_NO_INDEX`, ...).

Each environment is made once, under the build cache at `envs/KEY`, KEY a content hash of
the requirements, the runner's versions, the base interpreter and `ENV_FORMAT`
(`home.build_once`: concurrent builders take turns). What pip resolved is written beside
it (`RESOLVED`, one `name==version` a line). A sandbox shows the folder read-only at its
own path (`harness/sandbox/`), so scripts' `#!` lines, written for the staging folder,
are set to it before it is renamed into place.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

from packaging.requirements import Requirement

from harness.errors import CursorBenchError
from harness.home import build_cache, build_once
from harness.sandbox.pythons import base_python

ENV_FORMAT = "1"  # bump when what an environment holds, or how it is made, changes
RUNNER = ("pytest", "coverage")  # always installed, at the harness's own versions
RESOLVED = "resolved.txt"
REQUESTED = "requirements.txt"
PIP_TIMEOUT_S = 900
SKIPPED_META = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}


class EnvironmentFailed(CursorBenchError, RuntimeError):
    """A task's environment cannot be made or used (one line)."""


def canonical(name: str) -> str:
    """A distribution name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def runner_pins() -> list[str]:
    """The harness's test runner as requirements: `pytest==X`, `coverage==Y`."""
    return [f"{name}=={importlib.metadata.version(name)}" for name in RUNNER]


def base_version() -> str:
    return ".".join(map(str, sys.version_info[:3]))


def environment_key(requirements: Sequence[str]) -> str:
    """The content hash naming an environment (see the module's docstring)."""
    parts = [ENV_FORMAT, sorted(requirements), runner_pins(), base_version(), str(base_python())]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:20]


def environment_path(requirements: Sequence[str]) -> Path:
    """Where the environment of `requirements` is (or will be) kept."""
    return (build_cache() / "envs" / environment_key(requirements)).resolve()


def ensure_environment(requirements: Sequence[str]) -> Path:
    """The environment of `requirements`, made now unless it is made already."""
    root = environment_path(requirements)
    wheels = runner_wheels()

    def fill(staging: Path) -> None:
        _make(staging, root, list(requirements), wheels)

    build_once(root, environment_key(requirements), fill)
    return root


def resolved(env: Path) -> dict[str, str]:
    """What an environment holds: canonical distribution name -> version."""
    found = {}
    for line in (env / RESOLVED).read_text(encoding="utf-8").splitlines():
        name, _, version = line.partition("==")
        found[canonical(name)] = version
    return found


def refuse_package(env: Path, package: str) -> None:
    """Raises unless `package` is absent from the environment: a task's environment that
    holds the task's own package (pulled in by a dependency) would hold the answer."""
    version = resolved(env).get(canonical(package))
    if version is not None:
        raise EnvironmentFailed(
            f"the environment holds {package}=={version}, the task's own package (a "
            "requirement pulls it in): it would hold the answer"
        )


def _run(argv: Sequence[str], what: str) -> None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=PIP_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise EnvironmentFailed(f"{what}: {error}") from None
    if done.returncode != 0:
        said = [line for line in done.stderr.splitlines() if line.strip()]
        last = next((x for x in said if x.lstrip().startswith("ERROR")), said[-1] if said else "")
        raise EnvironmentFailed(f"{what} exited {done.returncode}: {last.strip()[:300]}")


def _make(staging: Path, final: Path, requirements: list[str], wheels: Path) -> None:
    _run([str(base_python()), "-m", "venv", "--without-pip", str(staging)], "python -m venv")
    pip = [
        sys.executable, "-m", "pip", "--python", str(staging / "bin" / "python"), "install",
        "--no-input", "--disable-pip-version-check", "--no-warn-script-location",
        "--find-links", str(wheels),
    ]  # fmt: skip
    _run([*pip, "--no-index", *runner_pins()], "pip install (the test runner)")
    if requirements:  # with the runner pinned again: nothing may move it
        _run([*pip, *runner_pins(), *requirements], f"pip install {' '.join(requirements)}")
    _relocate(staging, final)
    (staging / REQUESTED).write_text("".join(f"{line}\n" for line in requirements))
    listing = (
        "import importlib.metadata as m\n"
        "print('\\n'.join(sorted(f\"{d.metadata['Name']}=={d.version}\" "
        "for d in m.distributions())))\n"
    )
    done = subprocess.run(
        [str(staging / "bin" / "python"), "-I", "-c", listing],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    (staging / RESOLVED).write_text(done.stdout)


def _relocate(staging: Path, final: Path) -> None:
    """Scripts' `#!` lines and `pyvenv.cfg` name the staging folder: they name `final`."""
    old, new = str(staging).encode(), str(final).encode()
    for path in [*(staging / "bin").iterdir(), staging / "pyvenv.cfg"]:
        if path.is_symlink() or not path.is_file():
            continue
        data = path.read_bytes()
        if old in data[:4096]:
            path.write_bytes(data.replace(old, new))


# -- the runner's wheels, packed from the harness's installed copies --------------------


def runner_distributions() -> list[importlib.metadata.Distribution]:
    """pytest, coverage and what they need to run here (markers evaluated, no extras)."""
    found: dict[str, importlib.metadata.Distribution] = {}
    queue = list(RUNNER)
    while queue:
        name = canonical(queue.pop())
        if name in found:
            continue
        dist = importlib.metadata.distribution(name)
        found[name] = dist
        for line in dist.requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                queue.append(requirement.name)
    return [found[name] for name in sorted(found)]


def runner_wheels() -> Path:
    """A folder of wheels of `runner_distributions`, made once per set of versions."""
    dists = runner_distributions()
    names = [f"{canonical(d.metadata['Name'])}=={d.version}" for d in dists]
    key = hashlib.sha256(json.dumps([ENV_FORMAT, names, base_version()]).encode()).hexdigest()
    root = build_cache() / "envs" / f"runner-{key[:20]}"

    def fill(staging: Path) -> None:
        staging.mkdir()
        for dist in dists:
            pack_wheel(dist, staging)

    build_once(root, key, fill)
    return root


def pack_wheel(dist: importlib.metadata.Distribution, folder: Path) -> Path:
    """An installed distribution packed as a wheel again: its files as its RECORD lists
    them (scripts and bytecode left out: pip makes them anew), a fresh RECORD."""
    files = [f for f in dist.files or [] if f.parts and f.parts[0] != ".."]
    info = next(f.parts[0] for f in files if f.parts[0].endswith(".dist-info"))
    tag = next(
        line.split(":", 1)[1].strip()
        for line in (dist.read_text("WHEEL") or "").splitlines()
        if line.startswith("Tag:")
    )
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"])
    wheel = folder / f"{name}-{dist.version}-{tag}.whl"
    record: list[str] = []
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for entry in sorted(files, key=str):
            relative = entry.as_posix()
            skipped = "__pycache__" in entry.parts or relative.endswith((".pyc", ".pyo"))
            if skipped or (entry.parts[0] == info and entry.name in SKIPPED_META):
                continue
            data = Path(str(dist.locate_file(entry))).read_bytes()
            archive.writestr(relative, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append(f"{relative},sha256={digest.decode()},{len(data)}")
        record.append(f"{info}/RECORD,,")
        archive.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    os.chmod(wheel, 0o644)
    return wheel
