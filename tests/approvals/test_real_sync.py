"""The whole way: files in a user plugin folder -> sync_packages -> approval request -> decision."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command

from approvals.models import JournalEntry
from approvals.selectors import approval_current, package_is_usable
from approvals.services import approval_decide

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
RUNTIME_MD = """---
function: {{}}
schedule: {{ stage: post-turn }}
permissions:
  http:
    - origin: https://other.example
      methods: [{methods}]
---
"""


def write(root: Path, *, version: str, methods: str) -> None:
    folder = root / "weather"
    (folder / "server").mkdir(parents=True, exist_ok=True)
    (folder / "runtimes" / "fetch").mkdir(parents=True, exist_ok=True)
    (folder / "PLUGIN.md").write_text(PLUGIN_MD.format(version=version))
    (folder / "server" / "index.js").write_text("export default function register(covel) {}\n")
    (folder / "runtimes" / "fetch" / "RUNTIME.md").write_text(RUNTIME_MD.format(methods=methods))
    (folder / "runtimes" / "fetch" / "handler.js").write_text("export default async () => ({});\n")


def test_sync_packages_requests_approval_and_carries_it_over(tmp_path, settings, bob):
    settings.COVEL_BUNDLED_PLUGINS_DIR = tmp_path / "bundled"
    settings.COVEL_USER_PLUGINS_DIR = tmp_path / "user"
    settings.COVEL_COMMUNITY_PLUGIN_DIRS = []
    write(tmp_path / "user", version="1.0.0", methods="POST")
    call_command("sync_packages", "--no-progress", stdout=io.StringIO())

    request = approval_current(package_key="weather")
    assert request is not None and request.state == "pending"
    assert [item["path"] for item in request.permissions["code"]] == [
        "runtimes/fetch/handler.js",
        "server/index.js",
    ]
    assert request.permissions["http"] == [
        {"runtime": None, "origin": "https://api.weather.example", "methods": ["GET"]},
        {"runtime": "weather/fetch", "origin": "https://other.example", "methods": ["POST"]},
    ]
    assert not package_is_usable(package_id="weather")
    approval_decide(request_id=request.pk, decision="allow", actor=bob)
    assert package_is_usable(package_id="weather")

    write(tmp_path / "user", version="1.0.1", methods="POST")  # same permissions, new version
    call_command("sync_packages", "--no-progress", stdout=io.StringIO())
    carried = approval_current(package_key="weather")
    assert carried.version == "1.0.1" and carried.state == "approved"
    assert JournalEntry.objects.filter(request=carried).get().action == "carried over"
    assert package_is_usable(package_id="weather")

    write(tmp_path / "user", version="1.1.0", methods="POST, DELETE")  # a new method widens
    call_command("sync_packages", "--no-progress", stdout=io.StringIO())
    widened = approval_current(package_key="weather")
    assert widened.state == "pending" and widened.baseline == carried
    assert not package_is_usable(package_id="weather")


def test_approvals_sync_command_covers_packages_synced_before(packages, bob):
    packages.write("old-one", files={"server/index.js": "x"})  # indexed, never seen by approvals
    out = io.StringIO()
    call_command("approvals_sync", stdout=out)
    assert "old-one@1.0.0: NOT usable" in out.getvalue()
    assert approval_current(package_key="old-one").state == "pending"
