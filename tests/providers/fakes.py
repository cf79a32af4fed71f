"""Fakes of the provider tests: real SDK clients whose HTTP goes to an in-process fake (httpx2.MockTransport).

Every response body here is a hand-written fixture shaped like the vendors' documented answers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import httpx2


@dataclass
class FakeServer:
    """Answers requests from a queue of (status, body) pairs and records every request body."""

    answers: list[tuple[int, dict[str, Any] | str]] = field(default_factory=list)  # str: a text/event-stream body
    requests: list[dict[str, Any]] = field(default_factory=list)
    repeat_last: bool = False

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(json.loads(request.content or b"{}"))
        if not self.answers:
            raise AssertionError("fake server: no answer queued for this request")
        status, body = self.answers[0] if (self.repeat_last and len(self.answers) == 1) else self.answers.pop(0)
        if isinstance(body, str):
            return httpx2.Response(status, text=body, headers={"content-type": "text/event-stream"})
        return httpx2.Response(status, json=body)

    def http_client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self.handler))


def openai_completion(content: str | None = None, tool_calls: list[tuple[str, str, str]] = (),  # type: ignore[assignment]
                      *, prompt: int = 100, completion: int = 20, cached: int = 0, finish: str | None = None,
                      extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """A chat.completion body; tool_calls are (id, name, arguments JSON text)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [{"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                                 for i, n, a in tool_calls]
    message.update(extra or {})
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "fixture",
            "choices": [{"index": 0, "finish_reason": finish or ("tool_calls" if tool_calls else "stop"),
                         "message": message}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                      "prompt_tokens_details": {"cached_tokens": cached}}}


def llama_stream(content: str, *, prompt: int = 100, completion: int = 20, cached: int = 0,
                 finish: str = "stop", pieces: int = 3) -> str:
    """A streamed chat completion as llama.cpp's server sends it with `return_progress` and
    `stream_options.include_usage` (shape copied from llama-server b10434's output): prompt_progress
    events, content deltas, the finish chunk, then usage with llama.cpp's `timings`."""
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "fixture"}
    empty = [{"finish_reason": None, "index": 0, "delta": {"role": "assistant", "content": None}}]
    events = [{**base, "choices": empty, "prompt_progress": {"total": prompt, "cache": cached, "processed": p,
                                                             "time_ms": 0 if p == cached else 1000}}
              for p in (cached, prompt)]
    step = max(1, -(-len(content) // pieces))
    events += [{**base, "choices": [{"finish_reason": None, "index": 0, "delta": {"content": content[i:i + step]}}]}
               for i in range(0, len(content), step)]
    events.append({**base, "choices": [{"finish_reason": finish, "index": 0, "delta": {}}]})
    events.append({**base, "choices": [], "usage": {"completion_tokens": completion, "prompt_tokens": prompt,
                                                    "total_tokens": prompt + completion,
                                                    "prompt_tokens_details": {"cached_tokens": cached}},
                   "timings": {"cache_n": cached, "prompt_n": prompt - cached, "prompt_ms": 1000.0,
                               "prompt_per_second": float(prompt - cached), "predicted_n": completion,
                               "predicted_ms": 2000.0, "predicted_per_second": completion / 2.0}})
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"


def anthropic_message(blocks: list[dict[str, Any]], *, stop: str = "end_turn", input_tokens: int = 100,
                      output_tokens: int = 20, cache_read: int = 0) -> dict[str, Any]:
    """A messages-API Message body."""
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "fixture", "content": blocks,
            "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                      "cache_read_input_tokens": cache_read, "cache_creation_input_tokens": 0}}


def error_body(message: str = "boom") -> dict[str, Any]:
    return {"error": {"type": "error", "message": message}}


