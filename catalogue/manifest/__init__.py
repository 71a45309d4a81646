"""The Covel package loader: a plain library (no Django) that reads and validates packages.

Public API:
    load_package(path, *, host_version=HOST_VERSION) -> LoadResult
    Issue, Manifest, RuntimeManifest, LoadResult
"""

from catalogue.manifest.loader import HOST_VERSION, load_package
from catalogue.manifest.types import Issue, LoadResult, Manifest, RuntimeManifest

__all__ = ["HOST_VERSION", "Issue", "LoadResult", "Manifest", "RuntimeManifest", "load_package"]
