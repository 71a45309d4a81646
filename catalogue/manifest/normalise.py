"""Defaults and derived values of a valid package: the normalised manifest data."""

from __future__ import annotations

import copy
import os
from typing import Any

from catalogue.manifest.context import Context, RuntimeDoc
from catalogue.manifest.rules import as_dict, as_list

DEFAULT_ENTRY = "./server/index.js"
DEFAULT_HANDLER = "handler.js"
DEFAULT_SETTLE_WAIT_MS = 60_000
UI_TAGS = {
    "view": "ui:view",
    "right": "ui:right-panel",
    "message": "ui:message-block",
    "segment": "ui:segment",
}


def _package_relative(rel_dir: str, value: str) -> str:
    parts = [p for p in (rel_dir + "/" + value.replace("\\", "/")).split("/") if p not in ("", ".")]
    return "./" + "/".join(parts)


def normalise_runtime(ctx: Context, rt: RuntimeDoc, *, single: bool) -> dict[str, Any]:
    data = copy.deepcopy(rt.data)
    schedule = data.setdefault("schedule", {})
    subagent = schedule.get("subagentOnly") is True
    trigger = schedule.setdefault("trigger", {})
    trigger.setdefault("type", "manual" if subagent else "auto")
    detached = schedule.get("detached")
    if detached is True or isinstance(detached, dict):
        options = dict(detached) if isinstance(detached, dict) else {}
        options.setdefault("settle", False)
        if options["settle"]:
            options.setdefault("maxSettleWaitMs", DEFAULT_SETTLE_WAIT_MS)
        schedule["detached"] = options
    io = data.setdefault("io", {})
    io.setdefault("visibility", "system")
    story = io["visibility"] == "story"
    for binding in as_dict(io.get("inputs")).values():
        if isinstance(binding, dict) and "kernel" not in as_dict(binding.get("from")):
            binding.setdefault("scope", "turn")
            binding.setdefault("required", True)
    for block in as_list(io.get("selfData")):
        if isinstance(block, dict):
            block.setdefault("format", "summary")
            block.setdefault("maxEntries", 50)
    tools = as_list(as_dict(ctx.data.get("contributes")).get("tools"))
    function = data.get("function")
    if isinstance(function, dict):
        # Normalised paths are package-relative, so readers need not know where the manifest sits.
        handler = function.get("handler", DEFAULT_HANDLER)
        function["handler"] = _package_relative(rt.rel_dir, handler)
        _default_plugin_tools(function, tools, single=single)
    if isinstance(data.get("guard"), str):
        data["guard"] = _package_relative(rt.rel_dir, data["guard"])
    agent = data.get("agent")
    if "function" not in data:
        agent = data.setdefault("agent", {}) if agent is None else agent
    if isinstance(agent, dict):
        agent.setdefault("model", "story" if story else "plugin")
        _default_plugin_tools(agent, tools, single=single)
    return data


def _default_plugin_tools(block: dict[str, Any], tools: list[Any], *, single: bool) -> None:
    """The runtime of a single-runtime package gets every contributed tool (agent.tools.plugin
    and function.tools.plugin alike) when it lists none."""
    if single and tools and "plugin" not in as_dict(block.get("tools")):
        block.setdefault("tools", {})["plugin"] = list(tools)


def derived_tags(data: dict[str, Any], runtimes: list[dict[str, Any]]) -> list[str]:
    written = [
        t
        for t in as_list(data.get("tags"))
        if isinstance(t, str) and not t.startswith(("ui:", "cost:"))
    ]
    tags = set(written)
    for runtime in runtimes:
        tags.add("cost:function" if "function" in runtime else "cost:llm")
        schedule = as_dict(runtime.get("schedule"))
        # A sub-agent is started by another runtime, never by the player.
        if (
            as_dict(schedule.get("trigger")).get("type") == "manual"
            and schedule.get("subagentOnly") is not True
        ):
            tags.add("ui:manual-action")
    for placement, tag in UI_TAGS.items():
        if as_list(as_dict(as_dict(data.get("contributes")).get("ui")).get(placement)):
            tags.add(tag)
    return sorted(tags)


def normalise_package(ctx: Context, runtimes: list[dict[str, Any]]) -> dict[str, Any]:
    data = copy.deepcopy(ctx.data)
    data["id"] = ctx.package_id
    data.setdefault("kind", "plugin")
    data.setdefault("version", "0.0.0")
    if "entry" not in data and os.path.isfile(os.path.join(ctx.root, "server", "index.js")):
        data["entry"] = DEFAULT_ENTRY
    contributes = as_dict(data.get("contributes"))
    for event in as_list(contributes.get("events")):
        if isinstance(event, dict):
            event.setdefault("advertise", True)
    for namespace in as_dict(contributes.get("data")).values():
        if isinstance(namespace, dict):
            namespace.setdefault("version", 1)
    provides: list[dict[str, Any]] = []
    seen: set[str] = set()
    for entry in as_list(data.get("provides")):
        contract = entry.get("contract") if isinstance(entry, dict) else entry
        default = bool(entry.get("default", False)) if isinstance(entry, dict) else False
        if isinstance(contract, str) and contract not in seen:
            seen.add(contract)
            provides.append({"contract": contract, "default": default})
    for runtime in runtimes:
        contract = as_dict(as_dict(runtime.get("io")).get("output")).get("contract")
        if isinstance(contract, str) and contract not in seen:
            seen.add(contract)
            provides.append({"contract": contract, "default": False})
    data["provides"] = provides
    data["tags"] = derived_tags(ctx.data, runtimes)
    if "runtime" in data and runtimes:
        data["runtime"] = runtimes[0]
    return data
