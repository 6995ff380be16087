"""SQLAlchemy models: the tables of Kassa, one module per resource (the schema is owned by the
Alembic migrations, which read ``Base.metadata``: importing this package registers every table).

Where to look:

- ``base``: ``Base`` and the column helpers;
- ``accounts``: accounts, stores (``Merchant``) and their members and invitations, API keys, dashboard
  sessions, wallets, wallet changes;
- ``audit``: the audit log of each store;
- ``products``; ``payments``: payments, their transfers, idempotency keys; ``refunds``;
- ``sweeps``: sweeps, held deposits, what each sweep moved;
- ``webhooks``: endpoints, deliveries, attempts, and the notifier's emails;
- ``events``: the outbox and the consumers' processed messages;
- ``chains``: the watchers' cursors, reports, watermarks, blocks and mempool.

Import from here (``from kassa_common.models import Payment``), not from the modules.
"""

from kassa_common.models.accounts import (
    ROLES,
    Account,
    ApiKey,
    DashboardSession,
    Merchant,
    StoreInvitation,
    StoreMember,
    Wallet,
    WalletChange,
)
from kassa_common.models.audit import AuditEntry
from kassa_common.models.base import NOW, Base
from kassa_common.models.chains import ChainBlock, ChainCursor, ChainMempoolTransfer, ChainReport, SettledWatermark
from kassa_common.models.events import Event, ProcessedMessage
from kassa_common.models.payments import IdempotencyKey, Payment, Transfer
from kassa_common.models.products import Product
from kassa_common.models.refunds import Refund
from kassa_common.models.sweeps import Sweep, SweepHold, SweepItem
from kassa_common.models.webhooks import DeliveryAttempt, Notification, WebhookDelivery, WebhookEndpoint

__all__ = [
    "NOW",
    "ROLES",
    "Account",
    "ApiKey",
    "AuditEntry",
    "Base",
    "ChainBlock",
    "ChainCursor",
    "ChainMempoolTransfer",
    "ChainReport",
    "DashboardSession",
    "DeliveryAttempt",
    "Event",
    "IdempotencyKey",
    "Merchant",
    "Notification",
    "Payment",
    "ProcessedMessage",
    "Product",
    "Refund",
    "SettledWatermark",
    "StoreInvitation",
    "StoreMember",
    "Sweep",
    "SweepHold",
    "SweepItem",
    "Transfer",
    "Wallet",
    "WalletChange",
    "WebhookDelivery",
    "WebhookEndpoint",
]
