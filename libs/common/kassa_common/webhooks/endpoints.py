"""Webhook endpoints: where and which events a merchant wants delivered."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Annotated, Any
from urllib.parse import urlsplit

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StringConstraints
from sqlalchemy.orm import Session

from kassa_common import audit
from kassa_common.errors import DomainError
from kassa_common.fields import EventName, HttpUrl, Strict
from kassa_common.ids import new_webhook_secret
from kassa_common.messaging.messages import WEBHOOK_EVENTS
from kassa_common.models import WebhookEndpoint
from kassa_common.owner import Owner, owned, soft_delete
from kassa_common.timefmt import iso, utcnow
from kassa_common.urls import without_password
from kassa_common.webhooks.netguard import host_is_private_literal

SECRET_OVERLAP = timedelta(hours=24)


class InvalidWebhook(DomainError):
    code = "VALIDATION_ERROR"


def check_url(url: str, test_mode: bool, allow_private: bool) -> None:
    parts = urlsplit(url)
    private = host_is_private_literal(parts.hostname or "")
    if private and not allow_private:
        raise InvalidWebhook("webhook URLs must point at a public host", [{"field": "url", "message": "private host"}])
    if not test_mode and parts.scheme != "https" and not private:
        raise InvalidWebhook("live-mode webhook URLs must use https", [{"field": "url", "message": "https required"}])


def create_webhook(
    session: Session, owner: Owner, fields: dict[str, Any], allow_private: bool, *, actor: audit.Actor = audit.OPERATOR
) -> WebhookEndpoint:
    """A new endpoint of the owner's mode (audited as ``actor``'s: the API and the dashboard
    pass theirs; the tests' set-up is the operator's)."""
    check_url(fields["url"], owner.test_mode, allow_private)
    now = utcnow()
    hook = WebhookEndpoint(
        id=uuid.uuid4(),
        merchant_id=owner.merchant_id,
        test_mode=owner.test_mode,
        url=fields["url"],
        events=sorted(set(fields.get("events") or WEBHOOK_EVENTS)),
        active=fields.get("active", True) is not False,
        description=fields.get("description"),
        secret=new_webhook_secret(),
        created_at=now,
        updated_at=now,
    )
    session.add(hook)
    session.flush()
    detail = f"{owner.mode}: {without_password(hook.url)}"
    audit.record(session, owner.merchant_id, actor, "webhook.created", "webhook", hook.id, detail)
    return hook


def update_webhook(
    session: Session, owner: Owner, ref: str, changes: dict[str, Any], allow_private: bool, *, actor: audit.Actor
) -> WebhookEndpoint:
    hook = owned(session, WebhookEndpoint, ref, owner, what="webhook", lock=True)
    cleared = [f for f in ("url", "events", "active") if f in changes and changes[f] is None]
    if cleared:
        raise InvalidWebhook(
            "these fields cannot be null", [{"field": f, "message": "cannot be null"} for f in cleared]
        )
    if "url" in changes:
        check_url(changes["url"], owner.test_mode, allow_private)
        hook.url = changes["url"]
    if "events" in changes:
        hook.events = sorted(set(changes["events"]))
    if "active" in changes:
        hook.active = changes["active"]
        if hook.active:  # re-enabled: a new chance, the failure streak starts over
            hook.failing_since = hook.disabled_at = None
    if "description" in changes:
        hook.description = changes["description"]
    hook.updated_at = utcnow()
    detail = f"{owner.mode}: {', '.join(sorted(changes)) or 'nothing'} changed; {without_password(hook.url)}"
    audit.record(session, owner.merchant_id, actor, "webhook.updated", "webhook", hook.id, detail)
    return hook


def rotate_secret(session: Session, owner: Owner, ref: str, *, actor: audit.Actor) -> WebhookEndpoint:
    """A new secret; the replaced one keeps signing beside it for ``SECRET_OVERLAP``, so a
    receiver can switch at its own pace (an older secret loses its overlap at once)."""
    hook = owned(session, WebhookEndpoint, ref, owner, what="webhook", lock=True)
    now = utcnow()
    hook.previous_secret, hook.previous_secret_expires_at = hook.secret, now + SECRET_OVERLAP
    hook.secret = new_webhook_secret()
    hook.updated_at = now
    audit.record(session, owner.merchant_id, actor, "webhook.secret_rotated", "webhook", hook.id, owner.mode)
    return hook


def delete_webhook(session: Session, owner: Owner, ref: str, *, actor: audit.Actor) -> None:
    """Hide the endpoint from get and list: nothing more is delivered to it."""
    soft_delete(session, WebhookEndpoint, ref, owner, what="webhook")
    audit.record(session, owner.merchant_id, actor, "webhook.deleted", "webhook", ref, owner.mode)


def active_endpoints(session: Session, merchant_id: uuid.UUID, test_mode: bool) -> list[WebhookEndpoint]:
    """The merchant's webhook endpoints of this mode that take deliveries, newest first."""
    return list(
        session.scalars(
            sa.select(WebhookEndpoint)
            .where(
                WebhookEndpoint.merchant_id == merchant_id,
                WebhookEndpoint.test_mode == test_mode,
                WebhookEndpoint.deleted_at.is_(None),
                WebhookEndpoint.active,
            )
            .order_by(WebhookEndpoint.created_at.desc())
        )
    )


# ---- API shape -------------------------------------------------------------------------


class WebhookFields(Strict):
    url: HttpUrl | None = None
    events: list[EventName] | None = Field(None, min_length=1, max_length=len(WEBHOOK_EVENTS))
    active: StrictBool | None = None
    description: Annotated[str, StringConstraints(max_length=500)] | None = None


class CreateWebhook(WebhookFields):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"url": "https://shop.example.com/hooks/kassa", "events": ["payment.completed"]}]
        }
    )
    url: HttpUrl


class UpdateWebhook(WebhookFields):
    model_config = ConfigDict(json_schema_extra={"examples": [{"description": "order fulfilment", "active": True}]})
    # Fields every endpoint has: absent leaves them as they are; null is not a value (400).
    url: HttpUrl = None  # type: ignore[assignment]
    events: list[EventName] = Field(None, min_length=1, max_length=len(WEBHOOK_EVENTS))  # type: ignore[arg-type]
    active: StrictBool = None  # type: ignore[assignment]


class WebhookOut(BaseModel):
    id: str
    url: str
    events: list[str]
    active: bool
    description: str | None
    test_mode: bool
    created_at: str
    updated_at: str


class WebhookWithSecret(WebhookOut):
    secret: str


def webhook_to_dict(w: WebhookEndpoint) -> dict[str, Any]:
    return {
        "id": str(w.id),
        "url": without_password(w.url),  # the password is not shown again
        "events": list(w.events),
        "active": w.active,
        "description": w.description,
        "test_mode": w.test_mode,
        "created_at": iso(w.created_at),
        "updated_at": iso(w.updated_at),
    }
