"""The webhook HTTP transport against real sockets: failures come back as results."""

from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kassa_webhook_sender.webhooks.transport import MAX_READ, MAX_RESPONSE_BODY, Request, Transport, sanitize_url


class Server:
    """Answers POSTs with ``status`` and ``reply`` after ``delay`` seconds."""

    def __init__(self, status: int = 200, reply: bytes = b"ok", delay: float = 0.0) -> None:
        self.requests: list[tuple[str, dict, bytes]] = []
        self.peers: list[tuple[str, int]] = []  # the client's address of each request (one per connection)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.requests.append((self.path, dict(self.headers), body))
                outer.peers.append(self.client_address)
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
    assert (
        headers["X-Kassa-Signature"],
        headers["X-Kassa-Event"],
        headers["X-Kassa-Event-Id"],
        headers["X-Kassa-Delivery-Id"],
    ) == ("t=1,v1=00", "payment.completed", "evt_1", "d-1")


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


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/x",
        "http://localhost:9/x",
        "http://10.1.2.3/x",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]:9/x",
    ],
)
def test_private_destinations_are_refused_before_connecting(url):
    result = Transport(allow_private=False).post(req(url))
    assert not result.ok and result.status_code is None and result.error.startswith("destination refused")


def test_an_unresolvable_host_is_refused_as_a_result():
    result = Transport(allow_private=False).post(req("http://no-such-host.invalid/x"))
    assert not result.ok and "cannot resolve" in result.error


def test_keep_alive_reuses_one_connection_for_consecutive_requests(server_factory):
    s = server_factory()
    t = Transport(allow_private=True)
    for _ in range(3):
        assert t.post(req(s.url)).ok
    assert len(s.requests) == 3 and len(set(s.peers)) == 1
    t.close()


def test_threads_share_the_connections_of_a_destination(server_factory):
    s = server_factory(delay=0.05)
    t = Transport(allow_private=True, connections=4)
    results: list[bool] = []

    def send() -> None:
        for _ in range(3):
            results.append(t.post(req(s.url)).ok)

    threads = [threading.Thread(target=send) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert results == [True] * 12 and len(s.requests) == 12
    assert len(set(s.peers)) <= 4  # kept alive and reused, never one per request
    t.close()


def test_a_response_too_long_to_drain_drops_its_connection_and_the_next_request_is_clean(server_factory):
    s = server_factory(status=200, reply=b"x" * (3 * MAX_READ))
    t = Transport(allow_private=True)
    first = t.post(req(s.url))
    assert first.ok and len(first.response_body) == MAX_RESPONSE_BODY
    second = t.post(req(s.url, b'{"id":"evt_2"}'))
    assert second.ok, second.error  # not the first response's leftover bytes read as a status line
    assert [body for _, _, body in s.requests] == [b'{"id":"evt_1"}', b'{"id":"evt_2"}']
    assert len(set(s.peers)) == 2
    t.close()


def test_urls_are_sanitised_for_logs():
    assert sanitize_url("https://user:pw@hooks.example.com:8443/a/b?token=s#f") == "https://hooks.example.com:8443/a/b"
    assert sanitize_url("http://[::1]/x?q=1") == "http://[::1]/x"


# ---- destinations: resolved once, connected to as checked ----------------------------------


@pytest.mark.parametrize(
    "address",
    [
        "100.64.0.1",
        "100.127.255.254",
        "192.0.0.8",
        "198.18.0.1",
        "198.19.1.1",
        "224.0.0.251",
        "240.0.0.1",
        "255.255.255.255",
        "0.0.0.0",
        "127.0.0.1",
        "10.0.0.1",
        "172.16.0.1",
        "192.168.0.1",
        "169.254.169.254",
        "100.100.100.200",
        "::1",
        "fe80::1",
        "fd00::1",
        "ff02::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "2002:7f00:1::1",
        "64:ff9b::a00:1",
        "2001:db8::1",
    ],
)
def test_every_non_global_answer_is_refused_with_no_connection_detail(address):
    """A name resolving into any non-public range is refused before connecting, with the same
    words whatever listens there: the delivery log cannot be used to map an internal network."""
    result = Transport(allow_private=False, resolver=lambda host, port: [address]).post(req("http://hooks.example/x"))
    assert (result.ok, result.status_code, result.response_body) == (False, None, None)
    assert result.error == "destination refused: not a public address"


def test_one_private_answer_among_public_ones_refuses_the_destination():
    t = Transport(allow_private=False, resolver=lambda host, port: ["93.184.215.14", "127.0.0.1"])
    assert t.post(req("http://hooks.example/x")).error == "destination refused: not a public address"


def test_a_rebinding_name_is_connected_to_at_the_address_that_was_checked(server_factory, monkeypatch):
    """The name answers a public address when it is checked and loopback afterwards: the
    delivery goes to the checked address (and fails there), never to the local server."""
    s = server_factory()
    port = int(s.url.split(":")[2].split("/")[0])
    real, lookups = socket.getaddrinfo, []

    def rebinding(host, *args, **kwargs):
        if host == "rebind.example":
            lookups.append(host)
            address = "192.0.43.10" if len(lookups) == 1 else "127.0.0.1"  # public, then loopback
            return real(address, *args, **kwargs)
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    result = Transport(timeout=0.5, allow_private=False).post(req(f"http://rebind.example:{port}/in"))
    assert not result.ok and s.requests == []
    assert lookups == ["rebind.example"]


def test_the_pinned_address_gets_the_request_with_the_name_as_host(server_factory):
    s = server_factory()
    port = int(s.url.split(":")[2].split("/")[0])
    asked: list[tuple[str, int]] = []

    def resolver(host, p):
        asked.append((host, p))
        return ["127.0.0.1"]

    result = Transport(allow_private=True, resolver=resolver).post(req(f"http://hooks.example:{port}/in?x=1"))
    assert result.ok, result.error
    [(path, headers, _)] = s.requests
    assert path == "/in?x=1" and headers["Host"] == f"hooks.example:{port}"
    assert asked == [("hooks.example", port)]


def test_tls_to_the_pinned_address_names_the_host_for_sni_and_the_certificate(tmp_path):
    """Connecting to an IP must not lose TLS: SNI carries the URL's name and the certificate
    is checked against that name."""
    import ssl
    import subprocess

    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=hooks.example",
            "-addext",
            "subjectAltName=DNS:hooks.example",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    server = Server()
    sni: list[str | None] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.sni_callback = lambda sock, name, ctx: sni.append(name)
    server.httpd.socket = context.wrap_socket(server.httpd.socket, server_side=True)
    try:
        t = Transport(allow_private=True, resolver=lambda h, p: ["127.0.0.1"], verify=str(cert))
        result = t.post(req(f"https://hooks.example:{server.httpd.server_port}/in"))
        assert result.ok, result.error
        assert sni == ["hooks.example"] and server.requests[0][1]["Host"].startswith("hooks.example:")
        other = Transport(allow_private=True, resolver=lambda h, p: ["127.0.0.1"], verify=str(cert))
        wrong = other.post(req(f"https://other.example:{server.httpd.server_port}/in"))
        assert not wrong.ok and wrong.error.startswith("TLS handshake failed")
    finally:
        server.close()
