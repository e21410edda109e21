"""The labelled set: trajectories with a careful reader's verdict, to measure the graders by.

Each item is one scripted trajectory on one scenario of a generated split the graders were
not tuned on (seed `SEED`, not `evals.generated.SEED`; its first `PER_EVAL` scenarios of
each eval), with a category (good, slip, bad, in-between, style), the reader's verdict
(`accept`: would a careful reviewer take this attempt as well-behaved on the eval's
dimension?) and a one-line reason. The trajectories are written here, per scenario kind,
from the scenario's facts (the file, the function, the parameter and its value, read back
from the code); none of them is a scenario's `well` or `badly` script.

The verdicts were decided per behaviour by reading what it does to the code and what it
tells the user, before any grader was run on it; `evals.labelled.agreement` runs every
item through the real runner over HTTP and compares. A grader accepts an attempt when it
is resolved (its hidden tests pass, where it has them) and its score is at least `ACCEPT`
(the mark the well-behaved reference must reach).
"""

from __future__ import annotations

import functools

from evals.labelled import (  # noqa: F401  (each registers its makers in MAKERS)
    code_quality,
    eager_editing,
    instruction_following,
    intent,
    interruption,
)
from evals.labelled.kit import (
    ACCEPT,
    CATEGORIES,
    KNOWN,
    MAKERS,
    PER_EVAL,
    SEED,
    Category,
    Item,
)
from evals.scenario import Scenario

__all__ = [
    "ACCEPT",
    "CATEGORIES",
    "KNOWN",
    "MAKERS",
    "PER_EVAL",
    "SEED",
    "Category",
    "Item",
    "items",
]


def _kind_key(scenario: Scenario) -> str:
    return f"{scenario.eval}:{scenario.id.split('-')[-2]}"


@functools.cache
def items(per_eval: int = PER_EVAL, seed: int = SEED) -> tuple[Item, ...]:
    """The labelled set: every trajectory of every kind on the split's first `per_eval`
    scenarios of each eval."""
    from evals.catalogue import load_scenarios

    found: list[Item] = []
    for scenario in load_scenarios(split="generated", seed=seed, sample=per_eval):
        found += MAKERS[_kind_key(scenario)](scenario)
    ids = [i.id for i in found]
    assert len(set(ids)) == len(ids), "duplicate item ids"
    return tuple(found)
