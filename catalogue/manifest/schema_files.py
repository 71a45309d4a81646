"""The JSON Schema files a package ships (payload, data, output and contract schemas).

The hub compiles them at run time to check actions, events, records and outputs; a file that is
not JSON, too large, not a valid schema, with a `$ref` that leaves the file, or with a `$ref`
cycle that never reaches into the value (validation would recurse without end) would fail there,
in a player's turn. So validate_plugin reads and checks each of them once, and each finding is
an Issue on the schema file itself: its JSON pointer and the rule.

Only `$ref`s inside the same file are followed (the hub never fetches or opens another file to
validate), which is what the run-time validators can resolve too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from functools import lru_cache
from typing import Any
from urllib.parse import urldefrag, urljoin

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import SchemaError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from catalogue.manifest.context import PLUGIN_FILE, Context, inside_package
from catalogue.manifest.package_files import FileRefused, read_bytes
from core.pointer import join

MAX_SCHEMA_BYTES = 256 * 1024
MAX_SCHEMA_DEPTH = 64
MAX_SCHEMA_NODES = 10_000
# The base URI of a file without $id (an http-like one, so relative references join to it).
_BASE = "https://package.covel.invalid/schema.json"
# Keywords that apply a subschema to the same value: a $ref cycle through only these never ends.
_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
_IN_PLACE_ONE = ("not", "if", "then", "else")
_REFS = ("$ref", "$dynamicRef", "$recursiveRef")
# Values that are data, not schemas: a "$ref" key inside them is not a reference.
_DATA_KEYWORDS = {"const", "enum", "examples", "default"}


def schema_references(ctx: Context) -> Iterator[tuple[str, str, list[str]]]:
    """(manifest file, pointer in it, candidate package-relative paths) of every schema path."""
    data = ctx.data if isinstance(ctx.data, dict) else {}
    contributes = data.get("contributes") if isinstance(data.get("contributes"), dict) else {}
    for name, spec in _entries(data.get("contracts")):
        yield PLUGIN_FILE, join("/contracts", name, "schema"), _paths(spec.get("schema"))
    for i, kind in _items(contributes.get("actionKinds")):
        yield PLUGIN_FILE, join("/contributes/actionKinds", i, "schema"), _paths(kind.get("schema"))
    for i, event in _items(contributes.get("events")):
        yield PLUGIN_FILE, join("/contributes/events", i, "schema"), _paths(event.get("schema"))
    for key in ("datasets", "data"):
        for name, spec in _entries(contributes.get(key)):
            yield PLUGIN_FILE, join("/contributes", key, name, "schema"), _paths(spec.get("schema"))
    for runtime in ctx.runtimes:
        io = runtime.data.get("io") if isinstance(runtime.data.get("io"), dict) else {}
        output = io.get("output") if isinstance(io.get("output"), dict) else {}
        for where, value in (
            (("io", "payloadSchema"), io.get("payloadSchema")),
            (("io", "output", "schema"), output.get("schema")),
        ):
            # Package-relative, as the loader writes it; the runtime's folder as the hub also tries.
            paths = _paths(value) + _paths(value, runtime.rel_dir)
            yield runtime.file, join(runtime.base, *where), paths


def _entries(value: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, dict):
                yield str(key), item


def _items(value: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    if isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, dict):
                yield i, item


def _paths(value: Any, rel_dir: str = "") -> list[str]:
    if not isinstance(value, str) or not value.strip():
        return []
    text = value.strip()
    if text.startswith(("/", "\\", "~")) or "://" in text:
        return []  # Context.check_path reports it
    relative = inside_package(rel_dir, text)  # None when it leaves the package
    return [relative] if relative not in (None, ".") else []


def check_schema_files(ctx: Context) -> None:
    """Read and check every schema file the manifests name, once per file."""
    seen: set[str] = set()
    for manifest_file, where, candidates in schema_references(ctx):
        relative = next(
            (c for c in candidates if os.path.isfile(os.path.join(ctx.root, *c.split("/")))), None
        )
        if relative is None or relative in seen:
            continue  # a missing file is check_path's finding
        seen.add(relative)
        for path, code, message in schema_file_problems(os.path.join(ctx.root, relative)):
            ctx.error(relative, path, code, f"{message} (named at {manifest_file} {where})")


def schema_file_problems(path: str) -> list[tuple[str, str, str]]:
    """(JSON pointer, rule, message) of everything wrong with one schema file; [] when usable."""
    try:
        raw = read_bytes(path, limit=MAX_SCHEMA_BYTES)
    except FileRefused as exc:
        if "over the limit" in str(exc) or "grew past" in str(exc):
            return [
                ("", "schema-too-large", f"a schema file may be at most {MAX_SCHEMA_BYTES} bytes")
            ]
        return [("", "file-unreadable", str(exc))]
    if len(raw) > 16 * 1024:  # kept out of the cache below, so it holds at most 8 MB
        return _schema_problems(raw)
    return list(_bytes_problems(raw))


# The verdict is the bytes' alone (no other file is opened), and a directory of many packages
# often ships the same small schema many times: each distinct file is checked once a process.
@lru_cache(maxsize=512)
def _bytes_problems(raw: bytes) -> tuple[tuple[str, str, str], ...]:
    return tuple(_schema_problems(raw))


def _schema_problems(raw: bytes) -> list[tuple[str, str, str]]:
    try:
        schema = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return [("", "schema-not-json", f"the file is not UTF-8 (byte {exc.start})")]
    except ValueError as exc:
        return [("", "schema-not-json", f"the file is not valid JSON: {exc}")]
    except RecursionError:
        return [("", "schema-too-complex", "the JSON is nested too deeply to read")]
    if not isinstance(schema, dict | bool):
        return [("", "schema-not-object", "a JSON Schema is an object (or true/false)")]
    nodes: dict[int, tuple[str, str]] = {}  # id(object) -> (pointer, base URI)
    refs: list[tuple[str, str, str, str]] = []  # (pointer, keyword, ref as written, absolute)
    problem = _walk(schema, "", _BASE, 0, nodes, refs)
    if problem:
        return [problem]
    try:
        kind = validators.validator_for(schema, default=Draft202012Validator)
        kind.check_schema(schema)
    except SchemaError as exc:
        return [(join("", *exc.path), "schema-invalid", f"not a valid JSON Schema: {exc.message}")]
    except RecursionError:
        return [("", "schema-too-complex", "the schema is nested too deeply to check")]
    if isinstance(schema, bool):
        return []
    return _check_refs(schema, nodes, refs)


def _walk(
    node: Any,
    where: str,
    base: str,
    depth: int,
    nodes: dict[int, tuple[str, str]],
    refs: list[tuple[str, str, str, str]],
) -> tuple[str, str, str] | None:
    if depth > MAX_SCHEMA_DEPTH:
        return (
            where,
            "schema-too-complex",
            f"the schema nests deeper than {MAX_SCHEMA_DEPTH} levels",
        )
    if len(nodes) > MAX_SCHEMA_NODES:
        return (where, "schema-too-complex", f"the schema has more than {MAX_SCHEMA_NODES} parts")
    if isinstance(node, dict):
        if isinstance(node.get("$id"), str):
            base = urljoin(base, node["$id"])
        nodes[id(node)] = (where, base)
        for key in _REFS:
            if isinstance(node.get(key), str):
                refs.append((where, key, node[key], urljoin(base, node[key])))
        for key, value in node.items():
            if key in _DATA_KEYWORDS:
                continue
            found = _walk(value, join(where, key), base, depth + 1, nodes, refs)
            if found:
                return found
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found = _walk(value, join(where, i), base, depth + 1, nodes, refs)
            if found:
                return found
    return None


def _check_refs(
    schema: dict[str, Any],
    nodes: dict[int, tuple[str, str]],
    refs: list[tuple[str, str, str, str]],
) -> list[tuple[str, str, str]]:
    root_uri = urljoin(_BASE, schema["$id"]) if isinstance(schema.get("$id"), str) else _BASE
    resource = Resource.from_contents(schema, default_specification=DRAFT202012)
    registry = Registry().with_resource(root_uri, resource).crawl()
    problems: list[tuple[str, str, str]] = []
    edges: dict[str, list[tuple[str, str]]] = {}  # pointer -> [(target pointer, via pointer)]
    pointers = {pointer: obj_id for obj_id, (pointer, _) in nodes.items()}
    for where, keyword, written, target in refs:
        at = join(where, keyword)
        resolver = registry.resolver(base_uri=nodes[pointers[where]][1])
        try:
            resolved = resolver.lookup(target)
        except Exception as exc:  # noqa: BLE001 - any lookup failure is the author's
            document, _ = urldefrag(target)
            known = {uri for uri in registry}
            if document not in known:
                problems.append(
                    (
                        at,
                        "schema-ref-outside",
                        f"the {keyword} {written!r} leaves this file; only "
                        "references inside the same schema file are followed",
                    )
                )
            else:
                problems.append(
                    (
                        at,
                        "schema-ref-unresolvable",
                        f"the {keyword} {written!r} points at nothing in this file ({type(exc).__name__})",
                    )
                )
            continue
        found = nodes.get(id(resolved.contents))
        if found is not None:
            edges.setdefault(where, []).append((found[0], at))
    # In-place applicators: the same value is checked against these subschemas.
    for where in list(pointers):
        node = _at(schema, where)
        if not isinstance(node, dict):
            continue
        for key in _IN_PLACE_LISTS:
            if isinstance(node.get(key), list):
                for i, _ in enumerate(node[key]):
                    edges.setdefault(where, []).append((join(where, key, i), join(where, key, i)))
        for key in _IN_PLACE_ONE:
            if isinstance(node.get(key), dict):
                edges.setdefault(where, []).append((join(where, key), join(where, key)))
        if isinstance(node.get("dependentSchemas"), dict):
            for name in node["dependentSchemas"]:
                child = join(where, "dependentSchemas", name)
                edges.setdefault(where, []).append((child, child))
    try:
        problems.extend(_cycles(edges))
    except RecursionError:
        problems.append(
            ("", "schema-too-complex", "the schema's $ref chains are too long to check")
        )
    return problems


def _at(schema: Any, where: str) -> Any:
    node = schema
    for token in where.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node


def _cycles(edges: dict[str, list[tuple[str, str]]]) -> list[tuple[str, str, str]]:
    """Each $ref cycle once, reported at the reference that closes it."""
    problems: list[tuple[str, str, str]] = []
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []
    reported: set[frozenset[str]] = set()

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for target, via in edges.get(node, []):
            if state.get(target) == 1:
                loop = stack[stack.index(target) :]
                key = frozenset(loop)
                if key not in reported:
                    reported.add(key)
                    chain = " -> ".join([*(p or "/" for p in loop), target or "/"])
                    problems.append(
                        (
                            via,
                            "schema-ref-cycle",
                            f"a $ref cycle that never reaches into the value ({chain}): checking "
                            "anything against it would never end",
                        )
                    )
            elif state.get(target) is None:
                visit(target)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if state.get(node) is None:
            visit(node)
    return problems
