"""``kassa``: the operator command line (docs/operations.md).

Other installed packages add commands through the ``kassa.cli`` entry-point group: each
entry point names a callable that takes the top-level subparsers and adds its own group
(the development tooling adds ``kassa dev ...`` that way). A command's ``run`` is called
as ``run(args, settings)``, like the built-in ones. This module never imports a plugin by
name, so the product does not depend on what happens to be installed beside it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any, cast

from pika.exceptions import AMQPError
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from kassa_common import audit, cli_stores
from kassa_common.accounts import keys, logins, merchants, password_reset, stores, twofactor
from kassa_common.bootstrap import load_settings
from kassa_common.cli_io import out, unit_of_work_for
from kassa_common.config import Settings
from kassa_common.errors import DomainError
from kassa_common.pricing import terms
from kassa_common.timefmt import iso

PLUGIN_GROUP = "kassa.cli"


def cmd_db_upgrade(args, settings: Settings) -> None:
    from kassa_common.migrate import upgrade

    upgrade(settings.database_url)
    out(args, {"upgraded": True}, "database is at the latest schema")


def cmd_merchant_create(args, settings: Settings) -> None:
    with unit_of_work_for(settings) as s:
        m = merchants.create_merchant(s, args.email, args.password, args.business_name, args.activate)
        data = {"id": str(m.id), "email": m.email, "activated": m.activated}
    out(
        args,
        data,
        f"merchant {data['email']} created ({'active' if data['activated'] else 'not activated'}), id {data['id']}",
    )


def _set_flag(flag: str, value: bool) -> Callable:
    def run(args, settings: Settings) -> None:
        with unit_of_work_for(settings) as s:
            m = merchants.merchant_by_email(s, args.email)
            if flag == "activated" and value:  # the merchant is emailed that it can sign in
                merchants.activate(s, m, settings.dashboard_url)
            else:
                setattr(m, flag, value)
            data = {"id": str(m.id), "email": m.email, "activated": m.activated, "banned": m.banned}
        out(args, data, f"merchant {data['email']}: {flag} = {value}")

    return run


def cmd_merchant_2fa(args, settings: Settings) -> None:
    """Show whether two-factor sign-in is on; ``--disable`` turns it off (a merchant who lost
    the device) and signs every login of the merchant out, as any two-factor change does."""
    with unit_of_work_for(settings) as s:
        account = stores.account_by_email(s, args.email)
        signed_out = None
        if args.disable:
            twofactor.disable(s, account, actor=audit.OPERATOR)
            signed_out = logins.make_store(cast(Engine, s.get_bind()), settings.redis_url).revoke_all(account.id)
        data = {"email": account.email, "two_factor": account.totp_enabled_at is not None}
    if signed_out is not None:
        data["logins_signed_out"] = signed_out
    text = f"merchant {data['email']}: two-factor sign-in {'on' if data['two_factor'] else 'off'}"
    out(args, data, text + (f"; {signed_out} login(s) signed out" if signed_out is not None else ""))


def cmd_merchant_reset_password(args, settings: Settings) -> None:
    """Print the link "Forgot your password?" emails, for a merchant who cannot get the email:
    valid for ``password_reset.LIFETIME``, dead once used; nothing changes until it is used."""
    secret = settings.web.secret_key
    with unit_of_work_for(settings) as s:
        account = stores.account_by_email(s, args.email)
        token = password_reset.make_token(account, secret)
        if password_reset.account_of(s, token, secret) is None:
            raise ValueError(f"merchant {account.email} is banned: a reset link would not open")
        url, email = f"{settings.dashboard_url}/reset/{token}", account.email
    minutes = int(password_reset.LIFETIME.total_seconds() // 60)
    text = f"{url}\n(a new password for {email} through this link: it works once, within {minutes} minutes)"
    out(args, {"email": email, "reset_url": url, "valid_minutes": minutes}, text)


def cmd_merchant_settings(args, settings: Settings) -> None:
    """Print the merchant's settings, after changing those given."""
    with unit_of_work_for(settings) as s:
        m = merchants.merchant_by_email(s, args.email)
        merchants.set_merchant_settings(
            m, payment_lifetime=args.payment_lifetime, underpayment_tolerance=args.underpayment_tolerance
        )
        terms.set_terms(m, spread=args.rate_spread, lock=args.rate_lock)
        now, address = merchants.merchant_settings(m, settings.payment_lifetime_minutes), m.email
        pricing = terms.terms_of(m)
    data = {
        "email": address,
        "payment_lifetime_minutes": now.payment_lifetime_minutes,
        "payment_lifetime_default": now.lifetime_is_default,
        "underpayment_tolerance_percent": now.tolerance_percent,
        "rate_spread_pct": pricing.spread_text,
        "rate_lock_minutes": pricing.lock_minutes,
    }
    default = " (the default, PAYMENT_LIFETIME_MINUTES)" if now.lifetime_is_default else ""
    lock = f"{pricing.lock_minutes} minutes" if pricing.lock_minutes else "the payment lifetime"
    out(
        args,
        data,
        f"merchant {address}: payment lifetime {now.payment_lifetime_minutes} minutes{default}, "
        f"underpayment tolerance {now.tolerance_percent}%, rate spread {pricing.spread_text}%, "
        f"rate lock {lock}",
    )


def cmd_key_create(args, settings: Settings) -> None:
    with unit_of_work_for(settings) as s:
        m = merchants.merchant_by_email(s, args.email)
        new = keys.create_key(s, m.id, args.mode, [x.strip() for x in args.scopes.split(",") if x.strip()], args.name)
        data = {"key": new.key, "id": str(new.row.id), "mode": args.mode, "scopes": new.row.scopes}
    out(args, data, f"{data['key']}\n(shown once: store it now; id {data['id']})")


def cmd_key_list(args, settings: Settings) -> None:
    """A merchant's keys, newest first: never their secret, with when each was made and last used."""
    with unit_of_work_for(settings) as s:
        m = merchants.merchant_by_email(s, args.email)
        rows: list[dict[str, Any]] = [
            {
                "id": str(k.id),
                "name": k.name,
                "mode": k.mode,
                "prefix": k.prefix,
                "scopes": k.scopes,
                "created_at": iso(k.created_at),
                "last_used_at": iso(k.last_used_at),
                "revoked_at": iso(k.revoked_at),
            }
            for k in keys.api_keys(s, m.id)
        ]
    lines = [
        f"{k['prefix']}  {k['mode']}  {k['name'] or 'unnamed'}  created {_minute(k['created_at'])}"
        f"  last used {_minute(k['last_used_at']) if k['last_used_at'] else 'never'}"
        + ("  revoked" if k["revoked_at"] else "")
        for k in rows
    ]
    out(args, {"email": m.email, "keys": rows}, "\n".join(lines) or f"merchant {args.email} has no API keys")


def _minute(stamp: str | None) -> str:
    """``2026-01-02T03:04:05.678Z`` → ``2026-01-02 03:04 UTC`` (last use is kept to the minute)."""
    return f"{stamp[:10]} {stamp[11:16]} UTC" if stamp else ""


def cmd_wallet_set(args, settings: Settings) -> None:
    if args.address is not None:
        _set_settlement_address(args, settings)
        return
    from kassa_common.payments.addresses import first_address

    with unit_of_work_for(settings) as s:
        m = merchants.merchant_by_email(s, args.email)
        saved = merchants.set_wallet(s, m.id, args.mode, args.chain, args.xpub, allow_test_keys=settings.development)
    first = first_address(args.chain, saved.xpub, args.mode == "test")
    data = {
        "email": args.email,
        "mode": args.mode,
        "chain": args.chain,
        "first_address": first,
        "warning": saved.warning,
    }
    if saved.warning:
        print(f"kassa: warning: {saved.warning}", file=sys.stderr)
    out(args, data, f"{args.chain} wallet set for {args.email} ({args.mode}); first address {first}")


def cmd_wallet_descriptor(args, settings: Settings) -> None:
    """The watch-only descriptors of the merchant's Bitcoin key, and the gap limit it needs."""
    from kassa_common.payments.gap import bitcoin_watch_only

    if args.chain != "bitcoin":
        raise ValueError("descriptors are for --chain bitcoin: an EVM wallet watches an account, not a script")
    with unit_of_work_for(settings) as s:
        m = merchants.merchant_by_email(s, args.email)
        watch = bitcoin_watch_only(s, m.id, args.mode, settings.networks, fingerprint=args.fingerprint)
    if watch is None:
        raise ValueError(
            f"no bitcoin wallet is set for {args.email} in {args.mode} mode"
            + (" (test payments use Kassa's published test key)" if args.mode == "test" else "")
            + f": set one with `kassa wallet set --email {args.email} --mode {args.mode} "
            "--chain bitcoin --xpub ...`"
        )
    if watch.gap.warning():
        print(f"kassa: warning: {watch.gap.warning()}", file=sys.stderr)
    data = {"email": args.email, "mode": args.mode, "chain": "bitcoin", **watch.to_json()}
    out(args, data, "\n".join(watch.lines()))


def _set_settlement_address(args, settings: Settings) -> None:
    if args.chain != "evm":
        raise ValueError(
            "a settlement address (forwarder settlement) is for --chain evm; "
            "give Bitcoin an extended public key with --xpub"
        )
    with unit_of_work_for(settings) as s:
        m = merchants.merchant_by_email(s, args.email)
        address = merchants.set_settlement_address(s, m.id, args.mode, args.address)
    data = {"email": args.email, "mode": args.mode, "chain": "evm", "settlement_address": address}
    out(
        args,
        data,
        f"evm settlement address {address} set for {args.email} ({args.mode}): each payment gets "
        "its own deposit address, which can only forward to it",
    )


def cmd_bus_status(args, settings: Settings) -> None:
    from kassa_common.messaging import admin, topology

    depths = admin.queue_depths(settings.rabbitmq_url, topology.named(settings.bus_prefix))
    rows = [f"{'queue':<40} {'role':<6} {'messages':>9} {'consumers':>9}"]
    rows += [f"{d.name:<40} {d.role:<6} {d.messages:>9} {d.consumers:>9}" for d in depths]
    parked = sum(d.messages for d in depths if d.role == "dlq")
    if parked:
        rows.append(f"{parked} message(s) dead-lettered: see docs/operations.md before `kassa bus redrive QUEUE`")
    out(args, {"queues": [vars(d) for d in depths], "dead_lettered": parked}, "\n".join(rows))


def cmd_bus_redrive(args, settings: Settings) -> None:
    from kassa_common.messaging import admin, topology

    topo = topology.named(settings.bus_prefix)
    q = admin.find_queue(topo, _prefixed(settings, args.queue))
    moved = admin.redrive(settings.rabbitmq_url, topo, q.dlq, limit=args.limit)
    out(args, {"queue": q.dlq, "moved": moved, "to": q.name}, f"moved {moved} message(s) from {q.dlq} to {q.name}")


def _prefixed(settings: Settings, name: str) -> str:
    """Queue names as the operator types them, with BUS_PREFIX added when it is missing."""
    if settings.bus_prefix and not name.startswith(settings.bus_prefix + "."):
        return f"{settings.bus_prefix}.{name}"
    return name


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="kassa",
        description="Kassa's operator commands: the database, merchants, stores, API keys, wallets, the broker, "
        "the forwarder contracts and sweeps (and `kassa dev` in a development install).",
        epilog="`kassa COMMAND --help` describes each command. Settings come from the environment, "
        "then from ./.env (the file `make run` writes).",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    # --json after the command too (kassa key create ... --json); SUPPRESS: a leaf keeps one given before it
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")
    sub = p.add_subparsers(dest="group", required=True)

    def group(name: str, about: str) -> argparse._SubParsersAction:
        return sub.add_parser(name, help=about).add_subparsers(dest="cmd", required=True)

    def leaf(parent: argparse._SubParsersAction, name: str, about: str, **kwargs) -> argparse.ArgumentParser:
        return parent.add_parser(name, parents=[common], help=about, **kwargs)

    db = group("db", "the database schema")
    leaf(db, "upgrade", "migrate the database to the latest schema").set_defaults(run=cmd_db_upgrade)

    merchant = group("merchant", "merchant accounts: create, activate, ban, two-factor, password reset, settings")
    c = leaf(merchant, "create", "create a merchant account (--activate to let it sign in at once)")
    for required in ("--email", "--password", "--business-name"):
        c.add_argument(required, required=True)
    c.add_argument("--activate", action="store_true")
    c.set_defaults(run=cmd_merchant_create)
    for name, run, text in (
        ("activate", _set_flag("activated", True), "let a signed-up merchant sign in and use the API (emailed so)"),
        ("ban", _set_flag("banned", True), "lock a merchant out of the dashboard and the API"),
        ("reset-password", cmd_merchant_reset_password, "print a one-time link (an hour) to choose a new password"),
    ):
        a = leaf(merchant, name, text)
        a.add_argument("email")
        a.set_defaults(run=run)
    tf = leaf(merchant, "2fa", "two-factor sign-in of a merchant: show it, or --disable it")
    tf.add_argument("email")
    tf.add_argument("--disable", action="store_true", help="turn it off (the merchant enrols again)")
    tf.set_defaults(run=cmd_merchant_2fa)
    st = leaf(merchant, "settings", "print a merchant's settings, changing those given")
    st.add_argument("email")
    st.add_argument(
        "--payment-lifetime",
        metavar="MIN",
        help=f"minutes new payments stay open, {merchants.MIN_LIFETIME}-{merchants.MAX_LIFETIME} "
        '("default": PAYMENT_LIFETIME_MINUTES)',
    )
    st.add_argument(
        "--underpayment-tolerance",
        metavar="PCT",
        help=f"percent a confirmed total may fall short and still complete, 0-{merchants.MAX_TOLERANCE_PERCENT}",
    )
    st.add_argument("--rate-spread", metavar="PCT", help=f"percent added to what customers pay, 0-{terms.MAX_SPREAD}")
    st.add_argument(
        "--rate-lock",
        metavar="MIN",
        help=f"minutes a quoted crypto amount holds, {terms.MIN_LOCK}-{terms.MAX_LOCK} "
        '("default": the payment lifetime)',
    )
    st.set_defaults(run=cmd_merchant_settings)

    key = group("key", "API keys")
    k = leaf(key, "create", "create an API key for a merchant (the secret is shown once)")
    k.add_argument("--email", required=True)
    k.add_argument("--mode", required=True, choices=merchants.MODES)
    k.add_argument("--scopes", required=True, help="comma-separated: " + ",".join(keys.SCOPES))
    k.add_argument("--name")
    k.set_defaults(run=cmd_key_create)
    kl = leaf(key, "list", "list a merchant's API keys: mode, scopes, created, last used (never the secret)")
    kl.add_argument("--email", required=True)
    kl.set_defaults(run=cmd_key_list)

    wallet = group("wallet", "where a merchant's payments are paid: extended public keys or settlement addresses")
    w = leaf(wallet, "set", "set the wallet of a merchant's mode and chain")
    w.add_argument("--email", required=True)
    w.add_argument("--mode", required=True, choices=merchants.MODES)
    w.add_argument("--chain", required=True, choices=merchants.CHAINS)
    where = w.add_mutually_exclusive_group(required=True)
    where.add_argument("--xpub", help="account-level extended public key: each payment gets its next address")
    where.add_argument(
        "--address",
        help="EVM settlement address (forwarder settlement): each payment gets a "
        "deposit address that can only forward to it",
    )
    w.set_defaults(run=cmd_wallet_set)
    wd = leaf(wallet, "descriptor", "the watch-only output descriptors and the gap limit the wallet needs")
    wd.add_argument("--email", required=True)
    wd.add_argument("--mode", required=True, choices=merchants.MODES)
    wd.add_argument("--chain", required=True, choices=merchants.CHAINS, help="bitcoin (descriptors are Bitcoin's)")
    wd.add_argument(
        "--fingerprint",
        help="your wallet's master key fingerprint (8 hex characters), to include the key origin [F/84h/0h/0h]",
    )
    wd.set_defaults(run=cmd_wallet_descriptor)

    bus = group("bus", "the message broker: queues and dead letters")
    leaf(bus, "status", "every queue: depth and consumers").set_defaults(run=cmd_bus_status)
    r = leaf(bus, "redrive", "move a dead-letter queue's messages back to its work queue")
    r.add_argument("queue", help="e.g. settler.transfers.dlq (or the work queue's name)")
    r.add_argument("--limit", type=int, help="move at most this many")
    r.set_defaults(run=cmd_bus_redrive)
    cli_stores.add_parser(group, leaf)
    add_plugins(sub)
    describe(p)
    return p


def describe(parser: argparse.ArgumentParser) -> None:
    """Give every subcommand its one-line help as the description its own ``--help`` shows,
    plugins' included, so ``kassa wallet set --help`` says what the command does."""
    for action in parser._subparsers._group_actions if parser._subparsers else ():
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {choice.dest: choice.help for choice in action._choices_actions}
        for name, child in action.choices.items():
            if child.description is None:
                child.description = helps.get(name)
            describe(child)


def add_plugins(sub: argparse._SubParsersAction) -> None:
    """Let every ``kassa.cli`` entry point add its commands.

    A plugin that fails to load is reported and skipped: a broken development install
    must not take the operator commands down with it.
    """
    for plugin in sorted(entry_points(group=PLUGIN_GROUP), key=lambda ep: ep.name):
        try:
            plugin.load()(sub)
        except Exception as exc:  # noqa: BLE001 - any failure of a plugin is the plugin's
            print(f"kassa: ignoring the {plugin.name!r} commands ({plugin.value}): {exc!r}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings(env_file=True)
        args.run(args, settings)
    except (DomainError, ValueError) as exc:
        return _fail(args, getattr(exc, "message", str(exc)))
    except SQLAlchemyError as exc:
        return _fail(args, f"database error: {str(getattr(exc, 'orig', None) or exc).strip().splitlines()[0]}")
    except (AMQPError, OSError) as exc:
        return _fail(args, f"broker error: {exc!r}")
    return 0


def _fail(args: argparse.Namespace, message: str) -> int:
    print(json.dumps({"error": message}) if args.json else f"kassa: {message}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
