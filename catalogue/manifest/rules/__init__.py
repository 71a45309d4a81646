"""The rules a JSON Schema cannot express, each with its own stable code, grouped by the part of
the manifest they check:

    common.py       shared checks (IDs, contracts, URLs, HTTP permissions, origins, readers)
    package.py      PLUGIN.md's top-level fields, the package ID and its folder
    contributes.py  contributes.* and the settings panel
    data.py         datasets, data sources and their examples
    runtime.py      a runtime's RUNTIME.md (schedule, io, function, detached, guard)
    agent.py        an agent runtime's `agent` section and its tools
    graph.py        references between runtimes (needs, after, producers; no cycle)
    locale.py       locale variants and *.messages.json

Every rule reads the frontmatter defensively: the schema pass reports wrong types, and a rule
simply skips a value that is not the shape it expects, so one bad field never hides another.
The loader calls the entry points below (check_package, check_runtime, check_graph,
check_locale, check_locale_messages) through this package.
"""

from catalogue.manifest.rules.common import (
    ALL_DATASET_OPS,
    DEFAULT_STORY_TIMEOUT_MS,
    DEFAULT_TIMEOUT_MS,
    MAX_PACKAGE_ID_LENGTH,
    MAX_RUNTIME_ID_LENGTH,
    PACKAGE_ID,
    RUNTIME_ID,
    as_dict,
    as_list,
    check_origin,
    is_package_id,
    offered_dataset_tools,
)
from catalogue.manifest.rules.data import MAX_EXAMPLE_ERRORS, kernel_owned, source_path_form
from catalogue.manifest.rules.graph import check_graph
from catalogue.manifest.rules.locale import check_locale, check_locale_messages
from catalogue.manifest.rules.package import check_package
from catalogue.manifest.rules.runtime import check_runtime

__all__ = [
    "ALL_DATASET_OPS",
    "DEFAULT_STORY_TIMEOUT_MS",
    "DEFAULT_TIMEOUT_MS",
    "MAX_EXAMPLE_ERRORS",
    "MAX_PACKAGE_ID_LENGTH",
    "MAX_RUNTIME_ID_LENGTH",
    "PACKAGE_ID",
    "RUNTIME_ID",
    "as_dict",
    "as_list",
    "check_graph",
    "check_locale",
    "check_locale_messages",
    "check_origin",
    "check_package",
    "check_runtime",
    "is_package_id",
    "kernel_owned",
    "offered_dataset_tools",
    "source_path_form",
]
