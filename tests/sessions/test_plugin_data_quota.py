"""The plugin data quota: what one package keeps in one session (keys and bytes), refused with
code quota-exceeded and nothing half-written; plugin-data.changed names keys, never values; the
plugin-data API and the play page's panel are pages.

The attack's shape from the second security review: one RPC writing many values of 200 KB.
Real Node runs the packages (bundled trust: the quota is the same for every package).
Personas: Alice plays her own session; Charlie may see nothing of it."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from test_play_support import by_runtime, index_folder, make_world, play, write_plugin

from eventlog.models import SessionEvent
from sessions import operations
from sessions.models import PluginData
from sessions.operations import MISSING, TurnOverlay
from sessions.services import session_create

pytestmark = pytest.mark.django_db

VALUE_CHARS = 200_000  # a value of 200,002 bytes: 20 of them fit in 4 MiB, the 21st does not
HOARDER = """export default function register(covel) {
  covel.registerRpc("fill", async (payload, ctx) => {
    let written = 0;
    try {
      for (let i = 0; i < payload.count; i += 1) {
        const key = "k" + String(i).padStart(4, "0");
        await ctx.store.setPluginData({ namespace: payload.namespace || "hoard", key, value: "x".repeat(payload.chars) });
        written += 1;
      }
    } catch (error) {
      return { written, code: error.code || null, message: String(error.message || error) };
    }
    return { written, code: null };
  });
}
"""


@pytest.fixture
def hoard_session(tmp_path, alice):
    folder = write_plugin(
        tmp_path,
        "hoarder",
        {"entry": "./server/index.js", "contributes": {"actions": ["fill"]}},
        files={"server/index.js": HOARDER},
    )
    index_folder(folder)
    return session_create(owner=alice, world=make_world(owner=alice, plugins=["hoarder"]))


def rpc(user, session, payload):
    client = Client()
    client.force_login(user)
    return client.post(
        f"/api/sessions/{session.pk}/rpc/hoarder/fill",
        json.dumps({"payload": payload}),
        content_type="application/json",
    )


def usage(session, plugin="hoarder"):
    rows = PluginData.objects.filter(session=session, plugin_id=plugin)
    return rows.count(), sum(len(json.dumps(r.value).encode()) for r in rows)


def test_one_rpc_writing_many_large_values_stops_at_the_byte_quota(hoard_session, alice):
    answer = rpc(alice, hoard_session, {"count": 30, "chars": VALUE_CHARS})
    assert answer.status_code == 200, answer.content
    value = answer.json()["value"]
    assert value["written"] == 20
    assert value["code"] == "quota-exceeded"
    assert "hoarder" in value["message"] and "4194304 bytes" in value["message"]
    keys, size = usage(hoard_session)
    assert keys == 20 and size <= operations.PLUGIN_DATA_MAX_BYTES
    # The refused value was written not at all (no 21st key, no cut value).
    assert not PluginData.objects.filter(session=hoard_session, key="k0020").exists()
    assert {len(r.value) for r in PluginData.objects.filter(session=hoard_session)} == {VALUE_CHARS}
    # The stored sizes are what the quota sums.
    assert (
        sum(PluginData.objects.filter(session=hoard_session).values_list("size", flat=True)) == size
    )

    # The event names the 20 keys and carries no value: a few KB, not 4 MB.
    event = SessionEvent.objects.get(session=hoard_session, type="plugin-data.changed")
    assert len(json.dumps(event.payload)) < 4000
    assert [c["key"] for c in event.payload["changes"]] == [f"k{i:04d}" for i in range(20)]
    assert all(
        set(c) == {"plugin", "namespace", "key", "deleted"} for c in event.payload["changes"]
    )


def test_the_key_quota_counts_every_namespace_and_a_rewrite_is_not_a_new_key(
    hoard_session, alice, monkeypatch
):
    monkeypatch.setattr(operations, "PLUGIN_DATA_MAX_KEYS", 5)
    first = rpc(alice, hoard_session, {"count": 3, "chars": 10, "namespace": "a"}).json()["value"]
    assert first == {"written": 3, "code": None}
    second = rpc(alice, hoard_session, {"count": 4, "chars": 10, "namespace": "b"}).json()["value"]
    assert (second["written"], second["code"]) == (2, "quota-exceeded")
    assert "5 keys" in second["message"]
    # Over the same keys again (rewrites, not new keys): all pass.
    again = rpc(alice, hoard_session, {"count": 3, "chars": 12, "namespace": "a"}).json()["value"]
    assert again == {"written": 3, "code": None}
    assert usage(hoard_session)[0] == 5


def test_a_turn_over_the_quota_drops_the_runtime_and_writes_nothing_of_it(
    db, alice, tmp_path, monkeypatch
):
    monkeypatch.setattr(operations, "PLUGIN_DATA_MAX_BYTES", 1000)
    code = """export default async function handler(ctx) {
      for (let i = 0; i < 5; i += 1) await ctx.pluginData.set("notes", "n" + i, "y".repeat(300));
      return { outcome: "success", value: {} };
    }"""
    small = """export default async function handler(ctx) {
      await ctx.pluginData.set("notes", "small", "ok");
      return { outcome: "success", value: {} };
    }"""
    index_folder(
        write_plugin(
            tmp_path,
            "greedy",
            {},
            runtimes={
                "fill": ({"schedule": {"stage": "pre-turn"}, "function": {}}, code),
                "tidy": ({"schedule": {"stage": "post-turn"}, "function": {}}, small),
            },
        )
    )
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=["greedy"]))
    result = by_runtime(play(session, "hoard"))
    assert result["greedy/fill"]["status"] == "dropped"
    assert result["greedy/fill"]["code"] == "write-refused"
    assert "quota-exceeded" in result["greedy/fill"]["reason"]
    assert result["greedy/tidy"]["status"] == "succeeded"
    assert list(PluginData.objects.filter(session=session).values_list("key", flat=True)) == [
        "small"
    ]
    event = SessionEvent.objects.get(session=session, type="plugin-data.changed")
    assert event.payload["changes"] == [
        {"plugin": "greedy", "namespace": "notes", "key": "small", "deleted": False}
    ]


def test_the_overlay_counts_stored_use_and_lets_shrinking_writes_through(monkeypatch):
    monkeypatch.setattr(operations, "PLUGIN_DATA_MAX_BYTES", 100)
    stored = {("p", "n", "big"): "z" * 90}
    overlay = TurnOverlay(
        load=lambda p, n, k: stored.get((p, n, k), MISSING),
        usage=lambda plugin: (1, 92) if plugin == "p" else (0, 0),
    )
    overlay.set(runtime="r1", plugin="p", namespace="n", key="more", value="a" * 20)
    overlay.complete("r1", succeeded=True)
    overlay.set(runtime="r2", plugin="p", namespace="n", key="big", value="small")
    overlay.complete("r2", succeeded=True)
    result = overlay.commit()
    assert [r.code for r in result.refusals] == ["quota-exceeded"]
    assert result.kept == ("r2",)
    assert result.values == {("p", "n", "big"): "small"}


def test_the_api_pages_and_narrows_the_data(hoard_session, alice, charlie):
    rpc(alice, hoard_session, {"count": 7, "chars": 5})
    client = Client()
    client.force_login(alice)
    url = f"/api/sessions/{hoard_session.pk}/plugin-data"
    page = client.get(url, {"limit": 3, "offset": 3}).json()
    assert (page["count"], page["limit"], page["offset"]) == (7, 3, 3)
    assert [r["key"] for r in page["items"]] == ["k0003", "k0004", "k0005"]
    assert page["items"][0]["size"] == 7  # "xxxxx" as JSON
    one = client.get(url, {"plugin": "hoarder", "namespace": "hoard", "key": "k0006"}).json()
    assert [r["key"] for r in one["items"]] == ["k0006"] and one["count"] == 1
    assert client.get(url, {"limit": 201}).status_code == 422
    stranger = Client()
    stranger.force_login(charlie)
    assert stranger.get(url).status_code in (403, 404)


def test_the_panel_is_a_page_with_long_values_cut(hoard_session, alice):
    rpc(alice, hoard_session, {"count": 60, "chars": 3000})
    client = Client()
    client.force_login(alice)
    html = client.get(f"/sessions/{hoard_session.pk}/").content.decode()
    assert html.count('<tr data-key="hoarder/hoard/') == 50
    assert "1–50 / 60" in html and "?data_offset=50#plugin-data" in html
    assert "x" * 3000 not in html and "(3002 bytes)" in html
    assert len(html) < 200_000
    second = client.get(f"/sessions/{hoard_session.pk}/", {"data_offset": 50}).content.decode()
    assert second.count('<tr data-key="hoarder/hoard/') == 10
    assert 'data-key="hoarder/hoard/k0059"' in second and "51–60 / 60" in second


def test_the_api_page_costs_the_same_queries_for_few_or_many_rows(hoard_session, alice):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = Client()
    client.force_login(alice)

    def cost(path: str) -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(path).status_code == 200
        return len(queries)

    api = f"/api/sessions/{hoard_session.pk}/plugin-data"
    rpc(alice, hoard_session, {"count": 3, "chars": 5})
    few = cost(api)
    rpc(alice, hoard_session, {"count": 80, "chars": 5})
    assert cost(api) == few
    assert PluginData.objects.filter(session=hoard_session).count() == 80
