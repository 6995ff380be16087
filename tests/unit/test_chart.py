"""The overview's bar chart geometry: bars in the plot, proportional to the amounts, zero days
flat, a round y axis, and date labels that stay inside the viewBox."""

from __future__ import annotations

import itertools
from datetime import date, timedelta
from decimal import Decimal

import pytest

from kassa_api.chart import HEIGHT, WIDTH, bar_chart, nice_top, short_usd

LAST = date(2026, 11, 24)


def month(amounts: dict[int, str]) -> list[tuple[date, Decimal, int]]:
    """30 days ending on LAST; ``amounts`` maps days back from LAST to an amount (one payment)."""
    return [
        (LAST - timedelta(days=back), Decimal(amounts.get(back, "0")), 1 if back in amounts else 0)
        for back in range(29, -1, -1)
    ]


@pytest.mark.parametrize(
    "peak, top",
    [
        ("0", "4"),
        ("0.5", "4"),
        ("4", "4"),
        ("4.01", "8"),
        ("9", "10"),
        ("37", "40"),
        ("99.99", "100"),
        ("1000", "1000"),
        ("1234.5", "2000"),
        ("8001", "10000"),
        ("2500000", "4000000"),
    ],
)
def test_the_axis_top_is_four_round_steps_covering_the_peak(peak, top):
    assert nice_top(Decimal(peak)) == Decimal(top)


@pytest.mark.parametrize(
    "value, label",
    [
        ("0", "$0"),
        ("2.5", "$2.5"),
        ("10", "$10"),
        ("250", "$250"),
        ("1000", "$1k"),
        ("1250", "$1.25k"),
        ("2500", "$2.5k"),
        ("2000000", "$2M"),
    ],
)
def test_axis_labels_are_short(value, label):
    assert short_usd(Decimal(value)) == label


def test_bars_are_proportional_left_to_right_and_zero_days_are_flat():
    chart = bar_chart(month({0: "50", 10: "100", 20: "0.01"}))
    assert len(chart.bars) == 30 and [b.day for b in chart.bars] == sorted(b.day for b in chart.bars)
    by_day = {b.day: b for b in chart.bars}
    assert by_day[LAST].height * 2 == pytest.approx(by_day[LAST - timedelta(days=10)].height, abs=0.02)
    assert by_day[LAST - timedelta(days=20)].height == 1.0  # tiny, yet visible
    flat = [b for b in chart.bars if b.amount == 0]
    assert len(flat) == 27 and all(b.height == 0 and b.y == chart.baseline for b in flat)
    tallest = by_day[LAST - timedelta(days=10)]
    assert tallest.y >= chart.top and tallest.y + tallest.height == pytest.approx(chart.baseline)


def test_bars_stay_in_the_plot_without_overlapping():
    bars = bar_chart(month({i: str(i * 10) for i in range(30)})).bars
    assert bars[0].x >= bars[0].slot_x and bars[-1].x + bars[-1].width <= WIDTH
    assert all(a.x + a.width < b.x for a, b in itertools.pairwise(bars))


def test_the_y_axis_has_five_round_ticks_from_zero_up():
    chart = bar_chart(month({3: "37"}))
    assert [t.label for t in chart.ticks] == ["$0", "$10", "$20", "$30", "$40"]
    assert chart.ticks[0].y == chart.baseline and chart.ticks[-1].y == chart.top
    assert [t.y for t in chart.ticks] == sorted((t.y for t in chart.ticks), reverse=True)


def test_nothing_completed_still_draws_an_axis_and_thirty_flat_bars():
    chart = bar_chart(month({}))
    assert len(chart.bars) == 30 and all(b.height == 0 for b in chart.bars)
    assert chart.ticks[0].label == "$0" and len(chart.ticks) == 5


def test_dates_are_labelled_sparsely_ending_on_the_last_day_and_fit_the_viewbox():
    chart = bar_chart(month({}))
    assert [label.label for label in chart.labels] == ["Oct 27", "Nov 3", "Nov 10", "Nov 17", "Nov 24"]
    half = 6 * 8 / 2  # "Nov 24" in the phone's 14-unit type: about 8 units a character
    assert all(half <= label.x <= WIDTH - half for label in chart.labels)
    assert chart.baseline < HEIGHT - 10  # room below the bars for the labels
