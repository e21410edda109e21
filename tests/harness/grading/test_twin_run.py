"""The twin run: the hidden tests again with the restored functions stubbed, which honest code
fails and a forged report passes; the code under test sees the same command both times."""

from __future__ import annotations

import ast
import random
import textwrap
from pathlib import Path
from typing import Any

import pytest

from cursorbench.tasks import answer
from cursorbench.tasks.loader import tasks_from_options
from cursorbench.tasks.workspace import build
from harness.grading.grade import grade
from harness.grading.twin import (
    STUB_BODY,
    defined_names,
    must_fail,
    plan,
    restored_functions,
    sprung,
)
from harness.kinds.testrun import _split
from harness.results import Failure
from harness.results import TestOutcome as Outcome
from harness.sandbox import open_backend
from tests.harness.grading.test_grading import Recording

REFERENCE = textwrap.dedent(
    """
    def helper(x):
        return x


    def slugify(text):
        return helper(text).lower()


    class Cache:
        def __init__(self):
            self.items = {}

        def get(self, key):
            return self.items.get(key)
    """
)


def test_restored_functions_are_the_functions_holding_removed_lines() -> None:
    lines = set(range(1, len(REFERENCE.splitlines()) + 1))
    assert restored_functions(REFERENCE, lines) == [
        "helper", "slugify", "Cache.__init__", "Cache.get",
    ]  # fmt: skip
    assert restored_functions(REFERENCE, {7}) == ["slugify"]
    assert restored_functions("def broken(:\n", {1}) == []


def test_the_plan_stubs_each_restored_function_wherever_the_agent_defined_it() -> None:
    agent = {
        "pkg/slug.py": "def slugify(text):\n    return text.lower()\n",
        "pkg/other.py": "class Cache:\n    def get(self, key): return key\n",
        "pkg/__init__.py": "from .slug import slugify\nfrom .other import Cache\n",
    }
    planned = plan(agent, {"pkg/slug.py": ["slugify", "Cache.get"]})
    assert planned.conclusive == {"slugify", "Cache.get"} and planned.inconclusive == {}
    assert planned.files["pkg/slug.py"] == f"def slugify(text):\n    {STUB_BODY}\n"
    assert STUB_BODY in planned.files["pkg/other.py"] and "pkg/__init__.py" not in planned.files
    ast.parse(planned.files["pkg/other.py"])


@pytest.mark.parametrize(
    ("files", "why"),
    [
        ({"pkg/slug.py": "slugify = str.lower\n"}, "otherwise than by a def"),
        ({"pkg/slug.py": "def slugify(t):\n    return t\n\n\nslugify = str.lower\n"}, "otherwise"),
        ({"pkg/slug.py": "from python_slugify import slugify\n"}, "imports it"),
        ({"pkg/slug.py": "def broken(:\n"}, "no def"),
    ],
    ids=["assigned", "rebound", "imported", "unparsable"],
)
def test_a_name_bound_otherwise_is_not_vouched_for(files: dict[str, str], why: str) -> None:
    planned = plan(files, {"pkg/slug.py": ["slugify"]})
    assert planned.conclusive == set() and why in planned.inconclusive["slugify"]


TESTS = textwrap.dedent(
    """
    import unittest

    import pytest

    from pkg import Cache, slugify as slug


    def test_plain():
        assert slug("A") == "a"


    @pytest.mark.parametrize("x", ["A", "B"])
    def test_param(x):
        result = slug(x)
        assert result


    def test_raises():
        with pytest.raises(Exception):
            slug(None)


    def test_lazy():
        f = lambda: slug("A")
        assert [slug(x) for x in []] == [] and f
        assert True or slug("A")


    def test_after_a_branch():
        if True:
            pass
        assert slug("A") == "a"


    def test_method():
        cache = Cache()
        assert cache.get("k") is None


    @some_decorator
    def test_decorated():
        assert slug("A") == "a"


    class SlugTests(unittest.TestCase):
        def test_unit(self):
            self.assertEqual(slug("A"), "a")
    """
)


def test_must_fail_are_the_tests_that_surely_call_a_stubbed_function() -> None:
    found = must_fail({"tests/test_s.py": TESTS}, {"slugify", "Cache.get"})
    assert found == {
        "tests/test_s.py::test_plain": "slugify",
        "tests/test_s.py::test_param": "slugify",
        "tests/test_s.py::SlugTests::test_unit": "slugify",
        "tests/test_s.py::test_method": "Cache.get",  # on an instance made in the test
    }
    found = must_fail({"tests/test_s.py": TESTS}, {"Cache.__init__"})
    assert found == {"tests/test_s.py::test_method": "Cache"}


def test_calls_through_an_imported_module_count_unless_the_name_is_defined_elsewhere() -> None:
    tests = "import pydash as _\n\n\ndef test_add():\n    assert _.add(1, 2) == 3\n"
    assert must_fail({"tests/test_n.py": tests}, {"add"}) == {"tests/test_n.py::test_add": "add"}
    assert must_fail({"tests/test_n.py": tests}, {"add"}, elsewhere={"add"}) == {}
    assert defined_names({"pkg/ops.py": "def add(a, b):\n    return a + b\n"}) == {"add"}


def test_the_hidden_run_keeps_the_tasks_options() -> None:
    hidden = ["tests/test_s.py"]
    assert _split(["tests", "-p", "pytest_mock"], hidden) == [
        ["tests/test_s.py", "-p", "pytest_mock"],
        ["tests", "-p", "pytest_mock", "--ignore=tests/test_s.py"],
    ]
    assert _split(["tests/test_s.py"], hidden) == [["tests/test_s.py"]]


def test_a_local_definition_shadows_the_import() -> None:
    local = "from pkg import slugify\n\n\ndef slugify(x):\n    return x\n\n\n"
    local += "def test_a():\n    assert slugify('a') == 'a'\n"
    assert must_fail({"tests/test_s.py": local}, {"slugify"}) == {}


def test_sprung_are_must_fail_tests_reported_passed_in_the_twin() -> None:
    must = {"tests/test_s.py::test_param": "slugify", "tests/test_s.py::T::test_u": "slugify"}
    report = {
        ("tests.test_s", "test_param[A]"): Outcome.PASSED,
        ("tests.test_s", "test_param[B]"): Outcome.FAILED,
        ("tests.test_s.T", "test_u"): Outcome.ERROR,
    }
    assert sprung(must, report) == ["twin: tests/test_s.py::test_param[A] passed (slugify)"]


# --- through grading, on a bundled task -----------------------------------------------------


@pytest.fixture(scope="module")
def built() -> Any:
    return build(tasks_from_options(["textkit-slugify"])[0])


def canary_aware_forger(built: Any, tmp_path: Path) -> str:
    """Patches every report of a test the upstream file has to passed, and leaves every other
    test (the canaries) to fail honestly, as a forger that remembers the upstream file does."""
    upstream = (built.hidden / "tests/test_slugify.py").read_text()
    known = sorted(
        {n.name for n in ast.walk(ast.parse(upstream)) if isinstance(n, ast.FunctionDef)}
    )
    code = textwrap.dedent(
        f"""
        import _pytest.reports as _reports

        _KNOWN = {known!r}
        _original = _reports.TestReport.from_item_and_call.__func__


        def _selective(cls, item, call):
            report = _original(cls, item, call)
            if item.name.split("[")[0] in _KNOWN:
                report.outcome, report.longrepr = "passed", None
            return report


        _reports.TestReport.from_item_and_call = classmethod(_selective)


        def slugify(*args, **kwargs):
            return ""


        def unique_slug(*args, **kwargs):
            return ""
        """
    )
    init = (built.original / "textkit/__init__.py").read_text()
    changes = {"textkit/slug.py": code, "textkit/__init__.py": init}
    return answer.patch_for(built.workspace, changes, tmp_path / "patch")


def test_a_forger_that_spares_every_canary_is_caught_by_the_twin(
    built: Any, tmp_path: Path
) -> None:
    patch = canary_aware_forger(built, tmp_path)
    report = grade(built.prepared(), patch, open_backend("subprocess"), tmp_path, random.Random(0))
    assert report.failure is Failure.GRADER_TAMPERING, report.error
    assert report.canaries_passed and all(c.startswith("twin:") for c in report.canaries_passed)


def test_the_twin_runs_the_hidden_files_with_the_real_runs_argv(built: Any, tmp_path: Path) -> None:
    backend = Recording(open_backend("subprocess"))
    report = grade(built.prepared(), built.reference_patch, backend, tmp_path, random.Random(0))
    assert report.resolved and report.canaries_passed == [], report.error
    calls = [call for call in backend.calls if "pytest" in call["argv"]]
    hidden = [call for call in calls if "tests/test_slugify.py" in call["argv"]]
    assert len(calls) == 3 and len(hidden) == 2  # the real hidden run and the twin
    assert hidden[0] == hidden[1]  # argv, environment, paths, options: all the same
    (rest,) = [call for call in calls if call not in hidden]
    assert "--ignore=tests/test_slugify.py" in rest["argv"]


def honest_variant(built: Any, tmp_path: Path, where: str) -> str:
    """The reference's slug module under another name, or its functions bound by assignment:
    honest code the twin must not take for tampering."""
    slug = (built.original / "textkit/slug.py").read_text()
    init = (built.original / "textkit/__init__.py").read_text()
    if where == "another-module":
        init = init.replace("from .slug import", "from .slugs import")
        changes = {"textkit/slugs.py": slug, "textkit/__init__.py": init}
    else:  # the public names bound by assignment to the reference's functions
        renamed = slug.replace("def slugify(", "def _slugify(").replace("slugify(", "_slugify(")
        renamed = renamed.replace("def unique_slug(", "def _unique_slug(")
        renamed = renamed.replace("def __slugify(", "def _slugify(")
        renamed += "\n\nslugify = _slugify\nunique_slug = _unique_slug\n"
        changes = {"textkit/slug.py": renamed, "textkit/__init__.py": init}
    return answer.patch_for(built.workspace, changes, tmp_path / "patch")


@pytest.mark.parametrize("where", ["another-module", "assigned"])
def test_honest_code_laid_out_otherwise_resolves(built: Any, tmp_path: Path, where: str) -> None:
    patch = honest_variant(built, tmp_path, where)
    report = grade(built.prepared(), patch, open_backend("subprocess"), tmp_path, random.Random(0))
    assert report.resolved and report.canaries_passed == [], report.error
