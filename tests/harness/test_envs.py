"""A task's own Python environment (`harness/envs.py`): made offline from wheels made here
(`cbdep`, absent from the harness's venv), cached by content, shown by the sandbox instead
of the harness's venv, and used by grading on bubblewrap and Docker."""

from __future__ import annotations

import base64
import hashlib
import os
import sys
import sysconfig
import uuid
import zipfile
from pathlib import Path

import pytest
from pydantic import ValidationError

from cursorbench.tasks.task import Task
from cursorbench.tasks.workspace import (
    BuildError,
    BuiltTask,
    build,
    digested_json,
    ensure_task_environment,
)
from harness import envs
from harness.grading.grade import grade
from harness.home import harness_dirs
from harness.sandbox import SandboxSettings, bubblewrap_works, open_backend
from harness.sandbox.command import Command
from harness.sandbox.pythons import python_paths
from harness.sandbox.view import env_left_out, scan_roots

DEP = "cbdep==1.0"
TRIPLER = "def triple(x):\n    return times(x, 3)\n"
CORE = f"from cbdep import times\n\n\n{TRIPLER}"
TESTS = """import cbdep
from tripler import core


def test_triple_of_four():
    assert core.triple(4) == 12


def test_triple_of_zero():
    assert core.triple(0) == 0


def test_triple_of_a_negative():
    assert core.triple(-2) == -6


def test_triple_of_a_string():
    assert core.triple("ab") == "ababab"


def test_triple_of_a_list():
    assert core.triple([1]) == [1, 1, 1]


def test_the_dependency_is_the_environments():
    assert cbdep.times(2, 5) == 10
"""
FAIL_TO_PASS = ["four", "zero", "a_negative", "a_string", "a_list"]
needs_bwrap = pytest.mark.skipif(not bubblewrap_works(), reason="bubblewrap cannot run here")


def make_wheel(folder: Path, name: str, files: dict[str, str], requires: list[str]) -> Path:
    """A pure-Python wheel written by hand: its files, METADATA, WHEEL and RECORD."""
    info = f"{name}-1.0.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"
    meta += "".join(f"Requires-Dist: {r}\n" for r in requires)
    every = files | {
        f"{info}/METADATA": meta,
        f"{info}/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    path = folder / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for relative, text in every.items():
            archive.writestr(relative, text)
            digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest())
            record.append(f"{relative},sha256={digest.rstrip(b'=').decode()},{len(text)}")
        archive.writestr(f"{info}/RECORD", "\n".join([*record, f"{info}/RECORD,,"]) + "\n")
    return path


@pytest.fixture
def wheels(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A local index (pip's own `PIP_FIND_LINKS`, `PIP_NO_INDEX`): nothing is downloaded."""
    folder = tmp_path_factory.mktemp("wheels")
    make_wheel(folder, "cbdep", {"cbdep.py": "def times(a, b):\n    return a * b\n"}, [])
    make_wheel(folder, "cbleaky", {"cbleaky.py": "import tripler\n"}, ["tripler==1.0"])
    make_wheel(folder, "tripler", {"tripler/__init__.py": CORE}, [])
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    return folder


def tripler_task(tmp_path: Path, requirements: list[str]) -> Task:
    """A folder task whose hidden tests import `cbdep`, which only its environment holds."""
    source = tmp_path / "repo"
    (source / "tripler").mkdir(parents=True, exist_ok=True)
    (source / "tests").mkdir(exist_ok=True)
    (source / "conftest.py").write_text("")  # puts the tree's root on sys.path
    (source / "tripler" / "__init__.py").write_text("")
    (source / "tripler" / "core.py").write_text(CORE)
    (source / "tests" / "test_core.py").write_text(TESTS)
    data = {
        "id": "tripler-triple",
        "suite_version": "0.1",
        "category": "new_feature",
        "prompt": "Add triple(x) to tripler/core.py.",
        "source": {"kind": "folder", "path": "repo"},
        "mutation": {"operations": [{"op": "replace_text", "file": "tripler/core.py",
                                     "old": TRIPLER, "new": ""}]},
        "verification": {
            "test_args": ["tests"],
            "hidden_tests": ["tests/test_core.py"],
            "fail_to_pass": [f"tests/test_core.py::test_triple_of_{n}" for n in FAIL_TO_PASS],
            "pass_to_pass": ["tests/test_core.py::test_the_dependency_is_the_environments"],
        },
        "environment": {"requirements": requirements},
    }  # fmt: skip
    return Task.model_validate(data | {"path": tmp_path / "task.yaml"})


def test_the_key_follows_the_requirements_not_their_order() -> None:
    assert envs.environment_key(["a==1", "b==2"]) == envs.environment_key(["b==2", "a==1"])
    assert envs.environment_key(["a==1"]) != envs.environment_key(["a==2"])
    assert envs.environment_key([]) != envs.environment_key(["a==1"])


def test_requirements_are_pinned_and_never_the_tasks_own_package(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="pattern"):
        tripler_task(tmp_path, ["cbdep>=1.0"])
    task = tripler_task(tmp_path, [DEP])
    package = {"kind": "package", "name": "cbdep", "version": "1.0", "sha256": "0" * 64}
    with pytest.raises(ValidationError, match="the task's own package"):
        Task.model_validate(task.model_dump() | {"source": package})


def test_a_task_without_an_environment_keeps_its_digest_and_the_harness_python(
    tmp_path: Path,
) -> None:
    from cursorbench.tasks.loader import bundled_suite, load_task

    task = load_task(bundled_suite() / "tasks" / "textkit-slugify.yaml")
    assert task.environment is None and '"environment"' not in digested_json(task)
    assert BuiltTask(task, "x", Path("/nowhere")).python_env is None
    with_env = tripler_task(tmp_path, [DEP])
    assert '"requirements":["cbdep==1.0"]' in digested_json(with_env)


def test_an_environment_is_made_once_offline_and_records_what_it_holds(wheels: Path) -> None:
    env = envs.ensure_environment([DEP])
    held = envs.resolved(env)
    assert held["cbdep"] == "1.0" and "pytest" in held and "coverage" in held
    assert "sqlalchemy" not in held and "typer" not in held  # the harness's, not the task's
    assert (env / envs.REQUESTED).read_text() == f"{DEP}\n"
    assert (env / "bin" / "pytest").read_text().startswith(f"#!{env}/bin/python\n")
    made = (env / "READY").stat().st_mtime_ns
    assert envs.ensure_environment([DEP]) == env  # the second build reuses it
    assert (env / "READY").stat().st_mtime_ns == made


def test_an_environment_holding_the_tasks_package_is_refused(wheels: Path, tmp_path: Path) -> None:
    env = envs.ensure_environment(["cbleaky==1.0"])  # pulls in tripler, the answer
    assert envs.resolved(env)["tripler"] == "1.0"
    with pytest.raises(envs.EnvironmentFailed, match=r"(?i)tripler==1\.0, the task's own package"):
        envs.refuse_package(env, "Tripler")
    envs.refuse_package(env, "cbdep")  # anything else is fine


@needs_bwrap
def test_the_leak_scan_walks_the_environment_and_not_the_harness_venv(wheels: Path) -> None:
    env = envs.ensure_environment([DEP])
    roots = scan_roots(harness_dirs(), env)  # the build cache holding it is hidden
    site = next(env.glob("lib/python3*/site-packages"))
    assert any(root == site or root in site.parents for root in roots)
    venv = Path(sys.prefix).resolve()
    assert not any(root == venv or venv in root.parents for root in roots)


@needs_bwrap
@pytest.mark.parametrize("track_changes", [True, False], ids=["agent", "grading"])
def test_the_sandbox_shows_the_environment_and_not_the_harness_venv(
    wheels: Path, tmp_path: Path, track_changes: bool
) -> None:
    env = envs.ensure_environment([DEP])
    (tmp_path / "ws").mkdir()
    backend = open_backend("bubblewrap", SandboxSettings())
    box = backend.open(tmp_path / "ws", tmp_path / "box", track_changes=track_changes,
                       python_env=env)  # fmt: skip
    try:
        probe = "import sys, cbdep, pytest, coverage; print(sys.prefix, cbdep.times(2, 3))"
        done = box.execute(Command([sys.executable, "-c", probe], timeout=60))
        assert done.exit_code == 0, done.output
        assert done.output.split() == [str(env), "6"]
        for harness_only in ("sqlalchemy", "typer", "pydantic"):
            done = box.run(f"python -c 'import {harness_only}'", 30)
            assert "ModuleNotFoundError" in done.output, done.output
        done = box.run(f"test -e {sys.prefix} || echo absent; command -v python pytest", 30)
        assert done.output.split() == ["absent", f"{env}/bin/python", f"{env}/bin/pytest"]
        assert box.run("pytest --version", 30).exit_code == 0
        assert "read-only" in box.run(f"touch {env}/x || echo read-only", 30).output
        paths = "import sys; print(*[p for p in sys.path if p], sep=chr(10))"
        done = box.execute(Command([sys.executable, "-I", "-c", paths], timeout=30))
        base = Path(sys.base_prefix).resolve()
        assert all(Path(p).is_relative_to(env) or Path(p).is_relative_to(base)
                   for p in done.output.split()), done.output  # fmt: skip
        for left_out in env_left_out():  # the base's own site-packages, test suite, ...
            assert box.run(f"ls -A {left_out}", 30).output.strip() == "", left_out
    finally:
        box.close()
    assert Path(sys.prefix).resolve() not in python_paths(env)


@pytest.mark.docker
def test_the_docker_sandbox_shows_the_environment_and_not_the_harness_venv(
    wheels: Path, tmp_path: Path
) -> None:
    env = envs.ensure_environment([DEP])
    (tmp_path / "ws").mkdir()
    backend = open_backend("docker", SandboxSettings())
    box = backend.open(tmp_path / "ws", tmp_path / "box", python_env=env)
    try:
        probe = "import sys, cbdep, pytest; print(sys.prefix, cbdep.times(2, 3))"
        done = box.execute(Command([sys.executable, "-c", probe], timeout=60))
        assert done.output.split() == [str(env), "6"], done.output
        done = box.run("python -c 'import sqlalchemy'; ls -A " + sys.prefix, 30)
        assert "ModuleNotFoundError" in done.output and "pyvenv.cfg" not in done.output
        done = box.run(f"touch {env}/x || echo read-only", 30)
        assert "read-only" in done.output
    finally:
        box.close()


def _graded(built: BuiltTask, backend_name: str, scratch: Path) -> tuple[bool, bool]:
    prepared = built.prepared()
    backend = open_backend(backend_name, SandboxSettings(hidden=tuple(prepared.secret_paths)))
    solved = grade(prepared, built.reference_patch, backend, scratch / "ref")
    unsolved = grade(prepared, "", backend, scratch / "base")
    assert solved.resolved, solved.output[-2000:] or solved.error
    return solved.resolved, unsolved.resolved


@pytest.mark.slow
@needs_bwrap
def test_a_task_with_an_environment_builds_and_grades_on_bubblewrap(
    wheels: Path, tmp_path: Path
) -> None:
    built = build(tripler_task(tmp_path, [DEP]))
    assert built.python_env == envs.environment_path([DEP])
    assert built.prepared().python_env == built.python_env
    assert _graded(built, "bubblewrap", tmp_path / "grade") == (True, False)
    # Control: the same task in the harness's venv, which lacks cbdep, is never resolved.
    bare = build(built.task.model_copy(update={"environment": None}), scan=False)
    assert bare.python_env is None
    control = grade(bare.prepared(), bare.reference_patch, open_backend("bubblewrap"), tmp_path)
    assert not control.resolved and "No module named 'cbdep'" in control.output


@pytest.mark.slow
@needs_bwrap
def test_a_task_with_an_environment_passes_full_validation(wheels: Path, tmp_path: Path) -> None:
    from cursorbench.validation.checks import validate_full

    record = validate_full(build(tripler_task(tmp_path, [DEP])), "bubblewrap")
    assert record.valid, record.problems
    assert record.coverage == 1.0 and len(record.perturbations) == 3


@pytest.mark.slow
@pytest.mark.docker
def test_a_task_with_an_environment_grades_on_docker(wheels: Path, tmp_path: Path) -> None:
    built = build(tripler_task(tmp_path, [DEP]))
    assert _graded(built, "docker", tmp_path / "grade") == (True, False)


def test_a_task_whose_environment_holds_its_package_does_not_build(
    wheels: Path, tmp_path: Path
) -> None:
    task = tripler_task(tmp_path, ["cbleaky==1.0"])
    package = {"kind": "package", "name": "tripler", "version": "1.0", "sha256": "0" * 64}
    leaky = Task.model_validate(task.model_dump() | {"source": package, "path": task.path})
    with pytest.raises(BuildError, match=r"environment: .*the task's own package"):
        ensure_task_environment(leaky)
    assert os.path.isdir(envs.environment_path(["cbleaky==1.0"]))


def test_a_task_with_an_environment_is_not_exported_to_harbor(tmp_path: Path) -> None:
    from cursorbench.harbor.export import ExportSkipped, export_task

    built = BuiltTask(tripler_task(tmp_path, [DEP]), "x", tmp_path / "built")
    with pytest.raises(ExportSkipped, match="an environment of its own"):
        export_task(built, tmp_path / "out", "image:tag")
    assert not (tmp_path / "out").exists()


def test_a_worker_without_the_tasks_environment_says_so(tmp_path: Path) -> None:
    from harness.results import Attempt
    from harness.run.remote import AttemptJob, pack_task, unpack_task

    (tmp_path / "ws").mkdir()
    (tmp_path / "hidden").mkdir()
    built = BuiltTask(tripler_task(tmp_path, [DEP]), "x", tmp_path)
    prepared = built.prepared().model_copy(
        update={"workspace": tmp_path / "ws", "hidden_dir": tmp_path / "hidden",
                "python_env": tmp_path / "elsewhere"}
    )  # fmt: skip
    job = AttemptJob(prepared, Attempt(task_id=prepared.id, epoch=0), digest="d")
    with pytest.raises(envs.EnvironmentFailed, match="is not on this worker"):
        unpack_task(job, pack_task(prepared), tmp_path / "cache")


@needs_bwrap
@pytest.mark.slow
# it plants a task's answer in the harness's site-packages for a moment, as test_sources does:
# a build's leak scan beside it would find it, and every process started meanwhile makes a
# system tree of its own (the view's key follows the site-packages folder's time)
@pytest.mark.exclusive
def test_validation_scans_what_the_tasks_sandboxes_show(
    wheels: Path, cursorbench_home: Path, tmp_path: Path
) -> None:
    """The answer in the harness's venv, which a task with its own environment never shows:
    no leak for that task (validation once scanned the harness's venv for every task, and
    refused v2's mako tasks, whose package the harness has installed)."""
    from cursorbench.validation.checks import validate_full
    from tests.cursorbench.sdists import EXTRA, tiny_task

    built = build(tiny_task(cursorbench_home, tmp_path, environment={"requirements": [DEP]}))
    planted = Path(sysconfig.get_paths()["purelib"]) / f"cb_planted_{uuid.uuid4().hex[:8]}.py"
    planted.write_text(EXTRA)
    try:
        record = validate_full(built, "bubblewrap", perturb=False)
    finally:
        planted.unlink()
    assert not [p for p in record.problems if p.startswith("leak")], record.problems
    assert record.valid, record.problems
