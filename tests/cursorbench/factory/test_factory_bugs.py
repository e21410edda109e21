"""Procedural bugs for debugging tasks, without a sandbox: the sites found in a function,
the `replace_text` operations they become (each applying once, in order), the candidates
a hand-made coverage map gives, and the bug report written from failing tests; and the
scheduler resuming an earlier run without measuring anything."""

from __future__ import annotations

from pathlib import Path

from cursorbench.factory.bug_prompts import BugFacts, offline_bug_report, symptoms
from cursorbench.factory.bugs import (
    MAX_SITES,
    MIN_SITES,
    Offsets,
    enumerate_bugs,
    functions_of,
    operations,
    pick_sites,
    sites_in,
)
from cursorbench.factory.coverage_map import CoverageMap
from cursorbench.factory.filters import Proposal, bug_cheap_failure
from cursorbench.factory.measure import Job
from cursorbench.factory.prompts import prompt_problems
from cursorbench.factory.schedule import Entry, Scheduler
from harness.pyast import parse_module

MODULE = '''"""Windows over lists."""


def window(items, size, strict=False):
    """The first `size` items."""
    if size < 0 or not items:
        return []
    taken = items[0:size]
    if strict and len(taken) != size:
        raise ValueError("short")
    return taken


class Ring:
    def rotate(self, items, steps):
        moved = items[steps:] + items[:steps]
        result = list(moved)
        return result


def pad(items, size):
    return window(items, size) + [None] * max(0, size - len(items))
'''


def _sites(text: str) -> dict[str, list[tuple[str, bytes, bytes]]]:
    data = text.encode()
    found = {}
    for name, node in functions_of(parse_module(text)):
        sites = sites_in(node, name, data, Offsets(data))
        found[name] = [(s.kind, data[s.start : s.end], s.new) for s in sites]
    return found


def test_sites_of_each_kind() -> None:
    found = _sites(MODULE)
    window = found["window"]
    assert ("comparison", b"<", b"<=") in window and ("comparison", b"!=", b"==") in window
    assert ("boolean", b"or", b"and") in window and ("boolean", b"and", b"or") in window
    assert ("negation", b"not ", b"") in window
    assert ("off_by_one", b"0", b"1") in window  # in `size < 0` and in the slice
    assert ("return_value", b"taken", b"items") in window
    rotate = found["Ring.rotate"]  # methods too, with a qualified name
    assert ("return_value", b"result", b"items") in rotate
    assert ("arguments", b"0, size - len(items)", b"size - len(items), 0") not in found["pad"]
    assert any(kind == "arguments" for kind, _, _ in found["pad"])  # window(items, size)


def test_operations_apply_once_each_in_order() -> None:
    data = MODULE.encode()
    tree = parse_module(MODULE)
    name, node = functions_of(tree)[0]
    sites = pick_sites(sites_in(node, name, data, Offsets(data)), "seed")
    assert MIN_SITES <= len(sites) <= MAX_SITES
    assert len({s.kind for s in sites}) == len(sites) and len({s.line for s in sites}) == len(sites)
    ops = operations("m.py", MODULE, sites)
    assert ops is not None and len(ops) == len(sites)
    text = MODULE
    for op in ops:
        assert text.count(op.old) == 1 and op.old != op.new
        text = text.replace(op.old, op.new)
    parse_module(text)  # the broken module still parses
    assert text != MODULE


def test_a_repeated_line_grows_until_unique() -> None:
    text = "def f(a):\n    x = a[0]\n    return x\n\n\ndef g(a):\n    x = a[0]\n    return x\n"
    data = text.encode()
    name, node = functions_of(parse_module(text))[1]
    sites = [s for s in sites_in(node, name, data, Offsets(data)) if s.kind == "off_by_one"]
    ops = operations("m.py", text, sites)
    assert ops is not None and ops[0].old.count("\n") >= 1  # one line occurs twice
    assert text.count(ops[0].old) == 1


def _map(lines: list[int]) -> CoverageMap:
    hidden = [f"tests/test_window.py::t{n}" for n in range(6)]
    others = [f"tests/test_other.py::t{n}" for n in range(20)]
    outcomes = {t: "passed" for t in hidden + others}
    runs = {"pkg/win.py": {n: set(hidden) for n in lines}}
    return CoverageMap(outcomes, {"pkg/win.py": lines}, runs)


def test_enumerate_bugs_uses_covered_lines_only(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "win.py").write_text(MODULE)
    found = enumerate_bugs(tmp_path, _map([6, 8, 9, 11]))  # window's body
    assert found and all(c.file == "pkg/win.py" for c in found)
    single = next(c for c in found if c.functions == ["window"])
    assert single.lines <= {6, 8, 9, 11} and single.hidden_files == ["tests/test_window.py"]
    assert single.hidden_coverage == 1.0 and len(single.predicted_fail) == 6
    assert bug_cheap_failure(single, test_files=2) is None
    assert not any("Ring.rotate" in c.functions for c in found)  # not covered
    assert enumerate_bugs(tmp_path, _map([]))[:1] == []


def test_overloaded_definitions_give_one_candidate_per_key(tmp_path: Path) -> None:
    overloads = "import typing\n\n\n" + "".join(
        f"@typing.overload\ndef window(items: {kind}, size: int) -> list: ...\n\n\n"
        for kind in ("list", "tuple")
    )
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "win.py").write_text(overloads + MODULE)
    shift = overloads.count("\n")
    found = enumerate_bugs(tmp_path, _map([n + shift for n in (6, 8, 9, 11)]))
    keys = [c.key for c in found]
    assert keys and len(keys) == len(set(keys))  # three `window`s, one candidate


TESTS = """import pytest
from pkg.win import window


def test_first_two():
    assert window([1, 2, 3], 2) == [1, 2]


def test_reversed_sides():
    assert [1] == window([1], 5)


def test_a_variable_of_the_test():
    example = [4, 5]
    assert window(example, 1) == [4]
    win = window
    assert win([1], 1) == [1]
    table = {"w": window}
    assert table["w"]([2], 1) == [2]


@pytest.mark.parametrize("n", [1, 2])
def test_param(n):
    assert len(window([0] * 3, n)) == n
"""


def test_bug_report_shows_symptoms_never_the_location(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_win.py").write_text(TESTS)
    failing = [f"tests/test_win.py::{n}" for n in ("test_first_two", "test_reversed_sides")]
    failing += ["tests/test_win.py::test_param[1]", "tests/test_missing.py::test_x"]
    failing += ["tests/test_win.py::test_a_variable_of_the_test"]  # means nothing to a user
    found = symptoms(tmp_path, failing)
    assert found == [
        "`window([1, 2, 3], 2)` should give [1, 2]",
        "`window([1], 5)` should give [1]",
    ]
    reports = [offline_bug_report(BugFacts(f"t{n}", "pkg", found, failing)) for n in range(12)]
    for report in reports:
        assert prompt_problems(report, []) == [], report
        assert "win.py" not in report and "test_" not in report
    assert len(set(reports)) > 3


def _entry(key: str, names: set[tuple[str, str]]) -> Entry:
    def job() -> Job:
        raise AssertionError(f"{key} was measured again")

    return Entry(Proposal(key=key, file="m.py", symbols=[]), names, job)


def test_scheduler_resumes_without_measuring(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("id: a\n")
    previous = {
        "k1": Proposal(key="k1", file="m.py", symbols=[], task_id="a", fail_to_pass=7),
        "k2": Proposal(key="k2", file="m.py", symbols=[], failed="measured_spill", why="w"),
    }
    entries = [_entry("k1", {("m.py", "f")}), _entry("k2", {("m.py", "g")})]
    entries.append(_entry("k3", {("m.py", "f")}))  # overlaps the proposed k1
    scheduler = Scheduler(entries, previous, tmp_path, max_tasks=5)
    assert scheduler.run(jobs=1) == [tmp_path / "a.yaml"]
    assert (scheduler.measured_now, scheduler.resumed) == (0, 2)
    rows = [e.row for e in entries]
    assert [r.failed for r in rows] == [None, "measured_spill", "overlap"]
    assert rows[0].resumed and rows[0].fail_to_pass == 7
