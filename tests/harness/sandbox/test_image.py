"""The Docker image's fingerprint: it covers what goes into the image, nothing else.

No engine is needed: the fingerprint is computed from the host's files (building and
pruning images is in test_docker.py).
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest

from harness.sandbox import image


@pytest.fixture(scope="module")
def inputs() -> tuple[str, ...]:
    return image._inputs()


def test_creating_files_under_var_lib_or_in_a_listed_folder_changes_nothing(
    inputs: tuple[str, ...],
) -> None:
    """`/var/lib` (and `/.`) are among the inputs (dpkg lists them), and the engine's data
    root is made under `/var/lib`: a folder's times must not count."""
    assert "/var/lib" in inputs and "/." in inputs
    before = image.inputs_fingerprint(inputs)
    made = Path("/var/lib") / f"cursorbench-fingerprint-{uuid.uuid4().hex[:8]}"
    try:
        made.mkdir()
        (made / "file").write_text("anything\n")
        assert image.inputs_fingerprint(inputs) == before
    finally:
        shutil.rmtree(made, ignore_errors=True)


def test_an_input_that_changes_changes_the_fingerprint(tmp_path: Path) -> None:
    folder, file, link = tmp_path / "lib", tmp_path / "lib" / "mod.py", tmp_path / "lib" / "ln"
    folder.mkdir()
    file.write_text("x = 1\n")
    link.symlink_to("mod.py")
    paths = [str(folder), str(file), str(link)]
    status = tmp_path / "status"
    status.write_text("Package: bash\n")
    first = image.inputs_fingerprint(paths, status)
    (folder / "unrelated").write_text("not an input\n")  # the folder's mtime changes
    assert image.inputs_fingerprint(paths, status) == first
    file.write_text("x = 22\n")  # content (size, mtime)
    second = image.inputs_fingerprint(paths, status)
    assert second != first
    os.chmod(file, 0o600)
    third = image.inputs_fingerprint(paths, status)
    assert third != second
    link.unlink()
    link.symlink_to("unrelated")
    fourth = image.inputs_fingerprint(paths, status)
    assert fourth != third
    status.write_text("Package: bash\nVersion: 2\n")  # a package was upgraded
    assert image.inputs_fingerprint(paths, status) != fourth
    assert image.inputs_fingerprint([*paths, str(status)], status) != image.inputs_fingerprint(
        paths, status
    )  # a new input


def test_the_harness_only_packages_stay_out_of_the_image(inputs: tuple[str, ...]) -> None:
    site = [p for p in inputs if "/site-packages/" in p]
    tops = {p.split("/site-packages/", 1)[1].split("/", 1)[0] for p in site}
    assert {"_pytest", "pytest", "yaml", "pluggy"} <= tops  # what graders run stays
    assert not tops & {"torch", "ray", "pyarrow", "playwright", "pandas", "mypy"}
