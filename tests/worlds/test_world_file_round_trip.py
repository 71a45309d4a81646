"""Saving presets rewrites world.yaml in place: comments, key order and unknown keys survive."""

from __future__ import annotations

import difflib
from pathlib import Path

from ruamel.yaml import YAML
from worlds_testdata import HARBOR_YAML

from worlds.services import world_plugin_settings_update, world_sync
from worlds.world_file import read_world


def diff(before: str, after: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))
    ]


def world_file(world) -> Path:
    return Path(world.source_dir) / "world.yaml"


def test_changing_a_preset_changes_only_its_line(packages, harbor, alice) -> None:
    world_plugin_settings_update(
        world=harbor, package=packages["rapport"], values={"intensity": 9}, actor=alice
    )
    after = world_file(harbor).read_text()
    assert diff(HARBOR_YAML, after) == ["-    intensity: 7", "+    intensity: 9"]


def test_comments_and_unknown_keys_survive_every_kind_of_change(packages, harbor, alice) -> None:
    rapport, storyteller = packages["rapport"], packages["storyteller"]
    world_plugin_settings_update(
        world=harbor, package=rapport, values={"tone": "gentle", "decay": 0.3}, actor=alice
    )
    world_plugin_settings_update(
        world=harbor, package=storyteller, values={"style": "lyrical"}, actor=alice
    )
    after = world_file(harbor).read_text()
    assert diff(HARBOR_YAML, after) == [
        "-    tone: harsh      # grudges",
        "+    tone: gentle     # grudges",
        "+    decay: 0.3",
        "+  storyteller:",
        "+    style: lyrical",
    ]
    for kept in (
        "# Harbor: the test world.",
        "# trailing comment on a scalar",
        "x-editor-notes: keep me",
        "# an unknown key: kept on write",
        "# presets for rapport",
        "# a comment at the end of the file",
    ):
        assert kept in after
    # New entries go above the file's closing comment, which stays last.
    assert after.endswith("    style: lyrical\n# a comment at the end of the file\n")
    # The key order of the file is the written one.
    assert list(YAML(typ="safe").load(after)) == [
        "name",
        "description",
        "author",
        "x-editor-notes",
        "plugins",
        "pluginSettings",
    ]


def test_reset_removes_the_key_and_an_emptied_plugin(packages, harbor, alice) -> None:
    world_plugin_settings_update(
        world=harbor, package=packages["dice"], values={"sides": None}, actor=alice
    )
    after = world_file(harbor).read_text()
    assert diff(HARBOR_YAML, after) == ["-  dice:", "-    sides: 12"]
    assert after.endswith("    intensity: 7\n# a comment at the end of the file\n")


def test_the_file_and_the_database_agree_and_a_resync_changes_nothing(
    packages, harbor, alice, worlds_root
) -> None:
    world_plugin_settings_update(
        world=harbor, package=packages["rapport"], values={"intensity": 3}, actor=alice
    )
    harbor.refresh_from_db()
    parsed = read_world(Path(harbor.source_dir))
    assert parsed.ok and parsed.data["pluginSettings"] == harbor.plugin_settings
    assert harbor.content_hash == parsed.content_hash
    report = world_sync(dirs=[worlds_root])
    assert [r.action for r in report.results] == ["unchanged"]


def test_a_world_without_presets_gets_a_plugin_settings_block_at_the_end(
    packages, worlds_root, alice
) -> None:
    from worlds_testdata import write_world

    from worlds.models import World

    text = "# minimal\nname: Bare\ndescription: Nothing preset.\nplugins:\n  - dice\n"
    write_world(worlds_root, "bare", text)
    world_sync(dirs=[worlds_root])
    world = World.objects.get(world_id="bare")
    world_plugin_settings_update(
        world=world,
        package=packages["dice"],
        values={"advantage": True},
        actor=alice.__class__.objects.create_user("z", is_staff=True),
    )
    after = world_file(world).read_text()
    assert after == text + "pluginSettings:\n  dice:\n    advantage: true\n"


def test_an_unwritable_world_file_saves_nothing(packages, harbor, alice) -> None:
    import pytest

    from worlds.services import WorldFileError

    folder = Path(harbor.source_dir)
    (folder / "world.yaml").unlink()
    (folder / "world.yaml").mkdir()  # reading it now fails with an OSError
    with pytest.raises(WorldFileError):
        world_plugin_settings_update(
            world=harbor, package=packages["rapport"], values={"intensity": 1}, actor=alice
        )
    harbor.refresh_from_db()
    assert harbor.plugin_settings["rapport"]["intensity"] == 7


def test_a_world_file_broken_since_the_sync_saves_nothing(packages, harbor, alice) -> None:
    import pytest

    from worlds.services import WorldFileError

    (Path(harbor.source_dir) / "world.yaml").write_text("name: [unclosed\n")
    with pytest.raises(WorldFileError, match="world.yaml"):
        world_plugin_settings_update(
            world=harbor, package=packages["rapport"], values={"intensity": 1}, actor=alice
        )
    harbor.refresh_from_db()
    assert harbor.plugin_settings["rapport"]["intensity"] == 7
