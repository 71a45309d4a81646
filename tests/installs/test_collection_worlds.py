"""A collection's worlds, installed as Covel installs them (github-collection.ts): previewed
beside its plugins with their own "world-install" token, installed after the plugins as one
unit, refused before anything is written when a world is taken or does not validate, with the
same archive limits and hostile-file rules, into the hub's worlds (indexed at once).

Personas (tests/conftest.py): bob is staff; alice a player."""

from __future__ import annotations

import json
import os

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from install_archives import make_zip, plugin_files, world_files

from catalogue.models import Package
from installs.models import Installation
from worlds.models import World

pytestmark = pytest.mark.django_db

KIT = b"""schemaVersion: 1
id: kit
name: Kit
plugins:
  - path: plugins/lantern
worlds:
  - path: worlds/harbor
"""


@pytest.fixture
def staff(client, bob) -> Client:
    client.force_login(bob)
    return client


def post(client: Client, url: str, body: dict):  # noqa: ANN201
    return client.post(url, json.dumps(body), content_type="application/json")


def kit_files(world: dict[str, bytes] | None = None) -> dict[str, bytes]:
    files = {"covel-collection.yaml": KIT}
    files |= {f"plugins/lantern/{k}": v for k, v in plugin_files("lantern").items()}
    world = world if world is not None else world_files("harbor", plugins=("lantern",))
    files |= {f"worlds/harbor/{k}": v for k, v in world.items()}
    return files


@pytest.fixture
def kit(git_server):  # noqa: ANN201
    git_server.repo("kit")
    git_server.commit("kit", kit_files())
    return git_server, f"{git_server.url}/kit.git"


def worlds_written(hub_dirs) -> list[str]:
    folder = hub_dirs.parent / "installed-worlds"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_a_collection_previews_its_world_and_installs_it_after_its_plugin(hub_dirs, staff, kit):
    server, remote = kit
    preview = post(staff, "/api/install/github/preview", {"url": remote}).json()
    assert [(i["kind"], i["id"]) for i in preview["items"]] == [
        ("plugin", "lantern"),
        ("world", "harbor"),
    ]
    world = preview["items"][1]
    assert world["hasServerCode"] is False and world["version"] == "1.0"
    assert world["author"] == "Ada Author" and world["description"] == "A world to play in."
    assert world["source"]["path"] == "worlds/harbor" and len(world["source"]["digest"]) == 64
    assert world["hub"]["plugins"] == ["lantern"]
    assert preview["problems"] == []  # the world's package comes with the collection
    assert worlds_written(hub_dirs) == [] and not World.objects.exists()  # a preview writes nothing

    done = post(
        staff,
        "/api/install/github/batch",
        {"tokens": [i["token"] for i in preview["items"]], "acceptRisk": True},
    )
    assert done.status_code == 201, done.content
    assert done.json() == {
        "ok": True,
        "installed": [{"kind": "plugin", "id": "lantern"}, {"kind": "world", "id": "harbor"}],
        "restartRequired": False,
    }
    harbor = World.objects.get(world_id="harbor")
    assert harbor.state == World.State.LOADED and harbor.plugins == ["lantern"]
    assert [c["id"] for c in harbor.characters] == ["wren"]
    folder = hub_dirs.parent / "installed-worlds" / "harbor"
    assert harbor.source_dir == str(folder)
    receipt = json.loads((folder / ".covel-install.json").read_text())
    assert receipt["kind"] == "world" and receipt["source"]["commit"] == world["source"]["commit"]
    assert receipt["installedBy"] == "bob"
    assert worlds_written(hub_dirs) == ["harbor"]  # no staging folder left
    assert staff.get("/worlds/harbor/").status_code == 200
    # A world's token is not a plugin's: the single-plugin install refuses it.
    single = post(
        staff, "/api/install/plugin/github", {"token": world["token"], "acceptRisk": True}
    )
    assert single.status_code == 400 and single.json()["code"] == "bad_token"


def test_a_taken_world_refuses_the_whole_batch_before_anything_is_written(hub_dirs, staff, kit):
    server, remote = kit
    preview = post(staff, "/api/install/github/preview", {"url": remote}).json()
    World.objects.create(world_id="harbor", name="Harbor, by hand")
    refused = post(
        staff,
        "/api/install/github/batch",
        {"tokens": [i["token"] for i in preview["items"]], "acceptRisk": True},
    )
    assert refused.status_code == 409 and refused.json()["code"] == "already_installed"
    assert "the world harbor is already installed" in refused.json()["message"]
    assert not Package.objects.filter(package_id="lantern").exists()
    assert not (hub_dirs / "lantern").exists() and worlds_written(hub_dirs) == []


def test_a_world_failing_while_it_is_placed_takes_the_plugins_of_its_batch_back(
    hub_dirs, staff, kit, monkeypatch
):
    server, remote = kit
    preview = post(staff, "/api/install/github/preview", {"url": remote}).json()

    def broken_index(*, folder):  # noqa: ANN001, ANN202
        raise OSError("disk full")

    # The failure is injected where the world is indexed: after the plugin was installed and
    # the world's folder renamed into place, so both must be undone.
    monkeypatch.setattr("worlds.services.world_index_one", broken_index)
    with pytest.raises(OSError, match="disk full"):
        post(
            staff,
            "/api/install/github/batch",
            {"tokens": [i["token"] for i in preview["items"]], "acceptRisk": True},
        )
    assert not Package.objects.filter(package_id="lantern").exists()
    assert not Installation.objects.exists() and not World.objects.exists()
    assert not (hub_dirs / "lantern").exists() and worlds_written(hub_dirs) == []


def test_a_link_without_a_manifest_offers_every_plugin_and_world_found(hub_dirs, staff, git_server):
    git_server.repo("mixed")
    files = {f"lantern/{k}": v for k, v in plugin_files("lantern").items()}
    files |= {f"harbor/{k}": v for k, v in world_files("harbor", plugins=("weather",)).items()}
    files |= {f"broken/{k}": v for k, v in world_files("broken").items()}
    files["broken/world.yaml"] = b"id: broken\nname: Broken\n"  # no description
    git_server.commit("mixed", files)
    preview = post(staff, "/api/install/github/preview", {"url": f"{git_server.url}/mixed.git"})
    body = preview.json()
    assert [(i["kind"], i["id"]) for i in body["items"]] == [
        ("plugin", "lantern"),
        ("world", "harbor"),
    ]
    messages = [p["message"] for p in body["problems"]]
    assert any("the world in broken is left out" in m and "description" in m for m in messages)
    assert any("wants the package weather" in m for m in messages)
    # A link to the world alone previews just it.
    only = post(
        staff,
        "/api/install/github/preview",
        {"url": f"{git_server.url}/mixed.git/tree/main/harbor"},
    ).json()
    assert [(i["kind"], i["id"]) for i in only["items"]] == [("world", "harbor")]


def test_a_manifest_world_that_does_not_validate_refuses_the_preview_naming_the_file(
    hub_dirs, staff, git_server
):
    git_server.repo("kit")
    files = kit_files(world_files("harbor", **{"characters/characters.json": b'[{"id": "x"}]'}))
    git_server.commit("kit", files)
    refused = post(staff, "/api/install/github/preview", {"url": f"{git_server.url}/kit.git"})
    assert refused.status_code == 400
    body = refused.json()
    assert body["code"] == "invalid_world" and body["details"]["step"] == "validate"
    assert any(i["file"].endswith("characters.json") for i in body["details"]["issues"])


def zip_collection(staff: Client, files: dict[str, bytes]):  # noqa: ANN201
    return staff.post(
        "/api/install/collection", {"file": SimpleUploadedFile("kit.zip", make_zip(files))}
    )


def test_a_collection_zip_installs_its_world_too(hub_dirs, staff):
    response = zip_collection(staff, kit_files())
    assert response.status_code == 201, response.content
    assert response.json()["installed"] == [
        {"kind": "plugin", "id": "lantern"},
        {"kind": "world", "id": "harbor"},
    ]
    assert World.objects.get(world_id="harbor").state == World.State.LOADED


@pytest.mark.parametrize(
    ("world", "status", "code"),
    [
        (world_files("harbor", **{".covel-install.json": b"{}"}), 400, "reserved_file"),
        (world_files("harbor", **{"Notes.md": b"a", "notes.md": b"b"}), 400, "case_collision"),
        (
            world_files("harbor", **{"big.bin": os.urandom(4 * 1024 * 1024 + 1)}),
            413,
            "file_too_large",
        ),
        ({"world.yaml": b"name: Harbor\ndescription: d\n"}, 400, "bad_id"),
        ({"world.yaml": b"id: Harbor!\nname: H\ndescription: d\n"}, 400, "bad_id"),
        ({"WORLD.md": b"no world.yaml"}, 400, "no_world"),
        ({"world.yaml": b"id: harbor\nname: [unclosed\n"}, 400, "invalid_world"),
    ],
)
def test_a_hostile_or_broken_world_in_a_collection_zip_installs_nothing(
    hub_dirs, staff, world, status, code
):
    response = zip_collection(staff, kit_files(world))
    assert response.status_code == status, response.content
    assert response.json()["code"] == code
    assert not Package.objects.exists() and not World.objects.exists()
    assert not (hub_dirs / "lantern").exists() and worlds_written(hub_dirs) == []


def test_a_zip_slip_in_a_world_member_is_refused_naming_the_entry(hub_dirs, staff):
    files = kit_files()
    files["worlds/harbor/../../escape.txt"] = b"out"
    response = zip_collection(staff, files)
    assert response.status_code == 400 and response.json()["code"] == "path_escape"
    assert "escape.txt" in response.json()["details"]["entry"]
    assert worlds_written(hub_dirs) == [] and not World.objects.exists()


def test_a_manifest_counts_worlds_and_plugins_against_the_limit_of_20(hub_dirs, staff):
    many = "".join(f"  - path: w{n}\n" for n in range(20))
    manifest = f"schemaVersion: 1\nid: kit\nname: Kit\nplugins:\n  - path: a\nworlds:\n{many}"
    response = zip_collection(staff, {"covel-collection.yaml": manifest.encode()})
    assert response.status_code == 400 and "21 packages, over 20" in response.json()["message"]
    empty = zip_collection(staff, {"covel-collection.yaml": b"schemaVersion: 1\nid: k\nname: K\n"})
    assert empty.status_code == 400 and "at least one world or plugin" in empty.json()["message"]
    escape = zip_collection(
        staff,
        {"covel-collection.yaml": b"schemaVersion: 1\nid: k\nname: K\nworlds:\n  - path: ../x\n"},
    )
    assert escape.status_code == 400 and "/worlds/0/path" in escape.json()["message"]


def test_a_player_may_not_install_a_collection_with_worlds(hub_dirs, client, alice):
    client.force_login(alice)
    assert zip_collection(client, kit_files()).status_code == 403
    assert not World.objects.exists()


def test_the_add_page_previews_a_world_and_a_job_installs_it_alone(
    hub_dirs, staff, kit, django_capture_on_commit_callbacks
):
    from installs.jobs import job_run
    from installs.models import InstallJob

    server, remote = kit
    page = staff.post("/installs/add/", {"what": "link", "url": remote}).content.decode()
    assert "Install the world <code>harbor</code>" in page and "Wants packages" in page
    world_token = page.split('name="token" value="')[2].split('"', 1)[0]
    with django_capture_on_commit_callbacks(execute=False):
        response = staff.post("/installs/add/confirm", {"token": world_token, "accept_risk": "yes"})
    assert response.status_code == 302
    done = job_run(job_id=InstallJob.objects.get().pk)
    assert done.state == "done", done.error
    assert done.result["installed"] == [{"kind": "world", "id": "harbor"}]
    assert World.objects.filter(world_id="harbor").exists() and not Package.objects.exists()
    job_page = staff.get(f"/installs/jobs/{done.pk}/").content.decode()
    assert 'href="/worlds/harbor/"' in job_page and "the world harbor" in job_page


def test_a_world_staging_folder_left_by_a_killed_process_is_swept_by_the_next_install(
    hub_dirs, staff
):
    import subprocess

    from installs.services import STAGING_PREFIX

    dead = subprocess.Popen(["true"])
    dead.wait()  # its pid is free now: the process that staged the world is gone
    worlds = hub_dirs.parent / "installed-worlds"
    left = worlds / f"{STAGING_PREFIX}{dead.pid}-abcd1234" / "harbor"
    left.mkdir(parents=True)
    (left / "world.yaml").write_bytes(b"id: harbor\n")
    mine = worlds / f"{STAGING_PREFIX}{os.getpid()}-live0000"  # a live process is still at it
    mine.mkdir()
    response = zip_collection(staff, kit_files())
    assert response.status_code == 201, response.content
    assert sorted(p.name for p in worlds.iterdir()) == sorted(["harbor", mine.name])
    assert World.objects.get(world_id="harbor").state == World.State.LOADED
