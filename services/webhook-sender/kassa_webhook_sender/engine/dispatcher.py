"""The dispatcher: claim due rows under a lease, send them through a channel from a thread
pool, record each outcome, schedule the retry or give up; the same for every channel.

A ``Channel`` knows its table and its destination: ``claim`` leases due rows (``FOR UPDATE
SKIP LOCKED``, a ``lease_until``, its own fairness rule), ``send`` makes one attempt (never
raising, no database), ``record`` writes a batch of outcomes. Three kinds of thread:

- the claimer leases rows: first the ids intake handed over after its commit (``submit``),
  then whatever else is due (retries, rows whose lease ran out with their sender). It polls
  every ``poll_interval`` and wakes at once on a hand-off (``submit``, ``wake``) or when
  recorded outcomes free places. A channel's own limit (so many claimed ahead per
  destination) may leave handed-over ids unclaimed: they wait (after new hand-offs, oldest
  first) and are claimed again as soon as places free, not at the next poll (a poll finds
  them too; after a lease's time they are left to it). A freed place that no waiting id
  takes polls. At most ``max_in_flight`` claims are open beside those waiting in a lane
  (below), which a destination's limit bounds.
- pool threads send one claimed row each. A channel with a ``per_destination`` limit never
  has more sends under way to one destination (``destination(job)``) than that, counted
  here, in this process: the rows claimed beyond it wait in the destination's lane and the
  next one starts the moment a send ends, without a round trip to the database. A claim
  takes at most ``AHEAD`` times the limit per destination (``held``: what this process
  holds already), and a row still waiting in its lane half a lease after its claim is
  released unsent, so every send starts well within its lease: no other sender can have
  taken the row meanwhile. A failure is retried on ``retry``'s schedule (counted from the
  row's creation), or given up when it has run out or the channel says no retry can help.
  While the channel's one server is unreachable (``pause``) nothing more is claimed until
  the next poll: the other rows keep their attempts.
- the recorder writes outcomes in batches, one transaction per batch.

``stop()``: stop claiming → finish the sends in progress (claims not yet started, in the
pool or waiting in a lane, are released) → record every outcome → close the channel.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Hashable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, Protocol, TypeVar

from prometheus_client import Counter, Histogram
from sqlalchemy.orm import Session, sessionmaker

from kassa_common import transient
from kassa_common.db import unit_of_work
from kassa_common.timefmt import utcnow
from kassa_webhook_sender.engine.retry import DEFAULT_POLICY, RetryPolicy

log = logging.getLogger("kassa.outbound")
RECORD_BATCH = 500
GATHER_SECONDS = 0.01  # a hand-off waits this long for company before it is claimed
AHEAD = 8  # rows claimed per destination, at most, per place of its limit  # pragma: no mutate
PENDING, FAILED = "PENDING", "FAILED"  # the statuses every channel's table shares (beside its "done")

ATTEMPTS = Counter("kassa_outbound_attempts_total", "Attempts made (or refused at the destination)", ["channel"])
OUTCOMES = Counter(
    "kassa_outbound_outcomes_total",
    "Recorded outcomes: done, retry (scheduled), failed (given up)",
    ["channel", "outcome"],
)
LATENCY = Histogram(
    "kassa_outbound_attempt_seconds",
    "Duration of one attempt",
    ["channel"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)


class Job(Protocol):
    """A claimed row: what the schedule needs of it (the channel's job holds the rest)."""

    @property
    def attempts(self) -> int: ...  # attempts recorded before this one

    @property
    def created_at(self) -> datetime: ...


J = TypeVar("J", bound=Job)


@dataclass(frozen=True)
class Result:
    """What one attempt came to, as the channel saw it (a failure is a value, never raised)."""

    status_code: int | None = None
    duration_ms: int = 0
    response_body: str | None = None
    error: str | None = None  # None: sent
    final: bool = False  # no retry can help: give up now
    attempted: bool = True  # False: given up without trying (no attempt to count)
    pause: bool = False  # the channel's server is unreachable: claim nothing more until the next poll

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class Outcome(Generic[J]):
    """What became of a claimed job: an attempt, a give-up without one, or a release."""

    job: J
    status: str | None = None  # PENDING (retry at next_attempt_at), the channel's done, FAILED; None: release
    attempted_at: datetime | None = None  # None: no attempt made
    next_attempt_at: datetime | None = None
    result: Result = Result()

    @property
    def attempted(self) -> bool:
        return self.attempted_at is not None


class Channel(Protocol[J]):
    name: str  # metrics label and thread names
    done: str  # the status of a row sent: SUCCEEDED, SENT
    log: logging.Logger
    per_destination: int  # sends under way at once to one destination, per process (0: no limit)

    def claim(
        self,
        session: Session,
        n: int,
        lease_seconds: float,
        ids: Sequence[uuid.UUID] | None,
        held: Mapping[Hashable, int] | None = None,
    ) -> list[J]: ...  # ``held``: rows this process holds per destination (at most AHEAD × the limit in all)
    def destination(self, job: J) -> Hashable: ...  # where it goes, for ``per_destination``
    def send(self, job: J) -> Result: ...
    def record(self, session: Session, outcomes: list[Outcome[J]]) -> None: ...
    def describe(self, job: J) -> str: ...  # for logs: which row, where to
    def key(self, job: J) -> uuid.UUID: ...  # the row's id (as handed over to ``submit``)
    def idle(self) -> None: ...  # nothing in flight for a poll interval: let idle connections go
    def close(self) -> None: ...


class Dispatcher(Generic[J]):
    def __init__(
        self,
        sessions: sessionmaker[Session],
        channel: Channel[J],
        *,
        threads: int = 32,
        retry: RetryPolicy = DEFAULT_POLICY,
        poll_interval: float = 0.25,
        lease_seconds: float = 60,
        max_in_flight: int | None = None,
    ) -> None:
        self.sessions, self.channel, self.retry = sessions, channel, retry
        self.threads, self.poll_interval, self.lease_seconds = threads, poll_interval, lease_seconds
        self.max_in_flight = max_in_flight or 2 * threads
        self._handoff: deque[uuid.UUID] = deque()
        self._waiting: OrderedDict[uuid.UUID, float] = OrderedDict()  # handed over, left unclaimed: since
        self._outcomes: queue.Queue[Outcome[J]] = queue.Queue()
        self._in_flight = 0  # claimed, outcome not yet recorded
        self._queued = 0  # of those, waiting in a lane for a place
        self._held: dict[Hashable, int] = {}  # the same, per destination
        self._sending: dict[Hashable, int] = {}  # sends under way (or queued in the pool) per destination
        self._lanes: dict[Hashable, deque[tuple[J, float]]] = {}  # claimed, waiting for a place: since
        self._backlog = False  # poll at the next wake, not only at the next poll interval
        self._freed = False  # outcomes recorded: places free for what the channel's limit left
        self._handed_off = False  # ids arrived since the last claim: let their company gather
        self._paused_until = 0.0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._sends_done = threading.Event()
        self._pool: ThreadPoolExecutor | None = None
        self._threads: list[threading.Thread] = []
        self.recorded = 0  # outcomes written (for tests and benchmarks)

    # -- lifecycle ----------------------------------------------------------------------
    def start(self) -> Dispatcher[J]:
        if self._pool is not None:
            return self
        name = self.channel.name
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix=f"{name}-send")
        self._threads = [
            threading.Thread(target=self._claim_loop, name=f"{name}-claimer", daemon=True),
            threading.Thread(target=self._record_loop, name=f"{name}-recorder", daemon=True),
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
            with self._lock:  # claimed rows still waiting for a place: released
                waiting = [job for lane in self._lanes.values() for job, _ in lane]
                self._lanes.clear()
                self._queued = 0
            for job in waiting:
                self._outcomes.put(Outcome(job))
            self._sends_done.set()
            self._threads[1].join(timeout)
        self.channel.close()

    def submit(self, ids: Iterable[uuid.UUID]) -> None:
        """Hand over new rows for immediate dispatch (intake, after its commit)."""
        ids = list(ids)
        if ids:
            self._handoff.extend(ids)
            self._handed_off = True
            self._wake.set()

    def wake(self, _ids: object = None) -> None:
        """New rows are due: poll now (for a channel whose fairness rule, not the hand-off,
        decides which row goes next)."""
        self._backlog = True
        self._wake.set()

    # -- claiming -----------------------------------------------------------------------
    def claim(self, n: int, ids: Sequence[uuid.UUID] | None = None) -> list[J]:
        """Lease up to ``n`` due rows (only among ``ids`` when given)."""
        if n <= 0:
            return []
        with self._lock:
            held = dict(self._held) if self.channel.per_destination else None
        with unit_of_work(self.sessions) as session:
            return self.channel.claim(session, n, self.lease_seconds, ids, held)

    def _claim_loop(self) -> None:
        next_poll = 0.0
        backoff = transient.Backoff(initial=self.poll_interval)
        while not self._stopping.is_set():
            if not self._wake.wait(self.poll_interval) and self._in_flight == 0:
                self.channel.idle()
            elif self._handed_off:
                self._stopping.wait(GATHER_SECONDS)  # let hand-offs arriving together share a claim
            self._wake.clear()
            self._handed_off = False
            poll = self._backlog or time.monotonic() >= next_poll
            freed = self._freed
            self._backlog = self._freed = False  # taken: set again by what shows more is due
            if poll:
                next_poll = time.monotonic() + self.poll_interval
            try:
                while not self._stopping.is_set() and self.claim_and_dispatch(poll, freed):
                    pass
                backoff.reset()
            except Exception as exc:
                if not transient.is_transient(exc):
                    self.channel.log.exception("claiming failed")
                delay = backoff.next()
                self.channel.log.warning("claiming failed (%s); next try in %.1fs", type(exc).__name__, delay)
                self._backlog = True
                self._stopping.wait(delay)

    def claim_and_dispatch(self, poll: bool = True, freed: bool = False) -> bool:
        """Claim the handed-over ids (and, when ``poll``, or ``freed`` places that no handed-over
        id took, whatever else is due) that capacity allows, and queue them for sending; True
        if it has room for more and hand-offs not yet tried or claimed all it asked for."""
        if time.monotonic() < self._paused_until:
            return False
        free = self.max_in_flight - self._active()
        ids = self._handed_over(free)
        jobs = self.claim(len(ids), list(ids)) if ids else []
        for job in jobs:
            del ids[self.channel.key(job)]
        self._waiting.update(ids)  # left by the channel's limit (or taken by another sender): wait
        short = bool(ids)
        self._dispatch(jobs)  # held before the next claim reads it: a round never claims past its bound
        if (poll or (freed and not jobs)) and free > len(jobs):
            due = self.claim(free - len(jobs))
            short = len(due) < free - len(jobs)
            if not short:
                self._backlog = True  # a full batch: more is probably due
            for job in due:
                self._waiting.pop(self.channel.key(job), None)
            self._dispatch(due)
            jobs += due
        room = self._active() < self.max_in_flight
        return room and (bool(self._handoff) or (bool(jobs) and not short))  # hand-offs are all tried at once

    def _active(self) -> int:
        """Claims open and not waiting in a lane: sending, or sent with the outcome unrecorded."""
        return self._in_flight - self._queued

    def _handed_over(self, n: int) -> OrderedDict[uuid.UUID, float]:
        """Up to ``n`` handed-over ids to claim, with when they were handed over: new ones first
        (one destination's backlog never holds up another's first row), then those waiting for
        a place, oldest first (but not past a lease's time: the polls have them then)."""
        ids: OrderedDict[uuid.UUID, float] = OrderedDict()
        now = time.monotonic()
        while self._handoff and len(ids) < n:
            ids[self._handoff.popleft()] = now
        while self._waiting and len(ids) < n:
            key, since = self._waiting.popitem(last=False)
            if now - since < self.lease_seconds:
                ids[key] = since
        return ids

    # -- sending ------------------------------------------------------------------------
    def _dispatch(self, jobs: list[J]) -> None:
        """Send the claimed ``jobs``: each at once if its destination has a free place, else
        queued in the destination's lane."""
        limit, now, start = self.channel.per_destination, time.monotonic(), []
        with self._lock:
            self._in_flight += len(jobs)
            for job in jobs:
                where = self.channel.destination(job)
                self._held[where] = self._held.get(where, 0) + 1
                if limit and self._sending.get(where, 0) >= limit:
                    self._lanes.setdefault(where, deque()).append((job, now))
                    self._queued += 1
                else:
                    self._sending[where] = self._sending.get(where, 0) + 1
                    start.append(job)
        for job in start:
            self._pool.submit(self._attempt, job)  # type: ignore[union-attr]

    def _attempt(self, job: J) -> None:
        try:
            outcome = self.attempt(job)
        except Exception:
            self.channel.log.exception("attempt of %s crashed", self.channel.describe(job))
            outcome = Outcome(job)  # released: retried after the lease
        self._outcomes.put(outcome)
        self._next_in_lane(self.channel.destination(job))

    def _next_in_lane(self, where: Hashable) -> None:
        """A send to ``where`` ended: its place goes to the next row waiting in the lane (a row
        waiting past half its lease is released instead: another sender may take it soon)."""
        stale: list[J] = []
        with self._lock:
            lane, nxt = self._lanes.get(where), None
            while lane and nxt is None:
                job, since = lane.popleft()
                self._queued -= 1
                if self._stopping.is_set() or time.monotonic() - since > self.lease_seconds / 2:
                    stale.append(job)
                else:
                    nxt = job
            if lane is not None and not lane:
                del self._lanes[where]
            if nxt is None:
                self._sending[where] -= 1
                if not self._sending[where]:
                    del self._sending[where]
        if nxt is not None:
            try:
                self._pool.submit(self._attempt, nxt)  # type: ignore[union-attr]
            except RuntimeError:  # the pool shut down meanwhile (stop): released
                stale.append(nxt)
                self._next_in_lane(where)
        for job in stale:
            self._outcomes.put(Outcome(job))

    def attempt(self, job: J) -> Outcome[J]:
        """Send one claimed row and decide what happens next (no database access)."""
        if self._stopping.is_set():
            return Outcome(job)  # claimed but not started: release it
        attempted_at, started = utcnow(), time.monotonic()
        result = self.channel.send(job)
        if result.attempted:
            ATTEMPTS.labels(self.channel.name).inc()
            LATENCY.labels(self.channel.name).observe(time.monotonic() - started)
        at = attempted_at if result.attempted else None
        if result.ok:
            return Outcome(job, self.channel.done, at, result=result)
        if result.pause:
            self._paused_until = time.monotonic() + self.poll_interval
        next_at = None if result.final else self.retry.next_attempt(job.attempts + 1, job.created_at, utcnow())
        self.channel.log.log(
            logging.INFO if next_at and not result.pause else logging.WARNING,
            "%s failed (attempt %d): %s; %s",
            self.channel.describe(job),
            job.attempts + 1,
            result.error,
            f"retry at {next_at.isoformat()}" if next_at else "giving up",
        )
        return Outcome(job, PENDING if next_at else FAILED, at, next_at, result)

    # -- recording ----------------------------------------------------------------------
    def record(self, outcomes: Iterable[Outcome[J]]) -> None:
        """Write these outcomes in one transaction."""
        with unit_of_work(self.sessions) as session:
            self.channel.record(session, list(outcomes))

    def _record_loop(self) -> None:
        while not (self._sends_done.is_set() and self._outcomes.empty()):
            try:
                batch = [self._outcomes.get(timeout=0.05)]
            except queue.Empty:
                continue
            # Fewer, larger transactions when outcomes trickle in: wait a little for the rest of
            # the sends under way, but not once they are all back (their places are waited for).
            until = time.monotonic() + (0 if self._sends_done.is_set() else GATHER_SECONDS)
            while len(batch) < RECORD_BATCH:
                wait = 0.0 if len(batch) >= self._in_flight else max(0.0, until - time.monotonic())
                try:
                    batch.append(self._outcomes.get(timeout=wait) if wait else self._outcomes.get_nowait())
                except queue.Empty:
                    break
            self._record(batch)

    def _record(self, batch: list[Outcome[J]]) -> None:
        for delay in (0, 0.5, 1, 2, 4, 8):  # bounded, well within the lease, which brings back what is never recorded
            time.sleep(delay)
            try:
                self.record(batch)
                self.recorded += len(batch)
                break
            except Exception:
                self.channel.log.exception("recording %d outcomes failed", len(batch))
        with self._lock:
            self._in_flight -= len(batch)
            for o in batch:
                where = self.channel.destination(o.job)
                self._held[where] -= 1
                if not self._held[where]:
                    del self._held[where]
        self._freed = True  # places free: what the channel's limit left may go now
        for o in batch:
            if o.status is not None:
                outcome = "retry" if o.status == PENDING else "failed" if o.status == FAILED else "done"
                OUTCOMES.labels(self.channel.name, outcome).inc()
        self._wake.set()
