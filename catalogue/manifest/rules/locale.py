"""Locale variants: `locales/<locale>.yaml` and `*.messages.json`, their keys against the
manifest they translate, and placeholders kept.
"""

from __future__ import annotations

import re
from typing import Any

from catalogue.manifest.context import Context
from catalogue.manifest.rules.common import as_dict, as_list, items
from core.pointer import join

# ---------------------------------------------------------------- locale variants

# Lists of a locale variant and the field that matches each entry to the canonical PLUGIN.md entry;
# the third item names a nested list matched the same way inside the matched entry.
_LOCALE_LISTS: tuple[tuple[tuple[str, ...], str, tuple[str, str] | None], ...] = (
    (("author", "links"), "url", None),
    (("contributes", "commands"), "name", ("arguments", "name")),
    (("contributes", "actionKinds"), "name", None),
    (("contributes", "events"), "topic", None),
    (("contributes", "settings"), "key", ("options", "value")),
    (("contributes", "prompt"), "id", None),
)


def check_locale(ctx: Context, data: Any, *, file: str, base: str = "") -> None:
    """Every entry a PLUGIN.<locale>.md translates must exist in PLUGIN.md, by its identity key."""
    if not isinstance(data, dict):
        return
    canonical = ctx.data

    def match(
        translated: Any, original: Any, key: str, where: str, nested: tuple[str, str] | None
    ) -> None:
        index = {}
        for entry in as_list(original):
            identity = as_dict(entry).get(key)
            if isinstance(identity, str):
                index[identity] = as_dict(entry)
        translated_list = as_list(translated)
        for i, entry in items(translated):
            identity = as_dict(entry).get(key)
            if not isinstance(identity, str):
                # Covel matches an entry without its identity key by position; that needs lists of
                # the same length, else the translation is ignored (as Covel warns and ignores).
                if isinstance(entry, dict) and len(translated_list) != len(as_list(original)):
                    ctx.warn(
                        file,
                        join(where, i),
                        "locale-entry-unmatched",
                        f"this entry has no {key} and the list has {len(translated_list)} entries "
                        f"where PLUGIN.md has {len(as_list(original))}, so it matches none; "
                        f"repeat {key} to match it",
                    )
                continue
            if identity not in index:
                ctx.error(
                    file,
                    join(where, i, key),
                    "locale-entry-unknown",
                    f"{key} {identity!r} matches no entry of PLUGIN.md at {where.removeprefix(base) or '/'}",
                )
            elif nested is not None:
                field, nested_key = nested
                match(
                    as_dict(entry).get(field),
                    index[identity].get(field),
                    nested_key,
                    join(where, i, field),
                    None,
                )

    for parts, key, nested in _LOCALE_LISTS:
        translated: Any = data
        original: Any = canonical
        for part in parts:
            translated = as_dict(translated).get(part)
            original = as_dict(original).get(part)
        if translated is not None:
            match(translated, original, key, join(base, *parts), nested)
    namespaces = as_dict(as_dict(canonical.get("contributes")).get("data"))
    for name in as_dict(as_dict(data.get("contributes")).get("data")):
        if name not in namespaces:
            ctx.error(
                file,
                join(base, "contributes", "data", name),
                "locale-entry-unknown",
                f"the data namespace {name!r} is not declared in PLUGIN.md",
            )


def check_locale_messages(ctx: Context, data: Any, *, file: str, base: str) -> None:
    """locales/<locale>.yaml `messages`: Covel's catalogue from English text to its translation.

    Keys are the English text (optionally `property|text` for one UI property); every value is a
    string, and a translation keeps the placeholders ({name}, {{name}}) of its text.
    """
    if not isinstance(data, dict):
        ctx.error(
            file,
            base,
            "locale-messages-invalid",
            "messages must be a mapping from the English text to its translation",
        )
        return
    for text, translation in data.items():
        where = join(base, str(text))
        if not isinstance(translation, str):
            ctx.error(
                file,
                where,
                "locale-messages-invalid",
                f"the translation of {text!r} must be a string, got {type(translation).__name__}",
            )
            continue
        source = _placeholders(str(text).split("|", 1)[-1])
        target = _placeholders(translation)
        if source != target:
            ctx.error(
                file,
                where,
                "locale-placeholders-differ",
                f"{text!r} has placeholders {' '.join(source) or '(none)'} and its translation has "
                f"{' '.join(target) or '(none)'}",
            )


_PLACEHOLDER = re.compile(r"\{\{?\s*[\w./-]+\s*\}?\}")


def _placeholders(text: str) -> list[str]:
    return sorted(re.sub(r"\s+", "", found) for found in _PLACEHOLDER.findall(text))
