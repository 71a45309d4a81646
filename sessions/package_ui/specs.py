"""A package's UI spec files (contributes.ui.<placement>[]): read, checked, cached.

Covel's specs (ackness/covel plugins/*/ui/*.json) are JSON objects: an id, a label and
shortLabel ({zh, en} or a string), an icon, group/groupOrder, a dataSource ({namespace}), an
emptyState ({message}) and a view: a component tree ({component, props, children, repeat,
visible}). json-render's flat form ({root, elements}) is accepted too and nested here.
A file that cannot be used is not an error of the page: the panel shows a named placeholder.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catalogue.manifest.types import Manifest

PLACEMENTS = ("view", "right", "message", "segment")
MAX_SPEC_BYTES = 256 * 1024  # a spec is a small view description, not data
MAX_FLAT_ELEMENTS = 2000


@dataclass(frozen=True)
class Spec:
    """One spec file of one package, as far as it could be read."""

    plugin: str
    placement: str
    path: str  # package-relative, as the manifest lists it
    id: str
    label: Any = None  # str or {locale: text}
    short_label: Any = None
    icon: str = ""
    group_order: int = 0
    namespace: str | None = None  # dataSource.namespace
    key: str | None = None  # dataSource.key: one row as the state
    empty: Any = None  # emptyState.message
    view: Any = None  # the component tree
    event: str | None = None  # trigger.event: a message block per emitted event of this topic
    match: dict[str, str] = field(default_factory=dict)  # segment specs: {kind?, speaker?}
    problem: str = ""  # why the spec cannot be shown ("" when it can)
    extra: dict[str, Any] = field(default_factory=dict)


_cache: dict[tuple[str, int, int], dict[str, Any] | str] = {}


def _read(absolute: Path) -> dict[str, Any] | str:
    """The parsed spec, or the reason it cannot be read. Cached by path, size and mtime."""
    try:
        stat = absolute.stat()
    except OSError:
        return "the file does not exist"
    key = (str(absolute), stat.st_size, stat.st_mtime_ns)
    if key in _cache:
        return _cache[key]
    if stat.st_size > MAX_SPEC_BYTES:
        found: dict[str, Any] | str = f"the file is over {MAX_SPEC_BYTES} bytes"
    else:
        try:
            data = json.loads(absolute.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as error:
            found = f"the file cannot be read ({error.__class__.__name__})"
        except ValueError as error:
            found = f"the file is not JSON: {error}"
        else:
            found = data if isinstance(data, dict) else "the file is not a JSON object"
    if len(_cache) > 512:
        _cache.clear()
    _cache[key] = found
    return found


def _inside(root: Path, relative: str) -> Path | None:
    """The spec's absolute path when it stays inside the package after normalising, else None."""
    if not isinstance(relative, str) or not relative or os.path.isabs(relative):
        return None
    base = root.resolve()
    target = (base / relative).resolve()
    return target if target.is_relative_to(base) else None


def _nest(flat: dict[str, Any]) -> Any:
    """json-render's flat form {root, elements: {key: {type, props, children: [keys]}}} as a tree."""
    elements = flat.get("elements")
    if not isinstance(elements, dict) or len(elements) > MAX_FLAT_ELEMENTS:
        return None

    def build(key: Any, seen: frozenset[str]) -> Any:
        element = elements.get(key) if isinstance(key, str) else None
        if not isinstance(element, dict) or key in seen:
            return {"component": "", "props": {"__missing": str(key)}}
        node = {k: v for k, v in element.items() if k not in ("type", "children")}
        node["component"] = element.get("type", element.get("component", ""))
        node["children"] = [build(c, seen | {key}) for c in element.get("children") or ()]
        return node

    return build(flat.get("root"), frozenset())


def _text_or_map(value: Any) -> Any:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and value and all(isinstance(v, str) for v in value.values()):
        return dict(value)
    return None


def load_spec(manifest: Manifest, placement: str, relative: str) -> Spec:
    """One spec of a package: its fields, or a Spec whose `problem` says what is wrong."""
    fallback_id = Path(str(relative)).stem or "spec"
    absolute = _inside(Path(manifest.path), relative)
    if absolute is None:
        return Spec(
            manifest.id,
            placement,
            str(relative),
            fallback_id,
            problem="the path leaves the package",
        )
    data = _read(absolute)
    if isinstance(data, str):
        return Spec(manifest.id, placement, relative, fallback_id, problem=data)
    view = data.get("view")
    if view is None and "root" in data:
        view = _nest(data)
    source = data.get("dataSource") if isinstance(data.get("dataSource"), dict) else {}
    namespace = source.get("namespace")
    key = source.get("key")
    empty = data.get("emptyState") if isinstance(data.get("emptyState"), dict) else {}
    order = data.get("groupOrder")
    problem = ""
    if not isinstance(view, dict):
        problem = "the spec has no view (a component tree)"
    elif namespace is not None and not isinstance(namespace, str):
        problem = "dataSource.namespace is not a string"
    spec_id = data.get("id") if isinstance(data.get("id"), str) and data.get("id") else fallback_id
    icon = data.get("icon")
    trigger = data.get("trigger") if isinstance(data.get("trigger"), dict) else {}
    event = trigger.get("event") if isinstance(trigger.get("event"), str) else None
    return Spec(
        plugin=manifest.id,
        placement=placement,
        path=relative,
        id=spec_id,
        label=_text_or_map(data.get("label")),
        short_label=_text_or_map(data.get("shortLabel")),
        icon=icon if isinstance(icon, str) else "",
        group_order=order if isinstance(order, int) and not isinstance(order, bool) else 0,
        namespace=namespace if isinstance(namespace, str) else None,
        key=key if isinstance(key, str) else None,
        empty=_text_or_map(empty.get("message")),
        view=view if isinstance(view, dict) else None,
        event=event,
        match={
            k: v
            for k, v in (data.get("match") if isinstance(data.get("match"), dict) else {}).items()
            if k in ("kind", "speaker") and isinstance(v, str)
        },
        problem=problem,
    )


def package_specs(manifest: Manifest) -> list[Spec]:
    """Every spec the package lists under contributes.ui, in placement and list order."""
    ui = manifest.contributes.get("ui")
    if not isinstance(ui, Mapping):
        return []
    found = []
    for placement in PLACEMENTS:
        paths = ui.get(placement)
        for relative in paths if isinstance(paths, (list, tuple)) else ():
            found.append(load_spec(manifest, placement, relative))
    return found
