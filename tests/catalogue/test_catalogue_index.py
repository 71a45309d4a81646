"""Turning a loader verdict into index rows (catalogue.services.package_index)."""

from __future__ import annotations

import pytest

from catalogue.manifest.types import Issue
from catalogue.models import (
    Command,
    Contract,
    ExternalLink,
    HttpPermission,
    Package,
    PackageContract,
    PackageTag,
    Runtime,
    Setting,
    UISpec,
)
from catalogue.selectors import package_providers_of
from catalogue.services import package_content_hash, package_index
from catalogue.text import prompt_summary

pytestmark = pytest.mark.django_db


def index(result, source="bundled"):
    return package_index(result=result, source=source, content_hash="h" * 64, host_version="0.1.0")


def test_it_stores_the_package_and_every_child_row(tmp_path, rich_data, make_result):
    package = index(
        make_result(tmp_path / "dice", rich_data, body="# Title\n\nRoll the dice when asked.\n")
    )
    assert package.state == Package.State.LOADED
    assert (package.package_id, package.display_name, package.version) == (
        "dice",
        "Dice Roller",
        "1.2.0",
    )
    assert package.trust == Package.Trust.BUNDLED and package.source == "bundled"
    assert package.author_name == "Jane Doe" and package.author_url == "https://jane.example.com"
    assert package.prompt_summary == "Roll the dice when asked."
    assert package.manifest["displayName"] == "Dice Roller"

    tags = {t.tag: t.derived for t in package.tags.all()}
    # The written ui:view is replaced by the derived ones; mode:dialogue stays written.
    assert tags == {
        "mode:dialogue": False,
        "cost:llm": True,
        "ui:view": True,
        "ui:right-panel": True,
    }

    links = {
        (c.contract.contract_id, c.relation, c.is_default) for c in package.contract_links.all()
    }
    assert links == {
        ("dice@1", "provides", True),
        ("dice-log@1", "provides", False),
        ("narrative-engine@2", "requires", False),
        ("other-dice@1", "conflicts", False),
    }
    runtime = Runtime.objects.get(package=package)
    assert (runtime.stage, runtime.kind, runtime.model_slot, runtime.trigger) == (
        "post-turn",
        "agent",
        "utility",
        "auto",
    )
    assert runtime.detached and runtime.settle and runtime.max_settle_wait_ms == 5000
    assert runtime.max_execution_ms == 30000 and runtime.max_queue_ms is None

    perms = {
        (p.runtime.runtime_id if p.runtime else None, p.origin, tuple(p.methods))
        for p in HttpPermission.objects.filter(package=package)
    }
    assert perms == {
        (None, "https://api.example.com", ("GET",)),
        ("dice", "https://rng.example.com", ("POST",)),
    }

    command = Command.objects.get(package=package)
    assert (command.name, command.action, command.aliases) == ("roll", "roll-action", ["r"])
    assert [(a.name, a.required, a.variadic) for a in command.arguments.all()] == [
        ("expr", True, False),
        ("note", False, True),
    ]
    sides = Setting.objects.get(package=package, key="sides")
    assert [(o.value, o.label) for o in sides.options.all()] == [("6", "Six"), ("20", "Twenty")]
    assert sides.has_default and sides.default == "6"
    assert not Setting.objects.get(package=package, key="bonus").has_default
    assert [t.name for t in package.tools.all()] == ["roll"]
    assert [a.name for a in package.actions.all()] == ["roll-action"]
    assert [(s.contract, s.access, s.model_facing) for s in package.services.all()] == [
        ("dice.service@1", "read", False),
        ("dice.writer@1", "write", True),
    ]
    assert [(e.point, e.extension_id, e.slot) for e in package.extensions.all()] == [
        ("prompt.segment@1", "dice-rules", ""),
        ("ui.slot@1", "tray", "sidebar"),
    ]
    assert [(h.event, h.enforce) for h in package.hooks.all()] == [
        ("TurnStart", "normal"),
        ("PreToolUse", "pre"),
    ]
    assert [e.topic for e in package.events.all()] == ["dice.rolled"]
    assert [(d.name, d.key) for d in package.datasets.all()] == [("rolls", "id")]
    assert [d.namespace for d in package.data_namespaces.all()] == ["history"]
    assert [(u.placement, u.path) for u in UISpec.objects.filter(package=package)] == [
        ("view", "./ui/tray.json"),
        ("right", "./ui/panel.json"),
    ]
    assert [k.name for k in package.action_kinds.all()] == ["gamble"]


def test_only_https_links_the_package_declares_become_links(tmp_path, rich_data, make_result):
    package = index(make_result(tmp_path / "dice", rich_data))
    assert [(link.kind, link.label, link.url) for link in package.links.all()] == [
        ("homepage", "Homepage", "https://example.com/dice"),
        ("author", "Jane Doe", "https://jane.example.com"),
        ("author-link", "Discord", "https://discord.example.com/dice"),
    ]


def test_who_provides_a_contract_is_one_query(tmp_path, django_assert_num_queries, make_result):
    index(make_result(tmp_path / "a", {"description": "A", "provides": ["narrative-engine@2"]}))
    index(
        make_result(
            tmp_path / "b",
            {"description": "B", "provides": [{"contract": "narrative-engine@2", "default": True}]},
        )
    )
    index(make_result(tmp_path / "c", {"description": "C", "provides": ["narrative-engine@1"]}))
    with django_assert_num_queries(1):
        providers = sorted(
            package_providers_of(contract_id="narrative-engine@2").values_list(
                "package_id", flat=True
            )
        )
    assert providers == ["a", "b"]
    assert Contract.objects.filter(contract_id__startswith="narrative-engine").count() == 2


def test_an_invalid_package_is_stored_with_its_errors_and_raw_card(tmp_path, make_result):
    issue = Issue("PLUGIN.md", "/runtime/schedule/stage", "enum", "stage must be one of setup, ...")
    raw = {
        "displayName": "Broken",
        "description": "Half done.",
        "tags": ["mode:x", "cost:llm"],
        "author": {"name": "Bo", "links": "not-a-list"},
        "requires": ["x@1"],
        "runtime": {"schedule": {"stage": "later"}},
    }
    package = index(make_result(tmp_path / "broken", raw, errors=(issue,)), source="user")
    assert package.state == Package.State.ERROR
    assert package.trust == Package.Trust.COMMUNITY and package.source == "user"
    assert package.errors == [issue.as_dict()]
    assert (package.display_name, package.description, package.author_name) == (
        "Broken",
        "Half done.",
        "Bo",
    )
    # A written cost:* tag is never trusted: only the loader derives those.
    assert list(package.tags.values_list("tag", flat=True)) == ["mode:x"]
    assert list(
        PackageContract.objects.filter(package=package).values_list(
            "contract__contract_id", flat=True
        )
    ) == ["x@1"]


def test_reindexing_replaces_child_rows(tmp_path, rich_data, make_result):
    first = index(make_result(tmp_path / "dice", rich_data))
    rich_data["contributes"] = {"tools": ["flip"]}
    rich_data["tags"] = []
    second = index(make_result(tmp_path / "dice", rich_data))
    assert first.pk == second.pk
    assert list(second.tools.values_list("name", flat=True)) == ["flip"]
    assert not Setting.objects.exists() and not Command.objects.exists()
    assert set(PackageTag.objects.values_list("tag", flat=True)) == {"cost:llm"}
    assert ExternalLink.objects.filter(package=second).count() == 3


def test_content_hash_follows_names_and_bytes(tmp_path):
    package = tmp_path / "p"
    (package / "server").mkdir(parents=True)
    (package / "PLUGIN.md").write_text("---\ndescription: x\n---\n")
    (package / "server" / "index.js").write_text("export default 1;\n")
    first = package_content_hash(path=package)
    assert first == package_content_hash(path=package)
    (package / "server" / "index.js").write_text("export default 2;\n")
    second = package_content_hash(path=package)
    assert second != first
    (package / "server" / "index.js").rename(package / "server" / "main.js")
    assert package_content_hash(path=package) != second
    (package / "node_modules").mkdir()
    (package / "node_modules" / "x.js").write_text("ignored")
    assert package_content_hash(path=package) == package_content_hash(path=package)


def test_prompt_summary_takes_the_first_prose_paragraph():
    assert (
        prompt_summary("# Heading\n\nFirst line\nsecond line.\n\nMore.")
        == "First line second line."
    )
    long = prompt_summary("word " * 200)
    assert len(long) <= 400 and long.endswith("…")
    assert prompt_summary("") == ""


def test_a_concealed_runtime_keeps_its_prompt_out_of_the_card(tmp_path, client, make_result):
    data = {
        "description": "Secret plans.",
        "runtime": {"schedule": {"stage": "pre-turn"}, "io": {"concealed": True}},
    }
    package = index(make_result(tmp_path / "secret", data, body="The villain hides in the tower."))
    assert package.prompt_summary == ""
    card = client.get("/api/packages/secret").json()
    assert card["runtimes"][0]["concealed"] is True and card["runtimes"][0]["promptSummary"] == ""
    assert "tower" not in client.get("/packages/secret/").content.decode()
    assert "villain" not in str(card)


def test_an_agent_runtime_prompt_is_summarised(tmp_path, client, make_result):
    data = {"description": "Open.", "runtime": {"schedule": {"stage": "post-turn"}}}
    index(make_result(tmp_path / "open", data, body="# Notes\n\nSave one fact per turn."))
    card = client.get("/api/packages/open").json()
    assert card["promptSummary"] == "Save one fact per turn."
    assert card["runtimes"][0]["promptSummary"] == "Save one fact per turn."
