"""``kassa store …``: an operator's commands for stores and their members (DESIGN §14).

- ``kassa store create --email E --name N``: another store owned by the account of E, open at once.
- ``kassa store list --email E``: the stores that account can open, with its role in each.
- ``kassa store add-member STORE_ID --email E --role ROLE``: the operator's shortcut past an
  invitation; the account must exist (it signs up, or ``kassa merchant create``); a member
  already gets the new role.
- ``kassa store remove-member STORE_ID --email E``: never the store's last owner.

The rules live in ``kassa_common.accounts.stores``; these only parse and print.
"""

from __future__ import annotations

import argparse
import uuid
from collections.abc import Callable

from kassa_common import audit
from kassa_common.accounts import merchants, stores
from kassa_common.cli_io import out, unit_of_work_for
from kassa_common.config import Settings
from kassa_common.errors import NotFound
from kassa_common.models import ROLES, Merchant


def _store_id(text: str) -> uuid.UUID:
    try:
        return uuid.UUID(text.strip())
    except ValueError:
        raise NotFound(f"no store with id {text[:60]}") from None


def cmd_create(args, settings: Settings) -> None:
    with unit_of_work_for(settings) as s:
        store = merchants.create_store(s, args.email, args.name)
        data = {"id": str(store.id), "name": store.business_name, "role": stores.OWNER}
    out(args, data, f"store {data['name']} created, id {data['id']}, owned by {args.email}")


def cmd_list(args, settings: Settings) -> None:
    with unit_of_work_for(settings) as s:
        account = stores.account_by_email(s, args.email)
        rows = [{"id": str(r.id), "name": r.name, "role": r.role} for r in stores.stores_of(s, account.id)]
    lines = [f"{r['id']}  {r['role']:<8}  {r['name'] or '(no name yet)'}" for r in rows]
    out(args, rows, "\n".join(lines) or f"{args.email} has no store it can open")


def cmd_add_member(args, settings: Settings) -> None:
    with unit_of_work_for(settings) as s:
        store_id = _store_id(args.store_id)
        account = stores.find_account(s, args.email)
        if account is None:
            raise NotFound(
                f"no account with email {args.email[:320]}: they sign up first (or `kassa merchant create`), "
                "then add them"
            )
        member = stores.set_member(s, store_id, account, args.role, actor=audit.OPERATOR)
        name = _name(s.get(Merchant, store_id))
        data = {"store_id": str(store_id), "email": account.email, "role": member.role}
    out(args, data, f"{data['email']} is {data['role']} of store {name} ({data['store_id']})")


def cmd_remove_member(args, settings: Settings) -> None:
    with unit_of_work_for(settings) as s:
        store_id = _store_id(args.store_id)
        account = stores.account_by_email(s, args.email)
        role = stores.remove_member(s, store_id, account, actor=audit.OPERATOR)
        data = {"store_id": str(store_id), "email": account.email, "removed": True, "role": role}
    out(args, data, f"{data['email']} ({role}) removed from store {data['store_id']}")


def _name(store: Merchant | None) -> str:
    return (store.business_name if store else None) or "(no name yet)"


def add_parser(group: Callable[[str, str], argparse._SubParsersAction], leaf: Callable) -> None:
    """Add ``kassa store …`` with the CLI's own ``group`` and ``leaf`` builders."""
    store = group("store", "stores and their members: create, list, add or remove a member")
    c = leaf(store, "create", "create another store owned by an existing account")
    c.add_argument("--email", required=True, help="the owner's account")
    c.add_argument("--name", required=True, help="the store's name (its business name)")
    c.set_defaults(run=cmd_create)
    ls = leaf(store, "list", "the stores an account can open: id, name, role")
    ls.add_argument("--email", required=True)
    ls.set_defaults(run=cmd_list)
    a = leaf(store, "add-member", "make an existing account a member of a store (no invitation)")
    a.add_argument("store_id")
    a.add_argument("--email", required=True)
    a.add_argument("--role", required=True, choices=ROLES)
    a.set_defaults(run=cmd_add_member)
    r = leaf(store, "remove-member", "take an account out of a store (never its last owner)")
    r.add_argument("store_id")
    r.add_argument("--email", required=True)
    r.set_defaults(run=cmd_remove_member)
