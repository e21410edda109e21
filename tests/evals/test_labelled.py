"""The labelled set (evals.labelled): at least 200 trajectories over the five evals, every
category, kept apart from the scripts the graders were tuned on; a verdict is the grader's
reading of an attempt, set against the reader's.
The sample's run is tests/cursorbench/calibration/test_agreement.py; the whole set is a
benchmark (`python -m cursorbench.calibration.agreement`, benchmarks/RESULTS.md)."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

from evals import EVALS
from evals.generated import SEED as TUNED_SEED
from evals.labelled import ACCEPT, CATEGORIES, SEED, items
from evals.labelled.agreement import report, rounds, verdicts_of
from harness.results import AttemptResult, Score, Status

T0 = datetime(2026, 1, 1, tzinfo=UTC)


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


def test_a_verdict_is_the_graders_reading_of_an_attempt_against_the_readers() -> None:
    """`verdicts_of`: the grader accepts a resolved attempt scoring >= ACCEPT, and says why
    it does not otherwise (a failure, hidden tests that fail)."""
    chosen = rounds(list(items(per_eval=1)))[0][:3]  # three scenarios, one item each
    scores = [ACCEPT, 0.9, 0.0]
    resolved = [True, False, True]
    results = [
        AttemptResult(
            task_id=one.scenario.id,
            epoch=0,
            status=Status.RESOLVED if done else Status.FAILED,
            scores={one.scenario.eval: Score(value=value, reasons=["why"])},
            started_at=T0,
            finished_at=T0,
        )
        for one, value, done in zip(chosen, scores, resolved, strict=True)
    ]
    verdicts = verdicts_of(chosen, results)
    assert [v.graded for v in verdicts] == [True, False, False]
    assert [v.label for v in verdicts] == [one.accept for one in chosen]
    assert verdicts[1].grader == ["why", "not resolved: the hidden tests fail"]
    assert all(v.agrees == (v.label == v.graded) for v in verdicts)
    assert "| all | 3 |" in report(verdicts)
