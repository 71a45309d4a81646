"""Schema files a package ships are judged by validate_plugin: what must pass, what must fail."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from catalogue.manifest import load_package
from catalogue.manifest.schema_files import schema_file_problems

from .conftest import PackageFactory, codes, put

REPO = Path(__file__).resolve().parents[2]
SCHEMA = "schemas/facts.schema.json"


def with_schema(make_package: PackageFactory, base: dict[str, Any], schema: Any) -> Path:
    put(base, "/contributes/data/facts/schema", f"./{SCHEMA}")
    return make_package(base, files={SCHEMA: json.dumps(schema)})


@pytest.mark.parametrize(
    "schema",
    [
        # A tree: the recursion descends into the value, so it ends.
        {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}},
        {"$defs": {"name": {"type": "string"}}, "properties": {"n": {"$ref": "#/$defs/name"}}},
        {"$defs": {"n": {"$anchor": "name", "type": "string"}}, "items": {"$ref": "#name"}},
        {
            "$id": "https://example.com/facts.json",
            "$defs": {"n": {"type": "string"}},
            "properties": {"n": {"$ref": "https://example.com/facts.json#/$defs/n"}},
        },
        {"$defs": {"a": {"properties": {"next": {"$ref": "#/$defs/a"}}}}, "$ref": "#/$defs/a"},
        {"const": {"$ref": "not a reference: data"}},
    ],
)
def test_usable_schemas_pass(make_package: PackageFactory, base: dict[str, Any], schema) -> None:
    result = load_package(with_schema(make_package, base, schema))
    assert result.ok, [str(e) for e in result.errors]


@pytest.mark.parametrize(
    ("schema", "path", "code"),
    [
        ({"$ref": "#"}, "/$ref", "schema-ref-cycle"),
        ({"allOf": [{"not": {"$ref": "#"}}]}, "/allOf/0/not/$ref", "schema-ref-cycle"),
        (
            {"if": {"$ref": "#/$defs/x"}, "$defs": {"x": {"then": {"$ref": "#"}}}},
            None,
            "schema-ref-cycle",
        ),
        ({"$ref": "file:///etc/passwd"}, "/$ref", "schema-ref-outside"),
        ({"$ref": "https://example.com/x.json#/a"}, "/$ref", "schema-ref-outside"),
        ({"$ref": "#/$defs/nothing"}, "/$ref", "schema-ref-unresolvable"),
    ],
)
def test_unusable_refs_are_errors_on_the_schema_file(
    make_package: PackageFactory, base: dict[str, Any], schema, path, code
) -> None:
    result = load_package(with_schema(make_package, base, schema))
    found = [(e.file, e.code) for e in result.errors]
    assert found == [(SCHEMA, code)], [str(e) for e in result.errors]
    if path is not None:
        assert result.errors[0].path == path
    assert "/contributes/data/facts/schema" in result.errors[0].message


def test_a_fifo_schema_is_refused_without_being_opened(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    put(base, "/contributes/data/facts/schema", f"./{SCHEMA}")
    root = make_package(base)
    os.mkfifo(root / SCHEMA)
    assert (SCHEMA, "", "special-file") in codes(load_package(root))
    assert schema_file_problems(str(root / SCHEMA))[0][1] == "file-unreadable"


def test_validate_plugin_names_file_pointer_and_rule(
    make_package: PackageFactory, base: dict[str, Any]
) -> None:
    root = with_schema(
        make_package,
        base,
        {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
    )
    done = subprocess.run(
        [sys.executable, str(REPO / "manage.py"), "validate_plugin", str(root)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    (line,) = [x for x in done.stdout.splitlines() if SCHEMA in x]
    assert line.strip().startswith(f"{SCHEMA}:/$defs/")
    assert line.endswith("[schema-ref-cycle]")
    assert "/$defs/a -> /$defs/b -> /$defs/a" in line
