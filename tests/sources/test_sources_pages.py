"""The /sources/ pages: list with state filter, detail, escaping, and staff-only actions."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from sources.models import SourceJob, SourcePlugin
from sources.services import source_plugins_sync
from tests.sources.conftest import PluginWriter, example_manifest, minimal_manifest

pytestmark = pytest.mark.django_db
SCRIPT = "<script>document.title='pwned'</script>"


@pytest.fixture
def plugins_dir(tmp_path: Path, settings) -> Path:
    folder = tmp_path / "plugins"
    folder.mkdir(exist_ok=True)
    settings.COVEL_SOURCE_PLUGIN_DIRS = [folder]
    return folder


@pytest.fixture
def hostile(plugins_dir: Path, write_plugin: PluginWriter) -> None:
    """A valid plugin whose every text is markup, and an invalid one with markup in a key."""
    data = example_manifest()
    data["source"]["name"] = f"Feed {SCRIPT}"
    data["source"]["facts"][0]["doc"] = SCRIPT
    data["source"]["tools"][0]["doc"] = "<img src=x onerror=alert(1)>"
    data["source"]["roles"][0]["context"] = SCRIPT
    write_plugin(data, folder="localfeed")
    bad = minimal_manifest("broken")
    bad["source"]["<b>bold</b>"] = SCRIPT
    write_plugin(bad)
    source_plugins_sync()


def test_the_list_shows_every_plugin_and_filters_by_state(client: Client, hostile: None) -> None:
    page = client.get("/sources/").content.decode()
    assert "/sources/localfeed/" in page and "/sources/broken/" in page
    errors_only = client.get("/sources/?state=error").content.decode()
    assert "/sources/broken/" in errors_only and "/sources/localfeed/" not in errors_only
    loaded_only = client.get("/sources/?state=loaded").content.decode()
    assert "/sources/localfeed/" in loaded_only and "/sources/broken/" not in loaded_only


def test_the_list_costs_the_same_queries_for_many_plugins(
    client: Client, plugins_dir: Path, write_plugin: PluginWriter, django_assert_max_num_queries
) -> None:
    for i in range(12):
        write_plugin(minimal_manifest(f"p{i}"))
    source_plugins_sync()
    with django_assert_max_num_queries(3):  # session, user, plugins
        assert client.get("/sources/").status_code == 200


def test_the_detail_page_shows_every_section(
    client: Client, plugins_dir: Path, example_copy: Path
) -> None:
    source_plugins_sync()
    page = client.get("/sources/localfeed/").content.decode()
    for section in (
        "codec",
        "jobs",
        "facts",
        "effects",
        "events",
        "roles",
        "deliveries",
        "tools",
        "commands",
        "views",
    ):
        assert f'id="{section}"' in page, section
    for text in (
        "item.state",
        "close_item",
        "localfeed-inbox",
        "waiting-on-author",
        "nudge",
        "triager",
        "reviewed",
        "Every 5m",
        "localfeed show &lt;feed&gt;#&lt;number&gt;",
        "No runs yet.",
    ):
        assert text in page, text


def test_the_detail_page_escapes_plugin_text(client: Client, hostile: None) -> None:
    page = client.get("/sources/localfeed/").content.decode()
    assert SCRIPT not in page and "<img src=x" not in page
    assert "&lt;script&gt;document.title=&#x27;pwned&#x27;&lt;/script&gt;" in page


def test_an_invalid_plugin_shows_its_errors_escaped(client: Client, hostile: None) -> None:
    page = client.get("/sources/broken/").content.decode()
    assert (
        'id="errors"' in page
        and "unknown-key" in page
        and "plugin.toml:/source/&lt;b&gt;bold&lt;~1b&gt;" in page
    )
    assert "<b>bold</b>" not in page and SCRIPT not in page


def test_an_unknown_plugin_page_is_404(client: Client, plugins_dir: Path) -> None:
    assert client.get("/sources/nope/").status_code == 404


def test_the_page_shows_recent_runs_with_their_outcome(
    client: Client, plugins_dir: Path, example_copy: Path
) -> None:
    source_plugins_sync()
    job = SourceJob.objects.get(name="ingest")
    now = timezone.now()
    job.runs.create(
        scheduled_for=now,
        started_at=now,
        ended_at=now,
        outcome="failed",
        error=f"Ingest failed: {SCRIPT}",
        next_run_at=now,
    )
    page = client.get("/sources/localfeed/").content.decode()
    assert "Failed" in page and "Ingest failed: &lt;script&gt;" in page and SCRIPT not in page


# --- staff-only actions -----------------------------------------------------------------------
def test_anonymous_visitors_cannot_sync(
    client: Client, plugins_dir: Path, example_copy: Path
) -> None:
    response = client.post("/sources/sync/")
    assert response.status_code == 302 and "login" in response["Location"]
    assert not SourcePlugin.objects.exists()


def test_a_player_cannot_sync(client: Client, alice, plugins_dir: Path, example_copy: Path) -> None:
    client.force_login(alice)
    response = client.post("/sources/sync/")
    assert response.status_code == 302 and "login" in response["Location"]
    assert not SourcePlugin.objects.exists()
    assert "Re-sync" not in client.get("/sources/").content.decode()


def test_staff_can_sync(client: Client, bob, plugins_dir: Path, example_copy: Path) -> None:
    client.force_login(bob)
    assert "Re-sync" in client.get("/sources/").content.decode()
    response = client.post("/sources/sync/")
    assert response.status_code == 302 and response["Location"] == "/sources/"
    assert SourcePlugin.objects.filter(plugin_id="localfeed", state="loaded").exists()


def test_sync_refuses_get(client: Client, bob, plugins_dir: Path) -> None:
    client.force_login(bob)
    assert client.get("/sources/sync/").status_code == 405


def test_only_staff_can_bring_a_run_forward(
    client: Client, alice, bob, plugins_dir: Path, example_copy: Path
) -> None:
    source_plugins_sync()
    later = timezone.now() + timezone.timedelta(hours=1)
    SourceJob.objects.update(next_run_at=later)
    client.force_login(alice)
    assert client.post("/sources/localfeed/jobs/ingest/run/").status_code == 302
    assert SourceJob.objects.get(name="ingest").next_run_at == later
    assert "Run now" not in client.get("/sources/localfeed/").content.decode()
    client.force_login(bob)
    assert "Run now" in client.get("/sources/localfeed/").content.decode()
    client.post("/sources/localfeed/jobs/ingest/run/")
    assert SourceJob.objects.get(name="ingest").next_run_at <= timezone.now()
    assert SourceJob.objects.get(name="sweep").next_run_at == later


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_script_in_a_doc_string_is_inert_in_a_real_browser(
    live_server, browser, plugins_dir: Path, write_plugin: PluginWriter
) -> None:
    data = example_manifest()
    data["source"]["facts"][0]["doc"] = SCRIPT
    data["source"]["name"] = SCRIPT
    write_plugin(data, folder="localfeed")
    source_plugins_sync()
    page = browser.new_page()
    page.goto(f"{live_server.url}/sources/localfeed/")
    assert page.title() != "pwned"
    assert page.locator("#facts").inner_text().count(SCRIPT) == 1  # shown as text
    page.goto(f"{live_server.url}/sources/")
    assert page.title() != "pwned" and SCRIPT in page.locator("table").inner_text()
    page.close()


def test_the_list_searches_by_id_or_service_name(client: Client, hostile: None) -> None:
    by_id = client.get("/sources/?q=brok").content.decode()
    assert "/sources/broken/" in by_id and "/sources/localfeed/" not in by_id
    by_name = client.get("/sources/", {"q": "feed <script"}).content.decode()
    assert "/sources/localfeed/" in by_name and "/sources/broken/" not in by_name
    assert 'value="feed &lt;script"' in by_name
