"""The rules for the covel-plugins repository's manifest format (covel-ai/covel-plugins).

What that format writes (its author reference, .agents/skills/create-plugin/references/
plugin-schema.md, and its packages) and what each becomes:
- `name` (the package id; `<plugin>/<runtime>` in a runtime file) → `id` in PLUGIN.md; in a
  runtime file it is dropped, the runtime's id being its folder's name. A `name` written as a
  {zh, en} map is the package's display name → `displayName`.
- `pluginType` (core-plugin | plugin) → `kind` (core | plugin), written once, in PLUGIN.md.
- `outputKind` (story | plugin | system: how the client shows a runtime's output) → the runtime's
  `io.visibility` (story, or system for plugin and system); with no runtime it means nothing.
- `capabilities` (labels the framework found packages by) → a label that is a contract the
  package provides is dropped as said twice; one of Covel's framework labels that are contracts
  now (narrative-engine, world-data-provider, image-generation, memory-panel) is refused with
  the fix; any other label becomes a catalogue tag (tags are how packages are found by label).
- contract ids with "/" (`dice/roll@1`) → the same id with "." (`dice.roll@1`): the spec's
  contract pattern has no "/".
- hooks the entry registers with covel.on(...) but the manifest does not declare → appended to
  contributes.hooks (hooks.py finds them without running code).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from catalogue.manifest.migrate.docs import _Ctx
from catalogue.manifest.migrate.hooks import registered_hooks
from catalogue.manifest.migrate.model import _CONTRACT
from catalogue.manifest.migrate.yamledit import _insert_after, _remove, _rename

KINDS = {"core-plugin": "core", "core": "core", "plugin": "plugin"}
VISIBILITY = {"story": "story", "system": "system", "plugin": "system"}
# Covel framework capability labels that are contracts in the current format.
CONTRACT_LABELS = frozenset(
    {"narrative-engine", "world-data-provider", "image-generation", "memory-panel"}
)
MARKS = ("name", "pluginType", "outputKind", "capabilities")
DEFAULT_ENTRY = "./server/index.js"
_SLASHED = re.compile(r"^[a-z][a-z0-9./-]*/[a-z0-9./-]*@[1-9][0-9]*$")
_LOCALE_KEY = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$")


def _is_text_map(value: Any) -> bool:
    return (
        isinstance(value, CommentedMap)
        and bool(value)
        and all(isinstance(k, str) and _LOCALE_KEY.match(k) for k in value)
    )


# ------------------------------------------------------------------ package and runtime files


def migrate_package(ctx: _Ctx) -> None:
    """PLUGIN.md: name, pluginType, outputKind, capabilities, contract ids."""
    data = ctx.doc.data
    if "name" in data:
        _package_name(ctx, data)
    if "pluginType" in data:
        _plugin_type(ctx, data)
    runtime = data.get("runtime")
    if "outputKind" in data:
        _output_kind(ctx, data, runtime if isinstance(runtime, CommentedMap) else None, "")
    if "capabilities" in data:
        _capabilities(ctx, data, data, "")
    _slashed_contracts(ctx, data, "")


def migrate_runtime_file(ctx: _Ctx, folder: str, root: CommentedMap | None) -> None:
    """runtimes/<folder>/RUNTIME.md: name and pluginType dropped, outputKind moved."""
    data = ctx.doc.data
    if "name" in data:
        written = data["name"]
        last = str(written).rsplit("/", 1)[-1]
        if not isinstance(written, str) or last != folder:
            ctx.refuse(
                "/name",
                "name-disagrees-with-folder",
                f"name {written!r} names another runtime than its folder runtimes/{folder}/; "
                "a runtime's id is its folder's name: rename the folder or fix the name",
            )
        else:
            _remove(data, "name")
            ctx.note("/name", f"name: {written} removed: the runtime's id is its folder, {folder}")
    if "pluginType" in data:
        written = data["pluginType"]
        _remove(data, "pluginType")
        ctx.note("/pluginType", f"pluginType: {written} removed: the kind is written in PLUGIN.md")
    if "outputKind" in data:
        _output_kind(ctx, data, data, "")
    if "capabilities" in data:
        if root is None:
            ctx.refuse("/capabilities", "capabilities-without-root", "PLUGIN.md cannot be read")
        else:
            _capabilities(ctx, data, root, "")
    _slashed_contracts(ctx, data, "")


def _package_name(ctx: _Ctx, data: CommentedMap) -> None:
    written = data["name"]
    if _is_text_map(written):
        if "displayName" in data:
            ctx.refuse(
                "/name", "name-and-displayName", "a {zh, en} name and a displayName; keep one"
            )
            return
        _rename(data, "name", "displayName", written)
        ctx.note("/displayName", "a {zh, en} name is the display name: now displayName")
        return
    if not isinstance(written, str) or not written:
        ctx.refuse("/name", "name-not-text", "name must be the package id, a string")
    elif "/" in written:
        ctx.refuse(
            "/name",
            "name-names-a-runtime",
            f"name {written!r} names a runtime (<plugin>/<runtime>); PLUGIN.md names the "
            "package: write its id, and put the runtime under runtimes/<runtime>/",
        )
    elif "id" in data and data["id"] != written:
        ctx.refuse("/name", "name-and-id", f"name {written!r} and id {data['id']!r} disagree")
    elif "id" in data:
        _remove(data, "name")
        ctx.note("/name", "name removed: id already says the same")
    else:
        _rename(data, "name", "id", written)
        ctx.note("/id", f"name: {written} is now id: {written}")


def _plugin_type(ctx: _Ctx, data: CommentedMap) -> None:
    written = data["pluginType"]
    kind = KINDS.get(str(written))
    if kind is None:
        ctx.refuse(
            "/pluginType",
            "pluginType-unknown",
            f"pluginType {written!r} is not core-plugin or plugin",
        )
    elif "kind" in data and data["kind"] != kind:
        ctx.refuse(
            "/pluginType",
            "pluginType-and-kind",
            f"pluginType {written!r} and kind {data['kind']!r} disagree; keep one",
        )
    elif "kind" in data:
        _remove(data, "pluginType")
        ctx.note("/pluginType", "pluginType removed: kind already says the same")
    else:
        _rename(data, "pluginType", "kind", kind)
        ctx.note("/kind", f"pluginType: {written} is now kind: {kind}")


def _output_kind(ctx: _Ctx, data: CommentedMap, runtime: CommentedMap | None, base: str) -> None:
    written = data["outputKind"]
    visibility = VISIBILITY.get(str(written))
    where = f"{base}/outputKind"
    if visibility is None:
        ctx.refuse(
            where, "outputKind-unknown", f"outputKind {written!r} is not story, plugin or system"
        )
        return
    if runtime is None:
        _remove(data, "outputKind")
        ctx.note(
            where,
            f"outputKind: {written} removed: it says how a runtime's output is shown "
            "(io.visibility now), and this package has no runtime",
        )
        return
    io_ = runtime.get("io")
    if io_ is None:
        io_ = CommentedMap()
        _insert_after(runtime, ("schedule", "description"), "io", io_)
    if not isinstance(io_, CommentedMap):
        ctx.refuse(where, "io-not-mapping", "io must be a mapping")
        return
    if "visibility" in io_ and VISIBILITY.get(str(io_["visibility"])) != visibility:
        ctx.refuse(
            where,
            "outputKind-and-visibility",
            f"outputKind {written!r} and io.visibility {io_['visibility']!r} disagree; keep one",
        )
        return
    io_["visibility"] = visibility
    _remove(data, "outputKind")
    ctx.note(where, f"outputKind: {written} is now io.visibility: {visibility}")


def _provided_names(root: CommentedMap) -> set[str]:
    names = set()
    for entry in root.get("provides") or []:
        contract = entry if isinstance(entry, str) else (entry or {}).get("contract")
        if isinstance(contract, str):
            names.add(contract.split("@")[0])
    for contract in root.get("contracts") or {}:
        names.add(str(contract).split("@")[0])
    return names


def _capabilities(ctx: _Ctx, data: CommentedMap, root: CommentedMap, base: str) -> None:
    written = data["capabilities"]
    where = f"{base}/capabilities"
    if not isinstance(written, list) or not all(isinstance(c, str) for c in written):
        ctx.refuse(where, "capabilities-not-list", "capabilities must be a list of labels")
        return
    provided = _provided_names(root)
    tags = root.get("tags")
    if tags is not None and not isinstance(tags, list):
        ctx.refuse(where, "tags-not-list", "tags must be a list to take the capability labels")
        return
    refused = False
    for i, label in enumerate(written):
        if label in provided:
            ctx.note(f"{where}/{i}", f"capability {label} removed: the package provides {label}@N")
        elif label in CONTRACT_LABELS:
            refused = True
            ctx.refuse(
                f"{where}/{i}",
                "capability-is-a-contract",
                f"capability {label!r} is a contract in the current format: give the runtime "
                f"that provides it io.output.contract: {label}@1 (with the contract's schema "
                f"under contracts:), then remove {label!r} from capabilities",
            )
        else:
            if tags is None:
                tags = CommentedSeq()
                _insert_after(root, ("description", "displayName", "version", "id"), "tags", tags)
            if label not in tags:
                tags.append(label)
            ctx.note(
                f"{where}/{i}",
                f"capability {label} is now the catalogue tag {label}: packages are found by "
                "label through tags",
            )
    if not refused:
        _remove(data, "capabilities")


# ------------------------------------------------------------------ contract ids with "/"


def _contract_spots(node: Any, where: str) -> Iterator[tuple[Any, Any, str]]:
    """(container, key or index, pointer) of each contract id in a manifest."""
    if isinstance(node, CommentedMap):
        for key, value in node.items():
            at = f"{where}/{key}"
            if key in ("provides", "requires", "conflicts", "optional") and isinstance(value, list):
                for i, item in enumerate(value):
                    if isinstance(item, str):
                        yield value, i, f"{at}/{i}"
                    elif isinstance(item, CommentedMap) and isinstance(item.get("contract"), str):
                        yield item, "contract", f"{at}/{i}/contract"
            elif key == "contract" and isinstance(value, str):
                yield node, key, at
            elif key == "contracts" and isinstance(value, CommentedMap) and where == "":
                for name in list(value):
                    yield value, ("__key__", name), f"{at}/{name}"
                for name, item in value.items():
                    yield from _contract_spots(item, f"{at}/{name}")
            else:
                yield from _contract_spots(value, at)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _contract_spots(item, f"{where}/{i}")


def _slashed_contracts(ctx: _Ctx, data: CommentedMap, base: str) -> None:
    for container, key, at in list(_contract_spots(data, base)):
        if isinstance(key, tuple):
            written = key[1]
        else:
            written = container[key]
        if not isinstance(written, str) or not _SLASHED.match(written):
            continue
        fixed = written.replace("/", ".")
        if not _CONTRACT.match(fixed):
            ctx.refuse(at, "contract-id-invalid", f"contract id {written!r} has no spec-valid form")
            continue
        if isinstance(key, tuple):
            _rename(container, written, fixed, container[written])
        else:
            container[key] = fixed
        ctx.note(
            at,
            f"contract {written} is now {fixed}: a contract id has no '/'; packages that name "
            "it must use the new id",
        )


# ------------------------------------------------------------------ hooks the entry registers


def declare_hooks(ctx: _Ctx, root_path: Path) -> None:
    """Append to contributes.hooks each hook the entry registers but the manifest omits."""
    data = ctx.doc.data
    entry = data.get("entry")
    if not isinstance(entry, str):
        if not (root_path / DEFAULT_ENTRY).is_file():
            return
        entry = DEFAULT_ENTRY
    found = registered_hooks(root_path, entry)
    if not found:
        return
    contributes = data.get("contributes")
    if contributes is None:
        contributes = CommentedMap()
        _insert_after(
            data, ("entry", "requires", "provides", "description"), "contributes", contributes
        )
    if not isinstance(contributes, CommentedMap):
        return
    hooks = contributes.get("hooks")
    declared = set()
    for item in hooks or []:
        event = item if isinstance(item, str) else (item or {}).get("event")
        declared.add(event)
    for event, enforce, file in found:
        if event in declared:
            continue
        if hooks is None:
            hooks = CommentedSeq()
            contributes["hooks"] = hooks
        if enforce in (None, "normal"):
            hooks.append(event)
        else:
            item = CommentedMap()
            item["event"] = event
            item["enforce"] = enforce
            hooks.append(item)
        declared.add(event)
        ctx.note(
            f"/contributes/hooks/{len(hooks) - 1}",
            f"{file} registers covel.on({event!r}) but the manifest did not declare it; "
            "contributes.hooks declares it now (an undeclared hook is never called)",
        )
