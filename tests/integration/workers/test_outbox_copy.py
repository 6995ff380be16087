"""The outbox's bulk writer (``events.record_many``: one streamed COPY) against real
PostgreSQL: rows read back exactly as given, whatever their payload holds; a row that
cannot be built, or that the database refuses, fails the transaction with nothing written
and raises what any statement would."""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa

from kassa_common.db import unit_of_work
from kassa_common.ids import new_event_id
from kassa_common.messaging import outbox
from kassa_common.messaging.publisher import Message
from kassa_common.models import Event
from kassa_common.timefmt import utcnow

AWKWARD = [
    "back\\slash",
    "tab\there",
    "new\nline",
    "carriage\rreturn",
    "\\N",
    "quote \" and '",
    "ünïcødé 😀 \u2028",
    "",
    "\\\\t literally",
]


def row(merchant_id, payload: dict, **kw) -> dict:
    msg = Message(new_event_id(), "payment.expired", payload)
    return outbox.outbox_row(
        msg, merchant_id=merchant_id, test_mode=True, payment_id=kw.pop("payment_id", None), now=utcnow(), **kw
    )


def stored(sessions, ids) -> dict:
    with sessions() as s:
        return {e.id: e for e in s.scalars(sa.select(Event).where(Event.id.in_(ids)))}


def test_rows_read_back_as_given(merchant, sessions):
    rows = [
        row(merchant.id, {"text": text, "nested": {"list": [text, 1, 2.5, None, True]}}, payment_id=uuid.uuid4())
        for text in AWKWARD
    ]
    rows.append(row(merchant.id, {"published": "yes"}, published=True))
    with unit_of_work(sessions) as s:
        assert outbox.record_many(s, iter(rows)) == len(rows)
    found = stored(sessions, [r["id"] for r in rows])
    for r in rows:
        e = found[r["id"]]
        assert (e.type, e.merchant_id, e.test_mode, e.payment_id, e.payload, e.created_at, e.published_at) == (
            r["type"],
            r["merchant_id"],
            r["test_mode"],
            r["payment_id"],
            r["payload"],
            r["created_at"],
            r["published_at"],
        )


def test_a_row_that_cannot_be_built_leaves_nothing_written(merchant, sessions):
    good = [row(merchant.id, {"n": i, "pad": "x" * 40_000}) for i in range(3)]  # the first are sent already

    def rows():
        yield from good
        raise ValueError("cannot build this one")

    with pytest.raises(ValueError, match="cannot build this one"), unit_of_work(sessions) as s:
        outbox.record_many(s, rows())
    assert stored(sessions, [r["id"] for r in good]) == {}


def test_a_row_the_database_refuses_raises_as_any_statement_would(sessions):
    with pytest.raises(sa.exc.IntegrityError, match="events_merchant_id_fkey"), unit_of_work(sessions) as s:
        outbox.record_many(s, [row(uuid.uuid4(), {"n": 1})])  # no such merchant
