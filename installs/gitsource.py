"""Packages from git: links read the way Covel reads GitHub links, fetched with real git.

GitHub links (`https://github.com/<owner>/<repo>` or `.../tree/<ref>/<path>`, Covel's
parseGithubUrl in apps/server/src/routes/api/install/github-source.ts), any https git remote
(`<remote>`, `<remote>/tree/<ref>/<path>`, `<remote>/-/tree/<ref>/<path>`, or
`<remote>#<ref>:<path>`), and plain http only for a loopback host (a local mirror, the tests).

git runs with no terminal prompt, no credential helper, no hooks, no redirects and no protocol
but http(s): a shallow fetch of the one pinned commit into a throwaway repository, then the
tree is read blob by blob (`ls-tree`, `cat-file --batch`). Nothing of the package runs.
"""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from installs.archive import (
    MAX_COMPRESSED_BYTES,
    MAX_ENTRIES,
    MAX_RATIO,
    MAX_UNPACKED_BYTES,
    ArchiveRefused,
    Entry,
    check_tree,
    clean_path,
)

SHA = re.compile(r"^[0-9a-f]{40}$")
REF = re.compile(r"^[A-Za-z0-9_./-]{1,200}$")
PART = re.compile(r"^[A-Za-z0-9_.-]+$")
GIT_TIMEOUT = 60  # seconds for one git command (Covel: 30 s per HTTP request)


class SourceError(Exception):
    def __init__(self, message: str, *, status: int = 400, code: str = "bad-source") -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code


@dataclass(frozen=True)
class Location:
    remote: str  # what git fetches from
    repository: str  # what the source records (https://github.com/o/r for GitHub)
    ref: str | None
    directory: str


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_ref_and_path(ref: str | None, parts: list[str]) -> tuple[str | None, str]:
    if ref is not None and (
        not REF.match(ref) or any(p in ("", ".", "..") for p in ref.split("/"))
    ):
        raise SourceError(f"{ref!r} is not a git ref; encode a / in a branch name as %2F")
    if any(not PART.match(p) or p in (".", "..") for p in parts):
        raise SourceError("the package path may hold letters, digits, _, . and - only")
    return ref, "/".join(parts)


def parse_location(text: str) -> Location:
    text = text.strip()
    if not text or len(text) > 2048 or re.search(r"[\\\x00-\x20]", text):
        raise SourceError("enter an https git repository or a GitHub /tree/<ref>/<path> link")
    url = urlsplit(text)
    host = (url.hostname or "").lower()
    if url.scheme not in ("https", "http") or not host:
        raise SourceError("only https git links are accepted (http for a loopback host)")
    if url.scheme == "http" and not _loopback(host):
        raise SourceError("plain http is accepted for a loopback host only; use https")
    if url.username or url.password or url.query:
        raise SourceError("a link with credentials or a query is not accepted")
    if host == "github.com":
        if url.port or url.fragment:
            raise SourceError("use a GitHub repository or /tree/<ref>/<path> link")
        parts = url.path.strip("/").split("/")
        owner, repo = (parts + ["", ""])[:2]
        repo = repo.removesuffix(".git")
        if not re.match(r"^[A-Za-z0-9-]+$", owner) or not PART.match(repo) or repo in (".", ".."):
            raise SourceError("not a GitHub repository link")
        repository = f"https://github.com/{owner}/{repo}"
        if len(parts) == 2:
            return Location(repository + ".git", repository, None, "")
        if parts[2] != "tree" or len(parts) < 4:
            raise SourceError("use a repository link or a /tree/<ref>/<path> link")
        ref, directory = _check_ref_and_path(unquote(parts[3]), [unquote(p) for p in parts[4:]])
        return Location(repository + ".git", repository, ref, directory)
    base = f"{url.scheme}://{url.netloc}"
    path = url.path.rstrip("/")
    ref: str | None = None
    parts: list[str] = []
    if url.fragment:
        ref_text, _, dir_text = url.fragment.partition(":")
        ref = unquote(ref_text) or None
        parts = [unquote(p) for p in dir_text.strip("/").split("/") if p]
    else:
        for marker in ("/-/tree/", "/tree/"):
            if marker in path:
                path, rest = path.split(marker, 1)
                ref_text, *parts = rest.split("/")
                ref, parts = unquote(ref_text), [unquote(p) for p in parts if p]
                break
    ref, directory = _check_ref_and_path(ref, parts)
    return Location(base + path, base + path, ref, directory)


def _git(args: list[str], *, cwd: Path | None = None, input: bytes | None = None) -> bytes:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(cwd or tempfile.gettempdir()),
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_ASKPASS": "/bin/false",
        "LC_ALL": "C",
    }
    safe = [
        "-c",
        "credential.helper=",
        "-c",
        "core.hooksPath=" + os.devnull,
        "-c",
        "http.followRedirects=false",
        "-c",
        "protocol.allow=never",
        "-c",
        "protocol.https.allow=always",
        "-c",
        "protocol.http.allow=always",
        "-c",
        "core.symlinks=false",
    ]
    try:
        done = subprocess.run(
            ["git", *safe, *args],
            cwd=cwd,
            env=env,
            input=input,
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise SourceError(
            f"git {args[0]} took over {GIT_TIMEOUT} s", status=502, code="git-timeout"
        ) from exc
    if done.returncode != 0:
        raise _git_failure(args[0], done.stderr.decode("utf-8", "replace"))
    return done.stdout


def _git_failure(command: str, stderr: str) -> SourceError:
    last = (stderr.strip().splitlines() or ["failed"])[-1][:300]
    lowered = stderr.lower()
    if (
        "not found" in lowered
        or "repository" in lowered
        and "does not exist" in lowered
        or "404" in lowered
    ):
        return SourceError(f"repository or ref not found ({last})", status=404, code="not-found")
    if "429" in lowered or "rate limit" in lowered:
        return SourceError(f"the git host refuses for now ({last})", status=429, code="throttled")
    return SourceError(f"git {command} failed: {last}", status=502, code="git-failed")


def _ls_remote(remote: str, *patterns: str) -> dict[str, str]:
    out = _git(["ls-remote", "--symref", remote, *patterns]).decode("utf-8", "replace")
    refs: dict[str, str] = {}
    for line in out.splitlines():
        if line.startswith("ref: "):
            target, _, name = line[5:].partition("\t")
            refs[f"symref:{name}"] = target
            continue
        sha, _, name = line.partition("\t")
        if SHA.match(sha):
            refs[name] = sha
    return refs


def resolve(location: Location) -> tuple[str, dict[str, str]]:
    """The commit a link names now and what an update follows (Covel's tracking kinds)."""
    if location.ref is None:
        refs = _ls_remote(location.remote, "HEAD")
        if "HEAD" not in refs:
            raise SourceError("the repository has no default branch", status=404, code="not-found")
        return refs["HEAD"], {"kind": "default-branch"}
    if SHA.match(location.ref):
        return location.ref, {"kind": "pinned", "ref": location.ref}
    refs = _ls_remote(location.remote, f"refs/heads/{location.ref}", f"refs/tags/{location.ref}")
    if f"refs/heads/{location.ref}" in refs:
        return refs[f"refs/heads/{location.ref}"], {"kind": "branch", "ref": location.ref}
    tag = refs.get(f"refs/tags/{location.ref}^{{}}") or refs.get(f"refs/tags/{location.ref}")
    if tag:
        return tag, {"kind": "pinned", "ref": location.ref}
    raise SourceError(
        f"no branch or tag {location.ref!r} in {location.repository}", status=404, code="not-found"
    )


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def fetch_tree(location: Location, commit: str, *, ref_hint: str | None = None) -> list[Entry]:
    """Every file of the commit under the location's folder, checked like a ZIP."""
    if not SHA.match(commit):
        raise SourceError(f"{commit!r} is not a full commit id")
    with tempfile.TemporaryDirectory(prefix="covel-git-") as tmp:
        repo = Path(tmp)
        _git(["init", "--quiet", "--bare", str(repo)])
        try:
            _git(["fetch", "--quiet", "--no-tags", "--depth=1", location.remote, commit], cwd=repo)
        except SourceError:
            if not ref_hint:
                raise
            # A server that will not hand out a commit by id: fetch the ref, then it must match.
            _git(
                ["fetch", "--quiet", "--no-tags", "--depth=1", location.remote, ref_hint], cwd=repo
            )
            head = _git(["rev-parse", "FETCH_HEAD"], cwd=repo).decode().strip()
            if head != commit:
                raise SourceError(
                    f"{ref_hint} no longer points at {commit[:12]}; preview again",
                    status=409,
                    code="commit-changed",
                ) from None
        packed = _folder_bytes(repo / "objects")
        if packed > MAX_COMPRESSED_BYTES:
            raise ArchiveRefused(
                f"the fetched commit is {packed} bytes, over {MAX_COMPRESSED_BYTES}",
                code="too-large",
                status=413,
            )
        return _read_tree(repo, commit, location.directory, packed)


def _read_tree(repo: Path, commit: str, directory: str, packed: int) -> list[Entry]:
    listing = _git(["ls-tree", "-r", "-z", "--long", "--full-tree", commit], cwd=repo)
    items = [i for i in listing.decode("utf-8", "surrogateescape").split("\0") if i]
    if len(items) > MAX_ENTRIES:
        raise ArchiveRefused(
            f"the commit has {len(items)} files, over {MAX_ENTRIES}", code="too-many-entries"
        )
    prefix = f"{directory}/" if directory else ""
    wanted: list[tuple[str, str]] = []
    total = 0
    for item in items:
        meta, _, name = item.partition("\t")
        mode, kind, sha, size = meta.split()
        if not name.startswith(prefix):
            continue
        relative = clean_path(name[len(prefix) :])
        if kind != "blob" or mode not in ("100644", "100755"):
            what = (
                "a symbolic link"
                if mode == "120000"
                else "a submodule"
                if kind == "commit"
                else "not a regular file"
            )
            raise ArchiveRefused(f"{name}: {what}", code="not-regular", entry=name)
        total += int(size)
        if total > MAX_UNPACKED_BYTES:
            raise ArchiveRefused(
                f"the package is over {MAX_UNPACKED_BYTES} bytes",
                code="too-large-unpacked",
                status=413,
            )
        wanted.append((relative, sha))
    if packed and total / packed > MAX_RATIO:
        raise ArchiveRefused(
            f"the commit expands {total / packed:.1f} times, over {MAX_RATIO}",
            code="expansion-ratio",
        )
    if not wanted:
        raise SourceError(
            f"nothing at {directory or '/'} in {commit[:12]}", status=404, code="not-found"
        )
    blobs = _git(
        ["cat-file", "--batch"], cwd=repo, input="".join(f"{s}\n" for _, s in wanted).encode()
    )
    entries: list[Entry] = []
    offset = 0
    for relative, _sha in wanted:
        end = blobs.index(b"\n", offset)
        size = int(blobs[offset:end].split()[2])
        entries.append(Entry(relative, blobs[end + 1 : end + 1 + size]))
        offset = end + 1 + size + 1
    return check_tree(entries)


def package_folders(entries: list[Entry], *, limit: int = 20) -> list[str]:
    """The package folders of a tree: the tree itself when it is one, else every folder with a
    PLUGIN.md (hidden folders and node_modules skipped), as Covel's findPluginDirectories."""
    paths = {e.path for e in entries}
    if "PLUGIN.md" in paths:
        return [""]
    found = sorted(
        p[: -len("/PLUGIN.md")]
        for p in paths
        if p.endswith("/PLUGIN.md")
        and "/runtimes/" not in f"/{p}"
        and not any(s.startswith(".") or s == "node_modules" for s in p.split("/"))
    )
    # A folder inside another package is part of it, not a package of its own.
    tops = [f for f in found if not any(f.startswith(o + "/") for o in found if o != f)]
    if not tops:
        raise SourceError("no package here: expected a PLUGIN.md", code="no-package")
    if len(tops) > limit:
        raise SourceError(
            f"{len(tops)} packages here, over {limit}: link a more specific folder",
            code="too-many-packages",
        )
    return tops


def remove_quietly(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
