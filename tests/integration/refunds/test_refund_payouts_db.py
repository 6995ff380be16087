"""Which transfer pays which refund (``refunds.payouts``, DESIGN §8, "Tied to its refund"),
through its entry points on the real database (one per run, each test rolled back): the
watcher's reports (``apply_report``), a hash the merchant submits (``complete_with_hash``,
its transaction read from an in-memory node), and test mode's simulated payout. Each test
asserts what the merchant and the customer see: the refund's status, its payout, its
events, and the reason a payout is refused."""

from __future__ import annotations

import secrets
import uuid
from decimal import Decimal

import pytest
import sqlalchemy as sa

from kassa_common.audit import OPERATOR
from kassa_common.chains.evm import TRANSFER_TOPIC
from kassa_common.chains.networks import shipped
from kassa_common.errors import NotFound
from kassa_common.messaging.messages import TransferReport
from kassa_common.models import Refund, Sweep
from kassa_common.owner import Owner
from kassa_common.refunds.onchain import PayoutConflict, PayoutRefused, Reader, transfer_ref
from kassa_common.refunds.payouts import apply_report, check_hash_format, complete_with_hash, simulate_payout
from kassa_common.refunds.transitions import claim_refund, create_refund
from kassa_common.statuses import RefundStatus, TransferStatus
from tests.support.refund_rows import events, fresh, paid

SEEN, CONFIRMED, ORPHANED, REORGED = TransferStatus
AWAITING_PAYMENT, COMPLETED, CANCELED = RefundStatus.AWAITING_PAYMENT, RefundStatus.COMPLETED, RefundStatus.CANCELED
BASE = shipped().get("BASE")  # 10 confirmations
USDC = next(t.contract for t in BASE.tokens if t.symbol == "USDC").lower()
CLAIM_BLOCK = 100
SENDER = "0x" + "5e" * 20  # the merchant's wallet


def tx() -> str:
    return "0x" + secrets.token_hex(32)


def claimed(db, address: str, amount: str = "2.5", *, live: bool = True, tag: int | None = 7, p=None) -> Refund:
    """A refund of ``amount`` USDC on BASE claimed to ``address`` at block 100 (live), its tag
    set to ``tag``."""
    p = p or paid(db, 100_000_000, test_mode=not live)
    refund = create_refund(db, p.owner, p.ref, Decimal(amount))
    claim_refund(db, refund.claim_token, address)
    refund.payout_tag = tag
    refund.claim_block = CLAIM_BLOCK if live else None
    db.flush()
    return refund


def due(refund: Refund) -> int:
    return int(refund.amount_units) + (refund.payout_tag or 0)


def report(refund, status, *, units=None, tx_hash=None, block=101, block_hash="0xb101", confirmations=1, **kw):
    fields = {
        "network": "BASE",
        "log_index": 0,
        "token": "USDC",
        "to": (refund.address or "").lower(),
        "sender": SENDER,
        **kw,
    }
    return TransferReport(
        status,
        fields.pop("network"),
        tx_hash or tx(),
        fields.pop("log_index"),
        fields.pop("token"),
        fields.pop("to"),
        due(refund) if units is None else units,
        block_number=block,
        block_hash=block_hash,
        confirmations=confirmations,
        **fields,
    )


def owner_of(refund: Refund) -> Owner:
    return Owner(refund.merchant_id, refund.test_mode, 60)


# -- the watcher's reports ------------------------------------------------------------------


def test_a_payout_seen_then_confirmed_completes_its_refund_with_refund_completed(db, good):
    refund = claimed(db, good)
    seen = report(refund, SEEN, confirmations=1)
    assert apply_report(db, seen).id == refund.id
    held = fresh(db, refund)
    assert (held.status, held.payout_units, held.payout_from, held.confirmations) == (
        AWAITING_PAYMENT,
        due(refund),
        SENDER,
        1,
    )
    assert held.payout_block_number == 101 and held.transaction_hash is None
    assert [k for k, _ in events(db, refund)] == ["refund.created", "refund.claimed"]  # seen: no event
    more = report(refund, SEEN, tx_hash=seen.tx_hash, confirmations=4)
    assert apply_report(db, more).id == refund.id and fresh(db, refund).confirmations == 4
    again = report(refund, SEEN, tx_hash=seen.tx_hash, confirmations=4)
    before = fresh(db, refund).updated_at
    assert apply_report(db, again).id == refund.id and fresh(db, refund).updated_at == before
    done = report(refund, CONFIRMED, tx_hash=seen.tx_hash, confirmations=10)
    assert apply_report(db, done).id == refund.id
    completed = fresh(db, refund)
    assert (completed.status, completed.transaction_hash, completed.confirmations) == (COMPLETED, seen.tx_hash, 10)
    assert completed.completed_at is not None
    kinds = [k for k, _ in events(db, refund)]
    assert kinds == ["refund.created", "refund.claimed", "refund.completed"]
    data = events(db, refund)[-1][1]
    assert data["status"] == COMPLETED and data["transaction_hash"] == seen.tx_hash and data["payout_from"] == SENDER
    assert apply_report(db, done).id == refund.id  # the same report again: nothing more
    assert len(events(db, refund)) == 3


def test_a_payout_confirmed_without_being_seen_first_completes_its_refund(db, good):
    refund = claimed(db, good)
    assert apply_report(db, report(refund, CONFIRMED, confirmations=10)).id == refund.id
    assert fresh(db, refund).status == COMPLETED


def test_a_payout_in_the_mempool_counts_once_mined_after_the_claim(db, good):
    refund = claimed(db, good)
    pending = report(refund, SEEN, block=None, block_hash=None, confirmations=0)
    assert apply_report(db, pending).id == refund.id and fresh(db, refund).transfer_ref is not None
    mined = report(refund, SEEN, tx_hash=pending.tx_hash, block=101, block_hash="0xb101", confirmations=1)
    assert apply_report(db, mined).id == refund.id
    assert (fresh(db, refund).payout_block_hash, fresh(db, refund).confirmations) == ("0xb101", 1)


@pytest.mark.parametrize("status", [SEEN, CONFIRMED])
def test_a_payout_seen_in_the_mempool_then_mined_in_the_claims_block_is_forgotten(db, status, good):
    refund = claimed(db, good)
    pending = report(refund, SEEN, block=None, block_hash=None, confirmations=0)
    apply_report(db, pending)
    mined = report(refund, status, tx_hash=pending.tx_hash, block=CLAIM_BLOCK, confirmations=10)
    assert apply_report(db, mined).id == refund.id
    forgotten = fresh(db, refund)
    assert (forgotten.status, forgotten.transfer_ref, forgotten.payout_units, forgotten.confirmations) == (
        AWAITING_PAYMENT,
        None,
        None,
        0,
    )
    assert forgotten.payout_from is None and forgotten.payout_block_hash is None


def test_what_is_not_exactly_the_payout_after_the_claim_pays_nothing(db, good, other):
    refund = claimed(db, good)
    not_payouts = [
        report(refund, CONFIRMED, units=due(refund) - 1),
        report(refund, CONFIRMED, units=due(refund) + 1),
        report(refund, CONFIRMED, units=int(refund.amount_units)),  # the bare amount, without the tag
        report(refund, CONFIRMED, token="USDT"),
        report(refund, CONFIRMED, network="ETHEREUM"),
        report(refund, CONFIRMED, to=other.lower()),
        report(refund, CONFIRMED, block=CLAIM_BLOCK),  # in the claim's block
        report(refund, CONFIRMED, sender=good.lower()),  # the customer moving their own funds
        report(refund, CONFIRMED, simulated=True),
        report(refund, CONFIRMED, units=0),
    ]
    for r in not_payouts:
        assert apply_report(db, r) is None, r
    assert fresh(db, refund).transfer_ref is None and fresh(db, refund).status == AWAITING_PAYMENT
    assert apply_report(db, report(refund, CONFIRMED, block=CLAIM_BLOCK + 1, sender=None)).id == refund.id
    assert fresh(db, refund).status == COMPLETED


def test_a_live_refund_with_no_claim_block_is_paid_by_a_transfer_in_any_block(db, good):
    refund = claimed(db, good)
    refund.claim_block = None
    db.flush()
    assert apply_report(db, report(refund, CONFIRMED, block=5)).id == refund.id


def test_a_refund_claimed_before_tags_is_paid_its_bare_amount_down_to_one_unit(db, good):
    refund = claimed(db, good, "0.000001", tag=None)
    assert apply_report(db, report(refund, CONFIRMED, units=1)).id == refund.id
    assert fresh(db, refund).status == COMPLETED


def test_a_test_refund_is_never_paid_by_a_chain_transfer(db, good):
    refund = claimed(db, good, live=False)
    assert apply_report(db, report(refund, CONFIRMED, confirmations=10)) is None
    assert fresh(db, refund).status == AWAITING_PAYMENT


def test_a_sweep_of_this_network_is_never_a_payout(db, good):
    refund = claimed(db, good)
    sweep_hash = tx()
    for network, hash_ in (("BASE", sweep_hash.upper().replace("0X", "0x")), ("ETHEREUM", tx())):
        db.add(
            Sweep(
                network=network,
                sender=SENDER,
                nonce=1,
                status="CONFIRMED",
                tx_hash=hash_,
                deposit_count=1,
                gas_limit=100_000,
            )
        )
    db.flush()
    assert apply_report(db, report(refund, CONFIRMED, tx_hash=sweep_hash)) is None
    other_network_sweep = db.scalars(sa.select(Sweep.tx_hash).where(Sweep.network == "ETHEREUM")).one()
    assert apply_report(db, report(refund, CONFIRMED, tx_hash=other_network_sweep)).id == refund.id


def test_a_canceled_refund_is_never_completed_by_its_payout(db, good):
    refund = claimed(db, good)
    r = report(refund, SEEN)
    apply_report(db, r)
    db.connection().execute(sa.text("UPDATE refunds SET status = 'CANCELED' WHERE id = :id"), {"id": refund.id})
    db.expire_all()
    assert apply_report(db, report(refund, CONFIRMED, tx_hash=r.tx_hash, confirmations=10)).id == refund.id
    assert fresh(db, refund).status == CANCELED
    assert "refund.completed" not in [k for k, _ in events(db, refund)]


def test_a_payout_held_by_another_transaction_since_is_not_taken_over(db, good):
    """The settler decides on the refund as the database holds it, not on a copy read before."""
    refund = claimed(db, good)
    first = report(refund, SEEN)
    ref = transfer_ref(first.tx_hash, 0, good)
    db.connection().execute(
        sa.text("UPDATE refunds SET transfer_ref = :ref, payout_units = 1 WHERE id = :id"),
        {"ref": ref, "id": refund.id},
    )
    assert apply_report(db, report(refund, SEEN)) is None  # a second transfer of the amount
    assert fresh(db, refund).transfer_ref == ref


def test_refunds_with_one_payout_amount_at_one_address_are_paid_oldest_claim_first(db, good, other):
    """Two open refunds may ask for the same payout amount at one address (2.500002 + tag 1 and
    2.500001 + tag 2): each transfer pays one; a confirmed one may take a claim whose payout is
    only seen so far, which the other transfer then pays."""
    p = paid(db, 100_000_000, test_mode=False)
    older = claimed(db, good, "2.500002", tag=1, p=p)
    newer = claimed(db, good, "2.500001", tag=2, p=p)
    assert due(older) == due(newer)
    t1 = report(older, SEEN)
    assert apply_report(db, t1).id == older.id
    t2 = report(older, SEEN)
    assert apply_report(db, t2).id == newer.id
    t3 = report(older, SEEN)
    assert apply_report(db, t3) is None  # both hold a seen payout: a third seen pays neither
    t3c = report(older, CONFIRMED, tx_hash=t3.tx_hash, confirmations=10)
    assert apply_report(db, t3c).id == older.id  # confirmed first: it takes the oldest claim
    assert (fresh(db, older).status, fresh(db, older).transaction_hash) == (COMPLETED, t3.tx_hash)
    t1c = report(older, CONFIRMED, tx_hash=t1.tx_hash, confirmations=10)
    assert apply_report(db, t1c).id == newer.id  # the one it held went to the older claim's place
    assert (fresh(db, newer).status, fresh(db, newer).transaction_hash) == (COMPLETED, t1.tx_hash)


def test_a_payout_that_leaves_the_chain_before_its_confirmations_is_forgotten(db, good):
    refund = claimed(db, good)
    seen = report(refund, SEEN, confirmations=2)
    apply_report(db, seen)
    moved = report(refund, ORPHANED, tx_hash=seen.tx_hash, block_hash="0xother")
    assert apply_report(db, moved).id == refund.id and fresh(db, refund).transfer_ref is not None  # not that block's
    assert apply_report(db, report(refund, ORPHANED, tx_hash=tx())) is None  # never held
    gone = report(refund, ORPHANED, tx_hash=seen.tx_hash)
    assert apply_report(db, gone).id == refund.id
    forgotten = fresh(db, refund)
    assert (forgotten.transfer_ref, forgotten.confirmations, forgotten.status) == (None, 0, AWAITING_PAYMENT)
    assert [k for k, _ in events(db, refund)] == ["refund.created", "refund.claimed"]


def test_an_orphaned_report_without_a_block_forgets_the_payout(db, good):
    refund = claimed(db, good)
    seen = report(refund, SEEN)
    apply_report(db, seen)
    assert apply_report(db, report(refund, ORPHANED, tx_hash=seen.tx_hash, block_hash=None)).id == refund.id
    assert fresh(db, refund).transfer_ref is None


def test_a_confirmed_payout_lost_in_a_deep_reorg_puts_the_refund_back_with_refund_reorged(db, good):
    refund = claimed(db, good)
    done = report(refund, CONFIRMED, confirmations=10)
    apply_report(db, done)
    orphaned = report(refund, ORPHANED, tx_hash=done.tx_hash)
    assert apply_report(db, orphaned).id == refund.id and fresh(db, refund).status == COMPLETED  # only lost counts
    lost = report(refund, REORGED, tx_hash=done.tx_hash)
    assert apply_report(db, lost).id == refund.id
    back = fresh(db, refund)
    assert (back.status, back.transaction_hash, back.completed_at, back.transfer_ref) == (
        AWAITING_PAYMENT,
        None,
        None,
        None,
    )
    assert back.payout_tag == 7  # its payout, mined again, is still its own
    assert [k for k, _ in events(db, refund)][-1] == "refund.reorged"
    assert events(db, refund)[-1][1]["status"] == AWAITING_PAYMENT
    again = report(refund, CONFIRMED, tx_hash=done.tx_hash, block=105, block_hash="0xb105", confirmations=10)
    assert apply_report(db, again).id == refund.id and fresh(db, refund).status == COMPLETED


def test_a_confirmed_payout_confirmed_again_in_another_block_follows_it(db, good):
    refund = claimed(db, good)
    done = report(refund, CONFIRMED, confirmations=10)
    apply_report(db, done)
    moved = report(refund, CONFIRMED, tx_hash=done.tx_hash, block=103, block_hash="0xb103", confirmations=10)
    assert apply_report(db, moved).id == refund.id
    assert (fresh(db, refund).payout_block_number, fresh(db, refund).payout_block_hash) == (103, "0xb103")
    assert [k for k, _ in events(db, refund)].count("refund.completed") == 1


def test_a_refund_back_from_a_reorg_takes_a_new_tag_when_a_newer_claim_holds_its_own(db, good):
    p = paid(db, 100_000_000, test_mode=False)
    refund = claimed(db, good, p=p, tag=7)
    done = report(refund, CONFIRMED, confirmations=10)
    apply_report(db, done)
    newer = claimed(db, good, "1", p=p, tag=7)  # tag 7 free again to a claim once completed (as after its rest)
    apply_report(db, report(refund, REORGED, tx_hash=done.tx_hash))
    back = fresh(db, refund)
    assert back.status == AWAITING_PAYMENT and back.payout_tag not in (None, 7)
    assert events(db, refund)[-1][1]["payout_amount"] == str(
        (Decimal(int(back.amount_units) + back.payout_tag)) / 10**6
    )
    assert fresh(db, newer).payout_tag == 7


# -- a hash the merchant submits -------------------------------------------------------------


def topic(address: str) -> str:
    return "0x" + "0" * 24 + address.lower()[2:]


class Node:
    """A BASE node that knows the transactions ``pay`` made, at tip ``tip``."""

    def __init__(self, tip: int = 120) -> None:
        self.tip, self.txs, self.on_read = tip, {}, None

    def pay(self, to: str, units: int, *, sender: str = SENDER, block: int = 110, more=(), native: int = 0) -> str:
        h = tx()
        logs = [(to, units, sender), *more] if units else list(more)
        self.txs[h] = (sender, to, native, block, logs)
        return h

    def call(self, method, *params):
        if method == "eth_blockNumber":
            return hex(self.tip)
        sender, to, native, block, logs = self.txs.get(params[0].lower(), (None,) * 5)
        if sender is None:
            return None
        if method == "eth_getTransactionByHash":
            return {"from": sender, "to": to if native else USDC, "value": hex(native)}
        assert method == "eth_getTransactionReceipt", method
        if self.on_read:
            self.on_read()
        return {
            "blockNumber": hex(block),
            "blockHash": f"0xb{block}",
            "status": "0x1",
            "logs": [
                {
                    "logIndex": hex(i),
                    "address": USDC,
                    "topics": [TRANSFER_TOPIC, topic(s), topic(t)],
                    "data": f"0x{u:064x}",
                }
                for i, (t, u, s) in enumerate(logs)
            ],
        }


def submit(db, refund, node, tx_hash):
    return complete_with_hash(db, owner_of(refund), refund.id, tx_hash, Reader(BASE, node), actor=OPERATOR)


def test_a_submitted_transaction_of_at_least_the_amount_after_the_claim_completes_the_refund(db, good):
    refund = claimed(db, good)
    node = Node(tip=119)  # block 110: exactly 10 confirmations
    h = node.pay(good, int(refund.amount_units))  # the amount: the tag is for the watcher
    done = submit(db, refund, node, h.upper().replace("0X", "0x"))
    assert done.id == refund.id
    completed = fresh(db, refund)
    assert (completed.status, completed.transaction_hash, completed.payout_from) == (COMPLETED, h, SENDER)
    assert completed.completed_at is not None
    assert (completed.payout_units, completed.confirmations, completed.payout_block_number) == (
        refund.amount_units,
        10,
        110,
    )
    assert [k for k, _ in events(db, refund)][-1] == "refund.completed"


def test_a_submitted_transaction_is_refused_with_the_reason(db, good, other):
    refund = claimed(db, good)
    node = Node()
    amount = int(refund.amount_units)
    deposit = paid(db, test_mode=False).payment.address
    elsewhere, small, early = (
        node.pay(other, amount),
        node.pay(good, amount - 1, more=[(good, amount - 2, SENDER)]),
        node.pay(good, amount, block=CLAIM_BLOCK),
    )
    cases = {
        elsewhere: "wrong_recipient",
        node.pay(good, amount, sender=good.lower()): "from_recipient",
        small: "too_small",
        early: "before_claim",
        node.pay(good, amount, sender=deposit): "deposit",
        node.pay(good, amount, more=[(deposit, 5, SENDER)]): "deposit",
    }
    for h, issue in cases.items():
        with pytest.raises(PayoutRefused) as refused:
            submit(db, refund, node, h)
        assert refused.value.details == [{"field": "transaction_hash", "issue": issue}], (issue, refused.value)
    with pytest.raises(PayoutRefused, match=r"it pays 2.499999 USDC, the refund is 2.5 USDC"):
        submit(db, refund, node, small)
    with pytest.raises(PayoutRefused, match=f"in block {CLAIM_BLOCK}, not after the refund was claimed"):
        submit(db, refund, node, early)
    with pytest.raises(PayoutRefused) as refused:
        submit(db, refund, node, elsewhere)
    assert "from inside a contract" not in refused.value.message  # a token payout
    assert fresh(db, refund).status == AWAITING_PAYMENT


def test_a_native_coin_refund_paid_elsewhere_says_contract_payouts_are_the_watchers(db, good, other):
    p = paid(db, 10**18, test_mode=False, token="ETH", decimals=18)
    refund = claimed(db, good, "0.5", p=p)
    node = Node()
    h = node.pay(other, 0, native=10**18)
    with pytest.raises(PayoutRefused, match="from inside a contract"):
        submit(db, refund, node, h)


def test_a_submitted_sweep_is_refused(db, good):
    refund = claimed(db, good)
    node = Node()
    h = node.pay(good, int(refund.amount_units))
    db.add(Sweep(network="BASE", sender=SENDER, nonce=1, status="CONFIRMED", tx_hash=h, deposit_count=1, gas_limit=1))
    db.flush()
    with pytest.raises(PayoutRefused) as refused:
        submit(db, refund, node, h)
    assert refused.value.details == [{"field": "transaction_hash", "issue": "sweep"}]


def test_a_submitted_transaction_waits_for_its_confirmations(db, good):
    refund = claimed(db, good)
    node = Node(tip=118)  # 9 of 10
    h = node.pay(good, int(refund.amount_units))
    with pytest.raises(PayoutConflict, match="9 of 10 confirmation"):
        submit(db, refund, node, h)
    node.tip = 119
    assert submit(db, refund, node, h).status == COMPLETED


def test_a_transaction_paying_a_completed_refund_is_not_used_twice(db, good):
    p = paid(db, 100_000_000, test_mode=False)
    first = claimed(db, good, p=p)
    second = claimed(db, good, "1", p=p, tag=8)
    node = Node()
    h = node.pay(good, int(first.amount_units))
    submit(db, first, node, h)
    with pytest.raises(PayoutConflict, match=f"already used for another refund \\({first.id}\\)"):
        submit(db, second, node, h)
    assert fresh(db, second).status == AWAITING_PAYMENT


def test_a_transaction_the_watcher_gave_another_refund_as_seen_goes_to_the_one_the_merchant_names(db, good):
    p = paid(db, 100_000_000, test_mode=False)
    theirs = claimed(db, good, p=p, tag=7)
    named = claimed(db, good, p=p, tag=8)
    node = Node()
    h = node.pay(good, due(theirs))
    assert apply_report(db, report(theirs, SEEN, tx_hash=h, block=110, block_hash="0xb110")).id == theirs.id
    assert submit(db, named, node, h).status == COMPLETED
    assert (fresh(db, theirs).transfer_ref, fresh(db, theirs).status) == (None, AWAITING_PAYMENT)


def test_a_refund_completed_by_another_transaction_meanwhile_is_not_completed_again(db, good):
    refund = claimed(db, good)
    node = Node()
    h = node.pay(good, int(refund.amount_units))
    node.on_read = lambda: db.connection().execute(
        sa.text("UPDATE refunds SET status = 'COMPLETED', transaction_hash = 'x' WHERE id = :id"), {"id": refund.id}
    )
    with pytest.raises(PayoutConflict, match="already completed by x"):
        submit(db, refund, node, h)


def test_a_transaction_completed_by_another_refund_meanwhile_is_not_used_again(db, good):
    p = paid(db, 100_000_000, test_mode=False)
    theirs = claimed(db, good, p=p, tag=7)
    refund = claimed(db, good, p=p, tag=8)
    node = Node()
    h = node.pay(good, int(refund.amount_units))
    ref = transfer_ref(h, 0, good)
    db.connection().execute(
        sa.text("UPDATE refunds SET status = 'COMPLETED', transfer_ref = :ref WHERE id = :id"),
        {"ref": ref, "id": theirs.id},
    )
    with pytest.raises(PayoutConflict, match="already used for another refund"):
        submit(db, refund, node, h)


def test_only_a_claimed_live_refund_of_the_merchant_takes_a_hash(db, good):
    refund = claimed(db, good)
    node = Node()
    h = node.pay(good, int(refund.amount_units))
    for owner in (Owner(uuid.uuid4(), False, 60), Owner(refund.merchant_id, True, 60)):
        with pytest.raises(NotFound):
            complete_with_hash(db, owner, refund.id, h, Reader(BASE, node), actor=OPERATOR)
    with pytest.raises(NotFound):
        complete_with_hash(db, owner_of(refund), "not-a-uuid", h, Reader(BASE, node), actor=OPERATOR)
    with pytest.raises(PayoutConflict, match="no BASE node is configured"):
        complete_with_hash(db, owner_of(refund), str(refund.id), h, None, actor=OPERATOR)
    for bad in ("", "  ", "0x1234", None, "0x" + "g" * 64):
        with pytest.raises(PayoutRefused):
            submit(db, refund, node, bad)
    test_refund = claimed(db, good, live=False, tag=9)
    with pytest.raises(PayoutConflict, match="test-mode refund moves no funds"):
        complete_with_hash(db, owner_of(test_refund), test_refund.id, h, Reader(BASE, node), actor=OPERATOR)
    p = paid(db, 100_000_000, test_mode=False)
    unclaimed = create_refund(db, p.owner, p.ref, Decimal(1))
    with pytest.raises(PayoutConflict, match="has not claimed it yet"):
        complete_with_hash(db, p.owner, unclaimed.id, h, Reader(BASE, node), actor=OPERATOR)
    submit(db, refund, node, h)
    with pytest.raises(PayoutConflict, match=f"already completed by {h}"):
        submit(db, refund, node, h)


def test_a_hash_is_taken_in_its_networks_form():
    digits = "Ab" * 32
    assert check_hash_format("evm", f"  0X{digits} ") == "0x" + digits.lower()
    assert check_hash_format("evm", digits) == "0x" + digits.lower()
    assert check_hash_format("bitcoin", f"0x{digits}") == digits.lower()
    with pytest.raises(PayoutRefused) as refused:
        check_hash_format("evm", "0x" + "a" * 63)
    assert refused.value.details == [{"field": "transaction_hash", "issue": "invalid"}]
    with pytest.raises(PayoutRefused) as refused:
        check_hash_format("evm", " ")
    assert refused.value.details == [{"field": "transaction_hash", "issue": "required"}]


# -- test mode ----------------------------------------------------------------------------------


def test_a_test_refunds_payout_is_simulated_for_its_payout_amount(db, good):
    refund = claimed(db, good, live=False)
    done = simulate_payout(db, refund.id)
    assert done.id == refund.id
    completed = fresh(db, refund)
    assert completed.status == COMPLETED and completed.confirmations == 0 and completed.completed_at is not None
    assert completed.transaction_hash.startswith("test_tx_") and len(completed.transaction_hash) == 8 + 32
    assert completed.payout_units == due(refund) and completed.payout_from is None
    assert events(db, refund)[-1][0] == "refund.completed"
    with pytest.raises(PayoutConflict, match="already completed"):
        simulate_payout(db, refund.id)
    theirs = claimed(db, good, live=False)
    assert simulate_payout(db, theirs.id).transaction_hash != completed.transaction_hash


def test_a_test_refund_claimed_before_tags_is_simulated_for_its_amount(db, good):
    refund = claimed(db, good, live=False, tag=None)
    assert fresh(db, simulate_payout(db, refund.id)).payout_units == refund.amount_units


def test_only_a_claimed_test_refund_is_simulated(db, good):
    live = claimed(db, good)
    with pytest.raises(PayoutConflict, match="live refund is completed by its payout on chain"):
        simulate_payout(db, live.id)
    p = paid(db)
    unclaimed = create_refund(db, p.owner, p.ref, Decimal(1))
    with pytest.raises(PayoutConflict, match="has not claimed it yet"):
        simulate_payout(db, unclaimed.id)
    assert fresh(db, live).status == AWAITING_PAYMENT


def test_a_refund_claimed_before_tags_back_from_a_reorg_stays_without_a_tag(db, good):
    p = paid(db, 100_000_000, test_mode=False)
    refund = claimed(db, good, p=p, tag=None)
    claimed(db, good, "1", p=p, tag=None)  # another claimed before tags, open at the same address
    done = report(refund, CONFIRMED, confirmations=10)
    apply_report(db, done)
    apply_report(db, report(refund, REORGED, tx_hash=done.tx_hash))
    back = fresh(db, refund)
    assert back.status == AWAITING_PAYMENT and back.payout_tag is None
    assert events(db, refund)[-1][1]["payout_amount"] == "2.5"
