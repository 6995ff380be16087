"""Reading the dashboard's HTML forms.

Forms are checked by the same pydantic models as the API, so a rule lives in one place;
a refusal becomes one readable line for the banner above the form.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from flask import request
from pydantic import BaseModel, ValidationError

from kassa_api import words


class FormError(Exception):
    """A form the API's model refuses; ``message`` is what the page shows (as DomainError's)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def validated(model: type[BaseModel], data: dict) -> BaseModel:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise FormError(" ".join(words.summary(exc))) from None


def form_decimal(name: str) -> Decimal | str:
    raw = request.form.get(name, "").strip()
    try:
        return Decimal(raw)
    except InvalidOperation:
        return raw  # the model reports it as not a number


def form_text(name: str) -> str | None:
    return request.form.get(name, "").strip() or None
