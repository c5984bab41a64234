"""The cost curves (curve-<minor>.json, harness.bench.curve) as one SVG, no plotting library:
a panel per metric, nodes on a log axis, a line per mode and GPUs per node (dashed: fewer
GPUs). The benchmark writes it beside its JSON; the readiness report draws it from the JSON."""

from __future__ import annotations

import math
from typing import Any
from xml.sax.saxutils import escape

COLORS = {"plain": "#7f7f7f", "legacy": "#1f77b4", "bridged": "#d62728", "claims": "#2ca02c"}
PANEL_W, PANEL_H, MARGIN = 340, 220, 48
COLUMNS = 2


def _ticks(top: float) -> list[float]:
    """About four round ticks from 0 to `top`."""
    if top <= 0:
        return [0.0]
    step = 10 ** math.floor(math.log10(top / 4))
    for mult in (1, 2, 5, 10):
        if top / (step * mult) <= 5:
            step *= mult
            break
    return [i * step for i in range(int(top / step) + 1)]


def _panel(doc: dict[str, Any], metric: str, x0: float, y0: float) -> list[str]:
    meta = doc["metrics"][metric]
    points = doc["points"]
    sizes = sorted({p["nodes"] for p in points})
    lo, hi = math.log10(min(sizes)), math.log10(max(sizes))
    top = max((p[metric] for p in points), default=0.0) * 1.1 or 1.0
    w, h = PANEL_W - MARGIN - 10, PANEL_H - MARGIN - 20

    def sx(n: float) -> float:
        return x0 + MARGIN + (w * (math.log10(n) - lo) / (hi - lo) if hi > lo else w / 2)

    def sy(v: float) -> float:
        return y0 + 20 + h - h * v / top

    out = [
        f'<text x="{x0 + MARGIN}" y="{y0 + 14}" font-size="12">'
        f"{escape(meta['label'])} ({escape(meta['unit'])})</text>",
        f'<rect x="{x0 + MARGIN}" y="{y0 + 20}" width="{w}" height="{h}" fill="none" stroke="#ccc"/>',
    ]
    for t in _ticks(top / 1.1):
        out.append(
            f'<text x="{x0 + MARGIN - 4}" y="{sy(t) + 4:.1f}" font-size="9" text-anchor="end">{t:g}</text>'
        )
    for n in sizes:
        out.append(f'<text x="{sx(n):.1f}" y="{y0 + 32 + h}" font-size="9" text-anchor="middle">{n}</text>')
    for key in sorted({(p["mode"], p["gpus_per_node"]) for p in points}):
        line = sorted((p for p in points if (p["mode"], p["gpus_per_node"]) == key), key=lambda p: p["nodes"])
        xy = " ".join(f"{sx(p['nodes']):.1f},{sy(p[metric]):.1f}" for p in line)
        dash = ' stroke-dasharray="5,3"' if key[1] < max(p["gpus_per_node"] for p in points) else ""
        color = COLORS.get(key[0], "#000")
        out.append(f'<polyline points="{xy}" fill="none" stroke="{color}" stroke-width="1.5"{dash}/>')
        out += [
            f'<circle cx="{xy_.split(",")[0]}" cy="{xy_.split(",")[1]}" r="2" fill="{color}"/>'
            for xy_ in xy.split()
        ]
    return out


def curve_svg(doc: dict[str, Any]) -> str:
    """An SVG of every metric in `doc` (a curve-<minor>.json) over the fleet sizes."""
    metrics = list(doc["metrics"])
    rows = math.ceil(len(metrics) / COLUMNS)
    width, height = COLUMNS * PANEL_W, rows * PANEL_H + 60
    body: list[str] = []
    for i, metric in enumerate(metrics):
        body += _panel(doc, metric, (i % COLUMNS) * PANEL_W, (i // COLUMNS) * PANEL_H)
    legend_y = rows * PANEL_H + 20
    modes = list(dict.fromkeys(p["mode"] for p in doc["points"]))
    for k, mode in enumerate(modes):
        x = MARGIN + k * 110
        color = COLORS.get(mode, "#000")
        body.append(f'<line x1="{x}" y1="{legend_y}" x2="{x + 20}" y2="{legend_y}" stroke="{color}"/>')
        body.append(f'<text x="{x + 24}" y="{legend_y + 4}" font-size="11">{escape(mode)}</text>')
    body.append(
        f'<text x="{MARGIN}" y="{legend_y + 24}" font-size="11">'
        f"x: nodes (log); dashed: fewer GPUs per node; Kubernetes {escape(str(doc['kubernetes']))}</text>"
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif">\n' + "\n".join(body) + "\n</svg>\n"
    )
