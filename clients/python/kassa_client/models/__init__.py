"""The typed objects the API answers with."""

from kassa_client.models.base import KassaObject, ResponseFormatError
from kassa_client.models.events import Event, EventData
from kassa_client.models.networks import Network, Token
from kassa_client.models.payments import PAYMENT_STATUSES, Payment, Transfer, WrongNetworkFunds
from kassa_client.models.products import Product
from kassa_client.models.refunds import REFUND_STATUSES, Refund
from kassa_client.models.webhooks import Delivery, DeliveryAttempt, Webhook

__all__ = [
    "PAYMENT_STATUSES",
    "REFUND_STATUSES",
    "Delivery",
    "DeliveryAttempt",
    "Event",
    "EventData",
    "KassaObject",
    "Network",
    "Payment",
    "Product",
    "Refund",
    "ResponseFormatError",
    "Token",
    "Transfer",
    "Webhook",
    "WrongNetworkFunds",
]
