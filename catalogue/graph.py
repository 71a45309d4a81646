"""A small contract graph drawn as SVG on the server: requires -> package -> provides, with
conflicts below. Every label comes from a manifest, so every label is escaped."""

from __future__ import annotations

from urllib.parse import urlencode

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

WIDTH = 720
BOX_W = 200
BOX_H = 26
GAP = 10
TOP = 30


def _label(text: str, limit: int = 28) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _node(x: int, y: int, text: str, css: str, href: str | None) -> str:
    body = (
        f'<rect class="{css}" x="{x}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="6"/>'
        f'<text x="{x + BOX_W // 2}" y="{y + 17}" text-anchor="middle">{escape(_label(text))}</text>'
        f"<title>{escape(text)}</title>"
    )
    if href:
        return f'<a href="{escape(href)}">{body}</a>'
    return f"<g>{body}</g>"


def contract_graph_svg(
    *,
    package_id: str,
    provides: list[tuple[str, bool]],
    requires: list[str],
    conflicts: list[str],
    contract_url: str = "/",
) -> SafeString:
    """provides: (contract, is_default) pairs. Contract nodes link to the list filtered by it."""

    def href(contract: str) -> str:
        return f"{contract_url}?{urlencode({'contract': contract})}"

    rows = max(len(provides), len(requires), 1)
    column_h = rows * (BOX_H + GAP)
    conflicts_y = TOP + column_h + 30
    per_row = (WIDTH - 20) // (BOX_W + GAP)
    conflict_rows = -(-len(conflicts) // per_row)
    height = conflicts_y + (conflict_rows * (BOX_H + GAP) + 10 if conflicts else 0)
    center_x = (WIDTH - BOX_W) // 2
    center_y = TOP + (column_h - GAP - BOX_H) // 2
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="contract-graph" viewBox="0 0 {WIDTH} {height}" '
        f'width="{WIDTH}" height="{height}" role="img" aria-labelledby="graph-title">',
        f'<title id="graph-title">Contracts of {escape(package_id)}</title>',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>',
        '<text class="heading" x="10" y="16">requires</text>',
        f'<text class="heading" x="{WIDTH - BOX_W - 10}" y="16">provides</text>',
    ]
    for i, contract in enumerate(requires):
        y = TOP + i * (BOX_H + GAP)
        parts.append(
            f'<line class="edge" x1="{10 + BOX_W}" y1="{y + BOX_H // 2}" x2="{center_x}" '
            f'y2="{center_y + BOX_H // 2}" marker-start="url(#arrow)"/>'
        )
        parts.append(_node(10, y, contract, "requires", href(contract)))
    for i, (contract, default) in enumerate(provides):
        y = TOP + i * (BOX_H + GAP)
        x = WIDTH - BOX_W - 10
        parts.append(
            f'<line class="edge" x1="{center_x + BOX_W}" y1="{center_y + BOX_H // 2}" x2="{x}" '
            f'y2="{y + BOX_H // 2}" marker-end="url(#arrow)"/>'
        )
        parts.append(
            _node(x, y, contract + (" (default)" if default else ""), "provides", href(contract))
        )
    parts.append(_node(center_x, center_y, package_id, "package", None))
    if conflicts:
        parts.append(f'<text class="heading" x="10" y="{conflicts_y - 8}">conflicts with</text>')
        for i, contract in enumerate(conflicts):
            x = 10 + (i % per_row) * (BOX_W + GAP)
            y = conflicts_y + (i // per_row) * (BOX_H + GAP)
            if i < per_row:
                parts.append(
                    f'<line class="edge conflict" x1="{center_x + BOX_W // 2}" y1="{center_y + BOX_H}" '
                    f'x2="{x + BOX_W // 2}" y2="{y}"/>'
                )
            parts.append(_node(x, y, contract, "conflicts", href(contract)))
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every text above went through escape()
