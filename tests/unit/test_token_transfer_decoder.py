"""The one decoder of an ERC-20 Transfer log (``kassa_common.chains.evm.transfer_of``), which
the chain watcher and the refund proof share: strict about the log's shape, lenient only
about the case of its hex digits. Pure logic: logs as a node answers them."""

from __future__ import annotations

import pytest

from kassa_common.chains.evm import TRANSFER_TOPIC, TokenTransfer, transfer_of

pytestmark = pytest.mark.unit

USDC = "0x" + "5f" * 20
TOKENS = {USDC: "USDC"}
SENDER = "0x" + "aa" * 20
TO = "0x" + "bb" * 20


def word(value: int) -> str:
    return f"0x{value:064x}"


def topic(address: str) -> str:
    return "0x" + "0" * 24 + address[2:]


def log(**changes) -> dict:
    """A Transfer of 7 base units of USDC from SENDER to TO, with ``changes``."""
    return {
        "address": USDC,
        "topics": [TRANSFER_TOPIC, topic(SENDER), topic(TO)],
        "data": word(7),
        "removed": False,
        **changes,
    }


def test_a_transfer_log_of_a_configured_token_is_decoded():
    assert transfer_of(log(), TOKENS) == TokenTransfer("USDC", SENDER, TO, 7)
    assert transfer_of(log(data=word(2**256 - 1)), TOKENS).amount == 2**256 - 1  # the largest uint256
    assert transfer_of(log(data=word(0)), TOKENS).amount == 0  # a zero value is a transfer (reports drop it)


def test_hex_in_upper_case_is_read_as_in_lower_case():
    upper = log(
        address=USDC.upper().replace("0X", "0x"),
        topics=[TRANSFER_TOPIC.upper().replace("0X", "0x"), topic(SENDER).upper().replace("0X", "0x"), topic(TO)],
        data=word(7).upper().replace("0X", "0x"),
    )
    assert transfer_of(upper, TOKENS) == TokenTransfer("USDC", SENDER, TO, 7)  # addresses in lower case


@pytest.mark.parametrize(
    "topics",
    [
        [TRANSFER_TOPIC, topic(SENDER)],  # two topics: not an ERC-20 Transfer
        [TRANSFER_TOPIC, topic(SENDER), topic(TO), word(1)],  # four: an ERC-721 token id
        [],
        "not a list",
        None,
    ],
    ids=["two topics", "four topics", "no topics", "a string", "none"],
)
def test_a_log_without_exactly_three_topics_is_no_transfer(topics):
    assert transfer_of(log(topics=topics), TOKENS) is None


@pytest.mark.parametrize(
    "topics",
    [
        ["0x" + "12" * 32, topic(SENDER), topic(TO)],  # another event
        [TRANSFER_TOPIC, topic(SENDER), "0x" + "ff" * 32],  # a recipient that is no address
        [TRANSFER_TOPIC, topic(SENDER), "0x01" + topic(TO)[4:]],  # its first byte set
        [TRANSFER_TOPIC, topic(SENDER), "0x" + topic(TO)[2:25] + "1" + topic(TO)[26:]],  # its twelfth
        [TRANSFER_TOPIC, topic(SENDER), topic(TO)[:-2]],  # 31 bytes
        [TRANSFER_TOPIC, topic(SENDER), topic(TO) + "00"],  # 33 bytes
        [TRANSFER_TOPIC, "0x" + "zz" * 32, topic(TO)],  # not hex
        [TRANSFER_TOPIC, topic(SENDER), topic(TO)[2:]],  # no 0x
        [TRANSFER_TOPIC, 1, topic(TO)],  # not text
    ],
    ids=[
        "another event",
        "recipient no address",
        "first byte set",
        "twelfth byte set",
        "short topic",
        "long topic",
        "non-hex",
        "no 0x",
        "a number",
    ],
)
def test_a_log_whose_topics_are_not_a_transfers_words_is_no_transfer(topics):
    assert transfer_of(log(topics=topics), TOKENS) is None


@pytest.mark.parametrize(
    "data",
    ["0x", "", None, hex(7), word(7)[:-2], word(7) + "00", "0x" + "gg" * 32, word(7)[2:], 7],
    ids=["empty", "blank", "none", "short", "31 bytes", "33 bytes (past uint256)", "non-hex", "no 0x", "a number"],
)
def test_data_that_is_not_exactly_one_word_is_no_transfer(data):
    assert transfer_of(log(data=data), TOKENS) is None
    assert transfer_of({k: v for k, v in log().items() if k != "data"}, TOKENS) is None  # no data at all


def test_a_log_of_a_contract_that_is_no_configured_token_is_no_transfer():
    assert transfer_of(log(address="0x" + "99" * 20), TOKENS) is None
    assert transfer_of(log(address=None), TOKENS) is None
    assert transfer_of(log(), {}) is None


def test_a_removed_log_or_no_log_at_all_is_no_transfer():
    assert transfer_of(log(removed=True), TOKENS) is None
    assert transfer_of(None, TOKENS) is None
    assert transfer_of([log()], TOKENS) is None
    assert transfer_of("a log", TOKENS) is None
