"""The cached test runs of a task's trees, which derivation and validation compare.

The pristine tree (the original, hidden tests included) `PRISTINE_RUNS` times and under
each perturbation; where grading splits the tests in two runs (a twin run applies), the
pristine tree so once; the broken tree (the workspace with the hidden tests laid over it)
once. Each is cached under the build cache by the trees' digests, the test arguments and
the task's environment, so the tasks of one package share them; a run that timed out or
reported nothing is not cached.
"""

from __future__ import annotations

import functools
import hashlib
import json
import tempfile
import time
from pathlib import Path

from cursorbench.tasks.workspace import BUILDER_VERSION, BuiltTask
from cursorbench.validation.perturb import (
    PERTURB_VERSION,
    VALIDATION_PERTURBATIONS,
    Perturbation,
    PerturbationUnavailable,
    PerturbedBackend,
    probe,
)
from cursorbench.validation.testruns import SuiteRun, run_suite
from harness.home import build_cache, cache_home
from harness.kinds.registry import kind_of
from harness.kinds.testrun import split_args
from harness.results import TestOutcome
from harness.sandbox import SandboxSettings, open_backend
from harness.sandbox.protocol import SandboxBackend
from harness.spec import Verification
from harness.trees import tree_digest

PRISTINE_RUNS = 3
RUNS_VERSION = "2"  # of the cached pristine, perturbed and broken runs
# What a test prints when it reaches for the network inside the sandbox, which has none.
NETWORK_ERRORS = (
    "socket.gaierror", "Temporary failure in name resolution", "Name or service not known",
    "Network is unreachable", "No address associated with hostname", "NewConnectionError",
    "Failed to establish a new connection", "urllib.error.URLError", "ConnectTimeout",
)  # fmt: skip


def listed_tests(built: BuiltTask) -> Verification:
    """The task's pytest run with FAIL_TO_PASS/PASS_TO_PASS lists (steps 1, 2 and 4)."""
    check = built.task.verification
    tests = kind_of(check).listed_tests(check)
    if tests is None:
        raise ValueError(f"task {built.task.id}: a {check.kind} task lists no tests")
    return tests


def network_signature(output: str) -> str:
    """The first network error a test run's output shows, or ''."""
    return next((error for error in NETWORK_ERRORS if error in output), "")


def _runs_key(*parts: object) -> str:
    return hashlib.sha256(json.dumps([RUNS_VERSION, *parts]).encode()).hexdigest()[:24]


def _env_key(built: BuiltTask) -> list[str]:
    """The task's environment as part of a cached run's key (none for the harness's own)."""
    return [] if built.python_env is None else [built.python_env.name]


def _load_runs(path: Path) -> list[SuiteRun] | None:
    if not path.is_file():
        return None
    stored = json.loads(path.read_text())
    return [
        SuiteRun(
            {k: TestOutcome(v) for k, v in run["outcomes"].items()},
            run["duration_s"],
            output=run.get("network", ""),
        )
        for run in stored
    ]


def _store_runs(path: Path, runs: list[SuiteRun]) -> None:
    """Cached only when every run finished and reported (a timeout is retried next time)."""
    if not all(run.outcomes and not run.timed_out for run in runs):
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    data = [
        {
            "outcomes": run.outcomes,
            "duration_s": run.duration_s,
            "network": network_signature(run.output),
        }
        for run in runs
    ]
    staging = path.with_suffix(f".{time.monotonic_ns()}.tmp")
    staging.write_text(json.dumps(data))
    staging.replace(path)


def pristine_runs(built: BuiltTask, sandboxes: SandboxBackend, scratch: Path) -> list[SuiteRun]:
    """The original tree's runs, cached per tree and test arguments (tasks of one package
    share them)."""
    test_args = listed_tests(built).test_args
    key = _runs_key(
        BUILDER_VERSION, PRISTINE_RUNS, tree_digest(built.original), test_args, *_env_key(built)
    )
    cached = build_cache() / "pristine" / f"{key}.json"
    runs = _load_runs(cached)
    if runs is None:
        timeout = built.task.limits.test_timeout_s
        runs = [
            run_suite(sandboxes, built.original, scratch / "pristine", test_args, timeout)
            for _ in range(PRISTINE_RUNS)
        ]
        _store_runs(cached, runs)
    return runs


@functools.cache
def _probed(backend: str, perturbation: Perturbation) -> str | None:
    """Why `perturbation` cannot be applied on this backend, or None (probed once)."""
    sandboxes = open_backend(backend, SandboxSettings())
    folder = cache_home() / "validate"
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        try:
            probe(sandboxes, perturbation, Path(scratch))
        except PerturbationUnavailable as error:
            return str(error)
    return None


def perturbed_runs(
    built: BuiltTask,
    sandboxes: SandboxBackend,
    scratch: Path,
    perturbations: tuple[Perturbation, ...] = VALIDATION_PERTURBATIONS,
) -> tuple[dict[str, SuiteRun], list[str]]:
    """The original tree's run under each perturbation (cached like `pristine_runs`), by
    the perturbation's description, and the problems of those that could not run."""
    test_args = listed_tests(built).test_args
    digest = tree_digest(built.original)
    runs: dict[str, SuiteRun] = {}
    problems: list[str] = []
    for perturbation in perturbations:
        label = perturbation.describe()
        why = _probed(sandboxes.name, perturbation)
        if why is not None:
            problems.append(f"perturbation not applied: {why}")
            continue
        how = [PERTURB_VERSION, perturbation.model_dump()]
        key = _runs_key(BUILDER_VERSION, how, digest, test_args, *_env_key(built))
        cached = build_cache() / "perturbed" / f"{key}.json"
        found = _load_runs(cached)
        if found is None:
            found = [
                run_suite(
                    PerturbedBackend(sandboxes, perturbation),
                    built.original,
                    scratch / "perturbed",
                    test_args,
                    built.task.limits.test_timeout_s,
                )
            ]
            _store_runs(cached, found)
        if found[0].timed_out:
            problems.append(f"the pristine tree's tests ran past the time limit under {label}")
        runs[label] = found[0]
    return runs, problems


ALONE = "the tests split in two runs, as grading runs them"


def split_run(built: BuiltTask, sandboxes: SandboxBackend, scratch: Path) -> SuiteRun | None:
    """The original tree's tests in the two runs grading splits them into where a twin run
    applies (`testrun.split_args`: the hidden files on their own, then the others), their
    outcomes together: a test that passes only after a module of the other part imported
    something (uncertainties' `test_broadcast_funcs` reads `uncertainties.umath`) fails
    here. Cached like `pristine_runs`; None where grading runs the tests in one run."""
    parts = split_args(built.prepared(), listed_tests(built))
    if parts is None:
        return None
    key = _runs_key(BUILDER_VERSION, "split", tree_digest(built.original), parts, *_env_key(built))
    cached = build_cache() / "pristine" / f"{key}.json"
    found = _load_runs(cached)
    if found is None:
        timeout = built.task.limits.test_timeout_s
        found = [
            run_suite(sandboxes, built.original, scratch / f"split-{at}", args, timeout)
            for at, args in enumerate(parts)
        ]
        _store_runs(cached, found)
    merged: dict[str, TestOutcome] = {}
    for run in found:
        merged |= run.outcomes
    errors = [run.error for run in found if run.error]
    return SuiteRun(
        outcomes=merged, duration_s=sum(run.duration_s for run in found),
        timed_out=any(run.timed_out for run in found), error=errors[0] if errors else None,
    )  # fmt: skip


def broken_run(built: BuiltTask, sandboxes: SandboxBackend, scratch: Path) -> SuiteRun:
    """The workspace with the hidden tests laid over it, cached by both trees' digests."""
    test_args = listed_tests(built).test_args
    key = _runs_key(
        BUILDER_VERSION,
        tree_digest(built.workspace),
        tree_digest(built.hidden),
        test_args,
        *_env_key(built),
    )
    cached = build_cache() / "broken" / f"{key}.json"
    found = _load_runs(cached)
    if found is not None:
        return found[0]
    run = run_suite(
        sandboxes, built.workspace, scratch / "broken", test_args,
        built.task.limits.test_timeout_s, overlay=built.hidden,
    )  # fmt: skip
    _store_runs(cached, [run])
    return run
