"""Small text helpers shared by the index and the card."""

from __future__ import annotations

import re

PROMPT_SUMMARY_CHARS = 400


def prompt_summary(body: str) -> str:
    """The first prose paragraph of a Markdown prompt, shortened for a card."""
    for block in re.split(r"\n\s*\n", body or ""):
        text = " ".join(line.strip() for line in block.strip().splitlines()).strip()
        if not text or text.startswith(("#", "```", "---")):
            continue
        if len(text) > PROMPT_SUMMARY_CHARS:
            text = text[: PROMPT_SUMMARY_CHARS - 1].rstrip() + "…"
        return text
    return ""
