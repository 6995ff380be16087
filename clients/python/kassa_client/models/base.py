"""``KassaObject``: the base of every typed response object.

Each object is a frozen dataclass whose fields are read from the API's JSON by their
annotations: ``Decimal`` fields from JSON numbers or decimal strings, ``datetime`` fields
from ISO 8601 text, nested objects and lists of them recursively. Fields the client does
not know yet (a newer API) are kept in ``extra``, and ``to_dict()`` gives back the JSON
object exactly as it came, so nothing the API sends is lost. A field missing from the
answer (an older API) takes its default; a field without a default must be present.

A field may name its JSON key (``field(metadata={"json": "event"})``) or parse itself
(``metadata={"parse": fn}``, called with the value and the whole JSON object).
"""

from __future__ import annotations

import copy
import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any, TypeVar, Union

from kassa_client.encoding import parse_datetime, to_decimal
from kassa_client.errors import KassaError

T = TypeVar("T", bound="KassaObject")
_INTERNAL = ("extra", "_raw")


class ResponseFormatError(KassaError):
    """An answer of the API that does not have the shape this client expects."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class KassaObject:
    extra: dict[str, Any] = dataclasses.field(default_factory=dict, repr=False, compare=False)
    _raw: dict[str, Any] = dataclasses.field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls: type[T], data: Mapping[str, Any]) -> T:
        """The object from its JSON (a dict as the API sent it)."""
        if not isinstance(data, Mapping):
            raise ResponseFormatError(f"expected a JSON object for {cls.__name__}, got {type(data).__name__}")
        values: dict[str, Any] = {}
        known: set[str] = set()
        for f, hint in _fields(cls):
            key = f.metadata.get("json", f.name)
            known.add(key)
            if key not in data:
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                    raise ResponseFormatError(f"{cls.__name__} without its {key!r} field")
                continue
            parse = f.metadata.get("parse")
            try:
                values[f.name] = parse(data[key], data) if parse else convert(hint, data[key])
            except (TypeError, ValueError, ArithmeticError) as exc:
                raise ResponseFormatError(f"{cls.__name__}.{key}: {exc}") from None
        extra = {k: v for k, v in data.items() if k not in known}
        return cls(**values, extra=extra, _raw=copy.deepcopy(dict(data)))

    def to_dict(self) -> dict[str, Any]:
        """The JSON object this was read from (a copy), unknown fields included."""
        return copy.deepcopy(self._raw)


_FIELDS: dict[type, tuple[tuple[dataclasses.Field[Any], Any], ...]] = {}


def _fields(cls: type) -> tuple[tuple[dataclasses.Field[Any], Any], ...]:
    """The fields read from JSON, with their resolved annotations (worked out once per class)."""
    found = _FIELDS.get(cls)
    if found is None:
        hints = typing.get_type_hints(cls)
        found = _FIELDS[cls] = tuple((f, hints[f.name]) for f in dataclasses.fields(cls) if f.name not in _INTERNAL)
    return found


def convert(hint: Any, value: Any) -> Any:
    """``value`` (decoded JSON) as the annotated type ``hint``."""
    origin = typing.get_origin(hint)
    if origin is Union or origin is types.UnionType:
        if value is None:
            return None
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        return convert(options[0], value) if len(options) == 1 else value
    if value is None:
        return None
    if hint is Decimal:
        return to_decimal(value)
    if hint is datetime:
        if not isinstance(value, str):
            raise TypeError(f"a timestamp must be a string, got {value!r}")
        return parse_datetime(value)
    if isinstance(hint, type) and issubclass(hint, KassaObject):
        return hint.from_dict(value)
    if origin is list:
        (item,) = typing.get_args(hint) or (Any,)
        if not isinstance(value, list):
            raise TypeError(f"expected a list, got {type(value).__name__}")
        return [convert(item, v) for v in value]
    return value  # str, int, bool, dict and Any: as JSON gave them


def parse_list(cls: type[T]) -> Callable[[Any], list[T]]:
    """A parser of a JSON array of ``cls`` objects."""

    def parse(value: Any) -> list[T]:
        if not isinstance(value, list):
            raise ResponseFormatError(f"expected a JSON array of {cls.__name__}, got {type(value).__name__}")
        return [cls.from_dict(v) for v in value]

    return parse
