"""Staff assign owners to synced worlds (which have none) with `manage.py world_owner`."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from worlds.models import World
from worlds.selectors import world_can_edit


def test_a_synced_world_has_no_owner_until_one_is_assigned(harbor, alice, charlie, bob) -> None:
    World.objects.filter(pk=harbor.pk).update(owner=None)
    harbor.refresh_from_db()
    assert not world_can_edit(world=harbor, user=alice)
    assert world_can_edit(world=harbor, user=bob)

    call_command("world_owner", "harbor", "charlie")
    harbor.refresh_from_db()
    assert harbor.owner == charlie
    assert world_can_edit(world=harbor, user=charlie) and not world_can_edit(
        world=harbor, user=alice
    )

    call_command("world_owner", "harbor", "--clear")
    harbor.refresh_from_db()
    assert harbor.owner is None


def test_unknown_world_or_user_is_a_clear_error(harbor) -> None:
    with pytest.raises(CommandError, match="no world 'nope'"):
        call_command("world_owner", "nope", "alice")
    with pytest.raises(CommandError, match="no user 'zed'"):
        call_command("world_owner", "harbor", "zed")


def test_a_resync_keeps_the_owner(harbor, alice, worlds_root) -> None:
    from worlds.services import world_sync

    (worlds_root / "harbor" / "world.yaml").write_text(
        (worlds_root / "harbor" / "world.yaml").read_text().replace("Harbor", "Harbour")
    )
    world_sync(dirs=[worlds_root])
    harbor.refresh_from_db()
    assert harbor.name == "Harbour" and harbor.owner == alice
