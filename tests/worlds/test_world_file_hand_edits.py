"""A preset save keeps hand edits of world.yaml made since the last sync, refuses one to the
key it saves (409, naming the file relative to the world), and writes the file durably.

Personas: Alice owns Harbor (a real folder under tmp_path); Bob is staff."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from django.test import Client

from worlds.models import World
from worlds.services import WorldFileConflict, WorldFileError, world_plugin_settings_update
from worlds.world_file import write_plugin_settings

pytestmark = pytest.mark.django_db
PUT_WORLD = "/api/worlds/harbor/plugin-settings/rapport"


def world_yaml(world) -> Path:
    return Path(world.source_dir) / "world.yaml"


def hand_edit(world, old: str, new: str) -> None:
    file = world_yaml(world)
    text = file.read_text()
    assert old in text
    file.write_text(text.replace(old, new))


def put(user, url: str, body: object):
    client = Client()
    client.force_login(user)
    return client.put(url, data=json.dumps(body), content_type="application/json")


def test_a_hand_edit_of_tone_survives_a_save_of_intensity(packages, harbor, alice) -> None:
    hand_edit(harbor, "tone: harsh", "tone: gentle")
    answer = put(alice, PUT_WORLD, {"intensity": 9})
    assert answer.status_code == 200, answer.content
    text = world_yaml(harbor).read_text()
    assert "tone: gentle      # grudges" in text and "intensity: 9" in text
    harbor.refresh_from_db()
    assert harbor.plugin_settings["rapport"] == {"tone": "gentle", "intensity": 9}
    fields = {f["key"]: f for f in answer.json()["fields"]}
    assert fields["tone"]["value"] == "gentle"


def test_a_hand_edit_of_the_saved_key_is_a_409_and_nothing_is_written(
    packages, harbor, alice
) -> None:
    hand_edit(harbor, "intensity: 7", "intensity: 3")
    before = world_yaml(harbor).read_bytes()
    answer = put(alice, PUT_WORLD, {"intensity": 9})
    assert answer.status_code == 409
    body = answer.json()
    assert body["code"] == "world_file_changed"
    assert body["message"].startswith("harbor/world.yaml was edited by hand")
    assert "intensity: the hub had 7, the file now says 3" in body["message"]
    assert str(harbor.source_dir) not in body["message"]
    assert world_yaml(harbor).read_bytes() == before
    # The hub now shows what the file says, so the client sees the hand edit and may save again.
    harbor.refresh_from_db()
    assert harbor.plugin_settings["rapport"]["intensity"] == 3
    again = put(alice, PUT_WORLD, {"intensity": 9})
    assert again.status_code == 200
    assert "intensity: 9" in world_yaml(harbor).read_text()


def test_a_hand_edit_to_the_value_being_saved_is_no_conflict(packages, harbor, alice) -> None:
    hand_edit(harbor, "intensity: 7", "intensity: 9")
    assert put(alice, PUT_WORLD, {"intensity": 9}).status_code == 200


def test_a_hand_deleted_key_stays_deleted(packages, harbor, alice) -> None:
    hand_edit(harbor, "    tone: harsh      # grudges\n", "")
    world_plugin_settings_update(
        world=harbor, package=packages["rapport"], values={"intensity": 2}, actor=alice
    )
    assert "tone" not in world_yaml(harbor).read_text().split("pluginSettings:")[1]
    harbor.refresh_from_db()
    assert harbor.plugin_settings["rapport"] == {"intensity": 2}


def test_a_reset_of_a_hand_edited_key_is_a_conflict(packages, harbor, alice) -> None:
    hand_edit(harbor, "tone: harsh", "tone: gentle")
    with pytest.raises(WorldFileConflict, match="tone: the hub had 'harsh'"):
        world_plugin_settings_update(
            world=harbor, package=packages["rapport"], values={"tone": None}, actor=alice
        )


def test_other_hand_edits_wait_for_the_next_sync(packages, harbor, alice, worlds_root) -> None:
    from worlds.services import world_sync

    hand_edit(harbor, "name: ", "name: Renamed ")
    world_plugin_settings_update(
        world=harbor, package=packages["rapport"], values={"intensity": 2}, actor=alice
    )
    report = world_sync(dirs=[worlds_root])
    assert [r.action for r in report.results] == ["updated"]
    assert World.objects.get(world_id="harbor").display_name.startswith("Renamed ")


def test_the_409_on_the_page_is_a_conflict_too(client, packages, harbor, alice) -> None:
    from worlds.forms import input_name
    from worlds.views import world_file_hash

    client.force_login(alice)
    hand_edit(harbor, "intensity: 7", "intensity: 3")
    # The page was loaded after the hand edit but before any sync: the file hash matches.
    answer = client.post(
        "/worlds/harbor/",
        {"package": "rapport", "file_hash": world_file_hash(harbor), input_name("intensity"): "9"},
    )
    assert answer.status_code == 409
    assert "harbor/world.yaml was edited by hand" in answer.content.decode()


def test_an_unwritable_file_names_it_relative_to_the_world(packages, harbor, alice) -> None:
    folder = Path(harbor.source_dir)
    world_yaml(harbor).unlink()
    world_yaml(harbor).mkdir()
    with pytest.raises(WorldFileError) as failed:
        world_plugin_settings_update(
            world=harbor, package=packages["rapport"], values={"intensity": 1}, actor=alice
        )
    assert str(failed.value).startswith("cannot write harbor/world.yaml: ")
    assert str(folder) not in str(failed.value)
    answer = put(alice, PUT_WORLD, {"intensity": 1})
    assert answer.status_code == 409
    assert answer.json()["code"] == "world_file_error"
    assert str(folder) not in answer.content.decode()


def test_the_file_is_fsynced_before_the_rename_and_the_folder_after(
    packages, harbor, monkeypatch
) -> None:
    calls: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        target = os.readlink(f"/proc/self/fd/{fd}") if os.path.exists("/proc/self/fd") else "?"
        calls.append(("fsync", target))
        real_fsync(fd)

    def replace(src, dst) -> None:
        calls.append(("replace", str(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    folder = Path(harbor.source_dir)
    write_plugin_settings(folder, package_id="rapport", values={"intensity": 4})
    assert [c[0] for c in calls] == ["fsync", "replace", "fsync"]
    if calls[0][1] != "?":
        assert Path(calls[0][1]).parent == folder and Path(calls[0][1]).name.startswith(".world-")
        assert Path(calls[2][1]) == folder
    assert calls[1][1] == str(folder / "world.yaml")
    assert "intensity: 4" in world_yaml(harbor).read_text()
    assert [p.name for p in folder.iterdir() if p.name.startswith(".world-")] == []


def test_a_failed_fsync_leaves_the_old_file_and_no_temporary(packages, harbor, monkeypatch) -> None:
    folder = Path(harbor.source_dir)
    before = world_yaml(harbor).read_bytes()

    def broken(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(OSError):
        write_plugin_settings(folder, package_id="rapport", values={"intensity": 4})
    assert world_yaml(harbor).read_bytes() == before
    assert [p.name for p in folder.iterdir() if p.name.startswith(".world-")] == []
