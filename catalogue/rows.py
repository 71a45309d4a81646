"""A loader verdict as the rows the catalogue index writes (catalogue.services.package_index).

An invalid package still gets its card from the raw frontmatter, which may hold any types, so
every value is read defensively here, and cut to its column's length.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import date, time
from pathlib import Path
from typing import Any

from catalogue.manifest.rules import is_package_id
from catalogue.manifest.types import LoadResult, thaw
from catalogue.models import (
    Action,
    ActionKind,
    DataNamespace,
    Dataset,
    Event,
    Extension,
    Hook,
    Package,
    Service,
    Tool,
    UISpec,
)
from catalogue.text import prompt_summary

# --- Reading manifest values defensively ----------------------------------------------------
# An invalid package still gets its card from the raw frontmatter, which may hold any types.


def no_nul(text: str) -> str:
    # PostgreSQL text and jsonb cannot hold NUL, which YAML's "\0" escape can produce.
    return text.replace("\x00", "\ufffd")


def _str(value: Any, limit: int | None = None) -> str:
    if value is None or isinstance(value, dict | list | tuple):
        return ""
    text = no_nul(str(value))
    return text[:limit] if limit else text


def _list(value: Any) -> list:
    return list(value) if isinstance(value, list | tuple) else []


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _float(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def json_safe(value: Any) -> Any:
    """Plain JSON: YAML may give dates, .inf/.nan and non-string keys that JSON columns refuse."""
    if isinstance(value, Mapping):
        return {no_nul(str(k)): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_safe(v) for v in value]
    if isinstance(value, str):
        return no_nul(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, date | time):
        return value.isoformat()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _https(value: Any) -> str:
    """Only https addresses become links; anything else is dropped (the spec allows no other)."""
    text = _str(value, 2000).strip()
    return text if re.match(r"^https://[^\s]+$", text, re.IGNORECASE) else ""


def package_id_of(result: LoadResult) -> str:
    """The loader's package id when it is a well-formed id, else the folder name.

    An invalid package may carry any written id ("a/b", "<x>"); keying it by its folder keeps
    its catalogue address valid and unique per folder.
    """
    written = result.package_id
    if isinstance(written, str) and is_package_id(written):
        return written
    return Path(result.path).name[:100]


@dataclass
class Rows:
    """Everything derived from one manifest, ready for bulk_create."""

    fields: dict[str, Any]
    tags: list[tuple[str, bool]] = field(default_factory=list)
    contracts: list[tuple[str, str, bool]] = field(
        default_factory=list
    )  # contract, relation, default
    links: list[tuple[str, str, str]] = field(default_factory=list)  # kind, label, url
    runtimes: list[dict[str, Any]] = field(default_factory=list)
    simple: dict[type, list[dict[str, Any]]] = field(default_factory=dict)
    commands: list[tuple[dict[str, Any], list[dict[str, Any]]]] = field(default_factory=list)
    settings: list[tuple[dict[str, Any], list[dict[str, Any]]]] = field(default_factory=list)
    http: list[tuple[str | None, str, list[str]]] = field(
        default_factory=list
    )  # runtime, origin, methods


def _http_entries(value: Any) -> Iterator[tuple[str, list[str]]]:
    for item in _list(_dict(value).get("http")):
        item = _dict(item)
        origin = _str(item.get("origin"), 500)
        if origin:
            yield origin, [m for m in _list(item.get("methods")) if isinstance(m, str)]


def _runtime_row(runtime_id: str, qualified_id: str, file: str, prompt: str, data: dict) -> dict:
    schedule = _dict(data.get("schedule"))
    trigger = _dict(schedule.get("trigger"))
    detached_value = schedule.get("detached", False)
    detached_opts = detached_value if isinstance(detached_value, dict) else {}
    detached = detached_value is True or isinstance(detached_value, dict)
    is_function = "function" in data
    model = (
        _dict(data.get("function")).get("model")
        if is_function
        else _dict(data.get("agent")).get("model")
    )
    io = _dict(data.get("io"))
    visibility = _str(io.get("visibility")) or "system"
    if not model and not is_function:
        # The spec's default slot: story for the story runtime, plugin for every other agent.
        model = "story" if visibility == "story" else "plugin"
    settle = bool(detached_opts.get("settle", False))
    return {
        "runtime_id": runtime_id[:200],
        "qualified_id": qualified_id[:300],
        "file": file[:500],
        "description": _str(data.get("description")),
        "kind": "function" if is_function else "agent",
        "stage": _str(schedule.get("stage"), 20),
        "trigger": _str(trigger.get("type"), 20) or "auto",
        "trigger_topic": _str(trigger.get("topic"), 200),
        "model_slot": _str(model, 100),
        "visibility": visibility[:20],
        "output_contract": _str(_dict(io.get("output")).get("contract"), 200),
        "background": schedule.get("background") is True,
        "subagent_only": schedule.get("subagentOnly") is True,
        "detached": detached,
        "settle": settle,
        "max_settle_wait_ms": _int(detached_opts.get("maxSettleWaitMs")),
        "max_queue_ms": _int(detached_opts.get("maxQueueMs")),
        "max_execution_ms": _int(detached_opts.get("maxExecutionMs")),
        "prompt": no_nul(prompt or ""),
        "data": data,
    }


def rows_from(result: LoadResult) -> Rows:
    manifest = result.manifest
    ok = result.ok and manifest is not None
    data: dict = json_safe(
        thaw(manifest.data) if ok else _dict(thaw(result.raw) if result.raw else {})
    )
    author = _dict(data.get("author"))
    package_id = package_id_of(result)
    display_name = _str(data.get("displayName"), 300) or package_id
    inline = _dict(data.get("runtime"))
    # The card summarises the inline runtime's prompt; a concealed runtime's prompt stays hidden.
    body = manifest.body if ok and inline and not _dict(inline.get("io")).get("concealed") else ""
    # Without an inline runtime the PLUGIN.md body is nobody's prompt, and no other row keeps it.
    owned = ok and any(r.file == "PLUGIN.md" for r in manifest.runtimes)
    notes = manifest.body if ok and not owned else ""
    rows = Rows(
        fields={
            "package_id": package_id,
            "kind": _str(data.get("kind"), 20) or "plugin",
            "version": _str(data.get("version"), 100) or "0.0.0",
            "display_name": display_name,
            "description": _str(data.get("description")),
            "manifest": data,
            "errors": json_safe([i.as_dict() for i in result.errors]),
            "warnings": json_safe([i.as_dict() for i in result.warnings]),
            "state": Package.State.LOADED if ok else Package.State.ERROR,
            "author_name": _str(author.get("name"), 300),
            "author_url": _https(author.get("url")),
            "author_about": _str(author.get("about")),
            "license": _str(data.get("license"), 200),
            "homepage": _https(data.get("homepage")),
            "covel_range": _str(data.get("covel"), 200),
            "entry": _str(data.get("entry"), 500),
            "prompt_summary": prompt_summary(no_nul(body)),
            "body": no_nul(notes),
        }
    )

    seen_tags: set[str] = set()
    for tag in _list(data.get("tags")):
        tag = tag[:200] if isinstance(tag, str) else ""
        if not tag or tag in seen_tags:
            continue
        if not ok and tag.startswith(("ui:", "cost:")):
            continue  # written ui:*/cost:* tags are ignored; only the loader derives them
        seen_tags.add(tag)
        # The loader replaces every written ui:*/cost:* tag by the ones it derives.
        rows.tags.append((tag, ok and tag.startswith(("ui:", "cost:"))))

    seen_contracts: set[tuple[str, str]] = set()

    def add_contract(contract: Any, relation: str, default: bool = False) -> None:
        contract = contract[:200] if isinstance(contract, str) else ""
        if contract and (contract, relation) not in seen_contracts:
            seen_contracts.add((contract, relation))
            rows.contracts.append((contract, relation, default))

    for item in _list(data.get("provides")):
        if isinstance(item, dict):
            add_contract(item.get("contract"), "provides", item.get("default") is True)
        else:
            add_contract(item, "provides")
    for item in _list(data.get("requires")):
        add_contract(item, "requires")
    for item in _list(data.get("conflicts")):
        add_contract(item, "conflicts")

    if rows.fields["homepage"]:
        rows.links.append(("homepage", "Homepage", rows.fields["homepage"]))
    if rows.fields["author_url"]:
        rows.links.append(
            ("author", rows.fields["author_name"] or "Author", rows.fields["author_url"])
        )
    for link in _list(author.get("links"))[:6]:  # the spec allows at most 6
        link = _dict(link)
        url = _https(link.get("url"))
        if url:
            rows.links.append(("author-link", _str(link.get("label"), 300) or url, url))

    if ok:
        for runtime in manifest.runtimes:
            rows.runtimes.append(
                _runtime_row(
                    runtime.id,
                    runtime.qualified_id,
                    runtime.file,
                    runtime.prompt,
                    json_safe(thaw(runtime.data)),
                )
            )
    elif isinstance(data.get("runtime"), dict):
        rows.runtimes.append(_runtime_row(package_id, package_id, "PLUGIN.md", "", data["runtime"]))
    for runtime in rows.runtimes:
        add_contract(runtime["output_contract"] or None, "provides")
        for origin, methods in _http_entries(_dict(runtime["data"]).get("permissions")):
            rows.http.append((runtime["runtime_id"], origin, methods))
    for origin, methods in _http_entries(data.get("permissions")):
        rows.http.append((None, origin, methods))

    contributes = _dict(data.get("contributes"))
    simple = rows.simple
    simple[Tool] = [{"name": _str(n, 200)} for n in _list(contributes.get("tools")) if _str(n)]
    simple[Action] = [{"name": _str(n, 200)} for n in _list(contributes.get("actions")) if _str(n)]
    simple[ActionKind] = []
    for item in map(_dict, _list(contributes.get("actionKinds"))):
        display = _dict(item.get("display"))
        simple[ActionKind].append(
            {
                "name": _str(item.get("name"), 200),
                "label": _str(display.get("label"), 300),
                "icon": _str(display.get("icon"), 100),
                "placeholder": _str(display.get("placeholder"), 500),
                "roles": _list(item.get("roles")) or ["player"],
                "text": _str(item.get("text"), 20) or "optional",
                "actor": item.get("actor") is not False,
                "schema": _str(item.get("schema"), 500),
            }
        )
    simple[Service] = []
    for item in _list(contributes.get("services")):
        item = {"contract": item} if isinstance(item, str) else _dict(item)
        simple[Service].append(
            {
                "contract": _str(item.get("contract"), 200),
                "access": _str(item.get("access"), 10) or "read",
                "model_facing": item.get("modelFacing") is True,
            }
        )
    simple[Extension] = []
    for item in _list(contributes.get("extensions")):
        if isinstance(item, str):
            point, _, ext_id = item.rpartition("/")
            item = {"point": point, "id": ext_id}
        item = _dict(item)
        simple[Extension].append(
            {
                "point": _str(item.get("point"), 200),
                "extension_id": _str(item.get("id"), 200),
                "order": item.get("order") if isinstance(item.get("order"), int) else 0,
                "slot": _str(item.get("slot"), 200),
                "watch": _list(item.get("watch")),
                "preview": _list(item.get("preview")),
            }
        )
    simple[Hook] = []
    for item in _list(contributes.get("hooks")):
        item = {"event": item} if isinstance(item, str) else _dict(item)
        simple[Hook].append(
            {
                "event": _str(item.get("event"), 40),
                "enforce": _str(item.get("enforce"), 10) or "normal",
            }
        )
    simple[Event] = [
        {
            "topic": _str(item.get("topic"), 200),
            "schema": _str(item.get("schema"), 500),
            "description": _str(item.get("description")),
            "advertise": item.get("advertise") is not False,
        }
        for item in map(_dict, _list(contributes.get("events")))
    ]
    simple[Dataset] = [
        {
            "name": _str(name, 200),
            "schema": _str(item.get("schema"), 500),
            "key": _str(item.get("key"), 200),
            "ops": _list(item.get("ops")),
            "tools": _list(item.get("tools")),
            "description": _str(item.get("description")),
        }
        for name, item in ((n, _dict(v)) for n, v in _dict(contributes.get("datasets")).items())
    ]
    simple[DataNamespace] = [
        {
            "namespace": _str(name, 200),
            "schema": _str(item.get("schema"), 500),
            "description": _str(item.get("description")),
            "version": _int(item.get("version")) or 1,
            "accepts": _list(item.get("accepts")),
            "authoring": item.get("authoring") if isinstance(item.get("authoring"), dict) else None,
            "search_field": _str(_dict(item.get("search")).get("text"), 200),
        }
        for name, item in ((n, _dict(v)) for n, v in _dict(contributes.get("data")).items())
    ]
    ui = _dict(contributes.get("ui"))
    simple[UISpec] = [
        {"placement": placement, "path": _str(path, 500)}
        for placement in ("view", "right", "message", "segment")
        for path in _list(ui.get(placement))
        if _str(path)
    ]

    for item in map(_dict, _list(contributes.get("commands"))):
        command = {
            "name": _str(item.get("name"), 200),
            "description": _str(item.get("description")),
            "action": _str(item.get("action"), 200),
            "aliases": [a for a in _list(item.get("aliases")) if isinstance(a, str)],
            "context": [c for c in _list(item.get("context")) if isinstance(c, str)],
        }
        arguments = [
            {
                "name": _str(arg.get("name"), 200),
                "type": _str(arg.get("type"), 20) or "string",
                "description": _str(arg.get("description")),
                "required": arg.get("required") is True,
                "variadic": arg.get("variadic") is True,
                "choices": [c for c in _list(arg.get("choices")) if isinstance(c, str)],
            }
            for arg in map(_dict, _list(item.get("arguments")))
        ]
        rows.commands.append((command, arguments))

    for item in map(_dict, _list(contributes.get("settings"))):
        setting = {
            "key": _str(item.get("key"), 200),
            "type": _str(item.get("type"), 20),
            "label": _str(item.get("label"), 300),
            "description": _str(item.get("description")),
            "default": item.get("default"),
            "has_default": "default" in item,
            "min": _float(item.get("min")),
            "max": _float(item.get("max")),
            "step": _float(item.get("step")),
        }
        options = [
            {"value": _str(o.get("value"), 300), "label": _str(o.get("label"), 300)}
            for o in map(_dict, _list(item.get("options")))
        ]
        rows.settings.append((setting, options))

    words = [
        package_id,
        display_name,
        rows.fields["description"],
        rows.fields["author_name"],
        *(t for t, _ in rows.tags),
        *(c for c, _, _ in rows.contracts),
        *(t["name"] for t in simple[Tool]),
        *(c["name"] for c, _ in rows.commands),
    ]
    rows.fields["search_text"] = " ".join(w for w in words if w).casefold()
    rows.fields["name_key"] = display_name.casefold()[:300]
    return rows
