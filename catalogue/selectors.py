"""Reads of the catalogue: filtered package lists, facets, contracts and the package card.

Every read prefetches its child rows, so a page costs the same number of queries for 2 or
2,000 packages (the tests assert it).

One piece, past 800 lines: the card reuses the list's prefetches (package_get extends
_list_prefetches) and reads only prefetched rows, so the no-extra-query promise is kept in one
file; the card's plain-language "declared sections" are the seam to split along once a second
page needs them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

from django.conf import settings
from django.db.models import Count, Exists, OuterRef, Prefetch, QuerySet
from django.urls import reverse
from django.utils import translation

from catalogue.locales import pick_locale
from catalogue.manifest.normalise import loop_defaults
from catalogue.models import (
    Command,
    Contract,
    HttpPermission,
    Package,
    PackageContract,
    PackageTag,
    Runtime,
    Setting,
)
from catalogue.search import package_search_backend
from catalogue.text import prompt_summary

SORTS = ("relevance", "name", "updated")
COSTS = ("llm", "function", "none")
AVAILABILITY = ("installed", "available")
STAGES = ("setup", "pre-turn", "narrative", "post-turn", "audit")
DEFAULT_SETTLE_WAIT_MS = 60000  # the spec's default maxSettleWaitMs
DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100
LIST_DEFERRED = (
    "manifest",
    "errors",
    "warnings",
    "search_text",
    "author_about",
    "prompt_summary",
    "body",
    "readme",
    "shadowed",
)


@dataclass(frozen=True)
class PackageFilters:
    q: str = ""
    tags: tuple[str, ...] = ()
    kind: str = ""
    source: str = ""
    cost: str = ""
    contract: str = ""
    state: str = ""
    sort: str = ""
    # "" both, "installed" or "available" (community-directory entries, catalogue/available.py).
    availability: str = ""

    @property
    def effective_sort(self) -> str:
        if self.sort in SORTS:
            return self.sort
        return "relevance" if self.q.strip() else "name"


@dataclass
class PackagePage:
    items: list[Package]
    count: int
    page: int
    page_size: int
    num_pages: int
    facets: list[dict[str, Any]] = field(default_factory=list)


def package_queryset(*, filters: PackageFilters) -> QuerySet[Package]:
    """The packages matching filters, ordered by the chosen sort (unevaluated)."""
    qs = package_search_backend().search(queryset=Package.objects.all(), query=filters.q)
    for tag in dict.fromkeys(filters.tags):  # AND: each tag narrows the result
        qs = qs.filter(pk__in=PackageTag.objects.filter(tag=tag).values("package_id"))
    if filters.kind:
        qs = qs.filter(kind=filters.kind)
    if filters.source:
        qs = qs.filter(source=filters.source)
    if filters.state:
        qs = qs.filter(state=filters.state)
    if filters.cost in ("llm", "function"):
        qs = qs.filter(
            pk__in=PackageTag.objects.filter(tag=f"cost:{filters.cost}").values("package_id")
        )
    elif filters.cost == "none":
        qs = qs.exclude(
            pk__in=PackageTag.objects.filter(tag__startswith="cost:").values("package_id")
        )
    if filters.contract:
        qs = qs.filter(
            pk__in=PackageContract.objects.filter(
                contract__contract_id=filters.contract, relation=PackageContract.Relation.PROVIDES
            ).values("package_id")
        )
    order = {
        "relevance": ("-rank", "name_key", "package_id"),
        "name": ("name_key", "package_id"),
        "updated": ("-indexed_at", "package_id"),
    }[filters.effective_sort]
    return qs.order_by(*order)


def _list_prefetches() -> list[Prefetch]:
    return [
        Prefetch("tags", queryset=PackageTag.objects.order_by("derived", "position")),
        Prefetch(
            "contract_links",
            queryset=PackageContract.objects.select_related("contract").order_by(
                "relation", "position"
            ),
        ),
    ]


def package_page(
    *,
    filters: PackageFilters,
    page: int = 1,
    page_size: int = DEFAULT_PAGE_SIZE,
    facets: bool = False,
    offset: int | None = None,
) -> PackagePage:
    """One page of packages (with tags and contracts prefetched) and the total count.

    offset (the API's paging) starts the page at that item instead of at page's first."""
    page_size = max(1, min(page_size, MAX_PAGE_SIZE))
    qs = package_queryset(filters=filters)
    count = qs.count()
    num_pages = max(1, -(-count // page_size))
    page = max(1, page)
    start = (page - 1) * page_size if offset is None else max(0, offset)
    items = _page_items(qs, start, page_size) if start < count else []
    result = PackagePage(
        items=items, count=count, page=page, page_size=page_size, num_pages=num_pages
    )
    if facets:
        # Nothing narrows the list: count every tag row, without asking which packages match.
        unfiltered = replace(filters, sort="") == PackageFilters() and not filters.q.strip()
        result.facets = tag_counts(queryset=None if unfiltered else qs)
    return result


def _page_items(qs: QuerySet[Package], start: int, page_size: int) -> list[Package]:
    """The page's packages in qs's order. The order is found over the ids alone, which a
    narrow index can answer (catalogue_package_name_order), and only the page's rows are read
    whole: sorting thousands of matches no longer carries their columns along."""
    ids = list(qs.values_list("pk", flat=True)[start : start + page_size])
    # A list item never needs the big columns (the manifest above all): leave them in the database.
    rows = (
        Package.objects.filter(pk__in=ids)
        .defer(*LIST_DEFERRED)
        .prefetch_related(*_list_prefetches())
    )
    by_id = {row.pk: row for row in rows}
    return [by_id[pk] for pk in ids if pk in by_id]


def tag_counts(*, queryset: QuerySet[Package] | None = None) -> list[dict[str, Any]]:
    """[{"tag", "count"}] over queryset (every package when None), most used first."""
    tags = PackageTag.objects.all()
    if queryset is not None:
        tags = tags.filter(package__in=queryset.order_by().values("pk"))
    # A package carries a tag at most once (catalogue_unique_tag), so counting rows counts
    # packages: no DISTINCT, and the tag index alone answers it.
    rows = tags.values("tag").annotate(count=Count("pk")).order_by("-count", "tag")
    return [{"tag": r["tag"], "count": r["count"]} for r in rows]


def contract_providers() -> list[dict[str, Any]]:
    """Every contract with its providers and its default provider (None when none is marked)."""
    links = (
        PackageContract.objects.filter(relation=PackageContract.Relation.PROVIDES)
        .select_related("contract", "package")
        .only("is_default", "contract__contract_id", "package__package_id")
        .order_by("contract__contract_id", "package__package_id")
    )
    found: dict[str, dict[str, Any]] = {}
    for link in links:
        entry = found.setdefault(
            link.contract.contract_id,
            {"contract": link.contract.contract_id, "providers": [], "default": None},
        )
        entry["providers"].append(link.package.package_id)
        if link.is_default and entry["default"] is None:
            entry["default"] = link.package.package_id
    return list(found.values())


def contract_ids() -> list[str]:
    """The contracts some package provides: each contract asks its (contract, relation) index
    once, instead of a DISTINCT over every package's links."""
    provided = PackageContract.objects.filter(
        contract=OuterRef("pk"), relation=PackageContract.Relation.PROVIDES
    )
    return list(Contract.objects.filter(Exists(provided)).values_list("contract_id", flat=True))


def package_providers_of(*, contract_id: str) -> QuerySet[Package]:
    """Who provides narrative-engine@2? One query."""
    return Package.objects.filter(
        contract_links__contract__contract_id=contract_id,
        contract_links__relation=PackageContract.Relation.PROVIDES,
    )


def providers_by_contract(*, contract_ids: list[str]) -> dict[str, list[str]]:
    """{contract: [ids of loaded packages providing it]} in one query."""
    found: dict[str, list[str]] = {c: [] for c in contract_ids}
    if not contract_ids:
        return found
    rows = (
        PackageContract.objects.filter(
            relation=PackageContract.Relation.PROVIDES,
            contract__contract_id__in=contract_ids,
            package__state=Package.State.LOADED,
        )
        .values_list("contract__contract_id", "package__package_id")
        .order_by("package__package_id")
    )
    for contract, package_id in rows:
        found[contract].append(package_id)
    return found


def package_get(*, package_id: str) -> Package | None:
    """One package with every child row prefetched (a fixed number of queries)."""
    return (
        Package.objects.filter(package_id=package_id)
        .prefetch_related(
            *_list_prefetches(),
            "links",
            Prefetch("runtimes", queryset=Runtime.objects.order_by("position")),
            Prefetch("http_permissions", queryset=HttpPermission.objects.select_related("runtime")),
            "tools",
            "actions",
            Prefetch("commands", queryset=Command.objects.prefetch_related("arguments")),
            "action_kinds",
            "services",
            "extensions",
            "hooks",
            "events",
            Prefetch("settings", queryset=Setting.objects.prefetch_related("options")),
            "datasets",
            "data_namespaces",
            "ui_specs",
        )
        .first()
    )


# --- The card: everything the detail page shows, as plain data ------------------------------


def package_localized(package: Package) -> dict[str, str]:
    """The package's own text in the request's language (displayName, description, body), or
    {} when it ships none for that language (docs/catalogue.md, "Languages")."""
    language = translation.get_language() or settings.LANGUAGE_CODE
    translations = package.translations or {}
    if language.startswith("en") or not translations:
        return {}
    chosen = pick_locale(list(translations), [language])
    return translations.get(chosen, {}) if chosen else {}


def package_summary(package: Package) -> dict[str, Any]:
    """The list item: a package with prefetched tags and contract links."""
    links = list(package.contract_links.all())
    localized = package_localized(package)
    return {
        "id": package.package_id,
        "displayName": localized.get("displayName") or package.name,
        "description": localized.get("description") or package.description,
        "kind": package.kind,
        "version": package.version,
        "source": package.source,
        "trust": package.trust,
        "state": package.state,
        "codeState": package.code_state,
        "codeError": package.code_error,
        "tags": [t.tag for t in package.tags.all()],
        "author": {"name": package.author_name, "url": package.author_url or None}
        if package.author_name
        else None,
        "provides": [
            {"contract": c.contract.contract_id, "default": c.is_default}
            for c in links
            if c.relation == "provides"
        ],
        "requires": [c.contract.contract_id for c in links if c.relation == "requires"],
        "updatedAt": package.indexed_at.isoformat() if package.indexed_at else None,
    }


def _ms(value: int | None) -> str:
    if value is None:
        return ""
    return f"{value / 1000:g} s" if value >= 1000 else f"{value} ms"


def _runtime_card(runtime: Runtime) -> dict[str, Any]:
    settle_wait = (
        runtime.max_settle_wait_ms
        if runtime.max_settle_wait_ms is not None
        else DEFAULT_SETTLE_WAIT_MS
    )
    io = runtime.data.get("io") if isinstance(runtime.data, dict) else None
    concealed = bool(io.get("concealed")) if isinstance(io, dict) else False
    limits = []
    if runtime.detached and runtime.settle:
        limits.append(f"the next action waits for it up to {_ms(settle_wait)}")
    if runtime.max_queue_ms is not None:
        limits.append(f"queued at most {_ms(runtime.max_queue_ms)}")
    if runtime.max_execution_ms is not None:
        limits.append(f"runs at most {_ms(runtime.max_execution_ms)}")
    return {
        "id": runtime.runtime_id,
        "qualifiedId": runtime.qualified_id,
        "file": runtime.file,
        "description": runtime.description,
        "kind": runtime.kind,
        "stage": runtime.stage or None,
        "trigger": runtime.trigger,
        "topic": runtime.trigger_topic or None,
        "modelSlot": runtime.model_slot or None,
        "visibility": runtime.visibility,
        "outputContract": runtime.output_contract or None,
        "background": runtime.background,
        "subagentOnly": runtime.subagent_only,
        "detached": runtime.detached,
        "settle": runtime.settle,
        "maxSettleWaitMs": settle_wait if runtime.detached and runtime.settle else None,
        "maxQueueMs": runtime.max_queue_ms,
        "maxExecutionMs": runtime.max_execution_ms,
        "limits": limits,
        "details": runtime_details(runtime.data, kind=runtime.kind),
        "concealed": concealed,
        # Agents only; a concealed runtime's prompt is removed from API results (spec).
        "promptSummary": prompt_summary(runtime.prompt)
        if runtime.kind == "agent" and not concealed
        else "",
    }


def runtimes_by_stage(runtimes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runtimes grouped in stage order; manual, event and sub-agent runtimes come last."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for runtime in runtimes:
        groups[runtime["stage"] if runtime["stage"] in STAGES else "on-demand"].append(runtime)
    return [{"stage": s, "runtimes": groups[s]} for s in (*STAGES, "on-demand") if groups.get(s)]


def _methods(methods: list[str]) -> str:
    return ", ".join(methods) + " requests" if methods else "requests"


def permissions_in_plain_language(package: Package, runtimes: list[dict[str, Any]]) -> list[str]:
    lines: list[str] = []
    if package.trust == Package.Trust.COMMUNITY:
        lines.append("Community code: staff must approve it before any session can use it.")
    else:
        lines.append("Bundled with Covel Hub: trusted.")
    if package.entry:
        lines.append(f"Runs its own JavaScript code ({package.entry}) inside the plugin host.")
    for perm in package.http_permissions.all():
        if perm.runtime_id is None:
            lines.append(f"Its code may send {_methods(perm.methods)} to {perm.origin}.")
        else:
            lines.append(
                f"Runtime {perm.runtime.runtime_id} may send {_methods(perm.methods)} to {perm.origin}."
            )
    slots = sorted({r["modelSlot"] for r in runtimes if r["kind"] == "agent" and r["modelSlot"]})
    if slots:
        lines.append(
            f"Calls a language model (model slot: {', '.join(slots)}), which may cost money."
        )
    namespaces = [d.namespace for d in package.data_namespaces.all()] + [
        d.name for d in package.datasets.all()
    ]
    if namespaces:
        lines.append(f"Keeps its own data in the session: {', '.join(namespaces)}.")
    writers = [s.contract for s in package.services.all() if s.access == "write"]
    if writers:
        lines.append(f"Lets other packages change its data through: {', '.join(writers)}.")
    if any(r["detached"] for r in runtimes):
        lines.append("Runs some work in the background after a turn ends.")
    if any(r["concealed"] for r in runtimes):
        lines.append("Handles hidden content that players are not shown.")
    hooks = [h.event for h in package.hooks.all()]
    if hooks:
        lines.append(f"Hooks into session events: {', '.join(hooks)}.")
    return lines


def package_card(package: Package) -> dict[str, Any]:
    """The card the detail page and the API share, as JSON-ready data (package from
    package_get), the declared sections of package_declarations included: one dict for both,
    so the page and the API cannot drift."""
    runtimes = [_runtime_card(r) for r in package.runtimes.all()]
    contract_links = list(package.contract_links.all())
    links = [
        {
            "id": link.pk,
            "kind": link.kind,
            "label": link.label,
            "url": link.url,
            "confirmUrl": reverse("catalogue:link", args=[package.package_id, link.pk]),
        }
        for link in package.links.all()
    ]
    card = package_summary(package)
    card.update(
        {
            "license": package.license or None,
            "homepage": next(
                (
                    {"url": x["url"], "confirmUrl": x["confirmUrl"]}
                    for x in links
                    if x["kind"] == "homepage"
                ),
                None,
            ),
            "covel": package.covel_range or None,
            "entry": package.entry or None,
            "promptSummary": package.prompt_summary,
            "tagDetails": [{"tag": t.tag, "derived": t.derived} for t in package.tags.all()],
            "author": {
                "name": package.author_name,
                "url": package.author_url or None,
                "urlConfirm": next((x["confirmUrl"] for x in links if x["kind"] == "author"), None),
                "about": package.author_about,
                "links": [x for x in links if x["kind"] == "author-link"],
            }
            if package.author_name or links
            else None,
            "conflicts": [
                c.contract.contract_id for c in contract_links if c.relation == "conflicts"
            ],
            # Who could satisfy each requirement: the player's first question before play.
            "requiresProviders": [
                {"contract": contract, "providers": providers}
                for contract, providers in providers_by_contract(
                    contract_ids=[
                        c.contract.contract_id for c in contract_links if c.relation == "requires"
                    ]
                ).items()
            ],
            "settings": [
                {
                    "key": s.key,
                    "type": s.type,
                    "label": s.label,
                    "description": s.description,
                    "default": s.default,
                    "hasDefault": s.has_default,
                    "min": s.min,
                    "max": s.max,
                    "step": s.step,
                    "options": [{"value": o.value, "label": o.label} for o in s.options.all()],
                }
                for s in package.settings.all()
            ],
            "permissions": {
                "http": [
                    {
                        "runtime": p.runtime.runtime_id if p.runtime_id else None,
                        "origin": p.origin,
                        "methods": p.methods,
                    }
                    for p in package.http_permissions.all()
                ],
                "summary": permissions_in_plain_language(package, runtimes),
            },
            "runtimes": runtimes,
            "stages": runtimes_by_stage(runtimes),
            "tools": [t.name for t in package.tools.all()],
            "actions": [a.name for a in package.actions.all()],
            "commands": [
                {
                    "name": c.name,
                    "description": c.description,
                    "action": c.action,
                    "aliases": c.aliases,
                    "context": c.context,
                    "arguments": [
                        {
                            "name": a.name,
                            "type": a.type,
                            "description": a.description,
                            "required": a.required,
                            "variadic": a.variadic,
                            "choices": a.choices,
                        }
                        for a in c.arguments.all()
                    ],
                }
                for c in package.commands.all()
            ],
            "actionKinds": [
                {
                    "name": k.name,
                    "label": k.label,
                    "icon": k.icon or None,
                    "placeholder": k.placeholder or None,
                    "roles": k.roles,
                    "text": k.text,
                    "actor": k.actor,
                    "schema": k.schema or None,
                }
                for k in package.action_kinds.all()
            ],
            "services": [
                {"contract": s.contract, "access": s.access, "modelFacing": s.model_facing}
                for s in package.services.all()
            ],
            "extensions": [
                {
                    "point": e.point,
                    "id": e.extension_id,
                    "order": e.order,
                    "slot": e.slot or None,
                    "watch": e.watch,
                    "preview": e.preview,
                }
                for e in package.extensions.all()
            ],
            "hooks": [{"event": h.event, "enforce": h.enforce} for h in package.hooks.all()],
            "events": [
                {
                    "topic": e.topic,
                    "schema": e.schema,
                    "description": e.description,
                    "advertise": e.advertise,
                }
                for e in package.events.all()
            ],
            "datasets": [
                {
                    "name": d.name,
                    "schema": d.schema,
                    "key": d.key or None,
                    "ops": d.ops,
                    "tools": d.tools,
                    "description": d.description,
                }
                for d in package.datasets.all()
            ],
            "dataNamespaces": [
                {
                    "namespace": d.namespace,
                    "schema": d.schema,
                    "description": d.description,
                    "version": d.version,
                    "accepts": d.accepts,
                    "authoring": d.authoring,
                    "searchField": d.search_field or None,
                }
                for d in package.data_namespaces.all()
            ],
            "ui": [{"placement": u.placement, "path": u.path} for u in package.ui_specs.all()],
            "errors": package.errors,
            "warnings": package.warnings,
            "shadowed": package.shadowed,
            **package_declarations(package),
            "manifest": package.manifest,
        }
    )
    return card


def package_filters_from(params: Any) -> PackageFilters:
    """PackageFilters from a QueryDict (the browser list) or any mapping with getlist."""

    def one(name: str) -> str:
        return (params.get(name) or "").strip()

    return PackageFilters(
        q=one("q"),
        tags=tuple(t for t in params.getlist("tag") if t),
        kind=one("kind"),
        source=one("source"),
        cost=one("cost") if one("cost") in COSTS else "",
        contract=one("contract"),
        state=one("state"),
        sort=one("sort") if one("sort") in SORTS else "",
        availability=one("availability") if one("availability") in AVAILABILITY else "",
    )


# --- Declared sections: what the manifest says beyond the index rows, in plain language ------
# Read from the stored manifest and the prefetched runtime rows, so they cost no query. An
# invalid package stores its raw frontmatter: every value is type-checked, never trusted.

BUILTIN_FORM_TOOL = "create-form"  # the builtin tool an agent asks the player to fill a form with
KERNEL_INPUTS = {
    "turn-digest@1": "the turn digest (the player's message and the story text of the turn)",
    "operations@1": "the writes staged by earlier runtimes of the turn",
}
SEGMENT_PLACES = {
    "system": "in the system prompt",
    "pre-history": "before the conversation history",
    "post-history": "after the conversation history",
}
GENERATE_CHOICES = {
    "offer": "the world generator offers to write it",
    "default": "the world generator writes it unless the author opts out",
}
REFERENCE_TARGETS = {
    "character-attribute": "an attribute of the world's characters",
    "world-dimension": "a dimension the world declares",
}


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: Any) -> str:
    """A declared scalar as text; anything else (lists, objects, booleans) counts as absent."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:g}" if isinstance(value, float) else str(value)
    return ""


def _texts(value: Any) -> list[str]:
    return [v for v in _as_list(value) if isinstance(v, str) and v]


def _number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _times(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _runtime_ref(value: Any) -> str:
    """A needs/after entry: a runtime ID (string or {runtime}) or {contract, cardinality}."""
    if isinstance(value, str):
        return f"runtime {value}" if value else ""
    value = _as_dict(value)
    if _text(value.get("runtime")):
        return f"runtime {_text(value.get('runtime'))}"
    contract = _text(value.get("contract"))
    if not contract:
        return ""
    who = "every provider" if value.get("cardinality") == "all" else "the provider"
    return f"{who} of {contract}"


def _agent_tool_names(tools: dict[str, Any]) -> list[str]:
    names = _texts(tools.get("builtin")) + _texts(tools.get("plugin"))
    for item in _as_list(tools.get("services")):
        item = {"contract": item} if isinstance(item, str) else _as_dict(item)
        contract = _text(item.get("contract"))
        if contract:
            # The spec's default tool name: the contract without its version, dots as dashes.
            name = _text(item.get("as")) or contract.split("@")[0].replace(".", "-")
            names.append(f"{name} (service {contract})")
    for item in _as_list(tools.get("datasets")):
        if isinstance(item, str) and item:
            names.append(f"the tools of dataset {item}")
        elif dataset := _text(_as_dict(item).get("dataset")):
            names.extend(f"{dataset}-{t}" for t in _texts(_as_dict(item).get("tools")))
    return names


def runtime_details(data: Any, *, kind: str) -> list[str]:
    """How often a runtime runs, what one run may cost and what it touches, as short phrases."""
    data = _as_dict(data)
    schedule = _as_dict(data.get("schedule"))
    trigger = _as_dict(schedule.get("trigger"))
    lines: list[str] = []
    every = _number(schedule.get("every"))
    if every is not None and every > 1:
        lines.append(f"runs every {every} turns")
    if (n := _number(trigger.get("startTurn"))) is not None:
        lines.append(f"not before turn {n}")
    if (n := _number(trigger.get("maxTriggerCount"))) is not None:
        lines.append(f"at most {_times(n, 'time', 'times')} a session")
    if (n := _number(trigger.get("cooldownTurns"))) is not None:
        lines.append(f"at least {_times(n, 'turn', 'turns')} between two runs")
    if kind == "agent":
        agent = _as_dict(data.get("agent"))
        history = _as_dict(agent.get("history"))
        if (n := _number(history.get("maxTurns"))) is not None:
            seen = (
                "sees no earlier turns" if n == 0 else f"sees the last {_times(n, 'turn', 'turns')}"
            )
            if history.get("includeSummaries") is True:
                seen += " and the saved summaries"
            lines.append(seen)
        loop = _as_dict(agent.get("loop"))
        # The loader writes the spec's loop defaults into every agent; a value equal to its
        # default says nothing about this package, so only the others are shown.
        story = _as_dict(data.get("io")).get("visibility") == "story"
        usual = loop_defaults(story=story)
        if (n := _number(loop.get("maxSteps"))) is not None:
            lines.append(f"at most {_times(n, 'model step', 'model steps')} a run")
        if (n := _number(loop.get("maxRetries"))) is not None and n != usual["maxRetries"]:
            lines.append(
                "never retries a failed model call"
                if n == 0
                else f"retries a failed model call up to {_times(n, 'time', 'times')}"
            )
        if (n := _number(loop.get("timeoutMs"))) is not None and n != usual["timeoutMs"]:
            lines.append(f"stops after {_ms(n)}")
        if agent.get("reasoning") is False:
            lines.append("model reasoning off")
        tools = _agent_tool_names(_as_dict(agent.get("tools")))
        if tools:
            lines.append("the model may call " + ", ".join(tools))
        if finish := _text(agent.get("finishWith")):
            lines.append(f"ends with a call to {finish}")
        after = _texts(_as_dict(agent.get("completion")).get("afterTools"))
        if after:
            lines.append("ends after a successful call to " + " or ".join(after))
    else:
        function = _as_dict(data.get("function"))
        if handler := _text(function.get("handler")):
            lines.append(f"code {handler}")
        if (n := _number(function.get("timeoutMs"))) is not None:
            lines.append(f"stops after {_ms(n)}")
        tools = _agent_tool_names(
            {k: v for k, v in _as_dict(function.get("tools")).items() if k in ("builtin", "plugin")}
        )
        if tools:
            lines.append("may call " + ", ".join(tools))
    if guard := _text(data.get("guard")):
        lines.append(f"a guard ({guard}) may skip a run")
    effects = _as_dict(data.get("effects"))
    if reads := _texts(effects.get("reads")):
        lines.append("reads " + ", ".join(reads))
    if writes := _texts(effects.get("writes")):
        lines.append("writes " + ", ".join(writes))
    if effects.get("parallelSafe") is True:
        lines.append("safe to run beside the other runtimes of its stage")
    return lines


def _runtime_connections(data: dict[str, Any]) -> list[str]:
    """How one runtime is connected to other runtimes, contracts and its own data."""
    schedule = _as_dict(data.get("schedule"))
    io = _as_dict(data.get("io"))
    lines: list[str] = []
    trigger = _as_dict(schedule.get("trigger"))
    if trigger.get("type") == "event" and _text(trigger.get("topic")):
        lines.append(f"starts when the event {_text(trigger.get('topic'))} is emitted")
    for name, binding in _as_dict(io.get("inputs")).items():
        binding = _as_dict(binding)
        source = _as_dict(binding.get("from"))
        kernel = _text(source.get("kernel"))
        where = KERNEL_INPUTS.get(kernel, kernel) if kernel else _runtime_ref(source)
        if not where:
            continue
        line = f"reads its input {name} from {where}"
        if select := _text(binding.get("select")):
            line += f" (the part at {select})"
        if binding.get("scope") == "committed":
            record = _text(binding.get("recordAs"))
            line += (
                f", as committed in an earlier turn under {record}" if record else ", as committed"
            )
        if not kernel and binding.get("required") is False:
            line += "; it runs without it"
        lines.append(line)
    for entry in _as_list(schedule.get("needs")):
        if ref := _runtime_ref(entry):
            session = _as_dict(entry).get("scope") == "session"
            lines.append(f"waits for {ref} to succeed" + (" at setup" if session else ""))
    for entry in _as_list(schedule.get("after")):
        if ref := _runtime_ref(entry):
            lines.append(f"runs after {ref}")
    output = _as_dict(io.get("output"))
    if contract := _text(output.get("contract")):
        lines.append(f"publishes its output as {contract}")
    if record := _text(output.get("recordAs")):
        lines.append(f"keeps its output under {record} for later turns")
    for block in map(_as_dict, _as_list(io.get("selfData"))):
        namespace = _text(block.get("namespace"))
        if not namespace:
            continue
        line = f"sees its own {namespace} data in the prompt"
        if tag := _text(block.get("as")):
            line += f" as {tag}"
        extras = [_text(block.get("format"))] if _text(block.get("format")) else []
        if (n := _number(block.get("maxEntries"))) is not None:
            extras.append(f"at most {_times(n, 'entry', 'entries')}")
        lines.append(line + (f" ({', '.join(extras)})" if extras else ""))
    return lines


def _runtime_asks(data: dict[str, Any]) -> str:
    """Why a runtime may put a form or another question to the player ("" when it cannot)."""
    tools = [
        *_texts(_as_dict(_as_dict(data.get("agent")).get("tools")).get("builtin")),
        *_texts(_as_dict(_as_dict(data.get("function")).get("tools")).get("builtin")),
    ]
    if BUILTIN_FORM_TOOL in tools:
        return f"may ask the player to fill in a form (tool {BUILTIN_FORM_TOOL})"
    if "interaction:*" in _texts(_as_dict(data.get("effects")).get("writes")):
        return "may ask the player for input, such as a form (it writes interaction:*)"
    return ""


def _segment_place(position: Any) -> str:
    if isinstance(position, str):
        return SEGMENT_PLACES.get(position, position)
    depth = _number(_as_dict(position).get("depth"))
    return f"inside the conversation history, at depth {depth}" if depth is not None else ""


def _authoring(namespace: str, spec: dict[str, Any]) -> dict[str, Any] | None:
    authoring = _as_dict(spec.get("authoring"))
    if not authoring:
        return None
    source = _as_dict(authoring.get("source"))
    lines: list[str] = []
    if path := _text(source.get("path")):
        lines.append(
            f"read from {path} in the world folder"
            + (f", one record per {key}" if (key := _text(source.get("key"))) else "")
        )
    if field_name := _text(authoring.get("characterField")):
        lines.append(f"written inside each character's record, under {field_name}")
    if source.get("visibility") == "hidden":
        lines.append("hidden from players until the package reveals it")
    if source.get("lorebook") is True:
        lines.append("also added to the lorebook")
    if example := _text(authoring.get("example")):
        lines.append(f"example: {example}")
    if generate := GENERATE_CHOICES.get(_text(authoring.get("generate"))):
        lines.append(generate)
    for ref in map(_as_dict, _as_list(authoring.get("references"))):
        if (path := _text(ref.get("path"))) and (to := _text(ref.get("to"))):
            lines.append(f"each value at {path} must name {REFERENCE_TARGETS.get(to, to)}")
    return {
        "namespace": namespace,
        "title": _text(authoring.get("title")) or namespace,
        "summary": _text(authoring.get("summary")),
        "hint": _text(authoring.get("hint")),
        "details": lines,
    }


def package_declarations(package: Package) -> dict[str, Any]:
    """The declared sections the detail page spells out beyond the index rows (package from
    package_get): wiring, forms, world projections, prompt text, published contract schemas
    and what a world can supply. Empty lists (and a null body) mean "nothing declared"."""
    manifest = _as_dict(package.manifest)
    contributes = _as_dict(manifest.get("contributes"))
    runtimes = list(package.runtimes.all())

    wiring = [
        {"runtime": r.qualified_id, "lines": lines}
        for r in runtimes
        if (lines := _runtime_connections(_as_dict(r.data)))
    ]
    asking = [
        {"runtime": r.qualified_id, "line": line}
        for r in runtimes
        if (line := _runtime_asks(_as_dict(r.data)))
    ]

    projections = []
    for projection_id, spec in _as_dict(contributes.get("worldProjections")).items():
        spec = _as_dict(spec)
        outputs = [
            {
                "id": output_id,
                "namespace": _text(_as_dict(out).get("namespace")),
                "key": _text(_as_dict(out).get("key")),
            }
            for output_id, out in _as_dict(spec.get("outputs")).items()
        ]
        projections.append(
            {
                "id": projection_id,
                "from": _text(spec.get("from")),
                "handler": _text(spec.get("handler")),
                "outputs": [o for o in outputs if o["namespace"]],
            }
        )

    segments = []
    for segment in map(_as_dict, _as_list(contributes.get("prompt"))):
        content = _text(segment.get("content"))
        if not content:
            continue
        segments.append(
            {
                "id": _text(segment.get("id")),
                "place": _segment_place(segment.get("position")),
                "role": _text(segment.get("role")) or "system",
                "content": content,
            }
        )

    prompts = []
    for runtime in runtimes:
        io = _as_dict(_as_dict(runtime.data).get("io"))
        concealed = io.get("concealed") is True
        text = "" if concealed else runtime.prompt.strip()
        if text or concealed:
            prompts.append(
                {
                    "runtime": runtime.qualified_id,
                    "file": runtime.file,
                    "kind": runtime.kind,
                    "concealed": concealed,
                    "text": text,
                }
            )

    return {
        "wires": _texts(contributes.get("wires")),
        "wiring": wiring,
        "forms": _texts(contributes.get("forms")),
        "asking": asking,
        "worldProjections": projections,
        "promptSegments": segments,
        "promptExtensions": [
            {"point": e.point, "id": e.extension_id}
            for e in package.extensions.all()
            if e.point.startswith("prompt.segment@")
        ],
        "prompts": prompts,
        # The PLUGIN.md body no runtime owns (notes for people); None when empty.
        "body": (package.body or "").strip() or None,
        "contractSchemas": [
            {"contract": contract, "schema": _text(_as_dict(spec).get("schema"))}
            for contract, spec in _as_dict(manifest.get("contracts")).items()
            if _text(_as_dict(spec).get("schema"))
        ],
        "worldContent": [
            entry
            for namespace, spec in _as_dict(contributes.get("data")).items()
            if (entry := _authoring(namespace, _as_dict(spec)))
        ],
    }
