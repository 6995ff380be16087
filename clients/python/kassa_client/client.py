"""``Kassa``: the client, with one namespace per resource of the API."""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import TracebackType
from typing import Any

import requests

from kassa_client.resources import Events, Networks, Payments, Products, Refunds, Webhooks
from kassa_client.resources.base import envelope_data
from kassa_client.transport import Transport

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1/api"  # a development stack (`make run`)
DEFAULT_TIMEOUT = 30.0  # seconds, for connecting and for each read
DEFAULT_MAX_RETRIES = 2


class Kassa:
    """A client of the Kassa merchant API::

        kassa = Kassa("kassa_test_…", base_url="https://pay.example.com/v1/api")
        payment = kassa.payments.create(amount="25.00", token="USDC", network="BASE")
        redirect(payment.checkout_url)

    ``api_key`` defaults to ``$KASSA_API_KEY`` and ``base_url`` to ``$KASSA_BASE_URL``
    (else a local development stack). ``timeout``: seconds to connect and to wait for each
    read (or a ``(connect, read)`` pair). ``max_retries``: how many times a request is
    sent again after a 429 or 503 answer or a dropped connection (see ``retries``); 0 turns
    retries off. ``session``: a ``requests.Session`` of yours (proxies, certificates); the
    client closes only sessions it made. A client may be shared between threads: without
    a session of yours, each thread gets its own connection pool. Redirects are not
    followed (the key would follow them): a redirect raises, naming where it pointed.
    """

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        timeout: float | tuple[float, float] = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        session: requests.Session | None = None,
    ) -> None:
        self._transport = Transport(
            api_key=api_key if api_key is not None else os.environ.get("KASSA_API_KEY"),
            base_url=base_url or os.environ.get("KASSA_BASE_URL") or DEFAULT_BASE_URL,
            timeout=timeout,
            max_retries=max_retries,
            session=session,
        )
        self.payments = Payments(self._transport)
        self.products = Products(self._transport)
        self.webhooks = Webhooks(self._transport)
        self.events = Events(self._transport)
        self.networks = Networks(self._transport)
        self.refunds = Refunds(self._transport)

    @property
    def base_url(self) -> str:
        return self._transport.base_url

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        idempotency_key: str | None = None,
    ) -> Any:
        """Call an endpoint this client has no method for yet, with the same key, retries
        and errors; returns the answer's ``data`` as decoded JSON. ``path`` is relative
        to ``base_url`` (``"/payments"``)."""
        if not path.startswith("/"):
            raise ValueError("path starts with / (relative to base_url)")
        response = self._transport.request(method, path, params=params, body=body, idempotency_key=idempotency_key)
        return envelope_data(response.body)

    def close(self) -> None:
        """Release the connections (of a session the client made)."""
        self._transport.close()

    def __enter__(self) -> Kassa:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        key = self._transport.api_key or ""
        shown = key[: key.find("_", 6) + 1] + "…" if key else "no key"
        return f"Kassa({shown}, base_url={self.base_url!r})"
