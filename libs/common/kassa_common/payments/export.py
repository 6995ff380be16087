"""The payments list as CSV, for spreadsheets and bookkeeping (DESIGN.md section 2: one row
per payment, every field of the payment object that fits a cell).

The columns are ``PaymentOut``'s fields in its order, so the export cannot drift from the
API: scalars as they are (booleans as true/false, null as an empty cell), ``metadata`` as
JSON text, and the lists (transfers, wrong-network funds) as their count, in a column
named ``<field>_count``. Rows are read in batches from a server-side cursor and written as
they go, so exporting 100k payments never holds them all.

A spreadsheet runs a cell that starts with = + - @ (or a tab or a carriage return) as a
formula, and customer names, emails, URLs and metadata are text others chose; so such a
cell gets a leading single quote (OWASP, "CSV injection"). Amounts are never negative, so
no number we write is touched.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from datetime import date
from typing import Any, get_origin

from sqlalchemy.orm import Session

from kassa_common.owner import Owner
from kassa_common.payments.queries import payment_batches, payment_object
from kassa_common.payments.shape import PaymentOut
from kassa_common.transfers import transfers_of

BATCH_SIZE = 500
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_LISTS = {name for name, f in PaymentOut.model_fields.items() if get_origin(f.annotation) is list}
COLUMNS = tuple(f"{name}_count" if name in _LISTS else name for name in PaymentOut.model_fields)


def safe_cell(text: str) -> str:
    """``text``, defused if a spreadsheet would take it for a formula."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return str(len(value))
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


def csv_row(payment: dict[str, Any]) -> list[str]:
    """The cells of one payment object (``payment_to_dict``), in ``COLUMNS`` order."""
    return [safe_cell(_cell(payment[name])) for name in PaymentOut.model_fields]


def payments_csv(
    session: Session,
    owner: Owner,
    *,
    status: str | None,
    search: str | None,
    since: date | None = None,
    until: date | None = None,
    batch_size: int = BATCH_SIZE,
) -> Iterator[str]:
    """The CSV text of the owner's payments with the list's filters (status, search, the
    created-on date range): the header, then a chunk per batch (each batch's transfers read
    in one query)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(COLUMNS)
    yield _drain(buffer)
    for batch in payment_batches(
        session, owner, status=status, search=search, since=since, until=until, batch_size=batch_size
    ):
        transfers = transfers_of(session, [p.id for p in batch])
        writer.writerows(csv_row(payment_object(p, transfers[p.id])) for p in batch)
        yield _drain(buffer)


def _drain(buffer: io.StringIO) -> str:
    text = buffer.getvalue()
    buffer.seek(0)
    buffer.truncate()
    return text
