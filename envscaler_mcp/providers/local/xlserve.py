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
    if args.slot_save_path:
        params.slot_save_path = args.slot_save_path
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
