"""Reading the dashboard's HTML forms, and showing what is wrong with them.

Forms are checked by the same pydantic models as the API, so a rule lives in one place.
A refused form comes back with every problem at once, each a sentence beside its field
(``errors``: field name → sentence, rendered by ``field_error`` under the field's label and
tied to the input by ``field_attrs``: ``aria-invalid`` and ``aria-describedby``), and with
what was typed (``typed``, ``checked``; never a password or a code). The banner above the
form counts the problems, and says those that belong to no field shown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from decimal import Decimal, InvalidOperation
from typing import Any, TypeVar

from flask import request
from jinja2 import pass_context
from jinja2.runtime import Context
from markupsafe import Markup
from pydantic import BaseModel, ValidationError

from kassa_common.errors import DomainError
from kassa_api import words

T = TypeVar("T")
NO_FIELD = ""  # a problem of the whole form


def as_sentence(text: str) -> str:
    """``payment lifetime must be …`` → ``Payment lifetime must be ….``"""
    text = text.strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "?", "!")) else text + "."


class FormError(Exception):
    """A form refused: ``errors`` maps each field (``NO_FIELD`` for the whole form) to a sentence."""

    def __init__(self, errors: dict[str, str] | str) -> None:
        self.errors = {NO_FIELD: as_sentence(errors)} if isinstance(errors, str) else errors
        super().__init__(" ".join(self.errors.values()))
        self.message = str(self)

    def context(self, shown: Iterable[str]) -> dict[str, Any]:
        """The page's ``errors`` (for the fields it shows) and ``error`` banner."""
        shown = set(shown)
        beside = {f: text for f, text in self.errors.items() if f in shown}
        elsewhere = [text for f, text in self.errors.items() if f not in shown]
        count = len(beside)
        banner = (
            ["1 field needs a change: see the message beside it."]
            if count == 1
            else [f"{count} fields need a change: see the message beside each."]
            if count
            else []
        )
        return {"errors": beside, "error": " ".join(banner + elsewhere)}


class Problems:
    """Collects a form's problems field by field, so that all are shown at once."""

    def __init__(self) -> None:
        self.errors: dict[str, str] = {}

    def add(self, field: str, text: str) -> None:
        self.errors.setdefault(field, as_sentence(text))

    def check(self, field: str, parse: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
        """``parse(*args)``, or None with its refusal (DomainError, FormError) recorded against ``field``."""
        try:
            return parse(*args, **kwargs)
        except DomainError as exc:
            self.add(field, exc.message)
        except FormError as exc:
            for name, text in exc.errors.items():
                self.add(name or field, text)
        return None

    def raise_any(self) -> None:
        if self.errors:
            raise FormError(self.errors)


def refusal(exc: FormError | DomainError, shown: Iterable[str]) -> dict[str, Any]:
    """The page context of a refused form showing the fields ``shown``: a DomainError (a
    handler's refusal) belongs to the field its details name, else to the whole form."""
    return (exc if isinstance(exc, FormError) else domain_error(exc)).context(shown)


def domain_error(exc: DomainError) -> FormError:
    field = next((d["field"] for d in exc.details if isinstance(d.get("field"), str)), NO_FIELD)
    return FormError({field: as_sentence(exc.message)})


M = TypeVar("M", bound=BaseModel)


def validated(model: type[M], data: dict) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise FormError({field or NO_FIELD: text for field, text in words.by_field(exc).items()}) from None


def form_decimal(name: str) -> Decimal | str:
    raw = request.form.get(name, "").strip()
    try:
        return Decimal(raw)
    except InvalidOperation:
        return raw  # the model reports it as not a number


def form_text(name: str) -> str | None:
    return request.form.get(name, "").strip() or None


# ---- for the templates ---------------------------------------------------------------------


def _refused(ctx: Context) -> bool:
    return request.method == "POST" and bool(ctx.get("errors") or ctx.get("error"))


@pass_context
def field_error(ctx: Context, name: str, element_id: str) -> Markup:
    """The field's problem, under its label (``id``: the input's id + ``-error``)."""
    text = (ctx.get("errors") or {}).get(name)
    if not text:
        return Markup("")
    return Markup('<p class="field-error form-error" id="{}-error">{}</p>').format(element_id, text)


@pass_context
def field_attrs(ctx: Context, name: str, element_id: str, hint: str | None = None) -> Markup:
    """``aria-describedby`` (its hint, its problem) and ``aria-invalid`` of a field's input."""
    wrong = bool((ctx.get("errors") or {}).get(name))
    described = " ".join(([hint] if hint else []) + ([f"{element_id}-error"] if wrong else []))
    out = Markup(' aria-describedby="{}"').format(described) if described else Markup("")
    return out + (Markup(' aria-invalid="true"') if wrong else Markup(""))


@pass_context
def typed(ctx: Context, name: str, default: Any = "") -> Any:
    """What was typed in the field when the form was refused, else ``default``."""
    if _refused(ctx) and name in request.form:
        return request.form.get(name, "")[:5000]
    return default


@pass_context
def checked(ctx: Context, name: str, value: str, default: bool = True) -> bool:
    """Whether a checkbox or option ``value`` of ``name`` is to show selected: as sent when
    the form was refused, else ``default``."""
    if _refused(ctx):
        return value in request.form.getlist(name)
    return default


TEMPLATE_GLOBALS = {"field_error": field_error, "field_attrs": field_attrs, "typed": typed, "checked": checked}
