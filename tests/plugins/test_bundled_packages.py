"""The bundled example packages under plugins/: each one loads cleanly, and together they
exercise the manifest features issue 2 lists. Coverage is computed from the loaded manifests,
so removing a feature from a package (or a package from plugins/) fails here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from catalogue.manifest.loader import load_package
from catalogue.manifest.types import LoadResult, Manifest, RuntimeManifest

PLUGINS_DIR = Path(__file__).resolve().parents[2] / "plugins"
HOST_VERSION = "0.1.0"
PACKAGE_DIRS = sorted(p for p in PLUGINS_DIR.iterdir() if p.is_dir())
CONTROL_TYPES = {"text", "textarea", "number", "integer", "toggle", "select", "slider", "slot"}


@pytest.fixture(scope="module")
def results() -> dict[str, LoadResult]:
    return {p.name: load_package(str(p), host_version=HOST_VERSION) for p in PACKAGE_DIRS}


@pytest.fixture(scope="module")
def manifests(results: dict[str, LoadResult]) -> list[Manifest]:
    return [r.manifest for r in results.values() if r.manifest is not None]


def runtimes(manifests: list[Manifest]) -> Iterator[tuple[Manifest, RuntimeManifest]]:
    for manifest in manifests:
        for runtime in manifest.runtimes:
            yield manifest, runtime


def contributes(manifest: Manifest, key: str) -> Any:
    return manifest.contributes.get(key)


@pytest.mark.parametrize("folder", PACKAGE_DIRS, ids=lambda p: p.name)
def test_it_validates_without_errors_or_warnings(folder: Path) -> None:
    result = load_package(str(folder), host_version=HOST_VERSION)
    problems = [str(i) for i in (*result.errors, *result.warnings)]
    assert result.ok and not problems, f"{folder.name}:\n" + "\n".join(problems)
    assert result.manifest is not None and result.manifest.id == folder.name


@pytest.mark.parametrize("folder", PACKAGE_DIRS, ids=lambda p: p.name)
def test_it_carries_the_catalogue_card(folder: Path) -> None:
    manifest = load_package(str(folder), host_version=HOST_VERSION).manifest
    assert manifest is not None
    data = manifest.data
    assert data.get("displayName") and len(manifest.description) >= 60
    assert data.get("license") == "MIT"
    assert data.get("version") not in (None, "0.0.0")
    assert data.get("covel")
    author = manifest.author
    assert author is not None and author["name"] == "Covel Hub Team"
    assert author["url"].startswith("https://") and author.get("about")
    assert 1 <= len(author.get("links", ())) <= 3
    assert all(link["label"] and link["url"].startswith("https://") for link in author["links"])
    # role: is rejected and ui:/cost: are derived by the loader, so none is written by hand.
    written = (load_package(str(folder), host_version=HOST_VERSION).raw or {}).get("tags", ())
    assert written and not [t for t in written if t.startswith(("role:", "ui:", "cost:"))]
    assert (folder / "README.md").is_file()


def test_there_are_at_least_eight_packages(manifests: list[Manifest]) -> None:
    assert len(manifests) >= 8


def test_settings_cover_every_control_type(manifests: list[Manifest]) -> None:
    used = {s["type"] for m in manifests for s in contributes(m, "settings") or ()}
    assert used == CONTROL_TYPES, f"missing control types: {sorted(CONTROL_TYPES - used)}"


def test_a_package_has_several_runtimes_in_runtime_files(manifests: list[Manifest]) -> None:
    multi = [
        m.id
        for m in manifests
        if len(m.runtimes) >= 2 and all(r.file.startswith("runtimes/") for r in m.runtimes)
    ]
    assert multi


def test_there_are_function_and_agent_runtimes(manifests: list[Manifest]) -> None:
    kinds = {r.kind for _, r in runtimes(manifests)}
    assert kinds == {"function", "agent"}


def test_a_detached_runtime_settles(manifests: list[Manifest]) -> None:
    settling = [
        r.qualified_id
        for _, r in runtimes(manifests)
        if r.detached is not None and r.detached.get("settle") is True
    ]
    assert settling
    # `detached: true` (no options) normalises to a job that does not hold up the next action.
    plain = [
        r.qualified_id
        for _, r in runtimes(manifests)
        if r.detached is not None and not r.detached.get("settle", False)
    ]
    assert plain, "a detached runtime without settle is missing"


def test_a_locale_variant_is_found(manifests: list[Manifest]) -> None:
    assert any(m.locales for m in manifests)


def test_datasets_are_declared(manifests: list[Manifest]) -> None:
    datasets = [(m.id, name) for m in manifests for name in (contributes(m, "datasets") or {})]
    assert len(datasets) >= 2


def test_data_namespaces_carry_authoring(manifests: list[Manifest]) -> None:
    authored = [
        (m.id, name)
        for m in manifests
        for name, ns in (contributes(m, "data") or {}).items()
        if isinstance(ns.get("authoring"), Mapping) and ns["authoring"].get("source")
    ]
    assert authored


def test_http_permissions_exist_at_package_and_runtime_level(manifests: list[Manifest]) -> None:
    package_level = [m.id for m in manifests if m.permissions.get("http")]
    runtime_level = [
        r.qualified_id for _, r in runtimes(manifests) if r.data.get("permissions", {}).get("http")
    ]
    assert package_level and runtime_level


def test_commands_invoke_declared_actions(manifests: list[Manifest]) -> None:
    commands = [(m, c) for m in manifests for c in contributes(m, "commands") or ()]
    assert commands
    for manifest, command in commands:
        assert command["action"] in (contributes(manifest, "actions") or ()), (
            manifest.id,
            command["name"],
        )
    assert any(c.get("aliases") for _, c in commands)
    assert any(a.get("variadic") for _, c in commands for a in c.get("arguments", ()))


def test_entry_registration_kinds_are_all_declared_somewhere(manifests: list[Manifest]) -> None:
    kinds = {"tools", "actions", "services", "hooks", "wires", "forms", "extensions"}
    used = {k for m in manifests for k in kinds if contributes(m, k)}
    assert used == kinds, f"no package declares {sorted(kinds - used)}"


def test_services_include_a_write_and_a_model_facing_one(manifests: list[Manifest]) -> None:
    services = [
        s for m in manifests for s in contributes(m, "services") or () if isinstance(s, Mapping)
    ]
    assert any(s.get("access") == "write" for s in services)
    assert any(s.get("modelFacing") is True for s in services)


def test_more_manifest_features_are_exercised(manifests: list[Manifest]) -> None:
    rts = [r for _, r in runtimes(manifests)]
    stages = {r.stage for r in rts if r.stage}
    assert stages == {"setup", "pre-turn", "narrative", "post-turn", "audit"}
    assert {r.trigger for r in rts} >= {"auto", "manual"}
    assert any(m.kind == "core" for m in manifests)
    assert any(r.visibility == "story" for r in rts)
    inputs = [i for r in rts for i in r.data.get("io", {}).get("inputs", {}).values()]
    assert any("kernel" in i["from"] for i in inputs)
    assert any("contract" in i["from"] for i in inputs)
    assert any(i.get("scope") == "committed" and i.get("recordAs") for i in inputs)
    assert any(r.data.get("io", {}).get("selfData") for r in rts)
    assert any(r.data.get("io", {}).get("output", {}).get("recordAs") for r in rts)
    assert any(r.data.get("agent", {}).get("tools", {}).get("datasets") for r in rts)
    assert any(r.data.get("agent", {}).get("tools", {}).get("services") for r in rts)
    assert any(contributes(m, key) for m in manifests for key in ("actionKinds",))
    for key in ("events", "prompt", "ui"):
        assert any(contributes(m, key) for m in manifests), key


def test_affinity_offers_the_settings_keys_other_panels_preset(
    results: dict[str, LoadResult],
) -> None:
    # The worlds and settings panels preset these exact keys through pluginSettings.
    manifest = results["rapport"].manifest
    assert manifest is not None
    settings = {s["key"]: s for s in manifest.contributes["settings"]}
    expected = {
        "tone": ("select", "neutral"),
        "intensity": ("slider", 5),
        "nickname": ("text", ""),
        "notes": ("textarea", ""),
        "decay": ("number", 0.1),
        "max-entries": ("integer", 20),
        "show-panel": ("toggle", True),
        "model": ("slot", "utility"),
    }
    assert {k: (s["type"], s["default"]) for k, s in settings.items()} == expected
    assert [o["value"] for o in settings["tone"]["options"]] == ["gentle", "neutral", "harsh"]
    assert (
        settings["intensity"]["min"],
        settings["intensity"]["max"],
        settings["intensity"]["step"],
    ) == (0, 10, 1)
    assert (settings["decay"]["min"], settings["decay"]["max"], settings["decay"]["step"]) == (
        0,
        1,
        0.05,
    )
    assert (settings["max-entries"]["min"], settings["max-entries"]["max"]) == (1, 100)


def test_other_fixed_settings_keys(results: dict[str, LoadResult]) -> None:
    def settings_of(package: str) -> dict[str, Mapping[str, Any]]:
        manifest = results[package].manifest
        assert manifest is not None
        return {s["key"]: s for s in manifest.contributes["settings"]}

    assert (
        settings_of("storyteller")["style"]["type"],
        settings_of("storyteller")["style"]["default"],
    ) == ("select", "terse")
    dice = settings_of("dice")
    assert (
        dice["sides"]["type"],
        dice["sides"]["default"],
        dice["sides"]["min"],
        dice["sides"]["max"],
    ) == ("integer", 20, 2, 100)
    assert (dice["advantage"]["type"], dice["advantage"]["default"]) == ("toggle", False)
    assert (settings_of("weather")["city"]["type"], settings_of("weather")["city"]["default"]) == (
        "text",
        "Harbor",
    )
