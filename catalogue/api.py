"""The catalogue API: thin functions over selectors."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Query, Router

from catalogue.api_schemas import (
    ContractOut,
    PackageCardOut,
    PackageListOut,
    PackageListQuery,
    TagCountOut,
)
from catalogue.available import available_entry, catalogue_page
from catalogue.selectors import (
    DEFAULT_PAGE_SIZE,
    PackageFilters,
    contract_providers,
    package_card,
    package_get,
    package_summary,
    tag_counts,
)
from core.errors import NotFound
from core.schemas import errors, page

router = Router(tags=["catalogue"])


@router.get("/packages", response={200: PackageListOut, **errors(422)}, by_alias=True)
def list_packages(request: HttpRequest, filters: Query[PackageListQuery]) -> dict:
    limit = filters.limit or filters.page_size or DEFAULT_PAGE_SIZE
    if filters.offset is not None:
        offset = filters.offset
    else:
        offset = (filters.page - 1) * limit if filters.page else 0
    found = catalogue_page(
        filters=PackageFilters(
            q=filters.q,
            tags=tuple(filters.tag),
            kind=filters.kind or "",
            source=filters.source or "",
            cost=filters.cost or "",
            contract=filters.contract or "",
            state=filters.state or "",
            sort=filters.sort or "",
            availability=filters.availability or "",
        ),
        page_size=limit,
        offset=offset,
    )
    # Installed packages first, then the community directory's entries not installed.
    items = [{**package_summary(p), "installed": True} for p in found.items] + found.available
    return page(items, count=found.count, limit=limit, offset=offset)


@router.get(
    "/packages/{package_id}", response={200: PackageCardOut, **errors(404, 422)}, by_alias=True
)
def get_package(request: HttpRequest, package_id: str) -> dict:
    package = package_get(package_id=package_id)
    if package is None:
        if available_entry(package_id=package_id) is not None:
            raise NotFound(
                f"No package with id {package_id!r} is installed; the community directory offers "
                "it (GET /api/packages?availability=available lists it, staff install it)."
            )
        raise NotFound(f"No package with id {package_id!r} is installed.")
    return package_card(package)


@router.get("/tags", response=list[TagCountOut])
def list_tags(request: HttpRequest) -> list[dict]:
    return tag_counts()


@router.get("/contracts", response=list[ContractOut])
def list_contracts(request: HttpRequest) -> list[dict]:
    return contract_providers()
