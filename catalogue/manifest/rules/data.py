"""The package's data: `contributes.datasets`, `data` sources (their path forms and kernel-owned
world paths) and the JSON examples checked against their schemas.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from typing import Any

from jsonschema import Draft202012Validator, ValidationError, validators
from jsonschema.exceptions import SchemaError
from referencing import Registry
from referencing.exceptions import Unresolvable

from catalogue.manifest.context import PLUGIN_FILE, Context
from catalogue.manifest.rules.common import (
    ALL_DATASET_OPS,
    KERNEL_WORLD_PATHS,
    as_dict,
    as_list,
    check_contract,
    entries,
    items,
)
from core.pointer import join


def _read_json(ctx: Context, relative: str) -> Any:
    try:
        with open(os.path.join(ctx.root, relative), "rb") as handle:
            return json.loads(handle.read(2 * 1024 * 1024))
    except (OSError, ValueError):
        return None


def check_datasets(ctx: Context, datasets: Any) -> None:
    f = PLUGIN_FILE
    for name, dataset in entries(datasets):
        dataset = as_dict(dataset)
        where = join("/contributes/datasets", name)
        schema_path = ctx.check_path(dataset.get("schema"), file=f, path=f"{where}/schema")
        ops = dataset.get("ops")
        ops = (
            [o for o in ops if isinstance(o, str)]
            if isinstance(ops, list)
            else list(ALL_DATASET_OPS)
        )
        for j, tool in items(dataset.get("tools")):
            if tool == "upsert" and "set" not in ops:
                ctx.error(
                    f,
                    f"{where}/tools/{j}",
                    "dataset-tool-not-allowed",
                    "upsert needs the set operation in ops",
                )
            elif tool == "update" and not any(op != "set" for op in ops):
                ctx.error(
                    f,
                    f"{where}/tools/{j}",
                    "dataset-tool-not-allowed",
                    "update needs an operation other than set in ops",
                )
        key = dataset.get("key")
        if isinstance(key, str) and schema_path:
            schema = _read_json(ctx, schema_path)
            props = as_dict(schema).get("properties") if isinstance(schema, dict) else None
            if isinstance(props, dict) and key not in props:
                ctx.error(
                    f,
                    f"{where}/key",
                    "dataset-key-unknown",
                    f"the key field {key!r} is not a top-level property of {schema_path}",
                )


_EDITION = re.compile(r"^(?P<stem>.+?)\.[A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8})*(?P<ext>\.[A-Za-z]+)$")
SOURCE_EXTENSIONS = (".yaml", ".yml", ".json")
# The spec defines one wildcard form, <dir>/*.<ext>; any other glob character is refused.
_GLOB_CHARACTERS = frozenset("*?[]{}")
# An authoring example is JSON an author wrote by hand; anything bigger is a mistake.
MAX_EXAMPLE_BYTES = 1024 * 1024
MAX_EXAMPLE_ERRORS = 5


def source_path_form(path: str) -> str:
    """What an authoring.source.path names: "file" (.yaml, .yml, .json), "files" (<dir>/*.<ext>)
    or "media" (a directory: no extension, a trailing / allowed). Raises ValueError saying why
    path is none of these. A leading "./" is allowed; it names the same path."""
    text = path.removeprefix("./")
    if text.startswith(("/", "~")) or re.match(r"[A-Za-z]:", text) or "://" in text:
        raise ValueError("must be relative to the world package, like data/quests.yaml")
    if "\\" in text:
        raise ValueError("must separate folders with /, not \\")
    parts = text.removesuffix("/").split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise ValueError("may not have empty, . or .. parts: it stays inside the world package")
    extension = posixpath.splitext(parts[-1])[1]
    if any(_GLOB_CHARACTERS & set(part) for part in parts):
        if (
            len(parts) < 2
            or parts[-1] != "*" + extension
            or extension not in SOURCE_EXTENSIONS
            or any(_GLOB_CHARACTERS & set(part) for part in parts[:-1])
            or text.endswith("/")
        ):
            raise ValueError(
                "uses a wildcard the spec does not define: the only one is <dir>/*.yaml "
                "(or .yml, .json), every such file of one folder"
            )
        return "files"
    if not extension:
        return "media"
    if extension not in SOURCE_EXTENSIONS or text.endswith("/"):
        raise ValueError(
            "must end in .yaml, .yml or .json, or name a media directory (no extension)"
        )
    return "file"


def kernel_owned(path: str) -> str | None:
    """The kernel-owned world path that a valid source path names, or None.

    A path names an owned path when it is that path, lies inside an owned folder, holds an
    owned path (a media directory), is a locale edition of it (data/lorebook.zh.yaml), or
    is a wildcard that matches it (data/*.yaml matches data/lorebook.yaml).
    """
    clean = path.removeprefix("./").removesuffix("/")
    folder, _, name = clean.rpartition("/")
    edition = _EDITION.match(clean)
    for owned in KERNEL_WORLD_PATHS:
        bare = owned.removesuffix("/")
        inside = owned.endswith("/") and clean.startswith(owned)
        if clean == bare or inside or bare.startswith(clean + "/"):
            return owned
        if edition and edition.group("stem") + edition.group("ext") == owned:
            return f"an edition of {owned}"
        if name.startswith("*") and posixpath.dirname(bare) == folder and bare.endswith(name[1:]):
            return owned
    return None


def _load_json(ctx: Context, relative: str) -> Any:
    """The JSON value of a package file; ValueError says why there is none."""
    try:
        with open(os.path.join(ctx.root, relative), "rb") as handle:
            raw = handle.read(MAX_EXAMPLE_BYTES + 1)
    except OSError as exc:
        raise ValueError(f"cannot be read ({exc.strerror or exc})") from None
    if len(raw) > MAX_EXAMPLE_BYTES:
        raise ValueError(f"is larger than {MAX_EXAMPLE_BYTES} bytes")
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:
        reason = exc if isinstance(exc, ValueError) else "nested too deeply"
        raise ValueError(f"is not valid JSON: {reason}") from None


def _shorten(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _check_example(ctx: Context, example: str, schema_path: str, *, path: str) -> None:
    """authoring.example is a source value: a list of records (or one record), each of which
    the namespace schema must accept. Only references inside the schema file are followed:
    the loader never fetches anything."""
    f = PLUGIN_FILE
    try:
        value = _load_json(ctx, example)
    except ValueError as exc:
        ctx.error(f, path, "authoring-example-invalid", f"the example {example} {exc}")
        return
    try:
        schema = _load_json(ctx, schema_path)
        if not isinstance(schema, dict | bool):
            raise ValueError("is not a JSON Schema (an object)")
        kind = validators.validator_for(schema, default=Draft202012Validator)
        try:
            kind.check_schema(schema)
        except SchemaError as exc:
            raise ValueError(f"is not a valid JSON Schema: {_shorten(exc.message)}") from None
        validator = kind(schema, registry=Registry())
        records = value if isinstance(value, list) else [value]
        found: list[tuple[str, ValidationError]] = []
        for i, record in enumerate(records):
            prefix = f"/{i}" if isinstance(value, list) else ""
            found += [(join(prefix, *e.absolute_path), e) for e in validator.iter_errors(record)]
    except ValueError as exc:
        problem = str(exc)
    except Unresolvable as exc:
        problem = f"has a $ref outside the file, which the loader does not follow: {exc}"
    except RecursionError:
        problem = "refers to itself without end"
    else:
        for where, error in found[:MAX_EXAMPLE_ERRORS]:
            ctx.error(
                f,
                path,
                "authoring-example-invalid",
                f"the example {example} at {where or '/'} breaks the rule {error.validator!r} "
                f"of {schema_path}: {_shorten(error.message)}",
            )
        if len(found) > MAX_EXAMPLE_ERRORS:
            ctx.error(
                f,
                path,
                "authoring-example-invalid",
                f"the example {example} has {len(found) - MAX_EXAMPLE_ERRORS} more errors",
            )
        return
    ctx.error(
        f,
        path,
        "authoring-example-unchecked",
        f"the example {example} cannot be checked: the namespace schema {schema_path} {problem}",
    )


def check_data(ctx: Context, data: Any) -> None:
    f = PLUGIN_FILE
    for name, namespace in entries(data):
        namespace = as_dict(namespace)
        where = join("/contributes/data", name)
        schema_path = ctx.check_path(namespace.get("schema"), file=f, path=f"{where}/schema")
        for j, contract in items(namespace.get("accepts")):
            check_contract(ctx, contract, file=f, path=f"{where}/accepts/{j}")
        authoring = as_dict(namespace.get("authoring"))
        if not authoring:
            continue
        aw = f"{where}/authoring"
        if "example" in authoring:
            example = ctx.check_path(authoring.get("example"), file=f, path=f"{aw}/example")
            if example and schema_path:
                _check_example(ctx, example, schema_path, path=f"{aw}/example")
        if "characterField" in authoring and "source" in authoring:
            ctx.error(
                f,
                f"{aw}/characterField",
                "authoring-source-conflict",
                "characterField cannot be used together with source",
            )
        source = as_dict(authoring.get("source"))
        source_path = source.get("path")
        form = None
        if isinstance(source_path, str):
            try:
                form = source_path_form(source_path)
            except ValueError as exc:
                ctx.error(
                    f,
                    f"{aw}/source/path",
                    "authoring-source-path-invalid",
                    f"{source_path!r} {exc}",
                )
            else:
                owned = kernel_owned(source_path)
                if owned:
                    ctx.error(
                        f,
                        f"{aw}/source/path",
                        "authoring-source-reserved",
                        f"{source_path!r} names {owned}, which the kernel or the world package "
                        "itself owns",
                    )
        if authoring.get("generate") in ("offer", "default"):
            if "example" not in authoring:
                ctx.error(
                    f,
                    f"{aw}/example",
                    "authoring-generate-needs-example",
                    "generate needs an example",
                )
            keyed_source = (
                form in ("file", "files")
                and source.get("visibility", "public") == "public"
                and source.get("key", "id") == "id"
            )
            # An invalid source path is already reported; do not also call the source missing.
            judged = form is not None or not isinstance(source_path, str)
            if "characterField" not in authoring and not keyed_source and judged:
                ctx.error(
                    f,
                    f"{aw}/generate",
                    "authoring-generate-needs-source",
                    "generate needs a characterField, or a public, non-media source keyed by id",
                )
        for j, reference in items(authoring.get("references")):
            reference = as_dict(reference)
            rw = f"{aw}/references/{j}"
            target = reference.get("to")
            if "type" in reference and target != "character-attribute":
                ctx.error(
                    f,
                    f"{rw}/type",
                    "reference-field-not-allowed",
                    "type is only allowed with to: character-attribute",
                )
            if "values" in reference:
                if target != "world-dimension":
                    ctx.error(
                        f,
                        f"{rw}/values",
                        "reference-field-not-allowed",
                        "values is only allowed with to: world-dimension",
                    )
                elif len(as_list(reference.get("within"))) > 1:
                    ctx.error(
                        f,
                        f"{rw}/within",
                        "reference-field-not-allowed",
                        "with values, at most one within field is allowed",
                    )
