"""A real HTTP webhook receiver on 127.0.0.1: records every request's headers and raw body,
and can be told to answer 500 for the next N requests."""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Received:
    headers: dict[str, str]
    body: bytes
    status: int

    @property
    def json(self) -> dict:
        return json.loads(self.body)


class Receiver:
    def __init__(self) -> None:
        self.received: list[Received] = []
        self._fail_next = 0
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with receiver._lock:
                    status = 500 if receiver._fail_next > 0 else 200
                    receiver._fail_next = max(receiver._fail_next - 1, 0)
                    receiver.received.append(Received(dict(self.headers), body, status))
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}/hooks"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def fail_next(self, n: int) -> None:
        with self._lock:
            self._fail_next = n

    def events(self, event_type: str | None = None, payment_id: str | None = None) -> list[Received]:
        with self._lock:
            items = list(self.received)
        return [r for r in items
                if (event_type is None or r.json["event"] == event_type)
                and (payment_id is None or r.json["data"].get("payment_id") == payment_id)]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
