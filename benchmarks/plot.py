"""Grouped bar charts as standalone SVG (no plotting library needed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

PALETTE = ("#9aa5b1", "#2f6fdf", "#7fb2ff", "#e07b39", "#3aa675")


def bars(
    title: str,
    groups: Sequence[str],
    series: Mapping[str, Sequence[float]],
    *,
    unit: str = "",
    goal: float | None = None,
    goal_label: str = "goal",
    width: int = 760,
    height: int = 340,
) -> str:
    """An SVG of ``series`` (name → one value per group) as grouped bars, with an optional
    dashed goal line."""
    left, right, top, bottom = 56, 16, 40, 70
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max([v for values in series.values() for v in values] + [goal or 0.0, 1e-9])
    scale = plot_h / (peak * 1.1)
    slot = plot_w / max(len(groups), 1)
    bar = slot * 0.8 / max(len(series), 1)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="11">',
        f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14">{escape(title)}</text>',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#333"/>',
    ]
    for i in range(5):
        value = peak * 1.1 * i / 4
        y = top + plot_h - value * scale
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{value:.3g}{escape(unit)}</text>')
    for g, group in enumerate(groups):
        x0 = left + g * slot + slot * 0.1
        for s, (name, values) in enumerate(series.items()):
            value = values[g] if g < len(values) else 0.0
            h = value * scale
            x = x0 + s * bar
            out.append(
                f'<rect x="{x:.1f}" y="{top + plot_h - h:.1f}" width="{bar - 2:.1f}" height="{h:.1f}" '
                f'fill="{PALETTE[s % len(PALETTE)]}"><title>{escape(name)}: {value:.4g}</title></rect>'
            )
        out.append(
            f'<text x="{left + g * slot + slot / 2:.1f}" y="{top + plot_h + 16}" text-anchor="middle">'
            f"{escape(group)}</text>"
        )
    if goal is not None:
        y = top + plot_h - goal * scale
        out.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#c0392b" '
            f'stroke-dasharray="5,4"/><text x="{left + plot_w}" y="{y - 4:.1f}" text-anchor="end" '
            f'fill="#c0392b">{escape(goal_label)} {goal:g}{escape(unit)}</text>'
        )
    for s, name in enumerate(series):
        x = left + s * 170
        y = height - 20
        out.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{PALETTE[s % len(PALETTE)]}"/>')
        out.append(f'<text x="{x + 14}" y="{y}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out)
