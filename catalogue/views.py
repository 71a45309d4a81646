"""Browser catalogue: thin views over selectors and services."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from catalogue import callouts
from catalogue.available import available_entry, catalogue_page
from catalogue.graph import contract_graph_svg
from catalogue.models import ExternalLink, Package
from catalogue.plain import package_plain_words
from catalogue.readme import SERVED_TYPES, markdown_html, package_file, package_readme_html
from catalogue.search import nearest_names
from catalogue.selectors import (
    AVAILABILITY,
    COSTS,
    SORTS,
    contract_ids,
    package_card,
    package_filters_from,
    package_get,
    package_localized,
    package_summary,
)
from catalogue.services import packages_sync
from catalogue.templatetags.catalogue_tags import query_string
from catalogue.versions import package_version_history

PAGE_SIZE = 20


def _usability(package_ids: list[str]) -> dict[str, Any]:
    """May sessions use each package (approval state)? Approvals sits above the catalogue, so
    its answer comes through the slot approvals registers (catalogue/callouts.py)."""
    return callouts.packages_usability.get()(package_ids=package_ids)


def _provenance(package_id: str) -> dict[str, Any] | None:
    """Where an installed package came from (installs/, above the catalogue, through its slot);
    None for a package nobody installed from the web."""
    return callouts.package_provenance.get()(package_id=package_id)


def _page_number(value: str | None) -> int:
    try:
        return max(1, int(value or 1))
    except ValueError:
        return 1


@require_GET
def package_list(request: HttpRequest) -> HttpResponse:
    filters = package_filters_from(request.GET)
    # Installed packages, then the community directory's entries not installed (available.py).
    page = catalogue_page(
        filters=filters,
        page=_page_number(request.GET.get("page")),
        page_size=PAGE_SIZE,
        facets=True,
    )
    if page.page > page.num_pages:  # a stale link past the end shows the last page
        page = catalogue_page(
            filters=filters, page=page.num_pages, page_size=PAGE_SIZE, facets=True
        )
    # Whether each package on the page may be used (pending, denied...): two queries per page.
    usability = _usability([p.package_id for p in page.items])
    selected = set(filters.tags)
    facets = []
    for facet in page.facets:
        tags = [t for t in filters.tags if t != facet["tag"]]
        if facet["tag"] not in selected:
            tags.append(facet["tag"])
        query = request.GET.copy()
        query.setlist("tag", tags)
        query.pop("page", None)
        facets.append(
            {**facet, "selected": facet["tag"] in selected, "url": "?" + query.urlencode()}
        )
    # An empty search suggests the nearest names (one more query, only when nothing matched).
    suggestions = []
    if page.count == 0 and filters.q.strip():
        names = dict(Package.objects.values_list("package_id", "display_name"))
        suggestions = [
            {"id": package_id, "url": query_string(request.GET, q=package_id, page=None)}
            for package_id in nearest_names(filters.q, names)
        ]
    context = {
        "filters": filters,
        "page": page,
        "suggestions": suggestions,
        "items": [
            {"summary": package_summary(p), "package": p, "usability": usability.get(p.package_id)}
            for p in page.items
        ],
        "facets": facets,
        "available": page.available,
        # The badges say installed / available once the list can hold both.
        "mixed": page.available_count > 0 or bool(filters.availability),
        "availabilities": AVAILABILITY,
        "contracts": contract_ids(),
        "kinds": ["plugin", "core"],
        "sources": Package.Source.choices,
        "costs": COSTS,
        "sorts": SORTS,
        "clear_url": reverse("catalogue:list"),
        "prev_url": query_string(request.GET, page=page.page - 1) if page.page > 1 else None,
        "next_url": query_string(request.GET, page=page.page + 1)
        if page.page < page.num_pages
        else None,
    }
    # htmx swaps only the results, except when Back finds no snapshot and asks for the whole page.
    partial = request.headers.get("HX-Request") and not request.headers.get(
        "HX-History-Restore-Request"
    )
    template = "catalogue/_results.html" if partial else "catalogue/list.html"
    return render(request, template, context)


@require_GET
def package_detail(request: HttpRequest, package_id: str) -> HttpResponse:
    package = package_get(package_id=package_id)
    if package is None:
        entry = available_entry(package_id=package_id)
        if entry is None:
            raise Http404("No package with this id is installed.")
        return render(request, "catalogue/available.html", {"entry": entry})
    card = package_card(package)
    graph = contract_graph_svg(
        package_id=package.package_id,
        provides=[(p["contract"], p["default"]) for p in card["provides"]],
        requires=card["requires"],
        conflicts=card["conflicts"],
        contract_url=reverse("catalogue:list"),
    )
    usability = _usability([package.package_id]).get(package.package_id)
    folder = Path(package.source_dir)
    context = {
        "package": package,
        "card": card,
        "graph": graph,
        "show_paths": request.user.is_staff,
        "usability": usability,
        "provenance": _provenance(package.package_id),
        # A code-only package sends nothing to a model: its notes are not "what it tells" one.
        "tells_model": any(r["kind"] == "agent" for r in card["runtimes"]),
        "plain": package_plain_words(card=card, usability=usability),
        "versions": package_version_history(package),
        "readme_html": package_readme_html(
            package_id=package.package_id, package_dir=folder, text=package.readme
        ),
        "body_html": markdown_html(
            package_localized(package).get("body") or card["body"],
            package_id=package.package_id,
            package_dir=folder,
        )
        if card.get("body")
        else "",
    }
    return render(request, "catalogue/detail.html", context)


@require_GET
def package_file_view(request: HttpRequest, package_id: str, path: str) -> FileResponse:
    """A file a README links to, served from the package folder and confined to it: images and
    plain text only, sandboxed so an SVG or a text file can never run script on our origin."""
    package = get_object_or_404(Package, package_id=package_id)
    target = package_file(package_dir=Path(package.source_dir), relative=path)
    if target is None:
        raise Http404("No such file in this package.")
    response = FileResponse(target.open("rb"), content_type=SERVED_TYPES[target.suffix.lower()])
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; img-src 'self'; sandbox"
    response["Cache-Control"] = "public, max-age=300"
    return response


@require_GET
def package_link(request: HttpRequest, package_id: str, link_id: int) -> HttpResponse:
    """Shows the full address a package declares and lets the player decide; never redirects."""
    link = get_object_or_404(
        ExternalLink.objects.select_related("package"), pk=link_id, package__package_id=package_id
    )
    if not link.url.lower().startswith("https://"):
        raise Http404("This address is not an https address.")
    return render(request, "catalogue/link.html", {"link": link, "package": link.package})


@require_POST
def package_resync(request: HttpRequest) -> HttpResponse:
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    if not request.user.is_staff:
        raise PermissionDenied("Only staff may re-sync the catalogue.")
    summary = packages_sync()
    messages.success(request, f"Catalogue re-synced: {summary.line()}.")
    return redirect("catalogue:list")
