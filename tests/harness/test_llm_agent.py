"""An episode driven by the real OpenAI chat adapter (real SDK client, HTTP answered in process by a fixture
transport): tool calls, a malformed call, usage, and a provider outage recorded as an infra error."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai
import pytest

from envscaler_mcp.harness.checks import SandboxChecker
from envscaler_mcp.harness.episode import run_episode
from envscaler_mcp.harness.models import EpisodeConfig
from envscaler_mcp.providers import get_provider
from tests.harness.shop import BOB, ENV_INFO

pytestmark = pytest.mark.anyio


def _completion(content: str | None, calls: tuple[tuple[str, str, str], ...] = ()) -> dict[str, Any]:
    """A chat.completion body shaped like the documented API answer (fixture)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls
        ]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4.1",
        "choices": [{"index": 0, "finish_reason": "tool_calls" if calls else "stop", "message": message}],
        "usage": {"prompt_tokens": 500, "completion_tokens": 40, "total_tokens": 540},
    }


class _Api:
    """Answers chat.completions requests from a queue and records the request bodies."""

    def __init__(self, answers: list[tuple[int, dict[str, Any]]]) -> None:
        self.answers, self.requests = answers, []  # type: ignore[var-annotated]

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(json.loads(request.content))
        status, body = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return httpx2.Response(status, json=body)

    def provider(self) -> Any:
        client = openai.AsyncOpenAI(
            api_key="test-key",
            max_retries=0,
            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(self.handle)),
        )
        return get_provider("openai/gpt-4.1", client=client, retries=1, backoff_base_s=0.0)


async def test_a_chat_model_solves_the_task_through_the_adapter(server: Any, checker: SandboxChecker) -> None:
    first = _completion(
        None,
        (
            ("c1", "cancel_order", '{"order_id": "O-1002"'),  # cut-off JSON
            ("c2", "cancel_order", '{"order_id": "O-1002"}'),
        ),
    )
    second = _completion(
        None, (("c3", "add_note", '{"order_id": "O-1002", "text": "Customer changed mind"}'),)
    )
    api = _Api([(200, first), (200, second), (200, _completion("Cancelled O-1002 and added the note."))])
    result = await run_episode(BOB, source=server, agent=api.provider(), checker=checker, env_info=ENV_INFO)
    assert result.status == "completed" and result.success is True and result.agent_model == "openai/gpt-4.1"
    assert result.tool_calls == 3 and result.tool_errors == 1
    assert result.agent_usage.input_tokens == 1500 and result.agent_usage.output_tokens == 120
    sent = api.requests[1]
    assert sent["messages"][0]["role"] == "system" and sent["messages"][1]["content"] == BOB.task
    tool_replies = [m for m in sent["messages"] if m["role"] == "tool"]
    assert tool_replies[0]["tool_call_id"] == "c1" and tool_replies[0]["content"].startswith("ERROR: ")
    assert [t["function"]["name"] for t in sent["tools"]][:2] == ["get_order", "list_orders"]


async def test_a_provider_outage_is_an_infra_error(server: Any, checker: SandboxChecker) -> None:
    api = _Api([(503, {"error": {"message": "overloaded", "type": "server_error"}})])
    result = await run_episode(
        BOB,
        source=server,
        agent=api.provider(),
        checker=checker,
        config=EpisodeConfig(infra_retries=1, infra_backoff_s=0),
    )
    assert result.status == "infra_error" and result.score is None and result.attempts == 2
    assert "ProviderUnavailable" in (result.infra_reason or "") and len(api.requests) == 4  # 2 attempts x 2 tries
