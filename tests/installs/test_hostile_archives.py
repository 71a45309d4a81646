"""Each archive limit and each hostile archive is refused with the entry named, and nothing is
written: zip slip, absolute paths, symlinks, bombs, too many entries, case collisions, the
installer's own receipt file, and an upload over 20 MiB."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from install_archives import make_zip, plugin_files

from catalogue.models import Package
from installs import archive
from installs.models import Installation

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client, bob):  # noqa: ANN201
    client.force_login(bob)
    return client


def send(client, data: bytes):  # noqa: ANN001, ANN201
    return client.post(
        "/api/install/plugin", {"file": SimpleUploadedFile("x.zip", data, "application/zip")}
    )


def nothing_written(root) -> bool:  # noqa: ANN001
    left = [p.name for p in root.iterdir()] if root.exists() else []
    return left == [] and not Package.objects.exists() and not Installation.objects.exists()


def raw_zip(names: dict[str, bytes]) -> bytes:
    """A ZIP whose entry names are written as given (zipfile would not let us write `..`)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as out:
        for name, content in names.items():
            info = zipfile.ZipInfo("placeholder")
            info.filename = name
            out.writestr(info, content)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("../evil.js", "path_escape"),
        ("a/../../evil.js", "path_escape"),
        ("/etc/evil", "absolute_path"),
        ("C:/evil", "absolute_path"),
    ],
)
def test_zip_slip_and_absolute_paths_are_refused_naming_the_entry(hub_dirs, staff, name, code):
    files = {**plugin_files("lantern"), name: b"x"}
    response = send(staff, raw_zip(files))
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == code and body["details"]["entry"] == name and name in body["message"]
    assert nothing_written(hub_dirs)


def test_a_symlink_entry_is_refused(hub_dirs, staff):
    response = send(staff, make_zip(plugin_files("lantern"), symlinks={"link.js": "/etc/passwd"}))
    assert response.status_code == 400
    assert (
        response.json()["code"] == "not_regular"
        and response.json()["details"]["entry"] == "link.js"
    )
    assert nothing_written(hub_dirs)


def test_case_colliding_paths_are_refused(hub_dirs, staff):
    response = send(
        staff, make_zip({**plugin_files("lantern"), "Server/a.js": b"1", "server/A.js": b"2"})
    )
    assert response.status_code == 400
    assert (
        response.json()["code"] == "case_collision"
        and response.json()["details"]["entry"] == "server/A.js"
    )
    assert nothing_written(hub_dirs)


@pytest.mark.parametrize("name", [".covel-install.json", "sub/.covel-install.json"])
def test_the_reserved_install_metadata_file_is_refused(hub_dirs, staff, name):
    response = send(staff, make_zip({**plugin_files("lantern"), name: b"{}"}))
    assert response.status_code == 400
    assert (
        response.json()["code"] == "reserved_file" and response.json()["details"]["entry"] == name
    )
    assert nothing_written(hub_dirs)


def test_a_zip_bomb_over_the_expansion_ratio_is_refused(hub_dirs, staff):
    bomb = make_zip({**plugin_files("lantern"), "zeros.txt": b"\0" * (3 * 1024 * 1024)})
    response = send(staff, bomb)
    assert response.status_code == 400 and response.json()["code"] == "expansion_ratio"
    assert nothing_written(hub_dirs)


def test_more_than_2000_entries_are_refused(hub_dirs, staff):
    files = {**plugin_files("lantern"), **{f"data/{i}.txt": b"" for i in range(2001)}}
    response = send(staff, make_zip(files))
    assert response.status_code == 400 and response.json()["code"] == "too_many_entries"
    assert nothing_written(hub_dirs)


def test_more_than_200_mib_unpacked_is_refused_before_unpacking(monkeypatch):
    # 200 MiB of real data would cost the shared machine: shrink the limit, keep the rule.
    monkeypatch.setattr(archive, "MAX_UNPACKED_BYTES", 1000)
    data = make_zip({**plugin_files("lantern"), "big.txt": bytes(range(256)) * 8})
    with pytest.raises(archive.ArchiveRefused) as refused:
        archive.read_zip(data)
    assert refused.value.code == "too-large-unpacked" and refused.value.status == 413
    assert refused.value.entry == "big.txt"


def test_an_upload_over_20_mib_is_413(hub_dirs, staff):
    import os

    data = os.urandom(archive.MAX_COMPRESSED_BYTES + 10)
    response = send(staff, data)
    assert response.status_code == 413 and response.json()["code"] == "too_large"
    assert nothing_written(hub_dirs)


def test_a_file_over_the_sync_cap_is_refused(hub_dirs, staff):
    import os

    big = os.urandom(4 * 1024 * 1024 + 1)
    response = send(staff, make_zip({**plugin_files("lantern"), "blob.bin": big}))
    assert response.status_code == 413 and response.json()["details"]["entry"] == "blob.bin"
    assert nothing_written(hub_dirs)


def test_not_a_zip_is_400(hub_dirs, staff):
    response = send(staff, b"this is not a zip")
    assert response.status_code == 400 and response.json()["code"] == "bad_archive"


def test_a_collection_zip_installs_every_member(hub_dirs, staff):
    files = {
        "covel-collection.yaml": b"schemaVersion: 1\nid: kit\nname: Kit\nplugins:\n  - path: a\n  - path: b\n"
    }
    files |= {f"a/{k}": v for k, v in plugin_files("alpha").items()}
    files |= {f"b/{k}": v for k, v in plugin_files("beta").items()}
    response = staff.post(
        "/api/install/collection", {"file": SimpleUploadedFile("kit.zip", make_zip(files))}
    )
    assert response.status_code == 201, response.content
    assert [i["id"] for i in response.json()["installed"]] == ["alpha", "beta"]
    assert set(Package.objects.values_list("package_id", flat=True)) == {"alpha", "beta"}


def test_a_collection_zip_with_one_bad_member_installs_nothing(hub_dirs, staff):
    files = {
        "covel-collection.yaml": b"schemaVersion: 1\nid: kit\nname: Kit\nplugins:\n  - path: a\n  - path: b\n"
    }
    files |= {f"a/{k}": v for k, v in plugin_files("alpha").items()}
    files |= {f"b/{k}": v for k, v in plugin_files("dice").items()}  # a bundled id
    response = staff.post(
        "/api/install/collection", {"file": SimpleUploadedFile("kit.zip", make_zip(files))}
    )
    assert response.status_code == 409
    assert nothing_written(hub_dirs)
