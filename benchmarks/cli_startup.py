"""CLI start-up: wall time of `cursorbench --help` and `import harness.spec`, in fresh processes.

Run:  .venv/bin/python benchmarks/cli_startup.py [--runs 15]
      PYTHONPATH=/some/other/tree .venv/bin/python benchmarks/cli_startup.py  (that tree's code)

Each figure is the median of `--runs` fresh interpreters (`python -m cursorbench.cli.app --help`,
`python -c "import harness.spec"`), timed from outside, so interpreter start-up is included;
`python -c pass` is measured alongside as the floor. Beside each, the count of modules the
process has loaded (`sys.modules`) and whether `openai` / `sqlalchemy` are among them: a
machine-independent measure of the import footprint. The processes start in a temporary
folder, so the code measured is the installed package's, or the tree `PYTHONPATH` names
(passed through): two trees are compared one after the other under the same load.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

CASES = {
    "python -c pass (the floor)": ("-c", "pass"),
    "cursorbench --help": ("-m", "cursorbench.cli.app", "--help"),
    "import harness.spec": ("-c", "import harness.spec"),
}
FOOTPRINT = {  # the same work in one process that then reports what it loaded
    "python -c pass (the floor)": "pass",
    "cursorbench --help": "from cursorbench.cli.app import app; "
    "app(['--help'], prog_name='cursorbench', standalone_mode=False)",
    "import harness.spec": "import harness.spec",
}
SOMEWHERE_ELSE = tempfile.gettempdir()  # not a source tree: `-c` and `-m` import from the cwd first
REPORT = (
    "import sys; {statement}; "
    "print(len(sys.modules), 'openai' in sys.modules, 'sqlalchemy' in sys.modules)"
)


def wall_time(args: tuple[str, ...]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, *args], check=True, capture_output=True, cwd=SOMEWHERE_ELSE)
    return time.perf_counter() - started


def footprint(statement: str) -> tuple[int, bool, bool]:
    done = subprocess.run(
        [sys.executable, "-c", REPORT.format(statement=statement)],
        check=True,
        capture_output=True,
        text=True,
        cwd=SOMEWHERE_ELSE,
    )
    count, openai, sqlalchemy = done.stdout.splitlines()[-1].split()
    return int(count), openai == "True", sqlalchemy == "True"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="fresh processes per figure")
    options = parser.parse_args()
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
        f"; load {os.getloadavg()[0]:.1f}; PYTHONPATH={os.environ.get('PYTHONPATH', '')!r}"
    )
    print("\n| figure | median s | min s | modules | openai | sqlalchemy |")
    print("|---|---|---|---|---|---|")
    for label, args in CASES.items():
        wall_time(args)  # warm the file cache
        times = [wall_time(args) for _ in range(options.runs)]
        modules, openai, sqlalchemy = footprint(FOOTPRINT[label])
        print(
            f"| {label} | {statistics.median(times):.3f} | {min(times):.3f} | {modules} "
            f"| {'yes' if openai else 'no'} | {'yes' if sqlalchemy else 'no'} |"
        )


if __name__ == "__main__":
    main()
