"""Benchmark of the embedded local model: load time, prompt and generation speed, seconds per agent turn
with the tools of a bundled-style environment, and first-call correctness on fixed single-turn prompts.

    python benchmarks/local_model_bench.py [--model local/qwen2.5-coder-1.5b] [--threads 2] [--out FILE]

It starts the model server (127.0.0.1 only), runs a handful of requests serially and stops it. The machine
is shared: the default run is small (one speed probe, six decision turns).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envscaler_mcp.providers import GenerationSettings, Message, ToolDef, get_provider


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> ToolDef:
    return ToolDef(name=name, description=description,
                   input_schema={"type": "object", "properties": properties, "required": required})


S = {"type": "string"}
# A bundled-style order-management environment (names, docstrings and schemas shaped like generated servers).
TOOLS = [
    _tool("get_order", "Return one order (status, items, total, shipping address) by its id.", {"order_id": S},
          ["order_id"]),
    _tool("list_orders", "List a customer's orders, newest first.",
          {"customer_email": S, "limit": {"type": "integer", "minimum": 1}}, ["customer_email"]),
    _tool("cancel_order", "Cancel an order that has not shipped yet.", {"order_id": S, "reason": S},
          ["order_id", "reason"]),
    _tool("update_shipping_address", "Change the shipping address of an order that has not shipped.",
          {"order_id": S, "address": S}, ["order_id", "address"]),
    _tool("get_customer", "Return a customer's profile by email.", {"customer_email": S}, ["customer_email"]),
]
SYSTEM = ("You are a customer-support agent for an online shop. Use the tools to act on the customer's orders. "
          "Call a tool whenever one fits.")
# (prompt, expected tool or None for "no call", expected argument values)
CASES: list[tuple[str, str | None, dict[str, Any]]] = [
    ("Where is my order A-1042?", "get_order", {"order_id": "A-1042"}),
    ("Please cancel order B-77, I ordered the wrong size.", "cancel_order", {"order_id": "B-77"}),
    ("Show me my last 3 orders. My email is jane@example.com.", "list_orders", {"customer_email": "jane@example.com"}),
    ("Ship order C-5 to 12 Rue de la Paix, Paris instead.", "update_shipping_address", {"order_id": "C-5"}),
    ("What name is on the account jane@example.com?", "get_customer", {"customer_email": "jane@example.com"}),
    ("Thanks a lot, that's all for today!", None, {}),
]


def speed_probe(base_url: str) -> dict[str, float]:
    """One uncached ~400-token prompt generating 64 tokens; llama.cpp's own timings."""
    filler = " ".join(f"Order {i} was placed on day {i % 28 + 1} and contains {i % 5 + 1} items." for i in range(28))
    body = {"messages": [{"role": "user", "content": filler + "\nSummarise these orders."}], "max_tokens": 64,
            "temperature": 0, "cache_prompt": False, "ignore_eos": True}
    response = httpx2.post(f"{base_url}/chat/completions", json=body, timeout=600)
    response.raise_for_status()
    t = response.json()["timings"]
    return {"prompt_tokens": t["prompt_n"], "prompt_tok_s": round(t["prompt_per_second"], 1),
            "generated_tokens": t["predicted_n"], "gen_tok_s": round(t["predicted_per_second"], 2)}


def judge(turn_calls: list[tuple[str, dict[str, Any]]], tool: str | None, args: dict[str, Any]) -> bool:
    """First-call correctness: the expected tool with the expected key arguments (or no call at all)."""
    if tool is None:
        return not turn_calls
    if not turn_calls:
        return False
    name, arguments = turn_calls[0]
    return name == tool and all(str(arguments.get(k, "")).lower() == str(v).lower() for k, v in args.items())


async def run(spec: str, threads: int, max_tokens: int) -> dict[str, Any]:
    """Run the whole benchmark and return the numbers."""
    provider = get_provider(spec, threads=threads)
    server = provider.server  # type: ignore[attr-defined]
    started = time.monotonic()
    from envscaler_mcp.providers.local.weights import ensure_weights

    await anyio.to_thread.run_sync(ensure_weights, provider.weights)  # type: ignore[attr-defined]
    assemble_s = time.monotonic() - started
    base_url = await anyio.to_thread.run_sync(server.ensure_started)
    result: dict[str, Any] = {"model": spec, "runtime": server.runtime, "threads": threads,
                              "assemble_or_verify_s": round(assemble_s, 2), "load_s": round(server.load_seconds, 2),
                              "cpu": platform.processor() or platform.machine(), "load_average": os.getloadavg()}
    result["speed"] = await anyio.to_thread.run_sync(speed_probe, base_url)
    turns = []
    for prompt, tool, args in CASES:
        messages = [Message(role="system", content=SYSTEM), Message(role="user", content=prompt)]
        t0 = time.monotonic()
        turn = await provider.complete(messages, TOOLS, GenerationSettings(max_tokens=max_tokens))
        calls = [(c.name, c.arguments) for c in turn.message.tool_calls]
        turns.append({"prompt": prompt, "seconds": round(time.monotonic() - t0, 1), "calls": calls,
                      "reply": turn.message.content[:120], "correct": judge(calls, tool, args),
                      "prompt_tokens": turn.usage.input_tokens, "cached_tokens": turn.usage.cached_tokens,
                      "output_tokens": turn.usage.output_tokens})
    result["turns"] = turns
    result["first_call_correct"] = f"{sum(t['correct'] for t in turns)}/{len(turns)}"
    result["seconds_per_turn_mean"] = round(sum(t["seconds"] for t in turns) / len(turns), 1)
    await provider.aclose()
    server.stop()
    return result


def main() -> None:
    """Command-line entry."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="local/qwen2.5-coder-1.5b")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=150)
    parser.add_argument("--out", type=Path, default=None, help="Also write the JSON result here.")
    args = parser.parse_args()
    os.environ.pop("ENVSCALER_MCP_BLOCK_REQUESTS", None)  # the server is on 127.0.0.1 only
    result = anyio.run(run, args.model, args.threads, args.max_tokens)
    text = json.dumps(result, indent=2, ensure_ascii=False)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
