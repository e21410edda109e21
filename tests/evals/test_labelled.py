"""The labelled set (evals.labelled): at least 200 trajectories over the five evals, every
category, kept apart from the scripts the graders were tuned on; and, on a small sample run
through the real runner over HTTP, each eval's grader agrees with the reader's verdicts.
The whole set is a benchmark (`python -m evals.labelled.agreement`, benchmarks/RESULTS.md)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from evals import EVALS
from evals.generated import SEED as TUNED_SEED
from evals.labelled import CATEGORIES, SEED, items
from evals.labelled.agreement import Verdict, measure, report, rounds


def test_the_set_is_large_varied_and_apart() -> None:
    every = items()
    assert len(every) >= 200
    per_eval = Counter(i.scenario.eval for i in every)
    assert all(per_eval[name] >= 40 for name in EVALS), per_eval
    assert set(Counter(i.category for i in every)) == set(CATEGORIES)
    for name in EVALS:
        mine = [i for i in every if i.scenario.eval == name]
        assert {True, False} <= {i.accept for i in mine}, name
        assert {"good", "bad", "style"} <= {i.category for i in mine}, name
    assert SEED != TUNED_SEED
    for one in every:
        assert one.reason.strip() and one.steps
        # none is a script the graders were tuned on
        assert list(one.steps) not in (one.scenario.well, one.scenario.badly), one.id
    assert len({i.id for i in every}) == len(every)
    # a round serves one trajectory per scenario (the scripted agent knows it by its prompt)
    for batch in rounds(list(every)):
        assert len({i.scenario.prompt for i in batch}) == len(batch)


@pytest.mark.slow
def test_the_graders_agree_with_the_labels_on_a_sample(tmp_path: Path) -> None:
    sample = list(items(per_eval=1))
    assert {i.scenario.eval for i in sample} == set(EVALS)
    verdicts = measure(sample, tmp_path, per_eval=1)
    assert len(verdicts) == len(sample)
    # every disagreement is a known one, explained (evals.labelled.KNOWN)
    assert all(v.agrees or v.known for v in verdicts), report(verdicts)
    for name in EVALS:
        mine: list[Verdict] = [v for v in verdicts if v.eval == name]
        assert sum(v.agrees for v in mine) / len(mine) >= 0.8, report(verdicts)
