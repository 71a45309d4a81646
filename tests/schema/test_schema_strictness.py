"""Every schema is valid draft 2020-12 and closed: no object anywhere accepts an unknown key."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from catalogue.schemas import SCHEMA_BASE, SCHEMA_FILES, load_schema, schema_registry

SUBSCHEMA_KEYS = ("items", "additionalProperties", "propertyNames", "not", "if", "then", "else")
SUBSCHEMA_LISTS = ("oneOf", "anyOf", "allOf", "prefixItems")
SUBSCHEMA_MAPS = ("properties", "$defs", "patternProperties")


def walk(node: Any, pointer: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema node (not annotations such as `default` or `examples`) with its pointer."""
    if not isinstance(node, dict):
        return
    yield pointer, node
    for key in SUBSCHEMA_KEYS:
        if isinstance(node.get(key), dict):
            yield from walk(node[key], f"{pointer}/{key}")
    for key in SUBSCHEMA_LISTS:
        for index, child in enumerate(node.get(key, [])):
            yield from walk(child, f"{pointer}/{key}/{index}")
    for key in SUBSCHEMA_MAPS:
        for name, child in node.get(key, {}).items():
            yield from walk(child, f"{pointer}/{key}/{name}")


@pytest.mark.parametrize("name", SCHEMA_FILES)
def test_each_schema_is_valid_draft_2020_12(name):
    schema = load_schema(name)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == SCHEMA_BASE + name
    assert schema["title"]


@pytest.mark.parametrize("name", SCHEMA_FILES)
def test_every_object_is_closed(name):
    schema = load_schema(name)
    objects = [(p, n) for p, n in walk(schema) if n.get("type") == "object"]
    if name == "runtime-manifest.schema.json":
        # Nothing of its own: the runtime object of the plugin schema, checked there.
        assert not objects and schema["$ref"] == "plugin-manifest.schema.json#/$defs/runtime"
        return
    assert objects, "walk found no objects"
    for pointer, node in objects:
        extra = node.get("additionalProperties")
        if "properties" in node:
            assert extra is False, f"{name}#{pointer} has properties but is open"
        else:
            # A map: its values are constrained by a sub-schema instead.
            assert isinstance(extra, dict), f"{name}#{pointer} is an open object"


@pytest.mark.parametrize("name", SCHEMA_FILES)
def test_every_property_is_described_and_every_ref_resolves(name):
    resolver = schema_registry().resolver(base_uri=SCHEMA_BASE + name)
    for pointer, node in walk(load_schema(name)):
        if "$ref" in node:
            resolver.lookup(node["$ref"])  # raises when a reference is dangling
        for prop, child in node.get("properties", {}).items():
            described = child.get("description") or (
                "$ref" in child and resolver.lookup(child["$ref"]).contents.get("description")
            )
            assert described, f"{name}#{pointer}/properties/{prop} has no description"


def test_defaults_are_valid_for_their_own_field():
    # A default that its own schema refuses would mislead every tool that applies defaults.
    registry = schema_registry()
    for name in SCHEMA_FILES:
        for pointer, node in walk(load_schema(name)):
            if "default" in node:
                check = {k: v for k, v in node.items() if k != "default"}
                validator = Draft202012Validator(
                    {**check, "$id": SCHEMA_BASE + name}, registry=registry
                )
                assert validator.is_valid(node["default"]), f"{name}#{pointer}"


def test_the_walk_sees_nested_nodes():
    schema = load_schema("plugin-manifest.schema.json")
    pointers = {p for p, _ in walk(schema)}
    assert (
        "/$defs/runtimeIo/properties/inputs/additionalProperties/properties/from/oneOf/2"
        in pointers
    )
    assert (
        "/properties/contributes/properties/data/additionalProperties/properties/authoring"
        in pointers
    )
