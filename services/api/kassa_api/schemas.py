"""Request and response models of the payments and networks endpoints (the field types and
base models are ``kassa_common.fields``; each resource keeps its own models beside its
commands)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from kassa_common.fields import (
    Amount,
    CurrencyCode,
    Email,
    FieldsError,
    HttpUrl,
    MetaKey,
    MetaValue,
    Name,
    NetworkCode,
    PageMeta,
    QueryInt,
    Strict,
    TokenCode,
)
from kassa_common.payments.shape import PaymentOut, StatusName  # PaymentOut: the payment object, defined once
from kassa_common.pricing import currencies

# ---- payments ---------------------------------------------------------------------------


class CreatePayment(Strict):
    # The document states "exactly one of amount or product_id" (kassa_api.openapi).
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "amount": 25,
                    "currency": "USD",
                    "token": "USDC",
                    "network": "BASE",
                    "customer_email": "ada@example.com",
                    "redirect_url": "https://shop.example.com/thanks",
                    "metadata": {"order_id": "1001"},
                }
            ]
        }
    )

    amount: Amount | None = Field(None, description="amount in `currency`; required unless product_id is given")
    currency: CurrencyCode | None = Field(
        None,
        description="ISO 4217 code of `amount`, USD by default (a FIAT product's payment is in the product's currency)",
    )
    product_id: str | None = Field(
        None, min_length=1, max_length=64, description="charge for this product instead of an amount"
    )
    token: TokenCode = Field(description="token symbol, e.g. USDC (see GET /networks)")
    network: NetworkCode = Field(description="network name, e.g. BASE (see GET /networks)")
    customer_email: Email | None = None
    customer_name: Name | None = None
    redirect_url: HttpUrl | None = None
    cancel_url: HttpUrl | None = None
    metadata: dict[MetaKey, MetaValue] | None = Field(None, max_length=50)

    @model_validator(mode="after")
    def _amount_or_product(self) -> CreatePayment:
        if (self.amount is None) == (self.product_id is None):
            raise FieldsError("give exactly one of amount or product_id", ["amount", "product_id"])
        if self.amount is not None and self.currency and not currencies.fits(self.amount, self.currency):
            places = currencies.minor_units(self.currency)
            raise FieldsError(f"an amount in {self.currency} has at most {places} decimal places", ["amount"])
        return self


class ListPayments(Strict):
    page: QueryInt = Field(1, ge=1, le=1_000_000)
    pageSize: QueryInt = Field(10, ge=1, le=100)
    status: StatusName | None = None
    search: Annotated[str, StringConstraints(strip_whitespace=True, max_length=200)] | None = None


class PaymentPage(BaseModel):
    data: list[PaymentOut]
    meta: PageMeta


# ---- networks ---------------------------------------------------------------------------


class TokenOut(BaseModel):
    symbol: str
    contract: str | None
    decimals: int
    native: bool


class NetworkOut(BaseModel):
    name: str
    display_name: str = Field(description="the name people read, e.g. Base")
    kind: Literal["evm", "bitcoin"]
    chain_id: int | None
    required_confirmations: int
    live_enabled: bool
    tokens: list[TokenOut]
