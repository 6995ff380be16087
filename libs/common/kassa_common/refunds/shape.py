"""The refund object as the API, its webhooks and the claim page show it (DESIGN §8).

The claim link is a bearer capability: whoever opens it first says where the money goes. So
``claim_url`` is in the answers to ``refunds:manage`` keys and on the dashboard only; events
(``GET /events`` needs only ``payments:read``) and webhooks carry the refund without it, with
``claimable`` saying whether it still waits for an address (``without_claim_link``)."""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, WithJsonSchema

from kassa_common import numbers, urls
from kassa_common.fields import NetworkCode, Strict
from kassa_common.models import Refund
from kassa_common.pricing.amounts import units_text
from kassa_common.statuses import RefundStatus
from kassa_common.timefmt import iso


def claim_url(refund: Refund, checkout_url: Any) -> str:
    """The refund's claim page (``urls.claim_url``)."""
    return urls.claim_url(checkout_url, refund.claim_token)


def due_units(refund: Refund) -> int | None:
    """What the merchant is asked to pay in base units: the amount plus the claim's tag
    (None until claimed; a refund claimed before tags existed pays its bare amount)."""
    if refund.address is None:
        return None
    return int(refund.amount_units) + (refund.payout_tag or 0)


def payout_units(refund: Refund) -> int:
    """The base units a payout of ``refund`` sends: ``due_units`` (the amount and its tag, by
    which the watcher knows the payout) once claimed, the bare amount before."""
    due = due_units(refund)
    return int(refund.amount_units) if due is None else due


def payout_amount(refund: Refund) -> str | None:
    """``due_units`` as the refund object shows it: a decimal string of the token (None until claimed)."""
    due = due_units(refund)
    return None if due is None else units_text(due, refund.decimals)


CLAIM_LINK = "claim_url"  # the one field only refunds:manage keys and the dashboard see


def refund_out(refund: Refund, checkout_url: Any = None) -> dict[str, Any]:
    """The refund object. ``checkout_url`` (``CHECKOUT_URL`` or the settings) only for those
    who may hold the claim link: without it there is no ``claim_url`` (an event's refund)."""
    shown = {
        "id": str(refund.id),
        "payment_id": str(refund.payment_id),
        "status": refund.status,
        "amount": units_text(refund.amount_units, refund.decimals),
        "token": refund.token,
        "network": refund.network,
        "reason": refund.reason,
        CLAIM_LINK: claim_url(refund, checkout_url) if checkout_url is not None else None,
        "claimable": refund.status == RefundStatus.AWAITING_ADDRESS,
        "funds_reorged": bool(refund.funds_reorged),
        "address": refund.address,
        "payout_amount": payout_amount(refund),
        "payout_from": refund.payout_from,
        "transaction_hash": refund.transaction_hash,
        "confirmations": refund.confirmations,
        "test_mode": refund.test_mode,
        "created_at": iso(refund.created_at),
        "updated_at": iso(refund.updated_at),
        "claimed_at": iso(refund.claimed_at),
        "completed_at": iso(refund.completed_at),
        "canceled_at": iso(refund.canceled_at),
        "expires_at": iso(refund.expires_at),
    }
    return shown if checkout_url is not None else without_claim_link(shown)


def without_claim_link(shown: dict[str, Any]) -> dict[str, Any]:
    """A refund object as events and webhooks carry it: no ``claim_url``, and ``claimable``
    (true while it waits for an address). Also what an event stored before this rule, with
    its claim link, is shown as."""
    out = {k: v for k, v in shown.items() if k != CLAIM_LINK}
    out.setdefault("claimable", out.get("status") == RefundStatus.AWAITING_ADDRESS)
    return out


EXAMPLE: dict[str, Any] = {
    "id": "3f1c2a7e-9b4d-4c41-8e0a-5d2f6b7c8a90",
    "payment_id": "8d3b5e1f-2c4a-4f6e-9a7b-1c2d3e4f5a6b",
    "status": "AWAITING_PAYMENT",
    "amount": "2.66",
    "token": "USDC",
    "network": "BASE",
    "reason": "over-paid",
    "claim_url": "https://pay.example.com/refunds/Q2xhaW0tbGluay1zZWNyZXQtb2YtNDMtY2hhcmFjdGVycw",
    "claimable": False,
    "funds_reorged": False,
    "address": "0x52908400098527886E0F7030069857D2E4169EE7",
    "payout_amount": "2.660417",
    "payout_from": None,
    "transaction_hash": None,
    "confirmations": 0,
    "test_mode": False,
    "created_at": "2026-01-01T10:00:00.000Z",
    "updated_at": "2026-01-01T10:05:00.000Z",
    "claimed_at": "2026-01-01T10:05:00.000Z",
    "completed_at": None,
    "canceled_at": None,
    "expires_at": "2026-01-31T10:00:00.000Z",
}


class RefundOut(BaseModel):
    """A refund: a claim the merchant pays from their own wallet, proven on chain."""

    model_config = ConfigDict(json_schema_extra={"examples": [EXAMPLE]})

    id: str = Field(description="the refund's UUID")
    payment_id: str = Field(description="the UUID of the payment it refunds")
    status: str = Field(description="AWAITING_ADDRESS, AWAITING_PAYMENT, COMPLETED, CANCELED or EXPIRED")
    amount: str = Field(description="decimal string in the payment's token")
    token: str
    network: str
    reason: str | None
    claim_url: str = Field(
        description="the customer's claim page: {CHECKOUT_URL}/refunds/{token}; whoever opens it says where the "
        "refund goes, so only refunds:manage answers carry it, never events or webhooks"
    )
    claimable: bool = Field(description="true while it waits for the customer's address (AWAITING_ADDRESS)")
    funds_reorged: bool = Field(
        description="the payment's own funds on this network were lost in a reorg deeper than the required "
        "confirmations after the refund was made: check the payment before paying it"
    )
    address: str | None = Field(description="where the customer wants it; null until claimed")
    payout_amount: str | None = Field(
        description="what the merchant pays, exactly: amount plus a tag of 1-999 base units of the token chosen at "
        "the claim (unique among the open refunds claimed to the same address), so the watcher tells this payout "
        "from any other transfer to the address; null until claimed"
    )
    payout_from: str | None = Field(description="the sender of the payout that completed it; null until paid")
    transaction_hash: str | None = Field(description="the payout, once seen on chain")
    confirmations: int = Field(description="of the payout")
    test_mode: bool
    created_at: str
    updated_at: str
    claimed_at: str | None
    completed_at: str | None
    canceled_at: str | None
    expires_at: str = Field(description="an unclaimed refund expires then (REFUND_CLAIM_DAYS)")


_DECIMAL = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)$")


def _token_amount(value: Any) -> Decimal:
    """A decimal string or a JSON number, exactly (no float rounding, no exponent)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float, Decimal)):
        raise ValueError("must be a decimal string or a number")  # noqa: TRY004 - pydantic reports a ValueError
    if not isinstance(value, str):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("must be a finite number")
        # a JSON number arrives as a Decimal (or an int), exactly as written; bounded first
        return numbers.check(value)
    text = value.strip()
    if len(text) > 100 or not _DECIMAL.match(text):
        raise ValueError('must be a plain decimal number, such as "2.5"')
    try:
        return numbers.parse(text)
    except InvalidOperation:
        raise ValueError('must be a plain decimal number, such as "2.5"') from None


TokenAmount = Annotated[
    Decimal,
    BeforeValidator(_token_amount),
    Field(gt=Decimal(0)),
    WithJsonSchema(
        {
            "oneOf": [
                # a positive plain decimal ("2.5", "0.001"; not "0" nor "0.00"),
                # and within the bound on numbers (kassa_common.numbers): up to 31 whole digits
                # and 30 places, 1e-30 at the smallest
                {
                    "type": "string",
                    "maxLength": 100,
                    "pattern": r"^(0*[1-9]\d{0,30}(\.\d{1,30})?|0+\.0{0,29}[1-9]\d{0,29})$",
                },
                {"type": "number", "minimum": 1e-30, "exclusiveMaximum": 1e31},
            ],
            "description": "in the payment's token, at most the token's decimals (a decimal string keeps it exact)",
            "examples": ["2.5", 2.5],
        }
    ),
]


class CreateRefund(Strict):
    model_config = ConfigDict(
        extra="forbid",
        str_max_length=10_000,
        json_schema_extra={"examples": [{"amount": "2.66", "reason": "over-paid"}, {}]},
    )

    amount: TokenAmount | None = Field(None, description="default: everything refundable")
    reason: Annotated[str, StringConstraints(strip_whitespace=True, max_length=500)] | None = Field(
        None, description="shown to the merchant, not to the customer"
    )
    network: NetworkCode | None = Field(
        None,
        description="refund funds that arrived on another network (wrong network) there; default: the payment's "
        "network, or the only other network holding refundable funds",
    )
