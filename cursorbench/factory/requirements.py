"""What a release says it needs, pinned: the requirements of its tasks' own environment.

An sdist declares its runtime dependencies, and usually its tests' as an extra (`test`,
`tests`, `testing`), in its top-level `PKG-INFO` (`Requires-Dist`) or, for older
setuptools sdists, in `*.egg-info/requires.txt`. `declared` reads them, markers evaluated
for the harness's interpreter (which every environment is made from), leaving out the
harness's own test runner (pytest and coverage, and what is packed with them: the
environment always holds those, at the harness's versions) and the package itself.
`pin` resolves them once with pip (`--dry-run --report`, the runner pinned as the
environment will hold it) into `name==version` lines, which a task records: the same
task then gets the same environment on every machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

from packaging.markers import InvalidMarker, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement

from harness.envs import (
    PIP_TIMEOUT_S,
    EnvironmentFailed,
    canonical,
    runner_distributions,
    runner_pins,
)

TEST_EXTRAS = ("test", "tests", "testing")
# Grading ignores the tree's addopts, so `--cov` never needs the plugin; it would only
# load a second coverage measurement into the coverage map's run.
NOT_NEEDED = {"pytest-cov"}


def runner_names() -> set[str]:
    """The runner and the distributions packed with it: an environment holds them already."""
    names = {canonical(d.metadata["Name"]) for d in runner_distributions()}
    return names | NOT_NEEDED


def _metadata_texts(sdist: Path) -> tuple[str | None, str | None]:
    """The sdist's top `PKG-INFO` and its first `*.egg-info/requires.txt`, as text."""
    pkg_info = requires = None
    if sdist.name.endswith(".zip"):
        with zipfile.ZipFile(sdist) as bundle:
            for name in sorted(bundle.namelist()):
                if name.count("/") == 1 and name.endswith("/PKG-INFO") and pkg_info is None:
                    pkg_info = bundle.read(name).decode("utf-8", "replace")
                if name.endswith(".egg-info/requires.txt") and requires is None:
                    requires = bundle.read(name).decode("utf-8", "replace")
        return pkg_info, requires
    with tarfile.open(sdist) as bundle:
        for member in sorted(bundle.getmembers(), key=lambda m: m.name):
            top = member.name.count("/") == 1 and member.name.endswith("/PKG-INFO")
            egg = member.name.endswith(".egg-info/requires.txt")
            if not member.isfile() or not (top or egg):
                continue
            handle = bundle.extractfile(member)
            text = handle.read().decode("utf-8", "replace") if handle else ""
            if top and pkg_info is None:
                pkg_info = text
            if egg and requires is None:
                requires = text
    return pkg_info, requires


def _from_requires_txt(text: str) -> list[str]:
    """setuptools' `requires.txt` as `Requires-Dist` lines: `[extra]`, `[:marker]` and
    `[extra:marker]` sections become markers."""
    lines: list[str] = []
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        extra, _, marker = section.partition(":")
        parts = [f'extra == "{extra}"'] if extra else []
        parts += [f"({marker})"] if marker else []
        lines.append(f"{line}; {' and '.join(parts)}" if parts else line)
    return lines


def _wanted(requirement: Requirement) -> bool:
    if requirement.marker is None:
        return True
    try:
        return any(requirement.marker.evaluate({"extra": e}) for e in ("", *TEST_EXTRAS))
    except (UndefinedEnvironmentName, InvalidMarker):
        return False


def declared(sdist: Path, package: str) -> list[str]:
    """The release's runtime and test requirements (see the module's docstring), as
    requirement strings without markers, sorted; unreadable lines are skipped."""
    try:
        pkg_info, requires = _metadata_texts(sdist)
    except (tarfile.TarError, zipfile.BadZipFile, OSError):
        return []
    lines: list[str] = []
    if pkg_info:
        lines = list(Parser().parsestr(pkg_info).get_all("Requires-Dist") or [])
    if not lines and requires:
        lines = _from_requires_txt(requires)
    found: dict[str, str] = {}
    skipped = runner_names() | {canonical(package)}
    for line in lines:
        try:
            requirement = Requirement(line)
        except (InvalidRequirement, InvalidMarker):
            continue
        name = canonical(requirement.name)
        if name in skipped or not _wanted(requirement):
            continue
        requirement.marker = None
        requirement.extras = {e for e in requirement.extras if e not in TEST_EXTRAS}
        found.setdefault(name, str(requirement))
    return sorted(found.values())


def pin(requirements: list[str], package: str) -> list[str]:
    """`requirements` resolved by pip (its own index configuration) beside the runner, as
    sorted `name==version` lines without the runner's distributions; pip's failure is an
    `EnvironmentFailed` of one line."""
    if not requirements:
        return []
    argv = [
        sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed",
        "--quiet", "--no-input", "--disable-pip-version-check", "--report", "-",
        *runner_pins(), *requirements,
    ]  # fmt: skip
    what = f"resolving {package}'s requirements ({' '.join(requirements)})"
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=PIP_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise EnvironmentFailed(f"{what}: {error}") from None
    if done.returncode != 0:
        said = [x.strip() for x in done.stderr.splitlines() if x.strip()]
        last = next((x for x in said if x.startswith("ERROR")), said[-1] if said else "")
        raise EnvironmentFailed(f"{what}: pip exited {done.returncode}: {last[:300]}")
    report = json.loads(done.stdout)
    pins = set()
    skipped = runner_names() | {canonical(package)}
    for item in report.get("install", []):
        meta = item.get("metadata", {})
        name = canonical(str(meta.get("name", "")))
        if name and name not in skipped:
            pins.add(f"{name}=={meta.get('version')}")
    return sorted(pins)
