"""What the staff pages need beyond the API's services: a ZIP previewed before it is written.

The upload is kept in VAR_DIR/installs-uploads under a random name for the token's lifetime;
the preview signs its digest and id, and the confirm installs that exact file or refuses.
"""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings

from installs import tokens
from installs.archive import digest, read_zip
from installs.bundle import inspect_entries
from installs.services import (
    REFUSALS,
    InstallProblem,
    _problem,
    install_entries,
    reserved_ids,
)


def _uploads() -> Path:
    folder = Path(settings.VAR_DIR) / "installs-uploads"
    folder.mkdir(parents=True, exist_ok=True)
    now = tokens.now_ms() / 1000
    for old in folder.glob("*.zip"):  # expired previews' files
        if now - old.stat().st_mtime > tokens.LIFETIME_MS / 1000:
            old.unlink(missing_ok=True)
    return folder


def zip_preview(*, data: bytes, filename: str) -> dict[str, Any]:
    try:
        entries = read_zip(data)
    except REFUSALS as exc:
        raise _problem(exc, "unpack") from exc
    with tempfile.TemporaryDirectory(prefix="covel-preview-") as tmp:
        try:
            found = inspect_entries(
                entries,
                into=Path(tmp),
                reserved=reserved_ids(),
                host_version=settings.COVEL_HOST_VERSION,
            )
        except REFUSALS as exc:
            raise _problem(exc, "validate") from exc
    name = f"{uuid.uuid4().hex}.zip"
    (_uploads() / name).write_bytes(data)
    plugin = {
        **found.summary(),
        "source": {
            "kind": "zip",
            "filename": filename[:200],
            "digest": found.digest,
            "upload": name,
        },
        "expiresAt": tokens.now_ms() + tokens.LIFETIME_MS,
    }
    return {**plugin, "hub": found.details(), "token": tokens.sign("zip-install", plugin)}


def zip_confirm(*, token: str, actor: Any) -> dict[str, Any]:
    try:
        plugin = tokens.verify(token, actions=("zip-install",))["plugin"]
    except REFUSALS as exc:
        raise _problem(exc, "token") from exc
    upload = _uploads() / Path(plugin["source"]["upload"]).name
    if not upload.is_file():
        raise InstallProblem(
            "the uploaded file of this preview is gone (installed or expired); upload it again",
            status=409,
            code="upload_gone",
        )
    entries = read_zip(upload.read_bytes())
    source = {"kind": "zip", "filename": plugin["source"]["filename"], "digest": digest(entries)}
    try:
        inspection, _ = install_entries(
            entries,
            kind="zip",
            source=source,
            actor=actor,
            expect={"id": plugin["id"], "digest": plugin["source"]["digest"]},
        )
    finally:
        upload.unlink(missing_ok=True)
    return {"ok": True, "id": inspection.id}
