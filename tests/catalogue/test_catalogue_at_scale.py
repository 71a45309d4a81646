"""The sync at scale (issue 25): an unchanged package is known by its files' stats, without a
read and without a write; a touched one is hashed and only its stats written; a changed one is
re-indexed alone; new packages are inserted in batches. Real loader, real approvals, real Node."""

from __future__ import annotations

import builtins
import os
import shutil
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from catalogue import services
from catalogue.manifest import loader
from catalogue.manifest.types import thaw
from catalogue.models import Package, PackageTag, Setting, SettingOption
from catalogue.services import packages_sync
from sessions.selectors import package_messages

pytestmark = pytest.mark.django_db

PLUGIN_MD = """---
version: 1.0.{revision}
displayName: Helper {n}
description: Keeps track of things, number {n}.
tags: [mode:notes]
contributes:
  settings:
    - {{ key: level, type: select, label: Level, default: low, options: [{{ value: low, label: Low }}] }}
---
Notes about package {n}.
"""


def write(folder: Path, n: int, revision: int = 0) -> Path:
    package = folder / f"pkg-{n:03d}"
    (package / "server").mkdir(parents=True, exist_ok=True)
    (package / "PLUGIN.md").write_text(PLUGIN_MD.format(n=n, revision=revision))
    (package / "server" / "index.js").write_text(
        'import { value } from "./value.js";\nexport default function register() { return value; }\n'
    )
    (package / "server" / "value.js").write_text(f"export const value = {n};\n")
    return package


@pytest.fixture
def settled(monkeypatch):
    """Files written by the test count as settled at once (the sync otherwise distrusts the
    stats of files changed in the last two seconds, loader.RACY_NS)."""
    monkeypatch.setattr(loader, "RACY_NS", 0)


@pytest.fixture
def counted(monkeypatch):
    """Every load, hash and file opened under the plugin folders, recorded."""
    seen: dict[str, list] = {"loads": [], "hashes": [], "opened": []}
    real_load, real_hash, real_open = services._load_package, loader.package_hash, builtins.open
    real_os_open = os.open

    def load(path, host_version, content_hash=""):
        seen["loads"].append(Path(path).name)
        return real_load(path, host_version, content_hash)

    def hashing(root):
        seen["hashes"].append(Path(root).name)
        return real_hash(root)

    def opening(file, *args, **kwargs):
        if isinstance(file, str | os.PathLike) and "pkg-" in os.fspath(file):
            seen["opened"].append(os.fspath(file))
        return real_open(file, *args, **kwargs)

    def os_opening(file, *args, **kwargs):  # the streamed reads (package_files.open_regular)
        if isinstance(file, str | os.PathLike) and "pkg-" in os.fspath(file):
            seen["opened"].append(os.fspath(file))
        return real_os_open(file, *args, **kwargs)

    monkeypatch.setattr(services, "_load_package", load)
    monkeypatch.setattr(os, "open", os_opening)
    monkeypatch.setattr(loader, "package_hash", hashing)
    monkeypatch.setattr(builtins, "open", opening)
    return seen


def writes(queries) -> list[str]:
    return [
        q["sql"]
        for q in queries
        if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
    ]


def test_an_unchanged_sync_reads_no_file_and_writes_nothing(real_plugin_dirs, settled, counted):
    for n in range(5):
        write(real_plugin_dirs.community, n)
    first = packages_sync()
    assert len(first.indexed) == 5 and not first.invalid, first.invalid
    assert all(p.file_stats for p in Package.objects.all())  # kept per package
    assert set(Package.objects.values_list("code_state", flat=True)) == {"needs-approval"}
    for key in counted:
        counted[key].clear()

    with CaptureQueriesContext(connection) as queries:
        summary = packages_sync()
    assert len(summary.unchanged) == 5 and not summary.indexed
    assert writes(queries.captured_queries) == []
    assert counted == {"loads": [], "hashes": [], "opened": []}


def test_a_touched_file_is_hashed_and_only_the_stats_are_written(
    real_plugin_dirs, settled, counted
):
    for n in range(3):
        write(real_plugin_dirs.community, n)
    packages_sync()
    row = Package.objects.get(package_id="pkg-001")
    value = real_plugin_dirs.community / "pkg-001" / "server" / "value.js"
    value.write_text(value.read_text())  # the same bytes, new times
    for key in counted:
        counted[key].clear()

    with CaptureQueriesContext(connection) as queries:
        summary = packages_sync()
    assert len(summary.unchanged) == 3
    assert counted["hashes"] == ["pkg-001"] and counted["loads"] == []
    # The recorder sees the hash's reads, and they are of the touched package only.
    assert counted["opened"] and all("/pkg-001/" in f for f in counted["opened"])
    updates = writes(queries.captured_queries)
    assert len(updates) == 1 and "file_stats" in updates[0], updates
    after = Package.objects.get(package_id="pkg-001")
    assert after.content_hash == row.content_hash and after.file_stats != row.file_stats
    for key in counted:
        counted[key].clear()
    packages_sync()
    assert counted["hashes"] == [] and counted["loads"] == []  # the new stats are trusted


def test_a_changed_package_is_indexed_alone(real_plugin_dirs, settled, counted):
    for n in range(4):
        write(real_plugin_dirs.community, n)
    packages_sync()
    write(real_plugin_dirs.community, 2, revision=1)
    for key in counted:
        counted[key].clear()
    summary = packages_sync()
    assert summary.indexed == ["pkg-002"] and len(summary.unchanged) == 3
    assert counted["loads"] == ["pkg-002"]
    # The sync hashed it to learn it changed; the loader did not hash it again.
    assert counted["hashes"] == ["pkg-002"]
    # Its code was read once, by that hash: approvals took the file hashes from the loader.
    for name in ("index.js", "value.js"):
        assert [f for f in counted["opened"] if f.endswith(f"/pkg-002/server/{name}")] == [
            str(real_plugin_dirs.community / "pkg-002" / "server" / name)
        ], counted["opened"]
    assert Package.objects.get(package_id="pkg-002").version == "1.0.1"


def test_fresh_files_are_not_trusted_by_their_stats(real_plugin_dirs, counted):
    # Just written: within the clock's granularity a second edit could leave the same stats.
    write(real_plugin_dirs.community, 0)
    packages_sync()
    assert Package.objects.get().file_stats == []
    counted["hashes"].clear()
    summary = packages_sync()
    assert summary.unchanged == ["pkg-000"] and counted["hashes"] == ["pkg-000"]


def test_stats_cover_what_the_hash_covers(tmp_path):
    package = write(tmp_path, 0)
    (package / "node_modules" / "dep").mkdir(parents=True)
    (package / "node_modules" / "dep" / "index.js").write_text("x")
    (package / "notes.txt").symlink_to("PLUGIN.md")
    stats = loader.package_stats(package, now_ns=10**20)
    assert [s[0] for s in stats] == [
        "PLUGIN.md",
        "notes.txt",
        "server/index.js",
        "server/value.js",
    ]
    before = loader.package_hash(package)
    (package / "node_modules" / "dep" / "index.js").write_text("changed")
    assert loader.package_hash(package) == before  # outside both
    assert loader.package_stats(package, now_ns=10**20) == stats


def test_many_new_packages_are_inserted_in_batches(real_plugin_dirs, settled, monkeypatch):
    monkeypatch.setattr(services, "INDEX_BATCH", 10)
    for n in range(25):
        write(real_plugin_dirs.community, n)
    with CaptureQueriesContext(connection) as queries:
        summary = packages_sync()
    assert len(summary.indexed) == 25 and not summary.invalid
    inserts = [q for q in writes(queries.captured_queries) if q.startswith("INSERT")]
    package_inserts = [q for q in inserts if 'INTO "catalogue_package" ' in q]
    tag_inserts = [q for q in inserts if 'INTO "catalogue_packagetag" ' in q]
    assert len(package_inserts) == 3 and len(tag_inserts) == 3  # 10 + 10 + 5
    assert set(Package.objects.values_list("code_state", flat=True)) == {"needs-approval"}

    def children() -> list:
        return [
            list(
                PackageTag.objects.order_by("package__package_id", "position").values_list(
                    "package__package_id", "tag", "position"
                )
            ),
            list(
                Setting.objects.order_by("package__package_id").values_list(
                    "package__package_id", "key", "position", "default"
                )
            ),
            list(
                SettingOption.objects.order_by("setting__package__package_id").values_list(
                    "setting__package__package_id", "value", "label", "position"
                )
            ),
            list(
                Package.objects.order_by("package_id").values_list(
                    "package_id", "search_text", "manifest", "state", "trust"
                )
            ),
        ]

    batched = children()
    assert len(batched[0]) == 25 and len(batched[2]) == 25
    forced = packages_sync(force=True)  # every row exists: the one-at-a-time path
    assert len(forced.indexed) == 25
    assert children() == batched


def test_the_loader_carries_the_locale_texts_and_the_index_reads_them_once(real_plugin_dirs):
    folder = write(real_plugin_dirs.community, 0)
    (folder / "locales").mkdir()
    (folder / "locales" / "fr.yaml").write_text(
        "PLUGIN.md:\n  displayName: Aide 0\n  description: Garde la trace.\n"
    )
    (folder / "PLUGIN.de.md").write_text("---\ndisplayName: Helfer 0\n---\nNotizen.\n")
    (folder / "locales" / "fr.messages.json").write_text('{"Level": "Niveau", "n": 3}')
    (folder / "locales" / "es.messages.json").write_text("{not json")
    result = loader.load_package(folder)
    assert result.ok, result.errors
    assert thaw(result.manifest.translations) == {
        "fr": {"displayName": "Aide 0", "description": "Garde la trace."},
        "de": {"displayName": "Helfer 0", "body": "Notizen."},
    }
    assert thaw(result.manifest.messages) == {"fr": {"Level": "Niveau"}, "es": None}
    assert package_messages(manifest=result.manifest, locale="fr-CA") == {"Level": "Niveau"}
    assert package_messages(manifest=result.manifest, locale="es") is None
    # Indexed from the loader's result alone: with the files gone, the row still has them.
    shutil.rmtree(folder / "locales")
    (folder / "PLUGIN.de.md").unlink()
    package = services.package_index(
        result=result, source="community", content_hash=result.content_hash, host_version="0.1.0"
    )
    assert package.translations["fr"]["displayName"] == "Aide 0"
    assert "helfer 0" in package.search_text
