"""{en, zh} text maps in a manifest: English stays, the other languages move to locales/."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

from catalogue.manifest.migrate.docs import _Ctx, _is_link
from catalogue.manifest.migrate.model import (
    _IDENTITY_KEYS,
    _LOCALE,
    _TEXT_KEYS,
    LOCALES_DIR,
    REFUSED,
    FileChange,
    Plan,
    _Refused,
)
from catalogue.manifest.migrate.yamledit import _dump, _yaml
from catalogue.manifest.types import Issue
from core.pointer import join

# ------------------------------------------------------------------ locale maps


def _is_locale_map(value: Any) -> bool:
    return (
        isinstance(value, CommentedMap)
        and bool(value)
        and all(isinstance(k, str) and _LOCALE.match(k) for k in value)
        and all(isinstance(v, str) for v in value.values())
    )


def _english_key(value: Mapping[str, Any]) -> str | None:
    """en, else the first English variant written (covel-plugins writes en-US)."""
    if "en" in value:
        return "en"
    return next((k for k in value if k.startswith("en-")), None)


def _merge_texts(have: Any, new: Any, where: str, conflicts: list[tuple[str, Any, Any]]) -> None:
    """Put new's texts into have: a text already there is kept when it is the same, a missing
    one is added, a different one is a conflict (the author chooses)."""
    if isinstance(have, Mapping) and isinstance(new, Mapping):
        for key, value in new.items():
            at = join(where, str(key))
            if key not in have:
                have[key] = value
            elif isinstance(have[key], Mapping | list) and isinstance(value, Mapping | list):
                _merge_texts(have[key], value, at, conflicts)
            elif have[key] != value:
                conflicts.append((at, have[key], value))
    elif isinstance(have, list) and isinstance(new, list):
        for entry in new:
            identity = next(
                (k for k in _IDENTITY_KEYS if isinstance(entry, Mapping) and k in entry), None
            )
            match = next(
                (
                    e
                    for e in have
                    if identity and isinstance(e, Mapping) and e.get(identity) == entry[identity]
                ),
                None,
            )
            if match is None:
                have.append(entry)
            else:
                _merge_texts(match, entry, join(where, f"{identity}={entry[identity]}"), conflicts)
    elif have != new:
        conflicts.append((where, have, new))


def _fold_texts(ctx: _Ctx, node: Any, where: str, out: CommentedMap | None) -> bool:
    """Replace {en: ..., zh: ...} text by its English text; collect the other languages.

    out receives, per locale, the same path with list entries keyed by their identity field
    (what locales/<locale>.yaml expects). Returns whether anything was found below node.
    """
    found = False
    if isinstance(node, CommentedMap):
        for key in list(node):
            value = node[key]
            at = join(where, str(key))
            if key in _TEXT_KEYS and _is_locale_map(value):
                english = _english_key(value)
                if english is None:
                    ctx.refuse(
                        at,
                        "text-without-english",
                        "a locale map without en: the manifest's own text is English; add en",
                    )
                    continue
                node[key] = value[english]
                for locale, text in value.items():
                    if locale == english:
                        continue
                    section = ctx.translations.setdefault(locale, {}).setdefault(
                        ctx.doc.new_path, CommentedMap()
                    )
                    _put(section, _steps(ctx, at), text)
                ctx.note(at, "a locale map: English stays here, the rest goes to locales/")
                found = True
            elif isinstance(value, CommentedMap | CommentedSeq):
                found = _fold_texts(ctx, value, at, out) or found
    elif isinstance(node, CommentedSeq):
        for i, item in enumerate(node):
            found = _fold_texts(ctx, item, join(where, str(i)), out) or found
    return found


def _steps(ctx: _Ctx, pointer: str) -> list[Any]:
    """Path steps for a locale section: list indexes become {identity: value} matchers."""
    steps: list[Any] = []
    node: Any = ctx.doc.data
    for token in pointer.split("/")[1:]:
        if isinstance(node, CommentedSeq):
            item = node[int(token)]
            identity = next(
                (k for k in _IDENTITY_KEYS if isinstance(item, Mapping) and k in item), None
            )
            if identity is None:
                raise _Refused(f"{pointer}: the list entry has no identity field")
            steps.append((identity, item[identity]))
            node = item
        else:
            steps.append(token)
            node = node[token]
    return steps


def _put(section: CommentedMap, steps: list[Any], text: str) -> None:
    node: Any = section
    for i, step in enumerate(steps[:-1]):
        following = steps[i + 1]
        if isinstance(step, tuple):
            continue
        if isinstance(following, tuple):
            items = node.setdefault(step, CommentedSeq())
            identity, ident_value = following
            entry = next((e for e in items if e.get(identity) == ident_value), None)
            if entry is None:
                entry = CommentedMap()
                entry[identity] = ident_value
                items.append(entry)
            node = entry
        else:
            node = node.setdefault(step, CommentedMap())
    node[steps[-1]] = text


def _locale_changes(
    plan: Plan, translations: dict[str, dict[str, CommentedMap]], style: str
) -> None:
    """New or extended locales/<locale>.yaml files; style: YAML whose list indent they follow."""
    for locale in sorted(translations):
        relative = f"{LOCALES_DIR}/{locale}.yaml"
        full = plan.root / relative
        if _is_link(plan.root, relative):
            plan.refusals.append(
                Issue(relative, "", REFUSED, f"{relative} is a symbolic link [symlink]")
            )
            continue
        y = _yaml(style)
        if full.exists():
            old_text = full.read_text(encoding="utf-8")
            try:
                existing = y.load(old_text) or CommentedMap()
            except YAMLError as exc:
                plan.refusals.append(Issue(relative, "", REFUSED, f"cannot be read: {exc}"))
                continue
            if not isinstance(existing, CommentedMap):
                plan.refusals.append(Issue(relative, "", REFUSED, "a locale file is a mapping"))
                continue
        else:
            old_text, existing = "", CommentedMap()
        for file, texts in translations[locale].items():
            if file not in existing:
                existing[file] = texts
                continue
            # The file already translates this manifest: keep what is the same, add what is
            # missing, and refuse only a text that differs from the one already there.
            conflicts: list[tuple[str, Any, Any]] = []
            _merge_texts(existing[file], texts, join("", file), conflicts)
            for at, have, new in conflicts:
                plan.refusals.append(
                    Issue(
                        relative,
                        at,
                        REFUSED,
                        f"{relative} already has {have!r} here and the manifest's locale map says "
                        f"{new!r}; keep one [locale-text-differs]",
                    )
                )
        new_text = _dump(y, existing)
        if new_text != old_text:
            plan.changes.append(
                FileChange(relative if full.exists() else None, relative, old_text, new_text)
            )
        else:
            plan.notes.append(
                Issue(relative, "", "migrated", f"{relative} already holds these translations")
            )
