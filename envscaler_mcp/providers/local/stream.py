"""One streamed chat request to the local llama.cpp server, reporting its progress as it goes.

llama.cpp sends `prompt_progress` events while it reads the prompt (with `return_progress`), then one chunk
per generated token, then the usage and its `timings`. Every event updates the server's `ModelActivity`, so
the run's progress line shows what the model is doing; the timings feed the measured speed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from envscaler_mcp.providers.local.activity import ModelActivity


@dataclass
class StreamedAnswer:
    """What a streamed chat completion added up to."""

    content: str = ""
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    timings: dict[str, Any] = field(default_factory=dict)


def _extra(obj: Any, name: str) -> Any:
    """A field llama.cpp adds to the OpenAI chunk (kept by the SDK's models as an extra attribute)."""
    extra = getattr(obj, "model_extra", None) or {}
    return extra.get(name, getattr(obj, name, None) if not isinstance(obj, dict) else obj.get(name))


LLAMA_FIELDS = ("grammar",)


async def stream_chat(client: Any, body: dict[str, Any], activity: ModelActivity, timeout_s: float) -> StreamedAnswer:
    """Send `body` as a streamed chat completion and collect the answer, updating `activity` on every event."""
    answer = StreamedAnswer()
    parts: list[str] = []
    activity.set("reading")
    # llama.cpp's own fields (a grammar) travel beside the OpenAI ones
    standard = {k: v for k, v in body.items() if k not in LLAMA_FIELDS}
    extra = {"return_progress": True, **{k: v for k, v in body.items() if k in LLAMA_FIELDS}}
    stream = await client.chat.completions.create(
        **standard, stream=True, stream_options={"include_usage": True}, extra_body=extra, timeout=timeout_s)
    try:
        async for chunk in stream:
            progress = _extra(chunk, "prompt_progress")
            if isinstance(progress, dict):
                activity.prompt_progress(progress)
            for choice in chunk.choices or []:
                text = getattr(choice.delta, "content", None) if choice.delta is not None else None
                if text:
                    parts.append(text)
                    activity.token()
                if choice.finish_reason:
                    answer.finish_reason = choice.finish_reason
            usage = getattr(chunk, "usage", None)
            if usage is not None:
                answer.prompt_tokens = usage.prompt_tokens or 0
                answer.completion_tokens = usage.completion_tokens or 0
                details = getattr(usage, "prompt_tokens_details", None)
                answer.cached_tokens = getattr(details, "cached_tokens", 0) or 0
            timings = _extra(chunk, "timings")
            if isinstance(timings, dict):
                answer.timings = timings
    finally:
        await stream.close()
        activity.set("idle")
    if answer.timings:
        activity.timings(answer.timings)
        answer.cached_tokens = answer.cached_tokens or int(answer.timings.get("cache_n", 0) or 0)
    answer.content = "".join(parts)
    return answer
