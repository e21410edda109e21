"""The run folder's seal (`harness.run.seal`): kept by every write of the run folder, and any
record deleted, edited or added by hand since no longer matches it."""

from __future__ import annotations

from pathlib import Path

from harness.results import Status
from harness.run.rundir import ATTEMPTS_FILE, RUN_FILE, RunDir
from harness.run.seal import SEAL_FILE, seal_problems
from tests.harness.run.test_rundir import result, run_info


def problems(folder: Path) -> list[tuple[str, str]]:
    return seal_problems(folder, RUN_FILE, ATTEMPTS_FILE)


def written(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    run_dir = RunDir(folder)
    run_dir.open(run_info())
    for epoch in range(2):
        (folder / "trajectories" / f"a__{epoch}.jsonl").write_text(f"turns of {epoch}\n")
        run_dir.append(
            result("a", epoch).model_copy(update={"trajectory": f"trajectories/a__{epoch}.jsonl"})
        )
    return folder


def test_what_the_runner_writes_matches_its_seal_and_a_rewrite_keeps_it(tmp_path: Path) -> None:
    folder = written(tmp_path)
    assert problems(folder) == []
    run_dir = RunDir(folder)
    run_dir.rewrite([run_dir.finished()["a#0"]])  # an errored attempt dropped to run again
    assert problems(folder) == []
    resumed = RunDir(folder)  # another process resumes and appends
    resumed.append(result("a", 1, Status.FAILED))
    assert problems(folder) == []


def test_deleted_edited_or_added_records_do_not_match(tmp_path: Path) -> None:
    folder = written(tmp_path)
    lines = (folder / ATTEMPTS_FILE).read_text().splitlines(keepends=True)
    (folder / ATTEMPTS_FILE).write_text(lines[0])
    assert problems(folder) == [("a#1", "sealed attempt missing from the attempts file")]
    (folder / ATTEMPTS_FILE).write_text(lines[0].replace('"resolved"', '"failed"') + lines[1])
    assert problems(folder) == [("a#0", "attempt record edited since it was sealed")]
    (folder / ATTEMPTS_FILE).write_text("".join(lines))
    (folder / "trajectories" / "a__1.jsonl").write_text("other turns\n")
    assert problems(folder) == [("a#1", "trajectory edited or removed since it was sealed")]
    (folder / "trajectories" / "a__1.jsonl").write_text("turns of 1\n")
    (folder / RUN_FILE).write_text((folder / RUN_FILE).read_text().replace('"m"', '"n"'))
    assert problems(folder) == [("seal", f"{RUN_FILE} is not the one the runner wrote")]
    (folder / SEAL_FILE).unlink()
    assert problems(folder) == [("seal", f"{SEAL_FILE} missing or unreadable")]
