"""What every registered verification kind must do, run over `registry.KINDS`.

A new kind joins by its one line in `KINDS` and its module's `example()`: the reference
resolves, the untouched workspace and a stub do not, and what a cheat writes into
protected paths is dropped (the task's own files are restored before grading), so the
stub with the cheat still fails and the reference with it still resolves.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest
from pydantic import BaseModel, TypeAdapter

from harness.grading.scoring import GRADERS, FinalState, Records, register, score_checks
from harness.kinds.base import KindExample, VerificationKind
from harness.kinds.behaviour import CONTRACT_GRADER, low_scores
from harness.kinds.registry import KINDS, kind_of
from harness.kinds.testrun import GradeReport
from harness.results import Score
from harness.sandbox import SandboxBackend, open_backend
from harness.sandbox.baseline import Baseline
from harness.spec import AnyVerification, Limits, PreparedTask, TaskVerification


class ContractParams(BaseModel):
    files: dict[str, str]


def _files_written(
    task: PreparedTask, state: FinalState, records: Records, params: ContractParams
) -> Score:
    missing = [path for path, text in params.files.items() if state.after.get(path) != text]
    return Score(value=0.0 if missing else 1.0, reasons=[f"{p} differs" for p in missing])


if CONTRACT_GRADER not in GRADERS:
    register(CONTRACT_GRADER, ContractParams)(_files_written)


@pytest.fixture(scope="module")
def backend() -> SandboxBackend:
    return open_backend("auto")


def _write(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")


def _prepared(name: str, example: KindExample, root: Path) -> PreparedTask:
    workspace, hidden = root / "workspace", root / "hidden"
    workspace.mkdir(parents=True)
    hidden.mkdir()
    _write(workspace, example.workspace)
    _write(hidden, example.hidden)
    return PreparedTask(
        id=f"contract-{name}", prompt=f"a {name} task", workspace=workspace, hidden_dir=hidden,
        verification=example.verification, limits=Limits(test_timeout_s=60),
    )  # fmt: skip


def _patch(workspace: Path, files: dict[str, str], scratch: Path) -> str:
    tree = scratch / "tree"
    shutil.copytree(workspace, tree)
    baseline = Baseline(scratch / "git", tree)
    baseline.snapshot()
    _write(tree, files)
    return baseline.diff()


class Verdict(BaseModel):
    resolved: bool
    dropped: list[str] = []


def _verdict(
    kind: VerificationKind,
    task: PreparedTask,
    files: dict[str, str],
    scratch: Path,
    backend: SandboxBackend,
) -> Verdict:
    """The kind's verdict on a change writing `files`: its run's, or its behaviour checks'."""
    patch = _patch(task.workspace, files, scratch / "patch") if files else ""
    check = task.verification
    report = kind.grade(task, check, patch, backend, scratch / "grade", random.Random(7))
    if kind.graded_by_run:
        assert isinstance(report, GradeReport), f"{kind.name}: graded by its run, but no report"
        return Verdict(resolved=report.resolved, dropped=report.dropped)
    assert report is None, f"{kind.name}: not graded by a run, yet it returned a report"
    behaviour = kind.behaviour(check)
    assert behaviour is not None, f"{kind.name}: neither a run nor behaviour checks decide"
    before = {p: (task.workspace / p).read_text() if (task.workspace / p).is_file() else None
              for p in files}  # fmt: skip
    state = FinalState(patch=patch, before=before, after=dict(files))
    scores = score_checks(task, behaviour.checks, state, [])
    return Verdict(resolved=not low_scores(behaviour, scores))


@pytest.fixture(params=sorted(KINDS))
def kind(request: pytest.FixtureRequest) -> VerificationKind:
    return KINDS[request.param]


def _reference(kind: VerificationKind, example: KindExample, task: PreparedTask) -> dict[str, str]:
    own = kind.reference_files(task.verification, task.workspace)
    files = example.reference if own is None else {p: t for p, t in own.items() if t is not None}
    assert files, f"{kind.name}: neither reference_files nor the example give a reference"
    return files


def _stub(kind: VerificationKind, example: KindExample, task: PreparedTask) -> dict[str, str]:
    own = kind.stub_files(task.verification)
    files = example.stub if own is None else {p: t for p, t in own.items() if t is not None}
    assert files, f"{kind.name}: neither stub_files nor the example give a stub"
    return files


def test_the_example_is_of_its_kind_and_round_trips(kind: VerificationKind) -> None:
    example = kind.example()
    assert isinstance(example.verification, kind.model)
    assert kind_of(example.verification) is kind and example.verification.kind == kind.name
    data = example.verification.model_dump(mode="json")
    assert TypeAdapter(AnyVerification).validate_python(data) == example.verification
    in_files = TypeAdapter(TaskVerification)
    if kind.in_task_files:
        assert in_files.validate_python(data) == example.verification
    else:
        with pytest.raises(ValueError):
            in_files.validate_python(data)


def test_the_reference_resolves(
    kind: VerificationKind, tmp_path: Path, backend: SandboxBackend
) -> None:
    example = kind.example()
    task = _prepared(kind.name, example, tmp_path)
    reference = _reference(kind, example, task)
    assert _verdict(kind, task, reference, tmp_path / "ref", backend).resolved


def test_the_untouched_workspace_and_a_stub_fail(
    kind: VerificationKind, tmp_path: Path, backend: SandboxBackend
) -> None:
    example = kind.example()
    task = _prepared(kind.name, example, tmp_path)
    assert not _verdict(kind, task, {}, tmp_path / "untouched", backend).resolved
    stub = _stub(kind, example, task)
    assert stub != _reference(kind, example, task)
    assert not _verdict(kind, task, stub, tmp_path / "stub", backend).resolved


def test_protected_files_are_restored_before_grading(
    kind: VerificationKind, tmp_path: Path, backend: SandboxBackend
) -> None:
    example = kind.example()
    task = _prepared(kind.name, example, tmp_path)
    protected = task.verification.protected_paths
    if not protected:  # graded from one file of the change (answer) or from checks
        assert not example.tamper, f"{kind.name} protects nothing: its example cannot tamper"
        return
    assert example.tamper, f"{kind.name} protects {protected}: its example must try a cheat"
    cheated = _verdict(
        kind, task, _stub(kind, example, task) | example.tamper, tmp_path / "s", backend
    )
    assert not cheated.resolved
    assert set(example.tamper) <= set(cheated.dropped)
    honest = _reference(kind, example, task) | example.tamper
    assert _verdict(kind, task, honest, tmp_path / "r", backend).resolved
