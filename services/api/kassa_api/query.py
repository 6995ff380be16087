"""Bounded, validated query parameters for the server-rendered pages (the API validates
its own through ``endpoint.validate_query``).

Every value a page reads from its query string goes through here: a page number is a
whole number from 1 to ``MAX_PAGE``, a filter one of its known values, a text at most
``MAX_TEXT`` characters. Anything else answers the 400 page, never a 500: no offset
overflows the database's bigint, and no NUL reaches PostgreSQL (which refuses it in text).
``guard`` refuses a NUL or an overlong value in any query parameter or path part of a page,
and a NUL in any field (name or value) of a posted form, before its view runs: the one check
of every page and dashboard form (the login and password-reset forms included), so a NUL
(``%00`` in the body) is the 400 page and never reaches PostgreSQL as a 500.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date

from flask import abort, request

MAX_PAGE = 100_000  # a page of 20 to 50 rows: millions of objects, far below any offset limit
MAX_TEXT = 200  # a search
MAX_VALUE = 2048  # any query value or path part at all (a URL is short)
_DIGITS = re.compile(r"[0-9]{1,6}")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _refuse(message: str) -> None:
    abort(400, description=message)


def guard() -> None:
    """``before_request`` of the pages: no NUL, no overlong value, anywhere in the URL's
    parameters; no NUL in a posted form."""
    for values in request.args.listvalues():
        for value in values:
            if "\x00" in value or len(value) > MAX_VALUE:
                _refuse("The address of this page holds a value it cannot take.")
    for value in (request.view_args or {}).values():
        if isinstance(value, str) and ("\x00" in value or len(value) > MAX_VALUE):
            _refuse("The address of this page holds a value it cannot take.")
    if request.method == "POST" and any("\x00" in k or any("\x00" in v for v in vs) for k, vs in request.form.lists()):
        _refuse("A field of this form holds a NUL character (U+0000), which no field takes. Remove it and try again.")


def page_number(name: str = "page") -> int:
    """The page asked for: 1 when absent or empty, else a whole number from 1 to MAX_PAGE (else 400)."""
    raw = request.args.get(name, "").strip()
    if not raw:
        return 1
    if not _DIGITS.fullmatch(raw) or not 1 <= int(raw) <= MAX_PAGE:
        _refuse(f"The page number must be a whole number from 1 to {MAX_PAGE}.")
    return int(raw)


def choice(name: str, allowed: Iterable[str]) -> str | None:
    """A filter: None when absent or empty, else one of ``allowed`` (else 400)."""
    raw = request.args.get(name, "")
    if not raw:
        return None
    known = tuple(allowed)
    if raw not in known:
        _refuse(f"Unknown {name}: choose one of {', '.join(known)}.")
    return raw


def text(name: str, limit: int = MAX_TEXT) -> str | None:
    """A free text (a search): None when blank, else at most ``limit`` characters (else 400)."""
    raw = request.args.get(name, "").strip()
    if len(raw) > limit:
        _refuse(f"The {name} may have at most {limit} characters.")
    return raw or None


def day(name: str, label: str) -> date | None:
    """A date (YYYY-MM-DD, what a date input sends): None when blank, else a real calendar
    day (else 400, the message naming the field by ``label``)."""
    raw = request.args.get(name, "").strip()
    if not raw:
        return None
    try:
        if not _DATE.fullmatch(raw):
            raise ValueError(raw)
        return date.fromisoformat(raw)
    except ValueError:
        _refuse(f"The {label} date must be a day written as YYYY-MM-DD, for example 2026-03-31.")
    raise AssertionError  # _refuse raised
