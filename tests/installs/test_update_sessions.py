"""Issue #24: staging never breaks running sessions. A package installed from a git repository
served over loopback HTTP, approved and used by a player's session (RPC actions in the real Node
host, through the session API); then an update is found, previewed and installed by staff. The
new version waits for approval, and meanwhile the session keeps the version it started with:
its code (the approved copy) and its manifest (the kept snapshot: an action the update adds is
unknown). The first call after staff approve the update runs the new version."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from install_archives import plugin_files

from approvals.selectors import approval_current, approval_in_force
from approvals.services import approval_decide
from catalogue.models import Package

pytestmark = pytest.mark.django_db

ENTRY = """export default function register(covel) {{
  covel.registerRpc("which", async () => "{value}");{more}
}}
"""
EXTRA = '\n  covel.registerRpc("extra", async () => "only in 1.1.0");'


def lantern(version: str, value: str, *, actions: str = "[which]", more: str = "") -> dict:
    files = plugin_files("lantern", version=version, extra=f"contributes:\n  actions: {actions}\n")
    files["server/index.js"] = ENTRY.format(value=value, more=more).encode()
    return {f"plugins/lantern/{k}": v for k, v in files.items()}


def a_job(session, *, version: str):  # noqa: ANN001, ANN201
    from django.utils import timezone

    from jobs.models import RuntimeJob

    now = timezone.now()
    return RuntimeJob.objects.create(
        session=session,
        plugin_id="lantern",
        runtime_id="lantern",
        package_version=version,
        created_at=now,
        updated_at=now,
    )


def job_session_check(job, *, lock_session: bool):  # noqa: ANN001, ANN201
    from sessions.job_checks import job_session_check as check

    return check(job, lock_session=lock_session)


def post(client: Client, url: str, body: dict):  # noqa: ANN201
    return client.post(url, json.dumps(body), content_type="application/json")


def call(player: Client, session, action: str):  # noqa: ANN001, ANN201
    return post(player, f"/api/sessions/{session.pk}/rpc/lantern/{action}", {})


@pytest.fixture
def installed(hub_dirs, git_server, client, bob):  # noqa: ANN001, ANN201
    git_server.repo("pkgs")
    git_server.commit("pkgs", lantern("1.0.0", "v1.0.0"))
    client.force_login(bob)
    remote = f"{git_server.url}/pkgs.git/tree/main/plugins/lantern"
    item = post(client, "/api/install/plugin/github/preview", {"url": remote}).json()["items"][0]
    done = post(client, "/api/install/plugin/github", {"token": item["token"], "acceptRisk": True})
    assert done.status_code == 201, done.content
    request = approval_current(package_key="lantern")
    assert request.state == "pending"
    approval_decide(request_id=request.pk, decision="allow", actor=bob)
    return git_server, client


def test_a_running_session_keeps_its_version_until_staff_approve_the_update(
    installed, alice, bob, monkeypatch
):
    from pluginhost import services as host_services
    from sessions.services import session_create
    from worlds.models import World

    monkeypatch.setattr(host_services, "_KEY_TTL", 0.0)  # the host looks at every call
    server, staff = installed
    world = World.objects.create(
        world_id="quay", name="Quay", description="A quay.", plugins=["lantern"], owner=alice
    )
    session = session_create(owner=alice, world=world)
    player = Client()
    player.force_login(alice)
    started = call(player, session, "which")
    assert started.status_code == 200, started.content
    assert started.json()["value"] == "v1.0.0"
    first = approval_current(package_key="lantern")

    server.commit("pkgs", lantern("1.1.0", "v1.1.0", actions="[which, extra]", more=EXTRA))
    found = post(staff, "/api/install/plugin/github/update/preview", {"id": "lantern"}).json()
    assert found["status"] == "available", found
    done = post(
        staff,
        "/api/install/plugin/github/update",
        {"token": found["preview"]["token"], "acceptRisk": True},
    )
    assert done.status_code == 201, done.content
    # The folder holds 1.1.0 now, and it waits for staff ...
    assert Package.objects.get(package_id="lantern").version == "1.1.0"
    update = approval_current(package_key="lantern")
    assert update.version == "1.1.0" and update.state == "pending"
    assert approval_in_force(package_key="lantern").pk == first.pk
    # Staff see which version sessions keep, and may stop it too (revoke).
    for url in (f"/approvals/{update.pk}/", "/approvals/"):
        page = staff.get(url).content.decode()
        assert f"Sessions keep running version 1.0.0 (request #{first.pk})" in page, url
        assert 'value="revoke"' in page, url

    # ... while the session goes on with 1.0.0: its code and its manifest.
    for _ in range(2):
        kept = call(player, session, "which")
        assert kept.status_code == 200, kept.content
        assert kept.json()["value"] == "v1.0.0"
    unknown = call(player, session, "extra")
    assert unknown.status_code == 404 and unknown.json()["code"] == "unknown_action"
    # A new session may add it too, at the version that runs.
    page = player.get("/sessions/new/?world=quay").content.decode()
    assert "<code>lantern@1.0.0</code>" in page
    assert 'value="lantern" checked' in page, page[page.index("lantern@") - 400 :][:600]
    # A job the session started on 1.0.0 goes on too (it runs the kept version) ...
    job = a_job(session, version="1.0.0")
    assert job_session_check(job, lock_session=False) == (None, False)

    approval_decide(request_id=update.pk, decision="allow", actor=bob)
    # ... and ends once staff approve 1.1.0: the version it started with no longer runs.
    stale, _locked = job_session_check(job, lock_session=False)
    assert stale is not None and stale.reason == "version-changed", stale
    switched = call(player, session, "which")
    assert switched.status_code == 200, switched.content
    assert switched.json()["value"] == "v1.1.0"
    added = call(player, session, "extra")
    assert added.status_code == 200, added.content
    assert added.json()["value"] == "only in 1.1.0"


def test_a_package_never_approved_does_not_run_after_an_update_either(
    hub_dirs, git_server, client, alice, bob
):
    """Nothing to keep: the first version was never approved, so neither version runs."""
    from sessions.services import session_create
    from worlds.models import World

    git_server.repo("pkgs")
    git_server.commit("pkgs", lantern("1.0.0", "v1.0.0"))
    client.force_login(bob)
    remote = f"{git_server.url}/pkgs.git/tree/main/plugins/lantern"
    item = post(client, "/api/install/plugin/github/preview", {"url": remote}).json()["items"][0]
    assert (
        post(
            client, "/api/install/plugin/github", {"token": item["token"], "acceptRisk": True}
        ).status_code
        == 201
    )
    git_server.commit("pkgs", lantern("1.1.0", "v1.1.0"))
    found = post(client, "/api/install/plugin/github/update/preview", {"id": "lantern"}).json()
    post(
        client,
        "/api/install/plugin/github/update",
        {"token": found["preview"]["token"], "acceptRisk": True},
    )
    assert approval_in_force(package_key="lantern") is None
    world = World.objects.create(
        world_id="quay", name="Quay", description="A quay.", plugins=["lantern"], owner=alice
    )
    session = session_create(owner=alice, world=world)
    player = Client()
    player.force_login(alice)
    refused = call(player, session, "which")
    assert refused.status_code == 404 and refused.json()["code"] == "plugin_not_active"
