"""Search at scale (issue 25): typed words, the start of a word and misspelt words find the
right packages through the database's index (FTS5 trigram on SQLite, pg_trgm on PostgreSQL),
the index and the spelling vocabulary follow every package added, changed or removed, and a
search costs the same queries for 3 or 40 packages, whether the vocabulary is cached or not.

Runs on the embedded SQLite and, with DATABASE_URL, on PostgreSQL."""

from __future__ import annotations

import random
import shutil
import string

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from catalogue.models import Package
from catalogue.search import (
    Vocabulary,
    close_words,
    fts_available,
    one_edit_apart,
    one_edit_variants,
    vocabulary_current,
    vocabulary_forget,
)
from catalogue.search_index import FTS_TABLE, fts_ensure
from catalogue.services import packages_sync

pytestmark = pytest.mark.django_db

PACKAGES = {
    "weather-station": ("Weather Station", "Rain and wind for the story."),
    "narrator-voice": ("Narrator Voice", "A narrative tone for every scene."),
    "satchel": ("Satchel", "An inventory of what the hero carries."),
}


def add(dirs, package_id: str, name: str, description: str) -> None:
    dirs.add("bundled", package_id, {"displayName": name, "description": description})


@pytest.fixture
def catalogue(plugin_dirs):
    for package_id, (name, description) in PACKAGES.items():
        add(plugin_dirs, package_id, name, description)
    packages_sync()
    return plugin_dirs


def ids(client, query: str) -> list[str]:
    answer = client.get("/api/packages", {"q": query})
    assert answer.status_code == 200, answer.content
    return [item["id"] for item in answer.json()["items"]]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("weather", ["weather-station"]),  # a typed word
        ("rain wind", ["weather-station"]),  # every word must match, in the description too
        ("narrat", ["narrator-voice"]),  # the start of a word
        ("weath", ["weather-station"]),
        ("invent", ["satchel"]),
        ("weathr", ["weather-station"]),  # misspelt: a letter dropped
        ("wether", ["weather-station"]),
        ("satchle", ["satchel"]),  # two letters swapped
        ("narator", ["narrator-voice"]),
        ("zzzqx", []),
    ],
)
def test_typed_prefix_and_misspelt_words_find_their_package(client, catalogue, query, expected):
    assert ids(client, query) == expected


def test_the_index_answers_on_sqlite_and_the_trigram_index_on_postgresql(catalogue):
    if connection.vendor == "sqlite":
        assert fts_available("default")
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s", ['"rain and"']
            )
            found = [row[0] for row in cursor.fetchall()]
        assert found == [Package.objects.get(package_id="weather-station").pk]
    else:
        assert not fts_available("default")
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT 1 FROM pg_indexes WHERE indexname = 'catalogue_package_search_trgm'"
            )
            assert cursor.fetchone() is not None


def test_the_index_follows_packages_added_changed_and_removed(client, catalogue):
    # Added: found by a typed word, a prefix and a misspelling of its name.
    add(catalogue, "lantern", "Lantern", "Light in the dungeon.")
    packages_sync()
    assert ids(client, "dungeon") == ["lantern"]
    assert ids(client, "lante") == ["lantern"]
    assert ids(client, "lanetrn") == ["lantern"]
    # Changed: the old words are gone from the index, the new ones are in it.
    add(catalogue, "lantern", "Glowlamp", "Light in the cavern.")
    packages_sync()
    assert ids(client, "dungeon") == []
    assert ids(client, "cavern") == ["lantern"]
    assert ids(client, "glowlmap") == ["lantern"]  # the vocabulary has the new name
    assert ids(client, "lanetrn") == ["lantern"]  # still its id
    # Removed: nothing finds it, not even a misspelling.
    shutil.rmtree(catalogue.bundled / "lantern")
    packages_sync()
    assert ids(client, "cavern") == []
    assert ids(client, "glowlmap") == []
    assert not Package.objects.filter(package_id="lantern").exists()


def test_rows_written_in_bulk_are_indexed_too(client, catalogue):
    # The sync may insert, update and delete in bulk (no save signals): the database keeps
    # the index in step, and the vocabulary notices the new row count.
    vocabulary_current()  # cached before the bulk writes
    template = Package.objects.get(package_id="satchel")
    template.pk = None
    template.package_id, template.display_name, template.name_key = "quiver", "Quiver", "quiver"
    template.search_text = "quiver arrows for the hunter"
    template.source_dir = "/nowhere/quiver"
    Package.objects.bulk_create([template])
    assert ids(client, "arrows") == ["quiver"]
    assert ids(client, "quivr") == ["quiver"]
    Package.objects.filter(package_id="quiver").update(search_text="quiver bolts")
    assert ids(client, "arrows") == []
    assert ids(client, "bolts") == ["quiver"]
    Package.objects.filter(package_id="quiver").delete()
    assert ids(client, "bolts") == []


def test_a_search_costs_the_same_queries_for_3_or_40_packages_cached_or_not(client, catalogue):
    searches = ["/api/packages?q=weather", "/api/packages?q=narrat", "/api/packages?q=weathr"]
    pages = ["/?q=wether", "/"]

    def counts(cold: bool) -> list[int]:
        found = []
        for url in searches + pages:
            if cold:
                vocabulary_forget()
            with CaptureQueriesContext(connection) as captured:
                assert client.get(url).status_code == 200
            found.append(len(captured))
        return found

    small = counts(cold=True)
    assert counts(cold=False) == small
    for n in range(40):
        add(catalogue, f"weather-{n}", f"Weather helper {n}", f"Narrative weather number {n}.")
    packages_sync()
    assert counts(cold=False) == small
    assert counts(cold=True) == small


def test_a_lost_trigger_is_put_back_and_the_index_refilled(client, catalogue):
    if connection.vendor != "sqlite":
        assert fts_ensure(connection) is False  # PostgreSQL's index needs no triggers
        return
    with connection.cursor() as cursor:  # what a table rebuild by a later migration does
        cursor.execute(f"DROP TRIGGER {FTS_TABLE}_insert")
    add(catalogue, "lantern", "Lantern", "Light in the dungeon.")
    packages_sync()
    assert ids(client, "dungeon") == []  # written while the trigger was missing
    assert fts_ensure(connection) is True  # post_migrate calls it after every migrate
    assert ids(client, "dungeon") == ["lantern"]


def test_the_vocabulary_finds_what_the_full_scan_finds():
    # Vocabulary looks at a few candidates; close_words over every word is the rule itself.
    rng = random.Random(25)
    letters = string.ascii_lowercase
    words = {"".join(rng.choices(letters, k=rng.randint(3, 11))) for _ in range(600)}
    words |= {"storyteller", "chronicle", "weather", "satchel", "dice", "rapport"}
    vocabulary = Vocabulary.of(words)
    typos = ["storytelr", "chronilce", "wether", "satchle", "dise", "rapprot"]
    for word in rng.sample(sorted(words), 150):
        typo = list(word)
        spot = rng.randrange(len(typo))
        edit = rng.choice(["change", "drop", "add", "swap"])
        if edit == "change":
            typo[spot] = rng.choice(letters)
        elif edit == "drop":
            del typo[spot]
        elif edit == "add":
            typo.insert(spot, rng.choice(letters))
        elif spot + 1 < len(typo):
            typo[spot], typo[spot + 1] = typo[spot + 1], typo[spot]
        typos.append("".join(typo))
    for typo in typos:
        assert vocabulary.close_words([typo]) == close_words([typo], words), typo


def test_one_edit_variants_are_exactly_the_strings_one_edit_away():
    variants = one_edit_variants("dice")
    assert {"dce", "idce", "dise", "dicee", "dic"} <= variants
    assert "dice" not in variants
    assert all(one_edit_apart("dice", v) for v in variants)
