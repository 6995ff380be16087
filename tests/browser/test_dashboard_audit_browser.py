"""The audit log and invitations in real Chromium, on a 390×844 phone and a 1280×800 laptop
(DESIGN §14): an owner's changes (a key made and revoked, a member's role changed) listed
newest first with who made them and from where, the filter by action, and the CSV link; an
invitation sent from the members page, its page, and the invitee signed up and in the store.
Each fits the screen, axe-core finds no serious problem, and the screenshots are kept in
tests/artifacts/screens."""

from __future__ import annotations

import re
import secrets
import time

import pytest
from playwright.sync_api import expect

from kassa_common import audit
from kassa_common.accounts import keys, merchants, stores
from kassa_common.db import unit_of_work
from tests.support.browser_dashboard import PASSWORD, log_in
from tests.support.screens import SIZES, looking

AGENT = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"


@pytest.fixture(scope="module")
def shop(sessions) -> str:
    """Ada owns Corner Shop; Bob joined it as a manager, then was made a viewer; a key was made and revoked."""
    ada, bob = (f"{who}-{secrets.token_hex(4)}@example.com" for who in ("ada", "bob"))
    by_ada = audit.Actor("account", None, ada, "198.51.100.23", AGENT)
    with unit_of_work(sessions) as s:  # one transaction per change: each row its own time
        corner = merchants.create_merchant(s, ada, PASSWORD, "Corner Shop", activate=True).id
        merchants.create_merchant(s, bob, PASSWORD, "Bob's Bike Repairs", activate=True)
    with unit_of_work(sessions) as s:
        stores.set_member(s, corner, stores.account_by_email(s, bob), "manager", actor=audit.OPERATOR)
    with unit_of_work(sessions) as s:
        made = keys.create_key(s, corner, "live", ["payments:read"], "Bookkeeping", actor=by_ada).row.id
    with unit_of_work(sessions) as s:
        keys.revoke_key(s, corner, made, actor=by_ada)
    with unit_of_work(sessions) as s:
        stores.set_member(s, corner, stores.account_by_email(s, bob), "viewer", actor=by_ada)
    return ada


@pytest.mark.parametrize("size", SIZES)
def test_the_audit_log_reads_right(size, stack, shop, browser, screenshots):
    with looking(browser, size, screenshots) as (page, look):
        log_in(page, stack, shop)
        page.goto(f"{stack.base}/dashboard/audit")
        expect(page.get_by_role("heading", level=1)).to_have_text("Audit log")
        rows = page.locator("#audit .audit-row")
        expect(rows).to_have_count(4)
        expect(rows.nth(0).locator(".audit-action")).to_have_text("member.role_changed")
        expect(rows.nth(0).locator(".audit-ip")).to_have_text("198.51.100.23")
        expect(rows.nth(3).locator(".audit-actor")).to_contain_text("operator")
        expect(page.locator("#audit-export")).to_have_attribute("href", "/dashboard/audit.csv")
        look("dashboard-audit")

        page.get_by_label("Action").select_option("api_key.revoked")
        page.get_by_role("button", name="Filter").click()
        expect(rows).to_have_count(1)
        expect(rows.nth(0).locator(".audit-action")).to_have_text("api_key.revoked")
        look("dashboard-audit-filtered")


def emailed_link(inbox, address: str) -> str:
    """The invitation link the stack's notifier emailed to ``address``."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for msg in inbox.to(address):
            found = re.search(r"https?://\S+/invitations/\S+", msg.get_content())
            if found:
                return found.group(0)
        time.sleep(0.2)
    raise AssertionError(f"no invitation emailed to {address}")


@pytest.fixture(scope="module")
def inviting(sessions) -> str:
    """Dora owns Tea Corner (a store of its own, so the audit log above stays as it is)."""
    dora = f"dora-{secrets.token_hex(4)}@example.com"
    with unit_of_work(sessions) as s:
        merchants.create_merchant(s, dora, PASSWORD, "Tea Corner", activate=True)
    return dora


@pytest.mark.parametrize("size", SIZES)
def test_an_invitation_reads_right_from_the_members_page_to_its_link(size, stack, inviting, browser, screenshots):
    invited = f"cleo-{secrets.token_hex(4)}@example.com"
    with looking(browser, size, screenshots) as (page, look):
        log_in(page, stack, inviting)
        page.goto(f"{stack.base}/dashboard/members")
        page.get_by_label("Email").fill(invited)
        page.get_by_label("Role", exact=True).select_option("employee")
        page.get_by_role("button", name="Send invitation").click()
        expect(page.locator("#invited")).to_contain_text(invited)
        expect(page.locator("#invite-link")).to_have_count(0)  # the stack sends email: the link goes by it alone
        link = emailed_link(stack.inbox, invited)
        look("dashboard-members-invited")

    with looking(browser, size, screenshots) as (page, look):
        page.goto(link)
        expect(page.get_by_role("heading", level=1)).to_have_text("Join Tea Corner")
        expect(page.locator("#invitation-what")).to_contain_text("employee")
        look("dashboard-invitation")
        page.get_by_label("Password (8+ characters)").fill("joining-pass-1")
        page.get_by_label("Password again").fill("joining-pass-1")
        page.get_by_role("button", name="Sign up and join").click()
        expect(page.locator("#store-switcher .dash-brand, .dash-brand").first).to_have_text("Tea Corner")
        look("dashboard-invitation-joined")
