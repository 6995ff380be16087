"""The refund aggregate (DESIGN §8): the only code that inserts or updates refund rows.

Kassa holds no funds, so a refund is a claim the merchant pays from their own wallet and
Kassa proves was paid. Where to look:

- ``transitions``: DESIGN §8's refund states as a table, ``TRANSITIONS``; ``apply`` is the one
  way a refund's status changes, its creation too (check, update, outbox event), as
  ``payments.transitions`` is for payments; creating a refund (what is refundable, under the
  payment's row lock), the customer's claim, the merchant's cancel, the expirer's batch.
- ``payouts``: the payout seen on chain (or a submitted hash) that completes a refund,
  and a reorg taking it back.
- ``addresses``: a claim's destination, checked for the refund's network.
- ``queries``: reading refunds; ``shape``: the refund object (API, webhooks, claim page).
  What a payment has refunded and can still refund is the payment's (``payments.refunded``):
  this package may import the payment package, never the other way round.

The API routes, the claim page, the dashboard, the watchers and the expirer call these
functions and hold no refund logic.
"""
