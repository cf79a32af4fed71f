"""What both ends of an episode zygote's channels speak, the server's (forked.py) and the zygote's (zygote.py):
frames of an 8-byte length and the bytes, and the refusal of an episode. Standard library only and no event
loop, so that the zygote, an interpreter of its own where the launcher starts it small, imports little."""

from __future__ import annotations

import socket
import struct

HEADER = struct.Struct("!Q")
REPLY_MAX = 65536
# The largest answer the server reads from an episode's process (a tool result or a final state); a longer
# frame is the episode's process misbehaving: its episode is lost, the server allocates nothing for it.
FRAME_MAX = 64 << 20
# How long beyond twice the call timeout the server waits for an episode's process (a call, or building the
# episode) before it gives up on it and its process ends (`--answer-grace`).
GRACE_S = 30.0


class ForkRefused(Exception):
    """An episode could not be created; `status` is the HTTP status the REST admin API answers with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


# ---- framing: an 8-byte length, then the bytes ----

def send(sock: socket.socket, data: bytes) -> None:
    sock.sendall(HEADER.pack(len(data)))
    sock.sendall(data)


def _exactly(sock: socket.socket, size: int) -> bytes | None:
    buffer = bytearray(size)
    view, got = memoryview(buffer), 0
    while got < size:
        n = sock.recv_into(view[got:])
        if not n:
            return None
        got += n
    return bytes(buffer)


def receive(sock: socket.socket, limit: int | None = None) -> bytes | None:
    """One framed message; None once the other end has closed (or announced more than `limit` bytes)."""
    header = _exactly(sock, HEADER.size)
    if header is None or (limit is not None and HEADER.unpack(header)[0] > limit):
        return None
    return _exactly(sock, HEADER.unpack(header)[0])
