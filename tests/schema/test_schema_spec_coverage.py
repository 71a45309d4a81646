"""The schema holds every field of the spec page, at the same path, with the same shape.

Each spec section heading ("author.links[]", "runtime.schedule.needs[] (form 2 of 2)", ...) is
walked down the schema by a navigator written here (independent of the reference renderer),
and every row of its table must be a property there: same names, required flags, enums,
defaults, and the same rendered type.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from catalogue.manifest.reference import collect_sections
from catalogue.schemas import SCHEMA_BASE, SCHEMA_FILES, load_schema, schema_registry

SPEC = json.loads(Path(__file__).with_name("spec_fields.json").read_text(encoding="utf-8"))
HEADINGS = [section["heading"] for section in SPEC]
FORM = re.compile(r"^(?P<path>.+) \(form (?P<k>\d+) of (?P<n>\d+)\)$")
ROOT_URI = SCHEMA_BASE + "plugin-manifest.schema.json"


class Node:
    """A schema node with its `$ref`s followed (sibling keywords of a `$ref` kept on top)."""

    def __init__(self, raw: dict[str, Any], resolver: Any):
        merged: dict[str, Any] = {}
        layers = [raw]
        while "$ref" in raw:
            resolved = resolver.lookup(raw["$ref"])
            raw, resolver = resolved.contents, resolved.resolver
            layers.append(raw)
        for layer in reversed(layers):
            merged.update({k: v for k, v in layer.items() if k != "$ref"})
        self.raw_ref = layers[0].get("$ref")
        self.schema = merged
        self.resolver = resolver

    def child(self, raw: dict[str, Any]) -> Node:
        return Node(raw, self.resolver)

    def alternatives(self) -> list[Node]:
        return [self.child(a) for a in self.schema.get("oneOf") or self.schema.get("anyOf") or []]

    def object_forms(self) -> list[Node]:
        return [a for a in self.alternatives() if "properties" in a.schema]

    def as_object(self) -> Node:
        """This node when it is an object shape, else its one object alternative."""
        if "properties" in self.schema:
            return self
        forms = self.object_forms()
        assert len(forms) == 1, f"expected one object shape, found {len(forms)}: {self.schema}"
        return forms[0]


def root_node(uri: str = ROOT_URI) -> Node:
    resolver = schema_registry().resolver(base_uri=uri)
    return Node(resolver.lookup(uri).contents, resolver)


def node_at(heading: str, root: Node | None = None) -> Node:
    """The object shape a spec heading names."""
    node = root or root_node()
    if heading == "Top-level fields":
        return node.as_object()
    match = FORM.match(heading)
    path = match["path"] if match else heading
    for token in path.split("."):
        node = node.as_object() if token != "*" else node
        if token == "*":
            extra = node.schema.get("additionalProperties")
            assert isinstance(extra, dict), f"{heading}: {path} is not a map"
            node = node.child(extra)
            continue
        name = token.removesuffix("[]")
        props = node.as_object().schema.get("properties", {})
        assert name in props, f"{heading}: no property {name!r}"
        node = node.as_object().child(props[name])
        if token.endswith("[]"):
            node = Node(node.schema["items"], node.resolver) if "items" in node.schema else node
            assert node.schema, f"{heading}: {name} is not a list"
    if match:
        forms = node.object_forms()
        assert len(forms) == int(match["n"]), f"{heading}: schema has {len(forms)} object forms"
        return forms[int(match["k"]) - 1]
    return node.as_object()


def enum_values(node: Node) -> list[Any]:
    """Enum and const values of a field, through list items and alternatives (not properties)."""
    found: list[Any] = []
    for value in [
        *node.schema.get("enum", []),
        *([node.schema["const"]] if "const" in node.schema else []),
    ]:
        if isinstance(value, str) and value not in found:
            found.append(value)
    if isinstance(node.schema.get("items"), dict):
        found += [v for v in enum_values(node.child(node.schema["items"])) if v not in found]
    for alt in node.alternatives():
        found += [v for v in enum_values(alt) if v not in found]
    return found


def spec_rows() -> Iterator[tuple[str, dict[str, Any]]]:
    for section in SPEC:
        for row in section["rows"]:
            yield section["heading"], row


ROWS = list(spec_rows())
ROW_IDS = [f"{heading}:{row['field']}" for heading, row in ROWS]


def test_the_spec_extract_is_complete(spec_sections):
    # 59 tables and 250 fields on the spec page; a broken parse would shrink these.
    assert len(spec_sections) == 59
    assert sum(len(s["rows"]) for s in spec_sections) == 250
    assert spec_sections[0]["heading"] == "Top-level fields"


@pytest.mark.parametrize("heading", HEADINGS)
def test_every_spec_section_is_an_object_with_exactly_its_fields(heading):
    section = next(s for s in SPEC if s["heading"] == heading)
    node = node_at(heading)
    assert node.schema.get("type") == "object"
    assert node.schema.get("additionalProperties") is False
    assert list(node.schema["properties"]) == [row["field"] for row in section["rows"]]


@pytest.mark.parametrize("heading", HEADINGS)
def test_required_flags_match_the_spec(heading):
    section = next(s for s in SPEC if s["heading"] == heading)
    node = node_at(heading)
    spec_required = [row["field"] for row in section["rows"] if row["required"]]
    assert sorted(node.schema.get("required", [])) == sorted(spec_required)


@pytest.mark.parametrize(("heading", "row"), ROWS, ids=ROW_IDS)
def test_enums_match_the_spec(heading, row):
    field = node_at(heading).child(node_at(heading).schema["properties"][row["field"]])
    assert enum_values(field) == re.findall(r'"([^"]*)"', row["type"])


@pytest.mark.parametrize(("heading", "row"), ROWS, ids=ROW_IDS)
def test_defaults_match_the_spec(heading, row):
    field = node_at(heading).child(node_at(heading).schema["properties"][row["field"]])
    if "default" in row:
        assert field.schema.get("default", "<none>") == row["default"]
    if "default" in field.schema:
        # We add the keyword for every fixed default the spec states in words, never one it omits.
        assert row["says_default"], f"schema default {field.schema['default']!r} not in the spec"
        if row["type"] == "boolean":
            assert isinstance(field.schema["default"], bool)


@pytest.mark.parametrize(("heading", "row"), ROWS, ids=ROW_IDS)
def test_text_fields_are_the_text_definition(heading, row):
    field = node_at(heading).child(node_at(heading).schema["properties"][row["field"]])
    is_text = field.raw_ref is not None and field.raw_ref.endswith("#/$defs/text")
    assert is_text == (row["type"] == "text")
    if is_text:
        assert field.schema["type"] == "string"


def test_rendered_types_and_required_flags_equal_the_spec_rows(plugin_schema):
    ours = {
        section.heading.replace("`", ""): [(f.name, f.type, f.required) for f in section.fields]
        for section in collect_sections(plugin_schema, registry=_registry())
    }
    spec = {s["heading"]: [(r["field"], r["type"], r["required"]) for r in s["rows"]] for s in SPEC}
    assert ours == spec


def test_sections_come_in_the_spec_order(plugin_schema):
    ours = [
        s.heading.replace("`", "") for s in collect_sections(plugin_schema, registry=_registry())
    ]
    assert ours == HEADINGS


def test_limits_the_spec_states(plugin_schema):
    links = node_at("author").schema["properties"]["links"]
    assert links["maxItems"] == 6
    detached = node_at("runtime.schedule.detached").schema["properties"]
    assert detached["maxSettleWaitMs"]["maximum"] == 120000
    assert (
        node_at("contributes.worldProjections.*").schema["properties"]["outputs"]["minProperties"]
        == 1
    )
    assert node_at("runtime.agent.history").schema["properties"]["maxTurns"]["minimum"] == 0


@pytest.mark.parametrize(
    ("heading", "field"),
    [
        ("permissions.http[]", "methods"),
        ("runtime.permissions.http[]", "methods"),
        ("runtime.effects", "reads"),
        ("runtime.effects", "writes"),
    ],
)
def test_lists_whose_entries_must_be_unique(heading, field):
    node = node_at(heading)
    assert node.child(node.schema["properties"][field]).schema["uniqueItems"] is True


def test_every_integer_field_has_a_minimum_except_sort_order():
    for heading, row in ROWS:
        if row["type"] != "integer":
            continue
        field = node_at(heading).child(node_at(heading).schema["properties"][row["field"]])
        if (heading, row["field"]) == ("contributes.extensions[]", "order"):
            assert "minimum" not in field.schema  # lower comes first; negatives are meaningful
        else:
            assert "minimum" in field.schema, f"{heading}.{row['field']}"


CONTRACT_FIELDS = [
    ("provides[]", "contract"),
    ("contributes.services[]", "contract"),
    ("contributes.extensions[]", "point"),
    ("runtime.schedule.needs[] (form 2 of 2)", "contract"),
    ("runtime.schedule.after[] (form 2 of 2)", "contract"),
    ("runtime.io.inputs.*.from (form 2 of 3)", "contract"),
    ("runtime.io.output", "contract"),
    ("runtime.agent.tools.services[]", "contract"),
]


@pytest.mark.parametrize(("heading", "field"), CONTRACT_FIELDS)
def test_contract_fields_use_the_contract_id_definition(heading, field):
    node = node_at(heading)
    assert node.schema["properties"][field]["$ref"] == "#/$defs/contractId"


def test_contract_lists_and_keys_use_the_contract_id_syntax(plugin_schema):
    pattern = plugin_schema["$defs"]["contractId"]["pattern"]
    assert pattern == "^[a-z][a-z0-9.-]*@[1-9][0-9]*$"
    top = plugin_schema["properties"]
    for name in ("requires", "conflicts"):
        assert top[name]["items"]["$ref"] == "#/$defs/contractId"
    assert top["contracts"]["propertyNames"]["pattern"] == pattern
    accepts = node_at("contributes.data.*").schema["properties"]["accepts"]
    assert accepts["items"]["$ref"] == "#/$defs/contractId"


def test_the_runtime_schema_is_the_runtime_object(plugin_schema, runtime_schema):
    registry = _registry()
    in_plugin = [
        (s.path.removeprefix("runtime").removeprefix("."), s.form, s.fields)
        for s in collect_sections(plugin_schema, registry=registry)
        if s.path == "runtime" or s.path.startswith("runtime.")
    ]
    standalone = [
        (s.path, s.form, s.fields) for s in collect_sections(runtime_schema, registry=registry)
    ]
    assert standalone == in_plugin
    top = node_at("Top-level fields", root_node(SCHEMA_BASE + "runtime-manifest.schema.json"))
    assert list(top.schema["properties"]) == [
        "description",
        "schedule",
        "io",
        "agent",
        "function",
        "guard",
        "effects",
        "permissions",
    ]


def _registry() -> dict[str, dict[str, Any]]:
    return {SCHEMA_BASE + name: load_schema(name) for name in SCHEMA_FILES}
