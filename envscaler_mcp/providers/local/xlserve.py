"""Child-process entry that serves a GGUF model over llama.cpp's OpenAI-compatible HTTP API with `xllamacpp`.

Started by `server.py` as `python -m envscaler_mcp.providers.local.xlserve --model ... --port ...`; it binds
127.0.0.1 only and exits when its parent process goes away or on SIGTERM.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    """Parse the flags, load the model, serve until the parent is gone."""
    parser = argparse.ArgumentParser(prog="xlserve")
    parser.add_argument("--model", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ctx", type=int, default=8192)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--flash-attn", choices=["auto", "on", "off"], default="auto")
    parser.add_argument("--kv-type", choices=["f16", "q8_0"], default="f16")
    parser.add_argument("--poll", type=int, default=50, help="Busy-wait level of idle threads (0-100).")
    parser.add_argument("--slot-save-path", default=None)
    parser.add_argument("--chat-template-file", default=None)
    args = parser.parse_args(argv)

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.n_ctx = args.ctx
    params.n_parallel = 1
    params.n_batch = args.batch
    params.n_ubatch = args.batch
    params.flash_attn_type = {"auto": xllamacpp.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_AUTO,
                              "on": xllamacpp.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_ENABLED,
                              "off": xllamacpp.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED}[args.flash_attn]
    kv = xllamacpp.ggml_type.GGML_TYPE_Q8_0 if args.kv_type == "q8_0" else xllamacpp.ggml_type.GGML_TYPE_F16
    params.cache_type_k = kv
    params.cache_type_v = kv
    params.cpuparams.poll = args.poll
    params.cpuparams_batch.poll = args.poll
    if args.slot_save_path:
        # llama.cpp's own flag parser adds the trailing separator; the file name is appended to this string
        params.slot_save_path = os.path.join(args.slot_save_path, "")
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.use_jinja = True
    params.cache_prompt = True
    params.ui = False
    params.endpoint_props = True
    params.endpoint_slots = True
    if args.chat_template_file:
        params.chat_template = Path(args.chat_template_file).read_text(encoding="utf-8")

    parent = os.getppid()
    stop = False

    def _on_signal(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    server = xllamacpp.Server(params)
    print(f"listening on {server.listening_address}", flush=True)
    while not stop and os.getppid() == parent:
        time.sleep(0.5)
    del server
    return 0


if __name__ == "__main__":
    sys.exit(main())
