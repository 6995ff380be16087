"""A claim's address, claim block and payout tag (``refunds.addresses``, DESIGN §8), through
``claim_refund`` and the checks it makes, on the real database (one per run, each test rolled
back): what the customer may give, the block only later transfers may pay from, and the tag
that makes each open refund's ``payout_amount`` its own at an address."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import timedelta
from decimal import Decimal

import pytest
import sqlalchemy as sa

from kassa_common.chains.networks import Registry, shipped
from kassa_common.errors import InvalidClaim
from kassa_common.models import Refund
from kassa_common.refunds import addresses, transitions
from kassa_common.refunds.addresses import check_address, claim_height, payout_tag
from kassa_common.statuses import RefundStatus
from kassa_common.timefmt import utcnow
from tests.support.refund_rows import EIP55, TipNode, paid, watcher_at

BASE = shipped().get("BASE")


def refund_of(db, p, *, amount: str = "1", network: str | None = None) -> Refund:
    return transitions.create_refund(db, p.owner, p.ref, Decimal(amount), network=network)


def hold_tags(db, p, address: str, tags, *, status=RefundStatus.AWAITING_PAYMENT, completed_at=None, network="BASE"):
    """Refunds of ``p``'s payment claimed to ``address`` holding ``tags`` (rows written at once)."""
    now = utcnow()
    rows = [
        {
            "id": uuid.uuid4(),
            "merchant_id": p.owner.merchant_id,
            "payment_id": p.payment.id,
            "test_mode": p.owner.test_mode,
            "status": status,
            "amount_units": 1,
            "token": "USDC",
            "network": network,
            "decimals": 6,
            "claim_token": uuid.uuid4().hex,
            "address": address,
            "claimed_at": now,
            "payout_tag": tag,
            "completed_at": completed_at,
            "expires_at": now + timedelta(days=30),
        }
        for tag in tags
    ]
    db.execute(sa.insert(Refund), rows)


def test_a_claim_takes_the_address_in_its_checksummed_form_with_a_tag_of_1_to_999(db, good):
    p = paid(db)
    refund = refund_of(db, p)
    claimed = transitions.claim_refund(db, refund.claim_token, good.lower())
    assert claimed.address == good and claimed.status == RefundStatus.AWAITING_PAYMENT
    assert 1 <= claimed.payout_tag <= 999
    assert claimed.claim_block is None  # test mode: no chain


def test_what_is_no_address_of_the_network_is_refused_with_the_reason_on_the_address_field(db):
    refund = refund_of(db, paid(db))
    for text in ("not an address", "0x" + "00" * 20, EIP55[:-1] + "e"):
        with pytest.raises(InvalidClaim) as refused:
            transitions.claim_refund(db, refund.claim_token, text)
        assert refused.value.details[0]["field"] == "address" and refused.value.details[0]["message"]
    assert db.get(Refund, refund.id).status == RefundStatus.AWAITING_ADDRESS and refund.address is None


def test_the_merchants_own_deposit_address_is_refused_any_other_merchants_is_not(db, good, other):
    p = paid(db)
    own = paid(db, merchant_id=p.owner.merchant_id, address=other.lower()).payment.address
    assert own == other.lower()
    refund = refund_of(db, p)
    with pytest.raises(InvalidClaim, match="payment address of the merchant"):
        check_address(db, refund, other)  # another case than stored: still its own
    theirs = paid(db, address=good.lower())  # another merchant's deposit address
    assert theirs.owner.merchant_id != p.owner.merchant_id
    assert check_address(db, refund, good.lower()) == good


def test_a_network_only_the_operators_registry_knows_takes_its_addresses(db, good):
    custom = dataclasses.replace(BASE, name="ACME_EVM")
    p = paid(db, network="ACME_EVM")
    refund = refund_of(db, p)
    assert check_address(db, refund, good.lower(), registry=Registry([custom])) == good
    assert check_address(db, refund_of(db, paid(db)), good.lower(), registry=Registry([custom])) == good
    with pytest.raises(InvalidClaim, match="ACME_EVM are not supported"):
        check_address(db, refund, good)  # no registry: the shipped networks only
    assert check_address(db, refund_of(db, paid(db)), good.lower()) == good


def test_a_live_claims_block_is_the_tip_of_the_networks_nodes(db, good):
    node = TipNode(0x1234)
    try:
        registry = Registry([dataclasses.replace(BASE, rpc_url=node.url, rpc_urls=(node.url,))])
        watcher_at(db, "BASE", 100)
        refund = refund_of(db, paid(db, test_mode=False))
        assert claim_height(db, refund, registry=registry) == 0x1234
        claimed = transitions.claim_refund(db, refund.claim_token, good, registry=registry)
        assert claimed.claim_block == 0x1234 and "eth_blockNumber" in node.asked
    finally:
        node.close()


def test_with_no_node_answering_a_live_claims_block_is_the_watchers_height_on_its_network(db, good):
    refund = refund_of(db, paid(db, test_mode=False))
    watcher_at(db, "BASE", None)
    assert claim_height(db, refund) is None  # no node, no watcher yet
    watcher_at(db, "ETHEREUM", 900)
    watcher_at(db, "BASE", 500)
    assert claim_height(db, refund) == 500
    node = TipNode(None)  # a node that fails
    try:
        registry = Registry([dataclasses.replace(BASE, rpc_url=node.url, rpc_urls=(node.url,))])
        assert transitions.claim_refund(db, refund.claim_token, good, registry=registry).claim_block == 500
    finally:
        node.close()


def test_a_test_claim_has_no_block_whatever_the_nodes_say(db):
    node = TipNode(0x99)
    try:
        registry = Registry([dataclasses.replace(BASE, rpc_url=node.url, rpc_urls=(node.url,))])
        assert claim_height(db, refund_of(db, paid(db)), registry=registry) is None
    finally:
        node.close()


def test_every_tag_but_one_held_at_the_address_leaves_that_one(db, good):
    p = paid(db, 2_000_000_000)
    hold_tags(db, p, good.lower(), range(2, 1000))
    refund = refund_of(db, p)
    assert transitions.claim_refund(db, refund.claim_token, good).payout_tag == 1
    one_more = refund_of(db, p)
    with pytest.raises(InvalidClaim, match="too many refunds") as refused:
        transitions.claim_refund(db, one_more.claim_token, good)  # 1 to 999 all held now
    assert refused.value.details[0]["field"] == "address"


def test_tags_held_elsewhere_or_by_closed_refunds_do_not_count(db, good, other):
    p = paid(db, 2_000_000_000)
    hold_tags(db, p, other, range(1, 1000))  # another address
    hold_tags(db, p, good, range(1, 1000), network="ETHEREUM")  # another network
    hold_tags(db, p, good, range(1, 1000), status=RefundStatus.CANCELED)
    hold_tags(db, p, good, range(1, 1000), status=RefundStatus.COMPLETED, completed_at=utcnow() - timedelta(days=2))
    refund = refund_of(db, p)
    assert 1 <= transitions.claim_refund(db, refund.claim_token, good.lower()).payout_tag <= 999


def test_a_completed_refunds_tag_rests_a_day_from_its_completion(db, good):
    p = paid(db, 2_000_000_000)
    now = utcnow() + timedelta(days=10)  # the claim's own time, not the clock's
    hold_tags(db, p, good, range(2, 1000))
    refund = refund_of(db, p)
    rested = now - addresses.TAG_REST - timedelta(seconds=1)
    hold_tags(db, p, good, [1], status=RefundStatus.COMPLETED, completed_at=rested)
    assert payout_tag(db, refund, good, now=now) == 1
    db.execute(sa.update(Refund).where(Refund.completed_at == rested).values(completed_at=now - addresses.TAG_REST))
    with pytest.raises(InvalidClaim):
        payout_tag(db, refund, good, now=now)  # exactly a day: still resting
    assert addresses.TAG_REST == timedelta(days=1)


def test_a_refund_asking_again_may_keep_its_own_tag(db, good):
    """A refund back to waiting (a reorg) asks for a tag again: its own does not count against it."""
    p = paid(db, 2_000_000_000)
    refund = refund_of(db, p)
    hold_tags(db, p, good, range(2, 1000))
    claimed = transitions.claim_refund(db, refund.claim_token, good)
    assert claimed.payout_tag == 1 and payout_tag(db, claimed, good) == 1
