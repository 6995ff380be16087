"""The wallet-change policy of DESIGN.md section 10, as the account package decides it: which
changes ask for the password again, and which wait, for how long (the dashboard asks and
renders; ``tests/integration/payments/test_wallet_changes.py`` holds the hold end to end)."""

from __future__ import annotations

import pytest

from kassa_common.accounts.wallet_changes import asks_password, hold_hours


@pytest.mark.parametrize(
    ("mode", "development", "hours"), [("live", False, 24.0), ("live", True, 0.0), ("test", False, 0.0)]
)
def test_only_a_live_change_outside_development_waits_the_configured_hours(mode, development, hours):
    assert hold_hours(mode, configured_hours=24.0, development=development) == hours


def test_a_hold_set_to_zero_applies_a_live_change_at_once():
    assert hold_hours("live", configured_hours=0.0, development=False) == 0.0


def test_every_mode_but_test_asks_for_the_password_again():
    assert asks_password("live") and not asks_password("test")
