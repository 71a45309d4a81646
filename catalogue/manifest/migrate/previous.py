"""The rules for Covel's previous manifest format: type/kind, optional, source kinds, runtime
types, the older schedule and agent fields."""

from __future__ import annotations

import os
from typing import Any

from ruamel.yaml.comments import CommentedMap

from catalogue.manifest.migrate.docs import _Ctx
from catalogue.manifest.migrate.model import _SOURCE_KINDS
from catalogue.manifest.migrate.yamledit import (
    _attach,
    _comment_before,
    _insert_after,
    _leading,
    _pop_own_lines,
    _remove,
    _rename,
    _trailing,
)

# ------------------------------------------------------------------ the rules


def _migrate_root(ctx: _Ctx) -> None:
    data = ctx.doc.data
    if "type" in data:
        written = data["type"]
        kind = {"core": "core", "core-plugin": "core", "plugin": "plugin"}.get(str(written))
        if kind is None:
            ctx.refuse(
                "/type",
                "type-unknown",
                f"type {written!r} has no current kind (core or plugin)",
            )
        elif "kind" in data and data["kind"] != kind:
            ctx.refuse(
                "/type",
                "type-and-kind",
                f"type {written!r} and kind {data['kind']!r} disagree; keep one",
            )
        elif "kind" in data:
            _remove(data, "type")
            ctx.note("/type", "type removed: kind already says the same")
        else:
            _rename(data, "type", "kind", kind)
            ctx.note("/kind", f"type: {written} is now kind: {kind}")
    if "optional" in data:
        optional = data["optional"]
        if not isinstance(optional, list):
            ctx.refuse("/optional", "optional-not-list", "optional must be a list of contract IDs")
        else:
            _remove(data, "optional")
            ctx.note(
                "/optional",
                "optional removed: a contract a runtime reads and requires does not list is "
                "optional in the current format (" + ", ".join(map(str, optional)) + ")",
            )
    contributes = data.get("contributes")
    if isinstance(contributes, CommentedMap):
        data_decl = contributes.get("data")
        if isinstance(data_decl, CommentedMap):
            for namespace, decl in data_decl.items():
                if not isinstance(decl, CommentedMap):
                    continue
                authoring = decl.get("authoring")
                source = authoring.get("source") if isinstance(authoring, CommentedMap) else None
                if isinstance(source, CommentedMap) and "kind" in source:
                    _source_kind(ctx, source, f"/contributes/data/{namespace}/authoring/source")
    runtime = data.get("runtime")
    if isinstance(runtime, CommentedMap):
        _migrate_runtime(ctx, runtime, "/runtime")


def _source_kind(ctx: _Ctx, source: CommentedMap, where: str) -> None:
    kind = source["kind"]
    path = source.get("path")
    suffixes = _SOURCE_KINDS.get(str(kind))
    if suffixes is None:
        ctx.refuse(f"{where}/kind", "source-kind-unknown", f"source.kind {kind!r} is not known")
        return
    if not isinstance(path, str):
        ctx.refuse(f"{where}/kind", "source-kind-without-path", "source.kind needs a path")
        return
    stem = path.rstrip("/").rsplit("/", 1)[-1]
    suffix = os.path.splitext(stem)[1]
    if suffix not in suffixes:
        ctx.refuse(
            f"{where}/kind",
            "source-kind-disagrees",
            f"source.kind {kind!r} and the path {path!r} disagree: the current format reads a "
            "source by its path (.yaml/.yml, .json, or a directory for media); fix the path",
        )
        return
    _remove(source, "kind")
    ctx.note(f"{where}/kind", f"source.kind: {kind} removed: the path {path!r} says the same")


def _migrate_runtime(ctx: _Ctx, rt: CommentedMap, base: str) -> None:
    if "type" in rt:
        written = rt["type"]
        if written == "function":
            if "function" not in rt:
                ctx.refuse(
                    f"{base}/type",
                    "function-without-block",
                    "type: function needs a function block (function.handler)",
                )
            elif "agent" in rt:
                ctx.refuse(f"{base}/agent", "function-with-agent", "a function has no agent block")
            else:
                _remove(rt, "type")
                ctx.note(f"{base}/type", "type: function removed: the function block says it")
        elif written == "agent":
            if "function" in rt:
                ctx.refuse(
                    f"{base}/function", "agent-with-function", "an agent has no function block"
                )
            else:
                _remove(rt, "type")
                ctx.note(
                    f"{base}/type",
                    "type: agent removed: a runtime without a function block is an agent",
                )
        else:
            ctx.refuse(
                f"{base}/type", "type-unknown", f"runtime type {written!r} is not agent or function"
            )
    schedule = rt.get("schedule")
    if isinstance(schedule, CommentedMap):
        _migrate_schedule(ctx, schedule, f"{base}/schedule")
    io_ = rt.get("io")
    if isinstance(io_, CommentedMap) and io_.get("visibility") == "plugin":
        io_["visibility"] = "system"
        ctx.note(f"{base}/io/visibility", "io.visibility: plugin is now system")
    agent = rt.get("agent")
    if isinstance(agent, CommentedMap):
        _migrate_agent(ctx, agent, f"{base}/agent")


def _migrate_schedule(ctx: _Ctx, schedule: CommentedMap, where: str) -> None:
    trigger = schedule.get("trigger")
    trigger_type = "auto"
    if trigger == "scheduled":
        _remove(schedule, "trigger")
        ctx.note(f"{where}/trigger", "trigger: scheduled removed: auto is the default trigger")
    elif isinstance(trigger, CommentedMap):
        trigger_type = str(trigger.get("type", "auto"))
        if trigger_type in ("scheduled", "auto") and "type" in trigger:
            _remove(trigger, "type")
            ctx.note(
                f"{where}/trigger/type",
                f"trigger.type: {trigger_type} removed: auto is the default trigger",
            )
            trigger_type = "auto"
        if "interval" in trigger:
            interval = trigger["interval"]
            if trigger_type != "auto":
                ctx.refuse(
                    f"{where}/trigger/interval",
                    "interval-not-auto",
                    f"trigger.interval only counts for a scheduled trigger, not {trigger_type}",
                )
            elif "every" in schedule and schedule["every"] != interval:
                ctx.refuse(
                    f"{where}/trigger/interval",
                    "interval-and-every",
                    "trigger.interval and schedule.every disagree",
                )
            else:
                _remove(trigger, "interval")
                if interval != 1 and "every" not in schedule:
                    _insert_after(schedule, ("stage",), "every", interval)
                    ctx.note(f"{where}/every", f"trigger.interval: {interval} is now every")
                else:
                    ctx.note(
                        f"{where}/trigger/interval",
                        "trigger.interval: 1 removed: every turn is the default",
                    )
        if not trigger:
            _remove(schedule, "trigger")
    manual = schedule.get("manual")
    if isinstance(manual, CommentedMap):
        execution = manual.get("execution")
        extra = [k for k in manual if k != "execution"]
        if extra:
            ctx.refuse(f"{where}/manual/{extra[0]}", "no-current-equivalent", "unknown field")
            return
        if execution == "background" and trigger_type in ("manual", "event"):
            if schedule.get("background") is False:
                ctx.refuse(
                    f"{where}/manual",
                    "manual-and-background",
                    "manual.execution: background and background: false disagree",
                )
                return
            position = list(schedule).index("manual")
            _remove(schedule, "manual")
            if "background" not in schedule:
                schedule.insert(position, "background", True)
            ctx.note(f"{where}/background", "manual.execution: background is now background: true")
        elif execution in ("sync", "background"):
            _remove(schedule, "manual")
            why = (
                "the caller waits by default"
                if execution == "sync"
                else f"Covel ignored it for a {trigger_type} trigger"
            )
            ctx.note(f"{where}/manual", f"manual.execution: {execution} removed: {why}")
        else:
            ctx.refuse(
                f"{where}/manual/execution",
                "execution-unknown",
                f"manual.execution {execution!r} is not sync or background",
            )
    completion = schedule.get("completion")
    if isinstance(completion, CommentedMap):
        _turn_completion(ctx, schedule, completion, where)


def _turn_completion(ctx: _Ctx, schedule: CommentedMap, completion: CommentedMap, where: str):
    at = f"{where}/completion"
    known = {"mode", "settle", "maxSettleWaitMs", "maxQueueMs", "maxExecutionMs"}
    fixed = {"overlap": "serial", "stalePolicy": "reject"}  # the only values Covel allowed
    for key in completion:
        if key not in known and key not in fixed:
            ctx.refuse(f"{at}/{key}", "no-current-equivalent", f"completion.{key} is not known")
            return
        if key in fixed and completion[key] != fixed[key]:
            ctx.refuse(
                f"{at}/{key}",
                "no-current-equivalent",
                f"completion.{key}: {completion[key]!r} has no current equivalent",
            )
            return
    mode = completion.get("mode", "await")
    if "detached" in schedule:
        ctx.refuse(at, "completion-and-detached", "schedule.completion and detached are both set")
        return
    options = CommentedMap()
    if completion.get("settle") == "before-next-execution":
        options["settle"] = True
    elif "settle" in completion:
        ctx.refuse(f"{at}/settle", "settle-unknown", f"settle {completion['settle']!r}")
        return
    for key in ("maxSettleWaitMs", "maxQueueMs", "maxExecutionMs"):
        if key in completion:
            options[key] = completion[key]
    if mode == "detached":
        value: Any = options if options else True
        position = list(schedule).index("completion")
        token = _trailing(completion) or _pop_own_lines(schedule, "completion")
        schedule.ca.items.pop("completion", None)
        del schedule["completion"]
        schedule.insert(position, "detached", value)
        if token is not None:
            _attach(schedule, "detached", token)
        ctx.note(f"{where}/detached", "completion.mode: detached is now detached")
    elif mode == "await" and not options:
        _remove(schedule, "completion")
        ctx.note(at, "completion.mode: await removed: the turn waits by default")
    else:
        ctx.refuse(
            at, "completion-options-not-detached", "detached options need completion.mode: detached"
        )


def _migrate_agent(ctx: _Ctx, agent: CommentedMap, where: str) -> None:
    llm = agent.get("llm")
    if "llm" in agent:
        if not isinstance(llm, CommentedMap):
            ctx.refuse(f"{where}/llm", "llm-not-mapping", "agent.llm must be a mapping")
            return
        for key in llm:
            if key not in ("reasoningEffort", "toolChoice"):
                ctx.refuse(
                    f"{where}/llm/{key}",
                    "no-current-equivalent",
                    f"agent.llm.{key} has no place in the current format",
                )
                return
        effort = llm.get("reasoningEffort")
        if "reasoningEffort" in llm and effort != "disabled":
            ctx.refuse(
                f"{where}/llm/reasoningEffort",
                "no-current-equivalent",
                f"reasoningEffort {effort!r}: only disabled (reasoning: false) maps",
            )
            return
        if (
            "toolChoice" in llm
            and "toolChoice" in agent
            and agent["toolChoice"] != llm["toolChoice"]
        ):
            ctx.refuse(
                f"{where}/llm/toolChoice",
                "tool-choice-twice",
                "agent.llm.toolChoice and agent.toolChoice disagree",
            )
            return
        if "reasoningEffort" in llm and agent.get("reasoning") not in (None, False):
            ctx.refuse(
                f"{where}/llm/reasoningEffort",
                "reasoning-twice",
                "agent.llm.reasoningEffort: disabled and agent.reasoning: true disagree",
            )
            return
        token = _trailing(llm) or _pop_own_lines(agent, "llm")
        leading = _leading(agent, "llm")
        position = list(agent).index("llm")
        agent.ca.items.pop("llm", None)
        del agent["llm"]
        added = []
        if "toolChoice" in llm and "toolChoice" not in agent:
            agent.insert(position, "toolChoice", llm["toolChoice"])
            position += 1
            added.append("toolChoice")
        if "reasoningEffort" in llm and "reasoning" not in agent:
            agent.insert(position, "reasoning", False)
            added.append("reasoning")
        if leading is not None and added:
            _comment_before(agent, added[0], leading[0], max(leading[1] - 2, 0))
        if token is not None:
            keys = list(agent)
            last = added[-1] if added else (keys[position - 1] if position else None)
            if last is not None:
                _attach(agent, last, token)
        ctx.note(
            f"{where}/llm",
            "agent.llm is now "
            + (" and ".join(f"agent.{k}" for k in added) if added else "nothing (it was empty)"),
        )
    loop = agent.get("loop")
    if isinstance(loop, CommentedMap) and "completion" in loop:
        if "completion" in agent or "finishWith" in agent:
            ctx.refuse(
                f"{where}/loop/completion",
                "completion-twice",
                "agent.loop.completion and agent.completion/finishWith are both set",
            )
            return
        completion = loop["completion"]
        token = _trailing(loop) if list(loop)[-1] == "completion" else None
        loop.ca.items.pop("completion", None)
        del loop["completion"]
        position = list(agent).index("loop")
        agent.insert(position, "completion", completion)
        if not loop:
            agent.ca.items.pop("loop", None)
            del agent["loop"]
        if token is not None:
            keys = list(agent)
            _attach(agent, keys[min(position + 1, len(keys) - 1)], token)
        ctx.note(f"{where}/completion", "agent.loop.completion is now agent.completion")
