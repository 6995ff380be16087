"""A real HTTP webhook receiver on 127.0.0.1: records every request (path, headers, raw
body, the status it answered) and can be told to fail the next N requests, or to be down
(503 to everything) until told otherwise.

The merchant's endpoint of the tests (tests/support/receiver.py), the benchmarks and the
chaos harness: one receiver, in the development package, which the product never imports."""

from __future__ import annotations

import json
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Hit:
    path: str
    headers: dict[str, str]
    body: bytes
    status: int
    at: float = 0.0  # time.time() once the request was read (the answer follows at once unless delayed)

    @property
    def json(self) -> dict:
        return json.loads(self.body)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog of 5 drops the SYNs of a burst of new connections (a sender
    # opening its pool): each dropped one waits for the kernel's 1 s, 3 s... retransmission
    request_queue_size = 1024

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)  # a client hanging up is not news


class Receiver:
    """Records every POST; answers ``status`` for the next ``n`` requests after ``fail(n)`` (only
    to requests for ``event`` when it is given: other events in flight do not use them up), and
    503 to every request while ``down`` is set, as a merchant's server in trouble would."""

    def __init__(self) -> None:
        self.hits: list[Hit] = []
        self._failures: list[int] = []
        self._fail_event: str | None = None
        self.delay = 0.0  # seconds to wait before answering
        self.down = threading.Event()  # while set: 503 to everything (recorded, fail() untouched)
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real receivers do
            disable_nagle_algorithm = True  # headers and body are separate writes

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                if len(body) < length:  # the sender died mid-request: nothing was delivered
                    self.close_connection = True
                    return
                with outer._lock:
                    failing = outer._failures and outer._fail_event in (None, self.headers.get("X-Kassa-Event"))
                    if outer.down.is_set():
                        status = 503
                    else:
                        status = outer._failures.pop(0) if failing else 200
                    outer.hits.append(Hit(self.path, dict(self.headers), body, status, time.time()))
                time.sleep(outer.delay)
                reply = b"nope" if status >= 300 else b"ok"
                self.send_response(status)
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args) -> None:
                pass

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def fail(self, n: int, status: int = 500, event: str | None = None) -> None:
        with self._lock:
            self._failures = [status] * n
            self._fail_event = event

    def all(self) -> list[Hit]:
        with self._lock:
            return list(self.hits)

    def count(self) -> int:
        with self._lock:
            return len(self.hits)

    def for_delivery(self, delivery_id) -> list[Hit]:
        return [h for h in self.all() if h.headers.get("X-Kassa-Delivery-Id") == str(delivery_id)]

    def events(self, event_type: str | None = None, payment_id: str | None = None) -> list[Hit]:
        return [
            h
            for h in self.all()
            if (event_type is None or h.json["event"] == event_type)
            and (payment_id is None or h.json["data"].get("payment_id") == payment_id)
        ]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
