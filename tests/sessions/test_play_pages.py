"""Session pages: my sessions, a new session from a world, and why each plugin is in or out."""

from __future__ import annotations

from django.test import Client
from test_play_support import index_bundled, index_folder, make_world, write_plugin

from sessions.models import Session


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_resolvers_outcomes_show_on_the_session_page(db, alice, tmp_path):
    index_bundled("storyteller", "notebook", "dice")
    # Community code nobody approved, and a package for a newer host.
    index_folder(
        write_plugin(
            tmp_path,
            "stranger",
            {},
            files={"server/index.js": "export default () => {};\n"},
        ),
        source="community",
    )
    index_folder(write_plugin(tmp_path, "future", {"covel": ">=9.0.0"}), valid=False)
    world = make_world(owner=alice, plugins=["notebook", "stranger", "future", "ghost"])
    client = login(alice)
    answer = client.post(
        "/sessions/new/",
        {"world": "harbor", "plugins": ["notebook", "stranger", "future", "ghost"]},
    )
    assert answer.status_code == 302
    session = Session.objects.get(owner=alice)
    assert session.world == world
    # storyteller was unticked: core packages are left out only when the player says so.
    assert session.excluded_plugins == ["storyteller"]
    codes = {p: o[-1]["code"] for p, o in session.outcomes.items()}
    assert codes == {
        "notebook": "missing-provider",
        "stranger": "approval-required",
        "future": "host-range",
        "ghost": "unknown-plugin",
        "storyteller": "excluded",
    }
    page = client.get(answer["Location"]).content.decode()
    for code in codes.values():
        assert code in page
    assert "future needs Covel &gt;=9.0.0; this host runs 0.1.0" in page
    assert "ghost is not installed on this hub" in page


def test_a_new_session_form_ticks_the_worlds_and_the_core_plugins(db, alice):
    index_bundled("storyteller", "dice", "word-count")
    make_world(owner=alice, plugins=["dice"])
    page = login(alice).get("/sessions/new/?world=harbor").content.decode()
    assert 'value="storyteller" checked' in page and 'value="dice" checked' in page
    assert 'value="word-count">' in page  # offered, not ticked


def test_the_list_shows_only_my_sessions_and_strangers_are_sent_to_log_in(db, alice, charlie):
    index_bundled("storyteller")
    world = make_world(owner=alice, plugins=[])
    mine = Session.objects.create(world=world, owner=alice, title="Mine")
    Session.objects.create(world=world, owner=charlie, title="Charlie's secret")
    page = login(alice).get("/sessions/").content.decode()
    assert "Mine" in page and "secret" not in page
    assert Client().get("/sessions/")["Location"].startswith("/accounts/login/")
    assert login(charlie).get(f"/sessions/{mine.pk}/").status_code == 403


def test_plugin_text_is_escaped_on_the_play_page(db, alice):
    from sessions.models import PluginData, Turn

    index_bundled("storyteller")
    world = make_world(owner=alice, plugins=[])
    session = Session.objects.create(world=world, owner=alice)
    Turn.objects.create(
        session=session,
        number=1,
        status="committed",
        player_message="<b>hi</b>",
        narrative_text="<script>alert(1)</script>",
    )
    PluginData.objects.create(
        session=session,
        plugin_id="storyteller",
        namespace="n",
        key="<i>k</i>",
        value={"x": "<img>"},
    )
    page = login(alice).get(f"/sessions/{session.pk}/").content.decode()
    assert (
        "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    )
    assert "<img>" not in page and "<i>k</i>" not in page


def test_the_session_list_costs_the_same_queries_for_one_or_many_sessions(db, alice):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    world = make_world(owner=alice, plugins=[])
    client = login(alice)
    Session.objects.create(world=world, owner=alice, title="One")
    with CaptureQueriesContext(connection) as one:
        assert client.get("/sessions/").status_code == 200
    for n in range(6):
        Session.objects.create(world=world, owner=alice, title=f"More {n}")
    with CaptureQueriesContext(connection) as many:
        page = client.get("/sessions/")
    assert page.content.decode().count("<tr>") == 8  # header + 7 sessions
    assert len(many.captured_queries) == len(one.captured_queries)


def test_the_owner_pauses_and_ends_a_session_and_charlie_cannot(db, alice, charlie):
    world = make_world(owner=alice, plugins=[])
    session = Session.objects.create(world=world, owner=alice)
    url = f"/sessions/{session.pk}/status/"
    assert login(charlie).post(url, {"status": "ended"}).status_code == 403
    assert login(alice).post(url, {"status": "paused"}).status_code == 302
    session.refresh_from_db()
    assert session.status == "paused"
    assert "Resume" in login(alice).get(f"/sessions/{session.pk}/").content.decode()
    assert login(alice).post(url, {"status": "bogus"}).status_code == 422
    login(alice).post(url, {"status": "ended"})
    assert login(alice).post(url, {"status": "active"}).status_code == 409
    session.refresh_from_db()
    assert session.status == "ended"


def test_the_play_page_loads_the_sessions_jobs_panel(db, alice, charlie):
    from django.utils import timezone

    from jobs.models import RuntimeJob

    index_bundled("storyteller")
    session = Session.objects.create(world=make_world(owner=alice, plugins=[]), owner=alice)
    RuntimeJob.objects.create(
        session=session,
        plugin_id="chronicle",
        runtime_id="chronicle/summarize",  # turns queue jobs by qualified id
        source_turn="t-1",
        created_at=timezone.now(),
        updated_at=timezone.now(),
    )
    page = login(alice).get(f"/sessions/{session.pk}/").content.decode()
    panel_url = f"/jobs/sessions/{session.pk}/panel/"
    assert f'hx-get="{panel_url}"' in page
    panel = login(alice).get(panel_url)
    assert panel.status_code == 200 and "chronicle/summarize" in panel.content.decode()
    assert login(charlie).get(panel_url).status_code == 403


def test_past_hook_and_extension_problems_are_escaped_notices_on_the_play_page(db, alice):
    from eventlog.services import event_append

    index_bundled("storyteller")
    session = Session.objects.create(world=make_world(owner=alice, plugins=[]), owner=alice)
    event_append(
        session_id=session.pk,
        type="extension.failed",
        payload={
            "point": "prompt.segment@1",
            "plugin": "mood",
            "extension": "tone",
            "code": "extension_error",
            "message": "<b>no mood</b>",
            "runtime": "story-agent",
        },
    )
    event_append(
        session_id=session.pk,
        type="hook.aborted",
        payload={
            "event": "TurnStart",
            "package": "bouncer",
            "phase": "normal",
            "outcome": "aborted",
            "message": "closed <for> the night",
        },
    )
    page = login(alice).get(f"/sessions/{session.pk}/").content.decode()
    notices = page[page.index('id="notifications"') : page.index("Plugin data")]
    # Newest first: the hook, then the extension; package, event and message, escaped.
    assert notices.index("The TurnStart hook of bouncer aborted") < notices.index(
        "The prompt.segment@1 extension mood/tone was skipped"
    )
    assert 'data-problem="hook.aborted"' in notices
    assert "closed &lt;for&gt; the night" in notices and "<for>" not in notices
    assert "&lt;b&gt;no mood&lt;/b&gt;" in notices and "<b>" not in notices
    assert "No notices yet." not in notices
