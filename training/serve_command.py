"""Serve a checkpoint with any command that speaks the OpenAI API (vLLM, SGLang, this
project's `training.serve`), for as long as a `with` block needs it.

The command is a template: `{path}` (the checkpoint folder), `{port}` (a free loopback port
picked here), and optionally `{model}` (the name the gate wants served), `{host}`
(127.0.0.1), `{max_tokens}`. It is split like a shell line (`shlex`), then each word is
filled in, so a path with spaces stays one argument and nothing is run through a shell.

    python -m training.serve {path} --port {port} --model-name {model}
    vllm serve {path} --port {port} --served-model-name {model}

Ready means `GET /v1/models` answers 200 with at least one model; the name used is `{model}`
when the template has it, else the one model the server lists. The server runs in its own
process group, stopped with SIGTERM (SIGKILL after `stop_timeout_s`) when the block ends; its
output goes to a log file, whose tail is in the error when it exits or never gets ready.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

HOST = "127.0.0.1"
FIELDS = ("path", "port", "model", "host", "max_tokens")


class ServeCommandError(Exception):
    """The command is malformed, exited, or never became ready (one line and a log tail)."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def render(template: str, values: dict[str, str]) -> list[str]:
    """The command's argv with the template's fields filled in."""
    try:
        words = shlex.split(template)
    except ValueError as error:
        raise ServeCommandError(f"serve command: {error}") from None
    if not words:
        raise ServeCommandError("serve command: empty")
    if "{path}" not in template or "{port}" not in template:
        raise ServeCommandError("serve command: needs both {path} and {port}")
    try:
        return [word.format(**values) for word in words]
    except (KeyError, IndexError, ValueError) as error:
        known = ", ".join("{" + name + "}" for name in FIELDS)
        raise ServeCommandError(f"serve command: bad field {error} (known: {known})") from None


class CommandServer:
    """A served checkpoint behind a command; `base_url` and `model` once entered."""

    def __init__(
        self,
        template: str,
        path: Path,
        model: str,
        log_file: Path,
        *,
        max_tokens: int = 128,
        ready_timeout_s: float = 300.0,
        stop_timeout_s: float = 15.0,
    ) -> None:
        self.port = free_port()
        self.wants_name = "{model}" in template
        self.model = model
        values = {
            "path": str(path),
            "port": str(self.port),
            "model": model,
            "host": HOST,
            "max_tokens": str(max_tokens),
        }
        self.argv = render(template, values)
        self.log_file = log_file
        self.ready_timeout_s = ready_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    def __enter__(self) -> CommandServer:
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with self.log_file.open("wb") as log:
            try:
                self.process = subprocess.Popen(
                    self.argv,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            except OSError as error:
                raise ServeCommandError(f"serve command {self.argv[0]!r}: {error}") from None
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()

    def _wait_ready(self) -> None:
        assert self.process is not None
        deadline = time.monotonic() + self.ready_timeout_s
        while time.monotonic() < deadline:
            code = self.process.poll()
            if code is not None:
                raise ServeCommandError(
                    f"serve command exited with status {code} before serving: {self._tail()}"
                )
            listed = self._models()
            if listed:
                if not self.wants_name:
                    self.model = listed[0]
                elif self.model not in listed:
                    raise ServeCommandError(
                        f"serve command serves {listed}, not {self.model!r}: {self._tail()}"
                    )
                return
            time.sleep(0.2)
        raise ServeCommandError(
            f"serve command not ready after {self.ready_timeout_s:.0f}s: {self._tail()}"
        )

    def _models(self) -> list[str]:
        try:
            with urllib.request.urlopen(f"{self.base_url}/models", timeout=5) as response:
                body = json.loads(response.read())
        except (OSError, urllib.error.URLError, ValueError):
            return []
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            return []
        return [str(item["id"]) for item in data if isinstance(item, dict) and "id" in item]

    def _tail(self, lines: int = 5) -> str:
        try:
            text = self.log_file.read_text(errors="replace")
        except OSError:
            return "(no output)"
        kept = [line for line in text.splitlines() if line.strip()][-lines:]
        return " | ".join(kept) if kept else "(no output)"

    def stop(self) -> None:
        """SIGTERM to the command's process group, SIGKILL if it is still there after
        `stop_timeout_s`."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        for sig, wait_s in ((signal.SIGTERM, self.stop_timeout_s), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            try:
                process.wait(wait_s)
                break
            except subprocess.TimeoutExpired:
                continue
        # whatever the group leader left behind (a worker it spawned) goes too
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
