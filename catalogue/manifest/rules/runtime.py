"""A runtime's RUNTIME.md: its schedule, trigger, io (inputs, output, schema), function section,
detached limits and guard.
"""

from __future__ import annotations

import os

from catalogue.manifest.context import Context, RuntimeDoc
from catalogue.manifest.rules.agent import check_agent, check_tool_names, declared_namespaces
from catalogue.manifest.rules.common import (
    DETACHED_STAGES,
    MAX_SETTLE_WAIT_MS,
    as_dict,
    check_contract,
    check_http_permissions,
    declared,
    entries,
    items,
)
from core.pointer import is_pointer, join

# ---------------------------------------------------------------- runtimes


def check_runtime(ctx: Context, rt: RuntimeDoc) -> None:
    f, b, r = rt.file, rt.base, rt.data
    contributes = as_dict(ctx.data.get("contributes"))
    tools = declared(contributes.get("tools"))
    datasets = contributes.get("datasets", {})
    namespaces = declared_namespaces(contributes)

    schedule = as_dict(r.get("schedule"))
    trigger = as_dict(schedule.get("trigger"))
    subagent = schedule.get("subagentOnly") is True
    # subagentOnly implies trigger: manual, written or not.
    trigger_type = trigger.get("type", "manual" if subagent else "auto")
    stage = schedule.get("stage")
    io = as_dict(r.get("io"))
    story = io.get("visibility") == "story"
    agent = r.get("agent")
    function = r.get("function")

    if "function" in r and "agent" in r:
        ctx.error(
            f,
            join(b, "agent"),
            "function-with-agent",
            "a runtime is either a function or an agent, not both",
        )
    if isinstance(function, dict):
        if "handler" in function:
            ctx.check_path(
                function.get("handler"),
                file=f,
                path=join(b, "function", "handler"),
                rel_dir=rt.rel_dir,
            )
        elif not os.path.isfile(os.path.join(ctx.root, rt.rel_dir, "handler.js")):
            ctx.error(
                f,
                join(b, "function", "handler"),
                "handler-missing",
                f"a function runtime needs a handler: set function.handler or add handler.js next to {f}",
            )
        check_tool_names(
            ctx,
            as_dict(function.get("tools")).get("plugin"),
            tools,
            file=f,
            path=join(b, "function", "tools", "plugin"),
        )
    if "guard" in r:
        ctx.check_path(r.get("guard"), file=f, path=join(b, "guard"), rel_dir=rt.rel_dir)

    # --- schedule
    if subagent:
        if "type" in trigger and trigger_type != "manual":
            ctx.error(
                f,
                join(b, "schedule", "trigger", "type"),
                "subagent-only-conflict",
                "a subagentOnly runtime is always triggered manually (by another runtime)",
            )
        conflicts = [
            ("stage" in schedule, join(b, "schedule", "stage"), "stage"),
            (bool(schedule.get("needs")), join(b, "schedule", "needs"), "needs"),
            (bool(schedule.get("after")), join(b, "schedule", "after"), "after"),
            (schedule.get("background") is True, join(b, "schedule", "background"), "background"),
            (
                "recordAs" in as_dict(io.get("output")),
                join(b, "io", "output", "recordAs"),
                "io.output.recordAs",
            ),
            ("guard" in r, join(b, "guard"), "guard"),
            (story, join(b, "io", "visibility"), "io.visibility: story"),
        ]
        for present, where, what in conflicts:
            if present:
                ctx.error(
                    f, where, "subagent-only-conflict", f"a subagentOnly runtime allows no {what}"
                )
        if "function" in r:
            ctx.error(
                f,
                join(b, "function"),
                "subagent-only-not-agent",
                "a subagentOnly runtime must be an agent",
            )
    if trigger_type == "event" and not trigger.get("topic"):
        ctx.error(
            f,
            join(b, "schedule", "trigger", "topic"),
            "trigger-topic-missing",
            "an event trigger needs a topic",
        )
    if trigger_type == "auto" and not subagent and "stage" not in schedule:
        ctx.error(
            f,
            join(b, "schedule", "stage"),
            "auto-trigger-needs-stage",
            "an auto-triggered runtime (the default) needs schedule.stage",
        )
    if "every" in schedule and trigger_type != "auto":
        why = (
            "a subagentOnly runtime is triggered manually"
            if subagent
            else f"this trigger is {trigger_type}"
        )
        ctx.error(
            f,
            join(b, "schedule", "every"),
            "every-not-auto",
            f"schedule.every applies only to auto triggers; {why}",
        )
    if schedule.get("background") is True and trigger_type == "auto" and not subagent:
        ctx.error(
            f,
            join(b, "schedule", "background"),
            "background-not-auto",
            "background applies to manual or event activations; use detached for an auto runtime",
        )
    detached = schedule.get("detached")
    if detached is True or isinstance(detached, dict):
        if stage not in DETACHED_STAGES:
            ctx.error(
                f,
                join(b, "schedule", "detached"),
                "detached-stage",
                f"detached runtimes must run on stage post-turn or audit, not {stage or 'no stage'}",
            )
        options = as_dict(detached)
        wait = options.get("maxSettleWaitMs")
        if isinstance(wait, int) and not isinstance(wait, bool) and wait > MAX_SETTLE_WAIT_MS:
            ctx.error(
                f,
                join(b, "schedule", "detached", "maxSettleWaitMs"),
                "settle-wait-too-long",
                f"maxSettleWaitMs is {wait}; the most is {MAX_SETTLE_WAIT_MS}",
            )
        if "maxSettleWaitMs" in options and options.get("settle") is not True:
            ctx.error(
                f,
                join(b, "schedule", "detached", "maxSettleWaitMs"),
                "settle-wait-without-settle",
                "maxSettleWaitMs requires settle: true",
            )
    for key in ("needs", "after"):
        for i, dep in items(schedule.get(key)):
            where = join(b, "schedule", key, i)
            if isinstance(dep, str):
                if "@" in dep:
                    check_contract(ctx, dep, file=f, path=where)
                # runtime references are checked by check_graph
            elif isinstance(dep, dict):
                if "contract" in dep:
                    check_contract(ctx, dep.get("contract"), file=f, path=join(where, "contract"))
                if key == "needs" and dep.get("scope") == "session" and stage != "setup":
                    ctx.error(
                        f,
                        join(where, "scope"),
                        "needs-session-scope",
                        "scope: session is valid only on stage setup",
                    )

    # --- io
    for name, binding in entries(io.get("inputs")):
        binding = as_dict(binding)
        where = join(b, "io", "inputs", name)
        source = as_dict(binding.get("from"))
        if "contract" in source:
            check_contract(
                ctx, source.get("contract"), file=f, path=join(where, "from", "contract")
            )
        if "kernel" in source:
            for extra in ("scope", "select", "required", "accepts", "recordAs"):
                if extra in binding:
                    ctx.error(
                        f,
                        join(where, extra),
                        "kernel-input-extra-field",
                        f"a kernel input takes no {extra}",
                    )
        if binding.get("scope") == "committed":
            if "recordAs" not in binding:
                ctx.error(
                    f,
                    join(where, "recordAs"),
                    "committed-input-needs-record-as",
                    "a committed input needs recordAs",
                )
            if "select" in binding:
                ctx.error(
                    f,
                    join(where, "select"),
                    "committed-input-select",
                    "select is not allowed with scope: committed; committed inputs read the whole export",
                )
        select = binding.get("select")
        selectable = "kernel" not in source and binding.get("scope") != "committed"
        if isinstance(select, str) and selectable and not is_pointer(select):
            ctx.error(
                f,
                join(where, "select"),
                "select-not-pointer",
                f'select {select!r} is not a JSON Pointer (RFC 6901): write "" for the whole '
                "value or /field/0, with ~0 for ~ and ~1 for / inside a name",
            )
        if story and "contract" in source and binding.get("required") is not False:
            ctx.error(
                f,
                join(where, "required"),
                "story-contract-input-required",
                "a story runtime must set required: false on contract inputs",
            )
        accepts = binding.get("accepts")
        if isinstance(accepts, str):
            if accepts.startswith("contract:"):
                check_contract(
                    ctx, accepts[len("contract:") :], file=f, path=join(where, "accepts")
                )
            else:
                ctx.check_path(accepts, file=f, path=join(where, "accepts"), also_from=rt.rel_dir)
    for i, block in items(io.get("selfData")):
        namespace = as_dict(block).get("namespace")
        if isinstance(namespace, str) and namespaces is not None and namespace not in namespaces:
            ctx.error(
                f,
                join(b, "io", "selfData", i, "namespace"),
                "namespace-undeclared",
                f"{namespace!r} is not one of this package's data namespaces (contributes.data or datasets)",
            )
    if "payloadSchema" in io:
        ctx.check_path(
            io.get("payloadSchema"),
            file=f,
            path=join(b, "io", "payloadSchema"),
            also_from=rt.rel_dir,
        )
    output = as_dict(io.get("output"))
    if "schema" in output:
        ctx.check_path(
            output.get("schema"),
            file=f,
            path=join(b, "io", "output", "schema"),
            also_from=rt.rel_dir,
        )
    if "contract" in output:
        check_contract(
            ctx, output.get("contract"), file=f, path=join(b, "io", "output", "contract")
        )
    if "recordAs" in output and "schema" not in output:
        ctx.error(
            f,
            join(b, "io", "output", "schema"),
            "record-as-needs-schema",
            "io.output.recordAs requires io.output.schema",
        )
    if io.get("concealed") is True and story:
        ctx.error(
            f,
            join(b, "io", "concealed"),
            "concealed-story",
            "concealed is not allowed with visibility: story",
        )

    # --- agent
    if isinstance(agent, dict):
        check_agent(ctx, rt, agent, story=story, tools=tools, datasets=datasets)

    check_http_permissions(
        ctx, as_dict(r.get("permissions")).get("http"), file=f, path=join(b, "permissions", "http")
    )
    effects = as_dict(r.get("effects"))
    for key in ("reads", "writes"):
        seen: set[str] = set()
        for i, entry in items(effects.get(key)):
            if isinstance(entry, str):
                if entry in seen:
                    ctx.error(
                        f,
                        join(b, "effects", key, i),
                        "duplicate-effect",
                        f"{entry!r} is listed twice",
                    )
                seen.add(entry)
