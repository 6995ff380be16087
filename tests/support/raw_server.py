"""A raw TCP server standing in for a webhook receiver, with the ways it misbehaves: one that
drips its answer a byte at a time, one that never answers, one that answers a status."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

DRIP_EVERY = 2.0


class RawServer:
    """A TCP server running ``behave(conn)`` for each connection, in a thread of its own."""

    def __init__(self, behave: Callable[[socket.socket], None]) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(50)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/hook"
        self.behave, self.closed = behave, threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.closed.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        try:
            _read_request(conn)
            self.behave(conn)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.closed.set()
        self.sock.close()


def _read_request(conn: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")), 0
    )
    while len(body) < length:
        body += conn.recv(65536)


def drip(text: bytes, every: float = DRIP_EVERY, closed: threading.Event | None = None) -> Callable:
    def behave(conn: socket.socket) -> None:
        for i in range(len(text)):
            conn.sendall(text[i : i + 1])
            time.sleep(every)

    return behave


def silent(conn: socket.socket) -> None:
    time.sleep(60)  # reads the request, never answers


def answer(status: int) -> Callable:
    def behave(conn: socket.socket) -> None:
        conn.sendall(f"HTTP/1.1 {status} X\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno".encode())

    return behave
