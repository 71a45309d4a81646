"""An agent runtime's `agent` section: its model slot, loop, history, tools (their names and the
namespaces they may write) and prompt.
"""

from __future__ import annotations

from typing import Any

from catalogue.manifest.context import Context, RuntimeDoc
from catalogue.manifest.rules.common import (
    DEFAULT_STORY_TIMEOUT_MS,
    DEFAULT_TIMEOUT_MS,
    as_dict,
    check_contract,
    items,
    offered_dataset_tools,
)
from core.pointer import join


def declared_namespaces(contributes: dict[str, Any]) -> set[str] | None:
    data, datasets = contributes.get("data"), contributes.get("datasets")
    if not isinstance(data, dict | None) or not isinstance(datasets, dict | None):
        return None
    return set(data or {}) | set(datasets or {})


def check_tool_names(
    ctx: Context, names: Any, tools: set[str] | None, *, file: str, path: str
) -> None:
    if tools is None:
        return
    for i, name in items(names):
        if isinstance(name, str) and name not in tools:
            ctx.error(
                file,
                join(path, i),
                "tool-undeclared",
                f"the tool {name!r} is not listed in contributes.tools",
            )


def check_agent(
    ctx: Context,
    rt: RuntimeDoc,
    agent: dict[str, Any],
    *,
    story: bool,
    tools: set[str] | None,
    datasets: Any,
) -> None:
    f = rt.file
    a = join(rt.base, "agent")
    if "finishWith" in agent and "completion" in agent:
        ctx.error(
            f,
            join(a, "completion"),
            "finish-with-and-completion",
            "use finishWith or completion, not both",
        )
    agent_tools = as_dict(agent.get("tools"))
    check_tool_names(ctx, agent_tools.get("plugin"), tools, file=f, path=join(a, "tools", "plugin"))
    for i, service in items(agent_tools.get("services")):
        if isinstance(service, dict):
            check_contract(
                ctx,
                service.get("contract"),
                file=f,
                path=join(a, "tools", "services", i, "contract"),
            )
        else:
            check_contract(ctx, service, file=f, path=join(a, "tools", "services", i))
    for i, selection in items(agent_tools.get("datasets")):
        if isinstance(selection, str):
            name, where, wanted = selection, join(a, "tools", "datasets", i), []
        elif isinstance(selection, dict):
            name, where = selection.get("dataset"), join(a, "tools", "datasets", i, "dataset")
            wanted = list(items(selection.get("tools")))
        else:
            continue
        if not isinstance(name, str):
            continue
        if not isinstance(datasets, dict):
            continue
        if name not in datasets:
            ctx.error(
                f, where, "dataset-unknown", f"{name!r} is not declared in contributes.datasets"
            )
            continue
        offered = offered_dataset_tools(as_dict(datasets[name]))
        for j, tool in wanted:
            if isinstance(tool, str) and tool not in offered:
                ctx.error(
                    f,
                    join(a, "tools", "datasets", i, "tools", j),
                    "dataset-tool-not-offered",
                    f"the dataset {name!r} does not offer {tool!r} (it offers {', '.join(offered)})",
                )
    loop = as_dict(agent.get("loop"))
    for key in ("stream", "steering"):
        if loop.get(key) is True and not story:
            ctx.error(
                f,
                join(a, "loop", key),
                f"{key}-needs-story",
                f"loop.{key} needs io.visibility: story",
            )
    profile = loop.get("profile", "story" if story else "system")
    streaming = loop.get("stream", profile == "story")
    if loop.get("truncation") == "accept" and streaming is not True:
        ctx.error(
            f,
            join(a, "loop", "truncation"),
            "truncation-accept-needs-stream",
            "truncation: accept needs a streaming loop (story visibility, or stream: true)",
        )
    reserve = as_dict(loop.get("finalizer")).get("deadlineReserveMs")
    timeout = loop.get("timeoutMs", DEFAULT_STORY_TIMEOUT_MS if story else DEFAULT_TIMEOUT_MS)
    if (
        isinstance(reserve, int)
        and isinstance(timeout, int)
        and not isinstance(reserve, bool)
        and reserve > 0
        and reserve >= timeout
    ):
        ctx.error(
            f,
            join(a, "loop", "finalizer", "deadlineReserveMs"),
            "deadline-reserve-too-large",
            f"deadlineReserveMs ({reserve}) must be smaller than timeoutMs ({timeout})",
        )
