"""The one rule for an email address that enters Kassa (the API's ``customer_email``, the
product page's receipt email, a sign-up): a single plain address, ``local@domain``.

No lists ("a@x, b@y"), no display names or angle brackets, no quoting, no comments: the
local part is a dot-atom of RFC 5322's unquoted characters, the domain dot-separated
labels of letters, digits and hyphens ending in a label of letters (or an IDN's ``xn--``).
The notifier sends only to addresses that pass it too, so nothing that slipped in before
this rule can turn the operator's SMTP account into a relay.
"""

from __future__ import annotations

import re

MAX_LENGTH, MAX_LOCAL = 254, 64
_LOCAL = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_TLD = r"(?:[A-Za-z]{2,63}|xn--[A-Za-z0-9-]{1,59})"
_ADDRESS = re.compile(rf"({_LOCAL})@((?:{_LABEL}\.)+{_TLD})")


class InvalidEmail(ValueError):
    pass


def valid_email(text: str) -> str:
    """``text`` without surrounding blanks, if it is one address by the rule above; else InvalidEmail."""
    address = text.strip()
    match = _ADDRESS.fullmatch(address) if len(address) <= MAX_LENGTH else None
    if match is None or len(match.group(1)) > MAX_LOCAL:
        raise InvalidEmail("not a valid email address (one address, like name@example.com)")
    return address


def is_valid_email(text: str | None) -> bool:
    try:
        return text is not None and bool(valid_email(text))
    except InvalidEmail:
        return False
