"""The dispatcher: claim due deliveries, send them from a thread pool, record outcomes.

Three kinds of thread:

- the claimer leases deliveries (``store.claim``): first the ids intake handed over
  (``submit``), then whatever else is due (retries, redeliveries, tests, claims of a
  crashed sender whose lease ran out). It polls every ``poll_interval`` and wakes at
  once on a hand-off or when capacity frees up. At most ``max_in_flight`` claims are
  open at a time, so a claim is always sent well within its lease.
- pool threads sign and POST one delivery each (``transport.Transport``).
- the recorder writes outcomes in batches, one transaction per batch (``store.record``).

``stop()``: stop claiming → finish the sends in progress (claims not yet started are
released) → record every outcome → close the HTTP connections.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from kassa_common import transient
from kassa_common.statuses import DeliveryStatus
from kassa_common.timefmt import utcnow
from kassa_common.webhooks.signing import sign
from kassa_webhook_sender.webhooks import metrics, store
from kassa_webhook_sender.webhooks.retry import DEFAULT_POLICY, RetryPolicy
from kassa_webhook_sender.webhooks.transport import Request, Transport, sanitize_url

log = logging.getLogger("kassa.webhooks")
RECORD_BATCH = 500
GATHER_SECONDS = 0.01  # a hand-off waits this long for company before it is claimed


class Dispatcher:
    def __init__(
        self,
        sessions: sessionmaker[Session],
        transport: Transport,
        *,
        threads: int = 32,
        retry: RetryPolicy = DEFAULT_POLICY,
        poll_interval: float = 0.25,
        lease_seconds: float = 60,
        max_in_flight: int | None = None,
        per_endpoint: int = store.DEFAULT_PER_ENDPOINT,
    ) -> None:
        self.sessions, self.transport, self.retry = sessions, transport, retry
        self.threads, self.poll_interval, self.lease_seconds = threads, poll_interval, lease_seconds
        self.max_in_flight = max_in_flight or 2 * threads
        self.per_endpoint = per_endpoint  # claims one endpoint may hold at once (store.claim)
        self._handoff: deque[uuid.UUID] = deque()
        self._outcomes: queue.Queue[store.Outcome] = queue.Queue()
        self._in_flight = 0
        self._backlog = False
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._sends_done = threading.Event()
        self._pool: ThreadPoolExecutor | None = None
        self._threads: list[threading.Thread] = []
        self.recorded = 0  # outcomes written (for tests and benchmarks)

    # -- lifecycle ----------------------------------------------------------------------
    def start(self) -> Dispatcher:
        if self._pool is not None:
            return self
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="webhook-send")
        self._threads = [
            threading.Thread(target=self._claim_loop, name="webhook-claimer", daemon=True),
            threading.Thread(target=self._record_loop, name="webhook-recorder", daemon=True),
        ]
        for t in self._threads:
            t.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        if self._stopping.is_set():
            return
        self._stopping.set()
        self._wake.set()
        if self._pool is not None:
            self._threads[0].join(timeout)
            self._pool.shutdown(wait=True)
            self._sends_done.set()
            self._threads[1].join(timeout)
        self.transport.close()

    def submit(self, delivery_ids: Iterable[uuid.UUID]) -> None:
        """Hand over new deliveries for immediate dispatch (intake calls this after commit)."""
        ids = list(delivery_ids)
        if ids:
            self._handoff.extend(ids)
            self._wake.set()

    # -- claiming -----------------------------------------------------------------------
    def _claim_loop(self) -> None:
        next_poll = 0.0
        backoff = transient.Backoff(initial=self.poll_interval)
        while not self._stopping.is_set():
            if self._wake.wait(self.poll_interval):
                self._stopping.wait(GATHER_SECONDS)  # let hand-offs arriving together share a claim
            self._wake.clear()
            poll = self._backlog or time.monotonic() >= next_poll
            if poll:
                next_poll = time.monotonic() + self.poll_interval
            try:
                while not self._stopping.is_set() and self.claim_and_dispatch(poll):
                    pass
                backoff.reset()
            except Exception as exc:
                if not transient.is_transient(exc):
                    log.exception("claiming deliveries failed")
                delay = backoff.next()
                log.warning("claiming deliveries failed (%s); next try in %.1fs", type(exc).__name__, delay)
                self._stopping.wait(delay)

    def claim_and_dispatch(self, poll: bool = True) -> bool:
        """Claim the handed-over ids (and, when ``poll``, whatever else is due) that capacity
        allows, and queue them for sending; True if it claimed something and has room for more."""
        free = self.max_in_flight - self._in_flight
        ids = [self._handoff.popleft() for _ in range(min(free, len(self._handoff)))]
        jobs = store.claim(self.sessions, len(ids), self.lease_seconds, ids, self.per_endpoint) if ids else []
        if poll and free > len(jobs):
            due = store.claim(self.sessions, free - len(jobs), self.lease_seconds, per_endpoint=self.per_endpoint)
            self._backlog = len(due) == free - len(jobs)  # a full batch: more is probably due
            jobs += due
        with self._lock:
            self._in_flight += len(jobs)
        for job in jobs:
            self._pool.submit(self._attempt, job)  # type: ignore[union-attr]
        return bool(jobs) and self._in_flight < self.max_in_flight

    # -- sending ------------------------------------------------------------------------
    def _attempt(self, job: store.Job) -> None:
        try:
            outcome = self.attempt(job)
        except Exception as exc:
            log.exception("attempt of delivery %s crashed", job.delivery_id)
            outcome = store.Outcome(job, error=repr(exc))  # released: retried after the lease
        self._outcomes.put(outcome)

    def attempt(self, job: store.Job) -> store.Outcome:
        """Send one claimed delivery and decide what happens next (no database access)."""
        if self._stopping.is_set():
            return store.Outcome(job)  # claimed but not started: release it
        if not job.endpoint_live:
            return store.Outcome(job, DeliveryStatus.FAILED, error="endpoint deleted or disabled")
        now = utcnow()
        body = job.body
        secrets = (job.secret, job.previous_secret) if job.previous_secret else (job.secret,)
        request = Request(
            job.url, body, sign(secrets, int(time.time()), body), job.event_type, job.event_id, str(job.delivery_id)
        )
        result = self.transport.post(request)
        metrics.ATTEMPTS.inc()
        metrics.LATENCY.observe(result.duration_ms / 1000)
        fields: dict[str, Any] = {
            "attempted_at": now,
            "status_code": result.status_code,
            "duration_ms": result.duration_ms,
            "response_body": result.response_body,
            "error": result.error,
        }
        if result.ok:
            return store.Outcome(job, DeliveryStatus.SUCCEEDED, **fields)
        next_at = self.retry.next_attempt(job.attempts + 1, job.created_at, utcnow())
        log.info(
            "delivery %s to %s failed (attempt %d): %s; %s",
            job.delivery_id,
            sanitize_url(job.url),
            job.attempts + 1,
            result.error,
            f"retry at {next_at.isoformat()}" if next_at else "giving up",
        )
        if next_at is None:
            return store.Outcome(job, DeliveryStatus.FAILED, **fields)
        return store.Outcome(job, DeliveryStatus.PENDING, next_attempt_at=next_at, **fields)

    # -- recording ----------------------------------------------------------------------
    def _record_loop(self) -> None:
        while not (self._sends_done.is_set() and self._outcomes.empty()):
            try:
                batch = [self._outcomes.get(timeout=0.05)]
            except queue.Empty:
                continue
            if not self._sends_done.is_set():
                time.sleep(GATHER_SECONDS)  # fewer, larger transactions when outcomes trickle in
            while len(batch) < RECORD_BATCH:
                try:
                    batch.append(self._outcomes.get_nowait())
                except queue.Empty:
                    break
            self._record(batch)

    def _record(self, batch: list[store.Outcome]) -> None:
        for delay in (0, 0.5, 1, 2, 4, 8):  # bounded: the lease brings back what is never recorded
            time.sleep(delay)
            try:
                store.record(self.sessions, batch)
                self.recorded += len(batch)
                break
            except Exception:
                log.exception("recording %d outcomes failed", len(batch))
        with self._lock:
            self._in_flight -= len(batch)
        for o in batch:
            if o.status == DeliveryStatus.SUCCEEDED:
                metrics.SUCCEEDED.inc()
            elif o.status == DeliveryStatus.FAILED:
                metrics.FAILED.inc()
            elif o.status == DeliveryStatus.PENDING:
                metrics.RETRIES.inc()
        self._wake.set()
