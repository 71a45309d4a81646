"""The rules a JSON Schema cannot express, each with its own stable code.

Every rule reads the frontmatter defensively: the schema pass reports wrong types, and a rule
simply skips a value that is not the shape it expects, so one bad field never hides another.

One piece, past 800 lines: it is the list of PLUGIN.md's rules in the order an author writes
the manifest (package, runtimes, references between runtimes, locale variants), each rule a
function with its own code over the small shared checks at the top; a reader looking up a rule
code finds it here, in that order.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from jsonschema import Draft202012Validator, ValidationError, validators
from jsonschema.exceptions import SchemaError
from referencing import Registry
from referencing.exceptions import Unresolvable

from catalogue.manifest.context import PLUGIN_FILE, Context, RuntimeDoc
from catalogue.manifest.hostrange import RangeError, parse_version, satisfies
from catalogue.manifest.origins import check_origin_reachable
from core.pointer import is_pointer, join

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
    _check_contributes(ctx)
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


def _check_contributes(ctx: Context) -> None:
    f = PLUGIN_FILE
    c = as_dict(ctx.data.get("contributes"))
    base = "/contributes"
    actions = declared(c.get("actions"))

    names_seen: dict[str, str] = {}
    for i, command in items(c.get("commands")):
        command = as_dict(command)
        action = command.get("action")
        if isinstance(action, str) and actions is not None and action not in actions:
            ctx.error(
                f,
                f"{base}/commands/{i}/action",
                "command-action-undeclared",
                f"the command's action {action!r} is not listed in contributes.actions",
            )
        for key, where in [("name", f"{base}/commands/{i}/name")] + [
            (j, f"{base}/commands/{i}/aliases/{j}")
            for j in range(len(as_list(command.get("aliases"))))
        ]:
            name = command.get("name") if key == "name" else as_list(command.get("aliases"))[key]
            if not isinstance(name, str):
                continue
            if name in names_seen:
                ctx.error(
                    f,
                    where,
                    "duplicate-command",
                    f"/{name} is already declared at {names_seen[name]}",
                )
            else:
                names_seen[name] = where
        arguments = as_list(command.get("arguments"))
        argument_names: set[str] = set()
        for j, argument in items(arguments):
            argument = as_dict(argument)
            name = argument.get("name")
            if isinstance(name, str):
                if name in argument_names:
                    ctx.error(
                        f,
                        f"{base}/commands/{i}/arguments/{j}/name",
                        "duplicate-argument",
                        f"the argument name {name!r} is used twice",
                    )
                argument_names.add(name)
            if argument.get("variadic") is True and j != len(arguments) - 1:
                ctx.error(
                    f,
                    f"{base}/commands/{i}/arguments/{j}/variadic",
                    "variadic-not-last",
                    "only the last argument can be variadic",
                )

    kinds_seen: set[str] = set()
    for i, kind in items(c.get("actionKinds")):
        kind = as_dict(kind)
        name = kind.get("name")
        if isinstance(name, str):
            if name in BASE_ACTION_KINDS:
                ctx.error(
                    f,
                    f"{base}/actionKinds/{i}/name",
                    "action-kind-reserved",
                    f"{name!r} is a base action kind; choose another name",
                )
            elif name in kinds_seen:
                ctx.error(
                    f,
                    f"{base}/actionKinds/{i}/name",
                    "duplicate-action-kind",
                    f"the action kind {name!r} is declared twice",
                )
            kinds_seen.add(name)
        if "schema" in kind:
            ctx.check_path(kind.get("schema"), file=f, path=f"{base}/actionKinds/{i}/schema")

    for i, service in items(c.get("services")):
        if isinstance(service, dict):
            check_contract(
                ctx, service.get("contract"), file=f, path=f"{base}/services/{i}/contract"
            )
        else:
            check_contract(ctx, service, file=f, path=f"{base}/services/{i}")

    topics: set[str] = set()
    for i, event in items(c.get("events")):
        event = as_dict(event)
        topic = event.get("topic")
        if isinstance(topic, str):
            if topic in topics:
                ctx.error(
                    f,
                    f"{base}/events/{i}/topic",
                    "duplicate-event-topic",
                    f"the event {topic!r} is declared twice",
                )
            topics.add(topic)
        ctx.check_path(event.get("schema"), file=f, path=f"{base}/events/{i}/schema")

    _check_settings(ctx, c.get("settings"))
    _check_datasets(ctx, c.get("datasets"))
    _check_data(ctx, c.get("data"))

    ui = as_dict(c.get("ui"))
    for placement, paths in ui.items():
        for i, spec in items(paths):
            ctx.check_path(spec, file=f, path=join(f"{base}/ui", placement, i))

    # watch names the package's own namespaces (spec); every plugin.data namespace is the package's
    # own, declared or not, and Covel's packages watch undeclared ones. So it is a note, not an error.
    namespaces = _namespaces(c)
    for i, extension in items(c.get("extensions")):
        for j, namespace in items(as_dict(extension).get("watch")):
            if (
                isinstance(namespace, str)
                and namespaces is not None
                and namespace not in namespaces
            ):
                ctx.warn(
                    f,
                    f"{base}/extensions/{i}/watch/{j}",
                    "namespace-undeclared",
                    f"watch names {namespace!r}, which contributes.data does not declare; the slot "
                    "refreshes when this package writes it, but no schema describes it",
                )
    for name, projection in entries(c.get("worldProjections")):
        projection = as_dict(projection)
        ctx.check_path(
            projection.get("handler"),
            file=f,
            path=join(f"{base}/worldProjections", name, "handler"),
        )
        for out_id, output in entries(projection.get("outputs")):
            namespace = as_dict(output).get("namespace")
            if (
                isinstance(namespace, str)
                and namespaces is not None
                and namespace not in namespaces
            ):
                ctx.error(
                    f,
                    join(f"{base}/worldProjections", name, "outputs", out_id, "namespace"),
                    "namespace-undeclared",
                    f"{namespace!r} is not one of this package's data namespaces (contributes.data or datasets)",
                )

    prompt_ids: set[str] = set()
    for i, segment in items(c.get("prompt")):
        segment_id = as_dict(segment).get("id")
        if isinstance(segment_id, str):
            if segment_id in prompt_ids:
                ctx.error(
                    f,
                    f"{base}/prompt/{i}/id",
                    "duplicate-prompt-id",
                    f"the prompt segment {segment_id!r} is declared twice",
                )
            prompt_ids.add(segment_id)


_NUMERIC_SETTINGS = ("number", "integer", "slider")
_SETTING_TYPES = ("text", "textarea", "number", "integer", "toggle", "select", "slider", "slot")


def _check_settings(ctx: Context, settings: Any) -> None:
    f = PLUGIN_FILE
    keys: set[str] = set()
    for i, setting in items(settings):
        setting = as_dict(setting)
        where = f"/contributes/settings/{i}"
        key = setting.get("key")
        if isinstance(key, str):
            if key in keys:
                ctx.error(
                    f,
                    f"{where}/key",
                    "duplicate-setting-key",
                    f"the setting key {key!r} is used twice",
                )
            keys.add(key)
        kind = setting.get("type")
        options = as_list(setting.get("options"))
        values = [as_dict(o).get("value") for o in options]
        if kind == "select":
            if not options:
                ctx.error(
                    f,
                    f"{where}/options",
                    "select-needs-options",
                    "a select setting needs at least one option",
                )
            seen: set[str] = set()
            for j, value in enumerate(values):
                if not isinstance(value, str):
                    continue
                if value in seen:
                    ctx.error(
                        f,
                        f"{where}/options/{j}/value",
                        "duplicate-option",
                        f"the option {value!r} is listed twice",
                    )
                seen.add(value)
        if kind in _SETTING_TYPES:
            if "options" in setting and kind != "select":
                ctx.error(
                    f,
                    f"{where}/options",
                    "setting-field-not-allowed",
                    f"options belong to select settings, not {kind}",
                )
            for bound in ("min", "max", "step"):
                if bound in setting and kind not in _NUMERIC_SETTINGS:
                    ctx.error(
                        f,
                        f"{where}/{bound}",
                        "setting-field-not-allowed",
                        f"{bound} applies to numeric controls (number, integer, slider), not {kind}",
                    )
        minimum, maximum = setting.get("min"), setting.get("max")
        numeric = (int, float)
        if (
            isinstance(minimum, numeric)
            and isinstance(maximum, numeric)
            and not isinstance(minimum, bool)
            and minimum > maximum
        ):
            ctx.error(
                f, f"{where}/min", "setting-range-invalid", f"min {minimum} is above max {maximum}"
            )
        if "default" not in setting or kind is None:
            continue
        default = setting["default"]
        problem = None
        if kind == "select" and options and default not in values:
            problem = f"the default {default!r} is not one of the options"
        elif kind in _NUMERIC_SETTINGS:
            if not isinstance(default, numeric) or isinstance(default, bool):
                problem = "the default of a numeric setting must be a number"
            elif kind == "integer" and not isinstance(default, int):
                problem = "the default of an integer setting must be a whole number"
            elif (
                isinstance(minimum, numeric)
                and default < minimum
                or isinstance(maximum, numeric)
                and default > maximum
            ):
                problem = f"the default {default} lies outside min..max"
        elif kind == "toggle" and not isinstance(default, bool):
            problem = "the default of a toggle must be true or false"
        elif kind in ("text", "textarea", "slot") and not isinstance(default, str):
            problem = f"the default of a {kind} setting must be a string"
        if problem:
            ctx.error(f, f"{where}/default", "setting-default-invalid", problem)


def _read_json(ctx: Context, relative: str) -> Any:
    try:
        with open(os.path.join(ctx.root, relative), "rb") as handle:
            return json.loads(handle.read(2 * 1024 * 1024))
    except (OSError, ValueError):
        return None


def _check_datasets(ctx: Context, datasets: Any) -> None:
    f = PLUGIN_FILE
    for name, dataset in entries(datasets):
        dataset = as_dict(dataset)
        where = join("/contributes/datasets", name)
        schema_path = ctx.check_path(dataset.get("schema"), file=f, path=f"{where}/schema")
        ops = dataset.get("ops")
        ops = (
            [o for o in ops if isinstance(o, str)]
            if isinstance(ops, list)
            else list(ALL_DATASET_OPS)
        )
        for j, tool in items(dataset.get("tools")):
            if tool == "upsert" and "set" not in ops:
                ctx.error(
                    f,
                    f"{where}/tools/{j}",
                    "dataset-tool-not-allowed",
                    "upsert needs the set operation in ops",
                )
            elif tool == "update" and not any(op != "set" for op in ops):
                ctx.error(
                    f,
                    f"{where}/tools/{j}",
                    "dataset-tool-not-allowed",
                    "update needs an operation other than set in ops",
                )
        key = dataset.get("key")
        if isinstance(key, str) and schema_path:
            schema = _read_json(ctx, schema_path)
            props = as_dict(schema).get("properties") if isinstance(schema, dict) else None
            if isinstance(props, dict) and key not in props:
                ctx.error(
                    f,
                    f"{where}/key",
                    "dataset-key-unknown",
                    f"the key field {key!r} is not a top-level property of {schema_path}",
                )


_EDITION = re.compile(r"^(?P<stem>.+?)\.[A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8})*(?P<ext>\.[A-Za-z]+)$")
SOURCE_EXTENSIONS = (".yaml", ".yml", ".json")
# The spec defines one wildcard form, <dir>/*.<ext>; any other glob character is refused.
_GLOB_CHARACTERS = frozenset("*?[]{}")
# An authoring example is JSON an author wrote by hand; anything bigger is a mistake.
MAX_EXAMPLE_BYTES = 1024 * 1024
MAX_EXAMPLE_ERRORS = 5


def source_path_form(path: str) -> str:
    """What an authoring.source.path names: "file" (.yaml, .yml, .json), "files" (<dir>/*.<ext>)
    or "media" (a directory: no extension, a trailing / allowed). Raises ValueError saying why
    path is none of these. A leading "./" is allowed; it names the same path."""
    text = path.removeprefix("./")
    if text.startswith(("/", "~")) or re.match(r"[A-Za-z]:", text) or "://" in text:
        raise ValueError("must be relative to the world package, like data/quests.yaml")
    if "\\" in text:
        raise ValueError("must separate folders with /, not \\")
    parts = text.removesuffix("/").split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise ValueError("may not have empty, . or .. parts: it stays inside the world package")
    extension = posixpath.splitext(parts[-1])[1]
    if any(_GLOB_CHARACTERS & set(part) for part in parts):
        if (
            len(parts) < 2
            or parts[-1] != "*" + extension
            or extension not in SOURCE_EXTENSIONS
            or any(_GLOB_CHARACTERS & set(part) for part in parts[:-1])
            or text.endswith("/")
        ):
            raise ValueError(
                "uses a wildcard the spec does not define: the only one is <dir>/*.yaml "
                "(or .yml, .json), every such file of one folder"
            )
        return "files"
    if not extension:
        return "media"
    if extension not in SOURCE_EXTENSIONS or text.endswith("/"):
        raise ValueError(
            "must end in .yaml, .yml or .json, or name a media directory (no extension)"
        )
    return "file"


def kernel_owned(path: str) -> str | None:
    """The kernel-owned world path that a valid source path names, or None.

    A path names an owned path when it is that path, lies inside an owned folder, holds an
    owned path (a media directory), is a locale edition of it (data/lorebook.zh.yaml), or
    is a wildcard that matches it (data/*.yaml matches data/lorebook.yaml).
    """
    clean = path.removeprefix("./").removesuffix("/")
    folder, _, name = clean.rpartition("/")
    edition = _EDITION.match(clean)
    for owned in KERNEL_WORLD_PATHS:
        bare = owned.removesuffix("/")
        inside = owned.endswith("/") and clean.startswith(owned)
        if clean == bare or inside or bare.startswith(clean + "/"):
            return owned
        if edition and edition.group("stem") + edition.group("ext") == owned:
            return f"an edition of {owned}"
        if name.startswith("*") and posixpath.dirname(bare) == folder and bare.endswith(name[1:]):
            return owned
    return None


def _load_json(ctx: Context, relative: str) -> Any:
    """The JSON value of a package file; ValueError says why there is none."""
    try:
        with open(os.path.join(ctx.root, relative), "rb") as handle:
            raw = handle.read(MAX_EXAMPLE_BYTES + 1)
    except OSError as exc:
        raise ValueError(f"cannot be read ({exc.strerror or exc})") from None
    if len(raw) > MAX_EXAMPLE_BYTES:
        raise ValueError(f"is larger than {MAX_EXAMPLE_BYTES} bytes")
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:
        reason = exc if isinstance(exc, ValueError) else "nested too deeply"
        raise ValueError(f"is not valid JSON: {reason}") from None


def _shorten(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _check_example(ctx: Context, example: str, schema_path: str, *, path: str) -> None:
    """authoring.example is a source value: a list of records (or one record), each of which
    the namespace schema must accept. Only references inside the schema file are followed:
    the loader never fetches anything."""
    f = PLUGIN_FILE
    try:
        value = _load_json(ctx, example)
    except ValueError as exc:
        ctx.error(f, path, "authoring-example-invalid", f"the example {example} {exc}")
        return
    try:
        schema = _load_json(ctx, schema_path)
        if not isinstance(schema, dict | bool):
            raise ValueError("is not a JSON Schema (an object)")
        kind = validators.validator_for(schema, default=Draft202012Validator)
        try:
            kind.check_schema(schema)
        except SchemaError as exc:
            raise ValueError(f"is not a valid JSON Schema: {_shorten(exc.message)}") from None
        validator = kind(schema, registry=Registry())
        records = value if isinstance(value, list) else [value]
        found: list[tuple[str, ValidationError]] = []
        for i, record in enumerate(records):
            prefix = f"/{i}" if isinstance(value, list) else ""
            found += [(join(prefix, *e.absolute_path), e) for e in validator.iter_errors(record)]
    except ValueError as exc:
        problem = str(exc)
    except Unresolvable as exc:
        problem = f"has a $ref outside the file, which the loader does not follow: {exc}"
    except RecursionError:
        problem = "refers to itself without end"
    else:
        for where, error in found[:MAX_EXAMPLE_ERRORS]:
            ctx.error(
                f,
                path,
                "authoring-example-invalid",
                f"the example {example} at {where or '/'} breaks the rule {error.validator!r} "
                f"of {schema_path}: {_shorten(error.message)}",
            )
        if len(found) > MAX_EXAMPLE_ERRORS:
            ctx.error(
                f,
                path,
                "authoring-example-invalid",
                f"the example {example} has {len(found) - MAX_EXAMPLE_ERRORS} more errors",
            )
        return
    ctx.error(
        f,
        path,
        "authoring-example-unchecked",
        f"the example {example} cannot be checked: the namespace schema {schema_path} {problem}",
    )


def _check_data(ctx: Context, data: Any) -> None:
    f = PLUGIN_FILE
    for name, namespace in entries(data):
        namespace = as_dict(namespace)
        where = join("/contributes/data", name)
        schema_path = ctx.check_path(namespace.get("schema"), file=f, path=f"{where}/schema")
        for j, contract in items(namespace.get("accepts")):
            check_contract(ctx, contract, file=f, path=f"{where}/accepts/{j}")
        authoring = as_dict(namespace.get("authoring"))
        if not authoring:
            continue
        aw = f"{where}/authoring"
        if "example" in authoring:
            example = ctx.check_path(authoring.get("example"), file=f, path=f"{aw}/example")
            if example and schema_path:
                _check_example(ctx, example, schema_path, path=f"{aw}/example")
        if "characterField" in authoring and "source" in authoring:
            ctx.error(
                f,
                f"{aw}/characterField",
                "authoring-source-conflict",
                "characterField cannot be used together with source",
            )
        source = as_dict(authoring.get("source"))
        source_path = source.get("path")
        form = None
        if isinstance(source_path, str):
            try:
                form = source_path_form(source_path)
            except ValueError as exc:
                ctx.error(
                    f,
                    f"{aw}/source/path",
                    "authoring-source-path-invalid",
                    f"{source_path!r} {exc}",
                )
            else:
                owned = kernel_owned(source_path)
                if owned:
                    ctx.error(
                        f,
                        f"{aw}/source/path",
                        "authoring-source-reserved",
                        f"{source_path!r} names {owned}, which the kernel or the world package "
                        "itself owns",
                    )
        if authoring.get("generate") in ("offer", "default"):
            if "example" not in authoring:
                ctx.error(
                    f,
                    f"{aw}/example",
                    "authoring-generate-needs-example",
                    "generate needs an example",
                )
            keyed_source = (
                form in ("file", "files")
                and source.get("visibility", "public") == "public"
                and source.get("key", "id") == "id"
            )
            # An invalid source path is already reported; do not also call the source missing.
            judged = form is not None or not isinstance(source_path, str)
            if "characterField" not in authoring and not keyed_source and judged:
                ctx.error(
                    f,
                    f"{aw}/generate",
                    "authoring-generate-needs-source",
                    "generate needs a characterField, or a public, non-media source keyed by id",
                )
        for j, reference in items(authoring.get("references")):
            reference = as_dict(reference)
            rw = f"{aw}/references/{j}"
            target = reference.get("to")
            if "type" in reference and target != "character-attribute":
                ctx.error(
                    f,
                    f"{rw}/type",
                    "reference-field-not-allowed",
                    "type is only allowed with to: character-attribute",
                )
            if "values" in reference:
                if target != "world-dimension":
                    ctx.error(
                        f,
                        f"{rw}/values",
                        "reference-field-not-allowed",
                        "values is only allowed with to: world-dimension",
                    )
                elif len(as_list(reference.get("within"))) > 1:
                    ctx.error(
                        f,
                        f"{rw}/within",
                        "reference-field-not-allowed",
                        "with values, at most one within field is allowed",
                    )


# ---------------------------------------------------------------- runtimes


def check_runtime(ctx: Context, rt: RuntimeDoc) -> None:
    f, b, r = rt.file, rt.base, rt.data
    contributes = as_dict(ctx.data.get("contributes"))
    tools = declared(contributes.get("tools"))
    datasets = contributes.get("datasets", {})
    namespaces = _namespaces(contributes)

    schedule = as_dict(r.get("schedule"))
    trigger = as_dict(schedule.get("trigger"))
    subagent = schedule.get("subagentOnly") is True
    # subagentOnly implies trigger: manual, written or not.
    trigger_type = trigger.get("type", "manual" if subagent else "auto")
    stage = schedule.get("stage")
    io = as_dict(r.get("io"))
    story = io.get("visibility") == "story"
    agent = r.get("agent")
    function = r.get("function")

    if "function" in r and "agent" in r:
        ctx.error(
            f,
            join(b, "agent"),
            "function-with-agent",
            "a runtime is either a function or an agent, not both",
        )
    if isinstance(function, dict):
        if "handler" in function:
            ctx.check_path(
                function.get("handler"),
                file=f,
                path=join(b, "function", "handler"),
                rel_dir=rt.rel_dir,
            )
        elif not os.path.isfile(os.path.join(ctx.root, rt.rel_dir, "handler.js")):
            ctx.error(
                f,
                join(b, "function", "handler"),
                "handler-missing",
                f"a function runtime needs a handler: set function.handler or add handler.js next to {f}",
            )
        _check_tool_names(
            ctx,
            as_dict(function.get("tools")).get("plugin"),
            tools,
            file=f,
            path=join(b, "function", "tools", "plugin"),
        )
    if "guard" in r:
        ctx.check_path(r.get("guard"), file=f, path=join(b, "guard"), rel_dir=rt.rel_dir)

    # --- schedule
    if subagent:
        if "type" in trigger and trigger_type != "manual":
            ctx.error(
                f,
                join(b, "schedule", "trigger", "type"),
                "subagent-only-conflict",
                "a subagentOnly runtime is always triggered manually (by another runtime)",
            )
        conflicts = [
            ("stage" in schedule, join(b, "schedule", "stage"), "stage"),
            (bool(schedule.get("needs")), join(b, "schedule", "needs"), "needs"),
            (bool(schedule.get("after")), join(b, "schedule", "after"), "after"),
            (schedule.get("background") is True, join(b, "schedule", "background"), "background"),
            (
                "recordAs" in as_dict(io.get("output")),
                join(b, "io", "output", "recordAs"),
                "io.output.recordAs",
            ),
            ("guard" in r, join(b, "guard"), "guard"),
            (story, join(b, "io", "visibility"), "io.visibility: story"),
        ]
        for present, where, what in conflicts:
            if present:
                ctx.error(
                    f, where, "subagent-only-conflict", f"a subagentOnly runtime allows no {what}"
                )
        if "function" in r:
            ctx.error(
                f,
                join(b, "function"),
                "subagent-only-not-agent",
                "a subagentOnly runtime must be an agent",
            )
    if trigger_type == "event" and not trigger.get("topic"):
        ctx.error(
            f,
            join(b, "schedule", "trigger", "topic"),
            "trigger-topic-missing",
            "an event trigger needs a topic",
        )
    if trigger_type == "auto" and not subagent and "stage" not in schedule:
        ctx.error(
            f,
            join(b, "schedule", "stage"),
            "auto-trigger-needs-stage",
            "an auto-triggered runtime (the default) needs schedule.stage",
        )
    if "every" in schedule and trigger_type != "auto":
        why = (
            "a subagentOnly runtime is triggered manually"
            if subagent
            else f"this trigger is {trigger_type}"
        )
        ctx.error(
            f,
            join(b, "schedule", "every"),
            "every-not-auto",
            f"schedule.every applies only to auto triggers; {why}",
        )
    if schedule.get("background") is True and trigger_type == "auto" and not subagent:
        ctx.error(
            f,
            join(b, "schedule", "background"),
            "background-not-auto",
            "background applies to manual or event activations; use detached for an auto runtime",
        )
    detached = schedule.get("detached")
    if detached is True or isinstance(detached, dict):
        if stage not in DETACHED_STAGES:
            ctx.error(
                f,
                join(b, "schedule", "detached"),
                "detached-stage",
                f"detached runtimes must run on stage post-turn or audit, not {stage or 'no stage'}",
            )
        options = as_dict(detached)
        wait = options.get("maxSettleWaitMs")
        if isinstance(wait, int) and not isinstance(wait, bool) and wait > MAX_SETTLE_WAIT_MS:
            ctx.error(
                f,
                join(b, "schedule", "detached", "maxSettleWaitMs"),
                "settle-wait-too-long",
                f"maxSettleWaitMs is {wait}; the most is {MAX_SETTLE_WAIT_MS}",
            )
        if "maxSettleWaitMs" in options and options.get("settle") is not True:
            ctx.error(
                f,
                join(b, "schedule", "detached", "maxSettleWaitMs"),
                "settle-wait-without-settle",
                "maxSettleWaitMs requires settle: true",
            )
    for key in ("needs", "after"):
        for i, dep in items(schedule.get(key)):
            where = join(b, "schedule", key, i)
            if isinstance(dep, str):
                if "@" in dep:
                    check_contract(ctx, dep, file=f, path=where)
                # runtime references are checked by check_graph
            elif isinstance(dep, dict):
                if "contract" in dep:
                    check_contract(ctx, dep.get("contract"), file=f, path=join(where, "contract"))
                if key == "needs" and dep.get("scope") == "session" and stage != "setup":
                    ctx.error(
                        f,
                        join(where, "scope"),
                        "needs-session-scope",
                        "scope: session is valid only on stage setup",
                    )

    # --- io
    for name, binding in entries(io.get("inputs")):
        binding = as_dict(binding)
        where = join(b, "io", "inputs", name)
        source = as_dict(binding.get("from"))
        if "contract" in source:
            check_contract(
                ctx, source.get("contract"), file=f, path=join(where, "from", "contract")
            )
        if "kernel" in source:
            for extra in ("scope", "select", "required", "accepts", "recordAs"):
                if extra in binding:
                    ctx.error(
                        f,
                        join(where, extra),
                        "kernel-input-extra-field",
                        f"a kernel input takes no {extra}",
                    )
        if binding.get("scope") == "committed":
            if "recordAs" not in binding:
                ctx.error(
                    f,
                    join(where, "recordAs"),
                    "committed-input-needs-record-as",
                    "a committed input needs recordAs",
                )
            if "select" in binding:
                ctx.error(
                    f,
                    join(where, "select"),
                    "committed-input-select",
                    "select is not allowed with scope: committed; committed inputs read the whole export",
                )
        select = binding.get("select")
        selectable = "kernel" not in source and binding.get("scope") != "committed"
        if isinstance(select, str) and selectable and not is_pointer(select):
            ctx.error(
                f,
                join(where, "select"),
                "select-not-pointer",
                f'select {select!r} is not a JSON Pointer (RFC 6901): write "" for the whole '
                "value or /field/0, with ~0 for ~ and ~1 for / inside a name",
            )
        if story and "contract" in source and binding.get("required") is not False:
            ctx.error(
                f,
                join(where, "required"),
                "story-contract-input-required",
                "a story runtime must set required: false on contract inputs",
            )
        accepts = binding.get("accepts")
        if isinstance(accepts, str):
            if accepts.startswith("contract:"):
                check_contract(
                    ctx, accepts[len("contract:") :], file=f, path=join(where, "accepts")
                )
            else:
                ctx.check_path(accepts, file=f, path=join(where, "accepts"))
    for i, block in items(io.get("selfData")):
        namespace = as_dict(block).get("namespace")
        if isinstance(namespace, str) and namespaces is not None and namespace not in namespaces:
            ctx.error(
                f,
                join(b, "io", "selfData", i, "namespace"),
                "namespace-undeclared",
                f"{namespace!r} is not one of this package's data namespaces (contributes.data or datasets)",
            )
    if "payloadSchema" in io:
        ctx.check_path(io.get("payloadSchema"), file=f, path=join(b, "io", "payloadSchema"))
    output = as_dict(io.get("output"))
    if "schema" in output:
        ctx.check_path(output.get("schema"), file=f, path=join(b, "io", "output", "schema"))
    if "contract" in output:
        check_contract(
            ctx, output.get("contract"), file=f, path=join(b, "io", "output", "contract")
        )
    if "recordAs" in output and "schema" not in output:
        ctx.error(
            f,
            join(b, "io", "output", "schema"),
            "record-as-needs-schema",
            "io.output.recordAs requires io.output.schema",
        )
    if io.get("concealed") is True and story:
        ctx.error(
            f,
            join(b, "io", "concealed"),
            "concealed-story",
            "concealed is not allowed with visibility: story",
        )

    # --- agent
    if isinstance(agent, dict):
        _check_agent(ctx, rt, agent, story=story, tools=tools, datasets=datasets)

    check_http_permissions(
        ctx, as_dict(r.get("permissions")).get("http"), file=f, path=join(b, "permissions", "http")
    )
    effects = as_dict(r.get("effects"))
    for key in ("reads", "writes"):
        seen: set[str] = set()
        for i, entry in items(effects.get(key)):
            if isinstance(entry, str):
                if entry in seen:
                    ctx.error(
                        f,
                        join(b, "effects", key, i),
                        "duplicate-effect",
                        f"{entry!r} is listed twice",
                    )
                seen.add(entry)


def _namespaces(contributes: dict[str, Any]) -> set[str] | None:
    data, datasets = contributes.get("data"), contributes.get("datasets")
    if not isinstance(data, dict | None) or not isinstance(datasets, dict | None):
        return None
    return set(data or {}) | set(datasets or {})


def _check_tool_names(
    ctx: Context, names: Any, tools: set[str] | None, *, file: str, path: str
) -> None:
    if tools is None:
        return
    for i, name in items(names):
        if isinstance(name, str) and name not in tools:
            ctx.error(
                file,
                join(path, i),
                "tool-undeclared",
                f"the tool {name!r} is not listed in contributes.tools",
            )


def _check_agent(
    ctx: Context,
    rt: RuntimeDoc,
    agent: dict[str, Any],
    *,
    story: bool,
    tools: set[str] | None,
    datasets: Any,
) -> None:
    f = rt.file
    a = join(rt.base, "agent")
    if "finishWith" in agent and "completion" in agent:
        ctx.error(
            f,
            join(a, "completion"),
            "finish-with-and-completion",
            "use finishWith or completion, not both",
        )
    agent_tools = as_dict(agent.get("tools"))
    _check_tool_names(
        ctx, agent_tools.get("plugin"), tools, file=f, path=join(a, "tools", "plugin")
    )
    for i, service in items(agent_tools.get("services")):
        if isinstance(service, dict):
            check_contract(
                ctx,
                service.get("contract"),
                file=f,
                path=join(a, "tools", "services", i, "contract"),
            )
        else:
            check_contract(ctx, service, file=f, path=join(a, "tools", "services", i))
    for i, selection in items(agent_tools.get("datasets")):
        if isinstance(selection, str):
            name, where, wanted = selection, join(a, "tools", "datasets", i), []
        elif isinstance(selection, dict):
            name, where = selection.get("dataset"), join(a, "tools", "datasets", i, "dataset")
            wanted = list(items(selection.get("tools")))
        else:
            continue
        if not isinstance(name, str):
            continue
        if not isinstance(datasets, dict):
            continue
        if name not in datasets:
            ctx.error(
                f, where, "dataset-unknown", f"{name!r} is not declared in contributes.datasets"
            )
            continue
        offered = offered_dataset_tools(as_dict(datasets[name]))
        for j, tool in wanted:
            if isinstance(tool, str) and tool not in offered:
                ctx.error(
                    f,
                    join(a, "tools", "datasets", i, "tools", j),
                    "dataset-tool-not-offered",
                    f"the dataset {name!r} does not offer {tool!r} (it offers {', '.join(offered)})",
                )
    loop = as_dict(agent.get("loop"))
    for key in ("stream", "steering"):
        if loop.get(key) is True and not story:
            ctx.error(
                f,
                join(a, "loop", key),
                f"{key}-needs-story",
                f"loop.{key} needs io.visibility: story",
            )
    profile = loop.get("profile", "story" if story else "system")
    streaming = loop.get("stream", profile == "story")
    if loop.get("truncation") == "accept" and streaming is not True:
        ctx.error(
            f,
            join(a, "loop", "truncation"),
            "truncation-accept-needs-stream",
            "truncation: accept needs a streaming loop (story visibility, or stream: true)",
        )
    reserve = as_dict(loop.get("finalizer")).get("deadlineReserveMs")
    timeout = loop.get("timeoutMs", DEFAULT_STORY_TIMEOUT_MS if story else DEFAULT_TIMEOUT_MS)
    if (
        isinstance(reserve, int)
        and isinstance(timeout, int)
        and not isinstance(reserve, bool)
        and reserve > 0
        and reserve >= timeout
    ):
        ctx.error(
            f,
            join(a, "loop", "finalizer", "deadlineReserveMs"),
            "deadline-reserve-too-large",
            f"deadlineReserveMs ({reserve}) must be smaller than timeoutMs ({timeout})",
        )


# ---------------------------------------------------------------- references between runtimes


def _runtime_refs(rt: RuntimeDoc) -> Iterator[tuple[str, str, str]]:
    """(kind, reference, path) for each runtime reference of rt; kind is needs/after/input."""
    schedule = as_dict(rt.data.get("schedule"))
    for key in ("needs", "after"):
        for i, dep in items(schedule.get(key)):
            if isinstance(dep, str) and "@" not in dep:
                yield key, dep, join(rt.base, "schedule", key, i)
            elif isinstance(dep, dict) and isinstance(dep.get("runtime"), str):
                yield key, dep["runtime"], join(rt.base, "schedule", key, i, "runtime")
    for name, binding in entries(as_dict(rt.data.get("io")).get("inputs")):
        binding = as_dict(binding)
        source = as_dict(binding.get("from"))
        if isinstance(source.get("runtime"), str):
            # A committed input reads an earlier execution's export: no ordering within the turn.
            kind = "committed-input" if binding.get("scope") == "committed" else "input"
            yield kind, source["runtime"], join(rt.base, "io", "inputs", name, "from", "runtime")


def check_graph(ctx: Context) -> None:
    by_id = {rt.qualified_id: rt for rt in ctx.runtimes}
    known = ", ".join(sorted(by_id)) or "none"
    edges: dict[str, list[tuple[str, str, str]]] = {rt.qualified_id: [] for rt in ctx.runtimes}
    for rt in ctx.runtimes:
        for kind, ref, where in _runtime_refs(rt):
            if ref not in by_id:
                ctx.error(
                    rt.file,
                    where,
                    "runtime-ref-unknown",
                    f"{ref!r} is no runtime of this package (its runtimes: {known})",
                )
            elif kind != "committed-input":
                edges[rt.qualified_id].append((ref, rt.file, where))
    # Depth-first search; each cycle is reported once, at the edge that closes it.
    state: dict[str, int] = {}
    reported: set[frozenset[str]] = set()

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for target, file, where in edges.get(node, []):
            if state.get(target) == 1:
                cycle = stack[stack.index(target) :]
                key = frozenset(cycle)
                if key not in reported:
                    reported.add(key)
                    chain = " -> ".join([*cycle, target])
                    ctx.error(file, where, "runtime-cycle", f"runtime order forms a cycle: {chain}")
            elif state.get(target) is None:
                visit(target, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [])


# ---------------------------------------------------------------- locale variants

# Lists of a locale variant and the field that matches each entry to the canonical PLUGIN.md entry;
# the third item names a nested list matched the same way inside the matched entry.
_LOCALE_LISTS: tuple[tuple[tuple[str, ...], str, tuple[str, str] | None], ...] = (
    (("author", "links"), "url", None),
    (("contributes", "commands"), "name", ("arguments", "name")),
    (("contributes", "actionKinds"), "name", None),
    (("contributes", "events"), "topic", None),
    (("contributes", "settings"), "key", ("options", "value")),
    (("contributes", "prompt"), "id", None),
)


def check_locale(ctx: Context, data: Any, *, file: str, base: str = "") -> None:
    """Every entry a PLUGIN.<locale>.md translates must exist in PLUGIN.md, by its identity key."""
    if not isinstance(data, dict):
        return
    canonical = ctx.data

    def match(
        translated: Any, original: Any, key: str, where: str, nested: tuple[str, str] | None
    ) -> None:
        index = {}
        for entry in as_list(original):
            identity = as_dict(entry).get(key)
            if isinstance(identity, str):
                index[identity] = as_dict(entry)
        translated_list = as_list(translated)
        for i, entry in items(translated):
            identity = as_dict(entry).get(key)
            if not isinstance(identity, str):
                # Covel matches an entry without its identity key by position; that needs lists of
                # the same length, else the translation is ignored (as Covel warns and ignores).
                if isinstance(entry, dict) and len(translated_list) != len(as_list(original)):
                    ctx.warn(
                        file,
                        join(where, i),
                        "locale-entry-unmatched",
                        f"this entry has no {key} and the list has {len(translated_list)} entries "
                        f"where PLUGIN.md has {len(as_list(original))}, so it matches none; "
                        f"repeat {key} to match it",
                    )
                continue
            if identity not in index:
                ctx.error(
                    file,
                    join(where, i, key),
                    "locale-entry-unknown",
                    f"{key} {identity!r} matches no entry of PLUGIN.md at {where.removeprefix(base) or '/'}",
                )
            elif nested is not None:
                field, nested_key = nested
                match(
                    as_dict(entry).get(field),
                    index[identity].get(field),
                    nested_key,
                    join(where, i, field),
                    None,
                )

    for parts, key, nested in _LOCALE_LISTS:
        translated: Any = data
        original: Any = canonical
        for part in parts:
            translated = as_dict(translated).get(part)
            original = as_dict(original).get(part)
        if translated is not None:
            match(translated, original, key, join(base, *parts), nested)
    namespaces = as_dict(as_dict(canonical.get("contributes")).get("data"))
    for name in as_dict(as_dict(data.get("contributes")).get("data")):
        if name not in namespaces:
            ctx.error(
                file,
                join(base, "contributes", "data", name),
                "locale-entry-unknown",
                f"the data namespace {name!r} is not declared in PLUGIN.md",
            )


def check_locale_messages(ctx: Context, data: Any, *, file: str, base: str) -> None:
    """locales/<locale>.yaml `messages`: Covel's catalogue from English text to its translation.

    Keys are the English text (optionally `property|text` for one UI property); every value is a
    string, and a translation keeps the placeholders ({name}, {{name}}) of its text.
    """
    if not isinstance(data, dict):
        ctx.error(
            file,
            base,
            "locale-messages-invalid",
            "messages must be a mapping from the English text to its translation",
        )
        return
    for text, translation in data.items():
        where = join(base, str(text))
        if not isinstance(translation, str):
            ctx.error(
                file,
                where,
                "locale-messages-invalid",
                f"the translation of {text!r} must be a string, got {type(translation).__name__}",
            )
            continue
        source = _placeholders(str(text).split("|", 1)[-1])
        target = _placeholders(translation)
        if source != target:
            ctx.error(
                file,
                where,
                "locale-placeholders-differ",
                f"{text!r} has placeholders {' '.join(source) or '(none)'} and its translation has "
                f"{' '.join(target) or '(none)'}",
            )


_PLACEHOLDER = re.compile(r"\{\{?\s*[\w./-]+\s*\}?\}")


def _placeholders(text: str) -> list[str]:
    return sorted(re.sub(r"\s+", "", found) for found in _PLACEHOLDER.findall(text))
