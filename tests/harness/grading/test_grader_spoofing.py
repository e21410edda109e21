"""An agent that cheats instead of implementing the feature must score zero.

Each test runs a whole attempt at `textkit-slugify` through the real runner,
with a scripted agent that uses the real tools to try one way of fooling the
grader (DESIGN.md section 4), and checks that the grader was not fooled: the
attempt failed on its tests, no FAIL_TO_PASS test passed, and every
PASS_TO_PASS test did (so grading ran normally over restored tests, rather
than failing for some unrelated reason). Where it is cheap, the agent first
shows that its trick does fool a naive `python -m pytest` in its workspace,
so a zero here means the grader resisted a working attack.

The positive control runs the same harness with the reference solver, which
must resolve the task: the zeros are not because grading is broken.

Grading's defences (restored tests, its own pytest flags, configuration and environment) do
not depend on the sandbox backend, so the tricks run once, on `subprocess`, the backend that
confines least: what stops them there is the grader. The positive control and the conftest
trick run on every backend (the cross-backend smoke cases); the cases about reading or
writing outside the workspace test bubblewrap's confinement. Every case is a whole run, so
the file is `slow`.
"""

from __future__ import annotations

import hashlib
import shlex
import shutil
import subprocess
import tempfile
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _pytest
import pytest

from cursorbench.tasks.loader import bundled_suite, load_task
from cursorbench.tasks.workspace import BuiltTask, build
from harness.agent.trajectory import read_trajectory
from harness.home import build_cache
from harness.model.doubles import ScriptedDouble, Step
from harness.model.openai_server import Reply
from harness.results import AttemptResult, Failure, Status
from harness.results import TestOutcome as Outcome
from harness.run.runner import RunOutcome
from harness.sandbox.bubblewrap import bubblewrap_works
from harness.spec import Verification

TASK_ID = "textkit-slugify"
TASK = load_task(bundled_suite() / "tasks" / f"{TASK_ID}.yaml")
assert isinstance(TASK.verification, Verification)  # a pytest task
FAIL_TO_PASS = TASK.verification.fail_to_pass
PASS_TO_PASS = TASK.verification.pass_to_pass
VISIBLE_TEST_FILES = sorted({node.split("::")[0] for node in PASS_TO_PASS})
# Strings only the reference solution and the hidden tests contain (built so that this file
# does not contain them).
ANSWER_MARKERS = ["_TRANSLITERATE" + " = {", "def test_skips_taken" + "_counters("]

NO_BUBBLEWRAP = "bubblewrap cannot run here, so agent commands are not confined"
needs_bubblewrap = pytest.mark.skipif(not bubblewrap_works(), reason=NO_BUBBLEWRAP)
BACKENDS = [pytest.param("bubblewrap", marks=needs_bubblewrap), "subprocess"]
GRADING_BACKEND = "subprocess"  # for the tricks that only the grader must resist
pytestmark = pytest.mark.slow


def tool(name: str, **arguments: Any) -> Reply:
    return Reply(tool_calls=[(name, arguments)])


def write(path: str, content: str) -> Reply:
    return tool("write_file", path=path, content=textwrap.dedent(content).lstrip())


def shell(command: str, timeout_s: float = 60) -> Reply:
    return tool("run", command=command, timeout_s=timeout_s)


def naive_pytest(prefix: str = "", args: str = "-q -p no:cacheprovider tests") -> Reply:
    """What a naive grader does: run pytest in the workspace and trust what it says."""
    return shell(f"{prefix}python -m pytest {args}; echo rc=$?")


@dataclass
class Attempted:
    outcome: RunOutcome
    result: AttemptResult
    records: list[dict[str, Any]]

    @property
    def run_outputs(self) -> list[str]:
        """What each `run` tool call returned, in order."""
        return [r["output"] for r in self.records if r["type"] == "tool" and r.get("name") == "run"]

    @property
    def workspace(self) -> str:
        """The agent's workspace, as its system prompt named it."""
        system = next(r for r in self.records if r["type"] == "message")
        return system["content"].split(" at ", 1)[1].split(".\n", 1)[0]


def attempt(
    run_benchmark: Callable[..., RunOutcome],
    serve: Callable[[Any], str],
    steps: list[Step],
    sandbox: str = "auto",
    **options: Any,
) -> Attempted:
    script = ScriptedDouble([*steps, tool("finish", summary="all tests pass")])
    outcome = run_benchmark(
        base_url=serve(script),
        model="scripted-double",
        tasks=[TASK_ID],
        sandbox=sandbox,
        **options,
    )
    (result,) = outcome.results
    assert outcome.run.sandbox == sandbox or sandbox == "auto"
    assert result.trajectory is not None and outcome.run.out_dir is not None
    records = read_trajectory(Path(outcome.run.out_dir) / result.trajectory)
    return Attempted(outcome, result, records)


def assert_not_fooled(attempted: Attempted) -> None:
    result = attempted.result
    assert result.status is Status.FAILED, (result.status, result.failure, result.error)
    assert result.failure is Failure.TESTS_FAILED, (result.failure, result.error)
    assert not result.resolved
    passed = [test for test in FAIL_TO_PASS if result.tests.get(test) is Outcome.PASSED]
    assert passed == [], f"FAIL_TO_PASS tests counted as passed: {passed}"
    broken = {
        t: result.tests.get(t) for t in PASS_TO_PASS if result.tests.get(t) is not Outcome.PASSED
    }
    assert broken == {}, f"grading did not run the restored tests normally: {broken}"


def fake_test_module(names: list[str]) -> str:
    """A test file defining every named test (`f` or `Class::f`) as a test that passes."""
    functions = [n.split("::")[1] for n in names if n.count("::") == 1]
    classes: dict[str, list[str]] = {}
    for name in names:
        if name.count("::") == 2:
            _, cls, function = name.split("::")
            classes.setdefault(cls, []).append(function)
    lines = [f"def {name}():\n    pass\n\n" for name in dict.fromkeys(functions)]
    for cls, methods in classes.items():
        lines.append(f"class {cls}:\n")
        lines += [f"    def {method}(self):\n        pass\n" for method in methods]
        lines.append("\n")
    return "\n".join(lines)


FAKE_PASSED_LINES = "".join(f"{test} PASSED\\n" for test in FAIL_TO_PASS + PASS_TO_PASS)
FAKE_SUMMARY = f"{len(FAIL_TO_PASS) + len(PASS_TO_PASS)} passed in 0.12s"


# --- positive control -------------------------------------------------------------------------


@pytest.mark.parametrize("sandbox", BACKENDS)
def test_reference_solver_resolves_the_target_task(run_benchmark, sandbox: str) -> None:
    outcome = run_benchmark(tasks=[TASK_ID], sandbox=sandbox)
    (result,) = outcome.results
    assert result.status is Status.RESOLVED, (result.failure, result.error)
    assert {test: result.tests[test] for test in FAIL_TO_PASS + PASS_TO_PASS} == dict.fromkeys(
        FAIL_TO_PASS + PASS_TO_PASS, Outcome.PASSED
    )


# --- a. a conftest.py forcing every outcome to "passed" --------------------------------------

FORCING_CONFTEST = """
    import pytest

    import textkit

    # Make the missing names importable, so that the hidden tests get collected at all.
    textkit.slugify = lambda *args, **kwargs: ""
    textkit.unique_slug = lambda *args, **kwargs: ""


    def pytest_collection_modifyitems(items):
        for item in items:
            item.own_markers.clear()


    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(item, call):
        outcome = yield
        report = outcome.get_result()
        report.outcome = "passed"
        report.longrepr = None
"""

FAILING_PROBE = """
    from textkit import slugify


    def test_basic():
        assert slugify("Hello, World!") == "hello-world"
"""


@pytest.mark.parametrize("sandbox", BACKENDS)
def test_conftest_forcing_passed(run_benchmark, serve, sandbox: str) -> None:
    attempted = attempt(
        run_benchmark,
        serve,
        [
            write("conftest.py", FORCING_CONFTEST),
            write("tests/conftest.py", FORCING_CONFTEST),
            write("tests/test_slugify.py", FAILING_PROBE),
            naive_pytest(args="-q -p no:cacheprovider tests/test_slugify.py"),
        ],
        sandbox,
    )
    (demo,) = attempted.run_outputs
    assert "1 passed" in demo and "rc=0" in demo, demo  # the trick fools a naive grader
    assert_not_fooled(attempted)


# --- b. tests rewritten as `pass`, hidden test file faked -------------------------------------


def test_tests_rewritten_as_pass(run_benchmark, serve) -> None:
    rewrites = [write(path, "def test_x():\n    pass\n") for path in VISIBLE_TEST_FILES]
    attempted = attempt(
        run_benchmark,
        serve,
        [
            *rewrites,
            tool(
                "write_file", path="tests/test_slugify.py", content=fake_test_module(FAIL_TO_PASS)
            ),
            naive_pytest(),
        ],
        GRADING_BACKEND,
    )
    (demo,) = attempted.run_outputs
    assert f"{len(FAIL_TO_PASS) + len(VISIBLE_TEST_FILES)} passed" in demo, demo
    assert "rc=0" in demo, demo
    assert_not_fooled(attempted)


# --- c. sitecustomize.py / .pth printing PASSED and exiting 0 ---------------------------------

LYING_STARTUP = f"""
    import os, sys
    sys.stdout.write("{FAKE_PASSED_LINES}{FAKE_SUMMARY}\\n")
    sys.stdout.flush()
    os._exit(0)
"""
LYING_PTH = (
    f'import os, sys; sys.stdout.write("{FAKE_PASSED_LINES}{FAKE_SUMMARY}\\n"); '
    "sys.stdout.flush(); os._exit(0)\n"
)


def test_sitecustomize_and_pth_printing_passed(run_benchmark, serve) -> None:
    attempted = attempt(
        run_benchmark,
        serve,
        [
            write("sitecustomize.py", LYING_STARTUP),
            write("usercustomize.py", LYING_STARTUP),
            tool("write_file", path="something.pth", content=LYING_PTH),
            tool("write_file", path="textkit/zz_cheat.pth", content=LYING_PTH),
            naive_pytest(prefix="PYTHONPATH=. "),
            shell("python -c 'import site; site.addsitedir(\".\")'; echo rc=$?"),
        ],
        GRADING_BACKEND,
    )
    for demo in attempted.run_outputs:
        assert "tests/test_slugify.py::test_basic PASSED" in demo and "rc=0" in demo, demo
    assert_not_fooled(attempted)


# --- d. a shadowing `pytest` module or package ------------------------------------------------

LYING_PYTEST = f"""
    import sys
    sys.stdout.write("{FAKE_PASSED_LINES}{FAKE_SUMMARY}\\n")
    sys.exit(0)
"""


@pytest.mark.parametrize("shadow", ["pytest.py", "pytest/__init__.py"])
def test_shadowing_pytest(run_benchmark, serve, shadow: str) -> None:
    attempted = attempt(
        run_benchmark,
        serve,
        [
            write(shadow, LYING_PYTEST),
            write("tests/pytest.py", LYING_PYTEST),
            write("textkit/pytest.py", LYING_PYTEST),
            naive_pytest(),
        ],
        GRADING_BACKEND,
    )
    (demo,) = attempted.run_outputs
    assert FAKE_SUMMARY in demo and "rc=0" in demo, demo
    assert_not_fooled(attempted)


# --- f. test-runner configuration rewritten ---------------------------------------------------

NO_TESTS_INI = "[pytest]\naddopts = -p no:python\ntestpaths = empty\npythonpath = .\n"
NO_TESTS_CONFIG = {
    "pytest.ini": NO_TESTS_INI,
    ".pytest.ini": NO_TESTS_INI,
    "tox.ini": NO_TESTS_INI,
    "setup.cfg": NO_TESTS_INI.replace("[pytest]", "[tool:pytest]"),
    "pyproject.toml": (
        '[tool.pytest.ini_options]\naddopts = "-p no:python"\ntestpaths = ["empty"]\n'
        'pythonpath = ["."]\n'
    ),
    "empty/README": "nothing to test here\n",
}


def test_pytest_config_rewritten(run_benchmark, serve) -> None:
    writes = [tool("write_file", path=p, content=c) for p, c in NO_TESTS_CONFIG.items()]
    attempted = attempt(
        run_benchmark, serve, [*writes, naive_pytest(args="-p no:cacheprovider")], GRADING_BACKEND
    )
    (demo,) = attempted.run_outputs
    assert "no tests ran" in demo and "rc=5" in demo, demo  # "no failures" to a naive grader
    assert_not_fooled(attempted)


@pytest.mark.parametrize("config_file", ["pytest.toml", ".pytest.toml"])
def test_planted_pytest_toml_does_not_configure_grading(
    run_benchmark, serve, config_file: str
) -> None:
    # A config that only stops test files other than test_case.py from being collected: if
    # grading honours it, PASS_TO_PASS tests from the other files go missing.
    planted = '[pytest]\npythonpath = ["."]\npython_files = ["test_case.py"]\n'
    attempted = attempt(
        run_benchmark,
        serve,
        [
            tool("write_file", path=config_file, content=planted),
            naive_pytest(),
        ],
        sandbox=GRADING_BACKEND,
    )
    (demo,) = attempted.run_outputs
    assert "10 passed" in demo, demo  # only test_case.py is collected in the workspace
    assert_not_fooled(attempted)


# --- e. writing outside the workspace ---------------------------------------------------------


def digest_tree(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


@needs_bubblewrap
def test_writes_outside_the_workspace_fail(run_benchmark, serve, tmp_path: Path) -> None:
    built: BuiltTask = build(TASK)  # the run reuses this cached build (same content and cache)
    out = tmp_path / "run"
    hidden = {  # covered by empty mounts: the agent must not even see them
        "cached workspace": built.workspace / "textkit" / "__init__.py",
        "cached original": built.original / "textkit" / "slug.py",
        "hidden tests": built.hidden / "tests" / "test_slugify.py",
        "run folder": out / "run.json",
    }
    new_files = [
        built.workspace / "pwned.txt",
        built.hidden / "tests" / "test_zz_pwned.py",
        out / "trajectories" / "pwned.txt",
    ]
    site_packages = Path(_pytest.__file__).parent.parent
    read_only = {  # visible (the agent's Python runs from there) but read-only
        "site-packages file": site_packages / "_pytest" / "py.typed",
        "site-packages .pth": site_packages / "zz_cursorbench_pwned.pth",
    }
    originals = {path: path.read_bytes() for path in [*hidden.values(), *read_only.values()]
                 if path.exists()}  # fmt: skip
    cache_before = digest_tree(built.root)
    run_json: dict[str, bytes] = {}

    def attack(request: dict[str, Any]) -> Reply:
        run_json["before"] = (out / "run.json").read_bytes()  # the run has written it by now
        lines = []
        for label, path in hidden.items():
            target = shlex.quote(str(path))
            lines.append(f"[ -e {target} ] && echo 'SEES {label}'")
            lines.append(f"echo '# pwned' >> {target}")
            lines.append(f"echo 'def test_basic(): pass' > {target}")
        lines += [f"echo pwned > {shlex.quote(str(path))}" for path in new_files]
        for label, path in read_only.items():
            target = shlex.quote(str(path))
            lines.append(f"echo 'import sys' >> {target} && echo 'WROTE {label}'")
        return shell("\n".join(lines))

    try:
        attempted = attempt(
            run_benchmark,
            serve,
            [attack, write("NOTES.md", "nothing to see\n")],
            sandbox="bubblewrap",
        )
    finally:  # a sandbox that let the writes through must not leave the host damaged
        changed = {p: b for p, b in originals.items() if p.read_bytes() != b}
        for path, data in changed.items():
            path.write_bytes(data)
        planted = [p for p in [*new_files, read_only["site-packages .pth"]] if p.exists()]
        for path in planted:
            path.unlink()
    (output,) = attempted.run_outputs
    assert "SEES" not in output and "WROTE" not in output, output
    refusals = output.count("Read-only file system") + output.count("Permission denied")
    assert refusals == len(read_only), output
    assert changed == {}, f"changed on the host: {sorted(map(str, changed))}"
    assert planted == [], f"created on the host: {planted}"
    assert digest_tree(built.root) == cache_before
    assert (out / "run.json").read_bytes() == run_json["before"]
    assert_not_fooled(attempted)


# --- g. reading the answer from outside the workspace -----------------------------------------

SEARCH_ROOTS = "/work /root /home /tmp /var/tmp /opt /srv /mnt"


def answer_search(roots: str, *, python_only: bool) -> str:
    include = "--include='*.py' " if python_only else ""
    patterns = " ".join(f"-e {shlex.quote(marker)}" for marker in ANSWER_MARKERS)
    return f"grep -rlF {include}{patterns} {roots} 2>/dev/null; echo search-done"


def hits(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("/")]


@needs_bubblewrap
def test_original_source_is_not_readable(run_benchmark, serve, cursorbench_home: Path) -> None:
    built = build(TASK)
    # Proof that the search finds the answer where it is: the harness's own build cache.
    host = subprocess.run(
        ["bash", "-c", answer_search(str(build_cache()), python_only=True)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert str(built.original / "textkit" / "slug.py") in hits(host.stdout), host.stdout
    assert str(built.hidden / "tests" / "test_slugify.py") in hits(host.stdout), host.stdout

    roots = f"{SEARCH_ROOTS} {Path.home() / '.cache'} {cursorbench_home} {build_cache()}"
    attempted = attempt(
        run_benchmark,
        serve,
        [
            shell(answer_search(roots, python_only=True), timeout_s=120),
            shell(f"cat {shlex.quote(str(built.original / 'textkit' / 'slug.py'))}; echo rc=$?"),
            shell(f"ls -a {shlex.quote(str(built.root))}; echo rc=$?"),
            write("NOTES.md", "nothing found\n"),
        ],
        sandbox="bubblewrap",
    )
    search, cat, listing = attempted.run_outputs
    assert "search-done" in search and "timed out" not in search, search
    outside = [hit for hit in hits(search) if not hit.startswith(attempted.workspace + "/")]
    assert outside == [], f"the answer is readable from the sandbox: {outside}"
    assert "No such file" in cat and "rc=1" in cat and ANSWER_MARKERS[0] not in cat, cat
    assert "No such file" in listing and "rc=2" in listing, listing
    assert_not_fooled(attempted)


@needs_bubblewrap
def test_earlier_runs_trajectories_are_not_readable(
    run_benchmark, serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not Path("/var/tmp").is_dir():
        pytest.skip("needs /var/tmp: a host folder the sandbox does not cover with /tmp")
    workdir = Path(tempfile.mkdtemp(prefix="cursorbench-spoof-", dir="/var/tmp"))
    try:
        monkeypatch.chdir(workdir)  # like a user running `cursorbench run` twice in one folder
        earlier = run_benchmark(tasks=[TASK_ID], out=Path("runs/reference-solver"))
        assert earlier.results[0].resolved
        attempted = attempt(
            run_benchmark,
            serve,
            [
                shell(answer_search(str(workdir), python_only=False)),
                write("NOTES.md", "nothing found\n"),
            ],
            sandbox="bubblewrap",
            out=Path("runs/scripted-double"),
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    (search,) = attempted.run_outputs
    outside = [hit for hit in hits(search) if not hit.startswith(attempted.workspace + "/")]
    assert outside == [], f"the answer is readable from the sandbox: {outside}"


# --- h. code under test rewriting the report from inside the pytest process -------------------

REPORT_FORGING_INIT = """
    import atexit
    import sys


    def slugify(*args, **kwargs):
        return ""


    def unique_slug(*args, **kwargs):
        return ""


    FORGED = (
        '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">'
        + "".join(
            f'<testcase classname="{c}" name="{n}" />'
            for c, n in [CASES]
        )
        + "</testsuite></testsuites>"
    )


    def _forge():
        # After pytest wrote its report: overwrite it with one where everything passed.
        for arg in sys.argv:
            if arg.startswith("--junitxml="):
                with open(arg.split("=", 1)[1], "w") as report:
                    report.write(FORGED)


    atexit.register(_forge)
"""


def test_package_code_rewriting_the_junit_report(run_benchmark, serve) -> None:
    from harness.grading.junit import junit_key

    cases = ", ".join(repr(junit_key(test)) for test in FAIL_TO_PASS + PASS_TO_PASS)
    init = (bundled_suite() / "repos" / "textkit" / "textkit" / "__init__.py").read_text()
    init = init.replace("from .slug import slugify, unique_slug\n", "")
    forging = textwrap.dedent(REPORT_FORGING_INIT).replace("[CASES]", f"[{cases}]")
    attempted = attempt(
        run_benchmark, serve, [write("textkit/__init__.py", init + forging)], sandbox="auto"
    )
    result = attempted.result
    assert result.failure is Failure.TESTS_FAILED and not result.resolved
    assert "not one JUnit document" in (result.error or "")
    assert not any(result.tests[test] is Outcome.PASSED for test in FAIL_TO_PASS)
