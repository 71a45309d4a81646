"""Paging of the staff jobs dashboard: keyset on the job id (?before= older, ?after= newer), 100
jobs a page newest first, the filters kept in the links, the total shown, the same queries on
every page, and a malformed cursor shown as the first page rather than an error."""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from jobs.models import JobState, RuntimeJob

pytestmark = pytest.mark.django_db


def _client(user: Any = None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def _bulk_jobs(
    session: Any,
    count: int,
    *,
    plugin_id: str = "notebook",
    prefix: str = "r",
    state: Callable[[int], str] = lambda i: JobState.SUCCEEDED,
) -> None:
    """`count` finished jobs in one INSERT (no enqueueing: the dashboard only reads rows)."""
    now = timezone.now()
    RuntimeJob.objects.bulk_create(
        RuntimeJob(
            session=session,
            plugin_id=plugin_id,
            runtime_id=f"{prefix}{i:03d}",
            state=state(i),
            created_at=now - timedelta(seconds=count - i),
            updated_at=now,
        )
        for i in range(count)
    )


def _newest_first(**filters: Any) -> list[str]:
    """The expected order, read from the database rather than assumed from the inserts."""
    return list(
        RuntimeJob.objects.filter(**filters).order_by("-id").values_list("runtime_id", flat=True)
    )


class Page:
    def __init__(self, response: Any) -> None:
        assert response.status_code == 200
        self.html = response.content.decode()
        body = (
            self.html.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
            if "<tbody>" in self.html
            else ""
        )
        self.rows = [
            html_lib.unescape(r) for r in re.findall(r'<a href="\?plugin=[^"]*">([^<]*)</a>', body)
        ]
        self.older = self._link("jobs-older")
        self.newer = self._link("jobs-newer")

    def _link(self, css_class: str) -> str | None:
        found = re.findall(rf'<a class="{css_class}" rel="\w+" href="([^"]*)">', self.html)
        assert len(found) <= 1
        return html_lib.unescape(found[0]) if found else None

    @staticmethod
    def query(link: str) -> dict[str, list[str]]:
        return parse_qs(urlsplit(link).query)


@pytest.fixture
def jobs_205(play_session: Any) -> list[str]:
    _bulk_jobs(play_session, 205)
    return _newest_first()


def test_older_walks_every_page_and_newer_walks_back(bob, jobs_205):
    client = _client(bob)
    first = Page(client.get("/jobs/"))
    assert first.rows == jobs_205[:100]
    assert "205 jobs:" in first.html
    assert "1–100 of 205, newest first" in first.html
    assert first.newer is None and first.older is not None
    assert Page.query(first.older) == {
        "before": [str(RuntimeJob.objects.get(runtime_id=jobs_205[99]).pk)]
    }

    second = Page(client.get(first.older))
    assert second.rows == jobs_205[100:200]
    assert "101–200 of 205, newest first" in second.html and "205 jobs:" in second.html

    third = Page(client.get(second.older))
    assert third.rows == jobs_205[200:] and len(third.rows) == 5
    assert "201–205 of 205, newest first" in third.html
    assert third.older is None

    # Back up: more than a page of newer jobs, so an ?after= cursor, then the plain first page.
    back = Page(client.get(third.newer))
    assert "after" in Page.query(third.newer)
    assert back.rows == second.rows and "101–200 of 205" in back.html
    assert back.older is not None and Page(client.get(back.older)).rows == third.rows
    assert back.newer == "/jobs/"
    top = Page(client.get(back.newer))
    assert top.rows == first.rows and top.newer is None
    # The newer link of the second page reached by ?before= is the first page too.
    assert second.newer == "/jobs/"


def test_the_timeline_keeps_showing_the_most_recent_jobs_on_older_pages(bob, jobs_205):
    client = _client(bob)
    first = Page(client.get("/jobs/"))
    third = Page(client.get(Page(client.get(first.older)).older))
    assert third.rows == jobs_205[200:]
    newest_lane = f"notebook/{jobs_205[0]} #"
    assert newest_lane in first.html and newest_lane in third.html
    assert f"notebook/{jobs_205[-1]} #" not in third.html  # the oldest job is no timeline lane
    assert (
        third.html.count('class="bar bar-queue"') == first.html.count('class="bar bar-queue"') == 40
    )


def test_filters_survive_paging(bob, alice, play_session, jobs_205):
    from sessions.models import Session

    # Every other job of the 205 failed: 103 match, more than a page but fewer than all.
    RuntimeJob.objects.filter(runtime_id__in=jobs_205[::2]).update(state=JobState.FAILED)
    other = Session.objects.create(world=play_session.world, owner=alice, title="Another")
    _bulk_jobs(other, 10, prefix="elsewhere", state=lambda i: JobState.FAILED)
    _bulk_jobs(play_session, 10, plugin_id="dice", prefix="roll", state=lambda i: JobState.FAILED)
    failed = _newest_first(state=JobState.FAILED, plugin_id="notebook", session=play_session)
    assert len(failed) == 103
    filters = {"state": ["failed"], "plugin": ["notebook"], "session": [str(play_session.pk)]}

    client = _client(bob)
    query = f"state=failed&plugin=notebook&session={play_session.pk}"
    first = Page(client.get(f"/jobs/?{query}"))
    assert first.rows == failed[:100]
    assert "103 jobs:" in first.html and "1–100 of 103, newest first" in first.html
    assert {k: v for k, v in Page.query(first.older).items() if k != "before"} == filters

    second = Page(client.get(first.older))
    assert second.rows == failed[100:] and len(second.rows) == 3
    assert "101–103 of 103" in second.html and second.older is None
    assert Page.query(second.newer) == filters  # the first page of the same filters

    # One filter alone pages too: the state filter over both sessions and plugins (123 jobs).
    everywhere = _newest_first(state=JobState.FAILED)
    first = Page(client.get("/jobs/?state=failed"))
    assert first.rows == everywhere[:100] and "123 jobs:" in first.html
    assert Page.query(first.older).keys() == {"state", "before"}
    assert Page(client.get(first.older)).rows == everywhere[100:]


def test_plugin_text_in_the_paging_links_is_encoded_and_escaped(bob, play_session):
    plugin = 'a&b "<x>"'
    _bulk_jobs(play_session, 101, plugin_id=plugin)
    client = _client(bob)
    first = Page(client.get("/jobs/", {"plugin": plugin}))
    assert len(first.rows) == 100
    assert '"<x>' not in first.html and "<x>" not in first.html
    assert Page.query(first.older)["plugin"] == [plugin]
    second = Page(client.get(first.older))
    assert second.rows == _newest_first(plugin_id=plugin)[100:]
    assert Page.query(second.newer) == {"plugin": [plugin]}


def test_every_page_costs_the_same_queries_and_none_uses_offset(bob, jobs_205):
    client = _client(bob)

    def visit(url: str) -> tuple[Page, list[str]]:
        with CaptureQueriesContext(connection) as queries:
            page = Page(client.get(url))
        return page, [q["sql"] for q in queries.captured_queries]

    first, first_sql = visit("/jobs/")
    second, second_sql = visit(first.older)
    third, third_sql = visit(second.older)
    back, back_sql = visit(third.newer)  # an ?after= page
    assert len(third.rows) == 5 and len(back.rows) == 100
    assert len(first_sql) == len(second_sql) == len(third_sql) == len(back_sql)
    assert not any("OFFSET" in sql.upper() for sql in first_sql + third_sql + back_sql)


@pytest.mark.parametrize(
    "value",
    ["abc", "-5", "+5", "1.5", "1e3", "0x10", " 12", "12abc", "١٢", "", str(2**63), "9" * 40],
)
@pytest.mark.parametrize("name", ["before", "after"])
def test_a_malformed_cursor_shows_the_first_page(bob, jobs_205, name, value):
    page = Page(_client(bob).get("/jobs/", {name: value}))
    assert page.rows == jobs_205[:100]
    assert "1–100 of 205" in page.html and page.newer is None


def test_a_cursor_past_every_job_shows_an_empty_page_with_a_way_back(bob, jobs_205):
    client = _client(bob)
    newest = RuntimeJob.objects.order_by("-id").first().pk
    # The largest id there can be: every job is older, so this is the first page.
    assert Page(client.get("/jobs/", {"before": str(2**63 - 1)})).rows == jobs_205[:100]
    empty = Page(client.get("/jobs/", {"after": str(newest)}))
    assert empty.rows == [] and "No jobs match." in empty.html and empty.newer is None
    assert Page(client.get(empty.older)).rows == jobs_205[:100]
    empty = Page(client.get("/jobs/", {"before": "0"}))
    assert empty.rows == [] and empty.older is None
    assert Page(client.get(empty.newer)).rows == jobs_205[105:]  # the oldest hundred


def test_before_wins_over_after(bob, jobs_205):
    client = _client(bob)
    first = Page(client.get("/jobs/"))
    both = Page(client.get(f"{first.older}&after=1"))
    assert both.rows == jobs_205[100:200]


def test_players_and_visitors_are_refused_on_every_page(alice, charlie, jobs_205):
    cursor = str(RuntimeJob.objects.get(runtime_id=jobs_205[99]).pk)
    for query in (
        f"before={cursor}",
        f"after={cursor}",
        f"state=failed&before={cursor}",
        "before=x",
    ):
        assert _client(alice).get(f"/jobs/?{query}").status_code == 403
        assert _client(charlie).get(f"/jobs/?{query}").status_code == 403
        response = _client().get(f"/jobs/?{query}")
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
