"""Small checks every part of the manifest shares: IDs, contracts, URLs, HTTP permissions,
origins, and the defensive readers (as_dict, as_list, ...) the rules use on frontmatter.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from catalogue.manifest.context import Context
from catalogue.manifest.origins import check_origin_reachable
from core.pointer import join

# Exactly the spec's "lowercase letters, digits and hyphens": "a--b" or "-a" are IDs too. Used
# with fullmatch, so a trailing newline is not let through.
PACKAGE_ID = re.compile(r"[a-z0-9-]+")
# The spec sets no length; the hub stores a package id in 100-character columns (catalogue,
# approvals, worlds, sessions), so a longer one is refused here rather than failing at indexing.
MAX_PACKAGE_ID_LENGTH = 100


def is_package_id(text: str) -> bool:
    """Whether text is a package ID the hub takes (the spec's syntax, at most 100 characters)."""
    return len(text) <= MAX_PACKAGE_ID_LENGTH and PACKAGE_ID.fullmatch(text) is not None


# Runtime folder names: the spec sets no syntax, so ours stays strict (kebab-case, at most 64).
RUNTIME_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
MAX_RUNTIME_ID_LENGTH = 64
RESERVED_IDS = frozenset({"framework"})
CONTRACT_ID = re.compile(r"^[a-z][a-z0-9.-]*@[1-9][0-9]*$")
MAX_AUTHOR_LINKS = 6
MAX_SETTLE_WAIT_MS = 120_000
DETACHED_STAGES = ("post-turn", "audit")
# The kinds every session already understands; a package may not redefine them.
BASE_ACTION_KINDS = frozenset({"say", "do", "think", "ooc", "continue", "retry"})
ALL_DATASET_OPS = ("set", "merge", "inc", "append", "insert", "remove", "upsertItem", "delete")
# Paths inside a world package that the kernel owns (contributes.data.*.authoring.source.path).
KERNEL_WORLD_PATHS = (
    "world.yaml",
    "WORLD.md",
    "data/world.data.yaml",
    "data/dimensions.yaml",
    "data/lorebook.yaml",
    "characters/characters.json",
    "media/gallery.json",
    "media/portraits.json",
    "media/scenes.json",
    "media/gallery/",
)
DEFAULT_TIMEOUT_MS = 120_000
DEFAULT_STORY_TIMEOUT_MS = 240_000


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def declared(value: Any) -> set[str] | None:
    """The names of a declaration list; None when the list itself is malformed (the schema says
    so, and references to it cannot be judged)."""
    if value is None:
        return set()
    if not isinstance(value, list):
        return None
    return {v for v in value if isinstance(v, str)}


def items(value: Any) -> Iterator[tuple[int, Any]]:
    return enumerate(as_list(value))


def entries(value: Any) -> Iterator[tuple[str, Any]]:
    return iter(as_dict(value).items())


# ---------------------------------------------------------------- small shared checks


def check_contract(ctx: Context, value: Any, *, file: str, path: str) -> None:
    if isinstance(value, str) and not CONTRACT_ID.match(value):
        ctx.error(
            file,
            path,
            "contract-id-syntax",
            f"{value!r} is not a contract ID: write name@N, e.g. narrative-engine@2",
        )


def check_url(ctx: Context, value: Any, *, file: str, path: str) -> None:
    """A link shown to players: https only, no credentials."""
    if not isinstance(value, str):
        return
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        ctx.error(file, path, "url-invalid", f"{value!r} is not a valid URL")
        return
    if parts.scheme.lower() != "https":
        ctx.error(file, path, "url-not-https", f"{value!r} must be an https:// address")
        return
    if "@" in parts.netloc:
        ctx.error(
            file, path, "url-has-credentials", f"{value!r} may not carry a user name or password"
        )
        return
    if not parts.hostname:
        ctx.error(file, path, "url-invalid", f"{value!r} has no host name")


def check_http_permissions(ctx: Context, value: Any, *, file: str, path: str) -> None:
    """permissions.http at package or runtime level: canonical https origins, unique methods."""
    seen: dict[str, int] = {}
    for i, entry in items(value):
        entry = as_dict(entry)
        origin = entry.get("origin")
        origin_path = join(path, i, "origin")
        if isinstance(origin, str):
            check_origin_reachable(ctx, origin, file=file, path=origin_path)
            canonical = check_origin(ctx, origin, file=file, path=origin_path)
            if canonical is not None:
                if canonical in seen:
                    ctx.error(
                        file,
                        origin_path,
                        "duplicate-origin",
                        f"{origin!r} is already listed at {join(path, seen[canonical])}; merge the methods",
                    )
                else:
                    seen[canonical] = i
        methods_seen: set[str] = set()
        for j, method in items(entry.get("methods")):
            if not isinstance(method, str):
                continue
            if method in methods_seen:
                ctx.error(
                    file,
                    join(path, i, "methods", j),
                    "duplicate-http-method",
                    f"{method} is listed twice",
                )
            methods_seen.add(method)


def check_origin(ctx: Context, value: str, *, file: str, path: str) -> str | None:
    """Return the canonical origin when value is one; else record the error and return None."""
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        ctx.error(file, path, "origin-invalid", f"{value!r} is not a valid origin")
        return None
    if parts.scheme.lower() != "https":
        ctx.error(file, path, "origin-not-https", f"{value!r} must be an https:// origin")
        return None
    if "@" in parts.netloc:
        ctx.error(
            file, path, "origin-has-credentials", f"{value!r} may not carry a user name or password"
        )
        return None
    host = parts.hostname
    if not host:
        ctx.error(file, path, "origin-invalid", f"{value!r} has no host name")
        return None
    shown_host = f"[{host}]" if ":" in host else host
    canonical = f"https://{shown_host}" + (f":{port}" if port not in (None, 443) else "")
    if value != canonical:
        if (
            parts.path not in ("", "/")
            or parts.query
            or parts.fragment
            or "?" in value
            or "#" in value
        ):
            reason = "without path, query or fragment"
        else:
            reason = "in canonical form"
        ctx.error(
            file,
            path,
            "origin-not-canonical",
            f"{value!r} must be an origin {reason}: write {canonical!r}",
        )
        return None
    return canonical


def offered_dataset_tools(dataset: dict[str, Any]) -> list[str]:
    """The tools a dataset offers: its written list, else get, list, upsert (set), update (others)."""
    written = dataset.get("tools")
    if isinstance(written, list):
        return [t for t in written if isinstance(t, str)]
    ops = dataset.get("ops")
    ops = [o for o in ops if isinstance(o, str)] if isinstance(ops, list) else list(ALL_DATASET_OPS)
    tools = ["get", "list"]
    if "set" in ops:
        tools.append("upsert")
    if any(op != "set" for op in ops):
        tools.append("update")
    return tools
