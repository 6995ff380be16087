"""What identifies a refund's payout, and the forms a submitted hash may take (pure)."""

from __future__ import annotations

import pytest

from kassa_common.messaging.messages import TransferReport
from kassa_common.refunds.onchain import PayoutRefused, transfer_ref
from kassa_common.refunds.payouts import check_hash_format, from_report
from kassa_common.statuses import TransferStatus

TX = "0x" + "Ab" * 32


def test_an_evm_transfer_is_its_transaction_place_and_recipient():
    assert transfer_ref(TX, 0, "0xAbC") == f"{TX.lower()}:0:0xabc"
    assert transfer_ref(TX, 0, "0xabc") != transfer_ref(TX, 0, "0xdef")  # a batch paying two refunds: two transfers
    assert transfer_ref(TX, -2, "0xabc") != transfer_ref(TX, -1, "0xabc")  # internal credit vs top-level value


def test_a_bitcoin_transfer_is_its_txid_and_vout():
    assert transfer_ref("ab" * 32, 1, "bcrt1qxyz") == f"{'ab' * 32}:1"


def test_a_reported_erc20_transfer_keeps_its_rank_whatever_block_it_moves_to():
    def reported(log_index: int, block: str) -> TransferReport:
        return TransferReport(
            TransferStatus.CONFIRMED, "LOCAL_EVM", TX, log_index, "USDC", "0xabc", 5, 1, block, 2, position=0
        )

    assert from_report(reported(7, "0xb1")).ref == from_report(reported(3, "0xb2")).ref


@pytest.mark.parametrize(
    "kind, given, expected",
    [
        ("evm", TX, TX.lower()),
        ("evm", "  " + TX[2:] + " ", TX.lower()),
        ("bitcoin", "AB" * 32, "ab" * 32),
        ("bitcoin", "0x" + "ab" * 32, "ab" * 32),
    ],
)
def test_a_hash_is_taken_with_or_without_0x_in_any_case(kind, given, expected):
    assert check_hash_format(kind, given) == expected


@pytest.mark.parametrize("given", ["", "  ", None, 12, "0x1234", "0x" + "g" * 64, "0x" + "ab" * 33])
def test_anything_else_is_refused_with_the_reason(given):
    with pytest.raises(PayoutRefused) as refused:
        check_hash_format("evm", given)
    assert "transaction_hash" in refused.value.message
