"""Merchant accounts: sign-up, passwords, wallets and settings (their commands and reads),
used by the operator CLI and the dashboard. API keys are ``kassa_common.accounts.keys``.

A merchant is a store (DESIGN §14) owned by an account: signing up makes both, and the
commands that name a merchant by email act on the first store that email's account owns
(``stores.first_owned_store``), so they work as they did before stores."""

from __future__ import annotations

import re
import uuid
from decimal import Decimal, InvalidOperation
from typing import NamedTuple

import sqlalchemy as sa
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerifyMismatchError
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from kassa_common import audit
from kassa_common.accounts import stores
from kassa_common.chains import forwarder
from kassa_common.chains.hd import validate_xpub
from kassa_common.chains.live_keys import live_key_warning
from kassa_common.emails import InvalidEmail, valid_email
from kassa_common.errors import DomainError, NotFound
from kassa_common.models import Account, Merchant, Wallet
from kassa_common.timefmt import utcnow

MODES = ("test", "live")
CHAINS = ("evm", "bitcoin", "litecoin")  # a wallet per chain family (``Network.key_chain``)
_hasher = PasswordHasher()  # argon2id, memory-hard


class AccountError(DomainError):
    code = "VALIDATION_ERROR"


def hash_password(password: str) -> str:
    if len(password) < 8:
        raise AccountError("passwords need at least 8 characters")
    return _hasher.hash(password)


_DUMMY_HASH: str | None = None  # checked against when there is no stored hash: same work, same time


def check_password(stored: str | None, password: str) -> bool:
    """Whether ``password`` matches ``stored``. Without a stored hash (no such account, or one
    without a password) it hashes all the same, so a failure takes as long either way and
    the login form's timing does not tell which emails have accounts."""
    global _DUMMY_HASH
    if not stored:
        if _DUMMY_HASH is None:
            _DUMMY_HASH = _hasher.hash("kassa-no-account")
        try:
            _hasher.verify(_DUMMY_HASH, password)
        except (VerifyMismatchError, InvalidHashError):
            pass
        return False
    try:
        return _hasher.verify(stored, password)
    except (VerifyMismatchError, InvalidHashError):
        return False


def check_new_password(password: str) -> str:
    """A password as a new one must be (AccountError says why not)."""
    if len(password) > 1000:
        raise AccountError("passwords may have at most 1000 characters")
    if len(password) < 8:
        raise AccountError("passwords need at least 8 characters")
    return password


def change_password(session: Session, account: Account, current: str, new: str, *, actor: audit.Actor) -> None:
    """Set a new password once the current one is given again (the caller revokes the other
    logins); audited in each of the account's stores."""
    if not check_password(account.password_hash, current):
        raise AccountError("the current password is wrong")
    account.password_hash = hash_password(check_new_password(new))
    audit.record_for_account(session, account.id, actor, "account.password_changed", account.email)


MAX_BUSINESS_NAME = 200


def check_business_name(name: str | None) -> str | None:
    """The business name as stored (None when blank); AccountError when too long."""
    name = (name or "").strip()
    if len(name) > MAX_BUSINESS_NAME:
        raise AccountError(f"business name can be at most {MAX_BUSINESS_NAME} characters long")
    return name or None


def check_new_email(session: Session, email: str) -> str:
    """The address of a new account: one valid address no account has yet."""
    try:
        email = valid_email(email)
    except InvalidEmail:
        raise AccountError(f"not an email address: {email[:100]}") from None
    if stores.find_account(session, email) is not None:
        raise AccountError(f"a merchant with email {email} already exists")
    return email


def merchant_by_email(session: Session, email: str) -> Merchant:
    """The first store the account of ``email`` owns (for a migrated merchant, its own)."""
    account = stores.find_account(session, email)
    merchant = stores.first_owned_store(session, account.id) if account is not None else None
    if merchant is None:
        raise NotFound(f"no merchant with email {email}")
    return merchant


def create_merchant(
    session: Session, email: str, password: str | None, business_name: str | None, activate: bool = False
) -> Merchant:
    """A new account and the store it owns (a sign-up, or ``kassa merchant create``)."""
    email = check_new_email(session, email)
    name = check_business_name(business_name)
    account = stores.new_account(session, email, hash_password(password) if password else None)
    return stores.add_store(session, account, name, activated=activate)


def create_store(session: Session, email: str, name: str) -> Merchant:
    """Another store for the account of ``email``, owned by it and open at once (an
    operator's ``kassa store create``)."""
    account = stores.account_by_email(session, email)
    checked = check_business_name(name)
    if checked is None:
        raise AccountError("a store needs a name")
    return stores.add_store(session, account, checked, activated=True)


class SavedWallet(NamedTuple):
    xpub: str
    warning: str | None  # shown to whoever set it (a published test key in development)


def set_wallet(
    session: Session, merchant_id: uuid.UUID, mode: str, chain: str, xpub: str, *, allow_test_keys: bool = False
) -> SavedWallet:
    """Set the merchant's key for ``chain`` in ``mode``. Live mode takes only mainnet keys
    that are not published test keys (``allow_test_keys``: with a warning, for development)."""
    saved = check_wallet(mode, chain, xpub, allow_test_keys=allow_test_keys)
    upsert_wallet(session, merchant_id, mode, chain, xpub=saved.xpub)
    return saved


def check_wallet(mode: str, chain: str, xpub: str, *, allow_test_keys: bool = False) -> SavedWallet:
    """The key as ``set_wallet`` would store it (AccountError if it would refuse it)."""
    if mode not in MODES or chain not in CHAINS:
        raise AccountError(f"mode must be test|live and chain {'|'.join(CHAINS)}")
    try:
        xpub = validate_xpub(chain, xpub)
        warning = live_key_warning(chain, xpub, allow_test_keys=allow_test_keys) if mode == "live" else None
    except ValueError as exc:
        raise AccountError(str(exc)) from None
    return SavedWallet(xpub, warning)


def set_settlement_address(session: Session, merchant_id: uuid.UUID, mode: str, address: str) -> str:
    """Forwarder settlement for EVM: each payment gets a deposit address that can only
    forward to ``address`` (replaces an extended public key set for EVM in that mode)."""
    address = check_settlement_address(mode, address)
    upsert_wallet(session, merchant_id, mode, "evm", settlement_address=address)
    return address


def check_settlement_address(mode: str, address: str) -> str:
    """The address as ``set_settlement_address`` would store it (EIP-55), or AccountError."""
    if mode not in MODES:
        raise AccountError("mode must be test|live")
    try:
        return forwarder.settlement_address(address)
    except ValueError as exc:
        raise AccountError(str(exc)) from None


def upsert_wallet(
    session: Session,
    merchant_id: uuid.UUID,
    mode: str,
    chain: str,
    *,
    xpub: str | None = None,
    settlement_address: str | None = None,
) -> None:
    """A chain's wallet is one thing at a time: the key or the settlement address."""
    now = utcnow()
    values = {"xpub": xpub, "settlement_address": settlement_address, "updated_at": now}
    session.execute(
        pg_insert(Wallet)
        .values(id=uuid.uuid4(), merchant_id=merchant_id, mode=mode, chain=chain, created_at=now, **values)
        .on_conflict_do_update(index_elements=["merchant_id", "mode", "chain"], set_=values)
    )


# ---- merchant settings ----------------------------------------------------------------------
# Per merchant, not per mode: a shop's checkout behaves the same in test as in live.

MIN_LIFETIME, MAX_LIFETIME = 15, 2880  # minutes: a quarter of an hour to two days
MAX_TOLERANCE_PERCENT = Decimal(5)
TOLERANCE_STEP = Decimal("0.001")  # percent: the column keeps five decimals of a fraction
_FRACTION = Decimal("0.00001")


class MerchantSettings(NamedTuple):
    """What a merchant's new payments get: how long they stay open, and how far short of
    the amount due a confirmed total may fall and still complete (wallet fees, rounding)."""

    payment_lifetime_minutes: int
    lifetime_is_default: bool  # the merchant has none of its own: PAYMENT_LIFETIME_MINUTES applies
    underpayment_tolerance: Decimal  # a fraction of the amount due, as stored

    @property
    def tolerance_percent(self) -> str:
        """The tolerance as a merchant types it: "0.5" for half a percent."""
        return format((self.underpayment_tolerance * 100).normalize(), "f")


def merchant_settings(merchant: Merchant, default_lifetime: int) -> MerchantSettings:
    """The settings in force (``default_lifetime``: the PAYMENT_LIFETIME_MINUTES setting)."""
    own = merchant.payment_lifetime_minutes
    return MerchantSettings(own or default_lifetime, own is None, merchant.underpayment_tolerance or Decimal(0))


def set_merchant_settings(
    merchant: Merchant, *, payment_lifetime: str | None = None, underpayment_tolerance: str | None = None
) -> None:
    """Change the settings given as text (None: keep), as the dashboard and the CLI take them.

    Both are checked before either changes, so a refusal writes nothing. The lifetime is
    read when a payment is made (``Owner.lifetime_minutes``: existing payments keep their
    expiry), the tolerance when a transfer confirms (``settle``: open payments too).
    """
    lifetime = merchant.payment_lifetime_minutes if payment_lifetime is None else parse_lifetime(payment_lifetime)
    tolerance = (
        merchant.underpayment_tolerance if underpayment_tolerance is None else parse_tolerance(underpayment_tolerance)
    )
    merchant.payment_lifetime_minutes, merchant.underpayment_tolerance = lifetime, tolerance


def parse_lifetime(text: str) -> int | None:
    """Whole minutes in range; empty or "default" (None) hands the choice back to the setting."""
    text = text.strip()
    if text.lower() in ("", "default"):
        return None
    if not re.fullmatch(r"[0-9]{1,6}", text) or not MIN_LIFETIME <= int(text) <= MAX_LIFETIME:
        raise AccountError(
            f"payment lifetime must be a whole number of minutes from {MIN_LIFETIME} to "
            f"{MAX_LIFETIME} (two days), or empty for the default; got {_shown(text)}"
        )
    return int(text)


def parse_tolerance(text: str) -> Decimal:
    """A percentage ("0.5" or "0.5%") to the stored fraction (0.005)."""
    raw = text.strip().removesuffix("%").strip()
    try:
        percent = Decimal(raw) if len(raw) <= 20 else None
    except InvalidOperation:
        percent = None
    if (
        percent is None
        or not percent.is_finite()
        or not 0 <= percent <= MAX_TOLERANCE_PERCENT
        or percent.quantize(TOLERANCE_STEP) != percent
    ):
        raise AccountError(
            f"underpayment tolerance must be a percentage from 0 to {MAX_TOLERANCE_PERCENT} "
            f"in steps of {TOLERANCE_STEP}; got {_shown(text.strip())}"
        )
    return (percent / 100).quantize(_FRACTION)


def _shown(text: str) -> str:
    return f'"{text[:40]}"' if text else "nothing"


# ---- reads -----------------------------------------------------------------------------


def wallets(session: Session, merchant_id: uuid.UUID, mode: str) -> dict[str, Wallet]:
    """The merchant's wallet per chain (``evm``, ``bitcoin``) in ``mode``: an extended
    public key, or (EVM) a forwarder settlement address."""
    return {
        w.chain: w
        for w in session.scalars(sa.select(Wallet).where(Wallet.merchant_id == merchant_id, Wallet.mode == mode))
    }


# ---- the operator's notice of a sign-up -------------------------------------------------

SIGNUP_EVENT, SIGNUP_KIND = "account.signed_up", "signup"  # an internal row for the email


def notify_operator_of_signup(session: Session, merchant: Merchant, operator_email: str | None) -> None:
    """Email the operator (OPERATOR_EMAIL; nothing when unset) that ``merchant`` signed up
    and waits for activation, with the command that lets it in."""
    if not operator_email:
        return
    from kassa_common.accounts import (
        notices,  # notices imports models only; kept local to keep this module's imports light
    )

    name = merchant.business_name or "(no business name yet)"
    text = (
        "A merchant signed up in the Kassa dashboard and waits for activation.\n\n"
        f"Email: {merchant.email}\nBusiness name: {name}\n\n"
        "To let it sign in and use the API, run on the server:\n"
        f"  kassa merchant activate {merchant.email}\n"
        "Nothing needs doing to refuse it; to lock it out for good:\n"
        f"  kassa merchant ban {merchant.email}\n"
    )
    notices.email_merchant(
        session,
        merchant.id,
        test_mode=False,
        event_type=SIGNUP_EVENT,
        kind=SIGNUP_KIND,
        subject=f"New Kassa sign-up waiting for activation: {merchant.email}",
        text=text,
        payload={},
        recipient=operator_email,
    )


# ---- the merchant's notice of its activation ----------------------------------------------

ACTIVATED_EVENT, ACTIVATED_KIND = "account.activated", "activated"  # an internal row for the email


def activate(session: Session, merchant: Merchant, dashboard_url: str) -> bool:
    """Let ``merchant`` sign in and use the API, and email it so with the dashboard's
    address (DASHBOARD_URL); whether it was inactive (an active account is not emailed again)."""
    if merchant.activated:
        return False
    merchant.activated = True
    from kassa_common.accounts import notices  # as in notify_operator_of_signup

    text = (
        f"Your Kassa account is active — sign in at {dashboard_url}\n\n"
        f"An operator of this Kassa server activated it: sign in with {merchant.email} and the password "
        "you chose, then create your API keys and set your wallets.\n"
    )
    notices.email_merchant(
        session,
        merchant.id,
        test_mode=False,
        event_type=ACTIVATED_EVENT,
        kind=ACTIVATED_KIND,
        subject="Your Kassa account is active",
        text=text,
        payload={},
    )
    return True
