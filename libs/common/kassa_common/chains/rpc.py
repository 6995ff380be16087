"""A small JSON-RPC client over HTTP keep-alive, with batched requests (one round trip
for many calls: how the watcher fetches hundreds of blocks at once).

Failures come in kinds the caller treats differently:

- ``RpcUnavailable``: the node did not answer (connection refused or lost, a timeout) or
  refused to for now (HTTP 429, a 5xx without a JSON-RPC answer, a "rate limit" error, a
  Bitcoin-family node still starting: error -28).
  Nothing is wrong with the request: wait (``retry_after`` when the node said how long,
  a backoff otherwise) and ask again.
- ``RangeTooLarge``: an ``eth_getLogs`` over too many blocks, or with too many results for
  the provider. Providers word it differently (``RANGE_TOO_LARGE``); asking again for a
  smaller range works (``evm.EvmChain`` halves its window).
- ``BadAnswer``: an answer that is not JSON-RPC at all (an HTML error page, a reply of the
  wrong shape): the node (or what stands in front of it) is broken, not the request.
- ``RpcError``: anything else the node answered with an error.

A network may have several nodes: ``nodes.NodePool`` answers like one ``JsonRpc`` and
fails over between them on ``RpcUnavailable`` and ``BadAnswer``.

Hosted RPC URLs carry their API key (Infura and Alchemy in the path, others in the query,
a Bitcoin node its user and password): exception texts and logs only ever show
``redact(url)``, the scheme, host and port.
"""

from __future__ import annotations

import email.utils
import itertools
import json
import time
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any
from urllib.parse import unquote, urlsplit

import requests

# How providers say "this eth_getLogs asks for too much" (lower case): Infura "query returned
# more than 10000 results", Alchemy "Log response size exceeded" and "you can make eth_getLogs
# requests with up to a 10 block range", others "too many results", "block range is too
# wide", "exceed maximum block range: 5000", "limit exceeded". -32005 is Infura's and Geth's
# "limit exceeded" code, which some providers use for rate limits too: a message that says
# so is taken for a rate limit first (``classify``).
RANGE_TOO_LARGE = (
    "returned more than",
    "too many results",
    "response size exceeded",
    "response size is larger",
    "range is too wide",
    "range too wide",
    "range is too large",
    "range too large",
    "exceed maximum block range",
    "exceeds maximum block range",
    "requests with up to a",
    "limit exceeded",
)
RANGE_TOO_LARGE_CODES = {-32005}
# Rate limits that come as a JSON-RPC error instead of HTTP 429: Infura "project ID request
# rate exceeded", Alchemy "exceeded its compute units per second capacity".
RATE_LIMITED = ("rate limit", "rate exceeded", "too many requests", "compute units per second")
RATE_LIMITED_CODES = {429}
# Bitcoin Core's (and litecoind's) RPC_IN_WARMUP: a node starting ("Loading block index…",
# "Verifying blocks…") answers every call with it; asking again soon works.
WARMING_UP_CODES = {-28}
MAX_RETRY_AFTER = 300.0  # seconds; a node asking for longer is asked again after this


class RpcError(Exception):
    """The node answered with an error, or did not answer properly."""


class RpcUnavailable(RpcError):
    """The node is down, overloaded or rate limiting us: the same request can succeed later.
    ``retry_after``: seconds the node asked us to wait (HTTP ``Retry-After``), if it did."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class BadAnswer(RpcError):
    """The node's answer is not JSON-RPC (or not the shape asked for)."""


class RangeTooLarge(RpcError):
    """The node refused a block range as too long or as matching too many logs."""


def redact(url: str | None) -> str:
    """``url`` without what may be secret: only scheme://host[:port] (no user info, path or query)."""
    try:
        parts = urlsplit(url or "")
        host, port = parts.hostname, parts.port
    except ValueError:
        return "<RPC URL>"
    if not parts.scheme or not host:
        return "<RPC URL>"
    host = f"[{host}]" if ":" in host else host  # IPv6
    return f"{parts.scheme}://{host}" + (f":{port}" if port else "")


def scrub(text: str, url: str | None) -> str:
    """``text`` (an exception's, say) with the secret parts of ``url`` removed: the URL itself
    becomes ``redact(url)``; its path, query and user info, wherever they appear alone (a
    requests error says "Max retries exceeded with url: /v3/KEY"), become "…"."""
    if not url:
        return text
    text = text.replace(url, redact(url))
    try:
        parts = urlsplit(url)
    except ValueError:
        return text
    path_query = parts.path + (f"?{parts.query}" if parts.query else "")
    pieces = [
        path_query,
        parts.path,
        parts.query,
        parts.netloc.rpartition("@")[0] if "@" in parts.netloc else "",
        parts.password or "",
    ]
    for piece in sorted({p for p in pieces + [unquote(p) for p in pieces] if p and p != "/"}, key=len, reverse=True):
        text = text.replace(piece, "…")
    return text


def scrub_all(text: str, urls: Iterable[str]) -> str:
    """``scrub`` for each of several nodes' URLs."""
    for url in urls:
        text = scrub(text, url)
    return text


def classify(error: Any, context: str) -> RpcError:
    """The exception for a JSON-RPC ``error`` member (``context``: which call)."""
    message = str(error.get("message", "")) if isinstance(error, dict) else str(error)
    code = error.get("code") if isinstance(error, dict) else None
    lowered = message.lower()
    text = f"{context}: {error}"
    if code in RATE_LIMITED_CODES or code in WARMING_UP_CODES or any(w in lowered for w in RATE_LIMITED):
        return RpcUnavailable(text)
    if code in RANGE_TOO_LARGE_CODES or any(w in lowered for w in RANGE_TOO_LARGE):
        return RangeTooLarge(text)
    return RpcError(text)


def retry_after(value: str | None) -> float | None:
    """An HTTP ``Retry-After`` (seconds or a date) as seconds from now, capped; None if absent or bad."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    return min(MAX_RETRY_AFTER, max(0.0, seconds))


class JsonRpc:
    def __init__(self, url: str, *, timeout: float = 15.0, version: str = "2.0") -> None:
        self.url, self.timeout, self.version = url, timeout, version
        self.where = redact(url)  # what messages say instead of the URL
        self._session = requests.Session()
        self._ids = itertools.count(1)

    def __repr__(self) -> str:
        return f"JsonRpc({self.where})"

    def _post(self, payload: Any) -> Any:
        try:
            resp = self._session.post(
                self.url,
                data=json.dumps(payload, default=str),
                timeout=self.timeout,
                headers={"Content-Type": "application/json"},
            )
        except (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError) as exc:
            # ``from None``: the requests exception's text holds the URL's path (a traceback would show it)
            raise RpcUnavailable(f"{self.where}: {type(exc).__name__}: {scrub(str(exc), self.url)}") from None
        except requests.RequestException as exc:
            raise RpcError(f"{self.where}: {type(exc).__name__}: {scrub(str(exc), self.url)}") from None
        if resp.status_code == 429:
            raise RpcUnavailable(
                f"{self.where}: HTTP 429 {resp.reason or ''}".rstrip(),
                retry_after=retry_after(resp.headers.get("Retry-After")),
            )
        try:
            return json.loads(resp.text, parse_float=Decimal)
        except ValueError:
            # A 5xx with a JSON-RPC answer (Bitcoin Core answers errors with HTTP 500) is that
            # answer; without one, it is a gateway or node in trouble.
            if resp.status_code >= 500:
                raise RpcUnavailable(
                    f"{self.where}: HTTP {resp.status_code} {resp.reason or ''}".rstrip(),
                    retry_after=retry_after(resp.headers.get("Retry-After")),
                ) from None
            raise BadAnswer(
                f"{self.where}: HTTP {resp.status_code}, not JSON: {scrub(resp.text[:200], self.url)!r}"
            ) from None

    def _request(self, method: str, params: Sequence[Any]) -> dict[str, Any]:
        return {"jsonrpc": self.version, "id": next(self._ids), "method": method, "params": list(params)}

    def raw(self, payload: Any) -> Any:
        """The decoded reply to ``payload`` (one request or a batch) as the node sent it, errors
        included, except a rate limit (raised as ``RpcUnavailable``): web3's transport."""
        reply = self._post(payload)
        errors = [reply] if isinstance(reply, dict) else reply if isinstance(reply, list) else []
        for r in errors:
            if isinstance(r, dict) and r.get("error") and isinstance(classify(r["error"], "x"), RpcUnavailable):
                raise classify(r["error"], f"{self.where}")
        if not isinstance(reply, (dict, list)):
            raise BadAnswer(f"{self.where}: unexpected reply {str(reply)[:200]}")
        return reply

    def call(self, method: str, *params: Any) -> Any:
        reply = self._post(self._request(method, params))
        if not isinstance(reply, dict):
            raise BadAnswer(f"{method}: unexpected reply {str(reply)[:200]}")
        if reply.get("error"):
            raise classify(reply["error"], method)
        return reply.get("result")

    def batch(self, calls: Sequence[tuple[str, Sequence[Any]]], *, chunk: int = 100) -> list[Any]:
        """Results of ``calls`` in order, ``chunk`` calls per HTTP request; any error raises."""
        results: list[Any] = []
        for start in range(0, len(calls), chunk):
            requests_ = [self._request(m, p) for m, p in calls[start : start + chunk]]
            reply = self._post(requests_)
            if isinstance(reply, dict) and reply.get("error"):  # the whole batch refused (a rate limit)
                raise classify(reply["error"], "batch")
            if not isinstance(reply, list):
                raise BadAnswer(f"batch: unexpected reply {str(reply)[:200]}")
            by_id = {r.get("id"): r for r in reply if isinstance(r, dict)}
            for req in requests_:
                r = by_id.get(req["id"])
                if r is None:
                    raise BadAnswer(f"{req['method']}{req['params']}: no answer in the batch")
                if r.get("error"):
                    raise classify(r["error"], f"{req['method']}{req['params']}")
                results.append(r.get("result"))
        return results

    def close(self) -> None:
        self._session.close()
