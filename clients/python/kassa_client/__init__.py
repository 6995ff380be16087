"""kassa-client: a typed Python client for the Kassa merchant API.

::

    from kassa_client import Kassa

    kassa = Kassa("kassa_test_…", base_url="http://127.0.0.1:8000/v1/api")
    payment = kassa.payments.create(amount="25.00", token="USDC", network="BASE",
                                    metadata={"order_id": "1001"})
    for p in kassa.payments.iterate(status="COMPLETED"):
        print(p.short_id, p.amount_received, p.completed_at)
"""

from kassa_client._version import __version__
from kassa_client.client import Kassa
from kassa_client.errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    ForbiddenError,
    KassaError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    ServiceUnavailableError,
    SignatureVerificationError,
    UnprocessableError,
    ValidationError,
)
from kassa_client.models import (
    Delivery,
    DeliveryAttempt,
    Event,
    KassaObject,
    Network,
    Payment,
    Product,
    Refund,
    ResponseFormatError,
    Token,
    Transfer,
    Webhook,
    WrongNetworkFunds,
)
from kassa_client.pages import Page
from kassa_client.resources import UNSET
from kassa_client.signing import construct_event, signature_header, verify_signature

ConnectionError = APIConnectionError  # noqa: A001 - the name the API's errors are documented by

__all__ = [
    "UNSET",
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "AuthenticationError",
    "BadRequestError",
    "ConflictError",
    "Delivery",
    "DeliveryAttempt",
    "Event",
    "ForbiddenError",
    "Kassa",
    "KassaError",
    "KassaObject",
    "Network",
    "NotFoundError",
    "Page",
    "Payment",
    "PermissionDeniedError",
    "Product",
    "RateLimitError",
    "Refund",
    "ResponseFormatError",
    "ServerError",
    "ServiceUnavailableError",
    "SignatureVerificationError",
    "Token",
    "Transfer",
    "UnprocessableError",
    "ValidationError",
    "Webhook",
    "WrongNetworkFunds",
    "__version__",
    "construct_event",
    "signature_header",
    "verify_signature",
]
