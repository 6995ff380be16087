"""The resource namespaces of ``Kassa``: one class per resource, one method per endpoint."""

from kassa_client.resources.base import UNSET, Resource
from kassa_client.resources.events import Events
from kassa_client.resources.networks import Networks
from kassa_client.resources.payments import Payments
from kassa_client.resources.products import Products
from kassa_client.resources.refunds import Refunds
from kassa_client.resources.webhooks import Deliveries, Webhooks

__all__ = ["UNSET", "Deliveries", "Events", "Networks", "Payments", "Products", "Refunds", "Resource", "Webhooks"]
