"""Whose objects a request acts on: one merchant, in one mode.

Payments, products and webhook endpoints all belong to a merchant *and* a mode (test or
live, as in Stripe); every lookup is scoped by both. The web layer builds an ``Owner``
in one place (``kassa_api.deps.make_owner``) for the API key, the dashboard session or
the public product page.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass


@dataclass(frozen=True)
class Owner:
    merchant_id: uuid.UUID
    test_mode: bool
    lifetime_minutes: int  # how long this merchant's new payments stay open

    @property
    def mode(self) -> str:
        return "test" if self.test_mode else "live"
