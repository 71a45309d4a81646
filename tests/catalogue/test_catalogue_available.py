"""The community directory's entries in the catalogue itself: listed as "available" after the
installed packages, found by the same search, left out by filters only the files could answer,
paged together, with a detail page and (for staff) an Install button that runs the preview.

Personas (tests/conftest.py): bob is staff, alice a player, the anonymous client a visitor.
"""

from __future__ import annotations

import re

import pytest
from catalogue_directory import directory_entry, directory_use
from django.db import connection
from django.test.utils import CaptureQueriesContext

pytestmark = pytest.mark.django_db


@pytest.fixture
def hub(tmp_path, add):
    """Installed: dice (tagged, runs code), notebook. Directory: lantern, compass, and dice
    (an entry for a package already installed, which must not show as available)."""
    add("dice", {"displayName": "Dice Roller", "tags": ["mode:dialogue"], "runtime": {}})
    add("notebook", {"displayName": "Notebook", "description": "Keeps notes."})
    directory_use(
        tmp_path / "directory",
        [
            directory_entry("lantern", description="Lights the scene with lantern glow."),
            directory_entry("compass", name="Compass", category="media", maintainer="community"),
            directory_entry("dice", description="The directory's dice."),
        ],
    )


def ids(page: str, attribute: str) -> list[str]:
    return re.findall(rf'{attribute}="([^"]+)"', page)


def test_available_entries_follow_the_installed_packages_with_a_badge(client, hub):
    page = client.get("/").content.decode()
    assert ids(page, "data-package") == ["dice", "notebook"]
    assert ids(page, "data-available") == ["compass", "lantern"]  # by name; dice is installed
    assert page.index('data-package="notebook"') < page.index('data-available="compass"')
    assert page.count('class="badge available-badge"') == 2
    assert page.count('class="badge installed-badge"') == 2
    assert "2 installed, 2 available to install" in page
    assert 'href="/packages/lantern/"' in page


def test_the_search_and_the_filters_work_for_both(client, hub):
    searched = client.get("/", {"q": "lantern"}).content.decode()
    assert ids(searched, "data-available") == ["lantern"] and ids(searched, "data-package") == []
    both = client.get("/", {"q": "dice"}).content.decode()
    assert ids(both, "data-package") == ["dice"] and ids(both, "data-available") == []
    # What only a package's files say (tags, cost, validity, source, core) no entry can match.
    for params in (
        {"tag": "mode:dialogue"},
        {"cost": "function"},
        {"state": "loaded"},
        {"source": "bundled"},
        {"kind": "core"},
        {"availability": "installed"},
    ):
        page = client.get("/", params).content.decode()
        assert ids(page, "data-available") == [], params
    assert ids(client.get("/", {"kind": "plugin"}).content.decode(), "data-available") == [
        "compass",
        "lantern",
    ]
    only = client.get("/", {"availability": "available"}).content.decode()
    assert ids(only, "data-package") == [] and ids(only, "data-available") == [
        "compass",
        "lantern",
    ]
    assert '<option value="available" selected>' in only


def test_the_api_lists_both_with_an_installed_field_and_pages_across_them(client, hub):
    body = client.get("/api/packages").json()
    assert body["count"] == 4
    assert [(i["id"], i["installed"]) for i in body["items"]] == [
        ("dice", True),
        ("notebook", True),
        ("compass", False),
        ("lantern", False),
    ]
    compass = body["items"][2]
    assert compass["source"] == "directory" and compass["state"] == "available"
    assert compass["directory"]["category"] == "media"
    assert (
        compass["directory"]["installUrl"]
        == "https://github.com/ada/pkgs/tree/main/plugins/compass"
    )
    assert body["items"][0]["directory"] is None
    # One offset runs over both: the second page of three starts inside the available ones.
    second = client.get("/api/packages", {"limit": 3, "offset": 3}).json()
    assert [i["id"] for i in second["items"]] == ["lantern"] and second["count"] == 4
    boundary = client.get("/api/packages", {"limit": 2, "offset": 1}).json()
    assert [i["id"] for i in boundary["items"]] == ["notebook", "compass"]
    only = client.get("/api/packages", {"availability": "available", "q": "glow"}).json()
    assert [i["id"] for i in only["items"]] == ["lantern"] and only["count"] == 1
    refused = client.get("/api/packages", {"availability": "somewhere"})
    assert refused.status_code == 422
    schema = client.get("/api/openapi.json").json()["components"]["schemas"]
    assert "installed" in schema["PackageListItemOut"]["required"]
    assert "installUrl" in schema["DirectoryBriefOut"]["properties"]


def test_an_available_entry_has_a_detail_page_and_staff_get_the_install_button(
    client, hub, alice, bob
):
    page = client.get("/packages/lantern/").content.decode()
    assert "Lights the scene with lantern glow." in page and "available-badge" in page
    assert "https://github.com/ada/pkgs" in page and "Install…" not in page
    # An id both installed and listed shows the installed package, not the entry.
    assert "The directory&#x27;s dice." not in client.get("/packages/dice/").content.decode()
    assert client.get("/packages/nowhere/").status_code == 404
    card = client.get("/api/packages/lantern")
    assert card.status_code == 404 and "the community directory offers it" in card.json()["message"]
    client.force_login(alice)
    assert "Install…" not in client.get("/").content.decode()
    client.force_login(bob)
    listing = client.get("/").content.decode()
    assert listing.count("Install…") == 2
    assert 'value="https://github.com/ada/pkgs/tree/main/plugins/lantern"' in listing
    detail = client.get("/packages/lantern/").content.decode()
    assert 'action="/installs/add/"' in detail and 'name="what" value="link"' in detail


def test_the_entry_speaks_the_page_language_when_the_directory_translates_it(client, tmp_path):
    directory_use(
        tmp_path / "d",
        [
            directory_entry(
                "lantern", translations={"zh-CN": {"name": "灯笼", "description": "照明"}}
            )
        ],
    )
    english = client.get("/api/packages").json()["items"][0]
    chinese = client.get("/api/packages", HTTP_ACCEPT_LANGUAGE="zh-hans").json()["items"][0]
    assert english["displayName"] == "Lantern" and chinese["displayName"] == "灯笼"
    assert chinese["description"] == "照明"
    page = client.get("/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "灯笼" in page and "0 个已安装，1 个可安装" in page and "已安装和可安装" in page
    assert "available to install" not in page


HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'


def test_directory_text_is_untrusted_and_escaped_everywhere(client, tmp_path, bob):
    directory_use(
        tmp_path / "d",
        [
            directory_entry(
                "lantern",
                name=f"Lantern {HOSTILE}",
                description=f"Glow {HOSTILE}",
                author=f"Eve {HOSTILE}",
                notes=f"Notes {HOSTILE}",
                license=f"MIT {HOSTILE}",
                locales=[HOSTILE],
            )
        ],
    )
    client.force_login(bob)
    for url in ("/", "/?q=lantern", "/packages/lantern/", "/installs/directory/lantern/"):
        page = client.get(url).content.decode()
        assert "<script>alert(1)</script>" not in page, url
        assert "<img src=x" not in page and 'onerror=alert(2)"' not in page, url
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page, url


def test_the_hub_refuses_entries_its_pages_could_not_hold_whatever_the_schema_says(tmp_path):
    from catalogue_directory import SCHEMA

    lax = {**SCHEMA, "properties": {**SCHEMA["properties"], "id": {"type": "string"}}}
    lax["properties"]["name"] = {}
    source = directory_use(
        tmp_path / "d",
        [
            directory_entry("Bad Id", path="plugins/bad"),
            directory_entry("long-name", name="x" * 301),
            directory_entry("number-name", name=7),
            directory_entry("fine"),
        ],
        schema=lax,
    )
    assert list(source.entries.values_list("entry_id", flat=True)) == ["fine"]
    problems = {p["file"].rsplit("/", 1)[-1]: p["message"] for p in source.problems}
    assert "id: not a package id" in problems["Bad Id.json"]
    assert "name: longer than 300 characters" in problems["long-name.json"]
    assert "name: must be a string" in problems["number-name.json"]


@pytest.mark.parametrize("url", ["/", "/?q=lantern", "/api/packages", "/packages/entry-1/"])
def test_the_query_count_does_not_grow_with_the_directory(
    client, tmp_path, add, django_assert_num_queries, url
):
    add("dice")
    entries = [directory_entry("lantern")] + [directory_entry(f"entry-{n}") for n in range(1, 3)]
    directory_use(tmp_path / "d", entries)
    with CaptureQueriesContext(connection) as small:
        assert client.get(url).status_code == 200
    directory_use(tmp_path / "d", [directory_entry(f"entry-{n}") for n in range(3, 40)])
    with django_assert_num_queries(len(small)):
        assert client.get(url).status_code == 200
