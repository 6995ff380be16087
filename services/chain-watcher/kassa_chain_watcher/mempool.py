"""Unconfirmed transfers (Bitcoin's mempool): what one look at the mempool changes.

The watcher reports a transfer ``seen`` when it first shows up unconfirmed, and
``orphaned`` when it is gone from the mempool without having been mined: dropped (evicted,
expired) or replaced (RBF, a double spend). Both hinge on remembering what was reported,
so that memory is durable (``chain_mempool_transfers``, written by the store after the
reports were published): a watcher restarted while a payment's transaction waits still
notices when it disappears, and the payment it held open is released.

A transfer counts as gone only after ``MISSES`` looks that did not find it while the
watcher was at the tip: a transaction mined in a block the watcher has not read yet is
not in the mempool either, and must not be reported dropped.

Each stay of a transfer in the mempool is a *sighting* with a random token of its own,
remembered with it: the reports of a sighting (``seen``, then ``orphaned`` if it leaves
unmined) carry the token in their message ids. A transaction dropped and broadcast again
(by its sender, a wallet, a rebroadcast service) is the same transfer seen again: its new
sighting's reports have new ids, so the settler applies them instead of taking them for
the earlier sighting's, already processed. A watcher that dies between publishing a
sighting's ``seen`` and remembering it reports it again after the restart under a new
token: a second ``seen`` of a transfer already seen, which changes nothing.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from kassa_chain_watcher.chain import Found

MISSES = 2
Key = tuple[str, int]


class Sighting(NamedTuple):
    found: Found
    misses: int  # consecutive looks at the tip that did not find it
    token: str  # this stay in the mempool ("" for one remembered before tokens existed)


Pending = dict[Key, Sighting]


def new_token() -> str:
    return secrets.token_hex(8)


@dataclass
class Step:
    seen: list[Sighting]  # newly in the mempool: report seen
    gone: list[Sighting]  # dropped or replaced: report orphaned
    after: Pending  # what to remember from now on


def look(
    known: Mapping[Key, Sighting],
    pool: Iterable[Found],
    mined: set[Key],
    *,
    at_tip: bool,
    misses: int = MISSES,
    token: Callable[[], str] = new_token,
) -> Step:
    """Compare one look at the mempool (``pool``) with what was remembered (``known``)."""
    current = {f.key: f for f in pool}
    seen, gone, after = [], [], {}
    for key, f in current.items():
        if key in mined:
            continue
        if key in known:
            after[key] = known[key]._replace(found=f, misses=0)
        else:
            after[key] = Sighting(f, 0, token())
            seen.append(after[key])
    for key, s in known.items():
        if key in mined or key in current:
            continue
        if not at_tip:
            after[key] = s
        elif s.misses + 1 >= misses:
            gone.append(s)
        else:
            after[key] = s._replace(misses=s.misses + 1)
    return Step(seen, gone, after)
