"""``@endpoint``: authentication, scope, rate limit, validation and the success envelope,
declared once per view. The same declaration feeds the OpenAPI document (openapi.py),
so what is validated is what is documented.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flask import request
from pydantic import BaseModel, ValidationError

from kassa_common import numbers
from kassa_api import words
from kassa_api.auth import authenticate
from kassa_api.errors import ApiError


@dataclass(frozen=True)
class EndpointSpec:
    summary: str
    scope: str | None
    body: type[BaseModel] | None
    query: type[BaseModel] | None
    response: Any  # a pydantic model, list[model], or None
    status: int
    envelope: str  # "object" | "page" | "list" | "bare" | "raw"
    tag: str
    errors: tuple[int, ...]
    body_required: bool = True  # False: an empty body is the empty object


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


class Unbounded(str):
    """A JSON number beyond the bound of ``kassa_common.numbers``, kept as the text it was
    (never turned into a value) until the body is walked and the refusal names its field."""


def _number(text: str) -> Any:
    """A JSON number exactly as written: an int or a Decimal, or Unbounded. Checked on its
    text, before ``int()`` (so no integer-to-string limit is reached, no ``10**1e9`` built)."""
    try:
        value = numbers.parse(text)
    except numbers.NumberOutOfBounds:
        return Unbounded(text)
    return int(text) if text.lstrip("-").isdigit() else value


def _refusals(data: Any) -> list[dict[str, str]]:
    """Each place where a string (or key) holds a NUL character (PostgreSQL text cannot
    store one) or a number is beyond the bound, as an error detail naming the field.
    Iterative, so a deeply nested body cannot exhaust the stack."""
    found: list[dict[str, str]] = []
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, Unbounded):
            found.append({"field": path, "message": numbers.MESSAGE, "type": "number_out_of_bounds"})
        elif isinstance(value, str):
            if "\x00" in value:
                found.append({"field": path, "message": "must not contain NUL characters", "type": "nul_character"})
        elif isinstance(value, (dict, list)):
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for k, v in items:
                sub = f"{path}.{k}" if path else str(k)
                if isinstance(k, str) and "\x00" in k:
                    found.append({"field": sub, "message": "must not contain NUL characters", "type": "nul_character"})
                else:
                    stack.append((sub, v))
    return sorted(found, key=lambda d: d["field"])


def _refuse_any(data: Any, code: str, message: str) -> None:
    details = _refusals(data)
    if details:
        for d in details:
            d["field"] = d["field"].replace("\x00", "\\u0000")
        raise ApiError(400, message, code=code, details=details)


def parse_json_body() -> Any:
    """The body as JSON: numbers exact (ints and Decimals) and bounded (``Unbounded`` beyond it)."""
    raw = request.get_data(cache=True)
    if not raw.strip():
        raise ApiError(400, "request body must be a JSON object", code="BAD_REQUEST")
    mimetype = request.mimetype
    if mimetype and mimetype != "application/json" and not mimetype.endswith("+json"):
        raise ApiError(415, "send the body as Content-Type: application/json")
    try:
        return json.loads(raw, parse_float=_number, parse_int=_number, parse_constant=_reject_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"malformed JSON: {exc}", code="BAD_REQUEST") from None
    except RecursionError:
        raise ApiError(400, "malformed JSON: nested too deeply", code="BAD_REQUEST") from None


def validate_body(model: type[BaseModel], *, required: bool = True) -> BaseModel:
    if not required and not request.get_data(cache=True).strip():
        return model.model_validate({})
    data = parse_json_body()
    if not isinstance(data, dict):
        raise ApiError(400, "request body must be a JSON object", code="BAD_REQUEST")
    _refuse_any(data, "VALIDATION_ERROR", "the request body is invalid")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ApiError(
            400, "the request body is invalid", code="VALIDATION_ERROR", details=words.details(exc)
        ) from None


def validate_query(model: type[BaseModel]) -> BaseModel:
    args: dict[str, Any] = {}
    for key in request.args:
        values = request.args.getlist(key)
        args[key] = values[0] if len(values) == 1 else values
    _refuse_any(args, "BAD_REQUEST", "the query string is invalid")
    try:
        return model.model_validate(args)
    except ValidationError as exc:
        raise ApiError(400, "the query string is invalid", code="BAD_REQUEST", details=words.details(exc)) from None


def envelope(data: Any, status: int, kind: str) -> tuple[dict, int]:
    """Wrap a view's result: "object" and "page" under data, "list" as data + meta beside it,
    "bare" without statusCode (the delete answer of SPEC.md 4.9), "raw" as it is."""
    if kind == "raw":
        return data, status
    if kind == "list":
        return {"success": True, "statusCode": status, **data}, status
    if kind == "bare":
        return {"success": True, "data": data}, status
    return {"success": True, "statusCode": status, "data": data}, status


def endpoint(
    summary: str,
    *,
    scope: str | None,
    tag: str,
    body: type[BaseModel] | None = None,
    query: type[BaseModel] | None = None,
    response: Any = None,
    status: int = 200,
    envelope_kind: str = "object",
    errors: tuple[int, ...] = (),
    body_required: bool = True,
) -> Callable:
    spec = EndpointSpec(summary, scope, body, query, response, status, envelope_kind, tag, errors, body_required)

    def decorate(view: Callable) -> Callable:
        @functools.wraps(view)
        def wrapper(**path_args: Any):
            if scope is not None:
                authenticate(scope)
            if body is not None:
                path_args["body"] = validate_body(body, required=body_required)
            if query is not None:
                path_args["query"] = validate_query(query)
            result = view(**path_args)
            if isinstance(result, tuple):  # (data, status[, headers])
                data, code, *rest = result
                payload, code = envelope(data, code, envelope_kind)
                return (payload, code, *rest)
            return envelope(result, status, envelope_kind)

        wrapper.endpoint_spec = spec  # type: ignore[attr-defined]
        return wrapper

    return decorate


def idempotency_key() -> str | None:
    """The request's Idempotency-Key header (the creates that take one: ``openapi.IDEMPOTENT``;
    their rules are ``kassa_common.idempotency``), stripped; None without one; 400 when it is
    empty or over 255 characters."""
    key = request.environ.get("HTTP_IDEMPOTENCY_KEY")  # request.headers raises (and catches) when it is absent
    if key is not None and not (0 < len(key.strip()) <= 255):
        raise ApiError(
            400,
            "Idempotency-Key must be 1 to 255 characters",
            code="VALIDATION_ERROR",
            details=[{"field": "Idempotency-Key", "message": "1 to 255 characters"}],
        )
    return key.strip() if key else None
