"""Public pages, by page family, on one blueprint (``common.bp``): the hosted checkout
(/pay/<short_id>, ``checkout``), the product page (/products/<id>, ``products``) and a
refund's claim page (/refunds/<claim token>, ``refunds``)."""

from kassa_api.routes.pages import checkout, products, refunds
from kassa_api.routes.pages.common import bp

__all__ = ["bp", "checkout", "products", "refunds"]
