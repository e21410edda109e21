"""`tasks propose`: from a package release to proposed task specs and `proposals.json`.

One coverage run of the package's suite (`coverage_map`), every candidate described
from it (`candidates`), the cheap filters (`filters`), then, most exercised first, each
surviving candidate written as a draft task file, built (with the leak scan) and its
lists derived by `checks.derive_tests` without perturbations (`tasks validate` runs
those), until `max_tasks` are proposed. Candidates that share a symbol with one already
proposed are skipped ("overlap"). Every candidate's figures and the first filter it
failed go to `proposals.json`; a failed draft's file is removed.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import yaml

from cursorbench import answer
from cursorbench.checks import backend_for, derive_tests
from cursorbench.factory.candidates import (
    Candidate,
    enumerate_candidates,
    imported_elsewhere,
    test_file,
)
from cursorbench.factory.coverage_map import CoverageMap, measure, test_args_for
from cursorbench.factory.filters import FILTERS, Proposal, cheap_failure, measured_failure
from cursorbench.factory.prompts import EndpointWriter, PromptFacts, write_prompt
from cursorbench.factory.release import Release, check_fresh, find_release
from cursorbench.loader import load_task_for_derive
from cursorbench.sources import import_root, prepared_tree
from cursorbench.suites import _Literal
from cursorbench.workspace import BuildError, build, cache_home
from harness.home import build_cache
from harness.sandbox import SandboxSettings, open_backend
from harness.spec import Limits

SUITE_VERSION = "factory"


@dataclass
class Outcome:
    proposals: list[Proposal]
    written: list[Path]
    summary: dict[str, object]


def task_id(package: str, candidate: Candidate) -> str:
    stem = Path(candidate.file).stem
    stem = Path(candidate.file).parent.name if stem == "__init__" else stem
    base = f"{package}-{stem}-{candidate.names[0]}"
    if len(candidate.symbols) > 1:
        base += f"-and-{len(candidate.symbols) - 1}"
    return re.sub(r"[^a-z0-9.-]+", "-", base.lower()).strip("-.")


def dotted_module(tree: Path, relative: str) -> str:
    root = import_root(tree)
    inside = relative.removeprefix("src/") if root == "src" else relative
    return inside.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def spec_data(
    release: Release, candidate: Candidate, test_args: list[str], ident: str, prompt: str
) -> dict[str, object]:
    source = release.source
    data: dict[str, object] = {
        "id": ident,
        "suite_version": SUITE_VERSION,
        "category": "new_feature",
        "prompt": _Literal(prompt) if "\n" in prompt else prompt,
        "released": release.released.isoformat() if release.released else None,
        "source": {"kind": "package", "name": source.name, "version": source.version,
                   "sha256": source.sha256},
        "mutation": {"kind": "feature_deletion",
                     "operations": [op.model_dump() for op in candidate.operations()]},
        "verification": {"test_args": test_args, "hidden_tests": candidate.hidden_files,
                         "fail_to_pass": candidate.predicted_fail, "pass_to_pass": []},
    }  # fmt: skip
    if data["released"] is None:
        del data["released"]
    return data


def write_spec(path: Path, data: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(data, sort_keys=False, width=100, allow_unicode=True)
    path.write_text(text, encoding="utf-8")


def _row(candidate: Candidate) -> Proposal:
    return Proposal(
        key=candidate.key, file=candidate.file, symbols=candidate.names,
        removed_statements=len(candidate.removed), exercising_tests=len(candidate.exercising),
        hidden_tests=candidate.hidden_files, predicted_fail_to_pass=len(candidate.predicted_fail),
        predicted_spill=len(candidate.predicted_spill), hidden_coverage=candidate.hidden_coverage,
    )  # fmt: skip


class Proposer:
    def __init__(
        self, release: Release, out: Path, backend: str, writer: EndpointWriter | None
    ) -> None:
        self.release, self.out, self.backend, self.writer = release, out, backend, writer
        self.tree = prepared_tree(release.source, build_cache())
        self.test_args = test_args_for(self.tree)
        self.taken: set[tuple[str, str]] = set()

    def coverage(self, scratch: Path) -> CoverageMap:
        sandboxes = open_backend(self.backend, SandboxSettings())
        sandboxes.self_test(cache_home() / "self-test")
        timeout = Limits().test_timeout_s * 3
        return measure(sandboxes, self.tree, scratch, self.test_args, timeout)

    def measure_one(self, candidate: Candidate, row: Proposal, testmap: CoverageMap) -> Path | None:
        """Builds and derives one candidate; its task file when it passes, else None."""
        ident = task_id(self.release.source.name, candidate)
        row.task_id = ident
        facts = PromptFacts(
            task_id=ident, package=self.release.source.name,
            module=dotted_module(self.tree, candidate.file),
            names=[s.name for s in candidate.symbols if s.public],
            docstrings=[s.docstring for s in candidate.symbols if s.public],
            test_names=candidate.predicted_fail,
        )  # fmt: skip
        prompt, _ = write_prompt(facts, self.writer)
        path = self.out / "tasks" / f"{ident}.yaml"
        data = spec_data(self.release, candidate, self.test_args, ident, prompt)
        write_spec(path, data)
        try:
            built = build(load_task_for_derive(path))
        except BuildError as error:
            row.failed, row.why = "build", str(error)
            path.unlink()
            return None
        root = cache_home() / "validate"
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=root) as scratch:
            derived = derive_tests(built, backend_for(built, self.backend), Path(scratch), False)
        row.fail_to_pass, row.pass_to_pass = len(derived.fail_to_pass), len(derived.pass_to_pass)
        row.spilled = len(derived.spilled)
        row.changed_lines = answer.reference_changed_lines(built)
        visible = sum(1 for t in testmap.passing() if test_file(t) not in candidate.hidden_files)
        failure = measured_failure(
            len(derived.fail_to_pass), derived.problems, len(derived.spilled), visible
        )
        if failure is not None:
            row.failed, row.why = failure
            path.unlink()
            return None
        check = data["verification"]
        assert isinstance(check, dict)
        check["fail_to_pass"], check["pass_to_pass"] = derived.fail_to_pass, derived.pass_to_pass
        write_spec(path, data)
        return path

    def run(self, max_tasks: int) -> Outcome:
        started = time.monotonic()
        root = cache_home() / "validate"
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=root) as scratch:
            testmap = self.coverage(Path(scratch))
        coverage_s = round(time.monotonic() - started, 2)
        candidates = enumerate_candidates(self.tree, testmap)
        files = sorted(testmap.statements)
        test_files = len({test_file(t) for t in testmap.outcomes})
        passing = len(testmap.passing())
        rows: list[Proposal] = []
        written: list[Path] = []
        for candidate in candidates:
            clock = time.monotonic()
            row = _row(candidate)
            rows.append(row)
            importers = imported_elsewhere(self.tree, candidate, files)
            failure = cheap_failure(candidate, test_files, passing, importers)
            if failure is None and self.taken & {(candidate.file, n) for n in candidate.names}:
                failure = ("overlap", "shares a symbol with a task already proposed")
            if failure is None and len(written) >= max_tasks:
                failure = ("max_reached", f"--max {max_tasks} tasks already proposed")
            if failure is not None:
                row.failed, row.why = failure
            else:
                found = self.measure_one(candidate, row, testmap)
                if found is not None:
                    written.append(found)
                    self.taken |= {(candidate.file, n) for n in candidate.names}
            row.seconds = round(time.monotonic() - clock, 2)
        summary = self.summary(rows, testmap, coverage_s, time.monotonic() - started)
        (self.out / "proposals.json").write_text(
            json.dumps({**summary, "candidates": [r.model_dump() for r in rows]}, indent=1)
        )
        return Outcome(rows, written, summary)

    def summary(
        self, rows: list[Proposal], testmap: CoverageMap, coverage_s: float, total_s: float
    ) -> dict[str, object]:
        source = self.release.source
        failed = Counter(row.failed for row in rows if row.failed)
        measured = [row for row in rows if row.fail_to_pass is not None or row.failed == "build"]
        return {
            "package": source.name, "version": source.version, "sha256": source.sha256,
            "released": self.release.released.isoformat() if self.release.released else None,
            "proposed_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "test_args": self.test_args, "tests": len(testmap.outcomes),
            "passing_tests": len(testmap.passing()), "coverage_run_s": coverage_s,
            "candidates_total": len(rows), "proposed": sum(1 for r in rows if not r.failed),
            "failed_by_filter": {name: failed.get(name, 0) for name in FILTERS},
            "passed_filter": _passed_each(rows), "measured": len(measured),
            "measured_s_per_candidate": round(
                sum(r.seconds for r in measured) / max(len(measured), 1), 2
            ),
            "total_s": round(total_s, 1),
        }  # fmt: skip


def _passed_each(rows: list[Proposal]) -> dict[str, int]:
    """How many candidates got past each filter (filters apply in `FILTERS` order)."""
    order = {name: at for at, name in enumerate(FILTERS)}
    reached = [order[row.failed] if row.failed else len(FILTERS) for row in rows]
    return {name: sum(1 for r in reached if r > at) for at, name in enumerate(FILTERS)}


def propose(
    requirement: str,
    out: Path,
    max_tasks: int = 10,
    released_after: dt.date | None = None,
    backend: str = "bubblewrap",
    writer: EndpointWriter | None = None,
) -> Outcome:
    release = find_release(requirement, build_cache())
    check_fresh(release, released_after)
    out.mkdir(parents=True, exist_ok=True)
    return Proposer(release, out, backend, writer).run(max_tasks)
