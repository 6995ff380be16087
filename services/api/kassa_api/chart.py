"""The geometry of the dashboard overview's bar chart, drawn as inline SVG on the server.

The dashboard runs no charting script (no JavaScript, no CDN, a strict CSP), so the page's
template only places what this module computes: bars, y-axis ticks and sparse date labels
in a fixed viewBox that scales to the screen's width. It is pure (numbers in, numbers and
labels out), so the layout is unit-tested without a request or a browser.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

# The viewBox, in user units. Small on purpose: at a phone's width (about 340 CSS pixels
# inside the card) one unit is a little under one pixel. The labels are 11 units on a wide
# screen (where the chart is drawn larger) and 14 on a phone (pages.css), about 13 CSS
# pixels there; the margins leave room for labels of the larger size.
WIDTH, HEIGHT = 360, 180
LEFT, RIGHT, TOP, BOTTOM = 50, 22, 10, 28  # room for the y labels, the last date label, the date labels
TICKS = 4  # intervals on the y axis above zero
LABEL_EVERY = 7  # days between date labels, counted back from the last day


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    slot_x: float  # the day's whole column, for a tooltip target even when the bar is empty
    slot_width: float
    day: date
    amount: Decimal
    count: int


@dataclass(frozen=True)
class Tick:
    y: float
    label: str


@dataclass(frozen=True)
class DayLabel:
    x: float
    label: str


@dataclass(frozen=True)
class BarChart:
    width: int
    height: int
    left: float  # x of the plot's left edge (the y labels end there)
    right: float  # x of the plot's right edge
    top: float  # y of the highest tick
    baseline: float  # y of zero
    bars: list[Bar]
    ticks: list[Tick]
    labels: list[DayLabel]


def nice_top(peak: Decimal) -> Decimal:
    """The smallest 1, 2, 2.5 or 5 × 10ⁿ step that ``TICKS`` steps cover ``peak`` with, times ``TICKS``.

    Whole dollars at least; nothing at all still draws a $0–$4 axis rather than dividing by zero.
    """
    raw = max(peak / TICKS, Decimal(1))
    scale = Decimal(10) ** math.floor(math.log10(raw))
    step = next(
        m * scale for m in (Decimal(1), Decimal(2), Decimal("2.5"), Decimal(5), Decimal(10)) if m * scale >= raw
    )
    return step * TICKS


def short_usd(value: Decimal, symbol: str = "$") -> str:
    """An axis label: $0, $2.5, $250, $1.25k, $2M (``symbol``: the currency's, e.g. €)."""
    for limit, suffix in ((Decimal(1_000_000), "M"), (Decimal(1_000), "k")):
        if value >= limit:
            return f"{symbol}{value / limit:.2f}".rstrip("0").rstrip(".") + suffix
    return f"{symbol}{value:.2f}".rstrip("0").rstrip(".")


def bar_chart(days: Sequence[tuple[date, Decimal, int]], symbol: str = "$") -> BarChart:
    """Bars for ``days`` (day, USD amount, count), oldest first, left to right.

    Every day has its column; an amount above zero is at least one unit tall so that a
    small day next to a large one still shows. Date labels go on the last day and every
    ``LABEL_EVERY``-th day before it.
    """
    top = nice_top(max((amount for _, amount, _ in days), default=Decimal(0)))
    plot_width, plot_height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    baseline = TOP + plot_height
    slot = plot_width / max(len(days), 1)
    bar_width = round(slot * 0.7, 2)
    bars, labels = [], []
    for i, (day, amount, count) in enumerate(days):
        height = float(amount / top) * plot_height
        height = round(max(height, 1.0) if amount > 0 else 0.0, 2)
        slot_x = LEFT + i * slot
        bars.append(
            Bar(
                x=round(slot_x + (slot - bar_width) / 2, 2),
                y=round(baseline - height, 2),
                width=bar_width,
                height=height,
                slot_x=round(slot_x, 2),
                slot_width=round(slot, 2),
                day=day,
                amount=amount,
                count=count,
            )
        )
        if (len(days) - 1 - i) % LABEL_EVERY == 0:
            labels.append(DayLabel(x=round(slot_x + slot / 2, 2), label=f"{day:%b} {day.day}"))
    ticks = [
        Tick(y=round(baseline - plot_height * k / TICKS, 2), label=short_usd(top * k / TICKS, symbol))
        for k in range(TICKS + 1)
    ]
    return BarChart(
        width=WIDTH,
        height=HEIGHT,
        left=LEFT,
        right=WIDTH - RIGHT,
        top=TOP,
        baseline=baseline,
        bars=bars,
        ticks=ticks,
        labels=labels,
    )
