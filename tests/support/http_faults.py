"""A real HTTP proxy in front of the API that misbehaves on cue, for the client's retry
tests: it answers some requests itself (429, 503 with a ``Retry-After``…), forwards
some and hangs up before answering (the API did the work, the client never hears of
it), and forwards the rest. It records every request it took (method, path, headers,
when) and the upstream's answer headers."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

import requests

from tests.support.receiver import Server

HOP_BY_HOP = {"host", "content-length", "connection", "keep-alive", "transfer-encoding", "accept-encoding"}


@dataclass(frozen=True)
class Answer:
    """Answer with this status (an error in the API's shape) without forwarding."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)


FORWARD = "forward"
FORWARD_THEN_HANG_UP = "forward-then-hang-up"  # the API acts; the client gets no answer
HANG_UP = "hang-up"  # the request is read, never forwarded, never answered


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    at: float  # time.monotonic() when the request was read
    action: object
    upstream_headers: dict[str, str] | None = None  # the API's answer headers, when forwarded


class FaultyProxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.seen: list[Seen] = []
        self._script: list[object] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with outer._lock:
                    action = outer._script.pop(0) if outer._script else FORWARD
                seen = Seen(self.command, self.path, dict(self.headers), time.monotonic(), action)
                if isinstance(action, Answer):
                    outer._record(seen)
                    return self._answer(action)
                if action == HANG_UP:
                    outer._record(seen)
                    self.close_connection = True
                    return None
                upstream = requests.request(
                    self.command,
                    outer.upstream + self.path,
                    data=body or None,
                    timeout=30,
                    allow_redirects=False,
                    headers={k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP},
                )
                outer._record(Seen(**{**seen.__dict__, "upstream_headers": dict(upstream.headers)}))
                if action == FORWARD_THEN_HANG_UP:
                    self.close_connection = True
                    return None
                self.send_response(upstream.status_code)
                for k, v in upstream.headers.items():
                    if k.lower() not in HOP_BY_HOP and k.lower() != "content-encoding":
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(upstream.content)))
                self.end_headers()
                self.wfile.write(upstream.content)
                return None

            def _answer(self, answer: Answer) -> None:
                payload = json.dumps(
                    {
                        "success": False,
                        "statusCode": answer.status,
                        "error": {
                            "code": {429: "RATE_LIMIT_EXCEEDED", 503: "SERVICE_UNAVAILABLE"}.get(
                                answer.status, "ERROR"
                            ),
                            "message": f"injected {answer.status}",
                            "status": answer.status,
                            "details": [],
                        },
                    }
                ).encode()
                self.send_response(answer.status)
                for k, v in answer.headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PATCH = do_DELETE = _handle

            def log_message(self, *args) -> None:
                pass

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1/api"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def script(self, *actions: object) -> None:
        """What to do with the next requests, in order (then forward everything)."""
        with self._lock:
            self._script = list(actions)

    def _record(self, seen: Seen) -> None:
        with self._lock:
            self.seen.append(seen)

    def requests_seen(self) -> list[Seen]:
        with self._lock:
            return list(self.seen)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
