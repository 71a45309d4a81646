"""The package UI of one session: each active package's specs over its committed data.

Where a spec's state comes from (Covel: the packages' ui/*.json and handlers, and its UI guide
docs/guide/plugin-ui-runtime-guidelines.md, "数据通路"):
- `right` and `view` specs with dataSource {namespace}: {"entries": [{key, value}, …]}, every row
  the package committed in that namespace, oldest change first (a log reads top to bottom); with
  dataSource {namespace, key}, the state is that one row's value.
- `message` specs: one block under each turn for which the package committed a row in the
  namespace (Covel's packages use "message") whose key is the turn's id, or whose value carries
  `__turnId`; the state is the row's value.
- `segment` specs (display templates for committed story paragraphs): a block under the turn
  for each `narrative.append` segment the package's runtimes told in it (`commit.narrative`)
  whose `kind` (and `speaker`, when the spec's `match` names one) matches; the state is the
  segment `{runtime, content, kind, …}`.
All of a session's rows are read in one query, however many packages and specs there are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from catalogue.manifest.types import Manifest
from eventlog.models import SessionEvent
from sessions.models import PluginData, Session
from sessions.package_ui.render import ICONS, localized, render_view
from sessions.package_ui.specs import Spec, package_specs

PANEL_PLACEMENTS = ("right", "view")


def _text(value: Any, locale: str) -> str:
    if isinstance(value, Mapping):
        return localized(value, locale)
    return value if isinstance(value, str) else ""


def active_manifests(session: Session) -> list[Manifest]:
    from sessions.selectors import installed_manifests

    installed = installed_manifests()
    return [installed[p] for p in session.resolved_plugins or () if p in installed]


def session_specs(session: Session) -> list[Spec]:
    return [spec for m in active_manifests(session) for spec in package_specs(m)]


def _rows(session: Session, specs: Iterable[Spec]) -> dict[tuple[str, str], list[PluginData]]:
    wanted = {(s.plugin, s.namespace) for s in specs if s.namespace and not s.problem}
    if not wanted:
        return {}
    found: dict[tuple[str, str], list[PluginData]] = {}
    rows = PluginData.objects.filter(
        session=session,
        plugin_id__in={p for p, _ in wanted},
        namespace__in={n for _, n in wanted},
    ).order_by("updated_at", "id")
    for row in rows:
        if (row.plugin_id, row.namespace) in wanted:
            found.setdefault((row.plugin_id, row.namespace), []).append(row)
    return found


def _failure(spec: Spec, code: str, message: str) -> dict[str, str]:
    return {
        "point": f"ui.{spec.placement}",
        "plugin": spec.plugin,
        "extension": spec.id,
        "code": code,
        "message": f"{spec.path}: {message}",
    }


def _panel(spec: Spec, rows: list[PluginData], locale: str) -> dict[str, Any]:
    if spec.key is not None:
        match = [r.value for r in rows if r.key == spec.key]
        state: Any = match[0] if match else None
        empty = state is None
    else:
        state = {"entries": [{"key": r.key, "value": r.value} for r in rows]}
        empty = not rows
    failures = [_failure(spec, "spec-unusable", spec.problem)] if spec.problem else []
    row = {"key": spec.key, "value": state} if spec.key is not None else state
    nodes = [] if spec.problem or spec.view is None else render_view(spec.view, state, locale, row)
    return {
        "slot": f"ui.{spec.placement}",
        "placement": spec.placement,
        "plugin": spec.plugin,
        "id": spec.id,
        "spec": spec.path,
        "label": _text(spec.label, locale) or _text(spec.short_label, locale) or spec.id,
        "icon": spec.icon,
        "glyph": ICONS.get(spec.icon, ""),
        "order": spec.group_order,
        "value": state,
        "entries": [],
        "providers": [spec.plugin],
        "watch": [f"{spec.plugin}/{spec.namespace}"] if spec.namespace else [],
        "preview": [],
        "failures": failures,
        "nodes": nodes,
        "empty": _text(spec.empty, locale) if empty and not spec.problem else "",
    }


def _turn_of(row: PluginData) -> str:
    value = row.value
    if isinstance(value, Mapping) and isinstance(value.get("__turnId"), str):
        return value["__turnId"]
    return row.key


def _message_block(spec: Spec, turn_id: str, state: Any, locale: str) -> dict[str, Any]:
    empty = state in (None, {}, [])
    return {
        "id": f"{spec.plugin}/{spec.id}",
        "type": "ui.message",
        "data": state,
        "meta": {"pluginId": spec.plugin, "turnId": turn_id, "spec": spec.path, "specId": spec.id},
        "nodes": [] if empty else render_view(spec.view, state, locale),
        "empty": _text(spec.empty, locale) if empty else "",
    }


def _event_states(
    session: Session, specs: list[Spec], wanted: set[str] | None
) -> Iterable[tuple[Spec, str, Any]]:
    """(spec, turn id, event payload) for message specs drawn per emitted event (trigger.event):
    one block for each event of the topic the spec's own package emitted. One query."""
    by_topic: dict[str, list[Spec]] = {}
    for spec in specs:
        if spec.placement == "message" and spec.event and not spec.problem:
            by_topic.setdefault(spec.event, []).append(spec)
    if not by_topic or wanted == set():
        return []
    rows = SessionEvent.objects.filter(
        session=session, type="plugin.event", payload__topic__in=list(by_topic)
    ).order_by("seq")
    found = []
    for row in rows:
        turn_id = str(row.payload.get("turnId") or "")
        package = str(row.payload.get("runtime") or "").split("/")[0]
        if wanted is not None and turn_id not in wanted:
            continue
        for spec in by_topic.get(row.payload.get("topic"), []):
            if spec.plugin == package:
                found.append((spec, turn_id, row.payload.get("payload")))
    return found


def _segment_blocks(
    specs: list[Spec], turns: Iterable[Any], locale: str
) -> list[tuple[str, dict[str, Any]]]:
    """(turn id, block) for each told segment a segment spec of its package matches."""
    wanted = [s for s in specs if s.placement == "segment" and not s.problem and s.view]
    found: list[tuple[str, dict[str, Any]]] = []
    for turn in turns if wanted else ():
        for segment in (turn.commit or {}).get("narrative") or []:
            if not isinstance(segment, Mapping):
                continue
            package = str(segment.get("runtime") or "").split("/")[0]
            for spec in wanted:
                if spec.plugin != package or not spec.match:
                    continue
                if all(segment.get(k) == v for k, v in spec.match.items()):
                    block = _message_block(spec, str(turn.pk), dict(segment), locale)
                    block["type"] = "ui.segment"
                    found.append((str(turn.pk), block))
    return found


def session_package_ui(
    *, session: Session, turn_ids: Iterable[str] | None = None, turns: Iterable[Any] = ()
) -> dict[str, Any]:
    """Everything the page shows of the packages' UI specs.

    panels: the right-panel tabs and full-column views, ordered by groupOrder then package;
    messages: {turnId: [blocks]} for the given turns (every turn with a row when None);
    (message, event and segment blocks alike); segments: the segment specs; watch /
    message_watch: "<plugin>/<namespace>" whose change refreshes the panels / the message
    blocks; refresh_on_commit: whether a turn's blocks also come from its events or segments.
    """
    specs = session_specs(session)
    rows = _rows(session, specs)
    locale = session.locale or "en"
    panels = [
        _panel(s, rows.get((s.plugin, s.namespace or ""), []), locale)
        for s in specs
        if s.placement in PANEL_PLACEMENTS
    ]
    panels.sort(key=lambda p: (p["placement"] != "right", p["order"]))
    wanted = None if turn_ids is None else {str(t) for t in turn_ids}
    messages: dict[str, list[dict[str, Any]]] = {}
    for turn_id, block in _segment_blocks(specs, turns, locale):
        messages.setdefault(turn_id, []).append(block)
    for spec, turn_id, payload in _event_states(session, specs, wanted):
        messages.setdefault(turn_id, []).append(_message_block(spec, turn_id, payload, locale))
    for spec in specs:
        if spec.placement != "message" or spec.problem or not spec.namespace or spec.event:
            continue
        for row in rows.get((spec.plugin, spec.namespace), []):
            turn_id = _turn_of(row)
            if wanted is None or turn_id in wanted:
                block = _message_block(spec, turn_id, row.value, locale)
                messages.setdefault(turn_id, []).append(block)
    broken = [
        _panel(s, [], locale) for s in specs if s.placement in ("message", "segment") and s.problem
    ]
    return {
        "panels": panels + broken,
        "messages": messages,
        "segments": [
            {"plugin": s.plugin, "spec": s.path} for s in specs if s.placement == "segment"
        ],
        "watch": sorted({w for p in panels for w in p["watch"]}),
        "message_watch": sorted(
            {f"{s.plugin}/{s.namespace}" for s in specs if s.placement == "message" and s.namespace}
        ),
        "message_events": sorted({s.event for s in specs if s.placement == "message" and s.event}),
        "refresh_on_commit": any(
            s.placement == "segment" or (s.placement == "message" and s.event) for s in specs
        ),
        "any": bool(specs),
    }


def package_ui_slots(*, session: Session) -> list[dict[str, Any]]:
    """The panels as `/api/sessions/{id}/slots` lists them, beside the ui.slot@1 slots."""
    return session_package_ui(session=session, turn_ids=())["panels"]


def turn_message_blocks(*, session: Session, turns: list[Any]) -> dict[str, list[dict[str, Any]]]:
    """The message and segment blocks of these turns, for each turn's `blocks` in the API."""
    ids = [str(t.pk) for t in turns]
    return session_package_ui(session=session, turn_ids=ids, turns=turns)["messages"]
