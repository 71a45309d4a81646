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
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from agents.gateway import ChatResult, Endpoint, Limits, ModelError, chat

logger = logging.getLogger("covel.agents")

# Reply fields that look like data writes: a model can only write through tools, so these are
# removed from a reply and logged (the spec's "The model can write only through tools").
REPLY_DATA_FIELDS = (
    "statePatches",
    "pluginData",
    "notifications",
    "assetGenerations",
    "interactions",
    "ui",
)
RUNTIME_DONE = "runtime-done"
MISSING_OUTPUT = object()  # no business tool call has succeeded yet
# The builtin that brings deferred tools into the offer (agent.tools.defer); see docs/agents.md.
LOAD_TOOLS = "load-tools"


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: Mapping[str, Any]

    def as_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
        }


@dataclass(frozen=True)
class ToolOutcome:
    ok: bool
    content: Any = None  # what the model reads back (the tool envelope's model view)
    error: str | None = None


ToolExecutor = Callable[[str, dict[str, Any]], ToolOutcome]


@dataclass(frozen=True)
class LoopConfig:
    """runtime.agent with every default of the spec applied."""

    story: bool
    tool_choice: str | Mapping[str, Any] | None
    finish_with: str | None
    completion_require: str | None
    after_tools: tuple[str, ...]
    max_steps: int
    timeout_ms: int
    call_timeout_ms: int
    first_token_timeout_ms: int
    idle_timeout_ms: int
    max_retries: int
    loop_detection: int
    profile: str
    stream: bool
    truncation: str
    fallback: str
    corrections: Mapping[str, int]
    finalizer_max_steps: bool
    deadline_reserve_ms: int
    concealed: bool
    reasoning: bool = True  # agent.reasoning; false asks the slot to turn reasoning off

    @classmethod
    def from_runtime(cls, runtime: Mapping[str, Any]) -> LoopConfig:
        agent = runtime.get("agent", {}) or {}
        loop = agent.get("loop", {}) or {}
        io = runtime.get("io", {}) or {}
        story = io.get("visibility", "system") == "story"
        profile = loop.get("profile", "story" if story else "system")
        stream = loop.get("stream", profile == "story")
        completion = agent.get("completion", {}) or {}
        corrections = loop.get("corrections", {}) or {}
        finalizer = loop.get("finalizer", {}) or {}
        timeout_ms = loop.get("timeoutMs", 240_000 if story else 120_000)
        return cls(
            story=story,
            tool_choice=agent.get("toolChoice"),
            finish_with=agent.get("finishWith"),
            completion_require=completion.get("require"),
            after_tools=tuple(completion.get("afterTools", ())),
            max_steps=loop.get("maxSteps", 25),
            timeout_ms=timeout_ms,
            call_timeout_ms=loop.get("callTimeoutMs", 120_000 if story else 60_000),
            first_token_timeout_ms=loop.get("firstTokenTimeoutMs", 120_000),
            idle_timeout_ms=loop.get("idleTimeoutMs", 120_000),
            max_retries=loop.get("maxRetries", 1 if story else 3),
            loop_detection=loop.get("loopDetection", 3),
            profile=profile,
            stream=bool(stream),
            truncation=loop.get("truncation", "accept" if profile == "story" else "reject"),
            fallback=loop.get(
                "fallback", "fail" if profile == "system" else "answer-without-tools"
            ),
            corrections={
                "toolUse": corrections.get("toolUse", 1),
                "review": corrections.get("review", 2),
                "loopPerturbation": corrections.get("loopPerturbation", 1),
                "outputRepair": corrections.get("outputRepair", 1),
            },
            finalizer_max_steps=finalizer.get("maxSteps", True),
            deadline_reserve_ms=min(finalizer.get("deadlineReserveMs", 0), timeout_ms // 2),
            concealed=bool(io.get("concealed", False)),
            reasoning=agent.get("reasoning") is not False,
        )

    @property
    def forced_choice(self) -> str | dict[str, Any] | None:
        """finishWith makes the model call a tool on every step unless toolChoice says otherwise."""
        if self.tool_choice is not None:
            return (
                dict(self.tool_choice)
                if isinstance(self.tool_choice, Mapping)
                else self.tool_choice
            )
        return "required" if self.finish_with else None


@dataclass
class AgentRun:
    status: str = "running"  # success | failed
    output: Any = None
    text: str | None = None
    error: str | None = None
    code: str | None = None
    steps: int = 0
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    llm_calls: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # Filled by agents.runtime: what the run's tools did besides their replies.
    events: list[dict[str, Any]] = field(default_factory=list)  # [{topic, payload}]
    notifications: list[dict[str, Any]] = field(default_factory=list)
    forms: list[dict[str, Any]] = field(default_factory=list)
    proposals: list[dict[str, Any]] = field(default_factory=list)  # already staged
    loaded_tools: list[str] = field(default_factory=list)  # deferred tools the model loaded

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "output": self.output,
            "code": self.code,
            "error": self.error,
            "steps": self.steps,
            "toolCalls": self.tool_calls,
            "llmCalls": self.llm_calls,
            "warnings": self.warnings,
            "events": self.events,
            "notifications": self.notifications,
            "forms": self.forms,
            "loadedTools": self.loaded_tools,
        }

    def fail(self, code: str, message: str) -> AgentRun:
        self.status, self.code, self.error = "failed", code, message
        return self

    def succeed(self, output: Any, text: str | None = None) -> AgentRun:
        self.status, self.output, self.text = "success", output, text
        return self


class _Loop:
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
                {"role": "tool", "tool_call_id": call.id, "content": _as_text(outcome)}
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
        """PreToolUse may refuse the call (the model gets the refusal as the tool's result) or
        change it (replace.toolCall); PostToolUse may replace the result the model reads
        (replace.result) or end the run (replace.terminate: see end_by_hook)."""
        tool_call = {"id": call_id, "name": name, "arguments": raw_arguments}
        pre = self.hook("PreToolUse", {"toolCall": tool_call})
        if pre is not None and pre.aborted:
            return ToolOutcome(False, error=f"refused by a PreToolUse hook: {pre.reason}")
        if pre is not None and isinstance(pre.replaced.get("toolCall"), dict):
            tool_call = {**tool_call, **pre.replaced["toolCall"]}
        outcome = self.call_tool(str(tool_call["name"]), str(tool_call["arguments"]))
        post = self.hook(
            "PostToolUse",
            {
                "toolCall": tool_call,
                "result": outcome.content if outcome.ok else {"error": outcome.error},
            },
        )
        if post is None or post.aborted:
            return outcome
        if "result" in post.replaced:
            outcome = dataclasses.replace(outcome, content=post.replaced["result"])
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

    def completion_missing(self) -> str | None:
        """What the run still lacks before a prose reply can complete it, or None."""
        if self.config.finish_with:
            return f"call {self.config.finish_with} to finish"
        if self.config.completion_require == "explicit":
            tools = ", ".join(self.config.after_tools) or RUNTIME_DONE
            return f"finish explicitly by calling {tools}"
        if self.config.completion_require == "tool-use":
            if self.config.after_tools:
                return f"call one of {', '.join(self.config.after_tools)} successfully"
            return None if self.any_business_success else "call a tool successfully"
        return None

    def handle_prose(self, result: ChatResult) -> AgentRun | None:
        missing = self.completion_missing()
        if missing:
            if self.budgets["toolUse"] > 0 and not self.tools_off:
                self.budgets["toolUse"] -= 1
                self.messages.append({"role": "assistant", "content": result.content or ""})
                self.messages.append(
                    {"role": "user", "content": f"You have not finished: {missing}."}
                )
                return None
            return self.run.fail(
                "completion-missing", f"the run ended without completing: {missing}"
            )
        return self.finish_with_text(result.content)

    def finish_with_text(self, text: str | None, *, repair: bool = True) -> AgentRun | None:
        text = text or ""
        if not self.output_schema:
            return self.run.succeed(self.strip_data_fields(text), text)
        try:
            value = json.loads(text)
            value = self.strip_data_fields(value)
            jsonschema.validate(value, self.output_schema)
            return self.run.succeed(value, text)
        except (ValueError, jsonschema.ValidationError) as exc:
            problem = exc.message if isinstance(exc, jsonschema.ValidationError) else "not JSON"
            if repair and self.budgets["outputRepair"] > 0:
                self.budgets["outputRepair"] -= 1
                self.tools_off = True
                self.messages.append({"role": "assistant", "content": text})
                self.messages.append(
                    {
                        "role": "user",
                        "content": f"Your answer does not match the output schema ({problem}). Reply with JSON only.",
                    }
                )
                return None
            return self.run.fail(
                "output-invalid", f"the output does not match io.output.schema: {problem}"
            )

    def strip_data_fields(self, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        dropped = [k for k in REPLY_DATA_FIELDS if k in value]
        events = value.get("events")
        if isinstance(events, list) and any(isinstance(e, dict) and "topic" in e for e in events):
            dropped.append("events")
        if dropped:
            self.run.warnings.append(
                f"reply data fields have no effect and were removed: {', '.join(dropped)}"
            )
            logger.warning(
                "agent reply carried data fields %s; a model writes only through tools", dropped
            )
            value = {k: v for k, v in value.items() if k not in dropped}
        return value

    def finalize(self, code: str, message: str) -> AgentRun:
        """At the step limit (or the deadline reserve), ask once for the answer with tools off."""
        if not self.config.finalizer_max_steps or self.completion_missing():
            return self.run.fail(code, message)
        result = self.ask(tools_off=True)
        done = self.finish_with_text(result.content)
        # An answer that fails its own check (output-invalid) says more than the step limit.
        return done if done is not None else self.run.fail(code, message)


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


def load_tools_spec(deferred: Iterable[ToolSpec]) -> ToolSpec:
    """The load-tools builtin: its description lists what can be loaded, one line per tool."""
    specs = list(deferred)
    lines = "\n".join(
        f"- {t.name}: {t.description.splitlines()[0] if t.description else ''}" for t in specs
    )
    return ToolSpec(
        LOAD_TOOLS,
        "Load deferred tools by name so that you can call them from the next step on. "
        f"Deferred tools:\n{lines}",
        {
            "type": "object",
            "required": ["names"],
            "additionalProperties": False,
            "properties": {
                "names": {
                    "type": "array",
                    "minItems": 1,
                    "items": {"type": "string", "enum": [t.name for t in specs]},
                }
            },
        },
    )


def _as_text(outcome: ToolOutcome) -> str:
    if not outcome.ok:
        return json.dumps({"ok": False, "error": outcome.error})
    return (
        outcome.content
        if isinstance(outcome.content, str)
        else json.dumps(outcome.content, default=str)
    )
