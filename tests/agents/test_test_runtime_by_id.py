"""manage.py test_runtime called the spec's way, with an installed plugin's id
(covel-plugins-with-local-code.md, step 5: `pnpm test:runtime -- notebook --pretty`).

The id resolves to the package folder of that name in the configured plugin folders (bundled,
then the user's, then community ones); a folder path keeps working.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from agent_helpers import PLUGINS, run_command
from django.core.management.base import CommandError

from sessions.cases import CaseFileError, plugin_folder_resolve


def test_an_installed_plugin_id_runs_its_cases_like_the_spec_shows():
    code, report, _ = run_command("notebook", "--pretty")
    assert code == 0, json.dumps(report, indent=2)
    assert report["status"] == "ok" and report["mode"] == "mock"
    assert report["pluginId"] == "notebook"
    assert report["cases"] and all(c["status"] == "passed" for c in report["cases"])


def test_the_id_resolves_in_the_user_plugin_folder_too(tmp_path: Path, settings):
    user = tmp_path / "user-plugins"
    shutil.copytree(PLUGINS / "notebook", user / "jotter")
    manifest = user / "jotter" / "PLUGIN.md"
    manifest.write_text(manifest.read_text().replace("id: notebook", "id: jotter"))
    settings.COVEL_USER_PLUGINS_DIR = user
    assert plugin_folder_resolve(plugin="jotter") == user / "jotter"
    # The bundled folder comes first, as in the catalogue's sync.
    assert (
        plugin_folder_resolve(plugin="notebook")
        == Path(settings.COVEL_BUNDLED_PLUGINS_DIR) / "notebook"
    )


def test_a_folder_path_still_works():
    assert plugin_folder_resolve(plugin=str(PLUGINS / "notebook")) == PLUGINS / "notebook"
    code, report, _ = run_command(str(PLUGINS / "notebook"))
    assert code == 0 and report["pluginId"] == "notebook"


def test_an_unknown_id_exits_2_naming_the_id_and_where_it_looked():
    with pytest.raises(CommandError) as caught:
        run_command("no-such-plugin")
    message = str(caught.value)
    assert caught.value.returncode == 2
    assert "no-such-plugin" in message and "no installed plugin" in message
    assert str(PLUGINS) in message
    with pytest.raises(CaseFileError):
        plugin_folder_resolve(plugin="no-such-plugin")
