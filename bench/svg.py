"""Line charts as plain SVG text: a report's figure with no plotting library and no fonts to
install, readable in a browser and on GitHub, and identical from run to run for equal input."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["Series", "document", "line_chart"]


class Series(NamedTuple):
    label: str
    color: str
    points: Sequence[tuple[float, float]]
    dashed: bool = False


def _ticks(hi: float, n: int = 5) -> list[float]:
    if hi <= 0:
        return [0.0, 1.0]
    raw = hi / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    return [i * step for i in range(math.ceil(hi / step - 1e-9) + 1)]


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if v >= 10 or v == int(v) else f"{v:g}"


def _text(x: object, y: object, text: str, attrs: str = 'font-size="11"') -> str:
    return f'<text x="{x}" y="{y}" {attrs}>{html.escape(text)}</text>'


def line_chart(
    title: str,
    ylabel: str,
    series: Sequence[Series],
    *,
    top: float,
    x_max: float,
    xlabel: str = "seconds",
    marker: tuple[float, str] | None = None,
    width: float = 760,
    height: float = 250,
) -> str:
    """One chart whose top edge is at ``top``: axes with round ticks, a legend on the right, and
    an optional dotted vertical ``marker`` (x, label). Points are drawn as dots unless dashed."""
    left, right, ptop, pbottom = 70.0, width - 160.0, top + 30.0, top + height - 35.0
    xt, yt = _ticks(x_max), _ticks(max((y for s in series for _, y in s.points), default=1) * 1.05)

    def px(x: float) -> float:
        return left + (right - left) * x / xt[-1]

    def py(y: float) -> float:
        return pbottom - (pbottom - ptop) * y / yt[-1]

    mid, end = (ptop + pbottom) / 2, 'font-size="11" text-anchor="end"'
    out = [
        _text(left, top + 18, title, 'font-size="14" font-weight="bold"'),
        f'<rect x="{left}" y="{ptop}" width="{right - left}" height="{pbottom - ptop}" '
        'fill="none" stroke="#999"/>',
        *(
            f'<line x1="{left}" y1="{py(t):.1f}" x2="{right}" y2="{py(t):.1f}" stroke="#eee"/>'
            + _text(left - 6, f"{py(t) + 4:.1f}", _fmt(t), end)
            for t in yt
        ),
        *(
            _text(f"{px(t):.1f}", pbottom + 15, _fmt(t), 'font-size="11" text-anchor="middle"')
            for t in xt
        ),
        _text((left + right) / 2, pbottom + 30, xlabel, 'font-size="11" text-anchor="middle"')
        + _text(
            left - 52,
            mid,
            ylabel,
            f'font-size="11" text-anchor="middle" transform="rotate(-90 {left - 52} {mid})"',
        ),
    ]
    if marker is not None and marker[0] <= xt[-1]:
        mx = f"{px(marker[0]):.1f}"
        out.append(
            f'<line x1="{mx}" y1="{ptop}" x2="{mx}" y2="{pbottom}" stroke="#888" '
            'stroke-dasharray="2,3"/>'
            + _text(f"{px(marker[0]) + 4:.1f}", ptop + 12, marker[1], 'font-size="10" fill="#666"')
        )
    for i, (label, color, pts, dashed) in enumerate(series):
        dash, ly = ' stroke-dasharray="6,4"' * dashed, ptop + 10 + 18 * i
        if pts:
            path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
            out.append(
                f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"{dash}/>'
            )
            out += [
                f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.5" fill="{color}"/>'
                for x, y in pts
                if not dashed
            ]
        out.append(
            f'<line x1="{right + 12}" y1="{ly}" x2="{right + 32}" y2="{ly}" stroke="{color}" '
            f'stroke-width="2"{dash}/>' + _text(right + 36, ly + 4, label)
        )
    return "\n".join(out)


def document(title: str, charts: Sequence[str], width: int = 760, height: int = 540) -> str:
    """An SVG file of ``charts`` (each placed by its own ``top``) on a white page."""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif">\n'
        f"<title>{html.escape(title)}</title>\n"
        '<rect width="100%" height="100%" fill="white"/>\n' + "\n".join(charts) + "\n</svg>\n"
    )
