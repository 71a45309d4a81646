"""The values the loader produces. Plain, immutable and free of Django.

Everything downstream (the indexer, the JS host, the resolver, the runtimes) reads packages
through these types, never through the YAML text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class Issue:
    """One finding of the loader: an error, or a warning.

    file: the file it concerns, relative to the package root ("PLUGIN.md",
          "runtimes/summary/RUNTIME.md", "server/index.js").
    path: a JSON pointer into that file's frontmatter ("" for the file as a whole),
          e.g. "/contributes/commands/0/action".
    code: a stable kebab-case code per rule, e.g. "unknown-field", "id-mismatch".
    """

    file: str
    path: str
    code: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"file": self.file, "path": self.path, "code": self.code, "message": self.message}

    def __str__(self) -> str:  # the validate_plugin line format
        return f"{self.file}:{self.path} {self.message} [{self.code}]"


def freeze(value: Any) -> Any:
    """Deep-freeze plain data: dicts become read-only mappings, lists become tuples."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """The inverse of freeze: plain dicts and lists, ready for JSON."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [thaw(v) for v in value]
    return value


@dataclass(frozen=True)
class RuntimeManifest:
    """One runtime of a package, with the spec's defaults applied.

    id:           the runtime's own ID: the package ID for the inline runtime of PLUGIN.md,
                  the folder name for runtimes/<id>/RUNTIME.md.
    qualified_id: "<pluginId>/<runtimeId>", or the package ID for the inline runtime.
    file:         "PLUGIN.md" or "runtimes/<id>/RUNTIME.md".
    prompt:       the Markdown body of that file (the agent's prompt).
    data:         the runtime object (frozen), normalised: every default the spec states is
                  written in (schedule, io, agent and its loop; see catalogue/manifest/normalise.py
                  and docs/loader.md, "Defaults applied"), detached: true becomes its options,
                  function.handler and guard are package-relative.
    """

    id: str
    qualified_id: str
    file: str
    prompt: str
    data: Mapping[str, Any]

    @property
    def is_function(self) -> bool:
        return "function" in self.data

    @property
    def kind(self) -> str:
        return "function" if self.is_function else "agent"

    @property
    def schedule(self) -> Mapping[str, Any]:
        return self.data.get("schedule", MappingProxyType({}))

    @property
    def stage(self) -> str | None:
        return self.schedule.get("stage")

    @property
    def trigger(self) -> str:
        return self.schedule.get("trigger", {}).get("type", "auto")

    @property
    def detached(self) -> Mapping[str, Any] | None:
        """The job options of a detached runtime (an empty mapping for `detached: true`), else None."""
        value = self.schedule.get("detached", False)
        if value is True:
            return MappingProxyType({})
        if isinstance(value, Mapping):
            return value
        return None

    @property
    def visibility(self) -> str:
        return self.data.get("io", {}).get("visibility", "system")


@dataclass(frozen=True)
class Manifest:
    """A validated package. Only built when the package has no errors.

    data is the whole normalised frontmatter of PLUGIN.md (frozen): every default the spec
    states applied (id, kind, version, entry, and those of contributes: argument types, action
    kinds, services, extensions, hooks, events, datasets, data namespaces and their sources,
    prompt roles; see docs/loader.md, "Defaults applied"), written ui:*/cost:* tags replaced by
    derived ones, provides normalised to objects including every runtime's io.output.contract.
    A list entry written in its string short form (a hook's event name, a service's contract)
    stays a string: it means every default.
    """

    id: str
    path: str  # absolute path of the package folder
    data: Mapping[str, Any]
    body: str  # the Markdown body of PLUGIN.md
    runtimes: tuple[RuntimeManifest, ...]
    locales: tuple[str, ...] = ()  # locale variants found, e.g. ("zh-CN",)
    languages: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))
    # What the loader read of the locale files, so nobody reads them again:
    # translations: {locale: {"displayName"?, "description"?, "body"?}} for the catalogue, from
    #   locales/<locale>.yaml|yml|json ("PLUGIN.md" section) and PLUGIN.<locale>.md (which wins);
    # messages: {locale: {source text: translation}} from locales/<locale>.messages.json, for
    #   the code's texts (None for a file that could not be read as a JSON object of texts),
    #   which the play page's UI specs show (sessions.selectors.package_messages);
    # message_sections: ({"file": "zh.yaml", "messages": {source text: translation}}, ...), the
    #   `messages:` section of each locales/*.yaml|yml in name order, which the plugin host
    #   gives handlers as ctx.messages (locale_files.read_message_sections). The two do not mix.
    translations: Mapping[str, Mapping[str, str]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    messages: Mapping[str, Mapping[str, str] | None] = field(
        default_factory=lambda: MappingProxyType({})
    )
    message_sections: tuple[Mapping[str, Any], ...] = ()

    @property
    def kind(self) -> str:
        return self.data["kind"]

    @property
    def version(self) -> str:
        return self.data["version"]

    @property
    def display_name(self) -> str:
        return self.data.get("displayName") or self.id

    @property
    def description(self) -> str:
        return self.data["description"]

    @property
    def tags(self) -> tuple[str, ...]:
        return self.data.get("tags", ())

    @property
    def author(self) -> Mapping[str, Any] | None:
        return self.data.get("author")

    @property
    def provides(self) -> tuple[Mapping[str, Any], ...]:
        """Each as {"contract": ..., "default": bool}."""
        return self.data.get("provides", ())

    @property
    def requires(self) -> tuple[str, ...]:
        return self.data.get("requires", ())

    @property
    def conflicts(self) -> tuple[str, ...]:
        return self.data.get("conflicts", ())

    @property
    def entry(self) -> str | None:
        return self.data.get("entry")

    @property
    def contributes(self) -> Mapping[str, Any]:
        return self.data.get("contributes", MappingProxyType({}))

    @property
    def permissions(self) -> Mapping[str, Any]:
        return self.data.get("permissions", MappingProxyType({}))

    def runtime(self, runtime_id: str) -> RuntimeManifest | None:
        for runtime in self.runtimes:
            if runtime.id == runtime_id or runtime.qualified_id == runtime_id:
                return runtime
        return None


@dataclass(frozen=True)
class LoadResult:
    """The verdict on one package folder: a manifest when valid, and every error and warning.

    raw is the parsed PLUGIN.md frontmatter when it could be parsed at all (so a catalogue can
    still show the name and description of an invalid package), exactly as written: no default
    is applied to it. package_id is the written id, or the folder name.
    """

    path: str
    package_id: str
    manifest: Manifest | None
    errors: tuple[Issue, ...]
    warnings: tuple[Issue, ...]
    raw: Mapping[str, Any] | None = None
    content_hash: str = ""  # sha256 over the package's files (names + bytes), for change detection
    # What else the loader read, valid package or not, so nobody downstream reads it again:
    # files: (path, sha256) of each regular file of the package inventory (package_files), in
    #   path order, hashed in the same read as content_hash (None: not readable within the caps);
    #   approvals builds the code a package asks staff to approve from it.
    files: tuple[tuple[str, str | None], ...] = ()
    # raw_runtimes: (folder name, frontmatter as written) of each runtimes/<id>/RUNTIME.md it
    #   parsed, for what an invalid package asks for (a valid one has manifest.runtimes).
    raw_runtimes: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    readme: str = ""  # README.md at the package root as text ("" when absent or unreadable)

    @property
    def ok(self) -> bool:
        return not self.errors and self.manifest is not None
