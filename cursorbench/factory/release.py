"""A package release as a task source: its sdist (cached, or fetched as v1 tasks fetch
theirs), its sha256 and its release date.

The sdist is looked up first in the build cache's `sdists/<sha256>/` folders (where
`sources.fetch_sdist` keeps every sdist it fetched, and where tests place the sdists
they make), then downloaded with `pip download` like `sources.fetch_sdist` does. The
release date is the date of the sdist's `PKG-INFO` (the time it was built, which is
when it was released for every sdist uploaded as built), else, when that stamp is a
reproducible build's placeholder, the newest member's, else (an sdist whose every
stamp is a placeholder) the upload time the package index gives for the file (the JSON
simple API, PEP 691/700; `PIP_INDEX_URL`, else PyPI); a `--released-after` date refuses
older releases.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import tarfile
import urllib.request
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path

from cursorbench.tasks.sources.base import SourceError
from cursorbench.tasks.sources.package import PackageSource
from cursorbench.tasks.sources.sdist import _pip_download, sha256_file
from harness.envs import canonical

SDIST_SUFFIXES = (".tar.gz", ".tgz", ".zip")
# Stamps before this are a reproducible build's placeholders (0, or zip's 1980-01-01),
# not dates: PDM writes PKG-INFO with mtime 0, and the other members keep theirs.
EARLIEST = dt.datetime(1980, 1, 2, tzinfo=dt.UTC).timestamp()
PYPI_SIMPLE = "https://pypi.org/simple"
SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"  # PEP 691; PEP 700 adds upload-time


@dataclass(frozen=True)
class Release:
    source: PackageSource
    sdist: Path
    released: dt.date | None


SUITE_VERSION = "factory"  # a proposed task's; a suite sets its own (`tasks review --move-to`)


def base_spec(
    release: Release, ident: str, category: str, environment: list[str] | None
) -> dict[str, object]:
    """The fields every proposed task has: id, category, the release, its date and the
    task's own environment (where it has one); the prompt is still to write."""
    source = release.source
    data: dict[str, object] = {
        "id": ident, "suite_version": SUITE_VERSION, "category": category, "prompt": "",
        "source": {"kind": "package", "name": source.name, "version": source.version,
                   "sha256": source.sha256},
    }  # fmt: skip
    if release.released is not None:
        data["released"] = release.released.isoformat()
    if environment is not None:
        data["environment"] = {"requirements": environment}
    return data


def parse_requirement(text: str) -> tuple[str, str]:
    """`NAME==VERSION` -> (name, version); anything else is refused."""
    name, sep, version = text.partition("==")
    if not sep or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name) or not version.strip():
        raise SourceError(f"{text!r}: give the release as NAME==VERSION")
    return name, version.strip()


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _matches(path: Path, name: str, version: str) -> bool:
    stem = next((path.name[: -len(s)] for s in SDIST_SUFFIXES if path.name.endswith(s)), None)
    if stem is None:
        return False
    base, _, found = stem.rpartition("-")
    return normalized(base) == normalized(name) and found == version


def cached_sdist(name: str, version: str, home: Path) -> Path | None:
    """An sdist of the release already in the cache, its content matching its folder."""
    folder = home / "sdists"
    if not folder.is_dir():
        return None
    for path in sorted(folder.glob("*/*")):
        matching = path.is_file() and _matches(path, name, version)
        if matching and sha256_file(path) == path.parent.name:
            return path
    return None


def download_sdist(name: str, version: str, home: Path) -> Path:
    """Fetches the sdist into `sdists/<sha256>/`, where `sources.fetch_sdist` finds it."""
    probe = PackageSource(name=name, version=version, sha256="0" * 64)
    download = home / "sdists" / f"download-{uuid.uuid4().hex[:8]}"
    download.mkdir(parents=True, exist_ok=True)
    try:
        files = [p for p in _pip_download(probe, download) if p.name.endswith(SDIST_SUFFIXES)]
        if len(files) != 1:
            raise SourceError(f"{name}=={version}: pip gave {len(files)} sdists")
        digest = sha256_file(files[0])
        target = home / "sdists" / digest / files[0].name
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(files[0], target)
        return target
    finally:
        shutil.rmtree(download, ignore_errors=True)


def release_date(sdist: Path) -> dt.date | None:
    """The date of the sdist's top `PKG-INFO` (else its newest member), UTC."""
    stamps: list[tuple[bool, float]] = []
    try:
        if sdist.name.endswith(".zip"):
            with zipfile.ZipFile(sdist) as bundle:
                for info in bundle.infolist():
                    when = dt.datetime(*info.date_time, tzinfo=dt.UTC).timestamp()
                    stamps.append(
                        (info.filename.count("/") == 1 and _pkg_info(info.filename), when)
                    )
        else:
            with tarfile.open(sdist) as bundle:
                for member in bundle.getmembers():
                    top = member.name.count("/") == 1 and _pkg_info(member.name)
                    stamps.append((top, float(member.mtime)))
    except (tarfile.TarError, zipfile.BadZipFile, OSError):
        return None
    stamps = [(top, when) for top, when in stamps if when >= EARLIEST]
    if not stamps:
        return None
    chosen = max(stamps)  # the PKG-INFO if there is one, else the newest
    return dt.datetime.fromtimestamp(chosen[1], dt.UTC).date()


def index_upload_date(sdist: Path, name: str, index_url: str | None = None) -> dt.date | None:
    """The day the index says the sdist's file was uploaded, UTC; None where the index
    cannot be reached, does not speak the JSON simple API or gives no upload time."""
    base = (index_url or os.environ.get("PIP_INDEX_URL") or PYPI_SIMPLE).rstrip("/")
    url = f"{base}/{canonical(name)}/"
    request = urllib.request.Request(url, headers={"Accept": SIMPLE_JSON})
    try:
        with urllib.request.urlopen(request, timeout=15) as response:
            page = json.loads(response.read())
    except (OSError, ValueError):  # URLError is an OSError, a bad JSON body a ValueError
        return None
    files = page.get("files") if isinstance(page, dict) else None
    for entry in files if isinstance(files, list) else []:
        if isinstance(entry, dict) and entry.get("filename") == sdist.name:
            return _iso_date(entry.get("upload-time"))
    return None


def _iso_date(text: object) -> dt.date | None:
    if not isinstance(text, str):
        return None
    try:
        return dt.datetime.fromisoformat(text).astimezone(dt.UTC).date()
    except ValueError:
        return None


def _pkg_info(name: str) -> bool:
    return name.endswith("/PKG-INFO")


def find_release(requirement: str, home: Path) -> Release:
    name, version = parse_requirement(requirement)
    sdist = cached_sdist(name, version, home) or download_sdist(name, version, home)
    source = PackageSource(name=name, version=version, sha256=sdist.parent.name)
    released = release_date(sdist) or index_upload_date(sdist, name)
    return Release(source=source, sdist=sdist, released=released)


def check_fresh(release: Release, after: dt.date | None) -> None:
    """Refuses a release not newer than `after` (or of unknown date, when one is asked)."""
    if after is None:
        return
    label = f"{release.source.name}=={release.source.version}"
    if release.released is None:
        raise SourceError(f"{label}: release date unknown, cannot check --released-after")
    if release.released <= after:
        raise SourceError(f"{label}: released {release.released}, not after {after}")
