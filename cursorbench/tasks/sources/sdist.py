"""The sdists of the `package` source: a pinned sdist, downloaded once, hash-checked,
extracted and prepared.

`prepared_tree(pin, home)` gives a folder holding the package as released, ready to be a
task's original tree:
  - the sdist is fetched with `pip download --no-deps --no-binary NAME NAME==VERSION`
    (the target only is forced to source) into `$CURSORBENCH_HOME/sdists/<sha256>/`,
    and its sha256 is checked against the task's on every build, cached or not;
  - it is extracted with tarfile's `data` filter (no links out, no devices), the
    single top folder taken as the tree;
  - what an sdist may carry that an agent must not read is dropped: egg-info, caches,
    bytecode, build and dist folders, nested archives, `.git`;
  - one `pytest.ini` replaces the package's pytest configuration: the package's own
    options (from `pytest.ini`, `pyproject.toml`, `setup.cfg` or `tox.ini`), minus
    `addopts` (grading ignores it), plus `pythonpath` so the package imports from the
    workspace (`src` for a src layout, else the root). The package is never installed.

Not covered here: mutations, hidden tests and the leak scan (`cursorbench/tasks/workspace.py`,
`cursorbench/validation/leaks.py`).
"""

from __future__ import annotations

import configparser
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import uuid
import zipfile
from pathlib import Path
from typing import Protocol

from cursorbench.tasks.sources.base import SourceError
from harness.home import build_once

PREPARE_VERSION = "2"
DROPPED_DIRS = {
    ".git", ".hg", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox",
    ".nox", ".hypothesis", "build", "dist", ".eggs", ".venv", "htmlcov",
}  # fmt: skip
DROPPED_SUFFIXES = (".pyc", ".pyo", ".egg-info", ".tar.gz", ".tgz", ".zip", ".whl", ".egg")
PYTEST_FILES = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini")
INI_SECTIONS = {"tox.ini": "pytest", "setup.cfg": "tool:pytest"}


class Pinned(Protocol):
    """A pinned release (a `package` source's spec): which sdist, checked by its sha256."""

    @property
    def name(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def sha256(self) -> str: ...


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_sdist(source: Pinned, home: Path) -> Path:
    """The pinned sdist, from the cache or the package index; its hash always checked."""
    folder = home / "sdists" / source.sha256
    cached = sorted(folder.glob("*")) if folder.is_dir() else []
    for path in cached:
        if path.is_file() and sha256_file(path) == source.sha256:
            return path
    download = home / "sdists" / f"download-{uuid.uuid4().hex[:8]}"
    download.mkdir(parents=True, exist_ok=True)
    try:
        files = _pip_download(source, download)
        if len(files) != 1:
            raise SourceError(f"{source.name}=={source.version}: pip gave {len(files)} files")
        got = sha256_file(files[0])
        if got != source.sha256:
            raise SourceError(
                f"{source.name}=={source.version}: sdist sha256 {got} does not match the "
                f"task's {source.sha256}"
            )
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / files[0].name
        os.replace(files[0], target)
        return target
    finally:
        shutil.rmtree(download, ignore_errors=True)


def _pip_download(source: Pinned, into: Path) -> list[Path]:
    argv = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", source.name,
        f"{source.name}=={source.version}", "-d", str(into),
        "--disable-pip-version-check", "--no-input", "--retries", "1", "--timeout", "30",
    ]  # fmt: skip
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        raise SourceError(f"cannot download {source.name}=={source.version}: timed out") from None
    if done.returncode != 0:
        lines = [line.strip() for line in (done.stderr + done.stdout).splitlines() if line.strip()]
        reason = next((line for line in reversed(lines) if "ERROR" in line), lines[-1:] or [""])
        reason = reason if isinstance(reason, str) else reason[0]
        unreachable = any(
            word in (done.stderr + done.stdout)
            for word in ("NewConnectionError", "Temporary failure", "Network is unreachable",
                         "ConnectTimeout", "Max retries exceeded", "Could not fetch URL")
        )  # fmt: skip
        what = "the package index cannot be reached" if unreachable else reason[:200]
        raise SourceError(f"cannot download {source.name}=={source.version}: {what}")
    return sorted(p for p in into.iterdir() if p.is_file())


def extract(archive: Path, into: Path) -> Path:
    """Extracts an sdist (tar or zip) and returns its single top folder."""
    into.mkdir(parents=True)
    try:
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as bundle:
                for member in bundle.namelist():
                    if member.startswith("/") or ".." in Path(member).parts:
                        raise SourceError(f"{archive.name}: unsafe member {member!r}")
                bundle.extractall(into)
        else:
            with tarfile.open(archive) as bundle:
                bundle.extractall(into, filter="data")
    except (tarfile.TarError, zipfile.BadZipFile, OSError) as error:
        raise SourceError(f"{archive.name}: cannot extract ({error})") from None
    tops = [p for p in into.iterdir()]
    if len(tops) != 1 or not tops[0].is_dir():
        raise SourceError(f"{archive.name}: expected one top folder, found {len(tops)} entries")
    return tops[0]


def dropped(name: str) -> bool:
    return name in DROPPED_DIRS or name.endswith(DROPPED_SUFFIXES)


def write_metadata(root: Path, sdist_top: Path) -> None:
    """Entry points without installing: packages that find their plugins through entry
    points (Markdown's extensions) need distribution metadata on the import path. From
    the sdist's egg-info (before it is dropped) a minimal `NAME-VERSION.dist-info` with
    METADATA and entry_points.txt is written into the import root; it holds no code."""
    for info in sorted(sdist_top.glob("**/*.egg-info")):
        points = info / "entry_points.txt"
        pkg_info = info / "PKG-INFO"
        if not points.is_file() or not pkg_info.is_file():
            continue
        headers: dict[str, str] = {}
        for line in pkg_info.read_text(encoding="utf-8", errors="replace").splitlines():
            if not line.strip():
                break
            key, _, value = line.partition(":")
            headers.setdefault(key.strip(), value.strip())
        name, version = headers.get("Name"), headers.get("Version")
        if not name or not version:
            continue
        target = root / import_root(root) / f"{name.replace('-', '_')}-{version}.dist-info"
        target.mkdir(parents=True, exist_ok=True)
        meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        (target / "METADATA").write_text(meta, encoding="utf-8")
        shutil.copy2(points, target / "entry_points.txt")
        return


def strip_tree(root: Path) -> None:
    """Removes what the agent must not read: caches, bytecode, egg-info, archives, VCS."""
    for dirpath, dirnames, filenames in os.walk(root, topdown=True):
        for name in list(dirnames):
            if dropped(name):
                shutil.rmtree(Path(dirpath) / name)
                dirnames.remove(name)
        for name in filenames:
            path = Path(dirpath) / name
            if dropped(name) or path.is_symlink():
                path.unlink()


def import_root(root: Path) -> str:
    """Where the package imports from: `src` for a src layout, else the root."""
    return "src" if (root / "src").is_dir() else "."


def package_pytest_options(root: Path) -> dict[str, str]:
    """The package's own pytest options as ini text values, from the file pytest would use."""
    for name in PYTEST_FILES:
        path = root / name
        if path.is_file():
            if name.endswith(".toml"):
                table = tomllib.loads(path.read_text(encoding="utf-8")).get("pytest", {})
                return _toml_options(table)
            return _ini_options(path, "pytest")
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        tool = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {})
        if "pytest" in tool:
            table = tool["pytest"]
            return _toml_options(table.get("ini_options", table))
    for name, section in INI_SECTIONS.items():
        if (root / name).is_file():
            options = _ini_options(root / name, section)
            if options is not None:
                return options
    return {}


def _ini_options(path: Path, section: str) -> dict[str, str]:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(path.read_text(encoding="utf-8"))
    except configparser.Error as error:
        raise SourceError(f"{path.name}: unreadable pytest configuration ({error})") from None
    if not parser.has_section(section):
        return {}
    return {key: value.strip() for key, value in parser.items(section)}


def _toml_options(table: dict[str, object]) -> dict[str, str]:
    options: dict[str, str] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            continue
        if isinstance(value, list):
            options[key] = "\n".join(str(item) for item in value)
        elif isinstance(value, bool):
            options[key] = "true" if value else "false"
        else:
            options[key] = str(value)
    return options


def write_pytest_ini(root: Path) -> None:
    """One `pytest.ini`: the package's options minus addopts, plus the import path."""
    options = package_pytest_options(root)
    options.pop("addopts", None)
    options.pop("minversion", None)  # the harness's pytest is the one that runs
    paths = [import_root(root), *options.pop("pythonpath", "").split()]
    options["pythonpath"] = " ".join(dict.fromkeys(paths))
    for name in PYTEST_FILES:
        (root / name).unlink(missing_ok=True)
    lines = ["[pytest]"]
    for key, value in options.items():
        parts = value.splitlines() or [""]
        lines.append(f"{key} = {parts[0]}".rstrip())
        lines += [f"    {part}" for part in parts[1:] if part.strip()]
    (root / "pytest.ini").write_text("\n".join(lines) + "\n", encoding="utf-8")


def prepared_tree(source: Pinned, home: Path) -> Path:
    """The package's tree, extracted and prepared once per sdist (content-addressed)."""
    sdist = fetch_sdist(source, home)  # checks the hash even when cached
    root = home / "sources" / f"{source.sha256[:24]}-p{PREPARE_VERSION}"

    def fill(staging: Path) -> None:
        top = extract(sdist, staging / "extract")
        write_metadata(top, top)
        strip_tree(top)
        write_pytest_ini(top)
        os.rename(top, staging / "tree")

    build_once(root, source.sha256, fill)
    return root / "tree"
