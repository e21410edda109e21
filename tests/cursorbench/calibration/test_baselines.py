"""The baselines through the real runner (`cursorbench.calibration.baselines`): a baseline's
run is the evals' scenarios answered by its scripted double; on one generated scenario the
null baseline scores 0, resolves nothing, and the command says so (exit 0)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cursorbench.calibration.baselines import baseline_spec, main
from cursorbench.config import OpenAIModel, SqlStoreSpec


def test_a_baselines_run_is_the_evals_scenarios_answered_by_its_double(tmp_path: Path) -> None:
    spec = baseline_spec(
        ["intent"], "http://127.0.0.1:9/v1", "null", tmp_path, 2, "generated", 7, 1
    )
    assert spec.evals == ["intent"] and spec.tasks == []
    assert (spec.eval_split, spec.eval_seed, spec.eval_sample) == ("generated", 7, 1)
    assert isinstance(spec.model, OpenAIModel) and spec.model.name == "null"
    assert spec.model.max_retries == 1 and spec.model.retry_backoff_s == 0.0
    assert spec.executor.concurrency == 2 and spec.out == tmp_path
    assert isinstance(spec.store, SqlStoreSpec)
    assert spec.store.url == f"sqlite:///{tmp_path / 'baselines.sqlite'}"


@pytest.mark.slow
def test_the_null_baseline_scores_zero_on_a_generated_scenario(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--evals", "intent", "--baselines", "null", "--split", "generated", "--sample", "1"]
    assert main([*argv, "--out", str(tmp_path)]) == 0  # every floor held
    [row] = capsys.readouterr().out.splitlines()[1:]
    assert row.split()[:3] == ["null", "intent", "0.000"]
    assert row.split()[-2:] == ["1/1", "0/1"]  # scored, none resolved
