"""A package's translations for the catalogue: its display name, description and prose body
in each locale it ships, from `locales/<locale>.yaml|yml|json` (the "PLUGIN.md" section) and
`PLUGIN.<locale>.md` (which wins where both say something). The loader reads them
(Manifest.translations), the index stores them on the Package row, and they are picked per
request by language here (docs/catalogue.md, "Languages")."""

from __future__ import annotations

FIELDS = ("displayName", "description")


def pick_locale(available: list[str], wanted: list[str]) -> str | None:
    """The best of `available` for languages in preference order: an exact tag first, then the
    same language (zh matches zh-CN and zh-CN matches zh), else None (use the manifest)."""
    lowered = {a.lower(): a for a in available}
    for tag in wanted:
        tag = tag.lower()
        if tag in lowered:
            return lowered[tag]
        base = tag.split("-")[0]
        for key, original in lowered.items():
            if key.split("-")[0] == base:
                return original
    return None


def search_words(translations: dict[str, dict[str, str]]) -> list[str]:
    """What the search should also find a package by: its names and descriptions in every locale."""
    return [t[k] for t in translations.values() for k in FIELDS if k in t]
