"""What a chaos run checks once the stack has gone quiet: every payment created is COMPLETED
exactly once, every transition event reached the receiver, signed, under one event id, the
outbox is drained, the dead-letter queues are empty and nothing was counted twice; and the
counts it prints."""

from __future__ import annotations

import collections
import json
import threading
import time
from dataclasses import dataclass

import sqlalchemy as sa

from kassa_common.messaging import admin, topology
from kassa_common.models import Event, Payment, Transfer, WebhookDelivery
from kassa_common.webhooks.signing import SignatureError, verify_signature
from kassa_dev.chaos.stack import Chaos, Stack, log
from kassa_dev.chaos.traffic import Traffic
from kassa_dev.receiver import Hit, Receiver

# Which processes a failed check points at: their log tails are printed with it.
SUSPECTS = {
    "payments": ("settler", "expirer", "chain-watcher", "relay", "web"),
    "events": ("settler", "expirer", "relay"),
    "webhooks": ("webhook-sender", "relay"),
    "outbox": ("relay",),
    "queues": ("settler", "webhook-sender", "notifier"),
    "transfers": ("chain-watcher", "settler"),
}
STALLED_SECONDS = 120  # quiescence: give up once nothing has changed for this long


@dataclass(frozen=True)
class Delivery:
    event_id: str
    event_type: str
    payment_id: str | None
    signature_ok: bool
    at: float


class Deliveries:
    """What the merchant's endpoint accepted, read off the receiver: each request it answered
    200 as a delivery (event id, type, payment, whether the signature verifies against the
    endpoint's secret for the event's mode), parsed once; the ones refused while it was down
    are only counted."""

    def __init__(self, receiver: Receiver, signing_secrets: dict[bool, str]) -> None:
        self.receiver = receiver
        self.secrets = signing_secrets  # test_mode → the endpoint's signing secret
        self.refused = 0
        self._accepted: list[Delivery] = []
        self._seen = 0
        self._lock = threading.Lock()

    def all(self) -> list[Delivery]:
        with self._lock:
            for hit in self.receiver.all()[self._seen :]:
                self._seen += 1
                if hit.status == 200:
                    self._accepted.append(self._delivery(hit))
                else:
                    self.refused += 1
            return list(self._accepted)

    def _delivery(self, hit: Hit) -> Delivery:
        try:
            doc = json.loads(hit.body)
        except ValueError:
            doc = {}
        secret = self.secrets.get(bool(doc.get("test_mode")), "")
        try:
            # as the merchant's endpoint checks it: when it arrived (the checks read it minutes later)
            ok = verify_signature(secret, hit.headers.get("X-Kassa-Signature", ""), hit.body, now=hit.at)
        except SignatureError:
            ok = False
        data = doc.get("data") or {}
        return Delivery(
            str(doc.get("id") or hit.headers.get("X-Kassa-Event-Id")),
            str(doc.get("event")),
            data.get("payment_id"),
            ok,
            hit.at,
        )


def queue_depths(stack: Stack) -> list[admin.QueueDepth]:
    return admin.queue_depths(stack.rabbit.url, topology.named(""))


def quiet(stack: Stack, sessions, webhooks: Deliveries) -> str | None:
    """None once nothing is left to do; otherwise what is still moving."""
    with sessions() as s:
        open_payments = s.scalar(sa.select(sa.func.count()).select_from(Payment).where(Payment.status != "COMPLETED"))
        outbox = s.scalar(sa.select(sa.func.count()).select_from(Event).where(Event.published_at.is_(None)))
        pending = s.scalar(
            sa.select(sa.func.count()).select_from(WebhookDelivery).where(WebhookDelivery.status == "PENDING")
        )
        event_ids = set(s.scalars(sa.select(Event.id).where(Event.type.like("payment.%"))))
    undelivered = len(event_ids - {d.event_id for d in webhooks.all()})
    busy = [f"{d.name} {d.messages}" for d in queue_depths(stack) if d.messages]
    state = [
        f"{open_payments} payments not completed" if open_payments else "",
        f"{outbox} outbox rows" if outbox else "",
        f"{pending} deliveries pending" if pending else "",
        f"{undelivered} events not received" if undelivered else "",
        ", ".join(busy),
    ]
    state = [x for x in state if x]
    return "; ".join(state) if state else None


def wait_quiet(stack: Stack, sessions, webhooks: Deliveries, timeout: float) -> str | None:
    """None once the stack is quiet; what is left if it is not after ``timeout``, or once
    nothing has moved for ``STALLED_SECONDS`` (longer than a webhook delivery's lease and
    the longest retry wait: what is stuck then stays stuck)."""
    deadline = time.monotonic() + timeout
    last_said, last_state, since = 0.0, None, time.monotonic()
    while True:
        try:
            state = quiet(stack, sessions, webhooks)
        except Exception as exc:  # noqa: BLE001 - a server may still be recovering
            state = f"not answering yet ({exc.__class__.__name__})"
        if state is None:
            return None
        if state != last_state:
            last_state, since = state, time.monotonic()
        if time.monotonic() > deadline or time.monotonic() - since > STALLED_SECONDS:
            return state
        if time.monotonic() - last_said > 15:
            log(f"waiting for quiescence: {state}")
            last_said = time.monotonic()
        time.sleep(2)


def check(stack: Stack, sessions, traffic: Traffic, webhooks: Deliveries, chaos: Chaos) -> list[tuple[str, str]]:  # noqa: C901 - one check per invariant, in a row (to split, with its 228 lines)
    """Print the counts; return the violations as (suspects key, what)."""
    violations: list[tuple[str, str]] = []
    with sessions() as s:
        payments = s.execute(
            sa.select(
                Payment.id,
                Payment.status,
                Payment.test_mode,
                Payment.crypto_amount_units,
                Payment.amount_received_units,
            )
        ).all()
        events = s.execute(sa.select(Event.id, Event.type, Event.payment_id, Event.published_at)).all()
        transfers = s.execute(
            sa.select(
                Transfer.payment_id,
                Transfer.network,
                Transfer.tx_hash,
                Transfer.log_index,
                Transfer.status,
                Transfer.counted,
            )
        ).all()
        failed_deliveries = s.scalar(
            sa.select(sa.func.count()).select_from(WebhookDelivery).where(WebhookDelivery.status != "SUCCEEDED")
        )
    in_db = {str(p.id): p for p in payments}
    by_status = collections.Counter(p.status for p in payments)

    # payments: everything the API acknowledged exists, and every payment completed
    lost = sorted(set(traffic.created) - set(in_db))
    if lost:
        violations.append(("payments", f"{len(lost)} payments acknowledged by the API are missing: {lost[:5]}"))
    unfinished = [pid for pid, p in in_db.items() if p.status != "COMPLETED"]
    if unfinished:
        violations.append(
            ("payments", (f"{len(unfinished)} payments not COMPLETED ({dict(by_status)}): {unfinished[:5]}"))
        )
        with_transfer = {str(t.payment_id) for t in transfers}
        unseen = [pid for pid in unfinished if pid in traffic.paid and pid not in with_transfer]
        if unseen:  # paid on the chain, yet no transfer recorded: the watcher never reported it
            violations.append(
                (
                    "transfers",
                    (
                        f"{len(unseen)} of them were paid on anvil but no transfer was recorded, "
                        f"e.g. payment {unseen[0]} paid by {traffic.paid[unseen[0]]}"
                    ),
                )
            )
    unpaid = [pid for pid, kind in traffic.created.items() if kind == "live" and pid not in traffic.paid]
    if unpaid:
        violations.append(("payments", f"{len(unpaid)} live payments were never paid on anvil (harness)"))

    # transition events: one event id per (payment, transition); one payment.completed each
    per_transition = collections.defaultdict(set)
    for e in events:
        if e.payment_id is not None:
            per_transition[(str(e.payment_id), e.type)].add(e.id)
    doubled = {k: v for k, v in per_transition.items() if len(v) > 1}
    if doubled:
        (pid, kind), ids = next(iter(doubled.items()))
        violations.append(
            ("events", (f"{len(doubled)} transitions have several event ids, e.g. {kind} of {pid}: {sorted(ids)}"))
        )
    completed = collections.Counter(str(e.payment_id) for e in events if e.type == "payment.completed")
    no_completed = [pid for pid in in_db if completed[pid] == 0]
    if no_completed:
        violations.append(
            ("events", (f"{len(no_completed)} payments without a payment.completed event: {no_completed[:5]}"))
        )
    twice = [pid for pid, n in completed.items() if n > 1]
    if twice:
        violations.append(("events", f"{len(twice)} payments with several payment.completed events: {twice[:5]}"))
    outbox_left = sum(1 for e in events if e.published_at is None)
    if outbox_left:
        violations.append(("outbox", f"{outbox_left} events never published (outbox not drained)"))

    # webhooks: every transition event reached the receiver, signed, under its one id
    deliveries = webhooks.all()
    received_ids = {d.event_id for d in deliveries}
    payment_events = {e.id: e for e in events if e.type.startswith("payment.")}
    missing = sorted(set(payment_events) - received_ids)
    if missing:
        violations.append(
            (
                "webhooks",
                (f"{len(missing)} events never delivered: {[(m, payment_events[m].type) for m in missing[:5]]}"),
            )
        )
    unknown = sorted(received_ids - set(payment_events))
    if unknown:
        violations.append(
            ("webhooks", (f"{len(unknown)} deliveries of event ids that are not in the events table: {unknown[:5]}"))
        )
    bad_signatures = [d for d in deliveries if not d.signature_ok]
    if bad_signatures:
        violations.append(
            ("webhooks", (f"{len(bad_signatures)} deliveries with an invalid signature, e.g. {bad_signatures[0]}"))
        )
    received_per_transition = collections.defaultdict(set)
    for d in deliveries:
        received_per_transition[(d.payment_id, d.event_type)].add(d.event_id)
    received_doubled = {k: v for k, v in received_per_transition.items() if len(v) > 1}
    if received_doubled:
        (pid, kind), ids = next(iter(received_doubled.items()))
        violations.append(
            (
                "webhooks",
                (
                    f"{len(received_doubled)} transitions arrived under several event ids, e.g. "
                    f"{kind} of {pid}: {sorted(ids)}"
                ),
            )
        )
    if failed_deliveries:
        violations.append(("webhooks", f"{failed_deliveries} webhook deliveries not SUCCEEDED"))

    # queues: nothing parked, nothing left
    depths = queue_depths(stack)
    dlq = {d.name: d.messages for d in depths if d.role == "dlq"}
    if any(dlq.values()):
        violations.append(("queues", f"dead-lettered messages: {dlq}"))
    left = {d.name: d.messages for d in depths if d.role != "dlq" and d.messages}
    if left:
        violations.append(("queues", f"messages left in queues: {left}"))

    # transfers: none recorded twice, none counted twice
    seen = collections.Counter((t.network, t.tx_hash, t.payment_id, t.log_index) for t in transfers)
    recorded_twice = [k for k, n in seen.items() if n > 1]
    if recorded_twice:
        violations.append(("transfers", f"{len(recorded_twice)} transfers recorded twice: {recorded_twice[:3]}"))
    over = [
        pid for pid, p in in_db.items() if p.status == "COMPLETED" and p.amount_received_units != p.crypto_amount_units
    ]
    if over:
        violations.append(
            (
                "transfers",
                (
                    f"{len(over)} payments whose amount received is not exactly the amount "
                    f"paid once (a transfer counted twice or lost): {over[:5]}"
                ),
            )
        )
    counted_per_payment = collections.Counter(str(t.payment_id) for t in transfers if t.counted)
    wrong = [pid for pid in in_db if counted_per_payment[pid] != 1]  # each was paid once, in full
    if wrong:
        violations.append(("transfers", (f"{len(wrong)} payments without exactly one counted transfer: {wrong[:5]}")))

    # failovers (--ha): the stack recovered from each, and how long it took
    failover_rows = []
    for f in chaos.failovers:
        took = failover_times(f.at, traffic, deliveries)
        if took["completed"] is None:
            violations.append(("payments", f"no payment created after the {f.kind} failover completed ({f.what})"))
        failover_rows.append(
            (
                f"failover: {f.kind}",
                (
                    f"{f.what}; after the kill: the creates under way answered in {_seconds(took['under_way'])}, "
                    f"a new create in {_seconds(took['create'])}, the first event "
                    f"through the broker (payment.created webhook) in {_seconds(took['event'])}, the first payment "
                    f"completed (payment.completed webhook) in {_seconds(took['completed'])}"
                ),
            )
        )

    # the counts
    kinds = collections.Counter(kind for kind in traffic.created.values())
    transition_types = collections.Counter(e.type for e in events if e.type.startswith("payment."))
    other_types = collections.Counter(e.type for e in events if not e.type.startswith("payment."))
    duplicates = len(deliveries) - len(received_ids)
    exits = {p: sum(x.unexpected_exits for x in stack.processes[p]) for p in stack.processes}
    rows = [
        (
            "payments created",
            (
                f"{len(in_db)} (test {kinds['test']}, live {kinds['live']} paid on anvil; "
                f"API acknowledged {len(traffic.created)}, {traffic.create_retries} create retries)"
            ),
        ),
        (
            "payments completed",
            f"{by_status['COMPLETED']} ({', '.join(f'{k} {v}' for k, v in sorted(by_status.items()))})",
        ),
        (
            "transition events",
            (
                f"{len(payment_events)} ({', '.join(f'{k} {v}' for k, v in sorted(transition_types.items()))}; "
                f"other outbox events: {', '.join(f'{k} {v}' for k, v in sorted(other_types.items())) or 'none'})"
            ),
        ),
        (
            "webhook event ids delivered",
            (
                f"{len(received_ids & set(payment_events))} of {len(payment_events)} "
                f"({len(deliveries)} deliveries, {sum(d.signature_ok for d in deliveries)} "
                f"signatures valid, {webhooks.refused} refused with 503 while down)"
            ),
        ),
        (
            "duplicate deliveries",
            (
                f"{duplicates} (same event id again: at-least-once; transitions under two "
                f"event ids: {len(received_doubled) + len(doubled)})"
            ),
        ),
        ("completed twice", str(len(twice))),
        (
            "transfers",
            (
                f"{len(transfers)} recorded, {sum(seen.values()) - len(seen)} recorded twice, "
                f"{len(over)} payments over- or under-counted"
            ),
        ),
        ("outbox left", str(outbox_left)),
        ("DLQ depth", f"{sum(dlq.values())} ({', '.join(f'{k} {v}' for k, v in dlq.items())})"),
        ("kills (SIGKILL)", ", ".join(f"{k} {v}" for k, v in sorted(chaos.kills.items()))),
        ("outages", ", ".join(chaos.done_outages)),
        ("exits not caused by the harness", ", ".join(f"{k} {v}" for k, v in exits.items() if v) or "none"),
        *failover_rows,
    ]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        log(f"{k:<{width}}  {v}")
    return violations


def failover_times(at: float, traffic: Traffic, deliveries: list[Delivery]) -> dict[str, float | None]:
    """Seconds from a kill at ``at`` (wall clock) to the first create the API answered, the
    first payment.created webhook and the first payment.completed webhook, each of a payment
    whose create was first asked for after the kill (None: none came); and ``under_way``: to
    the answer of the last create asked for before the kill and answered after it (0: none
    was under way), how long creates were failing and being retried."""
    fresh = {pid for pid, t in traffic.asked_at.items() if t > at}
    under_way = [traffic.answered_at[pid] - at for pid, t in traffic.asked_at.items() if t <= at]

    def first(times) -> float | None:
        times = sorted(t for t in times if t > at)
        return times[0] - at if times else None

    return {
        "under_way": max((t for t in under_way if t > 0), default=0.0),
        "create": first(traffic.answered_at[pid] for pid in fresh),
        "event": first(d.at for d in deliveries if d.event_type == "payment.created" and d.payment_id in fresh),
        "completed": first(d.at for d in deliveries if d.event_type == "payment.completed" and d.payment_id in fresh),
    }


def _seconds(value: float | None) -> str:
    return "never" if value is None else f"{value:.1f} s"
