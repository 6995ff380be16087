"""The sweeper's isolation and spending rules, as pure logic: which deposits of a failing
batch fail on their own (bisection), which errors are the call's and which the node's, the
reasons shown, and the spending cap's arithmetic."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from requests.exceptions import ConnectionError as RequestsConnectionError
from web3.exceptions import ContractLogicError, Web3RPCError

from kassa_common.chains.networks import load_registry
from kassa_common.pricing.fixed import FixedRates, RateUnavailable
from kassa_sweeper.budget import Spending, spending
from kassa_sweeper.isolation import call_failure, culprits, refused_reason

LOCAL = load_registry({}).get("LOCAL_EVM")


def batch(*names: str) -> list[dict]:
    return [{"payment_id": n} for n in names]


def failing_if_any(bad: set[str]):
    calls = []

    def fails(part: list[dict]) -> str | None:
        calls.append([d["payment_id"] for d in part])
        return "reverted" if any(d["payment_id"] in bad for d in part) else None

    return fails, calls


def test_bisection_finds_the_one_deposit_that_fails_in_a_few_estimates():
    fails, calls = failing_if_any({"d37"})
    found = culprits(fails, batch(*[f"d{i}" for i in range(50)]), "reverted")
    assert [d["payment_id"] for d, _ in found] == ["d37"]
    assert len(calls) <= 2 * 6  # two halves per level, log2(50) levels


def test_bisection_finds_every_failing_deposit_with_its_own_reason():
    def fails(part):
        return ", ".join(d["payment_id"] for d in part if d["payment_id"] in {"a", "f"}) or None

    found = culprits(fails, batch(*"abcdefgh"), "a, f")
    assert [(d["payment_id"], why) for d, why in found] == [("a", "a"), ("f", "f")]


def test_a_batch_failing_as_a_whole_but_not_in_parts_has_no_culprit():
    assert culprits(lambda part: "too big" if len(part) > 4 else None, batch(*"abcdefgh"), "too big") == []


def test_a_single_deposit_is_its_own_culprit_without_another_estimate():
    assert culprits(lambda part: pytest.fail("no estimate needed"), batch("x"), "why") == [({"payment_id": "x"}, "why")]


@pytest.mark.parametrize(
    "exc, expected",
    [
        (ContractLogicError("execution reverted", data="0x"), "execution reverted"),
        (
            ContractLogicError("execution reverted: custom", data="0xabcdef01"),
            "execution reverted: custom (data 0xabcdef01)",
        ),
        (Web3RPCError("gas required exceeds allowance (30000000)"), "gas required exceeds allowance (30000000)"),
        (Web3RPCError("out of gas"), "out of gas"),
    ],
)
def test_a_call_that_fails_by_itself_is_the_deposits_concern(exc, expected):
    assert call_failure(exc) == expected


@pytest.mark.parametrize(
    "exc",
    [
        RequestsConnectionError("connection refused"),
        Web3RPCError("429 Too Many Requests"),
        Web3RPCError("the method eth_estimateGas does not exist/is not available"),
        Web3RPCError("insufficient funds for gas * price + value"),
        TimeoutError("read timed out"),
    ],
)
def test_a_node_that_fails_holds_no_deposit(exc):
    assert call_failure(exc) is None


def test_the_reasons_say_who_refused_what():
    def text(symbol, units):
        return f"{units} {symbol}"

    reason = refused_reason("0xSafe", {"ETH": 5, "USDC": 7, "USDT": 1}, {"ETH": 5, "USDC": 7}, "ETH", text, 50_000)
    assert reason == (
        "the settlement address 0xSafe did not take 5 ETH (its receive reverted, or needed more than "
        "the 50,000 gas the forwarder gives); 7 USDC did not move: the token refused the transfer "
        "(paused, or the settlement address 0xSafe blacklisted); 1 USDT did not move"
    )


def test_the_cap_counts_what_was_spent_plus_the_most_the_next_may_cost():
    cap = Spending("LOCAL_EVM", spent_units=600, cap_units=1000, cap_usd=Decimal(1), oldest=None)
    assert cap.allows(400) and not cap.allows(401)
    assert not Spending("LOCAL_EVM", 0, None, Decimal(1), None).allows(0)  # no rate: nothing is sent


class NoRates(FixedRates):
    def usd_rate(self, symbol):
        raise RateUnavailable(symbol)


def test_the_cap_in_usd_is_converted_at_the_native_coins_rate(monkeypatch):
    from kassa_sweeper import budget

    monkeypatch.setattr(budget, "spent_units", lambda *a: (0, None))
    now = datetime(2026, 1, 1, tzinfo=UTC)
    rates = FixedRates({"ETH": Decimal(2000)})
    assert spending(None, LOCAL, "ETH", "0xkey", Decimal(100), rates, now).cap_units == 5 * 10**16  # $100: 0.05 ETH
    assert spending(None, LOCAL, "ETH", "0xkey", Decimal(100), NoRates({}), now).cap_units is None
