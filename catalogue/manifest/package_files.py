"""The files of a package folder, read as hostile input: regular files only, capped, streamed.

Sync, the loader, the approval hash and the approved-code store all walk a package through
this module, so a FIFO, a device, a socket or a link out of the package is refused the same way
everywhere (named in an Issue) and never opened, and no file is read whole into memory.
No Django here: the loader uses it.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from catalogue.manifest.types import Issue

# A single package file larger than this is refused (manifests have their own 1 MiB limit).
MAX_PACKAGE_FILE_BYTES = 4 * 1024 * 1024
# The sum of a package's files (node_modules/ and VCS folders excluded).
MAX_PACKAGE_BYTES = 32 * 1024 * 1024
MAX_PACKAGE_FILES = 2000
# Never part of a package's content: VCS data and vendored installs (which the host never
# loads: plugin code may import only files of the package itself, and the approved copy it runs
# from holds no node_modules/).
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "node_modules"})
CHUNK = 1 << 16

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


# Issues that refuse the whole package at once; a link out of the package is only never
# followed (a manifest path through one is the loader's path-escapes error at that field).
REFUSING_CODES = frozenset(
    {"special-file", "file-too-large", "too-many-files", "package-too-large", "file-unreadable"}
)


class FileRefused(OSError):
    """A package file that may not be read: not regular, too large, or outside the package."""


def kind_of(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


@dataclass(frozen=True)
class PackageFile:
    relative: str  # posix path inside the package
    real: str  # the file to read (a link inside the package is read through its target)
    size: int
    mtime_ns: int
    inode: int


@dataclass
class Inventory:
    files: list[PackageFile] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)

    def signature(self) -> tuple[tuple[str, int, int, int], ...]:
        """What a change to any file changes (without reading it): names, sizes, times, inodes."""
        return tuple((f.relative, f.size, f.mtime_ns, f.inode) for f in self.files)


def _inside(real_root: str, real: str) -> bool:
    return real == real_root or real.startswith(real_root + os.sep)


def package_inventory(root: str | os.PathLike[str]) -> Inventory:
    """Every regular file of the package, sorted, and an Issue for each file it refuses.

    Refused (and never opened): FIFOs, sockets, devices; symbolic links that lead outside the
    package (links to folders are not followed either way); files over MAX_PACKAGE_FILE_BYTES;
    everything past MAX_PACKAGE_FILES or MAX_PACKAGE_BYTES.
    """
    root = os.path.abspath(root)
    real_root = os.path.realpath(root)
    inventory = Inventory()
    total = 0
    count = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
        for name in list(dirnames):
            full = os.path.join(dirpath, name)
            if os.path.islink(full):
                relative = Path(os.path.relpath(full, root)).as_posix()
                if not _inside(real_root, os.path.realpath(full)):
                    inventory.issues.append(_escape(relative))
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            relative = Path(os.path.relpath(full, root)).as_posix()
            try:
                info = os.lstat(full)
                real = full
                if stat.S_ISLNK(info.st_mode):
                    real = os.path.realpath(full)
                    if not _inside(real_root, real):
                        inventory.issues.append(_escape(relative))
                        continue
                    if not os.path.lexists(real):
                        continue  # a dangling link is no file; a manifest naming it is told so
                    info = os.stat(real)
            except OSError as exc:
                inventory.issues.append(
                    Issue(
                        relative,
                        "",
                        "file-unreadable",
                        f"{relative} cannot be read: {exc.strerror or exc}",
                    )
                )
                continue
            if not stat.S_ISREG(info.st_mode):
                if stat.S_ISDIR(info.st_mode):
                    continue  # a link to a folder inside the package: not followed
                inventory.issues.append(
                    Issue(
                        relative,
                        "",
                        "special-file",
                        f"{relative} is {kind_of(info.st_mode)}; a package may hold only regular "
                        "files and folders, and the hub never opens anything else",
                    )
                )
                continue
            if info.st_size > MAX_PACKAGE_FILE_BYTES:
                inventory.issues.append(
                    Issue(
                        relative,
                        "",
                        "file-too-large",
                        f"{relative} is {info.st_size} bytes; a package file may be at most "
                        f"{MAX_PACKAGE_FILE_BYTES} bytes",
                    )
                )
                continue
            count += 1
            total += info.st_size
            if count > MAX_PACKAGE_FILES:
                inventory.issues.append(
                    Issue(
                        relative,
                        "",
                        "too-many-files",
                        f"the package has more than {MAX_PACKAGE_FILES} files (the first one "
                        f"past the limit is {relative})",
                    )
                )
                return inventory
            if total > MAX_PACKAGE_BYTES:
                inventory.issues.append(
                    Issue(
                        relative,
                        "",
                        "package-too-large",
                        f"the package's files add up to more than {MAX_PACKAGE_BYTES} bytes "
                        f"(the limit is passed at {relative})",
                    )
                )
                return inventory
            inventory.files.append(
                PackageFile(relative, real, info.st_size, info.st_mtime_ns, info.st_ino)
            )
    inventory.files.sort(key=lambda f: f.relative)
    return inventory


def _escape(relative: str) -> Issue:
    return Issue(
        relative,
        "",
        "path-escapes",
        f"{relative} is a symbolic link that leads outside the package",
    )


def open_regular(path: str | os.PathLike[str], *, limit: int = MAX_PACKAGE_FILE_BYTES) -> BinaryIO:
    """Open a file for reading only if it is a regular file of at most limit bytes.

    The open itself cannot block (O_NONBLOCK: a FIFO swapped in after a check is refused by
    fstat, not waited on), and the type is checked on the open descriptor, so nothing can be
    swapped in between the check and the read.
    """
    try:
        info = os.stat(path)
    except OSError as exc:
        raise FileRefused(f"{path} cannot be read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise FileRefused(f"{path} is {kind_of(info.st_mode)}")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            raise FileRefused(f"{path} is {kind_of(opened.st_mode)}")
        if opened.st_size > limit:
            raise FileRefused(f"{path} is {opened.st_size} bytes, over the limit of {limit} bytes")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_chunks(
    path: str | os.PathLike[str], *, limit: int = MAX_PACKAGE_FILE_BYTES
) -> Iterator[bytes]:
    """The bytes of a regular file in chunks; FileRefused when it grows past limit while read."""
    with open_regular(path, limit=limit) as handle:
        seen = 0
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            seen += len(chunk)
            if seen > limit:
                raise FileRefused(f"{path} grew past the limit of {limit} bytes while it was read")
            yield chunk


def read_bytes(path: str | os.PathLike[str], *, limit: int) -> bytes:
    return b"".join(read_chunks(path, limit=limit))


def file_sha256(path: str | os.PathLike[str], *, limit: int = MAX_PACKAGE_FILE_BYTES) -> str:
    digest = hashlib.sha256()
    for chunk in read_chunks(path, limit=limit):
        digest.update(chunk)
    return digest.hexdigest()
