"""Render a manifest JSON Schema as a Markdown reference page.

Plain Python, no Django: `schemas_generate` writes docs/reference/*.md with it, and the tests
compare its output with the spec page. The page has the spec's shape: a title and intro, a
"Top-level fields" table, then one section per object path, depth first in schema order, each
with a `| Field | Type | Required | Description |` table.

Path headings: `[]` is a list item, `.*` a map value, `(form k of n)` one of several object
shapes a value may take. Types read like the spec: "string", "list of object", "map of object",
`"core" or "plugin"`, "true or list of string", "text" for player-facing strings.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urldefrag, urljoin

from core.pointer import resolve

__all__ = ["Field", "Section", "collect_sections", "render_reference"]

TEXT_DEF = "/$defs/text"


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    required: bool
    description: str


@dataclass(frozen=True)
class Section:
    path: str  # "" for the top level, e.g. "runtime.schedule.needs[]"
    form: tuple[int, int] | None  # (k, n) for "(form k of n)"
    fields: tuple[Field, ...]

    @property
    def heading(self) -> str:
        if not self.path:
            return "Top-level fields"
        suffix = f" (form {self.form[0]} of {self.form[1]})" if self.form else ""
        return f"`{self.path}`{suffix}"


class _Resolver:
    """Follows `$ref`s: local ones, and cross-file ones through `registry` ($id -> schema)."""

    def __init__(self, root: Mapping[str, Any], registry: Mapping[str, Mapping[str, Any]]):
        self.registry: dict[str, Mapping[str, Any]] = dict(registry)
        root_id = str(root.get("$id", ""))
        if root_id:
            self.registry.setdefault(root_id, root)

    def resolve(
        self, node: Mapping[str, Any], doc: Mapping[str, Any]
    ) -> tuple[dict[str, Any], Mapping[str, Any]]:
        """The node with its `$ref` chain merged in (the referring node's keywords win)."""
        merged: dict[str, Any] = {}
        seen: set[str] = set()
        current, current_doc = node, doc
        layers: list[Mapping[str, Any]] = []
        while "$ref" in current:
            layers.append(current)
            ref = str(current["$ref"])
            base = str(current_doc.get("$id", ""))
            target = urljoin(base, ref) if base else ref
            if target in seen:
                raise ValueError(f"$ref cycle at {ref}")
            seen.add(target)
            url, fragment = urldefrag(target)
            if url and url != base:
                if url not in self.registry:
                    raise ValueError(f"cannot resolve $ref {ref}: no schema with $id {url}")
                current_doc = self.registry[url]
            current = resolve(current_doc, fragment)
        layers.append(current)
        for layer in reversed(layers):  # innermost first, so outer keywords override
            merged.update({k: v for k, v in layer.items() if k != "$ref"})
        return merged, current_doc


def _is_text(node: Mapping[str, Any]) -> bool:
    return str(node.get("$ref", "")).endswith("#" + TEXT_DEF)


def _alternatives(node: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    alts = node.get("oneOf") or node.get("anyOf")
    return list(alts) if alts else None


def _is_object_shape(node: Mapping[str, Any]) -> bool:
    return node.get("type") == "object" and "properties" in node


def _render_type(node: Mapping[str, Any], doc: Mapping[str, Any], resolver: _Resolver) -> str:
    if _is_text(node):
        return "text"
    schema, doc = resolver.resolve(node, doc)
    alts = _alternatives(schema)
    if alts:
        parts: list[str] = []
        for alt in alts:
            rendered = _render_type(alt, doc, resolver)
            if rendered not in parts:
                parts.append(rendered)
        return " or ".join(parts)
    if "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    if "enum" in schema:
        return " or ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    kind = schema.get("type")
    if kind == "array":
        return "list of " + _render_type(schema.get("items", {}), doc, resolver)
    if kind == "object":
        extra = schema.get("additionalProperties")
        if "properties" not in schema and isinstance(extra, Mapping):
            return "map of " + _render_type(extra, doc, resolver)
        return "object"
    if isinstance(kind, list):
        return " or ".join(str(k) for k in kind)
    return str(kind) if kind else "any"


def _code(value: Any) -> str:
    """A JSON value as a Markdown code span (examples hold `*`, `<` and the like)."""
    return f"`{json.dumps(value, ensure_ascii=False)}`"


def _describe(schema: Mapping[str, Any]) -> str:
    text = " ".join(str(schema.get("description", "")).split())
    examples = schema.get("examples")
    if examples:
        text += " Example: " + ", ".join(_code(e) for e in examples) + "."
    if "default" in schema:
        text += " Default: " + _code(schema["default"]) + "."
    return text.strip()


def collect_sections(
    schema: Mapping[str, Any], *, registry: Mapping[str, Mapping[str, Any]] | None = None
) -> list[Section]:
    """Every object shape of the schema as a section, depth first in schema order."""
    resolver = _Resolver(schema, registry or {})
    sections: list[Section] = []

    def visit(
        node: Mapping[str, Any], doc: Mapping[str, Any], path: str, form: tuple[int, int] | None
    ) -> None:
        if _is_text(node):
            return
        resolved, doc = resolver.resolve(node, doc)
        alts = _alternatives(resolved)
        if alts:
            objects = [a for a in alts if _is_object_shape(resolver.resolve(a, doc)[0])]
            for alt in alts:
                alt_schema = resolver.resolve(alt, doc)[0]
                if _is_object_shape(alt_schema) and len(objects) > 1:
                    k = next(i for i, o in enumerate(objects, 1) if o is alt)
                    visit(alt, doc, path, (k, len(objects)))
                else:
                    visit(alt, doc, path, None)
            return
        kind = resolved.get("type")
        if kind == "array" and isinstance(resolved.get("items"), Mapping):
            visit(resolved["items"], doc, path + "[]", None)
        elif kind == "object":
            props: Mapping[str, Any] = resolved.get("properties", {})
            if "properties" in resolved:
                required = set(resolved.get("required", []))
                fields = []
                for name, prop in props.items():
                    prop_schema = resolver.resolve(prop, doc)[0]
                    fields.append(
                        Field(
                            name=name,
                            type=_render_type(prop, doc, resolver),
                            required=name in required,
                            description=_describe(prop_schema),
                        )
                    )
                sections.append(Section(path=path, form=form, fields=tuple(fields)))
                for name, prop in props.items():
                    visit(prop, doc, f"{path}.{name}" if path else name, None)
            extra = resolved.get("additionalProperties")
            if isinstance(extra, Mapping) and "properties" not in resolved:
                visit(extra, doc, path + ".*", None)

    visit(schema, schema, "", None)
    return sections


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _type_cell(text: str) -> str:
    # Types are plain text (not code): escape what Markdown would read as emphasis or HTML.
    for char in ("\\", "*", "_", "<", ">", "|"):
        text = text.replace(char, "\\" + char)
    return text


def render_reference(
    schema: Mapping[str, Any],
    *,
    source: str | None = None,
    registry: Mapping[str, Mapping[str, Any]] | None = None,
) -> str:
    """The Markdown reference page of `schema` (a draft 2020-12 dict); deterministic.

    source:   the schema's path as shown on the page (default: its `$id` file name).
    registry: other schemas by `$id`, for cross-file `$ref`s (the runtime schema needs the
              plugin schema).
    """
    title = str(schema.get("title", "Schema"))
    source = source or str(schema.get("$id", "")).rsplit("/", 1)[-1]
    lines = [
        f"# {title}",
        "",
        "<!-- Generated by `python manage.py schemas_generate` from the JSON Schema; do not edit "
        "by hand: change the schema's descriptions and regenerate. -->",
        "",
    ]
    intro = " ".join(str(schema.get("description", "")).split())
    if intro:
        lines += [intro, ""]
    lines += [
        f"JSON Schema: `{source}`.",
        "",
        "Headings name object paths: `[]` is an item of a list, `.*` a value of a map, and "
        "`(form k of n)` one of several shapes the same value may take.",
        "",
    ]
    for section in collect_sections(schema, registry=registry):
        lines += [
            f"## {section.heading}",
            "",
            "| Field | Type | Required | Description |",
            "|---|---|---|---|",
        ]
        for field in section.fields:
            lines.append(
                f"| `{field.name}` | {_type_cell(field.type)} | "
                f"{'yes' if field.required else 'no'} | {_cell(field.description)} |"
            )
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"
