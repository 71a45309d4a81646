"""The agent loop: a model reads the prompt and calls tools until the runtime is complete.

It follows the manifest's `runtime.agent` block: toolChoice, reasoning, finishWith / completion,
loop limits (maxSteps, timeoutMs, retries, loopDetection and its fallback), the correction
budgets, the finalizer, truncation, output validation and repair, and `concealed`.

The loop knows nothing of sessions: the caller assembles the messages, lists the tools the
runtime may call and executes them (through the JavaScript host or a builtin), so the loop can
be tested against a stand-in model alone.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agents.gateway import ChatResult, Endpoint, Limits, ModelError, chat
from agents.loop_finish import Completion
from agents.loop_tools import ToolCalls
from agents.loop_types import (  # re-exported: callers import the loop's vocabulary from here
    LOAD_TOOLS,
    MISSING_OUTPUT,
    REPLY_DATA_FIELDS,
    RUNTIME_DONE,
    AgentRun,
    LoopConfig,
    ToolExecutor,
    ToolOutcome,
    ToolSpec,
    load_tools_spec,
)

__all__ = [
    "LOAD_TOOLS",
    "REPLY_DATA_FIELDS",
    "RUNTIME_DONE",
    "AgentRun",
    "LoopConfig",
    "ToolExecutor",
    "ToolOutcome",
    "ToolSpec",
    "load_tools_spec",
    "run_agent",
]

logger = logging.getLogger("covel.agents")


class _Loop(ToolCalls, Completion):
    """One run: the steps and the model requests; tool calls and completion are the mixins'."""

    def __init__(
        self,
        config: LoopConfig,
        endpoint: Endpoint,
        messages: list[dict[str, Any]],
        tools: list[ToolSpec],
        execute: ToolExecutor,
        output_schema: Mapping[str, Any] | None,
        on_text: Callable[[str], None] | None,
        clock: Callable[[], float],
        deferred: Sequence[ToolSpec] = (),
        hooks: Any = None,
    ) -> None:
        self.config = config
        self.hooks = hooks  # lifecycle hooks (sessions.hooks.AgentHooks), or None
        self.endpoint = endpoint
        self.messages = list(messages)
        self.tools = list(tools)
        # Deferred tools are not sent until the model loads them by name with load-tools.
        self.deferred: dict[str, ToolSpec] = {t.name: t for t in deferred}
        self.execute = execute
        self.output_schema = output_schema
        self.on_text = on_text
        self.clock = clock
        self.budgets = dict(config.corrections)
        self.run = AgentRun()
        self.started = clock()
        self.streamed_ms = (
            0.0  # time spent receiving streamed text does not count against timeoutMs
        )
        self.repeats: list[str] = []
        self.tools_off = False
        self.terminated = False  # a PostToolUse hook ended the tool loop (replace.terminate)
        self.last_output: Any = MISSING_OUTPUT  # the latest successful business tool result
        self.any_business_success = False
        if not config.reasoning and not endpoint.reasoning_off:
            # Never ignored in silence: the run says its reasoning: false had no effect.
            notice = (
                f"reasoning: false could not be turned off for slot {endpoint.slot!r}: the slot "
                "has no reasoning-off fragment, so its requests go out unchanged"
            )
            self.run.warnings.append(notice)  # agents.runtime logs the run's warnings

    # --- time ------------------------------------------------------------------------------
    def elapsed_ms(self) -> float:
        return (self.clock() - self.started) * 1000 - self.streamed_ms

    def limits(self) -> Limits:
        return Limits(
            call_timeout_ms=self.config.call_timeout_ms,
            first_token_timeout_ms=self.config.first_token_timeout_ms,
            idle_timeout_ms=self.config.idle_timeout_ms,
            max_retries=self.config.max_retries,
        )

    # --- model calls -----------------------------------------------------------------------
    def offered(self) -> list[ToolSpec]:
        if not self.deferred:
            return self.tools
        return [*self.tools, load_tools_spec(self.deferred.values())]

    def hook(self, event: str, payload: dict[str, Any]) -> Any:
        """Dispatch a lifecycle hook; its outcome, or None when no package hooks event."""
        if self.hooks is None or not self.hooks.wants(event):
            return None
        return self.hooks(event, payload)

    def ask(self, *, tools_off: bool) -> ChatResult:
        offer = self.offered()
        tools = None if tools_off or not offer else [t.as_openai() for t in offer]
        choice = None if tools is None else self.config.forced_choice
        messages, stream = self.messages, self.config.stream
        # PreLLMCall rewrites this one request, never the run's transcript; an abort changes
        # nothing (Covel: transform-only).
        pre = self.hook("PreLLMCall", {"messages": messages, "stream": stream, "tools": tools})
        if pre is not None and not pre.aborted:
            if isinstance(pre.replaced.get("messages"), list):
                messages = pre.replaced["messages"]
            if isinstance(pre.replaced.get("stream"), bool):
                stream = pre.replaced["stream"]
        before = self.clock()
        result = chat(
            self.endpoint,
            messages=messages,
            tools=tools,
            tool_choice=choice,
            stream=stream,
            limits=self.limits(),
            on_text=None if self.config.concealed else self.on_text,
            reasoning=self.config.reasoning,
        )
        if stream and result.content:
            self.streamed_ms += (self.clock() - before) * 1000
        self.trace_call(tools_off=tools is None, result=result)
        return result

    def reviewed(self, result: ChatResult) -> tuple[ChatResult, str | None]:
        """PostLLMResponse: a hook may patch the reply (replace.response) or turn it down with a
        correction (replace.correction), which costs one of the `review` retries."""
        calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in result.tool_calls]
        response = {
            "content": result.content,
            "toolCalls": calls,
            "finishReason": result.finish_reason,
        }
        outcome = self.hook("PostLLMResponse", {"response": response, "correction": None})
        if outcome is None or outcome.aborted:
            return result, None
        patch = outcome.replaced.get("response")
        if isinstance(patch, dict) and "content" in patch:
            result = dataclasses.replace(result, content=patch["content"])
        correction = outcome.replaced.get("correction")
        return result, str(correction) if isinstance(correction, str) and correction else None

    def trace_call(self, *, tools_off: bool, result: ChatResult) -> None:
        if self.config.concealed:
            # A concealed runtime leaves no prompt, reply or arguments in traces.
            entry: dict[str, Any] = {
                "toolsOff": tools_off,
                "finishReason": result.finish_reason,
                "concealed": True,
            }
        else:
            entry = {
                "toolsOff": tools_off,
                "finishReason": result.finish_reason,
                "content": result.content,
                "toolCalls": [
                    {"name": c.name, "arguments": c.arguments} for c in result.tool_calls
                ],
                "attempts": result.attempts,
            }
        self.run.llm_calls.append(entry)

    # --- the loop --------------------------------------------------------------------------
    def go(self) -> AgentRun:
        try:
            return self.steps()
        except ModelError as error:
            return self.run.fail(error.code, error.message)

    def steps(self) -> AgentRun:
        while True:
            if self.elapsed_ms() >= self.config.timeout_ms:
                return self.run.fail(
                    "timeout", f"runtime exceeded timeoutMs {self.config.timeout_ms}"
                )
            if self.run.steps >= self.config.max_steps:
                return self.finalize("max-steps", f"reached maxSteps {self.config.max_steps}")
            reserve = self.config.deadline_reserve_ms
            if reserve and self.elapsed_ms() >= self.config.timeout_ms - reserve:
                return self.finalize(
                    "deadline", "stopped before the time limit (deadlineReserveMs)"
                )
            self.run.steps += 1
            gate = self.hook("PreStep", {"step": self.run.steps, "maxSteps": self.config.max_steps})
            if gate is not None and gate.aborted:
                return self.run.fail(
                    "hook-aborted", f"a PreStep hook stopped the run: {gate.reason}"
                )
            result, correction = self.reviewed(self.ask(tools_off=self.tools_off))
            if correction and self.budgets.get("review", 0) > 0:
                self.budgets["review"] -= 1
                self.messages.append({"role": "assistant", "content": result.content or ""})
                self.messages.append({"role": "user", "content": correction})
                continue
            if result.truncated and (self.config.truncation == "reject" or not self.config.stream):
                return self.run.fail(
                    "reply-truncated", "the model's reply was cut at the output limit"
                )
            if result.tool_calls and not self.tools_off:
                done = self.handle_tools(result)
                if done is not None:
                    return done
                continue
            done = self.handle_prose(result)
            if done is not None:
                return done


def run_agent(
    *,
    runtime: Mapping[str, Any],
    endpoint: Endpoint,
    messages: list[dict[str, Any]],
    tools: list[ToolSpec],
    execute: ToolExecutor,
    output_schema: Mapping[str, Any] | None = None,
    on_text: Callable[[str], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    deferred: Sequence[ToolSpec] = (),
    hooks: Any = None,
) -> AgentRun:
    """Run one agent runtime to completion or failure. Never raises for model or tool trouble.

    deferred: tools offered only after the model names them in a load-tools call.
    """
    config = LoopConfig.from_runtime(runtime)
    if config.completion_require == "explicit" and RUNTIME_DONE not in {t.name for t in tools}:
        done = ToolSpec(
            RUNTIME_DONE, "Call when the runtime's work is complete.", {"type": "object"}
        )
        tools = [*tools, done]
        inner = execute

        def execute(name: str, args: dict[str, Any]) -> ToolOutcome:
            return ToolOutcome(True, {"done": True}) if name == RUNTIME_DONE else inner(name, args)

    return _Loop(
        config, endpoint, messages, tools, execute, output_schema, on_text, clock, deferred, hooks
    ).go()
