"""The one place where failures become the JSON error envelope of DESIGN.md section 3."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from flask import Flask, g, jsonify, request
from werkzeug.exceptions import HTTPException
from werkzeug.exceptions import RequestURITooLarge as URITooLong

from kassa_common.errors import DomainError
from kassa_common.transient import is_transient

log = logging.getLogger("kassa.api")
MAX_URL = 4096  # bytes of path and query; gunicorn's own limit (8190) sits above it, so the
# application answers a long URL itself, in the error shape, instead of gunicorn's HTML page

HTTP_CODES = {
    400: "BAD_REQUEST",
    401: "UNAUTHORIZED",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    409: "CONFLICT",
    413: "PAYLOAD_TOO_LARGE",
    414: "URI_TOO_LONG",
    415: "UNSUPPORTED_MEDIA_TYPE",
    422: "UNPROCESSABLE_ENTITY",
    429: "RATE_LIMIT_EXCEEDED",
    500: "INTERNAL_ERROR",
    503: "SERVICE_UNAVAILABLE",
}
CODE_STATUS = {code: status for status, code in HTTP_CODES.items()}
CODE_STATUS["VALIDATION_ERROR"] = 400
RETRY_AFTER_OUTAGE = 2  # seconds: what a 503 for an unreachable database suggests


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str | None = None,
        details: list[dict[str, Any]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code or HTTP_CODES.get(status, "ERROR")
        self.message = message
        self.details = details or []
        self.headers = headers or {}


def error_body(status: int, code: str, message: str, details: list | None = None, **extra: Any) -> dict[str, Any]:
    err = {"code": code, "message": message, "status": status, "details": details or []}
    err.update(extra)
    return {"success": False, "statusCode": status, "error": err}


def _respond(status: int, code: str, message: str, details=None, headers=None, **extra):
    response = jsonify(error_body(status, code, message, details, **extra))
    response.status_code = status
    for k, v in (headers or {}).items():
        response.headers[k] = v
    return response


def wants_html() -> bool:
    return not request.path.startswith("/v1/api") and request.accept_mimetypes.accept_html


def init_app(app: Flask) -> None:
    @app.before_request
    def _url_length():
        if len(request.full_path.encode()) > MAX_URL:
            raise URITooLong()

    @app.errorhandler(ApiError)
    def _api_error(exc: ApiError):
        return _respond(exc.status, exc.code, exc.message, exc.details, exc.headers)

    @app.errorhandler(DomainError)
    def _domain_error(exc: DomainError):
        status = CODE_STATUS.get(exc.code, 400)
        retry_after = getattr(exc, "retry_after", None)
        return _respond(
            status, exc.code, exc.message, exc.details, {"Retry-After": str(retry_after)} if retry_after else None
        )

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException):
        status = exc.code or 500
        if wants_html():
            from kassa_api.web import error_page

            return error_page(status)
        if status == 404:
            message = f"no route for {request.method} {request.path}"
        elif status == 405:
            message = f"{request.method} is not allowed on {request.path}"
        elif status == 413:
            message = "request body is larger than 64 KiB"
        elif status == 414:
            message = f"the URL (path and query) is longer than {MAX_URL} bytes"
        else:
            message = exc.description or exc.name
        headers = (
            {"Allow": exc.response.headers["Allow"]}
            if exc.response is not None and "Allow" in exc.response.headers
            else {}
        )
        if status == 405 and exc.valid_methods:  # type: ignore[attr-defined]
            headers["Allow"] = ", ".join(exc.valid_methods)  # type: ignore[attr-defined]
        return _respond(status, HTTP_CODES.get(status, "ERROR"), message, headers=headers)

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception):
        request_id = getattr(g, "request_id", None) or uuid.uuid4().hex
        if is_transient(exc):  # the database is unreachable (a retry with the same Idempotency-Key is safe)
            log.warning("service unavailable: %s", str(exc).splitlines()[0], extra={"request_id": request_id})
            return _respond(
                503,
                "SERVICE_UNAVAILABLE",
                "a service Kassa depends on is unreachable right now; retry shortly",
                headers={"Retry-After": str(RETRY_AFTER_OUTAGE)},
                request_id=request_id,
            )
        log.exception("unhandled error", extra={"request_id": request_id})
        return _respond(
            500, "INTERNAL_ERROR", "internal error; quote the request id when reporting it", request_id=request_id
        )
