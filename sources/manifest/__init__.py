"""Source plugins (plugin.toml): a plain library with no Django import.

The loader checks a plugin folder, the codec spells its unit keys and addresses, durations
reads Go durations, fold compares keys like Go's strings.EqualFold.
"""

from sources.manifest.codec import Codec, CodecError, Resolved
from sources.manifest.durations import DurationError, parse_duration
from sources.manifest.fold import equal_fold
from sources.manifest.loader import (
    MANIFEST,
    JobSpec,
    SourceLoadResult,
    SourceManifest,
    binary_path,
    check_manifest,
    config_reads_issues,
    content_hash,
    load_source_plugin,
    rules_version,
    view_id_clashes,
    view_id_clashes_by_views,
    with_issues,
)

__all__ = [
    "MANIFEST",
    "Codec",
    "CodecError",
    "DurationError",
    "JobSpec",
    "Resolved",
    "SourceLoadResult",
    "SourceManifest",
    "binary_path",
    "check_manifest",
    "config_reads_issues",
    "content_hash",
    "equal_fold",
    "load_source_plugin",
    "parse_duration",
    "rules_version",
    "view_id_clashes",
    "view_id_clashes_by_views",
    "with_issues",
]
