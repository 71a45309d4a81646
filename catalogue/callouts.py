"""The calls the catalogue makes into apps above it, declared here and registered by them.

The catalogue sits on the lowest floor and imports no app above it, yet its sync must file an
approval request (approvals), check that a package's code loads (pluginhost), and its pages ask
whether sessions may use a package (approvals) and where an installed package came from and
what the community directory offers (installs); validate_plugin loads source plugins (sources).
Each such call is a typed slot below: the app that answers registers its function in its
AppConfig.ready(), and a call to a slot nobody registered raises CalloutMissing naming the slot
and the app that should have filled it, never a silent skip. A reader follows a call from the
slot's name to the one `register` line in that app's apps.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from catalogue.manifest.types import LoadResult
    from catalogue.models import Package


class CalloutMissing(RuntimeError):
    """A slot was called before (or without) the app that answers it registering."""


class ApprovalRequestSync(Protocol):
    """Record what a synced community package asks for (in the sync's transaction), from the
    loader's verdict the row was indexed from (None: the sync did not load it)."""

    def __call__(self, *, package: Package, loaded: LoadResult | None = None) -> None: ...


class ApprovalRequestsSync(Protocol):
    """The same for many new community packages at once (a first sync's batch, one transaction);
    loaded: package id -> the loader's verdict each row was indexed from."""

    def __call__(
        self, *, packages: list[Package], loaded: Mapping[str, LoadResult] | None = None
    ) -> None: ...


class ApprovalSeenHashes(Protocol):
    """package id -> the content hash approvals last saw."""

    def __call__(self) -> dict[str, str]: ...


class PackagesUsability(Protocol):
    """package id -> may sessions use it (an object with `usable` and `reason`)."""

    def __call__(self, *, package_ids: Iterable[str]) -> dict[str, Any]: ...


class PackageCodeChecks(Protocol):
    """Does each package's code load? (package row, its manifest or None) pairs."""

    def __call__(self, checks: list[tuple[Package, Any]], *, force: bool = False) -> None: ...


class SourcePluginLoader(Protocol):
    """Load a source plugin folder (plugin.toml): an object with plugin_id, ok, errors, warnings."""

    def __call__(self, folder: Path) -> Any: ...


class PackageProvenance(Protocol):
    """Where a package was installed from (source, commit, digest, who, when, update), or None."""

    def __call__(self, *, package_id: str) -> dict[str, Any] | None: ...


class AvailableEntries(Protocol):
    """Community-directory entries not installed that match the search, in the list's sort:
    (how many, the summaries from offset, at most limit; none asked when limit is 0)."""

    def __call__(
        self, *, q: str, sort: str, offset: int, limit: int
    ) -> tuple[int, list[dict[str, Any]]]: ...


class AvailableEntry(Protocol):
    """The community-directory entry with this id, when no installed package has it, or None."""

    def __call__(self, *, package_id: str) -> dict[str, Any] | None: ...


F = TypeVar("F")


class Callout(Generic[F]):
    """One slot: `register(fn)` at start-up, `get()` wherever it is called."""

    def __init__(self, name: str, registered_by: str) -> None:
        self.name = name
        self.registered_by = registered_by
        self._fn: F | None = None

    def register(self, fn: F) -> None:
        self._fn = fn

    def get(self) -> F:
        if self._fn is None:
            raise CalloutMissing(
                f"catalogue.callouts.{self.name} is not registered: {self.registered_by} "
                "registers it in its AppConfig.ready() (is the app in INSTALLED_APPS?)"
            )
        return self._fn


approval_request_sync: Callout[ApprovalRequestSync] = Callout(
    "approval_request_sync", "approvals (approvals/apps.py)"
)
approval_requests_sync: Callout[ApprovalRequestsSync] = Callout(
    "approval_requests_sync", "approvals (approvals/apps.py)"
)
approval_seen_hashes: Callout[ApprovalSeenHashes] = Callout(
    "approval_seen_hashes", "approvals (approvals/apps.py)"
)
packages_usability: Callout[PackagesUsability] = Callout(
    "packages_usability", "approvals (approvals/apps.py)"
)
package_code_checks: Callout[PackageCodeChecks] = Callout(
    "package_code_checks", "pluginhost (pluginhost/apps.py)"
)
source_plugin_loader: Callout[SourcePluginLoader] = Callout(
    "source_plugin_loader", "sources (sources/apps.py)"
)
package_provenance: Callout[PackageProvenance] = Callout(
    "package_provenance", "installs (installs/apps.py)"
)
available_entries: Callout[AvailableEntries] = Callout(
    "available_entries", "installs (installs/apps.py)"
)
available_entry: Callout[AvailableEntry] = Callout("available_entry", "installs (installs/apps.py)")

ALL: Sequence[Callout[Any]] = (
    approval_request_sync,
    approval_requests_sync,
    approval_seen_hashes,
    packages_usability,
    package_code_checks,
    source_plugin_loader,
    package_provenance,
    available_entries,
    available_entry,
)
