"""plugin_migrate: rewrite a package in an older Covel manifest format into the spec's format.

Plain Python like the loader (no Django). The rewrite is a plan first (`migrate_plan`): every
changed manifest file's old and new text, renames (`runtimes/<id>/PLUGIN.md` → `RUNTIME.md`),
new locale files, what was done (notes), what cannot be mapped (refusals), the files the
manifests name that are missing (findings) and the contracts the package requires that the hub
has in no or only another major (reports, never rewritten). `migrate_apply` writes a plan all or
nothing.

The YAML is edited with ruamel's round-trip mode so comments, key order and quoting stay as
written; only the fields that change are touched. Before the round-trip parse each frontmatter
goes through the loader's safe parser, so aliases, tags and duplicate keys are refused exactly
as the loader refuses them. Code files are never opened for writing, and never run.

One module per older format a rule rewrites:
- previous.py: Covel's previous format (type/kind, optional, source kinds, runtime types, the
  older schedule and agent fields);
- covel_plugins.py: the covel-plugins repository's format (name, pluginType, outputKind,
  capabilities, contract ids with "/"), with hooks.py finding the hooks an entry registers;
- locales.py: {en, zh} text maps, moved to locales/<locale>.yaml and merged with what is there.
"""

from catalogue.manifest.migrate.apply import migrate_apply
from catalogue.manifest.migrate.model import (
    CONTRACT_MISSING,
    FILE_MISSING,
    REFUSED,
    FileChange,
    Plan,
)
from catalogue.manifest.migrate.plan import migrate_plan

__all__ = [
    "CONTRACT_MISSING",
    "FILE_MISSING",
    "REFUSED",
    "FileChange",
    "Plan",
    "migrate_apply",
    "migrate_plan",
]
