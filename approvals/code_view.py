"""The code staff are asked to approve, readable on the approval page: each server-code file of
the request as it is in the package folder, and a line diff against the same file of the last
approved version (its pinned copy in the approved-code store, approvals/store.py).

Read-only. Paths come from the request's own permission set, are confined to the folder they
are read from (no "..", no absolute path, no link leading out), and a file is read up to
MAX_VIEW_BYTES; plugin text is returned as text for the template to escape.
"""

from __future__ import annotations

import difflib
import hashlib
from pathlib import Path
from typing import Any

from approvals.models import ApprovalRequest
from approvals.store import code_digest, store_root
from catalogue.manifest.package_files import FileRefused, read_chunks

MAX_VIEW_BYTES = 256 * 1024
BINARY = "\0binary"  # stands for a file that is not text
# A diff longer than this is cut; the file itself stays readable in full above it.
MAX_DIFF_LINES = 2000


def _read(root: Path | None, relative: str) -> tuple[str | None, str | None]:
    """(the file's text, its sha256) or (None, None) when it is absent or may not be read."""
    if root is None:
        return None, None
    parts = relative.split("/")
    if not relative or relative.startswith("/") or ".." in parts:
        return None, None
    base = root.resolve()
    real = (base / relative).resolve()
    if base not in real.parents:
        return None, None
    try:
        data = b"".join(read_chunks(real, limit=MAX_VIEW_BYTES))
    except (FileRefused, OSError):
        return None, None
    digest = hashlib.sha256(data).hexdigest()
    if b"\0" in data[:8192]:
        return BINARY, digest  # an image or other binary: shown by its size and hash, not as text
    return data.decode("utf-8", errors="replace"), digest


def _diff(old: str | None, new: str | None, path: str) -> list[dict[str, str]]:
    lines = difflib.unified_diff(
        (old or "").splitlines(),
        (new or "").splitlines(),
        fromfile=f"approved/{path}",
        tofile=f"requested/{path}",
        lineterm="",
    )
    rows = []
    for index, line in enumerate(lines):
        if index >= MAX_DIFF_LINES:
            rows.append({"kind": "cut", "text": "… (the diff is cut here)"})
            break
        if line.startswith(("+++", "---")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "added"
        elif line.startswith("-"):
            kind = "removed"
        else:
            kind = "same"
        rows.append({"kind": kind, "text": line})
    return rows


def approval_code_files(*, request: ApprovalRequest) -> list[dict[str, Any]]:
    """Each server-code file of the request (and each one the last approval had that it drops):
    path, the requested text, whether the folder still holds the requested bytes, and the diff
    against the approved copy when there was an approval."""
    requested = {str(i["path"]): i.get("sha256") for i in request.permissions.get("code") or []}
    approved_code = (request.baseline_permissions or {}).get("code") or []
    approved = {str(i["path"]): i.get("sha256") for i in approved_code}
    approved_dir = store_root() / code_digest(approved_code) if approved_code else None
    if approved_dir is not None and not approved_dir.is_dir():
        approved_dir = None  # never loaded, so never copied: only the hashes can be compared
    source = Path(request.package.source_dir) if request.package_id else None
    files = []
    for path in sorted(set(requested) | set(approved)):
        text, sha = _read(source, path) if path in requested else (None, None)
        old, _ = _read(approved_dir, path) if path in approved else (None, None)
        if path not in approved:
            status = "added"
        elif path not in requested:
            status = "removed"
        elif approved[path] == requested[path]:
            status = "unchanged"
        else:
            status = "changed"
        binary = text == BINARY or old == BINARY
        if binary:
            text = None if text is None else ""
            old = None
        files.append(
            {
                "path": path,
                "status": status,
                "binary": binary,
                "text": text,
                # The folder may have moved on since the request: say so rather than show
                # bytes that are not the ones asked about.
                "stale": text is not None and sha != requested.get(path),
                "has_baseline": bool(approved_code),
                "baseline_readable": old is not None,
                "diff": _diff(old, text, path)
                if old is not None and status in ("changed", "removed")
                else [],
            }
        )
    return files
