"""Preview and install from git, served over loopback HTTP by git http-backend in the test:
pinned commits and digests, signed tokens (tampered, expired), updates, collections, uninstall."""

from __future__ import annotations

import json

import pytest
from django.core import signing
from django.test import Client
from install_archives import plugin_files

from approvals.selectors import approval_current, approval_journal
from catalogue.models import Package
from installs import tokens
from installs.models import Installation

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client, bob) -> Client:
    client.force_login(bob)
    return client


def post(client: Client, url: str, body: dict):  # noqa: ANN201
    return client.post(url, json.dumps(body), content_type="application/json")


@pytest.fixture
def repo(git_server):  # noqa: ANN201
    git_server.repo("pkgs")
    files = {f"plugins/lantern/{k}": v for k, v in plugin_files("lantern", code=True).items()}
    files |= {f"plugins/compass/{k}": v for k, v in plugin_files("compass").items()}
    files["README.md"] = b"a monorepo\n"
    commit = git_server.commit("pkgs", files)
    return git_server, f"{git_server.url}/pkgs.git", commit


def test_a_tree_link_previews_the_package_pinned_to_a_commit_and_installs_it(hub_dirs, staff, repo):
    server, remote, commit = repo
    response = post(
        staff, "/api/install/plugin/github/preview", {"url": f"{remote}/tree/main/plugins/lantern"}
    )
    assert response.status_code == 200, response.content
    [item] = response.json()["items"]
    assert item["id"] == "lantern" and item["version"] == "1.0.0" and item["author"] == "Ada Author"
    assert item["hasServerCode"] is True
    assert item["source"] == {
        "repository": remote,
        "commit": commit,
        "path": "plugins/lantern",
        "digest": item["source"]["digest"],
        "tracking": {"kind": "branch", "ref": "main"},
    }
    assert item["expiresAt"] > tokens.now_ms()
    # The preview writes nothing where the catalogue looks.
    assert not (hub_dirs / "lantern").exists() and not Package.objects.exists()

    done = post(staff, "/api/install/plugin/github", {"token": item["token"], "acceptRisk": True})
    assert done.status_code == 201, done.content
    assert done.json() == {"ok": True, "kind": "plugin", "id": "lantern", "restartRequired": False}
    assert Package.objects.get(package_id="lantern").trust == "community"
    assert approval_current(package_key="lantern").state == "pending"
    row = Installation.objects.get(package_id="lantern")
    assert row.source["commit"] == commit and row.digest == item["source"]["digest"]
    listed = staff.get("/api/install/plugins").json()["items"]
    assert listed[0]["source"]["commit"] == commit and listed[0]["pendingUpdate"] is None
    page = staff.get("/packages/lantern/").content.decode()
    assert "Installed from" in page and commit[:12] in page and "follows branch main" in page


def test_a_repository_link_lists_every_package_and_follows_the_default_branch(
    hub_dirs, staff, repo
):
    _, remote, _ = repo
    items = post(staff, "/api/install/plugin/github/preview", {"url": remote}).json()["items"]
    assert [i["id"] for i in items] == ["compass", "lantern"]
    assert all(i["source"]["tracking"] == {"kind": "default-branch"} for i in items)


def test_install_refuses_when_the_branch_moved_and_the_files_changed(hub_dirs, staff, repo):
    server, remote, _ = repo
    item = post(
        staff, "/api/install/plugin/github/preview", {"url": f"{remote}/tree/main/plugins/lantern"}
    ).json()["items"][0]
    # Same commit id, different files: only a forged token can say so; signed tokens cannot be forged.
    data = signing.loads(item["token"], salt="installs.preview.v1")
    data["plugin"]["source"]["digest"] = "0" * 64
    forged = signing.dumps(data, salt="installs.preview.v1", compress=True)
    response = post(staff, "/api/install/plugin/github", {"token": forged, "acceptRisk": True})
    assert response.status_code == 409 and response.json()["code"] == "content_changed"
    assert not (hub_dirs / "lantern").exists()


def test_a_tampered_token_is_400_and_an_expired_one_409(hub_dirs, staff, repo, monkeypatch):
    _, remote, _ = repo
    item = post(
        staff, "/api/install/plugin/github/preview", {"url": f"{remote}/tree/main/plugins/lantern"}
    ).json()["items"][0]
    token = item["token"]
    tampered = token[:-3] + ("AAA" if not token.endswith("AAA") else "BBB")
    response = post(staff, "/api/install/plugin/github", {"token": tampered, "acceptRisk": True})
    assert response.status_code == 400 and response.json()["code"] == "bad_token"
    monkeypatch.setattr(tokens, "now_ms", lambda: item["expiresAt"] + 1)
    response = post(staff, "/api/install/plugin/github", {"token": token, "acceptRisk": True})
    assert response.status_code == 409 and response.json()["code"] == "preview_expired"
    assert not Installation.objects.exists()


def test_accept_risk_must_be_true(hub_dirs, staff, repo):
    response = post(staff, "/api/install/plugin/github", {"token": "x", "acceptRisk": False})
    assert response.status_code == 422


def test_plain_http_is_refused_for_a_host_that_is_not_loopback(hub_dirs, staff):
    response = post(
        staff, "/api/install/plugin/github/preview", {"url": "http://example.com/repo.git"}
    )
    assert response.status_code == 400 and "loopback" in response.json()["message"]
    response = post(
        staff, "/api/install/plugin/github/preview", {"url": "https://github.com/a/b/blob/main/x"}
    )
    assert response.status_code == 400


def test_a_missing_ref_is_404(hub_dirs, staff, repo):
    _, remote, _ = repo
    response = post(
        staff, "/api/install/plugin/github/preview", {"url": f"{remote}/tree/nope/plugins/lantern"}
    )
    assert response.status_code == 404


def test_an_update_is_found_previewed_installed_and_goes_through_approval(hub_dirs, staff, repo):
    server, remote, first = repo
    item = post(
        staff, "/api/install/plugin/github/preview", {"url": f"{remote}/tree/main/plugins/lantern"}
    ).json()["items"][0]
    assert (
        post(
            staff, "/api/install/plugin/github", {"token": item["token"], "acceptRisk": True}
        ).status_code
        == 201
    )
    assert post(staff, "/api/install/plugin/github/update/preview", {"id": "lantern"}).json() == {
        "status": "current"
    }

    changed = plugin_files(
        "lantern",
        version="1.1.0",
        code=True,
        extra=(
            "permissions:\n  http:\n    - origin: https://api.example.org\n      methods: [GET]\n"
            "contributes:\n  settings:\n    - key: volume\n      label: Volume\n      type: number\n      default: 3\n"
        ),
    )
    changed["server/extra.js"] = b"export const x = 1;\n"
    second = server.commit(
        "pkgs",
        {f"plugins/lantern/{k}": v for k, v in changed.items()},
        remove=("plugins/lantern/README.md",),
    )
    # The beat task's check records what it found (Covel's pendingUpdate).
    from installs.tasks import check_updates

    check_updates()
    pending = staff.get("/api/install/plugins").json()["items"][0]["pendingUpdate"]
    assert (
        pending["version"] == "1.1.0"
        and pending["source"]["commit"] == second
        and pending["error"] is None
    ), pending

    found = post(staff, "/api/install/plugin/github/update/preview", {"id": "lantern"}).json()
    assert found["status"] == "available"
    preview = found["preview"]
    assert (
        preview["previous"]["version"] == "1.0.0"
        and preview["previous"]["source"]["commit"] == first
    )
    assert preview["changes"] == {
        "added": ["server/extra.js"],
        "modified": ["PLUGIN.md"],
        "removed": ["README.md"],
    }
    assert any("api.example.org" in w for w in preview["hub"]["widened"])
    assert preview["hub"]["settingsAdded"] == ["volume"]

    done = post(
        staff, "/api/install/plugin/github/update", {"token": preview["token"], "acceptRisk": True}
    )
    assert done.status_code == 201, done.content
    package = Package.objects.get(package_id="lantern")
    assert package.version == "1.1.0"
    assert approval_current(package_key="lantern").version == "1.1.0"
    assert not (hub_dirs / "lantern" / "README.md").exists()
    row = Installation.objects.get(package_id="lantern")
    assert row.source["commit"] == second and row.pending_update is None
    # The same token again: the installation it was made for has changed.
    again = post(
        staff, "/api/install/plugin/github/update", {"token": preview["token"], "acceptRisk": True}
    )
    assert again.status_code == 409


def test_cancel_forgets_the_found_update(hub_dirs, staff, repo):
    server, remote, _ = repo
    item = post(
        staff, "/api/install/plugin/github/preview", {"url": f"{remote}/tree/main/plugins/lantern"}
    ).json()["items"][0]
    post(staff, "/api/install/plugin/github", {"token": item["token"], "acceptRisk": True})
    assert staff.delete("/api/install/plugin/github/update/lantern").status_code == 404
    server.commit("pkgs", {"plugins/lantern/notes.txt": b"new\n"})
    from installs.remote import update_record

    assert update_record(package_id="lantern")["pendingUpdate"] is not None
    assert staff.delete("/api/install/plugin/github/update/lantern").json() == {"ok": True}
    assert Installation.objects.get(package_id="lantern").pending_update is None


def test_a_pinned_install_reports_pinned(hub_dirs, staff, repo):
    _, remote, commit = repo
    item = post(
        staff,
        "/api/install/plugin/github/preview",
        {"url": f"{remote}/tree/{commit}/plugins/compass"},
    ).json()["items"][0]
    assert item["source"]["tracking"] == {"kind": "pinned", "ref": commit}
    post(staff, "/api/install/plugin/github", {"token": item["token"], "acceptRisk": True})
    assert post(staff, "/api/install/plugin/github/update/preview", {"id": "compass"}).json() == {
        "status": "pinned"
    }


def test_uninstall_removes_files_and_rows_keeps_the_journal_and_asks_before_detaching(
    hub_dirs, staff, repo, alice
):
    from sessions.models import Session
    from worlds.models import World

    _, remote, _ = repo
    item = post(
        staff, "/api/install/plugin/github/preview", {"url": f"{remote}/tree/main/plugins/lantern"}
    ).json()["items"][0]
    post(staff, "/api/install/plugin/github", {"token": item["token"], "acceptRisk": True})
    world = World.objects.create(world_id="w1", name="W")
    session = Session.objects.create(
        world=world, owner=alice, resolved_plugins=["lantern"], requested_plugins=["lantern"]
    )

    response = staff.delete("/api/install/plugin/lantern")
    assert response.status_code == 409 and response.json()["details"]["sessions"] == [
        str(session.pk)
    ]
    assert (hub_dirs / "lantern").is_dir()

    response = staff.delete("/api/install/plugin/lantern?detach=true")
    assert response.status_code == 200 and response.json()["detached"] == [str(session.pk)]
    assert not (hub_dirs / "lantern").exists()
    assert not Package.objects.filter(package_id="lantern").exists()
    assert not Installation.objects.exists()
    assert approval_journal(package_key="lantern").exists()
    session.refresh_from_db()
    assert session.resolved_plugins == [] and session.requested_plugins == []
    assert staff.delete("/api/install/plugin/lantern").status_code == 404


def test_a_collection_preview_and_a_batch_install_all_or_nothing(hub_dirs, staff, repo):
    server, remote, _ = repo
    server.commit(
        "pkgs",
        {
            "covel-collection.yaml": b"schemaVersion: 1\nid: kit\nname: Kit\nversion: '2'\nplugins:\n  - path: plugins/lantern\n  - path: plugins/compass\n"
        },
    )
    preview = post(staff, "/api/install/github/preview", {"url": remote}).json()
    assert preview["collection"] == {"id": "kit", "name": "Kit", "version": "2", "author": None}
    assert [i["id"] for i in preview["items"]] == ["lantern", "compass"]
    assert all(i["kind"] == "plugin" for i in preview["items"])
    tokens_ = [i["token"] for i in preview["items"]]

    # compass is taken by hand first: the batch changes nothing.
    single = post(
        staff, "/api/install/plugin/github/preview", {"url": f"{remote}/tree/main/plugins/compass"}
    ).json()["items"][0]
    post(staff, "/api/install/plugin/github", {"token": single["token"], "acceptRisk": True})
    refused = post(staff, "/api/install/github/batch", {"tokens": tokens_, "acceptRisk": True})
    assert refused.status_code == 409
    assert not (hub_dirs / "lantern").exists()

    staff.delete("/api/install/plugin/compass")
    done = post(staff, "/api/install/github/batch", {"tokens": tokens_, "acceptRisk": True})
    assert done.status_code == 201, done.content
    assert done.json() == {
        "ok": True,
        "installed": [{"kind": "plugin", "id": "lantern"}, {"kind": "plugin", "id": "compass"}],
        "restartRequired": False,
    }
    assert (
        post(
            staff, "/api/install/github/batch", {"tokens": ["t"] * 21, "acceptRisk": True}
        ).status_code
        == 422
    )
