"""Issue #29: a hung RPC action held the session's lease for its whole limit (30 s plus grace),
so every other action of the session answered 409 meanwhile. sessions.services.session_rpc took
the lease (sessions/locks.py) around the plugin call itself. Now the call runs without it, and
each immediate write (ctx.store.setPluginData) takes the lease for itself, so a write still never
lands inside a running turn.

While the action is in flight (inside one of its own ctx callbacks, in the calling thread), the
test runs another action of the same session and takes the lease itself.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from catalogue.manifest.loader import load_package
from catalogue.services import package_content_hash, package_index
from sessions.callbacks import SessionCallbacks
from sessions.locks import session_lock_acquire, session_lock_release
from sessions.models import PluginData
from sessions.services import SessionProblem, session_create, session_rpc
from worlds.models import World

pytestmark = pytest.mark.django_db

ENTRY = """
export default function register(covel) {
  covel.registerRpc("slow", async (payload, ctx) => {
    const seen = await ctx.store.getSession();
    return { seen };
  });
  covel.registerRpc("quick", async () => "quick");
  covel.registerRpc("write", async (payload, ctx) => {
    try {
      await ctx.store.setPluginData({ namespace: "notes", key: "k", value: { v: 1 } });
      return "written";
    } catch (error) {
      return error.code;
    }
  });
}
"""


@pytest.fixture
def session(tmp_path: Path, settings: Any, alice: Any) -> Any:
    settings.COVEL_BUNDLED_PLUGINS_DIR = tmp_path / "bundled"
    folder = tmp_path / "bundled" / "ledger"
    (folder / "server").mkdir(parents=True)
    frontmatter = {
        "id": "ledger",
        "version": "1.0.0",
        "description": "Keeps notes.",
        "contributes": {"actions": ["slow", "quick", "write"]},
    }
    (folder / "PLUGIN.md").write_text(f"---\n{json.dumps(frontmatter)}\n---\nLedger.\n")
    (folder / "server" / "index.js").write_text(ENTRY)
    result = load_package(folder, host_version="0.1.0")
    assert result.ok, [str(e) for e in result.errors]
    package_index(
        result=result,
        source="bundled",
        content_hash=package_content_hash(path=folder),
        host_version="0.1.0",
    )
    world = World.objects.create(
        world_id="office",
        name="Office",
        description="An office.",
        plugins=["ledger"],
        owner=alice,
        characters=[{"id": "ana", "name": "Ana", "type": "player"}],
    )
    return session_create(owner=alice, world=world, character_id="ana")


def test_other_actions_run_while_an_action_is_in_flight(session, monkeypatch):
    during: dict[str, Any] = {}
    original = SessionCallbacks.store_get_session

    def meanwhile(self: SessionCallbacks, **kwargs: Any) -> Any:
        # The "slow" action is in flight here: another action of the session, and the lease.
        try:
            during["quick"] = session_rpc(session=session, plugin="ledger", action="quick")
        except SessionProblem as exc:
            during["quick"] = exc.code
        try:
            token = session_lock_acquire(session_id=session.pk, wait=0)
            session_lock_release(session_id=session.pk, token=token)
            during["lease"] = "free"
        except SessionProblem as exc:
            during["lease"] = exc.code
        return original(self, **kwargs)

    monkeypatch.setattr(SessionCallbacks, "store_get_session", meanwhile)
    out = session_rpc(session=session, plugin="ledger", action="slow")
    assert out["value"]["seen"] is not None
    assert isinstance(during["quick"], dict), during  # not a 409 (session_busy)
    assert during["quick"]["value"] == "quick"
    assert during["lease"] == "free"


def test_an_immediate_write_waits_for_the_lease_and_is_refused_while_a_turn_holds_it(session):
    token = session_lock_acquire(session_id=session.pk)
    try:
        out = session_rpc(session=session, plugin="ledger", action="write")
        assert out["value"] == "session_busy"
        assert not PluginData.objects.filter(session=session, plugin_id="ledger").exists()
    finally:
        session_lock_release(session_id=session.pk, token=token)
    assert session_rpc(session=session, plugin="ledger", action="write")["value"] == "written"
    row = PluginData.objects.get(session=session, plugin_id="ledger", namespace="notes", key="k")
    assert row.value == {"v": 1}
