"""Approved code is pinned, through the real path: a user plugin folder, sync_packages, a staff
approval, a session's RPC action run in the real Node host, then an edit on disk."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from django.core.management import call_command

from approvals.selectors import approval_current, package_usability
from approvals.services import approval_decide
from approvals.store import code_digest, store_root

pytestmark = pytest.mark.django_db

PLUGIN_MD = """---
id: pinned
version: 1.0.0
description: Says which code runs.
contributes:
  actions: [which]
---
Pinned.
"""
ENTRY = """import { value } from "../tests/value.js";
export default function register(covel) {
  covel.registerRpc("which", async () => ({ ok: true, data: { value } }));
}
"""


@pytest.fixture
def hub(tmp_path, settings):
    settings.COVEL_BUNDLED_PLUGINS_DIR = tmp_path / "bundled"
    settings.COVEL_USER_PLUGINS_DIR = tmp_path / "user"
    settings.COVEL_COMMUNITY_PLUGIN_DIRS = []
    settings.VAR_DIR = tmp_path / "var"
    settings.VAR_DIR.mkdir()
    folder = tmp_path / "user" / "pinned"
    (folder / "server").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "PLUGIN.md").write_text(PLUGIN_MD)
    (folder / "server" / "index.js").write_text(ENTRY)
    # Under tests/ and imported by the entry: part of what staff approve, like any other file.
    (folder / "tests" / "value.js").write_text('export const value = "v1";\n')
    return folder


def sync() -> None:
    call_command("sync_packages", "--no-progress", stdout=io.StringIO())


def rpc(session):
    from sessions.services import session_rpc

    return session_rpc(session=session, plugin="pinned", action="which")["value"]


def a_session(alice):
    from sessions.services import session_create
    from worlds.models import World

    world = World.objects.create(
        world_id="harbor", name="Harbor", description="A port.", plugins=["pinned"], owner=alice
    )
    return session_create(owner=alice, world=world)


def test_an_edited_approved_file_never_runs_and_the_approved_one_runs_until_review(
    hub: Path, alice, bob, monkeypatch
):
    from pluginhost import services as host_services
    from pluginhost.pool import get_host

    sync()
    first = approval_current(package_key="pinned")
    assert first.state == "pending"
    assert [c["path"] for c in first.permissions["code"]] == ["server/index.js", "tests/value.js"]
    approval_decide(request_id=first.pk, decision="allow", actor=bob)
    session = a_session(alice)

    assert rpc(session) == {"ok": True, "data": {"value": "v1"}}
    copy = store_root() / code_digest(first.permissions["code"])
    assert (copy / "tests" / "value.js").read_text() == 'export const value = "v1";\n'
    assert sorted(p.relative_to(copy).as_posix() for p in copy.rglob("*") if p.is_file()) == [
        "server/index.js",
        "tests/value.js",
    ]

    (hub / "tests" / "value.js").write_text('export const value = "v2, not approved";\n')
    # Even when the host reloads the package before the check has looked again, it loads the
    # approved copy: the edited bytes are not where the host reads.
    monkeypatch.setattr(host_services, "_KEY_TTL", 3600.0)
    get_host().forget("pinned")
    assert rpc(session) == {"ok": True, "data": {"value": "v1"}}

    # Once the check looks (every 2 s; at once here), the edit is a new request in the staff
    # queue, and the call still runs the approved copy.
    monkeypatch.setattr(host_services, "_KEY_TTL", 0.0)
    assert rpc(session) == {"ok": True, "data": {"value": "v1"}}
    second = approval_current(package_key="pinned")
    assert second.pk != first.pk and second.state == "pending"
    assert second.baseline_id == first.pk
    changed = {c["path"]: c["sha256"] for c in second.permissions["code"]}
    approved = {c["path"]: c["sha256"] for c in first.permissions["code"]}
    assert changed["tests/value.js"] != approved["tests/value.js"]
    # The folder's version waits; sessions keep the approved one.
    assert package_usability(package_id="pinned").state == "pending"
    assert rpc(session) == {"ok": True, "data": {"value": "v1"}}

    approval_decide(request_id=second.pk, decision="allow", actor=bob)
    assert rpc(session) == {"ok": True, "data": {"value": "v2, not approved"}}


def test_without_a_kept_version_an_edit_waits_for_staff(hub: Path, alice, bob, monkeypatch):
    """An approval made before versions were kept (or whose snapshot was deleted) and a folder
    that no longer holds it: nothing approved can be rebuilt, so the package waits."""
    from approvals.store import versions_root
    from pluginhost import services as host_services
    from sessions.services import SessionProblem

    monkeypatch.setattr(host_services, "_KEY_TTL", 0.0)
    sync()
    first = approval_current(package_key="pinned")
    approval_decide(request_id=first.pk, decision="allow", actor=bob)
    session = a_session(alice)
    assert rpc(session) == {"ok": True, "data": {"value": "v1"}}
    for folder in (store_root(), versions_root()):
        for path in folder.rglob("*"):
            path.chmod(0o700)
        shutil.rmtree(folder)
    (hub / "tests" / "value.js").write_text('export const value = "v2, not approved";\n')
    with pytest.raises(SessionProblem) as refused:
        rpc(session)
    assert refused.value.code == "plugin_code_changed"
    assert "tests/value.js" in str(refused.value) and f"#{first.pk}" in str(refused.value)
    with pytest.raises(SessionProblem) as inactive:
        rpc(session)
    assert inactive.value.code == "plugin_not_active"


def test_the_load_check_refuses_code_nobody_approved(hub: Path):
    from catalogue.manifest.loader import load_package
    from pluginhost.errors import PluginLoadError
    from pluginhost.services import code_root

    sync()
    manifest = load_package(hub).manifest
    with pytest.raises(PluginLoadError) as refused:
        code_root(manifest)
    assert refused.value.code == "plugin_not_approved"
    assert not (store_root()).exists() or not any(store_root().iterdir())


def test_a_file_changed_between_the_check_and_the_copy_is_not_copied(hub: Path, bob):
    from approvals.store import CodeCopyFailed, approved_copy

    sync()
    request = approval_current(package_key="pinned")
    approval_decide(request_id=request.pk, decision="allow", actor=bob)
    # Approving imports the code once (the code check), which makes the copy: start from a
    # machine that has none yet, as a new worker does.
    shutil.rmtree(store_root())
    store_root().mkdir(parents=True)
    (hub / "server" / "index.js").write_text("export default () => { globalThis.evil = 1; };\n")
    with pytest.raises(CodeCopyFailed, match="server/index.js changed since it was approved"):
        approved_copy(source_dir=hub, code=request.permissions["code"])
    # Nothing half-written is left where the host would look.
    assert not (store_root() / code_digest(request.permissions["code"])).exists()
    assert [p.name for p in store_root().iterdir()] == []
