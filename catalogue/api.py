"""The catalogue API: thin functions over selectors."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Query, Router
from ninja.responses import Status

from catalogue.api_schemas import (
    ContractOut,
    ErrorOut,
    PackageCardOut,
    PackageListOut,
    PackageListQuery,
    TagCountOut,
)
from catalogue.selectors import (
    PackageFilters,
    contract_providers,
    package_card,
    package_get,
    package_page,
    package_summary,
    tag_counts,
)

router = Router(tags=["catalogue"])


@router.get("/packages", response=PackageListOut, by_alias=True)
def list_packages(request: HttpRequest, filters: Query[PackageListQuery]) -> dict:
    page = package_page(
        filters=PackageFilters(
            q=filters.q,
            tags=tuple(filters.tag),
            kind=filters.kind or "",
            source=filters.source or "",
            cost=filters.cost or "",
            contract=filters.contract or "",
            state=filters.state or "",
            sort=filters.sort or "",
        ),
        page=filters.page,
        page_size=filters.page_size,
    )
    return {"items": [package_summary(p) for p in page.items], "count": page.count}


@router.get("/packages/{package_id}", response={200: PackageCardOut, 404: ErrorOut}, by_alias=True)
def get_package(request: HttpRequest, package_id: str) -> Status:
    package = package_get(package_id=package_id)
    if package is None:
        return Status(404, {"detail": f"No package with id {package_id!r} is installed."})
    return Status(200, package_card(package))


@router.get("/tags", response=list[TagCountOut])
def list_tags(request: HttpRequest) -> list[dict]:
    return tag_counts()


@router.get("/contracts", response=list[ContractOut])
def list_contracts(request: HttpRequest) -> list[dict]:
    return contract_providers()
