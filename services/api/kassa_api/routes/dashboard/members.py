"""The open store's members (DESIGN §14): who may open it and with which role; an owner
changes a member's role or removes a member, never the store's last owner.

Managers see the list; changes are an owner's (``roles``), and so is requiring two-factor
sign-in of every member (a member without it is sent to turn it on before the store
opens). Nobody is added without consent: an owner invites an email with a role (the link is
emailed, and shown here too when the server sends no email), which the invitee accepts on
the invitation's page (``invitations``); or the operator runs ``kassa store add-member``. An
owner sees the open invitations and may revoke one. A member who removes itself, or makes itself less than manager,
goes where it still may.
"""

from __future__ import annotations

import uuid

from flask import Blueprint, abort, g, redirect, request, url_for

from kassa_common.accounts import invitations, stores
from kassa_common.errors import DomainError
from kassa_common.ids import parse_uuid
from kassa_common.models import ROLES, Account
from kassa_api.actors import dashboard_actor
from kassa_api.deps import db, deps, transaction
from kassa_api.routes.dashboard.common import login_required, render, unconfirmed

bp = Blueprint("members", __name__)
NO_MEMBER = "No such member of this store."


def _page(status: int = 200, /, **context):
    members, invited = stores.members_of(db(), g.merchant.id), invitations.pending(db(), g.merchant.id)
    return render("members.html", status, members=members, invited=invited, roles=ROLES, **context)


def _member_or_404(ref: str) -> Account:
    """A member of the open store (by account id), or the 404 page: never any other account."""
    account_id = parse_uuid(ref)
    account = db().get(Account, account_id) if account_id is not None else None
    if account is None or stores.role_of(db(), account.id, g.merchant.id) is None:
        abort(404, description=NO_MEMBER)
    return account


def _away_if_self(account_id: uuid.UUID):
    """Where to go after changing oneself: the members page only if still allowed on it."""
    if account_id == g.account.id:
        return redirect(url_for("dashboard.stores.index"), 303)
    return redirect(url_for("dashboard.members.index"), 303)


@bp.get("/members")
@login_required
def index():
    return _page()


@bp.post("/members/two-factor")
@login_required
def two_factor():
    """Require two-factor sign-in of every member, or stop requiring it (an owner who has it on)."""
    on = request.form.get("require_2fa") == "on"
    try:
        with transaction() as s:
            stores.require_two_factor(s, g.merchant.id, g.account, on, actor=dashboard_actor())
    except DomainError as exc:
        return _page(400, error=exc.message)
    said = "now requires" if on else "no longer requires"
    return _page(notice=f"The store {said} two-factor sign-in of its members.")


@bp.post("/members/<ref>/role")
@login_required
def change_role(ref: str):
    account = _member_or_404(ref)
    try:
        with transaction() as s:
            stores.set_member(s, g.merchant.id, account, request.form.get("role", "")[:20], actor=dashboard_actor())
    except DomainError as exc:
        return _page(400, error=exc.message)
    return _away_if_self(account.id)


@bp.post("/members/<ref>/remove")
@login_required
def remove(ref: str):
    account = _member_or_404(ref)
    yourself = account.id == g.account.id
    asking = unconfirmed(
        "Leave this store?" if yourself else f"Remove {account.email} from this store?",
        "You will no longer open it." if yourself else "They will no longer open it; their account stays.",
        "Leave store" if yourself else "Remove member",
        url_for("dashboard.members.index"),
    )
    if asking is not None:
        return asking
    try:
        with transaction() as s:
            stores.remove_member(s, g.merchant.id, account, actor=dashboard_actor())
    except DomainError as exc:
        return _page(400, error=exc.message)
    return _away_if_self(account.id)


@bp.post("/members/invite")
@login_required
def invite():
    """Invite an email with a role: the link is emailed; without email (no SMTP_URL) the page
    shows it, for the owner to pass on."""
    settings = deps().settings
    try:
        with transaction() as s:
            made = invitations.invite(
                s,
                g.merchant,
                request.form.get("email", "")[:320],
                request.form.get("role", "")[:20],
                by=g.account,
                actor=dashboard_actor(),
                dashboard_url=settings.dashboard_url,
            )
    except DomainError as exc:
        return _page(400, error=exc.message)
    email = made.invitation.email
    if settings.sender.smtp_url:
        return _page(notice=f"Invitation emailed to {email}.")
    return _page(notice=f"This server sends no email: give {email} this link yourself.", invite_link=made.link)


@bp.post("/members/invitations/<ref>/revoke")
@login_required
def revoke_invitation(ref: str):
    invitation_id = parse_uuid(ref)
    with transaction() as s:
        done = invitation_id is not None and invitations.revoke(
            s, g.merchant.id, invitation_id, actor=dashboard_actor()
        )
    if not done:
        abort(404, description="No such open invitation.")
    return redirect(url_for("dashboard.members.index"), 303)
