"""A request whose package is gone is closed with a note: the staff queue holds only what can
still be decided. The whole way: a user plugin folder, sync_packages, the queue page and API.

Personas: Bob is staff."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from approvals.models import ApprovalRequest, JournalEntry
from approvals.selectors import approval_current
from approvals.services import approval_requests_withdraw_gone

pytestmark = pytest.mark.django_db

PLUGIN_MD = """---
version: {version}
description: Forecasts.
permissions:
  http:
    - origin: https://api.weather.example
---
Say the weather.
"""


def write(root: Path, text: str) -> Path:
    folder = root / "weather"
    (folder / "server").mkdir(parents=True, exist_ok=True)
    (folder / "PLUGIN.md").write_text(text)
    (folder / "server" / "index.js").write_text("export default function register(covel) {}\n")
    return folder


def sync() -> None:
    call_command("sync_packages", "--no-progress", stdout=io.StringIO())


@pytest.fixture
def folders(tmp_path, settings):
    settings.COVEL_BUNDLED_PLUGINS_DIR = tmp_path / "bundled"
    settings.COVEL_USER_PLUGINS_DIR = tmp_path / "user"
    settings.COVEL_COMMUNITY_PLUGIN_DIRS = []
    return tmp_path / "user"


def test_a_package_that_failed_validation_then_disappeared_leaves_no_pending_request(folders, bob):
    folder = write(folders, PLUGIN_MD.format(version="1.0.0"))
    sync()
    request = approval_current(package_key="weather")
    assert request is not None and request.state == "pending"

    # The author breaks it (the row stays, in error), then removes the folder.
    (folder / "PLUGIN.md").write_text("---\nversion: [broken\n---\n")
    sync()
    # The broken version asks again (its code files are still there): a new pending request.
    request = approval_current(package_key="weather")
    assert request.state == "pending"
    shutil.rmtree(folder)
    sync()

    request.refresh_from_db()
    assert request.state == "withdrawn"
    assert "package weather is no longer installed" in request.note
    entry = JournalEntry.objects.filter(request=request).order_by("-id").first()
    assert (entry.action, entry.actor) == ("withdrawn", None)
    assert entry.note == request.note

    client = Client()
    client.force_login(bob)
    assert client.get("/api/approvals?state=pending").json()["count"] == 0
    queue = client.get("/approvals/").content.decode()
    assert "no longer installed" in queue
    # Deciding on it is refused: there is nothing left to approve.
    answer = client.post(
        f"/api/approvals/{request.pk}/decision",
        data={"decision": "allow"},
        content_type="application/json",
    )
    assert answer.status_code == 409
    assert answer.json()["code"] == "approval_scope_changed"
    assert "is no longer installed" in answer.json()["message"]


def test_a_package_that_comes_back_asks_again(folders):
    folder = write(folders, PLUGIN_MD.format(version="1.0.0"))
    sync()
    first = approval_current(package_key="weather")
    shutil.rmtree(folder)
    sync()
    write(folders, PLUGIN_MD.format(version="1.0.0"))
    sync()
    again = approval_current(package_key="weather")
    assert again.pk != first.pk and again.state == "pending"
    first.refresh_from_db()
    assert first.state == "withdrawn"


def test_the_sweep_leaves_installed_and_decided_requests_alone(folders, bob):
    write(folders, PLUGIN_MD.format(version="1.0.0"))
    sync()
    installed = approval_current(package_key="weather")
    orphan = ApprovalRequest.objects.create(
        package=None,
        package_key="vanished",
        version="0.1.0",
        content_hash="x" * 64,
        permissions={"code": [], "http": [{"origin": "https://a.example"}]},
        permissions_hash="y" * 64,
    )
    decided = ApprovalRequest.objects.create(
        package=None,
        package_key="vanished-too",
        version="0.1.0",
        content_hash="x" * 64,
        permissions={},
        permissions_hash="z" * 64,
        state="denied",
    )
    assert approval_requests_withdraw_gone() == [orphan.pk]
    for row in (installed, orphan, decided):
        row.refresh_from_db()
    assert (installed.state, orphan.state, decided.state) == ("pending", "withdrawn", "denied")
    assert approval_requests_withdraw_gone() == []
