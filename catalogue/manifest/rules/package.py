"""PLUGIN.md's own fields: the package ID and its folder, the covel host range, author, links,
requires/provides and the other top-level fields.
"""

from __future__ import annotations

import os

from catalogue.manifest.context import PLUGIN_FILE, Context
from catalogue.manifest.hostrange import RangeError, parse_version, satisfies
from catalogue.manifest.rules.common import (
    MAX_AUTHOR_LINKS,
    MAX_PACKAGE_ID_LENGTH,
    PACKAGE_ID,
    RESERVED_IDS,
    as_dict,
    as_list,
    check_contract,
    check_http_permissions,
    check_url,
    entries,
    items,
)
from catalogue.manifest.rules.contributes import check_contributes
from core.pointer import join

# ---------------------------------------------------------------- the package (PLUGIN.md)


def check_package(ctx: Context, *, folder: str, host_version: str) -> None:
    data = ctx.data
    f = PLUGIN_FILE
    _check_id(ctx, folder)
    covel = data.get("covel")
    if isinstance(covel, str):
        try:
            parse_version(host_version)
        except RangeError:
            # A configuration problem of this host, not of the package; still no silent pass.
            ctx.error(
                f,
                "/covel",
                "host-version-invalid",
                f"this host's version {host_version!r} is not X.Y.Z, so {covel!r} cannot be checked",
            )
            covel = None
    if isinstance(covel, str):
        try:
            ok = satisfies(host_version, covel)
        except RangeError as exc:
            ctx.error(
                f,
                "/covel",
                "host-range-invalid",
                f"the covel host range {covel!r} cannot be read: {exc}",
            )
        else:
            if not ok:
                ctx.error(
                    f,
                    "/covel",
                    "host-version-unsupported",
                    f"{ctx.package_id} needs Covel {covel}; this host runs {host_version}",
                )
    for i, tag in items(data.get("tags")):
        if not isinstance(tag, str):
            continue
        if tag.startswith("role:"):
            ctx.error(
                f,
                f"/tags/{i}",
                "tag-role-forbidden",
                f"{tag!r}: role: tags are not allowed; declare contracts instead",
            )
        elif tag.startswith(("ui:", "cost:")):
            ctx.warn(
                f,
                f"/tags/{i}",
                "tag-derived-ignored",
                f"{tag!r} is ignored: the loader derives ui:* and cost:* tags from the package itself",
            )
    author = as_dict(data.get("author"))
    check_url(ctx, author.get("url"), file=f, path="/author/url")
    links = as_list(author.get("links"))
    if len(links) > MAX_AUTHOR_LINKS:
        ctx.error(
            f,
            "/author/links",
            "too-many-author-links",
            f"the author lists {len(links)} links; at most {MAX_AUTHOR_LINKS} are allowed",
        )
    for i, link in items(links):
        check_url(ctx, as_dict(link).get("url"), file=f, path=f"/author/links/{i}/url")
    check_url(ctx, data.get("homepage"), file=f, path="/homepage")

    for i, entry in items(data.get("provides")):
        if isinstance(entry, dict):
            check_contract(ctx, entry.get("contract"), file=f, path=f"/provides/{i}/contract")
        else:
            check_contract(ctx, entry, file=f, path=f"/provides/{i}")
    outputs = {
        as_dict(as_dict(rt.data.get("io")).get("output")).get("contract") for rt in ctx.runtimes
    }
    for i, entry in items(data.get("provides")):
        # A runtime's output contract is provided anyway; listing it only makes sense as default.
        if isinstance(entry, str) and entry in outputs:
            ctx.warn(
                f,
                f"/provides/{i}",
                "provides-redundant",
                f"{entry!r} is a runtime's io.output.contract and is provided anyway; "
                "list it here only as {contract, default: true}",
            )
    for key in ("requires", "conflicts"):
        for i, entry in items(data.get(key)):
            check_contract(ctx, entry, file=f, path=f"/{key}/{i}")
    for contract, spec in entries(data.get("contracts")):
        check_contract(ctx, contract, file=f, path=join("/contracts", contract))
        ctx.check_path(
            as_dict(spec).get("schema"), file=f, path=join("/contracts", contract, "schema")
        )

    entry = data.get("entry")
    if entry is not None:
        ctx.check_path(entry, file=f, path="/entry")
    check_http_permissions(
        ctx, as_dict(data.get("permissions")).get("http"), file=f, path="/permissions/http"
    )
    check_contributes(ctx)
    has_entry = isinstance(entry, str) or os.path.isfile(
        os.path.join(ctx.root, "server", "index.js")
    )
    contributes = as_dict(data.get("contributes"))
    if not has_entry:
        for key in ("tools", "actions", "services", "hooks", "wires", "forms", "extensions"):
            if as_list(contributes.get(key)):
                ctx.error(
                    f,
                    f"/contributes/{key}",
                    "entry-missing",
                    f"contributes.{key} needs an entry module that registers it: add server/index.js or set entry",
                )
                break
    elif "version" not in data:
        ctx.warn(
            f,
            "/version",
            "version-missing",
            "a package with an entry module should have a version, raised with each release",
        )


def _check_id(ctx: Context, folder: str) -> None:
    f = PLUGIN_FILE
    written = ctx.data.get("id")
    if isinstance(written, str):
        if not PACKAGE_ID.fullmatch(written):
            ctx.error(
                f,
                "/id",
                "id-syntax",
                f"{written!r} is not a package ID: lowercase letters, digits and hyphens only",
            )
        elif len(written) > MAX_PACKAGE_ID_LENGTH:
            ctx.error(
                f,
                "/id",
                "id-too-long",
                f"the id is {len(written)} characters; the hub stores at most {MAX_PACKAGE_ID_LENGTH}",
            )
        elif written != folder:
            ctx.error(
                f,
                "/id",
                "id-mismatch",
                f"the id {written!r} must equal the package folder name {folder!r}",
            )
        if written in RESERVED_IDS:
            ctx.error(
                f, "/id", "id-reserved", f"{written!r} is reserved and cannot be a package ID"
            )
        return
    if "id" in ctx.data:
        return  # a non-string id: the schema reports its type
    if not PACKAGE_ID.fullmatch(folder):
        ctx.error(
            f,
            "",
            "id-syntax",
            f"the folder name {folder!r} is not a valid package ID: lowercase letters, digits and hyphens only",
        )
    elif len(folder) > MAX_PACKAGE_ID_LENGTH:
        ctx.error(
            f,
            "",
            "id-too-long",
            f"the folder name, the package ID, is {len(folder)} characters; the hub stores at most {MAX_PACKAGE_ID_LENGTH}",
        )
    if folder in RESERVED_IDS:
        ctx.error(f, "", "id-reserved", f"{folder!r} is reserved and cannot be a package ID")
