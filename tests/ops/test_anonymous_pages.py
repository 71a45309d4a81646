"""What the anonymous visitor is shown: a Content-Security-Policy without inline scripts, no
owner's username, no absolute server path. Alice owns a world; Bob is staff."""

from __future__ import annotations

from django.conf import settings
from django.test import Client

from sources.services import source_plugins_sync
from worlds.models import World


def test_every_page_sends_a_csp_without_unsafe_inline(db):
    answer = Client().get("/")
    policy = answer["Content-Security-Policy"]
    assert "script-src 'nonce-" in policy and "'self'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    # A fresh nonce per response.
    assert Client().get("/")["Content-Security-Policy"] != policy


def test_the_anonymous_visitor_does_not_see_the_worlds_owner(db, alice):
    World.objects.create(world_id="harbor", name="Harbor", description="", owner=alice)
    anonymous = Client().get("/worlds/harbor/")
    assert anonymous.status_code == 200
    assert "alice" not in anonymous.content.decode()
    signed_in = Client()
    signed_in.force_login(alice)
    assert "alice" in signed_in.get("/worlds/harbor/").content.decode()


def test_the_anonymous_visitor_sees_no_server_folder_of_a_source_plugin(db, bob):
    source_plugins_sync()
    anonymous = Client().get("/sources/localfeed/")
    assert anonymous.status_code == 200
    assert str(settings.BASE_DIR) not in anonymous.content.decode()
    staff = Client()
    staff.force_login(bob)
    assert str(settings.BASE_DIR) in staff.get("/sources/localfeed/").content.decode()
