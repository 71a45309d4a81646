"""A fresh install (no model configured) plays its bundled worlds through the new-session form
without a failure or an amber notice: a package whose agent needs an unconfigured model slot is
greyed out in the form with the reason and not ticked, even when the world lists it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sessions"))
from test_play_support import play  # noqa: E402

pytestmark = pytest.mark.django_db


def pick(html: str, package_id: str) -> str:
    match = re.search(rf'<input type="checkbox" name="plugins" value="{package_id}"[^>]*>', html)
    assert match, package_id
    return match.group(0)


def ticked(html: str) -> list[str]:
    return re.findall(r'name="plugins" value="([^"]+)" checked', html)


@pytest.mark.parametrize("world_id", ["harbor-nights", "clockwork-academy"])
def test_a_bundled_world_plays_through_the_form_without_a_failure(
    client, fresh_install, alice, world_id
):
    from sessions.models import Session

    client.force_login(alice)
    form = client.get("/sessions/new/", {"world": world_id}).content.decode()
    # The world's model packages (rapport, the notebook) are greyed out with the reason.
    lists_model_package = False
    for package_id in ("rapport", "notebook"):
        if f'value="{package_id}"' in form:
            box = pick(form, package_id)
            assert "disabled" in box and "checked" not in box
            assert f'id="why-{package_id}"' in form
            lists_model_package = True
    assert lists_model_package
    assert "needs a model: staff have not configured the slot utility" in form
    assert "storyteller" in ticked(form) and "dice" in ticked(form)

    answer = client.post(
        "/sessions/new/", {"world": world_id, "title": "Fresh", "plugins": ticked(form)}
    )
    assert answer.status_code == 302
    session = Session.objects.get(title="Fresh")
    for message in ("I look around.", "I ask about the storm."):
        result = play(session, message)
        assert result["status"] == "committed"
        failed = [
            (r["runtime"], r["code"]) for r in result["runtimes"] if r["status"] != "succeeded"
        ]
        assert failed == []
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert "status-failed" not in page and "status-needs-model" not in page
    assert "level-warning" not in page and "level-error" not in page


def test_a_configured_slot_makes_the_model_package_available(client, fresh_install, alice):
    from agents.models import ModelSlot

    ModelSlot.objects.create(
        name="utility", base_url="http://127.0.0.1:9/v1", model="stand-in", enabled=True
    )
    client.force_login(alice)
    form = client.get("/sessions/new/", {"world": "harbor-nights"}).content.decode()
    box = pick(form, "rapport")
    assert "disabled" not in box and "checked" in box
    assert 'id="why-rapport"' not in form
    assert "the slot story" in form  # the story agent still waits for its own slot
