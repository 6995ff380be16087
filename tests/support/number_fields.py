"""Every numeric field of the API and of the dashboard's forms, found rather than listed
(so a new route or form is covered as soon as it exists), and hostile number texts for
them: huge and tiny exponents, 79+ significant digits, 4,301-digit integers, NaN and
Infinity spellings, floats and negative zero.

API fields come from the OpenAPI document the app serves: body properties whose schema
takes a number (and ``metadata``-like maps of numbers), query parameters that are whole
numbers or moments, and path parameters. Form fields come from the dashboard's pages: each
``<input>`` of a POST form with ``type="number"`` or ``inputmode="decimal"``/``"numeric"``.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from hypothesis import strategies as st

EDGES = [
    "1e999999999",
    "1e-999999999",
    "-1e999999999",
    "1e99999999999999999999",
    "0e-999999",
    "1e31",
    "1e-31",
    "1E+30",
    "9" * 79,
    "0." + "1" * 79,
    "-" + "9" * 79,
    "7" * 4301,
    "NaN",
    "nan",
    "Infinity",
    "-Infinity",
    "inf",
    "1.5",
    "0.1",
    "-0",
    "-0.0",
    "0",
    "1",
    "2.5e-7",
    "123456789.123456789",
    "0.12345678901234567890",
]

DIGITS = "0123456789"


@st.composite
def number_texts(draw) -> str:
    """A JSON-number-shaped text (sometimes not quite), any size of coefficient and exponent."""
    sign = draw(st.sampled_from(["", "-", "+"]))
    whole = draw(st.text(DIGITS, min_size=1, max_size=draw(st.sampled_from([3, 20, 90, 4400]))))
    fraction = draw(st.one_of(st.none(), st.text(DIGITS, min_size=1, max_size=90)))
    exponent = draw(
        st.one_of(
            st.none(), st.integers(-40, 40), st.integers(-(10**12), 10**12), st.sampled_from([999999999, -999999999])
        )
    )
    text = sign + whole + (f".{fraction}" if fraction is not None else "")
    return text + (f"e{exponent}" if exponent is not None else "")


@dataclass
class Slowest:
    """The slowest answer seen, for the report and a generous bound."""

    seconds: float = 0.0
    what: str = ""
    count: int = 0
    failures: list[str] = field(default_factory=list)

    def call(self, what: str, send, *args: Any, **kwargs: Any) -> Any:
        """``send(*args, **kwargs)``, timed; a 5xx is recorded as a failure."""
        started = time.monotonic()
        response = send(*args, **kwargs)
        took = time.monotonic() - started
        self.count += 1
        if took > self.seconds:
            self.seconds, self.what = took, what
        if response.status_code >= 500:
            self.failures.append(f"{what}: {response.status_code} {response.get_data(as_text=True)[:200]}")
        return response


# ---- the API, from its document ---------------------------------------------------------------


@dataclass(frozen=True)
class ApiField:
    method: str
    path: str  # with {placeholders}
    where: str  # "body", "query" or "path"
    name: str  # for the body: a dotted path ("metadata.n")
    base: Any  # the body's example (the request a field is put into)


def _resolve(document: dict, schema: dict) -> dict:
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _takes_number(schema: dict) -> bool:
    if schema.get("type") in ("number", "integer"):
        return True
    return any(_takes_number(b) for b in [*schema.get("anyOf", []), *schema.get("oneOf", [])])


def api_fields(document: dict) -> list[ApiField]:
    found = []
    for path, ops in document["paths"].items():
        for method, op in ops.items():
            media = op.get("requestBody", {}).get("content", {}).get("application/json", {})
            base = media.get("example", {})
            for p in op.get("parameters", []):
                schema = p.get("schema", {})
                if p["in"] == "path" or (
                    p["in"] == "query"
                    and (_takes_number(schema) or schema.get("format") in ("date-time", "date", "uuid"))
                ):
                    found.append(ApiField(method, path, p["in"], p["name"], base))
            if "schema" not in media:
                continue
            body = _resolve(document, media["schema"])
            for name, prop in body.get("properties", {}).items():
                prop = _resolve(document, prop)
                if _takes_number(prop):
                    found.append(ApiField(method, path, "body", name, base))
                for branch in [prop, *prop.get("anyOf", [])]:  # a map of numbers (metadata)
                    values = branch.get("additionalProperties")
                    if isinstance(values, dict) and _takes_number(_resolve(document, values)):
                        found.append(ApiField(method, path, "body", f"{name}.n", base))
    return found


PLACEHOLDER = "__NUMBER__"


def body_with(base: Any, dotted: str, text: str, *, as_string: bool) -> str:
    """``base`` as JSON text with the field at ``dotted`` set to ``text``, written as it is
    (a raw JSON token, NaN and 1e999999999 included) or as a JSON string."""
    body = json.loads(json.dumps(base)) if isinstance(base, dict) else {}
    node = body
    *parents, last = dotted.split(".")
    for part in parents:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[last] = PLACEHOLDER
    return json.dumps(body).replace(f'"{PLACEHOLDER}"', json.dumps(text) if as_string else text)


def fill_path(path: str, ids: dict[str, str], override: tuple[str, str] | None = None) -> str:
    """``path`` with each placeholder a real id (``ids`` by the path's resource), or ``override``'s text."""
    resource = path.split("/")[1]

    def one(match: re.Match) -> str:
        name = match.group(1)
        if override and override[0] == name:
            return override[1]
        return (
            ids.get(f"{resource}.{name}") or ids.get(name) or ids.get(resource, "00000000-0000-0000-0000-000000000000")
        )

    return re.sub(r"\{([^}]+)\}", one, path)


# ---- the dashboard's forms, from its pages ---------------------------------------------------------


@dataclass
class Form:
    action: str
    fields: dict[str, str]
    numeric: list[str]


class _Forms(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.forms: list[Form] = []
        self._open: Form | None = None

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        if tag == "form" and a.get("method", "get").lower() == "post":
            self._open = Form(a.get("action", ""), {}, [])
        elif self._open is not None and tag in ("input", "textarea", "select") and a.get("name"):
            kind = a.get("type", "text").lower()
            if kind in ("checkbox", "radio") and "checked" not in a:
                return
            self._open.fields.setdefault(a["name"], a.get("value", ""))
            if kind == "number" or a.get("inputmode") in ("decimal", "numeric"):
                self._open.numeric.append(a["name"])

    def handle_endtag(self, tag):
        if tag == "form" and self._open is not None:
            if self._open.numeric:
                self.forms.append(self._open)
            self._open = None


def numeric_forms(html: str, page_path: str) -> list[Form]:
    """The POST forms of a page that have a numeric input (their action made absolute)."""
    parser = _Forms()
    parser.feed(html)
    for form in parser.forms:
        form.action = form.action or page_path
    return parser.forms


def page_rules(app, prefix: str = "/dashboard") -> list[str]:
    """Every GET route of the dashboard (where its forms are)."""
    return sorted(
        {r.rule for r in app.url_map.iter_rules() if "GET" in (r.methods or ()) and r.rule.startswith(prefix)}
    )
