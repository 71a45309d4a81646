"""manage.py plugin_install / plugin_update / plugin_uninstall: the same checks as the API and
validate_plugin's exit codes (0 done, 1 refused, 2 bad arguments)."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from install_archives import make_zip, plugin_files

from catalogue.models import Package

pytestmark = pytest.mark.django_db


def run(*args: str) -> tuple[int, str, str]:
    import io

    out, err = io.StringIO(), io.StringIO()
    try:
        call_command(*args, stdout=out, stderr=err)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def test_install_previews_without_yes_and_installs_with_it(hub_dirs, tmp_path):
    path = tmp_path / "lantern.zip"
    path.write_bytes(make_zip(plugin_files("lantern")))
    code, out, _ = run("plugin_install", str(path))
    assert code == 0 and "would install lantern" in out
    assert not Package.objects.exists()
    code, out, _ = run("plugin_install", str(path), "--yes", "--json")
    assert code == 0 and json.loads(out)["id"] == "lantern"
    assert Package.objects.filter(package_id="lantern").exists()
    code, _, err = run("plugin_install", str(path), "--yes")
    assert code == 1 and "409 already_installed" in err


def test_a_refused_archive_exits_1_naming_the_entry(hub_dirs, tmp_path):
    path = tmp_path / "bad.zip"
    path.write_bytes(make_zip({**plugin_files("lantern"), ".covel-install.json": b"{}"}))
    code, out, err = run("plugin_install", str(path), "--yes", "--json")
    assert code == 1
    body = json.loads(out)
    assert body["code"] == "reserved_file" and body["details"]["entry"] == ".covel-install.json"


def test_a_bad_argument_exits_2(hub_dirs):
    from django.core.management import execute_from_command_line

    with pytest.raises(SystemExit) as exited:
        execute_from_command_line(["manage.py", "plugin_install", "--no-such-flag"])
    assert exited.value.code == 2


def test_update_and_uninstall_from_git(hub_dirs, git_server):
    git_server.repo("pkgs")
    git_server.commit("pkgs", {f"lantern/{k}": v for k, v in plugin_files("lantern").items()})
    code, out, _ = run("plugin_install", f"{git_server.url}/pkgs.git/tree/main/lantern", "--yes")
    assert code == 0 and "installed lantern" in out
    code, out, _ = run("plugin_update", "lantern")
    assert code == 0 and "lantern: current" in out
    git_server.commit(
        "pkgs", {"lantern/PLUGIN.md": plugin_files("lantern", version="2.0.0")["PLUGIN.md"]}
    )
    code, out, _ = run("plugin_update", "--json")
    assert code == 0 and json.loads(out)["items"][0]["status"] == "available"
    code, out, _ = run("plugin_update", "lantern", "--yes")
    assert code == 0 and "updated" in out
    assert Package.objects.get(package_id="lantern").version == "2.0.0"
    code, out, _ = run("plugin_uninstall", "lantern")
    assert code == 0 and not Package.objects.filter(package_id="lantern").exists()
    code, _, err = run("plugin_uninstall", "lantern")
    assert code == 1 and "404" in err
