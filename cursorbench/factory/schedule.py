"""Measuring the candidates that passed the cheap filters: in order, on `jobs` local
processes, resuming an earlier run's measurements, with a progress line per candidate.

Candidates are taken most exercised first; one that shares a symbol (for bugs, a
function) with a task already proposed of its kind is skipped ("overlap"), one that
shares it with a candidate still being measured waits for it, and none starts once
`max_tasks` of its kind are proposed or being measured ("max_reached" once that many
are proposed). With one job this is the sequential order exactly; with more, a waiting
candidate lets later ones start.

Resuming: a candidate whose key has a measured result in the earlier `proposals.json`
(failed at the build or a measured filter, or proposed with its task file still there)
and the same operations and hidden files is not measured again; its row is taken as it was
(`resumed: true`).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import ParamSpec, TypeVar

from cursorbench.factory.filters import Proposal
from cursorbench.factory.job import Entry, Measured
from cursorbench.factory.job_kinds import family_of, measure_job, rewrite_prompt

P = ParamSpec("P")
T = TypeVar("T")
MEASURED = (
    "build", "measured_fail_to_pass", "measured_spill", "derive",
    "killed_mutants", "reference_graded",  # a testing task's (`testing_tasks`)
)  # fmt: skip


@dataclass
class KindState:
    written: list[Path] = field(default_factory=list)
    taken: set[tuple[str, str]] = field(default_factory=set)
    running: set[tuple[str, str]] = field(default_factory=set)
    in_flight: int = 0


class InlineExecutor(Executor):
    """Runs each job at once in this process (`--jobs 1`)."""

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()
        future.set_result(fn(*args, **kwargs))
        return future


def reusable(previous: Proposal | None) -> bool:
    if previous is None:
        return False
    if previous.failed in MEASURED:
        return True
    finished = previous.fail_to_pass is not None and previous.task_id is not None
    return previous.failed is None and finished


class RayJobs(Executor):
    """Each job a Ray task (`harness.run.ray_executor.RayExecutor`), at most `jobs` at once: on
    a local cluster of `jobs` CPUs, or on the cluster at `address`, whose workers need
    this machine's build cache and output folder at the same paths (a shared file
    system) and a sandbox backend of their own. The `CURSORBENCH_*` settings go with
    every job."""

    def __init__(self, jobs: int, address: str | None) -> None:
        from harness.run.ray_executor import RayExecutor

        settings = {k: v for k, v in os.environ.items() if k.startswith("CURSORBENCH_")}
        self.ray = RayExecutor(
            concurrency=jobs, address=address, num_cpus=None if address else jobs,
            env=settings or None,
        )  # fmt: skip

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        if kwargs or len(args) != 1:
            raise TypeError("a Ray job takes one argument")
        future: Future[T] = self.ray.submit(fn, args[0])
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.ray.shutdown()


def executor_for(jobs: int, ray: str | None = None) -> Executor:
    """Where jobs run: this process (`jobs` 1), `jobs` spawned processes, or Ray (`ray`:
    "local" for a local cluster, else a cluster's address)."""
    if ray is not None:
        return RayJobs(jobs, None if ray == "local" else ray)
    if jobs <= 1:
        return InlineExecutor()
    return ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"))


class Scheduler:
    def __init__(
        self, entries: list[Entry], previous: dict[str, Proposal], tasks: Path, max_tasks: int,
        checkpoint: Callable[[], object] = lambda: None, rewrite_prompts: bool = False,
    ) -> None:  # fmt: skip
        self.checkpoint = checkpoint  # called after each measurement (an interrupted run resumes)
        self.rewrite_prompts = rewrite_prompts  # a resumed task's prompt written again
        self.rewritten = 0
        self.moved: set[str] = set()  # accepted tasks moved into a suite (`tasks review`)
        self.pending = list(entries)
        self.previous, self.tasks, self.max_tasks = previous, tasks, max_tasks
        self.kinds: dict[str, KindState] = {}
        self.families: dict[str, tuple[set[tuple[str, str]], set[tuple[str, str]]]] = {}
        self.total, self.done, self.measured_now, self.resumed = len(entries), 0, 0, 0

    def state(self, entry: Entry) -> KindState:
        return self.kind_state(entry.row.kind)

    def kind_state(self, kind: str) -> KindState:
        """The kind's state; kinds of one family share what is taken and running."""
        if kind not in self.kinds:
            family = family_of(kind)
            taken, running = self.families.setdefault(family, (set(), set()))
            self.kinds[kind] = KindState(taken=taken, running=running)
        return self.kinds[kind]

    def reserve(self, proposed: Iterable[Proposal]) -> None:
        """Symbols of tasks proposed earlier, of kinds this run does not propose: a kind of
        their family does not use them again."""
        for row in proposed:
            self.kind_state(row.kind).taken.update((row.file, name) for name in row.symbols)

    def run(self, jobs: int, ray: str | None = None) -> list[Path]:
        """Measures the pending entries, `jobs` at once (`executor_for`); the task files
        written."""
        running: dict[Future[Measured], Entry] = {}
        with executor_for(jobs, ray) as pool:
            while self.pending or running:
                self._start(pool, running, jobs)
                if running:
                    finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
                    for future in finished:
                        self._finish(running.pop(future), future.result())
        return [path for state in self.kinds.values() for path in state.written]

    def _start(self, pool: Executor, running: dict[Future[Measured], Entry], jobs: int) -> None:
        at = 0
        while at < len(self.pending):
            entry = self.pending[at]
            state, row = self.state(entry), entry.row
            if entry.names & state.taken:
                row.failed, row.why = "overlap", "shares a symbol with a task already proposed"
            elif len(state.written) >= self.max_tasks:
                row.failed, row.why = (
                    "max_reached",
                    f"--max {self.max_tasks} tasks already proposed",
                )
            elif (
                entry.names & state.running
                or len(state.written) + state.in_flight >= self.max_tasks
            ):
                at += 1  # waits for those being measured
                continue
            elif self._resume(entry):
                pass
            elif len(running) >= jobs:
                return
            else:
                state.running |= entry.names
                state.in_flight += 1
                running[pool.submit(measure_job, entry.job())] = entry
                self.measured_now += 1
            self.pending.pop(at)
            if row.failed in ("overlap", "max_reached"):
                self._progress(row)

    def _resume(self, entry: Entry) -> bool:
        before = self.previous.get(entry.row.key)
        if not reusable(before):
            return False
        assert before is not None
        moved = before.failed is None and before.task_id in self.moved
        if before.candidate_digest != entry.row.candidate_digest and not moved:
            return False  # the candidate changed since (a newer factory); a moved task stays
        here = (self.tasks / f"{before.task_id}.yaml").is_file()
        if before.failed is None and not here and before.task_id not in self.moved:
            return False
        row = entry.row
        for name in ("task_id", "fail_to_pass", "pass_to_pass", "spilled", "changed_lines",
                     "seconds", "failed", "why", "prompt_writer"):  # fmt: skip
            setattr(row, name, getattr(before, name))
        row.resumed = True
        self.resumed += 1
        if row.failed is None:
            state = self.state(entry)
            state.written.append(self.tasks / f"{row.task_id}.yaml")
            state.taken |= entry.names
            if self.rewrite_prompts and rewrite_prompt(entry.job()):
                self.rewritten += 1
        self._progress(row)
        return True

    def _finish(self, entry: Entry, done: Measured) -> None:
        state, row = self.state(entry), entry.row
        state.running -= entry.names
        state.in_flight -= 1
        if done.measured:
            row.fail_to_pass, row.pass_to_pass = len(done.fail_to_pass), done.pass_to_pass
            row.spilled, row.changed_lines = done.spilled, done.changed_lines
        row.seconds, row.prompt_writer = done.seconds, done.prompt_writer
        if done.failure is not None:
            row.failed, row.why = done.failure
        else:
            assert done.path is not None
            state.written.append(done.path)
            state.taken |= entry.names
        self._progress(row)
        self.checkpoint()

    def _progress(self, row: Proposal) -> None:
        self.done += 1
        if row.failed is None:
            outcome = f"proposed {row.task_id} (FAIL_TO_PASS {row.fail_to_pass})"
        else:
            outcome = f"{row.failed}: {row.why}"
        tag = " (resumed)" if row.resumed else ""
        line = f"[{self.done}/{self.total}] {row.key}: {outcome}{tag} {row.seconds:.0f}s"
        print(line[:240], file=sys.stderr, flush=True)


def earlier(rows: Iterable[dict[str, object]]) -> dict[str, Proposal]:
    """An earlier `proposals.json`'s rows by key."""
    found: dict[str, Proposal] = {}
    for data in rows:
        try:
            row = Proposal.model_validate(data)
        except ValueError:
            continue
        found[row.key] = row
    return found
