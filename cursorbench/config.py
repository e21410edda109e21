"""The run config: one typed description of a run, from a YAML file, flags or Python.

`RunSpec` is what a user asks for: which tasks, how many epochs, where the
run folder goes, and four pluggable parts, each a `kind:` plus its settings:

- `model`: `reference` (the embedded reference solver), `openai` (any
  OpenAI-compatible endpoint) or `replay` (a finished run's recorded replies);
- `sandbox`: a backend by name (`auto`, `bubblewrap`, `subprocess`, ...);
- `executor`: `local` (threads) or `ray` (a Ray cluster);
- `store`: `sql` (any SQLAlchemy URL) or `none`.

Every default lives here, once. `cursorbench run --config run.yaml` loads a
file (`load_spec`); flags override it (`spec_from_options`); the library
entry point `cursorbench.api.run` takes the object itself. The `run` command's
flags are generated from these fields (`run_flags`: name, type, help and
default). A config that does not fit raises `ConfigProblems`, every problem a
line naming the flag, or the file and the key, it came from; a misspelt key
says which was meant. What is measured (and hashed for resume) is
`harness.run.runner.RunConfig`, derived from this; everything else here is how.
"""

from __future__ import annotations

import os
import re
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.fields import FieldInfo

from cursorbench.problems import models_of, unknown_key_problem, unknown_keys
from harness.errors import ConfigError
from harness.model.defaults import DEFAULT_REQUEST_TIMEOUT_S

# The embedded reference solver's model name; defined here, not in `cursorbench.tasks.reference`
# (which imports it), so that reading a config (and `cursorbench --help`) does not import the
# solver and the task builder.
REFERENCE_SOLVER = "reference-solver"


class Part(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _not_empty_path(value: object) -> object:
    if value == "":
        raise ValueError("an empty path")
    return value


class RequestSettings(Part):
    """How model requests are made; shared by every model kind."""

    temperature: float | None = Field(
        default=None, ge=0, allow_inf_nan=False, description="Sent to the endpoint when given."
    )
    max_retries: int = Field(
        default=4, ge=0, description="Retries per model call on 429/5xx/timeouts/junk replies."
    )
    retry_backoff_s: float = Field(
        default=1.0, ge=0, allow_inf_nan=False, description="First retry wait in seconds (doubles)."
    )
    request_timeout_s: float = Field(
        default=DEFAULT_REQUEST_TIMEOUT_S,
        gt=0,
        allow_inf_nan=False,
        description="Seconds one model request may take before it is retried.",
    )
    max_connections: int | None = Field(
        default=None, ge=1, description="Model requests in flight [default: the concurrency]."
    )
    prices: Path | None = Field(default=None, description="A YAML price table to add.")
    price_input: float | None = Field(
        default=None, ge=0, allow_inf_nan=False, description="$ per million input tokens."
    )
    price_output: float | None = Field(
        default=None, ge=0, allow_inf_nan=False, description="$ per million output tokens."
    )

    @field_validator("prices", mode="before")
    @classmethod
    def _prices_path(cls, value: object) -> object:
        return _not_empty_path(value)


class ReferenceModel(RequestSettings):
    """The embedded reference solver, served on loopback: proves the path, not a model."""

    kind: Literal["reference"] = "reference"
    name: str = Field(default=REFERENCE_SOLVER, description="Always 'reference-solver'.")


class OpenAIModel(RequestSettings):
    """Any OpenAI-compatible chat-completions endpoint with tool calling."""

    kind: Literal["openai"] = "openai"
    base_url: str = Field(
        description="An OpenAI-compatible endpoint, e.g. https://api.openai.com/v1; without "
        "one the reference solver runs."
    )
    name: str = Field(description="The model name sent to the endpoint.")
    api_key: str | None = Field(
        default=None, description="The API key [default: env OPENAI_API_KEY].", repr=False
    )

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        parts = re.match(r"^(https?)://([^/:]+)", value)
        if parts is None:
            raise ValueError(f"{value!r} is not an http:// or https:// URL")
        return value


class ReplayModel(RequestSettings):
    """A finished run's recorded replies, served back turn by turn over HTTP."""

    kind: Literal["replay"] = "replay"
    run_dir: Path = Field(
        description="A finished run's folder whose recorded replies are served (offline "
        "re-scoring)."
    )

    @field_validator("run_dir", mode="before")
    @classmethod
    def _run_dir_path(cls, value: object) -> object:
        return _not_empty_path(value)


ModelSpec = Annotated[ReferenceModel | OpenAIModel | ReplayModel, Field(discriminator="kind")]


class SandboxSpec(Part):
    """Where agent commands and grading run."""

    kind: str = Field(
        default="auto",
        description="A backend by name: auto (bubblewrap if it works), bubblewrap, subprocess, "
        "or any other registered backend.",
    )
    max_commands: int | None = Field(
        default=None, ge=1, description="Sandbox commands and test runs at once [default: CPUs]."
    )
    keep_workspaces: bool = Field(
        default=False, description="Keep each attempt's scratch folder (debugging)."
    )


class LocalExecutorSpec(Part):
    """Attempts in threads of this process."""

    kind: Literal["local"] = "local"
    concurrency: int = Field(default=4, ge=1, description="Attempts in flight.")


class RayExecutorSpec(Part):
    """Attempts as Ray tasks on a cluster; this process stays the only writer of results."""

    kind: Literal["ray"] = "ray"
    concurrency: int = Field(default=4, ge=1, description="Attempts in flight.")
    address: str | None = Field(
        default=None,
        description="A Ray cluster to join (e.g. ray://head:10001 or auto); none starts a "
        "local cluster.",
    )
    num_cpus: int | None = Field(
        default=None, ge=1, description="CPUs of a local cluster [default: this machine's]."
    )
    cpus_per_attempt: float = Field(
        default=1.0, gt=0, description="CPUs one attempt reserves on a worker."
    )
    object_store_mb: int = Field(
        default=128, ge=64, description="Object store memory of a local cluster, in MiB."
    )
    max_task_retries: int = Field(
        default=3, ge=0, description="Reruns of an attempt whose worker died."
    )


ExecutorSpec = Annotated[LocalExecutorSpec | RayExecutorSpec, Field(discriminator="kind")]


class SqlStoreSpec(Part):
    """Results also go to a SQL database (SQLite or PostgreSQL)."""

    kind: Literal["sql"] = "sql"
    url: str | None = Field(
        default=None,
        description="SQLAlchemy URL [default: env CURSORBENCH_DB, else "
        "~/.local/share/cursorbench/leaderboard.sqlite].",
    )

    def resolved_url(self) -> str:
        if self.url:
            return self.url
        default = Path.home() / ".local" / "share" / "cursorbench" / "leaderboard.sqlite"
        return os.environ.get("CURSORBENCH_DB", f"sqlite:///{default}")


class NoStoreSpec(Part):
    """Results go to the run folder only."""

    kind: Literal["none"] = "none"


StoreSpec = Annotated[SqlStoreSpec | NoStoreSpec, Field(discriminator="kind")]


class RunSpec(Part):
    """A whole run: what to score, how, and where results go."""

    tasks: list[str] = Field(
        default_factory=list,
        description="Task ids or globs from the bundled suite, or task files/folders "
        "[default: the whole bundled suite; with a replay, the recorded run's tasks].",
    )
    epochs: int | None = Field(
        default=None,
        ge=1,
        description="Attempts per task [default: 1; with a replay, the recorded run's].",
    )
    out: Path | None = Field(
        default=None, description="The run folder; running again with it resumes [runs/MODEL]."
    )
    retry_errors: bool = Field(
        default=False, description="On resume, run again the attempts that ended in error."
    )
    atif: bool = Field(
        default=False,
        description="Also write each attempt's trajectory in ATIF (Harbor's Agent Trajectory "
        "Interchange Format) next to it: trajectories/TASK__EPOCH.atif.json.",
    )
    evals: list[str] = Field(
        default_factory=list,
        description="Behaviour evals whose scenarios run as tasks: intent, "
        "instruction_following, eager_editing, code_quality, interruption, or 'all'; with "
        "tasks, both run.",
    )
    eval_split: Literal["all", "curated", "generated"] = Field(
        default="all",
        description="Which eval scenarios run: the curated ones (evals/scenarios), the "
        "generated held-out split (evals.generated, over real package codebases), or all.",
    )
    eval_seed: int | None = Field(
        default=None, description="The generated split's seed [default: evals.generated.SEED]."
    )
    eval_sample: int | None = Field(
        default=None,
        ge=1,
        description="At most this many generated scenarios per eval, spread over its kinds.",
    )
    judge_base_url: str | None = Field(
        default=None,
        description="An OpenAI-compatible endpoint whose model judges every eval attempt "
        "after the run (evals.judge); judged scores go to judged.jsonl, apart from the "
        "programmatic ones.",
    )
    judge_model: str | None = Field(
        default=None, description="The judge's model name (needed with judge_base_url)."
    )
    judge_votes: int = Field(
        default=3, ge=1, description="Judges per attempt; a rubric question is kept by majority."
    )
    judge_seed: int = Field(
        default=0, description="The first judge's seed (the others count up from it)."
    )
    model: ModelSpec = Field(default_factory=ReferenceModel, description="Who answers.")
    sandbox: SandboxSpec = Field(default_factory=SandboxSpec, description="Where commands run.")
    executor: ExecutorSpec = Field(
        default_factory=LocalExecutorSpec, description="How attempts are spread."
    )
    store: StoreSpec = Field(default_factory=SqlStoreSpec, description="Where results also go.")

    @field_validator("out", mode="before")
    @classmethod
    def _out_path(cls, value: object) -> object:
        return _not_empty_path(value)

    @model_validator(mode="before")
    @classmethod
    def _infer_kinds(cls, data: Any) -> Any:
        """A model with a base URL is `openai`, one with a run folder `replay`; parts without
        a kind get their default kind."""
        if not isinstance(data, dict):
            return data
        model = data.get("model")
        if isinstance(model, dict) and "kind" not in model:
            if model.get("base_url") is not None:
                model = {**model, "kind": "openai"}
            elif model.get("run_dir") is not None:
                model = {**model, "kind": "replay"}
            else:
                model = {**model, "kind": "reference"}
            data = {**data, "model": model}
        for part, default in (("executor", "local"), ("store", "sql")):
            value = data.get(part)
            if isinstance(value, dict) and "kind" not in value:
                data = {**data, part: {**value, "kind": default}}
        return data

    @field_validator("judge_base_url")
    @classmethod
    def _judge_url(cls, value: str | None) -> str | None:
        if value is not None and re.match(r"^https?://[^/:]+", value) is None:
            raise ValueError(f"{value!r} is not an http:// or https:// URL")
        return value

    @model_validator(mode="after")
    def _judge_complete(self) -> RunSpec:
        if self.judge_base_url is not None and not self.judge_model:
            raise ValueError("judge_base_url (--judge-base-url) needs judge_model (--judge-model)")
        if self.judge_model is not None and self.judge_base_url is None:
            raise ValueError("judge_model (--judge-model) needs judge_base_url (--judge-base-url)")
        if self.judge_base_url is not None and not self.evals:
            raise ValueError(
                "judge_base_url (--judge-base-url) judges eval attempts: give evals too"
            )
        return self

    def model_name(self) -> str | None:
        """The model's name; for a replay, None until the recording is read."""
        return getattr(self.model, "name", None)

    def out_dir(self, model_name: str) -> Path:
        if self.out is not None:
            return self.out
        suffix = "-replay" if isinstance(self.model, ReplayModel) else ""
        return Path("runs") / (re.sub(r"[^A-Za-z0-9._-]+", "_", model_name) + suffix)


# --- flags ---------------------------------------------------------------------------------
# `cursorbench run`'s flags are generated from the fields below: each flag's value type,
# help and default come from the field it sets. What cannot be derived is written here once:
# which field of a part a flag sets and under what name. Every top-level field that is not a
# part is a flag of its own name, and so is every request setting of the model (`_s` dropped).

PART_FLAGS: dict[str, tuple[str, str]] = {
    "base_url": ("model", "base_url"),
    "model": ("model", "name"),
    "api_key": ("model", "api_key"),
    "replay": ("model", "run_dir"),
    "sandbox": ("sandbox", "kind"),
    "max_sandbox_commands": ("sandbox", "max_commands"),
    "keep_workspaces": ("sandbox", "keep_workspaces"),
    "executor": ("executor", "kind"),
    "concurrency": ("executor", "concurrency"),
    "ray_address": ("executor", "address"),
    "db": ("store", "url"),
}
KIND_HELP: dict[tuple[str, ...], str] = {
    ("executor", "kind"): "local (threads) or ray (a Ray cluster) [default: local]."
}
COMMA_SEPARATED = {"evals"}  # one flag, `--evals a,b`; other lists repeat the flag
PARTS = ("model", "sandbox", "executor", "store")
KIND_FIELDS = {"model": ("reference", "openai", "replay"), "executor": ("local", "ray")}


@dataclass(frozen=True)
class Flag:
    """One `cursorbench run` option: `--name` sets the `RunSpec` field at `path`."""

    name: str
    path: tuple[str, ...]
    value_type: Any  # what the command line gives; paths stay text, validated by the field
    help: str

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")


def _flag_paths() -> dict[str, tuple[str, ...]]:
    paths: dict[str, tuple[str, ...]] = {
        name: (name,) for name in RunSpec.model_fields if name not in PARTS
    }
    for name in RequestSettings.model_fields:
        paths[name.removesuffix("_s")] = ("model", name)
    return paths | PART_FLAGS


FLAG_PATHS = _flag_paths()


def run_flags() -> list[Flag]:
    """Every flag of `cursorbench run` that sets a `RunSpec` field, in the fields' order."""
    flags = []
    for name, path in FLAG_PATHS.items():
        info = _field(path)
        value_type = str if name in COMMA_SEPARATED else _value_type(info.annotation)
        text = KIND_HELP.get(path) or field_help(*path)
        flags.append(Flag(name, path, value_type, text))
    order = [*RunSpec.model_fields]  # by part; a part's own flags before the request settings
    return sorted(flags, key=lambda flag: (order.index(flag.path[0]), flag.name not in PART_FLAGS))


def _field(path: tuple[str, ...]) -> FieldInfo:
    """The field at `path`; a part's field from the last of its kinds that has it (the
    reference model's `name` is fixed; the endpoint's is what a flag sets)."""
    if len(path) == 1:
        return RunSpec.model_fields[path[0]]
    kinds = models_of(RunSpec.model_fields[path[0]].annotation)
    return [kind for kind in kinds if path[1] in kind.model_fields][-1].model_fields[path[1]]


def _value_type(annotation: Any) -> Any:
    """The type a flag's text becomes: the field's type without None; a path or a kind's
    literal stays text (the field turns it into its value and names a bad one)."""
    args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    value = args[0] if typing.get_origin(annotation) in (typing.Union, types.UnionType) else None
    value = annotation if value is None else value
    if value is Path or typing.get_origin(value) is Literal:
        return str
    return value


def field_help(*path: str) -> str:
    """A field's description, with its default where it is not in the text already."""
    info = _field(path)
    text = info.description or ""
    if not info.is_required() and info.default_factory is None:
        default = info.default
        if default not in (None, False) and "[default" not in text:
            text += f" [default: {default}]"
    return text


# --- loading -------------------------------------------------------------------------------


class ConfigProblems(ConfigError):
    """Every problem of one config, not just the first; `problems` has one line each (the
    CLI prints them so), `str()` joins them into one line."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def load_spec_data(path: Path) -> dict[str, Any]:
    """The mapping a YAML (or JSON) config file holds; a bad file is a one-line `ConfigError`."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"{path}: cannot read ({error.strerror})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        first = str(error).replace("\n", " ")[:200]
        raise ConfigError(f"{path}: not valid YAML ({first})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of run settings at the top level")
    return data


def load_spec(path: Path) -> RunSpec:
    """A run config from a YAML file."""
    return validate_spec(load_spec_data(path), source=path)


def spec_from_options(config: Path | None = None, **options: Any) -> RunSpec:
    """A run config from a file (if any) with flags laid over it; options that are None
    (not given) leave the file's value or the default."""
    data = load_spec_data(config) if config is not None else {}
    from_flags: dict[tuple[str, ...], str] = {}
    for flag, value in options.items():
        if flag not in FLAG_PATHS:
            raise TypeError(f"unknown run option {flag!r}")
        if value is None or (flag == "tasks" and not value):
            continue
        path = FLAG_PATHS[flag]
        data = _set(data, path, value)
        from_flags[path] = flag
    model = data.get("model")
    if isinstance(model, dict):  # a flag naming another kind of model switches to it
        chosen: type[BaseModel] | None = None
        if ("model", "base_url") in from_flags:
            chosen, model = OpenAIModel, {**model, "kind": "openai"}
        elif ("model", "run_dir") in from_flags:
            chosen, model = ReplayModel, {**model, "kind": "replay"}
        if chosen is not None:  # the file's settings for its other kind do not apply
            flagged = {path[1] for path in from_flags if path[0] == "model"}
            model = {k: v for k, v in model.items() if k in chosen.model_fields or k in flagged}
        data["model"] = model
    executor = data.get("executor")
    if isinstance(executor, dict) and ("executor", "kind") in from_flags:
        kinds: dict[str, type[BaseModel]] = {"local": LocalExecutorSpec, "ray": RayExecutorSpec}
        chosen = kinds.get(executor["kind"])
        if chosen is not None:  # settings of the file's other kind do not apply
            data["executor"] = {k: v for k, v in executor.items() if k in chosen.model_fields}
    return validate_spec(data, source=config, from_flags=from_flags)


def _set(data: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    data = dict(data)
    if len(path) == 1:
        data[path[0]] = value
        return data
    inner = data.get(path[0])
    data[path[0]] = _set(inner if isinstance(inner, dict) else {}, path[1:], value)
    return data


def validate_spec(
    data: dict[str, Any],
    *,
    source: Path | None = None,
    from_flags: dict[tuple[str, ...], str] | None = None,
) -> RunSpec:
    """`RunSpec` from plain data. Every problem is found (unknown keys, kinds that do not
    combine, values that do not fit) and raised together as `ConfigProblems`, each line
    naming the flag it came from, or the file and the key."""
    from_flags = from_flags or {}
    where = f"{source}: " if source is not None else ""
    unknown = unknown_keys(RunSpec, data)
    problems = [where + unknown_key_problem(RunSpec, path) for path in unknown]
    combinations = _model_combination_problems(data, from_flags, source)
    problems += [where + line for line in combinations]
    try:
        spec = RunSpec.model_validate(data)
    except ValidationError as error:
        for line, location in describe(error, source, from_flags):
            if location in unknown or (combinations and location[0] == "model"):
                continue  # said above
            problems.append(line)
    if problems:
        raise ConfigProblems(problems)
    return spec


def _model_combination_problems(
    data: dict[str, Any], from_flags: dict[tuple[str, ...], str], source: Path | None
) -> list[str]:
    model = data.get("model")
    if not isinstance(model, dict):
        return []

    flags = {path: flag for flag, path in FLAG_PATHS.items()}

    def named(field: str) -> str:
        """The flag where the CLI gave it (or gave no file), else the config's field."""
        path = ("model", field)
        if path in from_flags or (from_flags and source is None):
            return f"--{flags[path].replace('_', '-')}"
        return f"model.{field}"

    kind = model.get("kind")
    has_url = model.get("base_url") is not None
    has_replay = model.get("run_dir") is not None
    if has_url and has_replay:
        return [f"{named('run_dir')} serves a recorded run; drop {named('base_url')}"]
    reference = kind in (None, "reference") and not has_url and not has_replay
    if reference and model.get("name") not in (None, REFERENCE_SOLVER):
        return [f"{named('name')} needs {named('base_url')} (without it the reference solver runs)"]
    if (kind == "openai" or (kind is None and has_url)) and not model.get("name"):
        return [f"{named('base_url')} needs {named('name')}"]
    if has_replay and model.get("name") is not None:
        return [f"{named('run_dir')} takes the model name from the recording; drop {named('name')}"]
    return []


def describe(
    error: ValidationError, source: Path | None, from_flags: dict[tuple[str, ...], str]
) -> list[tuple[str, tuple[str, ...]]]:
    """One line per problem: the flag it came from, else the file and field. An unknown key
    that another kind of the part has is named as such. Each line comes with the field's
    path (`validate_spec` leaves out those `unknown_keys` has named)."""
    lines: list[tuple[str, tuple[str, ...]]] = []
    for problem in error.errors():
        location = [str(part) for part in problem["loc"]]
        kind = None
        if len(location) > 1 and location[1] in KIND_FIELDS.get(location[0], ()):
            kind = location.pop(1)  # the discriminator's tag pydantic puts into the path
        if len(location) > 1 and location[0] == "store" and location[1] in ("sql", "none"):
            kind = location.pop(1)
        message = problem["msg"].removeprefix("Value error, ")
        if problem["type"] == "extra_forbidden" and kind is not None:
            message = f"not a setting of kind {kind!r}"
        path = tuple(location) or ("",)
        flag = from_flags.get(path)
        if flag is not None:
            lines.append((f"Invalid value for '--{flag.replace('_', '-')}': {message}", path))
            continue
        where = ".".join(location) or "(top level)"
        lines.append((f"{source}: {where}: {message}" if source else f"{where}: {message}", path))
    return lines
