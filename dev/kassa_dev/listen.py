"""``kassa dev listen PORT``: a webhook receiver for trying Kassa out.

It answers every POST with 200 and prints one line a delivery: the event's type and id,
the payment (or refund) it is about, its status, and whether the signature verifies under
the endpoint's secret (``--secret`` or ``KASSA_WEBHOOK_SECRET``; without one it says so).
Point a webhook endpoint at ``http://127.0.0.1:PORT/hook`` and watch deliveries arrive.
Verification uses kassa-client, exactly as a merchant's server would.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TextIO

from kassa_client import SignatureVerificationError, verify_signature

SECRET_VARIABLE = "KASSA_WEBHOOK_SECRET"


def describe(body: bytes, header: str | None, secret: str | None) -> str:
    """One line about a delivery: what it says and whether its signature verifies."""
    if not secret:
        verdict = f"signature not checked (give --secret or set {SECRET_VARIABLE})"
    else:
        try:
            verify_signature(secret, header, body)
            verdict = "signature valid"
        except SignatureVerificationError as exc:
            verdict = f"signature INVALID: {exc}"
    try:
        event: Any = json.loads(body)
    except ValueError:
        return f"not JSON ({len(body)} bytes) · {verdict}"
    if not isinstance(event, dict):
        return f"JSON but not an event · {verdict}"
    data = event.get("data") if isinstance(event.get("data"), dict) else {}
    about = " ".join(
        str(part)
        for part in (data.get("short_id") or data.get("id"), data.get("status"), data.get("amount"), data.get("token"))
        if part
    )
    return f"{event.get('event', '?')} {event.get('id', '?')} {about} · {verdict}".replace("  ", " ")


def make_server(
    port: int, secret: str | None, out: TextIO = sys.stdout, host: str = "127.0.0.1"
) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            line = describe(body, self.headers.get("X-Kassa-Signature"), secret)
            print(f"POST {self.path} {line}", file=out, flush=True)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:  # the one line above is enough
            pass

    return ThreadingHTTPServer((host, port), Handler)


def cmd_dev_listen(args: argparse.Namespace, settings: object = None) -> int:
    secret = args.secret or os.environ.get(SECRET_VARIABLE)
    server = make_server(args.port, secret)
    print(f"listening on http://127.0.0.1:{args.port}/hook (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def add_listen_parser(dev: argparse._SubParsersAction) -> None:
    about = "receive webhooks on 127.0.0.1:PORT, printing each delivery and whether its signature verifies"
    p = dev.add_parser("listen", help=about)
    p.add_argument("port", type=int)
    p.add_argument("--secret", help=f"the endpoint's signing secret (default: ${SECRET_VARIABLE})")
    p.set_defaults(run=cmd_dev_listen)
