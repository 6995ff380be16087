"""A small JSON-RPC client over HTTP keep-alive, with batched requests (one round trip
for many calls: how the watcher fetches hundreds of blocks at once)."""
from __future__ import annotations

import itertools
import json
from decimal import Decimal
from typing import Any, Sequence

import requests


class RpcError(Exception):
    """The node answered with an error, or did not answer properly."""


class JsonRpc:
    def __init__(self, url: str, *, timeout: float = 15.0, version: str = "2.0") -> None:
        self.url, self.timeout, self.version = url, timeout, version
        self._session = requests.Session()
        self._ids = itertools.count(1)

    def _post(self, payload: Any) -> Any:
        try:
            resp = self._session.post(self.url, data=json.dumps(payload, default=str), timeout=self.timeout,
                                      headers={"Content-Type": "application/json"})
            return json.loads(resp.text, parse_float=Decimal)
        except (requests.RequestException, ValueError) as exc:
            raise RpcError(f"{self.url.split('@')[-1]}: {exc!r}") from exc

    def _request(self, method: str, params: Sequence[Any]) -> dict[str, Any]:
        return {"jsonrpc": self.version, "id": next(self._ids), "method": method, "params": list(params)}

    def call(self, method: str, *params: Any) -> Any:
        reply = self._post(self._request(method, params))
        if not isinstance(reply, dict):
            raise RpcError(f"{method}: unexpected reply {str(reply)[:200]}")
        if reply.get("error"):
            raise RpcError(f"{method}: {reply['error']}")
        return reply.get("result")

    def batch(self, calls: Sequence[tuple[str, Sequence[Any]]], *, chunk: int = 100) -> list[Any]:
        """Results of ``calls`` in order, ``chunk`` calls per HTTP request; any error raises."""
        results: list[Any] = []
        for start in range(0, len(calls), chunk):
            requests_ = [self._request(m, p) for m, p in calls[start:start + chunk]]
            reply = self._post(requests_)
            if not isinstance(reply, list):
                raise RpcError(f"batch: unexpected reply {str(reply)[:200]}")
            by_id = {r.get("id"): r for r in reply if isinstance(r, dict)}
            for req in requests_:
                r = by_id.get(req["id"])
                if r is None or r.get("error"):
                    raise RpcError(f"{req['method']}{req['params']}: {r and r.get('error')}")
                results.append(r.get("result"))
        return results

    def close(self) -> None:
        self._session.close()
