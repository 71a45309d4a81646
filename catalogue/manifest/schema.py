"""JSON Schema checks of manifest frontmatter, with jsonschema errors mapped to Issues.

The schemas live in catalogue/schemas/ (plugin-manifest, runtime-manifest, plugin-locale);
that package compiles their validators once per process. Each jsonschema error becomes one
Issue with a stable code and a JSON pointer; a oneOf/anyOf failure reports the errors of the
form that came closest, instead of jsonschema's "is not valid under any of the given schemas".
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from jsonschema import ValidationError
from jsonschema.protocols import Validator

from catalogue.manifest.types import Issue
from core.pointer import join

_JSON_TYPES = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
}


def json_type(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


@lru_cache(maxsize=1)
def validators() -> Mapping[str, Validator]:
    """{"plugin", "runtime", "locale", "runtime-locale"} -> a compiled validator, built once."""
    # No fallback on purpose: without its schemas the loader must fail loudly (internal-error),
    # never pass packages it did not check.
    from catalogue.schemas import locale_validators, manifest_validators

    plugin, runtime = manifest_validators()
    locale, runtime_locale = locale_validators()
    return {
        "plugin": plugin,
        "runtime": runtime,
        "locale": locale,
        "runtime-locale": runtime_locale,
    }


@lru_cache(maxsize=1)
def hook_events() -> tuple[str, ...]:
    """The lifecycle events a package may declare in contributes.hooks: the schema's own enum,
    so the loader, plugin_migrate and the turn's hook dispatch name the same 17 events."""
    from catalogue.schemas import PLUGIN_MANIFEST, load_schema

    hooks = load_schema(PLUGIN_MANIFEST)["properties"]["contributes"]["properties"]["hooks"]
    return tuple(hooks["items"]["oneOf"][0]["enum"])


def validate(kind: str, instance: Any, *, file: str, base: str = "") -> list[Issue]:
    """Check instance against the named schema; base prefixes every path (e.g. "/runtime")."""
    validator = validators()[kind]
    issues: list[Issue] = []
    seen: set[tuple[str, str]] = set()
    for error in validator.iter_errors(instance):
        for issue in _map(error, file, base):
            key = (issue.path, issue.code + issue.message)
            if key not in seen:
                seen.add(key)
                issues.append(issue)
    return issues


def _path(error: ValidationError, base: str, *extra: str | int) -> str:
    return join(base, *error.absolute_path, *extra)


def _known_properties(schema: Any) -> list[str]:
    if isinstance(schema, Mapping):
        props = schema.get("properties")
        if isinstance(props, Mapping):
            return list(props)
    return []


def _extra_keys(error: ValidationError) -> list[str]:
    instance = error.instance
    if not isinstance(instance, Mapping):
        return []
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    known = set(_known_properties(schema))
    patterns = list((schema.get("patternProperties") or {}).keys())
    if error.validator == "unevaluatedProperties":
        # The properties an allOf/$ref branch evaluated are not visible here; use the message.
        quoted = re.findall(r"'((?:[^'\\]|\\.)*)'", error.message.split("(", 1)[-1])
        listed = [k for k in quoted if k in instance]
        if listed:
            return listed
    return [k for k in instance if k not in known and not any(re.search(p, k) for p in patterns)]


def _map(error: ValidationError, file: str, base: str) -> list[Issue]:
    """One jsonschema error -> one or more Issues."""
    validator = error.validator
    value = error.validator_value
    instance = error.instance
    path = _path(error, base)

    if validator in ("additionalProperties", "unevaluatedProperties"):
        issues = []
        known = _known_properties(error.schema)
        for key in _extra_keys(error):
            hint = difflib.get_close_matches(key, known, n=1)
            suggestion = f"; did you mean {hint[0]!r}?" if hint else ""
            issues.append(
                Issue(file, join(path, key), "unknown-field", f"unknown field {key!r}{suggestion}")
            )
        return issues or [Issue(file, path, "unknown-field", error.message)]
    if validator == "required":
        missing = [k for k in value if isinstance(instance, Mapping) and k not in instance]
        return [
            Issue(file, join(path, k), "required-field-missing", f"the field {k!r} is required")
            for k in missing
        ]
    if validator in ("dependentRequired", "dependencies"):
        issues = []
        if isinstance(value, Mapping) and isinstance(instance, Mapping):
            for trigger, needed in value.items():
                if trigger in instance and isinstance(needed, list):
                    for k in needed:
                        if k not in instance:
                            issues.append(
                                Issue(
                                    file,
                                    join(path, k),
                                    "required-field-missing",
                                    f"the field {k!r} is required with {trigger!r}",
                                )
                            )
        return issues or [Issue(file, path, "required-field-missing", error.message)]
    if validator == "type":
        expected = value if isinstance(value, list) else [value]
        return [
            Issue(
                file,
                path,
                "wrong-type",
                f"must be {_or(expected)}, not {_a(json_type(instance))}",
            )
        ]
    if validator in ("enum", "const"):
        allowed = value if validator == "enum" else [value]
        shown = ", ".join(json.dumps(v) for v in allowed[:20])
        return [
            Issue(
                file,
                path,
                "not-in-enum",
                f"{json.dumps(instance)[:80]} is not allowed here; use one of: {shown}",
            )
        ]
    if validator in ("oneOf", "anyOf"):
        return _map_alternatives(error, file, base)
    simple = {
        "pattern": (
            "pattern-mismatch",
            lambda: f"{json.dumps(instance)[:80]} does not match the pattern {value}",
        ),
        "format": ("invalid-format", lambda: f"{json.dumps(instance)[:80]} is not a valid {value}"),
        "minLength": ("too-short", lambda: f"must be at least {value} characters long"),
        "maxLength": ("too-long", lambda: f"must be at most {value} characters long"),
        "minimum": ("out-of-range", lambda: f"{instance} is below the minimum {value}"),
        "maximum": ("out-of-range", lambda: f"{instance} is above the maximum {value}"),
        "exclusiveMinimum": ("out-of-range", lambda: f"{instance} must be greater than {value}"),
        "exclusiveMaximum": ("out-of-range", lambda: f"{instance} must be less than {value}"),
        "multipleOf": ("out-of-range", lambda: f"{instance} must be a multiple of {value}"),
        "minItems": ("too-few-items", lambda: f"needs at least {value} item(s)"),
        "maxItems": ("too-many-items", lambda: f"allows at most {value} item(s)"),
        "uniqueItems": ("duplicate-items", lambda: "entries must be unique"),
        "minProperties": ("too-few-properties", lambda: f"needs at least {value} entr(y/ies)"),
        "maxProperties": ("too-many-properties", lambda: f"allows at most {value} entr(y/ies)"),
        "contains": ("missing-item", lambda: "no entry matches what is required here"),
        "not": ("forbidden-value", lambda: "this value or combination is not allowed here"),
        "propertyNames": ("invalid-key", lambda: error.message),
        "false": ("unknown-field", lambda: "this field is not allowed here"),
    }
    code, message = simple.get(str(validator), ("schema-violation", lambda: error.message))
    return [Issue(file, path, code, message())]


def _a(name: str) -> str:
    return f"{'an' if name[:1] in tuple('aeiou') else 'a'} {name}"


def _or(types: Iterable[Any]) -> str:
    return " or ".join(_a(str(t)) for t in types)


def _branch_types(schema: Any) -> list[str]:
    if isinstance(schema, Mapping):
        if "type" in schema:
            value = schema["type"]
            return list(value) if isinstance(value, list) else [value]
        if "const" in schema:
            return [json_type(schema["const"])]
        if "enum" in schema and schema["enum"]:
            return sorted({json_type(v) for v in schema["enum"]})
        if "properties" in schema:
            return ["object"]
    if schema is True:
        return ["anything"]
    return []


def _map_alternatives(error: ValidationError, file: str, base: str) -> list[Issue]:
    path = _path(error, base)
    branches = error.validator_value if isinstance(error.validator_value, list) else []
    by_branch: dict[int, list[ValidationError]] = {i: [] for i in range(len(branches))}
    for sub in error.context or ():
        index = sub.relative_schema_path[0] if sub.relative_schema_path else 0
        if isinstance(index, int):
            by_branch.setdefault(index, []).append(sub)
    failing = {i: errs for i, errs in by_branch.items() if errs}
    if len(failing) < len(by_branch):
        # oneOf and more than one form matched.
        return [Issue(file, path, "ambiguous-form", "the value matches more than one of its forms")]
    depth = len(error.absolute_path)

    def root_type_error(errs: list[ValidationError]) -> bool:
        return any(e.validator == "type" and len(e.absolute_path) == depth for e in errs)

    candidates = {i: errs for i, errs in failing.items() if not root_type_error(errs)}
    if not candidates:
        expected: list[str] = []
        for branch in branches:
            for name in _branch_types(branch):
                if name not in expected:
                    expected.append(name)
        return [
            Issue(
                file,
                path,
                "wrong-type",
                f"must be {_or(expected or ['another type'])}, not {_a(json_type(error.instance))}",
            )
        ]
    best: list[Issue] | None = None
    for _index, errs in sorted(candidates.items()):
        mapped: list[Issue] = []
        for sub in errs:
            mapped.extend(_map(sub, file, base))
        if best is None or len(mapped) < len(best):
            best = mapped
    return best or [Issue(file, path, "no-matching-form", "the value matches none of its forms")]
