"""The task factory at scale: `cursorbench tasks propose` over many releases, and what
passed each filter.

Runs the real CLI once per release of a list (`benchmarks/factory_packages.txt` by
default), `--parallel` releases at a time, each with a wall-clock limit, and sums what
each run's `proposals.json` says: candidates, how many got past each filter (in the
order the factory applies them), proposed tasks, and the machine time (wall and CPU of
the whole `propose` process tree) per candidate and per proposed task. A release whose
run finished earlier is not run again (`--rerun` runs it again, resuming what it measured;
delete its folder to redo it); one that ran out
of time keeps what it measured, and a rerun resumes it (the factory's own resume).

    python benchmarks/factory_scale.py --out /work/rec/factory-scale --max 1 --parallel 2

Writes `scale.json` (every release's row and the totals) in `--out` and prints a
Markdown summary for `benchmarks/RESULTS.md`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from cursorbench.factory.filters import FILTERS, Proposal
from cursorbench.factory.propose import passed_each

HERE = Path(__file__).resolve().parent


def releases(path: Path) -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def proposals(folder: Path) -> dict[str, object] | None:
    """The release's `proposals.json`, when it wrote one."""
    try:
        data = json.loads((folder / "proposals.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def recount(data: dict[str, object]) -> dict[str, object]:
    """What the candidates of `proposals.json` say, for finished and unfinished runs alike
    (the factory's own summary of a run stopped by the time limit may predate this rule):
    proposed means measured and passed; a survivor not measured yet (an unfinished run
    lists only the candidates it decided) passed the cheap filters only."""
    listed = data.get("candidates")
    rows = [Proposal.model_validate(c) for c in listed] if isinstance(listed, list) else []
    given = data.get("candidates_total")
    total = given if isinstance(given, int) else len(rows)
    unlisted = max(total - len(rows), 0)
    rows += [Proposal(key=f"unlisted-{n}", file="", symbols=[]) for n in range(unlisted)]
    proposed = [r for r in rows if not r.failed and r.fail_to_pass is not None]
    by_kind = dict(Counter(row.kind for row in proposed))
    changed = sorted(r.changed_lines for r in proposed if r.changed_lines is not None)
    measured = [r for r in rows if r.fail_to_pass is not None or r.failed == "build"]
    return {
        "proposed": len(proposed), "proposed_by_kind": by_kind,
        "unmeasured": sum(1 for r in rows if not r.failed and r.fail_to_pass is None),
        "passed_filter": passed_each(rows), "candidates_total": total,
        "measured": len(measured), "proposed_changed_lines": changed,
    }  # fmt: skip


def run_one(release: str, out: Path, args: argparse.Namespace) -> dict[str, object]:
    folder = out / release.partition("==")[0]
    try:
        earlier = json.loads((folder / "scale_row.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        earlier = None
    if isinstance(earlier, dict) and earlier.get("status") == "finished" and not args.rerun:
        return earlier | recount(proposals(folder) or {})
    folder.mkdir(parents=True, exist_ok=True)
    argv = [
        str(Path(sys.executable).parent / "cursorbench"), "tasks", "propose", release,
        "--out", str(folder), "--max", str(args.max), "--kind", args.kind, "--jobs", "1",
        "--min-statements", str(args.min_statements),
        *(["--rewrite-prompts"] if args.rewrite_prompts else []),
        *(arg for suite in args.avoid_suite for arg in ("--avoid-suite", str(suite))),
    ]  # fmt: skip
    started = time.monotonic()
    with open(folder / "propose.log", "w") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        timer = threading.Timer(args.timeout, lambda: os.killpg(proc.pid, 9))
        timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        timer.cancel()
    rc = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - started
    cpu = usage.ru_utime + usage.ru_stime
    row: dict[str, object] = {
        "release": release, "rc": rc, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
        "timed_out": rc == -9,
    }  # fmt: skip
    found = proposals(folder)
    if found is None:
        row["status"] = "error"
        row["error"] = last_line((folder / "propose.log").read_text(errors="replace"))
        return row
    row["status"] = "finished" if found.get("finished") else "partial"
    row |= {k: v for k, v in found.items() if k != "candidates"} | recount(found)
    (folder / "scale_row.json").write_text(json.dumps(row, indent=1))
    return row


def number(row: dict[str, object], key: str) -> float:
    value = row.get(key)
    return float(value) if isinstance(value, int | float) else 0.0


def counts(row: dict[str, object], key: str) -> dict[str, int]:
    value = row.get(key)
    if not isinstance(value, dict):
        return {}
    return {str(k): int(v) for k, v in value.items() if isinstance(v, int)}


def totals(rows: list[dict[str, object]]) -> dict[str, object]:
    with_candidates = [r for r in rows if number(r, "candidates_total") > 0]

    def total(key: str) -> float:
        return sum(number(r, key) for r in rows)

    passed = {name: 0 for name in FILTERS}
    proposed_by_kind: dict[str, int] = {}
    for row in rows:
        for name, count in counts(row, "passed_filter").items():
            passed[name] = passed.get(name, 0) + count
        for kind, count in counts(row, "proposed_by_kind").items():
            proposed_by_kind[kind] = proposed_by_kind.get(kind, 0) + count
    candidates, proposed = total("candidates_total"), total("proposed")
    wall, cpu = total("wall_s"), total("cpu_s")
    return {
        "releases": len(rows), "releases_with_candidates": len(with_candidates),
        "errors": sum(1 for r in rows if r.get("status") == "error"),
        "timed_out": sum(1 for r in rows if r.get("timed_out")),
        "candidates": int(candidates), "passed_filter": passed, "proposed": int(proposed),
        "proposed_by_kind": proposed_by_kind, "measured": int(total("measured")),
        "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
        "cpu_s_per_candidate": round(cpu / max(candidates, 1), 2),
        "cpu_s_per_proposed_task": round(cpu / max(proposed, 1), 1),
        "coverage_run_s": round(total("coverage_run_s"), 1),
    }  # fmt: skip


def markdown(rows: list[dict[str, object]], summary: dict[str, object]) -> str:
    names = list(FILTERS)
    head = (
        "| release | status | tests | candidates | "
        + " | ".join(names)
        + " | proposed | wall s | cpu s |"
    )
    lines = [head, "|" + "---|" * (len(names) + 7)]
    for row in rows:
        passed = counts(row, "passed_filter")
        status = str(row.get("status"))
        if status == "error":
            status = f"error: {str(row.get('error', ''))[:80]}"
        cells = [
            str(row["release"]), status, str(row.get("passing_tests", "-")),
            str(row.get("candidates_total", "-")), *(str(passed.get(n, "-")) for n in names),
            str(row.get("proposed", "-")), str(row.get("wall_s", "-")), str(row.get("cpu_s", "-")),
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\n" + json.dumps(summary, indent=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--packages", type=Path, default=HERE / "factory_packages.txt")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--max", type=int, default=1, help="tasks of each kind per release")
    parser.add_argument("--kind", default="both")
    parser.add_argument(
        "--min-statements", type=int, default=5, help="a deletion's size floor (propose's)"
    )
    parser.add_argument(
        "--rerun", action="store_true",
        help="run finished releases again too (each resumes what it measured: new kinds, or "
        "a newer factory's candidates)",
    )  # fmt: skip
    parser.add_argument(
        "--rewrite-prompts", action="store_true", help="propose's: write prompts again"
    )
    parser.add_argument(
        "--avoid-suite", type=Path, action="append", default=[],
        help="propose's: a suite folder whose tasks are not proposed again (repeat it)",
    )  # fmt: skip
    parser.add_argument("--parallel", type=int, default=2, help="releases at once")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per release")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # progress in a log
    wanted = releases(args.packages)
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, object]] = []
    lock = threading.Lock()

    def record(release: str) -> None:
        row = run_one(release, args.out, args)
        with lock:
            rows.append(row)
            order = {r: i for i, r in enumerate(wanted)}
            rows.sort(key=lambda r: order[str(r["release"])])
            done = {"rows": rows, "totals": totals(rows)}
            (args.out / "scale.json").write_text(json.dumps(done, indent=1))
            counts = f"{row.get('candidates_total', '-')} candidates, "
            counts += f"{row.get('proposed', '-')} proposed, {row.get('wall_s', '-')} s"
            print(f"[{len(rows)}/{len(wanted)}] {release}: {row.get('status')} {counts}")

    with ThreadPoolExecutor(args.parallel) as pool:
        list(pool.map(record, wanted))
    print(markdown(rows, totals(rows)))


if __name__ == "__main__":
    main()
