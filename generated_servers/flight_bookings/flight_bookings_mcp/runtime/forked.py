"""Episodes in processes of their own (`--episode-process fork`), for environment code nobody vouches for:
the server's side (ForkedEpisode, Zygote) and the framing both sides speak. The zygote is zygote.py.

At start, before the admin token is read and before any environment code runs, the server forks a zygote.
The zygote forgets the token (its copies in the process's environment are overwritten, not just unset), then
prepares the environment without running it: it compiles environment.py once (compiling runs nothing) and
imports the standard library modules that file names (from Python's own library, never the server folder).
For each new episode a thread of the zygote forks the episode's process: that closes every descriptor but its
own channel, runs the compiled module, builds the episode at its initial state and serves it over a socket pair
whose other end goes to the server (passed over the zygote's channel). The thread only waits for the server to
close that channel (or for the process to end). The zygote itself never runs environment code, so nothing the
code plants can follow later episodes or keep a copy of their channels.

So an episode's code sees its own state, the package's public data (spec, scenarios, state files) and
nothing else: not another episode's state (another process), not the admin token (never in its memory),
not the server's memory (every process is non-dumpable: no /proc/<pid>/mem for its uid). An episode's
process ends when the server closes its channel (the episode is closed, or a call never answered): the
zygote's thread that forked it ends and the kernel kills it (its parent-death signal fires when that thread
ends; its seccomp filter keeps the signal set), even if it blocks every signal and reads nothing; likewise
when the zygote ends, and the zygote ends with the server. The kernel reaps them (SIGCHLD ignored in the
zygote, a subreaper): none is left behind. An answer announcing more than
FRAME_MAX bytes loses its episode and costs the server nothing; so does a tool's answer that is not a JSON object.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from typing import Any

from .episode import CallOutcome
from .framing import FRAME_MAX, GRACE_S, HEADER, REPLY_MAX, ForkRefused, receive, send

__all__ = ["FRAME_MAX", "GRACE_S", "ForkRefused", "ForkedEpisode", "Zygote", "receive", "send"]


def _json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


async def _aframe(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> bytes | None:
    """One framed message from an episode's process; None once it has closed or announced over FRAME_MAX."""
    header = await _aexactly(loop, sock, HEADER.size)
    if header is None or HEADER.unpack(header)[0] > FRAME_MAX:
        return None
    return await _aexactly(loop, sock, HEADER.unpack(header)[0])


async def _aexactly(loop: asyncio.AbstractEventLoop, sock: socket.socket, size: int) -> bytes | None:
    buffer = bytearray(size)
    view, got = memoryview(buffer), 0
    while got < size:
        n = await loop.sock_recv_into(sock, view[got:])
        if not n:
            return None
        got += n
    return bytes(buffer)


async def exchange(sock: socket.socket, data: bytes) -> bytes | None:
    """Send one message and wait for the answer (None: the other end closed or announced too much)."""
    loop = asyncio.get_running_loop()
    await loop.sock_sendall(sock, HEADER.pack(len(data)) + data)
    return await _aframe(loop, sock)


# ---- the server's side ----

class ForkedEpisode:
    """An episode served by a process of its own; the same `run`, `read_state_json` and `close` as Episode."""

    def __init__(self, sock: socket.socket, episode_id: str, pid: int, answer_within: float | None) -> None:
        self.sock = sock
        self.episode_id = episode_id
        self.pid = pid
        self.created_at = time.time()
        self.calls = 0
        self.answer_within = answer_within
        self._lock: asyncio.Lock | None = None

    async def _ask(self, data: bytes) -> bytes | None:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self.sock.fileno() < 0:
                return None
            try:
                return await asyncio.wait_for(exchange(self.sock, data), self.answer_within)
            except (TimeoutError, OSError):
                self.close()  # a half-read answer cannot be resumed: the episode is lost
                return None

    async def run(self, name: str, arguments: dict[str, Any], timeout: float | None) -> CallOutcome:
        """Run one tool call in the episode's process."""
        self.calls += 1
        answer = await self._ask(json.dumps({"name": name, "arguments": arguments}).encode())
        if not answer or answer[:1] not in (b"E", b"R", b"K"):
            self.close()
            return CallOutcome(text=f"Tool '{name}' ended the episode's process (or it stopped answering); the "
                                    "episode's state is lost.", is_error=True, rolled_back=True)
        text = answer[1:].decode("utf-8", errors="replace")
        if answer[:1] == b"E":
            return CallOutcome(text=text, is_error=True, rolled_back=True)
        if not _json_object(text):  # the runtime there encodes a dict: environment code broke the protocol
            self.close()
            return CallOutcome(text=f"Tool '{name}' answered with something that is not a JSON object; the "
                                    "episode's state is lost.", is_error=True, rolled_back=True)
        return CallOutcome(text=text, is_error=False, rolled_back=answer[:1] == b"R")

    async def read_state_json(self) -> str:
        """The episode's state as JSON text; RuntimeError when its process is gone."""
        answer = await self._ask(b"state")
        if answer is None:
            raise RuntimeError(f"the process of episode '{self.episode_id}' has ended; its state is lost")
        return answer.decode("utf-8")

    def close(self) -> None:
        """Close the channel: the episode's process ends when it next reads."""
        self.sock.close()


class Zygote:
    """The server's handle on its zygote: `fork_episode` returns a new episode served by a process of its own."""

    def __init__(self, sock: socket.socket, pid: int, call_timeout: float | None, grace: float = GRACE_S) -> None:
        self.sock = sock
        self.pid = pid
        # a tool call ends within its timeout (the episode's process stops it); this is for a process that hangs
        self.answer_within = None if call_timeout is None else call_timeout * 2 + grace

    def _request(self, request: dict[str, Any]) -> socket.socket:
        try:
            send(self.sock, json.dumps(request).encode())
            data, fds, _flags, _addr = socket.recv_fds(self.sock, REPLY_MAX, 1)
        except OSError as exc:
            raise ForkRefused(503, f"the episode zygote is gone ({exc})") from None
        if not data:
            raise ForkRefused(503, "the episode zygote is gone")
        reply = json.loads(data)
        if not fds:
            raise ForkRefused(int(reply.get("status", 500)), str(reply.get("message", "no episode")))
        return socket.socket(fileno=fds[0])

    def fork_episode_now(self, request: dict[str, Any], episode_id: str) -> ForkedEpisode:
        """Blocking (at start, before the event loop runs): a new episode, once its process has built it."""
        sock = self._request(request)
        sock.settimeout(self.answer_within)
        try:
            ready = receive(sock, FRAME_MAX)
        except OSError:
            ready = None
        sock.settimeout(None)
        return self._ready(sock, ready, episode_id)

    async def fork_episode(self, request: dict[str, Any], episode_id: str) -> ForkedEpisode:
        """A new episode, once its process has built it. Raises ForkRefused."""
        sock = self._request(request)  # a fork: a few milliseconds; the zygote never learns episode ids
        sock.setblocking(False)
        try:
            ready = await asyncio.wait_for(_aframe(asyncio.get_running_loop(), sock), self.answer_within)
        except (TimeoutError, OSError):
            ready = None
        return self._ready(sock, ready, episode_id)

    def _ready(self, sock: socket.socket, ready: bytes | None, episode_id: str) -> ForkedEpisode:
        answer = json.loads(ready) if ready else {"error": "its process ended before it was built"}
        if "error" in answer:
            sock.close()
            raise ForkRefused(400, f"could not create the episode: {answer['error']}")
        sock.setblocking(False)
        return ForkedEpisode(sock, episode_id, int(answer["pid"]), self.answer_within)
