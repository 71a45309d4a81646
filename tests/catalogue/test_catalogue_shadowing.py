"""Two folders with one package id: the catalogue says which copy won and why (page and API)."""

from __future__ import annotations

import pytest
from django.test import Client

from catalogue.models import Package
from catalogue.services import packages_sync

pytestmark = pytest.mark.django_db


def test_a_users_real_copy_beside_the_bundled_one_is_named_with_the_reason(
    plugin_dirs, approval_calls
):
    plugin_dirs.add("bundled", "rapport", {"description": "Our example.", "version": "1.0.0"})
    users = plugin_dirs.add(
        "user", "rapport", {"description": "The real Covel affinity.", "version": "3.2.0"}
    )
    packages_sync()
    package = Package.objects.get()
    assert package.description == "Our example."  # the bundled copy won
    (note,) = package.shadowed
    assert note["path"] == str(users)
    assert (note["source"], note["version"], note["winner"]) == ("user", "3.2.0", "bundled")
    assert "bundled packages come first, then the user folder" in note["reason"]
    assert (
        "another copy of rapport (version 3.2.0) in the user folder is ignored" in (note["message"])
    )
    assert "this copy, bundled with the hub, is the one used" in note["message"]


def test_two_community_folders_name_the_configured_order(plugin_dirs, settings, tmp_path):
    second = tmp_path / "community-2"
    second.mkdir()
    settings.COVEL_COMMUNITY_PLUGIN_DIRS = [plugin_dirs.community, second]
    plugin_dirs.add("community", "dice")
    (second / "dice").mkdir()
    (second / "dice" / "PLUGIN.md").write_text(
        (plugin_dirs.community / "dice" / "PLUGIN.md").read_text()
    )
    packages_sync()
    (note,) = Package.objects.get().shadowed
    assert note["source"] == note["winner"] == "community"
    assert "configured order" in note["reason"]


def test_the_detail_page_and_the_api_say_which_copy_won(plugin_dirs, approval_calls):
    plugin_dirs.add("bundled", "satchel", {"description": "Our inventory."})
    plugin_dirs.add("user", "satchel", {"description": "Theirs.", "version": "2.0.0"})
    packages_sync()
    client = Client()
    page = client.get("/packages/satchel/").content.decode()
    assert "Other copies of this id (ignored)" in page
    assert "another copy of satchel (version 2.0.0) in the user folder is ignored" in page
    assert "bundled with the hub, is the one used" in page
    card = client.get("/api/packages/satchel").json()
    (note,) = card["shadowed"]
    assert note["source"] == "user" and note["winner"] == "bundled"
    assert note["reason"].startswith("bundled packages come first")


def test_the_note_goes_when_the_other_copy_goes(plugin_dirs, approval_calls):
    plugin_dirs.add("bundled", "storyteller")
    users = plugin_dirs.add("user", "storyteller")
    packages_sync()
    assert Package.objects.get().shadowed
    (users / "PLUGIN.md").unlink()
    users.rmdir()
    packages_sync()
    assert Package.objects.get().shadowed == []
