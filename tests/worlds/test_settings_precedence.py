"""Effective values: the player's session value, else the world's preset, else the default."""

from __future__ import annotations

import pytest

from catalogue.models import Package
from worlds.selectors import settings_resolve
from worlds.services import (
    SettingsInvalid,
    session_plugin_settings_update,
    user_settings_for,
    world_plugin_settings_update,
)


def origins(package, world, session) -> dict[str, tuple[object, str]]:
    return {
        f.field.key: (f.value, f.origin)
        for f in settings_resolve(package=package, world=world, session=session)
    }


def test_without_world_or_session_every_value_is_the_default(packages) -> None:
    assert user_settings_for(package_id="rapport", world=None, session=None) == {
        "tone": "neutral",
        "intensity": 5,
        "nickname": "",
        "notes": "",
        "decay": 0.1,
        "max-entries": 20,
        "show-panel": True,
        "model": "utility",
    }


def test_world_presets_override_defaults(harbor) -> None:
    settings = user_settings_for(package_id="rapport", world=harbor, session=None)
    assert settings["tone"] == "harsh" and settings["intensity"] == 7
    assert settings["decay"] == 0.1  # no preset: the default


def test_session_values_override_world_presets(packages, harbor, alice_session, alice) -> None:
    session_plugin_settings_update(
        session=alice_session, package=packages["rapport"], values={"tone": "gentle"}, actor=alice
    )
    panel = origins(packages["rapport"], harbor, alice_session)
    assert panel["tone"] == ("gentle", "session")
    assert panel["intensity"] == (7, "world")
    assert panel["decay"] == (0.1, "default")
    # A session implies its world: runtimes may pass the session alone.
    assert (
        user_settings_for(package_id="rapport", world=None, session=alice_session)["tone"]
        == "gentle"
    )
    assert (
        user_settings_for(package_id="rapport", world=None, session=alice_session)["intensity"] == 7
    )


def test_resetting_a_session_value_falls_back_to_the_world_preset(
    packages, harbor, alice_session, alice
) -> None:
    rapport = packages["rapport"]
    session_plugin_settings_update(
        session=alice_session,
        package=rapport,
        values={"tone": "gentle", "decay": 0.5},
        actor=alice,
    )
    [tone] = [
        f
        for f in settings_resolve(package=rapport, world=harbor, session=alice_session)
        if f.field.key == "tone"
    ]
    assert tone.set_here and (tone.below_value, tone.below_origin) == ("harsh", "world")

    session_plugin_settings_update(
        session=alice_session, package=rapport, values={"tone": None}, actor=alice
    )
    panel = origins(rapport, harbor, alice_session)
    assert panel["tone"] == ("harsh", "world")
    assert panel["decay"] == (0.5, "session")  # keys not named keep their values


def test_resetting_a_world_preset_falls_back_to_the_default(packages, harbor, alice) -> None:
    rapport = packages["rapport"]
    world_plugin_settings_update(
        world=harbor, package=rapport, values={"intensity": None}, actor=alice
    )
    harbor.refresh_from_db()
    assert origins(rapport, harbor, None)["intensity"] == (5, "default")
    assert harbor.plugin_settings["rapport"] == {"tone": "harsh"}


def test_resetting_the_last_session_value_removes_the_row(packages, alice_session, alice) -> None:
    dice = packages["dice"]
    assert session_plugin_settings_update(
        session=alice_session, package=dice, values={"sides": 6}, actor=alice
    )
    assert (
        session_plugin_settings_update(
            session=alice_session, package=dice, values={"sides": None}, actor=alice
        )
        is None
    )
    assert not alice_session.plugin_settings.exists()


def test_an_invalid_update_saves_nothing(packages, harbor, alice_session, alice) -> None:
    with pytest.raises(SettingsInvalid) as caught:
        session_plugin_settings_update(
            session=alice_session,
            package=packages["rapport"],
            values={"tone": "gentle", "intensity": 99},
            actor=alice,
        )
    assert [(e.key, e.code) for e in caught.value.errors] == [("intensity", "above-max")]
    assert not alice_session.plugin_settings.exists()


def test_a_stored_value_that_no_longer_fits_is_ignored(
    packages, harbor, alice_session, alice
) -> None:
    """A package update narrowed its range: the old preset must not reach the runtime."""
    rapport: Package = packages["rapport"]
    manifest = rapport.manifest
    for entry in manifest["contributes"]["settings"]:
        if entry["key"] == "intensity":
            entry["max"] = 6
    rapport.manifest = manifest
    rapport.save()
    [intensity] = [
        f
        for f in settings_resolve(package=rapport, world=harbor, session=None)
        if f.field.key == "intensity"
    ]
    assert (intensity.value, intensity.origin) == (5, "default")
    assert intensity.ignored and "world preset must be at most 6" in intensity.ignored[0].message


def test_keys_no_longer_in_the_manifest_do_not_reach_runtimes(packages, harbor) -> None:
    harbor.plugin_settings = {"dice": {"sides": 12, "retired-key": "x"}}
    harbor.save()
    assert user_settings_for(package_id="dice", world=harbor, session=None) == {
        "sides": 12,
        "advantage": False,
    }


def test_unknown_or_unloaded_packages_have_no_settings(packages, harbor) -> None:
    assert user_settings_for(package_id="nope", world=harbor, session=None) == {}
    Package.objects.filter(package_id="dice").update(state=Package.State.ERROR)
    assert user_settings_for(package_id="dice", world=harbor, session=None) == {}


def test_a_setting_without_default_is_left_out_until_someone_sets_it(
    packages, harbor, alice
) -> None:
    from worlds_testdata import make_package

    pkg = make_package("scene-setter", [{"key": "mood", "type": "text", "label": "Mood"}])
    assert user_settings_for(package_id="scene-setter", world=harbor, session=None) == {}
    world_plugin_settings_update(world=harbor, package=pkg, values={"mood": "grim"}, actor=alice)
    assert user_settings_for(package_id="scene-setter", world=harbor, session=None) == {
        "mood": "grim"
    }


def test_a_session_of_another_world_is_refused(packages, harbor, alice_session) -> None:
    from worlds.models import World

    other = World.objects.create(world_id="elsewhere", name="Elsewhere")
    with pytest.raises(ValueError):
        user_settings_for(package_id="dice", world=other, session=alice_session)


def test_null_removes_a_stale_key_but_other_unknown_keys_are_refused(
    packages, harbor, alice
) -> None:
    harbor.plugin_settings = {"dice": {"sides": 12, "retired-key": "x"}}
    harbor.save()
    with pytest.raises(SettingsInvalid) as caught:
        world_plugin_settings_update(
            world=harbor, package=packages["dice"], values={"never-was": None}, actor=alice
        )
    assert [(e.key, e.code) for e in caught.value.errors] == [("never-was", "unknown-key")]
    world_plugin_settings_update(
        world=harbor, package=packages["dice"], values={"retired-key": None}, actor=alice
    )
    harbor.refresh_from_db()
    assert harbor.plugin_settings["dice"] == {"sides": 12}
