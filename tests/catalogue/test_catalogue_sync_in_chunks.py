"""A sync works through the folders a chunk at a time (services.SYNC_CHUNK): a first sync of a
large directory never holds every package's verdict at once, and its rows, notes and summary
are those of a sync done in one piece."""

from __future__ import annotations

import gc
import weakref

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from catalogue import services
from catalogue.models import Package
from catalogue.services import packages_sync

pytestmark = pytest.mark.django_db

PLUGIN_MD = """---
version: 1.0.{n}
displayName: Helper {n}
description: Keeps track of things, number {n}.
tags: [mode:notes]
---
Notes about package {n}.
"""


def write_packages(folder, count: int) -> None:
    for n in range(count):
        package = folder / f"pkg-{n:02d}"
        package.mkdir()
        (package / "PLUGIN.md").write_text(PLUGIN_MD.format(n=n))


def test_a_first_sync_holds_one_chunk_of_verdicts_at_a_time(real_plugin_dirs, monkeypatch):
    monkeypatch.setattr(services, "SYNC_CHUNK", 4)
    write_packages(real_plugin_dirs.community, 13)
    results: list[weakref.ref] = []  # the real loader's results, alive until freed
    most = 0
    real_load = services._load_package

    def load(path, host_version, content_hash=""):
        nonlocal most
        result = real_load(path, host_version, content_hash)
        results.append(weakref.ref(result))
        most = max(most, sum(1 for r in results if r() is not None))
        return result

    monkeypatch.setattr(services, "_load_package", load)
    summary = packages_sync()
    assert len(summary.indexed) == 13 and not summary.invalid, summary.invalid
    # Held all at once, 13 would be alive at the last load (cycle collection is paused during
    # a sync, so a verdict in a reference cycle would stay too).
    assert most == 4


def test_a_re_sync_reads_whole_rows_a_chunk_at_a_time(real_plugin_dirs, monkeypatch):
    """The rows as the sync began are read a chunk at a time (what an unchanged package is
    known by: stats, hash, versions), not all at once: a re-sync's memory does not grow with
    the catalogue. A folder gone is still found and its row removed."""
    write_packages(real_plugin_dirs.community, 13)
    assert len(packages_sync().indexed) == 13
    (real_plugin_dirs.community / "pkg-05" / "PLUGIN.md").unlink()
    (real_plugin_dirs.community / "pkg-05").rmdir()
    monkeypatch.setattr(services, "SYNC_CHUNK", 4)

    with CaptureQueriesContext(connection) as queries:
        summary = packages_sync()
    assert len(summary.unchanged) == 12 and summary.removed == ["pkg-05"]
    # The sync's reads of whole rows (their stats, and whether a column added since is empty);
    # the delete's own read of the removed row is not one of them.
    whole_rows = [
        q["sql"]
        for q in queries
        if '"file_stats"' in q["sql"].split("FROM")[0] and "IS NULL" in q["sql"]
    ]
    # Three chunks of the 12 folders left, each read by its rows' keys, at most 4 of them.
    assert len(whole_rows) == 3, whole_rows
    assert all(sql.count(" IN (") == 1 and sql.count(",") < 40 for sql in whole_rows)
    assert not Package.objects.filter(package_id="pkg-05").exists()


def shadowing_folders(plugin_dirs) -> None:
    """Duplicates whose winner lies in an earlier chunk, in the same chunk, and in the user
    folder, with a package the sync cannot load among them."""
    for name in ("dice", "map", "notes"):
        plugin_dirs.add("bundled", name, {"description": f"Trusted {name}.", "version": "1.0.0"})
    plugin_dirs.add("user", "dice", {"description": "My dice.", "version": "2.0.0"})
    plugin_dirs.add("user", "quest", {"description": "My quest."})
    plugin_dirs.add("community", "a-broken", {"version": "1.0.0"})  # no description: an error
    for name in ("b-lore", "map", "quest", "dice"):
        plugin_dirs.add("community", name, {"description": f"Community {name}.", "version": "3"})


def state() -> list:
    return list(
        Package.objects.order_by("package_id").values_list(
            "package_id", "source", "description", "shadowed", "state", "errors", "code_state"
        )
    )


@pytest.mark.parametrize("chunk", [2, 3])
def test_chunks_write_what_one_piece_writes(plugin_dirs, approval_calls, monkeypatch, chunk):
    shadowing_folders(plugin_dirs)
    whole = packages_sync()
    expected = state()
    assert dict((row[0], len(row[3])) for row in expected) == {
        "a-broken": 0,
        "b-lore": 0,
        "dice": 2,
        "map": 1,
        "notes": 0,
        "quest": 1,
    }
    requested = sorted(approval_calls)
    Package.objects.all().delete()
    approval_calls.clear()

    monkeypatch.setattr(services, "SYNC_CHUNK", chunk)
    chunked = packages_sync()
    assert state() == expected
    assert vars(chunked) == vars(whole)
    assert sorted(approval_calls) == requested
    # Unchanged, then with a shadowed copy gone: the notes follow, whole or in chunks.
    again = packages_sync()
    assert len(again.unchanged) == 6 and state() == expected
    for f in (plugin_dirs.community / "dice").iterdir():
        f.unlink()
    (plugin_dirs.community / "dice").rmdir()
    packages_sync()
    (note,) = Package.objects.get(package_id="dice").shadowed
    assert note["source"] == "user"


def test_a_chunks_reference_cycles_are_freed_before_the_next_chunk(real_plugin_dirs, monkeypatch):
    monkeypatch.setattr(services, "SYNC_CHUNK", 4)
    write_packages(real_plugin_dirs.community, 13)
    gc.collect()
    gc.disable()  # nothing collected behind the sync's back, before or after it
    try:
        summary = packages_sync()
        left = gc.collect()
    finally:
        gc.enable()
    assert len(summary.indexed) == 13
    # The loader's recursive helpers leave about twenty objects in cycles a package; with the
    # collection paused for the whole sync they piled up (GBs at 100,000 packages).
    assert left < 13
