"""The merchant settings' rules as the dashboard and the CLI both apply them, and the CSV
export's defusing of cells a spreadsheet would run. Pure logic: no database."""

from __future__ import annotations

from decimal import Decimal

import pytest

from kassa_common.accounts.merchants import (
    AccountError,
    MerchantSettings,
    parse_lifetime,
    parse_tolerance,
    set_merchant_settings,
)
from kassa_common.models import Merchant
from kassa_common.payments.export import COLUMNS, csv_row, safe_cell
from kassa_common.payments.shape import PaymentOut


@pytest.mark.parametrize(
    "typed, minutes", [("15", 15), (" 90 ", 90), ("2880", 2880), ("", None), ("default", None), ("Default", None)]
)
def test_a_lifetime_in_range_or_the_default_is_taken(typed, minutes):
    assert parse_lifetime(typed) == minutes


@pytest.mark.parametrize("typed", ["14", "2881", "0", "-30", "60.0", "1e2", "abc", "²", "9" * 5000])
def test_a_lifetime_out_of_range_or_not_whole_minutes_is_refused_saying_the_range(typed):
    with pytest.raises(AccountError, match="payment lifetime must be a whole number of minutes from 15 to 2880"):
        parse_lifetime(typed)


@pytest.mark.parametrize(
    "typed, fraction",
    [
        ("0", Decimal(0)),
        ("0.5", Decimal("0.005")),
        ("5", Decimal("0.05")),
        ("1.25%", Decimal("0.0125")),
        ("0.001", Decimal("0.00001")),
    ],
)
def test_a_tolerance_is_a_percentage_stored_as_a_fraction(typed, fraction):
    assert parse_tolerance(typed) == fraction


@pytest.mark.parametrize("typed", ["5.001", "-0.001", "-1", "6", "0.0001", "", "NaN", "Infinity", "1e400", "half"])
def test_a_tolerance_out_of_range_or_too_fine_is_refused_saying_the_range(typed):
    with pytest.raises(AccountError, match="underpayment tolerance must be a percentage from 0 to 5"):
        parse_tolerance(typed)


def test_a_refused_value_changes_neither_setting():
    merchant = Merchant(payment_lifetime_minutes=30, underpayment_tolerance=Decimal("0.01"))
    with pytest.raises(AccountError):
        set_merchant_settings(merchant, payment_lifetime="45", underpayment_tolerance="9")
    assert (merchant.payment_lifetime_minutes, merchant.underpayment_tolerance) == (30, Decimal("0.01"))
    set_merchant_settings(merchant, underpayment_tolerance="0.5")  # the lifetime is kept
    assert (merchant.payment_lifetime_minutes, merchant.underpayment_tolerance) == (30, Decimal("0.005"))


@pytest.mark.parametrize(
    "stored, shown",
    [(Decimal(0), "0"), (Decimal("0.00500"), "0.5"), (Decimal("0.05000"), "5"), (Decimal("0.00001"), "0.001")],
)
def test_the_tolerance_is_shown_in_percent_as_typed(stored, shown):
    assert MerchantSettings(60, True, stored).tolerance_percent == shown


@pytest.mark.parametrize(
    "text, cell",
    [
        ('=HYPERLINK("http://x")', '\'=HYPERLINK("http://x")'),
        ("+1", "'+1"),
        ("-2", "'-2"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tcmd", "'\tcmd"),
        ("\r=1", "'\r=1"),
        ("Ann", "Ann"),
        ("a=b", "a=b"),
        ("", ""),
    ],
)
def test_a_cell_a_spreadsheet_would_run_gets_a_leading_quote(text, cell):
    assert safe_cell(text) == cell


def test_every_field_of_the_payment_object_has_a_column_lists_as_counts():
    assert len(COLUMNS) == len(PaymentOut.model_fields)
    assert {"transfers_count", "wrong_network_count", "metadata", "customer_name"} <= set(COLUMNS)
    payment = {name: None for name in PaymentOut.model_fields}
    payment.update(metadata={"b": "=1+1", "a": 1}, transfers=[{}, {}], wrong_network=[], test_mode=True, amount=12.5)
    row = dict(zip(COLUMNS, csv_row(payment), strict=True))
    assert row["metadata"] == '{"a": 1, "b": "=1+1"}'
    assert (row["transfers_count"], row["wrong_network_count"], row["test_mode"], row["amount"]) == (
        "2",
        "0",
        "true",
        "12.5",
    )
    assert row["completed_at"] == ""
