"""The `package` source: a pinned release of a package, an sdist verified by its sha256
(fetched and prepared by `sdist.py`); the v1 and v2 suites' tasks."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from cursorbench.tasks.sources.base import MutatedSource, SourceExample, SourceSpec
from cursorbench.tasks.sources.folder import EXAMPLE, EXAMPLE_FILES
from cursorbench.tasks.sources.sdist import PREPARE_VERSION, prepared_tree

if TYPE_CHECKING:
    from cursorbench.tasks.task import Task


class PackageSource(SourceSpec):
    """A pinned release of a package: an sdist verified by its sha256."""

    kind: Literal["package"] = "package"
    name: str
    version: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class PackageTaskSource(MutatedSource):
    name = "package"
    model = PackageSource

    def tree(self, spec: PackageSource, task: Task, cache: Path) -> Path:
        return prepared_tree(spec, cache)  # the sdist's hash is checked every time

    def digest(self, spec: PackageSource, task: Task) -> str:
        return f"prepare-{PREPARE_VERSION}"  # the sdist is named by its sha256, in the spec

    def distribution(self, spec: PackageSource) -> str:
        return spec.name

    def package_name(self, spec: PackageSource) -> str:
        return spec.name

    def label(self, spec: PackageSource) -> str:
        return f"{spec.name}=={spec.version}"

    def example(self, root: Path, cache: Path) -> SourceExample:
        """The folder source's example tree as the sdist of `cbexample` 1.0, placed in the
        cache where a download would have put it."""
        files = {p: t for p, t in EXAMPLE_FILES.items() if p != "pytest.ini"}
        files["pyproject.toml"] = (
            '[project]\nname = "cbexample"\nversion = "1.0"\n\n'
            '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'
        )
        data = _sdist(files, "cbexample-1.0")
        sha256 = hashlib.sha256(data).hexdigest()
        folder = cache / "sdists" / sha256
        folder.mkdir(parents=True, exist_ok=True)
        staging = folder / f".cbexample-1.0.tar.gz.{uuid.uuid4().hex[:8]}"
        staging.write_bytes(data)
        os.replace(staging, folder / "cbexample-1.0.tar.gz")  # caches are shared: atomically
        spec = {"kind": "package", "name": "cbexample", "version": "1.0", "sha256": sha256}
        return SourceExample({"source": spec} | EXAMPLE)


def _sdist(files: dict[str, str], top: str) -> bytes:
    """A .tar.gz of `files` under `top/`, the same bytes every time."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as bundle:
        for path, text in sorted(files.items()):
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{path}")
            info.size = len(data)
            bundle.addfile(info, io.BytesIO(data))
    return gzip.compress(buffer.getvalue(), mtime=0)
