"""Package files as they arrive (a ZIP upload or a git tree), checked before anything is written.

Plain Python, no Django: the limits are Covel's installer limits (apps/server/src/routes/api/
install/shared.ts in ackness/covel) and the sync's hostile-file rules (catalogue/manifest/
package_files.py). Every refusal names the entry it is about; nothing here touches the disk
except reading the archive it is given.
"""

from __future__ import annotations

import hashlib
import json
import stat
import unicodedata
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from io import BytesIO

from catalogue.manifest.package_files import MAX_PACKAGE_BYTES, MAX_PACKAGE_FILE_BYTES

MAX_COMPRESSED_BYTES = 20 * 1024 * 1024
MAX_ENTRIES = 2000
MAX_UNPACKED_BYTES = 200 * 1024 * 1024
MAX_RATIO = 100
MAX_NAME_LENGTH = 512
# Written by the installer next to the files it installed; a package may never bring its own.
RECEIPT_FILE = ".covel-install.json"


class ArchiveRefused(Exception):
    """An archive or tree that may not be installed; `entry` names the file when there is one."""

    def __init__(self, message: str, *, code: str, status: int = 400, entry: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.entry = entry


@dataclass(frozen=True)
class Entry:
    path: str  # posix, relative, checked
    content: bytes


def _refuse(message: str, code: str, entry: str = "", status: int = 400) -> ArchiveRefused:
    return ArchiveRefused(message, code=code, status=status, entry=entry)


def clean_path(raw: str) -> str:
    """The entry's relative posix path, or a refusal naming it (absolute, `..`, control chars)."""
    name = raw.replace("\\", "/")
    if not name or len(name) > MAX_NAME_LENGTH:
        raise _refuse(f"entry name is empty or longer than {MAX_NAME_LENGTH}", "bad-name", raw)
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        raise _refuse(f"{raw!r}: control characters in an entry name", "bad-name", raw)
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise _refuse(f"{raw}: absolute path", "absolute-path", raw)
    parts = [p for p in name.split("/") if p not in ("",)]
    if any(p == ".." for p in parts):
        raise _refuse(f"{raw}: a path leaving the package (..)", "path-escape", raw)
    parts = [p for p in parts if p != "."]
    if not parts:
        raise _refuse(f"{raw}: empty path", "bad-name", raw)
    return "/".join(parts)


def check_tree(entries: Iterable[Entry], *, allow_receipt: bool = False) -> list[Entry]:
    """The rules every set of package files meets, whatever it came from."""
    seen: dict[str, str] = {}
    out: list[Entry] = []
    total = 0
    for entry in entries:
        base = entry.path.rsplit("/", 1)[-1]
        if base == RECEIPT_FILE and not allow_receipt:
            raise _refuse(
                f"{entry.path}: {RECEIPT_FILE} is written by the installer; a package may not "
                "bring its own",
                "reserved-file",
                entry.path,
            )
        key = unicodedata.normalize("NFC", entry.path).casefold()
        if key in seen:
            raise _refuse(
                f"{entry.path}: collides with {seen[key]} on a case-insensitive disk",
                "case-collision",
                entry.path,
            )
        seen[key] = entry.path
        if len(entry.content) > MAX_PACKAGE_FILE_BYTES:
            raise _refuse(
                f"{entry.path}: {len(entry.content)} bytes, over the {MAX_PACKAGE_FILE_BYTES} "
                "bytes a package file may have",
                "file-too-large",
                entry.path,
                413,
            )
        total += len(entry.content)
        out.append(entry)
    if total > MAX_PACKAGE_BYTES:
        raise _refuse(
            f"the package holds {total} bytes, over {MAX_PACKAGE_BYTES}",
            "package-too-large",
            "",
            413,
        )
    # A file and a folder of the same name cannot both be written.
    folders = {e.path.rsplit("/", 1)[0].casefold() for e in out if "/" in e.path}
    for e in out:
        if e.path.casefold() in folders:
            raise _refuse(f"{e.path}: both a file and a folder", "case-collision", e.path)
    return out


def read_zip(data: bytes) -> list[Entry]:
    """Every file of a ZIP, checked against the limits before one byte is unpacked."""
    if len(data) > MAX_COMPRESSED_BYTES:
        raise _refuse(
            f"the archive is {len(data)} bytes, over {MAX_COMPRESSED_BYTES}", "too-large", "", 413
        )
    try:
        archive = zipfile.ZipFile(BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, ValueError, EOFError) as exc:
        raise _refuse(f"not a ZIP archive: {exc}", "bad-archive") from exc
    if len(infos) > MAX_ENTRIES:
        raise _refuse(
            f"the archive has {len(infos)} entries, over {MAX_ENTRIES}", "too-many-entries"
        )
    declared = 0
    files = []
    for info in infos:
        name = clean_path(info.filename)
        mode = info.external_attr >> 16
        kind_bits = stat.S_IFMT(mode)
        if info.create_system == 3 and kind_bits and kind_bits not in (stat.S_IFREG, stat.S_IFDIR):
            kind = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file"
            raise _refuse(f"{info.filename}: {kind}", "not-regular", info.filename)
        if info.is_dir():
            continue
        declared += info.file_size
        if declared > MAX_UNPACKED_BYTES:
            raise _refuse(
                f"unpacked, the archive would be over {MAX_UNPACKED_BYTES} bytes",
                "too-large-unpacked",
                info.filename,
                413,
            )
        files.append((name, info))
    if data and declared / len(data) > MAX_RATIO:
        raise _refuse(
            f"the archive expands {declared / len(data):.1f} times, over {MAX_RATIO}",
            "expansion-ratio",
        )
    entries = []
    unpacked = 0
    for name, info in files:
        # The declared sizes may lie: read at most one byte past what was declared.
        with archive.open(info) as handle:
            content = handle.read(info.file_size + 1)
        if len(content) != info.file_size:
            raise _refuse(
                f"{info.filename}: its size does not match the archive's",
                "bad-archive",
                info.filename,
            )
        unpacked += len(content)
        entries.append(Entry(name, content))
    if data and unpacked / len(data) > MAX_RATIO:
        raise _refuse(f"the archive expands more than {MAX_RATIO} times", "expansion-ratio")
    return check_tree(entries)


def select(entries: Iterable[Entry], directory: str) -> list[Entry]:
    """The files under one folder of a tree, their paths made relative to it."""
    prefix = f"{directory.strip('/')}/" if directory.strip("/") else ""
    return [Entry(e.path[len(prefix) :], e.content) for e in entries if e.path.startswith(prefix)]


def digest(entries: Iterable[Entry]) -> str:
    """sha256 over the files sorted by path, each as its [path, length] header then its bytes
    (the shape of Covel's digestEntries); the installer's receipt never counts."""
    h = hashlib.sha256()
    for entry in sorted(entries, key=lambda e: e.path):
        if entry.path == RECEIPT_FILE:
            continue
        h.update(json.dumps([entry.path, len(entry.content)], separators=(",", ":")).encode())
        h.update(entry.content)
    return h.hexdigest()
