"""Activity per day as a small stacked bar chart, drawn server-side as SVG geometry for the template (no chart
library, no script): one bar per day, one band per platform (or model), a calm palette that keeps 3:1 contrast
against the page."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta

from gieok.store.browse import DayCount

# Muted, distinguishable hues (colour-blind-safe order, after Okabe–Ito), each ≥ 3:1 against #fbfaf7.
PALETTE = ("#3b6ea5", "#c0772b", "#3f8f6b", "#a04f7c", "#6b62b0", "#8a7a2e", "#4f8a99")
OTHER = "#8d8d8d"
MAX_SERIES = 6


@dataclass(slots=True)
class Band:
    x: float
    y: float
    w: float
    h: float
    color: str
    label: str          # "2026-11-03 · codex: 12"


@dataclass(slots=True)
class Chart:
    width: int
    height: int
    days: list[str]
    bands: list[Band] = field(default_factory=list)
    legend: list[tuple[str, str, int]] = field(default_factory=list)   # (name, color, total)
    peak: int = 0
    total: int = 0
    ticks: list[tuple[float, str]] = field(default_factory=list)       # (x, label)
    rows: list[tuple[str, dict[str, int]]] = field(default_factory=list)  # the table behind the chart

    @property
    def empty(self) -> bool:
        return self.total == 0

    @property
    def summary(self) -> str:
        if self.empty:
            return f"No memories in the last {len(self.days)} days."
        top = ", ".join(f"{n} {name}" for name, _, n in self.legend[:3])
        return f"{self.total} memories in the last {len(self.days)} days, busiest day {self.peak}; {top}."


def build_chart(counts: list[DayCount], *, end: date, days: int = 30, by: str = "platform",
                width: int = 720, height: int = 140) -> Chart:
    day_list = [(end - timedelta(days=days - 1 - i)).isoformat() for i in range(days)]
    per_day: dict[str, dict[str, int]] = {d: {} for d in day_list}
    totals: dict[str, int] = {}
    for c in counts:
        if c.day not in per_day:
            continue
        name = (c.platform if by == "platform" else c.model) or "(unknown)"
        per_day[c.day][name] = per_day[c.day].get(name, 0) + c.count
        totals[name] = totals.get(name, 0) + c.count
    ranked = sorted(totals, key=lambda n: (-totals[n], n))
    # An "other" band for one series would hide a name for nothing: up to MAX_SERIES + 1 are all shown.
    keep = ranked if len(ranked) <= MAX_SERIES + 1 else ranked[:MAX_SERIES]
    colors = {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(keep)}
    folded: dict[str, dict[str, int]] = {}
    for d, by_name in per_day.items():
        row: dict[str, int] = {}
        for n, v in by_name.items():
            key = n if n in colors else "other"
            row[key] = row.get(key, 0) + v
        folded[d] = row
    order = [*keep, *(["other"] if len(ranked) > len(keep) else [])]
    colors["other"] = OTHER
    chart = Chart(width, height, day_list)
    chart.total = sum(totals.values())
    chart.peak = max((sum(r.values()) for r in folded.values()), default=0)
    chart.legend = [(n, colors[n], sum(folded[d].get(n, 0) for d in day_list)) for n in order]
    chart.rows = [(d, folded[d]) for d in day_list if folded[d]]
    if chart.empty:
        return chart
    plot_h = height - 22      # room below for the date ticks
    slot = width / days
    bar_w = max(2.0, slot * 0.72)
    for i, d in enumerate(day_list):
        x = i * slot + (slot - bar_w) / 2
        y = float(plot_h)
        for n in order:
            v = folded[d].get(n, 0)
            if not v:
                continue
            h = max(1.5, (plot_h - 4) * v / chart.peak)
            y -= h
            chart.bands.append(Band(round(x, 1), round(y, 1), round(bar_w, 1), round(h, 1), colors[n],
                                    f"{d} · {n}: {v}"))
        if i % 7 == (days - 1) % 7:
            chart.ticks.append((round(x + bar_w / 2, 1), d[5:]))
    return chart
