"""A loader verdict as the rows the catalogue index writes (catalogue.services.package_index).

A valid package's rows come straight from its Manifest: the loader checked and normalised it,
so nothing is checked again here. An invalid package gets only its card, from the raw
frontmatter, which may hold any types: only that path reads values defensively.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, time
from pathlib import Path
from typing import Any

from catalogue.manifest.rules import is_package_id
from catalogue.manifest.types import LoadResult, Manifest, RuntimeManifest, thaw
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

# --- Reading an invalid package's raw frontmatter defensively -------------------------------


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


def _runtime_row(runtime: RuntimeManifest) -> dict:
    data = thaw(runtime.data)
    schedule = data.get("schedule", {})
    detached = runtime.detached
    if runtime.is_function:
        model = data["function"].get("model")
    else:
        # The spec's default slot: story for the story runtime, plugin for every other agent.
        model = data.get("agent", {}).get("model") or (
            "story" if runtime.visibility == "story" else "plugin"
        )
    io = data.get("io", {})
    options = detached or {}
    return {
        "runtime_id": runtime.id[:200],
        "qualified_id": runtime.qualified_id[:300],
        "file": runtime.file[:500],
        "description": data.get("description", ""),
        "kind": runtime.kind,
        "stage": (runtime.stage or "")[:20],
        "trigger": runtime.trigger[:20],
        "trigger_topic": schedule.get("trigger", {}).get("topic", "")[:200],
        "model_slot": (model or "")[:100],
        "visibility": runtime.visibility[:20],
        "output_contract": io.get("output", {}).get("contract", "")[:200],
        "background": schedule.get("background") is True,
        "subagent_only": schedule.get("subagentOnly") is True,
        "detached": detached is not None,
        "settle": bool(options.get("settle", False)),
        "max_settle_wait_ms": options.get("maxSettleWaitMs"),
        "max_queue_ms": options.get("maxQueueMs"),
        "max_execution_ms": options.get("maxExecutionMs"),
        "prompt": no_nul(runtime.prompt),  # Markdown, not YAML: the loader lets NUL through
        "data": data,
    }


def _https(value: Any) -> str:
    """Only https addresses become links (an href is where a javascript: address would run, so
    the sink checks it too); anything else is dropped."""
    text = _str(value, 2000).strip()
    return text if re.match(r"^https://[^\s]+$", text, re.IGNORECASE) else ""


def _card(rows: Rows, data: Mapping[str, Any], author: Mapping[str, Any]) -> None:
    """The links and the search words every card has, valid package or not."""
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


def _finish(rows: Rows, package_id: str, display_name: str) -> Rows:
    words = [
        package_id,
        display_name,
        rows.fields["description"],
        rows.fields["author_name"],
        *(t for t, _ in rows.tags),
        *(c for c, _, _ in rows.contracts),
        *(t["name"] for t in rows.simple.get(Tool, [])),
        *(c["name"] for c, _ in rows.commands),
    ]
    rows.fields["search_text"] = " ".join(w for w in words if w).casefold()
    rows.fields["name_key"] = display_name.casefold()[:300]
    return rows


def rows_from(result: LoadResult) -> Rows:
    """The rows of one loader verdict: a valid package's from its Manifest, an invalid one's card
    from its raw frontmatter."""
    if result.ok and result.manifest is not None:
        return _rows_from_manifest(result, result.manifest)
    return _card_from_raw(result)


def _card_from_raw(result: LoadResult) -> Rows:
    """An invalid package's card (docs/catalogue.md): name, description, author, links, written
    tags but ui:*/cost:*, contracts. Its frontmatter failed the loader's checks, so every value
    may be of any type (or hold NUL, .inf, dates when the result was built by other code): each
    is read defensively and made JSON-safe. Nothing else of it is indexed; it cannot be used."""
    data: dict = json_safe(_dict(thaw(result.raw) if result.raw else {}))
    author = _dict(data.get("author"))
    package_id = package_id_of(result)
    display_name = _str(data.get("displayName"), 300) or package_id
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
            "state": Package.State.ERROR,
            "author_name": _str(author.get("name"), 300),
            "author_url": _https(author.get("url")),
            "author_about": _str(author.get("about")),
            "license": _str(data.get("license"), 200),
            "homepage": _https(data.get("homepage")),
            "covel_range": _str(data.get("covel"), 200),
            "entry": _str(data.get("entry"), 500),
            "prompt_summary": "",
            "body": "",
            "readme": no_nul(result.readme),
        }
    )
    for tag in dict.fromkeys(t[:200] for t in _list(data.get("tags")) if isinstance(t, str)):
        if tag and not tag.startswith(("ui:", "cost:")):  # only the loader derives those
            rows.tags.append((tag, False))
    seen: set[tuple[str, str]] = set()
    for relation in ("provides", "requires", "conflicts"):
        for item in _list(data.get(relation)):
            default = relation == "provides" and _dict(item).get("default") is True
            contract = _dict(item).get("contract") if isinstance(item, dict) else item
            contract = contract[:200] if isinstance(contract, str) else ""
            if contract and (contract, relation) not in seen:
                seen.add((contract, relation))
                rows.contracts.append((contract, relation, default))
    _card(rows, data, author)
    return _finish(rows, package_id, display_name)


def _rows_from_manifest(result: LoadResult, manifest: Manifest) -> Rows:
    """A valid package's rows, read straight from the loader's Manifest: its types, its defaults
    and its NUL-free, finite, date-less values are the loader's to guarantee (frontmatter.py,
    the schemas, normalise.py). What stays is the database's own limit: the loader caps no
    string's length, so text bound for a sized column is cut to it."""
    data = thaw(manifest.data)
    author = data.get("author") or {}
    package_id = manifest.id
    display_name = manifest.display_name[:300]
    inline = data.get("runtime")
    # The card summarises the inline runtime's prompt; a concealed runtime's prompt stays hidden.
    concealed = isinstance(inline, dict) and inline.get("io", {}).get("concealed")
    body = manifest.body if inline and not concealed else ""
    # Without an inline runtime the PLUGIN.md body is nobody's prompt, and no other row keeps it.
    owned = any(r.file == "PLUGIN.md" for r in manifest.runtimes)
    rows = Rows(
        fields={
            "package_id": package_id,
            "kind": manifest.kind[:20],
            "version": manifest.version[:100],
            "display_name": display_name,
            "description": manifest.description,
            "manifest": data,
            "errors": [],
            "warnings": [i.as_dict() for i in result.warnings],
            "state": Package.State.LOADED,
            "author_name": author.get("name", "")[:300],
            "author_url": _https(author.get("url")),
            "author_about": author.get("about", ""),
            "license": data.get("license", "")[:200],
            "homepage": _https(data.get("homepage")),
            "covel_range": data.get("covel", "")[:200],
            "entry": (manifest.entry or "")[:500],
            # Markdown bodies are not YAML: the loader passes NUL through, PostgreSQL refuses it.
            "prompt_summary": prompt_summary(no_nul(body)),
            "body": "" if owned else no_nul(manifest.body),
            # The README is no manifest: the loader only read it, so NUL is still possible.
            "readme": no_nul(result.readme),
        }
    )
    # The loader replaced every written ui:*/cost:* tag by the ones it derives.
    for tag in dict.fromkeys(t[:200] for t in manifest.tags):
        rows.tags.append((tag, tag.startswith(("ui:", "cost:"))))

    seen: set[tuple[str, str]] = set()

    def add_contract(contract: str, relation: str, default: bool = False) -> None:
        contract = contract[:200]
        if contract and (contract, relation) not in seen:
            seen.add((contract, relation))
            rows.contracts.append((contract, relation, default))

    for item in manifest.provides:
        if isinstance(item, str):
            add_contract(item, "provides")
        else:
            add_contract(item["contract"], "provides", item.get("default") is True)
    for contract in manifest.requires:
        add_contract(contract, "requires")
    for contract in manifest.conflicts:
        add_contract(contract, "conflicts")
    _card(rows, data, author)

    rows.runtimes = [_runtime_row(runtime) for runtime in manifest.runtimes]
    for runtime in rows.runtimes:
        if runtime["output_contract"]:
            add_contract(runtime["output_contract"], "provides")
        for grant in runtime["data"].get("permissions", {}).get("http", []):
            rows.http.append(
                (runtime["runtime_id"], grant["origin"][:500], grant.get("methods", []))
            )
    for grant in data.get("permissions", {}).get("http", []):
        rows.http.append((None, grant["origin"][:500], grant.get("methods", [])))
    _contributions(rows, data.get("contributes", {}))
    return _finish(rows, package_id, display_name)


def _contributions(rows: Rows, contributes: Mapping[str, Any]) -> None:
    """The contributes child rows of a valid manifest. A list entry in its short string form
    (a service's contract, a hook's event, "point/id" for an extension) means every default."""
    simple = rows.simple
    simple[Tool] = [{"name": n[:200]} for n in contributes.get("tools", [])]
    simple[Action] = [{"name": n[:200]} for n in contributes.get("actions", [])]
    simple[ActionKind] = []
    for item in contributes.get("actionKinds", []):
        display = item.get("display", {})
        simple[ActionKind].append(
            {
                "name": item["name"][:200],
                "label": display.get("label", "")[:300],
                "icon": display.get("icon", "")[:100],
                "placeholder": display.get("placeholder", "")[:500],
                "roles": item.get("roles") or ["player"],
                "text": item.get("text", "optional")[:20],
                "actor": item.get("actor") is not False,
                "schema": item.get("schema", "")[:500],
            }
        )
    simple[Service] = []
    for item in contributes.get("services", []):
        item = {"contract": item} if isinstance(item, str) else item
        simple[Service].append(
            {
                "contract": item["contract"][:200],
                "access": item.get("access", "read")[:10],
                "model_facing": item.get("modelFacing") is True,
            }
        )
    simple[Extension] = []
    for item in contributes.get("extensions", []):
        if isinstance(item, str):
            point, _, ext_id = item.rpartition("/")
            item = {"point": point, "id": ext_id}
        simple[Extension].append(
            {
                "point": item["point"][:200],
                "extension_id": item["id"][:200],
                "order": item.get("order", 0),
                "slot": item.get("slot", "")[:200],
                "watch": item.get("watch", []),
                "preview": item.get("preview", []),
            }
        )
    simple[Hook] = []
    for item in contributes.get("hooks", []):
        item = {"event": item} if isinstance(item, str) else item
        simple[Hook].append(
            {"event": item["event"][:40], "enforce": item.get("enforce", "normal")[:10]}
        )
    simple[Event] = [
        {
            "topic": item["topic"][:200],
            "schema": item.get("schema", "")[:500],
            "description": item.get("description", ""),
            "advertise": item.get("advertise") is not False,
        }
        for item in contributes.get("events", [])
    ]
    simple[Dataset] = [
        {
            "name": name[:200],
            "schema": item.get("schema", "")[:500],
            "key": item.get("key", "")[:200],
            "ops": item.get("ops", []),
            "tools": item.get("tools", []),
            "description": item.get("description", ""),
        }
        for name, item in contributes.get("datasets", {}).items()
    ]
    simple[DataNamespace] = [
        {
            "namespace": name[:200],
            "schema": item.get("schema", "")[:500],
            "description": item.get("description", ""),
            "version": item.get("version") or 1,
            "accepts": item.get("accepts", []),
            "authoring": item.get("authoring"),
            "search_field": item.get("search", {}).get("text", "")[:200],
        }
        for name, item in contributes.get("data", {}).items()
    ]
    ui = contributes.get("ui", {})
    simple[UISpec] = [
        {"placement": placement, "path": path[:500]}
        for placement in ("view", "right", "message", "segment")
        for path in ui.get(placement, [])
    ]
    for item in contributes.get("commands", []):
        command = {
            "name": item["name"][:200],
            "description": item.get("description", ""),
            "action": item.get("action", "")[:200],
            "aliases": item.get("aliases", []),
            "context": item.get("context", []),
        }
        arguments = [
            {
                "name": arg["name"][:200],
                "type": arg.get("type", "string")[:20],
                "description": arg.get("description", ""),
                "required": arg.get("required") is True,
                "variadic": arg.get("variadic") is True,
                "choices": arg.get("choices", []),
            }
            for arg in item.get("arguments", [])
        ]
        rows.commands.append((command, arguments))
    for item in contributes.get("settings", []):
        setting = {
            "key": item["key"][:200],
            "type": item["type"][:20],
            "label": item.get("label", "")[:300],
            "description": item.get("description", ""),
            "default": item.get("default"),
            "has_default": "default" in item,
            "min": _number(item.get("min")),
            "max": _number(item.get("max")),
            "step": _number(item.get("step")),
        }
        options = [
            {"value": str(o["value"])[:300], "label": o.get("label", "")[:300]}
            for o in item.get("options", [])
        ]
        rows.settings.append((setting, options))


def _number(value: int | float | None) -> float | None:
    return None if value is None else float(value)
