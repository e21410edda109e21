"""Red team: answers on disk outside the Python environment (issue 16, findings 1 and 8).

A Debian package on these machines vendors copies of libraries under `/usr/lib/<name>`
(the v1 version of Jinja2, cachetools with its tests); an agent that searches the disk
for the deleted code copied it in and resolved. The sandbox's root is now an allow-list
(`harness/sandbox/view.py`): the deleted module planted in host folders outside it
(`/opt`, `/usr/local/share`, `/usr/lib/<package>`) cannot be found from inside, so the
attack ends failed, while the same attack run unconfined (`--sandbox subprocess`) finds it
and resolves: the plant is real, and only the allow-list stops it.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.red_team_kit import (
    INIT,
    SLUG,
    assert_failed,
    assert_resolved,
    shell,
    solve,
    write,
)

PLANT_PARENTS = ("/opt", "/usr/local/share", "/usr/lib")
SEARCHED = "/opt /usr /srv /etc"
# Whatever the search finds that defines slugify becomes the agent's textkit/slug.py.
COPY_FOUND = (
    f"found=$(find {SEARCHED} -name slug.py -type f 2>/dev/null | "
    "xargs -r grep -l 'def slugify' 2>/dev/null | head -1); "
    'echo "found: ${found:-nothing}"; if [ -n "$found" ]; then cp "$found" textkit/slug.py; fi'
)


@pytest.fixture
def planted() -> Iterator[list[Path]]:
    """The deleted module, vendored the way a Debian package vendors libraries, in folders of
    the host outside the sandbox's allow-list; removed after the test."""
    tag = f"cursorbench-red-team-{uuid.uuid4().hex[:12]}"
    roots = [Path(parent) / tag for parent in PLANT_PARENTS if Path(parent).is_dir()]
    try:
        for root in roots:
            (root / "third_party" / "textkit").mkdir(parents=True)
            (root / "third_party" / "textkit" / "slug.py").write_text(SLUG)
    except OSError:
        for root in roots:
            shutil.rmtree(root, ignore_errors=True)
        pytest.skip("cannot write to the host's system folders here (not root)")
    yield roots
    for root in roots:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.red_team_ci
@pytest.mark.slow
def test_the_deleted_module_vendored_outside_the_view_cannot_be_found(
    red_team, planted: list[Path]
) -> None:
    result = red_team([shell(COPY_FOUND), write("textkit/__init__.py", INIT)])
    assert_failed(result, "tests_failed")
    outputs = [r.get("output", "") for r in result["records"] if r.get("type") == "tool"]
    assert any("found: nothing" in str(output) for output in outputs), outputs


@pytest.mark.slow
def test_control_the_same_search_unconfined_finds_and_copies_it(
    unconfined_red_team, planted: list[Path]
) -> None:
    result = unconfined_red_team([shell(COPY_FOUND), write("textkit/__init__.py", INIT)])
    assert_resolved(result)


@pytest.mark.slow
def test_system_python_packages_and_vendored_libraries_are_not_visible(red_team) -> None:
    listing = (
        "for p in /usr/lib/python3/dist-packages /usr/lib/python3.11 /usr/lib/google-cloud-sdk "
        "/usr/share/doc /usr/local /opt /srv /home; do test -e $p && echo VISIBLE $p; done; "
        "echo listed"
    )
    result = red_team([shell(listing), *solve()])
    assert_resolved(result)  # the tools the agent and grading use are all still there
    outputs = " ".join(
        str(r.get("output", "")) for r in result["records"] if r.get("type") == "tool"
    )
    assert "listed" in outputs and "VISIBLE" not in outputs, outputs
