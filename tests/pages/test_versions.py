"""Version history: when a package's version changes on disk, the old version's row is kept
(manifest, hash, date seen) and the Versions tab says what the change did; a content change
that keeps the version adds no row."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from catalogue.versions import version_changes

pytestmark = pytest.mark.django_db

V2 = """---
id: lantern
version: 1.1.0
displayName: Lantern
description: Lights the way for the party, now in colour.
permissions:
  http:
    - origin: https://colours.example.com
      methods: [GET]
contributes:
  settings:
    - key: colour
      type: text
      label: Colour
---
"""


def test_a_new_version_keeps_the_old_one_and_says_what_changed(
    client, community_dir, fresh_install
):
    from catalogue.models import Package, PackageVersion

    old = Package.objects.get(package_id="lantern")
    old_hash = old.content_hash
    folder = community_dir / "lantern"
    # Same version, other bytes: no history row.
    (folder / "CHANGES.md").write_text("1.0.0: first light, typo fixed\n")
    call_command("sync_packages", verbosity=0)
    assert PackageVersion.objects.count() == 0

    (folder / "PLUGIN.md").write_text(V2)
    call_command("sync_packages", verbosity=0)
    package = Package.objects.get(package_id="lantern")
    assert package.version == "1.1.0"
    kept = PackageVersion.objects.get(package=package)
    assert kept.version == "1.0.0" and kept.content_hash != package.content_hash
    assert kept.manifest["description"] == "Lights the way for the party."
    assert kept.content_hash != old_hash  # the hash of the 1.0.0 bytes last seen

    html = client.get("/packages/lantern/").content.decode()
    versions = html[html.index('id="versions"') :]
    assert "<strong>1.1.0</strong>" in versions and 'data-version="1.0.0"' in versions
    assert "Permissions widened: may now send GET to https://colours.example.com." in versions
    assert "Setting added: Colour (colour)." in versions
    assert "the first version seen here" in versions

    # Syncing again changes nothing.
    call_command("sync_packages", verbosity=0)
    assert PackageVersion.objects.count() == 1


def test_version_changes_name_widening_and_narrowing():
    older = {"permissions": {"http": [{"origin": "https://a.example", "methods": ["GET"]}]}}
    newer = {
        "entry": "./server/index.js",
        "permissions": {"http": [{"origin": "https://a.example", "methods": ["GET", "POST"]}]},
        "runtime": {"agent": {}, "effects": {"writes": ["plugin-data:self:x"]}},
    }
    lines = version_changes(older, newer)
    assert "Permissions widened: may now also send POST to https://a.example." in lines
    assert "Permissions widened: now runs its own code in the plugin host." in lines
    assert "Permissions widened: its runtime now writes plugin-data:self:x." in lines
    assert "Now calls a language model." in lines
    assert "Permissions narrowed: no longer reaches https://a.example." in version_changes(
        older, {}
    )
