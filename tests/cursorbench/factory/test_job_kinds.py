"""The factory's job kinds (`job_kinds.py`): one entry per kind `propose` makes."""

from __future__ import annotations

from pathlib import Path

import pytest

from cursorbench.factory import KINDS
from cursorbench.factory.job import Job, write_spec
from cursorbench.factory.job_kinds import (
    JOB_KINDS,
    UnknownJobKind,
    family_of,
    job_kind,
    measure_job,
    rewrite_prompt,
)


def _job(kind: str, path: Path, prompt: str = "") -> Job:
    return Job(
        key="k", kind=kind, path=path, data={}, backend="subprocess", visible=0,
        tree=path.parent, prompt=prompt,
    )  # fmt: skip


def test_every_kind_propose_makes_has_one_job_kind() -> None:
    assert set(JOB_KINDS) == set(KINDS["all"])


def test_kinds_made_from_one_enumeration_share_a_family() -> None:
    assert family_of("review") == "bugs" and family_of("iterate") == "deletion"
    assert family_of("docs") == "docs" and family_of("bugs") == "bugs"
    assert family_of("a-kind-of-an-older-factory") == "a-kind-of-an-older-factory"


def test_an_unknown_kind_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(UnknownJobKind, match="no job kind named 'nope'"):
        measure_job(_job("nope", tmp_path / "t.yaml"))


@pytest.mark.parametrize("kind", ["review", "testing", "usages", "docs"])
def test_kinds_whose_files_lack_their_prompts_facts_keep_their_prompts(
    kind: str, tmp_path: Path
) -> None:
    path = tmp_path / "tasks" / "t.yaml"
    write_spec(path, {"id": "t", "prompt": "as written"})
    assert job_kind(kind).prompt_again(_job(kind, path), {}) is None
    assert not rewrite_prompt(_job(kind, path))
    assert "as written" in path.read_text()


def test_a_refactor_prompt_is_written_again_from_its_candidate(tmp_path: Path) -> None:
    path = tmp_path / "tasks" / "t.yaml"
    write_spec(path, {"id": "t", "prompt": "old"})
    assert rewrite_prompt(_job("refactor", path, prompt="new"))
    assert "prompt: new" in path.read_text()
    assert not rewrite_prompt(_job("refactor", path, prompt="new"))  # nothing changed
