"""Test runs under perturbation: another date, time zone, locale, hash seed, test order, load.

A verdict must not depend on the day it is given or the machine it is given on. A
`Perturbation` names the conditions of one run; `PerturbedBackend` wraps a sandbox
backend so that every command run through it (the suite runs of validation, and the
grading runs of `tasks health`) runs under them, inside the sandbox:

- clock: libfaketime (Debian's `faketime`) preloaded into the command, `FAKETIME`
  a relative offset (`+1d`, `+31d`, `+1y`), monotonic clocks shifted alike;
- tz, locale, hash seed: `TZ`, `LC_ALL`/`LANG`, `PYTHONHASHSEED`;
- order and load: a tiny pytest plugin (`-p cursorbench_perturb`, from a folder laid
  over the workspace) reverses or shuffles the collected items (modules, then the items
  in each), and keeps busy processes running for the whole session.

`probe` checks inside the sandbox that a perturbation took effect (a libfaketime
that is missing, or a time zone the sandbox lacks, would otherwise change nothing
silently) and that sleeping and waiting still work under it; `compare` turns
pristine and perturbed runs into the per-test flake record.
"""

from __future__ import annotations

import glob
import json
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from harness.results import TestOutcome
from harness.sandbox.command import Command
from harness.sandbox.process import Completed
from harness.sandbox.protocol import Sandbox, SandboxBackend

PERTURB_VERSION = "2"  # of how a perturbation is applied (part of the cached runs' key)
PLUGIN_DIR = ".cursorbench-perturb"
PLUGIN = "cursorbench_perturb"
FAKETIME_LIBS = (
    "/usr/lib/*/faketime/libfaketime.so.1",
    "/usr/lib/faketime/libfaketime.so.1",
    "/usr/local/lib/faketime/libfaketime.so.1",
    "/usr/local/lib/libfaketime.so.1",
)
# `--clock` words people write, as libfaketime offsets (a "month" is 31 days: it always
# lands in another calendar month).
CLOCK_UNITS = {"d": 1, "day": 1, "days": 1, "mo": 31, "month": 31, "months": 31, "y": 366}
CLOCK_UNITS |= {"year": 366, "years": 366}
PROBE_MARK = "CURSORBENCH-PROBE "

_PLUGIN_SOURCE = '''"""Loaded by CursorBench's validation (-p cursorbench_perturb): order, load."""
import os
import random
import subprocess
import sys

import pytest

_busy = []


def pytest_configure(config):
    for _ in range(int(os.environ.get("CURSORBENCH_CPU_LOAD", "0"))):
        _busy.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))


def pytest_unconfigure(config):
    for process in _busy:
        process.kill()
        process.wait()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    order = os.environ.get("CURSORBENCH_ORDER", "collected")
    if order == "reversed":
        items.reverse()
    elif order.startswith("shuffled:"):
        rng = random.Random(int(order.split(":", 1)[1]))
        modules = {}
        for item in items:
            modules.setdefault(item.nodeid.split("::")[0], []).append(item)
        names = list(modules)
        rng.shuffle(names)
        shuffled = []
        for name in names:
            rng.shuffle(modules[name])
            shuffled += modules[name]
        items[:] = shuffled
'''

_PROBE_SCRIPT = """
import json, locale, os, subprocess, sys, time
time.sleep(0.01)  # sleeping and waiting must work under the shifted clock
subprocess.run([sys.executable, "-c", "pass"], timeout=60, check=True)
try:
    locale.setlocale(locale.LC_ALL, "")
    loc = locale.setlocale(locale.LC_ALL)
except locale.Error as error:
    loc = "error: " + str(error)
print({mark!r} + json.dumps({"time": time.time(), "tz": time.strftime("%z"),
      "tzname": list(time.tzname), "locale": loc, "seed": os.environ.get("PYTHONHASHSEED")}))
""".replace("{mark!r}", repr(PROBE_MARK))


class PerturbationUnavailable(RuntimeError):
    """A perturbation cannot be applied here (no libfaketime, or the sandbox ignores it)."""


class Perturbation(BaseModel):
    """The conditions of one run; unset fields stay as the sandbox has them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    clock: str | None = None  # a libfaketime offset: +1d, +31d, +1y
    tz: str | None = None
    locale: str | None = None
    hash_seed: int | None = None
    order: Literal["collected", "reversed", "shuffled"] = "collected"
    order_seed: int = 0
    cpu_load: int = 0  # busy processes alongside the tests

    def describe(self) -> str:
        parts = [f"clock {self.clock}"] if self.clock else []
        parts += [f"TZ={self.tz}"] if self.tz else []
        parts += [f"LC_ALL={self.locale}"] if self.locale else []
        parts += [f"PYTHONHASHSEED={self.hash_seed}"] if self.hash_seed is not None else []
        if self.order != "collected":
            parts.append("shuffled order" if self.order == "shuffled" else "reversed order")
            parts[-1] += f" (seed {self.order_seed})" if self.order == "shuffled" else ""
        parts += [f"{self.cpu_load} busy processes"] if self.cpu_load else []
        return f"{self.name} ({', '.join(parts) or 'as is'})"

    def env(self) -> dict[str, str]:
        values: dict[str, str] = {}
        if self.clock:
            # Monotonic clocks shift too: with FAKETIME_DONT_FAKE_MONOTONIC, libfaketime
            # turns CPython's absolute monotonic sleeps into EINVAL (time.sleep fails).
            values |= {"LD_PRELOAD": faketime_library(), "FAKETIME": self.clock}
        if self.tz:
            values["TZ"] = self.tz
        if self.locale:
            values |= {"LC_ALL": self.locale, "LANG": self.locale}
        if self.hash_seed is not None:
            values["PYTHONHASHSEED"] = str(self.hash_seed)
        if self.order == "reversed":
            values["CURSORBENCH_ORDER"] = "reversed"
        elif self.order == "shuffled":
            values["CURSORBENCH_ORDER"] = f"shuffled:{self.order_seed}"
        if self.cpu_load:
            values["CURSORBENCH_CPU_LOAD"] = str(self.cpu_load)
        return values

    def uses_plugin(self) -> bool:
        return self.order != "collected" or self.cpu_load > 0

    def clock_seconds(self) -> float:
        """The clock offset in seconds (0 without one)."""
        if not self.clock:
            return 0.0
        sign = -1.0 if self.clock.startswith("-") else 1.0
        body = self.clock.lstrip("+-")
        units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "y": 365 * 86400}
        unit = body[-1] if body[-1] in units else "s"
        return sign * float(body.rstrip("smhdy")) * units[unit]


# Validation's perturbed runs of the pristine tree. Several conditions share a run (three
# runs, not ten, per package): a test that changes in a run is dropped with the run's
# whole description as its reason.
VALIDATION_PERTURBATIONS = (
    Perturbation(
        name="day-ahead", clock="+1d", tz="Pacific/Kiritimati", hash_seed=1, order="reversed"
    ),
    Perturbation(
        name="month-ahead",
        clock="+31d",
        tz="America/Adak",
        locale="POSIX",
        hash_seed=2,
        order="shuffled",
        order_seed=1,
    ),
    Perturbation(
        name="year-ahead", clock="+366d", hash_seed=3, order="shuffled", order_seed=2, cpu_load=2
    ),
)


def clock_perturbation(value: str) -> Perturbation:
    """`--clock +1d` (or +2days, +1mo, +1y, -3d) as a perturbation of the clock alone."""
    text = value.strip().lower()
    sign = "-" if text.startswith("-") else "+"
    body = text.lstrip("+-")
    number = "".join(c for c in body if c.isdigit())
    unit = body[len(number) :] or "d"
    if not number or unit not in CLOCK_UNITS:
        raise ValueError(f"--clock {value!r}: give e.g. +1d, +1mo or +1y")
    days = int(number) * CLOCK_UNITS[unit]
    return Perturbation(name=f"clock{sign}{number}{unit}", clock=f"{sign}{days}d")


def faketime_library() -> str:
    for pattern in FAKETIME_LIBS:
        found = sorted(glob.glob(pattern))
        if found:
            return found[0]
    raise PerturbationUnavailable(
        "libfaketime is not installed (Debian: apt-get install faketime); "
        "the clock cannot be shifted"
    )


def pytest_position(argv: Sequence[str]) -> int | None:
    """The index just after `-m pytest` in a command line, or None."""
    for index in range(len(argv) - 1):
        if argv[index] == "-m" and argv[index + 1] == "pytest":
            return index + 2
    return None


class PerturbedSandbox:
    """A sandbox whose commands run under a perturbation; everything else is the inner's."""

    def __init__(self, inner: Sandbox, perturbation: Perturbation) -> None:
        self.inner = inner
        self.perturbation = perturbation

    @property
    def root(self) -> str:
        return self.inner.root

    def execute(self, command: Command) -> Completed:
        argv = list(command.argv)  # the inner sandbox names its interpreter (`with_sandbox_python`)
        values = self.perturbation.env()
        place = pytest_position(argv)
        if place is not None and self.perturbation.uses_plugin():
            argv[place:place] = ["-p", PLUGIN]
            values["PYTHONPATH"] = f"{self.root}/{PLUGIN_DIR}"
        # Set inside the sandbox (`env`), not for the launcher: a setuid launcher would
        # drop LD_PRELOAD, and the harness's own processes must keep the real clock.
        assignments = [f"{key}={value}" for key, value in values.items()]
        return self.inner.execute(command.with_argv(["/usr/bin/env", *assignments, *argv]))

    def run(self, command: str, timeout: float) -> Completed:
        return self.inner.run(command, timeout)

    def read(self, path: str) -> str:
        return self.inner.read(path)

    def write(self, path: str, text: str) -> None:
        self.inner.write(path, text)

    def apply_patch(self, patch: str) -> None:
        self.inner.apply_patch(patch)

    def diff(self) -> str:
        return self.inner.diff()

    def limit_hit(self) -> str | None:
        return self.inner.limit_hit()

    def close(self) -> None:
        self.inner.close()


class PerturbedBackend:
    """Opens the inner backend's sandboxes under `perturbation`, the plugin laid over."""

    def __init__(self, inner: SandboxBackend, perturbation: Perturbation) -> None:
        self.inner = inner
        self.perturbation = perturbation
        self.name = inner.name
        self.confined = inner.confined

    def open(
        self,
        workspace: Path,
        scratch: Path,
        overlay: Path | None = None,
        track_changes: bool = True,
        python_env: Path | None = None,
    ) -> PerturbedSandbox:
        if self.perturbation.uses_plugin():
            if overlay is None:
                overlay = scratch.parent / f"{scratch.name}-perturb-overlay"
                shutil.rmtree(overlay, ignore_errors=True)
                overlay.mkdir(parents=True)
            folder = overlay / PLUGIN_DIR
            folder.mkdir(exist_ok=True)
            (folder / f"{PLUGIN}.py").write_text(_PLUGIN_SOURCE, encoding="utf-8")
        inner = self.inner.open(workspace, scratch, overlay, track_changes, python_env=python_env)
        return PerturbedSandbox(inner, self.perturbation)

    def self_test(self, scratch: Path) -> None:
        self.inner.self_test(scratch)


def probe(backend: SandboxBackend, perturbation: Perturbation, scratch: Path) -> None:
    """Raises `PerturbationUnavailable` unless the perturbation shows inside the sandbox."""
    shutil.rmtree(scratch, ignore_errors=True)
    (scratch / "empty").mkdir(parents=True)
    plain = _probe_values(backend, scratch)
    seen = _probe_values(PerturbedBackend(backend, perturbation), scratch)
    wanted = perturbation.clock_seconds()
    if wanted and abs(seen["time"] - plain["time"] - wanted) > 600:
        shift = seen["time"] - plain["time"]
        raise PerturbationUnavailable(
            f"{perturbation.describe()}: the clock inside the sandbox moved {shift:.0f}s, "
            f"not {wanted:.0f}s (is libfaketime readable inside the sandbox?)"
        )
    if perturbation.tz and seen["tz"] == plain["tz"] and perturbation.tz != "UTC":
        raise PerturbationUnavailable(
            f"{perturbation.describe()}: the sandbox has no time zone {perturbation.tz!r}"
        )
    if perturbation.locale and str(seen["locale"]).startswith("error"):
        raise PerturbationUnavailable(f"{perturbation.describe()}: {seen['locale']}")
    if perturbation.hash_seed is not None and seen["seed"] != str(perturbation.hash_seed):
        raise PerturbationUnavailable(f"{perturbation.describe()}: PYTHONHASHSEED not set")


def _probe_values(backend: SandboxBackend, scratch: Path) -> dict[str, Any]:
    sandbox = backend.open(scratch / "empty", scratch / "sandbox", track_changes=False)
    try:
        done = sandbox.execute(
            Command([sys.executable, "-c", _PROBE_SCRIPT], timeout=60, read_only=True)
        )
    finally:
        sandbox.close()
    line = next((x for x in done.output.splitlines() if x.startswith(PROBE_MARK)), None)
    if line is None:
        raise PerturbationUnavailable(f"the probe did not run: {done.output[-300:]!r}")
    values: dict[str, Any] = json.loads(line.removeprefix(PROBE_MARK))
    values["probed_at"] = time.time()
    return values


def _outcome_text(outcome: TestOutcome | None) -> str:
    return "missing" if outcome is None else outcome.value


def compare(
    baseline: Sequence[Mapping[str, TestOutcome]],
    perturbed: Mapping[str, Mapping[str, TestOutcome]],
) -> tuple[list[str], dict[str, str]]:
    """The stable tests (passed in every baseline and every perturbed run) and the flake
    record: each test that passed somewhere but not everywhere, with the reason."""
    if not baseline:
        return [], {}
    seen = set().union(*(set(run) for run in baseline))
    dropped: dict[str, str] = {}
    for test in sorted(seen):
        outcomes = [run.get(test) for run in baseline]
        if any(o is TestOutcome.PASSED for o in outcomes) and not all(
            o is TestOutcome.PASSED for o in outcomes
        ):
            shown = ", ".join(_outcome_text(o) for o in outcomes)
            dropped[test] = f"differs between the {len(baseline)} pristine runs: {shown}"
    passing = [t for t in sorted(seen) if t not in dropped and _always_passed(t, baseline)]
    for label, run in perturbed.items():
        fresh = sorted(set(run) - seen)
        for test in passing:
            if test in dropped or run.get(test) is TestOutcome.PASSED:
                continue
            if test not in run:
                renamed = [t for t in fresh if _same_test(t, test)]
                reason = f"its id changes under {label}"
                reason += f" (there: {renamed[0]})" if renamed else " (missing there)"
            else:
                reason = f"{_outcome_text(run.get(test))} under {label}"
            dropped[test] = reason
    stable = [t for t in passing if t not in dropped]
    return stable, dropped


def _always_passed(test: str, runs: Sequence[Mapping[str, TestOutcome]]) -> bool:
    return all(run.get(test) is TestOutcome.PASSED for run in runs)


def _same_test(candidate: str, test: str) -> bool:
    """Two ids of one parametrized test: the same function, other parameters."""
    return "[" in test and candidate.split("[", 1)[0] == test.split("[", 1)[0]
