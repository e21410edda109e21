"""Testing tasks (`cursorbench/factory/testing_tasks.py`): which test file and module make
a candidate, its mutants (sites of `bugs`, one per line, spread, deterministic, each an
exactly-once whole-line replacement that compiles), the cheap filters, the prompt; and a
tiny package (rangekit, an sdist made here) from `tasks propose --kind testing` to a task
that `tasks validate` accepts and no do-nothing answer resolves."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from cursorbench.factory import testing_tasks as tt
from cursorbench.factory.bugs import Site
from cursorbench.factory.coverage_map import CoverageMap
from cursorbench.factory.prompts import prompt_problems
from cursorbench.factory.release import Release
from cursorbench.tasks.sources.package import PackageSource
from cursorbench.tasks.task import RemoveFile, Task
from harness.home import build_cache
from harness.kinds.mutants import MutantsVerification, apply_mutant
from harness.patch import glob_regex
from tests.cli_runner import cursorbench
from tests.cursorbench.factory.test_factory_parts import _tree
from tests.cursorbench.sdists import make_sdist, place_sdist

RANGES = '''"""Integer ranges: clamping, overlap, spans and chunks."""


def clamp(value, low, high):
    """Limit a value to the range from low to high."""
    if value < low:
        return low
    if value > high:
        return high
    return value


def overlaps(a_start, a_end, b_start, b_end):
    """Whether two half-open ranges share a point."""
    return a_start < b_end and b_start < a_end


def span(values):
    """The smallest and the largest of the values, or None for none."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[0], ordered[len(ordered) - 1]


def chunks(items, size):
    """Consecutive pieces of the items, size long (the last may be shorter)."""
    found = []
    for start in range(0, len(items), size):
        found.append(items[start : start + size])
    return found
'''

TEST_RANGES = """from rangekit.ranges import chunks, clamp, overlaps, span


def test_clamp_inside():
    assert clamp(5, 0, 10) == 5


def test_clamp_below():
    assert clamp(-3, 0, 10) == 0


def test_clamp_above():
    assert clamp(12, 0, 10) == 10


def test_overlapping_ranges():
    assert overlaps(0, 5, 3, 8) is True


def test_touching_ranges_do_not_overlap():
    assert overlaps(0, 5, 5, 8) is False


def test_span_of_values():
    assert span([3, 1, 2]) == (1, 3)


def test_span_of_nothing():
    assert span([]) is None


def test_chunks_of_two():
    assert chunks([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]
"""

TEST_UNITS = """from rangekit.units import to_cm


def test_inch():
    assert to_cm(1) == 2.54


def test_zero():
    assert to_cm(0) == 0
"""

RANGEKIT = {
    "pyproject.toml": '[project]\nname = "rangekit"\nversion = "1.0"\n',
    "PKG-INFO": "Metadata-Version: 2.1\nName: rangekit\nVersion: 1.0\n",
    "src/rangekit/__init__.py": '"""rangekit: small helpers for integer ranges."""\n',
    "src/rangekit/ranges.py": RANGES,
    "src/rangekit/units.py": "def to_cm(inches):\n    cm = inches * 2.54\n    return cm\n",
    "tests/test_ranges.py": TEST_RANGES,
    "tests/test_units.py": TEST_UNITS,
}
MODULE = "src/rangekit/ranges.py"


def _line(needle: str) -> int:
    return next(n for n, line in enumerate(RANGES.splitlines(), 1) if needle in line)


def _map(
    outcomes: dict[str, str] | None = None, imported: frozenset[int] = frozenset()
) -> CoverageMap:
    """rangekit's coverage as its suite would give it: the ranges tests run every body
    line of `ranges.py` (`imported` ones at import too), the top-level lines run at import
    only; the units tests run `units.py`."""
    ranges = [f"tests/test_ranges.py::{n}" for n in re.findall(r"def (test_\w+)", TEST_RANGES)]
    units = ["tests/test_units.py::test_inch", "tests/test_units.py::test_zero"]
    lines = RANGES.splitlines()
    statements = [n for n, x in enumerate(lines, 1) if x.strip() and '"""' not in x]
    by_line: dict[int, set[str]] = {}
    for n in statements:
        top = not lines[n - 1].startswith(" ")
        by_line[n] = {""} if top else set(ranges) | ({""} if n in imported else set())
    runs = {MODULE: by_line, "src/rangekit/units.py": {1: {""}, 2: set(units), 3: set(units)}}
    files = {MODULE: statements, "src/rangekit/units.py": [1, 2, 3]}
    return CoverageMap({t: "passed" for t in ranges + units} | (outcomes or {}), files, runs)


def _rangekit(tmp_path: Path) -> Path:
    return _tree(tmp_path, RANGEKIT)


def test_a_candidate_is_a_test_file_and_the_module_it_runs_most(tmp_path: Path) -> None:
    found = {c.file: c for c in tt.enumerate_testing(_rangekit(tmp_path), _map())}
    ranges, units = found["tests/test_ranges.py"], found["tests/test_units.py"]
    assert ranges.module == MODULE and len(ranges.tests) == 8 and ranges.focus == 1.0
    assert units.module == "src/rangekit/units.py" and len(units.tests) == 2
    assert tt.testing_id("rangekit", ranges) == "rangekit-ranges-tests"
    other = tt.TestingCandidate("tests/test_edges.py", MODULE, [])
    assert tt.testing_id("rangekit", other) == "rangekit-ranges-edges-tests"


def test_mutants_are_on_lines_the_files_tests_run_one_per_line(tmp_path: Path) -> None:
    tree = _rangekit(tmp_path)
    (candidate,) = [c for c in tt.enumerate_testing(tree, _map()) if c.module == MODULE]
    lines = [site.line for site in candidate.sites]
    assert len(lines) == len(set(lines)) == len(candidate.mutants) == 10  # one per line
    assert set(candidate.functions) == {"clamp", "overlaps", "span", "chunks"}
    assert {s.kind for s in candidate.sites} == {"comparison", "negation", "off_by_one",
                                                 "return_value"}  # fmt: skip
    for mutant in candidate.mutants:
        assert mutant.file == MODULE and RANGES.count(mutant.old) == 1
        at = RANGES.index(mutant.old)  # whole lines
        assert (at == 0 or RANGES[at - 1] == "\n") and RANGES[at + len(mutant.old)] == "\n"
        compile(apply_mutant(RANGES, mutant.old, mutant.new), MODULE, "exec")
    # what runs at import is left out (a mutant there breaks every test, and the import)
    imported = frozenset({_line("if value < low"), _line("return high")})
    (candidate,) = [
        c for c in tt.enumerate_testing(tree, _map(imported=imported)) if c.module == MODULE
    ]
    assert imported.isdisjoint(site.line for site in candidate.sites)
    assert len(candidate.mutants) == 8


def test_no_mutant_in_a_while_loop_nor_one_that_does_not_compile() -> None:
    text = (
        "def drain(items):\n    while items and items[0] > 0:\n        items.pop(0 + 0)\n"
        "    if not items:\n        return 0\n    return len(items)\n"
    )
    found = tt.module_mutants(text, "m.py", set(range(1, 7)), set())
    lines = {site.line for pairs in found.values() for site, _ in pairs}
    assert lines == {4}  # the loop's condition and body are left out, the `if` is kept
    at = text.index("not items")
    dropped = Site("negation", "drain", 4, at, at + 4, b"")
    assert tt._mutant("m.py", text, dropped) is not None
    assert tt._mutant("m.py", text, Site("negation", "drain", 4, at, at + 4, b"(")) is None


def test_mutants_are_deterministic_spread_and_capped() -> None:
    def body(k: int) -> str:  # one kind of site after the other
        found = "".join(f"    if x < {k}{n}:\n        pass\n" for n in range(3, 12))
        return found + "".join(f"    x = x + {k}{n}\n" for n in range(3, 12))

    text = "".join(f"def f{k}(x):\n{body(k)}    return x\n\n\n" for k in range(1, 7))
    lines = set(range(1, text.count("\n") + 1))
    by_function = tt.module_mutants(text, "m.py", lines, set())
    picked = tt.pick_mutants(by_function, "seed")
    assert len(picked) == tt.MAX_MUTANTS
    assert picked == tt.pick_mutants(by_function, "seed")
    assert picked != tt.pick_mutants(by_function, "another seed")
    per_function = {name: sum(s.function == name for s, _ in picked) for name in by_function}
    assert max(per_function.values()) - min(per_function.values()) <= 1  # in turn
    for name in by_function:  # kinds alternate within a function
        assert {s.kind for s, _ in picked if s.function == name} == {"comparison", "off_by_one"}
    assert [s.start for s, _ in picked] == sorted(s.start for s, _ in picked)
    assert len({m.id for _, m in picked}) == tt.MAX_MUTANTS


def test_cheap_filters(tmp_path: Path) -> None:
    tree = _rangekit(tmp_path)
    files = sorted(_map().statements)
    found = {c.file: c for c in tt.enumerate_testing(tree, _map())}
    assert tt.testing_failure(tree, found["tests/test_ranges.py"], files) is None
    failure = tt.testing_failure(tree, found["tests/test_units.py"], files)
    assert failure is not None and failure[0] == "file_tests"
    broken = _map({"tests/test_ranges.py::test_more": "failed"})
    (candidate,) = [c for c in tt.enumerate_testing(tree, broken) if c.module == MODULE]
    failure = tt.testing_failure(tree, candidate, files)
    assert failure is not None and failure == (
        "file_tests",
        "1 of its tests fail, e.g. tests/test_ranges.py::test_more",
    )
    candidate = found["tests/test_ranges.py"]
    candidate.focus = 0.3
    failure = tt.testing_failure(tree, candidate, files)
    assert failure is not None and failure[0] == "test_focus"
    candidate.focus, candidate.mutants = 1.0, candidate.mutants[:4]
    failure = tt.testing_failure(tree, candidate, files)
    assert failure is not None and failure[0] == "mutant_sites"


def test_the_task_keeps_the_killed_mutants_and_a_rerun_remeasures_changed_ones(
    tmp_path: Path,
) -> None:
    (candidate,) = [
        c for c in tt.enumerate_testing(_rangekit(tmp_path), _map()) if c.module == MODULE
    ]
    source = PackageSource(name="rangekit", version="1.0", sha256="0" * 64)
    release = Release(source, tmp_path / "rangekit-1.0.tar.gz", None)
    data = tt.testing_spec(release, candidate, "rangekit-ranges-tests", None)
    killed = [m.id for m in candidate.mutants[::2]]
    final = tt.final_spec(data, killed, 8)
    check = final["verification"]
    assert isinstance(check, dict) and [m["id"] for m in check["mutants"]] == killed
    assert check["min_tests"] == 5 and check["test_files"] == ["tests/**/test_*.py"]
    task = Task.model_validate(final | {"prompt": "Write tests."})
    assert isinstance(task.verification, MutantsVerification)
    assert task.mutation is not None and task.mutation.operations == [
        RemoveFile(file="tests/test_ranges.py")
    ]
    before = tt.testing_row(candidate).candidate_digest
    candidate.mutants = candidate.mutants[1:]
    assert tt.testing_row(candidate).candidate_digest != before  # resumed only when the same


def test_the_agents_test_files_include_the_deleted_one() -> None:
    for path in ["tests/test_ranges.py", "tests/unit/test_a.py", "test_top.py", "t/a_test.py",
                 "tests/checks.py"]:  # fmt: skip
        (pattern,) = tt.agent_test_globs(path)
        assert glob_regex(pattern).fullmatch(path), (path, pattern)
    assert glob_regex(tt.agent_test_globs("tests/test_ranges.py")[0]).fullmatch(
        "tests/x/test_more.py"
    )


def test_the_prompt_asks_like_a_user_and_varies() -> None:
    prompts = [
        tt.testing_prompt(
            tt.TestingFacts(
                task_id=f"rangekit-ranges-tests-{n}",
                package="rangekit",
                module="rangekit.ranges",
                path="tests/test_ranges.py",
                summary="Integer ranges: clamping, overlap, spans and chunks",
                names=["clamp", "overlaps", "span", "chunks"],
                test_names=[
                    "tests/test_ranges.py::test_clamp_below",
                    "tests/test_ranges.py::test_touching_ranges_do_not_overlap",
                    "tests/test_ranges.py::test_span_of_nothing",
                ],
            )
        )
        for n in range(16)
    ]
    for prompt in prompts:
        assert "`rangekit.ranges`" in prompt and "`tests/test_ranges.py`" in prompt
        assert prompt_problems(prompt.replace("tests/test_ranges.py", "the file"), []) == []
        assert "`span`" not in prompt and "`chunks`" not in prompt  # two entry points at most
        assert "delet" not in prompt.lower()
    assert len(set(prompts)) > 8 and len({len(p) for p in prompts}) > 5
    assert any("clamp below" in p for p in prompts)  # from the deleted tests' names
    assert any("Leave the library code alone." in p for p in prompts)
    assert tt.spread(list("abcdef"), 3) == ["a", "c", "e"]  # not all of one function's
    assert any("no tests at all" in p or "Nothing tests" in p for p in prompts)
    others = [  # other test files run the module: no prompt claims nothing tests it
        tt.testing_prompt(tt.TestingFacts(f"t-{n}", "rangekit", "m", "tests/t.py", sole=False))
        for n in range(16)
    ]
    assert not any("no tests at all" in p or "Nothing tests" in p for p in others)


@pytest.mark.slow
def test_a_testing_task_is_proposed_and_validated(tmp_path: Path) -> None:
    """rangekit: `propose --kind testing` deletes tests/test_ranges.py, keeps the mutants
    its tests kill (the equivalent `value < low` -> `value <= low` is not among them), and
    writes a task `tasks validate` accepts: the reference resolves, the untouched
    workspace (no tests) and the stub (every test raising) do not."""
    place_sdist(build_cache(), make_sdist(RANGEKIT, "rangekit-1.0"), "rangekit-1.0.tar.gz")
    out = tmp_path / "proposed"
    command = ["tasks", "propose", "rangekit==1.0", "--out", str(out), "--kind", "testing"]
    done = cursorbench(*command)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads((out / "proposals.json").read_text())
    rows = {row["file"]: row for row in summary["candidates"]}
    assert rows["tests/test_units.py"]["failed"] == "file_tests"
    row = rows["tests/test_ranges.py"]
    assert row["failed"] is None and row["kind"] == "testing", row
    assert summary["proposed_by_kind"] == {"testing": 1}
    assert 5 <= row["fail_to_pass"] < row["predicted_fail_to_pass"]  # some not killed
    task = yaml.safe_load((out / "tasks" / "rangekit-ranges-tests.yaml").read_text())
    assert task["category"] == "testing"
    assert task["mutation"]["operations"] == [{"op": "remove_file", "file": "tests/test_ranges.py"}]
    check = task["verification"]
    assert check["kind"] == "mutants" and check["min_kill_share"] == 0.8
    assert check["min_tests"] == 5 and len(check["mutants"]) == row["fail_to_pass"]
    assert not any(m["new"].strip() == "if value <= low:" for m in check["mutants"])
    assert "`tests/test_ranges.py`" in task["prompt"]
    report = tmp_path / "report"
    done = cursorbench("tasks", "validate", "--tasks", str(out / "tasks"), "--report", str(report))
    assert done.returncode == 0, done.stdout + done.stderr
    (record,) = json.loads((report / "validation.json").read_text())["tasks"]
    assert record["valid"] and record["reference_resolved"]
    assert not record["untouched_resolved"] and not record["stub_resolved"]
    again = cursorbench(*command)
    assert again.returncode == 0, again.stdout + again.stderr
    resumed = json.loads((out / "proposals.json").read_text())
    assert resumed["measured_now"] == 0 and resumed["resumed"] == 1


def test_no_mutant_where_a_test_left_in_the_workspace_runs(tmp_path: Path) -> None:
    """The remaining suite could kill such a mutant, so an agent's file that imports or
    copies it would too: clamp's lines, also run by the units tests, get none."""
    testmap = _map()
    body = RANGES.split("def overlaps")[0].splitlines()
    clamp = [n for n in range(1, len(body) + 1) if n in testmap.runs[MODULE] and n > 3]
    for n in clamp:
        testmap.runs[MODULE][n] = testmap.runs[MODULE][n] | {"tests/test_units.py::test_inch"}
    tree = _rangekit(tmp_path)
    found = tt.enumerate_testing(tree, testmap)
    (candidate,) = [c for c in found if c.file == "tests/test_ranges.py"]
    assert candidate.mutants and not {s.line for s in candidate.sites} & set(clamp)
    assert "clamp" not in candidate.functions
