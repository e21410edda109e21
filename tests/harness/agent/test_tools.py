"""The agent's tools, called as the loop calls them: by name, with raw JSON arguments."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.agent.tools import (
    MAX_OUTPUT_CHARS,
    TOOLS,
    MalformedCall,
    Submitted,
    ToolContext,
    ToolError,
    call_tool,
    tool_schemas,
)
from harness.sandbox import Sandbox, open_backend

TOOL_NAMES = ["read_file", "write_file", "edit_file", "list_dir", "search", "run", "finish"]


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    prepared = tmp_path / "prepared"
    (prepared / "pkg" / "sub").mkdir(parents=True)
    (prepared / "pkg" / "__init__.py").write_text("")
    (prepared / "pkg" / "core.py").write_text("one\ntwo\nthree\nfour\n")
    (prepared / "pkg" / "sub" / "leaf.py").write_text("def needle():\n    return 'needle'\n")
    (prepared / "notes.txt").write_text("a needle in text\n")
    (prepared / ".hidden").mkdir()
    (prepared / ".hidden" / "secret.py").write_text("needle = 'hidden'\n")
    box = open_backend("subprocess").open(prepared, tmp_path / "attempt")
    yield box
    box.close()


@pytest.fixture
def ctx(sandbox: Sandbox) -> ToolContext:
    return ToolContext(sandbox, command_timeout_s=10.0, time_left_s=lambda: 600.0)


def call(ctx: ToolContext, name: str, **arguments: object) -> str:
    return call_tool(ctx, name, json.dumps(arguments))


# ---- read_file ----


def test_read_file_whole_and_ranges(ctx: ToolContext) -> None:
    assert call(ctx, "read_file", path="pkg/core.py") == "one\ntwo\nthree\nfour\n"
    assert call(ctx, "read_file", path="pkg/core.py", start_line=2, end_line=3) == "two\nthree\n"
    assert call(ctx, "read_file", path="pkg/core.py", start_line=4) == "four\n"
    assert call(ctx, "read_file", path="pkg/core.py", start_line=9) == "(empty)"
    assert call(ctx, "read_file", path="pkg/__init__.py") == "(empty)"


def test_read_file_missing_is_a_tool_error_not_malformed(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=re.escape("nope.py: no such file")) as caught:
        call(ctx, "read_file", path="nope.py")
    assert not isinstance(caught.value, MalformedCall)


def test_read_file_outside_the_workspace_is_refused(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="outside the workspace"):
        call(ctx, "read_file", path="../attempt/git/HEAD")


def test_read_file_line_numbers_must_be_positive(ctx: ToolContext) -> None:
    with pytest.raises(MalformedCall, match="start_line"):
        call(ctx, "read_file", path="pkg/core.py", start_line=0)


# ---- write_file / edit_file ----


def test_write_file_creates_and_overwrites(ctx: ToolContext, sandbox: Sandbox) -> None:
    assert (
        call(ctx, "write_file", path="new/mod.py", content="a\nb\n") == "wrote new/mod.py (2 lines)"
    )
    assert sandbox.read("new/mod.py") == "a\nb\n"
    assert call(ctx, "write_file", path="new/mod.py", content="") == "wrote new/mod.py (0 lines)"
    assert sandbox.read("new/mod.py") == ""


def test_edit_file_replaces_a_unique_string(ctx: ToolContext, sandbox: Sandbox) -> None:
    result = call(ctx, "edit_file", path="pkg/core.py", old_string="two\n", new_string="2\n")
    assert result == "replaced 1 occurrence(s) in pkg/core.py"
    assert sandbox.read("pkg/core.py") == "one\n2\nthree\nfour\n"


def test_edit_file_not_found(ctx: ToolContext, sandbox: Sandbox) -> None:
    with pytest.raises(ToolError, match=re.escape("old_string not found in pkg/core.py")):
        call(ctx, "edit_file", path="pkg/core.py", old_string="five", new_string="5")
    assert sandbox.read("pkg/core.py") == "one\ntwo\nthree\nfour\n"


def test_edit_file_multiple_occurrences_refused(ctx: ToolContext, sandbox: Sandbox) -> None:
    sandbox.write("dup.txt", "x = 1\nx = 1\nx = 1\n")
    with pytest.raises(ToolError, match=re.escape("occurs 3 times in dup.txt; make it unique")):
        call(ctx, "edit_file", path="dup.txt", old_string="x = 1", new_string="y")
    assert sandbox.read("dup.txt") == "x = 1\nx = 1\nx = 1\n"


def test_edit_file_replace_all(ctx: ToolContext, sandbox: Sandbox) -> None:
    sandbox.write("dup.txt", "x = 1\nx = 1\nx = 1\n")
    result = call(
        ctx, "edit_file", path="dup.txt", old_string="x = 1", new_string="y = 2", replace_all=True
    )
    assert result == "replaced 3 occurrence(s) in dup.txt"
    assert sandbox.read("dup.txt") == "y = 2\ny = 2\ny = 2\n"


def test_edit_file_empty_old_string_is_malformed(ctx: ToolContext) -> None:
    with pytest.raises(MalformedCall, match="old_string"):
        call(ctx, "edit_file", path="pkg/core.py", old_string="", new_string="x")


# ---- list_dir / search ----


def test_list_dir_sorted_with_folders_marked_and_hidden_skipped(ctx: ToolContext) -> None:
    assert call(ctx, "list_dir").splitlines() == [
        "notes.txt",
        "pkg/",
        "pkg/__init__.py",
        "pkg/core.py",
        "pkg/sub/",
    ]


def test_list_dir_depth_and_subfolder(ctx: ToolContext) -> None:
    assert call(ctx, "list_dir", max_depth=1).splitlines() == ["notes.txt", "pkg/"]
    assert call(ctx, "list_dir", path="pkg/sub") == "leaf.py"


def test_list_dir_empty_and_missing(ctx: ToolContext, sandbox: Sandbox) -> None:
    sandbox.run("mkdir void", timeout=10)
    assert call(ctx, "list_dir", path="void") == "(empty)"
    with pytest.raises(ToolError, match="No such file"):
        call(ctx, "list_dir", path="missing")


def test_search_in_a_folder_with_glob(ctx: ToolContext) -> None:
    assert call(ctx, "search", pattern="need+le", path="pkg", glob="*.py").splitlines() == [
        "pkg/sub/leaf.py:1:def needle():",
        "pkg/sub/leaf.py:2:    return 'needle'",
    ]


def test_search_no_matches(ctx: ToolContext) -> None:
    assert call(ctx, "search", pattern="haystack", path="pkg") == "no matches"


def test_search_bad_regex_is_a_tool_error(ctx: ToolContext) -> None:
    with pytest.raises(ToolError):
        call(ctx, "search", pattern="(", path="pkg")


def test_search_the_whole_workspace_by_default(ctx: ToolContext) -> None:
    assert call(ctx, "search", pattern="needle").splitlines() == [
        "./notes.txt:1:a needle in text",
        "./pkg/sub/leaf.py:1:def needle():",
        "./pkg/sub/leaf.py:2:    return 'needle'",
    ]


# ---- run ----


def test_run_reports_exit_code_and_output(ctx: ToolContext) -> None:
    assert call(ctx, "run", command="echo hi; exit 3") == "[exit code 3]\nhi\n"
    assert call(ctx, "run", command="cat notes.txt") == "[exit code 0]\na needle in text\n"


def test_run_timeout_is_reported(ctx: ToolContext) -> None:
    result = call(ctx, "run", command="echo started; sleep 30", timeout_s=0.5)
    assert result.startswith("[timed out after 0s; the command and its children were killed]")
    assert result.endswith("\nstarted\n")


def test_run_timeout_is_capped_by_the_time_left(sandbox: Sandbox) -> None:
    ctx = ToolContext(sandbox, command_timeout_s=60.0, time_left_s=lambda: 1.0)
    result = call(ctx, "run", command="sleep 30")
    assert result.startswith("[timed out after 1s")


# ---- finish and malformed calls ----


def test_finish_raises_submitted(ctx: ToolContext) -> None:
    with pytest.raises(Submitted) as caught:
        call(ctx, "finish", summary="fixed the bug")
    assert caught.value.summary == "fixed the bug"
    with pytest.raises(Submitted) as empty:
        call_tool(ctx, "finish", "")
    assert empty.value.summary == ""


def test_unknown_tool_is_malformed(ctx: ToolContext) -> None:
    with pytest.raises(
        MalformedCall, match="unknown tool 'delete_everything'; available: read_file"
    ):
        call_tool(ctx, "delete_everything", "{}")


@pytest.mark.parametrize("raw", ["{not json", '{"path": ', "'single'"])
def test_invalid_json_is_malformed(ctx: ToolContext, raw: str) -> None:
    with pytest.raises(MalformedCall, match="arguments for read_file are not valid JSON"):
        call_tool(ctx, "read_file", raw)


def test_missing_field_is_malformed(ctx: ToolContext) -> None:
    with pytest.raises(MalformedCall) as caught:
        call_tool(ctx, "write_file", '{"path": "x.py"}')
    assert str(caught.value) == "bad arguments for write_file: content: Field required"


@pytest.mark.parametrize("raw", ["[1, 2]", "null", '"a string"', '{"command": 5}'])
def test_wrongly_shaped_arguments_are_malformed(ctx: ToolContext, raw: str) -> None:
    with pytest.raises(MalformedCall, match="bad arguments for run"):
        call_tool(ctx, "run", raw)


def test_malformed_call_is_a_tool_error(ctx: ToolContext) -> None:
    assert issubclass(MalformedCall, ToolError)
    with pytest.raises(ToolError):
        call_tool(ctx, "nope", "{}")


# ---- schemas ----


def test_tool_schemas_are_function_specs_for_the_seven_tools() -> None:
    schemas = tool_schemas()
    assert [schema["function"]["name"] for schema in schemas] == TOOL_NAMES
    assert list(TOOLS) == TOOL_NAMES
    json.dumps(schemas)  # serialisable as sent on the wire
    for schema in schemas:
        assert schema["type"] == "function"
        function = schema["function"]
        assert set(function) == {"name", "description", "parameters"}
        assert function["description"], function["name"]
        parameters = function["parameters"]
        assert parameters["type"] == "object"
        assert "title" not in parameters
        properties = parameters["properties"]
        assert set(parameters.get("required", [])) <= set(properties)
        for name, prop in properties.items():
            assert "type" in prop or "anyOf" in prop, (function["name"], name)


def test_tool_schemas_required_fields() -> None:
    required = {
        s["function"]["name"]: sorted(s["function"]["parameters"].get("required", []))
        for s in tool_schemas()
    }
    assert required == {
        "read_file": ["path"],
        "write_file": ["content", "path"],
        "edit_file": ["new_string", "old_string", "path"],
        "list_dir": [],
        "search": ["pattern"],
        "run": ["command"],
        "finish": [],
    }


# ---- output size ----


def test_long_tool_output_is_clipped_head_and_tail(ctx: ToolContext, sandbox: Sandbox) -> None:
    lines = [f"line {n:06d}\n" for n in range(10_000)]  # 12 characters each
    sandbox.write("long.txt", "".join(lines))
    text = call(ctx, "read_file", path="long.txt")
    half = MAX_OUTPUT_CHARS // 2
    omitted = len(lines) * 12 - 2 * half
    assert text.startswith("line 000000\nline 000001\n")
    assert text.endswith("line 009998\nline 009999\n")
    note = f"\n[... {omitted} characters omitted; read a smaller range ...]\n"
    assert text == "".join(lines)[:half] + note + "".join(lines)[-half:]


def test_output_at_the_limit_is_not_clipped(ctx: ToolContext, sandbox: Sandbox) -> None:
    sandbox.write("exact.txt", "a" * MAX_OUTPUT_CHARS)
    assert call(ctx, "read_file", path="exact.txt") == "a" * MAX_OUTPUT_CHARS
    sandbox.write("over.txt", "a" * (MAX_OUTPUT_CHARS + 1))
    assert "[... 1 characters omitted" in call(ctx, "read_file", path="over.txt")
