"""The chat template the model is SFT-trained with and served behind.

One conversation renders as

    <|bos|><|tools|>[...tool schemas as JSON...]<|end|>
    <|system|>text<|end|><|user|>text<|end|>
    <|assistant|>text<|tool_call|>{"name": ..., "arguments": {...}}<|end_tool_call|><|end|>
    <|tool|>result text<|end|> ... <|assistant|>

(no newlines between parts). Training masks the loss to what the assistant writes: its text,
its tool calls and the `<|end|>` that closes its turn. Serving renders the history the same way,
ends with `<|assistant|>`, and parses the reply back into text and tool calls.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from training.tokenizer import (
    ASSISTANT,
    BOS,
    END,
    END_TOOL_CALL,
    SYSTEM,
    TOOL,
    TOOL_CALL,
    TOOLS,
    USER,
    CodeTokenizer,
)

ROLE_TOKENS = {"system": SYSTEM, "user": USER, "assistant": ASSISTANT, "tool": TOOL}


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class AssistantReply:
    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, list):  # OpenAI content parts: keep the text ones
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def _tool_calls(message: dict[str, Any]) -> list[ToolCall]:
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function", call)
        arguments = function.get("arguments", {})
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError:
                arguments = {"_raw": arguments}
        calls.append(ToolCall(name=str(function.get("name", "")), arguments=arguments))
    return calls


def render_assistant_body(reply: AssistantReply) -> str:
    """What the assistant writes in one turn, closing `<|end|>` included."""
    calls = "".join(
        TOOL_CALL + json.dumps({"name": c.name, "arguments": c.arguments}) + END_TOOL_CALL
        for c in reply.tool_calls
    )
    return reply.content + calls + END


def segments(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
) -> list[tuple[str, bool]]:
    """The conversation as (text, is_assistant_output) pieces, in order."""
    parts: list[tuple[str, bool]] = [(BOS, False)]
    if tools:
        parts.append((TOOLS + json.dumps(tools, separators=(",", ":")) + END, False))
    for message in messages:
        role = message.get("role", "")
        if role not in ROLE_TOKENS:
            raise ValueError(f"unknown chat role {role!r}")
        if role == "assistant":
            parts.append((ASSISTANT, False))
            reply = AssistantReply(_text(message), _tool_calls(message))
            parts.append((render_assistant_body(reply), True))
        else:
            parts.append((ROLE_TOKENS[role] + _text(message) + END, False))
    return parts


def render_prompt(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> str:
    """The text a served model continues: the history, then an open assistant turn."""
    return "".join(text for text, _ in segments(messages, tools)) + ASSISTANT


def encode_with_mask(
    tokenizer: CodeTokenizer,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
) -> tuple[list[int], list[bool]]:
    """Token ids of a whole conversation and, per id, whether the loss is taken on it."""
    ids: list[int] = []
    mask: list[bool] = []
    for text, trained in segments(messages, tools):
        piece = tokenizer.encode(text)
        ids.extend(piece)
        mask.extend([trained] * len(piece))
    return ids, mask


def parse_reply(text: str) -> AssistantReply:
    """Split generated text (up to, not including, `<|end|>`) into content and tool calls.

    A tool call whose JSON does not parse stays in the content, so nothing is lost silently.
    """
    text = text.split(END, 1)[0]
    content_parts: list[str] = []
    calls: list[ToolCall] = []
    rest = text
    while TOOL_CALL in rest:
        before, after = rest.split(TOOL_CALL, 1)
        content_parts.append(before)
        body, sep, rest = after.partition(END_TOOL_CALL)
        try:
            data = json.loads(body)
            calls.append(ToolCall(name=str(data["name"]), arguments=dict(data["arguments"])))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            content_parts.append(TOOL_CALL + body + sep)
    content_parts.append(rest)
    return AssistantReply(content="".join(content_parts), tool_calls=calls)
