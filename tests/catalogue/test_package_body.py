"""The PLUGIN.md body of a package without an inline runtime (its runtimes live in
runtimes/<id>/RUNTIME.md, or it has none) is stored on Package.body and shown on the detail
page's Overview tab as Markdown for people (rendered, then sanitised), never in the prompt section. Rows indexed before the column existed (NULL)
are re-indexed once by the next sync.

Personas: the anonymous visitor reads every detail page; nothing here needs a login.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from catalogue.manifest.types import Issue
from catalogue.models import Package
from catalogue.services import packages_sync

pytestmark = pytest.mark.django_db

EVIL = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


def prompt_section(client, package_id: str) -> str:
    response = client.get(f"/packages/{package_id}/")
    assert response.status_code == 200
    match = re.search(
        r'<section class="card prompt-text" aria-labelledby="prompt-h">(.*?)</section>',
        response.content.decode(),
        re.S,
    )
    return match.group(1) if match else ""


def notes_section(client, package_id: str) -> str:
    response = client.get(f"/packages/{package_id}/")
    assert response.status_code == 200
    match = re.search(
        r'<section class="card readme package-body" aria-labelledby="notes-h">(.*?)</section>',
        response.content.decode(),
        re.S,
    )
    return match.group(1) if match else ""


def test_chronicle_body_is_stored_and_shown_collapsed(client, real_plugin_dirs):
    django_settings.COVEL_BUNDLED_PLUGINS_DIR = Path(django_settings.BASE_DIR) / "plugins"
    assert not packages_sync().invalid
    chronicle = Package.objects.get(package_id="chronicle")
    assert chronicle.body.strip().startswith("Chronicle has no inline runtime")
    # An inline runtime owns its body (Runtime.prompt): it is not kept twice.
    assert Package.objects.get(package_id="rapport").body == ""
    assert Package.objects.get(package_id="rapport").runtimes.get().prompt.strip()

    section = notes_section(client, "chronicle")
    assert (
        "<p>Chronicle has no inline runtime; its three runtimes live under <code>runtimes/</code>:"
        in section
    )
    assert "Chronicle has no inline runtime" not in prompt_section(client, "chronicle")
    assert notes_section(client, "rapport") == ""


def test_a_package_with_no_runtime_shows_its_body(client, add):
    add("notes", body="Read the rules first.")
    assert Package.objects.get(package_id="notes").body == "Read the rules first."
    assert "<p>Read the rules first.</p>" in notes_section(client, "notes")


def test_an_empty_or_invalid_body_shows_no_section(client, add):
    add("blank", body="  \n\n ")
    assert notes_section(client, "blank") == ""
    issue = Issue("PLUGIN.md", "/description", "required", "description is required")
    add("broken", body="Never parsed.", errors=(issue,))
    assert Package.objects.get(package_id="broken").body == ""
    assert notes_section(client, "broken") == ""


def test_a_hostile_body_is_escaped(client, add):
    add("evil", body=f"Notes </pre></details>{EVIL}")
    section = notes_section(client, "evil")
    assert f"<p>Notes &lt;/pre&gt;&lt;/details&gt;{ESCAPED}</p>" in section
    page = client.get("/packages/evil/").content.decode()
    assert "<script>alert(1)" not in page


def test_a_concealed_inline_runtime_body_is_not_stored_as_notes(client, add):
    add(
        "secret",
        {"runtime": {"schedule": {"stage": "post-turn"}, "io": {"concealed": True}}},
        body="The murderer is the butler.",
    )
    assert Package.objects.get(package_id="secret").body == ""
    assert "butler" not in client.get("/packages/secret/").content.decode()


def test_a_row_indexed_before_the_body_column_is_reindexed_once(plugin_dirs, client):
    plugin_dirs.add("bundled", "notes", body="Read the rules first.")
    plugin_dirs.add("bundled", "other")
    assert packages_sync().indexed == ["notes", "other"]
    # What migration 0003 leaves on an existing row: NULL, with the content hash unchanged.
    Package.objects.filter(package_id="notes").update(body=None)
    assert "Read the rules first." not in client.get("/packages/notes/").content.decode()

    loads_before = len(plugin_dirs.loads)
    summary = packages_sync()
    assert summary.indexed == ["notes"] and summary.unchanged == ["other"]
    assert plugin_dirs.loads[loads_before:] == ["notes"]
    assert Package.objects.get(package_id="notes").body == "Read the rules first."
    assert "Read the rules first." in notes_section(client, "notes")

    summary = packages_sync()
    assert summary.indexed == [] and sorted(summary.unchanged) == ["notes", "other"]
