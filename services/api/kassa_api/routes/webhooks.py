"""/webhooks: endpoints that receive signed event deliveries."""

from __future__ import annotations

from flask import Blueprint

from kassa_common.fields import Deleted, ListPage
from kassa_common.models import WebhookEndpoint
from kassa_common.owner import list_owned, owned
from kassa_common.paging import page_meta
from kassa_common.webhooks import endpoints
from kassa_common.webhooks.endpoints import CreateWebhook, UpdateWebhook, WebhookOut, WebhookWithSecret, webhook_to_dict
from kassa_api.actors import api_actor
from kassa_api.auth import owner
from kassa_api.deps import db, deps, transaction
from kassa_api.endpoint import endpoint

bp = Blueprint("webhooks", __name__)
SCOPE = "webhooks:manage"


def with_secret(hook: WebhookEndpoint) -> dict:
    return {**webhook_to_dict(hook), "secret": hook.secret}


@bp.post("/webhooks")
@endpoint(
    "Create a webhook endpoint (the secret is shown only here)",
    scope=SCOPE,
    tag="webhooks",
    body=CreateWebhook,
    response=WebhookWithSecret,
    status=201,
)
def create_webhook(body: CreateWebhook):
    with transaction() as session:
        hook = endpoints.create_webhook(
            session,
            owner(),
            body.model_dump(exclude_unset=True),
            deps().settings.sender.webhook_allow_private_urls,
            actor=api_actor(),
        )
    return with_secret(hook), 201


@bp.get("/webhooks")
@endpoint(
    "List webhook endpoints",
    scope=SCOPE,
    tag="webhooks",
    query=ListPage,
    response=list[WebhookOut],
    envelope_kind="list",
)
def list_webhooks(query: ListPage):
    rows, total = list_owned(db(), WebhookEndpoint, owner(), query.page, query.pageSize)
    return {"data": [webhook_to_dict(r) for r in rows], "meta": page_meta(query.page, query.pageSize, total)}


@bp.get("/webhooks/<ref>")
@endpoint("Get a webhook endpoint", scope=SCOPE, tag="webhooks", response=WebhookOut, errors=(404,))
def get_webhook(ref: str):
    return webhook_to_dict(owned(db(), WebhookEndpoint, ref, owner(), what="webhook"))


@bp.patch("/webhooks/<ref>")
@endpoint(
    "Update a webhook endpoint", scope=SCOPE, tag="webhooks", body=UpdateWebhook, response=WebhookOut, errors=(404,)
)
def update_webhook(ref: str, body: UpdateWebhook):
    with transaction() as session:
        hook = endpoints.update_webhook(
            session,
            owner(),
            ref,
            body.model_dump(exclude_unset=True),
            deps().settings.sender.webhook_allow_private_urls,
            actor=api_actor(),
        )
    return webhook_to_dict(hook)


@bp.delete("/webhooks/<ref>")
@endpoint(
    "Delete a webhook endpoint", scope=SCOPE, tag="webhooks", response=Deleted, envelope_kind="bare", errors=(404,)
)
def delete_webhook(ref: str):
    with transaction() as session:
        endpoints.delete_webhook(session, owner(), ref, actor=api_actor())
    return {"deleted": True}


@bp.post("/webhooks/<ref>/rotate-secret")
@endpoint(
    "Replace the signing secret (the new one is shown only here)",
    scope=SCOPE,
    tag="webhooks",
    response=WebhookWithSecret,
    errors=(404,),
)
def rotate_secret(ref: str):
    with transaction() as session:
        hook = endpoints.rotate_secret(session, owner(), ref, actor=api_actor())
    return with_secret(hook)
