"""python manage.py sync_packages and the service behind it (fake loader; see conftest)."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from catalogue.models import Package
from catalogue.services import packages_sync

pytestmark = pytest.mark.django_db


def ids() -> list[str]:
    return list(Package.objects.order_by("package_id").values_list("package_id", flat=True))


def test_it_indexes_every_configured_folder_with_its_trust(plugin_dirs, approval_calls):
    plugin_dirs.add("bundled", "storyteller")
    plugin_dirs.add("user", "notebook")
    plugin_dirs.add("community", "weather")
    summary = packages_sync()
    assert summary.line() == "indexed 3, unchanged 0, removed 0, invalid 0"
    rows = {p.package_id: (p.source, p.trust) for p in Package.objects.all()}
    assert rows == {
        "storyteller": ("bundled", "bundled"),
        "notebook": ("user", "community"),
        "weather": ("community", "community"),
    }
    # Community code asks for approval; bundled code is trusted.
    assert sorted(approval_calls) == ["notebook", "weather"]


def test_an_unchanged_package_is_not_parsed_again(plugin_dirs, approval_calls):
    plugin_dirs.add("bundled", "dice")
    plugin_dirs.add("user", "notebook")
    packages_sync()
    first_indexed = Package.objects.get(package_id="dice").indexed_at
    plugin_dirs.loads.clear()
    approval_calls.clear()

    summary = packages_sync()
    assert summary.line() == "indexed 0, unchanged 2, removed 0, invalid 0"
    assert plugin_dirs.loads == []
    assert approval_calls == []
    assert Package.objects.get(package_id="dice").indexed_at == first_indexed


def test_a_changed_package_is_parsed_again(plugin_dirs, approval_calls):
    plugin_dirs.add("user", "notebook")
    packages_sync()
    plugin_dirs.loads.clear()
    approval_calls.clear()
    plugin_dirs.add("user", "notebook", {"description": "Now keeps two notes."})
    summary = packages_sync()
    assert summary.line() == "indexed 1, unchanged 0, removed 0, invalid 0"
    assert plugin_dirs.loads == ["notebook"]
    assert approval_calls == ["notebook"]  # new content needs a new look
    assert Package.objects.get().description == "Now keeps two notes."


def test_a_package_judged_by_other_loader_rules_is_parsed_again(plugin_dirs):
    """An upgrade that changes the loader's rules re-judges unchanged folders, once."""
    from catalogue.manifest.loader import rules_version

    plugin_dirs.add("bundled", "dice")
    packages_sync()
    assert Package.objects.get().rules_version == rules_version() != ""
    Package.objects.update(rules_version="an-older-loader")
    plugin_dirs.loads.clear()
    assert packages_sync().indexed == ["dice"]
    assert plugin_dirs.loads == ["dice"]
    assert Package.objects.get().rules_version == rules_version()
    assert packages_sync().indexed == []


def test_the_rules_version_follows_the_loader_code(tmp_path):
    from catalogue.manifest.fingerprint import code_fingerprint

    (tmp_path / "rules.py").write_text("A = 1\n")
    (tmp_path / "notes.txt").write_text("not code\n")
    first = code_fingerprint(tmp_path)
    (tmp_path / "notes.txt").write_text("changed, but not code\n")
    code_fingerprint.cache_clear()
    assert code_fingerprint(tmp_path) == first
    (tmp_path / "rules.py").write_text("A = 2\n")
    code_fingerprint.cache_clear()
    assert code_fingerprint(tmp_path) != first


def test_a_new_host_version_or_force_parses_everything(plugin_dirs, settings):
    plugin_dirs.add("bundled", "dice")
    packages_sync()
    plugin_dirs.loads.clear()
    settings.COVEL_HOST_VERSION = "0.2.0"
    assert packages_sync().indexed == ["dice"]
    assert Package.objects.get().host_version == "0.2.0"
    assert packages_sync(force=True).indexed == ["dice"]


def test_removed_folders_disappear(plugin_dirs):
    plugin_dirs.add("bundled", "dice")
    gone = plugin_dirs.add("community", "weather")
    packages_sync()
    (gone / "PLUGIN.md").unlink()
    gone.rmdir()
    summary = packages_sync()
    assert summary.removed == ["weather"]
    assert ids() == ["dice"]


def test_an_invalid_package_is_listed_and_the_others_still_load(plugin_dirs):
    plugin_dirs.add("bundled", "broken", {"displayName": "Broken"})  # no description
    plugin_dirs.add("bundled", "crashy", {"description": "x", "crash": True})  # the loader raises
    plugin_dirs.add("bundled", "dice")
    summary = packages_sync()
    assert summary.line() == "indexed 3, unchanged 0, removed 0, invalid 2"
    states = dict(Package.objects.values_list("package_id", "state"))
    assert states == {"broken": "error", "crashy": "error", "dice": "loaded"}
    crashy = Package.objects.get(package_id="crashy")
    assert crashy.errors[0]["code"] == "loader-failure" and "tripped" in crashy.errors[0]["message"]
    # Still listed on the next, unchanged sync.
    again = packages_sync()
    assert again.line() == "indexed 0, unchanged 3, removed 0, invalid 2"


def test_a_duplicate_id_keeps_the_trusted_copy(plugin_dirs, approval_calls):
    plugin_dirs.add("bundled", "dice", {"description": "Trusted dice."})
    shadow = plugin_dirs.add("community", "dice", {"description": "Sneaky dice."})
    summary = packages_sync()
    package = Package.objects.get()
    assert (package.description, package.trust) == ("Trusted dice.", "bundled")
    assert summary.duplicates == [("dice", str(shadow), str(plugin_dirs.bundled / "dice"))]
    assert [e["code"] for _, errors in summary.invalid for e in errors] == ["duplicate-package-id"]
    assert package.shadowed and package.shadowed[0]["path"] == str(shadow)
    assert approval_calls == []
    # Once the trusted copy is gone, the community copy takes its place (and asks for approval).
    for f in (plugin_dirs.bundled / "dice").iterdir():
        f.unlink()
    (plugin_dirs.bundled / "dice").rmdir()
    packages_sync()
    package = Package.objects.get()
    assert (package.description, package.trust, package.shadowed) == (
        "Sneaky dice.",
        "community",
        [],
    )
    assert approval_calls == ["dice"]


def test_missing_folders_and_hidden_entries_are_skipped(plugin_dirs, settings, tmp_path):
    settings.COVEL_USER_PLUGINS_DIR = tmp_path / "does-not-exist"
    plugin_dirs.add("bundled", "dice")
    plugin_dirs.add("bundled", ".git")
    (plugin_dirs.bundled / "README.md").write_text("not a package")
    packages_sync()
    assert ids() == ["dice"]


def test_the_command_prints_errors_and_a_one_line_summary(plugin_dirs):
    plugin_dirs.add("bundled", "broken", {"displayName": "Broken"})
    plugin_dirs.add("bundled", "dice")
    out, err = io.StringIO(), io.StringIO()
    call_command("sync_packages", stdout=out, stderr=err)
    lines = out.getvalue().strip().splitlines()
    assert lines[-1] == "indexed 2, unchanged 0, removed 0, invalid 1"
    assert "invalid broken:" in lines[0]
    assert "PLUGIN.md:/description description is required [required]" in lines[1]
    assert err.getvalue() == ""  # no progress bar when not on a terminal


def test_the_command_draws_a_progress_bar_on_a_terminal(plugin_dirs):
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    plugin_dirs.add("bundled", "dice")
    plugin_dirs.add("bundled", "weather")
    out, err = io.StringIO(), Tty()
    call_command("sync_packages", stdout=out, stderr=err)
    assert "] 2/2 weather" in err.getvalue() and "#" in err.getvalue()
    assert out.getvalue().strip() == "indexed 2, unchanged 0, removed 0, invalid 0"


def test_a_package_whose_rows_fail_to_save_does_not_stop_the_others(plugin_dirs, monkeypatch):
    # New packages are indexed in batches; a failing one fails its batch, which is rolled
    # back and indexed one by one, so only the failing package is missing.
    from catalogue import services

    real_fields = services._package_fields

    def flaky_fields(*, result, **kwargs):
        if result.package_id == "bad":
            raise ValueError("disk full")
        return real_fields(result=result, **kwargs)

    monkeypatch.setattr(services, "_package_fields", flaky_fields)
    plugin_dirs.add("bundled", "bad")
    plugin_dirs.add("bundled", "good")
    summary = packages_sync()
    assert ids() == ["good"]
    assert summary.invalid == [
        (
            "bad",
            [{"file": "PLUGIN.md", "path": "", "code": "index-failure", "message": "disk full"}],
        )
    ]


def test_a_failed_write_keeps_the_last_good_card(plugin_dirs, monkeypatch):
    from catalogue import services

    plugin_dirs.add("bundled", "dice", {"description": "Version one."})
    packages_sync()
    plugin_dirs.add("bundled", "dice", {"description": "Version two."})
    monkeypatch.setattr(
        services, "package_index", lambda **kw: (_ for _ in ()).throw(ValueError("boom"))
    )
    summary = packages_sync()
    assert summary.removed == [] and summary.invalid[0][1][0]["code"] == "index-failure"
    assert Package.objects.get().description == "Version one."


def test_syncs_on_one_host_take_turns(settings, tmp_path):
    import threading

    from catalogue.services import sync_lock

    settings.VAR_DIR = tmp_path
    order: list[str] = []
    second_waiting = threading.Event()

    def second() -> None:
        second_waiting.set()
        with sync_lock():
            order.append("second")

    with sync_lock():
        thread = threading.Thread(target=second)
        thread.start()
        second_waiting.wait(5)
        thread.join(0.3)  # it must still be waiting for the lock
        order.append("first")
    thread.join(5)
    assert order == ["first", "second"]
