"""Request and response shapes of the sessions API (separate In/Out per endpoint)."""

from __future__ import annotations

from typing import Any

from ninja import Field, Schema

from core.schemas import PageOut, PageQuery
from sessions.forms import PLAYER_MESSAGE_MAX_LENGTH


class SessionCreateIn(Schema):
    world: str = Field(..., description="The world's ID.")
    plugins: list[str] | None = Field(
        None,
        description="Requested packages; omitted: the world's plugins. Core packages are added.",
    )
    excluded: list[str] = Field(default_factory=list, description="Core packages to leave out.")
    title: str = ""
    locale: str = "en"
    character: str | None = Field(
        None,
        description="The world's player character to play; omitted: the world's first one.",
    )


class SessionStatusIn(Schema):
    status: str


class SeatUpdateIn(Schema):
    currentCharacterId: str | None = Field(
        None, description="The character the seat plays from the next turn; must be bound to it."
    )
    characterIds: list[str] | None = Field(
        None,
        description="The seat's whole new list of bound characters (the world's player characters).",
    )


class SeatOut(Schema):
    id: str
    user: str | None = None
    role: str
    primary: bool
    characterIds: list[str]
    currentCharacterId: str | None = None


class OutcomeOut(Schema):
    package: str
    code: str
    message: str
    active: bool
    contract: str | None = None
    other: str | None = None


class SessionOut(Schema):
    id: str
    title: str
    world: str
    owner: str
    phase: str
    status: str
    turn_count: int
    seats: list[dict[str, Any]]
    requested_plugins: list[str]
    excluded_plugins: list[str]
    resolved_plugins: list[str]
    outcomes: dict[str, list[OutcomeOut]]
    package_versions: dict[str, str]
    created_at: str


class SessionListOut(PageOut):
    items: list[SessionOut]


class ActionIn(Schema):
    message: str = Field("", max_length=PLAYER_MESSAGE_MAX_LENGTH)
    actions: list[dict[str, Any]] = Field(default_factory=list)


class RuntimeResultOut(Schema):
    runtime: str
    package: str
    stage: str
    kind: str
    activation: str
    status: str
    code: str
    reason: str
    output: Any = None
    durationMs: int
    story: bool
    jobId: str | None = None  # the public job id, as /api/jobs/{id} takes it
    warnings: list[str] = []
    # ctx.recursiveCall's nested runs: {runtimeId, depth, outcome, code, durationMs}
    nested: list[dict[str, Any]] = []


class HookRecordOut(Schema):
    """A hook's abort or failure in the turn (sessions/hooks.py)."""

    event: str
    package: str
    phase: str
    outcome: str  # aborted, error, timeout, invalid, or a host error code
    message: str


class TurnOut(Schema):
    turnId: str
    number: int
    kind: str
    status: str
    narrativeText: str
    runtimes: list[RuntimeResultOut]
    commit: dict[str, Any]
    # ui.render blocks [{id, type, data, meta}], then the package message blocks
    # (contributes.ui.message) drawn for this turn: {id, type: "ui.message", data, meta, nodes}
    blocks: list[dict[str, Any]] = []
    hooks: list[HookRecordOut] = []
    # Set when a TurnStart hook vetoed the turn: nothing ran and nothing was committed.
    abortReason: str | None = None


class RunIn(Schema):
    payload: Any = None


class JobAcceptedOut(Schema):
    jobId: str
    status: str


class RpcIn(Schema):
    payload: Any = None
    command: str | None = Field(None, description='A slash command such as "/roll 3 d6 + 2".')


class CommandIn(Schema):
    text: str


class RpcOut(Schema):
    plugin: str
    action: str
    value: Any = None
    command: dict[str, Any] | None = None
    settle: dict[str, Any] | None = Field(
        None,
        description="The settle wait before the action, as a turn's commit.settle; null without one.",
    )


class SlotFailureOut(Schema):
    point: str
    plugin: str
    extension: str
    code: str
    message: str


class SlotOut(Schema):
    """One kernel UI slot the session's packages fill (ui.slot@1), as the play page shows it."""

    slot: str
    value: Any = None  # the slot's value, as its providers' pipeline made it (null: empty)
    entries: list[dict[str, Any]]  # what the page shows: plain text, never markup
    providers: list[str]  # "<plugin>/<extension id>", in pipeline order
    watch: list[str]  # "<plugin>/<namespace>": a change there refreshes the slot
    preview: list[str]
    failures: list[SlotFailureOut]
    # A package UI panel (contributes.ui.right / .view, sessions/package_ui/) carries these too;
    # a ui.slot@1 slot leaves them out.
    placement: str | None = None  # "right" or "view"
    plugin: str | None = None
    id: str | None = None  # the spec's id
    spec: str | None = None  # the spec file, package-relative
    label: str | None = None  # in the session's language
    icon: str | None = None
    nodes: list[dict[str, Any]] | None = None  # the drawn view: plain text nodes, never markup
    empty: str | None = None  # the emptyState text, when the data source has nothing


class PluginDataOut(Schema):
    plugin: str
    namespace: str
    key: str
    value: Any = None
    size: int = Field(
        description="Bytes of the value as compact UTF-8 JSON (what the quota counts)."
    )
    updatedAt: str


class PluginDataQuery(PageQuery):
    """?limit=&offset= page; plugin, namespace and key narrow it (exact matches)."""

    plugin: str | None = Field(None, max_length=100)
    namespace: str | None = Field(None, max_length=200)
    key: str | None = Field(None, max_length=500)


class PluginDataPageOut(PageOut):
    items: list[PluginDataOut]


class LoreEntryOut(Schema):
    """One session lore entry a package wrote (lorebook.upsert), as Covel's session lorebook."""

    id: str
    pluginId: str
    keys: list[str]
    content: str
    strategy: str
    position: str
    insertionOrder: int
    enabled: bool
    extra: Any = None
    createdAt: str | None = None
    updatedAt: str | None = None


class LorebookOut(Schema):
    entries: list[LoreEntryOut]


class TurnRowOut(Schema):
    turnId: str
    number: int
    kind: str
    status: str
    playerMessage: str
    narrativeText: str
    runtimes: list[dict[str, Any]]
    commit: dict[str, Any]
    # ui.render blocks [{id, type, data, meta}], then the package message blocks
    # (contributes.ui.message) drawn for this turn: {id, type: "ui.message", data, meta, nodes}
    blocks: list[dict[str, Any]] = []
    error: str
    sourceTurnId: str | None = None
    createdAt: str
    finishedAt: str | None = None


class InteractionSubmitIn(Schema):
    values: dict[str, Any] = Field(
        default_factory=dict, description="The answer, by field name: text, a number, a boolean."
    )


class TurnPageOut(PageOut):
    items: list[TurnRowOut]


class EventsQuery(Schema):
    after: int | None = Field(
        None, ge=0, le=2**62, description="Replay the events after this seq (Last-Event-ID wins)."
    )
    wait: float | None = Field(
        None,
        ge=0,
        allow_inf_nan=False,
        description="Seconds to wait for new events (default 25, at most 55).",
    )
