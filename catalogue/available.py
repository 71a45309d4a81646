"""Reads: the catalogue list with the community directory's "available" entries merged in.

Installed packages come first (package_page, whatever search backend it uses), then the
directory entries that are not installed and match the same search, so one paging (page or
offset) runs over both. Directory entries live in installs/, above the catalogue, and are reached
through the `available_entries` slot (catalogue/callouts.py): two queries (a count and, when the
page has room, one slice), whatever the size of the directory.

An entry declares only an id, a name, a description, an author and a category; it is a Covel
plugin with community code, and nothing else about it is known before its files are previewed.
So a filter that needs what only the files say (a tag, a cost, a contract, a validity, a core
kind, or the folder it was installed from) matches no available entry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from catalogue import callouts
from catalogue.models import Package
from catalogue.selectors import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, PackageFilters, package_page


@dataclass
class CataloguePage:
    items: list[Package]  # the installed packages on this page
    available: list[dict[str, Any]]  # then the available entries on it (installs' summary shape)
    count: int  # installed_count + available_count
    installed_count: int
    available_count: int
    page: int
    page_size: int
    num_pages: int
    facets: list[dict[str, Any]] = field(default_factory=list)


def available_may_match(filters: PackageFilters) -> bool:
    """Can a directory entry match these filters at all? (Only the search and the kind can.)"""
    if filters.availability == "installed":
        return False
    return not (
        filters.tags
        or filters.source
        or filters.cost
        or filters.contract
        or filters.state
        or filters.kind not in ("", "plugin")
    )


def catalogue_page(
    *,
    filters: PackageFilters,
    page: int = 1,
    page_size: int = DEFAULT_PAGE_SIZE,
    facets: bool = False,
    offset: int | None = None,
) -> CataloguePage:
    """One page over the installed packages then the available entries, with both counts."""
    page_size = max(1, min(page_size, MAX_PAGE_SIZE))
    page = max(1, page)
    start = (page - 1) * page_size if offset is None else max(0, offset)
    if filters.availability == "available":
        installed_items: list[Package] = []
        installed_count, tag_facets = 0, []
    else:
        installed = package_page(
            filters=filters, page=page, page_size=page_size, facets=facets, offset=start
        )
        installed_items, installed_count = installed.items, installed.count
        tag_facets = installed.facets
    available_count, available = 0, []
    if available_may_match(filters):
        available_count, available = callouts.available_entries.get()(
            q=filters.q,
            sort=filters.effective_sort,
            offset=max(0, start - installed_count),
            limit=page_size - len(installed_items),
        )
    count = installed_count + available_count
    return CataloguePage(
        items=installed_items,
        available=available,
        count=count,
        installed_count=installed_count,
        available_count=available_count,
        page=page,
        page_size=page_size,
        num_pages=max(1, -(-count // page_size)),
        facets=tag_facets,
    )


def available_entry(*, package_id: str) -> dict[str, Any] | None:
    """The directory entry with this id when no installed package has it (the detail page)."""
    return callouts.available_entry.get()(package_id=package_id)
