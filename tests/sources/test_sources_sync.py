"""sync_sources: folders -> rows, idempotent; invalid plugins listed with their errors."""

from __future__ import annotations

import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from sources.models import SourceJob, SourcePlugin
from sources.services import source_plugins_sync
from tests.sources.conftest import PluginWriter, example_manifest, minimal_manifest

pytestmark = pytest.mark.django_db


@pytest.fixture
def plugins_dir(tmp_path: Path, settings) -> Path:
    folder = tmp_path / "plugins"
    folder.mkdir(exist_ok=True)
    settings.COVEL_SOURCE_PLUGIN_DIRS = [folder]
    return folder


def test_it_indexes_the_example_plugin_with_its_jobs(plugins_dir: Path, example_copy: Path) -> None:
    report = source_plugins_sync()
    assert report.created == ["localfeed"] and not report.invalid
    plugin = SourcePlugin.objects.get(plugin_id="localfeed")
    assert plugin.state == "loaded" and plugin.name == "Local feed"
    assert plugin.manifest["source"]["codec"]["keys"] == ["{feed}#{number}", "{feed}"]
    jobs = {j.name: j for j in plugin.jobs.all()}
    assert set(jobs) == {"ingest", "sweep"}
    assert jobs["ingest"].every_ns == 300 * 10**9 and jobs["ingest"].retry_ns == 30 * 10**9
    assert jobs["sweep"].every_from == "sweep.fast" and jobs["sweep"].timeout_ns is None


def test_a_second_sync_changes_nothing(plugins_dir: Path, example_copy: Path) -> None:
    source_plugins_sync()
    before = list(SourcePlugin.objects.values())
    jobs_before = list(SourceJob.objects.values())
    report = source_plugins_sync()
    assert report.unchanged == ["localfeed"] and not report.created and not report.updated
    assert list(SourcePlugin.objects.values()) == before
    assert list(SourceJob.objects.values()) == jobs_before


def test_a_plugin_judged_by_other_loader_rules_is_judged_again(
    plugins_dir: Path, example_copy: Path
) -> None:
    from sources.manifest import rules_version

    source_plugins_sync()
    SourcePlugin.objects.update(rules_version="an-older-loader")
    report = source_plugins_sync()
    assert report.updated == ["localfeed"] and not report.unchanged
    assert SourcePlugin.objects.get().rules_version == rules_version() != ""
    assert source_plugins_sync().unchanged == ["localfeed"]


def test_a_changed_plugin_is_updated_and_its_jobs_follow(
    plugins_dir: Path, write_plugin: PluginWriter
) -> None:
    data = example_manifest()
    write_plugin(data, folder="localfeed")
    source_plugins_sync()
    data["source"]["jobs"] = [
        {"name": "ingest", "every": "1m"},
        {"name": "backfill", "every": "24h"},
    ]
    write_plugin(data, folder="localfeed")
    report = source_plugins_sync()
    assert report.updated == ["localfeed"]
    jobs = {j.name: j for j in SourceJob.objects.all()}
    assert set(jobs) == {"ingest", "backfill"}  # sweep was removed from the manifest
    assert jobs["ingest"].every == "1m" and jobs["ingest"].retry_ns is None


def test_a_removed_folder_disappears(plugins_dir: Path, example_copy: Path) -> None:
    source_plugins_sync()
    shutil.rmtree(example_copy)
    report = source_plugins_sync()
    assert report.removed == ["localfeed"]
    assert not SourcePlugin.objects.exists() and not SourceJob.objects.exists()


def test_an_invalid_plugin_is_listed_with_its_errors(
    plugins_dir: Path, write_plugin: PluginWriter
) -> None:
    data = minimal_manifest()
    data["source"]["jobs"][0]["every"] = "1d"
    write_plugin(data)
    report = source_plugins_sync()
    assert list(report.invalid) == ["pulls"]
    plugin = SourcePlugin.objects.get(plugin_id="pulls")
    assert plugin.state == "error"
    assert plugin.errors == [
        {
            "file": "plugin.toml",
            "path": "/source/jobs/0/every",
            "code": "duration",
            "message": 'source.jobs[0].every is not a Go duration: time: unknown unit "d" in duration "1d"',
        }
    ]
    assert plugin.manifest["id"] == "pulls"  # the raw TOML, for the page
    assert not plugin.jobs.exists()


def test_a_plugin_turning_invalid_keeps_its_jobs_inactive(
    plugins_dir: Path, write_plugin: PluginWriter
) -> None:
    data = minimal_manifest()
    write_plugin(data)
    source_plugins_sync()
    data["source"]["colour"] = "blue"
    write_plugin(data)
    source_plugins_sync()
    job = SourceJob.objects.get()
    assert job.active is False
    data["source"].pop("colour")
    write_plugin(data)
    source_plugins_sync()
    job.refresh_from_db()
    assert job.active is True


def test_a_view_id_clash_invalidates_both_plugins(
    plugins_dir: Path, example_copy: Path, write_plugin: PluginWriter
) -> None:
    other = minimal_manifest()
    other["source"]["ui"] = {"views": [{"id": "localfeed-inbox"}]}
    write_plugin(other)
    report = source_plugins_sync()
    assert sorted(report.invalid) == ["localfeed", "pulls"]
    codes = {p.plugin_id: [e["code"] for e in p.errors] for p in SourcePlugin.objects.all()}
    assert codes == {"localfeed": ["view-id-taken"], "pulls": ["view-id-taken"]}


def test_the_first_folder_of_an_id_wins(
    tmp_path: Path, settings, write_plugin: PluginWriter
) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    write_plugin(minimal_manifest(), base=first)
    write_plugin(minimal_manifest(), base=second)
    settings.COVEL_SOURCE_PLUGIN_DIRS = [first, second]
    report = source_plugins_sync()
    assert report.created == ["pulls"] and report.skipped == [str(second / "pulls")]
    assert SourcePlugin.objects.get().folder == str((first / "pulls").resolve())


def test_the_command_reports_and_is_idempotent(
    plugins_dir: Path, example_copy: Path, write_plugin: PluginWriter
) -> None:
    bad = minimal_manifest("broken")
    bad["protocol"] = 9
    write_plugin(bad)
    out = StringIO()
    call_command("sync_sources", stdout=out)
    text = out.getvalue()
    assert "created: broken, localfeed" in text
    assert (
        "invalid: broken" in text
        and "plugin.toml:/protocol" in text
        and "[protocol-unsupported]" in text
    )
    out = StringIO()
    call_command("sync_sources", stdout=out)
    assert "unchanged: broken, localfeed" in out.getvalue()
    assert SourcePlugin.objects.count() == 2


def test_an_invalid_manifest_with_toml_dates_and_infinities_is_still_stored(
    plugins_dir: Path, write_plugin: PluginWriter
) -> None:
    text = (
        'id = 1979-05-27T07:32:00Z\nkinds = ["source"]\nprotocol = inf\n'
        '[source]\nname = "Dates"\nslot = 07:32:00\n[source.codec]\nkeys = ["{a}"]\n'
    )
    write_plugin(text, folder="dates")
    report = source_plugins_sync()
    assert list(report.invalid) == ["dates"]
    plugin = SourcePlugin.objects.get(plugin_id="dates")
    assert {(e["path"], e["code"]) for e in plugin.errors} == {
        ("/id", "type"),
        ("/protocol", "type"),
        ("/source/slot", "type"),
    }
    assert (
        plugin.manifest["id"] == "1979-05-27T07:32:00+00:00"
        and plugin.manifest["protocol"] == "inf"
    )
    assert "must be a string, not a date or time" in plugin.errors[0]["message"]


def test_an_unchanged_folder_is_not_parsed_again(
    plugins_dir: Path, example_copy: Path, write_plugin: PluginWriter, monkeypatch
) -> None:
    from sources import services

    write_plugin(minimal_manifest())
    source_plugins_sync()
    loaded: list[str] = []
    real = services.load_source_plugin
    monkeypatch.setattr(
        services,
        "load_source_plugin",
        lambda p, **kw: loaded.append(Path(p).name) or real(p, **kw),
    )
    report = source_plugins_sync()
    assert loaded == [] and report.unchanged == ["localfeed", "pulls"]
    (example_copy / "README").write_text("changed")
    report = source_plugins_sync()
    assert (
        loaded == ["localfeed"]
        and report.updated == ["localfeed"]
        and report.unchanged == ["pulls"]
    )
    assert SourcePlugin.objects.get(plugin_id="localfeed").state == "loaded"


def test_removing_one_side_of_a_clash_frees_the_other(
    plugins_dir: Path, example_copy: Path, write_plugin: PluginWriter
) -> None:
    other = minimal_manifest()
    other["source"]["ui"] = {"views": [{"id": "localfeed-inbox"}]}
    folder = write_plugin(other)
    source_plugins_sync()
    assert SourcePlugin.objects.get(plugin_id="localfeed").state == "error"
    shutil.rmtree(folder)
    report = source_plugins_sync()  # localfeed's files did not change, its verdict did
    assert report.removed == ["pulls"] and report.updated == ["localfeed"]
    plugin = SourcePlugin.objects.get(plugin_id="localfeed")
    assert plugin.state == "loaded" and plugin.errors == []
    assert plugin.jobs.filter(active=True).count() == 2


def test_a_new_empty_web_folder_counts_as_a_change(
    plugins_dir: Path, write_plugin: PluginWriter
) -> None:
    data = minimal_manifest()
    data["source"]["ui"] = {"web": "site"}
    folder = write_plugin(data)
    source_plugins_sync()
    assert SourcePlugin.objects.get().errors[0]["code"] == "ui-web"
    (folder / "site").mkdir()
    assert source_plugins_sync().updated == ["pulls"]
    assert SourcePlugin.objects.get().state == "loaded"


def test_config_reads_are_judged_against_the_configuration(
    plugins_dir: Path, write_plugin: PluginWriter, settings
) -> None:
    data = minimal_manifest()
    data["source"]["config_reads"] = ["feeds.extra"]
    write_plugin(data)
    report = source_plugins_sync()
    assert list(report.invalid) == ["pulls"]
    assert report.invalid["pulls"][0].startswith("plugin.toml:/source/config_reads/0 ")
    assert report.invalid["pulls"][0].endswith("[config-key]")
    assert not SourceJob.objects.filter(active=True).exists()
    # The folder is unchanged; the configuration's keys changed, and with them the verdict.
    settings.COVEL_SOURCE_CONFIG = {"feeds": {"extra": "on"}}
    report = source_plugins_sync()
    assert report.updated == ["pulls"] and not report.invalid
    assert SourcePlugin.objects.get().state == "loaded"
    settings.COVEL_SOURCE_CONFIG = {"feeds.extra": "off"}  # a flat key is the same key
    assert source_plugins_sync().unchanged == ["pulls"]
    settings.COVEL_SOURCE_CONFIG = {}
    assert list(source_plugins_sync().invalid) == ["pulls"]


def test_the_default_configuration_has_the_host_tables_the_spec_names(
    plugins_dir: Path, write_plugin: PluginWriter
) -> None:
    data = minimal_manifest()
    data["source"]["config_reads"] = ["sweep", "items", "turns"]
    write_plugin(data)
    assert not source_plugins_sync().invalid
    data["source"]["config_reads"] = ["sweep", "items.heat"]  # no operator set items.heat
    write_plugin(data)
    assert list(source_plugins_sync().invalid) == ["pulls"]
