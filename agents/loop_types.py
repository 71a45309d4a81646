"""The agent loop's vocabulary: tool specs and outcomes, the loop's configuration and the run.

Shared by agents.loop (the steps), agents.loop_tools (tool calls) and agents.loop_finish (how a
run completes), and re-exported by agents.loop, which callers import.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

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
    events: list[dict[str, Any]] = field(default_factory=list)  # [{topic, data, payload, runtime}]
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


def tool_text(outcome: ToolOutcome) -> str:
    if not outcome.ok:
        return json.dumps({"ok": False, "error": outcome.error})
    return (
        outcome.content
        if isinstance(outcome.content, str)
        else json.dumps(outcome.content, default=str)
    )
