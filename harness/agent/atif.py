"""Trajectories in the Agent Trajectory Interchange Format (ATIF, Harbor's RFC 0001).

`to_atif` turns the records of a trajectory file (`harness.agent.trajectory`) into one ATIF
document: the system prompt, the task prompt and injected user messages are `system` and
`user` steps; every model reply is an `agent` step with its tool calls, the tool results as
its observation and its token usage as its metrics; the attempt's totals are the final
metrics. Whatever ATIF has no field for (the seconds since the start, the finish reason,
the diff, the grade, the result record) rides in `extra` under `cursorbench`, so
`from_atif` gives back the very records, and so the same conversation (`conversation`).

Checked against Harbor's own validator in the tests (`harbor.utils.trajectory_validator`,
run from the environment scripts/harbor.sh makes); no Harbor code is used here.
"""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path
from typing import Any

ATIF_VERSION = "ATIF-v1.6"
KEY = "cursorbench"
_ROLES = {"system": "system", "user": "user"}
_USAGE_FIELDS = {
    "tokens_in": "prompt_tokens",
    "tokens_out": "completion_tokens",
    "cost_usd": "cost_usd",
}


def atif_path(trajectory_path: str) -> str:
    """Where an attempt's ATIF file goes, next to its trajectory (`trajectories/T__E.json`...)."""
    return trajectory_path.removesuffix(".jsonl") + ".atif.json"


def agent_version() -> str:
    try:
        return metadata.version("cursorbench")
    except metadata.PackageNotFoundError:
        return "unknown"


def write_atif(trajectory_file: Path, out: Path, session_id: str | None = None) -> None:
    """Converts one trajectory file into an ATIF file (written whole, then renamed)."""
    from harness.agent.trajectory import read_trajectory

    document = to_atif(
        read_trajectory(trajectory_file), agent_version=agent_version(), session_id=session_id
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    temporary = out.with_name(out.name + ".tmp")
    temporary.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    temporary.replace(out)


class AtifError(ValueError):
    """A document that is not an ATIF trajectory written by `to_atif` (one line)."""


def to_atif(
    records: list[dict[str, Any]], *, agent_version: str, session_id: str | None = None
) -> dict[str, Any]:
    """One ATIF trajectory (plain JSON data) from a trajectory file's records."""
    header = records[0] if records and records[0].get("type") == "header" else {}
    steps: list[dict[str, Any]] = []
    others: list[dict[str, Any]] = []
    calls: dict[str, dict[str, Any]] = {}  # tool call id -> the agent step that made it
    for index, record in enumerate(records):
        kind = record.get("type")
        if kind == "message" and record.get("role") in _ROLES:
            steps.append(_message_step(record, len(steps) + 1))
        elif kind == "model" and isinstance(record.get("message"), dict):
            step = _agent_step(record, len(steps) + 1)
            steps.append(step)
            calls = {call["tool_call_id"]: step for call in step.get("tool_calls", [])}
        elif kind == "tool" and record.get("id") in calls:
            _observe(calls[record["id"]], record)
        else:
            others.append({"index": index, "record": record})
    if not steps:  # ATIF needs one step; an attempt that failed before its first message
        steps.append({"step_id": 1, "source": "system", "message": "", "extra": {KEY: None}})
    document: dict[str, Any] = {
        "schema_version": ATIF_VERSION,
        "trajectory_id": f"{header.get('task_id', 'attempt')}__{header.get('epoch', 0)}",
        "agent": {
            "name": "cursorbench",
            "version": agent_version,
            "model_name": header.get("model"),
        },
        "steps": steps,
        "final_metrics": _final_metrics(records, len(steps)),
        "extra": {KEY: {"format_version": 1, "other_records": others}},
    }
    if session_id is not None:
        document["session_id"] = session_id
    return _without_none(document)


def _message_step(record: dict[str, Any], step_id: int) -> dict[str, Any]:
    rest = _rest(record, "role", "content")
    content = record.get("content")
    if not isinstance(content, str):
        rest["content"] = content
    return {
        "step_id": step_id,
        "source": _ROLES[record["role"]],
        "message": content if isinstance(content, str) else "",
        "extra": {KEY: rest},
    }


def _agent_step(record: dict[str, Any], step_id: int) -> dict[str, Any]:
    message = record["message"]
    content = message.get("content")
    rest = _rest(record, "message", "usage")
    rest["message"] = _rest(message, "content", "tool_calls") | (
        {} if isinstance(content, str) else {"content": content}
    )
    step: dict[str, Any] = {
        "step_id": step_id,
        "source": "agent",
        "message": content if isinstance(content, str) else "",
        "extra": {KEY: rest},
    }
    if isinstance(message.get("tool_calls"), list):
        step["tool_calls"] = [_tool_call(call) for call in message["tool_calls"]]
    elif "tool_calls" in message:
        rest["message"]["tool_calls"] = message["tool_calls"]
    usage = record.get("usage")
    if isinstance(usage, dict):
        step["metrics"] = {
            "prompt_tokens": usage.get("tokens_in"),
            "completion_tokens": usage.get("tokens_out"),
            "cost_usd": usage.get("cost_usd"),
            "extra": {k: v for k, v in usage.items() if k not in _USAGE_FIELDS},
        }
        if isinstance(usage.get("model_calls"), int) and usage["model_calls"] > 0:
            step["llm_call_count"] = usage["model_calls"]
    elif "usage" in record:
        rest["usage"] = usage
    return step


def _tool_call(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    raw = function.get("arguments")
    parsed = _json_object(raw)
    rest = {k: v for k, v in call.items() if k not in ("id", "function")}
    rest["function"] = {k: v for k, v in function.items() if k not in ("name", "arguments")}
    if parsed is None or json.dumps(parsed) != raw:
        rest["raw_arguments"] = raw  # not a JSON object, or not written as json.dumps writes
    return {
        "tool_call_id": str(call.get("id")),
        "function_name": str(function.get("name")),
        "arguments": parsed if parsed is not None else {},
        "extra": {KEY: rest},
    }


def _observe(step: dict[str, Any], record: dict[str, Any]) -> None:
    call = next(c for c in step["tool_calls"] if c["tool_call_id"] == record["id"])
    rest = _rest(record, "id", "output")
    if rest.get("name") == call["function_name"]:
        del rest["name"]
    else:
        rest["has_name"] = "name" in rest
    raw = _raw_arguments(call)
    if "arguments" in rest and rest["arguments"] == raw:
        del rest["arguments"]
    elif "arguments" not in rest:
        rest["no_arguments"] = True
    result: dict[str, Any] = {"source_call_id": record["id"], "extra": {KEY: rest}}
    output = record.get("output")
    if isinstance(output, str):
        result["content"] = output
    elif "output" in record:
        rest["output"] = output
    else:
        rest["has_output"] = False
    step.setdefault("observation", {"results": []})["results"].append(result)


def _final_metrics(records: list[dict[str, Any]], steps: int) -> dict[str, Any]:
    usages = [
        r["usage"] for r in records if r.get("type") == "model" and isinstance(r.get("usage"), dict)
    ]
    result = next((r.get("result") for r in records if r.get("type") == "result"), None)
    extra: dict[str, Any] = {}
    if isinstance(result, dict):
        extra = {k: result.get(k) for k in ("status", "failure", "turns", "tool_calls")}
        extra["tests"] = result.get("tests")
    return {
        "total_prompt_tokens": sum(int(u.get("tokens_in") or 0) for u in usages),
        "total_completion_tokens": sum(int(u.get("tokens_out") or 0) for u in usages),
        "total_cost_usd": sum(float(u.get("cost_usd") or 0.0) for u in usages),
        "total_steps": steps,
        "extra": extra,
    }


def from_atif(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The trajectory records a document written by `to_atif` was made from."""
    try:
        ours = document["extra"][KEY]
        others = ours["other_records"]
        steps = document["steps"]
    except (KeyError, TypeError):
        raise AtifError(
            "not an ATIF trajectory written by cursorbench (no extra.cursorbench)"
        ) from None
    records: list[dict[str, Any]] = []
    for step in steps:
        rest = (step.get("extra") or {}).get(KEY)
        if rest is None:
            continue  # the placeholder step of an attempt with no message
        if step["source"] == "agent":
            records.append(_model_record(step, rest))
            for result in (step.get("observation") or {}).get("results", []):
                records.append(_tool_record(step, result))
        else:
            records.append(_message_record(step, rest))
    for other in others:
        records.insert(other["index"], other["record"])
    return records


def _message_record(step: dict[str, Any], rest: dict[str, Any]) -> dict[str, Any]:
    record = {"type": "message", "role": step["source"], "content": step["message"]} | rest
    return _typed_first(record)


def _model_record(step: dict[str, Any], rest: dict[str, Any]) -> dict[str, Any]:
    rest = dict(rest)
    message_rest = dict(rest.pop("message", {}))
    message: dict[str, Any] = {"role": "assistant", "content": step["message"]} | message_rest
    if "tool_calls" in step:
        message["tool_calls"] = [_openai_call(call) for call in step["tool_calls"]]
    record: dict[str, Any] = {"type": "model", "message": message} | rest
    metrics = step.get("metrics")
    if metrics is not None:
        usage = {ours: metrics.get(theirs) for ours, theirs in _USAGE_FIELDS.items()}
        record["usage"] = usage | (metrics.get("extra") or {})
    return _typed_first(record)


def _openai_call(call: dict[str, Any]) -> dict[str, Any]:
    rest = dict(call["extra"][KEY])
    function = dict(rest.pop("function", {}))
    raw = rest.pop("raw_arguments", json.dumps(call["arguments"]))
    return (
        {"id": call["tool_call_id"]}
        | rest
        | {"function": {"name": call["function_name"], "arguments": raw} | function}
    )


def _raw_arguments(call: dict[str, Any]) -> Any:
    return call["extra"][KEY].get("raw_arguments", json.dumps(call["arguments"]))


def _tool_record(step: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    rest = dict(result["extra"][KEY])
    call = next(c for c in step["tool_calls"] if c["tool_call_id"] == result["source_call_id"])
    record: dict[str, Any] = {"type": "tool", "id": result["source_call_id"]}
    if rest.pop("has_name", True):
        record["name"] = rest.pop("name", call["function_name"])
    if not rest.pop("no_arguments", False):
        record["arguments"] = rest.pop("arguments", _raw_arguments(call))
    if rest.pop("has_output", True):
        record["output"] = rest.pop("output", result.get("content"))
    return _typed_first(record | rest)


def conversation(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chat the model saw, as OpenAI-style messages, rebuilt from trajectory records."""
    messages: list[dict[str, Any]] = []
    for record in records:
        kind = record.get("type")
        if kind == "message":
            messages.append({"role": record.get("role"), "content": record.get("content")})
        elif kind == "model" and isinstance(record.get("message"), dict):
            messages.append(record["message"])
        elif kind == "tool" and "output" in record:
            messages.append(
                {"role": "tool", "tool_call_id": record.get("id"), "content": record["output"]}
            )
    return messages


def _typed_first(record: dict[str, Any]) -> dict[str, Any]:
    return {"type": record["type"]} | {k: v for k, v in record.items() if k != "type"}


def _rest(data: dict[str, Any], *mapped: str) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in mapped and k != "type"}


def _json_object(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, str):
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _without_none(data: Any) -> Any:
    """Drops None values from ATIF's own fields (the validator allows absent, and some fields
    refuse null), never from inside `extra`, whose values are ours."""
    if isinstance(data, dict):
        return {
            k: (v if k == "extra" else _without_none(v)) for k, v in data.items() if v is not None
        }
    if isinstance(data, list):
        return [_without_none(v) for v in data]
    return data
