"""The reference page generator: spec-shaped types, headings and tables, deterministic output."""

from __future__ import annotations

import re
from typing import Any

import pytest

from catalogue.management.commands.schemas_generate import render_pages
from catalogue.manifest.reference import collect_sections, render_reference

SMALL: dict[str, Any] = {
    "$id": "https://example.invalid/small.schema.json",
    "title": "Small thing",
    "description": "A schema that uses every shape once.",
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "name": {"$ref": "#/$defs/text", "description": "Its name | with a pipe."},
        "mode": {"type": "string", "enum": ["a", "b"], "default": "a", "description": "Mode."},
        "count": {"type": "integer", "examples": [3, 4], "description": "How many."},
        "ratio": {"type": "number", "description": "Ratio."},
        "flags": {"type": "array", "items": {"type": "boolean"}, "description": "Flags."},
        "anything": {"description": "Any value."},
        "lazy": {
            "oneOf": [{"const": True}, {"type": "array", "items": {"type": "string"}}],
            "description": "Lazy.",
        },
        "globs": {
            "type": "array",
            "items": {"anyOf": [{"type": "string", "enum": ["x:*", "<y>"]}, {"type": "string"}]},
            "description": "Globs.",
        },
        "table": {
            "type": "object",
            "additionalProperties": {"$ref": "#/$defs/cell"},
            "description": "A map.",
        },
        "source": {
            "oneOf": [
                {"type": "string"},
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["path"],
                    "properties": {"path": {"type": "string", "description": "Path."}},
                },
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["url"],
                    "properties": {"url": {"type": "string", "description": "URL."}},
                },
            ],
            "description": "Where from.",
        },
        "choice": {
            "oneOf": [
                {"const": "auto"},
                {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"pick": {"type": "string", "description": "Pick."}},
                },
            ],
            "description": "A choice.",
        },
    },
    "$defs": {
        "text": {"type": "string", "description": "Player text."},
        "cell": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"value": {"type": "integer", "description": "Value.", "default": 0}},
        },
    },
}


def test_types_render_like_the_spec():
    top = {f.name: f for f in collect_sections(SMALL)[0].fields}
    assert {name: field.type for name, field in top.items()} == {
        "name": "text",
        "mode": '"a" or "b"',
        "count": "integer",
        "ratio": "number",
        "flags": "list of boolean",
        "anything": "any",
        "lazy": "true or list of string",
        "globs": 'list of "x:*" or "<y>" or string',
        "table": "map of object",
        "source": "string or object",
        "choice": '"auto" or object',
    }
    assert top["name"].required and not top["mode"].required


def test_descriptions_carry_examples_and_defaults():
    top = {f.name: f for f in collect_sections(SMALL)[0].fields}
    assert top["mode"].description == 'Mode. Default: `"a"`.'
    assert top["count"].description == "How many. Example: `3`, `4`."
    assert (
        top["name"].description == "Its name | with a pipe."
    )  # the field's own text wins over the $def's


def test_sections_cover_maps_forms_and_single_object_alternatives():
    headings = [s.heading for s in collect_sections(SMALL)]
    assert headings == [
        "Top-level fields",
        "`table.*`",
        "`source` (form 1 of 2)",
        "`source` (form 2 of 2)",
        "`choice`",
    ]
    cell = collect_sections(SMALL)[1]
    assert [(f.name, f.type, f.description) for f in cell.fields] == [
        ("value", "integer", "Value. Default: `0`.")
    ]


def test_the_page_escapes_markdown_in_cells():
    page = render_reference(SMALL)
    assert "| `name` | text | yes | Its name \\| with a pipe. |" in page
    assert '| `globs` | list of "x:\\*" or "\\<y\\>" or string | no | Globs. |' in page
    assert page.startswith("# Small thing\n")
    assert "A schema that uses every shape once." in page
    assert "JSON Schema: `small.schema.json`." in page


def test_the_page_is_deterministic_and_follows_schema_order():
    assert render_reference(SMALL) == render_reference(SMALL)
    reordered = dict(SMALL, properties=dict(reversed(list(SMALL["properties"].items()))))
    first_rows = [
        line for line in render_reference(reordered).splitlines() if line.startswith("| `")
    ]
    assert first_rows[0].startswith("| `choice`")


def test_a_cross_file_ref_needs_the_other_schema():
    schema = {"$id": "https://example.invalid/a.json", "$ref": "b.json#/$defs/thing"}
    with pytest.raises(ValueError, match="no schema with \\$id https://example.invalid/b.json"):
        render_reference(schema)
    other = {"$id": "https://example.invalid/b.json", "$defs": {"thing": SMALL["$defs"]["cell"]}}
    page = render_reference(schema, registry={other["$id"]: other})
    assert "| `value` | integer | no | Value. Default: `0`. |" in page


# ---- the committed page against the spec page


def parse_markdown_tables(page: str) -> dict[str, list[tuple[str, str, bool]]]:
    """Heading -> [(field, type, required)] from our generated Markdown, unescaped."""
    sections: dict[str, list[tuple[str, str, bool]]] = {}
    heading = None
    for line in page.splitlines():
        if line.startswith("## "):
            heading = line[3:].replace("`", "")
            sections[heading] = []
        elif line.startswith("| `") and heading is not None:
            cells = re.split(r"(?<!\\)\|", line)[1:-1]
            field, type_, required = (c.strip() for c in cells[:3])
            type_ = re.sub(r"\\(.)", r"\1", type_)
            sections[heading].append((field.strip("`"), type_, required == "yes"))
    return sections


def test_the_generated_page_has_the_spec_sections_and_rows(spec_sections):
    page = render_pages()["plugin-manifest.md"]
    ours = parse_markdown_tables(page)
    assert list(ours) == [s["heading"] for s in spec_sections]
    spec = {
        s["heading"]: [(r["field"], r["type"], r["required"]) for r in s["rows"]]
        for s in spec_sections
    }
    assert ours == spec


def test_the_runtime_page_is_the_runtime_part_of_the_plugin_page():
    pages = render_pages()
    plugin = parse_markdown_tables(pages["plugin-manifest.md"])
    runtime = parse_markdown_tables(pages["runtime-manifest.md"])
    expected = {
        ("Top-level fields" if h == "runtime" else h.removeprefix("runtime.")): rows
        for h, rows in plugin.items()
        if h == "runtime" or h.startswith("runtime.")
    }
    assert runtime == expected


def test_spec_defaults_appear_on_the_page(spec_sections):
    page = render_pages()["plugin-manifest.md"]
    for section in spec_sections:
        for row in section["rows"]:
            if "default" in row:
                assert re.search(rf"\| `{row['field']}` \|.*Default: ", page), row


@pytest.mark.parametrize("name", ["plugin-manifest.md", "runtime-manifest.md", "plugin-locale.md"])
def test_no_markdown_markup_leaks_out_of_code_spans(name):
    # `*`, `_`, `<` and `>` outside code spans would turn into emphasis or HTML when rendered.
    for number, line in enumerate(render_pages()[name].splitlines(), 1):
        if line.startswith("<!--"):
            continue
        outside = re.sub(r"\\.", "", re.sub(r"`[^`]*`", "", line))
        assert not re.search(r"[*_<>]", outside), f"{name}:{number}: {line}"
