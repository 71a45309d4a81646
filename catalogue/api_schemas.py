"""API schemas of the catalogue (django-ninja / pydantic). Field names follow the manifest's
camelCase, so the API and the PLUGIN.md a player may read use the same words."""

from __future__ import annotations

from typing import Any, Literal

from ninja import Field, Schema

from catalogue.selectors import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from core.schemas import MAX_OFFSET, PageOut


class PackageListQuery(Schema):
    q: str = Field("", max_length=200, description="Words to search; exact id/name matches first.")
    tag: list[str] = Field(
        default_factory=list, description="Repeatable; every tag must match (AND)."
    )
    kind: Literal["plugin", "core"] | None = None
    source: Literal["bundled", "user", "community"] | None = None
    cost: Literal["llm", "function", "none"] | None = Field(
        None,
        description="llm: a runtime is an agent; function: a runtime runs code; none: neither.",
    )
    contract: str | None = Field(None, description="Only packages that provide this contract ID.")
    state: Literal["loaded", "error"] | None = None
    sort: Literal["relevance", "name", "updated"] | None = Field(
        None, description="Defaults to relevance with q, otherwise name."
    )
    availability: Literal["installed", "available"] | None = Field(
        None,
        description="installed: only packages on this hub; available: only community-directory "
        "entries not installed; both when absent (installed first). Only q and kind=plugin can "
        "match an available entry: any other filter leaves them out.",
    )
    limit: int | None = Field(
        None,
        ge=1,
        le=MAX_PAGE_SIZE,
        description=f"At most this many (default {DEFAULT_PAGE_SIZE}).",
    )
    offset: int | None = Field(None, ge=0, le=MAX_OFFSET, description="Skip this many first.")
    # The catalogue's paging before the one style (docs/api.md): still understood.
    page: int | None = Field(
        None,
        ge=1,
        le=MAX_OFFSET,
        json_schema_extra={"deprecated": True},
        description="Deprecated: offset = (page - 1) * limit.",
    )
    page_size: int | None = Field(
        None,
        ge=1,
        le=MAX_PAGE_SIZE,
        json_schema_extra={"deprecated": True},
        description="Deprecated: the same as limit.",
    )


class AuthorBriefOut(Schema):
    name: str
    url: str | None = None


class ProvidedOut(Schema):
    contract: str
    default: bool


class PackageItemOut(Schema):
    id: str
    displayName: str
    description: str
    kind: str
    version: str
    source: str
    trust: str
    state: str
    codeState: str = Field(
        description="Whether its code loads: loaded (imported in the host), code-error (see "
        "codeError), needs-approval (community code, checked without running it), or empty "
        "when the package has no code."
    )
    codeError: str = Field(description="The host's message when codeState is code-error.")
    tags: list[str]
    author: AuthorBriefOut | None
    provides: list[ProvidedOut]
    requires: list[str]
    updatedAt: str | None


class DirectoryBriefOut(Schema):
    """What the community directory (covel-plugins registry format) says of an entry."""

    category: str
    maintainer: str = Field(description="official or community")
    status: str = Field(description="active, pending or archived")
    repository: str
    path: str
    ref: str
    installUrl: str = Field(description="The link the GitHub preview reads to install it.")
    license: str | None
    covelVersion: str | None
    locales: list[str]
    demo: str | None
    notes: str


class PackageListItemOut(PackageItemOut):
    installed: bool = Field(
        description="false for a community-directory entry not installed on this hub: its "
        'source is "directory", its state "available", its version "" (known once previewed)'
    )
    directory: DirectoryBriefOut | None = Field(
        None, description="The directory entry, for an available one; null when installed."
    )


class PackageListOut(PageOut):
    items: list[PackageListItemOut]


class LinkOut(Schema):
    id: int
    kind: str
    label: str
    url: str
    confirmUrl: str = Field(description="The confirmation page that shows the full address.")


class AuthorOut(Schema):
    name: str
    url: str | None
    urlConfirm: str | None
    about: str
    links: list[LinkOut]


class HomepageOut(Schema):
    url: str
    confirmUrl: str


class TagDetailOut(Schema):
    tag: str
    derived: bool


class SettingOptionOut(Schema):
    value: str
    label: str


class SettingOut(Schema):
    key: str
    type: str
    label: str
    description: str
    default: Any = None
    hasDefault: bool
    min: float | None
    max: float | None
    step: float | None
    options: list[SettingOptionOut]


class HttpPermissionOut(Schema):
    runtime: str | None
    origin: str
    methods: list[str]


class PermissionsOut(Schema):
    http: list[HttpPermissionOut]
    summary: list[str] = Field(description="The permissions in plain language.")


class RuntimeOut(Schema):
    id: str
    qualifiedId: str
    file: str
    description: str
    kind: Literal["agent", "function"]
    stage: str | None
    trigger: str
    topic: str | None
    modelSlot: str | None
    visibility: str
    outputContract: str | None
    background: bool
    subagentOnly: bool
    detached: bool
    settle: bool
    maxSettleWaitMs: int | None
    maxQueueMs: int | None
    maxExecutionMs: int | None
    limits: list[str]
    details: list[str] = Field(
        description="How often it runs, what one run may cost and what it touches, as short "
        "phrases; only declared values, never the host's defaults."
    )
    concealed: bool
    promptSummary: str


class StageOut(Schema):
    stage: str
    runtimes: list[RuntimeOut]


class ArgumentOut(Schema):
    name: str
    type: str
    description: str
    required: bool
    variadic: bool
    choices: list[str]


class CommandOut(Schema):
    name: str
    description: str
    action: str
    aliases: list[str]
    context: list[str]
    arguments: list[ArgumentOut]


class ActionKindOut(Schema):
    name: str
    label: str
    icon: str | None
    placeholder: str | None
    roles: list[str]
    text: str
    actor: bool
    schema_: str | None = Field(None, alias="schema")


class ServiceOut(Schema):
    contract: str
    access: str
    modelFacing: bool


class ExtensionOut(Schema):
    point: str
    id: str
    order: int
    slot: str | None
    watch: list[str]
    preview: list[str]


class HookOut(Schema):
    event: str
    enforce: str


class EventOut(Schema):
    topic: str
    schema_: str = Field(alias="schema")
    description: str
    advertise: bool


class DatasetOut(Schema):
    name: str
    schema_: str = Field(alias="schema")
    key: str | None
    ops: list[str]
    tools: list[str]
    description: str


class DataNamespaceOut(Schema):
    namespace: str
    schema_: str = Field(alias="schema")
    description: str
    version: int
    accepts: list[str]
    authoring: dict[str, Any] | None
    searchField: str | None


class UISpecOut(Schema):
    placement: str
    path: str


class IssueOut(Schema):
    file: str
    path: str
    code: str
    message: str


class RuntimeWiringOut(Schema):
    runtime: str = Field(description="The runtime's qualified ID.")
    lines: list[str] = Field(
        description="How it connects: event trigger, inputs, needs/after, output, selfData."
    )


class RuntimeAskingOut(Schema):
    runtime: str
    line: str = Field(description="Why it may put a form or another question to the player.")


class ProjectionOutputOut(Schema):
    id: str
    namespace: str
    key: str = Field(description='The record key ("" when not declared).')


class WorldProjectionOut(Schema):
    id: str
    from_: str = Field(alias="from", description="The schema of the world data it reads.")
    handler: str
    outputs: list[ProjectionOutputOut]


class PromptSegmentOut(Schema):
    id: str
    place: str = Field(description='Where the host puts it, in words ("" when not declared).')
    role: str
    content: str


class PromptExtensionOut(Schema):
    point: str
    id: str


class RuntimePromptOut(Schema):
    runtime: str
    file: str
    kind: Literal["agent", "function"]
    concealed: bool
    text: str = Field(
        description="An agent's prompt or a function runtime's notes; empty when concealed."
    )


class ContractSchemaOut(Schema):
    contract: str
    schema_: str = Field(alias="schema")


class WorldContentOut(Schema):
    namespace: str
    title: str
    summary: str
    hint: str
    details: list[str]


class ContractProvidersOut(Schema):
    contract: str
    providers: list[str]


class PackageCardOut(PackageItemOut):
    license: str | None
    homepage: HomepageOut | None
    covel: str | None
    entry: str | None
    promptSummary: str
    tagDetails: list[TagDetailOut]
    author: AuthorOut | None  # type: ignore[assignment]
    conflicts: list[str]
    requiresProviders: list[ContractProvidersOut] = Field(
        description="For each required contract, the installed valid packages that provide it."
    )
    settings: list[SettingOut]
    permissions: PermissionsOut
    runtimes: list[RuntimeOut]
    stages: list[StageOut] = Field(
        description="Runtimes by stage: setup, pre-turn, narrative, post-turn, audit, on-demand."
    )
    tools: list[str]
    actions: list[str]
    commands: list[CommandOut]
    actionKinds: list[ActionKindOut]
    services: list[ServiceOut]
    extensions: list[ExtensionOut]
    hooks: list[HookOut]
    events: list[EventOut]
    datasets: list[DatasetOut]
    dataNamespaces: list[DataNamespaceOut]
    ui: list[UISpecOut]
    errors: list[IssueOut]
    warnings: list[IssueOut]
    shadowed: list[dict[str, str]]
    # The declared sections of the detail page (selectors.package_declarations); an empty list
    # means the package declares nothing for that section.
    wires: list[str] = Field(description="contributes.wires: provider wires its code registers.")
    wiring: list[RuntimeWiringOut] = Field(
        description="Per runtime, how it connects to other runtimes, contracts and its data."
    )
    forms: list[str] = Field(description="contributes.forms: form validators its code registers.")
    asking: list[RuntimeAskingOut] = Field(
        description="Runtimes that may ask the player (create-form tool, or writes interaction:*)."
    )
    worldProjections: list[WorldProjectionOut] = Field(
        description="contributes.worldProjections: world data copied into its own namespaces."
    )
    promptSegments: list[PromptSegmentOut] = Field(
        description="contributes.prompt: fixed text the host adds to the model's prompt."
    )
    promptExtensions: list[PromptExtensionOut] = Field(
        description="prompt.segment@* extensions: prompt text its code adds at run time."
    )
    prompts: list[RuntimePromptOut] = Field(
        description="Each runtime's body (PLUGIN.md or RUNTIME.md); a concealed one's is empty."
    )
    body: str | None = Field(
        description="The PLUGIN.md body of a package without an inline runtime: notes for "
        "people, read by no model. Null when empty; with an inline runtime the body is that "
        "runtime's prompt (in prompts)."
    )
    contractSchemas: list[ContractSchemaOut] = Field(
        description="contracts.*.schema: the contract schemas it publishes."
    )
    worldContent: list[WorldContentOut] = Field(
        description="contributes.data.*.authoring: what a world can supply."
    )
    manifest: dict[str, Any] = Field(
        description="The normalised manifest (raw frontmatter when invalid)."
    )


class TagCountOut(Schema):
    tag: str
    count: int


class ContractOut(Schema):
    contract: str
    providers: list[str]
    default: str | None
