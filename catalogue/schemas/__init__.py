"""The JSON Schemas of Covel package manifests, and ready-made validators for them.

Plain library code: no Django import, so the loader, the CLI and the tests share it.

Files (draft 2020-12), each identified by an `$id` under SCHEMA_BASE:
    plugin-manifest.schema.json   frontmatter of a package's root PLUGIN.md
    runtime-manifest.schema.json  frontmatter of runtimes/<id>/RUNTIME.md; a `$ref` to
                                  plugin-manifest.schema.json#/$defs/runtime
    plugin-locale.schema.json     frontmatter of PLUGIN.<locale>.md; its `$defs/runtimeLocale`
                                  covers RUNTIME.<locale>.md

The runtime schema refers to the plugin schema by URI, so validators must be built over a
`referencing.Registry` holding all three: `manifest_validators()` and `locale_validators()` do
that once per process.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

SCHEMA_DIR = Path(__file__).resolve().parent
SCHEMA_BASE = "https://covel-hub.invalid/schemas/"
PLUGIN_MANIFEST = "plugin-manifest.schema.json"
RUNTIME_MANIFEST = "runtime-manifest.schema.json"
PLUGIN_LOCALE = "plugin-locale.schema.json"
SCHEMA_FILES = (PLUGIN_MANIFEST, RUNTIME_MANIFEST, PLUGIN_LOCALE)

__all__ = [
    "PLUGIN_LOCALE",
    "PLUGIN_MANIFEST",
    "RUNTIME_MANIFEST",
    "SCHEMA_BASE",
    "SCHEMA_DIR",
    "SCHEMA_FILES",
    "load_schema",
    "locale_validators",
    "manifest_validators",
    "schema_registry",
]


@cache
def _load(name: str) -> dict[str, Any]:
    with open(SCHEMA_DIR / name, encoding="utf-8") as handle:
        return json.load(handle)


def load_schema(name: str) -> dict[str, Any]:
    """A fresh copy of one schema file (callers may mutate it), e.g. load_schema(PLUGIN_MANIFEST)."""
    return json.loads(json.dumps(_load(name)))


@cache
def schema_registry() -> Registry:
    """All our schemas, keyed by their `$id`, so cross-file `$ref`s resolve without network."""
    resources = [
        (SCHEMA_BASE + name, Resource.from_contents(_load(name), default_specification=DRAFT202012))
        for name in SCHEMA_FILES
    ]
    return Registry().with_resources(resources).crawl()


def _validator(name: str, fragment: str = "") -> Draft202012Validator:
    if fragment:
        schema: dict[str, Any] = {"$ref": SCHEMA_BASE + name + "#" + fragment}
    else:
        schema = _load(name)
    return Draft202012Validator(schema, registry=schema_registry())


@cache
def manifest_validators() -> tuple[Draft202012Validator, Draft202012Validator]:
    """(PLUGIN.md validator, RUNTIME.md validator), built once per process."""
    return _validator(PLUGIN_MANIFEST), _validator(RUNTIME_MANIFEST)


@cache
def locale_validators() -> tuple[Draft202012Validator, Draft202012Validator]:
    """(PLUGIN.<locale>.md validator, RUNTIME.<locale>.md validator), built once per process."""
    return _validator(PLUGIN_LOCALE), _validator(PLUGIN_LOCALE, "/$defs/runtimeLocale")
