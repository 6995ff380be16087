"""The webhook HTTP transport against real sockets: failures come back as results."""
from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kassa_webhook_sender.transport import MAX_RESPONSE_BODY, Request, Transport, sanitize_url


class Server:
    """Answers POSTs with ``status`` and ``reply`` after ``delay`` seconds."""

    def __init__(self, status: int = 200, reply: bytes = b"ok", delay: float = 0.0) -> None:
        self.requests: list[tuple[str, dict, bytes]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.requests.append((self.path, dict(self.headers), body))
                time.sleep(delay)
                self.send_response(status)
                if 300 <= status < 400:
                    self.send_header("Location", "http://127.0.0.1:1/elsewhere")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/in"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server_factory():
    servers: list[Server] = []

    def make(**kw) -> Server:
        servers.append(Server(**kw))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def req(url: str, body: bytes = b'{"id":"evt_1"}') -> Request:
    return Request(url, body, "t=1,v1=00", "payment.completed", "evt_1", "d-1")


def test_a_2xx_is_ok_and_the_exact_bytes_and_headers_arrive(server_factory):
    s = server_factory(status=204, reply=b"")
    body = '{"name":"Café","n":1}'.encode()
    result = Transport(allow_private=True).post(req(s.url, body))
    assert result.ok and result.status_code == 204 and result.error is None
    [(path, headers, got)] = s.requests
    assert got == body and path == "/in"
    assert headers["Content-Type"] == "application/json" and headers["User-Agent"] == "Kassa-Webhooks/1.0"
    assert (headers["X-Kassa-Signature"], headers["X-Kassa-Event"], headers["X-Kassa-Event-Id"],
            headers["X-Kassa-Delivery-Id"]) == ("t=1,v1=00", "payment.completed", "evt_1", "d-1")


def test_a_long_response_is_kept_truncated(server_factory):
    s = server_factory(status=500, reply=b"x" * 10_000)
    result = Transport(allow_private=True).post(req(s.url))
    assert not result.ok and result.error == "HTTP 500" and len(result.response_body) == MAX_RESPONSE_BODY


def test_a_redirect_is_a_failure_and_not_followed(server_factory):
    s = server_factory(status=301)
    result = Transport(allow_private=True).post(req(s.url))
    assert not result.ok and result.status_code == 301 and "redirects are not followed" in result.error
    assert len(s.requests) == 1


def test_a_slow_endpoint_times_out_without_raising(server_factory):
    s = server_factory(delay=2)
    result = Transport(timeout=0.3, allow_private=True).post(req(s.url))
    assert not result.ok and result.status_code is None and result.error == "timed out"
    assert 250 <= result.duration_ms < 2000


def test_a_closed_port_is_a_connection_failure_without_raising():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = Transport(allow_private=True).post(req(f"http://127.0.0.1:{port}/x?secret=abc"))
    assert not result.ok and result.status_code is None
    assert result.error.startswith("connection failed") and "secret" not in result.error


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/x", "http://localhost:9/x", "http://10.1.2.3/x",
                                 "http://169.254.169.254/latest/meta-data", "http://[::1]:9/x"])
def test_private_destinations_are_refused_before_connecting(url):
    result = Transport(allow_private=False).post(req(url))
    assert not result.ok and result.status_code is None and result.error.startswith("destination refused")


def test_an_unresolvable_host_is_refused_as_a_result():
    result = Transport(allow_private=False).post(req("http://no-such-host.invalid/x"))
    assert not result.ok and "cannot resolve" in result.error


def test_keep_alive_reuses_the_connection_per_thread(server_factory):
    s = server_factory()
    t = Transport(allow_private=True)
    for _ in range(3):
        assert t.post(req(s.url)).ok
    assert len(t._sessions) == 1
    t.close()


def test_urls_are_sanitised_for_logs():
    assert sanitize_url("https://user:pw@hooks.example.com:8443/a/b?token=s#f") == "https://hooks.example.com:8443/a/b"
    assert sanitize_url("http://[::1]/x?q=1") == "http://[::1]/x"
