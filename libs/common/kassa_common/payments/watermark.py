"""The settled watermark: how far the settler has applied what a chain watcher reported.

A live payment may expire only once every transfer that reached its address before
``expires_at`` has been applied to it; otherwise a payment paid on time, whose confirmed
report waits in the queue while the settler is down or behind, turns EXPIRED and then a
late payment. The watcher's own progress (``chain_cursors.scanned_at``: it read the tip
with every block up to it *published*) says nothing about what the settler has *applied*.
So the watermark is written by the settler, after it checked that the reports before it
are applied, and the expirer reads only that (``SettledWatermark.settled_at``).

Why not simply "the settler applies a watermark message after the reports before it": the
settler runs several consumers that take batches from the queue side by side, a failing
report goes to the retry queue and comes back seconds later, and a broken connection
redelivers what it held. The queue's order is no order of application. So the check is
on the database, which records what was published and what was applied:

1. The watcher, right after the broker confirmed a batch of reports, records their message
   ids in ``chain_reports`` (a numbered ledger per network; ``Store.record_reports``).
2. At the end of a tick that read the chain's tip with every block up to it reported (and
   published reports, or at least once a second), it publishes a ``ChainWatermark``: the
   ledger's highest number for the network (``through``) and the time it read the tip
   (``scanned_at``). While catching up it sends none: the ledger waits.
3. The settler applies a watermark (``apply_watermark``, in its batch's transaction) only
   if every ledger row of the network up to ``through`` is among the settler queue's
   processed messages (``processed_messages``, written in the transaction that applied
   the report: a report is applied exactly when its id is there). Then it moves the
   network's ``settled_at`` up to ``scanned_at`` and deletes those ledger rows. Otherwise
   it changes nothing: the watcher sends a newer watermark at its next tick (at least
   once a second while caught up), which is checked again.

What this guarantees: ``settled_at = T`` means the watcher had read the chain's tip at T
with every block up to it reported, and every report it had published by then is
applied, in whatever order, by whichever consumer, after however many retries. Reports in
the same batch as the watermark count as applied only if the whole batch commits. A report
the watcher publishes again (a restart re-publishes what lies above its confirmed line) keeps
its id: processed already, it does not hold the watermark back.

What it costs: one insert statement per published batch (the watcher), one indexed check
per watermark (the settler); the ledger holds only what awaits a watermark (a catch-up's
reports until the watcher is at the tip again).

A report in the dead-letter queue holds its network's watermark (and expiries) back until
it is redriven and applied: expiring a payment whose transfer is parked there would be
wrong. A watcher killed between publishing a batch and recording it re-publishes the
batch after its restart (nothing it stores has moved past it yet), except a late
address's backfill of already-confirmed blocks, which is redone only for payments created
shortly before (``Store.recent_addresses``).
"""

from __future__ import annotations

import logging

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from kassa_common.messaging.messages import ChainWatermark
from kassa_common.models import ChainReport, SettledWatermark
from kassa_common.timefmt import utcnow

log = logging.getLogger("kassa.settlement")

_UNAPPLIED = sa.text("""
    SELECT count(*) FROM chain_reports r
    WHERE r.network = :network AND r.seq <= :through
      AND NOT EXISTS (SELECT 1 FROM processed_messages p WHERE p.consumer = :consumer AND p.message_id = r.message_id)
""")


def apply_watermark(session: Session, w: ChainWatermark, consumer: str) -> None:
    """Apply ``w`` if every report it covers was applied by ``consumer`` (the settler
    queue's name, under which its processed messages are recorded)."""
    waiting = session.scalar(_UNAPPLIED, {"network": w.network, "through": w.through, "consumer": consumer})
    if waiting:
        log.debug("%s: watermark through report %d waits for %d report(s)", w.network, w.through, waiting)
        return
    session.execute(sa.delete(ChainReport).where(ChainReport.network == w.network, ChainReport.seq <= w.through))
    if w.scanned_at is not None:
        now = utcnow()
        session.execute(
            pg_insert(SettledWatermark)
            .values(network=w.network, settled_at=w.scanned_at, updated_at=now)
            .on_conflict_do_update(
                index_elements=["network"],
                set_={"settled_at": sa.func.greatest(SettledWatermark.settled_at, w.scanned_at), "updated_at": now},
            )
        )
