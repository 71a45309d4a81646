"""Defaults and derived values of a valid package: the normalised manifest data.

Every default the spec states for a field ("Defaults to X", "Default: X", "A package without a
version counts as 0.0.0") is written into the normalised data, so no reader needs a fallback of
its own. Defaults that depend on other fields are applied as the spec words them (agent.model,
the loop's story values, a dataset's tools, a source's key). docs/loader.md, "Defaults applied",
lists them all.

Left absent on purpose, because absence means "none" rather than a value: agent.history (the
shared session history), agent.toolChoice without finishWith (the model chooses),
loop.maxSteps and loop.firstTokenTimeoutMs (no value stated; the host's own limits apply),
function.timeoutMs, datasets.*.key (callers choose keys), settings[].default, schedule.stage,
trigger.startTurn and the other trigger limits, and the "true does X" flags the spec gives no
default (io.concealed, variadic, lorebook, ...).

A list entry the spec lets be written as a plain string (a hook's event name, a service's
contract, an extension's "<point>/<id>", a needs/after reference, an agent's service) is the
spec's short form for "every default" and stays a string; defaults fill the object form only.
Only provides is rewritten to objects.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator
from typing import Any

from catalogue.manifest.context import Context, RuntimeDoc, inside_package
from catalogue.manifest.rules import (
    ALL_DATASET_OPS,
    DEFAULT_STORY_TIMEOUT_MS,
    DEFAULT_TIMEOUT_MS,
    as_dict,
    as_list,
    offered_dataset_tools,
    source_path_form,
)

DEFAULT_ENTRY = "./server/index.js"
DEFAULT_HANDLER = "handler.js"
# Not a spec default: the host's own wait when settle is true and maxSettleWaitMs is unset.
DEFAULT_SETTLE_WAIT_MS = 60_000
UI_TAGS = {
    "view": "ui:view",
    "right": "ui:right-panel",
    "message": "ui:message-block",
    "segment": "ui:segment",
}


def _objects(value: Any) -> Iterator[dict[str, Any]]:
    """The object entries of a list; string short forms are skipped."""
    return (item for item in as_list(value) if isinstance(item, dict))


def _object_values(value: Any) -> Iterator[dict[str, Any]]:
    """The object values of a map (contributes.datasets, contributes.data)."""
    return (item for item in as_dict(value).values() if isinstance(item, dict))


def _package_relative(rel_dir: str, value: str) -> str:
    # Only a valid package is normalised: its paths stay inside (Context.check_path).
    return "./" + (inside_package(rel_dir, value) or value)


def _io_path(ctx: Context, rt: RuntimeDoc, value: str) -> str:
    """An io schema path package-relative, read as the loader checked it: from the package root,
    else from the runtime's folder (Covel's packages write ../../schemas/x.json there)."""
    for rel_dir in ("", rt.rel_dir):
        relative = inside_package(rel_dir, value.strip())
        if relative is not None and os.path.isfile(os.path.join(ctx.root, *relative.split("/"))):
            return "./" + relative
    return value


def service_tool_name(contract: str) -> str:
    """agent.tools.services[].as by default: the contract without its version, dots as dashes."""
    return contract.split("@", 1)[0].replace(".", "-")


def loop_defaults(*, story: bool) -> dict[str, Any]:
    """The agent.loop an agent gets when it writes none (story: io.visibility is story)."""
    return _default_loop({}, story=story)


def _default_loop(loop: dict[str, Any], *, story: bool) -> dict[str, Any]:
    loop.setdefault("timeoutMs", DEFAULT_STORY_TIMEOUT_MS if story else DEFAULT_TIMEOUT_MS)
    loop.setdefault("callTimeoutMs", 120_000 if story else 60_000)
    loop.setdefault("idleTimeoutMs", 120_000)
    loop.setdefault("maxRetries", 1 if story else 3)
    loop.setdefault("loopDetection", 3)
    loop.setdefault("maxRecursionDepth", 10)
    profile = loop.setdefault("profile", "story" if story else "system")
    # The spec words these by profile, not by visibility: only the story profile streams and
    # steers, and a written stream: false does not change truncation's default.
    loop.setdefault("stream", profile == "story")
    loop.setdefault("steering", profile == "story")
    loop.setdefault("truncation", "accept" if profile == "story" else "reject")
    loop.setdefault("fallback", "fail" if profile == "system" else "answer-without-tools")
    corrections = loop.setdefault("corrections", {})
    corrections.setdefault("toolUse", 1)
    corrections.setdefault("review", 2)
    corrections.setdefault("loopPerturbation", 1)
    corrections.setdefault("outputRepair", 1)
    finalizer = loop.setdefault("finalizer", {})
    finalizer.setdefault("maxSteps", True)
    finalizer.setdefault("deadlineReserveMs", 0)
    return loop


def normalise_runtime(ctx: Context, rt: RuntimeDoc, *, single: bool) -> dict[str, Any]:
    data = copy.deepcopy(rt.data)
    _default_schedule(data.setdefault("schedule", {}))
    io = data.setdefault("io", {})
    io.setdefault("visibility", "system")
    story = io["visibility"] == "story"
    for binding in _object_values(io.get("inputs")):
        accepts = binding.get("accepts")
        if isinstance(accepts, str) and not accepts.startswith("contract:"):
            binding["accepts"] = _io_path(ctx, rt, accepts)
        source = as_dict(binding.get("from"))
        if "kernel" in source:
            continue  # a kernel input takes no other field
        binding.setdefault("scope", "turn")
        binding.setdefault("required", True)
        if "contract" in source:
            source.setdefault("cardinality", "one")
    if isinstance(io.get("payloadSchema"), str):
        io["payloadSchema"] = _io_path(ctx, rt, io["payloadSchema"])
    output = io.get("output")
    if isinstance(output, dict) and isinstance(output.get("schema"), str):
        output["schema"] = _io_path(ctx, rt, output["schema"])
    for block in _objects(io.get("selfData")):
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
        _default_agent(agent, story=story)
        _default_plugin_tools(agent, tools, single=single)
    return data


def _default_schedule(schedule: dict[str, Any]) -> None:
    subagent = schedule.setdefault("subagentOnly", False) is True
    trigger = schedule.setdefault("trigger", {})
    # subagentOnly "implies trigger: manual".
    trigger.setdefault("type", "manual" if subagent else "auto")
    if trigger["type"] == "auto":
        schedule.setdefault("every", 1)  # "auto only": a manual or event runtime takes no every
    schedule.setdefault("background", False)
    detached = schedule.setdefault("detached", False)
    if detached is True or isinstance(detached, dict):
        options = dict(detached) if isinstance(detached, dict) else {}
        options.setdefault("settle", False)
        if options["settle"]:
            options.setdefault("maxSettleWaitMs", DEFAULT_SETTLE_WAIT_MS)
        schedule["detached"] = options
    for key in ("needs", "after"):
        for ref in _objects(schedule.get(key)):
            if "contract" in ref:
                ref.setdefault("cardinality", "one")


def _default_agent(agent: dict[str, Any], *, story: bool) -> None:
    agent.setdefault("model", "story" if story else "plugin")
    agent.setdefault("reasoning", True)
    if "finishWith" in agent:
        # finishWith: "The model must call a tool on every step (toolChoice: required) unless
        # toolChoice says otherwise." Without finishWith the model chooses: no toolChoice.
        agent.setdefault("toolChoice", "required")
    history = agent.get("history")
    if isinstance(history, dict):
        history.setdefault("includeSummaries", False)
    for service in _objects(as_dict(agent.get("tools")).get("services")):
        if isinstance(service.get("contract"), str):
            service.setdefault("as", service_tool_name(service["contract"]))
    agent["loop"] = _default_loop(as_dict(agent.get("loop")), story=story)


def _default_plugin_tools(block: dict[str, Any], tools: list[Any], *, single: bool) -> None:
    """The runtime of a single-runtime package gets every contributed tool (agent.tools.plugin
    and function.tools.plugin alike) when it lists none."""
    if single and tools and "plugin" not in as_dict(block.get("tools")):
        block.setdefault("tools", {})["plugin"] = list(tools)


def _default_contributes(contributes: dict[str, Any]) -> None:
    for command in _objects(contributes.get("commands")):
        for argument in _objects(command.get("arguments")):
            argument.setdefault("type", "string")
    for kind in _objects(contributes.get("actionKinds")):
        kind.setdefault("roles", ["player"])
        kind.setdefault("text", "optional")
        kind.setdefault("actor", True)
    for service in _objects(contributes.get("services")):
        service.setdefault("access", "read")
    for extension in _objects(contributes.get("extensions")):
        extension.setdefault("order", 0)
    for hook in _objects(contributes.get("hooks")):
        hook.setdefault("enforce", "normal")
    for event in _objects(contributes.get("events")):
        event.setdefault("advertise", True)
    for dataset in _object_values(contributes.get("datasets")):
        dataset.setdefault("ops", list(ALL_DATASET_OPS))
        if "tools" not in dataset:
            dataset["tools"] = offered_dataset_tools(dataset)  # read from ops, so after them
    for namespace in _object_values(contributes.get("data")):
        namespace.setdefault("version", 1)
        source = as_dict(as_dict(namespace.get("authoring")).get("source"))
        if source:
            source.setdefault("key", "filename" if _is_media_source(source) else "id")
            source.setdefault("visibility", "public")
    for segment in _objects(contributes.get("prompt")):
        segment.setdefault("role", "system")


def _is_media_source(source: dict[str, Any]) -> bool:
    path = source.get("path")
    try:
        return isinstance(path, str) and source_path_form(path) == "media"
    except ValueError:
        return False  # not reached for a valid package: the rules refuse such a path


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
    data.setdefault("version", "0.0.0")  # "A package without a version counts as 0.0.0."
    if "entry" not in data and os.path.isfile(os.path.join(ctx.root, "server", "index.js")):
        data["entry"] = DEFAULT_ENTRY
    if isinstance(data.get("contributes"), dict):
        _default_contributes(data["contributes"])
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
