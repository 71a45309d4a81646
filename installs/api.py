"""Covel's install API, served by the hub under /api/install/ (docs/install.md). Staff only.

Thin: parse, call one service, answer. Every refusal is an InstallProblem (core.errors shape)
with the status Covel answers; `details.step` says where it happened, `details.entry` names
the archive entry and `details.issues` the manifest problems.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import File, Router, Status
from ninja.files import UploadedFile

from core.auth import hub_auth
from core.errors import Forbidden
from core.schemas import errors
from installs import remote
from installs.archive import MAX_COMPRESSED_BYTES
from installs.directory import directory_source_set
from installs.schemas import BatchIn, DirectoryIn, PreviewIn, TokenIn, UpdateCheckIn
from installs.selectors import directory_entries, installation_list, installation_out
from installs.services import InstallProblem, uninstall, zip_install

router = Router(tags=["install"], auth=hub_auth)
# Every status an install operation may answer (Covel's, plus the hub's 422 for a body that
# does not match the request shape).
REFUSED = errors(400, 401, 403, 404, 409, 413, 422, 429, 502)


def _staff(request: HttpRequest) -> Any:
    if not request.user.is_staff:
        raise Forbidden("only staff may install, update or remove packages", code="staff_only")
    return request.user


def _upload(request: HttpRequest, file: UploadedFile | None) -> tuple[bytes, str]:
    length = request.META.get("CONTENT_LENGTH") or ""
    if length.isdigit() and int(length) > MAX_COMPRESSED_BYTES + 64 * 1024:
        raise InstallProblem(
            f"upload exceeds {MAX_COMPRESSED_BYTES} bytes", status=413, code="too_large"
        )
    if file is None:
        raise InstallProblem('multipart field "file" is required', code="no_file")
    data = file.read(MAX_COMPRESSED_BYTES + 1)
    if len(data) > MAX_COMPRESSED_BYTES:
        raise InstallProblem(
            f"upload exceeds {MAX_COMPRESSED_BYTES} bytes", status=413, code="too_large"
        )
    return data, file.name or "upload.zip"


@router.post("/install/plugin", response={201: dict, **REFUSED})
def install_zip(request: HttpRequest, file: UploadedFile = File(None)) -> Status:  # noqa: B008
    actor = _staff(request)
    data, name = _upload(request, file)
    return Status(201, zip_install(data=data, filename=name, actor=actor))


@router.post("/install/plugin/github/preview", response={200: dict, **REFUSED})
def github_preview(request: HttpRequest, body: PreviewIn) -> dict:
    _staff(request)
    return remote.github_preview(url=body.url)


@router.post("/install/plugin/github", response={201: dict, **REFUSED})
def github_install(request: HttpRequest, body: TokenIn) -> Status:
    return Status(201, remote.github_install(token=body.token, actor=_staff(request)))


@router.get("/install/plugins", response={200: dict, **REFUSED})
def installed(request: HttpRequest) -> dict:
    _staff(request)
    return {"items": [installation_out(row) for row in installation_list()]}


@router.post("/install/github/preview", response={200: dict, **REFUSED})
def collection_preview(request: HttpRequest, body: PreviewIn) -> dict:
    _staff(request)
    return remote.collection_preview(url=body.url)


@router.post("/install/github/batch", response={201: dict, **REFUSED})
def batch(request: HttpRequest, body: BatchIn) -> Status:
    return Status(201, remote.batch_install(tokens_in=body.tokens, actor=_staff(request)))


@router.post("/install/collection", response={201: dict, **REFUSED})
def collection_zip(request: HttpRequest, file: UploadedFile = File(None)) -> Status:  # noqa: B008
    actor = _staff(request)
    data, name = _upload(request, file)
    return Status(201, remote.collection_zip_install(data=data, filename=name, actor=actor))


@router.post("/install/plugin/github/update/preview", response={200: dict, **REFUSED})
def update_preview(request: HttpRequest, body: UpdateCheckIn) -> dict:
    _staff(request)
    return remote.update_check(package_id=body.id, url=body.url)


@router.post("/install/plugin/github/update", response={201: dict, **REFUSED})
def update_install(request: HttpRequest, body: TokenIn) -> Status:
    return Status(201, remote.update_apply(token=body.token, actor=_staff(request)))


@router.delete("/install/plugin/github/update/{package_id}", response={200: dict, **REFUSED})
def update_cancel(request: HttpRequest, package_id: str) -> dict:
    _staff(request)
    return remote.update_cancel(package_id=package_id)


@router.delete("/install/plugin/{package_id}", response={200: dict, **REFUSED})
def plugin_uninstall(request: HttpRequest, package_id: str, detach: bool = False) -> dict:
    _staff(request)
    return uninstall(package_id=package_id, detach=detach)


@router.get("/install/directory", response={200: dict, **REFUSED})
def directory(request: HttpRequest, q: str = "", category: str = "") -> dict:
    _staff(request)
    return {"items": [e.data for e in directory_entries(q=q, category=category)]}


@router.put("/install/directory", response={200: dict, **REFUSED})
def directory_set(request: HttpRequest, body: DirectoryIn) -> dict:
    _staff(request)
    source = directory_source_set(kind=body.kind, location=body.location)
    return {"entries": source.entries.count(), "problems": source.problems, "commit": source.commit}
