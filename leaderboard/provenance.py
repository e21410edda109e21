"""Whether two stored runs are fit to gate on where they came from, before any statistics.

Refused (`provenance_refusal` gives the one line why):

- a run imported unverified (`runs import --unverified`: the `harness.results.UNVERIFIED`
  warning): its verdicts were never replayed, so they may have been edited by hand;
- two runs that ran different task contents under the same task ids (the digests in their
  configs differ): their verdicts are not about the same tasks;
- a run whose recorded task digests differ from this machine's tasks of the same ids
  (`current`, given by the caller that can load tasks: `cursorbench gate`): the tasks were
  edited since, or before, the run. Ids this machine does not know are not compared.

Runs recorded by this machine's runner straight into the store are not marked and pass the
first check: the store trusts its own writers.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from harness.results import verified

SHOWN = 3  # tasks named in a refusal


def task_digests(config: Any) -> dict[str, str]:
    """A stored run's task id -> digest from its config ({} when it records none)."""
    tasks = config.get("tasks") if isinstance(config, dict) else None
    if not isinstance(tasks, dict):
        return {}
    return {str(task): str(digest) for task, digest in tasks.items()}


def _named(tasks: list[str]) -> str:
    more = f" and {len(tasks) - SHOWN} more" if len(tasks) > SHOWN else ""
    return ", ".join(tasks[:SHOWN]) + more


def provenance_refusal(
    runs: Mapping[str, Any], current: Mapping[str, Collection[str]] | None = None
) -> str | None:
    """Why runs (role -> a stored run with `id`, `config`, `warnings`) may not be gated
    together, or None when nothing is wrong with where they came from."""
    for role, run in runs.items():
        if not verified(run.warnings):
            return (
                f"the {role} run {run.id} was imported unverified (runs import --unverified): "
                "its verdicts were never replayed; import its folder verified to gate it"
            )
    digests = {role: task_digests(run.config) for role, run in runs.items()}
    if len(digests) == 2:
        first, second = digests.values()
        differ = sorted(t for t in set(first) & set(second) if first[t] != second[t])
        if differ:
            return (
                f"the runs ran different contents under the same task ids ({_named(differ)}): "
                "gate runs of the same tasks"
            )
    if current is None:
        return None
    for role, tasks in digests.items():
        changed = sorted(t for t, d in tasks.items() if t in current and d not in current[t])
        if changed:
            return (
                f"the {role}'s tasks differ from this machine's tasks of the same ids "
                f"({_named(changed)}): edited since or before the run; gate runs of the "
                "current tasks"
            )
    return None
