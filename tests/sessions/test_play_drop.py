"""Drop on rejection, end to end: a write refused at commit drops its runtime and its readers,
but never the story, and the other runtimes' writes are saved."""

from __future__ import annotations

import pytest
import test_play_support as support
from test_play_support import (
    HOLD,
    by_runtime,
    hold_release,
    index_folder,
    make_world,
    play,
    run_in_thread,
    wait_for_event,
    write_plugin,
)

from sessions.models import PluginData, Turn

file_database = support.file_database  # a shared fixture

pytestmark = pytest.mark.django_db(transaction=True)

SPEND = """export default async function handler(ctx) {
  await ctx.pluginData.update("wallet", "gold", [{ op: "inc", by: -3, min: 0 }]);
  return { outcome: "success", value: { spent: 3 } };
}
"""
TELL = """export default async function handler(ctx) {
  const gold = await ctx.pluginData.get("wallet", "gold");
  return { outcome: "success", value: { narrativeOutput: `You count ${gold} gold coins.` } };
}
"""
REPORT = """export default async function handler(ctx) {
  const gold = await ctx.pluginData.get("wallet", "gold");
  await ctx.pluginData.set("report", "last", gold);
  return { outcome: "success", value: { gold } };
}
"""


def test_a_write_refused_at_commit_drops_the_writer_and_its_readers_but_not_the_story(
    file_database, alice, tmp_path
):
    from sessions.services import session_create

    runtimes = {
        "spend": ({"schedule": {"stage": "pre-turn"}, "function": {}}, SPEND),
        "tell": (
            {"schedule": {"stage": "narrative"}, "io": {"visibility": "story"}, "function": {}},
            TELL,
        ),
        "report": ({"schedule": {"stage": "post-turn"}, "function": {}}, REPORT),
        "hold": (
            {
                "schedule": {"stage": "post-turn", "after": [{"runtime": "bank/report"}]},
                "function": {"timeoutMs": 20000},
            },
            HOLD,
        ),
    }
    index_folder(write_plugin(tmp_path, "bank", {}, runtimes=runtimes))
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=["bank"]))
    PluginData.objects.create(
        session=session, plugin_id="bank", namespace="wallet", key="gold", value=5
    )

    thread, outcome = run_in_thread(play, session, "spend three")
    try:
        wait_for_event(
            session,
            lambda e: (
                e.type == "runtime.status"
                and e.payload.get("runtime") == "bank/hold"
                and e.payload.get("status") == "running"
            ),
        )
        # While the turn is open, another commit (a background job, say) takes gold down to 1:
        # the staged "inc -3, min 0" no longer fits the latest stored value.
        PluginData.objects.filter(
            session=session, plugin_id="bank", namespace="wallet", key="gold"
        ).update(value=1)
    finally:
        hold_release(session)
        thread.join(30)
    assert "error" not in outcome, outcome
    result = outcome["result"]
    runtimes_out = by_runtime(result)
    assert runtimes_out["bank/spend"]["status"] == "dropped"
    assert runtimes_out["bank/spend"]["code"] == "write-refused"
    assert "bank/wallet/gold" in runtimes_out["bank/spend"]["reason"]
    assert runtimes_out["bank/report"]["status"] == "dropped"
    assert runtimes_out["bank/report"]["code"] == "read-refused-write"
    assert "bank/spend" in runtimes_out["bank/report"]["reason"]
    # The story already reached the player: it stays, though it read the refused write.
    assert runtimes_out["bank/tell"]["status"] == "succeeded"
    assert result["narrativeText"] == "You count 2 gold coins."
    assert runtimes_out["bank/hold"]["status"] == "succeeded"

    stored = {(r.namespace, r.key): r.value for r in PluginData.objects.filter(session=session)}
    assert stored[("wallet", "gold")] == 1
    assert ("report", "last") not in stored
    assert stored[("hold", "done")] is True
    turn = Turn.objects.get(session=session)
    assert turn.status == "committed"
    assert [d["runtime"] for d in turn.commit["dropped"]] == ["bank/spend", "bank/report"]
    assert turn.commit["refusals"][0]["code"] == "out-of-range"
