"""Harness overhead: time per agent step, and workspace preparation per attempt.

Run:  .venv/bin/python benchmarks/harness_overhead.py [--steps 300] [--write]

Per agent step, against a zero-latency scripted endpoint served over real
HTTP (the official `openai` client on the other side):
  - `read_file` steps: request building, HTTP, response parsing, tool dispatch,
    trajectory write, and one confined `head` (files are read inside the sandbox,
    never by the host).
  - `run true` steps: the same plus one sandboxed command; the command's own
    time (measured alone: spawn, confinement, run, reap) is subtracted and
    reported apart.
Per attempt: building a task (cold, then cached), opening a sandbox (copying
the prepared workspace and snapshotting its git baseline), and grading (a
fresh sandbox, the patch applied inside, pytest run read-only), per task.
Per backend (`--backends bubblewrap,docker`, default: every one that works here): one
confined command on its own (`true` through `execute`, and `bash -c true` as the agent's
`run` does), opening a sandbox, opening it and running its first command (a command
server's start included), and grading; targets: 2 ms (bubblewrap) and 5 ms (docker) per
confined command. For bubblewrap also a read-only `true`, which still gets a fresh
namespace (as every command did before the command server), measured alongside for scale.
`--write` appends the figures to benchmarks/RESULTS.md with date and machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from cursorbench.tasks.loader import bundled_suite, load_tasks
from cursorbench.tasks.workspace import build
from harness.agent.loop import run_agent
from harness.agent.trajectory import Trajectory, read_trajectory
from harness.grading.grade import grade
from harness.model.chat import OpenAIChatModel
from harness.model.doubles import ScriptedDouble
from harness.model.openai_server import OpenAIServer, Reply
from harness.sandbox import (
    BACKENDS,
    SandboxSettings,
    SandboxUnavailable,
    choose_backend,
    open_backend,
)
from harness.sandbox.command import Command
from harness.spec import Limits


def agent_steps(tool: str, arguments: dict, steps: int, workspace: Path, scratch: Path) -> float:
    """Seconds per agent step for `steps` identical tool calls, all included."""
    script = ScriptedDouble([Reply(tool_calls=[(tool, arguments)])] * steps)
    with OpenAIServer(script) as server:
        model = OpenAIChatModel(
            name="scripted-double", base_url=server.base_url, api_key="x", price=None
        )
        sandbox = open_backend("auto").open(workspace, scratch / tool)
        limits = Limits(max_turns=steps + 2, max_tokens=10**10, wall_time_s=3600)
        with Trajectory(scratch / f"{tool}.jsonl", {"task_id": "bench"}) as trajectory:
            started = time.perf_counter()
            outcome = run_agent(model, sandbox, "benchmark", limits, trajectory)
            elapsed = time.perf_counter() - started
        sandbox.close()
    records = read_trajectory(scratch / f"{tool}.jsonl")
    assert outcome.turns == steps + 1, outcome
    assert sum(r["type"] == "tool" for r in records) == steps + 1
    return elapsed / outcome.turns


def command_time(
    argv: list[str],
    repeats: int,
    workspace: Path,
    scratch: Path,
    backend: str = "auto",
    read_only: bool = False,
) -> float:
    """Seconds for one sandboxed command on its own (spawn, confinement, run, reap)."""
    sandbox = open_backend(backend).open(workspace, scratch / "commands")
    sandbox.execute(Command(argv, timeout=30, read_only=read_only))  # warm up
    started = time.perf_counter()
    for _ in range(repeats):
        sandbox.execute(Command(argv, timeout=30, read_only=read_only))
    elapsed = time.perf_counter() - started
    sandbox.close()
    return elapsed / repeats


def per_backend(name: str, repeats: int, commands: int, scratch: Path) -> dict:
    """One backend's costs: per confined command, per sandbox opened, per grading."""
    tasks = [build(task) for task in load_tasks([bundled_suite()])]
    folder = scratch / name
    bare = command_time(["true"], commands, tasks[0].workspace, folder, name)
    shell = command_time(["bash", "-c", "true"], commands, tasks[0].workspace, folder, name)
    fresh = None
    if name == "bubblewrap":
        fresh = command_time(["true"], commands // 4, tasks[0].workspace, folder, name, True)
    backend = open_backend(name, SandboxSettings())
    opening, first, grading = [], [], []
    for index in range(repeats):
        for task in tasks:
            started = time.perf_counter()
            sandbox = backend.open(task.workspace, folder / f"open-{index}")
            opening.append(time.perf_counter() - started)
            sandbox.execute(Command(["true"], timeout=30))
            first.append(time.perf_counter() - started)
            sandbox.close()
            started = time.perf_counter()
            report = grade(task.prepared(), task.reference_patch, backend, folder / "grade")
            grading.append(time.perf_counter() - started)
            assert report.resolved, (name, task.task.id, report.error)
    return {
        "command_ms": 1000 * bare,
        "shell_ms": 1000 * shell,
        "fresh_ms": None if fresh is None else 1000 * fresh,
        "open_ms": 1000 * statistics.median(opening),
        "first_ms": 1000 * statistics.median(first),
        "grade_ms": 1000 * statistics.median(grading),
    }


def working_backends(requested: str | None) -> list[str]:
    if requested:
        return [name.strip() for name in requested.split(",") if name.strip()]
    names = []
    for name in BACKENDS:
        try:
            open_backend(name, SandboxSettings())
        except SandboxUnavailable:
            continue
        names.append(name)
    return names


def preparation(repeats: int, scratch: Path) -> dict:
    tasks = load_tasks([bundled_suite()])
    cold = []
    for source in tasks:
        started = time.perf_counter()
        build(source)
        cold.append(time.perf_counter() - started)
    started = time.perf_counter()
    built = [build(task) for task in tasks]
    cached = (time.perf_counter() - started) / len(tasks)
    backend = open_backend("auto", SandboxSettings())
    opening: list[float] = []
    grading: dict[str, list[float]] = {task.task.id: [] for task in built}
    for index in range(repeats):
        for task in built:
            started = time.perf_counter()
            sandbox = backend.open(task.workspace, scratch / f"open-{index}")
            opening.append(time.perf_counter() - started)
            sandbox.close()
            started = time.perf_counter()
            report = grade(task.prepared(), task.reference_patch, backend, scratch / "grade")
            grading[task.task.id].append(time.perf_counter() - started)
            assert report.resolved, (task.task.id, report.error)
    per_task = [statistics.median(times) for times in grading.values()]
    return {
        "build_cold_ms": 1000 * statistics.median(cold),
        "build_cached_ms": 1000 * cached,
        "open_sandbox_ms": 1000 * statistics.median(opening),
        "grade_ms": 1000 * statistics.median(per_task),
        "grade_max_ms": 1000 * max(per_task),
        "workspace_files": statistics.median(
            sum(1 for p in t.workspace.rglob("*") if p.is_file()) for t in built
        ),
    }


TARGETS_MS = {"bubblewrap": "≤ 2 ms", "docker": "≤ 5 ms"}


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--write", action="store_true", help="append to benchmarks/RESULTS.md")
    parser.add_argument("--backends", help="comma-separated; default: every backend that works")
    parser.add_argument("--commands", type=int, default=200, help="commands timed per backend")
    args = parser.parse_args()
    backends = working_backends(args.backends)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        os.environ.setdefault("CURSORBENCH_HOME", str(scratch / "home"))
        workspace = build(load_tasks([bundled_suite()])[0]).workspace
        read = agent_steps("read_file", {"path": "README.md"}, args.steps, workspace, scratch)
        run = agent_steps("run", {"command": "true"}, args.steps // 3, workspace, scratch)
        command = command_time(["bash", "-c", "true"], args.steps // 3, workspace, scratch)
        prep = preparation(args.repeats, scratch)
        costs = {name: per_backend(name, args.repeats, args.commands, scratch) for name in backends}
    backend = choose_backend("auto")
    lines = [
        f"## harness_overhead — {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "",
        f"- machine: {machine()}; sandbox: {backend}; load average (1 min) "
        f"{load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end",
        f"- command: `.venv/bin/python benchmarks/harness_overhead.py --steps {args.steps}"
        f" --repeats {args.repeats} --commands {args.commands}"
        f"{' --backends ' + args.backends if args.backends else ''}`",
        "",
        "| figure | value |",
        "|---|---|",
        f"| harness time per agent step, `read_file` (one confined read) | {1000 * read:.2f} ms |",
        f"| harness time per agent step, `run true` (command time excluded) | "
        f"{1000 * (run - command):.2f} ms |",
        f"| one sandboxed command `bash -c true` on its own ({backend}) | "
        f"{1000 * command:.2f} ms |",
        f"| task build, cold (median of bundled tasks) | {prep['build_cold_ms']:.1f} ms |",
        f"| task build, cached | {prep['build_cached_ms']:.2f} ms |",
        f"| workspace preparation per attempt (copy + git baseline, "
        f"{prep['workspace_files']:.0f} files) | {prep['open_sandbox_ms']:.1f} ms |",
        f"| clean-state grading per attempt, median of tasks (sandbox, patch, pytest) | "
        f"{prep['grade_ms']:.0f} ms |",
        f"| clean-state grading, slowest bundled task (median of its runs) | "
        f"{prep['grade_max_ms']:.0f} ms |",
        "",
        "Per backend (median over the bundled tasks for opening and grading):",
        "",
        "| backend | confined `true` | confined `bash -c true` | target "
        "| read-only `true` (fresh namespace) | open a sandbox | open + first command "
        "| grade an attempt |",
        "|---|---|---|---|---|---|---|---|",
        *(
            f"| {name} | {c['command_ms']:.2f} ms | {c['shell_ms']:.2f} ms | "
            f"{TARGETS_MS.get(name, '-')} | "
            f"{'-' if c['fresh_ms'] is None else format(c['fresh_ms'], '.2f') + ' ms'} | "
            f"{c['open_ms']:.0f} ms | {c['first_ms']:.0f} ms | {c['grade_ms']:.0f} ms |"
            for name, c in costs.items()
        ),
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        results = Path(__file__).parent / "RESULTS.md"
        existing = results.read_text() if results.exists() else "# Benchmark results\n\n"
        results.write_text(existing.rstrip("\n") + "\n\n" + text)


if __name__ == "__main__":
    main()
