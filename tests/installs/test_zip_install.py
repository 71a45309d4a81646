"""POST /api/install/plugin: a ZIP built in the test, installed, indexed, queued for approval."""

from __future__ import annotations

import pytest
from django.test import Client
from install_archives import make_zip, plugin_files

from approvals.selectors import approval_current
from catalogue.models import Package
from installs.models import Installation

pytestmark = pytest.mark.django_db


def upload(client: Client, data: bytes, url: str = "/api/install/plugin"):  # noqa: ANN201
    from django.core.files.uploadedfile import SimpleUploadedFile

    return client.post(url, {"file": SimpleUploadedFile("pkg.zip", data, "application/zip")})


@pytest.fixture
def staff(client, bob) -> Client:
    client.force_login(bob)
    return client


def test_it_installs_a_zip_and_the_catalogue_shows_it_at_once(hub_dirs, staff, bob):
    response = upload(staff, make_zip(plugin_files("lantern", code=True)))
    assert response.status_code == 201, response.content
    assert response.json() == {
        "ok": True,
        "kind": "plugin",
        "id": "lantern",
        "restartRequired": False,
    }
    package = Package.objects.get(package_id="lantern")
    assert package.trust == Package.Trust.COMMUNITY and package.state == Package.State.LOADED
    assert (hub_dirs / "lantern" / "PLUGIN.md").is_file()
    assert (hub_dirs / "lantern" / ".covel-install.json").is_file()
    # Community code: it waits for staff in the approval queue like a copied folder.
    request = approval_current(package_key="lantern")
    assert request is not None and request.state == "pending"
    row = Installation.objects.get(package_id="lantern")
    assert row.kind == "zip" and row.installed_by == bob and len(row.digest) == 64
    assert staff.get("/api/install/plugins").json()["items"] == [
        {"id": "lantern", "version": "1.0.0", "source": None, "pendingUpdate": None}
    ]
    page = staff.get("/packages/lantern/")
    assert b"Installed from" in page.content and b"ZIP upload" in page.content


def test_a_second_install_of_the_same_id_is_409_and_changes_nothing(hub_dirs, staff):
    assert upload(staff, make_zip(plugin_files("lantern"))).status_code == 201
    before = (hub_dirs / "lantern" / "PLUGIN.md").read_bytes()
    response = upload(staff, make_zip(plugin_files("lantern", version="2.0.0")))
    assert response.status_code == 409
    assert response.json()["code"] == "already_installed"
    assert (hub_dirs / "lantern" / "PLUGIN.md").read_bytes() == before


def test_a_bundled_id_cannot_be_taken(hub_dirs, staff):
    response = upload(staff, make_zip(plugin_files("dice")))
    assert response.status_code == 409
    assert response.json()["code"] == "reserved_id"
    assert not (hub_dirs / "dice").exists()


def test_package_json_name_must_agree_with_the_plugin_md_id(hub_dirs, staff):
    files = plugin_files("lantern")
    files["package.json"] = b'{"name": "@covel/plugin-torch"}'
    response = upload(staff, make_zip(files))
    assert response.status_code == 400
    body = response.json()
    assert (
        body["code"] == "id_mismatch"
        and "torch" in body["message"]
        and "lantern" in body["message"]
    )
    assert body["details"]["issues"][0]["file"] == "package.json"
    files["package.json"] = b'{"name": "@covel/plugin-lantern"}'
    assert upload(staff, make_zip(files)).status_code == 201


def test_an_invalid_manifest_names_file_path_and_rule_and_writes_nothing(hub_dirs, staff):
    files = plugin_files("lantern", extra="colour: blue\n")
    response = upload(staff, make_zip(files))
    assert response.status_code == 400
    issue = response.json()["details"]["issues"][0]
    assert issue["file"] == "PLUGIN.md" and issue["path"] and issue["code"]
    assert not (hub_dirs / "lantern").exists()
    assert [p.name for p in hub_dirs.iterdir() if not p.name.startswith(".covel-pending")] == []
    assert not Package.objects.filter(package_id="lantern").exists()


def test_a_player_gets_403_and_an_anonymous_client_401(hub_dirs, client, alice):
    data = make_zip(plugin_files("lantern"))
    assert upload(client, data).status_code == 401
    assert client.get("/api/install/plugins").status_code == 401
    client.force_login(alice)
    response = upload(client, data)
    assert response.status_code == 403 and response.json()["code"] == "staff_only"
    assert client.delete("/api/install/plugin/lantern").status_code == 403
    assert not (hub_dirs / "lantern").exists()


def test_a_missing_file_field_is_400(hub_dirs, staff):
    response = staff.post("/api/install/plugin", {})
    assert response.status_code == 400 and "file" in response.json()["message"]


def test_the_installed_list_costs_the_same_queries_for_one_or_four_packages(hub_dirs, staff):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    upload(staff, make_zip(plugin_files("alpha")))
    with CaptureQueriesContext(connection) as one:
        assert staff.get("/installs/").status_code == 200
    for name in ("beta", "gamma", "delta"):
        upload(staff, make_zip(plugin_files(name)))
    with CaptureQueriesContext(connection) as four:
        page = staff.get("/installs/")
    assert b"delta" in page.content
    assert len(four) == len(one)
    with CaptureQueriesContext(connection) as api:
        assert len(staff.get("/api/install/plugins").json()["items"]) == 4
    assert len(api) <= len(one)


def test_the_add_page_previews_an_uploaded_zip_before_writing_it(hub_dirs, staff):
    from django.core.files.uploadedfile import SimpleUploadedFile

    extra = "permissions:\n  http:\n    - origin: https://api.example.org\n      methods: [GET]\n"
    data = make_zip(plugin_files("lantern", code=True, extra=extra))
    page = staff.post("/installs/add/", {"what": "zip", "file": SimpleUploadedFile("l.zip", data)})
    text = page.content.decode()
    assert "Ada Author" in text and "https://api.example.org" in text and "server/index.js" in text
    assert not (hub_dirs / "lantern").exists() and not Package.objects.exists()
    token = text.split('name="zip_token" value="', 1)[1].split('"', 1)[0]
    # Without ticking the box nothing happens.
    staff.post("/installs/add/confirm", {"zip_token": token})
    assert not (hub_dirs / "lantern").exists()
    done = staff.post("/installs/add/confirm", {"zip_token": token, "accept_risk": "yes"})
    assert done.status_code == 302 and done["Location"] == "/packages/lantern/"
    assert Installation.objects.get(package_id="lantern").kind == "zip"
    # The same token again: the upload is gone, nothing is installed twice.
    again = staff.post(
        "/installs/add/confirm", {"zip_token": token, "accept_risk": "yes"}, follow=True
    )
    assert Installation.objects.count() == 1
    assert b"upload it again" in again.content


def test_a_hostile_zip_on_the_add_page_names_the_entry(hub_dirs, staff):
    from django.core.files.uploadedfile import SimpleUploadedFile

    data = make_zip({**plugin_files("lantern"), "server/.covel-install.json": b"{}"})
    page = staff.post("/installs/add/", {"what": "zip", "file": SimpleUploadedFile("l.zip", data)})
    assert (
        b"server/.covel-install.json" in page.content
        and b"written by the installer" in page.content
    )
    assert not (hub_dirs / "lantern").exists() and not Package.objects.exists()


def test_players_cannot_open_the_staff_pages(hub_dirs, client, alice):
    assert client.get("/installs/add/").status_code == 302  # anonymous: sent to log in
    client.force_login(alice)
    for url in (
        "/installs/",
        "/installs/add/",
        "/installs/packages/x/update/",
        "/installs/packages/x/remove/",
    ):
        assert client.get(url).status_code == 403, url


def test_installed_code_is_unusable_until_staff_approve_it(hub_dirs, staff, bob):
    from approvals.selectors import package_usability
    from approvals.services import approval_decide

    assert upload(staff, make_zip(plugin_files("lantern", code=True))).status_code == 201
    waiting = package_usability(package_id="lantern")
    assert not waiting.usable and waiting.state == "pending"
    approval_decide(
        request_id=approval_current(package_key="lantern").pk, decision="allow", actor=bob
    )
    assert package_usability(package_id="lantern").usable
