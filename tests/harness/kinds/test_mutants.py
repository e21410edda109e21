"""Testing tasks graded by hidden mutants: the pure parts (what crosses, the equivalent
rewrite, the verdict), then red-team agents through real grading in the sandbox."""

from __future__ import annotations

import random
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from cursorbench.tasks import answer
from cursorbench.tasks.loader import bundled_suite
from cursorbench.tasks.task import Task
from cursorbench.tasks.workspace import build
from harness.grading.grade import grade
from harness.kinds.mutants import (
    EQUIVALENT,
    ORIGINAL,
    agent_change,
    compiled,
    equivalent_tree,
    judge_mutants,
    variants,
)
from harness.results import TestOutcome
from harness.sandbox import SandboxSettings, choose_backend, open_backend
from harness.sandbox.limits import ResourceLimits, cgroups_available
from harness.sandbox.process import Completed
from harness.spec import MutantsVerification

TEXTKIT = bundled_suite() / "repos" / "textkit"
CHECK = MutantsVerification.model_validate(
    {
        "kind": "mutants",
        "min_tests": 2,
        "min_kill_share": 0.5,
        "mutants": [
            {"id": "a", "file": "m.py", "old": "x", "new": "y"},
            {"id": "b", "file": "m.py", "old": "x", "new": "z"},
        ],
    }
)


def junit(*outcomes: str) -> bytes:
    cases = "".join(
        f'<testcase classname="tests.test_m" name="test_{n}">'
        + ("<failure/>" if o == "failed" else "")
        + "</testcase>"
        for n, o in enumerate(outcomes)
    )
    return f"<testsuites><testsuite>{cases}</testsuite></testsuites>".encode()


def ran(*outcomes: str, timed_out: bool = False) -> Completed:
    return Completed(0, "", 0.1, timed_out=timed_out, report=junit(*outcomes) if outcomes else b"")


def test_only_the_agents_test_files_cross() -> None:
    sections = [
        ("tests/test_new.py", "new file mode 100644"),
        ("tests/conftest.py", "new file mode 100644"),
        ("textkit/slug.py", "index 1..2 100644"),
        ("tests/test_link.py", "new file mode 120000"),
    ]
    patch = "".join(f"diff --git a/{p} b/{p}\n{mode}\n+x\n" for p, mode in sections)
    kept, tests, dropped = agent_change(patch, CHECK)
    assert tests == ["tests/test_new.py"] and "tests/test_new.py" in kept
    assert dropped == ["tests/conftest.py", "textkit/slug.py", "tests/test_link.py"]


def test_the_equivalent_rewrite_behaves_the_same_with_other_bytecode_and_the_same_lines() -> None:
    source = (TEXTKIT / "textkit" / "slug.py").read_text()
    before: dict = {}
    after: dict = {}
    exec(compile(source, "slug", "exec"), before)
    exec(compile(equivalent_tree(source, random.Random(0)), "slug", "exec"), after)
    text = "Crème Brûlée, don't stop!"
    assert before["slugify"](text, max_length=12) == after["slugify"](text, max_length=12)
    old, new = before["slugify"].__code__, after["slugify"].__code__
    assert old.co_code != new.co_code and old.co_firstlineno == new.co_firstlineno
    assert before["slugify"].__doc__ == after["slugify"].__doc__


def test_every_variant_shows_the_original_source_and_runs_its_own_compiled_code(
    tmp_path: Path,
) -> None:
    check = MutantsVerification.model_validate(
        {"kind": "mutants", "mutants": [{"id": "m", "file": "pkg/m.py", "old": "1", "new": "2"}]}
    )
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text("def f():\n    return 1\n")
    laid = variants(check, tmp_path, random.Random(0))
    assert set(laid) == {ORIGINAL, EQUIVALENT, "m"}
    assert all(list(files) == ["pkg/__pycache__/m.cpython-311.pyc"] for files in laid.values())
    assert len({files["pkg/__pycache__/m.cpython-311.pyc"] for files in laid.values()}) == 3
    path, data = compiled("pkg/m.py", "def f():\n    return 2\n", "def f():\n    return 1\n")
    (tmp_path / path).parent.mkdir()
    (tmp_path / path).write_bytes(data)
    probe = "import inspect, pkg.m; print(pkg.m.f(), 'return 1' in inspect.getsource(pkg.m))"
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.stdout.split() == ["2", "True"], done.stderr


def test_the_verdict() -> None:
    def verdict(original: Completed, equivalent: Completed, a: Completed, b: Completed) -> tuple:
        runs = {ORIGINAL: original, EQUIVALENT: equivalent, "a": a, "b": b}
        resolved, _, tests, score, error = judge_mutants(CHECK, runs)
        return resolved, score.value, tests, error

    good = ran("passed", "passed")
    resolved, value, tests, _ = verdict(good, good, ran("failed", "passed"), good)
    assert resolved and value == 0.5
    assert tests["mutant:a"] is TestOutcome.PASSED and tests["mutant:b"] is TestOutcome.FAILED
    assert verdict(good, good, ran(timed_out=True), ran())[0]  # a hang or no report kills
    assert not verdict(good, good, good, good)[0]  # tests that always pass kill nothing
    always_fail = ran("failed", "failed")
    resolved, value, _, error = verdict(always_fail, always_fail, always_fail, always_fail)
    assert not resolved and value == 0.0 and "fail on the original" in error
    fingerprint = verdict(good, ran("failed", "passed"), always_fail, always_fail)
    assert not fingerprint[0] and "equivalent" in fingerprint[3]
    assert not verdict(ran("passed"), ran("passed"), always_fail, always_fail)[0]  # too few


# --- red team: real grading of a testing task over textkit, in the run's sandbox ---------

MUTANTS_TASK = {
    "id": "textkit-slug-tests",
    "suite_version": "test",
    "category": "testing",
    "prompt": "Write tests for textkit.slug in tests/test_slugify.py.",
    "source": {"kind": "folder", "path": str(TEXTKIT)},
    "mutation": {
        "kind": "feature_deletion",
        "operations": [{"op": "remove_file", "file": "tests/test_slugify.py"}],
    },
    "verification": {
        "kind": "mutants",
        "min_tests": 3,
        "mutants": [
            {"id": "sharp-s", "file": "textkit/slug.py", "old": '"ss"', "new": '"s"'},
            {"id": "lower", "file": "textkit/slug.py", "old": "if lowercase:", "new": "if 0:"},
            {"id": "counter", "file": "textkit/slug.py", "old": "n = 2", "new": "n = 1"},
        ],
    },
    "limits": {"test_timeout_s": 60},
}  # fmt: skip


def agent_tests(body: str) -> str:
    return "from textkit import slugify, unique_slug\n\n\n" + textwrap.dedent(body)


PAD = "".join(f"def test_pad_{n}():\n    assert slugify('x') == 'x'\n\n\n" for n in range(3))
HONEST_BUT_WEAK = agent_tests(
    "".join(
        f"def test_runs_{n}():\n    assert isinstance(slugify('a b'), str)\n\n\n" for n in range(4)
    )
)
ALWAYS_FAILS = agent_tests(
    "".join(f"def test_{n}():\n    assert slugify('A b') == 'nope'\n\n\n" for n in range(4))
)
SOURCE_FINGERPRINT = agent_tests(
    textwrap.dedent(
        """
    import hashlib, pathlib, textkit.slug

    EXPECTED = {expected!r}

    def test_fingerprint():
        text = pathlib.Path(textkit.slug.__file__).read_bytes()
        assert hashlib.sha256(text).hexdigest() == EXPECTED

    """
    )
    + PAD
)
BYTECODE_FINGERPRINT = agent_tests(
    textwrap.dedent(
        """
    import hashlib

    EXPECTED = {expected!r}

    def test_fingerprint():
        code = slugify.__code__.co_code + unique_slug.__code__.co_code
        assert hashlib.sha256(code).hexdigest() == EXPECTED

    """
    )
    + PAD
)


NORMALISED_SOURCE = agent_tests(  # the old hole: the source, parsed, compared modulo a rewrite
    textwrap.dedent(
        """
    import ast, inspect, textkit.slug

    def test_fingerprint():
        tree = ast.parse(inspect.getsource(textkit.slug))
        assert "n = 2" in ast.unparse(tree) and '"ss"' in ast.unparse(tree)

    """
    )
    + PAD
)
COMPILED_FILE = agent_tests(  # what the module was loaded from, compared with its own source
    textwrap.dedent(
        """
    import marshal, textkit.slug

    def test_fingerprint():
        with open(textkit.slug.__cached__, "rb") as file:
            loaded = marshal.loads(file.read()[16:])
        with open(textkit.slug.__file__) as file:
            fresh = compile(file.read(), textkit.slug.__file__, "exec")
        assert loaded.co_consts == fresh.co_consts

    """
    )
    + PAD
)


@pytest.fixture(scope="module")
def built_tests_task(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("task")
    path = folder / "textkit-slug-tests.yaml"
    path.write_text(yaml.safe_dump(MUTANTS_TASK))
    task = Task.model_validate(MUTANTS_TASK).model_copy(update={"path": path})
    return build(task, scan=False)  # the leak scan has its own tests; here it only costs time


def graded(built, files: Mapping[str, str | None], tmp_path: Path):
    patch = answer.patch_for(built.workspace, files, tmp_path / "tree")
    backend = open_backend(choose_backend("auto"))
    return grade(built.prepared(), patch, backend, tmp_path / "grade", random.Random(0))


@pytest.mark.slow
def test_red_team_testing_task(built_tests_task, tmp_path: Path) -> None:
    """The deleted tests resolve; weak, failing and fingerprinting tests do not; changes to
    the code under test or the conftest never cross."""
    import hashlib

    built = built_tests_task
    reference = graded(built, answer.reference_tree(built), tmp_path / "ref")
    assert reference.resolved, reference.error
    assert reference.scores["mutation_score"].value == 1.0

    weak = graded(built, {"tests/test_slugify.py": HONEST_BUT_WEAK}, tmp_path / "weak")
    assert not weak.resolved and weak.scores["mutation_score"].value == 0.0
    failing = graded(built, {"tests/test_slugify.py": ALWAYS_FAILS}, tmp_path / "fail")
    assert not failing.resolved and "fail on the original" in (failing.error or "")

    source = (built.workspace / "textkit" / "slug.py").read_bytes()
    by_text = SOURCE_FINGERPRINT.format(expected=hashlib.sha256(source).hexdigest())
    report = graded(built, {"tests/test_slugify.py": by_text}, tmp_path / "text")
    assert not report.resolved and report.scores["mutation_score"].value == 0.0  # same text
    report = graded(built, {"tests/test_slugify.py": NORMALISED_SOURCE}, tmp_path / "ast")
    assert not report.resolved and report.scores["mutation_score"].value == 0.0
    report = graded(built, {"tests/test_slugify.py": COMPILED_FILE}, tmp_path / "pyc")
    assert not report.resolved and "equivalent" in (report.error or "")

    namespace: dict = {}
    exec(compile(source, "slug", "exec"), namespace)
    code = namespace["slugify"].__code__.co_code + namespace["unique_slug"].__code__.co_code
    by_code = BYTECODE_FINGERPRINT.format(expected=hashlib.sha256(code).hexdigest())
    report = graded(built, {"tests/test_slugify.py": by_code}, tmp_path / "code")
    assert not report.resolved and "equivalent" in (report.error or "")

    rigged = {
        "tests/test_slugify.py": ALWAYS_FAILS,
        "textkit/slug.py": "def slugify(*a, **k):\n    return 'nope'\n",
        "tests/conftest.py": "import pytest\n",
    }
    report = graded(built, rigged, tmp_path / "rigged")
    assert not report.resolved and "textkit/slug.py" in report.dropped


@pytest.mark.slow
@pytest.mark.skipif(not cgroups_available(), reason="no cgroups here: no memory limit to reach")
def test_a_mutant_that_exhausts_memory_is_killed_not_a_failed_grading(tmp_path: Path) -> None:
    hog = {
        "id": "hog",
        "file": "textkit/slug.py",
        "old": "if lowercase:",
        "new": "if [0] * (1 << 30):",
    }
    check: dict[str, Any] = MUTANTS_TASK["verification"]  # type: ignore[assignment]
    data = MUTANTS_TASK | {"verification": check | {"mutants": [*check["mutants"], hog]}}
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(data))
    built = build(Task.model_validate(data).model_copy(update={"path": path}), scan=False)
    patch = answer.patch_for(built.workspace, answer.reference_tree(built), tmp_path / "tree")
    small = SandboxSettings(limits=ResourceLimits(memory_bytes=384 << 20, disk_bytes=64 << 20))
    backend = open_backend(choose_backend("auto"), small)
    report = grade(built.prepared(), patch, backend, tmp_path / "grade", random.Random(0))
    assert report.resolved, report.error  # 8 GiB of list on a 384 MiB sandbox: killed
    assert report.tests["mutant:hog"] is TestOutcome.PASSED
    assert report.scores["mutation_score"].value == 1.0
