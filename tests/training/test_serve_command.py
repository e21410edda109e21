"""Any server command behind the gate: the template, readiness, stopping, failures; a
Hugging Face-layout checkpoint served by the project's own server as that command (it
answers with the tool call the model learned), and gated through `--serve-command`."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import openai
import pytest
from openai.types.chat import (
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionMessageParam,
)

from leaderboard.gate import GateRules
from training.checkpoint import load_model
from training.gate import CheckpointGate, GateConfig, GateConfigError
from training.hf_llama import llama_from_transformer, save_llama
from training.serve import TOKENIZER_FILE
from training.serve_command import CommandServer, ServeCommandError, render

from .conftest import ASKED, READ_FILE_TOOL

ROOT = Path(__file__).resolve().parents[2]
PYTHON = shlex.quote(sys.executable)
OWN_SERVER = f"{PYTHON} -m training.serve {{path}} --port {{port}} --model-name {{model}}"


def hf_copy(checkpoint: Path, folder: Path) -> Path:
    """The project checkpoint's model in the Hugging Face layout, its tokenizer beside it."""
    save_llama(llama_from_transformer(load_model(checkpoint)), folder)
    shutil.copy(checkpoint / TOKENIZER_FILE, folder / TOKENIZER_FILE)
    return folder


def test_the_template_is_split_then_filled_in() -> None:
    values = {"path": "/ckpt/with space", "port": "123", "model": "m", "host": "h"}
    argv = render("vllm serve {path} --port {port} --served-model-name '{model}'", values)
    assert argv == [
        "vllm",
        "serve",
        "/ckpt/with space",
        "--port",
        "123",
        "--served-model-name",
        "m",
    ]
    with pytest.raises(ServeCommandError, match=r"needs both \{path\} and \{port\}"):
        render("vllm serve {path}", values)
    with pytest.raises(ServeCommandError, match="bad field 'gpu'"):
        render("serve {path} {port} {gpu}", values)
    with pytest.raises(ServeCommandError, match="serve command: No closing quotation"):
        render("serve '{path} {port}", values)


def test_an_hf_checkpoint_served_by_command_answers_then_stops(
    checkpoints: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    folder = hf_copy(checkpoints["trained"], tmp_path / "hf")
    server = CommandServer(OWN_SERVER, folder, "toy-hf", tmp_path / "serve.log")
    with server:
        client = openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0)
        reply = client.chat.completions.create(
            model="toy-hf",
            messages=cast(list[ChatCompletionMessageParam], ASKED),
            tools=[cast(ChatCompletionFunctionToolParam, READ_FILE_TOOL)],
            temperature=0,
        )
        assert server.process is not None and server.process.poll() is None
    # the converted checkpoint computes what the trained one does: the memorised tool call
    [call] = reply.choices[0].message.tool_calls or []
    assert isinstance(call, ChatCompletionMessageFunctionToolCall)
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "read_file",
        {"path": "a.py"},
    )
    assert server.process.poll() is not None  # stopped when the block ended
    assert "serving toy-hf" in (tmp_path / "serve.log").read_text()


def test_without_model_field_the_listed_name_is_used(
    checkpoints: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    command = f"{PYTHON} -m training.serve {{path}} --port {{port}}"
    with CommandServer(command, checkpoints["fresh"], "ignored", tmp_path / "log") as server:
        assert server.model == checkpoints["fresh"].name


def test_a_command_that_exits_or_never_serves_is_reported(tmp_path: Path) -> None:
    dies = f"{PYTHON} -c 'import sys; print(\"no GPU here\"); sys.exit(3)' {{path}} {{port}}"
    died = r"exited with status 3 before serving: no GPU"
    with (
        pytest.raises(ServeCommandError, match=died),
        CommandServer(dies, tmp_path, "m", tmp_path / "log"),
    ):
        pass
    silent = f"{PYTHON} -c 'import time; time.sleep(60)' {{path}} {{port}}"
    server = CommandServer(silent, tmp_path, "m", tmp_path / "log2", ready_timeout_s=1.0)
    with pytest.raises(ServeCommandError, match="not ready after 1s"), server:
        pass
    assert server.process is not None and server.process.poll() is not None  # stopped anyway
    missing = CommandServer("/nonexistent/vllm {path} {port}", tmp_path, "m", tmp_path / "log3")
    with pytest.raises(ServeCommandError, match="/nonexistent/vllm"), missing:
        pass


@pytest.mark.slow
def test_the_gate_serves_each_checkpoint_with_the_command(
    checkpoints: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CURSORBENCH_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(ROOT)
    job = tmp_path / "job"
    job.mkdir()
    shutil.copytree(checkpoints["fresh"], job / checkpoints["fresh"].name)  # project layout
    hf_copy(checkpoints["trained"], job / "checkpoint-200")  # Hugging Face layout
    db = f"sqlite:///{tmp_path / 'lb.sqlite'}"
    command = OWN_SERVER + " --max-tokens {max_tokens} --context-length 4096"
    config = GateConfig(
        tasks=["textkit-slugify"],
        max_tokens=16,
        rules=GateRules(on_inconclusive="pass"),
        serve_command=command,
    )
    lines: list[str] = []
    with CheckpointGate(config, "hf-run", db, tmp_path / "gate", log=lines.append) as gate:
        verdicts = gate.gate_folder(job)
    assert [(v.step, v.decision, v.promoted) for v in verdicts] == [
        (0, "baseline", True),
        (200, "fail", False),  # neither toy checkpoint resolves anything: nothing judged
    ]
    assert sum("with " + sys.executable in line for line in lines) == 2
    assert (tmp_path / "gate" / "serve-step-00000200.log").is_file()
    # the command line: everything recorded, so it reads back
    watched = subprocess.run(
        [sys.executable, "-m", "training.gate", "watch", str(job), "--db", db,
         "--training-run", "hf-run", "--runs-dir", str(tmp_path / "gate"), "--once",
         "--tasks", "textkit-slugify", "--serve-command", command],
        cwd=ROOT, capture_output=True, text=True, check=False,
        env=os.environ | {"CURSORBENCH_HOME": str(tmp_path / "home")},
    )  # fmt: skip
    assert watched.returncode == 0, watched.stderr
    assert watched.stdout.count("(recorded earlier)") == 2
    assert "best checkpoint: step 0 (" in watched.stdout


def test_a_gate_whose_command_cannot_serve_says_so(
    checkpoints: dict[str, Any], tmp_path: Path
) -> None:
    config = GateConfig(tasks=["textkit-slugify"], serve_command="true {path} {port}")
    folder = tmp_path / "job"
    shutil.copytree(checkpoints["fresh"], folder / checkpoints["fresh"].name)
    db = f"sqlite:///{tmp_path / 'lb.sqlite'}"
    refused = "cannot serve step 0: serve command exited"
    gate = CheckpointGate(config, "r", db, tmp_path / "gate", log=lambda _: None)
    with gate, pytest.raises(GateConfigError, match=refused):
        gate.gate_folder(folder)
