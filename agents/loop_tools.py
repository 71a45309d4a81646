"""The tool calls of one agent step: hooks around each call, deferred tools, loop detection.

A mixin of agents.loop._Loop (the state it reads is set up there).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import Any

from agents.gateway import ChatResult
from agents.loop_types import (
    LOAD_TOOLS,
    MISSING_OUTPUT,
    RUNTIME_DONE,
    AgentRun,
    ToolOutcome,
    tool_text,
)

logger = logging.getLogger("covel.agents")


class ToolCalls:
    def handle_tools(self, result: ChatResult) -> AgentRun | None:
        self.messages.append(
            {
                "role": "assistant",
                "content": result.content,
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments},
                    }
                    for c in result.tool_calls
                ],
            }
        )
        for call in result.tool_calls:
            outcome = self.guarded_call(call.id, call.name, call.arguments)
            self.messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": tool_text(outcome)}
            )
            record = {"name": call.name, "ok": outcome.ok, "error": outcome.error}
            if not self.config.concealed:
                record["arguments"] = call.arguments
            self.run.tool_calls.append(record)
            done = self.after_call(call.name, outcome)
            if done is not None:
                return done
            if self.terminated:
                break  # the reply's later tool calls never run
        if self.terminated:
            return self.end_by_hook(result)
        if self.config.loop_detection and self.is_looping(result):
            return self.on_loop()
        return None

    def after_call(self, name: str, outcome: ToolOutcome) -> AgentRun | None:
        """What one finished tool call means for the run: its end, or None to go on."""
        if not outcome.ok or name == LOAD_TOOLS:
            return None  # loading tools is bookkeeping, never the run's work
        if name == RUNTIME_DONE:
            # runtime-done completes an explicit run; it never counts as tool use.
            return self.run.succeed(None) if self.config.completion_require != "tool-use" else None
        self.any_business_success = True
        self.last_output = outcome.content
        if name == self.config.finish_with or name in self.config.after_tools:
            return self.run.succeed(outcome.content)
        return None

    def guarded_call(self, call_id: str, name: str, raw_arguments: str) -> ToolOutcome:
        """PreToolUse may refuse the call (the model reads Covel's "pre-tool-use hook aborted:
        <reason>" as the tool's result) or
        change it (replace.toolCall); PostToolUse may replace the result the model reads
        (replace.result) or end the run (replace.terminate: see end_by_hook)."""
        tool_call = {"id": call_id, "name": name, "arguments": raw_arguments}
        pre = self.hook("PreToolUse", {"toolCall": tool_call})
        if pre is not None and pre.aborted:
            return ToolOutcome(False, error=f"pre-tool-use hook aborted: {pre.reason}")
        if pre is not None and isinstance(pre.replaced.get("toolCall"), dict):
            tool_call = {**tool_call, **pre.replaced["toolCall"]}
        outcome = self.call_tool(str(tool_call["name"]), str(tool_call["arguments"]))
        post = self.hook(
            "PostToolUse", {"toolCall": tool_call, "result": covel_tool_result(tool_call, outcome)}
        )
        if post is None or post.aborted:
            return outcome
        if "result" in post.replaced:
            outcome = patched_outcome(outcome, post.replaced["result"])
        if post.replaced.get("terminate") is True:
            self.terminated = True
        return outcome

    def end_by_hook(self, result: ChatResult) -> AgentRun:
        """A PostToolUse hook said terminate: as in Covel, the reply's later tool calls do not run
        and no further request is made. The output is the reply's prose when it has some (checked
        against io.output.schema, with no repair request), else the last successful tool
        result; a run whose tool calls all failed fails."""
        if result.content:
            done = self.finish_with_text(result.content, repair=False)
            assert done is not None  # without repair it always ends the run
            return done
        if self.last_output is not MISSING_OUTPUT:
            return self.run.succeed(self.last_output)
        return self.run.fail(
            "tool-failed",
            "a PostToolUse hook ended the run before any tool call succeeded",
        )

    def call_tool(self, name: str, raw_arguments: str) -> ToolOutcome:
        if name in self.deferred:
            return ToolOutcome(
                False,
                error=f"tool {name!r} is deferred: call {LOAD_TOOLS} with its name first",
            )
        offered = {t.name for t in self.offered()}
        if name not in offered:
            return ToolOutcome(
                False, error=f"unknown tool {name!r}: it is not offered to this runtime"
            )
        try:
            arguments = json.loads(raw_arguments or "{}")
        except ValueError:
            return ToolOutcome(False, error="tool arguments are not valid JSON")
        if not isinstance(arguments, dict):
            return ToolOutcome(False, error="tool arguments must be a JSON object")
        if name == LOAD_TOOLS and LOAD_TOOLS not in {t.name for t in self.tools}:
            return self.load_tools(arguments)
        try:
            return self.execute(name, arguments)
        except Exception as exc:  # a tool's failure is reported to the model, never raised
            logger.warning("tool %s failed: %s", name, exc)
            return ToolOutcome(False, error=str(exc))

    def load_tools(self, arguments: dict[str, Any]) -> ToolOutcome:
        names = arguments.get("names")
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            return ToolOutcome(
                False, error="load-tools needs names: a non-empty list of tool names"
            )
        names = list(dict.fromkeys(names))  # a name asked for twice is loaded once
        unknown = [n for n in names if n not in self.deferred]
        if unknown:
            return ToolOutcome(
                False,
                error=f"not deferred tools of this runtime: {', '.join(unknown)}; "
                f"deferred: {', '.join(self.deferred) or 'none left'}",
            )
        for name in names:
            self.tools.append(self.deferred.pop(name))
            self.run.loaded_tools.append(name)
        return ToolOutcome(True, {"loaded": names, "stillDeferred": list(self.deferred)})

    def is_looping(self, result: ChatResult) -> bool:
        signature = json.dumps([(c.name, c.arguments) for c in result.tool_calls])
        self.repeats.append(signature)
        tail = self.repeats[-self.config.loop_detection :]
        return len(tail) == self.config.loop_detection and len(set(tail)) == 1

    def on_loop(self) -> AgentRun | None:
        if self.budgets["loopPerturbation"] > 0:
            self.budgets["loopPerturbation"] -= 1
            self.repeats.clear()
            self.messages.append(
                {
                    "role": "user",
                    "content": "You are repeating the same tool call. Change your approach or finish.",
                }
            )
            return None
        if self.config.fallback == "fail":
            return self.run.fail(
                "tool-loop", f"the same tool call repeated {self.config.loop_detection} times"
            )
        self.tools_off = True
        self.messages.append(
            {"role": "user", "content": "Stop calling tools and give your answer now."}
        )
        return None


def covel_tool_result(tool_call: dict[str, Any], outcome: ToolOutcome) -> dict[str, Any]:
    """PostToolUse's `result`, Covel's ToolCallResult (agent-loop/tool-executor.ts): the text the
    model reads, the parsed value, and success (a failure's text is {success: false, error})."""
    text = tool_text(outcome)
    if not outcome.ok:
        text = json.dumps({"success": False, "error": outcome.error})
    return {
        "toolCallId": tool_call["id"],
        "name": tool_call["name"],
        "result": text,
        "parsedResult": outcome.content if outcome.ok else None,
        "success": outcome.ok,
    }


def patched_outcome(outcome: ToolOutcome, replaced: Any) -> ToolOutcome:
    """What the model reads after a PostToolUse replace.result.

    Covel's shape (a ToolCallResult: `result` the text, `parsedResult`, `success`) is read as
    such; any other value is the hub's older form, the value the model reads."""
    shaped = isinstance(replaced, dict) and bool(
        {"result", "parsedResult", "success"} & set(replaced)
    )
    if not shaped:
        return dataclasses.replace(outcome, content=replaced)
    ok = replaced.get("success", outcome.ok) is True
    if isinstance(replaced.get("result"), str):
        content: Any = replaced["result"]
    elif "parsedResult" in replaced:
        content = replaced["parsedResult"]
    else:
        content = outcome.content
    if ok:
        return ToolOutcome(True, content)
    return ToolOutcome(False, error=content if isinstance(content, str) else outcome.error)
