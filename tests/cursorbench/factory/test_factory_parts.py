"""The task factory's parts, without a sandbox: candidates from a hand-made coverage map,
the cheap and measured filters, release dates and the freshness check (also through the
CLI, which refuses an old release before any sandbox starts)."""

from __future__ import annotations

import datetime as dt
import http.server
import io
import json
import tarfile
import threading
import zipfile
from pathlib import Path

import pytest
import yaml

from cursorbench.factory.candidates import (
    MAX_CLUSTER,
    Candidate,
    Symbol,
    clusters,
    describe,
    imported_elsewhere,
    top_level_symbols,
)
from cursorbench.factory.coverage_map import CoverageMap
from cursorbench.factory.filters import (
    canary_failure,
    cheap_failure,
    hidden_lines_failure,
    measured_failure,
)
from cursorbench.factory.release import Release, check_fresh, index_upload_date, release_date
from cursorbench.tasks.sources.base import SourceError
from cursorbench.tasks.sources.package import PackageSource
from cursorbench.validation.checks import MIN_FAIL_TO_PASS
from tests.cli_runner import cursorbench
from tests.cursorbench.factory_pkg import place_wordkit

MODULE = '''"""A module."""

import os


@staticmethod
def decorated(x):
    """Doubles."""
    y = x * 2
    return y


class Shape:
    """A shape."""

    def area(self):
        return 0


def _helper():
    return 1


def last(a, b):
    c = a + b
    d = c * 2
    e = d - 1
    f = e + a
    return f
'''


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def test_top_level_symbols_span_decorators_and_keep_docstrings(tmp_path: Path) -> None:
    tree = _tree(tmp_path, {"pkg/mod.py": MODULE, "pkg/bad.py": "def (:\n"})
    found = top_level_symbols(tree, "pkg/mod.py")
    assert [s.name for s in found] == ["decorated", "Shape", "_helper", "last"]
    decorated = found[0]
    assert (decorated.start, decorated.end, decorated.docstring) == (6, 10, "Doubles.")
    assert found[2].public is False
    assert top_level_symbols(tree, "pkg/bad.py") == []


def _symbols(*names: str) -> list[Symbol]:
    return [Symbol("m.py", n, at * 10, at * 10 + 5, "") for at, n in enumerate(names, 1)]


def test_clusters_are_public_singles_and_windows_holding_a_public_symbol() -> None:
    groups = clusters(_symbols("a", "_b", "_c", "d"))
    names = [[s.name for s in g] for g in groups]
    assert ["a"] in names and ["d"] in names and ["_b"] not in names
    assert ["_b", "_c"] not in names  # a window of private symbols only
    assert ["a", "_b"] in names and ["_c", "d"] in names and ["a", "_b", "_c"] in names
    assert max(len(g) for g in groups) == MAX_CLUSTER


def _map() -> CoverageMap:
    """`last` (lines 25-30) runs in tests/test_a.py (6 tests) and once in test_b.py."""
    hidden = [f"tests/test_a.py::t{n}" for n in range(6)]
    others = [f"tests/test_b.py::t{n}" for n in range(10)]
    outcomes = {t: "passed" for t in hidden + others} | {"tests/test_a.py::broken": "failed"}
    body = {26: set(hidden) | {others[0], "tests/test_a.py::broken"}, 27: set(hidden)}
    runs = {"pkg/mod.py": {25: {""}, 28: set(hidden[:2]), 29: set(), **body}}
    return CoverageMap(outcomes, {"pkg/mod.py": [25, 26, 27, 28, 29, 30]}, runs)


def test_describe_predicts_hidden_files_fail_to_pass_and_spill() -> None:
    symbol = Symbol("pkg/mod.py", "last", 25, 30, "")
    found = describe(Candidate("pkg/mod.py", [symbol]), _map())
    assert found.removed == {25, 26, 27, 28, 29, 30}
    assert "tests/test_a.py::broken" not in found.exercising  # only passing tests count
    assert found.hidden_files == ["tests/test_a.py"]  # test_b: 1 of 10 < HIDDEN_SHARE
    assert len(found.predicted_fail) == 6 and found.predicted_spill == ["tests/test_b.py::t0"]
    assert found.hidden_coverage == round(4 / 6, 3)  # 25 (import), 26, 27, 28; not 29, 30


def test_imported_elsewhere_finds_from_imports_by_name(tmp_path: Path) -> None:
    files = {
        "pkg/mod.py": MODULE,
        "pkg/user.py": "from .mod import last\n",
        "pkg/other.py": "from pkg.mod import Shape\nimport pkg.mod\n",
        "pkg/unrelated.py": "from os import last\n",
    }
    tree = _tree(tmp_path, files)
    names = sorted(files)
    last = Candidate("pkg/mod.py", [Symbol("pkg/mod.py", "last", 25, 30, "")])
    assert imported_elsewhere(tree, last, names) == ["pkg/user.py"]
    helper = Candidate("pkg/mod.py", [Symbol("pkg/mod.py", "_helper", 21, 22, "")])
    assert imported_elsewhere(tree, helper, names) == []


def _candidate(removed: int, fail: int, spill: int, hidden_cover: float | None) -> Candidate:
    return Candidate(
        "pkg/mod.py", [Symbol("pkg/mod.py", "f", 1, removed, "")],
        removed=set(range(removed)), hidden_files=["tests/test_a.py"],
        predicted_fail=[f"tests/test_a.py::t{n}" for n in range(fail)],
        predicted_spill=[f"tests/test_b.py::t{n}" for n in range(spill)],
        hidden_coverage=hidden_cover,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("candidate", "importers", "failed"),
    [
        (_candidate(3, 9, 0, 1.0), [], "size"),
        (_candidate(500, 9, 0, 1.0), [], "size"),
        (_candidate(20, 9, 0, 1.0), ["pkg/user.py"], "imported_elsewhere"),
        (_candidate(20, MIN_FAIL_TO_PASS - 1, 0, 1.0), [], "hidden_fail_to_pass"),
        (_candidate(20, 9, 30, 1.0), [], "spill"),
        (_candidate(20, 9, 0, 0.2), [], "hidden_coverage"),
        (_candidate(20, 9, 0, None), [], "hidden_coverage"),
        (_candidate(20, 9, 1, 1.0), [], None),
    ],
)
def test_cheap_filters(candidate: Candidate, importers: list[str], failed: str | None) -> None:
    found = cheap_failure(candidate, test_files=10, passing=200, importers=importers)
    assert (found[0] if found else None) == failed
    if found:
        assert found[1]  # a reason, for proposals.json


def test_a_raised_size_floor_refuses_smaller_deletions() -> None:
    candidate = _candidate(20, 9, 1, 1.0)
    assert cheap_failure(candidate, 10, 200, [], min_statements=20) is None
    found = cheap_failure(candidate, 10, 200, [], min_statements=21)
    assert found is not None and found == ("size", "20 executable lines (want 21-400)")


def test_too_many_hidden_files_fails_hidden_fail_to_pass() -> None:
    candidate = _candidate(20, 9, 0, 1.0)
    candidate.hidden_files = ["tests/a.py", "tests/b.py", "tests/c.py"]
    found = cheap_failure(candidate, test_files=4, passing=200, importers=[])
    assert found is not None and found[0] == "hidden_fail_to_pass"


def test_measured_filters() -> None:
    assert measured_failure(MIN_FAIL_TO_PASS - 1, [], 0, 100)[0] == "measured_fail_to_pass"  # type: ignore[index]
    assert measured_failure(9, [], 11, 100)[0] == "measured_spill"  # type: ignore[index]
    assert measured_failure(9, ["pristine run 1: boom"], 0, 100) == (
        "derive",
        "pristine run 1: boom",
    )
    assert measured_failure(9, [], 10, 100) is None


STAMP = dt.datetime(2025, 3, 4, 12, tzinfo=dt.UTC)
OLD = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)


def _tar(path: Path, members: dict[str, dt.datetime]) -> Path:
    with tarfile.open(path, "w:gz") as bundle:
        for name, when in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime = 1, int(when.timestamp())
            bundle.addfile(info, io.BytesIO(b"x"))
    return path


def test_release_date_of_a_tar_gz_is_its_pkg_info(tmp_path: Path) -> None:
    newest = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)  # a later member does not win
    members = {"p-1/PKG-INFO": STAMP, "p-1/src/p/x.py": newest, "p-1/src/p/PKG-INFO": OLD}
    assert release_date(_tar(tmp_path / "p-1.tar.gz", members)) == STAMP.date()
    without = _tar(tmp_path / "q-1.tar.gz", {"q-1/a.py": OLD, "q-1/b.py": STAMP})
    assert release_date(without) == STAMP.date()  # no PKG-INFO: the newest member
    (tmp_path / "junk.tar.gz").write_bytes(b"not an archive")
    assert release_date(tmp_path / "junk.tar.gz") is None


def test_release_date_of_a_zip(tmp_path: Path) -> None:
    path = tmp_path / "p-1.zip"
    with zipfile.ZipFile(path, "w") as bundle:
        for name, when in {"p-1/setup.py": OLD, "p-1/PKG-INFO": STAMP}.items():
            bundle.writestr(zipfile.ZipInfo(name, when.timetuple()[:6]), "x")
    assert release_date(path) == STAMP.date()


def _release(released: dt.date | None) -> Release:
    source = PackageSource(name="p", version="1", sha256="0" * 64)
    return Release(source=source, sdist=Path("p-1.tar.gz"), released=released)


def test_check_fresh() -> None:
    after = dt.date(2025, 1, 1)
    check_fresh(_release(dt.date(2025, 1, 2)), after)
    check_fresh(_release(None), None)  # no date asked: anything goes
    with pytest.raises(SourceError, match="not after 2025-01-01"):
        check_fresh(_release(dt.date(2025, 1, 1)), after)
    with pytest.raises(SourceError, match="release date unknown"):
        check_fresh(_release(None), after)


def test_cli_refuses_an_old_release_in_one_line(tmp_path: Path) -> None:
    place_wordkit()  # its PKG-INFO is dated 2024-06-01
    command = ["tasks", "propose", "wordkit==0.3"]
    command += ["--out", str(tmp_path / "out"), "--released-after", "2025-01-01"]
    done = cursorbench(*command)
    assert done.returncode != 0
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and "released 2024-06-01, not after 2025-01-01" in lines[0]
    assert not (tmp_path / "out").exists()


def test_a_placeholder_pkg_info_stamp_gives_the_newest_member(tmp_path: Path) -> None:
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)  # PDM's PKG-INFO
    members = {"p-1/PKG-INFO": epoch, "p-1/a.py": OLD, "p-1/b.py": STAMP}
    assert release_date(_tar(tmp_path / "p-1.tar.gz", members)) == STAMP.date()
    assert release_date(_tar(tmp_path / "q-1.tar.gz", {"q-1/PKG-INFO": epoch})) is None


class _SimpleIndex(http.server.BaseHTTPRequestHandler):
    """A package index answering the JSON simple API (PEP 691/700) for one project."""

    def do_GET(self) -> None:
        files = [
            {"filename": "q-1-py3-none-any.whl", "upload-time": "2026-09-21T10:00:00Z"},
            {"filename": "q-1.tar.gz", "upload-time": "2026-09-22T23:30:00.5+00:00"},
            {"filename": "q-2.tar.gz"},  # no upload time given
        ]
        wanted = self.headers.get("Accept") == "application/vnd.pypi.simple.v1+json"
        body = json.dumps({"files": files}).encode() if wanted else b"<html></html>"
        self.send_response(200 if self.path == "/simple/q/" else 404)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_an_undated_sdist_is_dated_by_the_index_upload_time(tmp_path: Path) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _SimpleIndex)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    index = f"http://127.0.0.1:{server.server_address[1]}/simple/"
    try:
        undated = tmp_path / "q-1.tar.gz"
        assert index_upload_date(undated, "Q", index) == dt.date(2026, 9, 22)
        assert index_upload_date(tmp_path / "q-2.tar.gz", "q", index) is None
        assert index_upload_date(tmp_path / "q-3.tar.gz", "q", index) is None  # not listed
        assert index_upload_date(undated, "other", index) is None  # 404
    finally:
        server.shutdown()
        server.server_close()
    assert index_upload_date(undated, "q", index) is None  # the index is gone


INIT = '''"""A package."""

from ._mod import (
    keep,
    last,
)
from ._other import Shape

__all__ = [
    "Shape",
    "keep",
    "last",
]
'''


def test_a_reexport_by_the_package_init_goes_with_the_deletion(tmp_path: Path) -> None:
    files = {"pkg/_mod.py": MODULE, "pkg/__init__.py": INIT, "pkg/user.py": "import os\n"}
    tree = _tree(tmp_path, files)
    last = Candidate("pkg/_mod.py", [Symbol("pkg/_mod.py", "last", 25, 30, "")])
    assert imported_elsewhere(tree, last, sorted(files)) == []
    text = INIT
    for op in last.operations()[1:]:
        assert text.count(op.old) == 1  # type: ignore[union-attr]
        text = text.replace(op.old, op.new)  # type: ignore[union-attr]
    assert "last" not in text and '"keep",' in text and "    keep,\n)" in text
    used = _tree(tmp_path / "used", {**files, "pkg/__init__.py": INIT + "\nALIAS = last\n"})
    again = Candidate("pkg/_mod.py", [Symbol("pkg/_mod.py", "last", 25, 30, "")])
    assert imported_elsewhere(used, again, sorted(files)) == ["pkg/__init__.py"]


def test_hidden_files_without_canaries_fail_the_canaries_filter(tmp_path: Path) -> None:
    table = "def test_all():\n    for a, b in [(1, 1)]:\n        assert a == b\n"
    plain = "def test_one():\n    assert len('ab') == 2\n"
    tree = _tree(tmp_path, {"tests/test_table.py": table, "tests/test_plain.py": plain})
    found = canary_failure(tree, ["tests/test_table.py"])
    assert found is not None and found[0] == "canaries"
    assert canary_failure(tree, ["tests/test_table.py", "tests/test_plain.py"]) is None


def test_a_module_attribute_read_at_import_counts_as_an_import(tmp_path: Path) -> None:
    files = {
        "pkg/mod.py": MODULE,
        "pkg/curried.py": "import pkg\n\nlast = wrap(pkg.last)\n",
        "pkg/lazy.py": "import pkg\n\n\ndef f():\n    return pkg.last\n",  # only when called
    }
    tree = _tree(tmp_path, files)
    last = Candidate("pkg/mod.py", [Symbol("pkg/mod.py", "last", 25, 30, "")])
    assert imported_elsewhere(tree, last, sorted(files)) == ["pkg/curried.py"]


def test_a_function_body_run_at_import_fails_runs_at_import() -> None:
    testmap = _map()
    testmap.runs["pkg/mod.py"][27] |= {""}  # e.g. a module-level call of it
    found = describe(Candidate("pkg/mod.py", [Symbol("pkg/mod.py", "last", 25, 30, "")]), testmap)
    assert found.runs_at_import
    failed = cheap_failure(found, test_files=10, passing=200, importers=[])
    assert failed is not None and failed[0] == "runs_at_import"
    klass = Symbol("pkg/mod.py", "Last", 25, 30, "", function=False)  # class bodies run anyway
    assert not describe(Candidate("pkg/mod.py", [klass]), testmap).runs_at_import


def test_a_deleted_name_leaves_its_own_module_all(tmp_path: Path) -> None:
    listed = MODULE.replace("import os\n", 'import os\n\n__all__ = ("Shape", "last")\n')
    tree = _tree(tmp_path, {"pkg/mod.py": listed, "pkg/star.py": "from .mod import *\n"})
    last = Candidate("pkg/mod.py", [Symbol("pkg/mod.py", "last", 27, 32, "")])
    assert imported_elsewhere(tree, last, ["pkg/mod.py", "pkg/star.py"]) == []
    edit = last.operations()[1]
    assert edit.file == "pkg/mod.py" and edit.new == '__all__ = ("Shape",)'  # type: ignore[union-attr]
    computed = tmp_path / "computed"
    tree = _tree(computed, {"pkg/mod.py": MODULE + "\n__all__ = sorted(['last'])\n"})
    again = Candidate("pkg/mod.py", [Symbol("pkg/mod.py", "last", 25, 30, "")])
    assert imported_elsewhere(tree, again, ["pkg/mod.py"]) == ["pkg/mod.py"]


def test_hidden_test_lines_in_a_docstring_fail_before_the_build(tmp_path: Path) -> None:
    lines = [f"    result = transform_sequence([{n}, 2, 3, 4, 5])" for n in range(3)]
    test = "def test_t():\n" + "\n".join(lines) + "\n    assert result == [1]\n"
    doc = '"""Examples:\n\n' + "\n".join(f"    >>> {line.strip()}" for line in lines) + '\n"""\n'
    tree = _tree(tmp_path, {"tests/test_t.py": test, "pkg/mod.py": doc, "pkg/b.py": "x = 1\n"})
    found = hidden_lines_failure(tree, ["tests/test_t.py"], ["pkg/b.py", "pkg/mod.py"])
    assert found is not None and found[0] == "test_lines_in_source" and "pkg/mod.py" in found[1]
    assert hidden_lines_failure(tree, ["tests/test_t.py"], ["pkg/b.py"]) is None


def test_a_package_installed_beside_the_harness_gets_an_environment_of_its_own(
    tmp_path: Path,
) -> None:
    """Its installed copy would be importable in the sandbox (the answer, outside the
    workspace); given requirements are kept; a release that declares nothing and is not
    installed here runs in the harness's environment."""
    from cursorbench.factory.propose import environment_for

    def release(name: str) -> Release:
        sdist = tmp_path / f"{name}-1.0.tar.gz"
        info = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n".encode()
        with tarfile.open(sdist, "w:gz") as bundle:
            member = tarfile.TarInfo(f"{name}-1.0/PKG-INFO")
            member.size = len(info)
            bundle.addfile(member, io.BytesIO(info))
        source = PackageSource(name=name, version="1.0", sha256="0" * 64)
        return Release(source=source, sdist=sdist, released=None)

    assert environment_for(release("sortedcontainers"), None) == []  # hypothesis needs it
    assert environment_for(release("wordkit"), ["cbdep==1.0"]) == ["cbdep==1.0"]
    assert environment_for(release("wordkit"), None) is None


def test_an_unmeasured_survivor_passed_the_cheap_filters_only() -> None:
    """A run stopped before it measured a survivor does not count it as proposed, nor as
    past the measured filters."""
    from cursorbench.factory.filters import FILTERS, Proposal
    from cursorbench.factory.propose import passed_each

    def row(**fields: object) -> Proposal:
        return Proposal.model_validate({"key": "k", "file": "f.py", "symbols": ["s"]} | fields)

    rows = [row(failed="size"), row(fail_to_pass=7), row(), row(failed="measured_spill")]
    passed = passed_each(rows)
    assert passed["size"] == 3 and passed["overlap"] == 3
    assert passed["max_reached"] == 2 and passed["measured_spill"] == 1
    assert passed[FILTERS[-1]] == 1


def test_tasks_a_suite_holds_are_not_proposed_again(tmp_path: Path) -> None:
    """`propose --avoid-suite`: a candidate whose task id a suite folder holds (in `tasks/`
    or `refused/`) is an overlap, and what the suite's tasks remove is taken for the
    deletion family, so a follow-up of the same symbol is an overlap too."""
    from cursorbench.factory.filters import Proposal
    from cursorbench.factory.propose import already_in, suite_tasks
    from cursorbench.factory.schedule import Entry, Scheduler

    suite = tmp_path / "suite"
    for folder, ident, package in [("tasks", "wordkit-cases-x", "wordkit"),
                                   ("refused", "wordkit-counts-y", "wordkit"),
                                   ("tasks", "other-z", "other")]:  # fmt: skip
        (suite / folder).mkdir(parents=True, exist_ok=True)
        operation = {"op": "remove_symbol", "file": "src/wordkit/cases.py", "symbol": ident}
        data = {"id": ident, "source": {"name": package}, "mutation": {"operations": [operation]}}
        (suite / folder / f"{ident}.yaml").write_text(yaml.safe_dump(data))
    (suite / "tasks" / "broken.yaml").write_text("id: [unclosed")
    found = suite_tasks((suite,), "wordkit")
    assert found == {
        "wordkit-cases-x": [("src/wordkit/cases.py", "wordkit-cases-x")],
        "wordkit-counts-y": [("src/wordkit/cases.py", "wordkit-counts-y")],
    }
    again = Proposal(key="a", file="f.py", symbols=[], task_id="wordkit-counts-y")
    new = Proposal(key="b", file="f.py", symbols=[], task_id="wordkit-cases-new")
    assert already_in(again, found) and again.failed == "overlap"
    assert not already_in(new, found) and new.failed is None
    followup = Proposal(key="c", kind="iterate", file="src/wordkit/cases.py", symbols=["x"])
    names = {("src/wordkit/cases.py", "wordkit-cases-x")}
    scheduler = Scheduler([Entry(followup, names, lambda: None)], {}, tmp_path, 5)  # type: ignore[arg-type, return-value]
    removed = [(key, pair) for key, pairs in found.items() for pair in pairs]
    scheduler.reserve(
        Proposal(key=key, kind="deletion", file=file, symbols=[name])
        for key, (file, name) in removed
    )
    scheduler.run(1)
    assert followup.failed == "overlap"


def test_the_coverage_map_ignores_the_packages_own_coverage_settings(tmp_path: Path) -> None:
    """croniter 3.0.3's `.coveragerc` omits `**/**`, a pattern coverage.py refuses; and an
    `omit` would hide files. The map is the factory's measurement, not the package's."""
    from cursorbench.factory.coverage_map import measure
    from harness.sandbox import open_backend

    tree = _tree(tmp_path / "tree", {
        "pkg/__init__.py": "",
        "pkg/mod.py": "def double(x):\n    y = x * 2\n    return y\n",
        "tests/test_mod.py": "from pkg.mod import double\n\n\ndef test_double():\n"
                             "    assert double(2) == 4\n",
        "conftest.py": "",
        ".coveragerc": "[run]\nomit = **/**\n",
        "setup.cfg": "[coverage:run]\nomit = pkg/*\n",
    })  # fmt: skip
    found = measure(open_backend("subprocess"), tree, tmp_path / "scratch", ["tests"], 120)
    assert found.outcomes == {"tests/test_mod.py::test_double": "passed"}
    assert found.tests_running("pkg/mod.py", [2, 3]) == {"tests/test_mod.py::test_double"}


def test_a_single_module_package_at_the_root_is_the_packages_code(tmp_path: Path) -> None:
    """six.py, docopt.py, bottle.py: the module at the root is the package; build scripts,
    tests, docs and examples there are not."""
    from cursorbench.factory.coverage_map import package_files

    names = ["six.py", "setup.py", "test_six.py", "conftest.py", "docs/conf.py"]
    names += ["examples/demo.py", "tests/helper.py", "pkg/core.py", "_version_helper.py"]
    tree = _tree(tmp_path, {name: "x = 1\n" for name in names})
    assert package_files(tree) == ["pkg/core.py", "six.py"]


def test_bug_candidates_that_cannot_spill_are_measured_first() -> None:
    from cursorbench.factory.bugs import BugCandidate
    from cursorbench.factory.filters import spill_safe_first

    def bug(name: str, spill: int) -> BugCandidate:
        found = BugCandidate("m.py", [name], [], predicted_fail=["t"] * 6)
        found.predicted_spill = [f"v{n}" for n in range(spill)]
        return found

    order = [bug("a", 50), bug("b", 1), bug("c", 40), bug("d", 0)]
    shown = spill_safe_first(order, passing=206)  # 200 visible: a limit of 20
    assert [c.functions[0] for c in shown] == ["b", "d", "a", "c"]


def test_a_name_the_module_uses_at_import_cannot_be_deleted(tmp_path: Path) -> None:
    from cursorbench.factory.candidates import Candidate, top_level_symbols, used_at_import

    module = (
        "class Signer:\n    pass\n\n\n_default = Signer()\n\n\n"
        "def helper():\n    return Signer()\n\n\n@staticmethod\ndef plain():\n    return 1\n"
    )
    (tmp_path / "m.py").write_text(module)
    symbols = {s.name: s for s in top_level_symbols(tmp_path, "m.py")}
    assert used_at_import(tmp_path, Candidate("m.py", [symbols["Signer"]]))  # `_default = ...`
    assert not used_at_import(tmp_path, Candidate("m.py", [symbols["helper"]]))
    assert not used_at_import(tmp_path, Candidate("m.py", [symbols["plain"]]))


def test_prompt_phrases_from_test_names_read_as_behaviour() -> None:
    from cursorbench.factory.prompts import behaviours

    names = ["t.py::testBadVal", "t.py::testCmp4", "t.py::test_and", "t.py::test_x[1]",
             "t.py::test_2", "t.py::T::test_camelize_with_lower", "t.py::test_bad_val"]  # fmt: skip
    assert behaviours(names, ["camelize"]) == ["bad val", "cmp", "with lower"]


def test_a_docstrings_first_sentence_skips_an_underlined_title() -> None:
    from cursorbench.factory.prompts import first_sentence

    text = "ISMAGS Algorithm\n================\n\nProvides the ISMAGS algorithm. More.\n"
    assert first_sentence(text) == "Provides the ISMAGS algorithm"
    assert first_sentence("Return the sum.\n\n    Longer.") == "Return the sum"


def test_kind_groups_name_only_kinds_that_all_proposes() -> None:
    from cursorbench.factory import KINDS

    every = set(KINDS["all"])
    assert {name for name, kinds in KINDS.items() if len(kinds) == 1} == every
    assert all(set(kinds) <= every for kinds in KINDS.values())
    assert "bugs" not in KINDS["large"] and "usages" not in KINDS["large"]
