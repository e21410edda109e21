"""The `cursorbench` command end to end, as a user runs it, over real HTTP.

Most tests run the command in this process (`tests.cli_runner.cursorbench`: the same entry
point, stdout, stderr and exit status, without a new interpreter's imports). The few that
test what only a real process shows start `python -m cursorbench.cli.app` (`script`) and say why.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from harness.model.doubles import (
    BreakingDouble,
    DoneOnlyDouble,
    FailingDouble,
    IrrelevantEditDouble,
    ScriptedDouble,
)
from harness.model.openai_server import Reply
from tests.cli_runner import cursorbench

CLI = [sys.executable, "-m", "cursorbench.cli.app"]


def script(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The real `cursorbench` script in a process of its own."""
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=300, env=env or os.environ.copy()
    )


def attempt_lines(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "attempts.jsonl").read_text().splitlines()]


def db_rows(url: str) -> list[tuple[str, int]]:
    engine = create_engine(url)
    with engine.connect() as connection:
        rows = connection.execute(text("select task_id, epoch from attempts")).all()
    engine.dispose()
    return sorted((row[0], row[1]) for row in rows)


@pytest.mark.slow
def test_reference_solver_resolves_every_bundled_task(tmp_path: Path) -> None:
    out, db = tmp_path / "run", f"sqlite:///{tmp_path / 'lb.sqlite'}"
    done = cursorbench("run", "--out", str(out), "--db", db)
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["attempts"] == summary["resolved"] >= 6
    assert summary["resolved_rate"] == 1.0 and summary["errors"] == 0
    assert "reference-solver" in done.stdout and "100%" in done.stdout
    lines = attempt_lines(out)
    assert len(lines) == summary["attempts"]
    assert len(list((out / "trajectories").glob("*.jsonl"))) == summary["attempts"]
    assert len(db_rows(db)) == summary["attempts"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "double", [DoneOnlyDouble(), IrrelevantEditDouble(), BreakingDouble()],
    ids=["done-only", "irrelevant-edit", "breaking"],
)  # fmt: skip
def test_the_floor_agents_score_zero_on_a_follow_up_task(
    tmp_path: Path, serve, double: Any
) -> None:
    """A task that starts from earlier turns: the baselines still act (their script
    position ignores the earlier answer) and resolve nothing through the real CLI."""
    out = tmp_path / "run"
    done = cursorbench(
        "run", "--base-url", serve(double), "--model", double.models[0],
        "--tasks", "followup-textkit-unique-slug", "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["attempts"] == 1 and summary["resolved"] == 0 and summary["errors"] == 0
    acted = not isinstance(double, DoneOnlyDouble)  # it changed files: graded, and failed
    assert summary["failures"] == ({"tests_failed": 1} if acted else {"empty_diff": 1})


@pytest.mark.slow
def test_an_endpoint_that_only_says_done_scores_zero(tmp_path: Path, serve) -> None:
    url = serve(DoneOnlyDouble())
    out = tmp_path / "run"
    done = cursorbench(
        "run", "--base-url", url, "--model", "done-only-double",
        "--tasks", "textkit-*", "--tasks", "minicalc-*", "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["attempts"] == 4 and summary["resolved"] == 0
    assert summary["failures"] == {"empty_diff": 4}


@pytest.mark.slow
def test_an_endpoint_answering_500_ends_in_errors_not_failures(tmp_path: Path, serve) -> None:
    url = serve(FailingDouble(500, lists_models=True))  # passes the check, then fails
    out = tmp_path / "run"
    done = cursorbench(
        "run", "--base-url", url, "--model", "failing-double", "--tasks", "textkit-*",
        "--max-retries", "2", "--retry-backoff", "0", "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 3
    assert "Traceback" not in done.stderr + done.stdout
    last = done.stderr.splitlines()[-1]
    assert last.startswith("error: every attempt ended in error, e.g. HTTP 500 after 2 retries")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["errors"] == summary["attempts"] == 2
    assert summary["failed"] == 0 and summary["failures"] == {"model_api_error": 2}
    assert all("HTTP 500 after 2 retries" in line["error"] for line in attempt_lines(out))
    assert all(line["usage"]["retries"] == 2 for line in attempt_lines(out))


def free_port_url() -> str:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/v1"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("responder", "model", "message"),
    [
        (FailingDouble(401), "failing-double", "endpoint {url} rejected the API key (HTTP 401)"),
        (
            FailingDouble(500),
            "failing-double",
            "endpoint {url} answered HTTP 500 to GET /models after 2 retries: "
            "the double always fails",
        ),
        (
            DoneOnlyDouble(),
            "gpt-9",
            "model 'gpt-9' not served by {url}; available: done-only-double",
        ),
        (None, "gpt-9", "cannot reach {url}: connection refused"),
    ],
    ids=["bad-key", "http-500", "unknown-model", "unreachable"],
)
def test_an_unusable_endpoint_is_refused_before_anything_is_stored(
    tmp_path: Path, serve, responder: Any, model: str, message: str
) -> None:
    url = serve(responder) if responder is not None else free_port_url()
    out, db = tmp_path / "run", tmp_path / "lb.sqlite"
    done = cursorbench(
        "run", "--base-url", url, "--model", model, "--tasks", "textkit-slugify",
        "--api-key", "a-key-the-double-refuses",  # given: no key at all reads differently
        "--max-retries", "2", "--retry-backoff", "0", "--out", str(out), "--db", f"sqlite:///{db}",
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == f"error: {message.format(url=url)}\n"
    assert not out.exists() and not db.exists()


class HangingDouble:
    """Lists its model, then never answers a chat completion in time."""

    models = ["hanging-double"]

    def respond(self, request: dict[str, Any]) -> Any:
        time.sleep(5)
        return Reply(content="too late")


@pytest.mark.slow
def test_a_hung_endpoint_ends_attempts_as_model_api_errors_quickly(tmp_path: Path, serve) -> None:
    out = tmp_path / "run"
    done = cursorbench(
        "run", "--base-url", serve(HangingDouble()), "--model", "hanging-double",
        "--tasks", "textkit-slugify", "--request-timeout", "0.5", "--max-retries", "1",
        "--retry-backoff", "0", "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    (line,) = attempt_lines(out)
    assert (line["status"], line["failure"]) == ("error", "model_api_error")
    assert line["error"] == "timeout after 1 retries: no reply within 0.5s"
    assert line["usage"]["retries"] == 1


@pytest.mark.slow
def test_rerunning_resumes_without_repeating(tmp_path: Path, serve) -> None:
    url = serve(DoneOnlyDouble())
    out, db = tmp_path / "run", f"sqlite:///{tmp_path / 'lb.sqlite'}"
    args = ["run", "--base-url", url, "--model", "done-only-double", "--tasks", "textkit-*",
            "--out", str(out), "--db", db]  # fmt: skip
    assert cursorbench(*args).returncode == 0
    first = attempt_lines(out)
    again = cursorbench(*args)
    assert again.returncode == 0
    assert attempt_lines(out) == first
    assert db_rows(db) == [("textkit-case-styles", 0), ("textkit-slugify", 0)]
    assert "textkit-slugify" in again.stdout


@pytest.mark.slow
def test_resuming_with_another_configuration_is_refused(tmp_path: Path, serve) -> None:
    url = serve(DoneOnlyDouble())
    out = tmp_path / "run"
    base = ["run", "--base-url", url, "--model", "done-only-double", "--out", str(out)]
    assert cursorbench(*base, "--tasks", "textkit-slugify").returncode == 0
    refused = cursorbench(*base, "--tasks", "textkit-slugify", "--epochs", "2")
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1
    assert "epochs: 1 -> 2" in refused.stderr
    assert len(attempt_lines(out)) == 1


class SlowDouble(ScriptedDouble):
    """Runs a short command each turn, slowly, so a run can be interrupted midway."""

    def __init__(self, delay: float) -> None:
        super().__init__([Reply(tool_calls=[("run", {"command": "true"})])] * 3)
        self.delay = delay

    def respond(self, request: dict[str, Any]) -> Any:
        time.sleep(self.delay)
        return super().respond(request)


@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_an_interrupted_run_finishes_the_rest_when_started_again(
    tmp_path: Path, serve, how: signal.Signals
) -> None:
    """A real process: it is sent SIGINT or SIGKILL midway (SIGINT leaves by `os._exit`)."""
    url = serve(SlowDouble(delay=0.15))
    out, db = tmp_path / "run", f"sqlite:///{tmp_path / 'lb.sqlite'}"
    # 6 attempts: at most 2 run at once, each >= 0.45 s of model replies, so the signal sent
    # after the third lands with some still to do (the rest of the 9 bundled tasks would
    # only make the second run longer)
    args = ["run", "--base-url", url, "--model", "scripted-double", "--tasks", "textkit-*",
            "--epochs", "3", "--concurrency", "2", "--out", str(out), "--db", db]  # fmt: skip
    process = subprocess.Popen(
        [*CLI, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # as from a terminal: a suite started in the background (nohup, `&`) ignores SIGINT,
        # which its children would inherit, and Python leaves an ignored SIGINT ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        jsonl = out / "attempts.jsonl"
        if jsonl.exists() and len(jsonl.read_text().splitlines()) >= 3:
            break
        time.sleep(0.05)
    process.send_signal(how)
    _, stderr = process.communicate(timeout=60)
    total = json.loads((out / "run.json").read_text())["config"]["epochs"] * len(
        json.loads((out / "run.json").read_text())["config"]["tasks"]
    )
    partial = attempt_lines(out)
    assert 3 <= len(partial) < total, "the interrupt came too late to test anything"
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["planned"], summary["complete"]) == (total, False)
    assert summary["finished"] <= len(partial)  # a kill may land between the two writes
    shown = cursorbench("show", str(out))
    assert f"PARTIAL: {len(partial)} of {total} attempts finished" in shown.stdout
    if how is signal.SIGINT:
        assert process.returncode == 130
        assert b"resume" in stderr and b"Traceback" not in stderr
    finished = cursorbench(*args)
    assert finished.returncode == 0, finished.stderr
    lines = attempt_lines(out)
    keys = [(line["task_id"], line["epoch"]) for line in lines]
    assert len(keys) == len(set(keys)) == total
    assert json.loads((out / "summary.json").read_text())["complete"] is True
    assert "PARTIAL" not in finished.stdout
    assert lines[: len(partial)] == partial  # nothing already written was redone
    assert db_rows(db) == sorted(keys)
    # Nothing of the interrupted process is left: no workspace mounts, no cgroups.
    assert workspace_mounts_under(tmp_path) == []
    assert cgroups_of(process.pid) == []


def workspace_mounts_under(root: Path) -> list[str]:
    mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    return [line for line in mounts if "cursorbench-workspace" in line and str(root) in line]


def cgroups_of(pid: int) -> list[str]:
    found = []
    for parent in Path("/sys/fs/cgroup").glob("*/**/cursorbench"):
        found += [
            entry.name for entry in parent.iterdir() if entry.name.startswith(f"sandbox-{pid}-")
        ]
    return found


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--base-url", "http://127.0.0.1:9"], "--base-url needs --model"),
        (["--model", "gpt-4o"], "--model needs --base-url"),
        (["--tasks", "no-such-task"], "no task matches 'no-such-task'"),
        (["--tasks", ""], "--tasks: an empty value"),
        (["--tasks", "missing/task.yaml"], "missing/task.yaml: no such task file or folder"),
        (["--db", "nosuchdialect://x"], "cannot open database"),
        (["--db", "not a url"], "cannot open database 'not a url': not a valid database URL"),
        (["--sandbox", "firecracker"], "unknown sandbox backend"),
        (["--out", "{tmp}/a-file"], "--out {tmp}/a-file: exists and is not a folder"),
        (["--out", "{tmp}/a-file/run"], "--out {tmp}/a-file/run: {tmp}/a-file is not a folder"),
        (["--out", "/proc/cursorbench/run"], "cannot create a folder in /proc"),
        (["--out", ""], "Invalid value for '--out': an empty path"),
        (["--price-input", "-5"], "Invalid value for '--price-input': Input should be greater"),
        (["--price-output", "inf"], "Invalid value for '--price-output': Input should be a finite"),
        (["--temperature", "-1"], "Invalid value for '--temperature': Input should be greater"),
        (["--temperature", "nan"], "Invalid value for '--temperature': Input should be a finite"),
        (["--request-timeout", "0"], "Invalid value for '--request-timeout': Input should be"),
        (["--request-timeout", "inf"], "Invalid value for '--request-timeout': Input should be"),
        (["--retry-backoff", "-1"], "Invalid value for '--retry-backoff'"),
        (["--concurrency", "0"], "Invalid value for '--concurrency'"),
        (["--prices", "{tmp}/not-yaml.yaml"], "{tmp}/not-yaml.yaml: not a price table"),
        (["--prices", "{tmp}/missing.yaml"], "{tmp}/missing.yaml: not a price table"),
        (["--base-url", "localhost:8000/v1", "--model", "m"], "is not an http:// or https:// URL"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "a-file").write_text("")
    (tmp_path / "not-yaml.yaml").write_text("{{ not: [yaml\n")
    args = [arg.replace("{tmp}", str(tmp_path)) for arg in args]
    done = cursorbench("run", "--out", str(tmp_path / "run"), *args)
    assert done.returncode == 2, done.stderr
    assert message.replace("{tmp}", str(tmp_path)) in done.stderr
    assert done.stderr.startswith("error: ")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert not (tmp_path / "run").exists()
    assert not list(tmp_path.glob("**/.cursorbench-probe-*"))


def test_a_key_in_the_environment_is_no_flag_for_the_reference_solver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    done = cursorbench("run", "--tasks", "no-such-task", "--out", str(tmp_path / "run"))
    assert done.returncode == 2
    assert done.stderr.startswith("error: no task matches 'no-such-task'"), done.stderr


def test_a_malformed_task_file_names_the_file_and_field(tmp_path: Path) -> None:
    task = tmp_path / "broken.yaml"
    task.write_text("id: broken\nsuite_version: '1'\ncategory: new_feature\nprompt: hi\n")
    done = cursorbench("run", "--tasks", str(task), "--out", str(tmp_path / "run"))
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: {task}: source: Field required")
    assert done.stderr.count("\n") == 1


@pytest.mark.slow
def test_show_prints_a_finished_run(tmp_path: Path, serve) -> None:
    url = serve(DoneOnlyDouble())
    out = tmp_path / "run"
    args = ["--base-url", url, "--model", "done-only-double", "--tasks", "textkit-slugify"]
    assert cursorbench("run", *args, "--out", str(out)).returncode == 0
    shown = cursorbench("show", str(out))
    assert shown.returncode == 0
    assert "textkit-slugify" in shown.stdout and "empty_diff" in shown.stdout
    missing = cursorbench("show", str(tmp_path / "nothing"))
    assert missing.returncode == 2 and "not a run folder" in missing.stderr


@pytest.mark.slow
def test_show_says_a_run_cut_short_is_partial(tmp_path: Path, serve) -> None:
    out = tmp_path / "run"
    args = ["--base-url", serve(DoneOnlyDouble()), "--model", "done-only-double",
            "--tasks", "textkit-*", "--epochs", "2", "--out", str(out)]  # fmt: skip
    assert cursorbench("run", *args).returncode == 0
    attempts = out / "attempts.jsonl"
    attempts.write_text(attempts.read_text().splitlines(keepends=True)[0])  # as after a kill
    shown = cursorbench("show", str(out))
    assert shown.returncode == 0, shown.stderr
    assert "PARTIAL: 1 of 4 attempts finished" in shown.stdout
    assert "0/1 (0%) of those finished, 0/4 (0%) of those planned" in shown.stdout
    assert "0/4 planned (0%)" in shown.stdout  # the table's footer


@pytest.mark.slow
def test_estimated_token_counts_are_marked(tmp_path: Path, serve) -> None:
    out = tmp_path / "run"
    double = ScriptedDouble([Reply(content="done", report_usage=False)])
    done = cursorbench(
        "run", "--base-url", serve(double), "--model", "scripted-double",
        "--tasks", "textkit-slugify", "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["tokens_estimated"] is True and summary["estimated_calls"] == 1
    (line,) = attempt_lines(out)
    tokens = line["usage"]["tokens_in"] + line["usage"]["tokens_out"]
    assert f"~{tokens:,}" in done.stdout
    assert "~ estimated: the endpoint reported no usage" in done.stdout
    assert "PARTIAL" not in done.stdout


@pytest.mark.slow
def test_a_run_folder_in_use_is_refused(tmp_path: Path, serve) -> None:
    from harness.run.rundir import RunDir

    out = tmp_path / "run"
    holder = RunDir(out)
    holder.lock()
    url = serve(DoneOnlyDouble())
    done = cursorbench("run", "--base-url", url, "--model", "done-only-double", "--out", str(out))
    assert done.returncode == 2
    assert "in use by another cursorbench run" in done.stderr


def test_usage_errors_are_one_line(tmp_path: Path) -> None:
    """The real script: its own exit status and stderr, as a shell sees them."""
    done = script("run", "--epochs", "0")
    assert done.returncode == 2
    assert (
        done.stderr
        == "error: Invalid value for '--epochs': Input should be greater than or equal to 1\n"
    )


class Recovering:
    """A double that answers 503 until told the outage is over, then only says "done"."""

    models = ["recovering-double"]

    def __init__(self) -> None:
        self.down = True

    def respond(self, request: dict[str, Any]) -> Any:
        return (FailingDouble(503) if self.down else DoneOnlyDouble()).respond(request)


@pytest.mark.slow
def test_retry_errors_reruns_only_the_errored_attempts(tmp_path: Path, serve) -> None:
    endpoint = Recovering()
    out, db = tmp_path / "run", f"sqlite:///{tmp_path / 'lb.sqlite'}"
    args = ["run", "--base-url", serve(endpoint), "--model", "recovering-double",
            "--tasks", "textkit-*", "--out", str(out), "--db", db,
            "--max-retries", "0"]  # fmt: skip
    assert cursorbench(*args).returncode == 3  # every attempt ended in error
    assert {line["status"] for line in attempt_lines(out)} == {"error"}
    endpoint.down = False
    assert cursorbench(*args).returncode == 3
    assert {line["status"] for line in attempt_lines(out)} == {"error"}  # plain resume: kept
    assert cursorbench(*args, "--retry-errors").returncode == 0
    lines = attempt_lines(out)
    assert len(lines) == 2 and {line["failure"] for line in lines} == {"empty_diff"}
    assert db_rows(db) == [("textkit-case-styles", 0), ("textkit-slugify", 0)]


class RateLimitedOnce:
    """Answers 429 (retry after 0s) to the first chat completion, then only says "done"."""

    models = ["rate-limited-double"]

    def __init__(self) -> None:
        self.limited = False

    def respond(self, request: dict[str, Any]) -> Any:
        from harness.model.openai_server import RawReply

        if not self.limited:
            self.limited = True
            body = b'{"error": {"message": "slow down", "type": "rate_limit", "code": 429}}'
            return RawReply(429, body)
        return DoneOnlyDouble().respond(request)


@pytest.mark.slow
def test_a_run_in_a_log_prints_a_line_per_attempt_and_each_retry(tmp_path: Path, serve) -> None:
    out = tmp_path / "run"
    args = ["run", "--base-url", serve(RateLimitedOnce()), "--model", "rate-limited-double",
            "--tasks", "textkit-*", "--concurrency", "1", "--retry-backoff", "0",
            "--out", str(out)]  # fmt: skip
    done = cursorbench(*args)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    retry = [line for line in lines if line.startswith("retry 1/4 for textkit-")]
    assert len(retry) == 1 and "HTTP 429" in retry[0], done.stderr
    finished = [line for line in lines if re.match(r"\[\d+/\d+\] ", line)]  # not [build]
    assert [line.split()[0] for line in finished] == ["[1/2]", "[2/2]"]
    assert "failed (empty_diff: the agent changed nothing)" in finished[0]
    assert "0 resolved, 2 failed, 0 error · 1 retries" in finished[1]
    assert done.stderr.count("no price known") == 1  # each warning once
    assert "no price known" not in done.stdout
    again = cursorbench(*args)
    assert again.returncode == 0
    assert "run already complete: 2 of 2 attempts" in again.stderr


@pytest.mark.slow
def test_a_config_file_with_flags_over_it(tmp_path: Path, serve) -> None:
    config = tmp_path / "run.yaml"
    config.write_text(
        f"tasks: [textkit-slugify]\nepochs: 2\nout: {tmp_path / 'run'}\n"
        f"model: {{base_url: '{serve(DoneOnlyDouble())}', name: done-only-double}}\n"
        "store: {kind: none}\n"
    )
    done = cursorbench("run", "--config", str(config), "--epochs", "1")
    assert done.returncode == 0, done.stderr
    assert len(attempt_lines(tmp_path / "run")) == 1
    config.write_text("model: {bse_url: y}\n")
    bad = cursorbench("run", "--config", str(config))
    assert bad.returncode == 2
    assert bad.stderr == (
        f"error: {config}: unknown key 'model.bse_url' (did you mean 'model.base_url'?)\n"
    )


def test_every_problem_of_a_config_file_is_a_line_of_its_own(tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("epoch: 3\nsandbox: {max_comands: 2}\nexecutor: {concurrency: 0}\n")
    done = cursorbench("run", "--config", str(config), "--out", str(tmp_path / "run"))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"error: {config}: unknown key 'epoch' (did you mean 'epochs'?)",
        f"error: {config}: unknown key 'sandbox.max_comands' "
        "(did you mean 'sandbox.max_commands'?)",
        f"error: {config}: executor.concurrency: Input should be greater than or equal to 1",
    ]
    assert not (tmp_path / "run").exists()


def test_show_lists_per_test_outcomes_and_json(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = cursorbench("run", "--tasks", "textkit-slugify", "--out", str(out),
                       "--db", f"sqlite:///{tmp_path / 'lb.sqlite'}")  # fmt: skip
    assert done.returncode == 0, done.stderr
    shown = cursorbench("show", str(out), "--tests")
    assert shown.returncode == 0
    assert "tests/test_slugify.py::test_basic" in shown.stdout and "passed" in shown.stdout
    document = json.loads(cursorbench("show", str(out), "--json").stdout)
    assert document["summary"]["resolved"] == 1
    (attempt,) = document["attempts"]
    assert attempt["tests"]["tests/test_slugify.py::test_basic"] == "passed"
    assert document["run"]["model"] == "reference-solver"


def test_help_fits_80_columns_without_cutting_options() -> None:
    """A real process: the terminal's width comes from its environment at start-up."""
    shown = script("run", "--help", env=os.environ | {"COLUMNS": "80", "TERM": "xterm"})
    assert shown.returncode == 0
    assert "--max-sandbox-commands" in shown.stdout and "…" not in shown.stdout
    assert max(len(line) for line in shown.stdout.splitlines()) <= 80


def test_run_help_shows_a_flag_for_every_run_spec_flag() -> None:
    from cursorbench.config import run_flags

    shown = cursorbench("run", "--help")
    assert shown.returncode == 0
    for flag in run_flags():
        assert f"  {flag.option} " in shown.stdout, flag.option
    assert "  --config " in shown.stdout and "  --suite " in shown.stdout


@pytest.mark.slow
def test_a_replay_rescored_offline_from_the_command_line(tmp_path: Path) -> None:
    recorded, replayed = tmp_path / "recorded", tmp_path / "replayed"
    db = f"sqlite:///{tmp_path / 'lb.sqlite'}"
    assert cursorbench("run", "--tasks", "textkit-slugify", "--out", str(recorded),
                       "--db", db).returncode == 0  # fmt: skip
    done = cursorbench("run", "--replay", str(recorded), "--out", str(replayed), "--db", db)
    assert done.returncode == 0, done.stderr
    (before,), (after,) = attempt_lines(recorded), attempt_lines(replayed)
    keep = ("task_id", "epoch", "status", "failure", "tests", "turns", "tool_calls")
    assert {k: before[k] for k in keep} == {k: after[k] for k in keep}
    run = json.loads((replayed / "run.json").read_text())
    assert run["endpoint_label"] == "replay" and run["model"] == "reference-solver"
    missing = cursorbench("run", "--replay", str(tmp_path / "nothing"), "--out", str(replayed))
    assert missing.returncode == 2
    assert (
        missing.stderr
        == f"error: --replay {tmp_path / 'nothing'}: not a run folder (no run.json)\n"
    )
