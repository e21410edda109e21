"""`tasks propose`: from a package release to proposed task specs and `proposals.json`.

One coverage run of the package's suite (`coverage_map`; kept in `coverage.json` in the
output folder, so that a rerun skips it), every candidate described from it: feature
deletions (`candidates`), procedural bugs (`bugs`) and test files to write again
(`testing_tasks`), as `--kind` asks. The cheap
filters (`filters`) read the coverage only; the survivors are measured (`measure`: built
with the leak scan, lists derived) in order on `jobs` processes, resuming an earlier
run's measurements (`schedule`), until `max_tasks` of each kind are proposed. Every
candidate's figures and the first filter it failed go to `proposals.json`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from cursorbench.factory import KINDS, review
from cursorbench.factory.bugs import BugCandidate, enumerate_bugs
from cursorbench.factory.candidates import (
    Candidate,
    enumerate_candidates,
    imported_elsewhere,
    test_file,
    used_at_import,
)
from cursorbench.factory.coverage_map import (
    CoverageMap,
    dotted_module,
    load,
    measure,
    save,
    test_args_for,
)
from cursorbench.factory.docs_tasks import DocsCandidate, docs_entries, docs_spec
from cursorbench.factory.filters import (
    FILTERS,
    MIN_STATEMENTS,
    Proposal,
    bug_cheap_failure,
    canary_failure,
    cheap_failure,
    hidden_lines_failure,
    review_anchor_failure,
    spill_safe_first,
)
from cursorbench.factory.followups import FollowUp, enumerate_followups
from cursorbench.factory.job import Job
from cursorbench.factory.modules import ModuleCandidate, enumerate_modules, module_importers
from cursorbench.factory.prompts import PromptFacts
from cursorbench.factory.refactor_tasks import (
    RefactorCandidate,
    refactor_entries,
    refactor_prompt,
    structure_test,
    test_path,
)
from cursorbench.factory.release import (
    Release,
    base_spec,
    check_fresh,
    find_release,
)
from cursorbench.factory.requirements import declared, pin
from cursorbench.factory.review_tasks import ReviewCandidate, enumerate_reviews, review_facts
from cursorbench.factory.schedule import Entry, Scheduler, earlier
from cursorbench.factory.testing_tasks import (
    TestingCandidate,
    testing_entries,
    testing_facts,
    testing_prompt,
    testing_spec,
)
from cursorbench.factory.usages import enumerate_usages, usage_spec
from cursorbench.tasks.sources.sdist import prepared_tree
from harness.envs import ensure_environment, refuse_package
from harness.home import build_cache, cache_home
from harness.sandbox import SandboxSettings, open_ready
from harness.sandbox.registry import with_python_env
from harness.spec import Limits

# bump when what the coverage map measures changes (2: no package config; 3: root modules)
COVERAGE_FORMAT = "3"


@dataclass
class Outcome:
    proposals: list[Proposal]
    written: list[Path]
    summary: dict[str, object]


def task_id(package: str, candidate: Candidate | BugCandidate) -> str:
    stem = Path(candidate.file).stem
    stem = Path(candidate.file).parent.name if stem == "__init__" else stem
    base = f"{package}-{stem}-{candidate.names[0].replace('.', '-')}"  # Class.method
    if isinstance(candidate, ModuleCandidate):
        base = f"{package}-{stem}-module"
    elif len(candidate.names) > 1:
        base += f"-and-{len(candidate.names) - 1}"
    if isinstance(candidate, ReviewCandidate):
        base += "-review"
    elif isinstance(candidate, BugCandidate):
        base += "-bugs"
    if isinstance(candidate, FollowUp):
        base += "-followup"
    return re.sub(r"[^a-z0-9.]+", "-", base.lower()).strip("-.")


def spec_data(
    release: Release,
    candidate: Candidate | BugCandidate,
    test_args: list[str],
    ident: str,
    environment: list[str] | None = None,
) -> dict[str, object]:
    """The task's fields; its prompt is written once it is measured (`measure`)."""
    if isinstance(candidate, BugCandidate):
        category, kind = "debugging", "bug_injection"
        operations = [op.model_dump() for op in candidate.operations]
    elif isinstance(candidate, FollowUp):
        category, kind = "iterate_on_feature", "feature_deletion"
        operations = [op.model_dump() for op in candidate.operations()]
    else:
        category, kind = "new_feature", "feature_deletion"
        operations = [op.model_dump() for op in candidate.operations()]
    data = base_spec(release, ident, category, environment)
    data["mutation"] = {"kind": kind, "operations": operations}
    data["verification"] = {
        "test_args": test_args, "hidden_tests": candidate.hidden_files,
        "fail_to_pass": candidate.predicted_fail, "pass_to_pass": [],
    }  # fmt: skip
    return data


def environment_for(release: Release, requirements: list[str] | None) -> list[str] | None:
    """The requirements of the tasks' own environment: those given; else what the release
    declares (`requirements.declared`), pinned; else none (pytest and coverage only) when
    the package is installed beside the harness, whose copy would otherwise be importable
    in the sandbox (the answer, outside the workspace); None: the harness's environment
    will do."""
    if requirements is not None:
        return list(requirements)
    name = release.source.name
    wanted = declared(release.sdist, name)
    if wanted:
        return pin(wanted, name)
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return None
    return []


def _row(candidate: Candidate | BugCandidate) -> Proposal:
    if isinstance(candidate, BugCandidate):
        kind = "review" if isinstance(candidate, ReviewCandidate) else "bugs"
        size, mutations = len(candidate.lines), [s.kind for s in candidate.sites]
    else:
        kind = "iterate" if isinstance(candidate, FollowUp) else "deletion"
        size, mutations = len(candidate.removed), []
    ops = candidate.operations if isinstance(candidate, BugCandidate) else candidate.operations()
    measured = {"operations": [op.model_dump() for op in ops], "hidden": candidate.hidden_files}
    digest = hashlib.sha256(json.dumps(measured).encode()).hexdigest()
    return Proposal(
        key=candidate.key, kind=kind, file=candidate.file, symbols=candidate.names,
        candidate_digest=digest[:16],
        mutations=mutations, removed_statements=size, exercising_tests=len(candidate.exercising),
        hidden_tests=candidate.hidden_files, predicted_fail_to_pass=len(candidate.predicted_fail),
        predicted_spill=len(candidate.predicted_spill), hidden_coverage=candidate.hidden_coverage,
    )  # fmt: skip


def _returns(job: Job) -> Callable[[], Job]:
    return lambda: job


class Proposer:
    def __init__(
        self, release: Release, out: Path, backend: str,
        endpoint: tuple[str, str] | None = None, kinds: tuple[str, ...] = ("deletion",),
        jobs: int = 1, requirements: list[str] | None = None,
        min_statements: int = MIN_STATEMENTS, rewrite_prompts: bool = False,
        ray: str | None = None, avoid: tuple[Path, ...] = (),
    ) -> None:  # fmt: skip
        self.release, self.out, self.backend, self.endpoint = release, out, backend, endpoint
        self.avoid = avoid  # suite folders whose tasks are not proposed again
        self.kinds, self.jobs, self.min_statements, self.ray = kinds, jobs, min_statements, ray
        self.rewrite_prompts = rewrite_prompts
        self.environment = environment_for(release, requirements)
        self.tree = prepared_tree(release.source, build_cache())
        self.test_args = test_args_for(self.tree)
        self.ids: set[str] = set()  # every candidate's task id

    def coverage(self) -> tuple[CoverageMap, bool]:
        """The suite's coverage map, and whether it was read from an earlier run."""
        key = f"{COVERAGE_FORMAT}:{self.release.source.sha256}:{' '.join(self.test_args)}"
        if self.environment is not None:
            key += f":env={' '.join(self.environment)}"
        cached = load(self.out / "coverage.json", key)
        if cached is not None:
            return cached, True
        sandboxes, _ = open_ready(self.backend, SandboxSettings())
        if self.environment is not None:
            env = ensure_environment(self.environment)
            refuse_package(env, self.release.source.name)
            sandboxes = with_python_env(sandboxes, env)
        timeout = Limits().test_timeout_s * 3
        root = cache_home() / "validate"
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=root) as scratch:
            testmap = measure(sandboxes, self.tree, Path(scratch), self.test_args, timeout)
        save(testmap, self.out / "coverage.json", key)
        return testmap, False

    def job(self, candidate: Candidate | BugCandidate, testmap: CoverageMap) -> Job:
        ident = task_id(self.release.source.name, candidate)
        hidden = set(candidate.hidden_files)
        visible = sum(1 for t in testmap.passing() if test_file(t) not in hidden)
        facts = earlier = review = None
        kind = "bugs"
        if isinstance(candidate, ReviewCandidate):
            kind, review = "review", review_facts(self.tree, candidate)
        if isinstance(candidate, Candidate):
            module = dotted_module(self.tree, candidate.file)
            facts = PromptFacts(
                task_id=ident, package=self.release.source.name, module=module,
                names=[s.name for s in candidate.symbols if s.public],
                docstrings=[s.docstring for s in candidate.symbols if s.public],
                test_names=candidate.predicted_fail,
            )  # fmt: skip
            kind = "deletion"
        if isinstance(candidate, FollowUp) and candidate.earlier is not None:
            part = candidate.earlier
            earlier = PromptFacts(
                ident, self.release.source.name, module, [part.name], [part.docstring]
            )
            kind = "iterate"
        return Job(
            key=candidate.key, kind=kind, earlier=earlier,
            path=self.out / "tasks" / f"{ident}.yaml",
            data=spec_data(self.release, candidate, self.test_args, ident, self.environment),
            backend=self.backend, visible=visible, tree=self.tree, facts=facts,
            endpoint=self.endpoint, review=review,
            module=dotted_module(self.tree, candidate.file),
        )  # fmt: skip

    def entries(self, testmap: CoverageMap) -> tuple[list[Proposal], list[Entry]]:
        """Every candidate's row (cheap filters applied) and the survivors to measure."""
        files = sorted(testmap.statements)
        test_files = len({test_file(t) for t in testmap.outcomes})
        passing = len(testmap.passing())
        found: list[Candidate | BugCandidate] = []
        if "deletion" in self.kinds:
            deletions: list[Candidate] = [*enumerate_candidates(self.tree, testmap)]
            deletions += enumerate_modules(self.tree, testmap)
            # most hidden FAIL_TO_PASS first, then least spill, then the larger change
            deletions.sort(key=lambda c: (-len(c.predicted_fail), len(c.predicted_spill),
                                          -len(c.removed), c.key))  # fmt: skip
            found += deletions
        if "bugs" in self.kinds:
            found += spill_safe_first(enumerate_bugs(self.tree, testmap), passing)
        if "iterate" in self.kinds:
            found += enumerate_followups(self.tree, testmap)
        if "review" in self.kinds:
            found += spill_safe_first(enumerate_reviews(self.tree, testmap), passing)
        rows: list[Proposal] = []
        entries: list[Entry] = []
        canaries: dict[tuple[str, ...], tuple[str, str] | None] = {}
        leaky: dict[tuple[str, ...], tuple[str, str] | None] = {}
        self.ids = {task_id(self.release.source.name, c) for c in found}
        for candidate in found:
            if isinstance(candidate, BugCandidate):
                failure = bug_cheap_failure(candidate, test_files)
                if failure is None and isinstance(candidate, ReviewCandidate):
                    failure = review_anchor_failure(self.tree, candidate)
            elif isinstance(candidate, ModuleCandidate):
                importers = module_importers(self.tree, candidate, files)  # sets .unexport
                failure = cheap_failure(
                    candidate, test_files, passing, importers, self.min_statements
                )
            else:
                importers = imported_elsewhere(self.tree, candidate, files)  # sets .unexport
                candidate.runs_at_import |= used_at_import(self.tree, candidate)
                failure = cheap_failure(
                    candidate, test_files, passing, importers, self.min_statements
                )
            if failure is None:
                hidden = tuple(candidate.hidden_files)
                if hidden not in canaries:
                    canaries[hidden] = canary_failure(self.tree, list(hidden))
                if hidden not in leaky:
                    leaky[hidden] = hidden_lines_failure(self.tree, list(hidden), files)
                failure = canaries[hidden] or leaky[hidden]
            row = _row(candidate)
            rows.append(row)
            if failure is not None:
                row.failed, row.why = failure
                continue
            row.task_id = task_id(self.release.source.name, candidate)
            names = {(candidate.file, n) for n in candidate.names}
            entries.append(Entry(row, names, lambda c=candidate: self.job(c, testmap)))  # type: ignore[misc]
        if "usages" in self.kinds:
            more, waiting = self.usage_entries(testmap)
            rows, entries = rows + more, entries + waiting
            self.ids |= {row.task_id for row in more if row.task_id}
        if "docs" in self.kinds:
            more, waiting, ids = docs_entries(
                self.tree, testmap, self.release.source.name,
                lambda c, ident: self.docs_job(c, ident, testmap),
            )  # fmt: skip
            rows, entries, self.ids = rows + more, entries + waiting, self.ids | ids
        if "testing" in self.kinds:
            more, waiting, ids = testing_entries(
                self.tree, testmap, files, self.release.source.name,
                lambda c, ident: self.testing_job(c, ident, testmap),
            )  # fmt: skip
            rows, entries, self.ids = rows + more, entries + waiting, self.ids | ids
        if "refactor" in self.kinds:
            more, waiting, ids = refactor_entries(
                self.tree, testmap, files, self.release.source.name,
                lambda c, ident: self.refactor_job(c, ident, testmap), self.min_statements,
            )  # fmt: skip
            rows, entries, self.ids = rows + more, entries + waiting, self.ids | ids
        return rows, entries

    def usage_entries(self, testmap: CoverageMap) -> tuple[list[Proposal], list[Entry]]:
        """Understanding tasks (`usages`): no cheap filter but the enumeration's own, and
        no tests to run; measuring one builds it and checks its answer's facts."""
        rows: list[Proposal] = []
        entries: list[Entry] = []
        package = self.release.source.name
        for candidate in enumerate_usages(self.tree, testmap):
            stem = Path(candidate.file).stem
            stem = Path(candidate.file).parent.name if stem == "__init__" else stem
            ident = re.sub(r"[^a-z0-9.]+", "-", f"{package}-{stem}-{candidate.function}-usages")
            ident = ident.lower().strip("-.")
            base = base_spec(self.release, ident, "understanding", self.environment)
            data = usage_spec(candidate, base)
            digest = hashlib.sha256(json.dumps([data["mutation"], data["verification"]]).encode())
            row = Proposal(
                key=candidate.key, kind="usages", file=candidate.file, symbols=candidate.names,
                candidate_digest=digest.hexdigest()[:16], task_id=ident,
                hidden_tests=candidate.test_files, exercising_tests=len(candidate.users),
            )  # fmt: skip
            job = Job(
                key=candidate.key, kind="usages", path=self.out / "tasks" / f"{ident}.yaml",
                data=data, backend=self.backend, visible=0, tree=self.tree,
            )  # fmt: skip
            rows.append(row)
            entries.append(Entry(row, {(candidate.file, candidate.function)}, _returns(job)))
        return rows, entries

    def docs_job(self, candidate: DocsCandidate, ident: str, testmap: CoverageMap) -> Job:
        """A documentation candidate's measurement: derived as a deletion is (`docs_tasks`)."""
        hidden = set(candidate.hidden_files)
        visible = sum(1 for t in testmap.passing() if test_file(t) not in hidden)
        return Job(
            key=candidate.key, kind="docs", path=self.out / "tasks" / f"{ident}.yaml",
            data=docs_spec(self.release, candidate, ident, self.environment),
            backend=self.backend, visible=visible, tree=self.tree, module=candidate.module,
        )  # fmt: skip

    def testing_job(self, candidate: TestingCandidate, ident: str, testmap: CoverageMap) -> Job:
        """A testing candidate's measurement (`testing_tasks`), its prompt written offline."""
        package, module = self.release.source.name, dotted_module(self.tree, candidate.module)
        facts = testing_facts(self.tree, testmap, candidate, ident, package, module)
        return Job(
            key=candidate.key, kind="testing", path=self.out / "tasks" / f"{ident}.yaml",
            data=testing_spec(self.release, candidate, ident, self.environment),
            backend=self.backend, visible=0, tree=self.tree, prompt=testing_prompt(facts),
        )  # fmt: skip

    def refactor_job(self, candidate: RefactorCandidate, ident: str, testmap: CoverageMap) -> Job:
        """A refactor candidate's measurement: its authored structure test written beside
        the task, its lists derived as a deletion's are, its prompt written offline."""
        sub, host = (dotted_module(self.tree, f) for f in (candidate.file, candidate.host))
        authored = test_path(self.tree, testmap, candidate.file)
        data = base_spec(self.release, ident, "refactor", self.environment)
        data["mutation"] = {
            "kind": "rewrite", "operations": [op.model_dump() for op in candidate.operations],
        }  # fmt: skip
        data["authored_tests"] = [authored]
        data["verification"] = {
            "test_args": self.test_args, "hidden_tests": [authored, *candidate.hidden_files],
            "fail_to_pass": [], "pass_to_pass": [],
        }  # fmt: skip
        hidden = {authored, *candidate.hidden_files}
        visible = sum(1 for t in testmap.passing() if test_file(t) not in hidden)
        return Job(
            key=candidate.key, kind="refactor", path=self.out / "tasks" / f"{ident}.yaml",
            data=data, backend=self.backend, visible=visible, tree=self.tree, module=sub,
            prompt=refactor_prompt(ident, candidate, sub, host),
            authored={authored: structure_test(sub, host, candidate.definitions, candidate.taken)},
        )  # fmt: skip

    def previous(self) -> dict[str, Proposal]:
        """The earlier run's rows, when it was of this release."""
        try:
            data = json.loads((self.out / "proposals.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("sha256") != self.release.source.sha256:
            return {}
        return earlier(data.get("candidates") or [])

    def run(self, max_tasks: int) -> Outcome:
        started = time.monotonic()
        testmap, reused = self.coverage()
        coverage_s = 0.0 if reused else round(time.monotonic() - started, 2)
        rows, entries = self.entries(testmap)
        in_suites = suite_tasks(self.avoid, self.release.source.name)
        entries = [entry for entry in entries if not already_in(entry.row, in_suites)]
        previous = self.previous()
        scheduler = Scheduler(
            entries, previous, self.out / "tasks", max_tasks,
            rewrite_prompts=self.rewrite_prompts,
        )  # fmt: skip
        # a task accepted and moved into a suite is not proposed again
        scheduler.moved = {i for i, state in review.states(self.out).items() if state == "accept"}
        # proposed by an earlier run, its file here or moved into a suite since
        scheduler.reserve(
            r for r in previous.values() if r.kind not in self.kinds and r.failed is None
            and r.task_id and r.fail_to_pass is not None
        )  # fmt: skip
        # what the suites' deletions and follow-ups removed, no deletion or follow-up removes
        scheduler.reserve(
            Proposal(key=f"suite:{task}", kind="deletion", file=file, symbols=[symbol])
            for task, removed in in_suites.items() for file, symbol in removed
        )  # fmt: skip

        def write(finished: bool) -> dict[str, object]:
            summary = self.summary(rows, testmap, coverage_s, time.monotonic() - started)
            summary |= {
                "measured_now": scheduler.measured_now, "resumed": scheduler.resumed,
                "prompts_rewritten": scheduler.rewritten,
                "coverage_reused": reused, "jobs": self.jobs, "kinds": list(self.kinds),
                "executor": "ray" if self.ray else "local",
                "finished": finished,
            }  # fmt: skip
            done = [r.model_dump() for r in rows if r.fail_to_pass is not None or r.failed]
            # unfinished: what this run measured, and what the earlier run did not redo yet
            kept = {r["key"] for r in done}
            done += [r.model_dump() for k, r in previous.items() if k not in kept and not finished]
            # kinds this run did not propose keep their rows (and task files: `drop_stale`)
            other = [r.model_dump() for r in previous.values() if r.kind not in self.kinds]
            listed = [r.model_dump() for r in rows] + other if finished else done
            path = self.out / "proposals.json"
            staging = path.with_suffix(".json.tmp")
            staging.write_text(json.dumps({**summary, "candidates": listed}, indent=1))
            os.replace(staging, path)
            return summary

        scheduler.checkpoint = lambda: write(False)
        written = scheduler.run(self.jobs, self.ray)
        self.drop_stale(written, rows, previous)
        return Outcome(rows, written, write(True))

    def drop_stale(
        self, written: list[Path], rows: list[Proposal], previous: dict[str, Proposal]
    ) -> None:
        """Removes task files an earlier (or interrupted) run wrote that this one does not
        propose; files not named like one of the factory's candidates stay, and so do the
        tasks of kinds this run did not propose (a rerun with another `--kind`)."""
        earlier = [r for r in previous.values() if r.kind in self.kinds]
        ours = self.ids | {r.task_id for r in [*rows, *earlier] if r.task_id}
        for path in sorted((self.out / "tasks").glob("*.yaml")):
            if path.stem in ours and path not in written:
                path.unlink()
                shutil.rmtree(path.with_suffix(""), ignore_errors=True)

    def summary(
        self, rows: list[Proposal], testmap: CoverageMap, coverage_s: float, total_s: float
    ) -> dict[str, object]:
        source = self.release.source
        failed = Counter(row.failed for row in rows if row.failed)
        measured = [row for row in rows if row.fail_to_pass is not None or row.failed == "build"]
        by_kind = Counter(row.kind for row in rows)
        # proposed: measured and passed (an unfinished run's unmeasured survivors are not)
        done = [row for row in rows if not row.failed and row.fail_to_pass is not None]
        proposed = Counter(row.kind for row in done)
        return {
            "package": source.name, "version": source.version, "sha256": source.sha256,
            "released": self.release.released.isoformat() if self.release.released else None,
            "proposed_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "test_args": self.test_args, "environment": self.environment,
            "tests": len(testmap.outcomes),
            "passing_tests": len(testmap.passing()), "coverage_run_s": coverage_s,
            "candidates_total": len(rows), "proposed": len(done),
            "unmeasured": sum(1 for r in rows if not r.failed and r.fail_to_pass is None),
            "candidates_by_kind": dict(by_kind), "proposed_by_kind": dict(proposed),
            "failed_by_filter": {name: failed.get(name, 0) for name in FILTERS},
            "passed_filter": passed_each(rows), "measured": len(measured),
            "measured_s_per_candidate": round(
                sum(r.seconds for r in measured) / max(len(measured), 1), 2
            ),
            "total_s": round(total_s, 1),
        }  # fmt: skip


def suite_tasks(suites: tuple[Path, ...], package: str) -> dict[str, list[tuple[str, str]]]:
    """The package's tasks already in the suite folders (their `tasks/` and `refused/`):
    task id -> the (file, symbol) pairs its mutation removes."""
    found: dict[str, list[tuple[str, str]]] = {}
    for suite in suites:
        for path in sorted([*suite.glob("tasks/*.yaml"), *suite.glob("refused/*.yaml")]):
            try:
                data = yaml.safe_load(path.read_text(encoding="utf-8"))
            except (OSError, yaml.YAMLError):
                continue
            source = data.get("source") if isinstance(data, dict) else None
            if not isinstance(source, dict) or source.get("name") != package:
                continue
            operations = (data.get("mutation") or {}).get("operations") or []
            found[str(data.get("id"))] = [
                (op["file"], op["symbol"]) for op in operations
                if isinstance(op, dict) and op.get("op") == "remove_symbol"
            ]  # fmt: skip
    return found


def already_in(row: Proposal, in_suites: dict[str, list[tuple[str, str]]]) -> bool:
    """Marks a candidate whose task a suite holds already (its `overlap` failure)."""
    if row.task_id is None or row.task_id not in in_suites:
        return False
    row.failed, row.why = "overlap", "the task is in a suite already (--avoid-suite)"
    return True


def passed_each(rows: list[Proposal]) -> dict[str, int]:
    """How many candidates got past each filter (filters apply in `FILTERS` order); one an
    unfinished run did not measure yet got past the cheap ones only."""
    order = {name: at for at, name in enumerate(FILTERS)}

    def reached(row: Proposal) -> int:
        if row.failed:
            return order[row.failed]
        return len(FILTERS) if row.fail_to_pass is not None else order["max_reached"]

    reached_at = [reached(row) for row in rows]
    return {name: sum(1 for r in reached_at if r > at) for at, name in enumerate(FILTERS)}


def propose(
    requirement: str | Release,
    out: Path,
    max_tasks: int = 10,
    released_after: dt.date | None = None,
    backend: str = "bubblewrap",
    endpoint: tuple[str, str] | None = None,
    kind: str = "deletion",
    jobs: int = 1,
    requirements: list[str] | None = None,
    min_statements: int = MIN_STATEMENTS,
    rewrite_prompts: bool = False,
    ray: str | None = None,
    avoid: tuple[Path, ...] = (),
) -> Outcome:
    """Proposes up to `max_tasks` tasks of each kind `kind` names (deletion, bugs, iterate,
    review, testing; both: deletion and bugs; all: every kind); a deletion or follow-up
    removes at least `min_statements` executable lines; `rewrite_prompts` writes the
    prompts of tasks an earlier run proposed again (a newer prompt writer); `ray` measures
    on Ray ("local", or a cluster's address) instead of local processes; a task that a
    suite folder of `avoid` holds already is not proposed again."""
    release = requirement
    if isinstance(release, str):
        release = find_release(release, build_cache())
    check_fresh(release, released_after)
    out.mkdir(parents=True, exist_ok=True)
    proposer = Proposer(
        release, out, backend, endpoint, KINDS[kind], jobs, requirements, min_statements,
        rewrite_prompts, ray, avoid,
    )  # fmt: skip
    return proposer.run(max_tasks)
