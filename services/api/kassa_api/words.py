"""Validation errors in words a person reads: one sentence naming the field, for the API's
``details`` and the dashboard's forms alike (the error codes and the shape stay as they are).

Pydantic's own texts ("Input should be greater than or equal to Decimal('0.01')", "Value
error, must be ...") never reach anyone: each error type has its sentence here, and a
rule's own message (a ``ValueError`` raised by a field type) is used as it was written.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails


def _number(value: Any) -> str:
    text = str(value)
    match = re.fullmatch(r"Decimal\('([^']*)'\)", text)  # pydantic reports a Decimal bound by its repr
    if match or isinstance(value, Decimal | float):
        return format(Decimal(match.group(1) if match else text).normalize(), "f")
    return text


def _items(n: Any) -> str:
    return f"{n} item" if n == 1 else f"{n} items"


def _characters(n: Any) -> str:
    return f"{n} character" if n == 1 else f"{n} characters"


def _choices(expected: Any) -> str:
    return str(expected).replace("'", "")


SENTENCES: dict[str, Any] = {
    "missing": lambda c: "is required",
    "extra_forbidden": lambda c: "is not a field of this request",
    "greater_than_equal": lambda c: f"must be at least {_number(c['ge'])}",
    "greater_than": lambda c: f"must be greater than {_number(c['gt'])}",
    "less_than_equal": lambda c: f"must be at most {_number(c['le'])}",
    "less_than": lambda c: f"must be less than {_number(c['lt'])}",
    "string_too_short": lambda c: (
        "must not be empty" if c.get("min_length") == 1 else f"needs at least {_characters(c['min_length'])}"
    ),
    "string_too_long": lambda c: f"can be at most {_characters(c['max_length'])} long",
    "too_short": lambda c: f"needs at least {_items(c['min_length'])}",
    "too_long": lambda c: f"can have at most {_items(c['max_length'])}",
    "literal_error": lambda c: f"must be one of {_choices(c['expected'])}",
    "enum": lambda c: f"must be one of {_choices(c['expected'])}",
    "string_pattern_mismatch": lambda c: "has characters or a form that is not allowed here",
    "string_type": lambda c: "must be text",
    "int_type": lambda c: "must be a whole number",
    "int_parsing": lambda c: "must be a whole number",
    "int_from_float": lambda c: "must be a whole number",
    "float_type": lambda c: "must be a number",
    "float_parsing": lambda c: "must be a number",
    "decimal_type": lambda c: "must be a number",
    "decimal_parsing": lambda c: "must be a number",
    "finite_number": lambda c: "must be a finite number",
    "decimal_max_places": lambda c: f"can have at most {c['decimal_places']} decimal places",
    "decimal_max_digits": lambda c: f"can have at most {c['max_digits']} digits",
    "decimal_whole_digits": lambda c: f"can have at most {c['whole_digits']} digits before the point",
    "bool_type": lambda c: "must be true or false",
    "bool_parsing": lambda c: "must be true or false",
    "dict_type": lambda c: "must be a JSON object",
    "model_type": lambda c: "must be a JSON object",
    "model_attributes_type": lambda c: "must be a JSON object",
    "list_type": lambda c: "must be a list",
    "url_parsing": lambda c: "must be an absolute http(s) URL",
    "url_scheme": lambda c: "must be an absolute http(s) URL",
    "uuid_parsing": lambda c: "must be an id",
    "json_invalid": lambda c: "must be valid JSON",
}


def field_name(loc: tuple[int | str, ...]) -> str | None:
    """``("metadata", "order_id")`` → ``metadata.order_id``; a dict key's own error
    (pydantic's ``[key]`` step) is named by the key: ``metadata.order id``."""
    parts = [str(p) for p in loc if p != "[key]"]
    return ".".join(parts) or None


def sentence(err: ErrorDetails) -> str:
    """What is wrong with the field, as a sentence without the field's name."""
    ctx = err.get("ctx") or {}
    if err["type"] in ("value_error", "assertion_error"):
        cause = ctx.get("error")
        return str(cause) if cause is not None else err["msg"].removeprefix("Value error, ")
    make = SENTENCES.get(err["type"])
    if make is None:
        return err["msg"][:1].lower() + err["msg"][1:]
    try:
        return make(ctx)
    except KeyError:  # a context without the number the sentence needs
        return err["msg"][:1].lower() + err["msg"][1:]


PREDICATES = ("must ", "is ", "can ", "needs ", "has ")


def _say(subject: str, text: str) -> str:
    """``amount must be at least 0.01``; a rule's own words after a colon."""
    return f"{subject} {text}" if text.startswith(PREDICATES) else f"{subject}: {text}"


def label(field: str | None) -> str:
    """A field as a form names it: ``customer_email`` → ``Customer email``, ``url`` → ``URL``."""
    if not field:
        return "The form"
    words = field.replace(".", " ").replace("_", " ").split()
    words = [{"url": "URL", "id": "ID"}.get(w, w) for w in words]
    return words[0][:1].upper() + " ".join(words)[1:]


def _problems(exc: ValidationError) -> list[tuple[list[str | None], str, str]]:
    """(the fields, what is wrong, pydantic's type) for each error."""
    out: list[tuple[list[str | None], str, str]] = []
    for err in exc.errors(include_url=False, include_context=True, include_input=False):
        field = field_name(err["loc"])
        text = sentence(err)
        if err["loc"] and err["loc"][-1] == "[key]":  # a dict key's own error: named by the key
            key = str(err["loc"][-2])
            key = key if len(key) <= 40 else key[:40] + "…"
            field, text = field_name(err["loc"][:-2]), f"the key {key!r} {text}"
        # A rule spanning several fields (schemas.FieldsError) names each of them in its words.
        several = getattr((err.get("ctx") or {}).get("error"), "fields", None)
        out.append((list(several) if several else [field], text, err["type"]))
    return out


def details(exc: ValidationError) -> list[dict[str, Any]]:
    """The API's ``details``: one entry a field, ``message`` a plain sentence naming it
    (a rule spanning several fields: its own sentence, once for each), ``type``
    pydantic's error type."""
    return [
        {"field": f, "message": text if len(fields) > 1 or f is None else _say(f, text), "type": kind}
        for fields, text, kind in _problems(exc)
        for f in fields
    ]


def by_field(exc: ValidationError) -> dict[str | None, str]:
    """Every problem of a form at once, by the field it belongs to (None: the whole form),
    each a sentence naming the field as the form does; a field's first problem counts."""
    out: dict[str | None, str] = {}
    for fields, text, _ in _problems(exc):
        text = text.replace("a JSON number", "a number")  # a form's fields are not JSON
        for field in fields:
            line = (text[:1].upper() + text[1:]) if len(fields) > 1 else _say(label(field), text)
            out.setdefault(field.split(".")[0] if field else None, line + ".")
    return out


DELIVERY_ERRORS = (  # what the sender records → what it means for the merchant
    ("Errno 111", "your server refused the connection: nothing listens at that address and port"),
    ("Connection refused", "your server refused the connection: nothing listens at that address and port"),
    ("Errno -2", "the host name does not resolve (DNS)"),
    ("Errno -3", "the host name could not be resolved just now (DNS)"),
    ("cannot resolve", "the host name does not resolve (DNS)"),
    ("Errno 113", "no route to your server"),
    ("Errno 101", "the network to your server is unreachable"),
    ("Errno 104", "your server closed the connection mid-request"),
    ("TLS handshake failed", "the TLS handshake failed: check the server's certificate"),
    ("timed out", "your server did not answer within the delivery deadline"),
    ("destination refused", "Kassa does not send to that address (private or reserved)"),
)


def delivery_error(error: str | None, status_code: int | None = None) -> str:
    """A delivery attempt's outcome in words: "your server answered 503", "your server refused
    the connection: ..."; the recorded text when nothing better is known."""
    if status_code:
        return f"your server answered {status_code}" + ("" if 200 <= status_code < 300 else " (not 2xx)")
    if not error:
        return "no answer recorded"
    for marker, words in DELIVERY_ERRORS:
        if marker in error:
            return words
    return error


# (marker in the User-Agent, name), first match wins: Edge and Opera say "Chrome" too, and
# Chrome says "Safari"; Android says "Linux", iPhones "Mac OS X".
BROWSERS = (("Edg/", "Edge"), ("OPR/", "Opera"), ("Firefox/", "Firefox"), ("Chrome/", "Chrome"), ("Safari/", "Safari"))
SYSTEMS = (
    ("Android", "Android"),
    ("iPhone", "iPhone"),
    ("iPad", "iPad"),
    ("Windows", "Windows"),
    ("Mac OS X", "macOS"),
    ("CrOS", "ChromeOS"),
    ("Linux", "Linux"),
)


def browser_name(user_agent: str | None) -> str:
    """A login's browser as its owner recognises it ("Chrome on Linux"); the User-Agent
    itself (cut to 80 characters) when it names no browser we know."""
    if not user_agent:
        return "unknown browser"
    browser = next((name for marker, name in BROWSERS if marker in user_agent), None)
    system = next((name for marker, name in SYSTEMS if marker in user_agent), None)
    if browser is None:
        return user_agent[:80]
    return f"{browser} on {system}" if system else browser
