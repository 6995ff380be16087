"""Request and response models of the payments and networks endpoints (the field types and
base models are ``kassa_common.fields``; each resource keeps its own models beside its
commands)."""
from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import BaseModel, Field, StringConstraints, model_validator

from kassa_common.fields import (
    Email, FieldsError, HttpUrl, MetaKey, MetaValue, Name, NetworkCode, PageMeta, Strict, TokenCode, UsdAmount)
from kassa_common.payments.shape import PaymentOut, StatusName  # PaymentOut: the payment object, defined once


# ---- payments ---------------------------------------------------------------------------

class CreatePayment(Strict):
    # The document states "exactly one of amount or product_id" (kassa_api.openapi).

    amount: Optional[UsdAmount] = Field(None, description="USD amount; required unless product_id is given")
    product_id: Optional[str] = Field(None, min_length=1, max_length=64,
                                      description="charge for this product instead of an amount")
    token: TokenCode = Field(description="token symbol, e.g. USDC (see GET /networks)")
    network: NetworkCode = Field(description="network name, e.g. BASE (see GET /networks)")
    customer_email: Optional[Email] = None
    customer_name: Optional[Name] = None
    redirect_url: Optional[HttpUrl] = None
    cancel_url: Optional[HttpUrl] = None
    metadata: Optional[dict[MetaKey, MetaValue]] = Field(None, max_length=50)

    @model_validator(mode="after")
    def _amount_or_product(self) -> "CreatePayment":
        if (self.amount is None) == (self.product_id is None):
            raise FieldsError("give exactly one of amount or product_id", ["amount", "product_id"])
        return self


class ListPayments(Strict):
    page: int = Field(1, ge=1, le=1_000_000)
    pageSize: int = Field(10, ge=1, le=100)
    status: Optional[StatusName] = None
    search: Optional[Annotated[str, StringConstraints(strip_whitespace=True, max_length=200)]] = None


class PaymentPage(BaseModel):
    data: list[PaymentOut]
    meta: PageMeta


# ---- networks ---------------------------------------------------------------------------

class TokenOut(BaseModel):
    symbol: str
    contract: Optional[str]
    decimals: int
    native: bool


class NetworkOut(BaseModel):
    name: str
    kind: Literal["evm", "bitcoin"]
    chain_id: Optional[int]
    required_confirmations: int
    live_enabled: bool
    tokens: list[TokenOut]
