"""Prompt assembly for agent runtimes: what the model reads, in order.

    system     the manifest body (variables filled in), then system-position prompt segments,
               the io.selfData blocks and the runtime inputs (read at runtime-inputs.<name>.value)
    pre-history segments
    history    bounded by agent.history (maxTurns, includeSummaries), depth segments inside it;
               history.compact@2 summaries first, as one <compacted_history> user message
    post-history segments
    this turn  the player's input, and for runtimes after the story, this turn's story text

Whatever agent.history says, the player's input, this turn's story text, the declared inputs,
selfData and code-provided segments stay in place.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

VARIABLE = re.compile(r"\{\{\s*([A-Za-z_][\w.-]*)\s*\}\}")
SUMMARY_VALUE_CHARS = 200


@dataclass(frozen=True)
class Turn:
    messages: tuple[Mapping[str, str], ...]  # what the player could see: {role, content}


@dataclass(frozen=True)
class DataEntry:
    key: str
    value: Any
    updated_at: str  # ISO time; entries are ordered by it


@dataclass
class PromptContext:
    player_message: str = ""
    story_text: str | None = None  # this turn's narrative, for runtimes after the story
    history: Sequence[Turn] = ()
    summary: str | None = None  # the compacted summary of older turns
    # history.compact@2's summaries (sessions.extensions.compacted_envelope): a user message
    # before the history, as Covel places them; the same agent.history rule as `summary`.
    compacted: str | None = None
    inputs: Mapping[str, Any] = field(default_factory=dict)  # name -> bound value
    self_data: Mapping[str, Sequence[DataEntry]] = field(
        default_factory=dict
    )  # namespace -> entries
    variables: Mapping[str, Any] = field(default_factory=dict)
    segments: Sequence[Mapping[str, Any]] = ()  # contributes.prompt of the active packages
    # The caller already cut the history to agent.history.maxTurns (or, when a PreCompaction
    # hook vetoed that, kept it whole): it is not cut again here.
    history_windowed: bool = False


@dataclass
class Prompt:
    messages: list[dict[str, str]]
    missing_variables: list[str]


def render_variables(text: str, variables: Mapping[str, Any], missing: list[str]) -> str:
    def lookup(match: re.Match[str]) -> str:
        value: Any = variables
        for part in match.group(1).split("."):
            if isinstance(value, Mapping) and part in value:
                value = value[part]
            else:
                missing.append(match.group(1))
                return ""
        if isinstance(value, str):
            return value
        return json.dumps(value, ensure_ascii=False)

    return VARIABLE.sub(lookup, text)


def self_data_block(spec: Mapping[str, Any], entries: Sequence[DataEntry]) -> str:
    tag = spec["as"].strip().strip("<>")
    fmt = spec.get("format", "summary")
    limit = spec.get("maxEntries", 50)
    ordered = sorted(entries, key=lambda e: (e.updated_at, e.key))
    if len(ordered) > limit:
        # Above the limit, half are the oldest and half the most recently updated.
        newest = limit // 2
        ordered = ordered[: limit - newest] + (ordered[-newest:] if newest else [])
    lines = []
    for entry in ordered:
        if fmt == "ids-only":
            lines.append(entry.key)
        elif fmt == "full":
            lines.append(f"{entry.key}: {json.dumps(entry.value, ensure_ascii=False)}")
        else:
            text = json.dumps(entry.value, ensure_ascii=False)
            if len(text) > SUMMARY_VALUE_CHARS:
                text = text[:SUMMARY_VALUE_CHARS] + "…"
            when = f" (updated {entry.updated_at})" if entry.updated_at else ""
            lines.append(f"{entry.key}{when}: {text}")
    return f"<{tag}>\n" + "\n".join(lines) + f"\n</{tag}>"


def history_messages(runtime: Mapping[str, Any], context: PromptContext) -> list[dict[str, str]]:
    bounds = (runtime.get("agent") or {}).get("history")
    turns = list(context.history)
    include_summary = True  # the shared session history carries the compacted summary
    if bounds is not None:
        keep = bounds["maxTurns"]
        if not context.history_windowed:
            turns = turns[-keep:] if keep else []
        include_summary = bool(bounds.get("includeSummaries", False))
    messages: list[dict[str, str]] = []
    if include_summary and context.summary:
        messages.append({"role": "system", "content": f"<summary>\n{context.summary}\n</summary>"})
    if include_summary and context.compacted:
        messages.append({"role": "user", "content": context.compacted})
    for turn in turns:
        messages.extend({"role": m["role"], "content": m["content"]} for m in turn.messages)
    return messages


def assemble(*, body: str, runtime: Mapping[str, Any], context: PromptContext) -> Prompt:
    missing: list[str] = []
    system_parts = [render_variables(body.strip(), context.variables, missing)]
    pre: list[dict[str, str]] = []
    post: list[dict[str, str]] = []
    depth: list[tuple[int, dict[str, str]]] = []
    for segment in context.segments:
        message = {"role": segment.get("role", "system"), "content": segment["content"]}
        position = segment["position"]
        if isinstance(position, Mapping):
            depth.append((int(position["depth"]), message))
        elif position == "system" and message["role"] == "system":
            system_parts.append(segment["content"])
        elif position == "system" or position == "pre-history":
            pre.append(message)
        else:
            post.append(message)

    io = runtime.get("io") or {}
    for spec in io.get("selfData", ()):
        system_parts.append(self_data_block(spec, context.self_data.get(spec["namespace"], ())))
    if io.get("inputs"):
        bound = {name: {"value": context.inputs.get(name)} for name in io["inputs"]}
        system_parts.append(
            "<runtime-inputs>\n"
            + json.dumps(bound, ensure_ascii=False, indent=2)
            + "\n</runtime-inputs>"
        )

    history = history_messages(runtime, context)
    for offset, message in sorted(depth, key=lambda item: -item[0]):
        # depth 0 is after the last history message, depth n is n messages before it.
        history.insert(max(0, len(history) - offset), message)

    messages = [{"role": "system", "content": "\n\n".join(p for p in system_parts if p)}]
    messages += pre + history + post
    if context.player_message:
        messages.append({"role": "user", "content": context.player_message})
    if context.story_text:
        messages.append({"role": "assistant", "content": context.story_text})
    return Prompt(messages=messages, missing_variables=missing)
