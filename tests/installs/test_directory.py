"""The community directory in the covel-plugins registry format: validated entry by entry with
the registry validator's rules, listed as "available" beside installed packages, installable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from install_archives import plugin_files

from installs.directory import directory_source_set
from installs.models import DirectoryEntry

pytestmark = pytest.mark.django_db

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": [
        "id",
        "name",
        "description",
        "maintainer",
        "author",
        "repository",
        "path",
        "ref",
        "category",
        "locales",
        "license",
        "covelVersion",
        "status",
        "demo",
        "notes",
    ],
    "properties": {
        "id": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,63}$"},
        "name": {"type": "string", "minLength": 1},
        "description": {"type": "string", "minLength": 1},
        "maintainer": {"enum": ["official", "community"]},
        "author": {"type": "string", "minLength": 1},
        "repository": {
            "type": "string",
            "pattern": "^https://github\\.com/[A-Za-z0-9-]+/[A-Za-z0-9_.-]+$",
        },
        "path": {"type": "string", "pattern": "^([a-zA-Z0-9_-]+(/[a-zA-Z0-9_-]+)*)?$"},
        "ref": {"type": "string", "minLength": 1, "pattern": "^[A-Za-z0-9_./-]+$"},
        "category": {"enum": ["narrative", "gameplay", "world", "media", "tools", "authoring"]},
        "locales": {
            "type": "array",
            "minItems": 1,
            "uniqueItems": True,
            "items": {"type": "string", "pattern": "^[a-z]{2}(-[A-Z]{2})?$"},
        },
        "license": {"type": ["string", "null"], "minLength": 1},
        "covelVersion": {"type": ["string", "null"], "minLength": 1},
        "status": {"enum": ["active", "pending", "archived"]},
        "demo": {"type": ["string", "null"], "pattern": "^https://"},
        "notes": {"type": "string"},
        "translations": {"type": "object", "additionalProperties": {"type": "object"}},
    },
}


def entry(entry_id: str, **changes) -> dict:  # noqa: ANN003
    base = {
        "id": entry_id,
        "name": entry_id.title(),
        "description": f"The {entry_id} package.",
        "maintainer": "community",
        "author": "Ada",
        "repository": "https://github.com/ada/pkgs",
        "path": f"plugins/{entry_id}",
        "ref": "main",
        "category": "tools",
        "locales": ["en-US"],
        "license": "MIT",
        "covelVersion": ">=0.0.45",
        "status": "active",
        "demo": None,
        "notes": "",
    }
    return {**base, **changes}


def write_directory(root: Path, entries: dict[str, dict]) -> Path:
    (root / "registry" / "plugins").mkdir(parents=True)
    (root / "registry" / "schema.json").write_text(json.dumps(SCHEMA))
    for filename, data in entries.items():
        (root / "registry" / "plugins" / filename).write_text(json.dumps(data))
    return root


def test_entries_are_validated_like_the_registry_and_refusals_name_the_file(hub_dirs, tmp_path):
    folder = write_directory(
        tmp_path / "dir",
        {
            "lantern.json": entry("lantern"),
            "compass.json": entry("compass", category="media", status="pending", license=None),
            "wrong-name.json": entry("other"),
            "no-license.json": entry("no-license", license=None),
            "fake-official.json": entry("fake-official", maintainer="official"),
            "extra.json": {**entry("extra"), "colour": "blue"},
            "english.json": entry("english", translations={"en-US": {"name": "x"}}),
            "bad-ref.json": entry("bad-ref", ref="a//b"),
        },
    )
    source = directory_source_set(kind="folder", location=str(folder))
    assert sorted(DirectoryEntry.objects.values_list("entry_id", flat=True)) == [
        "compass",
        "lantern",
    ]
    problems = {p["file"].rsplit("/", 1)[-1]: p["message"] for p in source.problems}
    assert "file name must be the entry id" in problems["wrong-name.json"]
    assert "license and a Covel version" in problems["no-license.json"]
    assert "covel-ai organization" in problems["fake-official.json"]
    assert "unknown field colour" in problems["extra.json"]
    assert "English" in problems["english.json"]
    assert "invalid ref" in problems["bad-ref.json"]


def test_the_directory_page_shows_available_entries_with_filters_search_and_detail(
    hub_dirs, tmp_path, client, bob, django_assert_max_num_queries
):
    folder = write_directory(
        tmp_path / "dir",
        {"lantern.json": entry("lantern"), "compass.json": entry("compass", category="media")},
    )
    directory_source_set(kind="folder", location=str(folder))
    page = client.get("/installs/directory/").content.decode()
    assert "lantern" in page and "compass" in page and "available" in page
    assert "Install…" not in page  # visitors see the directory, staff install
    filtered = client.get("/installs/directory/?category=media").content.decode()
    assert 'data-entry="compass"' in filtered and 'data-entry="lantern"' not in filtered
    searched = client.get("/installs/directory/?q=lantern").content.decode()
    assert 'data-entry="lantern"' in searched and 'data-entry="compass"' not in searched
    detail = client.get("/installs/directory/lantern/").content.decode()
    assert "https://github.com/ada/pkgs" in detail and "plugins/lantern" in detail
    client.force_login(bob)
    assert "Install…" in client.get("/installs/directory/").content.decode()
    # The catalogue lists what the directory offers beside what is installed.
    listing = client.get("/").content.decode()
    assert 'data-available="lantern"' in listing and "available-badge" in listing


def test_a_directory_in_a_git_repository_and_its_install_button_runs_the_preview(
    hub_dirs, git_server, client, bob
):
    git_server.repo("registry")
    files = {"registry/schema.json": json.dumps(SCHEMA).encode()}
    commit = git_server.commit("registry", files)
    # Entries point at github.com, which tests never reach: the registry repository itself holds
    # the package, and the entry is read back from the database for its install link.
    source = directory_source_set(kind="git", location=f"{git_server.url}/registry.git")
    assert source.commit == commit and source.entries.count() == 0
    git_server.commit(
        "registry", {"registry/plugins/lantern.json": json.dumps(entry("lantern")).encode()}
    )
    from installs.directory import directory_sync

    directory_sync(source=source)
    assert source.entries.get().entry_id == "lantern"
    # The button posts the entry's install link to the add page, which previews it.
    git_server.repo("pkgs")
    git_server.commit(
        "pkgs", {f"plugins/lantern/{k}": v for k, v in plugin_files("lantern").items()}
    )
    DirectoryEntry.objects.update(repository=f"{git_server.url}/pkgs.git")
    client.force_login(bob)
    page = client.get("/installs/directory/lantern/").content.decode()
    assert f"{git_server.url}/pkgs.git/tree/main/plugins/lantern" in page
    preview = client.post(
        "/installs/add/",
        {"what": "link", "url": f"{git_server.url}/pkgs.git/tree/main/plugins/lantern"},
    ).content.decode()
    assert "Install selected" in preview and "lantern" in preview and "Ada Author" in preview


def test_only_staff_may_point_the_hub_at_a_directory(hub_dirs, client, alice, tmp_path):
    assert (
        client.put(
            "/api/install/directory",
            '{"kind": "folder", "location": "/tmp"}',
            content_type="application/json",
        ).status_code
        == 401
    )
    client.force_login(alice)
    assert (
        client.put(
            "/api/install/directory",
            '{"kind": "folder", "location": "/tmp"}',
            content_type="application/json",
        ).status_code
        == 403
    )
    assert (
        client.post(
            "/installs/directory/source", {"kind": "folder", "location": "/tmp"}
        ).status_code
        == 403
    )


def test_a_schema_with_an_unknown_keyword_fails_closed(hub_dirs, tmp_path):
    from installs.directory import EntryRefused, validate

    with pytest.raises(EntryRefused, match="unsupported keyword format"):
        validate({"type": "string", "format": "uri"}, "x", "entry")
    folder = write_directory(tmp_path / "dir", {"lantern.json": entry("lantern")})
    schema = {
        **SCHEMA,
        "properties": {**SCHEMA["properties"], "id": {"type": "string", "maxLength": 3}},
    }
    (folder / "registry" / "schema.json").write_text(json.dumps(schema))
    source = directory_source_set(kind="folder", location=str(folder))
    assert source.entries.count() == 0 and "maxLength" in source.problems[0]["message"]
