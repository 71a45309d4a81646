"""The locale variant schema holds exactly the spec's translatable ("text") fields, plus the
identity keys that match list entries to PLUGIN.md, and nothing a translation must not change."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

# The one translatable field the spec types as a plain string: Covel allows localized prompts.
EXTRA_TRANSLATABLE = {"contributes.prompt[].content"}
FORM = re.compile(r" \(form \d+ of \d+\)$")


def leaves(
    schema: dict[str, Any], node: dict[str, Any], path: str = ""
) -> Iterator[tuple[str, bool]]:
    """(dotted path, is a required identity key) of every scalar field of the locale schema."""
    if "$ref" in node:
        target = schema
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    if node.get("type") == "array":
        yield from leaves(schema, node["items"], path + "[]")
    elif node.get("type") == "object" and "properties" in node:
        required = set(node.get("required", []))
        for name, child in node["properties"].items():
            child_path = f"{path}.{name}" if path else name
            if child.get("type") in ("object", "array") or "$ref" in child:
                yield from leaves(schema, child, child_path)
            else:
                # An identity key is required, or (Covel: matched by position) says so.
                identity = name in required or str(child.get("description", "")).startswith(
                    "Identity:"
                )
                yield child_path, identity
    elif node.get("type") == "object":
        yield from leaves(schema, node["additionalProperties"], path + ".*")


def spec_fields(spec_sections: list[dict[str, Any]]) -> dict[str, str]:
    """Dotted path -> spec type of every field on the spec page."""
    out = {}
    for section in spec_sections:
        base = "" if section["heading"] == "Top-level fields" else FORM.sub("", section["heading"])
        for row in section["rows"]:
            out[f"{base}.{row['field']}" if base else row["field"]] = row["type"]
    return out


def test_the_translatable_fields_are_the_spec_text_fields(locale_schema, spec_sections):
    fields = spec_fields(spec_sections)
    text_fields = {path for path, type_ in fields.items() if type_ == "text"}
    assert "author.links[].label" in text_fields and "runtime.description" in text_fields
    ours = dict(leaves(locale_schema, locale_schema))
    translatable = {path for path, identity in ours.items() if not identity}
    assert translatable == text_fields | EXTRA_TRANSLATABLE


def test_identity_keys_are_required_canonical_fields(locale_schema, spec_sections):
    fields = spec_fields(spec_sections)
    identities = {path for path, identity in leaves(locale_schema, locale_schema) if identity}
    assert identities == {
        "author.links[].url",
        "contributes.commands[].name",
        "contributes.commands[].arguments[].name",
        "contributes.actionKinds[].name",
        "contributes.events[].topic",
        "contributes.settings[].key",
        "contributes.settings[].options[].value",
        "contributes.prompt[].id",
    }
    for path in identities:
        assert fields[path] == "string", path  # the key exists in PLUGIN.md with the same type
    # As Covel, an event's translation may leave topic out and match by position.
    events = locale_schema["properties"]["contributes"]["properties"]["events"]["items"]
    assert "topic" not in events.get("required", [])


def test_a_full_translation_is_valid(locale_validator):
    doc = {
        "displayName": "Würfelprobe",
        "description": "Würfelt für Fertigkeitsproben.",
        "author": {
            "about": "Ich baue kleine Werkzeuge.",
            "links": [{"url": "https://example.com/c", "label": "Forum"}],
        },
        "contributes": {
            "commands": [
                {
                    "name": "roll-dice",
                    "description": "Würfeln.",
                    "arguments": [{"name": "count", "description": "Anzahl"}],
                }
            ],
            "actionKinds": [
                {"name": "gesture", "display": {"label": "Geste", "placeholder": "Winken…"}}
            ],
            "events": [{"topic": "dice.rolled", "description": "Es wurde gewürfelt."}],
            "settings": [
                {
                    "key": "style",
                    "label": "Stil",
                    "description": "Aussehen",
                    "options": [{"value": "plain", "label": "Schlicht"}],
                }
            ],
            "data": {"tables": {"authoring": {"title": "Würfeltabellen", "summary": "Tabellen."}}},
            "prompt": [{"id": "rules", "content": "Würfle fair."}],
        },
        "runtime": {"description": "Erzählt den Wurf."},
    }
    assert [e.message for e in locale_validator.iter_errors(doc)] == []
    assert locale_validator.is_valid({})


@pytest.mark.parametrize(
    ("doc", "where"),
    [
        ({"id": "dice"}, ""),
        ({"kind": "core"}, ""),
        ({"contributes": {"tools": ["roll"]}}, "/contributes"),
        (
            {"contributes": {"commands": [{"name": "roll", "action": "other"}]}},
            "/contributes/commands/0",
        ),
        ({"contributes": {"settings": [{"key": "a", "type": "text"}]}}, "/contributes/settings/0"),
        ({"contributes": {"data": {"t": {"schema": "x.json"}}}}, "/contributes/data/t"),
        ({"contributes": {"prompt": [{"id": "a", "position": "system"}]}}, "/contributes/prompt/0"),
        ({"runtime": {"schedule": {"stage": "setup"}}}, "/runtime"),
        ({"author": {"name": "Someone else"}}, "/author"),
    ],
)
def test_a_translation_cannot_change_anything_else(locale_validator, doc, where):
    errors = list(locale_validator.iter_errors(doc))
    assert [("".join(f"/{p}" for p in e.absolute_path), e.validator) for e in errors] == [
        (where, "additionalProperties")
    ]


def test_list_entries_must_name_their_canonical_entry(locale_validator):
    errors = list(
        locale_validator.iter_errors({"contributes": {"commands": [{"description": "x"}]}})
    )
    assert [(e.validator, e.message) for e in errors] == [
        ("required", "'name' is a required property")
    ]


def test_a_runtime_translation_carries_only_the_description(runtime_locale_validator):
    assert runtime_locale_validator.is_valid({"description": "Erzählt den Wurf."})
    errors = list(runtime_locale_validator.iter_errors({"description": 3, "agent": {}}))
    assert sorted(e.validator for e in errors) == ["additionalProperties", "type"]
