"""Benchmark of the embedded local model: load time, prompt and generation speed, seconds per agent turn
with the tools of a bundled-style environment, and first-call correctness on fixed single-turn prompts.

    python benchmarks/local_model_bench.py [--model local/qwen2.5-coder-1.5b] [--threads 2] [--out FILE]
        [--env ecommerce_orders,it_helpdesk --cases 5] [--tools full,compact] [--sizes]

It starts the model server (127.0.0.1 only), runs a handful of requests serially and stops it. The machine
is shared: the default run is small (one speed probe, six decision turns).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envscaler_mcp.harness.prompts import EnvInfo, agent_system_prompt
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


def bundled_cases(env_id: str, count: int) -> tuple[list[ToolDef], str, list[tuple[str, str | None, dict[str, Any]]]]:
    """Tools of a bundled environment and its first scenarios: task -> first reference call (+ one chit-chat)."""
    root = Path(__file__).resolve().parents[1]
    skeleton = json.loads((root / "environments" / env_id / "skeleton.json").read_text())
    tools = [ToolDef(name=t["name"], description=t["description"], input_schema=t["input_schema"])
             for t in skeleton["tools"]]
    cases: list[tuple[str, str | None, dict[str, Any]]] = []
    for line in (root / "scenarios" / f"{env_id}.jsonl").read_text().splitlines():
        scenario = json.loads(line)
        if scenario.get("reference_solution") and len(cases) < count:
            first = scenario["reference_solution"][0]
            cases.append((scenario["task"], first["tool"], first["arguments"]))
    cases.append(("Thanks a lot, that's all for today!", None, {}))
    # the agent's system prompt exactly as `eval` builds it
    system = agent_system_prompt("task", EnvInfo(name=skeleton["name"], introduction=skeleton["introduction"],
                                                 rules=skeleton["rules"]))
    return tools, system, cases


# Fixture results for the agent-loop run over the built-in prompts.
LOOP_RESULTS = {
    "get_order": '{"success": true, "data": {"order_id": "A-1042", "status": "shipped", "eta_days": 2, "total": "54.00 EUR"}}',
    "cancel_order": '{"success": true, "message": "Order B-77 cancelled."}',
    "list_orders": '{"success": true, "data": [{"order_id": "A-1042", "status": "shipped", "total": "54.00 EUR"}, '
                   '{"order_id": "B-77", "status": "processing", "total": "29.90 EUR"}]}',
    "get_customer": '{"success": true, "data": {"name": "Jane Doe", "email": "jane@example.com"}}',
    "update_shipping_address": '{"success": true, "message": "Address updated."}',
}


async def agent_loops(provider: Any, max_tokens: int, max_steps: int = 4) -> list[dict[str, Any]]:
    """Each built-in task (not the "thanks") as an agent loop with fixture results, until a text answer."""
    tasks = []
    for prompt, _, _ in CASES[:-1]:
        messages = [Message(role="system", content=SYSTEM), Message(role="user", content=prompt)]
        t0, calls, answer = time.monotonic(), [], ""
        for _ in range(max_steps):
            turn = await provider.complete(messages, TOOLS, GenerationSettings(max_tokens=max_tokens))
            messages.append(turn.message)
            if not turn.message.tool_calls:
                answer = turn.message.content
                break
            for call in turn.message.tool_calls:
                calls.append((call.name, call.arguments))
                messages.append(Message(role="tool", tool_call_id=call.id, name=call.name,
                                        content=LOOP_RESULTS.get(call.name, '{"success": true}')))
        tasks.append({"prompt": prompt, "calls": calls, "answer": answer, "seconds": round(time.monotonic() - t0, 1)})
    return tasks


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


def prompt_sizes(base_url: str) -> list[dict[str, Any]]:
    """Tokens of each bundled environment's system prompt: the agent's prompt alone, then with the function
    list and decision rules, full (descriptions + JSON Schemas) and compact, and the compact list alone."""
    from envscaler_mcp.catalog.store import list_env_ids
    from envscaler_mcp.providers.local.prompt import DECISION_RULES, decision_system_prompt

    root = base_url.rsplit("/v1", 1)[0]

    def tokens(text: str) -> int:
        return len(httpx2.post(f"{root}/tokenize", json={"content": text}, timeout=60).json()["tokens"])

    rows = []
    for env_id in list_env_ids():
        tools, system, _ = bundled_cases(env_id, 0)
        compact = decision_system_prompt(system, tools, "compact")
        rows.append({"env": env_id, "tools": len(tools), "agent_prompt": tokens(system),
                     "full": tokens(decision_system_prompt(system, tools, "full")), "compact": tokens(compact),
                     "compact_function_list": tokens(compact[len(system):-len(DECISION_RULES)])})
    return rows


def judge(turn_calls: list[tuple[str, dict[str, Any]]], tool: str | None, args: dict[str, Any]) -> bool:
    """First-call correctness: the expected tool with the expected key arguments (or no call at all)."""
    if tool is None:
        return not turn_calls
    if not turn_calls:
        return False
    name, arguments = turn_calls[0]
    # identifiers, emails, enums and numbers must match; free text (a reason, a note) may be worded freely
    keys = [k for k, v in args.items() if not (isinstance(v, str) and " " in v.strip())]
    return name == tool and all(str(arguments.get(k, "")).lower() == str(args[k]).lower() for k in keys)


async def first_calls(provider: Any, env_id: str | None, count: int, max_tokens: int) -> dict[str, Any]:
    """First-call correctness on one set of single-turn prompts; the first turn is cold (new system prompt)."""
    tools, system, cases = bundled_cases(env_id, count) if env_id else (TOOLS, SYSTEM, CASES)
    turns = []
    for prompt, tool, args in cases:
        messages = [Message(role="system", content=system), Message(role="user", content=prompt)]
        t0 = time.monotonic()
        turn = await provider.complete(messages, tools, GenerationSettings(max_tokens=max_tokens))
        calls = [(c.name, c.arguments) for c in turn.message.tool_calls]
        turns.append({"prompt": prompt[:100], "seconds": round(time.monotonic() - t0, 1), "calls": calls,
                      "plan": turn.message.reasoning, "reply": turn.message.content[:120],
                      "correct": judge(calls, tool, args), "prompt_tokens": turn.usage.input_tokens,
                      "cached_tokens": turn.usage.cached_tokens, "output_tokens": turn.usage.output_tokens})
        print(json.dumps({"style": getattr(provider, "tool_style", ""), **turns[-1]}), file=sys.stderr, flush=True)
    warm = turns[1:] or turns
    return {"tools": env_id or "builtin", "n_tools": len(tools), "prompt_tokens": turns[0]["prompt_tokens"],
            "cold_first_turn_s": turns[0]["seconds"],
            "warm_turn_s_mean": round(sum(t["seconds"] for t in warm) / len(warm), 1),
            "first_call_correct": sum(t["correct"] for t in turns), "cases": len(turns), "turns": turns}


async def run(spec: str, threads: int, max_tokens: int, mode: str, env_ids: list[str | None], count: int,
              styles: list[str], loop: bool = False, sizes_only: bool = False) -> dict[str, Any]:
    """Run the whole benchmark and return the numbers."""
    provider = get_provider(spec, threads=threads)
    provider.mode = mode  # type: ignore[attr-defined]
    server = provider.server  # type: ignore[attr-defined]
    started = time.monotonic()
    from envscaler_mcp.providers.local.weights import ensure_weights

    await anyio.to_thread.run_sync(ensure_weights, provider.weights)  # type: ignore[attr-defined]
    assemble_s = time.monotonic() - started
    base_url = await anyio.to_thread.run_sync(server.ensure_started)
    result: dict[str, Any] = {"model": spec, "mode": mode, "runtime": server.runtime, "threads": threads,
                              "assemble_or_verify_s": round(assemble_s, 2), "load_s": round(server.load_seconds, 2),
                              "cpu": platform.processor() or platform.machine(), "load_average": os.getloadavg()}
    if sizes_only:
        result["prompt_sizes"] = await anyio.to_thread.run_sync(prompt_sizes, base_url)
        server.stop()
        return result
    result["speed"] = await anyio.to_thread.run_sync(speed_probe, base_url)
    runs = []
    for env_id in env_ids:  # the styles side by side on each tool set, same server, same cases
        for style in styles:
            provider.tool_style = style  # type: ignore[attr-defined]
            runs.append({"style": style, **await first_calls(provider, env_id, count, max_tokens)})
    result["runs"] = runs
    result["summary"] = {style: {"first_call_correct": f"{sum(r['first_call_correct'] for r in runs if r['style'] == style)}"
                                 f"/{sum(r['cases'] for r in runs if r['style'] == style)}",
                                 "prompt_tokens": [r["prompt_tokens"] for r in runs if r["style"] == style],
                                 "cold_first_turn_s": [r["cold_first_turn_s"] for r in runs if r["style"] == style],
                                 "warm_turn_s_mean": [r["warm_turn_s_mean"] for r in runs if r["style"] == style]}
                         for style in styles}
    if loop:
        provider.tool_style = styles[-1]  # type: ignore[attr-defined]
        result["agent_loops"] = await agent_loops(provider, max_tokens)
    await provider.aclose()
    server.stop()
    return result


def main() -> None:
    """Command-line entry."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="local/qwen2.5-coder-1.5b")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=300)
    parser.add_argument("--mode", choices=["decision", "native"], default="decision")
    parser.add_argument("--env", default=None,
                        help="Use bundled environments' tools and scenarios (comma list, e.g. ecommerce_orders,it_helpdesk).")
    parser.add_argument("--tools", default="compact",
                        help="Function-list renderings to compare side by side: compact, full or full,compact.")
    parser.add_argument("--cases", type=int, default=5, help="Scenarios taken from --env.")
    parser.add_argument("--loop", action="store_true", help="Also run the built-in tasks as agent loops.")
    parser.add_argument("--sizes", action="store_true",
                        help="Only count the tokens of every bundled environment's system prompt, full and compact.")
    parser.add_argument("--out", type=Path, default=None, help="Also write the JSON result here.")
    args = parser.parse_args()
    os.environ.pop("ENVSCALER_MCP_BLOCK_REQUESTS", None)  # the server is on 127.0.0.1 only
    # a fresh prompt cache: the first turn of each tool set is cold, as on a first run
    cache = tempfile.mkdtemp(prefix="local-model-bench-cache-")
    os.environ["ENVSCALER_MCP_PROMPT_CACHE_DIR"] = cache
    envs: list[str | None] = [e.strip() for e in args.env.split(",")] if args.env else [None]
    result = anyio.run(run, args.model, args.threads, args.max_tokens, args.mode, envs, args.cases,
                       [t.strip() for t in args.tools.split(",")], args.loop, args.sizes)
    shutil.rmtree(cache, ignore_errors=True)
    text = json.dumps(result, indent=2, ensure_ascii=False)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
