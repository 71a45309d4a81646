"""Search: a one-letter mistake in a short word still finds the package, and a search that
finds nothing suggests the nearest names on the list page."""

from __future__ import annotations

import pytest

from catalogue.search import close_words, nearest_names, one_edit_apart

pytestmark = pytest.mark.django_db


def ids(client, query: str) -> list[str]:
    answer = client.get("/api/packages", {"q": query})
    assert answer.status_code == 200
    return [item["id"] for item in answer.json()["items"]]


@pytest.mark.parametrize("query", ["dise", "dcie", "dicr", "dicee"])
def test_a_short_word_with_one_mistake_finds_the_package(client, fresh_install, query):
    assert ids(client, query)[:1] == ["dice"]


def test_one_edit_means_one_letter_changed_added_dropped_or_swapped():
    assert one_edit_apart("dise", "dice")
    assert one_edit_apart("dcie", "dice")
    assert one_edit_apart("dic", "dice")
    assert one_edit_apart("dicee", "dice")
    assert not one_edit_apart("dcei", "dice")  # two swaps
    assert not one_edit_apart("dice", "dice")
    assert not one_edit_apart("mapx", "mop")


def test_three_letter_words_are_still_never_corrected():
    assert close_words(["mop", "dic"], {"map", "dice"}) == {}


def test_nearest_names_suggests_only_plausible_ids():
    names = {"dice": "Dice", "weather": "Weather", "notebook": "Notebook"}
    assert nearest_names("  ", names) == []
    assert nearest_names("wheather", names)[:1] == ["weather"]
    assert nearest_names("zzzzqx", names) == []


def test_an_empty_result_suggests_the_nearest_names(client, fresh_install):
    page = client.get("/", {"q": "notbk"}).content.decode()
    assert "No package matches." in page
    assert 'data-suggestion="notebook"' in page
    assert "q=notebook" in page
    # A search that finds something shows no suggestion line.
    assert "data-suggestion" not in client.get("/", {"q": "dice"}).content.decode()
