"""The sessions API: who may do what, sessions, actions, manual runs, plugin data, streaming."""

from __future__ import annotations

import json

import pytest
import test_play_support as support
from django.test import Client
from test_play_support import index_bundled, make_world, stream_text

from sessions.models import PluginData, Session
from sessions.services import session_create

bundled_world = support.bundled_world  # a shared fixture
file_database = support.file_database  # a shared fixture


def client_for(user=None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def post(client: Client, url: str, body: dict, **extra):
    return client.post(url, json.dumps(body), content_type="application/json", **extra)


@pytest.fixture
def session(bundled_world, alice) -> Session:
    return session_create(owner=alice, world=bundled_world)


class TestPermissions:
    """Alice owns the session; Bob is staff and may act on it; Charlie may not; strangers log in first."""

    def test_the_owner_gets_her_session_and_plays_it(self, session, alice):
        client = client_for(alice)
        assert client.get(f"/api/sessions/{session.pk}").status_code == 200
        answer = post(client, f"/api/sessions/{session.pk}/actions", {"message": "I knock."})
        assert answer.status_code == 200, answer.content
        assert answer.json()["narrativeText"].startswith("You knock")
        turns = client.get(f"/api/sessions/{session.pk}/turns").json()
        assert [(t["number"], t["playerMessage"], t["status"]) for t in turns["items"]] == [
            (1, "I knock.", "committed")
        ]
        assert (turns["count"], turns["limit"], turns["offset"]) == (1, 50, 0)
        data = client.get(f"/api/sessions/{session.pk}/plugin-data").json()["items"]
        assert [(d["plugin"], d["namespace"], d["key"]) for d in data] == [
            ("word-count", "totals", "session")
        ]

    @pytest.mark.parametrize(
        "method,path,body",
        [
            ("get", "", None),
            ("get", "/plugin-data", None),
            ("get", "/lorebook", None),
            ("get", "/turns", None),
            ("get", "/events?wait=0", None),
            ("post", "/actions", {"message": "I steal her gold."}),
            ("post", "/runtimes/dice/dice/run", {"payload": {"count": 1}}),
            ("post", "/rpc/dice/roll", {"command": "/roll 1"}),
            ("post", "/commands", {"text": "/roll 1"}),
            ("patch", "", {"status": "ended"}),
        ],
    )
    def test_another_player_is_refused_and_a_stranger_must_log_in(
        self, session, charlie, method, path, body
    ):
        url = f"/api/sessions/{session.pk}{path}"
        for client, status in ((client_for(charlie), 403), (client_for(None), 401)):
            if body is None:
                answer = getattr(client, method)(url)
            else:
                answer = getattr(client, method)(
                    url, json.dumps(body), content_type="application/json"
                )
            assert answer.status_code == status, (client, answer.content)
        session.refresh_from_db()
        assert session.turn_count == 0 and session.status == "active"
        assert not PluginData.objects.filter(session=session).exists()

    def test_staff_may_act_on_any_session(self, session, bob):
        client = client_for(bob)
        assert client.get(f"/api/sessions/{session.pk}").status_code == 200
        answer = post(client, f"/api/sessions/{session.pk}/actions", {"message": "I help."})
        assert answer.status_code == 200

    def test_lists_show_only_your_own_sessions(self, session, alice, charlie):
        assert [s["id"] for s in client_for(alice).get("/api/sessions").json()["items"]] == [
            str(session.pk)
        ]
        assert client_for(charlie).get("/api/sessions").json() == {
            "items": [],
            "count": 0,
            "limit": 50,
            "offset": 0,
        }
        assert client_for(None).get("/api/sessions").status_code == 401


def test_create_a_session_over_the_api_with_outcomes(bundled_world, alice):
    answer = post(
        client_for(alice), "/api/sessions", {"world": "harbor", "plugins": ["dice", "nowhere"]}
    )
    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert body["resolved_plugins"] == ["dice", "storyteller"]
    assert body["outcomes"]["nowhere"][-1]["code"] == "unknown-plugin"
    assert body["outcomes"]["storyteller"][-1]["code"] == "core"
    assert post(client_for(alice), "/api/sessions", {"world": "atlantis"}).status_code == 404


def test_turns_page_back_from_the_latest(session, alice):
    client = client_for(alice)
    for message in ("one", "two", "three"):
        assert (
            post(client, f"/api/sessions/{session.pk}/actions", {"message": message}).status_code
            == 200
        )
    url = f"/api/sessions/{session.pk}/turns"
    latest = client.get(url, {"limit": 2}).json()
    assert [t["playerMessage"] for t in latest["items"]] == ["two", "three"]
    assert latest["count"] == 3
    back = client.get(url, {"limit": 2, "offset": 2}).json()
    assert [t["playerMessage"] for t in back["items"]] == ["one"]
    refused = client.get(url, {"limit": 201})
    assert refused.status_code == 422
    assert refused.json()["details"]["issues"][0]["path"] == "/query/limit"


def test_an_ended_session_refuses_actions(session, alice):
    client = client_for(alice)
    assert (
        client.patch(
            f"/api/sessions/{session.pk}",
            json.dumps({"status": "ended"}),
            content_type="application/json",
        ).status_code
        == 200
    )
    answer = post(client, f"/api/sessions/{session.pk}/actions", {"message": "hello"})
    assert answer.status_code == 409
    assert answer.json()["code"] == "session_not_active"


def test_a_manual_run_checks_its_payload_then_stores_the_roll(session, alice):
    client = client_for(alice)
    bad = post(
        client, f"/api/sessions/{session.pk}/runtimes/dice/dice/run", {"payload": {"count": 99}}
    )
    assert bad.status_code == 422
    assert "/count" in bad.json()["message"] and "roll-request.schema.json" in bad.json()["message"]
    assert bad.json()["code"] == "payload-invalid"
    assert [i["path"] for i in bad.json()["details"]["issues"]] == ["/body/payload"]
    answer = post(
        client,
        f"/api/sessions/{session.pk}/runtimes/dice/dice/run",
        {"payload": {"count": 2, "sides": 6, "label": "ambush"}},
    )
    assert answer.status_code == 200, answer.content
    result = {r["runtime"]: r for r in answer.json()["runtimes"]}
    assert list(result) == ["dice"]  # a manual run runs only what was activated
    roll = result["dice"]["output"]
    assert roll["notation"] == "2d6" and len(roll["dice"]) == 2
    assert all(1 <= d <= 6 for d in roll["dice"])
    stored = PluginData.objects.get(session=session, plugin_id="dice", namespace="rolls")
    assert stored.key == answer.json()["turnId"] and stored.value == roll
    session.refresh_from_db()
    assert session.turn_count == 0  # manual runs do not advance the logical turn
    # A runtime that is not manual does not run by hand.
    refused = post(
        client, f"/api/sessions/{session.pk}/runtimes/word-count/word-count/run", {"payload": {}}
    )
    assert refused.status_code == 409 and refused.json()["code"] == "not-manual"


@pytest.mark.django_db(transaction=True)
def test_an_action_streams_its_events_when_asked(file_database, alice):
    index_bundled("storyteller", "word-count")
    world = make_world(owner=alice, plugins=["word-count"])
    session = session_create(owner=alice, world=world)
    answer = client_for(alice).post(
        f"/api/sessions/{session.pk}/actions",
        json.dumps({"message": "I sing."}),
        content_type="application/json",
        HTTP_ACCEPT="text/event-stream",
    )
    assert answer.status_code == 200
    assert answer["Content-Type"].startswith("text/event-stream")
    text = stream_text(answer)
    kinds = [line[len("event: ") :] for line in text.splitlines() if line.startswith("event: ")]
    assert kinds[0] == "turn.started" and kinds[-1] == "turn.committed"
    assert "narrative" in kinds and "plugin-data.changed" in kinds
    assert "You sing" in text


def test_the_trigger_ledger_limits_manual_runs(db, alice, tmp_path):
    from test_play_support import index_folder, write_plugin

    code = 'export default async (ctx) => ({ outcome: "success", value: { got: ctx.manualPayload } });\n'
    runtime = {"schedule": {"trigger": {"type": "manual", "maxTriggerCount": 1}}, "function": {}}
    index_folder(write_plugin(tmp_path, "once", {}, runtimes={"only": (runtime, code)}))
    session = session_create(owner=alice, world=make_world(owner=alice, plugins=["once"]))
    client = client_for(alice)
    url = f"/api/sessions/{session.pk}/runtimes/once/only/run"
    first = post(client, url, {"payload": {"n": 1}})
    assert first.status_code == 200, first.content
    assert first.json()["runtimes"][0]["output"] == {"got": {"n": 1}}
    second = post(client, url, {"payload": {"n": 2}})
    assert second.status_code == 409
    assert second.json()["code"] == "max-triggers"
    session.refresh_from_db()
    assert session.trigger_ledger["runtimes"]["once/only"]["count"] == 1
