"""Assign (or clear) the owner of a world: bundled worlds have none until staff picks one."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from worlds.selectors import world_get
from worlds.services import world_set_owner


class Command(BaseCommand):
    help = "Set the owner of a world: world_owner <world-id> <username>, or --clear."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("world_id")
        parser.add_argument("username", nargs="?")
        parser.add_argument("--clear", action="store_true", help="leave the world without an owner")

    def handle(self, *args: Any, **options: Any) -> None:
        world = world_get(world_id=options["world_id"])
        if world is None:
            raise CommandError(f"no world {options['world_id']!r} (run sync_worlds first?)")
        if options["clear"]:
            world_set_owner(world=world, owner=None)
            self.stdout.write(f"{world.world_id}: no owner")
            return
        if not options["username"]:
            raise CommandError("give a username, or --clear")
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"no user {options['username']!r}")
        world_set_owner(world=world, owner=user)
        self.stdout.write(f"{world.world_id}: owned by {user.get_username()}")
