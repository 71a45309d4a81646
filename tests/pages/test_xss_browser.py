"""The XSS page set in a real Chromium: hostile text from a package, a world, a session, a turn,
plugin data (on load and as a live plugin-data.changed update), notices and the staff queue
shows as text on every page, never as markup, and no script of it runs.

The check does not lean on the Content-Security-Policy (which would also stop inline handlers):
it looks for the elements the payload would make (an <img src=x>, an <svg>, a <b id=xss-...>)
in the DOM, and for the payload's own text on the page.

Personas: Alice plays her session of her world; Bob is staff."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAYLOAD = (
    '<img src=x onerror="document.body.dataset.xss=1"><svg onload="alert(1)"></svg>'
    "<script>alert(2)</script><b id=xss-bold>bold</b>"
)
HOSTILE_README = f"# Lantern\n\n{PAYLOAD}\n\n[evil](javascript:alert(3))\n"


def injected(page) -> dict[str, int]:
    """How many elements the payload managed to create, and whether a handler ran."""
    return page.evaluate(
        """() => ({
          img: document.querySelectorAll('img[src="x"]').length,
          svg: [...document.querySelectorAll('svg')].filter(s => s.getAttribute('onload')).length,
          bold: document.querySelectorAll('#xss-bold').length,
          script: [...document.scripts].filter(s => s.textContent.includes('alert(2)')).length,
          javascriptLinks: document.querySelectorAll('a[href^="javascript:"]').length,
          ran: document.body.dataset.xss ? 1 : 0,
        })"""
    )


CLEAN = {"img": 0, "svg": 0, "bold": 0, "script": 0, "javascriptLinks": 0, "ran": 0}


@pytest.fixture
def hostile(tmp_path, settings, alice, bob):
    """A community package, a world, a session with a turn, plugin data and a notice, all
    carrying the payload."""
    from catalogue.services import packages_sync
    from eventlog.services import event_append
    from sessions.models import Interaction, PluginData, Turn
    from sessions.services import session_create
    from worlds.models import World

    community = tmp_path / "community"
    folder = community / "lantern"
    (folder / "server").mkdir(parents=True)
    (folder / "PLUGIN.md").write_text(
        "---\nid: lantern\nversion: 1.0.0\n"
        f"displayName: {json.dumps('Lantern ' + PAYLOAD)}\n"
        f"description: {json.dumps('Lights the way. ' + PAYLOAD)}\n---\n{PAYLOAD}\n"
    )
    (folder / "server" / "index.js").write_text("export default function register() {}\n")
    (folder / "README.md").write_text(HOSTILE_README)
    settings.COVEL_BUNDLED_PLUGINS_DIR = tmp_path / "bundled"
    settings.COVEL_USER_PLUGINS_DIR = tmp_path / "user"
    settings.COVEL_COMMUNITY_PLUGIN_DIRS = [community]
    packages_sync()

    world = World.objects.create(
        world_id="harbor",
        name=f"Harbor {PAYLOAD}",
        description=f"A port. {PAYLOAD}",
        plugins=[],
        owner=alice,
    )
    session = session_create(owner=alice, world=world, title=f"Night {PAYLOAD}")
    Turn.objects.create(
        session=session,
        number=1,
        status=Turn.Status.COMMITTED,
        player_message=f"I say {PAYLOAD}",
        narrative_text=f"The tide answers {PAYLOAD}",
    )
    PluginData.objects.create(
        session=session,
        plugin_id="lantern",
        namespace=f"ns{PAYLOAD}"[:200],
        key=f"key{PAYLOAD}",
        value={"note": PAYLOAD, "list": [PAYLOAD]},
    )
    PluginData.objects.create(
        session=session, plugin_id="lantern", namespace="plain", key="text", value=PAYLOAD
    )
    Interaction.objects.create(
        session=session,
        plugin_id="lantern",
        runtime_id="lantern/ask",
        interaction_id="ask-1",
        form={
            "title": f"Ask {PAYLOAD}",
            "description": PAYLOAD,
            "fields": [{"key": "answer", "type": "text", "label": f"Say {PAYLOAD}"}],
        },
    )
    event_append(
        session_id=session.pk,
        type="notification.created",
        payload={
            "pluginId": "lantern",
            "title": f"Hear {PAYLOAD}",
            "body": PAYLOAD,
            "level": "info",
        },
    )
    return {"session": session, "world": world}


def sign_in(page, live_server, username: str) -> None:
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", f"{username}-password")
    with page.expect_navigation():
        page.click("form.card button[type=submit]")


def test_hostile_text_stays_text_on_every_page(page, live_server, hostile):
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    session = hostile["session"]
    sign_in(page, live_server, "alice")
    pages = [
        "/",
        "/packages/lantern/",
        "/worlds/",
        "/worlds/harbor/",
        "/sessions/",
        f"/sessions/{session.pk}/",
    ]
    for path in pages:
        page.goto(f"{live_server.url}{path}")
        page.wait_for_load_state("load")
        assert injected(page) == CLEAN, path
        assert "<b id=xss-bold>" in page.inner_text("body"), path

    # The plugin data panel: on load, then a live update over the events stream.
    data = page.locator("#plugin-data")
    expect(data).to_contain_text('<img src=x onerror="document.body.dataset.xss=1">')
    from eventlog.services import event_append
    from sessions.models import PluginData

    expect(page.locator("#play[data-connected=true]")).to_have_count(1)
    PluginData.objects.create(
        session=session, plugin_id="lantern", namespace="plain", key="zlive", value=[PAYLOAD]
    )
    event_append(
        session_id=session.pk,
        type="plugin-data.changed",
        payload={
            "changes": [
                {"plugin": "lantern", "namespace": "plain", "key": "zlive", "deleted": False}
            ]
        },
    )
    live = page.locator('#plugin-data tr[data-key="lantern/plain/zlive"]')
    expect(live).to_contain_text("<svg onload")
    assert injected(page) == CLEAN
    assert dialogs == []


def test_hostile_text_stays_text_for_staff(page, live_server, hostile):
    from approvals.models import ApprovalRequest

    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    request = ApprovalRequest.objects.get(package_key="lantern")
    sign_in(page, live_server, "bob")
    for path in ("/approvals/", f"/approvals/{request.pk}/", "/packages/lantern/", "/jobs/"):
        page.goto(f"{live_server.url}{path}")
        page.wait_for_load_state("load")
        assert injected(page) == CLEAN, path
    assert dialogs == []
