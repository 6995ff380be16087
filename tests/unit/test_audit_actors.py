"""The web names who asks: every call the web service (``kassa_api``) makes of a domain
operation that writes the audit log passes ``actor=`` (the creates default to the operator,
for the command line and the tests' set-up, so a route that forgot it would be misattributed),
and every action recorded is one the log knows (``kassa_common.audit.ACTIONS``)."""

from __future__ import annotations

import ast
from pathlib import Path

from kassa_common import audit

ROOT = Path(__file__).resolve().parents[2]
AUDITED = {
    "create_key",
    "revoke_key",
    "request_change",
    "cancel_own",
    "cancel_by_token",
    "set_member",
    "remove_member",
    "require_two_factor",
    "create_webhook",
    "update_webhook",
    "rotate_secret",
    "delete_webhook",
    "create_product",
    "update_product",
    "delete_product",
    "cancel_payment",
    "create_refund",
    "cancel_refund",
    "complete_with_hash",
    "change_password",
    "reset",
    "enable",
    "disable",
}
DOMAIN_MODULES = {"keys", "wallet_changes", "stores", "endpoints", "products", "payments", "transitions", "refunds"}
DOMAIN_MODULES |= {"payouts", "merchants", "password_reset", "twofactor"}


def calls_without_actor(source: str, path: str) -> list[str]:
    """Calls ``module.name(...)`` of an audited operation (on a domain module) with no ``actor=``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        owner = node.func.value
        audited = node.func.attr in AUDITED and isinstance(owner, ast.Name) and owner.id in DOMAIN_MODULES
        if audited and not any(k.arg == "actor" for k in node.keywords):
            found.append(f"{path}:{node.lineno}: {ast.unparse(node.func)}")
    return found


def web_sources() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text() for p in (ROOT / "services/api/kassa_api").rglob("*.py")}


def test_every_audited_operation_the_web_calls_is_given_the_actor():
    sources = web_sources()
    assert any("actor=dashboard_actor()" in s for s in sources.values())  # the rule has something to hold
    assert [hit for path, s in sources.items() for hit in calls_without_actor(s, path)] == []


def test_the_actor_check_would_see_a_call_without_one():
    probe = "keys.create_key(s, m, 'test', scopes)\nproducts.delete_product(s, o, r, actor=a)\nother.reset(x)\n"
    assert calls_without_actor(probe, "probe.py") == ["probe.py:1: keys.create_key"]


def test_every_action_the_log_offers_is_recorded_somewhere():
    """The page's filter offers ``ACTIONS``: each is written by some module besides ``audit``."""
    others = [p for p in (ROOT / "libs/common/kassa_common").rglob("*.py") if p.name != "audit.py"]
    text = "\n".join(p.read_text() for p in others)
    assert [a for a in audit.ACTIONS if f'"{a}"' not in text] == []
