"""Request and response models: they validate input and generate the OpenAPI document."""
from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Annotated, Any, Literal, Optional, Union
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StringConstraints,
    ValidationError,
    WithJsonSchema,
    WrapValidator,
    model_validator,
)

from kassa_common.emails import valid_email
from kassa_common.messages import PAYMENT_EVENTS
from kassa_common.payments.shape import PaymentOut, StatusName  # PaymentOut: the payment object, defined once

class FieldsError(ValueError):
    """A rule spanning several fields: the error details name each of ``fields``."""

    def __init__(self, message: str, fields: list[str]) -> None:
        super().__init__(message)
        self.fields = fields


def _number(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        raise ValueError("must be a JSON number")
    return value


def _email(value: str) -> str:
    return valid_email(value)  # the one rule (kassa_common.emails); InvalidEmail is a ValueError


def _http_url(value: str) -> str:
    if not re.match(r"^https?://[^\s/$.?#][^\s]*$", value, re.I):
        raise ValueError("must be an absolute http(s) URL")
    try:
        parts = urlsplit(value)
        port = parts.port  # raises ValueError when out of range
    except ValueError:
        port = 0
    if port == 0:
        raise ValueError("must be an absolute http(s) URL with a valid host and port")
    if not parts.hostname:
        raise ValueError("must be an absolute http(s) URL with a host")
    return value


def _meta_value(value: Any, handler: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("metadata numbers must be finite")
    try:
        result = handler(value)
    except ValidationError:
        raise ValueError("metadata values are strings (up to 500 characters), numbers, booleans or null") from None
    if isinstance(result, float) and not math.isfinite(result):
        raise ValueError("metadata numbers must be finite")
    return result


def _upper(value: Any) -> Any:
    return value.strip().upper() if isinstance(value, str) else value


UsdAmount = Annotated[Decimal, BeforeValidator(_number),
                      Field(ge=Decimal("0.01"), le=Decimal("1000000000"), decimal_places=2),
                      WithJsonSchema({"type": "number", "minimum": 0.01, "maximum": 1e9, "multipleOf": 0.01})]
Price = Annotated[Decimal, BeforeValidator(_number),
                  Field(ge=Decimal("0.01"), le=Decimal("1000000000"), decimal_places=18),
                  WithJsonSchema({"type": "number", "minimum": 0.01, "maximum": 1e9,
                                  "description": "USD (2 decimals) for FIAT; token units for CRYPTO"})]
Email = Annotated[str, StringConstraints(strip_whitespace=True, max_length=320), AfterValidator(_email),
                  WithJsonSchema({"type": "string", "format": "email", "maxLength": 320})]
HttpUrl = Annotated[str, StringConstraints(strip_whitespace=True, max_length=2048), AfterValidator(_http_url),
                    WithJsonSchema({"type": "string", "format": "uri", "maxLength": 2048,
                                    "description": "absolute http(s) URL"})]
Code = Annotated[str, BeforeValidator(_upper), StringConstraints(min_length=1, max_length=32, pattern=r"^[A-Z0-9_]+$")]
# Token and network names: openapi.py lists the values of the running server's registry
# wherever this marker is (case-insensitive on input, upper case on output).
TokenCode = Annotated[Code, WithJsonSchema({"type": "string", "x-kassa-values": "tokens"})]
NetworkCode = Annotated[Code, WithJsonSchema({"type": "string", "x-kassa-values": "networks"})]
Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200, pattern=r"\S")]
MetaKey = Annotated[str, StringConstraints(min_length=1, max_length=40)]
MetaValue = Annotated[Union[Annotated[str, StringConstraints(max_length=500)], int, float, bool, None],
                      WrapValidator(_meta_value)]
EventName = Literal[tuple(e.value for e in PAYMENT_EVENTS)]  # type: ignore[valid-type]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", str_max_length=10_000)


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


class PageMeta(BaseModel):
    page: int
    pageSize: int
    total: int
    pages: int


class PaymentPage(BaseModel):
    data: list[PaymentOut]
    meta: PageMeta


# ---- products ---------------------------------------------------------------------------

class ProductFields(Strict):
    name: Optional[Name] = None
    description: Optional[Annotated[str, StringConstraints(max_length=2000)]] = None
    price: Optional[Price] = None
    currency_type: Optional[Literal["FIAT", "CRYPTO"]] = None
    token: Optional[TokenCode] = None
    network: Optional[NetworkCode] = None
    active: Optional[StrictBool] = None


class CreateProduct(ProductFields):
    name: Name
    price: Price
    currency_type: Literal["FIAT", "CRYPTO"] = "FIAT"


class UpdateProduct(ProductFields):
    # Fields every product has: absent leaves them as they are; null is not a value (400).
    name: Name = None  # type: ignore[assignment]
    price: Price = None  # type: ignore[assignment]
    currency_type: Literal["FIAT", "CRYPTO"] = None  # type: ignore[assignment]
    active: StrictBool = None  # type: ignore[assignment]


class ListPage(Strict):
    page: int = Field(1, ge=1, le=1_000_000)
    pageSize: int = Field(10, ge=1, le=100)


class ProductOut(BaseModel):
    id: str
    name: str
    description: Optional[str]
    price: Union[float, str]
    currency_type: Literal["FIAT", "CRYPTO"]
    token: Optional[str]
    network: Optional[str]
    active: bool
    share_link: str
    test_mode: bool
    created_at: str
    updated_at: str


class Deleted(BaseModel):
    deleted: bool


# ---- webhooks ---------------------------------------------------------------------------

class WebhookFields(Strict):
    url: Optional[HttpUrl] = None
    events: Optional[list[EventName]] = Field(None, min_length=1, max_length=len(PAYMENT_EVENTS))
    active: Optional[StrictBool] = None
    description: Optional[Annotated[str, StringConstraints(max_length=500)]] = None


class CreateWebhook(WebhookFields):
    url: HttpUrl


class UpdateWebhook(WebhookFields):
    # Fields every endpoint has: absent leaves them as they are; null is not a value (400).
    url: HttpUrl = None  # type: ignore[assignment]
    events: list[EventName] = Field(None, min_length=1, max_length=len(PAYMENT_EVENTS))  # type: ignore[assignment]
    active: StrictBool = None  # type: ignore[assignment]


class WebhookOut(BaseModel):
    id: str
    url: str
    events: list[str]
    active: bool
    description: Optional[str]
    test_mode: bool
    created_at: str
    updated_at: str


class WebhookWithSecret(WebhookOut):
    secret: str


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
