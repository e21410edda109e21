"""The agent's tools: argument models, their JSON schemas, and what each does in a sandbox.

Every tool returns text for the model. A tool that cannot do what was asked
raises `ToolError`; the loop shows the message to the model as the tool's
result, so a confused model gets a chance to correct itself. `finish` raises
`Submitted`, which ends the attempt.
"""

from __future__ import annotations

import functools
import json
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from harness.sandbox import Sandbox, SandboxError

MAX_LISTED = 400
MAX_MATCHES = 200
MAX_OUTPUT_CHARS = 40_000  # any tool's result; a model's context is not a log file


class ToolError(Exception):
    pass


class MalformedCall(ToolError):
    """The call itself is unusable: unknown tool, arguments not JSON or not valid."""


class Submitted(Exception):
    def __init__(self, summary: str) -> None:
        super().__init__(summary)
        self.summary = summary


class ReadFile(BaseModel):
    """Read a text file of the workspace."""

    path: str = Field(description="Path relative to the workspace root.")
    start_line: int = Field(default=1, ge=1, description="First line to return (1-based).")
    end_line: int | None = Field(default=None, ge=1, description="Last line to return.")


class WriteFile(BaseModel):
    """Create or overwrite a file with the given content."""

    path: str
    content: str


class EditFile(BaseModel):
    """Replace an exact string in a file. It must occur exactly once unless replace_all."""

    path: str
    old_string: str = Field(min_length=1)
    new_string: str
    replace_all: bool = False


class ListDir(BaseModel):
    """List files and folders under a path (hidden entries skipped)."""

    path: str = "."
    max_depth: int = Field(default=2, ge=1, le=6)


class Search(BaseModel):
    """Search file contents with an extended regular expression (grep -E)."""

    pattern: str = Field(min_length=1)
    path: str = "."
    glob: str | None = Field(default=None, description="Only files matching this, e.g. '*.py'.")


class Run(BaseModel):
    """Run a shell command (bash) in the workspace. No network. Output is truncated."""

    command: str = Field(min_length=1)
    timeout_s: float | None = Field(default=None, gt=0, description="Defaults to the task's.")


class Finish(BaseModel):
    """Call when the work is done; say briefly what you changed."""

    summary: str = ""


@dataclass(frozen=True)
class ToolContext:
    sandbox: Sandbox
    command_timeout_s: float
    time_left_s: Callable[[], float]
    offered: tuple[str, ...] | None = None  # the tools this task offers; None: all of them


def read_file(ctx: ToolContext, args: ReadFile) -> str:
    lines = ctx.sandbox.read(args.path).splitlines(keepends=True)
    end = args.end_line or len(lines)
    return "".join(lines[args.start_line - 1 : end]) or "(empty)"


def write_file(ctx: ToolContext, args: WriteFile) -> str:
    ctx.sandbox.write(args.path, args.content)
    return f"wrote {args.path} ({len(args.content.splitlines())} lines)"


def edit_file(ctx: ToolContext, args: EditFile) -> str:
    text = ctx.sandbox.read(args.path)
    count = text.count(args.old_string)
    if count == 0:
        raise ToolError(f"old_string not found in {args.path}")
    if count > 1 and not args.replace_all:
        raise ToolError(f"old_string occurs {count} times in {args.path}; make it unique")
    limit = -1 if args.replace_all else 1
    ctx.sandbox.write(args.path, text.replace(args.old_string, args.new_string, limit))
    return f"replaced {count if args.replace_all else 1} occurrence(s) in {args.path}"


def list_dir(ctx: ToolContext, args: ListDir) -> str:
    command = shlex.join(
        ["find", args.path, "-mindepth", "1", "-maxdepth", str(args.max_depth),
         "-not", "-path", "*/.*", "-printf", "%y %P\n"]
    )  # fmt: skip
    done = ctx.sandbox.run(command, timeout=min(30.0, ctx.time_left_s()))
    if done.exit_code != 0:
        raise ToolError(done.output.strip() or f"cannot list {args.path}")
    entries = sorted(
        name + ("/" if kind == "d" else "")
        for kind, _, name in (line.partition(" ") for line in done.output.splitlines())
    )
    more = f"\n... and {len(entries) - MAX_LISTED} more" if len(entries) > MAX_LISTED else ""
    return "\n".join(entries[:MAX_LISTED]) + more or "(empty)"


def search(ctx: ToolContext, args: Search) -> str:
    argv = ["grep", "-rnIE", "--exclude-dir=.?*"]  # not `.*`: that excludes "." itself
    if args.glob:
        argv.append(f"--include={args.glob}")
    argv += ["-e", args.pattern, "--", args.path]
    done = ctx.sandbox.run(shlex.join(argv), timeout=min(30.0, ctx.time_left_s()))
    if done.exit_code == 1:
        return "no matches"
    if done.exit_code != 0:
        raise ToolError(done.output.strip() or "search failed")
    lines = done.output.splitlines()
    more = f"\n... {len(lines) - MAX_MATCHES} more matches" if len(lines) > MAX_MATCHES else ""
    return "\n".join(lines[:MAX_MATCHES]) + more


def run(ctx: ToolContext, args: Run) -> str:
    timeout = min(args.timeout_s or ctx.command_timeout_s, max(ctx.time_left_s(), 1.0))
    done = ctx.sandbox.run(args.command, timeout=timeout)
    if done.timed_out:
        status = f"timed out after {timeout:.0f}s; the command and its children were killed"
    elif done.output_limit_hit:
        status = "killed: the command printed more output than allowed"
    else:
        status = f"exit code {done.exit_code}"
    return f"[{status}]\n{done.output}"


def finish(ctx: ToolContext, args: Finish) -> str:
    raise Submitted(args.summary)


@dataclass(frozen=True)
class Tool:
    name: str
    arguments: type[BaseModel]
    function: Callable[[ToolContext, Any], str]

    def schema(self) -> dict[str, Any]:
        parameters = self.arguments.model_json_schema()
        parameters.pop("title", None)
        description = (self.arguments.__doc__ or "").strip()
        return {
            "type": "function",
            "function": {"name": self.name, "description": description, "parameters": parameters},
        }


TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in [
        Tool("read_file", ReadFile, read_file),
        Tool("write_file", WriteFile, write_file),
        Tool("edit_file", EditFile, edit_file),
        Tool("list_dir", ListDir, list_dir),
        Tool("search", Search, search),
        Tool("run", Run, run),
        Tool("finish", Finish, finish),
    ]
}


EDIT_TOOLS = frozenset({"write_file", "edit_file"})  # tools that change a file when they succeed
READ_ONLY_TOOLS = frozenset({"read_file", "list_dir", "search", "finish"})  # change nothing


@functools.cache
def tool_schemas(names: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """Schemas of the named tools (all when None), in the registry's order."""
    unknown = set(names or ()) - set(TOOLS)
    if unknown:
        raise ValueError(f"unknown tools {sorted(unknown)}; available: {', '.join(TOOLS)}")
    return [tool.schema() for tool in TOOLS.values() if names is None or tool.name in names]


def call_tool(ctx: ToolContext, name: str, raw_arguments: str) -> str:
    """Runs one tool call; every problem with the call itself becomes a `ToolError`."""
    offered = ctx.offered if ctx.offered is not None else tuple(TOOLS)
    tool = TOOLS.get(name) if name in offered else None
    if tool is None:
        raise MalformedCall(f"unknown tool {name!r}; available: {', '.join(offered)}")
    try:
        payload = json.loads(raw_arguments or "{}")
    except json.JSONDecodeError as error:
        raise MalformedCall(f"arguments for {name} are not valid JSON: {error}") from None
    try:
        args = tool.arguments.model_validate(payload)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in error.errors()
        )
        raise MalformedCall(f"bad arguments for {name}: {problems}") from None
    _refuse_unusable_text(name, args)
    try:
        return _clip(tool.function(ctx, args))
    except SandboxError as error:
        raise ToolError(str(error)) from None
    except UnicodeError as error:  # e.g. a lone surrogate in content to write
        raise MalformedCall(f"bad arguments for {name}: text cannot be encoded ({error})") from None


def _refuse_unusable_text(name: str, args: BaseModel) -> None:
    """Paths, commands and patterns go to the OS: no NUL, no lone surrogates."""
    for field_name, value in args:
        if not isinstance(value, str) or field_name in (
            "content",
            "summary",
            "old_string",
            "new_string",
        ):
            continue
        if "\0" in value:
            raise MalformedCall(f"bad arguments for {name}: {field_name} contains a NUL byte")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise MalformedCall(
                f"bad arguments for {name}: {field_name} is not valid Unicode text"
            ) from None


def _clip(text: str) -> str:
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    half = MAX_OUTPUT_CHARS // 2
    omitted = len(text) - 2 * half
    note = f"\n[... {omitted} characters omitted; read a smaller range ...]\n"
    return text[:half] + note + text[-half:]
