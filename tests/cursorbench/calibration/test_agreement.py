"""The labelled set through the real runner (`cursorbench.calibration.agreement`): each
round's run is the labelled split's sample of its items' evals, answered by the scripted
trajectories; on a small sample over HTTP, each eval's grader agrees with the reader's
verdicts (every disagreement a known, explained one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cursorbench.calibration.agreement import measure, round_spec
from cursorbench.config import OpenAIModel, SqlStoreSpec
from evals import EVALS
from evals.labelled import SEED, items
from evals.labelled.agreement import MODEL, Verdict, report, rounds


def test_a_round_runs_its_items_evals_on_the_labelled_split(tmp_path: Path) -> None:
    batch = rounds(list(items(per_eval=1)))[0]
    spec = round_spec(batch, 2, "http://127.0.0.1:9/v1", tmp_path, per_eval=1, concurrency=3)
    assert spec.evals == sorted({one.scenario.eval for one in batch})
    assert (spec.eval_split, spec.eval_seed, spec.eval_sample) == ("generated", SEED, 1)
    assert spec.out == tmp_path / "round-2"
    assert isinstance(spec.model, OpenAIModel) and spec.model.name == MODEL
    assert spec.model.max_retries == 1 and spec.model.retry_backoff_s == 0.0
    assert spec.executor.concurrency == 3
    assert isinstance(spec.store, SqlStoreSpec)
    assert spec.store.url == f"sqlite:///{tmp_path / 'labelled.sqlite'}"  # one for every round


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
