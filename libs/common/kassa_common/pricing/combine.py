"""How the sources' answers become one price: the median of the largest group that agrees.

Given each answering source's USD price of a symbol, the answers kept must agree with each
other: the largest of them over the smallest, less one, at most ``max_deviation_pct``
(DESIGN §10), not only each within that distance of their median (two sources could then be
twice the limit apart). The kept group is the largest such run of the sorted answers; of
runs as large, the tightest, then the one whose median is nearest the median of all. The
others are left out (a stale feed, a broken pair, a flash crash on one exchange), and the
price is the kept group's median. Fewer than ``min_sources`` answers, or fewer than
``min_sources`` that agree, is no price (``NoConsensus``): a payment is never priced on a
guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, localcontext
from statistics import median


class NoConsensus(Exception):
    """Too few sources answered, or too few agree (the message says which)."""


@dataclass(frozen=True)  # pragma: no mutate
class Combined:
    price: Decimal
    used: tuple[str, ...]  # the sources whose answers made the price
    excluded: tuple[str, ...]  # answered, but too far from the others
    deviation_pct: dict[str, Decimal]  # each answer's distance from the median of all, in percent

    def describe(self) -> str:
        text = f"median of {', '.join(self.used)}" if len(self.used) > 1 else self.used[0]
        return text + (f" (excluded: {', '.join(self.excluded)})" if self.excluded else "")


def deviation_pct(value: Decimal, reference: Decimal) -> Decimal:
    return abs(value - reference) / reference * 100


def spread_pct(values: list[Decimal]) -> Decimal:
    """How far apart ``values`` are: max/min − 1, in percent."""
    return (max(values) / min(values) - 1) * 100


def _agreeing(answers: dict[str, Decimal], max_deviation_pct: Decimal) -> dict[str, Decimal]:
    """The largest run of the sorted answers whose spread is within the limit (see the module)."""
    ranked = sorted(answers.items(), key=lambda item: item[1])
    reference = Decimal(median(answers.values()))
    best: tuple[int, Decimal, Decimal] | None = None
    kept: list[tuple[str, Decimal]] = []
    for i in range(len(ranked)):
        for j in range(i, len(ranked)):
            run = ranked[i : j + 1]
            spread = spread_pct([v for _, v in run])
            if spread > max_deviation_pct:
                break  # pragma: no mutate
            rank = (-len(run), spread, abs(Decimal(median(v for _, v in run)) - reference))
            if best is None or rank < best:
                best, kept = rank, run
    return dict(kept)


def combine(answers: dict[str, Decimal], *, min_sources: int, max_deviation_pct: Decimal) -> Combined:
    if len(answers) < min_sources:
        raise NoConsensus(f"{len(answers)} of the {min_sources} rate sources needed answered")
    with localcontext() as ctx:
        ctx.prec = 60  # pragma: no mutate - a median of two is their mean: exact for any price a source gives
        reference = Decimal(median(answers.values()))
        deviations = {name: deviation_pct(value, reference) for name, value in answers.items()}
        kept = _agreeing(answers, max_deviation_pct)
        price = Decimal(median(kept.values()))
    if len(kept) < min_sources:
        raise NoConsensus(
            f"the rate sources disagree by more than {max_deviation_pct}% "
            f"({', '.join(f'{n} {v}' for n, v in sorted(answers.items()))})"
        )
    return Combined(price, tuple(sorted(kept)), tuple(sorted(set(answers) - set(kept))), deviations)
