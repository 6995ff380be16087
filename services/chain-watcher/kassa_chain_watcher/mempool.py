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
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from kassa_chain_watcher.chain import Found

MISSES = 2
Key = tuple[str, int]
Pending = dict[Key, tuple[Found, int]]  # key -> (transfer, consecutive misses)


@dataclass
class Step:
    seen: list[Found]  # newly in the mempool: report seen
    gone: list[Found]  # dropped or replaced: report orphaned
    after: Pending  # what to remember from now on


def look(known: Mapping[Key, tuple[Found, int]], pool: Iterable[Found], mined: set[Key], *,
         at_tip: bool, misses: int = MISSES) -> Step:
    """Compare one look at the mempool (``pool``) with what was remembered (``known``)."""
    current = {f.key: f for f in pool}
    seen, gone, after = [], [], {}
    for key, f in current.items():
        if key in mined:
            continue
        if key not in known:
            seen.append(f)
        after[key] = (f, 0)
    for key, (f, missed) in known.items():
        if key in mined or key in current:
            continue
        if not at_tip:
            after[key] = (f, missed)
        elif missed + 1 >= misses:
            gone.append(f)
        else:
            after[key] = (f, missed + 1)
    return Step(seen, gone, after)
