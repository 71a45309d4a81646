"""Indexing world folders: idempotent, one verdict per folder, errors with file and path."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from worlds_testdata import HARBOR_YAML, write_world

from worlds.models import World
from worlds.services import world_sync
from worlds.world_file import read_world


def issues(result) -> list[tuple[str, str, str]]:
    return [(i.file, i.path, i.code) for i in result.errors]


def test_sync_is_idempotent(packages, worlds_root: Path) -> None:
    write_world(worlds_root, "harbor", HARBOR_YAML)
    first = world_sync(dirs=[worlds_root])
    second = world_sync(dirs=[worlds_root])
    assert [r.action for r in first.results] == ["created"]
    assert [r.action for r in second.results] == ["unchanged"]
    world = World.objects.get()
    assert world.name == "Harbor"
    assert world.author == {
        "name": "Alice Author",
        "url": "https://example.com/alice",
        "about": "Writes rainy worlds.",
    }
    assert world.plugins == ["rapport", "dice", "storyteller"]
    assert world.plugin_settings == {
        "rapport": {"tone": "harsh", "intensity": 7},
        "dice": {"sides": 12},
    }
    # The unknown key is reported, not fatal.
    assert [(w.path, w.code) for w in first.results[0].warnings] == [
        ("/x-editor-notes", "unknown-field")
    ]


def test_an_edited_file_updates_the_row(packages, worlds_root: Path) -> None:
    folder = write_world(worlds_root, "harbor", HARBOR_YAML)
    world_sync(dirs=[worlds_root])
    (folder / "world.yaml").write_text(HARBOR_YAML.replace("intensity: 7", "intensity: 2"))
    report = world_sync(dirs=[worlds_root])
    assert [r.action for r in report.results] == ["updated"]
    assert World.objects.get().plugin_settings["rapport"]["intensity"] == 2


def test_invalid_yaml_is_an_error_naming_file_and_line(db, worlds_root: Path) -> None:
    write_world(worlds_root, "broken", "name: Broken\ndescription: [unclosed\n")
    [result] = world_sync(dirs=[worlds_root]).results
    assert result.action == "error"
    [issue] = result.errors
    assert (issue.file, issue.path, issue.code) == ("world.yaml", "", "yaml-syntax")
    assert "line" in issue.message
    world = World.objects.get(world_id="broken")
    assert world.state == World.State.ERROR and world.errors[0]["code"] == "yaml-syntax"


def test_every_field_error_is_reported_with_its_path(db, worlds_root: Path) -> None:
    text = (
        "id: not-the-folder\n"
        "description: 5\n"
        "author:\n  url: http://insecure.example\n  links:\n    - label: x\n      url: ftp://x\n  colour: red\n"
        "plugins: [dice, Dice, dice]\n"
        "pluginSettings:\n  dice: [1, 2]\n  storyteller:\n    style: {nested: true}\n"
    )
    write_world(worlds_root, "bad-world", text)
    [result] = world_sync(dirs=[worlds_root]).results
    assert sorted(issues(result)) == sorted(
        [
            ("world.yaml", "/id", "id-mismatch"),
            ("world.yaml", "/name", "required"),
            ("world.yaml", "/description", "type"),
            ("world.yaml", "/author/colour", "unknown-field"),
            ("world.yaml", "/author/name", "required"),
            ("world.yaml", "/author/url", "https-only"),
            ("world.yaml", "/author/links/0/url", "https-only"),
            ("world.yaml", "/plugins/1", "bad-id"),
            ("world.yaml", "/plugins/2", "duplicate"),
            ("world.yaml", "/pluginSettings/dice", "type"),
            ("world.yaml", "/pluginSettings/storyteller/style", "type"),
        ]
    )


def test_a_world_names_packages_by_the_manifest_id_rule(db, worlds_root: Path) -> None:
    """Any id a package may have ("a--b", "-a") may be listed; a longer id than the hub stores
    may not."""
    long_id = "x" * 101
    text = (
        "name: Ids\ndescription: Package ids\n"
        f"plugins: [a--b, -a, {long_id}]\n"
        f"pluginSettings:\n  a--b: {{}}\n  {long_id}: {{}}\n"
    )
    write_world(worlds_root, "ids", text)
    [result] = world_sync(dirs=[worlds_root]).results
    assert sorted(issues(result)) == sorted(
        [
            ("world.yaml", "/plugins/2", "bad-id"),
            ("world.yaml", f"/pluginSettings/{long_id}", "bad-id"),
        ]
    )


def test_a_folder_without_world_yaml_and_a_non_mapping_file_are_errors(
    db, worlds_root: Path
) -> None:
    (worlds_root / "empty").mkdir()
    write_world(worlds_root, "listy", "- just\n- a list\n")
    results = {r.world_id: r for r in world_sync(dirs=[worlds_root]).results}
    assert issues(results["empty"]) == [("world.yaml", "", "missing-file")]
    assert issues(results["listy"]) == [("world.yaml", "", "not-a-mapping")]


def test_presets_that_do_not_fit_their_package_are_warnings_with_paths(
    packages, worlds_root: Path
) -> None:
    text = HARBOR_YAML.replace("intensity: 7", "intensity: 70").replace(
        "sides: 12", "sides: 12\n    colour: red"
    )
    text = text.replace("  - storyteller\n", "  - storyteller\n  - nowhere\n")
    write_world(worlds_root, "harbor", text)
    [result] = world_sync(dirs=[worlds_root]).results
    assert result.action == "created"
    assert sorted((w.path, w.code) for w in result.warnings) == [
        ("/pluginSettings/dice/colour", "preset-unknown-key"),
        ("/pluginSettings/rapport/intensity", "preset-above-max"),
        ("/plugins/3", "not-in-catalogue"),
        ("/x-editor-notes", "unknown-field"),
    ]


def test_a_broken_edit_keeps_the_last_good_presets(packages, worlds_root: Path) -> None:
    folder = write_world(worlds_root, "harbor", HARBOR_YAML)
    world_sync(dirs=[worlds_root])
    (folder / "world.yaml").write_text("name: [\n")
    world_sync(dirs=[worlds_root])
    world = World.objects.get()
    assert world.state == World.State.ERROR
    assert world.plugin_settings["dice"] == {"sides": 12}


def test_a_vanished_folder_marks_the_world_missing_and_the_first_folder_wins(
    packages, tmp_path: Path
) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    write_world(first, "harbor", HARBOR_YAML)
    write_world(second, "harbor", HARBOR_YAML.replace("name: Harbor", "name: Impostor"))
    report = world_sync(dirs=[first, second])
    assert [r.action for r in report.results] == ["created", "duplicate"]
    assert report.results[1].errors[0].code == "duplicate-id"
    assert World.objects.get().name == "Harbor"
    report = world_sync(dirs=[tmp_path / "nothing-here"])
    assert [r.action for r in report.results] == ["missing"]
    assert World.objects.get().state == World.State.MISSING


def test_the_bundled_example_worlds_are_valid_and_fit_the_bundled_plugins(db) -> None:
    """Our two example worlds load cleanly, and each preset passes its bundled plugin's field."""
    from ruamel.yaml import YAML

    from worlds.fields import check_values, fields_from_manifest
    from worlds.selectors import model_slots

    bundled = Path(settings.BASE_DIR) / "world-packages"
    folders = sorted(p for p in bundled.iterdir() if p.is_dir())
    assert len(folders) >= 2
    for folder in folders:
        parsed = read_world(folder)
        assert parsed.ok and not parsed.warnings, (folder.name, parsed.errors, parsed.warnings)
        assert "#" in (folder / "world.yaml").read_text(), (
            "example worlds explain themselves in comments"
        )
        for plugin_id, values in parsed.data["pluginSettings"].items():
            assert plugin_id in parsed.data["plugins"]
            text = (Path(settings.COVEL_BUNDLED_PLUGINS_DIR) / plugin_id / "PLUGIN.md").read_text()
            frontmatter = YAML(typ="safe").load(text.split("---", 2)[1])
            checked = check_values(fields_from_manifest(frontmatter), values, slots=model_slots())
            assert checked.ok, (folder.name, plugin_id, checked.errors)


def test_the_command_prints_errors_with_file_and_path(db, worlds_root: Path, capsys) -> None:
    write_world(worlds_root, "no-name", "description: x\n")
    call_command("sync_worlds", str(worlds_root))
    out = capsys.readouterr().out
    assert "error   no-name/world.yaml:/name name is required [required]" in out
    assert "0 created" in out and "1 error" in out
