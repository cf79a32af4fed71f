"""Reading EnvScaler's trajectory files: which tool calls an agent made for a task, and what each returned.

Two item shapes are read, in a JSON list or a JSONL file:

* an SFT trajectory item: `{traj_type, task_info: {env_id, task_id, task}, tools, messages, user_messages,
  steps}`, `messages` being the conversation (a list, or a JSON string of one). FC style: assistant turns with
  `tool_calls: [{id, function: {name, arguments}}]` (arguments a JSON string or an object), each answered by
  a `{"role": "tool", "tool_call_id", "content"}` turn. Prompt mode: `<tool_call>{"name", "arguments"}
  </tool_call>` in an assistant turn's text, answered by a user turn with `<tool_response>...</tool_response>`;
* a rollout record: `{task_info, ..., trajectory: [{step, action: {name, arguments}, observation: {type,
  content}}, ...]}`.

EnvScaler's runner sends a tool's result back as `str()` of what the method returned, so a recorded result is
kept as that text. Calls to `chat_with_user` (the simulated user of conversational tasks) are not tool calls.
An item with no call at all (empty `messages` of tool calls, a `trajectory` without actions) is a trajectory: a
task that needs no call is solved by making none.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ijson
from pydantic import BaseModel, Field

from envscaler_mcp.errors import InputFileError

USER_ACTION = "chat_with_user"


class RecordedCall(BaseModel):
    """One tool call of a trajectory and the result text it got (None when none was recorded)."""

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: str | None = None


class Trajectory(BaseModel):
    """The tool calls an agent made for one EnvScaler task."""

    position: int = Field(description="Index of the item in its file.")
    env_id: str
    task_id: str | None = None
    task: str | None = None
    calls: list[RecordedCall] = Field(default_factory=list)


def _arguments(raw: Any) -> dict[str, Any] | None:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except ValueError:
            return None
    return raw if isinstance(raw, dict) else None


def _named_call(holder: Any) -> tuple[str, dict[str, Any]] | None:
    """(name, arguments) of a {name, arguments} object (an FC `function` or a rollout `action`), or None."""
    if not isinstance(holder, dict) or not isinstance(holder.get("name"), str):
        return None
    arguments = _arguments(holder.get("arguments", {}))
    return None if arguments is None else (holder["name"], arguments)


def _decoded(value: Any) -> Any:
    """A field EnvScaler may store as a JSON string of itself."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def _text(content: Any) -> str | None:
    if content is None:
        return None
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


_TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_TOOL_RESPONSE = re.compile(r"<tool_response>(.*?)</tool_response>", re.DOTALL)


def _from_messages(messages: list[Any]) -> list[RecordedCall] | str:
    """Calls of an FC conversation (`tool_calls`, answered by `role: tool` turns) or a prompt-mode one
    (`<tool_call>{"name", "arguments"}</tool_call>` in the assistant's text, answered by a user turn holding
    `<tool_response>...</tool_response>`)."""
    calls: list[RecordedCall] = []
    by_id: dict[str, RecordedCall] = {}
    unanswered: list[RecordedCall] = []  # prompt-mode calls waiting for their <tool_response>, in order
    for n, message in enumerate(messages):
        if not isinstance(message, dict):
            return f"message {n} is not an object"
        role, content = message.get("role"), message.get("content")
        if role == "assistant":
            fc = [tc.get("function") if isinstance(tc, dict) else None for tc in message.get("tool_calls") or []]
            prompted = [] if fc or not isinstance(content, str) else _TOOL_CALL.findall(content)
            for k, holder in enumerate(fc + [_decoded(text.strip()) for text in prompted]):
                named = _named_call(holder)
                if named is None:
                    return f"message {n} has a tool call without a name or with arguments that are not an object"
                if named[0] == USER_ACTION:
                    continue
                call = RecordedCall(tool=named[0], arguments=named[1])
                calls.append(call)
                if k < len(fc):
                    tc = message["tool_calls"][k]
                    by_id[str(tc.get("id", len(by_id)))] = call
                else:
                    unanswered.append(call)
        elif role == "tool":
            answered = by_id.get(str(message.get("tool_call_id")))
            if answered is not None:
                answered.result = _text(content)
        elif role == "user" and isinstance(content, str) and unanswered:
            for text in _TOOL_RESPONSE.findall(content):
                if unanswered:
                    unanswered.pop(0).result = text.strip()
    return calls


def _from_steps(steps: list[Any]) -> list[RecordedCall] | str:
    calls: list[RecordedCall] = []
    for n, step in enumerate(steps):
        action = step.get("action") if isinstance(step, dict) else None
        if action is None:
            continue  # the initial record (step 0) has no action
        named = _named_call(action)
        if named is None:
            return f"step {n} has an action without a name or with arguments that are not an object"
        if named[0] == USER_ACTION:
            continue
        observation = step.get("observation")
        result = observation.get("content") if isinstance(observation, dict) and observation.get(
            "type") == "tool" else None
        calls.append(RecordedCall(tool=named[0], arguments=named[1], result=_text(result)))
    return calls


def trajectory_from_item(position: int, item: Any) -> Trajectory | str:
    """A Trajectory, or why the item is not one (a short reason)."""
    if not isinstance(item, dict):
        return "not an object"
    info = item.get("task_info")
    if not isinstance(info, dict) or not isinstance(info.get("env_id"), str):
        return "no task_info.env_id"
    steps, messages = item.get("trajectory"), _decoded(item.get("messages"))
    if isinstance(steps, list) and any(isinstance(s, dict) and "action" in s for s in steps):
        calls = _from_steps(steps)
    elif isinstance(messages, list):
        calls = _from_messages(messages)
    elif isinstance(steps, list):  # a rollout that made no call: a task that needs none is solved by doing nothing
        calls = []
    else:
        return "neither 'messages' nor 'trajectory' holds the calls"
    if isinstance(calls, str):
        return calls
    task_id = info.get("task_id")
    return Trajectory(position=position, env_id=info["env_id"], task_id=None if task_id is None else str(task_id),
                      task=info.get("task") if isinstance(info.get("task"), str) else None, calls=calls)


def iter_trajectories(path: Path) -> Iterator[tuple[int, Trajectory | str]]:
    """(position, Trajectory or the reason the item is not one) for each item of a JSON list or JSONL file,
    read one item at a time. A file that is neither raises InputFileError."""
    path = Path(path)
    if not path.is_file():
        raise InputFileError(path, "file not found")
    with path.open("rb") as f:
        head = f.read(4096).lstrip()[:1]
        f.seek(0)
        if head == b"[":
            try:
                for i, item in enumerate(ijson.items(f, "item", use_float=True)):
                    yield i, trajectory_from_item(i, item)
            except ijson.JSONError as exc:
                raise InputFileError(path, f"not valid JSON: {str(exc).splitlines()[0]}") from exc
            return
        if head != b"{":
            raise InputFileError(path, "expected a JSON list of trajectory items or one item per line (JSONL)")
        for i, line in enumerate(f):
            if not line.strip():
                continue
            try:
                yield i, trajectory_from_item(i, json.loads(line))
            except ValueError as exc:
                raise InputFileError(path, f"line {i + 1} is not valid JSON: {exc}") from exc
