"""What every resource namespace shares: the transport, the envelope, pages, ids in paths.

A new resource (an endpoint the API gains) is a subclass of ``Resource`` with one method
per endpoint, each a line or two over ``_object``, ``_objects`` and ``_page``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, TypeVar
from urllib.parse import quote

from kassa_client.models.base import KassaObject, ResponseFormatError
from kassa_client.pages import Page
from kassa_client.transport import Transport

T = TypeVar("T", bound=KassaObject)
DEFAULT_PAGE_SIZE = 10  # the API's default
ITERATE_PAGE_SIZE = 100  # the API's largest page: the fewest requests for a walk


class _Unset:
    """The default of an update's fields: not sent (``None`` is sent as JSON null)."""

    _instance: _Unset | None = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Any = _Unset()


def given(**fields: Any) -> dict[str, Any]:
    """The fields a caller gave (those not left ``UNSET``)."""
    return {k: v for k, v in fields.items() if v is not UNSET}


def segment(value: str) -> str:
    """An id as one path segment (``/`` and ``..`` cannot reach another route)."""
    text = str(value)
    if not text.strip():
        raise ValueError("an id must not be empty")
    if text in (".", ".."):  # a URL's dot segments would be resolved away before sending
        return text.replace(".", "%2E")
    return quote(text, safe="")


def new_idempotency_key() -> str:
    return str(uuid.uuid4())


def envelope_data(body: Any) -> Any:
    """The ``data`` of a success envelope."""
    if not isinstance(body, Mapping) or "data" not in body:
        raise ResponseFormatError(f"expected a success envelope with data, got {str(body)[:200]!r}")
    return body["data"]


class Resource:
    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    def _data(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        idempotency_key: str | None = None,
    ) -> Any:
        response = self._transport.request(method, path, params=params, body=body, idempotency_key=idempotency_key)
        return envelope_data(response.body)

    def _object(self, cls: type[T], method: str, path: str, **kwargs: Any) -> T:
        return cls.from_dict(self._data(method, path, **kwargs))

    def _objects(self, cls: type[T], method: str, path: str, **kwargs: Any) -> list[T]:
        data = self._data(method, path, **kwargs)
        if not isinstance(data, list):
            raise ResponseFormatError(f"expected a list of {cls.__name__}, got {type(data).__name__}")
        return [cls.from_dict(item) for item in data]

    def _page(self, cls: type[T], path: str, params: Mapping[str, Any], page: int, page_size: int) -> Page[T]:
        """One page of a list endpoint; its ``next_page`` asks for the next with the same filters."""
        if page < 1 or page_size < 1:
            raise ValueError("page and page_size start at 1")
        body = self._transport.request("GET", path, params={**params, "page": page, "pageSize": page_size}).body
        # Two shapes: {"data": {"data": [...], "meta": {...}}} (payments, events) and
        # {"data": [...], "meta": {...}} (products, webhooks, deliveries).
        data = envelope_data(body)
        if isinstance(data, Mapping) and "meta" in data:
            items, meta = data.get("data"), data["meta"]
        else:
            items, meta = data, body.get("meta")
        if not isinstance(items, list) or not isinstance(meta, Mapping):
            raise ResponseFormatError(f"expected a page of {cls.__name__} with meta")

        def fetch(number: int) -> Page[T]:
            return self._page(cls, path, params, number, page_size)

        return Page(
            data=[cls.from_dict(item) for item in items],
            page=int(meta.get("page", page)),
            page_size=int(meta.get("pageSize", page_size)),
            total=int(meta.get("total", len(items))),
            pages=int(meta.get("pages", page)),
            _fetch=fetch,
        )
