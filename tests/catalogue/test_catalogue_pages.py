"""The browser catalogue: list, detail, link confirmation, re-sync button.

Personas: the anonymous visitor and alice (a player) browse; bob (staff) may re-sync.
"""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from catalogue.manifest.types import Issue
from catalogue.models import ExternalLink
from catalogue.services import package_index

pytestmark = pytest.mark.django_db


@pytest.fixture
def add(tmp_path, make_result):
    def add(package_id, data=None, source="bundled", errors=()):
        data = {"description": f"About {package_id}.", **(data or {})}
        return package_index(
            result=make_result(
                tmp_path / package_id, data, errors=errors, body="Keep the story moving."
            ),
            source=source,
            content_hash="0" * 64,
            host_version="0.1.0",
        )

    return add


def html(response) -> str:
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def test_the_list_shows_cards_facets_and_marks_invalid_packages(client, tmp_path, rich_data, add):
    add("dice", rich_data)
    add(
        "broken",
        {"displayName": "Broken one", "tags": ["mode:story"]},
        errors=(Issue("PLUGIN.md", "/kind", "enum", "kind must be core or plugin"),),
    )
    page = html(client.get("/"))
    assert "Dice Roller" in page and "Broken one" in page
    broken_card = re.search(
        r'<article class="package-card card invalid" data-package="broken">.*?</article>',
        page,
        re.S,
    )
    assert broken_card and "invalid" in broken_card.group(0)
    assert re.search(r'data-tag="mode:story"[^>]*>mode:story <span class="count">1</span>', page)


def test_filters_live_in_the_url_and_tags_combine(client, tmp_path, add):
    add("a", {"tags": ["mode:story", "data:x"]})
    add("b", {"tags": ["mode:story"]})
    add("c", {"tags": ["data:x"]})
    page = html(client.get("/?tag=mode:story"))
    assert (
        'data-package="a"' in page and 'data-package="b"' in page and 'data-package="c"' not in page
    )
    # The facet link for data:x keeps mode:story: AND.
    link = re.search(r'href="([^"]+)" data-tag="data:x"', page).group(1)
    page = html(client.get("/" + link.replace("&amp;", "&")))
    assert 'data-package="a"' in page and 'data-package="b"' not in page
    assert '<input type="hidden" name="tag" value="mode:story">' in page


def test_htmx_requests_get_the_results_fragment(client, tmp_path, add):
    add("a")
    page = html(client.get("/?q=a", headers={"HX-Request": "true"}))
    assert "<html" not in page and 'data-package="a"' in page


def test_pagination_links_keep_the_filters(client, tmp_path, add):
    for n in range(25):
        add(f"p{n:02d}", {"tags": ["mode:x"]})
    page = html(client.get("/?tag=mode:x"))
    assert "Page 1 of 2" in page
    assert 'href="?tag=mode%3Ax&amp;page=2" rel="next"' in page
    assert "Page 2 of 2" in html(client.get("/?tag=mode:x&page=99"))


def test_the_detail_page_shows_the_whole_card(client, tmp_path, rich_data, add):
    add("dice", rich_data)
    page = html(client.get("/packages/dice/"))
    for text in (
        "Jane Doe",
        "I make dice.",
        "Discord",
        "Rolls dice for skill checks.",
        "Keep the story moving.",
        "dice@1",
        "narrative-engine@2",
        "other-dice@1",
        "<svg",
        "Sides",
        "Twenty",
        "https://api.example.com",
        "post-turn",
        "detached",
        "up to 5 s",
        "/roll",
        "roll-action",
        "history",
        "Gamble",
    ):
        assert text in page, text
    assert (
        "https://discord.example.com/dice" not in page
    )  # the address only appears after confirmation
    link = ExternalLink.objects.get(label="Discord")
    assert f'href="/packages/dice/links/{link.pk}/"' in page
    assert client.get("/packages/nope/").status_code == 404


def test_a_link_opens_only_after_a_confirmation_page(client, tmp_path, rich_data, add):
    add("dice", rich_data)
    other = add("other", {"homepage": "https://other.example.com"})
    link = ExternalLink.objects.get(label="Discord")
    response = client.get(f"/packages/dice/links/{link.pk}/")
    page = html(response)
    assert '<code id="full-address">https://discord.example.com/dice</code>' in page
    assert (
        'href="https://discord.example.com/dice" rel="noopener noreferrer nofollow external"'
        in page
    )
    # Never a redirect, and never an address the package does not declare.
    assert client.get(f"/packages/dice/links/{other.links.get().pk}/").status_code == 404
    assert client.get("/packages/dice/links/999999/").status_code == 404
    assert client.get("/out?url=https://evil.example.com").status_code == 404


def test_everything_from_a_manifest_is_escaped(client, tmp_path, add):
    evil = "<script>alert(1)</script>"
    add(
        "evil",
        {
            "displayName": f"Evil {evil}",
            "description": f"Desc {evil}",
            "tags": [f"mode:{evil}"],
            "author": {
                "name": f"Author {evil}",
                "about": evil,
                "links": [{"label": f"Label {evil}", "url": "https://example.com/?q=<script>"}],
            },
            "provides": [f"x{evil}@1"],
        },
    )
    pages = [html(client.get("/")), html(client.get("/packages/evil/"))]
    link = ExternalLink.objects.get(kind="author-link")
    pages.append(html(client.get(f"/packages/evil/links/{link.pk}/")))
    for page in pages:
        assert "<script>alert(1)</script>" not in page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "Label &lt;script&gt;" in pages[1] and "Author &lt;script&gt;" in pages[1]
    assert "https://example.com/?q=&lt;script&gt;" in pages[2]


@pytest.mark.parametrize("url", ["/", "/?q=dice&tag=mode:dialogue&sort=name", "/packages/pkg-1/"])
def test_page_query_count_does_not_grow_with_the_catalogue(
    client, tmp_path, rich_data, django_assert_num_queries, url, add
):
    def fill(start: int, stop: int) -> None:
        for n in range(start, stop):
            add(f"pkg-{n}", {**rich_data, "displayName": f"Dice {n}"})

    fill(1, 3)
    with CaptureQueriesContext(connection) as small:
        html(client.get(url))
    fill(3, 31)
    with django_assert_num_queries(len(small)):
        html(client.get(url))


def test_only_staff_may_resync(client, alice, bob, plugin_dirs):
    plugin_dirs.add("bundled", "dice")
    response = client.post("/sync/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    client.force_login(alice)
    assert client.post("/sync/").status_code == 403
    assert client.get("/sync/").status_code == 405
    assert "Re-sync packages" not in html(client.get("/"))
    client.force_login(bob)
    assert "Re-sync packages" in html(client.get("/"))
    response = client.post("/sync/", follow=True)
    assert "Catalogue re-synced: indexed 1, unchanged 0, removed 0, invalid 0." in html(response)


def test_resync_needs_a_csrf_token(bob, plugin_dirs):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(bob)
    assert client.post("/sync/").status_code == 403
    page = html(client.get("/"))
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    assert client.post("/sync/", {"csrfmiddlewaretoken": token}).status_code == 302


@pytest.mark.parametrize("url", ["/packages/big/", "/api/packages/big"])
def test_detail_query_count_does_not_grow_with_package_size(
    client, tmp_path, django_assert_num_queries, url, add
):
    def package(n: int) -> dict:
        return {
            "provides": [f"c{i}@1" for i in range(n)],
            "requires": [f"r{i}@1" for i in range(n)],
            "author": {
                "name": "A",
                "links": [
                    {"label": f"L{i}", "url": f"https://e.example.com/{i}"}
                    for i in range(min(n, 6))
                ],
            },
            "permissions": {"http": [{"origin": f"https://h{i}.example.com"} for i in range(n)]},
            "contributes": {
                "tools": [f"t{i}" for i in range(n)],
                "actions": [f"a{i}" for i in range(n)],
                "commands": [
                    {
                        "name": f"c{i}",
                        "description": "d",
                        "action": f"a{i}",
                        "arguments": [{"name": f"x{j}"} for j in range(n)],
                    }
                    for i in range(n)
                ],
                "settings": [
                    {
                        "key": f"s{i}",
                        "type": "select",
                        "label": "S",
                        "options": [{"value": str(j), "label": str(j)} for j in range(n)],
                    }
                    for i in range(n)
                ],
                "data": {f"ns{i}": {"schema": "./s.json"} for i in range(n)},
                "hooks": ["TurnStart"] * n,
                "events": [
                    {"topic": f"e.t{i}", "schema": "./s.json", "description": "d"} for i in range(n)
                ],
            },
            "runtime": {
                "schedule": {"stage": "post-turn"},
                "permissions": {
                    "http": [{"origin": f"https://r{i}.example.com"} for i in range(n)]
                },
            },
        }

    add("big", package(1))
    with CaptureQueriesContext(connection) as small:
        assert client.get(url).status_code == 200
    add("big", package(12))
    with django_assert_num_queries(len(small)):
        response = client.get(url)
    assert response.status_code == 200 and "https://r11.example.com" in response.content.decode()


def test_the_folder_path_is_shown_to_staff_only(client, bob, tmp_path, add):
    add("dice")
    assert str(tmp_path) not in html(client.get("/packages/dice/"))
    assert str(tmp_path) not in client.get("/api/packages/dice").content.decode()
    client.force_login(bob)
    assert str(tmp_path / "dice") in html(client.get("/packages/dice/"))


def test_an_invalid_package_shows_its_errors(client, tmp_path, add):
    issue = Issue(
        "PLUGIN.md",
        "/contributes/commands/0/action",
        "unknown-action",
        "roll is not in contributes.actions",
    )
    add("broken", errors=(issue,))
    page = html(client.get("/packages/broken/"))
    assert "invalid: this package failed validation" in page
    assert "PLUGIN.md:/contributes/commands/0/action" in page and "[unknown-action]" in page
    card = client.get("/api/packages/broken").json()
    assert card["state"] == "error" and card["errors"] == [issue.as_dict()]


def test_the_admin_shows_the_index_read_only(admin_client, add, rich_data):
    package = add("dice", rich_data)
    assert admin_client.get("/admin/catalogue/package/").status_code == 200
    response = admin_client.get(f"/admin/catalogue/package/{package.pk}/change/")
    assert response.status_code == 200 and b"cost:llm" in response.content
    assert admin_client.get("/admin/catalogue/package/add/").status_code == 403
    assert (
        admin_client.post(
            f"/admin/catalogue/package/{package.pk}/delete/", {"post": "yes"}
        ).status_code
        == 403
    )
