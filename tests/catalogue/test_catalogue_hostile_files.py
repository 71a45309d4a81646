"""Hostile package folders: sync_packages (and the staff's re-sync button), the approval hash and
the usability check read regular files only, stream them, and cap their sizes; a sync killed
between a package's rows and its approval request leaves nothing waiting without a request."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from approvals.selectors import approval_current, package_usability
from catalogue import callouts
from catalogue.manifest.package_files import MAX_PACKAGE_BYTES, MAX_PACKAGE_FILE_BYTES
from catalogue.models import Package
from catalogue.services import packages_sync

pytestmark = pytest.mark.django_db

PLUGIN_MD = "---\nid: {id}\nversion: {version}\ndescription: A package.\n---\nPrompt.\n"


class Hung(Exception):
    pass


@pytest.fixture
def deadline() -> Iterator[None]:
    """Fail (instead of hanging the suite) when something blocks on a FIFO."""

    def hung(*_: object) -> None:
        raise Hung("blocked for 20 s: a special file was opened")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def community(tmp_path, settings) -> Path:
    settings.COVEL_BUNDLED_PLUGINS_DIR = tmp_path / "bundled"
    settings.COVEL_USER_PLUGINS_DIR = tmp_path / "none"
    settings.COVEL_COMMUNITY_PLUGIN_DIRS = [tmp_path / "community"]
    settings.VAR_DIR = tmp_path / "var"
    settings.VAR_DIR.mkdir()
    return tmp_path / "community"


def write(root: Path, package_id: str, *, version: str = "1.0.0", code: str = "v1") -> Path:
    folder = root / package_id
    (folder / "server").mkdir(parents=True, exist_ok=True)
    (folder / "PLUGIN.md").write_text(PLUGIN_MD.format(id=package_id, version=version))
    (folder / "server" / "index.js").write_text(f"export default () => '{code}';\n")
    return folder


def errors_of(package_id: str) -> list[tuple[str, str]]:
    return [(e["file"], e["code"]) for e in Package.objects.get(package_id=package_id).errors]


def test_a_fifo_named_like_code_is_refused_by_name_and_never_opened(
    community, deadline, client, bob
):
    folder = write(community, "piped")
    os.mkfifo(folder / "x.js")
    os.mkfifo(folder / "server" / "RUNTIME.md")
    summary = packages_sync()
    assert [pid for pid, _ in summary.invalid] == ["piped"]
    assert sorted(errors_of("piped")) == [
        ("server/RUNTIME.md", "special-file"),
        ("x.js", "special-file"),
    ]
    messages = [e["message"] for e in Package.objects.get(package_id="piped").errors]
    assert any(m.startswith("x.js is a FIFO") for m in messages), messages
    # The usability check (every turn) and the staff's re-sync button do not block either.
    assert package_usability(package_id="piped").state == "error"
    client.force_login(bob)
    assert client.post("/sync/").status_code == 302


def test_a_socket_is_refused_too(community, deadline):
    import socket

    folder = write(community, "socketed")
    listener = socket.socket(socket.AF_UNIX)
    try:
        listener.bind(str(folder / "server" / "db.sock"))
        packages_sync()
    finally:
        listener.close()
    assert errors_of("socketed") == [("server/db.sock", "special-file")]


def test_a_file_over_the_cap_is_refused_naming_the_file_and_the_limit(community):
    folder = write(community, "huge")
    with open(folder / "server" / "blob.bin", "wb") as handle:
        handle.truncate(MAX_PACKAGE_FILE_BYTES + 1)  # sparse: nothing is written to disk
    packages_sync()
    (error,) = Package.objects.get(package_id="huge").errors
    assert (error["file"], error["code"]) == ("server/blob.bin", "file-too-large")
    assert str(MAX_PACKAGE_FILE_BYTES) in error["message"]


def test_a_package_over_the_total_cap_is_refused(community):
    folder = write(community, "heavy")
    for i in range(MAX_PACKAGE_BYTES // MAX_PACKAGE_FILE_BYTES + 1):
        with open(folder / f"part{i}.bin", "wb") as handle:
            handle.truncate(MAX_PACKAGE_FILE_BYTES)
    packages_sync()
    (error,) = Package.objects.get(package_id="heavy").errors
    assert error["code"] == "package-too-large" and str(MAX_PACKAGE_BYTES) in error["message"]


def test_a_link_out_of_the_package_is_never_hashed_or_approved(community, tmp_path):
    folder = write(community, "linked")
    (tmp_path / "secret.js").write_text("export const key = 'hub secret';\n")
    os.symlink(tmp_path / "secret.js", folder / "server" / "leak.js")
    packages_sync()
    request = approval_current(package_key="linked")
    assert [c["path"] for c in request.permissions["code"]] == ["server/index.js"]


class Killed(BaseException):
    """A sync process killed between two steps (not an error any handler catches)."""


def test_a_sync_killed_between_the_rows_and_the_request_leaves_nothing_waiting(
    community, monkeypatch
):
    write(community, "weather")

    def killed(**_: object) -> None:
        raise Killed

    # The sync calls what approvals registered in its slots (catalogue/callouts.py): one
    # package at a time, or a batch of new ones.
    monkeypatch.setattr(callouts.approval_request_sync, "_fn", killed)
    monkeypatch.setattr(callouts.approval_requests_sync, "_fn", killed)
    with pytest.raises(Killed):
        packages_sync()
    # The package's rows were rolled back with the request that never came.
    assert not Package.objects.filter(package_id="weather").exists()
    assert approval_current(package_key="weather") is None

    monkeypatch.undo()
    packages_sync()
    assert approval_current(package_key="weather").state == "pending"
    assert package_usability(package_id="weather").state == "pending"


def test_an_interrupted_older_sync_is_repaired_on_the_next_one(community, bob):
    """A row indexed without its approval step (a crash of an older hub, or rows written by
    hand) is no longer 'waiting for a review nobody was asked for' after the next sync."""
    from approvals.services import approval_decide
    from catalogue.manifest.loader import load_package
    from catalogue.services import package_content_hash, package_index

    folder = write(community, "weather")
    packages_sync()
    approval_decide(
        request_id=approval_current(package_key="weather").pk, decision="allow", actor=bob
    )
    (folder / "server" / "index.js").write_text("export default () => 'v2';\n")
    package_index(
        result=load_package(folder),
        source="community",
        content_hash=package_content_hash(path=folder),
        host_version="0.1.0",
    )
    assert package_usability(package_id="weather").state == "unreviewed"
    before = approval_current(package_key="weather")

    summary = packages_sync()
    assert "weather" in summary.unchanged  # its files did not change since that row was written
    after = approval_current(package_key="weather")
    assert after.pk != before.pk and after.state == "pending"
    assert package_usability(package_id="weather").state == "pending"
