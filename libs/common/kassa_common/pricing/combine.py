"""How the sources' answers become one price: the median of those that agree.

Given each answering source's USD price of a symbol: the median of all of them is the
reference; a source further than ``max_deviation_pct`` from it is left out (a stale feed, a
broken pair, a flash crash on one exchange); the price is the median of the rest. Fewer than
``min_sources`` answers, or fewer than ``min_sources`` left after the outliers, is no price
(``NoConsensus``): a payment is never priced on a guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from statistics import median


class NoConsensus(Exception):
    """Too few sources answered, or too few agree (the message says which)."""


@dataclass(frozen=True)
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


def combine(answers: dict[str, Decimal], *, min_sources: int, max_deviation_pct: Decimal) -> Combined:
    if len(answers) < min_sources:
        raise NoConsensus(f"{len(answers)} of the {min_sources} rate sources needed answered")
    reference = Decimal(median(answers.values()))
    deviations = {name: deviation_pct(value, reference) for name, value in answers.items()}
    kept = {name: value for name, value in answers.items() if deviations[name] <= max_deviation_pct}
    if len(kept) < min_sources:
        raise NoConsensus(
            f"the rate sources disagree by more than {max_deviation_pct}% "
            f"({', '.join(f'{n} {v}' for n, v in sorted(answers.items()))})"
        )
    return Combined(
        Decimal(median(kept.values())), tuple(sorted(kept)), tuple(sorted(set(answers) - set(kept))), deviations
    )
