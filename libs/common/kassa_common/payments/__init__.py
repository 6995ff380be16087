"""The payment aggregate: the only code that inserts or updates payment rows.

Where to look:

- ``transitions``: DESIGN.md section 4 as a table with its guards; ``apply`` is the one
  way an existing payment changes (lock, check, update, outbox event).
- ``create``: a new payment (pricing, idempotency claim, receiving address, row, event).
- ``settle``: what a chain watcher's (or test mode's) transfer report to a payment's address
  does (the settler decides whose a report is; this package never imports ``refunds``);
  ``batch``: the settler's batch of reports, one object its steps ask for by name.
- ``expire``: the expirer's batch of overdue payments.
- ``watermark``: the settled line per network (what the settler has applied of what the
  watcher reported), which live payments wait for before they expire.
- ``cancel``: by the merchant or the customer.
- ``testmode``: simulated transfers for test payments.
- ``addresses``: the next address of the merchant's extended public key, or the
  payment's forwarder deposit address.
- ``queries``: reading payments (and what their object shows: transfers, from
  ``kassa_common.transfers``, and refund totals); ``refunded``: what a payment has refunded
  and can still refund, per network (the refund package reads its rules here);
  ``shape``: their JSON (API, webhooks, checkout), built from what is read, reading nothing;
  ``export``: the dashboard's CSV of them; ``reports``: the dashboard's history, sweeps,
  daily volume and counts per status.
- ``gap``: the Bitcoin gap monitor: how many unused addresses in a row a merchant's
  wallet must look past (reads only).

The API routes, the dashboard, the checkout pages, the settler and the expirer call the
functions below and hold no payment logic. Sweeps of forwarder deposits (what is due, what
a confirmed sweep records as ``payment.swept``) are ``kassa_common.sweeps``.
"""

from kassa_common.payments.cancel import cancel, cancel_payment, cancel_refusal
from kassa_common.payments.create import NewPayment, create_payment, resolve_pair
from kassa_common.payments.expire import expire_due
from kassa_common.payments.export import payments_csv
from kassa_common.payments.queries import find_by_short_id, find_payment, list_payments, payment_object
from kassa_common.payments.settle import settle
from kassa_common.payments.shape import PaymentOut, payment_to_dict, public_view, remaining_units
from kassa_common.payments.testmode import NotTestPayment, complete_due_test_payments, let_expire, pay
from kassa_common.payments.transitions import OPEN, STATUSES, Trigger, apply

__all__ = [
    "OPEN",
    "STATUSES",
    "NewPayment",
    "NotTestPayment",
    "PaymentOut",
    "Trigger",
    "apply",
    "cancel",
    "cancel_payment",
    "cancel_refusal",
    "complete_due_test_payments",
    "create_payment",
    "expire_due",
    "find_by_short_id",
    "find_payment",
    "let_expire",
    "list_payments",
    "pay",
    "payment_object",
    "payment_to_dict",
    "payments_csv",
    "public_view",
    "remaining_units",
    "resolve_pair",
    "settle",
]
