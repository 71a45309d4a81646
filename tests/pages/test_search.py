"""Search: misspelt words still find the package, CJK words find Chinese names, literal
matches rank above corrected ones, and a search costs the same queries for 10 or 50 packages.

Runs on the embedded SQLite (the portable fuzzy match) and, with DATABASE_URL pointing at
PostgreSQL, on pg_trgm."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from catalogue.search import close_words, trigram_available

pytestmark = pytest.mark.django_db


def ids(client, query: str) -> list[str]:
    answer = client.get("/api/packages", {"q": query})
    assert answer.status_code == 200
    return [item["id"] for item in answer.json()["items"]]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("rapprot", "rapport"),
        ("satchle", "satchel"),
        ("wether", "weather"),
        ("Notebok", "notebook"),
        ("storytelr", "storyteller"),
        ("chronilce", "chronicle"),
        ("sacthel", "satchel"),
    ],
)
def test_a_misspelt_word_still_finds_the_package(client, fresh_install, query, expected):
    assert ids(client, query)[0] == expected


def test_literal_matches_rank_above_corrected_ones(client, fresh_install):
    found = ids(client, "dice")
    assert found[0] == "dice"
    # A word nobody wrote and nothing resembles finds nothing.
    assert ids(client, "zzzzqx") == []
    # Short words are never corrected: "mop" is not "map".
    assert ids(client, "mop") == []


def test_a_cjk_query_finds_the_chinese_name(client, fresh_install):
    assert ids(client, "好感") == ["rapport"]
    assert ids(client, "好感度") == ["rapport"]


def test_the_python_fallback_corrects_only_unknown_words():
    vocabulary = {"rapport", "satchel", "dice", "notebook"}
    assert close_words(["rapprot", "dice", "map"], vocabulary) == {"rapprot": ["rapport"]}
    assert close_words(["notebookz"], vocabulary) == {"notebookz": ["notebook"]}
    assert close_words(["好感"], vocabulary) == {}


def test_a_search_costs_the_same_queries_for_more_packages(
    client, fresh_install, tmp_path, settings, django_assert_num_queries
):
    def measure() -> int:
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as captured:
            assert client.get("/?q=affinty").status_code == 200
            assert client.get("/api/packages", {"q": "inventry helper"}).status_code == 200
        return len(captured)

    community = tmp_path / "more"
    settings.COVEL_COMMUNITY_PLUGIN_DIRS = [community]

    def add(first: int, last: int) -> None:
        for n in range(first, last):
            folder = community / f"extra-{n}"
            folder.mkdir(parents=True)
            (folder / "PLUGIN.md").write_text(
                f"---\nid: extra-{n}\nversion: 1.0.0\ndisplayName: Inventory helper {n}\n"
                f"description: Keeps track of things, number {n}.\n---\n"
            )
        call_command("sync_packages", verbosity=0)

    add(0, 2)
    small = measure()
    add(2, 42)
    assert measure() == small


def test_trigram_is_used_on_postgresql_when_installed():
    from django.db import connection

    assert trigram_available() == (connection.vendor == "postgresql")


def test_postgresql_corrects_a_misspelt_description_word_through_its_index(client, fresh_install):
    from django.db import connection

    if connection.vendor != "postgresql":
        # The portable fallback corrects names and ids only: a description word stays literal.
        assert ids(client, "mysteris") == []
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = 'catalogue_package_search_trgm'")
        assert cursor.fetchone() is not None
    # "mysteries" is only in story-agent's description, never in a name.
    assert ids(client, "mysteris") == ["story-agent"]
