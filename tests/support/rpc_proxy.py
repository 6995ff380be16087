"""An HTTP proxy in front of a JSON-RPC node (anvil) that misbehaves like a hosted provider.

Hosted nodes rate limit (HTTP 429 with ``Retry-After``), refuse ``eth_getLogs`` over too many
blocks (a JSON-RPC error, code -32005, "query returned more than 10000 results"), and go
away now and then. ``RpcProxy`` forwards every POST body to the node, whatever the path (a
hosted URL carries its key there: tests give it a fake one), except:

- ``refuse(n, retry_after)``: the next ``n`` requests are answered 429;
- ``max_log_range = k``: an ``eth_getLogs`` over more than ``k`` blocks is answered with
  the error above (single requests; batches are forwarded as they are);
- ``down()`` / ``up()``: the port stops listening (connections refused), then listens again;
- ``unsupported``: methods answered "method not found" (-32601), as a node without them
  (geth has no ``trace_block``);
- ``rewrite_hashes = True``: every block hash in its answers (a block's ``hash`` and
  ``parentHash``, any ``blockHash``) is replaced by another, consistently: a node on
  another fork, or a lying one;
- ``rewrite = f``: every answer is ``f(request, answer)`` (the request and the answer
  parsed), a node that lies about whatever ``f`` changes;
- ``after(predicate, action)``: once, when a request matches ``predicate``, ``action`` runs
  after the node answered it and before the answer is sent back (a reorg in that window);
- ``extra_logs``: logs added to every single ``eth_getLogs`` answer whose block range holds
  their ``blockNumber``, whatever the query's addresses and topics (a lying node's); a
  ``blockHash`` of None is filled with the node's hash of that block.

``counts`` and ``log_ranges`` (the spans of the ``eth_getLogs`` it forwarded) let a test
check what happened. Each answer closes its connection (HTTP/1.0), so ``down()`` is seen
by the very next request.

The fixture ``proxy`` is one in front of the module's ``chain`` (``tests.support.anvil``)::

    from tests.support.anvil import anvil, anvil_isolated, chain  # noqa: F401  (fixtures)
    from tests.support.rpc_proxy import proxy  # noqa: F401  (fixture)
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import pytest
import requests

from tests.support.anvil import free_port

TOO_MANY_RESULTS = {"code": -32005, "message": "query returned more than 10000 results"}


class RpcProxy:
    def __init__(self, target_url: str) -> None:
        self.target = target_url
        self.port = free_port("127.0.0.1")
        self.max_log_range: int | None = None
        self.unsupported: set[str] = set()
        self.counts: Counter[str] = Counter()  # rate_limited, too_large, forwarded
        self.log_ranges: list[tuple[int, int]] = []  # (fromBlock, toBlock) of each forwarded eth_getLogs
        self._refuse, self._retry_after = 0, 1
        self.rewrite_hashes = False
        self.extra_logs: list[dict[str, Any]] = []
        self.rewrite: Callable[[Any, Any], Any] | None = None
        self._after: tuple[Callable[[Any], bool], Callable[[], None]] | None = None
        self.after_done = threading.Event()  # set once the action of ``after`` has run
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def after(self, predicate: Callable[[Any], bool], action: Callable[[], None]) -> None:
        """Run ``action`` once, after forwarding the first request ``predicate`` accepts and
        before answering it; ``after_done`` is set once it has run (not when it was picked)."""
        with self._lock:
            self._after = (predicate, action)
            self.after_done.clear()

    def refuse(self, n: int, retry_after: int = 1) -> None:
        with self._lock:
            self._refuse, self._retry_after = n, retry_after

    # -- lifecycle ------------------------------------------------------------------------
    def up(self) -> RpcProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, headers, reply = proxy._answer(body)
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self._server = server
        return self

    def down(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def __enter__(self) -> Self:
        return self.up()

    def __exit__(self, *exc) -> None:
        self.down()

    # -- answers --------------------------------------------------------------------------
    def _answer(self, body: bytes) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            if self._refuse > 0:
                self._refuse -= 1
                self.counts["rate_limited"] += 1
                error = {"jsonrpc": "2.0", "id": None, "error": {"code": 429, "message": "Too Many Requests"}}
                return 429, {"Retry-After": str(self._retry_after)}, json.dumps(error).encode()
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        if isinstance(request, dict) and request.get("method") in self.unsupported:
            self.counts["unsupported"] += 1
            error = {"code": -32601, "message": f"the method {request['method']} does not exist/is not available"}
            return 200, {}, json.dumps({"jsonrpc": "2.0", "id": request.get("id"), "error": error}).encode()
        span = self._log_span(request)
        if span is not None:
            if self.max_log_range is not None and span[1] - span[0] + 1 > self.max_log_range:
                self.counts["too_large"] += 1
                return (
                    200,
                    {},
                    json.dumps({"jsonrpc": "2.0", "id": request.get("id"), "error": TOO_MANY_RESULTS}).encode(),
                )
            self.log_ranges.append(span)
        self.counts["forwarded"] += 1
        resp = requests.post(self.target, data=body, headers={"Content-Type": "application/json"}, timeout=30)
        content = resp.content
        with self._lock:
            hook = self._after
            if hook is not None and hook[0](request):
                self._after = None
            else:
                hook = None
        if hook is not None:
            hook[1]()
            self.after_done.set()
        if span is not None and self.extra_logs:
            added = [dict(g) for g in self.extra_logs if span[0] <= int(g["blockNumber"], 16) <= span[1]]
            for g in added:
                if g.get("blockHash") is None:
                    g["blockHash"] = self._block_hash(g["blockNumber"])
            if added:
                self.counts["injected"] += len(added)
                answer = json.loads(content)
                answer["result"] = [*added, *answer.get("result", [])]
                content = json.dumps(answer).encode()
        if self.rewrite_hashes:
            self.counts["rewritten"] += 1
            content = json.dumps(_rewritten(json.loads(content))).encode()
        rewrite = self.rewrite
        if rewrite is not None:
            content = json.dumps(rewrite(request, json.loads(content))).encode()
        return resp.status_code, {}, content

    def _block_hash(self, number: str) -> str:
        call = {"jsonrpc": "2.0", "id": 1, "method": "eth_getBlockByNumber", "params": [number, False]}
        return requests.post(self.target, json=call, timeout=30).json()["result"]["hash"]

    @staticmethod
    def _log_span(request) -> tuple[int, int] | None:
        """(fromBlock, toBlock) of a single ``eth_getLogs`` with numeric bounds, else None."""
        if not isinstance(request, dict) or request.get("method") != "eth_getLogs":
            return None
        params = (request.get("params") or [{}])[0]
        try:
            return int(params["fromBlock"], 16), int(params["toBlock"], 16)
        except (KeyError, TypeError, ValueError):
            return None


def forged(block_hash: str) -> str:
    """The hash a rewriting proxy shows instead of ``block_hash``."""
    return "0x" + hashlib.sha256(block_hash.encode()).hexdigest()


def _rewritten(value: Any) -> Any:
    if isinstance(value, list):
        return [_rewritten(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _rewritten(v) for k, v in value.items()}
    if "parentHash" in value:  # a block
        out["hash"], out["parentHash"] = forged(value["hash"]), forged(value["parentHash"])
    if isinstance(value.get("blockHash"), str):
        out["blockHash"] = forged(value["blockHash"])
    return out


@pytest.fixture
def proxy(chain):
    """An ``RpcProxy`` in front of the test's ``chain``, open for the test."""
    with RpcProxy(chain.url) as p:
        yield p
