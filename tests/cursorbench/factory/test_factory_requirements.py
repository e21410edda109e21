"""A release's declared requirements (`cursorbench/factory/requirements.py`): read from
the sdist's `PKG-INFO` or its egg-info `requires.txt`, markers and test extras evaluated,
the runner and the package itself left out; pinned by pip from a local index (wheels made
here, nothing downloaded); and what `tasks propose` makes of them."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from cursorbench.factory.propose import environment_for
from cursorbench.factory.release import Release
from cursorbench.factory.requirements import declared, pin
from cursorbench.tasks.sources.package import PackageSource
from harness import envs
from harness.envs import EnvironmentFailed
from tests.harness.test_envs import make_wheel

PKG_INFO = """Metadata-Version: 2.1
Name: demo
Version: 1.0
Provides-Extra: test
Provides-Extra: docs
Requires-Dist: cbdep>=1.0
Requires-Dist: cbtestdep; extra == "test"
Requires-Dist: pytest>=7; extra == "test"
Requires-Dist: pytest-cov; extra == "tests"
Requires-Dist: sphinx; extra == "docs"
Requires-Dist: cbold; python_version < "3.0"
Requires-Dist: demo[docs]; extra == "test"

A description, with a line like a header: Requires-Dist: notreal
"""

REQUIRES_TXT = """cbdep>=1.0

[:python_version < "3"]
cbold

[test]
cbtestdep
pytest

[widechars]
wcwidth
"""


def tar_sdist(path: Path, files: dict[str, str]) -> Path:
    with tarfile.open(path, "w:gz") as bundle:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            bundle.addfile(info, io.BytesIO(data))
    return path


def test_pkg_info_gives_runtime_and_test_requirements_only(tmp_path: Path) -> None:
    sdist = tar_sdist(tmp_path / "demo-1.0.tar.gz", {"demo-1.0/PKG-INFO": PKG_INFO})
    assert declared(sdist, "demo") == ["cbdep>=1.0", "cbtestdep"]


def test_an_egg_info_requires_txt_is_read_when_pkg_info_lists_nothing(tmp_path: Path) -> None:
    files = {
        "demo-1.0/PKG-INFO": "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
        "demo-1.0/demo.egg-info/requires.txt": REQUIRES_TXT,
    }
    assert declared(tar_sdist(tmp_path / "demo-1.0.tar.gz", files), "demo") == [
        "cbdep>=1.0",
        "cbtestdep",
    ]
    zipped = tmp_path / "demo-1.0.zip"
    with zipfile.ZipFile(zipped, "w") as bundle:
        for name, text in files.items():
            bundle.writestr(name, text)
    assert declared(zipped, "demo") == ["cbdep>=1.0", "cbtestdep"]


def test_nothing_declared_and_an_unreadable_sdist_give_no_requirements(tmp_path: Path) -> None:
    bare = {"demo-1.0/PKG-INFO": "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n"}
    assert declared(tar_sdist(tmp_path / "demo-1.0.tar.gz", bare), "demo") == []
    broken = tmp_path / "broken-1.0.tar.gz"
    broken.write_bytes(b"not a tar file")
    assert declared(broken, "broken") == []


@pytest.fixture
def index(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """pip's own configuration pointed at wheels made here and at the runner's wheels."""
    folder = tmp_path_factory.mktemp("index")
    make_wheel(folder, "cbdep", {"cbdep.py": "X = 1\n"}, ["cbleaf==1.0"])
    make_wheel(folder, "cbleaf", {"cbleaf.py": "Y = 2\n"}, [])
    make_wheel(folder, "cbtestdep", {"cbtestdep.py": "Z = 3\n"}, ["pytest"])
    make_wheel(folder, "demo", {"demo.py": "W = 4\n"}, [])
    make_wheel(folder, "cbwantsdemo", {"cbwantsdemo.py": "V = 5\n"}, ["demo==1.0"])
    monkeypatch.setenv("PIP_FIND_LINKS", f"{folder} {envs.runner_wheels()}")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    return folder


def test_pin_resolves_dependencies_of_dependencies_without_the_runner(index: Path) -> None:
    assert pin(["cbdep>=1.0", "cbtestdep"], "demo") == [
        "cbdep==1.0",
        "cbleaf==1.0",
        "cbtestdep==1.0",
    ]
    assert pin([], "demo") == []


def test_pin_leaves_out_the_package_and_says_what_cannot_be_resolved(index: Path) -> None:
    assert pin(["cbwantsdemo"], "demo") == ["cbwantsdemo==1.0"]
    with pytest.raises(EnvironmentFailed, match=r"resolving demo's requirements.*cbmissing"):
        pin(["cbmissing>=2"], "demo")


def test_propose_pins_what_the_release_declares(tmp_path: Path, index: Path) -> None:
    sdist = tar_sdist(tmp_path / "demo-1.0.tar.gz", {"demo-1.0/PKG-INFO": PKG_INFO})
    source = PackageSource(name="demo", version="1.0", sha256="0" * 64)
    release = Release(source=source, sdist=sdist, released=None)
    assert environment_for(release, None) == ["cbdep==1.0", "cbleaf==1.0", "cbtestdep==1.0"]
    assert environment_for(release, ["cbleaf==1.0"]) == ["cbleaf==1.0"]  # given wins
