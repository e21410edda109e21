"""The run config: YAML, flags over it, one-line errors; and the library entry point."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from cursorbench import api
from cursorbench.config import (
    FLAG_PATHS,
    ConfigProblems,
    LocalExecutorSpec,
    NoStoreSpec,
    OpenAIModel,
    RayExecutorSpec,
    ReferenceModel,
    ReplayModel,
    RunSpec,
    load_spec,
    run_flags,
    spec_from_options,
)
from harness.errors import ConfigError, CursorBenchError
from harness.model.doubles import DoneOnlyDouble
from harness.results import AttemptResult, RunInfo, Status
from harness.run.summary import RunSummary

RUN_YAML = """\
tasks: [textkit-*]
epochs: 2
out: runs/example
model:
  kind: openai
  base_url: http://127.0.0.1:8000/v1
  name: my-model
  max_retries: 2
sandbox: {kind: subprocess}
executor: {kind: ray, concurrency: 2, num_cpus: 2}
store: {kind: none}
"""


def test_a_yaml_file_describes_every_part(tmp_path: Path) -> None:
    (tmp_path / "run.yaml").write_text(RUN_YAML)
    spec = load_spec(tmp_path / "run.yaml")
    assert spec.tasks == ["textkit-*"] and spec.epochs == 2
    assert isinstance(spec.model, OpenAIModel) and spec.model.name == "my-model"
    assert spec.model.max_retries == 2 and spec.model.request_timeout_s == 300
    assert spec.sandbox.kind == "subprocess"
    assert isinstance(spec.executor, RayExecutorSpec) and spec.executor.num_cpus == 2
    assert isinstance(spec.store, NoStoreSpec)


def test_flags_override_the_file_and_can_switch_kinds(tmp_path: Path) -> None:
    (tmp_path / "run.yaml").write_text(RUN_YAML)
    spec = spec_from_options(
        tmp_path / "run.yaml", epochs=3, executor="local", concurrency=5, max_retries=None
    )
    assert spec.epochs == 3 and spec.model.max_retries == 2  # None leaves the file's value
    assert isinstance(spec.executor, LocalExecutorSpec) and spec.executor.concurrency == 5
    replay = spec_from_options(tmp_path / "run.yaml", replay=tmp_path / "old-run", model=None)
    assert isinstance(replay.model, ReplayModel)


def test_defaults_live_in_the_config() -> None:
    spec = RunSpec()
    assert isinstance(spec.model, ReferenceModel) and spec.model.name == "reference-solver"
    assert isinstance(spec.executor, LocalExecutorSpec) and spec.executor.concurrency == 4
    assert spec.sandbox.kind == "auto" and spec.store.kind == "sql"
    assert spec.out_dir("gpt/4o") == Path("runs/gpt_4o")
    kinds = RunSpec.model_validate({"model": {"base_url": "http://x/v1", "name": "m"}})
    assert isinstance(kinds.model, OpenAIModel)  # a base URL makes it an endpoint


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("epochs: 0\n", "{file}: epochs: Input should be greater than or equal to 1"),
        ("epoch: 3\n", "{file}: unknown key 'epoch' (did you mean 'epochs'?)"),
        ("model: {bse_url: http://x/v1}\n", "{file}: unknown key 'model.bse_url' (did you mean"),
        ("sandbox: {komd: 2}\n", "{file}: unknown key 'sandbox.komd' (known here: keep_work"),
        ("executor: {kind: local, address: x}\n", "{file}: executor.address: not a setting of"),
        ("executor: {kind: slurm}\n", "{file}: executor: Input tag 'slurm' found using 'kind'"),
        ("store: {kind: sql, url: 3}\n", "{file}: store.url: Input should be a valid string"),
        ("[1, 2]\n", "{file}: expected a mapping of run settings at the top level"),
        ("epochs: [unclosed\n", "{file}: not valid YAML"),
    ],
)
def test_a_bad_file_is_one_line_naming_the_file_and_field(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as raised:
        load_spec(path)
    assert str(raised.value).startswith(message.format(file=path))
    assert "\n" not in str(raised.value)


def test_every_problem_of_a_file_is_reported_each_naming_its_key(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(
        "epoch: 3\nmodel: {bas_url: http://x/v1, name: m}\nexecutor: {concurrency: 0}\n"
    )
    with pytest.raises(ConfigProblems) as raised:
        load_spec(path)
    assert raised.value.problems == [
        f"{path}: unknown key 'epoch' (did you mean 'epochs'?)",
        f"{path}: unknown key 'model.bas_url' (did you mean 'model.base_url'?)",
        f"{path}: model.name needs model.base_url (without it the reference solver runs)",
        f"{path}: executor.concurrency: Input should be greater than or equal to 1",
    ]
    assert str(raised.value) == "; ".join(raised.value.problems)  # one line for a library caller


def test_flags_are_generated_from_the_spec_s_fields() -> None:
    flags = {flag.name: flag for flag in run_flags()}
    assert set(flags) == set(FLAG_PATHS)
    assert flags["epochs"].path == ("epochs",) and flags["epochs"].value_type is int
    assert flags["request_timeout"].path == ("model", "request_timeout_s")
    assert flags["request_timeout"].help.endswith("[default: 300.0]")
    assert flags["out"].value_type is str  # a path is checked by the field, not by the parser
    assert flags["tasks"].value_type == list[str] and flags["evals"].value_type is str
    assert flags["concurrency"].help == "Attempts in flight. [default: 4]"
    for flag in flags.values():  # every flag sets a real field and says what it does
        assert flag.help, flag.name
        spec_from_options(**{flag.name: None})


def test_the_config_s_reference_name_is_the_solver_s() -> None:
    from cursorbench.tasks.reference import REFERENCE_SOLVER

    assert ReferenceModel().name == REFERENCE_SOLVER


def test_a_bad_flag_names_the_flag() -> None:
    with pytest.raises(ConfigError, match=r"^Invalid value for '--concurrency': Input should be"):
        spec_from_options(concurrency=0)
    with pytest.raises(CursorBenchError, match="--replay serves a recorded run; drop --base-url"):
        spec_from_options(base_url="http://x/v1", replay=Path("somewhere"))


class ListStore:
    """A result store kept in a list: the `ResultStore` protocol, injected."""

    def __init__(self) -> None:
        self.runs: list[RunInfo] = []
        self.recorded: dict[str, AttemptResult] = {}
        self.finished: RunSummary | None = None

    def start_run(self, run: RunInfo) -> None:
        self.runs.append(run)

    def describe_tasks(self, suite_version: str, categories: dict[str, str | None]) -> None:
        pass

    def record(self, run_id: str, result: AttemptResult) -> None:
        self.recorded.setdefault(result.key, result)  # the protocol's rule: the first stands

    def attempt_keys(self, run_id: str) -> set[str]:
        return set(self.recorded)

    def finish_run(self, run_id: str, summary: RunSummary) -> None:
        self.finished = summary

    def delete_attempts(self, run_id: str, keys: set[str]) -> None:
        for key in keys:
            self.recorded.pop(key, None)

    def close(self) -> None:
        pass


@pytest.mark.slow
def test_the_library_call_takes_plain_data_and_an_injected_store(tmp_path: Path, serve) -> None:
    from harness.run.store import ResultStore
    from leaderboard import SqlStore

    store = ListStore()
    assert isinstance(store, ResultStore) and issubclass(SqlStore, ResultStore)
    config = {
        "tasks": ["textkit-slugify"],
        "out": str(tmp_path / "run"),
        "model": {"base_url": serve(DoneOnlyDouble()), "name": "done-only-double"},
    }
    started = time.monotonic()
    outcome = api.run(config, store=store)
    run_s = time.monotonic() - started
    assert [r.failure.value for r in outcome.results if r.failure] == ["empty_diff"]
    assert list(store.recorded) == ["textkit-slugify#0"] and store.finished is not None
    assert outcome.summary.attempt_time_s is not None
    # the run's wall time is its own, not a figure from elsewhere: within the call's
    assert outcome.summary.attempt_time_s <= outcome.summary.wall_time_s <= run_s
    again = api.run(config, store=store)
    assert again.already_complete and again.run.id == outcome.run.id


def test_the_library_call_takes_an_injected_model(tmp_path: Path) -> None:
    from harness.model.chat import ModelReply

    class SaysDone:
        name = "says-done"

        def complete(self, messages: list, tools: list) -> ModelReply:
            return ModelReply(content="done")

    config = {"tasks": ["textkit-slugify"], "out": str(tmp_path / "run"), "store": {"kind": "none"}}
    outcome = api.run(config, model=SaysDone())
    (result,) = outcome.results
    assert result.status is Status.FAILED and outcome.run.endpoint_label == "injected"
    assert outcome.run.model == "says-done"


def test_library_errors_are_one_line_cursorbench_errors(tmp_path: Path) -> None:
    with pytest.raises(CursorBenchError) as raised:
        api.run({"tasks": ["no-such-task"], "out": str(tmp_path / "run")})
    assert str(raised.value).startswith("no task matches 'no-such-task' (known: ")
    assert not (tmp_path / "run").exists()


def test_the_readme_s_config_example_loads(tmp_path: Path) -> None:
    import re

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    block = re.search(r"```yaml\n# run.yaml\n(.*?)```", readme, re.S)
    assert block is not None
    (tmp_path / "run.yaml").write_text(block.group(1))
    spec = load_spec(tmp_path / "run.yaml")
    assert isinstance(spec.model, OpenAIModel) and spec.executor.concurrency == 8
