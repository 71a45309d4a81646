"""Issue #29, approved code pinned: a package folder that is a symlink inside the user plugin
folder (an author's checkout linked into ~/.covel/plugins) runs only from its approved copy
under var/approved/, like any other community package. Through the real path: sync_packages,
a staff approval, a session's RPC action in the real Node host, then edits on disk.

After an edit, sessions go on running the approved version (its copy, and the manifest of the
snapshot approvals kept of it) until staff approve the change; a denied change keeps it too, a
revoke stops it.

Also: a change found at call time is recorded for that package alone (no packages_sync() inside
the player's request); a narrower file set carried over without staff writes no copy of its own;
copies no approval refers to are removed.
"""

from __future__ import annotations

import io
import os
import time
from pathlib import Path

import pytest
from django.core.management import call_command

from approvals.selectors import approval_current
from approvals.services import approval_decide
from approvals.store import approved_copies_prune, code_digest, is_community_folder, store_root

pytestmark = pytest.mark.django_db

PLUGIN_MD = """---
id: linked
version: 1.0.0
description: Says which code runs.
contributes:
  actions: [which]
---
Linked.
"""
ENTRY = """import { value } from "./value.js";
export default function register(covel) {
  covel.registerRpc("which", async () => value);
}
"""


@pytest.fixture
def checkout(tmp_path, settings):
    settings.COVEL_BUNDLED_PLUGINS_DIR = tmp_path / "bundled"
    settings.COVEL_USER_PLUGINS_DIR = tmp_path / "user"
    settings.COVEL_COMMUNITY_PLUGIN_DIRS = []
    settings.VAR_DIR = tmp_path / "var"
    settings.VAR_DIR.mkdir()
    # The author's checkout lives outside every plugin folder; the plugin folder holds a link.
    folder = tmp_path / "src" / "linked"
    (folder / "server").mkdir(parents=True)
    (folder / "PLUGIN.md").write_text(PLUGIN_MD)
    (folder / "server" / "index.js").write_text(ENTRY)
    (folder / "server" / "value.js").write_text('export const value = "v1-approved";\n')
    (folder / "server" / "spare.js").write_text("export const spare = 1;\n")
    (tmp_path / "user").mkdir()
    os.symlink(folder, tmp_path / "user" / "linked")
    return folder


def sync() -> None:
    call_command("sync_packages", "--no-progress", stdout=io.StringIO())


def rpc(session):
    from sessions.services import session_rpc

    return session_rpc(session=session, plugin="linked", action="which")["value"]


def a_session(alice):
    from sessions.services import session_create
    from worlds.models import World

    world = World.objects.create(
        world_id="dock", name="Dock", description="A dock.", plugins=["linked"], owner=alice
    )
    return session_create(owner=alice, world=world)


def approve_current(bob):
    request = approval_current(package_key="linked")
    assert request is not None and request.state == "pending"
    approval_decide(request_id=request.pk, decision="allow", actor=bob)
    return request


def copies() -> set[str]:
    return (
        {p.name for p in store_root().iterdir() if p.is_dir()} if store_root().is_dir() else set()
    )


def forbid_full_sync(monkeypatch) -> None:
    """From here on a player's request must not run packages_sync(): it would fail the test."""
    import catalogue.services

    def refuse(**_: object) -> None:
        raise AssertionError("packages_sync() ran inside a player's request")

    monkeypatch.setattr(catalogue.services, "packages_sync", refuse)


def test_a_linked_folder_is_community_code(checkout, settings):
    assert is_community_folder(Path(settings.COVEL_USER_PLUGINS_DIR) / "linked")


def test_a_linked_package_runs_its_approved_copy_until_staff_approve_an_edit(
    checkout, alice, bob, monkeypatch
):
    from pluginhost import services as host_services

    monkeypatch.setattr(host_services, "_KEY_TTL", 0.0)  # the check looks at every call
    sync()
    forbid_full_sync(monkeypatch)
    first = approve_current(bob)
    session = a_session(alice)
    assert rpc(session) == "v1-approved"
    copy = store_root() / code_digest(first.permissions["code"])
    assert copy.is_dir()

    (checkout / "server" / "value.js").write_text('export const value = "v2-UNREVIEWED";\n')
    # The edit never runs: the call that finds it runs the approved copy, and the change is a
    # pending request for this package alone (no full sync in the player's request).
    assert rpc(session) == "v1-approved"
    second = approval_current(package_key="linked")
    assert second.pk != first.pk and second.state == "pending"
    assert second.baseline_id == first.pk
    # The next turns resolve the kept approved version (its snapshot under var/) and go on
    # running it.
    from approvals.store import versions_root
    from sessions.selectors import installed_manifests

    kept = Path(installed_manifests()["linked"].path)
    assert kept.parent.parent == versions_root() and kept.parent.name == first.content_hash
    assert (kept / "server" / "value.js").read_text() == 'export const value = "v1-approved";\n'
    for _ in range(2):
        assert rpc(session) == "v1-approved"
    assert approval_current(package_key="linked").pk == second.pk  # no request per call

    approval_decide(request_id=second.pk, decision="allow", actor=bob)
    assert rpc(session) == "v2-UNREVIEWED"
    # It ran from its own copy, never from the checkout.
    assert (store_root() / code_digest(second.permissions["code"])).is_dir()


def test_a_denied_change_keeps_the_approved_version_and_a_revoke_stops_it(
    checkout, alice, bob, monkeypatch
):
    from approvals.selectors import approval_in_force
    from pluginhost import services as host_services
    from sessions.services import SessionProblem

    monkeypatch.setattr(host_services, "_KEY_TTL", 0.0)
    sync()
    first = approve_current(bob)
    session = a_session(alice)
    assert rpc(session) == "v1-approved"
    (checkout / "server" / "value.js").write_text('export const value = "v2-UNREVIEWED";\n')
    assert rpc(session) == "v1-approved"
    second = approval_current(package_key="linked")
    approval_decide(request_id=second.pk, decision="deny", actor=bob)
    assert approval_in_force(package_key="linked").pk == first.pk
    assert rpc(session) == "v1-approved"

    # Staff can still stop the version sessions keep: a revoke of the current request.
    approval_decide(request_id=second.pk, decision="revoke", actor=bob)
    assert approval_in_force(package_key="linked") is None
    with pytest.raises(SessionProblem) as stopped:
        rpc(session)
    assert stopped.value.code == "plugin_not_active"


def test_a_narrower_set_carried_over_writes_no_new_copy(checkout, alice, bob, monkeypatch):
    from pluginhost import services as host_services

    monkeypatch.setattr(host_services, "_KEY_TTL", 0.0)
    sync()
    forbid_full_sync(monkeypatch)
    approve_current(bob)
    session = a_session(alice)
    assert rpc(session) == "v1-approved"
    before = copies()
    assert len(before) == 1

    (checkout / "server" / "spare.js").unlink()  # a narrower set: carried over without staff
    assert rpc(session) == "v1-approved"
    carried = approval_current(package_key="linked")
    assert carried.state == "approved" and carried.decided_by_id is None
    assert copies() == before, "a subset of the approved files got a copy of its own"


def test_copies_no_approval_refers_to_are_removed(checkout, alice, bob, monkeypatch):
    from pluginhost import services as host_services

    monkeypatch.setattr(host_services, "_KEY_TTL", 0.0)
    sync()
    first = approve_current(bob)
    session = a_session(alice)
    rpc(session)
    kept = code_digest(first.permissions["code"])
    stale = store_root() / ("0" * 64)
    (stale / "server").mkdir(parents=True)
    (stale / "server" / "index.js").write_text("old")
    os.chmod(stale / "server" / "index.js", 0o440)
    abandoned = store_root() / ".incoming-x"
    abandoned.mkdir()
    young = store_root() / ("1" * 64)
    young.mkdir()
    hour_ago = time.time() - 7200
    for folder in (stale, abandoned):
        os.utime(folder, (hour_ago, hour_ago))
    removed = approved_copies_prune()
    assert sorted(removed) == sorted([stale.name, abandoned.name])
    assert copies() == {kept, young.name}
    assert rpc(session) == "v1-approved"


def test_kept_versions_no_approval_refers_to_are_removed(checkout, alice, bob, monkeypatch):
    from approvals.store import versions_root
    from pluginhost import services as host_services

    monkeypatch.setattr(host_services, "_KEY_TTL", 0.0)
    sync()
    first = approve_current(bob)
    session = a_session(alice)
    assert rpc(session) == "v1-approved"
    kept = versions_root() / first.content_hash
    assert (kept / "linked" / "PLUGIN.md").read_text() == PLUGIN_MD
    # Read-only: the hub never changes a kept version.
    assert not os.access(kept / "linked" / "server" / "value.js", os.W_OK) or os.geteuid() == 0
    assert (kept / "linked" / "server" / "value.js").stat().st_mode & 0o222 == 0

    (checkout / "server" / "value.js").write_text('export const value = "v2";\n')
    assert rpc(session) == "v1-approved"
    sync()  # staff's sync: the catalogue row and the request now name the new files' hash
    second = approval_current(package_key="linked")
    assert second.state == "pending" and second.content_hash != first.content_hash
    assert rpc(session) == "v1-approved"
    hour_ago = time.time() - 7200
    os.utime(kept, (hour_ago, hour_ago))
    # While the change waits, the kept version is the newest approval's: it stays.
    assert approved_copies_prune() == []
    os.utime(kept)  # young again: the prune that the approval's new copy runs leaves it
    approval_decide(request_id=second.pk, decision="allow", actor=bob)
    assert rpc(session) == "v2"
    os.utime(kept, (hour_ago, hour_ago))
    removed = approved_copies_prune()
    assert f"approved-versions/{first.content_hash}" in removed
    assert not kept.exists()
    assert (versions_root() / second.content_hash / "linked").is_dir()
    assert rpc(session) == "v2"
