"""The run plan: one frozen value that crosses to workers as it is."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from harness.model.pricing import Price
from harness.run.plan import ModelEndpoint, RunConfig, RunPlan, SandboxPlan


def make_plan(**changes: object) -> RunPlan:
    values: dict[str, object] = {
        "config": RunConfig(
            model="m",
            base_url="http://127.0.0.1:1/v1",
            endpoint_label="external",
            suite_version="2025.03",
            tasks={"a": "d1", "b": "d2"},
            epochs=3,
            sandbox="bubblewrap",
        ),
        "endpoint": ModelEndpoint(
            base_url="http://127.0.0.1:1/v1",
            api_key="sk-test",
            price=Price(input=1.0, output=2.0),
            request_timeout_s=30,
            max_connections=4,
        ),
        "sandbox": SandboxPlan(hidden=(Path("/secret"),), max_commands=2),
        "work_dir": Path("/tmp/attempts"),
    }
    return RunPlan.model_validate(values | changes)


def fields(model: type[BaseModel]) -> list[str]:
    """Every field name of the model and of the models it holds, as dotted paths."""
    names = []
    for name, info in model.model_fields.items():
        inner = info.annotation
        if isinstance(inner, type) and issubclass(inner, BaseModel):
            names += [f"{name}.{sub}" for sub in fields(inner)]
        else:
            names.append(name)
    return names


def test_a_plan_is_frozen_and_refuses_unknown_settings() -> None:
    plan = make_plan()
    with pytest.raises(ValidationError):
        plan.retry_errors = True
    with pytest.raises(ValidationError, match="keep_workspace"):
        make_plan(keep_workspace=True)


def test_each_setting_lives_once() -> None:
    leaves = [name.rsplit(".", 1)[-1] for name in fields(RunPlan)]
    assert [name for name in fields(RunPlan) if name.endswith("keep_workspaces")] == [
        "sandbox.keep_workspaces"
    ]
    repeated = {leaf for leaf in leaves if leaves.count(leaf) > 1}
    assert repeated == {"base_url"}  # the config's is recorded, the endpoint's is asked


def test_a_plan_crosses_to_a_worker_unchanged() -> None:
    plan = make_plan(task_categories={"a": "bugfix", "b": None}, warnings=("w",))
    assert pickle.loads(pickle.dumps(plan)) == plan
    assert RunPlan.model_validate_json(plan.model_dump_json()) == plan
    assert plan.config.planned == 6


def test_a_worker_rebuilds_its_parts_only_when_endpoint_or_sandbox_change() -> None:
    plan = make_plan()
    same = make_plan(retry_errors=True, warnings=("w",), work_dir=Path("/elsewhere"))
    assert same.worker_key() == plan.worker_key()
    assert make_plan(sandbox=SandboxPlan()).worker_key() != plan.worker_key()
    client = plan.model_client()
    assert (client.name, client.base_url) == ("m", "http://127.0.0.1:1/v1")


def test_sandbox_settings_come_from_the_plan() -> None:
    sandbox = SandboxPlan(hidden=(Path("/a"),), keep_workspaces=True)
    settings = sandbox.settings()
    assert settings.hidden == (Path("/a"),) and settings.keep_files is True
    assert sandbox.settings(hidden=()).hidden == ()
