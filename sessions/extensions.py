"""Extension points: where the session calls the providers packages register with
provideExtension, and how their results compose (Covel's rules, docs/play.md "Extension points").

    prompt.segment@1            collect   segments for agent prompts (agents.prompt positions)
    prompt.history-transform@1  pipeline  the agent history, each provider's output the next input
    history.compact@2           single    summaries that stand for the oldest history in prompts
    ui.slot@1                   pipeline  a kernel UI slot's value, shown on the session page

One provider call is pluginhost.services.plugin_extension_call (its own package's host, time
limited, input and output checked by the point's schema). A failing provider is skipped, as
Covel's onError "skip" says, and reported in the `failures` list the caller passes: never
silent, never a failed turn. Providers read their own package's committed data only.
"""

from __future__ import annotations

import html
import json
import math
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from catalogue.manifest.types import Manifest, thaw
from eventlog.models import SessionEvent
from pluginhost.callbacks import HostCallbacks
from pluginhost.errors import CallbackRefused, PluginHostError
from pluginhost.services import plugin_extension_call
from sessions.callbacks import SessionCallbacks
from sessions.models import HistorySummary, Session

SEGMENT = "prompt.segment@1"
HISTORY_TRANSFORM = "prompt.history-transform@1"
COMPACT = "history.compact@2"
UI_SLOT = "ui.slot@1"
VOLATILITY = {"stable": 0, "session": 1, "turn": 2}
# Covel's compaction rules: it starts past 60% of the context window; the summaries may take
# 12% of it (128..8192 tokens), one segment 4% (128..2048), at most 8 segments.
COMPACT_THRESHOLD = 0.6
MAX_SUMMARY_SEGMENTS = 8


@dataclass(frozen=True)
class Provider:
    manifest: Manifest
    point: str
    id: str
    order: int = 0
    slot: str | None = None
    watch: tuple[str, ...] = ()
    preview: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.manifest.id}/{self.id}"


class ExtensionCallbacks(SessionCallbacks):
    """A provider's ctx: its own package's committed data, read only; nothing else."""

    def plugin_data_set(self, **kwargs: Any) -> Any:
        raise CallbackRefused("an extension provider reads its data; it cannot write")

    def tool_call(self, **kwargs: Any) -> Any:
        raise CallbackRefused("an extension provider cannot call tools")

    def http_request(self, **kwargs: Any) -> Any:
        raise CallbackRefused("an extension provider cannot reach the network")


def providers_of(active: Sequence[Manifest], point: str) -> list[Provider]:
    """The active packages' providers of one point, in Covel's order: order, package, id."""
    found = []
    for manifest in active:
        for item in thaw(manifest.contributes.get("extensions") or ()):
            if not isinstance(item, dict):  # "<point>/<id>"
                point_of, _, id_of = str(item).partition("/")
                item = {"point": point_of, "id": id_of}
            spec = item
            if spec.get("point") != point:
                continue
            found.append(
                Provider(
                    manifest=manifest,
                    point=point,
                    id=str(spec["id"]),
                    order=int(spec.get("order") or 0),
                    slot=spec.get("slot"),
                    watch=tuple(spec.get("watch") or ()),
                    preview=tuple(spec.get("preview") or ()),
                )
            )
    return sorted(found, key=lambda p: (p.order, p.manifest.id, p.id))


def call_provider(
    *,
    session: Session | None,
    provider: Provider,
    input: Any,
    context: Mapping[str, Any],
    failures: list[dict[str, Any]],
    callbacks: HostCallbacks | None = None,
) -> tuple[bool, Any]:
    """(True, output), or (False, None) with the failure appended to `failures`.

    The provider reads through `callbacks`, else the session's committed data (read only);
    offline runs (sessions/cases.py) have no session and pass their own.
    """
    if callbacks is None:
        assert session is not None
        callbacks = ExtensionCallbacks(session=session, package=provider.manifest.id, runtime=None)
    known = {"sessionId": str(session.pk), "locale": session.locale} if session else {}
    try:
        output = plugin_extension_call(
            manifest=provider.manifest,
            point=provider.point,
            id=provider.id,
            input=input,
            slot=provider.slot,
            callbacks=callbacks,
            context={**known, **context},
        )
    except PluginHostError as exc:
        failures.append(
            {
                "point": provider.point,
                "plugin": provider.manifest.id,
                "extension": provider.id,
                "code": exc.code,
                "message": exc.message,
            }
        )
        return False, None
    return True, output


# ------------------------------------------------------------------ prompt.segment@1


def prompt_segments(
    *,
    session: Session | None,
    active: Sequence[Manifest],
    turn_id: str,
    player_message: str,
    world: Any,
    failures: list[dict[str, Any]],
    callbacks_for: Callable[[str], HostCallbacks] | None = None,
) -> list[dict[str, Any]]:
    """Every provider's segments for this turn (collect), each marked with its provider.

    callbacks_for: package id -> its ctx callbacks, for a run without a session.
    """
    segments: list[dict[str, Any]] = []
    for provider in providers_of(active, SEGMENT):
        ok, output = call_provider(
            session=session,
            provider=provider,
            input={"turnId": turn_id, "playerMessage": player_message},
            context={"turnId": turn_id, "world": world},
            failures=failures,
            callbacks=callbacks_for(provider.manifest.id) if callbacks_for else None,
        )
        if ok:
            segments.extend(output)
    return segments


def static_segments(active: Sequence[Manifest]) -> list[dict[str, Any]]:
    """Each package's contributes.prompt, which the host provides through prompt.segment@1
    (Covel): for every agent, stable."""
    return [
        {"audience": "all", "volatility": "stable", **s, "providerPluginId": m.id}
        for m in active
        for s in thaw(m.contributes.get("prompt") or ())
    ]


def segments_for(
    segments: Sequence[Mapping[str, Any]], *, package: str, story: bool, contract: str | None
) -> list[dict[str, Any]]:
    """The segments one runtime reads (audience), stable before session before turn, then by
    order, provider and id, as Covel assembles them."""
    chosen = []
    for segment in segments:
        audience = segment.get("audience")
        if audience == "all":
            chosen.append(dict(segment))
        elif audience == "self" and segment.get("providerPluginId") == package:
            chosen.append(dict(segment))
        elif audience == "story" and story:
            chosen.append(dict(segment))
        elif isinstance(audience, Mapping) and audience.get("contract") == contract:
            chosen.append(dict(segment))
    return sorted(
        chosen,
        key=lambda s: (
            VOLATILITY.get(str(s.get("volatility")), 0),
            int(s.get("order") or 0),
            str(s.get("providerPluginId") or ""),
            str(s["id"]),
        ),
    )


# ------------------------------------------------------------------ history


def estimate_tokens(text: str) -> int:
    """About four characters a token: an estimate, as Covel's is, not a tokenizer."""
    return math.ceil(len(text) / 4)


def history_messages(*, session: Session, rows: Sequence[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """Committed player turns as Covel's history messages: each turn's player line (user) and
    story (assistant), with stable ids "<turnId>:player" / "<turnId>:narrative"."""
    messages: list[dict[str, Any]] = []
    for turn_id, said, told, created in rows:
        for suffix, role, content in (("player", "user", said), ("narrative", "assistant", told)):
            if not content:
                continue
            messages.append(
                {
                    "id": f"{turn_id}:{suffix}",
                    "sessionId": str(session.pk),
                    "turnId": str(turn_id),
                    "sourceType": "player" if role == "user" else "narrative",
                    "role": role,
                    "content": content,
                    "order": len(messages),
                    "createdAt": created.isoformat(),
                }
            )
    return messages


def history_transform(
    *,
    session: Session,
    active: Sequence[Manifest],
    messages: list[dict[str, Any]],
    turn_id: str,
    failures: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """prompt.history-transform@1, a pipeline: a failing provider leaves the messages as they were."""
    for provider in providers_of(active, HISTORY_TRANSFORM):
        ok, output = call_provider(
            session=session,
            provider=provider,
            input={"messages": messages, "turnId": turn_id},
            context={"turnId": turn_id},
            failures=failures,
        )
        if ok:
            messages = list(output["messages"])
    return messages


def history_extended(*, session: Session, active: Sequence[Manifest]) -> bool:
    """Whether the agent history goes through the points: a provider, or a saved summary.

    Only a history.compact provider writes summaries: when every package the session's turns
    ever ran (its package_versions) is active now and none of them provides one, there is none
    to look for."""
    if providers_of(active, COMPACT) or providers_of(active, HISTORY_TRANSFORM):
        return True
    if not set(session.package_versions or {}) - {m.id for m in active}:
        return False
    return HistorySummary.objects.filter(session=session).exists()


def agent_history(
    *,
    session: Session,
    active: Sequence[Manifest],
    rows: Sequence[tuple[Any, ...]],
    system_prompt: str,
    turn_id: str,
    compact: bool,
    failures: list[dict[str, Any]],
    gate: Callable[[int], bool] | None = None,
    observe: Callable[[bool, list[str]], None] | None = None,
) -> tuple[list[list[dict[str, str]]], str | None]:
    """The agent's history, turn by turn, and the <compacted_history> that stands before it.

    rows: the committed player turns (id, player message, story, created), oldest first.
    compact: ask history.compact@2 (the caller does once a turn). Then the uncompacted
    messages go through prompt.history-transform@1.
    gate(uncompacted message count), when a compactor is active: False skips the compaction
    (the PreCompaction hook); observe(compacted, new summary ids) follows it (PostCompaction).
    """
    messages = history_messages(session=session, rows=rows)
    summaries = summaries_of(session)
    if compact and providers_of(active, COMPACT):
        pending = _uncompacted(messages, summaries)
        if gate is None or gate(len(pending)):
            before = {s.summary_id for s in summaries}
            done = history_compact(
                session=session,
                active=active,
                system_prompt=system_prompt,
                messages=pending,
                failures=failures,
            )
            if done:
                summaries = summaries_of(session)
            if observe is not None:
                observe(done, [s.summary_id for s in summaries if s.summary_id not in before])
    shown = history_transform(
        session=session,
        active=active,
        messages=_uncompacted(messages, summaries),
        turn_id=turn_id,
        failures=failures,
    )
    turns: list[list[dict[str, str]]] = []
    last = None
    for message in shown:
        if message["turnId"] != last:
            turns.append([])
            last = message["turnId"]
        turns[-1].append({"role": message["role"], "content": message["content"]})
    return turns, compacted_envelope(summaries)


def _uncompacted(
    messages: list[dict[str, Any]], summaries: Sequence[HistorySummary]
) -> list[dict[str, Any]]:
    covered = {i for s in summaries for i in s.message_ids}
    return [m for m in messages if m["id"] not in covered]


def _summary_record(row: HistorySummary) -> dict[str, Any]:
    return {
        "id": row.summary_id,
        "sessionId": str(row.session_id),
        "turnRangeStart": row.turn_range_start,
        "turnRangeEnd": row.turn_range_end,
        "content": row.content,
        "focusSections": list(row.focus_sections),
        "createdAt": row.created_at.isoformat(),
    }


def summaries_of(session: Session) -> list[HistorySummary]:
    return list(HistorySummary.objects.filter(session=session))


def summary_budget(window: int) -> dict[str, int]:
    most = max(1, min(window, max(128, min(8192, window * 12 // 100))))
    return {
        "maxTokens": most,
        "maxSegmentTokens": min(most, max(128, min(2048, window * 4 // 100))),
        "maxSegments": MAX_SUMMARY_SEGMENTS,
    }


class CompactionRefused(Exception):
    """The provider's summaries break Covel's rules; nothing is saved."""


def history_compact(
    *,
    session: Session,
    active: Sequence[Manifest],
    system_prompt: str,
    messages: list[dict[str, Any]],
    failures: list[dict[str, Any]],
) -> bool:
    """Ask the one history.compact@2 provider for summaries once the prompt passes 60% of the
    window; check and save them in one transaction. True when a summary was saved.

    messages are the uncompacted ones, oldest first. A provider's null means "nothing to
    compact"; a refused or failed result is a failure and the history stays as it was.
    """
    providers = providers_of(active, COMPACT)
    if not providers:
        return False
    if len(providers) > 1:
        names = ", ".join(p.name for p in providers)
        failures.append(
            {
                "point": COMPACT,
                "plugin": providers[0].manifest.id,
                "extension": providers[0].id,
                "code": "extension_conflict",
                "message": f"history.compact@2 is a single point; {names} all provide it",
            }
        )
        return False
    window = int(getattr(settings, "COVEL_HISTORY_CONTEXT_TOKENS", 128000))
    existing = summaries_of(session)
    estimated = (
        estimate_tokens(system_prompt)
        + sum(estimate_tokens(m["content"]) for m in messages)
        + sum(estimate_tokens(s.content) for s in existing)
    )
    if estimated <= window * COMPACT_THRESHOLD:
        return False
    budget = summary_budget(window)
    provider = providers[0]
    ok, output = call_provider(
        session=session,
        provider=provider,
        input={
            "messages": messages,
            "existingSummaries": [_summary_record(s) for s in existing],
            "contextWindow": window,
            "inputWindow": window,
            "summaryBudget": budget,
            "estimatedTokens": estimated,
            "locale": session.locale,
        },
        context={},
        failures=failures,
    )
    if not ok or output is None:
        return False
    try:
        _save_summaries(session, existing, messages, output["summaries"], budget)
    except CompactionRefused as exc:
        failures.append(
            {
                "point": COMPACT,
                "plugin": provider.manifest.id,
                "extension": provider.id,
                "code": "compaction_refused",
                "message": f"{provider.name}: {exc}",
            }
        )
        return False
    return True


def _save_summaries(
    session: Session,
    existing: list[HistorySummary],
    messages: list[dict[str, Any]],
    segments: Sequence[Mapping[str, Any]],
    budget: Mapping[str, int],
) -> None:
    """Covel's checks: each segment covers either the next uncompacted messages (a contiguous
    prefix, in order) or the oldest summaries in order; within the budget; saved atomically."""
    covered: list[str] = []
    replaced: list[str] = []
    records = []
    now = timezone.now()
    for number, segment in enumerate(segments):
        content = str(segment["content"])
        ids, replaces = list(segment["messageIds"]), list(segment["replacesSummaryIds"])
        if not content.strip() or (not ids) == (not replaces):
            raise CompactionRefused(
                f"summaries[{number}] must cover either messages or older summaries, with text"
            )
        if estimate_tokens(content) > budget["maxSegmentTokens"]:
            raise CompactionRefused(
                f"summaries[{number}] is over {budget['maxSegmentTokens']} tokens"
            )
        old = existing[len(replaced) : len(replaced) + len(replaces)]
        if [s.summary_id for s in old] != replaces:
            raise CompactionRefused(
                f"summaries[{number}].replacesSummaryIds must name the oldest summaries in order"
            )
        source = messages[len(covered) : len(covered) + len(ids)]
        if [m["id"] for m in source] != ids:
            raise CompactionRefused(
                f"summaries[{number}].messageIds must be the oldest uncompacted messages in order"
            )
        replaced += replaces
        covered += ids
        records.append(
            (content, segment, old, source, now + timezone.timedelta(microseconds=number))
        )
    kept = [s for s in existing if s.summary_id not in replaced]
    total = sum(estimate_tokens(r[0]) for r in records) + sum(
        estimate_tokens(s.content) for s in kept
    )
    if len(kept) + len(records) > budget["maxSegments"] or total > budget["maxTokens"]:
        raise CompactionRefused(
            f"the summaries would pass the budget ({budget['maxSegments']} segments, "
            f"{budget['maxTokens']} tokens)"
        )
    with transaction.atomic():
        for content, segment, old, source, created in records:
            if old:
                _merge(old, content, segment)
                continue
            HistorySummary.objects.create(
                session=session,
                summary_id=uuid.uuid4().hex,
                content=content,
                focus_sections=list(segment["focusSections"]),
                message_ids=[m["id"] for m in source],
                turn_range_start=source[0]["turnId"],
                turn_range_end=source[-1]["turnId"],
                created_at=created,
            )


def _merge(old: list[HistorySummary], content: str, segment: Mapping[str, Any]) -> None:
    """A merge keeps the oldest replaced summary's id, start and time (Covel's rule)."""
    first = old[0]
    first.content = content
    first.focus_sections = list(segment["focusSections"])
    first.message_ids = [i for s in old for i in s.message_ids]
    first.turn_range_end = old[-1].turn_range_end
    first.save()
    HistorySummary.objects.filter(pk__in=[s.pk for s in old[1:]]).delete()


def compacted_envelope(summaries: Sequence[HistorySummary]) -> str | None:
    """The summaries as the prompt reads them: one user message, XML-escaped, in Covel's
    <compacted_history> envelope."""
    if not summaries:
        return None
    parts = [html.escape(s.content, quote=False) for s in summaries]
    return "<compacted_history>\n" + "\n\n".join(parts) + "\n</compacted_history>"


# ------------------------------------------------------------------ ui.slot@1


def slot_values(
    *, session: Session, active: Sequence[Manifest], events: Sequence[Mapping[str, Any]] = ()
) -> list[dict[str, Any]]:
    """Each slot the active packages fill: its value through the pipeline of its providers,
    who provides it, what refreshes it, and the failures (a failing provider keeps the value
    the providers before it made)."""
    slots: dict[str, list[Provider]] = {}
    for provider in providers_of(active, UI_SLOT):
        if provider.slot:
            slots.setdefault(provider.slot, []).append(provider)
    shown = []
    for slot, providers in slots.items():
        failures: list[dict[str, Any]] = []
        value: Any = None
        for provider in providers:
            wanted = [
                {k: e[k] for k in ("topic", "data", "turnId", "pluginId") if k in e}
                for e in events
                if e.get("topic") in provider.preview
            ]
            ok, output = call_provider(
                session=session,
                provider=provider,
                input={"slot": slot, "previous": value, "events": wanted},
                context={},
                failures=failures,
            )
            if ok:
                value = output
        shown.append(
            {
                "slot": slot,
                "value": value,
                "providers": [p.name for p in providers],
                "watch": sorted({f"{p.manifest.id}/{ns}" for p in providers for ns in p.watch}),
                "preview": sorted({t for p in providers for t in p.preview}),
                "failures": failures,
            }
        )
    return shown


def _text(value: Any, locale: str) -> str:
    """An i18n text: the session's locale, its language, else the first one written."""
    if not isinstance(value, Mapping):
        return str(value)
    for key in (locale, locale.split("-")[0]):
        if key in value:
            return str(value[key])
    return str(next(iter(value.values()), ""))


def slot_entries(slot: str, value: Any, locale: str) -> list[dict[str, Any]]:
    """What the page shows of a slot value: plain entries, every string as text (never markup).

    session.summary@1 entries keep their kind (text, meter, list); any other slot's value is
    shown as its JSON, since this page has no stage to draw it on."""
    if value is None:
        return []
    if slot != "session.summary@1":
        return [{"id": "value", "kind": "text", "label": slot, "value": json.dumps(value)}]
    shown = []
    for entry in value.get("entries", ()):
        item = {"id": entry["id"], "kind": entry["kind"], "label": _text(entry["label"], locale)}
        if entry["kind"] == "text":
            item["value"] = _text(entry["value"], locale)
        elif entry["kind"] == "meter":
            item.update({k: entry[k] for k in ("value", "max", "min") if k in entry})
        else:
            item["items"] = [_text(i, locale) for i in entry.get("items", ())]
            item["total"] = entry.get("total")
        item["tone"] = entry.get("tone") or ""
        shown.append(item)
    return shown


def preview_events(*, session: Session, turn_id: str, topics: set[str]) -> list[dict[str, Any]]:
    """The domain events one turn emitted so far with these topics, as ui.slot@1 reads them."""
    if not topics:
        return []
    rows = SessionEvent.objects.filter(
        session=session, type="plugin.event", payload__turnId=turn_id
    ).order_by("seq")
    return [
        {
            "topic": row.payload["topic"],
            "data": dict(row.payload.get("payload") or {}),
            "turnId": turn_id,
            "pluginId": str(row.payload.get("runtime") or "").split("/")[0],
        }
        for row in rows
        if row.payload.get("topic") in topics
    ]


def session_slots(*, session: Session, turn_id: str | None = None) -> list[dict[str, Any]]:
    """The session's UI slots as the page and the API show them (ui.slot@1 providers run).

    turn_id: a turn whose domain events the providers' `preview` topics should see (the page
    asks while the turn runs); without it they see none, only committed data.
    """
    from sessions.selectors import installed_manifests

    installed = installed_manifests()
    active = [installed[p] for p in session.resolved_plugins or () if p in installed]
    providers = providers_of(active, UI_SLOT)
    if not providers:
        return []
    topics = {t for p in providers for t in p.preview}
    events = preview_events(session=session, turn_id=turn_id, topics=topics) if turn_id else []
    return [
        {**found, "entries": slot_entries(found["slot"], found["value"], session.locale)}
        for found in slot_values(session=session, active=active, events=events)
    ]
