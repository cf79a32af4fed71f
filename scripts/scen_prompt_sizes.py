"""Prompt sizes of ScenGenerator's steps per bundled environment, as sent to a model with a given context window
(the embedded model's 8,192 tokens by default) and as sent to a model whose window is not known (unshortened).

Each step is rendered through the real step function with a scripted provider that records the request and
answers nothing; the state is the environment's default state and the task its first bundled scenario's. With
--tokenize URL (a running llama.cpp server, e.g. the embedded model's) the prompts are also counted by the
model's own tokenizer; otherwise the counts are the pipeline's estimate (synth/_common_fit.py).

    .venv/bin/python scripts/scen_prompt_sizes.py [--window 8192] [--tokenize http://127.0.0.1:PORT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import urllib.request
from collections.abc import Awaitable, Callable
from typing import Any

from envscaler_mcp.catalog.store import get_skeleton, list_env_ids, scenarios_for
from envscaler_mcp.errors import ProviderError
from envscaler_mcp.providers.base import Message
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.skeleton.models import EnvSkeleton
from envscaler_mcp.synth._common_fit import estimate_tokens
from envscaler_mcp.synth.llm import StepFailed, UsageMeter
from envscaler_mcp.synth.scen.steps import StepContext, gen_solution, gen_state, gen_task, gen_validators

STEPS = ("states", "task", "validators", "solution")


async def first_request(skeleton: EnvSkeleton, step: str, window: int | None) -> tuple[list[Message], int | None]:
    """The messages and max_tokens of the step's first request (None, None when the step refused to send)."""
    provider = MockProvider([], spec="mock/sizes", context_tokens=window)
    ctx = StepContext(skeleton=skeleton, generator=provider, solver=provider)
    state = skeleton.default_state or {}
    scenario = scenarios_for(skeleton.id)[0]
    calls: dict[str, Callable[[], Awaitable[Any]]] = {
        "states": lambda: gen_state(ctx, 0, 2, UsageMeter()),
        "task": lambda: gen_task(ctx, state, UsageMeter()),
        "validators": lambda: gen_validators(ctx, state, scenario.task, scenario.checklist, UsageMeter()),
        "solution": lambda: gen_solution(ctx, state, scenario.task, UsageMeter()),
    }
    try:
        await calls[step]()
    except (ProviderError, StepFailed):
        pass
    if not provider.requests:
        return [], None
    messages, _, settings = provider.requests[0]
    return messages, settings.max_tokens


def tokenize(url: str, messages: list[Message]) -> int:
    """Tokens of the messages' text by the server's tokenizer, plus the chat template's few per message."""
    total = 0
    for message in messages:
        body = json.dumps({"content": message.content}).encode()
        request = urllib.request.Request(f"{url}/tokenize", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as response:
            total += len(json.loads(response.read())["tokens"]) + 5
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--window", type=int, default=8192)
    parser.add_argument("--tokenize", default=None, help="base URL of a llama.cpp server to count tokens exactly")
    args = parser.parse_args()
    header = ["environment", "step", "chars (whole)", "tokens (whole)", "chars (fitted)", "tokens (fitted)",
              "max_tokens"]
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for env_id in list_env_ids():
        skeleton = get_skeleton(env_id)
        for step in STEPS:
            whole, _ = asyncio.run(first_request(skeleton, step, None))
            fitted, max_tokens = asyncio.run(first_request(skeleton, step, args.window))

            def count(messages: list[Message]) -> str:
                if not messages:
                    return "refused"
                return str(tokenize(args.tokenize, messages)) if args.tokenize else f"~{estimate_tokens(messages)}"

            chars = [sum(len(m.content) for m in ms) for ms in (whole, fitted)]
            print(f"| {env_id} | {step} | {chars[0]} | {count(whole)} | {chars[1]} | {count(fitted)} | {max_tokens} |")


if __name__ == "__main__":
    main()
